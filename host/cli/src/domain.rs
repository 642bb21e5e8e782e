//! The domain options shared by the commands that load private records
//! (`--domain FILE|binary`, `--discover-domain`).

use std::path::PathBuf;
use std::str::FromStr;

use super::CliError;
use privq_host::data::{DataError, Domain, DomainSource};
use privq_host::synth::mwem::{MwemRequest, MwemSynthError};

/// A public domain on the command line: a JSON spec file, or `binary`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DomainArg {
    /// Every column (except `count`) is a 0/1 attribute named by the header.
    Binary,
    /// A JSON domain spec.
    File(PathBuf),
}

impl FromStr for DomainArg {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "binary" => DomainArg::Binary,
            path => DomainArg::File(PathBuf::from(path)),
        })
    }
}

/// `--domain` and `--discover-domain` (flattened into a command's options).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DomainArgs {
    /// The public domain: a JSON spec FILE ({"attributes": [{"name": ..., "values": [...]}
    /// or {"name": ..., "edges": [...]}]}), or `binary` for 0/1 columns named by the CSV
    /// header. Required unless --discover-domain is given.
    #[arg(long, value_name = "FILE|binary", conflicts_with = "discover_domain")]
    pub domain: Option<DomainArg>,
    /// Choose each attribute's values privately (DP partition selection), charged to
    /// the budget; makes the run (epsilon, delta)-DP.
    #[arg(long)]
    pub discover_domain: bool,
    /// Part of --epsilon spent on discovery (default: a quarter of it).
    #[arg(long, value_name = "EPS", requires = "discover_domain")]
    pub discovery_epsilon: Option<String>,
    /// delta of discovery: a value held by one record survives with probability <= delta.
    #[arg(long, value_name = "DELTA", default_value_t = 1e-6)]
    pub discovery_delta: f64,
}

impl DomainArgs {
    /// `--domain binary`.
    pub fn binary() -> Self {
        DomainArgs {
            domain: Some(DomainArg::Binary),
            discovery_delta: 1e-6,
            ..Default::default()
        }
    }

    /// The public domain (`--domain`), or `request` with private discovery added
    /// (`--discover-domain`: the library splits the budget). Without either:
    /// [`DataError::DomainRequired`].
    pub fn apply(
        &self,
        request: MwemRequest,
    ) -> Result<(MwemRequest, Option<DomainSource>), CliError> {
        match (&self.domain, self.discover_domain) {
            (Some(DomainArg::Binary), _) => Ok((request, Some(DomainSource::BinaryHeader))),
            (Some(DomainArg::File(path)), _) => {
                let domain = Domain::from_json(&super::read_text(path, &mut std::io::empty())?)?;
                Ok((request, Some(DomainSource::Public(domain))))
            }
            (None, false) => Err(DataError::DomainRequired { discovery: true }.into()),
            (None, true) => {
                let share = match &self.discovery_epsilon {
                    Some(text) => Some(super::parse_epsilon(text).map_err(|e| match e {
                        CliError::Parameter { source, .. } => CliError::Parameter {
                            option: "discovery-epsilon",
                            source,
                        },
                        other => other,
                    })?),
                    None => None,
                };
                let request =
                    request
                        .discover(share, self.discovery_delta)
                        .map_err(|e| match e {
                            MwemSynthError::Split(source) => CliError::Parameter {
                                option: if share.is_some() {
                                    "discovery-epsilon"
                                } else {
                                    "epsilon"
                                },
                                source,
                            },
                            e => e.into(),
                        })?;
                Ok((request, None))
            }
        }
    }
}

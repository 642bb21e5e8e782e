//! The program's error: what a command reports on standard error, and its exit code.

use std::io;
use std::path::{Path, PathBuf};

use crate::{experiments, ldp};

/// A failed command, with enough context to fix the input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// A privacy or numeric parameter was rejected.
    #[error("--{option}: {source}")]
    Parameter {
        /// The option's name.
        option: &'static str,
        /// Why.
        #[source]
        source: privq_core::Error,
    },
    /// An input value could not be used.
    #[error("line {line}: cannot use {text:?}: {source}")]
    Value {
        /// 1-based line (or CSV record) number.
        line: usize,
        /// The offending text.
        text: String,
        /// Why.
        #[source]
        source: privq_core::Error,
    },
    /// Text where a number belongs is not one (unparseable, NaN or infinite).
    #[error("{place}: {text:?} is not a number")]
    NotANumber {
        /// Where: `line 3, column x`, or a flag.
        place: String,
        /// The offending text.
        text: String,
    },
    /// The named CSV column does not exist.
    #[error("no column named {column:?}; the header has: {}", .available.join(", "))]
    MissingColumn {
        /// The requested column.
        column: String,
        /// The columns that exist.
        available: Vec<String>,
    },
    /// The input held no values.
    #[error("the input holds no values")]
    EmptyInput,
    /// The input is not valid CSV.
    #[error("malformed CSV: {0}")]
    Csv(#[from] csv::Error),
    /// Reading or writing a stream failed.
    #[error("reading or writing a stream: {0}")]
    Io(#[from] std::io::Error),
    /// A named file (or directory) could not be opened, created, written or renamed.
    #[error("{}: {source}", .path.display())]
    File {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// An option's value was refused (a limit, a missing prerequisite, a bad combination).
    #[error("--{option}: {message}")]
    Usage {
        /// The option's name, without `--`.
        option: &'static str,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The operating system could not provide entropy.
    #[error("{0}")]
    Seed(#[source] privq_host::SeedError),
    /// A library operation (data loading, a mechanism, a session) failed.
    #[error("{0}")]
    Run(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The command ran and reported on standard error, but its outcome calls
    /// for a non-zero exit code (`privq ldp aggregate --help` lists them).
    #[error("{0} (exit code {code})", code = .0.exit_code())]
    Outcome(privq_host::ldp::intake::Outcome),
}

impl CliError {
    /// A failure on the file (or directory) `path`.
    pub(crate) fn file(path: &Path, source: io::Error) -> CliError {
        CliError::File {
            path: path.to_path_buf(),
            source,
        }
    }

    /// A library error after a place (a file, a flag, a step): `{place}: {error}`,
    /// the error kept as the source. (Used by the collector and Parquet commands.)
    #[cfg_attr(not(feature = "serve"), allow(dead_code))]
    pub(crate) fn at<E>(place: impl std::fmt::Display, source: E) -> CliError
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        CliError::Run(Box::new(InContext {
            before: format!("{place}: "),
            source,
            after: "",
        }))
    }

    /// Whether the error is, at bottom, a write to a closed pipe (`privq … | head`).
    pub fn is_broken_pipe(&self) -> bool {
        let mut next: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(e) = next {
            if let Some(io) = e.downcast_ref::<io::Error>()
                && io.kind() == io::ErrorKind::BrokenPipe
            {
                return true;
            }
            if let Some(csv) = e.downcast_ref::<csv::Error>()
                && let csv::ErrorKind::Io(io) = csv.kind()
                && io.kind() == io::ErrorKind::BrokenPipe
            {
                return true;
            }
            next = e.source();
        }
        false
    }

    /// The process exit code: the outcome's for [`CliError::Outcome`],
    /// [`BROKEN_PIPE`] for a closed pipe, else 2.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Outcome(o) => o.exit_code(),
            _ if self.is_broken_pipe() => BROKEN_PIPE,
            _ => 2,
        }
    }
}

/// A library error in the program's words: the message is `{before}{source}{after}`
/// (say, a file and line before it, a hint after it), and `source()` is still the
/// typed error.
#[derive(Debug, thiserror::Error)]
#[error("{before}{source}{after}")]
pub(crate) struct InContext<E> {
    /// Text before the error's message.
    pub(crate) before: String,
    /// The error.
    #[source]
    pub(crate) source: E,
    /// Text after the error's message.
    pub(crate) after: &'static str,
}

/// A library error reaches the user through [`CliError::Run`], its message and
/// `source()` chain intact: `?` converts it.
macro_rules! library_errors {
    ($($error:ty),* $(,)?) => {
        $(impl From<$error> for CliError {
            fn from(e: $error) -> Self {
                CliError::Run(Box::new(e))
            }
        })*
    };
}

library_errors!(
    privq_host::accountant::AccountantError,
    privq_host::accountant::BudgetFileError,
    privq_host::aggregate::AggregateError,
    privq_host::audit::AuditError,
    privq_host::central::MechanismError,
    privq_host::central::pmw::PmwError,
    privq_host::central::pmw_reduce::ReduceError,
    privq_host::conjunctions::DecomposeError,
    privq_host::conjunctions::ReleaseError,
    privq_host::data::DataError,
    privq_host::data::DiscoveryError,
    privq_host::dx::DxError,
    privq_host::fairness::FairnessError,
    privq_host::fairness::release::FairReleaseError,
    privq_host::knorm::KnormError,
    privq_host::knorm::release::KnormReleaseError,
    privq_host::synth::SynthError,
    privq_host::synth::adaptive::AdaptiveError,
    privq_host::synth::mwem::MwemSynthError,
    privq_host::ldp::sq::SqError,
    serde_json::Error,
    experiments::mwem::ExperimentError,
    ldp::LdpError,
    InContext<privq_host::data::DataError>,
    InContext<privq_host::distance::DistanceError>,
);

/// The exit status when the reader of standard output went away (`privq … | head`):
/// 128 + SIGPIPE, what a shell reports for a program the signal ended. Nothing is
/// printed.
pub const BROKEN_PIPE: u8 = 141;

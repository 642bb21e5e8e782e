//! `privq distance`: Huang–Roth private ℓ1 distance queries for users.
//!
//! * `release`: points CSV (numeric columns with a header) → synopsis JSON, printing
//!   the budget spent;
//! * `query`: synopsis + query points CSV → answers (average ℓ1 distance);
//! * `interactive`: points CSV, then one query per line on standard input.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use super::CliError;
use crate::distance::interactive::{InteractiveConfig, Session};
use crate::distance::offline::{OfflineConfig, Synopsis};
use crate::distance::privacy::Privacy;
use crate::distance::{Columns, DistanceError, Domain};

/// Options of `privq distance`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub action: Action,
}

/// The actions.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Action {
    /// Release a synopsis answering every ℓ1 distance query (Theorem 3.2).
    Release(ReleaseArgs),
    /// Answer query points from a synopsis (no data access, no budget).
    Query(QueryArgs),
    /// Answer queries read from standard input, one per line (Theorem 3.1).
    Interactive(ReleaseArgs),
}

/// Options shared by `release` and `interactive`.
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Example:\n  privq distance release --input points.csv --lo 0,0 --hi 1,1 --epsilon 1 --out syn.json"
)]
pub struct ReleaseArgs {
    /// Points CSV with a header; every column is a coordinate.
    #[arg(long, value_name = "PATH")]
    pub input: PathBuf,
    /// Lower corner of the domain (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        allow_hyphen_values = true,
        required = true
    )]
    pub lo: Vec<f64>,
    /// Upper corner of the domain (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        allow_hyphen_values = true,
        required = true
    )]
    pub hi: Vec<f64>,
    /// Privacy parameter ε (decimal or fraction).
    #[arg(long, allow_hyphen_values = true)]
    pub epsilon: String,
    /// δ for (ε, δ)-DP (omit for pure ε-DP).
    #[arg(long)]
    pub delta: Option<f64>,
    /// Target accuracy α in scaled units (default: calibrated from n).
    #[arg(long)]
    pub alpha: Option<f64>,
    /// Synopsis output path (`release` only).
    #[arg(long, value_name = "PATH", default_value = "synopsis.json")]
    pub out: PathBuf,
    /// Seed for a reproducible run (never on real data).
    #[arg(long)]
    pub seed: Option<u64>,
}

/// Options of `query`.
#[derive(Debug, Clone, clap::Args)]
pub struct QueryArgs {
    /// A synopsis written by `privq distance release`.
    #[arg(long, value_name = "PATH")]
    pub synopsis: PathBuf,
    /// Query points CSV with a header.
    #[arg(long, value_name = "PATH")]
    pub input: PathBuf,
}

fn run_err(e: DistanceError) -> CliError {
    CliError::Run(Box::new(e))
}

fn read_points(path: &PathBuf) -> Result<Vec<Vec<f64>>, CliError> {
    let mut reader = csv::Reader::from_path(path)?;
    let mut points = Vec::new();
    for (i, rec) in reader.records().enumerate() {
        let rec = rec?;
        let p: Vec<f64> = rec
            .iter()
            .map(|f| {
                f.trim().parse::<f64>().map_err(|_| CliError::Value {
                    line: i + 2,
                    text: f.to_string(),
                    source: privq_core::Error::OutOfRange,
                })
            })
            .collect::<Result<_, _>>()?;
        points.push(p);
    }
    if points.is_empty() {
        return Err(CliError::EmptyInput);
    }
    Ok(points)
}

fn rng(seed: Option<u64>) -> Result<rand_chacha::ChaCha12Rng, CliError> {
    match seed {
        Some(s) => Ok(crate::seeded_rng(s)),
        None => crate::secure_rng().map_err(CliError::Seed),
    }
}

/// Runs `privq distance`.
pub fn run(
    args: &Args,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    match &args.action {
        Action::Release(a) => {
            let domain = Domain::new(a.lo.clone(), a.hi.clone()).map_err(run_err)?;
            let privacy = Privacy::parse(&a.epsilon, a.delta).map_err(run_err)?;
            let mut config = OfflineConfig::new(privacy);
            config.alpha = a.alpha;
            let points = read_points(&a.input)?;
            let s =
                Synopsis::release(&domain, &points, &config, &mut rng(a.seed)?).map_err(run_err)?;
            s.save(&a.out).map_err(run_err)?;
            writeln!(
                stdout,
                "released synopsis of n = {} points to {}: alpha = {:.4}; spent epsilon = {} (ledger {} in {} charges), delta = {}",
                s.n(),
                a.out.display(),
                s.alpha(),
                s.spent().epsilon,
                s.spent().ledger_epsilon,
                s.spent().charges,
                s.spent().delta
            )?;
            if s.complete().iter().any(|c| !c) {
                writeln!(
                    stderr,
                    "privq: warning: the update budget ran out on some coordinates; accuracy is not guaranteed there"
                )?;
            }
        }
        Action::Query(a) => {
            let s = Synopsis::load(&a.synopsis).map_err(run_err)?;
            writeln!(stdout, "scaled_answer,average_l1_distance")?;
            for p in read_points(&a.input)? {
                let v = s.answer(&p).map_err(run_err)?;
                writeln!(stdout, "{v},{}", v * s.domain().diameter())?;
            }
        }
        Action::Interactive(a) => {
            let domain = Domain::new(a.lo.clone(), a.hi.clone()).map_err(run_err)?;
            let privacy = Privacy::parse(&a.epsilon, a.delta).map_err(run_err)?;
            let mut config = InteractiveConfig::new(privacy);
            config.alpha = a.alpha;
            let cols = Columns::new(&domain, &read_points(&a.input)?).map_err(run_err)?;
            let mut r = rng(a.seed)?;
            let mut s = Session::new(&cols, &config, &mut r).map_err(run_err)?;
            writeln!(
                stderr,
                "privq: session: alpha = {:.4}, {} update rounds",
                s.params().alpha,
                s.params().rounds
            )?;
            for (i, line) in stdin.lines().enumerate() {
                let line = line?;
                if line.trim().is_empty() {
                    continue;
                }
                let q: Result<Vec<f64>, _> =
                    line.split(',').map(|f| f.trim().parse::<f64>()).collect();
                let y = match q
                    .map_err(|_| ())
                    .and_then(|q| s.prepare(&q).map_err(|_| ()))
                {
                    Ok(y) => y,
                    Err(()) => {
                        writeln!(
                            stderr,
                            "privq: line {}: skipped {line:?}: not a point of the domain",
                            i + 1
                        )?;
                        continue;
                    }
                };
                match s.answer(&y, &mut r) {
                    Ok(v) => writeln!(stdout, "{v}")?,
                    Err(e) => {
                        writeln!(stderr, "privq: {e}")?;
                        break;
                    }
                }
            }
            let g = s.spent().map_err(run_err)?;
            writeln!(
                stderr,
                "privq: spent epsilon = {}, delta = {}",
                g.epsilon, g.delta
            )?;
        }
    }
    Ok(())
}

//! The `privq` program. See `privq --help`.
//!
//! Each subcommand lives in its own module with an `Args` struct and a `run`
//! function that reads and writes through the streams it is given, so it can be
//! tested without a process.

use std::fmt;
use std::io::{self, BufRead, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use privq_host::choice::Named;

pub mod audit;
pub mod distance;
pub mod domain;
pub mod dx;
pub mod experiment;
pub mod knorm;
pub mod ldp;
pub mod noise;
pub mod pmw;
mod progress;
pub mod synth;

/// privq: exact differential privacy from the microcontroller to the curator.
#[derive(Debug, Parser)]
#[command(name = "privq", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Add calibrated Laplace noise, exactly on a fixed-point grid, to numbers.
    Noise(noise::Args),
    /// Local differential privacy: simulate device fleets and aggregate their reports.
    Ldp(ldp::Args),
    /// Private synthetic data (CSV) with MWEM.
    Synth(synth::Args),
    /// An interactive private-multiplicative-weights session answering queries.
    Pmw(pmw::Args),
    /// Reproduce experiments from the papers (e.g. `experiment mwem`).
    Experiment(experiment::Args),
    /// d_X-private (metric-private) answers to linear queries over a universe of points.
    Dx(dx::Args),
    /// Huang–Roth private distance queries: release a synopsis, query it, or answer interactively.
    Distance(distance::Args),
    /// The K-norm mechanism (thesis Ch. 3) for d linear queries over a histogram.
    Knorm(knorm::Args),
    /// Audit the mechanisms' privacy claims empirically (stochastic tester on neighbouring datasets).
    Audit(audit::Args),
}

/// Runs a parsed command line with the given streams.
pub fn run(
    cli: Cli,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    match cli.command {
        Command::Noise(args) => noise::run(&args, stdin, stdout, stderr),
        Command::Ldp(args) => ldp::run(&args, stdin, stdout, stderr),
        Command::Synth(args) => synth::run(&args, stdin, stdout, stderr),
        Command::Pmw(args) => pmw::run(&args, stdin, stdout, stderr),
        Command::Experiment(args) => experiment::run(&args, stdin, stdout, stderr),
        Command::Dx(args) => dx::run(&args, stdin, stdout, stderr),
        Command::Distance(args) => distance::run(&args, stdin, stdout, stderr),
        Command::Knorm(args) => knorm::run(&args, stdin, stdout, stderr),
        Command::Audit(args) => audit::run(&args, stdin, stdout, stderr),
    }
}

/// Parses an `--epsilon` value exactly (decimal or fraction), naming the option on error.
pub(crate) fn parse_epsilon(text: &str) -> Result<privq_core::Epsilon, CliError> {
    text.parse().map_err(|source| CliError::Parameter {
        option: "epsilon",
        source,
    })
}

/// Runs `privq ARGV…` in-process with `input` as standard input; returns (stdout, stderr).
#[cfg(test)]
pub(crate) fn run_with(argv: &[&str], input: &str) -> Result<(String, String), CliError> {
    let cli = Cli::try_parse_from(std::iter::once("privq").chain(argv.iter().copied()))
        .expect("valid arguments");
    let mut stdin = input.as_bytes();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    run(cli, &mut stdin, &mut out, &mut err)?;
    Ok((
        String::from_utf8(out).expect("utf-8 stdout"),
        String::from_utf8(err).expect("utf-8 stderr"),
    ))
}

/// A clap parser for a library enum chosen by name: lists the names in `--help`
/// and parses through [`Named::from_name`].
pub(crate) fn choice<T: Named + Clone + Send + Sync>()
-> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(T::NAMES).try_map(|name: String| T::from_name(&name))
}

/// A failed command, with enough context to fix the input.
#[derive(Debug)]
#[non_exhaustive]
pub enum CliError {
    /// A privacy or numeric parameter was rejected.
    Parameter {
        /// The option's name.
        option: &'static str,
        /// Why.
        source: privq_core::Error,
    },
    /// An input value could not be used.
    Value {
        /// 1-based line (or CSV record) number.
        line: usize,
        /// The offending text.
        text: String,
        /// Why.
        source: privq_core::Error,
    },
    /// The named CSV column does not exist.
    MissingColumn {
        /// The requested column.
        column: String,
        /// The columns that exist.
        available: Vec<String>,
    },
    /// The input held no values.
    EmptyInput,
    /// The input is not valid CSV.
    Csv(csv::Error),
    /// Reading or writing failed.
    Io(std::io::Error),
    /// The operating system could not provide entropy.
    Seed(privq_host::SeedError),
    /// A library operation (data loading, a mechanism, a session) failed.
    Run(Box<dyn std::error::Error + Send + Sync>),
    /// The command ran and reported on standard error, but its outcome calls
    /// for a non-zero exit code (`privq ldp aggregate --help` lists them).
    Outcome(privq_host::ldp::intake::Outcome),
}

impl CliError {
    /// The process exit code: the outcome's for [`CliError::Outcome`], else 2.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Outcome(o) => o.exit_code(),
            _ => 2,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Parameter { option, source } => write!(f, "--{option}: {source}"),
            CliError::Value { line, text, source } => {
                write!(f, "line {line}: cannot use {text:?}: {source}")
            }
            CliError::MissingColumn { column, available } => write!(
                f,
                "no column named {column:?}; the header has: {}",
                available.join(", ")
            ),
            CliError::EmptyInput => write!(f, "the input holds no values"),
            CliError::Csv(e) => write!(f, "malformed CSV: {e}"),
            CliError::Io(e) => write!(f, "i/o error: {e}"),
            CliError::Seed(e) => write!(f, "{e}"),
            CliError::Run(e) => write!(f, "{e}"),
            CliError::Outcome(o) => write!(f, "{o} (exit code {})", o.exit_code()),
        }
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CliError::Parameter { source, .. } | CliError::Value { source, .. } => Some(source),
            CliError::Csv(e) => Some(e),
            CliError::Io(e) => Some(e),
            CliError::Seed(e) => Some(e),
            CliError::Run(e) => Some(e.as_ref()),
            _ => None,
        }
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError::Io(e)
    }
}

impl From<csv::Error> for CliError {
    fn from(e: csv::Error) -> Self {
        CliError::Csv(e)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let stdin = io::stdin();
    let mut stdin = stdin.lock();
    let mut stdout = io::BufWriter::new(io::stdout().lock());
    let mut stderr = io::stderr();
    let result = run(cli, &mut stdin, &mut stdout, &mut stderr);
    let flushed = stdout.flush();
    match (result, flushed) {
        (Ok(()), Ok(())) => ExitCode::SUCCESS,
        // An outcome (e.g. rejected reports) has been reported by the command itself.
        (Err(e @ CliError::Outcome(_)), _) => ExitCode::from(e.exit_code()),
        (Err(e), _) => {
            let _ = writeln!(stderr, "privq: error: {e}");
            ExitCode::from(e.exit_code())
        }
        (Ok(()), Err(e)) => {
            let _ = writeln!(stderr, "privq: error: writing output: {e}");
            ExitCode::from(2)
        }
    }
}

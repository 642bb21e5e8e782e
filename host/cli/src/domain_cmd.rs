//! `privq domain`: start a domain file without leaking — a template from the
//! header alone (`init`), or a domain chosen by charged private discovery
//! (`discover`).

use std::io::{BufRead, Write};
use std::path::PathBuf;

use privq_host::contract::Neighbours;
use privq_host::data::{Discovery, ValueCounts, attribute_names, domain_template};

use super::synth::NeighboursArg;
use super::{CliError, ColumnsArgs, InputFile, LedgerArgs, Output};

/// Options of `privq domain`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub action: Action,
}

/// `privq domain init|discover`.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Action {
    /// Write a domain template from the CSV header only (no value is read): every
    /// column with a placeholder to fill in, bin edges for --numeric columns.
    #[command(after_help = "Examples:\n  \
        privq domain init people.csv --numeric age > people-domain.json\n  \
        privq domain init visits.csv --count-column count --output visits-domain.json")]
    Init(InitArgs),
    /// Choose each column's values privately (DP partition selection): a value is
    /// kept when its noisy count clears a threshold, so one record's rare value
    /// survives with probability at most --delta. Charged (epsilon, delta); every
    /// column is treated as categorical.
    #[command(after_help = "Examples:\n  \
        privq domain discover --input people.csv --epsilon 0.25 --output people-domain.json\n  \
        privq domain discover --input visits.csv --ignore-columns id --epsilon 0.5 --delta 1e-7")]
    Discover(DiscoverArgs),
}

/// `privq domain init`.
#[derive(Debug, Clone, clap::Args)]
pub struct InitArgs {
    /// The CSV file whose header names the columns; `-` for standard input.
    #[arg(value_name = "CSV")]
    pub input: PathBuf,
    /// Columns to describe by bin edges (numeric), comma-separated; the others get
    /// a category list.
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub numeric: Vec<String>,
    /// How the input's columns are read: --count-column, --ignore-columns.
    #[command(flatten)]
    pub columns: ColumnsArgs,
    /// Where to write the template (atomically); default standard output.
    #[arg(long, value_name = "PATH")]
    pub output: Option<PathBuf>,
}

/// `privq domain discover`.
#[derive(Debug, Clone, clap::Args)]
pub struct DiscoverArgs {
    /// The private data (CSV with a header); `-` for standard input.
    #[arg(long, value_name = "PATH")]
    pub input: PathBuf,
    /// How the input's columns are read: --count-column, --ignore-columns.
    #[command(flatten)]
    pub columns: ColumnsArgs,
    /// Privacy budget ε of the discovery (a decimal or a fraction).
    #[arg(long, value_name = "EPS", allow_hyphen_values = true)]
    pub epsilon: String,
    /// δ: a value held by one record survives with probability at most δ.
    #[arg(long, value_name = "DELTA", default_value_t = 1e-6)]
    pub delta: f64,
    /// The neighbour relation the guarantee is stated for.
    #[arg(long, value_enum, default_value = "add-remove")]
    pub neighbours: NeighboursArg,
    /// Where to write the domain (atomically); default standard output.
    #[arg(long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Seed for a reproducible run (tests and demos only: it makes the noise removable).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Where to write the ledger as JSON.
    #[command(flatten)]
    pub ledger: LedgerArgs,
}

/// Runs `privq domain`.
pub fn run(
    args: &Args,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    match &args.action {
        Action::Init(a) => init(a, stdin, stdout, stderr),
        Action::Discover(a) => discover(a, stdin, stdout, stderr),
    }
}

fn init(
    a: &InitArgs,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    super::refuse_overwriting_input(&a.input, a.output.as_deref(), "output")?;
    let mut output = Output::open(a.output.as_deref())?;
    // The header only: standard input is read straight, never spooled to disk.
    let names = if a.input.as_os_str() == "-" {
        attribute_names(stdin, &a.columns.columns())
    } else {
        let file = std::fs::File::open(&a.input).map_err(|e| CliError::file(&a.input, e))?;
        attribute_names(file, &a.columns.columns())
    }?;
    if let Some(unknown) = a.numeric.iter().find(|n| !names.contains(n)) {
        return Err(CliError::Usage {
            option: "numeric",
            message: format!("{unknown:?} is not an attribute column; the columns are {names:?}"),
        });
    }
    output
        .writer(stdout)
        .write_all(domain_template(&names, &a.numeric).as_bytes())?;
    writeln!(
        stderr,
        "privq: domain template for {} column(s) written to {}: replace every \"TODO:\" with the \
         public values (category lists) or bin edges, from what you know about the data's \
         source — not from the data",
        names.len(),
        output.describe()
    )?;
    output.commit(stdout)
}

fn discover(
    a: &DiscoverArgs,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    let epsilon = super::parse_epsilon(&a.epsilon)?;
    for (path, option) in [
        (a.output.as_deref(), "output"),
        (a.ledger.ledger_json.as_deref(), "ledger-json"),
    ] {
        super::refuse_overwriting_input(&a.input, path, option)?;
    }
    let input = InputFile::open(&a.input, stdin)?;
    let mut output = Output::open(a.output.as_deref())?;
    let neighbours = Neighbours::from(a.neighbours);
    let file = std::fs::File::open(input.path()).map_err(|e| CliError::file(input.path(), e))?;
    let counts = ValueCounts::from_csv(std::io::BufReader::new(file), &a.columns.columns())?;
    let discovery = Discovery::new(neighbours, epsilon, a.delta, counts.attributes().len())?;
    let mut accountant = discovery.accountant()?;
    a.ledger
        .reserve(&accountant, "privq domain discover", stderr)?;
    let mut rng = super::rng(a.seed, stderr)?;
    let released = discovery.release(&counts, &mut accountant, &mut rng);
    if released.is_err() && !accountant.ledger().is_empty() {
        // Charged, then nothing kept: the spend is recorded all the same.
        a.ledger.write(&accountant)?;
        writeln!(stderr, "privq: ledger:\n{}", a.ledger.text(&accountant))?;
    }
    let domain = released?;
    output
        .writer(stdout)
        .write_all(domain.to_json().as_bytes())?;
    output.commit(stdout)?;
    a.ledger.write(&accountant)?;
    let sizes: Vec<String> = domain
        .attributes()
        .iter()
        .map(|at| format!("{} {}", at.name(), at.size()))
        .collect();
    writeln!(
        stderr,
        "privq: domain discovered privately (threshold {}): values kept per column: {}",
        discovery.threshold(),
        sizes.join(", ")
    )?;
    writeln!(stderr, "privq: ledger:\n{}", a.ledger.text(&accountant))?;
    Ok(())
}

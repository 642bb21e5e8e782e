//! The `privq` program. See `privq --help`.
//!
//! Each subcommand lives in its own module with an `Args` struct and a `run`
//! function that reads and writes through the streams it is given, so it can be
//! tested without a process.

use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use privq_host::accountant::{Accountant, BudgetFile, BudgetFileError, Cap, RunCost, round_up};
use privq_host::choice::Named;
use privq_host::ldp::output::{AtomicFile, Destination};
use rand_chacha::ChaCha12Rng;

pub mod audit;
pub mod budget;
pub mod conjunctions;
pub mod distance;
pub mod domain;
pub mod domain_cmd;
pub mod dx;
mod error;
pub mod experiment;
mod experiments;
pub mod fairness;
pub mod knorm;
pub mod ldp;
#[cfg(feature = "analytics")]
mod ldp_parquet;
pub mod noise;
pub mod pmw;
mod progress;
pub mod results;
#[cfg(feature = "serve")]
pub mod serve;
#[cfg(feature = "serve")]
mod serve_upload;
pub mod sql;
pub mod synth;
mod synth_adaptive;
mod synth_report;
pub mod top;

pub(crate) use error::InContext;
pub use error::{BROKEN_PIPE, CliError};

/// privq: exact differential privacy from the microcontroller to the curator.
#[derive(Debug, Parser)]
#[command(name = "privq", version, about, long_about = None)]
#[command(after_help = "Examples:\n  \
    privq noise --demo --epsilon 0.5 --range 15,30 --seed 7\n  \
    privq synth --input data.csv --domain binary --epsilon 1 > synthetic.csv\n  \
    privq ldp simulate --mechanism oue --epsilon 1 --domain 64 --devices 1000 --output r.pqr\n  \
    privq conjunctions release --input table.csv --epsilon 1 --out table.conj.json\n  \
    privq COMMAND --help")]
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
    /// Private synthetic data (CSV): adaptive marginals (default) or MWEM.
    Synth(synth::Args),
    /// An interactive private-multiplicative-weights session answering queries.
    Pmw(pmw::Args),
    /// Start a domain file: a template from the CSV header (`init`), or private discovery (`discover`).
    Domain(domain_cmd::Args),
    /// Reproduce experiments from the papers (e.g. `experiment mwem`).
    Experiment(experiment::Args),
    /// d_X-private (metric-private) answers to linear queries over a universe of points.
    Dx(dx::Args),
    /// Huang–Roth private distance queries: release a synopsis, query it, or answer interactively.
    Distance(distance::Args),
    /// The K-norm mechanism (thesis Ch. 3) for d linear queries over a histogram.
    Knorm(knorm::Args),
    /// Fairness through awareness (thesis Ch. 8): Lipschitz classifiers, bias, earthmover.
    Fairness(fairness::Args),
    /// Release all monotone conjunctions of a binary table (thesis Ch. 6), and query the release.
    Conjunctions(conjunctions::Args),
    /// The most frequent of a public list of values in a column, chosen privately (report noisy max).
    Top(top::Args),
    /// Private counts, sums, means and quantiles by group, from a SQL query over a CSV table.
    Sql(sql::Args),
    /// A dataset's privacy budget across runs: print a budget file (`budget show PATH`).
    Budget(budget::Args),
    /// Audit the mechanisms' privacy claims empirically (stochastic tester on neighbouring datasets).
    Audit(audit::Args),
    /// The authenticated upload collector: HTTP API over a SQLite store (feature `serve`).
    #[cfg(feature = "serve")]
    Serve(serve::Args),
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
        Command::Synth(args) => {
            synth::run(&args, stdin, stdout, stderr).map_err(|e| synth_epsilon(e, &args))
        }
        Command::Pmw(args) => pmw::run(&args, stdin, stdout, stderr),
        Command::Domain(args) => domain_cmd::run(&args, stdin, stdout, stderr),
        Command::Experiment(args) => experiment::run(&args, stdin, stdout, stderr),
        Command::Dx(args) => dx::run(&args, stdin, stdout, stderr),
        Command::Distance(args) => distance::run(&args, stdin, stdout, stderr),
        Command::Knorm(args) => knorm::run(&args, stdin, stdout, stderr),
        Command::Fairness(args) => fairness::run(&args, stdin, stdout, stderr),
        Command::Conjunctions(args) => conjunctions::run(&args, stdin, stdout, stderr),
        Command::Top(args) => top::run(&args, stdin, stdout, stderr),
        Command::Sql(args) => sql::run(&args, stdin, stdout, stderr),
        Command::Budget(args) => budget::run(&args, stdin, stdout, stderr),
        Command::Audit(args) => audit::run(&args, stdin, stdout, stderr),
        #[cfg(feature = "serve")]
        Command::Serve(args) => serve::run(&args, stdin, stdout, stderr),
    }
}

/// `x` at a sensible precision: the shortest text that reads back as `x`
/// (round-trip exact), in scientific notation outside 1e-4 ≤ |x| < 1e15 so a tiny
/// or huge value never prints as hundreds of digits.
pub(crate) fn num(x: f64) -> String {
    let a = x.abs();
    if x == 0.0 || !x.is_finite() || (1e-4..1e15).contains(&a) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// A fixed-decimal number without its trailing zeros (and point): `10.50` → `10.5`,
/// `10.00` → `10`.
fn trim_zeros(text: String) -> String {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// `x` to four decimals for a summary, or four significant digits (scientific)
/// below 0.001, so a small value never prints as `0.0000`.
pub(crate) fn short(x: f64) -> String {
    if x != 0.0 && x.abs() < 1e-3 {
        format!("{x:.3e}")
    } else {
        format!("{x:.4}")
    }
}

/// The largest ρ whose sums the adaptive mechanism keeps exact: its costs are
/// dyadic with denominators up to 2⁵⁶, so totals below 2⁷ keep numerators in 63 bits.
const ADAPTIVE_MAX_RHO: f64 = 128.0;

/// `privq synth`: an overflow of the adaptive mechanism's exact arithmetic means
/// `--epsilon` is too large; the error says so, with the largest value accepted
/// for every input at `--delta`.
fn synth_epsilon(e: CliError, args: &synth::Args) -> CliError {
    use privq_host::synth::adaptive::AdaptiveError;
    let overflowed = matches!(&e, CliError::Run(inner) if matches!(
        inner.downcast_ref::<AdaptiveError>(),
        Some(AdaptiveError::Mechanism(privq_host::central::MechanismError::Core(
            privq_core::Error::Overflow
        )) | AdaptiveError::Budget(privq_host::accountant::AccountantError::Overflow))
    ));
    if !overflowed || args.mechanism != synth::MechanismArg::Adaptive {
        return e;
    }
    let largest = privq_host::accountant::zcdp_epsilon(ADAPTIVE_MAX_RHO, args.delta)
        .map(|x| format!("{}", x.floor()))
        .unwrap_or_else(|_| "smaller".into());
    CliError::Usage {
        option: "epsilon",
        message: format!(
            "ε = {} is too large: the adaptive mechanism's exact integer arithmetic would \
             overflow; the largest value accepted for every input is {largest} (at --delta {:e})",
            args.epsilon, args.delta
        ),
    }
}

/// `text` as a finite number; unparseable text, NaN or ±inf is
/// [`CliError::NotANumber`] at `place` (a line and column, or a flag).
pub(crate) fn finite(text: &str, place: impl FnOnce() -> String) -> Result<f64, CliError> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(CliError::NotANumber {
            place: place(),
            text: text.to_string(),
        }),
    }
}

/// Parses an `--epsilon` value exactly (decimal or fraction), naming the option on error.
pub(crate) fn parse_epsilon(text: &str) -> Result<privq_core::Epsilon, CliError> {
    text.parse().map_err(|source| match source {
        // ε is held exactly, as a fraction of two 64-bit integers.
        privq_core::Error::Overflow => CliError::Usage {
            option: "epsilon",
            message: format!(
                "{:?} cannot be held exactly (ε is a fraction of two integers below 2^64): \
                 give a decimal of at most 19 significant digits between 1e-19 and 1e19, or a \
                 fraction A/B",
                text.trim()
            ),
        },
        source => CliError::Parameter {
            option: "epsilon",
            source,
        },
    })
}

/// The run's random source: with `--seed`, a reproducible one (and a warning on
/// `stderr`, since anyone who knows the seed can remove the noise); otherwise one
/// seeded from the operating system's entropy.
pub(crate) fn rng(seed: Option<u64>, stderr: &mut dyn Write) -> Result<ChaCha12Rng, CliError> {
    match seed {
        Some(seed) => {
            writeln!(
                stderr,
                "privq: warning: --seed {seed} makes the noise reproducible; use it only for tests and demos"
            )?;
            Ok(privq_host::seeded_rng(seed))
        }
        None => privq_host::secure_rng().map_err(CliError::Seed),
    }
}

/// How the input table's columns are read, for the commands that load a CSV table
/// under a domain. Nothing is guessed from a column's name.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ColumnsArgs {
    /// Column NAME holds a non-negative integer weight: each row stands for NAME
    /// records (a count table), and the guarantee is per record, not per row.
    /// Without this flag a column named `count` is an ordinary column.
    #[arg(long, value_name = "NAME")]
    pub count_column: Option<String>,
    /// Columns to leave out of the release, comma-separated. Every input column must
    /// be a domain attribute, the --count-column, or listed here; any other is an
    /// error naming it.
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub ignore_columns: Vec<String>,
}

impl ColumnsArgs {
    /// The declared layout.
    pub(crate) fn columns(&self) -> privq_host::data::CsvColumns {
        let columns = privq_host::data::CsvColumns::new().ignore(self.ignore_columns.clone());
        match &self.count_column {
            Some(c) => columns.count(c.clone()),
            None => columns,
        }
    }
}

/// Above this total ε the ledger carries a warning.
pub(crate) const WEAK_EPSILON: f64 = 10.0;

/// The option every command that spends privacy shares: where to write its ledger
/// as JSON.
///
/// The file is written when the run succeeds, after its results (and by the
/// commands that can fail after charging, when they do), atomically (a temporary
/// file in the same directory, then a rename), so a reader never sees a partial
/// ledger and a run refused before any charge leaves none. `-` (standard output)
/// is refused: standard output carries the results; so is an existing file that
/// is not a ledger.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LedgerArgs {
    /// Also write the privacy ledger (every charge and the exact total ε, δ) as JSON
    /// to PATH, atomically, once budget is spent. Not `-` (standard output carries
    /// the results), and not an existing file that is not a ledger.
    #[arg(long, value_name = "PATH", value_parser = ledger_path)]
    pub ledger_json: Option<PathBuf>,
    /// Print the ledger's costs as exact fractions (as `--ledger-json` holds them)
    /// instead of four significant digits rounded up.
    #[arg(long)]
    pub exact: bool,
    /// The dataset's budget file: this run's whole cost is charged to it, under a
    /// lock, before anything is released, and the run is refused (releasing
    /// nothing) when the charges would exceed the file's cap. Created with
    /// --budget-cap on first use; `privq budget show PATH` prints it. The lock is a
    /// file beside it, PATH.lock, left in place (removing it while another run
    /// waits on it would let two runs charge at once).
    #[arg(long, value_name = "PATH")]
    pub budget_file: Option<PathBuf>,
    /// The budget file's cap, `ε[,δ]` (e.g. `5` or `2,1e-6`): required to create
    /// the file; later runs may omit it, and a different cap is refused.
    #[arg(
        long,
        value_name = "EPS[,DELTA]",
        requires = "budget_file",
        value_parser = budget_cap,
        allow_hyphen_values = true
    )]
    pub budget_cap: Option<Cap>,
}

impl LedgerArgs {
    /// `accountant`'s ledger for standard error: short, or exact with `--exact`;
    /// followed by a warning when the total ε exceeds [`WEAK_EPSILON`].
    pub(crate) fn text(&self, accountant: &Accountant) -> String {
        let mut text = if self.exact {
            accountant.ledger_text_exact()
        } else {
            accountant.ledger_text()
        };
        if let Ok(spent) = accountant.spent_guarantee()
            && spent.epsilon > WEAK_EPSILON
        {
            text.push_str(&format!(
                "\nprivq: warning: a total ε of {} protects little: an output may be up to \
                 e^{} times likelier on one input than on a neighbouring one (above about \
                 {WEAK_EPSILON}, ε is rarely defensible)",
                // Rounded up, as every printed cost: never below what was spent.
                trim_zeros(round_up(spent.epsilon, 2)),
                round_up(spent.epsilon, 0)
            ));
        }
        text
    }

    /// Charges the run of `accountant` to `--budget-file`, if given: its whole
    /// budget ([`Accountant::budget_cost`]), as `label` (the command). **Every
    /// command that spends privacy calls this after building its accountant through
    /// the library's entry point and before it samples or writes anything**; a
    /// refusal is an error and the run releases nothing.
    pub(crate) fn reserve(
        &self,
        accountant: &Accountant,
        label: &str,
        stderr: &mut dyn Write,
    ) -> Result<(), CliError> {
        self.reserve_for(accountant, label, None, stderr)
    }

    /// [`LedgerArgs::reserve`] for a run whose relation is over a privacy unit
    /// other than one record (`unit`: its column); a file holding charges for
    /// another unit refuses it.
    pub(crate) fn reserve_for(
        &self,
        accountant: &Accountant,
        label: &str,
        unit: Option<&str>,
        stderr: &mut dyn Write,
    ) -> Result<(), CliError> {
        let Some(path) = &self.budget_file else {
            return Ok(());
        };
        let refused = |e: BudgetFileError| CliError::Usage {
            option: "budget-file",
            message: format!("{e}; nothing was released"),
        };
        let run = RunCost::of(accountant).map_err(refused)?;
        let status = BudgetFile::charge_unit(
            path,
            self.budget_cap,
            &run,
            label,
            accountant.neighbours(),
            unit,
        )
        .map_err(refused)?;
        let delta = match run.delta() {
            0.0 => "0".to_string(),
            d => format!("{d:e}"),
        };
        writeln!(
            stderr,
            "privq: budget file {}: charged ε = {}, δ = {delta} (this run's budget, {}); {status}",
            path.display(),
            run.epsilon(),
            run.cost()
        )?;
        Ok(())
    }

    /// The outcome of the steps that follow a charge (streaming the records,
    /// rendering a report, committing the output): on an error, the ledger of what
    /// `accountant` was charged is still written to `--ledger-json` and printed
    /// before the error is returned, so a run that spent budget and then failed
    /// (records already streamed to standard output, then a report step) leaves
    /// the record of its spend. Failing to write that ledger is noted on standard
    /// error; the step's own error is returned.
    pub(crate) fn after_charge<T>(
        &self,
        accountant: &Accountant,
        stderr: &mut dyn Write,
        result: Result<T, CliError>,
    ) -> Result<T, CliError> {
        let Err(failure) = result else {
            return result;
        };
        if !accountant.ledger().is_empty() {
            if let Err(e) = self.write(accountant) {
                let _ = writeln!(stderr, "privq: the ledger could not be written: {e}");
            }
            let _ = writeln!(
                stderr,
                "privq: the run failed after spending budget; ledger:\n{}",
                self.text(accountant)
            );
        }
        Err(failure)
    }

    /// Writes `accountant`'s ledger to `--ledger-json`, if given.
    pub(crate) fn write(&self, accountant: &Accountant) -> Result<(), CliError> {
        match &self.ledger_json {
            Some(path) => write_atomically(path, &ledger_bytes(accountant)),
            None => Ok(()),
        }
    }
}

/// `--budget-cap EPS[,DELTA]`: ε exact (decimal or fraction), δ in [0, 1) (default 0).
fn budget_cap(text: &str) -> Result<Cap, String> {
    let (eps, delta) = match text.split_once(',') {
        Some((e, d)) => (e, Some(d)),
        None => (text, None),
    };
    let epsilon: privq_core::Epsilon = eps
        .parse()
        .map_err(|e| format!("ε {:?}: {e}", eps.trim()))?;
    let delta = match delta {
        None => 0.0,
        Some(d) => d
            .trim()
            .parse::<f64>()
            .map_err(|_| format!("δ {:?} is not a number", d.trim()))?,
    };
    Cap::new(epsilon, delta).map_err(|e| e.to_string())
}

/// `--ledger-json`: a file path whose directory takes a new file, probed while
/// the arguments are parsed, so an unwritable path fails before any input is read
/// or anything is released.
fn ledger_path(text: &str) -> Result<PathBuf, String> {
    if text == "-" {
        return Err("standard output carries the results; give a file path".into());
    }
    if text.is_empty() {
        return Err("empty path".into());
    }
    let path = PathBuf::from(text);
    if path.is_dir() {
        return Err(format!("{text} is a directory; give a file path"));
    }
    // An existing file is replaced only when it is a ledger already: never the
    // private input, a release or a domain file named by mistake.
    if path.exists() && !is_ledger(&path) {
        return Err(format!(
            "{text} exists and is not a privq ledger (JSON with \"composition\" and \
             \"charges\"); refusing to replace it"
        ));
    }
    // Creating (and dropping) the temporary file the ledger will be written through
    // checks the directory exists and is writable; nothing is left behind.
    privq_host::ldp::output::AtomicFile::create(&path).map_err(|e| format!("{text}: {e}"))?;
    Ok(path)
}

/// True when `path` holds a ledger written by `--ledger-json` (read at most 16 MiB).
fn is_ledger(path: &Path) -> bool {
    use std::io::Read;
    let mut text = String::new();
    let read = std::fs::File::open(path)
        .and_then(|f| f.take(16 << 20).read_to_string(&mut text))
        .is_ok();
    read && serde_json::from_str::<serde_json::Value>(&text).is_ok_and(|v| {
        v.get("composition")
            .is_some_and(serde_json::Value::is_string)
            && v.get("charges").is_some_and(serde_json::Value::is_array)
    })
}

/// Refuses to write `output` (named by `--option`) over the input file `input`,
/// also when the two are links to one file: the private input would be replaced
/// by the release.
pub(crate) fn refuse_overwriting_input(
    input: &Path,
    output: Option<&Path>,
    option: &'static str,
) -> Result<(), CliError> {
    let Some(output) = output else { return Ok(()) };
    if output.as_os_str() == "-" {
        return Ok(());
    }
    // Standard input redirected from a file is that file.
    let read_from = if input.as_os_str() == "-" {
        Path::new("/dev/stdin")
    } else {
        input
    };
    if let (Ok(a), Ok(b)) = (std::fs::metadata(read_from), std::fs::metadata(output)) {
        let same = {
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                (a.dev(), a.ino()) == (b.dev(), b.ino())
            }
            #[cfg(not(unix))]
            {
                let _ = (a, b);
                std::fs::canonicalize(input).ok() == std::fs::canonicalize(output).ok()
            }
        };
        if same {
            return Err(CliError::Usage {
                option,
                message: format!(
                    "{} is the input file ({}); the release would replace the private data",
                    output.display(),
                    input.display()
                ),
            });
        }
    }
    Ok(())
}

/// Whether `a` and `b` name one file, whether or not it exists yet: the same file
/// (also through links) when both exist, else the same name in the same directory
/// (`./x` and `x`, a linked directory).
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                (x.dev(), x.ino()) == (y.dev(), y.ino())
            }
            #[cfg(not(unix))]
            {
                let _ = (x, y);
                std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
            }
        }
        _ => {
            let place = |p: &Path| {
                let dir = match p.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d,
                    _ => Path::new("."),
                };
                Some((std::fs::canonicalize(dir).ok()?, p.file_name()?.to_owned()))
            };
            let (x, y) = (place(a), place(b));
            x.is_some() && x == y
        }
    }
}

fn ledger_bytes(accountant: &Accountant) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(&accountant.ledger_json())
        .expect("a JSON value always serializes");
    bytes.push(b'\n');
    bytes
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a
/// rename (`ldp::output::AtomicFile`), so `path` holds either its old content or all of `bytes`.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    let written = (|| {
        let mut file = privq_host::ldp::output::AtomicFile::create(path)?;
        file.write_all(bytes)?;
        file.commit()
    })();
    written.map_err(|e| CliError::file(path, e))
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

/// Test helpers for `--ledger-json`.
#[cfg(test)]
mod feature_hint_tests {
    use super::missing_feature;

    fn feature(line: &str) -> Option<&'static str> {
        let args: Vec<String> = line.split(' ').map(String::from).collect();
        missing_feature(&args).map(|(f, _)| f)
    }

    #[test]
    fn subcommands_of_absent_features_name_the_feature() {
        let serve = (!cfg!(feature = "serve")).then_some("serve");
        let analytics = (!cfg!(feature = "analytics")).then_some("analytics");
        assert_eq!(feature("privq serve bench"), serve);
        assert_eq!(feature("privq ldp export --input r.pqr"), analytics);
        assert_eq!(feature("privq ldp scale"), analytics);
        assert_eq!(
            feature("privq ldp aggregate --campaign c --parquet t/"),
            analytics
        );
        assert_eq!(feature("privq ldp aggregate --campaign c --db x.db"), serve);
        assert_eq!(feature("privq ldp aggregate --campaign c --input r"), None);
        assert_eq!(feature("privq synth --input serve"), None);
    }
}

#[cfg(test)]
pub(crate) mod ledger_tests {
    use std::path::{Path, PathBuf};

    /// A fresh directory for one test's files.
    pub(crate) fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("privq-ledger-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The ledger file parsed; its exact total ε; and a check that no temporary
    /// file was left beside it.
    pub(crate) fn read(path: &Path) -> (serde_json::Value, privq_core::Epsilon) {
        let text = std::fs::read_to_string(path).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        let total = json["spent"]["epsilon"]["exact"]
            .as_str()
            .unwrap_or_else(|| panic!("{json}"))
            .parse()
            .unwrap();
        let dir = path.parent().unwrap();
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name();
            assert!(!name.to_string_lossy().contains(".tmp-"), "{name:?} left");
        }
        (json, total)
    }

    /// The exact ε written right after `marker` in `text` (up to a space, `,` or `;`).
    pub(crate) fn stated(text: &str, marker: &str) -> privq_core::Epsilon {
        text.split(marker)
            .nth(1)
            .and_then(|r| r.split([' ', ',', ';']).next())
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("no ε after {marker:?} in {text}"))
    }

    #[test]
    fn ledger_json_refuses_standard_output() {
        use clap::Parser;
        let argv = ["privq", "noise", "--epsilon", "1", "--sensitivity", "1"];
        let with = |path: &'static str| {
            crate::Cli::try_parse_from(argv.iter().copied().chain(["--ledger-json", path]))
        };
        assert!(with("-").is_err());
        assert!(with("").is_err());
        assert!(with("ledger.json").is_ok());
    }

    #[test]
    fn numbers_print_at_a_sensible_precision() {
        use super::{num, short};
        assert_eq!(num(0.25), "0.25");
        assert_eq!(num(1e-300), "1e-300");
        assert_eq!(num(-5.4e280), "-5.4e280");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(f64::INFINITY), "inf");
        assert_eq!(num(1.0 / 3.0).parse::<f64>().unwrap(), 1.0 / 3.0);
        assert_eq!(short(0.1), "0.1000");
        assert_eq!(short(1e-9), "1.000e-9");
        assert_eq!(short(0.0), "0.0000");
    }

    #[test]
    fn the_ledger_is_replaced_whole() {
        let dir = scratch("atomic");
        let path = dir.join("l.json");
        std::fs::write(&path, "old").unwrap();
        super::write_atomically(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        // A directory that does not exist: an error, and nothing written.
        assert!(super::write_atomically(&dir.join("no/such/l.json"), b"x").is_err());
        std::fs::remove_dir_all(&dir).ok();
    }
}

/// A clap parser for a library enum chosen by name: lists the names in `--help`
/// and parses through [`Named::from_name`].
pub(crate) fn choice<T: Named + Clone + Send + Sync>()
-> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(T::NAMES).try_map(|name: String| T::from_name(&name))
}

/// An output opened before the work starts and completed after it: standard
/// output for `-` (or no path), else an [`AtomicFile`] that appears, whole, only on
/// [`Output::commit`]. Opening it first makes an unwritable path fail before any
/// privacy is spent or any long run starts.
pub(crate) enum Output {
    /// Standard output.
    Stdout,
    /// A file written atomically.
    File(AtomicFile, PathBuf),
}

impl Output {
    /// Opens `path` (`None` or `-`: standard output), naming it on failure.
    pub(crate) fn open(path: Option<&Path>) -> Result<Output, CliError> {
        match path.map(Destination::from_path) {
            None | Some(Destination::Stdout) => Ok(Output::Stdout),
            Some(Destination::File(p))
                if std::fs::metadata(&p).is_ok_and(|m| m.is_dir())
                    || p.as_os_str()
                        .to_string_lossy()
                        .ends_with(['/', std::path::MAIN_SEPARATOR]) =>
            {
                Err(CliError::file(
                    &p,
                    std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory"),
                ))
            }
            Some(Destination::File(p)) => match AtomicFile::create(&p) {
                Ok(f) => Ok(Output::File(f, p)),
                Err(e) => Err(CliError::file(&p, e)),
            },
        }
    }

    /// Where to write: the file, or `stdout`.
    pub(crate) fn writer<'a>(&'a mut self, stdout: &'a mut dyn Write) -> &'a mut dyn Write {
        match self {
            Output::Stdout => stdout,
            Output::File(f, _) => f,
        }
    }

    /// Puts the file in place (or flushes `stdout`).
    pub(crate) fn commit(self, stdout: &mut dyn Write) -> Result<(), CliError> {
        match self {
            Output::Stdout => Ok(stdout.flush()?),
            Output::File(f, p) => f.commit().map_err(|e| CliError::file(&p, e)),
        }
    }

    /// For messages: the path, or "standard output".
    pub(crate) fn describe(&self) -> String {
        match self {
            Output::Stdout => "standard output".into(),
            Output::File(_, p) => p.display().to_string(),
        }
    }
}

/// An input path, with `-` meaning standard input. A library that reads from a
/// path gets [`InputFile::path`]: for `-`, standard input spooled to a temporary
/// file that is removed when this value is dropped.
pub(crate) struct InputFile {
    path: PathBuf,
    spooled: bool,
}

impl InputFile {
    /// Checks that `path` can be opened (naming it if not), or spools standard input.
    pub(crate) fn open(path: &Path, stdin: &mut dyn BufRead) -> Result<InputFile, CliError> {
        if path.as_os_str() != "-" {
            std::fs::File::open(path).map_err(|e| CliError::file(path, e))?;
            return Ok(InputFile {
                path: path.to_path_buf(),
                spooled: false,
            });
        }
        let tmp = std::env::temp_dir().join(format!(
            "privq-stdin-{}-{}",
            std::process::id(),
            SPOOLED.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let spooled = InputFile {
            path: tmp,
            spooled: true,
        };
        let mut file =
            std::fs::File::create(&spooled.path).map_err(|e| CliError::file(&spooled.path, e))?;
        io::copy(stdin, &mut file)?;
        Ok(spooled)
    }

    /// The path to read.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

static SPOOLED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Drop for InputFile {
    fn drop(&mut self) {
        if self.spooled {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The position of `column` in a CSV header (names compared trimmed), or an error
/// listing the header's names ([`CliError::EmptyInput`] without a header); a name
/// the header holds twice is refused, so neither copy is released by mistake.
pub(crate) fn column_index(header: &csv::StringRecord, column: &str) -> Result<usize, CliError> {
    if header.is_empty() {
        return Err(CliError::EmptyInput);
    }
    let mut found = header
        .iter()
        .enumerate()
        .filter(|(_, h)| h.trim() == column)
        .map(|(i, _)| i);
    match (found.next(), found.next()) {
        (Some(i), None) => Ok(i),
        (Some(i), Some(j)) => Err(CliError::Usage {
            option: "column",
            message: format!(
                "the header names column {column:?} twice (columns {} and {}); rename one",
                i + 1,
                j + 1
            ),
        }),
        (None, _) => Err(CliError::MissingColumn {
            column: column.to_string(),
            available: header.iter().map(str::to_string).collect(),
        }),
    }
}

/// The whole text of `path` (`-`: standard input), naming the file on failure.
pub(crate) fn read_text(path: &Path, stdin: &mut dyn BufRead) -> Result<String, CliError> {
    let mut text = String::new();
    if path.as_os_str() == "-" {
        stdin.read_to_string(&mut text)?;
        return Ok(text);
    }
    std::fs::File::open(path)
        .and_then(|mut f| io::Read::read_to_string(&mut f, &mut text))
        .map_err(|e| CliError::file(path, e))?;
    Ok(text)
}

/// Checks, before a long run, that `dir` can hold its outputs: creates it and
/// writes and removes a probe file, naming the directory on failure.
pub(crate) fn check_out_dir(dir: &Path) -> Result<(), CliError> {
    std::fs::create_dir_all(dir).map_err(|e| CliError::file(dir, e))?;
    let probe = dir.join(format!(".privq-probe-{}", std::process::id()));
    std::fs::write(&probe, b"probe").map_err(|e| CliError::file(dir, e))?;
    std::fs::remove_file(&probe).map_err(|e| CliError::file(&probe, e))
}

/// The cargo feature that builds a subcommand absent from this build (`privq serve`,
/// `privq ldp export|scale`), for the message that replaces clap's "unrecognized
/// subcommand".
fn missing_feature(args: &[String]) -> Option<(&'static str, String)> {
    let words: Vec<&str> = args
        .iter()
        .skip(1)
        .map(String::as_str)
        .filter(|a| !a.starts_with('-'))
        .take(2)
        .collect();
    let has = |flag: &str| {
        args.iter()
            .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
    };
    match words.as_slice() {
        ["serve", ..] if !cfg!(feature = "serve") => Some(("serve", "privq serve".into())),
        ["ldp", sub @ ("export" | "scale")] if !cfg!(feature = "analytics") => {
            Some(("analytics", format!("privq ldp {sub}")))
        }
        ["ldp", "aggregate"] if !cfg!(feature = "analytics") && has("--parquet") => {
            Some(("analytics", "privq ldp aggregate --parquet".into()))
        }
        ["ldp", "aggregate"] if !cfg!(feature = "serve") && has("--db") => {
            Some(("serve", "privq ldp aggregate --db".into()))
        }
        _ => None,
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if let Some((feature, command)) = missing_feature(&args) {
        eprintln!(
            "privq: error: `{command}` is not in this build of privq; it needs the cargo feature \
             `{feature}`:\n  cargo install --path host/cli --features {feature}\n  \
             (or cargo run --release -p privq --features {feature} -- ...)"
        );
        return ExitCode::from(2);
    }
    let cli = Cli::parse_from(args);
    // Ctrl-C or SIGTERM: no output was committed, so remove the temporary files
    // (and a Ballista executor's work directory, with its shuffle files of raw
    // rows) and exit as a shell reports a program ended by SIGINT. Not for the collector,
    // which shuts down gracefully on these signals itself.
    #[cfg(feature = "serve")]
    let serving = matches!(cli.command, Command::Serve(_));
    #[cfg(not(feature = "serve"))]
    let serving = false;
    if !serving {
        let _ = ctrlc::set_handler(|| {
            privq_host::ldp::output::remove_pending_temporaries();
            std::process::exit(130);
        });
    }
    let stdin = io::stdin();
    let mut stdin = stdin.lock();
    let mut stdout = io::BufWriter::new(io::stdout().lock());
    let mut stderr = io::stderr();
    let result = run(cli, &mut stdin, &mut stdout, &mut stderr);
    let flushed = stdout.flush();
    match (result, flushed) {
        (Ok(()), Ok(())) => ExitCode::SUCCESS,
        // The reader went away (`privq … | head`): end quietly.
        (Err(e), _) if e.is_broken_pipe() => ExitCode::from(BROKEN_PIPE),
        (Ok(()), Err(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::from(BROKEN_PIPE),
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

//! `privq budget`: a dataset's privacy budget file (`--budget-file` of every
//! command that spends privacy).

use std::io::{BufRead, Write};
use std::path::PathBuf;

use privq_host::Epsilon;
use privq_host::accountant::{BudgetFile, BudgetStatus};

use super::CliError;

/// `privq budget`: inspect a budget file.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    privq noise --demo --epsilon 1 --budget-file readings.budget.json --budget-cap 5\n  \
    privq budget show readings.budget.json\n  \
    privq budget show readings.budget.json --format json")]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub action: Action,
}

/// The `budget` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Print a budget file: its cap, what is spent and what remains, and every charge.
    Show(ShowArgs),
}

/// `privq budget show`.
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// The budget file.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// `text` (the default) or `json` (the file's content with `spent` and
    /// `remaining` added, every ε an exact fraction).
    #[arg(long, value_enum, default_value = "text")]
    pub format: ShowFormat,
}

/// The output of `privq budget show`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ShowFormat {
    /// For reading.
    Text,
    /// For programs.
    Json,
}

/// Runs `privq budget`.
pub fn run(
    args: &Args,
    _stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    _stderr: &mut dyn Write,
) -> Result<(), CliError> {
    match &args.action {
        Action::Show(a) => show(a, stdout),
    }
}

/// An exact ε, `0` for none.
fn eps(e: Option<Epsilon>) -> String {
    e.map_or_else(|| "0".into(), |e| e.to_string())
}

/// A δ exactly: `0`, else the shortest round-trip `{:e}` form.
fn delta(d: f64) -> String {
    if d == 0.0 {
        "0".into()
    } else {
        format!("{d:e}")
    }
}

fn show(a: &ShowArgs, stdout: &mut dyn Write) -> Result<(), CliError> {
    let file = BudgetFile::read(&a.path)?;
    let status = file.status()?;
    match a.format {
        ShowFormat::Json => {
            let mut json = file.to_json();
            let fraction = |e: Option<Epsilon>| serde_json::json!({"exact": eps(e), "value": e.map_or(0.0, |e| e.to_f64())});
            if let Some(map) = json.as_object_mut() {
                map.insert(
                    "spent".into(),
                    serde_json::json!({
                        "epsilon": fraction(status.spent_epsilon),
                        "delta": status.spent_delta,
                    }),
                );
                map.insert(
                    "remaining".into(),
                    serde_json::json!({
                        "epsilon": fraction(status.remaining_epsilon()),
                        "delta": status.remaining_delta(),
                    }),
                );
            }
            let mut bytes = serde_json::to_vec_pretty(&json)?;
            bytes.push(b'\n');
            stdout.write_all(&bytes)?;
        }
        ShowFormat::Text => write_text(&a.path, &file, &status, stdout)?,
    }
    Ok(())
}

fn write_text(
    path: &std::path::Path,
    file: &BudgetFile,
    status: &BudgetStatus,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let cap = file.cap();
    writeln!(out, "budget file: {}", path.display())?;
    writeln!(out, "cap:       {cap}")?;
    writeln!(
        out,
        "spent:     ε = {}, δ = {} ({} charge(s), basic composition)",
        eps(status.spent_epsilon),
        delta(status.spent_delta),
        status.charges
    )?;
    writeln!(
        out,
        "remaining: ε = {}, δ = {}",
        eps(status.remaining_epsilon()),
        delta(status.remaining_delta())
    )?;
    if let Some(first) = file.charges().first() {
        let relation = first
            .neighbours
            .map_or("no stated neighbour relation", |n| n.phrase());
        let relation = match &first.unit {
            Some(unit) => relation.replace("record", &format!("unit ({unit:?})")),
            None => relation.to_string(),
        };
        writeln!(out, "charges (under {relation}):")?;
    }
    for (i, c) in file.charges().iter().enumerate() {
        writeln!(
            out,
            "  {:>3}. {}  {}: ε = {}, δ = {} (cost {}){}",
            i + 1,
            c.time,
            c.label,
            c.epsilon,
            delta(c.delta),
            c.cost,
            if c.certified { "" } else { " UNCERTIFIED" }
        )?;
    }
    if file.has_uncertified() {
        writeln!(
            out,
            "warning: the total includes uncertified ε (no proof that it holds)"
        )?;
    }
    Ok(())
}

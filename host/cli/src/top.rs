//! `privq top`: the most frequent of a public list of values in a CSV column, chosen
//! privately by report noisy max ([`ReportNoisyMax`]).

use std::io::{BufRead, Write};
use std::path::PathBuf;

use privq_host::central::ReportNoisyMax;
use privq_host::contract::{Mechanism, Neighbours};

use super::synth::NeighboursArg;
use super::{CliError, LedgerArgs};

/// Options of `privq top`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Example:\n  \
    privq top --input people.csv --column region --values north,south,east,west --epsilon 1\n\n\
    Each row is one record (one person); the guarantee is per record. Only the winning value \
    is released, at epsilon whatever the number of candidates. Rows with a value not in \
    --values count for no candidate (their number is private and not shown). Values match \
    exactly after trimming spaces (case-sensitive); equal noisy counts go to the value listed \
    first. Under --neighbours add-remove \
    (the default) one record moves every count the same way and the noise scale is \
    1/epsilon; under replace it is 2/epsilon.")]
pub struct Args {
    /// The CSV table (with a header; `-`: standard input).
    #[arg(long, value_name = "PATH")]
    pub input: PathBuf,
    /// The column whose most frequent value is wanted.
    #[arg(long, value_name = "NAME")]
    pub column: String,
    /// The public candidate values, comma-separated. A row holding another value
    /// counts for no candidate; how many such rows there are is private and is not
    /// shown (refusing them would itself reveal that one exists).
    #[arg(long, value_name = "A,B,...", value_delimiter = ',', required = true)]
    pub values: Vec<String>,
    /// Privacy budget ε: a decimal (`0.5`) or a fraction (`1/2`), read exactly.
    #[arg(long, value_name = "EPS", allow_hyphen_values = true)]
    pub epsilon: String,
    /// The neighbour relation of the guarantee.
    #[arg(long, value_enum, default_value = "add-remove")]
    pub neighbours: NeighboursArg,
    /// Seed for a reproducible run (tests and demos only: it makes the noise removable).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Where to write the ledger as JSON.
    #[command(flatten)]
    pub ledger: LedgerArgs,
}

/// Runs `privq top`.
pub fn run(
    args: &Args,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    let epsilon = super::parse_epsilon(&args.epsilon)?;
    let values: Vec<&str> = args.values.iter().map(|v| v.trim()).collect();
    if values.iter().any(|v| v.is_empty()) {
        return Err(CliError::Usage {
            option: "values",
            message: "an empty candidate (a stray comma?); list the values as A,B,...".into(),
        });
    }
    if let Some(v) = values
        .iter()
        .enumerate()
        .find_map(|(i, v)| values[..i].contains(v).then_some(v))
    {
        return Err(CliError::Usage {
            option: "values",
            message: format!("{v:?} is listed twice"),
        });
    }
    let neighbours = Neighbours::from(args.neighbours);
    let mech = ReportNoisyMax::counts(neighbours, epsilon, values.len())?;
    let counts = count(
        &super::read_text(&args.input, stdin)?,
        &args.column,
        &values,
    )?;
    let mut rng = super::rng(args.seed, stderr)?;
    mech.check_input(&counts[..])?;
    let mut accountant = mech.accountant()?;
    args.ledger.reserve(&accountant, "privq top", stderr)?;
    let winner = mech.release(&counts[..], &mut accountant, &mut rng)?;
    writeln!(stdout, "{}", values[winner])?;
    writeln!(
        stderr,
        "privq: the most frequent of {} values by report noisy max (noise scale {} per count; \
         rows with other values count for none); privacy: ε = {epsilon} under {}",
        values.len(),
        mech.scale(),
        neighbours.phrase()
    )?;
    writeln!(stderr, "privq: ledger:\n{}", args.ledger.text(&accountant))?;
    args.ledger.write(&accountant)
}

/// The count of each candidate in `column`. A row with another value counts for
/// none: refusing it, or saying how many there are, would reveal that such a row
/// exists, which the guarantee does not cover.
fn count(text: &str, column: &str, values: &[&str]) -> Result<Vec<u64>, CliError> {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header = reader.headers()?.clone();
    let index = super::column_index(&header, column)?;
    let mut counts = vec![0u64; values.len()];
    for record in reader.records() {
        let record = record?;
        let field = record.get(index).unwrap_or("").trim();
        if let Some(i) = values.iter().position(|v| *v == field) {
            counts[i] += 1;
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_clear_winner_is_released_and_other_values_count_for_none() {
        let dir = crate::ledger_tests::scratch("top");
        let input = dir.join("t.csv");
        let mut text = String::from("id,colour\n");
        for i in 0..60 {
            let c = if i < 40 { "red" } else { "blue" };
            text.push_str(&format!("{i},{c}\n"));
        }
        std::fs::write(&input, &text).unwrap();
        let path = input.to_str().unwrap();
        let base = [
            "top",
            "--input",
            path,
            "--column",
            "colour",
            "--epsilon",
            "1",
        ];
        let mut argv = base.to_vec();
        argv.extend(["--values", "blue,red,green", "--seed", "3"]);
        let (out, err) = crate::run_with(&argv, "").unwrap();
        assert_eq!(out, "red\n");
        assert!(
            err.contains("report noisy max over 3 counts: ε = 1"),
            "{err}"
        );
        // "red" is not a candidate: its 40 rows count for none, and nothing says so.
        let mut argv = base.to_vec();
        argv.extend(["--values", "blue,green", "--seed", "4"]);
        let (out, err) = crate::run_with(&argv, "").unwrap();
        assert_eq!(out, "blue\n");
        assert!(!err.contains("red") && !err.contains("40"), "{err}");
        for bad in ["red,red", "", "red,", "red,,blue"] {
            let mut argv = base.to_vec();
            argv.extend(["--values", bad]);
            assert!(crate::run_with(&argv, "").is_err(), "{bad:?}");
        }
    }
}

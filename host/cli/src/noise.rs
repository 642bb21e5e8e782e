//! `privq noise`: the Laplace mechanism on a fixed-point grid, for numbers read from
//! a file, standard input or a CSV column.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;

use privq_core::Fixed;
use privq_host::central::MechanismError;
use privq_host::central::values::{Sampler, ValueBound, ValueNoise};
use privq_host::contract::Mechanism;

use super::results::{Cell, Format, write_rows};
use super::{CliError, LedgerArgs};

/// The built-in demo input: 24 synthetic room-temperature readings.
pub const DEMO_CSV: &str = include_str!("../data/readings.csv");

/// Options of `privq noise`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
    privq noise --demo --epsilon 0.5 --range 15,30 --seed 7\n  \
    privq noise --demo --epsilon 0.5 --sensitivity 1 --seed 7\n  \
    printf '3\\n4.25\\n' | privq noise --epsilon 1/2 --sensitivity 1\n  \
    privq noise --input readings.csv --column temperature_c --epsilon 1 --sensitivity 0.5")]
pub struct Args {
    /// Privacy parameter ε for each value: a decimal (`0.5`) or a fraction (`1/2`), read exactly.
    #[arg(long, value_name = "EPS", allow_hyphen_values = true)]
    pub epsilon: String,
    /// The public range `LO,HI` of a value: every value is clamped into it before
    /// noise is added, and the sensitivity is its width `HI − LO`. Each released value
    /// is then ε-DP for its individual whatever the true value, outliers included.
    /// The sound form; use it unless you can prove a smaller sensitivity.
    #[arg(
        long,
        value_name = "LO,HI",
        allow_hyphen_values = true,
        conflicts_with = "sensitivity",
        required_unless_present = "sensitivity"
    )]
    pub range: Option<String>,
    /// Asserted sensitivity Δ > 0: how much one individual can change a value. It is
    /// not checked: a value that one individual moves by more than Δ (an outlier) is
    /// protected only at ε·(its change)/Δ. Prefer `--range`.
    #[arg(long, value_name = "DELTA", allow_hyphen_values = true)]
    pub sensitivity: Option<String>,
    /// Grid step γ = 2^K for the released values (default: the largest power of two ≤ Δ/1024).
    #[arg(long, value_name = "K", allow_hyphen_values = true)]
    pub grid_exp: Option<i32>,
    /// Use the bounded-work sampler, whose running time does not depend on the noise
    /// (costs δ ≤ 2^-64).
    #[arg(long)]
    pub bounded_work: bool,
    /// Seed for a reproducible run. Anyone who knows the seed can remove the noise:
    /// never use it on real data.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Read from this file (`-` for standard input, the default).
    #[arg(long, value_name = "PATH", conflicts_with = "demo")]
    pub input: Option<PathBuf>,
    /// Use the built-in demo readings (CSV column `temperature_c`).
    #[arg(long)]
    pub demo: bool,
    /// Treat the input as CSV with a header and noise this column, keeping the others.
    #[arg(long, value_name = "NAME")]
    pub column: Option<String>,
    /// Where to write the ledger as JSON.
    #[command(flatten)]
    pub ledger: LedgerArgs,
    /// Output as `csv` (the default: one value per line, or the input CSV with the
    /// column replaced) or `json` (an array of objects; the released values are
    /// exact decimal numbers).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
}

/// Runs `privq noise`: the library's [`ValueNoise`] releases the values under its
/// own accountant; this parses, reads and prints.
pub fn run(
    args: &Args,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    let noise = mechanism(args)?;
    let range = matches!(noise.bound(), ValueBound::Range { .. });
    let input = read_input(args, stdin, range)?;
    let mut rng = super::rng(args.seed, stderr)?;
    let values: Vec<Fixed> = input.values.iter().map(|&(_, v)| v).collect();
    let noise = noise.with_count(values.len());
    let mechanism_error = |e| match e {
        MechanismError::Value { index, source } => CliError::Value {
            line: input.values.get(index).map_or(0, |&(line, _)| line),
            text: values.get(index).map(Fixed::to_string).unwrap_or_default(),
            source,
        },
        e => e.into(),
    };
    // The input is checked, then the run charged to the budget file, before any noise.
    noise.check_input(&values).map_err(mechanism_error)?;
    let mut accountant = noise.accountant()?;
    args.ledger.reserve(&accountant, "privq noise", stderr)?;
    let released = noise
        .release(&values, &mut accountant, &mut rng)
        .map_err(mechanism_error)?;
    input.write(&released, args.format, stdout)?;
    summarize(&noise, released.len(), stderr)?;
    warn_saturated(&released, noise.summary().grid, stderr)?;
    explain_sensitivity(noise.bound(), stderr)?;
    if let Some(table) = &input.csv {
        let others: Vec<&str> = (0..table.header.len())
            .filter(|&i| i != table.column)
            .filter_map(|i| table.header.get(i))
            .collect();
        if !others.is_empty() {
            writeln!(
                stderr,
                "privq: warning: only column {:?} is private; the other columns ({}) are \
                 copied unchanged, so do not publish them as part of this release",
                table.header.get(table.column).unwrap_or(""),
                others.join(", ")
            )?;
        }
    }
    writeln!(stderr, "privq: ledger:\n{}", args.ledger.text(&accountant))?;
    args.ledger.write(&accountant)
}

/// A parameter error naming `option`.
fn param(option: &'static str) -> impl Fn(privq_core::Error) -> CliError {
    move |source| CliError::Parameter { option, source }
}

/// The mechanism the options describe.
fn mechanism(args: &Args) -> Result<ValueNoise, CliError> {
    let epsilon = super::parse_epsilon(&args.epsilon)?;
    let range = args.range.as_deref().map(parse_range).transpose()?;
    let bound = match (range, &args.sensitivity) {
        (Some((lo, hi)), _) => {
            hi.checked_sub(lo).map_err(param("range"))?;
            ValueBound::Range { lo, hi }
        }
        // Rounded up to the grid: an asserted bound must never shrink.
        (None, Some(text)) => {
            ValueBound::Asserted(Fixed::parse_up(text).map_err(param("sensitivity"))?)
        }
        (None, None) => return Err(param("range")(privq_core::Error::OutOfRange)),
    };
    let sampler = if args.bounded_work {
        Sampler::BoundedWork
    } else {
        Sampler::Exact
    };
    ValueNoise::new(epsilon, bound, args.grid_exp, sampler).map_err(|e| match e {
        MechanismError::Core(source) => CliError::Parameter {
            option: if args.grid_exp.is_some() {
                "grid-exp"
            } else {
                "sensitivity"
            },
            source,
        },
        e => e.into(),
    })
}

/// Reads the values (a CSV column or one per line); with a public range, values
/// beyond the fixed-point range saturate (the mechanism clamps them anyway).
fn read_input(args: &Args, stdin: &mut dyn BufRead, range: bool) -> Result<Input, CliError> {
    let mut text = String::new();
    match (&args.input, args.demo) {
        (_, true) => text.push_str(DEMO_CSV),
        (Some(path), false) if path.as_os_str() != "-" => {
            File::open(path)
                .and_then(|mut f| f.read_to_string(&mut text))
                .map_err(|e| CliError::file(path, e))?;
        }
        _ => {
            stdin.read_to_string(&mut text)?;
        }
    }
    let column = match (&args.column, args.demo) {
        (Some(c), _) => Some(c.as_str()),
        (None, true) => Some("temperature_c"),
        (None, false) => None,
    };
    match column {
        Some(name) => Input::csv(&text, name, range),
        None => Input::lines(&text, range),
    }
}

/// Says for whom ε holds: everyone (a public range) or only those within the
/// asserted sensitivity.
fn explain_sensitivity(bound: ValueBound, stderr: &mut dyn Write) -> Result<(), CliError> {
    match bound {
        ValueBound::Range { lo, hi } => writeln!(
            stderr,
            "privq: values were clamped into the public range [{lo}, {hi}]; sensitivity = its width, \
             so every value is protected, outliers included"
        )?,
        ValueBound::Asserted(sensitivity) => writeln!(
            stderr,
            "privq: the sensitivity {sensitivity} is asserted, not checked: ε holds only for \
             individuals who change a value by at most that much (use --range LO,HI for a \
             guarantee that holds for every value)"
        )?,
    }
    Ok(())
}

/// `LO,HI` with `LO < HI`, both on the fixed-point grid.
fn parse_range(text: &str) -> Result<(Fixed, Fixed), CliError> {
    let bad = |source| CliError::Parameter {
        option: "range",
        source,
    };
    let (lo, hi) = text
        .split_once(',')
        .ok_or(bad(privq_core::Error::OutOfRange))?;
    let bound = |text: &str| match text.trim().parse::<Fixed>() {
        Err(privq_core::Error::Parse) => Err(CliError::NotANumber {
            place: "--range".into(),
            text: text.to_string(),
        }),
        parsed => parsed.map_err(bad),
    };
    let (lo, hi) = (bound(lo)?, bound(hi)?);
    if lo >= hi {
        return Err(CliError::Usage {
            option: "range",
            message: format!("LO must be below HI, got LO = {lo}, HI = {hi}"),
        });
    }
    Ok((lo, hi))
}

/// Warns when released values sit on the last grid point inside the fixed-point
/// range: the noise (ε too small for the sensitivity) pushed them past it and they
/// were clamped there, so they carry no information about the input.
fn warn_saturated(released: &[Fixed], grid: Fixed, stderr: &mut dyn Write) -> Result<(), CliError> {
    let step = grid.to_bits();
    let at_edge = |v: &Fixed| {
        let b = v.to_bits();
        b.checked_add(step).is_none() || b.checked_sub(step).is_none_or(|b| b == i64::MIN)
    };
    let saturated = released.iter().filter(|v| at_edge(v)).count();
    if saturated > 0 {
        writeln!(
            stderr,
            "privq: warning: {saturated} of {} released value(s) saturated at the fixed-point range \
             [-2^31, 2^31): the noise exceeded it (ε is too small for this sensitivity), so they carry \
             no information; use a larger --epsilon",
            released.len(),
        )?;
    }
    Ok(())
}

fn summarize(values: &ValueNoise, count: usize, stderr: &mut dyn Write) -> Result<(), CliError> {
    let s = values.summary();
    let delta = values
        .delta_log2()
        .map_or(String::new(), |k| format!(", δ ≤ 2^{k}"));
    writeln!(
        stderr,
        "privq: released {count} value(s), each with ε = {}{delta}; grid γ = 2^{} = {}; \
         sensitivity {} steps; noise scale {}/{} steps (std dev ≈ {:.4})",
        s.epsilon, s.grid_exp, s.grid, s.sensitivity_steps, s.scale_num, s.scale_den, s.std_dev,
    )?;
    writeln!(
        stderr,
        "privq: values that describe the same individual compose: k of them cost k·ε"
    )?;
    Ok(())
}

/// Parsed input: the values with their line numbers, and how to write them back.
struct Input {
    values: Vec<(usize, Fixed)>,
    csv: Option<CsvTable>,
}

struct CsvTable {
    header: csv::StringRecord,
    records: Vec<csv::StringRecord>,
    column: usize,
}

impl Input {
    /// One number per line; blank lines are not allowed except at the end.
    fn lines(text: &str, saturate: bool) -> Result<Input, CliError> {
        let lines: Vec<&str> = text.lines().collect();
        let last = lines.iter().rposition(|l| !l.trim().is_empty());
        let mut values = Vec::new();
        for (i, line) in lines.iter().enumerate().take(last.map_or(0, |l| l + 1)) {
            values.push((i + 1, parse_value(i + 1, line, saturate)?));
        }
        if values.is_empty() {
            return Err(CliError::EmptyInput);
        }
        Ok(Input { values, csv: None })
    }

    /// CSV with a header row; values come from `column`.
    fn csv(text: &str, column: &str, saturate: bool) -> Result<Input, CliError> {
        let mut reader = csv::ReaderBuilder::new().from_reader(BufReader::new(text.as_bytes()));
        let header = reader.headers()?.clone();
        let index = super::column_index(&header, column)?;
        let mut records = Vec::new();
        let mut values = Vec::new();
        for (i, record) in reader.records().enumerate() {
            let record = record?;
            // Line numbers count the header as line 1.
            let line = record.position().map_or(i + 2, |p| p.line() as usize);
            let field = record.get(index).unwrap_or("");
            values.push((line, parse_value(line, field, saturate)?));
            records.push(record);
        }
        if values.is_empty() {
            return Err(CliError::EmptyInput);
        }
        Ok(Input {
            values,
            csv: Some(CsvTable {
                header,
                records,
                column: index,
            }),
        })
    }

    fn write(
        &self,
        released: &[Fixed],
        format: Option<Format>,
        out: &mut dyn Write,
    ) -> Result<(), CliError> {
        if format == Some(Format::Json) {
            return self.write_json(released, out);
        }
        match &self.csv {
            None => {
                for v in released {
                    writeln!(out, "{v}")?;
                }
            }
            Some(table) => {
                let mut w = csv::Writer::from_writer(out);
                w.write_record(&table.header)?;
                for (record, v) in table.records.iter().zip(released) {
                    let text = v.to_string();
                    let row = record
                        .iter()
                        .enumerate()
                        .map(|(i, f)| if i == table.column { text.as_str() } else { f });
                    w.write_record(row)?;
                }
                w.flush()?;
            }
        }
        Ok(())
    }

    /// `[{"value": …}, …]`, or one object per CSV record (its other columns as text).
    fn write_json(&self, released: &[Fixed], out: &mut dyn Write) -> Result<(), CliError> {
        let exact = |v: &Fixed| Cell::Exact(v.to_string());
        match &self.csv {
            None => {
                let rows: Vec<[Cell; 1]> = released.iter().map(|v| [exact(v)]).collect();
                write_rows(Format::Json, &["value"], rows.iter().map(|r| &r[..]), out)
            }
            Some(table) => {
                let rows: Vec<Vec<Cell>> = table
                    .records
                    .iter()
                    .zip(released)
                    .map(|(record, v)| {
                        (0..table.header.len())
                            .map(|i| match record.get(i) {
                                _ if i == table.column => exact(v),
                                Some(f) => Cell::Text(f.to_string()),
                                None => Cell::Text(String::new()),
                            })
                            .collect()
                    })
                    .collect();
                let columns: Vec<&str> = table.header.iter().collect();
                write_rows(Format::Json, &columns, rows.iter().map(|r| &r[..]), out)
            }
        }
    }
}

/// A value on the fixed-point grid. With `saturate` (the `--range` form, where
/// every value is clamped into the range anyway) a number beyond the fixed-point
/// range saturates instead of failing, so an extreme value cannot stop the release:
/// output versus error would tell it apart from an ordinary one.
fn parse_value(line: usize, text: &str, saturate: bool) -> Result<Fixed, CliError> {
    match text.trim().parse::<Fixed>() {
        Ok(v) => Ok(v),
        Err(privq_core::Error::OutOfRange) if saturate => match text.trim().parse::<f64>() {
            Ok(x) if x > 0.0 => Ok(Fixed::MAX),
            Ok(x) if x < 0.0 => Ok(Fixed::MIN),
            _ => Err(CliError::Value {
                line,
                text: text.to_string(),
                source: privq_core::Error::OutOfRange,
            }),
        },
        Err(privq_core::Error::Parse) => Err(CliError::NotANumber {
            place: format!("line {line}"),
            text: text.to_string(),
        }),
        Err(source) => Err(CliError::Value {
            line,
            text: text.to_string(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_with;

    #[test]
    fn json_output_carries_the_exact_released_decimals() {
        let base = [
            "noise",
            "--epsilon",
            "1",
            "--sensitivity",
            "1",
            "--seed",
            "3",
        ];
        let (plain, _) = run_with(&base, "3\n-4.25\n").unwrap();
        let mut argv = base.to_vec();
        argv.extend(["--format", "json"]);
        let (json, _) = run_with(&argv, "3\n-4.25\n").unwrap();
        let values: Vec<String> = serde_json::from_str::<serde_json::Value>(&json)
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["value"].to_string())
            .collect();
        let lines: Vec<&str> = plain.lines().collect();
        assert_eq!(values, lines);
        // A CSV column keeps the other fields as text.
        let mut argv = vec!["noise", "--demo", "--range", "15,30", "--epsilon", "1"];
        argv.extend([
            "--column",
            "temperature_c",
            "--seed",
            "3",
            "--format",
            "json",
        ]);
        let (json, _) = run_with(&argv, "").unwrap();
        let rows: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(rows.as_array().unwrap().len(), 24);
        assert_eq!(rows[0]["device"], "dev-00");
        assert!(rows[0]["temperature_c"].is_number());
    }

    #[test]
    fn range_clamps_outliers_so_they_are_protected_like_any_value() {
        let argv = ["noise", "--epsilon", "1", "--range", "0,10", "--seed", "5"];
        // An outlier (1e6) is released exactly as the range's edge would be: same
        // seed, same output, so its presence cannot be told apart from a value of 10.
        let (outlier, err) = run_with(&argv, "1000000\n").unwrap();
        let (edge, _) = run_with(&argv, "10\n").unwrap();
        assert_eq!(outlier, edge);
        // Beyond the fixed-point range too: saturated, then clamped, not an error.
        assert_eq!(run_with(&argv, "3e12\n").unwrap().0, edge);
        assert_eq!(
            run_with(&argv, "-3e12\n").unwrap().0,
            run_with(&argv, "0\n").unwrap().0
        );
        assert!(
            err.contains("clamped into the public range [0, 10]"),
            "{err}"
        );
        assert!(err.contains("sensitivity 1280 steps"), "{err}");
        // The asserted form says what it guarantees.
        let (_, err) = run_with(
            &[
                "noise",
                "--epsilon",
                "1",
                "--sensitivity",
                "1",
                "--seed",
                "5",
            ],
            "1000000\n",
        )
        .unwrap();
        assert!(err.contains("asserted, not checked"), "{err}");
        for (bad, says) in [
            ("10,0", "--range: LO must be below HI"),
            ("3,3", "--range: LO must be below HI"),
            ("1", "--range: "),
            ("a,b", "--range: \"a\" is not a number"),
            ("0,nan", "--range: \"nan\" is not a number"),
            (
                "0,1e20",
                "--range: the value is outside the fixed-point range",
            ),
        ] {
            let e = run_with(
                &["noise", "--epsilon", "1", "--range", bad, "--seed", "5"],
                "1\n",
            )
            .unwrap_err()
            .to_string();
            assert!(e.starts_with(says), "{bad}: {e}");
        }
    }

    #[test]
    fn noises_lines_reproducibly_on_the_grid() {
        let argv = [
            "noise",
            "--epsilon",
            "1/2",
            "--sensitivity",
            "1",
            "--seed",
            "3",
        ];
        let (out, err) = run_with(&argv, "3\n4.25\n-7\n\n").unwrap();
        let values: Vec<Fixed> = out.lines().map(|l| l.parse().unwrap()).collect();
        assert_eq!(values.len(), 3);
        for v in &values {
            assert_eq!(v.to_bits() % (1 << 22), 0, "{v} is not on the 2^-10 grid");
        }
        assert_eq!(run_with(&argv, "3\n4.25\n-7\n").unwrap().0, out);
        assert!(err.contains("ε = 1/2"), "{err}");
        assert!(err.contains("warning"), "{err}");
    }

    #[test]
    fn demo_csv_keeps_other_columns() {
        let argv = [
            "noise",
            "--demo",
            "--epsilon",
            "1",
            "--sensitivity",
            "0.5",
            "--seed",
            "1",
        ];
        let (out, _) = run_with(&argv, "").unwrap();
        let mut lines = out.lines();
        assert_eq!(lines.next(), Some("device,room,temperature_c"));
        let first = lines.next().unwrap();
        assert!(first.starts_with("dev-00,lab,"), "{first}");
        assert_eq!(out.lines().count(), 25);
    }

    #[test]
    fn bounded_work_reports_delta() {
        let argv = [
            "noise",
            "--epsilon",
            "2",
            "--sensitivity",
            "1",
            "--seed",
            "1",
            "--bounded-work",
        ];
        let (out, err) = run_with(&argv, "10\n").unwrap();
        assert_eq!(out.lines().count(), 1);
        assert!(err.contains("δ ≤ 2^-64"), "{err}");
    }

    #[test]
    fn bad_input_is_named() {
        let base = ["noise", "--sensitivity", "1", "--seed", "1", "--epsilon"];
        let with_eps = |e: &'static str| {
            let mut v = base.to_vec();
            v.push(e);
            v
        };
        for (eps, want) in [
            ("0", privq_core::Error::EpsilonZero),
            ("-1", privq_core::Error::EpsilonNegative),
            ("nan", privq_core::Error::EpsilonNotFinite),
        ] {
            match run_with(&with_eps(eps), "1\n") {
                Err(CliError::Parameter {
                    option: "epsilon",
                    source,
                }) => assert_eq!(source, want),
                other => panic!("{eps}: {other:?}"),
            }
        }
        match run_with(&with_eps("1"), "1\nabc\n") {
            Err(e @ CliError::NotANumber { .. }) => {
                assert_eq!(e.to_string(), "line 2: \"abc\" is not a number")
            }
            other => panic!("{other:?}"),
        }
        match run_with(&with_eps("1"), "1\n\n2\n") {
            Err(CliError::NotANumber { place, .. }) if place == "line 2" => {}
            other => panic!("blank line in the middle: {other:?}"),
        }
        match run_with(&with_eps("1"), "99999999999\n") {
            Err(CliError::Value { source, .. }) => {
                assert_eq!(source, privq_core::Error::OutOfRange)
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            run_with(&with_eps("1"), ""),
            Err(CliError::EmptyInput)
        ));
        let mut csv_args = with_eps("1");
        csv_args.extend(["--column", "nope"]);
        assert!(matches!(
            run_with(&csv_args, "a,b\n1,2\n"),
            Err(CliError::MissingColumn { .. })
        ));
        let zero_sens = [
            "noise",
            "--epsilon",
            "1",
            "--sensitivity",
            "0",
            "--seed",
            "1",
        ];
        assert!(matches!(
            run_with(&zero_sens, "1\n"),
            Err(CliError::Parameter {
                option: "sensitivity",
                ..
            })
        ));
    }

    /// The ε the summary states: `each with ε = X`.
    fn stated_epsilon(err: &str) -> privq_core::Epsilon {
        crate::ledger_tests::stated(err, "each with ε = ")
    }

    #[test]
    fn ledger_json_charges_epsilon_once_by_parallel_composition() {
        let dir = crate::ledger_tests::scratch("noise");
        let path = dir.join("ledger.json");
        let path_s = path.to_str().unwrap();
        let argv = [
            "noise",
            "--demo",
            "--epsilon",
            "1/2",
            "--range",
            "15,30",
            "--seed",
            "7",
            "--ledger-json",
            path_s,
        ];
        let (out, err) = run_with(&argv, "").unwrap();
        assert_eq!(out.lines().count(), 25);
        let (json, total) = crate::ledger_tests::read(&path);
        assert_eq!(total, stated_epsilon(&err), "{err}");
        assert_eq!(json["charges"].as_array().unwrap().len(), 1, "{json}");
        assert_eq!(json["spent"]["delta"], 0.0, "{json}");
        let label = json["charges"][0]["label"].as_str().unwrap();
        assert!(label.contains("24 value(s), one per individual (parallel composition)"));
        assert!(err.contains("privq: ledger:\n"), "{err}");
        assert!(err.contains("total: ε = 1/2 of 1/2, δ = 0 of 0"), "{err}");
        // The bounded-work sampler is charged its δ ≤ 2^-64 as well.
        let mut bounded = argv.to_vec();
        bounded.push("--bounded-work");
        let (_, err) = run_with(&bounded, "").unwrap();
        let (json, total) = crate::ledger_tests::read(&path);
        assert_eq!(total, stated_epsilon(&err), "{err}");
        assert_eq!(json["spent"]["delta"], 2f64.powi(-64), "{json}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_failed_run_writes_no_ledger() {
        let dir = crate::ledger_tests::scratch("noise-fail");
        let path = dir.join("ledger.json");
        let argv = [
            "noise",
            "--epsilon",
            "1",
            "--sensitivity",
            "1",
            "--seed",
            "1",
            "--ledger-json",
            path.to_str().unwrap(),
        ];
        assert!(run_with(&argv, "1\nabc\n").is_err());
        assert!(!path.exists());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn saturation_at_a_tiny_epsilon_is_warned() {
        let argv = [
            "noise",
            "--epsilon",
            "1/1000000000",
            "--sensitivity",
            "1",
            "--seed",
            "1",
        ];
        let (out, err) = crate::run_with(&argv, "3\n4.25\n").unwrap();
        assert_eq!(out, "2147483647.9990234375\n2147483647.9990234375\n");
        assert!(
            err.contains("warning: 2 of 2 released value(s) saturated at the fixed-point range"),
            "{err}"
        );
        let argv = [
            "noise",
            "--epsilon",
            "1",
            "--sensitivity",
            "1",
            "--seed",
            "1",
        ];
        let (_, err) = crate::run_with(&argv, "3\n4.25\n").unwrap();
        assert!(!err.contains("saturated"), "{err}");
    }

    #[test]
    fn an_asserted_sensitivity_is_rounded_up_to_the_grid() {
        // 3e-10 is 1.29 units of 2^-32: two units, never one (which would
        // understate ε by 29 %); 1e-10 is one unit, never zero.
        for (text, steps) in [("3e-10", 2), ("1e-10", 1), ("1e-9", 5)] {
            let argv = [
                "noise",
                "--epsilon",
                "1",
                "--sensitivity",
                text,
                "--seed",
                "1",
            ];
            let (_, err) = run_with(&argv, "0.1\n").unwrap();
            assert!(
                err.contains(&format!("sensitivity {steps} steps")),
                "{text}: {err}"
            );
        }
    }
}

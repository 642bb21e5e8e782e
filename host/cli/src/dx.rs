//! `privq dx`: d_X-private answers to linear queries over a universe of points,
//! with every query's noise scale next to the ε-DP baseline's.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use super::results::{Cell, Format, FormatArg, write_rows};
use super::{CliError, LedgerArgs};
use privq_host::dx::release::{DxRequest, Strategy};
use privq_host::dx::{DxLaplace, FiniteMetric, Queries};

/// Options of `privq dx`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
    # each pair of cities protected at 0.01 x its distance in degrees; the eps-DP charge\n  \
    # (0.01 x the largest distance, about 0.9 on the 741 largest US cities) capped at 1:\n  \
    privq dx --universe us_cities.csv --coords lon,lat --counts population \\\n    \
    --epsilon 1/100 --budget 1 --query-column elevation_m --top 741\n  \
    privq dx --universe pts.csv --coords x,y --metric blowfish --epsilon 1 --threshold 4 \\\n    \
    --counts n --queries q.csv --strategy psa")]
pub struct Args {
    /// CSV universe, one element per row (with a header); `-`: standard input.
    #[arg(long, value_name = "FILE")]
    pub universe: PathBuf,
    /// Comma-separated numeric coordinate columns the metric is computed on.
    #[arg(long, value_delimiter = ',', required = true)]
    pub coords: Vec<String>,
    /// The metric: euclidean (ε·‖·‖₂), linf (ε·‖·‖∞), blowfish or smooth (threshold T).
    #[arg(long, default_value = "euclidean")]
    pub metric: String,
    /// The metric's ε (a scale factor for euclidean/linf, the per-pair budget
    /// for blowfish/smooth): an exact decimal or fraction, required.
    #[arg(long, value_name = "EPS", allow_hyphen_values = true)]
    pub epsilon: String,
    /// The Blowfish/smooth threshold T.
    #[arg(long)]
    pub threshold: Option<f64>,
    /// Column holding the histogram counts (records per element).
    #[arg(long, value_name = "COLUMN")]
    pub counts: String,
    /// Columns whose values are query coefficients (one query each).
    #[arg(long = "query-column", value_name = "COLUMN")]
    pub query_columns: Vec<String>,
    /// CSV of queries, one row of N coefficients per query (no header); `-`: standard input.
    #[arg(long, value_name = "FILE")]
    pub queries: Option<PathBuf>,
    /// Keep only the first N rows of the universe.
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// Parameter selection for several queries: psa (Strategy 3), s1, s2, or optimum
    /// (the exact relaxed optimum).
    #[arg(long, default_value = "psa")]
    pub strategy: String,
    /// Refuse the release unless its implied ε-DP cost (the largest per-pair budget
    /// of the metric) fits in this budget. Default: no cap; the cost is charged and
    /// printed either way.
    #[arg(long, value_name = "EPSILON")]
    pub budget: Option<String>,
    /// Seed for a reproducible run. Anyone who knows the seed can remove the noise:
    /// tests and demos only.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where to write the ledger as JSON.
    #[command(flatten)]
    pub ledger: LedgerArgs,
    /// CSV or JSON answers.
    #[command(flatten)]
    pub format: FormatArg,
}

/// Runs `privq dx`: prints `query,answer,noise_scale,baseline_scale,improvement`.
pub fn run(
    args: &Args,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    // Checked before any input is read.
    super::parse_epsilon(&args.epsilon)?;
    if args.universe.as_os_str() == "-"
        && args.queries.as_ref().is_some_and(|q| q.as_os_str() == "-")
    {
        return Err(CliError::Usage {
            option: "queries",
            message: "the universe is already read from standard input; give a file".into(),
        });
    }
    let strategy = strategy(&args.strategy)?;
    let budget = match &args.budget {
        Some(text) => Some(text.parse().map_err(|source| CliError::Parameter {
            option: "budget",
            source,
        })?),
        None => None,
    };
    let universe = read_universe(args, stdin)?;
    let mut rows = universe.query_columns;
    if let Some(path) = &args.queries {
        rows.extend(read_query_rows(path, stdin)?);
    }
    if rows.is_empty() {
        return Err(CliError::EmptyInput);
    }
    let metric = metric(args, &universe.points)?;
    let q = Queries::new(rows)?;
    let plan = DxRequest::new(strategy)
        .budget(budget)
        .prepare(&metric, q)?;
    if let Some(implied) = plan.implied_epsilon_warning() {
        writeln!(
            stderr,
            "privq: warning: no --budget; the implied ε-DP cost is {} (the largest pair \
             budget), at which the ε-DP reading says little: the guarantee that matters \
             here is d_X-privacy, pair by pair. Pass --budget to cap the charge.",
            super::num(implied)
        )?;
    }
    args.ledger.reserve(plan.accountant(), "privq dx", stderr)?;
    let mut rng = super::rng(args.seed, stderr)?;
    let out = plan.release(&universe.counts, &mut rng)?;
    writeln!(
        stderr,
        "privq: d_X-privacy for neighbours that change one record's element (replace-one: \
         n is treated as public); N = {}, min d = {}, worst grid privacy-loss ratio {}\n\
         privq: ledger (each pair (i, j) is protected at d_X(i, j); the ε-DP charge is the largest):\n{}",
        metric.len(),
        super::num(metric.min_offdiag()),
        super::num(out.mechanism.loss_ratio()),
        args.ledger.text(&out.accountant)
    )?;
    write_answers(
        &out.mechanism,
        &out.answers,
        out.baseline_scale,
        args.format.format,
        stdout,
    )?;
    args.ledger.write(&out.accountant)
}

/// The universe CSV: each element's coordinates and count, and the query columns.
struct Universe {
    points: Vec<Vec<f64>>,
    counts: Vec<u64>,
    query_columns: Vec<Vec<f64>>,
}

/// Reads the first `--top` rows of the universe.
fn read_universe(args: &Args, stdin: &mut dyn BufRead) -> Result<Universe, CliError> {
    let text = super::read_text(&args.universe, stdin)?;
    let mut rdr = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = rdr.headers()?.iter().map(str::to_string).collect();
    let col = |name: &String| {
        header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| CliError::MissingColumn {
                column: name.to_string(),
                available: header.clone(),
            })
    };
    let coord_idx: Vec<usize> = args.coords.iter().map(col).collect::<Result<_, _>>()?;
    let count_idx = col(&args.counts)?;
    let q_idx: Vec<usize> = args
        .query_columns
        .iter()
        .map(col)
        .collect::<Result<_, _>>()?;
    let mut u = Universe {
        points: Vec::new(),
        counts: Vec::new(),
        query_columns: vec![Vec::new(); q_idx.len()],
    };
    for (line, rec) in rdr.records().enumerate() {
        if args.top.is_some_and(|t| u.points.len() >= t) {
            break;
        }
        let rec = rec?;
        let num = |i: usize| number(&rec, i, line + 2, &header[i]);
        u.points.push(
            coord_idx
                .iter()
                .map(|&i| num(i))
                .collect::<Result<_, _>>()?,
        );
        let c = num(count_idx)?;
        if !(c >= 0.0 && c.fract() == 0.0) {
            return Err(CliError::Usage {
                option: "counts",
                message: format!(
                    "line {}: {:?} is not a non-negative whole number of records",
                    line + 2,
                    &rec[count_idx]
                ),
            });
        }
        u.counts.push(c as u64);
        for (v, &i) in u.query_columns.iter_mut().zip(&q_idx) {
            v.push(num(i)?);
        }
    }
    if u.points.is_empty() {
        return Err(CliError::EmptyInput);
    }
    Ok(u)
}

/// Field `i` of `rec` (on 1-based `line`, in `column`) as a finite number.
fn number(rec: &csv::StringRecord, i: usize, line: usize, column: &str) -> Result<f64, CliError> {
    super::finite(&rec[i], || format!("line {line}, column {column}"))
}

/// The `--queries` CSV: one row of coefficients per query, no header.
fn read_query_rows(path: &Path, stdin: &mut dyn BufRead) -> Result<Vec<Vec<f64>>, CliError> {
    let text = super::read_text(path, stdin)?;
    let mut qr = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes());
    let mut rows = Vec::new();
    for (line, rec) in qr.records().enumerate() {
        let rec = rec?;
        let row: Vec<f64> = rec
            .iter()
            .enumerate()
            .map(|(k, v)| {
                super::finite(v, || {
                    format!("{} line {}, field {}", path.display(), line + 1, k + 1)
                })
            })
            .collect::<Result<_, _>>()?;
        rows.push(row);
    }
    Ok(rows)
}

/// The `--metric` over `points`.
fn metric(args: &Args, points: &[Vec<f64>]) -> Result<FiniteMetric, CliError> {
    let epsilon = super::parse_epsilon(&args.epsilon)?.to_f64();
    let threshold = || {
        args.threshold.ok_or_else(|| CliError::Usage {
            option: "threshold",
            message: format!("--metric {} needs a threshold T", args.metric),
        })
    };
    let metric = match args.metric.as_str() {
        "euclidean" => FiniteMetric::euclidean(points, epsilon),
        "linf" => FiniteMetric::linf(points, epsilon),
        "blowfish" => FiniteMetric::blowfish(points, epsilon, threshold()?),
        "smooth" => FiniteMetric::smooth(points, epsilon, threshold()?),
        other => {
            return Err(CliError::Usage {
                option: "metric",
                message: format!(
                    "unknown metric {other:?}; expected euclidean, linf, blowfish or smooth"
                ),
            });
        }
    };
    Ok(metric?)
}

/// `--strategy`.
fn strategy(text: &str) -> Result<Strategy, CliError> {
    match text {
        "psa" => Ok(Strategy::Psa),
        "s1" => Ok(Strategy::S1),
        "s2" => Ok(Strategy::S2),
        "optimum" => Ok(Strategy::Optimum),
        _ => Err(CliError::Parameter {
            option: "strategy",
            source: privq_core::Error::OutOfRange,
        }),
    }
}

/// The answers' CSV, with each query's scale beside the ε-DP baseline's.
fn write_answers(
    mech: &DxLaplace,
    answers: &[f64],
    base: f64,
    format: Format,
    stdout: &mut dyn Write,
) -> Result<(), CliError> {
    let rows: Vec<[Cell; 5]> = answers
        .iter()
        .enumerate()
        .map(|(k, &a)| {
            let s = mech.scale(k);
            let improvement = if s > 0.0 { base / s } else { f64::INFINITY };
            [
                Cell::Int(k as u64),
                Cell::Num(a),
                Cell::Num(s),
                Cell::Num(base),
                Cell::Num(improvement),
            ]
        })
        .collect();
    let columns = [
        "query",
        "answer",
        "noise_scale",
        "baseline_scale",
        "improvement",
    ];
    write_rows(format, &columns, rows.iter().map(|r| &r[..]), stdout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn run_cli(argv: &[&str]) -> Result<(String, String), CliError> {
        let cli = super::super::Cli::try_parse_from(argv)
            .map_err(|e| CliError::Run(e.to_string().into()))?;
        let (mut out, mut err) = (Vec::new(), Vec::new());
        super::super::run(cli, &mut std::io::empty(), &mut out, &mut err)?;
        Ok((
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        ))
    }

    /// A three-point universe (x = 0, 1, 3) in a fresh directory.
    fn universe(name: &str) -> (PathBuf, PathBuf) {
        let dir = crate::ledger_tests::scratch(name);
        let u = dir.join("u.csv");
        std::fs::write(&u, "x,n,h\n0,10,0\n1,5,1\n3,7,3\n").unwrap();
        (dir, u)
    }

    /// `privq dx` on universe `u` with coordinate x and counts n, plus `extra`.
    fn dx_argv<'a>(u: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        let mut argv = vec![
            "privq",
            "dx",
            "--universe",
            u,
            "--coords",
            "x",
            "--counts",
            "n",
            "--epsilon",
            "1",
        ];
        argv.extend(extra);
        argv
    }

    #[test]
    fn a_large_implied_epsilon_without_a_budget_is_warned() {
        let (dir, u) = universe("dx-warn");
        let u = u.to_str().unwrap();
        // ε = 5 per unit of distance: the largest pair (0, 3) implies 15.
        let mut argv = dx_argv(u, &["--query-column", "h", "--seed", "1"]);
        let eps = argv.iter().position(|a| *a == "--epsilon").unwrap() + 1;
        argv[eps] = "5";
        let (_, err) = run_cli(&argv).unwrap();
        assert!(err.contains("warning: no --budget"), "{err}");
        argv.extend(["--budget", "15"]);
        let (_, err) = run_cli(&argv).unwrap();
        assert!(!err.contains("warning: no --budget"), "{err}");
        // The default example's small metric stays quiet.
        let (_, err) = run_cli(&dx_argv(u, &["--query-column", "h", "--seed", "1"])).unwrap();
        assert!(!err.contains("warning: no --budget"), "{err}");
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn json_answers_match_the_csv_ones() {
        let (dir, u) = universe("dx-json");
        let base = dx_argv(u.to_str().unwrap(), &["--query-column", "h", "--seed", "1"]);
        let (csv, _) = run_cli(&base).unwrap();
        let mut argv = base.clone();
        argv.extend(["--format", "json"]);
        let (json, _) = run_cli(&argv).unwrap();
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
        assert_eq!(json[0]["query"], 0);
        assert_eq!(json[0]["answer"].as_f64().unwrap().to_string(), row[1]);
        assert_eq!(json[0]["baseline_scale"], 3.0);
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn releases_with_scales_and_charges_the_implied_epsilon() {
        let (dir, u) = universe("dx-scales");
        let base = dx_argv(u.to_str().unwrap(), &["--query-column", "h", "--seed", "1"]);
        let (out, err) = run_cli(&base).unwrap();
        let line: Vec<&str> = out.lines().nth(1).unwrap().split(',').collect();
        let scale: f64 = line[2].parse().unwrap();
        assert!((1.0..1.01).contains(&scale), "{out}");
        assert_eq!(line[3], "3"); // Δ = 3, min d = 1
        assert!(err.contains("use it only for tests and demos"), "{err}");
        // The release is charged (its implied ε-DP cost: the largest pair budget,
        // d(0, 3) = 3) and the ledger printed; no exact n in the summary.
        assert!(err.contains("d_X Laplace release: ε = 3"), "{err}");
        assert!(
            err.contains("n is treated as public") && !err.contains("n = 22"),
            "{err}"
        );
        // A budget below the implied cost refuses before anything is released.
        let refused = run_cli(&[&base[..], &["--budget", "2"]].concat());
        assert!(matches!(refused, Err(CliError::Run(_))), "{refused:?}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn reads_queries_from_a_file_and_rejects_bad_input() {
        let (dir, u) = universe("dx-bad");
        let us = u.to_str().unwrap();
        let q = dir.join("q.csv");
        std::fs::write(&q, "1,0,0\n0,0,1\n").unwrap();
        let qs = q.to_str().unwrap();
        let (out, _) = run_cli(&dx_argv(us, &["--queries", qs, "--seed", "2"])).unwrap();
        assert_eq!(out.lines().count(), 3);
        // A duplicated point (d = 0) and an unknown column are typed errors.
        std::fs::write(&u, "x,n\n0,1\n0,2\n").unwrap();
        assert!(matches!(
            run_cli(&dx_argv(us, &["--queries", qs])),
            Err(CliError::Run(_))
        ));
        let mut unknown = dx_argv(us, &[]);
        unknown[5] = "y";
        assert!(matches!(
            run_cli(&unknown),
            Err(CliError::MissingColumn { .. })
        ));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn ledger_json_totals_the_charged_epsilon_and_a_refused_release_writes_none() {
        let (dir, u) = universe("dx-ledger");
        let ledger = dir.join("ledger.json");
        let ledger_s = ledger.to_str().unwrap();
        let argv = dx_argv(
            u.to_str().unwrap(),
            &[
                "--query-column",
                "h",
                "--seed",
                "1",
                "--ledger-json",
                ledger_s,
            ],
        );
        // Refused by a too-small budget: no ledger.
        assert!(run_cli(&[&argv[..], &["--budget", "2"]].concat()).is_err());
        assert!(!ledger.exists());
        let (_, err) = run_cli(&argv).unwrap();
        let (json, total) = crate::ledger_tests::read(&ledger);
        assert_eq!(
            total,
            crate::ledger_tests::stated(&err, "d_X Laplace release: ε = ")
        );
        assert_eq!(total, crate::ledger_tests::stated(&err, "total: ε = "));
        assert_eq!(json["charges"].as_array().unwrap().len(), 1, "{json}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn epsilon_is_exact_and_required_and_bad_options_are_named() {
        let (dir, u) = universe("dx-epsilon");
        let us = u.to_str().unwrap();
        let no_eps = [
            "privq",
            "dx",
            "--universe",
            us,
            "--coords",
            "x",
            "--counts",
            "n",
        ];
        let e = run_cli(&no_eps).unwrap_err().to_string();
        assert!(e.contains("--epsilon"), "{e}");
        // A fraction is exact: ε = 1/2 on a Euclidean metric with max distance 3 costs 3/2.
        let mut half = dx_argv(us, &["--query-column", "h", "--seed", "1"]);
        half[9] = "1/2";
        let (_, err) = run_cli(&half).unwrap();
        assert!(err.contains("d_X Laplace release: ε = 3/2"), "{err}");
        for (bad, option) in [
            (vec!["--query-column", "h", "--metric", "bogus"], "metric"),
            (
                vec!["--query-column", "h", "--metric", "blowfish"],
                "threshold",
            ),
        ] {
            let e = run_cli(&dx_argv(us, &bad)).unwrap_err();
            assert!(
                matches!(&e, CliError::Usage { option: o, .. } if *o == option),
                "{e:?}"
            );
        }
        let mut zero = dx_argv(us, &[]);
        zero[9] = "0";
        assert!(matches!(
            run_cli(&zero).unwrap_err(),
            CliError::Parameter {
                option: "epsilon",
                ..
            }
        ));
        std::fs::remove_dir_all(&dir).ok();
    }
}

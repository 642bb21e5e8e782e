//! `privq distance`: Huang–Roth private ℓ1 distance queries for users.
//!
//! * `release`: points CSV (numeric columns with a header) → synopsis JSON, printing
//!   the budget spent;
//! * `query`: synopsis + query points CSV → answers (average ℓ1 distance);
//! * `interactive`: points CSV, then one query per line on standard input.

use rand_chacha::ChaCha12Rng;
use std::io::{BufRead, Write};
use std::path::PathBuf;

use super::results::{Cell, FormatArg, write_rows};
use super::{CliError, InContext, LedgerArgs, Output, read_text};
use privq_host::distance::interactive::Session;
use privq_host::distance::offline::Synopsis;
use privq_host::distance::privacy::Privacy;
use privq_host::distance::release::{DistanceRequest, OpenSession, SynopsisRelease};
use privq_host::distance::{BoxDomain, DistanceError};

/// Options of `privq distance`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
    privq distance release --input points.csv --lo 0,0 --hi 1,1 --epsilon 1 --out syn.json\n  \
    privq distance query --synopsis syn.json --input queries.csv")]
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
#[command(after_help = "Examples:\n  \
    privq distance release --input points.csv --lo 0,0 --hi 1,1 --epsilon 1 --out syn.json\n  \
    printf '0.5,0.5\\n' | privq distance interactive --input points.csv --lo 0,0 --hi 1,1 --epsilon 1\n\n\
    An explicit --alpha sets the grid (release: about 2·dim/alpha points per coordinate) and\n\
    the update rounds; a value whose work exceeds --memory-mib is refused.")]
pub struct ReleaseArgs {
    /// Points CSV with a header; every column is a coordinate (`-`: standard
    /// input, `release` only).
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
    /// Synopsis output path (`release` only), written atomically; `-` is standard
    /// output. The summary goes to standard error.
    #[arg(long, value_name = "PATH", default_value = "synopsis.json")]
    pub out: PathBuf,
    /// Memory cap in MiB for the work an explicit --alpha implies (grid points, rounds).
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    pub memory_mib: u64,
    /// Seed for a reproducible run (never on real data).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where to write the ledger as JSON.
    #[command(flatten)]
    pub ledger: LedgerArgs,
}

/// Options of `query`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Example:\n  \
    privq distance query --synopsis syn.json --input queries.csv > answers.csv\n\n\
    Every query point is checked before any answer is written: a bad one fails the\n\
    command with its line and writes nothing.")]
pub struct QueryArgs {
    /// A synopsis written by `privq distance release` (`-`: standard input).
    #[arg(long, value_name = "PATH")]
    pub synopsis: PathBuf,
    /// Query points CSV with a header (`-`: standard input).
    #[arg(long, value_name = "PATH")]
    pub input: PathBuf,
    /// CSV or JSON answers.
    #[command(flatten)]
    pub format: FormatArg,
}

/// A distance error reaches the user through [`CliError::Run`], except the
/// library's refusal of too much work, which becomes an `--alpha` usage error in
/// the options' words.
impl From<DistanceError> for CliError {
    fn from(e: DistanceError) -> Self {
        match e {
            // The library's typed refusal, in the options' words.
            DistanceError::WorkTooLarge {
                alpha,
                units,
                what,
                bytes,
                cap_mib,
            } => CliError::Usage {
                option: "alpha",
                message: format!(
                    "{alpha} implies {units} {what} (about {} MiB), over --memory-mib {cap_mib}; \
                     use a larger --alpha, omit it to calibrate from n, or raise --memory-mib",
                    bytes >> 20
                ),
            },
            // This is the `From` impl itself (it remaps one variant), so no `?` here.
            e => CliError::Run(Box::new(e)),
        }
    }
}

/// The request the options state (ε and δ parsed, the domain checked).
fn request(a: &ReleaseArgs) -> Result<DistanceRequest, CliError> {
    let domain = BoxDomain::new(a.lo.clone(), a.hi.clone())?;
    let privacy = Privacy::parse(&a.epsilon, a.delta)?;
    Ok(DistanceRequest::new(domain, privacy)
        .alpha(a.alpha)
        .memory_mib(a.memory_mib))
}

fn read_points(path: &std::path::Path, stdin: &mut dyn BufRead) -> Result<Vec<Vec<f64>>, CliError> {
    let text = read_text(path, stdin)?;
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header = reader.headers()?.clone();
    let file = match path.to_str() {
        Some("-") => "standard input".to_string(),
        _ => path.display().to_string(),
    };
    let mut points = Vec::new();
    for (i, rec) in reader.records().enumerate() {
        let rec = rec?;
        let p: Vec<f64> = rec
            .iter()
            .enumerate()
            .map(|(k, f)| {
                super::finite(f, || {
                    let column = header.get(k).unwrap_or("?");
                    format!("{file} line {}, column {column}", i + 2)
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

/// Runs `privq distance`.
pub fn run(
    args: &Args,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    match &args.action {
        Action::Release(a) => release(a, stdin, stdout, stderr),
        Action::Query(a) => query(a, stdin, stdout),
        Action::Interactive(a) => interactive(a, stdin, stdout, stderr),
    }
}

/// `release`: writes the synopsis, prints what it spent and the ledger.
fn release(
    a: &ReleaseArgs,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    super::refuse_overwriting_input(&a.input, Some(&a.out), "out")?;
    let request = request(a)?;
    let plan = request.plan_synopsis(&read_points(&a.input, stdin)?)?;
    // Before any privacy is spent: the synopsis file can be created.
    let mut output = Output::open(Some(&a.out))?;
    let budget = request.accountant()?;
    a.ledger
        .reserve(&budget, "privq distance release", stderr)?;
    let mut rng = super::rng(a.seed, stderr)?;
    let SynopsisRelease {
        synopsis: s,
        accountant,
        privacy,
    } = plan.release(&mut rng)?;
    let json = s.to_json()?;
    writeln!(output.writer(stdout), "{json}")?;
    let target = output.describe();
    output.commit(stdout)?;
    // The summary goes to standard error, like every command's: stdout carries results.
    writeln!(
        stderr,
        "privq: released synopsis of n = {} points to {}: alpha = {}; spent epsilon = {} (ledger {} in {} charges), delta = {}",
        s.n(),
        target,
        super::short(s.alpha()),
        super::num(s.spent().epsilon),
        s.spent().ledger_epsilon,
        s.spent().charges,
        super::num(s.spent().delta)
    )?;
    writeln!(
        stderr,
        "privq: privacy: {privacy}\nprivq: ledger:\n{}",
        a.ledger.text(&accountant)
    )?;
    warn_about_accuracy(&s, stderr)?;
    a.ledger.write(&accountant)
}

/// Warns when the synopsis guarantees no accuracy, or not everywhere.
fn warn_about_accuracy(s: &Synopsis, stderr: &mut dyn Write) -> Result<(), CliError> {
    if s.alpha() >= 1.0 {
        writeln!(
            stderr,
            "privq: warning: n = {} is too small for any accuracy guarantee at this ε (alpha = 1); \
             answers are not informative — use more data, a larger ε, or --delta",
            s.n()
        )?;
    }
    if s.complete().iter().any(|c| !c) {
        writeln!(
            stderr,
            "privq: warning: the update budget ran out on some coordinates; accuracy is not guaranteed there"
        )?;
    }
    Ok(())
}

/// `query`: answers query points from a synopsis (no data, no budget). Every
/// point is answered before anything is written, so a bad one writes nothing.
fn query(a: &QueryArgs, stdin: &mut dyn BufRead, stdout: &mut dyn Write) -> Result<(), CliError> {
    if a.synopsis.as_os_str() == "-" && a.input.as_os_str() == "-" {
        return Err(CliError::Usage {
            option: "input",
            message: "the synopsis is already read from standard input; give a file".into(),
        });
    }
    let s = Synopsis::from_json(&read_text(&a.synopsis, stdin)?)?;
    let answers = read_points(&a.input, stdin)?
        .iter()
        .enumerate()
        .map(|(i, p)| {
            s.answer(p).map_err(|source| {
                // Not `?`: a bad point is the file's fault, so the message names its line.
                CliError::from(InContext {
                    before: format!("{} line {}: ", a.input.display(), i + 2),
                    source,
                    after: "",
                })
            })
        })
        .collect::<Result<Vec<f64>, CliError>>()?;
    let rows: Vec<[Cell; 2]> = answers
        .iter()
        .map(|&v| [Cell::Num(v), Cell::Num(v * s.domain().diameter())])
        .collect();
    let columns = ["scaled_answer", "average_l1_distance"];
    write_rows(
        a.format.format,
        &columns,
        rows.iter().map(|r| &r[..]),
        stdout,
    )
}

/// `interactive`: charges the session up front, then answers one query per line.
fn interactive(
    a: &ReleaseArgs,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    let request = request(a)?;
    if a.input.as_os_str() == "-" {
        return Err(CliError::Usage {
            option: "input",
            message: "standard input carries the queries; give the points as a file".into(),
        });
    }
    let plan = request.plan_session(&read_points(&a.input, stdin)?)?;
    let budget = request.accountant()?;
    a.ledger
        .reserve(&budget, "privq distance interactive", stderr)?;
    let mut r = super::rng(a.seed, stderr)?;
    let OpenSession {
        session: mut s,
        accountant,
        privacy,
    } = plan.open(&mut r)?;
    writeln!(
        stderr,
        "privq: session: alpha = {}, {} update rounds\nprivq: privacy: {privacy}\nprivq: ledger:\n{}",
        super::short(s.params().alpha),
        s.params().rounds,
        a.ledger.text(&accountant)
    )?;
    answer_lines(&mut s, &mut r, stdin, stdout, stderr)?;
    let g = s.spent()?;
    writeln!(
        stderr,
        "privq: spent epsilon = {}, delta = {}",
        g.epsilon, g.delta
    )?;
    a.ledger.write(&accountant)
}

/// Answers each line of `stdin` that is a point of the domain, until the session
/// stops; other lines are skipped with a message.
fn answer_lines(
    s: &mut Session<'_>,
    r: &mut ChaCha12Rng,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    for (i, line) in stdin.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let q: Result<Vec<f64>, _> = line.split(',').map(|f| f.trim().parse::<f64>()).collect();
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
        match s.answer(&y, r) {
            Ok(v) => writeln!(stdout, "{}", super::num(v))?,
            Err(e) => {
                writeln!(stderr, "privq: {e}")?;
                break;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_with;
    use privq_host::distance::Columns;

    /// A fresh directory for one test's files.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("privq-cli-distance-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// `n` points on `[0,1] × [0,2]` (deterministic, skewed in x).
    fn points_csv(n: usize) -> String {
        let mut s = String::from("x,y\n");
        for i in 0..n {
            let u = (i * 7919 % n) as f64 / n as f64;
            s.push_str(&format!(
                "{},{}\n",
                u * u,
                2.0 * ((i * 31 % 97) as f64 / 96.0)
            ));
        }
        s
    }

    fn distance_error(e: CliError) -> DistanceError {
        match e {
            CliError::Run(b) => *b
                .downcast::<DistanceError>()
                .unwrap_or_else(|b| panic!("not a distance error: {b}")),
            other => panic!("expected a run error, got {other:?}"),
        }
    }

    #[test]
    fn release_writes_a_synopsis_that_query_answers_from() {
        let dir = scratch("roundtrip");
        let (data, syn, qs) = (
            dir.join("points.csv"),
            dir.join("syn.json"),
            dir.join("queries.csv"),
        );
        let text = points_csv(20_000);
        std::fs::write(&data, &text).unwrap();
        std::fs::write(&qs, "x,y\n0.5,1\n0,0\n1,2\n0.25,0.5\n").unwrap();
        let (data_s, syn_s, qs_s) = (
            data.to_str().unwrap(),
            syn.to_str().unwrap(),
            qs.to_str().unwrap(),
        );
        let release = [
            "distance",
            "release",
            "--input",
            data_s,
            "--lo",
            "0,0",
            "--hi",
            "1,2",
            "--epsilon",
            "1/2",
            "--alpha",
            "0.1",
            "--seed",
            "7",
            "--out",
            syn_s,
        ];
        let (stdout, out) = run_with(&release, "").unwrap();
        assert!(stdout.is_empty(), "{stdout}");
        assert!(out.contains("n = 20000"), "{out}");
        assert!(out.contains("alpha = 0.1000"), "{out}");
        let s = Synopsis::load(&syn).unwrap();
        // Pure ε: the exact ledger never exceeds the ε asked for.
        let ledger: privq_core::Epsilon = s.spent().ledger_epsilon.parse().unwrap();
        assert!(ledger <= privq_core::Epsilon::new(1, 2).unwrap(), "{out}");
        assert!(out.contains(&format!("ledger {ledger}")), "{out}");
        let first = std::fs::read_to_string(&syn).unwrap();
        // Same seed, same synopsis.
        run_with(&release, "").unwrap();
        assert_eq!(std::fs::read_to_string(&syn).unwrap(), first);

        let (answers, _) = run_with(
            &["distance", "query", "--synopsis", syn_s, "--input", qs_s],
            "",
        )
        .unwrap();
        let mut lines = answers.lines();
        assert_eq!(lines.next(), Some("scaled_answer,average_l1_distance"));
        let pts: Vec<Vec<f64>> = text
            .lines()
            .skip(1)
            .map(|l| l.split(',').map(|f| f.parse().unwrap()).collect())
            .collect();
        let cols = Columns::new(s.domain(), &pts).unwrap();
        let queries = [[0.5, 1.0], [0.0, 0.0], [1.0, 2.0], [0.25, 0.5]];
        for (line, q) in lines.zip(queries) {
            let (scaled, raw) = line.split_once(',').unwrap();
            let (scaled, raw): (f64, f64) = (scaled.parse().unwrap(), raw.parse().unwrap());
            assert_eq!(scaled, s.answer(&q).unwrap());
            assert!((raw - 3.0 * scaled).abs() < 1e-12, "diameter 3: {line}");
            let truth = cols.answer(&q).unwrap();
            assert!(
                (scaled - truth).abs() <= s.alpha(),
                "{q:?}: {scaled} vs {truth}, alpha {}",
                s.alpha()
            );
        }
        assert_eq!(answers.lines().count(), 5);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn interactive_answers_stdin_lines_and_skips_bad_ones() {
        let dir = scratch("interactive");
        let data = dir.join("points.csv");
        std::fs::write(&data, points_csv(20_000)).unwrap();
        let argv = [
            "distance",
            "interactive",
            "--input",
            data.to_str().unwrap(),
            "--lo",
            "0,0",
            "--hi",
            "1,2",
            "--epsilon",
            "1",
            "--delta",
            "1e-6",
            "--seed",
            "3",
        ];
        let stdin = "0.5,1\n\n0.1, 0.2\nabc\n2,0\n0.5\n0.9,1.9\n";
        let (out, err) = run_with(&argv, stdin).unwrap();
        let answers: Vec<f64> = out.lines().map(|l| l.parse().unwrap()).collect();
        assert_eq!(answers.len(), 3, "{out}");
        assert!(answers.iter().all(|a| (0.0..=1.0).contains(a)));
        assert!(err.contains("update rounds"), "{err}");
        for bad in ["line 4", "line 5", "line 6"] {
            assert!(err.contains(bad), "{bad} not reported: {err}");
        }
        assert!(err.contains("spent epsilon"), "{err}");
        // Reproducible with the same seed.
        assert_eq!(run_with(&argv, stdin).unwrap().0, out);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        let dir = scratch("bad");
        let good = dir.join("points.csv");
        std::fs::write(&good, points_csv(100)).unwrap();
        let good_s = good.to_str().unwrap().to_string();
        let release = |input: &str, lo: &str, hi: &str, eps: &str, extra: &[&str]| {
            let out = dir.join("out.json");
            let mut v = vec![
                "distance".to_string(),
                "release".into(),
                "--input".into(),
                input.into(),
                "--lo".into(),
                lo.into(),
                "--hi".into(),
                hi.into(),
                "--epsilon".into(),
                eps.into(),
                "--seed".into(),
                "1".into(),
                "--out".into(),
                out.to_str().unwrap().into(),
            ];
            v.extend(extra.iter().map(|s| s.to_string()));
            let argv: Vec<&str> = v.iter().map(String::as_str).collect();
            run_with(&argv, "")
        };
        for eps in ["0", "-1", "nan"] {
            assert!(
                matches!(
                    distance_error(release(&good_s, "0,0", "1,2", eps, &[]).unwrap_err()),
                    DistanceError::Epsilon { .. }
                ),
                "epsilon {eps}"
            );
        }
        assert!(matches!(
            distance_error(release(&good_s, "0,0", "1,2", "1", &["--delta", "1.5"]).unwrap_err()),
            DistanceError::InvalidParameter(_)
        ));
        // A domain whose corners disagree, or an empty box.
        assert!(release(&good_s, "0", "1,2", "1", &[]).is_err());
        assert!(release(&good_s, "0,0", "0,2", "1", &[]).is_err());
        // Points outside the declared domain are clamped into it, not refused.
        assert!(release(&good_s, "0,0", "1,1", "1", &[]).is_ok());
        // Empty data, a non-numeric field, a point of the wrong dimension.
        let empty = dir.join("empty.csv");
        std::fs::write(&empty, "x,y\n").unwrap();
        assert!(matches!(
            release(empty.to_str().unwrap(), "0,0", "1,2", "1", &[]),
            Err(CliError::EmptyInput)
        ));
        let word = dir.join("word.csv");
        std::fs::write(&word, "x,y\n0.5,1\n0.5,abc\n").unwrap();
        match release(word.to_str().unwrap(), "0,0", "1,2", "1", &[]) {
            Err(e @ CliError::NotANumber { .. }) => assert!(
                e.to_string()
                    .ends_with("word.csv line 3, column y: \"abc\" is not a number"),
                "{e}"
            ),
            other => panic!("{other:?}"),
        }
        let three = dir.join("three.csv");
        std::fs::write(&three, "x,y,z\n0.5,1,0\n").unwrap();
        assert!(matches!(
            distance_error(release(three.to_str().unwrap(), "0,0", "1,2", "1", &[]).unwrap_err()),
            DistanceError::DimensionMismatch { .. }
        ));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn bad_synopses_and_queries_are_typed_errors() {
        let dir = scratch("bad-query");
        let good = dir.join("points.csv");
        std::fs::write(&good, points_csv(100)).unwrap();
        // Query: a missing or corrupt synopsis, and a query outside its domain.
        let missing = dir.join("missing.json");
        let query = |syn: &PathBuf, input: &PathBuf| {
            run_with(
                &[
                    "distance",
                    "query",
                    "--synopsis",
                    syn.to_str().unwrap(),
                    "--input",
                    input.to_str().unwrap(),
                ],
                "",
            )
        };
        let e = query(&missing, &good).unwrap_err();
        assert!(
            matches!(&e, CliError::File { path, .. } if path == &missing),
            "{e:?}"
        );
        std::fs::write(&missing, "{\"version\": 99}").unwrap();
        assert!(matches!(
            distance_error(query(&missing, &good).unwrap_err()),
            DistanceError::Synopsis(_)
        ));
        let out = dir.join("out.json");
        run_with(
            &[
                "distance",
                "release",
                "--input",
                good.to_str().unwrap(),
                "--lo",
                "0,0",
                "--hi",
                "1,2",
                "--epsilon",
                "1",
                "--seed",
                "1",
                "--out",
                out.to_str().unwrap(),
            ],
            "",
        )
        .unwrap();
        let outside = dir.join("outside.csv");
        std::fs::write(&outside, "x,y\n0.5,3\n").unwrap();
        let e = query(&out, &outside).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("outside.csv line 2: ") && text.contains("outside the declared domain"),
            "{text}"
        );
        // The message names the line; the typed error is still its source.
        let typed = std::error::Error::source(&e)
            .and_then(std::error::Error::source)
            .and_then(|s| s.downcast_ref::<DistanceError>());
        assert!(typed.is_some(), "{e:?}");
        std::fs::remove_dir_all(&dir).ok();
    }

    /// `privq distance ACTION` on `input` over `[0,1] × [0,2]` at ε, plus `extra`.
    fn distance_argv<'a>(
        action: &'a str,
        input: &'a str,
        eps: &'a str,
        extra: &[&'a str],
    ) -> Vec<&'a str> {
        let mut argv = vec![
            "distance",
            action,
            "--input",
            input,
            "--lo",
            "0,0",
            "--hi",
            "1,2",
            "--epsilon",
            eps,
            "--seed",
            "3",
        ];
        argv.extend(extra);
        argv
    }

    #[test]
    fn ledger_json_totals_the_epsilon_of_release_and_session() {
        let dir = scratch("ledger");
        let data = dir.join("points.csv");
        std::fs::write(&data, points_csv(2_000)).unwrap();
        let (data_s, syn) = (data.to_str().unwrap(), dir.join("syn.json"));
        let ledger = dir.join("ledger.json");
        let ledger_s = ledger.to_str().unwrap();
        let release = distance_argv(
            "release",
            data_s,
            "1/2",
            &["--out", syn.to_str().unwrap(), "--ledger-json", ledger_s],
        );
        let (_, err) = run_with(&release, "").unwrap();
        let (_, total) = crate::ledger_tests::read(&ledger);
        assert_eq!(
            total,
            crate::ledger_tests::stated(&err, "privq: privacy: ε = ")
        );
        assert_eq!(total, privq_core::Epsilon::new(1, 2).unwrap());
        std::fs::remove_file(&ledger).unwrap();
        let interactive = distance_argv("interactive", data_s, "1", &["--ledger-json", ledger_s]);
        let (out, err) = run_with(&interactive, "0.5,1\n0.1,0.2\n").unwrap();
        assert_eq!(out.lines().count(), 2, "{out}");
        let (_, total) = crate::ledger_tests::read(&ledger);
        assert_eq!(
            total,
            crate::ledger_tests::stated(&err, "privq: privacy: ε = ")
        );
        assert_eq!(total, privq_core::Epsilon::new(1, 1).unwrap());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_failed_release_writes_no_ledger() {
        let dir = scratch("ledger-fail");
        let data = dir.join("points.csv");
        std::fs::write(&data, points_csv(500)).unwrap();
        let ledger = dir.join("ledger.json");
        // Charged and released, then the synopsis cannot be saved.
        let out = dir.join("no-such-dir").join("syn.json");
        let argv = distance_argv(
            "release",
            data.to_str().unwrap(),
            "1",
            &[
                "--out",
                out.to_str().unwrap(),
                "--ledger-json",
                ledger.to_str().unwrap(),
            ],
        );
        assert!(run_with(&argv, "").is_err());
        assert!(!ledger.exists());
        std::fs::remove_dir_all(&dir).ok();
    }
}

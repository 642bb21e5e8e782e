//! The built `privq` binary: nothing is lost with exit 0 and outputs are
//! all-or-nothing (`synth --output`, `distance release --out`, `distance query`,
//! `experiment --out-dir`), `-` for standard input and output, quiet broken pipes,
//! errors that name the file or the option.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("privq-cli-out-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn path(&self, f: &str) -> PathBuf {
        self.0.join(f)
    }

    fn write(&self, f: &str, text: &str) -> PathBuf {
        let p = self.path(f);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// The directory's file names, sorted.
    fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn privq(cwd: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_privq"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A command may not read its standard input; a closed pipe is not an error here.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const TABLE: &str = "a,b,c,count\n0,0,0,40\n0,1,1,25\n1,0,1,20\n1,1,0,15\n";

fn points(n: usize) -> String {
    let mut s = String::from("x,y\n");
    for i in 0..n {
        s.push_str(&format!(
            "{},{}\n",
            (i * 7919 % n) as f64 / n as f64,
            (i * 31 % 97) as f64 / 96.0
        ));
    }
    s
}

#[test]
fn synth_output_is_opened_first_and_written_whole() {
    let d = Dir::new("synth");
    d.write("t.csv", TABLE);
    let base = [
        "synth",
        "--mechanism",
        "mwem",
        "--input",
        "t.csv",
        "--domain",
        "binary",
        "--count-column",
        "count",
        "--epsilon",
        "1",
        "--seed",
        "3",
        "--rounds",
        "2",
        "--records",
        "20",
        "--workload",
        "parity:2",
    ];
    // An output that cannot be created: refused before MWEM runs (no privacy
    // spent, no ledger), naming the path.
    let mut argv = base.to_vec();
    argv.extend(["--output", "no-such-dir/out.csv", "--ledger-json", "l.json"]);
    let o = privq(&d.0, &argv, b"");
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("no-such-dir/out.csv: "), "{err}");
    assert!(
        !err.contains("i/o error") && !err.contains("MWEM over"),
        "{err}"
    );
    assert!(!d.path("l.json").exists());
    // A run that fails after the output was opened leaves the old file and no temporary.
    d.write("out.csv", "old\n");
    let mut argv = base.to_vec();
    *argv.last_mut().unwrap() = "parity:9";
    argv.extend(["--output", "out.csv"]);
    let o = privq(&d.0, &argv, b"");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("degree 9"), "{}", text(&o.stderr));
    assert_eq!(std::fs::read_to_string(d.path("out.csv")).unwrap(), "old\n");
    assert_eq!(d.names(), ["out.csv", "t.csv"]);
    // Success replaces it whole.
    let mut argv = base.to_vec();
    argv.extend(["--output", "out.csv"]);
    let o = privq(&d.0, &argv, b"");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty());
    let written = std::fs::read_to_string(d.path("out.csv")).unwrap();
    assert_eq!(written.lines().count(), 21);
    assert_eq!(d.names(), ["out.csv", "t.csv"]);
}

#[test]
fn synth_reads_and_writes_dash_as_the_standard_streams() {
    let d = Dir::new("synth-dash");
    let argv = [
        "synth",
        "--mechanism",
        "mwem",
        "--input",
        "-",
        "--domain",
        "binary",
        "--count-column",
        "count",
        "--epsilon",
        "1",
        "--seed",
        "3",
        "--rounds",
        "2",
        "--records",
        "5",
        "--workload",
        "parity:2",
        "--output",
        "-",
    ];
    let o = privq(&d.0, &argv, TABLE.as_bytes());
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.starts_with("a,b,c\n") && out.lines().count() == 6,
        "{out}"
    );
    assert!(d.names().is_empty(), "no file named '-': {:?}", d.names());
}

#[test]
fn synth_on_non_binary_data_suggests_marginals() {
    let d = Dir::new("synth-nonbinary");
    d.write("p.csv", "city,smoker\nOslo,1\nRome,0\nLima,1\n");
    d.write(
        "dom.json",
        r#"{"attributes": [{"name": "city", "values": ["Lima", "Oslo", "Rome"]}, {"name": "smoker", "values": ["0", "1"]}]}"#,
    );
    let argv = [
        "synth",
        "--mechanism",
        "mwem",
        "--input",
        "p.csv",
        "--domain",
        "dom.json",
        "--epsilon",
        "1",
    ];
    let o = privq(&d.0, &argv, b"");
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("--workload: parity:3 needs a binary")
            && err.contains("--workload marginals:2"),
        "{err}"
    );
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let d = Dir::new("pipe");
    d.write("t.csv", TABLE);
    let mut child = Command::new(env!("CARGO_BIN_EXE_privq"))
        .args([
            "synth",
            "--mechanism",
            "mwem",
            "--input",
            "t.csv",
            "--domain",
            "binary",
            "--count-column",
            "count",
            "--epsilon",
            "1",
            "--seed",
            "3",
            "--rounds",
            "2",
            "--records",
            "200000",
            "--workload",
            "parity:2",
        ])
        .current_dir(&d.0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `| head -1`: read one line, then close the pipe.
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "a,b,c\n");
    let o = child.wait_with_output().unwrap();
    let err = text(&o.stderr);
    assert!(
        !err.contains("error") && !err.contains("Broken pipe"),
        "{err}"
    );
    assert_eq!(o.status.code(), Some(141), "{err}");
}

fn release_argv<'a>(out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "distance",
        "release",
        "--input",
        "pts.csv",
        "--lo",
        "0,0",
        "--hi",
        "1,1",
        "--epsilon",
        "1",
        "--seed",
        "1",
        "--out",
        out,
    ];
    v.extend(extra);
    v
}

#[test]
fn distance_release_is_atomic_and_bounded() {
    let d = Dir::new("release");
    d.write("pts.csv", &points(2000));
    // --alpha 1e-9: refused at once with a typed error naming --alpha, no file.
    d.write("syn.json", "old");
    let o = privq(&d.0, &release_argv("syn.json", &["--alpha", "1e-9"]), b"");
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("--alpha: ") && err.contains("--memory-mib"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(d.path("syn.json")).unwrap(), "old");
    // An unwritable synopsis path: refused before the release, naming it.
    let o = privq(&d.0, &release_argv("nope/syn.json", &[]), b"");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("nope/syn.json: "),
        "{}",
        text(&o.stderr)
    );
    assert!(!text(&o.stderr).contains("ledger"), "{}", text(&o.stderr));
    // Success replaces the file whole; `--out -` writes the same synopsis to stdout.
    let o = privq(&d.0, &release_argv("syn.json", &[]), b"");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let file = std::fs::read_to_string(d.path("syn.json")).unwrap();
    let o = privq(&d.0, &release_argv("-", &[]), b"");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), file);
    assert!(text(&o.stderr).contains("released synopsis of n = 2000 points to standard output"));
    assert_eq!(d.names(), ["pts.csv", "syn.json"]);
}

#[test]
fn distance_query_writes_all_answers_or_none() {
    let d = Dir::new("query");
    d.write("pts.csv", &points(500));
    assert!(
        privq(&d.0, &release_argv("syn.json", &[]), b"")
            .status
            .success()
    );
    let mut queries = String::from("x,y\n");
    for i in 0..5000 {
        queries.push_str(&format!("{},0.5\n", i as f64 / 5000.0));
    }
    d.write("good.csv", &queries);
    queries.push_str("0.5,3\n");
    d.write("bad.csv", &queries);
    let q = |input: &str, stdin: &[u8]| {
        privq(
            &d.0,
            &[
                "distance",
                "query",
                "--synopsis",
                "syn.json",
                "--input",
                input,
            ],
            stdin,
        )
    };
    let o = q("bad.csv", b"");
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty(), "{} bytes written", o.stdout.len());
    assert!(
        text(&o.stderr).contains("bad.csv line 5002: "),
        "{}",
        text(&o.stderr)
    );
    let o = q("good.csv", b"");
    assert!(o.status.success());
    assert_eq!(text(&o.stdout).lines().count(), 5001);
    // `-` reads the queries from standard input.
    let piped = q("-", queries.as_bytes());
    assert_eq!(piped.status.code(), Some(2));
    assert!(piped.stdout.is_empty());
    // A missing synopsis is named.
    let o = privq(
        &d.0,
        &[
            "distance",
            "query",
            "--synopsis",
            "none.json",
            "--input",
            "good.csv",
        ],
        b"",
    );
    assert!(
        text(&o.stderr).contains("none.json: "),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn experiments_check_their_output_directory_and_runs_first() {
    let d = Dir::new("experiment");
    for (which, extra) in [
        ("mwem", vec!["--data-dir", "."]),
        ("distance", vec![]),
        ("dx", vec!["--cities", "c.csv"]),
    ] {
        d.write("mildew.csv", "a\n");
        d.write("c.csv", "x\n");
        let mut argv = vec!["experiment", which, "--out-dir", "/proc/privq-x"];
        argv.extend(extra);
        let started = std::time::Instant::now();
        let o = privq(&d.0, &argv, b"");
        assert_eq!(o.status.code(), Some(2), "{which}");
        let err = text(&o.stderr);
        assert!(err.contains("/proc/privq-x: "), "{which}: {err}");
        assert!(started.elapsed().as_secs() < 10, "{which}: not fail-fast");
    }
    for runs in ["--runs", "--runs-nltcs"] {
        let o = privq(
            &d.0,
            &["experiment", "mwem", "--data-dir", ".", runs, "0"],
            b"",
        );
        assert_eq!(o.status.code(), Some(2));
        assert!(text(&o.stderr).contains(&format!("{runs}: must be at least 1")));
    }
}

#[test]
fn every_subcommand_help_has_an_example() {
    let d = Dir::new("help");
    let commands: &[&[&str]] = &[
        &["noise"],
        &["ldp"],
        &["ldp", "simulate"],
        &["ldp", "aggregate"],
        &["ldp", "merge"],
        &["synth"],
        &["pmw"],
        &["experiment"],
        &["experiment", "mwem"],
        &["experiment", "distance"],
        &["experiment", "dx"],
        &["dx"],
        &["distance"],
        &["distance", "release"],
        &["distance", "query"],
        &["distance", "interactive"],
        &["audit"],
        &["fairness"],
        &["fairness", "solve"],
        &["fairness", "bias"],
        &["fairness", "em"],
    ];
    for c in commands {
        let argv: Vec<&str> = c.iter().copied().chain(["--help"]).collect();
        let o = privq(&d.0, &argv, b"");
        assert!(o.status.success(), "{c:?}");
        let help = text(&o.stdout);
        assert!(help.contains("Example"), "{c:?} has no example:\n{help}");
        assert!(
            help.contains("  privq "),
            "{c:?}: the example runs privq:\n{help}"
        );
    }
}

#[test]
fn dash_is_standard_input_for_dx_and_pmw() {
    let d = Dir::new("dash-in");
    let universe = "x,n,q\n0,5,1\n1,3,2\n";
    d.write("u.csv", universe);
    let dx = |args: &[&str], stdin: &str| {
        let mut argv = vec![
            "dx",
            "--coords",
            "x",
            "--counts",
            "n",
            "--epsilon",
            "1/2",
            "--seed",
            "1",
        ];
        argv.extend(args);
        privq(&d.0, &argv, stdin.as_bytes())
    };
    let from_file = dx(&["--universe", "u.csv", "--query-column", "q"], "");
    let from_stdin = dx(&["--universe", "-", "--query-column", "q"], universe);
    assert!(from_file.status.success(), "{}", text(&from_file.stderr));
    assert_eq!(text(&from_stdin.stdout), text(&from_file.stdout));
    let queries = dx(&["--universe", "u.csv", "--queries", "-"], "1,2\n");
    assert!(queries.status.success(), "{}", text(&queries.stderr));
    assert_eq!(text(&queries.stdout).lines().count(), 2);
    let both = dx(&["--universe", "-", "--queries", "-"], universe);
    assert!(
        text(&both.stderr).contains("--queries: "),
        "{}",
        text(&both.stderr)
    );

    d.write("b.csv", "x,y,count\n0,0,5\n1,1,5\n");
    let pmw = |queries: &str, stdin: &str| {
        let argv = [
            "pmw",
            "--input",
            "b.csv",
            "--domain",
            "binary",
            "--count-column",
            "count",
            "--epsilon",
            "1",
            "--rounds",
            "2",
            "--profile",
            "theory",
            "--pure",
            "--seed",
            "1",
            "--queries",
            queries,
            "--ledger-json",
            "l.json",
        ];
        privq(&d.0, &argv, stdin.as_bytes())
    };
    let o = pmw("-", "count x=1\n");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).lines().count(), 1);
    std::fs::remove_file(d.path("l.json")).unwrap();
    // A missing query file is named, before any privacy is spent (no ledger).
    let o = pmw("none.txt", "");
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("none.txt: ") && !err.contains("ledger"),
        "{err}"
    );
    assert!(!d.path("l.json").exists());
}

#[test]
fn a_file_that_is_not_text_is_named_and_called_so() {
    let dir = Dir::new("not-utf8");
    let bad = dir.path("bad.csv");
    std::fs::write(&bad, b"a,b\n\xff\xfe,1\n").unwrap();
    let out = privq(
        &dir.0,
        &[
            "synth",
            "--mechanism",
            "mwem",
            "--input",
            "bad.csv",
            "--domain",
            "binary",
            "--epsilon",
            "1",
        ],
        b"",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.csv: not UTF-8 text"), "{err}");
    assert!(!err.contains("i/o error"), "{err}");
}

/// Inputs mean what they say: a column named `count` is a weight only when
/// declared; a numeric NaN is refused naming the line and column; columns the
/// domain does not cover are refused naming them (or left out when declared).
#[test]
fn inputs_are_read_as_declared() {
    let d = Dir::new("declared");
    let mut visits = String::from("sex,count\n");
    for i in 0..200 {
        visits.push_str(&format!("{},{}\n", i % 2, if i == 0 { 500 } else { 1 }));
    }
    d.write("visits.csv", &visits);
    d.write(
        "sex.json",
        r#"{"attributes": [{"name": "sex", "values": ["0", "1"]}]}"#,
    );
    let synth = |extra: &[&str]| {
        let mut argv = vec![
            "synth",
            "--input",
            "visits.csv",
            "--domain",
            "sex.json",
            "--epsilon",
            "1",
            "--seed",
            "1",
            "--output",
            "out.csv",
        ];
        argv.extend_from_slice(extra);
        privq(&d.0, &argv, b"")
    };
    // Undeclared: refused, naming the column and both fixes; no output.
    let o = synth(&[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("\"count\"")
            && err.contains("--count-column")
            && err.contains("--ignore-columns"),
        "{err}"
    );
    assert!(!d.path("out.csv").exists());
    // Declared as ignored: one record per row (about 200 synthetic rows, not 700).
    let o = synth(&["--ignore-columns", "count"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rows = std::fs::read_to_string(d.path("out.csv"))
        .unwrap()
        .lines()
        .count()
        - 1;
    assert!((150..260).contains(&rows), "{rows} rows");
    // Declared as a weight: each row stands for `count` records.
    let o = synth(&["--count-column", "count"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rows = std::fs::read_to_string(d.path("out.csv"))
        .unwrap()
        .lines()
        .count()
        - 1;
    assert!((600..800).contains(&rows), "{rows} rows");

    // NaN in a binned column: refused naming the line and column.
    d.write(
        "income.json",
        r#"{"attributes": [{"name": "income", "edges": [0, 10, 20]}]}"#,
    );
    d.write("income.csv", "income\n5\n12\nNaN\n");
    let o = privq(
        &d.0,
        &[
            "synth",
            "--input",
            "income.csv",
            "--domain",
            "income.json",
            "--epsilon",
            "1",
        ],
        b"",
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("line 4") && err.contains("\"income\"") && err.contains("not a finite number"),
        "{err}"
    );
}

/// The private input is never overwritten by the release (also through a link),
/// and an unwritable ledger path fails before anything is read or released.
#[test]
fn outputs_never_replace_the_input_and_the_ledger_path_is_probed_first() {
    let d = Dir::new("overwrite");
    let input = d.write("x.csv", TABLE);
    let base = [
        "synth",
        "--input",
        "x.csv",
        "--domain",
        "binary",
        "--count-column",
        "count",
        "--epsilon",
        "1",
        "--seed",
        "1",
    ];
    #[cfg(unix)]
    std::os::unix::fs::symlink(&input, d.path("link.csv")).unwrap();
    for (flag, path) in [
        ("--output", "x.csv"),
        ("--output", "./x.csv"),
        ("--ledger-json", "x.csv"),
    ]
    .into_iter()
    .chain(cfg!(unix).then_some(("--output", "link.csv")))
    {
        let mut argv = base.to_vec();
        argv.extend([flag, path]);
        let o = privq(&d.0, &argv, b"");
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag} {path}: {err}");
        assert!(
            err.contains("is the input file") || err.contains("is not a privq ledger"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&input).unwrap(), TABLE);
    }
    // A ledger in a directory that does not exist: refused while parsing, before
    // the output is written or anything printed.
    let mut argv = base.to_vec();
    argv.extend(["--output", "o.csv", "--ledger-json", "no-such-dir/l.json"]);
    let o = privq(&d.0, &argv, b"");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("no-such-dir/l.json"),
        "{}",
        text(&o.stderr)
    );
    assert!(!d.path("o.csv").exists());
    let o = privq(
        &d.0,
        &[
            "noise",
            "--demo",
            "--epsilon",
            "1",
            "--sensitivity",
            "1",
            "--ledger-json",
            "no-such-dir/l.json",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
    assert_eq!(
        d.names().iter().filter(|n| n.ends_with(".tmp")).count(),
        0,
        "{:?}",
        d.names()
    );
}

/// `pmw` with no query fails (and an empty stream is refused before any charge).
#[test]
fn pmw_without_queries_fails() {
    let d = Dir::new("pmw-none");
    d.write("b.csv", "x,y,count\n0,0,500\n1,1,500\n");
    for stdin in ["", "\n\n"] {
        let o = privq(
            &d.0,
            &[
                "pmw",
                "--input",
                "b.csv",
                "--count-column",
                "count",
                "--domain",
                "binary",
                "--epsilon",
                "1",
                "--rounds",
                "2",
                "--pure",
                "--seed",
                "1",
                "--ledger-json",
                "l.json",
            ],
            stdin.as_bytes(),
        );
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{stdin:?}: {err}");
        assert!(err.contains("no query"), "{err}");
        // Nothing charged for the empty stream, so no ledger; blank lines were read
        // after the charge, and the ledger records it.
        assert_eq!(d.path("l.json").exists(), !stdin.is_empty(), "{stdin:?}");
    }
}

/// No false refusals or aborts: 64 binary columns (a universe beyond 2^64 cells)
/// run with the adaptive mechanism, which never builds the universe; a `--records`
/// too large for memory is refused naming the flag, before anything is written.
#[test]
fn huge_domains_run_and_huge_record_counts_are_refused() {
    let d = Dir::new("huge");
    let header: Vec<String> = (0..64).map(|i| format!("b{i}")).collect();
    let mut table = header.join(",") + "\n";
    for r in 0..300u64 {
        let row: Vec<String> = (0..64)
            .map(|i| (((r * 2654435761) >> i) & 1).to_string())
            .collect();
        table.push_str(&(row.join(",") + "\n"));
    }
    d.write("wide.csv", &table);
    let base = [
        "synth",
        "--input",
        "wide.csv",
        "--domain",
        "binary",
        "--epsilon",
        "1",
        "--seed",
        "2",
        "--workload",
        "marginals:2",
        "--rounds",
        "68",
    ];
    let mut argv = base.to_vec();
    argv.extend(["--output", "out.csv"]);
    let o = privq(&d.0, &argv, b"");
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("1.845e19 universe cells"), "{err}");
    let out = std::fs::read_to_string(d.path("out.csv")).unwrap();
    assert_eq!(out.lines().next().unwrap(), header.join(","));

    let mut argv = base.to_vec();
    argv.extend(["--records", "1000000000000", "--output", "big.csv"]);
    let o = privq(&d.0, &argv, b"");
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--records") && err.contains("--memory-mib"),
        "{err}"
    );
    assert!(!d.path("big.csv").exists());
    assert!(
        !d.names().iter().any(|n| n.ends_with(".tmp")),
        "{:?}",
        d.names()
    );
}

#[test]
fn synth_writes_bins_as_midpoints_or_as_labels() {
    let d = Dir::new("synth-bins");
    let mut table = String::from("age,city\n");
    for i in 0..60 {
        table.push_str(&format!("{},{}\n", i % 50, ["Lima", "Oslo"][i % 2]));
    }
    d.write("people.csv", &table);
    d.write(
        "domain.json",
        r#"{"attributes": [{"name": "age", "edges": [0, 18, 30, 45.5]},
            {"name": "city", "values": ["Lima", "Oslo"]}]}"#,
    );
    let base = [
        "synth",
        "--input",
        "people.csv",
        "--domain",
        "domain.json",
        "--epsilon",
        "1",
        "--seed",
        "5",
        "--records",
        "40",
    ];
    let midpoints = ["9", "24", "37.75"];
    let labels = ["[0,18)", "[18,30)", "[30,45.5)"];
    for mechanism in [
        &["--mechanism", "adaptive"][..],
        &["--mechanism", "mwem", "--workload", "marginals:2"],
    ] {
        for as_labels in [false, true] {
            let mut argv = base.to_vec();
            argv.extend(mechanism);
            if as_labels {
                argv.push("--bins-as-labels");
            }
            let o = privq(&d.0, &argv, b"");
            assert!(o.status.success(), "{argv:?}: {}", text(&o.stderr));
            let out = text(&o.stdout);
            assert!(out.starts_with("age,city\n"), "{out}");
            // A label holds a comma, so the CSV quotes it: read the CSV as CSV.
            let rows: Vec<csv::StringRecord> = csv::Reader::from_reader(out.as_bytes())
                .records()
                .map(Result::unwrap)
                .collect();
            assert_eq!(rows.len(), 40, "{out}");
            for row in &rows {
                let (age, city) = (&row[0], &row[1]);
                assert!(["Lima", "Oslo"].contains(&city), "{out}");
                if as_labels {
                    assert!(labels.contains(&age), "{argv:?}: {out}");
                } else {
                    assert!(
                        age.parse::<f64>().is_ok() && midpoints.contains(&age),
                        "{argv:?}: {out}"
                    );
                }
            }
        }
    }
}

/// `privq domain init` writes a template from the header alone (refused until
/// filled in); `privq domain discover` writes a domain chosen privately, charged.
#[test]
fn domain_init_and_discover() {
    let d = Dir::new("domain-cmd");
    let mut people = String::from("age,city,smoker\n");
    for i in 0..3000 {
        let city = ["Oslo", "Rome", "Lima"][i % 3];
        people.push_str(&format!("{},{city},{}\n", 18 + i % 70, i % 2));
    }
    people.push_str("44,Atlantis,1\n"); // one record's rare value
    d.write("people.csv", &people);
    let o = privq(
        &d.0,
        &[
            "domain",
            "init",
            "people.csv",
            "--numeric",
            "age",
            "--output",
            "t.json",
        ],
        b"",
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let t = std::fs::read_to_string(d.path("t.json")).unwrap();
    assert!(t.contains(r#"{"name": "age", "edges": ["TODO:"#), "{t}");
    assert!(t.contains(r#"{"name": "city", "values": ["TODO:"#), "{t}");
    assert!(!t.contains("Oslo") && !t.contains("44"), "{t}");
    let o = privq(
        &d.0,
        &[
            "synth",
            "--input",
            "people.csv",
            "--domain",
            "t.json",
            "--epsilon",
            "1",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("TODO:"), "{}", text(&o.stderr));

    let o = privq(
        &d.0,
        &[
            "domain",
            "discover",
            "--input",
            "people.csv",
            "--ignore-columns",
            "age",
            "--epsilon",
            "1",
            "--seed",
            "3",
            "--output",
            "d.json",
            "--ledger-json",
            "l.json",
        ],
        b"",
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let domain = std::fs::read_to_string(d.path("d.json")).unwrap();
    assert_eq!(
        domain,
        "{\"attributes\": [\n  {\"name\": \"city\", \"values\": [\"Lima\", \"Oslo\", \"Rome\"]},\n  \
         {\"name\": \"smoker\", \"values\": [\"0\", \"1\"]}\n]}\n"
    );
    let ledger = std::fs::read_to_string(d.path("l.json")).unwrap();
    assert!(ledger.contains("domain discovery"), "{ledger}");
}

/// Ctrl-C during a long run leaves no temporary file behind and exits 130.
#[cfg(unix)]
#[test]
fn an_interrupted_run_leaves_no_temporary_file() {
    let d = Dir::new("sigint");
    let header: Vec<String> = (0..48).map(|i| format!("b{i}")).collect();
    let mut table = header.join(",") + "\n";
    for r in 0..2000u64 {
        let row: Vec<String> = (0..48)
            .map(|i| (((r * 2654435761) >> (i % 31)) & 1).to_string())
            .collect();
        table.push_str(&(row.join(",") + "\n"));
    }
    d.write("wide.csv", &table);
    let mut child = Command::new(env!("CARGO_BIN_EXE_privq"))
        .args([
            "synth",
            "--input",
            "wide.csv",
            "--domain",
            "binary",
            "--epsilon",
            "10",
            "--seed",
            "1",
            "--workload",
            "marginals:2",
            "--rounds",
            "2000",
            "--output",
            "out.csv",
        ])
        .current_dir(&d.0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !d.names().iter().any(|n| n.ends_with(".tmp")) {
        assert!(
            started.elapsed().as_secs() < 60,
            "no temporary output appeared: {:?}",
            d.names()
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert!(
        !d.names()
            .iter()
            .any(|n| n.ends_with(".tmp") || n == "out.csv"),
        "{:?}",
        d.names()
    );
}

/// `--ledger-json` replaces an existing file only when it is a ledger: never the
/// input, a release or a domain file named by mistake; nor the `--output` path.
#[test]
fn the_ledger_never_replaces_a_file_that_is_not_a_ledger() {
    let d = Dir::new("ledger-clobber");
    d.write("x.csv", TABLE);
    let noise = |ledger: &str| {
        privq(
            &d.0,
            &[
                "noise",
                "--input",
                "x.csv",
                "--column",
                "count",
                "--epsilon",
                "1",
                "--range",
                "0,50",
                "--seed",
                "1",
                "--ledger-json",
                ledger,
            ],
            b"",
        )
    };
    let o = noise("x.csv");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("not a privq ledger"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(std::fs::read_to_string(d.path("x.csv")).unwrap(), TABLE);
    // A ledger may be replaced by the next run's.
    let o = noise("l.json");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("other columns (a, b, c)"),
        "{}",
        text(&o.stderr)
    );
    let o = noise("l.json");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = privq(
        &d.0,
        &[
            "synth",
            "--input",
            "x.csv",
            "--domain",
            "binary",
            "--count-column",
            "count",
            "--epsilon",
            "1",
            "--output",
            "o.csv",
            "--ledger-json",
            "o.csv",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("also the --output path"),
        "{}",
        text(&o.stderr)
    );
}

//! The built `privq` binary's outputs: nothing is lost with exit 0 and outputs are
//! all-or-nothing (`synth --output`, `distance release --out`, `distance query`,
//! `experiment --out-dir`), `-` for standard input and output, quiet broken pipes,
//! bins written as midpoints or labels, no temporary file left by an interrupted
//! run, and an example in every subcommand's help.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::{Dir, TABLE, points, privq, text};

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

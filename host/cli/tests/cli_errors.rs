//! The built `privq` binary: error messages say what is wrong and name the flag,
//! the line or the file (not a number, bad ranges and bodies, weights, an ε too
//! large, conflicting flags), and the top-level help ends with examples.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("privq-cli-err-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn write(&self, f: &str, text: &str) -> String {
        let p = self.0.join(f);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
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

/// Runs a command that must fail with exit code 2; returns its standard error.
fn fails(cwd: &Path, args: &[&str], stdin: &[u8]) -> String {
    let out = privq(cwd, args, stdin);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    err
}

/// Asserts that `err` contains every one of `parts`.
fn says(err: &str, parts: &[&str]) {
    for p in parts {
        assert!(err.contains(p), "expected {p:?} in: {err}");
    }
}

#[test]
fn dx_coordinates_that_are_not_numbers_name_line_and_column() {
    let dir = Dir::new("dx");
    for bad in ["NaN", "abc", "inf"] {
        let u = dir.write("u.csv", &format!("x,y,n\n1,2,3\n{bad},1,2\n"));
        let err = fails(
            &dir.0,
            &[
                "dx",
                "--universe",
                &u,
                "--coords",
                "x,y",
                "--counts",
                "n",
                "--epsilon",
                "1",
                "--query-column",
                "n",
                "--seed",
                "1",
            ],
            b"",
        );
        says(
            &err,
            &[&format!("line 3, column x: \"{bad}\" is not a number")],
        );
        assert!(!err.contains("fixed-point range"), "{err}");
    }
}

#[test]
fn knorm_nan_inputs_are_not_numbers() {
    let dir = Dir::new("knorm");
    let argv = [
        "knorm",
        "--body",
        "identity:3",
        "--epsilon",
        "1",
        "--seed",
        "1",
    ];
    let err = fails(&dir.0, &argv, b"1,NaN,3\n");
    says(&err, &["line 1: \"NaN\" is not a number"]);
    assert!(!err.contains("fixed-point range"), "{err}");
    // A negative count is a number, but not a count.
    let err = fails(&dir.0, &argv, b"1,-2,3\n");
    says(
        &err,
        &["--counts: line 1: \"-2\" is not a non-negative whole number"],
    );
    // A NaN coefficient of the query matrix.
    let q = dir.write("q.csv", "1,NaN\n0,1\n");
    let err = fails(
        &dir.0,
        &["knorm", "--queries", &q, "--epsilon", "1", "--seed", "1"],
        b"1,2\n",
    );
    says(
        &err,
        &["--queries line 1, column 2: \"NaN\" is not a number"],
    );
}

#[test]
fn distance_query_points_that_are_not_numbers_name_the_file_and_line() {
    let dir = Dir::new("distance");
    let mut points = String::from("x,y\n");
    for i in 0..50 {
        points.push_str(&format!(
            "{},{}\n",
            (i % 10) as f64 / 10.0,
            (i % 7) as f64 / 7.0
        ));
    }
    let p = dir.write("points.csv", &points);
    let out = privq(
        &dir.0,
        &[
            "distance",
            "release",
            "--input",
            &p,
            "--lo",
            "0,0",
            "--hi",
            "1,1",
            "--epsilon",
            "1",
            "--seed",
            "1",
            "--out",
            "syn.json",
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.write("q.csv", "x,y\n0.5,0.5\nabc,0.5\n");
    let err = fails(
        &dir.0,
        &[
            "distance",
            "query",
            "--synopsis",
            "syn.json",
            "--input",
            "q.csv",
        ],
        b"",
    );
    says(&err, &["q.csv line 3, column x: \"abc\" is not a number"]);
    assert!(!err.contains("fixed-point range"), "{err}");
}

#[test]
fn noise_range_must_be_increasing() {
    let dir = Dir::new("noise");
    let err = fails(
        &dir.0,
        &["noise", "--range", "10,0", "--epsilon", "1"],
        b"1\n",
    );
    says(&err, &["--range: LO must be below HI"]);
    let err = fails(
        &dir.0,
        &["noise", "--sensitivity", "1", "--epsilon", "1"],
        b"1\nabc\n",
    );
    says(&err, &["line 2: \"abc\" is not a number"]);
}

#[test]
fn knorm_unknown_body_lists_the_forms() {
    let dir = Dir::new("body");
    let err = fails(
        &dir.0,
        &["knorm", "--body", "cube:2", "--epsilon", "1"],
        b"1,2\n",
    );
    says(
        &err,
        &["unknown body `cube:2`; expected identity:D, hypercube:D or random:D,N"],
    );
}

#[test]
fn ldp_simulate_weights_must_be_usable() {
    let dir = Dir::new("weights");
    for (name, text) in [("neg", "1\n-1\n"), ("zero", "0\n0\n"), ("nan", "1\nNaN\n")] {
        let w = dir.write(&format!("{name}.txt"), text);
        let err = fails(
            &dir.0,
            &[
                "ldp",
                "simulate",
                "--mechanism",
                "grr",
                "--epsilon",
                "1",
                "--domain",
                "2",
                "--devices",
                "10",
                "--weights",
                &w,
                "--seed",
                "1",
                "--output",
                "o.pqr",
            ],
            b"",
        );
        says(
            &err,
            &[
                "--weights: ",
                "weights must be finite, non-negative and not all zero",
            ],
        );
        assert!(!err.contains("range is empty"), "{err}");
    }
}

#[test]
fn synth_epsilon_too_large_names_the_option_and_the_largest_value() {
    let dir = Dir::new("synth-eps");
    let input = dir.write("b.csv", "a,b,c,d\n0,1,0,1\n1,1,0,0\n0,0,1,1\n");
    let err = fails(
        &dir.0,
        &[
            "synth",
            "--input",
            &input,
            "--domain",
            "binary",
            "--epsilon",
            "1000",
            "--seed",
            "1",
        ],
        b"",
    );
    says(
        &err,
        &[
            "--epsilon: ε = 1000 is too large",
            "the largest value accepted for every input is 228",
        ],
    );
    assert!(
        !err.contains("error: an integer computation would overflow"),
        "{err}"
    );
    // The value it names is accepted.
    let out = privq(
        &dir.0,
        &[
            "synth",
            "--input",
            &input,
            "--domain",
            "binary",
            "--epsilon",
            "228",
            "--seed",
            "1",
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn output_files_that_cannot_be_written_or_read_are_named() {
    let dir = Dir::new("files");
    let err = fails(
        &dir.0,
        &[
            "ldp",
            "simulate",
            "--epsilon",
            "1",
            "--devices",
            "10",
            "--seed",
            "1",
            "--output",
            "no/such/dir/o.pqr",
        ],
        b"",
    );
    says(&err, &["no/such/dir/o.pqr: "]);
    assert!(!err.contains("reading or writing a stream"), "{err}");
    let err = fails(
        &dir.0,
        &["knorm", "--queries", "missing.csv", "--epsilon", "1"],
        b"1\n",
    );
    says(&err, &["missing.csv: "]);
    assert!(!err.contains("reading or writing a stream"), "{err}");
}

#[test]
fn conflicting_flags_are_refused_with_what_they_need() {
    let dir = Dir::new("conflicts");
    let err = fails(
        &dir.0,
        &[
            "ldp",
            "simulate",
            "--mechanism",
            "rr",
            "--domain",
            "64",
            "--epsilon",
            "1",
            "--devices",
            "10",
            "--output",
            "o.pqr",
        ],
        b"",
    );
    says(
        &err,
        &[
            "--domain: randomized response (--mechanism rr) is binary",
            "--domain 2",
        ],
    );
    // rr without --domain still runs (d = 2).
    let out = privq(
        &dir.0,
        &[
            "ldp",
            "simulate",
            "--mechanism",
            "rr",
            "--epsilon",
            "1",
            "--devices",
            "10",
            "--seed",
            "1",
            "--output",
            "o.pqr",
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let input = dir.write("b.csv", "a,b,c,d\n0,1,0,1\n1,1,0,0\n0,0,1,1\n");
    let synth = |extra: &[&str]| {
        let mut argv = vec![
            "synth",
            "--input",
            &input,
            "--domain",
            "binary",
            "--epsilon",
            "1",
            "--seed",
            "1",
        ];
        argv.extend_from_slice(extra);
        privq(&dir.0, &argv, b"")
    };
    let err = fails(
        &dir.0,
        &[
            "synth",
            "--input",
            &input,
            "--domain",
            "binary",
            "--epsilon",
            "1",
            "--mechanism",
            "mwem",
            "--neighbours",
            "add-remove",
        ],
        b"",
    );
    says(
        &err,
        &[
            "--neighbours: --mechanism mwem is replace-one",
            "--neighbours add-remove",
        ],
    );
    // MWEM without --neighbours still runs.
    assert!(synth(&["--mechanism", "mwem"]).status.success());
    let err = fails(
        &dir.0,
        &[
            "synth",
            "--input",
            &input,
            "--domain",
            "binary",
            "--epsilon",
            "1",
            "--workload",
            "marginals:99",
        ],
        b"",
    );
    says(&err, &["marginals:99 but the domain has 4 attributes"]);
    // The default workload (marginals:3) still runs on a smaller domain.
    let two = dir.write("two.csv", "a,b\n0,1\n1,1\n");
    let out = privq(
        &dir.0,
        &[
            "synth",
            "--input",
            &two,
            "--domain",
            "binary",
            "--epsilon",
            "1",
            "--seed",
            "1",
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn top_level_and_conjunctions_help_end_with_examples() {
    let dir = Dir::new("help");
    for argv in [
        &["--help"][..],
        &["conjunctions", "--help"][..],
        &["conjunctions", "query", "--help"][..],
    ] {
        let out = privq(&dir.0, argv, b"");
        assert!(out.status.success(), "{argv:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        let examples = text
            .rfind("Examples:\n")
            .unwrap_or_else(|| panic!("{argv:?}: no examples in {text}"));
        // The examples come after every option.
        assert!(
            text[examples..]
                .lines()
                .skip(1)
                .all(|l| !l.trim_start().starts_with('-'))
        );
        assert!(text[examples..].contains("privq "), "{argv:?}: {text}");
    }
}

#[test]
fn conjunctions_help_examples_run() {
    let dir = Dir::new("conj-examples");
    let mut table = String::from("a1,a2,a3\n");
    for i in 0..60 {
        table.push_str(&format!("{},{},{}\n", i % 2, i / 2 % 2, i / 3 % 2));
    }
    dir.write("table.csv", &table);
    for line in [
        "conjunctions release --input table.csv --epsilon 1 --out table.conj.json --seed 1",
        "conjunctions query --release table.conj.json --set a1,a2 --set a3",
    ] {
        let argv: Vec<&str> = line.split(' ').collect();
        let out = privq(&dir.0, &argv, b"");
        assert!(
            out.status.success(),
            "{line}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = privq(
        &dir.0,
        &[
            "conjunctions",
            "query",
            "--release",
            "table.conj.json",
            "--set",
            "",
            "--set",
            "a1",
            "--format",
            "json",
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `--time-budget` takes a positive number of seconds, checked before the budget
/// file is charged or the input read; MWEM refuses it; a tiny budget still
/// releases, charged exactly as without one, and says the budget ended the rounds.
#[test]
fn synth_time_budget_is_checked_before_anything_is_spent() {
    let dir = Dir::new("synth-time");
    let rows = "0,1,0,1\n1,1,0,0\n0,0,1,1\n".repeat(20);
    let input = dir.write("b.csv", &format!("a,b,c,d\n{rows}"));
    let synth = |extra: &[&str]| {
        let mut argv = vec![
            "synth",
            "--input",
            &input,
            "--domain",
            "binary",
            "--epsilon",
            "1",
            "--seed",
            "1",
            "--budget-file",
            "b.json",
            "--budget-cap",
            "5,1e-6",
        ];
        argv.extend_from_slice(extra);
        privq(&dir.0, &argv, b"")
    };
    for bad in ["0", "-1", "nan", "inf", "1e300"] {
        let out = synth(&["--time-budget", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        says(
            &String::from_utf8_lossy(&out.stderr),
            &[
                "--time-budget: ",
                "the time budget must be a positive number of seconds",
            ],
        );
        assert!(!dir.0.join("b.json").exists(), "{bad}: charged");
        assert!(out.stdout.is_empty(), "{bad}");
    }
    let out = synth(&["--time-budget", "1", "--mechanism", "mwem"]);
    assert_eq!(out.status.code(), Some(2));
    says(
        &String::from_utf8_lossy(&out.stderr),
        &[
            "--time-budget: is for --mechanism adaptive",
            "drop --time-budget",
        ],
    );
    assert!(!dir.0.join("b.json").exists());
    let out = synth(&["--time-budget", "0.000000001"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    says(
        &err,
        &[
            "privq: time budget 0.000000001 s: the budget made round 1 the last (of about 64 \
             planned)",
            "--seed does not reproduce the release",
            "budget file b.json: charged ε = 1",
        ],
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("a,b,c,d\n"));
}

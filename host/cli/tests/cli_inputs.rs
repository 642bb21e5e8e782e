//! The built `privq` binary's inputs: read as declared, `-` for standard input,
//! errors that name the file or the option (not text, no queries, too many
//! records), and `domain init` / `domain discover`.

mod common;

use common::{Dir, privq, text};

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

#[test]
fn a_column_named_twice_is_refused_not_released_first_come() {
    let d = Dir::new("dup-column");
    d.write("dup.csv", "a,a,b\n1,2,x\n3,4,y\n");
    let o = privq(
        &d.0,
        &[
            "noise",
            "--input",
            "dup.csv",
            "--column",
            "a",
            "--range",
            "0,10",
            "--epsilon",
            "1",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    let err = text(&o.stderr);
    assert!(
        err.contains("names column \"a\" twice (columns 1 and 2)"),
        "{err}"
    );
}

#[test]
fn text_in_a_binned_column_is_not_a_number() {
    let d = Dir::new("binned-nan");
    d.write("p.csv", "age,sex\n20,m\nabc,f\n");
    d.write(
        "d.json",
        r#"{"attributes":[{"name":"age","edges":[0,10,20,30,40]},{"name":"sex","values":["m","f"]}]}"#,
    );
    let o = privq(
        &d.0,
        &[
            "synth",
            "--input",
            "p.csv",
            "--domain",
            "d.json",
            "--epsilon",
            "1",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("line 3: attribute \"age\" is numeric")
            && err.contains("\"abc\" is not a number"),
        "{err}"
    );
}

#[test]
fn a_total_epsilon_above_ten_is_warned_about() {
    let d = Dir::new("weak-epsilon");
    let run = |eps: &str| {
        let o = privq(
            &d.0,
            &[
                "noise",
                "--demo",
                "--range",
                "0,10",
                "--epsilon",
                eps,
                "--seed",
                "1",
            ],
            b"",
        );
        assert!(o.status.success());
        text(&o.stderr)
    };
    assert!(run("100").contains("warning: a total ε of 100 protects little"));
    assert!(!run("10").contains("protects little"));
}

#[test]
fn a_count_column_beyond_the_memory_cap_is_refused_before_anything_is_spent() {
    let d = Dir::new("huge-count");
    d.write("c.csv", "a,b,count\n0,1,5\n1,0,300000000\n");
    let o = privq(
        &d.0,
        &[
            "synth",
            "--input",
            "c.csv",
            "--count-column",
            "count",
            "--domain",
            "binary",
            "--epsilon",
            "1",
            "--output",
            "o.csv",
            "--ledger-json",
            "l.json",
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("--memory-mib: line 3: the input holds more than"),
        "{err}"
    );
    assert!(!d.0.join("o.csv").exists() && !d.0.join("l.json").exists());
}

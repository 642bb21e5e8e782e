//! Unit tests of `privq synth`'s argument handling and outputs.

use super::*;

fn args(input: PathBuf, epsilon: &str) -> Args {
    Args {
        input,
        columns: ColumnsArgs {
            count_column: Some("count".into()),
            ignore_columns: Vec::new(),
        },
        domain: DomainArgs::binary(),
        epsilon: epsilon.into(),
        mechanism: MechanismArg::Mwem,
        delta: 1e-9,
        neighbours: NeighboursArg::Replace,
        max_model_mib: 4,
        time_budget: None,
        compare: false,
        rounds: Some(5),
        workload: Some("parity:2".into()),
        plain: false,
        profile: EmProfile::Corrected,
        records: Some(50),
        bins_as_labels: false,
        output: None,
        report: None,
        seed: Some(3),
        memory_mib: 1024,
        ledger: LedgerArgs::default(),
    }
}

#[test]
fn synthesizes_a_csv_and_reports_the_budget() {
    let dir = std::env::temp_dir().join(format!("privq-synth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("t.csv");
    std::fs::write(
        &input,
        "a,b,c,count\n0,0,0,40\n0,1,1,25\n1,0,1,20\n1,1,0,15\n",
    )
    .unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    run(&args(input.clone(), "1"), &mut &b""[..], &mut out, &mut err).unwrap();
    let out = String::from_utf8(out).unwrap();
    assert_eq!(out.lines().count(), 51);
    assert!(out.starts_with("a,b,c\n"));
    let err = String::from_utf8(err).unwrap();
    assert!(
        err.contains("total: ε = ") && err.contains(" of 1, δ = 0 of 0 "),
        "{err}"
    );
    assert!(
        err.contains("under replace-one-record neighbours; n = 100 treated as public"),
        "{err}"
    );
    // ε ≤ 0 and T = 0 are typed errors.
    let mut sink = Vec::new();
    let e = run(
        &args(input.clone(), "0"),
        &mut &b""[..],
        &mut sink,
        &mut Vec::new(),
    )
    .unwrap_err();
    assert!(matches!(
        e,
        CliError::Parameter {
            option: "epsilon",
            ..
        }
    ));
    let e = run(
        &args(input.clone(), "-1"),
        &mut &b""[..],
        &mut sink,
        &mut Vec::new(),
    )
    .unwrap_err();
    assert!(matches!(
        e,
        CliError::Parameter {
            option: "epsilon",
            ..
        }
    ));
    let mut a = args(input.clone(), "1");
    a.rounds = Some(0);
    assert!(run(&a, &mut &b""[..], &mut sink, &mut Vec::new()).is_err());
    // Unknown attribute values under a JSON domain.
    let spec = dir.join("d.json");
    std::fs::write(&spec, r#"{"attributes": [{"name": "a", "values": ["0", "1"]}, {"name": "b", "values": ["0"]}, {"name": "c", "values": ["0", "1"]}]}"#).unwrap();
    let mut a = args(input, "1");
    a.domain.domain = Some(super::super::domain::DomainArg::File(spec));
    let e = run(&a, &mut &b""[..], &mut sink, &mut Vec::new()).unwrap_err();
    assert!(e.to_string().contains("has no value \"1\""), "{e}");
    let _ = std::fs::remove_dir_all(dir);
}

fn spent(err: &str) -> privq_core::Epsilon {
    err.split("total: ε = ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("{err}"))
}

#[test]
fn thesis_literal_profile_never_exceeds_epsilon() {
    let dir = std::env::temp_dir().join(format!("privq-synth-lit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("t.csv");
    std::fs::write(
        &input,
        "a,b,c,count\n0,0,0,40\n0,1,1,25\n1,0,1,20\n1,1,0,15\n",
    )
    .unwrap();
    let input = input.to_str().unwrap();
    let eps = |text: &str| text.parse::<privq_core::Epsilon>().unwrap();
    let base = [
        "synth",
        "--mechanism",
        "mwem",
        "--input",
        input,
        "--epsilon",
        "3/4",
        "--rounds",
        "4",
        "--records",
        "10",
        "--seed",
        "3",
        "--workload",
        "parity:2",
        "--domain",
        "binary",
        "--count-column",
        "count",
    ];
    // Plain MWEM: every round is charged, so the spend is exact. Corrected: T·ε₀ = ε.
    // Literal: ε₀ = (2/3)ε/T and each round costs 1.5·ε₀, again exactly ε — never 1.5ε.
    for profile in ["corrected", "thesis-literal"] {
        let mut argv = base.to_vec();
        argv.extend(["--plain", "--profile", profile]);
        let (out, err) = crate::run_with(&argv, "").unwrap();
        assert_eq!(out.lines().count(), 11);
        assert_eq!(spent(&err), eps("3/4"), "{profile}: {err}");
        assert!(
            err.contains("of 3/4, δ = 0 of 0 (1 charge(s)") && err.contains("in 8 steps"),
            "{err}"
        );
        let literal = profile == "thesis-literal";
        assert_eq!(err.contains("true 1.5*eps0"), literal, "{err}");
        assert_eq!(
            err.contains("1.5*eps0 per round, not eps0"),
            literal,
            "{err}"
        );
        if literal {
            assert!(
                err.contains("MWEM is run with 1/2 = 2/3 of epsilon 3/4"),
                "{err}"
            );
        }
    }
    // With the improvements (adaptive rounds may stop early) it still stays within ε.
    let mut argv = base.to_vec();
    argv.extend(["--profile", "thesis-literal"]);
    let (_, err) = crate::run_with(&argv, "").unwrap();
    let s = spent(&err);
    assert!(s.to_f64() <= 0.75 && s.to_f64() > 0.0, "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_default_profile_is_corrected_and_unknown_ones_are_refused() {
    let input = "people.csv";
    use clap::Parser;
    let cli = crate::Cli::try_parse_from([
        "privq",
        "synth",
        "--mechanism",
        "mwem",
        "--input",
        input,
        "--epsilon",
        "1",
    ])
    .unwrap();
    match cli.command {
        crate::Command::Synth(a) => assert_eq!(a.profile, EmProfile::Corrected),
        _ => unreachable!(),
    }
    assert!(
        crate::Cli::try_parse_from([
            "privq",
            "synth",
            "--mechanism",
            "mwem",
            "--input",
            input,
            "--epsilon",
            "1",
            "--profile",
            "literal"
        ])
        .is_err()
    );
}

/// A small binary count table in a fresh directory named `name`.
fn small_table(name: &str) -> (PathBuf, PathBuf) {
    let dir = crate::ledger_tests::scratch(name);
    let input = dir.join("t.csv");
    std::fs::write(
        &input,
        "a,b,c,count\n0,0,0,40\n0,1,1,25\n1,0,1,20\n1,1,0,15\n",
    )
    .unwrap();
    (dir, input)
}

#[test]
fn ledger_json_totals_the_epsilon_spent() {
    let (dir, input) = small_table("synth");
    let ledger = dir.join("ledger.json");
    let argv = [
        "synth",
        "--mechanism",
        "mwem",
        "--input",
        input.to_str().unwrap(),
        "--domain",
        "binary",
        "--count-column",
        "count",
        "--epsilon",
        "3/4",
        "--rounds",
        "4",
        "--records",
        "10",
        "--seed",
        "3",
        "--workload",
        "parity:2",
        "--plain",
        "--ledger-json",
        ledger.to_str().unwrap(),
    ];
    let (_, err) = crate::run_with(&argv, "").unwrap();
    let (json, total) = crate::ledger_tests::read(&ledger);
    assert_eq!(
        total,
        crate::ledger_tests::stated(&err, "privacy spent: epsilon = ")
    );
    assert_eq!(total, spent(&err), "{err}");
    assert_eq!(json["charges"].as_array().unwrap().len(), 1, "{json}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_failed_synth_writes_no_ledger() {
    let (dir, input) = small_table("synth-fail");
    let ledger = dir.join("ledger.json");
    // MWEM runs (and is charged), then the output cannot be written.
    let output = dir.join("no-such-dir").join("out.csv");
    let argv = [
        "synth",
        "--mechanism",
        "mwem",
        "--input",
        input.to_str().unwrap(),
        "--domain",
        "binary",
        "--count-column",
        "count",
        "--epsilon",
        "1",
        "--rounds",
        "2",
        "--seed",
        "3",
        "--workload",
        "parity:2",
        "--output",
        output.to_str().unwrap(),
        "--ledger-json",
        ledger.to_str().unwrap(),
    ];
    assert!(crate::run_with(&argv, "").is_err());
    assert!(!ledger.exists());
    std::fs::remove_dir_all(&dir).ok();
}

fn nltcs() -> Option<String> {
    let dir = privq_host::data::shared_data_dir("synth on NLTCS")?;
    Some(dir.join("nltcs.csv").to_str()?.to_string())
}

#[test]
fn without_a_domain_synth_is_refused_naming_both_fixes() {
    let Some(input) = nltcs() else { return };
    let e = crate::run_with(
        &[
            "synth",
            "--mechanism",
            "mwem",
            "--input",
            &input,
            "--epsilon",
            "1",
        ],
        "",
    )
    .unwrap_err();
    let CliError::Run(inner) = &e else {
        panic!("{e:?}")
    };
    assert!(
        matches!(
            inner.downcast_ref::<privq_host::data::DiscoveryError>(),
            Some(privq_host::data::DiscoveryError::Data(
                privq_host::data::DataError::DomainRequired { .. }
            ))
        ) || matches!(
            inner.downcast_ref::<privq_host::data::DataError>(),
            Some(privq_host::data::DataError::DomainRequired { discovery: true })
        ),
        "{e:?}"
    );
    let text = e.to_string();
    for fix in ["--domain FILE", "--domain binary", "--discover-domain"] {
        assert!(text.contains(fix), "{text}");
    }
}

#[test]
fn discovery_is_charged_and_shown_in_the_summary() {
    let Some(input) = nltcs() else { return };
    let base = [
        "synth",
        "--mechanism",
        "mwem",
        "--input",
        &input,
        "--epsilon",
        "1",
        "--rounds",
        "5",
        "--records",
        "20",
        "--seed",
        "7",
    ];
    let mut argv = base.to_vec();
    argv.extend(["--discover-domain", "--discovery-epsilon", "1/2"]);
    let (out, err) = crate::run_with(&argv, "").unwrap();
    assert_eq!(out.lines().count(), 21);
    assert!(
        err.contains("domain discovered privately (ε = 1/2, δ = 1e-6"),
        "{err}"
    );
    assert!(
        err.contains("  1. domain discovery (16 attributes, threshold "),
        "{err}"
    );
    assert!(
        err.contains("under replace-one-record neighbours; n = 21574 treated as public"),
        "{err}"
    );
    assert!(
        err.contains("privacy spent: epsilon = 1 of 1 ((epsilon, delta)-DP"),
        "{err}"
    );
    assert!(err.contains("total: ε = 1 of 1, δ = 1e-6 of 1e-6"), "{err}");
    // Bad discovery parameters are typed errors.
    let mut bad = base.to_vec();
    bad.extend(["--discover-domain", "--discovery-epsilon", "1"]);
    assert!(crate::run_with(&bad, "").is_err());
    let mut bad = base.to_vec();
    bad.extend(["--discover-domain", "--discovery-epsilon", "0"]);
    assert!(matches!(
        crate::run_with(&bad, "").unwrap_err(),
        CliError::Parameter {
            option: "discovery-epsilon",
            ..
        }
    ));
    let mut bad = base.to_vec();
    bad.extend(["--discover-domain", "--discovery-delta", "0"]);
    let e = crate::run_with(&bad, "").unwrap_err();
    assert!(e.to_string().contains("delta in (0, 1)"), "{e}");
    // With a public domain (the binary shorthand) it works as before, pure ε.
    let mut argv = base.to_vec();
    argv.extend(["--domain", "binary"]);
    let (out, err) = crate::run_with(&argv, "").unwrap();
    assert_eq!(out.lines().count(), 21);
    assert!(err.contains("MWEM over 65536 cells"), "{err}");
    assert!(
        err.contains("privacy spent: epsilon = 1 of 1 (pure DP)"),
        "{err}"
    );
    assert!(!err.contains("discover"), "{err}");
}

#[test]
fn adaptive_is_the_default_and_reports_rho_and_epsilon_delta() {
    let dir = crate::ledger_tests::scratch("synth-adaptive");
    let input = dir.join("t.csv");
    let mut text = String::from("city,smoker\n");
    for i in 0..300 {
        text.push_str(["Oslo,1\n", "Rome,0\n", "Oslo,0\n"][i % 3]);
    }
    std::fs::write(&input, text).unwrap();
    let spec = dir.join("dom.json");
    std::fs::write(
        &spec,
        r#"{"attributes": [{"name": "city", "values": ["Oslo", "Rome", "Lima"]},
            {"name": "smoker", "values": ["0", "1"]}]}"#,
    )
    .unwrap();
    let (input, spec) = (input.to_str().unwrap(), spec.to_str().unwrap());
    let base = ["synth", "--input", input, "--domain", spec, "--seed", "2"];
    let mut argv = base.to_vec();
    argv.extend(["--epsilon", "2", "--compare"]);
    let (out, err) = crate::run_with(&argv, "").unwrap();
    assert!(out.starts_with("city,smoker\n"), "{out}");
    assert!(out.lines().count() > 250, "{out}");
    assert!(
        err.contains("adaptive marginals over 2 attributes"),
        "{err}"
    );
    assert!(err.contains("(epsilon = 2.0000, delta = 1e-9)-DP"), "{err}");
    assert!(err.contains("NOT PRIVATE"), "{err}");
    for (extra, option) in [
        (&["--epsilon", "1", "--delta", "0"][..], "delta"),
        (&["--epsilon", "1", "--delta", "NaN"][..], "delta"),
        (
            &["--epsilon", "1", "--workload", "parity:2"][..],
            "workload",
        ),
        (
            &["--epsilon", "1", "--max-model-mib", "0"][..],
            "max-model-mib",
        ),
    ] {
        let mut argv = base.to_vec();
        argv.extend(extra);
        match crate::run_with(&argv, "") {
            Err(CliError::Usage { option: o, .. }) => assert_eq!(o, option),
            other => panic!("{extra:?}: {other:?}"),
        }
    }
    let e = crate::run_with(
        &[
            "synth",
            "--input",
            input,
            "--discover-domain",
            "--epsilon",
            "1",
        ],
        "",
    )
    .unwrap_err();
    assert!(e.to_string().contains("--mechanism mwem"), "{e}");
    // Under add/remove the empty dataset is a neighbour like any other: it
    // runs (refusing would reveal n = 0); with n public it is refused.
    let empty = dir.join("empty.csv");
    std::fs::write(&empty, "city,smoker\n").unwrap();
    let empty = empty.to_str().unwrap();
    let run = [
        "synth",
        "--input",
        empty,
        "--domain",
        spec,
        "--epsilon",
        "1",
    ];
    let (out, _) = crate::run_with(&run, "").unwrap();
    assert!(out.starts_with("city,smoker\n"), "{out}");
    let mut replace = run.to_vec();
    replace.extend(["--neighbours", "replace"]);
    assert!(crate::run_with(&replace, "").is_err());
    let e = crate::run_with(&["synth", "--input", input, "--epsilon", "-1"], "").unwrap_err();
    assert!(
        matches!(
            e,
            CliError::Parameter {
                option: "epsilon",
                ..
            }
        ),
        "{e:?}"
    );
}

/// The defect: D′ = D plus one record with a rare value. With a public domain
/// the universe, and so which rows can appear, is the same on both.
#[test]
fn a_public_domain_gives_neighbours_the_same_universe() {
    let dir = std::env::temp_dir().join(format!("privq-synth-nb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut d = String::from("city,smoker\n");
    for i in 0..200 {
        d.push_str(if i % 2 == 0 { "Oslo,1\n" } else { "Rome,0\n" });
    }
    let d2 = format!("{d}Lima,1\n");
    let (p, p2, spec) = (dir.join("d.csv"), dir.join("d2.csv"), dir.join("dom.json"));
    std::fs::write(&p, d).unwrap();
    std::fs::write(&p2, d2).unwrap();
    std::fs::write(
        &spec,
        r#"{"attributes": [{"name": "city", "values": ["Lima", "Oslo", "Rome"]}, {"name": "smoker", "values": ["0", "1"]}]}"#,
    )
    .unwrap();
    let cells = |path: &PathBuf| {
        let argv = [
            "synth",
            "--mechanism",
            "mwem",
            "--input",
            path.to_str().unwrap(),
            "--domain",
            spec.to_str().unwrap(),
            "--epsilon",
            "1",
            "--rounds",
            "5",
            "--workload",
            "marginals:2",
            "--records",
            "2000",
            "--seed",
            "7",
        ];
        let (out, err) = crate::run_with(&argv, "").unwrap();
        assert!(
            out.contains("Lima,"),
            "Lima must be possible on both: {err}"
        );
        err.lines()
            .find(|l| l.contains("MWEM over"))
            .unwrap()
            .split(" cells")
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(cells(&p), cells(&p2));
    let _ = std::fs::remove_dir_all(dir);
}

/// A two-attribute table whose true one-way probabilities are distinctive
/// numbers (city 210/311, 101/311; smoker 174/311, 137/311).
fn report_table(name: &str) -> (PathBuf, String, String) {
    let dir = crate::ledger_tests::scratch(name);
    let mut text = String::from("city,smoker\n");
    for (row, times) in [("Oslo,1\n", 137), ("Rome,0\n", 101), ("Oslo,0\n", 73)] {
        for _ in 0..times {
            text.push_str(row);
        }
    }
    let input = dir.join("t.csv");
    std::fs::write(&input, text).unwrap();
    let spec = dir.join("dom.json");
    std::fs::write(
        &spec,
        r#"{"attributes": [{"name": "city", "values": ["Oslo", "Rome", "Lima"]},
            {"name": "smoker", "values": ["0", "1"]}]}"#,
    )
    .unwrap();
    let s = |p: PathBuf| p.to_str().unwrap().to_string();
    (dir, s(input), s(spec))
}

const TRUE_ONE_WAY: [&str; 4] = ["0.675241", "0.324759", "0.559486", "0.440514"];

/// No temporary file is left beside the report.
fn no_temporaries(dir: &std::path::Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name();
        assert!(!name.to_string_lossy().ends_with(".tmp"), "{name:?}");
    }
}

fn check_page(html: &str, compare: bool) {
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    assert!(html.trim_end().ends_with("</html>"));
    assert!(html.contains("<svg"));
    // Self-contained: no scripts, links or external resources.
    for bad in ["<script", "<link", "src=", "href=", "https://"] {
        assert!(!html.contains(bad), "{bad}");
    }
    assert!(html.contains("Budget spent per round"));
    assert_eq!(html.contains("NOT PRIVATE"), compare);
    assert_eq!(html.contains("Not computed"), !compare);
    for truth in TRUE_ONE_WAY {
        assert_eq!(html.contains(truth), compare, "{truth}");
    }
}

#[test]
fn the_report_shows_the_budget_and_reads_the_input_only_with_compare() {
    let (dir, input, spec) = report_table("synth-report");
    let page = dir.join("report.html");
    let page_s = page.to_str().unwrap();
    for mechanism in ["adaptive", "mwem"] {
        for compare in [false, true] {
            let mut argv = vec![
                "synth",
                "--mechanism",
                mechanism,
                "--input",
                &input,
                "--domain",
                &spec,
                "--epsilon",
                "1",
                "--seed",
                "5",
                "--report",
                page_s,
            ];
            if mechanism == "mwem" {
                argv.extend(["--rounds", "4", "--workload", "marginals:2"]);
            }
            if compare {
                argv.push("--compare");
            }
            let (out, err) = crate::run_with(&argv, "").unwrap();
            assert!(out.starts_with("city,smoker\n"), "{out}");
            assert!(err.contains("report written to"), "{err}");
            let html = std::fs::read_to_string(&page).unwrap();
            check_page(&html, compare);
            let (unit, guarantee) = match mechanism {
                "adaptive" => ("ρ per round", "(ε = 1.0000, δ = 1e-9)-DP"),
                _ => ("ε per round", "ε = 1 pure DP"),
            };
            assert!(html.contains(unit), "{mechanism}");
            assert!(html.contains(guarantee), "{mechanism}");
            for row in [
                "neighbour relation",
                "model size",
                "rows released",
                "wall time",
            ] {
                assert!(html.contains(row), "{row}");
            }
            assert!(html.contains("5 (fixed: tests and demos only"));
            no_temporaries(&dir);
            std::fs::remove_file(&page).unwrap();
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_bad_report_path_is_refused_before_any_budget_is_spent() {
    let (dir, input, spec) = report_table("synth-report-bad");
    let ledger = dir.join("ledger.json");
    let output = dir.join("out.csv");
    let missing = dir.join("no-such-dir").join("report.html");
    let base = [
        "synth",
        "--input",
        &input,
        "--domain",
        &spec,
        "--epsilon",
        "1",
        "--output",
        output.to_str().unwrap(),
        "--ledger-json",
        ledger.to_str().unwrap(),
        "--report",
    ];
    for mechanism in ["adaptive", "mwem"] {
        let mut argv = base.to_vec();
        argv.extend([missing.to_str().unwrap(), "--mechanism", mechanism]);
        match crate::run_with(&argv, "") {
            Err(CliError::File { path, .. }) => assert_eq!(path, missing),
            other => panic!("{other:?}"),
        }
        // Nothing ran: no ledger, no synthetic data.
        assert!(!ledger.exists() && !output.exists());
    }
    let mut argv = base.to_vec();
    argv.push("-");
    assert!(matches!(
        crate::run_with(&argv, ""),
        Err(CliError::Usage {
            option: "report",
            ..
        })
    ));
    let mut argv = base.to_vec();
    argv.push(output.to_str().unwrap());
    assert!(matches!(
        crate::run_with(&argv, ""),
        Err(CliError::Usage {
            option: "report",
            ..
        })
    ));
    // A run that fails after the report was opened leaves no report behind.
    let page = dir.join("report.html");
    let mut argv = base.to_vec();
    argv.extend([page.to_str().unwrap(), "--rounds", "1"]);
    assert!(crate::run_with(&argv, "").is_err());
    assert!(!page.exists() && !output.exists());
    no_temporaries(&dir);
    std::fs::remove_dir_all(&dir).ok();
}

/// Standard output that takes `room` bytes and then fails, as a closed pipe does
/// after a reader has taken the first rows.
struct FailingAfter {
    room: usize,
    taken: Vec<u8>,
}

impl std::io::Write for FailingAfter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.taken.len() >= self.room {
            return Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "reader gone",
            ));
        }
        let n = buf.len().min(self.room - self.taken.len());
        self.taken.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A step that fails after the budget was spent and rows were streamed still
/// leaves the ledger of the charge (issue 31).
#[test]
fn a_failure_after_streamed_rows_still_writes_the_ledger() {
    let (dir, input, spec) = report_table("synth-fail-after-rows");
    let ledger = dir.join("ledger.json");
    let page = dir.join("report.html");
    for mechanism in ["adaptive", "mwem"] {
        let mut argv = vec![
            "privq",
            "synth",
            "--mechanism",
            mechanism,
            "--input",
            &input,
            "--domain",
            &spec,
            "--epsilon",
            "1",
            "--seed",
            "5",
            "--report",
            page.to_str().unwrap(),
            "--ledger-json",
            ledger.to_str().unwrap(),
        ];
        if mechanism == "mwem" {
            argv.extend(["--rounds", "2", "--workload", "marginals:1"]);
        }
        let cli = <crate::Cli as clap::Parser>::try_parse_from(argv).unwrap();
        let mut stdout = FailingAfter {
            room: 20,
            taken: Vec::new(),
        };
        let mut stderr = Vec::new();
        let result = crate::run(cli, &mut "".as_bytes(), &mut stdout, &mut stderr);
        let err = String::from_utf8(stderr).unwrap();
        assert!(result.is_err(), "{mechanism}: {err}");
        assert!(stdout.taken.starts_with(b"city,smoker\n"), "{mechanism}");
        assert!(err.contains("failed after spending budget"), "{err}");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&ledger).unwrap()).unwrap();
        assert!(!json["charges"].as_array().unwrap().is_empty(), "{json}");
        // The report, rendered after the failing step, was not written.
        assert!(!page.exists(), "{mechanism}");
        std::fs::remove_file(&ledger).unwrap();
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A count table whose total passes the memory cap is refused; under add/remove
/// neighbours (n private) only after the budget file was charged, so the refusal,
/// which depends on the private n, is no free probe. Under replace-one (n public)
/// it is refused before any charge.
#[test]
fn a_count_table_too_large_is_refused_only_after_the_charge_under_add_remove() {
    let dir = crate::ledger_tests::scratch("synth-count-cap");
    let input = dir.join("t.csv");
    // 1 MiB at 56 bytes a record holds 18 724 records; the table declares 20 000.
    std::fs::write(&input, "a,b,count\n0,1,19000\n1,0,1000\n").unwrap();
    let input = input.to_str().unwrap();
    for (neighbours, charged) in [("add-remove", true), ("replace", false)] {
        let budget = dir.join(format!("{neighbours}.budget.json"));
        let argv = [
            "synth",
            "--input",
            input,
            "--domain",
            "binary",
            "--count-column",
            "count",
            "--neighbours",
            neighbours,
            "--epsilon",
            "1",
            "--memory-mib",
            "1",
            "--records",
            "10",
            "--budget-file",
            budget.to_str().unwrap(),
            "--budget-cap",
            "5,1e-6",
        ];
        let e = crate::run_with(&argv, "").unwrap_err().to_string();
        assert!(e.contains("raise --memory-mib"), "{e}");
        assert_eq!(e.contains("charge for this run stands"), charged, "{e}");
        assert_eq!(budget.exists(), charged, "{neighbours}");
        if charged {
            let file = privq_host::accountant::BudgetFile::read(&budget).unwrap();
            assert_eq!(file.charges().len(), 1);
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Under add/remove neighbours the budget file is charged before the input is
/// read, but a refusal that depends only on public parameters (here too few
/// rounds) comes before the charge: it is no probe of the data and costs nothing.
#[test]
fn a_public_parameter_refusal_under_add_remove_charges_nothing() {
    let dir = crate::ledger_tests::scratch("synth-public-refusal");
    let input = dir.join("t.csv");
    std::fs::write(&input, "a,b\n0,1\n1,0\n").unwrap();
    let budget = dir.join("budget.json");
    let argv = [
        "synth",
        "--input",
        input.to_str().unwrap(),
        "--domain",
        "binary",
        "--neighbours",
        "add-remove",
        "--epsilon",
        "1",
        "--rounds",
        "2",
        "--budget-file",
        budget.to_str().unwrap(),
        "--budget-cap",
        "5,1e-6",
    ];
    let e = crate::run_with(&argv, "").unwrap_err().to_string();
    assert!(e.contains("one-way marginals"), "{e}");
    assert!(!budget.exists(), "nothing was charged: {e}");
    std::fs::remove_dir_all(&dir).ok();
}

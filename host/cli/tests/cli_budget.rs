//! `--budget-file`: a dataset's budget across runs of the built `privq` binary.
//! Runs are charged before they release, a run that would exceed the cap releases
//! nothing, parallel runs never exceed the cap together, and a charge survives a
//! process killed right after it.

mod common;

use std::process::{Command, Stdio};

use common::{Dir, TABLE, points, privq, text};

/// The budget file's JSON.
fn read(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// `privq noise` on the demo readings at ε = `eps`, charged to `b.json`.
fn noise<'a>(eps: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "noise",
        "--demo",
        "--epsilon",
        eps,
        "--sensitivity",
        "1",
        "--seed",
        "1",
        "--budget-file",
        "b.json",
    ];
    v.extend(extra);
    v
}

#[test]
fn two_runs_are_charged_and_a_third_past_the_cap_releases_nothing() {
    let d = Dir::new("budget-three");
    d.write("x.csv", TABLE);
    // 1. noise, ε = 1 (creates the file with cap ε = 3).
    let o = privq(&d.0, &noise("1", &["--budget-cap", "3"]), b"");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("budget file b.json: charged ε = 1"));
    // 2. top, ε = 3/2, under the same (replace-one) relation; the cap may be omitted.
    let o = privq(
        &d.0,
        &[
            "top",
            "--input",
            "x.csv",
            "--column",
            "a",
            "--values",
            "0,1",
            "--epsilon",
            "3/2",
            "--neighbours",
            "replace",
            "--seed",
            "2",
            "--budget-file",
            "b.json",
        ],
        b"",
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let json = read(&d.path("b.json"));
    assert_eq!(json["charges"].as_array().unwrap().len(), 2);
    assert_eq!(json["charges"][1]["epsilon"]["num"], 3);
    assert_eq!(json["charges"][1]["epsilon"]["den"], 2);
    // 3. synth (MWEM, ε = 1) would take the total to 7/2 > 3: refused, no output.
    let before = std::fs::read(d.path("b.json")).unwrap();
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
            "--mechanism",
            "mwem",
            "--neighbours",
            "replace",
            "--epsilon",
            "1",
            "--seed",
            "3",
            "--output",
            "out.csv",
            "--budget-file",
            "b.json",
        ],
        b"",
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("exceeded"), "{err}");
    assert!(err.contains("needs ε = 1"), "{err}");
    assert!(err.contains("ε = 5/2"), "spent named: {err}");
    assert!(err.contains("nothing was released"), "{err}");
    assert!(o.stdout.is_empty());
    assert_eq!(std::fs::read(d.path("b.json")).unwrap(), before);
    assert_eq!(d.names(), ["b.json", "b.json.lock", "x.csv"], "no output");
    // A different cap is refused; so is a cap without a file.
    let o = privq(&d.0, &noise("1/4", &["--budget-cap", "4"]), b"");
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("created with cap ε = 3"));
    assert!(o.stdout.is_empty());
    let o = privq(
        &d.0,
        &["noise", "--demo", "--epsilon", "1", "--budget-cap", "3"],
        b"",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--budget-file"));
    assert!(o.stdout.is_empty());
    // What is left still fits.
    let o = privq(&d.0, &noise("1/2", &[]), b"");
    assert!(o.status.success(), "{}", text(&o.stderr));
    // `budget show`: cap, spent, remaining, each charge.
    let o = privq(&d.0, &["budget", "show", "b.json"], b"");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let shown = text(&o.stdout);
    assert!(shown.contains("cap:       ε = 3, δ = 0"), "{shown}");
    assert!(
        shown.contains("spent:     ε = 3, δ = 0 (3 charge(s)"),
        "{shown}"
    );
    assert!(shown.contains("remaining: ε = 0"), "{shown}");
    assert!(shown.contains("privq noise: ε = 1, δ = 0"), "{shown}");
    assert!(shown.contains("privq top: ε = 3/2"), "{shown}");
    let o = privq(&d.0, &["budget", "show", "b.json", "--format", "json"], b"");
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["spent"]["epsilon"]["exact"], "3");
    assert_eq!(json["remaining"]["epsilon"]["exact"], "0");
    assert_eq!(json["format"], "privq-budget");
    // A file that is not a budget file is refused and kept.
    let o = privq(&d.0, &["budget", "show", "x.csv"], b"");
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("not a privq budget file"));
    let o = privq(&d.0, &noise("1", &["--budget-file", "x.csv"]), b"");
    assert!(!o.status.success());
    assert!(o.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(d.path("x.csv")).unwrap(), TABLE);
}

/// Eight runs at ε = 1 against a cap of 5, all at once: exactly five are charged
/// and release, three are refused and release nothing.
#[test]
fn parallel_runs_never_exceed_the_cap_together() {
    let d = Dir::new("budget-parallel");
    let children: Vec<_> = (0..8)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_privq"))
                .args(noise("1", &["--budget-cap", "5"]))
                .current_dir(&d.0)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let ok: Vec<_> = outputs.iter().filter(|o| o.status.success()).collect();
    assert_eq!(ok.len(), 5);
    for o in outputs.iter().filter(|o| !o.status.success()) {
        assert!(o.stdout.is_empty(), "a refused run released nothing");
        assert!(text(&o.stderr).contains("exceeded"), "{}", text(&o.stderr));
    }
    for o in ok {
        assert!(text(&o.stdout).starts_with("device,room,temperature_c\n"));
    }
    let json = read(&d.path("b.json"));
    assert_eq!(json["charges"].as_array().unwrap().len(), 5);
    let o = privq(&d.0, &["budget", "show", "b.json", "--format", "json"], b"");
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["spent"]["epsilon"]["exact"], "5");
    assert!(
        d.names().iter().all(|n| !n.ends_with(".tmp")),
        "{:?}",
        d.names()
    );
}

/// A run killed (SIGKILL) after its charge, in the middle of an interactive
/// session, keeps the charge: the file was synced before anything was answered.
#[test]
fn a_killed_run_keeps_its_charge() {
    let d = Dir::new("budget-kill");
    d.write("pts.csv", &points(200));
    let mut child = Command::new(env!("CARGO_BIN_EXE_privq"))
        .args([
            "distance",
            "interactive",
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
            "--budget-file",
            "b.json",
            "--budget-cap",
            "2",
        ])
        .current_dir(&d.0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The session waits for queries on its open standard input: the charge is on
    // disk once the file appears.
    let path = d.path("b.json");
    let started = std::time::Instant::now();
    while !path.exists() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "no charge"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(!o.status.success());
    let json = read(&path);
    assert_eq!(json["charges"].as_array().unwrap().len(), 1);
    assert_eq!(json["charges"][0]["label"], "privq distance interactive");
    // The next run sees it: ε = 1 of 2 left, so 3/2 is refused.
    let o = privq(
        &d.0,
        &[
            "distance",
            "release",
            "--input",
            "pts.csv",
            "--lo",
            "0,0",
            "--hi",
            "1,1",
            "--epsilon",
            "3/2",
            "--seed",
            "1",
            "--out",
            "syn.json",
            "--budget-file",
            "b.json",
        ],
        b"",
    );
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("exceeded"), "{}", text(&o.stderr));
    assert!(!d.path("syn.json").exists());
}

//! The built `privq` binary on the tester's reproductions: exit codes 0/2/3/4,
//! `--strict`, several inputs and standard input, atomic `simulate` output,
//! `--output -`, saved states and `merge`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("privq-cli-ldp-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn path(&self, f: &str) -> PathBuf {
        self.0.join(f)
    }

    fn s(&self, f: &str) -> String {
        self.path(f).to_str().unwrap().to_string()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn privq(cwd: &Path, args: &[&str], stdin: &[u8]) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_privq"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Simulates `n` GRR reports over 64 items into `name` (+ its campaign).
fn simulate(dir: &Dir, name: &str, n: usize, seed: u64) {
    let o = privq(
        &dir.0,
        &[
            "ldp",
            "simulate",
            "--mechanism",
            "grr",
            "--epsilon",
            "1",
            "--domain",
            "64",
            "--devices",
            &n.to_string(),
            "--seed",
            &seed.to_string(),
            "--output",
            &dir.s(name),
            "--campaign",
            &dir.s("campaign.json"),
        ],
        b"",
    );
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
}

fn aggregate(dir: &Dir, extra: &[&str], stdin: &[u8]) -> Output {
    let mut args = vec!["ldp", "aggregate", "--campaign"];
    let campaign = dir.s("campaign.json");
    args.push(&campaign);
    args.extend_from_slice(extra);
    privq(&dir.0, &args, stdin)
}

#[test]
fn valid_file_exits_0_with_readable_labels() {
    let dir = Dir::new("ok");
    simulate(&dir, "a.pqr", 2000, 7);
    let o = aggregate(&dir, &["--input", &dir.s("a.pqr")], b"");
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains("# grr (epsilon 1, domain 64, query 0) — 2000 reports"),
        "{out}"
    );
}

#[test]
fn crafted_grr_frame_exits_3_with_reason_and_offset() {
    let dir = Dir::new("crafted");
    simulate(&dir, "a.pqr", 2000, 7);
    let mut file = std::fs::read(dir.path("a.pqr")).unwrap();
    let valid = file.len();
    file.extend_from_slice(&[16, 0, 1, 2, 0, 0, 1, 0, 1, 0]);
    file.extend_from_slice(&2_147_483_646u32.to_le_bytes());
    file.extend_from_slice(&[0; 4]);
    std::fs::write(dir.path("bad.pqr"), &file).unwrap();
    let o = aggregate(&dir, &["--input", &dir.s("bad.pqr")], b"");
    let err = text(&o.stderr);
    assert_eq!(code(&o), 3, "{err}");
    assert!(
        err.contains("2000 reports aggregated, 1 frames rejected"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "byte {valid}: frame rejected: report has another domain size"
        )),
        "{err}"
    );
    assert!(text(&o.stdout).contains("2000 reports"));
    // --strict: the same input fails and prints no estimates.
    let strict = aggregate(&dir, &["--input", &dir.s("bad.pqr"), "--strict"], b"");
    assert_eq!(code(&strict), 3);
    assert!(strict.stdout.is_empty());
    assert!(text(&strict.stderr).contains("--strict: no estimates written"));
}

#[test]
fn empty_truncated_and_foreign_inputs_exit_4() {
    let dir = Dir::new("empty");
    simulate(&dir, "a.pqr", 10, 7);
    let file = std::fs::read(dir.path("a.pqr")).unwrap();
    for (name, bytes) in [
        ("empty.pqr", &file[..0]),
        ("cut.pqr", &file[..3]),
        ("header.pqr", &file[..5]),
        ("frame.pqr", &file[..12]),
        (
            "campaign-as-input.pqr",
            br#"{"mechanism": "grr"}"#.as_slice(),
        ),
    ] {
        std::fs::write(dir.path(name), bytes).unwrap();
        let o = aggregate(&dir, &["--input", &dir.s(name)], b"");
        assert_eq!(code(&o), 4, "{name}: {}", text(&o.stderr));
        assert!(o.stdout.is_empty(), "{name}");
        assert!(text(&o.stderr).contains("no usable report was read"));
    }
}

#[test]
fn concatenated_files_several_inputs_and_stdin_aggregate_completely() {
    let dir = Dir::new("concat");
    simulate(&dir, "a.pqr", 2000, 7);
    simulate(&dir, "b.pqr", 500, 8);
    let a = std::fs::read(dir.path("a.pqr")).unwrap();
    let b = std::fs::read(dir.path("b.pqr")).unwrap();
    std::fs::write(dir.path("ab.pqr"), [&a[..], &b[..]].concat()).unwrap();
    let o = aggregate(&dir, &["--input", &dir.s("ab.pqr")], b"");
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("2 file(s)"));
    assert!(text(&o.stderr).contains("2500 reports aggregated, 0 frames rejected"));
    // Two inputs, one of them standard input.
    let o = aggregate(&dir, &["--input", &dir.s("a.pqr"), "--input", "-"], &b);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("— 2500 reports"));
}

#[test]
fn corrupted_lengths_exit_3_and_are_counted() {
    let dir = Dir::new("lengths");
    simulate(&dir, "a.pqr", 2000, 7);
    let mut file = std::fs::read(dir.path("a.pqr")).unwrap();
    file[5] = 0xff;
    file[5 + 15 * 300 + 1] = 0x5a;
    std::fs::write(dir.path("bad.pqr"), &file).unwrap();
    let o = aggregate(&dir, &["--input", &dir.s("bad.pqr")], b"");
    let err = text(&o.stderr);
    assert_eq!(code(&o), 3, "{err}");
    assert!(
        err.contains("1998 reports aggregated, 2 frames rejected, 30 bytes skipped"),
        "{err}"
    );
    assert!(err.contains("2 × frame length differs"), "{err}");
}

#[test]
fn usage_errors_exit_2_naming_the_flag() {
    let dir = Dir::new("usage");
    simulate(&dir, "a.pqr", 10, 7);
    let no_campaign = privq(
        &dir.0,
        &["ldp", "aggregate", "--input", &dir.s("a.pqr")],
        b"",
    );
    assert_eq!(code(&no_campaign), 2);
    assert!(text(&no_campaign.stderr).contains("no campaign"));
    let e710 = privq(
        &dir.0,
        &[
            "ldp",
            "aggregate",
            "--mechanism",
            "grr",
            "--epsilon",
            "710",
            "--domain",
            "64",
            "--input",
            &dir.s("a.pqr"),
        ],
        b"",
    );
    assert_eq!(code(&e710), 2);
    assert!(text(&e710.stderr).contains("--epsilon: epsilon = 710 is too large"));
    let big = privq(
        &dir.0,
        &[
            "ldp",
            "aggregate",
            "--mechanism",
            "olh",
            "--epsilon",
            "1",
            "--domain",
            "2147483646",
            "--input",
            &dir.s("a.pqr"),
        ],
        b"",
    );
    assert_eq!(code(&big), 2);
    assert!(
        text(&big.stderr).contains("--memory-mib"),
        "{}",
        text(&big.stderr)
    );
    let sim710 = privq(
        &dir.0,
        &[
            "ldp",
            "simulate",
            "--mechanism",
            "grr",
            "--epsilon",
            "710",
            "--domain",
            "8",
            "--devices",
            "5",
            "--seed",
            "1",
            "--output",
            &dir.s("x.pqr"),
        ],
        b"",
    );
    assert_eq!(code(&sim710), 2);
    assert!(text(&sim710.stderr).contains("--epsilon"));
    assert!(!dir.path("x.pqr").exists());
}

#[test]
fn simulate_output_is_atomic_and_dash_is_stdout() {
    let dir = Dir::new("atomic");
    std::fs::write(dir.path("keep.pqr"), b"precious").unwrap();
    // Reports too long for a frame: fails; the existing file is untouched.
    let o = privq(
        &dir.0,
        &[
            "ldp",
            "simulate",
            "--mechanism",
            "oue",
            "--epsilon",
            "1",
            "--domain",
            "600000",
            "--devices",
            "3",
            "--seed",
            "1",
            "--output",
            &dir.s("keep.pqr"),
        ],
        b"",
    );
    assert_eq!(code(&o), 2, "{}", text(&o.stderr));
    assert_eq!(std::fs::read(dir.path("keep.pqr")).unwrap(), b"precious");
    // A failure after the reports exist (unwritable campaign path): the report
    // file is not replaced either.
    let o = privq(
        &dir.0,
        &[
            "ldp",
            "simulate",
            "--epsilon",
            "1",
            "--devices",
            "3",
            "--seed",
            "1",
            "--output",
            &dir.s("keep.pqr"),
            "--campaign",
            &dir.s("no/such/dir/c.json"),
        ],
        b"",
    );
    assert_eq!(code(&o), 2);
    assert_eq!(std::fs::read(dir.path("keep.pqr")).unwrap(), b"precious");
    let names: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["keep.pqr"], "temporary files left behind");
    // `--output -`: the report file on standard output, no file named `-`.
    let o = privq(
        &dir.0,
        &[
            "ldp",
            "simulate",
            "--epsilon",
            "1",
            "--devices",
            "3",
            "--seed",
            "1",
            "--output",
            "-",
        ],
        b"",
    );
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert!(o.stdout.starts_with(b"PQRS\x01"));
    assert!(!dir.path("-").exists());
}

#[test]
fn saved_states_merge_to_the_whole() {
    let dir = Dir::new("merge");
    simulate(&dir, "a.pqr", 700, 1);
    simulate(&dir, "b.pqr", 300, 2);
    for (input, state) in [("a.pqr", "a.json"), ("b.pqr", "b.json")] {
        let o = aggregate(
            &dir,
            &["--input", &dir.s(input), "--save-state", &dir.s(state)],
            b"",
        );
        assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    }
    let merged = privq(
        &dir.0,
        &[
            "ldp",
            "merge",
            &dir.s("a.json"),
            &dir.s("b.json"),
            "--format",
            "csv",
        ],
        b"",
    );
    let both = aggregate(
        &dir,
        &[
            "--input",
            &dir.s("a.pqr"),
            "--input",
            &dir.s("b.pqr"),
            "--format",
            "csv",
        ],
        b"",
    );
    assert_eq!(code(&merged), 0, "{}", text(&merged.stderr));
    assert_eq!(text(&merged.stdout), text(&both.stdout));
    assert!(text(&merged.stderr).contains("1000 reports aggregated"));
}

#[test]
fn simulate_sizes_are_capped_by_memory_mib_naming_devices() {
    let dir = Dir::new("sim-cap");
    let argv = [
        "ldp",
        "simulate",
        "--mechanism",
        "oue",
        "--epsilon",
        "1",
        "--domain",
        "100000",
        "--devices",
        "100000",
        "--output",
        "r.pqr",
    ];
    let o = privq(&dir.0, &argv, b"");
    assert_eq!(code(&o), 2, "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("--devices: 100000 devices with 12512-byte reports"),
        "{err}"
    );
    assert!(err.contains("over --memory-mib 1024"), "{err}");
    assert!(!dir.0.join("r.pqr").exists());
    // The cap is a flag: 10 000 small reports pass at the default and fail at 1 MiB.
    let mut small = vec![
        "ldp",
        "simulate",
        "--mechanism",
        "oue",
        "--epsilon",
        "1",
        "--domain",
        "1000",
        "--devices",
        "10000",
        "--output",
        "r.pqr",
        "--seed",
        "1",
    ];
    let o = privq(&dir.0, &small, b"");
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    small.extend(["--memory-mib", "1"]);
    let o = privq(&dir.0, &small, b"");
    assert_eq!(code(&o), 2, "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("need about 2 MiB"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn aggregate_never_overwrites_or_double_counts_its_inputs() {
    let d = Dir::new("own-inputs");
    simulate(&d, "r.pqr", 200, 3);
    let reports = std::fs::read(d.path("r.pqr")).unwrap();
    let campaign = std::fs::read(d.path("campaign.json")).unwrap();
    let r = d.s("r.pqr");
    for (extra, says) in [
        (vec!["--input", &r, "--output", &r], "--output: "),
        (vec!["--input", &r, "--save-state", &r], "--save-state: "),
        (
            vec!["--input", &r, "--output", "campaign.json"],
            "--output: campaign.json is the input file",
        ),
        (vec!["--input", &r, "--input", "r.pqr"], "is given twice"),
        (
            vec!["--input", &r, "--output", "e.csv", "--save-state", "e.csv"],
            "is also --output",
        ),
    ] {
        let o = aggregate(&d, &extra, b"");
        assert_eq!(code(&o), 2, "{extra:?}");
        assert!(
            text(&o.stderr).contains(says),
            "{extra:?}: {}",
            text(&o.stderr)
        );
    }
    assert_eq!(std::fs::read(d.path("r.pqr")).unwrap(), reports);
    assert_eq!(std::fs::read(d.path("campaign.json")).unwrap(), campaign);
    assert!(!d.path("e.csv").exists());
}

//! The built `privq sql` binary: histograms over declared bin edges (`BIN`), with
//! every bin released and `--keys` listing the other group-by columns only.

mod common;

use common::{Dir, privq, text};

/// Twelve devices, two or three readings each, in two regions; two readings far
/// outside the edges (-80 and 99), clamped into the end bins.
const READINGS: &str = "device,region,temp\n\
    d01,north,4.6\nd01,north,-80\nd02,south,22.2\nd02,south,17.6\nd03,north,6.3\n\
    d03,north,-4.9\nd03,north,2.5\nd04,south,21.1\nd04,south,99\nd05,north,5.5\n\
    d06,south,27.7\nd07,north,-3.0\nd08,south,22.0\nd09,north,6.6\nd10,south,17.4\n\
    d11,north,-4.3\nd12,south,19.5\n";

const HISTOGRAM: &str = "SELECT region, BIN(temp, -20, 0, 20, 50) AS band, COUNT(*) AS n \
                         FROM readings GROUP BY region, band";

fn run(d: &Dir, extra: &[&str]) -> std::process::Output {
    let mut argv = vec![
        "sql",
        HISTOGRAM,
        "--table",
        "readings=readings.csv",
        "--privacy-unit",
        "device",
        "--max-groups",
        "2",
        "--max-rows",
        "2",
        "--seed",
        "7",
    ];
    argv.extend_from_slice(extra);
    privq(&d.0, &argv, b"")
}

#[test]
fn a_histogram_releases_every_bin_of_every_listed_key() {
    let d = Dir::new("sql-hist");
    d.write("readings.csv", READINGS);
    let out = run(
        &d,
        &["--keys", "region=north,south,east", "--epsilon", "1000000"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "region,band,n,n_lo,n_hi");
    // At ε = 10⁶ (scale 4·10⁻⁶) the counts are exact: -80 is clamped into the
    // first bin, 99 into the last; east, with no rows, gets every bin at 0.
    let keys_and_counts: Vec<String> = lines[1..]
        .iter()
        .map(|l| l.rsplitn(3, ',').nth(2).unwrap().to_string())
        .collect();
    assert_eq!(
        keys_and_counts,
        [
            "north,\"[-20, 0)\",4",
            "north,\"[0, 20)\",5",
            "north,\"[20, 50]\",0",
            "south,\"[-20, 0)\",0",
            "south,\"[0, 20)\",3",
            "south,\"[20, 50]\",5",
            "east,\"[-20, 0)\",0",
            "east,\"[0, 20)\",0",
            "east,\"[20, 50]\",0",
        ],
        "{stdout}"
    );
    let stderr = text(&out.stderr);
    assert!(stderr.contains("9 group(s) released"), "{stderr}");
    assert!(stderr.contains("public groups"), "{stderr}");
}

#[test]
fn a_histogram_alone_needs_no_keys_and_bins_take_no_keys() {
    let d = Dir::new("sql-hist-keys");
    d.write("readings.csv", READINGS);
    let argv = [
        "sql",
        "SELECT BIN(temp, -20, 0, 20, 50) AS band, COUNT(*) AS n FROM readings GROUP BY band",
        "--table",
        "readings=readings.csv",
        "--epsilon",
        "1",
        "--seed",
        "1",
    ];
    let out = privq(&d.0, &argv, b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let bands: Vec<&str> = stdout
        .lines()
        .skip(1)
        .map(|l| l.split("\",").next().unwrap())
        .collect();
    assert_eq!(bands, ["\"[-20, 0)", "\"[0, 20)", "\"[20, 50]"], "{stdout}");
    // Listing a bin's keys is refused (they come from the edges), before any charge.
    let out = run(&d, &["--keys", "band=a", "--epsilon", "1"]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("\"band\" is a histogram (BIN)"), "{stderr}");
    // Malformed edges: refused with the problem named.
    for (sql, needle) in [
        (
            "SELECT BIN(temp, 0, 0, 1) AS b, COUNT(*) FROM readings GROUP BY b",
            "strictly increasing",
        ),
        (
            "SELECT BIN(temp, 0, region) AS b, COUNT(*) FROM readings GROUP BY b",
            "must be a number literal",
        ),
    ] {
        let argv = [
            "sql",
            sql,
            "--table",
            "readings=readings.csv",
            "--epsilon",
            "1",
        ];
        let out = privq(&d.0, &argv, b"");
        assert!(!out.status.success(), "{sql}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(needle), "{sql}: {stderr}");
    }
}

/// A histogram alone with `--delta`: the bins are public (every one is released), so
/// private selection is refused with the reason, before the budget file is touched.
#[test]
fn private_selection_over_bins_only_is_refused_before_any_charge() {
    let d = Dir::new("sql-hist-delta");
    d.write("readings.csv", READINGS);
    let argv = [
        "sql",
        "SELECT BIN(temp, -20, 0, 20, 50) AS band, COUNT(*) AS n FROM readings GROUP BY band",
        "--table",
        "readings=readings.csv",
        "--privacy-unit",
        "device",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--budget-file",
        "b.json",
        "--budget-cap",
        "3",
    ];
    let out = privq(&d.0, &argv, b"");
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("is a histogram bin") && stderr.contains("every bin is released"),
        "{stderr}"
    );
    assert!(text(&out.stdout).is_empty());
    assert!(
        !d.0.join("b.json").exists(),
        "the refused query touched the budget file"
    );
    // With a plain key as well, (region, bin) pairs are selected privately as before.
    let out = run(&d, &["--delta", "1e-6", "--epsilon", "1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// `privq sql --engine ballista` interrupted by SIGINT or SIGTERM: exit code 130,
/// and the executor's work directory (`$TMPDIR/privq-ballista-*`, shuffle files
/// of raw rows) emptied although no destructor runs, and kept private.
#[cfg(all(unix, feature = "ballista"))]
#[test]
fn an_interrupted_ballista_run_leaves_no_shuffle_files() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let d = Dir::new("sql-ballista-signal");
    // Enough rows (a run of seconds) that the cluster is still at work when the
    // signal comes.
    let mut csv = String::with_capacity(20 << 20);
    csv.push_str("device,region,temp\n");
    for i in 0..1_000_000u32 {
        csv.push_str(&format!("d{},r{},{}.5\n", i % 5000, i % 3, i % 40));
    }
    d.write("big.csv", &csv);
    let work_dirs = |tmp: &std::path::Path| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(tmp)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("privq-ballista-")
            })
            .map(|e| e.path())
            .collect()
    };
    // The executor has begun its job: the work directory holds its shuffle tree.
    let job_started = |tmp: &std::path::Path| {
        work_dirs(tmp)
            .iter()
            .any(|w| std::fs::read_dir(w).is_ok_and(|mut e| e.next().is_some()))
    };
    for signal in ["-INT", "-TERM"] {
        // A private TMPDIR: the work directory is created there.
        let tmp = d.path(&format!("tmp{signal}"));
        std::fs::create_dir_all(&tmp).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_privq"))
            .args([
                "sql",
                "SELECT region, COUNT(*), AVG(temp) FROM t GROUP BY region",
                "--table",
                "t=big.csv",
                "--privacy-unit",
                "device",
                "--bounds",
                "temp=0:40",
                "--keys",
                "region=r0,r1,r2",
                "--engine",
                "ballista",
                "--epsilon",
                "1",
                "--seed",
                "1",
            ])
            .current_dir(&d.0)
            .env("TMPDIR", &tmp)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while !job_started(&tmp) {
            if let Some(status) = child.try_wait().unwrap() {
                let mut err = String::new();
                std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
                panic!("{signal}: ended before its job began: {status:?} {err}");
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "{signal}: the job did not begin: {:?}",
                work_dirs(&tmp)
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        let killed = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("{signal}: still running 60 s after the signal");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(status.code(), Some(130), "{signal}: {status:?}");
        // The work directory is kept, empty and private (removing it would let
        // executor threads still writing re-create it with the default mode).
        let dirs = work_dirs(&tmp);
        assert_eq!(dirs.len(), 1, "{signal}: {dirs:?}");
        let left: Vec<_> = std::fs::read_dir(&dirs[0]).unwrap().collect();
        assert!(
            left.is_empty(),
            "{signal}: left in the work directory: {left:?}"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&dirs[0]).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{signal}");
    }
}

/// `--output` never replaces what the run reads or charges, however the paths are
/// spelled (`./x` and `x`, standard input redirected from the output file), and a
/// directory is refused before anything is charged.
#[test]
fn output_never_replaces_the_table_the_ledger_or_the_budget_file() {
    let d = Dir::new("sql-output");
    d.write("readings.csv", READINGS);
    let keys = ["--keys", "region=north,south", "--epsilon", "1"];
    let refused = |extra: &[&str], stdin: &[u8], why: &str| {
        let mut argv = vec![
            "sql",
            HISTOGRAM,
            "--privacy-unit",
            "device",
            "--budget-file",
            "b.json",
            "--budget-cap",
            "5",
        ];
        argv.extend_from_slice(&keys);
        argv.extend_from_slice(extra);
        let out = privq(&d.0, &argv, stdin);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(why), "{extra:?}: {err}");
        assert!(
            !d.0.join("b.json").exists(),
            "{extra:?}: charged before refusing"
        );
    };
    let table = ["--table", "readings=readings.csv"];
    refused(
        &[
            &table[..],
            &[
                "-o",
                "./l.json",
                "--ledger-json",
                "l.json",
                "--format",
                "json",
            ],
        ]
        .concat(),
        b"",
        "is also the --ledger-json file",
    );
    refused(
        &[&table[..], &["-o", "./b.json", "--format", "json"]].concat(),
        b"",
        "is also the --budget-file file",
    );
    std::fs::create_dir(d.0.join("out")).unwrap();
    for dir in ["out", "out/", "none/"] {
        refused(&[&table[..], &["-o", dir]].concat(), b"", "is a directory");
    }
    // The table on standard input, redirected from the output file.
    let file = std::fs::File::open(d.0.join("readings.csv")).unwrap();
    let mut argv = vec![
        "sql",
        HISTOGRAM,
        "--table",
        "readings=-",
        "-o",
        "readings.csv",
    ];
    argv.extend_from_slice(&["--privacy-unit", "device", "--seed", "1"]);
    argv.extend_from_slice(&keys);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_privq"))
        .args(&argv)
        .current_dir(&d.0)
        .stdin(file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("would replace the private data"));
    assert_eq!(
        std::fs::read_to_string(d.0.join("readings.csv")).unwrap(),
        READINGS
    );
}

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

//! The built `privq` binary never replaces its input or a file that is not a
//! ledger, and probes the `--ledger-json` path before it does any work.

mod common;

use common::{Dir, TABLE, privq, text};

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

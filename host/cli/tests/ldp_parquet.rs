//! `privq ldp export` and `privq ldp aggregate --parquet` (feature `analytics`): the
//! exported table aggregates to exactly what `aggregate --input` prints, from report
//! files (damaged ones included) and from a collector database; a table that crashes
//! the Parquet reader ends the child process, not privq.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use privq_host::Epsilon;
use privq_host::ldp::fleet::{Fleet, MechanismSpec};

/// A scratch directory removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let p =
            std::env::temp_dir().join(format!("privq-cli-parquet-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn eps(num: u64, den: u64) -> Epsilon {
    Epsilon::new(num, den).unwrap()
}

fn privq(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_privq"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn cli_export_then_aggregate_parquet_prints_what_aggregate_input_prints() {
    let dir = Dir::new("cli");
    let s = |f: &str| dir.0.join(f).to_str().unwrap().to_string();
    let o = privq(&[
        "ldp",
        "simulate",
        "--mechanism",
        "oue",
        "--epsilon",
        "1",
        "--domain",
        "32",
        "--devices",
        "3000",
        "--seed",
        "5",
        "--output",
        &s("r.pqr"),
        "--campaign",
        &s("c.json"),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // A damaged copy: its truncated final frame is reported, not exported.
    let mut bytes = std::fs::read(s("r.pqr")).unwrap();
    bytes.truncate(bytes.len() - 3);
    std::fs::write(s("cut.pqr"), &bytes).unwrap();
    let o = privq(&[
        "ldp",
        "export",
        "--input",
        &s("r.pqr"),
        "--out",
        &s("t"),
        "--rows-per-file",
        "700",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("exported 3000 reports"));
    let o = privq(&["ldp", "export", "--input", &s("cut.pqr"), "--out", &s("t2")]);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).contains("truncated final frame"));
    // Refuses to overwrite.
    let o = privq(&["ldp", "export", "--input", &s("r.pqr"), "--out", &s("t")]);
    assert_eq!(o.status.code(), Some(2));
    for format in ["table", "csv"] {
        let a = privq(&[
            "ldp",
            "aggregate",
            "--campaign",
            &s("c.json"),
            "--input",
            &s("r.pqr"),
            "--format",
            format,
        ]);
        let b = privq(&[
            "ldp",
            "aggregate",
            "--campaign",
            &s("c.json"),
            "--parquet",
            &s("t"),
            "--partitions",
            "2",
            "--format",
            format,
        ]);
        assert!(
            a.status.success() && b.status.success(),
            "{}",
            String::from_utf8_lossy(&b.stderr)
        );
        assert_eq!(a.stdout, b.stdout, "{format}");
    }
}

#[test]
fn cli_export_of_concatenated_and_damaged_files_resynchronises_with_campaign() {
    let dir = Dir::new("cli-resync");
    let s = |f: &str| dir.0.join(f).to_str().unwrap().to_string();
    let o = privq(&[
        "ldp",
        "simulate",
        "--mechanism",
        "grr",
        "--epsilon",
        "1",
        "--domain",
        "16",
        "--devices",
        "500",
        "--seed",
        "9",
        "--output",
        &s("r.pqr"),
        "--campaign",
        &s("c.json"),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let one = std::fs::read(s("r.pqr")).unwrap();
    // Two files back to back: every report of both, with or without the campaign.
    std::fs::write(s("twice.pqr"), [one.as_slice(), &one].concat()).unwrap();
    let twice = s("twice.pqr");
    for (out, extra) in [("t1", None), ("t2", Some(s("c.json")))] {
        let out = s(out);
        let mut args = vec!["ldp", "export", "--input", &twice, "--out", &out];
        if let Some(c) = &extra {
            args.extend(["--campaign", c]);
        }
        let o = privq(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("exported 1000 reports (0 undecodable"),
            "{err}"
        );
    }
    // A damaged length prefix in the first copy (GRR frames are 2 + 13 bytes after
    // the 5-byte file header): the campaign's reader skips to the next frame and
    // keeps the rest of both copies; the exit code says something was lost.
    let mut damaged = [one.as_slice(), &one].concat();
    damaged[5 + 15 * 100] = 0xee;
    std::fs::write(s("damaged.pqr"), &damaged).unwrap();
    let o = privq(&[
        "ldp",
        "export",
        "--input",
        &s("damaged.pqr"),
        "--campaign",
        &s("c.json"),
        "--out",
        &s("t3"),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains(&format!("byte {}", 5 + 15 * 100)), "{err}");
    assert!(err.contains("exported 999 reports (0 undecodable"), "{err}");
    // What is exported is what `aggregate --input` accepts from the same file.
    let agg = |source: &str, path: &str| {
        privq(&[
            "ldp",
            "aggregate",
            "--campaign",
            &s("c.json"),
            source,
            path,
            "--format",
            "csv",
        ])
    };
    let (a, b) = (
        agg("--input", &s("damaged.pqr")),
        agg("--parquet", &s("t3")),
    );
    assert_eq!(a.status.code(), Some(3));
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn cli_export_from_a_collector_database_matches_aggregate_db() {
    use privq_collector::store::{Policy, Store};
    use privq_core::upload::{DeviceKey, FrameWriter};
    let dir = Dir::new("db");
    let s = |f: &str| dir.0.join(f).to_str().unwrap().to_string();
    let spec = MechanismSpec::parse("grr", eps(1, 1), 16).unwrap();
    let reports = Fleet::from_weights(&[1.0; 16], 120)
        .unwrap()
        .privatize(&spec, 8)
        .unwrap();
    let db = dir.0.join("c.db");
    {
        let mut store = Store::open(&db).unwrap();
        let key = DeviceKey::new([7; 32]);
        // The collector counts one report per device and kind: a device each.
        let mut frames = Vec::new();
        for (device, r) in reports.iter().enumerate() {
            store.provision(device as u64, &key, eps(100, 1)).unwrap();
            let mut buf = vec![0u8; 512];
            let mut w = FrameWriter::new(&mut buf, device as u64, 1, 0).unwrap();
            w.push(r).unwrap();
            let n = w.finish(&key).unwrap();
            buf.truncate(n);
            frames.push(buf);
        }
        let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
        let (statuses, _) = store
            .submit(&refs, &Policy::default(), &mut Default::default())
            .unwrap();
        assert!(statuses.iter().all(|s| s.acknowledged()), "{statuses:?}");
    }
    let o = privq(&[
        "ldp",
        "export",
        "--db",
        &s("c.db"),
        "--out",
        &s("t"),
        "--rows-per-file",
        "50",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("exported 120 reports"));
    let (db_s, t_s) = (s("c.db"), s("t"));
    let run = |source: [&str; 2]| {
        let mut args = vec!["ldp", "aggregate", "--mechanism", "grr", "--epsilon", "1"];
        args.extend(["--domain", "16", source[0], source[1]]);
        privq(&args)
    };
    let a = run(["--db", &db_s]);
    let b = run(["--parquet", &t_s]);
    assert!(
        a.status.success() && b.status.success(),
        "{}",
        String::from_utf8_lossy(&b.stderr)
    );
    assert_eq!(a.stdout, b.stdout);
}

/// `ldp aggregate --parquet` reads the table in a child process: a table whose
/// footer makes the Parquet reader abort (here a footer the footer walk accepts
/// but the reader reads differently: field 1 declared as an 8-byte binary, which
/// the reader takes as the version varint followed by a list of 2³¹ − 1 row
/// groups, whose reservation fails) ends the child, not privq, which names the
/// table and exits 2 with nothing printed.
#[test]
fn cli_aggregate_parquet_survives_a_table_that_crashes_the_reader() {
    let dir = Dir::new("crash");
    let s = |f: &str| dir.0.join(f).to_str().unwrap().to_string();
    std::fs::write(
        s("c.json"),
        r#"{"mechanism": "grr", "epsilon": "1", "domain": 16, "queries": [0]}"#,
    )
    .unwrap();
    let footer = [
        0x15, 0x02, 0x19, 0x1c, 0x48, 0x01, 0x72, 0x00, 0x16, 0x00, 0x08, 0x02, 0x08, 0x09, 0x08,
        0xfc, 0xff, 0xff, 0xff, 0xff, 0x07, 0x00,
    ];
    assert!(privq_host::ldp::parquet_footer::check_footer(&footer).is_ok());
    let mut file = b"PAR1".to_vec();
    file.extend_from_slice(&footer);
    file.extend_from_slice(&(footer.len() as u32).to_le_bytes());
    file.extend_from_slice(b"PAR1");
    std::fs::create_dir(s("t")).unwrap();
    std::fs::write(dir.0.join("t").join("part-00000.parquet"), &file).unwrap();
    let o = privq(&[
        "ldp",
        "aggregate",
        "--campaign",
        &s("c.json"),
        "--parquet",
        &s("t"),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the Parquet reader crashed on this table"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}

//! `privq synth` with numeric columns declared by their bounds only: the bins are
//! chosen privately (charged to the run's budget, on the ledger), and the
//! synthetic table holds numbers inside the bounds; bad specs and non-numbers are
//! refused naming the attribute (and the line) before anything is released.

mod common;
use common::{Dir, privq, text};

const SPEC: &str = r#"{"attributes": [
  {"name": "age", "bounds": [18, 80], "bins": 8, "integer": true},
  {"name": "income", "bounds": [0, 1000], "bins": 6},
  {"name": "sex", "values": ["f", "m"]}
]}"#;

/// `privq synth` of raw.csv over spec.json (ε = 1, seed 5, replace-one), then `extra`.
fn synth_raw<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "synth",
        "--input",
        "raw.csv",
        "--domain",
        "spec.json",
        "--epsilon",
        "1",
        "--seed",
        "5",
        "--neighbours",
        "replace",
    ];
    args.extend_from_slice(extra);
    args
}

fn raw(rows: usize) -> String {
    let mut s = String::from("age,income,sex\n");
    for i in 0..rows {
        // Ages 18..=80 and incomes with decimals, some beyond the bounds (clamped).
        let age = 18 + (i * 37) % 63;
        let income = (i * 7919 % 120_000) as f64 / 100.0;
        let sex = if i % 3 == 0 { "f" } else { "m" };
        s.push_str(&format!("{age},{income:.2},{sex}\n"));
    }
    s
}

#[test]
fn raw_numbers_in_give_numbers_inside_the_bounds_out() {
    let d = Dir::new("bins-raw");
    d.write("spec.json", SPEC);
    d.write("raw.csv", &raw(3000));
    let out = privq(&d.0, &synth_raw(&[]), b"");
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("private binning (2 numeric attributes"),
        "{err}"
    );
    assert!(err.contains("privq: private binning: rho ="), "{err}");
    let csv = text(&out.stdout);
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("age,income,sex"));
    let mut rows = 0;
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let age: i64 = f[0].parse().unwrap_or_else(|_| panic!("age {:?}", f[0]));
        let income: f64 = f[1].parse().unwrap();
        assert!((18..=80).contains(&age), "{line}");
        assert!((0.0..=1000.0).contains(&income), "{line}");
        assert!(f[2] == "f" || f[2] == "m", "{line}");
        rows += 1;
    }
    // n is public under replace-one neighbours: as many rows as records.
    assert_eq!(rows, 3000);
    // Values spread within their bins: more distinct ages than the 8 bins at most.
    let ages: std::collections::BTreeSet<&str> = csv
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').next())
        .collect();
    assert!(ages.len() > 8, "{ages:?}");
    // --bins-as-labels writes the chosen bins' labels instead.
    let out = privq(&d.0, &synth_raw(&["--bins-as-labels"]), b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).lines().nth(1).unwrap().starts_with("\"["));
}

#[test]
fn bad_bounds_and_non_numbers_are_refused_naming_the_column() {
    let d = Dir::new("bins-bad");
    d.write("raw.csv", &raw(50));
    d.write(
        "bad.json",
        r#"{"attributes": [{"name": "age", "bounds": [80, 18]},
                           {"name": "income", "bounds": [0, 1000]},
                           {"name": "sex", "values": ["f", "m"]}]}"#,
    );
    d.write("spec.json", SPEC);
    let mut table = raw(50);
    table.push_str("41,lots,f\n");
    d.write("text.csv", &table);
    for (input, spec, says) in [
        ("raw.csv", "bad.json", vec!["\"age\"", "LO < HI"]),
        ("text.csv", "spec.json", vec!["income", "lots", "52"]),
    ] {
        for neighbours in ["replace", "add-remove"] {
            let out = privq(
                &d.0,
                &[
                    "synth",
                    "--input",
                    input,
                    "--domain",
                    spec,
                    "--epsilon",
                    "1",
                    "--neighbours",
                    neighbours,
                ],
                b"",
            );
            let err = text(&out.stderr);
            assert!(!out.status.success(), "{input}: {err}");
            assert!(out.stdout.is_empty(), "{input} released something");
            for s in &says {
                assert!(err.contains(s), "{input}: {s:?} not in {err}");
            }
            // Nothing was charged: no ledger is printed.
            assert!(!err.contains("ledger:"), "{err}");
        }
    }
}

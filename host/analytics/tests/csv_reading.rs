//! How the DataFusion engine reads a CSV file must not let one unit change which
//! rows other units have: a quoted value holding newlines across the point where
//! DataFusion would cut a large file into byte ranges (that point depends on every
//! unit's bytes), and a file name DataFusion would read as a pattern.

use std::path::PathBuf;

use privq_analytics::private_sql::totals_csv;
use privq_host::aggregate::{BoundingKey, GroupTotals, Plan, SqlRequest, Table};
use privq_host::{Epsilon, seeded_rng};

fn file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("privq-csv-reading-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn plan() -> Plan {
    SqlRequest::new("SELECT g, COUNT(*) AS n FROM t GROUP BY g")
        .unwrap()
        .tables(["t"])
        .privacy_unit("device", 1, 1)
        .keys("g", ["a", "b", "c"])
        .build(Epsilon::new(1, 1).unwrap())
        .unwrap()
}

fn sorted(mut t: Vec<GroupTotals>) -> Vec<(Vec<String>, u64, u64)> {
    t.sort_by(|a, b| a.key.cmp(&b.key));
    t.into_iter().map(|g| (g.key, g.units, g.rows)).collect()
}

/// 500 kB of filler units in group a; a unit whose quoted note holds 400 kB, then
/// 1 000 lines that look like rows of group c; 500 kB more filler; and `extra`
/// bytes of one more unit (the neighbour) at the end.
fn data(extra: usize) -> String {
    let mut s = String::from("device,g,note\n");
    let mut i = 0;
    let filler = |s: &mut String, i: &mut usize, bytes: usize| {
        let start = s.len();
        while s.len() - start < bytes {
            s.push_str(&format!("f{i:07},a,n\n"));
            *i += 1;
        }
    };
    filler(&mut s, &mut i, 500_000);
    let ghosts: String = (0..1000).map(|j| format!("\nghost{j},c,y")).collect();
    s.push_str(&format!("victim,b,\"x{}{ghosts}\"\n", " ".repeat(400_000)));
    filler(&mut s, &mut i, 500_000);
    if extra > 0 {
        s.push_str(&format!("neighbour,a,{}\n", "z".repeat(extra)));
    }
    s
}

#[test]
fn a_quoted_newline_across_a_partition_boundary_is_one_value() {
    let p = plan();
    let key = BoundingKey::draw(&mut seeded_rng(1));
    for (name, extra) in [("d.csv", 0), ("d_plus_one_unit.csv", 1_000_000)] {
        let text = data(extra);
        assert!(
            text.len() > 1 << 20,
            "the file must be large enough to be split"
        );
        let path = file(name, &text);
        let table = Table::from_csv(text.as_bytes(), &p.columns(), 1 << 22).unwrap();
        let in_process = sorted(p.totals(&table, &key));
        let engine = sorted(totals_csv(&path, &p, key, 1 << 22, 2).unwrap());
        assert_eq!(engine, in_process, "{name}");
        assert!(
            in_process.iter().all(|(k, _, _)| k[0] != "c"),
            "{in_process:?}"
        );
    }
}

#[test]
fn a_file_name_with_pattern_characters_is_refused() {
    let p = plan();
    let key = BoundingKey::draw(&mut seeded_rng(1));
    let path = file("t[1].csv", "device,g,note\nd1,a,n\n");
    file("t1.csv", "device,g,note\nx1,c,n\nx2,c,n\nx3,c,n\n");
    let e = totals_csv(&path, &p, key, 100, 2).unwrap_err();
    assert!(e.to_string().contains("pattern"), "{e}");
}

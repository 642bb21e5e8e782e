//! Audit rev76: hostile inputs fed to both engines.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, DictionaryArray, Float32Array, Float64Array, Int64Array,
    LargeStringArray, StringArray, StringViewArray, UInt64Array,
};
use datafusion::arrow::datatypes::Int32Type;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::parquet::arrow::ArrowWriter;
use privq_analytics::private_sql::{table_parquet, totals_csv, totals_parquet};
use privq_host::aggregate::{BoundingKey, GroupTotals, Plan, SqlRequest, Table};
use privq_host::{Epsilon, seeded_rng};

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("privq-audit76-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn sorted(mut t: Vec<GroupTotals>) -> Vec<GroupTotals> {
    t.sort_by(|a, b| a.key.cmp(&b.key));
    t
}

fn plan(sql: &str, limits: (u32, u32), private: bool) -> Plan {
    let mut r = SqlRequest::new(sql)
        .unwrap()
        .tables(["t"])
        .privacy_unit("device", limits.0, limits.1)
        .bounds("temp", "-20:50".parse().unwrap());
    if private {
        r = r.delta(1e-6);
    } else {
        r = r.keys("region", ["r0", "r1", "r2", "r3"]);
    }
    r.build(Epsilon::new(8, 1).unwrap()).unwrap()
}

/// Writes a Parquet file whose `device` column is `unit`, with `region` and `temp`.
fn parquet_with_unit(name: &str, unit: ArrayRef, n: usize) -> PathBuf {
    let region: StringArray = (0..n).map(|i| Some(format!("r{}", i % 4))).collect();
    let temp: Float64Array = (0..n).map(|i| Some((i % 37) as f64 - 10.0)).collect();
    let batch = RecordBatch::try_from_iter(vec![
        ("device", unit),
        ("region", Arc::new(region) as ArrayRef),
        ("temp", Arc::new(temp) as ArrayRef),
    ])
    .unwrap();
    let path = dir().join(name);
    let props = datafusion::parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(50))
        .build();
    let mut w = ArrowWriter::try_new(
        std::fs::File::create(&path).unwrap(),
        batch.schema(),
        Some(props),
    )
    .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    path
}

/// Compares the totals of both engines (in process, and by 1, 2 and 4 partitions)
/// for `path`: true when they agree.
fn compare_parquet(label: &str, path: &Path) -> bool {
    let mut all_ok = true;
    for (sql, limits, private) in [
        (
            "SELECT region, COUNT(*), SUM(temp) FROM t GROUP BY region",
            (1, 2),
            false,
        ),
        (
            "SELECT region, COUNT(*), SUM(temp) FROM t GROUP BY region",
            (2, 3),
            true,
        ),
    ] {
        let p = plan(sql, limits, private);
        let key = BoundingKey::draw(&mut seeded_rng(11));
        let want = match table_parquet(path, &p.columns(), 1 << 20) {
            Ok(t) => Ok(sorted(p.totals(&t, &key))),
            Err(e) => Err(e.to_string()),
        };
        for parts in [1, 2, 4] {
            let got = totals_parquet(path, &p, key, 1 << 20, parts)
                .map(sorted)
                .map_err(|e| e.to_string());
            if got != want {
                all_ok = false;
                println!(
                    "MISMATCH {label} limits {limits:?} parts {parts}:\n  in-process {want:?}\n  engine     {got:?}"
                );
            }
        }
    }
    if all_ok {
        println!("same {label}");
    }
    all_ok
}

#[test]
fn audit_parquet_unit_types() {
    let n = 400;
    let nan = f64::NAN;
    let neg_nan = -f64::NAN;
    let payload_nan = f64::from_bits(0x7ff8_0000_0000_0001);
    let floats: Vec<f64> = (0..n)
        .map(|i| match i % 8 {
            0 => nan,
            1 => neg_nan,
            2 => payload_nan,
            3 => 0.0,
            4 => -0.0,
            5 => 1e20,
            6 => 0.1,
            _ => 1e-7,
        })
        .collect();
    let mut results = Vec::new();
    let cases: Vec<(&str, ArrayRef)> = vec![
        ("f64", Arc::new(Float64Array::from(floats.clone()))),
        (
            "f32",
            Arc::new(Float32Array::from(
                floats.iter().map(|&x| x as f32).collect::<Vec<_>>(),
            )),
        ),
        (
            "i64",
            Arc::new(Int64Array::from(
                (0..n as i64).map(|i| i % 5 - 2).collect::<Vec<_>>(),
            )),
        ),
        (
            "u64",
            Arc::new(UInt64Array::from(
                (0..n as u64).map(|i| u64::MAX - i % 3).collect::<Vec<_>>(),
            )),
        ),
        (
            "bool",
            Arc::new(BooleanArray::from(
                (0..n).map(|i| i % 3 == 0).collect::<Vec<_>>(),
            )),
        ),
        (
            "dict",
            Arc::new(
                (0..n)
                    .map(|i| ["a", " a", "b\u{3000}", "b"][i % 4])
                    .collect::<DictionaryArray<Int32Type>>(),
            ),
        ),
        (
            "large",
            Arc::new(LargeStringArray::from(
                (0..n)
                    .map(|i| ["a", "a\u{a0}", "\u{2003}b", "b\u{200b}"][i % 4])
                    .collect::<Vec<_>>(),
            )),
        ),
        (
            "view",
            Arc::new(StringViewArray::from(
                (0..n)
                    .map(|i| ["a", " a ", "a long unit text past twelve bytes", "b"][i % 4])
                    .collect::<Vec<_>>(),
            )),
        ),
    ];
    for (label, arr) in cases {
        let path = parquet_with_unit(&format!("unit-{label}.parquet"), arr, n);
        results.push((label, compare_parquet(label, &path)));
    }
    println!("{results:?}");
    assert!(results.iter().all(|(_, same)| *same), "{results:?}");
}

/// CSV: units that differ only in Unicode whitespace / invisible characters.
#[test]
fn audit_csv_unicode_units() {
    let units = [
        "a",
        " a",
        "a\u{a0}",
        "\u{2003}a",
        "a\u{200b}",
        "a\u{feff}",
        "a\u{85}",
        "a\u{2028}",
        "\"a\"",
        "\"a \"",
        "A",
        "a\u{301}",
        "\u{e1}",
    ];
    let mut text = String::from("device,region,temp\n");
    for i in 0..800 {
        let u = units[i % units.len()];
        text.push_str(&format!("{u},r{},{}\n", i % 4, i % 29));
    }
    let path = dir().join("unicode.csv");
    std::fs::write(&path, &text).unwrap();
    for (limits, private) in [((1, 2), false), ((2, 3), true)] {
        let p = plan(
            "SELECT region, COUNT(*), SUM(temp) FROM t GROUP BY region",
            limits,
            private,
        );
        let t = Table::from_csv(text.as_bytes(), &p.columns(), 1 << 20).unwrap();
        let key = BoundingKey::draw(&mut seeded_rng(3));
        let want = sorted(p.totals(&t, &key));
        for parts in [1, 3] {
            assert_eq!(
                sorted(totals_csv(&path, &p, key, 1 << 20, parts).unwrap()),
                want
            );
        }
    }
}

/// The engine stops once its rows pass the cap, as the in-process reader stops at
/// max_rows + 1, and gives the same error (it read and kept the whole file first).
#[test]
fn audit_row_cap_after_full_scan() {
    let mut text = String::from("device,region,temp\n");
    for i in 0..1_000_000 {
        text.push_str(&format!("d{},r{},{}\n", i % 1000, i % 4, i % 29));
    }
    let path = dir().join("big.csv");
    std::fs::write(&path, &text).unwrap();
    let p = plan(
        "SELECT region, COUNT(*), SUM(temp) FROM t GROUP BY region",
        (1, 2),
        false,
    );
    let key = BoundingKey::draw(&mut seeded_rng(3));
    let t0 = std::time::Instant::now();
    let a = Table::from_csv(std::fs::File::open(&path).unwrap(), &p.columns(), 10).unwrap_err();
    let t_in = t0.elapsed();
    let t0 = std::time::Instant::now();
    let b = totals_csv(&path, &p, key, 10, 2).unwrap_err();
    let t_df = t0.elapsed();
    println!("in-process refusal {t_in:?} ({a}); engine refusal {t_df:?} ({b})");
    assert_eq!(a.to_string(), b.to_string());
}

/// An invalid row early in a long file stops the engine too, with the in-process
/// reader's error (the line and the column).
#[test]
fn audit_invalid_row_stops_early() {
    let mut text = String::from("device,region,temp\nd0,r0,1\nd1,r1,x\n");
    for i in 0..200_000 {
        text.push_str(&format!("d{},r{},{}\n", i % 1000, i % 4, i % 29));
    }
    let path = dir().join("invalid-early.csv");
    std::fs::write(&path, &text).unwrap();
    let p = plan(
        "SELECT region, COUNT(*), SUM(temp) FROM t GROUP BY region",
        (1, 2),
        false,
    );
    let key = BoundingKey::draw(&mut seeded_rng(3));
    let a = Table::from_csv(text.as_bytes(), &p.columns(), 1 << 20)
        .and_then(|t| p.check_table(&t).map(|()| t))
        .map(|t| t.rows())
        .unwrap_err();
    for parts in [1, 2] {
        let b = totals_csv(&path, &p, key, 1 << 20, parts).unwrap_err();
        assert_eq!(a.to_string(), b.to_string());
    }
}

#[test]
fn audit_key_not_in_debug() {
    let p = plan(
        "SELECT region, COUNT(*), SUM(temp) FROM t GROUP BY region",
        (1, 2),
        false,
    );
    let key = BoundingKey::draw(&mut seeded_rng(3));
    let dbg = format!("{:?}", p.partial(key));
    assert!(dbg.contains("BoundingKey(..)"), "{dbg}");
}

/// Differential fuzz of the library's engine side (UnitRows: keep, encode/merge
/// in random pieces, finish) against Plan::totals, rows shuffled.
#[test]
fn audit_unit_rows_fuzz() {
    use privq_host::aggregate::{PartialState, PartialTotals, RowReader, UnitRows};
    let vals = [
        "-0", "0", "-1.5", "1e-300", "-1e-300", "2", "2.0", "-20", "49.75", "-3",
    ];
    let mut x: u64 = 987654321;
    let mut next = |m: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    for round in 0..60 {
        let ncols = 1 + (round % 3);
        let names: Vec<String> = (0..ncols).map(|c| format!("v{c}")).collect();
        let mut rows = Vec::new();
        for u in 0..(5 + next(20)) {
            let n = 1 + next(40);
            let groups = 1 + next(6);
            for _ in 0..n {
                let g = next(groups);
                let vs: Vec<&str> = (0..ncols)
                    .map(|_| vals[next(vals.len() as u64) as usize])
                    .collect();
                rows.push(format!("u{u},g{g},{}", vs.join(",")));
            }
        }
        for i in (1..rows.len()).rev() {
            rows.swap(i, next(i as u64 + 1) as usize);
        }
        let text = format!("device,region,{}\n{}\n", names.join(","), rows.join("\n"));
        let limits = (1 + next(3) as u32, 1 + next(4) as u32);
        let sql = format!(
            "SELECT region, COUNT(*), {} FROM t GROUP BY region",
            names
                .iter()
                .map(|n| format!("SUM({n})"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut r = SqlRequest::new(&sql)
            .unwrap()
            .tables(["t"])
            .privacy_unit("device", limits.0, limits.1)
            .delta(1e-6);
        for n in &names {
            r = r.bounds(n, "-20:50".parse().unwrap());
        }
        let p = r.build(Epsilon::new(8, 1).unwrap()).unwrap();
        let table = Table::from_csv(text.as_bytes(), &p.columns(), 1 << 20).unwrap();
        let key = BoundingKey::draw(&mut seeded_rng(round));
        let want = sorted(p.totals(&table, &key));
        // Engine side: per unit, rows in pieces.
        let header: Vec<String> = text
            .lines()
            .next()
            .unwrap()
            .split(',')
            .map(String::from)
            .collect();
        let reader = RowReader::new(&header, &p.columns()).unwrap();
        let part = p.partial(key);
        let mut pieces: std::collections::HashMap<String, Vec<UnitRows>> = Default::default();
        let mut parsed = Vec::new();
        let mut k = String::new();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            let field = |i: usize| -> &str { f.get(i).copied().unwrap_or("").trim() };
            assert!(
                reader
                    .read_encoded(&field, &|_| None, 0, &mut parsed, &mut k)
                    .unwrap()
            );
            let unit = reader.unit_of(&field).unwrap().to_string();
            let bits: Vec<u64> = parsed.iter().map(|x| x.to_bits()).collect();
            let v = pieces.entry(unit.clone()).or_default();
            if v.is_empty() || next(3) == 0 {
                v.push(UnitRows::default());
            }
            let i = next(v.len() as u64) as usize;
            v[i].count(false);
            v[i].keep(&part, Some(&unit), &k, &bits);
        }
        let mut all = PartialTotals::default();
        for (_, v) in pieces {
            let mut merged = UnitRows::default();
            for piece in v {
                let mut b = Vec::new();
                piece.encode_state(&mut b);
                merged.merge_state(&part, &b).unwrap();
            }
            all.add(merged.finish(&part));
        }
        let got = sorted(all.into_totals().unwrap());
        assert_eq!(got, want, "round {round} limits {limits:?}");
    }
}

fn vm_hwm_kb() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn big_csv(name: &str, rows: u64) -> PathBuf {
    use std::io::Write;
    let path = dir().join(name);
    let mut w = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    writeln!(w, "device,region,temp").unwrap();
    for i in 0..rows {
        writeln!(w, "d{},r{},{}", i % 10, i % 4, i % 29).unwrap();
    }
    path
}

/// Peak memory of the engine's refusal of a table over the row cap: the query
/// stops once the rows pass the cap, so a file of 3·10⁶ rows costs no more than
/// one of 10⁵ (it kept every row before: about 90 MB more). Measured in a
/// process of its own ([`audit_row_cap_memory_child`]): the peak is the process's.
#[test]
fn audit_row_cap_memory() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "audit_row_cap_memory_child", "--nocapture"])
        .env("PRIVQ_AUDIT76_MEMORY", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}");
    assert!(out.status.success(), "{text}");
    assert!(text.contains("peak RSS"), "{text}");
}

/// The measure of [`audit_row_cap_memory`] (nothing unless run by it).
#[test]
fn audit_row_cap_memory_child() {
    if std::env::var_os("PRIVQ_AUDIT76_MEMORY").is_none() {
        return;
    }
    let small = big_csv("small-mem.csv", 100_000);
    let big = big_csv("big-mem.csv", 3_000_000);
    let p = plan(
        "SELECT region, COUNT(*), SUM(temp) FROM t GROUP BY region",
        (1, 2),
        false,
    );
    let key = BoundingKey::draw(&mut seeded_rng(3));
    let want = Table::from_csv(std::fs::File::open(&big).unwrap(), &p.columns(), 10)
        .unwrap_err()
        .to_string();
    // The first refusal sets up what any query costs (runtime, threads, buffers).
    let e = totals_csv(&small, &p, key, 10, 1).unwrap_err();
    assert_eq!(e.to_string(), want);
    let before = vm_hwm_kb();
    let e = totals_csv(&big, &p, key, 10, 1).unwrap_err();
    let after = vm_hwm_kb();
    println!("engine refusal ({e}) with max_rows 10: peak RSS {before} kB -> {after} kB");
    assert_eq!(e.to_string(), want);
    assert!(
        after < before + 15_000,
        "peak RSS grew by {} kB reading past the cap",
        after - before
    );
}

/// Inputs on which the two engines disagree on whether to release.
#[test]
fn audit_refusal_mismatches() {
    let p = plan(
        "SELECT region, COUNT(*), SUM(temp) FROM t GROUP BY region",
        (1, 2),
        false,
    );
    let key = BoundingKey::draw(&mut seeded_rng(3));
    for (i, text) in [
        "device,region,temp,x,x\nd,r0,1,a,b\n",
        "device,region,temp,\nd,r0,1,\n",
        "device,region,temp,\"\"\"\"\nd,r0,1,z\n",
    ]
    .iter()
    .enumerate()
    {
        let path = dir().join(format!("mm{i}.csv"));
        std::fs::write(&path, text).unwrap();
        let a = Table::from_csv(text.as_bytes(), &p.columns(), 100)
            .map(|t| sorted(p.totals(&t, &key)))
            .map_err(|e| e.to_string());
        let b = totals_csv(&path, &p, key, 100, 2)
            .map(sorted)
            .map_err(|e| e.to_string());
        assert_eq!(a, b, "{text:?}");
        assert!(a.is_ok(), "{text:?}: {a:?}");
    }
    // A directory named *.parquet: DataFusion reads every file in it.
    let d = dir().join("many.parquet");
    std::fs::create_dir_all(&d).unwrap();
    for f in ["a", "b"] {
        let unit: ArrayRef = Arc::new(StringArray::from(vec!["u"; 10]));
        let src = parquet_with_unit(&format!("part-{f}.parquet"), unit, 10);
        std::fs::rename(src, d.join(format!("{f}.parquet"))).unwrap();
    }
    let a = table_parquet(&d, &p.columns(), 100)
        .map(|t| t.rows())
        .map_err(|e| e.to_string());
    let b = totals_parquet(&d, &p, key, 100, 2)
        .map(sorted)
        .map_err(|e| e.to_string());
    assert!(a.is_err(), "{a:?}");
    assert_eq!(a.clone().unwrap_err(), b.unwrap_err());
    // A directory as a CSV table: refused alike.
    let d = dir().join("many.csv");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("a.csv"), "device,region,temp\nd,r0,1\n").unwrap();
    let c = totals_csv(&d, &p, key, 100, 2)
        .map(sorted)
        .map_err(|e| e.to_string());
    assert_eq!(c.unwrap_err(), a.unwrap_err());
}

/// A plan that reads no column: rows counted alike (quoted newlines, blank lines).
#[test]
fn audit_count_only() {
    let p = SqlRequest::new("SELECT COUNT(*) FROM t")
        .unwrap()
        .tables(["t"])
        .build(Epsilon::new(8, 1).unwrap())
        .unwrap();
    let key = BoundingKey::draw(&mut seeded_rng(3));
    for (i, text) in [
        "a,b\n1,\"x\ny\"\n\n2,3\n\r\n4,5",
        "a,b\n\"1\n\n\",2\n3,4\n",
        "a\n\n\n1\n \n2\n",
    ]
    .iter()
    .enumerate()
    {
        let path = dir().join(format!("count{i}.csv"));
        std::fs::write(&path, text).unwrap();
        let a = Table::from_csv(text.as_bytes(), &p.columns(), 100)
            .map(|t| sorted(p.totals(&t, &key)))
            .map_err(|e| e.to_string());
        let b = totals_csv(&path, &p, key, 100, 2)
            .map(sorted)
            .map_err(|e| e.to_string());
        assert_eq!(a, b, "{text:?}");
    }
}

/// Differential fuzz of the two CSV readers on quote/CR/blank-line soup.
#[test]
fn audit_csv_reader_fuzz() {
    let p = SqlRequest::new("SELECT g, COUNT(*) FROM t GROUP BY g")
        .unwrap()
        .tables(["t"])
        .privacy_unit("device", 2, 2)
        .delta(1e-6)
        .drop_invalid(true)
        .build(Epsilon::new(8, 1).unwrap())
        .unwrap();
    let key = BoundingKey::draw(&mut seeded_rng(3));
    let alphabet: &[&str] = &[
        "u1", "u2", "a", "b", ",", ",", "\"", "\n", "\n", "\r", "\r\n", " ", "\"\"", "\u{feff}",
        "u1,a\n", "u2,b\n", "\n\n",
    ];
    let mut x: u64 = 42;
    let mut next = |m: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    let mut mismatches = 0;
    let mut oks = 0;
    for i in 0..600 {
        let mut text = String::from("device,g\n");
        let len = 5 + next(40);
        for _ in 0..len {
            text.push_str(alphabet[next(alphabet.len() as u64) as usize]);
        }
        if next(2) == 0 {
            text.push('\n');
        }
        let path = dir().join(format!("fz{i}.csv"));
        std::fs::write(&path, &text).unwrap();
        let a = Table::from_csv(text.as_bytes(), &p.columns(), 100)
            .and_then(|t| p.check_table(&t).map(|()| t))
            .map(|t| sorted(p.totals(&t, &key)));
        let b = totals_csv(&path, &p, key, 100, 2).map(sorted);
        let same = match (&a, &b) {
            (Ok(x), Ok(y)) => {
                oks += usize::from(!x.is_empty());
                x == y
            }
            (Err(_), Err(_)) => true,
            _ => false,
        };
        if !same {
            mismatches += 1;
            println!("MISMATCH {text:?}\n  in-process {a:?}\n  engine     {b:?}");
        }
    }
    println!("{mismatches} mismatches, {oks} non-empty releases alike");
    assert_eq!(mismatches, 0);
}

//! `privq sql` on DataFusion computes exactly the in-process engine's bounded
//! totals, so the same seed releases the same bytes; bad input gets the same error.

use std::path::PathBuf;

use privq_analytics::private_sql::{EngineError, table_parquet, totals_csv, totals_parquet};
use privq_host::aggregate::{AggregateError, BoundingKey, GroupTotals, Plan, SqlRequest, Table};
use privq_host::{Epsilon, seeded_rng};

fn file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("privq-private-sql-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Devices in regions with readings, one heavy device, values outside the bounds,
/// identical rows, and text the filter looks at.
fn readings() -> String {
    let mut csv = String::from("device, region ,temp,kind\n");
    for d in 0..60 {
        for i in 0..(1 + d % 4) {
            let temp = (d * 7 + i * 3) % 90 - 30; // -30..59: some outside -20:50
            let kind = if i % 3 == 0 { "a" } else { "b" };
            csv.push_str(&format!("d{d}, r{} ,{temp}.5,{kind}\n", d % 3));
        }
    }
    for i in 0..10_000 {
        csv.push_str(&format!("heavy,r{},{},a\n", i % 4, i % 7));
    }
    csv.push_str("twin,r0,1,a\ntwin,r0,1,a\ntwin,r0,1,a\ntwin,r0,1e0,a\n");
    csv
}

fn plan(sql: &str, unit: Option<(u32, u32)>, private: bool) -> Plan {
    let mut r = SqlRequest::new(sql)
        .unwrap()
        .tables(["t"])
        .bounds("temp", "-20:50".parse().unwrap());
    if let Some((g, n)) = unit {
        r = r.privacy_unit("device", g, n);
    }
    if private {
        r = r.delta(1e-6);
    } else if sql.contains("region") {
        r = r.keys("region", ["r0", "r1", "r2", "r9"]);
    }
    r.build(Epsilon::new(8, 1).unwrap()).unwrap()
}

fn sorted(mut t: Vec<GroupTotals>) -> Vec<GroupTotals> {
    t.sort_by(|a, b| a.key.cmp(&b.key));
    t
}

/// The in-process and DataFusion totals and releases for one plan and seed.
fn same(plan: &Plan, csv: &PathBuf, seed: u64) {
    let text = std::fs::read_to_string(csv).unwrap();
    let table = Table::from_csv(text.as_bytes(), &plan.columns(), 1 << 20).unwrap();
    let (in_process, _) = plan.release(&table, &mut seeded_rng(seed)).unwrap();
    let mut rng = seeded_rng(seed);
    let key = BoundingKey::draw(&mut rng);
    let engine = totals_csv(csv, plan, key, 1 << 20, 3).unwrap();
    assert_eq!(sorted(engine.clone()), sorted(plan.totals(&table, &key)));
    assert!(!engine.is_empty());
    let mut acct = plan.accountant().unwrap();
    let released = plan.release_totals(engine, &mut acct, &mut rng).unwrap();
    assert_eq!(format!("{released:?}"), format!("{in_process:?}"));
}

#[test]
fn datafusion_releases_what_the_in_process_engine_releases() {
    let csv = file("readings.csv", &readings());
    let cases = [
        (
            "SELECT region, COUNT(*), SUM(temp), AVG(temp), VARIANCE(temp), \
             QUANTILE(temp, 0.5) FROM t GROUP BY region",
            Some((2, 3)),
            false,
        ),
        (
            "SELECT region, COUNT(*), AVG(temp) FROM t WHERE kind = 'a' AND temp > -5 \
             GROUP BY region",
            Some((1, 2)),
            true,
        ),
        (
            "SELECT BIN(temp, -20, 0, 20, 50) AS band, COUNT(*), MEDIAN(temp) FROM t \
             GROUP BY band",
            Some((2, 5)),
            false,
        ),
        (
            "SELECT region, BIN(temp, -20, 10, 50) AS band, STDDEV(temp) FROM t \
             GROUP BY region, band",
            Some((3, 2)),
            true,
        ),
        (
            "SELECT COUNT(*), SUM(temp) FROM t WHERE kind <> 'a'",
            None,
            false,
        ),
    ];
    for (i, (sql, unit, private)) in cases.into_iter().enumerate() {
        let p = plan(sql, unit, private);
        for seed in [1, 2] {
            same(&p, &csv, 100 * i as u64 + seed);
        }
    }
}

#[test]
fn bad_input_gets_the_in_process_error_before_anything() {
    let p = plan(
        "SELECT region, AVG(temp) FROM t GROUP BY region",
        Some((1, 1)),
        false,
    );
    let key = BoundingKey::draw(&mut seeded_rng(1));
    let bad = [
        "device,region\nd,r0\n",
        "device,region,temp\nd,r0,1\ne,r1,inf\nf,r0,x\n",
        "device,region,temp\nd,r0,1\n,r1,2\n",
        "device,region,temp\nd,r0,\n",
        "device,region,temp\n",
        "device,region,temp,temp\nd,r0,1,2\n",
        // Rows with the wrong number of fields: DataFusion's CSV reader fails on
        // them; the engine reports the in-process reader's error instead.
        "device,region,temp\nd,r0,1\ne,r1\nf,r0,2\n",
        "device,region,temp\nd,r0,1\ne,r1,2,3\n",
    ];
    for (i, text) in bad.iter().enumerate() {
        let csv = file(&format!("bad{i}.csv"), text);
        let want = Table::from_csv(text.as_bytes(), &p.columns(), 1 << 20)
            .and_then(|t| p.check_table(&t).map(|()| t))
            .unwrap_err();
        match totals_csv(&csv, &p, key, 1 << 20, 2) {
            Err(EngineError::Aggregate(e)) => assert_eq!(e.to_string(), want.to_string()),
            other => panic!("{text:?}: {other:?}, want {want}"),
        }
    }
    // Too many rows.
    let csv = file("long.csv", "device,region,temp\nd,r0,1\nd,r0,2\nd,r0,3\n");
    assert!(matches!(
        totals_csv(&csv, &p, key, 2, 2),
        Err(EngineError::Aggregate(AggregateError::TooManyRows {
            max: 2
        }))
    ));
}

#[test]
fn dropped_rows_are_dropped_alike() {
    let mut r = SqlRequest::new("SELECT region, COUNT(*), SUM(temp) FROM t GROUP BY region")
        .unwrap()
        .tables(["t"])
        .privacy_unit("device", 1, 2)
        .bounds("temp", "0:10".parse().unwrap())
        .delta(1e-6)
        .drop_invalid(true);
    r = r.neighbours(privq_host::aggregate::Neighbours::Replace);
    let p = r.build(Epsilon::new(4, 1).unwrap()).unwrap();
    let mut text = String::from("device,region,temp\n");
    for d in 0..40 {
        text.push_str(&format!("d{d},r{},{}\n", d % 2, d % 11));
        text.push_str(&format!("d{d},r{},NaN\n,r0,3\n", d % 2));
    }
    let csv = file("lenient.csv", &text);
    same(&p, &csv, 7);
}

/// Not a test: times `COUNT(*), SUM(x), AVG(x) GROUP BY g` over the CSV or Parquet
/// file named by `PRIVQ_SQL_BENCH` (columns `device,g,x`; keys `g0`…`g999`) in process, on
/// DataFusion, and as the plain non-private DataFusion query (and, as the floor of
/// any engine that groups rows by unit, the file read as the engine reads it and
/// counted by unit), and prints the times. `tools/sql-bench-data.py ROWS FILE`
/// writes such a file.
/// `cargo test … --test private_sql -- --ignored --nocapture measure`.
#[test]
#[ignore]
fn measure_overhead() {
    let Ok(path) = std::env::var("PRIVQ_SQL_BENCH") else {
        panic!("set PRIVQ_SQL_BENCH to a CSV or Parquet file of device,g,x");
    };
    let path = PathBuf::from(path);
    // `PRIVQ_SQL_BENCH_MAX_ROWS`: rows per unit kept (10 by default: every unit of
    // the benchmark file within its limits; fewer: every unit over them).
    let max_rows: u32 = std::env::var("PRIVQ_SQL_BENCH_MAX_ROWS").map_or(10, |v| {
        v.parse().expect("PRIVQ_SQL_BENCH_MAX_ROWS: a number")
    });
    println!("max_rows = {max_rows}");
    let keys: Vec<String> = (0..1000).map(|i| format!("g{i}")).collect();
    let plan = SqlRequest::new("SELECT g, COUNT(*), SUM(x), AVG(x) FROM t GROUP BY g")
        .unwrap()
        .tables(["t"])
        .privacy_unit("device", 1, max_rows)
        .bounds("x", "0:100".parse().unwrap())
        .keys("g", keys.iter().map(String::as_str))
        .build(Epsilon::new(1, 1).unwrap())
        .unwrap();
    // `PRIVQ_SQL_BENCH_ONLY`: time only the cases whose name contains it (to
    // profile one engine alone).
    let only = std::env::var("PRIVQ_SQL_BENCH_ONLY").unwrap_or_default();
    let time = |what: &str, f: &mut dyn FnMut() -> String| {
        if !what.contains(&only) {
            return;
        }
        let start = std::time::Instant::now();
        let out = f();
        println!("{what}: {:.2} s ({out})", start.elapsed().as_secs_f64());
    };
    // A `.parquet` file (device and g text, x a double, several row groups: the
    // only source DataFusion splits into partitions; it reads a CSV file with
    // quoted newlines allowed as one) or a CSV file.
    let is_parquet = path.extension().is_some_and(|e| e == "parquet");
    println!("source: {}", if is_parquet { "Parquet" } else { "CSV" });
    time("in process (read, bound, release)", &mut || {
        let table = if is_parquet {
            table_parquet(&path, &plan.columns(), 1 << 30).unwrap()
        } else {
            let file = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
            Table::from_csv(file, &plan.columns(), 1 << 30).unwrap()
        };
        let (r, _) = plan.release(&table, &mut seeded_rng(1)).unwrap();
        format!("{} groups", r.rows().len())
    });
    for partitions in [1, 2] {
        time(
            &format!("datafusion private, {partitions} partition(s)"),
            &mut || {
                let mut rng = seeded_rng(1);
                let key = BoundingKey::draw(&mut rng);
                let totals = if is_parquet {
                    totals_parquet(&path, &plan, key, 1 << 30, partitions)
                } else {
                    totals_csv(&path, &plan, key, 1 << 30, partitions)
                }
                .unwrap();
                let mut acct = plan.accountant().unwrap();
                let r = plan.release_totals(totals, &mut acct, &mut rng).unwrap();
                format!("{} groups", r.rows().len())
            },
        );
        // The cluster's start (a scheduler and an executor on loopback) included.
        #[cfg(feature = "ballista")]
        time(
            &format!("ballista private, {partitions} partition(s)"),
            &mut || {
                use privq_analytics::private_sql::{totals_csv_ballista, totals_parquet_ballista};
                let mut rng = seeded_rng(1);
                let key = BoundingKey::draw(&mut rng);
                let totals = if is_parquet {
                    totals_parquet_ballista(&path, &plan, key, 1 << 30, partitions)
                } else {
                    totals_csv_ballista(&path, &plan, key, 1 << 30, partitions)
                }
                .unwrap();
                let mut acct = plan.accountant().unwrap();
                let r = plan.release_totals(totals, &mut acct, &mut rng).unwrap();
                format!("{} groups", r.rows().len())
            },
        );
        for (what, sql, as_engine) in [
            (
                "plain",
                "SELECT g, COUNT(*), SUM(x), AVG(x) FROM t GROUP BY g",
                false,
            ),
            (
                "plain, read as the engine reads (text, quoted newlines), by unit",
                "SELECT device, COUNT(*) FROM t GROUP BY device",
                true,
            ),
        ] {
            time(
                &format!("datafusion {what}, {partitions} partition(s)"),
                &mut || plain(&path, partitions, sql, as_engine),
            );
        }
    }
}

/// The non-private DataFusion query `sql` over the CSV file `path` (`as_engine`:
/// every column read as text with quoted newlines allowed, as the engine reads).
fn plain(path: &std::path::Path, partitions: usize, sql: &str, as_engine: bool) -> String {
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::prelude::{CsvReadOptions, SessionConfig, SessionContext};
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(partitions)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let ctx = SessionContext::new_with_config(
            SessionConfig::new().with_target_partitions(partitions),
        );
        let schema = Schema::new(
            ["device", "g", "x"]
                .map(|c| Field::new(c, DataType::Utf8, true))
                .to_vec(),
        );
        if path.extension().is_some_and(|e| e == "parquet") {
            let options = datafusion::prelude::ParquetReadOptions::default();
            ctx.register_parquet("t", path.to_str().unwrap(), options)
                .await
                .unwrap();
        } else {
            let options = if as_engine {
                CsvReadOptions::new()
                    .schema(&schema)
                    .newlines_in_values(true)
            } else {
                CsvReadOptions::new()
            };
            ctx.register_csv("t", path.to_str().unwrap(), options)
                .await
                .unwrap();
        }
        let b = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        format!("{} groups", b.iter().map(|b| b.num_rows()).sum::<usize>())
    })
}

/// `text` (a CSV table of `readings()`'s shape) as a Parquet file with typed
/// columns: `device`, ` region ` and `kind` as text, `temp` as `Float64` (a
/// blank as null), `n` as `Int64`, `day` as `Date32` (a type privq does not read),
/// in row groups of 700 rows.
fn parquet(name: &str, text: &str) -> PathBuf {
    use datafusion::arrow::array::{ArrayRef, Date32Array, Float64Array, Int64Array, StringArray};
    use datafusion::arrow::record_batch::RecordBatch;
    use datafusion::parquet::file::properties::WriterProperties;
    use std::sync::Arc;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let col = |i: usize| rows.iter().map(move |r| r[i]);
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            header[0],
            Arc::new(col(0).map(Some).collect::<StringArray>()),
        ),
        (
            header[1],
            Arc::new(col(1).map(Some).collect::<StringArray>()),
        ),
        (
            header[2],
            Arc::new(
                col(2)
                    .map(|t| (!t.trim().is_empty()).then(|| t.trim().parse::<f64>().unwrap()))
                    .collect::<Float64Array>(),
            ),
        ),
        (
            header[3],
            Arc::new(col(3).map(Some).collect::<StringArray>()),
        ),
        (
            "n",
            Arc::new(
                (0..rows.len() as i64)
                    .map(|i| i % 13 - 6)
                    .collect::<Int64Array>(),
            ),
        ),
        (
            "day",
            Arc::new(Date32Array::from(
                (0..rows.len() as i32).collect::<Vec<_>>(),
            )),
        ),
    ];
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(700))
        .build();
    write_parquet(name, &batch, props)
}

/// `batch` written as the Parquet file `name` in this process's scratch directory.
fn write_parquet(
    name: &str,
    batch: &datafusion::arrow::record_batch::RecordBatch,
    props: datafusion::parquet::file::properties::WriterProperties,
) -> PathBuf {
    use datafusion::parquet::arrow::ArrowWriter;
    let dir = std::env::temp_dir().join(format!("privq-private-sql-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let mut w = ArrowWriter::try_new(
        std::fs::File::create(&path).unwrap(),
        batch.schema(),
        Some(props),
    )
    .unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
    path
}

/// [`same`] for a Parquet file: the in-process engine reads it with
/// `table_parquet`.
fn same_parquet(plan: &Plan, path: &std::path::Path, seed: u64) {
    let table = table_parquet(path, &plan.columns(), 1 << 20).unwrap();
    let (in_process, _) = plan.release(&table, &mut seeded_rng(seed)).unwrap();
    let mut rng = seeded_rng(seed);
    let key = BoundingKey::draw(&mut rng);
    let engine = totals_parquet(path, plan, key, 1 << 20, 3).unwrap();
    assert_eq!(sorted(engine.clone()), sorted(plan.totals(&table, &key)));
    assert!(!engine.is_empty());
    let mut acct = plan.accountant().unwrap();
    let released = plan.release_totals(engine, &mut acct, &mut rng).unwrap();
    assert_eq!(format!("{released:?}"), format!("{in_process:?}"));
}

#[test]
fn parquet_releases_alike_on_both_engines() {
    let path = parquet("readings.parquet", &readings());
    for (i, (sql, unit, private)) in [
        (
            "SELECT region, COUNT(*), SUM(temp), AVG(temp), QUANTILE(temp, 0.5) FROM t \
             GROUP BY region",
            Some((2, 3)),
            false,
        ),
        (
            "SELECT region, COUNT(*), AVG(temp) FROM t WHERE kind = 'a' AND n > -3 \
             GROUP BY region",
            Some((1, 2)),
            true,
        ),
        (
            "SELECT COUNT(*), SUM(temp) FROM t WHERE kind <> 'a'",
            None,
            false,
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let p = plan(sql, unit, private);
        same_parquet(&p, &path, 50 + i as u64);
    }
    // The Parquet file and the CSV text release the same bytes.
    let p = plan(
        "SELECT region, COUNT(*), SUM(temp) FROM t GROUP BY region",
        Some((2, 3)),
        false,
    );
    let csv = file("readings-as-csv.csv", &readings());
    let key = BoundingKey::draw(&mut seeded_rng(3));
    assert_eq!(
        sorted(totals_parquet(&path, &p, key, 1 << 20, 2).unwrap()),
        sorted(totals_csv(&csv, &p, key, 1 << 20, 2).unwrap())
    );
}

/// Columns read only as numbers (aggregated values, binned keys) skip their
/// text: the typed values of a Parquet file give exactly the totals of their
/// texts (as `column_text` writes them) in a CSV file — floats with long
/// decimals, -0.0, values past the bounds, NaN and null (dropped), integers past
/// 2^53 (rounded as their decimal text), a `Float32` — on both engines; a
/// column the query also compares (`WHERE`) is read as text.
#[test]
fn parquet_numbers_read_as_their_texts() {
    use datafusion::arrow::array::{ArrayRef, Float32Array, Float64Array, Int64Array, StringArray};
    use datafusion::arrow::record_batch::RecordBatch;
    use privq_analytics::private_sql::{column_numbers, column_text};
    use std::sync::Arc;
    let n = 2_000usize;
    let big = 1i64 << 53;
    let x: Float64Array = (0..n)
        .map(|i| match i % 11 {
            0 => None,
            1 => Some(f64::NAN),
            2 => Some(-0.0),
            3 => Some(1e300),
            4 => Some(0.1 * i as f64),
            _ => Some((i % 70) as f64 / 3.0 - 20.0),
        })
        .collect();
    let k: Int64Array = (0..n as i64)
        .map(|i| Some((i * 7919) % 1000 - 500))
        .collect();
    let h: Float32Array = (0..n).map(|i| Some(i as f32 / 7.0 - 100.0)).collect();
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "device",
            Arc::new(
                (0..n)
                    .map(|i| Some(format!("d{}", i % 300)))
                    .collect::<StringArray>(),
            ),
        ),
        (
            "region",
            Arc::new(
                (0..n)
                    .map(|i| Some(format!("r{}", i % 3)))
                    .collect::<StringArray>(),
            ),
        ),
        ("x", Arc::new(x)),
        ("k", Arc::new(k)),
        ("h", Arc::new(h)),
    ];
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let path = write_parquet("numbers.parquet", &batch, Default::default());
    // Integers past 2^53 (a clamped value's, a binned key's) round as their text.
    let wide: ArrayRef = Arc::new(Int64Array::from(vec![big + 1, big + 3, -big - 5, i64::MAX]));
    let cast = column_numbers(&wide).unwrap().unwrap();
    for (i, t) in column_text(&wide).unwrap().iter().enumerate() {
        assert_eq!(cast.value(i), t.unwrap().parse::<f64>().unwrap());
    }
    // The same rows as the text the old reader wrote for each value.
    let texts: Vec<_> = batch
        .columns()
        .iter()
        .map(|c| column_text(c).unwrap())
        .collect();
    let mut csv = String::from("device,region,x,k,h\n");
    for r in 0..n {
        let row: Vec<&str> = texts
            .iter()
            .map(|t| if t.is_null(r) { "" } else { t.value(r) })
            .collect();
        csv.push_str(&row.join(","));
        csv.push('\n');
    }
    let csv = file("numbers.csv", &csv);
    for (sql, keys) in [
        (
            "SELECT region, COUNT(*), SUM(x), AVG(k), SUM(h) FROM t GROUP BY region",
            true,
        ),
        (
            "SELECT BIN(h, -100, 0, 100, 200) AS b, COUNT(*), SUM(x) FROM t GROUP BY b",
            false,
        ),
        (
            "SELECT region, SUM(x) FROM t WHERE x > 0 GROUP BY region",
            true,
        ),
    ] {
        let mut r = SqlRequest::new(sql)
            .unwrap()
            .tables(["t"])
            .privacy_unit("device", 2, 3)
            .drop_invalid(true);
        for c in ["x", "k", "h"] {
            if sql.contains(&format!("SUM({c})")) || sql.contains(&format!("AVG({c})")) {
                let b = if c == "k" { "-400:400" } else { "-20:50" };
                r = r.bounds(c, b.parse().unwrap());
            }
        }
        if keys {
            r = r.keys("region", ["r0", "r1", "r2"]);
        }
        let plan = r.build(Epsilon::new(1, 1).unwrap()).unwrap();
        let text = std::fs::read_to_string(&csv).unwrap();
        let from_text = Table::from_csv(text.as_bytes(), &plan.columns(), 1 << 20).unwrap();
        let typed = table_parquet(&path, &plan.columns(), 1 << 20).unwrap();
        let key = BoundingKey::draw(&mut seeded_rng(5));
        let expected = sorted(plan.totals(&from_text, &key));
        assert!(!expected.is_empty());
        assert_eq!(sorted(plan.totals(&typed, &key)), expected, "{sql}");
        assert_eq!(
            sorted(totals_parquet(&path, &plan, key, 1 << 20, 2).unwrap()),
            expected,
            "{sql}"
        );
        assert_eq!(
            sorted(totals_csv(&csv, &plan, key, 1 << 20, 2).unwrap()),
            expected,
            "{sql}"
        );
    }
}

#[test]
fn parquet_columns_of_other_types_are_refused_by_both_engines() {
    let path = parquet("typed.parquet", &readings());
    let p = plan(
        "SELECT region, SUM(temp) FROM t WHERE day > 3 GROUP BY region",
        Some((1, 1)),
        false,
    );
    let key = BoundingKey::draw(&mut seeded_rng(1));
    let a = table_parquet(&path, &p.columns(), 1 << 20).unwrap_err();
    let b = totals_parquet(&path, &p, key, 1 << 20, 2).unwrap_err();
    assert!(
        matches!(&a, EngineError::UnsupportedColumn { column, .. } if column == "day"),
        "{a}"
    );
    assert_eq!(a.to_string(), b.to_string());
    // A null value is a missing one: the in-process error, on both engines.
    let mut text = readings();
    text.push_str("late,r1, ,a\n");
    let path = parquet("null.parquet", &text);
    let p = plan(
        "SELECT region, AVG(temp) FROM t GROUP BY region",
        Some((1, 1)),
        false,
    );
    let a = table_parquet(&path, &p.columns(), 1 << 20).unwrap_err();
    let b = totals_parquet(&path, &p, key, 1 << 20, 2).unwrap_err();
    assert!(matches!(a, EngineError::Aggregate(_)), "{a}");
    assert_eq!(a.to_string(), b.to_string());
}

/// A Parquet file naming a column twice (Arrow allows it; a CSV header can too):
/// the in-process reader's typed `DuplicateColumn` on both engines when the query
/// reads that name; when it does not, the same totals, or DataFusion's error when
/// it cannot register the file (the two columns' types differ).
#[test]
fn parquet_duplicate_column_names_are_refused_by_both_engines() {
    use datafusion::arrow::array::{ArrayRef, Float64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::arrow::record_batch::RecordBatch;
    use datafusion::parquet::file::properties::WriterProperties;
    use std::sync::Arc;
    let text = |v: &[&str]| Arc::new(StringArray::from(v.to_vec())) as ArrayRef;
    let sum = plan(
        "SELECT region, SUM(temp) FROM t GROUP BY region",
        Some((1, 1)),
        false,
    );
    let count = SqlRequest::new("SELECT region, COUNT(*) FROM t GROUP BY region")
        .unwrap()
        .tables(["t"])
        .privacy_unit("device", 1, 1)
        .keys("region", ["r1", "r2"])
        .build(Epsilon::new(1, 1).unwrap())
        .unwrap();
    let key = BoundingKey::draw(&mut seeded_rng(1));
    // The second `temp` a double as the first, then text: DataFusion merges the
    // first pair into one column and cannot register the second.
    for (second, values) in [
        (
            DataType::Float64,
            Arc::new(Float64Array::from(vec![4.0, 5.0, 6.0])) as ArrayRef,
        ),
        (DataType::Utf8, text(&["4", "5", "6"])),
    ] {
        let mergeable = second == DataType::Float64;
        let schema = Schema::new(vec![
            Field::new("device", DataType::Utf8, true),
            Field::new("region", DataType::Utf8, true),
            Field::new("temp", DataType::Float64, true),
            Field::new("temp", second, true),
        ]);
        let batch = RecordBatch::try_new(
            Arc::new(schema),
            vec![
                text(&["a", "b", "c"]),
                text(&["r1", "r1", "r2"]),
                Arc::new(Float64Array::from(vec![1.0, 2.0, 3.0])) as ArrayRef,
                values,
            ],
        )
        .unwrap();
        let path = write_parquet(
            &format!("duplicate-{mergeable}.parquet"),
            &batch,
            WriterProperties::builder().build(),
        );
        let a = table_parquet(&path, &sum.columns(), 1 << 20).unwrap_err();
        let b = totals_parquet(&path, &sum, key, 1 << 20, 2).unwrap_err();
        assert!(
            matches!(
                &a,
                EngineError::Aggregate(AggregateError::DuplicateColumn { .. })
            ),
            "{a}"
        );
        assert_eq!(a.to_string(), b.to_string());
        // A query that does not read the repeated name: the same totals, or, where
        // DataFusion cannot register the file, its error (never other totals).
        let table = table_parquet(&path, &count.columns(), 1 << 20).unwrap();
        let engine = totals_parquet(&path, &count, key, 1 << 20, 2);
        if mergeable {
            assert_eq!(sorted(engine.unwrap()), sorted(count.totals(&table, &key)));
        } else {
            assert!(
                matches!(engine, Err(EngineError::DataFusion(_))),
                "{engine:?}"
            );
        }
    }
}

/// Many units over both limits: 300 units with 1 to 60 rows in 1 to 9 groups,
/// two value columns drawn from a few values (so many rows are identical, and
/// `-0`, `0`, negative and tiny values compete in the rank's tie-breaks), rows
/// shuffled.
fn over_limits() -> String {
    let vals = [
        "-0", "0", "-1.5", "1e-300", "2", "2.0", "-20", "49.75", "0.1",
    ];
    let mut rows = Vec::new();
    let mut x: u64 = 12345;
    let mut next = |m: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    for u in 0..300u64 {
        let n = 1 + next(60);
        let groups = 1 + next(9);
        for _ in 0..n {
            let g = next(groups);
            let a = vals[next(vals.len() as u64) as usize];
            let b = vals[next(3) as usize];
            rows.push(format!("u{u},g{g},{a},{b}"));
        }
    }
    for i in (1..rows.len()).rev() {
        rows.swap(i, next(i as u64 + 1) as usize);
    }
    format!("device,region,temp,hum\n{}\n", rows.join("\n"))
}

#[test]
fn units_over_their_limits_keep_the_same_rows_on_every_partitioning() {
    let text = over_limits();
    let csv = file("over.csv", &text);
    let table_for = |p: &Plan| Table::from_csv(text.as_bytes(), &p.columns(), 1 << 20).unwrap();
    for (sql, limits) in [
        (
            "SELECT region, COUNT(*), SUM(temp), AVG(hum), QUANTILE(temp, 0.5) FROM t \
             GROUP BY region",
            (2, 3),
        ),
        (
            "SELECT region, COUNT(*), VARIANCE(temp) FROM t GROUP BY region",
            (1, 1),
        ),
        ("SELECT region, COUNT(*) FROM t GROUP BY region", (3, 7)),
        ("SELECT COUNT(*), SUM(hum) FROM t", (1, 4)),
    ] {
        let mut r = SqlRequest::new(sql)
            .unwrap()
            .tables(["t"])
            .privacy_unit("device", limits.0, limits.1);
        if sql.contains("GROUP BY") {
            r = r.delta(1e-6);
        }
        if sql.contains("temp)") {
            r = r.bounds("temp", "-20:50".parse().unwrap());
        }
        if sql.contains("hum)") {
            r = r.bounds("hum", "-5:5".parse().unwrap());
        }
        let p = r.build(Epsilon::new(8, 1).unwrap()).unwrap();
        let table = table_for(&p);
        for seed in [1, 2, 3] {
            let key = BoundingKey::draw(&mut seeded_rng(seed));
            let want = sorted(p.totals(&table, &key));
            for partitions in [1, 2, 4] {
                let got = totals_csv(&csv, &p, key, 1 << 20, partitions).unwrap();
                assert_eq!(
                    sorted(got),
                    want,
                    "{sql}, seed {seed}, {partitions} partitions"
                );
            }
        }
        same(&p, &csv, 77);
    }
}

/// With nearly one unit per row DataFusion stops aggregating partially (after
/// 100 000 rows of a partition, so 2 × 130 000) and turns rows into states one by one
/// (`convert_to_state`): still the same totals.
#[test]
fn one_row_per_unit_past_the_partial_aggregation_probe() {
    let mut text = String::from("device,region,temp\n");
    for i in 0..260_000 {
        let d = if i % 50 == 0 { i / 2 } else { i };
        text.push_str(&format!("d{d},r{},{}\n", i % 3, i % 61 - 20));
    }
    let csv = file("many-units.csv", &text);
    let p = plan(
        "SELECT region, COUNT(*), SUM(temp) FROM t GROUP BY region",
        Some((1, 1)),
        false,
    );
    let table = Table::from_csv(text.as_bytes(), &p.columns(), 1 << 20).unwrap();
    let key = BoundingKey::draw(&mut seeded_rng(5));
    let want = sorted(p.totals(&table, &key));
    assert_eq!(sorted(totals_csv(&csv, &p, key, 1 << 20, 2).unwrap()), want);
}

/// `privq sql --engine ballista`: the same totals on a Ballista cluster started in
/// this process, so the three engines release the same bytes for the same seed.
#[cfg(feature = "ballista")]
mod ballista {
    use super::*;
    use datafusion::common::DataFusionError;
    use datafusion_proto::logical_plan::LogicalExtensionCodec;
    use privq_analytics::codec::{
        BOUND_TAG, BoundSpec, MAX_BOUND_PAYLOAD_LEN, PrivqCodec, SqlPayloadError, TRIM_PAYLOAD,
        decode_bound, encode_bound,
    };
    use privq_analytics::private_sql::{totals_csv_ballista, totals_parquet_ballista};

    /// In process, on DataFusion and on Ballista, `partitions` partitions: the
    /// same totals and the same release.
    fn three(plan: &Plan, csv: &PathBuf, seed: u64, partitions: usize) {
        let text = std::fs::read_to_string(csv).unwrap();
        let table = Table::from_csv(text.as_bytes(), &plan.columns(), 1 << 20).unwrap();
        let (in_process, _) = plan.release(&table, &mut seeded_rng(seed)).unwrap();
        let release = |engine: Vec<GroupTotals>| {
            let mut rng = seeded_rng(seed);
            let _ = BoundingKey::draw(&mut rng);
            let mut acct = plan.accountant().unwrap();
            format!(
                "{:?}",
                plan.release_totals(engine, &mut acct, &mut rng).unwrap()
            )
        };
        let key = BoundingKey::draw(&mut seeded_rng(seed));
        let datafusion = totals_csv(csv, plan, key, 1 << 20, partitions).unwrap();
        let ballista = totals_csv_ballista(csv, plan, key, 1 << 20, partitions).unwrap();
        assert_eq!(sorted(ballista.clone()), sorted(plan.totals(&table, &key)));
        assert_eq!(sorted(ballista.clone()), sorted(datafusion.clone()));
        let want = format!("{in_process:?}");
        assert_eq!(release(datafusion), want);
        assert_eq!(
            release(ballista),
            want,
            "seed {seed}, {partitions} partitions"
        );
    }

    #[test]
    fn the_three_engines_release_the_same_bytes() {
        // A heavy unit over its limits, values outside the bounds, identical rows.
        let csv = file("three.csv", &readings());
        let cases = [
            (
                "SELECT region, COUNT(*), SUM(temp), AVG(temp), QUANTILE(temp, 0.5) FROM t \
                 GROUP BY region",
                Some((2, 3)),
                false,
            ),
            (
                "SELECT region, BIN(temp, -20, 10, 50) AS band, COUNT(*), STDDEV(temp) FROM t \
                 WHERE kind = 'a' OR temp > 20 GROUP BY region, band",
                Some((1, 2)),
                true,
            ),
            (
                "SELECT COUNT(*), SUM(temp) FROM t WHERE kind <> 'a'",
                None,
                false,
            ),
        ];
        for (i, (sql, unit, private)) in cases.into_iter().enumerate() {
            let p = plan(sql, unit, private);
            for partitions in [1, 2] {
                three(&p, &csv, 10 * i as u64 + partitions as u64, partitions);
            }
        }
        // Units over both limits, shuffled rows: the same rows kept.
        let text = over_limits();
        let csv = file("three-over.csv", &text);
        let p =
            SqlRequest::new("SELECT region, COUNT(*), SUM(temp), AVG(hum) FROM t GROUP BY region")
                .unwrap()
                .tables(["t"])
                .privacy_unit("device", 2, 3)
                .bounds("temp", "-20:50".parse().unwrap())
                .bounds("hum", "-5:5".parse().unwrap())
                .delta(1e-6)
                .build(Epsilon::new(8, 1).unwrap())
                .unwrap();
        three(&p, &csv, 5, 2);
    }

    #[test]
    fn ballista_reads_parquet_as_the_other_engines() {
        let text = readings();
        let path = parquet("three.parquet", &text);
        let p = plan(
            "SELECT region, COUNT(*), AVG(temp) FROM t GROUP BY region",
            Some((2, 3)),
            false,
        );
        let key = BoundingKey::draw(&mut seeded_rng(3));
        assert_eq!(
            sorted(totals_parquet_ballista(&path, &p, key, 1 << 20, 2).unwrap()),
            sorted(totals_parquet(&path, &p, key, 1 << 20, 2).unwrap())
        );
    }

    /// A Parquet file of `rows` rows in row groups of 500: units `u0`..`u36` in
    /// turn (so each unit has rows in every row group), `solo` on the first and
    /// the last row only, and an unread column of 80 incompressible characters a
    /// row, so the file passes DataFusion's 1 MiB threshold for splitting a file
    /// into byte ranges.
    fn split_parquet(name: &str, rows: usize) -> PathBuf {
        use datafusion::arrow::array::{ArrayRef, Float64Array, StringArray};
        use datafusion::arrow::record_batch::RecordBatch;
        use datafusion::parquet::file::properties::WriterProperties;
        use std::sync::Arc;
        let unit = |i: usize| {
            if i == 0 || i == rows - 1 {
                "solo".to_string()
            } else {
                format!("u{}", i % 37)
            }
        };
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut pad = || {
            (0..5)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    format!("{state:016x}")
                })
                .collect::<String>()
        };
        let columns: Vec<(&str, ArrayRef)> = vec![
            (
                "device",
                Arc::new((0..rows).map(|i| Some(unit(i))).collect::<StringArray>()),
            ),
            (
                "region",
                Arc::new(
                    (0..rows)
                        .map(|i| Some(format!("r{}", i % 3)))
                        .collect::<StringArray>(),
                ),
            ),
            (
                "temp",
                Arc::new(
                    (0..rows)
                        .map(|i| (i % 90) as f64 - 30.5)
                        .collect::<Float64Array>(),
                ),
            ),
            (
                "pad",
                Arc::new((0..rows).map(|_| Some(pad())).collect::<StringArray>()),
            ),
        ];
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(500))
            .set_dictionary_enabled(false)
            .build();
        write_parquet(name, &batch, props)
    }

    /// The partitions the scan of `path` has under the cluster's own session
    /// configuration (what its scheduler plans the query with).
    fn cluster_scan_partitions(path: &std::path::Path, partitions: usize) -> usize {
        use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
        use datafusion::prelude::{ParquetReadOptions, SessionContext};
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let work = privq_analytics::ballista::WorkDir::create().unwrap();
        let n = runtime.block_on(async {
            let limits = privq_host::ldp::campaign::Limits::default();
            let cluster =
                privq_analytics::ballista::cluster_session(&limits, partitions, work.path())
                    .await
                    .unwrap();
            let local = SessionContext::new_with_config(cluster.copied_config());
            local
                .register_parquet("t", &path.to_string_lossy(), ParquetReadOptions::default())
                .await
                .unwrap();
            let mut plan: std::sync::Arc<dyn ExecutionPlan> = local
                .sql("SELECT device FROM t")
                .await
                .unwrap()
                .create_physical_plan()
                .await
                .unwrap();
            while let Some(child) = plan.children().first().map(|c| (*c).clone()) {
                plan = child;
            }
            assert!(plan.name().contains("DataSource"), "{}", plan.name());
            plan.output_partitioning().partition_count()
        });
        runtime.shutdown_timeout(std::time::Duration::from_secs(5));
        n
    }

    /// M2: one unit's rows split across scan partitions (so across tasks and
    /// partial states), units over both limits: the cluster's release is the
    /// in-process engine's, byte for byte.
    #[test]
    fn ballista_merges_units_split_across_partitions() {
        let rows = 20_000;
        let path = split_parquet("split.parquet", rows);
        let groups = datafusion::parquet::file::reader::FileReader::metadata(
            &datafusion::parquet::file::serialized_reader::SerializedFileReader::new(
                std::fs::File::open(&path).unwrap(),
            )
            .unwrap(),
        )
        .num_row_groups();
        assert_eq!(groups, rows / 500);
        let partitions = 3;
        let scan = cluster_scan_partitions(&path, partitions);
        // Byte ranges in file order: `solo`'s first row is in the first range,
        // its last in the last; every `u` unit has rows in each range.
        assert!(scan >= 2, "the scan has {scan} partition(s)");
        let p = plan(
            "SELECT region, COUNT(*), SUM(temp), AVG(temp), QUANTILE(temp, 0.5) FROM t \
             GROUP BY region",
            Some((2, 3)),
            false,
        );
        let table = table_parquet(&path, &p.columns(), 1 << 20).unwrap();
        for seed in [1, 2] {
            let (in_process, _) = p.release(&table, &mut seeded_rng(seed)).unwrap();
            let mut rng = seeded_rng(seed);
            let key = BoundingKey::draw(&mut rng);
            let ballista = totals_parquet_ballista(&path, &p, key, 1 << 20, partitions).unwrap();
            assert_eq!(sorted(ballista.clone()), sorted(p.totals(&table, &key)));
            let mut acct = p.accountant().unwrap();
            let released = p.release_totals(ballista, &mut acct, &mut rng).unwrap();
            assert_eq!(
                format!("{released:?}"),
                format!("{in_process:?}"),
                "seed {seed}"
            );
        }
    }

    #[test]
    fn ballista_refuses_what_the_other_engines_refuse() {
        let p = plan(
            "SELECT region, AVG(temp) FROM t GROUP BY region",
            Some((1, 1)),
            false,
        );
        let key = BoundingKey::draw(&mut seeded_rng(1));
        // A refused table is read again in process for its typed error, which
        // would also hide a cluster that fails on everything: each refusal is
        // paired with the same file repaired, which the cluster must total
        // exactly as the in-process engine does.
        let accepts = |name: &str, text: &str, max_rows: usize| {
            let csv = file(name, text);
            let table = Table::from_csv(text.as_bytes(), &p.columns(), max_rows).unwrap();
            let got = totals_csv_ballista(&csv, &p, key, max_rows, 2)
                .unwrap_or_else(|e| panic!("{text:?}: the cluster failed: {e}"));
            assert_eq!(sorted(got), sorted(p.totals(&table, &key)), "{text:?}");
        };
        for (i, (text, repaired)) in [
            (
                "device,region,temp\nd,r0,1\ne,r1,inf\nf,r0,x\n",
                "device,region,temp\nd,r0,1\ne,r1,4\nf,r0,8\n",
            ),
            (
                "device,region,temp\nd,r0,1\ne,r1\nf,r0,2\n",
                "device,region,temp\nd,r0,1\ne,r1,3\nf,r0,2\n",
            ),
        ]
        .iter()
        .enumerate()
        {
            let csv = file(&format!("bbad{i}.csv"), text);
            let want = Table::from_csv(text.as_bytes(), &p.columns(), 1 << 20)
                .and_then(|t| p.check_table(&t).map(|()| t))
                .unwrap_err();
            match totals_csv_ballista(&csv, &p, key, 1 << 20, 2) {
                Err(EngineError::Aggregate(e)) => assert_eq!(e.to_string(), want.to_string()),
                other => panic!("{text:?}: {other:?}, want {want}"),
            }
            accepts(&format!("bgood{i}.csv"), repaired, 1 << 20);
        }
        let long = "device,region,temp\nd,r0,1\nd,r0,2\nd,r0,3\n";
        let csv = file("blong.csv", long);
        assert!(matches!(
            totals_csv_ballista(&csv, &p, key, 2, 2),
            Err(EngineError::Aggregate(AggregateError::TooManyRows {
                max: 2
            }))
        ));
        // One row more allowed: the cluster reads it.
        accepts("blong-ok.csv", long, 3);
        let dir = csv.parent().unwrap();
        let (a, b) = (
            totals_csv(dir, &p, key, 1 << 20, 2).unwrap_err(),
            totals_csv_ballista(dir, &p, key, 1 << 20, 2).unwrap_err(),
        );
        assert!(matches!(b, EngineError::Io(_)), "{b:?}");
        assert_eq!(a.to_string(), b.to_string());
    }

    fn spec() -> BoundSpec {
        BoundSpec {
            plan: plan(
                "SELECT region, BIN(temp, -20, 0.1, 50) AS band, AVG(temp) FROM t \
                 WHERE kind IN ('a', 'b') AND NOT temp <= -7.25 GROUP BY region, band",
                Some((2, 3)),
                false,
            ),
            header: ["device", "region", "temp", "kind"]
                .map(String::from)
                .to_vec(),
            key: BoundingKey::draw(&mut seeded_rng(9)),
            max_rows: 1000,
        }
    }

    fn dferr(e: &DataFusionError) -> Option<&SqlPayloadError> {
        match e {
            DataFusionError::External(e) => e.downcast_ref::<SqlPayloadError>(),
            _ => None,
        }
    }

    /// A payload's plan is held to the checks of a request (`SqlRequest`): too
    /// many key combinations, an untrimmed or empty key, bounds for a column no
    /// aggregate reads, a δ without groups. Each forged payload is refused with
    /// the library's typed error, directly and through the codec.
    #[test]
    fn forged_plans_are_refused_as_requests_are() {
        use serde_json::{Value, json};
        let bytes = encode_bound(&spec()).unwrap();
        let good: Value = serde_json::from_slice(&bytes[BOUND_TAG.len()..]).unwrap();
        assert_eq!(
            good["plan"]["groups"],
            json!({"Public": [["r0"], ["r1"], ["r2"], ["r9"]]})
        );
        let forge = |f: &dyn Fn(&mut Value)| {
            let mut v = good.clone();
            f(&mut v);
            let mut b = BOUND_TAG.to_vec();
            b.extend_from_slice(&serde_json::to_vec(&v).unwrap());
            b
        };
        let bounds = good["plan"]["bounds"][0].clone();
        type Want = fn(&AggregateError) -> bool;
        let cases: Vec<(&str, Vec<u8>, Want)> = vec![
            (
                "10^6 + 1 key combinations",
                {
                    // Written as text: a `Value` of 10^6 lists is large.
                    let text =
                        String::from_utf8(forge(&|v| v["plan"]["groups"] = json!("K"))).unwrap();
                    let many = format!("{{\"Public\":[{}]}}", vec!["[\"k\"]"; 1_000_001].join(","));
                    text.replacen("\"K\"", &many, 1).into_bytes()
                },
                |e| matches!(e, AggregateError::TooManyKeys { max: 1_000_000 }),
            ),
            (
                "an untrimmed key",
                forge(&|v| v["plan"]["groups"] = json!({"Public": [["r0"], [" r1"]]})),
                |e| {
                    matches!(e, AggregateError::UntrimmedKey { column, key }
                        if column == "region" && key == " r1")
                },
            ),
            (
                "an empty key",
                forge(&|v| v["plan"]["groups"] = json!({"Public": [["r0"], [" "]]})),
                |e| matches!(e, AggregateError::EmptyKey(c) if c == "region"),
            ),
            (
                "bounds for a column no aggregate reads",
                forge(&|v| {
                    let mut b = bounds.clone();
                    b[0] = json!("kind");
                    v["plan"]["bounds"].as_array_mut().unwrap().push(b);
                }),
                |e| matches!(e, AggregateError::BoundsNotAggregated { column, .. } if column == "kind"),
            ),
            (
                "a δ without groups",
                forge(&|v| {
                    v["plan"]["group_by"] = json!([]);
                    v["plan"]["bins"] = json!([]);
                    v["plan"]["groups"] = json!({"Private": 1e-6f64.to_bits()});
                }),
                |e| matches!(e, AggregateError::NothingToSelect),
            ),
        ];
        let codec = PrivqCodec::new(Default::default());
        assert!(codec.try_decode_udaf("privq_bound", &bytes).is_ok());
        for (what, forged, want) in cases {
            match decode_bound(&forged) {
                Err(SqlPayloadError::Plan(e)) => assert!(want(&e), "{what}: {e:?}"),
                other => panic!("{what}: {other:?}"),
            }
            let e = codec.try_decode_udaf("privq_bound", &forged).unwrap_err();
            assert!(
                matches!(dferr(&e), Some(SqlPayloadError::Plan(e)) if want(e)),
                "{what}: {e}"
            );
        }
    }

    #[test]
    fn the_bound_payload_round_trips_and_forged_ones_are_refused() {
        let s = spec();
        let bytes = encode_bound(&s).unwrap();
        assert!(bytes.starts_with(BOUND_TAG));
        let back = decode_bound(&bytes).unwrap();
        assert_eq!(back.plan.spec(), s.plan.spec());
        assert_eq!(back.header, s.header);
        assert_eq!(back.key, s.key);
        assert_eq!(back.max_rows, 1000);
        assert_eq!(encode_bound(&back).unwrap(), bytes);
        // Through the codec, by name: the same function back.
        let codec = PrivqCodec::new(Default::default());
        assert!(codec.try_decode_udaf("privq_bound", &bytes).is_ok());
        // Truncated anywhere: a typed error.
        for n in [
            0,
            5,
            BOUND_TAG.len(),
            BOUND_TAG.len() + 1,
            bytes.len() / 2,
            bytes.len() - 1,
        ] {
            let e = decode_bound(&bytes[..n]).unwrap_err();
            assert!(
                matches!(e, SqlPayloadError::Tag | SqlPayloadError::Json(_)),
                "{n}: {e:?}"
            );
            let e = codec
                .try_decode_udaf("privq_bound", &bytes[..n])
                .unwrap_err();
            assert!(dferr(&e).is_some(), "{e}");
        }
        // Oversized.
        let mut long = bytes.clone();
        long.resize(MAX_BOUND_PAYLOAD_LEN + 1, b' ');
        assert!(matches!(
            decode_bound(&long),
            Err(SqlPayloadError::TooLong(n)) if n == MAX_BOUND_PAYLOAD_LEN + 1
        ));
        // Another tag or version.
        let mut other = b"privq-sql-bound/2\n".to_vec();
        other.extend_from_slice(&bytes[BOUND_TAG.len()..]);
        assert!(matches!(decode_bound(&other), Err(SqlPayloadError::Tag)));
        assert!(matches!(
            decode_bound(&bytes[1..]),
            Err(SqlPayloadError::Tag)
        ));
        // Unknown fields, at the top and inside the plan.
        let json = std::str::from_utf8(&bytes[BOUND_TAG.len()..]).unwrap();
        for forged in [
            json.replacen('{', "{\"extra\":1,", 1),
            json.replacen("\"plan\":{", "\"plan\":{\"sensitivity\":0,", 1),
            json.replacen("\"max_rows\"", "\"max_rowz\"", 1),
        ] {
            let mut b = BOUND_TAG.to_vec();
            b.extend_from_slice(forged.as_bytes());
            match decode_bound(&b) {
                Err(SqlPayloadError::Json(e)) => assert!(
                    e.to_string().contains("unknown field") || e.to_string().contains("missing"),
                    "{e}"
                ),
                other => panic!("{forged}: {other:?}"),
            }
        }
        // A plan the library refuses (limits of zero rows), and a header without
        // the plan's columns: refused as the library refuses them.
        let forged = json.replacen("\"max_rows\":3", "\"max_rows\":0", 1);
        assert_ne!(forged, json);
        let mut b = BOUND_TAG.to_vec();
        b.extend_from_slice(forged.as_bytes());
        assert!(matches!(decode_bound(&b), Err(SqlPayloadError::Plan(_))));
        let mut s = spec();
        s.header.retain(|h| h != "kind");
        let b = encode_bound(&s).unwrap();
        assert!(matches!(
            decode_bound(&b),
            Err(SqlPayloadError::Plan(AggregateError::MissingColumn { .. }))
        ));
        // privq_trim: its exact payload only.
        assert!(codec.try_decode_udf("privq_trim", TRIM_PAYLOAD).is_ok());
        for forged in [&b""[..], b"privq-sql-trim/2", b"privq-sql-trim/1x"] {
            let e = codec.try_decode_udf("privq_trim", forged).unwrap_err();
            assert!(matches!(dferr(&e), Some(SqlPayloadError::Tag)), "{e}");
        }
    }
}

//! DataFusion aggregation of Parquet report tables: `privq_aggregate` over several
//! partitions must give exactly the in-process intake's groups, rejection counts and
//! estimates, for several mechanisms, malformed reports included; foreign or damaged
//! tables are errors or counted rejections, never panics. (The `privq ldp export` and
//! `aggregate --parquet` commands are tested in the CLI crate, `tests/ldp_parquet.rs`.)

mod common;

use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, BinaryBuilder, StructArray, UInt8Array, UInt8Builder};
use arrow::datatypes::{DataType, Field, Fields, Schema};
use arrow::record_batch::RecordBatch;
use common::{Dir, assert_same, campaigns, mixed_reports, plan, simulated, write_table};
use parquet::arrow::ArrowWriter;
use privq_analytics::{query, table};
use privq_host::ldp::aggregate::Aggregator;
use privq_host::ldp::campaign::Limits;
use privq_host::ldp::decode::RejectReason;
use privq_host::ldp::intake::Intake;

/// Writes `batch` as the Parquet file `path` with the plain Arrow writer.
fn write_batch(path: &Path, batch: RecordBatch) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

#[test]
fn datafusion_equals_in_process_for_every_mechanism_and_partitioning() {
    let reports = mixed_reports();
    let dir = Dir::new("equal");
    let table_dir = dir.0.join("reports");
    write_table(&table_dir, &reports, 600);
    assert_eq!(query::parquet_files(&table_dir).unwrap(), 7);
    for plan in campaigns() {
        let name = plan.campaign().mechanism.clone();
        // The in-process intake, one pass.
        let mut want = Intake::new(plan.clone());
        want.ingest_reports(reports.iter().map(Vec::as_slice));
        assert!(want.stats().accepted >= 400, "{name}");
        assert!(want.stats().rejected.total() > 300, "{name}");
        assert_eq!(
            want.stats().accepted + want.stats().rejected.total(),
            reports.len() as u64
        );
        // … whose groups are the plain aggregators over the campaign's reports.
        let mut direct: Vec<Aggregator> = Vec::new();
        for q in 0..3u16 {
            if !plan.collects(q) {
                continue;
            }
            let mut agg = Aggregator::new(plan.kind(q)).unwrap();
            for r in &reports {
                if plan.classify(r).is_ok_and(|d| d.header.query.0 == q) {
                    agg.ingest_bytes(r).unwrap();
                }
            }
            direct.push(agg);
        }
        assert_eq!(
            want.to_state().groups,
            direct,
            "{name}: intake vs aggregators"
        );
        for tp in [1, 2, 3] {
            let got = query::aggregate_parquet(&table_dir, &plan, &Limits::default(), tp).unwrap();
            assert_same(&got, &want, &format!("{name}, target_partitions {tp}"));
            assert_eq!(got.stats().inputs, 7);
        }
        // The grouped plan: one intake per kind value, merged.
        let groups =
            query::aggregate_parquet_by_kind(&table_dir, &plan, &Limits::default(), 2).unwrap();
        assert!(groups.len() >= 8, "{name}: {} groups", groups.len());
        assert!(
            groups
                .iter()
                .any(|(k, i)| k.is_none() && i.stats().frames > 0)
        );
        let mut merged = Intake::new(plan.clone());
        for (kind, intake) in &groups {
            merged.merge(intake).unwrap();
            // A group of the campaign's kinds accepts all its rows.
            if let Some(k) = kind
                && plan.collects(k.query)
                && *k == plan.kind(k.query)
            {
                assert_eq!(intake.stats().accepted, intake.stats().frames, "{name}");
            }
        }
        assert_same(&merged, &want, &format!("{name}, GROUP BY kind"));
    }
}

#[test]
fn foreign_and_damaged_tables_are_errors_or_counted_never_panics() {
    let dir = Dir::new("foreign");
    let plan = plan(r#"{"mechanism":"grr","epsilon":"1","domain":16}"#);
    let good = simulated("grr", 16, 0, 10, 1);

    // Nullable report column with nulls, and kind columns that lie.
    let t = dir.0.join("nulls");
    std::fs::create_dir(&t).unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("mechanism", DataType::UInt8, true),
        Field::new("report", DataType::Binary, true),
    ]));
    let mut mech = UInt8Builder::new();
    let mut rep = BinaryBuilder::new();
    for (i, r) in good.iter().enumerate() {
        mech.append_value(3);
        if i % 3 == 0 {
            rep.append_null();
        } else if i % 3 == 1 {
            rep.append_value(&r[..5]);
        } else {
            rep.append_value(r);
        }
    }
    let cols: Vec<ArrayRef> = vec![Arc::new(mech.finish()), Arc::new(rep.finish())];
    write_batch(
        &t.join("x.parquet"),
        RecordBatch::try_new(schema, cols).unwrap(),
    );
    let got = query::aggregate_parquet(&t, &plan, &Limits::default(), 2).unwrap();
    assert_eq!(got.stats().accepted, 3);
    assert_eq!(got.stats().rejected.get(RejectReason::Truncated), 7);

    // No report column: an error.
    let t = dir.0.join("noreport");
    std::fs::create_dir(&t).unwrap();
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::UInt8, false)]));
    let cols = vec![Arc::new(UInt8Builder::new().finish()) as ArrayRef];
    write_batch(
        &t.join("x.parquet"),
        RecordBatch::try_new(schema, cols).unwrap(),
    );
    assert!(query::aggregate_parquet(&t, &plan, &Limits::default(), 2).is_err());

    // A nested column: refused by the footer check before any Parquet reader
    // parses the footer (report tables are flat).
    let t = dir.0.join("nested");
    std::fs::create_dir(&t).unwrap();
    let inner = Fields::from(vec![Field::new("a", DataType::UInt8, false)]);
    let column: ArrayRef = Arc::new(StructArray::new(
        inner.clone(),
        vec![Arc::new(UInt8Array::from(vec![1u8])) as ArrayRef],
        None,
    ));
    let schema = Arc::new(Schema::new(vec![Field::new(
        "s",
        DataType::Struct(inner),
        false,
    )]));
    write_batch(
        &t.join("x.parquet"),
        RecordBatch::try_new(schema, vec![column]).unwrap(),
    );
    let e = query::aggregate_parquet(&t, &plan, &Limits::default(), 1).unwrap_err();
    assert!(matches!(e, query::QueryError::Footer { .. }), "{e}");
    assert!(e.to_string().contains("nested schema"), "{e}");

    // Not Parquet at all, and a truncated Parquet file: errors.
    let t = dir.0.join("junk");
    std::fs::create_dir(&t).unwrap();
    std::fs::write(t.join("a.parquet"), b"PAR1 this is not parquet PAR1").unwrap();
    let e = query::aggregate_parquet(&t, &plan, &Limits::default(), 1).unwrap_err();
    assert!(matches!(e, query::QueryError::NotParquet { .. }), "{e}");
    // A footer that claims more metadata than the file holds (the Parquet
    // reader would subtract past zero).
    std::fs::remove_file(t.join("a.parquet")).unwrap();
    let mut hostile = b"PAR1".to_vec();
    hostile.extend_from_slice(&[0; 8]);
    hostile.extend_from_slice(&u32::MAX.to_le_bytes());
    hostile.extend_from_slice(b"PAR1");
    std::fs::write(t.join("b.parquet"), &hostile).unwrap();
    let e = query::aggregate_parquet(&t, &plan, &Limits::default(), 1).unwrap_err();
    assert!(e.to_string().contains("claims more metadata"), "{e}");
    // A subdirectory, whose rows DataFusion would skip (or read, were its name
    // `k=v`): refused rather than aggregated or not by its name.
    std::fs::remove_file(t.join("b.parquet")).unwrap();
    std::fs::create_dir(t.join("day=1")).unwrap();
    let e = query::aggregate_parquet(&t, &plan, &Limits::default(), 1).unwrap_err();
    assert!(e.to_string().contains("subdirectory"), "{e}");
    let t2 = dir.0.join("cut");
    write_table(&t2, &good, 100);
    let f = t2.join("part-00000.parquet");
    let bytes = std::fs::read(&f).unwrap();
    std::fs::write(&f, &bytes[..bytes.len() / 2]).unwrap();
    assert!(query::aggregate_parquet(&t2, &plan, &Limits::default(), 1).is_err());

    // The writer refuses an existing destination and leaves nothing on drop.
    assert!(table::ReportTableWriter::create(&t2, 10).is_err());
    let t3 = dir.0.join("dropped");
    let mut w = table::ReportTableWriter::create(&t3, 2).unwrap();
    for r in &good {
        w.push(r).unwrap();
    }
    drop(w);
    assert!(!t3.exists());
    assert_eq!(std::fs::read_dir(&dir.0).unwrap().count(), 5);

    // A directory whose name is a glob pattern is read as a directory: its
    // reports, not those of the sibling the pattern would match.
    let (globbed, sibling) = (dir.0.join("t[1]*"), dir.0.join("t1x"));
    write_table(&globbed, &good, 100);
    write_table(&sibling, &simulated("grr", 16, 0, 30, 2), 100);
    let got = query::aggregate_parquet(&globbed, &plan, &Limits::default(), 1).unwrap();
    assert_eq!(got.stats().frames, good.len() as u64);
}

//! Not a fuzz target: writes the seed corpora of every target into
//! `fuzz/corpus/<target>/` and exits (`tools/fuzz.sh` runs it first, with
//! `cargo fuzz run seeds`): valid reports, frames, report files and batches. It is
//! built as a fuzz binary so that it shares the targets' build.
#![no_main]
// The init block exits the process, so the (empty) target body is unreachable.
#![allow(unreachable_code)]

use std::fs;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use privq_fuzz::{DEVICES, frame, parquet_table_footer, report_file, valid_reports};
use privq_collector::http::push_batch;

fn write(target: &str, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    fs::create_dir_all(&dir)?;
    fs::write(dir.join(name), bytes)
}

fn write_all() -> std::io::Result<()> {
    let reports = valid_reports();
    for (i, r) in reports.iter().enumerate() {
        write("report_decode", &format!("report-{i}"), r)?;
    }
    for (i, r) in reports.iter().enumerate().step_by(3) {
        // Mode 0: raw frame; mode 1: the signed part, re-tagged by the target.
        let f = frame(DEVICES[0], 3, i as u32, std::slice::from_ref(r));
        write(
            "frame_open",
            &format!("raw-{i}"),
            &[[0].as_slice(), &f].concat(),
        )?;
        let signed = &f[..f.len() - 32];
        write(
            "frame_open",
            &format!("tagged-{i}"),
            &[[1].as_slice(), signed].concat(),
        )?;
    }
    for which in 0..6u8 {
        let file = report_file(&reports);
        write(
            "report_file",
            &format!("file-{which}"),
            &[[which].as_slice(), &file].concat(),
        )?;
    }
    let mut batch = Vec::new();
    for (i, d) in DEVICES.iter().enumerate() {
        let f = frame(*d, 0, i as u32, &reports[..2]);
        let _ = push_batch(&mut batch, &f);
    }
    write(
        "collector_http",
        "raw-batch",
        &[[0].as_slice(), &batch].concat(),
    )?;
    // Built body: a valid frame of device 1 from seed reports 0 and 1, then its resend.
    write(
        "collector_http",
        "built-batch",
        &[4, 2, 0, 0, 1, 0, 1, 0, 0, 3],
    )?;
    write("store_load", "device-and-reports", &{
        let mut s = vec![4u8, 1, b'4', 3];
        s.extend_from_slice(b"1/2");
        for i in 0..4u8 {
            s.extend_from_slice(&[0, 0, i, 0, i, 0, 1, i, 0, 0]);
        }
        s
    })?;
    write("parquet_footer", "privq-table", &parquet_table_footer())?;
    Ok(())
}

fuzz_target!(
    init: {
        if let Err(e) = write_all() {
            eprintln!("seeds: {e}");
            std::process::exit(1);
        }
        std::process::exit(0);
    },
    |_data: &[u8]| {}
);

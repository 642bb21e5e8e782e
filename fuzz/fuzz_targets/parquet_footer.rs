//! The Parquet footer walk (`ldp::parquet_footer`): any bytes are refused or
//! summarised, without a panic, a hang or an allocation, and what it accepts is
//! bounded as documented. Seeded with the footer of a table shaped like privq's.
//! The `parquet` crate's own decoder is not run here: it can abort the process
//! on crafted footers the walk accepts (it decodes fields by id, the walk by
//! declared type; the fuzzer finds such footers within seconds), which is why
//! `privq ldp aggregate --parquet` reads tables in a child process.
#![no_main]

use libfuzzer_sys::fuzz_target;
use privq_host::ldp::parquet_footer::{MAX_COLUMNS, check_footer};

fuzz_target!(|data: &[u8]| {
    if let Ok(summary) = check_footer(data) {
        assert!(summary.columns <= MAX_COLUMNS);
        assert!(summary.row_groups <= data.len());
    }
});

//! Shared pieces of the privq fuzz targets: a byte cursor that turns fuzz input
//! into structured choices, the keys and devices of the fuzzed collector, frame
//! re-tagging (so the fuzzer reaches the checks behind the HMAC), and the valid
//! reports, frames and files the seed corpora are made from.

use privq_core::Epsilon;
use privq_core::upload::{DeviceKey, FrameWriter, TAG_LEN, tag};
use privq_host::ldp::fleet::{Fleet, MechanismSpec};
use privq_host::ldp::frames::{write_file_header, write_frame};

/// Reads structured choices from fuzz input; past the end it yields zeros / empty.
#[derive(Debug, Clone)]
pub struct Cursor<'a> {
    rest: &'a [u8],
}

impl<'a> Cursor<'a> {
    /// A cursor over `data`.
    pub fn new(data: &'a [u8]) -> Cursor<'a> {
        Cursor { rest: data }
    }

    /// Whether every byte was consumed.
    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// One byte (0 past the end).
    pub fn byte(&mut self) -> u8 {
        let (b, rest) = self
            .rest
            .split_first()
            .map_or((0, &[][..]), |(b, r)| (*b, r));
        self.rest = rest;
        b
    }

    /// A chunk whose length is given by the next byte (shorter at the end).
    pub fn chunk(&mut self) -> &'a [u8] {
        let n = usize::from(self.byte()).min(self.rest.len());
        let (c, rest) = self.rest.split_at(n);
        self.rest = rest;
        c
    }

    /// A chunk with a two-byte little-endian length.
    pub fn long_chunk(&mut self) -> &'a [u8] {
        let n = usize::from(u16::from_le_bytes([self.byte(), self.byte()])).min(self.rest.len());
        let (c, rest) = self.rest.split_at(n);
        self.rest = rest;
        c
    }

    /// Everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.rest)
    }
}

/// Device ids the fuzzed collector knows.
pub const DEVICES: [u64; 3] = [1, 2, 0x0102_0304_0506_0708];

/// The key of device `d` in the fuzz harnesses (device 2 has a documented test-only
/// key, which the default policy refuses).
pub fn key_of(device: u64) -> DeviceKey {
    let mut k = [0u8; 32];
    if device == 2 {
        k[..8].copy_from_slice(&7u64.to_le_bytes());
        k[8..16].copy_from_slice(&device.to_le_bytes());
        k[16..].copy_from_slice(b"NOT-A-REAL-KEY!!");
    } else {
        k[..8].copy_from_slice(&device.to_le_bytes());
        k[8..].fill(0xa5);
    }
    DeviceKey::new(k)
}

/// Makes `signed` (a frame without its tag) authenticate under `key`: writes its
/// length field (when it has one and the result fits 16 bits) and appends the tag.
pub fn retag(signed: &[u8], key: &DeviceKey) -> Vec<u8> {
    let mut f = signed.to_vec();
    if let (Some(field), Ok(len)) = (f.get_mut(5..7), u16::try_from(signed.len() + TAG_LEN)) {
        field.copy_from_slice(&len.to_le_bytes());
    }
    let t = tag(key, &f);
    f.extend_from_slice(&t);
    f
}

/// One valid report of every mechanism (a few parameter sets each).
pub fn valid_reports() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let eps = [Epsilon::new(1, 2), Epsilon::new(2, 1)];
    for name in MechanismSpec::NAMES {
        for (e, domain) in eps.iter().zip([10u32, 300]) {
            let Ok(e) = e else { continue };
            let Ok(spec) = MechanismSpec::parse(name, *e, domain) else {
                continue;
            };
            let Ok(fleet) = Fleet::from_weights(&vec![1.0; domain as usize], 2) else {
                continue;
            };
            if let Ok(batch) = fleet.privatize(&spec, 11) {
                out.extend(batch.iter().map(<[u8]>::to_vec));
            }
        }
    }
    // 1BitMean (bound 10), SQ bit, SQ grid Laplace (grid 2^-4, value 3/16).
    out.push(vec![1, 7, 0, 0, 1, 0, 2, 0, 10, 0, 0, 0, 1]);
    out.push(vec![1, 8, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1]);
    let mut sq = vec![1, 9, 0, 0, 1, 0, 1, 0];
    sq.extend_from_slice(&(-4i32).to_le_bytes());
    sq.extend_from_slice(&(3i64 << 28).to_le_bytes());
    out.push(sq);
    out
}

/// A valid frame of `device` (its key) holding `reports`.
pub fn frame(device: u64, epoch: u32, sequence: u32, reports: &[Vec<u8>]) -> Vec<u8> {
    let mut buf = vec![0u8; 65_535];
    let Ok(mut w) = FrameWriter::new(&mut buf, device, epoch, sequence) else {
        return Vec::new();
    };
    for r in reports {
        if w.push(r).is_err() {
            break;
        }
    }
    let n = w.finish(&key_of(device)).unwrap_or(0);
    buf.truncate(n);
    buf
}

/// A report file (`docs/src/report-format.md`) of `reports`.
pub fn report_file(reports: &[Vec<u8>]) -> Vec<u8> {
    let mut file = Vec::new();
    let _ = write_file_header(&mut file);
    for r in reports {
        let _ = write_frame(&mut file, r);
    }
    file
}

/// A database file for one fuzzing process: under `PRIVQ_FUZZ_DIR` (a tmpfs such
/// as `/dev/shm` keeps SQLite's fsyncs cheap) or the temporary directory.
pub fn db_path(target: &str) -> std::path::PathBuf {
    let dir = std::env::var_os("PRIVQ_FUZZ_DIR").map_or_else(std::env::temp_dir, Into::into);
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("privq-fuzz-{target}-{}.sqlite", std::process::id()));
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
    }
    path
}

/// The footer (Thrift `FileMetaData`) of a Parquet file shaped like privq's report
/// tables: optional integer kind columns, a required binary `report` column,
/// uncompressed, holding `valid_reports()`.
pub fn parquet_table_footer() -> Vec<u8> {
    use parquet::data_type::{ByteArray, ByteArrayType, Int32Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;
    use std::sync::Arc;
    let schema = parse_message_type(
        "message reports { optional int32 mechanism (INTEGER(8,false)); \
         optional int32 query (INTEGER(16,false)); required binary report; }",
    )
    .expect("schema");
    let reports: Vec<ByteArray> = valid_reports().into_iter().map(ByteArray::from).collect();
    let rows = reports.len();
    let mut out = Vec::new();
    let props = Arc::new(WriterProperties::builder().build());
    let mut w = SerializedFileWriter::new(&mut out, Arc::new(schema), props).expect("writer");
    let mut group = w.next_row_group().expect("row group");
    for kind in [2, 0] {
        let mut col = group.next_column().expect("column").expect("kind column");
        col.typed::<Int32Type>()
            .write_batch(&vec![kind; rows], Some(&vec![1; rows]), None)
            .expect("kind values");
        col.close().expect("close");
    }
    let mut col = group.next_column().expect("column").expect("report column");
    col.typed::<ByteArrayType>()
        .write_batch(&reports, None, None)
        .expect("reports");
    col.close().expect("close");
    group.close().expect("row group");
    w.close().expect("file");
    let n = out.len();
    let m = u32::from_le_bytes([out[n - 8], out[n - 7], out[n - 6], out[n - 5]]) as usize;
    out[n - 8 - m..n - 8].to_vec()
}

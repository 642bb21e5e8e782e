//! The Parquet form of a report table, and its atomic writer.
//!
//! One row per report; the schema ([`schema`]):
//!
//! | column        | type           | null when                      |
//! |---------------|----------------|--------------------------------|
//! | `mechanism`   | UInt8          | the report does not decode     |
//! | `epsilon_num` | UInt64         | 〃 (ε reduced, as in [`ReportKind`]) |
//! | `epsilon_den` | UInt64         | 〃                              |
//! | `param`       | UInt32         | 〃 (domain, bound or grid exponent) |
//! | `query`       | UInt16         | 〃                              |
//! | `g`           | UInt16         | 〃 (0 except for local hashing) |
//! | `report`      | Binary         | never: the encoded report bytes |
//!
//! The kind columns are the writer's reading of the report (for grouping and
//! filtering); aggregation never trusts them and decodes `report` itself. A
//! report that does not decode is still written (kind columns null), so that
//! aggregation counts its rejection.
//!
//! A table is a directory of partitions `part-00000.parquet`, `part-00001.parquet`,
//! …, uncompressed (encoded reports are mostly random bits). [`ReportTableWriter`]
//! writes them into a temporary directory beside the destination and renames it
//! into place on [`commit`](ReportTableWriter::commit): the destination holds the
//! whole table or does not exist.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryBuilder, UInt8Builder, UInt16Builder, UInt32Builder, UInt64Builder,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use privq_host::ldp::aggregate::ReportKind;
use privq_host::ldp::decode::decode_report;

/// Rows per Arrow record batch (and Parquet row group granularity).
const BATCH_ROWS: usize = 64 * 1024;

/// The report table's schema (see the [module documentation](self)).
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("mechanism", DataType::UInt8, true),
        Field::new("epsilon_num", DataType::UInt64, true),
        Field::new("epsilon_den", DataType::UInt64, true),
        Field::new("param", DataType::UInt32, true),
        Field::new("query", DataType::UInt16, true),
        Field::new("g", DataType::UInt16, true),
        Field::new("report", DataType::Binary, false),
    ]))
}

/// Errors of writing a report table.
#[derive(Debug)]
#[non_exhaustive]
pub enum TableError {
    /// Creating, writing, syncing or renaming a file failed.
    Io(io::Error),
    /// The destination exists already (a table is never overwritten or mixed).
    Exists(PathBuf),
    /// The Parquet or Arrow writer failed.
    Parquet(String),
    /// `rows_per_file` is zero.
    NoRows,
}

impl std::fmt::Display for TableError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TableError::Io(e) => write!(f, "{e}"),
            TableError::Exists(p) => write!(f, "{} exists already", p.display()),
            TableError::Parquet(e) => write!(f, "writing Parquet: {e}"),
            TableError::NoRows => f.write_str("rows per file must be at least 1"),
        }
    }
}

impl std::error::Error for TableError {}

impl From<io::Error> for TableError {
    fn from(e: io::Error) -> TableError {
        TableError::Io(e)
    }
}

impl From<parquet::errors::ParquetError> for TableError {
    fn from(e: parquet::errors::ParquetError) -> TableError {
        TableError::Parquet(e.to_string())
    }
}

impl From<arrow::error::ArrowError> for TableError {
    fn from(e: arrow::error::ArrowError) -> TableError {
        TableError::Parquet(e.to_string())
    }
}

/// Column builders for one record batch.
#[derive(Debug, Default)]
struct Columns {
    mechanism: UInt8Builder,
    epsilon_num: UInt64Builder,
    epsilon_den: UInt64Builder,
    param: UInt32Builder,
    query: UInt16Builder,
    g: UInt16Builder,
    report: BinaryBuilder,
    rows: usize,
    undecodable: u64,
}

impl Columns {
    fn push(&mut self, report: &[u8]) {
        match decode_report(report).map(|r| ReportKind::of(&r)) {
            Ok(k) => {
                self.mechanism.append_value(k.mechanism);
                self.epsilon_num.append_value(k.epsilon_num);
                self.epsilon_den.append_value(k.epsilon_den);
                self.param.append_value(k.param);
                self.query.append_value(k.query);
                self.g.append_value(k.g);
            }
            Err(_) => {
                self.undecodable += 1;
                self.mechanism.append_null();
                self.epsilon_num.append_null();
                self.epsilon_den.append_null();
                self.param.append_null();
                self.query.append_null();
                self.g.append_null();
            }
        }
        self.report.append_value(report);
        self.rows += 1;
    }

    fn finish(&mut self) -> Result<RecordBatch, TableError> {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.mechanism.finish()),
            Arc::new(self.epsilon_num.finish()),
            Arc::new(self.epsilon_den.finish()),
            Arc::new(self.param.finish()),
            Arc::new(self.query.finish()),
            Arc::new(self.g.finish()),
            Arc::new(self.report.finish()),
        ];
        self.rows = 0;
        Ok(RecordBatch::try_new(schema(), columns)?)
    }
}

fn writer_properties() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::UNCOMPRESSED)
        .set_column_dictionary_enabled("report".into(), false)
        .build()
}

/// Writes one Parquet partition file at `path` (created; not atomic: for
/// partitions inside a directory that is itself renamed into place, or scratch
/// data). Returns the number of rows.
pub fn write_file<'r>(
    path: &Path,
    reports: impl IntoIterator<Item = &'r [u8]>,
) -> Result<u64, TableError> {
    let file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    let mut w = ArrowWriter::try_new(file, schema(), Some(writer_properties()))?;
    let mut columns = Columns::default();
    let mut rows = 0u64;
    for r in reports {
        columns.push(r);
        rows += 1;
        if columns.rows >= BATCH_ROWS {
            w.write(&columns.finish()?)?;
        }
    }
    if columns.rows > 0 {
        w.write(&columns.finish()?)?;
    }
    w.into_inner()?.sync_all()?;
    Ok(rows)
}

/// Calls `f` once per record batch of the Parquet file at `path` with the
/// batch's values of the `report` column, read with the plain Parquet reader on
/// the calling thread (no query engine): the single-threaded baseline
/// `privq ldp scale` measures DataFusion against. Null values are passed as
/// empty reports. Returns the number of rows. Check the file's framing first
/// ([`crate::query::parquet_files`]) if it is untrusted.
pub fn for_each_batch(
    path: &Path,
    mut f: impl FnMut(&mut dyn Iterator<Item = &[u8]>),
) -> Result<u64, TableError> {
    use arrow::array::{Array, AsArray};
    use parquet::arrow::ProjectionMask;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let named = |what: &str| TableError::Parquet(format!("{}: {what}", path.display()));
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path)?)?;
    let column = builder
        .schema()
        .index_of("report")
        .map_err(|_| named("no report column"))?;
    let mask = ProjectionMask::roots(builder.parquet_schema(), [column]);
    let mut rows = 0u64;
    for batch in builder.with_projection(mask).build()? {
        let batch = batch?;
        let values = batch
            .column(0)
            .as_binary_opt::<i32>()
            .ok_or_else(|| named("report column is not Binary"))?;
        f(&mut values.iter().map(|v| v.unwrap_or(&[])));
        rows += values.len() as u64;
    }
    Ok(rows)
}

/// Writes reports as a directory of Parquet partitions, atomically.
///
/// ```
/// use privq_analytics::table::ReportTableWriter;
///
/// let dir = std::env::temp_dir().join(format!("privq-doc-table-{}", std::process::id()));
/// let mut out = ReportTableWriter::create(&dir, 1000)?;
/// out.push(&[1, 2, 3])?; // not a valid report: kept, with null kind columns
/// assert_eq!(out.commit()?, 1);
/// assert!(dir.join("part-00000.parquet").is_file());
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ReportTableWriter {
    dest: PathBuf,
    tmp: PathBuf,
    rows_per_file: u64,
    files: u64,
    rows_in_file: u64,
    rows: u64,
    writer: Option<ArrowWriter<File>>,
    columns: Columns,
    committed: bool,
}

impl ReportTableWriter {
    /// Starts a table at `dest` (which must not exist) with at most
    /// `rows_per_file` rows per partition; the files go to the temporary
    /// directory `.<name>.<pid>.tmp` beside `dest` until [`commit`](Self::commit).
    pub fn create(dest: &Path, rows_per_file: u64) -> Result<ReportTableWriter, TableError> {
        if rows_per_file == 0 {
            return Err(TableError::NoRows);
        }
        if dest.exists() {
            return Err(TableError::Exists(dest.to_path_buf()));
        }
        let name = dest
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a directory path"))?;
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{}.tmp", std::process::id()));
        let tmp = dest.with_file_name(tmp_name);
        fs::create_dir(&tmp)?;
        Ok(ReportTableWriter {
            dest: dest.to_path_buf(),
            tmp,
            rows_per_file,
            files: 0,
            rows_in_file: 0,
            rows: 0,
            writer: None,
            columns: Columns::default(),
            committed: false,
        })
    }

    /// Appends one report (any bytes).
    pub fn push(&mut self, report: &[u8]) -> Result<(), TableError> {
        self.columns.push(report);
        self.rows += 1;
        self.rows_in_file += 1;
        if self.columns.rows >= BATCH_ROWS || self.rows_in_file >= self.rows_per_file {
            self.write_batch()?;
        }
        if self.rows_in_file >= self.rows_per_file {
            self.close_file()?;
        }
        Ok(())
    }

    /// Rows pushed so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Rows pushed so far whose report does not decode (kind columns null).
    pub fn undecodable(&self) -> u64 {
        self.columns.undecodable
    }

    fn write_batch(&mut self) -> Result<(), TableError> {
        if self.columns.rows == 0 {
            return Ok(());
        }
        let batch = self.columns.finish()?;
        if self.writer.is_none() {
            let path = self.tmp.join(format!("part-{:05}.parquet", self.files));
            let file = File::create(path)?;
            let props = writer_properties();
            self.writer = Some(ArrowWriter::try_new(file, schema(), Some(props))?);
            self.files += 1;
        }
        if let Some(w) = &mut self.writer {
            w.write(&batch)?;
        }
        Ok(())
    }

    fn close_file(&mut self) -> Result<(), TableError> {
        if let Some(w) = self.writer.take() {
            let file = w.into_inner()?;
            file.sync_all()?;
        }
        self.rows_in_file = 0;
        Ok(())
    }

    /// Writes what is buffered, syncs every file and renames the directory into
    /// place. Returns the number of rows. An empty table is one empty partition.
    pub fn commit(mut self) -> Result<u64, TableError> {
        if self.rows == 0 {
            // An empty table still has its schema.
            let path = self.tmp.join("part-00000.parquet");
            let w = ArrowWriter::try_new(File::create(path)?, schema(), None)?;
            w.into_inner()?.sync_all()?;
        }
        self.write_batch()?;
        self.close_file()?;
        if self.dest.exists() {
            return Err(TableError::Exists(self.dest.clone()));
        }
        fs::rename(&self.tmp, &self.dest)?;
        self.committed = true;
        Ok(self.rows)
    }
}

impl Drop for ReportTableWriter {
    /// An uncommitted table is removed.
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.tmp);
        }
    }
}

//! Running `privq_aggregate` over a directory of Parquet report tables.
//!
//! [`aggregate_parquet`] plans `SELECT privq_aggregate(report) FROM reports`:
//! DataFusion scans the files in `target_partitions` partitions, each partial
//! aggregate ingests its rows, and the final aggregate merges the partial
//! states; the one resulting state becomes an [`Intake`] whose groups and
//! rejection counts equal those of the in-process intake over the same
//! reports (see [`Intake::ingest_reports`]). No GROUP BY on the table's kind
//! columns is needed (nor trusted): the intake groups reports by the query id
//! it decodes, so memory stays within the campaign's bound per partition.
//!
//! [`aggregate_parquet_by_kind`] runs the grouped form
//! `SELECT mechanism, …, g, privq_aggregate(report) … GROUP BY mechanism, …, g`,
//! one intake per value of the kind columns (rows whose kind columns are null,
//! i.e. undecodable reports, form their own group). Its groups are as many as
//! the table has distinct kind values: use it on tables you wrote.

use std::path::Path;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{UInt8Type, UInt16Type, UInt32Type, UInt64Type};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::DataFusionError;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};

use crate::udaf::{NAME, privq_aggregate};
use privq_host::ldp::aggregate::ReportKind;
use privq_host::ldp::campaign::{CampaignPlan, Limits};
use privq_host::ldp::intake::{Intake, StateError};
use privq_host::ldp::parquet_footer::{FooterError, FooterSummary, MAX_FOOTER, check_footer};

/// Errors of a Parquet aggregation.
#[derive(Debug)]
#[non_exhaustive]
pub enum QueryError {
    /// Listing the directory or starting the runtime failed.
    Io(std::io::Error),
    /// Planning or running the query failed (missing `report` column, unreadable
    /// file, …).
    DataFusion(DataFusionError),
    /// A state produced by the query could not be read back (not expected).
    State(StateError),
    /// The result has an unexpected shape (not expected).
    Shape(&'static str),
    /// A `*.parquet` file is not framed as Parquet (checked before the query).
    NotParquet {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A `*.parquet` file's footer is not of the shape of privq's report tables
    /// (checked before any Parquet reader parses it).
    Footer {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong with its footer.
        error: FooterError,
    },
    /// The query engine panicked (a defect of DataFusion or the Parquet reader
    /// on this input); nothing was aggregated.
    Panicked,
    /// The aggregate counted another number of rows than the files' footers
    /// hold: rows were dropped or counted twice on the way (a partial state
    /// lost or duplicated by the engine, or one forged by a peer).
    RowCount {
        /// Rows (reports) in the final state.
        counted: u64,
        /// Rows the Parquet footers declare.
        stored: u64,
    },
    /// Starting the Ballista scheduler or executor failed.
    #[cfg(feature = "ballista")]
    Ballista(ballista_core::error::BallistaError),
}

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueryError::Io(e) => write!(f, "{e}"),
            QueryError::DataFusion(e) => write!(f, "query: {e}"),
            QueryError::State(e) => write!(f, "aggregate state: {e}"),
            QueryError::Shape(what) => write!(f, "unexpected query result: {what}"),
            QueryError::NotParquet { path, why } => {
                write!(f, "{}: not a Parquet file: {why}", path.display())
            }
            QueryError::Footer { path, error } => write!(
                f,
                "{}: refused before reading: {error} (not a privq report table)",
                path.display()
            ),
            QueryError::Panicked => f.write_str("the query engine panicked on this input"),
            QueryError::RowCount { counted, stored } => write!(
                f,
                "the aggregate counted {counted} rows of a table of {stored}: \
                 rows were lost or counted twice"
            ),
            #[cfg(feature = "ballista")]
            QueryError::Ballista(e) => write!(f, "ballista: {e}"),
        }
    }
}

impl std::error::Error for QueryError {}

impl From<DataFusionError> for QueryError {
    fn from(e: DataFusionError) -> QueryError {
        QueryError::DataFusion(e)
    }
}

#[cfg(feature = "ballista")]
impl From<ballista_core::error::BallistaError> for QueryError {
    fn from(e: ballista_core::error::BallistaError) -> QueryError {
        QueryError::Ballista(e)
    }
}

impl From<std::io::Error> for QueryError {
    fn from(e: std::io::Error) -> QueryError {
        QueryError::Io(e)
    }
}

/// The number of Parquet files of the table `dir`: the files directly in it
/// whose names end in `.parquet`, the files DataFusion's listing reads. A
/// subdirectory is an error (DataFusion would skip it, or read it as a Hive
/// partition when its name holds `=`, so its rows would be aggregated or not
/// depending on its name). Each file is checked before any Parquet reader sees
/// it: the magic `PAR1` at both ends, a footer length that fits the file, and a
/// footer of the shape of privq's tables ([`check_footer`]: bounded lists and
/// nesting, a flat schema, uncompressed column chunks in the file itself). That
/// check refuses what privq's tables never hold; it does not make the Parquet
/// reader safe on crafted files (see [`check_footer`]): run queries over tables
/// you did not write in a process you can lose, as `privq ldp aggregate
/// --parquet` does.
pub fn parquet_files(dir: &Path) -> Result<u64, QueryError> {
    Ok(checked_table(dir)?.0)
}

/// [`parquet_files`], and the rows the files' footers declare.
pub(super) fn checked_table(dir: &Path) -> Result<(u64, u64), QueryError> {
    let (mut files, mut rows) = (0, 0u64);
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let p = entry.path();
        if p.is_dir() {
            return Err(QueryError::NotParquet {
                path: p,
                why: "a subdirectory in a report table (give the directory of the Parquet files)",
            });
        }
        if entry.file_name().to_string_lossy().ends_with(".parquet") {
            rows = rows.saturating_add(checked_file(&p)?.rows);
            files += 1;
        }
    }
    Ok((files, rows))
}

/// `PAR1` … metadata, metadata length (u32 little-endian), `PAR1`; the
/// metadata checked by [`check_footer`].
fn checked_file(path: &Path) -> Result<FooterSummary, QueryError> {
    use std::io::{Read, Seek, SeekFrom};
    let bad = |why: &'static str| QueryError::NotParquet {
        path: path.to_path_buf(),
        why,
    };
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    if len < 12 {
        return Err(bad("shorter than the 12 bytes of Parquet framing"));
    }
    let mut head = [0u8; 4];
    f.read_exact(&mut head)?;
    let mut tail = [0u8; 8];
    f.seek(SeekFrom::End(-8))?;
    f.read_exact(&mut tail)?;
    if &head != b"PAR1" || &tail[4..] != b"PAR1" {
        return Err(bad(
            "no PAR1 magic at both ends (not Parquet, or encrypted)",
        ));
    }
    let metadata = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    if metadata + 12 > len {
        return Err(bad("its footer claims more metadata than the file holds"));
    }
    let footer_error = |error| QueryError::Footer {
        path: path.to_path_buf(),
        error,
    };
    let size = usize::try_from(metadata)
        .ok()
        .filter(|&n| n <= MAX_FOOTER)
        .ok_or_else(|| {
            footer_error(FooterError::TooLong {
                len: metadata as usize,
            })
        })?;
    let mut footer = vec![0u8; size];
    f.seek(SeekFrom::End(-8 - metadata as i64))?;
    f.read_exact(&mut footer)?;
    check_footer(&footer).map_err(footer_error)
}

/// A session with `privq_aggregate` and the table `reports` (the Parquet
/// files of `dir`) registered.
pub async fn session(
    dir: &Path,
    plan: &CampaignPlan,
    limits: &Limits,
    target_partitions: usize,
) -> Result<SessionContext, QueryError> {
    let config =
        trusted_reads_only(SessionConfig::new().with_target_partitions(target_partitions.max(1)));
    let ctx = SessionContext::new_with_config(config);
    ctx.register_udaf(privq_aggregate(plan.clone(), *limits));
    register_reports(&ctx, dir).await?;
    Ok(ctx)
}

/// `config` reading from a Parquet file only what [`parquet_files`] checked
/// (the footer) and the pages it locates: no page index or bloom filter, which
/// live elsewhere in the file and would be parsed unchecked, and no filter
/// pushdown (the aggregation scans every row and needs none of them).
/// `skip_metadata` drops the footer's key-value metadata from the table's
/// schema; DataFusion 55 still decodes the embedded Arrow schema it holds, as
/// the Parquet reader does for any file.
pub(super) fn trusted_reads_only(mut config: SessionConfig) -> SessionConfig {
    let parquet = &mut config.options_mut().execution.parquet;
    parquet.enable_page_index = false;
    parquet.bloom_filter_on_read = false;
    parquet.skip_metadata = true;
    parquet.pushdown_filters = false;
    config
}

/// Registers the Parquet files of `dir` as the table `reports` of `ctx`. The
/// directory is given as a `file://` URL: DataFusion reads a plain path as a
/// glob pattern, so a directory named `reports[1]` or `*` would list other
/// files.
pub(super) async fn register_reports(ctx: &SessionContext, dir: &Path) -> Result<(), QueryError> {
    let dir = std::path::absolute(dir)?;
    let url = url::Url::from_directory_path(&dir).map_err(|()| {
        let e = format!("{}: not a path a file URL can name", dir.display());
        QueryError::Io(std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
    })?;
    ctx.register_parquet("reports", url.as_str(), ParquetReadOptions::default())
        .await?;
    Ok(())
}

/// The ungrouped query: one state, the whole table's.
pub(super) fn total_sql() -> String {
    format!(r#"SELECT {NAME}("report") FROM reports"#)
}

pub(super) fn runtime(threads: usize) -> Result<tokio::runtime::Runtime, QueryError> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()?)
}

/// Checks the files of `dir` ([`parquet_files`]), then runs `sql` over them on
/// a runtime of `target_partitions` threads; a panic inside the engine becomes
/// [`QueryError::Panicked`]. Returns the numbers of files and rows, and the
/// result.
fn run_sql(
    dir: &Path,
    plan: &CampaignPlan,
    limits: &Limits,
    target_partitions: usize,
    sql: &str,
) -> Result<((u64, u64), Vec<RecordBatch>), QueryError> {
    let table = checked_table(dir)?;
    let rt = runtime(target_partitions)?;
    let batches = block_on_guarded(&rt, async {
        let ctx = session(dir, plan, limits, target_partitions).await?;
        Ok(ctx.sql(sql).await?.collect().await?)
    })?;
    Ok((table, batches))
}

/// Runs `query` on `rt`; a panic inside the engine becomes
/// [`QueryError::Panicked`].
pub(super) fn block_on_guarded<T>(
    rt: &tokio::runtime::Runtime,
    query: impl std::future::Future<Output = Result<T, QueryError>>,
) -> Result<T, QueryError> {
    let run = std::panic::AssertUnwindSafe(|| rt.block_on(query));
    std::panic::catch_unwind(run).map_err(|_| QueryError::Panicked)?
}

/// Merges the serialized states in column `col` of `batches` into one intake.
fn merge_states(
    plan: &CampaignPlan,
    limits: &Limits,
    batches: &[RecordBatch],
    col: usize,
) -> Result<Vec<Intake>, QueryError> {
    let mut out = Vec::new();
    for b in batches {
        let states = b
            .column(col)
            .as_binary_opt::<i32>()
            .ok_or(QueryError::Shape("state column is not binary"))?;
        for s in states.iter() {
            let s = s.ok_or(QueryError::Shape("null state"))?;
            let text =
                std::str::from_utf8(s).map_err(|_| QueryError::Shape("state is not UTF-8"))?;
            let intake = Intake::from_json(text, limits).map_err(QueryError::State)?;
            if intake.plan() != plan {
                return Err(QueryError::Shape("state of another campaign"));
            }
            out.push(intake);
        }
    }
    Ok(out)
}

/// Aggregates the Parquet report tables in `dir` (all `*.parquet` files; see
/// [`crate::table`]) for the campaign `plan` on `target_partitions`
/// partitions (and as many runtime threads). The intake's `inputs` is the
/// number of Parquet files; its `frames` the number of rows.
pub fn aggregate_parquet(
    dir: &Path,
    plan: &CampaignPlan,
    limits: &Limits,
    target_partitions: usize,
) -> Result<Intake, QueryError> {
    let (table, batches) = run_sql(dir, plan, limits, target_partitions, &total_sql())?;
    total_intake(plan, limits, &batches, table)
}

/// The intake of the ungrouped query's result `batches` (its one state,
/// re-validated against `plan` and `limits`), with `inputs` set to the number
/// of Parquet files read; `table` is the files and rows of [`checked_table`],
/// and the state must have counted every row once.
pub(super) fn total_intake(
    plan: &CampaignPlan,
    limits: &Limits,
    batches: &[RecordBatch],
    (files, rows): (u64, u64),
) -> Result<Intake, QueryError> {
    let mut states = merge_states(plan, limits, batches, 0)?;
    let (Some(total), None) = (states.pop(), states.pop()) else {
        return Err(QueryError::Shape(
            "an ungrouped aggregate without exactly one state",
        ));
    };
    check_rows(total.stats().frames, rows)?;
    let mut state = total.to_state();
    state.stats.inputs = files;
    Intake::from_state(state, limits).map_err(QueryError::State)
}

/// The grouped query: one intake per distinct value of the kind columns
/// (`None` for rows whose kind columns are null), in no particular order.
pub fn aggregate_parquet_by_kind(
    dir: &Path,
    plan: &CampaignPlan,
    limits: &Limits,
    target_partitions: usize,
) -> Result<Vec<(Option<ReportKind>, Intake)>, QueryError> {
    let cols = r#""mechanism", "epsilon_num", "epsilon_den", "param", "query", "g""#;
    let sql = format!(r#"SELECT {cols}, {NAME}("report") FROM reports GROUP BY {cols}"#);
    let ((_, rows), batches) = run_sql(dir, plan, limits, target_partitions, &sql)?;
    let shape = QueryError::Shape("kind columns of unexpected types");
    let mut out = Vec::new();
    for b in &batches {
        let intakes = merge_states(plan, limits, std::slice::from_ref(b), 6)?;
        let mech = b.column(0).as_primitive_opt::<UInt8Type>();
        let num = b.column(1).as_primitive_opt::<UInt64Type>();
        let den = b.column(2).as_primitive_opt::<UInt64Type>();
        let param = b.column(3).as_primitive_opt::<UInt32Type>();
        let query = b.column(4).as_primitive_opt::<UInt16Type>();
        let g = b.column(5).as_primitive_opt::<UInt16Type>();
        let (Some(mech), Some(num), Some(den), Some(param), Some(query), Some(g)) =
            (mech, num, den, param, query, g)
        else {
            return Err(shape);
        };
        for (i, intake) in intakes.into_iter().enumerate() {
            let null = [
                mech.is_null(i),
                num.is_null(i),
                den.is_null(i),
                param.is_null(i),
                query.is_null(i),
                g.is_null(i),
            ];
            let kind = (!null.contains(&true)).then(|| ReportKind {
                mechanism: mech.value(i),
                epsilon_num: num.value(i),
                epsilon_den: den.value(i),
                param: param.value(i),
                query: query.value(i),
                g: g.value(i),
            });
            out.push((kind, intake));
        }
    }
    let counted = out.iter().map(|(_, i)| i.stats().frames).sum();
    check_rows(counted, rows)?;
    Ok(out)
}

/// Every row of the table counted exactly once.
fn check_rows(counted: u64, stored: u64) -> Result<(), QueryError> {
    if counted == stored {
        Ok(())
    } else {
        Err(QueryError::RowCount { counted, stored })
    }
}

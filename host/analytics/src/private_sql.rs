//! `privq sql --engine datafusion`: the exact bounded aggregates of a private
//! query ([`Plan::totals`]) computed by DataFusion over a CSV table; the driver
//! then releases them with [`Plan::release_totals`], the function the in-process
//! engine uses, so for the same seed both engines release the same bytes.
//!
//! Nothing here decides what is released. The engine reads every column as text
//! and calls privq's own code in scalar UDFs, so each row DataFusion's CSV reader
//! yields is read as [`Table::from_csv`] reads it ([`RowReader`]: trimming, the
//! checks before any filter, `WHERE`, `drop_invalid`, histogram bins, Rust's `f64`
//! parsing); which rows exist is that reader's decision, made with quoted newlines
//! allowed so that it never cuts the file inside a quoted value (tested against
//! the in-process reader in `tests/csv_reading.rs`):
//!
//! 1. `privq_status`, `privq_unit`, `privq_key`, `privq_bits`: per row, whether
//!    it is kept (0), set aside (1: filtered, dropped, or a key outside the
//!    public list) or invalid (2); its unit text, its encoded group key
//!    ([`encode_key`]) and each value's `f64` bit pattern.
//! 2. A first query counts the rows and the invalid ones: too many rows, an
//!    empty table or any invalid row is refused before anything is charged, with
//!    the in-process reader's error (the file is read again in process to name
//!    the same line).
//! 3. Contribution bounding by window functions, the rule of [`BoundingKey`]:
//!    `ROW_NUMBER()` numbers identical rows of a unit and key, `privq_row_rank`
//!    and `privq_group_rank` rank rows and keys with the PRF, and a unit keeps
//!    the rows with `ROW_NUMBER() OVER (PARTITION BY unit, key ORDER BY rank,
//!    values, occurrence) ≤ max_rows` in the keys with `DENSE_RANK() OVER
//!    (PARTITION BY unit ORDER BY group rank, key) ≤ max_groups`.
//! 4. Per key: distinct units, rows, and Σ steps, Σ (steps − mid), Σ (steps −
//!    mid)² as `DECIMAL(38, 0)` (`privq_measure`: the plan's clamping and grid);
//!    for a quantile, rows per candidate (`privq_bucket`).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Decimal128Array, Int32Array, Int64Array, StringArray, UInt64Array,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Field, Int64Type, Schema};
use datafusion::common::{DataFusionError, Result as DfResult, ScalarValue};
use datafusion::logical_expr::{ColumnarValue, Volatility, create_udf};
use datafusion::prelude::{CsvReadOptions, SessionConfig, SessionContext};

use privq_host::aggregate::{
    AggregateError, BoundingKey, ColumnTotals, GroupTotals, Plan, ReadRow, RowReader, Table,
    candidate_bucket, decode_key, encode_key,
};

/// Errors of the engine.
#[derive(Debug)]
#[non_exhaustive]
pub enum EngineError {
    /// The table refused as the in-process reader refuses it (or the plan refused
    /// the totals).
    Aggregate(AggregateError),
    /// Reading the file failed.
    Io(std::io::Error),
    /// Planning or running the query failed.
    DataFusion(DataFusionError),
    /// The result has an unexpected shape (not expected).
    Shape(&'static str),
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineError::Aggregate(e) => write!(f, "{e}"),
            EngineError::Io(e) => write!(f, "{e}"),
            EngineError::DataFusion(e) => write!(f, "query: {e}"),
            EngineError::Shape(what) => write!(f, "unexpected query result: {what}"),
        }
    }
}

impl std::error::Error for EngineError {}

impl From<AggregateError> for EngineError {
    fn from(e: AggregateError) -> Self {
        EngineError::Aggregate(e)
    }
}
impl From<DataFusionError> for EngineError {
    fn from(e: DataFusionError) -> Self {
        EngineError::DataFusion(e)
    }
}
impl From<datafusion::arrow::error::ArrowError> for EngineError {
    fn from(e: datafusion::arrow::error::ArrowError) -> Self {
        EngineError::DataFusion(e.into())
    }
}
impl From<std::io::Error> for EngineError {
    fn from(e: std::io::Error) -> Self {
        EngineError::Io(e)
    }
}

/// What the UDFs share: how a row is read, the public keys, the PRF key.
struct Rows {
    reader: RowReader,
    /// The header positions the UDFs receive, in argument order.
    fields: Vec<usize>,
    /// For each header position, its argument (`usize::MAX`: not read).
    slot: Vec<usize>,
    public: Option<HashSet<Vec<String>>>,
}

/// A row's status: kept, set aside, or refused.
const KEPT: i32 = 0;
const ASIDE: i32 = 1;
const INVALID: i32 = 2;

impl Rows {
    /// Reads row `r` of the argument arrays (the fields of [`Rows::fields`], in
    /// order), as the in-process reader reads it, and sets aside rows of keys
    /// outside the public list.
    fn read(&self, arrays: &[StringArray], r: usize) -> (i32, Option<ReadRow>) {
        let field = |h: usize| -> &str {
            match self.slot.get(h) {
                Some(&a) if a != usize::MAX => {
                    let col = &arrays[a];
                    if col.is_null(r) {
                        ""
                    } else {
                        col.value(r).trim()
                    }
                }
                _ => "",
            }
        };
        match self.reader.row(&field, 0) {
            Err(_) => (INVALID, None),
            Ok(None) => (ASIDE, None),
            Ok(Some(row)) => match &self.public {
                Some(keys) if !keys.contains(&row.key) => (ASIDE, None),
                _ => (KEPT, Some(row)),
            },
        }
    }
}

/// The argument arrays as text, and the number of rows.
fn texts(args: &[ColumnarValue]) -> DfResult<(usize, Vec<StringArray>)> {
    let n = args
        .iter()
        .find_map(|a| match a {
            ColumnarValue::Array(a) => Some(a.len()),
            ColumnarValue::Scalar(_) => None,
        })
        .unwrap_or(1);
    let arrays = args
        .iter()
        .map(|a| {
            let a = cast(&a.to_array(n)?, &DataType::Utf8)?;
            Ok(a.as_string::<i32>().clone())
        })
        .collect::<DfResult<Vec<_>>>()?;
    Ok((n, arrays))
}

/// The literal integer of argument `i` (a column index or a kind).
fn literal(args: &[ColumnarValue], i: usize) -> DfResult<usize> {
    match args.get(i) {
        Some(ColumnarValue::Scalar(ScalarValue::Int64(Some(v)))) => Ok(*v as usize),
        _ => Err(DataFusionError::Internal(
            "a privq UDF needs a literal index".into(),
        )),
    }
}

/// Registers the row UDFs of `plan` (reading `header`) and the PRF of `key`.
fn register(
    ctx: &SessionContext,
    plan: &Plan,
    header: &[String],
    key: BoundingKey,
) -> Result<Arc<Rows>, EngineError> {
    let reader = RowReader::new(header, &plan.columns())?;
    let fields = reader.fields();
    let mut slot = vec![usize::MAX; header.len()];
    for (a, &h) in fields.iter().enumerate() {
        slot[h] = a;
    }
    let rows = Arc::new(Rows {
        reader,
        fields,
        slot,
        public: plan
            .public_keys()
            .map(|keys| keys.iter().cloned().collect()),
    });
    let utf8 = vec![DataType::Utf8; rows.fields.len()];
    let r = rows.clone();
    ctx.register_udf(create_udf(
        "privq_status",
        utf8.clone(),
        DataType::Int32,
        Volatility::Immutable,
        Arc::new(move |args| {
            let (n, a) = texts(args)?;
            let out: Int32Array = (0..n).map(|i| Some(r.read(&a, i).0)).collect();
            Ok(ColumnarValue::Array(Arc::new(out) as ArrayRef))
        }),
    ));
    let r = rows.clone();
    ctx.register_udf(create_udf(
        "privq_unit",
        utf8.clone(),
        DataType::Utf8,
        Volatility::Immutable,
        Arc::new(move |args| {
            let (n, a) = texts(args)?;
            let out: StringArray = (0..n)
                .map(|i| r.read(&a, i).1.and_then(|row| row.unit))
                .collect();
            Ok(ColumnarValue::Array(Arc::new(out) as ArrayRef))
        }),
    ));
    let r = rows.clone();
    ctx.register_udf(create_udf(
        "privq_key",
        utf8.clone(),
        DataType::Utf8,
        Volatility::Immutable,
        Arc::new(move |args| {
            let (n, a) = texts(args)?;
            let out: StringArray = (0..n)
                .map(|i| r.read(&a, i).1.map(|row| encode_key(&row.key)))
                .collect();
            Ok(ColumnarValue::Array(Arc::new(out) as ArrayRef))
        }),
    ));
    let r = rows.clone();
    let mut with_index = vec![DataType::Int64];
    with_index.extend(utf8.iter().cloned());
    ctx.register_udf(create_udf(
        "privq_bits",
        with_index,
        DataType::Int64,
        Volatility::Immutable,
        Arc::new(move |args| {
            let c = literal(args, 0)?;
            let (n, a) = texts(&args[1..])?;
            let out: Int64Array = (0..n)
                .map(|i| {
                    r.read(&a, i)
                        .1
                        .and_then(|row| row.values.get(c).map(|x| x.to_bits() as i64))
                })
                .collect();
            Ok(ColumnarValue::Array(Arc::new(out) as ArrayRef))
        }),
    ));
    let values = plan.columns().values.len();
    // privq_row_rank(unit, key, occurrence, bits…)
    let mut rank_args = vec![DataType::Utf8, DataType::Utf8, DataType::Int64];
    rank_args.extend(std::iter::repeat_n(DataType::Int64, values));
    ctx.register_udf(create_udf(
        "privq_row_rank",
        rank_args,
        DataType::UInt64,
        Volatility::Immutable,
        Arc::new(move |args| {
            let n = args
                .iter()
                .find_map(|a| match a {
                    ColumnarValue::Array(a) => Some(a.len()),
                    ColumnarValue::Scalar(_) => None,
                })
                .unwrap_or(1);
            let arrays = args
                .iter()
                .map(|a| a.to_array(n))
                .collect::<DfResult<Vec<_>>>()?;
            let (u, k) = (
                cast(&arrays[0], &DataType::Utf8)?,
                cast(&arrays[1], &DataType::Utf8)?,
            );
            let (u, k) = (u.as_string::<i32>(), k.as_string::<i32>());
            let occ = cast(&arrays[2], &DataType::Int64)?;
            let occ = occ.as_primitive::<Int64Type>();
            let bits: Vec<ArrayRef> = arrays[3..]
                .iter()
                .map(|a| cast(a, &DataType::Int64))
                .collect::<Result<_, _>>()?;
            let mut v = vec![0f64; bits.len()];
            let out: UInt64Array = (0..n)
                .map(|i| {
                    for (c, b) in bits.iter().enumerate() {
                        v[c] = f64::from_bits(b.as_primitive::<Int64Type>().value(i) as u64);
                    }
                    Some(key.row_rank(u.value(i), k.value(i), &v, occ.value(i) as u64))
                })
                .collect();
            Ok(ColumnarValue::Array(Arc::new(out) as ArrayRef))
        }),
    ));
    ctx.register_udf(create_udf(
        "privq_group_rank",
        vec![DataType::Utf8, DataType::Utf8],
        DataType::UInt64,
        Volatility::Immutable,
        Arc::new(move |args| {
            let (n, a) = texts(args)?;
            let out: UInt64Array = (0..n)
                .map(|i| Some(key.group_rank(a[0].value(i), a[1].value(i))))
                .collect();
            Ok(ColumnarValue::Array(Arc::new(out) as ArrayRef))
        }),
    ));
    // privq_measure(kind, column, bits): steps, steps − mid, (steps − mid)².
    let p = plan.clone();
    ctx.register_udf(create_udf(
        "privq_measure",
        vec![DataType::Int64, DataType::Int64, DataType::Int64],
        DataType::Decimal128(38, 0),
        Volatility::Immutable,
        Arc::new(move |args| {
            let (kind, c) = (literal(args, 0)?, literal(args, 1)?);
            let n = match &args[2] {
                ColumnarValue::Array(a) => a.len(),
                ColumnarValue::Scalar(_) => 1,
            };
            let b = cast(&args[2].to_array(n)?, &DataType::Int64)?;
            let b = b.as_primitive::<Int64Type>();
            let mid = i128::from(p.mid_steps(c));
            let out: Decimal128Array = (0..n)
                .map(|i| {
                    let s = i128::from(p.value_steps(c, f64::from_bits(b.value(i) as u64)));
                    Some(match kind {
                        0 => s,
                        1 => s - mid,
                        _ => (s - mid) * (s - mid),
                    })
                })
                .collect::<Decimal128Array>()
                .with_precision_and_scale(38, 0)?;
            Ok(ColumnarValue::Array(Arc::new(out) as ArrayRef))
        }),
    ));
    let p = plan.clone();
    let candidates: Vec<Vec<i64>> = (0..values)
        .map(|c| p.quantile_candidates(c).unwrap_or_default())
        .collect();
    ctx.register_udf(create_udf(
        "privq_bucket",
        vec![DataType::Int64, DataType::Int64],
        DataType::Int64,
        Volatility::Immutable,
        Arc::new(move |args| {
            let c = literal(args, 0)?;
            let n = match &args[1] {
                ColumnarValue::Array(a) => a.len(),
                ColumnarValue::Scalar(_) => 1,
            };
            let b = cast(&args[1].to_array(n)?, &DataType::Int64)?;
            let b = b.as_primitive::<Int64Type>();
            let out: Int64Array = (0..n)
                .map(|i| {
                    let s = p.value_steps(c, f64::from_bits(b.value(i) as u64));
                    Some(candidate_bucket(&candidates[c], s) as i64)
                })
                .collect();
            Ok(ColumnarValue::Array(Arc::new(out) as ArrayRef))
        }),
    ));
    Ok(rows)
}

/// `name` as a quoted SQL identifier.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The exact totals of `plan` over the CSV file `path` under the bounding `key`,
/// computed by DataFusion in `partitions` partitions: the same groups and numbers
/// as [`Plan::totals`] of the table [`Table::from_csv`] reads from the file (in
/// another order), or the same error, before anything is charged.
pub fn totals_csv(
    path: &Path,
    plan: &Plan,
    key: BoundingKey,
    max_rows: usize,
    partitions: usize,
) -> Result<Vec<GroupTotals>, EngineError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(partitions.max(1))
        .enable_all()
        .build()?;
    runtime.block_on(totals_async(path, plan, key, max_rows, partitions))
}

async fn totals_async(
    path: &Path,
    plan: &Plan,
    key: BoundingKey,
    max_rows: usize,
    partitions: usize,
) -> Result<Vec<GroupTotals>, EngineError> {
    // DataFusion reads a table path as a glob: `t[1].csv` would read `t1.csv`.
    let name = path.to_string_lossy();
    if name.contains(['*', '?', '[', ']', '{', '}']) {
        return Err(EngineError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{name}: the DataFusion engine reads a path as a pattern, so a file name \
                 with *, ?, [, ], {{ or }} is refused (rename it, or use the in-process engine)"
            ),
        )));
    }
    // The header as the in-process reader sees it.
    let header: Vec<String> = {
        let file = std::fs::File::open(path)?;
        let mut csv = csv_reader(file);
        csv.headers()
            .map_err(AggregateError::from)?
            .iter()
            .map(str::to_string)
            .collect()
    };
    if header.is_empty() {
        return Err(AggregateError::EmptyTable.into());
    }
    let config = SessionConfig::new().with_target_partitions(partitions.max(1));
    let ctx = SessionContext::new_with_config(config);
    let rows = register(&ctx, plan, &header, key)?;
    let schema = Schema::new(
        header
            .iter()
            .map(|h| Field::new(h, DataType::Utf8, true))
            .collect::<Vec<_>>(),
    );
    let path = std::path::absolute(path)?;
    let extension = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    // `newlines_in_values`: a quoted value may hold a newline, so DataFusion must
    // not cut the file into byte ranges at '\n' (its repartitioning of files from
    // 1 MiB is blind to quotes: a cut inside a quoted value would read part of it as
    // rows, at a place that depends on every other unit's bytes).
    let options = CsvReadOptions::new()
        .has_header(true)
        .schema(&schema)
        .file_extension(&extension)
        .newlines_in_values(true);
    ctx.register_csv("t", &path.to_string_lossy(), options)
        .await?;
    let args: Vec<String> = rows.fields.iter().map(|&h| quote(&header[h])).collect();
    let call = |f: &str| format!("{f}({})", args.join(", "));
    let values = plan.columns().values.len();
    let (status, unit, key_expr) = if args.is_empty() {
        ("0".to_string(), "''".to_string(), "''".to_string())
    } else {
        (call("privq_status"), call("privq_unit"), call("privq_key"))
    };
    let bits: Vec<String> = (0..values)
        .map(|c| {
            let mut a = vec![c.to_string()];
            a.extend(args.iter().cloned());
            format!("privq_bits({}) AS b{c}", a.join(", "))
        })
        .collect();
    let mut r = format!("SELECT {status} AS st, {unit} AS u, {key_expr} AS k");
    for b in &bits {
        r.push_str(", ");
        r.push_str(b);
    }
    r.push_str(" FROM t");
    // 2. The checks, before anything else.
    let checks = ctx
        .sql(&format!(
            "SELECT COUNT(*) AS n, SUM(CASE WHEN st = {INVALID} THEN 1 ELSE 0 END) AS bad \
             FROM ({r}) AS r"
        ))
        .await?
        .collect()
        .await?;
    let batch = checks.first().ok_or(EngineError::Shape("no count"))?;
    let n = cast(batch.column(0), &DataType::Int64)?
        .as_primitive::<Int64Type>()
        .value(0);
    let bad_col = cast(batch.column(1), &DataType::Int64)?;
    let bad = bad_col.as_primitive::<Int64Type>();
    let bad = if bad.is_null(0) { 0 } else { bad.value(0) };
    if bad > 0 || n as u64 > max_rows as u64 {
        // The in-process reader names the same line and column.
        let file = std::fs::File::open(&path)?;
        Table::from_csv(std::io::BufReader::new(file), &plan.columns(), max_rows)?;
        return Err(EngineError::Shape(
            "the engine refused rows the reader accepts",
        ));
    }
    if n == 0 {
        return Err(AggregateError::EmptyTable.into());
    }
    // 3. Bounding.
    let b_list: String = (0..values).map(|c| format!(", b{c}")).collect();
    let limits = plan.contribution();
    let kept = format!("SELECT u, k{b_list} FROM ({r}) AS r WHERE st = {KEPT}");
    let bounded = if plan.privacy_unit().is_some() {
        format!(
            "WITH kept AS ({kept}), \
             o AS (SELECT u, k{b_list}, CAST(ROW_NUMBER() OVER (PARTITION BY u, k{b_list}) AS BIGINT) - 1 AS occ FROM kept), \
             s AS (SELECT u, k{b_list}, occ, privq_row_rank(u, k, occ{b_list}) AS rr, \
                   privq_group_rank(u, k) AS gr FROM o), \
             w AS (SELECT u, k{b_list}, \
                   ROW_NUMBER() OVER (PARTITION BY u, k ORDER BY rr{b_list}, occ) AS rn, \
                   DENSE_RANK() OVER (PARTITION BY u ORDER BY gr, k) AS gn FROM s) \
             SELECT u, k{b_list} FROM w WHERE rn <= {} AND gn <= {}",
            limits.max_rows(),
            limits.max_groups()
        )
    } else {
        kept
    };
    // 4. Per key.
    let units = if plan.privacy_unit().is_some() {
        "COUNT(DISTINCT u)"
    } else {
        "COUNT(*)"
    };
    let mut select = format!("SELECT k, {units} AS units, COUNT(*) AS n");
    for c in 0..values {
        for kind in 0..3 {
            select.push_str(&format!(", SUM(privq_measure({kind}, {c}, b{c}))"));
        }
    }
    select.push_str(&format!(" FROM ({bounded}) AS b GROUP BY k"));
    let batches = ctx.sql(&select).await?.collect().await?;
    let mut groups: Vec<GroupTotals> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for batch in &batches {
        let k = cast(batch.column(0), &DataType::Utf8)?;
        let k = k.as_string::<i32>();
        let units = cast(batch.column(1), &DataType::Int64)?;
        let units = units.as_primitive::<Int64Type>();
        let rows_n = cast(batch.column(2), &DataType::Int64)?;
        let rows_n = rows_n.as_primitive::<Int64Type>();
        let sums: Vec<&Decimal128Array> = (0..3 * values)
            .map(|j| batch.column(3 + j).as_primitive_opt::<Decimal128Type>())
            .collect::<Option<_>>()
            .ok_or(EngineError::Shape("a sum is not a decimal"))?;
        for i in 0..batch.num_rows() {
            let fields = decode_key(k.value(i)).ok_or(EngineError::Shape("a key"))?;
            let sum = |j: usize| {
                if sums[j].is_null(i) {
                    0
                } else {
                    sums[j].value(i)
                }
            };
            let columns = (0..values)
                .map(|c| ColumnTotals {
                    sum: sum(3 * c),
                    centred: sum(3 * c + 1),
                    squares: sum(3 * c + 2),
                    at_candidate: plan
                        .quantile_candidates(c)
                        .map_or(Vec::new(), |cands| vec![0; cands.len()]),
                })
                .collect();
            index.insert(k.value(i).to_string(), groups.len());
            groups.push(GroupTotals {
                key: fields,
                units: units.value(i) as u64,
                rows: rows_n.value(i) as u64,
                columns,
            });
        }
    }
    // Rows per candidate, for each column with a quantile.
    for c in 0..values {
        if plan.quantile_candidates(c).is_none() {
            continue;
        }
        let q = format!(
            "SELECT k, privq_bucket({c}, b{c}) AS j, COUNT(*) AS n FROM ({bounded}) AS b \
             GROUP BY k, privq_bucket({c}, b{c})"
        );
        for batch in ctx.sql(&q).await?.collect().await? {
            let k = cast(batch.column(0), &DataType::Utf8)?;
            let k = k.as_string::<i32>();
            let j = cast(batch.column(1), &DataType::Int64)?;
            let j = j.as_primitive::<Int64Type>();
            let n = cast(batch.column(2), &DataType::Int64)?;
            let n = n.as_primitive::<Int64Type>();
            for i in 0..batch.num_rows() {
                let g = *index
                    .get(k.value(i))
                    .ok_or(EngineError::Shape("a bucket's key"))?;
                let slot = groups[g].columns[c]
                    .at_candidate
                    .get_mut(j.value(i) as usize)
                    .ok_or(EngineError::Shape("a bucket"))?;
                *slot += n.value(i) as u64;
            }
        }
    }
    Ok(groups)
}

fn csv_reader<R: std::io::Read>(r: R) -> csv::Reader<R> {
    csv::ReaderBuilder::new().from_reader(r)
}

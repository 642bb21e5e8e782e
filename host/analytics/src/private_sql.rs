//! `privq sql --engine datafusion`: the exact bounded aggregates of a private
//! query ([`Plan::totals`]) computed by DataFusion over a CSV or Parquet table; the
//! driver then releases them with [`Plan::release_totals`], the function the
//! in-process engine uses, so for the same seed both engines release the same
//! bytes.
//!
//! Nothing here decides what is released. The engine reads every column it needs
//! as text ([`column_text`]: a CSV table is read as text; a Parquet column's values
//! are written as the text a CSV field would hold) and calls privq's own code in
//! one aggregate function, so each row is read as [`Table::from_csv`] reads it
//! ([`RowReader`]: trimming, the checks before any filter, `WHERE`,
//! `drop_invalid`, histogram bins, Rust's `f64` parsing). Which rows exist is
//! DataFusion's reader's decision, made for CSV with quoted newlines allowed so
//! that it never cuts the file inside a quoted value (tested against the in-process
//! reader in `tests/csv_reading.rs`).
//!
//! **One scan, one aggregate.** The query is
//!
//! ```sql
//! SELECT privq_bound(0, <the fields a row is read from>) FROM t GROUP BY privq_trim(<unit>)
//! ```
//!
//! (without a privacy unit, no `GROUP BY`; `privq_trim` trims the unit's text as
//! the row reader does, so one unit is one group). `privq_bound` is a user-defined
//! aggregate with a [`GroupsAccumulator`]: per unit it reads each row once, counts
//! the rows and the invalid ones, sets aside rows the filter rejects and rows of
//! keys outside the public list, and keeps the rest as (group key, the values'
//! `f64` bit patterns) in the library's [`UnitColumns`] (every unit's rows appended
//! to shared columns, sorted into units only at the end); partial states of one unit
//! from several partitions merge by concatenation. At the end the library bounds
//! the unit by the rule of [`BoundingKey`], exactly as [`Plan::totals`] does: a
//! unit within `max_groups` keys keeps them all and a key within `max_rows` rows
//! keeps them all — no hash is computed and nothing is sorted; only a unit over a
//! limit ranks its keys ([`BoundingKey::group_rank`]) or a key's rows
//! ([`BoundingKey::row_rank`], rows identical in their values numbered by
//! occurrence). It returns, per kept key, one unit, the kept rows and their exact
//! integer sums ([`ColumnTotals`](privq_host::aggregate::ColumnTotals): Σ steps,
//! Σ (steps − mid), Σ (steps − mid)² as `i128`, rows per quantile candidate),
//! serialized ([`PartialTotals`]); the driver adds these up per key.
//!
//! Without a privacy unit every row is its own unit: the aggregate keeps the
//! totals per key directly ([`RowTotals`]; partial totals add).
//!
//! **Refusals before any charge.** The totals carry the number of rows read and
//! of invalid rows: too many rows, an empty table or any invalid row is refused
//! with the in-process reader's error (the file is read again in process to name
//! the same line), and so is a file DataFusion's reader fails on (a CSV row with
//! the wrong number of fields): the in-process reader's typed error when it
//! refuses the file too. Nothing is charged here; the driver charges after.
//!
//! **On Ballista** (feature `ballista`, `privq sql --engine ballista`):
//! `totals_csv_ballista` and `totals_parquet_ballista` run the same query on a
//! standalone cluster started for the call. Both functions are named
//! (`privq_bound` an `AggregateUDFImpl`, `privq_trim` a `ScalarUDFImpl`), so
//! the extension codec (`codec`) carries them in the plan: the scheduler and
//! the executor rebuild `privq_bound` from the plan's spec, the header, the row
//! cap and the bounding key (secret: the cluster must be trusted with the data
//! anyway). Each decoded function counts its own rows against the cap; the
//! driver refuses on the total.

use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float64Array, LargeBinaryBuilder, LargeStringArray,
    StringArray, StringBuilder, StringViewArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Field, FieldRef, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
    Schema, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use datafusion::common::{DataFusionError, Result as DfResult, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, EmitTo, GroupsAccumulator,
    ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::{CsvReadOptions, ParquetReadOptions, SessionConfig, SessionContext};

use privq_host::aggregate::{
    AggregateError, BoundingKey, Columns, GroupTotals, Partial, PartialStates, PartialTotals, Plan,
    RowReader, RowTotals, Table, TextColumn, UnitColumns, trim_field,
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
    /// A column the query reads has a type privq does not read as text (a Parquet
    /// column that is not text, an integer, a float or a boolean).
    UnsupportedColumn {
        /// The column's name.
        column: String,
        /// Its Arrow type.
        data_type: String,
    },
    /// The result has an unexpected shape (not expected).
    Shape(&'static str),
    /// Starting or running the Ballista cluster failed (`--engine ballista`).
    Cluster(crate::query::QueryError),
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineError::Aggregate(e) => write!(f, "{e}"),
            EngineError::Io(e) => write!(f, "{e}"),
            EngineError::DataFusion(e) => write!(f, "query: {e}"),
            EngineError::UnsupportedColumn { column, data_type } => write!(
                f,
                "column {column:?} has type {data_type}: privq sql reads text, integer, \
                 floating-point and boolean columns only (cast it, or leave it out of the query)"
            ),
            EngineError::Shape(what) => write!(f, "unexpected query result: {what}"),
            EngineError::Cluster(e) => write!(f, "{e}"),
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
impl From<datafusion::parquet::errors::ParquetError> for EngineError {
    fn from(e: datafusion::parquet::errors::ParquetError) -> Self {
        EngineError::DataFusion(e.into())
    }
}
impl From<std::io::Error> for EngineError {
    fn from(e: std::io::Error) -> Self {
        EngineError::Io(e)
    }
}

/// True for the Arrow types of integers and floats privq reads (not `Float16`).
fn holds_numbers(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64
            | DataType::Float32
            | DataType::Float64
    )
}

/// True for the Arrow types [`column_text`] reads.
pub fn text_readable(t: &DataType) -> bool {
    match t {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null => true,
        DataType::Boolean => true,
        t if holds_numbers(t) => true,
        DataType::Dictionary(_, v) => {
            matches!(
                **v,
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            )
        }
        _ => false,
    }
}

/// A column's texts as [`column_text`] gives them: Arrow's own text array where the
/// column is text (no copy, and no 32-bit offsets to overflow: a `LargeUtf8` or
/// `Utf8View` column stays as it is), else the texts written.
#[derive(Debug, Clone)]
pub enum Texts {
    /// 32-bit offsets (`Utf8`; numbers and booleans written as text).
    Utf8(StringArray),
    /// 64-bit offsets (`LargeUtf8`; a dictionary of texts expanded).
    Large(LargeStringArray),
    /// Views (`Utf8View`).
    View(StringViewArray),
}

impl Texts {
    /// The number of values.
    pub fn len(&self) -> usize {
        match self {
            Texts::Utf8(a) => a.len(),
            Texts::Large(a) => a.len(),
            Texts::View(a) => a.len(),
        }
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when value `i` is a null (read as a missing value).
    pub fn is_null(&self, i: usize) -> bool {
        match self {
            Texts::Utf8(a) => a.is_null(i),
            Texts::Large(a) => a.is_null(i),
            Texts::View(a) => a.is_null(i),
        }
    }

    /// Value `i`'s text (that of a null is unspecified; see [`Texts::get`]).
    pub fn value(&self, i: usize) -> &str {
        match self {
            Texts::Utf8(a) => a.value(i),
            Texts::Large(a) => a.value(i),
            Texts::View(a) => a.value(i),
        }
    }

    /// Value `i`'s text, `None` for a null.
    pub fn get(&self, i: usize) -> Option<&str> {
        (!self.is_null(i)).then(|| self.value(i))
    }

    /// The values in order, `None` for a null.
    pub fn iter(&self) -> impl Iterator<Item = Option<&str>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}

/// A column's values as the text a CSV field would hold, which both engines read
/// with the same [`RowReader`]: text as it is; integers in decimal; floats as
/// Rust writes an `f64` (the shortest text that parses back to the same value, a
/// `Float32` widened exactly first; `NaN` and `inf` are read as non-finite);
/// booleans as `true`/`false`; a null as a missing value (the empty text). Other
/// types are refused ([`text_readable`]).
pub fn column_text(a: &ArrayRef) -> Result<Texts, EngineError> {
    fn build<T>(n: usize, null: impl Fn(usize) -> bool, value: impl Fn(usize) -> T) -> Texts
    where
        T: std::fmt::Display,
    {
        use std::fmt::Write as _;
        // At most 8 192 rows a batch of at most about 330 bytes each (an f64's
        // longest text without an exponent): far below what 32-bit offsets hold.
        let mut b = StringBuilder::with_capacity(n, n * 8);
        for i in 0..n {
            if null(i) {
                b.append_null();
            } else {
                // Writing to a builder cannot fail.
                let _ = write!(b, "{}", value(i));
                b.append_value("");
            }
        }
        Texts::Utf8(b.finish())
    }
    macro_rules! numbers {
        ($t:ty, $f:expr) => {{
            let p = a.as_primitive::<$t>();
            Ok(build(a.len(), |i| p.is_null(i), |i| $f(p.value(i))))
        }};
    }
    match a.data_type() {
        DataType::Utf8 => Ok(Texts::Utf8(a.as_string::<i32>().clone())),
        DataType::LargeUtf8 => Ok(Texts::Large(a.as_string::<i64>().clone())),
        DataType::Utf8View => Ok(Texts::View(a.as_string_view().clone())),
        DataType::Int8 => numbers!(Int8Type, |x| x),
        DataType::Int16 => numbers!(Int16Type, |x| x),
        DataType::Int32 => numbers!(Int32Type, |x| x),
        DataType::Int64 => numbers!(Int64Type, |x| x),
        DataType::UInt8 => numbers!(UInt8Type, |x| x),
        DataType::UInt16 => numbers!(UInt16Type, |x| x),
        DataType::UInt32 => numbers!(UInt32Type, |x| x),
        DataType::UInt64 => numbers!(UInt64Type, |x| x),
        DataType::Float32 => numbers!(Float32Type, f64::from),
        DataType::Float64 => numbers!(Float64Type, |x: f64| x),
        DataType::Boolean => {
            let b = a.as_boolean();
            Ok(build(a.len(), |i| b.is_null(i), |i| b.value(i)))
        }
        // A column of nulls, or a dictionary of texts expanded with 64-bit offsets
        // (its texts repeated may pass the 2 GiB 32-bit offsets hold).
        t if text_readable(t) => Ok(Texts::Large(
            cast(a, &DataType::LargeUtf8)?.as_string::<i64>().clone(),
        )),
        t => Err(EngineError::UnsupportedColumn {
            column: String::new(),
            data_type: t.to_string(),
        }),
    }
}

/// A column's values as a number, for a column of numbers (integers or floats)
/// that is read only as numbers (an aggregated value or a binned key, outside
/// [`RowReader::text_fields`]): each value as `f64` — an integer rounded to the
/// nearest, ties to even, a `Float32` widened exactly —, the number its text
/// ([`column_text`]) parses to, so the table reads the same with no text written.
/// `None` for another type (read as text).
pub fn column_numbers(a: &ArrayRef) -> Result<Option<Float64Array>, EngineError> {
    match a.data_type() {
        DataType::Float64 => Ok(Some(a.as_primitive::<Float64Type>().clone())),
        t if holds_numbers(t) => Ok(Some(
            cast(a, &DataType::Float64)?
                .as_primitive::<Float64Type>()
                .clone(),
        )),
        _ => Ok(None),
    }
}

/// One argument of `privq_bound` in a batch: its texts, or its numbers
/// ([`column_numbers`]).
enum Arg {
    Text(Texts),
    Numbers(Float64Array),
}

impl Arg {
    /// The number of values.
    fn len(&self) -> usize {
        match self {
            Arg::Text(a) => a.len(),
            Arg::Numbers(a) => a.len(),
        }
    }

    /// The argument of a column: numbers when `as_numbers` and it has them.
    fn of(a: &ArrayRef, as_numbers: bool) -> Result<Arg, EngineError> {
        if as_numbers && let Some(x) = column_numbers(a)? {
            return Ok(Arg::Numbers(x));
        }
        column_text(a).map(Arg::Text)
    }
}

/// What the aggregate shares: how a row is read, the public keys, the bounding.
pub(crate) struct Shared {
    reader: RowReader,
    /// For each header position, its text argument (`usize::MAX`: not read).
    slot: Vec<usize>,
    /// For each argument, whether it is only read as a number (outside
    /// [`RowReader::text_fields`]), so a numeric column skips its text.
    as_numbers: Vec<bool>,
    /// The public keys, encoded ([`encode_key`](privq_host::aggregate::encode_key)),
    /// in a foldhash set (looked up once per row; the keys are public).
    public: Option<foldhash::HashSet<String>>,
    /// The plan's bounds, grid and limits, and the bounding key.
    partial: Partial,
    /// The rows read so far, in every partition: past `max_rows` the query stops
    /// (the in-process reader then names the refusal), so what DataFusion reads
    /// and keeps grows with the cap, not with the file.
    seen: AtomicU64,
    /// The row cap ([`Table::from_csv`]'s `max_rows`).
    max_rows: u64,
    /// What it was built from (what a codec sends to rebuild it elsewhere).
    #[cfg_attr(not(feature = "ballista"), allow(dead_code))]
    origin: Origin,
}

/// What [`Shared`] is built from: the plan, the table's header (names as the
/// row reader sees them) and the bounding key.
#[derive(Clone)]
pub(crate) struct Origin {
    pub(crate) plan: Plan,
    pub(crate) header: Vec<String>,
    pub(crate) key: BoundingKey,
    pub(crate) max_rows: u64,
}

impl Shared {
    /// How rows of a table with `header` are read for `plan` and bounded under `key`.
    fn new(origin: Origin) -> Result<Shared, AggregateError> {
        let plan = &origin.plan;
        let reader = RowReader::new(&origin.header, &plan.columns())?;
        let mut slot = vec![usize::MAX; origin.header.len()];
        let text_fields = reader.text_fields();
        let fields = reader.fields();
        for (a, &h) in fields.iter().enumerate() {
            slot[h] = a;
        }
        let as_numbers = fields.iter().map(|h| !text_fields.contains(h)).collect();
        Ok(Shared {
            reader,
            slot,
            as_numbers,
            public: plan.public_keys().map(|keys| {
                keys.iter()
                    .map(|k| privq_host::aggregate::encode_key(k))
                    .collect()
            }),
            partial: plan.partial(origin.key),
            seen: AtomicU64::new(0),
            max_rows: origin.max_rows,
            origin,
        })
    }
}

/// `privq_bound` for `origin` (see the module documentation).
pub(crate) fn privq_bound(origin: Origin) -> Result<AggregateUDF, AggregateError> {
    let per_unit = origin.plan.privacy_unit().is_some();
    Ok(AggregateUDF::from(PrivqBound {
        signature: Signature::variadic_any(Volatility::Immutable),
        sh: Arc::new(Shared::new(origin)?),
        per_unit,
    }))
}

/// What a `privq_bound` function was built from (`None` for any other
/// aggregate function).
#[cfg_attr(not(feature = "ballista"), allow(dead_code))]
pub(crate) fn origin_of(f: &AggregateUDF) -> Option<&Origin> {
    f.inner().downcast_ref::<PrivqBound>().map(|b| &b.sh.origin)
}

/// The error that stops the query once the table is refused (over the row cap,
/// or an invalid row the plan does not drop); the in-process reader then reads
/// the file up to the same row and gives its typed error.
fn refused(what: &str) -> DataFusionError {
    DataFusionError::Execution(format!("{BOUND}: the table is refused ({what})"))
}

impl Shared {
    /// Reads the rows of a batch: for each row kept (and admitted by the public
    /// keys), `keep(row, unit, encoded key, values' bits)`; every row is counted
    /// first, in `count(row, false)`, in a loop of its own (a count is a random
    /// access into the units' counts: there the accesses overlap, in the reading
    /// loop each would wait). An invalid row the plan does not drop refuses the
    /// table: it is counted again, as invalid (`count(row, true)`), and the error
    /// stops the query (its rows read no longer matter; the invalid count is the
    /// driver's backstop, should an engine ever return totals anyway).
    fn read_batch(
        &self,
        values: &[ArrayRef],
        filter: Option<&BooleanArray>,
        mut count: impl FnMut(usize, bool),
        mut keep: impl FnMut(usize, Option<&str>, &str, &[u64]) -> DfResult<()>,
    ) -> DfResult<()> {
        let n = values.first().map_or(0, |a| a.len());
        let admitted = |r: usize| filter.is_none_or(|f| f.is_valid(r) && f.value(r));
        let mut counted = 0u64;
        for r in (0..n).filter(|&r| admitted(r)) {
            count(r, false);
            counted += 1;
        }
        // Counted before any row is read: once the rows of every partition pass
        // the cap the table is refused, whatever the other partitions still hold.
        if self.seen.fetch_add(counted, Ordering::Relaxed) + counted > self.max_rows {
            return Err(refused("more rows than the cap"));
        }
        let args = values
            .get(1..)
            .unwrap_or(&[])
            .iter()
            .zip(&self.as_numbers)
            .map(|(a, &n)| Arg::of(a, n).map_err(|e| DataFusionError::External(Box::new(e))))
            .collect::<DfResult<Vec<_>>>()?;
        let mut parsed = Vec::with_capacity(self.partial.values());
        let mut bits = Vec::with_capacity(self.partial.values());
        let mut key = String::new();
        for r in 0..n {
            if !admitted(r) {
                continue;
            }
            let arg = |h: usize| self.slot.get(h).and_then(|&a| args.get(a));
            let field = |h: usize| -> &str {
                match arg(h) {
                    Some(Arg::Text(col)) if !col.is_null(r) => trim_field(col.value(r)),
                    _ => "",
                }
            };
            let number = |h: usize| match arg(h) {
                Some(Arg::Numbers(col)) => Some(col.is_valid(r).then(|| col.value(r))),
                _ => None,
            };
            match self
                .reader
                .read_encoded(&field, &number, 0, &mut parsed, &mut key)
            {
                // An invalid row the plan does not drop refuses the table.
                Err(_) => {
                    count(r, true);
                    return Err(refused("an invalid row"));
                }
                Ok(kept) => {
                    if !kept || self.public.as_ref().is_some_and(|p| !p.contains(&key)) {
                        continue;
                    }
                    bits.clear();
                    bits.extend(parsed.iter().map(|x| x.to_bits()));
                    keep(r, self.reader.unit_of(&field), &key, &bits)?;
                }
            }
        }
        Ok(())
    }
}

/// The accumulator of `privq_bound`: the states of its groups (one per unit in
/// shared columns, [`UnitColumns`]; or one group of [`RowTotals`]).
struct Acc<S> {
    sh: Arc<Shared>,
    states: S,
    bytes: usize,
}

impl<S: PartialStates> std::fmt::Debug for Acc<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "privq_bound({} groups)", self.states.groups())
    }
}

fn state_err(what: &str) -> DataFusionError {
    DataFusionError::Execution(format!("{BOUND}: malformed {what} state"))
}

impl<S: PartialStates> Acc<S> {
    fn resize(&mut self, groups: usize) -> DfResult<()> {
        if self.states.resize(groups) {
            Ok(())
        } else {
            Err(DataFusionError::Execution(format!(
                "{BOUND}: {groups} groups (units) are more than it numbers"
            )))
        }
    }

    fn update(
        &mut self,
        values: &[ArrayRef],
        group: impl Fn(usize) -> usize,
        filter: Option<&BooleanArray>,
    ) -> DfResult<()> {
        let (sh, states, bytes) = (&*self.sh, &mut self.states, &mut self.bytes);
        let states = std::cell::RefCell::new(states);
        sh.read_batch(
            values,
            filter,
            |r, invalid| states.borrow_mut().count(group(r), invalid),
            |r, unit, key, bits| {
                *bytes += states
                    .borrow_mut()
                    .keep(&sh.partial, group(r), unit, key, bits)
                    .ok_or_else(|| {
                        DataFusionError::Internal(format!("{BOUND}: a row it cannot keep"))
                    })?;
                Ok(())
            },
        )
    }

    fn merge(&mut self, states: &[ArrayRef], group: impl Fn(usize) -> usize) -> DfResult<()> {
        let states = states
            .first()
            .and_then(|a| a.as_binary_opt::<i64>())
            .ok_or_else(|| state_err("(not binary)"))?;
        for i in 0..states.len() {
            if states.is_null(i) {
                return Err(state_err("a null"));
            }
            self.bytes += self
                .states
                .merge_state(&self.sh.partial, group(i), states.value(i))
                .ok_or_else(|| state_err("a"))?;
        }
        Ok(())
    }

    fn take(&mut self, emit_to: EmitTo) -> S {
        let n = match emit_to {
            EmitTo::All => usize::MAX,
            EmitTo::First(n) => n,
        };
        let out = self.states.take_first(&self.sh.partial, n);
        if self.states.groups() == 0 {
            self.bytes = 0;
        }
        out
    }
}

/// The binary array of the byte strings `write` gives, in order: 64-bit offsets,
/// since the states of a partition's units (their kept rows) can exceed the
/// 2 GiB a 32-bit offset array holds.
fn binary(write: impl FnOnce(&mut dyn FnMut(&[u8]))) -> ArrayRef {
    let mut b = LargeBinaryBuilder::new();
    write(&mut |bytes| b.append_value(bytes));
    Arc::new(b.finish()) as ArrayRef
}

impl<S: PartialStates> GroupsAccumulator for Acc<S> {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> DfResult<()> {
        self.resize(total_num_groups)?;
        self.update(values, |r| group_indices[r], opt_filter)
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> DfResult<ArrayRef> {
        let states = self.take(emit_to);
        let partial = &self.sh.partial;
        Ok(binary(|each| states.finish_each(partial, each)))
    }

    fn state(&mut self, emit_to: EmitTo) -> DfResult<Vec<ArrayRef>> {
        let states = self.take(emit_to);
        let partial = &self.sh.partial;
        Ok(vec![binary(|each| states.encode_states(partial, each))])
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> DfResult<()> {
        self.resize(total_num_groups)?;
        self.merge(values, |i| group_indices[i])
    }

    /// Each row as the state of a group of its own (DataFusion skips the partial
    /// aggregation when groups are nearly as many as rows).
    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> DfResult<Vec<ArrayRef>> {
        let rows = values.first().map_or(0, |a| a.len());
        let mut each: Acc<S> = Acc {
            sh: self.sh.clone(),
            states: S::default(),
            bytes: 0,
        };
        each.resize(rows)?;
        each.update(values, |r| r, opt_filter)?;
        let partial = &self.sh.partial;
        Ok(vec![binary(|f| each.states.encode_states(partial, f))])
    }

    fn size(&self) -> usize {
        self.bytes + self.states.groups() * S::GROUP_BYTES
    }
}

impl<S: PartialStates> Accumulator for Acc<S> {
    fn update_batch(&mut self, values: &[ArrayRef]) -> DfResult<()> {
        self.resize(1)?;
        self.update(values, |_| 0, None)
    }

    fn evaluate(&mut self) -> DfResult<ScalarValue> {
        self.resize(1)?;
        let states = self.take(EmitTo::All);
        let mut out = Vec::new();
        states.finish_each(&self.sh.partial, &mut |b| out = b.to_vec());
        Ok(ScalarValue::LargeBinary(Some(out)))
    }

    fn size(&self) -> usize {
        GroupsAccumulator::size(self)
    }

    fn state(&mut self) -> DfResult<Vec<ScalarValue>> {
        self.resize(1)?;
        let mut out = Vec::new();
        self.states
            .encode_states(&self.sh.partial, &mut |b| out = b.to_vec());
        Ok(vec![ScalarValue::LargeBinary(Some(out))])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> DfResult<()> {
        self.resize(1)?;
        self.merge(states, |_| 0)
    }
}

/// The aggregate's SQL name.
pub(crate) const BOUND: &str = "privq_bound";

/// The unit's trimming function's SQL name.
pub(crate) const TRIM: &str = "privq_trim";

/// `privq_bound(0, fields…)`: see the module documentation.
#[derive(Debug)]
struct PrivqBound {
    signature: Signature,
    sh: Arc<Shared>,
    per_unit: bool,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Shared(..)")
    }
}

impl PartialEq for PrivqBound {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.sh, &other.sh) && self.per_unit == other.per_unit
    }
}
impl Eq for PrivqBound {}
impl Hash for PrivqBound {
    fn hash<H: Hasher>(&self, state: &mut H) {
        BOUND.hash(state);
        self.per_unit.hash(state);
    }
}

impl AggregateUDFImpl for PrivqBound {
    fn name(&self) -> &str {
        BOUND
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::LargeBinary)
    }

    fn accumulator(&self, _args: AccumulatorArgs) -> DfResult<Box<dyn Accumulator>> {
        Ok(if self.per_unit {
            Box::new(self.acc::<UnitColumns>())
        } else {
            Box::new(self.acc::<Vec<RowTotals>>())
        })
    }

    fn state_fields(&self, args: StateFieldsArgs) -> DfResult<Vec<FieldRef>> {
        let name = format_state_name(args.name, "rows");
        Ok(vec![Field::new(name, DataType::LargeBinary, true).into()])
    }

    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(
        &self,
        _args: AccumulatorArgs,
    ) -> DfResult<Box<dyn GroupsAccumulator>> {
        Ok(if self.per_unit {
            Box::new(self.acc::<UnitColumns>())
        } else {
            Box::new(self.acc::<Vec<RowTotals>>())
        })
    }
}

impl PrivqBound {
    fn acc<S: Default>(&self) -> Acc<S> {
        Acc {
            sh: self.sh.clone(),
            states: S::default(),
            bytes: 0,
        }
    }
}

/// `name` as a quoted SQL identifier.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Refuses a table path that is not a regular file (a directory, which DataFusion
/// would read every file under, a pipe or a device), with the same error on both
/// engines.
pub fn check_table_file(path: &Path) -> std::io::Result<()> {
    if std::fs::metadata(path)?.is_file() {
        Ok(())
    } else {
        Err(privq_host::aggregate::not_a_regular_file())
    }
}

/// The table an engine reads.
#[derive(Clone, Copy)]
enum Source<'a> {
    Csv(&'a Path),
    Parquet(&'a Path),
}

impl Source<'_> {
    fn path(&self) -> &Path {
        match self {
            Source::Csv(p) | Source::Parquet(p) => p,
        }
    }

    /// The table as the in-process engine reads it.
    fn in_process(&self, columns: &Columns, max_rows: usize) -> Result<Table, EngineError> {
        match self {
            Source::Csv(path) => {
                check_table_file(path)?;
                let file = std::fs::File::open(path)?;
                Ok(Table::from_csv(
                    std::io::BufReader::new(file),
                    columns,
                    max_rows,
                )?)
            }
            Source::Parquet(path) => table_parquet(path, columns, max_rows),
        }
    }
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
    totals(Source::Csv(path), plan, key, max_rows, partitions)
}

/// [`totals_csv`] for a Parquet file: the same totals as [`Plan::totals`] of the
/// table [`table_parquet`] reads from it, or the same error.
pub fn totals_parquet(
    path: &Path,
    plan: &Plan,
    key: BoundingKey,
    max_rows: usize,
    partitions: usize,
) -> Result<Vec<GroupTotals>, EngineError> {
    totals(Source::Parquet(path), plan, key, max_rows, partitions)
}

/// [`totals_csv`] on an Apache Ballista cluster in standalone mode (feature
/// `ballista`): a scheduler and an executor of `partitions` task slots started
/// in this process for the call, on loopback ports, as for `privq ldp aggregate
/// --engine ballista` ([`ballista`](crate::ballista)). The same query and the
/// same aggregate, rebuilt by the scheduler and the executor from the plan
/// alone ([`codec`](crate::codec): the plan's spec, the header and the
/// bounding key travel in the aggregate's payload); the same totals, or the
/// same refusals, before anything is charged.
#[cfg(feature = "ballista")]
pub fn totals_csv_ballista(
    path: &Path,
    plan: &Plan,
    key: BoundingKey,
    max_rows: usize,
    partitions: usize,
) -> Result<Vec<GroupTotals>, EngineError> {
    totals_ballista(Source::Csv(path), plan, key, max_rows, partitions)
}

/// [`totals_parquet`] on a Ballista cluster, as [`totals_csv_ballista`].
#[cfg(feature = "ballista")]
pub fn totals_parquet_ballista(
    path: &Path,
    plan: &Plan,
    key: BoundingKey,
    max_rows: usize,
    partitions: usize,
) -> Result<Vec<GroupTotals>, EngineError> {
    totals_ballista(Source::Parquet(path), plan, key, max_rows, partitions)
}

#[cfg(feature = "ballista")]
fn totals_ballista(
    source: Source<'_>,
    plan: &Plan,
    key: BoundingKey,
    max_rows: usize,
    partitions: usize,
) -> Result<Vec<GroupTotals>, EngineError> {
    use crate::query::{block_on_guarded, runtime};
    check_path(source)?;
    let work_dir = crate::ballista::WorkDir::create()?;
    let partitions = partitions.max(1);
    // The scheduler's and executor's loops share the runtime with the query.
    let runtime = runtime(partitions.max(2)).map_err(EngineError::Cluster)?;
    let result = block_on_guarded(&runtime, async {
        let limits = privq_host::ldp::campaign::Limits::default();
        let ctx = crate::ballista::cluster_session(&limits, partitions, work_dir.path()).await?;
        Ok(totals_async(ctx, source, plan, key, max_rows).await)
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    result.map_err(EngineError::Cluster)?
}

/// The table of a Parquet file as the in-process engine reads it: each column the
/// query reads written as text ([`column_text`]) and read by
/// [`Table::from_columns`] (an error names the line a CSV file with the same rows
/// would have: row `r`, from 0, is line `r + 2`). A column of another type is
/// refused ([`EngineError::UnsupportedColumn`]); reading stops past `max_rows`.
pub fn table_parquet(
    path: &Path,
    columns: &Columns,
    max_rows: usize,
) -> Result<Table, EngineError> {
    use datafusion::parquet::arrow::ProjectionMask;
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    check_table_file(path)?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path)?)?;
    let schema = builder.schema().clone();
    let header: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let reader = RowReader::new(&header, columns)?;
    let fields = reader.fields();
    let text_fields = reader.text_fields();
    check_types(&schema, &fields)?;
    let mask = ProjectionMask::roots(builder.parquet_schema(), fields.iter().copied());
    // Each read column's texts or numbers, batch after batch (a batch's column in
    // the order of `fields`, as the projection keeps the file's order).
    let mut chunks: Vec<Vec<Arg>> = fields.iter().map(|_| Vec::new()).collect();
    let mut rows = 0usize;
    // Batches of 2¹⁶ rows (not 1 024): a value is found by a binary search over the
    // batches, so fewer keep it short. A batch holds at most one row more than the
    // cap: a table past the cap is refused once one batch past it is read.
    let batch_rows = max_rows.saturating_add(1).clamp(1, 1 << 16);
    // The Parquet reader asserts some limits rather than returning them (a batch's
    // text past 2 GiB in one encoding): a panic is an error naming it, before any
    // charge.
    let read = std::panic::AssertUnwindSafe(|| -> Result<(), EngineError> {
        for batch in builder
            .with_projection(mask)
            .with_batch_size(batch_rows)
            .build()?
        {
            let batch = batch?;
            for (j, chunk) in chunks.iter_mut().enumerate() {
                let as_numbers = !text_fields.contains(&fields[j]);
                chunk.push(Arg::of(batch.column(j), as_numbers)?);
            }
            rows += batch.num_rows();
            if rows > max_rows {
                break;
            }
        }
        Ok(())
    });
    std::panic::catch_unwind(read)
        .map_err(|_| EngineError::Shape("the Parquet reader panicked"))??;
    let mut data: Vec<(String, ParquetText)> = header
        .iter()
        .map(|h| (h.clone(), ParquetText::Unread(rows)))
        .collect();
    for (&h, chunks) in fields.iter().zip(chunks) {
        let mut starts = Vec::with_capacity(chunks.len());
        let mut start = 0;
        for c in &chunks {
            starts.push(start);
            start += c.len();
        }
        data[h].1 = ParquetText::Read {
            chunks,
            starts,
            len: start,
        };
    }
    Ok(Table::from_columns(&data, rows, columns, max_rows)?)
}

/// A Parquet column as [`Table::from_columns`] reads it: its values batch after
/// batch, as texts or numbers ([`Arg`]; a null as the empty text or a missing
/// number; `starts[i]` is batch `i`'s first row), or, for a column the query does
/// not read, `rows` empty texts.
enum ParquetText {
    Read {
        chunks: Vec<Arg>,
        starts: Vec<usize>,
        len: usize,
    },
    Unread(usize),
}

impl ParquetText {
    /// The batch holding `row`, and the row's place in it.
    fn at(&self, row: usize) -> Option<(&Arg, usize)> {
        let ParquetText::Read { chunks, starts, .. } = self else {
            return None;
        };
        let i = starts.partition_point(|&s| s <= row).saturating_sub(1);
        Some((chunks.get(i)?, row.checked_sub(*starts.get(i)?)?))
    }
}

impl TextColumn for ParquetText {
    fn len(&self) -> usize {
        match self {
            ParquetText::Read { len, .. } => *len,
            ParquetText::Unread(n) => *n,
        }
    }
    fn text(&self, row: usize) -> &str {
        match self.at(row) {
            Some((Arg::Text(a), r)) if r < a.len() => a.get(r).unwrap_or(""),
            _ => "",
        }
    }
    fn holds_numbers(&self) -> bool {
        matches!(self, ParquetText::Read { chunks, .. } if chunks.first().is_some_and(|c| matches!(c, Arg::Numbers(_))))
    }
    fn number(&self, row: usize) -> Option<f64> {
        match self.at(row) {
            Some((Arg::Numbers(a), r)) if r < a.len() && a.is_valid(r) => Some(a.value(r)),
            _ => None,
        }
    }
}

/// The column names of the Parquet file `path`, in order, as its own schema holds
/// them (repeated names included).
fn parquet_header(path: &Path) -> Result<Vec<String>, EngineError> {
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let builder = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path)?)?;
    Ok(builder
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect())
}

/// Refuses a column the query reads whose type [`column_text`] does not read.
fn check_types(schema: &Schema, fields: &[usize]) -> Result<(), EngineError> {
    for &h in fields {
        let f = schema.field(h);
        if !text_readable(f.data_type()) {
            return Err(EngineError::UnsupportedColumn {
                column: f.name().clone(),
                data_type: f.data_type().to_string(),
            });
        }
    }
    Ok(())
}

fn totals(
    source: Source<'_>,
    plan: &Plan,
    key: BoundingKey,
    max_rows: usize,
    partitions: usize,
) -> Result<Vec<GroupTotals>, EngineError> {
    check_path(source)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(partitions.max(1))
        .enable_all()
        .build()?;
    // As on a Ballista cluster: no page index, bloom filter or filter pushdown
    // (every row is scanned; the filter is the row reader's).
    let config = crate::query::trusted_reads_only(
        SessionConfig::new().with_target_partitions(partitions.max(1)),
    );
    let ctx = SessionContext::new_with_config(config);
    // A panic inside DataFusion (an Arrow limit it asserts rather than returns)
    // is an error naming it, not an abort; nothing has been charged.
    let run = std::panic::AssertUnwindSafe(|| {
        runtime.block_on(totals_async(ctx, source, plan, key, max_rows))
    });
    std::panic::catch_unwind(run).map_err(|_| EngineError::Shape("the engine panicked"))?
}

/// The path checks of both engines: a path DataFusion would read as a pattern,
/// or one that is not a regular file, is refused before any query.
fn check_path(source: Source<'_>) -> Result<(), EngineError> {
    // DataFusion reads a table path as a glob: `t[1].csv` would read `t1.csv`.
    let name = source.path().to_string_lossy();
    if name.contains(['*', '?', '[', ']', '{', '}']) {
        return Err(EngineError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{name}: the DataFusion engine reads a path as a pattern, so a file name \
                 with *, ?, [, ], {{ or }} is refused (rename it, or use the in-process engine)"
            ),
        )));
    }
    check_table_file(source.path())?;
    Ok(())
}

/// The totals computed by the session `ctx` (DataFusion in this process, or a
/// Ballista cluster's client); the path already checked ([`check_path`]).
async fn totals_async(
    ctx: SessionContext,
    source: Source<'_>,
    plan: &Plan,
    key: BoundingKey,
    max_rows: usize,
) -> Result<Vec<GroupTotals>, EngineError> {
    let path = std::path::absolute(source.path())?;
    let extension = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    // The header as the reader sees it, and each column's name in DataFusion's SQL.
    let (header, names): (Vec<String>, Vec<String>) = match source {
        Source::Csv(_) => {
            // The header as the in-process reader sees it.
            let header: Vec<String> = {
                let file = std::fs::File::open(&path)?;
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
            // Positional names (`c0`, `c1`, …): the header's own names never reach
            // DataFusion (a name repeated in the header, empty or quoted, is the
            // reader's business alone, as in process).
            let schema = Schema::new(
                (0..header.len())
                    .map(|i| Field::new(format!("c{i}"), DataType::Utf8, true))
                    .collect::<Vec<_>>(),
            );
            // `newlines_in_values`: a quoted value may hold a newline, so DataFusion
            // must not cut the file into byte ranges at '\n' (its repartitioning of
            // files from 1 MiB is blind to quotes: a cut inside a quoted value would
            // read part of it as rows, at a place that depends on every other unit's
            // bytes).
            let options = CsvReadOptions::new()
                .has_header(true)
                .schema(&schema)
                .file_extension(&extension)
                .newlines_in_values(true);
            ctx.register_csv("t", &path.to_string_lossy(), options)
                .await?;
            let names = (0..header.len()).map(|i| format!("c{i}")).collect();
            (header, names)
        }
        Source::Parquet(_) => {
            // The header as the in-process reader sees it: the file's own schema
            // (DataFusion's keeps one of two columns of the same name), checked
            // before DataFusion merges the columns' types.
            let header = parquet_header(&path)?;
            RowReader::new(&header, &plan.columns())?;
            let options = ParquetReadOptions::default().file_extension(&extension);
            if let Err(e) = ctx
                .register_parquet("t", &path.to_string_lossy(), options)
                .await
            {
                // A file DataFusion cannot register (two columns of one name and
                // different types): the in-process reader's error when it
                // refuses the file too, else DataFusion's.
                source.in_process(&plan.columns(), max_rows)?;
                return Err(e.into());
            }
            (header.clone(), header)
        }
    };
    let columns = plan.columns();
    let fields = RowReader::new(&header, &columns)?.fields();
    if let Source::Parquet(_) = source {
        let schema = ctx.table_provider("t").await?.schema();
        // Each field the query reads by name, typed as DataFusion reads it.
        let named: Vec<usize> = fields
            .iter()
            .map(|&h| schema.index_of(&header[h]))
            .collect::<Result<_, _>>()?;
        check_types(&schema, &named)?;
    }
    ctx.register_udaf(privq_bound(Origin {
        plan: plan.clone(),
        header: header.clone(),
        key,
        max_rows: max_rows as u64,
    })?);
    let mut args = vec!["0".to_string()];
    args.extend(fields.iter().map(|&h| quote(&names[h])));
    let mut query = format!("SELECT {BOUND}({}) FROM t", args.join(", "));
    if let Some(unit) = plan.privacy_unit() {
        // The unit's column, as the reader trims it: one unit, one group.
        ctx.register_udf(privq_trim());
        let h = header
            .iter()
            .position(|h| h.trim() == unit)
            .ok_or(EngineError::Shape("the unit's column"))?;
        query.push_str(&format!(" GROUP BY {TRIM}({})", quote(&names[h])));
    }
    let result = match ctx.sql(&query).await {
        Ok(df) => df.collect().await,
        Err(e) => Err(e),
    };
    let batches = match result {
        Ok(b) => b,
        Err(e) => {
            // A file DataFusion's reader refuses (a row with the wrong number of
            // fields), or one `privq_bound` stopped on (more rows than the cap, an
            // invalid row): the in-process reader's typed error when it refuses it
            // too, the reading stopped at the same row.
            source.in_process(&columns, max_rows)?;
            return Err(e.into());
        }
    };
    let mut all = PartialTotals::default();
    let check = plan.piece_check();
    for batch in &batches {
        let b = batch
            .column(0)
            .as_binary_opt::<i64>()
            .ok_or(EngineError::Shape("the aggregate is not binary"))?;
        for i in 0..b.len() {
            let piece = PartialTotals::decode(b.value(i)).ok_or(EngineError::Shape("a result"))?;
            // Each unit's piece checked against the plan before it is added:
            // nothing is charged yet.
            check.check(&piece)?;
            all.add(piece);
        }
    }
    if all.invalid() > 0 || all.seen() > max_rows as u64 {
        // Not expected (`privq_bound` stops the query first); the in-process
        // reader names the same line and column.
        source.in_process(&columns, max_rows)?;
        return Err(EngineError::Shape(
            "the engine refused rows the reader accepts",
        ));
    }
    if all.seen() == 0 {
        return Err(AggregateError::EmptyTable.into());
    }
    all.into_totals().ok_or(EngineError::Shape("a key"))
}

/// `privq_trim(text)`: the text trimmed as the row reader trims a field (the
/// same array when nothing needs trimming). A named function (not a closure),
/// so that a codec can recognise it and a cluster rebuild it.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct PrivqTrim {
    signature: Signature,
}

/// The `privq_trim` function.
pub(crate) fn privq_trim() -> ScalarUDF {
    ScalarUDF::from(PrivqTrim {
        signature: Signature::exact(vec![DataType::Utf8], Volatility::Immutable),
    })
}

impl ScalarUDFImpl for PrivqTrim {
    fn name(&self) -> &str {
        TRIM
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    /// `LargeUtf8`: DataFusion groups by it, and a partition's distinct units
    /// may hold more than the 2 GiB of text a 32-bit offset array holds.
    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::LargeUtf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        trim(&args.args)
    }
}

fn trim(args: &[ColumnarValue]) -> DfResult<ColumnarValue> {
    let arg = args
        .first()
        .ok_or_else(|| DataFusionError::Internal("privq_trim needs an argument".into()))?;
    let a = match arg {
        ColumnarValue::Array(a) => a.clone(),
        ColumnarValue::Scalar(s) => s.to_array()?,
    };
    let text = column_text(&a).map_err(|e| DataFusionError::External(Box::new(e)))?;
    let trimmed = text
        .iter()
        .all(|v| v.is_none_or(|s| trim_field(s).len() == s.len()));
    // The text with 64-bit offsets (DataFusion's group map of `Utf8` panics past
    // 2 GiB of a partition's distinct texts); a trimmed `Utf8` column shares its
    // values' buffer.
    let out: ArrayRef = match text {
        Texts::Large(a) if trimmed => Arc::new(a),
        Texts::Utf8(a) if trimmed => cast(&a, &DataType::LargeUtf8)?,
        text => Arc::new(
            text.iter()
                .map(|v| v.map(trim_field))
                .collect::<LargeStringArray>(),
        ),
    };
    Ok(ColumnarValue::Array(out))
}

fn csv_reader<R: std::io::Read>(r: R) -> csv::Reader<R> {
    csv::ReaderBuilder::new().from_reader(r)
}

#[cfg(test)]
mod tests;

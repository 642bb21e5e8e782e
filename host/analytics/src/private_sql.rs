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
//! (without a privacy unit, no `GROUP BY`). `privq_bound` is a user-defined
//! aggregate with a [`GroupsAccumulator`]: per unit it reads each row once, counts
//! the rows and the invalid ones, sets aside rows the filter rejects and rows of
//! keys outside the public list, and keeps the rest as (group key, the values'
//! `f64` bit patterns); partial states of one unit from several partitions merge
//! by concatenation. At the end it bounds the unit by the rule of [`BoundingKey`],
//! exactly as [`Plan::totals`] does: a unit within `max_groups` keys keeps them
//! all and a key within `max_rows` rows keeps them all — no hash is computed and
//! nothing is sorted; only a unit over a limit ranks its keys
//! ([`BoundingKey::group_rank`]) or a key's rows ([`BoundingKey::row_rank`], rows
//! identical in their values numbered by occurrence). It returns, per kept key, one
//! unit, the kept rows and their exact integer sums ([`ColumnTotals`]: Σ steps,
//! Σ (steps − mid), Σ (steps − mid)² as `i128`, rows per quantile candidate),
//! serialized; the driver adds these up per key.
//!
//! Without a privacy unit every row is its own unit: the aggregate keeps the
//! totals per key directly (partial totals add).
//!
//! **Refusals before any charge.** The totals carry the number of rows read and
//! of invalid rows: too many rows, an empty table or any invalid row is refused
//! with the in-process reader's error (the file is read again in process to name
//! the same line), and so is a file DataFusion's reader fails on (a CSV row with
//! the wrong number of fields): the in-process reader's typed error when it
//! refuses the file too. Nothing is charged here; the driver charges after.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BooleanArray, StringArray, StringBuilder,
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
    Signature, Volatility, create_udf,
};
use datafusion::prelude::{CsvReadOptions, ParquetReadOptions, SessionConfig, SessionContext};

use privq_host::aggregate::{
    AggregateError, BoundingKey, ColumnTotals, Columns, Contribution, GroupTotals, Plan, RowReader,
    Table, decode_key,
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

/// True for the Arrow types [`column_text`] reads.
pub fn text_readable(t: &DataType) -> bool {
    match t {
        DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View
        | DataType::Null
        | DataType::Boolean
        | DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64
        | DataType::Float32
        | DataType::Float64 => true,
        DataType::Dictionary(_, v) => {
            matches!(
                **v,
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            )
        }
        _ => false,
    }
}

/// A column's values as the text a CSV field would hold, which both engines read
/// with the same [`RowReader`]: text as it is; integers in decimal; floats as
/// Rust writes an `f64` (the shortest text that parses back to the same value, a
/// `Float32` widened exactly first; `NaN` and `inf` are read as non-finite);
/// booleans as `true`/`false`; a null as a missing value (the empty text). Other
/// types are refused ([`text_readable`]).
pub fn column_text(a: &ArrayRef) -> Result<StringArray, EngineError> {
    fn build<T>(n: usize, null: impl Fn(usize) -> bool, value: impl Fn(usize) -> T) -> StringArray
    where
        T: std::fmt::Display,
    {
        use std::fmt::Write as _;
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
        b.finish()
    }
    macro_rules! numbers {
        ($t:ty, $f:expr) => {{
            let p = a.as_primitive::<$t>();
            Ok(build(a.len(), |i| p.is_null(i), |i| $f(p.value(i))))
        }};
    }
    match a.data_type() {
        DataType::Utf8 => Ok(a.as_string::<i32>().clone()),
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
        t if text_readable(t) => Ok(cast(a, &DataType::Utf8)?.as_string::<i32>().clone()),
        t => Err(EngineError::UnsupportedColumn {
            column: String::new(),
            data_type: t.to_string(),
        }),
    }
}

/// What the aggregate shares: how a row is read, the public keys, the bounding.
struct Shared {
    reader: RowReader,
    /// For each header position, its text argument (`usize::MAX`: not read).
    slot: Vec<usize>,
    /// The public keys, encoded ([`encode_key`](privq_host::aggregate::encode_key)).
    public: Option<HashSet<String>>,
    limits: Contribution,
    key: BoundingKey,
    /// Value columns.
    values: usize,
    mids: Vec<i64>,
    candidates: Vec<Option<Vec<i64>>>,
    plan: Plan,
}

impl Shared {
    /// Empty totals of one group.
    fn empty_sum(&self) -> Sum {
        Sum {
            units: 0,
            rows: 0,
            columns: self
                .candidates
                .iter()
                .map(|c| ColumnTotals {
                    at_candidate: c.as_ref().map_or(Vec::new(), |c| vec![0; c.len()]),
                    ..ColumnTotals::default()
                })
                .collect(),
        }
    }

    /// Adds one kept row (its values' bit patterns) to `sum`.
    fn add_row(&self, sum: &mut Sum, bits: &[u64]) {
        sum.rows += 1;
        for (c, (t, &b)) in sum.columns.iter_mut().zip(bits).enumerate() {
            let s = self.plan.value_steps(c, f64::from_bits(b));
            t.add(s, self.mids[c], self.candidates[c].as_deref());
        }
    }

    /// Reads the rows of a batch: for each row kept (and admitted by the public
    /// keys), `keep(row, unit, encoded key, values' bits)`; every row is counted
    /// in `count(row, invalid)`.
    fn read_batch(
        &self,
        values: &[ArrayRef],
        filter: Option<&BooleanArray>,
        mut count: impl FnMut(usize, bool),
        mut keep: impl FnMut(usize, Option<&str>, &str, &[u64]),
    ) -> DfResult<()> {
        let n = values.first().map_or(0, |a| a.len());
        let texts = values
            .get(1..)
            .unwrap_or(&[])
            .iter()
            .map(|a| column_text(a).map_err(|e| DataFusionError::External(Box::new(e))))
            .collect::<DfResult<Vec<_>>>()?;
        let mut parsed = Vec::with_capacity(self.values);
        let mut bits = Vec::with_capacity(self.values);
        let mut key = String::new();
        for r in 0..n {
            if let Some(f) = filter
                && !(f.is_valid(r) && f.value(r))
            {
                continue;
            }
            let field = |h: usize| -> &str {
                match self.slot.get(h) {
                    Some(&a) if a != usize::MAX => {
                        let col = &texts[a];
                        if col.is_null(r) {
                            ""
                        } else {
                            col.value(r).trim()
                        }
                    }
                    _ => "",
                }
            };
            match self.reader.read_encoded(&field, 0, &mut parsed, &mut key) {
                Err(_) => count(r, true),
                Ok(kept) => {
                    count(r, false);
                    if !kept || self.public.as_ref().is_some_and(|p| !p.contains(&key)) {
                        continue;
                    }
                    bits.clear();
                    bits.extend(parsed.iter().map(|x| x.to_bits()));
                    keep(r, self.reader.unit_of(&field), &key, &bits);
                }
            }
        }
        Ok(())
    }
}

/// Exact totals of one group key.
#[derive(Debug, Clone, Default)]
struct Sum {
    units: u64,
    rows: u64,
    columns: Vec<ColumnTotals>,
}

impl Sum {
    fn add(&mut self, other: &Sum) {
        self.units += other.units;
        self.rows += other.rows;
        if self.columns.len() < other.columns.len() {
            self.columns
                .resize(other.columns.len(), ColumnTotals::default());
        }
        for (a, b) in self.columns.iter_mut().zip(&other.columns) {
            a.sum += b.sum;
            a.centred += b.centred;
            a.squares += b.squares;
            if a.at_candidate.len() < b.at_candidate.len() {
                a.at_candidate.resize(b.at_candidate.len(), 0);
            }
            for (x, y) in a.at_candidate.iter_mut().zip(&b.at_candidate) {
                *x += y;
            }
        }
    }
}

/// Totals by encoded key, with the rows read and the invalid ones: a result of
/// the aggregate (per unit, or per partition without units), and what the driver
/// adds them up into.
#[derive(Debug, Default)]
struct Summed {
    seen: u64,
    invalid: u64,
    groups: HashMap<String, Sum>,
}

impl Summed {
    fn add(&mut self, other: Summed) {
        self.seen += other.seen;
        self.invalid += other.invalid;
        for (k, s) in other.groups {
            match self.groups.get_mut(&k) {
                Some(t) => t.add(&s),
                None => {
                    self.groups.insert(k, s);
                }
            }
        }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        put(out, self.seen);
        put(out, self.invalid);
        put(out, self.groups.len() as u64);
        for (k, s) in &self.groups {
            put_str(out, k);
            put(out, s.units);
            put(out, s.rows);
            put(out, s.columns.len() as u64);
            for c in &s.columns {
                for x in [c.sum, c.centred, c.squares] {
                    out.extend_from_slice(&x.to_le_bytes());
                }
                put(out, c.at_candidate.len() as u64);
                for &n in &c.at_candidate {
                    put(out, n);
                }
            }
        }
    }

    fn decode(bytes: &[u8]) -> Option<Summed> {
        let mut r = Bytes(bytes);
        let mut out = Summed {
            seen: r.u64()?,
            invalid: r.u64()?,
            groups: HashMap::new(),
        };
        for _ in 0..r.u64()? {
            let k = r.str()?.to_string();
            let mut s = Sum {
                units: r.u64()?,
                rows: r.u64()?,
                columns: Vec::new(),
            };
            for _ in 0..r.u64()? {
                let mut c = ColumnTotals {
                    sum: r.i128()?,
                    centred: r.i128()?,
                    squares: r.i128()?,
                    at_candidate: Vec::new(),
                };
                for _ in 0..r.u64()? {
                    c.at_candidate.push(r.u64()?);
                }
                s.columns.push(c);
            }
            out.groups.insert(k, s);
        }
        r.0.is_empty().then_some(out)
    }
}

fn put(out: &mut Vec<u8>, x: u64) {
    out.extend_from_slice(&x.to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// A reader of the aggregate's own serialized states.
struct Bytes<'a>(&'a [u8]);

impl<'a> Bytes<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn i128(&mut self) -> Option<i128> {
        Some(i128::from_le_bytes(self.take(16)?.try_into().ok()?))
    }
    fn str(&mut self) -> Option<&'a str> {
        let n = usize::try_from(self.u64()?).ok()?;
        std::str::from_utf8(self.take(n)?).ok()
    }
}

/// The state of one group of the aggregate.
trait GroupState: Default + Send + Sync + std::fmt::Debug + 'static {
    fn count(&mut self, invalid: bool);
    /// A kept row; returns the bytes it added to the state.
    fn keep(&mut self, sh: &Shared, unit: Option<&str>, key: &str, bits: &[u64]) -> usize;
    fn encode_state(&self, out: &mut Vec<u8>);
    fn merge_state(&mut self, sh: &Shared, bytes: &[u8]) -> Option<usize>;
    fn finish(self, sh: &Shared) -> Summed;
}

/// Without a privacy unit: totals per key, every row its own unit.
#[derive(Debug, Default)]
struct RowTotals(Summed);

impl GroupState for RowTotals {
    fn count(&mut self, invalid: bool) {
        self.0.seen += 1;
        self.0.invalid += u64::from(invalid);
    }
    fn keep(&mut self, sh: &Shared, _: Option<&str>, key: &str, bits: &[u64]) -> usize {
        let mut added = 0;
        if !self.0.groups.contains_key(key) {
            self.0.groups.insert(key.to_string(), sh.empty_sum());
            added = key.len() + 64 + 64 * sh.values;
        }
        if let Some(sum) = self.0.groups.get_mut(key) {
            sum.units += 1;
            sh.add_row(sum, bits);
        }
        added
    }
    fn encode_state(&self, out: &mut Vec<u8>) {
        self.0.encode(out);
    }
    fn merge_state(&mut self, _: &Shared, bytes: &[u8]) -> Option<usize> {
        let other = Summed::decode(bytes)?;
        let n = bytes.len();
        self.0.add(other);
        Some(n)
    }
    fn finish(self, _: &Shared) -> Summed {
        self.0
    }
}

/// One unit's kept rows of one key: their values' bit patterns, row after row.
#[derive(Debug, Default)]
struct KeyRows {
    key: String,
    rows: u64,
    bits: Vec<u64>,
}

/// One privacy unit: its rows by key, until it is bounded at the end.
#[derive(Debug, Default)]
struct UnitRows {
    seen: u64,
    invalid: u64,
    unit: Option<String>,
    keys: Vec<KeyRows>,
    /// Key positions, once the unit has many keys.
    index: HashMap<String, usize>,
}

impl UnitRows {
    /// The position of `key` in `keys`, added if new (and the bytes added).
    fn slot(&mut self, key: &str) -> (usize, usize) {
        const LINEAR: usize = 8;
        let found = if self.index.is_empty() {
            self.keys.iter().position(|k| k.key == key)
        } else {
            self.index.get(key).copied()
        };
        if let Some(i) = found {
            return (i, 0);
        }
        let i = self.keys.len();
        self.keys.push(KeyRows {
            key: key.to_string(),
            ..KeyRows::default()
        });
        if !self.index.is_empty() {
            self.index.insert(key.to_string(), i);
        } else if self.keys.len() > LINEAR {
            self.index = self
                .keys
                .iter()
                .enumerate()
                .map(|(i, k)| (k.key.clone(), i))
                .collect();
        }
        (i, 2 * key.len() + 96)
    }
}

impl GroupState for UnitRows {
    fn count(&mut self, invalid: bool) {
        self.seen += 1;
        self.invalid += u64::from(invalid);
    }
    fn keep(&mut self, _: &Shared, unit: Option<&str>, key: &str, bits: &[u64]) -> usize {
        let mut added = 8 * bits.len();
        if self.unit.is_none() {
            self.unit = unit.map(str::to_string);
            added += unit.map_or(0, str::len) + 24;
        }
        let (i, more) = self.slot(key);
        let k = &mut self.keys[i];
        k.rows += 1;
        k.bits.extend_from_slice(bits);
        added + more
    }
    fn encode_state(&self, out: &mut Vec<u8>) {
        put(out, self.seen);
        put(out, self.invalid);
        match &self.unit {
            Some(u) => {
                put(out, 1);
                put_str(out, u);
            }
            None => put(out, 0),
        }
        put(out, self.keys.len() as u64);
        for k in &self.keys {
            put_str(out, &k.key);
            put(out, k.rows);
            put(out, k.bits.len() as u64);
            for &b in &k.bits {
                put(out, b);
            }
        }
    }
    fn merge_state(&mut self, sh: &Shared, bytes: &[u8]) -> Option<usize> {
        let mut r = Bytes(bytes);
        self.seen += r.u64()?;
        self.invalid += r.u64()?;
        if r.u64()? == 1 {
            let u = r.str()?;
            if self.unit.is_none() {
                self.unit = Some(u.to_string());
            }
        }
        for _ in 0..r.u64()? {
            let key = r.str()?;
            let rows = r.u64()?;
            let n = usize::try_from(r.u64()?).ok()?;
            if n as u64 != rows * sh.values as u64 {
                return None;
            }
            let (i, _) = self.slot(key);
            let k = &mut self.keys[i];
            k.rows += rows;
            k.bits.reserve(n);
            for _ in 0..n {
                k.bits.push(r.u64()?);
            }
        }
        r.0.is_empty().then_some(bytes.len())
    }
    /// The unit bounded by the rule of [`BoundingKey`], as [`Plan::totals`]
    /// bounds it: ranks are computed only for a unit over a limit.
    fn finish(self, sh: &Shared) -> Summed {
        let mut out = Summed {
            seen: self.seen,
            invalid: self.invalid,
            groups: HashMap::new(),
        };
        let unit = self.unit.as_deref().unwrap_or("");
        let mut keys = self.keys;
        let max_groups = sh.limits.max_groups() as usize;
        if keys.len() > max_groups {
            let mut ranked: Vec<(u64, KeyRows)> = keys
                .into_iter()
                .map(|k| (sh.key.group_rank(unit, &k.key), k))
                .collect();
            ranked.sort_unstable_by(|a, b| {
                a.0.cmp(&b.0)
                    .then_with(|| a.1.key.as_bytes().cmp(b.1.key.as_bytes()))
            });
            ranked.truncate(max_groups);
            keys = ranked.into_iter().map(|(_, k)| k).collect();
        }
        let max_rows = sh.limits.max_rows() as usize;
        for k in keys {
            let mut sum = sh.empty_sum();
            sum.units = 1;
            if k.rows as usize <= max_rows {
                for row in 0..k.rows as usize {
                    sh.add_row(&mut sum, &k.bits[row * sh.values..(row + 1) * sh.values]);
                }
            } else if sh.values == 0 {
                // Rows without values are identical: which ones changes nothing.
                sum.rows = max_rows as u64;
            } else {
                for row in kept_rows(sh, unit, &k) {
                    sh.add_row(&mut sum, row);
                }
            }
            out.groups.insert(k.key, sum);
        }
        out
    }
}

/// The `max_rows` rows a unit keeps of key `k` (which has more): the rule of
/// [`BoundingKey`], as `privq_host`'s bounding applies it (rows identical in all
/// values numbered by occurrence after ordering them by their values' bit
/// patterns as signed integers; then the smallest by rank, values, occurrence).
fn kept_rows<'a>(sh: &Shared, unit: &str, k: &'a KeyRows) -> Vec<&'a [u64]> {
    let signed = |r: &[u64]| r.iter().map(|&b| b as i64).collect::<Vec<i64>>();
    let mut rows: Vec<(Vec<i64>, &[u64])> = k
        .bits
        .chunks_exact(sh.values)
        .map(|r| (signed(r), r))
        .collect();
    rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut ranked: Vec<(u64, u64, usize)> = Vec::with_capacity(rows.len());
    let mut occurrence = 0u64;
    let mut values = vec![0f64; sh.values];
    for (i, (s, r)) in rows.iter().enumerate() {
        occurrence = if i > 0 && rows[i - 1].0 == *s {
            occurrence + 1
        } else {
            0
        };
        for (v, &b) in values.iter_mut().zip(r.iter()) {
            *v = f64::from_bits(b);
        }
        ranked.push((
            sh.key.row_rank(unit, &k.key, &values, occurrence),
            occurrence,
            i,
        ));
    }
    ranked.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| rows[a.2].0.cmp(&rows[b.2].0))
            .then(a.1.cmp(&b.1))
    });
    ranked
        .iter()
        .take(sh.limits.max_rows() as usize)
        .map(|&(_, _, i)| rows[i].1)
        .collect()
}

/// The accumulator of `privq_bound`: one state per group (per unit, or one).
struct Acc<S> {
    sh: Arc<Shared>,
    groups: Vec<S>,
    bytes: usize,
}

impl<S> std::fmt::Debug for Acc<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "privq_bound({} groups)", self.groups.len())
    }
}

fn state_err(what: &str) -> DataFusionError {
    DataFusionError::Execution(format!("{BOUND}: malformed {what} state"))
}

impl<S: GroupState> Acc<S> {
    fn update(
        &mut self,
        values: &[ArrayRef],
        group: impl Fn(usize) -> usize,
        filter: Option<&BooleanArray>,
    ) -> DfResult<()> {
        let (sh, groups, bytes) = (&*self.sh, &mut self.groups, &mut self.bytes);
        let counted = std::cell::RefCell::new(&mut *groups);
        sh.read_batch(
            values,
            filter,
            |r, invalid| counted.borrow_mut()[group(r)].count(invalid),
            |r, unit, key, bits| *bytes += counted.borrow_mut()[group(r)].keep(sh, unit, key, bits),
        )
    }

    fn merge(&mut self, states: &[ArrayRef], group: impl Fn(usize) -> usize) -> DfResult<()> {
        let states = states
            .first()
            .and_then(|a| a.as_binary_opt::<i32>())
            .ok_or_else(|| state_err("(not binary)"))?;
        for i in 0..states.len() {
            if states.is_null(i) {
                return Err(state_err("a null"));
            }
            let g = &mut self.groups[group(i)];
            self.bytes += g
                .merge_state(&self.sh, states.value(i))
                .ok_or_else(|| state_err("a"))?;
        }
        Ok(())
    }

    fn take(&mut self, emit_to: EmitTo) -> Vec<S> {
        let out = emit_to.take_needed(&mut self.groups);
        if self.groups.is_empty() {
            self.bytes = 0;
        }
        out
    }
}

fn binary(items: impl Iterator<Item = Vec<u8>>) -> ArrayRef {
    Arc::new(items.map(Some).collect::<BinaryArray>()) as ArrayRef
}

impl<S: GroupState> GroupsAccumulator for Acc<S> {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> DfResult<()> {
        self.groups.resize_with(total_num_groups, S::default);
        self.update(values, |r| group_indices[r], opt_filter)
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> DfResult<ArrayRef> {
        let sh = self.sh.clone();
        Ok(binary(self.take(emit_to).into_iter().map(|g| {
            let mut out = Vec::new();
            g.finish(&sh).encode(&mut out);
            out
        })))
    }

    fn state(&mut self, emit_to: EmitTo) -> DfResult<Vec<ArrayRef>> {
        Ok(vec![binary(self.take(emit_to).into_iter().map(|g| {
            let mut out = Vec::new();
            g.encode_state(&mut out);
            out
        }))])
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> DfResult<()> {
        self.groups.resize_with(total_num_groups, S::default);
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
            groups: Vec::new(),
            bytes: 0,
        };
        each.groups.resize_with(rows, S::default);
        each.update(values, |r| r, opt_filter)?;
        Ok(vec![binary(each.groups.iter().map(|g| {
            let mut out = Vec::new();
            g.encode_state(&mut out);
            out
        }))])
    }

    fn size(&self) -> usize {
        self.bytes + self.groups.len() * size_of::<S>()
    }
}

impl<S: GroupState> Accumulator for Acc<S> {
    fn update_batch(&mut self, values: &[ArrayRef]) -> DfResult<()> {
        self.groups.resize_with(1, S::default);
        self.update(values, |_| 0, None)
    }

    fn evaluate(&mut self) -> DfResult<ScalarValue> {
        self.groups.resize_with(1, S::default);
        let g = std::mem::take(&mut self.groups[0]);
        let mut out = Vec::new();
        g.finish(&self.sh).encode(&mut out);
        Ok(ScalarValue::Binary(Some(out)))
    }

    fn size(&self) -> usize {
        GroupsAccumulator::size(self)
    }

    fn state(&mut self) -> DfResult<Vec<ScalarValue>> {
        self.groups.resize_with(1, S::default);
        let mut out = Vec::new();
        self.groups[0].encode_state(&mut out);
        Ok(vec![ScalarValue::Binary(Some(out))])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> DfResult<()> {
        self.groups.resize_with(1, S::default);
        self.merge(states, |_| 0)
    }
}

/// The aggregate's SQL name.
const BOUND: &str = "privq_bound";

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
        Ok(DataType::Binary)
    }

    fn accumulator(&self, _args: AccumulatorArgs) -> DfResult<Box<dyn Accumulator>> {
        Ok(if self.per_unit {
            Box::new(self.acc::<UnitRows>())
        } else {
            Box::new(self.acc::<RowTotals>())
        })
    }

    fn state_fields(&self, args: StateFieldsArgs) -> DfResult<Vec<FieldRef>> {
        let name = format_state_name(args.name, "rows");
        Ok(vec![Field::new(name, DataType::Binary, true).into()])
    }

    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(
        &self,
        _args: AccumulatorArgs,
    ) -> DfResult<Box<dyn GroupsAccumulator>> {
        Ok(if self.per_unit {
            Box::new(self.acc::<UnitRows>())
        } else {
            Box::new(self.acc::<RowTotals>())
        })
    }
}

impl PrivqBound {
    fn acc<S>(&self) -> Acc<S> {
        Acc {
            sh: self.sh.clone(),
            groups: Vec::new(),
            bytes: 0,
        }
    }
}

/// `name` as a quoted SQL identifier.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
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
    let builder = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path)?)?;
    let schema = builder.schema().clone();
    let header: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let reader = RowReader::new(&header, columns)?;
    let fields = reader.fields();
    check_types(&schema, &fields)?;
    let mask = ProjectionMask::roots(builder.parquet_schema(), fields.iter().copied());
    let mut data: Vec<(String, Vec<String>)> =
        header.iter().map(|h| (h.clone(), Vec::new())).collect();
    let mut rows = 0usize;
    for batch in builder.with_projection(mask).build()? {
        let batch = batch?;
        for (j, &h) in fields.iter().enumerate() {
            let text = column_text(batch.column(j))?;
            data[h]
                .1
                .extend(text.iter().map(|v| v.unwrap_or("").to_string()));
        }
        rows += batch.num_rows();
        if rows > max_rows {
            break;
        }
    }
    for (h, (_, v)) in data.iter_mut().enumerate() {
        if !fields.contains(&h) {
            v.resize(rows, String::new());
        }
    }
    Ok(Table::from_columns(&data, rows, columns, max_rows)?)
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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(partitions.max(1))
        .enable_all()
        .build()?;
    runtime.block_on(totals_async(source, plan, key, max_rows, partitions))
}

async fn totals_async(
    source: Source<'_>,
    plan: &Plan,
    key: BoundingKey,
    max_rows: usize,
    partitions: usize,
) -> Result<Vec<GroupTotals>, EngineError> {
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
    let path = std::path::absolute(source.path())?;
    let extension = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let config = SessionConfig::new().with_target_partitions(partitions.max(1));
    let ctx = SessionContext::new_with_config(config);
    let header: Vec<String> = match source {
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
            let schema = Schema::new(
                header
                    .iter()
                    .map(|h| Field::new(h, DataType::Utf8, true))
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
            header
        }
        Source::Parquet(_) => {
            let options = ParquetReadOptions::default().file_extension(&extension);
            ctx.register_parquet("t", &path.to_string_lossy(), options)
                .await?;
            let schema = ctx.table_provider("t").await?.schema();
            schema.fields().iter().map(|f| f.name().clone()).collect()
        }
    };
    let columns = plan.columns();
    let reader = RowReader::new(&header, &columns)?;
    let fields = reader.fields();
    if let Source::Parquet(_) = source {
        let schema = ctx.table_provider("t").await?.schema();
        check_types(&schema, &fields)?;
    }
    let mut slot = vec![usize::MAX; header.len()];
    for (a, &h) in fields.iter().enumerate() {
        slot[h] = a;
    }
    let values = columns.values.len();
    let sh = Arc::new(Shared {
        reader,
        slot,
        public: plan.public_keys().map(|keys| {
            keys.iter()
                .map(|k| privq_host::aggregate::encode_key(k))
                .collect()
        }),
        limits: plan.contribution(),
        key,
        values,
        mids: (0..values).map(|c| plan.mid_steps(c)).collect(),
        candidates: (0..values).map(|c| plan.quantile_candidates(c)).collect(),
        plan: plan.clone(),
    });
    let per_unit = plan.privacy_unit().is_some();
    ctx.register_udaf(AggregateUDF::from(PrivqBound {
        signature: Signature::variadic_any(Volatility::Immutable),
        sh,
        per_unit,
    }));
    let mut args = vec!["0".to_string()];
    args.extend(fields.iter().map(|&h| quote(&header[h])));
    let mut query = format!("SELECT {BOUND}({}) FROM t", args.join(", "));
    if let Some(unit) = plan.privacy_unit() {
        // The unit's column, as the reader trims it: one unit, one group.
        ctx.register_udf(create_udf(
            "privq_trim",
            vec![DataType::Utf8],
            DataType::Utf8,
            Volatility::Immutable,
            Arc::new(trim),
        ));
        let h = header
            .iter()
            .position(|h| h.trim() == unit)
            .ok_or(EngineError::Shape("the unit's column"))?;
        query.push_str(&format!(" GROUP BY privq_trim({})", quote(&header[h])));
    }
    let result = match ctx.sql(&query).await {
        Ok(df) => df.collect().await,
        Err(e) => Err(e),
    };
    let batches = match result {
        Ok(b) => b,
        Err(e) => {
            // A file DataFusion's reader refuses (a row with the wrong number of
            // fields): the in-process reader's typed error when it refuses it too.
            source.in_process(&columns, max_rows)?;
            return Err(e.into());
        }
    };
    let mut all = Summed::default();
    for batch in &batches {
        let b = batch
            .column(0)
            .as_binary_opt::<i32>()
            .ok_or(EngineError::Shape("the aggregate is not binary"))?;
        for i in 0..b.len() {
            all.add(Summed::decode(b.value(i)).ok_or(EngineError::Shape("a result"))?);
        }
    }
    if all.invalid > 0 || all.seen > max_rows as u64 {
        // The in-process reader names the same line and column.
        source.in_process(&columns, max_rows)?;
        return Err(EngineError::Shape(
            "the engine refused rows the reader accepts",
        ));
    }
    if all.seen == 0 {
        return Err(AggregateError::EmptyTable.into());
    }
    all.groups
        .into_iter()
        .filter(|(_, s)| s.units > 0)
        .map(|(k, s)| {
            Ok(GroupTotals {
                key: decode_key(&k).ok_or(EngineError::Shape("a key"))?,
                units: s.units,
                rows: s.rows,
                columns: s.columns,
            })
        })
        .collect()
}

/// `privq_trim(text)`: the text trimmed as the row reader trims a field (the
/// same array when nothing needs trimming).
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
        .all(|v| v.is_none_or(|s| s.trim().len() == s.len()));
    let out = if trimmed {
        text
    } else {
        text.iter().map(|v| v.map(str::trim)).collect()
    };
    Ok(ColumnarValue::Array(Arc::new(out) as ArrayRef))
}

fn csv_reader<R: std::io::Read>(r: R) -> csv::Reader<R> {
    csv::ReaderBuilder::new().from_reader(r)
}

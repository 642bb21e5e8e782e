//! Exact bounded totals computed in pieces that merge: the building blocks of an
//! engine that reads a table's rows in any order, on any number of partitions
//! (`privq sql --engine datafusion`), and must compute exactly [`Plan::totals`].
//!
//! A state per privacy unit ([`UnitRows`]) collects the unit's kept rows (group
//! key and values' bit patterns) from any number of pieces ([`PartialState::encode_state`],
//! [`PartialState::merge_state`]) and, once it has them all, bounds the unit
//! ([`PartialState::finish`]) by the rule of [`BoundingKey`] exactly as
//! [`Plan::totals`] does: a unit within `max_groups` keys keeps them all and a
//! key within `max_rows` rows keeps them all (no hash computed, nothing sorted);
//! only a unit over a limit ranks its keys or a key's rows. Without a privacy unit
//! ([`RowTotals`]) every row is its own unit and totals add directly. Either gives
//! [`PartialTotals`], which add up (with the rows read and the invalid ones) into
//! the totals of every group.

use super::{
    AggregateError, BoundingKey, ColumnTotals, Contribution, GroupTotals, Plan, decode_key,
};

/// What the pieces share: the plan's bounds, grid and limits, and the bounding key.
#[derive(Debug, Clone)]
pub struct Partial {
    plan: Plan,
    key: BoundingKey,
    limits: Contribution,
    values: usize,
    mids: Vec<i64>,
    candidates: Vec<Option<Vec<i64>>>,
}

impl Plan {
    /// The shared part of the pieces of [`Plan::totals`] under bounding `key`.
    pub fn partial(&self, key: BoundingKey) -> Partial {
        let values = self.columns().values.len();
        Partial {
            plan: self.clone(),
            key,
            limits: self.contribution(),
            values,
            mids: (0..values).map(|c| self.mid_steps(c)).collect(),
            candidates: (0..values).map(|c| self.quantile_candidates(c)).collect(),
        }
    }
}

impl Plan {
    /// Checks one piece an engine returns before it is added to the others: the
    /// totals of one privacy unit once bounded ([`UnitRows`]), or of rows without
    /// units ([`RowTotals`]). A piece this plan cannot produce is refused
    /// ([`AggregateError::InconsistentTotals`]), before anything is charged: more
    /// than `max_groups` keys, a key that is not one of the query's (or not
    /// listed, with public groups, or not written as [`encode_key`](super::encode_key)
    /// writes it), a unit counted other than once per key or with more than
    /// `max_rows` rows (without a unit column: units other than rows), more kept
    /// rows than rows read, a column's sums outside what `rows` clamped values
    /// give (the centred sum is exactly the sum minus rows × midpoint), or
    /// quantile counts that do not add up to the rows. A forgery consistent with
    /// the plan (invented units, other values within the bounds) is not detected.
    ///
    /// An engine with many pieces builds the check once ([`Plan::piece_check`]).
    pub fn check_piece(&self, piece: &PartialTotals) -> Result<(), AggregateError> {
        self.piece_check().check(piece)
    }

    /// [`Plan::check_piece`] with what it needs (the public keys' set, each
    /// column's bounds and candidate count) computed once, for checking many pieces.
    pub fn piece_check(&self) -> PieceCheck {
        let columns = (0..self.columns().values.len())
            .map(|c| {
                let b = self.value_bounds(c);
                let (lo, hi) = b.step_range();
                ColumnCheck {
                    lo: i128::from(lo),
                    hi: i128::from(hi),
                    mid: i128::from(b.mid_steps()),
                    half: i128::from(b.half_width_steps()),
                    candidates: self.quantile_candidates(c).map_or(0, |c| c.len()),
                }
            })
            .collect();
        PieceCheck {
            unit: self.privacy_unit().is_some(),
            limits: self.contribution(),
            key_columns: self.key_columns().len(),
            public: self
                .public_keys()
                .map(|l| l.iter().map(|k| super::encode_key(k)).collect()),
            columns,
        }
    }
}

/// [`Plan::check_piece`], ready to check many pieces ([`Plan::piece_check`]).
#[derive(Debug, Clone)]
pub struct PieceCheck {
    unit: bool,
    limits: Contribution,
    key_columns: usize,
    /// The public keys, encoded.
    public: Option<foldhash::HashSet<String>>,
    columns: Vec<ColumnCheck>,
}

/// What a piece's totals of one value column must fit, in grid steps.
#[derive(Debug, Clone)]
struct ColumnCheck {
    lo: i128,
    hi: i128,
    mid: i128,
    half: i128,
    candidates: usize,
}

impl PieceCheck {
    /// See [`Plan::check_piece`].
    pub fn check(&self, piece: &PartialTotals) -> Result<(), AggregateError> {
        let bad = |what: String| Err(AggregateError::InconsistentTotals(what));
        let limits = self.limits;
        if piece.invalid > piece.seen {
            return bad("more invalid rows than rows read".into());
        }
        if self.unit && piece.groups.len() as u64 > u64::from(limits.max_groups()) {
            return bad(format!(
                "a unit with {} keys (max_groups {})",
                piece.groups.len(),
                limits.max_groups()
            ));
        }
        let mut kept: u64 = 0;
        for (k, s) in &piece.groups {
            // Only the canonical encoding: two spellings of one key are two groups
            // here and one once decoded (which `release_totals` refuses later as a
            // key given twice; refused here, piece by piece).
            let Some(key) = decode_key(k).filter(|key| super::encode_key(key) == *k) else {
                return bad("a key that is not an encoded key".into());
            };
            if key.len() != self.key_columns {
                return bad(format!("the key {key:?} does not fit the query"));
            }
            if self.public.as_ref().is_some_and(|p| !p.contains(k)) {
                return bad(format!("the key {key:?} is not a public key"));
            }
            let units_ok = if self.unit {
                s.units == 1 && s.rows >= 1 && s.rows <= u64::from(limits.max_rows())
            } else {
                s.units == s.rows
            };
            if !units_ok {
                return bad(format!(
                    "key {key:?}: {} unit(s) with {} row(s)",
                    s.units, s.rows
                ));
            }
            kept = match kept.checked_add(s.rows) {
                Some(n) => n,
                None => return bad("too many rows".into()),
            };
            if s.columns.len() != self.columns.len() {
                return bad(format!("key {key:?}: {} value columns", s.columns.len()));
            }
            let rows = i128::from(s.rows);
            for (c, (t, b)) in s.columns.iter().zip(&self.columns).enumerate() {
                let sum_ok = t.sum >= rows * b.lo && t.sum <= rows * b.hi;
                let centred_ok = Some(t.centred) == t.sum.checked_sub(rows * b.mid);
                let squares_ok = t.squares >= 0
                    && rows
                        .checked_mul(b.half * b.half)
                        .is_none_or(|max| t.squares <= max)
                    // Σd² ≥ (Σd)² / rows.
                    && match (rows.checked_mul(t.squares), t.centred.checked_mul(t.centred)) {
                        (Some(a), Some(b)) => a >= b,
                        _ => true,
                    };
                let counts_ok = t.at_candidate.len() == b.candidates
                    && (b.candidates == 0
                        || t.at_candidate
                            .iter()
                            .try_fold(0u64, |a, &n| a.checked_add(n))
                            == Some(s.rows));
                if !(sum_ok && centred_ok && squares_ok && counts_ok) {
                    return bad(format!(
                        "key {key:?}: the totals of value column {c} do not fit {} rows",
                        s.rows
                    ));
                }
            }
        }
        if kept > piece.seen - piece.invalid {
            return bad(format!(
                "{kept} rows kept of {} valid rows read",
                piece.seen - piece.invalid
            ));
        }
        Ok(())
    }
}

impl Partial {
    /// The number of value columns (each kept row has one bit pattern each).
    pub fn values(&self) -> usize {
        self.values
    }

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
}

/// Exact totals of one group key.
#[derive(Debug, Clone, Default)]
struct Sum {
    units: u64,
    rows: u64,
    columns: Vec<ColumnTotals>,
}

impl Sum {
    /// Back to zero, keeping the columns' shape ([`Partial::empty_sum`]).
    fn reset(&mut self) {
        self.units = 0;
        self.rows = 0;
        for c in &mut self.columns {
            c.sum = 0;
            c.centred = 0;
            c.squares = 0;
            c.at_candidate.fill(0);
        }
    }

    fn add(&mut self, other: &Sum) {
        // Saturating: forged pieces never panic; a sum this large is refused
        // (more rows than the cap) or was refused piece by piece first.
        self.units = self.units.saturating_add(other.units);
        self.rows = self.rows.saturating_add(other.rows);
        if self.columns.len() < other.columns.len() {
            self.columns
                .resize(other.columns.len(), ColumnTotals::default());
        }
        for (a, b) in self.columns.iter_mut().zip(&other.columns) {
            a.sum = a.sum.saturating_add(b.sum);
            a.centred = a.centred.saturating_add(b.centred);
            a.squares = a.squares.saturating_add(b.squares);
            if a.at_candidate.len() < b.at_candidate.len() {
                a.at_candidate.resize(b.at_candidate.len(), 0);
            }
            for (x, y) in a.at_candidate.iter_mut().zip(&b.at_candidate) {
                *x = x.saturating_add(*y);
            }
        }
    }
}

/// Totals by encoded key, with the rows read and the invalid ones: what a piece
/// gives once finished (one bounded unit, or rows without units), and what an
/// engine adds them all up into.
#[derive(Debug, Default)]
pub struct PartialTotals {
    seen: u64,
    invalid: u64,
    groups: foldhash::HashMap<String, Sum>,
}

impl PartialTotals {
    /// The rows read (kept or not).
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// The invalid rows read (a table with one is refused).
    pub fn invalid(&self) -> u64 {
        self.invalid
    }

    /// The totals of every group with a unit, in no particular order (`None` for
    /// a key that is not an encoded key).
    pub fn into_totals(self) -> Option<Vec<GroupTotals>> {
        self.groups
            .into_iter()
            .filter(|(_, s)| s.units > 0)
            .map(|(k, s)| {
                Some(GroupTotals {
                    key: decode_key(&k)?,
                    units: s.units,
                    rows: s.rows,
                    columns: s.columns,
                })
            })
            .collect()
    }

    /// Adds `other` (totals of other units, or other rows without units).
    pub fn add(&mut self, other: PartialTotals) {
        self.seen = self.seen.saturating_add(other.seen);
        self.invalid = self.invalid.saturating_add(other.invalid);
        for (k, s) in other.groups {
            match self.groups.get_mut(&k) {
                Some(t) => t.add(&s),
                None => {
                    self.groups.insert(k, s);
                }
            }
        }
    }

    /// Writes the totals as bytes ([`PartialTotals::decode`] reads them).
    pub fn encode(&self, out: &mut Vec<u8>) {
        put(out, self.seen);
        put(out, self.invalid);
        put(out, self.groups.len() as u64);
        for (k, s) in &self.groups {
            encode_group(out, k, s);
        }
    }

    /// Reads totals [`PartialTotals::encode`] wrote (`None` for other bytes).
    pub fn decode(bytes: &[u8]) -> Option<PartialTotals> {
        let mut r = Bytes(bytes);
        let mut out = PartialTotals {
            seen: r.u64()?,
            invalid: r.u64()?,
            groups: Default::default(),
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

/// One group of [`PartialTotals::encode`]: its key and totals.
fn encode_group(out: &mut Vec<u8>, k: &str, s: &Sum) {
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

fn put(out: &mut Vec<u8>, x: u64) {
    out.extend_from_slice(&x.to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// A reader of the serialized states and totals of this module.
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

/// The state of one piece: one privacy unit's rows ([`UnitRows`]), or rows without
/// units ([`RowTotals`]).
pub trait PartialState: Default + Send + Sync + std::fmt::Debug + 'static {
    /// Counts a row read (`invalid`: one the reader refuses).
    fn count(&mut self, invalid: bool);
    /// A kept row (after the filter and the public keys): its unit, its encoded
    /// key ([`encode_key`](super::encode_key)) and its values' `f64` bit patterns;
    /// returns about how many bytes it added to the state.
    fn keep(&mut self, p: &Partial, unit: Option<&str>, key: &str, bits: &[u64]) -> usize;
    /// Writes the state as bytes ([`PartialState::merge_state`] reads them).
    fn encode_state(&self, out: &mut Vec<u8>);
    /// Adds a state [`PartialState::encode_state`] wrote (of the same unit); the
    /// bytes added, or `None` for other bytes.
    fn merge_state(&mut self, p: &Partial, bytes: &[u8]) -> Option<usize>;
    /// The state's totals, bounded.
    fn finish(self, p: &Partial) -> PartialTotals;
}

/// Without a privacy unit: totals per key, every row its own unit.
#[derive(Debug, Default)]
pub struct RowTotals(PartialTotals);

impl PartialState for RowTotals {
    fn count(&mut self, invalid: bool) {
        self.0.seen += 1;
        self.0.invalid += u64::from(invalid);
    }
    fn keep(&mut self, p: &Partial, _: Option<&str>, key: &str, bits: &[u64]) -> usize {
        let mut added = 0;
        if !self.0.groups.contains_key(key) {
            self.0.groups.insert(key.to_string(), p.empty_sum());
            added = key.len() + 64 + 64 * p.values;
        }
        if let Some(sum) = self.0.groups.get_mut(key) {
            sum.units += 1;
            p.add_row(sum, bits);
        }
        added
    }
    fn encode_state(&self, out: &mut Vec<u8>) {
        self.0.encode(out);
    }
    fn merge_state(&mut self, _: &Partial, bytes: &[u8]) -> Option<usize> {
        let other = PartialTotals::decode(bytes)?;
        let n = bytes.len();
        self.0.add(other);
        Some(n)
    }
    fn finish(self, _: &Partial) -> PartialTotals {
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
pub struct UnitRows {
    seen: u64,
    invalid: u64,
    unit: Option<String>,
    keys: Vec<KeyRows>,
    /// Key positions, once the unit has many keys.
    index: foldhash::HashMap<String, usize>,
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

impl PartialState for UnitRows {
    fn count(&mut self, invalid: bool) {
        self.seen += 1;
        self.invalid += u64::from(invalid);
    }
    fn keep(&mut self, _: &Partial, unit: Option<&str>, key: &str, bits: &[u64]) -> usize {
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
    fn merge_state(&mut self, p: &Partial, bytes: &[u8]) -> Option<usize> {
        let mut r = Bytes(bytes);
        let (seen, invalid) = (r.u64()?, r.u64()?);
        if r.u64()? == 1 {
            let u = r.str()?;
            match &self.unit {
                None => self.unit = Some(u.to_string()),
                // A state of another unit is refused, not merged under this name.
                Some(mine) if mine != u => return None,
                Some(_) => {}
            }
        }
        self.seen = self.seen.checked_add(seen)?;
        self.invalid = self.invalid.checked_add(invalid)?;
        for _ in 0..r.u64()? {
            let key = r.str()?;
            let rows = r.u64()?;
            let n = usize::try_from(r.u64()?).ok()?;
            // Checked, and no more patterns than the bytes left hold: a forged
            // count never overflows nor reserves memory the state does not carry.
            if Some(n as u64) != rows.checked_mul(p.values as u64) || n > r.0.len() / 8 {
                return None;
            }
            let (i, _) = self.slot(key);
            let k = &mut self.keys[i];
            k.rows = k.rows.checked_add(rows)?;
            k.bits.reserve(n);
            for _ in 0..n {
                k.bits.push(r.u64()?);
            }
        }
        r.0.is_empty().then_some(bytes.len())
    }
    /// The unit bounded by the rule of [`BoundingKey`], as [`Plan::totals`]
    /// bounds it: ranks are computed only for a unit over a limit.
    fn finish(self, p: &Partial) -> PartialTotals {
        let mut out = PartialTotals {
            seen: self.seen,
            invalid: self.invalid,
            groups: Default::default(),
        };
        let unit = self.unit.as_deref().unwrap_or("");
        let keys: Vec<KeyView<'_>> = self
            .keys
            .iter()
            .map(|k| KeyView {
                key: &k.key,
                rows: k.rows,
                bits: &k.bits,
            })
            .collect();
        let mut sum = p.empty_sum();
        bound_unit(p, unit, keys, &mut sum, &mut |key, s| {
            out.groups.insert(key.to_string(), s.clone());
        });
        out
    }
}

/// One unit's rows of one key, wherever they are kept: the key, the number of
/// rows and their values' bit patterns, row after row (`rows × values` of them).
#[derive(Debug, Clone, Copy)]
struct KeyView<'a> {
    key: &'a str,
    rows: u64,
    bits: &'a [u64],
}

/// Bounds one unit's rows (each key once in `keys`) by the rule of
/// [`BoundingKey`], as [`Plan::totals`] bounds it, and gives each kept key's
/// totals to `emit` (in `sum`, reset for each key): a unit within `max_groups`
/// keys keeps them all, a key within `max_rows` rows keeps them all (nothing
/// ranked); only a unit over a limit ranks its keys ([`BoundingKey::group_rank`],
/// ties by the key's bytes) or a key's rows ([`kept_rows`]).
fn bound_unit(
    p: &Partial,
    unit: &str,
    mut keys: Vec<KeyView<'_>>,
    sum: &mut Sum,
    emit: &mut dyn FnMut(&str, &Sum),
) {
    let max_groups = p.limits.max_groups() as usize;
    if keys.len() > max_groups {
        let mut ranked: Vec<(u64, KeyView<'_>)> = keys
            .into_iter()
            .map(|k| (p.key.group_rank(unit, k.key), k))
            .collect();
        ranked.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| a.1.key.as_bytes().cmp(b.1.key.as_bytes()))
        });
        ranked.truncate(max_groups);
        keys = ranked.into_iter().map(|(_, k)| k).collect();
    }
    let max_rows = p.limits.max_rows() as usize;
    for k in keys {
        sum.reset();
        sum.units = 1;
        if k.rows as usize <= max_rows {
            for row in 0..k.rows as usize {
                p.add_row(sum, &k.bits[row * p.values..(row + 1) * p.values]);
            }
        } else if p.values == 0 {
            // Rows without values are identical: which ones changes nothing.
            sum.rows = max_rows as u64;
        } else {
            for row in kept_rows(p, unit, k.key, k.bits) {
                p.add_row(sum, row);
            }
        }
        emit(k.key, sum);
    }
}

/// The `max_rows` rows a unit keeps of `key` (whose rows' bit patterns are `bits`,
/// more than `max_rows` rows): the rule of
/// [`BoundingKey`], as `privq_host`'s bounding applies it (rows identical in all
/// values numbered by occurrence after ordering them by their values' bit
/// patterns as signed integers; then the smallest by rank, values, occurrence).
fn kept_rows<'a>(p: &Partial, unit: &str, key: &str, bits: &'a [u64]) -> Vec<&'a [u64]> {
    // Rows compared by their patterns as signed integers, without a copy per
    // row (patterns equal as signed integers are equal: ties are identical rows).
    let signed =
        |a: &[u64], b: &[u64]| a.iter().map(|&x| x as i64).cmp(b.iter().map(|&x| x as i64));
    let mut rows: Vec<&[u64]> = bits.chunks_exact(p.values).collect();
    rows.sort_unstable_by(|a, b| signed(a, b));
    let mut ranked: Vec<(u64, u64, usize)> = Vec::with_capacity(rows.len());
    let mut occurrence = 0u64;
    let mut values = vec![0f64; p.values];
    for (i, r) in rows.iter().enumerate() {
        occurrence = if i > 0 && rows[i - 1] == *r {
            occurrence + 1
        } else {
            0
        };
        for (v, &b) in values.iter_mut().zip(r.iter()) {
            *v = f64::from_bits(b);
        }
        ranked.push((
            p.key.row_rank(unit, key, &values, occurrence),
            occurrence,
            i,
        ));
    }
    ranked.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| signed(rows[a.2], rows[b.2]))
            .then(a.1.cmp(&b.1))
    });
    ranked
        .iter()
        .take(p.limits.max_rows() as usize)
        .map(|&(_, _, i)| rows[i])
        .collect()
}

/// The states of many pieces at once, one per group of an engine's aggregate
/// (DataFusion's group index: one privacy unit each, or a single group without
/// units): the same encoded states and the same totals as one [`PartialState`]
/// per group (`Vec<S>` is exactly that; [`UnitColumns`] keeps every unit's rows
/// in shared columns instead).
pub trait PartialStates: Default + Send + Sync + std::fmt::Debug + 'static {
    /// About how many bytes a group takes beyond what `keep` and `merge_state`
    /// report.
    const GROUP_BYTES: usize;
    /// The number of groups.
    fn groups(&self) -> usize;
    /// Grows to `groups` groups (never shrinks); `false` for more groups than
    /// the states can number.
    fn resize(&mut self, groups: usize) -> bool;
    /// [`PartialState::count`] of group `group` (one of the groups).
    fn count(&mut self, group: usize, invalid: bool);
    /// [`PartialState::keep`] of group `group`: the bytes added, or `None` for
    /// a row the states cannot hold (a group out of range, or `bits` not one
    /// pattern per value column).
    fn keep(
        &mut self,
        p: &Partial,
        group: usize,
        unit: Option<&str>,
        key: &str,
        bits: &[u64],
    ) -> Option<usize>;
    /// [`PartialState::merge_state`] into group `group`: the bytes added, or
    /// `None` for bytes that are not a state this plan's pieces write (nothing
    /// is merged then).
    fn merge_state(&mut self, p: &Partial, group: usize, bytes: &[u8]) -> Option<usize>;
    /// Takes the first `n` groups (all of them, for `n` at least their number);
    /// the others stay, renumbered from 0 in the same order.
    fn take_first(&mut self, p: &Partial, n: usize) -> Self;
    /// Each group's state, in order, as [`PartialState::encode_state`] writes it.
    fn encode_states(&self, p: &Partial, each: &mut dyn FnMut(&[u8]));
    /// Each group's totals, bounded, in order, as [`PartialTotals::encode`]
    /// writes them.
    fn finish_each(self, p: &Partial, each: &mut dyn FnMut(&[u8]));
}

impl<S: PartialState> PartialStates for Vec<S> {
    const GROUP_BYTES: usize = size_of::<S>();
    fn groups(&self) -> usize {
        self.len()
    }
    fn resize(&mut self, groups: usize) -> bool {
        if groups > self.len() {
            self.resize_with(groups, S::default);
        }
        true
    }
    fn count(&mut self, group: usize, invalid: bool) {
        self[group].count(invalid);
    }
    fn keep(
        &mut self,
        p: &Partial,
        group: usize,
        unit: Option<&str>,
        key: &str,
        bits: &[u64],
    ) -> Option<usize> {
        if bits.len() != p.values {
            return None;
        }
        Some(self.get_mut(group)?.keep(p, unit, key, bits))
    }
    fn merge_state(&mut self, p: &Partial, group: usize, bytes: &[u8]) -> Option<usize> {
        self.get_mut(group)?.merge_state(p, bytes)
    }
    fn take_first(&mut self, _: &Partial, n: usize) -> Self {
        if n >= self.len() {
            return std::mem::take(self);
        }
        let rest = self.split_off(n);
        std::mem::replace(self, rest)
    }
    fn encode_states(&self, _: &Partial, each: &mut dyn FnMut(&[u8])) {
        let mut out = Vec::new();
        for g in self {
            out.clear();
            g.encode_state(&mut out);
            each(&out);
        }
    }
    fn finish_each(self, p: &Partial, each: &mut dyn FnMut(&[u8])) {
        let mut out = Vec::new();
        for g in self {
            out.clear();
            g.finish(p).encode(&mut out);
            each(&out);
        }
    }
}

/// Many privacy units' kept rows in shared columns: per kept row (or per key of
/// a merged state, a run of rows) its unit's group number, its key's number and
/// its row count, and the values' bit patterns in one vector; each key's text
/// stored once ([`UnitColumns`] interns keys), each unit's name once in one
/// text. A row is appended, not looked up: no state per unit to find, no
/// allocation per unit or per key. The rows are sorted into units only when
/// the states are encoded or finished, each unit then encoded and bounded as
/// [`UnitRows`] encodes and bounds it (the same format, its keys in the order
/// they were first interned rather than the unit's: [`UnitRows::merge_state`]
/// reads them, and the same totals).
#[derive(Debug, Default)]
pub struct UnitColumns {
    /// Per group: rows read. Every row read adds to it, so it is kept apart
    /// from the rest (8 bytes a group: a partition's counts of 10⁵ units stay in
    /// a core's cache, where 40-byte heads did not).
    seen: Vec<u64>,
    /// Per group: whether its unit has a name yet (read by every kept row).
    named: Vec<bool>,
    /// Per group: invalid rows and where its unit's name is in `names`.
    rest: Vec<UnitRest>,
    names: String,
    /// Per run (one kept row, or one key's rows of a merged state).
    run_group: Vec<u32>,
    run_key: Vec<u32>,
    run_rows: Vec<u64>,
    /// The runs' bit patterns, run after run (`rows × values` each).
    bits: Vec<u64>,
    /// The keys by number, and their numbers.
    keys: Vec<Box<str>>,
    ids: foldhash::HashMap<Box<str>, u32>,
}

/// One group of [`UnitColumns`]: the rows read and the invalid ones, and where
/// its unit's name is (`named`: it has one).
#[derive(Debug, Clone, Copy, Default)]
struct UnitHead {
    seen: u64,
    invalid: u64,
    start: usize,
    end: usize,
    named: bool,
}

/// What [`UnitHead`] holds beyond the rows read and whether it is named.
#[derive(Debug, Clone, Copy, Default)]
struct UnitRest {
    invalid: u64,
    start: usize,
    end: usize,
}

impl UnitColumns {
    /// Group `g`'s head (`g` one of the groups: `seen`, `named` and `rest`
    /// always have one entry per group).
    fn head(&self, g: usize) -> UnitHead {
        let r = self.rest[g];
        UnitHead {
            seen: self.seen[g],
            invalid: r.invalid,
            start: r.start,
            end: r.end,
            named: self.named[g],
        }
    }

    /// Appends a group with `h`'s counts and name.
    fn push_head(&mut self, h: UnitHead, name: &str) {
        self.seen.push(h.seen);
        self.named.push(false);
        self.rest.push(UnitRest {
            invalid: h.invalid,
            ..UnitRest::default()
        });
        if h.named {
            self.name(self.seen.len() - 1, name);
        }
    }

    /// The number of `key` (added if new) and the bytes added.
    fn intern(&mut self, key: &str) -> Option<(u32, usize)> {
        if let Some(&i) = self.ids.get(key) {
            return Some((i, 0));
        }
        let i = u32::try_from(self.keys.len()).ok()?;
        self.keys.push(key.into());
        self.ids.insert(key.into(), i);
        Some((i, 2 * key.len() + 64))
    }

    /// Names group `g` `unit`.
    fn name(&mut self, g: usize, unit: &str) {
        let start = self.names.len();
        self.names.push_str(unit);
        let r = &mut self.rest[g];
        r.start = start;
        r.end = self.names.len();
        self.named[g] = true;
    }

    /// The unit's name of `h` (`""` without one).
    fn unit_of(&self, h: &UnitHead) -> &str {
        if h.named {
            &self.names[h.start..h.end]
        } else {
            ""
        }
    }

    /// [`UnitColumns::merge_state`] without the undoing on failure.
    fn merge_runs(&mut self, p: &Partial, group: usize, bytes: &[u8]) -> Option<usize> {
        let g = u32::try_from(group).ok()?;
        if group >= self.seen.len() {
            return None;
        }
        let head = self.head(group);
        let mut r = Bytes(bytes);
        let (seen, invalid) = (r.u64()?, r.u64()?);
        // The state's kept rows are at most its valid rows read: what an engine
        // writes (every kept row is counted), and a bound on a forged count.
        let mut valid = seen.checked_sub(invalid)?;
        let mut name = None;
        let flag = r.u64()?;
        match flag {
            0 => {}
            1 => {
                let u = r.str()?;
                if !head.named {
                    name = Some(u);
                } else if self.unit_of(&head) != u {
                    // A state of another unit is refused, not merged under this name.
                    return None;
                }
            }
            _ => return None,
        }
        let seen = head.seen.checked_add(seen)?;
        let invalid = head.invalid.checked_add(invalid)?;
        let mut added = 0;
        let keys = r.u64()?;
        // Every kept row names its unit, so a state with rows and no unit is
        // forged: it is refused, not merged under this group's name.
        if flag == 0 && keys > 0 {
            return None;
        }
        for _ in 0..keys {
            let key = r.str()?;
            let rows = r.u64()?;
            let n = usize::try_from(r.u64()?).ok()?;
            // Checked, and no more patterns than the bytes left hold: a forged
            // count never overflows nor reserves memory the state does not carry.
            if rows == 0 || Some(n as u64) != rows.checked_mul(p.values as u64) || n > r.0.len() / 8
            {
                return None;
            }
            valid = valid.checked_sub(rows)?;
            let (k, more) = self.intern(key)?;
            self.run_group.push(g);
            self.run_key.push(k);
            self.run_rows.push(rows);
            self.bits.reserve(n);
            for _ in 0..n {
                self.bits.push(r.u64()?);
            }
            added += more + 16 + 8 * n;
        }
        if !r.0.is_empty() {
            return None;
        }
        self.seen[group] = seen;
        self.rest[group].invalid = invalid;
        if let Some(u) = name {
            self.name(group, u);
        }
        Some(added.max(bytes.len()))
    }

    /// The runs in group order ([`Ordered`]), in one pass over them: the runs
    /// and their patterns are written where their group's go, so each unit is
    /// then read from one stretch rather than gathered from all over the columns.
    fn ordered(&self, p: &Partial) -> Ordered {
        let groups = self.seen.len();
        let mut bounds = vec![0usize; groups + 1];
        let mut bit_bounds = vec![0usize; groups + 1];
        for (&g, &rows) in self.run_group.iter().zip(&self.run_rows) {
            bounds[g as usize + 1] += 1;
            // At most the patterns present: no overflow.
            bit_bounds[g as usize + 1] += rows as usize * p.values;
        }
        for g in 0..groups {
            bounds[g + 1] += bounds[g];
            bit_bounds[g + 1] += bit_bounds[g];
        }
        let mut next = bounds.clone();
        let mut next_bit = bit_bounds.clone();
        let mut runs = vec![OrderedRun::default(); self.run_group.len()];
        let mut bits = vec![0u64; self.bits.len()];
        let mut at = 0usize;
        for (r, &g) in self.run_group.iter().enumerate() {
            let g = g as usize;
            let len = self.run_rows[r] as usize * p.values;
            let start = next_bit[g];
            next_bit[g] += len;
            runs[next[g]] = OrderedRun {
                key: self.run_key[r],
                rows: self.run_rows[r],
            };
            next[g] += 1;
            let (to, from) = (&mut bits[start..start + len], &self.bits[at..at + len]);
            if len == 1 {
                // The common run (one row of one value): no call to copy 8 bytes.
                to[0] = from[0];
            } else {
                to.copy_from_slice(from);
            }
            at += len;
        }
        Ordered {
            bounds,
            bit_bounds,
            runs,
            bits,
        }
    }

    /// Calls `each` with every group's head, its runs grouped by key (sorted by
    /// key number, stable) and the patterns the runs point into (`ordered`: the
    /// runs of these states, [`UnitColumns::ordered`]).
    fn each_unit(&self, p: &Partial, ordered: Ordered, each: &mut EachUnit<'_>) {
        let Ordered {
            bounds,
            bit_bounds,
            runs,
            bits,
        } = ordered;
        let mut unit: Vec<Run> = Vec::new();
        for g in 0..self.seen.len() {
            unit.clear();
            let mut start = bit_bounds[g];
            for r in &runs[bounds[g]..bounds[g + 1]] {
                unit.push(Run {
                    key: r.key,
                    rows: r.rows,
                    start,
                });
                start += r.rows as usize * p.values;
            }
            if unit.len() > 1 {
                unit.sort_by_key(|r| r.key);
            }
            each(&self.head(g), &unit, &bits);
        }
    }
}

/// The runs of [`UnitColumns`] in group order: group `g`'s runs are
/// `runs[bounds[g]..bounds[g + 1]]`, in the order they came, and their
/// patterns, run after run, start at `bits[bit_bounds[g]]`. (Beside the
/// columns it is made from, it takes 16 bytes a run and 8 a pattern.)
struct Ordered {
    bounds: Vec<usize>,
    bit_bounds: Vec<usize>,
    runs: Vec<OrderedRun>,
    bits: Vec<u64>,
}

/// A run of [`Ordered`]: its key's number and its rows.
#[derive(Debug, Clone, Copy, Default)]
struct OrderedRun {
    key: u32,
    rows: u64,
}

/// A run of one unit as [`UnitColumns::each_unit`] gives it: its key's
/// number, its rows, its first pattern.
#[derive(Debug, Clone, Copy)]
struct Run {
    key: u32,
    rows: u64,
    start: usize,
}

/// The keys' stretches of `runs` (sorted by key number): each key's number,
/// rows, and its runs.
fn by_key(runs: &[Run]) -> impl Iterator<Item = (u32, u64, &[Run])> {
    runs.chunk_by(|a, b| a.key == b.key).map(|c| {
        let rows = c.iter().fold(0u64, |n, r| n.saturating_add(r.rows));
        (c[0].key, rows, c)
    })
}

/// What [`UnitColumns::each_unit`] calls: a group's head, its runs (sorted by
/// key number) and the patterns they point into.
type EachUnit<'a> = dyn FnMut(&UnitHead, &[Run], &[u64]) + 'a;

impl PartialStates for UnitColumns {
    const GROUP_BYTES: usize = size_of::<UnitRest>() + size_of::<u64>() + size_of::<bool>();
    fn groups(&self) -> usize {
        self.seen.len()
    }
    fn resize(&mut self, groups: usize) -> bool {
        if u32::try_from(groups).is_err() {
            return false;
        }
        if groups > self.seen.len() {
            self.seen.resize(groups, 0);
            self.named.resize(groups, false);
            self.rest.resize(groups, UnitRest::default());
        }
        true
    }
    fn count(&mut self, group: usize, invalid: bool) {
        self.seen[group] += 1;
        if invalid {
            self.rest[group].invalid += 1;
        }
    }
    fn keep(
        &mut self,
        p: &Partial,
        group: usize,
        unit: Option<&str>,
        key: &str,
        bits: &[u64],
    ) -> Option<usize> {
        if bits.len() != p.values || group >= self.seen.len() {
            return None;
        }
        let g = u32::try_from(group).ok()?;
        let (k, mut added) = self.intern(key)?;
        added += 16 + 8 * bits.len();
        if !self.named[group]
            && let Some(u) = unit
        {
            self.name(group, u);
            added += u.len();
        }
        self.run_group.push(g);
        self.run_key.push(k);
        self.run_rows.push(1);
        self.bits.extend_from_slice(bits);
        Some(added)
    }
    fn merge_state(&mut self, p: &Partial, group: usize, bytes: &[u8]) -> Option<usize> {
        let (runs, bits, names, keys) = (
            self.run_group.len(),
            self.bits.len(),
            self.names.len(),
            self.keys.len(),
        );
        let merged = self.merge_runs(p, group, bytes);
        if merged.is_none() {
            // Nothing of a refused state stays.
            self.run_group.truncate(runs);
            self.run_key.truncate(runs);
            self.run_rows.truncate(runs);
            self.bits.truncate(bits);
            self.names.truncate(names);
            for k in self.keys.drain(keys..) {
                self.ids.remove(&k);
            }
        }
        merged
    }
    fn take_first(&mut self, p: &Partial, n: usize) -> Self {
        if n >= self.seen.len() {
            return std::mem::take(self);
        }
        let mut parts = [
            UnitColumns {
                keys: self.keys.clone(),
                ids: self.ids.clone(),
                ..UnitColumns::default()
            },
            UnitColumns {
                keys: std::mem::take(&mut self.keys),
                ids: std::mem::take(&mut self.ids),
                ..UnitColumns::default()
            },
        ];
        for g in 0..self.seen.len() {
            let h = self.head(g);
            parts[usize::from(g >= n)].push_head(h, self.unit_of(&h));
        }
        let mut at = 0usize;
        for r in 0..self.run_group.len() {
            let g = self.run_group[r] as usize;
            let len = self.run_rows[r] as usize * p.values;
            let (part, g) = if g < n {
                (&mut parts[0], g)
            } else {
                (&mut parts[1], g - n)
            };
            part.run_group.push(g as u32);
            part.run_key.push(self.run_key[r]);
            part.run_rows.push(self.run_rows[r]);
            part.bits.extend_from_slice(&self.bits[at..at + len]);
            at += len;
        }
        let [first, rest] = parts;
        *self = rest;
        first
    }
    fn encode_states(&self, p: &Partial, each: &mut dyn FnMut(&[u8])) {
        let mut out = Vec::new();
        self.each_unit(p, self.ordered(p), &mut |h, runs, bits| {
            out.clear();
            put(&mut out, h.seen);
            put(&mut out, h.invalid);
            if h.named {
                put(&mut out, 1);
                put_str(&mut out, self.unit_of(h));
            } else {
                put(&mut out, 0);
            }
            let count_at = out.len();
            put(&mut out, 0);
            let mut keys = 0u64;
            for (k, rows, runs) in by_key(runs) {
                keys += 1;
                put_str(&mut out, &self.keys[k as usize]);
                put(&mut out, rows);
                put(&mut out, rows.saturating_mul(p.values as u64));
                for r in runs {
                    let len = r.rows as usize * p.values;
                    out.reserve(8 * len);
                    for &b in &bits[r.start..r.start + len] {
                        put(&mut out, b);
                    }
                }
            }
            out[count_at..count_at + 8].copy_from_slice(&keys.to_le_bytes());
            each(&out);
        });
    }
    fn finish_each(mut self, p: &Partial, each: &mut dyn FnMut(&[u8])) {
        let ordered = self.ordered(p);
        // The rows as they came are no longer needed once ordered.
        drop((
            std::mem::take(&mut self.run_group),
            std::mem::take(&mut self.run_key),
            std::mem::take(&mut self.run_rows),
            std::mem::take(&mut self.bits),
        ));
        let mut out = Vec::new();
        let mut gathered: Vec<u64> = Vec::new();
        // Per key: its number, rows, and its patterns' stretch in the run
        // patterns (`true`: a key's runs lie side by side, as one row of a unit
        // does) or in `gathered`.
        let mut stretches: Vec<(u32, u64, bool, usize, usize)> = Vec::new();
        let mut sum = p.empty_sum();
        self.each_unit(p, ordered, &mut |h, runs, bits| {
            // Each key's patterns side by side, as `UnitRows` holds them.
            gathered.clear();
            stretches.clear();
            let len = |r: &Run| r.rows as usize * p.values;
            for (k, rows, runs) in by_key(runs) {
                if runs
                    .windows(2)
                    .all(|w| w[0].start + len(&w[0]) == w[1].start)
                {
                    let last = &runs[runs.len() - 1];
                    stretches.push((k, rows, true, runs[0].start, last.start + len(last)));
                } else {
                    let start = gathered.len();
                    for r in runs {
                        gathered.extend_from_slice(&bits[r.start..r.start + len(r)]);
                    }
                    stretches.push((k, rows, false, start, gathered.len()));
                }
            }
            let keys: Vec<KeyView<'_>> = stretches
                .iter()
                .map(|&(k, rows, in_runs, a, b)| KeyView {
                    key: &self.keys[k as usize],
                    rows,
                    bits: if in_runs {
                        &bits[a..b]
                    } else {
                        &gathered[a..b]
                    },
                })
                .collect();
            out.clear();
            put(&mut out, h.seen);
            put(&mut out, h.invalid);
            let count_at = out.len();
            put(&mut out, 0);
            let mut kept = 0u64;
            bound_unit(p, self.unit_of(h), keys, &mut sum, &mut |key, s| {
                kept += 1;
                encode_group(&mut out, key, s);
            });
            out[count_at..count_at + 8].copy_from_slice(&kept.to_le_bytes());
            each(&out);
        });
    }
}

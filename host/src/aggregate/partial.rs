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
        let mut keys = self.keys;
        let max_groups = p.limits.max_groups() as usize;
        if keys.len() > max_groups {
            let mut ranked: Vec<(u64, KeyRows)> = keys
                .into_iter()
                .map(|k| (p.key.group_rank(unit, &k.key), k))
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
            let mut sum = p.empty_sum();
            sum.units = 1;
            if k.rows as usize <= max_rows {
                for row in 0..k.rows as usize {
                    p.add_row(&mut sum, &k.bits[row * p.values..(row + 1) * p.values]);
                }
            } else if p.values == 0 {
                // Rows without values are identical: which ones changes nothing.
                sum.rows = max_rows as u64;
            } else {
                for row in kept_rows(p, unit, &k) {
                    p.add_row(&mut sum, row);
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
fn kept_rows<'a>(p: &Partial, unit: &str, k: &'a KeyRows) -> Vec<&'a [u64]> {
    let signed = |r: &[u64]| r.iter().map(|&b| b as i64).collect::<Vec<i64>>();
    let mut rows: Vec<(Vec<i64>, &[u64])> = k
        .bits
        .chunks_exact(p.values)
        .map(|r| (signed(r), r))
        .collect();
    rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut ranked: Vec<(u64, u64, usize)> = Vec::with_capacity(rows.len());
    let mut occurrence = 0u64;
    let mut values = vec![0f64; p.values];
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
            p.key.row_rank(unit, &k.key, &values, occurrence),
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
        .take(p.limits.max_rows() as usize)
        .map(|&(_, _, i)| rows[i].1)
        .collect()
}

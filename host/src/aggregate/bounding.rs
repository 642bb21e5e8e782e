//! Contribution bounding: at most `max_groups` groups per privacy unit and at most
//! `max_rows` rows per unit and group, chosen by a keyed PRF of the rows' contents
//! ([`BoundingKey`]), so every engine keeps the same rows whatever their order.

use std::hash::Hasher as _;

use privq_core::rand_core::{CryptoRng, Rng};
use siphasher::sip::SipHasher24;

use super::AggregateError;
use super::table::Table;

/// How much one privacy unit may contribute to a query: rows in at most
/// `max_groups` groups, and at most `max_rows` rows in each. A unit over either
/// limit keeps groups and rows chosen **(pseudo)uniformly at random** by a secret
/// keyed PRF of its own rows ([`BoundingKey`]), never by value order, so the choice
/// depends on no other unit.
///
/// ```
/// use privq_host::aggregate::Contribution;
/// let c = Contribution::new(2, 5)?;
/// assert_eq!((c.max_groups(), c.max_rows()), (2, 5));
/// assert_eq!(c.rows_per_unit(), 10);
/// assert!(Contribution::new(0, 5).is_err());
/// # Ok::<(), privq_host::aggregate::AggregateError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contribution {
    max_groups: u32,
    max_rows: u32,
}

/// The largest contribution limit ([`Contribution::new`]): 10⁶ groups, or rows
/// per group, per unit.
pub const MAX_CONTRIBUTION: u32 = 1_000_000;

impl Contribution {
    /// Limits of at least 1 each, at most [`MAX_CONTRIBUTION`] each.
    pub fn new(max_groups: u32, max_rows: u32) -> Result<Self, AggregateError> {
        const LIMIT: u32 = MAX_CONTRIBUTION;
        if max_groups == 0 || max_rows == 0 || max_groups > LIMIT || max_rows > LIMIT {
            return Err(AggregateError::InvalidParameter(format!(
                "contribution limits must be between 1 and {LIMIT}, got {max_groups} \
                 group(s) and {max_rows} row(s) per group"
            )));
        }
        Ok(Contribution {
            max_groups,
            max_rows,
        })
    }

    /// One row per unit: what a table without a privacy-unit column has.
    pub fn per_row() -> Self {
        Contribution {
            max_groups: 1,
            max_rows: 1,
        }
    }

    /// The most groups one unit contributes to.
    pub fn max_groups(&self) -> u32 {
        self.max_groups
    }

    /// The most rows one unit contributes to one group.
    pub fn max_rows(&self) -> u32 {
        self.max_rows
    }

    /// The most rows one unit contributes over all groups.
    pub fn rows_per_unit(&self) -> u64 {
        u64::from(self.max_groups) * u64::from(self.max_rows)
    }
}

/// The secret key of the bounding rule's PRF (SipHash-2-4, 128 bits), drawn from a
/// release's RNG before anything else: a seed reproduces it, and without a seed it
/// is as secret as the noise.
///
/// **The rule.** A unit over a limit keeps, in each group, the `max_rows` rows of
/// smallest [`row_rank`](Self::row_rank) and, among its groups, the `max_groups`
/// of smallest [`group_rank`](Self::group_rank) (ties, which need a 64-bit
/// collision, broken by the values and the key's text). A row's rank is a PRF of
/// its unit, its group key, its parsed values and its index among the unit's rows
/// identical in all of these (identical rows are interchangeable, so which of them
/// gets which index changes nothing). The choice therefore depends only on the rows'
/// contents, not on their order: an engine that sees the rows in any order, on
/// any number of machines, keeps the same ones.
///
/// **Privacy.** What a unit keeps depends only on that unit's own rows (and the
/// key): adding, removing or replacing one unit changes that unit's kept rows and
/// no other's, within the limits, so every sensitivity is the same whatever the
/// PRF. The PRF only makes the choice (pseudo)uniform among a unit's rows, which
/// matters for bias, not for privacy.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct BoundingKey {
    k0: u64,
    k1: u64,
}

impl std::fmt::Debug for BoundingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BoundingKey(..)")
    }
}

impl BoundingKey {
    /// Draws a key: two 64-bit words of `rng`.
    pub fn draw<R: Rng + CryptoRng + ?Sized>(rng: &mut R) -> Self {
        let k0 = rng.next_u64();
        let k1 = rng.next_u64();
        BoundingKey { k0, k1 }
    }

    /// The key's 16 bytes. They are as secret as the noise (with them, which
    /// rows a unit keeps is predictable): only for an engine that bounds units
    /// on other machines, which then see the data anyway (`privq sql --engine
    /// ballista` sends them to the cluster's executors in the plan).
    pub fn to_bytes(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.k0.to_le_bytes());
        out[8..].copy_from_slice(&self.k1.to_le_bytes());
        out
    }

    /// The key of [`BoundingKey::to_bytes`].
    pub fn from_bytes(bytes: [u8; 16]) -> Self {
        let mut k0 = [0u8; 8];
        let mut k1 = [0u8; 8];
        k0.copy_from_slice(&bytes[..8]);
        k1.copy_from_slice(&bytes[8..]);
        BoundingKey {
            k0: u64::from_le_bytes(k0),
            k1: u64::from_le_bytes(k1),
        }
    }

    fn hasher(&self, tag: u8, unit: &str, key: &str) -> SipHasher24 {
        let mut h = SipHasher24::new_with_keys(self.k0, self.k1);
        h.write(&[tag]);
        for text in [unit, key] {
            h.write(&(text.len() as u64).to_le_bytes());
            h.write(text.as_bytes());
        }
        h
    }

    /// The rank of a row: unit `unit`, group key `key` (its encoded text,
    /// [`encode_key`]), the parsed values of the aggregated columns and its index
    /// among the unit's rows identical in all of these.
    pub fn row_rank(&self, unit: &str, key: &str, values: &[f64], occurrence: u64) -> u64 {
        let mut h = self.hasher(b'r', unit, key);
        h.write(&(values.len() as u64).to_le_bytes());
        for x in values {
            h.write(&x.to_bits().to_le_bytes());
        }
        h.write(&occurrence.to_le_bytes());
        h.finish()
    }

    /// The rank of a unit's group `key` (its encoded text, [`encode_key`]).
    pub fn group_rank(&self, unit: &str, key: &str) -> u64 {
        self.hasher(b'g', unit, key).finish()
    }
}

/// A group key as one text: each field prefixed by its length and a colon
/// (unambiguous whatever the fields hold). The bounding rule ranks keys by it and
/// breaks ties by comparing it bytewise.
pub fn encode_key<S: AsRef<str>>(fields: &[S]) -> String {
    let mut out = String::new();
    encode_key_into(&mut out, fields.iter().map(AsRef::as_ref));
    out
}

/// [`encode_key`] of `fields`, written over `out` (a buffer reused row after row).
pub(super) fn encode_key_into<'f>(out: &mut String, fields: impl IntoIterator<Item = &'f str>) {
    out.clear();
    for f in fields {
        push_key_field(out, f);
    }
}

/// Appends one field of a key encoded as [`encode_key`] does: its length in
/// decimal, a colon, the field.
fn push_key_field(out: &mut String, field: &str) {
    let mut digits = [0u8; 20];
    let (mut n, mut at) = (field.len(), digits.len());
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
    out.push(':');
    out.push_str(field);
}

/// The fields of a key encoded by [`encode_key`] (`None` for a text it cannot
/// have produced).
pub fn decode_key(mut text: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    while !text.is_empty() {
        let (len, rest) = text.split_once(':')?;
        let len: usize = len.parse().ok()?;
        out.push(rest.get(..len)?.to_string());
        text = rest.get(len..)?;
    }
    Some(out)
}

/// The order of rows of one unit and group under the bounding rule: rank, then
/// the values (as signed bit patterns), then the index among identical rows.
pub fn row_order(a: (u64, &[f64], u64), b: (u64, &[f64], u64)) -> std::cmp::Ordering {
    a.0.cmp(&b.0)
        .then_with(|| cmp_bits(a.1, b.1))
        .then(a.2.cmp(&b.2))
}

/// Values compared lexicographically by their bit patterns as signed integers.
fn cmp_bits(a: &[f64], b: &[f64]) -> std::cmp::Ordering {
    let a = a.iter().map(|x| x.to_bits() as i64);
    a.cmp(b.iter().map(|x| x.to_bits() as i64))
}

/// What bounding reports, in no particular order: every kept row, and every
/// group of every unit that keeps a row in it.
pub(super) trait Keep: Sized {
    /// Row `row`, of group key `key`, is kept.
    fn row(&mut self, key: u32, row: u32);
    /// One unit keeps at least one row of group key `key` (said once per unit
    /// and group).
    fn unit(&mut self, key: u32);
    /// An empty listener like this one, to hear part of the units on another
    /// thread.
    fn fork(&self) -> Self;
    /// Adds what `other`, a [`Keep::fork`] of this one, heard.
    fn join(&mut self, other: Self);
}

/// The rows that survive bounding, by group key.
#[cfg(test)]
#[derive(Debug, Clone)]
pub(super) struct Bounded {
    /// Kept row indices of each group key of the table (in no particular order).
    pub rows: Vec<Vec<u32>>,
    /// Distinct units with a kept row, per group key.
    pub units: Vec<u64>,
}

#[cfg(test)]
impl Keep for Bounded {
    fn row(&mut self, key: u32, row: u32) {
        self.rows[key as usize].push(row);
    }

    fn unit(&mut self, key: u32) {
        self.units[key as usize] += 1;
    }

    fn fork(&self) -> Self {
        Bounded {
            rows: vec![Vec::new(); self.rows.len()],
            units: vec![0; self.units.len()],
        }
    }

    fn join(&mut self, other: Self) {
        for (a, b) in self.rows.iter_mut().zip(other.rows) {
            a.extend(b);
        }
        for (a, b) in self.units.iter_mut().zip(other.units) {
            *a += b;
        }
    }
}

/// Bounds every unit's contribution to the rows whose key `admit` accepts (rows of
/// other keys are set aside first, so a unit's groups are chosen among admitted
/// ones) by the rule of [`BoundingKey`].
#[cfg(test)]
pub(super) fn bound(
    table: &Table,
    admit: impl Fn(u32) -> bool + Sync,
    limits: Contribution,
    key: &BoundingKey,
) -> Bounded {
    let groups = table.key_values().len();
    let mut out = Bounded {
        rows: vec![Vec::new(); groups],
        units: vec![0; groups],
    };
    bound_into(table, admit, limits, key, &mut out);
    out
}

/// A unit's admitted rows while bounding, and its group while it has only one.
#[derive(Clone, Copy)]
struct Seen {
    key: u32,
    rows: u32,
    several: bool,
}

/// The place in `over` of a unit within the limits (it keeps every row).
const WITHIN: u32 = u32::MAX;

/// The tables from this many rows on are bounded in ranges of units on
/// threads of their own (fewer: one range, no thread).
const PARALLEL_ROWS: usize = 1 << 18;

/// The most ranges of units (each reads every row).
const MAX_RANGES: usize = 4;

/// Ranges of units only for tables of at least this many rows per group key.
const ROWS_PER_KEY: usize = 64;

/// One range of units, from unit number `first`, while bounding.
struct Part<'a, K> {
    first: u32,
    seen: &'a mut [Seen],
    /// Each unit's next place in the range's stretch of `over`, or [`WITHIN`].
    next: Vec<u32>,
    over_rows: usize,
    /// `out` itself for the first range, a [`Keep::fork`] of it for the others.
    out: &'a mut K,
}

/// Bounds as [`bound`] does, telling `out` what is kept.
///
/// Two passes over the rows, no sort and no hash for a unit within the limits (all
/// its rows in one group and at most `max_rows` of them: the rule keeps them all).
/// The first pass finds each unit's admitted rows and whether they are all in one
/// group; the second reports every row of a unit within the limits and gathers
/// the rows of the other units together, unit by unit (a counting sort by the
/// interned unit). From [`PARALLEL_ROWS`] rows on both passes run over ranges
/// of consecutive units, each range on a thread of its own, the first telling
/// `out` and each other a fork of it ([`Keep::fork`], joined back after). Only
/// the units over a limit are then sorted by group and ranked ([`bound_unit`]) —
/// in parallel chunks of units, each chunk's findings told to `out` in unit
/// order. What is kept does not depend on the threads; only the order in which
/// `out` hears it does.
pub(super) fn bound_into<K: Keep + Send>(
    table: &Table,
    admit: impl Fn(u32) -> bool + Sync,
    limits: Contribution,
    key: &BoundingKey,
    out: &mut K,
) {
    let (unit_of, key_of) = (table.unit_ids(), table.key_ids());
    if table.columns().unit.is_none() {
        // Every row is its own unit: one row in one group, nothing to choose.
        for (r, &k) in key_of.iter().enumerate() {
            if admit(k) {
                out.row(k, r as u32);
                out.unit(k);
            }
        }
        return;
    }
    // Passes 1 and 2 read every row and look its unit up at random: with many
    // units, cache misses. Consecutive ranges of units are therefore passed over
    // on threads of their own, each reading every row but looking up only its
    // units (a smaller table), the first telling `out`, each other a fork of it.
    // Each fork of `out` holds totals for every group key: ranges only
    // where there are far fewer keys than rows, so the forks stay small.
    let rows = unit_of.len();
    let few_keys = table.key_values().len() <= rows / ROWS_PER_KEY;
    let ranges = if rows >= PARALLEL_ROWS && few_keys && crate::parallel::enabled() {
        rayon::current_num_threads().clamp(1, MAX_RANGES)
    } else {
        1
    };
    bound_in_ranges(table, admit, limits, key, out, ranges);
}

/// [`bound_into`] of a table with a unit column, its units in `ranges` ranges
/// (at least one).
pub(super) fn bound_in_ranges<K: Keep + Send>(
    table: &Table,
    admit: impl Fn(u32) -> bool + Sync,
    limits: Contribution,
    key: &BoundingKey,
    out: &mut K,
    ranges: usize,
) {
    let (unit_of, key_of) = (table.unit_ids(), table.key_ids());
    let ranges = ranges.max(1);
    let units = table.unit_count();
    let mut seen = vec![
        Seen {
            key: 0,
            rows: 0,
            several: false,
        };
        units
    ];
    let mut forks: Vec<K> = (1..ranges).map(|_| out.fork()).collect();
    let outs = std::iter::once(&mut *out).chain(forks.iter_mut());
    let mut parts: Vec<Part<'_, K>> = Vec::with_capacity(ranges);
    let mut rest = &mut seen[..];
    for (i, out) in outs.enumerate() {
        // Unit numbers below u32::MAX: the table has fewer rows.
        let (lo, hi) = (units * i / ranges, units * (i + 1) / ranges);
        let (mine, tail) = rest.split_at_mut(hi - lo);
        rest = tail;
        parts.push(Part {
            first: lo as u32,
            seen: mine,
            next: Vec::new(),
            over_rows: 0,
            out,
        });
    }
    let parallel = ranges > 1;
    // Pass 1: each unit's admitted rows, and its group while it has only one;
    // then each unit over a limit (or with several groups) gets a place in its
    // range's stretch of `over`, and a unit within the limits keeps everything.
    crate::parallel::each_mut(&mut parts, parallel, |p| {
        for (&u, &k) in unit_of.iter().zip(key_of) {
            let Some(s) = p.seen.get_mut(u.wrapping_sub(p.first) as usize) else {
                continue;
            };
            if !admit(k) {
                continue;
            }
            if s.rows == 0 {
                s.key = k;
            } else if s.key != k {
                s.several = true;
            }
            // A table holds at most u32::MAX rows.
            s.rows = s.rows.saturating_add(1);
        }
        p.next.reserve_exact(p.seen.len());
        for s in p.seen.iter() {
            if s.rows == 0 {
                p.next.push(WITHIN);
            } else if !s.several && s.rows <= limits.max_rows {
                p.out.unit(s.key);
                p.next.push(WITHIN);
            } else {
                // Below the table's row count, so below u32::MAX.
                p.next.push(p.over_rows as u32);
                p.over_rows += s.rows as usize;
            }
        }
    });
    // Pass 2: rows of units within the limits are kept; the others are gathered
    // by unit, each unit's in row order (the ranges' stretches in unit order).
    let over_rows: usize = parts.iter().map(|p| p.over_rows).sum();
    let mut over: Vec<u32> = vec![0; over_rows];
    let mut stretches: Vec<(&mut Part<'_, K>, &mut [u32])> = Vec::with_capacity(ranges);
    let mut rest = &mut over[..];
    for p in parts.iter_mut() {
        let (mine, tail) = rest.split_at_mut(p.over_rows);
        rest = tail;
        stretches.push((p, mine));
    }
    crate::parallel::each_mut(&mut stretches, parallel, |(p, over)| {
        for (r, (&u, &k)) in unit_of.iter().zip(key_of).enumerate() {
            let Some(at) = p.next.get_mut(u.wrapping_sub(p.first) as usize) else {
                continue;
            };
            if !admit(k) {
                continue;
            }
            if *at == WITHIN {
                p.out.row(k, r as u32);
            } else {
                over[*at as usize] = r as u32;
                // At most the end of the unit's stretch, at most over_rows: a
                // unit's last row may bring it to u32::MAX only after its last row.
                *at += 1;
            }
        }
    });
    drop(stretches);
    drop(parts);
    for f in forks {
        out.join(f);
    }
    if over_rows == 0 {
        return;
    }
    // The units over a limit (each with its slice of `over`), ranked in parallel
    // chunks; what each keeps is then told to `out` in unit order, as if one by one.
    let mut start = 0usize;
    let units: Vec<(u32, std::ops::Range<usize>)> = seen
        .iter()
        .enumerate()
        .filter(|(_, s)| s.rows != 0 && (s.several || s.rows > limits.max_rows))
        .map(|(u, s)| {
            let rows = start..start + s.rows as usize;
            start = rows.end;
            (u as u32, rows)
        })
        .collect();
    drop(seen);
    // Chunks of about 2¹⁶ rows: few enough for the pool, large enough to amortise it.
    let mut chunks: Vec<&[(u32, std::ops::Range<usize>)]> = Vec::new();
    let mut rest = &units[..];
    while !rest.is_empty() {
        let mut rows = 0usize;
        let n = rest
            .iter()
            .position(|(_, r)| {
                rows += r.len();
                rows >= 1 << 16
            })
            .map_or(rest.len(), |i| i + 1);
        let (chunk, tail) = rest.split_at(n);
        chunks.push(chunk);
        rest = tail;
    }
    // A few chunks at a time, so what is kept waits in memory for a few chunks only.
    for wave in chunks.chunks(8) {
        let kept = crate::parallel::try_map(wave, |chunk| {
            let mut kept = Kept::default();
            let mut scratch = Scratch::default();
            for (u, rows) in chunk.iter() {
                bound_unit(
                    table,
                    *u,
                    &over[rows.clone()],
                    limits,
                    key,
                    &mut scratch,
                    &mut kept,
                );
            }
            Ok::<_, std::convert::Infallible>(kept)
        });
        let Ok(kept) = kept;
        for k in kept {
            for (key, row) in k.0 {
                match row {
                    UNIT => out.unit(key),
                    row => out.row(key, row),
                }
            }
        }
    }
}

/// What bounding keeps, in the order it is found: `(key, row)`, or `(key, UNIT)`
/// for a unit keeping rows of `key`.
#[derive(Default)]
struct Kept(Vec<(u32, u32)>);

/// The row number [`Kept`] uses for "a unit keeps this key" (a table's rows are
/// numbered below `u32::MAX`).
const UNIT: u32 = u32::MAX;

impl Keep for Kept {
    fn row(&mut self, key: u32, row: u32) {
        self.0.push((key, row));
    }
    fn unit(&mut self, key: u32) {
        self.0.push((key, UNIT));
    }
    fn fork(&self) -> Self {
        Kept::default()
    }
    fn join(&mut self, other: Self) {
        self.0.extend(other.0);
    }
}

/// The buffers [`bound_unit`] reuses from unit to unit.
#[derive(Default)]
struct Scratch {
    packed: Vec<u64>,
    runs: Vec<(usize, usize)>,
    values: Vec<f64>,
}

/// Bounds unit `u`, whose admitted rows are `rows` (ascending), by the rule of
/// [`BoundingKey`]: its groups sorted by key and, over a limit, ranked.
fn bound_unit<K: Keep>(
    table: &Table,
    u: u32,
    rows: &[u32],
    limits: Contribution,
    key: &BoundingKey,
    scratch: &mut Scratch,
    out: &mut K,
) {
    let key_of = table.key_ids();
    let columns = table.columns().values.len();
    let Scratch {
        packed,
        runs,
        values,
    } = scratch;
    let unit = table.unit_name(u);
    packed.clear();
    packed.extend(
        rows.iter()
            .map(|&r| (u64::from(key_of[r as usize]) << 32) | u64::from(r)),
    );
    packed.sort_unstable();
    runs.clear();
    let mut i = 0;
    while i < packed.len() {
        let k = packed[i] >> 32;
        let mut j = i;
        while j < packed.len() && packed[j] >> 32 == k {
            j += 1;
        }
        runs.push((i, j));
        i = j;
    }
    let key_id = |&(a, _): &(usize, usize)| (packed[a] >> 32) as u32;
    let row_id = |p: u64| (p & u64::from(u32::MAX)) as u32;
    if runs.len() > limits.max_groups as usize {
        let mut ranked: Vec<(u64, String, (usize, usize))> = runs
            .iter()
            .map(|run| {
                let k = encode_key(&table.key_values()[key_id(run) as usize]);
                (key.group_rank(unit, &k), k, *run)
            })
            .collect();
        ranked.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| a.1.as_bytes().cmp(b.1.as_bytes()))
        });
        *runs = ranked
            .into_iter()
            .take(limits.max_groups as usize)
            .map(|(_, _, run)| run)
            .collect();
    }
    for run in runs.iter() {
        let k = key_id(run);
        let rows = &packed[run.0..run.1];
        out.unit(k);
        if rows.len() <= limits.max_rows as usize {
            for &p in rows {
                out.row(k, row_id(p));
            }
            continue;
        }
        // The rows' values, row after row.
        values.clear();
        for &p in rows {
            let r = row_id(p) as usize;
            values.extend((0..columns).map(|c| table.values(c)[r]));
        }
        let of = |i: usize| &values[i * columns..(i + 1) * columns];
        // Identical rows (same values) together, each numbered among them.
        let mut order: Vec<usize> = (0..rows.len()).collect();
        order.sort_unstable_by(|&a, &b| cmp_bits(of(a), of(b)));
        let encoded = encode_key(&table.key_values()[k as usize]);
        let mut ranked: Vec<(u64, u64, usize)> = Vec::with_capacity(rows.len());
        let mut occurrence = 0u64;
        for (n, &i) in order.iter().enumerate() {
            occurrence = if n > 0 && same_bits(of(order[n - 1]), of(i)) {
                occurrence + 1
            } else {
                0
            };
            ranked.push((
                key.row_rank(unit, &encoded, of(i), occurrence),
                occurrence,
                i,
            ));
        }
        ranked.sort_unstable_by(|a, b| row_order((a.0, of(a.2), a.1), (b.0, of(b.2), b.1)));
        for &(_, _, i) in ranked.iter().take(limits.max_rows as usize) {
            out.row(k, row_id(rows[i]));
        }
    }
}

fn same_bits(a: &[f64], b: &[f64]) -> bool {
    a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

#[cfg(test)]
mod tests {
    use super::super::table::Columns;
    use super::*;
    use crate::seeded_rng;

    fn table(csv: &str) -> Table {
        let columns = Columns {
            unit: Some("id".into()),
            group_by: vec!["g".into()],
            bins: Default::default(),
            values: vec![],
            filter: None,
            drop_invalid: false,
        };
        Table::from_csv(csv.as_bytes(), &columns, 1 << 20).unwrap()
    }

    #[test]
    fn a_heavy_unit_is_capped_in_groups_and_rows() {
        let mut csv = String::from("id,g\n");
        for i in 0..1000 {
            csv.push_str(&format!("heavy,{}\n", i % 10));
        }
        csv.push_str("light,0\nlight,3\n");
        let t = table(&csv);
        let key = BoundingKey::draw(&mut seeded_rng(1));
        let b = bound(&t, |_| true, Contribution::new(2, 3).unwrap(), &key);
        let kept: usize = b.rows.iter().map(Vec::len).sum();
        assert_eq!(kept, 2 * 3 + 2);
        assert_eq!(b.units.iter().sum::<u64>(), 2 + 2);
        // Admitting only group 3 leaves the heavy unit's rows there.
        let three = t.key_values().iter().position(|k| k[0] == "3").unwrap() as u32;
        let b = bound(&t, |k| k == three, Contribution::new(2, 3).unwrap(), &key);
        assert_eq!(b.rows[three as usize].len(), 3 + 1);
        assert_eq!(b.units[three as usize], 2);
    }

    /// The limits' edges: a unit exactly at a limit keeps everything (the path
    /// that neither sorts nor hashes), one row or one group over is cut to it.
    #[test]
    fn units_at_and_one_over_a_limit() {
        let mut csv = String::from("id,g\n");
        csv.push_str(&"at,0\n".repeat(3));
        csv.push_str(&"over,0\n".repeat(4));
        csv.push_str("wide,0\nwide,1\nwide,2\n");
        let t = table(&csv);
        let key = BoundingKey::draw(&mut seeded_rng(2));
        let b = bound(&t, |_| true, Contribution::new(2, 3).unwrap(), &key);
        let per_unit = |name: &str| {
            let mut groups = 0;
            let mut rows = 0;
            for keyed in &b.rows {
                let n = keyed
                    .iter()
                    .filter(|&&r| t.unit_name(t.unit(r as usize)) == name)
                    .count();
                groups += usize::from(n > 0);
                rows += n;
            }
            (groups, rows)
        };
        assert_eq!(per_unit("at"), (1, 3));
        assert_eq!(per_unit("over"), (1, 3));
        assert_eq!(per_unit("wide"), (2, 2));
    }

    /// The kept rows as (unit, key, value) texts, sorted.
    fn kept(t: &Table, b: &Bounded) -> Vec<(String, String, u64)> {
        let mut out: Vec<_> = b
            .rows
            .iter()
            .enumerate()
            .flat_map(|(k, rows)| {
                rows.iter().map(move |&r| {
                    (
                        t.unit_name(t.unit(r as usize)).to_string(),
                        t.key_values()[k][0].clone(),
                        t.values(0)[r as usize].to_bits(),
                    )
                })
            })
            .collect();
        out.sort();
        out
    }

    fn valued(csv: &str) -> Table {
        let columns = Columns {
            unit: Some("id".into()),
            group_by: vec!["g".into()],
            values: vec!["x".into()],
            ..Default::default()
        };
        Table::from_csv(csv.as_bytes(), &columns, 1 << 20).unwrap()
    }

    /// Bounding in 2, 3 or 7 ranges of units (each on its own thread, as from
    /// [`PARALLEL_ROWS`] rows on) keeps exactly the rows and units of one range:
    /// units within and over their limits, a key not admitted, more ranges than
    /// units.
    #[test]
    fn ranges_of_units_keep_what_one_range_keeps() {
        use rand_core::{Rng, SeedableRng};
        use std::fmt::Write as _;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let kept = |b: Bounded| {
            let rows: Vec<Vec<u32>> = b
                .rows
                .into_iter()
                .map(|mut r| {
                    r.sort_unstable();
                    r
                })
                .collect();
            (rows, b.units)
        };
        for case in 0..40 {
            let units = 1 + rng.next_u32() % [3, 50, 400][case % 3];
            let rows = 1 + rng.next_u32() % 2_000;
            let mut csv = String::from("id,g,x\n");
            for _ in 0..rows {
                let u = rng.next_u32() % units;
                let g = rng.next_u32() % 4;
                let _ = writeln!(csv, "u{u},g{g},{}", rng.next_u32() % 10);
            }
            let t = valued(&csv);
            let limits = Contribution::new(1 + case as u32 % 3, 1 + rng.next_u32() % 12).unwrap();
            let key = BoundingKey::draw(&mut rng);
            let admit = |k: u32| k != 2;
            let groups = t.key_values().len();
            let empty = Bounded {
                rows: vec![Vec::new(); groups],
                units: vec![0; groups],
            };
            let mut one = empty.clone();
            bound_in_ranges(&t, admit, limits, &key, &mut one, 1);
            let one = kept(one);
            assert!(one.1.iter().sum::<u64>() > 0, "case {case}: nothing kept");
            for ranges in [2, 3, 7] {
                let mut got = empty.clone();
                bound_in_ranges(&t, admit, limits, &key, &mut got, ranges);
                assert_eq!(kept(got), one, "case {case}, {ranges} ranges");
            }
        }
    }

    #[test]
    fn the_kept_rows_do_not_depend_on_the_row_order_or_on_other_units() {
        // Units with rows in several groups, repeated values, and identical rows.
        let mut lines = Vec::new();
        for u in 0..6 {
            for i in 0..40 {
                lines.push(format!("u{u},g{},{}", (i * 7 + u) % 5, (i * 13) % 9));
            }
        }
        let mut rng = seeded_rng(4);
        let key = BoundingKey::draw(&mut rng);
        let limits = Contribution::new(2, 3).unwrap();
        let read = |lines: &[String]| valued(&format!("id,g,x\n{}\n", lines.join("\n")));
        let t = read(&lines);
        let first = kept(&t, &bound(&t, |_| true, limits, &key));
        assert_eq!(first.len(), 6 * 2 * 3);
        // Reversed and interleaved differently: the same rows.
        let mut shuffled = lines.clone();
        shuffled.reverse();
        shuffled.rotate_left(17);
        let t = read(&shuffled);
        assert_eq!(kept(&t, &bound(&t, |_| true, limits, &key)), first);
        // Without unit u0: the others keep exactly what they kept.
        let without: Vec<String> = lines
            .iter()
            .filter(|l| !l.starts_with("u0,"))
            .cloned()
            .collect();
        let t = read(&without);
        let rest: Vec<_> = first.iter().filter(|k| k.0 != "u0").cloned().collect();
        assert_eq!(kept(&t, &bound(&t, |_| true, limits, &key)), rest);
        // Another key chooses otherwise.
        let t = read(&lines);
        let other = BoundingKey::draw(&mut rng);
        assert_ne!(kept(&t, &bound(&t, |_| true, limits, &other)), first);
    }

    #[test]
    fn keys_encode_unambiguously() {
        for fields in [vec![], vec!["a:b", ""], vec!["1:x", "é", "2:"]] {
            let text = encode_key(&fields);
            assert_eq!(decode_key(&text).unwrap(), fields);
        }
        assert_ne!(encode_key(&["a", "b"]), encode_key(&["ab", ""]));
        assert!(decode_key("3:ab").is_none());
        let long = "é".repeat(600);
        for f in ["", "a", "0123456789", long.as_str()] {
            assert_eq!(
                encode_key(&[f, f]),
                format!("{}:{f}{}:{f}", f.len(), f.len())
            );
        }
    }

    #[test]
    fn identical_rows_count_as_many_rows() {
        // Ten identical rows, three kept: three copies, whatever the key.
        let t = valued(&format!("id,g,x\n{}", "u,a,1.5\n".repeat(10)));
        for seed in 0..5 {
            let key = BoundingKey::draw(&mut seeded_rng(seed));
            let b = bound(&t, |_| true, Contribution::new(1, 3).unwrap(), &key);
            assert_eq!(b.rows[0].len(), 3);
        }
    }

    /// Many units over their limits, ranked in parallel chunks: `out` hears
    /// exactly what bounding them one by one, in unit order, tells it.
    #[test]
    fn units_ranked_in_parallel_report_as_one_by_one() {
        use std::fmt::Write as _;
        let mut csv = String::from("id,g,x\n");
        // 30 000 units of 7 rows over 1–3 groups (every unit over max_groups 1 or
        // max_rows 2), rows interleaved: more than three chunks of 2^16 rows.
        for r in 0..210_000u32 {
            let u = r % 30_000;
            let _ = writeln!(csv, "u{u},g{},{}", (u + r / 30_000) % (1 + u % 3), r % 5);
        }
        let t = valued(&csv);
        let limits = Contribution::new(1, 2).unwrap();
        let key = BoundingKey::from_bytes([9; 16]);
        let mut got = Kept::default();
        bound_into(&t, |k| k != 1, limits, &key, &mut got);
        let mut want = Kept::default();
        let mut rows: Vec<Vec<u32>> = vec![Vec::new(); t.unit_count()];
        for (r, (&u, &k)) in t.unit_ids().iter().zip(t.key_ids()).enumerate() {
            if k != 1 {
                rows[u as usize].push(r as u32);
            }
        }
        let mut scratch = Scratch::default();
        let mut over = 0;
        for (u, rows) in rows.iter().enumerate() {
            let groups: std::collections::BTreeSet<u32> =
                rows.iter().map(|&r| t.key_ids()[r as usize]).collect();
            if rows.is_empty() || (groups.len() == 1 && rows.len() <= 2) {
                continue;
            }
            over += 1;
            bound_unit(&t, u as u32, rows, limits, &key, &mut scratch, &mut want);
        }
        assert!(over > 25_000, "{over} units over their limits");
        assert!(got.0.len() > 1 << 16);
        assert_eq!(got.0, want.0);
    }

    #[test]
    fn the_choice_is_uniform() {
        // One unit with rows in 4 groups, one kept: each group about 1/4 of the time.
        let t = table("id,g\nu,a\nu,b\nu,c\nu,d\n");
        let mut hits = [0u32; 4];
        let mut rng = seeded_rng(9);
        for _ in 0..4000 {
            let key = BoundingKey::draw(&mut rng);
            let b = bound(&t, |_| true, Contribution::new(1, 1).unwrap(), &key);
            let g = b.units.iter().position(|&u| u == 1).unwrap();
            hits[g] += 1;
        }
        let p = crate::stats::chi_square_gof(&hits.map(u64::from), &[0.25; 4]).unwrap();
        assert!(p.p_value > 1e-4, "{hits:?}");
        // Rows within a group: 2 of 5 kept, each value kept about 2/5 of the time
        // (identical values 3 and 3 are two rows).
        let t = valued("id,g,x\nu,a,1\nu,a,2\nu,a,3\nu,a,3\nu,a,5\n");
        let mut hits = [0u64; 5];
        for _ in 0..4000 {
            let key = BoundingKey::draw(&mut rng);
            let b = bound(&t, |_| true, Contribution::new(1, 2).unwrap(), &key);
            let mut threes = 0;
            for &r in &b.rows[0] {
                match t.values(0)[r as usize] as usize {
                    3 => {
                        hits[2 + threes] += 1;
                        threes += 1;
                    }
                    5 => hits[4] += 1,
                    x => hits[x - 1] += 1,
                }
            }
        }
        // Both threes together are kept as often as any two rows: P(≥ 1 three) =
        // 7/10, P(both) = 1/10.
        assert_eq!(hits.iter().sum::<u64>(), 8000);
        let (a, b) = (hits[2] as f64 / 4000.0, hits[3] as f64 / 4000.0);
        assert!((a - 0.7).abs() < 0.03 && (b - 0.1).abs() < 0.02, "{hits:?}");
        let p =
            crate::stats::chi_square_gof(&[hits[0], hits[1], hits[4]], &[1.0 / 3.0; 3]).unwrap();
        assert!(p.p_value > 1e-4, "{hits:?}");
    }
}

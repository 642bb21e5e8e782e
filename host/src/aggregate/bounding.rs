//! Contribution bounding: at most `max_groups` groups per privacy unit and at most
//! `max_rows` rows per unit and group, chosen uniformly at random.

use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::sample::uniform_below;

use super::AggregateError;
use super::table::Table;

/// How much one privacy unit may contribute to a query: rows in at most
/// `max_groups` groups, and at most `max_rows` rows in each. A unit over either
/// limit keeps groups and rows **chosen uniformly at random**, never by value, so the
/// choice says nothing about the values beyond the limits.
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

impl Contribution {
    /// Limits of at least 1 each, at most 10⁶ each.
    pub fn new(max_groups: u32, max_rows: u32) -> Result<Self, AggregateError> {
        const LIMIT: u32 = 1_000_000;
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

/// The rows that survive bounding, by group key.
#[derive(Debug, Clone)]
pub(super) struct Bounded {
    /// Kept row indices of each group key of the table.
    pub rows: Vec<Vec<u32>>,
    /// Distinct units with a kept row, per group key.
    pub units: Vec<u64>,
}

/// Bounds every unit's contribution to the rows whose key `admit` accepts (rows of
/// other keys are set aside first, so a unit's groups are chosen among admitted
/// ones).
pub(super) fn bound<R: Rng + CryptoRng + ?Sized>(
    table: &Table,
    admit: &dyn Fn(u32) -> bool,
    limits: Contribution,
    rng: &mut R,
) -> Result<Bounded, AggregateError> {
    let groups = table.key_values().len();
    let mut out = Bounded {
        rows: vec![Vec::new(); groups],
        units: vec![0; groups],
    };
    if table.columns().unit.is_none() {
        // Every row is its own unit: one row in one group, nothing to choose.
        for r in 0..table.rows() {
            let key = table.key(r);
            if admit(key) {
                out.rows[key as usize].push(r as u32);
                out.units[key as usize] += 1;
            }
        }
        return Ok(out);
    }
    // Rows of one unit together, by group within a unit (unit and key packed in
    // one word, so the sort compares integers); the row order within a (unit,
    // group) run does not matter: rows are chosen from it at random.
    let mut order: Vec<(u64, u32)> = (0..table.rows())
        .filter(|&r| admit(table.key(r)))
        .map(|r| {
            let packed = (u64::from(table.unit(r)) << 32) | u64::from(table.key(r));
            (packed, r as u32)
        })
        .collect();
    order.sort_unstable();
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let unit = order[start].0 >> 32;
        runs.clear();
        let mut i = start;
        while i < order.len() && order[i].0 >> 32 == unit {
            let packed = order[i].0;
            let mut j = i;
            while j < order.len() && order[j].0 == packed {
                j += 1;
            }
            runs.push((i, j));
            i = j;
        }
        choose(&mut runs, limits.max_groups as usize, rng)?;
        for &(a, b) in &runs {
            let key = (order[a].0 & u64::from(u32::MAX)) as usize;
            let kept = choose_in_place(&mut order[a..b], limits.max_rows as usize, rng)?;
            out.rows[key].extend(kept.iter().map(|&(_, r)| r));
            out.units[key] += 1;
        }
        start = i;
    }
    Ok(out)
}

/// The first `k` items after a partial Fisher–Yates shuffle of `items` with exact
/// uniform draws: `k` of them chosen uniformly at random (all when there are at
/// most `k`).
fn choose_in_place<'a, T, R: Rng + CryptoRng + ?Sized>(
    items: &'a mut [T],
    k: usize,
    rng: &mut R,
) -> Result<&'a [T], AggregateError> {
    let n = items.len();
    if n <= k {
        return Ok(items);
    }
    for i in 0..k {
        let j = i + uniform_below((n - i) as u64, rng)? as usize;
        items.swap(i, j);
    }
    Ok(&items[..k])
}

/// Keeps `k` of `items` chosen uniformly at random ([`choose_in_place`]).
fn choose<T, R: Rng + CryptoRng + ?Sized>(
    items: &mut Vec<T>,
    k: usize,
    rng: &mut R,
) -> Result<(), AggregateError> {
    let kept = choose_in_place(items, k, rng)?.len();
    items.truncate(kept);
    Ok(())
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
        let b = bound(
            &t,
            &|_| true,
            Contribution::new(2, 3).unwrap(),
            &mut seeded_rng(1),
        )
        .unwrap();
        let kept: usize = b.rows.iter().map(Vec::len).sum();
        assert_eq!(kept, 2 * 3 + 2);
        assert_eq!(b.units.iter().sum::<u64>(), 2 + 2);
        // Admitting only group 3 leaves the heavy unit's rows there.
        let three = t.key_values().iter().position(|k| k[0] == "3").unwrap() as u32;
        let b = bound(
            &t,
            &|k| k == three,
            Contribution::new(2, 3).unwrap(),
            &mut seeded_rng(1),
        )
        .unwrap();
        assert_eq!(b.rows[three as usize].len(), 3 + 1);
        assert_eq!(b.units[three as usize], 2);
    }

    #[test]
    fn the_choice_is_uniform() {
        // One unit with rows in 4 groups, one kept: each group about 1/4 of the time.
        let t = table("id,g\nu,a\nu,b\nu,c\nu,d\n");
        let mut hits = [0u32; 4];
        let mut rng = seeded_rng(9);
        for _ in 0..4000 {
            let b = bound(&t, &|_| true, Contribution::new(1, 1).unwrap(), &mut rng).unwrap();
            let g = b.units.iter().position(|&u| u == 1).unwrap();
            hits[g] += 1;
        }
        let p = crate::stats::chi_square_gof(&hits.map(u64::from), &[0.25; 4]).unwrap();
        assert!(p.p_value > 1e-4, "{hits:?}");
    }
}

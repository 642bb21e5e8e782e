//! Counting-query classes over the binary universe `{0,1}^d` (thesis §7.1.4).

use crate::data::{CountHistogram, DataError};

/// The predicate `P(q, u)` of a counting-query class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Predicate {
    /// `P(q, u) = AND_{i : q_i = 1} u_i` (the empty conjunction is 1).
    MonotoneConjunction,
    /// `P(q, u) = Σ_{i : u_i = 1} q_i mod 2`.
    Parity,
}

/// A counting query `q ∈ {0,1}^d` of a [`Predicate`] class; bit `i` of `mask` is `q_i`.
///
/// ```
/// use privq_host::threshold::CountingQuery;
/// let q = CountingQuery::conjunction(0b101);
/// assert!(q.holds(0b111) && !q.holds(0b011));
/// assert!(CountingQuery::parity(0b11).holds(0b01));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CountingQuery {
    predicate: Predicate,
    mask: u64,
}

impl CountingQuery {
    /// The monotone conjunction of the attributes in `mask`.
    pub fn conjunction(mask: u64) -> Self {
        CountingQuery {
            predicate: Predicate::MonotoneConjunction,
            mask,
        }
    }

    /// The parity of the attributes in `mask`.
    pub fn parity(mask: u64) -> Self {
        CountingQuery {
            predicate: Predicate::Parity,
            mask,
        }
    }

    /// The class.
    pub fn predicate(&self) -> Predicate {
        self.predicate
    }

    /// `q` as a bit mask.
    pub fn mask(&self) -> u64 {
        self.mask
    }

    /// `P(q, u)` for the record (cell) `u`.
    pub fn holds(&self, u: u64) -> bool {
        match self.predicate {
            Predicate::MonotoneConjunction => u & self.mask == self.mask,
            Predicate::Parity => (u & self.mask).count_ones() % 2 == 1,
        }
    }
}

/// `d` for a histogram over `{0,1}^d` (`2^d` cells, d ≤ 30).
pub fn binary_dimension(counts: &CountHistogram) -> Result<u32, DataError> {
    let cells = counts.len();
    if cells.is_power_of_two() && cells.trailing_zeros() <= 30 {
        Ok(cells.trailing_zeros())
    } else {
        Err(DataError::InvalidValue(format!(
            "{cells} cells: a binary universe has 2^d cells (d ≤ 30)"
        )))
    }
}

/// The exact count `Σ_{u ∈ D} P(q, u)`.
pub fn count(counts: &[u64], q: &CountingQuery) -> u64 {
    counts
        .iter()
        .enumerate()
        .filter(|&(u, _)| q.holds(u as u64))
        .map(|(_, &c)| c)
        .sum()
}

/// `f^D(q) = count/n` (non-private; tests and experiments).
pub fn fraction(counts: &CountHistogram, q: &CountingQuery) -> f64 {
    count(counts.counts(), q) as f64 / counts.total().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::MemoryCap;

    #[test]
    fn counts_follow_the_predicates() {
        // d = 2: cells 00, 01, 10, 11 hold 1, 2, 3, 4 records.
        let h = CountHistogram::from_counts(vec![1, 2, 3, 4], MemoryCap::default()).unwrap();
        assert_eq!(binary_dimension(&h).unwrap(), 2);
        assert_eq!(count(h.counts(), &CountingQuery::conjunction(0b01)), 2 + 4);
        assert_eq!(count(h.counts(), &CountingQuery::conjunction(0)), 10);
        assert_eq!(count(h.counts(), &CountingQuery::parity(0b11)), 2 + 3);
        assert_eq!(fraction(&h, &CountingQuery::conjunction(0b11)), 0.4);
        let odd = CountHistogram::from_counts(vec![1, 2, 3], MemoryCap::default()).unwrap();
        assert!(binary_dimension(&odd).is_err());
    }
}

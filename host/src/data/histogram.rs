//! Dense histograms over a universe: exact counts and normalized distributions.

use super::domain::Domain;
use super::error::DataError;

/// The most memory a dense histogram may take, in bytes (default 1 GiB).
///
/// Every dense allocation over a universe goes through [`MemoryCap::check`], so a
/// domain that is too large fails with [`DataError::UniverseTooLarge`] instead of
/// exhausting memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryCap(pub u64);

impl Default for MemoryCap {
    fn default() -> Self {
        MemoryCap(1 << 30)
    }
}

impl MemoryCap {
    /// Checks that `cells` values of `bytes_per_cell` bytes fit under the cap.
    pub fn check(self, cells: usize, bytes_per_cell: usize) -> Result<(), DataError> {
        let bytes = (cells as u64).saturating_mul(bytes_per_cell as u64);
        if bytes > self.0 {
            return Err(DataError::UniverseTooLarge {
                cells: cells as u64,
                bytes,
                cap: self.0,
            });
        }
        Ok(())
    }
}

/// Exact record counts per cell (the histogram `x ∈ ℕ^N` of a database).
///
/// ```
/// use privq_host::data::{CountHistogram, MemoryCap};
/// let h = CountHistogram::from_counts(vec![3, 0, 1, 0], MemoryCap::default())?;
/// assert_eq!(h.total(), 4);
/// assert_eq!(h.normalized()?.probabilities(), &[0.75, 0.0, 0.25, 0.0]);
/// # Ok::<(), privq_host::data::DataError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountHistogram {
    counts: Vec<u64>,
    total: u64,
}

impl CountHistogram {
    /// All-zero counts over `domain`, if the cap allows and the allocation
    /// succeeds ([`DataError::OutOfMemory`] rather than an abort when a cap set
    /// above the machine's memory lets through more than it can give).
    pub fn zeros(domain: &Domain, cap: MemoryCap) -> Result<Self, DataError> {
        let cells = domain.size();
        cap.check(cells, 8)?;
        let mut counts = Vec::new();
        counts
            .try_reserve_exact(cells)
            .map_err(|_| DataError::OutOfMemory {
                cells: cells as u64,
                bytes: (cells as u64).saturating_mul(8),
            })?;
        counts.resize(cells, 0);
        Ok(CountHistogram { counts, total: 0 })
    }

    /// From explicit counts, if the cap allows.
    pub fn from_counts(counts: Vec<u64>, cap: MemoryCap) -> Result<Self, DataError> {
        cap.check(counts.len(), 8)?;
        let total = counts
            .iter()
            .try_fold(0u64, |s, &c| s.checked_add(c))
            .ok_or_else(|| DataError::InvalidValue("the counts overflow u64".into()))?;
        Ok(CountHistogram { counts, total })
    }

    /// Adds `count` records to cell `index`.
    pub fn add(&mut self, index: usize, count: u64) -> Result<(), DataError> {
        let len = self.counts.len();
        let cell = self
            .counts
            .get_mut(index)
            .ok_or(DataError::LengthMismatch {
                expected: len,
                got: index,
            })?;
        *cell = cell
            .checked_add(count)
            .ok_or_else(|| DataError::InvalidValue("a count overflows u64".into()))?;
        self.total = self
            .total
            .checked_add(count)
            .ok_or_else(|| DataError::InvalidValue("the total overflows u64".into()))?;
        Ok(())
    }

    /// The counts.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// Number of records n.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Number of cells N.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    /// True when there are no cells.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// Number of non-zero cells.
    pub fn nonzero_cells(&self) -> usize {
        self.counts.iter().filter(|&&c| c > 0).count()
    }

    /// The normalized histogram x/n; [`DataError::EmptyData`] when n = 0.
    pub fn normalized(&self) -> Result<Distribution, DataError> {
        if self.total == 0 {
            return Err(DataError::EmptyData);
        }
        let n = self.total as f64;
        Ok(Distribution {
            p: self.counts.iter().map(|&c| c as f64 / n).collect(),
        })
    }
}

/// A probability distribution over the cells (a normalized histogram).
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    p: Vec<f64>,
}

impl Distribution {
    /// The uniform distribution on `cells` cells.
    pub fn uniform(cells: usize, cap: MemoryCap) -> Result<Self, DataError> {
        if cells == 0 {
            return Err(DataError::EmptyData);
        }
        cap.check(cells, 8)?;
        Ok(Distribution {
            p: vec![1.0 / cells as f64; cells],
        })
    }

    /// Normalizes non-negative finite weights with a positive sum.
    pub fn from_weights(mut w: Vec<f64>) -> Result<Self, DataError> {
        if w.iter().any(|&v| !v.is_finite() || v < 0.0) {
            return Err(DataError::InvalidValue(
                "weights must be finite and non-negative".into(),
            ));
        }
        let s: f64 = w.iter().sum();
        if s <= 0.0 {
            return Err(DataError::EmptyData);
        }
        w.iter_mut().for_each(|v| *v /= s);
        Ok(Distribution { p: w })
    }

    /// The probabilities.
    pub fn probabilities(&self) -> &[f64] {
        &self.p
    }

    /// Consumes the distribution, returning its probabilities.
    pub fn into_vec(self) -> Vec<f64> {
        self.p
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        self.p.len()
    }

    /// True when there are no cells.
    pub fn is_empty(&self) -> bool {
        self.p.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_the_machine_cannot_hold_is_an_error_not_an_abort() {
        // 2^50 cells (8 PiB): allowed by an unlimited cap, more than any address
        // space gives.
        let d = Domain::binary((0..50).map(|i| format!("a{i}"))).unwrap();
        let err = CountHistogram::zeros(&d, MemoryCap(u64::MAX)).unwrap_err();
        assert!(
            matches!(err, DataError::OutOfMemory { cells, .. } if cells == 1 << 50),
            "{err}"
        );
    }

    #[test]
    fn memory_cap_refuses_large_universes() {
        let d = Domain::binary((0..20).map(|i| format!("a{i}"))).unwrap();
        let err = CountHistogram::zeros(&d, MemoryCap(1 << 20)).unwrap_err();
        assert!(matches!(
            err,
            DataError::UniverseTooLarge {
                cells: 1_048_576,
                bytes: 8_388_608,
                cap: 1_048_576
            }
        ));
        assert!(err.to_string().contains("memory cap"));
        assert!(CountHistogram::zeros(&d, MemoryCap::default()).is_ok());
    }

    #[test]
    fn empty_data_is_an_error() {
        let h = CountHistogram::from_counts(vec![0, 0], MemoryCap::default()).unwrap();
        assert!(matches!(h.normalized(), Err(DataError::EmptyData)));
        assert!(matches!(
            Distribution::from_weights(vec![0.0, 0.0]),
            Err(DataError::EmptyData)
        ));
        assert!(Distribution::from_weights(vec![f64::NAN]).is_err());
    }
}

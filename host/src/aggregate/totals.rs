//! The exact bounded aggregates of a plan, per group: what an engine computes and
//! [`Plan::release_totals`](super::Plan::release_totals) turns into a release.

/// The exact aggregates of one group after contribution bounding, in the plan's
/// integer units: rows, and grid steps of the clamped values
/// ([`Plan::value_steps`](super::Plan::value_steps)).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupTotals {
    /// The group's key, one text per group-by key (a bin's label for a histogram's).
    pub key: Vec<String>,
    /// Distinct units with a kept row in the group.
    pub units: u64,
    /// Kept rows.
    pub rows: u64,
    /// One entry per value column of the plan (`Plan::columns().values`), in order.
    pub columns: Vec<ColumnTotals>,
}

/// The exact aggregates of one value column in one group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ColumnTotals {
    /// Σ s, `s` the kept values in grid steps.
    pub sum: i128,
    /// Σ (s − m), `m` the midpoint of the bounds in steps.
    pub centred: i128,
    /// Σ (s − m)².
    pub squares: i128,
    /// For a column with a quantile: entry `j` counts the kept values whose
    /// smallest candidate at or above them is candidate `j`
    /// ([`Plan::quantile_candidates`](super::Plan::quantile_candidates),
    /// [`candidate_bucket`]), so `#{s ≤ c_j}` is the sum of entries `0..=j`. Empty
    /// for a column without one.
    pub at_candidate: Vec<u64>,
}

impl ColumnTotals {
    /// Adds one kept value `s` (grid steps), `mid` the midpoint in steps and
    /// `candidates` the quantile's candidates when the column has one.
    pub fn add(&mut self, s: i64, mid: i64, candidates: Option<&[i64]>) {
        let d = i128::from(s) - i128::from(mid);
        self.sum += i128::from(s);
        self.centred += d;
        self.squares += d * d;
        if let Some(c) = candidates {
            if self.at_candidate.len() != c.len() {
                self.at_candidate = vec![0; c.len()];
            }
            let j = candidate_bucket(c, s);
            if let Some(n) = self.at_candidate.get_mut(j) {
                *n += 1;
            }
        }
    }
}

/// The index of the smallest candidate at or above `s` (candidates ascending;
/// `candidates.len()` when `s` is above them all, which a value clamped into the
/// bounds never is).
pub fn candidate_bucket(candidates: &[i64], s: i64) -> usize {
    candidates.partition_point(|&c| c < s)
}

//! Which pairs of individuals need a Lipschitz row in an LP.
//!
//! Two reductions, both exact: a pair at `d ≥ 1` needs no `D_tv` row (total
//! variation never exceeds 1), and a pair `(x, y)` with some `z` on a geodesic,
//! `d(x, z) + d(z, y) ≤ d(x, y)`, needs no row under either distance: both `D_tv`
//! and `D_∞` satisfy the triangle inequality, so the rows for `(x, z)` and `(z, y)`
//! imply `D(μ_x, μ_y) ≤ d(x, z) + d(z, y) ≤ d(x, y)`. (Induction on `d` — positive
//! off the diagonal — shows the kept rows imply every pruned one.) On the
//! hypercube metric `ε·|x Δ y|` of §8.2.3 only the neighbouring pairs remain.

use crate::dx::FiniteMetric;

/// The unordered pairs `(x, y, d(x, y))`, `x < y`, that need a row: finite
/// distance, below `vacuous_at` (if given), and not implied by a geodesic.
pub(crate) fn constrained_pairs(
    metric: &FiniteMetric,
    vacuous_at: Option<f64>,
) -> Vec<(usize, usize, f64)> {
    let n = metric.len();
    let mut out = Vec::new();
    for x in 0..n {
        let rx = metric.row(x);
        for y in x + 1..n {
            let d = rx[y];
            if d.is_infinite() || vacuous_at.is_some_and(|v| d >= v) {
                continue;
            }
            let ry = metric.row(y);
            // Both legs strictly shorter: the induction on d stays well founded even
            // when a float sum absorbs a tiny leg (fl(a + b) = a).
            let implied =
                (0..n).any(|z| z != x && z != y && rx[z] < d && ry[z] < d && rx[z] + ry[z] <= d);
            if !implied {
                out.push((x, y, d));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_keeps_neighbours_and_tv_drops_far_pairs() {
        let d = FiniteMetric::euclidean(&[[0.0], [0.5], [1.0], [3.0]], 1.0).unwrap();
        let kept: Vec<_> = constrained_pairs(&d, None)
            .into_iter()
            .map(|(x, y, _)| (x, y))
            .collect();
        assert_eq!(kept, vec![(0, 1), (1, 2), (2, 3)]);
        let tv: Vec<_> = constrained_pairs(&d, Some(1.0))
            .into_iter()
            .map(|(x, y, _)| (x, y))
            .collect();
        assert_eq!(tv, vec![(0, 1), (1, 2)]);
    }

    /// A review's case: a distance below half an ulp of another must not let two
    /// pairs prune each other and leave an individual without rows.
    #[test]
    fn a_vanishing_leg_does_not_prune_both_pairs() {
        let d = FiniteMetric::euclidean(&[[0.0], [1e-20], [0.5]], 1.0).unwrap();
        let kept: Vec<_> = constrained_pairs(&d, None)
            .into_iter()
            .map(|(x, y, _)| (x, y))
            .collect();
        assert!(kept.iter().any(|&(x, y)| y == 2 && x < 2), "{kept:?}");
    }
}

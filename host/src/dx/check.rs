//! Query matrices, pairwise (generalised) sensitivities and the privacy-constraint
//! checkers of Theorems 1, 3, 5/7 and 10 (Definition 3, §3 and Appendix C).

use super::{DxError, FiniteMetric};

/// A `K × N` matrix of linear queries over a universe of `N` elements (row-major,
/// finite entries). Row `k` is the query `q_k(x) = ⟨Q_k, x⟩`.
///
/// ```
/// use privq_host::dx::Queries;
/// let q = Queries::new(vec![vec![1.0, 0.0, 0.0], vec![0.0, 0.0, 1.0]])?;
/// assert_eq!((q.rows(), q.cols()), (2, 3));
/// assert_eq!(q.pair_l1(0, 2), 2.0);
/// # Ok::<(), privq_host::dx::DxError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Queries {
    k: usize,
    n: usize,
    data: Vec<f64>,
}

impl Queries {
    /// From rows of equal, non-zero length with finite entries.
    pub fn new(rows: Vec<Vec<f64>>) -> Result<Self, DxError> {
        let k = rows.len();
        let n = rows.first().map_or(0, Vec::len);
        if k == 0 || n == 0 || rows.iter().any(|r| r.len() != n) {
            return Err(DxError::Dimension(
                "queries need ≥ 1 row of equal, non-zero length".into(),
            ));
        }
        let data: Vec<f64> = rows.into_iter().flatten().collect();
        if data.iter().any(|v| !v.is_finite()) {
            return Err(DxError::InvalidValue(
                "query coefficients must be finite".into(),
            ));
        }
        Ok(Queries { k, n, data })
    }

    /// The number of queries `K`.
    pub fn rows(&self) -> usize {
        self.k
    }

    /// The universe size `N`.
    pub fn cols(&self) -> usize {
        self.n
    }

    /// Row `k`.
    pub fn row(&self, k: usize) -> &[f64] {
        &self.data[k * self.n..(k + 1) * self.n]
    }

    /// `|Q_{k,i} − Q_{k,j}|`.
    pub fn pair_diff(&self, k: usize, i: usize, j: usize) -> f64 {
        let r = self.row(k);
        (r[i] - r[j]).abs()
    }

    /// `Δ^Q_1(i, j) = ‖Q_{:,i} − Q_{:,j}‖₁` (Definition 3).
    pub fn pair_l1(&self, i: usize, j: usize) -> f64 {
        (0..self.k).map(|k| self.pair_diff(k, i, j)).sum()
    }

    /// `Δ^Q_p(i, j)` for `p ∈ {1, 2, ∞}` (`p = f64::INFINITY` for the max norm).
    pub fn pair_lp(&self, i: usize, j: usize, p: f64) -> f64 {
        let it = (0..self.k).map(|k| self.pair_diff(k, i, j));
        if p.is_infinite() {
            it.fold(0.0, f64::max)
        } else if p == 2.0 {
            it.map(|v| v * v).sum::<f64>().sqrt()
        } else {
            it.sum()
        }
    }

    /// The usual ℓ1 sensitivity `Δ^Q_1 = max_{i≠j} ‖Q_{:,i} − Q_{:,j}‖₁`.
    pub fn sensitivity_l1(&self) -> f64 {
        let mut best: f64 = 0.0;
        for i in 0..self.n {
            for j in i + 1..self.n {
                best = best.max(self.pair_l1(i, j));
            }
        }
        best
    }

    /// `Q x` for a histogram `x` (floating point; for reports and tests).
    pub fn answers(&self, x: &[f64]) -> Vec<f64> {
        (0..self.k)
            .map(|k| self.row(k).iter().zip(x).map(|(a, b)| a * b).sum())
            .collect()
    }

    /// Row `k` scaled by `f` (e.g. `Q̃ = c ⊙ Q'`).
    pub fn scale_rows(&self, f: &[f64]) -> Result<Self, DxError> {
        if f.len() != self.k {
            return Err(DxError::Dimension(format!(
                "{} factors for {} rows",
                f.len(),
                self.k
            )));
        }
        Queries::new(
            (0..self.k)
                .map(|k| self.row(k).iter().map(|v| v * f[k]).collect())
                .collect(),
        )
    }

    pub(crate) fn check_universe(&self, metric: &FiniteMetric) -> Result<(), DxError> {
        if self.n != metric.len() {
            return Err(DxError::Dimension(format!(
                "queries over {} elements, metric over {}",
                self.n,
                metric.len()
            )));
        }
        Ok(())
    }
}

/// `a / d` with privq's conventions (`docs/src/dx.md`): `0/d = 0` (any d), `a/∞ = 0`,
/// `a/0 = ∞`.
pub fn ratio(a: f64, d: f64) -> f64 {
    if a == 0.0 || d.is_infinite() {
        0.0
    } else if d == 0.0 {
        f64::INFINITY
    } else {
        a / d
    }
}

/// The worst privacy-constraint ratio over all pairs: the parameter set is private
/// iff `worst ≤ 1`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConstraintRatio {
    /// `max_p lhs(p)/d(p)` (0 when no pair constrains anything).
    pub worst: f64,
    /// The pair attaining it.
    pub pair: Option<(usize, usize)>,
}

impl ConstraintRatio {
    /// Whether the constraint holds (`worst ≤ 1`).
    pub fn satisfied(&self) -> bool {
        self.worst <= 1.0
    }

    /// `Ok(())`, or [`DxError::ConstraintViolated`].
    pub fn require(&self) -> Result<(), DxError> {
        if self.satisfied() {
            Ok(())
        } else {
            Err(DxError::ConstraintViolated {
                ratio: self.worst,
                pair: self.pair.unwrap_or((0, 0)),
            })
        }
    }
}

/// `max_{i<j} ratio(lhs(i, j), d(i, j))`, skipping `d = ∞` pairs.
pub fn worst_ratio(metric: &FiniteMetric, lhs: impl Fn(usize, usize) -> f64) -> ConstraintRatio {
    let mut out = ConstraintRatio {
        worst: 0.0,
        pair: None,
    };
    for (i, j, d) in metric.finite_pairs() {
        let r = ratio(lhs(i, j), d);
        if r > out.worst || r.is_nan() {
            out = ConstraintRatio {
                worst: if r.is_nan() { f64::INFINITY } else { r },
                pair: Some((i, j)),
            };
        }
    }
    out
}

/// Theorem 1 (d_X Laplace, eq. 5) for the effective queries `Q̃ = c ⊙ Q'` and scales
/// `c`: `max_p Σ_k |Q̃_{k,i} − Q̃_{k,j}|/c_k / d(p)` (Theorem 1's condition, §3.1; a
/// noiseless row with a non-zero difference on a finite pair gives `∞`).
pub fn check_laplace(
    metric: &FiniteMetric,
    q_eff: &Queries,
    c: &[f64],
) -> Result<ConstraintRatio, DxError> {
    q_eff.check_universe(metric)?;
    if c.len() != q_eff.rows() || c.iter().any(|v| v.is_nan() || *v < 0.0) {
        return Err(DxError::Dimension(
            "one non-negative scale per query is needed".into(),
        ));
    }
    Ok(worst_ratio(metric, |i, j| {
        (0..q_eff.rows())
            .map(|k| ratio(q_eff.pair_diff(k, i, j), c[k]))
            .sum()
    }))
}

/// Theorem 3 (d_X exponential mechanism, scale `c`): `max_p Δu'(i,j)/(c·d(p))`
/// for the pairwise utility sensitivities `du(i, j)`.
pub fn check_exponential(
    metric: &FiniteMetric,
    c: f64,
    du: impl Fn(usize, usize) -> f64,
) -> ConstraintRatio {
    worst_ratio(metric, |i, j| ratio(du(i, j), c))
}

/// Theorems 5 and 7 (SmallDB, MWEM): `max_{q', p} |q'_i − q'_j| / d(p)`.
pub fn check_lipschitz(
    metric: &FiniteMetric,
    q_prime: &Queries,
) -> Result<ConstraintRatio, DxError> {
    q_prime.check_universe(metric)?;
    Ok(worst_ratio(metric, |i, j| {
        (0..q_prime.rows())
            .map(|k| q_prime.pair_diff(k, i, j))
            .fold(0.0, f64::max)
    }))
}

/// Theorem 10 (statistical queries, Appendix C): with `mapped[u] = q(u') ∈ ℝ^k`,
/// `max_{u≠v} ‖q(u') − q(v')‖₁ / (n·d(u, v))`.
pub fn check_statistical(
    metric: &FiniteMetric,
    mapped: &[Vec<f64>],
    n: u64,
) -> Result<ConstraintRatio, DxError> {
    if mapped.len() != metric.len() || n == 0 {
        return Err(DxError::Dimension(
            "one mapped value per universe element and n ≥ 1".into(),
        ));
    }
    let nf = n as f64;
    Ok(worst_ratio(metric, |u, v| {
        mapped[u]
            .iter()
            .zip(&mapped[v])
            .map(|(a, b)| (a - b).abs())
            .sum::<f64>()
            / nf
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line() -> FiniteMetric {
        FiniteMetric::euclidean(&[[0.0], [1.0], [3.0]], 1.0).unwrap()
    }

    #[test]
    fn ratio_conventions() {
        assert_eq!(ratio(0.0, 0.0), 0.0);
        assert_eq!(ratio(0.0, f64::INFINITY), 0.0);
        assert_eq!(ratio(1.0, f64::INFINITY), 0.0);
        assert_eq!(ratio(1.0, 0.0), f64::INFINITY);
        assert_eq!(ratio(1.0, 4.0), 0.25);
    }

    #[test]
    fn sensitivities() {
        let q = Queries::new(vec![vec![0.0, 1.0, 3.0], vec![1.0, 0.0, 0.0]]).unwrap();
        assert_eq!(q.sensitivity_l1(), 4.0);
        assert_eq!(q.pair_lp(0, 2, 2.0), 10f64.sqrt());
        assert_eq!(q.pair_lp(0, 2, f64::INFINITY), 3.0);
    }

    #[test]
    fn theorem1_check() {
        let q = Queries::new(vec![vec![1.0, 0.0, 0.0], vec![0.0, 0.0, 1.0]]).unwrap();
        let ok = check_laplace(&line(), &q, &[1.0, 0.5]).unwrap();
        assert!((ok.worst - 1.0).abs() < 1e-12);
        let bad = check_laplace(&line(), &q, &[1.0, 0.4]).unwrap();
        assert!(!bad.satisfied());
        assert!(bad.require().is_err());
        let noiseless = check_laplace(&line(), &q, &[0.0, 1.0]).unwrap();
        assert!(noiseless.worst.is_infinite());
        assert_eq!(check_lipschitz(&line(), &q).unwrap().worst, 1.0);
        let t3 = check_exponential(&line(), 1.0, |i, j| q.pair_l1(i, j));
        assert_eq!(t3.worst, 1.0);
        let t10 = check_statistical(&line(), &[vec![0.0], vec![1.0], vec![3.0]], 2).unwrap();
        assert_eq!(t10.worst, 0.5);
    }
}

//! Dense symmetric d_X metrics over a finite universe (Definition 2; the metrics of
//! Example 1, §4.1, §4.4 and the Discussion, §5).

use super::DxError;

/// Relative tolerance of the triangle-inequality check (floating-point distances of
/// collinear points may exceed the sum by an ulp).
const TRIANGLE_TOL: f64 = 1e-12;

/// A privacy metric `d_X` on the universe `{0, …, N−1}`: a dense symmetric `N × N`
/// matrix with zero diagonal, positive off-diagonal entries (possibly `+∞`, "no
/// protection needed") and the triangle inequality, all checked on construction.
///
/// ```
/// use privq_host::dx::FiniteMetric;
/// // Three points on a line at 0, 1 and 3.
/// let d = FiniteMetric::euclidean(&[[0.0], [1.0], [3.0]], 1.0)?;
/// assert_eq!(d.get(0, 2), 3.0);
/// assert_eq!(d.min_offdiag(), 1.0);
/// # Ok::<(), privq_host::dx::DxError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct FiniteMetric {
    n: usize,
    d: Vec<f64>,
}

/// How eq. (3) combines the budgets of two differing attribute values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    /// `min{ε(a), ε(b)}` — Example 1 (a metric for binary attributes only).
    Min,
    /// `max{ε(a), ε(b)}` — §5's counter-example (a metric that breaks the intent).
    Max,
    /// `ε(a) + ε(b)` — §5's valid generalisation to any number of values
    /// ("Heterogeneous Privacy for Tabular Data").
    Sum,
}

impl FiniteMetric {
    /// Validates a row-major `n × n` matrix (symmetry, zero diagonal, positive
    /// off-diagonal, triangle inequality).
    pub fn from_matrix(n: usize, d: Vec<f64>) -> Result<Self, DxError> {
        let m = Self::unchecked(n, d)?;
        m.check_entries()?;
        m.check_triangle()?;
        Ok(m)
    }

    /// The shortest-path closure (Floyd–Warshall) of a symmetric matrix with zero
    /// diagonal and positive entries, e.g. the Blowfish threshold "metric" whose
    /// `+∞` entries break the triangle inequality (§4.4; privq's reading,
    /// `docs/src/dx.md`).
    pub fn closure_of(n: usize, d: Vec<f64>) -> Result<Self, DxError> {
        let mut m = Self::unchecked(n, d)?;
        m.check_entries()?;
        m.close();
        Ok(m)
    }

    fn unchecked(n: usize, d: Vec<f64>) -> Result<Self, DxError> {
        if n == 0 || d.len() != n * n {
            return Err(DxError::Dimension(format!(
                "a metric on {n} elements needs {} entries, got {}",
                n * n,
                d.len()
            )));
        }
        Ok(FiniteMetric { n, d })
    }

    fn check_entries(&self) -> Result<(), DxError> {
        let n = self.n;
        for i in 0..n {
            if self.get(i, i) != 0.0 {
                return Err(DxError::NonzeroDiagonal { i });
            }
            for j in 0..n {
                let v = self.get(i, j);
                if v.is_nan() || v < 0.0 {
                    return Err(DxError::InvalidValue(format!("d({i}, {j}) = {v}")));
                }
                if v != self.get(j, i) {
                    return Err(DxError::NotSymmetric { i, j });
                }
                if i != j && v == 0.0 {
                    return Err(DxError::ZeroDistance { i, j });
                }
            }
        }
        Ok(())
    }

    /// Every triple `(i, j, k)` with `d(i,j) > d(i,k) + d(k,j)` (beyond a 1e-12
    /// relative tolerance), up to `limit` of them, as `(i, j, k, excess)`.
    pub fn violations(&self, limit: usize) -> (usize, Vec<(usize, usize, usize, f64)>) {
        let n = self.n;
        let mut found = Vec::new();
        let mut count = 0;
        for i in 0..n {
            let ri = self.row(i);
            for j in i + 1..n {
                let dij = ri[j];
                let rj = self.row(j);
                for k in 0..n {
                    let s = ri[k] + rj[k];
                    if dij > s * (1.0 + TRIANGLE_TOL) {
                        count += 1;
                        if found.len() < limit {
                            found.push((i, j, k, dij - s));
                        }
                    }
                }
            }
        }
        (count, found)
    }

    fn check_triangle(&self) -> Result<(), DxError> {
        match self.violations(1) {
            (0, _) => Ok(()),
            (count, v) => {
                let (i, j, k, excess) = v[0];
                Err(DxError::TriangleViolation {
                    i,
                    j,
                    k,
                    excess,
                    count,
                })
            }
        }
    }

    fn close(&mut self) {
        let n = self.n;
        for k in 0..n {
            let rk: Vec<f64> = self.row(k).to_vec();
            for i in 0..n {
                let dik = self.d[i * n + k];
                if dik.is_infinite() {
                    continue;
                }
                let ri = &mut self.d[i * n..(i + 1) * n];
                for (dij, &dkj) in ri.iter_mut().zip(&rk) {
                    let s = dik + dkj;
                    if s < *dij {
                        *dij = s;
                    }
                }
            }
        }
    }

    /// The shortest-path closure of this metric (itself, for a metric; kept for
    /// symmetry with [`FiniteMetric::closure_of`]).
    pub fn closure(&self) -> FiniteMetric {
        let mut m = self.clone();
        m.close();
        m
    }

    /// `ε·‖u_i − u_j‖₂` for points `u_i ∈ ℝ^D` (§4.1 with `ε = scale`). Distinct
    /// points are required.
    pub fn euclidean<P: AsRef<[f64]>>(points: &[P], scale: f64) -> Result<Self, DxError> {
        Self::from_points(points, scale, |a, b| {
            a.iter()
                .zip(b)
                .map(|(x, y)| (x - y) * (x - y))
                .sum::<f64>()
                .sqrt()
        })
    }

    /// `ε·‖u_i − u_j‖_∞` — the time-series metric of §5.
    pub fn linf<P: AsRef<[f64]>>(points: &[P], scale: f64) -> Result<Self, DxError> {
        Self::from_points(points, scale, |a, b| {
            a.iter()
                .zip(b)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f64::max)
        })
    }

    /// The weighted ℓ1 metric `Σ_k w_k·|u_ik − u_jk|` (weights finite, `≥ 0`, not
    /// all zero): e.g. the fairness metric of thesis §8.2 over an expert's feature
    /// weights. Distinct points (under the weights) are required.
    pub fn weighted_l1<P: AsRef<[f64]>>(points: &[P], weights: &[f64]) -> Result<Self, DxError> {
        if weights.iter().any(|w| !(w.is_finite() && *w >= 0.0))
            || weights.iter().all(|w| *w == 0.0)
        {
            return Err(DxError::InvalidValue(format!(
                "ℓ1 weights must be finite, ≥ 0 and not all 0, got {weights:?}"
            )));
        }
        if points.iter().any(|p| p.as_ref().len() != weights.len()) {
            return Err(DxError::Dimension(format!(
                "{} weights, but a point has another number of coordinates",
                weights.len()
            )));
        }
        Self::from_points(points, 1.0, |a, b| {
            a.iter()
                .zip(b)
                .zip(weights)
                .map(|((x, y), w)| w * (x - y).abs())
                .sum()
        })
    }

    /// `ε·|u_i − u_j|/T` — the date-generalisation metric of §5.
    pub fn scaled_line(values: &[f64], epsilon: f64, period: f64) -> Result<Self, DxError> {
        positive("period", period)?;
        let pts: Vec<[f64; 1]> = values.iter().map(|&v| [v]).collect();
        Self::from_points(&pts, epsilon / period, |a, b| (a[0] - b[0]).abs())
    }

    fn from_points<P: AsRef<[f64]>>(
        points: &[P],
        scale: f64,
        dist: impl Fn(&[f64], &[f64]) -> f64,
    ) -> Result<Self, DxError> {
        positive("scale", scale)?;
        let n = points.len();
        let dim = points.first().map_or(0, |p| p.as_ref().len());
        if points
            .iter()
            .any(|p| p.as_ref().len() != dim || p.as_ref().iter().any(|v| !v.is_finite()))
        {
            return Err(DxError::InvalidValue(
                "points must share a dimension and be finite".into(),
            ));
        }
        let mut d = vec![0.0; n * n];
        for i in 0..n {
            for j in i + 1..n {
                let v = scale * dist(points[i].as_ref(), points[j].as_ref());
                d[i * n + j] = v;
                d[j * n + i] = v;
            }
        }
        let m = Self::unchecked(n, d)?;
        m.check_entries()?;
        Ok(m)
    }

    /// The Blowfish threshold metric (§4.4): `ε` for pairs within Euclidean
    /// distance `T`, `+∞` otherwise, zero diagonal, then the shortest-path closure.
    pub fn blowfish<P: AsRef<[f64]>>(
        points: &[P],
        epsilon: f64,
        threshold: f64,
    ) -> Result<Self, DxError> {
        let e = Self::euclidean(points, 1.0)?;
        positive("epsilon", epsilon)?;
        positive("threshold", threshold)?;
        let d =
            e.d.iter()
                .map(|&v| {
                    if v == 0.0 {
                        0.0
                    } else if v <= threshold {
                        epsilon
                    } else {
                        f64::INFINITY
                    }
                })
                .collect();
        Self::closure_of(e.n, d)
    }

    /// The smooth threshold metric (§4.4): `ε·max(1, ‖u_i − u_j‖/T)` off the
    /// diagonal (a metric as is).
    pub fn smooth<P: AsRef<[f64]>>(
        points: &[P],
        epsilon: f64,
        threshold: f64,
    ) -> Result<Self, DxError> {
        let e = Self::euclidean(points, 1.0)?;
        positive("epsilon", epsilon)?;
        positive("threshold", threshold)?;
        let d =
            e.d.iter()
                .map(|&v| {
                    if v == 0.0 {
                        0.0
                    } else {
                        epsilon * (v / threshold).max(1.0)
                    }
                })
                .collect();
        let m = Self::unchecked(e.n, d)?;
        m.check_entries()?;
        Ok(m)
    }

    /// Eq. (3) and its §5 variants: `d(i,j) = Σ_k comb(ε_k(a), ε_k(b))·[a ≠ b]`,
    /// where `a, b` are the k-th attribute values of elements `i, j`,
    /// `elements[i][k]` indexes `budgets[k]`, and budgets may be `+∞`. Validated:
    /// [`Combine::Min`] on an attribute with more than two values can break the
    /// triangle inequality, and is then rejected.
    pub fn attribute_budget(
        elements: &[Vec<usize>],
        budgets: &[Vec<f64>],
        combine: Combine,
    ) -> Result<Self, DxError> {
        for b in budgets.iter().flatten() {
            if b.is_nan() || *b <= 0.0 {
                return Err(DxError::InvalidValue(format!(
                    "attribute budgets must be positive, got {b}"
                )));
            }
        }
        let n = elements.len();
        for e in elements {
            if e.len() != budgets.len() || e.iter().zip(budgets).any(|(&v, b)| v >= b.len()) {
                return Err(DxError::Dimension(
                    "an element's attribute values do not match the budgets".into(),
                ));
            }
        }
        let mut d = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                d[i * n + j] = elements[i]
                    .iter()
                    .zip(&elements[j])
                    .zip(budgets)
                    .filter(|((a, b), _)| a != b)
                    .map(|((&a, &b), eps)| match combine {
                        Combine::Min => eps[a].min(eps[b]),
                        Combine::Max => eps[a].max(eps[b]),
                        Combine::Sum => eps[a] + eps[b],
                    })
                    .sum();
            }
        }
        Self::from_matrix(n, d)
    }

    /// Weighted Hamming `Σ_k ε_k·[a_k ≠ b_k]` (a per-attribute budget).
    pub fn weighted_hamming(elements: &[Vec<usize>], weights: &[f64]) -> Result<Self, DxError> {
        let budgets: Vec<Vec<f64>> = weights
            .iter()
            .enumerate()
            .map(|(k, &w)| {
                vec![
                    w;
                    elements
                        .iter()
                        .map(|e| e.get(k).copied().unwrap_or(0) + 1)
                        .max()
                        .unwrap_or(1)
                ]
            })
            .collect();
        Self::attribute_budget(elements, &budgets, Combine::Min)
    }

    /// Per-element budgets `(ε_i + ε_j)·[i ≠ j]` (§5).
    pub fn per_element(eps: &[f64]) -> Result<Self, DxError> {
        let n = eps.len();
        let mut d = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                if i != j {
                    d[i * n + j] = eps[i] + eps[j];
                }
            }
        }
        let m = Self::unchecked(n, d)?;
        m.check_entries()?;
        Ok(m)
    }

    /// The shortest-path metric of an undirected weighted graph (e.g. a social
    /// network's spanning tree, §5); unreachable pairs get `+∞`.
    pub fn graph(n: usize, edges: &[(usize, usize, f64)]) -> Result<Self, DxError> {
        let mut d = vec![f64::INFINITY; n * n];
        for i in 0..n {
            d[i * n + i] = 0.0;
        }
        for &(a, b, w) in edges {
            if a >= n || b >= n || a == b {
                return Err(DxError::Dimension(format!(
                    "edge ({a}, {b}) on {n} vertices"
                )));
            }
            positive("edge weight", w)?;
            let v = d[a * n + b].min(w);
            d[a * n + b] = v;
            d[b * n + a] = v;
        }
        Self::closure_of(n, d)
    }

    /// The same metric multiplied by `f > 0`.
    pub fn scaled(&self, f: f64) -> Result<Self, DxError> {
        positive("factor", f)?;
        Ok(FiniteMetric {
            n: self.n,
            d: self.d.iter().map(|v| v * f).collect(),
        })
    }

    /// The pointwise sum `d + d'` (a metric again; Fact 1.2's composed budget).
    pub fn sum(&self, other: &FiniteMetric) -> Result<Self, DxError> {
        if self.n != other.n {
            return Err(DxError::Dimension(format!(
                "metrics over {} and {} elements",
                self.n, other.n
            )));
        }
        Ok(FiniteMetric {
            n: self.n,
            d: self.d.iter().zip(&other.d).map(|(a, b)| a + b).collect(),
        })
    }

    /// `max_{i≠j} d(i, j)` (`+∞` if some pair is unprotected; 0 for N = 1).
    pub fn max_offdiag(&self) -> f64 {
        let n = self.n;
        (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
            .map(|(i, j)| self.get(i, j))
            .fold(0.0, f64::max)
    }

    /// The universe size `N`.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Always false (a metric has at least one element).
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// `d(i, j)`. Panics when out of range.
    pub fn get(&self, i: usize, j: usize) -> f64 {
        self.d[i * self.n + j]
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &[f64] {
        &self.d[i * self.n..(i + 1) * self.n]
    }

    /// `min_{i≠j} d(i, j)` (the paper's `min_{i,j}` read over pairs `i ≠ j`,
    /// `docs/src/dx.md`; `+∞` if every pair is unprotected).
    pub fn min_offdiag(&self) -> f64 {
        let n = self.n;
        (0..n)
            .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
            .map(|(i, j)| self.get(i, j))
            .fold(f64::INFINITY, f64::min)
    }

    /// Iterates over unordered pairs `(i, j, d)`, `i < j`, with finite `d`.
    pub fn finite_pairs(&self) -> impl Iterator<Item = (usize, usize, f64)> + '_ {
        let n = self.n;
        (0..n)
            .flat_map(move |i| (i + 1..n).map(move |j| (i, j, self.get(i, j))))
            .filter(|p| p.2.is_finite())
    }
}

fn positive(what: &str, v: f64) -> Result<(), DxError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(DxError::InvalidValue(format!(
            "{what} must be positive and finite, got {v}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Example 1's universe: (gender, native, age) with value 0 = first letter.
    pub(crate) fn example1(combine: Combine) -> FiniteMetric {
        let elements: Vec<Vec<usize>> = (0..8)
            .map(|i| vec![(i >> 2) & 1, (i >> 1) & 1, i & 1])
            .collect();
        // ε(M)=ε(F)=1, ε(Y)=0.1, ε(N)=1, ε(A)=ε(B)=1.
        let budgets = vec![vec![1.0, 1.0], vec![0.1, 1.0], vec![1.0, 1.0]];
        FiniteMetric::attribute_budget(&elements, &budgets, combine).unwrap()
    }

    #[test]
    fn example1_distances() {
        let d = example1(Combine::Min);
        assert!((d.get(0, 1) - 1.0).abs() < 1e-12);
        assert!((d.get(0, 2) - 0.1).abs() < 1e-12);
        assert!((d.get(0, 7) - 2.1).abs() < 1e-12);
        assert_eq!(d.get(3, 3), 0.0);
    }

    #[test]
    fn min_with_three_values_is_rejected() {
        let elements = vec![vec![0], vec![1], vec![2]];
        let r = FiniteMetric::attribute_budget(&elements, &[vec![1.0, 10.0, 10.0]], Combine::Min);
        assert!(matches!(
            r,
            Err(DxError::TriangleViolation {
                i: 1,
                j: 2,
                k: 0,
                ..
            })
        ));
        assert!(
            FiniteMetric::attribute_budget(&elements, &[vec![1.0, 10.0, 10.0]], Combine::Sum)
                .is_ok()
        );
    }

    #[test]
    fn bad_matrices_are_typed_errors() {
        let zero = vec![0.0, 0.0, 0.0, 0.0];
        assert!(matches!(
            FiniteMetric::from_matrix(2, zero),
            Err(DxError::ZeroDistance { i: 0, j: 1 })
        ));
        let asym = vec![0.0, 1.0, 2.0, 0.0];
        assert!(matches!(
            FiniteMetric::from_matrix(2, asym),
            Err(DxError::NotSymmetric { i: 0, j: 1 })
        ));
        let diag = vec![1.0, 1.0, 1.0, 0.0];
        assert!(matches!(
            FiniteMetric::from_matrix(2, diag),
            Err(DxError::NonzeroDiagonal { i: 0 })
        ));
        assert!(matches!(
            FiniteMetric::from_matrix(3, vec![0.0; 4]),
            Err(DxError::Dimension(_))
        ));
        let tri = vec![0.0, 1.0, 5.0, 1.0, 0.0, 1.0, 5.0, 1.0, 0.0];
        match FiniteMetric::from_matrix(3, tri.clone()) {
            Err(DxError::TriangleViolation { count, excess, .. }) => {
                assert_eq!(count, 1);
                assert!((excess - 3.0).abs() < 1e-12);
            }
            other => panic!("{other:?}"),
        }
        let closed = FiniteMetric::closure_of(3, tri).unwrap();
        assert_eq!(closed.get(0, 2), 2.0);
    }

    #[test]
    fn blowfish_closure_and_smooth() {
        let pts = [[0.0, 0.0], [1.0, 0.0], [2.0, 0.0], [10.0, 0.0]];
        let b = FiniteMetric::blowfish(&pts, 0.5, 1.5).unwrap();
        assert_eq!(b.get(0, 1), 0.5);
        assert_eq!(b.get(0, 2), 1.0); // closure: eps + eps
        assert!(b.get(0, 3).is_infinite());
        assert_eq!(b.get(2, 2), 0.0);
        let s = FiniteMetric::smooth(&pts, 0.5, 1.5).unwrap();
        assert_eq!(s.get(0, 1), 0.5);
        assert!((s.get(0, 3) - 0.5 * 10.0 / 1.5).abs() < 1e-12);
        assert_eq!(s.violations(1).0, 0);
        for i in 0..4 {
            for j in 0..4 {
                assert!(s.get(i, j) <= b.get(i, j));
            }
        }
    }

    #[test]
    fn other_constructors() {
        let g = FiniteMetric::graph(4, &[(0, 1, 1.0), (1, 2, 2.0)]).unwrap();
        assert_eq!(g.get(0, 2), 3.0);
        assert!(g.get(0, 3).is_infinite());
        let p = FiniteMetric::per_element(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(p.get(1, 2), 5.0);
        let h = FiniteMetric::weighted_hamming(&[vec![0, 0], vec![1, 0], vec![1, 1]], &[0.5, 2.0])
            .unwrap();
        assert_eq!(h.get(0, 2), 2.5);
        let w = FiniteMetric::weighted_l1(&[[0.0, 0.0], [1.0, 3.0]], &[0.5, 2.0]).unwrap();
        assert_eq!(w.get(0, 1), 6.5);
        assert!(FiniteMetric::weighted_l1(&[[0.0], [1.0]], &[-1.0]).is_err());
        assert!(FiniteMetric::weighted_l1(&[[0.0, 1.0], [0.0, 2.0]], &[1.0, 0.0]).is_err());
        let l = FiniteMetric::linf(&[[0.0, 0.0], [1.0, 3.0]], 2.0).unwrap();
        assert_eq!(l.get(0, 1), 6.0);
        let t = FiniteMetric::scaled_line(&[0.0, 10.0], 1.0, 5.0).unwrap();
        assert_eq!(t.get(0, 1), 2.0);
        assert!(matches!(
            FiniteMetric::euclidean(&[[1.0], [1.0]], 1.0),
            Err(DxError::ZeroDistance { .. })
        ));
        assert_eq!(t.scaled(0.5).unwrap().get(0, 1), 1.0);
    }
}

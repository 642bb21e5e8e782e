//! The ℓ1 setting of Section 3: a box domain scaled to ℓ1 diameter 1, and the exact
//! per-coordinate oracle `F^{(i)}(t) = (1/n) Σ_x |x_i − t|` with its slope
//! `F^{(i)}'(t) = (1/n)(#{x_i < t} − #{x_i > t})`, answered in `O(log n)` from
//! sorted columns and prefix sums.

use serde::{Deserialize, Serialize};

use super::DistanceError;
use super::metric::check_box;

/// A box `[lo, hi] ⊂ ℝ^ℓ` with the ℓ1 metric, scaled by its ℓ1 diameter
/// `D = Σ (hi_i − lo_i)`: coordinate `i` maps to `[0, w_i]` with `w_i = (hi_i − lo_i)/D`
/// and `Σ w_i = 1`, so scaled ℓ1 distances lie in `[0, 1]`.
///
/// ```
/// use privq_host::distance::BoxDomain;
/// let d = BoxDomain::new(vec![0.0, 0.0], vec![1.0, 3.0])?;
/// assert_eq!(d.diameter(), 4.0);
/// assert_eq!(d.scale(&[1.0, 3.0])?, vec![0.25, 0.75]);
/// assert!(d.scale(&[1.5, 0.0]).is_err());
/// # Ok::<(), privq_host::distance::DistanceError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoxDomain {
    lo: Vec<f64>,
    hi: Vec<f64>,
}

impl BoxDomain {
    /// The box `[lo, hi]` (`lo < hi` coordinate-wise, at least one coordinate).
    pub fn new(lo: Vec<f64>, hi: Vec<f64>) -> Result<Self, DistanceError> {
        // Reuse the ℓp constructor's validation.
        super::metric::Lp::l1(lo.clone(), hi.clone())?;
        Ok(BoxDomain { lo, hi })
    }

    /// `[0, 1]^ℓ`.
    pub fn unit_cube(dim: usize) -> Result<Self, DistanceError> {
        Self::new(vec![0.0; dim], vec![1.0; dim])
    }

    /// The dimension ℓ.
    pub fn dim(&self) -> usize {
        self.lo.len()
    }

    /// The ℓ1 diameter `Σ (hi_i − lo_i)`.
    pub fn diameter(&self) -> f64 {
        self.lo.iter().zip(&self.hi).map(|(a, b)| b - a).sum()
    }

    /// The scaled widths `w_i` (summing to 1).
    pub fn widths(&self) -> Vec<f64> {
        let d = self.diameter();
        self.lo
            .iter()
            .zip(&self.hi)
            .map(|(a, b)| (b - a) / d)
            .collect()
    }

    /// Lower corner.
    pub fn lo(&self) -> &[f64] {
        &self.lo
    }

    /// Upper corner.
    pub fn hi(&self) -> &[f64] {
        &self.hi
    }

    /// Checks a (public) query point and maps it to scaled coordinates
    /// `(x_i − lo_i)/D ∈ [0, w_i]`.
    pub fn scale(&self, p: &[f64]) -> Result<Vec<f64>, DistanceError> {
        check_box(&self.lo, &self.hi, p)?;
        let d = self.diameter();
        Ok(p.iter().zip(&self.lo).map(|(v, a)| (v - a) / d).collect())
    }

    /// Maps a private data point to scaled coordinates, clamping each coordinate
    /// into `[lo_i, hi_i]` (a non-finite one to `lo_i`). Only the dimension — public
    /// schema — can be refused: a record outside the box must neither abort the
    /// release (which would reveal it) nor move answers by more than one record can.
    pub fn clamp_scale(&self, p: &[f64]) -> Result<Vec<f64>, DistanceError> {
        if p.len() != self.dim() {
            return Err(DistanceError::DimensionMismatch {
                expected: self.dim(),
                found: p.len(),
            });
        }
        let d = self.diameter();
        Ok(p.iter()
            .zip(self.lo.iter().zip(&self.hi))
            .map(|(&v, (&a, &b))| {
                let v = if v.is_finite() { v.clamp(a, b) } else { a };
                (v - a) / d
            })
            .collect())
    }
}

/// One sorted scaled column with prefix sums.
#[derive(Debug, Clone)]
struct Column {
    sorted: Vec<f64>,
    /// `prefix[j] = Σ_{m<j} sorted[m]`.
    prefix: Vec<f64>,
}

impl Column {
    fn new(mut values: Vec<f64>) -> Self {
        values.sort_by(f64::total_cmp);
        let mut prefix = Vec::with_capacity(values.len() + 1);
        let mut s = 0.0;
        prefix.push(0.0);
        for v in &values {
            s += v;
            prefix.push(s);
        }
        Column {
            sorted: values,
            prefix,
        }
    }

    /// `Σ_x |x − t|`.
    fn abs_sum(&self, t: f64) -> f64 {
        let below = self.sorted.partition_point(|&v| v < t);
        let n = self.sorted.len();
        let total = self.prefix[n];
        let left = self.prefix[below];
        (t * below as f64 - left) + (total - left - t * (n - below) as f64)
    }

    /// `#{x < t} − #{x > t}`.
    fn slope_count(&self, t: f64) -> f64 {
        let below = self.sorted.partition_point(|&v| v < t);
        let not_above = self.sorted.partition_point(|&v| v <= t);
        below as f64 - (self.sorted.len() - not_above) as f64
    }
}

/// The private database in the ℓ1 setting: scaled, sorted columns. This is the
/// exact (non-private) oracle the mechanisms query; it never leaves the curator.
///
/// ```
/// use privq_host::distance::{Columns, BoxDomain};
/// let domain = BoxDomain::unit_cube(1)?;
/// let cols = Columns::new(&domain, &[vec![0.0], vec![1.0]])?;
/// assert_eq!(cols.value(0, 0.5), 0.5);
/// assert_eq!(cols.slope(0, 0.25), 0.0);
/// assert_eq!(cols.answer(&[0.0])?, 0.5);
/// # Ok::<(), privq_host::distance::DistanceError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Columns {
    domain: BoxDomain,
    widths: Vec<f64>,
    columns: Vec<Column>,
    n: usize,
}

impl Columns {
    /// Builds the columns; every point is clamped into the domain
    /// ([`BoxDomain::clamp_scale`]), only a wrong dimension is refused.
    pub fn new<P: AsRef<[f64]>>(domain: &BoxDomain, points: &[P]) -> Result<Self, DistanceError> {
        if points.is_empty() {
            return Err(DistanceError::EmptyData);
        }
        let dim = domain.dim();
        let mut cols: Vec<Vec<f64>> = vec![Vec::with_capacity(points.len()); dim];
        for p in points {
            for (c, v) in cols.iter_mut().zip(domain.clamp_scale(p.as_ref())?) {
                c.push(v);
            }
        }
        Ok(Columns {
            domain: domain.clone(),
            widths: domain.widths(),
            columns: cols.into_iter().map(Column::new).collect(),
            n: points.len(),
        })
    }

    /// The number of points n.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Always false (construction refuses empty data).
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The dimension ℓ.
    pub fn dim(&self) -> usize {
        self.columns.len()
    }

    /// The domain.
    pub fn domain(&self) -> &BoxDomain {
        &self.domain
    }

    /// The scaled widths `w_i`.
    pub fn widths(&self) -> &[f64] {
        &self.widths
    }

    /// `F^{(i)}(t)` at a scaled coordinate `t` (0 for an unknown coordinate).
    pub fn value(&self, i: usize, t: f64) -> f64 {
        self.columns
            .get(i)
            .map_or(0.0, |c| c.abs_sum(t) / self.n as f64)
    }

    /// `F^{(i)}'(t)` (the midpoint subgradient at ties).
    pub fn slope(&self, i: usize, t: f64) -> f64 {
        self.columns
            .get(i)
            .map_or(0.0, |c| c.slope_count(t) / self.n as f64)
    }

    /// `F(y) = Σ_i F^{(i)}(y_i)` for a scaled query.
    pub fn answer_scaled(&self, y: &[f64]) -> f64 {
        y.iter()
            .enumerate()
            .map(|(i, &t)| self.value(i, t))
            .sum::<f64>()
            .clamp(0.0, 1.0)
    }

    /// The exact scaled answer for a query in the domain's original units.
    pub fn answer(&self, y: &[f64]) -> Result<f64, DistanceError> {
        Ok(self.answer_scaled(&self.domain.scale(y)?))
    }

    /// The scaled values of one column, sorted (for baselines that bin the data).
    pub fn sorted_column(&self, i: usize) -> &[f64] {
        self.columns.get(i).map_or(&[], |c| &c.sorted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oracle_matches_brute_force() {
        let domain = BoxDomain::new(vec![0.0, -1.0, 0.0], vec![1.0, 1.0, 5.0]).unwrap();
        let pts: Vec<Vec<f64>> = (0..57)
            .map(|i| {
                let f = i as f64;
                vec![(f * 0.37) % 1.0, ((f * 0.71) % 2.0) - 1.0, (f * 1.3) % 5.0]
            })
            .collect();
        let cols = Columns::new(&domain, &pts).unwrap();
        for q in [
            [0.5, 0.0, 2.5],
            [0.0, -1.0, 0.0],
            [1.0, 1.0, 5.0],
            [0.37, 0.42, 1.3],
        ] {
            let brute: f64 = pts
                .iter()
                .map(|p| p.iter().zip(&q).map(|(a, b)| (a - b).abs()).sum::<f64>())
                .sum::<f64>()
                / (pts.len() as f64 * domain.diameter());
            assert!((cols.answer(&q).unwrap() - brute).abs() < 1e-12);
        }
        assert!(matches!(
            Columns::new(&domain, &Vec::<Vec<f64>>::new()).unwrap_err(),
            DistanceError::EmptyData
        ));
        // A record outside the box is clamped into it, never refused.
        let clamped = Columns::new(&domain, &[vec![2.0, f64::NAN, -1.0]]).unwrap();
        let inside = Columns::new(&domain, &[vec![1.0, -1.0, 0.0]]).unwrap();
        assert_eq!(
            clamped.answer(&[0.5, 0.5, 0.5]).unwrap(),
            inside.answer(&[0.5, 0.5, 0.5]).unwrap()
        );
        assert!(Columns::new(&domain, &[vec![0.0, 0.0]]).is_err());
    }
}

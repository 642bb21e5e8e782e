//! Metrics with a public diameter bound. Every distance a mechanism uses is
//! `min(1, d(x, y) / diameter)`, so a distance query is always `1/n`-sensitive;
//! [`Metric::distance`] refuses (typed error) a raw distance above the declared
//! bound instead of silently clipping it, because that means the bound is wrong.

use super::DistanceError;

/// Slack for floating-point rounding when checking the diameter bound.
const DIAMETER_SLACK: f64 = 1e-9;

/// A metric over `Self::Point` with a public diameter bound.
///
/// ```
/// use privq_host::distance::metric::{Lp, Metric};
/// let l1 = Lp::l1(vec![0.0; 3], vec![1.0; 3])?; // [0,1]^3, ℓ1 diameter 3
/// assert_eq!(l1.raw_distance(&[0.0, 0.0, 0.0], &[1.0, 1.0, 1.0])?, 3.0);
/// assert_eq!(l1.distance(&[0.0, 0.0, 0.0], &[1.0, 1.0, 1.0])?, 1.0);
/// assert!(l1.check(&[2.0, 0.0, 0.0]).is_err());
/// # Ok::<(), privq_host::distance::DistanceError>(())
/// ```
pub trait Metric {
    /// The point type (`[f64]`, `[u32]`, `str`).
    type Point: ?Sized;

    /// The public diameter bound (> 0) used to scale distances into `[0, 1]`.
    fn diameter(&self) -> f64;

    /// Checks that `p` lies in the declared domain.
    fn check(&self, p: &Self::Point) -> Result<(), DistanceError>;

    /// The unscaled distance between two points of the domain.
    fn raw_distance(&self, a: &Self::Point, b: &Self::Point) -> Result<f64, DistanceError>;

    /// The scaled distance `d(a, b) / diameter`, clipped at 1; a raw distance above
    /// the declared diameter is an [`DistanceError::ExceedsDiameter`] error.
    fn distance(&self, a: &Self::Point, b: &Self::Point) -> Result<f64, DistanceError> {
        let raw = self.raw_distance(a, b)?;
        let diameter = self.diameter();
        if !raw.is_finite() || raw > diameter * (1.0 + DIAMETER_SLACK) {
            return Err(DistanceError::ExceedsDiameter {
                distance: raw,
                diameter,
            });
        }
        Ok((raw / diameter).clamp(0.0, 1.0))
    }

    /// The exact (non-private) answer `(1/n) Σ_x distance(x, y)`.
    fn average_distance<P: AsRef<Self::Point>>(
        &self,
        data: &[P],
        y: &Self::Point,
    ) -> Result<f64, DistanceError> {
        if data.is_empty() {
            return Err(DistanceError::EmptyData);
        }
        let mut sum = 0.0;
        for x in data {
            sum += self.distance(x.as_ref(), y)?;
        }
        Ok(sum / data.len() as f64)
    }
}

fn positive(name: &str, x: f64) -> Result<f64, DistanceError> {
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(DistanceError::InvalidParameter(format!(
            "{name} must be positive and finite, got {x}"
        )))
    }
}

/// The ℓp metric on a box `[lo, hi] ⊂ ℝ^ℓ`, `p ≥ 1`; diameter `‖hi − lo‖_p` unless
/// a larger bound is declared.
#[derive(Debug, Clone, PartialEq)]
pub struct Lp {
    p: f64,
    lo: Vec<f64>,
    hi: Vec<f64>,
    diameter: f64,
}

impl Lp {
    /// ℓp on the box `[lo, hi]`; `p ≥ 1`, `lo < hi` coordinate-wise.
    pub fn new(p: f64, lo: Vec<f64>, hi: Vec<f64>) -> Result<Self, DistanceError> {
        if !(p.is_finite() && p >= 1.0) {
            return Err(DistanceError::InvalidParameter(format!(
                "p must be at least 1, got {p}"
            )));
        }
        if lo.is_empty() {
            return Err(DistanceError::InvalidParameter(
                "the box needs at least one coordinate".into(),
            ));
        }
        if lo.len() != hi.len() {
            return Err(DistanceError::DimensionMismatch {
                expected: lo.len(),
                found: hi.len(),
            });
        }
        for (i, (a, b)) in lo.iter().zip(&hi).enumerate() {
            if !(a.is_finite() && b.is_finite() && a < b) {
                return Err(DistanceError::InvalidParameter(format!(
                    "coordinate {i}: need lo < hi, got [{a}, {b}]"
                )));
            }
        }
        let diameter = lo
            .iter()
            .zip(&hi)
            .map(|(a, b)| (b - a).powf(p))
            .sum::<f64>()
            .powf(1.0 / p);
        Ok(Lp {
            p,
            lo,
            hi,
            diameter,
        })
    }

    /// ℓ1 on `[lo, hi]`.
    pub fn l1(lo: Vec<f64>, hi: Vec<f64>) -> Result<Self, DistanceError> {
        Self::new(1.0, lo, hi)
    }

    /// ℓ2 on `[lo, hi]`.
    pub fn l2(lo: Vec<f64>, hi: Vec<f64>) -> Result<Self, DistanceError> {
        Self::new(2.0, lo, hi)
    }

    /// Declares a larger public diameter bound (must be ≥ the box's diameter).
    pub fn with_diameter(mut self, diameter: f64) -> Result<Self, DistanceError> {
        let d = positive("diameter", diameter)?;
        if d < self.diameter {
            return Err(DistanceError::InvalidParameter(format!(
                "diameter {d} is below the box's diameter {}",
                self.diameter
            )));
        }
        self.diameter = d;
        Ok(self)
    }

    /// The exponent p.
    pub fn p(&self) -> f64 {
        self.p
    }

    /// Lower corner of the box.
    pub fn lo(&self) -> &[f64] {
        &self.lo
    }

    /// Upper corner of the box.
    pub fn hi(&self) -> &[f64] {
        &self.hi
    }

    /// The dimension ℓ.
    pub fn dim(&self) -> usize {
        self.lo.len()
    }
}

impl Metric for Lp {
    type Point = [f64];

    fn diameter(&self) -> f64 {
        self.diameter
    }

    fn check(&self, p: &[f64]) -> Result<(), DistanceError> {
        check_box(&self.lo, &self.hi, p)
    }

    fn raw_distance(&self, a: &[f64], b: &[f64]) -> Result<f64, DistanceError> {
        self.check(a)?;
        self.check(b)?;
        let d = if self.p == 1.0 {
            a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum()
        } else if self.p == 2.0 {
            a.iter()
                .zip(b)
                .map(|(x, y)| (x - y) * (x - y))
                .sum::<f64>()
                .sqrt()
        } else {
            a.iter()
                .zip(b)
                .map(|(x, y)| (x - y).abs().powf(self.p))
                .sum::<f64>()
                .powf(1.0 / self.p)
        };
        Ok(d)
    }
}

/// Checks that `p` has `lo.len()` finite coordinates inside `[lo, hi]`.
pub(crate) fn check_box(lo: &[f64], hi: &[f64], p: &[f64]) -> Result<(), DistanceError> {
    if p.len() != lo.len() {
        return Err(DistanceError::DimensionMismatch {
            expected: lo.len(),
            found: p.len(),
        });
    }
    for (i, ((v, a), b)) in p.iter().zip(lo).zip(hi).enumerate() {
        if !(v.is_finite() && a <= v && v <= b) {
            return Err(DistanceError::OutsideDomain {
                coordinate: i,
                value: v.to_string(),
            });
        }
    }
    Ok(())
}

/// Weighted categorical distance `Σ_i w_i [a_i ≠ b_i]` on vectors of category codes
/// (`a_i < cardinality_i`); diameter `Σ w_i`. Hamming distance is all weights 1.
///
/// ```
/// use privq_host::distance::metric::{Categorical, Metric};
/// let m = Categorical::hamming(4, 3)?; // 4 features, 3 categories each
/// assert_eq!(m.distance(&[0, 1, 2, 0], &[0, 1, 0, 1])?, 0.5);
/// assert!(m.check(&[0, 1, 3, 0]).is_err()); // category 3 is outside the domain
/// # Ok::<(), privq_host::distance::DistanceError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Categorical {
    weights: Vec<f64>,
    cardinalities: Vec<u32>,
    diameter: f64,
}

impl Categorical {
    /// Weighted categorical metric: one weight (> 0) and cardinality (≥ 1) per feature.
    pub fn new(weights: Vec<f64>, cardinalities: Vec<u32>) -> Result<Self, DistanceError> {
        if weights.is_empty() {
            return Err(DistanceError::InvalidParameter(
                "at least one feature is needed".into(),
            ));
        }
        if weights.len() != cardinalities.len() {
            return Err(DistanceError::DimensionMismatch {
                expected: weights.len(),
                found: cardinalities.len(),
            });
        }
        for &w in &weights {
            positive("a weight", w)?;
        }
        if cardinalities.contains(&0) {
            return Err(DistanceError::InvalidParameter(
                "a feature needs at least one category".into(),
            ));
        }
        let diameter = weights.iter().sum();
        Ok(Categorical {
            weights,
            cardinalities,
            diameter,
        })
    }

    /// Hamming distance on `features` features with `cardinality` categories each.
    pub fn hamming(features: usize, cardinality: u32) -> Result<Self, DistanceError> {
        Self::new(vec![1.0; features], vec![cardinality; features])
    }
}

impl Metric for Categorical {
    type Point = [u32];

    fn diameter(&self) -> f64 {
        self.diameter
    }

    fn check(&self, p: &[u32]) -> Result<(), DistanceError> {
        if p.len() != self.cardinalities.len() {
            return Err(DistanceError::DimensionMismatch {
                expected: self.cardinalities.len(),
                found: p.len(),
            });
        }
        match p.iter().zip(&self.cardinalities).position(|(v, c)| v >= c) {
            Some(i) => Err(DistanceError::OutsideDomain {
                coordinate: i,
                value: p.get(i).map(|v| v.to_string()).unwrap_or_default(),
            }),
            None => Ok(()),
        }
    }

    fn raw_distance(&self, a: &[u32], b: &[u32]) -> Result<f64, DistanceError> {
        self.check(a)?;
        self.check(b)?;
        Ok(a.iter()
            .zip(b)
            .zip(&self.weights)
            .filter(|((x, y), _)| x != y)
            .map(|(_, w)| w)
            .sum())
    }
}

/// Levenshtein (edit) distance on strings of at most `max_len` characters, optionally
/// restricted to an alphabet; diameter `max_len` (no two such strings are further
/// apart), so the scaled distance is the normalised edit distance.
///
/// ```
/// use privq_host::distance::metric::{Levenshtein, Metric};
/// let m = Levenshtein::new(8)?;
/// assert_eq!(m.raw_distance("kitten", "sitting")?, 3.0);
/// assert_eq!(m.distance("kitten", "sitting")?, 3.0 / 8.0);
/// assert!(m.check("much too long").is_err());
/// # Ok::<(), privq_host::distance::DistanceError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Levenshtein {
    max_len: usize,
    alphabet: Option<Vec<char>>,
}

impl Levenshtein {
    /// Strings of at most `max_len ≥ 1` characters over any alphabet.
    pub fn new(max_len: usize) -> Result<Self, DistanceError> {
        if max_len == 0 {
            return Err(DistanceError::InvalidParameter(
                "max_len must be at least 1".into(),
            ));
        }
        Ok(Levenshtein {
            max_len,
            alphabet: None,
        })
    }

    /// Restricts the domain to strings over `alphabet`.
    pub fn with_alphabet(mut self, alphabet: &str) -> Self {
        self.alphabet = Some(alphabet.chars().collect());
        self
    }

    /// The maximum string length (the diameter).
    pub fn max_len(&self) -> usize {
        self.max_len
    }
}

/// The edit distance between two character sequences (two-row dynamic programme).
pub fn levenshtein(a: &[char], b: &[char]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

impl Metric for Levenshtein {
    type Point = str;

    fn diameter(&self) -> f64 {
        self.max_len as f64
    }

    fn check(&self, p: &str) -> Result<(), DistanceError> {
        for (i, c) in p.chars().enumerate() {
            if i >= self.max_len {
                return Err(DistanceError::OutsideDomain {
                    coordinate: i,
                    value: format!("string longer than {} characters", self.max_len),
                });
            }
            if let Some(a) = &self.alphabet
                && !a.contains(&c)
            {
                return Err(DistanceError::OutsideDomain {
                    coordinate: i,
                    value: c.to_string(),
                });
            }
        }
        Ok(())
    }

    fn raw_distance(&self, a: &str, b: &str) -> Result<f64, DistanceError> {
        self.check(a)?;
        self.check(b)?;
        let a: Vec<char> = a.chars().collect();
        let b: Vec<char> = b.chars().collect();
        Ok(levenshtein(&a, &b) as f64)
    }
}

/// A metric whose distances are a user-supplied function; the declared diameter is
/// checked on every evaluation (used to test the [`DistanceError::ExceedsDiameter`]
/// path and for ad-hoc metrics).
pub struct FnMetric<P: ?Sized, F: Fn(&P, &P) -> f64> {
    f: F,
    diameter: f64,
    _p: std::marker::PhantomData<fn(&P)>,
}

impl<P: ?Sized, F: Fn(&P, &P) -> f64> FnMetric<P, F> {
    /// A metric `f` with the declared diameter bound.
    pub fn new(f: F, diameter: f64) -> Result<Self, DistanceError> {
        Ok(FnMetric {
            f,
            diameter: positive("diameter", diameter)?,
            _p: std::marker::PhantomData,
        })
    }
}

impl<P: ?Sized, F: Fn(&P, &P) -> f64> Metric for FnMetric<P, F> {
    type Point = P;

    fn diameter(&self) -> f64 {
        self.diameter
    }

    fn check(&self, _p: &P) -> Result<(), DistanceError> {
        Ok(())
    }

    fn raw_distance(&self, a: &P, b: &P) -> Result<f64, DistanceError> {
        Ok((self.f)(a, b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lp_metrics_scale_and_check() {
        let l2 = Lp::l2(vec![0.0, 0.0], vec![3.0, 4.0]).unwrap();
        assert_eq!(l2.diameter(), 5.0);
        assert!((l2.distance(&[0.0, 0.0], &[3.0, 4.0]).unwrap() - 1.0).abs() < 1e-12);
        let l3 = Lp::new(3.0, vec![0.0; 2], vec![1.0; 2]).unwrap();
        let d = l3.raw_distance(&[0.0, 0.0], &[1.0, 1.0]).unwrap();
        assert!((d - 2f64.powf(1.0 / 3.0)).abs() < 1e-12);
        assert!(matches!(
            l2.check(&[0.0]),
            Err(DistanceError::DimensionMismatch { .. })
        ));
        assert!(matches!(
            l2.check(&[f64::NAN, 0.0]),
            Err(DistanceError::OutsideDomain { .. })
        ));
        assert!(Lp::new(0.5, vec![0.0], vec![1.0]).is_err());
        assert!(Lp::l1(vec![1.0], vec![1.0]).is_err());
        assert!(l2.clone().with_diameter(1.0).is_err());
        let wide = l2.with_diameter(10.0).unwrap();
        assert_eq!(wide.distance(&[0.0, 0.0], &[3.0, 4.0]).unwrap(), 0.5);
    }

    #[test]
    fn categorical_and_edit_distance() {
        let m = Categorical::new(vec![2.0, 1.0, 1.0], vec![2, 2, 5]).unwrap();
        assert_eq!(m.distance(&[0, 0, 4], &[1, 0, 4]).unwrap(), 0.5);
        assert!(Categorical::new(vec![1.0, -1.0], vec![2, 2]).is_err());
        assert_eq!(levenshtein(&['a', 'b'], &[]), 2);
        let lev = Levenshtein::new(4).unwrap().with_alphabet("ab");
        assert_eq!(lev.distance("abab", "baba").unwrap(), 0.5);
        assert_eq!(lev.distance("", "bbbb").unwrap(), 1.0);
        assert!(lev.check("abc").is_err());
    }

    #[test]
    fn exceeding_the_declared_diameter_is_an_error() {
        let m = FnMetric::new(|a: &f64, b: &f64| (a - b).abs(), 1.0).unwrap();
        assert_eq!(m.distance(&0.0, &0.5).unwrap(), 0.5);
        assert!(matches!(
            m.distance(&0.0, &2.0),
            Err(DistanceError::ExceedsDiameter { .. })
        ));
        let empty: [Box<f64>; 0] = [];
        assert!(matches!(
            m.average_distance(&empty, &0.0),
            Err(DistanceError::EmptyData)
        ));
    }
}

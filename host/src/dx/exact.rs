//! Exact query answers for the selection scores of d_X SmallDB and d_X MWEM.
//!
//! A score decides which candidate the exponential mechanism releases, so it is
//! computed without floating-point rounding (privq's rule: floats never decide
//! released noise or selections; Mironov 2012 for what rounding can leak): every
//! coefficient of `Q′` is a dyadic rational `M·2^e` exactly, so on the common grid
//! `2^−f` (f the largest `−e`) the rows are integers and `q′(x) = Σ_j q′_j·x_j` is
//! an exact `i128` sum over the data (checked, an error on overflow instead of a
//! wrong value). The scores are then brought to the exponential mechanism's own
//! grid γ = 2^g by an exact ceiling or floor (what its quantisation would do to the
//! exact real score), so the mechanism's rounding margin is the only rounding.

use super::{DxError, Queries};

/// `Q′` as integers on the grid `2^−frac_bits`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ExactQueries {
    frac_bits: u32,
    rows: Vec<Vec<i128>>,
}

/// `v = m·2^e` with `m` odd (or `v = 0`), exactly, for a finite `v`.
fn dyadic(v: f64) -> (i64, i32) {
    if v == 0.0 {
        return (0, 0);
    }
    let bits = v.to_bits();
    let sign = if bits >> 63 == 1 { -1i64 } else { 1 };
    let exp_bits = ((bits >> 52) & 0x7ff) as i32;
    let frac = (bits & ((1u64 << 52) - 1)) as i64;
    let (mut m, mut e) = if exp_bits == 0 {
        (frac, -1074)
    } else {
        (frac | (1i64 << 52), exp_bits - 1075)
    };
    let tz = m.trailing_zeros() as i32;
    m >>= tz;
    e += tz;
    (sign * m, e)
}

/// The bit length of `|m|` (0 for 0).
fn bit_len(m: i64) -> u32 {
    64 - m.unsigned_abs().leading_zeros()
}

/// `n = Σ counts`, checked. In the d_X relation over histograms a neighbour moves
/// one record from one element to another, so `n` is the same on both sides and
/// is public (`docs/src/dx.md`, the bounded model): refusals may depend on it.
pub(crate) fn total(counts: &[u64]) -> Result<u64, DxError> {
    counts
        .iter()
        .try_fold(0u64, |a, &b| a.checked_add(b))
        .ok_or_else(|| DxError::InvalidValue("the histogram's total exceeds 2⁶⁴".into()))
}

/// The refusal of a run whose public bound on the exact scores does not fit: the
/// same message whatever the data.
pub(crate) fn bound_refusal(what: &str) -> DxError {
    DxError::InvalidValue(format!(
        "{what}: the public bound on the exact selection scores (from n, the queries and the \
         selection grid) exceeds the exact range (2¹²⁶ in grid units, 10³⁸ on the \
         selection grid); refused before reading the data or charging"
    ))
}

fn overflow(what: &str) -> DxError {
    DxError::InvalidValue(format!(
        "{what} cannot be computed exactly in 128 bits (coefficients too fine or too large)"
    ))
}

impl ExactQueries {
    /// The rows of `q` exactly; an error when a coefficient does not fit the common
    /// grid in 126 bits.
    pub(crate) fn new(q: &Queries) -> Result<Self, DxError> {
        let coefs: Vec<Vec<(i64, i32)>> = (0..q.rows())
            .map(|k| q.row(k).iter().map(|&v| dyadic(v)).collect())
            .collect();
        let frac_bits = coefs
            .iter()
            .flatten()
            .filter(|(m, _)| *m != 0)
            .map(|&(_, e)| -e)
            .max()
            .unwrap_or(0)
            .max(0) as u32;
        let rows = coefs
            .into_iter()
            .map(|row| {
                row.into_iter()
                    .map(|(m, e)| {
                        let shift = (e + frac_bits as i32) as u32;
                        if m == 0 {
                            return Ok(0);
                        }
                        // |m|·2^shift < 2¹²⁶, with m's actual bit length (an odd
                        // mantissa may be much shorter than 53 bits).
                        if shift + bit_len(m) > 126 {
                            return Err(overflow("the queries' coefficients"));
                        }
                        Ok(i128::from(m) << shift)
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ExactQueries { frac_bits, rows })
    }

    /// `max_{k,j} |a_kj|` in grid units: a public bound, with `n = Σx`, on every
    /// answer (`|q′_k(x)| ≤ n·max_abs`).
    pub(crate) fn max_abs(&self) -> u128 {
        self.rows
            .iter()
            .flatten()
            .map(|a| a.unsigned_abs())
            .max()
            .unwrap_or(0)
    }

    /// The grid exponent: answers are in units of `2^−frac_bits`.
    pub(crate) fn frac_bits(&self) -> u32 {
        self.frac_bits
    }

    /// `q′_k(counts)` in units of `2^−frac_bits`, exactly. Callers check
    /// `n·max_abs < 2¹²⁶` (public) first, so that the checked sum cannot fail on
    /// the data: every partial sum is bounded by it.
    pub(crate) fn answer(&self, k: usize, counts: &[u64]) -> Result<i128, DxError> {
        let row = self
            .rows
            .get(k)
            .ok_or_else(|| DxError::Dimension(format!("no query {k}")))?;
        if row.len() != counts.len() {
            return Err(DxError::Dimension(format!(
                "histogram of {} cells for {} elements",
                counts.len(),
                row.len()
            )));
        }
        row.iter().zip(counts).try_fold(0i128, |acc, (&a, &x)| {
            a.checked_mul(i128::from(x))
                .and_then(|p| acc.checked_add(p))
                .ok_or_else(|| overflow("a query's answer"))
        })
    }
}

/// `⌈w / (den · 2^shift)⌉` for `w ≥ 0`, `den ≥ 1` (shift of either sign), exactly.
pub(crate) fn ceil_div_pow2(w: u128, den: u128, shift: i32) -> Result<u128, DxError> {
    if shift >= 0 {
        // Nested ceilings of positive integer divisions compose.
        let a = w.div_ceil(den);
        Ok(if shift >= 128 {
            u128::from(a > 0)
        } else {
            a.div_ceil(1u128 << shift)
        })
    } else {
        let up = w
            .checked_mul(1u128.checked_shl(shift.unsigned_abs()).unwrap_or(0))
            .filter(|_| shift > -128)
            .ok_or_else(|| overflow("a score on the selection grid"))?;
        Ok(up.div_ceil(den))
    }
}

/// `⌊w / (den · 2^shift)⌋` for `w ≥ 0`, `den ≥ 1`, exactly.
pub(crate) fn floor_div_pow2(w: u128, den: u128, shift: i32) -> Result<u128, DxError> {
    if shift >= 0 {
        let a = w / den;
        Ok(if shift >= 128 { 0 } else { a >> shift })
    } else {
        let up = w
            .checked_mul(1u128.checked_shl(shift.unsigned_abs()).unwrap_or(0))
            .filter(|_| shift > -128)
            .ok_or_else(|| overflow("a score on the selection grid"))?;
        Ok(up / den)
    }
}

/// A public f64 (a model's answer) rounded to the nearest multiple of
/// `2^−bits` (ties away from zero), in those units. The grid is fixed before the
/// run, so a caller can bound the result up front; an error only when
/// `|v|·2^bits ≥ 2¹²⁵` or `v` is not finite.
pub(crate) fn public_rounded(v: f64, bits: u32) -> Result<i128, DxError> {
    if !v.is_finite() {
        return Err(DxError::InvalidValue("a model answer is not finite".into()));
    }
    let (m, e) = dyadic(v);
    if m == 0 {
        return Ok(0);
    }
    let shift = e + bits as i32;
    let mag = i128::from(m.unsigned_abs());
    let r = if shift >= 0 {
        if shift + bit_len(m) as i32 > 125 {
            return Err(overflow("a model answer"));
        }
        mag << shift
    } else if -shift >= 64 {
        0 // |m| < 2⁵³ ≤ 2^(−shift−1): rounds to 0.
    } else {
        let s = (-shift) as u32;
        (mag + (1i128 << (s - 1))) >> s
    };
    Ok(if m < 0 { -r } else { r })
}

/// Rescales `value` from `2^−from` units to `2^−to` units (`to ≥ from`), exactly.
pub(crate) fn rescale(value: i128, from: u32, to: u32) -> Result<i128, DxError> {
    let up = to
        .checked_sub(from)
        .filter(|&s| s < 127)
        .ok_or_else(|| overflow("a rescaled answer"))?;
    value
        .checked_mul(1i128 << up)
        .ok_or_else(|| overflow("a rescaled answer"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dyadic_decomposition_is_exact() {
        for v in [
            1.0,
            -3.0,
            0.1,
            1.0 / 3.0,
            1e16,
            2f64.powi(-60),
            -7.25,
            5e-324,
        ] {
            let (m, e) = dyadic(v);
            assert_eq!(m as f64 * 2f64.powi(e), v, "{v}");
            assert!(m % 2 != 0);
        }
        assert_eq!(dyadic(0.0), (0, 0));
        assert_eq!(dyadic(0.75), (3, -2));
    }

    #[test]
    fn answers_are_exact_where_an_f64_sum_is_not() {
        // 1e16 + 1 − 1e16: the f64 sum (in row order) loses the 1.
        let q = Queries::new(vec![vec![1e16, 1.0, -1e16], vec![0.1, 0.2, 0.3]]).unwrap();
        assert_eq!(q.answers(&[1.0, 1.0, 1.0])[0], 0.0);
        let e = ExactQueries::new(&q).unwrap();
        let one = 1i128 << e.frac_bits();
        assert_eq!(e.answer(0, &[1, 1, 1]).unwrap(), one);
        // 0.1·10 + 0.2·10 + 0.3·10 exactly is the sum of the three doubles times 10.
        let exact = e.answer(1, &[10, 10, 10]).unwrap();
        let parts: i128 = [0.1f64, 0.2, 0.3]
            .iter()
            .map(|&v| {
                let (m, ex) = dyadic(v);
                i128::from(m) << (ex + e.frac_bits() as i32)
            })
            .sum();
        assert_eq!(exact, 10 * parts);
        assert!(e.answer(0, &[1, 1]).is_err());
    }

    #[test]
    fn answers_rescale_to_a_finer_grid_exactly() {
        assert_eq!(rescale(3, 2, 5).unwrap(), 24);
        assert!(rescale(3, 5, 2).is_err());
    }

    #[test]
    fn short_mantissas_use_their_own_bit_length() {
        // 3·2⁻²⁰⁰ next to 1: the grid is 2⁻²⁰⁰, and 1 = 2²⁰⁰ units does not fit.
        let q = Queries::new(vec![vec![1.0, 3.0 * 2f64.powi(-200)]]).unwrap();
        assert!(ExactQueries::new(&q).is_err());
        // 2⁻¹⁰⁰ next to 1: 1 is 2¹⁰⁰ units (101 bits); the old 53-bit rule refused it.
        let q = Queries::new(vec![vec![1.0, 2f64.powi(-100)]]).unwrap();
        let e = ExactQueries::new(&q).unwrap();
        assert_eq!(e.frac_bits(), 100);
        assert_eq!(e.answer(0, &[2, 1]).unwrap(), (2i128 << 100) + 1);
        assert_eq!(e.max_abs(), 1u128 << 100);
        // A one-bit model answer 2⁸⁰ on a grid of 2⁻⁴⁰: 2¹²⁰ units.
        assert_eq!(public_rounded(2f64.powi(80), 40).unwrap(), 1i128 << 120);
    }

    #[test]
    fn public_values_round_to_a_fixed_grid() {
        assert_eq!(public_rounded(0.75, 1).unwrap(), 2); // 1.5 → 2 (away from 0)
        assert_eq!(public_rounded(-0.75, 1).unwrap(), -2);
        assert_eq!(public_rounded(0.7, 2).unwrap(), 3); // 2.8 → 3
        assert_eq!(public_rounded(5e-324, 10).unwrap(), 0);
        assert_eq!(public_rounded(3.0, 4).unwrap(), 48);
        assert!(public_rounded(2f64.powi(100), 30).is_err());
        assert!(public_rounded(f64::INFINITY, 0).is_err());
    }

    #[test]
    fn grid_divisions_round_the_right_way() {
        assert_eq!(ceil_div_pow2(7, 2, 1).unwrap(), 2); // 7/4 → 2
        assert_eq!(floor_div_pow2(7, 2, 1).unwrap(), 1); // 7/4 → 1
        assert_eq!(ceil_div_pow2(7, 2, -3).unwrap(), 28); // 56/2
        assert_eq!(floor_div_pow2(7, 3, -1).unwrap(), 4); // 14/3
        assert_eq!(ceil_div_pow2(8, 2, 1).unwrap(), 2);
        assert!(ceil_div_pow2(u128::MAX, 1, -1).is_err());
    }
}

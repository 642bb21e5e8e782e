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
                        // |m| < 2⁵³: the shifted value stays below 2¹²⁶.
                        if shift > 126 - 53 {
                            return Err(overflow("the queries' coefficients"));
                        }
                        Ok(i128::from(m) << shift)
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ExactQueries { frac_bits, rows })
    }

    /// The grid exponent: answers are in units of `2^−frac_bits`.
    pub(crate) fn frac_bits(&self) -> u32 {
        self.frac_bits
    }

    /// `q′_k(counts)` in units of `2^−frac_bits`, exactly.
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

/// A public f64 (a model's answer) exactly in units of `2^−frac_bits`, with the
/// `frac_bits` raised as far as the value needs: returns the value and the new
/// grid's bits, `bits ≥ min_bits`.
pub(crate) fn public_on_grid(v: f64, min_bits: u32) -> Result<(i128, u32), DxError> {
    if !v.is_finite() {
        return Err(DxError::InvalidValue("a model answer is not finite".into()));
    }
    let (m, e) = dyadic(v);
    let bits = min_bits.max((-e).max(0) as u32);
    let shift = e + bits as i32;
    if m == 0 {
        return Ok((0, bits));
    }
    if !(0..=126 - 53).contains(&shift) || bits > 126 {
        return Err(overflow("a model answer"));
    }
    Ok((i128::from(m) << shift, bits))
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
    fn public_values_move_to_a_finer_grid_exactly() {
        // 0.75 = 3·2⁻²: on a grid of 2⁻⁴ it is 12 units; 0.1 needs its own 55 bits.
        assert_eq!(public_on_grid(0.75, 4).unwrap(), (12, 4));
        let (v, bits) = public_on_grid(0.1, 4).unwrap();
        assert_eq!(v as f64 * 2f64.powi(-(bits as i32)), 0.1);
        assert_eq!(rescale(3, 2, 5).unwrap(), 24);
        assert!(rescale(3, 5, 2).is_err());
        assert!(public_on_grid(f64::NAN, 0).is_err());
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

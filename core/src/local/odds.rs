//! Exact output probabilities as rational functions of `e^ε`, for privacy audits.

use crate::error::{Error, Result};

/// Degree bound (exclusive) of the numerator and denominator polynomials.
const TERMS: usize = 3;
/// Terms of `E^k·N₂·D₁ − N₁·D₂` (degree ≤ 2 + 2·(TERMS − 1)).
const DIFF_TERMS: usize = 2 * TERMS + 1;

/// An exact probability `N(E) / D(E)`, where `N` and `D` are polynomials of degree
/// ≤ 2 in `E = e^ε` (or `E = e^{ε/2}` when [`half`](Odds::half) is set, as for SUE)
/// with non-negative integer coefficients.
///
/// Every randomizer exposes its output probabilities in this form, derived from
/// its sampling loop (see each type's docs). [`Odds::within_e_eps`] then checks the
/// local-privacy ratio `P[o | x] ≤ e^ε·P[o | x′]` in exact integer arithmetic, for
/// **every** ε > 0 at once: it proves that the polynomial `e^ε·N₂·D₁ − N₁·D₂` is
/// non-negative for all `E ≥ 1` by substituting `E = 1 + t` and checking that every
/// coefficient is non-negative (a sufficient condition).
///
/// ```
/// use privq_core::local::Odds;
/// // Binary randomized response: keep with e^ε/(e^ε+1), flip with 1/(e^ε+1).
/// let keep = Odds::linear([0, 1], [1, 1], false);
/// let flip = Odds::linear([1, 0], [1, 1], false);
/// assert!(keep.within_e_eps(&flip)?);   // ratio exactly e^ε: allowed
/// assert!(flip.within_e_eps(&keep)?);
/// let bad = Odds::linear([0, 2], [1, 1], false); // 2e^ε/(1+e^ε) vs 1/(1+e^ε)
/// assert!(!bad.within_e_eps(&flip)?);
/// # Ok::<(), privq_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Odds {
    /// Numerator coefficients, constant term first.
    pub num: [u128; TERMS],
    /// Denominator coefficients, constant term first (not all zero).
    pub den: [u128; TERMS],
    /// `E = e^{ε/2}` instead of `e^ε`.
    pub half: bool,
}

impl Odds {
    /// `(num[0] + num[1]·E) / (den[0] + den[1]·E)`.
    pub const fn linear(num: [u128; 2], den: [u128; 2], half: bool) -> Odds {
        Odds {
            num: [num[0], num[1], 0],
            den: [den[0], den[1], 0],
            half,
        }
    }

    /// The certain event (probability 1).
    pub const ONE: Odds = Odds::linear([1, 0], [1, 0], false);

    /// The probability at a given ε (floating point: for statistics only).
    pub fn at(&self, epsilon: f64) -> f64 {
        let e = libm::exp(if self.half { epsilon / 2.0 } else { epsilon });
        let eval = |p: &[u128; TERMS]| p.iter().rev().fold(0.0, |acc, &c| acc * e + c as f64);
        eval(&self.num) / eval(&self.den)
    }

    /// The probability of two independent events both happening (same `E`).
    ///
    /// Errors with [`Error::Overflow`] when the product's degree exceeds 2 or a
    /// coefficient overflows, and [`Error::BinningMismatch`] for different `E`.
    pub fn and(&self, other: &Odds) -> Result<Odds> {
        let half = match (self.is_constant(), other.is_constant()) {
            (true, _) => other.half,
            (_, true) => self.half,
            _ if self.half == other.half => self.half,
            _ => return Err(Error::BinningMismatch),
        };
        Ok(Odds {
            num: poly_mul_u(&self.num, &other.num)?,
            den: poly_mul_u(&self.den, &other.den)?,
            half,
        })
    }

    fn is_constant(&self) -> bool {
        self.num[1..] == [0, 0] && self.den[1..] == [0, 0]
    }

    /// Exact check that `self ≤ e^ε · other` for every ε > 0 (sufficient
    /// condition; see the type docs). Errors with [`Error::Overflow`] when the
    /// coefficients are too large for 128-bit arithmetic, and with
    /// [`Error::BinningMismatch`] when the two use different `E`.
    pub fn within_e_eps(&self, other: &Odds) -> Result<bool> {
        let half = match (self.is_constant(), other.is_constant()) {
            (true, _) => other.half,
            (_, true) => self.half,
            _ if self.half == other.half => self.half,
            _ => return Err(Error::BinningMismatch),
        };
        // e^ε = E^k.
        let k = if half { 2 } else { 1 };
        let n2d1 = poly_mul_i(&to_i(&other.num)?, &to_i(&self.den)?)?;
        let n1d2 = poly_mul_i(&to_i(&self.num)?, &to_i(&other.den)?)?;
        let mut diff = [0i128; DIFF_TERMS];
        for (i, c) in n2d1.iter().enumerate() {
            let slot = diff.get_mut(i + k).ok_or(Error::Overflow)?;
            *slot = slot.checked_add(*c).ok_or(Error::Overflow)?;
        }
        for (slot, c) in diff.iter_mut().zip(n1d2.iter()) {
            *slot = slot.checked_sub(*c).ok_or(Error::Overflow)?;
        }
        // Substitute E = 1 + t: the coefficient of t^j is Σ_i diff[i]·C(i, j).
        for j in 0..DIFF_TERMS {
            let mut coeff: i128 = 0;
            for (i, d) in diff.iter().enumerate().skip(j) {
                let term = d.checked_mul(binomial(i, j)).ok_or(Error::Overflow)?;
                coeff = coeff.checked_add(term).ok_or(Error::Overflow)?;
            }
            if coeff < 0 {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

fn binomial(n: usize, k: usize) -> i128 {
    let mut c: i128 = 1;
    for i in 0..k {
        c = c * (n - i) as i128 / (i + 1) as i128;
    }
    c
}

fn to_i(x: &[u128; TERMS]) -> Result<[i128; TERMS]> {
    let mut out = [0i128; TERMS];
    for (o, v) in out.iter_mut().zip(x) {
        *o = i128::try_from(*v).map_err(|_| Error::Overflow)?;
    }
    Ok(out)
}

fn poly_mul_u(x: &[u128; TERMS], y: &[u128; TERMS]) -> Result<[u128; TERMS]> {
    let mut out = [0u128; TERMS];
    for (i, a) in x.iter().enumerate() {
        for (j, b) in y.iter().enumerate() {
            let p = a.checked_mul(*b).ok_or(Error::Overflow)?;
            if p == 0 {
                continue;
            }
            let slot = out.get_mut(i + j).ok_or(Error::Overflow)?;
            *slot = slot.checked_add(p).ok_or(Error::Overflow)?;
        }
    }
    Ok(out)
}

fn poly_mul_i(x: &[i128; TERMS], y: &[i128; TERMS]) -> Result<[i128; 2 * TERMS - 1]> {
    let mut out = [0i128; 2 * TERMS - 1];
    for (i, a) in x.iter().enumerate() {
        for (j, b) in y.iter().enumerate() {
            let p = a.checked_mul(*b).ok_or(Error::Overflow)?;
            let slot = out.get_mut(i + j).ok_or(Error::Overflow)?;
            *slot = slot.checked_add(p).ok_or(Error::Overflow)?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_probabilities_pass_and_tight_ratio_passes() {
        let q = Odds::linear([1, 0], [3, 1], false);
        assert!(q.within_e_eps(&q).unwrap());
        let p = Odds::linear([0, 1], [3, 1], false);
        assert!(p.within_e_eps(&q).unwrap());
        // 2·e^ε/(3+E) vs 1/(3+E): ratio 2e^ε > e^ε.
        let p2 = Odds::linear([0, 2], [3, 1], false);
        assert!(!p2.within_e_eps(&q).unwrap());
    }

    #[test]
    fn products_and_half_exponent() {
        // SUE: E = e^{ε/2}; (E/(E+1))² vs (1/(E+1))² has ratio E² = e^ε: allowed.
        let keep = Odds::linear([0, 1], [1, 1], true);
        let flip = Odds::linear([1, 0], [1, 1], true);
        let kk = keep.and(&keep).unwrap();
        let ff = flip.and(&flip).unwrap();
        assert!(kk.within_e_eps(&ff).unwrap());
        // The same with E = e^ε would be e^{2ε}: refused.
        let keep1 = Odds::linear([0, 1], [1, 1], false);
        let flip1 = Odds::linear([1, 0], [1, 1], false);
        let kk1 = keep1.and(&keep1).unwrap();
        assert!(!kk1.within_e_eps(&flip1.and(&flip1).unwrap()).unwrap());
        assert_eq!(keep.within_e_eps(&flip1), Err(Error::BinningMismatch));
        assert!((kk.at(2.0) - (1f64.exp() / (1f64.exp() + 1.0)).powi(2)).abs() < 1e-12);
        assert!(Odds::ONE.and(&keep).unwrap().half);
    }
}

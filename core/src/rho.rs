//! ρ of zero-concentrated differential privacy as an exact rational.

use core::fmt;
use core::str::FromStr;

use crate::epsilon::Epsilon;
use crate::error::{Error, Result};
use crate::sample::wide::{div_rem, gcd128, mul};

/// A ρ-zCDP parameter ρ > 0 (Bun–Steinke 2016, Def. 1.1), held as an exact, reduced
/// fraction `num/den`.
///
/// ρ's of adaptively composed mechanisms add (Bun–Steinke 2016, Lemma 2.3), exactly
/// here. Adding discrete Gaussian noise of variance parameter σ² to an integer query of
/// ℓ2 sensitivity Δ gives ρ = Δ²/(2σ²) (Canonne–Kamath–Steinke 2020, Thm. 14 and
/// its multivariate form Thm. 15).
///
/// ```
/// use privq_core::{Epsilon, Rho};
/// let rho = Rho::new(1, 8)?;
/// assert_eq!(rho.checked_add(Rho::new(3, 8)?)?, Rho::new(1, 2)?);
/// assert_eq!("0.125".parse::<Rho>()?, rho);
/// // Pure ε-DP implies ε²/2-zCDP (Bun–Steinke 2016, Prop. 1.4).
/// assert_eq!(Rho::from_pure(Epsilon::new(1, 2)?)?, rho);
/// # Ok::<(), privq_core::Error>(())
/// ```
///
/// The exact positive-rational arithmetic (reduction, ordering, sums, differences,
/// parsing, display) is [`Epsilon`]'s: ρ is the same kind of number with its own
/// meaning and its own error names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Rho(Epsilon);

/// An [`Epsilon`] result as a [`Rho`] one: the ε-specific errors become ρ's.
const fn as_rho(r: Result<Epsilon>) -> Result<Rho> {
    match r {
        Ok(e) => Ok(Rho(e)),
        Err(Error::EpsilonZero) => Err(Error::RhoZero),
        Err(Error::EpsilonNegative | Error::EpsilonNotFinite | Error::EpsilonTooSmall) => {
            Err(Error::RhoInvalid)
        }
        Err(e) => Err(e),
    }
}

impl Rho {
    /// ρ = `num/den`; errors on a zero numerator ([`Error::RhoZero`]) or denominator.
    /// `const`, like [`Epsilon::new`].
    pub const fn new(num: u64, den: u64) -> Result<Self> {
        as_rho(Epsilon::new(num, den))
    }

    /// ρ = `num/den` for 128-bit parts, **rounded up** to the nearest fraction with
    /// 64-bit parts when it has none exactly (a larger ρ over-states the privacy loss,
    /// never under-states it). Errors when ρ is zero or at least 2⁶⁴.
    pub fn from_ratio_ceil(num: u128, den: u128) -> Result<Self> {
        if den == 0 {
            return Err(Error::ZeroDenominator);
        }
        if num == 0 {
            return Err(Error::RhoZero);
        }
        let g = gcd128(num, den);
        let (num, den) = (num / g, den / g);
        if let (Ok(n), Ok(d)) = (u64::try_from(num), u64::try_from(den)) {
            return Rho::new(n, d);
        }
        if num / den > u128::from(u64::MAX) {
            return Err(Error::RhoInvalid);
        }
        // The largest k ≤ 63 with ⌈num·2^k/den⌉ < 2⁶⁴: ρ rounded up to a multiple of 2^−k.
        for k in (0..=63u32).rev() {
            let (q, r) = div_rem(mul(num, 1u128 << k), den).ok_or(Error::ZeroDenominator)?;
            let up = if r == 0 { q } else { q.add_u128(1) };
            if up.hi == 0 {
                if let Ok(n) = u64::try_from(up.lo) {
                    return Rho::new(n, 1u64 << k);
                }
            }
        }
        Err(Error::RhoInvalid)
    }

    /// The ρ implied by pure ε-DP: ε²/2 (Bun–Steinke 2016, Prop. 1.4), exact when it
    /// fits 64-bit parts, else rounded up ([`Rho::from_ratio_ceil`]).
    pub fn from_pure(epsilon: Epsilon) -> Result<Self> {
        let (a, b) = (u128::from(epsilon.num()), u128::from(epsilon.den()));
        // 2b² < 2¹²⁹ may leave u128: halve the numerator instead when it is even.
        ratio_of_squares(a, b, 2)
    }

    /// The ρ of an ε-DP mechanism with ε-bounded range, such as the exponential
    /// mechanism: ε²/8 (Cesar–Rogers 2021, Lemma 3.2; Durfee–Rogers 2019, Def. 3.1
    /// for bounded range), exact when it fits, else rounded up.
    pub fn from_bounded_range(epsilon: Epsilon) -> Result<Self> {
        let (a, b) = (u128::from(epsilon.num()), u128::from(epsilon.den()));
        ratio_of_squares(a, b, 8)
    }

    /// Converts an `f64`, exactly when its binary fraction fits in `u64/2⁶³`, otherwise
    /// rounding **down** (for budgets: a smaller ρ budget admits less). Rejects NaN, ±∞,
    /// negative values, values below 2⁻⁶³ and of 2⁶⁴ or more ([`Error::RhoInvalid`]),
    /// and zero ([`Error::RhoZero`]).
    pub fn from_f64(x: f64) -> Result<Self> {
        match Epsilon::from_f64(x) {
            Ok(e) => Ok(Rho(e)),
            Err(Error::EpsilonZero) => Err(Error::RhoZero),
            Err(_) => Err(Error::RhoInvalid),
        }
    }

    /// Numerator of the reduced fraction.
    pub const fn num(&self) -> u64 {
        self.0.num()
    }

    /// Denominator of the reduced fraction.
    pub const fn den(&self) -> u64 {
        self.0.den()
    }

    /// The nearest `f64`, for reports and planning only.
    pub fn to_f64(&self) -> f64 {
        self.0.to_f64()
    }

    /// Exact sum ρ₁ + ρ₂; `Overflow` if it does not fit.
    pub fn checked_add(self, other: Rho) -> Result<Rho> {
        as_rho(self.0.checked_add(other.0))
    }

    /// Exact difference ρ₁ − ρ₂; `None` when it is not positive.
    pub fn checked_sub(self, other: Rho) -> Result<Option<Rho>> {
        Ok(self.0.checked_sub(other.0)?.map(Rho))
    }
}

/// `a²/(k·b²)` for `a, b < 2⁶⁴`, `k ∈ {2, 8}`, as a [`Rho`] rounded up when needed.
fn ratio_of_squares(a: u128, b: u128, k: u128) -> Result<Rho> {
    let num = a * a; // < 2¹²⁸
    let b2 = b * b;
    // k·b² may leave u128; cancel common factors of two with the numerator first.
    let shift = num.trailing_zeros().min(k.trailing_zeros());
    let (num, k) = (num >> shift, k >> shift);
    match b2.checked_mul(k) {
        Some(den) => Rho::from_ratio_ceil(num, den),
        // The exact ratio is below 2⁻⁶³ here unless a is huge: divide the numerator
        // instead, rounding up (never below the true value).
        None => Rho::from_ratio_ceil(num.div_ceil(k), b2),
    }
}

impl fmt::Display for Rho {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for Rho {
    type Err = Error;

    /// Parses `"1/2"`, `"0.5"` or `"5e-1"` exactly.
    fn from_str(s: &str) -> Result<Self> {
        as_rho(s.parse())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_reduces_and_orders() {
        assert_eq!(Rho::new(0, 3), Err(Error::RhoZero));
        assert_eq!(Rho::new(1, 0), Err(Error::ZeroDenominator));
        let r = Rho::new(6, 4).unwrap();
        assert_eq!((r.num(), r.den()), (3, 2));
        assert!(Rho::new(1, 3).unwrap() < Rho::new(1, 2).unwrap());
        assert_eq!("1/8".parse::<Rho>().unwrap(), Rho::new(1, 8).unwrap());
        assert_eq!("0".parse::<Rho>(), Err(Error::RhoZero));
        assert_eq!("-0.5".parse::<Rho>(), Err(Error::RhoInvalid));
        assert_eq!("x".parse::<Rho>(), Err(Error::Parse));
        assert_eq!(Rho::from_f64(0.25).unwrap(), Rho::new(1, 4).unwrap());
        assert_eq!(Rho::from_f64(f64::NAN), Err(Error::RhoInvalid));
        assert_eq!(Rho::from_f64(-1.0), Err(Error::RhoInvalid));
        assert_eq!(Rho::from_f64(0.0), Err(Error::RhoZero));
    }

    #[test]
    fn arithmetic_is_exact() {
        let a = Rho::new(1, 3).unwrap();
        let b = Rho::new(1, 6).unwrap();
        assert_eq!(a.checked_add(b).unwrap(), Rho::new(1, 2).unwrap());
        assert_eq!(a.checked_sub(b).unwrap(), Some(b));
        assert_eq!(b.checked_sub(a).unwrap(), None);
        let big = Rho::new(u64::MAX, 1).unwrap();
        assert_eq!(big.checked_add(big), Err(Error::Overflow));
    }

    #[test]
    fn conversions_from_epsilon_are_exact_or_round_up() {
        let e = |n, d| Epsilon::new(n, d).unwrap();
        assert_eq!(Rho::from_pure(e(1, 1)).unwrap(), Rho::new(1, 2).unwrap());
        assert_eq!(Rho::from_pure(e(2, 3)).unwrap(), Rho::new(2, 9).unwrap());
        assert_eq!(
            Rho::from_bounded_range(e(2, 1)).unwrap(),
            Rho::new(1, 2).unwrap()
        );
        // ε = 0.1 as an f64 has denominator 2⁵⁵: ε²/2 has no 64-bit form and rounds up,
        // by less than 2⁻⁶³.
        let tenth = Epsilon::from_f64(0.1).unwrap();
        let rho = Rho::from_pure(tenth).unwrap();
        let exact = (tenth.num() as f64 / tenth.den() as f64).powi(2) / 2.0;
        assert!(rho.to_f64() >= exact * (1.0 - 1e-15));
        assert!(rho.to_f64() - exact <= 2f64.powi(-60));
        // Exactness of the rounding: num/den ≥ a²/(2b²) ⇔ num·2b² ≥ a²·den.
        let (a, b) = (u128::from(tenth.num()), u128::from(tenth.den()));
        let lhs = mul(u128::from(rho.num()) * 2 * b, b);
        let rhs = mul(a * a, u128::from(rho.den()));
        assert!(rhs <= lhs);
        assert_eq!(
            Rho::from_pure(Epsilon::new(u64::MAX, 1).unwrap()),
            Err(Error::RhoInvalid)
        );
        // Tiny ε: ε²/2 is below 2⁻⁶³ and is rounded up to 2⁻⁶³ — never to zero.
        let tiny = Rho::from_pure(Epsilon::new(1, u64::MAX).unwrap()).unwrap();
        assert_eq!((tiny.num(), tiny.den()), (1, 1 << 63));
        assert_eq!(Rho::from_ratio_ceil(7, 3).unwrap(), Rho::new(7, 3).unwrap());
        assert_eq!(Rho::from_ratio_ceil(0, 3), Err(Error::RhoZero));
        assert_eq!(Rho::from_ratio_ceil(3, 0), Err(Error::ZeroDenominator));
    }
}

//! Privacy parameters as exact rationals.

use core::cmp::Ordering;
use core::fmt;
use core::num::NonZeroU64;
use core::str::FromStr;

use crate::error::{Error, Result};

/// A privacy parameter ε > 0 held as an exact, reduced fraction `num/den`.
///
/// Every sampler reads ε exactly; nothing is rounded to a float on the way.
///
/// ```
/// use privq_core::Epsilon;
/// let half = Epsilon::new(1, 2)?;
/// assert_eq!((half.num(), half.den()), (1, 2));
/// assert_eq!("0.5".parse::<Epsilon>()?, half);
/// // f64 values convert exactly when they can and otherwise round down (more noise).
/// assert_eq!(Epsilon::from_f64(0.25)?, Epsilon::new(1, 4)?);
/// assert!(Epsilon::from_f64(f64::NAN).is_err());
/// # Ok::<(), privq_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Epsilon {
    num: u64,
    den: u64,
}

/// Greatest common divisor (binary algorithm, no division).
pub(crate) const fn gcd(mut a: u64, mut b: u64) -> u64 {
    if a == 0 {
        return b;
    }
    if b == 0 {
        return a;
    }
    let shift = (a | b).trailing_zeros();
    a >>= a.trailing_zeros();
    loop {
        b >>= b.trailing_zeros();
        if a > b {
            (a, b) = (b, a);
        }
        b -= a;
        if b == 0 {
            return a << shift;
        }
    }
}

/// [`gcd`] as a divisor: `gcd(a, b)`, which is at least 1 unless `a = b = 0`, and 1 then.
///
/// Dividing by a [`NonZeroU64`] has no division-by-zero check, so no panic path (and
/// no `core::fmt` code behind it) reaches a device image; a plain `u64` divisor keeps
/// the check even where the caller knows it is nonzero, because the compiler cannot
/// see that through the `gcd` loop.
pub(crate) const fn gcd_nz(a: u64, b: u64) -> NonZeroU64 {
    match NonZeroU64::new(gcd(a, b)) {
        Some(g) => g,
        None => NonZeroU64::MIN,
    }
}

/// `a / d` in a `const fn` (where the `Div<NonZeroU64>` impl cannot be called): the
/// divisor is nonzero, so `checked_div` always divides, with no panic path.
const fn div_nz(a: u64, d: NonZeroU64) -> u64 {
    match a.checked_div(d.get()) {
        Some(q) => q,
        None => a,
    }
}

impl Epsilon {
    /// ε = `num/den`; errors on a zero numerator or denominator.
    ///
    /// `const`, so a device's privacy parameters can be checked at compile time:
    ///
    /// ```
    /// use privq_core::Epsilon;
    /// const EPSILON: Epsilon = match Epsilon::new(1, 2) {
    ///     Ok(e) => e,
    ///     Err(_) => panic!("invalid epsilon"), // a compile error, never a run-time panic
    /// };
    /// assert_eq!((EPSILON.num(), EPSILON.den()), (1, 2));
    /// ```
    pub const fn new(num: u64, den: u64) -> Result<Self> {
        if den == 0 {
            return Err(Error::ZeroDenominator);
        }
        if num == 0 {
            return Err(Error::EpsilonZero);
        }
        let g = gcd_nz(num, den);
        Ok(Epsilon {
            num: div_nz(num, g),
            den: div_nz(den, g),
        })
    }

    /// Converts an `f64`, exactly when the value's binary fraction fits in
    /// `u64/2⁶³`, otherwise rounding **down** (a smaller ε means more noise).
    ///
    /// Rejects NaN, ±∞ ([`Error::EpsilonNotFinite`]), zero, negative values,
    /// values below 2⁻⁶³ and values of 2⁶⁴ or more.
    pub fn from_f64(x: f64) -> Result<Self> {
        if !x.is_finite() {
            return Err(Error::EpsilonNotFinite);
        }
        if x == 0.0 {
            return Err(Error::EpsilonZero);
        }
        if x < 0.0 {
            return Err(Error::EpsilonNegative);
        }
        let bits = x.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i32;
        let frac = bits & ((1u64 << 52) - 1);
        // x = mant · 2^exp exactly.
        let (mant, exp) = if biased == 0 {
            (frac, -1074)
        } else {
            (frac | (1u64 << 52), biased - 1075)
        };
        if exp >= 0 {
            let num = mant
                .checked_shl(exp as u32)
                .filter(|v| v >> exp == mant)
                .ok_or(Error::EpsilonTooLarge)?;
            return Epsilon::new(num, 1);
        }
        let shift = (-exp) as u32;
        if shift <= 63 {
            Epsilon::new(mant, 1u64 << shift)
        } else {
            // Drop low bits: rounds down.
            let num = mant.checked_shr(shift - 63).unwrap_or(0);
            if num == 0 {
                return Err(Error::EpsilonTooSmall);
            }
            Epsilon::new(num, 1u64 << 63)
        }
    }

    /// Numerator of the reduced fraction.
    pub const fn num(&self) -> u64 {
        self.num
    }

    /// Denominator of the reduced fraction.
    pub const fn den(&self) -> u64 {
        self.den
    }

    /// The nearest `f64`, for display and diagnostics only — never for sampling.
    pub fn to_f64(&self) -> f64 {
        self.num as f64 / self.den as f64
    }

    /// Exact sum ε₁ + ε₂; `Overflow` if it does not fit.
    pub fn checked_add(self, other: Epsilon) -> Result<Epsilon> {
        let (num, den) = add_fractions(self.num, self.den, other.num, other.den)?;
        Epsilon::new(num, den)
    }

    /// Exact difference ε₁ − ε₂; `None` when it is not positive.
    pub fn checked_sub(self, other: Epsilon) -> Result<Option<Epsilon>> {
        if self <= other {
            return Ok(None);
        }
        // a/b − c/d = (a·(d/g) − c·(b/g)) / (b·(d/g)) with g = gcd(b, d).
        let g = gcd_nz(self.den, other.den);
        let (bg, dg) = (self.den / g, other.den / g);
        let lhs = self.num.checked_mul(dg).ok_or(Error::Overflow)?;
        let rhs = other.num.checked_mul(bg).ok_or(Error::Overflow)?;
        let den = self.den.checked_mul(dg).ok_or(Error::Overflow)?;
        Epsilon::new(lhs - rhs, den).map(Some)
    }

    /// Exact ε·`k` for a positive integer `k`.
    pub fn checked_mul_int(self, k: u64) -> Result<Epsilon> {
        let g = gcd_nz(k, self.den);
        let num = self.num.checked_mul(k / g).ok_or(Error::Overflow)?;
        Epsilon::new(num, self.den / g)
    }

    /// Exact ε/`k` for a positive integer `k` (splitting a budget `k` ways).
    pub fn checked_div_int(self, k: u64) -> Result<Epsilon> {
        if k == 0 {
            return Err(Error::ZeroDenominator);
        }
        let g = gcd_nz(self.num, k);
        let den = self.den.checked_mul(k / g).ok_or(Error::Overflow)?;
        Epsilon::new(self.num / g, den)
    }
}

/// `a/b + c/d` for reduced fractions with `b, d ≥ 1`, reduced, in 64-bit arithmetic
/// (no 128-bit division, which is large on 32-bit cores). `Overflow` when an
/// intermediate `lcm`-based term leaves `u64`, which is conservative.
pub(crate) fn add_fractions(a: u64, b: u64, c: u64, d: u64) -> Result<(u64, u64)> {
    if b == 0 || d == 0 {
        return Err(Error::ZeroDenominator);
    }
    let g = gcd_nz(b, d);
    let (bg, dg) = (b / g, d / g);
    let num = a
        .checked_mul(dg)
        .and_then(|x| c.checked_mul(bg).and_then(|y| x.checked_add(y)))
        .ok_or(Error::Overflow)?;
    let den = b.checked_mul(dg).ok_or(Error::Overflow)?;
    let r = gcd_nz(num, den);
    Ok((num / r, den / r))
}

impl PartialOrd for Epsilon {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Epsilon {
    fn cmp(&self, other: &Self) -> Ordering {
        let a = (self.num as u128) * (other.den as u128);
        let b = (other.num as u128) * (self.den as u128);
        a.cmp(&b)
    }
}

impl fmt::Display for Epsilon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.den == 1 {
            write!(f, "{}", self.num)
        } else {
            write!(f, "{}/{}", self.num, self.den)
        }
    }
}

/// Parses a non-negative decimal such as `"0.1"` or `"2.5e-3"` into an exact
/// fraction `(num, den)` (not reduced). Used by [`Epsilon`] and the fixed-point type.
pub(crate) fn parse_decimal(s: &str) -> Result<(u64, u64)> {
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(i) => {
            let (m, e) = s.split_at(i);
            let e = e.get(1..).ok_or(Error::Parse)?;
            (m, e.parse::<i32>().map_err(|_| Error::Parse)?)
        }
        None => (s, 0),
    };
    let (int_part, frac_part) = match mantissa.split_once('.') {
        Some((a, b)) => (a, b),
        None => (mantissa, ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return Err(Error::Parse);
    }
    let digits = int_part.bytes().chain(frac_part.bytes());
    let mut num: u64 = 0;
    for d in digits {
        if !d.is_ascii_digit() {
            return Err(Error::Parse);
        }
        num = num
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(d - b'0')))
            .ok_or(Error::Overflow)?;
    }
    if num == 0 {
        // Zero at any exponent (an exponent near i32::MIN or MAX must neither
        // overflow the scale nor loop 2^31 times).
        return Ok((0, 1));
    }
    let frac_len = i64::try_from(frac_part.len()).map_err(|_| Error::Overflow)?;
    let scale = i64::from(exp)
        .checked_sub(frac_len)
        .ok_or(Error::Overflow)?;
    // 10^20 exceeds u64: a larger shift overflows num (≥ 1) or den.
    if scale.unsigned_abs() >= 20 {
        return Err(Error::Overflow);
    }
    let mut den: u64 = 1;
    for _ in scale..0 {
        den = den.checked_mul(10).ok_or(Error::Overflow)?;
    }
    for _ in 0..scale {
        num = num.checked_mul(10).ok_or(Error::Overflow)?;
    }
    Ok((num, den))
}

impl FromStr for Epsilon {
    type Err = Error;

    /// Parses `"1/2"`, `"0.5"` or `"5e-1"` exactly.
    fn from_str(s: &str) -> Result<Self> {
        let s = s.trim();
        let bare = s.trim_start_matches(['+', '-']);
        if ["nan", "inf", "infinity"]
            .iter()
            .any(|w| bare.eq_ignore_ascii_case(w))
        {
            return Err(Error::EpsilonNotFinite);
        }
        if let Some(rest) = s.strip_prefix('-') {
            return match rest.parse::<Epsilon>() {
                Err(Error::EpsilonZero) => Err(Error::EpsilonZero),
                Err(Error::Parse) => Err(Error::Parse),
                _ => Err(Error::EpsilonNegative),
            };
        }
        let s = s.strip_prefix('+').unwrap_or(s);
        if let Some((a, b)) = s.split_once('/') {
            let num = a.trim().parse::<u64>().map_err(|_| Error::Parse)?;
            let den = b.trim().parse::<u64>().map_err(|_| Error::Parse)?;
            return Epsilon::new(num, den);
        }
        let (num, den) = parse_decimal(s)?;
        Epsilon::new(num, den)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extreme_exponents_are_errors_not_overflows() {
        assert_eq!(parse_decimal("0.5e-2147483648"), Err(Error::Overflow));
        assert_eq!(parse_decimal("1e2147483647"), Err(Error::Overflow));
        assert_eq!(parse_decimal("0.0e-2147483648"), Ok((0, 1)));
        assert_eq!(parse_decimal("0e2147483647"), Ok((0, 1)));
        assert_eq!(parse_decimal("25e-1"), Ok((25, 10)));
        assert_eq!(parse_decimal("1.5e3"), Ok((1500, 1)));
        assert_eq!(parse_decimal("1e19"), Ok((10_000_000_000_000_000_000, 1)));
        assert_eq!(parse_decimal("1e-19"), Ok((1, 10_000_000_000_000_000_000)));
        assert_eq!(parse_decimal("1e20"), Err(Error::Overflow));
        assert_eq!(
            "0.0e-2147483648".parse::<Epsilon>(),
            Err(Error::EpsilonZero)
        );
    }

    #[test]
    fn reduces_and_orders() {
        let e = Epsilon::new(6, 4).unwrap();
        assert_eq!((e.num(), e.den()), (3, 2));
        assert!(Epsilon::new(1, 3).unwrap() < Epsilon::new(1, 2).unwrap());
        assert_eq!(Epsilon::new(0, 3), Err(Error::EpsilonZero));
        assert_eq!(Epsilon::new(1, 0), Err(Error::ZeroDenominator));
    }

    #[test]
    fn from_f64_exact_or_rounds_down() {
        assert_eq!(Epsilon::from_f64(0.5).unwrap(), Epsilon::new(1, 2).unwrap());
        assert_eq!(Epsilon::from_f64(3.0).unwrap(), Epsilon::new(3, 1).unwrap());
        let tenth = Epsilon::from_f64(0.1).unwrap();
        // The f64 closest to 0.1 is exactly 3602879701896397 / 2^55.
        assert_eq!((tenth.num(), tenth.den()), (3602879701896397, 1 << 55));
        // Tiny values need more than 63 fractional bits: the result is below x.
        let tiny = 1.2345e-15;
        let e = Epsilon::from_f64(tiny).unwrap();
        assert!(e.to_f64() <= tiny);
        assert!(e.to_f64() > tiny * (1.0 - 1e-3));
        assert_eq!(Epsilon::from_f64(f64::NAN), Err(Error::EpsilonNotFinite));
        assert_eq!(
            Epsilon::from_f64(f64::INFINITY),
            Err(Error::EpsilonNotFinite)
        );
        assert_eq!(Epsilon::from_f64(0.0), Err(Error::EpsilonZero));
        assert_eq!(Epsilon::from_f64(-0.0), Err(Error::EpsilonZero));
        assert_eq!(Epsilon::from_f64(-1.0), Err(Error::EpsilonNegative));
        assert_eq!(Epsilon::from_f64(1e-300), Err(Error::EpsilonTooSmall));
        assert_eq!(Epsilon::from_f64(1e30), Err(Error::EpsilonTooLarge));
    }

    #[test]
    fn parses_exactly() {
        let p = |s: &str| s.parse::<Epsilon>();
        assert_eq!(p("0.1").unwrap(), Epsilon::new(1, 10).unwrap());
        assert_eq!(p("1/3").unwrap(), Epsilon::new(1, 3).unwrap());
        assert_eq!(p("2.5e-3").unwrap(), Epsilon::new(1, 400).unwrap());
        assert_eq!(p(" 2 ").unwrap(), Epsilon::new(2, 1).unwrap());
        assert_eq!(p("0"), Err(Error::EpsilonZero));
        assert_eq!(p("0.000"), Err(Error::EpsilonZero));
        assert_eq!(p("-0.5"), Err(Error::EpsilonNegative));
        assert_eq!(p("NaN"), Err(Error::EpsilonNotFinite));
        assert_eq!(p("-inf"), Err(Error::EpsilonNotFinite));
        assert_eq!(p("abc"), Err(Error::Parse));
        assert_eq!(p(""), Err(Error::Parse));
        assert_eq!(p("1/0"), Err(Error::ZeroDenominator));
    }

    #[test]
    fn arithmetic_is_exact() {
        let a = Epsilon::new(1, 3).unwrap();
        let b = Epsilon::new(1, 6).unwrap();
        assert_eq!(a.checked_add(b).unwrap(), Epsilon::new(1, 2).unwrap());
        assert_eq!(a.checked_sub(b).unwrap(), Some(b));
        assert_eq!(b.checked_sub(a).unwrap(), None);
        assert_eq!(a.checked_sub(a).unwrap(), None);
        assert_eq!(a.checked_div_int(2).unwrap(), b);
        assert_eq!(b.checked_mul_int(2).unwrap(), a);
        assert_eq!(add_fractions(3, 4, 5, 6), Ok((19, 12)));
        assert_eq!(add_fractions(1, 2, 1, 2), Ok((1, 1)));
        // lcm(2^64 − 1, 2^64 − 2) does not fit: refused, never wrapped.
        assert_eq!(
            add_fractions(1, u64::MAX, 1, u64::MAX - 1),
            Err(Error::Overflow)
        );
        let big = Epsilon::new(u64::MAX, 1).unwrap();
        assert_eq!(big.checked_add(big), Err(Error::Overflow));
        assert_eq!(big.checked_mul_int(2), Err(Error::Overflow));
    }
}

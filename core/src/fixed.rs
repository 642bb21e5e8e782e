//! Fixed-point numbers for device readings and released values.

use core::fmt;
use core::str::FromStr;

use crate::epsilon::parse_decimal;
use crate::error::{Error, Result};

/// A signed Q31.32 fixed-point number: an `i64` counting units of 2⁻³².
///
/// Range `[−2³¹, 2³¹ − 2⁻³²]`, resolution 2⁻³² ≈ 2.3·10⁻¹⁰. Every value is an exact
/// dyadic rational, so the grids of the Laplace mechanism (powers of two) line up
/// with it exactly and no floating-point rounding ever touches released noise.
///
/// ```
/// use privq_core::Fixed;
/// let x: Fixed = "21.5".parse()?;
/// assert_eq!(x.to_bits(), 43 << 31);
/// assert_eq!(x, Fixed::from_f64(21.5)?);
/// assert_eq!(x.to_string(), "21.5");
/// # Ok::<(), privq_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Fixed(i64);

impl Fixed {
    /// Fractional bits.
    pub const FRAC_BITS: u32 = 32;
    /// Zero.
    pub const ZERO: Fixed = Fixed(0);
    /// One.
    pub const ONE: Fixed = Fixed(1 << 32);
    /// The largest value, 2³¹ − 2⁻³².
    pub const MAX: Fixed = Fixed(i64::MAX);
    /// The smallest value, −2³¹.
    pub const MIN: Fixed = Fixed(i64::MIN);

    /// From the raw representation (units of 2⁻³²).
    pub const fn from_bits(bits: i64) -> Fixed {
        Fixed(bits)
    }

    /// The raw representation (units of 2⁻³²).
    pub const fn to_bits(self) -> i64 {
        self.0
    }

    /// An integer value, exactly.
    pub const fn from_int(n: i32) -> Fixed {
        Fixed((n as i64) << 32)
    }

    /// The nearest fixed-point value to `x`, ties rounded **up** (towards +∞):
    /// `⌊x·2³² + ½⌋`, computed exactly from the bits of `x`. Errors on NaN/∞ and on
    /// values outside the range ([`Error::OutOfRange`]).
    ///
    /// Round-half-up commutes with shifts by whole units of 2⁻³²
    /// (`from_f64(x + k·2⁻³²) = from_f64(x) + k` whenever both sides are exact), so two
    /// inputs at distance `d` round to points at most `⌈d·2³²⌉` units apart; ties to
    /// even would allow one more unit on some pairs.
    ///
    /// ```
    /// use privq_core::Fixed;
    /// let half_unit = 2f64.powi(-33);
    /// assert_eq!(Fixed::from_f64(half_unit)?, Fixed::from_bits(1));
    /// assert_eq!(Fixed::from_f64(-half_unit)?, Fixed::from_bits(0));
    /// assert_eq!(Fixed::from_f64(3.0 * half_unit)?, Fixed::from_bits(2));
    /// # Ok::<(), privq_core::Error>(())
    /// ```
    pub fn from_f64(x: f64) -> Result<Fixed> {
        round_half_up_scaled(x).map(Fixed)
    }

    /// The nearest `f64` (exact when the value has at most 53 significant bits).
    pub fn to_f64(self) -> f64 {
        self.0 as f64 / 4_294_967_296.0
    }

    /// `self + other`, or [`Error::OutOfRange`].
    pub fn checked_add(self, other: Fixed) -> Result<Fixed> {
        self.0
            .checked_add(other.0)
            .map(Fixed)
            .ok_or(Error::OutOfRange)
    }

    /// `self − other`, or [`Error::OutOfRange`].
    pub fn checked_sub(self, other: Fixed) -> Result<Fixed> {
        self.0
            .checked_sub(other.0)
            .map(Fixed)
            .ok_or(Error::OutOfRange)
    }

    /// 2^`exp` for `exp ∈ [−32, 30]`, or [`Error::GridOutOfRange`].
    pub fn pow2(exp: i32) -> Result<Fixed> {
        if !(-32..=30).contains(&exp) {
            return Err(Error::GridOutOfRange);
        }
        Ok(Fixed(1i64 << (exp + 32)))
    }
}

/// `⌊x·2³² + ½⌋` as an `i64`, exactly: `x = ±mant·2^exp` is split from its bits and the
/// rounding is done on integers (adding ½ in floating point can itself round).
fn round_half_up_scaled(x: f64) -> Result<i64> {
    let bits = x.to_bits();
    let negative = bits >> 63 == 1;
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1u64 << 52) - 1);
    if biased == 0x7ff {
        return Err(Error::OutOfRange);
    }
    // |x| = mant · 2^(shift − 32), so |x|·2³² = mant · 2^shift.
    let (mant, exp) = if biased == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1u64 << 52), biased - 1075)
    };
    let shift = exp + 32;
    let mant = u128::from(mant);
    let rounded: i128 = if shift >= 0 {
        // An integer already; beyond 2^64 it is out of range anyway.
        if shift > 64 {
            return Err(Error::OutOfRange);
        }
        let v = i128::try_from(mant << shift).map_err(|_| Error::OutOfRange)?;
        if negative { -v } else { v }
    } else if shift < -100 {
        // |x|·2³² < 2^53·2^-101 < ½: rounds to 0 on both sides.
        0
    } else {
        let r = shift.unsigned_abs();
        let half = 1u128 << (r - 1);
        if negative {
            // ⌊−t + ½⌋ = −⌈t − ½⌉ = −⌊(mant + half − 1)/2^r⌋.
            -(((mant + half - 1) >> r) as i128)
        } else {
            ((mant + half) >> r) as i128
        }
    };
    i64::try_from(rounded).map_err(|_| Error::OutOfRange)
}

impl Fixed {
    /// Parses a decimal like [`FromStr`], but rounds **up** (towards +∞) to the
    /// next representable value: the form for a bound that must not shrink, such
    /// as an asserted sensitivity (`"3e-10"`, 1.29 units of 2⁻³², becomes two
    /// units, never one: a smaller bound would understate ε).
    ///
    /// ```
    /// use privq_core::Fixed;
    /// assert_eq!(Fixed::parse_up("3e-10")?, Fixed::from_bits(2));
    /// assert_eq!(Fixed::parse_up("1e-10")?, Fixed::from_bits(1)); // never 0
    /// assert_eq!(Fixed::parse_up("1e-9")?, Fixed::from_bits(5)); // 4.29 units, up
    /// assert_eq!(Fixed::parse_up("0.5")?, "0.5".parse()?);
    /// # Ok::<(), privq_core::Error>(())
    /// ```
    pub fn parse_up(s: &str) -> Result<Fixed> {
        let s = s.trim();
        let (negative, body) = match s.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, s.strip_prefix('+').unwrap_or(s)),
        };
        let (num, den) = parse_decimal(body).map_err(|e| match e {
            Error::Overflow => Error::OutOfRange,
            e => e,
        })?;
        let scaled = u128::from(num) << 32;
        let (floor, exact) = (scaled / u128::from(den), scaled % u128::from(den) == 0);
        let units = i128::try_from(floor).map_err(|_| Error::OutOfRange)?;
        // Up for a positive value; towards zero (also up) for a negative one.
        let units = match (negative, exact) {
            (false, false) => units + 1,
            (false, true) => units,
            (true, _) => -units,
        };
        i64::try_from(units)
            .map(Fixed)
            .map_err(|_| Error::OutOfRange)
    }
}

impl FromStr for Fixed {
    type Err = Error;

    /// Parses a decimal such as `"-12.375"` or `"1e-3"`, rounding to the nearest
    /// representable value (ties away from zero).
    fn from_str(s: &str) -> Result<Fixed> {
        let s = s.trim();
        let (negative, body) = match s.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, s.strip_prefix('+').unwrap_or(s)),
        };
        let (num, den) = parse_decimal(body).map_err(|e| match e {
            Error::Overflow => Error::OutOfRange,
            e => e,
        })?;
        let scaled = (u128::from(num) << 32) + u128::from(den / 2);
        let units = scaled / u128::from(den);
        let units = i128::try_from(units).map_err(|_| Error::OutOfRange)?;
        let units = if negative { -units } else { units };
        i64::try_from(units)
            .map(Fixed)
            .map_err(|_| Error::OutOfRange)
    }
}

impl fmt::Display for Fixed {
    /// Exact decimal form (a dyadic value with ≤ 32 fractional bits has a finite
    /// decimal expansion of at most 32 digits).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bits = i128::from(self.0);
        let (sign, mag) = if bits < 0 { ("-", -bits) } else { ("", bits) };
        let int = mag >> 32;
        let mut frac = mag & 0xffff_ffff;
        write!(f, "{sign}{int}")?;
        if frac != 0 {
            f.write_str(".")?;
            while frac != 0 {
                frac *= 10;
                let digit = (frac >> 32) as u8;
                frac &= 0xffff_ffff;
                write!(f, "{digit}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::string::ToString;

    #[test]
    fn round_trips() {
        for s in ["0", "1", "-1", "21.5", "-0.25", "1024.0625"] {
            let x: Fixed = s.parse().unwrap();
            assert_eq!(x.to_string(), s);
            assert_eq!(Fixed::from_f64(x.to_f64()).unwrap(), x);
        }
    }

    #[test]
    fn display_is_exact() {
        assert_eq!(
            Fixed::from_bits(1).to_string(),
            "0.00000000023283064365386962890625"
        );
        assert_eq!(Fixed::from_int(-3).to_string(), "-3");
        assert_eq!(Fixed::from_f64(-2.75).unwrap().to_string(), "-2.75");
        assert_eq!(Fixed::MIN.to_string(), "-2147483648");
    }

    #[test]
    fn from_f64_rounds_half_up_and_commutes_with_shifts() {
        let unit = 2f64.powi(-32);
        // Ties at k + ½ units go to k + 1, for negative k too.
        for k in -40i64..40 {
            let tie = (k as f64 + 0.5) * unit;
            assert_eq!(
                Fixed::from_f64(tie).unwrap(),
                Fixed::from_bits(k + 1),
                "{k}"
            );
            // Just below the tie: k; just above: k + 1.
            let below = tie - unit / 1024.0;
            let above = tie + unit / 1024.0;
            assert_eq!(Fixed::from_f64(below).unwrap(), Fixed::from_bits(k), "{k}");
            assert_eq!(Fixed::from_f64(above).unwrap(), Fixed::from_bits(k + 1));
        }
        // Shift-equivariance on dyadic inputs: rounding x + j units = rounding x, + j.
        for &x in &[
            0.5 * unit,
            -0.5 * unit,
            2.5 * unit,
            0.3 * unit,
            -7.75 * unit,
            21.5,
        ] {
            let base = Fixed::from_f64(x).unwrap().to_bits();
            for j in [-1_000_000i64, -3, -1, 1, 2, 5, 1 << 40] {
                let shifted = x + j as f64 * unit;
                assert_eq!(
                    Fixed::from_f64(shifted).unwrap().to_bits(),
                    base + j,
                    "{x} {j}"
                );
            }
        }
        // Where x·2³² + 0.5 is inexact in f64 the result is still exact.
        let just_below_half = 0.499_999_999_999_999_94 * unit;
        assert_eq!(Fixed::from_f64(just_below_half).unwrap(), Fixed::ZERO);
        assert_eq!(Fixed::from_f64(-0.0).unwrap(), Fixed::ZERO);
        assert_eq!(Fixed::from_f64(f64::MIN_POSITIVE).unwrap(), Fixed::ZERO);
        assert_eq!(Fixed::from_f64(-2147483648.0).unwrap(), Fixed::MIN);
        assert_eq!(Fixed::from_f64(2147483648.0), Err(Error::OutOfRange));
        assert_eq!(Fixed::from_f64(-2147483648.0 - 1.0), Err(Error::OutOfRange));
        assert_eq!(Fixed::from_f64(f64::INFINITY), Err(Error::OutOfRange));
        assert_eq!(Fixed::from_f64(1e300), Err(Error::OutOfRange));
        // Largest value below 2³¹: 2³¹ − 2⁻²² rounds to itself.
        let top = 2147483648.0 - 2f64.powi(-22);
        assert_eq!(Fixed::from_f64(top).unwrap().to_f64(), top);
    }

    #[test]
    fn parse_and_range_errors() {
        assert_eq!(
            "1e-3".parse::<Fixed>().unwrap(),
            Fixed::from_bits(4_294_967)
        );
        assert_eq!("2147483648".parse::<Fixed>(), Err(Error::OutOfRange));
        assert_eq!("-2147483648".parse::<Fixed>().unwrap(), Fixed::MIN);
        assert_eq!("x".parse::<Fixed>(), Err(Error::Parse));
        assert_eq!(Fixed::from_f64(f64::NAN), Err(Error::OutOfRange));
        assert_eq!(Fixed::from_f64(3e9), Err(Error::OutOfRange));
        assert_eq!(
            Fixed::MAX.checked_add(Fixed::from_bits(1)),
            Err(Error::OutOfRange)
        );
        assert_eq!(Fixed::pow2(31), Err(Error::GridOutOfRange));
        assert_eq!(Fixed::pow2(-1).unwrap(), "0.5".parse().unwrap());
    }
}

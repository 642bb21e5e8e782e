//! Public value bounds and the grid a column's values are snapped to.

use std::fmt;

use privq_core::Fixed;

use super::AggregateError;

/// The public range `[lo, hi]` of a numeric column and the power-of-two grid
/// γ = 2^k its values are snapped to, chosen from the width alone (the largest
/// γ ≤ (hi − lo)/2¹⁰, at least 2⁻³²).
///
/// Every value is clamped into the range, then snapped to the nearest grid point
/// inside it, so one row moves a sum by at most [`Bounds::max_abs_steps`] grid steps
/// whatever the data holds. The bounds are public input: they must come from what is
/// known about the column (a thermometer's range, a legal age), never from the data.
///
/// ```
/// use privq_host::aggregate::Bounds;
/// let b: Bounds = "-20:50".parse()?;
/// assert_eq!(b.grid_exp(), -4); // 70/1024 ≥ 1/16
/// assert_eq!(b.steps(1e9), 50 * 16); // clamped to hi
/// assert_eq!(b.steps(-3.03), -48); // -3.03 · 16 = -48.48, nearest -48
/// # Ok::<(), privq_host::aggregate::AggregateError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    lo: Fixed,
    hi: Fixed,
    grid_exp: i32,
    lo_steps: i64,
    hi_steps: i64,
}

impl Bounds {
    /// The bounds `[lo, hi]`, `lo < hi`, and their grid.
    pub fn new(lo: Fixed, hi: Fixed) -> Result<Self, AggregateError> {
        if lo >= hi {
            return Err(AggregateError::InvalidBounds(format!(
                "the low bound must be below the high bound, got {lo}:{hi}"
            )));
        }
        let width = hi.checked_sub(lo).map_err(|_| {
            AggregateError::InvalidBounds(format!(
                "{lo}:{hi} is wider than privq's fixed-point range (about ±2.1e9)"
            ))
        })?;
        let bits = width.to_bits() as u64;
        // γ = 2^k ≤ width/2^10: k = ⌊log2(width)⌋ − 10, width in units of 2^-32.
        let grid_exp = (bits.ilog2() as i32 - Fixed::FRAC_BITS as i32 - 10).max(-32);
        let shift = (grid_exp + Fixed::FRAC_BITS as i32) as u32;
        // Grid points inside [lo, hi]: ⌈lo/γ⌉ and ⌊hi/γ⌋ (arithmetic shifts floor),
        // in i128 so that negating Fixed::MIN cannot overflow.
        let lo_steps = -((-i128::from(lo.to_bits())) >> shift);
        let hi_steps = i128::from(hi.to_bits()) >> shift;
        let (Ok(lo_steps), Ok(hi_steps)) = (i64::try_from(lo_steps), i64::try_from(hi_steps))
        else {
            return Err(AggregateError::InvalidBounds(format!(
                "{lo}:{hi} is outside privq's fixed-point range"
            )));
        };
        if lo_steps >= hi_steps {
            return Err(AggregateError::InvalidBounds(format!(
                "{lo}:{hi} holds no two grid points"
            )));
        }
        Ok(Bounds {
            lo,
            hi,
            grid_exp,
            lo_steps,
            hi_steps,
        })
    }

    /// The low bound.
    pub fn lo(&self) -> Fixed {
        self.lo
    }

    /// The high bound.
    pub fn hi(&self) -> Fixed {
        self.hi
    }

    /// `k` with grid step γ = 2^k.
    pub fn grid_exp(&self) -> i32 {
        self.grid_exp
    }

    /// The lowest and highest grid points inside the bounds, in grid steps.
    pub fn step_range(&self) -> (i64, i64) {
        (self.lo_steps, self.hi_steps)
    }

    /// The largest |value| a row can have after clamping, in grid steps.
    pub fn max_abs_steps(&self) -> u64 {
        self.lo_steps
            .unsigned_abs()
            .max(self.hi_steps.unsigned_abs())
    }

    /// The grid point halfway (rounded down) between the bounds, in grid steps.
    pub fn mid_steps(&self) -> i64 {
        self.lo_steps + (self.hi_steps - self.lo_steps) / 2
    }

    /// The largest distance of a clamped value from [`Bounds::mid_steps`], in steps.
    pub fn half_width_steps(&self) -> u64 {
        let mid = self.mid_steps();
        (self.hi_steps - mid).max(mid - self.lo_steps) as u64
    }

    /// `x` clamped into the bounds and snapped to the nearest grid point inside them,
    /// in grid steps. `x` must be finite (the table loader refuses anything else).
    pub fn steps(&self, x: f64) -> i64 {
        self.stepper().steps(x)
    }

    /// [`Bounds::steps`] with its constants computed once, for many values.
    pub(super) fn stepper(&self) -> Stepper {
        Stepper {
            lo: self.lo.to_f64(),
            hi: self.hi.to_f64(),
            // A power of two within f64 range: exact, as powi computes it here.
            scale: 2f64.powi(-self.grid_exp),
            lo_steps: self.lo_steps,
            hi_steps: self.hi_steps,
        }
    }

    /// A value in grid steps, in the column's units.
    pub fn value(&self, steps: f64) -> f64 {
        steps * 2f64.powi(self.grid_exp)
    }
}

/// [`Bounds::steps`] of one column's bounds, its constants computed once.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stepper {
    lo: f64,
    hi: f64,
    scale: f64,
    lo_steps: i64,
    hi_steps: i64,
}

impl Stepper {
    /// `x` clamped into the bounds and snapped to the nearest grid point inside them,
    /// in grid steps ([`Bounds::steps`]).
    #[inline]
    pub(super) fn steps(&self, x: f64) -> i64 {
        let scaled = x.clamp(self.lo, self.hi) * self.scale;
        // |scaled| ≤ 2^31 · 2^32, exact as i64 after rounding; re-clamp to the grid
        // points inside the bounds (rounding may step just outside).
        (scaled.round() as i64).clamp(self.lo_steps, self.hi_steps)
    }
}

impl std::str::FromStr for Bounds {
    type Err = AggregateError;

    /// `LO:HI`, each a decimal (`-20:50`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (lo, hi) = s.split_once(':').ok_or_else(|| {
            AggregateError::InvalidBounds(format!("{s:?} is not LO:HI (e.g. -20:50)"))
        })?;
        let parse = |t: &str| {
            t.trim()
                .parse::<Fixed>()
                .map_err(|source| AggregateError::Decimal {
                    text: t.to_string(),
                    bounds: s.to_string(),
                    source,
                })
        };
        Bounds::new(parse(lo)?, parse(hi)?)
    }
}

impl fmt::Display for Bounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.lo, self.hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_and_steps_are_exact() {
        let b: Bounds = "0:1".parse().unwrap();
        assert_eq!(b.grid_exp(), -10);
        assert_eq!(b.step_range(), (0, 1024));
        assert_eq!(b.max_abs_steps(), 1024);
        assert_eq!((b.mid_steps(), b.half_width_steps()), (512, 512));
        assert_eq!(b.steps(f64::MAX), 1024);
        assert_eq!(b.steps(-5.0), 0);
        assert_eq!(b.steps(0.5), 512);
        let b: Bounds = "-20:50".parse().unwrap();
        assert_eq!(b.step_range(), (-320, 800));
        assert_eq!(b.max_abs_steps(), 800);
        assert_eq!(b.value(-320.0), -20.0);
        // Bounds off the grid: only grid points inside them are reachable.
        let b: Bounds = "0.3:1.3".parse().unwrap();
        let (lo, hi) = b.step_range();
        assert!(b.value(lo as f64) >= 0.3 && b.value(hi as f64) <= 1.3);
        assert_eq!(b.steps(0.3), lo);
        let b: Bounds = "-2147483648:-1000".parse().unwrap();
        let (lo, hi) = b.step_range();
        assert!(lo < hi && b.value(lo as f64) == -2147483648.0, "{lo} {hi}");
        assert_eq!(b.steps(-1e300), lo);
        for bad in ["1:1", "2:1", "x:1", "1", "-2147483648:2147483647"] {
            assert!(bad.parse::<Bounds>().is_err(), "{bad}");
        }
    }
}

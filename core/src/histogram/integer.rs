//! Equal-width bins over raw integer readings, in 32-bit arithmetic.

use crate::error::{Error, Result};

/// `BINS` equal-width bins over the half-open range `[lo, hi)` of raw `i32` readings (sensor
/// units, e.g. 1/16 °C), each a whole number of raw units wide.
///
/// The bin of a reading is one subtraction, one comparison and one 32-bit division (a shift
/// when the width is a power of two and the bins are a `const`). It equals
/// [`Histogram::bin_of`](super::Histogram::bin_of) with the same range in [`Fixed`](crate::Fixed)
/// (`raw · unit`, for any unit), which divides in 128 bits (a software division on a
/// Cortex-M0).
///
/// Flash cost (thumbv6m, measured by `tools/device-sizes.sh`): about 380 B with a `Histogram<64>`
/// it fills and a scan for the modal bin.
///
/// Readings outside the range are **clamped**: below `lo` into bin 0, at or above `hi` into
/// the last bin ([`bin_clamped`](Self::bin_clamped),
/// [`Histogram::record_raw_clamped`](super::Histogram::record_raw_clamped)). [`bin`](Self::bin)
/// returns `None` for them instead, for a device that counts or rejects outliers itself.
///
/// ```
/// use privq_core::histogram::{Histogram, IntegerBins};
/// // 64 bins of 0.5 °C over [5, 37) °C, for a sensor that reads in 1/16 °C.
/// const BINS: IntegerBins<64> = match IntegerBins::new(5 * 16, 37 * 16) {
///     Ok(bins) => bins,
///     Err(_) => panic!("uneven bins"), // a compile error, never a run-time panic
/// };
/// assert_eq!(BINS.width(), 8); // raw units per bin
/// assert_eq!(BINS.bin_clamped(21 * 16 + 8), 33); // 21.5 °C: [21.5, 22)
/// assert_eq!(BINS.bin_clamped(-40 * 16), 0); // clamped
/// assert_eq!(BINS.bin(-40 * 16), None);
/// assert_eq!(BINS.bin_clamped(37 * 16), 63); // the upper edge is exclusive: clamped
///
/// let mut histogram = Histogram::<64>::categorical()?;
/// assert_eq!(histogram.record_raw_clamped(&BINS, 344), 33); // cannot fail
/// assert_eq!(histogram.count(33), Some(1));
/// # Ok::<(), privq_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct IntegerBins<const BINS: usize> {
    lo: i32,
    width: u32,
}

impl<const BINS: usize> IntegerBins<BINS> {
    /// `BINS` bins over `[lo, hi)`: [`Error::EmptyRange`] when `hi ≤ lo` or `BINS` is 0,
    /// [`Error::UnevenBins`] when `hi − lo` is not a multiple of `BINS`.
    pub const fn new(lo: i32, hi: i32) -> Result<Self> {
        if hi <= lo || BINS == 0 {
            return Err(Error::EmptyRange);
        }
        // hi − lo in 1..2³², exact as u32.
        let span = hi.wrapping_sub(lo) as u32;
        if BINS as u64 > span as u64 {
            return Err(Error::UnevenBins);
        }
        let bins = BINS as u32; // ≤ span, so it fits
        let width = span / bins;
        if width.wrapping_mul(bins) != span {
            return Err(Error::UnevenBins);
        }
        Ok(IntegerBins { lo, width })
    }

    /// The inclusive lower edge of bin 0.
    pub const fn lo(&self) -> i32 {
        self.lo
    }

    /// The exclusive upper edge of the last bin.
    pub const fn hi(&self) -> i32 {
        // lo + width·BINS = hi, which `new` took as an i32.
        self.lo
            .wrapping_add(self.width.wrapping_mul(BINS as u32) as i32)
    }

    /// Raw units per bin (at least 1).
    pub const fn width(&self) -> u32 {
        self.width
    }

    /// The bin of `raw`, clamped into `0..BINS`: below `lo` bin 0, at or above `hi` the last.
    #[inline]
    pub const fn bin_clamped(&self, raw: i32) -> usize {
        let last = BINS.saturating_sub(1);
        if raw < self.lo {
            return 0;
        }
        // raw − lo in 0..2³², exact as u32; the width is never 0.
        let offset = raw.wrapping_sub(self.lo) as u32;
        let bin = match offset.checked_div(self.width) {
            Some(b) => b as usize,
            None => 0,
        };
        if bin < last { bin } else { last }
    }

    /// The bin of `raw`, or `None` when it lies outside `[lo, hi)`.
    #[inline]
    pub const fn bin(&self, raw: i32) -> Option<usize> {
        if raw < self.lo || raw >= self.hi() {
            None
        } else {
            Some(self.bin_clamped(raw))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Fixed;
    use crate::histogram::{Histogram, OutOfRange};

    #[test]
    fn hand_checked_bins_and_edges() {
        let b = IntegerBins::<4>::new(-10, 10).unwrap();
        assert_eq!((b.lo(), b.hi(), b.width()), (-10, 10, 5));
        let cases = [
            (i32::MIN, 0, None),
            (-11, 0, None),
            (-10, 0, Some(0)),
            (-6, 0, Some(0)),
            (-5, 1, Some(1)),
            (-1, 1, Some(1)),
            (0, 2, Some(2)),
            (4, 2, Some(2)),
            (5, 3, Some(3)),
            (9, 3, Some(3)),
            (10, 3, None),
            (i32::MAX, 3, None),
        ];
        for (raw, clamped, bin) in cases {
            assert_eq!(b.bin_clamped(raw), clamped, "{raw}");
            assert_eq!(b.bin(raw), bin, "{raw}");
        }
        // The whole i32 range in one bin of 2³² − 1 units is not a whole split; in three it is.
        let all = IntegerBins::<3>::new(i32::MIN, i32::MAX).unwrap();
        assert_eq!(all.width(), 1_431_655_765);
        assert_eq!(all.hi(), i32::MAX);
        assert_eq!(
            [i32::MIN, -1, 0, i32::MAX - 1, i32::MAX].map(|r| all.bin_clamped(r)),
            [0, 1, 1, 2, 2]
        );
        let one = IntegerBins::<1>::new(7, 8).unwrap();
        assert_eq!([6, 7, 8].map(|r| one.bin_clamped(r)), [0, 0, 0]);
        assert_eq!([6, 7, 8].map(|r| one.bin(r)), [None, Some(0), None]);
    }

    #[test]
    fn constructor_validates() {
        assert_eq!(IntegerBins::<4>::new(0, 0), Err(Error::EmptyRange));
        assert_eq!(IntegerBins::<4>::new(1, 0), Err(Error::EmptyRange));
        assert_eq!(IntegerBins::<0>::new(0, 8), Err(Error::EmptyRange));
        assert_eq!(IntegerBins::<3>::new(0, 8), Err(Error::UnevenBins));
        assert_eq!(IntegerBins::<9>::new(0, 8), Err(Error::UnevenBins));
        assert_eq!(
            IntegerBins::<{ usize::MAX }>::new(i32::MIN, i32::MAX),
            Err(Error::UnevenBins)
        );
        assert_eq!(
            IntegerBins::<2>::new(i32::MIN, i32::MAX),
            Err(Error::UnevenBins)
        );
        assert!(IntegerBins::<8>::new(0, 8).is_ok());
    }

    /// For every `i16` reading, the integer bin is the fixed-point binning's: the example
    /// firmware's configuration (64 bins of 0.5 °C over [0, 32) °C in 1/128 °C) and others,
    /// with negative edges and widths that are not powers of two.
    #[test]
    fn agrees_with_the_fixed_point_binning_for_every_i16_reading() {
        fn check<const BINS: usize>(lo: i32, hi: i32, frac_bits: u32) {
            let shift = Fixed::FRAC_BITS - frac_bits;
            let fixed = |raw: i32| Fixed::from_bits(i64::from(raw) << shift);
            let ints = IntegerBins::<BINS>::new(lo, hi).unwrap();
            let h =
                Histogram::<BINS>::equal_width(fixed(lo), fixed(hi), OutOfRange::Clamp).unwrap();
            let tally =
                Histogram::<BINS>::equal_width(fixed(lo), fixed(hi), OutOfRange::Tally).unwrap();
            for raw in i16::MIN..=i16::MAX {
                let raw = i32::from(raw);
                let value = fixed(raw);
                assert_eq!(
                    Some(ints.bin_clamped(raw)),
                    h.bin_of(value).unwrap(),
                    "{raw}"
                );
                assert_eq!(ints.bin(raw), tally.bin_of(value).unwrap(), "{raw}");
            }
        }
        check::<64>(0, 32 * 128, 7); // the example firmware
        check::<64>(5 * 16, 37 * 16, 4); // the quick start
        check::<7>(-1000, 1002, 0);
        check::<3>(-32768, 32767, 10);
        check::<1>(-3, 4, 2);
    }
}

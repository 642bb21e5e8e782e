//! Fixed-size histograms for on-device readings, and [`IntegerBins`] to bin raw integer
//! readings in 32-bit arithmetic.

use crate::error::{Error, Result};
use crate::fixed::Fixed;

mod integer;
pub use integer::IntegerBins;

/// How a value is assigned to a bin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Binning {
    /// Values are category indices `0..BINS`, recorded with [`Histogram::record_index`].
    Categorical,
    /// `BINS` equal-width bins over the half-open range `[lo, hi)`.
    EqualWidth {
        /// Inclusive lower edge of bin 0.
        lo: Fixed,
        /// Exclusive upper edge of the last bin.
        hi: Fixed,
        /// What happens to values outside `[lo, hi)`.
        outside: OutOfRange,
    },
}

/// Policy for values outside an equal-width binning's range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum OutOfRange {
    /// Return [`Error::OutOfRange`] and record nothing.
    Reject,
    /// Count the value in the first or last bin.
    Clamp,
    /// Count it in the separate underflow / overflow counters.
    Tally,
}

/// Policy for a counter at `u32::MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Saturation {
    /// Return [`Error::CounterFull`] and leave the histogram unchanged (default).
    #[default]
    Error,
    /// Keep the counter at `u32::MAX`; [`Histogram::saturated`] reports it.
    Saturate,
}

/// A histogram with `BINS` `u32` counters, stored inline (no allocation).
///
/// Flash cost (thumbv6m, measured by `tools/device-sizes.sh`): about 380 B for a `Histogram<64>`
/// filled through [`IntegerBins`], with a scan for the modal bin.
///
/// ```
/// use privq_core::{Fixed, histogram::{Histogram, OutOfRange}};
/// let mut h = Histogram::<4>::equal_width(Fixed::from_int(0), Fixed::from_int(40), OutOfRange::Tally)?;
/// assert_eq!(h.record("12.5".parse()?)?, Some(1));
/// assert_eq!(h.record(Fixed::from_int(40))?, None); // upper edge is exclusive
/// assert_eq!(h.counts(), &[0, 1, 0, 0]);
/// assert_eq!(h.overflow(), 1);
/// # Ok::<(), privq_core::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Histogram<const BINS: usize> {
    counts: [u32; BINS],
    underflow: u32,
    overflow: u32,
    binning: Binning,
    saturation: Saturation,
    saturated: bool,
}

impl<const BINS: usize> Histogram<BINS> {
    /// A histogram over category indices `0..BINS`.
    ///
    /// `const`, so a histogram can be a `static` (see [`equal_width`](Self::equal_width)).
    pub const fn categorical() -> Result<Self> {
        Self::with_binning(Binning::Categorical)
    }

    /// `BINS` equal-width bins over `[lo, hi)`.
    ///
    /// `const`, so the configuration can be checked at compile time and kept in a `static`:
    ///
    /// ```
    /// use privq_core::{Fixed, histogram::{Histogram, OutOfRange}};
    /// const TEMPERATURES: Histogram<64> =
    ///     match Histogram::equal_width(Fixed::from_int(5), Fixed::from_int(37), OutOfRange::Clamp) {
    ///         Ok(h) => h,
    ///         Err(_) => panic!("empty range"), // a compile error, never a run-time panic
    ///     };
    /// let mut h = TEMPERATURES;
    /// assert_eq!(h.record_clamped(Fixed::from_int(21)), 32);
    /// ```
    pub const fn equal_width(lo: Fixed, hi: Fixed, outside: OutOfRange) -> Result<Self> {
        if lo.to_bits() >= hi.to_bits() {
            return Err(Error::EmptyRange);
        }
        Self::with_binning(Binning::EqualWidth { lo, hi, outside })
    }

    const fn with_binning(binning: Binning) -> Result<Self> {
        if BINS == 0 || BINS as u64 > u32::MAX as u64 {
            return Err(Error::EmptyRange);
        }
        Ok(Histogram {
            counts: [0; BINS],
            underflow: 0,
            overflow: 0,
            binning,
            saturation: Saturation::Error,
            saturated: false,
        })
    }

    /// Sets the saturation policy (builder style).
    pub const fn with_saturation(mut self, saturation: Saturation) -> Self {
        self.saturation = saturation;
        self
    }

    /// The binning.
    pub fn binning(&self) -> Binning {
        self.binning
    }

    /// The bin `value` falls in: `Ok(None)` for a tallied out-of-range value.
    pub fn bin_of(&self, value: Fixed) -> Result<Option<usize>> {
        let Binning::EqualWidth { lo, hi, outside } = self.binning else {
            return Err(Error::BinOutOfRange);
        };
        if value < lo || value >= hi {
            return match outside {
                OutOfRange::Reject => Err(Error::OutOfRange),
                OutOfRange::Clamp => Ok(Some(if value < lo { 0 } else { BINS - 1 })),
                OutOfRange::Tally => Ok(None),
            };
        }
        Ok(Some(bin_in_range::<BINS>(lo, hi, value)))
    }

    /// Records a reading; returns its bin, or `None` when it was tallied as
    /// under/overflow. Categorical histograms use [`record_index`](Self::record_index).
    pub fn record(&mut self, value: Fixed) -> Result<Option<usize>> {
        let bin = self.bin_of(value)?;
        match bin {
            Some(i) => self.record_index(i)?,
            None => {
                let Binning::EqualWidth { lo, .. } = self.binning else {
                    return Err(Error::BinOutOfRange);
                };
                let counter = if value < lo {
                    &mut self.underflow
                } else {
                    &mut self.overflow
                };
                bump(counter, self.saturation, &mut self.saturated)?;
            }
        }
        Ok(bin)
    }

    /// Records a reading and returns its bin; it cannot fail.
    ///
    /// The value is clamped into the range whatever the [`OutOfRange`] policy (below `lo`:
    /// bin 0; at or above `hi`: the last bin; nothing goes to the under/overflow tallies),
    /// and a counter at `u32::MAX` is held there and reported by
    /// [`saturated`](Self::saturated) whatever the [`Saturation`] policy. A categorical
    /// histogram takes the value's integer part (rounded down) as the index, clamped into
    /// `0..BINS` the same way.
    ///
    /// ```
    /// use privq_core::{Fixed, histogram::{Histogram, OutOfRange}};
    /// let mut h = Histogram::<4>::equal_width(Fixed::from_int(0), Fixed::from_int(40), OutOfRange::Reject)?;
    /// assert_eq!(h.record_clamped(Fixed::from_int(-3)), 0);
    /// assert_eq!(h.record_clamped("12.5".parse()?), 1);
    /// assert_eq!(h.record_clamped(Fixed::from_int(40)), 3);
    /// assert_eq!(h.counts(), &[1, 1, 0, 1]);
    /// # Ok::<(), privq_core::Error>(())
    /// ```
    pub fn record_clamped(&mut self, value: Fixed) -> usize {
        let last = BINS.saturating_sub(1);
        let bin = match self.binning {
            Binning::EqualWidth { lo, hi, .. } => {
                if value < lo {
                    0
                } else if value >= hi {
                    last
                } else {
                    bin_in_range::<BINS>(lo, hi, value)
                }
            }
            Binning::Categorical => {
                let index = value.to_bits() >> Fixed::FRAC_BITS;
                usize::try_from(index).map_or(0, |i| i.min(last))
            }
        };
        self.bump_held(bin);
        bin
    }

    /// Records a raw integer reading in the bin `bins` gives it, clamped into range
    /// ([`IntegerBins::bin_clamped`]), and returns the bin; it cannot fail. As with
    /// [`record_clamped`](Self::record_clamped), a counter at `u32::MAX` is held there and
    /// reported by [`saturated`](Self::saturated). The histogram's own binning is not
    /// consulted: use a [`categorical`](Self::categorical) one, or an
    /// [`equal_width`](Self::equal_width) one over the same range in [`Fixed`].
    ///
    /// ```
    /// use privq_core::histogram::{Histogram, IntegerBins};
    /// let bins = IntegerBins::<4>::new(0, 400)?; // raw units, 100 per bin
    /// let mut h = Histogram::<4>::categorical()?;
    /// assert_eq!(h.record_raw_clamped(&bins, 250), 2);
    /// assert_eq!(h.record_raw_clamped(&bins, -7), 0);
    /// assert_eq!(h.counts(), &[1, 0, 1, 0]);
    /// # Ok::<(), privq_core::Error>(())
    /// ```
    pub fn record_raw_clamped(&mut self, bins: &IntegerBins<BINS>, raw: i32) -> usize {
        let bin = bins.bin_clamped(raw);
        self.bump_held(bin);
        bin
    }

    /// Adds one to bin `index` if it exists, holding a full counter at `u32::MAX`.
    fn bump_held(&mut self, index: usize) {
        if let Some(counter) = self.counts.get_mut(index) {
            match counter.checked_add(1) {
                Some(c) => *counter = c,
                None => self.saturated = true,
            }
        }
    }

    /// Adds one to bin `index`; [`Error::BinOutOfRange`] when `index ≥ BINS`.
    pub fn record_index(&mut self, index: usize) -> Result<()> {
        let counter = self.counts.get_mut(index).ok_or(Error::BinOutOfRange)?;
        bump(counter, self.saturation, &mut self.saturated)
    }

    /// Adds `other`'s counts into `self`. Both must have the same binning; under
    /// [`Saturation::Error`] nothing changes when any counter would overflow.
    pub fn merge(&mut self, other: &Histogram<BINS>) -> Result<()> {
        if self.binning != other.binning {
            return Err(Error::BinningMismatch);
        }
        let add = |a: u32, b: u32, saturated: &mut bool| match a.checked_add(b) {
            Some(s) => Ok(s),
            None if self.saturation == Saturation::Saturate => {
                *saturated = true;
                Ok(u32::MAX)
            }
            None => Err(Error::CounterFull),
        };
        let mut merged = self.clone();
        merged.saturated |= other.saturated;
        for (m, &o) in merged.counts.iter_mut().zip(&other.counts) {
            *m = add(*m, o, &mut merged.saturated)?;
        }
        merged.underflow = add(merged.underflow, other.underflow, &mut merged.saturated)?;
        merged.overflow = add(merged.overflow, other.overflow, &mut merged.saturated)?;
        *self = merged;
        Ok(())
    }

    /// Resets every counter (keeps the binning and policy).
    pub fn clear(&mut self) {
        self.counts = [0; BINS];
        self.underflow = 0;
        self.overflow = 0;
        self.saturated = false;
    }

    /// The per-bin counts.
    pub fn counts(&self) -> &[u32; BINS] {
        &self.counts
    }

    /// The most frequent bin (the lowest of them on a tie; 0 for an empty histogram), as
    /// the `u32` item the local randomizers take (e.g.
    /// [`Ledger::release`](crate::ledger::Ledger::release) with
    /// [`UnaryEncoding`](crate::local::UnaryEncoding) or [`Grr`](crate::local::Grr) over
    /// `BINS` items).
    ///
    /// ```
    /// use privq_core::histogram::{Histogram, IntegerBins};
    /// const BINS: IntegerBins<4> = match IntegerBins::new(0, 40) {
    ///     Ok(bins) => bins,
    ///     Err(_) => panic!("uneven bins"),
    /// };
    /// let mut h = Histogram::<4>::categorical()?;
    /// for raw in [12, 25, 17, 31, 28] {
    ///     h.record_raw_clamped(&BINS, raw); // bins 1, 2, 1, 3, 2
    /// }
    /// assert_eq!(h.modal_bin(), 1); // bins 1 and 2 tie: the lower one
    /// # Ok::<(), privq_core::Error>(())
    /// ```
    pub fn modal_bin(&self) -> u32 {
        let mut best = (0, 0);
        for (bin, &count) in (0u32..).zip(&self.counts) {
            if count > best.1 {
                best = (bin, count);
            }
        }
        best.0
    }

    /// Count of one bin (`None` when out of range).
    pub fn count(&self, index: usize) -> Option<u32> {
        self.counts.get(index).copied()
    }

    /// Values below the range (with [`OutOfRange::Tally`]).
    pub fn underflow(&self) -> u32 {
        self.underflow
    }

    /// Values at or above the range's upper edge (with [`OutOfRange::Tally`]).
    pub fn overflow(&self) -> u32 {
        self.overflow
    }

    /// Sum of the bins (without under/overflow).
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|&c| u64::from(c)).sum()
    }

    /// Whether any counter has been held at `u32::MAX` by [`Saturation::Saturate`].
    pub fn saturated(&self) -> bool {
        self.saturated
    }
}

/// `⌊(value − lo)·BINS / (hi − lo)⌋` for `lo ≤ value < hi`: exact, below `BINS`, and without
/// a panic path (the width is positive; the product is below 2⁹⁶).
fn bin_in_range<const BINS: usize>(lo: Fixed, hi: Fixed, value: Fixed) -> usize {
    let offset = value.to_bits().abs_diff(lo.to_bits());
    let width = hi.to_bits().abs_diff(lo.to_bits());
    let scaled = u128::from(offset) * BINS as u128;
    let bin = scaled.checked_div(u128::from(width)).unwrap_or(0);
    usize::try_from(bin).map_or(0, |b| b.min(BINS.saturating_sub(1)))
}

fn bump(counter: &mut u32, policy: Saturation, saturated: &mut bool) -> Result<()> {
    match counter.checked_add(1) {
        Some(c) => *counter = c,
        None if policy == Saturation::Saturate => *saturated = true,
        None => return Err(Error::CounterFull),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categorical_records_and_rejects() {
        let mut h = Histogram::<3>::categorical().unwrap();
        h.record_index(2).unwrap();
        h.record_index(2).unwrap();
        assert_eq!(h.record_index(3), Err(Error::BinOutOfRange));
        assert_eq!(h.counts(), &[0, 0, 2]);
        assert_eq!(h.record(Fixed::ONE), Err(Error::BinOutOfRange));
        assert_eq!(Histogram::<0>::categorical(), Err(Error::EmptyRange));
    }

    #[test]
    fn equal_width_edges_and_policies() {
        let (lo, hi) = (Fixed::from_int(-1), Fixed::from_int(1));
        assert_eq!(
            Histogram::<4>::equal_width(hi, lo, OutOfRange::Reject),
            Err(Error::EmptyRange)
        );
        let mut h = Histogram::<4>::equal_width(lo, hi, OutOfRange::Reject).unwrap();
        assert_eq!(h.record(lo).unwrap(), Some(0));
        assert_eq!(h.record(Fixed::from_bits(-1)).unwrap(), Some(1));
        assert_eq!(h.record(Fixed::ZERO).unwrap(), Some(2));
        assert_eq!(
            h.record(Fixed::from_bits(hi.to_bits() - 1)).unwrap(),
            Some(3)
        );
        assert_eq!(h.record(hi), Err(Error::OutOfRange));
        assert_eq!(h.total(), 4);
        let mut c = Histogram::<4>::equal_width(lo, hi, OutOfRange::Clamp).unwrap();
        assert_eq!(c.record(Fixed::from_int(-5)).unwrap(), Some(0));
        assert_eq!(c.record(Fixed::from_int(5)).unwrap(), Some(3));
    }

    #[test]
    fn record_clamped_cannot_fail() {
        let (lo, hi) = (Fixed::from_int(-1), Fixed::from_int(1));
        for policy in [OutOfRange::Reject, OutOfRange::Clamp, OutOfRange::Tally] {
            let mut h = Histogram::<4>::equal_width(lo, hi, policy).unwrap();
            let checked = Histogram::<4>::equal_width(lo, hi, OutOfRange::Clamp).unwrap();
            for v in [
                Fixed::MIN,
                Fixed::from_int(-2),
                lo,
                Fixed::ZERO,
                hi,
                Fixed::MAX,
            ] {
                let expected = checked.bin_of(v).unwrap().unwrap();
                assert_eq!(h.record_clamped(v), expected, "{v:?} under {policy:?}");
            }
            assert_eq!(h.counts(), &[3, 0, 1, 2]);
            assert_eq!((h.underflow(), h.overflow()), (0, 0));
        }
        // Under the `Error` policy a full counter is held, not refused.
        let mut full = Histogram::<2>::equal_width(lo, hi, OutOfRange::Reject).unwrap();
        full.counts[1] = u32::MAX;
        assert_eq!(full.record_clamped(Fixed::MAX), 1);
        assert_eq!(full.counts(), &[0, u32::MAX]);
        assert!(full.saturated());
        let bins = IntegerBins::<2>::new(-1, 1).unwrap();
        assert_eq!(full.record_raw_clamped(&bins, i32::MIN), 0);
        assert_eq!(full.record_raw_clamped(&bins, i32::MAX), 1);
        assert_eq!(full.counts(), &[1, u32::MAX]);
        // Categorical: the integer part, clamped.
        let mut cat = Histogram::<3>::categorical().unwrap();
        let values = [
            Fixed::MIN,
            Fixed::from_bits(-1),
            Fixed::from_int(1),
            Fixed::MAX,
        ];
        let bins = values.map(|v| cat.record_clamped(v));
        assert_eq!(bins, [0, 0, 1, 2]);
        assert_eq!(cat.counts(), &[2, 1, 1]);
    }

    #[test]
    fn bins_are_exact_at_extreme_ranges() {
        let mut wide =
            Histogram::<7>::equal_width(Fixed::MIN, Fixed::MAX, OutOfRange::Reject).unwrap();
        assert_eq!(wide.record(Fixed::MIN).unwrap(), Some(0));
        assert_eq!(
            wide.record(Fixed::from_bits(i64::MAX - 1)).unwrap(),
            Some(6)
        );
        // (0 − MIN)·7 / (MAX − MIN) = 2⁶³·7 / (2⁶⁴ − 1) → 3.
        assert_eq!(wide.record(Fixed::ZERO).unwrap(), Some(3));
    }

    #[test]
    fn saturation_policies() {
        let mut h = Histogram::<1>::categorical().unwrap();
        h.counts[0] = u32::MAX;
        assert_eq!(h.record_index(0), Err(Error::CounterFull));
        assert!(!h.saturated());
        let mut s = h.clone().with_saturation(Saturation::Saturate);
        s.record_index(0).unwrap();
        assert_eq!(s.counts(), &[u32::MAX]);
        assert!(s.saturated());
    }

    #[test]
    fn merge_adds_and_checks() {
        let mut a = Histogram::<2>::categorical().unwrap();
        let mut b = Histogram::<2>::categorical().unwrap();
        a.record_index(0).unwrap();
        b.record_index(1).unwrap();
        b.record_index(1).unwrap();
        a.merge(&b).unwrap();
        assert_eq!(a.counts(), &[1, 2]);
        let w = Histogram::<2>::equal_width(Fixed::ZERO, Fixed::ONE, OutOfRange::Clamp).unwrap();
        assert_eq!(a.merge(&w), Err(Error::BinningMismatch));
        let mut full = Histogram::<2>::categorical().unwrap();
        full.counts[1] = u32::MAX;
        let before = a.clone();
        assert_eq!(a.merge(&full), Err(Error::CounterFull));
        assert_eq!(a, before);
        a.clear();
        assert_eq!(a.total(), 0);
    }
}

//! The application: collect readings into a histogram, then release it privately.

use embedded_hal::delay::DelayNs;
use embedded_hal::i2c::I2c;
use privq_core::histogram::{Histogram, OutOfRange};
use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::{Epsilon, Fixed, GridLaplace};

use crate::sensor::TempSensor;

/// Histogram bins.
pub const BINS: usize = 8;

/// Lower edge of the histogram range, °C.
pub const RANGE_LO: i32 = 15;

/// Upper edge of the histogram range, °C (exclusive); 8 bins of 2 °C.
pub const RANGE_HI: i32 = 31;

/// Milliseconds between two readings.
pub const READ_PERIOD_MS: u32 = 100;

/// What can go wrong in the application.
#[derive(Debug, Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum AppError {
    /// The sensor bus failed.
    Sensor,
    /// No hardware entropy source: the device refuses to release anything.
    NoEntropy,
    /// The privacy core refused (e.g. a full counter, bad parameters).
    Core(privq_core::Error),
}

impl From<privq_core::Error> for AppError {
    fn from(e: privq_core::Error) -> Self {
        AppError::Core(e)
    }
}

/// An empty histogram of [`BINS`] equal-width bins over `[RANGE_LO, RANGE_HI)` °C;
/// readings outside are tallied as under/overflow.
pub fn new_histogram() -> Result<Histogram<BINS>, AppError> {
    let lo = Fixed::from_int(RANGE_LO);
    let hi = Fixed::from_int(RANGE_HI);
    Ok(Histogram::equal_width(lo, hi, OutOfRange::Tally)?)
}

/// Reads `count` temperatures, one every [`READ_PERIOD_MS`], into `histogram`;
/// `on_reading` sees each one (e.g. for logging). Returns the last reading.
pub fn collect<I2C: I2c, D: DelayNs>(
    sensor: &mut TempSensor<I2C>,
    delay: &mut D,
    histogram: &mut Histogram<BINS>,
    count: u32,
    mut on_reading: impl FnMut(u32, Fixed),
) -> Result<Option<Fixed>, AppError> {
    let mut last = None;
    for n in 0..count {
        let celsius = sensor.read_celsius().map_err(|_| AppError::Sensor)?;
        histogram.record(celsius)?;
        on_reading(n, celsius);
        last = Some(celsius);
        delay.delay_ms(READ_PERIOD_MS);
    }
    Ok(last)
}

/// Releases every bin count with the Laplace mechanism on a grid at privacy `epsilon`.
///
/// One reading changes one count by one, so the count vector has L1 sensitivity 1 and
/// noise of scale 1/ε on every bin makes the whole histogram ε-differentially private
/// (with respect to adding or removing one reading).
pub fn privatize<R: Rng + CryptoRng + ?Sized>(
    histogram: &Histogram<BINS>,
    epsilon: Epsilon,
    rng: &mut R,
) -> Result<[Fixed; BINS], AppError> {
    let mechanism = GridLaplace::new(Fixed::ONE, epsilon)?;
    let mut released = [Fixed::ZERO; BINS];
    for (out, &count) in released.iter_mut().zip(histogram.counts()) {
        let count = i32::try_from(count).map_err(|_| privq_core::Error::OutOfRange)?;
        *out = mechanism.release(Fixed::from_int(count), rng)?;
    }
    Ok(released)
}

/// A [`DelayNs`] that only adds up the time it was asked to wait: in QEMU there is
/// nothing to wait for, and tests can check the pacing.
#[derive(Debug, Default)]
pub struct CountingDelay {
    /// Total nanoseconds requested.
    pub total_ns: u64,
}

impl DelayNs for CountingDelay {
    fn delay_ns(&mut self, ns: u32) {
        self.total_ns += u64::from(ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seed::qemu_test_only_rng;
    use crate::sensor::DEFAULT_ADDRESS;
    use crate::synthetic::SyntheticSensorBus;

    #[test]
    fn collects_paces_and_privatizes() {
        let mut sensor = TempSensor::new(SyntheticSensorBus::new(), DEFAULT_ADDRESS);
        let mut delay = CountingDelay::default();
        let mut histogram = new_histogram().unwrap();
        let mut seen = 0;
        collect(&mut sensor, &mut delay, &mut histogram, 96, |_, _| {
            seen += 1
        })
        .unwrap();
        assert_eq!(seen, 96);
        assert_eq!(
            histogram.total() + u64::from(histogram.underflow() + histogram.overflow()),
            96
        );
        assert_eq!(histogram.total(), 96, "the waveform stays inside 15..31 °C");
        assert_eq!(delay.total_ns, 96 * u64::from(READ_PERIOD_MS) * 1_000_000);

        let mut rng = qemu_test_only_rng();
        let eps = Epsilon::new(1, 2).unwrap();
        let released = privatize(&histogram, eps, &mut rng).unwrap();
        let grid = GridLaplace::new(Fixed::ONE, eps).unwrap().grid().to_bits();
        for value in released {
            assert_eq!(value.to_bits() % grid, 0, "released values lie on the grid");
        }
        // Reproducible with the fixed test seed.
        let again = privatize(&histogram, eps, &mut qemu_test_only_rng()).unwrap();
        assert_eq!(released, again);
    }
}

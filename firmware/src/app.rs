//! The application: every epoch, collect readings into a histogram, then release it
//! through the configured local randomizer, debiting the budget ledger first.

use embedded_hal::delay::DelayNs;
use privq_core::Fixed;
use privq_core::histogram::{Histogram, IntegerBins, OutOfRange};
use privq_core::ledger::{Ledger, LedgerStore};
use privq_core::local::QueryId;
use privq_core::rand_core::{CryptoRng, Rng};

use crate::release::{EpochRelease, modal_bin};
use crate::sensor::Thermometer;

/// Histogram bins (the randomizers' domain).
pub const BINS: usize = 64;

/// Lower edge of the histogram range, °C.
pub const RANGE_LO: i32 = 0;

/// Upper edge of the histogram range, °C (exclusive): 64 bins of 0.5 °C. Readings
/// outside are clamped into the first or last bin.
pub const RANGE_HI: i32 = 32;

/// Readings per epoch (one epoch = one release).
pub const READINGS_PER_EPOCH: u32 = 96;

/// Milliseconds between two readings.
pub const READ_PERIOD_MS: u32 = 100;

/// What can go wrong in the application.
#[derive(Debug, Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum AppError {
    /// The sensor bus failed.
    Sensor,
    /// No hardware entropy source: the device refuses to release anything.
    NoEntropy,
    /// No provisioned upload-frame key (feature `frames` on hardware): the device
    /// refuses to run rather than send unauthenticated or test-keyed frames.
    NoDeviceKey,
    /// The privacy core refused (budget exhausted, corrupted ledger, storage, …).
    Core(privq_core::Error),
}

impl From<privq_core::Error> for AppError {
    fn from(e: privq_core::Error) -> Self {
        AppError::Core(e)
    }
}

/// An empty histogram of [`BINS`] equal-width bins over `[RANGE_LO, RANGE_HI)` °C.
pub fn new_histogram() -> Result<Histogram<BINS>, AppError> {
    let lo = Fixed::from_int(RANGE_LO);
    let hi = Fixed::from_int(RANGE_HI);
    Ok(Histogram::equal_width(lo, hi, OutOfRange::Clamp)?)
}

/// The same bins over raw readings (1/128 °C units): exactly [`Histogram::bin_of`] of
/// [`raw_to_celsius`](crate::sensor::raw_to_celsius)`(raw)` for the histogram of
/// [`new_histogram`], in 32-bit integers (the core's general Q32.32 binning divides in 128
/// bits, which costs kilobytes of flash and thousands of cycles per reading on a Cortex-M0).
pub const RAW_BINS: IntegerBins<BINS> = match IntegerBins::new(RANGE_LO * 128, RANGE_HI * 128) {
    Ok(bins) => bins,
    Err(_) => panic!("the range is not a whole number of raw units per bin"),
};

/// Reads `count` temperatures, one every [`READ_PERIOD_MS`], into `histogram` (one of
/// [`new_histogram`]'s layout); `on_reading` sees each raw reading (e.g. for logging).
/// Returns the last reading in °C.
pub fn collect<T: Thermometer, D: DelayNs>(
    sensor: &mut T,
    delay: &mut D,
    histogram: &mut Histogram<BINS>,
    count: u32,
    mut on_reading: impl FnMut(u32, i16),
) -> Result<Option<Fixed>, AppError> {
    let mut last = None;
    for n in 0..count {
        let raw = sensor.read_raw().map_err(|_| AppError::Sensor)?;
        histogram.record_index(RAW_BINS.bin_clamped(i32::from(raw)))?;
        on_reading(n, raw);
        last = Some(crate::sensor::raw_to_celsius(raw));
        delay.delay_ms(READ_PERIOD_MS);
    }
    Ok(last)
}

/// Where the reports of an epoch go. The release calls [`reserve`](Self::reserve)
/// **before** it charges the ledger for a report and [`accept`](Self::accept) with
/// the report after, so a report is charged only once it has a place to go (an
/// outbox slot): never charged and then dropped.
pub trait ReportSink {
    /// Makes room for one more report of `len` bytes (e.g. by delivering pending
    /// upload frames). An error ends the release before this report is charged.
    fn reserve(&mut self, len: usize) -> Result<(), privq_core::Error>;

    /// Takes one charged report, for which [`reserve`](Self::reserve) made room.
    fn accept(&mut self, query: QueryId, report: &[u8]) -> Result<(), privq_core::Error>;
}

/// A [`ReportSink`] with unbounded room: every report goes to the closure.
pub struct EmitTo<F: FnMut(QueryId, &[u8])>(pub F);

impl<F: FnMut(QueryId, &[u8])> ReportSink for EmitTo<F> {
    fn reserve(&mut self, _len: usize) -> Result<(), privq_core::Error> {
        Ok(())
    }

    fn accept(&mut self, query: QueryId, report: &[u8]) -> Result<(), privq_core::Error> {
        (self.0)(query, report);
        Ok(())
    }
}

/// How an epoch ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EpochOutcome {
    /// The reports were released.
    Released {
        /// The device's modal bin this epoch (the private item of the frequency mechanisms).
        item: u32,
        /// Reports written.
        reports: u32,
    },
    /// The ledger refused the epoch (budget exhausted or ledger corrupted): nothing
    /// was drawn, debited or emitted.
    Refused(privq_core::Error),
}

/// One device: its sensor, pacing, budget ledger, release RNG and release policy.
/// The same code runs on the microcontroller, in QEMU and in host simulations of a
/// whole fleet (the end-to-end test).
#[derive(Debug)]
pub struct Device<T, D, S: LedgerStore, R, E> {
    /// The temperature sensor.
    pub sensor: T,
    /// Paces the readings.
    pub delay: D,
    /// The lifetime budget.
    pub ledger: Ledger<S>,
    /// The release RNG (cryptographically secure; seeded from hardware entropy on a board).
    pub rng: R,
    /// What each epoch releases.
    pub release: E,
    /// The current epoch's readings.
    pub histogram: Histogram<BINS>,
}

impl<T, D, S, R, E> Device<T, D, S, R, E>
where
    T: Thermometer,
    D: DelayNs,
    S: LedgerStore,
    R: Rng + CryptoRng,
    E: EpochRelease,
{
    /// A device with an empty histogram.
    pub fn new(
        sensor: T,
        delay: D,
        ledger: Ledger<S>,
        rng: R,
        release: E,
    ) -> Result<Self, AppError> {
        Ok(Device {
            sensor,
            delay,
            ledger,
            rng,
            release,
            histogram: new_histogram()?,
        })
    }

    /// Collects [`READINGS_PER_EPOCH`] readings into a fresh histogram, then releases
    /// it: every report goes to `sink` with its query id (room reserved before each
    /// charge). A refusal by the ledger is an [`EpochOutcome::Refused`], not an error.
    pub fn run_epoch(
        &mut self,
        epoch: u16,
        on_reading: impl FnMut(u32, i16),
        sink: &mut dyn ReportSink,
    ) -> Result<EpochOutcome, AppError> {
        self.histogram.clear();
        collect(
            &mut self.sensor,
            &mut self.delay,
            &mut self.histogram,
            READINGS_PER_EPOCH,
            on_reading,
        )?;
        let item = modal_bin(&self.histogram);
        match self.release.release(
            &mut self.ledger,
            &self.histogram,
            epoch,
            &mut self.rng,
            sink,
        ) {
            Ok(reports) => Ok(EpochOutcome::Released { item, reports }),
            Err(AppError::Core(
                e @ (privq_core::Error::BudgetExhausted | privq_core::Error::LedgerCorrupted),
            )) => Ok(EpochOutcome::Refused(e)),
            Err(e) => Err(e),
        }
    }
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
    extern crate std;

    use super::*;
    use crate::release::{lifetime_epsilon, selected};
    use crate::seed::fleet_device_rng;
    use crate::sensor::{DEFAULT_ADDRESS, TempSensor};
    use crate::store::{FlashStore, SimFlash};
    use crate::synthetic::SyntheticSensorBus;
    use std::vec::Vec;

    #[test]
    fn raw_bins_are_the_histogram_bins_for_every_reading() {
        let h = new_histogram().unwrap();
        for raw in i16::MIN..=i16::MAX {
            let celsius = crate::sensor::raw_to_celsius(raw);
            let bin = RAW_BINS.bin_clamped(i32::from(raw));
            assert_eq!(Some(bin), h.bin_of(celsius).unwrap(), "{raw}");
        }
    }

    #[test]
    fn collects_and_paces() {
        let mut sensor = TempSensor::new(SyntheticSensorBus::new(), DEFAULT_ADDRESS);
        let mut delay = CountingDelay::default();
        let mut histogram = new_histogram().unwrap();
        let mut seen = 0;
        collect(&mut sensor, &mut delay, &mut histogram, 96, |_, _| {
            seen += 1
        })
        .unwrap();
        assert_eq!(seen, 96);
        assert_eq!(histogram.total(), 96);
        assert_eq!(delay.total_ns, 96 * u64::from(READ_PERIOD_MS) * 1_000_000);
        // 21.5 ± 5.5 °C in 0.5 °C bins: bins 32..=54 only.
        for (i, &c) in histogram.counts().iter().enumerate() {
            assert!(c == 0 || (32..=54).contains(&i), "bin {i}: {c}");
        }
    }

    fn device(
        d: u64,
    ) -> Device<
        TempSensor<SyntheticSensorBus>,
        CountingDelay,
        FlashStore<SimFlash<512>>,
        privq_core::rng::ChaCha12,
        crate::release::Selected,
    > {
        let ledger = Ledger::open(
            FlashStore::new(SimFlash::new()),
            lifetime_epsilon().unwrap(),
        )
        .unwrap();
        Device::new(
            TempSensor::new(SyntheticSensorBus::for_device(d), DEFAULT_ADDRESS),
            CountingDelay::default(),
            ledger,
            fleet_device_rng(9, d),
            selected().unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn epochs_release_until_the_budget_is_spent_and_are_reproducible() {
        let run = |d| {
            let mut dev = device(d);
            let mut reports = Vec::new();
            let mut outcomes = Vec::new();
            for epoch in 0..5 {
                outcomes.push(
                    dev.run_epoch(
                        epoch,
                        |_, _| {},
                        &mut EmitTo(|q, r| reports.push((q, r.to_vec()))),
                    )
                    .unwrap(),
                );
            }
            (outcomes, reports)
        };
        let (outcomes, reports) = run(3);
        assert!(
            outcomes[..4]
                .iter()
                .all(|o| matches!(o, EpochOutcome::Released { .. }))
        );
        assert_eq!(
            outcomes[4],
            EpochOutcome::Refused(privq_core::Error::BudgetExhausted)
        );
        assert_eq!(
            reports.len(),
            4 * selected().unwrap().reports_per_epoch() as usize
        );
        assert_eq!(run(3), (outcomes, reports.clone()));
        assert_ne!(run(4).1, reports, "another device, other reports");
    }
}

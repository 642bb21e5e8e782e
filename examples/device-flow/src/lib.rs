//! One reading period of a privq device, written only against privq-core's public API:
//! raw readings → histogram bins (32-bit integers) → the modal bin → OUE at ε = 1, after the lifetime ledger in NOR
//! flash is debited → a wire-format report → an HMAC-SHA-256 upload frame whose epoch comes
//! from counters persisted in a second flash region.
//!
//! Generic over `embedded_storage::nor_flash::NorFlash` (a board passes its HAL's flash and
//! two regions of whole pages) and over any `CryptoRng` (a board seeds it from its hardware
//! RNG, e.g. into `privq_core::rng::ChaCha12`). The tests run it on
//! `privq_core::flash_store::RamFlash` with a fixed seed.
//!
//! `examples/` holds the size-measurement images of the documented path (`tools/device-sizes.sh`).
#![no_std]

use embedded_storage::nor_flash::NorFlash;
use privq_core::flash_store::FlashStore;
use privq_core::histogram::{Histogram, IntegerBins};
use privq_core::ledger::Ledger;
use privq_core::local::{QueryId, UeVariant, UnaryEncoding};
use privq_core::upload::{DeviceKey, Outbox};
use privq_core::upload_counters::UploadCounters;
use privq_core::{Epsilon, Error};
use rand_core::{CryptoRng, Rng};

/// Bins: 0.5 °C over [5, 37) °C.
pub const BINS: usize = 64;
/// The bins over raw readings in the sensor's 1/16 °C units, 8 per bin.
pub const READING_BINS: IntegerBins<BINS> = match IntegerBins::new(5 * 16, 37 * 16) {
    Ok(bins) => bins,
    Err(_) => panic!("not a whole number of raw units per bin"), // a compile error
};
/// Bytes of an OUE report over 64 bins (12-byte header + 8 bytes of bits).
pub const REPORT_LEN: usize = 20;
/// The outbox: 2 frames, one report each with its length prefix.
pub type DeviceOutbox = Outbox<2, { 2 * (REPORT_LEN + 2) }>;
/// The longest frame the outbox writes.
pub const FRAME_LEN: usize = DeviceOutbox::MAX_FRAME_LEN;

/// A device: its ledger and upload counters in flash, its outbox in RAM.
pub struct Device<L: NorFlash, C: NorFlash> {
    ledger: Ledger<FlashStore<L>>,
    counters: UploadCounters<FlashStore<C>>,
    outbox: DeviceOutbox,
    oue: UnaryEncoding,
    key: DeviceKey,
}

impl<L: NorFlash, C: NorFlash> Device<L, C> {
    /// Boots: opens the ledger (lifetime ε = 4) and the upload counters, each on its own
    /// flash region (whole pages: a flag page and at least two log pages).
    ///
    /// Each store is `FlashStore::new`, so it uses **all** of the flash it is given (its
    /// capacity in whole pages) and its first store erases all of it: pass a driver or
    /// window that covers only the store's region, never a board's whole program flash
    /// (or build the stores with `FlashStore::in_region(flash, start..end)` instead). With
    /// one driver for both stores, `SharedFlash::new(driver, [ledger, counters])` checks the
    /// two regions disjoint and its `region(0)` and `region(1)` are such windows.
    pub fn boot(
        ledger_flash: L,
        counter_flash: C,
        device: u64,
        key: DeviceKey,
    ) -> Result<Self, Error> {
        let ledger = Ledger::open(FlashStore::new(ledger_flash), Epsilon::new(4, 1)?)?;
        let counters = UploadCounters::open(FlashStore::new(counter_flash))?;
        let outbox = DeviceOutbox::new(device, counters.next_sequence());
        let oue = UnaryEncoding::new(UeVariant::Optimized, Epsilon::new(1, 1)?, BINS as u32)?;
        Ok(Device {
            ledger,
            counters,
            outbox,
            oue,
            key,
        })
    }

    /// The ε spent so far, as (numerator, denominator).
    pub fn spent(&self) -> (u64, u64) {
        (self.ledger.spent().num(), self.ledger.spent().den())
    }

    /// One period: bins the raw readings (1/16 °C; outliers clamp), releases the modal bin
    /// with OUE at ε = 1 (the ledger is debited and persisted first; [`Error::BudgetExhausted`]
    /// once the lifetime ε is spent), and seals the report into an authenticated frame written
    /// to `frame`. Returns the frame's length.
    pub fn period<R: Rng + CryptoRng>(
        &mut self,
        readings: &[i32],
        rng: &mut R,
        frame: &mut [u8; FRAME_LEN],
    ) -> Result<usize, Error> {
        let mut histogram = Histogram::<BINS>::categorical()?;
        for &raw in readings {
            histogram.record_raw_clamped(&READING_BINS, raw);
        }
        let modal = histogram.modal_bin();
        let next = self
            .outbox
            .next_sequence()
            .ok_or(Error::SequenceExhausted)?;
        let epoch = self.counters.begin_epoch(next)?;
        // Pay ε only for a report the outbox can take.
        if !self.outbox.has_room(epoch, REPORT_LEN) {
            return Err(Error::OutboxFull);
        }
        let mut report = [0u8; REPORT_LEN];
        let len = self
            .ledger
            .release(&self.oue, &modal, QueryId(1), rng, &mut report)?;
        self.outbox
            .push(epoch, report.get(..len).ok_or(Error::BufferTooSmall)?)?;
        self.outbox.seal()?;
        let written = self
            .outbox
            .write_front(&self.key, frame)?
            .ok_or(Error::NotPending)?;
        // A real device sends the frame and acknowledges it when the collector answers;
        // here it counts as delivered: the front frame's sequence number is acknowledged.
        let sent = self
            .outbox
            .front()
            .ok_or(Error::NotPending)?
            .header
            .sequence;
        self.outbox.acknowledge(sent)?;
        Ok(written)
    }

    /// Shuts down: gives the two flashes back (a reboot reopens them).
    pub fn into_flash(self) -> (L, C) {
        (
            self.ledger.into_store().into_flash(),
            self.counters.into_store().into_flash(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use privq_core::flash_store::RamFlash;
    use privq_core::report::{self, MechanismId};
    use privq_core::rng::ChaCha12;
    use privq_core::upload::open;
    use rand_core::SeedableRng;

    fn readings() -> [i32; 4] {
        [21 * 16, 21 * 16, 30 * 16, 50 * 16] // 1/16 °C
    }

    #[test]
    fn periods_release_until_the_budget_is_spent_and_survive_reboots() {
        let key = DeviceKey::new([9; 32]); // a fixed key: tests only
        let mut rng = ChaCha12::from_seed([3; 32]); // a fixed seed: tests only
        let (mut ledger_flash, mut counter_flash) =
            (RamFlash::<768>::new(), RamFlash::<768>::new());
        let mut frame = [0u8; FRAME_LEN];
        let mut epochs = [0u32; 4];
        for (i, epoch) in epochs.iter_mut().enumerate() {
            // A reboot before every period: the ledger and the counters come back from flash.
            let mut device =
                Device::boot(&mut ledger_flash, &mut counter_flash, 7, key.clone()).unwrap();
            assert_eq!(device.spent(), (i as u64, 1));
            let n = device.period(&readings(), &mut rng, &mut frame).unwrap();
            let opened = open(&frame[..n], &key).unwrap();
            *epoch = opened.header.epoch;
            let r = report::decode(opened.reports().next().unwrap()).unwrap();
            assert_eq!(r.header.mechanism, MechanismId::Oue);
        }
        assert_eq!(epochs, [0, 1, 2, 3], "no epoch twice across reboots");
        let mut device = Device::boot(&mut ledger_flash, &mut counter_flash, 7, key).unwrap();
        assert_eq!(
            device.period(&readings(), &mut rng, &mut frame),
            Err(Error::BudgetExhausted)
        );
        // Erasing the ledger's log pages does not give the budget back.
        let (ledger_flash, _) = device.into_flash();
        ledger_flash.erase_range(256..768);
        let mut device =
            Device::boot(ledger_flash, &mut counter_flash, 7, DeviceKey::new([9; 32])).unwrap();
        assert_eq!(
            device.period(&readings(), &mut rng, &mut frame),
            Err(Error::LedgerCorrupted)
        );
    }
}

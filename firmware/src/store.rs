//! The budget ledger in NOR flash.
//!
//! [`privq_core::ledger::Ledger`] persists a 41-byte record through the
//! [`LedgerStore`] trait. This module maps that onto NOR-flash semantics
//! ([`NorFlash`]: erase a page to `0xFF`, then program bits from 1 to 0 only), with
//! two regions:
//!
//! * a **provisioning flag** (one word at offset 0, in its own erase page that this
//!   store never erases): written together with the first record, it says "this
//!   device has had a ledger";
//! * a **record log** (the pages after it): each debit appends the new record to the
//!   next free slot, so a page is erased only once per `slots` debits. When the log is
//!   full it is erased and restarted at slot 0.
//!
//! [`LedgerStore::load`] returns the newest slot, or `None` only while the flag and the
//! log are both erased (a device's very first boot). **Erased flash after the first
//! boot does not read as a fresh ledger**: with the flag set and no record (the log was
//! erased, by an attacker or by a power cut between the log erase and the rewrite), it
//! returns an all-`0xFF` record, which fails the core's checks, so the ledger is
//! corrupted and refuses every release (fail closed; see the core's `ledger` docs).
//! A torn (partly programmed) newest slot likewise fails the CRC and fails closed.
//!
//! [`SimFlash`] is a RAM-backed simulation of such flash for QEMU and host tests.
//! It is **not persistent** across a QEMU run; tests simulate a reboot by reopening a
//! ledger on the same [`SimFlash`]. A board implements [`NorFlash`] for its flash
//! controller (e.g. the nRF51 NVMC) and keeps the same layout.

use privq_core::ledger::{LEDGER_RECORD_LEN, LedgerStore};

/// NOR-flash-like storage (the subset of `embedded-storage`'s `NorFlash` that the
/// ledger needs). Offsets are bytes from the start of the region.
pub trait NorFlash {
    /// The flash driver's error.
    type Error;
    /// Erase granularity (bytes); erased bytes read `0xFF`.
    const ERASE_SIZE: usize;
    /// Program granularity (bytes); writes must be aligned to it.
    const WRITE_SIZE: usize;

    /// Region size in bytes (a multiple of [`ERASE_SIZE`](Self::ERASE_SIZE)).
    fn capacity(&self) -> usize;
    /// Reads `buf.len()` bytes at `offset`.
    fn read(&mut self, offset: usize, buf: &mut [u8]) -> Result<(), Self::Error>;
    /// Erases the pages covering `from..to` (both page aligned).
    fn erase(&mut self, from: usize, to: usize) -> Result<(), Self::Error>;
    /// Programs `data` at `offset` (aligned); can only clear bits.
    fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), Self::Error>;
}

/// A flash borrowed for the program's lifetime (e.g. from a `static`) is a flash too.
impl<F: NorFlash + ?Sized> NorFlash for &mut F {
    type Error = F::Error;
    const ERASE_SIZE: usize = F::ERASE_SIZE;
    const WRITE_SIZE: usize = F::WRITE_SIZE;

    fn capacity(&self) -> usize {
        (**self).capacity()
    }

    fn read(&mut self, offset: usize, buf: &mut [u8]) -> Result<(), Self::Error> {
        (**self).read(offset, buf)
    }

    fn erase(&mut self, from: usize, to: usize) -> Result<(), Self::Error> {
        (**self).erase(from, to)
    }

    fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), Self::Error> {
        (**self).write(offset, data)
    }
}

/// What can go wrong with [`SimFlash`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum FlashError {
    /// Offset or length outside the region, or not aligned.
    Bounds,
    /// A write would have to turn a 0 bit back into 1 (needs an erase first).
    NotErased,
    /// A simulated hardware fault ([`SimFlash::set_failing`]).
    Fault,
}

/// `N` bytes of simulated NOR flash in RAM: 256-byte pages, 4-byte words; a write
/// that would need an erase is an error (real NOR would silently AND the bits).
#[derive(Debug, Clone)]
pub struct SimFlash<const N: usize> {
    bytes: [u8; N],
    erases: u32,
    writes: u32,
    failing: bool,
}

impl<const N: usize> Default for SimFlash<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> SimFlash<N> {
    /// Factory-fresh (fully erased) flash.
    pub const fn new() -> Self {
        SimFlash {
            bytes: [0xff; N],
            erases: 0,
            writes: 0,
            failing: false,
        }
    }

    /// The raw contents.
    pub fn bytes(&self) -> &[u8; N] {
        &self.bytes
    }

    /// The raw contents, mutably (tests: corrupt or erase behind the store's back).
    pub fn bytes_mut(&mut self) -> &mut [u8; N] {
        &mut self.bytes
    }

    /// Page erases so far.
    pub fn erases(&self) -> u32 {
        self.erases
    }

    /// Program operations so far.
    pub fn writes(&self) -> u32 {
        self.writes
    }

    /// Makes every later operation fail (simulated flash fault).
    pub fn set_failing(&mut self, failing: bool) {
        self.failing = failing;
    }

    fn range(&self, offset: usize, len: usize) -> Result<core::ops::Range<usize>, FlashError> {
        if self.failing {
            return Err(FlashError::Fault);
        }
        let end = offset.checked_add(len).ok_or(FlashError::Bounds)?;
        if end > N {
            return Err(FlashError::Bounds);
        }
        Ok(offset..end)
    }
}

impl<const N: usize> NorFlash for SimFlash<N> {
    type Error = FlashError;
    const ERASE_SIZE: usize = 256;
    const WRITE_SIZE: usize = 4;

    fn capacity(&self) -> usize {
        N
    }

    fn read(&mut self, offset: usize, buf: &mut [u8]) -> Result<(), FlashError> {
        let r = self.range(offset, buf.len())?;
        let src = self.bytes.get(r).ok_or(FlashError::Bounds)?;
        // Same length (`range`); a zip copy links no length-mismatch panic (core::fmt).
        for (dst, &b) in buf.iter_mut().zip(src) {
            *dst = b;
        }
        Ok(())
    }

    fn erase(&mut self, from: usize, to: usize) -> Result<(), FlashError> {
        let r = self.range(from, to.saturating_sub(from))?;
        if !from.is_multiple_of(Self::ERASE_SIZE) || !to.is_multiple_of(Self::ERASE_SIZE) {
            return Err(FlashError::Bounds);
        }
        self.bytes.get_mut(r).ok_or(FlashError::Bounds)?.fill(0xff);
        self.erases += ((to - from) / Self::ERASE_SIZE) as u32;
        Ok(())
    }

    fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), FlashError> {
        let r = self.range(offset, data.len())?;
        if !offset.is_multiple_of(Self::WRITE_SIZE) || !data.len().is_multiple_of(Self::WRITE_SIZE)
        {
            return Err(FlashError::Bounds);
        }
        let cells = self.bytes.get_mut(r).ok_or(FlashError::Bounds)?;
        if cells.iter().zip(data).any(|(&old, &new)| old & new != new) {
            return Err(FlashError::NotErased);
        }
        for (cell, &b) in cells.iter_mut().zip(data) {
            *cell = b;
        }
        self.writes += 1;
        Ok(())
    }
}

/// The value of the provisioning flag once set.
pub const PROVISIONED: [u8; 4] = *b"PQPV";

/// The ledger's [`LedgerStore`] on a [`NorFlash`] region laid out as described in the
/// [module docs](self): page 0 holds the provisioning flag, the remaining pages the
/// record log.
#[derive(Debug)]
pub struct FlashLedgerStore<F> {
    flash: F,
}

/// What can go wrong in a [`FlashLedgerStore`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreError<E> {
    /// The region is too small for the flag page plus one log slot.
    Layout,
    /// The flash driver failed.
    Flash(E),
}

/// Bytes in the largest slot a store uses; a slot is the record padded to the write size.
const MAX_SLOT: usize = 64;

impl<F: NorFlash> FlashLedgerStore<F> {
    /// A store on `flash`. The region must hold at least two erase pages.
    pub fn new(flash: F) -> Self {
        FlashLedgerStore { flash }
    }

    /// Gives the flash back (e.g. to reopen it after a simulated reboot).
    pub fn into_flash(self) -> F {
        self.flash
    }

    /// The flash.
    pub fn flash(&self) -> &F {
        &self.flash
    }

    /// The flash, mutably (tests: fault injection).
    pub fn flash_mut(&mut self) -> &mut F {
        &mut self.flash
    }

    /// Bytes per log slot: the record rounded up to the write size.
    pub const fn slot_len() -> usize {
        LEDGER_RECORD_LEN.div_ceil(F::WRITE_SIZE) * F::WRITE_SIZE
    }

    /// Offset of the record log.
    fn log_start() -> usize {
        F::ERASE_SIZE
    }

    /// Slots in the log.
    pub fn slots(&self) -> usize {
        self.flash.capacity().saturating_sub(Self::log_start()) / Self::slot_len()
    }

    fn check_layout(&self) -> Result<(), StoreError<F::Error>> {
        if self.slots() == 0 || Self::slot_len() > MAX_SLOT || F::WRITE_SIZE > 4 {
            return Err(StoreError::Layout);
        }
        Ok(())
    }

    fn read_slot(&mut self, slot: usize) -> Result<[u8; LEDGER_RECORD_LEN], StoreError<F::Error>> {
        let mut record = [0u8; LEDGER_RECORD_LEN];
        let offset = Self::log_start() + slot * Self::slot_len();
        self.flash
            .read(offset, &mut record)
            .map_err(StoreError::Flash)?;
        Ok(record)
    }

    /// The number of written slots (slots are written in order, so the log is a prefix).
    fn used_slots(&mut self) -> Result<usize, StoreError<F::Error>> {
        let mut used = 0;
        for slot in 0..self.slots() {
            if self.read_slot(slot)?.iter().all(|&b| b == 0xff) {
                break;
            }
            used = slot + 1;
        }
        Ok(used)
    }

    /// Whether the provisioning flag is set. Anything but an erased word counts as set
    /// (a torn flag write must not make the device fresh again).
    pub fn is_provisioned(&mut self) -> Result<bool, StoreError<F::Error>> {
        let mut flag = [0u8; 4];
        self.flash.read(0, &mut flag).map_err(StoreError::Flash)?;
        Ok(flag != [0xff; 4])
    }
}

impl<F: NorFlash> LedgerStore for FlashLedgerStore<F> {
    type Error = StoreError<F::Error>;

    fn load(&mut self) -> Result<Option<[u8; LEDGER_RECORD_LEN]>, Self::Error> {
        self.check_layout()?;
        let used = self.used_slots()?;
        if used > 0 {
            return self.read_slot(used - 1).map(Some);
        }
        if self.is_provisioned()? {
            // Provisioned but no record: never "fresh". The erased record fails the
            // core's magic/CRC check and the ledger refuses everything.
            return Ok(Some([0xff; LEDGER_RECORD_LEN]));
        }
        Ok(None)
    }

    fn store(&mut self, record: &[u8; LEDGER_RECORD_LEN]) -> Result<(), Self::Error> {
        self.check_layout()?;
        let mut slot = self.used_slots()?;
        if slot == self.slots() {
            let end = self.flash.capacity() / F::ERASE_SIZE * F::ERASE_SIZE;
            self.flash
                .erase(Self::log_start(), end)
                .map_err(StoreError::Flash)?;
            slot = 0;
        }
        let mut padded = [0xffu8; MAX_SLOT];
        let body = padded
            .get_mut(..LEDGER_RECORD_LEN)
            .ok_or(StoreError::Layout)?;
        body.copy_from_slice(record);
        let data = padded.get(..Self::slot_len()).ok_or(StoreError::Layout)?;
        let offset = Self::log_start() + slot * Self::slot_len();
        self.flash.write(offset, data).map_err(StoreError::Flash)?;
        // Flag after the record: a power cut in between leaves an unflagged record,
        // which `load` still returns (it is the newest slot).
        if !self.is_provisioned()? {
            self.flash
                .write(0, &PROVISIONED)
                .map_err(StoreError::Flash)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use privq_core::ledger::Ledger;
    use privq_core::{Epsilon, Error};

    type Flash = SimFlash<512>;

    fn eps(n: u64, d: u64) -> Epsilon {
        Epsilon::new(n, d).unwrap()
    }

    fn open(flash: Flash) -> Ledger<FlashLedgerStore<Flash>> {
        Ledger::open(FlashLedgerStore::new(flash), eps(4, 1)).unwrap()
    }

    #[test]
    fn sim_flash_behaves_like_nor() {
        let mut f = Flash::new();
        f.write(0, &[0x0f, 0xff, 0xff, 0xff]).unwrap();
        assert_eq!(
            f.write(0, &[0xff, 0xff, 0xff, 0xff]),
            Err(FlashError::NotErased)
        );
        f.write(0, &[0x0e, 0xff, 0xff, 0xff]).unwrap(); // clearing more bits is fine
        assert_eq!(f.write(2, &[0; 4]), Err(FlashError::Bounds));
        assert_eq!(f.write(512, &[0; 4]), Err(FlashError::Bounds));
        assert_eq!(f.erase(0, 100), Err(FlashError::Bounds));
        f.erase(0, 256).unwrap();
        assert_eq!(f.bytes()[0], 0xff);
        assert_eq!(f.erases(), 1);
    }

    #[test]
    fn first_boot_is_fresh_and_the_budget_survives_reboots() {
        let mut ledger = open(Flash::new());
        assert!(!ledger.is_corrupted());
        assert!(ledger.store_mut().is_provisioned().unwrap());
        ledger.debit(eps(1, 1)).unwrap();
        ledger.debit(eps(1, 2)).unwrap();
        // Reboot: the spent total is read back.
        let mut ledger = open(ledger.into_store().into_flash());
        assert_eq!((ledger.spent().num(), ledger.spent().den()), (3, 2));
        ledger.debit(eps(5, 2)).unwrap();
        assert_eq!(ledger.debit(eps(1, 100)), Err(Error::BudgetExhausted));
        let ledger = open(ledger.into_store().into_flash());
        assert!(!ledger.can_spend(eps(1, 1000)));
    }

    #[test]
    fn the_log_wraps_with_an_erase_and_keeps_the_newest_record() {
        let mut ledger = Ledger::open(FlashLedgerStore::new(Flash::new()), eps(100, 1)).unwrap();
        let slots = ledger.store().slots();
        assert_eq!(slots, 256 / 44);
        for _ in 0..(3 * slots) {
            ledger.debit(eps(1, 1)).unwrap();
        }
        let flash = ledger.into_store().into_flash();
        assert_eq!(flash.erases(), 3);
        let ledger = Ledger::open(FlashLedgerStore::new(flash), eps(100, 1)).unwrap();
        assert_eq!(ledger.spent().num(), 3 * slots as u64);
    }

    #[test]
    fn upload_counters_survive_reboots_and_fail_closed_on_erased_flash() {
        use privq_core::upload_counters::UploadCounters;
        let mut c = UploadCounters::open(FlashLedgerStore::new(Flash::new())).unwrap();
        assert_eq!(c.begin_epoch(0), Ok(0));
        assert_eq!(c.begin_epoch(2), Ok(1));
        // Reboot: the RAM outbox is gone, the counters are read back.
        let mut c =
            UploadCounters::open(FlashLedgerStore::new(c.into_store().into_flash())).unwrap();
        assert_eq!((c.next_epoch(), c.next_sequence()), (2, 2));
        assert_eq!(c.begin_epoch(2), Ok(2));
        let mut flash = c.into_store().into_flash();
        flash.erase(256, 512).unwrap();
        assert_eq!(
            UploadCounters::open(FlashLedgerStore::new(flash)).err(),
            Some(Error::CountersCorrupted)
        );
    }

    #[test]
    fn erased_flash_after_first_boot_is_not_a_fresh_ledger() {
        let mut ledger = open(Flash::new());
        ledger.debit(eps(4, 1)).unwrap();
        let mut flash = ledger.into_store().into_flash();
        // An attacker (or a power cut mid-compaction) erases the record log.
        flash.erase(256, 512).unwrap();
        let mut ledger = open(flash);
        assert!(ledger.is_corrupted());
        assert_eq!(ledger.debit(eps(1, 100)), Err(Error::LedgerCorrupted));
    }

    #[test]
    fn a_torn_or_corrupted_newest_record_fails_closed() {
        let mut ledger = open(Flash::new());
        ledger.debit(eps(1, 1)).unwrap();
        let flash = ledger.into_store().into_flash();
        // The newest record is slot 1 (the fresh record is slot 0).
        let slot = 256 + 44;
        let mut bit_cleared = flash.clone();
        bit_cleared.bytes_mut()[slot] &= !0x10; // 'P' of the magic
        let mut torn = flash.clone();
        torn.bytes_mut()[slot + 30..slot + 41].fill(0xff); // the tail never programmed
        for flash in [bit_cleared, torn] {
            let mut ledger = open(flash);
            assert!(ledger.is_corrupted());
            assert_eq!(ledger.debit(eps(1, 100)), Err(Error::LedgerCorrupted));
        }
    }

    #[test]
    fn a_torn_provisioning_flag_still_counts_as_provisioned() {
        let mut flash = Flash::new();
        flash.write(0, &[b'P', 0xff, 0xff, 0xff]).unwrap();
        let ledger = open(flash);
        assert!(ledger.is_corrupted());
    }

    #[test]
    fn flash_faults_are_storage_errors() {
        let mut flash = Flash::new();
        flash.set_failing(true);
        assert!(matches!(
            Ledger::open(FlashLedgerStore::new(flash), eps(1, 1)),
            Err(Error::Storage)
        ));
        let mut ledger = open(Flash::new());
        ledger.store_mut().flash_mut().set_failing(true);
        assert_eq!(ledger.debit(eps(1, 1)), Err(Error::Storage));
        // Failing closed: the amount counts as spent in memory.
        assert_eq!(ledger.spent().num(), 1);
    }

    #[test]
    fn a_borrowed_flash_keeps_the_ledger_across_reopens() {
        let mut flash = Flash::new();
        let mut ledger = Ledger::open(FlashLedgerStore::new(&mut flash), eps(4, 1)).unwrap();
        ledger.debit(eps(3, 1)).unwrap();
        let _ = ledger.into_store();
        assert!(flash.writes() >= 3); // fresh record, flag, debit
        let ledger = Ledger::open(FlashLedgerStore::new(&mut flash), eps(4, 1)).unwrap();
        assert_eq!(ledger.spent().num(), 3);
    }

    #[test]
    fn a_region_without_room_for_the_log_is_refused() {
        let store = FlashLedgerStore::new(SimFlash::<256>::new());
        assert!(matches!(
            Ledger::open(store, eps(1, 1)),
            Err(Error::Storage)
        ));
    }
}

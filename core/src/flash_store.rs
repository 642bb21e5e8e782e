//! A fail-closed, wear-levelled [`LedgerStore`] on NOR flash (cargo feature `flash-ledger`).
//!
//! [`FlashStore`] keeps the 41-byte records of a [`Ledger`](crate::ledger::Ledger) (or of the
//! [`UploadCounters`](crate::upload_counters::UploadCounters)) in a region of any
//! [`embedded_storage::nor_flash::NorFlash`]: erase a page to `0xFF`, program each word once.
//! It is written for an attacker who can **erase** whole erase pages (a debugger's page
//! erase), for **bit damage** (flips, marginal cells, an attacker who can only clear bits of
//! programmed words) and for **power cuts at any instant**. One who can program arbitrary bits
//! can forge a record, and one who can erase and re-program can **replay** an old image of a
//! page: both are out of scope (the record is checked, not signed, and nothing on flash alone
//! can tell an old image from the current one). Where that matters, lock the region with the
//! MCU's write protection or read-out/debug protection, or bind the log to a monotonic counter
//! the attacker cannot roll back (an OTP counter, a secure element).
//!
//! # Layout
//!
//! The region (whole erase pages) is one **flag page** followed by 2 to 32 **log pages**:
//!
//! * the flag page holds the provisioning word `PQPV` at its start. The store writes it
//!   with the first record and **never erases this page**. Once it is set (or any log page's
//!   formatted word), a region
//!   without a valid record reads as a record of `0xFF` bytes, which fails the ledger's and the
//!   counters' checks: erased flash after the first boot never looks like a fresh device
//!   ([`Ledger::open`](crate::ledger::Ledger::open) marks the ledger corrupted and it refuses every
//!   release; [`UploadCounters::open`](crate::upload_counters::UploadCounters::open) fails with
//!   [`Error::CountersCorrupted`]). Only a region with the
//!   flag **and** every log page erased is a new device: every word the store ever programs
//!   (flag, formatted, closed and commit words, slot bodies) reads erased, torn slots of an
//!   interrupted first store aside. An erase-only attacker erases whole pages, so this is the
//!   same as the whole region erased. Erase the region when the device is first flashed (a
//!   mass erase): leftover data from earlier firmware makes the store refuse, not start fresh.
//! * each log page holds [`SLOTS_PER_PAGE`](FlashStore::SLOTS_PER_PAGE) slots of
//!   [`SLOT_LEN`](FlashStore::SLOT_LEN) bytes, then a **formatted** word `PQFM` (programmed
//!   into every log page at provisioning, and into a page again right after each erase) and,
//!   in its last word, a **closed** marker.
//!   A slot is a body (a write counter (u32 LE), the record, and a CRC-32 of both, padded with
//!   `0xFF` to the write size) and then a **commit word** (all bits cleared), programmed after
//!   the body. Every store programs the next erased slot with the counter plus one; the newest
//!   record is the committed slot with the highest counter.
//! * A slot whose commit word is erased is a **torn write** (the store was cut before it
//!   committed, so it never returned): it is skipped. A committed slot whose CRC fails is
//!   **corruption** (a bit flip, a marginal cell, bits cleared on purpose): if it is in the
//!   page of the newest valid record, the store fails closed (`load` returns the `0xFF`
//!   record, `store` refuses with [`StoreError::Tampered`]) instead of falling back to an
//!   older record, which would give budget back or hand an upload epoch out twice. Turning a
//!   committed slot into an uncommitted one takes 0→1 transitions, i.e. an erase of its page,
//!   which the closed markers catch. Damage in another page is tolerated: a record newer than
//!   the newest valid one could only be there if that store closed the newest record's page
//!   before returning, and that page is not closed; a power cut during the store's own erase
//!   of the next ring page leaves exactly such damage.
//!
//! # Wear levelling and power cuts
//!
//! The pages are used in a ring. When the active page is full, the store erases the next page
//! (which holds only older records), writes the new record there, and then programs the
//! full page's closed marker. Each page is thus erased once per `log pages ×
//! SLOTS_PER_PAGE` stores, and the store never erases the page that holds the newest record:
//!
//! * a cut while a slot's body is programmed, or before its commit word is, leaves a torn
//!   write (commit word erased); it is skipped, and the newest valid record is the one before
//!   it (that store never returned, so the caller never released anything on its strength:
//!   see [`LedgerStore::store`]); a cut while the commit word is programmed leaves it erased
//!   (torn) or not (committed, and the body is complete);
//! * a cut during the erase of the next page leaves the newest record intact in the full page,
//!   and the next store erases that page again;
//! * a cut before a formatted word or a closed marker is written is repaired by the next store,
//!   which formats every log page without a formatted word and closes every page other than
//!   its own that still holds records, before it returns.
//!
//! Hence when [`store`](LedgerStore::store) returns, every page but the newest record's is
//! closed, and the provisioning word is set. Erasing the newest record's page (with or without
//! any other log page, or the flag page) leaves either no valid record or a newest valid record
//! in a closed page: both read as the `0xFF` record, so the device fails closed instead of
//! getting spent budget back or an upload epoch again. Only erasing the flag page together with
//! every log page resets the device; place the region where a page erase needs privileges the
//! attacker lacks (write protection, read-out protection) if that matters.
//!
//! # Requirements on the flash
//!
//! * **Erased flash reads `0xFF`** and programming only clears bits (NOR). The store does not
//!   check this: on flash whose erased state reads `0x00` (e.g. the STM32L0/L1 data EEPROM and
//!   program flash) every slot reads as programmed and the device never provisions (it fails
//!   closed, [`StoreError::Tampered`]). Such flash needs a `NorFlash` wrapper that inverts
//!   the bits.
//! * [`NorFlash::ERASE_SIZE`] must be the **smallest unit an attacker can erase**. If the
//!   hardware can erase less than that (sub-page or sector erases behind a larger page) or an
//!   erase can be glitched into clearing only part of a page, an attacker can erase a closed
//!   marker alone and reopen an old page: partial erases are out of scope. The same holds
//!   for a power cut during the store's own erase of the next ring page on flash that can
//!   leave that page's closed marker erased but older slots intact (an erase that is not
//!   all-or-nothing nor front to back), followed by an attacker's erase of the newest page.
//! * `WRITE_SIZE` at most 64 bytes (a slot body of 49 bytes and each marker are rounded up
//!   to it: 56-byte slots for 4-byte words, 128 bytes for 64-byte words); `READ_SIZE`
//!   must divide the rounded body and marker; a page must hold a slot and two marker words.
//! * On flash with **ECC** (e.g. STM32 families with 64-bit ECC words), reading a torn word
//!   may raise a double-bit error: if the driver returns it, `load` stops with
//!   [`Error::Storage`] and nothing is released; if the MCU raises a bus fault or NMI
//!   instead, the device resets on every boot. Both are safe (no budget comes back) but a
//!   power cut at the wrong instant then bricks the ledger: a denial of service. Handle the
//!   ECC fault in the HAL (report it as a read error) where that matters.
//!
//! One more limit on the safe side: a slot whose programming was cut before any bit changed
//! reads as erased and is programmed again by the next store (flash that must never see a
//! second program of a word needs the slot skipped instead).
//!
//! The tests (`core/tests/flash_store.rs`) cut the power at every program and erase operation
//! of a long run, at every word of it (the cut word left with undefined bits): a fresh-looking
//! store never comes back after the first record, the spent budget never shrinks below what
//! was debited, and an upload epoch is never handed out twice.
//!
//! # Cost
//!
//! RAM: the flash handle and two `u32`s; a `load` or `store` puts about 150 bytes on the stack
//! (a 64-byte slot buffer and the scan's result). Time: no copy of the log is kept, so every
//! `load` and `store` reads every slot (body and commit word, and CRCs every committed one)
//! before it programs one slot and its commit word; a page change adds one page erase, one
//! formatted word and one closed-marker word. Flash, measured on the example firmware
//! (`thumbv6m-none-eabi`, `opt-level = "z"`, LTO): the scan is 640 bytes and the store as a
//! whole (scan, reads, programs, `load`/`store`) about 1.4 KB; the commit and formatted words
//! added 424 bytes to the image.
//!
//! # Example
//!
//! ```
//! use privq_core::flash_store::{FlashStore, RamFlash};
//! use privq_core::ledger::Ledger;
//! use privq_core::Epsilon;
//!
//! // 4 pages of 128 bytes: the flag page and 3 log pages of 2 slots each. On a board, use the
//! // HAL's `NorFlash` and a region of at least 3 whole pages of its erase size, e.g. the last
//! // 4 KiB of a 256 KiB nRF51 (1 KiB pages): `FlashStore::in_region(nvmc, 0x3_F000..0x4_0000)`;
//! // on an nRF52840 (4 KiB pages), `0xF_C000..0x10_0000`.
//! let mut flash = RamFlash::<512, 128, 4>::new();
//! let mut ledger = Ledger::open(FlashStore::new(&mut flash), Epsilon::new(4, 1)?)?;
//! for _ in 0..6 {
//!     ledger.debit(Epsilon::new(1, 2)?)?; // wraps the log: 7 records in 6 slots
//! }
//! drop(ledger);
//! // Reboot: the spent budget is read back from the newest record.
//! let ledger = Ledger::open(FlashStore::new(&mut flash), Epsilon::new(4, 1)?)?;
//! assert_eq!((ledger.spent().num(), ledger.spent().den()), (3, 1));
//!
//! // Erasing the log pages does not give the budget back: the ledger refuses everything.
//! flash.erase_range(128..512);
//! let ledger = Ledger::open(FlashStore::new(&mut flash), Epsilon::new(4, 1)?)?;
//! assert!(ledger.is_corrupted());
//! # Ok::<(), privq_core::Error>(())
//! ```

use core::cell::{Cell, RefCell};
use core::ops::Range;

use embedded_storage::nor_flash::{
    ErrorType, NorFlash, NorFlashError, NorFlashErrorKind, ReadNorFlash,
};

use crate::error::{Error, StorageKind};
use crate::ledger::{LEDGER_RECORD_LEN, LedgerStore, crc32};

/// The provisioning word at the start of the flag page.
pub const PROVISIONED: [u8; 4] = *b"PQPV";
/// The closed marker in the last word of a log page.
const CLOSED: [u8; 4] = *b"PQCL";
/// The formatted marker in the word before a log page's closed marker (every log page gets
/// one at provisioning and after each erase).
const FORMATTED: [u8; 4] = *b"PQFM";
/// A slot's commit word, programmed after its body and CRC: all bits cleared, so no bit
/// flip short of an erase (or 32 flips) makes a committed slot read as uncommitted.
const COMMIT: [u8; 4] = [0; 4];
/// Counter and record: the bytes the slot's CRC covers.
const BODY: usize = 4 + LEDGER_RECORD_LEN;
/// Counter, record and CRC, before padding to the write size.
const SLOT_BODY_AND_CRC: usize = BODY + 4;
/// The largest slot body or marker this store programs (write sizes up to 64 bytes).
const MAX_UNIT: usize = 64;
/// The most log pages a region may have (one bit each in a `u32`).
const MAX_LOG_PAGES: u32 = 32;

const fn round_up(n: usize, to: usize) -> usize {
    if to == 0 { n } else { n.div_ceil(to) * to }
}

/// What can go wrong in a [`FlashStore`] (the flash driver's error is kept in
/// [`Flash`](StoreError::Flash)). [`Ledger`](crate::ledger::Ledger) and
/// [`UploadCounters`](crate::upload_counters::UploadCounters) report each as
/// [`Error::Storage`] with its [`StorageKind`] ([`StoreError::kind`]: the variant, or the
/// driver's `NorFlashErrorKind`); [`From`] does the same for `?`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreError<E> {
    /// The region or the flash geometry does not fit the layout. `load`, `store` and
    /// [`is_provisioned`](FlashStore::is_provisioned) report every layout problem as this
    /// (a short check on every operation); [`FlashStore::check_layout`] and the `const fn`
    /// [`FlashStore::check_region`] name it as a [`StorageKind`]: one of the `Region*`
    /// kinds, or [`StorageKind::Layout`] for the geometry (the write size is 0 or above 64
    /// bytes, the read size does not divide a slot or a marker word, a page holds no slot,
    /// the erase size is not a multiple of the write or read size, or it is above
    /// `u32::MAX`).
    Layout,
    /// The device was provisioned but its newest record is gone (erased flash): the store
    /// refuses to write, so nothing can replace the evidence. `load` returns the `0xFF`
    /// record instead of this error.
    Tampered,
    /// The write counter reached `u32::MAX` (4·10⁹ stores: far past any flash's endurance).
    Exhausted,
    /// The flash driver failed.
    Flash(E),
}

impl<E: NorFlashError> StoreError<E> {
    /// The kind [`Error::Storage`] carries for this error: the store's own errors (layout,
    /// tamper, counter) as the [`StorageKind`] of the same name, a flash driver's error by its
    /// `NorFlashErrorKind` (a kind newer than this crate as [`StorageKind::FlashOther`]).
    pub fn kind(&self) -> StorageKind {
        match self {
            StoreError::Layout => StorageKind::Layout,
            StoreError::Tampered => StorageKind::Tampered,
            StoreError::Exhausted => StorageKind::Exhausted,
            StoreError::Flash(e) => match e.kind() {
                NorFlashErrorKind::NotAligned => StorageKind::FlashNotAligned,
                NorFlashErrorKind::OutOfBounds => StorageKind::FlashOutOfBounds,
                _ => StorageKind::FlashOther,
            },
        }
    }
}

impl<E: NorFlashError> From<StoreError<E>> for Error {
    fn from(e: StoreError<E>) -> Error {
        Error::Storage(e.kind())
    }
}

/// What a scan of the log found.
#[derive(Debug, Clone, Copy)]
struct Scan {
    /// Log pages with a committed slot whose CRC fails (corruption, not a torn write).
    damaged: u32,
    /// Log pages whose formatted word is set.
    formatted: u32,
    /// Log pages with a formatted or closed word set (none: the log was never provisioned).
    marked: u32,
    /// (counter, page, slot) of the newest valid record.
    newest: Option<(u32, u32, u32)>,
    /// Whether the newest record's page is closed (a newer record was erased).
    newest_closed: bool,
    /// The first erased slot after the newest record, in its page.
    next: Option<u32>,
    /// Whether the provisioning word is set.
    provisioned: bool,
    /// Log pages with a programmed slot and no closed marker (bit per page).
    unclosed: u32,
}

/// The fail-closed ledger store on a region of NOR flash (see the [module docs](self)).
///
/// Flash cost (thumbv6m, measured by `tools/device-sizes.sh`): about 6.7 KB with the
/// [`Ledger`](crate::ledger::Ledger) on it (about 4.8 KB after a GRR report, which links the
/// ledger's ε arithmetic already).
///
/// `F` is any [`NorFlash`] with a write size of at most 64 bytes, `&mut` one (so the flash
/// outlives the store, e.g. across a simulated reboot), or a [`Region`] of a [`SharedFlash`]
/// (one driver under several stores alive at once, each on its own region, checked
/// disjoint). The store keeps no copy of the log: every `load` and `store` scans it (a read
/// of every slot and a CRC of every programmed one).
///
/// Two stores must never share pages: each keeps its own view of its log, and one's erase
/// would wipe the other's records or provisioning flag. The store cannot check this across
/// stores, so stores opened one after another on a re-borrowed `&mut` driver must be given
/// disjoint regions; [`SharedFlash`] checks it.
#[derive(Debug)]
pub struct FlashStore<F> {
    flash: F,
    start: u32,
    end: u32,
}

impl<F: NorFlash> FlashStore<F> {
    /// Bytes of a slot's body: counter, record and CRC (49 bytes) rounded up to the write
    /// size.
    const BODY_LEN: usize = round_up(SLOT_BODY_AND_CRC, F::WRITE_SIZE);
    /// Bytes of a flag, commit, formatted or closed word: 4 rounded up to the write size.
    const MARK_LEN: usize = round_up(4, F::WRITE_SIZE);
    /// Bytes per slot: the body and then the commit word (56 bytes for 4-byte writes).
    pub const SLOT_LEN: usize = Self::BODY_LEN + Self::MARK_LEN;
    /// Slots in one log page (the page less its formatted and closed words, in whole slots).
    pub const SLOTS_PER_PAGE: usize =
        F::ERASE_SIZE.saturating_sub(2 * Self::MARK_LEN) / Self::SLOT_LEN;

    /// A store on the whole of `flash` (its capacity rounded down to whole pages). Only for
    /// a flash (or a driver's window) that holds nothing else: on a board's program flash,
    /// use [`in_region`](Self::in_region), or the first store's erase wipes the firmware.
    pub fn new(flash: F) -> Self {
        let pages = flash.capacity().checked_div(F::ERASE_SIZE).unwrap_or(0);
        let end = u32::try_from(pages.saturating_mul(F::ERASE_SIZE)).unwrap_or(0);
        Self::in_region(flash, 0..end)
    }

    /// A store on `region` of `flash` (byte offsets, whole erase pages; the first page is
    /// the flag page). The layout is checked by every operation (`load`, `store`,
    /// [`is_provisioned`](Self::is_provisioned)), which fails with [`StoreError::Layout`]
    /// whatever the problem. To learn which, call [`check_layout`](Self::check_layout)
    /// (every check, from the driver's capacity too) or, at compile time, the `const fn`
    /// [`check_region`](Self::check_region) (all but the end of the flash):
    ///
    /// | problem | [`StorageKind`] | `check_region` (`const`) | `check_layout` |
    /// |---|---|---|---|
    /// | write size 0 or above 64 bytes, read size not dividing a slot, no slot in a page, erase size not a multiple of the write or read size, erase size above `u32::MAX` | [`Layout`](StorageKind::Layout) | yes | yes |
    /// | region not whole erase pages | [`RegionUnaligned`](StorageKind::RegionUnaligned) | yes | yes |
    /// | fewer than 3 or more than 33 pages (empty, reversed) | [`RegionPages`](StorageKind::RegionPages) | yes | yes |
    /// | region past the end of the flash | [`RegionOutOfBounds`](StorageKind::RegionOutOfBounds) | no | yes |
    ///
    /// ```
    /// use privq_core::flash_store::{FlashStore, RamFlash};
    /// use privq_core::{Error, StorageKind};
    /// let mut flash = RamFlash::<1024>::new(); // 4 pages of 256 bytes
    /// let store = FlashStore::in_region(&mut flash, 512..1280); // past the end
    /// assert_eq!(store.check_layout(), Err(StorageKind::RegionOutOfBounds));
    /// // At boot, before `Ledger::open`: a named `Error` instead of `Storage(Layout)`.
    /// let checked = store.check_layout().map_err(Error::Storage);
    /// assert_eq!(checked, Err(Error::Storage(StorageKind::RegionOutOfBounds)));
    /// ```
    pub const fn in_region(flash: F, region: Range<u32>) -> Self {
        FlashStore {
            flash,
            start: region.start,
            end: region.end,
        }
    }

    /// Gives the flash back.
    pub fn into_flash(self) -> F {
        self.flash
    }

    /// The flash.
    pub fn flash(&self) -> &F {
        &self.flash
    }

    /// The flash, mutably (e.g. to inject faults in tests).
    pub fn flash_mut(&mut self) -> &mut F {
        &mut self.flash
    }

    /// Log pages in the region (the flag page excluded).
    pub fn log_pages(&self) -> u32 {
        let pages = (self.end.saturating_sub(self.start) as usize)
            .checked_div(F::ERASE_SIZE)
            .unwrap_or(0);
        u32::try_from(pages.saturating_sub(1)).unwrap_or(0)
    }

    /// Records the log holds: every store writes one slot, so each page is erased once
    /// per this many stores.
    pub fn slots(&self) -> usize {
        (self.log_pages() as usize).saturating_mul(Self::SLOTS_PER_PAGE)
    }

    /// Whether the provisioning word is set (anything but an erased word counts: a torn
    /// flag write must not make the device new again).
    pub fn is_provisioned(&mut self) -> Result<bool, StoreError<F::Error>> {
        self.fits()?;
        let mut buf = [0xff; MAX_UNIT];
        Ok(!self.read_erased(self.start, Self::MARK_LEN, &mut buf)?)
    }

    /// The layout checks that need no driver, for `region` on flash of type `F`: the
    /// geometry ([`StorageKind::Layout`]), the alignment ([`StorageKind::RegionUnaligned`]) and
    /// the page count ([`StorageKind::RegionPages`]), in that order (see
    /// [`in_region`](Self::in_region)). A `const fn`, so a board's region can be checked when
    /// the firmware compiles:
    ///
    /// ```
    /// use privq_core::flash_store::{FlashStore, RamFlash};
    /// use privq_core::StorageKind;
    /// type Flash = RamFlash<4096>; // 256-byte pages
    /// const LEDGER: core::ops::Range<u32> = 0..768;
    /// const _: () = assert!(FlashStore::<Flash>::check_region(&LEDGER).is_ok());
    /// assert_eq!(
    ///     FlashStore::<Flash>::check_region(&(0..512)), // flag page + 1 log page
    ///     Err(StorageKind::RegionPages)
    /// );
    /// ```
    ///
    /// Whether the region ends inside the flash ([`StorageKind::RegionOutOfBounds`]) is only
    /// known from the driver: [`check_layout`](Self::check_layout).
    pub const fn check_region(region: &Range<u32>) -> Result<(), StorageKind> {
        const fn divides(n: usize, by: usize) -> bool {
            by != 0 && n.is_multiple_of(by)
        }
        let geometry = F::WRITE_SIZE > 0
            && Self::BODY_LEN <= MAX_UNIT
            && Self::SLOTS_PER_PAGE > 0
            && divides(F::ERASE_SIZE, F::WRITE_SIZE)
            && divides(Self::BODY_LEN, F::READ_SIZE)
            && divides(Self::MARK_LEN, F::READ_SIZE)
            && divides(F::ERASE_SIZE, F::READ_SIZE);
        // `u32` arithmetic (the offsets' type): a page count of 0 for an empty or reversed
        // region, and one unsigned comparison for 3..=33 pages.
        let page = F::ERASE_SIZE as u32;
        if !geometry || page as usize != F::ERASE_SIZE {
            return Err(StorageKind::Layout);
        }
        if !region.start.is_multiple_of(page) || !region.end.is_multiple_of(page) {
            return Err(StorageKind::RegionUnaligned);
        }
        let pages = region.end.saturating_sub(region.start) / page;
        if pages.wrapping_sub(3) > MAX_LOG_PAGES - 2 {
            return Err(StorageKind::RegionPages);
        }
        Ok(())
    }

    /// Every layout check, with the problem named: [`check_region`](Self::check_region)'s
    /// and then whether the region ends inside the flash
    /// ([`StorageKind::RegionOutOfBounds`], from the driver's `capacity()`). Call it once
    /// before opening the store (e.g. at boot) to learn what a
    /// [`StoreError::Layout`] from `load` or `store` was.
    pub fn check_layout(&self) -> Result<(), StorageKind> {
        Self::check_region(&(self.start..self.end))?;
        if self.end as usize > self.flash.capacity() {
            return Err(StorageKind::RegionOutOfBounds);
        }
        Ok(())
    }

    /// The per-operation layout check: every problem [`check_layout`](Self::check_layout)
    /// names, as one [`StoreError::Layout`] (one short test on every operation).
    fn fits(&self) -> Result<(), StoreError<F::Error>> {
        let divides = |n: usize, by: usize| n.checked_rem(by) == Some(0);
        let ok = F::WRITE_SIZE > 0
            && Self::BODY_LEN <= MAX_UNIT
            && Self::SLOTS_PER_PAGE > 0
            && divides(F::ERASE_SIZE, F::WRITE_SIZE)
            && divides(Self::BODY_LEN, F::READ_SIZE)
            && divides(Self::MARK_LEN, F::READ_SIZE)
            && divides(F::ERASE_SIZE, F::READ_SIZE)
            && divides(self.start as usize, F::ERASE_SIZE)
            && divides(self.end as usize, F::ERASE_SIZE)
            && self.start < self.end
            && self.end as usize <= self.flash.capacity()
            && (2..=MAX_LOG_PAGES).contains(&self.log_pages());
        if ok { Ok(()) } else { Err(StoreError::Layout) }
    }

    fn page_at(&self, page: u32) -> u32 {
        self.start + (page + 1) * F::ERASE_SIZE as u32
    }

    fn slot_at(&self, page: u32, slot: u32) -> u32 {
        self.page_at(page) + slot * Self::SLOT_LEN as u32
    }

    fn mark_at(&self, page: u32) -> u32 {
        self.page_at(page) + (F::ERASE_SIZE - Self::MARK_LEN) as u32
    }

    fn format_at(&self, page: u32) -> u32 {
        self.mark_at(page) - Self::MARK_LEN as u32
    }

    /// Reads `len` (≤ 64) bytes at `at` into the front of `buf` and tells whether they are
    /// erased.
    fn read_erased(
        &mut self,
        at: u32,
        len: usize,
        buf: &mut [u8; MAX_UNIT],
    ) -> Result<bool, StoreError<F::Error>> {
        let part = buf.get_mut(..len).ok_or(StoreError::Layout)?;
        self.flash.read(at, part).map_err(StoreError::Flash)?;
        Ok(part.iter().all(|&b| b == 0xff))
    }

    /// Programs the first `len` bytes of `buf` at `at`.
    fn program(
        &mut self,
        at: u32,
        buf: &[u8; MAX_UNIT],
        len: usize,
    ) -> Result<(), StoreError<F::Error>> {
        let part = buf.get(..len).ok_or(StoreError::Layout)?;
        self.flash.write(at, part).map_err(StoreError::Flash)
    }

    /// Programs a flag or closed-marker word.
    fn mark(&mut self, at: u32, mark: [u8; 4]) -> Result<(), StoreError<F::Error>> {
        if Self::MARK_LEN == 4 {
            return self.flash.write(at, &mark).map_err(StoreError::Flash);
        }
        let mut buf = [0xff; MAX_UNIT];
        for (b, m) in buf.iter_mut().zip(mark) {
            *b = m;
        }
        self.program(at, &buf, Self::MARK_LEN)
    }

    /// Reads the whole log once: the newest valid record, the next free slot after it,
    /// the flag, the marked, damaged and unclosed pages. A slot whose commit word is
    /// erased is free (body erased too) or a torn write (skipped); a committed slot whose
    /// CRC fails is damage. `buf` is left holding the last slot body read.
    fn scan(&mut self, buf: &mut [u8; MAX_UNIT]) -> Result<Scan, StoreError<F::Error>> {
        self.fits()?;
        let mut s = Scan {
            damaged: 0,
            formatted: 0,
            marked: 0,
            newest: None,
            newest_closed: false,
            next: None,
            provisioned: !self.read_erased(self.start, Self::MARK_LEN, buf)?,
            unclosed: 0,
        };
        for page in 0..self.log_pages() {
            let bit = 1 << page;
            let closed = !self.read_erased(self.mark_at(page), Self::MARK_LEN, buf)?;
            if !self.read_erased(self.format_at(page), Self::MARK_LEN, buf)? {
                s.formatted |= bit;
            }
            if closed {
                s.marked |= bit;
            }
            for slot in 0..Self::SLOTS_PER_PAGE as u32 {
                let at = self.slot_at(page, slot);
                let committed =
                    !self.read_erased(at + Self::BODY_LEN as u32, Self::MARK_LEN, buf)?;
                if self.read_erased(at, Self::BODY_LEN, buf)? && !committed {
                    if s.next.is_none() && matches!(s.newest, Some((_, p, _)) if p == page) {
                        s.next = Some(slot);
                    }
                    continue;
                }
                if !closed {
                    s.unclosed |= bit;
                }
                if !committed {
                    continue; // a torn write: that store never returned
                }
                match valid_counter(buf) {
                    None => s.damaged |= bit,
                    Some(counter) => {
                        if s.newest.is_none_or(|(c, _, _)| counter > c) {
                            s.newest = Some((counter, page, slot));
                            s.newest_closed = closed;
                            s.next = None;
                        }
                    }
                }
            }
        }
        s.marked |= s.formatted;
        Ok(s)
    }
}

impl Scan {
    /// `Some(None)`: a new device (no record, and nothing the store ever programs besides
    /// torn slots: flag, formatted and closed words erased, no damaged slot).
    /// `Some(Some(newest))`: the newest record, to be trusted (its page neither closed nor
    /// damaged). `None`: tampered or corrupted, the store fails closed.
    fn verdict(&self) -> Option<Option<(u32, u32, u32)>> {
        match self.newest {
            None if !self.provisioned && self.marked == 0 && self.damaged == 0 => Some(None),
            Some(n @ (_, page, _)) if !self.newest_closed && self.damaged & (1 << page) == 0 => {
                Some(Some(n))
            }
            _ => None,
        }
    }
}

/// The counter of a slot whose CRC holds.
fn valid_counter(buf: &[u8; MAX_UNIT]) -> Option<u32> {
    let crc = buf.get(BODY..SLOT_BODY_AND_CRC)?;
    if crc != crc32(buf.get(..BODY)?).to_le_bytes().as_slice() {
        return None;
    }
    Some(u32::from_le_bytes(*buf.first_chunk::<4>()?))
}

impl<F: NorFlash> LedgerStore for FlashStore<F> {
    type Error = StoreError<F::Error>;

    /// [`StoreError::kind`]: the layout, tamper and counter errors, or the flash driver's
    /// `NorFlashErrorKind`.
    fn error_kind(error: &Self::Error) -> StorageKind {
        error.kind()
    }

    /// Scans the log: `None` only for a new device (flag and log erased); the `0xFF`
    /// record (which every record check refuses) when the device was provisioned but its
    /// newest record is gone; otherwise the newest record.
    fn load(&mut self) -> Result<Option<[u8; LEDGER_RECORD_LEN]>, Self::Error> {
        let mut buf = [0xff; MAX_UNIT];
        let s = self.scan(&mut buf)?;
        let mut record = [0xff; LEDGER_RECORD_LEN];
        match s.verdict() {
            Some(None) => return Ok(None),
            Some(Some((_, page, slot))) => {
                self.read_erased(self.slot_at(page, slot), Self::BODY_LEN, &mut buf)?;
                if let Some(r) = buf
                    .get(4..)
                    .and_then(|t| t.first_chunk::<LEDGER_RECORD_LEN>())
                {
                    record = *r;
                }
            }
            None => {}
        }
        Ok(Some(record))
    }

    /// Programs `record` into the next slot (erasing the next page when the active one is
    /// full), closes the pages left behind and sets the provisioning word, all before it
    /// returns. Refuses with [`StoreError::Tampered`] when the newest record is gone.
    fn store(&mut self, record: &[u8; LEDGER_RECORD_LEN]) -> Result<(), Self::Error> {
        let mut buf = [0xff; MAX_UNIT];
        let s = self.scan(&mut buf)?;
        // (counter, page, slot) of the new record, and the log pages to erase before it.
        let (counter, page, slot, erase) = match s.verdict() {
            None => return Err(StoreError::Tampered),
            // Nothing was ever stored: clear whatever an interrupted first store left.
            Some(None) => (0, 0, 0, 0..self.log_pages()),
            Some(Some((counter, page, _))) => {
                let counter = counter.checked_add(1).ok_or(StoreError::Exhausted)?;
                match s.next {
                    Some(slot) => (counter, page, slot, 0..0),
                    None => {
                        // The page is full: go on with the next page of the ring, which
                        // holds only older records. The full page is closed below.
                        let to = if page + 1 == self.log_pages() {
                            0
                        } else {
                            page + 1
                        };
                        (counter, to, 0, to..to + 1)
                    }
                }
            }
        };
        let close = if s.newest.is_some() {
            s.unclosed & !(1 << page)
        } else {
            0
        };
        if !erase.is_empty() {
            self.flash
                .erase(self.page_at(erase.start), self.page_at(erase.end))
                .map_err(StoreError::Flash)?;
        }
        // The slot: counter, record, CRC of both, `0xFF` padding. Constant ranges of a
        // 64-byte buffer: the copies cannot fail.
        buf.fill(0xff);
        if let Some((c, rest)) = buf.split_first_chunk_mut::<4>() {
            *c = counter.to_le_bytes();
            if let Some((r, _)) = rest.split_first_chunk_mut::<LEDGER_RECORD_LEN>() {
                *r = *record;
            }
        }
        let crc = crc32(buf.get(..BODY).unwrap_or(&[]));
        if let Some(c) = buf.get_mut(BODY..).and_then(|t| t.first_chunk_mut::<4>()) {
            *c = crc.to_le_bytes();
        }
        let at = self.slot_at(page, slot);
        self.program(at, &buf, Self::BODY_LEN)?;
        // Commit the slot only now that its body is complete: a cut before this leaves a
        // torn write (commit erased), skipped by the scan.
        self.mark(at + Self::BODY_LEN as u32, COMMIT)?;
        // Format the pages without a formatted word (all of them at provisioning, the
        // erased one on a page change), close every other page that holds records, then
        // set the flag: a cut before any of these leaves the new record in place, and the
        // next store finishes the job.
        for p in 0..self.log_pages() {
            if s.formatted & (1 << p) == 0 || erase.contains(&p) {
                self.mark(self.format_at(p), FORMATTED)?;
            }
            if close & (1 << p) != 0 {
                self.mark(self.mark_at(p), CLOSED)?;
            }
        }
        if !s.provisioned {
            self.mark(self.start, PROVISIONED)?;
        }
        Ok(())
    }
}

/// What can go wrong with a [`RamFlash`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum RamFlashError {
    /// Offset or length outside the flash.
    OutOfBounds,
    /// Offset or length not a multiple of the write or erase size.
    NotAligned,
    /// A write to bytes that are not erased (NOR flash programs each word once).
    NotErased,
    /// A simulated hardware fault ([`RamFlash::set_failing`]).
    Fault,
}

impl NorFlashError for RamFlashError {
    fn kind(&self) -> NorFlashErrorKind {
        match self {
            RamFlashError::OutOfBounds => NorFlashErrorKind::OutOfBounds,
            RamFlashError::NotAligned => NorFlashErrorKind::NotAligned,
            RamFlashError::NotErased | RamFlashError::Fault => NorFlashErrorKind::Other,
        }
    }
}

/// `N` bytes of simulated NOR flash in RAM with `ERASE`-byte pages and `WRITE`-byte words
/// (256 and 4 by default), for host simulations, tests and QEMU (not persistent: a reboot is
/// simulated by opening a new store on the same `RamFlash`). Stricter than most hardware:
/// programming bytes that are not erased is an error ([`RamFlashError::NotErased`]).
#[derive(Debug, Clone)]
pub struct RamFlash<const N: usize, const ERASE: usize = 256, const WRITE: usize = 4> {
    bytes: [u8; N],
    erases: u32,
    failing: bool,
}

impl<const N: usize, const ERASE: usize, const WRITE: usize> Default for RamFlash<N, ERASE, WRITE> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize, const ERASE: usize, const WRITE: usize> RamFlash<N, ERASE, WRITE> {
    /// Factory-fresh (erased) flash.
    pub const fn new() -> Self {
        RamFlash {
            bytes: [0xff; N],
            erases: 0,
            failing: false,
        }
    }

    /// The raw contents.
    pub fn bytes(&self) -> &[u8; N] {
        &self.bytes
    }

    /// The raw contents, mutably (tests: change flash behind the store's back).
    pub fn bytes_mut(&mut self) -> &mut [u8; N] {
        &mut self.bytes
    }

    /// Sets `range` to `0xFF` without counting an erase (an attacker's erase, in tests).
    pub fn erase_range(&mut self, range: Range<usize>) {
        if let Some(bytes) = self.bytes.get_mut(range) {
            bytes.fill(0xff);
        }
    }

    /// Pages erased so far.
    pub fn erases(&self) -> u32 {
        self.erases
    }

    /// Makes every later operation fail (simulated flash fault) until reset.
    pub fn set_failing(&mut self, failing: bool) {
        self.failing = failing;
    }

    fn range<const ALIGN: usize>(
        &self,
        offset: u32,
        len: usize,
    ) -> Result<Range<usize>, RamFlashError> {
        if self.failing {
            return Err(RamFlashError::Fault);
        }
        let start = offset as usize;
        let end = start.checked_add(len).ok_or(RamFlashError::OutOfBounds)?;
        if end > N {
            return Err(RamFlashError::OutOfBounds);
        }
        if start.checked_rem(ALIGN) != Some(0) || len.checked_rem(ALIGN) != Some(0) {
            return Err(RamFlashError::NotAligned);
        }
        Ok(start..end)
    }
}

impl<const N: usize, const ERASE: usize, const WRITE: usize> ErrorType
    for RamFlash<N, ERASE, WRITE>
{
    type Error = RamFlashError;
}

impl<const N: usize, const ERASE: usize, const WRITE: usize> ReadNorFlash
    for RamFlash<N, ERASE, WRITE>
{
    const READ_SIZE: usize = 1;

    fn read(&mut self, offset: u32, bytes: &mut [u8]) -> Result<(), RamFlashError> {
        let r = self.range::<1>(offset, bytes.len())?;
        let src = self.bytes.get(r).ok_or(RamFlashError::OutOfBounds)?;
        // Same length; a zip copy links no length-mismatch panic.
        for (d, &s) in bytes.iter_mut().zip(src) {
            *d = s;
        }
        Ok(())
    }

    fn capacity(&self) -> usize {
        N
    }
}

impl<const N: usize, const ERASE: usize, const WRITE: usize> NorFlash
    for RamFlash<N, ERASE, WRITE>
{
    const WRITE_SIZE: usize = WRITE;
    const ERASE_SIZE: usize = ERASE;

    fn erase(&mut self, from: u32, to: u32) -> Result<(), RamFlashError> {
        let r = self.range::<ERASE>(from, (to as usize).saturating_sub(from as usize))?;
        if to < from {
            return Err(RamFlashError::OutOfBounds);
        }
        let pages = r.len().checked_div(ERASE).unwrap_or(0);
        self.bytes
            .get_mut(r)
            .ok_or(RamFlashError::OutOfBounds)?
            .fill(0xff);
        self.erases = self.erases.saturating_add(pages as u32);
        Ok(())
    }

    fn write(&mut self, offset: u32, data: &[u8]) -> Result<(), RamFlashError> {
        let r = self.range::<WRITE>(offset, data.len())?;
        let cells = self.bytes.get_mut(r).ok_or(RamFlashError::OutOfBounds)?;
        if cells.iter().any(|&b| b != 0xff) {
            return Err(RamFlashError::NotErased);
        }
        for (c, &d) in cells.iter_mut().zip(data) {
            *c = d;
        }
        Ok(())
    }
}

/// One flash driver shared by several stores that are alive at the same time: the
/// [`Ledger`](crate::ledger::Ledger) in one region and the
/// [`UploadCounters`](crate::upload_counters::UploadCounters) in another, on the MCU's one
/// flash peripheral.
///
/// The `SharedFlash` owns the driver and a table of `N` regions (byte offsets on the
/// driver), checked by [`new`](Self::new): whole erase pages, inside the flash and pairwise
/// disjoint. [`region`](Self::region) hands out each region as a [`Region`], a [`NorFlash`]
/// on that window only (offsets from the region's start), at most once at a time: a store
/// opens with `FlashStore::new(shared.region(i)?)`, on the whole window (the table checks
/// only whole regions: `FlashStore::in_region` on part of a region is unchecked again, and
/// two stores opened one after the other on overlapping parts of one region reopen the
/// attack below). Two stores on one region, or on
/// overlapping regions, cannot be opened: they would each keep their own view of one log
/// (a ledger's spent budget is read once, at open), and one store's erase could wipe the
/// other's provisioning flag, so a later erase of the other's log pages would read as a new
/// device.
///
/// The driver sits in a [`RefCell`]: each flash operation borrows it for that operation
/// only, with no allocation and no panic (a borrow that is already taken, which only a
/// driver that calls back into a store could cause, is [`SharedFlashError::Busy`]). Like a
/// `RefCell`, it is not `Sync`: keep the stores in one context (not split between `main` and
/// an interrupt handler). The checks cover one table: a driver that is itself a shared
/// handle (a partition over a mutex, a clonable HAL handle) could back two tables over the
/// same bytes, which nothing here can see — give each flash one `SharedFlash`.
///
/// (Two stores that are alive one after the other can instead re-borrow the driver:
/// `embedded-storage` implements [`NorFlash`] for `&mut F`, so
/// `FlashStore::in_region(&mut flash, ..)` works again once the first store is gone, e.g.
/// after [`Ledger::into_store`](crate::ledger::Ledger::into_store). The store cannot check
/// that such stores use disjoint regions: keep them disjoint, or use a `SharedFlash`, which
/// checks.)
///
/// ```
/// use privq_core::flash_store::{FlashStore, RamFlash, SharedFlash};
/// use privq_core::ledger::Ledger;
/// use privq_core::upload_counters::UploadCounters;
/// use privq_core::{Epsilon, Error, StorageKind};
///
/// // One driver (here a simulated flash of six 256-byte pages), two regions of 3 pages.
/// let flash = SharedFlash::new(RamFlash::<1536>::new(), [0..768, 768..1536])?;
/// let mut ledger = Ledger::open(FlashStore::new(flash.region(0)?), Epsilon::new(4, 1)?)?;
/// let mut counters = UploadCounters::open(FlashStore::new(flash.region(1)?))?;
/// ledger.debit(Epsilon::new(1, 1)?)?;
/// assert_eq!(counters.begin_epoch(0)?, 0);
/// // A region in use is not handed out again.
/// let again = flash.region(0).map(|_| ());
/// assert_eq!(again, Err(Error::Storage(StorageKind::Layout)));
/// let _ = (ledger.into_store(), counters.into_store()); // the stores end
/// // The driver back, e.g. for a firmware update's own use of the flash.
/// let flash = flash.into_inner();
/// assert_eq!(&flash.bytes()[..4], b"PQPV");
/// assert_eq!(&flash.bytes()[768..772], b"PQPV");
///
/// // Overlapping (or identical) regions are refused.
/// let overlap = SharedFlash::new(RamFlash::<1536>::new(), [0..768, 512..1280]);
/// assert_eq!(overlap.err(), Some(Error::Storage(StorageKind::Layout)));
/// # Ok::<(), privq_core::Error>(())
/// ```
///
/// The shared driver itself is not a [`NorFlash`]: a store on it, past the region table,
/// does not compile.
///
/// ```compile_fail,E0277
/// use privq_core::flash_store::{FlashStore, RamFlash, SharedFlash};
/// use privq_core::ledger::LedgerStore;
/// let flash = SharedFlash::new(RamFlash::<1536>::new(), [0..768, 768..1536])?;
/// let mut store = FlashStore::in_region(&flash, 0..768);
/// let _ = store.load();
/// # Ok::<(), privq_core::Error>(())
/// ```
#[derive(Debug)]
pub struct SharedFlash<F, const N: usize> {
    flash: RefCell<F>,
    regions: [Range<u32>; N],
    /// Whether each region is handed out (a live [`Region`]).
    taken: [Cell<bool>; N],
}

impl<F: NorFlash, const N: usize> SharedFlash<F, N> {
    /// Shares `flash` (e.g. the HAL's flash peripheral driver) between the `regions` (byte
    /// offsets on the driver), after every check of [`check_regions`](Self::check_regions)
    /// and then whether each region ends inside the flash
    /// ([`StorageKind::RegionOutOfBounds`], from the driver's `capacity()`). Fails with
    /// [`Error::Storage`] of the first problem found (the driver is dropped: the regions
    /// are a board's constants, so check them with `check_regions` when the firmware
    /// compiles).
    pub fn new(flash: F, regions: [Range<u32>; N]) -> Result<Self, Error> {
        Self::check_regions(&regions).map_err(Error::Storage)?;
        let capacity = flash.capacity();
        if regions.iter().any(|r| r.end as usize > capacity) {
            return Err(Error::Storage(StorageKind::RegionOutOfBounds));
        }
        Ok(SharedFlash {
            flash: RefCell::new(flash),
            regions,
            taken: [const { Cell::new(false) }; N],
        })
    }

    /// The checks of the region table that need no driver, in this order: the geometry
    /// ([`StorageKind::Layout`]: an erase size of 0 or above `u32::MAX`, or not a multiple
    /// of the write and read sizes), each region whole erase pages
    /// ([`StorageKind::RegionUnaligned`]) and not empty or reversed
    /// ([`StorageKind::RegionPages`]), and no two regions overlapping
    /// ([`StorageKind::Layout`]; identical regions overlap). A `const fn`, so a
    /// board's table can be checked when the firmware compiles:
    ///
    /// ```
    /// use privq_core::flash_store::{RamFlash, SharedFlash};
    /// use privq_core::StorageKind;
    /// type Shared = SharedFlash<RamFlash<4096>, 2>; // 256-byte pages
    /// const REGIONS: [core::ops::Range<u32>; 2] = [0..768, 768..1536];
    /// const _: () = assert!(Shared::check_regions(&REGIONS).is_ok());
    /// assert_eq!(
    ///     Shared::check_regions(&[0..768, 0..768]),
    ///     Err(StorageKind::Layout)
    /// );
    /// ```
    ///
    /// Each store's own layout (3 to 33 pages, the driver's write size) is
    /// [`FlashStore::check_region`]'s and [`FlashStore::check_layout`]'s.
    pub const fn check_regions(regions: &[Range<u32>; N]) -> Result<(), StorageKind> {
        let page = F::ERASE_SIZE as u32;
        if page == 0
            || page as usize != F::ERASE_SIZE
            || F::WRITE_SIZE == 0
            || F::READ_SIZE == 0
            || !F::ERASE_SIZE.is_multiple_of(F::WRITE_SIZE)
            || !F::ERASE_SIZE.is_multiple_of(F::READ_SIZE)
        {
            return Err(StorageKind::Layout);
        }
        // Slice patterns, not indexing: a `const fn` with no panic path.
        let mut rest: &[Range<u32>] = regions;
        while let [r, others @ ..] = rest {
            if !r.start.is_multiple_of(page) || !r.end.is_multiple_of(page) {
                return Err(StorageKind::RegionUnaligned);
            }
            if r.start >= r.end {
                return Err(StorageKind::RegionPages);
            }
            rest = others;
        }
        // Every region is now non-empty: two overlap when each starts before the other ends.
        let mut rest: &[Range<u32>] = regions;
        while let [r, others @ ..] = rest {
            let mut tail = others;
            while let [o, more @ ..] = tail {
                if r.start < o.end && o.start < r.end {
                    return Err(StorageKind::Layout);
                }
                tail = more;
            }
            rest = others;
        }
        Ok(())
    }
}

impl<F, const N: usize> SharedFlash<F, N> {
    /// The region table (byte offsets on the driver).
    pub fn regions(&self) -> &[Range<u32>; N] {
        &self.regions
    }

    /// Region `index` of the table, as a [`NorFlash`] on that window, for one store. A
    /// region is handed out once at a time: while its [`Region`] lives, another request is
    /// refused with [`StorageKind::Layout`] (two stores on one region); dropping the
    /// `Region` (with its store) gives it back. An index past the table is
    /// [`StorageKind::RegionOutOfBounds`].
    pub fn region(&self, index: usize) -> Result<Region<'_, F>, Error> {
        let (Some(range), Some(taken)) = (self.regions.get(index), self.taken.get(index)) else {
            return Err(Error::Storage(StorageKind::RegionOutOfBounds));
        };
        if taken.replace(true) {
            return Err(Error::Storage(StorageKind::Layout));
        }
        Ok(Region {
            flash: &self.flash,
            taken,
            start: range.start,
            len: range.end - range.start,
        })
    }

    /// Gives the driver back.
    pub fn into_inner(self) -> F {
        self.flash.into_inner()
    }

    /// The driver, mutably (no store can be using it: they borrow `self`).
    pub fn get_mut(&mut self) -> &mut F {
        self.flash.get_mut()
    }
}

/// One region of a [`SharedFlash`]: a [`NorFlash`] with the driver's geometry on that window
/// only, at offsets from the region's start (an access outside it is
/// [`SharedFlashError::OutOfBounds`], and `capacity()` is the region's length). Given back to
/// the `SharedFlash` when dropped; a leaked `Region` (`mem::forget`) leaves its region
/// unusable, never shared.
#[derive(Debug)]
pub struct Region<'a, F> {
    flash: &'a RefCell<F>,
    taken: &'a Cell<bool>,
    start: u32,
    len: u32,
}

impl<F> Region<'_, F> {
    /// The driver offset `offset..offset + len` of the region maps to, if it is inside.
    fn window<E>(&self, offset: u32, len: usize) -> Result<u32, SharedFlashError<E>> {
        let end = (offset as usize).checked_add(len);
        if end.is_none_or(|end| end > self.len as usize) {
            return Err(SharedFlashError::OutOfBounds);
        }
        Ok(self.start + offset)
    }
}

impl<F> Drop for Region<'_, F> {
    fn drop(&mut self) {
        self.taken.set(false);
    }
}

/// The error of a [`Region`] of a [`SharedFlash`]: the driver's, a busy driver, or an access
/// outside the region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SharedFlashError<E> {
    /// The driver was already borrowed by another operation (a driver that calls back into a
    /// store); nothing was read, written or erased. Its `NorFlashErrorKind` is `Other`.
    Busy,
    /// The access was outside the region; nothing was read, written or erased. Its
    /// `NorFlashErrorKind` is `OutOfBounds`.
    OutOfBounds,
    /// The driver failed.
    Flash(E),
}

impl<E: NorFlashError> NorFlashError for SharedFlashError<E> {
    fn kind(&self) -> NorFlashErrorKind {
        match self {
            SharedFlashError::Busy => NorFlashErrorKind::Other,
            SharedFlashError::OutOfBounds => NorFlashErrorKind::OutOfBounds,
            SharedFlashError::Flash(e) => e.kind(),
        }
    }
}

impl<F: ErrorType> ErrorType for Region<'_, F> {
    type Error = SharedFlashError<F::Error>;
}

impl<F: ReadNorFlash> ReadNorFlash for Region<'_, F> {
    const READ_SIZE: usize = F::READ_SIZE;

    fn read(&mut self, offset: u32, bytes: &mut [u8]) -> Result<(), Self::Error> {
        let at = self.window(offset, bytes.len())?;
        let mut flash = self
            .flash
            .try_borrow_mut()
            .map_err(|_| SharedFlashError::Busy)?;
        flash.read(at, bytes).map_err(SharedFlashError::Flash)
    }

    /// The region's length (known without the driver, so it holds while the driver is busy).
    fn capacity(&self) -> usize {
        self.len as usize
    }
}

impl<F: NorFlash> NorFlash for Region<'_, F> {
    const WRITE_SIZE: usize = F::WRITE_SIZE;
    const ERASE_SIZE: usize = F::ERASE_SIZE;

    fn erase(&mut self, from: u32, to: u32) -> Result<(), Self::Error> {
        if to < from {
            return Err(SharedFlashError::OutOfBounds);
        }
        let at = self.window(from, (to - from) as usize)?;
        let mut flash = self
            .flash
            .try_borrow_mut()
            .map_err(|_| SharedFlashError::Busy)?;
        flash
            .erase(at, at + (to - from))
            .map_err(SharedFlashError::Flash)
    }

    fn write(&mut self, offset: u32, bytes: &[u8]) -> Result<(), Self::Error> {
        let at = self.window(offset, bytes.len())?;
        let mut flash = self
            .flash
            .try_borrow_mut()
            .map_err(|_| SharedFlashError::Busy)?;
        flash.write(at, bytes).map_err(SharedFlashError::Flash)
    }
}

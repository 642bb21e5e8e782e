//! The flash ledger store (`privq_core::flash_store`, feature `flash-ledger`) on a simulated
//! NOR flash that loses power at any word of any program or erase operation.
//!
//! What must hold after every power cut, on every geometry:
//! * once the first record was stored, the region never reads as a new device;
//! * the ledger reopens (a cut alone never bricks it) with its spent budget equal to the
//!   debits that returned, or those plus the one in flight (never less: no budget comes back);
//! * the upload counters never hand out an epoch twice, so (epoch, sequence) never repeats;
//! * the store keeps working afterwards (it never programs a word twice).
//!
//! And after an erase-only attacker erases any set of pages, at any point of a run: the spent
//! budget is unchanged, or the ledger refuses everything; only a fully erased region is new.

use std::collections::BTreeSet;

use embedded_storage::nor_flash::{
    ErrorType, NorFlash, NorFlashError, NorFlashErrorKind, ReadNorFlash,
};
use privq_core::flash_store::{
    FlashStore, RamFlash, RamFlashError, SharedFlash, SharedFlashError, StoreError,
};
use privq_core::ledger::{LEDGER_RECORD_LEN, Ledger, LedgerStore};
use privq_core::upload_counters::UploadCounters;
use privq_core::{Epsilon, Error, StorageKind};

/// Where the power goes: during operation `op` (programs and erases, counted from 0), after
/// `word` words of it took effect; with `garbage`, the word being programmed (or the rest of
/// the page being erased) is left with undefined bits.
#[derive(Debug, Clone, Copy)]
struct Cut {
    op: usize,
    word: usize,
    garbage: bool,
}

#[derive(Debug)]
struct Dead;

impl NorFlashError for Dead {
    fn kind(&self) -> NorFlashErrorKind {
        NorFlashErrorKind::Other
    }
}

/// NOR flash in a `Vec` with `E`-byte pages and `W`-byte words that can lose power, counts
/// the erases of each page and refuses to program a byte that is not erased.
#[derive(Debug, Clone)]
struct CutFlash<const E: usize, const W: usize> {
    bytes: Vec<u8>,
    ops: usize,
    /// Words in each operation, in order (to enumerate the cuts of a clean run).
    op_words: Vec<usize>,
    cut: Option<Cut>,
    dead: bool,
    page_erases: Vec<u32>,
}

impl<const E: usize, const W: usize> CutFlash<E, W> {
    fn new(pages: usize) -> Self {
        CutFlash {
            bytes: vec![0xff; pages * E],
            ops: 0,
            op_words: Vec::new(),
            cut: None,
            dead: false,
            page_erases: vec![0; pages],
        }
    }

    /// The same bytes after power comes back.
    fn reboot(&self) -> Self {
        let mut f = Self::new(self.bytes.len() / E);
        f.bytes.clone_from(&self.bytes);
        f.page_erases.clone_from(&self.page_erases);
        f
    }

    /// Whether this operation is cut, and after how many words.
    fn cut_now(&mut self, words: usize) -> Option<(usize, bool)> {
        let op = self.ops;
        self.ops += 1;
        self.op_words.push(words);
        match self.cut {
            Some(c) if c.op == op => {
                self.dead = true;
                Some((c.word.min(words), c.garbage))
            }
            _ => None,
        }
    }
}

impl<const E: usize, const W: usize> ErrorType for CutFlash<E, W> {
    type Error = Dead;
}

impl<const E: usize, const W: usize> ReadNorFlash for CutFlash<E, W> {
    const READ_SIZE: usize = 1;

    fn read(&mut self, offset: u32, bytes: &mut [u8]) -> Result<(), Dead> {
        if self.dead {
            return Err(Dead);
        }
        let o = offset as usize;
        bytes.copy_from_slice(&self.bytes[o..o + bytes.len()]);
        Ok(())
    }

    fn capacity(&self) -> usize {
        self.bytes.len()
    }
}

impl<const E: usize, const W: usize> NorFlash for CutFlash<E, W> {
    const WRITE_SIZE: usize = W;
    const ERASE_SIZE: usize = E;

    fn erase(&mut self, from: u32, to: u32) -> Result<(), Dead> {
        if self.dead {
            return Err(Dead);
        }
        let (from, to) = (from as usize, to as usize);
        assert!(
            from.is_multiple_of(E) && to.is_multiple_of(E) && from < to && to <= self.bytes.len()
        );
        match self.cut_now((to - from) / W) {
            None => {
                self.bytes[from..to].fill(0xff);
                for n in &mut self.page_erases[from / E..to / E] {
                    *n += 1;
                }
                Ok(())
            }
            Some((word, garbage)) => {
                let mid = from + word * W;
                self.bytes[from..mid].fill(0xff);
                if garbage {
                    // Half-erased bits: some of the rest already reads 1.
                    for (i, b) in self.bytes[mid..to].iter_mut().enumerate() {
                        *b |= 0x11 << (i % 4);
                    }
                }
                Err(Dead)
            }
        }
    }

    fn write(&mut self, offset: u32, data: &[u8]) -> Result<(), Dead> {
        if self.dead {
            return Err(Dead);
        }
        let o = offset as usize;
        assert!(
            o.is_multiple_of(W)
                && data.len().is_multiple_of(W)
                && o + data.len() <= self.bytes.len()
        );
        assert!(
            self.bytes[o..o + data.len()].iter().all(|&b| b == 0xff),
            "a word programmed twice at {o}"
        );
        match self.cut_now(data.len() / W) {
            None => {
                self.bytes[o..o + data.len()].copy_from_slice(data);
                Ok(())
            }
            Some((word, garbage)) => {
                let done = word * W;
                self.bytes[o..o + done].copy_from_slice(&data[..done]);
                if garbage && done < data.len() {
                    // The word being programmed: some of its bits cleared, some not.
                    for (i, b) in self.bytes[o + done..o + done + W].iter_mut().enumerate() {
                        *b = data[done + i] | (0x5a >> (i % 3));
                    }
                }
                Err(Dead)
            }
        }
    }
}

fn eps(n: u64, d: u64) -> Epsilon {
    Epsilon::new(n, d).unwrap()
}

/// What a run got done before the power went.
#[derive(Debug, Default)]
struct LedgerRun {
    /// `Ledger::open` returned (the fresh record is stored).
    opened: bool,
    /// Debits of ε = 1 that returned `Ok`.
    acked: u64,
    /// A debit was being stored when the power went.
    in_flight: bool,
}

/// Open, then `debits` debits of ε = 1, reopening the ledger (a reboot without a cut)
/// after every 5th; stops at the first error (the power is gone).
fn ledger_run<F: NorFlash>(flash: &mut F, debits: u64, run: &mut LedgerRun) {
    let cap = eps(1000, 1);
    let Ok(mut ledger) = Ledger::open(FlashStore::new(&mut *flash), cap) else {
        return;
    };
    run.opened = true;
    for i in 0..debits {
        if i % 5 == 4 {
            match Ledger::open(FlashStore::new(&mut *flash), cap) {
                Ok(l) => ledger = l,
                Err(_) => return,
            }
        }
        run.in_flight = true;
        if ledger.debit(eps(1, 1)).is_err() {
            return;
        }
        run.in_flight = false;
        run.acked += 1;
    }
}

/// Every cut of a ledger run on geometry (E, W) with `pages` pages (flag page included).
fn power_cut_at_every_word_of_a_ledger_run<const E: usize, const W: usize>(pages: usize) -> usize {
    let slots = (pages as u64 - 1) * FlashStore::<CutFlash<E, W>>::SLOTS_PER_PAGE as u64;
    let debits = 3 * slots + 4; // wraps the ring three times
    let mut clean = CutFlash::<E, W>::new(pages);
    let mut run = LedgerRun::default();
    ledger_run(&mut clean, debits, &mut run);
    assert_eq!(run.acked, debits, "the clean run completes");
    // Wear levelling: the log pages' erase counts differ by at most one.
    let log = &clean.page_erases[1..];
    assert!(
        log.iter().max().unwrap() - log.iter().min().unwrap() <= 1,
        "{log:?}"
    );
    assert_eq!(clean.page_erases[0], 0, "the flag page is never erased");

    let mut cuts = 0;
    for (op, &words) in clean.op_words.iter().enumerate() {
        for word in 0..=words {
            for garbage in [false, true] {
                if garbage && word == words {
                    continue;
                }
                cuts += 1;
                let cut = Cut { op, word, garbage };
                let mut flash = CutFlash::<E, W>::new(pages);
                flash.cut = Some(cut);
                let mut run = LedgerRun::default();
                ledger_run(&mut flash, debits, &mut run);
                assert!(flash.dead, "{cut:?}: the cut happened");
                let mut flash = flash.reboot();

                let loaded = FlashStore::new(&mut flash).load().unwrap();
                if run.opened {
                    assert!(loaded.is_some(), "{cut:?}: a stored ledger reads as new");
                }
                let mut ledger = Ledger::open(FlashStore::new(&mut flash), eps(1000, 1)).unwrap();
                assert!(
                    !ledger.is_corrupted(),
                    "{cut:?}: a power cut bricked the ledger"
                );
                let spent = ledger.spent();
                assert_eq!(spent.den(), 1);
                let upper = run.acked + u64::from(run.in_flight);
                assert!(
                    (run.acked..=upper).contains(&spent.num()),
                    "{cut:?}: spent {} after {} acknowledged debits (in flight: {})",
                    spent.num(),
                    run.acked,
                    run.in_flight
                );
                // The store keeps working after the cut: another lap of the ring, a reboot.
                for _ in 0..slots + 1 {
                    ledger.debit(eps(1, 1)).unwrap();
                }
                let ledger = Ledger::open(FlashStore::new(&mut flash), eps(1000, 1)).unwrap();
                assert_eq!(ledger.spent().num(), spent.num() + slots + 1, "{cut:?}");
            }
        }
    }
    cuts
}

#[test]
fn power_cuts_at_every_word_never_reset_or_refund_the_ledger() {
    // (page, word): the nRF51-like default, byte writes, wide writes, one slot per page.
    let cuts = power_cut_at_every_word_of_a_ledger_run::<256, 4>(3)
        + power_cut_at_every_word_of_a_ledger_run::<128, 4>(4)
        + power_cut_at_every_word_of_a_ledger_run::<128, 1>(3)
        + power_cut_at_every_word_of_a_ledger_run::<256, 16>(3)
        + power_cut_at_every_word_of_a_ledger_run::<128, 8>(5);
    eprintln!("ledger: {cuts} power cuts");
    assert!(cuts > 5000, "{cuts} cuts");
}

/// One boot of a device that uploads: 3 epochs of 2 frames each, numbered from the
/// persisted sequence; the replay keys it used go into `keys`. Stops at the first error.
fn upload_boot<F: NorFlash>(flash: &mut F, keys: &mut Vec<(u32, u32)>) -> Result<(), Error> {
    let mut counters = UploadCounters::open(FlashStore::new(&mut *flash))?;
    let mut sequence = counters.next_sequence();
    for _ in 0..3 {
        let epoch = counters.begin_epoch(sequence)?;
        for _ in 0..2 {
            keys.push((epoch, sequence));
            sequence += 1;
        }
    }
    Ok(())
}

#[test]
fn power_cuts_never_repeat_an_upload_epoch_or_replay_key() {
    const E: usize = 128;
    const W: usize = 4;
    let boots = 5;
    let mut clean = CutFlash::<E, W>::new(3);
    let mut keys = Vec::new();
    for _ in 0..boots {
        upload_boot(&mut clean, &mut keys).unwrap();
    }
    assert_eq!(keys.len(), boots * 6);
    let mut cuts = 0;
    for (op, &words) in clean.op_words.iter().enumerate() {
        for word in 0..=words {
            for garbage in [false, true] {
                cuts += 1;
                let cut = Cut { op, word, garbage };
                let mut flash = CutFlash::<E, W>::new(3);
                flash.cut = Some(cut);
                let mut used = Vec::new();
                for _ in 0..boots {
                    if upload_boot(&mut flash, &mut used).is_err() {
                        break;
                    }
                }
                assert!(flash.dead, "{cut:?}");
                // Power back: two more boots; every replay key is new.
                let mut flash = flash.reboot();
                let counters = UploadCounters::open(FlashStore::new(&mut flash)).unwrap();
                if let Some(&(last, _)) = used.last() {
                    assert!(counters.next_epoch() > last, "{cut:?}: epoch {last} again");
                }
                for _ in 0..2 {
                    upload_boot(&mut flash, &mut used).unwrap();
                }
                let distinct: BTreeSet<_> = used.iter().collect();
                assert_eq!(distinct.len(), used.len(), "{cut:?}: a replay key repeated");
            }
        }
    }
    eprintln!("upload counters: {cuts} power cuts");
    assert!(cuts > 500, "{cuts} cuts");
}

#[test]
fn an_erase_only_attacker_gets_no_budget_back() {
    const E: usize = 128;
    const PAGES: usize = 4; // flag + 3 log pages of 2 slots
    type F = RamFlash<{ E * PAGES }, E, 4>;
    let cap = eps(1000, 1);
    let mut flash = F::new();
    let mut ledger = Ledger::open(FlashStore::new(&mut flash), cap).unwrap();
    for acked in 1..=20u64 {
        ledger.debit(eps(1, 1)).unwrap();
        let snapshot: F = (**ledger.store().flash()).clone();
        // Every set of pages the attacker could erase, the flag page included.
        for set in 1u32..(1 << PAGES) {
            let mut attacked = snapshot.clone();
            for p in 0..PAGES {
                if set & (1 << p) != 0 {
                    attacked.erase_range(p * E..(p + 1) * E);
                }
            }
            let all_erased = attacked.bytes().iter().all(|&b| b == 0xff);
            let reopened = Ledger::open(FlashStore::new(&mut attacked), cap).unwrap();
            if all_erased {
                assert_eq!(reopened.spent().num(), 0, "only a blank region is new");
            } else if reopened.is_corrupted() {
                assert_eq!(
                    FlashStore::new(&mut attacked).store(&[0; LEDGER_RECORD_LEN]),
                    Err(StoreError::Tampered),
                    "a tampered store writes nothing"
                );
            } else {
                assert_eq!(
                    reopened.spent().num(),
                    acked,
                    "after {acked} debits, erasing pages {set:#b} refunded budget"
                );
            }
        }
    }
    // Erasing the log pages (the flag kept) fails closed; so does erasing only the page
    // that holds the newest record.
    let flash = ledger.into_store().into_flash();
    let mut attacked = flash.clone();
    attacked.erase_range(E..E * PAGES);
    assert!(
        Ledger::open(FlashStore::new(&mut attacked), cap)
            .unwrap()
            .is_corrupted()
    );
    assert_eq!(
        UploadCounters::open(FlashStore::new(&mut attacked)).err(),
        Some(Error::CountersCorrupted)
    );
}

#[test]
fn the_budget_survives_reboots_and_the_log_wears_evenly() {
    let mut flash = RamFlash::<1024>::new(); // flag page + 3 log pages of 4 slots
    assert_eq!(FlashStore::<RamFlash<1024>>::SLOT_LEN, 56);
    assert_eq!(FlashStore::<RamFlash<1024>>::SLOTS_PER_PAGE, 4);
    let cap = eps(10, 1);
    let mut ledger = Ledger::open(FlashStore::new(&mut flash), cap).unwrap();
    assert_eq!(ledger.store().slots(), 12);
    assert!(ledger.store_mut().is_provisioned().unwrap());
    for _ in 0..40 {
        ledger.debit(eps(1, 4)).unwrap();
    }
    assert_eq!(ledger.debit(eps(1, 4)), Err(Error::BudgetExhausted));
    // 41 records in 12 slots: the ring wrapped three times, 37 slot writes after the first
    // page's, so 10 page changes (and the first-boot erase of all 3 log pages).
    assert_eq!(flash.erases(), 3 + 10);
    let ledger = Ledger::open(FlashStore::new(&mut flash), cap).unwrap();
    assert_eq!((ledger.spent().num(), ledger.spent().den()), (10, 1));
    assert!(!ledger.can_spend(eps(1, 1000)));
}

#[test]
fn regions_and_offsets() {
    // Three pages of a larger flash, not at its start.
    let mut flash = RamFlash::<{ 8 * 256 }>::new();
    let region = 3 * 256..6 * 256;
    let mut ledger =
        Ledger::open(FlashStore::in_region(&mut flash, region.clone()), eps(2, 1)).unwrap();
    ledger.debit(eps(1, 1)).unwrap();
    assert!(flash.bytes()[..3 * 256].iter().all(|&b| b == 0xff));
    assert!(flash.bytes()[6 * 256..].iter().all(|&b| b == 0xff));
    assert_eq!(&flash.bytes()[3 * 256..3 * 256 + 4], b"PQPV");
    let ledger = Ledger::open(FlashStore::in_region(&mut flash, region), eps(2, 1)).unwrap();
    assert_eq!(ledger.spent().num(), 1);

    // Layouts that do not fit: every operation says `Layout`, `check_layout` says which (too
    // few pages, unaligned, past the end, reversed, too many pages, a page without a slot, a
    // write size above 64 bytes).
    #[allow(clippy::reversed_empty_ranges)] // a reversed region is one of the bad layouts
    let bad_regions = [
        (0..512, StorageKind::RegionPages),
        (100..868, StorageKind::RegionUnaligned),
        (1792..2560, StorageKind::RegionOutOfBounds),
        (512..256, StorageKind::RegionPages),
    ];
    for (bad, kind) in bad_regions {
        let mut store = FlashStore::in_region(&mut flash, bad.clone());
        assert_eq!(store.check_layout(), Err(kind), "{bad:?}");
        assert_eq!(store.load(), Err(StoreError::Layout), "{bad:?}");
        assert!(matches!(
            Ledger::open(store, eps(1, 1)),
            Err(Error::Storage(StorageKind::Layout))
        ));
        if bad.end <= 2048 {
            assert_eq!(
                FlashStore::<RamFlash<{ 8 * 256 }>>::check_region(&bad),
                Err(kind)
            );
        }
    }
    let mut big = RamFlash::<{ 40 * 256 }>::new();
    let mut store = FlashStore::new(&mut big);
    assert_eq!(store.check_layout(), Err(StorageKind::RegionPages));
    assert_eq!(store.load(), Err(StoreError::Layout));
    let mut tiny = RamFlash::<{ 3 * 32 }, 32, 4>::new();
    let mut store = FlashStore::new(&mut tiny);
    assert_eq!(store.check_layout(), Err(StorageKind::Layout));
    assert_eq!(store.load(), Err(StoreError::Layout));
    let mut wide = RamFlash::<{ 3 * 256 }, 256, 128>::new();
    assert_eq!(
        FlashStore::new(&mut wide).check_layout(),
        Err(StorageKind::Layout)
    );
    // The checks that need no driver, in a `const`.
    const CHECKED: Result<(), StorageKind> = FlashStore::<RamFlash<768>>::check_region(&(0..768));
    assert_eq!(CHECKED, Ok(()));
}

/// Slot `slot` of log page `page` in a `RamFlash` with 256-byte pages, as a byte offset.
fn slot_at(page: usize, slot: usize) -> usize {
    (page + 1) * 256 + slot * FlashStore::<RamFlash<768>>::SLOT_LEN
}

#[test]
fn a_damaged_newest_slot_fails_closed() {
    let mut flash = RamFlash::<768>::new();
    let mut ledger = Ledger::open(FlashStore::new(&mut flash), eps(4, 1)).unwrap();
    ledger.debit(eps(1, 1)).unwrap();
    ledger.debit(eps(1, 1)).unwrap();
    // Records in slots 0..3 of the first log page. Clearing bits of the newest, committed
    // record (a program-only attacker, marginal cells) must not fall back to the one before.
    let mut damaged = flash.clone();
    damaged.bytes_mut()[slot_at(0, 2) + 4] &= 0x0f; // the record's magic 'P'
    let ledger = Ledger::open(FlashStore::new(&mut damaged), eps(4, 1)).unwrap();
    assert!(ledger.is_corrupted());
    assert!(!ledger.can_spend(eps(1, 1000)));
    assert_eq!(
        FlashStore::new(&mut damaged).store(&[0; LEDGER_RECORD_LEN]),
        Err(StoreError::Tampered)
    );
    // So must damage to an older record of the same page, and clearing bits of several.
    let mut older = flash.clone();
    older.bytes_mut()[slot_at(0, 1) + 30] ^= 0x01;
    assert!(
        Ledger::open(FlashStore::new(&mut older), eps(4, 1))
            .unwrap()
            .is_corrupted()
    );
    let mut several = flash.clone();
    for slot in 1..3 {
        several.bytes_mut()[slot_at(0, slot) + 4] &= 0x0f;
    }
    assert!(
        Ledger::open(FlashStore::new(&mut several), eps(4, 1))
            .unwrap()
            .is_corrupted()
    );
}

#[test]
fn a_torn_slot_without_its_commit_word_is_skipped() {
    let mut flash = RamFlash::<768>::new();
    let mut ledger = Ledger::open(FlashStore::new(&mut flash), eps(4, 1)).unwrap();
    ledger.debit(eps(1, 1)).unwrap();
    // A store cut after the body of slot 2 but before its commit word: a torn write.
    let body_len = FlashStore::<RamFlash<768>>::SLOT_LEN - 4;
    let mut torn = flash.clone();
    let body: Vec<u8> = torn.bytes()[slot_at(0, 1)..slot_at(0, 1) + body_len].to_vec();
    torn.bytes_mut()[slot_at(0, 2)..slot_at(0, 2) + body_len].copy_from_slice(&body);
    torn.bytes_mut()[slot_at(0, 2) + 9] &= 0x3f;
    let mut ledger = Ledger::open(FlashStore::new(&mut torn), eps(4, 1)).unwrap();
    assert!(!ledger.is_corrupted());
    assert_eq!(ledger.spent().num(), 1);
    // The next record skips the torn slot.
    ledger.debit(eps(1, 1)).unwrap();
    assert!(
        torn.bytes()[slot_at(0, 3)..slot_at(0, 4)]
            .iter()
            .any(|&b| b != 0xff)
    );
    assert_eq!(
        Ledger::open(FlashStore::new(&mut torn), eps(4, 1))
            .unwrap()
            .spent()
            .num(),
        2
    );
}

/// The review's reproduction: one bit flip (either way) in the newest record after
/// acknowledged debits gave budget back.
#[test]
fn a_bit_flip_in_the_newest_record_gives_no_budget_back() {
    type F = RamFlash<{ 4 * 256 }>; // flag + 3 log pages of 4 slots
    let mut flash = F::new();
    let mut ledger = Ledger::open(FlashStore::new(&mut flash), eps(10, 1)).unwrap();
    for _ in 0..3 {
        ledger.debit(eps(1, 1)).unwrap(); // slots 0..=3 of log page 0
    }
    for byte in 0..FlashStore::<F>::SLOT_LEN - 4 {
        for bit in 0..8 {
            let mut flipped = flash.clone();
            flipped.bytes_mut()[slot_at(0, 3) + byte] ^= 1 << bit;
            let ledger = Ledger::open(FlashStore::new(&mut flipped), eps(10, 1)).unwrap();
            assert!(
                ledger.is_corrupted() || ledger.spent().num() == 3,
                "a flip of bit {bit} of byte {byte}: spent {}",
                ledger.spent().num()
            );
        }
    }
}

/// The same for the upload counters: a bit flip in the newest record handed an epoch out
/// twice.
#[test]
fn a_bit_flip_in_the_newest_counters_repeats_no_epoch() {
    type F = RamFlash<{ 4 * 256 }>;
    let mut flash = F::new();
    let mut counters = UploadCounters::open(FlashStore::new(&mut flash)).unwrap();
    let _ = counters.begin_epoch(0).unwrap();
    let e1 = counters.begin_epoch(2).unwrap();
    for byte in 0..FlashStore::<F>::SLOT_LEN - 4 {
        for bit in 0..8 {
            let mut flipped = flash.clone();
            flipped.bytes_mut()[slot_at(0, 2) + byte] ^= 1 << bit;
            match UploadCounters::open(FlashStore::new(&mut flipped)) {
                Err(e) => assert!(matches!(e, Error::CountersCorrupted | Error::Storage(_))),
                Ok(c) => assert!(
                    c.next_epoch() > e1,
                    "a flip of bit {bit} of byte {byte}: epoch {e1} again"
                ),
            }
        }
    }
}

/// Before the ring wraps, erasing the flag page and the only log page written so far does
/// not make the device new: every log page carries a formatted word from provisioning on.
#[test]
fn erasing_the_flag_and_the_written_log_page_is_not_a_new_device() {
    type F = RamFlash<{ 4 * 256 }>;
    let mut flash = F::new();
    let mut ledger = Ledger::open(FlashStore::new(&mut flash), eps(4, 1)).unwrap();
    for _ in 0..3 {
        ledger.debit(eps(1, 1)).unwrap();
    }
    flash.erase_range(0..512); // flag page + log page 0 (2 of 4 pages)
    let ledger = Ledger::open(FlashStore::new(&mut flash), eps(4, 1)).unwrap();
    assert!(ledger.is_corrupted());
    assert_eq!(
        FlashStore::new(&mut flash).store(&[0; LEDGER_RECORD_LEN]),
        Err(StoreError::Tampered)
    );
    assert_eq!(
        UploadCounters::open(FlashStore::new(&mut flash)).err(),
        Some(Error::CountersCorrupted)
    );
}

#[test]
fn flash_faults_are_storage_errors_and_fail_closed() {
    let mut flash = RamFlash::<768>::new();
    flash.set_failing(true);
    assert!(matches!(
        Ledger::open(FlashStore::new(&mut flash), eps(1, 1)),
        Err(Error::Storage(StorageKind::FlashOther))
    ));
    flash.set_failing(false);
    let mut ledger = Ledger::open(FlashStore::new(&mut flash), eps(4, 1)).unwrap();
    ledger.store_mut().flash_mut().set_failing(true);
    assert_eq!(
        ledger.debit(eps(1, 1)),
        Err(Error::Storage(StorageKind::FlashOther))
    );
    assert_eq!(ledger.spent().num(), 1, "counted as spent in memory");
    ledger.store_mut().flash_mut().set_failing(false);
    ledger.debit(eps(1, 1)).unwrap();
    assert_eq!(
        Ledger::open(FlashStore::new(&mut flash), eps(4, 1))
            .unwrap()
            .spent()
            .num(),
        2
    );
}

#[test]
fn a_torn_provisioning_word_still_counts() {
    let mut flash = RamFlash::<768>::new();
    flash.write(0, &[b'P', 0xff, 0xff, 0xff]).unwrap();
    assert!(
        Ledger::open(FlashStore::new(&mut flash), eps(1, 1))
            .unwrap()
            .is_corrupted()
    );
}

#[test]
fn ram_flash_programs_each_word_once() {
    let mut f = RamFlash::<512>::new();
    f.write(0, &[0x0f, 0xff, 0xff, 0xff]).unwrap();
    assert_eq!(
        f.write(0, &[0x0e, 0xff, 0xff, 0xff]),
        Err(privq_core::flash_store::RamFlashError::NotErased)
    );
    assert_eq!(
        f.write(2, &[0; 4]).unwrap_err().kind(),
        NorFlashErrorKind::NotAligned
    );
    assert_eq!(
        f.write(512, &[0; 4]).unwrap_err().kind(),
        NorFlashErrorKind::OutOfBounds
    );
    assert_eq!(
        f.erase(0, 100).unwrap_err().kind(),
        NorFlashErrorKind::NotAligned
    );
    f.erase(0, 256).unwrap();
    assert_eq!(f.bytes()[0], 0xff);
    assert_eq!(f.erases(), 1);
}

/// The store's error reaches the caller with its kind: the flash store's own errors as
/// themselves, a driver's by its `NorFlashErrorKind`.
#[test]
fn storage_errors_keep_their_kind() {
    type E = StoreError<RamFlashError>;
    let kinds = [
        (E::Layout, StorageKind::Layout, 81),
        (E::Tampered, StorageKind::Tampered, 82),
        (E::Exhausted, StorageKind::Exhausted, 83),
        (
            E::Flash(RamFlashError::NotAligned),
            StorageKind::FlashNotAligned,
            84,
        ),
        (
            E::Flash(RamFlashError::OutOfBounds),
            StorageKind::FlashOutOfBounds,
            85,
        ),
        (
            E::Flash(RamFlashError::NotErased),
            StorageKind::FlashOther,
            86,
        ),
        (E::Flash(RamFlashError::Fault), StorageKind::FlashOther, 86),
    ];
    for (store_error, kind, code) in kinds {
        assert_eq!(store_error.kind(), kind);
        assert_eq!(Error::from(store_error), Error::Storage(kind));
        assert_eq!(Error::Storage(kind).code(), code);
    }
    // The layout problems `check_layout` and `check_region` name (and `SharedFlash`'s,
    // which reports overlapping or already-used regions as `Layout`).
    for (kind, code) in [
        (StorageKind::RegionUnaligned, 87),
        (StorageKind::RegionPages, 88),
        (StorageKind::RegionOutOfBounds, 89),
    ] {
        assert_eq!(Error::Storage(kind).code(), code);
    }
}

/// One flash driver, two regions, both stores alive: the ledger and the upload counters on a
/// `SharedFlash`, interleaved long enough that both logs wrap (each erases its own pages), and
/// neither touches the other's region.
#[test]
fn shared_flash_holds_ledger_and_counters() {
    // The ledger on pages 0..3, the counters on 4..7; page 3 and 7 hold nothing.
    let flash = SharedFlash::new(RamFlash::<{ 8 * 256 }>::new(), [0..768, 1024..1792]).unwrap();
    let ledger_store = FlashStore::new(flash.region(0).unwrap());
    assert_eq!(ledger_store.check_layout(), Ok(()));
    assert_eq!(ledger_store.log_pages(), 2);
    let mut ledger = Ledger::open(ledger_store, eps(100, 1)).unwrap();
    let mut counters = UploadCounters::open(FlashStore::new(flash.region(1).unwrap())).unwrap();
    let rounds = 3 * FlashStore::<RamFlash<768>>::SLOTS_PER_PAGE as u32 + 2;
    for round in 0..rounds {
        ledger.debit(eps(1, 1)).unwrap();
        assert_eq!(counters.begin_epoch(round).unwrap(), round);
    }
    let _ = (ledger.into_store(), counters.into_store());
    let mut flash = flash.into_inner();
    assert!(flash.erases() >= 4, "both logs wrapped");
    assert_eq!(&flash.bytes()[..4], b"PQPV");
    assert_eq!(&flash.bytes()[1024..1028], b"PQPV");
    assert!(flash.bytes()[768..1024].iter().all(|&b| b == 0xff));
    assert!(flash.bytes()[1792..].iter().all(|&b| b == 0xff));

    // Reboot, through a new `SharedFlash` on the same driver.
    {
        let shared = SharedFlash::new(&mut flash, [0..768, 1024..1792]).unwrap();
        let ledger = Ledger::open(FlashStore::new(shared.region(0).unwrap()), eps(100, 1)).unwrap();
        let counters = UploadCounters::open(FlashStore::new(shared.region(1).unwrap())).unwrap();
        assert_eq!(ledger.spent().num(), u64::from(rounds));
        assert_eq!(counters.next_epoch(), rounds);
    }

    // Reboot (re-borrowing the driver one store at a time works as well).
    let ledger = Ledger::open(FlashStore::in_region(&mut flash, 0..768), eps(100, 1)).unwrap();
    assert_eq!(ledger.spent().num(), u64::from(rounds));
    let _ = ledger.into_store();
    let counters = UploadCounters::open(FlashStore::in_region(&mut flash, 1024..1792)).unwrap();
    assert_eq!(counters.next_epoch(), rounds);

    // A driver fault reaches the caller with its kind, through the shared driver.
    flash.set_failing(true);
    let shared = SharedFlash::new(flash, [0..768, 1024..1792]).unwrap();
    assert_eq!(
        Ledger::open(FlashStore::new(shared.region(0).unwrap()), eps(100, 1)).unwrap_err(),
        Error::Storage(StorageKind::FlashOther)
    );
    assert_eq!(
        SharedFlashError::<RamFlashError>::Busy.kind(),
        NorFlashErrorKind::Other
    );
    assert_eq!(
        SharedFlashError::<RamFlashError>::OutOfBounds.kind(),
        NorFlashErrorKind::OutOfBounds
    );
}

type Shared2 = SharedFlash<RamFlash<{ 8 * 256 }>, 2>;

/// The region table is refused when two regions share a page (identical ones included), and
/// for the other region problems, each with its kind; `check_regions` is a `const fn`.
#[test]
fn shared_flash_refuses_overlapping_regions() {
    const GOOD: [core::ops::Range<u32>; 2] = [0..768, 768..1536];
    const _: () = assert!(Shared2::check_regions(&GOOD).is_ok());
    const REVERSED: core::ops::Range<u32> = core::ops::Range {
        start: 1536,
        end: 1024,
    };
    let cases: [([core::ops::Range<u32>; 2], StorageKind); 10] = [
        ([0..768, 0..768], StorageKind::Layout),
        ([0..768, 512..1280], StorageKind::Layout),
        ([512..1280, 0..768], StorageKind::Layout),
        ([0..1024, 256..768], StorageKind::Layout),
        ([256..768, 0..1024], StorageKind::Layout),
        ([0..768, 100..868], StorageKind::RegionUnaligned),
        ([0..768, 768..1000], StorageKind::RegionUnaligned),
        ([0..768, 1024..1024], StorageKind::RegionPages),
        ([0..768, REVERSED], StorageKind::RegionPages),
        ([0..768, 1536..2304], StorageKind::RegionOutOfBounds),
    ];
    for (regions, kind) in cases {
        let checked = Shared2::check_regions(&regions);
        if kind == StorageKind::RegionOutOfBounds {
            assert_eq!(
                checked,
                Ok(()),
                "{regions:?}: only the driver knows its end"
            );
        } else {
            assert_eq!(checked, Err(kind), "{regions:?}");
        }
        let shared = SharedFlash::new(RamFlash::<{ 8 * 256 }>::new(), regions.clone());
        assert_eq!(shared.err(), Some(Error::Storage(kind)), "{regions:?}");
    }
    // Adjacent regions and a table of one or none are fine.
    assert!(SharedFlash::new(RamFlash::<{ 8 * 256 }>::new(), GOOD).is_ok());
    let whole = core::ops::Range {
        start: 0,
        end: 2048,
    };
    assert!(SharedFlash::new(RamFlash::<{ 8 * 256 }>::new(), [whole]).is_ok());
    assert!(SharedFlash::new(RamFlash::<{ 8 * 256 }>::new(), []).is_ok());
    // Three regions, the first and the last overlapping.
    let three = SharedFlash::new(
        RamFlash::<{ 8 * 256 }>::new(),
        [0..768, 768..1024, 512..768],
    );
    assert_eq!(three.err(), Some(Error::Storage(StorageKind::Layout)));
}

/// A region is handed out once at a time: two stores (here two ledgers, which would each
/// keep their own spent budget and together release twice the cap) cannot be opened on it.
/// Dropping the store gives the region back, and a reboot sees every charge.
#[test]
fn shared_flash_hands_out_each_region_once() {
    let flash = Shared2::new(RamFlash::new(), [0..768, 1024..1792]).unwrap();
    let mut a = Ledger::open(FlashStore::new(flash.region(0).unwrap()), eps(2, 1)).unwrap();
    assert_eq!(
        flash.region(0).map(|_| ()),
        Err(Error::Storage(StorageKind::Layout))
    );
    assert_eq!(
        flash.region(2).map(|_| ()),
        Err(Error::Storage(StorageKind::RegionOutOfBounds))
    );
    a.debit(eps(1, 1)).unwrap();
    a.debit(eps(1, 1)).unwrap();
    assert!(a.debit(eps(1, 1)).is_err(), "the cap holds");
    drop(a);
    // Given back: the next store reads every charge.
    let b = Ledger::open(FlashStore::new(flash.region(0).unwrap()), eps(2, 1)).unwrap();
    assert_eq!(b.spent().num(), 2);
    // A leaked handle leaves its region unusable, never shared.
    core::mem::forget(b);
    assert_eq!(
        flash.region(0).map(|_| ()),
        Err(Error::Storage(StorageKind::Layout))
    );
    // The other region is untouched by all of this.
    let counters = UploadCounters::open(FlashStore::new(flash.region(1).unwrap())).unwrap();
    assert_eq!(counters.next_epoch(), 0);
    drop(counters);
    let counters = UploadCounters::open(FlashStore::new(flash.region(1).unwrap())).unwrap();
    assert_eq!(counters.next_epoch(), 0);
}

/// A region is a window: offsets from its start, `capacity()` its length, an access outside
/// it refused without touching the driver (the pages around it stay erased).
#[test]
fn shared_flash_region_is_a_window() {
    let flash = Shared2::new(RamFlash::new(), [256..1024, 1280..2048]).unwrap();
    let mut r = flash.region(1).unwrap();
    assert_eq!(r.capacity(), 768);
    r.write(0, b"abcd").unwrap();
    let mut word = [0; 4];
    r.read(0, &mut word).unwrap();
    assert_eq!(&word, b"abcd");
    r.write(764, b"wxyz").unwrap();
    for e in [
        r.write(768, b"efgh").unwrap_err(),
        r.write(766, b"efgh").unwrap_err(),
        r.read(u32::MAX, &mut word).unwrap_err(),
        r.erase(0, 1024).unwrap_err(),
        r.erase(512, 256).unwrap_err(),
    ] {
        assert_eq!(e, SharedFlashError::OutOfBounds);
        assert_eq!(e.kind(), NorFlashErrorKind::OutOfBounds);
    }
    assert_eq!(
        r.write(2, b"efgh").unwrap_err(),
        SharedFlashError::Flash(RamFlashError::NotAligned)
    );
    r.erase(512, 768).unwrap();
    drop(r);
    let flash = flash.into_inner();
    assert_eq!(&flash.bytes()[1280..1284], b"abcd");
    assert!(flash.bytes()[1792..].iter().all(|&b| b == 0xff));
    assert!(flash.bytes()[..1280].iter().all(|&b| b == 0xff));
}

std::thread_local! {
    /// What [`Hooked`] runs at its next write.
    static HOOK: std::cell::RefCell<Option<Box<dyn FnMut()>>> =
        const { std::cell::RefCell::new(None) };
}

/// A flash driver whose `write` first runs the hook in [`HOOK`] (a driver that calls back
/// into a store).
struct Hooked(RamFlash<{ 8 * 256 }>);

impl ErrorType for Hooked {
    type Error = RamFlashError;
}

impl ReadNorFlash for Hooked {
    const READ_SIZE: usize = 1;
    fn read(&mut self, offset: u32, bytes: &mut [u8]) -> Result<(), RamFlashError> {
        self.0.read(offset, bytes)
    }
    fn capacity(&self) -> usize {
        self.0.capacity()
    }
}

impl NorFlash for Hooked {
    const WRITE_SIZE: usize = 4;
    const ERASE_SIZE: usize = 256;
    fn erase(&mut self, from: u32, to: u32) -> Result<(), RamFlashError> {
        self.0.erase(from, to)
    }
    fn write(&mut self, offset: u32, bytes: &[u8]) -> Result<(), RamFlashError> {
        if let Some(mut hook) = HOOK.with(|h| h.borrow_mut().take()) {
            hook();
        }
        self.0.write(offset, bytes)
    }
}

/// An operation of one store from inside the driver's call for another (the driver is
/// borrowed) is refused as a busy driver, not mistaken for a layout problem: a region's
/// capacity does not depend on the driver.
#[test]
fn shared_flash_nested_operation_is_busy() {
    use std::cell::RefCell;
    use std::rc::Rc;

    let shared: &'static SharedFlash<Hooked, 2> = Box::leak(Box::new(
        SharedFlash::new(Hooked(RamFlash::new()), [0..768, 1024..1792]).unwrap(),
    ));
    let mut inner = FlashStore::new(shared.region(1).unwrap());
    assert_eq!(inner.check_layout(), Ok(()));
    let seen = Rc::new(RefCell::new(None));
    let hook_seen = Rc::clone(&seen);
    HOOK.with(|h| {
        *h.borrow_mut() = Some(Box::new(move || {
            *hook_seen.borrow_mut() = Some((inner.load(), inner.check_layout()));
        }))
    });
    let mut ledger = Ledger::open(FlashStore::new(shared.region(0).unwrap()), eps(4, 1)).unwrap();
    ledger.debit(eps(1, 1)).unwrap();
    assert_eq!(
        seen.borrow_mut().take(),
        Some((Err(StoreError::Flash(SharedFlashError::Busy)), Ok(())))
    );
}

/// Overlapping regions cannot be shared: had they been (counters on pages 0..3, the ledger on
/// 2..5), the counters' first erase would wipe the ledger's flag page, and an erase of the
/// ledger's log pages alone would then read as a new device. Disjoint regions keep the
/// fail-closed rule: the same erase leaves the ledger refusing everything.
#[test]
fn shared_flash_keeps_an_erased_log_fail_closed() {
    let overlapping = Shared2::new(RamFlash::new(), [512..1280, 0..768]);
    assert_eq!(overlapping.err(), Some(Error::Storage(StorageKind::Layout)));

    let flash = Shared2::new(RamFlash::new(), [768..1536, 0..768]).unwrap();
    let mut ledger = Ledger::open(FlashStore::new(flash.region(0).unwrap()), eps(2, 1)).unwrap();
    ledger.debit(eps(2, 1)).unwrap(); // the lifetime budget, all spent
    let mut counters = UploadCounters::open(FlashStore::new(flash.region(1).unwrap())).unwrap();
    assert_eq!(counters.begin_epoch(0).unwrap(), 0);
    assert!(ledger.debit(eps(1, 1)).is_err());
    drop((ledger, counters));
    let mut raw = flash.into_inner();
    assert_eq!(&raw.bytes()[768..772], b"PQPV");
    raw.erase_range(1024..1536); // an attacker erases the ledger's log pages only
    let flash = Shared2::new(raw, [768..1536, 0..768]).unwrap();
    let ledger = Ledger::open(FlashStore::new(flash.region(0).unwrap()), eps(2, 1)).unwrap();
    assert!(ledger.is_corrupted(), "fails closed");
    drop(ledger);
    // And the counters' log pages: no epoch is handed out again.
    let mut raw = flash.into_inner();
    raw.erase_range(256..768);
    let flash = Shared2::new(raw, [768..1536, 0..768]).unwrap();
    assert_eq!(
        UploadCounters::open(FlashStore::new(flash.region(1).unwrap())).err(),
        Some(Error::CountersCorrupted)
    );
}

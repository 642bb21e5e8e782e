//! The device's lifetime privacy budget.
//!
//! A [`Ledger`] holds a lifetime cap on ε and the exact total spent so far. Every
//! release goes through [`Ledger::release`]: it validates the input, **debits the
//! ledger and persists the new total first**, and only then randomizes. A release
//! that would take the total above the cap is refused with
//! [`Error::BudgetExhausted`]; nothing is drawn and nothing is written.
//!
//! The ledger lives in a [`LedgerStore`] (a few bytes of flash, EEPROM or a file)
//! as a 41-byte record with a CRC-32. A record that fails any check (magic,
//! version, CRC, zero denominators, spent above cap) marks the ledger
//! **corrupted**: it refuses every release with [`Error::LedgerCorrupted`], never
//! treats the device as fresh. A store that has never been written (`load` returns
//! `None`) starts a fresh ledger; a store must therefore map erased flash to
//! `None` only on first boot (e.g. by keeping a separate provisioning flag), since
//! anyone who can erase the record can reset the budget. With the cargo feature
//! `flash-ledger`, `flash_store::FlashStore` is such a store on any
//! `embedded_storage::nor_flash::NorFlash`: provisioning flag, wear levelling, and
//! tested against a power cut at every word it programs or erases.
//!
//! ```
//! use privq_core::ledger::{Ledger, MemoryStore};
//! use privq_core::local::{BinaryRr, QueryId};
//! use privq_core::{Epsilon, Error};
//! use privq_core::rng::ChaCha12;
//! use rand_core::SeedableRng;
//!
//! let mut rng = ChaCha12::from_seed([1; 32]); // tests only: a device seeds from its TRNG
//! let mut ledger = Ledger::open(MemoryStore::new(), Epsilon::new(1, 1)?)?;
//! let rr = BinaryRr::new(Epsilon::new(1, 2)?)?;
//! let mut buf = [0u8; 13];
//! ledger.release(&rr, &true, QueryId(0), &mut rng, &mut buf)?;
//! ledger.release(&rr, &true, QueryId(1), &mut rng, &mut buf)?;
//! assert_eq!(ledger.release(&rr, &true, QueryId(2), &mut rng, &mut buf), Err(Error::BudgetExhausted));
//! # Ok::<(), privq_core::Error>(())
//! ```

use core::cmp::Ordering;

use rand_core::{CryptoRng, Rng};

use crate::epsilon::{Epsilon, add_fractions, gcd};
use crate::error::{Error, Result, StorageKind};
use crate::local::{LocalRandomizer, QueryId};

/// Bytes in a stored ledger record.
pub const LEDGER_RECORD_LEN: usize = 41;
const MAGIC: [u8; 4] = *b"PQLG";
const RECORD_VERSION: u8 = 1;

/// Persistent storage for one ledger record (embedded-hal style: the store's own
/// error type is kept out of the core's error enum).
pub trait LedgerStore {
    /// The store's error.
    type Error;

    /// The stored record, or `None` if the store has never been written.
    fn load(&mut self) -> core::result::Result<Option<[u8; LEDGER_RECORD_LEN]>, Self::Error>;

    /// Replaces the stored record. Must not return before the record is durable. If the
    /// power fails before it returns, the next `load` may return the old record or the new
    /// one (the caller released nothing on the strength of an unfinished store), but never
    /// `None` once a record was stored.
    fn store(&mut self, record: &[u8; LEDGER_RECORD_LEN]) -> core::result::Result<(), Self::Error>;

    /// What kind of failure `error` is, for [`Error::Storage`] (the ledger and the upload
    /// counters return the core's error enum, so the store's own error is classified here
    /// rather than dropped). The default, for stores that cannot tell, is
    /// [`StorageKind::Unspecified`]; the flash store maps its own errors and the flash
    /// driver's `NorFlashErrorKind`.
    fn error_kind(error: &Self::Error) -> StorageKind {
        let _ = error;
        StorageKind::Unspecified
    }
}

/// `error` of store `S` as the core's [`Error::Storage`], with its kind kept.
pub(crate) fn storage_error<S: LedgerStore + ?Sized>(error: S::Error) -> Error {
    Error::Storage(S::error_kind(&error))
}

/// A [`LedgerStore`] in RAM (host simulations and tests); it can be told to fail.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    record: Option<[u8; LEDGER_RECORD_LEN]>,
    fail: bool,
}

impl MemoryStore {
    /// An empty (never written) store.
    pub const fn new() -> MemoryStore {
        MemoryStore {
            record: None,
            fail: false,
        }
    }

    /// A store holding `record`.
    pub const fn with_record(record: [u8; LEDGER_RECORD_LEN]) -> MemoryStore {
        MemoryStore {
            record: Some(record),
            fail: false,
        }
    }

    /// Makes every later `load`/`store` fail (simulated flash fault).
    pub fn set_failing(&mut self, fail: bool) {
        self.fail = fail;
    }

    /// The current record.
    pub fn record(&self) -> Option<[u8; LEDGER_RECORD_LEN]> {
        self.record
    }
}

/// The failure of a [`MemoryStore`] told to fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreFault;

impl LedgerStore for MemoryStore {
    type Error = StoreFault;

    fn load(&mut self) -> core::result::Result<Option<[u8; LEDGER_RECORD_LEN]>, StoreFault> {
        if self.fail {
            Err(StoreFault)
        } else {
            Ok(self.record)
        }
    }

    fn store(&mut self, record: &[u8; LEDGER_RECORD_LEN]) -> core::result::Result<(), StoreFault> {
        if self.fail {
            return Err(StoreFault);
        }
        self.record = Some(*record);
        Ok(())
    }
}

/// A non-negative exact rational (the amount spent; may be zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Spent {
    num: u64,
    den: u64,
}

impl Spent {
    /// Nothing spent.
    pub const ZERO: Spent = Spent { num: 0, den: 1 };

    /// Numerator (reduced).
    pub const fn num(&self) -> u64 {
        self.num
    }

    /// Denominator (reduced, ≥ 1).
    pub const fn den(&self) -> u64 {
        self.den
    }

    /// As `f64` (display only).
    pub fn to_f64(&self) -> f64 {
        self.num as f64 / self.den as f64
    }

    fn plus(self, e: Epsilon) -> Result<Spent> {
        let (num, den) = add_fractions(self.num, self.den, e.num(), e.den())?;
        Ok(Spent { num, den })
    }

    fn cmp_eps(&self, e: Epsilon) -> Ordering {
        (u128::from(self.num) * u128::from(e.den()))
            .cmp(&(u128::from(e.num()) * u128::from(self.den)))
    }
}

/// CRC-32 (IEEE 802.3, reflected, as in zlib), bitwise: small code, no table.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

/// The lifetime budget of one device.
///
/// Flash cost (thumbv6m, measured by `tools/device-sizes.sh`): about 6.7 KB with the flash store
/// (`flash_store::FlashStore`) after an OUE report, including exact ε arithmetic and 64-bit
/// division; about 4.8 KB after a GRR report, which links those already.
#[derive(Debug)]
pub struct Ledger<S: LedgerStore> {
    store: S,
    cap: Epsilon,
    spent: Spent,
    corrupted: bool,
}

impl<S: LedgerStore> Ledger<S> {
    /// Opens the ledger in `store` with lifetime cap `cap`.
    ///
    /// A never-written store starts fresh (and the fresh record is written). A
    /// stored record's cap is honoured when it is lower than `cap`. A record that
    /// fails validation yields a ledger that refuses everything
    /// ([`Ledger::is_corrupted`]). Errors with [`Error::Storage`] (with the store's
    /// [`StorageKind`]) when the store
    /// cannot be read or the fresh record cannot be written.
    pub fn open(mut store: S, cap: Epsilon) -> Result<Ledger<S>> {
        let loaded = store.load().map_err(storage_error::<S>)?;
        let mut ledger = Ledger {
            store,
            cap,
            spent: Spent::ZERO,
            corrupted: false,
        };
        match loaded {
            None => ledger.persist(Spent::ZERO)?,
            Some(record) => match parse_record(&record) {
                Some((stored_cap, spent)) => {
                    ledger.cap = stored_cap.min(cap);
                    ledger.spent = spent;
                    // A stored total above the (possibly lowered) cap is still honoured:
                    // remaining() is then zero.
                }
                None => ledger.corrupted = true,
            },
        }
        Ok(ledger)
    }

    /// The lifetime cap.
    pub fn cap(&self) -> Epsilon {
        self.cap
    }

    /// The exact total spent.
    pub fn spent(&self) -> Spent {
        self.spent
    }

    /// Whether the stored record was corrupted (the ledger then refuses everything).
    pub fn is_corrupted(&self) -> bool {
        self.corrupted
    }

    /// Whether a release at `epsilon` would be accepted now.
    pub fn can_spend(&self, epsilon: Epsilon) -> bool {
        !self.corrupted
            && matches!(self.spent.plus(epsilon), Ok(total) if total.cmp_eps(self.cap) != Ordering::Greater)
    }

    /// Debits `epsilon`, persisting the new total before returning.
    ///
    /// Errors: [`Error::LedgerCorrupted`], [`Error::BudgetExhausted`] (the total
    /// would exceed the cap, or cannot be represented exactly), [`Error::Storage`]
    /// (the write failed: the amount is then counted as spent in memory, failing
    /// closed).
    pub fn debit(&mut self, epsilon: Epsilon) -> Result<()> {
        if self.corrupted {
            return Err(Error::LedgerCorrupted);
        }
        let total = self
            .spent
            .plus(epsilon)
            .map_err(|_| Error::BudgetExhausted)?;
        if total.cmp_eps(self.cap) == Ordering::Greater {
            return Err(Error::BudgetExhausted);
        }
        self.spent = total;
        self.persist(total)
    }

    /// Validates `input`, debits the randomizer's ε, then writes one report into
    /// `buf` and returns its length. Nothing is debited when the buffer is too
    /// small or the input invalid.
    pub fn release<M: LocalRandomizer, R: Rng + CryptoRng + ?Sized>(
        &mut self,
        randomizer: &M,
        input: &M::Input,
        query: QueryId,
        rng: &mut R,
        buf: &mut [u8],
    ) -> Result<usize> {
        if buf.len() < randomizer.report_len() {
            return Err(Error::BufferTooSmall);
        }
        randomizer.validate(input)?;
        self.debit(randomizer.epsilon())?;
        randomizer.privatize_into(input, query, rng, buf)
    }

    /// The underlying store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The underlying store, mutably (e.g. to inject faults in tests).
    pub fn store_mut(&mut self) -> &mut S {
        &mut self.store
    }

    /// Gives the store back.
    pub fn into_store(self) -> S {
        self.store
    }

    fn persist(&mut self, spent: Spent) -> Result<()> {
        let record = encode_record(self.cap, spent);
        self.store.store(&record).map_err(storage_error::<S>)
    }
}

fn encode_record(cap: Epsilon, spent: Spent) -> [u8; LEDGER_RECORD_LEN] {
    let mut r = [0u8; LEDGER_RECORD_LEN];
    let fields = [cap.num(), cap.den(), spent.num, spent.den];
    // Fixed-size pieces of a fixed-size array: nothing here can fail or panic.
    if let Some((magic, rest)) = r.split_first_chunk_mut::<4>() {
        *magic = MAGIC;
        if let Some((version, rest)) = rest.split_first_mut() {
            *version = RECORD_VERSION;
            for (chunk, f) in rest.chunks_exact_mut(8).zip(fields) {
                if let Ok(chunk) = <&mut [u8; 8]>::try_from(chunk) {
                    *chunk = f.to_le_bytes();
                }
            }
        }
    }
    let body_len = LEDGER_RECORD_LEN - 4;
    let crc = crc32(r.get(..body_len).unwrap_or(&[]));
    if let Some((_, tail)) = r.split_last_chunk_mut::<4>() {
        *tail = crc.to_le_bytes();
    }
    r
}

fn parse_record(r: &[u8; LEDGER_RECORD_LEN]) -> Option<(Epsilon, Spent)> {
    let body_len = LEDGER_RECORD_LEN - 4;
    let (body, tail) = r.split_at(body_len);
    let stored_crc = u32::from_le_bytes(tail.try_into().ok()?);
    if crc32(body) != stored_crc || body.get(..4)? != MAGIC || *body.get(4)? != RECORD_VERSION {
        return None;
    }
    let field = |i: usize| -> Option<u64> {
        let start = 5 + 8 * i;
        Some(u64::from_le_bytes(
            body.get(start..start + 8)?.try_into().ok()?,
        ))
    };
    let cap = Epsilon::new(field(0)?, field(1)?).ok()?;
    let (num, den) = (field(2)?, field(3)?);
    if den == 0 {
        return None;
    }
    let g = gcd(num, den);
    if g != 1 && num != 0 {
        // Records are always written reduced; anything else was not written by us.
        return None;
    }
    let spent = Spent {
        num,
        den: if num == 0 { 1 } else { den },
    };
    if spent.cmp_eps(cap) == Ordering::Greater {
        return None;
    }
    Some((cap, spent))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn record_layout_is_fixed() {
        let r = encode_record(Epsilon::new(3, 2).unwrap(), Spent { num: 5, den: 7 });
        let mut expected = [0u8; LEDGER_RECORD_LEN];
        expected[..4].copy_from_slice(b"PQLG");
        expected[4] = 1;
        for (i, f) in [3u64, 2, 5, 7].into_iter().enumerate() {
            expected[5 + 8 * i..13 + 8 * i].copy_from_slice(&f.to_le_bytes());
        }
        let crc = crc32(&expected[..37]);
        expected[37..].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(r, expected);
    }

    #[test]
    fn record_round_trips() {
        let cap = Epsilon::new(3, 2).unwrap();
        let spent = Spent { num: 5, den: 7 };
        let r = encode_record(cap, spent);
        assert_eq!(parse_record(&r), Some((cap, spent)));
    }
}

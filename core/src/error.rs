//! The core's error type.

use core::fmt;

/// Everything that can go wrong in `privq-core`.
///
/// Each variant names the problem; none of them is ever raised by a panic. Each has a stable
/// numeric code for C callers and logs, [`Error::code`] (never renumbered or reused).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// ε was zero (no privacy-preserving release is possible with ε = 0).
    EpsilonZero,
    /// ε was negative.
    EpsilonNegative,
    /// ε was NaN or infinite.
    EpsilonNotFinite,
    /// ε was positive but smaller than the smallest representable value (2⁻⁶³).
    EpsilonTooSmall,
    /// ε was larger than the largest representable value.
    EpsilonTooLarge,
    /// A text form of a number could not be parsed.
    Parse,
    /// A fraction had a zero denominator.
    ZeroDenominator,
    /// A probability `p/q` had `p > q`.
    ProbabilityAboveOne,
    /// A noise scale was zero.
    ScaleZero,
    /// A sensitivity was zero or negative.
    SensitivityNotPositive,
    /// An intermediate integer computation would overflow its checked type.
    Overflow,
    /// A value lies outside the range a fixed-point number can hold.
    OutOfRange,
    /// A grid exponent lies outside the supported range.
    GridOutOfRange,
    /// A histogram bin index was not below the number of bins.
    BinOutOfRange,
    /// A histogram counter reached its maximum under the `Error` saturation policy.
    CounterFull,
    /// A range was empty: zero bins, reversed bounds, or `[0, 0)`.
    EmptyRange,
    /// Two histograms with different binnings cannot be merged.
    BinningMismatch,
    /// A bounded-work sampler exhausted its fixed iteration budget (probability ≤ its reported δ).
    IterationBudgetExhausted,
    /// The caller's buffer is shorter than the report to be written.
    BufferTooSmall,
    /// An item index is not below the randomizer's domain size.
    ItemOutOfDomain,
    /// A domain size (or bucket count, or bound) is outside what the randomizer supports.
    InvalidDomain,
    /// A parameter cannot be written in the report format (e.g. ε's numerator or
    /// denominator does not fit in 16 bits).
    NotEncodable,
    /// The release would take the device's lifetime ε above its cap.
    BudgetExhausted,
    /// The stored budget ledger failed validation; the device refuses every release.
    LedgerCorrupted,
    /// The ledger's (or the upload counters') persistent store could not be read or
    /// written; the [`StorageKind`] says why, as far as the store can tell.
    Storage(StorageKind),
    /// A report is shorter than its header.
    ReportTruncated,
    /// A report has an unsupported format version.
    ReportVersion,
    /// A report names an unknown mechanism.
    UnknownMechanism,
    /// A report's header parameters are invalid (ε zero, or a domain, bucket count,
    /// bound or grid no randomizer produces).
    ReportParameter,
    /// A report's length differs from the length its header implies.
    ReportLength,
    /// A report's payload holds a value out of range (item ≥ domain, bit not 0/1,
    /// padding bits set, hash seed ≥ prime, value off its grid).
    ReportValueOutOfRange,
    /// The upload outbox has no room for the report (or no free frame slot for a
    /// seal); nothing was added or dropped.
    OutboxFull,
    /// The outbox has used every sequence number; it seals no further frame.
    SequenceExhausted,
    /// No pending upload frame has this sequence number at the front of the outbox.
    NotPending,
    /// An upload frame must hold at least one report.
    EmptyFrame,
    /// The stored upload counters (epoch, sequence) failed validation, or every
    /// epoch is used; the device uploads nothing rather than risk repeating a replay key.
    CountersCorrupted,
    /// ρ (zero-concentrated DP) was zero.
    RhoZero,
    /// ρ was negative, not finite, below 2⁻⁶³ or too large for a 64-bit fraction.
    RhoInvalid,
    /// An integer range does not split into bins of a whole number of units each.
    UnevenBins,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let msg = match self {
            Error::EpsilonZero => "epsilon must be positive, got 0",
            Error::EpsilonNegative => "epsilon must be positive, got a negative value",
            Error::EpsilonNotFinite => "epsilon must be a finite number (got NaN or infinity)",
            Error::EpsilonTooSmall => "epsilon is below the smallest supported value 2^-63",
            Error::EpsilonTooLarge => "epsilon is above the largest supported value",
            Error::Parse => "could not parse the number",
            Error::ZeroDenominator => "a fraction has a zero denominator",
            Error::ProbabilityAboveOne => "a probability p/q must satisfy p <= q",
            Error::ScaleZero => "the noise scale must be positive",
            Error::SensitivityNotPositive => "the sensitivity must be positive",
            Error::Overflow => "an integer computation would overflow",
            Error::OutOfRange => "the value is outside the fixed-point range",
            Error::GridOutOfRange => "the grid exponent is outside the supported range",
            Error::BinOutOfRange => "the histogram bin index is out of range",
            Error::CounterFull => "a histogram counter is full",
            Error::EmptyRange => "the range is empty (zero bins, or bounds empty or reversed)",
            Error::BinningMismatch => "the histograms have different binnings",
            Error::UnevenBins => "the range is not a whole number of units per bin",
            Error::IterationBudgetExhausted => {
                "the bounded-work sampler exhausted its iteration budget"
            }
            Error::BufferTooSmall => "the output buffer is too small for the report",
            Error::ItemOutOfDomain => "the item is not below the domain size",
            Error::InvalidDomain => "the domain size, bucket count or bound is not supported",
            Error::NotEncodable => {
                "a parameter does not fit the report format (epsilon needs a 16-bit numerator and denominator)"
            }
            Error::BudgetExhausted => {
                "the release would exceed the device's lifetime privacy budget"
            }
            Error::LedgerCorrupted => {
                "the stored privacy-budget ledger is corrupted; every release is refused"
            }
            Error::Storage(kind) => {
                f.write_str("the persistent store failed: ")?;
                return fmt::Display::fmt(kind, f);
            }
            Error::CountersCorrupted => {
                "the stored upload counters are corrupted or exhausted; nothing is uploaded"
            }
            Error::ReportTruncated => "the report is shorter than its header",
            Error::ReportVersion => "the report has an unsupported format version",
            Error::UnknownMechanism => "the report names an unknown mechanism",
            Error::ReportParameter => "the report's header parameters are invalid",
            Error::ReportLength => "the report's length does not match its header",
            Error::ReportValueOutOfRange => "the report's payload holds an out-of-range value",
            Error::OutboxFull => "the upload outbox is full; nothing was dropped",
            Error::SequenceExhausted => "the upload outbox has used every sequence number",
            Error::NotPending => "no pending upload frame has this sequence number",
            Error::EmptyFrame => "an upload frame needs at least one report",
            Error::RhoZero => "rho must be positive, got 0",
            Error::RhoInvalid => {
                "rho must be a positive finite number between 2^-63 and 2^64 (as a 64-bit fraction)"
            }
        };
        f.write_str(msg)
    }
}

impl core::error::Error for Error {}

/// Stable numeric codes, for C callers and logs.
///
/// Every error has a fixed `u16` code, grouped by area with room left in each group. A code
/// is **never renumbered and never reused**: a variant added later gets a new number, and a
/// variant removed leaves its number unused for good. 0 is never an error code (a C caller
/// may use it for success).
///
/// | code | error | | code | error |
/// |---:|---|---|---:|---|
/// | 1 | [`EpsilonZero`](Error::EpsilonZero) | | 40 | [`BufferTooSmall`](Error::BufferTooSmall) |
/// | 2 | [`EpsilonNegative`](Error::EpsilonNegative) | | 41 | [`NotEncodable`](Error::NotEncodable) |
/// | 3 | [`EpsilonNotFinite`](Error::EpsilonNotFinite) | | 50 | [`ReportTruncated`](Error::ReportTruncated) |
/// | 4 | [`EpsilonTooSmall`](Error::EpsilonTooSmall) | | 51 | [`ReportVersion`](Error::ReportVersion) |
/// | 5 | [`EpsilonTooLarge`](Error::EpsilonTooLarge) | | 52 | [`UnknownMechanism`](Error::UnknownMechanism) |
/// | 6 | [`Parse`](Error::Parse) | | 53 | [`ReportParameter`](Error::ReportParameter) |
/// | 7 | [`ZeroDenominator`](Error::ZeroDenominator) | | 54 | [`ReportLength`](Error::ReportLength) |
/// | 8 | [`ProbabilityAboveOne`](Error::ProbabilityAboveOne) | | 55 | [`ReportValueOutOfRange`](Error::ReportValueOutOfRange) |
/// | 9 | [`ScaleZero`](Error::ScaleZero) | | 60 | [`BudgetExhausted`](Error::BudgetExhausted) |
/// | 10 | [`SensitivityNotPositive`](Error::SensitivityNotPositive) | | 61 | [`LedgerCorrupted`](Error::LedgerCorrupted) |
/// | 11 | [`Overflow`](Error::Overflow) | | 62 | [`CountersCorrupted`](Error::CountersCorrupted) |
/// | 12 | [`OutOfRange`](Error::OutOfRange) | | 70 | [`OutboxFull`](Error::OutboxFull) |
/// | 13 | [`GridOutOfRange`](Error::GridOutOfRange) | | 71 | [`SequenceExhausted`](Error::SequenceExhausted) |
/// | 14 | [`RhoZero`](Error::RhoZero) | | 72 | [`NotPending`](Error::NotPending) |
/// | 15 | [`RhoInvalid`](Error::RhoInvalid) | | 73 | [`EmptyFrame`](Error::EmptyFrame) |
/// | 20 | [`BinOutOfRange`](Error::BinOutOfRange) | | 80 | [`Storage`](Error::Storage)([`Unspecified`](StorageKind::Unspecified)) |
/// | 21 | [`CounterFull`](Error::CounterFull) | | 81 | `Storage(`[`Layout`](StorageKind::Layout)`)` |
/// | 22 | [`EmptyRange`](Error::EmptyRange) | | 82 | `Storage(`[`Tampered`](StorageKind::Tampered)`)` |
/// | 23 | [`BinningMismatch`](Error::BinningMismatch) | | 83 | `Storage(`[`Exhausted`](StorageKind::Exhausted)`)` |
/// | 24 | [`UnevenBins`](Error::UnevenBins) | | 84 | `Storage(`[`FlashNotAligned`](StorageKind::FlashNotAligned)`)` |
/// | 30 | [`IterationBudgetExhausted`](Error::IterationBudgetExhausted) | | 85 | `Storage(`[`FlashOutOfBounds`](StorageKind::FlashOutOfBounds)`)` |
/// | 31 | [`ItemOutOfDomain`](Error::ItemOutOfDomain) | | 86 | `Storage(`[`FlashOther`](StorageKind::FlashOther)`)` |
/// | 32 | [`InvalidDomain`](Error::InvalidDomain) | | 87 | `Storage(`[`RegionUnaligned`](StorageKind::RegionUnaligned)`)` |
/// |  |  | | 88 | `Storage(`[`RegionPages`](StorageKind::RegionPages)`)` |
/// |  |  | | 89 | `Storage(`[`RegionOutOfBounds`](StorageKind::RegionOutOfBounds)`)` |
///
/// ```
/// use privq_core::{Epsilon, Error, StorageKind};
/// let e = Epsilon::new(0, 1).unwrap_err();
/// assert_eq!(e.code(), 1);
/// assert_eq!(Error::from_code(1), Some(Error::EpsilonZero));
/// assert_eq!(Error::Storage(StorageKind::FlashOutOfBounds).code(), 85);
/// assert_eq!(Error::from_code(0), None);
/// ```
impl Error {
    /// The error's stable code (table above); never 0.
    pub const fn code(self) -> u16 {
        match self {
            Error::EpsilonZero => 1,
            Error::EpsilonNegative => 2,
            Error::EpsilonNotFinite => 3,
            Error::EpsilonTooSmall => 4,
            Error::EpsilonTooLarge => 5,
            Error::Parse => 6,
            Error::ZeroDenominator => 7,
            Error::ProbabilityAboveOne => 8,
            Error::ScaleZero => 9,
            Error::SensitivityNotPositive => 10,
            Error::Overflow => 11,
            Error::OutOfRange => 12,
            Error::GridOutOfRange => 13,
            Error::RhoZero => 14,
            Error::RhoInvalid => 15,
            Error::BinOutOfRange => 20,
            Error::CounterFull => 21,
            Error::EmptyRange => 22,
            Error::BinningMismatch => 23,
            Error::UnevenBins => 24,
            Error::IterationBudgetExhausted => 30,
            Error::ItemOutOfDomain => 31,
            Error::InvalidDomain => 32,
            Error::BufferTooSmall => 40,
            Error::NotEncodable => 41,
            Error::ReportTruncated => 50,
            Error::ReportVersion => 51,
            Error::UnknownMechanism => 52,
            Error::ReportParameter => 53,
            Error::ReportLength => 54,
            Error::ReportValueOutOfRange => 55,
            Error::BudgetExhausted => 60,
            Error::LedgerCorrupted => 61,
            Error::CountersCorrupted => 62,
            Error::OutboxFull => 70,
            Error::SequenceExhausted => 71,
            Error::NotPending => 72,
            Error::EmptyFrame => 73,
            Error::Storage(StorageKind::Unspecified) => 80,
            Error::Storage(StorageKind::Layout) => 81,
            Error::Storage(StorageKind::Tampered) => 82,
            Error::Storage(StorageKind::Exhausted) => 83,
            Error::Storage(StorageKind::FlashNotAligned) => 84,
            Error::Storage(StorageKind::FlashOutOfBounds) => 85,
            Error::Storage(StorageKind::FlashOther) => 86,
            Error::Storage(StorageKind::RegionUnaligned) => 87,
            Error::Storage(StorageKind::RegionPages) => 88,
            Error::Storage(StorageKind::RegionOutOfBounds) => 89,
        }
    }

    /// The error with stable code `code`, or `None` for a number no error has (0 among them).
    pub const fn from_code(code: u16) -> Option<Error> {
        Some(match code {
            1 => Error::EpsilonZero,
            2 => Error::EpsilonNegative,
            3 => Error::EpsilonNotFinite,
            4 => Error::EpsilonTooSmall,
            5 => Error::EpsilonTooLarge,
            6 => Error::Parse,
            7 => Error::ZeroDenominator,
            8 => Error::ProbabilityAboveOne,
            9 => Error::ScaleZero,
            10 => Error::SensitivityNotPositive,
            11 => Error::Overflow,
            12 => Error::OutOfRange,
            13 => Error::GridOutOfRange,
            14 => Error::RhoZero,
            15 => Error::RhoInvalid,
            20 => Error::BinOutOfRange,
            21 => Error::CounterFull,
            22 => Error::EmptyRange,
            23 => Error::BinningMismatch,
            24 => Error::UnevenBins,
            30 => Error::IterationBudgetExhausted,
            31 => Error::ItemOutOfDomain,
            32 => Error::InvalidDomain,
            40 => Error::BufferTooSmall,
            41 => Error::NotEncodable,
            50 => Error::ReportTruncated,
            51 => Error::ReportVersion,
            52 => Error::UnknownMechanism,
            53 => Error::ReportParameter,
            54 => Error::ReportLength,
            55 => Error::ReportValueOutOfRange,
            60 => Error::BudgetExhausted,
            61 => Error::LedgerCorrupted,
            62 => Error::CountersCorrupted,
            70 => Error::OutboxFull,
            71 => Error::SequenceExhausted,
            72 => Error::NotPending,
            73 => Error::EmptyFrame,
            80 => Error::Storage(StorageKind::Unspecified),
            81 => Error::Storage(StorageKind::Layout),
            82 => Error::Storage(StorageKind::Tampered),
            83 => Error::Storage(StorageKind::Exhausted),
            84 => Error::Storage(StorageKind::FlashNotAligned),
            85 => Error::Storage(StorageKind::FlashOutOfBounds),
            86 => Error::Storage(StorageKind::FlashOther),
            87 => Error::Storage(StorageKind::RegionUnaligned),
            88 => Error::Storage(StorageKind::RegionPages),
            89 => Error::Storage(StorageKind::RegionOutOfBounds),
            _ => return None,
        })
    }
}

/// Why a persistent store (a [`LedgerStore`](crate::ledger::LedgerStore)) failed, carried by
/// [`Error::Storage`].
///
/// A store classifies its own error with
/// [`LedgerStore::error_kind`](crate::ledger::LedgerStore::error_kind); the flash store maps its
/// layout, tamper and counter errors and the flash driver's
/// `embedded_storage::nor_flash::NorFlashErrorKind`. A store that does not classify its
/// errors reports [`Unspecified`](StorageKind::Unspecified).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum StorageKind {
    /// The store did not say (a custom store, or [`MemoryStore`](crate::ledger::MemoryStore)
    /// told to fail).
    Unspecified,
    /// The flash region or geometry does not fit the store's layout (flash store:
    /// `StoreError::Layout`, any layout problem; `FlashStore::check_layout` names it, this
    /// kind then meaning the geometry: write, read or erase size; `flash_store::SharedFlash`:
    /// two regions of its table overlap, or a region is already in use by another store).
    Layout,
    /// The device was provisioned but its newest record is gone; the store refuses to
    /// write (flash store: `StoreError::Tampered`).
    Tampered,
    /// The store's write counter is used up (flash store: `StoreError::Exhausted`).
    Exhausted,
    /// The flash driver refused an unaligned access (`NorFlashErrorKind::NotAligned`).
    FlashNotAligned,
    /// The flash driver refused an access outside the flash (`NorFlashErrorKind::OutOfBounds`).
    FlashOutOfBounds,
    /// The flash driver failed otherwise (`NorFlashErrorKind::Other`, or a kind added to
    /// `embedded-storage` after this crate).
    FlashOther,
    /// The store's region does not start or end on an erase-page boundary (flash store:
    /// named by `FlashStore::check_region` and `check_layout`; its operations say `Layout`).
    RegionUnaligned,
    /// The store's region is empty or has too few or too many pages (flash store: 3 to 33
    /// pages; named by `FlashStore::check_region` and `check_layout`).
    RegionPages,
    /// The store's region ends past the end of the flash (flash store: named by
    /// `FlashStore::check_layout`).
    RegionOutOfBounds,
}

impl fmt::Display for StorageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StorageKind::Unspecified => "unspecified store error",
            StorageKind::Layout => "the flash region or geometry does not fit the store's layout",
            StorageKind::Tampered => {
                "the provisioned record is gone (erased flash); the store refuses to write"
            }
            StorageKind::Exhausted => "the store's write counter is exhausted",
            StorageKind::FlashNotAligned => "flash access not aligned",
            StorageKind::FlashOutOfBounds => "flash access out of bounds",
            StorageKind::FlashOther => "flash driver error",
            StorageKind::RegionUnaligned => "the store's region is not whole erase pages",
            StorageKind::RegionPages => "the store's region has too few or too many pages",
            StorageKind::RegionOutOfBounds => "the store's region ends past the end of the flash",
        })
    }
}

/// Shorthand for `Result<T, privq_core::Error>`.
pub type Result<T> = core::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    /// The published codes. Changing a number here breaks every C caller and log reader
    /// that knows it: add rows, never edit or delete one.
    const PINNED: [(Error, u16); 48] = [
        (Error::EpsilonZero, 1),
        (Error::EpsilonNegative, 2),
        (Error::EpsilonNotFinite, 3),
        (Error::EpsilonTooSmall, 4),
        (Error::EpsilonTooLarge, 5),
        (Error::Parse, 6),
        (Error::ZeroDenominator, 7),
        (Error::ProbabilityAboveOne, 8),
        (Error::ScaleZero, 9),
        (Error::SensitivityNotPositive, 10),
        (Error::Overflow, 11),
        (Error::OutOfRange, 12),
        (Error::GridOutOfRange, 13),
        (Error::RhoZero, 14),
        (Error::RhoInvalid, 15),
        (Error::BinOutOfRange, 20),
        (Error::CounterFull, 21),
        (Error::EmptyRange, 22),
        (Error::BinningMismatch, 23),
        (Error::IterationBudgetExhausted, 30),
        (Error::ItemOutOfDomain, 31),
        (Error::InvalidDomain, 32),
        (Error::BufferTooSmall, 40),
        (Error::NotEncodable, 41),
        (Error::ReportTruncated, 50),
        (Error::ReportVersion, 51),
        (Error::UnknownMechanism, 52),
        (Error::ReportParameter, 53),
        (Error::ReportLength, 54),
        (Error::ReportValueOutOfRange, 55),
        (Error::BudgetExhausted, 60),
        (Error::LedgerCorrupted, 61),
        (Error::CountersCorrupted, 62),
        (Error::OutboxFull, 70),
        (Error::SequenceExhausted, 71),
        (Error::NotPending, 72),
        (Error::EmptyFrame, 73),
        (Error::Storage(StorageKind::Unspecified), 80),
        (Error::Storage(StorageKind::Layout), 81),
        (Error::Storage(StorageKind::Tampered), 82),
        (Error::Storage(StorageKind::Exhausted), 83),
        (Error::Storage(StorageKind::FlashNotAligned), 84),
        (Error::Storage(StorageKind::FlashOutOfBounds), 85),
        (Error::Storage(StorageKind::FlashOther), 86),
        (Error::UnevenBins, 24),
        (Error::Storage(StorageKind::RegionUnaligned), 87),
        (Error::Storage(StorageKind::RegionPages), 88),
        (Error::Storage(StorageKind::RegionOutOfBounds), 89),
    ];

    #[test]
    fn every_code_is_pinned() {
        for (error, code) in PINNED {
            assert_eq!(error.code(), code, "{error:?}");
            assert_eq!(Error::from_code(code), Some(error), "{code}");
        }
        // Every number that decodes is in the table, so the table lists every error
        // (`code` is an exhaustive match and round-trips through `from_code`).
        let decodable = (0..=u16::MAX)
            .filter(|&c| Error::from_code(c).is_some())
            .count();
        assert_eq!(decodable, PINNED.len());
        assert_eq!(Error::from_code(0), None);
        for c in 0..=u16::MAX {
            if let Some(e) = Error::from_code(c) {
                assert_eq!(e.code(), c);
            }
        }
    }

    #[test]
    fn storage_errors_say_why() {
        extern crate std;
        use std::string::ToString;
        assert_eq!(
            Error::Storage(StorageKind::Tampered).to_string(),
            "the persistent store failed: the provisioned record is gone (erased flash); \
             the store refuses to write"
        );
        assert_eq!(core::mem::size_of::<Error>(), 1);
    }
}

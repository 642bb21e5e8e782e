//! The core's error type.

use core::fmt;

/// Everything that can go wrong in `privq-core`.
///
/// Each variant names the problem; none of them is ever raised by a panic.
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
    /// The ledger's persistent store could not be read or written.
    Storage,
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
            Error::Storage => "the privacy-budget ledger's storage failed",
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

/// Shorthand for `Result<T, privq_core::Error>`.
pub type Result<T> = core::result::Result<T, Error>;

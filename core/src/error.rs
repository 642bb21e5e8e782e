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
        };
        f.write_str(msg)
    }
}

impl core::error::Error for Error {}

/// Shorthand for `Result<T, privq_core::Error>`.
pub type Result<T> = core::result::Result<T, Error>;

//! The mechanisms' error type.

use crate::accountant::AccountantError;
use crate::data::DataError;

/// Why a mechanism refused to run or to answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MechanismError {
    /// A core sampler or parameter was rejected (ε ≤ 0, zero scale, overflow, …).
    #[error(transparent)]
    Core(#[from] privq_core::Error),
    /// The privacy budget does not allow the release.
    #[error(transparent)]
    Budget(#[from] AccountantError),
    /// The data or a query is unusable.
    #[error(transparent)]
    Data(#[from] DataError),
    /// A parameter is out of range; the message says which.
    #[error("invalid parameter: {0}")]
    InvalidParameter(String),
    /// The K-norm body or its parameters were refused (any K-norm error but a
    /// dimension mismatch, which is [`MechanismError::DimensionMismatch`]).
    #[error("invalid parameter: {0}")]
    Knorm(#[source] crate::knorm::KnormError),
    /// The grid calibration does not fit: the worst snapped gap `steps` (grid steps)
    /// times ε's denominator, or the calibrated sensitivity, leaves the exact range.
    #[error(
        "the noise calibration overflows: {steps} grid steps (times epsilon's denominator) do \
         not fit the exact sampler; use an epsilon with a smaller denominator or a larger \
         sensitivity per coordinate"
    )]
    CalibrationOverflow {
        /// The number of grid steps the noise would have to cover.
        steps: u128,
    },
    /// An input has another length than the mechanism was built for.
    #[error("the mechanism was built for {expected} value(s), got {got}")]
    DimensionMismatch {
        /// The length the mechanism was built for.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// One value of a vector could not be released (it or its noisy value leaves
    /// the fixed-point range).
    #[error("value {index}: {source}")]
    Value {
        /// The value's 0-based position in the input.
        index: usize,
        /// Why.
        source: privq_core::Error,
    },
    /// An interactive session already answered all the queries its budget allows.
    #[error("the session's budget of {limit} queries is used up")]
    QueryBudgetExhausted {
        /// The number of queries the budget allowed.
        limit: usize,
    },
}

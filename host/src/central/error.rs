//! The mechanisms' error type.

use std::fmt;

use crate::accountant::AccountantError;
use crate::data::DataError;

/// Why a mechanism refused to run or to answer.
#[derive(Debug)]
#[non_exhaustive]
pub enum MechanismError {
    /// A core sampler or parameter was rejected (ε ≤ 0, zero scale, overflow, …).
    Core(privq_core::Error),
    /// The privacy budget does not allow the release.
    Budget(AccountantError),
    /// The data or a query is unusable.
    Data(DataError),
    /// A parameter is out of range; the message says which.
    InvalidParameter(String),
    /// The grid calibration does not fit: the worst snapped gap `steps` (grid steps)
    /// times ε's denominator, or the calibrated sensitivity, leaves the exact range.
    CalibrationOverflow {
        /// The number of grid steps the noise would have to cover.
        steps: u128,
    },
    /// An input has another length than the mechanism was built for.
    DimensionMismatch {
        /// The length the mechanism was built for.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// One value of a vector could not be released (it or its noisy value leaves
    /// the fixed-point range).
    Value {
        /// The value's 0-based position in the input.
        index: usize,
        /// Why.
        source: privq_core::Error,
    },
    /// An interactive session already answered all the queries its budget allows.
    QueryBudgetExhausted {
        /// The number of queries the budget allowed.
        limit: usize,
    },
}

impl fmt::Display for MechanismError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MechanismError::Core(e) => write!(f, "{e}"),
            MechanismError::Budget(e) => write!(f, "{e}"),
            MechanismError::Data(e) => write!(f, "{e}"),
            MechanismError::InvalidParameter(why) => write!(f, "invalid parameter: {why}"),
            MechanismError::CalibrationOverflow { steps } => write!(
                f,
                "the noise calibration overflows: {steps} grid steps (times epsilon's \
                 denominator) do not fit the exact sampler; use an epsilon with a smaller \
                 denominator or a larger sensitivity per coordinate"
            ),
            MechanismError::DimensionMismatch { expected, got } => write!(
                f,
                "the mechanism was built for {expected} value(s), got {got}"
            ),
            MechanismError::Value { index, source } => write!(f, "value {index}: {source}"),
            MechanismError::QueryBudgetExhausted { limit } => {
                write!(f, "the session's budget of {limit} queries is used up")
            }
        }
    }
}

impl std::error::Error for MechanismError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MechanismError::Core(e) | MechanismError::Value { source: e, .. } => Some(e),
            MechanismError::Budget(e) => Some(e),
            MechanismError::Data(e) => Some(e),
            _ => None,
        }
    }
}

impl From<privq_core::Error> for MechanismError {
    fn from(e: privq_core::Error) -> Self {
        MechanismError::Core(e)
    }
}

impl From<AccountantError> for MechanismError {
    fn from(e: AccountantError) -> Self {
        MechanismError::Budget(e)
    }
}

impl From<DataError> for MechanismError {
    fn from(e: DataError) -> Self {
        MechanismError::Data(e)
    }
}

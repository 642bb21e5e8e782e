//! The fairness module's error type.

use std::fmt;

use crate::dx::DxError;
use crate::lp::LpError;

/// Why a fairness instance, LP or mapping was rejected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FairnessError {
    /// The "metric" is not one: `d(i, j) > d(i, k) + d(k, j)`.
    #[error(
        "not a metric: d({i},{j}) exceeds d({i},{k}) + d({k},{j}) by {excess} (the triangle \
         inequality fails; use the shortest-path closure)"
    )]
    NotAMetric {
        /// First individual.
        i: usize,
        /// Second individual.
        j: usize,
        /// The individual in between.
        k: usize,
        /// `d(i, j) − d(i, k) − d(k, j)`.
        excess: f64,
    },
    /// The metric was rejected for another reason (asymmetry, zero distance between
    /// distinct individuals, NaN, …); the d_X module's error says which.
    #[error("invalid metric: {0}")]
    Metric(#[source] DxError),
    /// Sizes disagree (individuals, outcomes, weights, metric); the message says which.
    #[error("dimension mismatch: {0}")]
    Dimension(String),
    /// A loss `L(x, a)` is negative (or not finite) where losses must be `≥ 0`.
    #[error("loss L({individual}, {outcome}) = {value} must be finite and non-negative")]
    NegativeLoss {
        /// The individual.
        individual: usize,
        /// The outcome.
        outcome: usize,
        /// The value.
        value: f64,
    },
    /// An individual's weight is negative, NaN, infinite, or all weights are zero.
    #[error(fmt = invalid_weight)]
    InvalidWeight {
        /// The individual (or `None` when the total is zero).
        individual: Option<usize>,
        /// The value.
        value: f64,
    },
    /// A group (a distribution S or T on V) is empty or has no weight.
    #[error("empty group: {0}")]
    EmptyGroup(String),
    /// A parameter is out of range; the message says which.
    #[error("invalid parameter: {0}")]
    InvalidParameter(String),
    /// The LP has no feasible point (cannot happen for a metric and a valid
    /// instance: the constant map is always feasible; reported for safety).
    #[error("the {0} is infeasible")]
    Infeasible(&'static str),
    /// A solver's result failed the check made before it is returned (a row that
    /// is not a distribution, or a Lipschitz excess beyond
    /// [`LIPSCHITZ_TOLERANCE`](super::LIPSCHITZ_TOLERANCE)); the message says which.
    #[error("the result failed its check: {0}")]
    Unverified(String),
    /// The LP would need more memory than the cap allows.
    #[error(
        "the LP has {vars} variables and {rows} rows (about {} MiB), above the memory cap of {} \
         MiB", bytes >> 20, cap >> 20
    )]
    TooLarge {
        /// Variables of the LP.
        vars: usize,
        /// Rows of the LP.
        rows: usize,
        /// Estimated bytes.
        bytes: usize,
        /// The cap, in bytes.
        cap: usize,
    },
    /// The LP solver failed.
    #[error(transparent)]
    Lp(#[from] LpError),
}

impl From<DxError> for FairnessError {
    fn from(e: DxError) -> Self {
        match e {
            DxError::TriangleViolation {
                i, j, k, excess, ..
            } => FairnessError::NotAMetric { i, j, k, excess },
            other => FairnessError::Metric(other),
        }
    }
}

/// [`FairnessError::InvalidWeight`]'s message.
fn invalid_weight(
    individual: &Option<usize>,
    value: &f64,
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    match individual {
        Some(i) => write!(
            f,
            "weight of individual {i} is {value}; weights must be finite and ≥ 0"
        ),
        None => write!(f, "the weights sum to zero"),
    }
}

//! The fairness module's error type.

use std::fmt;

use crate::dx::DxError;
use crate::lp::LpError;

/// Why a fairness instance, LP or mapping was rejected.
#[derive(Debug)]
#[non_exhaustive]
pub enum FairnessError {
    /// The "metric" is not one: `d(i, j) > d(i, k) + d(k, j)`.
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
    Metric(DxError),
    /// Sizes disagree (individuals, outcomes, weights, metric); the message says which.
    Dimension(String),
    /// A loss `L(x, a)` is negative (or not finite) where losses must be `≥ 0`.
    NegativeLoss {
        /// The individual.
        individual: usize,
        /// The outcome.
        outcome: usize,
        /// The value.
        value: f64,
    },
    /// An individual's weight is negative, NaN, infinite, or all weights are zero.
    InvalidWeight {
        /// The individual (or `None` when the total is zero).
        individual: Option<usize>,
        /// The value.
        value: f64,
    },
    /// A group (a distribution S or T on V) is empty or has no weight.
    EmptyGroup(String),
    /// A parameter is out of range; the message says which.
    InvalidParameter(String),
    /// The LP has no feasible point (cannot happen for a metric and a valid
    /// instance: the constant map is always feasible; reported for safety).
    Infeasible(&'static str),
    /// A solver's result failed the check made before it is returned (a row that
    /// is not a distribution, or a Lipschitz excess beyond
    /// [`LIPSCHITZ_TOLERANCE`](super::LIPSCHITZ_TOLERANCE)); the message says which.
    Unverified(String),
    /// The LP would need more memory than the cap allows.
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
    Lp(LpError),
}

impl fmt::Display for FairnessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FairnessError::NotAMetric { i, j, k, excess } => write!(
                f,
                "not a metric: d({i},{j}) exceeds d({i},{k}) + d({k},{j}) by {excess} \
                 (the triangle inequality fails; use the shortest-path closure)"
            ),
            FairnessError::Metric(e) => write!(f, "invalid metric: {e}"),
            FairnessError::Dimension(w) => write!(f, "dimension mismatch: {w}"),
            FairnessError::NegativeLoss {
                individual,
                outcome,
                value,
            } => write!(
                f,
                "loss L({individual}, {outcome}) = {value} must be finite and non-negative"
            ),
            FairnessError::InvalidWeight {
                individual: Some(i),
                value,
            } => write!(
                f,
                "weight of individual {i} is {value}; weights must be finite and ≥ 0"
            ),
            FairnessError::InvalidWeight {
                individual: None, ..
            } => write!(f, "the weights sum to zero"),
            FairnessError::EmptyGroup(w) => write!(f, "empty group: {w}"),
            FairnessError::InvalidParameter(w) => write!(f, "invalid parameter: {w}"),
            FairnessError::Unverified(w) => write!(f, "the result failed its check: {w}"),
            FairnessError::Infeasible(which) => write!(f, "the {which} is infeasible"),
            FairnessError::TooLarge {
                vars,
                rows,
                bytes,
                cap,
            } => write!(
                f,
                "the LP has {vars} variables and {rows} rows (about {} MiB), above the \
                 memory cap of {} MiB",
                bytes >> 20,
                cap >> 20
            ),
            FairnessError::Lp(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for FairnessError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FairnessError::Metric(e) => Some(e),
            FairnessError::Lp(e) => Some(e),
            _ => None,
        }
    }
}

impl From<LpError> for FairnessError {
    fn from(e: LpError) -> Self {
        FairnessError::Lp(e)
    }
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

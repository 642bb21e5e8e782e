//! The d_X module's error type.

use crate::accountant::AccountantError;
use crate::central::MechanismError;
use crate::data::DataError;

/// Why a d_X metric, parameter set or mechanism was rejected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DxError {
    /// A matrix or vector has the wrong size; the message says which.
    #[error("dimension mismatch: {0}")]
    Dimension(String),
    /// An entry is NaN, negative or otherwise unusable; the message says which.
    #[error("invalid value: {0}")]
    InvalidValue(String),
    /// `d(i, j) != d(j, i)`.
    #[error("the metric is not symmetric at ({i}, {j})")]
    NotSymmetric {
        /// Row.
        i: usize,
        /// Column.
        j: usize,
    },
    /// `d(i, i) != 0`.
    #[error("d({i}, {i}) is not 0")]
    NonzeroDiagonal {
        /// The element.
        i: usize,
    },
    /// `d(i, j) = 0` for `i != j`: only a pseudo-metric; any query separating `i`
    /// and `j` would need infinite noise (deduplicate the universe, as privq does
    /// with the cities of §4.3; `docs/src/dx.md`).
    #[error("d({i}, {j}) = 0 for distinct elements (a pseudo-metric; deduplicate the universe)")]
    ZeroDistance {
        /// First element.
        i: usize,
        /// Second element.
        j: usize,
    },
    /// `d(i, j) > d(i, k) + d(k, j)`.
    #[error(
        "triangle inequality violated: d({i},{j}) exceeds d({i},{k}) + d({k},{j}) by {excess} \
         ({count} violating triples; apply the shortest-path closure)"
    )]
    TriangleViolation {
        /// First element.
        i: usize,
        /// Second element.
        j: usize,
        /// The intermediate element.
        k: usize,
        /// `d(i, j) − d(i, k) − d(k, j)`.
        excess: f64,
        /// How many violating triples were found in total.
        count: usize,
    },
    /// A query cannot be answered with finite noise (it separates a pair the metric
    /// gives no budget to).
    #[error("query {query} separates elements the metric gives no budget to: infinite noise")]
    InfiniteNoise {
        /// The query (row) index.
        query: usize,
    },
    /// A parameter set violates the theorem's privacy constraint.
    #[error("privacy constraint violated: ratio {ratio:e} > 1 on pair {pair:?}")]
    ConstraintViolated {
        /// The worst constraint ratio (> 1).
        ratio: f64,
        /// The pair attaining it.
        pair: (usize, usize),
    },
    /// An exact enumeration would exceed the configured size cap.
    #[error("exact enumeration of {size:.3e} candidates exceeds the cap {cap}")]
    TooLarge {
        /// The size that would be enumerated.
        size: f64,
        /// The cap.
        cap: u64,
    },
    /// The smallest budget `d_min` is below what the exact exponential mechanism's
    /// score grid can cover (its grid would need more steps than the exact sampler
    /// holds).
    #[error(
        "d_min = {d_min:e} is too small for the exact exponential mechanism at c = {c:e}: its \
         score grid cannot cover the rounding on the closest pairs"
    )]
    DminTooSmall {
        /// The `d_min` given.
        d_min: f64,
        /// The scale `c` given.
        c: f64,
    },
    /// The relaxed optimum of the parameter selection did not converge.
    #[error("the relaxed optimum did not converge (lower bound {lower})")]
    NotConverged {
        /// The best lower bound reached.
        lower: f64,
    },
    /// The barrier method met a singular Hessian (degenerate constraints).
    #[error("singular barrier Hessian")]
    SingularHessian,
    /// A mechanism of the rest of privq failed.
    #[error(transparent)]
    Mechanism(#[from] MechanismError),
    /// The exact sampler or the fixed-point arithmetic failed.
    #[error(transparent)]
    Core(#[from] privq_core::Error),
    /// The accountant refused a charge; nothing was spent.
    #[error(transparent)]
    Budget(#[from] AccountantError),
    /// The MW engine refused the universe or a query.
    #[error(transparent)]
    Data(#[from] DataError),
}

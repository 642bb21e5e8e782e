//! The d_X module's error type.

use std::fmt;

use crate::accountant::AccountantError;
use crate::central::MechanismError;
use crate::data::DataError;

/// Why a d_X metric, parameter set or mechanism was rejected.
#[derive(Debug)]
#[non_exhaustive]
pub enum DxError {
    /// A matrix or vector has the wrong size; the message says which.
    Dimension(String),
    /// An entry is NaN, negative or otherwise unusable; the message says which.
    InvalidValue(String),
    /// `d(i, j) != d(j, i)`.
    NotSymmetric {
        /// Row.
        i: usize,
        /// Column.
        j: usize,
    },
    /// `d(i, i) != 0`.
    NonzeroDiagonal {
        /// The element.
        i: usize,
    },
    /// `d(i, j) = 0` for `i != j`: only a pseudo-metric; any query separating `i`
    /// and `j` would need infinite noise (deduplicate the universe, as privq does
    /// with the cities of §4.3; `docs/src/dx.md`).
    ZeroDistance {
        /// First element.
        i: usize,
        /// Second element.
        j: usize,
    },
    /// `d(i, j) > d(i, k) + d(k, j)`.
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
    InfiniteNoise {
        /// The query (row) index.
        query: usize,
    },
    /// A parameter set violates the theorem's privacy constraint.
    ConstraintViolated {
        /// The worst constraint ratio (> 1).
        ratio: f64,
        /// The pair attaining it.
        pair: (usize, usize),
    },
    /// An exact enumeration would exceed the configured size cap.
    TooLarge {
        /// The size that would be enumerated.
        size: f64,
        /// The cap.
        cap: u64,
    },
    /// The smallest budget `d_min` is below what the exact exponential mechanism's
    /// score grid can cover (its grid would need more steps than the exact sampler
    /// holds).
    DminTooSmall {
        /// The `d_min` given.
        d_min: f64,
        /// The scale `c` given.
        c: f64,
    },
    /// The relaxed optimum of the parameter selection did not converge.
    NotConverged {
        /// The best lower bound reached.
        lower: f64,
    },
    /// The barrier method met a singular Hessian (degenerate constraints).
    SingularHessian,
    /// A mechanism of the rest of privq failed.
    Mechanism(MechanismError),
    /// The exact sampler or the fixed-point arithmetic failed.
    Core(privq_core::Error),
    /// The accountant refused a charge; nothing was spent.
    Budget(AccountantError),
    /// The MW engine refused the universe or a query.
    Data(DataError),
}

impl fmt::Display for DxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DxError::Dimension(w) => write!(f, "dimension mismatch: {w}"),
            DxError::InvalidValue(w) => write!(f, "invalid value: {w}"),
            DxError::NotSymmetric { i, j } => {
                write!(f, "the metric is not symmetric at ({i}, {j})")
            }
            DxError::NonzeroDiagonal { i } => write!(f, "d({i}, {i}) is not 0"),
            DxError::ZeroDistance { i, j } => write!(
                f,
                "d({i}, {j}) = 0 for distinct elements (a pseudo-metric; deduplicate the universe)"
            ),
            DxError::TriangleViolation {
                i,
                j,
                k,
                excess,
                count,
            } => write!(
                f,
                "triangle inequality violated: d({i},{j}) exceeds d({i},{k}) + d({k},{j}) by {excess} \
                 ({count} violating triples; apply the shortest-path closure)"
            ),
            DxError::InfiniteNoise { query } => write!(
                f,
                "query {query} separates elements the metric gives no budget to: infinite noise"
            ),
            DxError::ConstraintViolated { ratio, pair } => write!(
                f,
                "privacy constraint violated: ratio {ratio:e} > 1 on pair {pair:?}"
            ),
            DxError::TooLarge { size, cap } => {
                write!(
                    f,
                    "exact enumeration of {size:.3e} candidates exceeds the cap {cap}"
                )
            }
            DxError::DminTooSmall { d_min, c } => write!(
                f,
                "d_min = {d_min:e} is too small for the exact exponential mechanism at \
                 c = {c:e}: its score grid cannot cover the rounding on the closest pairs"
            ),
            DxError::NotConverged { lower } => write!(
                f,
                "the relaxed optimum did not converge (lower bound {lower})"
            ),
            DxError::SingularHessian => write!(f, "singular barrier Hessian"),
            DxError::Mechanism(e) => write!(f, "{e}"),
            DxError::Core(e) => write!(f, "{e}"),
            DxError::Budget(e) => write!(f, "{e}"),
            DxError::Data(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for DxError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DxError::Mechanism(e) => Some(e),
            DxError::Core(e) => Some(e),
            DxError::Budget(e) => Some(e),
            DxError::Data(e) => Some(e),
            _ => None,
        }
    }
}

impl From<MechanismError> for DxError {
    fn from(e: MechanismError) -> Self {
        DxError::Mechanism(e)
    }
}

impl From<privq_core::Error> for DxError {
    fn from(e: privq_core::Error) -> Self {
        DxError::Core(e)
    }
}

impl From<AccountantError> for DxError {
    fn from(e: AccountantError) -> Self {
        DxError::Budget(e)
    }
}

impl From<DataError> for DxError {
    fn from(e: DataError) -> Self {
        DxError::Data(e)
    }
}

//! The synthetic-data engine's error type.

use std::fmt;

/// Why a clique, a measurement set or a model was rejected.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SynthError {
    /// A clique lists the same attribute twice.
    DuplicateAttribute(usize),
    /// An attribute index is not below the number of attributes.
    AttributeOutOfRange {
        /// The offending index.
        attribute: usize,
        /// The number of attributes.
        attributes: usize,
    },
    /// The domain has no attributes, or an attribute has no values.
    InvalidDomain(String),
    /// A table would have more cells than fit in memory addressing (`usize`).
    TooManyCells,
    /// The junction tree's tables would exceed the cap.
    ModelTooLarge {
        /// Σ of the junction-tree cliques' cells.
        cells: u128,
        /// The cap.
        cap: u128,
    },
    /// Measurement `index` has `got` values where its clique has `expected` cells.
    MeasurementLength {
        /// Position in the measurement list.
        index: usize,
        /// Cells of its clique.
        expected: usize,
        /// Values given.
        got: usize,
    },
    /// Measurement `index` has σ ≤ 0, infinite or NaN.
    InvalidSigma {
        /// Position in the measurement list.
        index: usize,
        /// The σ given.
        sigma: f64,
    },
    /// Measurement `index` holds an infinite or NaN value.
    NonFiniteValue {
        /// Position in the measurement list.
        index: usize,
    },
    /// The known total is not a finite positive number.
    InvalidTotal(f64),
    /// The total is to be estimated, but there is no measurement to estimate it from.
    NoMeasurements,
    /// A warm-start model is over other attribute sizes.
    WarmStartMismatch,
    /// A fit option is out of range; the message says which.
    InvalidOption(String),
    /// A table's length does not match its clique.
    TableLength {
        /// Cells of the clique.
        expected: usize,
        /// Values given.
        got: usize,
    },
    /// A clique is not a subset of the one it is projected from.
    NotASubset,
}

impl fmt::Display for SynthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SynthError::DuplicateAttribute(a) => {
                write!(f, "attribute {a} appears twice in a clique")
            }
            SynthError::AttributeOutOfRange {
                attribute,
                attributes,
            } => write!(
                f,
                "attribute {attribute} is out of range (the domain has {attributes} attributes)"
            ),
            SynthError::InvalidDomain(m) => write!(f, "invalid domain: {m}"),
            SynthError::TooManyCells => {
                write!(f, "a table would have more cells than usize can index")
            }
            SynthError::ModelTooLarge { cells, cap } => write!(
                f,
                "the junction tree needs {cells} cells, over the cap of {cap}"
            ),
            SynthError::MeasurementLength {
                index,
                expected,
                got,
            } => write!(
                f,
                "measurement {index} has {got} values but its clique has {expected} cells"
            ),
            SynthError::InvalidSigma { index, sigma } => write!(
                f,
                "measurement {index} has sigma {sigma}; it must be finite and positive"
            ),
            SynthError::NonFiniteValue { index } => {
                write!(f, "measurement {index} holds an infinite or NaN value")
            }
            SynthError::InvalidTotal(n) => write!(f, "the total {n} is not finite and positive"),
            SynthError::NoMeasurements => {
                write!(f, "no measurement to estimate the total from")
            }
            SynthError::WarmStartMismatch => {
                write!(f, "the warm-start model is over other attribute sizes")
            }
            SynthError::InvalidOption(m) => write!(f, "invalid fit option: {m}"),
            SynthError::TableLength { expected, got } => {
                write!(
                    f,
                    "a table has {got} values but its clique has {expected} cells"
                )
            }
            SynthError::NotASubset => write!(f, "a clique is not a subset of its source clique"),
        }
    }
}

impl std::error::Error for SynthError {}

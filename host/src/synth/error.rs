//! The synthetic-data engine's error type.

/// Why a clique, a measurement set or a model was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SynthError {
    /// A clique lists the same attribute twice.
    #[error("attribute {0} appears twice in a clique")]
    DuplicateAttribute(usize),
    /// An attribute index is not below the number of attributes.
    #[error("attribute {attribute} is out of range (the domain has {attributes} attributes)")]
    AttributeOutOfRange {
        /// The offending index.
        attribute: usize,
        /// The number of attributes.
        attributes: usize,
    },
    /// The domain has no attributes, or an attribute has no values.
    #[error("invalid domain: {0}")]
    InvalidDomain(String),
    /// A table would have more cells than fit in memory addressing (`usize`).
    #[error("a table would have more cells than usize can index")]
    TooManyCells,
    /// The junction tree's tables would exceed the cap.
    #[error("the junction tree needs {cells} cells, over the cap of {cap}")]
    ModelTooLarge {
        /// Σ of the junction-tree cliques' cells.
        cells: u128,
        /// The cap.
        cap: u128,
    },
    /// Measurement `index` has `got` values where its clique has `expected` cells.
    #[error("measurement {index} has {got} values but its clique has {expected} cells")]
    MeasurementLength {
        /// Position in the measurement list.
        index: usize,
        /// Cells of its clique.
        expected: usize,
        /// Values given.
        got: usize,
    },
    /// Measurement `index` has σ ≤ 0, infinite or NaN.
    #[error("measurement {index} has sigma {sigma}; it must be finite and positive")]
    InvalidSigma {
        /// Position in the measurement list.
        index: usize,
        /// The σ given.
        sigma: f64,
    },
    /// Measurement `index` holds an infinite or NaN value.
    #[error("measurement {index} holds an infinite or NaN value")]
    NonFiniteValue {
        /// Position in the measurement list.
        index: usize,
    },
    /// Measurement `index` has per-cell variances that are not one finite
    /// multiple ≥ 1 of σ² per value.
    #[error("measurement {index} needs one finite cell variance ≥ 1 per value")]
    InvalidCellVariance {
        /// Position in the measurement list.
        index: usize,
    },
    /// A grouped measurement's map does not send every cell of its clique to one
    /// of its values.
    #[error(
        "measurement {index} needs one group below its number of values per cell of its clique"
    )]
    InvalidGroups {
        /// Position in the measurement list.
        index: usize,
    },
    /// The known total is not a finite positive number.
    #[error("the total {0} is not finite and positive")]
    InvalidTotal(f64),
    /// The total is to be estimated, but there is no measurement to estimate it from.
    #[error("no measurement to estimate the total from")]
    NoMeasurements,
    /// A warm-start model is over other attribute sizes.
    #[error("the warm-start model is over other attribute sizes")]
    WarmStartMismatch,
    /// A fit option is out of range; the message says which.
    #[error("invalid fit option: {0}")]
    InvalidOption(String),
    /// A table's length does not match its clique.
    #[error("a table has {got} values but its clique has {expected} cells")]
    TableLength {
        /// Cells of the clique.
        expected: usize,
        /// Values given.
        got: usize,
    },
    /// A clique is not a subset of the one it is projected from.
    #[error("a clique is not a subset of its source clique")]
    NotASubset,
}

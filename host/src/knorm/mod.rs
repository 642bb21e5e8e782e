//! The geometry of differential privacy: the K-norm mechanism (thesis Chapter 3).
//!
//! For d linear queries given as a `d × N` matrix `F` with entries in `[−1, 1]`, the
//! body `K = F·B₁ᴺ` ([`Body`]) is the set an answer `F·x` can move in when the
//! histogram `x` changes by one record, and its Minkowski gauge `‖·‖_K`
//! ([`Body::gauge`], an LP in general, thesis §3.1) is the right norm for the noise.
//! [`KNorm`] is `KM(F, ε)` (thesis Def 3.3.1, Fig. 3.2): `F·x + r·z` with
//! `r ∼ Gamma(d + 1, 1/ε)` and `z` uniform in `K`; its output density is
//! `∝ exp(−ε‖F·x − v‖_K)`, so it is ε-DP with no factor 2 (Thm 3.3.3), and its ℓ2
//! error is at most `(d + 1)·mr(K)/ε` (eq. 3.9 with `Γ(d + 1)`, the thesis's
//! `Γ(d)` being a typo). [`Nikm`] is the recursive `NiKM(F, ε)` (thesis Fig. 3.3,
//! §3.6.1): `⌊log₂ d⌋ + 1` levels, each a KM at ε/L on the projection of K onto
//! the span of the larger half of its covariance's eigenvectors, keeping the other
//! half.
//!
//! # Privacy status — read this
//!
//! * **The cross-polytope and the cube are exactly ε-DP, in integers.** The
//!   release is `y + k·γ`, where `y` is `F·x` computed **exactly** (integers) and
//!   snapped to a power-of-two grid γ chosen from F and the neighbour relation only,
//!   with the sensitivity calibrated for the worst snapped gap (`Δ′ = Δ(1 + 2⁻¹⁰)`,
//!   see [`KNorm`]), and `k ∈ ℤᵈ` is drawn exactly from the *discrete* K-norm law
//!   `P(k) ∝ exp(−‖k‖_K·εγ/Δ′)` ([`KNorm::sample_steps`]: discrete Laplace draws for
//!   `B₁ᵈ`, a negative-binomial mixture of uniform cubes for `B∞ᵈ`), the grid
//!   analogue of Fig. 3.2's density. Since `‖y − y′‖_K ≤ Δ′`, the pmf ratio is at
//!   most `e^ε` everywhere: no floating point decides the noise, and the data reach
//!   the output only through the integer `y`, so the low-order-bit attack on
//!   floating-point Laplace (Mironov 2012) has nothing to read.
//! * **Hit-and-run ([`Sampler::HitAndRun`]) is APPROXIMATE.** For bodies other than
//!   the cross-polytope and the cube, `z` comes from a finite hit-and-run walk
//!   (chords by LP, privq's practical substitute for thesis §3.7's walk); its law is
//!   not uniform, no pointwise bound is proven (the provable grid walk of
//!   Lemma 3.7.4 is far too slow), and the ε in the accountant is the ε of the
//!   ideal mechanism. The label of such a mechanism says "APPROXIMATE privacy".
//!
//! ```
//! use privq_host::knorm::Body;
//!
//! // All of {−1, 1}² as columns: K is the square B∞², its gauge the ℓ∞ norm.
//! let cube = Body::hypercube(2)?;
//! assert_eq!(cube.gauge(&[0.5, -0.75])?, 0.75);
//! assert!((cube.gauge_lp(&[0.5, -0.75])? - 0.75).abs() < 1e-9);
//! # Ok::<(), privq_host::knorm::KnormError>(())
//! ```

use crate::central::MechanismError;
use crate::lp::LpError;

mod body;
pub mod bounds;
mod chord;
mod mechanism;
pub mod nikm;
pub mod release;
pub mod sample;

pub use body::{Body, MAX_ENTRIES, Shape};
pub use mechanism::{KNorm, Sampler};
pub use nikm::{Nikm, NikmLevel, NikmOptions, level_count};

/// Why a body or a K-norm mechanism could not be built or used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum KnormError {
    /// The matrix has no rows or no columns.
    #[error("the query matrix has no rows or no columns")]
    Empty,
    /// A row has another length than the first.
    #[error("row {row} of the query matrix has {got} entries, the first has {expected}")]
    Ragged {
        /// The row.
        row: usize,
        /// The first row's length.
        expected: usize,
        /// This row's length.
        got: usize,
    },
    /// An entry is NaN or outside `[−1, 1]`.
    #[error("entry ({row}, {col}) of the query matrix is {value}, not in [-1, 1]")]
    EntryOutOfRange {
        /// Its row.
        row: usize,
        /// Its column.
        col: usize,
        /// Its value.
        value: f64,
    },
    /// `d > N`: the body cannot be full-dimensional.
    #[error("{d} queries over {n} columns: the K-norm mechanism needs d <= N")]
    MoreQueriesThanColumns {
        /// The number of rows.
        d: usize,
        /// The number of columns.
        n: usize,
    },
    /// `d·N` exceeds the memory cap [`MAX_ENTRIES`].
    #[error("the query matrix has {entries} entries, above the cap of {cap}")]
    TooLarge {
        /// `d·N` (saturated).
        entries: usize,
        /// The cap.
        cap: usize,
    },
    /// `F` does not have rank d: the basis vector `e_basis` is not in `range(F)`, so
    /// the body is flat and the snapping error cannot be bounded in its norm.
    #[error(
        "the query matrix does not have full row rank (basis vector {basis} is not in its range)"
    )]
    RankDeficient {
        /// The first basis vector outside the range.
        basis: usize,
    },
    /// The body is so thin that the grid would have to be finer than 2⁻³².
    #[error(
        "the body is too thin (sum of basis gauges {basis_gauge_sum}): the grid would be finer \
         than 2^-32"
    )]
    IllConditioned {
        /// `Σᵢ‖eᵢ‖_K`.
        basis_gauge_sum: f64,
    },
    /// A vector has another length than the body's dimension (or N).
    #[error("expected a vector of length {expected}, got {got}")]
    DimensionMismatch {
        /// The expected length.
        expected: usize,
        /// The given length.
        got: usize,
    },
    /// A vector has a NaN or infinite coordinate.
    #[error("a vector coordinate is NaN or infinite")]
    NonFinite,
    /// [`KNorm::new`] needs an exact sampler, which exists for the cross-polytope and
    /// the cube only; use [`KNorm::hit_and_run_approximate`].
    #[error(
        "no exact uniform sampler for this body (only the cross-polytope and the cube have one); \
         hit-and-run is available with approximate privacy"
    )]
    NoExactSampler,
    /// A hit-and-run chord is unbounded (the body is not bounded: cannot happen for
    /// `F·B₁ᴺ`, reported rather than looped on).
    #[error("a hit-and-run chord is unbounded")]
    Unbounded,
    /// A parameter is out of range; the message says which.
    #[error("invalid parameter: {0}")]
    InvalidParameter(String),
    /// ε cannot be split evenly over NiKM's `levels` levels (an exact rational of
    /// the core's width would overflow).
    #[error("invalid parameter: ε/L with L = {levels}: {source}")]
    LevelSplit {
        /// The number of levels L.
        levels: usize,
        /// The core's arithmetic error.
        #[source]
        source: privq_core::Error,
    },
    /// The exact noise sampler failed (an arithmetic limit of the core; the
    /// message names it).
    #[error("the exact noise sampler failed: {0}")]
    Sampler(#[source] privq_core::Error),
    /// The volume estimate's confidence interval could not be computed.
    #[error("Clopper-Pearson: {0}")]
    Interval(#[source] crate::stats::StatsError),
    /// An LP failed.
    #[error("{0}")]
    Lp(#[from] LpError),
}

impl From<KnormError> for MechanismError {
    fn from(e: KnormError) -> Self {
        match e {
            KnormError::DimensionMismatch { expected, got } => {
                MechanismError::DimensionMismatch { expected, got }
            }
            e => MechanismError::Knorm(e),
        }
    }
}

#[cfg(test)]
mod nikm_tests;
#[cfg(test)]
mod tests;

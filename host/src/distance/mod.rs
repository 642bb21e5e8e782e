//! Huang–Roth private release of **distance queries** over metric spaces (Zhiyi
//! Huang and Aaron Roth, "Exploiting Metric Structure for Efficient Private Query
//! Release"; section, figure, lemma and theorem numbers below are the paper's, and
//! where privq departs from it is in `docs/src/distance.md`).
//!
//! A distance query is a point `y`; its answer on a database `D` of `n` points is
//! the average distance `F_D(y) = (1/n) Σ_{x∈D} d(x, y)`, with `d` scaled by a public
//! diameter bound and clipped at 1, so every query is `1/n`-sensitive.
//!
//! * [`metric`]: the [`Metric`] trait and ℓ1, ℓ2, ℓp, Hamming, weighted categorical
//!   and normalised Levenshtein metrics.
//! * [`columns`]: the exact ℓ1 oracle (per-coordinate values and slopes in
//!   `O(log n)` from sorted columns).
//! * [`learner`]: the 1-D convex Lipschitz learner (Figure 1) and the decomposed
//!   ℓ-dimensional learner (Lemma 3.4).
//! * [`privacy`]: the privacy plan (exact sparse vector + composition) and the
//!   exact-noise building blocks.
//! * [`interactive`]: Theorem 3.1's session; [`offline`]: Theorem 3.2's synopsis.
//! * [`embed`]: random projections ℓ2/ℓp → ℓ1 and the 1-sensitive Bourgain embedding.
//! * [`baselines`]: Laplace per query, the per-coordinate tree CDF, MWEM on a grid
//!   (small ℓ, through the MW engine).
//!
//! ```
//! use privq_host::accountant::Accountant;
//! use privq_host::distance::{BoxDomain, offline::{OfflineConfig, Synopsis}, privacy::Privacy};
//! use privq_host::{Epsilon, seeded_rng};
//! let domain = BoxDomain::unit_cube(2)?; // ℓ1 diameter 2: answers are scaled by 1/2
//! let points: Vec<Vec<f64>> = (0..2000).map(|i| vec![(i % 10) as f64 / 10.0, 0.5]).collect();
//! let mut rng = seeded_rng(1); // fixed seed: tests only
//! let config = OfflineConfig::new(Privacy::pure(Epsilon::new(1, 1)?));
//! let mut accountant = Accountant::pure(Epsilon::new(1, 1)?);
//! let synopsis = Synopsis::release(&domain, &points, &config, &mut accountant, &mut rng)?;
//! let answer = synopsis.answer(&[0.3, 0.5])?; // ≈ average ℓ1 distance / 2
//! assert!((0.0..=1.0).contains(&answer));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod baselines;
pub mod columns;
pub mod embed;
pub mod interactive;
pub mod learner;
pub mod metric;
pub mod offline;
pub mod privacy;
pub mod release;

pub use columns::{BoxDomain, Columns};
pub use metric::Metric;

/// What the distance-query mechanisms refuse.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DistanceError {
    /// The database holds no points.
    #[error("the database holds no points")]
    EmptyData,
    /// A point has the wrong number of coordinates.
    #[error("expected {expected} coordinates, found {found}")]
    DimensionMismatch {
        /// Coordinates expected.
        expected: usize,
        /// Coordinates found.
        found: usize,
    },
    /// A point lies outside the declared domain (or is not finite).
    #[error("coordinate {coordinate} = {value} lies outside the declared domain")]
    OutsideDomain {
        /// Which coordinate (or character position) is out of range.
        coordinate: usize,
        /// The offending value, as text.
        value: String,
    },
    /// A distance exceeded the metric's declared diameter bound.
    #[error("distance {distance} exceeds the declared diameter bound {diameter}")]
    ExceedsDiameter {
        /// The raw distance.
        distance: f64,
        /// The declared bound.
        diameter: f64,
    },
    /// A privacy or accuracy parameter is out of range (ε ≤ 0, δ ∉ (0,1), α ∉ (0,1], …).
    #[error("invalid parameter: {0}")]
    InvalidParameter(String),
    /// ε as given is not a positive number privq can hold exactly.
    #[error("invalid parameter: epsilon {text:?}: {source}")]
    Epsilon {
        /// The text given.
        text: String,
        /// Why it was refused.
        #[source]
        source: privq_core::Error,
    },
    /// The interactive session's update budget is used up.
    #[error(transparent)]
    Exhausted(#[from] Exhausted),
    /// The accountant refused a charge.
    #[error(transparent)]
    Budget(#[from] crate::accountant::AccountantError),
    /// The exact sampler or the fixed-point arithmetic failed.
    #[error(transparent)]
    Core(#[from] privq_core::Error),
    /// A synopsis file could not be read or written.
    #[error("synopsis: {0}")]
    Synopsis(#[source] SynopsisError),
    /// A discretised grid (the MWEM baseline) needs more memory than the cap.
    #[error(
        "the grid has {cells} cells and needs {bytes} bytes; the memory cap is {cap} bytes (use \
         fewer bins per coordinate or a smaller dimension)"
    )]
    GridTooLarge {
        /// Cells of the grid (saturating at `u64::MAX`).
        cells: u64,
        /// Bytes the grid's state and workload would need (saturating).
        bytes: u64,
        /// The configured cap in bytes.
        cap: u64,
    },
    /// The MWEM baseline refused to run.
    #[error("MWEM baseline: {0}")]
    Mwem(#[source] crate::central::mwem::MwemError),
    /// A mechanism rejected its parameters.
    #[error(transparent)]
    Mechanism(crate::central::MechanismError),
    /// An explicit α implies more work (grid points or update rounds) than the
    /// memory cap allows.
    #[error(
        "alpha = {alpha} implies {units} {what} (about {} MiB), over the {cap_mib} MiB cap",
        bytes >> 20
    )]
    WorkTooLarge {
        /// The α asked for.
        alpha: f64,
        /// Units of work it implies.
        units: usize,
        /// What the units are (`"grid points"`, `"update rounds"`).
        what: &'static str,
        /// Bytes of that work.
        bytes: u64,
        /// The cap in MiB.
        cap_mib: u64,
    },
}

/// Why a synopsis file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SynopsisError {
    /// Reading or writing the file failed.
    #[error("{0}")]
    Io(#[source] std::io::Error),
    /// The text is not a synopsis in JSON.
    #[error("not a synopsis: {0}")]
    Json(#[source] serde_json::Error),
    /// The file is of another format version.
    #[error("unsupported version {found} (expected {expected})")]
    Version {
        /// The version in the file.
        found: u32,
        /// The version this privq reads.
        expected: u32,
    },
    /// The learner's dimension does not match the domain's.
    #[error("the learner's dimension does not match the domain")]
    Inconsistent,
}

/// The error an interactive session returns once its budget of update rounds is
/// spent: no further data-dependent answers are possible. The hypothesis remains
/// available for post-processing answers without accuracy guarantees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("privacy budget exhausted: all {rounds} update rounds used after {answered} answers")]
pub struct Exhausted {
    /// Update rounds that were allowed (all used).
    pub rounds: usize,
    /// Queries answered before the refusal.
    pub answered: usize,
}

impl From<crate::central::MechanismError> for DistanceError {
    fn from(e: crate::central::MechanismError) -> Self {
        match e {
            crate::central::MechanismError::Core(c) => DistanceError::Core(c),
            other => DistanceError::Mechanism(other),
        }
    }
}

/// Checks `0 < x ≤ hi` (finite), naming the parameter on failure.
pub(crate) fn check_range(name: &str, x: f64, hi: f64) -> Result<f64, DistanceError> {
    if x.is_finite() && x > 0.0 && x <= hi {
        Ok(x)
    } else {
        Err(DistanceError::InvalidParameter(format!(
            "{name} must lie in (0, {hi}], got {x}"
        )))
    }
}

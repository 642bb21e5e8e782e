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

use std::fmt;

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
#[derive(Debug)]
#[non_exhaustive]
pub enum DistanceError {
    /// The database holds no points.
    EmptyData,
    /// A point has the wrong number of coordinates.
    DimensionMismatch {
        /// Coordinates expected.
        expected: usize,
        /// Coordinates found.
        found: usize,
    },
    /// A point lies outside the declared domain (or is not finite).
    OutsideDomain {
        /// Which coordinate (or character position) is out of range.
        coordinate: usize,
        /// The offending value, as text.
        value: String,
    },
    /// A distance exceeded the metric's declared diameter bound.
    ExceedsDiameter {
        /// The raw distance.
        distance: f64,
        /// The declared bound.
        diameter: f64,
    },
    /// A privacy or accuracy parameter is out of range (ε ≤ 0, δ ∉ (0,1), α ∉ (0,1], …).
    InvalidParameter(String),
    /// The interactive session's update budget is used up.
    Exhausted(Exhausted),
    /// The accountant refused a charge.
    Budget(crate::accountant::AccountantError),
    /// The exact sampler or the fixed-point arithmetic failed.
    Core(privq_core::Error),
    /// A synopsis file could not be read or written.
    Synopsis(SynopsisError),
    /// A discretised grid (the MWEM baseline) needs more memory than the cap.
    GridTooLarge {
        /// Cells of the grid (saturating at `u64::MAX`).
        cells: u64,
        /// Bytes the grid's state and workload would need (saturating).
        bytes: u64,
        /// The configured cap in bytes.
        cap: u64,
    },
    /// The MWEM baseline refused to run.
    Mwem(crate::central::mwem::MwemError),
    /// A mechanism rejected its parameters.
    Mechanism(crate::central::MechanismError),
    /// An explicit α implies more work (grid points or update rounds) than the
    /// memory cap allows.
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
#[derive(Debug)]
#[non_exhaustive]
pub enum SynopsisError {
    /// Reading or writing the file failed.
    Io(std::io::Error),
    /// The text is not a synopsis in JSON.
    Json(serde_json::Error),
    /// The file is of another format version.
    Version {
        /// The version in the file.
        found: u32,
        /// The version this privq reads.
        expected: u32,
    },
    /// The learner's dimension does not match the domain's.
    Inconsistent,
}

impl fmt::Display for SynopsisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SynopsisError::Io(e) => write!(f, "{e}"),
            SynopsisError::Json(e) => write!(f, "not a synopsis: {e}"),
            SynopsisError::Version { found, expected } => {
                write!(f, "unsupported version {found} (expected {expected})")
            }
            SynopsisError::Inconsistent => {
                write!(f, "the learner's dimension does not match the domain")
            }
        }
    }
}

impl std::error::Error for SynopsisError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SynopsisError::Io(e) => Some(e),
            SynopsisError::Json(e) => Some(e),
            _ => None,
        }
    }
}

/// The error an interactive session returns once its budget of update rounds is
/// spent: no further data-dependent answers are possible. The hypothesis remains
/// available for post-processing answers without accuracy guarantees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exhausted {
    /// Update rounds that were allowed (all used).
    pub rounds: usize,
    /// Queries answered before the refusal.
    pub answered: usize,
}

impl fmt::Display for Exhausted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "privacy budget exhausted: all {} update rounds used after {} answers",
            self.rounds, self.answered
        )
    }
}

impl std::error::Error for Exhausted {}

impl fmt::Display for DistanceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DistanceError::EmptyData => write!(f, "the database holds no points"),
            DistanceError::DimensionMismatch { expected, found } => {
                write!(f, "expected {expected} coordinates, found {found}")
            }
            DistanceError::OutsideDomain { coordinate, value } => write!(
                f,
                "coordinate {coordinate} = {value} lies outside the declared domain"
            ),
            DistanceError::ExceedsDiameter { distance, diameter } => write!(
                f,
                "distance {distance} exceeds the declared diameter bound {diameter}"
            ),
            DistanceError::InvalidParameter(s) => write!(f, "invalid parameter: {s}"),
            DistanceError::Exhausted(e) => write!(f, "{e}"),
            DistanceError::Budget(e) => write!(f, "{e}"),
            DistanceError::Core(e) => write!(f, "{e}"),
            DistanceError::Synopsis(s) => write!(f, "synopsis: {s}"),
            DistanceError::GridTooLarge { cells, bytes, cap } => write!(
                f,
                "the grid has {cells} cells and needs {bytes} bytes; the memory cap is {cap} bytes \
                 (use fewer bins per coordinate or a smaller dimension)"
            ),
            DistanceError::Mwem(e) => write!(f, "MWEM baseline: {e}"),
            DistanceError::Mechanism(e) => write!(f, "{e}"),
            DistanceError::WorkTooLarge {
                alpha,
                units,
                what,
                bytes,
                cap_mib,
            } => write!(
                f,
                "alpha = {alpha} implies {units} {what} (about {} MiB), over the {cap_mib} MiB cap",
                bytes >> 20
            ),
        }
    }
}

impl std::error::Error for DistanceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DistanceError::Exhausted(e) => Some(e),
            DistanceError::Budget(e) => Some(e),
            DistanceError::Core(e) => Some(e),
            DistanceError::Synopsis(e) => Some(e),
            DistanceError::Mwem(e) => Some(e),
            DistanceError::Mechanism(e) => Some(e),
            _ => None,
        }
    }
}

impl From<privq_core::Error> for DistanceError {
    fn from(e: privq_core::Error) -> Self {
        DistanceError::Core(e)
    }
}

impl From<crate::accountant::AccountantError> for DistanceError {
    fn from(e: crate::accountant::AccountantError) -> Self {
        DistanceError::Budget(e)
    }
}

impl From<Exhausted> for DistanceError {
    fn from(e: Exhausted) -> Self {
        DistanceError::Exhausted(e)
    }
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

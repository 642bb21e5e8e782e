//! Why a budget file refused a charge or could not be read.

use std::fmt;
use std::io;
use std::path::PathBuf;

use privq_core::Epsilon;

use super::*;

/// A refused charge: what was asked and what was left ([`BudgetFileError::Exceeded`]).
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetExceeded {
    /// The file.
    pub path: PathBuf,
    /// What the charge is for.
    pub label: String,
    /// The file's cap.
    pub cap: Cap,
    /// The exact ε spent before this charge (`None`: nothing).
    pub spent_epsilon: Option<Epsilon>,
    /// The δ spent before this charge.
    pub spent_delta: f64,
    /// The ε requested.
    pub requested_epsilon: Epsilon,
    /// The δ requested.
    pub requested_delta: f64,
}

impl BudgetExceeded {
    /// Whether the requested ε fits in what the cap's ε leaves, so that δ alone is
    /// what the charge exceeds.
    fn epsilon_fits(&self) -> bool {
        let total = match self.spent_epsilon {
            None => Ok(self.requested_epsilon),
            Some(s) => s.checked_add(self.requested_epsilon),
        };
        total.is_ok_and(|t| t <= self.cap.epsilon)
    }
}

/// What a budget file refuses.
#[derive(Debug)]
#[non_exhaustive]
pub enum BudgetFileError {
    /// Opening, locking, reading, writing or syncing failed.
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The path exists but is not a regular file (a directory, a link, a device);
    /// it is left alone.
    NotARegularFile(PathBuf),
    /// The file exists but is not a privq budget file; it is never overwritten.
    NotABudgetFile {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A budget file of a format version this build does not know.
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// Its version.
        version: u64,
    },
    /// A privq budget file whose content is invalid (a zero denominator, a δ
    /// outside [0, 1), an unknown relation, charges under two relations, …).
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The file does not exist yet and no cap was given to create it with.
    NoCap(PathBuf),
    /// A cap was given that differs from the one the file was created with.
    CapMismatch {
        /// The file.
        path: PathBuf,
        /// The file's cap.
        stored: Cap,
        /// The cap given.
        given: Cap,
    },
    /// The charge does not fit in what is left of the cap; nothing was written.
    Exceeded(Box<BudgetExceeded>),
    /// The charge is stated for another neighbour relation than the file's
    /// charges; nothing was written.
    RelationMismatch {
        /// The file.
        path: PathBuf,
        /// The relation of the file's charges.
        file: Option<Neighbours>,
        /// The relation of this charge.
        stated: Option<Neighbours>,
    },
    /// The file's charges are for another privacy unit than this run's.
    UnitMismatch {
        /// The file.
        path: PathBuf,
        /// The unit of the file's charges (`None`: one record).
        file: Option<String>,
        /// This run's unit.
        stated: Option<String>,
    },
    /// The budget file is gone although its lock file shows that it existed.
    Missing(PathBuf),
    /// A δ outside `[0, 1)`.
    InvalidDelta(f64),
    /// A cost that cannot be charged (see the message).
    InvalidCost(String),
    /// Exact ε arithmetic overflowed.
    Overflow,
}

impl fmt::Display for BudgetFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BudgetFileError::Io { path, source } => {
                write!(f, "budget file {}: {source}", path.display())
            }
            BudgetFileError::NotARegularFile(path) => write!(
                f,
                "budget file {}: not a regular file (a directory, link or device); refusing to use it",
                path.display()
            ),
            BudgetFileError::NotABudgetFile { path, reason } => write!(
                f,
                "{} exists and is not a privq budget file ({reason}); refusing to use or replace it",
                path.display()
            ),
            BudgetFileError::UnsupportedVersion { path, version } => write!(
                f,
                "budget file {}: format version {version} is not supported by this privq \
                 (it reads version {BUDGET_FILE_VERSION})",
                path.display()
            ),
            BudgetFileError::Corrupt { path, reason } => {
                write!(f, "budget file {} is corrupt: {reason}", path.display())
            }
            BudgetFileError::NoCap(path) => write!(
                f,
                "budget file {} does not exist; give a cap (--budget-cap EPS[,DELTA]) to create it",
                path.display()
            ),
            BudgetFileError::CapMismatch {
                path,
                stored,
                given,
            } => write!(
                f,
                "budget file {} was created with cap {stored}, not {given}; a cap is fixed \
                 when the file is created (omit the cap to use the stored one)",
                path.display()
            ),
            BudgetFileError::Exceeded(x) if x.epsilon_fits() && x.cap.delta == 0.0 => write!(
                f,
                "privacy budget of {} exceeded in δ: {} needs δ = {}, but the cap {} allows no δ \
                 (its ε = {} would fit); nothing was charged",
                x.path.display(),
                x.label,
                delta_text(x.requested_delta),
                x.cap,
                x.requested_epsilon,
            ),
            BudgetFileError::Exceeded(x) if x.epsilon_fits() => write!(
                f,
                "privacy budget of {} exceeded in δ: {} needs δ = {}, but δ = {} of the cap {} \
                 is spent (its ε = {} would fit); nothing was charged",
                x.path.display(),
                x.label,
                delta_text(x.requested_delta),
                delta_text(x.spent_delta),
                x.cap,
                x.requested_epsilon,
            ),
            BudgetFileError::Exceeded(x) => write!(
                f,
                "privacy budget of {} exceeded: {} needs ε = {}, δ = {}, but ε = {} and δ = {} \
                 of the cap {} are spent; nothing was charged",
                x.path.display(),
                x.label,
                x.requested_epsilon,
                delta_text(x.requested_delta),
                x.spent_epsilon
                    .map_or_else(|| "0".into(), |e| e.to_string()),
                delta_text(x.spent_delta),
                x.cap,
            ),
            BudgetFileError::Missing(path) => write!(
                f,
                "budget file {} is missing, but its lock file shows that it existed: restore it \
                 (starting afresh would forget the budget already spent), or delete {}.lock to \
                 start a new budget on purpose",
                path.display(),
                path.display()
            ),
            BudgetFileError::UnitMismatch { path, file, stated } => {
                let name = |u: &Option<String>| {
                    u.as_ref().map_or_else(
                        || "one record".to_string(),
                        |c| format!("privacy unit {c:?}"),
                    )
                };
                write!(
                    f,
                    "budget file {} holds charges that protect {}, but this run protects {}; \
                     costs for different units do not add up (use another budget file)",
                    path.display(),
                    name(file),
                    name(stated)
                )
            }
            BudgetFileError::RelationMismatch { path, file, stated } => {
                let name = |n: &Option<Neighbours>| {
                    n.map_or_else(|| "no stated relation".into(), |n| n.phrase().to_string())
                };
                write!(
                    f,
                    "budget file {} holds charges under {}, but this run's cost is stated for {}; \
                     costs under different neighbour relations do not add up (use another budget file)",
                    path.display(),
                    name(file),
                    name(stated)
                )
            }
            BudgetFileError::InvalidDelta(d) => write!(f, "δ = {d} is not in [0, 1)"),
            BudgetFileError::InvalidCost(why) => write!(f, "cannot charge a budget file: {why}"),
            BudgetFileError::Overflow => write!(f, "exact ε arithmetic overflowed"),
        }
    }
}

impl std::error::Error for BudgetFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BudgetFileError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

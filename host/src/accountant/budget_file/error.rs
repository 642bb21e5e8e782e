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

impl fmt::Display for BudgetExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (path, label) = (self.path.display(), &self.label);
        let (cap, requested) = (&self.cap, delta_text(self.requested_delta));
        if self.epsilon_fits() && self.cap.delta == 0.0 {
            write!(
                f,
                "privacy budget of {path} exceeded in δ: {label} needs δ = {requested}, but the \
                 cap {cap} allows no δ (its ε = {} would fit); nothing was charged",
                self.requested_epsilon,
            )
        } else if self.epsilon_fits() {
            write!(
                f,
                "privacy budget of {path} exceeded in δ: {label} needs δ = {requested}, but δ = {} \
                 of the cap {cap} is spent (its ε = {} would fit); nothing was charged",
                delta_text(self.spent_delta),
                self.requested_epsilon,
            )
        } else {
            write!(
                f,
                "privacy budget of {path} exceeded: {label} needs ε = {}, δ = {requested}, but \
                 ε = {} and δ = {} of the cap {cap} are spent; nothing was charged",
                self.requested_epsilon,
                self.spent_epsilon
                    .map_or_else(|| "0".into(), |e| e.to_string()),
                delta_text(self.spent_delta),
            )
        }
    }
}

/// What a budget file refuses.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetFileError {
    /// Opening, locking, reading, writing or syncing failed.
    #[error("budget file {}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The path exists but is not a regular file (a directory, a link, a device);
    /// it is left alone.
    #[error(
        "budget file {}: not a regular file (a directory, link or device); refusing to use it",
        .0.display()
    )]
    NotARegularFile(PathBuf),
    /// The file has more than one name (hard link): each name would have its own
    /// lock and, after a charge, its own budget; it is left alone.
    #[error(
        "budget file {} has {links} hard links: a budget file must have one name (each name \
         would have its own lock and become a budget of its own); remove the other names",
        .path.display()
    )]
    HardLinked {
        /// The file.
        path: PathBuf,
        /// How many names it has.
        links: u64,
    },
    /// The file exists but is not a privq budget file; it is never overwritten.
    #[error(
        "{} exists and is not a privq budget file ({reason}); refusing to use or replace it",
        .path.display()
    )]
    NotABudgetFile {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A budget file of a format version this build does not know.
    #[error(
        "budget file {}: format version {version} is not supported by this privq (it reads \
         version {BUDGET_FILE_VERSION})",
        .path.display()
    )]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// Its version.
        version: u64,
    },
    /// A privq budget file whose content is invalid (a zero denominator, a δ
    /// outside [0, 1), an unknown relation, charges under two relations, …).
    #[error("budget file {} is corrupt: {reason}", .path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The file does not exist yet and no cap was given to create it with.
    #[error(
        "budget file {} does not exist; give a cap (--budget-cap EPS[,DELTA]) to create it",
        .0.display()
    )]
    NoCap(PathBuf),
    /// A cap was given that differs from the one the file was created with.
    #[error(
        "budget file {} was created with cap {stored}, not {given}; a cap is fixed when the file \
         is created (omit the cap to use the stored one)",
        .path.display()
    )]
    CapMismatch {
        /// The file.
        path: PathBuf,
        /// The file's cap.
        stored: Cap,
        /// The cap given.
        given: Cap,
    },
    /// The charge does not fit in what is left of the cap; nothing was written.
    #[error("{0}")]
    Exceeded(Box<BudgetExceeded>),
    /// The charge is stated for another neighbour relation than the file's
    /// charges; nothing was written.
    #[error(
        "budget file {} holds charges under {}, but this run's cost is stated for {}; costs \
         under different neighbour relations do not add up (use another budget file)",
        path.display(),
        relation_name(*.file),
        relation_name(*.stated)
    )]
    RelationMismatch {
        /// The file.
        path: PathBuf,
        /// The relation of the file's charges.
        file: Option<Neighbours>,
        /// The relation of this charge.
        stated: Option<Neighbours>,
    },
    /// The file's charges are for another privacy unit than this run's.
    #[error(
        "budget file {} holds charges that protect {}, but this run protects {}; costs for \
         different units do not add up (use another budget file)",
        path.display(),
        unit_name(.file),
        unit_name(.stated)
    )]
    UnitMismatch {
        /// The file.
        path: PathBuf,
        /// The unit of the file's charges (`None`: one record).
        file: Option<String>,
        /// This run's unit.
        stated: Option<String>,
    },
    /// The budget file is gone although its lock file shows that it existed.
    #[error(
        "budget file {} is missing, but its lock file shows that it existed: restore it \
         (starting afresh would forget the budget already spent), or delete {}.lock to start a \
         new budget on purpose",
        .0.display(),
        .0.display()
    )]
    Missing(PathBuf),
    /// A δ outside `[0, 1)`.
    #[error("δ = {0} is not in [0, 1)")]
    InvalidDelta(f64),
    /// A cost that cannot be charged (see the message).
    #[error("cannot charge a budget file: {0}")]
    InvalidCost(String),
    /// A ρ-zCDP cost could not be converted to the (ε, δ) the file records.
    #[error("cannot charge a budget file: {0}")]
    Conversion(#[source] crate::accountant::AccountantError),
    /// Exact ε arithmetic overflowed.
    #[error("exact ε arithmetic overflowed")]
    Overflow,
}

fn relation_name(n: Option<Neighbours>) -> String {
    n.map_or_else(|| "no stated relation".into(), |n| n.phrase().to_string())
}

fn unit_name(u: &Option<String>) -> String {
    u.as_ref().map_or_else(
        || "one record".to_string(),
        |c| format!("privacy unit {c:?}"),
    )
}

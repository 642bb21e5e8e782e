//! A dataset's privacy budget across runs: a persistent, locked, versioned ledger
//! file ([`BudgetFile`]).
//!
//! Every run that spends privacy on a dataset charges the file **before it releases
//! anything**: [`BudgetFile::charge`] takes an exclusive lock, reads the file, checks
//! that what was spent plus this run's cost fits in the cap (basic composition:
//! ε's add exactly, δ's add), and appends the charge, written atomically and synced
//! to disk before it returns. Two runs that charge one file at the same time are
//! serialized by the lock, so together they can never exceed the cap; a refused
//! charge writes nothing; a process killed after the charge has returned never
//! loses it.
//!
//! # The file (version 1)
//!
//! ```json
//! {
//!   "format": "privq-budget",
//!   "version": 1,
//!   "cap": { "epsilon": { "num": 5, "den": 1 }, "delta": 1e-6 },
//!   "charges": [
//!     {
//!       "label": "privq noise",
//!       "time": "2026-01-02T03:04:05Z",
//!       "neighbours": "add-remove",
//!       "cost": "ε = 1/2",
//!       "epsilon": { "num": 1, "den": 2 },
//!       "delta": 0.0,
//!       "certified": true
//!     }
//!   ]
//! }
//! ```
//!
//! * `cap`: the total (ε, δ) the dataset may ever spend, fixed when the file is
//!   created. ε is an exact reduced fraction, δ ∈ [0, 1).
//! * each charge: what it was for (`label`), when (`time`, UTC), the neighbour
//!   relation its cost was stated for (`add-remove`, `replace`, or `null`), the
//!   run's cost as stated (`cost`, exact, as the JSON ledger of `--ledger-json`
//!   prints it) and the (ε, δ) charged against the cap (`epsilon`, `delta`). A
//!   ρ-zCDP run is charged the (ε, δ) its accountant reports: ρ converted at the
//!   run's δ by [`zcdp_epsilon`](super::zcdp_epsilon) (CKS20), or the ε the
//!   accountant was built for. `certified: false` marks an
//!   [`Uncertified`](super::Cost::Uncertified) cost.
//! * spent = the exact sum of the charges' ε, and the sum of their δ; nothing else
//!   is stored, so the total cannot disagree with the charges.
//!
//! All charges of one file are stated for **one** neighbour relation, the first
//! charge's: costs under different relations do not add up to a guarantee under
//! either (as in [`Accountant::bind`](super::Accountant::bind)).
//!
//! The lock is held on a companion file, `<name>.lock` in the same directory (the
//! budget file itself is replaced by a rename on every charge, so it cannot carry
//! the lock); it is created on first use and never written. Delete neither while a
//! run may be charging.
//!
//! ```
//! use privq_host::accountant::{BudgetFile, BudgetFileError, Cap, RunCost};
//! use privq_host::Epsilon;
//! let dir = std::env::temp_dir().join(format!("privq-budget-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let path = dir.join("ledger.json");
//! # let _ = std::fs::remove_file(&path);
//! let cap = Cap::new(Epsilon::new(1, 1)?, 0.0)?;
//! let half = RunCost::new(Epsilon::new(1, 2)?.into())?;
//! BudgetFile::charge(&path, Some(cap), &half, "first run", None)?;
//! // Later runs may omit the cap: the stored one applies.
//! let status = BudgetFile::charge(&path, None, &half, "second run", None)?;
//! assert_eq!(status.remaining_epsilon(), None);
//! let refused = BudgetFile::charge(&path, None, &half, "third run", None);
//! assert!(matches!(refused, Err(BudgetFileError::Exceeded(_))));
//! assert_eq!(BudgetFile::read(&path)?.charges().len(), 2);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use privq_core::Epsilon;
use serde::{Deserialize, Serialize};

use super::{Accountant, Cost, zcdp_epsilon};
use crate::contract::Neighbours;

/// The version of the budget-file format this build writes and reads.
pub const BUDGET_FILE_VERSION: u64 = 1;

/// The `format` field that marks a privq budget file.
const FORMAT: &str = "privq-budget";

/// A budget file larger than this is refused unread (a million charges fit).
const MAX_BYTES: u64 = 256 << 20;

/// The total (ε, δ) a dataset may spend over all runs: ε exact, δ ∈ [0, 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cap {
    epsilon: Epsilon,
    delta: f64,
}

impl Cap {
    /// A cap of ε and δ; δ must be in `[0, 1)`.
    pub fn new(epsilon: Epsilon, delta: f64) -> Result<Cap, BudgetFileError> {
        if !(0.0..1.0).contains(&delta) {
            return Err(BudgetFileError::InvalidDelta(delta));
        }
        Ok(Cap { epsilon, delta })
    }

    /// The ε cap.
    pub fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    /// The δ cap.
    pub fn delta(&self) -> f64 {
        self.delta
    }
}

impl fmt::Display for Cap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ε = {}, δ = {}", self.epsilon, delta_text(self.delta))
    }
}

/// A δ exactly: `0`, else Rust's shortest round-trip `{:e}` form (`1e-6`).
fn delta_text(delta: f64) -> String {
    if delta == 0.0 {
        "0".into()
    } else {
        format!("{delta:e}")
    }
}

/// What one run is charged against a budget file: its cost as stated, and the
/// (ε, δ) that is added to the file's spent total.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunCost {
    cost: Cost,
    epsilon: Epsilon,
    delta: f64,
}

impl RunCost {
    /// A run whose cost is an ε cost (pure, (ε, δ), bounded range, uncertified):
    /// charged its ε and δ. A ρ-zCDP cost needs the δ its guarantee is stated at:
    /// use [`RunCost::zcdp`] or [`RunCost::of`].
    pub fn new(cost: Cost) -> Result<RunCost, BudgetFileError> {
        let Some(epsilon) = cost.epsilon() else {
            return Err(BudgetFileError::InvalidCost(
                "a ρ-zCDP cost needs the δ its guarantee is stated at (RunCost::zcdp)".into(),
            ));
        };
        let delta = cost.delta();
        if !(0.0..1.0).contains(&delta) {
            return Err(BudgetFileError::InvalidDelta(delta));
        }
        Ok(RunCost {
            cost,
            epsilon,
            delta,
        })
    }

    /// A ρ-zCDP run whose guarantee is stated at `delta ∈ (0, 1)`: charged
    /// (ε, δ) with ε the tight conversion [`zcdp_epsilon`] (CKS20 Cor. 13), which
    /// is never below the exact bound, rounded up to an exact fraction.
    pub fn zcdp(rho: privq_core::Rho, delta: f64) -> Result<RunCost, BudgetFileError> {
        let converted = zcdp_epsilon(rho.to_f64(), delta)
            .map_err(|e| BudgetFileError::InvalidCost(e.to_string()))?;
        Ok(RunCost {
            cost: Cost::Zcdp(rho),
            epsilon: epsilon_at_least(converted)?,
            delta,
        })
    }

    /// The run whose accountant is `accountant`, built through a library entry point
    /// so that its budget is exactly the run's planned cost
    /// ([`Accountant::budget_cost`]). A zCDP accountant is charged the (ε, δ) it
    /// reports: its [`budget`](Accountant::budget) ε when that is at least the
    /// conversion of its ρ at its δ (as [`Accountant::zcdp_for`] guarantees), else
    /// the conversion rounded up.
    pub fn of(accountant: &Accountant) -> Result<RunCost, BudgetFileError> {
        let cost = accountant.budget_cost();
        let Cost::Zcdp(rho) = cost else {
            return RunCost::new(cost);
        };
        let delta = accountant.budget_delta();
        let converted = zcdp_epsilon(rho.to_f64(), delta)
            .map_err(|e| BudgetFileError::InvalidCost(e.to_string()))?;
        let stated = accountant.budget();
        let epsilon = if converted <= stated.to_f64() {
            stated
        } else {
            epsilon_at_least(converted)?
        };
        Ok(RunCost {
            cost,
            epsilon,
            delta,
        })
    }

    /// The run's cost as stated.
    pub fn cost(&self) -> Cost {
        self.cost
    }

    /// The ε charged against the cap.
    pub fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    /// The δ charged against the cap.
    pub fn delta(&self) -> f64 {
        self.delta
    }
}

/// The smallest fraction with denominator 2⁶³ (or exact) that is at least `x > 0`.
fn epsilon_at_least(x: f64) -> Result<Epsilon, BudgetFileError> {
    let tiny = Epsilon::new(1, 1 << 63).map_err(|_| BudgetFileError::Overflow)?;
    let e = match Epsilon::from_f64(x) {
        Ok(e) => e,
        Err(privq_core::Error::EpsilonTooSmall | privq_core::Error::EpsilonZero) => {
            return Ok(tiny);
        }
        Err(_) => return Err(BudgetFileError::Overflow),
    };
    if e.to_f64() >= x {
        Ok(e)
    } else {
        e.checked_add(tiny).map_err(|_| BudgetFileError::Overflow)
    }
}

/// One charge recorded in a budget file.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetCharge {
    /// What the budget was spent on (the command).
    pub label: String,
    /// When, in UTC (`2026-01-02T03:04:05Z`).
    pub time: String,
    /// The neighbour relation the cost was stated for (`None`: not stated).
    pub neighbours: Option<Neighbours>,
    /// The privacy unit the relation is over: `None` for one record (row), or the
    /// column naming the unit (`privq sql --privacy-unit`).
    pub unit: Option<String>,
    /// The run's cost as stated, exactly (e.g. `ε = 1/2`, `ρ = 1/8 (zCDP)`).
    pub cost: String,
    /// The ε charged against the cap.
    pub epsilon: Epsilon,
    /// The δ charged against the cap.
    pub delta: f64,
    /// False for an uncertified cost (no proof that it holds).
    pub certified: bool,
}

/// A budget file as read: its cap and its charges, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetFile {
    cap: Cap,
    charges: Vec<BudgetCharge>,
}

/// The state of a budget file after a charge was accepted (or as read).
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetStatus {
    /// The file's cap.
    pub cap: Cap,
    /// The exact ε spent, this charge included (`None`: nothing yet).
    pub spent_epsilon: Option<Epsilon>,
    /// The δ spent, this charge included.
    pub spent_delta: f64,
    /// How many charges the file holds.
    pub charges: usize,
}

impl BudgetStatus {
    /// ε still available (`None` when used up exactly).
    pub fn remaining_epsilon(&self) -> Option<Epsilon> {
        match self.spent_epsilon {
            None => Some(self.cap.epsilon),
            Some(s) => self.cap.epsilon.checked_sub(s).ok().flatten(),
        }
    }

    /// δ still available (never negative).
    pub fn remaining_delta(&self) -> f64 {
        (self.cap.delta - self.spent_delta).max(0.0)
    }
}

impl fmt::Display for BudgetStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "spent ε = {} of {}, δ = {} of {} ({} charge(s)); remaining ε = {}, δ = {}",
            self.spent_epsilon
                .map_or_else(|| "0".into(), |e| e.to_string()),
            self.cap.epsilon,
            delta_text(self.spent_delta),
            delta_text(self.cap.delta),
            self.charges,
            self.remaining_epsilon()
                .map_or_else(|| "0".into(), |e| e.to_string()),
            delta_text(self.remaining_delta()),
        )
    }
}

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

// ---- the JSON form ----

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Fraction {
    num: u64,
    den: u64,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CapJson {
    epsilon: Fraction,
    delta: f64,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChargeJson {
    label: String,
    time: String,
    neighbours: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    unit: Option<String>,
    cost: String,
    epsilon: Fraction,
    delta: f64,
    certified: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileJson {
    format: String,
    version: u64,
    cap: CapJson,
    charges: Vec<ChargeJson>,
}

fn neighbours_name(n: Neighbours) -> &'static str {
    match n {
        Neighbours::AddRemove => "add-remove",
        Neighbours::Replace => "replace",
    }
}

fn neighbours_from(name: &str) -> Option<Neighbours> {
    match name {
        "add-remove" => Some(Neighbours::AddRemove),
        "replace" => Some(Neighbours::Replace),
        _ => None,
    }
}

impl BudgetFile {
    /// Reads the budget file at `path` (no lock is needed: a charge replaces the
    /// file whole by a rename, so a reader sees the state before or after it).
    pub fn read(path: &Path) -> Result<BudgetFile, BudgetFileError> {
        match load(path)? {
            Some(file) => Ok(file),
            None => Err(BudgetFileError::Io {
                path: path.to_path_buf(),
                source: io::Error::new(io::ErrorKind::NotFound, "no such budget file"),
            }),
        }
    }

    /// Charges `run` to the budget file at `path`, for `label`, stated under
    /// `neighbours`: opens (or, with a `cap`, creates) the file under an exclusive
    /// lock, refuses the charge unless spent + `run` fits in the cap (exact ε sum,
    /// δ sum), and otherwise appends it and writes the file atomically (a temporary
    /// file in the same directory, synced, renamed over the file, the directory
    /// synced), all before the lock is released. Call it **before** releasing
    /// anything: when it returns `Ok`, the charge is on disk.
    ///
    /// `cap`: required when the file does not exist; otherwise `None` (use the
    /// stored cap) or exactly the stored cap.
    pub fn charge(
        path: &Path,
        cap: Option<Cap>,
        run: &RunCost,
        label: &str,
        neighbours: Option<Neighbours>,
    ) -> Result<BudgetStatus, BudgetFileError> {
        Self::charge_unit(path, cap, run, label, neighbours, None)
    }

    /// [`BudgetFile::charge`] for a relation over a privacy unit other than one
    /// record (`unit`: the column naming it). Every charge of a file must protect
    /// the same unit: a run over rows and a run over devices do not add up to one
    /// guarantee (a device with k rows costs k times a row's ε).
    pub fn charge_unit(
        path: &Path,
        cap: Option<Cap>,
        run: &RunCost,
        label: &str,
        neighbours: Option<Neighbours>,
        unit: Option<&str>,
    ) -> Result<BudgetStatus, BudgetFileError> {
        let io_err = |source| BudgetFileError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut lock = open_lock(path)?;
        lock.lock().map_err(io_err)?;
        // The lock file is marked once a budget file was written beside it, so a
        // budget file that has gone missing is not silently started afresh.
        let existed = lock.metadata().map_err(io_err)?.len() > 0;
        let result = Self::charge_locked(path, cap, run, label, neighbours, unit, existed);
        if result.is_ok() && !existed {
            use std::io::Write as _;
            lock.write_all(LOCK_MARK)
                .and_then(|()| lock.sync_all())
                .map_err(io_err)?;
        }
        // Closing the file releases the lock too; unlock explicitly for clarity.
        let _ = lock.unlock();
        result
    }

    /// [`BudgetFile::charge`] for the run of `accountant` ([`RunCost::of`]),
    /// stated under the relation it is bound to.
    pub fn charge_accountant(
        path: &Path,
        cap: Option<Cap>,
        accountant: &Accountant,
        label: &str,
    ) -> Result<BudgetStatus, BudgetFileError> {
        let run = RunCost::of(accountant)?;
        Self::charge(path, cap, &run, label, accountant.neighbours())
    }

    fn charge_locked(
        path: &Path,
        cap: Option<Cap>,
        run: &RunCost,
        label: &str,
        neighbours: Option<Neighbours>,
        unit: Option<&str>,
        existed: bool,
    ) -> Result<BudgetStatus, BudgetFileError> {
        let mut file = match (load(path)?, cap) {
            (None, _) if existed => {
                return Err(BudgetFileError::Missing(path.to_path_buf()));
            }
            (Some(file), Some(given)) if file.cap != given => {
                return Err(BudgetFileError::CapMismatch {
                    path: path.to_path_buf(),
                    stored: file.cap,
                    given,
                });
            }
            (Some(file), _) => file,
            (None, Some(cap)) => BudgetFile {
                cap,
                charges: Vec::new(),
            },
            (None, None) => return Err(BudgetFileError::NoCap(path.to_path_buf())),
        };
        if let Some(first) = file.charges.first()
            && first.unit.as_deref() != unit
        {
            return Err(BudgetFileError::UnitMismatch {
                path: path.to_path_buf(),
                file: first.unit.clone(),
                stated: unit.map(str::to_string),
            });
        }
        if let Some(first) = file.charges.first()
            && first.neighbours != neighbours
        {
            return Err(BudgetFileError::RelationMismatch {
                path: path.to_path_buf(),
                file: first.neighbours,
                stated: neighbours,
            });
        }
        let before = file.status()?;
        let total = match before.spent_epsilon {
            None => run.epsilon,
            Some(s) => s
                .checked_add(run.epsilon)
                .map_err(|_| BudgetFileError::Overflow)?,
        };
        let total_delta = before.spent_delta + run.delta;
        if total > file.cap.epsilon || total_delta > file.cap.delta {
            return Err(BudgetFileError::Exceeded(Box::new(BudgetExceeded {
                path: path.to_path_buf(),
                label: label.to_string(),
                cap: file.cap,
                spent_epsilon: before.spent_epsilon,
                spent_delta: before.spent_delta,
                requested_epsilon: run.epsilon,
                requested_delta: run.delta,
            })));
        }
        file.charges.push(BudgetCharge {
            label: label.to_string(),
            time: utc_now(),
            neighbours,
            unit: unit.map(str::to_string),
            cost: run.cost.to_string(),
            epsilon: run.epsilon,
            delta: run.delta,
            certified: !matches!(run.cost, Cost::Uncertified(_)),
        });
        store(path, &file.to_json_bytes())?;
        Ok(BudgetStatus {
            cap: file.cap,
            spent_epsilon: Some(total),
            spent_delta: total_delta,
            charges: file.charges.len(),
        })
    }

    /// The cap.
    pub fn cap(&self) -> Cap {
        self.cap
    }

    /// The charges, in the order they were made.
    pub fn charges(&self) -> &[BudgetCharge] {
        &self.charges
    }

    /// The spent totals and what remains.
    pub fn status(&self) -> Result<BudgetStatus, BudgetFileError> {
        let mut spent: Option<Epsilon> = None;
        let mut delta = 0.0;
        for c in &self.charges {
            spent = Some(match spent {
                None => c.epsilon,
                Some(s) => s
                    .checked_add(c.epsilon)
                    .map_err(|_| BudgetFileError::Overflow)?,
            });
            delta += c.delta;
        }
        Ok(BudgetStatus {
            cap: self.cap,
            spent_epsilon: spent,
            spent_delta: delta,
            charges: self.charges.len(),
        })
    }

    /// True when some charge is uncertified (its ε has no proof that it holds).
    pub fn has_uncertified(&self) -> bool {
        self.charges.iter().any(|c| !c.certified)
    }

    /// The file's JSON form (the format in the module docs).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self.to_raw()).unwrap_or(serde_json::Value::Null)
    }

    fn to_raw(&self) -> FileJson {
        let fraction = |e: Epsilon| Fraction {
            num: e.num(),
            den: e.den(),
        };
        FileJson {
            format: FORMAT.into(),
            version: BUDGET_FILE_VERSION,
            cap: CapJson {
                epsilon: fraction(self.cap.epsilon),
                delta: self.cap.delta,
            },
            charges: self
                .charges
                .iter()
                .map(|c| ChargeJson {
                    label: c.label.clone(),
                    time: c.time.clone(),
                    neighbours: c.neighbours.map(|n| neighbours_name(n).to_string()),
                    unit: c.unit.clone(),
                    cost: c.cost.clone(),
                    epsilon: fraction(c.epsilon),
                    delta: c.delta,
                    certified: c.certified,
                })
                .collect(),
        }
    }

    fn to_json_bytes(&self) -> Vec<u8> {
        // A struct of strings, integers and finite floats always serializes.
        let mut bytes = serde_json::to_vec_pretty(&self.to_raw()).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// Parses and checks the text of a budget file.
    fn parse(path: &Path, bytes: &[u8]) -> Result<BudgetFile, BudgetFileError> {
        let not_ours = |reason: String| BudgetFileError::NotABudgetFile {
            path: path.to_path_buf(),
            reason,
        };
        let corrupt = |reason: String| BudgetFileError::Corrupt {
            path: path.to_path_buf(),
            reason,
        };
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| not_ours(format!("not JSON: {e}")))?;
        if value.get("format").and_then(serde_json::Value::as_str) != Some(FORMAT) {
            return Err(not_ours(format!("no \"format\": \"{FORMAT}\"")));
        }
        match value.get("version").and_then(serde_json::Value::as_u64) {
            Some(BUDGET_FILE_VERSION) => {}
            Some(version) => {
                return Err(BudgetFileError::UnsupportedVersion {
                    path: path.to_path_buf(),
                    version,
                });
            }
            None => return Err(corrupt("no integer \"version\"".into())),
        }
        let raw: FileJson = serde_json::from_value(value).map_err(|e| corrupt(e.to_string()))?;
        let epsilon = |f: &Fraction, what: &str| {
            Epsilon::new(f.num, f.den)
                .map_err(|e| corrupt(format!("{what}: ε = {}/{}: {e}", f.num, f.den)))
        };
        let delta = |d: f64, what: &str| {
            if (0.0..1.0).contains(&d) {
                Ok(d)
            } else {
                Err(corrupt(format!("{what}: δ = {d} is not in [0, 1)")))
            }
        };
        let cap = Cap {
            epsilon: epsilon(&raw.cap.epsilon, "cap")?,
            delta: delta(raw.cap.delta, "cap")?,
        };
        let mut charges = Vec::with_capacity(raw.charges.len());
        for (i, c) in raw.charges.into_iter().enumerate() {
            let what = format!("charge {}", i + 1);
            let neighbours = match c.neighbours.as_deref() {
                None => None,
                Some(name) => Some(neighbours_from(name).ok_or_else(|| {
                    corrupt(format!("{what}: unknown neighbour relation {name:?}"))
                })?),
            };
            charges.push(BudgetCharge {
                epsilon: epsilon(&c.epsilon, &what)?,
                delta: delta(c.delta, &what)?,
                label: c.label,
                time: c.time,
                neighbours,
                unit: c.unit,
                cost: c.cost,
                certified: c.certified,
            });
        }
        if let Some(first) = charges.first()
            && let Some(other) = charges.iter().find(|c| c.unit != first.unit)
        {
            return Err(corrupt(format!(
                "charges for two privacy units ({:?} and {:?})",
                first.unit, other.unit
            )));
        }
        if let Some(first) = charges.first()
            && let Some(other) = charges.iter().find(|c| c.neighbours != first.neighbours)
        {
            return Err(corrupt(format!(
                "charges under two neighbour relations ({:?} and {:?})",
                first.neighbours, other.neighbours
            )));
        }
        let file = BudgetFile { cap, charges };
        file.status()?;
        Ok(file)
    }
}

/// The budget file at `path`: `None` when it does not exist; an error when it is
/// not a regular file, not a privq budget file, or invalid.
fn load(path: &Path) -> Result<Option<BudgetFile>, BudgetFileError> {
    let io_err = |source| BudgetFileError::Io {
        path: path.to_path_buf(),
        source,
    };
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(e)),
        Ok(m) if !m.file_type().is_file() => {
            return Err(BudgetFileError::NotARegularFile(path.to_path_buf()));
        }
        Ok(m) if m.len() > MAX_BYTES => {
            return Err(BudgetFileError::NotABudgetFile {
                path: path.to_path_buf(),
                reason: format!("larger than {MAX_BYTES} bytes"),
            });
        }
        Ok(_) => {}
    }
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|f| f.take(MAX_BYTES + 1).read_to_end(&mut bytes))
        .map_err(io_err)?;
    BudgetFile::parse(path, &bytes).map(Some)
}

/// The directory holding `path` (`.` for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// `path` with its file name changed to `f(name)`.
fn sibling(path: &Path, f: impl FnOnce(&str) -> String) -> Result<PathBuf, BudgetFileError> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| BudgetFileError::Io {
            path: path.to_path_buf(),
            source: io::Error::new(io::ErrorKind::InvalidInput, "not a UTF-8 file path"),
        })?;
    Ok(parent_dir(path).join(f(name)))
}

/// Opens (creating) the lock file `<name>.lock` beside `path`.
/// What a lock file holds once its budget file has been written.
const LOCK_MARK: &[u8] = b"privq budget file lock\n";

fn open_lock(path: &Path) -> Result<File, BudgetFileError> {
    let lock_path = sibling(path, |name| format!("{name}.lock"))?;
    if fs::symlink_metadata(&lock_path).is_ok_and(|m| !m.file_type().is_file()) {
        return Err(BudgetFileError::NotARegularFile(lock_path));
    }
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .map_err(|source| BudgetFileError::Io {
            path: lock_path,
            source,
        })
}

/// Replaces `path` with `bytes`: a temporary file in the same directory, written
/// and synced, renamed over `path`, then the directory synced, so that after a
/// crash `path` holds the old or the new content, and after a return the new
/// content is durable.
fn store(path: &Path, bytes: &[u8]) -> Result<(), BudgetFileError> {
    let tmp = sibling(path, |name| format!(".{name}.{}.tmp", std::process::id()))?;
    let io_err = |p: &Path| {
        let p = p.to_path_buf();
        move |source| BudgetFileError::Io { path: p, source }
    };
    // Under the lock, a leftover temporary of this name is stale (a killed run
    // with the same process id); remove it rather than write through it.
    if fs::symlink_metadata(&tmp).is_ok() {
        fs::remove_file(&tmp).map_err(io_err(&tmp))?;
    }
    let written = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(io_err(&tmp)(e));
    }
    sync_dir(parent_dir(path)).map_err(io_err(parent_dir(path)))
}

/// Syncs a directory, so that a rename in it is durable (Unix; elsewhere the
/// rename is as durable as the platform makes it).
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// The current time in UTC as `YYYY-MM-DDTHH:MM:SSZ`.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc_text(secs)
}

/// `secs` since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian,
/// the days-to-civil conversion of H. Hinnant's date algorithms).
fn utc_text(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use privq_core::Rho;

    fn eps(n: u64, d: u64) -> Epsilon {
        Epsilon::new(n, d).unwrap()
    }

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("privq-budget-file-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir.join("ledger.json")
    }

    fn pure(n: u64, d: u64) -> RunCost {
        RunCost::new(Cost::Pure(eps(n, d))).unwrap()
    }

    #[test]
    fn a_deleted_budget_file_is_not_started_afresh() {
        let path = scratch("deleted");
        let cap = Cap::new(eps(2, 1), 0.0).unwrap();
        // A first charge refused at creation leaves no budget behind to protect.
        assert!(BudgetFile::charge(&path, Some(cap), &pure(3, 1), "too big", None).is_err());
        BudgetFile::charge(&path, Some(cap), &pure(1, 1), "first", None).unwrap();
        fs::remove_file(&path).unwrap();
        let e = BudgetFile::charge(&path, Some(cap), &pure(1, 1), "again", None).unwrap_err();
        assert!(matches!(e, BudgetFileError::Missing(_)), "{e}");
        assert!(!path.exists());
    }

    #[test]
    fn budget_charges_for_another_privacy_unit_are_refused() {
        let path = scratch("unit");
        let cap = Cap::new(eps(3, 1), 0.0).unwrap();
        let run = pure(1, 1);
        BudgetFile::charge_unit(&path, Some(cap), &run, "sql", None, Some("device")).unwrap();
        BudgetFile::charge_unit(&path, None, &run, "sql", None, Some("device")).unwrap();
        // Rows and devices do not add up: a device with k rows costs k·ε per row run.
        let e = BudgetFile::charge(&path, None, &run, "noise", None).unwrap_err();
        assert!(matches!(e, BudgetFileError::UnitMismatch { .. }), "{e}");
        assert!(e.to_string().contains("privacy unit \"device\""), "{e}");
        let file = BudgetFile::read(&path).unwrap();
        assert_eq!(file.charges().len(), 2);
        assert_eq!(file.charges()[0].unit.as_deref(), Some("device"));
    }

    #[test]
    fn budget_charges_that_fit_are_summed_exactly() {
        let path = scratch("fits");
        let cap = Cap::new(eps(1, 1), 1e-6).unwrap();
        let third = pure(1, 3);
        for i in 0..3 {
            let status =
                BudgetFile::charge(&path, (i == 0).then_some(cap), &third, "a third", None)
                    .unwrap();
            assert_eq!(status.charges, i + 1);
        }
        let file = BudgetFile::read(&path).unwrap();
        let status = file.status().unwrap();
        // 1/3 three times is exactly 1: no rounding lets a fourth charge in.
        assert_eq!(status.spent_epsilon, Some(eps(1, 1)));
        assert_eq!(status.remaining_epsilon(), None);
        assert!(matches!(
            BudgetFile::charge(&path, None, &pure(1, 1_000_000), "tiny", None),
            Err(BudgetFileError::Exceeded(_))
        ));
        // The δ side: (ε, δ) charges add δ.
        let path = scratch("delta");
        let cap = Cap::new(eps(10, 1), 1e-6).unwrap();
        let approx = RunCost::new(Cost::Approximate {
            epsilon: eps(1, 1),
            delta: 5e-7,
        })
        .unwrap();
        BudgetFile::charge(&path, Some(cap), &approx, "a", None).unwrap();
        BudgetFile::charge(&path, Some(cap), &approx, "b", None).unwrap();
        let e = BudgetFile::charge(&path, None, &approx, "c", None).unwrap_err();
        assert!(matches!(e, BudgetFileError::Exceeded(_)), "{e}");
        assert_eq!(BudgetFile::read(&path).unwrap().charges().len(), 2);
    }

    #[test]
    fn budget_refusal_names_spent_cap_and_request_and_writes_nothing() {
        let path = scratch("refuse");
        let cap = Cap::new(eps(1, 1), 0.0).unwrap();
        BudgetFile::charge(&path, Some(cap), &pure(3, 4), "first", None).unwrap();
        let before = fs::read(&path).unwrap();
        let e = BudgetFile::charge(&path, None, &pure(1, 2), "second", None).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("second needs ε = 1/2"), "{text}");
        assert!(text.contains("ε = 3/4"), "{text}");
        assert!(text.contains("cap ε = 1, δ = 0"), "{text}");
        assert_eq!(fs::read(&path).unwrap(), before, "nothing written");
        // No temporary file is left behind.
        let names: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    }

    /// A charge whose ε fits but whose δ does not names δ; one that exceeds ε (alone
    /// or with δ) keeps the message that shows both.
    #[test]
    fn budget_refusal_names_delta_when_delta_alone_is_exceeded() {
        let approx = |n, d, delta| {
            RunCost::new(Cost::Approximate {
                epsilon: eps(n, d),
                delta,
            })
            .unwrap()
        };
        let path = scratch("refuse-delta");
        let cap = Cap::new(eps(1, 1), 0.0).unwrap();
        let e = BudgetFile::charge(
            &path,
            Some(cap),
            &approx(1, 2, 1e-6),
            "private groups",
            None,
        )
        .unwrap_err();
        assert!(matches!(e, BudgetFileError::Exceeded(_)), "{e}");
        assert_eq!(
            e.to_string(),
            format!(
                "privacy budget of {} exceeded in δ: private groups needs δ = 1e-6, but the cap \
                 ε = 1, δ = 0 allows no δ (its ε = 1/2 would fit); nothing was charged",
                path.display()
            )
        );
        assert!(!path.exists(), "nothing written");
        // A cap with a δ, partly spent.
        let cap = Cap::new(eps(2, 1), 1e-6).unwrap();
        BudgetFile::charge(&path, Some(cap), &approx(1, 2, 6e-7), "first", None).unwrap();
        let e = BudgetFile::charge(&path, None, &approx(1, 2, 6e-7), "second", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "privacy budget of {} exceeded in δ: second needs δ = 6e-7, but δ = 6e-7 of the \
                 cap ε = 2, δ = 1e-6 is spent (its ε = 1/2 would fit); nothing was charged",
                path.display()
            )
        );
        // ε exceeded, with δ or without: the message as before.
        for (delta, what) in [(6e-7, "6e-7"), (0.0, "0")] {
            let e =
                BudgetFile::charge(&path, None, &approx(2, 1, delta), "third", None).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "privacy budget of {} exceeded: third needs ε = 2, δ = {what}, but ε = 1/2 \
                     and δ = 6e-7 of the cap ε = 2, δ = 1e-6 are spent; nothing was charged",
                    path.display()
                )
            );
        }
        assert_eq!(BudgetFile::read(&path).unwrap().charges().len(), 1);
    }

    #[test]
    fn budget_cap_is_fixed_at_creation() {
        let path = scratch("cap");
        assert!(matches!(
            BudgetFile::charge(&path, None, &pure(1, 2), "no cap", None),
            Err(BudgetFileError::NoCap(_))
        ));
        assert!(!path.exists());
        let cap = Cap::new(eps(2, 1), 0.0).unwrap();
        BudgetFile::charge(&path, Some(cap), &pure(1, 2), "create", None).unwrap();
        let other = Cap::new(eps(3, 1), 0.0).unwrap();
        let e = BudgetFile::charge(&path, Some(other), &pure(1, 2), "bigger", None).unwrap_err();
        assert!(matches!(e, BudgetFileError::CapMismatch { .. }), "{e}");
        assert!(e.to_string().contains("created with cap ε = 2"), "{e}");
        let other_delta = Cap::new(eps(2, 1), 1e-9).unwrap();
        assert!(matches!(
            BudgetFile::charge(&path, Some(other_delta), &pure(1, 2), "δ", None),
            Err(BudgetFileError::CapMismatch { .. })
        ));
        // The same cap again, or none, is fine.
        BudgetFile::charge(&path, Some(cap), &pure(1, 2), "same", None).unwrap();
        BudgetFile::charge(&path, None, &pure(1, 2), "none", None).unwrap();
        assert_eq!(BudgetFile::read(&path).unwrap().charges().len(), 3);
        assert!(Cap::new(eps(1, 1), 1.0).is_err());
        assert!(Cap::new(eps(1, 1), f64::NAN).is_err());
    }

    #[test]
    fn budget_charges_share_one_neighbour_relation() {
        let path = scratch("relation");
        let cap = Cap::new(eps(5, 1), 0.0).unwrap();
        BudgetFile::charge(
            &path,
            Some(cap),
            &pure(1, 1),
            "a",
            Some(Neighbours::Replace),
        )
        .unwrap();
        for other in [Some(Neighbours::AddRemove), None] {
            let e = BudgetFile::charge(&path, None, &pure(1, 1), "b", other).unwrap_err();
            assert!(matches!(e, BudgetFileError::RelationMismatch { .. }), "{e}");
        }
        BudgetFile::charge(&path, None, &pure(1, 1), "c", Some(Neighbours::Replace)).unwrap();
        let file = BudgetFile::read(&path).unwrap();
        assert_eq!(file.charges()[1].neighbours, Some(Neighbours::Replace));
    }

    #[test]
    fn budget_files_that_are_not_ours_are_refused_and_kept() {
        let path = scratch("hostile");
        let cap = Some(Cap::new(eps(5, 1), 0.0).unwrap());
        let cases: &[(&[u8], &str)] = &[
            (b"", "not"),
            (b"name,age\nann,30\n", "not"),
            (b"\xff\xfe\x00garbage", "not"),
            (br#"{"composition": "basic", "charges": []}"#, "not"),
            (br#"{"format": "privq-budget", "version": 99}"#, "version 99"),
            (br#"{"format": "privq-budget", "version": 1}"#, "corrupt"),
            (
                br#"{"format":"privq-budget","version":1,"cap":{"epsilon":{"num":1,"den":0},"delta":0.0},"charges":[]}"#,
                "corrupt",
            ),
            (
                br#"{"format":"privq-budget","version":1,"cap":{"epsilon":{"num":1,"den":1},"delta":2.0},"charges":[]}"#,
                "corrupt",
            ),
            (
                br#"{"format":"privq-budget","version":1,"cap":{"epsilon":{"num":1,"den":1},"delta":0.0},"charges":[{"label":"x","time":"t","neighbours":"sideways","cost":"c","epsilon":{"num":1,"den":2},"delta":0.0,"certified":true}]}"#,
                "corrupt",
            ),
            (
                br#"{"format":"privq-budget","version":1,"cap":{"epsilon":{"num":1,"den":1},"delta":0.0},"charges":[{"label":"x","time":"t","neighbours":null,"cost":"c","epsilon":{"num":18446744073709551615,"den":1},"delta":0.0,"certified":true},{"label":"x","time":"t","neighbours":null,"cost":"c","epsilon":{"num":18446744073709551615,"den":1},"delta":0.0,"certified":true}]}"#,
                "overflow",
            ),
            (
                br#"{"format":"privq-budget","version":1,"cap":{"epsilon":{"num":1,"den":1},"delta":0.0},"charges":[],"extra":1}"#,
                "corrupt",
            ),
        ];
        for (bytes, what) in cases {
            fs::write(&path, bytes).unwrap();
            let e = BudgetFile::charge(&path, cap, &pure(1, 1), "x", None).unwrap_err();
            let text = e.to_string();
            assert!(text.contains(what), "{what}: {text}");
            assert_eq!(&fs::read(&path).unwrap()[..], *bytes, "file kept");
            assert!(BudgetFile::read(&path).is_err());
        }
        // A directory (or a link) where the file belongs is left alone.
        fs::remove_file(&path).unwrap();
        fs::create_dir(&path).unwrap();
        assert!(matches!(
            BudgetFile::charge(&path, cap, &pure(1, 1), "x", None),
            Err(BudgetFileError::NotARegularFile(_))
        ));
        #[cfg(unix)]
        {
            let link = path.with_file_name("link.json");
            let target = path.with_file_name("target.json");
            fs::write(&target, b"keep").unwrap();
            std::os::unix::fs::symlink(&target, &link).unwrap();
            assert!(matches!(
                BudgetFile::charge(&link, cap, &pure(1, 1), "x", None),
                Err(BudgetFileError::NotARegularFile(_))
            ));
            assert_eq!(fs::read(&target).unwrap(), b"keep");
        }
    }

    #[test]
    fn budget_file_round_trips_and_is_versioned() {
        let path = scratch("roundtrip");
        let cap = Cap::new(eps(3, 1), 1e-5).unwrap();
        BudgetFile::charge(&path, Some(cap), &pure(1, 7), "privq noise", None).unwrap();
        let json: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        assert_eq!(json["format"], "privq-budget");
        assert_eq!(json["version"], 1);
        assert_eq!(json["cap"]["epsilon"]["num"], 3);
        assert_eq!(json["cap"]["delta"], 1e-5);
        let charge = &json["charges"][0];
        assert_eq!(charge["label"], "privq noise");
        assert_eq!(charge["cost"], "ε = 1/7");
        assert_eq!(charge["epsilon"]["den"], 7);
        assert!(charge["time"].as_str().unwrap().ends_with('Z'));
        let file = BudgetFile::read(&path).unwrap();
        assert_eq!(file.to_json(), json);
        assert_eq!(file.cap(), cap);
    }

    #[test]
    fn budget_zcdp_runs_are_charged_the_epsilon_their_accountant_reports() {
        // Built for (ε, δ) = (1, 1e-6): charged exactly that.
        let acct = Accountant::zcdp_for(eps(1, 1), 1e-6).unwrap();
        let run = RunCost::of(&acct).unwrap();
        assert_eq!(run.epsilon(), eps(1, 1));
        assert_eq!(run.delta(), 1e-6);
        assert!(matches!(run.cost(), Cost::Zcdp(_)));
        // From ρ: the conversion, never below it.
        let rho = Rho::new(1, 8).unwrap();
        let run = RunCost::zcdp(rho, 1e-6).unwrap();
        assert!(run.epsilon().to_f64() >= zcdp_epsilon(0.125, 1e-6).unwrap());
        let acct = Accountant::zcdp(rho, 1e-6).unwrap();
        assert!(
            RunCost::of(&acct).unwrap().epsilon().to_f64() >= zcdp_epsilon(0.125, 1e-6).unwrap()
        );
        // A ρ cost cannot be charged without its δ.
        assert!(RunCost::new(Cost::Zcdp(rho)).is_err());
        // A zCDP run needs δ room in the cap.
        let path = scratch("zcdp");
        let pure_cap = Cap::new(eps(5, 1), 0.0).unwrap();
        assert!(matches!(
            BudgetFile::charge(&path, Some(pure_cap), &run, "zcdp", None),
            Err(BudgetFileError::Exceeded(_))
        ));
        // Other accountants: their budget as a cost.
        let approx = Accountant::approximate(eps(1, 2), 1e-7).unwrap();
        let run = RunCost::of(&approx).unwrap();
        assert_eq!((run.epsilon(), run.delta()), (eps(1, 2), 1e-7));
        let mut unc = Accountant::pure(eps(1, 2));
        unc.allow_uncertified();
        assert!(matches!(unc.budget_cost(), Cost::Uncertified(_)));
        let path = scratch("uncertified");
        BudgetFile::charge_accountant(&path, Some(pure_cap), &unc, "knorm").unwrap();
        let file = BudgetFile::read(&path).unwrap();
        assert!(file.has_uncertified());
    }

    #[test]
    fn budget_concurrent_charges_never_exceed_the_cap() {
        let path = scratch("threads");
        let cap = Cap::new(eps(5, 1), 0.0).unwrap();
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let path = path.clone();
                std::thread::spawn(move || {
                    BudgetFile::charge(&path, Some(cap), &pure(1, 1), &format!("run {i}"), None)
                        .is_ok()
                })
            })
            .collect();
        let ok = handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|&ok| ok)
            .count();
        assert_eq!(ok, 5);
        assert_eq!(BudgetFile::read(&path).unwrap().charges().len(), 5);
    }

    #[test]
    fn budget_times_are_utc() {
        assert_eq!(utc_text(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_text(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_text(1_767_225_599), "2025-12-31T23:59:59Z");
    }
}

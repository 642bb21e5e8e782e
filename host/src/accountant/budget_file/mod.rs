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
//! A budget file must have exactly one name: one with a second hard link is
//! refused ([`BudgetFileError::HardLinked`]), since each name would have its own
//! lock file and the first charge (a rename) would split the two names into two
//! budgets. A symbolic link is refused as not a regular file. Refusing is simpler
//! than locking on the file's identity, which changes with every charge.
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

use super::{Accountant, Cost, delta_sum, zcdp_epsilon};
use crate::contract::Neighbours;

/// The version of the budget-file format this build writes and reads.
pub const BUDGET_FILE_VERSION: u64 = 1;

/// The `format` field that marks a privq budget file.
mod error;

pub use error::{BudgetExceeded, BudgetFileError};

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
        let converted = zcdp_epsilon(rho.to_f64(), delta).map_err(BudgetFileError::Conversion)?;
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
        let converted = zcdp_epsilon(rho.to_f64(), delta).map_err(BudgetFileError::Conversion)?;
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

    /// Opens the budget file at `path`, creating it (with no charges) when it
    /// does not exist: what a session does when it is set up, so that the cap is
    /// on disk before the first charge and every later session (another process,
    /// a restart) finds it. Under the file's exclusive lock, as a charge.
    ///
    /// `cap`: required when the file does not exist
    /// ([`BudgetFileError::NoCap`]); otherwise `None` (use the stored cap) or
    /// exactly the stored cap ([`BudgetFileError::CapMismatch`]). A budget file
    /// that existed and has gone missing is not started afresh
    /// ([`BudgetFileError::Missing`]).
    ///
    /// ```
    /// use privq_core::Epsilon;
    /// use privq_host::accountant::{BudgetFile, BudgetFileError, Cap};
    /// let dir = std::env::temp_dir().join(format!("privq-open-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("budget.json");
    /// let cap = Cap::new(Epsilon::new(1, 1).unwrap(), 0.0).unwrap();
    /// assert_eq!(BudgetFile::open(&path, Some(cap)).unwrap().cap(), cap);
    /// // A second session finds the cap without repeating it; another cap is refused.
    /// assert_eq!(BudgetFile::open(&path, None).unwrap().cap(), cap);
    /// let other = Cap::new(Epsilon::new(2, 1).unwrap(), 0.0).unwrap();
    /// assert!(matches!(
    ///     BudgetFile::open(&path, Some(other)),
    ///     Err(BudgetFileError::CapMismatch { .. })
    /// ));
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn open(path: &Path, cap: Option<Cap>) -> Result<BudgetFile, BudgetFileError> {
        let io_err = |source| BudgetFileError::Io {
            path: path.to_path_buf(),
            source,
        };
        if cap.is_none() && nothing_there(path) {
            return Err(BudgetFileError::NoCap(path.to_path_buf()));
        }
        let mut lock = open_lock(path)?;
        lock.lock().map_err(io_err)?;
        let existed = lock.metadata().map_err(io_err)?.len() > 0;
        let result = match (load(path), cap) {
            (Err(e), _) => Err(e),
            (Ok(None), _) if existed => Err(BudgetFileError::Missing(path.to_path_buf())),
            (Ok(Some(file)), Some(given)) if file.cap != given => {
                Err(BudgetFileError::CapMismatch {
                    path: path.to_path_buf(),
                    stored: file.cap,
                    given,
                })
            }
            (Ok(Some(file)), _) => Ok(file),
            (Ok(None), Some(cap)) => {
                let file = BudgetFile {
                    cap,
                    charges: Vec::new(),
                };
                store(path, &file.to_json_bytes()).map(|()| file)
            }
            (Ok(None), None) => Err(BudgetFileError::NoCap(path.to_path_buf())),
        };
        if result.is_ok() && !existed {
            use std::io::Write as _;
            lock.write_all(LOCK_MARK)
                .and_then(|()| lock.sync_all())
                .map_err(io_err)?;
        }
        let _ = lock.unlock();
        result
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
        if cap.is_none() && nothing_there(path) {
            return Err(BudgetFileError::NoCap(path.to_path_buf()));
        }
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
        let total_delta = delta_sum(before.spent_delta, run.delta);
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
            delta = delta_sum(delta, c.delta);
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
        Ok(m) if link_count(&m) > 1 => {
            return Err(BudgetFileError::HardLinked {
                path: path.to_path_buf(),
                links: link_count(&m),
            });
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

/// How many names (hard links) the file has (1 where the platform does not say).
fn link_count(m: &fs::Metadata) -> u64 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        m.nlink()
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        1
    }
}

/// Whether neither the budget file at `path` nor its lock file exists: with no
/// cap to create it, a caller is refused ([`BudgetFileError::NoCap`]) before a
/// lock file is created beside it (nothing is left behind by a refusal).
fn nothing_there(path: &Path) -> bool {
    let absent =
        |p: &Path| matches!(fs::symlink_metadata(p), Err(e) if e.kind() == io::ErrorKind::NotFound);
    absent(path) && sibling(path, |name| format!("{name}.lock")).is_ok_and(|l| absent(&l))
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
        .map_err(|source| {
            // A missing directory is named as such, not as the lock file in it.
            let dir = lock_path.parent().filter(|d| !d.as_os_str().is_empty());
            let path = match dir {
                Some(d) if source.kind() == std::io::ErrorKind::NotFound && !d.is_dir() => {
                    d.to_path_buf()
                }
                _ => lock_path,
            };
            BudgetFileError::Io { path, source }
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

/// The current time in UTC as `YYYY-MM-DDTHH:MM:SSZ`, as a budget file stamps
/// its charges (a front end stamps an in-memory session's charges with it too).
pub fn utc_now() -> String {
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
mod tests;

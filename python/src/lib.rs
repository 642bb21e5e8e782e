//! `privq._privq`: the extension module behind the Python package `privq`.
//!
//! A front end, like the `privq` program: it converts Python values into the
//! library's types, calls the library's entry points and converts what they return.
//! Every privacy decision is the library's: the accountant a release runs under
//! ([`SynthRequest::accountant`]), how a session accountant or a budget file is
//! charged ([`SynthRequest::charge_to`], [`BudgetFile::charge_accountant`]), how a
//! table's values map onto the domain ([`Records::from_dictionary_columns`]), the
//! dry run ([`SynthRequest::plan`]), the release itself ([`synthesize_controlled`]),
//! private statistics (`sql`: the options checked by the library's `SqlRequest`, as
//! `privq sql`) and the device reports' aggregation (`ldp`, as `privq ldp`). The pure-Python
//! layer (`privq/__init__.py`, `privq/ldp.py`) only moves DataFrames in and out
//! through Arrow.
//!
//! No Rust panic crosses into Python: every entry point runs under [`guard`], which
//! turns a panic into `privq.PrivqError`. The GIL is released while a release runs
//! (and while reports are simulated or aggregated); Ctrl-C stops a release after
//! its current round ([`synthesize_controlled`]'s control hook).

mod discover;
mod frame_column;
mod ldp;
mod mwem;
mod sql;

use std::ops::ControlFlow;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use privq_core::{Epsilon, Rho};
use privq_host::accountant::{Accountant, AccountantError, BudgetFile, BudgetFileError, Cap, Cost};
use privq_host::contract::Neighbours;
use privq_host::data::{
    AttributeKind, CsvColumns, DataError, DictionaryColumn, Domain, Records, domain_template,
};
use privq_host::synth::adaptive::{AdaptiveError, MarginalWorkload};
use privq_host::synth::release::{PlannedRows, SynthRequest, Synthetic, synthesize_controlled};
use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString};

pyo3::create_exception!(
    _privq,
    PrivqError,
    PyException,
    "Base class of privq's own errors (a refused release, a bad budget file, an internal error)."
);
pyo3::create_exception!(
    _privq,
    BudgetExceeded,
    PrivqError,
    "The privacy budget (an Accountant's or a budget file's) would be exceeded; nothing was charged or released."
);

/// Runs `f`, turning a Rust panic into `privq.PrivqError` (a panic is a bug in
/// privq; it must not abort the interpreter or surface as `PanicException`).
fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            Err(PrivqError::new_err(format!(
                "internal error (a bug in privq, please report it): {what}"
            )))
        }
    }
}

// ---- parameters ----

/// The text of a privacy parameter given as `str`, `int`, `float`,
/// `fractions.Fraction` or `decimal.Decimal`: a float as its shortest round-trip
/// decimal (`repr`), so `0.1` is exactly 1/10, as the text `0.1` is to the program.
fn parameter_text(name: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    if value.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{name} must be a number or a string such as \"1/2\", not a bool"
        )));
    }
    if value.is_instance_of::<PyString>() {
        return value.extract::<String>();
    }
    if value.is_instance_of::<PyFloat>() {
        let x: f64 = value.extract()?;
        if !x.is_finite() {
            return Err(PyValueError::new_err(format!(
                "{name} = {x} is not a finite number"
            )));
        }
        return float_text(value.py(), x);
    }
    if value.is_instance_of::<PyInt>() {
        return Ok(value.str()?.to_string());
    }
    if let (Ok(num), Ok(den)) = (value.getattr("numerator"), value.getattr("denominator")) {
        return Ok(format!("{}/{}", num.str()?, den.str()?));
    }
    let kind = value.get_type().name()?.to_string();
    if kind == "Decimal" {
        return Ok(value.str()?.to_string());
    }
    Err(PyTypeError::new_err(format!(
        "{name} must be an int, float, str, Fraction or Decimal, not {kind}"
    )))
}

/// The shortest round-trip decimal of `x`, as `float.__repr__` writes it: a
/// subclass's own `repr` (`np.float64(0.1)`) is not a number's text.
fn float_text(py: Python<'_>, x: f64) -> PyResult<String> {
    Ok(PyFloat::new(py, x).repr()?.to_string())
}

/// ε exactly, as the library parses its decimal or fraction text.
fn epsilon_arg(value: &Bound<'_, PyAny>) -> PyResult<Epsilon> {
    let text = parameter_text("epsilon", value)?;
    text.parse::<Epsilon>()
        .map_err(|e| PyValueError::new_err(format!("epsilon = {text}: {e}")))
}

/// ρ exactly, as the library parses its decimal or fraction text.
fn rho_arg(value: &Bound<'_, PyAny>) -> PyResult<Rho> {
    let text = parameter_text("rho", value)?;
    text.parse::<Rho>()
        .map_err(|e| PyValueError::new_err(format!("rho = {text}: {e}")))
}

fn neighbours_arg(name: &str) -> PyResult<Neighbours> {
    match name {
        "add-remove" | "add_remove" => Ok(Neighbours::AddRemove),
        "replace" => Ok(Neighbours::Replace),
        other => Err(PyValueError::new_err(format!(
            "neighbours = {other:?}: expected \"add-remove\" (n private) or \"replace\" (n public)"
        ))),
    }
}

/// A relation as the budget file names it.
pub(crate) fn neighbours_name(n: Neighbours) -> &'static str {
    match n {
        Neighbours::AddRemove => "add-remove",
        Neighbours::Replace => "replace",
    }
}

/// An exact fraction as `(numerator, denominator)`.
fn fraction(num: u64, den: u64) -> (u64, u64) {
    (num, den)
}

// ---- errors ----

/// A library error as the Python exception a user can act on: a refused charge is
/// `BudgetExceeded`, bad data or parameters `ValueError`, the rest `PrivqError`.
fn adaptive_error(e: AdaptiveError) -> PyErr {
    match e {
        AdaptiveError::Data(d) => data_error(d),
        AdaptiveError::Budget(a) => accountant_error(a),
        AdaptiveError::InvalidParameter(m) => {
            PyValueError::new_err(format!("invalid parameter: {m}"))
        }
        AdaptiveError::RunCost(e) => budget_file_error(e),
        e => PrivqError::new_err(e.to_string()),
    }
}

fn accountant_error(e: AccountantError) -> PyErr {
    match e {
        AccountantError::BudgetExceeded { .. }
        | AccountantError::RhoBudgetExceeded { .. }
        | AccountantError::DeltaExceeded => {
            BudgetExceeded::new_err(format!("{e}; nothing was charged or released"))
        }
        AccountantError::InvalidParameter(_) => PyValueError::new_err(e.to_string()),
        AccountantError::RelationMismatch { .. } | AccountantError::UnboundCharges { .. } => {
            PrivqError::new_err(format!(
                "{e}. Costs under different neighbour relations do not add up: use a separate \
                 Accountant for each relation, or state the releases under one (MWEM is \
                 replace-one: give the adaptive release neighbours=\"replace\" to share its \
                 accountant)"
            ))
        }
        e => PrivqError::new_err(e.to_string()),
    }
}

/// A δ in a message: `0` for none, else in exponent form (`1e-6`).
pub(crate) fn delta_text(x: f64) -> String {
    if x == 0.0 {
        "0".to_string()
    } else {
        format!("{x:e}")
    }
}

/// An in-memory accountant's δ refusal with the amounts, as a budget file's
/// refusal gives them: the δ the release needs, the accountant's δ, and what is
/// left of it.
fn delta_refused(needed: f64, session: &Accountant) -> PyErr {
    delta_refused_hint(needed, session, "")
}

/// [`delta_refused`] with a caller's `hint` after the amounts.
pub(crate) fn delta_refused_hint(needed: f64, session: &Accountant, hint: &str) -> PyErr {
    let budget = session.budget_delta();
    let spent = session.spent_delta();
    BudgetExceeded::new_err(format!(
        "the delta budget would be exceeded: this release needs δ = {}, and the \
         Accountant has δ = {} of which {} is spent ({} remaining){}{hint}; \
         nothing was charged or released",
        delta_text(needed),
        delta_text(budget),
        delta_text(spent),
        delta_text((budget - spent).max(0.0)),
        if budget == 0.0 {
            " (an Accountant with delta=0 takes pure ε-DP releases only: give it a δ, or use \
             Accountant.zcdp)"
        } else {
            ""
        }
    ))
}

fn budget_file_error(e: BudgetFileError) -> PyErr {
    match e {
        BudgetFileError::Exceeded(_) => {
            BudgetExceeded::new_err(format!("{e}; nothing was released"))
        }
        BudgetFileError::InvalidDelta(_) | BudgetFileError::CapMismatch { .. } => {
            PyValueError::new_err(e.to_string())
        }
        // Every charge of an Accountant's budget file gives no cap (the file was
        // created with the Accountant): a file gone with its lock is refused,
        // never started afresh.
        BudgetFileError::NoCap(path) => PrivqError::new_err(format!(
            "budget file {} no longer exists (nor its lock file): it was created with this \
             Accountant, and starting it afresh would forget the budget already spent; \
             restore it, or make a new Accountant to start a new budget on purpose",
            path.display()
        )),
        e => PrivqError::new_err(e.to_string()),
    }
}

/// Row `r` (from 0) of a table is line `r + 2` of the CSV the library counts in.
fn row(line: usize) -> usize {
    line.saturating_sub(2)
}

/// Whether `value` is a whole number written as a float (`"30.0"`, `"-2.0"`): the
/// text of a float column's whole-number value.
fn whole_float(value: &str) -> bool {
    value
        .strip_suffix(".0")
        .map(|w| w.strip_prefix('-').unwrap_or(w))
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// A data error in a table's words (columns and rows, not CSV lines and flags).
fn data_error(e: DataError) -> PyErr {
    if let DataError::OutOfMemory { .. } = e {
        return pyo3::exceptions::PyMemoryError::new_err(format!(
            "{e} (memory_mib); nothing was charged"
        ));
    }
    let message = match &e {
        DataError::MissingValue { attribute, line } => format!(
            "column {attribute:?}, row {}: missing value (None/null); privq has no missing \
             values (drop or impute such rows, or give the attribute a value such as \"missing\")",
            row(*line)
        ),
        DataError::UnknownValue {
            attribute,
            value,
            line,
        } if value.trim().is_empty() => format!(
            "column {attribute:?}, row {}: missing value (null or empty); privq has no missing \
             values (drop or impute such rows, or give the attribute a value such as \"missing\")",
            row(*line)
        ),
        DataError::UnknownValue {
            attribute,
            value,
            line,
        } if whole_float(value) => format!(
            "column {attribute:?}, row {}: the value {value:?} is not in the domain; the column \
             holds whole numbers as floats (float64), which are read as {value:?}, not {:?}: \
             cast it with df[{attribute:?}].astype(\"int64\") (in Polars \
             pl.col({attribute:?}).cast(pl.Int64))",
            row(*line),
            value.trim_end_matches(".0"),
        ),
        DataError::UnknownValue {
            attribute,
            value,
            line,
        } => format!(
            "column {attribute:?}, row {}: the value {value:?} is not in the domain",
            row(*line)
        ),
        DataError::NotFinite {
            attribute,
            value,
            line,
        } => format!(
            "column {attribute:?}, row {}: {value} is not a finite number",
            row(*line)
        ),
        DataError::NotANumber {
            attribute,
            value,
            line,
        } => format!(
            "column {attribute:?}, row {}: the attribute is numeric (binned on its edges), and \
             {value:?} is not a number",
            row(*line)
        ),
        DataError::UncoveredColumns { columns } => format!(
            "the column(s) {} are not attributes of the domain: add them to the domain, or \
             leave them out of the DataFrame (nothing is dropped silently)",
            columns
                .iter()
                .map(|c| format!("{c:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        DataError::MissingColumn { column, available } => format!(
            "the DataFrame has no column {column:?}, an attribute of the domain (its columns: {})",
            available.join(", ")
        ),
        _ => e.to_string(),
    };
    PyValueError::new_err(message)
}

// ---- the domain ----

/// A public domain: the attributes, and every value each can take (`privq.Domain`
/// wraps it).
#[pyclass(module = "privq._privq", name = "Domain", frozen)]
struct PyDomain {
    domain: Domain,
}

#[pymethods]
impl PyDomain {
    /// Parses the library's JSON domain spec (`{"attributes": [...]}` or
    /// `{"name": size, ...}`).
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Self> {
        guard(|| {
            Domain::from_json(text)
                .map(|domain| PyDomain { domain })
                .map_err(|e| PyValueError::new_err(e.to_string()))
        })
    }

    /// The spec as JSON, one attribute per line.
    fn to_json(&self) -> String {
        self.domain.to_json()
    }

    /// The attribute names, in the domain's order.
    fn names(&self) -> Vec<String> {
        self.domain
            .attributes()
            .iter()
            .map(|a| a.name().to_string())
            .collect()
    }

    /// How many values (categories or bins) each attribute has.
    fn sizes(&self) -> Vec<usize> {
        self.domain.attributes().iter().map(|a| a.size()).collect()
    }

    /// Per attribute: `"categorical"` or `"binned"`.
    fn kinds(&self) -> Vec<&'static str> {
        self.domain
            .attributes()
            .iter()
            .map(|a| match a.kind() {
                AttributeKind::Categorical(_) => "categorical",
                AttributeKind::Binned(_) => "binned",
            })
            .collect()
    }

    /// The values released for attribute `i`: its categories, or its bins'
    /// midpoints (exact decimals), in value-index order.
    fn values(&self, i: usize) -> PyResult<Vec<String>> {
        let attr = self
            .domain
            .attribute(i)
            .ok_or_else(|| PyValueError::new_err(format!("no attribute number {i}")))?;
        Ok((0..attr.size())
            .filter_map(|v| attr.value_text(v))
            .collect())
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyDomain>()
            .is_ok_and(|o| o.get().domain == self.domain)
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.domain.to_json().hash(&mut h);
        h.finish()
    }
}

/// A template of a domain spec for the columns `names` (bin-edge placeholders for
/// those in `numeric`): names only, never values.
#[pyfunction]
fn _domain_template(names: Vec<String>, numeric: Vec<String>) -> String {
    domain_template(&names, &numeric)
}

// ---- the accountant ----

/// Where an accountant's state lives.
enum Kind {
    /// In this process: the library's accountant, behind a lock taken with the GIL
    /// released while waiting ([`MutexExt::lock_py_attached`]).
    Memory(Mutex<Accountant>),
    /// In a budget file, charged under its lock by every run ([`BudgetFile`]). Its
    /// path and cap never change: no lock here, so a run waiting (without the GIL)
    /// for the file's lock holds nothing another thread needs.
    File { path: PathBuf, cap: Cap },
}

/// An accountant's state while one method uses it.
enum State<'a> {
    Memory(&'a mut Accountant),
    File { path: &'a PathBuf, cap: &'a Cap },
}

/// A privacy budget shared by several releases (`privq.Accountant` wraps it).
#[pyclass(module = "privq._privq", name = "Accountant", frozen)]
struct PyAccountant {
    state: Kind,
    /// Kept in this process's memory (not in a budget file).
    in_memory: bool,
    /// The process that made it: an in-memory budget lives in one process only.
    pid: u32,
    /// Set in a forked child (`os.register_at_fork`, from the `privq` package).
    forked: AtomicBool,
    /// When each charge of an in-memory accountant was made (UTC, as a budget
    /// file's `time`); locked only while the accountant's lock is held.
    times: Mutex<Vec<String>>,
}

/// Why an in-memory accountant refuses to charge in a forked child.
const FORKED: &str = "this in-memory privq.Accountant was copied into a new process by a fork \
     (os.fork or multiprocessing): an in-memory accountant does not survive a fork, since each \
     copy could spend the whole budget; it refuses every charge here. Use \
     privq.Accountant(..., budget_file=PATH) to share a budget across processes";

impl PyAccountant {
    fn new_in_this_process(state: Kind) -> Self {
        PyAccountant {
            in_memory: matches!(state, Kind::Memory(_)),
            state,
            pid: std::process::id(),
            forked: AtomicBool::new(false),
            times: Mutex::new(Vec::new()),
        }
    }

    /// Whether this is a copy of an in-memory accountant in a forked child.
    /// Read before the state's lock: another thread may have held it at the fork.
    fn is_forked_copy(&self) -> bool {
        self.in_memory && (self.forked.load(Ordering::SeqCst) || self.pid != std::process::id())
    }

    /// Runs `f` on the state: an in-memory accountant's lock is awaited without the
    /// GIL (a thread holding it may need the GIL to finish); a budget file's state
    /// is immutable and takes no lock. `f` must not release the GIL while it holds
    /// an in-memory accountant's lock (it only charges or reads it).
    fn with<T>(&self, py: Python<'_>, f: impl FnOnce(State<'_>) -> PyResult<T>) -> PyResult<T> {
        match &self.state {
            Kind::Memory(m) => {
                let mut a = m
                    .lock_py_attached(py)
                    .map_err(|_| PrivqError::new_err("the accountant's lock is poisoned"))?;
                let before = a.ledger().len();
                let result = f(State::Memory(&mut a));
                // Each new charge's time, as a budget file stamps its charges
                // (taken after the accountant's lock, never before it).
                let after = a.ledger().len();
                if after > before {
                    let now = privq_host::accountant::utc_now();
                    let mut times = self
                        .times
                        .lock()
                        .map_err(|_| PrivqError::new_err("the accountant's lock is poisoned"))?;
                    times.resize(after, now);
                }
                result
            }
            Kind::File { path, cap } => f(State::File { path, cap }),
        }
    }
}

/// A δ in `[0, 1)` (`(0, 1)` when `positive`).
fn delta_arg(delta: f64, positive: bool) -> PyResult<f64> {
    let ok = if positive {
        delta > 0.0 && delta < 1.0
    } else {
        (0.0..1.0).contains(&delta)
    };
    if ok {
        Ok(delta)
    } else {
        Err(PyValueError::new_err(format!(
            "delta = {delta} is not in {}",
            if positive { "(0, 1)" } else { "[0, 1)" }
        )))
    }
}

#[pymethods]
impl PyAccountant {
    /// An (ε, δ) budget under basic composition (pure ε-DP when δ = 0); with
    /// `budget_file`, kept in that file (created here with the cap given; an
    /// existing file keeps its cap, and `epsilon` may then be omitted).
    #[new]
    #[pyo3(signature = (epsilon=None, delta=None, budget_file=None))]
    fn new(
        epsilon: Option<&Bound<'_, PyAny>>,
        delta: Option<f64>,
        budget_file: Option<PathBuf>,
    ) -> PyResult<Self> {
        guard(|| {
            // `None`: not given (0 for a new budget; the stored δ for a budget
            // file that exists, which a δ given must equal, as a cap given must).
            let delta_given = delta.map(|d| delta_arg(d, false)).transpose()?;
            let delta = delta_given.unwrap_or(0.0);
            let epsilon = epsilon.map(epsilon_arg).transpose()?;
            let state = match (budget_file, epsilon) {
                (None, None) => {
                    return Err(PyValueError::new_err(
                        "an Accountant needs epsilon (or a budget_file that exists)",
                    ));
                }
                (None, Some(e)) => Kind::Memory(Mutex::new(
                    Accountant::approximate(e, delta).map_err(accountant_error)?,
                )),
                (Some(path), given) => {
                    // The path is made absolute once, here: a later change of the
                    // working directory must not charge another file.
                    let path = std::path::absolute(&path).map_err(|e| {
                        PyValueError::new_err(format!(
                            "budget file {}: cannot make the path absolute: {e}",
                            path.display()
                        ))
                    })?;
                    let epsilon_given = given.is_some();
                    // The file is opened, or created with the cap given, now: a
                    // later session (another process, a restart) finds the cap.
                    let given = given
                        .map(|e| Cap::new(e, delta))
                        .transpose()
                        .map_err(budget_file_error)?;
                    let cap = BudgetFile::open(&path, given)
                        .map_err(|e| match e {
                            BudgetFileError::NoCap(_) => PyValueError::new_err(format!(
                                "budget file {} does not exist: give epsilon (and delta) to \
                                 create it with that cap",
                                path.display()
                            )),
                            BudgetFileError::CapMismatch { stored, given, .. } => {
                                PyValueError::new_err(format!(
                                    "budget file {} has the cap {stored}, not {given}: a cap \
                                     is fixed when its file is created (omit epsilon to use \
                                     it)",
                                    path.display()
                                ))
                            }
                            e => budget_file_error(e),
                        })?
                        .cap();
                    if let Some(d) = delta_given
                        && !epsilon_given
                        && d != cap.delta()
                    {
                        return Err(PyValueError::new_err(format!(
                            "budget file {} has the cap {cap}, whose delta is not {d}: a cap is \
                             fixed when its file is created (omit delta to use it)",
                            path.display()
                        )));
                    }
                    Kind::File { path, cap }
                }
            };
            Ok(PyAccountant::new_in_this_process(state))
        })
    }

    /// A ρ-zCDP budget, reported as (ε, δ) at `delta`.
    #[staticmethod]
    fn zcdp(rho: &Bound<'_, PyAny>, delta: f64) -> PyResult<Self> {
        guard(|| {
            let rho = rho_arg(rho)?;
            let delta = delta_arg(delta, true)?;
            let accountant = Accountant::zcdp(rho, delta).map_err(accountant_error)?;
            Ok(PyAccountant::new_in_this_process(Kind::Memory(Mutex::new(
                accountant,
            ))))
        })
    }

    /// Called in a forked child for every accountant (`os.register_at_fork`):
    /// an in-memory one refuses every charge from then on; a budget file's is
    /// unchanged (the file is charged under its lock by every process).
    fn _after_fork_in_child(&self) {
        self.forked.store(true, Ordering::SeqCst);
    }

    /// `{"kind", "epsilon", "delta", "rho", "budget_file"}`: the budget.
    fn budget<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            self.with(py, |state| {
                let d = PyDict::new(py);
                match state {
                    State::Memory(a) => {
                        let e = a.budget();
                        d.set_item("kind", if a.is_zcdp() { "zcdp" } else { "basic" })?;
                        d.set_item("epsilon", fraction(e.num(), e.den()))?;
                        d.set_item("delta", a.budget_delta())?;
                        d.set_item("rho", a.rho_budget().map(|r| fraction(r.num(), r.den())))?;
                        d.set_item("budget_file", py.None())?;
                    }
                    State::File { path, cap } => {
                        let e = cap.epsilon();
                        d.set_item("kind", "basic")?;
                        d.set_item("epsilon", fraction(e.num(), e.den()))?;
                        d.set_item("delta", cap.delta())?;
                        d.set_item("rho", py.None())?;
                        d.set_item("budget_file", path.clone())?;
                    }
                }
                Ok(d)
            })
        })
    }

    /// `{"epsilon", "epsilon_f64", "delta", "rho"}` spent: exact ε for a basic
    /// accountant (`None` before the first charge); for a zCDP one the exact ρ and
    /// its (ε, δ) conversion.
    fn spent<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            self.with(py, |state| {
                let d = PyDict::new(py);
                match state {
                    State::Memory(a) => {
                        let e = a.spent_epsilon();
                        d.set_item("epsilon", e.map(|e| fraction(e.num(), e.den())))?;
                        let loss = a.spent_guarantee().map_err(accountant_error)?;
                        d.set_item("epsilon_f64", loss.epsilon)?;
                        d.set_item(
                            "delta",
                            if a.is_zcdp() {
                                a.budget_delta()
                            } else {
                                a.spent_delta()
                            },
                        )?;
                        d.set_item("rho", a.spent_rho().map(|r| fraction(r.num(), r.den())))?;
                    }
                    State::File { path, .. } => {
                        let (e, delta) = if path.exists() {
                            let status = BudgetFile::read(path)
                                .and_then(|f| f.status())
                                .map_err(budget_file_error)?;
                            (status.spent_epsilon, status.spent_delta)
                        } else {
                            (None, 0.0)
                        };
                        d.set_item("epsilon", e.map(|e| fraction(e.num(), e.den())))?;
                        d.set_item("epsilon_f64", e.map_or(0.0, |e| e.to_f64()))?;
                        d.set_item("delta", delta)?;
                        d.set_item("rho", py.None())?;
                    }
                }
                Ok(d)
            })
        })
    }

    /// `{"epsilon", "delta", "rho"}` remaining: exact ε (`None`: none left) and δ
    /// of a basic accountant or budget file; the exact ρ of a zCDP one.
    fn remaining<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            self.with(py, |state| {
                let d = PyDict::new(py);
                match state {
                    State::Memory(a) if a.is_zcdp() => {
                        d.set_item("epsilon", py.None())?;
                        d.set_item("delta", a.budget_delta())?;
                        d.set_item("rho", a.remaining_rho().map(|r| fraction(r.num(), r.den())))?;
                    }
                    State::Memory(a) => {
                        let e = a.remaining();
                        d.set_item("epsilon", e.map(|e| fraction(e.num(), e.den())))?;
                        d.set_item("delta", (a.budget_delta() - a.spent_delta()).max(0.0))?;
                        d.set_item("rho", py.None())?;
                    }
                    State::File { path, cap } => {
                        let (e, delta) = if path.exists() {
                            let status = BudgetFile::read(path)
                                .and_then(|f| f.status())
                                .map_err(budget_file_error)?;
                            (status.remaining_epsilon(), status.remaining_delta())
                        } else {
                            (Some(cap.epsilon()), cap.delta())
                        };
                        d.set_item("epsilon", e.map(|e| fraction(e.num(), e.den())))?;
                        d.set_item("delta", delta)?;
                        d.set_item("rho", py.None())?;
                    }
                }
                Ok(d)
            })
        })
    }

    /// Every accepted charge, in order: dicts with `label`, `cost` (exact text),
    /// `epsilon` and `rho` (exact fraction text or `None`), `delta`, `neighbours`,
    /// `privacy_unit` (the unit column, `None` for one record), `time` (budget files
    /// only).
    fn ledger<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        guard(|| {
            self.with(py, |state| {
                let out = PyList::empty(py);
                match state {
                    State::Memory(a) => {
                        let times = self.times.lock().map_err(|_| {
                            PrivqError::new_err("the accountant's lock is poisoned")
                        })?;
                        ledger_rows(&out, a, &times)?;
                    }
                    State::File { path, .. } => {
                        if path.exists() {
                            let file = BudgetFile::read(path).map_err(budget_file_error)?;
                            for c in file.charges() {
                                let d = PyDict::new(py);
                                d.set_item("label", &c.label)?;
                                d.set_item("cost", &c.cost)?;
                                d.set_item("epsilon", c.epsilon.to_string())?;
                                d.set_item("delta", c.delta)?;
                                d.set_item("rho", py.None())?;
                                d.set_item("neighbours", c.neighbours.map(neighbours_name))?;
                                d.set_item("privacy_unit", c.unit.as_deref())?;
                                d.set_item("time", &c.time)?;
                                out.append(d)?;
                            }
                        }
                    }
                }
                Ok(out)
            })
        })
    }
}

/// An in-memory accountant's charges as dicts (the columns of
/// `Accountant.ledger()`), `times[i]` the time of charge `i` where known.
fn ledger_rows(out: &Bound<'_, PyList>, a: &Accountant, times: &[String]) -> PyResult<()> {
    let py = out.py();
    let neighbours = a.neighbours().map(neighbours_name);
    let unit = a.privacy_unit().flatten();
    for (i, c) in a.ledger().iter().enumerate() {
        let d = PyDict::new(py);
        d.set_item("label", &c.label)?;
        d.set_item("cost", c.cost.to_string())?;
        d.set_item("epsilon", c.cost.epsilon().map(|e| e.to_string()))?;
        d.set_item("delta", c.cost.delta())?;
        let rho = match c.cost {
            Cost::Zcdp(r) => Some(r.to_string()),
            _ => None,
        };
        d.set_item("rho", rho)?;
        d.set_item("neighbours", neighbours)?;
        d.set_item("privacy_unit", unit)?;
        d.set_item("time", times.get(i))?;
        out.append(d)?;
    }
    Ok(())
}

// ---- synthetic data ----

/// The text of one dictionary value, as the program would read it from CSV:
/// `str` as it is, `int` in decimal, `float` as its shortest round-trip decimal
/// (`repr`), `bool` as `1`/`0`, `None` as missing; other scalars by `str()`.
fn value_text(column: &str, value: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    if value.is_none() {
        return Ok(None);
    }
    if value.is_instance_of::<PyBool>() {
        let b: bool = value.extract()?;
        return Ok(Some(if b { "1" } else { "0" }.into()));
    }
    if value.is_instance_of::<PyString>() {
        return Ok(Some(value.extract::<String>()?));
    }
    if value.is_instance_of::<PyFloat>() {
        let x: f64 = value.extract()?;
        return Ok(Some(float_text(value.py(), x)?));
    }
    if value.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(format!(
            "column {column:?} holds bytes; decode it to str first"
        )));
    }
    Ok(Some(value.str()?.to_string()))
}

/// The per-row codes of one column: native-endian `int32`, as Arrow holds a
/// dictionary array's indices.
fn codes(column: &str, bytes: &[u8]) -> PyResult<Vec<u32>> {
    if !bytes.len().is_multiple_of(4) {
        return Err(PyValueError::new_err(format!(
            "column {column:?}: {} bytes of codes are not whole int32 values",
            bytes.len()
        )));
    }
    bytes
        .chunks_exact(4)
        .map(|b| {
            let code = i32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
            u32::try_from(code).map_err(|_| {
                PyValueError::new_err(format!("column {column:?}: negative code {code}"))
            })
        })
        .collect()
}

/// `marginals:K` (K ≥ 1); `None` is `marginals:3`, clamped to the attributes.
fn workload_arg(spec: Option<&str>, domain: &Domain) -> PyResult<MarginalWorkload> {
    let k = match spec {
        None => 3.min(domain.dims()),
        Some(spec) => {
            let k = spec
                .strip_prefix("marginals:")
                .and_then(|k| k.trim().parse::<usize>().ok())
                .filter(|&k| k >= 1)
                .ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "workload = {spec:?}: the adaptive mechanism answers marginal \
                         workloads, \"marginals:K\" with K ≥ 1"
                    ))
                })?;
            if k > domain.dims() {
                return Err(PyValueError::new_err(format!(
                    "workload = {spec:?}, but the domain has {} attributes: use marginals:K \
                     with K ≤ {}",
                    domain.dims(),
                    domain.dims()
                )));
            }
            k
        }
    };
    MarginalWorkload::all_k_way(domain, k).map_err(adaptive_error)
}

/// The memory the synthetic rows may take (`privq synth`'s default `--memory-mib`).
const MEMORY_CAP: u64 = 1 << 30;

/// One released column: its name, the text of each value index, and the rows'
/// value indices as native-endian `int32` bytes.
type ColumnOut<'py> = (String, Vec<String>, Bound<'py, PyBytes>);

/// A validated request, its workload and the table's records: everything
/// [`SynthRequest::plan`] and a release need, checked before anything is charged.
struct Prepared {
    request: SynthRequest,
    workload: MarginalWorkload,
    records: Records,
    neighbours: Neighbours,
}

/// Parameters first (nothing is read for a bad one), then the table's records.
#[allow(clippy::too_many_arguments)]
fn prepare<'py>(
    py: Python<'py>,
    columns: Vec<(String, Bound<'py, PyList>, Bound<'py, PyBytes>)>,
    domain: &Domain,
    epsilon: &Bound<'py, PyAny>,
    delta: f64,
    workload: Option<&str>,
    neighbours: &str,
    rows: Option<usize>,
    time_budget: Option<f64>,
) -> PyResult<Prepared> {
    let epsilon = epsilon_arg(epsilon)?;
    let neighbours = neighbours_arg(neighbours)?;
    let request = SynthRequest::new(epsilon, delta, neighbours)
        .map_err(adaptive_error)?
        .rows(rows)
        .time_budget(time_budget)
        .map_err(adaptive_error)?;
    let workload = workload_arg(workload, domain)?;
    // Each synthetic row is a vector of value indices (24 + 8·d bytes), as
    // `privq synth` counts under its default --memory-mib.
    if let Some(rows) = rows {
        let bytes = (rows as u64).saturating_mul(24 + 8 * domain.dims() as u64);
        if bytes > MEMORY_CAP {
            return Err(PyValueError::new_err(format!(
                "rows = {rows}: the synthetic rows would need about {} MiB, over the {} MiB \
                 cap; release fewer rows",
                bytes >> 20,
                MEMORY_CAP >> 20
            )));
        }
    }
    let records = records_of(py, columns, domain)?;
    Ok(Prepared {
        request,
        workload,
        records,
        neighbours,
    })
}

/// A table in dictionary form read over `domain` by the library's rule
/// ([`Records::from_dictionary_columns`], `privq synth`'s CSV reader's).
fn records_of<'py>(
    py: Python<'py>,
    columns: Vec<TableColumn<'py>>,
    domain: &Domain,
) -> PyResult<Records> {
    let mut table = Vec::with_capacity(columns.len());
    for (name, values, bytes) in &columns {
        let texts = values
            .iter()
            .map(|v| value_text(name, &v))
            .collect::<PyResult<Vec<_>>>()?;
        let codes = codes(name, bytes.as_bytes())?;
        table.push(DictionaryColumn::new(name.clone(), texts, codes));
    }
    drop(columns);
    py.detach(|| Records::from_dictionary_columns(table, domain, &CsvColumns::new()))
        .map_err(data_error)
}

/// One column of a table in dictionary form: its name, its distinct values, and
/// one `int32` code per row.
type TableColumn<'py> = (String, Bound<'py, PyList>, Bound<'py, PyBytes>);

/// An exact fraction of ρ, or `None` for a cost that is not a zCDP one.
fn rho_pair(cost: &Cost) -> Option<(u64, u64)> {
    match cost {
        Cost::Zcdp(r) => Some(fraction(r.num(), r.den())),
        _ => None,
    }
}

/// `privq.plan_synthesis`'s Rust half: the library's dry run
/// ([`SynthRequest::plan`]) on the same inputs as `_synthesize`; nothing is
/// charged and nothing is sampled. With an in-memory `accountant`, whether the
/// release's charge would be accepted now (on a copy of it).
#[pyfunction]
#[pyo3(signature = (columns, domain, epsilon, delta, workload, neighbours, rows, accountant, time_budget=None))]
#[allow(clippy::too_many_arguments)]
fn _plan_synthesis<'py>(
    py: Python<'py>,
    columns: Vec<(String, Bound<'py, PyList>, Bound<'py, PyBytes>)>,
    domain: &Bound<'py, PyDomain>,
    epsilon: &Bound<'py, PyAny>,
    delta: f64,
    workload: Option<&str>,
    neighbours: &str,
    rows: Option<usize>,
    accountant: Option<&Bound<'py, PyAccountant>>,
    time_budget: Option<f64>,
) -> PyResult<Bound<'py, PyDict>> {
    guard(|| {
        let domain = &domain.get().domain;
        let p = prepare(
            py,
            columns,
            domain,
            epsilon,
            delta,
            workload,
            neighbours,
            rows,
            time_budget,
        )?;
        let plan = p
            .request
            .plan(&p.records, domain, &p.workload)
            .map_err(adaptive_error)?;
        let info = PyDict::new(py);
        let run = plan.cost;
        info.set_item(
            "epsilon",
            fraction(run.epsilon().num(), run.epsilon().den()),
        )?;
        info.set_item("delta", run.delta())?;
        info.set_item("rho", rho_pair(&run.cost()))?;
        info.set_item("neighbours", neighbours_name(plan.neighbours))?;
        info.set_item("rounds", plan.rounds)?;
        info.set_item("one_way_rounds", plan.one_way_rounds)?;
        info.set_item(
            "one_way_rhos",
            plan.one_way_rhos.as_ref().map(|rhos| {
                rhos.iter()
                    .map(|r| fraction(r.num(), r.den()))
                    .collect::<Vec<_>>()
            }),
        )?;
        info.set_item(
            "binning_rho",
            plan.binning_rho.map(|r| fraction(r.num(), r.den())),
        )?;
        info.set_item("max_rounds", plan.max_rounds)?;
        info.set_item(
            "measure_rho",
            fraction(plan.measure_rho.num(), plan.measure_rho.den()),
        )?;
        info.set_item(
            "select_epsilon",
            fraction(plan.select_epsilon.num(), plan.select_epsilon.den()),
        )?;
        info.set_item("candidates", plan.candidates)?;
        info.set_item(
            "rows",
            match plan.rows {
                PlannedRows::Exactly(n) => Some(n),
                PlannedRows::Hidden => None,
            },
        )?;
        // What a session would be charged, and whether it would accept it now.
        let (charge, accepted) = match accountant {
            None => (None, None),
            Some(accountant) => {
                let accountant = accountant.get();
                if accountant.is_forked_copy() {
                    return Err(PrivqError::new_err(FORKED));
                }
                accountant.with(py, |state| {
                    Ok(match state {
                        State::Memory(session) => {
                            let mut copy = session.clone();
                            let ok = p.request.charge_to(&mut copy, "plan").is_ok();
                            (Some(plan.session_cost(session).to_string()), Some(ok))
                        }
                        // A budget file is shared by processes: only a charge under
                        // its lock can tell.
                        State::File { .. } => (None, None),
                    })
                })?
            }
        };
        info.set_item("charge", charge)?;
        info.set_item("accepted", accepted)?;
        Ok(info)
    })
}

/// The generator for one use of a user's `seed` (none: the operating system's
/// entropy). A release's first fit (`fit == 0`) uses the seed as `privq synth
/// --seed` does, so the two agree; every later fit and every sample draws from a
/// stream derived from (seed, purpose, index) ([`privq_host::derived_rng`]), so no
/// two uses of one seed share noise.
pub(crate) fn rng_for(
    seed: Option<u64>,
    purpose: &str,
    index: u64,
) -> PyResult<impl privq_core::rand_core::CryptoRng> {
    match seed {
        Some(seed) if purpose == "fit" && index == 0 => Ok(privq_host::seeded_rng(seed)),
        Some(seed) => Ok(privq_host::derived_rng(seed, purpose, index)),
        None => privq_host::secure_rng().map_err(|e| PrivqError::new_err(e.to_string())),
    }
}

/// `privq.synthesize`'s Rust half: the table in dictionary form, the domain, the
/// request and the accountant; returns the synthetic table, column by column in the
/// domain's order, and a dict of what was spent.
#[pyfunction]
#[pyo3(signature = (columns, domain, epsilon, delta, workload, neighbours, rows, accountant, seed, fit=0, time_budget=None))]
#[allow(clippy::too_many_arguments)]
fn _synthesize<'py>(
    py: Python<'py>,
    columns: Vec<(String, Bound<'py, PyList>, Bound<'py, PyBytes>)>,
    domain: &Bound<'py, PyDomain>,
    epsilon: &Bound<'py, PyAny>,
    delta: f64,
    workload: Option<&str>,
    neighbours: &str,
    rows: Option<usize>,
    accountant: Option<&Bound<'py, PyAccountant>>,
    seed: Option<u64>,
    fit: u64,
    time_budget: Option<f64>,
) -> PyResult<(Vec<ColumnOut<'py>>, Bound<'py, PyDict>, PySynthesis)> {
    guard(|| {
        let domain = &domain.get().domain;
        let Prepared {
            request,
            workload,
            records,
            neighbours,
        } = prepare(
            py,
            columns,
            domain,
            epsilon,
            delta,
            workload,
            neighbours,
            rows,
            time_budget,
        )?;
        // Everything the run checks before it samples, before the session is charged.
        request
            .plan(&records, domain, &workload)
            .map_err(adaptive_error)?;
        // The session's charge, before anything runs: refused, nothing is released.
        let label = "privq.synthesize (adaptive)";
        if let Some(accountant) = accountant {
            let accountant = accountant.get();
            if accountant.is_forked_copy() {
                return Err(PrivqError::new_err(FORKED));
            }
            accountant.with(py, |state| match state {
                State::Memory(session) => match request.charge_to(session, label) {
                    Ok(_) => Ok(()),
                    Err(AdaptiveError::Budget(AccountantError::DeltaExceeded)) => {
                        Err(delta_refused(request.delta(), session))
                    }
                    Err(e) => Err(adaptive_error(e)),
                },
                State::File { path, .. } => {
                    let run = request.accountant().map_err(adaptive_error)?;
                    // The file's lock may be held by another process or thread: wait
                    // without the GIL, holding no lock of this object (see `Kind::File`).
                    py.detach(|| BudgetFile::charge_accountant(path, None, &run, label))
                        .map(drop)
                        .map_err(budget_file_error)
                }
            })?;
        }
        // The charge's time, taken before the run: the run's wall time depends on
        // the data and must not reach the release's (shareable) ledger.
        let charged_at = privq_host::accountant::utc_now();
        let mut rng = rng_for(seed, "fit", fit)?;
        // Ctrl-C: after every round the interpreter's pending signals are run
        // (with the GIL, briefly); a KeyboardInterrupt stops the run through the
        // library's control hook, and nothing is released. The session keeps its
        // charge: the rounds already run measured the data.
        let mut interrupted: Option<PyErr> = None;
        let release = py.detach(|| {
            catch_unwind(AssertUnwindSafe(|| {
                synthesize_controlled(&records, domain, &workload, &request, &mut rng, &mut |_| {
                    match Python::attach(|py| py.check_signals()) {
                        Ok(()) => ControlFlow::Continue(()),
                        Err(e) => {
                            interrupted = Some(e);
                            ControlFlow::Break(())
                        }
                    }
                })
            }))
        });
        if let Some(e) = interrupted {
            return Err(e);
        }
        let release = match release {
            Ok(r) => r.map_err(adaptive_error)?,
            Err(_) => {
                return Err(PrivqError::new_err(
                    "internal error (a bug in privq, please report it): the release panicked",
                ));
            }
        };
        let n = release.rows.len();
        let out = {
            // With private binning the rows written are spread over the public grids
            // of the request's domain; otherwise they are over the released domain.
            let (written, rows) = match &release.spread {
                Some(spread) => (domain, spread),
                None => (&release.domain, &release.rows),
            };
            columns_out(py, written, rows)?
        };
        let info = PyDict::new(py);
        let spent = &release.accountant;
        info.set_item("rho", spent.spent_rho().map(|r| fraction(r.num(), r.den())))?;
        info.set_item("epsilon", release.guarantee.epsilon)?;
        info.set_item("delta", release.guarantee.delta)?;
        info.set_item("rows", n)?;
        // n only where the relation makes it public: under add/remove neighbours
        // the number of records is private and is not returned.
        if neighbours == Neighbours::Replace {
            info.set_item("records_in", records.len())?;
        }
        info.set_item("ledger", spent.ledger_text_exact())?;
        info.set_item("measurements", measurements(py, &release)?)?;
        // The release's own charges, each stamped with the charge's time.
        let charges = PyList::empty(py);
        let times = vec![charged_at; release.accountant.ledger().len()];
        ledger_rows(&charges, &release.accountant, &times)?;
        info.set_item("charges", charges)?;
        let fitted = PySynthesis {
            request_domain: domain.clone(),
            release,
        };
        Ok((out, info, fitted))
    })
}

/// One column of value indices per attribute of `domain`, as [`ColumnOut`]s.
fn columns_out<'py>(
    py: Python<'py>,
    domain: &Domain,
    rows: &[Vec<usize>],
) -> PyResult<Vec<ColumnOut<'py>>> {
    let mut out = Vec::with_capacity(domain.dims());
    for (a, attr) in domain.attributes().iter().enumerate() {
        let texts: Vec<String> = (0..attr.size())
            .filter_map(|v| attr.value_text(v))
            .collect();
        let mut bytes = Vec::with_capacity(4 * rows.len());
        for r in rows {
            let v = r.get(a).copied().unwrap_or(0);
            let v =
                i32::try_from(v).map_err(|_| PrivqError::new_err("a value index beyond int32"))?;
            bytes.extend_from_slice(&v.to_ne_bytes());
        }
        out.push((attr.name().to_string(), texts, PyBytes::new(py, &bytes)));
    }
    Ok(out)
}

/// The release's measurements, in the order measured: first the one-way
/// marginals (round 0), then one per round. Each: the marginal's attributes
/// (names), its cells, the noise's standard deviation; for a round, its ρ and its
/// selection's ε (exact text), the candidates it was chosen among, and whether
/// the budget was annealed after it (σ ÷ √2) (`None` for round 0: their charges are in the ledger). All
/// public: what the release measured and with how much noise, not the data.
fn measurements<'py>(py: Python<'py>, release: &Synthetic) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    let attrs = release.domain.attributes();
    let measured = &release.output.measurements;
    let rounds = &release.output.rounds;
    let one_way = measured.len().saturating_sub(rounds.len());
    for (i, m) in measured.iter().enumerate() {
        let d = PyDict::new(py);
        let names: Vec<&str> = m
            .clique
            .attributes()
            .iter()
            .filter_map(|&a| attrs.get(a).map(|a| a.name()))
            .collect();
        let round = i.checked_sub(one_way).and_then(|r| rounds.get(r));
        d.set_item("round", round.map_or(0, |r| r.round))?;
        d.set_item("marginal", names.join(","))?;
        d.set_item("attributes", m.clique.len())?;
        d.set_item("cells", m.values.len())?;
        d.set_item("sigma", m.sigma)?;
        d.set_item("rho", round.map(|r| r.rho.to_string()))?;
        d.set_item(
            "select_epsilon",
            round.and_then(|r| r.epsilon.map(|e| e.to_string())),
        )?;
        d.set_item("candidates", round.map(|r| r.candidates))?;
        d.set_item("annealed", round.map(|r| r.annealed))?;
        out.append(d)?;
    }
    Ok(out)
}

/// A fitted release (`privq.Synthesis` and `privq.Synthesizer` hold one): the
/// model the release measured and fitted, from which more rows are drawn as
/// post-processing ([`Synthetic::sample`]): no data is kept here, and nothing
/// is charged.
#[pyclass(module = "privq._privq", name = "Synthesis", frozen)]
struct PySynthesis {
    release: Synthetic,
    request_domain: Domain,
}

#[pymethods]
impl PySynthesis {
    /// `n` rows from the model, column by column as `_synthesize` returns them.
    #[pyo3(signature = (n, seed))]
    fn sample<'py>(
        &self,
        py: Python<'py>,
        n: usize,
        seed: Option<u64>,
    ) -> PyResult<Vec<ColumnOut<'py>>> {
        guard(|| {
            let bytes = (n as u64).saturating_mul(24 + 8 * self.request_domain.dims() as u64);
            if bytes > MEMORY_CAP {
                return Err(PyValueError::new_err(format!(
                    "n = {n}: the synthetic rows would need about {} MiB, over the {} MiB \
                     cap; sample fewer rows at a time",
                    bytes >> 20,
                    MEMORY_CAP >> 20
                )));
            }
            let mut rng = rng_for(seed, "sample", 0)?;
            let rows = py
                .detach(|| self.release.sample(n, &self.request_domain, &mut rng))
                .map_err(adaptive_error)?;
            let written = match &self.release.spread {
                Some(_) => &self.request_domain,
                None => &self.release.domain,
            };
            columns_out(py, written, &rows)
        })
    }
}

/// The extension module.
#[pymodule]
fn _privq(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("PrivqError", py.get_type::<PrivqError>())?;
    m.add("BudgetExceeded", py.get_type::<BudgetExceeded>())?;
    m.add_class::<PyDomain>()?;
    m.add_class::<PyAccountant>()?;
    m.add_class::<PySynthesis>()?;
    m.add_class::<mwem::PyMwemSynthesis>()?;
    m.add_function(wrap_pyfunction!(_synthesize, m)?)?;
    m.add_function(wrap_pyfunction!(_plan_synthesis, m)?)?;
    m.add_function(wrap_pyfunction!(mwem::_synthesize_mwem, m)?)?;
    m.add_function(wrap_pyfunction!(mwem::_mwem_check, m)?)?;
    m.add_function(wrap_pyfunction!(discover::_discover_domain, m)?)?;
    m.add_class::<ldp::PyCampaign>()?;
    m.add_function(wrap_pyfunction!(ldp::_ldp_simulate, m)?)?;
    m.add_function(wrap_pyfunction!(ldp::_ldp_aggregate, m)?)?;
    m.add_function(wrap_pyfunction!(_domain_template, m)?)?;
    m.add_function(wrap_pyfunction!(sql::_sql, m)?)?;
    m.add_function(wrap_pyfunction!(sql::_sql_plan, m)?)?;
    Ok(())
}

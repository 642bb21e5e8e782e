//! `privq.synthesize(..., mechanism="mwem")`: `privq synth --mechanism mwem`'s
//! release through the same library entry point ([`MwemRequest`]): the table
//! read over the public domain ([`MwemRequest::open_records`]), the session's
//! charge ([`MwemRequest::charge_to`], or the budget file's), then
//! [`MwemRun::release`](privq_host::synth::mwem::MwemRun::release).

use privq_host::accountant::BudgetFile;
use privq_host::central::mwem::MwemError;
use privq_host::data::{DiscoveryError, Domain, MemoryCap};
use privq_host::query::Workload;
use privq_host::synth::mwem::{MwemRequest, MwemSynthError, MwemSynthetic};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::{
    ColumnOut, FORKED, PrivqError, PyAccountant, PyDomain, State, TableColumn, accountant_error,
    budget_file_error, columns_out, data_error, epsilon_arg, guard, ledger_rows, records_of,
};

/// The default memory cap of MWEM's dense histogram and the synthetic rows
/// (`privq synth`'s default `--memory-mib 1024`).
pub(crate) const MEMORY_MIB: u64 = 1024;

/// A memory cap in MiB, at least 1 and at most 2^40 (as `--memory-mib`).
fn memory_arg(memory_mib: u64) -> PyResult<u64> {
    if (1..=1 << 40).contains(&memory_mib) {
        Ok(memory_mib)
    } else {
        Err(PyValueError::new_err(format!(
            "memory_mib = {memory_mib}: a cap in MiB, at least 1"
        )))
    }
}

/// `Synthesizer.create("mwem", ...)`'s check of what it can check without data:
/// the workload (its form, and a parity or conjunction workload's binary
/// domain, as [`_synthesize_mwem`] builds it) and the memory cap.
#[pyfunction]
#[pyo3(signature = (domain, workload, memory_mib))]
pub(crate) fn _mwem_check(
    domain: &Bound<'_, PyDomain>,
    workload: Option<&str>,
    memory_mib: u64,
) -> PyResult<()> {
    guard(|| {
        memory_arg(memory_mib)?;
        workload_arg(workload, &domain.get().domain).map(drop)
    })
}

fn mwem_error(e: MwemSynthError) -> PyErr {
    match e {
        MwemSynthError::Data(DiscoveryError::Data(d)) => data_error(d),
        MwemSynthError::Data(DiscoveryError::Budget(a)) => accountant_error(a),
        MwemSynthError::Mwem(MwemError::Data(d)) => data_error(d),
        MwemSynthError::Mwem(MwemError::Budget(a)) => accountant_error(a),
        MwemSynthError::Mwem(MwemError::Cancelled { round }) => {
            pyo3::exceptions::PyKeyboardInterrupt::new_err(format!(
                "MWEM was stopped (Ctrl-C) before round {round}: nothing was released, and \
                 its charge stays spent (the budget was charged before MWEM's setup and rounds)"
            ))
        }
        MwemSynthError::Mwem(MwemError::InvalidParameter(m)) => {
            PyValueError::new_err(format!("invalid parameter: {m}"))
        }
        e => PrivqError::new_err(e.to_string()),
    }
}

/// `parity:W`, `conjunctions:W` (binary domains) or `marginals:K`, as
/// `privq synth --mechanism mwem --workload` reads them; `None` is its default,
/// `parity:3`.
fn workload_arg(spec: Option<&str>, domain: &Domain) -> PyResult<Workload> {
    let spec = spec.unwrap_or("parity:3");
    let bad = || {
        PyValueError::new_err(format!(
            "workload = {spec:?}: MWEM answers \"parity:W\", \"conjunctions:W\" (binary \
             domains) or \"marginals:K\""
        ))
    };
    let (kind, w) = spec.split_once(':').ok_or_else(bad)?;
    let w: usize = w.trim().parse().map_err(|_| bad())?;
    let kind = kind.trim();
    if matches!(kind, "parity" | "conjunctions") && !domain.is_binary() {
        return Err(PyValueError::new_err(format!(
            "workload = {spec:?} needs a binary (0/1) domain and this one is not; use \
             workload=\"marginals:2\" (all 1- and 2-way marginals) or \"marginals:K\""
        )));
    }
    let workload = match kind {
        "parity" => Workload::parities(domain, w),
        "conjunctions" => Workload::conjunctions(domain, w),
        "marginals" => Workload::marginals(domain, w),
        _ => return Err(bad()),
    };
    workload.map_err(|e| PyValueError::new_err(format!("workload = {spec:?}: {e}")))
}

/// `privq.synthesize(..., mechanism="mwem")`'s Rust half: the table in
/// dictionary form over the public domain; returns the synthetic columns and a
/// dict of what was spent. Pure ε-DP under replace-one neighbours (n public).
#[pyfunction]
#[pyo3(signature = (columns, domain, epsilon, workload, rows, rounds, accountant, seed, fit=0, memory_mib=MEMORY_MIB))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn _synthesize_mwem<'py>(
    py: Python<'py>,
    columns: Vec<TableColumn<'py>>,
    domain: &Bound<'py, PyDomain>,
    epsilon: &Bound<'py, PyAny>,
    workload: Option<&str>,
    rows: Option<usize>,
    rounds: Option<usize>,
    accountant: Option<&Bound<'py, PyAccountant>>,
    seed: Option<u64>,
    fit: u64,
    memory_mib: u64,
) -> PyResult<(Vec<ColumnOut<'py>>, Bound<'py, PyDict>, PyMwemSynthesis)> {
    guard(|| {
        let memory_mib = memory_arg(memory_mib)?;
        let domain = &domain.get().domain;
        let epsilon = epsilon_arg(epsilon)?;
        let request = MwemRequest::new(epsilon)
            .rows(rows)
            .rounds(rounds)
            .map_err(|_| PyValueError::new_err("rounds = 0: at least 1"))?;
        // MWEM samples one cell index per synthetic row (as `privq synth` counts).
        if let Some(rows) = rows
            && (rows as u64).saturating_mul(8) > memory_mib << 20
        {
            return Err(PyValueError::new_err(format!(
                "rows = {rows}: the synthetic rows would need about {} MiB, over the \
                 {memory_mib} MiB cap (memory_mib); release fewer rows",
                (rows as u64 * 8) >> 20
            )));
        }
        let workload = workload_arg(workload, domain)?;
        let records = records_of(py, columns, domain)?;
        let cap = MemoryCap(memory_mib << 20);
        // The data over the public domain, and the run's own accountant; refused
        // (an empty table, a histogram over the cap) before anything is charged.
        let mut run = py
            .detach(|| request.open_records(&records, domain, cap))
            .map_err(mwem_error)?;
        drop(records);
        // Ctrl-C while the table was read: seen before the charge, nothing spent.
        py.check_signals()?;
        let label = "privq.synthesize (mwem)";
        if let Some(accountant) = accountant {
            let accountant = accountant.get();
            if accountant.is_forked_copy() {
                return Err(PrivqError::new_err(FORKED));
            }
            accountant.with(py, |state| match state {
                State::Memory(session) => request
                    .charge_to(session, label)
                    .map(drop)
                    .map_err(mwem_error),
                State::File { path, .. } => {
                    let run_accountant = request.accountant().map_err(mwem_error)?;
                    py.detach(|| BudgetFile::charge_accountant(path, None, &run_accountant, label))
                        .map(drop)
                        .map_err(budget_file_error)
                }
            })?;
        }
        // The charge's time, taken before the run (see `_synthesize`).
        let charged_at = privq_host::accountant::utc_now();
        let mut rng = crate::rng_for(seed, "fit", fit)?;
        // Ctrl-C: before every round the interpreter's pending signals are run
        // (with the GIL, briefly); a KeyboardInterrupt stops the run through the
        // library's control hook and nothing is released. The charge stays spent:
        // it was made above, before MWEM's setup (the workload's exact answers,
        // the noisy initial histogram, which measures the data), so a Ctrl-C
        // during that setup is seen before round 1, charged. A Ctrl-C before the
        // charge (while the table is read) is seen by `check_signals` above and
        // charges nothing.
        let mut interrupted: Option<PyErr> = None;
        let release = py.detach(|| {
            run.release_controlled(&workload, &mut rng, &mut |_, _| match Python::attach(|py| {
                py.check_signals()
            }) {
                Ok(()) => std::ops::ControlFlow::Continue(()),
                Err(e) => {
                    interrupted = Some(e);
                    std::ops::ControlFlow::Break(())
                }
            })
        });
        if let Some(e) = interrupted {
            // A KeyboardInterrupt says which round it stopped and that the charge
            // stays spent (the interpreter's, with its traceback, is its cause);
            // anything else a signal handler raised is raised as it is.
            return Err(match release {
                Err(cancelled @ MwemSynthError::Mwem(MwemError::Cancelled { .. }))
                    if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) =>
                {
                    let ours = mwem_error(cancelled);
                    ours.set_cause(py, Some(e));
                    ours
                }
                _ => e,
            });
        }
        let release = release.map_err(mwem_error)?;
        let ds = run.dataset();
        let rows: Vec<Vec<usize>> = release.cells.iter().map(|&c| ds.domain.decode(c)).collect();
        let out = columns_out(py, &ds.domain, &rows)?;
        let info = PyDict::new(py);
        let spent = run.accountant();
        let e = spent.spent_epsilon().unwrap_or(epsilon);
        info.set_item("epsilon", (e.num(), e.den()))?;
        info.set_item("rows", rows.len())?;
        info.set_item("rounds", release.output.rounds)?;
        info.set_item("records_in", ds.counts.total())?;
        let charges = PyList::empty(py);
        let times = vec![charged_at; spent.ledger().len()];
        ledger_rows(&charges, spent, &times)?;
        info.set_item("charges", charges)?;
        // MWEM's measurements, in order: the query each chose, its noisy answer and
        // the Laplace scale (normalised by n, public under replace-one).
        let measured = PyList::empty(py);
        for (step, m) in release.output.measurements.iter().enumerate() {
            let d = PyDict::new(py);
            d.set_item("step", step + 1)?;
            d.set_item("query", m.query)?;
            d.set_item("value", m.value)?;
            d.set_item("noise_scale", m.noise_scale)?;
            measured.append(d)?;
        }
        info.set_item("measurements", measured)?;
        let fitted = PyMwemSynthesis {
            domain: ds.domain.clone(),
            release,
            memory_mib,
        };
        Ok((out, info, fitted))
    })
}

/// A fitted MWEM release: its distribution over the domain (public), from which
/// more rows are drawn as post-processing ([`MwemSynthetic::sample`]).
#[pyclass(module = "privq._privq", name = "MwemSynthesis", frozen)]
pub(crate) struct PyMwemSynthesis {
    release: MwemSynthetic,
    domain: Domain,
    /// The fit's memory cap, in MiB: samples are held to it too.
    memory_mib: u64,
}

#[pymethods]
impl PyMwemSynthesis {
    /// `n` rows from the distribution, column by column.
    #[pyo3(signature = (n, seed))]
    fn sample<'py>(
        &self,
        py: Python<'py>,
        n: usize,
        seed: Option<u64>,
    ) -> PyResult<Vec<ColumnOut<'py>>> {
        guard(|| {
            let cap = self.memory_mib;
            if (n as u64).saturating_mul(8 + 8 * self.domain.dims() as u64) > cap << 20 {
                return Err(PyValueError::new_err(format!(
                    "n = {n}: the synthetic rows would need more than the {cap} MiB cap \
                     (memory_mib); sample fewer rows at a time"
                )));
            }
            let mut rng = crate::rng_for(seed, "sample", 0)?;
            let cells = py.detach(|| self.release.sample(n, &mut rng));
            let rows: Vec<Vec<usize>> = cells.iter().map(|&c| self.domain.decode(c)).collect();
            columns_out(py, &self.domain, &rows)
        })
    }
}

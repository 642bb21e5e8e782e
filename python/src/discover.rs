//! `privq.discover_domain`: `privq domain discover`'s release through the same
//! library entry point ([`Discovery`]): every column's values counted
//! ([`ValueCounts::from_dictionary_columns`], as the program counts the CSV),
//! the charge first (a session's [`Discovery::charge_to`], a budget file's, or
//! a fresh accountant of exactly its cost), then private partition selection.

use privq_host::accountant::BudgetFile;
use privq_host::data::{DictionaryColumn, Discovery, DiscoveryError, ValueCounts};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::{
    FORKED, PrivqError, PyAccountant, PyDomain, State, TableColumn, accountant_error,
    budget_file_error, codes, data_error, epsilon_arg, guard, ledger_rows, neighbours_arg,
    value_text,
};

fn discovery_error(e: DiscoveryError) -> PyErr {
    match e {
        DiscoveryError::Data(d) => data_error(d),
        DiscoveryError::Budget(a) => accountant_error(a),
        DiscoveryError::InvalidDelta(_) => PyValueError::new_err(format!(
            "delta: {e} (a value held by one record survives with probability at most delta)"
        )),
        e @ (DiscoveryError::NoAttributes | DiscoveryError::ThresholdOverflow) => {
            PyValueError::new_err(e.to_string())
        }
        e => PrivqError::new_err(e.to_string()),
    }
}

/// `privq.discover_domain`'s Rust half: the table in dictionary form; returns
/// the discovered domain and a dict with the threshold and the charges.
#[pyfunction]
#[pyo3(signature = (columns, epsilon, delta, neighbours, accountant, seed))]
pub(crate) fn _discover_domain<'py>(
    py: Python<'py>,
    columns: Vec<TableColumn<'py>>,
    epsilon: &Bound<'py, PyAny>,
    delta: f64,
    neighbours: &str,
    accountant: Option<&Bound<'py, PyAccountant>>,
    seed: Option<u64>,
) -> PyResult<(PyDomain, Bound<'py, PyDict>)> {
    guard(|| {
        let epsilon = epsilon_arg(epsilon)?;
        let neighbours = neighbours_arg(neighbours)?;
        let discovery =
            Discovery::new(neighbours, epsilon, delta, columns.len()).map_err(discovery_error)?;
        let mut table = Vec::with_capacity(columns.len());
        for (name, values, bytes) in &columns {
            let texts = values
                .iter()
                .map(|v| value_text(name, &v))
                .collect::<PyResult<Vec<_>>>()?;
            table.push(DictionaryColumn::new(
                name.clone(),
                texts,
                codes(name, bytes.as_bytes())?,
            ));
        }
        drop(columns);
        let counts = py
            .detach(|| ValueCounts::from_dictionary_columns(&table))
            .map_err(data_error)?;
        drop(table);
        // Ctrl-C during the count (the long part: one pass over every value) is
        // seen here, before the charge: nothing is charged or released. After
        // the charge the selection is one short pass over the counted values.
        py.check_signals()?;
        let label = "privq.discover_domain";
        let mut rng = match seed {
            Some(seed) => privq_host::seeded_rng(seed),
            None => privq_host::secure_rng().map_err(|e| PrivqError::new_err(e.to_string()))?,
        };
        // The charge before anything is sampled: refused, nothing is released.
        // `own` records the charge (the release's own ledger) on every path.
        let mut own = discovery.accountant().map_err(accountant_error)?;
        let charged_at = privq_host::accountant::utc_now();
        let own_receipt = discovery
            .charge_to(&mut own, label)
            .map_err(discovery_error)?;
        let session_receipt = match accountant {
            None => None,
            Some(accountant) => {
                let accountant = accountant.get();
                if accountant.is_forked_copy() {
                    return Err(PrivqError::new_err(FORKED));
                }
                accountant.with(py, |state| match state {
                    State::Memory(session) => match discovery.charge_to(session, label) {
                        Ok(receipt) => Ok(Some(receipt)),
                        Err(DiscoveryError::Budget(
                            privq_host::accountant::AccountantError::DeltaExceeded,
                        )) => Err(crate::delta_refused_hint(
                            delta,
                            session,
                            if delta == 1e-6 {
                                " (δ = 1e-6 is discover_domain's default: delta= lowers it)"
                            } else {
                                ""
                            },
                        )),
                        Err(e) => Err(discovery_error(e)),
                    },
                    State::File { path, .. } => {
                        py.detach(|| BudgetFile::charge_accountant(path, None, &own, label))
                            .map_err(budget_file_error)?;
                        Ok(None)
                    }
                })?
            }
        };
        let receipt = session_receipt.unwrap_or(own_receipt);
        let partial = py
            .detach(|| discovery.release_paid_partial(&counts, receipt, &mut rng))
            .map_err(discovery_error)?;
        let Some(domain) = partial.domain else {
            return Err(PrivqError::new_err(format!(
                "domain discovery kept no value of any attribute ({}); the budget was charged \
                 and is spent. Give more epsilon, or a public domain (numeric columns: bounds)",
                partial.nothing_kept.join(", ")
            )));
        };
        let info = PyDict::new(py);
        info.set_item("threshold", discovery.threshold())?;
        info.set_item("nothing_kept", partial.nothing_kept)?;
        let charges = PyList::empty(py);
        let times = vec![charged_at; own.ledger().len()];
        ledger_rows(&charges, &own, &times)?;
        info.set_item("charges", charges)?;
        Ok((PyDomain { domain }, info))
    })
}

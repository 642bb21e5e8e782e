//! `privq.sql`'s Rust half: the request checked by the library
//! ([`SqlRequest`]), the table read column by column ([`Table::from_columns`]),
//! the accountant charged ([`Plan::charge_to`] or the budget file), then the
//! release ([`Plan::release`]), as `privq sql` does.

use privq_host::accountant::AccountantError;
use privq_host::aggregate::{
    Aggregate, AggregateError, Bounds, Plan, ReleasedValues, SqlRequest, Table,
};
use pyo3::exceptions::{PyUserWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use super::frame_column::FrameColumn;
use super::{
    FORKED, PrivqError, PyAccountant, State, accountant_error, budget_file_error, delta_refused,
    epsilon_arg, guard, neighbours_arg, neighbours_name, parameter_text, row,
};

/// A column as the reader gives it (`privq._frames.sql_columns`): its name, kind,
/// buffers, validity bitmap and the bitmap's first bit ([`FrameColumn::new`]).
type ReadColumn<'py> = (
    String,
    String,
    Bound<'py, PyBytes>,
    Option<Bound<'py, PyBytes>>,
    Option<Bound<'py, PyBytes>>,
    usize,
);

/// The most rows read from a table (as `privq sql`'s default `--max-table-rows`).
const MAX_TABLE_ROWS: usize = 100_000_000;

/// An option as `privq.sql` names its parameter.
fn parameter(option: &str) -> &'static str {
    match option {
        "table" => "tables",
        "privacy-unit" => "privacy_unit",
        "bounds" => "bounds",
        "keys" => "keys",
        "delta" => "delta",
        _ => "sql",
    }
}

/// A library refusal as the Python exception a user can act on, in a table's
/// words (rows from 0, parameters as `privq.sql` names them).
fn aggregate_error(e: AggregateError) -> PyErr {
    if let Some(option) = e.option() {
        return PyValueError::new_err(format!("{}: {e}", parameter(option)));
    }
    let message = match e {
        AggregateError::Budget(a) => return accountant_error(a),
        AggregateError::Core(_) | AggregateError::Selection(_) => {
            return PrivqError::new_err(e.to_string());
        }
        AggregateError::NotANumber { column, line } => format!(
            "column {column:?}, row {}: missing or not a number (null, empty or text; pandas \
             stores NaN as missing); drop such rows with drop_invalid=True",
            row(line)
        ),
        AggregateError::NotFinite { column, line } => format!(
            "column {column:?}, row {}: not a finite number (NaN or infinite); drop such rows \
             with drop_invalid=True",
            row(line)
        ),
        AggregateError::EmptyUnit { column, line } => format!(
            "column {column:?}, row {}: the row has no privacy unit (missing or empty)",
            row(line)
        ),
        AggregateError::MissingColumn { column, available } => format!(
            "the table has no column {column:?} (its columns: {})",
            available.join(", ")
        ),
        AggregateError::Unbounded(column) => format!(
            "column {column:?} has no bounds: give its public range (bounds={{{column:?}: \
             (lo, hi)}}); bounds from the data would leak it"
        ),
        e => e.to_string(),
    };
    PyValueError::new_err(message)
}

/// The request `privq.sql`'s arguments describe, checked and planned. The
/// column names of the query's table (its schema: public) are given to the
/// request first, so a column the table lacks is reported as such.
#[allow(clippy::too_many_arguments)]
fn plan(
    query: &str,
    tables: &Bound<'_, PyDict>,
    epsilon: &Bound<'_, PyAny>,
    privacy_unit: Option<String>,
    max_groups: u32,
    max_rows: u32,
    bounds: Vec<(String, Bound<'_, PyAny>, Bound<'_, PyAny>)>,
    keys: Vec<(String, Vec<String>)>,
    delta: Option<f64>,
    neighbours: &str,
    confidence: f64,
    quantile_candidates: u32,
    drop_invalid: bool,
) -> PyResult<(Plan, String)> {
    let epsilon = epsilon_arg(epsilon)?;
    let neighbours = neighbours_arg(neighbours)?;
    let names = tables
        .keys()
        .iter()
        .map(|k| k.extract::<String>())
        .collect::<PyResult<Vec<_>>>()?;
    let mut request = SqlRequest::new(query)
        .map_err(aggregate_error)?
        .tables(names)
        .limits(max_groups, max_rows)
        .neighbours(neighbours)
        .confidence(confidence)
        .quantile_candidates(quantile_candidates)
        .drop_invalid(drop_invalid);
    if let Some(unit) = privacy_unit {
        request = request.privacy_unit(unit, max_groups, max_rows);
    }
    for (column, lo, hi) in bounds {
        let lo = parameter_text(&format!("bounds[{column:?}] low"), &lo)?;
        let hi = parameter_text(&format!("bounds[{column:?}] high"), &hi)?;
        let b: Bounds = format!("{lo}:{hi}")
            .parse()
            .map_err(|e: AggregateError| PyValueError::new_err(format!("bounds: {e}")))?;
        request = request.bounds(column, b);
    }
    for (column, values) in keys {
        request = request.keys(column, values);
    }
    if let Some(delta) = delta {
        request = request.delta(delta);
    }
    let table = request.table().to_string();
    if let Some(df) = tables.get_item(&table)? {
        let header: Vec<String> = df.getattr("column_names")?.extract()?;
        request = request.header(header);
    }
    let plan = request.build(epsilon).map_err(aggregate_error)?;
    Ok((plan, table))
}

/// A plan's aggregate as the query wrote it (`AVG(temp)`).
fn aggregate_text(a: &Aggregate) -> String {
    match a {
        Aggregate::Count => "COUNT(*)".into(),
        Aggregate::Sum(c) => format!("SUM({c})"),
        Aggregate::Mean(c) => format!("AVG({c})"),
        Aggregate::Variance(c) => format!("VARIANCE({c})"),
        Aggregate::StdDev(c) => format!("STDDEV({c})"),
        Aggregate::Quantile { column, level } => {
            format!("QUANTILE({column}, {})", *level as f64 / 10_000.0)
        }
    }
}

/// `privq.sql(..., dry_run=True)`'s Rust half: the request checked and planned
/// as [`_sql`] plans it, described from its public parameters only (no value of
/// any table is read, nothing is charged or sampled): the cost, the budget split,
/// each measurement's sensitivity and noise scale ([`Plan::measurements`]), and
/// whether an in-memory accountant would accept the charge now.
#[pyfunction]
#[pyo3(signature = (query, tables, epsilon, privacy_unit, max_groups, max_rows, bounds, keys, delta, neighbours, confidence, quantile_candidates, drop_invalid, accountant))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn _sql_plan<'py>(
    py: Python<'py>,
    query: &str,
    tables: &Bound<'py, PyDict>,
    epsilon: &Bound<'py, PyAny>,
    privacy_unit: Option<String>,
    max_groups: u32,
    max_rows: u32,
    bounds: Vec<(String, Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    keys: Vec<(String, Vec<String>)>,
    delta: Option<f64>,
    neighbours: &str,
    confidence: f64,
    quantile_candidates: u32,
    drop_invalid: bool,
    accountant: Option<&Bound<'py, PyAccountant>>,
) -> PyResult<Bound<'py, PyDict>> {
    guard(|| {
        let (plan, table) = plan(
            query,
            tables,
            epsilon,
            privacy_unit,
            max_groups,
            max_rows,
            bounds,
            keys,
            delta,
            neighbours,
            confidence,
            quantile_candidates,
            drop_invalid,
        )?;
        let info = PyDict::new(py);
        let cost = plan.cost();
        let e = cost.epsilon().unwrap_or(plan.epsilon_share());
        info.set_item("table", table)?;
        info.set_item("epsilon", (e.num(), e.den()))?;
        info.set_item("delta", cost.delta())?;
        let share = plan.epsilon_share();
        info.set_item("epsilon_share", (share.num(), share.den()))?;
        info.set_item("neighbours", neighbours_name(plan.neighbours()))?;
        info.set_item("privacy_unit", plan.privacy_unit())?;
        let limits = plan.contribution();
        info.set_item("max_groups", limits.max_groups())?;
        info.set_item("max_rows", limits.max_rows())?;
        info.set_item(
            "groups",
            if plan.public_keys().is_some() {
                "public"
            } else {
                "private"
            },
        )?;
        info.set_item("threshold", plan.threshold())?;
        let aggregates = PyList::empty(py);
        for (name, a) in plan.aggregates() {
            aggregates.append((name.clone(), aggregate_text(a)))?;
        }
        info.set_item("aggregates", aggregates)?;
        let measured = PyList::empty(py);
        for m in plan.measurements() {
            let d = PyDict::new(py);
            d.set_item("measurement", m.kind)?;
            d.set_item("column", m.column.clone())?;
            d.set_item("level", m.level)?;
            d.set_item("epsilon", (m.epsilon.num(), m.epsilon.den()))?;
            d.set_item("sensitivity", m.sensitivity)?;
            d.set_item("noise_scale", m.noise_scale)?;
            measured.append(d)?;
        }
        info.set_item("measurements", measured)?;
        let accepted = match accountant {
            None => None,
            Some(accountant) => {
                let accountant = accountant.get();
                if accountant.is_forked_copy() {
                    return Err(PrivqError::new_err(FORKED));
                }
                accountant.with(py, |state| {
                    Ok(match state {
                        State::Memory(session) => {
                            let mut copy = session.clone();
                            Some(plan.charge_to(&mut copy, "plan").is_ok())
                        }
                        // A budget file is shared by processes: only a charge under
                        // its lock can tell.
                        State::File { .. } => None,
                    })
                })?
            }
        };
        info.set_item("accepted", accepted)?;
        // How far in ranks each released quantile may be from its quantile.
        info.set_item("quantile_rank_errors", plan.quantile_rank_errors())?;
        // What the release would warn about (no privacy unit, a large δ).
        info.set_item("warnings", plan.warnings())?;
        Ok(info)
    })
}

/// [`_sql`]'s answer: the released columns `(name, type, values)`; per quantile
/// of a query that counts rows, `(name, rank bound, groups where it is over half
/// the noisy count)`; and the number of released groups.
type Released<'py> = (
    Vec<(String, &'static str, Bound<'py, PyList>)>,
    Vec<(String, f64, usize)>,
    usize,
);

/// `privq.sql`'s Rust half. `tables` maps each name to its table (already Arrow);
/// `reader` turns a table, the columns the plan reads and those it reads only as
/// numbers into `(all column names, number of rows, [column])`
/// (`privq._frames.sql_columns`, [`ReadColumn`]). Returns the released
/// columns: `(name, is_text, values)`, group-by columns as text, estimates as floats.
#[pyfunction]
#[pyo3(signature = (query, tables, reader, epsilon, privacy_unit, max_groups, max_rows, bounds, keys, delta, neighbours, confidence, quantile_candidates, drop_invalid, accountant, seed))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn _sql<'py>(
    py: Python<'py>,
    query: &str,
    tables: &Bound<'py, PyDict>,
    reader: &Bound<'py, PyAny>,
    epsilon: &Bound<'py, PyAny>,
    privacy_unit: Option<String>,
    max_groups: u32,
    max_rows: u32,
    bounds: Vec<(String, Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    keys: Vec<(String, Vec<String>)>,
    delta: Option<f64>,
    neighbours: &str,
    confidence: f64,
    quantile_candidates: u32,
    drop_invalid: bool,
    accountant: Option<&Bound<'py, PyAccountant>>,
    seed: Option<u64>,
) -> PyResult<Released<'py>> {
    guard(|| {
        let (plan, name) = plan(
            query,
            tables,
            epsilon,
            privacy_unit,
            max_groups,
            max_rows,
            bounds,
            keys,
            delta,
            neighbours,
            confidence,
            quantile_candidates,
            drop_invalid,
        )?;
        // The library's warnings about the plan (a large δ), as Python warnings.
        for warning in plan.warnings() {
            let message =
                std::ffi::CString::new(warning).map_err(|e| PrivqError::new_err(e.to_string()))?;
            PyErr::warn(py, &py.get_type::<PyUserWarning>(), &message, 2)?;
        }
        // Only the columns the plan reads are converted; those it compares as text
        // (the unit, plain keys, WHERE) as text, the others as numbers where the
        // frame holds numbers.
        let columns = plan.columns();
        let numbers = columns.number_columns();
        let wanted: Vec<String> = columns
            .text_columns()
            .into_iter()
            .chain(numbers.clone())
            .collect();
        let df = tables
            .get_item(&name)?
            .ok_or_else(|| PyValueError::new_err(format!("tables: no table {name:?}")))?;
        let (all, rows, data): (Vec<String>, usize, Vec<ReadColumn<'py>>) =
            reader.call1((df, wanted, &numbers))?.extract()?;
        let data: Vec<(String, FrameColumn)> = data
            .into_iter()
            .map(|(n, kind, a, b, bits, offset)| {
                let copy = |b: Bound<'py, PyBytes>| b.as_bytes().to_vec();
                FrameColumn::new(&kind, copy(a), b.map(copy), bits.map(copy), offset, rows)
                    .map(|c| (n.clone(), c))
                    .map_err(|e| PrivqError::new_err(format!("column {n:?} from the frame: {e}")))
            })
            .collect::<PyResult<_>>()?;
        let table = py
            .detach(|| Table::from_columns(&data, rows, &columns, MAX_TABLE_ROWS))
            .map_err(|e| match e {
                AggregateError::MissingColumn { column, .. } => {
                    aggregate_error(AggregateError::MissingColumn {
                        column,
                        available: all.clone(),
                    })
                }
                e => aggregate_error(e),
            })?;
        drop(data);
        plan.check_table(&table).map_err(aggregate_error)?;
        // The session's charge, before anything is sampled: refused, nothing is
        // released and the session is unchanged.
        let label = "privq.sql";
        if let Some(accountant) = accountant {
            let accountant = accountant.get();
            if accountant.is_forked_copy() {
                return Err(PrivqError::new_err(FORKED));
            }
            accountant.with(py, |state| match state {
                State::Memory(session) => match plan.charge_to(session, label) {
                    Ok(_) => Ok(()),
                    Err(AggregateError::Budget(AccountantError::DeltaExceeded)) => {
                        Err(delta_refused(plan.cost().delta(), session))
                    }
                    Err(e) => Err(aggregate_error(e)),
                },
                State::File { path, .. } => py
                    .detach(|| plan.charge_budget_file(path, None, label))
                    .map(drop)
                    .map_err(budget_file_error),
            })?;
        }
        let mut rng = match seed {
            Some(seed) => privq_host::seeded_rng(seed),
            None => privq_host::secure_rng().map_err(|e| PrivqError::new_err(e.to_string()))?,
        };
        let (release, _) = py
            .detach(|| plan.release(&table, &mut rng))
            .map_err(aggregate_error)?;
        // The program's columns: group-by columns, then each aggregate and, where it
        // has one, its interval's bounds.
        let mut out = Vec::new();
        for column in release.columns() {
            out.push(match column.values {
                ReleasedValues::Text(v) => (column.name, "text", PyList::new(py, v)?),
                ReleasedValues::Int(v) => (column.name, "int", PyList::new(py, v)?),
                ReleasedValues::Float(v) => (column.name, "float", PyList::new(py, v)?),
                _ => return Err(PrivqError::new_err("a released column of an unknown type")),
            });
        }
        // Each quantile's rank bound and the groups where it is over half the noisy
        // count ([`Plan::quantile_notes`]), for `privq.sql` to warn about.
        let notes = plan
            .quantile_notes(&release)
            .into_iter()
            .filter_map(|n| Some((n.name, n.ranks, n.loose_groups?)))
            .collect();
        Ok((out, notes, release.rows().len()))
    })
}

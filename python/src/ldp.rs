//! `privq.ldp`'s Rust half: campaigns, simulated device reports and their
//! aggregation, through the library entry points `privq ldp` uses
//! ([`Campaign::validate`], [`Fleet::privatize`], [`Intake`]), so that the
//! estimates are the program's for the same reports.

use std::fs::File;
use std::path::PathBuf;

use privq_collector::store::{Store, StoreError};
use privq_core::Epsilon;
use privq_host::ldp::campaign::{
    CAMPAIGN_FORMAT, CAMPAIGN_VERSION, Campaign, CampaignError, CampaignPlan, Limits, QuerySpec,
};
use privq_host::ldp::decode::RejectReason;
use privq_host::ldp::fleet::{Fleet, FleetSeed, MechanismSpec};
use privq_host::ldp::frames;
use privq_host::ldp::intake::{GroupEstimates, Intake, IntakeStats, Outcome};
use privq_host::ldp::output;
use privq_host::ldp::postprocess::PostProcess;
use pyo3::exceptions::{
    PyFileNotFoundError, PyIsADirectoryError, PyOSError, PyPermissionError, PyTypeError,
    PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::{PrivqError, guard, parameter_text};

/// A campaign error as `ValueError`: one sentence naming the field at fault
/// (as `privq.ldp.Campaign` names it), without the program's repetitions.
fn campaign_error(e: CampaignError) -> PyErr {
    let field = e.field();
    let mut message = e.to_string();
    while let Some(rest) = message.strip_prefix(&format!("{field}: ")) {
        message = rest.to_string();
    }
    let field = field.replace('-', "_");
    PyValueError::new_err(match e {
        CampaignError::Json(_) => format!("campaign: {message}"),
        _ => format!("campaign {field}: {message}"),
    })
}

/// What an aggregation read, in one sentence for a Python exception or
/// warning: the outcome, the counts, the rejections by reason and the first
/// problem (the program's multi-line summary is kept beside it).
fn concise(stats: &IntakeStats, groups: &[GroupEstimates], outcome: Outcome) -> String {
    let mut parts = vec![format!(
        "{} of {} report(s) aggregated",
        stats.accepted, stats.frames
    )];
    let reasons: Vec<String> = RejectReason::ALL
        .into_iter()
        .filter_map(|class| {
            let n = stats.rejected.get(class);
            (n > 0).then(|| format!("{n} {}", class.name()))
        })
        .collect();
    if !reasons.is_empty() {
        parts.push(format!("rejected: {}", reasons.join(", ")));
    }
    if stats.skipped_bytes > 0 {
        parts.push(format!("{} byte(s) skipped", stats.skipped_bytes));
    }
    if let Some(p) = stats.problems.first() {
        parts.push(format!("first problem at {p}"));
    }
    let undefined: Vec<&str> = groups
        .iter()
        .filter(|g| g.undefined)
        .map(|g| g.label.as_str())
        .collect();
    if !undefined.is_empty() {
        parts.push(format!("estimates not finite in {}", undefined.join(", ")));
    }
    format!("{outcome}: {}", parts.join("; "))
}

/// A validated campaign (`privq.ldp.Campaign` wraps it): what every accepted
/// report is, exactly.
#[pyclass(module = "privq._privq", name = "Campaign", frozen)]
pub(crate) struct PyCampaign {
    plan: CampaignPlan,
}

#[pymethods]
impl PyCampaign {
    /// A campaign from its fields, validated as `privq ldp aggregate` validates
    /// a campaign given by flags (the aggregation state capped at `memory_mib`).
    #[new]
    #[pyo3(signature = (mechanism, epsilon, domain=None, queries=None, bound=None, grid_exponent=None, memory_mib=256))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        mechanism: String,
        epsilon: &Bound<'_, PyAny>,
        domain: Option<u32>,
        queries: Option<Vec<String>>,
        bound: Option<u32>,
        grid_exponent: Option<i32>,
        memory_mib: u64,
    ) -> PyResult<Self> {
        guard(|| {
            let epsilon = parameter_text("epsilon", epsilon)?;
            let queries = match queries {
                None => vec![QuerySpec::One(0)],
                Some(q) => q.into_iter().map(QuerySpec::Range).collect(),
            };
            let campaign = Campaign {
                format: CAMPAIGN_FORMAT.to_string(),
                version: CAMPAIGN_VERSION,
                mechanism,
                epsilon,
                domain,
                bound,
                grid_exponent,
                g: None,
                queries,
            };
            let plan = campaign
                .validate(&Limits::from_mib(memory_mib))
                .map_err(campaign_error)?;
            Ok(PyCampaign { plan })
        })
    }

    /// A campaign from the JSON of a campaign file (`privq ldp simulate
    /// --campaign`).
    #[staticmethod]
    #[pyo3(signature = (text, memory_mib=256))]
    fn from_json(text: &str, memory_mib: u64) -> PyResult<Self> {
        guard(|| {
            let plan = Campaign::from_json(text)
                .and_then(|c| c.validate(&Limits::from_mib(memory_mib)))
                .map_err(campaign_error)?;
            Ok(PyCampaign { plan })
        })
    }

    /// The campaign in canonical form, as JSON (a campaign file).
    fn to_json(&self) -> PyResult<String> {
        serde_json::to_string_pretty(self.plan.campaign())
            .map_err(|e| PrivqError::new_err(e.to_string()))
    }

    /// The mechanism's name.
    fn mechanism(&self) -> String {
        self.plan.campaign().mechanism.clone()
    }

    /// ε per report, exactly, as `(numerator, denominator)`.
    fn epsilon(&self) -> (u64, u64) {
        let kind = self.plan.kind(0);
        (kind.epsilon_num, kind.epsilon_den)
    }

    /// The number of items d (`None` for a mean mechanism).
    fn domain(&self) -> Option<u32> {
        self.plan.campaign().domain
    }

    /// The exact length of every accepted report, in bytes.
    fn report_len(&self) -> usize {
        self.plan.report_len()
    }

    /// The same reports accepted: the same report kind (mechanism, ε exactly,
    /// parameter, OLH's g) and the same query ids, however they were written
    /// (`"0.5"` or `"1/2"`, a g given or derived).
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PyCampaign>().is_ok_and(|o| {
            let (a, b) = (&o.get().plan, &self.plan);
            a.kind(0) == b.kind(0)
                && a.report_len() == b.report_len()
                && a.campaign().queries == b.campaign().queries
        })
    }
}

/// The randomizer a campaign's devices run, for a simulation.
fn simulated(plan: &CampaignPlan) -> PyResult<MechanismSpec> {
    let campaign = plan.campaign();
    if !plan.collects(0) {
        return Err(PyValueError::new_err(
            "simulated devices send query 0's reports, and this campaign does not collect \
             query 0",
        ));
    }
    let kind = plan.kind(0);
    let epsilon = Epsilon::new(kind.epsilon_num, kind.epsilon_den)
        .map_err(|e| PyValueError::new_err(format!("epsilon: {e}")))?;
    let domain = campaign.domain.unwrap_or(2);
    let spec = MechanismSpec::parse(&campaign.mechanism, epsilon, domain).map_err(|_| {
        PyValueError::new_err(format!(
            "mechanism {:?} reports a mean, not an item: simulations cover the frequency \
             randomizers ({})",
            campaign.mechanism,
            MechanismSpec::NAMES.join(", ")
        ))
    })?;
    // Reports of the simulated randomizer are the campaign's (OLH's g included).
    if spec.kind(privq_core::local::QueryId(0)) != kind {
        return Err(PyValueError::new_err(
            "this campaign's reports are not the ones its mechanism's devices send by default \
             (an OLH campaign with its own g): it cannot be simulated",
        ));
    }
    Ok(spec)
}

/// `privq.ldp.simulate`'s Rust half: every value (an item in `0..d`, as
/// native-endian `int64` bytes) privatized by one simulated device; the reports
/// as a report file (`privq ldp simulate`'s bytes for the same devices and seed).
#[pyfunction]
#[pyo3(signature = (values, campaign, seed))]
pub(crate) fn _ldp_simulate<'py>(
    py: Python<'py>,
    values: &[u8],
    campaign: &Bound<'py, PyCampaign>,
    seed: Option<u64>,
) -> PyResult<Bound<'py, PyBytes>> {
    guard(|| {
        let spec = simulated(&campaign.get().plan)?;
        if !values.len().is_multiple_of(8) {
            return Err(PyValueError::new_err(
                "values: the bytes are not whole int64 values",
            ));
        }
        let d = spec.domain();
        let mut items = Vec::with_capacity(values.len() / 8);
        for (i, b) in values.chunks_exact(8).enumerate() {
            let v = i64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
            match u32::try_from(v) {
                Ok(item) if item < d => items.push(item),
                _ => {
                    return Err(PyValueError::new_err(format!(
                        "values[{i}] = {v} is not an item of the campaign's domain (0 to {})",
                        d - 1
                    )));
                }
            }
        }
        let fleet = Fleet::from_items(items, d);
        // An explicit seed: the 64-bit reproducible path (tests, demos); else a
        // full 32-byte fleet seed from the operating system's entropy.
        let seed = match seed {
            Some(s) => FleetSeed::from(s),
            None => FleetSeed::random(
                &mut privq_host::secure_rng().map_err(|e| PrivqError::new_err(e.to_string()))?,
            ),
        };
        let bytes = py.detach(|| -> Result<Vec<u8>, String> {
            let batch = fleet
                .privatize_from(&spec, &seed)
                .map_err(|e| e.to_string())?;
            let mut out = Vec::with_capacity(batch.bytes().len() + 4 * batch.count() + 16);
            frames::write_file_header(&mut out).map_err(|e| e.to_string())?;
            for r in batch.iter() {
                frames::write_frame(&mut out, r).map_err(|e| e.to_string())?;
            }
            Ok(out)
        });
        let bytes = bytes.map_err(|e| PrivqError::new_err(format!("simulation failed: {e}")))?;
        Ok(PyBytes::new(py, &bytes))
    })
}

/// A collector database's refusal as the Python exception naming it.
fn store_error(db: &std::path::Path, e: StoreError) -> PyErr {
    match e {
        StoreError::NotFound(_) => {
            PyFileNotFoundError::new_err(format!("{}: no such collector database", db.display()))
        }
        StoreError::NotAStore(_) | StoreError::SchemaVersion { .. } => {
            PyValueError::new_err(e.to_string())
        }
        e => PrivqError::new_err(format!("collector database {}: {e}", db.display())),
    }
}

/// One input of an aggregation: report-file bytes, or the path of a report file.
enum Input {
    Bytes(Vec<u8>),
    Path(PathBuf),
}

fn input_arg(i: usize, value: &Bound<'_, PyAny>) -> PyResult<Input> {
    if let Ok(b) = value.cast::<PyBytes>() {
        return Ok(Input::Bytes(b.as_bytes().to_vec()));
    }
    if let Ok(b) = value.extract::<Vec<u8>>()
        && !value.is_instance_of::<pyo3::types::PyString>()
    {
        return Ok(Input::Bytes(b));
    }
    if let Ok(p) = value.extract::<PathBuf>() {
        return Ok(Input::Path(p));
    }
    Err(PyTypeError::new_err(format!(
        "reports[{i}]: report-file bytes or the path of a report file, not {}",
        value.get_type().name()?
    )))
}

/// The same collector database given twice (the same path, another path to it,
/// or a hard link: the same file) would count each of its reports twice:
/// `ValueError`. Paths that do not resolve are left to [`read_database`].
fn refuse_repeated_databases(databases: &[PathBuf]) -> PyResult<()> {
    #[cfg(unix)]
    fn identity(p: &std::path::Path) -> Option<(u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    fn identity(p: &std::path::Path) -> Option<PathBuf> {
        std::fs::canonicalize(p).ok()
    }
    let mut seen = std::collections::HashMap::new();
    for db in databases {
        if let Some(id) = identity(db)
            && let Some(first) = seen.insert(id, db)
        {
            return Err(PyValueError::new_err(format!(
                "{} and {} are the same collector database: given twice, its reports would \
                 count twice",
                first.display(),
                db.display()
            )));
        }
    }
    Ok(())
}

/// Reads the collector database `db` into `intake` ([`Store::open_existing`],
/// [`Store::ingest_admitted`]) on a thread of its own while this one, every
/// 100 ms, checks for signals: on Ctrl-C (or any signal handler's exception) the
/// read is interrupted (SQLite's interrupt, repeated until the reader stops) and
/// the exception raised, so a slow read never ignores `KeyboardInterrupt`.
fn read_database(py: Python<'_>, db: &std::path::Path, intake: &mut Intake) -> PyResult<()> {
    use std::sync::mpsc::{RecvTimeoutError, sync_channel};
    use std::time::Duration;
    let store = py
        .detach(|| Store::open_existing(db))
        .map_err(|e| store_error(db, e))?;
    let handle = store.interrupt_handle();
    let (tx, rx) = sync_channel(1);
    // Waited on without the GIL (`detach` needs a `Sync` receiver).
    let rx = std::sync::Mutex::new(rx);
    let wait = |ms| {
        py.detach(|| {
            rx.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .recv_timeout(Duration::from_millis(ms))
        })
    };
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let _ = tx.send(store.ingest_admitted(intake));
        });
        loop {
            match wait(100) {
                Ok(read) => return read.map(drop).map_err(|e| store_error(db, e)),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(PrivqError::new_err(format!(
                        "collector database {}: the reader stopped without an answer (a bug \
                         in privq, please report it)",
                        db.display()
                    )));
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
            if let Err(signal) = py.check_signals() {
                // An interrupt that falls between two statements is lost: repeat it
                // until the reader has stopped.
                loop {
                    handle.interrupt();
                    match wait(20) {
                        Err(RecvTimeoutError::Timeout) => {}
                        _ => return Err(signal),
                    }
                }
            }
        }
    })
}

/// `privq.ldp.aggregate`'s Rust half: the inputs checked against the campaign
/// and aggregated as `privq ldp aggregate` does; returns the rows of every
/// group's estimates, the outcome (`complete`, `rejected`, `nothing_usable`,
/// `undefined`) and the program's summary of what was read.
///
/// `databases`: collector databases (`privq serve --db`), read first, as
/// `privq ldp aggregate --db` reads one ([`read_database`]); the same file given
/// twice is refused ([`refuse_repeated_databases`]).
#[pyfunction]
#[pyo3(signature = (inputs, campaign, confidence, post, databases=Vec::new()))]
pub(crate) fn _ldp_aggregate<'py>(
    py: Python<'py>,
    inputs: Vec<Bound<'py, PyAny>>,
    campaign: &Bound<'py, PyCampaign>,
    confidence: f64,
    post: &str,
    databases: Vec<PathBuf>,
) -> PyResult<(Bound<'py, PyList>, &'static str, String, String)> {
    guard(|| {
        if !(confidence > 0.0 && confidence < 1.0) {
            return Err(PyValueError::new_err(format!(
                "confidence = {confidence} is not in (0, 1)"
            )));
        }
        let post: PostProcess = post
            .parse()
            .map_err(|e: String| PyValueError::new_err(format!("post: {e}")))?;
        let inputs = inputs
            .iter()
            .enumerate()
            .map(|(i, v)| input_arg(i, v))
            .collect::<PyResult<Vec<_>>>()?;
        let plan = campaign.get().plan.clone();
        let mut intake = Intake::new(plan);
        refuse_repeated_databases(&databases)?;
        for db in &databases {
            read_database(py, db, &mut intake)?;
        }
        let read = py.detach(|| -> Result<_, (String, std::io::Error)> {
            for (i, input) in inputs.iter().enumerate() {
                match input {
                    Input::Bytes(b) => intake.ingest_slice(&format!("reports[{i}]"), b),
                    Input::Path(p) => {
                        let name = p.display().to_string();
                        File::open(p)
                            .and_then(|mut f| intake.ingest_reader(&name, &mut f))
                            .map_err(|e| (name, e))?;
                    }
                }
            }
            let groups = intake.estimates(confidence, post);
            let outcome = intake.outcome_with(&groups);
            let mut summary = Vec::new();
            output::write_summary(intake.stats(), &groups, outcome, &mut summary)
                .map_err(|e| ("the summary".to_string(), e))?;
            let message = concise(intake.stats(), &groups, outcome);
            Ok((
                groups,
                outcome,
                String::from_utf8_lossy(&summary).into_owned(),
                message,
            ))
        });
        let (groups, outcome, summary, message) = read.map_err(|(name, e)| {
            let message = format!("{name}: {e}");
            match e.kind() {
                std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(message),
                std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(message),
                std::io::ErrorKind::IsADirectory => PyIsADirectoryError::new_err(message),
                _ => PyOSError::new_err(message),
            }
        })?;
        let rows = PyList::empty(py);
        for g in &groups {
            if let (Some(f), Some(pp)) = (&g.frequencies, &g.post_processed) {
                for (i, (e, p)) in f.items.iter().zip(pp).enumerate() {
                    let d = PyDict::new(py);
                    d.set_item("group", &g.label)?;
                    d.set_item("item", i)?;
                    d.set_item("estimate", e.value)?;
                    d.set_item("std_error", e.std_error())?;
                    d.set_item("ci_low", e.ci_low)?;
                    d.set_item("ci_high", e.ci_high)?;
                    d.set_item("post_processed", *p)?;
                    d.set_item("reports", g.n)?;
                    rows.append(d)?;
                }
            }
            if let Some(m) = &g.mean {
                let e = m.estimate;
                let d = PyDict::new(py);
                d.set_item("group", &g.label)?;
                d.set_item("item", py.None())?;
                d.set_item("estimate", e.value)?;
                d.set_item("std_error", e.std_error())?;
                d.set_item("ci_low", e.ci_low)?;
                d.set_item("ci_high", e.ci_high)?;
                d.set_item("post_processed", py.None())?;
                d.set_item("reports", g.n)?;
                rows.append(d)?;
            }
        }
        let outcome = match outcome {
            Outcome::Complete => "complete",
            Outcome::Rejected => "rejected",
            Outcome::NothingUsable => "nothing_usable",
            Outcome::Undefined => "undefined",
        };
        Ok((rows, outcome, summary, message))
    })
}

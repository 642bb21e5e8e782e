//! Chapter 6 in the local model: the SQ algorithms of Fig. 6.6 and Fig. 6.7 run
//! unchanged when each statistical query is answered by a group of devices
//! through privq's local SQ oracle ([`LocalSqSession`]) instead of the curator's
//! central oracle. Each device holds one record (a cell of the binary universe),
//! evaluates the query on it, and sends one randomized-response report in the
//! device wire format; the host sees only the reports.

use privq_core::Error as CoreError;
use privq_core::local::UnitValue;
use privq_core::local::sq::StatQuery;

use super::agnostic::{StatOracle, answer_once};
use super::release::ReleaseError;
use crate::central::MechanismError;
use crate::data::{CountHistogram, MemoryCap};

/// A simulated device's memory: its record, ledger and group slot.
const BYTES_PER_DEVICE: usize = 96;
use crate::ldp::fleet::FleetSeed;
use crate::ldp::sq::{LocalSqOracle, LocalSqSession};
use crate::query::Query;

/// A linear query as a device's statistical query: `q(x)` for the device's record
/// (a cell index), on the 2⁻³² grid (nearest point), clamped into `[0, 1]`.
#[derive(Debug, Clone, Copy)]
pub struct CellQuery<'q>(pub &'q Query);

impl StatQuery<usize> for CellQuery<'_> {
    fn evaluate(&self, cell: &usize) -> Result<UnitValue, CoreError> {
        let v = self.0.value(*cell);
        let v = if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) };
        UnitValue::from_bits((v * 4_294_967_296.0).round() as u64)
    }
}

/// One record per device: cell `u` repeated `counts[u]` times (a simulated fleet
/// holding exactly the histogram's records). Refuses a fleet whose records and
/// device ledgers would not fit the default [`MemoryCap`] (about 10⁷ devices).
pub fn device_records(data: &CountHistogram) -> Result<Vec<usize>, ReleaseError> {
    let n = data.total();
    MemoryCap::default()
        .check(usize::try_from(n).unwrap_or(usize::MAX), BYTES_PER_DEVICE)
        .map_err(|e| ReleaseError::Mechanism(MechanismError::Data(e)))?;
    let mut records = Vec::with_capacity(n as usize);
    for (u, &c) in data.counts().iter().enumerate() {
        records.extend(std::iter::repeat_n(u, c as usize));
    }
    Ok(records)
}

/// `STAT_τ` from a fleet of devices: class member `i` is asked once, of a fresh
/// group of devices (or of all devices at ε/k under the split strategy), and its
/// answer is reused. Its tolerance is the local oracle's τ for the smallest group,
/// so all members are within τ at once with probability at least `1 − β`.
#[derive(Debug)]
pub struct LocalStat<'a> {
    session: LocalSqSession<'a, usize>,
    answers: Vec<Option<f64>>,
    tolerance: f64,
}

impl<'a> LocalStat<'a> {
    /// An oracle for a class of `members` queries over the devices' `records`;
    /// `oracle` must have a budget of exactly `members` queries.
    pub fn new(
        oracle: &LocalSqOracle,
        records: &'a [usize],
        members: usize,
        seed: impl Into<FleetSeed>,
    ) -> Result<Self, ReleaseError> {
        if oracle.k() != members {
            return Err(ReleaseError::InvalidParameter(format!(
                "the local oracle answers {} queries, the class has {members}",
                oracle.k()
            )));
        }
        let session = oracle.session(records, seed).map_err(ReleaseError::Local)?;
        Ok(LocalStat {
            tolerance: oracle.worst_tau(records.len() as u64),
            session,
            answers: vec![None; members],
        })
    }

    /// Reports the host received so far.
    pub fn reports(&self) -> u64 {
        self.session.reports()
    }
}

impl StatOracle for LocalStat<'_> {
    fn stat(&mut self, index: usize, q: &Query) -> Result<f64, ReleaseError> {
        let session = &mut self.session;
        answer_once(&mut self.answers, index, || {
            Ok(session.answer(&CellQuery(q))?.estimate)
        })
    }

    fn tolerance(&self) -> f64 {
        self.tolerance
    }
}

//! The local statistical-query (SQ) oracle, host side.
//!
//! An SQ algorithm asks `k` statistical queries `q_j: record → [0, 1]` about a
//! fleet of `n` devices and needs each average `a_j = (1/n)·Σᵢ q_j(xᵢ)` within a
//! tolerance τ (Kearns' SQ model; SQ algorithms are exactly what the local model
//! can run, Kasiviswanathan et al. 2008). Each device answers with one
//! randomized-response bit per query ([`SqBit`], `p = e^{ε_r}/(e^{ε_r}+1)`) and
//! the host debiases the bit average: `â_j = (b̄_j(e^{ε_r}+1) − 1)/(e^{ε_r} − 1)`.
//! Every device spends at most ε over the whole run, enforced by its own
//! [`Ledger`]. Two strategies:
//!
//! * [`Strategy::Partition`]: the devices are split uniformly at random into `k`
//!   groups; group `j` (size `n_j ≥ ⌊n/k⌋`) answers query `j` with the full ε.
//!   **Tolerance** (probability ≥ 1 − β for all `k` answers at once):
//!   `τ_j = (1/(2p − 1) + 1)·√(ln(4k/β) / (2 n_j))`, `p = e^ε/(e^ε+1)` —
//!   Hoeffding for the randomized bits given the group, plus Hoeffding's bound for
//!   sampling the group without replacement, each at β/(2k), and a union bound.
//! * [`Strategy::Split`]: every device answers all `k` queries with ε/k each.
//!   **Tolerance**: `τ = (1/(2p′ − 1))·√(ln(2k/β) / (2n))`, `p′ = e^{ε/k}/(e^{ε/k}+1)`.
//!
//! Since `2p − 1 = tanh(ε/2) ≈ ε/2`, partition's τ grows like `√k/ε` and split's
//! like `k/ε`: partition wins for `k > 1` unless groups are tiny.
//!
//! ```
//! use privq_host::ldp::sq::{LocalSqOracle, Strategy};
//! use privq_host::local::sq::BinRange;
//! use privq_host::{Epsilon, histogram::Histogram};
//!
//! // 20 000 devices, each with a histogram of 8 readings over 4 bins.
//! let records: Vec<Histogram<4>> = (0..20_000)
//!     .map(|i| {
//!         let mut h = Histogram::<4>::categorical().unwrap();
//!         for r in 0..8 { h.record_index((i + r) % 4 % if i % 3 == 0 { 2 } else { 4 }).unwrap(); }
//!         h
//!     })
//!     .collect();
//! let queries = [BinRange::new(0, 1)?, BinRange::new(0, 2)?];
//! let oracle = LocalSqOracle::new(Epsilon::new(1, 1)?, queries.len(), 0.05, Strategy::Partition)?;
//! let run = oracle.simulate(&records, &queries, 42)?;   // seeded: simulation only
//! for (answer, truth) in run.answers.iter().zip(&run.truth) {
//!     assert!((answer.estimate - truth).abs() <= answer.tau);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;

use privq_core::Epsilon;
use privq_core::ledger::{Ledger, MemoryStore};
use privq_core::local::sq::StatQuery;
use privq_core::local::{LocalRandomizer, QueryId, SqBit};
use privq_core::sample::uniform_below;
use serde::{Deserialize, Serialize};

use super::aggregate::{AggregateError, Aggregator, ReportKind};
use super::decode::{RejectCounts, decode_report};
use super::fleet::device_rng;

/// How the fleet's budget is spread over the queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Strategy {
    /// `k` disjoint random groups, each answering one query with the full ε.
    Partition,
    /// Every device answers every query with ε/k.
    Split,
}

/// Errors of the local SQ oracle.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SqError {
    /// More queries than the oracle was built for (its budget), or more than 65536.
    TooManyQueries,
    /// No devices, or fewer devices than queries under [`Strategy::Partition`].
    TooFewDevices,
    /// β outside (0, 1).
    BadBeta,
    /// A core error (ε not encodable, budget refusal, …).
    Core(privq_core::Error),
    /// An aggregation error.
    Aggregate(AggregateError),
}

impl fmt::Display for SqError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SqError::TooManyQueries => {
                f.write_str("more statistical queries than the oracle's budget allows")
            }
            SqError::TooFewDevices => f.write_str("too few devices for the number of queries"),
            SqError::BadBeta => f.write_str("beta must lie strictly between 0 and 1"),
            SqError::Core(e) => write!(f, "{e}"),
            SqError::Aggregate(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SqError {}

impl From<privq_core::Error> for SqError {
    fn from(e: privq_core::Error) -> Self {
        SqError::Core(e)
    }
}

impl From<AggregateError> for SqError {
    fn from(e: AggregateError) -> Self {
        SqError::Aggregate(e)
    }
}

/// One query's answer with its tolerance.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SqAnswer {
    /// The query index (= report query id).
    pub query: u16,
    /// The debiased estimate of the fleet average.
    pub estimate: f64,
    /// The tolerance τ: all answers are within their τ with probability ≥ 1 − β.
    pub tau: f64,
    /// Reports that answered this query.
    pub reports: u64,
}

/// The local SQ oracle: `k` queries, a per-device budget ε, failure probability β.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LocalSqOracle {
    epsilon: Epsilon,
    k: usize,
    beta: f64,
    strategy: Strategy,
}

/// A simulated run: reports, answers and the true averages.
#[derive(Debug, Clone)]
pub struct SqRun {
    /// The answers, by query.
    pub answers: Vec<SqAnswer>,
    /// The exact fleet averages `a_j` (from the fixed-point query values).
    pub truth: Vec<f64>,
    /// Every report, in device order.
    pub reports: Vec<Vec<u8>>,
    /// Reports rejected during aggregation.
    pub rejected: RejectCounts,
}

impl LocalSqOracle {
    /// An oracle for `k` queries with per-device budget ε and failure probability β.
    pub fn new(
        epsilon: Epsilon,
        k: usize,
        beta: f64,
        strategy: Strategy,
    ) -> Result<LocalSqOracle, SqError> {
        if k == 0 || k > usize::from(u16::MAX) + 1 {
            return Err(SqError::TooManyQueries);
        }
        if !(beta > 0.0 && beta < 1.0) {
            return Err(SqError::BadBeta);
        }
        let o = LocalSqOracle {
            epsilon,
            k,
            beta,
            strategy,
        };
        SqBit::new(o.report_epsilon()?)?;
        Ok(o)
    }

    /// ε of each report: ε (partition) or ε/k (split).
    pub fn report_epsilon(&self) -> Result<Epsilon, SqError> {
        Ok(match self.strategy {
            Strategy::Partition => self.epsilon,
            Strategy::Split => self.epsilon.checked_div_int(self.k as u64)?,
        })
    }

    /// The tolerance for a query answered by `n_j` of `n` devices (see module docs).
    pub fn tau(&self, n_j: u64, n: u64) -> f64 {
        let k = self.k as f64;
        let e = match self.report_epsilon() {
            Ok(e) => e.to_f64().exp(),
            Err(_) => return f64::INFINITY,
        };
        let two_p_minus_1 = (e - 1.0) / (e + 1.0);
        match self.strategy {
            Strategy::Partition => {
                (1.0 / two_p_minus_1 + 1.0)
                    * ((4.0 * k / self.beta).ln() / (2.0 * n_j.max(1) as f64)).sqrt()
            }
            Strategy::Split => {
                (1.0 / two_p_minus_1)
                    * ((2.0 * k / self.beta).ln() / (2.0 * n.max(1) as f64)).sqrt()
            }
        }
    }

    /// Which queries device `i` answers: a uniformly random balanced partition
    /// (drawn with `rng`) or all queries.
    pub fn assignment<R: rand_core::Rng + ?Sized>(
        &self,
        n: usize,
        rng: &mut R,
    ) -> Result<Vec<u16>, SqError> {
        // Group of device i under Partition: position in a random permutation mod k.
        let mut groups: Vec<u16> = (0..n).map(|i| (i % self.k) as u16).collect();
        for i in (1..n).rev() {
            let j = uniform_below(i as u64 + 1, rng)? as usize;
            groups.swap(i, j);
        }
        Ok(groups)
    }

    /// Simulates the fleet: every device evaluates its queries on its record,
    /// debits its own ledger (cap ε) and emits [`SqBit`] reports; the host then
    /// aggregates them with [`LocalSqOracle::aggregate`]. Fixed seeds: simulation only.
    pub fn simulate<T, Q: StatQuery<T>>(
        &self,
        records: &[T],
        queries: &[Q],
        seed: u64,
    ) -> Result<SqRun, SqError> {
        if queries.len() > self.k {
            return Err(SqError::TooManyQueries);
        }
        let n = records.len();
        if n == 0 || (self.strategy == Strategy::Partition && n < queries.len()) {
            return Err(SqError::TooFewDevices);
        }
        let responder = SqBit::new(self.report_epsilon()?)?;
        let mut planner = device_rng(seed, u64::MAX);
        let groups = self.assignment(n, &mut planner)?;
        let mut truth = vec![0f64; queries.len()];
        let mut reports = Vec::with_capacity(n);
        for (i, (record, &group)) in records.iter().zip(&groups).enumerate() {
            let mut ledger = Ledger::open(MemoryStore::new(), self.epsilon)?;
            let mut rng = device_rng(seed, i as u64);
            for (j, q) in queries.iter().enumerate() {
                let value = q.evaluate(record)?;
                if let Some(t) = truth.get_mut(j) {
                    *t += value.to_bits() as f64 / 4_294_967_296.0;
                }
                if self.strategy == Strategy::Partition && usize::from(group) != j {
                    continue;
                }
                let mut buf = vec![0u8; responder.report_len()];
                ledger.release(&responder, &value, QueryId(j as u16), &mut rng, &mut buf)?;
                reports.push(buf);
            }
        }
        for t in &mut truth {
            *t /= n as f64;
        }
        let (answers, rejected) =
            self.aggregate(reports.iter().map(Vec::as_slice), queries.len(), n as u64)?;
        Ok(SqRun {
            answers,
            truth,
            reports,
            rejected,
        })
    }

    /// Aggregates SQ-bit reports for queries `0..k_used` from a fleet of `n`
    /// devices. Reports for other queries, ε or mechanisms are counted as rejected.
    pub fn aggregate<'a>(
        &self,
        reports: impl Iterator<Item = &'a [u8]>,
        k_used: usize,
        n: u64,
    ) -> Result<(Vec<SqAnswer>, RejectCounts), SqError> {
        if k_used > self.k {
            return Err(SqError::TooManyQueries);
        }
        let eps = self.report_epsilon()?;
        let responder = SqBit::new(eps)?;
        let mut aggs = BTreeMap::new();
        for j in 0..k_used {
            let kind = ReportKind::from_header(&responder.header(QueryId(j as u16)), 0);
            aggs.insert(j as u16, Aggregator::new(kind)?);
        }
        let mut rejected = RejectCounts::default();
        for bytes in reports {
            let outcome =
                decode_report(bytes).and_then(|r| match aggs.get_mut(&r.header.query.0) {
                    Some(agg) => agg.ingest(&r),
                    None => Err(super::decode::RejectReason::Mismatch),
                });
            if let Err(e) = outcome {
                rejected.record(e);
            }
        }
        let mut answers = Vec::with_capacity(k_used);
        for (j, agg) in aggs {
            let reports = agg.n();
            let estimate = if reports == 0 {
                f64::NAN
            } else {
                agg.mean(1.0 - self.beta)?.estimate.value
            };
            answers.push(SqAnswer {
                query: j,
                estimate,
                tau: self.tau(reports, n),
                reports,
            });
        }
        Ok((answers, rejected))
    }
}

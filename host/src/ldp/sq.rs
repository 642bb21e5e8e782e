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
//! With [`Responder::Laplace`] each device instead sends [`SqLaplace`]: its query
//! value plus exact grid-Laplace noise, and the host averages the values. Both
//! strategies work the same way; the tolerance is derived at
//! [`LocalSqOracle::tau`] (a Bernstein bound for the mean of discrete-Laplace
//! noise, plus the grid rounding and, for partition, the same sampling term).
//!
//! ```
//! use privq_host::ldp::sq::{LocalSqOracle, Strategy};
//! use privq_host::device::local::sq::BinRange;
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

use std::fmt;

use privq_core::Epsilon;
use privq_core::ledger::{Ledger, MemoryStore};
use privq_core::local::sq::StatQuery;
use privq_core::local::{LocalRandomizer, QueryId, SqBit, SqLaplace, UnitValue};
use privq_core::report::Header;
use privq_core::sample::uniform_below;
use serde::{Deserialize, Serialize};

use super::aggregate::{AggregateError, Aggregator, ReportKind};
use super::decode::{RejectCounts, RejectReason, decode_report};
use super::fleet::{FleetSeed, device_rng, device_rng_from};

/// How the fleet's budget is spread over the queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Strategy {
    /// `k` disjoint random groups, each answering one query with the full ε.
    Partition,
    /// Every device answers every query with ε/k.
    Split,
}

/// What each device sends for a query it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Responder {
    /// One randomized-response bit ([`SqBit`]).
    Bit,
    /// The query value plus grid-Laplace noise on the grid `2^grid_exp`,
    /// `grid_exp ∈ [−32, 0]` ([`SqLaplace`]).
    Laplace {
        /// The grid exponent `g` (grid γ = 2^g).
        grid_exp: i32,
    },
}

impl Responder {
    /// [`SqLaplace`]'s default grid `2^{−10}`.
    pub const LAPLACE: Responder = Responder::Laplace { grid_exp: -10 };
}

/// Errors of the local SQ oracle.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SqError {
    /// More queries than the oracle was built for (its budget), or more than 65536.
    #[error("more statistical queries than the oracle's budget allows")]
    TooManyQueries,
    /// No devices, or fewer devices than queries under [`Strategy::Partition`].
    #[error("too few devices for the number of queries")]
    TooFewDevices,
    /// β outside (0, 1).
    #[error("beta must lie strictly between 0 and 1")]
    BadBeta,
    /// A core error (ε not encodable, budget refusal, …).
    #[error(transparent)]
    Core(#[from] privq_core::Error),
    /// An aggregation error.
    #[error(transparent)]
    Aggregate(#[from] AggregateError),
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
    responder: Responder,
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
            responder: Responder::Bit,
        };
        SqBit::new(o.report_epsilon()?)?;
        Ok(o)
    }

    /// The same oracle with devices answering through `responder` (the default
    /// is [`Responder::Bit`]); errors if its parameters are invalid at the
    /// report ε (e.g. a grid exponent outside `[−32, 0]`).
    pub fn with_responder(self, responder: Responder) -> Result<LocalSqOracle, SqError> {
        if let Responder::Laplace { grid_exp } = responder
            && grid_exp < -32
        {
            return Err(SqError::Core(privq_core::Error::GridOutOfRange));
        }
        let o = LocalSqOracle { responder, ..self };
        o.report_header(QueryId(0))?;
        Ok(o)
    }

    /// The header of the responder's reports for query `q` (building the
    /// responder checks its parameters).
    fn report_header(&self, q: QueryId) -> Result<Header, SqError> {
        let eps = self.report_epsilon()?;
        Ok(match self.responder {
            Responder::Bit => SqBit::new(eps)?.header(q),
            Responder::Laplace { grid_exp } => SqLaplace::with_grid(eps, grid_exp)?.header(q),
        })
    }

    /// The query budget k.
    pub fn k(&self) -> usize {
        self.k
    }

    /// The per-device budget ε over the whole run.
    pub fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    /// The failure probability β shared by all `k` answers.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// The strategy.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// The largest tolerance of any answer of a fleet of `n` devices: τ for the
    /// smallest group, `⌊n/k⌋` devices, under partition (every device under split).
    pub fn worst_tau(&self, n: u64) -> f64 {
        match self.strategy {
            Strategy::Partition => self.tau(n / self.k as u64, n),
            Strategy::Split => self.tau(n, n),
        }
    }

    /// The fleet size the bit responder needs for tolerance τ on all `k` answers
    /// (the inverse of [`LocalSqOracle::tau`]): under partition
    /// `k·(1/(2p − 1) + 1)²·ln(4k/β)/(2τ²)`, under split
    /// `(1/(2p′ − 1))²·ln(2k/β)/(2τ²)`. `None` for the Laplace responder or τ ≤ 0.
    pub fn required_devices(&self, tau: f64) -> Option<f64> {
        if self.responder != Responder::Bit || tau.is_nan() || tau <= 0.0 {
            return None;
        }
        let k = self.k as f64;
        let eps = self.report_epsilon().ok()?.to_f64();
        let inv = 1.0 / (eps / 2.0).tanh();
        Some(match self.strategy {
            Strategy::Partition => {
                k * (inv + 1.0).powi(2) * (4.0 * k / self.beta).ln() / (2.0 * tau * tau)
            }
            Strategy::Split => inv.powi(2) * (2.0 * k / self.beta).ln() / (2.0 * tau * tau),
        })
    }

    /// The responder devices use.
    pub fn responder(&self) -> Responder {
        self.responder
    }

    /// ε of each report: ε (partition) or ε/k (split).
    pub fn report_epsilon(&self) -> Result<Epsilon, SqError> {
        Ok(match self.strategy {
            Strategy::Partition => self.epsilon,
            Strategy::Split => self.epsilon.checked_div_int(self.k as u64)?,
        })
    }

    /// The tolerance for a query answered by `n_j` of `n` devices: all `k`
    /// answers are within their τ at once with probability at least `1 − β`.
    ///
    /// **Bit responder**: see the module docs.
    ///
    /// **Laplace responder** (derivation). Let `ε_r` be the report ε (ε for
    /// partition, ε/k for split), `b = 1/ε_r`, and `γ = 2^g` the grid. Device `i`
    /// with query value `q_i` (a multiple of 2⁻³² in `[0, 1]`) reports
    /// `Y_i = γ·(s_i + Z_i)`, where `s_i` is the grid point nearest `q_i/γ` (ties
    /// upward), so `|γ s_i − q_i| ≤ γ/2` and `γ s_i ∈ [0, 1]`, and `Z_i` is the
    /// core's exact discrete Laplace, `P[Z = z] ∝ r^{|z|}`, `r = e^{−ε_r γ}`
    /// (scale `m/ε_r` grid steps with sensitivity `m = 1/γ` steps), independent
    /// across reports and of the data and the partition.
    ///
    /// 1. *Clamping.* Outputs outside the fixed-point range are clamped to its
    ///    last grid points, beyond `±(2³¹ − 1)`; as `γ s_i ∈ [0, 1]` a clamp needs
    ///    `|γ Z_i| > 2³¹ − 2`, of probability `≤ 2e^{−ε_r(2³¹−2)}` per report.
    ///    With `N` reports (`n` for partition, `nk` for split) the union bound
    ///    leaves `β′ = β − 2N e^{−ε_r(2³¹−2)}` for the rest (τ = ∞ if `β′ ≤ 0`);
    ///    off that event every `Y_i` is unclamped.
    /// 2. *Noise MGF.* `E e^{λγZ} = 1/(1 − sinh²(λγ/2)/sinh²(ε_r γ/2))` for
    ///    `|λ| < ε_r`, and `sinh(x)/x` increases in `|x|`, so it is at most
    ///    `1/(1 − b²λ²)`, the MGF of a continuous Laplace of scale `b`: the grid
    ///    noise is no heavier than continuous Laplace noise of the same ε.
    /// 3. *Bernstein.* `−ln(1 − y²) ≤ y²/(1 − y²) ≤ y²/(1 − y)` for
    ///    `y = b|λ| < 1`, so the log-MGF is `≤ (2b²)λ²/(2(1 − b|λ|))`: sub-gamma
    ///    with variance factor `2b²` and scale `b`. For the mean of `m` such
    ///    variables, `P[|mean| ≥ u] ≤ 2 exp(−m u²/(2(2b² + b u)))`; setting this
    ///    to `δ` and solving the quadratic in `u` gives
    ///    `u = b(ℓ + √(ℓ² + 4ℓ))` with `ℓ = ln(2/δ)/m`.
    /// 4. *Assembly.* The answer's error is (sampling) + (rounding, `≤ γ/2` in
    ///    absolute value) + (mean noise).
    ///    * Partition (`b = 1/ε`): Hoeffding's bound for the group sampled
    ///      without replacement at `β′/(2k)`, `√(ln(4k/β′)/(2n_j))`, plus the
    ///      noise at `δ = β′/(2k)` over `m = n_j` reports:
    ///      `τ_j = √(ln(4k/β′)/(2n_j)) + γ/2 + b(ℓ + √(ℓ² + 4ℓ))`,
    ///      `ℓ = ln(4k/β′)/n_j`.
    ///    * Split (`b = k/ε`, every device answers): no sampling term, the noise
    ///      at `δ = β′/k` over `m = n`:
    ///      `τ = γ/2 + b(ℓ + √(ℓ² + 4ℓ))`, `ℓ = ln(2k/β′)/n`.
    ///
    ///    A union bound over the `k` queries (and the clamping event) gives
    ///    probability `≥ 1 − β` for all answers at once. For small `ℓ` the noise
    ///    term is `≈ 2b√ℓ`, the normal quantile of a variance-`2b²/m` mean, so
    ///    the bound is tight up to the union bound. The host's f64 sums of grid
    ///    values are exact while partial sums stay below `2^{53+g}`.
    pub fn tau(&self, n_j: u64, n: u64) -> f64 {
        let k = self.k as f64;
        let eps = match self.report_epsilon() {
            Ok(e) => e.to_f64(),
            Err(_) => return f64::INFINITY,
        };
        match self.responder {
            Responder::Bit => {
                let e = eps.exp();
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
            Responder::Laplace { grid_exp } => {
                let b = 1.0 / eps;
                let gamma = 2f64.powi(grid_exp);
                let reports = match self.strategy {
                    Strategy::Partition => n as f64,
                    Strategy::Split => n as f64 * k,
                };
                let clamp = 2.0 * reports * (-eps * (2f64.powi(31) - 2.0)).exp();
                let beta = self.beta - clamp;
                if beta.is_nan() || beta <= 0.0 {
                    return f64::INFINITY;
                }
                match self.strategy {
                    Strategy::Partition => {
                        let m = n_j.max(1) as f64;
                        let log = (4.0 * k / beta).ln();
                        (log / (2.0 * m)).sqrt() + gamma / 2.0 + laplace_mean_bound(b, log / m)
                    }
                    Strategy::Split => {
                        let log = (2.0 * k / beta).ln();
                        gamma / 2.0 + laplace_mean_bound(b, log / n.max(1) as f64)
                    }
                }
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
    /// debits its own ledger (cap ε) and emits [`SqBit`] (or [`SqLaplace`])
    /// reports; the host then
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
        match self.responder {
            Responder::Bit => {
                self.simulate_with(&SqBit::new(self.report_epsilon()?)?, records, queries, seed)
            }
            Responder::Laplace { grid_exp } => self.simulate_with(
                &SqLaplace::with_grid(self.report_epsilon()?, grid_exp)?,
                records,
                queries,
                seed,
            ),
        }
    }

    fn simulate_with<T, Q: StatQuery<T>, L: LocalRandomizer<Input = UnitValue>>(
        &self,
        responder: &L,
        records: &[T],
        queries: &[Q],
        seed: u64,
    ) -> Result<SqRun, SqError> {
        let n = records.len();
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
                ledger.release(responder, &value, QueryId(j as u16), &mut rng, &mut buf)?;
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

    /// Aggregates the responder's reports for queries `0..k_used` from a fleet of
    /// `n` devices. Reports for other queries, ε or mechanisms are counted as
    /// rejected ([`RejectReason::Mismatch`]), malformed ones under their reason.
    ///
    /// Reports are routed to their query's aggregator by the header's query
    /// field, a chunk at a time, and each query's share of a chunk goes through
    /// [`Aggregator::ingest_batch`] in input order: the answers and rejection
    /// counts are exactly those of decoding and ingesting one report at a time
    /// ([`aggregate_one_by_one`](LocalSqOracle::aggregate_one_by_one)).
    pub fn aggregate<'a>(
        &self,
        reports: impl Iterator<Item = &'a [u8]>,
        k_used: usize,
        n: u64,
    ) -> Result<(Vec<SqAnswer>, RejectCounts), SqError> {
        let mut aggs = self.aggregators(k_used)?;
        let mut rejected = RejectCounts::default();
        let mut routed: Vec<Vec<&'a [u8]>> = vec![Vec::new(); aggs.len()];
        let mut other: Vec<&'a [u8]> = Vec::new();
        let mut reports = reports.peekable();
        while reports.peek().is_some() {
            for bytes in reports.by_ref().take(ROUTE_CHUNK) {
                // The header's query id (docs/src/report-format.md: bytes 2..4, LE).
                // A report whose bytes there name no aggregator is rejected below
                // exactly as decoding would; one that does is fully decoded by
                // its aggregator, which checks its kind.
                let slot = bytes
                    .get(QUERY_BYTES)
                    .and_then(|q| <[u8; 2]>::try_from(q).ok())
                    .map(|q| usize::from(u16::from_le_bytes(q)))
                    .and_then(|j| routed.get_mut(j));
                match slot {
                    Some(queue) => queue.push(bytes),
                    None => other.push(bytes),
                }
            }
            for (agg, queue) in aggs.iter_mut().zip(&mut routed) {
                agg.ingest_batch(queue.drain(..), &mut rejected);
            }
            for bytes in other.drain(..) {
                rejected.record(decode_report(bytes).err().unwrap_or(RejectReason::Mismatch));
            }
        }
        Ok((self.answers(aggs, n)?, rejected))
    }

    /// [`aggregate`](LocalSqOracle::aggregate) one report at a time: decode,
    /// route by the decoded query id, ingest. The reference for the batched path.
    pub fn aggregate_one_by_one<'a>(
        &self,
        reports: impl Iterator<Item = &'a [u8]>,
        k_used: usize,
        n: u64,
    ) -> Result<(Vec<SqAnswer>, RejectCounts), SqError> {
        let mut aggs = self.aggregators(k_used)?;
        let mut rejected = RejectCounts::default();
        for bytes in reports {
            let outcome = decode_report(bytes).and_then(|r| {
                match aggs.get_mut(usize::from(r.header.query.0)) {
                    Some(agg) => agg.ingest(&r),
                    None => Err(RejectReason::Mismatch),
                }
            });
            if let Err(e) = outcome {
                rejected.record(e);
            }
        }
        Ok((self.answers(aggs, n)?, rejected))
    }

    /// One empty aggregator per query `0..k_used` for the responder's reports.
    fn aggregators(&self, k_used: usize) -> Result<Vec<Aggregator>, SqError> {
        if k_used > self.k {
            return Err(SqError::TooManyQueries);
        }
        let base = self.report_header(QueryId(0))?;
        (0..k_used)
            .map(|j| {
                let query = QueryId(u16::try_from(j).map_err(|_| SqError::TooManyQueries)?);
                let header = Header { query, ..base };
                Ok(Aggregator::new(ReportKind::from_header(&header, 0))?)
            })
            .collect()
    }

    /// The answers of per-query aggregators.
    fn answers(&self, aggs: Vec<Aggregator>, n: u64) -> Result<Vec<SqAnswer>, SqError> {
        let mut answers = Vec::with_capacity(aggs.len());
        for (j, agg) in aggs.into_iter().enumerate() {
            let reports = agg.n();
            let estimate = if reports == 0 {
                f64::NAN
            } else {
                agg.mean(1.0 - self.beta)?.estimate.value
            };
            answers.push(SqAnswer {
                query: u16::try_from(j).map_err(|_| SqError::TooManyQueries)?,
                estimate,
                tau: self.tau(reports, n),
                reports,
            });
        }
        Ok(answers)
    }
}

/// An adaptive run of a [`LocalSqOracle`] over a simulated fleet: the SQ
/// algorithms of thesis Chapter 6 choose each statistical query from the answers
/// to the previous ones, so the queries cannot be handed over as one batch.
///
/// Under [`Strategy::Partition`] the devices are split into the `k` groups when
/// the session opens (data-independent: a seeded uniform partition), and the j-th
/// query asked goes to group j; under [`Strategy::Split`] every device answers
/// every query with ε/k. Each device's reports go through its own [`Ledger`] with
/// lifetime cap ε, and the host sees only the wire-format reports, so the whole
/// run is ε-LDP per device whatever the queries are; asking more than `k`
/// queries is refused ([`SqError::TooManyQueries`]). The tolerance of every
/// answer is [`LocalSqOracle::tau`] for its group, all `k` at once with
/// probability at least `1 − β`, with one caveat for partition: its sampling
/// term (Hoeffding for the group, drawn without replacement) is proved for
/// queries fixed in advance. An adaptively chosen query j depends on the other
/// groups' reports, hence on which records group j did not get; the bound then
/// holds for the population the records are drawn from i.i.d. (each group a fresh
/// sample, as in the SQ model), not for the fleet's own average. Split has no
/// sampling term. Device ledgers live for one session: the guarantee is ε per
/// device per session, and sessions compose **only when each session has its own
/// fleet seed**: two sessions with one seed draw the same device randomness, and
/// their reports together can reveal a device's value. Fixed seeds: simulation only.
///
/// ```
/// use privq_host::ldp::sq::{LocalSqOracle, Strategy};
/// use privq_host::device::local::{sq::StatQuery, UnitValue};
/// use privq_host::Epsilon;
///
/// /// "Is the record's attribute `.0` set?"
/// struct Bit(u32);
/// impl StatQuery<u64> for Bit {
///     fn evaluate(&self, x: &u64) -> Result<UnitValue, privq_host::Error> {
///         Ok(if x >> self.0 & 1 == 1 { UnitValue::ONE } else { UnitValue::ZERO })
///     }
/// }
/// let records: Vec<u64> = (0..40_000).map(|i| i % 4).collect(); // bits 0 and 1 half set
/// let oracle = LocalSqOracle::new(Epsilon::new(1, 1)?, 2, 0.05, Strategy::Partition)?;
/// let mut session = oracle.session(&records, 7)?;
/// let first = session.answer(&Bit(0))?;
/// // The second query may depend on the first answer.
/// let second = session.answer(&Bit(if first.estimate > 0.4 { 1 } else { 0 }))?;
/// assert!((second.estimate - 0.5).abs() <= second.tau);
/// assert!(session.answer(&Bit(0)).is_err()); // a third query exceeds k = 2
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct LocalSqSession<'a, T> {
    oracle: LocalSqOracle,
    records: &'a [T],
    /// Under Partition, group j's devices; empty under Split (every device).
    groups: Vec<Vec<u32>>,
    ledgers: Vec<Ledger<MemoryStore>>,
    seed: FleetSeed,
    asked: usize,
    reports: u64,
    rejected: RejectCounts,
}

impl<T> fmt::Debug for LocalSqSession<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The records are the private data: never printed.
        f.debug_struct("LocalSqSession")
            .field("oracle", &self.oracle)
            .field("devices", &self.records.len())
            .field("asked", &self.asked)
            .field("reports", &self.reports)
            .finish_non_exhaustive()
    }
}

impl LocalSqOracle {
    /// Opens an adaptive session over `records` (one per device); see
    /// [`LocalSqSession`]. Errors with [`SqError::TooFewDevices`] when there are
    /// no devices, fewer than `k` under Partition, or more than 2³².
    pub fn session<'a, T>(
        &self,
        records: &'a [T],
        seed: impl Into<FleetSeed>,
    ) -> Result<LocalSqSession<'a, T>, SqError> {
        let seed = seed.into();
        let n = records.len();
        if n == 0 || n > u32::MAX as usize || (self.strategy == Strategy::Partition && n < self.k) {
            return Err(SqError::TooFewDevices);
        }
        let groups = match self.strategy {
            Strategy::Partition => {
                let mut planner = device_rng_from(&seed, u64::MAX);
                let mut groups = vec![Vec::with_capacity(n / self.k + 1); self.k];
                for (i, g) in self.assignment(n, &mut planner)?.into_iter().enumerate() {
                    if let Some(members) = groups.get_mut(usize::from(g)) {
                        members.push(i as u32);
                    }
                }
                groups
            }
            Strategy::Split => Vec::new(),
        };
        let ledgers = (0..n)
            .map(|_| Ledger::open(MemoryStore::new(), self.epsilon))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(LocalSqSession {
            oracle: *self,
            records,
            groups,
            ledgers,
            seed,
            asked: 0,
            reports: 0,
            rejected: RejectCounts::default(),
        })
    }
}

impl<T> LocalSqSession<'_, T> {
    /// Asks the next statistical query: its devices evaluate it on their records
    /// and send one report each through their ledgers; the host aggregates them.
    pub fn answer<Q: StatQuery<T> + ?Sized>(&mut self, q: &Q) -> Result<SqAnswer, SqError> {
        let eps = self.oracle.report_epsilon()?;
        match self.oracle.responder {
            Responder::Bit => self.answer_with(&SqBit::new(eps)?, q),
            Responder::Laplace { grid_exp } => {
                self.answer_with(&SqLaplace::with_grid(eps, grid_exp)?, q)
            }
        }
    }

    fn answer_with<Q: StatQuery<T> + ?Sized, L: LocalRandomizer<Input = UnitValue>>(
        &mut self,
        responder: &L,
        q: &Q,
    ) -> Result<SqAnswer, SqError> {
        let j = self.asked;
        if j >= self.oracle.k {
            return Err(SqError::TooManyQueries);
        }
        let query = QueryId(u16::try_from(j).map_err(|_| SqError::TooManyQueries)?);
        let devices: Box<dyn Iterator<Item = usize> + '_> = match self.oracle.strategy {
            Strategy::Partition => Box::new(
                self.groups
                    .get(j)
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                    .iter()
                    .map(|&i| i as usize),
            ),
            Strategy::Split => Box::new(0..self.records.len()),
        };
        let len = responder.report_len();
        let mut reports = Vec::new();
        for i in devices {
            let (Some(record), Some(ledger)) = (self.records.get(i), self.ledgers.get_mut(i))
            else {
                continue;
            };
            let value = q.evaluate(record)?;
            // One stream per (device, query): the device's draws for query j.
            let mut rng = device_rng_from(&self.seed, i as u64);
            rng.set_stream(j as u64);
            let start = reports.len();
            reports.resize(start + len, 0);
            ledger.release(responder, &value, query, &mut rng, &mut reports[start..])?;
        }
        self.asked += 1;
        let base = self.oracle.report_header(query)?;
        let mut agg = Aggregator::new(ReportKind::from_header(&base, 0))?;
        agg.ingest_batch(reports.chunks_exact(len), &mut self.rejected);
        self.reports += agg.n();
        let mut answers = self.oracle.answers(vec![agg], self.records.len() as u64)?;
        let mut answer = answers.pop().ok_or(SqError::TooManyQueries)?;
        answer.query = query.0;
        Ok(answer)
    }

    /// Queries asked so far.
    pub fn asked(&self) -> usize {
        self.asked
    }

    /// Reports the host accepted so far (every device's reports, all queries).
    pub fn reports(&self) -> u64 {
        self.reports
    }

    /// The largest ε any device has spent so far (exact; at most the
    /// oracle's ε, which each device's ledger enforces).
    pub fn max_device_spent(&self) -> f64 {
        self.ledgers
            .iter()
            .map(|l| {
                let s = l.spent();
                s.num() as f64 / s.den() as f64
            })
            .fold(0.0, f64::max)
    }

    /// Reports rejected during aggregation (none in a simulation; kept so a
    /// regression cannot hide).
    pub fn rejected(&self) -> &RejectCounts {
        &self.rejected
    }

    /// The oracle.
    pub fn oracle(&self) -> &LocalSqOracle {
        &self.oracle
    }
}

/// Reports routed per batch in [`LocalSqOracle::aggregate`].
const ROUTE_CHUNK: usize = 4096;

/// Where a report header holds the query id (little-endian u16).
const QUERY_BYTES: std::ops::Range<usize> = 2..4;

/// `b(ℓ + √(ℓ² + 4ℓ))`: the deviation `u` of a mean of `m` variables whose
/// log-MGF is at most `−ln(1 − b²λ²)` with `P[|mean| ≥ u] ≤ 2e^{−m u²/(2(2b² + bu))}`
/// equal to `δ`, for `ℓ = ln(2/δ)/m` (see [`LocalSqOracle::tau`]).
pub fn laplace_mean_bound(b: f64, ell: f64) -> f64 {
    b * (ell + (ell * ell + 4.0 * ell).sqrt())
}

//! Mergeable, serializable aggregators for every local randomizer.
//!
//! An [`Aggregator`] is keyed by a [`ReportKind`] (mechanism, ε, parameter, query,
//! and `g` for local hashing); it accepts only reports of that kind. Its state is
//! plain counts, so aggregating two disjoint report sets and [merging](Aggregator::merge)
//! gives exactly the state of aggregating their union (the tests check equality of
//! states), and the state serializes with serde (JSON, postcard, …).
//!
//! Frequency mechanisms (RR, GRR, SUE, OUE, OLH, Hadamard) yield
//! [`FrequencyEstimates`]; mean mechanisms (1BitMean, SQ bit, SQ Laplace) yield a
//! [`MeanEstimate`].
//!
//! Many reports at once: [`Aggregator::ingest_batch`] (one thread) and
//! [`aggregate_packed`] (back-to-back reports on several threads) give exactly the
//! state and rejection counts of ingesting the reports one by one, and for unary
//! encoding (SUE, OUE) count the bit vectors with the bit-sliced
//! [`UnaryCounter`] instead of bit by bit.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::fmt;
use std::thread;

use privq_core::Epsilon;
use privq_core::local::QueryId;
use privq_core::report::{
    HEADER_LEN, Header, MechanismId, Payload, Report, encode_header, hadamard_order,
};
use serde::{Deserialize, Serialize};

use super::decode::{RejectCounts, RejectReason, decode_report};
use super::estimate::{Estimate, PureProtocol, z_value};
use super::unary::{BLOCK, UnaryCounter};

/// What an aggregator accepts: everything in a report header plus OLH's `g`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ReportKind {
    /// Wire mechanism id.
    pub mechanism: u8,
    /// ε numerator (reduced).
    pub epsilon_num: u64,
    /// ε denominator (reduced).
    pub epsilon_den: u64,
    /// The header parameter (domain size, bound, grid exponent).
    pub param: u32,
    /// The query id.
    pub query: u16,
    /// Local hashing's bucket count (0 for other mechanisms).
    pub g: u16,
}

impl ReportKind {
    /// The kind of a decoded report.
    pub fn of(report: &Report<'_>) -> ReportKind {
        let g = match report.payload {
            Payload::Olh(o) => o.g,
            _ => 0,
        };
        ReportKind::from_header(&report.header, g)
    }

    /// The kind for a header (pass `g` for local hashing, else 0).
    pub fn from_header(h: &Header, g: u16) -> ReportKind {
        ReportKind {
            mechanism: h.mechanism as u8,
            epsilon_num: h.epsilon.num(),
            epsilon_den: h.epsilon.den(),
            param: h.param,
            query: h.query.0,
            g,
        }
    }

    /// The mechanism.
    pub fn mechanism(&self) -> Option<MechanismId> {
        MechanismId::from_u8(self.mechanism)
    }

    /// ε as a float (estimation only).
    pub fn epsilon_f64(&self) -> f64 {
        self.epsilon_num as f64 / self.epsilon_den as f64
    }

    /// ε exactly.
    pub fn epsilon(&self) -> Option<Epsilon> {
        Epsilon::new(self.epsilon_num, self.epsilon_den).ok()
    }

    /// The number of items whose frequencies are estimated (frequency mechanisms).
    pub fn domain(&self) -> Option<u32> {
        match self.mechanism()? {
            MechanismId::BinaryRr => Some(2),
            MechanismId::Grr
            | MechanismId::Sue
            | MechanismId::Oue
            | MechanismId::Olh
            | MechanismId::Hadamard => Some(self.param),
            _ => None,
        }
    }

    /// The items an aggregate of this kind estimates: its domain, or 1 for a mean.
    pub fn items(&self) -> u64 {
        self.domain().map_or(1, u64::from)
    }

    /// The pure-protocol probabilities `(p, q)` of a frequency mechanism.
    pub fn protocol(&self) -> Option<PureProtocol> {
        let e = self.epsilon_f64().exp();
        let d = f64::from(self.domain()?);
        Some(match self.mechanism()? {
            MechanismId::BinaryRr | MechanismId::Grr => PureProtocol {
                p: e / (e + d - 1.0),
                q: 1.0 / (e + d - 1.0),
            },
            MechanismId::Sue => {
                let h = (self.epsilon_f64() / 2.0).exp();
                PureProtocol {
                    p: h / (h + 1.0),
                    q: 1.0 / (h + 1.0),
                }
            }
            MechanismId::Oue => PureProtocol {
                p: 0.5,
                q: 1.0 / (e + 1.0),
            },
            MechanismId::Olh => {
                let g = f64::from(self.g);
                PureProtocol {
                    p: e / (e + g - 1.0),
                    q: 1.0 / g,
                }
            }
            MechanismId::Hadamard => PureProtocol {
                p: e / (e + 1.0),
                q: 0.5,
            },
            _ => return None,
        })
    }
}

/// A readable label, e.g. `oue (epsilon 1, domain 100, query 0)` or
/// `olh (epsilon 1/2, domain 64, g 2, query 3)`.
impl fmt::Display for ReportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mech = self.mechanism();
        let name = mech.map_or("unknown mechanism", MechanismId::name);
        write!(f, "{name} (epsilon ")?;
        match self.epsilon() {
            Some(e) => write!(f, "{e}")?,
            None => write!(f, "{}/{}", self.epsilon_num, self.epsilon_den)?,
        }
        match mech {
            Some(MechanismId::SqBit) => {}
            Some(MechanismId::OneBitMean) => write!(f, ", bound {}", self.param)?,
            Some(MechanismId::SqLaplace) => write!(f, ", grid 2^{}", self.param as i32)?,
            _ => write!(f, ", domain {}", self.param)?,
        }
        if self.g != 0 {
            write!(f, ", g {}", self.g)?;
        }
        write!(f, ", query {})", self.query)
    }
}

/// The public multiple `c` of the noise scale `b = 1/ε` by which an SQ-Laplace
/// value may leave the query range `[0, 1]` before [`clip_sq_laplace`] clips it.
pub const SQ_LAPLACE_CLIP_SCALES: f64 = 20.0;

/// Clips a released SQ-Laplace value `x` of a report of `kind` to
/// `[−c·b, 1 + c·b]`, `b = 1/ε` (the noise scale for the query range `[0, 1]`,
/// whose sensitivity 1 the grid `2^k ≤ 1` leaves unchanged),
/// `c` = [`SQ_LAPLACE_CLIP_SCALES`]. A device's local ε cap bounds its privacy loss,
/// not its influence: without the clip one report of value ±2³¹ moves the mean of
/// any group. The bound depends only on the header (public), so the clip is
/// post-processing. An honest report is clipped only if its noise exceeds `c·b`
/// in magnitude: grid-Laplace noise `γ·Z`, `P[Z = z] ∝ e^{−εγ|z|}`, has
/// `P[|γZ| > t] ≤ 2e^{−εt}`, so with probability at most `2e^{−20}` ≈ 4.1·10⁻⁹ per
/// report; only then does the clip bias the mean (by less than the clipped excess
/// over `n`). Every aggregation path (files, the collector, its startup rebuild)
/// adds SQ-Laplace values through [`Aggregator::ingest`], which calls this.
///
/// ```
/// use privq_host::ldp::aggregate::{clip_sq_laplace, ReportKind};
/// // SQ Laplace (mechanism 9), ε = 1/2: b = 2, values kept within [−40, 41].
/// let kind = ReportKind { mechanism: 9, epsilon_num: 1, epsilon_den: 2, param: (-10i32) as u32, query: 0, g: 0 };
/// assert_eq!(clip_sq_laplace(&kind, 2147483648.0), 41.0);
/// assert_eq!(clip_sq_laplace(&kind, -1e9), -40.0);
/// assert_eq!(clip_sq_laplace(&kind, 0.75), 0.75);
/// ```
pub fn clip_sq_laplace(kind: &ReportKind, x: f64) -> f64 {
    if kind.epsilon_num == 0 {
        return x;
    }
    let margin = SQ_LAPLACE_CLIP_SCALES * kind.epsilon_den as f64 / kind.epsilon_num as f64;
    x.clamp(-margin, 1.0 + margin)
}

/// Errors of aggregator construction, merging and estimation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AggregateError {
    /// Merging aggregators of different kinds.
    #[error("cannot merge aggregators of different report kinds")]
    KindMismatch,
    /// No reports: nothing to estimate.
    #[error("no reports have been aggregated")]
    Empty,
    /// Frequencies asked of a mean mechanism or vice versa.
    #[error("this mechanism does not estimate that quantity")]
    WrongEstimate,
    /// The kind's parameters are not valid (unknown mechanism, zero domain, …).
    #[error("invalid report kind")]
    InvalidKind,
    /// A state's SQ-Laplace sums are not those of clipped values (a state saved
    /// before values were clipped, or edited): refused rather than merged.
    #[error(
        "the SQ-Laplace sums exceed those of n clipped values (a state saved before clipping, or \
         edited)"
    )]
    Unclipped,
    /// A state's counts could not come from `n` reports (counts of a one-hot
    /// mechanism that do not sum to `n`, a unary or OLH count above `n`, counts
    /// of an SQ-Laplace state): refused rather than merged.
    #[error("the counts could not come from n reports (a damaged or edited state)")]
    Inconsistent,
}

/// Aggregation state for one [`ReportKind`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Aggregator {
    kind: ReportKind,
    /// Reports accepted.
    n: u64,
    /// Per-slot counts: reported item (RR, GRR), set bit (SUE, OUE), supported
    /// item (OLH), reported index (Hadamard, `K` slots), or `[zeros, ones]` (bit
    /// mechanisms). Empty for SQ Laplace.
    counts: Vec<u64>,
    /// Sum and sum of squares of SQ Laplace values.
    sum: f64,
    sum_sq: f64,
}

impl Aggregator {
    /// An empty aggregator for reports of `kind`.
    pub fn new(kind: ReportKind) -> Result<Aggregator, AggregateError> {
        let mech = kind.mechanism().ok_or(AggregateError::InvalidKind)?;
        let slots = match mech {
            MechanismId::BinaryRr | MechanismId::OneBitMean | MechanismId::SqBit => 2,
            MechanismId::Grr | MechanismId::Sue | MechanismId::Oue | MechanismId::Olh => {
                kind.param as usize
            }
            MechanismId::Hadamard => usize::try_from(hadamard_order(kind.param))
                .map_err(|_| AggregateError::InvalidKind)?,
            _ => 0,
        };
        if mech == MechanismId::Olh && kind.g < 2 {
            return Err(AggregateError::InvalidKind);
        }
        Ok(Aggregator {
            kind,
            n: 0,
            counts: vec![0; slots],
            sum: 0.0,
            sum_sq: 0.0,
        })
    }

    /// An empty aggregator for the kind of the given (valid) report bytes.
    ///
    /// This trusts the report's header: its domain decides the memory
    /// allocated. For untrusted reports use [`crate::ldp::intake::Intake`],
    /// which takes the kind from a public campaign.
    pub fn for_report(bytes: &[u8]) -> Result<Aggregator, RejectReason> {
        let r = decode_report(bytes)?;
        Aggregator::new(ReportKind::of(&r)).map_err(|_| RejectReason::Parameter)
    }

    /// An empty aggregator for a header (and OLH `g`).
    pub fn for_kind_of(header: &Header, g: u16) -> Result<Aggregator, AggregateError> {
        Aggregator::new(ReportKind::from_header(header, g))
    }

    /// The kind.
    pub fn kind(&self) -> &ReportKind {
        &self.kind
    }

    /// Reports accepted.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The raw per-slot counts.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// Decodes, validates and adds one report.
    pub fn ingest_bytes(&mut self, bytes: &[u8]) -> Result<(), RejectReason> {
        let r = decode_report(bytes)?;
        self.ingest(&r)
    }

    /// Adds one decoded report; [`RejectReason::Mismatch`] if it is of another kind.
    pub fn ingest(&mut self, r: &Report<'_>) -> Result<(), RejectReason> {
        if ReportKind::of(r) != self.kind {
            return Err(RejectReason::Mismatch);
        }
        match r.payload {
            Payload::Bit(b) => bump(&mut self.counts, usize::from(b)),
            Payload::Index(i) => bump(&mut self.counts, i as usize),
            Payload::Bits(bits) => add_bits(&mut self.counts, bits),
            Payload::Olh(o) => {
                add_olh_support(&mut self.counts, o.hash.parts(), u32::from(o.g), o.value)
            }
            Payload::Value(v) => {
                let x = clip_sq_laplace(&self.kind, v.to_f64());
                self.sum += x;
                self.sum_sq += x * x;
            }
        }
        self.n += 1;
        Ok(())
    }

    /// Decodes, validates and adds every report of `reports`; each rejected report
    /// is counted in `rejected` under its [`RejectReason`]. Returns the number of
    /// reports accepted.
    ///
    /// The resulting state and rejection counts are exactly those of calling
    /// [`ingest_bytes`](Aggregator::ingest_bytes) on each report in turn and
    /// recording its errors. For unary encoding (SUE, OUE) reports whose 12 header
    /// bytes are the canonical encoding of this aggregator's kind, whose length is
    /// exact and whose padding bits are zero are recognized by comparing bytes, and
    /// their bit vectors are summed by a bit-sliced [`UnaryCounter`]; every other
    /// report (malformed ones, and valid ones with a non-canonical header such as
    /// an unreduced ε) takes the full [`decode_report`] path.
    ///
    /// ```
    /// use privq_host::ldp::aggregate::Aggregator;
    /// use privq_host::ldp::decode::RejectCounts;
    /// use privq_host::ldp::fleet::{Fleet, MechanismSpec};
    /// use privq_host::Epsilon;
    ///
    /// let spec = MechanismSpec::parse("oue", Epsilon::new(1, 1)?, 100)?;
    /// let reports = Fleet::from_weights(&[1.0; 100], 1000)?.privatize(&spec, 3)?;
    /// let mut fast = Aggregator::new(reports.kind())?;
    /// let mut rejected = RejectCounts::default();
    /// assert_eq!(fast.ingest_batch(reports.iter(), &mut rejected), 1000);
    /// let mut slow = Aggregator::new(reports.kind())?;
    /// for r in reports.iter() {
    ///     slow.ingest_bytes(r)?;
    /// }
    /// assert_eq!(fast, slow);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ingest_batch<'r>(
        &mut self,
        reports: impl IntoIterator<Item = &'r [u8]>,
        rejected: &mut RejectCounts,
    ) -> u64 {
        let before = self.n;
        match UnaryFastPath::for_kind(&self.kind) {
            Some(fast) => {
                let mut batch = UnaryBatch::new();
                for r in reports {
                    if fast.accepts(r) {
                        batch.push(&r[HEADER_LEN..], &mut self.counts);
                        self.n += 1;
                    } else if let Err(e) = self.ingest_bytes(r) {
                        rejected.record(e);
                    }
                }
                batch.finish(&mut self.counts);
            }
            _ => {
                for r in reports {
                    if let Err(e) = self.ingest_bytes(r) {
                        rejected.record(e);
                    }
                }
            }
        }
        self.n - before
    }

    /// Adds another aggregator's state (same kind): the result equals aggregating
    /// the union of both report sets.
    pub fn merge(&mut self, other: &Aggregator) -> Result<(), AggregateError> {
        if other.kind != self.kind || other.counts.len() != self.counts.len() {
            return Err(AggregateError::KindMismatch);
        }
        if !other.sums_are_clipped() {
            return Err(AggregateError::Unclipped);
        }
        if !other.counts_are_consistent() {
            return Err(AggregateError::Inconsistent);
        }
        self.n = self.n.saturating_add(other.n);
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a = a.saturating_add(*b);
        }
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
        Ok(())
    }

    /// Whether the counts could come from `n` reports of the kind: a report of a
    /// one-hot mechanism (a bit, an index) adds one to exactly one count, one of
    /// unary encoding or OLH adds at most one to each, an SQ-Laplace report none.
    fn counts_are_consistent(&self) -> bool {
        let total = || self.counts.iter().map(|&c| u128::from(c)).sum::<u128>();
        match self.kind.mechanism() {
            Some(
                MechanismId::BinaryRr
                | MechanismId::OneBitMean
                | MechanismId::SqBit
                | MechanismId::Grr
                | MechanismId::Hadamard,
            ) => total() == u128::from(self.n),
            Some(MechanismId::Sue | MechanismId::Oue | MechanismId::Olh) => {
                self.counts.iter().all(|&c| c <= self.n)
            }
            Some(MechanismId::SqLaplace) => self.counts.iter().all(|&c| c == 0),
            _ => false,
        }
    }

    /// Whether the SQ-Laplace sums could come from `n` values clipped by
    /// [`clip_sq_laplace`] (with a relative allowance of 10⁻⁹ for the float sums);
    /// true for the other mechanisms, whose sums stay 0.
    fn sums_are_clipped(&self) -> bool {
        let lo = clip_sq_laplace(&self.kind, f64::NEG_INFINITY);
        let hi = clip_sq_laplace(&self.kind, f64::INFINITY);
        if !lo.is_finite() || !hi.is_finite() {
            return self.sum.is_finite() && self.sum_sq.is_finite();
        }
        let n = self.n as f64;
        let slack = 1.0 + 1e-9;
        let top = lo.abs().max(hi.abs());
        self.sum >= lo * n * slack
            && self.sum <= hi * n * slack
            && (0.0..=top * top * n * slack).contains(&self.sum_sq)
    }

    /// Per-item support counts `C_v` (the Hadamard transform for Hadamard response).
    pub fn support(&self) -> Result<Vec<f64>, AggregateError> {
        let mech = self.kind.mechanism().ok_or(AggregateError::InvalidKind)?;
        let d = self.kind.domain().ok_or(AggregateError::WrongEstimate)? as usize;
        Ok(match mech {
            MechanismId::Hadamard => {
                // C_v = #{j ∈ C_v} = (n + Σ_j counts[j]·H[v+1][j]) / 2.
                let mut w: Vec<f64> = self.counts.iter().map(|&c| c as f64).collect();
                fwht(&mut w);
                let n = self.n as f64;
                w.iter().skip(1).take(d).map(|&s| (n + s) / 2.0).collect()
            }
            _ => self.counts.iter().take(d).map(|&c| c as f64).collect(),
        })
    }

    /// Unbiased frequency estimates for every item with variances and intervals at
    /// two-sided `confidence` (normal approximation).
    pub fn frequencies(&self, confidence: f64) -> Result<FrequencyEstimates, AggregateError> {
        let proto = self.kind.protocol().ok_or(AggregateError::WrongEstimate)?;
        if self.n == 0 {
            return Err(AggregateError::Empty);
        }
        let n = self.n as f64;
        let z = z_value(confidence);
        let items = self
            .support()?
            .into_iter()
            .map(|c| {
                let f = proto.frequency(c, n);
                Estimate::with_z(f, proto.variance(f.clamp(0.0, 1.0), n), z)
            })
            .collect();
        Ok(FrequencyEstimates {
            kind: self.kind,
            n: self.n,
            confidence,
            protocol: proto,
            items,
        })
    }

    /// The mean estimate of a 1BitMean, SQ-bit or SQ-Laplace aggregator, with a
    /// normal interval at `confidence` and the Hoeffding tolerance at `1 − confidence`
    /// for the bit mechanisms.
    pub fn mean(&self, confidence: f64) -> Result<MeanEstimate, AggregateError> {
        let mech = self.kind.mechanism().ok_or(AggregateError::InvalidKind)?;
        if self.n == 0 {
            return Err(AggregateError::Empty);
        }
        let n = self.n as f64;
        match mech {
            MechanismId::OneBitMean | MechanismId::SqBit => {
                let m = if mech == MechanismId::OneBitMean {
                    f64::from(self.kind.param)
                } else {
                    1.0
                };
                let e = self.kind.epsilon_f64().exp();
                let ones = self.counts.get(1).copied().unwrap_or(0) as f64;
                let pi = ones / n;
                // σ̂ = m·(π̂(e^ε+1) − 1)/(e^ε − 1).
                let scale = m * (e + 1.0) / (e - 1.0);
                let value = m * (pi * (e + 1.0) - 1.0) / (e - 1.0);
                let variance = scale * scale * pi * (1.0 - pi) / n;
                let beta = 1.0 - confidence;
                let hoeffding = scale * ((2.0 / beta).ln() / (2.0 * n)).sqrt();
                Ok(MeanEstimate {
                    kind: self.kind,
                    n: self.n,
                    estimate: Estimate::normal(value, variance, confidence),
                    hoeffding_tolerance: Some(hoeffding),
                })
            }
            MechanismId::SqLaplace => {
                let mean = self.sum / n;
                let var = if self.n > 1 {
                    (self.sum_sq - n * mean * mean) / (n - 1.0)
                } else {
                    0.0
                };
                Ok(MeanEstimate {
                    kind: self.kind,
                    n: self.n,
                    estimate: Estimate::normal(mean, var.max(0.0) / n, confidence),
                    hoeffding_tolerance: None,
                })
            }
            _ => Err(AggregateError::WrongEstimate),
        }
    }
}

/// Aggregates back-to-back reports of `report_len` bytes on `threads` threads
/// (contiguous shares, one [`Aggregator`] each via
/// [`ingest_batch`](Aggregator::ingest_batch), merged at the end); malformed or
/// mismatched reports are counted, never fatal. Trailing bytes that do not fill a
/// whole report are ignored, like [`crate::ldp::fleet::aggregate_parallel`],
/// whose results this equals exactly.
pub fn aggregate_packed(
    bytes: &[u8],
    report_len: usize,
    kind: ReportKind,
    threads: usize,
) -> Result<(Aggregator, RejectCounts), AggregateError> {
    let len = report_len.max(1);
    let n = bytes.len() / len;
    let per = n.div_ceil(threads.max(1)).max(1);
    let mut total = Aggregator::new(kind)?;
    let mut rejected = RejectCounts::default();
    if threads <= 1 || n <= per {
        total.ingest_batch(bytes.chunks_exact(len), &mut rejected);
        return Ok((total, rejected));
    }
    let part = |chunk: &[u8]| -> Result<(Aggregator, RejectCounts), AggregateError> {
        let mut agg = Aggregator::new(kind)?;
        let mut rejected = RejectCounts::default();
        agg.ingest_batch(chunk.chunks_exact(len), &mut rejected);
        Ok((agg, rejected))
    };
    let mut chunks = bytes.chunks(per * len);
    let first = chunks.next().unwrap_or(&[]);
    // The calling thread takes the first share; one spawned thread per other share.
    let parts: Vec<Result<(Aggregator, RejectCounts), AggregateError>> = thread::scope(|s| {
        let handles: Vec<_> = chunks.map(|chunk| s.spawn(move || part(chunk))).collect();
        let mut parts = vec![part(first)];
        parts.extend(
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or(Err(AggregateError::InvalidKind))),
        );
        parts
    });
    for part in parts {
        let (a, r) = part?;
        total.merge(&a)?;
        rejected.merge(&r);
    }
    Ok((total, rejected))
}

/// Adds a full block of unary payloads, creating the counter on first use.
#[inline(never)]
fn add_unary_block(acc: &mut Option<UnaryCounter>, block: &[&[u8]; BLOCK], counts: &mut [u64]) {
    acc.get_or_insert_with(|| UnaryCounter::new(counts.len()))
        .push_block(block, counts);
}

/// Payloads of accepted unary reports of one kind, added a block at a time in
/// place by a counter created at the first full block; [`finish`](Self::finish)
/// counts a final partial block bit by bit and flushes the counter. The result
/// is the same per-item counts as [`add_bits`] on every payload.
struct UnaryBatch<'r> {
    acc: Option<UnaryCounter>,
    block: [&'r [u8]; BLOCK],
    filled: usize,
}

impl<'r> UnaryBatch<'r> {
    fn new() -> UnaryBatch<'r> {
        UnaryBatch {
            acc: None,
            block: [&[]; BLOCK],
            filled: 0,
        }
    }

    /// Queues one payload (of the length the counts imply).
    #[inline(always)]
    fn push(&mut self, payload: &'r [u8], counts: &mut [u64]) {
        match self.block.get_mut(self.filled) {
            Some(slot) => *slot = payload,
            // Unreachable (`filled < BLOCK` between calls); counted directly anyway.
            None => return add_bits(counts, payload),
        }
        self.filled += 1;
        if self.filled == BLOCK {
            add_unary_block(&mut self.acc, &self.block, counts);
            self.filled = 0;
        }
    }

    /// Counts what is still queued.
    fn finish(self, counts: &mut [u64]) {
        for p in self.block.iter().take(self.filled) {
            add_bits(counts, p);
        }
        if let Some(mut acc) = self.acc {
            acc.flush(counts);
        }
    }
}

/// Decodes, validates and aggregates reports of any kinds, one [`Aggregator`]
/// per [`ReportKind`] in `groups` (created on a kind's first valid report).
///
/// The reports choose the groups (and their domains, hence the memory): use it
/// on trusted reports only. `privq ldp aggregate` reads untrusted files through
/// [`crate::ldp::intake::Intake`], which checks every report against a public
/// campaign first.
///
/// Exactly the state of this report-at-a-time loop, and the same rejection
/// counts: every report that fails [`decode_report`] is counted under its
/// [`RejectReason`], and a valid report whose kind admits no aggregator
/// ([`Aggregator::new`] fails) under [`RejectReason::Parameter`]:
///
/// ```text
/// for r in reports {
///     match decode_report(r) {
///         Err(e) => rejected.record(e),
///         Ok(d) => match groups.entry(ReportKind::of(&d)) / Aggregator::new(kind) {
///             Err(_) => rejected.record(RejectReason::Parameter),
///             Ok(agg) => agg.ingest(&d),
///         },
///     }
/// }
/// ```
///
/// Once a unary (SUE, OUE) kind has been seen, later reports that are
/// byte-for-byte canonical reports of that kind (as in
/// [`ingest_batch`](Aggregator::ingest_batch)) skip decoding and are counted by
/// the bit-sliced [`UnaryCounter`]. Every other report is decoded and ingested
/// in input order, so per-group order (which matters for the floating-point SQ
/// Laplace sums) is that of the input. Returns the number of reports accepted.
pub fn ingest_grouped<'r>(
    groups: &mut BTreeMap<ReportKind, Aggregator>,
    reports: impl IntoIterator<Item = &'r [u8]>,
    rejected: &mut RejectCounts,
) -> u64 {
    // Unary kinds seen so far, with their recognizers and pending payloads.
    let mut unary: BTreeMap<ReportKind, (UnaryFastPath, UnaryBatch<'r>)> = BTreeMap::new();
    // The unary kind of the latest decoded report (checked first).
    let mut last: Option<(ReportKind, UnaryFastPath)> = None;
    let mut accepted = 0u64;
    for r in reports {
        if let Some((kind, fast)) = &last
            && fast.accepts(r)
            && let (Some(agg), Some((_, batch))) = (groups.get_mut(kind), unary.get_mut(kind))
        {
            batch.push(&r[HEADER_LEN..], &mut agg.counts);
            agg.n += 1;
            accepted += 1;
            continue;
        }
        let d = match decode_report(r) {
            Ok(d) => d,
            Err(e) => {
                rejected.record(e);
                continue;
            }
        };
        let kind = ReportKind::of(&d);
        let agg = match groups.entry(kind) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(v) => match Aggregator::new(kind) {
                Ok(a) => v.insert(a),
                Err(_) => {
                    rejected.record(RejectReason::Parameter);
                    continue;
                }
            },
        };
        match agg.ingest(&d) {
            Ok(()) => accepted += 1,
            Err(e) => rejected.record(e),
        }
        if last.as_ref().is_none_or(|(k, _)| *k != kind) {
            last = match unary.entry(kind) {
                Entry::Occupied(e) => Some((kind, e.get().0)),
                Entry::Vacant(v) => UnaryFastPath::for_kind(&kind).map(|fast| {
                    v.insert((fast, UnaryBatch::new()));
                    (kind, fast)
                }),
            };
        }
    }
    for (kind, (_, batch)) in unary {
        if let Some(agg) = groups.get_mut(&kind) {
            batch.finish(&mut agg.counts);
        }
    }
    accepted
}

/// Byte-level recognition of valid unary reports of one kind: the canonical
/// header, the exact length and zero padding bits imply (and are checked against)
/// a successful [`decode_report`] of that kind.
#[derive(Debug, Clone, Copy)]
struct UnaryFastPath {
    header: [u8; HEADER_LEN],
    payload_len: usize,
    /// Bits of the last payload byte that must be zero.
    padding: u8,
}

impl UnaryFastPath {
    /// The fast path for SUE/OUE kinds whose header has a canonical encoding;
    /// `None` otherwise. Self-checking: a zero payload behind the canonical header
    /// must decode to exactly `kind`.
    fn for_kind(kind: &ReportKind) -> Option<UnaryFastPath> {
        let mechanism = kind.mechanism()?;
        if !matches!(mechanism, MechanismId::Sue | MechanismId::Oue) {
            return None;
        }
        let header = Header {
            mechanism,
            query: QueryId(kind.query),
            epsilon: kind.epsilon()?,
            param: kind.param,
        };
        let mut bytes = [0u8; HEADER_LEN];
        encode_header(&header, &mut bytes).ok()?;
        let payload_len = (kind.param as usize).div_ceil(8);
        let used = kind.param % 8;
        let fast = UnaryFastPath {
            header: bytes,
            payload_len,
            padding: if used == 0 { 0 } else { !((1u8 << used) - 1) },
        };
        let mut probe = bytes.to_vec();
        probe.resize(HEADER_LEN + payload_len, 0);
        let decoded = decode_report(&probe).ok()?;
        (ReportKind::of(&decoded) == *kind && fast.accepts(&probe)).then_some(fast)
    }

    /// Whether `r` is byte-for-byte a valid report of the kind.
    #[inline(always)]
    fn accepts(&self, r: &[u8]) -> bool {
        r.len() == HEADER_LEN + self.payload_len
            && r[..HEADER_LEN] == self.header
            && r.last().is_some_and(|&b| b & self.padding == 0)
    }
}

#[inline]
fn bump(counts: &mut [u64], i: usize) {
    // Decoding guarantees i is in range; an out-of-range index is ignored, never a panic.
    if let Some(c) = counts.get_mut(i) {
        *c += 1;
    }
}

/// Adds a unary-encoded bit vector to per-item counts.
#[inline]
fn add_bits(counts: &mut [u64], bits: &[u8]) {
    let mut chunks = counts.chunks_mut(64);
    for word in bits.chunks(8) {
        let Some(slot) = chunks.next() else { return };
        let mut w = 0u64;
        for (k, b) in word.iter().enumerate() {
            w |= u64::from(*b) << (8 * k);
        }
        while w != 0 {
            let i = w.trailing_zeros() as usize;
            if let Some(c) = slot.get_mut(i) {
                *c += 1;
            }
            w &= w - 1;
        }
    }
}

/// Adds one local-hashing report's support: every item `v` with `h(v) = y`.
///
/// `h(v) = ((a·v + b) mod P) mod g`; `t ≡ y (mod g)` is tested without division as
/// `(t + g − y)·c mod 2⁶⁴ < c` with `c = ⌈2⁶⁴/g⌉` (Lemire, Kaser & Kurz 2019).
#[inline]
fn add_olh_support(counts: &mut [u64], (a, b): (u32, u32), g: u32, y: u32) {
    const P: u64 = (1 << 31) - 1;
    let g64 = u64::from(g.max(1));
    let c = (u64::MAX / g64).wrapping_add(1);
    let shift = g64 - u64::from(y);
    let (a, b) = (u64::from(a), u64::from(b));
    for (v, count) in counts.iter_mut().enumerate() {
        let x = a * v as u64 + b; // < 2^62
        let t = (x & P) + (x >> 31);
        let t = (t & P) + (t >> 31);
        let t = if t >= P { t - P } else { t };
        let hit = (t + shift).wrapping_mul(c) < c;
        *count += u64::from(hit);
    }
}

/// In-place fast Walsh–Hadamard transform (Sylvester order, unnormalized).
pub fn fwht(v: &mut [f64]) {
    let n = v.len();
    let mut h = 1;
    while h < n {
        for block in v.chunks_mut(2 * h) {
            let (lo, hi) = block.split_at_mut(h.min(block.len()));
            for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                let (a, b) = (*x, *y);
                *x = a + b;
                *y = a - b;
            }
        }
        h *= 2;
    }
}

/// Frequency estimates for every item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrequencyEstimates {
    /// What was aggregated.
    pub kind: ReportKind,
    /// Number of reports.
    pub n: u64,
    /// Two-sided confidence of the intervals.
    pub confidence: f64,
    /// The protocol's `(p, q)`.
    pub protocol: PureProtocol,
    /// One estimate per item.
    pub items: Vec<Estimate>,
}

impl FrequencyEstimates {
    /// The normal quantile used for the intervals.
    pub fn z(&self) -> f64 {
        z_value(self.confidence)
    }

    /// The estimates' values.
    pub fn values(&self) -> Vec<f64> {
        self.items.iter().map(|e| e.value).collect()
    }
}

/// A mean estimate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeanEstimate {
    /// What was aggregated.
    pub kind: ReportKind,
    /// Number of reports.
    pub n: u64,
    /// The estimate, variance and normal interval.
    pub estimate: Estimate,
    /// A distribution-free bound: `|σ̂ − σ| ≤ m·(e^ε+1)/(e^ε−1)·√(ln(2/β)/(2n))`
    /// with probability `1 − β`, `β = 1 − confidence` (bit mechanisms only).
    pub hoeffding_tolerance: Option<f64>,
}

//! The one multiplicative-weights engine: PMW (Hardt's thesis Ch. 4), MWEM (Ch. 5),
//! the d_X MWEM and the Barak-style baseline all drive this one type
//! (`docs/src/curator.md`, "The multiplicative-weights engine").
//!
//! [`MwState`] is a distribution over the universe `U` (or over a public
//! sub-universe `V ⊆ U`) with a signed update by a linear query and the
//! relative-entropy potential of the thesis (eq. 4.4). The mechanisms differ only
//! in how they pick the query and the step ("the distinguisher").
//!
//! The update is `x_t[u] ∝ x_{t−1}[u] · exp(step · f[u])`. Chapter 4 uses
//! `step = −η·sign(d̂)`, Chapter 5 `step = d̂/2` (TYPO-13 in
//! `docs/src/corrections.md`: the caller passes the signed step explicitly).
//!
//! Floats are fine here: the weights are optimisation state computed from already
//! released values (post-processing), never used to decide noise.
//!
//! Accuracy contract: the weights are linear probabilities, renormalised every
//! [`RESYNC_EVERY`] updates (or sooner), which raises non-zero weights to at least
//! [`FLOOR`]; after `k` updates a weight is within a relative `k·2^−53` of the
//! exact product, and zero weights (from [`MwState::from_weights`]) stay zero
//! forever. Why these hold is in the book chapter above.

use std::sync::Arc;

use crate::data::{DataError, MemoryCap};
use crate::query::Query;

/// Cells per block of the fast kernels: queries that factor over the low bits of
/// the cell index (parities, bit patterns) are evaluated with a small table.
const BLOCK: usize = 256;

/// Renormalise (sum to 1, apply the floor) after this many fast multiplicative
/// updates.
pub const RESYNC_EVERY: u32 = 32;

/// Non-zero weights are kept at or above this after each renormalisation.
pub const FLOOR: f64 = 1e-250;

/// Renormalise early once the fast updates since the last renormalisation may
/// have shrunk a weight by more than `e^−SHRINK_BUDGET` (keeps weights normal:
/// `FLOOR·e^−40 ≈ 10^−267`).
const SHRINK_BUDGET: f64 = 40.0;

/// A multiplicative-weights distribution.
///
/// ```
/// use privq_host::data::{Domain, MemoryCap};
/// use privq_host::central::mw::MwState;
/// use privq_host::query::Query;
/// let d = Domain::binary(["a", "b"])?;
/// let q = Query::conjunction(&d, &[0, 1])?;
/// let mut x = MwState::uniform(4, MemoryCap::default())?;
/// assert_eq!(x.evaluate(&q), 0.25);
/// x.update(&q, 1.0); // move weight towards cells where q = 1
/// assert!(x.evaluate(&q) > 0.25);
/// let target = [0.0, 0.0, 0.0, 1.0];
/// assert!(x.potential(&target) < 4f64.ln());
/// # Ok::<(), privq_host::data::DataError>(())
/// ```
#[derive(Debug, Clone)]
pub struct MwState {
    p: Vec<f64>,
    cells: Option<Arc<[usize]>>,
    universe: usize,
    /// Fast updates since the last renormalisation.
    since_sync: u32,
    /// Upper bound on `−ln` of the product of the smallest factors applied since
    /// the last renormalisation.
    shrink: f64,
}

/// An update by a 0/1 query whose pass over the weights is deferred, so that it
/// can share one pass with the evaluation of the next query
/// ([`MwState::defer_update`], [`MwState::apply_then_evaluate`]). Interactive
/// mechanisms (PMW) do not know the next query when they update.
#[derive(Debug)]
pub struct PendingUpdate {
    kernel: Kernel,
    factors: [f64; 2],
}

impl MwState {
    /// The uniform distribution on a universe of `cells` cells.
    pub fn uniform(cells: usize, cap: MemoryCap) -> Result<Self, DataError> {
        if cells == 0 {
            return Err(DataError::EmptyData);
        }
        cap.check(cells, 8)?;
        Ok(MwState {
            p: vec![1.0 / cells as f64; cells],
            cells: None,
            universe: cells,
            since_sync: 0,
            shrink: 0.0,
        })
    }

    /// The uniform distribution on a public sub-universe `V` (distinct cell indices
    /// below `universe`).
    pub fn uniform_on(support: Vec<usize>, universe: usize) -> Result<Self, DataError> {
        if support.is_empty() {
            return Err(DataError::EmptyData);
        }
        if support.iter().any(|&u| u >= universe) {
            return Err(DataError::InvalidValue(
                "a sub-universe cell lies outside the universe".into(),
            ));
        }
        let m = support.len();
        Ok(MwState {
            p: vec![1.0 / m as f64; m],
            cells: Some(support.into()),
            universe,
            since_sync: 0,
            shrink: 0.0,
        })
    }

    /// Starts from given non-negative weights over the whole universe (normalized
    /// here; zero weights stay zero forever).
    pub fn from_weights(weights: &[f64]) -> Result<Self, DataError> {
        if weights.iter().any(|w| !w.is_finite() || *w < 0.0) {
            return Err(DataError::InvalidValue(
                "weights must be finite and non-negative".into(),
            ));
        }
        let total: f64 = weights.iter().sum();
        if total <= 0.0 {
            return Err(DataError::EmptyData);
        }
        let mut p: Vec<f64> = weights.iter().map(|w| w / total).collect();
        apply_floor(&mut p);
        Ok(MwState {
            p,
            cells: None,
            universe: weights.len(),
            since_sync: 0,
            shrink: 0.0,
        })
    }

    /// Number of cells carrying weight (`|V|`).
    pub fn len(&self) -> usize {
        self.p.len()
    }

    /// True for an empty state (never, by construction).
    pub fn is_empty(&self) -> bool {
        self.p.is_empty()
    }

    /// The universe size N.
    pub fn universe(&self) -> usize {
        self.universe
    }

    /// The probabilities over `V` (over `U` when there is no sub-universe).
    pub fn probabilities(&self) -> &[f64] {
        &self.p
    }

    /// The log-probabilities over `V` (computed from the probabilities).
    pub fn log_probabilities(&self) -> Vec<f64> {
        self.p.iter().map(|v| v.ln()).collect()
    }

    /// The universe cells of `V`, in order (`None` when `V = U`).
    pub fn support(&self) -> Option<&[usize]> {
        self.cells.as_deref()
    }

    /// The distribution over the whole universe (zero outside `V`).
    pub fn to_dense(&self) -> Vec<f64> {
        match &self.cells {
            None => self.p.clone(),
            Some(cells) => {
                let mut out = vec![0.0; self.universe];
                for (&u, &p) in cells.iter().zip(&self.p) {
                    if let Some(o) = out.get_mut(u) {
                        *o = p;
                    }
                }
                out
            }
        }
    }

    /// Prepares a query for repeated evaluation and updates (precomputes the
    /// blocked kernel of parity and bit-pattern queries).
    pub fn prepare<'q>(&self, query: &'q Query) -> Prepared<'q> {
        let kernel = match self.cells {
            None => Kernel::compile(query, self.p.len()),
            Some(_) => None,
        };
        Prepared { query, kernel }
    }

    /// `f(x_t) = Σ_u f[u]·x_t[u]`.
    pub fn evaluate(&self, query: &Query) -> f64 {
        self.evaluate_prepared(&self.prepare(query))
    }

    /// [`MwState::evaluate`] for a prepared query.
    pub fn evaluate_prepared(&self, q: &Prepared<'_>) -> f64 {
        match (&self.cells, &q.kernel) {
            (None, Some(k)) => k.dot(&self.p),
            (None, None) => q.query.evaluate(&self.p),
            (Some(cells), _) => cells
                .iter()
                .zip(&self.p)
                .map(|(&u, &p)| p * q.query.value(u))
                .sum(),
        }
    }

    /// The signed update `x[u] ← x[u]·exp(step·f[u])`, renormalized. Returns
    /// `f(x)` before the update.
    pub fn update(&mut self, query: &Query, step: f64) -> f64 {
        let q = self.prepare(query);
        let before = self.evaluate_prepared(&q);
        self.update_prepared(&q, step, before);
        before
    }

    /// [`MwState::update`] when the caller already knows `answer_before = f(x)`
    /// (saves one pass over the weights).
    pub fn update_known(&mut self, query: &Query, step: f64, answer_before: f64) {
        let q = self.prepare(query);
        self.update_prepared(&q, step, answer_before);
    }

    /// [`MwState::update_known`] for a prepared query.
    pub fn update_prepared(&mut self, q: &Prepared<'_>, step: f64, answer_before: f64) {
        if step == 0.0 || !step.is_finite() {
            return;
        }
        match (&q.kernel, boolean_step(step, answer_before)) {
            (Some(k), Some(factors)) => self.fast_update(k, factors),
            _ => self.update_log_domain(q.query, step),
        }
    }

    /// Updates by `q` and, in the same pass over the weights, evaluates `next` on
    /// the updated distribution (the inner loop of re-iterated MW fits).
    pub fn update_then_evaluate(
        &mut self,
        q: &Prepared<'_>,
        step: f64,
        answer_before: f64,
        next: &Prepared<'_>,
    ) -> f64 {
        if step == 0.0 || !step.is_finite() {
            return self.evaluate_prepared(next);
        }
        match (&q.kernel, boolean_step(step, answer_before)) {
            (Some(k), Some(factors)) => self.fast_update_then_evaluate(k, factors, next),
            _ => {
                self.update_log_domain(q.query, step);
                self.evaluate_prepared(next)
            }
        }
    }

    /// The update of [`MwState::update_known`], deferred when it is a fast one:
    /// the caller must later pass the returned value to
    /// [`MwState::apply_then_evaluate`] or [`MwState::apply`] before reading the
    /// weights. Other updates are applied at once (`None`). The resulting weights
    /// are bit-for-bit those of the immediate update.
    pub fn defer_update(
        &mut self,
        query: &Query,
        step: f64,
        answer_before: f64,
    ) -> Option<PendingUpdate> {
        if step == 0.0 || !step.is_finite() {
            return None;
        }
        let kernel = match self.cells {
            None => Kernel::compile(query, self.p.len()),
            Some(_) => None,
        };
        match (kernel, boolean_step(step, answer_before)) {
            (Some(kernel), Some(factors)) => Some(PendingUpdate { kernel, factors }),
            _ => {
                self.update_log_domain(query, step);
                None
            }
        }
    }

    /// Applies a deferred update.
    pub fn apply(&mut self, pending: PendingUpdate) {
        self.fast_update(&pending.kernel, pending.factors);
    }

    /// Applies a deferred update and returns `next(x)` on the updated weights,
    /// sharing one pass over the weights when `next` has a blocked kernel.
    pub fn apply_then_evaluate(&mut self, pending: PendingUpdate, next: &Query) -> f64 {
        let next = self.prepare(next);
        self.fast_update_then_evaluate(&pending.kernel, pending.factors, &next)
    }

    fn fast_update(&mut self, k: &Kernel, factors: [f64; 2]) {
        k.scale(&mut self.p, factors, None);
        self.after_fast_update(factors);
    }

    fn fast_update_then_evaluate(
        &mut self,
        k: &Kernel,
        factors: [f64; 2],
        next: &Prepared<'_>,
    ) -> f64 {
        match &next.kernel {
            Some(nk) if !self.renormalisation_due(factors) => {
                let out = k.scale(&mut self.p, factors, Some(nk));
                self.after_fast_update(factors);
                out
            }
            _ => {
                self.fast_update(k, factors);
                self.evaluate_prepared(next)
            }
        }
    }

    fn renormalisation_due(&self, factors: [f64; 2]) -> bool {
        self.since_sync + 1 >= RESYNC_EVERY || self.shrink + shrink_of(factors) > SHRINK_BUDGET
    }

    fn after_fast_update(&mut self, factors: [f64; 2]) {
        let due = self.renormalisation_due(factors);
        self.since_sync += 1;
        self.shrink += shrink_of(factors);
        if due {
            self.renormalise();
        }
    }

    /// The update in the log domain (any query, any step), renormalized with
    /// log-sum-exp.
    fn update_log_domain(&mut self, query: &Query, step: f64) {
        let cells = self.cells.clone();
        for (i, v) in self.p.iter_mut().enumerate() {
            let u = cells.as_ref().map_or(i, |c| c.get(i).copied().unwrap_or(i));
            *v = v.ln() + step * query.value(u);
        }
        let max = self.p.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = self.p.iter().map(|&l| (l - max).exp()).sum();
        let lse = max + z.ln();
        for v in self.p.iter_mut() {
            *v = (*v - lse).exp();
        }
        apply_floor(&mut self.p);
        self.since_sync = 0;
        self.shrink = 0.0;
    }

    /// Rescales the weights to sum 1 and applies the floor.
    fn renormalise(&mut self) {
        let total = sum(&self.p);
        if total > 0.0 && total.is_finite() {
            let inv = 1.0 / total;
            self.p.iter_mut().for_each(|v| *v *= inv);
        }
        apply_floor(&mut self.p);
        self.since_sync = 0;
        self.shrink = 0.0;
    }

    /// The potential `Ψ = RE(x*‖x_t) = Σ_u x*[u] ln(x*[u]/x_t[u])` for a target
    /// distribution `x*` over the same cells (`V`).
    pub fn potential(&self, target: &[f64]) -> f64 {
        target
            .iter()
            .zip(&self.p)
            .filter(|&(&t, _)| t > 0.0)
            .map(|(&t, &p)| t * (t.ln() - p.ln()))
            .sum()
    }
}

/// `−ln min(factors)` when it is positive (how much an update may shrink a weight).
fn shrink_of(factors: [f64; 2]) -> f64 {
    (-factors[0].min(factors[1]).ln()).max(0.0)
}

/// Raises non-zero weights below [`FLOOR`] to it.
fn apply_floor(p: &mut [f64]) {
    for v in p.iter_mut() {
        if *v > 0.0 && *v < FLOOR {
            *v = FLOOR;
        }
    }
}

/// `Σ x` with independent accumulators so the loop vectorizes.
fn sum(x: &[f64]) -> f64 {
    let mut s = [0.0f64; 8];
    let c = x.chunks_exact(8);
    let rest: f64 = c.remainder().iter().sum();
    for a in c {
        for j in 0..8 {
            s[j] += a[j];
        }
    }
    s.iter().sum::<f64>() + rest
}

/// `⟨f, x⟩` for any vector over the whole universe, with the blocked kernel when
/// the query has one (parities and bit patterns on a power-of-two universe).
pub fn dot(query: &Query, x: &[f64]) -> f64 {
    match Kernel::compile(query, x.len()) {
        Some(k) => k.dot(x),
        None => query.evaluate(x),
    }
}

/// A query prepared for a [`MwState`] (see [`MwState::prepare`]).
pub struct Prepared<'q> {
    query: &'q Query,
    kernel: Option<Kernel>,
}

impl Prepared<'_> {
    /// The query.
    pub fn query(&self) -> &Query {
        self.query
    }
}

/// Multipliers `[f = 0, f = 1]` of a Boolean update: the normalizer is
/// `Z = 1 + f(x)(e^step − 1)`.
/// `None` when the linear-domain factors would lose precision (then the caller
/// updates in the log domain and renormalizes with log-sum-exp).
fn boolean_step(step: f64, answer_before: f64) -> Option<[f64; 2]> {
    let a = answer_before.clamp(0.0, 1.0);
    if step.abs() > 30.0 {
        return None;
    }
    let e = step.exp();
    let z = (1.0 - a) + a * e;
    if !(z > 1e-100 && z.is_finite()) {
        return None;
    }
    Some([1.0 / z, e / z])
}

/// A 0/1 query that factors over the low `log2(BLOCK)` bits of the cell index.
#[derive(Debug)]
struct Kernel {
    block: usize,
    /// `f` on the low bits: 1.0 or 0.0.
    low: Vec<f64>,
    hi_mask: usize,
    kind: KernelKind,
}

#[derive(Debug)]
enum KernelKind {
    /// f = low ⊕ parity(hi ∧ mask): odd blocks use `1 − low`.
    Parity,
    /// f = low ∧ (hi ∧ mask = pattern): other blocks are all zero.
    Pattern(usize),
}

impl Kernel {
    fn compile(query: &Query, len: usize) -> Option<Kernel> {
        if !len.is_power_of_two() {
            return None;
        }
        let block = BLOCK.min(len);
        let low_bits = block - 1;
        let (mask, kind) = match query {
            Query::Parity { mask } => (*mask, KernelKind::Parity),
            Query::BitPattern { mask, pattern } => {
                (*mask, KernelKind::Pattern(pattern & !low_bits))
            }
            _ => return None,
        };
        // The table sees only the low bits of the mask (and pattern).
        let low = (0..block)
            .map(|u| {
                let on = match kind {
                    KernelKind::Parity => (u & mask).count_ones() & 1 == 0,
                    KernelKind::Pattern(_) => {
                        u & mask & low_bits == query_pattern(query) & low_bits
                    }
                };
                if on { 1.0 } else { 0.0 }
            })
            .collect();
        Some(Kernel {
            block,
            low,
            hi_mask: mask & !low_bits,
            kind,
        })
    }

    /// Whether block `b` uses the table as is (`Some(true)`), complemented
    /// (`Some(false)`), or is all zeros (`None`).
    #[inline]
    fn block_mode(&self, b: usize) -> Option<bool> {
        let hi = (b * self.block) & self.hi_mask;
        match self.kind {
            KernelKind::Parity => Some(hi.count_ones() & 1 == 0),
            KernelKind::Pattern(p) => (hi == p).then_some(true),
        }
    }

    fn dot(&self, p: &[f64]) -> f64 {
        let mut total = 0.0;
        for (b, chunk) in p.chunks_exact(self.block).enumerate() {
            match self.block_mode(b) {
                None => {}
                Some(direct) => {
                    let (dot, sum) = dot_and_sum(chunk, &self.low);
                    total += if direct { dot } else { sum - dot };
                }
            }
        }
        total
    }

    /// `p[u] *= factors[f[u]]`; with `next`, also returns `next(p)` on the
    /// updated weights (same pass).
    fn scale(&self, p: &mut [f64], factors: [f64; 2], next: Option<&Kernel>) -> f64 {
        let n = self.block;
        let mut fa = [0.0f64; BLOCK];
        let mut fb = [0.0f64; BLOCK];
        for (i, &l) in self.low.iter().enumerate().take(n) {
            let on = usize::from(l == 1.0);
            fa[i] = factors[on];
            fb[i] = factors[1 - on];
        }
        let (fa, fb) = (&fa[..n], &fb[..n]);
        let mut total = 0.0;
        for (b, pc) in p.chunks_exact_mut(n).enumerate() {
            match self.block_mode(b) {
                None => pc.iter_mut().for_each(|v| *v *= factors[0]),
                Some(direct) => {
                    let f = if direct { fa } else { fb };
                    pc.iter_mut().zip(f).for_each(|(v, m)| *v *= m);
                }
            }
            if let Some(k) = next
                && let Some(direct) = k.block_mode(b)
            {
                let (dot, sum) = dot_and_sum(pc, &k.low);
                total += if direct { dot } else { sum - dot };
            }
        }
        total
    }
}

fn query_pattern(query: &Query) -> usize {
    match query {
        Query::BitPattern { pattern, .. } => *pattern,
        _ => 0,
    }
}

/// `(Σ x·t, Σ x)` with independent accumulators so the loop vectorizes.
#[inline]
fn dot_and_sum(x: &[f64], t: &[f64]) -> (f64, f64) {
    let mut d = [0.0f64; 8];
    let mut s = [0.0f64; 8];
    let xc = x.chunks_exact(8);
    let tc = t.chunks_exact(8);
    let (xr, tr) = (xc.remainder(), tc.remainder());
    for (a, b) in xc.zip(tc) {
        for j in 0..8 {
            d[j] += a[j] * b[j];
            s[j] += a[j];
        }
    }
    let mut dot: f64 = d.iter().sum();
    let mut sum: f64 = s.iter().sum();
    for (a, b) in xr.iter().zip(tr) {
        dot += a * b;
        sum += a;
    }
    (dot, sum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Domain, relative_entropy};

    fn naive_update(p: &[f64], q: &Query, step: f64) -> Vec<f64> {
        let w: Vec<f64> = p
            .iter()
            .enumerate()
            .map(|(u, &v)| v * (step * q.value(u)).exp())
            .collect();
        let z: f64 = w.iter().sum();
        w.into_iter().map(|v| v / z).collect()
    }

    #[test]
    fn kernels_agree_with_the_definition() {
        for d in [3usize, 10] {
            let dom = Domain::binary((0..d).map(|i| format!("a{i}"))).unwrap();
            let n = 1 << d;
            let w: Vec<f64> = (0..n).map(|u| 1.0 + ((u * 31) % 7) as f64).collect();
            let mut x = MwState::from_weights(&w).unwrap();
            let mut reference = x.probabilities().to_vec();
            let queries = [
                Query::parity(&dom, &[0, d - 1]).unwrap(),
                Query::conjunction(&dom, &[1, d - 1]).unwrap(),
                Query::BitPattern {
                    mask: 0b101,
                    pattern: 0b001,
                },
                Query::range(&dom, d - 1, 1, 1).unwrap(),
            ];
            for (i, q) in queries.iter().cycle().take(80).enumerate() {
                let step = if i % 3 == 0 { -0.7 } else { 0.4 };
                assert!((x.evaluate(q) - q.evaluate(&reference)).abs() < 1e-12);
                x.update(q, step);
                reference = naive_update(&reference, q, step);
            }
            for (a, b) in x.probabilities().iter().zip(&reference) {
                assert!((a - b).abs() < 1e-12 * (1.0 + b.abs()));
            }
            let lp_sum: f64 = x.log_probabilities().iter().map(|l| l.exp()).sum();
            assert!((lp_sum - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn potential_decreases_as_lemma_4_3_3_says() {
        // Ψ_{t−1} − Ψ_t ≥ η⟨r, x_{t−1} − x*⟩ − η², with step −η on r = f (η ≤ 1).
        let dom = Domain::binary((0..6).map(|i| format!("a{i}"))).unwrap();
        let target: Vec<f64> = {
            let w: Vec<f64> = (0..64).map(|u| ((u * 13) % 11) as f64 + 0.1).collect();
            let s: f64 = w.iter().sum();
            w.iter().map(|v| v / s).collect()
        };
        let mut x = MwState::uniform(64, MemoryCap::default()).unwrap();
        let eta = 0.3;
        for t in 0..200 {
            let q = Query::parity(&dom, &[t % 6, (t / 6) % 6]).unwrap();
            let here = x.evaluate(&q);
            let truth = q.evaluate(&target);
            // PMW's rule: step −η·sign(f(x_t) − f(x*)), i.e. r = f or 1 − f.
            let (step, r_gap) = if here > truth {
                (-eta, here - truth)
            } else {
                (eta, truth - here)
            };
            let before = x.potential(&target);
            x.update(&q, step);
            let after = x.potential(&target);
            assert!(
                before - after >= eta * r_gap - eta * eta - 1e-12,
                "round {t}"
            );
            assert!(
                (x.potential(&target) - relative_entropy(&target, x.probabilities())).abs() < 1e-9
            );
        }
        assert!(x.potential(&target) < 64f64.ln());
    }

    #[test]
    fn sub_universe() {
        let dom = Domain::binary(["a", "b", "c"]).unwrap();
        let mut x = MwState::uniform_on(vec![1, 3, 6], 8).unwrap();
        let q = Query::conjunction(&dom, &[0]).unwrap();
        assert!((x.evaluate(&q) - 2.0 / 3.0).abs() < 1e-15);
        x.update(&q, -1.0);
        let dense = x.to_dense();
        assert_eq!(dense.len(), 8);
        assert!(dense[6] > dense[1]);
        assert!(MwState::uniform_on(vec![9], 8).is_err());
        assert!(MwState::uniform(0, MemoryCap::default()).is_err());
    }
}

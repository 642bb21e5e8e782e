//! Private multiplicative weights (thesis Ch. 4, Fig. 4.2): interactive answers to
//! adaptively chosen linear queries, in the (ε, δ) and the (ε, 0) variants, and the
//! synthetic-data mode.
//!
//! Each round draws a noisy answer `â_t = f_t(x) + Lap(σ)` (on the core's exact
//! grid) and compares it with the hypothesis' answer `f_t(x_{t−1})`:
//! * **lazy round** (`|d̂_t| ≤ T`): output `f_t(x_{t−1})` — never `â_t`, so the
//!   state depends on the data only through the answers of update rounds;
//! * **update round**: one MW step on [`MwState`], output `â_t`; after more than
//!   `m = η⁻² ln M` updates the session aborts with [`PmwError::Failure`].
//!
//! In the (ε, 0) variant the threshold is `T̂ = T + Lap(10/(nε))`, drawn **once**
//! when the session starts (spec §3.5).
//!
//! The thesis constants ([`PmwParams::theory`]) are vacuous at realistic sizes
//! (spec §3.9: T > 1 at n = 21 574); [`PmwParams::user`] accepts other constants
//! and checks the privacy condition of the proofs.

use std::fmt;

use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::{Epsilon, Fixed, GridLaplace};

use crate::accountant::{Accountant, AccountantError, Cost};
use crate::data::{DataError, Distribution, MemoryCap};
use crate::mechanism::{MechanismError, epsilon_at_most, fixed_ceil};
use crate::mw::{MwState, PendingUpdate};
use crate::pmw_reduce::ReducedDomain;
use crate::query::{Query, Workload};

/// The privacy notion of a session.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PmwVariant {
    /// (ε, δ)-DP, thesis eq. 4.2.
    Approximate {
        /// δ ∈ (0, 1).
        delta: f64,
    },
    /// (ε, 0)-DP with a randomized threshold, thesis eq. 4.14.
    Pure,
}

/// PMW's constants: learning rate η, noise scale σ (normalized units), threshold
/// T and the update budget m.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PmwParams {
    /// Learning rate η ∈ (0, 1].
    pub eta: f64,
    /// Laplace scale σ of each noisy answer.
    pub sigma: f64,
    /// Threshold T.
    pub threshold: f64,
    /// Abort after more than this many update rounds (`m = η⁻² ln M`).
    pub max_updates: f64,
    /// The privacy variant.
    pub variant: PmwVariant,
}

impl PmwParams {
    /// The thesis constants for budget ε, failure probability β, database size `n`,
    /// `k` rounds and a (sub-)universe of `m_cells` cells: eq. 4.2 for
    /// [`PmwVariant::Approximate`], eq. 4.14 for [`PmwVariant::Pure`].
    ///
    /// ```
    /// use privq_host::pmw::{PmwParams, PmwVariant};
    /// // Spec §3.9, first row: n = 21 574, N = 2^16, k = 697, ε = 1, δ = 1e-6, β = 0.05.
    /// let p = PmwParams::theory(1.0, 0.05, 21_574, 697, 1 << 16, PmwVariant::Approximate { delta: 1e-6 })?;
    /// assert!((p.eta - 0.143).abs() < 5e-4);
    /// assert!((p.threshold - 5.71).abs() < 0.01); // T > 1: vacuous at this n
    /// # Ok::<(), privq_host::pmw::PmwError>(())
    /// ```
    pub fn theory(
        epsilon: f64,
        beta: f64,
        n: u64,
        k: usize,
        m_cells: usize,
        variant: PmwVariant,
    ) -> Result<Self, PmwError> {
        check_common(epsilon, n, k, m_cells)?;
        if !(beta > 0.0 && beta < 1.0) {
            return Err(PmwError::InvalidParameter("beta must be in (0, 1)"));
        }
        let ln_m = (m_cells as f64).ln().max(f64::MIN_POSITIVE);
        let en = epsilon * n as f64;
        let (eta, log_kb) = match variant {
            PmwVariant::Approximate { delta } => {
                check_delta(delta)?;
                let lkb = (k as f64 / beta).ln();
                ((ln_m.sqrt() * lkb * (1.0 / delta).ln() / en).sqrt(), lkb)
            }
            PmwVariant::Pure => {
                let lkb = (k as f64 / (2.0 * beta)).ln();
                ((ln_m * lkb / en).cbrt(), lkb)
            }
        };
        if log_kb.is_nan() || log_kb <= 0.0 {
            return Err(PmwError::InvalidParameter(
                "k must exceed beta (2·beta for the pure variant)",
            ));
        }
        Ok(PmwParams {
            eta,
            sigma: 10.0 * eta / log_kb,
            threshold: 40.0 * eta,
            max_updates: ln_m / (eta * eta),
            variant,
        })
    }

    /// User constants, accepted only if the privacy condition of the proof holds:
    /// `σn ≥ 10·√m·ln(1/δ)/ε` (eq. 4.3) or `σn ≥ 10·m/ε` for the pure variant.
    pub fn user(
        eta: f64,
        sigma: f64,
        threshold: f64,
        max_updates: f64,
        variant: PmwVariant,
        epsilon: f64,
        n: u64,
    ) -> Result<Self, PmwError> {
        check_common(epsilon, n, 1, 1)?;
        if !(eta > 0.0 && eta <= 1.0) {
            return Err(PmwError::InvalidParameter("eta must be in (0, 1]"));
        }
        if !(sigma > 0.0 && sigma.is_finite() && threshold > 0.0 && threshold.is_finite()) {
            return Err(PmwError::InvalidParameter(
                "sigma and the threshold must be positive",
            ));
        }
        if !(max_updates >= 1.0 && max_updates.is_finite()) {
            return Err(PmwError::InvalidParameter(
                "the update budget m must be at least 1",
            ));
        }
        let sn = sigma * n as f64;
        let needed = match variant {
            PmwVariant::Approximate { delta } => {
                check_delta(delta)?;
                10.0 * max_updates.sqrt() * (1.0 / delta).ln() / epsilon
            }
            PmwVariant::Pure => 10.0 * max_updates / epsilon,
        };
        if sn < needed {
            return Err(PmwError::PrivacyConditionViolated {
                sigma_n: sn,
                needed,
            });
        }
        Ok(PmwParams {
            eta,
            sigma,
            threshold,
            max_updates,
            variant,
        })
    }

    /// The same constants with the threshold raised by `gamma ≥ 0`: `T' = T + γ`
    /// (Lemma 4.3.7, for a sub-universe V whose best distribution is γ away from
    /// the data). σ, η, m and the variant are unchanged, and the threshold does not
    /// enter the privacy condition (eq. 4.3 / 4.14), so parameters that passed
    /// [`PmwParams::theory`] or [`PmwParams::user`] stay private.
    pub fn with_threshold_shift(self, gamma: f64) -> Result<Self, PmwError> {
        if !(gamma >= 0.0 && gamma.is_finite()) {
            return Err(PmwError::InvalidParameter(
                "the threshold shift must be finite and non-negative",
            ));
        }
        Ok(PmwParams {
            threshold: self.threshold + gamma,
            ..self
        })
    }
}

fn check_common(epsilon: f64, n: u64, k: usize, m: usize) -> Result<(), PmwError> {
    if !(epsilon > 0.0 && epsilon.is_finite()) {
        return Err(PmwError::InvalidParameter("epsilon must be positive"));
    }
    if n == 0 {
        return Err(PmwError::Data(DataError::EmptyData));
    }
    if k == 0 {
        return Err(PmwError::InvalidParameter(
            "the number of rounds k must be at least 1",
        ));
    }
    if m == 0 {
        return Err(PmwError::Data(DataError::EmptyData));
    }
    Ok(())
}

fn check_delta(delta: f64) -> Result<(), PmwError> {
    if delta > 0.0 && delta < 1.0 {
        Ok(())
    } else {
        Err(PmwError::InvalidParameter("delta must be in (0, 1)"))
    }
}

/// Why a PMW session did not answer.
#[derive(Debug)]
#[non_exhaustive]
pub enum PmwError {
    /// The update budget `m` was exceeded: the session aborted ("failure" in
    /// Fig. 4.2) and answers nothing more.
    Failure,
    /// All `k` rounds were used.
    RoundsExhausted {
        /// k.
        rounds: usize,
    },
    /// User constants fail the privacy condition of the proof.
    PrivacyConditionViolated {
        /// σ·n as given.
        sigma_n: f64,
        /// What the condition needs.
        needed: f64,
    },
    /// A parameter is out of range.
    InvalidParameter(&'static str),
    /// The privacy budget does not cover the session.
    Budget(AccountantError),
    /// A sampler or mechanism failed.
    Mechanism(MechanismError),
    /// Unusable data or query.
    Data(DataError),
}

impl fmt::Display for PmwError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PmwError::Failure => write!(
                f,
                "PMW failure: the update budget is used up, the session answers no more queries"
            ),
            PmwError::RoundsExhausted { rounds } => {
                write!(f, "all {rounds} rounds of the session are used")
            }
            PmwError::PrivacyConditionViolated { sigma_n, needed } => write!(
                f,
                "the constants are not private: sigma*n = {sigma_n} but the proof needs at least {needed}"
            ),
            PmwError::InvalidParameter(why) => write!(f, "invalid parameter: {why}"),
            PmwError::Budget(e) => write!(f, "{e}"),
            PmwError::Mechanism(e) => write!(f, "{e}"),
            PmwError::Data(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for PmwError {}

impl From<MechanismError> for PmwError {
    fn from(e: MechanismError) -> Self {
        PmwError::Mechanism(e)
    }
}

impl From<privq_core::Error> for PmwError {
    fn from(e: privq_core::Error) -> Self {
        PmwError::Mechanism(MechanismError::Core(e))
    }
}

impl From<DataError> for PmwError {
    fn from(e: DataError) -> Self {
        PmwError::Data(e)
    }
}

impl From<AccountantError> for PmwError {
    fn from(e: AccountantError) -> Self {
        PmwError::Budget(e)
    }
}

/// One released answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Answer {
    /// A lazy round: the hypothesis' answer `f_t(x_{t−1})`.
    Lazy(f64),
    /// An update round: the noisy answer `â_t`.
    Update(f64),
}

impl Answer {
    /// The released number.
    pub fn value(&self) -> f64 {
        match *self {
            Answer::Lazy(v) | Answer::Update(v) => v,
        }
    }
}

/// The transcript entry `v_t` of the privacy proof: `⊥` (lazy) or `â_t`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TranscriptEntry {
    /// A lazy round (`v_t = ⊥`).
    Lazy,
    /// An update round releasing `â_t`.
    Update(f64),
}

/// An interactive PMW session over a private normalized histogram.
///
/// ```
/// use privq_host::data::{CountHistogram, MemoryCap};
/// use privq_host::pmw::{PmwParams, PmwSession, PmwVariant};
/// use privq_host::query::Query;
/// use privq_host::accountant::Accountant;
/// use privq_host::{Epsilon, seeded_rng};
///
/// let counts = CountHistogram::from_counts(vec![500_000, 300_000, 150_000, 50_000], MemoryCap::default())?;
/// let x = counts.normalized()?;
/// let eps = Epsilon::new(1, 1)?;
/// let params = PmwParams::theory(1.0, 0.05, counts.total(), 100, 4, PmwVariant::Approximate { delta: 1e-6 })?;
/// let mut budget = Accountant::approximate(eps, 1e-6)?;
/// let mut session = PmwSession::new(&x, counts.total(), params, 100, eps, &mut budget, seeded_rng(1))?;
/// let a = session.answer(&Query::dense(vec![1.0, 1.0, 0.0, 0.0])?)?;
/// assert!((a.value() - 0.8).abs() < 2.0 * params.threshold);
/// assert_eq!(session.rounds_left(), 99);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct PmwSession<'a, R> {
    data: &'a Distribution,
    state: MwState,
    /// The last update round's update, applied in the same pass as the next
    /// round's evaluation of the hypothesis (bit-for-bit the immediate update).
    pending: Option<PendingUpdate>,
    params: PmwParams,
    noise: GridLaplace,
    threshold: f64,
    threshold_draws: u32,
    rounds: usize,
    round: usize,
    updates: usize,
    failed: bool,
    transcript: Vec<TranscriptEntry>,
    rng: R,
}

impl<'a, R: Rng + CryptoRng> PmwSession<'a, R> {
    /// A session over the universe of `data` (V = U) for at most `rounds` queries,
    /// charging `epsilon` (and δ for the approximate variant) to `budget`.
    pub fn new(
        data: &'a Distribution,
        n: u64,
        params: PmwParams,
        rounds: usize,
        epsilon: Epsilon,
        budget: &mut Accountant,
        rng: R,
    ) -> Result<Self, PmwError> {
        let state = MwState::uniform(data.len(), MemoryCap::default())?;
        Self::with_state(data, n, params, rounds, epsilon, budget, state, rng)
    }

    /// A session whose hypothesis starts from `state` — e.g. uniform on a public
    /// sub-universe V (thesis §4.6; raise the threshold by γ as Lemma 4.3.7 says).
    #[allow(clippy::too_many_arguments)]
    pub fn with_state(
        data: &'a Distribution,
        n: u64,
        params: PmwParams,
        rounds: usize,
        epsilon: Epsilon,
        budget: &mut Accountant,
        state: MwState,
        mut rng: R,
    ) -> Result<Self, PmwError> {
        check_common(epsilon.to_f64(), n, rounds, data.len())?;
        if state.universe() != data.len() {
            return Err(PmwError::Data(DataError::LengthMismatch {
                expected: data.len(),
                got: state.universe(),
            }));
        }
        let unit = fixed_ceil(1.0 / n as f64)?;
        // Scale σ = (1/n)/ε₀ with ε₀ = 1/(σn), rounded down (more noise).
        let eps0 = epsilon_at_most(1.0 / (params.sigma * n as f64))?;
        let noise = GridLaplace::new(unit, eps0)?;
        let delta = match params.variant {
            PmwVariant::Approximate { delta } => delta,
            PmwVariant::Pure => 0.0,
        };
        budget.charge("PMW session", Cost::Approximate { epsilon, delta })?;
        let (threshold, threshold_draws) = match params.variant {
            PmwVariant::Approximate { .. } => (params.threshold, 0),
            PmwVariant::Pure => {
                // T̂ = T + Lap(10/(nε)), drawn once for the whole session.
                let eps_t = epsilon.checked_div_int(10)?;
                let mech = GridLaplace::new(unit, eps_t)?;
                let t = mech.release(Fixed::from_f64(params.threshold)?, &mut rng)?;
                (t.to_f64(), 1)
            }
        };
        Ok(PmwSession {
            data,
            state,
            pending: None,
            params,
            noise,
            threshold,
            threshold_draws,
            rounds,
            round: 0,
            updates: 0,
            failed: false,
            transcript: Vec::new(),
            rng,
        })
    }

    /// PMW on a public sub-universe `V` drawn by domain reduction (thesis
    /// Lemma 4.6.4 / Thm 4.1.4, spec §3.8): the hypothesis starts uniform on
    /// `domain.cells()` and the threshold becomes `T' = T + φ + α`
    /// ([`ReducedDomain::threshold_shift`]; `T` itself when `V = U`).
    ///
    /// Pass the *unshifted* `params`, built for `|V|` cells
    /// (`PmwParams::theory(…, domain.len(), …)`: η and m use `ln |V|`) or by
    /// [`PmwParams::user`]; their privacy checks are what make the session private,
    /// for every database. Accuracy additionally needs the data to be
    /// (ξ, φ)-pseudo-smooth with the ξ and φ the reduction assumed, and a
    /// non-adaptive query sequence.
    ///
    /// ```
    /// use privq_host::accountant::Accountant;
    /// use privq_host::data::Distribution;
    /// use privq_host::pmw::{PmwParams, PmwSession, PmwVariant};
    /// use privq_host::pmw_reduce::DomainReduction;
    /// use privq_host::query::Query;
    /// use privq_host::{Epsilon, seeded_rng};
    ///
    /// let cells = 1 << 16;
    /// let x = Distribution::from_weights(vec![1.0; cells])?; // ξ-smooth with ξ = 1/N
    /// let (n, k) = (100_000_000, 10);
    /// let v = DomainReduction::new(1.0 / cells as f64, 0.05, 0.05, k, 0.0)?
    ///     .sample(cells, &mut seeded_rng(1))?;
    /// let params = PmwParams::user(0.05, 0.001, 0.02, 100.0, PmwVariant::Pure, 1.0, n)?;
    /// let eps = Epsilon::new(1, 1)?;
    /// let mut budget = Accountant::pure(eps);
    /// let mut s = PmwSession::on_reduced_domain(&x, n, params, k, eps, &mut budget, &v, seeded_rng(2))?;
    /// assert_eq!(s.params().threshold, 0.02 + 0.05);
    /// let half = Query::dense((0..cells).map(|u| (u % 2) as f64).collect())?;
    /// assert!((s.answer(&half)?.value() - 0.5).abs() < 0.1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn on_reduced_domain(
        data: &'a Distribution,
        n: u64,
        params: PmwParams,
        rounds: usize,
        epsilon: Epsilon,
        budget: &mut Accountant,
        domain: &ReducedDomain,
        rng: R,
    ) -> Result<Self, PmwError> {
        if domain.universe() != data.len() {
            return Err(PmwError::Data(DataError::LengthMismatch {
                expected: data.len(),
                got: domain.universe(),
            }));
        }
        let params = params.with_threshold_shift(domain.threshold_shift())?;
        let state = if domain.is_full() {
            MwState::uniform(data.len(), MemoryCap::default())?
        } else {
            MwState::uniform_on(domain.cells().to_vec(), data.len())?
        };
        Self::with_state(data, n, params, rounds, epsilon, budget, state, rng)
    }

    /// Answers the next query (Fig. 4.2, one round).
    pub fn answer(&mut self, query: &Query) -> Result<Answer, PmwError> {
        if self.failed {
            return Err(PmwError::Failure);
        }
        if self.round >= self.rounds {
            return Err(PmwError::RoundsExhausted {
                rounds: self.rounds,
            });
        }
        query.check_universe(self.data.len())?;
        self.round += 1;
        let truth = crate::mw::dot(query, self.data.probabilities());
        let noisy = self
            .noise
            .release(Fixed::from_f64(truth)?, &mut self.rng)?
            .to_f64();
        let here = match self.pending.take() {
            Some(u) => self.state.apply_then_evaluate(u, query),
            None => self.state.evaluate(query),
        };
        let d_hat = here - noisy;
        if d_hat.abs() <= self.threshold {
            self.transcript.push(TranscriptEntry::Lazy);
            return Ok(Answer::Lazy(here));
        }
        self.updates += 1;
        let step = if d_hat > 0.0 {
            -self.params.eta
        } else {
            self.params.eta
        };
        self.pending = self.state.defer_update(query, step, here);
        if self.updates as f64 > self.params.max_updates {
            self.failed = true;
            return Err(PmwError::Failure);
        }
        self.transcript.push(TranscriptEntry::Update(noisy));
        Ok(Answer::Update(noisy))
    }
}

impl<R> PmwSession<'_, R> {
    /// The transcript `v_1, v_2, …` of the answered rounds.
    pub fn transcript(&self) -> &[TranscriptEntry] {
        &self.transcript
    }

    /// Rounds still available.
    pub fn rounds_left(&self) -> usize {
        if self.failed {
            0
        } else {
            self.rounds - self.round
        }
    }

    /// Update rounds so far.
    pub fn updates(&self) -> usize {
        self.updates
    }

    /// True once the session aborted.
    pub fn has_failed(&self) -> bool {
        self.failed
    }

    /// The threshold in use (`T`, or the once-drawn `T̂`).
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// How many times a threshold was drawn (1 for the pure variant, else 0).
    pub fn threshold_draws(&self) -> u32 {
        self.threshold_draws
    }

    /// The constants.
    pub fn params(&self) -> &PmwParams {
        &self.params
    }

    /// The current hypothesis `x_t` — public: it is a function of the transcript.
    pub fn hypothesis(&mut self) -> &MwState {
        self.flush();
        &self.state
    }

    /// Applies the deferred update, if any.
    fn flush(&mut self) {
        if let Some(u) = self.pending.take() {
            self.state.apply(u);
        }
    }
}

/// Recomputes every released answer from the public transcript alone: the
/// hypothesis is rebuilt from the update rounds' `â_t`, and each lazy round's
/// output is the rebuilt `f_t(x_{t−1})`. Used to audit that lazy outputs never
/// depend on the data (thesis §4.3.2).
pub fn replay(
    start: MwState,
    params: &PmwParams,
    queries: &[Query],
    transcript: &[TranscriptEntry],
) -> Vec<f64> {
    let mut state = start;
    // The session's own update path (deferred, fused with the next evaluation),
    // so the replayed answers are bit-for-bit the released ones.
    let mut pending = None;
    queries
        .iter()
        .zip(transcript)
        .map(|(q, entry)| {
            let here = match pending.take() {
                Some(u) => state.apply_then_evaluate(u, q),
                None => state.evaluate(q),
            };
            match *entry {
                TranscriptEntry::Lazy => here,
                TranscriptEntry::Update(noisy) => {
                    let step = if here - noisy > 0.0 {
                        -params.eta
                    } else {
                        params.eta
                    };
                    pending = state.defer_update(q, step, here);
                    noisy
                }
            }
        })
        .collect()
}

/// Result of [`synthetic`].
#[derive(Debug)]
pub struct SyntheticPmw {
    /// The released distribution `x_t`.
    pub state: MwState,
    /// Full passes made over the workload.
    pub passes: usize,
    /// Update rounds in total.
    pub updates: usize,
}

/// PMW's synthetic-data mode (thesis §4.2, spec §3.6): iterate over the workload
/// until a full pass makes no update, at most `⌈m⌉ + 1` passes; release `x_t`.
/// `params` must be computed with `k = passes · |Q|`; see [`synthetic_rounds`].
pub fn synthetic<R: Rng + CryptoRng>(
    data: &Distribution,
    n: u64,
    workload: &Workload,
    params: PmwParams,
    epsilon: Epsilon,
    budget: &mut Accountant,
    rng: R,
) -> Result<SyntheticPmw, PmwError> {
    let max_passes = params.max_updates.ceil() as usize + 1;
    let rounds = max_passes.saturating_mul(workload.len());
    let mut session = PmwSession::new(data, n, params, rounds, epsilon, budget, rng)?;
    let mut passes = 0;
    while passes < max_passes {
        passes += 1;
        let before = session.updates();
        for q in workload.queries() {
            session.answer(q)?;
        }
        if session.updates() == before {
            break;
        }
    }
    session.flush();
    Ok(SyntheticPmw {
        updates: session.updates(),
        state: session.state,
        passes,
    })
}

/// The number of rounds `k = (⌈m⌉ + 1)·|Q|` to use in the theory constants of the
/// synthetic-data mode (m itself depends on k; two fixed-point steps suffice).
pub fn synthetic_rounds(
    epsilon: f64,
    beta: f64,
    n: u64,
    queries: usize,
    cells: usize,
    variant: PmwVariant,
) -> Result<PmwParams, PmwError> {
    let mut k = queries.max(1);
    let mut p = PmwParams::theory(epsilon, beta, n, k, cells, variant)?;
    for _ in 0..3 {
        k = (p.max_updates.ceil() as usize + 1).saturating_mul(queries.max(1));
        p = PmwParams::theory(epsilon, beta, n, k, cells, variant)?;
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::CountHistogram;
    use crate::seeded_rng;

    fn random_distribution(cells: usize, seed: u64) -> Distribution {
        use privq_core::rand_core::Rng;
        let mut rng = seeded_rng(seed);
        let w: Vec<f64> = (0..cells)
            .map(|_| (rng.next_u32() % 1000) as f64 + 1.0)
            .collect();
        Distribution::from_weights(w).unwrap()
    }

    fn random_queries(cells: usize, k: usize, seed: u64) -> Vec<Query> {
        use privq_core::rand_core::Rng;
        let mut rng = seeded_rng(seed);
        (0..k)
            .map(|_| {
                Query::dense((0..cells).map(|_| f64::from(rng.next_u32() & 1)).collect()).unwrap()
            })
            .collect()
    }

    #[test]
    fn theory_constants_match_spec_table() {
        let a = PmwParams::theory(
            1.0,
            0.05,
            21_574,
            697,
            1 << 16,
            PmwVariant::Approximate { delta: 1e-6 },
        )
        .unwrap();
        assert!((a.eta - 0.143).abs() < 5e-4, "{}", a.eta);
        assert!((a.sigma - 0.150).abs() < 1e-3, "{}", a.sigma);
        assert!((a.threshold - 5.71).abs() < 0.01);
        assert!((a.max_updates - 545.0).abs() < 2.0, "{}", a.max_updates);
        let b = PmwParams::theory(
            1.0,
            0.05,
            1_000_000,
            1000,
            1 << 16,
            PmwVariant::Approximate { delta: 1e-6 },
        )
        .unwrap();
        assert!((b.threshold - 0.854).abs() < 0.002, "{}", b.threshold);
        assert!(
            (b.max_updates - 24_340.0).abs() < 100.0,
            "{}",
            b.max_updates
        );
        let p = PmwParams::theory(1.0, 0.05, 21_574, 697, 1 << 16, PmwVariant::Pure).unwrap();
        assert!((p.eta - 0.166).abs() < 5e-4, "{}", p.eta);
        assert!((p.threshold - 6.63).abs() < 0.02);
        // eq. 4.14 holds with equality: σn = 10m/ε.
        assert!((p.sigma * 21_574.0 / (10.0 * p.max_updates) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn bad_input_is_typed() {
        let v = PmwVariant::Approximate { delta: 1e-6 };
        assert!(matches!(
            PmwParams::theory(0.0, 0.05, 10, 10, 4, v),
            Err(PmwError::InvalidParameter(_))
        ));
        assert!(matches!(
            PmwParams::theory(-1.0, 0.05, 10, 10, 4, v),
            Err(PmwError::InvalidParameter(_))
        ));
        assert!(matches!(
            PmwParams::theory(1.0, 0.05, 10, 0, 4, v),
            Err(PmwError::InvalidParameter(_))
        ));
        assert!(matches!(
            PmwParams::theory(1.0, 0.05, 0, 10, 4, v),
            Err(PmwError::Data(DataError::EmptyData))
        ));
        assert!(matches!(
            PmwParams::user(0.1, 0.001, 0.05, 100.0, PmwVariant::Pure, 1.0, 1000),
            Err(PmwError::PrivacyConditionViolated { .. })
        ));
        assert!(PmwParams::user(0.1, 1.0, 0.05, 100.0, PmwVariant::Pure, 1.0, 1000).is_ok());
    }

    /// A user profile with a tiny update budget so that aborts happen.
    fn small_budget_params(n: u64, variant: PmwVariant) -> PmwParams {
        let m = 5.0;
        let sigma = 10.0 * m / n as f64 * 100.0; // generous: condition holds for both variants
        PmwParams::user(0.2, sigma, 0.02, m, variant, 1.0, n).unwrap()
    }

    #[test]
    fn update_count_never_exceeds_m_and_failure_is_final() {
        let n = 1_000_000u64;
        let x = random_distribution(256, 1);
        let queries = random_queries(256, 300, 2);
        for variant in [PmwVariant::Pure, PmwVariant::Approximate { delta: 1e-6 }] {
            let params = small_budget_params(n, variant);
            let eps = Epsilon::new(1, 1).unwrap();
            let mut budget = Accountant::approximate(eps, 1e-6).unwrap();
            let mut s =
                PmwSession::new(&x, n, params, 300, eps, &mut budget, seeded_rng(3)).unwrap();
            let mut failed_at = None;
            for (i, q) in queries.iter().enumerate() {
                match s.answer(q) {
                    Ok(_) => assert!(failed_at.is_none()),
                    Err(PmwError::Failure) => {
                        failed_at.get_or_insert(i);
                    }
                    Err(e) => panic!("{e}"),
                }
                let kept = s
                    .transcript()
                    .iter()
                    .filter(|e| matches!(e, TranscriptEntry::Update(_)))
                    .count();
                assert!(kept as f64 <= params.max_updates);
            }
            assert!(
                failed_at.is_some(),
                "the uniform start is far from x: updates must run out"
            );
            assert_eq!(s.rounds_left(), 0);
            // The budget was charged once for the session.
            assert_eq!(budget.ledger().len(), 1);
        }
    }

    #[test]
    fn lazy_outputs_are_reproduced_from_the_transcript() {
        let n = 10_000_000u64;
        let x = random_distribution(128, 4);
        let queries = random_queries(128, 200, 5);
        for variant in [PmwVariant::Pure, PmwVariant::Approximate { delta: 1e-6 }] {
            let params = PmwParams::user(0.05, 0.002, 0.01, 2000.0, variant, 1.0, n).unwrap();
            let eps = Epsilon::new(1, 1).unwrap();
            let mut budget = Accountant::approximate(eps, 1e-6).unwrap();
            let mut s =
                PmwSession::new(&x, n, params, 200, eps, &mut budget, seeded_rng(6)).unwrap();
            let outputs: Vec<f64> = queries
                .iter()
                .map(|q| s.answer(q).unwrap().value())
                .collect();
            let lazy = s
                .transcript()
                .iter()
                .filter(|e| **e == TranscriptEntry::Lazy)
                .count();
            assert!(
                lazy > 20 && s.updates() > 5,
                "lazy {lazy}, updates {}",
                s.updates()
            );
            let start = MwState::uniform(128, MemoryCap::default()).unwrap();
            let replayed = replay(start, &params, &queries, s.transcript());
            assert_eq!(outputs, replayed);
        }
    }

    #[test]
    fn deferred_kernel_updates_replay_bit_for_bit() {
        // Parities and conjunctions take the fast path: each update is deferred and
        // fused with the next round's evaluation; the replay must match exactly.
        let n = 10_000_000u64;
        let x = random_distribution(256, 11);
        let dom = crate::data::Domain::binary((0..8).map(|i| format!("a{i}"))).unwrap();
        let queries: Vec<Query> = (0..300)
            .map(|i| {
                let attrs = [i % 8, (i * 3 + 1) % 8];
                if i % 2 == 0 {
                    Query::parity(&dom, &attrs).unwrap()
                } else {
                    Query::conjunction(&dom, &attrs).unwrap()
                }
            })
            .collect();
        let params = PmwParams::user(0.05, 0.002, 0.005, 2000.0, PmwVariant::Pure, 1.0, n).unwrap();
        let eps = Epsilon::new(1, 1).unwrap();
        let mut budget = Accountant::pure(eps);
        let mut s = PmwSession::new(&x, n, params, 300, eps, &mut budget, seeded_rng(12)).unwrap();
        let outputs: Vec<f64> = queries
            .iter()
            .map(|q| s.answer(q).unwrap().value())
            .collect();
        assert!(s.updates() > 40, "updates {}", s.updates());
        let start = MwState::uniform(256, MemoryCap::default()).unwrap();
        let replayed = replay(start, &params, &queries, s.transcript());
        assert_eq!(outputs, replayed);
        // The flushed hypothesis is the immediate-update one.
        let mut immediate = MwState::uniform(256, MemoryCap::default()).unwrap();
        for (q, e) in queries.iter().zip(s.transcript()) {
            if let TranscriptEntry::Update(noisy) = *e {
                let here = immediate.evaluate(q);
                let step = if here > noisy {
                    -params.eta
                } else {
                    params.eta
                };
                immediate.update_known(q, step, here);
            }
        }
        assert_eq!(s.hypothesis().probabilities(), immediate.probabilities());
    }

    #[test]
    fn pure_variant_draws_the_threshold_once() {
        let n = 1_000_000u64;
        let x = random_distribution(64, 7);
        let queries = random_queries(64, 100, 8);
        let params = PmwParams::user(0.05, 0.01, 0.02, 500.0, PmwVariant::Pure, 1.0, n).unwrap();
        let eps = Epsilon::new(1, 1).unwrap();
        let mut budget = Accountant::pure(eps);
        let mut s = PmwSession::new(&x, n, params, 100, eps, &mut budget, seeded_rng(9)).unwrap();
        let t0 = s.threshold();
        assert_ne!(t0, params.threshold, "T̂ carries noise");
        for q in &queries {
            s.answer(q).unwrap();
            assert_eq!(s.threshold(), t0);
        }
        assert_eq!(s.threshold_draws(), 1);
        // A second session on the same budget is refused.
        assert!(matches!(
            PmwSession::new(&x, n, params, 100, eps, &mut budget, seeded_rng(9)),
            Err(PmwError::Budget(_))
        ));
    }

    #[test]
    fn theory_profile_is_accurate_at_large_nominal_n() {
        // Lemma 4.3.6: every answer within 2T with probability ≥ 1 − β.
        let n = 100_000_000u64;
        let cells = 1 << 10;
        let k = 200;
        let beta = 0.05;
        let mut bad_runs = 0;
        for run in 0..20 {
            let x = random_distribution(cells, 100 + run);
            let queries = random_queries(cells, k, 200 + run);
            let v = PmwVariant::Approximate { delta: 1e-6 };
            let params = PmwParams::theory(1.0, beta, n, k, cells, v).unwrap();
            let eps = Epsilon::new(1, 1).unwrap();
            let mut budget = Accountant::approximate(eps, 1e-6).unwrap();
            let mut s =
                PmwSession::new(&x, n, params, k, eps, &mut budget, seeded_rng(run)).unwrap();
            let worst = queries
                .iter()
                .map(|q| (s.answer(q).unwrap().value() - q.evaluate(x.probabilities())).abs())
                .fold(0.0, f64::max);
            bad_runs += usize::from(worst > 2.0 * params.threshold);
        }
        assert!(
            bad_runs <= 3,
            "{bad_runs} of 20 runs had an answer off by more than 2T"
        );
    }

    #[test]
    fn synthetic_mode_stops() {
        let counts = CountHistogram::from_counts(
            (0..64).map(|u| (u * 7 % 13) as u64 * 1000).collect(),
            MemoryCap::default(),
        )
        .unwrap();
        let x = counts.normalized().unwrap();
        let dom = crate::data::Domain::binary((0..6).map(|i| format!("a{i}"))).unwrap();
        let w = Workload::parities(&dom, 2).unwrap();
        let params = PmwParams::user(
            0.1,
            0.001,
            0.02,
            200.0,
            PmwVariant::Pure,
            1.0,
            1_000_000_000,
        )
        .unwrap();
        let eps = Epsilon::new(1, 1).unwrap();
        let mut budget = Accountant::pure(eps);
        let out = synthetic(
            &x,
            1_000_000_000,
            &w,
            params,
            eps,
            &mut budget,
            seeded_rng(10),
        )
        .unwrap();
        assert!(out.passes <= params.max_updates.ceil() as usize + 1);
        assert!(out.updates as f64 <= params.max_updates);
        let err = w
            .queries()
            .iter()
            .map(|q| (q.evaluate(x.probabilities()) - out.state.evaluate(q)).abs())
            .fold(0.0, f64::max);
        assert!(err < 0.1, "max error {err}");
        let p = synthetic_rounds(1.0, 0.05, 21_574, 137, 1 << 16, PmwVariant::Pure).unwrap();
        assert!(p.max_updates > 1.0);
    }
}

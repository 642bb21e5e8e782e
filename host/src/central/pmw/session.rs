//! The interactive [`PmwSession`], its [`replay`] from a transcript, and the
//! synthetic-data mode ([`synthetic`]).

use std::fmt;

use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::{Epsilon, Fixed, GridLaplace};

use crate::accountant::{Accountant, Cost, Receipt};
use crate::central::mw::{MwState, PendingUpdate};
use crate::central::pmw_reduce::ReducedDomain;
use crate::central::{epsilon_at_most, fixed_ceil};
use crate::contract::Neighbours;
use crate::data::{CountHistogram, DataError, Distribution, MemoryCap};
use crate::query::{Query, Workload};

use super::{Answer, PmwConfig, PmwError, PmwVariant, TranscriptEntry, check_common};

/// The noise of a session, all on one grid γ = 2^`grid_exp`.
#[derive(Debug, Clone)]
struct Noise {
    /// Noise of the compared answer (`â_t` or `f_t(x) + ν_t`).
    compare: GridLaplace,
    /// Pure variant: the fresh answers.
    fresh: Option<GridLaplace>,
    /// Pure variant: the threshold draw.
    threshold: Option<GridLaplace>,
}

impl Noise {
    fn new(params: &PmwConfig, universe: usize) -> Result<Self, PmwError> {
        let delta = params.neighbours().fraction_l1(params.n)?;
        let unit = fixed_ceil(delta)?;
        // The default grid for Δ: the largest power of two γ ≤ Δ/2^10.
        let grid_exp = GridLaplace::new(unit, Epsilon::new(1, 1)?)?.grid_exp();
        let gamma_bits = 1u64 << (grid_exp + 32);
        // Δ in whole grid steps, plus a margin for rounding f(x) to fixed point
        // (≤ 2^-32) and for evaluating it in floating point (≤ N·2^-52, since
        // Σ f·x ≤ 1): the snapped answers of neighbours are at most `steps` apart.
        let rounding_bits = 1 + (universe as u64).div_ceil(1 << 20);
        let steps =
            (unit.to_bits() as u64).div_ceil(gamma_bits) + rounding_bits.div_ceil(gamma_bits);
        let sens = |multiple: u64| -> Result<Fixed, PmwError> {
            multiple
                .checked_mul(steps)
                .and_then(|s| s.checked_mul(gamma_bits))
                .and_then(|b| i64::try_from(b).ok())
                .map(Fixed::from_bits)
                .ok_or(PmwError::InvalidParameter(
                    "the update budget m is too large for the fixed-point grid",
                ))
        };
        let grid = |s: Fixed, e: Epsilon| GridLaplace::with_grid(s, e, grid_exp);
        match params.split()? {
            None => {
                // Per-answer loss ε₀ = (1 + 2⁻⁹)/(nσ), the value the privacy
                // condition was checked for, whatever the grid margin in `s`: when
                // the margin makes s·n exceed 1 + 2⁻⁹ (γ at its 2⁻³² floor, huge
                // universes) the noise grows instead of the loss.
                let s = sens(1)?;
                let e = epsilon_at_most((1.0 + 1.0 / 512.0) / (params.n as f64 * params.sigma))?;
                Ok(Noise {
                    compare: grid(s, e)?,
                    fresh: None,
                    threshold: None,
                })
            }
            Some(split) => {
                let c = params.answer_cap();
                let s_cmp = sens(2 * (c + 1))?;
                // Scale max(σ, 2c′Δ/ε₂): ε no larger than ε₂.
                let e_cmp = epsilon_at_most(s_cmp.to_f64() / params.sigma)?.min(split.comparisons);
                Ok(Noise {
                    compare: grid(s_cmp, e_cmp)?,
                    fresh: Some(grid(sens(c)?, split.answers)?),
                    threshold: Some(grid(sens(1)?, split.threshold)?),
                })
            }
        }
    }
}

/// An interactive PMW session over a private count histogram (replace-one-record
/// neighbours, n public; see the module docs).
///
/// ```
/// use privq_host::data::{CountHistogram, MemoryCap};
/// use privq_host::central::pmw::{PmwConfig, PmwSession, PmwVariant};
/// use privq_host::query::Query;
/// use privq_host::accountant::Accountant;
/// use privq_host::{Epsilon, seeded_rng};
///
/// let counts = CountHistogram::from_counts(vec![500_000, 300_000, 150_000, 50_000], MemoryCap::default())?;
/// let eps = Epsilon::new(1, 1)?;
/// let params = PmwConfig::theory(eps, 0.05, counts.total(), 100, 4, PmwVariant::Pure)?;
/// let mut budget = Accountant::pure(eps);
/// let mut session = PmwSession::new(&counts, params, 100, eps, &mut budget, seeded_rng(1))?;
/// let a = session.answer(&Query::dense(vec![1.0, 1.0, 0.0, 0.0])?)?;
/// assert!((a.value() - 0.8).abs() < 2.0 * params.threshold());
/// assert_eq!(session.rounds_left(), 99);
/// assert_eq!(budget.ledger().len(), 3); // ε/10 + 3ε/5 + 3ε/10
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PmwSession<R> {
    data: Distribution,
    state: MwState,
    /// The last update round's update, applied in the same pass as the next
    /// round's evaluation of the hypothesis (bit-for-bit the immediate update).
    pending: Option<PendingUpdate>,
    params: PmwConfig,
    noise: Noise,
    /// `T` (approximate) or the secret `T̂` (pure): never exposed.
    pub(super) compare_threshold: Fixed,
    threshold_draws: u32,
    rounds: usize,
    round: usize,
    updates: usize,
    failed: bool,
    transcript: Vec<TranscriptEntry>,
    receipts: Vec<Receipt>,
    rng: R,
}

impl<R> fmt::Debug for PmwSession<R> {
    // By hand, so that the secret threshold T̂ is never formatted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PmwSession")
            .field("params", &self.params)
            .field("rounds", &self.rounds)
            .field("round", &self.round)
            .field("updates", &self.updates)
            .field("failed", &self.failed)
            .field("transcript", &self.transcript)
            .finish_non_exhaustive()
    }
}

impl<R: Rng + CryptoRng> PmwSession<R> {
    /// The library entry point of `privq pmw`: a session for at most `rounds`
    /// queries over the universe of `counts`, or over the public sub-universe
    /// `reduced` (thesis §4.6), together with the accountant it charged — built by
    /// [`PmwConfig::accountant`] (budget exactly the session's cost, bound to
    /// replace-one-record neighbours), so the caller decides neither.
    ///
    /// ```
    /// use privq_host::central::pmw::{PmwConfig, PmwSession, PmwVariant};
    /// use privq_host::contract::Neighbours;
    /// use privq_host::data::{CountHistogram, MemoryCap};
    /// use privq_host::{Epsilon, seeded_rng};
    ///
    /// let counts = CountHistogram::from_counts(vec![30, 10, 40, 20], MemoryCap::default())?;
    /// let eps = Epsilon::new(1, 1)?;
    /// let params = PmwConfig::user(0.5, 0.2, 0.3, 4.0, PmwVariant::Pure, eps, 100)?;
    /// let (session, accountant) = PmwSession::open(&counts, params, 5, None, seeded_rng(1))?;
    /// assert_eq!(accountant.neighbours(), Some(Neighbours::Replace));
    /// assert_eq!(accountant.spent_epsilon(), Some(eps));
    /// assert_eq!(session.transcript().len(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(
        counts: &CountHistogram,
        params: PmwConfig,
        rounds: usize,
        reduced: Option<&ReducedDomain>,
        rng: R,
    ) -> Result<(Self, Accountant), PmwError> {
        let mut budget = params.accountant()?;
        let epsilon = params.epsilon();
        let session = match reduced {
            Some(v) => {
                Self::on_reduced_domain(counts, params, rounds, epsilon, &mut budget, v, rng)
            }
            None => Self::new(counts, params, rounds, epsilon, &mut budget, rng),
        }?;
        Ok((session, budget))
    }

    /// A session over the universe of `counts` (V = U) for at most `rounds` queries,
    /// charging `epsilon` (and δ for the approximate variant) to `budget`. n and the
    /// normalized histogram are computed from `counts`; `params` must have been
    /// checked for this n and this ε ([`PmwError::ParamsMismatch`] otherwise).
    pub fn new(
        counts: &CountHistogram,
        params: PmwConfig,
        rounds: usize,
        epsilon: Epsilon,
        budget: &mut Accountant,
        rng: R,
    ) -> Result<Self, PmwError> {
        let state = MwState::uniform(counts.len(), MemoryCap::default())?;
        Self::with_state(counts, params, rounds, epsilon, budget, state, rng)
    }

    /// A session whose hypothesis starts from `state` — e.g. uniform on a public
    /// sub-universe V (thesis §4.6; raise the threshold by γ as Lemma 4.3.7 says).
    ///
    /// Everything is validated first, then the cost is charged, then (pure variant)
    /// `T̂` is drawn: a refused charge samples nothing. Crate-private: lazy rounds
    /// release `f(x₀)` exactly, so the start must be public (uniform, or a
    /// data-independent reduced domain), never built from the data.
    pub(crate) fn with_state(
        counts: &CountHistogram,
        params: PmwConfig,
        rounds: usize,
        epsilon: Epsilon,
        budget: &mut Accountant,
        state: MwState,
        mut rng: R,
    ) -> Result<Self, PmwError> {
        let n = counts.total();
        check_common(n, rounds, counts.len())?;
        if params.epsilon != epsilon {
            return Err(PmwError::ParamsMismatch {
                what: "epsilon",
                checked_for: params.epsilon.to_string(),
                session: epsilon.to_string(),
            });
        }
        if params.n != n {
            return Err(PmwError::ParamsMismatch {
                what: "n",
                checked_for: params.n.to_string(),
                session: n.to_string(),
            });
        }
        if state.universe() != counts.len() {
            return Err(PmwError::Data(DataError::LengthMismatch {
                expected: counts.len(),
                got: state.universe(),
            }));
        }
        let data = counts.normalized()?;
        let noise = Noise::new(&params, counts.len())?;
        let public_threshold = Fixed::from_f64(params.threshold)?;
        let receipts = charge(&params, budget)?;
        let (compare_threshold, threshold_draws) = match &noise.threshold {
            None => (public_threshold, 0),
            // T̂ = T + Lap(Δ/ε₁), drawn once, after the charge.
            Some(mech) => (mech.release(public_threshold, &mut rng)?, 1),
        };
        Ok(PmwSession {
            data,
            state,
            pending: None,
            params,
            noise,
            compare_threshold,
            threshold_draws,
            rounds,
            round: 0,
            updates: 0,
            failed: false,
            transcript: Vec::new(),
            receipts,
            rng,
        })
    }

    /// PMW on a public sub-universe `V` drawn by domain reduction (thesis
    /// Lemma 4.6.4 / Thm 4.1.4): the hypothesis starts uniform on
    /// `domain.cells()` and the threshold becomes `T' = T + φ + α`
    /// ([`ReducedDomain::threshold_shift`]; `T` itself when `V = U`).
    ///
    /// Pass the *unshifted* `params`, built for `|V|` cells
    /// (`PmwConfig::theory(…, domain.len(), …)`: η and m use `ln |V|`) or by
    /// [`PmwConfig::user`]; their privacy checks are what make the session private,
    /// for every database. Accuracy additionally needs the data to be
    /// (ξ, φ)-pseudo-smooth with the ξ and φ the reduction assumed, and a
    /// non-adaptive query sequence.
    ///
    /// ```
    /// use privq_host::accountant::Accountant;
    /// use privq_host::data::{CountHistogram, MemoryCap};
    /// use privq_host::central::pmw::{PmwConfig, PmwSession, PmwVariant};
    /// use privq_host::central::pmw_reduce::DomainReduction;
    /// use privq_host::query::Query;
    /// use privq_host::{Epsilon, seeded_rng};
    ///
    /// let cells = 1 << 16;
    /// // ξ-smooth with ξ = 1/N: 1 500 records in every cell.
    /// let counts = CountHistogram::from_counts(vec![1_500; cells], MemoryCap::default())?;
    /// let (n, k) = (counts.total(), 10);
    /// let v = DomainReduction::new(1.0 / cells as f64, 0.05, 0.05, k, 0.0)?
    ///     .sample(cells, &mut seeded_rng(1))?;
    /// let eps = Epsilon::new(1, 1)?;
    /// let params = PmwConfig::user(0.05, 0.001, 0.02, 100.0, PmwVariant::Pure, eps, n)?;
    /// let mut budget = Accountant::pure(eps);
    /// let mut s = PmwSession::on_reduced_domain(&counts, params, k, eps, &mut budget, &v, seeded_rng(2))?;
    /// assert_eq!(s.threshold(), 0.02 + 0.05);
    /// let half = Query::dense((0..cells).map(|u| (u % 2) as f64).collect())?;
    /// assert!((s.answer(&half)?.value() - 0.5).abs() < 0.1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on_reduced_domain(
        counts: &CountHistogram,
        params: PmwConfig,
        rounds: usize,
        epsilon: Epsilon,
        budget: &mut Accountant,
        domain: &ReducedDomain,
        rng: R,
    ) -> Result<Self, PmwError> {
        if domain.universe() != counts.len() {
            return Err(PmwError::Data(DataError::LengthMismatch {
                expected: counts.len(),
                got: domain.universe(),
            }));
        }
        let params = params.with_threshold_shift(domain.threshold_shift())?;
        let state = if domain.is_full() {
            MwState::uniform(counts.len(), MemoryCap::default())?
        } else {
            MwState::uniform_on(domain.cells().to_vec(), counts.len())?
        };
        Self::with_state(counts, params, rounds, epsilon, budget, state, rng)
    }

    /// Answers the next query (Fig. 4.2, one round; the pure variant as in the module
    /// docs).
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
        let truth = Fixed::from_f64(crate::central::mw::dot(query, self.data.probabilities()))?;
        let compared = self.noise.compare.release(truth, &mut self.rng)?;
        let here = match self.pending.take() {
            Some(u) => self.state.apply_then_evaluate(u, query),
            None => self.state.evaluate(query),
        };
        // |h_t − compared| ≤ threshold, exactly in fixed point.
        let gap = i128::from(Fixed::from_f64(here)?.to_bits()) - i128::from(compared.to_bits());
        if gap.abs() <= i128::from(self.compare_threshold.to_bits()) {
            self.transcript.push(TranscriptEntry::Lazy);
            return Ok(Answer::Lazy(here));
        }
        self.updates += 1;
        if self.updates as f64 > self.params.max_updates {
            // Abort before anything else is drawn or updated.
            self.failed = true;
            return Err(PmwError::Failure);
        }
        let released = match &self.noise.fresh {
            // Pure: a fresh answer, independent of the comparison and of T̂.
            Some(fresh) => fresh.release(truth, &mut self.rng)?.to_f64(),
            None => compared.to_f64(),
        };
        let step = self.params.step(here, released);
        self.pending = self.state.defer_update(query, step, here);
        self.transcript.push(TranscriptEntry::Update(released));
        Ok(Answer::Update(released))
    }
}

impl<R: Rng + CryptoRng> PmwSession<R> {
    /// [`PmwSession::answer`], except that once the session has failed (more than
    /// `m` update rounds), the query is answered from the last hypothesis
    /// ([`Answer::Hypothesis`]) instead of refused. Those answers read no data: the
    /// hypothesis is a function of the transcript, so they cost nothing.
    pub fn answer_or_hypothesis(&mut self, query: &Query) -> Result<Answer, PmwError> {
        if !self.failed {
            match self.answer(query) {
                Err(PmwError::Failure) => {}
                other => return other,
            }
        }
        query.check_universe(self.data.len())?;
        Ok(Answer::Hypothesis(self.hypothesis().evaluate(query)))
    }
}

/// Charges the session's cost; the pure variant as its three exact parts.
fn charge(params: &PmwConfig, budget: &mut Accountant) -> Result<Vec<Receipt>, PmwError> {
    let cost = params.cost();
    let nb = params.neighbours();
    if !budget.can_afford(&cost) {
        // Refused as a whole, with the accountant's own error; nothing recorded.
        return Err(budget
            .clone()
            .charge_as(nb, "PMW session", cost)
            .err()
            .map_or(
                PmwError::InvalidParameter("the budget refused the session"),
                PmwError::Budget,
            ));
    }
    let receipts = match params.split()? {
        None => vec![budget.charge_as(nb, "PMW session (thesis Fig. 4.2, (ε, δ))", cost)?],
        Some(split) => vec![
            budget.charge_as(
                nb,
                "PMW noisy threshold T̂ (ε₁ = ε/10)",
                split.threshold.into(),
            )?,
            budget.charge_as(
                nb,
                "PMW above/below comparisons (ε₂ = 3ε/5)",
                split.comparisons.into(),
            )?,
            budget.charge_as(
                nb,
                "PMW fresh update answers (ε₃ = 3ε/10)",
                split.answers.into(),
            )?,
        ],
    };
    Ok(receipts)
}

impl<R> PmwSession<R> {
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

    /// Update rounds so far (including an aborting one).
    pub fn updates(&self) -> usize {
        self.updates
    }

    /// True once the session aborted.
    pub fn has_failed(&self) -> bool {
        self.failed
    }

    /// The **public** threshold T (shifted by γ on a reduced domain). The pure
    /// variant compares with a secret `T̂` that no method returns.
    pub fn threshold(&self) -> f64 {
        self.params.threshold
    }

    /// How many times a threshold was drawn (1 for the pure variant, else 0).
    pub fn threshold_draws(&self) -> u32 {
        self.threshold_draws
    }

    /// The constants.
    pub fn params(&self) -> &PmwConfig {
        &self.params
    }

    /// The neighbour relation of the guarantee.
    pub fn neighbours(&self) -> Neighbours {
        self.params.neighbours()
    }

    /// What the session was charged.
    pub fn cost(&self) -> Cost {
        self.params.cost()
    }

    /// The receipts of the charges that paid for the session.
    pub fn receipts(&self) -> &[Receipt] {
        &self.receipts
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
/// hypothesis is rebuilt from the update rounds' released answers, and each lazy
/// round's output is the rebuilt `f_t(x_{t−1})`. Used to audit that lazy outputs
/// never depend on the data (thesis §4.3.2).
pub fn replay(
    start: MwState,
    params: &PmwConfig,
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
                    let step = params.step(here, noisy);
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

/// PMW's synthetic-data mode (thesis §4.2): iterate over the workload until a full
/// pass makes no update, at most `⌈m⌉ + 1` passes (at most m rounds update, so the
/// thesis' bound of about n + 1 passes becomes `⌈m⌉ + 1`); release `x_t`.
/// `params` must be computed with `k = passes · |Q|`; see [`synthetic_rounds`].
pub fn synthetic<R: Rng + CryptoRng>(
    counts: &CountHistogram,
    workload: &Workload,
    params: PmwConfig,
    epsilon: Epsilon,
    budget: &mut Accountant,
    rng: R,
) -> Result<SyntheticPmw, PmwError> {
    let max_passes = params.max_updates.ceil() as usize + 1;
    let rounds = max_passes.saturating_mul(workload.len());
    let mut session = PmwSession::new(counts, params, rounds, epsilon, budget, rng)?;
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
    epsilon: Epsilon,
    beta: f64,
    n: u64,
    queries: usize,
    cells: usize,
    variant: PmwVariant,
) -> Result<PmwConfig, PmwError> {
    let mut k = queries.max(1);
    let mut p = PmwConfig::theory(epsilon, beta, n, k, cells, variant)?;
    for _ in 0..3 {
        k = (p.max_updates.ceil() as usize + 1).saturating_mul(queries.max(1));
        p = PmwConfig::theory(epsilon, beta, n, k, cells, variant)?;
    }
    Ok(p)
}

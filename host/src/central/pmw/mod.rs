//! Private multiplicative weights (Hardt, thesis Ch. 4, Fig. 4.2): interactive answers
//! to adaptively chosen linear queries, in an (ε, δ) and an (ε, 0) variant, and the
//! synthetic-data mode.
//!
//! Both variants keep the hypothesis `x_t` (a multiplicative-weights state) and answer
//! query `f_t` with `h_t = f_t(x_{t−1})` in a **lazy round**, or with a noisy answer and
//! one MW step in an **update round**; after more than `m` update rounds the session
//! aborts with [`PmwError::Failure`]. Lazy outputs never depend on the data except
//! through the transcript, so [`replay`] reconstructs every output from it.
//!
//! # Privacy contract
//! Neighbours are **replace-one-record** ([`Neighbours::Replace`]): n is public, and
//! the normalized answer `f(x) = (1/n)·Σ f(record)` has sensitivity `Δ = 1/n`
//! ([`Neighbours::fraction_l1`]). n and the distribution are computed by the session
//! from the counts, never passed beside them. [`PmwConfig`] record the ε (and δ) and
//! the n they were checked for; a session refuses other values
//! ([`PmwError::ParamsMismatch`]), states [`PmwConfig::cost`] and charges the
//! [`Accountant`] **before** drawing anything
//! (including the threshold). All noise is exact discrete Laplace on the core's
//! power-of-two grid ([`GridLaplace`](privq_core::GridLaplace)), with every
//! sensitivity rounded up to a whole number of grid steps, and the comparisons
//! are made exactly in fixed point — floating point never decides noise.
//!
//! The (ε, δ) variant is the thesis construction (Fig. 4.2, eq. 4.2); the (ε, 0)
//! variant is a sparse vector with fresh answers (threshold drawn once, split by
//! [`PureSplit`]) rather than the thesis' §4.4 variant. Why each is private is argued
//! in the book, chapter "Privacy arguments", section PMW (`docs/src/proofs.md`).
//!
//! The thesis constants ([`PmwConfig::theory`]) are vacuous at realistic sizes (T > 1
//! at n = 21 574, see the example there); [`PmwConfig::user`] accepts other constants.

mod session;

use privq_core::Epsilon;

use crate::accountant::{Accountant, AccountantError, Cost};
use crate::central::MechanismError;
use crate::contract::Neighbours;
use crate::data::DataError;

pub use session::{PmwSession, SyntheticPmw, replay, synthetic, synthetic_rounds};
/// The privacy notion of a session.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PmwVariant {
    /// (ε, δ)-DP, thesis eq. 4.2.
    Approximate {
        /// δ ∈ (0, 1).
        delta: f64,
    },
    /// (ε, 0)-DP: sparse vector with fresh answers (module docs).
    Pure,
}

/// The exact split `ε = ε₁ + ε₂ + ε₃` of the pure variant (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PureSplit {
    /// ε₁ = ε/10: the noisy threshold `T̂`.
    pub threshold: Epsilon,
    /// ε₂ = 3ε/5: the above/below comparisons.
    pub comparisons: Epsilon,
    /// ε₃ = 3ε/10: the fresh answers of update rounds.
    pub answers: Epsilon,
}

impl PureSplit {
    /// The split of `epsilon`; the three parts add up to it exactly.
    ///
    /// ```
    /// use privq_host::central::pmw::PureSplit;
    /// use privq_host::Epsilon;
    /// let s = PureSplit::of(Epsilon::new(1, 1)?)?;
    /// assert_eq!(s.threshold, Epsilon::new(1, 10)?);
    /// assert_eq!(s.comparisons, Epsilon::new(3, 5)?);
    /// assert_eq!(s.answers, Epsilon::new(3, 10)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn of(epsilon: Epsilon) -> Result<Self, PmwError> {
        Ok(PureSplit {
            threshold: epsilon.checked_div_int(10)?,
            comparisons: epsilon.checked_mul_int(3)?.checked_div_int(5)?,
            answers: epsilon.checked_mul_int(3)?.checked_div_int(10)?,
        })
    }
}

/// How an update round moves the hypothesis `x`. Either rule computes the new
/// hypothesis from the released answer and the previous hypothesis alone, so the
/// rule never enters the privacy analysis; it changes accuracy and how fast the
/// update budget is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PmwUpdate {
    /// Thesis Fig. 4.2: `x ← x·exp(±η·f)`, the sign towards the released answer.
    /// The thesis' update bound (Lemma 4.3.3) is proved for this rule.
    #[default]
    Sign,
    /// The multiplicative step that moves `f(x)` onto the released answer (the
    /// relative-entropy projection for a 0/1 query; clamped into `[l, 1 − l]`,
    /// `l = min(1/n, 10⁻³)`),
    /// capped at `|step| ≤ η`. One update round usually settles a query for good,
    /// which a sign step of a fixed η cannot; no theorem bounds the number of
    /// updates, and the session still aborts after `m` of them.
    Project,
}

impl crate::choice::Named for PmwUpdate {
    const WHAT: &'static str = "PMW update rule";
    const ALL: &'static [Self] = &[PmwUpdate::Sign, PmwUpdate::Project];
    const NAMES: &'static [&'static str] = &["sign", "project"];

    fn name(self) -> &'static str {
        match self {
            PmwUpdate::Sign => "sign",
            PmwUpdate::Project => "project",
        }
    }
}

/// PMW's constants — learning rate η, noise scale σ (normalized units), threshold T,
/// update budget m, the update rule, the variant — and the ε, δ and n they were
/// checked for.
///
/// Fields are private: build them with [`PmwConfig::theory`] or [`PmwConfig::user`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PmwConfig {
    eta: f64,
    sigma: f64,
    threshold: f64,
    max_updates: f64,
    update: PmwUpdate,
    variant: PmwVariant,
    epsilon: Epsilon,
    n: u64,
}

impl PmwConfig {
    /// The thesis constants for budget ε, failure probability β, database size `n`,
    /// `k` rounds and a (sub-)universe of `m_cells` cells: eq. 4.2 for
    /// [`PmwVariant::Approximate`]; η, T and m of eq. 4.14 for [`PmwVariant::Pure`],
    /// with σ the comparison scale `10c′/(3nε)` of the sparse-vector construction
    /// (below the thesis' `10m/(nε)`, so the accuracy analysis still applies).
    ///
    /// ```
    /// use privq_host::central::pmw::{PmwConfig, PmwVariant};
    /// use privq_host::Epsilon;
    /// // Eq. 4.2 at n = 21 574, N = 2^16, k = 697, ε = 1, δ = 1e-6, β = 0.05.
    /// let eps = Epsilon::new(1, 1)?;
    /// let p = PmwConfig::theory(eps, 0.05, 21_574, 697, 1 << 16, PmwVariant::Approximate { delta: 1e-6 })?;
    /// assert!((p.eta() - 0.143).abs() < 5e-4);
    /// assert!((p.threshold() - 5.71).abs() < 0.01); // T > 1: vacuous at this n
    /// assert_eq!((p.epsilon(), p.n()), (eps, 21_574));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn theory(
        epsilon: Epsilon,
        beta: f64,
        n: u64,
        k: usize,
        m_cells: usize,
        variant: PmwVariant,
    ) -> Result<Self, PmwError> {
        check_common(n, k, m_cells)?;
        if !(beta > 0.0 && beta < 1.0) {
            return Err(PmwError::InvalidParameter("beta must be in (0, 1)"));
        }
        let ln_m = (m_cells as f64).ln().max(f64::MIN_POSITIVE);
        let en = epsilon.to_f64() * n as f64;
        let (eta, log_kb) = match variant {
            PmwVariant::Approximate { delta } => {
                check_delta(delta, epsilon)?;
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
        let max_updates = ln_m / (eta * eta);
        if !(max_updates.is_finite() && max_updates >= 1.0) {
            return Err(PmwError::InvalidParameter(
                "the update budget m = ln M / eta^2 must be at least 1",
            ));
        }
        let sigma = match variant {
            PmwVariant::Approximate { delta } => {
                check_delta(delta, epsilon)?;
                (10.0 * eta / log_kb).max(approx_sigma_needed(max_updates, delta, epsilon, n))
            }
            PmwVariant::Pure => pure_sigma_needed(max_updates, epsilon, n),
        };
        Ok(PmwConfig {
            eta,
            sigma,
            threshold: 40.0 * eta,
            max_updates,
            update: PmwUpdate::Sign,
            variant,
            epsilon,
            n,
        })
    }

    /// Practical constants for the pure variant at accuracy target `alpha`: the
    /// threshold `T = α`, comparison noise `σ = α/5`, the largest update budget `m`
    /// the privacy condition allows at that σ (`σn ≥ 10(⌊m⌋ + 1)/(3ε)`), `η = 1`, and
    /// [`PmwUpdate::Project`] steps. The thesis constants ([`PmwConfig::theory`]) are
    /// vacuous at realistic n (`T > 1` at n = 21 574); these answer
    /// lazily within about `α + |ν|` and spend an update only where the hypothesis
    /// is off by more, so the session lasts as long as the data needs fewer than m
    /// corrections. On NLTCS (n = 21 574) at ε = 1 and α = 0.08 it answers 1 000
    /// random 2-way marginal cells with m = 102 (README, "PMW default profile").
    ///
    /// Fails with [`PmwError::InvalidParameter`] when `εnα` is too small for even one
    /// update (`n < 100/(3εα)`: 417 records at ε = 1, α = 0.08).
    ///
    /// ```
    /// use privq_host::central::pmw::{PmwConfig, PmwUpdate, PmwVariant};
    /// use privq_host::Epsilon;
    /// let p = PmwConfig::practical(Epsilon::new(1, 1)?, 21_574, 0.08)?;
    /// assert_eq!((p.threshold(), p.max_updates()), (0.08, 102.0));
    /// assert_eq!((p.variant(), p.update()), (PmwVariant::Pure, PmwUpdate::Project));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn practical(epsilon: Epsilon, n: u64, alpha: f64) -> Result<Self, PmwError> {
        check_common(n, 1, 1)?;
        if !(alpha > 0.0 && alpha < 1.0) {
            return Err(PmwError::InvalidParameter("alpha must be in (0, 1)"));
        }
        let sigma = alpha / 5.0;
        // c′ = ⌊m⌋ + 1 ≤ 3εnσ/10; one below in case rounding made it a hair too big.
        let c_prime = (3.0 * epsilon.to_f64() * n as f64 * sigma / 10.0).floor();
        for m in [c_prime - 1.0, c_prime - 2.0] {
            if m < 1.0 {
                break;
            }
            if let Ok(p) = Self::user(1.0, sigma, alpha, m.min(1e14), PmwVariant::Pure, epsilon, n)
            {
                return Ok(p.with_update(PmwUpdate::Project));
            }
        }
        Err(PmwError::InvalidParameter(
            "n·epsilon is too small for this alpha: the practical profile needs n >= 100/(3·epsilon·alpha)",
        ))
    }

    /// User constants, accepted only if the privacy condition of the construction
    /// holds for `epsilon` and `n`: for the (ε, δ) variant
    /// `σn ≥ max(10·√m·L, 32·L^{1/4}·√ln(2/δ)·√m)·(1 + 2⁻⁹)/ε` with `L = ln(1/δ)`
    /// (eq. 4.3 with the constants its proof supports, see `approx_sigma_needed`), `σn ≥ 10(⌊m⌋ + 1)/(3ε)` (comparison noise, module docs) for the pure one.
    ///
    /// ```
    /// use privq_host::central::pmw::{PmwError, PmwConfig, PmwVariant};
    /// use privq_host::Epsilon;
    /// let eps = Epsilon::new(1, 1)?;
    /// // m = 1: two above-threshold outcomes at most, σn ≥ 20/3 is needed.
    /// assert!(PmwConfig::user(0.1, 0.01, 0.05, 1.0, PmwVariant::Pure, eps, 1841).is_ok());
    /// assert!(matches!(
    ///     PmwConfig::user(0.1, 0.001, 0.05, 1.0, PmwVariant::Pure, eps, 1841),
    ///     Err(PmwError::PrivacyConditionViolated { .. })
    /// ));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn user(
        eta: f64,
        sigma: f64,
        threshold: f64,
        max_updates: f64,
        variant: PmwVariant,
        epsilon: Epsilon,
        n: u64,
    ) -> Result<Self, PmwError> {
        check_common(n, 1, 1)?;
        if !(eta > 0.0 && eta <= 1.0) {
            return Err(PmwError::InvalidParameter("eta must be in (0, 1]"));
        }
        if !(sigma > 0.0 && sigma.is_finite() && threshold > 0.0 && threshold.is_finite()) {
            return Err(PmwError::InvalidParameter(
                "sigma and the threshold must be positive",
            ));
        }
        if !(1.0..1e15).contains(&max_updates) {
            return Err(PmwError::InvalidParameter(
                "the update budget m must be at least 1 (and finite)",
            ));
        }
        let needed_sigma = match variant {
            PmwVariant::Approximate { delta } => {
                check_delta(delta, epsilon)?;
                approx_sigma_needed(max_updates, delta, epsilon, n)
            }
            PmwVariant::Pure => pure_sigma_needed(max_updates, epsilon, n),
        };
        if sigma < needed_sigma {
            return Err(PmwError::PrivacyConditionViolated {
                sigma_n: sigma * n as f64,
                needed: needed_sigma * n as f64,
            });
        }
        Ok(PmwConfig {
            eta,
            sigma,
            threshold,
            max_updates,
            update: PmwUpdate::Sign,
            variant,
            epsilon,
            n,
        })
    }

    /// The same constants with the threshold raised by `gamma ≥ 0`: `T' = T + γ`
    /// (Lemma 4.3.7, for a sub-universe V whose best distribution is γ away from
    /// the data). The threshold enters no privacy condition, so the result is as
    /// private as `self`.
    pub fn with_threshold_shift(self, gamma: f64) -> Result<Self, PmwError> {
        if !(gamma >= 0.0 && gamma.is_finite()) {
            return Err(PmwError::InvalidParameter(
                "the threshold shift must be finite and non-negative",
            ));
        }
        Ok(PmwConfig {
            threshold: self.threshold + gamma,
            ..self
        })
    }

    /// The same constants with another update rule (privacy is unchanged: the
    /// rule only post-processes released answers).
    pub fn with_update(self, update: PmwUpdate) -> Self {
        PmwConfig { update, ..self }
    }

    /// The update rule.
    pub fn update(&self) -> PmwUpdate {
        self.update
    }

    /// The step an update round takes from `here = f(x)` towards `released`.
    fn step(&self, here: f64, released: f64) -> f64 {
        match self.update {
            PmwUpdate::Sign if here - released > 0.0 => -self.eta,
            PmwUpdate::Sign => self.eta,
            PmwUpdate::Project => {
                // 1/n, but never above 10⁻³ (n = 1 or 2 would leave no interior).
                let lo = (1.0 / self.n as f64).min(1e-3);
                let (t, h) = (released.clamp(lo, 1.0 - lo), here.clamp(lo, 1.0 - lo));
                let s = (t * (1.0 - h) / (h * (1.0 - t))).ln();
                s.clamp(-self.eta, self.eta)
            }
        }
    }

    /// Learning rate η (the largest step of [`PmwUpdate::Project`]).
    pub fn eta(&self) -> f64 {
        self.eta
    }

    /// Noise scale σ: of every `â_t` (approximate variant), of the comparison noise
    /// `ν_t` (pure variant; a lower bound on it, see the module docs).
    pub fn sigma(&self) -> f64 {
        self.sigma
    }

    /// The public threshold T (the pure variant's noisy `T̂` is never exposed).
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// The update budget m: the session aborts after more than m update rounds.
    pub fn max_updates(&self) -> f64 {
        self.max_updates
    }

    /// The privacy variant.
    pub fn variant(&self) -> PmwVariant {
        self.variant
    }

    /// The ε the constants were checked for.
    pub fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    /// The number of records n the constants were checked for (public under
    /// [`Neighbours::Replace`]).
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The neighbour relation of the guarantee: replace one record, n public.
    pub fn neighbours(&self) -> Neighbours {
        Neighbours::Replace
    }

    /// A fresh accountant for one session: its budget is exactly [`cost`](Self::cost)
    /// (pure ε, or (ε, δ)) and it is bound to [`neighbours`](Self::neighbours), so a
    /// front end never chooses either. [`PmwSession::open`] uses it.
    pub fn accountant(&self) -> Result<Accountant, PmwError> {
        let mut budget = match self.variant {
            PmwVariant::Pure => Accountant::pure(self.epsilon),
            PmwVariant::Approximate { delta } => Accountant::approximate(self.epsilon, delta)?,
        };
        budget.bind(self.neighbours());
        Ok(budget)
    }

    /// The cost of one session: pure ε, or (ε, δ).
    pub fn cost(&self) -> Cost {
        match self.variant {
            PmwVariant::Pure => Cost::Pure(self.epsilon),
            PmwVariant::Approximate { delta } => Cost::Approximate {
                epsilon: self.epsilon,
                delta,
            },
        }
    }

    /// The exact ε split of the pure variant (`None` for the approximate one).
    pub fn split(&self) -> Result<Option<PureSplit>, PmwError> {
        match self.variant {
            PmwVariant::Pure => PureSplit::of(self.epsilon).map(Some),
            PmwVariant::Approximate { .. } => Ok(None),
        }
    }

    /// `c = ⌊m⌋`: the most fresh answers a pure session releases.
    fn answer_cap(&self) -> u64 {
        // max_updates ∈ [1, 1e15): the cast is exact for the floor.
        self.max_updates.floor() as u64
    }
}

/// σ with `σn = 10c′/(3ε)`, `c′ = ⌊m⌋ + 1`: `2c′Δ/ε₂` for `ε₂ = 3ε/5`.
/// The (ε, δ) variant's privacy condition with the constants its proof supports.
/// The thesis states `σn ≥ 10·√m·ln(1/δ)/ε` (eq. 4.3), but the Azuma step of
/// Lemma 4.3.8 with differences `2ε₀` and `λ = ε/2` gives the exponent
/// `(εσn)²/(32·m′)` (the thesis drops a factor 4), so with `m′ = 32·m·√L`,
/// `L = ln(1/δ)`, the bound closes only when
/// `σn ≥ 32·L^{1/4}·√(ln(2/δ))·√m / ε` (1.5–2.1× the printed condition for
/// δ ∈ [10⁻⁹, 10⁻³]). The grid rounds the sensitivity up by at most 2⁻⁹, which
/// the factor `1 + 2⁻⁹` covers.
fn approx_sigma_needed(max_updates: f64, delta: f64, epsilon: Epsilon, n: u64) -> f64 {
    let l = (1.0 / delta).ln();
    let printed = 10.0 * max_updates.sqrt() * l;
    let corrected = 32.0 * l.powf(0.25) * (2.0 / delta).ln().sqrt() * max_updates.sqrt();
    printed.max(corrected) * (1.0 + 1.0 / 512.0) / (epsilon.to_f64() * n as f64)
}

fn pure_sigma_needed(max_updates: f64, epsilon: Epsilon, n: u64) -> f64 {
    let c_prime = max_updates.floor() + 1.0;
    10.0 * c_prime / (3.0 * epsilon.to_f64() * n as f64)
}

fn check_common(n: u64, k: usize, m: usize) -> Result<(), PmwError> {
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

/// δ of the (ε, δ) variant: in (0, 10⁻³]. Its proof (thesis eq. 4.13) also needs
/// ε ≤ 1.04·ln²(1/δ), which holds for every ε ≤ 49 once δ ≤ 10⁻³.
fn check_delta(delta: f64, epsilon: Epsilon) -> Result<(), PmwError> {
    if !(delta > 0.0 && delta <= 1e-3) {
        return Err(PmwError::InvalidParameter(
            "delta must be in (0, 1e-3] for the (epsilon, delta) variant",
        ));
    }
    let l = (1.0 / delta).ln();
    if epsilon.to_f64() > 1.04 * l * l {
        return Err(PmwError::InvalidParameter(
            "the (epsilon, delta) variant's proof needs epsilon <= 1.04 ln^2(1/delta) (eq. 4.13)",
        ));
    }
    Ok(())
}

/// Why a PMW session did not answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PmwError {
    /// The update budget `m` was exceeded: the session aborted ("failure" in
    /// Fig. 4.2) and answers nothing more.
    #[error("PMW failure: the update budget is used up, the session answers no more queries")]
    Failure,
    /// All `k` rounds were used.
    #[error("all {rounds} rounds of the session are used")]
    RoundsExhausted {
        /// k.
        rounds: usize,
    },
    /// User constants fail the privacy condition of the construction.
    #[error(
        "the constants are not private: sigma*n = {sigma_n} but the construction needs at least \
         {needed}"
    )]
    PrivacyConditionViolated {
        /// σ·n as given.
        sigma_n: f64,
        /// What the condition needs.
        needed: f64,
    },
    /// The parameters were checked for another ε or n than the session's.
    #[error(
        "the PMW parameters were checked for {what} = {checked_for}, but the session has {what} \
         = {session}"
    )]
    ParamsMismatch {
        /// "epsilon" or "n".
        what: &'static str,
        /// The value the parameters were checked for.
        checked_for: String,
        /// The value of the session (the ε charged, or n of the counts).
        session: String,
    },
    /// A parameter is out of range.
    #[error("invalid parameter: {0}")]
    InvalidParameter(&'static str),
    /// The privacy budget does not cover the session.
    #[error(transparent)]
    Budget(#[from] AccountantError),
    /// A sampler or mechanism failed.
    #[error(transparent)]
    Mechanism(#[from] MechanismError),
    /// Unusable data or query.
    #[error(transparent)]
    Data(#[from] DataError),
}

impl From<privq_core::Error> for PmwError {
    fn from(e: privq_core::Error) -> Self {
        PmwError::Mechanism(MechanismError::Core(e))
    }
}

/// One released answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Answer {
    /// A lazy round: the hypothesis' answer `f_t(x_{t−1})`.
    Lazy(f64),
    /// An update round: the noisy answer (`â_t`, or the pure variant's fresh `ã_t`).
    Update(f64),
    /// After a failure, from [`PmwSession::answer_or_hypothesis`]: `f(x)` on the
    /// last hypothesis — post-processing of the transcript, with no accuracy
    /// guarantee.
    Hypothesis(f64),
}

impl Answer {
    /// The released number.
    pub fn value(&self) -> f64 {
        match *self {
            Answer::Lazy(v) | Answer::Update(v) | Answer::Hypothesis(v) => v,
        }
    }
}

/// The transcript entry `v_t` of the privacy proof: `⊥` (lazy) or the released answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TranscriptEntry {
    /// A lazy round (`v_t = ⊥`).
    Lazy,
    /// An update round and its released answer.
    Update(f64),
}

#[cfg(test)]
mod tests;

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
//! from the counts, never passed beside them. [`PmwParams`] record the ε (and δ) and
//! the n they were checked for; a session refuses other values
//! ([`PmwError::ParamsMismatch`]), states [`PmwParams::cost`] and charges the
//! [`Accountant`] **before** drawing anything (including the threshold). All noise
//! is exact discrete Laplace on the core's power-of-two grid ([`GridLaplace`]), with
//! every sensitivity rounded up to a whole number of grid steps, and the comparisons
//! are made exactly in fixed point — floating point never decides noise.
//!
//! # (ε, δ) variant
//! The thesis construction (Fig. 4.2, eq. 4.2): `â_t = f_t(x) + Lap(σ)` is compared with
//! the public threshold `T`, and an update round outputs `â_t`. Private when
//! `σn ≥ 10·√m·ln(1/δ)/ε` (eq. 4.3; Lemma 4.3.8).
//!
//! # (ε, 0) variant: sparse vector with fresh answers
//! The thesis' pure variant (§4.4, eq. 4.14) releases, in an update round, the same
//! `â_t` that was compared with the noisy threshold `T̂`. Then `|h_t − â_t| > T̂` is
//! public, which breaks the coupling of Claim 4.4.3 (that argument shifts `T̂` by `Δ`
//! while keeping every `â_t`): after one update round, `k` lazy rounds on queries whose
//! gap exceeds that bound lose `k/(σn)`, unbounded in `k`. This module instead runs the
//! NumericSparse construction (Dwork & Roth 2014, Alg. 3), analysed as in Lyu, Su & Li
//! (2017, Alg. 1, Thm 2). With `c = ⌊m⌋` fresh answers at most and `c′ = c + 1`
//! above-threshold outcomes at most (the last one is the abort):
//!
//! * `T̂ = T + Lap(Δ/ε₁)`, drawn **once**, never released, never in the transcript;
//! * round t compares `|h_t − (f_t(x) + ν_t)|` with `T̂`, `ν_t ∼ Lap(2c′Δ/ε₂)`, and only
//!   the below/above bit is used;
//! * an update round releases a **fresh** `ã_t = f_t(x) + Lap(cΔ/ε₃)`, independent of
//!   `ν_t` and `T̂`, and the MW step direction is `sign(h_t − ã_t)`.
//!
//! The transcript is a function of the lazy/update bits and the fresh answers.
//! *Privacy.* Fix neighbours D, D′ and an output transcript. Given its prefix, `h_t`
//! and `f_t` are fixed, so the two-sided comparison `|h_t − f_t(D) − ν_t|` moves by at
//! most `Δ` between D and D′. Couple `T̂′ = T̂ + Δ` (density ratio `e^{ε₁}`); a below
//! outcome on D stays below on D′ with the same `ν_t`; an above outcome stays above
//! with `ν′_t = ν_t + f_t(D) − f_t(D′) − Δ·sign(h_t − f_t(D) − ν_t)` (a shift of at most
//! `2Δ`, injective, ratio `e^{ε₂/c′}`; at most `c′` such rounds, so `e^{ε₂}`). Each of
//! the at most `c` fresh answers is a Laplace release of sensitivity `Δ` at `ε₃/c`. The
//! total is `ε = ε₁ + ε₂ + ε₃`, for adaptively chosen queries and any number of rounds.
//! On the grid the same argument holds exactly with `Δ` in whole grid steps.
//!
//! The split is exact and fixed ([`PureSplit`]): `ε₁ = ε/10`, `ε₂ = 3ε/5`,
//! `ε₃ = 3ε/10` (comparison and fresh-answer noise then have the same scale
//! `10c′Δ/(3ε)` and `10cΔ/(3ε)`; the threshold noise is the thesis' `10Δ/ε`).
//! [`PmwParams::user`] reads σ as the comparison noise scale and accepts it when
//! `σn ≥ 10c′/(3ε)`; a larger σ is honoured.
//!
//! The thesis constants ([`PmwParams::theory`]) are vacuous at realistic sizes
//! (spec §3.9: T > 1 at n = 21 574); [`PmwParams::user`] accepts other constants.

use std::fmt;

use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::{Epsilon, Fixed, GridLaplace};

use crate::accountant::{Accountant, AccountantError, Cost, Receipt};
use crate::central::mw::{MwState, PendingUpdate};
use crate::central::pmw_reduce::ReducedDomain;
use crate::central::{MechanismError, epsilon_at_most, fixed_ceil};
use crate::contract::Neighbours;
use crate::data::{CountHistogram, DataError, Distribution, MemoryCap};
use crate::query::{Query, Workload};

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
/// Fields are private: build them with [`PmwParams::theory`] or [`PmwParams::user`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PmwParams {
    eta: f64,
    sigma: f64,
    threshold: f64,
    max_updates: f64,
    update: PmwUpdate,
    variant: PmwVariant,
    epsilon: Epsilon,
    n: u64,
}

impl PmwParams {
    /// The thesis constants for budget ε, failure probability β, database size `n`,
    /// `k` rounds and a (sub-)universe of `m_cells` cells: eq. 4.2 for
    /// [`PmwVariant::Approximate`]; η, T and m of eq. 4.14 for [`PmwVariant::Pure`],
    /// with σ the comparison scale `10c′/(3nε)` of the sparse-vector construction
    /// (below the thesis' `10m/(nε)`, so the accuracy analysis still applies).
    ///
    /// ```
    /// use privq_host::central::pmw::{PmwParams, PmwVariant};
    /// use privq_host::Epsilon;
    /// // Spec §3.9, first row: n = 21 574, N = 2^16, k = 697, ε = 1, δ = 1e-6, β = 0.05.
    /// let eps = Epsilon::new(1, 1)?;
    /// let p = PmwParams::theory(eps, 0.05, 21_574, 697, 1 << 16, PmwVariant::Approximate { delta: 1e-6 })?;
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
        Ok(PmwParams {
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
    /// [`PmwUpdate::Project`] steps. The thesis constants ([`PmwParams::theory`]) are
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
    /// use privq_host::central::pmw::{PmwParams, PmwUpdate, PmwVariant};
    /// use privq_host::Epsilon;
    /// let p = PmwParams::practical(Epsilon::new(1, 1)?, 21_574, 0.08)?;
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
    /// use privq_host::central::pmw::{PmwError, PmwParams, PmwVariant};
    /// use privq_host::Epsilon;
    /// let eps = Epsilon::new(1, 1)?;
    /// // m = 1: two above-threshold outcomes at most, σn ≥ 20/3 is needed.
    /// assert!(PmwParams::user(0.1, 0.01, 0.05, 1.0, PmwVariant::Pure, eps, 1841).is_ok());
    /// assert!(matches!(
    ///     PmwParams::user(0.1, 0.001, 0.05, 1.0, PmwVariant::Pure, eps, 1841),
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
        Ok(PmwParams {
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
        Ok(PmwParams {
            threshold: self.threshold + gamma,
            ..self
        })
    }

    /// The same constants with another update rule (privacy is unchanged: the
    /// rule only post-processes released answers).
    pub fn with_update(self, update: PmwUpdate) -> Self {
        PmwParams { update, ..self }
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
    /// User constants fail the privacy condition of the construction.
    PrivacyConditionViolated {
        /// σ·n as given.
        sigma_n: f64,
        /// What the condition needs.
        needed: f64,
    },
    /// The parameters were checked for another ε or n than the session's.
    ParamsMismatch {
        /// "epsilon" or "n".
        what: &'static str,
        /// The value the parameters were checked for.
        checked_for: String,
        /// The value of the session (the ε charged, or n of the counts).
        session: String,
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
                "the constants are not private: sigma*n = {sigma_n} but the construction needs at least {needed}"
            ),
            PmwError::ParamsMismatch {
                what,
                checked_for,
                session,
            } => write!(
                f,
                "the PMW parameters were checked for {what} = {checked_for}, but the session has {what} = {session}"
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
    fn new(params: &PmwParams, universe: usize) -> Result<Self, PmwError> {
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
/// use privq_host::central::pmw::{PmwParams, PmwSession, PmwVariant};
/// use privq_host::query::Query;
/// use privq_host::accountant::Accountant;
/// use privq_host::{Epsilon, seeded_rng};
///
/// let counts = CountHistogram::from_counts(vec![500_000, 300_000, 150_000, 50_000], MemoryCap::default())?;
/// let eps = Epsilon::new(1, 1)?;
/// let params = PmwParams::theory(eps, 0.05, counts.total(), 100, 4, PmwVariant::Pure)?;
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
    params: PmwParams,
    noise: Noise,
    /// `T` (approximate) or the secret `T̂` (pure): never exposed.
    compare_threshold: Fixed,
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
    /// A session over the universe of `counts` (V = U) for at most `rounds` queries,
    /// charging `epsilon` (and δ for the approximate variant) to `budget`. n and the
    /// normalized histogram are computed from `counts`; `params` must have been
    /// checked for this n and this ε ([`PmwError::ParamsMismatch`] otherwise).
    pub fn new(
        counts: &CountHistogram,
        params: PmwParams,
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
        params: PmwParams,
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
    /// use privq_host::data::{CountHistogram, MemoryCap};
    /// use privq_host::central::pmw::{PmwParams, PmwSession, PmwVariant};
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
    /// let params = PmwParams::user(0.05, 0.001, 0.02, 100.0, PmwVariant::Pure, eps, n)?;
    /// let mut budget = Accountant::pure(eps);
    /// let mut s = PmwSession::on_reduced_domain(&counts, params, k, eps, &mut budget, &v, seeded_rng(2))?;
    /// assert_eq!(s.threshold(), 0.02 + 0.05);
    /// let half = Query::dense((0..cells).map(|u| (u % 2) as f64).collect())?;
    /// assert!((s.answer(&half)?.value() - 0.5).abs() < 0.1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on_reduced_domain(
        counts: &CountHistogram,
        params: PmwParams,
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
fn charge(params: &PmwParams, budget: &mut Accountant) -> Result<Vec<Receipt>, PmwError> {
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
    pub fn params(&self) -> &PmwParams {
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

/// PMW's synthetic-data mode (thesis §4.2, spec §3.6): iterate over the workload
/// until a full pass makes no update, at most `⌈m⌉ + 1` passes; release `x_t`.
/// `params` must be computed with `k = passes · |Q|`; see [`synthetic_rounds`].
pub fn synthetic<R: Rng + CryptoRng>(
    counts: &CountHistogram,
    workload: &Workload,
    params: PmwParams,
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
    use crate::seeded_rng;

    fn eps1() -> Epsilon {
        Epsilon::new(1, 1).unwrap()
    }

    /// Random counts on `cells` cells with about `n` records in total.
    fn random_counts(cells: usize, n: u64, seed: u64) -> CountHistogram {
        use privq_core::rand_core::Rng;
        let mut rng = seeded_rng(seed);
        let w: Vec<u64> = (0..cells)
            .map(|_| u64::from(rng.next_u32() % 1000) + 1)
            .collect();
        let total: u64 = w.iter().sum();
        let scale = (n / total).max(1);
        CountHistogram::from_counts(w.iter().map(|c| c * scale).collect(), MemoryCap::default())
            .unwrap()
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
            eps1(),
            0.05,
            21_574,
            697,
            1 << 16,
            PmwVariant::Approximate { delta: 1e-6 },
        )
        .unwrap();
        assert!((a.eta() - 0.143).abs() < 5e-4, "{}", a.eta());
        // The thesis' σ is 0.150; the corrected privacy condition of the (ε, δ)
        // variant needs σn ≥ 32·L^{1/4}·√ln(2/δ)·√m·(1 + 2⁻⁹)/ε, i.e. σ = 0.2548 here.
        assert!((a.sigma() - 0.2548).abs() < 1e-3, "{}", a.sigma());
        assert!((a.threshold() - 5.71).abs() < 0.01);
        assert!((a.max_updates() - 545.0).abs() < 2.0, "{}", a.max_updates());
        let b = PmwParams::theory(
            eps1(),
            0.05,
            1_000_000,
            1000,
            1 << 16,
            PmwVariant::Approximate { delta: 1e-6 },
        )
        .unwrap();
        assert!((b.threshold() - 0.854).abs() < 0.002, "{}", b.threshold());
        assert!(
            (b.max_updates() - 24_340.0).abs() < 100.0,
            "{}",
            b.max_updates()
        );
        let p = PmwParams::theory(eps1(), 0.05, 21_574, 697, 1 << 16, PmwVariant::Pure).unwrap();
        assert!((p.eta() - 0.166).abs() < 5e-4, "{}", p.eta());
        assert!((p.threshold() - 6.63).abs() < 0.02);
        // The sparse-vector comparison scale holds with equality: σn = 10(⌊m⌋+1)/(3ε),
        // below the thesis' 10m/ε (eq. 4.14).
        let c_prime = p.max_updates().floor() + 1.0;
        assert!((p.sigma() * 21_574.0 * 3.0 / (10.0 * c_prime) - 1.0).abs() < 1e-12);
        assert!(p.sigma() * 21_574.0 < 10.0 * p.max_updates());
        assert_eq!(p.cost(), Cost::Pure(eps1()));
        assert_eq!(p.neighbours(), Neighbours::Replace);
    }

    #[test]
    fn bad_input_is_typed() {
        let v = PmwVariant::Approximate { delta: 1e-6 };
        assert!(matches!(
            PmwParams::theory(eps1(), 0.05, 10, 0, 4, v),
            Err(PmwError::InvalidParameter(_))
        ));
        assert!(matches!(
            PmwParams::theory(eps1(), 0.05, 0, 10, 4, v),
            Err(PmwError::Data(DataError::EmptyData))
        ));
        assert!(matches!(
            PmwParams::user(0.1, 0.001, 0.05, 100.0, PmwVariant::Pure, eps1(), 1000),
            Err(PmwError::PrivacyConditionViolated { .. })
        ));
        assert!(PmwParams::user(0.1, 1.0, 0.05, 100.0, PmwVariant::Pure, eps1(), 1000).is_ok());
        // Pure, m = 1: σn ≥ 20/3 exactly at the edge.
        assert!(
            PmwParams::user(
                0.1,
                6.67 / 1000.0,
                0.05,
                1.0,
                PmwVariant::Pure,
                eps1(),
                1000
            )
            .is_ok()
        );
        assert!(
            PmwParams::user(
                0.1,
                6.66 / 1000.0,
                0.05,
                1.0,
                PmwVariant::Pure,
                eps1(),
                1000
            )
            .is_err()
        );
        for m in [0.5, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                PmwParams::user(0.1, 1.0, 0.05, m, PmwVariant::Pure, eps1(), 1000),
                Err(PmwError::InvalidParameter(_))
            ));
        }
    }

    /// A user profile with a tiny update budget so that aborts happen.
    fn small_budget_params(n: u64, variant: PmwVariant) -> PmwParams {
        let m = 5.0;
        let sigma = 10.0 * m / n as f64 * 100.0; // generous: both conditions hold
        PmwParams::user(0.2, sigma, 0.02, m, variant, eps1(), n).unwrap()
    }

    #[test]
    fn update_count_never_exceeds_m_and_failure_is_final() {
        let counts = random_counts(256, 1_000_000, 1);
        let n = counts.total();
        let queries = random_queries(256, 300, 2);
        for variant in [PmwVariant::Pure, PmwVariant::Approximate { delta: 1e-6 }] {
            let params = small_budget_params(n, variant);
            let mut budget = Accountant::approximate(eps1(), 1e-6).unwrap();
            let mut s =
                PmwSession::new(&counts, params, 300, eps1(), &mut budget, seeded_rng(3)).unwrap();
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
                assert!(kept as f64 <= params.max_updates());
            }
            assert!(
                failed_at.is_some(),
                "the uniform start is far from x: updates must run out"
            );
            assert_eq!(s.rounds_left(), 0);
            let charges = if variant == PmwVariant::Pure { 3 } else { 1 };
            assert_eq!(budget.ledger().len(), charges);
            assert_eq!(budget.spent_epsilon(), Some(eps1()));
        }
    }

    #[test]
    fn lazy_outputs_are_reproduced_from_the_transcript() {
        let counts = random_counts(128, 10_000_000, 4);
        let n = counts.total();
        let queries = random_queries(128, 200, 5);
        let variants = [PmwVariant::Pure, PmwVariant::Approximate { delta: 1e-6 }];
        for (variant, rule) in variants
            .into_iter()
            .flat_map(|v| [(v, PmwUpdate::Sign), (v, PmwUpdate::Project)])
        {
            let params = PmwParams::user(0.05, 0.002, 0.01, 2000.0, variant, eps1(), n)
                .unwrap()
                .with_update(rule);
            let mut budget = Accountant::approximate(eps1(), 1e-6).unwrap();
            let mut s =
                PmwSession::new(&counts, params, 200, eps1(), &mut budget, seeded_rng(6)).unwrap();
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
    fn a_projection_step_lands_on_the_released_answer_within_its_cap() {
        let p = PmwParams::practical(eps1(), 100_000, 0.08).unwrap();
        let mut x = MwState::uniform(8, MemoryCap::default()).unwrap();
        let q = Query::dense(vec![1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]).unwrap();
        // 0.25 → 0.4: ln(0.4·0.75/(0.25·0.6)) = ln 2, under the cap η = 1.
        let step = p.step(0.25, 0.4);
        assert!((step - 2f64.ln()).abs() < 1e-12);
        x.update(&q, step);
        assert!((x.evaluate(&q) - 0.4).abs() < 1e-12);
        // Far targets (and noisy answers outside [0, 1]) are capped at ±η.
        assert_eq!(p.step(0.25, 0.99), 1.0);
        assert_eq!(p.step(0.25, -0.3), -1.0);
        assert_eq!(p.step(0.0, 0.5), 1.0);
        // The sign rule ignores the distance.
        let sign = p.with_update(PmwUpdate::Sign);
        assert_eq!((sign.step(0.25, 0.26), sign.step(0.25, 0.1)), (1.0, -1.0));
    }

    #[test]
    fn deferred_kernel_updates_replay_bit_for_bit() {
        // Parities and conjunctions take the fast path: each update is deferred and
        // fused with the next round's evaluation; the replay must match exactly.
        let counts = random_counts(256, 10_000_000, 11);
        let n = counts.total();
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
        let params =
            PmwParams::user(0.05, 0.002, 0.005, 2000.0, PmwVariant::Pure, eps1(), n).unwrap();
        let mut budget = Accountant::pure(eps1());
        let mut s =
            PmwSession::new(&counts, params, 300, eps1(), &mut budget, seeded_rng(12)).unwrap();
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
                    -params.eta()
                } else {
                    params.eta()
                };
                immediate.update_known(q, step, here);
            }
        }
        assert_eq!(s.hypothesis().probabilities(), immediate.probabilities());
    }

    #[test]
    fn pure_variant_draws_the_threshold_once_and_never_shows_it() {
        let counts = random_counts(64, 1_000_000, 7);
        let n = counts.total();
        let queries = random_queries(64, 100, 8);
        let params = PmwParams::user(0.05, 0.01, 0.02, 500.0, PmwVariant::Pure, eps1(), n).unwrap();
        let mut budget = Accountant::pure(eps1());
        let mut s =
            PmwSession::new(&counts, params, 100, eps1(), &mut budget, seeded_rng(9)).unwrap();
        let secret = s.compare_threshold;
        assert_ne!(secret.to_f64(), params.threshold(), "T̂ carries noise");
        for q in &queries {
            s.answer(q).unwrap();
            assert_eq!(s.compare_threshold, secret);
        }
        assert_eq!(
            s.threshold(),
            params.threshold(),
            "the getter is the public T"
        );
        assert_eq!(s.threshold_draws(), 1);
        let shown = format!("{s:?}");
        assert!(!shown.contains(&format!("{:?}", secret)), "{shown}");
        assert!(!shown.contains(&secret.to_f64().to_string()), "{shown}");
        // A second session on the same budget is refused.
        assert!(matches!(
            PmwSession::new(&counts, params, 100, eps1(), &mut budget, seeded_rng(9)),
            Err(PmwError::Budget(_))
        ));
    }

    /// Counts RNG draws.
    struct CountingRng {
        inner: rand_chacha::ChaCha12Rng,
        draws: std::rc::Rc<std::cell::Cell<u64>>,
    }

    impl privq_core::rand_core::TryRng for CountingRng {
        type Error = core::convert::Infallible;
        fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
            self.draws.set(self.draws.get() + 1);
            self.inner.try_next_u32()
        }
        fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
            self.draws.set(self.draws.get() + 1);
            self.inner.try_next_u64()
        }
        fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
            self.draws.set(self.draws.get() + 1);
            self.inner.try_fill_bytes(dst)
        }
    }

    impl privq_core::rand_core::TryCryptoRng for CountingRng {}

    fn counting_rng(seed: u64) -> (CountingRng, std::rc::Rc<std::cell::Cell<u64>>) {
        let draws = std::rc::Rc::new(std::cell::Cell::new(0));
        (
            CountingRng {
                inner: seeded_rng(seed),
                draws: draws.clone(),
            },
            draws,
        )
    }

    #[test]
    fn budget_split_is_exact_and_a_refused_charge_samples_nothing() {
        for (num, den) in [(1u64, 1u64), (1, 3), (7, 10), (2, 7)] {
            let eps = Epsilon::new(num, den).unwrap();
            let s = PureSplit::of(eps).unwrap();
            let total = s
                .threshold
                .checked_add(s.comparisons)
                .and_then(|t| t.checked_add(s.answers))
                .unwrap();
            assert_eq!(total, eps, "ε = {eps}");
            assert_eq!(s.threshold, eps.checked_div_int(10).unwrap());
        }
        let counts = random_counts(16, 100_000, 1);
        let n = counts.total();
        let eps = Epsilon::new(1, 2).unwrap();
        let params = PmwParams::user(0.1, 0.01, 0.05, 3.0, PmwVariant::Pure, eps, n).unwrap();
        // The ledger holds the three exact parts and sums to ε.
        let mut budget = Accountant::pure(eps);
        let (rng, draws) = counting_rng(1);
        let s = PmwSession::new(&counts, params, 10, eps, &mut budget, rng).unwrap();
        let parts: Vec<Epsilon> = budget
            .ledger()
            .iter()
            .filter_map(|c| c.cost.epsilon())
            .collect();
        assert_eq!(
            parts,
            vec![
                Epsilon::new(1, 20).unwrap(),
                Epsilon::new(3, 10).unwrap(),
                Epsilon::new(3, 20).unwrap()
            ]
        );
        assert_eq!(budget.spent_epsilon(), Some(eps));
        assert_eq!(budget.remaining(), None);
        assert!(draws.get() > 0, "T̂ is drawn after the charge");
        assert_eq!(s.receipts().len(), 3);
        assert!(budget.ledger_text().contains("ε₁ = ε/10"));
        // Budget too small: refused, nothing recorded, nothing sampled.
        let mut small = Accountant::pure(Epsilon::new(49, 100).unwrap());
        let (rng, draws) = counting_rng(2);
        let err = PmwSession::new(&counts, params, 10, eps, &mut small, rng).unwrap_err();
        assert!(
            matches!(
                err,
                PmwError::Budget(AccountantError::BudgetExceeded { .. })
            ),
            "{err}"
        );
        assert_eq!(draws.get(), 0, "nothing sampled");
        assert!(small.ledger().is_empty() && small.spent_epsilon().is_none());
        // Approximate: δ over budget, likewise.
        let v = PmwVariant::Approximate { delta: 1e-6 };
        let params = PmwParams::user(0.1, 1.0, 0.05, 3.0, v, eps, n).unwrap();
        let mut no_delta = Accountant::pure(Epsilon::new(1, 1).unwrap());
        let (rng, draws) = counting_rng(3);
        let err = PmwSession::new(&counts, params, 10, eps, &mut no_delta, rng).unwrap_err();
        assert!(
            matches!(err, PmwError::Budget(AccountantError::DeltaExceeded)),
            "{err}"
        );
        assert_eq!(draws.get(), 0);
        assert!(no_delta.ledger().is_empty());
    }

    #[test]
    fn params_checked_for_another_epsilon_or_n_are_refused() {
        let counts = random_counts(16, 100_000, 1);
        let n = counts.total();
        let half = Epsilon::new(1, 2).unwrap();
        for variant in [PmwVariant::Pure, PmwVariant::Approximate { delta: 1e-6 }] {
            let params = PmwParams::user(0.1, 1.0, 0.05, 3.0, variant, half, n).unwrap();
            let mut budget = Accountant::approximate(eps1(), 1e-6).unwrap();
            let (rng, draws) = counting_rng(1);
            // Checked for ε = 1/2, charged ε = 1.
            let err = PmwSession::new(&counts, params, 10, eps1(), &mut budget, rng).unwrap_err();
            assert!(
                matches!(
                    err,
                    PmwError::ParamsMismatch {
                        what: "epsilon",
                        ..
                    }
                ),
                "{err}"
            );
            assert!(err.to_string().contains("epsilon = 1/2"), "{err}");
            // Checked for another n.
            let other = PmwParams::user(0.1, 1.0, 0.05, 3.0, variant, half, n + 1).unwrap();
            let err =
                PmwSession::new(&counts, other, 10, half, &mut budget, seeded_rng(1)).unwrap_err();
            assert!(
                matches!(err, PmwError::ParamsMismatch { what: "n", .. }),
                "{err}"
            );
            assert_eq!(draws.get(), 0);
            assert!(budget.ledger().is_empty(), "nothing charged");
            // Smaller ε charged than checked is refused too (the noise was sized for ε).
            let err = PmwSession::new(
                &counts,
                params,
                10,
                Epsilon::new(1, 4).unwrap(),
                &mut budget,
                seeded_rng(1),
            )
            .unwrap_err();
            assert!(matches!(err, PmwError::ParamsMismatch { .. }));
        }
    }

    #[test]
    fn abort_draws_no_fresh_answer_and_applies_no_update() {
        // m = 1: the second update round aborts; the hypothesis keeps one step only.
        let counts = CountHistogram::from_counts(vec![300, 0], MemoryCap::default()).unwrap();
        let params = PmwParams::user(0.5, 0.05, 0.01, 1.0, PmwVariant::Pure, eps1(), 300).unwrap();
        let mut budget = Accountant::pure(eps1());
        let mut s =
            PmwSession::new(&counts, params, 5, eps1(), &mut budget, seeded_rng(4)).unwrap();
        let q = Query::dense(vec![1.0, 0.0]).unwrap();
        assert!(matches!(s.answer(&q).unwrap(), Answer::Update(_)));
        let after_one = s.hypothesis().probabilities().to_vec();
        assert!(matches!(s.answer(&q), Err(PmwError::Failure)));
        assert_eq!(s.hypothesis().probabilities(), &after_one[..]);
        assert_eq!(s.transcript().len(), 1);
    }

    #[test]
    fn theory_profile_is_accurate_at_large_n() {
        // Lemma 4.3.6: every answer within 2T with probability ≥ 1 − β.
        let cells = 1 << 10;
        let k = 200;
        let beta = 0.05;
        let mut bad_runs = 0;
        for run in 0..20 {
            let counts = random_counts(cells, 100_000_000, 100 + run);
            let n = counts.total();
            let x = counts.normalized().unwrap();
            let queries = random_queries(cells, k, 200 + run);
            let v = PmwVariant::Approximate { delta: 1e-6 };
            let params = PmwParams::theory(eps1(), beta, n, k, cells, v).unwrap();
            let mut budget = Accountant::approximate(eps1(), 1e-6).unwrap();
            let mut s =
                PmwSession::new(&counts, params, k, eps1(), &mut budget, seeded_rng(run)).unwrap();
            let worst = queries
                .iter()
                .map(|q| (s.answer(q).unwrap().value() - q.evaluate(x.probabilities())).abs())
                .fold(0.0, f64::max);
            bad_runs += usize::from(worst > 2.0 * params.threshold());
        }
        assert!(
            bad_runs <= 3,
            "{bad_runs} of 20 runs had an answer off by more than 2T"
        );
    }

    #[test]
    fn synthetic_mode_stops() {
        let counts = CountHistogram::from_counts(
            (0..64).map(|u| (u * 7 % 13) as u64 * 1_000_000).collect(),
            MemoryCap::default(),
        )
        .unwrap();
        let n = counts.total();
        let x = counts.normalized().unwrap();
        let dom = crate::data::Domain::binary((0..6).map(|i| format!("a{i}"))).unwrap();
        let w = Workload::parities(&dom, 2).unwrap();
        let params = PmwParams::user(0.1, 0.001, 0.02, 200.0, PmwVariant::Pure, eps1(), n).unwrap();
        let mut budget = Accountant::pure(eps1());
        let out = synthetic(&counts, &w, params, eps1(), &mut budget, seeded_rng(10)).unwrap();
        assert!(out.passes <= params.max_updates().ceil() as usize + 1);
        assert!(out.updates as f64 <= params.max_updates());
        let err = w
            .queries()
            .iter()
            .map(|q| (q.evaluate(x.probabilities()) - out.state.evaluate(q)).abs())
            .fold(0.0, f64::max);
        assert!(err < 0.1, "max error {err}");
        let p = synthetic_rounds(eps1(), 0.05, 21_574, 137, 1 << 16, PmwVariant::Pure).unwrap();
        assert!(p.max_updates() > 1.0);
    }
}

//! MWEM (Hardt, thesis Ch. 5, Algorithm 5.1, with the corrections listed in
//! `docs/src/corrections.md`), the three improvements of §5.3.2, and the "modified
//! Barak et al." baseline.
//!
//! Each round `t = 1..T` of the corrected algorithm
//! 1. scores every query by `s(f) = |f(D) − n·f(x_{t−1})|` (sensitivity 1 in counts)
//!    and selects one with the exponential mechanism at budget `ε₀/2` — weights
//!    `∝ exp(ε₀·s/4)` (the printed `exp(ε₀ s/2)` costs ε₀, not the ε₀/2 that the
//!    thesis' Lemma 5.2.9 counts: the score can move either way; TYPO-2);
//! 2. measures it: `m_t = f_t(D) + Lap(2/ε₀)` in counts (the geometric mechanism:
//!    the exact discrete Laplace on integer counts) at budget `ε₀/2`;
//! 3. updates the [`MwState`] by `x_t[u] ∝ x_{t−1}[u]·exp(f_t[u]·d̂_t/2)` with
//!    `d̂_t = m_t/n − f_t(x_{t−1})` (TYPO-11/12);
//!
//! and the output is the average of the iterates `x_1..x_T`. Every round spends
//! exactly ε₀ (pure ε-DP, exact rationals). The "thesis-literal" profile keeps the
//! printed `exp(ε₀·s/2)` and spends its true cost, 1.5·ε₀ per round.
//!
//! **Privacy contract.** MWEM is stated for replace-one-record neighbours
//! ([`Neighbours::Replace`]): `n` (the number of records) is public, as in the
//! thesis, and every sensitivity follows from that relation — a counting query
//! moves by at most 1, the histogram of improvement 2 by 2 in ℓ1. Its total cost
//! ([`MwemConfig::cost`]) is charged to the caller's [`Accountant`] before anything
//! is sampled; [`MwemOutput::ledger`] itemises how it was spent.

use std::ops::ControlFlow;

use privq_core::Epsilon;
use privq_core::rand_core::{CryptoRng, Rng};

use crate::accountant::{Accountant, AccountantError, Cost};
use crate::central::mw::{MwState, Prepared};
use crate::central::{ExponentialMechanism, Geometric, MechanismError, Sampling, VectorLaplace};
use crate::contract::Neighbours;
use crate::data::{CountHistogram, DataError, MemoryCap};
use crate::query::Workload;

/// How the exponential mechanism is parameterized (also `privq synth --profile`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EmProfile {
    /// Weights `exp(ε₀·s/4)`: the EM costs ε₀/2, a round exactly ε₀.
    #[default]
    Corrected,
    /// The printed weights `exp(ε₀·s/2)`: the EM costs ε₀, a round 1.5·ε₀ (and the
    /// accountant says so).
    ThesisLiteral,
}

impl crate::choice::Named for EmProfile {
    const WHAT: &'static str = "exponential-mechanism profile";
    const ALL: &'static [Self] = &[EmProfile::Corrected, EmProfile::ThesisLiteral];
    const NAMES: &'static [&'static str] = &["corrected", "thesis-literal"];

    fn name(self) -> &'static str {
        match self {
            EmProfile::Corrected => "corrected",
            EmProfile::ThesisLiteral => "thesis-literal",
        }
    }
}

/// What MWEM releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputRule {
    /// The average of the iterates (Algorithm 5.1).
    #[default]
    Average,
    /// The last iterate.
    Last,
    /// The average of the iterates, then re-fitted to the stored measurements
    /// that pass the re-iteration noise filter (improvement 1's passes, applied once
    /// more to the average). With no such measurements this is [`OutputRule::Average`].
    AverageThenFit,
}

/// Improvement 1 (§5.3.2): re-process stored measurements after each round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reiterate {
    /// Passes over all stored measurements per round (R).
    pub passes: usize,
    /// Stop early when the largest `|m_j − f_j(x)|` changes by less than this.
    pub tolerance: f64,
    /// Re-use only measurements whose Laplace scale (normalized units,
    /// `2/(ε₀n)`, public) is at most this: fitting measurements that are mostly
    /// noise over and over drives the weights to extremes. `f64::INFINITY` re-uses
    /// all (the thesis' description).
    pub max_noise: f64,
    /// Stop once the mean absolute residual `|m_j − f_j(x)|` is at most the mean
    /// Laplace scale of the measurements (the discrepancy principle: fitting
    /// further only fits noise). Uses released values only.
    pub discrepancy: bool,
}

impl Default for Reiterate {
    fn default() -> Self {
        Reiterate {
            passes: 100,
            tolerance: 1e-9,
            max_noise: 0.05,
            discrepancy: true,
        }
    }
}

/// How improvement 2 turns the noisy histogram `ĉ = c + Lap(1/ε_init)` into
/// initial weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InitPolicy {
    /// A concrete rule for the thesis' unspecified marking of frequent values
    /// (§5.3.2): cells with `ĉ > max(3, ln(N/2))/ε_init` keep weight
    /// `ĉ`, the mass `max(n − Σ ĉ_marked, 0.5)` is spread over the other cells.
    Marked,
    /// Weights `max(ĉ, 0) + 1/ε_init` (a data-independent pseudo-count that
    /// shrinks towards uniform as the noise grows).
    PseudoCount,
    /// [`InitPolicy::PseudoCount`], but only when the histogram is informative —
    /// expected noise mass `N/ε_init` at most `n` (public quantities); otherwise no
    /// budget is spent on it and the start is uniform.
    #[default]
    Auto,
}

/// The §5.3.2 improvements; all off is the unoptimized Algorithm 5.1.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Improvements {
    /// Improvement 1: re-iterate past measurements.
    pub reiterate: Option<Reiterate>,
    /// Improvement 2: spend this share `(num, den)` of ε on a noisy histogram to
    /// initialize the weights (default 1/10; the thesis fixes no share).
    pub noisy_init: Option<(u64, u64)>,
    /// How the noisy histogram becomes the initial weights.
    pub init_policy: InitPolicy,
    /// Improvement 3: adapt the number of rounds — start with a small per-round ε,
    /// double it whenever the measured signal drops below the noise (thesis §5.3.2).
    pub adaptive: bool,
    /// Use the adaptation only when the plain schedule's Laplace scale
    /// `2T/(ε n)` (normalized, public) is at most this; above it every measurement
    /// is mostly noise, and more, equally noisy rounds averaged do better.
    pub adaptive_max_noise: f64,
}

impl Improvements {
    /// All three improvements with privq's defaults (the thesis gives none).
    pub fn all() -> Self {
        Improvements {
            reiterate: Some(Reiterate::default()),
            noisy_init: Some((1, 10)),
            init_policy: InitPolicy::Auto,
            adaptive: true,
            adaptive_max_noise: 0.2,
        }
    }
}

/// MWEM's configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MwemConfig {
    /// Number of rounds T (with `adaptive`, the planning horizon: at most 2T rounds).
    pub rounds: usize,
    /// Total privacy budget ε (pure ε-DP).
    pub epsilon: Epsilon,
    /// EM parameterization.
    pub profile: EmProfile,
    /// The §5.3.2 improvements.
    pub improvements: Improvements,
    /// What to release.
    pub output: OutputRule,
    /// Clip `d̂_t` to `[−1, 1]` before the update (post-processing; default off).
    pub clip: bool,
    /// EM sampling method.
    pub sampling: Sampling,
}

impl MwemConfig {
    /// Algorithm 5.1, corrected, no improvements.
    ///
    /// ```
    /// use privq_host::accountant::Accountant;
    /// use privq_host::data::{CountHistogram, Domain, MemoryCap};
    /// use privq_host::central::mwem::{mwem, MwemConfig};
    /// use privq_host::query::Workload;
    /// use privq_host::{Epsilon, seeded_rng};
    ///
    /// let domain = Domain::binary(["a", "b", "c"])?;
    /// let counts = CountHistogram::from_counts(vec![40, 5, 5, 10, 3, 7, 0, 30], MemoryCap::default())?;
    /// let workload = Workload::parities(&domain, 2)?;
    /// let config = MwemConfig::unoptimized(Epsilon::new(1, 1)?, 10)?;
    /// let mut accountant = Accountant::pure(Epsilon::new(1, 1)?);
    /// let out = mwem(&counts, &workload, &config, &mut accountant, &mut seeded_rng(1))?;
    /// assert_eq!(out.distribution.len(), 8);
    /// assert_eq!(accountant.spent_epsilon(), Some(Epsilon::new(1, 1)?)); // exactly ε
    /// assert!(accountant.remaining().is_none()); // nothing left for another release
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn unoptimized(epsilon: Epsilon, rounds: usize) -> Result<Self, MwemError> {
        if rounds == 0 {
            return Err(MwemError::InvalidParameter(
                "the number of rounds T must be at least 1",
            ));
        }
        Ok(MwemConfig {
            rounds,
            epsilon,
            profile: EmProfile::Corrected,
            improvements: Improvements::default(),
            output: OutputRule::Average,
            clip: false,
            sampling: Sampling::Exact,
        })
    }

    /// The optimized variant: all three improvements, `d̂_t` clipped to `[−1, 1]`,
    /// releasing the average of the iterates re-fitted to the reliable measurements
    /// ([`OutputRule::AverageThenFit`]).
    pub fn optimized(epsilon: Epsilon, rounds: usize) -> Result<Self, MwemError> {
        Ok(MwemConfig {
            improvements: Improvements::all(),
            output: OutputRule::AverageThenFit,
            clip: true,
            ..Self::unoptimized(epsilon, rounds)?
        })
    }
}

impl MwemConfig {
    /// The neighbour relation MWEM's guarantee is stated for: replace one record
    /// (n public).
    pub const NEIGHBOURS: Neighbours = Neighbours::Replace;

    /// The total privacy cost of a run, known before it starts: ε, or 1.5·ε for
    /// the thesis-literal profile (its exponential mechanism costs twice what the
    /// printed algorithm assumes).
    pub fn cost(&self) -> Result<Cost, MwemError> {
        Ok(Cost::Pure(match self.profile {
            EmProfile::Corrected => self.epsilon,
            EmProfile::ThesisLiteral => self.epsilon.checked_mul_int(3)?.checked_div_int(2)?,
        }))
    }
}

/// Why MWEM did not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MwemError {
    /// A parameter is out of range.
    #[error("invalid parameter: {0}")]
    InvalidParameter(&'static str),
    /// The data or workload is unusable (e.g. empty data).
    #[error(transparent)]
    Data(#[from] DataError),
    /// A mechanism failed.
    #[error(transparent)]
    Mechanism(#[from] MechanismError),
    /// The budget filter refused a charge.
    #[error(transparent)]
    Budget(#[from] AccountantError),
    /// The caller's control hook stopped the run before round `round`
    /// ([`mwem_controlled`]): nothing is returned, and the charge made before
    /// the first round stays spent (rounds were run on the data).
    #[error("MWEM was stopped before round {round}; nothing was released")]
    Cancelled {
        /// The round that did not run (from 1).
        round: usize,
    },
}

impl From<privq_core::Error> for MwemError {
    fn from(e: privq_core::Error) -> Self {
        MwemError::Mechanism(MechanismError::Core(e))
    }
}

/// One released measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NoisyAnswer {
    /// Index of the query in the workload.
    pub query: usize,
    /// The noisy answer, normalized (`m_t / n`).
    pub value: f64,
    /// Its Laplace scale in normalized units (public).
    pub noise_scale: f64,
}

/// MWEM's release and its privacy record.
#[derive(Debug, Clone)]
pub struct MwemOutput {
    /// The synthetic distribution over the universe.
    pub distribution: Vec<f64>,
    /// The measurements, in order.
    pub measurements: Vec<NoisyAnswer>,
    /// How the charged cost was spent, step by step (its budget is the cost charged
    /// to the caller's accountant; adaptive runs may spend less).
    pub ledger: Accountant,
    /// Rounds run.
    pub rounds: usize,
}

/// Per-round observer (progress bars): called with the round number and the total.
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize);

/// Runs MWEM on exact counts `data` over `workload`, charging
/// [`MwemConfig::cost`] to `accountant` first.
pub fn mwem<R: Rng + CryptoRng + ?Sized>(
    data: &CountHistogram,
    workload: &Workload,
    config: &MwemConfig,
    accountant: &mut Accountant,
    rng: &mut R,
) -> Result<MwemOutput, MwemError> {
    mwem_with_progress(data, workload, config, accountant, rng, &mut |_, _| {})
}

/// Per-round control hook: called with the round number and the total before
/// each round; [`ControlFlow::Break`] stops the run ([`MwemError::Cancelled`]).
pub type Control<'a> = &'a mut dyn FnMut(usize, usize) -> ControlFlow<()>;

/// [`mwem`] reporting each round to `progress`.
pub fn mwem_with_progress<R: Rng + CryptoRng + ?Sized>(
    data: &CountHistogram,
    workload: &Workload,
    config: &MwemConfig,
    accountant: &mut Accountant,
    rng: &mut R,
    progress: Progress<'_>,
) -> Result<MwemOutput, MwemError> {
    mwem_controlled(data, workload, config, accountant, rng, &mut |r, t| {
        progress(r, t);
        ControlFlow::Continue(())
    })
}

/// [`mwem`], asking `control` before every round whether to go on (a front
/// end's Ctrl-C): a [`ControlFlow::Break`] ends the run with
/// [`MwemError::Cancelled`] and returns nothing. The cost charged to
/// `accountant` before the first round stays charged: the rounds already run
/// measured the data.
pub fn mwem_controlled<R: Rng + CryptoRng + ?Sized>(
    data: &CountHistogram,
    workload: &Workload,
    config: &MwemConfig,
    accountant: &mut Accountant,
    rng: &mut R,
    control: Control<'_>,
) -> Result<MwemOutput, MwemError> {
    if config.rounds == 0 {
        return Err(MwemError::InvalidParameter(
            "the number of rounds T must be at least 1",
        ));
    }
    check_inputs(data, workload)?;
    let n = data.total() as f64;
    let truth = TrueAnswers::new(data, workload);
    if let Some((num, den)) = config.improvements.noisy_init
        && (num == 0 || den <= num)
    {
        return Err(MwemError::InvalidParameter(
            "the initialization share must be a fraction in (0, 1)",
        ));
    }
    let cost = config.cost()?;
    let _receipt = accountant.charge_as(
        MwemConfig::NEIGHBOURS,
        &format!(
            "MWEM, {} rounds ({})",
            config.rounds,
            MwemConfig::NEIGHBOURS
        ),
        cost,
    )?;
    // The itemised spending inside the charged cost.
    let Some(total_epsilon) = cost.epsilon() else {
        return Err(MwemError::InvalidParameter("MWEM's cost is pure epsilon"));
    };
    let mut budget = Accountant::pure(total_epsilon);

    // Improvement 2: noisy-histogram initialization.
    let (mut state, eps_rounds) =
        match config.improvements.noisy_init {
            Some((num, den)) => {
                let eps_init = config.epsilon.checked_mul_int(num)?.checked_div_int(den)?;
                let init_scale = MwemConfig::NEIGHBOURS.histogram_l1() as f64 / eps_init.to_f64();
                let informative = data.len() as f64 * init_scale <= data.total() as f64;
                if config.improvements.init_policy == InitPolicy::Auto && !informative {
                    (
                        MwState::uniform(data.len(), MemoryCap::default())?,
                        config.epsilon,
                    )
                } else {
                    let rest = config.epsilon.checked_sub(eps_init)?.ok_or(
                        MwemError::InvalidParameter("no budget left after initialization"),
                    )?;
                    budget.charge("noisy-histogram initialization", eps_init.into())?;
                    let policy = config.improvements.init_policy;
                    (noisy_init(data, eps_init, policy, rng)?, rest)
                }
            }
            None => (
                MwState::uniform(data.len(), MemoryCap::default())?,
                config.epsilon,
            ),
        };

    let adaptive = config.improvements.adaptive
        && 2.0 * config.rounds as f64 / (eps_rounds.to_f64() * n)
            <= config.improvements.adaptive_max_noise;
    let mut measurements: Vec<NoisyAnswer> = Vec::new();
    let mut average = vec![0.0; data.len()];
    let mut iterates = 0usize;
    let horizon = if adaptive {
        2 * config.rounds
    } else {
        config.rounds
    };
    // Per-round ε₀: fixed ε/T, or (adaptive) starting at ε/(2T) and doubling.
    let mut eps0 = eps_rounds.checked_div_int(config.rounds as u64)?;
    if adaptive {
        eps0 = eps0.checked_div_int(2)?;
    }
    let mut round = 0;
    while round < horizon {
        let (em_eps, lap_eps) = round_budget(eps0, config.profile)?;
        let round_cost = em_eps.checked_add(lap_eps)?;
        if !budget.can_afford(&round_cost.into()) {
            if adaptive {
                break;
            }
            return Err(MwemError::Budget(AccountantError::BudgetExceeded {
                label: format!("round {}", round + 1),
                requested: round_cost,
                remaining: budget.remaining(),
            }));
        }
        round += 1;
        if control(round, horizon).is_break() {
            return Err(MwemError::Cancelled { round });
        }
        // 1. Select a query with the exponential mechanism.
        let here = workload.answers(state.probabilities());
        let scores: Vec<f64> = here
            .iter()
            .enumerate()
            .map(|(i, &h)| (truth.get(i) - n * h).abs())
            .collect();
        let em = ExponentialMechanism::new(em_eps, 1.0)?.with_sampling(config.sampling);
        budget.charge(
            &format!("round {round}: exponential mechanism"),
            em_eps.into(),
        )?;
        let chosen = em.select(&scores, rng)?;
        // 2. Measure it with Laplace noise of scale 2/ε₀ (counts).
        budget.charge(
            &format!("round {round}: Laplace measurement"),
            lap_eps.into(),
        )?;
        let noisy = truth.measure(chosen, lap_eps, rng)?;
        let value = noisy / n;
        measurements.push(NoisyAnswer {
            query: chosen,
            value,
            noise_scale: 1.0 / (lap_eps.to_f64() * n),
        });
        // 3. Multiplicative-weights update.
        let query = workload.get(chosen).ok_or(MwemError::InvalidParameter(
            "the EM chose a query outside the workload",
        ))?;
        let current = here.get(chosen).copied().unwrap_or(0.0);
        let mut d_hat = value - current;
        if config.clip {
            d_hat = d_hat.clamp(-1.0, 1.0);
        }
        state.update_known(query, d_hat / 2.0, current);
        if let Some(re) = config.improvements.reiterate {
            reiterate(&mut state, workload, &measurements, re);
        }
        for (a, p) in average.iter_mut().zip(state.probabilities()) {
            *a += p;
        }
        iterates += 1;
        // Improvement 3: double the per-round budget when the signal is below noise.
        if adaptive {
            let noise_scale = 2.0 / (eps0.to_f64() * n);
            if (value - current).abs() < 2.0 * noise_scale {
                eps0 = eps0.checked_mul_int(2)?;
            }
        }
    }
    let distribution = match config.output {
        OutputRule::Average | OutputRule::AverageThenFit if iterates > 0 => {
            average.iter_mut().for_each(|a| *a /= iterates as f64);
            match (config.output, config.improvements.reiterate) {
                (OutputRule::AverageThenFit, Some(re))
                    if measurements.iter().any(|m| m.noise_scale <= re.max_noise) =>
                {
                    let mut fit = MwState::from_weights(&average)?;
                    reiterate(&mut fit, workload, &measurements, re);
                    fit.probabilities().to_vec()
                }
                _ => average,
            }
        }
        _ => state.probabilities().to_vec(),
    };
    Ok(MwemOutput {
        distribution,
        measurements,
        ledger: budget,
        rounds: round,
    })
}

/// (EM budget, Laplace budget) of one round at per-round ε₀.
fn round_budget(eps0: Epsilon, profile: EmProfile) -> Result<(Epsilon, Epsilon), MwemError> {
    let half = eps0.checked_div_int(2)?;
    Ok(match profile {
        EmProfile::Corrected => (half, half),
        EmProfile::ThesisLiteral => (eps0, half),
    })
}

/// The noise of improvement 2's histogram: the geometric mechanism at the
/// histogram's ℓ1 sensitivity under [`MwemConfig::NEIGHBOURS`].
fn init_noise(eps_init: Epsilon) -> Result<Geometric, MwemError> {
    Ok(Geometric::histogram(MwemConfig::NEIGHBOURS, eps_init)?)
}

/// Improvement 2: noisy counts `ĉ = c + Lap(Δ/ε_init)` turned into positive
/// initial weights by `policy` (see [`InitPolicy`]). Δ is the histogram's ℓ1
/// sensitivity under MWEM's neighbour relation: 2 when one record is replaced
/// (one cell loses it, another gains it).
fn noisy_init<R: Rng + CryptoRng + ?Sized>(
    data: &CountHistogram,
    eps_init: Epsilon,
    policy: InitPolicy,
    rng: &mut R,
) -> Result<MwState, MwemError> {
    let geo = init_noise(eps_init)?;
    let noisy = geo.release_raw(data.counts(), rng)?;
    let scale = geo.scale();
    if policy != InitPolicy::Marked {
        let pseudo = scale;
        let w: Vec<f64> = noisy
            .iter()
            .map(|&c| (c as f64).max(0.0) + pseudo)
            .collect();
        return Ok(MwState::from_weights(&w)?);
    }
    // A cut of 3/ε_init marks ~2.5% of empty cells by noise alone, which on
    // large universes (N = 2^16) swamps the data; ln(N/2)/ε_init keeps the expected
    // number of falsely marked empty cells below one (and is ≈ 3/ε_init for N = 64).
    let cut = (data.len() as f64 / 2.0).ln().max(3.0) * scale;
    let marked: Vec<bool> = noisy.iter().map(|&c| c as f64 > cut).collect();
    let marked_mass: f64 = noisy
        .iter()
        .zip(&marked)
        .filter(|&(_, &m)| m)
        .map(|(&c, _)| c as f64)
        .sum();
    let unmarked = marked.iter().filter(|&&m| !m).count();
    let floor = (data.total() as f64 - marked_mass).max(0.5);
    let per_cell = if unmarked > 0 {
        floor / unmarked as f64
    } else {
        0.0
    };
    let weights: Vec<f64> = noisy
        .iter()
        .zip(&marked)
        .map(|(&c, &m)| if m { c as f64 } else { per_cell })
        .collect();
    Ok(MwState::from_weights(&weights)?)
}

/// Improvement 1: passes over the stored measurements, `x ← x·exp(f_j(m_j − f_j(x))/2)`.
/// Each update and the next query's evaluation share one pass over the weights.
fn reiterate(
    state: &mut MwState,
    workload: &Workload,
    measurements: &[NoisyAnswer],
    re: Reiterate,
) {
    let prepared: Vec<(Prepared<'_>, f64)> = measurements
        .iter()
        // A statistical query's answer lies in [0, 1]: clamping the noisy value is
        // post-processing, and it keeps the fit away from degenerate weights.
        .filter(|m| m.noise_scale <= re.max_noise)
        .filter_map(|m| {
            workload
                .get(m.query)
                .map(|q| (state.prepare(q), m.value.clamp(0.0, 1.0)))
        })
        .collect();
    let Some((first, _)) = prepared.first() else {
        return;
    };
    let mean_noise = measurements
        .iter()
        .filter(|m| m.noise_scale <= re.max_noise)
        .map(|m| m.noise_scale)
        .sum::<f64>()
        / prepared.len() as f64;
    let mut here = state.evaluate_prepared(first);
    let mut last_max = f64::INFINITY;
    for _ in 0..re.passes {
        let mut max_gap = 0.0f64;
        let mut sum_gap = 0.0f64;
        for (j, (q, value)) in prepared.iter().enumerate() {
            let gap = value - here;
            max_gap = max_gap.max(gap.abs());
            sum_gap += gap.abs();
            let (next, _) = &prepared[(j + 1) % prepared.len()];
            here = state.update_then_evaluate(q, gap / 2.0, here, next);
        }
        if re.discrepancy && sum_gap / prepared.len() as f64 <= mean_noise {
            break;
        }
        if (last_max - max_gap).abs() < re.tolerance {
            break;
        }
        last_max = max_gap;
    }
}

/// Refuses empty data and a workload over a different universe.
fn check_inputs(data: &CountHistogram, workload: &Workload) -> Result<(), MwemError> {
    if data.total() == 0 {
        return Err(MwemError::Data(DataError::EmptyData));
    }
    if workload.cells() != data.len() {
        return Err(MwemError::Data(DataError::LengthMismatch {
            expected: data.len(),
            got: workload.cells(),
        }));
    }
    Ok(())
}

/// Exact answers on the private counts, and how to measure them.
enum TrueAnswers {
    /// 0/1 queries: exact integer counts, measured with the geometric mechanism.
    Counts(Vec<u64>),
    /// Fractional queries: float answers, measured with grid Laplace.
    Values(Vec<f64>),
}

impl TrueAnswers {
    fn new(data: &CountHistogram, workload: &Workload) -> Self {
        match workload.counts(data.counts()) {
            Some(c) => TrueAnswers::Counts(c),
            None => {
                let x: Vec<f64> = data.counts().iter().map(|&c| c as f64).collect();
                TrueAnswers::Values(workload.answers(&x))
            }
        }
    }

    fn get(&self, i: usize) -> f64 {
        match self {
            TrueAnswers::Counts(c) => c.get(i).map_or(0.0, |&v| v as f64),
            TrueAnswers::Values(v) => v.get(i).copied().unwrap_or(0.0),
        }
    }

    /// Noisy count `f_i(D) + Lap(1/ε)` (sensitivity 1).
    fn measure<R: Rng + CryptoRng + ?Sized>(
        &self,
        i: usize,
        epsilon: Epsilon,
        rng: &mut R,
    ) -> Result<f64, MwemError> {
        Ok(match self {
            TrueAnswers::Counts(c) => {
                let v = c.get(i).copied().unwrap_or(0);
                Geometric::new(1, epsilon)?.release_one(v, rng)? as f64
            }
            TrueAnswers::Values(v) => {
                let v = v.get(i).copied().unwrap_or(0.0);
                VectorLaplace::new(1.0, epsilon)?.release_one(v, rng)?
            }
        })
    }
}

/// Settings of the MW fit in the [`barak_baseline`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BaselineFitOptions {
    /// At most this many passes over all measurements (default 1000).
    pub max_passes: usize,
    /// Stop when the largest residual changes by less than this (default 1e−9).
    pub tolerance: f64,
    /// Also stop at the noise level (see [`Reiterate::discrepancy`]); `false` is
    /// a plain fit to convergence, which over-fits the noisy measurements.
    pub discrepancy: bool,
}

impl Default for BaselineFitOptions {
    fn default() -> Self {
        BaselineFitOptions {
            max_passes: 1000,
            tolerance: 1e-9,
            discrepancy: true,
        }
    }
}

/// The "modified Barak et al." baseline (thesis §5.3): measure **every** query once
/// with Laplace noise of scale `|Q|/ε` (counts; basic composition of |Q|
/// sensitivity-1 queries), then fit with multiplicative weights from uniform.
pub fn barak_baseline<R: Rng + CryptoRng + ?Sized>(
    data: &CountHistogram,
    workload: &Workload,
    epsilon: Epsilon,
    fit: BaselineFitOptions,
    accountant: &mut Accountant,
    rng: &mut R,
) -> Result<MwemOutput, MwemError> {
    check_inputs(data, workload)?;
    let n = data.total() as f64;
    let k = workload.len() as u64;
    let label = format!("{k} Laplace measurements ({})", MwemConfig::NEIGHBOURS);
    let _receipt = accountant.charge_as(MwemConfig::NEIGHBOURS, &label, epsilon.into())?;
    let mut budget = Accountant::pure(epsilon);
    let _ = budget.charge(&label, epsilon.into())?;
    let per_query = epsilon.checked_div_int(k)?;
    let truth = TrueAnswers::new(data, workload);
    let measurements = (0..workload.len())
        .map(|i| {
            Ok(NoisyAnswer {
                query: i,
                value: truth.measure(i, per_query, rng)? / n,
                noise_scale: 1.0 / (per_query.to_f64() * n),
            })
        })
        .collect::<Result<Vec<_>, MwemError>>()?;
    Ok(MwemOutput {
        distribution: fit_from_uniform(data.len(), workload, &measurements, fit)?,
        measurements,
        ledger: budget,
        rounds: 1,
    })
}

/// **Not private.** The multiplicative-weights fit of the workload's exact
/// answers from uniform: the maximum-entropy distribution matching them, i.e. the
/// log-linear model with all interactions the workload spans (for `Q_w`, all
/// ≤ w-way marginals). It is the best any of the private methods can do with this
/// workload, and the experiment draws it as the non-private reference line.
pub fn exact_fit(
    data: &CountHistogram,
    workload: &Workload,
    fit: BaselineFitOptions,
) -> Result<Vec<f64>, MwemError> {
    check_inputs(data, workload)?;
    let n = data.total() as f64;
    let truth = TrueAnswers::new(data, workload);
    let measurements: Vec<NoisyAnswer> = (0..workload.len())
        .map(|i| NoisyAnswer {
            query: i,
            value: truth.get(i) / n,
            noise_scale: 0.0,
        })
        .collect();
    let exact = BaselineFitOptions {
        discrepancy: false,
        ..fit
    };
    fit_from_uniform(data.len(), workload, &measurements, exact)
}

/// Multiplicative weights from uniform over all `measurements`.
fn fit_from_uniform(
    cells: usize,
    workload: &Workload,
    measurements: &[NoisyAnswer],
    fit: BaselineFitOptions,
) -> Result<Vec<f64>, MwemError> {
    let mut state = MwState::uniform(cells, MemoryCap::default())?;
    reiterate(
        &mut state,
        workload,
        measurements,
        Reiterate {
            passes: fit.max_passes,
            tolerance: fit.tolerance,
            max_noise: f64::INFINITY,
            discrepancy: fit.discrepancy,
        },
    );
    Ok(state.probabilities().to_vec())
}

/// Theorem 5.2.11's choice for ε-DP: `T* = (εn√(ln N)/(2 ln k))^{2/3}` and
/// `α* = 2(ln N·ln k/(εn))^{1/3}` (thesis §5.2.4).
pub fn optimal_rounds(epsilon: f64, n: f64, cells: f64, queries: f64) -> (f64, f64) {
    let (ln_n, ln_k) = (cells.ln(), queries.ln());
    let t = (epsilon * n * ln_n.sqrt() / (2.0 * ln_k)).powf(2.0 / 3.0);
    let alpha = 2.0 * (ln_n * ln_k / (epsilon * n)).cbrt();
    (t, alpha)
}

/// The corrected expected-error bound (thesis eq. 5.10 with TYPO-14):
/// `E err(x*, Q) ≤ √(4 ln N/T + 8/(ε₀²n²)) + 4(ln k + 1)/(ε₀ n)` for the corrected
/// EM (λ = ε₀n/4).
pub fn error_bound(cells: f64, queries: f64, rounds: f64, eps0: f64, n: f64) -> f64 {
    (4.0 * cells.ln() / rounds + 8.0 / (eps0 * eps0 * n * n)).sqrt()
        + 4.0 * (queries.ln() + 1.0) / (eps0 * n)
}

#[cfg(test)]
mod tests;

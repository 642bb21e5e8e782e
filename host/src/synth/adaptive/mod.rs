//! **Adaptive marginals**: privq's default mechanism for private synthetic data.
//!
//! It follows AIM (McKenna, Mullins, Sheldon, Miklau, "AIM: An Adaptive and
//! Iterative Mechanism for Differentially Private Synthetic Data", VLDB 2022,
//! Algorithm 3):
//! measure every one-way marginal, then, round after round, choose the marginal
//! whose model estimate is worst relative to the noise it would get, measure it with
//! Gaussian noise, and refit a graphical model to all measurements
//! ([`MarginalEstimator`]); when a measurement barely moves the model, spend more
//! on each later round (budget annealing: AIM halves σ, privq divides it by √2).
//! Synthetic records are drawn from the final model.
//!
//! Two steps differ from AIM's plan, both for domains with large attributes
//! (Adult's age, fnlwgt, capital-gain/loss and hours-per-week have 85–100 values):
//!
//! - **Round 0 by domain size.** AIM measures every one-way marginal with one
//!   round's ρ. Here attribute `a` with `n_a` values gets `max(1, n_a^{2/3}/2.5)`
//!   rounds' ρ (the split `ρ_a ∝ n_a^{2/3}` minimises the one-ways' total expected
//!   ℓ1 noise `Σ n_a·σ_a` for their total ρ), all of round 0 capped at
//!   `max(d, ⌊T/4⌋)` rounds (`one_way_rhos`): when the `max(1, n_a^{2/3}/2.5)`
//!   sum to more, every attribute's share is scaled by the same factor below 1,
//!   small attributes included (on Adult with the default T, by ≈ 0.94, so a
//!   binary attribute gets 0.94 of a round). An attribute of up to 3 values keeps
//!   exactly one round's ρ only when the cap does not bind; it never binds on an
//!   all-binary domain (the sum is d), so NLTCS runs exactly as before.
//! - **Domain compression** (MST: McKenna, Miklau, Sheldon, "Winning the NIST
//!   Contest: A scalable and general approach to differentially private synthetic
//!   data", JPC 2021). After round 0, an attribute's values whose noisy count is
//!   below [`COMPRESS_SIGMAS`]·σ are merged into one when there are two or more;
//!   the later rounds select, measure and model the compressed attributes, and the
//!   final model is expanded back, a merged value's mass split in proportion to its
//!   members' noisy one-way counts ([`Compression`]).
//! - **Coarsened measurements.** An attribute with more than [`COARSE_ABOVE`]
//!   (compressed) values gets a public coarsening from its noisy one-way counts:
//!   its kept values cut into at most [`COARSE_GROUPS`] runs of about equal noisy
//!   mass ([`coarse_maps`]). A candidate holding one is also offered coarsened:
//!   its marginal summed by the product of the groupings, a linear query of the
//!   clique's cells ([`Measurement::grouped`]) that the estimator fits as such. Its
//!   noise term counts the groups, so a pair of large ordinals (Adult's age ×
//!   hours-per-week, 10⁴ cells) can be measured at all (as 10²–10³ groups).
//!
//! All three are privacy-neutral. The round-0 ρ's are functions of public quantities
//! (the budget, T, the attribute sizes), each charged before its noise is drawn,
//! and their sum is within the budget the later rounds then share (the loop
//! charges only what is left). The compression, the records' value-by-value
//! remapping, the compressed one-way measurements (sums of released noisy counts)
//! and the expansion read only the released noisy one-ways: post-processing. The
//! remap is a fixed function of a record once the noisy counts are out, so a
//! neighbouring input changes every later compressed marginal by one record, and
//! the measurements' and selections' sensitivities are unchanged. The coarsenings
//! read only the noisy one-ways; a coarsened marginal `G·M_r(D)` (G a partition of
//! the cells) is a histogram with the marginal's sensitivities (a record lies in
//! one group), and its score `w·(‖G·y − G·ŷ‖₁ − noise)` moves by at most w·Δ₁
//! between neighbours, so the exponential mechanism over the candidates whole and
//! coarsened keeps its sensitivity and cost.
//!
//! # Privacy contract
//! ρ-zCDP, reported as (ε, δ). Neighbours are [`Neighbours::AddRemove`] (n private;
//! the model's total is estimated from the noisy marginals) or
//! [`Neighbours::Replace`] (n public). Every measurement (the exact discrete Gaussian,
//! [`DiscreteGaussian::histogram`]) and every selection (the exact exponential
//! mechanism, charged as ε-bounded range) is charged to the one [`Accountant`] before
//! it samples; the ρ's add exactly and never exceed its budget. Everything else reads
//! only public inputs and earlier outputs. The argument, and where the mechanism
//! differs from AIM, are in the book, chapter "Privacy arguments", section Adaptive
//! marginals (`docs/src/proofs.md`).

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::{Epsilon, Rho};

use super::{
    Clique, Compression, FitOptions, Measurement, Model, SynthError, Total, fit, model_cells,
};
use crate::accountant::{Accountant, AccountantError, BudgetFileError};
use crate::central::{DiscreteGaussian, ExponentialMechanism, MechanismError};
use crate::contract::{Mechanism, Neighbours};
use crate::data::{DataError, Domain, Records};
use crate::parallel;

mod time_budget;
use time_budget::FitClock;

/// What the mechanism needs from an estimator (post-processing only: it sees the
/// noisy marginals, never the data). [`PgmEstimator`] is the junction-tree one.
pub trait MarginalEstimator: Sync {
    /// The fitted model.
    type Model: Sync;
    /// Fits a model to all measurements so far, warm-started from `previous`
    /// (between rounds: the model only guides selection and annealing).
    fn fit(
        &self,
        measurements: &[Measurement],
        previous: Option<&Self::Model>,
    ) -> Result<Self::Model, SynthError>;
    /// Fits a model to all measurements so far from the uniform distribution, with
    /// `previous` lending only what speeds the fit up (its junction tree, its step
    /// size), not its potentials: an early-stopped fit regularised towards the
    /// uniform model, for rounds whose noise is large against the data
    /// ([`ROUNDS_FROM_UNIFORM`]). The default is [`MarginalEstimator::fit`].
    fn fit_from_uniform(
        &self,
        measurements: &[Measurement],
        previous: &Self::Model,
    ) -> Result<Self::Model, SynthError> {
        self.fit(measurements, Some(previous))
    }
    /// The released model: a final, full fit warm-started from the last round's.
    fn finish(
        &self,
        measurements: &[Measurement],
        last: Self::Model,
    ) -> Result<Self::Model, SynthError> {
        let _ = measurements;
        Ok(last)
    }
    /// [`MarginalEstimator::finish`] within about `time` (None: no limit), for a
    /// run with a time budget ([`AdaptiveConfig::time_budget`]). The default
    /// ignores the limit.
    fn finish_within(
        &self,
        measurements: &[Measurement],
        last: Self::Model,
        time: Option<Duration>,
    ) -> Result<Self::Model, SynthError> {
        let _ = time;
        self.finish(measurements, last)
    }
    /// The model's marginal on `clique`, in counts (scaled by the model's total),
    /// cells in [`Clique`] order.
    fn marginal(&self, model: &Self::Model, clique: &Clique) -> Result<Vec<f64>, SynthError>;
    /// The model's marginals on `cliques`, each as [`MarginalEstimator::marginal`]
    /// gives it up to rounding (an estimator may share work between them). The
    /// default computes them one by one, in parallel.
    fn marginals(
        &self,
        model: &Self::Model,
        cliques: &[&Clique],
    ) -> Result<Vec<Vec<f64>>, SynthError> {
        parallel::try_map(cliques, |c| self.marginal(model, c))
    }
    /// The model's total count (its estimate of n under add/remove neighbours).
    fn total(&self, model: &Self::Model) -> f64;
    /// True when `clique` lies inside one table of the model (its marginal is then
    /// free to represent).
    fn covers(&self, model: &Self::Model, clique: &Clique) -> bool;
    /// The number of cells of the model the estimator would build once `added` is
    /// measured too (priced as the next [`MarginalEstimator::fit`] builds it, warm
    /// start included; a compressed estimator prices it at the original sizes, as
    /// the released model will be expanded to them).
    fn model_cells(&self, model: &Self::Model, added: &Clique) -> Result<u128, SynthError>;
    /// True when the model's total is the exact number of records (the data's n),
    /// which only a release under replace-one neighbours may publish;
    /// [`adaptive_marginals`] refuses such an estimator under add/remove.
    fn exact_total(&self) -> bool;
    /// The estimator for the same attributes compressed by `compression` (MST's
    /// domain compression, [`Compression`]): its models are over the compressed
    /// sizes. None (the default) when it cannot model a compressed domain; the
    /// run then keeps the original one.
    fn compressed(&self, compression: &Compression) -> Option<Self>
    where
        Self: Sized,
    {
        let _ = compression;
        None
    }
    /// A model fitted by [`MarginalEstimator::compressed`]'s estimator, over the
    /// original values (called only when that returned an estimator).
    fn expand(
        &self,
        model: Self::Model,
        compression: &Compression,
    ) -> Result<Self::Model, SynthError> {
        let _ = compression;
        Ok(model)
    }
}

/// The junction-tree estimator ([`fit`], Private-PGM) for the mechanism: the total
/// is public n under replace-one neighbours and estimated from the noisy marginals
/// under add/remove.
#[derive(Debug, Clone)]
pub struct PgmEstimator {
    sizes: Vec<usize>,
    /// The sizes a model is priced at ([`MarginalEstimator::model_cells`]): the
    /// original ones when `sizes` are compressed, since the released model is
    /// expanded to them.
    price_sizes: Vec<usize>,
    total: Total,
    round_work: FitWork,
    final_work: FitWork,
}

impl PgmEstimator {
    /// The estimator for `domain` with `n` records under `neighbours` (n is used
    /// only when it is public).
    pub fn new(domain: &Domain, neighbours: Neighbours, n: usize) -> Self {
        let sizes: Vec<usize> = domain.attributes().iter().map(|a| a.size()).collect();
        PgmEstimator {
            price_sizes: sizes.clone(),
            sizes,
            total: if neighbours.n_is_public() {
                Total::Known(n as f64)
            } else {
                Total::Estimated
            },
            round_work: ROUND_WORK,
            final_work: FINAL_WORK,
        }
    }
}

/// Added to a score's ℓ1 sensitivity per unit weight, to absorb the one rounding
/// of [`score`]'s exact fixed-point value to `f64` (at most 2⁻¹³ per unit weight
/// on each side).
const SCORE_SLACK: f64 = 1.0 / 1024.0;

/// Fixed-point bits of [`score`]: model counts are floored to multiples of 2⁻²⁰.
const SCORE_BITS: u32 = 20;

/// AIM's score `w·(‖y − ŷ‖₁ − noise)` of a candidate with true counts `y`, model
/// counts `ŷ` and expected noise `noise`, computed exactly on a 2⁻²⁰ grid: ŷ and
/// the noise (public, identical for neighbouring inputs) are floored to the grid
/// and clamped to [0, 2⁶⁴], y is exact, so the ℓ1 sum is exact in `i128` and a
/// neighbour (y changed by Δ₁ in total) moves it by at most Δ₁, however many cells
/// the marginal has; the error term is clamped to ±2⁴⁰ counts (1-Lipschitz, and
/// beyond any real table) and multiplied by `w` exactly. The one rounding left is
/// the final conversion to `f64`, at most 2⁻¹³·w.
fn score(w: u64, y: &[u64], est: &[f64], noise: f64) -> f64 {
    let unit = f64::from(1u32 << SCORE_BITS);
    let grid = |v: f64| (v.clamp(0.0, 2f64.powi(64)) * unit).floor() as i128;
    let err: i128 = y
        .iter()
        .zip(est)
        .map(|(&a, &b)| ((i128::from(a) << SCORE_BITS) - grid(b)).abs())
        // Terms are non-negative, so saturating is min(sum, MAX): still 1-Lipschitz
        // (reached only beyond 2⁴³ cells).
        .fold(0, i128::saturating_add);
    let limit = 1i128 << (40 + SCORE_BITS);
    let x = (err - grid(noise)).clamp(-limit, limit);
    (x * i128::from(w)) as f64 / unit
}

/// Mirror-descent steps of the fits between rounds, at most: see [`FitWork`].
const ROUND_ITERATIONS: usize = 100;

/// A run whose first rounds measure with noise σ of at least this fraction of
/// the model's total (its estimate of n after round 0) fits every round's model
/// from the uniform distribution ([`MarginalEstimator::fit_from_uniform`], in
/// 50 steps; a model too large for all of them keeps its warm start); below it each round's fit is warm-started from the last. The
/// final fit is warm-started from the last round's model either way.
///
/// Warm-started, the round fits add up to ≈ 100 steps a round towards the
/// least-squares model of every noisy measurement; when the noise is large
/// against the data, an early-stopped fit from the uniform model is the better
/// guide for the selection and the better start for the final fit. Model 3-way
/// TV (mean over seeds) with round fits warm / from the uniform model, and σ/n̂
/// of the first rounds: NLTCS (n = 21 574) at ε = 0.1 (σ/n 0.042) 0.0389 /
/// 0.0344, ε = 0.3 (0.014) 0.0158 / 0.0150, ε = 1 (0.0045) 0.00688 / 0.00668,
/// ε = 2 (0.0023) 0.00405 / 0.00418, ε = 3 (0.0016) 0.00307 / 0.00345, ε = 10
/// (0.0005) 0.00123 / 0.00267; Rochdale (n = 665) at ε = 1 (0.052) and 10
/// (0.012), Czech (n = 1 841) at ε = 1 (0.016): 3–8 % better from the uniform
/// model; Czech at ε = 10 (0.0038) 12 % worse. The threshold 1/250 separates
/// every NLTCS, Rochdale and Czech case; on Adult either start is within 1 % (at
/// ε = 1, 0.0019, the rule keeps the warm start where the uniform one, with the
/// fallback to warm on large models, is 1 % better; at ε = 0.1, 0.017, it picks
/// the uniform start, 0.3 % worse, within the seeds' spread). "Too large" is
/// counted at the sizes the model is fitted at (compressed, when the run
/// compresses). It reads only σ (public) and the model fitted to the noisy
/// one-way marginals (post-processing). (These numbers are from runs that
/// annealed by 4 and fitted fresh rounds in 100 steps; the threshold was not
/// re-derived after both changed.)
pub const ROUNDS_FROM_UNIFORM: f64 = 1.0 / 250.0;

/// How much work one fit may do, in model cells × mirror-descent steps: a fit
/// takes `min(max, max(min, budget / cells))` steps. Each step costs a few passes
/// over the model's tables, so this bounds a fit's time by the model's size
/// alone — never by the data's — and a large model gets fewer steps instead of a
/// longer run (warm-started, its fits' steps add up over the rounds).
/// It reads only the model's public size.
#[derive(Debug, Clone, Copy)]
struct FitWork {
    budget: u128,
    min: usize,
    max: usize,
}

impl FitWork {
    fn iterations(&self, cells: u128) -> usize {
        let fits = self.budget / cells.max(1);
        usize::try_from(fits)
            .unwrap_or(usize::MAX)
            .clamp(self.min, self.max)
    }
}

/// Between rounds: 100 steps up to 2¹⁸ cells, at least 5.
///
/// The budgets of the round fits and of the final fit ([`FINAL_WORK`]) were 4×
/// smaller (100 steps up to 2¹⁶ cells; 2²³ cell-steps). Where the noise is small
/// next to the data, a large model's fits ran out of steps while still improving;
/// elsewhere the stall rule ([`STALL`]) ends them first, so the larger budget
/// costs time only where it buys accuracy. Mean model 3-way TV, Adult, δ = 10⁻⁹,
/// seeds 0–2, release wall time: ε = 1 ×1 0.0722 → 0.0719 (6.0 → 4.8 s),
/// rows ×4 0.0557 → 0.0546 (12.5 → 16.1 s), ×16 0.0511 → 0.0490 (14.8 → 18.8
/// s), ×64 0.0524 → 0.0482 (23.0 → 32.7 s); ε = 10 0.0540 → 0.0527 (9.4 → 17.8
/// s); ε = 0.1 unchanged to the last digit; NLTCS at ε = 0.1 and 10 unchanged,
/// at ε = 1 0.00582 → 0.00579 (seeds 0–5, same time). 16× the budget (seed 0)
/// gave the same to ±0.0004; 2× reached ×64 0.0502.
const ROUND_WORK: FitWork = FitWork {
    budget: 100 << 18,
    min: 5,
    max: ROUND_ITERATIONS,
};

/// Between rounds of a run that fits them from the uniform model
/// ([`ROUNDS_FROM_UNIFORM`]): 50 steps, on models up to 2¹⁶ cells; a larger model
/// keeps its warm start and [`ROUND_WORK`]'s steps.
///
/// Half of [`ROUND_WORK`]'s steps: from the uniform model, an early stop is the point,
/// and since annealing doubles ρ (not quadruples it) a run takes more rounds.
/// Mean model 3-way TV, annealing by 2, round fits of 100 → 50 steps: NLTCS at
/// ε = 0.1 0.0340 → 0.0339 (seeds 0–99), at ε = 1 0.00593 → 0.00576 (seeds
/// 0–31; release 6.5–8.3 → 4.5–5.7 s, seeds 0–1); Czech at ε = 1 0.0271 →
/// 0.0250, Rochdale at ε = 1 / 10 0.0880 / 0.0120 → 0.0916 / 0.0117 (seeds
/// 0–15); Adult at ε = 0.1 0.1937 → 0.1956 (seeds 0–3, 0.003 between seeds).
/// The warm-started rounds keep 100: there 50 cost Adult at ε = 10 0.0538 →
/// 0.0557.
const FRESH_ROUND_WORK: FitWork = FitWork {
    budget: 50 << 16,
    min: 5,
    max: 50,
};

/// The released model's final fit: 2²⁵ cell-steps, i.e. 250 steps up to 134 217
/// cells, at least 50 (2²³ until the budgets were raised: see [`ROUND_WORK`]).
///
/// It was 1000 (AIM's, McKenna et al. 2022, every round). On Adult and NLTCS at
/// ε = 1 the fit is far from the Frank–Wolfe tolerance after 1000 steps, yet 250
/// steps give a model as close to the data or closer (mean 3-way TV, Adult seeds
/// 0–2 and 5: 0.0745 → 0.0741; NLTCS seeds 0–2: 0.00642 → 0.00639): the later
/// steps fit the noise more than the data. The final fit was 38–70 % of an Adult
/// release. The budget was then 250·2¹⁸; since the coarsened measurements
/// ([`coarse_maps`]) the Adult models have 2–4·10⁵ cells, and 2²³ gives them the
/// same accuracy (within 0.0002 of 3-way TV per seed) in less time.
const FINAL_WORK: FitWork = FitWork {
    budget: 1 << 25,
    min: 50,
    max: 250,
};

/// Every fit of a release (rounds and final) stops once three steps in a row each
/// lowered the loss by less than `STALL × Σ_i cells(C_i)` ([`FitOptions::stall`],
/// which says why that scale).
///
/// Measured against running every step (mean 3-way TV of the model, one release
/// binary with the rule switched): NLTCS at ε = 10 0.00114 → 0.00116 (seeds 0–3;
/// records 0.00116 → 0.00119) in 0.62–0.85 of the time; at ε = 1 0.00586 →
/// 0.00589 (0–7); at ε = 0.1 0.0325 → 0.0329 (0–15); Adult at ε = 1 0.0731 →
/// 0.0728 (0–3; records 0.0755 → 0.0752) in about 0.7 of the time. 10⁻³ was
/// faster still and worse at ε = 10 (0.00134, seeds 0–1); 10⁻⁴ saved nothing.
const STALL: f64 = 3e-4;

impl PgmEstimator {
    /// A fit of `work` warm-started from `previous`, or with `fresh`, from the
    /// uniform model in `fresh`'s steps — when the model is small enough for all
    /// of them; a larger one is fitted warm with `work`, as if `fresh` were `None`.
    /// It stops after the first step that ends past `deadline`, once `work`'s
    /// minimum steps are done.
    fn fit_for(
        &self,
        measurements: &[Measurement],
        previous: Option<&Model>,
        work: FitWork,
        fresh: Option<FitWork>,
        deadline: Option<Instant>,
    ) -> Result<Model, SynthError> {
        let mut cliques: Vec<Clique> = measurements.iter().map(|m| m.clique.clone()).collect();
        if let Some(p) = previous {
            cliques.extend(p.cliques().iter().cloned());
        }
        let cells = model_cells(&self.sizes, &cliques)?;
        let fresh_steps = fresh.and_then(|f| Some(f.iterations(cells)).filter(|&k| k >= f.max));
        let options = FitOptions {
            iterations: fresh_steps.unwrap_or_else(|| work.iterations(cells)),
            warm_start: previous,
            from_uniform: fresh_steps.is_some(),
            stall: STALL,
            max_cells: u128::MAX,
            // The tree the size filter priced (at the original sizes), so the
            // released model, expanded, has the cells it was priced at.
            order_sizes: Some(&self.price_sizes),
            deadline: deadline.map(|at| (at, work.min)),
            ..FitOptions::default()
        };
        fit(&self.sizes, measurements, self.total, &options)
    }
}

impl MarginalEstimator for PgmEstimator {
    type Model = Model;

    fn fit(
        &self,
        measurements: &[Measurement],
        previous: Option<&Model>,
    ) -> Result<Model, SynthError> {
        self.fit_for(measurements, previous, self.round_work, None, None)
    }

    fn fit_from_uniform(
        &self,
        measurements: &[Measurement],
        previous: &Model,
    ) -> Result<Model, SynthError> {
        self.fit_for(
            measurements,
            Some(previous),
            self.round_work,
            Some(FRESH_ROUND_WORK),
            None,
        )
    }

    fn finish(&self, measurements: &[Measurement], last: Model) -> Result<Model, SynthError> {
        self.finish_within(measurements, last, None)
    }

    fn finish_within(
        &self,
        measurements: &[Measurement],
        last: Model,
        time: Option<Duration>,
    ) -> Result<Model, SynthError> {
        // A deadline too far to represent is no deadline.
        let deadline = time.and_then(|t| Instant::now().checked_add(t));
        self.fit_for(measurements, Some(&last), self.final_work, None, deadline)
    }

    fn marginal(&self, model: &Model, clique: &Clique) -> Result<Vec<f64>, SynthError> {
        model.marginal(clique)
    }

    fn marginals(&self, model: &Model, cliques: &[&Clique]) -> Result<Vec<Vec<f64>>, SynthError> {
        model.marginals(cliques)
    }

    fn total(&self, model: &Model) -> f64 {
        model.total()
    }

    fn covers(&self, model: &Model, clique: &Clique) -> bool {
        model.cliques().iter().any(|c| clique.is_subset(c))
    }

    fn model_cells(&self, model: &Model, added: &Clique) -> Result<u128, SynthError> {
        // The next fit triangulates the measured cliques with the warm start's (the
        // model's) cliques, which already contain every measured one.
        let mut cliques = model.cliques().to_vec();
        cliques.push(added.clone());
        model_cells(&self.price_sizes, &cliques)
    }

    fn exact_total(&self) -> bool {
        matches!(self.total, Total::Known(_))
    }

    fn compressed(&self, compression: &Compression) -> Option<Self> {
        (compression.original_sizes() == self.sizes.as_slice()).then(|| PgmEstimator {
            sizes: compression.sizes().to_vec(),
            price_sizes: self.sizes.clone(),
            ..self.clone()
        })
    }

    fn expand(&self, model: Model, compression: &Compression) -> Result<Model, SynthError> {
        compression.expand(&model)
    }
}

/// Marginals to be answered well: attribute sets with integer weights `c_s ≥ 1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarginalWorkload {
    cliques: Vec<(Clique, u64)>,
}

impl MarginalWorkload {
    /// All `k`-way marginals of the domain, weight 1.
    pub fn all_k_way(domain: &Domain, k: usize) -> Result<Self, AdaptiveError> {
        if k == 0 || k > domain.dims() || k > 20 {
            return Err(AdaptiveError::InvalidParameter(format!(
                "marginal order {k} is not in 1..={}",
                domain.dims().min(20)
            )));
        }
        let mut cliques = Vec::new();
        let mut cur: Vec<usize> = (0..k).collect();
        let d = domain.dims();
        loop {
            cliques.push((Clique::new(cur.iter().copied())?, 1));
            let mut i = k;
            while i > 0 && cur[i - 1] == d - k + i - 1 {
                i -= 1;
            }
            if i == 0 {
                break;
            }
            cur[i - 1] += 1;
            for j in i..k {
                cur[j] = cur[j - 1] + 1;
            }
        }
        Ok(MarginalWorkload { cliques })
    }

    /// Explicit attribute sets and weights (each set non-empty, in the domain;
    /// weights ≥ 1).
    pub fn new(domain: &Domain, cliques: Vec<(Vec<usize>, u64)>) -> Result<Self, AdaptiveError> {
        if cliques.is_empty() {
            return Err(AdaptiveError::InvalidParameter(
                "the workload is empty".into(),
            ));
        }
        let mut out = Vec::with_capacity(cliques.len());
        for (mut attrs, w) in cliques {
            attrs.sort_unstable();
            attrs.dedup();
            if attrs.is_empty()
                || attrs.len() > 20
                || w == 0
                || attrs.iter().any(|&a| a >= domain.dims())
            {
                return Err(AdaptiveError::InvalidParameter(format!(
                    "workload marginal {attrs:?} (weight {w}) is empty, has more than 20 \
                     attributes, has weight 0 or names an attribute outside the {} of the domain",
                    domain.dims()
                )));
            }
            out.push((Clique::new(attrs)?, w));
        }
        Ok(MarginalWorkload { cliques: out })
    }

    /// The attribute sets and their weights.
    pub fn cliques(&self) -> &[(Clique, u64)] {
        &self.cliques
    }

    /// AIM's candidates: every non-empty subset `r` of a workload set, with weight
    /// `w_r = Σ_s c_s·|r ∩ s|`, in a deterministic order.
    pub fn candidates(&self) -> Vec<(Clique, u64)> {
        let mut subsets: BTreeMap<Vec<usize>, u64> = BTreeMap::new();
        for (clique, _) in &self.cliques {
            let attrs = clique.attributes();
            let k = attrs.len();
            for bits in 1u32..(1 << k) {
                let r: Vec<usize> = (0..k)
                    .filter(|&i| bits >> i & 1 == 1)
                    .map(|i| attrs[i])
                    .collect();
                subsets.entry(r).or_insert(0);
            }
        }
        for (r, w) in subsets.iter_mut() {
            *w = self
                .cliques
                .iter()
                .map(|(s, c)| c.saturating_mul(r.iter().filter(|&&a| s.contains(a)).count() as u64))
                .fold(0u64, u64::saturating_add);
        }
        subsets
            .into_iter()
            .filter_map(|(r, w)| Clique::new(r).ok().map(|c| (c, w)))
            .collect()
    }
}

/// Options of the adaptive-marginals mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdaptiveConfig {
    /// The neighbour relation the guarantee is stated for.
    pub neighbours: Neighbours,
    /// Planned rounds T (default 16·d, AIM's); the one-way marginals use d of them.
    pub rounds: Option<usize>,
    /// Cap on the model's cells (default 524 288: 4 MiB of doubles; AIM's is
    /// 80 MB). A fit's steps are bounded by the model's cells, so this cap bounds
    /// the run's time whatever the number of rows.
    pub max_model_cells: u128,
    /// MST's domain compression after the one-way marginals ([`Compression`]):
    /// values whose noisy count is below [`COMPRESS_SIGMAS`]·σ are merged (default
    /// on; used only with an estimator that supports it).
    pub compress: bool,
    /// The time the model fitting may take (default: none). When the time left,
    /// less a few rounds' for the final fit, holds no more than one round like
    /// the last, that round spends all the ρ left and is the last; the final fit
    /// stops at the budget. The run still spends its ρ. Reading the records and
    /// counting their marginals are not counted (they grow with the rows). The
    /// clock reads no data, but the release then depends on the machine's speed:
    /// the guarantee assumes that speed independent of the data, and a seeded run
    /// is no longer reproducible. See the `time_budget` module. Zero is refused.
    pub time_budget: Option<Duration>,
}

/// The compression threshold in σ's of the one-way measurement (MST uses 3; 5
/// measured slightly better on Adult at ε = 1, see the book's chapter on
/// synthetic data).
pub const COMPRESS_SIGMAS: f64 = 5.0;

/// An attribute with more values than this (after compression) is also measured
/// coarsened ([`coarse_maps`]).
pub const COARSE_ABOVE: usize = 16;

/// The number of public runs a coarsened attribute's kept values are grouped into.
pub const COARSE_GROUPS: usize = 32;

/// Per attribute, its public coarsening, from its noisy one-way counts `noisy`
/// (post-processing): an attribute with more than `above` values has its values
/// `0..kept` (in their order) cut into at most `groups` runs of about equal noisy
/// mass (counts clamped at 0), and a merged value of a compressed attribute
/// (`merged[a]`: the last value) is a group of its own. None: the attribute is
/// kept whole (also when every value would be a group of its own). Returns value → group maps with groups numbered 0, 1, … in order.
pub fn coarse_maps(
    noisy: &[Vec<f64>],
    merged: &[bool],
    above: usize,
    groups: usize,
) -> Vec<Option<Vec<u32>>> {
    noisy
        .iter()
        .zip(merged)
        .map(|(y, &merged)| {
            if y.len() <= above || groups == 0 {
                return None;
            }
            let kept = if merged { y.len() - 1 } else { y.len() };
            let total: f64 = y[..kept].iter().map(|v| v.max(0.0)).sum();
            let mut map = Vec::with_capacity(y.len());
            let (mut before, mut last, mut next) = (0.0, None, 0u32);
            for v in &y[..kept] {
                let v = v.max(0.0);
                let mid = before + v / 2.0;
                before += v;
                let raw = if total > 0.0 {
                    ((mid / total * groups as f64) as usize).min(groups - 1)
                } else {
                    0
                };
                if last.is_some_and(|l| l != raw) {
                    next += 1;
                }
                last = Some(raw);
                map.push(next);
            }
            if merged {
                map.push(if kept == 0 { 0 } else { next + 1 });
            }
            // Every value a group of its own is the attribute whole: no coarsening
            // (its coarsened option would only repeat the whole one).
            let groups = map.last().map_or(0, |&g| g as usize + 1);
            (groups < y.len()).then_some(map)
        })
        .collect()
}

/// [`clique_groups`] for a candidate the model could ever hold (at most
/// `max_cells` fine cells): the map has one entry per fine cell, and a clique
/// over the cap never passes the size filter (its coarsened option would never
/// be offered), however large the product.
pub(crate) fn candidate_groups(
    clique: &Clique,
    sizes: &[usize],
    maps: &[Option<Vec<u32>>],
    max_cells: u128,
) -> Option<(Vec<u32>, usize)> {
    (clique.cells_u128(sizes) <= max_cells)
        .then(|| clique_groups(clique, sizes, maps))
        .flatten()
}

/// The coarsening of `clique`'s cells (row-major over `sizes`) by the attribute
/// maps `maps`: cell → group, and the number of groups. None when no attribute
/// of the clique is coarsened.
pub(crate) fn clique_groups(
    clique: &Clique,
    sizes: &[usize],
    maps: &[Option<Vec<u32>>],
) -> Option<(Vec<u32>, usize)> {
    let attrs = clique.attributes();
    if attrs.iter().all(|&a| maps[a].is_none()) {
        return None;
    }
    let coarse: Vec<usize> = attrs
        .iter()
        .map(|&a| match &maps[a] {
            None => sizes[a],
            Some(m) => m.iter().map(|&g| g as usize + 1).max().unwrap_or(1),
        })
        .collect();
    let cells: usize = attrs.iter().map(|&a| sizes[a]).product();
    let mut values = vec![0usize; attrs.len()];
    let mut out = Vec::with_capacity(cells);
    for _ in 0..cells {
        let mut g = 0usize;
        for (i, &a) in attrs.iter().enumerate() {
            let v = match &maps[a] {
                None => values[i],
                Some(m) => m[values[i]] as usize,
            };
            g = g * coarse[i] + v;
        }
        out.push(g as u32);
        for i in (0..attrs.len()).rev() {
            values[i] += 1;
            if values[i] < sizes[attrs[i]] {
                break;
            }
            values[i] = 0;
        }
    }
    Some((out, coarse.iter().product()))
}

/// `x` summed by `groups` into `n` groups.
fn coarsen<T: Copy + Default + std::ops::AddAssign>(groups: &[u32], n: usize, x: &[T]) -> Vec<T> {
    let mut out = vec![T::default(); n];
    for (&g, &v) in groups.iter().zip(x) {
        out[g as usize] += v;
    }
    out
}

impl AdaptiveConfig {
    /// AIM's defaults under `neighbours`.
    pub fn new(neighbours: Neighbours) -> Self {
        AdaptiveConfig {
            neighbours,
            rounds: None,
            max_model_cells: 4 << 17,
            compress: true,
            time_budget: None,
        }
    }
}

/// What one round did (public: a function of the outputs).
#[derive(Debug, Clone, PartialEq)]
pub struct RoundLog {
    /// 1-based round number (the one-way measurements are round 0).
    pub round: usize,
    /// The marginal chosen and measured.
    pub clique: Clique,
    /// Options the selection chose among: candidates that passed the size and
    /// noise filters, measured whole or coarsened.
    pub candidates: usize,
    /// The measurement's noise standard deviation.
    pub sigma: f64,
    /// The selection's ε.
    pub epsilon: Option<Epsilon>,
    /// ρ spent by this round.
    pub rho: Rho,
    /// ρ spent so far, this round and the one-way measurements included (the run
    /// ends when it reaches the budget).
    pub spent: Rho,
    /// True when the next round spends twice this one's ρ (σ ÷ √2).
    pub annealed: bool,
    /// The number of cells measured when the marginal was measured coarsened
    /// ([`coarse_maps`]; None: measured whole).
    pub coarsened: Option<usize>,
}

/// The result: the fitted model, every measurement, and the rounds.
#[derive(Debug)]
pub struct AdaptiveOutput<M> {
    /// The final model.
    pub model: M,
    /// Every noisy marginal, in the order measured: the one-way marginals as
    /// measured (over the original values, before any compression), then the
    /// selected ones (over the compressed values when [`compression`](Self::compression)
    /// is set).
    pub measurements: Vec<Measurement>,
    /// One entry per round.
    pub rounds: Vec<RoundLog>,
    /// True when the run's noise chose round fits from the uniform model
    /// ([`ROUNDS_FROM_UNIFORM`]: each round whose fit takes its full steps starts
    /// there, a larger model's keeps its warm start), false when every round fit
    /// was warm-started from the last.
    pub rounds_from_uniform: bool,
    /// The compression the run measured and modelled under after the one-way
    /// marginals (the measurements after those are over the compressed values;
    /// the model is expanded back), if any value was merged.
    pub compression: Option<Compression>,
    /// The time the model fitting took, as the time budget counts it
    /// ([`AdaptiveConfig::time_budget`]; counted with or without one).
    pub fitting_time: Duration,
    /// True when the time budget made a round the last before the planned steps
    /// had spent the ρ (that round took all that was left).
    pub ended_by_time: bool,
}

/// Errors of the adaptive-marginals mechanism.
#[derive(Debug, thiserror::Error)]
pub enum AdaptiveError {
    /// A parameter is outside its range.
    #[error("invalid parameter: {0}")]
    InvalidParameter(String),
    /// The data or domain.
    #[error(transparent)]
    Data(#[from] DataError),
    /// A mechanism refused (budget, parameters).
    #[error(transparent)]
    Mechanism(#[from] MechanismError),
    /// The accountant refused or is not a zCDP one.
    #[error(transparent)]
    Budget(#[from] AccountantError),
    /// The estimator failed.
    #[error("model estimation failed: {0}")]
    Estimator(#[from] SynthError),
    /// The run's cost cannot be stated in a session's or a budget file's terms
    /// (its ρ's conversion to (ε, δ) failed, or δ is out of range).
    #[error("the run's cost cannot be stated: {0}")]
    RunCost(#[from] BudgetFileError),
    /// The caller stopped the run after a round ([`adaptive_marginals_controlled`]);
    /// nothing was released.
    #[error("cancelled after round {round}; nothing was released")]
    Cancelled {
        /// The last round run.
        round: usize,
    },
}

impl From<privq_core::Error> for AdaptiveError {
    fn from(e: privq_core::Error) -> Self {
        AdaptiveError::Mechanism(MechanismError::Core(e))
    }
}

/// `ρ·p/q` rounded **down** to a dyadic `m/2^K` (K ≤ 56, as fine as 63-bit `m`
/// allows): a smaller cost is always safe to charge, and sums and differences of
/// dyadic costs stay exact in 64-bit fractions, where arbitrary fractions would
/// overflow after a few rounds. An error when it rounds to zero.
pub(crate) fn rho_scaled(rho: Rho, p: u64, q: u64) -> Result<Rho, AdaptiveError> {
    let num = u128::from(rho.num()) * u128::from(p);
    let den = u128::from(rho.den()) * u128::from(q);
    if den == 0 {
        return Err(AdaptiveError::InvalidParameter(
            "a split of zero ways".into(),
        ));
    }
    let whole = num / den;
    if whole >= 1 << 62 {
        return Err(AdaptiveError::InvalidParameter(format!(
            "the budget ρ = {} is too large",
            rho.to_f64()
        )));
    }
    // K bits of binary long division, without overflow (2·frac may not fit).
    let k = 56u32.min(62 - (128 - whole.leading_zeros()));
    let (mut m, mut frac) = (whole, num % den);
    for _ in 0..k {
        m <<= 1;
        if frac >= den - frac {
            m |= 1;
            frac -= den - frac;
        } else {
            frac <<= 1;
        }
    }
    let m = m as u64;
    Rho::new(m, 1 << k).map_err(|_| {
        AdaptiveError::InvalidParameter(format!(
            "the budget ρ = {} is too small to split {p}/{q} ways",
            rho.to_f64()
        ))
    })
}

fn add(spent: Option<Rho>, cost: Rho) -> Result<Rho, AdaptiveError> {
    Ok(match spent {
        None => cost,
        Some(s) => s.checked_add(cost)?,
    })
}

/// The largest `m/2²⁴ ≤ √(8ρ)`: the selection ε whose bounded-range cost ε²/8 fits
/// in ρ.
fn selection_epsilon(rho: Rho) -> Result<Epsilon, AdaptiveError> {
    const SHIFT: u32 = 24;
    // 8ρ·2^48 = num·2^51/den, floor; its integer square root is floor(√(8ρ)·2^24).
    let scaled = (u128::from(rho.num()) << (2 * SHIFT + 3)) / u128::from(rho.den());
    let m = isqrt(scaled);
    let m =
        u64::try_from(m).map_err(|_| AdaptiveError::InvalidParameter("ρ is too large".into()))?;
    Epsilon::new(m, 1 << SHIFT).map_err(|_| {
        AdaptiveError::InvalidParameter(format!(
            "the selection budget ρ = {} is too small",
            rho.to_f64()
        ))
    })
}

fn isqrt(n: u128) -> u128 {
    if n < 2 {
        return n;
    }
    let mut x = (n as f64).sqrt() as u128;
    while x * x > n {
        x -= 1;
    }
    while (x + 1) * (x + 1) <= n {
        x += 1;
    }
    x
}

/// One round's measurement ρ in [`one_way_rhos`]'s units (2.5·2¹⁰: an attribute
/// gets `max(1, n^{2/3}/2.5)` rounds').
const ONE_WAY_UNIT: u64 = 2560;

/// The one-way marginals' measurement ρ's (round 0), from public quantities only
/// (the first rounds' measurement ρ `step`, the attribute sizes, the planned rounds
/// T). Attribute `a` with `n_a` values gets `step·u_a/2560` with
/// `u_a = max(2560, ⌊∛(n_a²·2³⁰)⌋)`, i.e. `step·max(1, n_a^{2/3}/2.5)`: the
/// split that minimises the one-way marginals' total expected ℓ1 noise
/// `Σ_a n_a·σ_a` for their total ρ is `ρ_a ∝ n_a^{2/3}`. All of round 0 together
/// takes at most `max(d, ⌊T/4⌋)` rounds' `step`: when `Σ_a u_a` exceeds
/// `2560·max(d, ⌊T/4⌋)`, every `ρ_a` is scaled by the same factor
/// `2560·max(d, ⌊T/4⌋)/Σ_a u_a < 1`, so an attribute of up to 3 values
/// (`u_a = 2560`) keeps AIM's one round exactly when the cap does not bind
/// (always on an all-binary domain) and gets less otherwise. At least three
/// quarters of the budget is left for the rounds whenever `d ≤ T/4`. Every ρ is a
/// dyadic fraction rounded down.
pub(crate) fn one_way_rhos(
    step: Rho,
    sizes: &[usize],
    rounds: usize,
) -> Result<Vec<Rho>, AdaptiveError> {
    let units: Vec<u64> = sizes
        .iter()
        .map(|&n| {
            let n = n as u128;
            // ⌊∛(n²·2³⁰)⌋ by integer search (n ≤ 2³², so n²·2³⁰ < 2⁹⁴).
            let x = (n * n) << 30;
            let mut r = (x as f64).cbrt() as u128;
            while r * r * r > x {
                r -= 1;
            }
            while (r + 1) * (r + 1) * (r + 1) <= x {
                r += 1;
            }
            u64::try_from(r).unwrap_or(u64::MAX).max(ONE_WAY_UNIT)
        })
        .collect();
    let want = units.iter().fold(0u64, |a, &u| a.saturating_add(u));
    let d = sizes.len() as u64;
    let cap = ONE_WAY_UNIT.saturating_mul(d.max(rounds as u64 / 4));
    let round0 = rho_scaled(step, want.min(cap), ONE_WAY_UNIT)?;
    units.iter().map(|&u| rho_scaled(round0, u, want)).collect()
}

/// The per-round plan: measurement ρ and selection ε.
#[derive(Debug, Clone, Copy)]
struct Step {
    measure: Rho,
    select: Epsilon,
}

impl Step {
    fn cost(&self) -> Result<Rho, AdaptiveError> {
        Ok(self
            .measure
            .checked_add(Rho::from_bounded_range(self.select)?)?)
    }

    /// The next step once a measurement barely moved the model: ρ doubled for
    /// both the measurement (σ ÷ √2) and the selection (ε × √2, rounded down to
    /// [`selection_epsilon`]'s grid, so never more than twice its ρ).
    ///
    /// AIM (McKenna et al. 2022, Algorithm 3) multiplies both by 4 (σ halved, ε
    /// doubled). Doubling spends the budget in smaller steps: more rounds at
    /// intermediate σ and fewer at the smallest. Mean model 3-way TV (ρ ×4 → ρ
    /// ×2), release build, the same binary with each factor: NLTCS at ε = 0.1
    /// 0.0354 → 0.0340 (seeds 0–99), at ε = 1 0.00718 → 0.00593 (seeds 0–31),
    /// at ε = 10 0.00122 → 0.00114 (seeds 0–3); Adult at ε = 0.1 / 1 / 10
    /// 0.1955 / 0.0728 / 0.0554 → 0.1937 / 0.0734 / 0.0538 (seeds 0–3); Czech at
    /// ε = 1 / 10 0.0274 / 0.00413 → 0.0271 / 0.00384, Rochdale 0.0912 / 0.0125
    /// → 0.0880 / 0.0120, Mildew 0.616 / 0.168 → 0.616 / 0.166 (seeds 0–15).
    fn annealed(&self) -> Result<Step, AdaptiveError> {
        Ok(Step {
            measure: rho_scaled(self.measure, 2, 1)?,
            select: selection_epsilon(rho_scaled(Rho::from_bounded_range(self.select)?, 2, 1)?)?,
        })
    }

    /// The last round: 90 % of what is left to measurement, the rest to selection.
    fn last(remaining: Rho) -> Result<Step, AdaptiveError> {
        let measure = rho_scaled(remaining, 9, 10)?;
        let select_budget = remaining.checked_sub(measure)?.ok_or_else(|| {
            AdaptiveError::InvalidParameter("the remaining budget is too small".into())
        })?;
        Ok(Step {
            measure,
            select: selection_epsilon(select_budget)?,
        })
    }
}

/// The public schedule of a run that spends `available` ρ: its planned rounds T,
/// the dyadic budget it plans on and the first rounds' step. It reads only public
/// quantities (the budget, the number of attributes, the configured rounds), so a
/// front end can validate it, and state it, before anything is charged
/// ([`SynthRequest::plan`](crate::synth::release::SynthRequest::plan)).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Schedule {
    /// Planned rounds T (default 16·d); the run takes at most about T rounds (a
    /// round costs the first rounds' step, up to the selection ε's rounding, and
    /// annealing only raises it).
    /// Round 0 measures the d one-way marginals at [`Schedule::one_way_rhos`].
    pub(crate) rounds: usize,
    /// The dyadic budget ≤ the available ρ that every cost is planned on.
    pub(crate) total: Rho,
    step: Step,
}

impl Schedule {
    /// The schedule for `available` ρ over `d` attributes; `rounds` overrides
    /// the default 16·d planned rounds. Refuses a count that leaves no round after
    /// the one-way marginals, or a budget too small to split into its rounds.
    pub(crate) fn new(
        available: Rho,
        rounds: Option<usize>,
        d: usize,
    ) -> Result<Schedule, AdaptiveError> {
        // Plan on a dyadic budget ≤ the accountant's, so that every cost and every
        // remainder is an exact dyadic fraction.
        let total = rho_scaled(available, 1, 1)?;
        let rounds = rounds.unwrap_or(16 * d);
        if rounds <= d {
            return Err(AdaptiveError::InvalidParameter(format!(
                "{rounds} planned rounds leave none after the {d} one-way marginals"
            )));
        }
        let t = u64::try_from(rounds)
            .ok()
            .filter(|t| t.checked_mul(10).is_some() && rounds.checked_mul(4).is_some())
            .ok_or_else(|| {
                AdaptiveError::InvalidParameter(format!("{rounds} planned rounds are too many"))
            })?;
        let step = Step {
            measure: rho_scaled(total, 9, 10 * t)?,
            select: selection_epsilon(rho_scaled(total, 1, 10 * t)?)?,
        };
        Ok(Schedule {
            rounds,
            total,
            step,
        })
    }

    /// The ρ of each measurement in rounds 1, 2, … before any annealing (round 0's
    /// are [`Schedule::one_way_rhos`]).
    pub(crate) fn measure_rho(&self) -> Rho {
        self.step.measure
    }

    /// Round 0's one-way measurement ρ's over attributes of `sizes` (the very
    /// function the run uses, [`one_way_rhos`]).
    pub(crate) fn one_way_rhos(&self, sizes: &[usize]) -> Result<Vec<Rho>, AdaptiveError> {
        one_way_rhos(self.step.measure, sizes, self.rounds)
    }

    /// The ε of each selection in the first rounds (before any annealing).
    pub(crate) fn select_epsilon(&self) -> Epsilon {
        self.step.select
    }
}

/// Runs the adaptive-marginals mechanism on `records` over `domain`, spending the
/// whole remaining ρ of `accountant` (which must be a zCDP accountant), and returns
/// the fitted model. `progress` sees every round.
#[allow(clippy::too_many_arguments)]
pub fn adaptive_marginals<E: MarginalEstimator, R: Rng + CryptoRng + ?Sized>(
    records: &Records,
    domain: &Domain,
    workload: &MarginalWorkload,
    config: &AdaptiveConfig,
    estimator: &E,
    accountant: &mut Accountant,
    rng: &mut R,
    progress: &mut dyn FnMut(&RoundLog),
) -> Result<AdaptiveOutput<E::Model>, AdaptiveError> {
    adaptive_marginals_controlled(
        records,
        domain,
        workload,
        config,
        estimator,
        accountant,
        rng,
        &mut |r| {
            progress(r);
            ControlFlow::Continue(())
        },
    )
}

/// [`adaptive_marginals`], stopped when `control` breaks after a round: the run
/// ends with [`AdaptiveError::Cancelled`] and returns nothing (a front end's
/// Ctrl-C). What `accountant` was charged for the rounds already run stays
/// charged: their measurements were taken.
#[allow(clippy::too_many_arguments)]
pub fn adaptive_marginals_controlled<E: MarginalEstimator, R: Rng + CryptoRng + ?Sized>(
    records: &Records,
    domain: &Domain,
    workload: &MarginalWorkload,
    config: &AdaptiveConfig,
    estimator: &E,
    accountant: &mut Accountant,
    rng: &mut R,
    control: &mut dyn FnMut(&RoundLog) -> ControlFlow<()>,
) -> Result<AdaptiveOutput<E::Model>, AdaptiveError> {
    run(
        records,
        domain,
        workload,
        config,
        estimator,
        accountant,
        rng,
        control,
        CoarseFrom::Noisy,
    )
}

/// The counts the coarsenings ([`coarse_maps`]) are cut from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CoarseFrom {
    /// The noisy one-way measurements: post-processing (the mechanism).
    Noisy,
    /// The true one-way counts: a broken twin the auditor must flag, never a
    /// release.
    #[cfg(test)]
    Truth,
}

/// [`adaptive_marginals_controlled`] with its coarsenings cut from `coarse_from`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run<E: MarginalEstimator, R: Rng + CryptoRng + ?Sized>(
    records: &Records,
    domain: &Domain,
    workload: &MarginalWorkload,
    config: &AdaptiveConfig,
    estimator: &E,
    accountant: &mut Accountant,
    rng: &mut R,
    control: &mut dyn FnMut(&RoundLog) -> ControlFlow<()>,
    coarse_from: CoarseFrom,
) -> Result<AdaptiveOutput<E::Model>, AdaptiveError> {
    if let Some(bound) = accountant.neighbours()
        && bound != config.neighbours
    {
        return Err(AdaptiveError::InvalidParameter(format!(
            "the accountant is bound to {} but the mechanism runs under {}",
            bound.phrase(),
            config.neighbours.phrase()
        )));
    }
    if config.time_budget.is_some_and(|t| t.is_zero()) {
        return Err(AdaptiveError::InvalidParameter(
            "the time budget must be a positive number of seconds, not 0".into(),
        ));
    }
    if estimator.exact_total() && !config.neighbours.n_is_public() {
        return Err(AdaptiveError::InvalidParameter(format!(
            "the estimator fixes the model's total to the exact n, which is private under {}",
            config.neighbours.phrase()
        )));
    }
    let available = accountant.remaining_rho().ok_or_else(|| {
        AdaptiveError::InvalidParameter(
            "the adaptive-marginals mechanism needs a zCDP accountant with budget left".into(),
        )
    })?;
    let d = domain.dims();
    let Schedule {
        rounds,
        total,
        mut step,
    } = Schedule::new(available, config.rounds, d)?;
    let mut spent: Option<Rho> = None;
    let sizes: Vec<usize> = domain.attributes().iter().map(|a| a.size()).collect();
    let neighbours = config.neighbours;
    let candidates = workload.candidates();
    let mut truth: Vec<Option<Vec<u64>>> = vec![None; candidates.len()];
    let l1 = neighbours.histogram_l1() as f64;
    let gauss_sigma = |rho: Rho| -> Result<(DiscreteGaussian, f64), AdaptiveError> {
        let mech = DiscreteGaussian::histogram(neighbours, rho)?;
        let sigma = mech.sigma_squared().to_f64().sqrt();
        Ok((mech, sigma))
    };

    // Round 0: every one-way marginal, a large attribute's at a larger ρ.
    let mut measurements = Vec::new();
    let round0 = one_way_rhos(step.measure, &sizes, rounds)?;
    debug_assert_eq!(
        round0,
        Schedule::new(available, config.rounds, d)?.one_way_rhos(&sizes)?
    );
    for (a, &rho_a) in round0.iter().enumerate() {
        let (mech, sigma) = gauss_sigma(rho_a)?;
        let counts = records.marginal(&[a], domain)?;
        let noisy = mech.release(&counts[..], accountant, rng)?;
        spent = Some(add(spent, rho_a)?);
        measurements.push(Measurement::new(
            Clique::new([a])?,
            noisy.into_iter().map(|v| v as f64).collect(),
            sigma,
        )?);
    }
    // MST's compression (post-processing of the noisy one-way marginals): the rest
    // of the run measures the compressed values.
    let compression = if config.compress {
        let threshold: Vec<f64> = measurements
            .iter()
            .map(|m| COMPRESS_SIGMAS * m.sigma)
            .collect();
        let noisy: Vec<Vec<f64>> = measurements.iter().map(|m| m.values.clone()).collect();
        let c = Compression::from_noisy(&noisy, &threshold);
        if c.is_identity() {
            None
        } else {
            estimator.compressed(&c).map(|e| (c, e))
        }
    } else {
        None
    };
    // The one-way marginals as measured, for the output (the fit uses their
    // compressed sums).
    let one_ways = compression.as_ref().map(|_| measurements.clone());
    let compressed_data;
    let (records, domain, estimator) = match &compression {
        Some((c, e)) => {
            compressed_data = c.records(records, domain)?;
            measurements = measurements
                .iter()
                .map(|m| c.one_way(m))
                .collect::<Result<_, _>>()?;
            (&compressed_data.0, &compressed_data.1, e)
        }
        None => (records, domain, estimator),
    };
    let sizes: Vec<usize> = domain.attributes().iter().map(|a| a.size()).collect();
    // Public coarsenings of the large attributes (post-processing of the noisy
    // one-way marginals): a candidate holding one can also be measured coarsened.
    let coarse: Vec<Option<(Vec<u32>, usize)>> = {
        let noisy: Vec<Vec<f64>> = match coarse_from {
            CoarseFrom::Noisy => measurements.iter().map(|m| m.values.clone()).collect(),
            #[cfg(test)]
            CoarseFrom::Truth => (0..d)
                .map(|a| {
                    let y = records.marginal(&[a], domain)?;
                    Ok(y.into_iter().map(|v| v as f64).collect())
                })
                .collect::<Result<_, AdaptiveError>>()?,
        };
        let merged: Vec<bool> = (0..d)
            .map(|a| {
                compression
                    .as_ref()
                    .is_some_and(|(c, _)| c.value_map(a).is_some())
            })
            .collect();
        let maps = coarse_maps(&noisy, &merged, COARSE_ABOVE, COARSE_GROUPS);
        candidates
            .iter()
            .map(|(r, _)| candidate_groups(r, &sizes, &maps, config.max_model_cells))
            .collect()
    };
    // The time budget's clock runs only around work on the model (fits, the
    // model's marginals, the size filter): see the `time_budget` module.
    let mut clock = FitClock::new(config.time_budget);
    let started = clock.start_round();
    let mut model = clock.time(|| estimator.fit(&measurements, None))?;
    clock.end_round(started);
    let from_uniform =
        gauss_sigma(step.measure)?.1 >= ROUNDS_FROM_UNIFORM * estimator.total(&model);
    let mut log = Vec::new();
    let mut ended_by_time = false;
    let noise_norm = (2.0 / std::f64::consts::PI).sqrt();

    for round in 1..=4 * rounds {
        let remaining = match spent {
            None => Some(total),
            Some(s) => total.checked_sub(s)?,
        };
        let Some(remaining) = remaining else {
            break;
        };
        let spent_out = remaining < rho_scaled(step.cost()?, 2, 1)?;
        // The time budget (see the `time_budget` module): the last round when
        // time for one more is all that is left.
        let last = spent_out || clock.rounds_left().is_some_and(|k| k <= 1);
        ended_by_time = last && !spent_out;
        let started = clock.start_round();
        if last {
            step = Step::last(remaining)?;
        }
        let (mech, sigma) = gauss_sigma(step.measure)?;
        // The size filter reads only public quantities and the model.
        let used = 1.0 - remaining.to_f64() / total.to_f64();
        let limit = (config.max_model_cells as f64 * used) as u128;
        // So does the noise filter: a marginal whose expected noise, √(2/π)·σ·n_r,
        // exceeds twice the model's total cannot score above ≈ 0 (its error is at
        // most n + n̂), so it is left out unless nothing else is left.
        let noise_cap = 2.0 * estimator.total(&model).max(0.0) / (noise_norm * sigma);
        let fits = clock.time(|| {
            parallel::try_map(&candidates, |(r, _)| {
                Ok::<_, SynthError>(
                    estimator.covers(&model, r) || estimator.model_cells(&model, r)? <= limit,
                )
            })
        })?;
        let fitting: Vec<usize> = (0..candidates.len()).filter(|&i| fits[i]).collect();
        // The options: a candidate measured whole, or coarsened (when it holds a
        // coarsened attribute), each kept when its measured cells pass the noise
        // filter.
        let mut quiet: Vec<(usize, bool)> = Vec::new();
        for &i in &fitting {
            if (candidates[i].0.cells_u128(&sizes) as f64) <= noise_cap {
                quiet.push((i, false));
            }
            if let Some((_, g)) = &coarse[i]
                && (*g as f64) <= noise_cap
            {
                quiet.push((i, true));
            }
        }
        let chosen_from: Vec<(usize, bool)> = if quiet.is_empty() {
            fitting.iter().map(|&i| (i, false)).collect()
        } else {
            quiet
        };
        let measured = |i: usize, coarse_option: bool| -> Option<&(Vec<u32>, usize)> {
            coarse[i].as_ref().filter(|_| coarse_option)
        };
        // The candidates' true marginals, each counted once in the run (one pass over
        // the records per candidate, the missing ones in parallel), then their scores
        // in parallel: the rest of a round reads the model, not the records.
        let mut missing: Vec<usize> = chosen_from
            .iter()
            .map(|&(i, _)| i)
            .filter(|&i| truth[i].is_none())
            .collect();
        missing.dedup();
        let counted = parallel::try_map(&missing, |&i| {
            records.marginal(candidates[i].0.attributes(), domain)
        })?;
        for (i, y) in missing.into_iter().zip(counted) {
            truth[i] = Some(y);
        }
        // Each candidate's model marginal is computed once for its options (they
        // are adjacent in `chosen_from`).
        let runs: Vec<&[(usize, bool)]> = chosen_from.chunk_by(|a, b| a.0 == b.0).collect();
        let queries: Vec<&Clique> = runs.iter().map(|run| &candidates[run[0].0].0).collect();
        let estimates = clock.time(|| estimator.marginals(&model, &queries))?;
        let runs: Vec<_> = runs.into_iter().zip(estimates).collect();
        let scored = parallel::try_map(&runs, |(run, est)| {
            let (i, _) = run[0];
            let w = candidates[i].1;
            let y = truth[i].as_deref().unwrap_or_default();
            Ok::<_, AdaptiveError>(
                run.iter()
                    .map(|&(i, c)| match measured(i, c) {
                        None => score(w, y, est, noise_norm * sigma * y.len() as f64),
                        Some((g, n)) => score(
                            w,
                            &coarsen(g, *n, y),
                            &coarsen(g, *n, est),
                            noise_norm * sigma * *n as f64,
                        ),
                    })
                    .collect::<Vec<f64>>(),
            )
        })?;
        let scores: Vec<f64> = scored.into_iter().flatten().collect();
        let max_weight = chosen_from
            .iter()
            .map(|&(i, _)| candidates[i].1)
            .fold(1u64, u64::max);
        // The slack of 2⁻¹⁰ per unit weight covers the scores' one rounding each (at
        // most 2⁻¹³ per unit weight on each side, 2⁻¹² between neighbours), so
        // neighbours' scores differ by at most Δ.
        let sensitivity = max_weight as f64 * (l1 + SCORE_SLACK);
        let em = ExponentialMechanism::for_scores(neighbours, sensitivity, step.select)?;
        let (pick, pick_coarse) = chosen_from[em.release(&scores[..], accountant, rng)?];
        spent = Some(add(spent, Rho::from_bounded_range(step.select)?)?);
        let (clique, _) = &candidates[pick];
        let y = match &mut truth[pick] {
            Some(y) => y,
            slot => slot.insert(records.marginal(clique.attributes(), domain)?),
        };
        let grouping = measured(pick, pick_coarse);
        // A coarsened marginal is a histogram too: each record counts in exactly
        // one group, so its sensitivity is the marginal's.
        let y = match grouping {
            None => y.clone(),
            Some((g, n)) => coarsen(g, *n, y),
        };
        let noisy = mech.release(&y[..], accountant, rng)?;
        spent = Some(add(spent, step.measure)?);
        let noisy: Vec<f64> = noisy.into_iter().map(|v| v as f64).collect();
        measurements.push(match grouping {
            None => Measurement::new(clique.clone(), noisy, sigma)?,
            Some((g, _)) => Measurement::grouped(clique.clone(), noisy, sigma, g.clone())?,
        });
        let view = |m: Vec<f64>| match grouping {
            None => m,
            Some((g, n)) => coarsen(g, *n, &m),
        };
        let (before, fitted, after) = clock.time(|| {
            let before = estimator.marginal(&model, clique)?;
            let fitted = if from_uniform {
                estimator.fit_from_uniform(&measurements, &model)?
            } else {
                estimator.fit(&measurements, Some(&model))?
            };
            let after = estimator.marginal(&fitted, clique)?;
            Ok::<_, SynthError>((before, fitted, after))
        })?;
        clock.end_round(started);
        model = fitted;
        let (before, after) = (view(before), view(after));

        let moved: f64 = before.iter().zip(&after).map(|(a, b)| (a - b).abs()).sum();
        let annealed = !last && moved <= noise_norm * sigma * after.len() as f64;
        let entry = RoundLog {
            round,
            clique: clique.clone(),
            candidates: chosen_from.len(),
            sigma,
            epsilon: Some(step.select),
            rho: step.cost()?,
            spent: spent.unwrap_or(step.measure),
            annealed,
            coarsened: grouping.map(|&(_, n)| n),
        };
        if control(&entry).is_break() {
            return Err(AdaptiveError::Cancelled { round });
        }
        log.push(entry);
        if last {
            break;
        }
        if annealed {
            step = step.annealed()?;
        }
    }
    let left = clock.left();
    let model = clock.time(|| estimator.finish_within(&measurements, model, left))?;
    if let Some(one_ways) = one_ways {
        let d = one_ways.len();
        measurements.splice(..d, one_ways);
    }
    let (model, compression) = match compression {
        Some((c, e)) => (e.expand(model, &c)?, Some(c)),
        None => (model, None),
    };
    Ok(AdaptiveOutput {
        model,
        measurements,
        rounds: log,
        rounds_from_uniform: from_uniform,
        compression,
        fitting_time: clock.used(),
        ended_by_time,
    })
}

#[cfg(test)]
mod tests;

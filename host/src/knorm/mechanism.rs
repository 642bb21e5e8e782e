//! KM(F, ε), the K-norm mechanism (thesis Def 3.3.1, Fig. 3.2), on a
//! data-independent power-of-two grid.

use privq_core::Epsilon;
use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::sample::{DiscreteLaplace, bernoulli, uniform_below};

use super::KnormError;
use super::body::{Body, F_FRAC_BITS, Shape};
use super::sample::{gamma, hit_and_run};
use crate::accountant::{Cost, Receipt};
use crate::central::MechanismError;
use crate::contract::{Mechanism, Neighbours};

/// The snapping slack: the noise is calibrated for a K-norm sensitivity of
/// `Δ·(1 + 2⁻¹⁰)`, and the grid is chosen so that snapping costs at most `Δ·2⁻¹⁰`.
const SLACK_LOG2: i32 = 10;

/// How the uniform point `z ∈ K` is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampler {
    /// An exact sampler (only for the cross-polytope and the cube).
    Exact,
    /// Hit-and-run with this many steps from the centre: **approximate privacy**.
    HitAndRun {
        /// The number of hit-and-run steps per release.
        steps: usize,
    },
}

/// The K-norm mechanism `KM(F, ε)` for a histogram `x ∈ ℕᴺ` of counts: releases
/// `F·x` plus noise of density `∝ exp(−ε‖w‖_K/Δ′)`, `K = F·B₁ᴺ` (thesis Def 3.3.1,
/// Fig. 3.2, Remark 3.3.2), on a power-of-two grid γ.
///
/// **Grid and calibration.** γ = 2⁻ᵍ is the largest power of two with
/// `γ·Σᵢ‖eᵢ‖_K ≤ Δ·2⁻¹¹` (a function of F and the relation only; `Σᵢ‖eᵢ‖_K = d` on
/// the two exact bodies, d LPs otherwise, with a factor-2 margin for the LPs'
/// round-off). `F·x` is computed exactly in integers and snapped to the grid
/// (nearest, ties up): `y = F·x + e` with `|eᵢ| ≤ γ/2`. For neighbours
/// (`‖x − x′‖₁ ≤ Δ`, Δ = 1 for add/remove, 2 for replace),
/// `‖y − y′‖_K ≤ ‖F(x − x′)‖_K + ‖e − e′‖_K ≤ Δ + γ·Σᵢ‖eᵢ‖_K ≤ Δ′ = Δ(1 + 2⁻¹⁰)`.
/// With the exact samplers the noise is `k·γ`, `k` drawn exactly from the discrete
/// K-norm law `P(k) ∝ exp(−‖k‖_K·εγ/Δ′)` ([`KNorm::sample_steps`]), so the pmf
/// ratio of neighbours is at most `e^{ε‖y − y′‖_K/Δ′} ≤ e^ε` (the grid analogue of
/// thesis Thm 3.3.3), with no floating point.
///
/// **Privacy status.** See the [module docs](super): with [`Sampler::Exact`] the
/// release is exactly ε-DP; with [`Sampler::HitAndRun`] the noise `w = r·z`
/// (`r ∼ Gamma(d + 1, Δ′/ε)`, `z` from the walk) is sampled in floating point and
/// rounded to the grid, and the privacy is
/// **approximate** and unproven, and the label says so.
///
/// ```
/// use privq_host::accountant::Accountant;
/// use privq_host::contract::{Mechanism, Neighbours};
/// use privq_host::knorm::{Body, KNorm};
/// use privq_host::{Epsilon, seeded_rng};
///
/// // Three counts released with K = B₁³ (F = I): Laplace-like ℓ1 noise.
/// let mech = KNorm::new(Body::identity(3)?, Neighbours::AddRemove, Epsilon::new(1, 1)?)?;
/// let mut acct = Accountant::pure(Epsilon::new(2, 1)?);
/// let noisy = mech.release(&[40, 2, 7][..], &mut acct, &mut seeded_rng(7))?;
/// assert_eq!(noisy.len(), 3);
/// // Every released value is on the grid γ.
/// assert!(noisy.iter().all(|v| (v / mech.grid()).fract() == 0.0));
/// assert_eq!(acct.spent_epsilon(), Some(Epsilon::new(1, 1)?));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct KNorm {
    body: Body,
    neighbours: Neighbours,
    epsilon: Epsilon,
    sampler: Sampler,
    /// γ = 2^−grid_exp, `grid_exp ∈ [0, 32]`.
    grid_exp: u32,
    /// The Gamma scale `Δ′/ε` (hit-and-run and reports).
    theta: f64,
    /// The exact samplers' scale `t = Δ′/(εγ)` in grid steps, as a discrete Laplace
    /// law (its one-sided part is the geometric law with ratio `e^{−1/t}`).
    steps: DiscreteLaplace,
}

impl KNorm {
    /// KM with an exact uniform sampler: the body must be the cross-polytope or the
    /// cube ([`Shape`]); any other body is [`KnormError::NoExactSampler`].
    pub fn new(body: Body, neighbours: Neighbours, epsilon: Epsilon) -> Result<Self, KnormError> {
        if body.shape() == Shape::General {
            return Err(KnormError::NoExactSampler);
        }
        Self::build(body, neighbours, epsilon, Sampler::Exact)
    }

    /// KM on any body with a hit-and-run sampler of `steps` steps per release
    /// (thesis §3.7; chords by LP). **Approximate privacy**: see [`Sampler`].
    pub fn hit_and_run_approximate(
        body: Body,
        neighbours: Neighbours,
        epsilon: Epsilon,
        steps: usize,
    ) -> Result<Self, KnormError> {
        // A short walk stays near its start, the centre: outputs close to F·x are
        // then far likelier than the ideal mechanism makes them (a privacy loss of
        // about 5 at one step in two dimensions). No step count is certified; 4·d
        // is a floor against the grossest cases, not a guarantee.
        let min_steps = 4 * body.dim();
        if steps < min_steps {
            return Err(KnormError::InvalidParameter(format!(
                "hit-and-run needs at least 4·d = {min_steps} steps, got {steps}"
            )));
        }
        Self::build(body, neighbours, epsilon, Sampler::HitAndRun { steps })
    }

    fn build(
        body: Body,
        neighbours: Neighbours,
        epsilon: Epsilon,
        sampler: Sampler,
    ) -> Result<Self, KnormError> {
        let delta = neighbours.histogram_l1() as f64;
        let c = body.basis_gauge_sum()?;
        // Smallest g with c·2⁻ᵍ ≤ Δ·2⁻¹¹ (products by powers of two are exact).
        let target = delta * pow2(-(SLACK_LOG2 + 1));
        let grid_exp = (0..=F_FRAC_BITS)
            .find(|&g| c * pow2(-(g as i32)) <= target)
            .ok_or(KnormError::IllConditioned { basis_gauge_sum: c })?;
        let theta = delta * (1.0 + pow2(-SLACK_LOG2)) / epsilon.to_f64();
        // The largest radius the sampler can draw is (d + 1)·θ·(−ln 2⁻⁵³) < 37(d + 1)θ.
        // In grid steps it must stay below 2⁵², where f64 still resolves every
        // integer step: beyond, the noise's low bits (and then the i64 cast) would
        // let the exact answer through.
        let max_steps = 37.0 * (body.dim() as f64 + 1.0) * theta * pow2(grid_exp as i32);
        if max_steps.is_nan() || max_steps >= pow2(52) {
            return Err(KnormError::InvalidParameter(format!(
                "epsilon {epsilon} is too small: the noise would reach {max_steps:e} grid \
                 steps, beyond the 2^52 that floating point resolves"
            )));
        }
        let steps = step_scale(neighbours.histogram_l1(), grid_exp, epsilon)?;
        Ok(KNorm {
            body,
            neighbours,
            epsilon,
            sampler,
            grid_exp,
            theta,
            steps,
        })
    }

    /// The body.
    pub fn body(&self) -> &Body {
        &self.body
    }

    /// The sampler.
    pub fn sampler(&self) -> Sampler {
        self.sampler
    }

    /// The grid γ every released value is a multiple of.
    pub fn grid(&self) -> f64 {
        pow2(-(self.grid_exp as i32))
    }

    /// The Gamma scale `Δ′/ε` of the radius, `Δ′ = Δ(1 + 2⁻¹⁰)`.
    pub fn scale(&self) -> f64 {
        self.theta
    }

    /// The expected K-norm of the noise, `d·Δ′/ε` (`‖w‖_K ∼ Gamma(d, Δ′/ε)`, a
    /// consequence of thesis §3.3's sampler, Remark 3.3.2).
    pub fn expected_noise_gauge(&self) -> f64 {
        self.body.dim() as f64 * self.theta
    }

    /// One noise vector, in real units: for tests and experiments; releases go
    /// through [`Mechanism::release`]. With the exact samplers it is the grid noise
    /// `k·γ` ([`KNorm::sample_steps`]); with hit-and-run the continuous `w = r·z`,
    /// `r ∼ Gamma(d + 1, Δ′/ε)`, `z` from the walk, before rounding.
    pub fn sample_noise<R: Rng + ?Sized>(&self, rng: &mut R) -> Result<Vec<f64>, KnormError> {
        let d = self.body.dim();
        match self.sampler {
            Sampler::Exact => {
                let gamma = self.grid();
                Ok(self
                    .sample_steps(rng)?
                    .into_iter()
                    .map(|k| k as f64 * gamma)
                    .collect())
            }
            // Hit-and-run even on the two exact shapes (with their closed-form chords).
            Sampler::HitAndRun { steps } => {
                let z = hit_and_run(&self.body, steps, rng)?;
                let r = gamma(d + 1, self.theta, rng);
                Ok(z.iter().map(|zi| r * zi).collect())
            }
        }
    }

    /// The noise in grid steps. With the exact samplers it is drawn **exactly** from
    /// the discrete K-norm law `P(k) ∝ exp(−‖k‖_K/t)` on `ℤᵈ`, `t = Δ′/(εγ)` — the
    /// grid analogue of Fig. 3.2's density; since `y` is on the grid and
    /// `‖y − y′‖_K ≤ Δ′/γ` steps, it is exactly ε-DP, with no floating point:
    /// * cross-polytope (`‖·‖_K = ‖·‖₁`): d independent discrete Laplace draws of
    ///   scale t;
    /// * cube (`‖·‖_K = ‖·‖∞`): writing `q^m = Σ_{s ≥ m}(1 − q)q^s` (`q = e^{−1/t}`),
    ///   the law is a mixture over s of the uniform law on `{−s, …, s}ᵈ` with weights
    ///   `∝ (2s + 1)ᵈ qˢ`; s is drawn by rejection from a sum of d + 1 geometric
    ///   variables (negative binomial, weights `∝ C(s + d, d) qˢ`), accepted with
    ///   probability `Π_{i ≤ d} (2s + 1)/(2s + 2i)` ≤ 1 (rational: exact Bernoulli
    ///   draws), close to 1 when s ≫ d².
    ///
    /// With hit-and-run, the continuous sample rounded to the nearest step.
    pub fn sample_steps<R: Rng + ?Sized>(&self, rng: &mut R) -> Result<Vec<i64>, KnormError> {
        let d = self.body.dim();
        match (self.sampler, self.body.shape()) {
            (Sampler::Exact, Shape::CrossPolytope) => (0..d)
                .map(|_| self.steps.sample(rng).map_err(KnormError::Sampler))
                .collect(),
            (Sampler::Exact, Shape::Cube) => (0..CUBE_TRIES)
                .find_map(|_| self.cube_try(d, rng).transpose())
                .unwrap_or_else(|| {
                    Err(KnormError::InvalidParameter(format!(
                        "the cube sampler accepted nothing in {CUBE_TRIES} tries: epsilon is \
                         too large for this grid (the radius is almost always 0)"
                    )))
                }),
            (Sampler::Exact, Shape::General) => Err(KnormError::NoExactSampler),
            (Sampler::HitAndRun { .. }, _) => {
                let scale = pow2(self.grid_exp as i32);
                // |w|/γ < 2⁵² by construction (see `build`): the cast is exact.
                Ok(self
                    .sample_noise(rng)?
                    .into_iter()
                    .map(|w| (w * scale).round() as i64)
                    .collect())
            }
        }
    }

    /// One attempt of the cube sampler: a radius s from d + 1 geometric variables,
    /// accepted with probability `Π_{i ≤ d}(2s + 1)/(2s + 2i)`, then a uniform point
    /// of `{−s, …, s}ᵈ`; `None` when rejected.
    fn cube_try<R: Rng + ?Sized>(
        &self,
        d: usize,
        rng: &mut R,
    ) -> Result<Option<Vec<i64>>, KnormError> {
        let mut s = 0u64;
        for _ in 0..=d {
            s = s
                .checked_add(self.geometric(rng)?)
                .ok_or(KnormError::Sampler(privq_core::Error::Overflow))?;
        }
        let two_s = s
            .checked_mul(2)
            .filter(|v| *v < 1 << 62)
            .ok_or_else(|| KnormError::InvalidParameter("the noise radius overflowed".into()))?;
        for i in 1..=d as u64 {
            if !bernoulli(two_s + 1, two_s + 2 * i, rng).map_err(KnormError::Sampler)? {
                return Ok(None);
            }
        }
        (0..d)
            .map(|_| {
                uniform_below(two_s + 1, rng)
                    .map(|u| u as i64 - s as i64)
                    .map_err(KnormError::Sampler)
            })
            .collect::<Result<Vec<i64>, KnormError>>()
            .map(Some)
    }

    /// `P(g) = (1 − q)qᵍ`, `g ≥ 0`, `q = e^{−1/t}`: a discrete Laplace draw
    /// conditioned on being non-negative (rejection, acceptance above 1/2).
    fn geometric<R: Rng + ?Sized>(&self, rng: &mut R) -> Result<u64, KnormError> {
        loop {
            let x = self.steps.sample(rng).map_err(KnormError::Sampler)?;
            if x >= 0 {
                return Ok(x as u64);
            }
        }
    }

    /// The snapped answer `y`, in grid steps (`y·γ` is `F·x` rounded to nearest, ties
    /// up), computed exactly.
    pub(crate) fn snapped_answer(&self, counts: &[u64]) -> Vec<i128> {
        let shift = F_FRAC_BITS - self.grid_exp;
        let half = if shift == 0 { 0 } else { 1i128 << (shift - 1) };
        self.body
            .answer_fixed(counts)
            .into_iter()
            .map(|a| a.wrapping_add(half) >> shift)
            .collect()
    }
}

/// Attempts of the cube sampler before it gives up (a data-independent error: the
/// acceptance rate depends on ε and the grid only, and is near 1 unless ε is huge).
const CUBE_TRIES: u32 = 1_000_000;

/// `t = Δ′/(εγ)` grid steps as an exact rational: `Δ′ = Δ(1 + 2⁻¹⁰)`, `γ = 2^−g`,
/// `ε = p/q`, so `t = Δ·1025·2^g·q / (1024·p)`.
fn step_scale(delta: u64, grid_exp: u32, epsilon: Epsilon) -> Result<DiscreteLaplace, KnormError> {
    let slack = SLACK_LOG2 as u32;
    let (up, down) = if grid_exp >= slack {
        (grid_exp - slack, 0)
    } else {
        (0, slack - grid_exp)
    };
    let num =
        u128::from(delta) * ((1u128 << slack) + 1) * (1u128 << up) * u128::from(epsilon.den());
    let den = (1u128 << down) * u128::from(epsilon.num());
    let g = gcd(num, den);
    match (u64::try_from(num / g), u64::try_from(den / g)) {
        (Ok(n), Ok(d)) => DiscreteLaplace::new(n, d).map_err(KnormError::Sampler),
        _ => Err(KnormError::InvalidParameter(format!(
            "epsilon {epsilon}: the noise scale in grid steps does not fit 64 bits; \
             use a simpler fraction for epsilon"
        ))),
    }
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

/// 2^k as an f64, built from its bits (exact), for |k| ≤ 1000.
fn pow2(k: i32) -> f64 {
    f64::from_bits(((1023 + k.clamp(-1000, 1000)) as u64) << 52)
}

impl Mechanism for KNorm {
    type Input = [u64];
    type Output = Vec<f64>;

    fn neighbours(&self) -> Neighbours {
        self.neighbours
    }

    /// Pure ε with an exact sampler; [`Cost::Uncertified`] with hit-and-run, whose
    /// finite walk is not uniform, so only an accountant that opted in accepts it.
    fn cost(&self) -> Cost {
        match self.sampler {
            Sampler::Exact => Cost::Pure(self.epsilon),
            Sampler::HitAndRun { .. } => Cost::Uncertified(self.epsilon),
        }
    }

    fn label(&self) -> String {
        let shape = match self.body.shape() {
            Shape::CrossPolytope => "cross-polytope",
            Shape::Cube => "cube",
            Shape::General => "general body",
        };
        let (d, n) = (self.body.dim(), self.body.columns());
        match self.sampler {
            Sampler::Exact => format!("K-norm (d = {d}, N = {n}, {shape}, exact sampler)"),
            Sampler::HitAndRun { steps } => format!(
                "K-norm (d = {d}, N = {n}, {shape}, hit-and-run {steps} steps: \
                 APPROXIMATE privacy)"
            ),
        }
    }

    fn check_input(&self, counts: &[u64]) -> Result<(), MechanismError> {
        if counts.len() != self.body.columns() {
            return Err(MechanismError::DimensionMismatch {
                expected: self.body.columns(),
                got: counts.len(),
            });
        }
        Ok(())
    }

    fn release_paid<R: Rng + CryptoRng + ?Sized>(
        &self,
        counts: &[u64],
        receipt: Receipt,
        rng: &mut R,
    ) -> Result<Vec<f64>, MechanismError> {
        receipt.check_covers(&self.cost(), self.neighbours())?;
        self.check_input(counts)?;
        Ok(self.release_on_grid(counts, rng)?)
    }
}

impl KNorm {
    /// The release `y + round_γ(r·z)` itself, for a caller that has already checked
    /// a receipt covering [`Mechanism::cost`] (this mechanism's, or a composite's
    /// that includes it, like NiKM's levels) and the input's length.
    pub(crate) fn release_on_grid<R: Rng + ?Sized>(
        &self,
        counts: &[u64],
        rng: &mut R,
    ) -> Result<Vec<f64>, KnormError> {
        // The noise first: it never sees the data (an error here is data-independent).
        let noise = self.sample_steps(rng)?;
        let gamma = self.grid();
        Ok(self
            .snapped_answer(counts)
            .into_iter()
            .zip(noise)
            .map(|(y, k)| y.saturating_add(i128::from(k)) as f64 * gamma)
            .collect())
    }
}

//! Theorem 3.2: the offline ℓ1 synopsis. For every coordinate, the 1-D learner of
//! Figure 1 runs inside a sparse-vector loop over the fixed grid
//! `T = {0, τ, 2τ, …, w_i}` with `τ = α/(2ℓ)` (privq's reading, `docs/src/distance.md`:
//! offline the queries are 1-D, so each coordinate runs its own loop and the budget
//! is split over all of them). Both `F̂^{(i)}` and `F^{(i)}` are 1-Lipschitz, so grid accuracy gives
//! accuracy `α` for **every** ℓ1 query. The released [`Synopsis`] is the ℓ sets of
//! tangent lines (serde, JSON save/load) and answers any query without the data.

use std::path::Path;

use privq_core::rand_core::{CryptoRng, Rng};
use serde::{Deserialize, Serialize};

use crate::accountant::Accountant;

use super::columns::{BoxDomain, Columns};
use super::learner::{DecomposedLearner, Learner1d};
use super::privacy::{AboveThreshold, Noise, Plan, Privacy, fraction, smallest_feasible};
use super::{DistanceError, SynopsisError, check_range};

/// Synopsis file format version.
pub const SYNOPSIS_VERSION: u32 = 1;

/// Options of the offline release.
#[derive(Debug, Clone, PartialEq)]
pub struct OfflineConfig {
    /// The privacy target.
    pub privacy: Privacy,
    /// Target accuracy α (scaled units); `None` calibrates the smallest α the noise
    /// supports at this n (see [`OfflineConfig::calibrate`]).
    pub alpha: Option<f64>,
    /// Failure probability β used by the calibration.
    pub beta: f64,
    noise: bool,
}

impl OfflineConfig {
    /// Calibrated α, β = 0.05.
    pub fn new(privacy: Privacy) -> Self {
        OfflineConfig {
            privacy,
            alpha: None,
            beta: 0.05,
            noise: true,
        }
    }

    /// A fixed target α.
    pub fn with_alpha(mut self, alpha: f64) -> Self {
        self.alpha = Some(alpha);
        self
    }

    /// Test-only profile: every noise draw is skipped (not private!).
    #[cfg(test)]
    pub(crate) fn without_noise(mut self) -> Self {
        self.noise = false;
        self
    }

    /// The parameters for `n` points with scaled widths `widths`.
    pub fn calibrate(&self, n: usize, widths: &[f64]) -> Result<OfflineParams, DistanceError> {
        if n == 0 {
            return Err(DistanceError::EmptyData);
        }
        check_range("beta", self.beta, 0.5)?;
        let dim = widths.len();
        let at = |alpha: f64| OfflineParams::at(alpha, dim, widths, self.privacy);
        let feasible = |alpha: f64| {
            at(alpha).is_ok_and(|p| {
                let eps0 = p.plan.per_step().to_f64();
                let draws = (p.grid_points + 2 * p.plan.steps()) as f64;
                let l = (draws / self.beta).ln();
                let wmax = widths.iter().copied().fold(0.0, f64::max);
                // SVT noise ≤ τ/4 and value/slope noise effect ≤ τ/8 w.p. 1 − β.
                let tau = p.tau;
                6.0 * wmax * l / (n as f64 * eps0) <= tau / 4.0
                    && 3.0 * wmax * l / (n as f64 * eps0) <= tau / 8.0
            })
        };
        match self.alpha {
            Some(a) => at(check_range("alpha", a, 1.0)?),
            None => at(smallest_feasible(1e-6, feasible).unwrap_or(1.0)),
        }
    }
}

/// The derived parameters of an offline release.
#[derive(Debug, Clone, PartialEq)]
pub struct OfflineParams {
    /// Target accuracy α.
    pub alpha: f64,
    /// Per-coordinate tolerance and grid step τ = α/(2ℓ).
    pub tau: f64,
    /// Update rounds allowed per coordinate.
    pub rounds: Vec<usize>,
    /// Grid points in total.
    pub grid_points: usize,
    /// The budget split (2 sub-mechanisms per round).
    pub plan: Plan,
}

impl OfflineParams {
    fn at(alpha: f64, dim: usize, widths: &[f64], privacy: Privacy) -> Result<Self, DistanceError> {
        let tau = alpha / (2.0 * dim as f64);
        // Learning to τ/2 with a τ/8-noisy oracle: the exact-oracle bound at τ/16.
        let rounds: Vec<usize> = widths
            .iter()
            .map(|&w| Learner1d::mistake_bound_on(w, tau / 16.0).ceil() as usize)
            .collect();
        let grid_points = widths.iter().map(|&w| (w / tau).ceil() as usize + 1).sum();
        let plan = Plan::new(privacy, 2 * rounds.iter().sum::<usize>())?;
        Ok(OfflineParams {
            alpha,
            tau,
            rounds,
            grid_points,
            plan,
        })
    }
}

/// The privacy spent by a release, as recorded in the synopsis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    /// Exact sum of the per-step ε₀ charged (a fraction string).
    pub ledger_epsilon: String,
    /// Number of ε₀ charges.
    pub charges: usize,
    /// The composed guarantee's ε.
    pub epsilon: f64,
    /// The composed guarantee's δ.
    pub delta: f64,
}

/// A released ℓ1 distance-query synopsis.
///
/// ```
/// use privq_host::accountant::Accountant;
/// use privq_host::distance::{BoxDomain, offline::{OfflineConfig, Synopsis}, privacy::Privacy};
/// use privq_host::{Epsilon, seeded_rng};
/// let domain = BoxDomain::unit_cube(1)?;
/// let points: Vec<Vec<f64>> = (0..10_000).map(|i| vec![(i % 100) as f64 / 100.0]).collect();
/// let config = OfflineConfig::new(Privacy::pure(Epsilon::new(1, 1)?));
/// let mut accountant = Accountant::pure(Epsilon::new(2, 1)?);
/// let s = Synopsis::release(&domain, &points, &config, &mut accountant, &mut seeded_rng(3))?;
/// assert_eq!(accountant.remaining(), Some(Epsilon::new(1, 1)?)); // charged ε = 1 up front
/// let json = s.to_json()?;
/// let back = Synopsis::from_json(&json)?;
/// assert_eq!(back.answer(&[0.5])?, s.answer(&[0.5])?);
/// assert!(s.spent().epsilon <= 1.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Synopsis {
    version: u32,
    domain: BoxDomain,
    n: usize,
    alpha: f64,
    spent: Spent,
    complete: Vec<bool>,
    learner: DecomposedLearner,
}

impl Synopsis {
    /// Runs the offline mechanism on `points` (every point must lie in `domain`).
    /// The release's whole budget is charged to `accountant` before any noise is
    /// drawn.
    pub fn release<P: AsRef<[f64]>, R: Rng + CryptoRng + ?Sized>(
        domain: &BoxDomain,
        points: &[P],
        config: &OfflineConfig,
        accountant: &mut Accountant,
        rng: &mut R,
    ) -> Result<Self, DistanceError> {
        let cols = Columns::new(domain, points)?;
        Self::release_columns(&cols, config, accountant, rng)
    }

    /// [`Synopsis::release`] on already-built columns.
    pub fn release_columns<R: Rng + CryptoRng + ?Sized>(
        cols: &Columns,
        config: &OfflineConfig,
        accountant: &mut Accountant,
        rng: &mut R,
    ) -> Result<Self, DistanceError> {
        let widths = cols.widths().to_vec();
        let params = config.calibrate(cols.len(), &widths)?;
        super::privacy::charge_release(
            accountant,
            "offline distance synopsis",
            params.plan.privacy(),
        )?;
        let n = cols.len() as f64;
        let eps0 = params.plan.per_step();
        let mut filter = params.plan.filter()?;
        let mut coords = Vec::with_capacity(widths.len());
        let mut complete = Vec::with_capacity(widths.len());
        let (tau, on) = (params.tau, config.noise);
        for (i, (&w, &m)) in widths.iter().zip(&params.rounds).enumerate() {
            let value_noise = Noise::new(w / n, 1, fraction(eps0, 1, 3)?, on)?;
            let slope_noise = Noise::new(2.0 / n, 1, fraction(eps0, 2, 3)?, on)?;
            let mut learner = Learner1d::new(w);
            let mut at: Option<AboveThreshold> = None;
            let mut used = 0;
            let steps = (w / tau).ceil() as usize;
            let mut done = true;
            for k in 0..=steps {
                let t = (k as f64 * tau).min(w);
                if at.is_none() {
                    if used == m {
                        done = false;
                        break;
                    }
                    filter.charge(
                        &format!("coordinate {i}: sparse vector {}", used + 1),
                        eps0.into(),
                    )?;
                    at = Some(AboveThreshold::start(tau / 2.0, w / n, eps0, on, rng)?);
                }
                let err = (cols.value(i, t) - learner.predict(t)).abs();
                if at
                    .as_ref()
                    .is_some_and(|a| a.above(err, rng).unwrap_or(true))
                {
                    filter.charge(&format!("coordinate {i}: update {}", used + 1), eps0.into())?;
                    let v = value_noise.release(cols.value(i, t), rng)?;
                    let s = slope_noise.release(cols.slope(i, t), rng)?;
                    learner.update(t, v, s);
                    used += 1;
                    at = None;
                }
            }
            coords.push(learner);
            complete.push(done);
        }
        let charges = filter.ledger().len();
        let guarantee = params.plan.guarantee(charges)?;
        Ok(Synopsis {
            version: SYNOPSIS_VERSION,
            domain: cols.domain().clone(),
            n: cols.len(),
            alpha: params.alpha,
            spent: Spent {
                ledger_epsilon: filter
                    .spent_epsilon()
                    .map_or_else(|| "0".into(), |e| e.to_string()),
                charges,
                epsilon: guarantee.epsilon,
                delta: guarantee.delta,
            },
            complete,
            learner: DecomposedLearner::from_coordinates(coords),
        })
    }

    /// The scaled answer (average ℓ1 distance / diameter) to a query in the domain.
    pub fn answer(&self, y: &[f64]) -> Result<f64, DistanceError> {
        Ok(self.learner.predict(&self.domain.scale(y)?))
    }

    /// The answer in the domain's original units (× the ℓ1 diameter).
    pub fn answer_unscaled(&self, y: &[f64]) -> Result<f64, DistanceError> {
        Ok(self.answer(y)? * self.domain.diameter())
    }

    /// The privacy spent.
    pub fn spent(&self) -> &Spent {
        &self.spent
    }

    /// The accuracy target α the release was calibrated for.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The domain.
    pub fn domain(&self) -> &BoxDomain {
        &self.domain
    }

    /// The number of points (public in this model).
    pub fn n(&self) -> usize {
        self.n
    }

    /// Per coordinate: false when the update budget ran out before the grid's end
    /// (the accuracy guarantee then does not hold on that coordinate).
    pub fn complete(&self) -> &[bool] {
        &self.complete
    }

    /// The learned hypothesis.
    pub fn learner(&self) -> &DecomposedLearner {
        &self.learner
    }

    /// JSON text.
    pub fn to_json(&self) -> Result<String, DistanceError> {
        serde_json::to_string_pretty(self)
            .map_err(|e| DistanceError::Synopsis(SynopsisError::Json(e)))
    }

    /// Parses and validates JSON text.
    pub fn from_json(text: &str) -> Result<Self, DistanceError> {
        let s: Synopsis = serde_json::from_str(text)
            .map_err(|e| DistanceError::Synopsis(SynopsisError::Json(e)))?;
        if s.version != SYNOPSIS_VERSION {
            return Err(DistanceError::Synopsis(SynopsisError::Version {
                found: s.version,
                expected: SYNOPSIS_VERSION,
            }));
        }
        BoxDomain::new(s.domain.lo().to_vec(), s.domain.hi().to_vec())?;
        if s.learner.coordinates().len() != s.domain.dim() || s.complete.len() != s.domain.dim() {
            return Err(DistanceError::Synopsis(SynopsisError::Inconsistent));
        }
        Ok(s)
    }

    /// Writes the synopsis as JSON.
    pub fn save(&self, path: &Path) -> Result<(), DistanceError> {
        std::fs::write(path, self.to_json()?)
            .map_err(|e| DistanceError::Synopsis(SynopsisError::Io(e)))
    }

    /// Reads a synopsis written by [`Synopsis::save`].
    pub fn load(path: &Path) -> Result<Self, DistanceError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| DistanceError::Synopsis(SynopsisError::Io(e)))?;
        Self::from_json(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded_rng;
    use privq_core::Epsilon;

    /// A generous accountant for tests that are not about the budget.
    fn acct() -> Accountant {
        Accountant::pure(Epsilon::new(1000, 1).unwrap())
    }

    fn random_points(n: usize, dim: usize, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = seeded_rng(seed);
        (0..n)
            .map(|_| {
                (0..dim)
                    .map(|_| {
                        // A skewed distribution: the square of a uniform.
                        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                        u * u
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn noise_off_synopsis_answers_every_query_within_alpha() {
        for (dim, alpha) in [(1, 0.05), (3, 0.1), (8, 0.2)] {
            let domain = BoxDomain::unit_cube(dim).unwrap();
            let pts = random_points(500, dim, dim as u64);
            let cols = Columns::new(&domain, &pts).unwrap();
            let config = OfflineConfig::new(Privacy::pure(Epsilon::new(1, 1).unwrap()))
                .with_alpha(alpha)
                .without_noise();
            let s =
                Synopsis::release_columns(&cols, &config, &mut acct(), &mut seeded_rng(1)).unwrap();
            assert!(s.complete().iter().all(|&c| c));
            let queries = random_points(2000, dim, 99);
            let worst = queries
                .iter()
                .map(|q| (s.answer(q).unwrap() - cols.answer(q).unwrap()).abs())
                .fold(0.0, f64::max);
            assert!(worst <= alpha, "dim {dim}: max error {worst} > {alpha}");
        }
    }

    #[test]
    fn ledger_shows_the_budget_and_round_trips() {
        let domain = BoxDomain::unit_cube(2).unwrap();
        let pts = random_points(20_000, 2, 5);
        let eps = Epsilon::new(1, 2).unwrap();
        let config = OfflineConfig::new(Privacy::pure(eps));
        let s = Synopsis::release(&domain, &pts, &config, &mut acct(), &mut seeded_rng(2)).unwrap();
        // Pure ε: the exact ledger sum never exceeds ε and the composed ε equals it.
        let spent: Epsilon = s.spent().ledger_epsilon.parse().unwrap();
        assert!(spent <= eps);
        assert!((s.spent().epsilon - spent.to_f64()).abs() < 1e-15);
        assert_eq!(s.spent().delta, 0.0);
        let back = Synopsis::from_json(&s.to_json().unwrap()).unwrap();
        for q in random_points(50, 2, 8) {
            assert!((back.answer(&q).unwrap() - s.answer(&q).unwrap()).abs() < 1e-12);
        }
        assert!(Synopsis::from_json("{}").is_err());
        assert!(s.answer(&[2.0, 0.0]).is_err());
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        let domain = BoxDomain::unit_cube(2).unwrap();
        let config = OfflineConfig::new(Privacy::pure(Epsilon::new(1, 1).unwrap()));
        let empty: Vec<Vec<f64>> = Vec::new();
        let mut rng = seeded_rng(0);
        assert!(matches!(
            Synopsis::release(&domain, &empty, &config, &mut acct(), &mut rng).unwrap_err(),
            DistanceError::EmptyData
        ));
        // A record outside the box is clamped, not refused (the refusal would reveal it).
        assert!(
            Synopsis::release(&domain, &[vec![0.5, 1.5]], &config, &mut acct(), &mut rng).is_ok()
        );
        assert!(matches!(
            Synopsis::release(&domain, &[vec![0.5]], &config, &mut acct(), &mut rng),
            Err(DistanceError::DimensionMismatch { .. })
        ));
        let bad_alpha = config.clone().with_alpha(0.0);
        assert!(
            Synopsis::release(
                &domain,
                &[vec![0.5, 0.5]],
                &bad_alpha,
                &mut acct(),
                &mut rng
            )
            .is_err()
        );
    }
}

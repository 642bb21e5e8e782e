//! The exponential mechanism over a finite range, sampled exactly.

use privq_core::Epsilon;
use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::sample::{bernoulli_exp, uniform_below};

use super::error::MechanismError;
use crate::accountant::{Cost, Receipt};
use crate::contract::{Mechanism, Neighbours};

/// How the exponential mechanism draws its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sampling {
    /// Exactly `P(r) ∝ exp(ε·s̃_r/(2Δ̃))` by rejection: propose `r` uniformly, accept
    /// with the exact Bernoulli(`exp(−ε(s̃* − s̃_r)/(2Δ̃))`). At most `k` proposals in
    /// expectation.
    #[default]
    Exact,
    /// Permute-and-flip (McKenna & Sheldon 2020): visit the items in a uniformly
    /// random order and stop at the first one whose exact Bernoulli succeeds. Also
    /// ε-DP, and never worse in expected utility than [`Sampling::Exact`].
    PermuteAndFlip,
}

/// The exponential mechanism parameterized by its privacy budget (Hardt's thesis
/// §2.5, Definition 2.5.1 and Lemma 2.5.2, with privq's correction TYPO-2 in
/// `docs/src/corrections.md`): for scores of sensitivity Δ it selects item `r` with probability
/// `∝ exp(ε·s_r/(2Δ))`, which is ε-DP for **any** score function.
///
/// Scores are floats (they come from optimisation state), so before any random
/// decision they are snapped down to a power-of-two grid γ chosen from the public
/// (ε, Δ) alone: `s̃ = ⌊s/γ⌋` in grid units, and the sensitivity becomes
/// `Δ̃ = ⌈Δ/γ⌉` units. Flooring is monotone and commutes with shifts by γ, so
/// scores that differ by ≤ Δ differ by ≤ Δ̃ units, and every probability is then an
/// exact `exp(−p/q)` drawn with the core's integer sampler.
///
/// `neighbours()` is the relation the score sensitivity Δ is stated for; `cost()`
/// is ε with ε-bounded range (pure ε for permute-and-flip). The input of a release is the vector of scores `s_r(D)`, one per
/// candidate; the output is the index of the chosen candidate.
///
/// ```
/// use privq_host::accountant::Accountant;
/// use privq_host::contract::{Mechanism, Neighbours};
/// use privq_host::central::ExponentialMechanism;
/// use privq_host::{Epsilon, seeded_rng};
/// // Scores that are counts: sensitivity 1.
/// let em = ExponentialMechanism::counts(Neighbours::AddRemove, Epsilon::new(1, 1)?)?;
/// let scores = [0.0, 10.0, 50.0, 2.0];
/// let mut acct = Accountant::pure(Epsilon::new(1, 1)?);
/// let pick = em.release(&scores[..], &mut acct, &mut seeded_rng(3))?; // fixed seed: tests only
/// assert!(pick < 4);
/// let p = em.probabilities(&scores)?;
/// assert!(p[2] > 0.99);
/// assert!(em.release(&scores[..], &mut acct, &mut seeded_rng(4)).is_err()); // budget spent
/// # Ok::<(), privq_host::central::MechanismError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ExponentialMechanism {
    neighbours: Neighbours,
    epsilon: Epsilon,
    sensitivity: f64,
    grid_exp: i32,
    sensitivity_units: u64,
    sampling: Sampling,
}

impl ExponentialMechanism {
    /// Scores of sensitivity Δ > 0 under `neighbours` (derived by the caller from the
    /// relation), budget ε, exact sampling.
    pub fn for_scores(
        neighbours: Neighbours,
        sensitivity: f64,
        epsilon: Epsilon,
    ) -> Result<Self, MechanismError> {
        Ok(ExponentialMechanism {
            neighbours,
            ..Self::new(epsilon, sensitivity)?
        })
    }

    /// Scores that are counting queries (`s_r = Σ f_r(x)`, `f_r ∈ [0, 1]`):
    /// Δ = `neighbours.count_l1()`.
    pub fn counts(neighbours: Neighbours, epsilon: Epsilon) -> Result<Self, MechanismError> {
        Self::for_scores(neighbours, neighbours.count_l1() as f64, epsilon)
    }

    /// The raw form: budget ε and score sensitivity Δ > 0 as the caller states it,
    /// for composite mechanisms that charge their own accountant; `neighbours()`
    /// reports add/remove (nothing about n is assumed public).
    pub fn new(epsilon: Epsilon, sensitivity: f64) -> Result<Self, MechanismError> {
        if !sensitivity.is_finite() || sensitivity <= 0.0 {
            return Err(MechanismError::InvalidParameter(format!(
                "the score sensitivity must be positive and finite, got {sensitivity}"
            )));
        }
        // About 2^20 grid steps per unit of sensitivity, fewer if ε's denominator is
        // so large that 2·den·Δ̃ would not fit in u64. Depends only on public values.
        let mut grid_exp = sensitivity.log2().floor() as i32 - 20;
        loop {
            if let Some(em) = Self::on_grid(epsilon, sensitivity, grid_exp) {
                return Ok(em);
            }
            grid_exp += 1;
            if grid_exp > 1000 {
                return Err(MechanismError::Core(privq_core::Error::Overflow));
            }
        }
    }

    /// On the grid γ = 2^`grid_exp` (`|grid_exp| ≤ 1000`), or `None` when
    /// `Δ̃ = ⌈Δ/γ⌉` is 0 or `2·den(ε)·Δ̃` does not fit in u64.
    pub(crate) fn on_grid(epsilon: Epsilon, sensitivity: f64, grid_exp: i32) -> Option<Self> {
        if !(sensitivity.is_finite() && sensitivity > 0.0 && (-1000..=1000).contains(&grid_exp)) {
            return None;
        }
        let units = (sensitivity * (-grid_exp as f64).exp2()).ceil();
        let q = 2.0 * epsilon.den() as f64 * units;
        (q < 9.0e18 && units >= 1.0).then_some(ExponentialMechanism {
            neighbours: Neighbours::AddRemove,
            epsilon,
            sensitivity,
            grid_exp,
            sensitivity_units: units as u64,
            sampling: Sampling::Exact,
        })
    }

    /// `k` with grid γ = 2^k.
    pub(crate) fn grid_exp(&self) -> i32 {
        self.grid_exp
    }

    /// Δ̃ = ⌈Δ/γ⌉, the sensitivity in grid units.
    #[cfg(test)]
    pub(crate) fn sensitivity_units(&self) -> u64 {
        self.sensitivity_units
    }

    /// The same mechanism with another sampling method.
    pub fn with_sampling(mut self, sampling: Sampling) -> Self {
        self.sampling = sampling;
        self
    }

    /// The budget ε.
    pub fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    /// The inverse temperature `λ = ε/(2Δ̃γ)` actually used (≤ ε/(2Δ)).
    pub fn lambda(&self) -> f64 {
        let gamma = (self.grid_exp as f64).exp2();
        self.epsilon.to_f64() / (2.0 * self.sensitivity_units as f64 * gamma)
    }

    /// The score sensitivity Δ.
    pub fn sensitivity(&self) -> f64 {
        self.sensitivity
    }

    pub(crate) fn quantize(&self, scores: &[f64]) -> Result<Vec<i128>, MechanismError> {
        if scores.is_empty() {
            return Err(MechanismError::InvalidParameter(
                "the exponential mechanism needs at least one candidate".into(),
            ));
        }
        let inv_gamma = (-self.grid_exp as f64).exp2();
        scores
            .iter()
            .map(|&s| {
                let q = (s * inv_gamma).floor();
                if !q.is_finite() || q.abs() >= 1.0e38 {
                    // The score is private: the message does not print it.
                    Err(MechanismError::InvalidParameter(
                        "a score is not finite or too large".into(),
                    ))
                } else {
                    Ok(q as i128)
                }
            })
            .collect()
    }

    /// The exact selection probabilities of the quantized mechanism (for tests and
    /// reports; computed in floating point).
    pub fn probabilities(&self, scores: &[f64]) -> Result<Vec<f64>, MechanismError> {
        let q = self.quantize(scores)?;
        let max = q.iter().copied().max().unwrap_or(0);
        let scale = self.epsilon.to_f64() / (2.0 * self.sensitivity_units as f64);
        let w: Vec<f64> = q
            .iter()
            .map(|&v| (-((max - v) as f64) * scale).exp())
            .collect();
        let z: f64 = w.iter().sum();
        Ok(w.into_iter().map(|v| v / z).collect())
    }

    /// Draws an index, uncharged (composite mechanisms charge their own accountant).
    pub(crate) fn select<R: Rng + CryptoRng + ?Sized>(
        &self,
        scores: &[f64],
        rng: &mut R,
    ) -> Result<usize, MechanismError> {
        let q = self.quantize(scores)?;
        self.select_quantized(&q, rng)
    }

    /// Draws an index from scores already on the grid (`⌊s/γ⌋` in grid units,
    /// computed exactly by the caller), uncharged.
    pub(crate) fn select_quantized<R: Rng + CryptoRng + ?Sized>(
        &self,
        q: &[i128],
        rng: &mut R,
    ) -> Result<usize, MechanismError> {
        if q.is_empty() || q.iter().any(|v| v.abs() >= 10i128.pow(38)) {
            return Err(MechanismError::InvalidParameter(
                "no candidate, or a score too large".into(),
            ));
        }
        let max = q.iter().copied().max().unwrap_or(0);
        let k = q.len() as u64;
        let accept = |i: usize, rng: &mut R| -> Result<bool, MechanismError> {
            let gap = (max - q[i]) as u128;
            self.accept(gap, rng)
        };
        match self.sampling {
            Sampling::Exact => loop {
                let i = uniform_below(k, rng)? as usize;
                if accept(i, rng)? {
                    return Ok(i);
                }
            },
            Sampling::PermuteAndFlip => {
                let mut order: Vec<usize> = (0..q.len()).collect();
                for i in (1..order.len()).rev() {
                    let j = uniform_below(i as u64 + 1, rng)? as usize;
                    order.swap(i, j);
                }
                for &i in &order {
                    if accept(i, rng)? {
                        return Ok(i);
                    }
                }
                // The maximum has gap 0 and is always accepted.
                Err(MechanismError::InvalidParameter(
                    "permute-and-flip found no candidate".into(),
                ))
            }
        }
    }

    /// Bernoulli(exp(−ε·gap/(2Δ̃))) exactly: ε = a/b, so the exponent is
    /// `a·gap / (2·b·Δ̃)`; a numerator beyond u64 is split, using
    /// `exp(−(x+y)/q) = exp(−x/q)·exp(−y/q)`.
    fn accept<R: Rng + ?Sized>(&self, gap: u128, rng: &mut R) -> Result<bool, MechanismError> {
        if gap == 0 {
            return Ok(true);
        }
        let q = 2u128 * u128::from(self.epsilon.den()) * u128::from(self.sensitivity_units);
        let q = u64::try_from(q).map_err(|_| privq_core::Error::Overflow)?;
        let mut p = u128::from(self.epsilon.num()) * gap;
        while p > 0 {
            let chunk = p.min(u128::from(u64::MAX)) as u64;
            if !bernoulli_exp(chunk, q, rng)? {
                return Ok(false);
            }
            p -= u128::from(chunk);
        }
        Ok(true)
    }
}

impl Mechanism for ExponentialMechanism {
    type Input = [f64];
    type Output = usize;

    fn neighbours(&self) -> Neighbours {
        self.neighbours
    }

    /// ε with ε-bounded range for the exact sampler (charged as ε by a pure
    /// accountant and as ε²/8 by a zCDP one: Durfee–Rogers 2019, Cesar–Rogers 2021
    /// Lemma 3.2); pure ε for permute-and-flip, whose bounded range is not
    /// established.
    fn cost(&self) -> Cost {
        match self.sampling {
            Sampling::Exact => Cost::BoundedRange(self.epsilon),
            Sampling::PermuteAndFlip => Cost::Pure(self.epsilon),
        }
    }

    fn label(&self) -> String {
        format!("exponential mechanism (score Δ = {})", self.sensitivity)
    }

    fn release_paid<R: Rng + CryptoRng + ?Sized>(
        &self,
        scores: &[f64],
        receipt: Receipt,
        rng: &mut R,
    ) -> Result<usize, MechanismError> {
        receipt.check_covers(&self.cost(), self.neighbours())?;
        self.select(scores, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded_rng;
    use crate::stats::chi_square_gof;

    #[test]
    fn a_zcdp_accountant_charges_eps_squared_over_8() {
        use crate::accountant::Accountant;
        use privq_core::Rho;
        let em = ExponentialMechanism::counts(Neighbours::AddRemove, Epsilon::new(1, 2).unwrap())
            .unwrap();
        let mut acct = Accountant::zcdp(Rho::new(1, 10).unwrap(), 1e-9).unwrap();
        em.release(&[1.0, 2.0][..], &mut acct, &mut seeded_rng(1))
            .unwrap();
        assert_eq!(acct.spent_rho(), Some(Rho::new(1, 32).unwrap()));
        let mut pure = Accountant::pure(Epsilon::new(1, 1).unwrap());
        em.release(&[1.0, 2.0][..], &mut pure, &mut seeded_rng(1))
            .unwrap();
        assert_eq!(pure.spent_epsilon(), Some(Epsilon::new(1, 2).unwrap()));
        let pf = em.with_sampling(Sampling::PermuteAndFlip);
        assert_eq!(pf.cost(), Cost::Pure(Epsilon::new(1, 2).unwrap()));
    }

    #[test]
    fn exact_frequencies_match_the_softmax() {
        let em = ExponentialMechanism::new(Epsilon::new(1, 2).unwrap(), 1.0).unwrap();
        let scores = [0.0, 1.0, 2.5, 4.0, 4.0, -3.0, 7.25];
        let p = em.probabilities(&scores).unwrap();
        // The softmax with λ = ε/(2Δ) = 1/4 (the grid is fine enough to be exact here).
        let lambda = 0.25;
        let z: f64 = scores.iter().map(|s| (lambda * s).exp()).sum();
        for (pi, s) in p.iter().zip(scores) {
            assert!((pi - (lambda * s).exp() / z).abs() < 1e-6);
        }
        let mut rng = seeded_rng(11);
        let mut counts = [0u64; 7];
        for _ in 0..60_000 {
            counts[em.select(&scores, &mut rng).unwrap()] += 1;
        }
        let fit = chi_square_gof(&counts, &p).unwrap();
        assert!(fit.p_value > 1e-4, "chi-square p = {}", fit.p_value);
    }

    #[test]
    fn permute_and_flip_matches_its_exact_pmf() {
        let em = ExponentialMechanism::new(Epsilon::new(1, 1).unwrap(), 1.0)
            .unwrap()
            .with_sampling(Sampling::PermuteAndFlip);
        let scores = [0.0, 1.0, 3.0];
        // Exact PF pmf by enumerating the 6 orders.
        let acc: Vec<f64> = scores
            .iter()
            .map(|s: &f64| (0.5 * (s - 3.0)).exp())
            .collect();
        let mut pmf = [0.0; 3];
        for perm in [
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ] {
            let mut reach = 1.0 / 6.0;
            for &i in &perm {
                pmf[i] += reach * acc[i];
                reach *= 1.0 - acc[i];
            }
        }
        let mut rng = seeded_rng(12);
        let mut counts = [0u64; 3];
        for _ in 0..30_000 {
            counts[em.select(&scores, &mut rng).unwrap()] += 1;
        }
        let fit = chi_square_gof(&counts, &pmf).unwrap();
        assert!(fit.p_value > 1e-4, "chi-square p = {}", fit.p_value);
    }

    #[test]
    fn utility_tail_bound() {
        // P[OPT − s ≥ τ] ≤ k·e^{−λτ} (the finite-range utility bound behind thesis
        // Lemma 2.5.2: each worse item weighs at most e^{−λτ} of the best), k = 200 items.
        let em = ExponentialMechanism::new(Epsilon::new(1, 1).unwrap(), 1.0).unwrap();
        let scores: Vec<f64> = (0..200).map(|i| (i % 37) as f64 * 0.7).collect();
        let opt = scores.iter().cloned().fold(f64::MIN, f64::max);
        let lambda = em.lambda();
        let mut rng = seeded_rng(13);
        let trials = 5_000;
        for tau in [10.0, 15.0, 20.0] {
            let bad = (0..trials)
                .filter(|_| opt - scores[em.select(&scores, &mut rng).unwrap()] >= tau)
                .count();
            let bound = 200.0 * (-lambda * tau).exp();
            // Allow sampling noise: 4 binomial sds above the bound.
            let slack = 4.0 * (bound.min(1.0) / trials as f64).sqrt();
            assert!(bad as f64 / trials as f64 <= bound + slack, "tau {tau}");
        }
    }

    #[test]
    fn bad_input() {
        let eps = Epsilon::new(1, 1).unwrap();
        assert!(ExponentialMechanism::new(eps, 0.0).is_err());
        let em = ExponentialMechanism::new(eps, 1.0).unwrap();
        assert!(em.select(&[], &mut seeded_rng(1)).is_err());
        assert!(em.select(&[f64::NAN], &mut seeded_rng(1)).is_err());
        // Huge ε denominators coarsen the grid instead of overflowing.
        let tiny = Epsilon::from_f64(0.1).unwrap();
        let em = ExponentialMechanism::new(tiny, 1.0).unwrap();
        assert!(em.select(&[0.0, 1e6], &mut seeded_rng(1)).unwrap() == 1);
    }
}

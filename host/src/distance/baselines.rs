//! Baselines measured side by side with the Huang–Roth mechanisms (spec §4).
//!
//! * [`LaplacePerQuery`]: each of `k` queries answered with exact Laplace noise of
//!   sensitivity `1/n`, the budget composed over the k queries.
//! * [`TreeCdf`]: a per-coordinate private CDF (binary-tree / hierarchical counts
//!   with the core's exact discrete Laplace), from which
//!   `F^{(i)}(t) = ∫₀^{w}(1 − C) + ∫₀ᵗ (2C − 1)` answers **every** ℓ1 query.
//!
//! MWEM/PMW on a grid (spec §4(c)) is not implemented yet.

use privq_core::rand_core::{CryptoRng, Rng};

use super::DistanceError;
use super::columns::Columns;
use super::privacy::{Noise, Plan, Privacy};
use crate::mechanism::Geometric;

/// The Laplace mechanism per query with composition over `k` queries.
///
/// ```
/// use privq_host::distance::{Columns, Domain, baselines::LaplacePerQuery, privacy::Privacy};
/// use privq_host::{Epsilon, seeded_rng};
/// let cols = Columns::new(&Domain::unit_cube(1)?, &[vec![0.2], vec![0.4]])?;
/// let mut lap = LaplacePerQuery::new(cols.len(), 10, Privacy::pure(Epsilon::new(1, 1)?))?;
/// let a = lap.answer(&cols, &[0.3], &mut seeded_rng(1))?;
/// assert!(a.is_finite());
/// # Ok::<(), privq_host::distance::DistanceError>(())
/// ```
#[derive(Debug, Clone)]
pub struct LaplacePerQuery {
    noise: Noise,
    left: usize,
    plan: Plan,
}

impl LaplacePerQuery {
    /// For `n` points and at most `k` queries.
    pub fn new(n: usize, k: usize, privacy: Privacy) -> Result<Self, DistanceError> {
        if n == 0 {
            return Err(DistanceError::EmptyData);
        }
        let plan = Plan::new(privacy, k)?;
        Ok(LaplacePerQuery {
            noise: Noise::new(1.0 / n as f64, plan.per_step(), true)?,
            left: k,
            plan,
        })
    }

    /// The noise scale per answer.
    pub fn scale(&self) -> f64 {
        self.noise.scale()
    }

    /// The plan (per-query ε₀ and composition).
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Answers a query in the domain's units (scaled answer); refuses after k.
    pub fn answer<R: Rng + CryptoRng + ?Sized>(
        &mut self,
        cols: &Columns,
        y: &[f64],
        rng: &mut R,
    ) -> Result<f64, DistanceError> {
        if self.left == 0 {
            return Err(DistanceError::Exhausted(super::Exhausted {
                rounds: self.plan.steps(),
                answered: self.plan.steps(),
            }));
        }
        let exact = cols.answer(y)?;
        self.left -= 1;
        self.noise.release(exact, rng)
    }
}

/// The per-coordinate private CDF: `2^depth` bins per coordinate, hierarchical
/// counts at every dyadic level with exact discrete Laplace noise. A point (replaced
/// by another) changes one count per level and coordinate twice, so the ℓ1
/// sensitivity of all counts is `2·ℓ·(depth + 1)`; pure ε-DP.
///
/// ```
/// use privq_host::distance::{Columns, Domain, baselines::TreeCdf};
/// use privq_host::{Epsilon, seeded_rng};
/// let pts: Vec<Vec<f64>> = (0..10_000).map(|i| vec![(i % 100) as f64 / 100.0]).collect();
/// let cols = Columns::new(&Domain::unit_cube(1)?, &pts)?;
/// let tree = TreeCdf::release(&cols, Epsilon::new(1, 1)?, 10, &mut seeded_rng(1))?;
/// assert!((tree.answer_scaled(&[0.5]) - cols.answer(&[0.5])?).abs() < 0.01);
/// # Ok::<(), privq_host::distance::DistanceError>(())
/// ```
#[derive(Debug, Clone)]
pub struct TreeCdf {
    widths: Vec<f64>,
    /// Per coordinate: `∫₀^{edge_b} C(s) ds` at the `2^depth + 1` bin edges.
    integrals: Vec<Vec<f64>>,
    domain: super::Domain,
}

impl TreeCdf {
    /// Releases the noisy CDFs with budget ε and `2^depth` bins per coordinate.
    pub fn release<R: Rng + CryptoRng + ?Sized>(
        cols: &Columns,
        epsilon: privq_core::Epsilon,
        depth: u32,
        rng: &mut R,
    ) -> Result<Self, DistanceError> {
        if !(1..=20).contains(&depth) {
            return Err(DistanceError::InvalidParameter(format!(
                "depth must lie in 1..=20, got {depth}"
            )));
        }
        let bins = 1usize << depth;
        let sens = 2 * cols.dim() as u64 * (u64::from(depth) + 1);
        let geo = Geometric::new(sens, epsilon)?;
        let n = cols.len() as f64;
        let mut integrals = Vec::with_capacity(cols.dim());
        for (i, &w) in cols.widths().iter().enumerate() {
            let h = w / bins as f64;
            let mut leaf = vec![0u64; bins];
            for &z in cols.sorted_column(i) {
                let b = ((z / h) as usize).min(bins - 1);
                leaf[b] += 1;
            }
            // Noisy dyadic counts, level by level (level 0 = leaves).
            let mut levels: Vec<Vec<i64>> = Vec::with_capacity(depth as usize + 1);
            let mut exact = leaf;
            for _ in 0..=depth {
                levels.push(geo.release(&exact, rng)?);
                exact = exact.chunks(2).map(|c| c.iter().sum()).collect();
            }
            // CDF at each bin's right edge: the dyadic decomposition of [0, b+1).
            let mut cdf = Vec::with_capacity(bins);
            let mut running_max = 0.0f64;
            for b in 0..bins {
                let mut count = 0i64;
                let mut end = b + 1;
                let mut level = 0usize;
                while end > 0 {
                    if end & 1 == 1 {
                        count += levels
                            .get(level)
                            .and_then(|l| l.get(end - 1))
                            .copied()
                            .unwrap_or(0);
                    }
                    end >>= 1;
                    level += 1;
                }
                // Post-processing: clamp to [0, 1] and make monotone.
                running_max = running_max.max((count as f64 / n).clamp(0.0, 1.0));
                cdf.push(running_max);
            }
            let mut integral = Vec::with_capacity(bins + 1);
            integral.push(0.0);
            let mut acc = 0.0;
            let mut left = 0.0;
            for &c in &cdf {
                acc += 0.5 * (left + c) * h; // trapezoid within the bin
                integral.push(acc);
                left = c;
            }
            integrals.push(integral);
        }
        Ok(TreeCdf {
            widths: cols.widths().to_vec(),
            integrals,
            domain: cols.domain().clone(),
        })
    }

    /// The answer for a scaled query.
    pub fn answer_scaled(&self, y: &[f64]) -> f64 {
        let mut total = 0.0;
        for ((&t, &w), integral) in y.iter().zip(&self.widths).zip(&self.integrals) {
            let bins = integral.len() - 1;
            let h = w / bins as f64;
            let pos = (t / h).clamp(0.0, bins as f64);
            let b = (pos.floor() as usize).min(bins - 1);
            let frac = pos - b as f64;
            let it = integral[b] + frac * (integral[b + 1] - integral[b]);
            let total_int = integral[bins];
            total += (w - total_int) + 2.0 * it - t;
        }
        total.clamp(0.0, 1.0)
    }

    /// The answer for a query in the domain's units.
    pub fn answer(&self, y: &[f64]) -> Result<f64, DistanceError> {
        Ok(self.answer_scaled(&self.domain.scale(y)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distance::Domain;
    use crate::seeded_rng;
    use privq_core::Epsilon;

    #[test]
    fn tree_cdf_is_accurate_with_large_epsilon_and_laplace_refuses_after_k() {
        let mut rng = seeded_rng(3);
        let pts: Vec<Vec<f64>> = (0..5000)
            .map(|i| {
                vec![
                    ((i * 37) % 1000) as f64 / 1000.0,
                    ((i * 11) % 997) as f64 / 997.0,
                ]
            })
            .collect();
        let cols = Columns::new(&Domain::unit_cube(2).unwrap(), &pts).unwrap();
        let tree = TreeCdf::release(&cols, Epsilon::new(1000, 1).unwrap(), 10, &mut rng).unwrap();
        for q in [[0.1, 0.9], [0.5, 0.5], [0.0, 1.0]] {
            assert!((tree.answer(&q).unwrap() - cols.answer(&q).unwrap()).abs() < 2e-3);
        }
        assert!(TreeCdf::release(&cols, Epsilon::new(1, 1).unwrap(), 0, &mut rng).is_err());
        let mut lap =
            LaplacePerQuery::new(cols.len(), 2, Privacy::pure(Epsilon::new(1, 1).unwrap()))
                .unwrap();
        assert!((lap.scale() - 2.0 / 5000.0).abs() < 1e-6);
        lap.answer(&cols, &[0.5, 0.5], &mut rng).unwrap();
        lap.answer(&cols, &[0.5, 0.5], &mut rng).unwrap();
        assert!(matches!(
            lap.answer(&cols, &[0.5, 0.5], &mut rng),
            Err(DistanceError::Exhausted(_))
        ));
    }
}

//! Report noisy max (Dwork & Roth, *The Algorithmic Foundations of Differential
//! Privacy*, 2014, §3.3, Claim 3.9): the index of the largest of `k` counting
//! queries after independent noise on each, with exact discrete Laplace noise
//! (two-sided geometric) on the integer counts. Only the index is released.
//!
//! The noise scale follows the neighbour relation ([`Neighbours::monotone_counting_queries`]):
//! under add/remove one record moves every count the same way, and scale 1/ε
//! suffices (Claim 3.9); under replace-one a count can go down while another goes
//! up, and the scale is 2/ε.
//!
//! Claim 3.9 is proved for continuous noise; its argument carries over to the
//! discrete noise and the fixed tie rule. Fix the other counts' noise: the noise
//! values with which index `i` wins are closed upwards (ties included), and a
//! neighbour shifts the smallest of them by at most one step (two under
//! replace-one). The discrete Laplace density `f(y) ∝ e^{−|y|/t}` has
//! `f(y + 1) ≥ e^{−1/t} f(y)` for every integer `y`, so every upper tail obeys
//! `P[X ≥ r + 1] ≥ e^{−1/t} P[X ≥ r]`, which is the step the proof needs.
//!
//! ```
//! use privq_host::accountant::Accountant;
//! use privq_host::central::ReportNoisyMax;
//! use privq_host::contract::{Mechanism, Neighbours};
//! use privq_host::{Epsilon, seeded_rng};
//!
//! let mech = ReportNoisyMax::counts(Neighbours::AddRemove, Epsilon::new(1, 1)?, 3)?;
//! let mut acct = Accountant::pure(Epsilon::new(1, 1)?);
//! let winner = mech.release(&[12, 310, 45][..], &mut acct, &mut seeded_rng(5))?;
//! assert_eq!(winner, 1);
//! assert_eq!(acct.spent_epsilon(), Some(Epsilon::new(1, 1)?));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use privq_core::Epsilon;
use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::sample::DiscreteLaplace;

use super::error::MechanismError;
use crate::accountant::{Cost, Receipt};
use crate::contract::{Mechanism, Neighbours};

/// Report noisy max over `k` counting queries.
#[derive(Debug, Clone)]
pub struct ReportNoisyMax {
    neighbours: Neighbours,
    epsilon: Epsilon,
    k: usize,
    noise: DiscreteLaplace,
}

impl ReportNoisyMax {
    /// The mechanism for `k ≥ 1` counts (each a counting query: one individual
    /// changes it by at most one), ε-DP under `neighbours`.
    pub fn counts(
        neighbours: Neighbours,
        epsilon: Epsilon,
        k: usize,
    ) -> Result<Self, MechanismError> {
        if k == 0 {
            return Err(MechanismError::InvalidParameter(
                "report noisy max needs at least one count".into(),
            ));
        }
        let sensitivity = if neighbours.monotone_counting_queries() {
            1
        } else {
            2
        };
        Ok(ReportNoisyMax {
            neighbours,
            epsilon,
            k,
            noise: DiscreteLaplace::for_sensitivity(sensitivity, epsilon)?,
        })
    }

    /// The noise scale t of each count (1/ε or 2/ε).
    pub fn scale(&self) -> f64 {
        self.noise.scale_num() as f64 / self.noise.scale_den() as f64
    }

    /// The noise, for a test of this module that breaks it on purpose.
    #[cfg(test)]
    pub(crate) fn with_noise(mut self, noise: DiscreteLaplace) -> Self {
        self.noise = noise;
        self
    }
}

impl Mechanism for ReportNoisyMax {
    type Input = [u64];
    type Output = usize;

    fn neighbours(&self) -> Neighbours {
        self.neighbours
    }

    fn cost(&self) -> Cost {
        Cost::Pure(self.epsilon)
    }

    fn label(&self) -> String {
        format!("report noisy max over {} counts", self.k)
    }

    fn check_input(&self, counts: &[u64]) -> Result<(), MechanismError> {
        if counts.len() != self.k {
            return Err(MechanismError::DimensionMismatch {
                expected: self.k,
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
    ) -> Result<usize, MechanismError> {
        receipt.check_covers(&self.cost(), self.neighbours())?;
        self.check_input(counts)?;
        let mut best: Option<(i128, usize)> = None;
        for (i, &c) in counts.iter().enumerate() {
            let noisy = i128::from(c) + i128::from(self.noise.sample(rng)?);
            // Ties go to the lowest index: a fixed rule, independent of the data.
            if best.is_none_or(|(b, _)| noisy > b) {
                best = Some((noisy, i));
            }
        }
        Ok(best.map_or(0, |(_, i)| i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accountant::Accountant;
    use crate::seeded_rng;

    fn eps(n: u64, d: u64) -> Epsilon {
        Epsilon::new(n, d).unwrap()
    }

    #[test]
    fn the_scale_follows_the_relation() {
        let add = ReportNoisyMax::counts(Neighbours::AddRemove, eps(1, 2), 4).unwrap();
        let replace = ReportNoisyMax::counts(Neighbours::Replace, eps(1, 2), 4).unwrap();
        assert_eq!(add.scale(), 2.0);
        assert_eq!(replace.scale(), 4.0);
        assert!(ReportNoisyMax::counts(Neighbours::Replace, eps(1, 2), 0).is_err());
    }

    /// Accuracy: the winner's true count is within `ln(k/β)·2t` of the maximum with
    /// probability 1 − β (a union bound on the noise tails); with a gap of 40 at
    /// scale 1 the true maximum wins virtually always. With equal counts every index
    /// wins often (ties go to the lowest, so not exactly uniformly).
    #[test]
    fn a_clear_maximum_wins_and_equal_counts_all_win() {
        let mech = ReportNoisyMax::counts(Neighbours::AddRemove, eps(1, 1), 3).unwrap();
        let mut acct = Accountant::pure(eps(10_000, 1));
        let mut rng = seeded_rng(9);
        let mut wins = [0usize; 3];
        for _ in 0..3000 {
            wins[mech
                .release(&[100, 140, 60][..], &mut acct, &mut rng)
                .unwrap()] += 1;
        }
        assert!(wins[1] > 2990, "{wins:?}");
        let mut wins = [0usize; 3];
        for _ in 0..3000 {
            wins[mech
                .release(&[50, 50, 50][..], &mut acct, &mut rng)
                .unwrap()] += 1;
        }
        assert!(wins.iter().all(|&w| w > 600), "{wins:?}");
    }

    #[test]
    fn wrong_shapes_are_refused_before_the_charge_and_short_receipts_sample_nothing() {
        let mech = ReportNoisyMax::counts(Neighbours::Replace, eps(1, 1), 2).unwrap();
        let mut acct = Accountant::pure(eps(1, 1));
        assert!(
            mech.release(&[1][..], &mut acct, &mut seeded_rng(1))
                .is_err()
        );
        assert!(acct.ledger().is_empty());
        let mut small = Accountant::pure(eps(1, 1));
        let receipt = small.charge("less", Cost::Pure(eps(1, 2))).unwrap();
        assert!(
            mech.release_paid(&[1, 2], receipt, &mut seeded_rng(2))
                .is_err()
        );
    }
}

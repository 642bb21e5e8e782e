//! One value per individual, each released with the grid Laplace mechanism
//! (`privq noise`): a reading, a salary, a score. Changing one individual changes
//! one value, so by parallel composition the whole vector costs each individual one
//! value's ε (neighbours replace one individual; the number of values is public).
//!
//! ```
//! use privq_host::central::values::{Sampler, ValueBound, ValueNoise};
//! use privq_host::contract::Mechanism;
//! use privq_host::{Epsilon, Fixed, seeded_rng};
//!
//! let bound = ValueBound::Range { lo: Fixed::from_int(15), hi: Fixed::from_int(30) };
//! let noise = ValueNoise::new(Epsilon::new(1, 2)?, bound, None, Sampler::Exact)?.with_count(3);
//! let values = ["21.5".parse()?, "19".parse()?, "45".parse()?]; // 45 is clamped to 30
//! let (released, accountant) = noise.release_with_ledger(&values, &mut seeded_rng(7))?;
//! assert_eq!(released.len(), 3);
//! assert_eq!(accountant.spent_epsilon(), Some(Epsilon::new(1, 2)?));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::sample::{BoundedDiscreteLaplace, DiscreteLaplace, IntegerNoise};
use privq_core::{Epsilon, Fixed, GridLaplace};

use super::error::MechanismError;
use crate::accountant::{Cost, Receipt};
use crate::contract::{Mechanism, Neighbours};

/// How far one individual can move their value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueBound {
    /// A public range `[lo, hi]`, `lo < hi`: every value is clamped into it before
    /// noise is added and the sensitivity is its width, so ε holds for every value,
    /// outliers included. The sound form.
    Range {
        /// The lowest value.
        lo: Fixed,
        /// The highest value.
        hi: Fixed,
    },
    /// An asserted sensitivity Δ > 0, not checked: a value that one individual
    /// moves by more than Δ is protected only at ε·(its change)/Δ.
    Asserted(Fixed),
}

/// The noise sampler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampler {
    /// The exact discrete Laplace sampler: pure ε-DP.
    Exact,
    /// The bounded-work sampler, whose running time does not depend on the noise;
    /// it costs a δ ≤ 2⁻⁶⁴ per value.
    BoundedWork,
}

/// The public parameters a [`ValueNoise`] deploys.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NoiseSummary {
    /// ε per value.
    pub epsilon: Epsilon,
    /// The grid step is `2^grid_exp`.
    pub grid_exp: i32,
    /// The grid step γ.
    pub grid: Fixed,
    /// The sensitivity in grid steps.
    pub sensitivity_steps: u64,
    /// The noise scale `scale_num/scale_den`, in grid steps.
    pub scale_num: u64,
    /// See `scale_num`.
    pub scale_den: u64,
    /// The noise's standard deviation in the values' units.
    pub std_dev: f64,
}

/// The grid Laplace mechanism on `count` values, one per individual.
#[derive(Debug, Clone)]
pub struct ValueNoise {
    grid: GridLaplace<DiscreteLaplace>,
    bounded: Option<GridLaplace<BoundedDiscreteLaplace>>,
    bound: ValueBound,
    count: usize,
}

impl ValueNoise {
    /// The mechanism at ε per value, calibrated to `bound`, on the grid
    /// `2^grid_exp` (default: the largest power of two ≤ Δ/1024), for as many values
    /// as [`ValueNoise::with_count`] says (none until then).
    pub fn new(
        epsilon: Epsilon,
        bound: ValueBound,
        grid_exp: Option<i32>,
        sampler: Sampler,
    ) -> Result<Self, MechanismError> {
        let sensitivity = match bound {
            ValueBound::Range { lo, hi } if lo < hi => hi.checked_sub(lo)?,
            ValueBound::Range { lo, hi } => {
                return Err(MechanismError::InvalidParameter(format!(
                    "the range's low end must be below its high end, got [{lo}, {hi}]"
                )));
            }
            ValueBound::Asserted(s) => s,
        };
        let grid = match grid_exp {
            Some(k) => GridLaplace::with_grid(sensitivity, epsilon, k)?,
            None => GridLaplace::new(sensitivity, epsilon)?,
        };
        let bounded = match sampler {
            Sampler::Exact => None,
            Sampler::BoundedWork => Some(grid.with_noise(BoundedDiscreteLaplace::new)?),
        };
        Ok(ValueNoise {
            grid,
            bounded,
            bound,
            count: 0,
        })
    }

    /// The same mechanism for `count` values (public: the release has as many).
    pub fn with_count(mut self, count: usize) -> Self {
        self.count = count;
        self
    }

    /// What the mechanism deploys (public parameters only), for summaries.
    pub fn summary(&self) -> NoiseSummary {
        let noise = self.grid.noise();
        NoiseSummary {
            epsilon: self.grid.epsilon(),
            grid_exp: self.grid.grid_exp(),
            grid: self.grid.grid(),
            sensitivity_steps: self.grid.sensitivity_steps(),
            scale_num: noise.scale_num(),
            scale_den: noise.scale_den(),
            std_dev: noise.variance().sqrt() * self.grid.grid().to_f64(),
        }
    }

    /// The bound the mechanism was calibrated to.
    pub fn bound(&self) -> ValueBound {
        self.bound
    }

    /// The sensitivity Δ: the range's width or the asserted value.
    pub fn sensitivity(&self) -> Fixed {
        match self.bound {
            ValueBound::Range { lo, hi } => hi.checked_sub(lo).unwrap_or(Fixed::MAX),
            ValueBound::Asserted(s) => s,
        }
    }

    /// `log2 δ` per value of the bounded-work sampler; `None` for the exact one.
    pub fn delta_log2(&self) -> Option<i32> {
        self.bounded.as_ref().and_then(|b| b.delta_log2())
    }
}

fn release_all<N: IntegerNoise, R: Rng + CryptoRng + ?Sized>(
    mech: &GridLaplace<N>,
    values: &[Fixed],
    bound: ValueBound,
    rng: &mut R,
) -> Result<Vec<Fixed>, MechanismError> {
    values
        .iter()
        .enumerate()
        .map(|(index, &v)| {
            // Clamping is part of the mechanism: it bounds every individual's
            // influence. How many values were clamped is not reported.
            let v = match bound {
                ValueBound::Range { lo, hi } => v.clamp(lo, hi),
                ValueBound::Asserted(_) => v,
            };
            mech.release(v, rng)
                .map_err(|source| MechanismError::Value { index, source })
        })
        .collect()
}

impl Mechanism for ValueNoise {
    type Input = [Fixed];
    type Output = Vec<Fixed>;

    fn neighbours(&self) -> Neighbours {
        Neighbours::Replace
    }

    fn cost(&self) -> Cost {
        let epsilon = self.grid.epsilon();
        match self.delta_log2() {
            Some(k) => Cost::Approximate {
                epsilon,
                delta: 2f64.powi(k),
            },
            None => Cost::Pure(epsilon),
        }
    }

    fn label(&self) -> String {
        let sampler = match self.delta_log2() {
            Some(k) => format!(", bounded-work sampler (δ ≤ 2^{k} per value)"),
            None => String::new(),
        };
        format!(
            "grid Laplace on {} value(s), one per individual (parallel composition){sampler}",
            self.count
        )
    }

    fn check_input(&self, input: &[Fixed]) -> Result<(), MechanismError> {
        if input.len() != self.count {
            return Err(MechanismError::DimensionMismatch {
                expected: self.count,
                got: input.len(),
            });
        }
        Ok(())
    }

    fn release_paid<R: Rng + CryptoRng + ?Sized>(
        &self,
        input: &[Fixed],
        receipt: Receipt,
        rng: &mut R,
    ) -> Result<Vec<Fixed>, MechanismError> {
        receipt.check_covers(&self.cost(), self.neighbours())?;
        self.check_input(input)?;
        match &self.bounded {
            Some(b) => release_all(b, input, self.bound, rng),
            None => release_all(&self.grid, input, self.bound, rng),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accountant::Accountant;
    use crate::seeded_rng;

    fn fixed(x: i32) -> Fixed {
        Fixed::from_int(x)
    }

    #[test]
    fn a_range_clamps_and_sets_the_sensitivity_to_its_width() {
        let bound = ValueBound::Range {
            lo: fixed(0),
            hi: fixed(10),
        };
        let eps = Epsilon::new(1, 1).unwrap();
        let noise = ValueNoise::new(eps, bound, None, Sampler::Exact)
            .unwrap()
            .with_count(2);
        assert_eq!(noise.sensitivity(), fixed(10));
        // The same draws on a clamped and an in-range value give the same release.
        let a = noise
            .release_with_ledger(&[fixed(1000), fixed(3)], &mut seeded_rng(4))
            .unwrap()
            .0;
        let b = noise
            .release_with_ledger(&[fixed(10), fixed(3)], &mut seeded_rng(4))
            .unwrap()
            .0;
        assert_eq!(a, b);
    }

    #[test]
    fn the_ledger_holds_one_charge_bound_to_replace_one() {
        let eps = Epsilon::new(1, 2).unwrap();
        for (sampler, approx) in [(Sampler::Exact, false), (Sampler::BoundedWork, true)] {
            let noise = ValueNoise::new(eps, ValueBound::Asserted(fixed(1)), None, sampler)
                .unwrap()
                .with_count(3);
            let (out, acct) = noise
                .release_with_ledger(&[fixed(1), fixed(2), fixed(3)], &mut seeded_rng(1))
                .unwrap();
            assert_eq!(out.len(), 3);
            assert_eq!(acct.neighbours(), Some(Neighbours::Replace));
            assert_eq!(acct.ledger().len(), 1);
            assert_eq!(acct.spent_epsilon(), Some(eps));
            assert_eq!(acct.spent_delta() > 0.0, approx);
        }
    }

    #[test]
    fn bad_shapes_and_receipts_are_refused() {
        let eps = Epsilon::new(1, 1).unwrap();
        let empty = ValueBound::Range {
            lo: fixed(3),
            hi: fixed(3),
        };
        assert!(ValueNoise::new(eps, empty, None, Sampler::Exact).is_err());
        let noise = ValueNoise::new(eps, ValueBound::Asserted(fixed(1)), None, Sampler::Exact)
            .unwrap()
            .with_count(2);
        let mut acct = Accountant::pure(eps);
        // The wrong number of values: refused before the charge.
        assert!(matches!(
            noise.release(&[fixed(1)], &mut acct, &mut seeded_rng(2)),
            Err(MechanismError::DimensionMismatch { .. })
        ));
        assert!(acct.ledger().is_empty());
        // A receipt for less than the cost samples nothing.
        let mut small = Accountant::pure(eps);
        let receipt = small
            .charge("less", Cost::Pure(Epsilon::new(1, 4).unwrap()))
            .unwrap();
        assert!(
            noise
                .release_paid(&[fixed(1), fixed(2)], receipt, &mut seeded_rng(3))
                .is_err()
        );
    }
}

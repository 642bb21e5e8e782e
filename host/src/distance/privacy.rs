//! Privacy plans and exact-noise building blocks shared by the interactive and the
//! offline mechanisms.
//!
//! The paper calibrates with the analysis constant 3000 (Lemma 3.1). Here the
//! accounting is exact instead (`docs/src/distance.md`): the mechanism is a
//! sequence of at most `M` sub-mechanisms — AboveThreshold instances (Dwork–Roth Alg. 1, threshold
//! noise `Lap(2Δ/ε₀)`, query noise `Lap(4Δ/ε₀)`) and update rounds (vector Laplace) —
//! each ε₀-DP. Pure ε: `ε₀ = ε/M` exactly (basic composition, rational arithmetic).
//! (ε, δ): `ε₀` from advanced composition over `M` steps (rounded down to an exact
//! rational), or `ε/M` if that is larger. Every noise draw uses the core's exact
//! discrete Laplace on a power-of-two grid ([`VectorLaplace`]).

use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::sample::DiscreteLaplace;
use privq_core::{Epsilon, Fixed, GridLaplace};

use super::DistanceError;
use crate::accountant::{self, Accountant, Cost, PrivacyLoss};
use crate::central::{VectorLaplace, epsilon_at_most, fixed_ceil};
use crate::contract::Neighbours;

/// The privacy target of a release.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Privacy {
    /// Pure ε-differential privacy.
    Pure(Epsilon),
    /// (ε, δ)-differential privacy.
    Approx {
        /// ε.
        epsilon: Epsilon,
        /// δ ∈ (0, 1).
        delta: f64,
    },
}

impl Privacy {
    /// Pure ε-DP.
    pub fn pure(epsilon: Epsilon) -> Self {
        Privacy::Pure(epsilon)
    }

    /// (ε, δ)-DP; δ must lie in (0, 1).
    pub fn approx(epsilon: Epsilon, delta: f64) -> Result<Self, DistanceError> {
        if !(delta > 0.0 && delta < 1.0) {
            return Err(DistanceError::InvalidParameter(format!(
                "delta must lie in (0, 1), got {delta}"
            )));
        }
        Ok(Privacy::Approx { epsilon, delta })
    }

    /// Parses ε (decimal or fraction, must be > 0) and an optional δ.
    pub fn parse(epsilon: &str, delta: Option<f64>) -> Result<Self, DistanceError> {
        let e: Epsilon = epsilon
            .trim()
            .parse()
            .map_err(|source| DistanceError::Epsilon {
                text: epsilon.to_string(),
                source,
            })?;
        match delta {
            None => Ok(Privacy::Pure(e)),
            Some(d) => Privacy::approx(e, d),
        }
    }

    /// ε.
    pub fn epsilon(&self) -> Epsilon {
        match *self {
            Privacy::Pure(e) | Privacy::Approx { epsilon: e, .. } => e,
        }
    }

    /// δ (0 for pure).
    pub fn delta(&self) -> f64 {
        match *self {
            Privacy::Pure(_) => 0.0,
            Privacy::Approx { delta, .. } => delta,
        }
    }

    /// The cost charged to the caller's accountant for a release with this target.
    pub fn cost(&self) -> Cost {
        match *self {
            Privacy::Pure(e) => Cost::Pure(e),
            Privacy::Approx { epsilon, delta } => Cost::Approximate { epsilon, delta },
        }
    }
}

/// The neighbour relation of the distance-query mechanisms: one point of the
/// dataset is replaced by another point of the domain; the number of points n is
/// public (the queries are averages over the n points, with sensitivity `w/n`).
pub const NEIGHBOURS: Neighbours = Neighbours::Replace;

/// Charges `privacy` for one release (`what`) to the caller's accountant, before
/// anything is sampled.
pub(crate) fn charge_release(
    accountant: &mut Accountant,
    what: &str,
    privacy: Privacy,
) -> Result<(), DistanceError> {
    let _receipt = accountant.charge_as(
        NEIGHBOURS,
        &format!("{what} ({NEIGHBOURS})"),
        privacy.cost(),
    )?;
    Ok(())
}

/// How the per-step budget composes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Composition {
    /// Basic composition: the ε₀'s add up (exactly) to at most ε.
    Basic,
    /// Advanced composition with slack δ′ = δ.
    Advanced {
        /// The slack δ′.
        delta: f64,
    },
}

/// The split of a budget into `steps` ε₀-DP sub-mechanisms.
///
/// ```
/// use privq_host::distance::privacy::{Plan, Privacy};
/// use privq_host::Epsilon;
/// let plan = Plan::new(Privacy::pure(Epsilon::new(1, 1)?), 10)?;
/// assert_eq!(plan.per_step(), Epsilon::new(1, 10)?);
/// let approx = Plan::new(Privacy::approx(Epsilon::new(1, 1)?, 1e-6)?, 1000)?;
/// assert!(approx.per_step().to_f64() > 1.0 / 1000.0); // advanced composition wins
/// assert!(approx.guarantee(1000)?.epsilon <= 1.0);
/// # Ok::<(), privq_host::distance::DistanceError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    privacy: Privacy,
    steps: usize,
    per_step: Epsilon,
    composition: Composition,
}

impl Plan {
    /// Splits `privacy` over `steps ≥ 1` sub-mechanisms.
    pub fn new(privacy: Privacy, steps: usize) -> Result<Self, DistanceError> {
        if steps == 0 {
            return Err(DistanceError::InvalidParameter(
                "a plan needs at least one step".into(),
            ));
        }
        let eps = privacy.epsilon();
        let basic = eps.checked_div_int(steps as u64)?;
        let (per_step, composition) = match privacy {
            Privacy::Pure(_) => (basic, Composition::Basic),
            Privacy::Approx { delta, .. } => {
                let adv = accountant::invert_advanced(steps as u64, eps.to_f64(), delta)
                    .ok()
                    .and_then(|x| epsilon_at_most(x).ok());
                match adv {
                    Some(a) if a > basic => (a, Composition::Advanced { delta }),
                    _ => (basic, Composition::Basic),
                }
            }
        };
        Ok(Plan {
            privacy,
            steps,
            per_step,
            composition,
        })
    }

    /// The target.
    pub fn privacy(&self) -> Privacy {
        self.privacy
    }

    /// Sub-mechanisms allowed.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// ε₀ of each sub-mechanism (exact).
    pub fn per_step(&self) -> Epsilon {
        self.per_step
    }

    /// The composition theorem used.
    pub fn composition(&self) -> Composition {
        self.composition
    }

    /// A budget filter holding exactly `steps · ε₀` (the ledger of ε₀ charges).
    pub fn filter(&self) -> Result<Accountant, DistanceError> {
        Ok(Accountant::pure(
            self.per_step.checked_mul_int(self.steps as u64)?,
        ))
    }

    /// The (ε, δ) guarantee after `used` sub-mechanisms ran.
    pub fn guarantee(&self, used: usize) -> Result<PrivacyLoss, DistanceError> {
        if used == 0 {
            return Ok(PrivacyLoss {
                epsilon: 0.0,
                delta: 0.0,
            });
        }
        match self.composition {
            Composition::Basic => Ok(PrivacyLoss {
                epsilon: self.per_step.checked_mul_int(used as u64)?.to_f64(),
                delta: 0.0,
            }),
            Composition::Advanced { delta } => {
                let adv = accountant::advanced(used as u64, self.per_step.to_f64(), 0.0, delta)?;
                let basic = self.per_step.checked_mul_int(used as u64)?.to_f64();
                // Basic composition also holds; report the better of the two.
                Ok(if basic <= adv.epsilon {
                    PrivacyLoss {
                        epsilon: basic,
                        delta: 0.0,
                    }
                } else {
                    adv
                })
            }
        }
    }
}

/// `ε·num/den` exactly.
pub(crate) fn fraction(e: Epsilon, num: u64, den: u64) -> Result<Epsilon, DistanceError> {
    Ok(e.checked_mul_int(num)?.checked_div_int(den)?)
}

/// An exact Laplace release (or the identity, in the test-only noise-off profile).
#[derive(Debug, Clone)]
pub(crate) struct Noise {
    mech: VectorLaplace,
    on: bool,
}

impl Noise {
    /// Laplace of scale `sensitivity/ε` on the grid, for a vector of `dim` values
    /// whose joint ℓ1 sensitivity is `sensitivity` (released coordinate by
    /// coordinate; the calibration covers the whole vector's snapped gap).
    pub(crate) fn new(
        sensitivity: f64,
        dim: usize,
        epsilon: Epsilon,
        on: bool,
    ) -> Result<Self, DistanceError> {
        Ok(Noise {
            mech: VectorLaplace::with_sensitivity(NEIGHBOURS, dim, sensitivity, epsilon)?,
            on,
        })
    }

    /// The scale actually used (after rounding the sensitivity up to the grid).
    pub(crate) fn scale(&self) -> f64 {
        self.mech.scale()
    }

    pub(crate) fn release<R: Rng + CryptoRng + ?Sized>(
        &self,
        value: f64,
        rng: &mut R,
    ) -> Result<f64, DistanceError> {
        if self.on {
            Ok(self.mech.release_one(value, rng)?)
        } else {
            Ok(value)
        }
    }
}

/// One AboveThreshold instance (Dwork–Roth Algorithm 1) for queries of sensitivity
/// Δ, run exactly on one integer lattice: values are snapped to a grid γ (half-up,
/// shift-equivariant), so neighbouring query values snap at most `G = ⌈Δ/γ⌉` steps
/// apart; the threshold gets `Lap(2G/ε₀)` steps once, each query `Lap(4G/ε₀)` steps,
/// and the comparison is between integers. This is Algorithm 1 with sensitivity G on
/// ℤ, so the instance is ε₀-DP until (and including) its first "above"; G includes a
/// margin for the floating-point error of the query values. The noisy threshold is
/// never released, nor formatted by `Debug`.
#[derive(Clone)]
pub(crate) struct AboveThreshold {
    snap: GridLaplace,
    noisy_threshold: i128,
    /// `None` in the noise-off (test) profile, which compares exact lattice points.
    query_noise: Option<DiscreteLaplace>,
}

impl std::fmt::Debug for AboveThreshold {
    // By hand, so that the secret noisy threshold is never formatted.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AboveThreshold")
            .field("snap", &self.snap)
            .finish_non_exhaustive()
    }
}

impl AboveThreshold {
    pub(crate) fn start<R: Rng + CryptoRng + ?Sized>(
        threshold: f64,
        sensitivity: f64,
        epsilon: Epsilon,
        on: bool,
        rng: &mut R,
    ) -> Result<Self, DistanceError> {
        // Query values are computed in floating point, so neighbours can differ by
        // Δ plus a few rounding errors: G covers Δ(1 + 10⁻⁹) + 2⁻³⁰.
        let margin = sensitivity * 1e-9 + f64::powi(2.0, -30);
        let snap = GridLaplace::new(fixed_ceil(sensitivity + margin)?, epsilon)?;
        let g = snap.sensitivity_steps();
        let noise = |factor: u64| -> Result<DiscreteLaplace, DistanceError> {
            let steps = g.checked_mul(factor).ok_or(privq_core::Error::Overflow)?;
            Ok(DiscreteLaplace::for_sensitivity(steps, epsilon)?)
        };
        let mut at = AboveThreshold {
            snap,
            noisy_threshold: 0,
            query_noise: None,
        };
        at.noisy_threshold = at.lattice(threshold)?;
        if on {
            at.noisy_threshold += i128::from(noise(2)?.sample(rng)?);
            at.query_noise = Some(noise(4)?);
        }
        Ok(at)
    }

    /// The lattice point of `value`. Query values are distances in [0, w]; clamping
    /// into the fixed-point range anyway means no value can turn into an error
    /// (clamping is 1-Lipschitz, so it costs nothing).
    fn lattice(&self, value: f64) -> Result<i128, DistanceError> {
        let v = value.clamp(-2.0e9, 2.0e9);
        Ok(self.snap.snap(Fixed::from_f64(v)?))
    }

    /// True when the noisy query value reaches the noisy threshold.
    pub(crate) fn above<R: Rng + CryptoRng + ?Sized>(
        &self,
        value: f64,
        rng: &mut R,
    ) -> Result<bool, DistanceError> {
        let z = match &self.query_noise {
            Some(noise) => i128::from(noise.sample(rng)?),
            None => 0,
        };
        Ok(self.lattice(value)? + z >= self.noisy_threshold)
    }
}

/// Finds the smallest α in `[lo, 1]` with `feasible(α)` by bisection on `ln α`
/// (`feasible` must be monotone); `None` when even α = 1 is infeasible.
pub(crate) fn smallest_feasible(lo: f64, feasible: impl Fn(f64) -> bool) -> Option<f64> {
    if !feasible(1.0) {
        return None;
    }
    if feasible(lo) {
        return Some(lo);
    }
    let (mut a, mut b) = (lo.ln(), 0.0f64);
    for _ in 0..60 {
        let mid = 0.5 * (a + b);
        if feasible(mid.exp()) {
            b = mid;
        } else {
            a = mid;
        }
    }
    Some(b.exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_are_exact_and_refuse_bad_input() {
        let e = Epsilon::new(1, 10).unwrap();
        let plan = Plan::new(Privacy::pure(e), 7).unwrap();
        assert_eq!(plan.per_step(), Epsilon::new(1, 70).unwrap());
        assert_eq!(plan.filter().unwrap().budget(), e);
        assert!(Plan::new(Privacy::pure(e), 0).is_err());
        assert!(Privacy::approx(e, 0.0).is_err());
        assert!(Privacy::parse("0", None).is_err());
        assert!(Privacy::parse("-1", None).is_err());
        assert!(Privacy::parse("abc", None).is_err());
        let a = Plan::new(
            Privacy::approx(Epsilon::new(1, 1).unwrap(), 1e-6).unwrap(),
            400,
        )
        .unwrap();
        assert!(matches!(a.composition(), Composition::Advanced { .. }));
        let g = a.guarantee(400).unwrap();
        assert!(g.epsilon <= 1.0 && g.delta == 1e-6, "{g:?}");
        // Few steps: basic composition is better and used.
        let b = Plan::new(
            Privacy::approx(Epsilon::new(1, 1).unwrap(), 1e-6).unwrap(),
            2,
        )
        .unwrap();
        assert_eq!(b.composition(), Composition::Basic);
    }

    #[test]
    fn bisection_finds_the_boundary() {
        let a = smallest_feasible(1e-6, |x| x >= 0.123).unwrap();
        assert!((a - 0.123).abs() < 1e-9);
        assert!(smallest_feasible(1e-6, |_| false).is_none());
    }
}

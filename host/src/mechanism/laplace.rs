//! The Laplace mechanism for vectors (on the fixed-point grid) and the geometric
//! mechanism for integer counts.

use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::sample::DiscreteLaplace;
use privq_core::{Epsilon, Fixed, GridLaplace};

use super::error::MechanismError;

/// The smallest [`Fixed`] value ≥ `x` (sensitivities are rounded **up**).
pub fn fixed_ceil(x: f64) -> Result<Fixed, MechanismError> {
    if !x.is_finite() || x <= 0.0 {
        return Err(MechanismError::InvalidParameter(format!(
            "a sensitivity must be positive and finite, got {x}"
        )));
    }
    let scaled = (x * 4_294_967_296.0).ceil();
    if scaled >= 9.2e18 {
        return Err(MechanismError::Core(privq_core::Error::OutOfRange));
    }
    Ok(Fixed::from_bits(scaled as i64))
}

/// The largest `Epsilon` of the form `a/2^k` that is ≤ `x` (k ≥ 30, chosen so that
/// `a ≥ 2^29`): a float ε turned into an exact rational with a small denominator,
/// rounded **down** (more noise), so that grid samplers do not overflow.
pub fn epsilon_at_most(x: f64) -> Result<Epsilon, MechanismError> {
    if !x.is_finite() || x <= 0.0 {
        return Err(MechanismError::InvalidParameter(format!(
            "epsilon must be positive and finite, got {x}"
        )));
    }
    let k = (29 - x.log2().floor() as i32).clamp(30, 62);
    let num = (x * (k as f64).exp2()).floor();
    if !(1.0..9.2e18).contains(&num) {
        return Err(MechanismError::Core(privq_core::Error::EpsilonTooLarge));
    }
    Ok(Epsilon::new(num as u64, 1u64 << k)?)
}

/// The Laplace mechanism for a vector with ℓ1 sensitivity Δ (Cor 2.4.6): every
/// coordinate is released through the core's [`GridLaplace`] with scale Δ/ε, i.e.
/// snapped to a power-of-two grid γ ≤ Δ/1024 plus γ × exact discrete Laplace noise.
///
/// ```
/// use privq_host::mechanism::VectorLaplace;
/// use privq_host::{Epsilon, seeded_rng};
/// // Two counting queries on counts: ℓ1 sensitivity 2.
/// let mech = VectorLaplace::new(2.0, Epsilon::new(1, 2)?)?;
/// let mut rng = seeded_rng(1); // fixed seed: tests only
/// let noisy = mech.release(&[120.0, 37.5], &mut rng)?;
/// assert_eq!(noisy.len(), 2);
/// # Ok::<(), privq_host::mechanism::MechanismError>(())
/// ```
#[derive(Debug, Clone)]
pub struct VectorLaplace {
    mech: GridLaplace,
}

impl VectorLaplace {
    /// For ℓ1 sensitivity `sensitivity` (rounded up to the grid) and budget ε.
    pub fn new(sensitivity: f64, epsilon: Epsilon) -> Result<Self, MechanismError> {
        Ok(VectorLaplace {
            mech: GridLaplace::new(fixed_ceil(sensitivity)?, epsilon)?,
        })
    }

    /// The noise scale Δ/ε actually used (after rounding Δ up to the grid).
    pub fn scale(&self) -> f64 {
        let m = self.mech.sensitivity_steps() as f64 * self.mech.grid().to_f64();
        m / self.mech.epsilon().to_f64()
    }

    /// The underlying grid mechanism.
    pub fn grid_mechanism(&self) -> &GridLaplace {
        &self.mech
    }

    /// Releases one value.
    pub fn release_one<R: Rng + CryptoRng + ?Sized>(
        &self,
        value: f64,
        rng: &mut R,
    ) -> Result<f64, MechanismError> {
        let v = Fixed::from_f64(value)?;
        Ok(self.mech.release(v, rng)?.to_f64())
    }

    /// Releases every coordinate.
    pub fn release<R: Rng + CryptoRng + ?Sized>(
        &self,
        values: &[f64],
        rng: &mut R,
    ) -> Result<Vec<f64>, MechanismError> {
        values.iter().map(|&v| self.release_one(v, rng)).collect()
    }
}

/// The geometric mechanism for integer counts with integer ℓ1 sensitivity Δ: add
/// exact discrete Laplace noise of scale Δ/ε to each count.
///
/// ```
/// use privq_host::mechanism::Geometric;
/// use privq_host::{Epsilon, seeded_rng};
/// let mech = Geometric::new(1, Epsilon::new(1, 1)?)?;
/// let noisy = mech.release(&[10, 0, 3], &mut seeded_rng(2))?;
/// assert_eq!(noisy.len(), 3);
/// # Ok::<(), privq_host::mechanism::MechanismError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Geometric {
    noise: DiscreteLaplace,
}

impl Geometric {
    /// For ℓ1 sensitivity `sensitivity` ≥ 1 and budget ε.
    pub fn new(sensitivity: u64, epsilon: Epsilon) -> Result<Self, MechanismError> {
        Ok(Geometric {
            noise: DiscreteLaplace::for_sensitivity(sensitivity, epsilon)?,
        })
    }

    /// The scale Δ/ε.
    pub fn scale(&self) -> f64 {
        self.noise.scale_num() as f64 / self.noise.scale_den() as f64
    }

    /// Releases one count.
    pub fn release_one<R: Rng + CryptoRng + ?Sized>(
        &self,
        count: u64,
        rng: &mut R,
    ) -> Result<i64, MechanismError> {
        let c = i64::try_from(count).map_err(|_| privq_core::Error::Overflow)?;
        c.checked_add(self.noise.sample(rng)?)
            .ok_or(MechanismError::Core(privq_core::Error::Overflow))
    }

    /// Releases every count.
    pub fn release<R: Rng + CryptoRng + ?Sized>(
        &self,
        counts: &[u64],
        rng: &mut R,
    ) -> Result<Vec<i64>, MechanismError> {
        counts.iter().map(|&c| self.release_one(c, rng)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded_rng;

    #[test]
    fn laplace_mean_abs_error_matches_scale() {
        let eps = Epsilon::new(1, 2).unwrap();
        let mech = VectorLaplace::new(1.0, eps).unwrap();
        assert!((mech.scale() - 2.0).abs() < 1e-12);
        let mut rng = seeded_rng(5);
        let n = 40_000;
        let mut abs = 0.0;
        for _ in 0..n {
            abs += (mech.release_one(10.0, &mut rng).unwrap() - 10.0).abs();
        }
        // E|Lap(2)| = 2 (Lemma 2.4.2); sd of the mean ≈ 2/√n.
        assert!((abs / n as f64 - 2.0).abs() < 0.05, "{}", abs / n as f64);
        assert!(VectorLaplace::new(0.0, eps).is_err());
        assert!(VectorLaplace::new(f64::NAN, eps).is_err());
    }

    #[test]
    fn epsilon_rounds_down_with_small_denominators() {
        for x in [1.0, 0.1, 1e-6, 3.7, 1e5] {
            let e = epsilon_at_most(x).unwrap();
            assert!(e.to_f64() <= x && e.to_f64() > x * (1.0 - 1e-8), "{x}");
            assert!(e.den() <= 1 << 62);
        }
        assert!(epsilon_at_most(0.0).is_err());
    }

    #[test]
    fn geometric_is_unbiased() {
        let mech = Geometric::new(1, Epsilon::new(1, 1).unwrap()).unwrap();
        let mut rng = seeded_rng(6);
        let s: i64 = (0..20_000)
            .map(|_| mech.release_one(100, &mut rng).unwrap() - 100)
            .sum();
        assert!((s as f64 / 20_000.0).abs() < 0.05);
    }
}

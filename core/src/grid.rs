//! The Laplace and Gaussian mechanisms on a fixed-point grid.

use rand_core::{CryptoRng, Rng};

use crate::epsilon::Epsilon;
use crate::error::{Error, Result};
use crate::fixed::Fixed;
use crate::rho::Rho;
use crate::sample::{DiscreteGaussian, DiscreteLaplace, IntegerNoise};

/// Grid exponents are chosen so that γ ≤ Δ/2¹⁰ by default.
const DEFAULT_GRID_BELOW_SENSITIVITY: i32 = 10;

/// The Laplace mechanism realised exactly on a power-of-two grid γ = 2^k.
///
/// A release snaps the value to the nearest multiple of γ, then adds γ·Z with `Z`
/// discrete Laplace of scale `m/ε`, where `m = ⌈Δ/γ⌉` is the sensitivity rounded up
/// to the grid. Snapping to nearest commutes with shifts by whole grid steps, so two
/// inputs at distance ≤ Δ snap to points at most `m` steps apart and the release is
/// ε-differentially private. The grid depends only on the public Δ (never on the
/// value), so every output lies on the same lattice γ·ℤ whatever the input.
///
/// Outputs that would leave the [`Fixed`] range are clamped to the last grid point
/// inside it; clamping is post-processing and costs no privacy.
///
/// ```
/// use privq_core::{Epsilon, Fixed, GridLaplace};
/// use privq_core::rng::ChaCha12;
/// use rand_core::SeedableRng;
///
/// let mech = GridLaplace::new("1".parse()?, Epsilon::new(1, 2)?)?;
/// assert_eq!(mech.grid(), Fixed::pow2(-10)?);
/// let mut rng = ChaCha12::from_seed([0; 32]); // tests only: a device seeds from its TRNG
/// let released = mech.release("36.6".parse()?, &mut rng)?;
/// // On the lattice 2^-10 · ℤ:
/// assert_eq!(released.to_bits() % (1 << 22), 0);
/// # Ok::<(), privq_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct GridLaplace<N = DiscreteLaplace> {
    grid_exp: i32,
    sensitivity_steps: u64,
    epsilon: Epsilon,
    noise: N,
}

impl GridLaplace<DiscreteLaplace> {
    /// Mechanism for sensitivity Δ and ε, on the default grid: the largest power of
    /// two γ ≤ Δ/2¹⁰ (but at least 2⁻³²).
    pub fn new(sensitivity: Fixed, epsilon: Epsilon) -> Result<Self> {
        let grid_exp = default_grid_exp(sensitivity)?;
        Self::with_grid(sensitivity, epsilon, grid_exp)
    }

    /// Mechanism on the grid γ = 2^`grid_exp`, `grid_exp ∈ [−32, 30]`.
    pub fn with_grid(sensitivity: Fixed, epsilon: Epsilon, grid_exp: i32) -> Result<Self> {
        let steps = sensitivity_steps(sensitivity, grid_exp)?;
        let noise = DiscreteLaplace::for_sensitivity(steps, epsilon)?;
        Ok(GridLaplace {
            grid_exp,
            sensitivity_steps: steps,
            epsilon,
            noise,
        })
    }
}

impl<N: IntegerNoise> GridLaplace<N> {
    /// The same mechanism with another integer noise sampler of scale `m/ε`, built by
    /// `make(num, den)` (e.g. [`BoundedDiscreteLaplace::new`](crate::sample::BoundedDiscreteLaplace::new)).
    pub fn with_noise<M: IntegerNoise>(
        &self,
        make: impl FnOnce(u64, u64) -> Result<M>,
    ) -> Result<GridLaplace<M>> {
        let scale = DiscreteLaplace::for_sensitivity(self.sensitivity_steps, self.epsilon)?;
        Ok(GridLaplace {
            grid_exp: self.grid_exp,
            sensitivity_steps: self.sensitivity_steps,
            epsilon: self.epsilon,
            noise: make(scale.scale_num(), scale.scale_den())?,
        })
    }

    /// The grid step γ.
    pub fn grid(&self) -> Fixed {
        Fixed::from_bits(1i64 << (self.grid_exp + 32))
    }

    /// `k` with γ = 2^k.
    pub fn grid_exp(&self) -> i32 {
        self.grid_exp
    }

    /// The sensitivity rounded up to the grid, in grid steps (`m`).
    pub fn sensitivity_steps(&self) -> u64 {
        self.sensitivity_steps
    }

    /// The privacy parameter ε.
    pub fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    /// The integer noise sampler (scale `m/ε` in grid steps).
    pub fn noise(&self) -> &N {
        &self.noise
    }

    /// The grid point `value` snaps to, in grid steps (nearest, ties upward; see
    /// [`GridLaplace::release`]). Inputs at distance `d` snap at most `⌈d/γ⌉` steps apart.
    pub fn snap(&self, value: Fixed) -> i128 {
        snap(value, self.grid_exp)
    }

    /// `log2` of δ (`None` for pure ε-DP).
    pub fn delta_log2(&self) -> Option<i32> {
        self.noise.delta_log2()
    }

    /// Releases `value` with noise. Requires a cryptographically secure RNG.
    pub fn release<R: Rng + CryptoRng + ?Sized>(&self, value: Fixed, rng: &mut R) -> Result<Fixed> {
        let snapped = snap(value, self.grid_exp);
        let z = self.noise.sample(rng)?;
        Ok(on_grid(snapped, z, self.grid_exp))
    }
}

/// The Gaussian mechanism realised exactly on a power-of-two grid γ = 2^k: the value
/// snapped to the nearest multiple of γ, plus γ·Z with `Z` discrete Gaussian
/// (Canonne–Kamath–Steinke 2020, Algorithm 3) of variance parameter
/// σ² = m²/(2ρ) grid steps², where `m = ⌈Δ/γ⌉` is the sensitivity rounded up to the
/// grid. Inputs at distance ≤ Δ snap at most `m` steps apart, so the release is
/// ρ-zCDP with ρ = m²/(2σ²) (CKS20 Thm. 14), computed in grid units exactly. The grid
/// depends only on the public Δ; clamping at the [`Fixed`] range is post-processing.
///
/// ```
/// use privq_core::{Fixed, GridGaussian, Rho};
/// use privq_core::rng::ChaCha12;
/// use rand_core::SeedableRng;
///
/// let mech = GridGaussian::with_grid("1".parse()?, Rho::new(1, 2)?, -2)?;
/// assert_eq!(mech.sensitivity_steps(), 4); // Δ = 1 is 4 steps of 1/4
/// assert_eq!(mech.noise().sigma_squared().num(), 16); // σ² = 4²/(2·½) steps²
/// let mut rng = ChaCha12::from_seed([0; 32]); // tests only: a device seeds from its TRNG
/// let released = mech.release("36.6".parse()?, &mut rng)?;
/// assert_eq!(released.to_bits() % (1 << 30), 0); // on the lattice 2^-2 · ℤ
/// # Ok::<(), privq_core::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct GridGaussian {
    grid_exp: i32,
    sensitivity_steps: u64,
    rho: Rho,
    noise: DiscreteGaussian,
}

impl GridGaussian {
    /// Mechanism for sensitivity Δ and ρ on the default grid: the largest power of two
    /// γ ≤ Δ/2¹⁰ (but at least 2⁻³²), as for [`GridLaplace::new`].
    pub fn new(sensitivity: Fixed, rho: Rho) -> Result<Self> {
        let grid_exp = default_grid_exp(sensitivity)?;
        Self::with_grid(sensitivity, rho, grid_exp)
    }

    /// Mechanism on the grid γ = 2^`grid_exp`, `grid_exp ∈ [−32, 30]`. σ² is exact
    /// when the sampler supports it, else rounded up (see
    /// [`DiscreteGaussian::for_sensitivity`]); [`rho`](Self::rho) is then an upper bound.
    pub fn with_grid(sensitivity: Fixed, rho: Rho, grid_exp: i32) -> Result<Self> {
        let steps = sensitivity_steps(sensitivity, grid_exp)?;
        let noise = DiscreteGaussian::for_sensitivity(steps, rho)?;
        Ok(GridGaussian {
            grid_exp,
            sensitivity_steps: steps,
            rho,
            noise,
        })
    }

    /// The grid step γ.
    pub fn grid(&self) -> Fixed {
        Fixed::from_bits(1i64 << (self.grid_exp + 32))
    }

    /// `k` with γ = 2^k.
    pub fn grid_exp(&self) -> i32 {
        self.grid_exp
    }

    /// The sensitivity rounded up to the grid, in grid steps (`m`).
    pub fn sensitivity_steps(&self) -> u64 {
        self.sensitivity_steps
    }

    /// The ρ the release satisfies (the requested one; an upper bound when σ² was
    /// rounded up).
    pub fn rho(&self) -> Rho {
        self.rho
    }

    /// The integer noise sampler (σ² in grid steps²).
    pub fn noise(&self) -> &DiscreteGaussian {
        &self.noise
    }

    /// The grid point `value` snaps to, in grid steps (see [`GridLaplace::snap`]).
    pub fn snap(&self, value: Fixed) -> i128 {
        snap(value, self.grid_exp)
    }

    /// Releases `value` with noise. Requires a cryptographically secure RNG.
    pub fn release<R: Rng + CryptoRng + ?Sized>(&self, value: Fixed, rng: &mut R) -> Result<Fixed> {
        let snapped = snap(value, self.grid_exp);
        let z = self.noise.sample(rng)?;
        Ok(on_grid(snapped, z, self.grid_exp))
    }
}

/// `(snapped + z)·γ` as a [`Fixed`], clamped to the last grid points inside its range.
#[inline]
fn on_grid(snapped: i128, z: i64, grid_exp: i32) -> Fixed {
    let step = 1i128 << (grid_exp + 32);
    let lo = i128::from(i64::MIN).div_euclid(step) + 1;
    let hi = i128::from(i64::MAX).div_euclid(step);
    let steps = (snapped + i128::from(z)).clamp(lo, hi);
    // In range by the clamp.
    Fixed::from_bits((steps * step) as i64)
}

/// The nearest grid point of γ = 2^`grid_exp`, in grid steps, ties upward:
/// `⌊(v + γ/2)/γ⌋`. It commutes with shifts by whole grid steps, so inputs at distance
/// `d` snap to points at most `⌈d/γ⌉` steps apart.
fn snap(value: Fixed, grid_exp: i32) -> i128 {
    let step = 1i128 << (grid_exp + 32);
    (i128::from(value.to_bits()) + step / 2).div_euclid(step)
}

fn default_grid_exp(sensitivity: Fixed) -> Result<i32> {
    let bits = sensitivity.to_bits();
    if bits <= 0 {
        return Err(Error::SensitivityNotPositive);
    }
    // floor(log2(Δ)) in fixed-point units, minus the margin.
    let log2 = 63 - bits.leading_zeros() as i32 - 32;
    Ok((log2 - DEFAULT_GRID_BELOW_SENSITIVITY).clamp(-32, 30))
}

fn sensitivity_steps(sensitivity: Fixed, grid_exp: i32) -> Result<u64> {
    let step = Fixed::pow2(grid_exp)?.to_bits();
    let bits = sensitivity.to_bits();
    if bits <= 0 {
        return Err(Error::SensitivityNotPositive);
    }
    // Both positive: the ceiling division is exact integer arithmetic.
    Ok((bits as u64).div_ceil(step as u64))
}

/// One-shot Laplace release of `value` with sensitivity Δ and ε on the default grid.
/// See [`GridLaplace`].
pub fn laplace_on_grid<R: Rng + CryptoRng + ?Sized>(
    value: Fixed,
    sensitivity: Fixed,
    epsilon: Epsilon,
    rng: &mut R,
) -> Result<Fixed> {
    GridLaplace::new(sensitivity, epsilon)?.release(value, rng)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::BoundedDiscreteLaplace;
    use rand_chacha::ChaCha12Rng;
    use rand_core::SeedableRng;

    fn fx(s: &str) -> Fixed {
        s.parse().unwrap()
    }

    #[test]
    fn grid_and_steps() {
        let eps = Epsilon::new(1, 1).unwrap();
        let m = GridLaplace::new(fx("3"), eps).unwrap();
        assert_eq!(m.grid_exp(), 1 - 10);
        assert_eq!(m.sensitivity_steps(), 3 * 512);
        let m = GridLaplace::with_grid(fx("0.3"), eps, -2).unwrap();
        assert_eq!(m.sensitivity_steps(), 2); // 0.3 rounds up to 0.5 = 2 · 0.25
        let tiny = GridLaplace::new(Fixed::from_bits(3), eps).unwrap();
        assert_eq!(tiny.grid_exp(), -32);
        assert_eq!(tiny.sensitivity_steps(), 3);
    }

    #[test]
    fn rejects_bad_input() {
        let eps = Epsilon::new(1, 1).unwrap();
        assert_eq!(
            GridLaplace::new(Fixed::ZERO, eps).unwrap_err(),
            Error::SensitivityNotPositive
        );
        assert_eq!(
            GridLaplace::new(fx("-1"), eps).unwrap_err(),
            Error::SensitivityNotPositive
        );
        assert_eq!(
            GridLaplace::with_grid(fx("1"), eps, 40).unwrap_err(),
            Error::GridOutOfRange
        );
    }

    #[test]
    fn clamps_at_the_range_edges_on_the_lattice() {
        let eps = Epsilon::new(1, 1000).unwrap();
        let m = GridLaplace::with_grid(fx("1000"), eps, 0).unwrap();
        let mut rng = ChaCha12Rng::seed_from_u64(3);
        for _ in 0..200 {
            let out = m.release(Fixed::MAX, &mut rng).unwrap();
            assert_eq!(out.to_bits() % (1 << 32), 0);
            assert!(out.to_bits() <= Fixed::MAX.to_bits());
        }
    }

    #[test]
    fn snapping_is_half_up_and_shift_equivariant() {
        for exp in [-32, -10, 0, 3] {
            let step = 1i64 << (exp + 32);
            for k in -20i64..20 {
                // The tie (k + ½)γ snaps to k + 1; one unit below it to k.
                let tie = Fixed::from_bits(k * step + step / 2);
                if exp == -32 {
                    // γ = one unit: every value is a grid point.
                    assert_eq!(snap(tie, exp), i128::from(k * step + step / 2));
                    continue;
                }
                assert_eq!(snap(tie, exp), i128::from(k + 1), "{exp} {k}");
                let below = Fixed::from_bits(k * step + step / 2 - 1);
                assert_eq!(snap(below, exp), i128::from(k));
                // Shifting the input by j steps shifts the snapped point by j.
                for j in [-3i64, 1, 7] {
                    let shifted = Fixed::from_bits(tie.to_bits() + j * step);
                    assert_eq!(snap(shifted, exp), snap(tie, exp) + i128::from(j));
                }
            }
        }
    }

    #[test]
    fn gaussian_grid_computes_rho_in_grid_units() {
        let rho = Rho::new(1, 8).unwrap();
        let m = GridGaussian::with_grid(fx("0.3"), rho, -2).unwrap();
        // 0.3 rounds up to 2 steps of 1/4; σ² = 2²/(2·⅛) = 16 steps².
        assert_eq!(m.sensitivity_steps(), 2);
        assert_eq!(m.noise().sigma_squared().num(), 16);
        assert_eq!(m.noise().rho_for(2).unwrap(), rho);
        assert_eq!(m.rho(), rho);
        let d = GridGaussian::new(fx("3"), rho).unwrap();
        assert_eq!(d.grid_exp(), 1 - 10);
        assert_eq!(d.sensitivity_steps(), 3 * 512);
        assert_eq!(
            GridGaussian::new(Fixed::ZERO, rho).unwrap_err(),
            Error::SensitivityNotPositive
        );
        assert_eq!(
            GridGaussian::with_grid(fx("1"), rho, 40).unwrap_err(),
            Error::GridOutOfRange
        );
        let mut rng = ChaCha12Rng::seed_from_u64(8);
        for v in ["5", "-7.3", "0"] {
            let out = d.release(fx(v), &mut rng).unwrap();
            assert_eq!(out.to_bits() % (1 << 23), 0);
        }
        let out = d.release(Fixed::MAX, &mut rng).unwrap();
        assert!(out.to_bits() <= Fixed::MAX.to_bits());
    }

    #[test]
    fn bounded_noise_plugs_in() {
        let eps = Epsilon::new(1, 2).unwrap();
        let m = GridLaplace::new(fx("1"), eps).unwrap();
        let b = m.with_noise(BoundedDiscreteLaplace::new).unwrap();
        assert_eq!(b.delta_log2(), Some(-64));
        assert_eq!(m.delta_log2(), None);
        let mut rng = ChaCha12Rng::seed_from_u64(4);
        let out = b.release(fx("5"), &mut rng).unwrap();
        assert_eq!(out.to_bits() % (1 << 22), 0);
    }
}

//! The d_X-private exponential mechanism (Definition 9, Theorem 3).

use privq_core::Epsilon;
use privq_core::rand_core::{CryptoRng, Rng};

use super::DxError;
use crate::mechanism::ExponentialMechanism;

/// `M_{Exp,c}(x, u')`: outputs `r` with probability `∝ exp(u'(x,r)/(2c))`. By
/// Theorem 3 it is d_X-private when `Δu'(i,j) ≤ c·d_X(i,j)` for all pairs.
///
/// Sampling is exact (the privq exponential mechanism with ε = 1 and sensitivity
/// `c(1+η)`): scores are floored to a grid γ ≤ c(1+η)/2²⁰, which can add one grid
/// unit to a pair's score difference; `η = 2⁻¹⁹/d_min` (with `d_min` the smallest
/// budget of a pair the utility separates) absorbs that unit, so the loss on every
/// pair stays ≤ `d_X(i, j)`.
///
/// ```
/// use privq_host::dx::DxExponential;
/// use privq_host::seeded_rng;
/// let em = DxExponential::new(0.5, 1.0)?;
/// let p = em.probabilities(&[0.0, 1.0])?;
/// assert!((p[1] / p[0] - 1f64.exp()).abs() < 1e-3); // exp(Δ/(2c)) = e
/// let r = em.select(&[0.0, 1.0], &mut seeded_rng(2))?; // fixed seed: tests only
/// assert!(r < 2);
/// # Ok::<(), privq_host::dx::DxError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct DxExponential {
    inner: ExponentialMechanism,
    c: f64,
}

impl DxExponential {
    /// Scale `c > 0`; `d_min > 0` is the smallest finite budget of the metric.
    pub fn new(c: f64, d_min: f64) -> Result<Self, DxError> {
        if !(c.is_finite() && c > 0.0) {
            return Err(DxError::InvalidValue(format!(
                "the exponential scale c must be positive, got {c}"
            )));
        }
        if d_min.is_nan() || d_min <= 0.0 {
            return Err(DxError::InvalidValue(format!(
                "d_min must be positive, got {d_min}"
            )));
        }
        let eta = if d_min.is_finite() {
            2f64.powi(-19) / d_min
        } else {
            0.0
        };
        let inner = ExponentialMechanism::new(Epsilon::new(1, 1)?, c * (1.0 + eta))?;
        Ok(DxExponential { inner, c })
    }

    /// The nominal scale `c`.
    pub fn scale(&self) -> f64 {
        self.c
    }

    /// The exact selection probabilities (floating-point report of the quantised pmf).
    pub fn probabilities(&self, scores: &[f64]) -> Result<Vec<f64>, DxError> {
        Ok(self.inner.probabilities(scores)?)
    }

    /// Draws an index. Requires a secure RNG.
    pub fn select<R: Rng + CryptoRng + ?Sized>(
        &self,
        scores: &[f64],
        rng: &mut R,
    ) -> Result<usize, DxError> {
        Ok(self.inner.select(scores, rng)?)
    }
}

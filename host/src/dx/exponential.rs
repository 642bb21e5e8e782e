//! The d_X-private exponential mechanism (Definition 9, Theorem 3).

use privq_core::Epsilon;
use privq_core::rand_core::{CryptoRng, Rng};

use super::DxError;
use crate::central::ExponentialMechanism;

/// `M_{Exp,c}(x, u')`: outputs `r` with probability `∝ exp(u'(x,r)/(2c))`. By
/// Theorem 3 it is d_X-private when `Δu'(i,j) ≤ c·d_X(i,j)` for all pairs.
///
/// Sampling is exact (the privq exponential mechanism with ε = 1): scores are
/// floored to a grid γ, which can add one grid unit to a pair's score difference —
/// an extra loss that does not shrink with `d_X(i, j)`. The mechanism is therefore
/// run with sensitivity `S = c + γ/d_min` (`d_min` the smallest finite budget of a
/// pair): a pair at distance `d ≥ d_min` has floored gap `≤ ⌈c·d/γ⌉ < c·d/γ + 1 ≤
/// d·S/γ` units, so its loss stays ≤ `d` for **every** `d_min`. The grid is
/// `γ ≤ c·d_min·2⁻²⁰` (coarser, down to `2⁻¹⁰`, only if the exact sampler needs it),
/// so the noise exceeds the nominal `c` by a factor ≤ `1 + 2⁻¹⁰`; a `d_min` too small
/// for that is refused with [`DxError::DminTooSmall`].
///
/// Selection is crate-internal: [`SmallDb`](super::SmallDb) and
/// [`DxMwem`](super::DxMwem) check the Lipschitz condition on their metric and
/// charge its spend before they select; the public surface reports the exact
/// selection probabilities.
///
/// ```
/// use privq_host::dx::DxExponential;
/// let em = DxExponential::new(0.5, 1.0)?;
/// let p = em.probabilities(&[0.0, 1.0])?;
/// assert!((p[1] / p[0] - 1f64.exp()).abs() < 1e-3); // exp(Δ/(2c)) = e
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
        let one = Epsilon::new(1, 1)?;
        if !d_min.is_finite() {
            // No pair is separated by a finite budget: nothing to cover.
            let inner = ExponentialMechanism::new(one, c)?;
            return Ok(DxExponential { inner, c });
        }
        // ⌊log2(c·d_min)⌋ − 1: one step of margin for the rounding of the product.
        let Some(log2_cd) = log2_floor(c * d_min) else {
            return Err(DxError::DminTooSmall { d_min, c });
        };
        let inner = (10..=20)
            .rev()
            .find_map(|bits| {
                let grid_exp = log2_cd - 1 - bits;
                let gamma = pow2(grid_exp)?;
                // S = c + γ/d_min, rounded up (float error ≤ 2⁻⁵² relative per step).
                let s = (c + gamma / d_min) * (1.0 + 1e-12);
                ExponentialMechanism::on_grid(one, s, grid_exp)
            })
            .ok_or(DxError::DminTooSmall { d_min, c })?;
        Ok(DxExponential { inner, c })
    }

    /// The sensitivity `S = c + γ/d_min` the exact mechanism runs with (≥ c).
    pub fn effective_scale(&self) -> f64 {
        self.inner.sensitivity()
    }

    /// The nominal scale `c`.
    pub fn scale(&self) -> f64 {
        self.c
    }

    /// The exact selection probabilities (floating-point report of the quantised pmf).
    pub fn probabilities(&self, scores: &[f64]) -> Result<Vec<f64>, DxError> {
        Ok(self.inner.probabilities(scores)?)
    }

    /// The grid exponent g (γ = 2^g) scores are floored to.
    pub(crate) fn grid_exp(&self) -> i32 {
        self.inner.grid_exp()
    }

    /// Draws an index from scores given exactly on the grid (`⌊s/γ⌋`), the caller
    /// having charged the spend.
    pub(crate) fn select_units<R: Rng + CryptoRng + ?Sized>(
        &self,
        units: &[i128],
        rng: &mut R,
    ) -> Result<usize, DxError> {
        Ok(self.inner.select_quantized(units, rng)?)
    }
}

/// `⌊log2 x⌋` for a positive normal `x` (from its exponent bits, exact).
fn log2_floor(x: f64) -> Option<i32> {
    let biased = ((x.to_bits() >> 52) & 0x7ff) as i32;
    (x > 0.0 && biased != 0 && biased != 0x7ff).then_some(biased - 1023)
}

/// 2^k exactly, for a normal result.
fn pow2(k: i32) -> Option<f64> {
    (-1022..=1023)
        .contains(&k)
        .then(|| f64::from_bits(((1023 + k) as u64) << 52))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The grid-level loss of the closest pair, exactly: scores `u(x, ·)` and
    /// `u(x′, ·)` differ by `c·d` on one candidate; placed just below a grid point so
    /// the floor adds a whole unit, the floored gap is `⌈c·d/γ⌉ + …`; the loss of the
    /// exact mechanism (ε = 1, Δ̃ units) is `gap/Δ̃` and must stay ≤ d.
    fn closest_pair_ok(em: &DxExponential, c: f64, d: f64) -> (u128, f64) {
        let gamma = pow2(em.inner.grid_exp()).unwrap();
        let units = em.inner.sensitivity_units();
        // u(x, 1) a hair above a grid point minus …: pick s with ⌊s/γ⌋ = K − 1 and
        // ⌊(s + c·d)/γ⌋ as large as possible.
        let k = 1000.0;
        let s = k * gamma - gamma * 2f64.powi(-30);
        let scores = [0.0, s];
        let neighbour = [0.0, s + c * d];
        let q = em.inner.quantize(&scores).unwrap();
        let q2 = em.inner.quantize(&neighbour).unwrap();
        let gap = (q2[1] - q[1]).unsigned_abs() + (q2[0] - q[0]).unsigned_abs();
        // Loss gap/Δ̃ ≤ d  ⇔  gap ≤ d·Δ̃ (d a power of two here: exact in f64).
        (gap, d * units as f64)
    }

    #[test]
    fn the_rounding_unit_is_covered_for_every_d_min() {
        for &d_min in &[1.0, 2f64.powi(-19), 2f64.powi(-25), 2f64.powi(-40)] {
            for &c in &[1.0, 0.25, 3.0] {
                let em = DxExponential::new(c, d_min).unwrap();
                let (gap, allowed) = closest_pair_ok(&em, c, d_min);
                assert!(gap >= 1, "the test pair must cross a grid point");
                assert!(
                    gap as f64 <= allowed,
                    "c = {c}, d_min = {d_min}: floored gap {gap} units > d·Δ̃ = {allowed}"
                );
                // Farther pairs are covered too (loss is linear in d plus one unit).
                let (gap, allowed) = closest_pair_ok(&em, c, 4.0 * d_min);
                assert!(gap as f64 <= allowed);
                // The noise exceeds the nominal c by at most 2⁻¹⁰.
                assert!(em.effective_scale() >= c);
                assert!(em.effective_scale() <= c * (1.0 + 2f64.powi(-10)));
            }
        }
        // Old margin η = 2⁻¹⁹/d_min at d_min = 2⁻²⁵, c = 1: grid 2⁻¹⁴, Δ̃ = 65·2¹⁴,
        // and the one-unit gap of the closest pair gives loss 1/(65·2¹⁴) ≈ 31·d_min.
        let old = ExponentialMechanism::new(Epsilon::new(1, 1).unwrap(), 65.0).unwrap();
        let d_min = 2f64.powi(-25);
        assert!(1.0 > d_min * old.sensitivity_units() as f64);
    }

    #[test]
    fn refuses_what_it_cannot_cover() {
        assert!(matches!(
            DxExponential::new(1.0, 1e-300),
            Err(DxError::DminTooSmall { .. })
        ));
        assert!(DxExponential::new(1.0, f64::INFINITY).is_ok());
        assert!(DxExponential::new(1.0, 0.0).is_err());
    }
}

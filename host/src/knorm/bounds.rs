//! Error bounds of thesis §3.2–3.3 for small d: the volume radius, the volume lower
//! bound every ε-DP mechanism obeys (Thm 3.2.3), and KM's upper bound (Thm 3.3.3).
//! Floats throughout: these are reports, not releases.

use privq_core::rand_core::Rng;

use super::KnormError;
use super::body::{Body, Shape};
use super::sample::uniform_cube;
use crate::stats::ln_gamma;

/// The largest d [`volume_radius`] estimates by Monte Carlo (the hit rate of `K` in
/// its bounding cube falls like `vr(K)ᵈ/…`; above this it is too small to count).
pub const MAX_MONTE_CARLO_DIM: usize = 8;

/// `ln Vol(B₂ᵈ) = (d/2) ln π − ln Γ(d/2 + 1)`.
fn ln_ball_volume(d: usize) -> f64 {
    let h = d as f64 / 2.0;
    h * std::f64::consts::PI.ln() - ln_gamma(h + 1.0)
}

/// The volume radius `vr(K) = (Vol K / Vol B₂ᵈ)^{1/d}` (thesis §3.1, the
/// normalisation of footnote L662): exact on the cross-polytope (`Vol = 2ᵈ/d!`) and
/// the cube (`2ᵈ`); otherwise a Monte Carlo estimate from `samples` uniform points
/// of the bounding cube `B∞ᵈ ⊇ K` (one gauge LP each), for `d ≤`
/// [`MAX_MONTE_CARLO_DIM`].
///
/// ```
/// use privq_host::knorm::{Body, bounds::volume_radius};
/// use privq_host::seeded_rng;
/// // The square [−1, 1]²: vr = (4/π)^{1/2}.
/// let vr = volume_radius(&Body::hypercube(2)?, 0, &mut seeded_rng(1))?;
/// assert!((vr - (4.0 / std::f64::consts::PI).sqrt()).abs() < 1e-12);
/// # Ok::<(), privq_host::knorm::KnormError>(())
/// ```
pub fn volume_radius<R: Rng + ?Sized>(
    body: &Body,
    samples: usize,
    rng: &mut R,
) -> Result<f64, KnormError> {
    let d = body.dim();
    let df = d as f64;
    let ln_vol = match body.shape() {
        Shape::CrossPolytope => df * 2f64.ln() - ln_gamma(df + 1.0),
        Shape::Cube => df * 2f64.ln(),
        Shape::General => {
            if d > MAX_MONTE_CARLO_DIM || samples == 0 {
                return Err(KnormError::InvalidParameter(format!(
                    "a Monte Carlo volume needs d <= {MAX_MONTE_CARLO_DIM} and samples > 0 \
                     (d = {d}, samples = {samples})"
                )));
            }
            let mut hits = 0usize;
            for _ in 0..samples {
                if body.contains(&uniform_cube(d, rng))? {
                    hits += 1;
                }
            }
            if hits == 0 {
                return Ok(0.0);
            }
            df * 2f64.ln() + (hits as f64 / samples as f64).ln()
        }
    };
    Ok(((ln_vol - ln_ball_volume(d)) / df).exp())
}

/// Thesis Thm 3.2.3 in its explicit form: for `d ≥ 2`, every ε-DP mechanism for
/// `F` has ℓ2 error `err(M, F) > d·vr(K)/(16ε)` (None for `d < 2`).
pub fn volume_lower_bound(d: usize, vr: f64, epsilon: f64) -> Option<f64> {
    (d >= 2).then(|| d as f64 * vr / (16.0 * epsilon))
}

/// Thesis Thm 3.3.3 (eq. 3.9 prints `Γ(d)`; the proof gives `Γ(d + 1)`): KM's ℓ2 error is at most
/// `(d + 1)·mr(K)/ε`, where `mr(K) = E_{z ∼ Unif K}‖z‖₂`.
pub fn km_error_bound(d: usize, mean_radius: f64, epsilon: f64) -> f64 {
    (d as f64 + 1.0) * mean_radius / epsilon
}

/// `E zᵢ²` for `z ∼ Unif(K)` on the closed-form bodies, which are isotropic:
/// `2/((d + 1)(d + 2))` on `B₁ᵈ`, `1/3` on `B∞ᵈ` (None on a general body).
pub fn coordinate_second_moment(body: &Body) -> Option<f64> {
    let d = body.dim() as f64;
    match body.shape() {
        Shape::CrossPolytope => Some(2.0 / ((d + 1.0) * (d + 2.0))),
        Shape::Cube => Some(1.0 / 3.0),
        Shape::General => None,
    }
}

/// Thm 3.3.3 with p = 2, as an identity: KM's `E‖w‖₂² = θ²(d + 1)(d + 2)·E‖z‖₂²`
/// for `w = r·z`, `r ∼ Gamma(d + 1, θ)` independent of `z ∼ Unif(K)`.
pub fn km_squared_error(d: usize, theta: f64, second_moment: f64) -> f64 {
    let d = d as f64;
    theta * theta * (d + 1.0) * (d + 2.0) * second_moment
}

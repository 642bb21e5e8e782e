//! Floating-point samplers for the K-norm noise: Gamma radii, exact uniform points
//! of the cross-polytope and the cube, and hit-and-run on a general body.
//!
//! These are floating-point samplers (see the privacy status in [`super`]): they
//! never see the data, and the mechanism snaps what they return to a
//! data-independent grid.

use privq_core::rand_core::Rng;

use super::KnormError;
use super::body::{Body, Shape};

/// A uniform double in `(0, 1]`: `(k + 1)·2⁻⁵³` for a uniform 53-bit `k`.
pub(crate) fn uniform_open<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    ((rng.next_u64() >> 11) + 1) as f64 * (1.0 / 9_007_199_254_740_992.0)
}

/// A standard exponential: `−ln U`, `U ∈ (0, 1]`.
pub(crate) fn exponential<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    -uniform_open(rng).ln()
}

/// `Gamma(k, θ)` for an integer shape `k`: `θ·Σ_{i ≤ k} −ln Uᵢ` (thesis §2.10.1, with
/// `d + 1` uniforms when `k = d + 1`: the thesis's text at §3.7 lists d but sums d + 1).
pub fn gamma<R: Rng + ?Sized>(k: usize, theta: f64, rng: &mut R) -> f64 {
    theta * (0..k).map(|_| exponential(rng)).sum::<f64>()
}

/// A uniform point of `B₁ᵈ`: `zᵢ = sᵢEᵢ / Σ_{j ≤ d+1} Eⱼ` with iid `Eⱼ ∼ Exp(1)` and
/// independent signs (thesis §3.3, the `F = I` sampler).
pub fn uniform_cross_polytope<R: Rng + ?Sized>(d: usize, rng: &mut R) -> Vec<f64> {
    let e: Vec<f64> = (0..=d).map(|_| exponential(rng)).collect();
    let total: f64 = e.iter().sum();
    let bits = rng.next_u64();
    e.iter()
        .take(d)
        .enumerate()
        .map(|(i, &ei)| {
            // One sign bit per coordinate; fresh words past 64 coordinates.
            let bit = if i < 64 {
                bits >> i & 1
            } else {
                rng.next_u64() & 1
            };
            if bit == 1 { ei / total } else { -ei / total }
        })
        .collect()
}

/// A uniform point of `B∞ᵈ`: independent `Uniform[−1, 1]` coordinates (thesis
/// Fact 3.2.5's body).
pub fn uniform_cube<R: Rng + ?Sized>(d: usize, rng: &mut R) -> Vec<f64> {
    (0..d).map(|_| 2.0 * uniform_open(rng) - 1.0).collect()
}

/// A standard normal (Box–Muller), for hit-and-run directions.
fn normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let r = (-2.0 * uniform_open(rng).ln()).sqrt();
    r * (std::f64::consts::TAU * uniform_open(rng)).cos()
}

/// A direction uniform on the unit sphere `S^{d−1}`.
fn direction<R: Rng + ?Sized>(d: usize, rng: &mut R) -> Vec<f64> {
    loop {
        let g: Vec<f64> = (0..d).map(|_| normal(rng)).collect();
        let norm = g.iter().map(|a| a * a).sum::<f64>().sqrt();
        if norm > 1e-300 {
            return g.iter().map(|a| a / norm).collect();
        }
    }
}

/// Hit-and-run in `K` (privq's practical substitute for thesis §3.7's provable walk,
/// `docs/src/knorm.md`):
/// from the centre `0`, `steps` times: pick a uniform direction `u`, find the chord
/// `{z + t·u} ∩ K` through the current point ([`Body::ray_exit`] both ways; two LPs
/// of size d × (2N + 1) per step on a general body), move to a uniform point of it.
///
/// **Approximate.** The chain's law converges to `Unif(K)` but is not `Unif(K)` after
/// finitely many steps, and no pointwise bound is proven here: a mechanism built
/// on it does not have the exact privacy of thesis Thm 3.3.3 (nor the pointwise
/// `(1 ± β)` guarantee of the grid walk of Lemma 3.7.4).
pub fn hit_and_run<R: Rng + ?Sized>(
    body: &Body,
    steps: usize,
    rng: &mut R,
) -> Result<Vec<f64>, KnormError> {
    if steps == 0 {
        // Zero steps would return the centre: no noise at all.
        return Err(KnormError::InvalidParameter(
            "hit-and-run needs at least one step".into(),
        ));
    }
    let mut z = vec![0.0; body.dim()];
    walk(body, &mut z, steps, rng)?;
    Ok(z)
}

/// `steps` hit-and-run steps from `z ∈ K`, in place (the chain of [`hit_and_run`];
/// NiKM's covariance estimate continues one chain).
pub(crate) fn walk<R: Rng + ?Sized>(
    body: &Body,
    z: &mut [f64],
    steps: usize,
    rng: &mut R,
) -> Result<(), KnormError> {
    let d = body.dim();
    for _ in 0..steps {
        let u = direction(d, rng);
        let ahead = body.ray_exit(z, &u)?;
        let back: Vec<f64> = u.iter().map(|a| -a).collect();
        let behind = body.ray_exit(z, &back)?;
        if !(ahead.is_finite() && behind.is_finite()) {
            return Err(KnormError::Unbounded);
        }
        let t = -behind + (ahead + behind) * (1.0 - uniform_open(rng));
        for (zi, ui) in z.iter_mut().zip(&u) {
            *zi += t * ui;
        }
    }
    Ok(())
}

/// A uniform point of `K`: exact on the two closed-form shapes, hit-and-run with
/// `steps` steps otherwise.
pub fn uniform_in_body<R: Rng + ?Sized>(
    body: &Body,
    steps: usize,
    rng: &mut R,
) -> Result<Vec<f64>, KnormError> {
    match body.shape() {
        Shape::CrossPolytope => Ok(uniform_cross_polytope(body.dim(), rng)),
        Shape::Cube => Ok(uniform_cube(body.dim(), rng)),
        Shape::General => hit_and_run(body, steps, rng),
    }
}

//! Error bounds of thesis §3.2–3.3: the volume radius, the volume lower bound every
//! ε-DP mechanism obeys (Thm 3.2.3), its maximum over projections (VolLB,
//! Cor. 3.2.4) and KM's upper bound (Thm 3.3.3). Floats throughout: these are
//! reports, not releases.

use nalgebra::{DMatrix, SymmetricEigen};
use privq_core::rand_core::Rng;

use super::KnormError;
use super::body::{Body, Shape};
use super::sample::{uniform_cube, uniform_open};
use crate::stats::{clopper_pearson, ln_gamma};

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

/// Which k-dimensional orthogonal projection `P` a [`ProjectionBound`] used.
#[derive(Debug, Clone, PartialEq)]
pub enum Projection {
    /// Onto the coordinates in the list (`PK` is the body of those rows of F).
    Coordinates(Vec<usize>),
    /// Onto the span of the top k eigenvectors of `FFᵀ` (F's principal subspace, a
    /// public function of F).
    Principal,
    /// No projection (k = d); the volume is bounded below by the cross-polytope
    /// `F_S·B₁ᵈ ⊆ K` of d columns S chosen greedily (Gram–Schmidt with pivoting),
    /// whose volume is `2ᵈ|det F_S|/d!`.
    InscribedCrossPolytope,
}

impl std::fmt::Display for ProjectionBound {
    /// E.g. `coordinates k = 3`, `principal k = 8`, `inscribed cross-polytope k = 64`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = match self.projection {
            Projection::Coordinates(_) => "coordinates",
            Projection::Principal => "principal",
            Projection::InscribedCrossPolytope => "inscribed cross-polytope",
        };
        write!(f, "{how} k = {}", self.k)
    }
}

/// Thesis Cor. 3.2.4 for one projection: `err(M, F) ≥ err(PM, PF) > k·vr_k(PK)/(16ε)`
/// (Thm 3.2.3's explicit constant; `P` is 1-Lipschitz, `vr_k` normalised as in
/// TYPO-6, `(Vol_k(PK)/Vol(B₂ᵏ))^{1/k}`).
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectionBound {
    /// The projection.
    pub projection: Projection,
    /// Its dimension k ≥ 2.
    pub k: usize,
    /// A lower bound on `vr_k(PK)`: exact for a cube or cross-polytope projection
    /// and for the inscribed cross-polytope, otherwise the Monte Carlo hit rate's
    /// one-sided Clopper–Pearson lower limit (see [`vol_lb`]).
    pub volume_radius: f64,
    /// Whether `volume_radius` is exact (no Monte Carlo).
    pub exact: bool,
    /// `k·vr_k/(16ε)`.
    pub bound: f64,
}

/// How [`vol_lb`] searches the projections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VolLbOptions {
    /// The largest projection dimension k (at most [`MAX_MONTE_CARLO_DIM`]).
    pub max_k: usize,
    /// Disjoint coordinate blocks tried per k (`{0..k}`, `{k..2k}`, …).
    pub blocks: usize,
    /// Monte Carlo points per projection without a closed form.
    pub samples: usize,
    /// Confidence of the reported bound: the Monte Carlo projections share
    /// `1 − confidence` (Bonferroni).
    pub confidence_percent: u8,
}

impl Default for VolLbOptions {
    /// k ≤ 8, two coordinate blocks per k, 4000 points, 95 %.
    fn default() -> Self {
        VolLbOptions {
            max_k: MAX_MONTE_CARLO_DIM,
            blocks: 2,
            samples: 4000,
            confidence_percent: 95,
        }
    }
}

/// VolLB (thesis Cor. 3.2.4): `max_{k, P} k·vr_k(PK)/(16ε)` over the projections
/// this function can measure, every candidate returned, the largest first (empty
/// for d < 2). The candidates are, for `2 ≤ k ≤ min(d, max_k)`, up to `blocks`
/// disjoint coordinate blocks and F's principal k-subspace, and, at any d, the
/// whole body with the inscribed cross-polytope of d columns.
///
/// **Volume method.** A projected body `PK = (WF)·B₁ᴺ` (W: k orthonormal rows) is
/// a [`Body`] after dividing WF by its largest entry s (then `vr(PK) = s·vr`):
/// exact when it is the cube or the cross-polytope; otherwise the fraction of
/// uniform points of its bounding box `Πᵢ[−hᵢ, hᵢ]` (`hᵢ = maxⱼ|(WF)ᵢⱼ|`, the
/// support function at `eᵢ`) that lie in it (one chord LP each), with the hit rate
/// replaced by its one-sided Clopper–Pearson lower limit at level
/// `(1 − confidence)/m` for m Monte Carlo projections. So every reported bound is
/// a lower bound on `err(M, F)` for every ε-DP M with the stated confidence (up to
/// floating-point round-off in the geometry).
pub fn vol_lb<R: Rng + ?Sized>(
    body: &Body,
    epsilon: f64,
    options: &VolLbOptions,
    rng: &mut R,
) -> Result<Vec<ProjectionBound>, KnormError> {
    let d = body.dim();
    if !(epsilon > 0.0 && epsilon.is_finite()) {
        return Err(KnormError::InvalidParameter(format!(
            "epsilon must be positive and finite, got {epsilon}"
        )));
    }
    if options.max_k > MAX_MONTE_CARLO_DIM
        || options.samples == 0
        || !(1..100).contains(&options.confidence_percent)
    {
        return Err(KnormError::InvalidParameter(format!(
            "VolLB needs max_k <= {MAX_MONTE_CARLO_DIM}, samples > 0 and a confidence in \
             1..99 % (got {}, {}, {})",
            options.max_k, options.samples, options.confidence_percent
        )));
    }
    if d < 2 {
        return Ok(Vec::new());
    }
    // The candidate projections as k orthonormal rows each.
    let mut candidates: Vec<(Projection, Vec<Vec<f64>>)> = Vec::new();
    let top = d.min(options.max_k);
    let principal = principal_directions(body);
    for k in 2..=top {
        for b in 0..options.blocks {
            let coords: Vec<usize> = (b * k..(b + 1) * k).collect();
            if coords.last().is_some_and(|&c| c < d) {
                let rows = coords.iter().map(|&c| unit(d, c)).collect();
                candidates.push((Projection::Coordinates(coords), rows));
            }
        }
        if let Some(top_k) = principal.get(..k) {
            candidates.push((Projection::Principal, top_k.to_vec()));
        }
    }
    // Build the projected bodies first, to count the Monte Carlo ones.
    let mut built = Vec::with_capacity(candidates.len());
    for (projection, w) in candidates {
        let (rows, scale) = super::nikm::project(body, &w);
        let projected = Body::from_rows(&rows)?;
        built.push((projection, w.len(), projected, scale));
    }
    let monte_carlo = built
        .iter()
        .filter(|(_, _, b, _)| b.shape() == Shape::General)
        .count()
        .max(1);
    let alpha = (1.0 - f64::from(options.confidence_percent) / 100.0) / monte_carlo as f64;
    let mut out = Vec::with_capacity(built.len() + 1);
    for (projection, k, projected, scale) in built {
        let (vr, exact) = match projected.shape() {
            Shape::General => (
                monte_carlo_volume_radius(&projected, options.samples, alpha, rng)?,
                false,
            ),
            _ => (volume_radius(&projected, 0, rng)?, true),
        };
        let vr = vr * scale;
        out.push(ProjectionBound {
            projection,
            k,
            volume_radius: vr,
            exact,
            bound: k as f64 * vr / (16.0 * epsilon),
        });
    }
    let vr = inscribed_volume_radius(body);
    out.push(ProjectionBound {
        projection: Projection::InscribedCrossPolytope,
        k: d,
        volume_radius: vr,
        exact: true,
        bound: d as f64 * vr / (16.0 * epsilon),
    });
    out.sort_by(|a, b| b.bound.total_cmp(&a.bound));
    Ok(out)
}

fn unit(d: usize, i: usize) -> Vec<f64> {
    (0..d).map(|j| if i == j { 1.0 } else { 0.0 }).collect()
}

/// The eigenvectors of `FFᵀ` by decreasing eigenvalue.
fn principal_directions(body: &Body) -> Vec<Vec<f64>> {
    let (d, n) = (body.dim(), body.columns());
    let f = DMatrix::from_fn(d, n, |i, j| body.entry(i, j).unwrap_or(0.0));
    let eig = SymmetricEigen::new(&f * f.transpose());
    let mut order: Vec<usize> = (0..d).collect();
    order.sort_by(|&a, &b| {
        eig.eigenvalues[b]
            .total_cmp(&eig.eigenvalues[a])
            .then(a.cmp(&b))
    });
    order
        .iter()
        .map(|&i| eig.eigenvectors.column(i).iter().copied().collect())
        .collect()
}

/// `vr(K)` from the one-sided Clopper–Pearson lower limit (level `alpha`) of the
/// hit rate of `K` in its bounding box.
fn monte_carlo_volume_radius<R: Rng + ?Sized>(
    body: &Body,
    samples: usize,
    alpha: f64,
    rng: &mut R,
) -> Result<f64, KnormError> {
    let (d, n) = (body.dim(), body.columns());
    let half: Vec<f64> = (0..d)
        .map(|i| {
            (0..n)
                .filter_map(|j| body.entry(i, j))
                .fold(0.0f64, |m, a| m.max(a.abs()))
        })
        .collect();
    let mut hits = 0u64;
    for _ in 0..samples {
        let v: Vec<f64> = half
            .iter()
            .map(|h| h * (2.0 * uniform_open(rng) - 1.0))
            .collect();
        if body.contains(&v)? {
            hits += 1;
        }
    }
    let (low, _) = clopper_pearson(hits, samples as u64, (2.0 * alpha).min(0.999_999))
        .map_err(KnormError::Interval)?;
    if low <= 0.0 {
        return Ok(0.0);
    }
    let ln_box: f64 = half.iter().map(|h| (2.0 * h).ln()).sum();
    Ok(((ln_box + low.ln() - ln_ball_volume(d)) / d as f64).exp())
}

/// A lower bound on `vr(K)` from `F_S·B₁ᵈ ⊆ K`: d columns chosen greedily by
/// largest residual (Gram–Schmidt with column pivoting), `|det F_S|` the product
/// of the residual norms; 0 when F has rank below d.
fn inscribed_volume_radius(body: &Body) -> f64 {
    let (d, n) = (body.dim(), body.columns());
    let mut residual: Vec<Vec<f64>> = (0..n)
        .map(|j| (0..d).map(|i| body.entry(i, j).unwrap_or(0.0)).collect())
        .collect();
    let mut ln_det = 0.0;
    for _ in 0..d {
        let norm2 = |v: &Vec<f64>| v.iter().map(|a| a * a).sum::<f64>();
        let Some((best, nb)) = residual
            .iter()
            .enumerate()
            .map(|(j, v)| (j, norm2(v)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
        else {
            return 0.0;
        };
        if nb <= 1e-18 {
            return 0.0;
        }
        ln_det += 0.5 * nb.ln();
        let q: Vec<f64> = residual
            .get(best)
            .map_or_else(Vec::new, |v| v.iter().map(|a| a / nb.sqrt()).collect());
        for v in residual.iter_mut() {
            let c: f64 = v.iter().zip(&q).map(|(a, b)| a * b).sum();
            for (a, b) in v.iter_mut().zip(&q) {
                *a -= c * b;
            }
        }
    }
    let df = d as f64;
    let ln_vol = df * 2f64.ln() - ln_gamma(df + 1.0) + ln_det;
    ((ln_vol - ln_ball_volume(d)) / df).exp()
}

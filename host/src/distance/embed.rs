//! Section 4: 1-sensitive embeddings into ℓ1, so the ℓ1 mechanisms answer distance
//! queries of other metrics (Figure 2).
//!
//! * [`RandomProjection`]: ℓ2 → ℓ1 by Gaussian projections (Lemma 4.1), oblivious
//!   (data- and query-independent), so usable interactively.
//! * [`Bourgain`]: Figure 3's variant of Bourgain's theorem built from the query set
//!   only (1-sensitive, non-interactive), for any [`Metric`].
//!
//! Both produce points in a box whose ℓ1 diameter is known, and [`distortion`]
//! reports the empirical expansion and contraction on data–query pairs.

use privq_core::rand_core::Rng;

use super::DistanceError;
use super::columns::BoxDomain;
use super::metric::Metric;

/// A standard normal draw (Box–Muller; floats are fine: the embedding is public and
/// data-independent, no released noise depends on it).
fn normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let u1 = ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let u2 = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

fn unit<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// A draw of the standard symmetric p-stable law (characteristic function
/// `exp(−|t|^p)`, 1 < p ≤ 2) by the Chambers–Mallows–Stuck method: with
/// `θ ~ U(−π/2, π/2)` and `W ~ Exp(1)`,
/// `X = sin(pθ)/cos(θ)^{1/p} · (cos((1−p)θ)/W)^{(1−p)/p}` (p = 2 gives N(0, 2)).
/// Floats are fine for the same reason as [`normal`].
fn p_stable<R: Rng + ?Sized>(p: f64, rng: &mut R) -> f64 {
    let u = ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let theta = std::f64::consts::PI * (u - 0.5);
    let w = -(((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64).ln();
    (p * theta).sin() / theta.cos().powf(1.0 / p)
        * ((theta - p * theta).cos() / w).powf((1.0 - p) / p)
}

/// Clip width (in units of `r_p·scale`) of p-stable outputs: `|X|` has a tail
/// `P(|X| > t) ∝ t^{−p}`, so a narrow clip loses a visible share of `E|X|`
/// (about 2% at p = 1.5 for this width, about 12% at p = 1.25).
const P_STABLE_CLIP: f64 = 1000.0;

/// `E|X|` for the standard symmetric p-stable law: `2Γ(1 − 1/p)/π` (1 < p ≤ 2).
pub fn p_stable_mean_abs(p: f64) -> f64 {
    2.0 * crate::stats::ln_gamma(1.0 - 1.0 / p).exp() / std::f64::consts::PI
}

/// Lemma 4.1's oblivious embedding `π(x) = G(x − c) / (ℓ′·√(2/π)·(1+α))` of the ℓ2
/// box `[lo, hi]` into ℓ1, each output coordinate clipped to `±4σ` (σ the largest
/// standard deviation a coordinate can have), so outputs lie in a known box.
///
/// [`RandomProjection::p_stable`] generalises it to ℓp, 1 < p < 2 (§4.2, footnote 7,
/// without details in the paper; privq follows Indyk's p-stable projections): `G`
/// has iid standard symmetric p-stable entries, so `⟨g, v⟩ ~ ‖v‖_p·X`, and the scale
/// is `1/(ℓ′·E|X|·(1+α))`. The law of `|X|` is heavy-tailed (infinite variance for p < 2), so the ℓ1 mean concentrates more
/// slowly than for p = 2: use more output dimensions and measure the distortion
/// (outputs are clipped at `±1000·r_p·scale`, r_p the box's ℓp radius; clipping
/// never expands a distance, and shrinks `E|X|` noticeably only as p → 1).
///
/// ```
/// use privq_host::distance::embed::RandomProjection;
/// use privq_host::seeded_rng;
/// let p = RandomProjection::new(vec![0.0; 3], vec![1.0; 3], 0.25, 400, &mut seeded_rng(1))?;
/// let (a, b) = (p.embed(&[0.0, 0.0, 0.0])?, p.embed(&[1.0, 0.0, 0.0])?);
/// let l1: f64 = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).sum();
/// assert!(l1 > 0.6 && l1 <= 1.0); // ≈ ‖x − y‖₂/(1 + α) = 0.8
/// # Ok::<(), privq_host::distance::DistanceError>(())
/// ```
#[derive(Debug, Clone)]
pub struct RandomProjection {
    lo: Vec<f64>,
    hi: Vec<f64>,
    center: Vec<f64>,
    rows: Vec<Vec<f64>>,
    scale: f64,
    clip: f64,
    p: f64,
}

impl RandomProjection {
    /// The suggested output dimension `⌈c·ℓ·ln(1/α)/α²⌉` (c = 4).
    pub fn suggested_dim(dim: usize, alpha: f64) -> usize {
        (4.0 * dim as f64 * (1.0 / alpha).ln().max(1.0) / (alpha * alpha)).ceil() as usize
    }

    /// Draws the projection for the box `[lo, hi]`, accuracy α and `out_dim` outputs.
    pub fn new<R: Rng + ?Sized>(
        lo: Vec<f64>,
        hi: Vec<f64>,
        alpha: f64,
        out_dim: usize,
        rng: &mut R,
    ) -> Result<Self, DistanceError> {
        Self::build(2.0, lo, hi, alpha, out_dim, rng)
    }

    /// The ℓp → ℓ1 embedding by p-stable projections, `1 < p ≤ 2` (p = 2 is
    /// [`RandomProjection::new`]).
    ///
    /// ```
    /// use privq_host::distance::embed::{RandomProjection, l1};
    /// use privq_host::seeded_rng;
    /// let p = RandomProjection::p_stable(1.5, vec![0.0; 2], vec![1.0; 2], 0.25, 4000, &mut seeded_rng(1))?;
    /// let d = l1(&p.embed(&[0.0, 0.0])?, &p.embed(&[1.0, 0.0])?);
    /// assert!(d > 0.5 && d <= 1.0); // ≈ ‖x − y‖_1.5/(1 + α) = 0.8
    /// # Ok::<(), privq_host::distance::DistanceError>(())
    /// ```
    pub fn p_stable<R: Rng + ?Sized>(
        p: f64,
        lo: Vec<f64>,
        hi: Vec<f64>,
        alpha: f64,
        out_dim: usize,
        rng: &mut R,
    ) -> Result<Self, DistanceError> {
        if !(p > 1.0 && p <= 2.0) {
            return Err(DistanceError::InvalidParameter(format!(
                "p-stable projections need 1 < p <= 2, got {p}"
            )));
        }
        Self::build(p, lo, hi, alpha, out_dim, rng)
    }

    fn build<R: Rng + ?Sized>(
        p: f64,
        lo: Vec<f64>,
        hi: Vec<f64>,
        alpha: f64,
        out_dim: usize,
        rng: &mut R,
    ) -> Result<Self, DistanceError> {
        let lp = super::metric::Lp::new(p, lo.clone(), hi.clone())?;
        super::check_range("alpha", alpha, 1.0)?;
        if out_dim == 0 {
            return Err(DistanceError::InvalidParameter(
                "the output dimension must be positive".into(),
            ));
        }
        let gaussian = p == 2.0;
        let center: Vec<f64> = lo.iter().zip(&hi).map(|(a, b)| 0.5 * (a + b)).collect();
        let rows = (0..out_dim)
            .map(|_| {
                (0..lo.len())
                    .map(|_| {
                        if gaussian {
                            normal(rng)
                        } else {
                            p_stable(p, rng)
                        }
                    })
                    .collect()
            })
            .collect();
        let mean_abs = if gaussian {
            (2.0 / std::f64::consts::PI).sqrt()
        } else {
            p_stable_mean_abs(p)
        };
        let scale = 1.0 / (out_dim as f64 * mean_abs * (1.0 + alpha));
        let radius = 0.5 * lp.diameter();
        let width = if gaussian { 4.0 } else { P_STABLE_CLIP };
        Ok(RandomProjection {
            lo,
            hi,
            center,
            rows,
            scale,
            clip: width * radius * scale,
            p,
        })
    }

    /// The p of the input ℓp space (2 for Gaussian projections).
    pub fn p(&self) -> f64 {
        self.p
    }

    /// The output box (each coordinate in `[−clip, clip]`).
    pub fn output_domain(&self) -> Result<BoxDomain, DistanceError> {
        BoxDomain::new(
            vec![-self.clip; self.rows.len()],
            vec![self.clip; self.rows.len()],
        )
    }

    /// Embeds a point of the input box.
    pub fn embed(&self, x: &[f64]) -> Result<Vec<f64>, DistanceError> {
        super::metric::check_box(&self.lo, &self.hi, x)?;
        Ok(self
            .rows
            .iter()
            .map(|g| {
                let dot: f64 = g
                    .iter()
                    .zip(x)
                    .zip(&self.center)
                    .map(|((g, x), c)| g * (x - c))
                    .sum();
                (dot * self.scale).clamp(-self.clip, self.clip)
            })
            .collect())
    }
}

/// Figure 3: the 1-sensitive Bourgain embedding from the query set `Q`.
/// Coordinates `π_ij(x) = d(x, S_ij)/(K·L)` for levels `i ≤ L = ⌈log₂ k⌉` and
/// `j ≤ K = c·(log₂ k + log₂ n)` (the paper's c = 512 is configurable), with
/// `S_ij ⊆ Q` sampled with probability `2^{−(i−1)}`; an empty `S_ij` gives the
/// coordinate 0 for every point (data-independent). `d` is the metric's scaled,
/// clipped distance, so each coordinate lies in `[0, 1/(KL)]` and the output box has
/// ℓ1 diameter 1: expansion ≤ 1 always.
#[derive(Debug, Clone)]
pub struct Bourgain<P> {
    queries: Vec<P>,
    /// For each coordinate, the indices of the queries in `S_ij`.
    sets: Vec<Vec<usize>>,
    norm: f64,
}

impl<P> Bourgain<P> {
    /// Builds the embedding from `queries` (k ≥ 1), for databases of about `n` points.
    pub fn new<R: Rng + ?Sized>(
        queries: Vec<P>,
        n: usize,
        c: f64,
        rng: &mut R,
    ) -> Result<Self, DistanceError> {
        let k = queries.len();
        if k == 0 {
            return Err(DistanceError::InvalidParameter(
                "the Bourgain embedding needs at least one query".into(),
            ));
        }
        super::check_range("c", c, 1e6)?;
        let levels = ((k as f64).log2().ceil() as usize).max(1);
        let reps = (c * ((k as f64).log2() + (n.max(2) as f64).log2()))
            .ceil()
            .max(1.0) as usize;
        let mut sets = Vec::with_capacity(levels * reps);
        for i in 0..levels {
            let p = 0.5f64.powi(i as i32);
            for _ in 0..reps {
                sets.push((0..k).filter(|_| i == 0 || unit(rng) < p).collect());
            }
        }
        Ok(Bourgain {
            queries,
            norm: (levels * reps) as f64,
            sets,
        })
    }

    /// Output dimension `K·L`.
    pub fn dim(&self) -> usize {
        self.sets.len()
    }

    /// The output box `[0, 1/(KL)]^{KL}` (ℓ1 diameter 1).
    pub fn output_domain(&self) -> Result<BoxDomain, DistanceError> {
        BoxDomain::new(vec![0.0; self.dim()], vec![1.0 / self.norm; self.dim()])
    }

    /// Embeds a point.
    pub fn embed<M>(&self, metric: &M, x: &M::Point) -> Result<Vec<f64>, DistanceError>
    where
        M: Metric,
        P: AsRef<M::Point>,
    {
        let d: Vec<f64> = self
            .queries
            .iter()
            .map(|q| metric.distance(x, q.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(self
            .sets
            .iter()
            .map(|s| {
                if s.is_empty() {
                    0.0
                } else {
                    s.iter().map(|&j| d[j]).fold(f64::INFINITY, f64::min) / self.norm
                }
            })
            .collect())
    }
}

/// Empirical distortion on data–query pairs (Definition 5).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Distortion {
    /// `max d′/d`.
    pub expansion: f64,
    /// `max d/d′` (∞ if a pair at positive distance collapses).
    pub contraction: f64,
    /// Median of `d/d′` (the typical contraction).
    pub median_contraction: f64,
    /// Pairs measured (pairs with `d = 0` are skipped).
    pub pairs: usize,
}

impl Distortion {
    /// `expansion × contraction`.
    pub fn distortion(&self) -> f64 {
        self.expansion * self.contraction
    }
}

/// Measures the distortion from original distances `d` and embedded ℓ1 distances `d′`.
pub fn distortion(pairs: impl IntoIterator<Item = (f64, f64)>) -> Distortion {
    let mut ratios = Vec::new();
    let (mut exp, mut con) = (0.0f64, 0.0f64);
    for (d, e) in pairs {
        if d <= 0.0 {
            continue;
        }
        exp = exp.max(e / d);
        let r = if e > 0.0 { d / e } else { f64::INFINITY };
        con = con.max(r);
        ratios.push(r);
    }
    ratios.sort_by(f64::total_cmp);
    Distortion {
        expansion: exp,
        contraction: con,
        median_contraction: ratios.get(ratios.len() / 2).copied().unwrap_or(f64::NAN),
        pairs: ratios.len(),
    }
}

/// The ℓ1 distance between two embedded points.
pub fn l1(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distance::metric::{Levenshtein, Lp};
    use crate::seeded_rng;

    #[test]
    fn random_projection_distortion_within_one_plus_alpha() {
        let mut rng = seeded_rng(11);
        let (dim, alpha) = (3, 0.25);
        let out = RandomProjection::suggested_dim(dim, alpha);
        let p =
            RandomProjection::new(vec![0.0; dim], vec![1.0; dim], alpha, out, &mut rng).unwrap();
        let l2 = Lp::l2(vec![0.0; dim], vec![1.0; dim]).unwrap();
        let pts: Vec<Vec<f64>> = (0..60)
            .map(|_| (0..dim).map(|_| unit(&mut rng)).collect())
            .collect();
        let qs: Vec<Vec<f64>> = (0..60)
            .map(|_| (0..dim).map(|_| unit(&mut rng)).collect())
            .collect();
        let emb_p: Vec<Vec<f64>> = pts.iter().map(|x| p.embed(x).unwrap()).collect();
        let emb_q: Vec<Vec<f64>> = qs.iter().map(|x| p.embed(x).unwrap()).collect();
        let pairs = pts.iter().zip(&emb_p).flat_map(|(x, ex)| {
            qs.iter()
                .zip(&emb_q)
                .map(|(y, ey)| (l2.raw_distance(x, y).unwrap(), l1(ex, ey)))
                .collect::<Vec<_>>()
        });
        let d = distortion(pairs);
        assert!(d.expansion <= 1.0, "{d:?}");
        assert!(d.distortion() <= 1.0 + alpha, "{d:?} with {out} dimensions");
        assert!(p.embed(&[2.0, 0.0, 0.0]).is_err());
    }

    #[test]
    fn p_stable_sampler_matches_its_characteristic_function() {
        let mut rng = seeded_rng(21);
        // p = 2: N(0, 2), E|X| = 2/√π.
        assert!((p_stable_mean_abs(2.0) - 2.0 / std::f64::consts::PI.sqrt()).abs() < 1e-12);
        // E cos(tX) = exp(−|t|^p): a bounded statistic, unlike |X| (infinite variance).
        let k = 200_000;
        for p in [1.25, 1.5, 1.75, 2.0] {
            let xs: Vec<f64> = (0..k).map(|_| p_stable(p, &mut rng)).collect();
            for t in [0.25, 1.0, 2.0] {
                let cf = xs.iter().map(|x| (t * x).cos()).sum::<f64>() / k as f64;
                let want = (-f64::powf(t, p)).exp();
                assert!((cf - want).abs() < 0.01, "p = {p}, t = {t}: {cf} vs {want}");
            }
        }
    }

    #[test]
    fn p_stable_projection_distortion_on_data_query_pairs() {
        let mut rng = seeded_rng(22);
        let (dim, alpha) = (3, 0.25);
        for p in [1.5, 1.75] {
            let out = 8 * RandomProjection::suggested_dim(dim, alpha);
            let proj =
                RandomProjection::p_stable(p, vec![0.0; dim], vec![1.0; dim], alpha, out, &mut rng)
                    .unwrap();
            let lp = Lp::new(p, vec![0.0; dim], vec![1.0; dim]).unwrap();
            let pts: Vec<Vec<f64>> = (0..50)
                .map(|_| (0..dim).map(|_| unit(&mut rng)).collect())
                .collect();
            let qs: Vec<Vec<f64>> = (0..50)
                .map(|_| (0..dim).map(|_| unit(&mut rng)).collect())
                .collect();
            let eq: Vec<Vec<f64>> = qs.iter().map(|x| proj.embed(x).unwrap()).collect();
            let mut pairs = Vec::new();
            for x in &pts {
                let ex = proj.embed(x).unwrap();
                for (y, ey) in qs.iter().zip(&eq) {
                    pairs.push((lp.raw_distance(x, y).unwrap(), l1(&ex, ey)));
                }
            }
            let d = distortion(pairs);
            assert!(d.expansion <= 1.0 + alpha, "p = {p}: {d:?}");
            assert!(d.distortion() <= 1.0 + 3.0 * alpha, "p = {p}: {d:?}");
            assert!(d.median_contraction < 1.0 + 2.0 * alpha, "p = {p}: {d:?}");
        }
        assert!(RandomProjection::p_stable(1.0, vec![0.0], vec![1.0], 0.25, 10, &mut rng).is_err());
        assert!(RandomProjection::p_stable(2.5, vec![0.0], vec![1.0], 0.25, 10, &mut rng).is_err());
    }

    #[test]
    fn bourgain_contraction_is_below_64_log_k_on_edit_distance() {
        let mut rng = seeded_rng(12);
        let lev = Levenshtein::new(12).unwrap().with_alphabet("abc");
        let word = |rng: &mut rand_chacha::ChaCha12Rng| -> String {
            let len = 4 + (rng.next_u64() % 9) as usize;
            (0..len)
                .map(|_| ['a', 'b', 'c'][(rng.next_u64() % 3) as usize])
                .collect()
        };
        let queries: Vec<String> = (0..64).map(|_| word(&mut rng)).collect();
        let data: Vec<String> = (0..200).map(|_| word(&mut rng)).collect();
        let b = Bourgain::new(queries.clone(), data.len(), 2.0, &mut rng).unwrap();
        let eq: Vec<Vec<f64>> = queries
            .iter()
            .map(|q| b.embed(&lev, q.as_str()).unwrap())
            .collect();
        let mut pairs = Vec::new();
        for x in &data {
            let ex = b.embed(&lev, x.as_str()).unwrap();
            for (q, e) in queries.iter().zip(&eq) {
                pairs.push((lev.distance(x, q).unwrap(), l1(&ex, e)));
            }
        }
        let d = distortion(pairs);
        assert!(d.expansion <= 1.0 + 1e-12, "{d:?}");
        let bound = 64.0 * (queries.len() as f64).log2();
        assert!(d.contraction <= bound, "{d:?} > {bound}");
        assert!(d.median_contraction < d.contraction + 1e-12);
        assert!(Bourgain::<String>::new(Vec::new(), 10, 1.0, &mut rng).is_err());
    }
}

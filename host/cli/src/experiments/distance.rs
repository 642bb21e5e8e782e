//! `privq experiment distance`: error of the Huang–Roth ℓ1 mechanisms and the
//! baselines as n grows, fitted log-log slopes, and embedding distortion.

use privq_host::accountant::Accountant;
use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use privq_core::Epsilon;
use privq_core::rand_core::Rng;
use rand_chacha::ChaCha12Rng;

use super::svg::{Series, line_chart};
use privq_host::distance::baselines::{GridMwem, GridMwemConfig, LaplacePerQuery, TreeCdf};
use privq_host::distance::embed::{self, Bourgain, RandomProjection};
use privq_host::distance::interactive::{InteractiveConfig, Session};
use privq_host::distance::metric::{Levenshtein, Lp, Metric};
use privq_host::distance::offline::{OfflineConfig, Synopsis};
use privq_host::distance::privacy::Privacy;
use privq_host::distance::{BoxDomain, Columns, DistanceError};
use privq_host::seeded_rng;

/// The grid of an experiment run.
#[derive(Debug, Clone)]
pub struct Protocol {
    /// Database sizes.
    pub ns: Vec<usize>,
    /// Dimensions ℓ.
    pub dims: Vec<usize>,
    /// ε values (as exact fractions `1/den`).
    pub epsilons: Vec<Epsilon>,
    /// δ for the (ε, δ) variants.
    pub delta: f64,
    /// Random queries per cell.
    pub queries: usize,
    /// Base seed.
    pub seed: u64,
    /// Where the SVG figures and the CSV go.
    pub out_dir: PathBuf,
}

impl Protocol {
    /// The full grid of the issue: n = 10³…10⁶, ℓ ∈ {1, 4, 16}, ε ∈ {0.1, 1}, 10⁴ queries.
    pub fn full(out_dir: PathBuf) -> Result<Self, DistanceError> {
        Ok(Protocol {
            ns: vec![1_000, 10_000, 100_000, 1_000_000],
            dims: vec![1, 4, 16],
            epsilons: vec![Epsilon::new(1, 10)?, Epsilon::new(1, 1)?],
            delta: 1e-6,
            queries: 10_000,
            seed: 2013,
            out_dir,
        })
    }

    /// A faster default: n ≤ 10⁵ and 2000 queries.
    pub fn quick(out_dir: PathBuf) -> Result<Self, DistanceError> {
        Ok(Protocol {
            ns: vec![1_000, 10_000, 100_000],
            queries: 2_000,
            ..Self::full(out_dir)?
        })
    }
}

const MECHS: [&str; 7] = [
    "offline eps",
    "offline eps,delta",
    "interactive eps",
    "interactive eps,delta",
    "laplace/query eps",
    "tree-cdf eps",
    "mwem-grid eps",
];
const COLORS: [&str; 7] = [
    "#1f77b4", "#17becf", "#d62728", "#ff7f0e", "#7f7f7f", "#2ca02c", "#9467bd",
];

/// Bins per coordinate of the MWEM grid baseline at dimension ℓ (only ℓ ≤ 4 gets a
/// grid; larger ℓ is refused by the memory cap with a typed error).
pub fn mwem_bins(dim: usize) -> usize {
    match dim {
        1 => 256,
        2 => 32,
        3 => 16,
        _ => 8,
    }
}

fn unit(rng: &mut impl Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// Skewed data: each coordinate the square of a uniform.
fn data(n: usize, dim: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = seeded_rng(seed);
    (0..n)
        .map(|_| (0..dim).map(|_| unit(&mut rng).powi(2)).collect())
        .collect()
}

/// Least-squares slope of `ln y` on `ln x`.
pub fn slope(points: &[(f64, f64)]) -> f64 {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.0 > 0.0 && p.1 > 0.0)
        .map(|p| (p.0.ln(), p.1.ln()))
        .collect();
    let k = pts.len() as f64;
    let (mx, my) = (
        pts.iter().map(|p| p.0).sum::<f64>() / k,
        pts.iter().map(|p| p.1).sum::<f64>() / k,
    );
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    sxy / sxx
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Runs the protocol, printing tables and progress, writing SVGs and a CSV.
pub fn run(
    p: &Protocol,
    out: &mut dyn Write,
    progress: &mut dyn Write,
) -> Result<String, BoxError> {
    std::fs::create_dir_all(&p.out_dir)?;
    let mut csv = String::from("dim,epsilon,mechanism,n,alpha,max_error,mean_error\n");
    let mut summary = String::new();
    writeln!(
        out,
        "{:>3} {:>5} {:<22} {:>8} {:>9} {:>10} {:>10}",
        "l", "eps", "mechanism", "n", "alpha", "max err", "mean err"
    )?;
    for &dim in &p.dims {
        let domain = BoxDomain::unit_cube(dim)?;
        let queries = data(p.queries, dim, p.seed ^ 0xABCD);
        for &eps in &p.epsilons {
            let mut curves: Vec<Vec<(f64, f64, f64)>> = vec![Vec::new(); MECHS.len()];
            for &n in &p.ns {
                writeln!(progress, "distance experiment: l={dim} eps={eps} n={n}")?;
                let points = data(n, dim, p.seed + n as u64 + dim as u64);
                let cell = Cell {
                    protocol: p,
                    dim,
                    eps,
                    n,
                    cols: Columns::new(&domain, &points)?,
                    domain: &domain,
                    points: &points,
                    queries: &queries,
                };
                cell.run_mechanisms(&mut curves, &mut csv, out)?;
            }
            write_figure(p, dim, eps, &curves)?;
            fit_slopes(dim, eps, &curves, &mut summary);
        }
    }
    writeln!(
        out,
        "\nFitted log-log slopes of the max error in n:\n{summary}"
    )?;
    std::fs::write(p.out_dir.join("distance-results.csv"), csv)?;
    writeln!(out, "{}", embeddings(p.seed)?)?;
    Ok(summary)
}

/// One cell of the grid: dimension ℓ, ε and n, with its data and queries.
struct Cell<'a> {
    protocol: &'a Protocol,
    dim: usize,
    eps: Epsilon,
    n: usize,
    domain: &'a BoxDomain,
    points: &'a [Vec<f64>],
    cols: Columns,
    queries: &'a [Vec<f64>],
}

impl Cell<'_> {
    /// Runs every mechanism on the cell, printing a row and adding a CSV line and a
    /// curve point for each.
    fn run_mechanisms(
        &self,
        curves: &mut [Vec<(f64, f64, f64)>],
        csv: &mut String,
        out: &mut dyn Write,
    ) -> Result<(), BoxError> {
        let (dim, n) = (self.dim, self.n);
        let eps = self.eps.to_f64();
        let truth: Vec<f64> = self
            .queries
            .iter()
            .map(|q| self.cols.answer(q))
            .collect::<Result<_, _>>()?;
        let mut rng = seeded_rng(self.protocol.seed + 7 * n as u64 + dim as u64);
        let approx = Privacy::approx(self.eps, self.protocol.delta)?;
        for (m, name) in MECHS.iter().enumerate() {
            let (answers, alpha) = match self.answers(m, approx, &mut rng) {
                Ok(answered) => answered,
                Err(e @ DistanceError::GridTooLarge { .. }) => {
                    writeln!(out, "{dim:>3} {eps:>5.2} {name:<22} {n:>8} skipped: {e}")?;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let errs: Vec<f64> = answers
                .iter()
                .zip(&truth)
                .map(|(a, t)| (a - t).abs())
                .collect();
            let max = errs.iter().copied().fold(0.0, f64::max);
            let mean = errs.iter().sum::<f64>() / errs.len() as f64;
            writeln!(
                out,
                "{dim:>3} {eps:>5.2} {name:<22} {n:>8} {alpha:>9.4} {max:>10.3e} {mean:>10.3e}"
            )?;
            let _ = writeln!(csv, "{dim},{eps},\"{name}\",{n},{alpha},{max},{mean}");
            if let Some(c) = curves.get_mut(m) {
                c.push((n as f64, max, 0.0));
            }
        }
        Ok(())
    }

    /// Mechanism `m` of [`MECHS`]: its answers to the queries and its α (NaN for
    /// the baselines, which have none).
    /// `approx` is the (ε, δ) privacy of the approximate variants.
    fn answers(
        &self,
        m: usize,
        approx: Privacy,
        rng: &mut ChaCha12Rng,
    ) -> Result<(Vec<f64>, f64), DistanceError> {
        let privacy = |pure| {
            if pure {
                Privacy::pure(self.eps)
            } else {
                approx
            }
        };
        match m {
            0 | 1 => self.offline(privacy(m == 0), rng),
            2 | 3 => self.interactive(privacy(m == 2), rng),
            4 => Ok((self.laplace_per_query(rng)?, f64::NAN)),
            5 => Ok((self.tree_cdf(rng)?, f64::NAN)),
            _ => Ok((self.grid_mwem(rng)?, f64::NAN)),
        }
    }

    fn offline(
        &self,
        privacy: Privacy,
        rng: &mut ChaCha12Rng,
    ) -> Result<(Vec<f64>, f64), DistanceError> {
        let s = Synopsis::release_columns(
            &self.cols,
            &OfflineConfig::new(privacy),
            &mut Accountant::exactly(privacy.cost())?,
            rng,
        )?;
        let answers: Result<Vec<f64>, _> = self.queries.iter().map(|q| s.answer(q)).collect();
        Ok((answers?, s.alpha()))
    }

    /// An interactive session; once it stops answering, its hypothesis answers.
    fn interactive(
        &self,
        privacy: Privacy,
        rng: &mut ChaCha12Rng,
    ) -> Result<(Vec<f64>, f64), DistanceError> {
        let mut config = InteractiveConfig::new(privacy);
        config.queries = self.protocol.queries;
        let mut s = Session::new(
            &self.cols,
            &config,
            &mut Accountant::exactly(config.privacy.cost())?,
            rng,
        )?;
        let alpha = s.params().alpha;
        let mut v = Vec::with_capacity(self.queries.len());
        for q in self.queries {
            let y = s.prepare(q)?;
            v.push(match s.answer(&y, rng) {
                Ok(a) => a,
                Err(_) => s.hypothesis_answer(&y),
            });
        }
        Ok((v, alpha))
    }

    fn laplace_per_query(&self, rng: &mut ChaCha12Rng) -> Result<Vec<f64>, DistanceError> {
        let mut lap = LaplacePerQuery::new(
            &self.cols,
            self.queries.len(),
            Privacy::pure(self.eps),
            &mut Accountant::pure(self.eps),
        )?;
        self.queries
            .iter()
            .map(|q| lap.answer(&self.cols, q, rng))
            .collect()
    }

    fn tree_cdf(&self, rng: &mut ChaCha12Rng) -> Result<Vec<f64>, DistanceError> {
        let tree = TreeCdf::release(
            &self.cols,
            self.eps,
            12,
            &mut Accountant::pure(self.eps),
            rng,
        )?;
        self.queries.iter().map(|q| tree.answer(q)).collect()
    }

    /// The grid MWEM baseline ([`DistanceError::GridTooLarge`] past ℓ = 4).
    fn grid_mwem(&self, rng: &mut ChaCha12Rng) -> Result<Vec<f64>, DistanceError> {
        let config = GridMwemConfig::new(self.eps, mwem_bins(self.dim));
        let m = GridMwem::release(
            self.domain,
            self.points,
            &config,
            &mut Accountant::pure(self.eps),
            rng,
        )?;
        self.queries.iter().map(|q| m.answer(q)).collect()
    }
}

/// The max-error curves of one (ℓ, ε) as an SVG.
fn write_figure(
    p: &Protocol,
    dim: usize,
    eps: Epsilon,
    curves: &[Vec<(f64, f64, f64)>],
) -> std::io::Result<()> {
    let series: Vec<Series> = curves
        .iter()
        .zip(MECHS.iter().zip(COLORS))
        .filter(|(pts, _)| !pts.is_empty())
        .map(|(pts, (name, color))| Series {
            label: name.to_string(),
            color,
            dash: "",
            points: pts.clone(),
        })
        .collect();
    let svg = line_chart(
        &format!("max error, l = {dim}, eps = {eps}"),
        "n",
        "max error over queries",
        &series,
    );
    std::fs::write(
        p.out_dir
            .join(format!("distance-l{dim}-eps{}.svg", eps.to_f64())),
        svg,
    )
}

/// Adds each curve's fitted log-log slope, beside the theory's, to `summary`.
fn fit_slopes(dim: usize, eps: Epsilon, curves: &[Vec<(f64, f64, f64)>], summary: &mut String) {
    for (pts, name) in curves.iter().zip(MECHS) {
        if pts.len() < 2 {
            continue;
        }
        let s = slope(&pts.iter().map(|p| (p.0, p.1)).collect::<Vec<_>>());
        let theory = match name {
            "offline eps" | "interactive eps" => "-2/3",
            "offline eps,delta" | "interactive eps,delta" => "-4/5",
            _ => "-1",
        };
        let _ = writeln!(
            summary,
            "l={dim} eps={:<4} {name:<22} slope {s:>6.3} (theory {theory})",
            eps.to_f64()
        );
    }
}

/// Embedding distortion on random Euclidean data and on edit-distance data.
pub fn embeddings(seed: u64) -> Result<String, DistanceError> {
    let mut rng = seeded_rng(seed ^ 0xE3B);
    let mut s = String::from("Embedding distortion on data-query pairs:\n");
    projection_distortions(seed, &mut rng, &mut s)?;
    p_stable_distortions(seed, &mut rng, &mut s)?;
    bourgain_distortions(seed, &mut rng, &mut s)?;
    Ok(s)
}

/// The distortion of an embedding over every (data, query) pair: the metric's
/// distance against the ℓ1 distance of the embeddings.
fn pair_distortion<P: ?Sized, X: std::borrow::Borrow<P>>(
    data: &[X],
    queries: &[X],
    embed: impl Fn(&P) -> Result<Vec<f64>, DistanceError>,
    distance: impl Fn(&P, &P) -> Result<f64, DistanceError>,
) -> Result<embed::Distortion, DistanceError> {
    let eq: Vec<Vec<f64>> = queries
        .iter()
        .map(|q| embed(q.borrow()))
        .collect::<Result<_, _>>()?;
    let mut pairs = Vec::new();
    for x in data {
        let ex = embed(x.borrow())?;
        for (q, e) in queries.iter().zip(&eq) {
            pairs.push((distance(x.borrow(), q.borrow())?, embed::l1(&ex, e)));
        }
    }
    Ok(embed::distortion(pairs))
}

/// ℓ2 → ℓ1 random projections.
fn projection_distortions(
    seed: u64,
    rng: &mut ChaCha12Rng,
    s: &mut String,
) -> Result<(), DistanceError> {
    for (dim, alpha) in [(4usize, 0.25), (16, 0.25)] {
        let out = RandomProjection::suggested_dim(dim, alpha);
        let p = RandomProjection::new(vec![0.0; dim], vec![1.0; dim], alpha, out, rng)?;
        let l2 = Lp::l2(vec![0.0; dim], vec![1.0; dim])?;
        let (pts, qs) = (data(300, dim, seed + 1), data(300, dim, seed + 2));
        let d =
            pair_distortion::<[f64], _>(&pts, &qs, |x| p.embed(x), |x, q| l2.raw_distance(x, q))?;
        let _ = writeln!(
            s,
            "  l2->l1 projection l={dim} alpha={alpha} dims={out}: expansion {:.3}, contraction {:.3}, distortion {:.3} (target <= {:.3})",
            d.expansion,
            d.contraction,
            d.distortion(),
            1.0 + alpha
        );
    }
    Ok(())
}

/// ℓp → ℓ1 p-stable projections.
fn p_stable_distortions(
    seed: u64,
    rng: &mut ChaCha12Rng,
    s: &mut String,
) -> Result<(), DistanceError> {
    for p_norm in [1.5f64, 1.75] {
        let (dim, alpha) = (4usize, 0.25);
        let out = 8 * RandomProjection::suggested_dim(dim, alpha);
        let proj =
            RandomProjection::p_stable(p_norm, vec![0.0; dim], vec![1.0; dim], alpha, out, rng)?;
        let lp = Lp::new(p_norm, vec![0.0; dim], vec![1.0; dim])?;
        let (pts, qs) = (data(300, dim, seed + 3), data(300, dim, seed + 4));
        let d = pair_distortion::<[f64], _>(
            &pts,
            &qs,
            |x| proj.embed(x),
            |x, q| lp.raw_distance(x, q),
        )?;
        let _ = writeln!(
            s,
            "  l{p_norm}->l1 p-stable projection l={dim} alpha={alpha} dims={out}: expansion {:.3}, contraction {:.3} (median {:.3}), distortion {:.3}",
            d.expansion,
            d.contraction,
            d.median_contraction,
            d.distortion()
        );
    }
    Ok(())
}

/// Bourgain embeddings of edit distance on random DNA words.
fn bourgain_distortions(
    seed: u64,
    rng: &mut ChaCha12Rng,
    s: &mut String,
) -> Result<(), DistanceError> {
    let lev = Levenshtein::new(16)?.with_alphabet("acgt");
    let mut word = || -> String {
        let len = 6 + (rng.next_u64() % 11) as usize;
        (0..len)
            .map(|_| ['a', 'c', 'g', 't'][(rng.next_u64() % 4) as usize])
            .collect()
    };
    for k in [16usize, 128] {
        let queries: Vec<String> = (0..k).map(|_| word()).collect();
        let data: Vec<String> = (0..500).map(|_| word()).collect();
        let b = Bourgain::new(
            queries.clone(),
            data.len(),
            4.0,
            &mut seeded_rng(seed + k as u64),
        )?;
        let d = pair_distortion::<str, _>(
            &data,
            &queries,
            |x| b.embed(&lev, x),
            |x, q| lev.distance(x, q),
        )?;
        let _ = writeln!(
            s,
            "  Bourgain edit distance k={k} dims={}: expansion {:.3}, contraction max {:.2} median {:.2} (bound 64 log2 k = {:.0})",
            b.dim(),
            d.expansion,
            d.contraction,
            d.median_contraction,
            64.0 * (k as f64).log2()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slope_of_a_power_law() {
        let pts: Vec<(f64, f64)> = [1e3, 1e4, 1e5]
            .iter()
            .map(|&n: &f64| (n, 3.0 * n.powf(-0.8)))
            .collect();
        assert!((slope(&pts) + 0.8).abs() < 1e-9);
    }

    #[test]
    fn tiny_protocol_runs() {
        let dir = std::env::temp_dir().join("privq-distance-exp-test");
        let p = Protocol {
            ns: vec![500, 2000],
            dims: vec![2],
            epsilons: vec![Epsilon::new(1, 1).unwrap()],
            delta: 1e-6,
            queries: 100,
            seed: 1,
            out_dir: dir.clone(),
        };
        let mut out = Vec::new();
        let summary = run(&p, &mut out, &mut std::io::sink()).unwrap();
        assert!(summary.contains("tree-cdf"));
        assert!(summary.contains("mwem-grid"));
        assert!(dir.join("distance-l2-eps1.svg").exists());
    }
}

//! `privq experiment distance`: error of the Huang–Roth ℓ1 mechanisms and the
//! baselines as n grows, fitted log-log slopes, and embedding distortion.

use crate::accountant::Accountant;
use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use privq_core::Epsilon;
use privq_core::rand_core::Rng;

use super::svg::{Series, line_chart};
use crate::distance::baselines::{GridMwem, GridMwemConfig, LaplacePerQuery, TreeCdf};
use crate::distance::embed::{self, Bourgain, RandomProjection};
use crate::distance::interactive::{InteractiveConfig, Session};
use crate::distance::metric::{Levenshtein, Lp, Metric};
use crate::distance::offline::{OfflineConfig, Synopsis};
use crate::distance::privacy::Privacy;
use crate::distance::{BoxDomain, Columns, DistanceError};
use crate::seeded_rng;

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

/// Runs the protocol, printing tables and progress, writing SVGs and a CSV.
pub fn run(
    p: &Protocol,
    out: &mut dyn Write,
    progress: &mut dyn Write,
) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
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
                let cols = Columns::new(&domain, &points)?;
                let truth: Vec<f64> = queries
                    .iter()
                    .map(|q| cols.answer(q))
                    .collect::<Result<_, _>>()?;
                let mut rng = seeded_rng(p.seed + 7 * n as u64 + dim as u64);
                let approx = Privacy::approx(eps, p.delta)?;
                for (m, name) in MECHS.iter().enumerate() {
                    let mut alpha = f64::NAN;
                    let answers: Vec<f64> = match m {
                        0 | 1 => {
                            let privacy = if m == 0 { Privacy::pure(eps) } else { approx };
                            let s = Synopsis::release_columns(
                                &cols,
                                &OfflineConfig::new(privacy),
                                &mut Accountant::exactly(privacy.cost())?,
                                &mut rng,
                            )?;
                            alpha = s.alpha();
                            queries
                                .iter()
                                .map(|q| s.answer(q))
                                .collect::<Result<_, _>>()?
                        }
                        2 | 3 => {
                            let privacy = if m == 2 { Privacy::pure(eps) } else { approx };
                            let mut config = InteractiveConfig::new(privacy);
                            config.queries = p.queries;
                            let mut s = Session::new(
                                &cols,
                                &config,
                                &mut Accountant::exactly(config.privacy.cost())?,
                                &mut rng,
                            )?;
                            alpha = s.params().alpha;
                            let mut v = Vec::with_capacity(queries.len());
                            for q in &queries {
                                let y = s.prepare(q)?;
                                v.push(match s.answer(&y, &mut rng) {
                                    Ok(a) => a,
                                    Err(_) => s.hypothesis_answer(&y),
                                });
                            }
                            v
                        }
                        4 => {
                            let mut lap = LaplacePerQuery::new(
                                &cols,
                                queries.len(),
                                Privacy::pure(eps),
                                &mut Accountant::pure(eps),
                            )?;
                            queries
                                .iter()
                                .map(|q| lap.answer(&cols, q, &mut rng))
                                .collect::<Result<_, _>>()?
                        }
                        5 => {
                            let tree = TreeCdf::release(
                                &cols,
                                eps,
                                12,
                                &mut Accountant::pure(eps),
                                &mut rng,
                            )?;
                            queries
                                .iter()
                                .map(|q| tree.answer(q))
                                .collect::<Result<_, _>>()?
                        }
                        _ => {
                            let config = GridMwemConfig::new(eps, mwem_bins(dim));
                            match GridMwem::release(
                                &domain,
                                &points,
                                &config,
                                &mut Accountant::pure(eps),
                                &mut rng,
                            ) {
                                Ok(m) => queries
                                    .iter()
                                    .map(|q| m.answer(q))
                                    .collect::<Result<_, _>>()?,
                                Err(e @ DistanceError::GridTooLarge { .. }) => {
                                    writeln!(
                                        out,
                                        "{dim:>3} {:>5.2} {name:<22} {n:>8} skipped: {e}",
                                        eps.to_f64()
                                    )?;
                                    continue;
                                }
                                Err(e) => return Err(e.into()),
                            }
                        }
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
                        "{dim:>3} {:>5.2} {name:<22} {n:>8} {alpha:>9.4} {max:>10.3e} {mean:>10.3e}",
                        eps.to_f64()
                    )?;
                    let _ = writeln!(
                        csv,
                        "{dim},{},\"{name}\",{n},{alpha},{max},{mean}",
                        eps.to_f64()
                    );
                    if let Some(c) = curves.get_mut(m) {
                        c.push((n as f64, max, 0.0));
                    }
                }
            }
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
            )?;
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
    }
    writeln!(
        out,
        "\nFitted log-log slopes of the max error in n:\n{summary}"
    )?;
    std::fs::write(p.out_dir.join("distance-results.csv"), csv)?;
    writeln!(out, "{}", embeddings(p.seed)?)?;
    Ok(summary)
}

/// Embedding distortion on random Euclidean data and on edit-distance data.
pub fn embeddings(seed: u64) -> Result<String, DistanceError> {
    let mut rng = seeded_rng(seed ^ 0xE3B);
    let mut s = String::from("Embedding distortion on data-query pairs:\n");
    for (dim, alpha) in [(4usize, 0.25), (16, 0.25)] {
        let out = RandomProjection::suggested_dim(dim, alpha);
        let p = RandomProjection::new(vec![0.0; dim], vec![1.0; dim], alpha, out, &mut rng)?;
        let l2 = Lp::l2(vec![0.0; dim], vec![1.0; dim])?;
        let pts = data(300, dim, seed + 1);
        let qs = data(300, dim, seed + 2);
        let eq: Vec<Vec<f64>> = qs.iter().map(|q| p.embed(q)).collect::<Result<_, _>>()?;
        let mut pairs = Vec::new();
        for x in &pts {
            let ex = p.embed(x)?;
            for (q, e) in qs.iter().zip(&eq) {
                pairs.push((l2.raw_distance(x, q)?, embed::l1(&ex, e)));
            }
        }
        let d = embed::distortion(pairs);
        let _ = writeln!(
            s,
            "  l2->l1 projection l={dim} alpha={alpha} dims={out}: expansion {:.3}, contraction {:.3}, distortion {:.3} (target <= {:.3})",
            d.expansion,
            d.contraction,
            d.distortion(),
            1.0 + alpha
        );
    }
    for p_norm in [1.5f64, 1.75] {
        let (dim, alpha) = (4usize, 0.25);
        let out = 8 * RandomProjection::suggested_dim(dim, alpha);
        let proj = RandomProjection::p_stable(
            p_norm,
            vec![0.0; dim],
            vec![1.0; dim],
            alpha,
            out,
            &mut rng,
        )?;
        let lp = Lp::new(p_norm, vec![0.0; dim], vec![1.0; dim])?;
        let pts = data(300, dim, seed + 3);
        let qs = data(300, dim, seed + 4);
        let eq: Vec<Vec<f64>> = qs.iter().map(|q| proj.embed(q)).collect::<Result<_, _>>()?;
        let mut pairs = Vec::new();
        for x in &pts {
            let ex = proj.embed(x)?;
            for (q, e) in qs.iter().zip(&eq) {
                pairs.push((lp.raw_distance(x, q)?, embed::l1(&ex, e)));
            }
        }
        let d = embed::distortion(pairs);
        let _ = writeln!(
            s,
            "  l{p_norm}->l1 p-stable projection l={dim} alpha={alpha} dims={out}: expansion {:.3}, contraction {:.3} (median {:.3}), distortion {:.3}",
            d.expansion,
            d.contraction,
            d.median_contraction,
            d.distortion()
        );
    }
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
        let eq: Vec<Vec<f64>> = queries
            .iter()
            .map(|q| b.embed(&lev, q.as_str()))
            .collect::<Result<_, _>>()?;
        let mut pairs = Vec::new();
        for x in &data {
            let ex = b.embed(&lev, x.as_str())?;
            for (q, e) in queries.iter().zip(&eq) {
                pairs.push((lev.distance(x, q)?, embed::l1(&ex, e)));
            }
        }
        let d = embed::distortion(pairs);
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
    Ok(s)
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

//! Fairness LP benchmarks (thesis Fig. 8.1), |A| = 10 outcomes with random losses in
//! [0, 1], for D_tv and D_∞:
//!
//! * `feature-grid`: |V| = 200 individuals on a 15 × 14 grid of two integer features,
//!   weighted ℓ1 metric (0.1 per unit). Geodesic pruning keeps only neighbouring
//!   pairs' rows (370 of 19 900).
//! * `random-plane`: |V| = 40 uniform points in [0, 1]², Euclidean metric × 2: no
//!   geodesics, every pair keeps its rows (D_tv drops the pairs at d ≥ 1).
//!
//! `PRIVQ_FAIRNESS_SWEEP=1 cargo bench -p privq-host --bench fairness` first prints a
//! one-shot sweep over |V| on both metrics, stopping a series after a solve above
//! 30 s (the largest random-plane |V| microlp solves in under 30 s).

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, criterion_group};
use privq_host::dx::FiniteMetric;
use privq_host::fairness::{Divergence, FairnessLp, Instance};
use privq_host::seeded_rng;
use rand_core::Rng;

const OUTCOMES: usize = 10;

fn uniform(rng: &mut impl Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// |V| = n with random losses; `grid`: the feature grid, else the random plane.
fn instance(n: usize, grid: bool) -> Instance {
    let mut rng = seeded_rng(1);
    let metric = if grid {
        let side = (n as f64).sqrt().ceil() as usize;
        let pts: Vec<[f64; 2]> = (0..n)
            .map(|i| [(i % side) as f64, (i / side) as f64])
            .collect();
        FiniteMetric::weighted_l1(&pts, &[0.1, 0.1]).expect("distinct grid points")
    } else {
        let pts: Vec<[f64; 2]> = (0..n)
            .map(|_| [uniform(&mut rng), uniform(&mut rng)])
            .collect();
        FiniteMetric::euclidean(&pts, 2.0).expect("distinct random points")
    };
    let loss = (0..n)
        .map(|_| (0..OUTCOMES).map(|_| uniform(&mut rng)).collect())
        .collect();
    Instance::new(metric, loss).expect("valid instance")
}

fn name(div: Divergence) -> &'static str {
    match div {
        Divergence::Tv => "D_tv",
        Divergence::Inf => "D_inf",
    }
}

fn sweep() {
    for (grid, sizes) in [
        (true, &[50usize, 100, 200, 300][..]),
        (false, &[20usize, 40, 60, 80, 100, 120][..]),
    ] {
        for div in [Divergence::Inf, Divergence::Tv] {
            for &n in sizes {
                let inst = instance(n, grid);
                let t = Instant::now();
                let sol = FairnessLp::new(div).solve(&inst).expect("solves");
                let secs = t.elapsed().as_secs_f64();
                eprintln!(
                    "sweep {} {} |V|={n} |A|={OUTCOMES}: {:.2} s ({} vars, {} rows, {} pairs; loss {:.4})",
                    if grid { "feature-grid" } else { "random-plane" },
                    name(div),
                    secs,
                    sol.size.vars,
                    sol.size.rows,
                    sol.constrained_pairs,
                    sol.loss
                );
                if secs > 30.0 {
                    break;
                }
            }
        }
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("fairness_lp");
    g.sample_size(10);
    for (label, n, grid) in [("feature-grid", 200, true), ("random-plane", 40, false)] {
        let inst = instance(n, grid);
        for div in [Divergence::Inf, Divergence::Tv] {
            g.bench_function(format!("{label}/{}/{n}x{OUTCOMES}", name(div)), |b| {
                b.iter(|| {
                    FairnessLp::new(div)
                        .solve(black_box(&inst))
                        .expect("solves")
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);

fn main() {
    if std::env::var_os("PRIVQ_FAIRNESS_SWEEP").is_some() {
        sweep();
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}

//! Huang–Roth distance queries: interactive per-query time at n = 10^5,
//! ℓ = 10; the offline synopsis build at α = 0.05; the Bourgain embedding of 10^4
//! points against k = 1000 queries — each next to a baseline measured in the same
//! run (the exact non-private ℓ1 oracle, sorted-column and brute-force; Laplace per
//! query; the tree-CDF release and its answers).
//!
//! ```text
//! cargo bench -p privq-host --bench distance
//! ```
//!
//! Data: skewed points (each coordinate the square of a uniform) with fixed seeds.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use privq_core::rand_core::Rng;
use privq_host::accountant::Accountant;
use privq_host::distance::baselines::{LaplacePerQuery, TreeCdf};
use privq_host::distance::embed::Bourgain;
use privq_host::distance::interactive::{InteractiveConfig, Session};
use privq_host::distance::metric::Lp;
use privq_host::distance::offline::{OfflineConfig, Synopsis};
use privq_host::distance::privacy::Privacy;
use privq_host::distance::{BoxDomain, Columns};
use privq_host::{Epsilon, seeded_rng};

const N: usize = 100_000;
const DIM: usize = 10;

fn unit(rng: &mut impl Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

fn points(n: usize, dim: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = seeded_rng(seed);
    (0..n)
        .map(|_| (0..dim).map(|_| unit(&mut rng).powi(2)).collect())
        .collect()
}

/// The O(ℓn) exact answer by a scan over the data (the "no index" oracle).
fn brute_force(data: &[Vec<f64>], y: &[f64]) -> f64 {
    let total: f64 = data
        .iter()
        .map(|x| x.iter().zip(y).map(|(a, b)| (a - b).abs()).sum::<f64>())
        .sum();
    total / (data.len() as f64 * y.len() as f64)
}

fn bench_interactive(c: &mut Criterion) {
    let domain = BoxDomain::unit_cube(DIM).expect("domain");
    let data = points(N, DIM, 1);
    let cols = Columns::new(&domain, &data).expect("columns");
    let queries = points(4096, DIM, 2);
    let scaled: Vec<Vec<f64>> = queries
        .iter()
        .map(|q| domain.scale(q).expect("in domain"))
        .collect();
    let eps = Epsilon::new(1, 1).expect("valid");
    let privacy = Privacy::approx(eps, 1e-6).expect("valid");
    let mut group = c.benchmark_group("distance_interactive_n1e5_l10");
    group.throughput(Throughput::Elements(1));

    let config = InteractiveConfig::new(privacy);
    let mut rng = seeded_rng(3);
    let mut session = Session::new(
        &cols,
        &config,
        &mut Accountant::exactly(config.privacy.cost()).expect("budget"),
        &mut rng,
    )
    .expect("session");
    let prepared: Vec<_> = queries
        .iter()
        .map(|q| session.prepare(q).expect("in domain"))
        .collect();
    let mut i = 0usize;
    group.bench_function("session_answer", |b| {
        b.iter(|| {
            i += 1;
            let y = &prepared[i % prepared.len()];
            match session.answer(y, &mut rng) {
                Ok(a) => a,
                // A fresh session when the budget runs out (rare: m update rounds).
                Err(_) => {
                    session = Session::new(
                        &cols,
                        &config,
                        &mut Accountant::exactly(config.privacy.cost()).expect("budget"),
                        &mut rng,
                    )
                    .expect("session");
                    session.hypothesis_answer(y)
                }
            }
        })
    });
    // Every query an update round: a tiny α at this n (worst case per query).
    let eager = InteractiveConfig::new(privacy).with_alpha(1e-4);
    let mut s2 = Session::new(
        &cols,
        &eager,
        &mut Accountant::exactly(eager.privacy.cost()).expect("budget"),
        &mut rng,
    )
    .expect("session");
    group.bench_function("session_answer_update_heavy", |b| {
        b.iter(|| {
            i += 1;
            let y = &prepared[i % prepared.len()];
            match s2.answer(y, &mut rng) {
                Ok(a) => a,
                Err(_) => {
                    s2 = Session::new(
                        &cols,
                        &eager,
                        &mut Accountant::exactly(eager.privacy.cost()).expect("budget"),
                        &mut rng,
                    )
                    .expect("session");
                    s2.hypothesis_answer(y)
                }
            }
        })
    });
    group.bench_function("baseline_exact_oracle_sorted", |b| {
        b.iter(|| {
            i += 1;
            cols.answer_scaled(black_box(&scaled[i % scaled.len()]))
        })
    });
    // k = 10^4 queries per budget; a fresh budget when it runs out.
    let fresh = || {
        LaplacePerQuery::new(
            &cols,
            10_000,
            Privacy::pure(eps),
            &mut Accountant::pure(eps),
        )
        .expect("plan")
    };
    let mut lap = fresh();
    group.bench_function("baseline_laplace_per_query", |b| {
        b.iter(|| {
            i += 1;
            let q = black_box(&queries[i % queries.len()]);
            lap.answer(&cols, q, &mut rng).unwrap_or_else(|_| {
                lap = fresh();
                lap.answer(&cols, q, &mut rng).expect("answers")
            })
        })
    });
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("baseline_exact_oracle_scan_O(ln)", |b| {
        b.iter(|| {
            i += 1;
            brute_force(&data, black_box(&queries[i % queries.len()]))
        })
    });
    group.finish();
    eprintln!(
        "interactive n = {N}, l = {DIM}: calibrated alpha = {:.4}, {} update rounds",
        session.params().alpha,
        session.params().rounds
    );
}

fn bench_offline(c: &mut Criterion) {
    let domain = BoxDomain::unit_cube(DIM).expect("domain");
    let data = points(N, DIM, 4);
    let cols = Columns::new(&domain, &data).expect("columns");
    let eps = Epsilon::new(1, 1).expect("valid");
    let mut group = c.benchmark_group("distance_offline_n1e5_l10_alpha0.05");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));
    for (name, privacy) in [
        ("synopsis_pure", Privacy::pure(eps)),
        (
            "synopsis_approx",
            Privacy::approx(eps, 1e-6).expect("valid"),
        ),
    ] {
        let config = OfflineConfig::new(privacy).with_alpha(0.05);
        let mut rng = seeded_rng(5);
        group.bench_function(format!("{name}_from_columns"), |b| {
            b.iter(|| {
                Synopsis::release_columns(
                    &cols,
                    &config,
                    &mut Accountant::exactly(config.privacy.cost()).expect("budget"),
                    &mut rng,
                )
                .expect("release")
            })
        });
    }
    let config = OfflineConfig::new(Privacy::pure(eps)).with_alpha(0.05);
    let mut rng = seeded_rng(6);
    group.bench_function("synopsis_pure_from_points", |b| {
        b.iter(|| {
            Synopsis::release(
                &domain,
                &data,
                &config,
                &mut Accountant::exactly(config.privacy.cost()).expect("budget"),
                &mut rng,
            )
            .expect("release")
        })
    });
    group.bench_function("baseline_columns_build", |b| {
        b.iter(|| Columns::new(&domain, black_box(&data)).expect("columns"))
    });
    group.bench_function("baseline_tree_cdf_release_depth12", |b| {
        b.iter(|| {
            TreeCdf::release(&cols, eps, 12, &mut Accountant::pure(eps), &mut rng).expect("release")
        })
    });
    group.finish();

    // Answer time of the two released structures.
    let synopsis = Synopsis::release_columns(
        &cols,
        &config,
        &mut Accountant::exactly(config.privacy.cost()).expect("budget"),
        &mut rng,
    )
    .expect("release");
    let tree =
        TreeCdf::release(&cols, eps, 12, &mut Accountant::pure(eps), &mut rng).expect("release");
    let queries = points(4096, DIM, 7);
    let mut group = c.benchmark_group("distance_offline_answer_l10");
    group.throughput(Throughput::Elements(1));
    let mut i = 0usize;
    group.bench_function("synopsis_answer", |b| {
        b.iter(|| {
            i += 1;
            synopsis.answer(black_box(&queries[i % queries.len()]))
        })
    });
    group.bench_function("baseline_tree_cdf_answer", |b| {
        b.iter(|| {
            i += 1;
            tree.answer(black_box(&queries[i % queries.len()]))
        })
    });
    group.finish();
}

fn bench_bourgain(c: &mut Criterion) {
    const POINTS: usize = 10_000;
    const K: usize = 1000;
    let dim = 10;
    let metric = Lp::l2(vec![0.0; dim], vec![1.0; dim]).expect("metric");
    let data = points(POINTS, dim, 8);
    let queries = points(K, dim, 9);
    let mut group = c.benchmark_group("distance_bourgain_l2_1e4_points_k1000");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("build_c4", |b| {
        b.iter_batched(
            || queries.clone(),
            |q| Bourgain::new(q, POINTS, 4.0, &mut seeded_rng(10)).expect("embedding"),
            BatchSize::LargeInput,
        )
    });
    let emb = Bourgain::new(queries.clone(), POINTS, 4.0, &mut seeded_rng(10)).expect("embedding");
    eprintln!("Bourgain output dimension (c = 4): {}", emb.dim());
    group.bench_function("embed_all_points_c4", |b| {
        b.iter(|| {
            data.iter()
                .map(|x| emb.embed(&metric, x).expect("embeds"))
                .collect::<Vec<_>>()
        })
    });
    // Baseline: just the n·k metric evaluations every embedding needs.
    group.bench_function("baseline_all_nk_distances", |b| {
        b.iter(|| {
            let mut s = 0.0;
            for x in &data {
                for q in &queries {
                    s += privq_host::distance::Metric::distance(&metric, x, q).expect("fits");
                }
            }
            s
        })
    });
    group.finish();
}

criterion_group!(benches, bench_interactive, bench_offline, bench_bourgain);
criterion_main!(benches);

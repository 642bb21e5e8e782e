//! K-norm benchmarks (thesis Ch. 3): one KM release at d = 32, N = 1024 on an exact
//! body (the cross-polytope, exact sampler) and on a random ±1 body (hit-and-run,
//! 4·d = 128 steps, the floor `hit_and_run_approximate` accepts; two chord LPs of
//! size 33 × 2050 per step), the gauge `min{‖x‖₁ : Fx = v}` at d × 2N = 32 × 2048
//! and 64 × 2048 both by the general LP layer (`gauge_lp`, the baseline) and by the
//! dense chord simplex (`gauge`), and NiKM (Fig. 3.3) next to KM on the same
//! bodies: d = 32 on the cross-polytope (exact at all 6 levels), and d = 8 on a body
//! of uniform entries in [−1, 1] (hit-and-run at 32 steps per level). Run one part
//! with a filter, e.g. `cargo bench -p privq-host --bench knorm -- 'gauge'`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use privq_host::accountant::Accountant;
use privq_host::contract::{Mechanism, Neighbours};
use privq_host::knorm::{Body, KNorm, Nikm, NikmOptions, Shape};
use privq_host::{Epsilon, seeded_rng};
use rand_core::Rng;

fn sign_rows(d: usize, n: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = seeded_rng(seed);
    (0..d)
        .map(|_| {
            (0..n)
                .map(|_| if rng.next_u32() & 1 == 1 { 1.0 } else { -1.0 })
                .collect()
        })
        .collect()
}

/// `[I_d | columns of ℓ1 norm 1/2]`: K = B₁ᵈ with N columns.
fn padded_identity(d: usize, n: usize) -> Body {
    let mut rows = sign_rows(d, n, 5);
    for (i, row) in rows.iter_mut().enumerate() {
        for (j, a) in row.iter_mut().enumerate() {
            *a = if j < d {
                if i == j { 1.0 } else { 0.0 }
            } else {
                *a / (2 * d) as f64
            };
        }
    }
    let body = Body::from_rows(&rows).expect("valid");
    assert_eq!(body.shape(), Shape::CrossPolytope);
    body
}

fn bench(c: &mut Criterion) {
    let eps = Epsilon::new(1, 1).expect("ε");
    let (d, n) = (32, 1024);
    let counts: Vec<u64> = (0..n as u64).map(|j| 100 + j % 37).collect();
    let mut g = c.benchmark_group("knorm");
    g.sample_size(10);

    let exact = KNorm::new(padded_identity(d, n), Neighbours::AddRemove, eps).expect("exact");
    let mut rng = seeded_rng(1);
    g.bench_function("KM release d=32 N=1024 cross-polytope (exact)", |b| {
        b.iter(|| {
            let mut acct = Accountant::pure(eps);
            exact
                .release(black_box(&counts[..]), &mut acct, &mut rng)
                .expect("release")
        })
    });

    let nikm = Nikm::new(
        padded_identity(d, n),
        Neighbours::AddRemove,
        eps,
        NikmOptions::default(),
    )
    .expect("exact levels");
    g.bench_function(
        "NiKM release d=32 N=1024 cross-polytope (exact, 6 levels)",
        |b| {
            b.iter(|| {
                let mut acct = Accountant::pure(eps);
                nikm.release(black_box(&counts[..]), &mut acct, &mut rng)
                    .expect("release")
            })
        },
    );

    // Hit-and-run: built on first use (criterion calls a routine once per sample),
    // so that a filter skips the slow constructions.
    let random = Body::from_rows(&sign_rows(d, n, 2)).expect("valid");
    let mut cached = None;
    g.bench_function(
        "KM release d=32 N=1024 random ±1 (hit-and-run, 128 steps)",
        |b| {
            let walk = cached.get_or_insert_with(|| {
                KNorm::hit_and_run_approximate(random.clone(), Neighbours::AddRemove, eps, 4 * d)
                    .expect("calibrated")
            });
            b.iter(|| {
                let mut acct = Accountant::pure(eps);
                acct.allow_uncertified();
                walk.release(black_box(&counts[..]), &mut acct, &mut rng)
                    .expect("release")
            })
        },
    );

    // Uniform entries: a ±1 matrix at d = 8 ≤ log₂ N + 1 holds every sign pattern,
    // and K would be the cube (exact sampler).
    let mut entries = seeded_rng(4);
    let unit = 1.0 / (1u64 << 53) as f64;
    let uniform_rows: Vec<Vec<f64>> = (0..8)
        .map(|_| {
            (0..n)
                .map(|_| 2.0 * (entries.next_u64() >> 11) as f64 * unit - 1.0)
                .collect()
        })
        .collect();
    let small = Body::from_rows(&uniform_rows).expect("valid");
    assert_eq!(small.shape(), Shape::General);
    let mut cached = None;
    g.bench_function(
        "KM release d=8 N=1024 uniform entries (hit-and-run, 32 steps)",
        |b| {
            let walk = cached.get_or_insert_with(|| {
                KNorm::hit_and_run_approximate(small.clone(), Neighbours::AddRemove, eps, 32)
                    .expect("calibrated")
            });
            b.iter(|| {
                let mut acct = Accountant::pure(eps);
                acct.allow_uncertified();
                walk.release(black_box(&counts[..]), &mut acct, &mut rng)
                    .expect("release")
            })
        },
    );
    let mut cached_nikm = None;
    g.bench_function(
        "NiKM release d=8 N=1024 uniform entries (hit-and-run, 32 steps/level, 4 levels)",
        |b| {
            let nikm = cached_nikm.get_or_insert_with(|| {
                let options = NikmOptions {
                    steps: Some(32),
                    covariance_samples: 200,
                    covariance_seed: 1,
                };
                Nikm::new(small.clone(), Neighbours::AddRemove, eps, options).expect("calibrated")
            });
            b.iter(|| {
                let mut acct = Accountant::pure(eps);
                acct.allow_uncertified();
                nikm.release(black_box(&counts[..]), &mut acct, &mut rng)
                    .expect("release")
            })
        },
    );

    let v: Vec<f64> = (0..d).map(|i| (i as f64 * 0.37).sin()).collect();
    g.bench_function("gauge LP d=32 2N=2048", |b| {
        b.iter(|| random.gauge_lp(black_box(&v)).expect("gauge"))
    });
    g.bench_function("gauge chord simplex d=32 2N=2048", |b| {
        b.iter(|| random.gauge(black_box(&v)).expect("gauge"))
    });
    let wide = Body::from_rows(&sign_rows(64, n, 3)).expect("valid");
    let v64: Vec<f64> = (0..64).map(|i| (i as f64 * 0.37).sin()).collect();
    g.bench_function("gauge LP d=64 2N=2048", |b| {
        b.iter(|| wide.gauge_lp(black_box(&v64)).expect("gauge"))
    });
    g.bench_function("gauge chord simplex d=64 2N=2048", |b| {
        b.iter(|| wide.gauge(black_box(&v64)).expect("gauge"))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

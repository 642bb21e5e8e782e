//! K-norm benchmarks (thesis Ch. 3): one KM release at d = 32, N = 1024 on an exact
//! body (the cross-polytope, exact sampler) and on a random ±1 body (hit-and-run,
//! 10 steps, two LPs of size 32 × 2049 per step), and one gauge LP
//! `min{‖x‖₁ : Fx = v}` at d × 2N = 32 × 2048 and 64 × 2048.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use privq_host::accountant::Accountant;
use privq_host::contract::{Mechanism, Neighbours};
use privq_host::knorm::{Body, KNorm, Shape};
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

    let random = Body::from_rows(&sign_rows(d, n, 2)).expect("valid");
    let walk = KNorm::hit_and_run_approximate(random.clone(), Neighbours::AddRemove, eps, 10)
        .expect("calibrated");
    g.bench_function(
        "KM release d=32 N=1024 random ±1 (hit-and-run, 10 steps)",
        |b| {
            b.iter(|| {
                let mut acct = Accountant::pure(eps);
                walk.release(black_box(&counts[..]), &mut acct, &mut rng)
                    .expect("release")
            })
        },
    );

    let v: Vec<f64> = (0..d).map(|i| (i as f64 * 0.37).sin()).collect();
    g.bench_function("gauge LP d=32 2N=2048", |b| {
        b.iter(|| random.gauge_lp(black_box(&v)).expect("gauge"))
    });
    let wide = Body::from_rows(&sign_rows(64, n, 3)).expect("valid");
    let v64: Vec<f64> = (0..64).map(|i| (i as f64 * 0.37).sin()).collect();
    g.bench_function("gauge LP d=64 2N=2048", |b| {
        b.iter(|| wide.gauge_lp(black_box(&v64)).expect("gauge"))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! d_X-privacy benchmarks: PSA and the exact relaxed optimum for the
//! US-cities universe (N = 741, K = 10), metric closure for N = 975, and one exact
//! d_X-Laplace release. Uses ../shared/data/us_cities.csv when present, otherwise
//! a synthetic universe of the same size (printed).

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use privq_host::accountant::Accountant;
use privq_host::dx::optimum::{Objective, relaxed_optimum};
use privq_host::dx::psa::{PairTable, psa_table};
use privq_host::dx::universe::{load_cities, synthetic_points};
use privq_host::dx::{DxLaplace, FiniteMetric, Queries};
use privq_host::seeded_rng;
use rand_core::Rng;

fn points(n: usize) -> Vec<[f64; 2]> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/us_cities.csv");
    let path = path.as_path();
    match load_cities(path, n) {
        Ok(c) if c.points.len() == n => c.points,
        _ => {
            eprintln!(
                "dx bench: {} absent; synthetic universe of {n} points",
                path.display()
            );
            synthetic_points(n, &mut seeded_rng(1))
        }
    }
}

fn bench(c: &mut Criterion) {
    let pts = points(741);
    let metric = FiniteMetric::euclidean(&pts, 1.0).expect("distinct points");
    let mut rng = seeded_rng(7);
    let rows: Vec<Vec<f64>> = (0..10)
        .map(|_| {
            (0..741)
                .map(|_| rng.next_u32() as f64 / 4294967296.0)
                .collect()
        })
        .collect();
    let q = Queries::new(rows).expect("finite");
    let table = PairTable::new(&metric, &q).expect("sizes");
    let mut g = c.benchmark_group("dx");
    g.sample_size(10);
    g.bench_function("psa N=741 K=10 (incl. pair table)", |b| {
        b.iter(|| psa_table(&PairTable::new(&metric, black_box(&q)).unwrap()).unwrap())
    });
    g.bench_function("relaxed optimum N=741 K=10", |b| {
        b.iter(|| relaxed_optimum(black_box(&table), Objective::SumOfSquares).unwrap())
    });
    let sel = psa_table(&table).expect("psa");
    let counts: Vec<u64> = (0..741).map(|i| 1000 + i as u64).collect();
    g.bench_function("d_X Laplace construct (grid calibration) N=741 K=10", |b| {
        b.iter(|| DxLaplace::new(&metric, q.clone(), sel.scales.clone()).unwrap())
    });
    let mech = DxLaplace::new(&metric, q.clone(), sel.scales.clone()).expect("private");
    let mut rrng = seeded_rng(3);
    let eps = mech.spend().charged_epsilon().expect("finite metric");
    // Each release is charged to a fresh accountant, as a one-release run would be.
    g.bench_function("d_X Laplace release N=741 K=10", |b| {
        b.iter(|| {
            let mut accountant = Accountant::pure(eps);
            mech.release(black_box(&counts), &mut accountant, &mut rrng)
                .unwrap()
        })
    });
    let big = points(975);
    let m975 = FiniteMetric::euclidean(&big, 1.0).expect("distinct points");
    g.bench_function("metric closure N=975", |b| {
        b.iter(|| black_box(&m975).closure())
    });
    g.bench_function("triangle validation N=975", |b| {
        b.iter(|| black_box(&m975).violations(1))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

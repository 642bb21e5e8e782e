//! PMW per-query latency at N = 2^20 against the time to stream the weight vector
//! twice through memory (the bound: within 3×), measured in the same run.
//!
//! ```text
//! cargo bench -p privq-host --bench pmw
//! ```
//!
//! The data are synthetic counts on `{0,1}^20` (n ≈ 10^12 records, so the user
//! constants pass the privacy check); queries are conjunctions and parities.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use privq_host::accountant::Accountant;
use privq_host::central::pmw::{PmwConfig, PmwSession, PmwVariant};
use privq_host::data::{CountHistogram, Domain, MemoryCap};
use privq_host::query::Query;
use privq_host::{Epsilon, seeded_rng};

const D: usize = 20;
const N: usize = 1 << D;

/// Reads `v` twice with independent accumulators (bandwidth-bound).
fn stream_twice(v: &[f64]) -> f64 {
    let mut acc = [0.0f64; 8];
    for _ in 0..2 {
        for c in v.chunks_exact(8) {
            for j in 0..8 {
                acc[j] += c[j];
            }
        }
    }
    acc.iter().sum()
}

fn bench_pmw(c: &mut Criterion) {
    let counts: Vec<u64> = (0..N)
        .map(|u| (1 + ((u * 2_654_435_761) % 97) as u64) * 20_000)
        .collect();
    let counts = CountHistogram::from_counts(counts, MemoryCap::default()).expect("counts");
    let x = counts.normalized().expect("records");
    let domain = Domain::binary((0..D).map(|i| format!("a{i}"))).expect("binary domain");
    let queries: Vec<Query> = (0..64)
        .map(|i| {
            let attrs = [i % D, (i * 7 + 3) % D, (i * 13 + 5) % D];
            if i % 2 == 0 {
                Query::conjunction(&domain, &attrs).expect("valid")
            } else {
                Query::parity(&domain, &attrs).expect("valid")
            }
        })
        .collect();
    let n = counts.total();
    let eps = Epsilon::new(1, 1).expect("valid");
    let mut group = c.benchmark_group("pmw_n2e20");
    group.throughput(Throughput::Elements(1));

    let mut i = 0usize;
    group.bench_function("stream_weights_twice", |b| {
        b.iter(|| stream_twice(black_box(x.probabilities())))
    });

    // Lazy rounds: a huge threshold, so no round updates.
    let lazy = PmwConfig::user(0.01, 1e-4, 10.0, 1e6, PmwVariant::Pure, eps, n).expect("private");
    let mut budget = Accountant::pure(eps);
    let mut s = PmwSession::new(&counts, lazy, usize::MAX, eps, &mut budget, seeded_rng(1))
        .expect("session");
    group.bench_function("query_lazy", |b| {
        b.iter(|| {
            i += 1;
            s.answer(&queries[i % queries.len()]).expect("answers")
        })
    });

    // Update rounds: a tiny threshold, so every round updates.
    let upd = PmwConfig::user(1e-6, 0.02, 1e-12, 1e9, PmwVariant::Pure, eps, n).expect("private");
    let mut budget = Accountant::pure(eps);
    let mut s = PmwSession::new(&counts, upd, usize::MAX, eps, &mut budget, seeded_rng(2))
        .expect("session");
    group.bench_function("query_update", |b| {
        b.iter(|| {
            i += 1;
            s.answer(&queries[i % queries.len()]).expect("answers")
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .sample_size(20);
    targets = bench_pmw
}
criterion_main!(benches);

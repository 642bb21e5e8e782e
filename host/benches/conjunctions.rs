//! Chapter 6 on NLTCS (16 binary attributes, the table replicated 100 times as in
//! `privq experiment conjunctions`, n = 2 157 400): (a) Fig. 6.6 — the tolerant
//! decomposition and the piece means through one central SQ oracle — at α = 0.1,
//! β = 0.1 (the theorem's ρ ≈ 5.6·10⁻⁴) with piece caps 16 and 64; (b) Fig. 6.7 —
//! agnostic learning + MW over the 697 monotone conjunctions of width ≤ 3, central
//! STAT, β = 0.2.
//!
//! ```text
//! cargo bench -p privq-host --bench conjunctions
//! ```
//!
//! Needs `../shared/data/nltcs.csv` (relative to the repository) and panics
//! without it: a benchmark must not pass by measuring nothing.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use privq_host::accountant::Accountant;
use privq_host::conjunctions::{
    ReleaseConfig, release_by_agnostic_learning_private, release_conjunctions,
};
use privq_host::data::{CountHistogram, CsvColumns, Dataset, MemoryCap};
use privq_host::query::Query;
use privq_host::{Epsilon, seeded_rng};

/// NLTCS's counts, each multiplied by 100.
fn nltcs_times_100() -> CountHistogram {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/nltcs.csv");
    assert!(
        path.exists(),
        "{} is absent: the conjunction benchmark needs NLTCS (see the datasets' provenance)",
        path.display()
    );
    let ds = Dataset::binary_from_header(&path, &CsvColumns::new(), MemoryCap::default())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let counts = ds.counts.counts().iter().map(|&c| c * 100).collect();
    CountHistogram::from_counts(counts, MemoryCap::default()).expect("counts")
}

fn bench_conjunctions(c: &mut Criterion) {
    let data = nltcs_times_100();
    assert_eq!(data.len(), 1 << 16, "NLTCS has 16 binary attributes");
    let eps = Epsilon::new(1, 1).expect("valid");
    let mut group = c.benchmark_group("conjunctions_nltcs");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(10));

    for cap in [16usize, 64] {
        let config = ReleaseConfig {
            alpha: 0.1,
            beta: 0.1,
            p: vec![0.5; 16],
            cap,
            rho: None,
            // The theorem's n at this ρ is far above 2·10⁶ (the SQ barrier); the
            // benchmark times the release, not its accuracy.
            require_n: false,
        };
        let mut rng = seeded_rng(1);
        group.bench_function(format!("fig_6_6_release_cap{cap}"), |b| {
            b.iter(|| {
                let r = release_conjunctions(
                    black_box(&data),
                    &config,
                    eps,
                    &mut Accountant::pure(eps),
                    &mut rng,
                )
                .expect("release");
                black_box(r.decomposition().len())
            })
        });
    }

    let class: Vec<Query> = (0..1usize << 16)
        .filter(|m| m.count_ones() <= 3)
        .map(|m| Query::BitPattern {
            mask: m,
            pattern: m,
        })
        .collect();
    assert_eq!(class.len(), 697);
    let mut rng = seeded_rng(2);
    group.bench_function("fig_6_7_width3_beta0.2", |b| {
        b.iter(|| {
            let r = release_by_agnostic_learning_private(
                black_box(&data),
                &class,
                0.2,
                eps,
                &mut Accountant::pure(eps),
                &mut rng,
            )
            .expect("release");
            black_box(r.answers.len())
        })
    });
    group.finish();
}

criterion_group!(benches, bench_conjunctions);
criterion_main!(benches);

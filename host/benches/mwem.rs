//! MWEM on NLTCS (N = 2^16, degree-3 parities, |Q| = 696): one round, and a full
//! 40-round run with the improvements. Every round gets all 696 answers from one
//! Walsh–Hadamard transform. The `workloads` group runs the same 40 improved
//! rounds on all 3-way marginals (|Q| = 4480 cells), answered from the same
//! transform, beside parity:3 as the baseline.
//!
//! ```text
//! cargo bench -p privq-host --bench mwem
//! ```
//!
//! Needs `../shared/data/nltcs.csv` (relative to the repository); without it the
//! benchmark prints a SKIPPED line and measures nothing, or fails when `CI` is set.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use privq_host::accountant::Accountant;
use privq_host::central::mwem::{Improvements, MwemConfig, OutputRule, Reiterate, mwem};
use privq_host::data::{CsvColumns, Dataset, MemoryCap};
use privq_host::query::Workload;
use privq_host::{Epsilon, seeded_rng};

fn nltcs() -> Option<Dataset> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/nltcs.csv");
    if !path.exists() {
        // Under CI a benchmark must not pass by measuring nothing.
        assert!(
            std::env::var_os("CI").is_none(),
            "{} is absent and CI is set",
            path.display()
        );
        eprintln!("SKIPPED: {} is absent; no MWEM benchmark", path.display());
        return None;
    }
    match Dataset::binary_from_header(&path, &CsvColumns::new(), MemoryCap::default()) {
        Ok(ds) => Some(ds),
        Err(e) => panic!("{}: {e}", path.display()),
    }
}

/// A fresh accountant per run, large enough for any configuration benchmarked.
fn budget() -> Accountant {
    Accountant::pure(Epsilon::new(100, 1).expect("valid"))
}

/// 40 rounds with the improvements and `passes` re-iteration passes per round.
fn improved(eps: Epsilon, passes: usize) -> MwemConfig {
    MwemConfig {
        improvements: Improvements {
            reiterate: Some(Reiterate {
                passes,
                tolerance: 1e-9,
                max_noise: 0.05,
                discrepancy: true,
            }),
            noisy_init: Some((1, 10)),
            init_policy: Default::default(),
            adaptive: false,
            adaptive_max_noise: 0.2,
        },
        output: OutputRule::Last,
        ..MwemConfig::unoptimized(eps, 40).expect("T = 40")
    }
}

fn bench_mwem(c: &mut Criterion) {
    let Some(ds) = nltcs() else { return };
    let Ok(workload) = Workload::parities(&ds.domain, 3) else {
        return;
    };
    assert_eq!(workload.len(), 696);
    let eps: Epsilon = "1".parse().expect("valid epsilon");
    let mut group = c.benchmark_group("mwem_nltcs_w3");

    let one_round = MwemConfig::unoptimized(eps, 1).expect("T = 1");
    let mut rng = seeded_rng(1);
    group.bench_function("one_round", |b| {
        b.iter(|| {
            mwem(
                black_box(&ds.counts),
                &workload,
                &one_round,
                &mut budget(),
                &mut rng,
            )
            .expect("runs")
        })
    });

    let plain = MwemConfig::unoptimized(eps, 40).expect("T = 40");
    group.bench_function("40_rounds_plain", |b| {
        b.iter(|| mwem(&ds.counts, &workload, &plain, &mut budget(), &mut rng).expect("runs"))
    });

    for passes in [1usize, 5, 20] {
        let improved = improved(eps, passes);
        group.bench_function(format!("40_rounds_improved_R{passes}"), |b| {
            b.iter(|| {
                mwem(&ds.counts, &workload, &improved, &mut budget(), &mut rng).expect("runs")
            })
        });
    }
    group.finish();

    let improved = improved(eps, 5);
    let mut group = c.benchmark_group("mwem_nltcs_workloads");
    for (name, workload) in [
        ("parity3", Workload::parities(&ds.domain, 3)),
        ("marginals3", Workload::marginals(&ds.domain, 3)),
    ] {
        let workload = workload.expect("a binary domain of 16 attributes");
        group.bench_function(format!("40_rounds_{name}"), |b| {
            b.iter(|| {
                mwem(&ds.counts, &workload, &improved, &mut budget(), &mut rng).expect("runs")
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .sample_size(10);
    targets = bench_mwem
}
criterion_main!(benches);

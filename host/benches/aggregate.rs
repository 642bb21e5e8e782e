//! Private statistics by group (`privq_host::aggregate`, `privq sql`) against a plain
//! non-private group-by in the same run: the privacy overhead.
//!
//! ```text
//! cargo bench -p privq-host --bench aggregate                          # 10⁶ rows
//! PRIVQ_BENCH_ROWS=10000000 cargo bench -p privq-host --bench aggregate  # 10⁷ rows
//! cargo bench -p privq-host --features bench-opendp --bench aggregate  # with OpenDP 0.16
//! cargo bench -p privq-host --bench aggregate_once -- --rows 100000000  # 10⁸ rows, once
//! ```
//!
//! The last is `aggregate_once.rs`: the same table, plans and baselines (both include
//! `shared/aggregate.rs`), each case timed once (`--repeats R` for more) instead of
//! criterion's ten or more samples, which at 10⁸ rows would take most of an hour; it
//! checks the memory it needs against `/proc/meminfo` first and prints a table of
//! wall times, same-run ratios and peak memory.
//!
//! The table is synthetic and generated in memory from a fixed seed: N rows (10⁶ by
//! default, `PRIVQ_BENCH_ROWS` to change), N/10 privacy units of exactly 10 rows each,
//! all of a unit's rows in one of 1 000 groups, rows in shuffled order, one value
//! column `x` uniform on [−10, 110) with two decimals (bounds 0:100, so a sixth of the
//! values are clamped). The query is `COUNT(*)`, `SUM(x)`, `AVG(x)` by group at ε = 1
//! with contribution limits of 1 group and 10 rows per unit (so bounding keeps every
//! row and the private values estimate the non-private ones).
//!
//! Two groups of cases, each case taking the same input:
//!
//! * `aggregate_parse/N` — from the CSV text (held in memory): `privq_from_csv` is
//!   [`Table::from_csv`] (parse, validate, intern units and keys); `baseline_csv` is a
//!   non-private group-by with the same `csv` crate that parses each row's key and
//!   value and adds them up (no unit column, no validation, no bounding).
//! * `aggregate_release/N` — on rows already in memory: `privq_public` and
//!   `privq_private` are [`Plan::release`] with the 1 000 public keys and with keys
//!   selected privately (δ = 10⁻⁶); `baseline_vec` and `baseline_hashmap` compute the
//!   same counts, sums and means from the same rows (interned keys) into a `Vec` or a
//!   `HashMap` by key; `baseline_sorted` first sorts the row indices by (unit, key,
//!   row), as privq's contribution bounding once did for every row (it now sorts
//!   only the rows of units with several groups or over a limit), then adds up the
//!   sorted rows: what that sort cost (`baseline_sorted_packed`: the same order from
//!   a sort of packed `(unit, key)` words); `opendp` (with
//!   `--features bench-opendp`) is the same query from OpenDP 0.16's transformations
//!   and measurements (see [`shared::opendp_case`]).
//!
//! Criterion takes 10 samples per case (each sample one call at these sizes); the
//! machine is shared, so compare medians within one run.

use std::hint::black_box;
use std::time::Duration;

use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use privq_host::aggregate::{Groups, Table};
use rand_chacha::ChaCha12Rng;
use rand_core::SeedableRng;

#[path = "shared/aggregate.rs"]
mod shared;
use shared::{
    baseline_csv, baseline_hashmap, baseline_sorted, baseline_sorted_packed, baseline_vec,
    generate, plan, public_keys,
};

fn rows() -> usize {
    std::env::var("PRIVQ_BENCH_ROWS")
        .ok()
        .and_then(|s| s.replace('_', "").parse().ok())
        .unwrap_or(1_000_000)
}

fn aggregate(c: &mut Criterion) {
    let n = rows();
    let (data, csv) = generate(n, |_, _| {});
    let public = plan(public_keys());
    let private = plan(Groups::Private { delta: 1e-6 });
    let table = Table::from_csv(csv.as_bytes(), &public.columns(), usize::MAX)
        .expect("the synthetic table loads");
    assert_eq!(table.rows(), data.rows);
    // Both plans read the same columns, so one table serves both.
    assert_eq!(public.columns(), private.columns());

    // Sanity, outside the timing: every baseline agrees, and privq's count of a group
    // is near the true one (its noise scale is 30 rows here).
    let truth = baseline_vec(&data.keys, &data.x);
    assert_eq!(truth.iter().map(|s| s.0).sum::<u64>(), n as u64);
    assert_eq!(
        baseline_sorted(&data.units, &data.keys, &data.x)[7].0,
        truth[7].0
    );
    assert_eq!(
        baseline_sorted_packed(&data.units, &data.keys, &data.x)[7].0,
        truth[7].0
    );
    assert_eq!(baseline_hashmap(&data.keys, &data.x)[&7].0, truth[7].0);
    assert_eq!(baseline_csv(csv.as_bytes())["g7"].0, truth[7].0);
    let mut rng = ChaCha12Rng::seed_from_u64(1);
    let (release, _) = public.release(&table, &mut rng).expect("a release");
    let row = &release.rows()[7];
    assert_eq!(row.key(), ["g7"]);
    assert!((row.estimates()[0].value() - truth[7].0 as f64).abs() < 1_000.0);

    let mut parse = c.benchmark_group("aggregate_parse");
    parse.sampling_mode(SamplingMode::Flat);
    parse.throughput(Throughput::Elements(n as u64));
    let columns = public.columns();
    parse.bench_function(BenchmarkId::new("privq_from_csv", n), |b| {
        b.iter(|| Table::from_csv(black_box(csv.as_bytes()), &columns, usize::MAX).expect("loads"))
    });
    parse.bench_function(BenchmarkId::new("baseline_csv", n), |b| {
        b.iter(|| baseline_csv(black_box(csv.as_bytes())))
    });
    parse.finish();

    let mut release = c.benchmark_group("aggregate_release");
    release.sampling_mode(SamplingMode::Flat);
    release.throughput(Throughput::Elements(n as u64));
    release.bench_function(BenchmarkId::new("privq_public", n), |b| {
        let mut rng = ChaCha12Rng::seed_from_u64(2);
        b.iter(|| {
            public
                .release(black_box(&table), &mut rng)
                .expect("released")
        })
    });
    release.bench_function(BenchmarkId::new("privq_private", n), |b| {
        let mut rng = ChaCha12Rng::seed_from_u64(3);
        b.iter(|| {
            private
                .release(black_box(&table), &mut rng)
                .expect("released")
        })
    });
    release.bench_function(BenchmarkId::new("baseline_vec", n), |b| {
        b.iter(|| baseline_vec(black_box(&data.keys), black_box(&data.x)))
    });
    release.bench_function(BenchmarkId::new("baseline_hashmap", n), |b| {
        b.iter(|| baseline_hashmap(black_box(&data.keys), black_box(&data.x)))
    });
    release.bench_function(BenchmarkId::new("baseline_sorted", n), |b| {
        b.iter(|| baseline_sorted(black_box(&data.units), &data.keys, &data.x))
    });
    release.bench_function(BenchmarkId::new("baseline_sorted_packed", n), |b| {
        b.iter(|| baseline_sorted_packed(black_box(&data.units), &data.keys, &data.x))
    });
    #[cfg(feature = "bench-opendp")]
    {
        let od = shared::opendp_case::OpenDp::build();
        release.bench_function(BenchmarkId::new("opendp", n), |b| {
            b.iter(|| od.release(black_box(&data.keys), black_box(&data.x)))
        });
    }
    release.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .sample_size(10)
}

criterion_group! {
    name = benches;
    config = config();
    targets = aggregate
}
criterion_main!(benches);

//! Private statistics by group (`privq_host::aggregate`, `privq sql`) against a plain
//! non-private group-by in the same run: the privacy overhead.
//!
//! ```text
//! cargo bench -p privq-host --bench aggregate                          # 10⁶ rows
//! PRIVQ_BENCH_ROWS=10000000 cargo bench -p privq-host --bench aggregate  # 10⁷ rows
//! cargo bench -p privq-host --features bench-opendp --bench aggregate  # with OpenDP 0.16
//! ```
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
//!   and measurements (see [`opendp_case`]).
//!
//! Criterion takes 10 samples per case (each sample one call at these sizes); the
//! machine is shared, so compare medians within one run.

use std::collections::HashMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use privq_host::Epsilon;
use privq_host::aggregate::{Aggregate, Contribution, Groups, Plan, Query, Table};
use rand_chacha::ChaCha12Rng;
use rand_core::{Rng, SeedableRng};

/// Distinct group keys.
const GROUPS: u32 = 1_000;
/// Rows per privacy unit (all in one group).
const ROWS_PER_UNIT: u32 = 10;

/// The synthetic table: the CSV text and the same rows as columns.
struct Data {
    rows: usize,
    csv: String,
    units: Vec<u32>,
    keys: Vec<u32>,
    x: Vec<f64>,
}

fn rows() -> usize {
    std::env::var("PRIVQ_BENCH_ROWS")
        .ok()
        .and_then(|s| s.replace('_', "").parse().ok())
        .unwrap_or(1_000_000)
}

fn generate(rows: usize) -> Data {
    let mut rng = ChaCha12Rng::seed_from_u64(29);
    let units = rows.div_ceil(ROWS_PER_UNIT as usize);
    let mut order: Vec<u32> = (0..rows)
        .map(|i| (i / ROWS_PER_UNIT as usize) as u32)
        .collect();
    // Fisher–Yates; the slight modulo bias is irrelevant to synthetic data.
    for i in (1..order.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    let mut csv = String::with_capacity(rows * 24);
    csv.push_str("unit,region,x\n");
    let mut keys = Vec::with_capacity(rows);
    let mut x = Vec::with_capacity(rows);
    for &u in &order {
        // A unit's group: a fixed scramble of its number, so neighbouring units differ.
        let key = (u64::from(u) * 7_919 % u64::from(GROUPS)) as u32;
        let cents = (rng.next_u64() % 12_000) as i64 - 1_000;
        let value = cents as f64 / 100.0;
        use std::fmt::Write;
        let _ = writeln!(csv, "u{u},g{key},{value}");
        keys.push(key);
        x.push(value);
    }
    assert!(units <= u32::MAX as usize);
    Data {
        rows,
        csv,
        units: order,
        keys,
        x,
    }
}

fn query() -> Query {
    Query::new(
        ["region"],
        [
            ("n", Aggregate::Count),
            ("sum_x", Aggregate::Sum("x".into())),
            ("mean_x", Aggregate::Mean("x".into())),
        ],
    )
}

fn plan(groups: Groups) -> Plan {
    Plan::builder(query())
        .privacy_unit("unit", Contribution::new(1, ROWS_PER_UNIT).expect("limits"))
        .bounds("x", "0:100".parse().expect("bounds"))
        .groups(groups)
        .build(Epsilon::new(1, 1).expect("ε"))
        .expect("a valid plan")
}

fn public_keys() -> Groups {
    Groups::public((0..GROUPS).map(|k| [format!("g{k}")]))
}

/// Count, sum and mean per key: the non-private answer.
type Stats = Vec<(u64, f64, f64)>;

fn finish(acc: Vec<(u64, f64)>) -> Stats {
    acc.into_iter()
        .map(|(n, s)| (n, s, if n > 0 { s / n as f64 } else { f64::NAN }))
        .collect()
}

/// Non-private group-by into a `Vec` indexed by the interned key.
fn baseline_vec(keys: &[u32], x: &[f64]) -> Stats {
    let mut acc = vec![(0u64, 0.0f64); GROUPS as usize];
    for (&k, &v) in keys.iter().zip(x) {
        let a = &mut acc[k as usize];
        a.0 += 1;
        a.1 += v;
    }
    finish(acc)
}

/// Non-private group-by into a `HashMap` keyed by the interned key.
fn baseline_hashmap(keys: &[u32], x: &[f64]) -> HashMap<u32, (u64, f64, f64)> {
    let mut acc: HashMap<u32, (u64, f64)> = HashMap::new();
    for (&k, &v) in keys.iter().zip(x) {
        let a = acc.entry(k).or_insert((0, 0.0));
        a.0 += 1;
        a.1 += v;
    }
    acc.into_iter()
        .map(|(k, (n, s))| (k, (n, s, s / n as f64)))
        .collect()
}

/// The non-private group-by after the sort that privq's contribution bounding once
/// did on every row (row indices by unit, key, row): what that sort costs.
fn baseline_sorted(units: &[u32], keys: &[u32], x: &[f64]) -> Stats {
    let mut order: Vec<u32> = (0..keys.len() as u32).collect();
    order.sort_unstable_by_key(|&r| (units[r as usize], keys[r as usize], r));
    let mut acc = vec![(0u64, 0.0f64); GROUPS as usize];
    for &r in &order {
        let a = &mut acc[keys[r as usize] as usize];
        a.0 += 1;
        a.1 += x[r as usize];
    }
    finish(acc)
}

/// [`baseline_sorted`] with the same order from a sort of packed `(unit·2³² + key,
/// row)` pairs held contiguously, instead of row indices compared through two column
/// lookups: what a cheaper bounding sort would cost.
fn baseline_sorted_packed(units: &[u32], keys: &[u32], x: &[f64]) -> Stats {
    let mut order: Vec<(u64, u32)> = (0..keys.len())
        .map(|r| ((u64::from(units[r]) << 32) | u64::from(keys[r]), r as u32))
        .collect();
    order.sort_unstable();
    let mut acc = vec![(0u64, 0.0f64); GROUPS as usize];
    for &(uk, r) in &order {
        let a = &mut acc[(uk & 0xffff_ffff) as usize];
        a.0 += 1;
        a.1 += x[r as usize];
    }
    finish(acc)
}

/// Non-private group-by straight from the CSV text, with the `csv` crate privq uses:
/// the key and the value of each row, summed by key (the unit column is not read).
fn baseline_csv(csv: &str) -> HashMap<String, (u64, f64, f64)> {
    let mut reader = csv::ReaderBuilder::new().from_reader(csv.as_bytes());
    let header = reader.headers().expect("header").clone();
    let at = |name: &str| header.iter().position(|h| h == name).expect("column");
    let (ki, xi) = (at("region"), at("x"));
    let mut acc: HashMap<String, (u64, f64)> = HashMap::new();
    let mut record = csv::StringRecord::new();
    while reader.read_record(&mut record).expect("a record") {
        let key = record.get(ki).unwrap_or("");
        let v: f64 = record.get(xi).unwrap_or("").parse().expect("a number");
        match acc.get_mut(key) {
            Some(a) => {
                a.0 += 1;
                a.1 += v;
            }
            None => {
                acc.insert(key.to_string(), (1, v));
            }
        }
    }
    acc.into_iter()
        .map(|(k, (n, s))| (k, (n, s, s / n as f64)))
        .collect()
}

fn aggregate(c: &mut Criterion) {
    let n = rows();
    let data = generate(n);
    let public = plan(public_keys());
    let private = plan(Groups::Private { delta: 1e-6 });
    let table = Table::from_csv(data.csv.as_bytes(), &public.columns(), usize::MAX)
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
    assert_eq!(baseline_csv(&data.csv)["g7"].0, truth[7].0);
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
        b.iter(|| {
            Table::from_csv(black_box(data.csv.as_bytes()), &columns, usize::MAX).expect("loads")
        })
    });
    parse.bench_function(BenchmarkId::new("baseline_csv", n), |b| {
        b.iter(|| baseline_csv(black_box(&data.csv)))
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
        let od = opendp_case::OpenDp::build();
        release.bench_function(BenchmarkId::new("opendp", n), |b| {
            b.iter(|| od.release(black_box(&data.keys), black_box(&data.x)))
        });
    }
    release.finish();
}

/// The same query from OpenDP 0.16's Rust transformations and measurements
/// (`contrib`, which `bench-opendp` turns on).
///
/// OpenDP's Rust core has no grouped sum and no privacy unit (both are in its Polars
/// front end, which this bench does not build), so the query is assembled the way a
/// Rust user of the core would: the counts are one measurement,
/// `make_count_by_categories` over the 1 000 public keys then `make_laplace` on the
/// vector; the sums are one `make_clamp` → `make_sum` → `make_laplace` measurement,
/// invoked on each group's rows after a plain Rust split by key (parallel
/// composition, argued outside OpenDP); a mean is sum / count. There is no
/// contribution bounding: the privacy maps are evaluated at d_in = 10 rows (one
/// unit), which is only valid when a unit has at most 10 rows — the bounding privq
/// does (and this synthetic table happens to satisfy). The scales give ε = ½ to the
/// counts and ½ to the sums, checked with the maps when built. The means come from
/// the same noisy sums and counts (privq spends a third share on a centred sum).
#[cfg(feature = "bench-opendp")]
pub mod opendp_case {
    use opendp::combinators::{make_chain_mt, make_chain_tt};
    use opendp::core::Measurement;
    use opendp::domains::{AtomDomain, VectorDomain};
    use opendp::measurements::make_laplace;
    use opendp::measures::MaxDivergence;
    use opendp::metrics::{L1Distance, SymmetricDistance};
    use opendp::transformations::{make_clamp, make_count_by_categories, make_sum};

    use super::GROUPS;

    type Counts =
        Measurement<VectorDomain<AtomDomain<u32>>, SymmetricDistance, MaxDivergence, Vec<i64>>;
    type Sum = Measurement<VectorDomain<AtomDomain<f64>>, SymmetricDistance, MaxDivergence, f64>;

    /// The two measurements, built once (as a plan is).
    pub struct OpenDp {
        counts: Counts,
        sum: Sum,
    }

    impl OpenDp {
        /// Builds both measurements and checks their privacy maps.
        pub fn build() -> Self {
            let d_in = super::ROWS_PER_UNIT;
            let count_by = make_count_by_categories::<L1Distance<i64>, u32, i64>(
                VectorDomain::new(AtomDomain::default()),
                SymmetricDistance,
                (0..GROUPS).collect(),
                false,
            )
            .expect("count by categories");
            // ε = ½: sensitivity d_in (one unit's rows, all in one group) over scale.
            let laplace = make_laplace(
                count_by.output_domain.clone(),
                count_by.output_metric.clone(),
                2.0 * f64::from(d_in),
                None,
            )
            .expect("laplace on counts");
            let counts = make_chain_mt(&laplace, &count_by).expect("chained counts");

            let clamp = make_clamp(
                VectorDomain::new(AtomDomain::new_non_nan()),
                SymmetricDistance,
                (0.0f64, 100.0f64),
            )
            .expect("clamp");
            let sum = make_sum(clamp.output_domain.clone(), SymmetricDistance).expect("sum");
            let bounded_sum = make_chain_tt(&sum, &clamp).expect("clamped sum");
            // ε = ½: d_in rows of at most 100 each, plus OpenDP's float-rounding slack.
            let laplace = make_laplace(
                bounded_sum.output_domain.clone(),
                bounded_sum.output_metric.clone(),
                2.0 * 100.0 * f64::from(d_in) * 1.01,
                None,
            )
            .expect("laplace on a sum");
            let sum = make_chain_mt(&laplace, &bounded_sum).expect("chained sum");

            let (ec, es) = (
                counts.map(&d_in).expect("count map"),
                sum.map(&d_in).expect("sum map"),
            );
            assert!(ec <= 0.5 + 1e-9 && es <= 0.5 + 1e-9, "ε {ec} + {es}");
            eprintln!("opendp: ε(counts) = {ec}, ε(each group's sum) = {es} at d_in = {d_in}");
            OpenDp { counts, sum }
        }

        /// Noisy count, noisy sum and their ratio for every key.
        #[allow(clippy::ptr_arg, reason = "OpenDP's carrier type is Vec<u32>")]
        pub fn release(&self, keys: &Vec<u32>, x: &[f64]) -> Vec<(i64, f64, f64)> {
            let counts = self.counts.invoke(keys).expect("counts");
            let mut by_key: Vec<Vec<f64>> = vec![Vec::new(); GROUPS as usize];
            for (&k, &v) in keys.iter().zip(x) {
                by_key[k as usize].push(v);
            }
            counts
                .into_iter()
                .zip(by_key)
                .map(|(n, rows)| {
                    let s = self.sum.invoke(&rows).expect("a sum");
                    (n, s, s / n.max(1) as f64)
                })
                .collect()
        }
    }
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

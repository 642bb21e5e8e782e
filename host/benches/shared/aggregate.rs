//! The synthetic table, the query, the plans and the non-private baselines of the
//! private-statistics benchmarks: shared by the criterion bench (`aggregate.rs`) and
//! the one-shot run for large tables (`aggregate_once.rs`), which include this file
//! with `#[path]`. See `aggregate.rs` for what the table and each case are.

use std::collections::HashMap;
use std::io::{self, Read, Write};

use privq_host::Epsilon;
use privq_host::aggregate::{Aggregate, Contribution, Groups, Plan, Query};
use rand_chacha::ChaCha12Rng;
use rand_core::{Rng, SeedableRng};

/// Distinct group keys.
pub const GROUPS: u32 = 1_000;
/// Rows per privacy unit (all in one group).
pub const ROWS_PER_UNIT: u32 = 10;
/// The most bytes a row of the CSV text takes (`u` and up to 10 digits, `,g` and up
/// to 3 digits, `,` and a value of up to 6 characters, the newline).
pub const CSV_BYTES_PER_ROW: usize = 1 + 10 + 2 + 3 + 1 + 6 + 1;

/// The synthetic table as columns (the CSV text goes to a writer).
pub struct Rows {
    /// The number of rows.
    pub rows: usize,
    /// Each row's privacy unit.
    pub units: Vec<u32>,
    /// Each row's group key, interned (key `k` is the text `g{k}`).
    pub keys: Vec<u32>,
    /// Each row's value.
    pub x: Vec<f64>,
}

/// Generates the table of `rows` rows from a fixed seed, writing its CSV text (with
/// a header) to `csv` and returning the same rows as columns; `progress` is called
/// with a phase and the rows done so far every 10⁷ rows.
pub fn generate_into<W: Write>(
    rows: usize,
    csv: &mut W,
    mut progress: impl FnMut(&str, usize),
) -> io::Result<Rows> {
    const STEP: usize = 10_000_000;
    let mut rng = ChaCha12Rng::seed_from_u64(29);
    let units = rows.div_ceil(ROWS_PER_UNIT as usize);
    assert!(units <= u32::MAX as usize);
    let mut order: Vec<u32> = (0..rows)
        .map(|i| (i / ROWS_PER_UNIT as usize) as u32)
        .collect();
    // Fisher–Yates; the slight modulo bias is irrelevant to synthetic data.
    for i in (1..order.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
        if i % STEP == 0 {
            progress("shuffle", rows - i);
        }
    }
    csv.write_all(b"unit,region,x\n")?;
    let mut keys = Vec::with_capacity(rows);
    let mut x = Vec::with_capacity(rows);
    for (i, &u) in order.iter().enumerate() {
        // A unit's group: a fixed scramble of its number, so neighbouring units differ.
        let key = (u64::from(u) * 7_919 % u64::from(GROUPS)) as u32;
        let cents = (rng.next_u64() % 12_000) as i64 - 1_000;
        let value = cents as f64 / 100.0;
        writeln!(csv, "u{u},g{key},{value}")?;
        keys.push(key);
        x.push(value);
        if (i + 1) % STEP == 0 {
            progress("rows", i + 1);
        }
    }
    csv.flush()?;
    Ok(Rows {
        rows,
        units: order,
        keys,
        x,
    })
}

/// The table with its CSV text in memory.
pub fn generate(rows: usize, progress: impl FnMut(&str, usize)) -> (Rows, String) {
    let mut csv = Vec::with_capacity(rows * CSV_BYTES_PER_ROW + 16);
    let data = generate_into(rows, &mut csv, progress).expect("writing to memory");
    (data, String::from_utf8(csv).expect("ASCII"))
}

/// `COUNT(*)`, `SUM(x)`, `AVG(x)` by `region`.
pub fn query() -> Query {
    Query::new(
        ["region"],
        [
            ("n", Aggregate::Count),
            ("sum_x", Aggregate::Sum("x".into())),
            ("mean_x", Aggregate::Mean("x".into())),
        ],
    )
}

/// The query at ε = 1, limits of 1 group and 10 rows per unit, bounds 0:100.
pub fn plan(groups: Groups) -> Plan {
    Plan::builder(query())
        .privacy_unit("unit", Contribution::new(1, ROWS_PER_UNIT).expect("limits"))
        .bounds("x", "0:100".parse().expect("bounds"))
        .groups(groups)
        .build(Epsilon::new(1, 1).expect("ε"))
        .expect("a valid plan")
}

/// The 1 000 keys, public.
pub fn public_keys() -> Groups {
    Groups::public((0..GROUPS).map(|k| [format!("g{k}")]))
}

/// Count, sum and mean per key: the non-private answer.
pub type Stats = Vec<(u64, f64, f64)>;

fn finish(acc: Vec<(u64, f64)>) -> Stats {
    acc.into_iter()
        .map(|(n, s)| (n, s, if n > 0 { s / n as f64 } else { f64::NAN }))
        .collect()
}

/// Non-private group-by into a `Vec` indexed by the interned key.
pub fn baseline_vec(keys: &[u32], x: &[f64]) -> Stats {
    let mut acc = vec![(0u64, 0.0f64); GROUPS as usize];
    for (&k, &v) in keys.iter().zip(x) {
        let a = &mut acc[k as usize];
        a.0 += 1;
        a.1 += v;
    }
    finish(acc)
}

/// Non-private group-by into a `HashMap` keyed by the interned key.
pub fn baseline_hashmap(keys: &[u32], x: &[f64]) -> HashMap<u32, (u64, f64, f64)> {
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
pub fn baseline_sorted(units: &[u32], keys: &[u32], x: &[f64]) -> Stats {
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
pub fn baseline_sorted_packed(units: &[u32], keys: &[u32], x: &[f64]) -> Stats {
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
pub fn baseline_csv<R: Read>(csv: R) -> HashMap<String, (u64, f64, f64)> {
    let mut reader = csv::ReaderBuilder::new().from_reader(csv);
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

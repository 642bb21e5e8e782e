//! Host aggregation throughput of local-DP reports, side by side with pure-LDP.
//!
//! Workload: n = 10⁶ reports, d = 1024 items, ε = 1, items from Zipf(1.1). To keep
//! set-up short, 10⁵ real device reports (core randomizers, seeded) are repeated
//! 10 times; aggregation cost does not depend on which reports repeat.
//!
//! Measured in this one run:
//! * single-core and all-core aggregation (decode + validate + count) for OUE,
//!   OLH and Hadamard response, through the batch API
//!   ([`Aggregator::ingest_batch`] on one thread, [`aggregate_packed`] on all);
//!   for OUE also the report-at-a-time path ([`Aggregator::ingest_bytes`] and
//!   [`aggregate_parallel`]) for comparison;
//! * the memory-bandwidth bound for reading the reports: one pass summing the
//!   same OUE report buffer as u64s, on one thread and on all threads (contiguous
//!   shares, like the aggregation). The buffer (140 MB) is several times larger
//!   than the last-level cache, so every pass — aggregation or bound — streams it
//!   from memory;
//! * pure-LDP's aggregation throughput on the same workload, by running
//!   `tools/pure_ldp_bench.py` (skipped with a note if python3/pure-ldp is missing);
//! * OUE frequency estimates with 95 % intervals for all d items, against a
//!   baseline that inverts the normal quantile once per item.
//!
//! Run: `cargo bench -p privq-host --bench ldp`.

use std::hint::black_box;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use privq_host::Epsilon;
use privq_host::ldp::aggregate::{Aggregator, aggregate_packed};
use privq_host::ldp::decode::RejectCounts;
use privq_host::ldp::estimate::Estimate;
use privq_host::ldp::fleet::{
    Fleet, MechanismSpec, ReportBatch, aggregate_parallel, default_distribution,
};
use privq_host::stats::normal_isf;

const N: usize = 1_000_000;
const REAL: usize = 100_000;
const D: u32 = 1024;

fn batch(name: &str) -> (Vec<u8>, ReportBatch) {
    let spec = MechanismSpec::parse(name, Epsilon::new(1, 1).unwrap(), D).unwrap();
    let fleet = Fleet::from_weights(&default_distribution(D), REAL).unwrap();
    let b = fleet.privatize(&spec, 99).unwrap();
    let bytes = b.bytes().repeat(N / REAL);
    (bytes, b)
}

/// One thread, batch API.
fn aggregate_single(bytes: &[u8], b: &ReportBatch) -> Aggregator {
    let mut agg = Aggregator::new(b.kind()).unwrap();
    let mut rejected = RejectCounts::default();
    let accepted = agg.ingest_batch(bytes.chunks_exact(b.report_len()), &mut rejected);
    assert_eq!(accepted, N as u64);
    agg
}

/// One thread, one report at a time (the pre-batch path).
fn aggregate_per_report(bytes: &[u8], b: &ReportBatch) -> Aggregator {
    let mut agg = Aggregator::new(b.kind()).unwrap();
    for r in bytes.chunks_exact(b.report_len()) {
        agg.ingest_bytes(r).unwrap();
    }
    agg
}

/// All threads, batch API.
fn aggregate_all(bytes: &[u8], b: &ReportBatch, threads: usize) -> Aggregator {
    aggregate_packed(bytes, b.report_len(), b.kind(), threads)
        .unwrap()
        .0
}

/// Reads every byte once (sum of u64 words): the cost of streaming the buffer.
fn bandwidth_pass(bytes: &[u8]) -> u64 {
    bytes
        .chunks_exact(64)
        .map(|c| {
            let mut acc = 0u64;
            for w in c.chunks_exact(8) {
                acc = acc.wrapping_add(u64::from_le_bytes(w.try_into().unwrap()));
            }
            acc
        })
        .fold(0u64, u64::wrapping_add)
}

/// [`bandwidth_pass`] on `threads` threads over contiguous shares.
fn bandwidth_pass_parallel(bytes: &[u8], threads: usize) -> u64 {
    let per = bytes.len().div_ceil(threads.max(1)).next_multiple_of(64);
    thread::scope(|s| {
        let handles: Vec<_> = bytes
            .chunks(per)
            .map(|c| s.spawn(move || bandwidth_pass(c)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .fold(0u64, u64::wrapping_add)
    })
}

/// The best times of `f` and `g` over `reps` alternating runs.
fn paired_best(reps: usize, mut f: impl FnMut(), mut g: impl FnMut()) -> (Duration, Duration) {
    let (mut best_f, mut best_g) = (Duration::MAX, Duration::MAX);
    for _ in 0..reps {
        best_f = best_f.min(best_of(1, &mut f));
        best_g = best_g.min(best_of(1, &mut g));
    }
    (best_f, best_g)
}

fn best_of(reps: usize, mut f: impl FnMut()) -> Duration {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap()
}

/// Summary timings (best of several runs) of one mechanism.
struct Summary {
    name: &'static str,
    report_len: usize,
    one: Duration,
    all: Duration,
    /// OUE only: per-report path (one thread, all threads) and the bound (one
    /// thread, all threads).
    oue: Option<[Duration; 4]>,
    total_bytes: usize,
}

fn main() {
    let threads = thread::available_parallelism().map_or(1, |n| n.get());
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut summary = Vec::new();
    for name in ["oue", "olh", "hr"] {
        let (bytes, b) = batch(name);
        // The fast paths must agree with the report-at-a-time path.
        if name != "olh" {
            assert_eq!(
                aggregate_single(&bytes, &b),
                aggregate_per_report(&bytes, &b)
            );
        }
        let mut g = c.benchmark_group(format!("ldp_aggregate_{name}_d1024_n1e6"));
        g.throughput(Throughput::Elements(N as u64));
        g.bench_function("one_core", |bench| {
            bench.iter(|| black_box(aggregate_single(&bytes, &b)))
        });
        g.bench_function(format!("{threads}_threads"), |bench| {
            bench.iter(|| black_box(aggregate_all(&bytes, &b, threads)))
        });
        if name == "oue" {
            g.bench_function("one_core_per_report", |bench| {
                bench.iter(|| black_box(aggregate_per_report(&bytes, &b)))
            });
            g.bench_function("memory_bandwidth_bound_one_core", |bench| {
                bench.iter(|| black_box(bandwidth_pass(&bytes)))
            });
            g.bench_function(
                format!("memory_bandwidth_bound_{threads}_threads"),
                |bench| bench.iter(|| black_box(bandwidth_pass_parallel(&bytes, threads))),
            );
        }
        g.finish();
        if name == "oue" {
            // Estimates with 95 % intervals for all d items: privq inverts the
            // normal quantile once (remembered per thread); the baseline inverts
            // it once per item.
            let agg = aggregate_single(&bytes, &b);
            let mut g = c.benchmark_group(format!("ldp_estimates_{name}_d1024"));
            g.throughput(Throughput::Elements(u64::from(D)));
            g.bench_function("frequencies", |bench| {
                bench.iter(|| black_box(agg.frequencies(0.95).unwrap()))
            });
            g.bench_function("baseline_quantile_per_item", |bench| {
                bench.iter(|| {
                    let f = agg.frequencies(0.95).unwrap();
                    let per_item: Vec<Estimate> = f
                        .items
                        .iter()
                        .map(|e| Estimate::with_z(e.value, e.variance, normal_isf(0.025)))
                        .collect();
                    black_box(per_item)
                })
            });
            g.finish();
        }
        // Summary numbers for the side-by-side table: best of 10. For OUE each
        // aggregation run alternates with a bandwidth pass over the same buffer on
        // the same number of threads, so both see the same machine load.
        let (one, all, oue) = if name == "oue" {
            let (one, bw1) = paired_best(
                10,
                || {
                    black_box(aggregate_single(&bytes, &b));
                },
                || {
                    black_box(bandwidth_pass(&bytes));
                },
            );
            let (all, bw_all) = paired_best(
                10,
                || {
                    black_box(aggregate_all(&bytes, &b, threads));
                },
                || {
                    black_box(bandwidth_pass_parallel(&bytes, threads));
                },
            );
            let per1 = best_of(3, || {
                black_box(aggregate_per_report(&bytes, &b));
            });
            let per_all = best_of(3, || {
                black_box(aggregate_parallel(&bytes, b.report_len(), b.kind(), threads).unwrap());
            });
            (one, all, Some([per1, per_all, bw1, bw_all]))
        } else {
            let one = best_of(10, || {
                black_box(aggregate_single(&bytes, &b));
            });
            let all = best_of(10, || {
                black_box(aggregate_all(&bytes, &b, threads));
            });
            (one, all, None)
        };
        summary.push(Summary {
            name,
            report_len: b.report_len(),
            one,
            all,
            oue,
            total_bytes: bytes.len(),
        });
    }

    let python = Command::new("python3")
        .arg("tools/pure_ldp_bench.py")
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output();
    let pure: Option<serde_json::Value> = match python {
        Ok(out) if out.status.success() => serde_json::from_slice(&out.stdout).ok(),
        Ok(out) => {
            eprintln!(
                "pure-LDP run failed: {}",
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            );
            None
        }
        Err(e) => {
            eprintln!("python3 not available: {e}");
            None
        }
    };
    if let Some(v) = &pure {
        println!(
            "\npure-LDP run (one thread): versions {}, reports aggregated {}",
            v.get("versions").map_or("?".to_string(), |x| x.to_string()),
            v.get("n").map_or("?".to_string(), |x| x.to_string())
        );
    }
    let rate = |t: Duration| N as f64 / t.as_secs_f64();
    println!("\nLDP aggregation, n = {N}, d = {D}, eps = 1 ({threads} threads available)");
    println!(
        "{:<5} {:>6} {:>16} {:>16} {:>16} {:>10}",
        "mech", "bytes", "privq 1 core/s", "privq all/s", "pure-LDP/s", "ratio"
    );
    for s in summary {
        let (r1, ra) = (rate(s.one), rate(s.all));
        let p = pure
            .as_ref()
            .and_then(|v| v.get(s.name))
            .and_then(|x| x.as_f64());
        let ratio = p.map_or("n/a".to_string(), |p| format!("{:.1}x", r1 / p));
        let p = p.map_or("n/a".to_string(), |p| format!("{p:.0}"));
        println!(
            "{:<5} {:>6} {r1:>16.0} {ra:>16.0} {p:>16} {ratio:>10}",
            s.name, s.report_len
        );
        if let Some([per1, per_all, bw1, bw_all]) = s.oue {
            println!(
                "      report-at-a-time path: {:.0}/s one core, {:.0}/s {threads} threads (batch path is {:.1}x faster on one core)",
                rate(per1),
                rate(per_all),
                per1.as_secs_f64() / s.one.as_secs_f64()
            );
            let gb = |t: Duration| s.total_bytes as f64 / t.as_secs_f64() / 1e9;
            println!(
                "      memory-bandwidth bound, one core: {:.0} reports/s ({:.1} GB/s read); OUE one-core aggregation is {:.2}x the bound",
                rate(bw1),
                gb(bw1),
                s.one.as_secs_f64() / bw1.as_secs_f64()
            );
            println!(
                "      memory-bandwidth bound, {threads} threads: {:.0} reports/s ({:.1} GB/s read); OUE {threads}-thread aggregation is {:.2}x the bound",
                rate(bw_all),
                gb(bw_all),
                s.all.as_secs_f64() / bw_all.as_secs_f64()
            );
        }
    }
}

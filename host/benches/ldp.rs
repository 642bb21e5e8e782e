//! Host aggregation throughput of local-DP reports, side by side with pure-LDP.
//!
//! Workload: n = 10⁶ reports, d = 1024 items, ε = 1, items from Zipf(1.1). To keep
//! set-up short, 10⁵ real device reports (core randomizers, seeded) are repeated
//! 10 times; aggregation cost does not depend on which reports repeat.
//!
//! Measured in this one run:
//! * single-core and all-core aggregation (decode + validate + count) for OUE,
//!   OLH and Hadamard response;
//! * the memory-bandwidth bound: one pass summing the OUE report buffer as u64s;
//! * pure-LDP's aggregation throughput on the same workload, by running
//!   `tools/pure_ldp_bench.py` (skipped with a note if python3/pure-ldp is missing).
//!
//! Run: `cargo bench -p privq-host --bench ldp`.

use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use privq_host::Epsilon;
use privq_host::ldp::aggregate::Aggregator;
use privq_host::ldp::fleet::{
    Fleet, MechanismSpec, ReportBatch, aggregate_parallel, default_distribution,
};

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

fn aggregate_single(bytes: &[u8], b: &ReportBatch) -> Aggregator {
    let mut agg = Aggregator::new(b.kind()).unwrap();
    for r in bytes.chunks_exact(b.report_len()) {
        agg.ingest_bytes(r).unwrap();
    }
    agg
}

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

fn main() {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut summary = Vec::new();
    for name in ["oue", "olh", "hr"] {
        let (bytes, b) = batch(name);
        let mut g = c.benchmark_group(format!("ldp_aggregate_{name}_d1024_n1e6"));
        g.throughput(Throughput::Elements(N as u64));
        g.bench_function("one_core", |bench| {
            bench.iter(|| black_box(aggregate_single(&bytes, &b)))
        });
        g.bench_function(format!("{threads}_threads"), |bench| {
            bench.iter(|| {
                black_box(aggregate_parallel(&bytes, b.report_len(), b.kind(), threads).unwrap())
            })
        });
        if name == "oue" {
            g.bench_function("memory_bandwidth_bound", |bench| {
                bench.iter(|| black_box(bandwidth_pass(&bytes)))
            });
        }
        g.finish();
        // Summary numbers (best of 3) for the side-by-side table.
        let one = best_of(3, || {
            black_box(aggregate_single(&bytes, &b));
        });
        let all = best_of(3, || {
            black_box(aggregate_parallel(&bytes, b.report_len(), b.kind(), threads).unwrap());
        });
        let bw = if name == "oue" {
            Some(best_of(5, || {
                black_box(bandwidth_pass(&bytes));
            }))
        } else {
            None
        };
        summary.push((name, b.report_len(), one, all, bw, bytes.len()));
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
    println!("\nLDP aggregation, n = {N}, d = {D}, eps = 1 ({threads} threads available)");
    println!(
        "{:<5} {:>6} {:>16} {:>16} {:>16} {:>10}",
        "mech", "bytes", "privq 1 core/s", "privq all/s", "pure-LDP/s", "ratio"
    );
    for (name, len, one, all, bw, total_bytes) in summary {
        let r1 = N as f64 / one.as_secs_f64();
        let ra = N as f64 / all.as_secs_f64();
        let p = pure
            .as_ref()
            .and_then(|v| v.get(name))
            .and_then(|x| x.as_f64());
        let ratio = p.map_or("n/a".to_string(), |p| format!("{:.1}x", r1 / p));
        let p = p.map_or("n/a".to_string(), |p| format!("{p:.0}"));
        println!("{name:<5} {len:>6} {r1:>16.0} {ra:>16.0} {p:>16} {ratio:>10}");
        if let Some(bw) = bw {
            let gbps = total_bytes as f64 / bw.as_secs_f64() / 1e9;
            println!(
                "      memory-bandwidth bound: {:.0} reports/s ({gbps:.1} GB/s read); OUE one-core aggregation is {:.1}x the bound",
                N as f64 / bw.as_secs_f64(),
                one.as_secs_f64() / bw.as_secs_f64()
            );
        }
    }
}

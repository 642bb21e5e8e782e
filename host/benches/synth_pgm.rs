//! Private-PGM estimation (McKenna, Sheldon, Miklau, ICML 2019) on data-shaped
//! inputs: noisy 3-way marginals of NLTCS (16 binary attributes) and of Adult
//! (14 attributes, up to 100 values), fitted by mirror descent on a junction tree;
//! and synthetic rows drawn from the NLTCS model.
//!
//! ```text
//! cargo bench -p privq-host --bench synth_pgm
//! ```
//!
//! Uses `../shared/data/nltcs.csv` and `../shared/data/adult/` when present
//! (without NLTCS the rows are drawn from a random chain model; without Adult's
//! domain the Adult case prints a SKIPPED line, or fails when `CI` is set). The
//! Gaussian noise is drawn with floating point: these are timing inputs, not
//! releases.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use privq_host::rand_core::Rng;
use privq_host::seeded_rng;
use privq_host::synth::{Clique, FitOptions, Measurement, Total, fit, model_cells};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data")
}

fn missing(what: &Path) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{} is absent and CI is set",
        what.display()
    );
    eprintln!("SKIPPED: {} is absent", what.display());
}

/// Rows of a CSV of value indices (header skipped).
fn read_rows(path: &Path) -> Option<(Vec<String>, Vec<Vec<usize>>)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()?
        .split(',')
        .map(|s| s.trim().to_string())
        .collect();
    let rows = lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            l.split(',')
                .map(|v| v.trim().parse().expect("a value index"))
                .collect()
        })
        .collect();
    Some((header, rows))
}

fn unif<R: Rng>(rng: &mut R) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

fn measure<R: Rng>(
    sizes: &[usize],
    rows: &[Vec<usize>],
    cliques: &[Clique],
    sigma: f64,
    rng: &mut R,
) -> Vec<Measurement> {
    cliques
        .iter()
        .map(|c| {
            let mut v = vec![0.0; c.cells(sizes).expect("fits")];
            for r in rows {
                v[c.cell_of_record(sizes, r).expect("in range")] += 1.0;
            }
            for x in v.iter_mut() {
                let (u1, u2) = (unif(rng), unif(rng));
                *x += sigma * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            }
            Measurement::new(c.clone(), v, sigma).expect("valid")
        })
        .collect()
}

fn random_cliques<R: Rng>(d: usize, k: usize, rng: &mut R) -> Vec<Clique> {
    let mut out: Vec<Clique> = Vec::new();
    while out.len() < k {
        let mut v: Vec<usize> = (0..3)
            .map(|_| (rng.next_u64() % d as u64) as usize)
            .collect();
        v.sort_unstable();
        v.dedup();
        if v.len() == 3 {
            let c = Clique::new(v).expect("distinct");
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

fn nltcs_rows() -> Vec<Vec<usize>> {
    let path = data_dir().join("nltcs.csv");
    if let Some((_, rows)) = read_rows(&path) {
        return rows;
    }
    missing(&path);
    // A random chain over 16 bits with n = 21 574.
    let mut rng = seeded_rng(9);
    (0..21_574)
        .map(|_| {
            let mut r = vec![0usize; 16];
            r[0] = usize::from(unif(&mut rng) < 0.3);
            for i in 1..16 {
                let p = if r[i - 1] == 1 { 0.7 } else { 0.2 };
                r[i] = usize::from(unif(&mut rng) < p);
            }
            r
        })
        .collect()
}

fn bench_synth(c: &mut Criterion) {
    let rows = nltcs_rows();
    let sizes = vec![2usize; 16];
    let mut rng = seeded_rng(1);
    let mut group = c.benchmark_group("synth_pgm");
    let opts = FitOptions {
        iterations: 1000,
        tolerance: 1e-6,
        ..FitOptions::default()
    };
    for k in [40usize, 50] {
        let mut cliques = random_cliques(16, k, &mut rng);
        cliques.extend((0..16).map(|a| Clique::new([a]).expect("one")));
        let ms = measure(&sizes, &rows, &cliques, 10.0, &mut rng);
        let t = Instant::now();
        let model = fit(&sizes, &ms, Total::Estimated, &opts).expect("fits");
        eprintln!(
            "nltcs {k} random 3-way cliques + 1-way: {} junction-tree cliques, {} cells, {} steps (converged {}), gap {:.3e}, one fit {:?}",
            model.cliques().len(),
            model.cells(),
            model.iterations(),
            model.converged(),
            model.gap(),
            t.elapsed()
        );
        group.bench_function(format!("nltcs_fit_{k}_cliques"), |b| {
            b.iter(|| fit(&sizes, black_box(&ms), Total::Estimated, &opts).expect("fits"))
        });
        group.bench_function(format!("nltcs_model_cells_{k}_cliques"), |b| {
            b.iter(|| model_cells(&sizes, black_box(&cliques)).expect("prices"))
        });
        if k == 40 {
            let n = rows.len();
            group.bench_function("nltcs_sample_rounded_n", |b| {
                b.iter(|| model.sample_rows_rounded(n, &mut rng).expect("samples"))
            });
            group.bench_function("nltcs_sample_forward_n", |b| {
                b.iter(|| model.sample_rows(n, &mut rng).expect("samples"))
            });
        }
    }

    let dir = data_dir().join("adult");
    let domain = dir.join("adult-domain.json");
    match (
        std::fs::read_to_string(&domain),
        read_rows(&dir.join("adult.csv")),
    ) {
        (Ok(json), Some((header, rows))) => {
            let map: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&json).expect("a JSON object");
            let sizes: Vec<usize> = header
                .iter()
                .map(|h| {
                    map.get(h)
                        .and_then(|v| v.as_u64())
                        .expect("every column has a size") as usize
                })
                .collect();
            let at = |n: &str| header.iter().position(|h| h == n).expect("a column");
            let names: [&[&str]; 6] = [
                &["age", "education-num", "income>50K"],
                &["occupation", "sex", "hours-per-week"],
                &["marital-status", "relationship", "income>50K"],
                &["native-country", "race", "workclass"],
                &["capital-gain", "capital-loss", "income>50K"],
                &["fnlwgt", "age"],
            ];
            let mut cliques: Vec<Clique> = names
                .iter()
                .map(|ns| Clique::new(ns.iter().map(|n| at(n))).expect("distinct"))
                .collect();
            cliques.extend((0..sizes.len()).map(|a| Clique::new([a]).expect("one")));
            let ms = measure(&sizes, &rows, &cliques, 10.0, &mut rng);
            let opts = FitOptions {
                iterations: 200,
                tolerance: 1e-6,
                ..FitOptions::default()
            };
            let t = Instant::now();
            let model = fit(&sizes, &ms, Total::Estimated, &opts).expect("fits");
            eprintln!(
                "adult {} attributes, {} cliques: {} junction-tree cliques, {} cells (largest {}), {} steps, one fit {:?}",
                sizes.len(),
                cliques.len(),
                model.cliques().len(),
                model.cells(),
                model
                    .cliques()
                    .iter()
                    .map(|c| c.cells(&sizes).unwrap_or(0))
                    .max()
                    .unwrap_or(0),
                model.iterations(),
                t.elapsed()
            );
            group.bench_function("adult_fit_6_cliques_200_steps", |b| {
                b.iter(|| fit(&sizes, black_box(&ms), Total::Estimated, &opts).expect("fits"))
            });
        }
        _ => missing(&domain),
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .sample_size(10);
    targets = bench_synth
}
criterion_main!(benches);

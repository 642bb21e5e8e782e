//! Discrete Laplace throughput: privq's exact and bounded-work samplers, and — with
//! `--features bench-opendp` — OpenDP 0.16's exact `sample_discrete_laplace`, in one
//! criterion group so the numbers come from the same run. A second group times the
//! exact discrete Gaussian (CKS20 Algorithm 3) at σ = t for the same scales, so its
//! cost can be read against the discrete Laplace proposals it is built on.
//!
//! ```text
//! cargo bench -p privq-host --bench samplers                          # privq only
//! cargo bench -p privq-host --features bench-opendp --bench samplers  # with OpenDP
//! ```
//!
//! Each iteration draws one sample (criterion reports elements/s). privq's samplers
//! read a seeded `ChaCha12Rng`. OpenDP's samplers take no RNG argument: without its
//! `use-openssl` feature they read `rand` 0.8's `thread_rng()`, itself a (reseeding)
//! ChaCha12 generator, a few bytes at a time through its own wrapper — part of its cost.
//!
//! The default timing is short (1 s warm-up, 3 s measurement per case) so the whole
//! group runs in about a minute; criterion's `--measurement-time` overrides it.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use privq_core::sample::{BoundedDiscreteLaplace, DiscreteGaussian, DiscreteLaplace, SigmaSquared};
use rand_chacha::ChaCha12Rng;
use rand_core::SeedableRng;

/// Integer scales `t` of the issue's benchmark.
const SCALES: [u64; 4] = [1, 10, 100, 1000];

fn discrete_laplace(c: &mut Criterion) {
    let mut group = c.benchmark_group("discrete_laplace");
    group.throughput(Throughput::Elements(1));
    for t in SCALES {
        let exact = DiscreteLaplace::new(t, 1).expect("positive scale");
        let mut rng = ChaCha12Rng::seed_from_u64(t);
        group.bench_with_input(BenchmarkId::new("privq_exact", t), &exact, |b, d| {
            b.iter(|| black_box(d).sample(&mut rng).expect("in range"))
        });

        let bounded = BoundedDiscreteLaplace::new(t, 1).expect("positive scale");
        let mut rng = ChaCha12Rng::seed_from_u64(t);
        group.bench_with_input(BenchmarkId::new("privq_bounded", t), &bounded, |b, d| {
            b.iter(|| black_box(d).sample(&mut rng).expect("decided"))
        });

        #[cfg(feature = "bench-opendp")]
        opendp_case(&mut group, t);
    }
    group.finish();
}

fn discrete_gaussian(c: &mut Criterion) {
    let mut group = c.benchmark_group("discrete_gaussian");
    group.throughput(Throughput::Elements(1));
    // σ = t (σ² = t²), plus σ = 1/2 (σ² = 1/4), the smallest case of the tests.
    let cases = [(1u64, 4u64, "0.5")]
        .into_iter()
        .chain(SCALES.iter().map(|&t| (t * t, 1, "")));
    for (num, den, label) in cases {
        let sigma2 = SigmaSquared::new(num, den).expect("positive σ²");
        let exact = DiscreteGaussian::new(sigma2).expect("supported σ²");
        let id = if label.is_empty() {
            exact.sigma_squared().floor_sigma().to_string()
        } else {
            label.to_string()
        };
        let mut rng = ChaCha12Rng::seed_from_u64(num);
        group.bench_with_input(BenchmarkId::new("privq_exact_sigma", id), &exact, |b, d| {
            b.iter(|| black_box(d).sample(&mut rng).expect("in range"))
        });
    }
    group.finish();
}

#[cfg(feature = "bench-opendp")]
fn opendp_case(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    t: u64,
) {
    use opendp::traits::CastInternalRational;
    use opendp::traits::samplers::sample_discrete_laplace;

    // The scale as OpenDP's exact rational (a dashu `RBig`).
    let scale = t.into_rational().expect("an integer is rational");
    group.bench_with_input(BenchmarkId::new("opendp_exact", t), &scale, |b, s| {
        b.iter(|| sample_discrete_laplace(black_box(s.clone())).expect("entropy available"))
    });
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50)
}

criterion_group! {
    name = benches;
    config = config();
    targets = discrete_laplace, discrete_gaussian
}
criterion_main!(benches);

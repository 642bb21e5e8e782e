//! Exact-distribution tests of the core samplers.
//!
//! Every case draws 10⁶ samples (or `PRIVQ_DIST_SAMPLES`, if larger) from a fixed seed and runs a chi-square goodness-of-fit
//! test against the exact pmf (computed in `f64`, far more precisely than 10⁶ samples
//! can resolve). A case fails only when its p-value is below [`ALPHA`] = 10⁻⁶ (split
//! evenly when a case runs several checks), so a correct sampler fails a case with
//! probability below 10⁻⁶; with fixed seeds the outcome is reproducible.
//!
//! Run with `-- --nocapture` to see every statistic.

use privq_core::sample::{
    BoundedDiscreteLaplace, DiscreteGaussian, DiscreteLaplace, SigmaSquared, bernoulli,
    bernoulli_exp, uniform_below,
};
use privq_core::{GridGaussian, GridLaplace};
use privq_host::stats::{chi_square_gof, chi2_sf, normal_isf};
use privq_host::{Epsilon, Error, Fixed, Rho};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use rand_chacha::ChaCha12Rng;
use rand_core::SeedableRng;

/// Samples per case (at least 10⁶; `PRIVQ_DIST_SAMPLES=10000000` for a stronger run).
fn samples() -> u64 {
    std::env::var("PRIVQ_DIST_SAMPLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
        .max(1_000_000)
}

/// Largest probability with which a correct sampler may fail one case.
const ALPHA: f64 = 1e-6;

fn rng(seed: u64) -> ChaCha12Rng {
    ChaCha12Rng::seed_from_u64(seed)
}

/// Asserts `p_value ≥ alpha`, printing the statistic either way.
fn require(what: &str, p_value: f64, detail: impl std::fmt::Display, alpha: f64) {
    eprintln!("{what}: {detail}");
    assert!(
        p_value >= alpha,
        "{what}: p = {p_value:e} < {alpha:e} ({detail})"
    );
}

// ---------------------------------------------------------------- discrete Laplace

/// The exact discrete Laplace pmf and the cells used to test it: single integers
/// `−K..=K` plus the two tails `< −K` and `> K`, with `K` about `t·ln n` (tail ≈ 1/n) for `n` samples.
struct LaplaceCells {
    k_max: i64,
    probs: Vec<f64>,
    q: f64,
}

impl LaplaceCells {
    fn new(num: u64, den: u64) -> Self {
        let t = num as f64 / den as f64;
        let q = (-1.0 / t).exp();
        let one_minus_q = -(-1.0 / t).exp_m1();
        let k_max = (t * (samples() as f64).ln()).ceil() as i64 + 1;
        let center = one_minus_q / (1.0 + q);
        // P[X > K] = q^{K+1}/(1+q).
        let tail = q.powf(k_max as f64 + 1.0) / (1.0 + q);
        let mut probs = Vec::with_capacity(2 * k_max as usize + 3);
        probs.push(tail);
        for k in -k_max..=k_max {
            probs.push(center * q.powf(k.unsigned_abs() as f64));
        }
        probs.push(tail);
        LaplaceCells { k_max, probs, q }
    }

    fn cell(&self, x: i64) -> usize {
        if x < -self.k_max {
            0
        } else if x > self.k_max {
            self.probs.len() - 1
        } else {
            (x + self.k_max + 1) as usize
        }
    }

    fn variance(&self) -> f64 {
        2.0 * self.q / ((1.0 - self.q) * (1.0 - self.q))
    }

    /// Exact fourth central moment, by summing the pmf far into the tail.
    fn fourth_moment(&self, t: f64) -> f64 {
        let center = -(-1.0 / t).exp_m1() / (1.0 + self.q);
        let limit = (t * 60.0).ceil() as i64 + 10;
        (1..=limit)
            .map(|k| 2.0 * center * self.q.powf(k as f64) * (k as f64).powi(4))
            .sum()
    }
}

/// Sums consecutive groups of `width` cells (the tail cells stay single).
fn coarsen(values: &[f64], width: usize) -> Vec<f64> {
    let n = values.len();
    let mut out = vec![values[0]];
    out.extend(
        values[1..n - 1]
            .chunks(width)
            .map(|c| c.iter().sum::<f64>()),
    );
    out.push(values[n - 1]);
    out
}

/// Chi-square (fine and, for scales ≥ 10, coarse cells), symmetry, mean and variance
/// checks of [`samples`] discrete Laplace samples with scale `num/den`.
fn check_discrete_laplace(
    name: &str,
    num: u64,
    den: u64,
    seed: u64,
    mut draw: impl FnMut(&mut ChaCha12Rng) -> i64,
) {
    let n_samples = samples();
    let t = num as f64 / den as f64;
    let cells = LaplaceCells::new(num, den);
    let mut counts = vec![0u64; cells.probs.len()];
    let (mut sum, mut sum2) = (0i128, 0i128);
    let mut rng = rng(seed);
    for _ in 0..n_samples {
        let x = draw(&mut rng);
        counts[cells.cell(x)] += 1;
        sum += i128::from(x);
        sum2 += i128::from(x) * i128::from(x);
    }
    let coarse = t >= 10.0;
    let checks = if coarse { 5.0 } else { 4.0 };
    let alpha = ALPHA / checks;
    let label = format!("{name} t={num}/{den}");

    // 1. Goodness of fit, one cell per integer (small cells pooled into the tails).
    let fit = chi_square_gof(&counts, &cells.probs).unwrap();
    require(&format!("{label} fine"), fit.p_value, &fit, alpha);

    // 2. Goodness of fit on ~t/8-wide cells: more power against smooth deviations.
    if coarse {
        let width = (t / 8.0).ceil() as usize;
        let probs = coarsen(&cells.probs, width);
        let observed: Vec<u64> =
            coarsen(&counts.iter().map(|&c| c as f64).collect::<Vec<_>>(), width)
                .into_iter()
                .map(|c| c as u64)
                .collect();
        let fit = chi_square_gof(&observed, &probs).unwrap();
        require(
            &format!("{label} coarse (width {width})"),
            fit.p_value,
            &fit,
            alpha,
        );
    }

    // 3. Symmetry: given c_k + c_{−k}, c_k is Binomial(·, ½). Runs of pairs are pooled
    //    until each pooled pair holds ≥ 20 observations; Σ (a − b)²/(a + b) ~ χ²(pairs).
    let zero = cells.cell(0);
    let last = cells.probs.len() - 1;
    let (mut stat, mut pairs) = (0.0, 0usize);
    let (mut a, mut b) = (0u64, 0u64);
    for d in 1..=zero {
        a += counts[zero + d];
        b += counts[zero - d];
        if a + b >= 20 || zero + d == last {
            if a + b > 0 {
                let diff = a as f64 - b as f64;
                stat += diff * diff / (a + b) as f64;
                pairs += 1;
            }
            (a, b) = (0, 0);
        }
    }
    let p = chi2_sf(stat, pairs);
    require(
        &format!("{label} symmetry"),
        p,
        format!("chi2 = {stat:.2} on {pairs} pairs, p = {p:.3e}"),
        alpha,
    );

    // 4. Mean 0 and 5. variance 2e^{−1/t}/(1−e^{−1/t})², each within the normal
    //    quantile for alpha/2 of its standard error.
    let n = n_samples as f64;
    let var = cells.variance();
    let z = normal_isf(alpha / 2.0);
    let mean = sum as f64 / n;
    let mean_bound = z * (var / n).sqrt();
    eprintln!("{label} mean: {mean:.5} (bound ±{mean_bound:.5})");
    assert!(
        mean.abs() <= mean_bound,
        "{label}: mean {mean} beyond ±{mean_bound}"
    );
    let sample_var = (sum2 as f64 - sum as f64 * mean) / (n - 1.0);
    let var_se = ((cells.fourth_moment(t) - var * var) / n).sqrt();
    eprintln!(
        "{label} variance: {sample_var:.5} vs exact {var:.5} (bound ±{:.5})",
        z * var_se
    );
    assert!(
        (sample_var - var).abs() <= z * var_se,
        "{label}: variance {sample_var} vs {var} beyond ±{}",
        z * var_se
    );
}

/// The scales of the issue: 0.5, 1, 10/3, 10, 100, 1000.
const SCALES: [(u64, u64); 6] = [(1, 2), (1, 1), (10, 3), (10, 1), (100, 1), (1000, 1)];

#[test]
fn discrete_laplace_exact_matches_pmf() {
    for (i, &(num, den)) in SCALES.iter().enumerate() {
        let d = DiscreteLaplace::new(num, den).unwrap();
        check_discrete_laplace("exact", num, den, 100 + i as u64, |r| d.sample(r).unwrap());
    }
}

#[test]
fn discrete_laplace_bounded_matches_pmf() {
    for (i, &(num, den)) in SCALES.iter().enumerate() {
        let d = BoundedDiscreteLaplace::new(num, den).unwrap();
        check_discrete_laplace("bounded", num, den, 200 + i as u64, |r| {
            d.sample(r).unwrap()
        });
    }
}

#[test]
fn discrete_laplace_variance_formula_matches_pmf() {
    // The closed form used above agrees with the pmf summed directly.
    for &(num, den) in &SCALES {
        let t = num as f64 / den as f64;
        let cells = LaplaceCells::new(num, den);
        let center = -(-1.0 / t).exp_m1() / (1.0 + cells.q);
        let limit = (t * 60.0).ceil() as i64 + 10;
        let direct: f64 = (1..=limit)
            .map(|k| 2.0 * center * cells.q.powf(k as f64) * (k * k) as f64)
            .sum();
        let closed = DiscreteLaplace::new(num, den).unwrap().variance();
        assert!(
            (direct / closed - 1.0).abs() < 1e-9,
            "t = {t}: {direct} vs {closed}"
        );
        assert!((cells.variance() / closed - 1.0).abs() < 1e-12);
    }
}

// ---------------------------------------------------------------- discrete Gaussian

/// The exact discrete Gaussian pmf `exp(−k²/(2σ²))/Z` on `−K..=K` plus the two tails,
/// `K` about `σ·√(2 ln n)` (tail ≈ 1/n), with `Z` and the moments summed out to 40σ
/// (the rest is below e⁻⁸⁰⁰).
struct GaussianCells {
    k_max: i64,
    probs: Vec<f64>,
    variance: f64,
    fourth: f64,
}

impl GaussianCells {
    fn new(num: u64, den: u64) -> Self {
        let s2 = num as f64 / den as f64;
        let sigma = s2.sqrt();
        let weight = |k: i64| (-((k * k) as f64) / (2.0 * s2)).exp();
        let limit = (40.0 * sigma).ceil() as i64 + 40;
        let z: f64 = (-limit..=limit).map(weight).sum();
        let (mut variance, mut fourth) = (0.0, 0.0);
        for k in 1..=limit {
            let p = 2.0 * weight(k) / z;
            let k2 = (k * k) as f64;
            variance += p * k2;
            fourth += p * k2 * k2;
        }
        let k_max = (sigma * (2.0 * (samples() as f64).ln()).sqrt()).ceil() as i64 + 1;
        let tail: f64 = (k_max + 1..=limit.max(k_max + 1)).map(weight).sum::<f64>() / z;
        let mut probs = Vec::with_capacity(2 * k_max as usize + 3);
        probs.push(tail);
        probs.extend((-k_max..=k_max).map(|k| weight(k) / z));
        probs.push(tail);
        GaussianCells {
            k_max,
            probs,
            variance,
            fourth,
        }
    }

    fn cell(&self, x: i64) -> usize {
        (x.clamp(-self.k_max - 1, self.k_max + 1) + self.k_max + 1) as usize
    }
}

/// Chi-square (fine, and ~σ/8-wide cells for σ ≥ 10), mean and variance checks of
/// [`samples`] discrete Gaussian samples with σ² = `num/den` against the exact pmf.
fn check_discrete_gaussian(num: u64, den: u64, seed: u64) {
    let g = DiscreteGaussian::new(SigmaSquared::new(num, den).unwrap()).unwrap();
    let n_samples = samples();
    let cells = GaussianCells::new(num, den);
    let mut counts = vec![0u64; cells.probs.len()];
    let (mut sum, mut sum2) = (0i128, 0i128);
    let mut rng = rng(seed);
    for _ in 0..n_samples {
        let x = g.sample(&mut rng).unwrap();
        counts[cells.cell(x)] += 1;
        sum += i128::from(x);
        sum2 += i128::from(x) * i128::from(x);
    }
    let sigma = (num as f64 / den as f64).sqrt();
    let coarse = sigma >= 10.0;
    let alpha = ALPHA / if coarse { 4.0 } else { 3.0 };
    let label = format!("discrete Gaussian sigma2={num}/{den}");

    let fit = chi_square_gof(&counts, &cells.probs).unwrap();
    require(&format!("{label} fine"), fit.p_value, &fit, alpha);
    if coarse {
        let width = (sigma / 8.0).ceil() as usize;
        let probs = coarsen(&cells.probs, width);
        let observed: Vec<u64> =
            coarsen(&counts.iter().map(|&c| c as f64).collect::<Vec<_>>(), width)
                .into_iter()
                .map(|c| c as u64)
                .collect();
        let fit = chi_square_gof(&observed, &probs).unwrap();
        require(
            &format!("{label} coarse (width {width})"),
            fit.p_value,
            &fit,
            alpha,
        );
    }

    // Mean 0 and the exact variance Σ k²·P[k], each within the normal quantile.
    let n = n_samples as f64;
    let var = cells.variance;
    let z = normal_isf(alpha / 2.0);
    let mean = sum as f64 / n;
    let mean_bound = z * (var / n).sqrt();
    eprintln!("{label} mean: {mean:.5} (bound ±{mean_bound:.5})");
    assert!(mean.abs() <= mean_bound, "{label}: mean {mean}");
    let sample_var = (sum2 as f64 - sum as f64 * mean) / (n - 1.0);
    let var_se = ((cells.fourth - var * var) / n).sqrt();
    eprintln!(
        "{label} variance: {sample_var:.5} vs exact {var:.8} (sigma2 {:.5}, bound ±{:.5})",
        num as f64 / den as f64,
        z * var_se
    );
    assert!(
        (sample_var - var).abs() <= z * var_se,
        "{label}: variance {sample_var} vs {var} beyond ±{}",
        z * var_se
    );
    // The core's variance() agrees with the pmf sum.
    assert!(
        (g.variance() / var - 1.0).abs() < 1e-9,
        "{} vs {var}",
        g.variance()
    );
}

#[test]
fn discrete_gaussian_matches_pmf_sigma_half() {
    check_discrete_gaussian(1, 4, 700);
}

#[test]
fn discrete_gaussian_matches_pmf_sigma_3() {
    check_discrete_gaussian(9, 1, 701);
}

#[test]
fn discrete_gaussian_matches_pmf_sigma_50() {
    check_discrete_gaussian(2500, 1, 702);
}

#[test]
fn discrete_gaussian_matches_pmf_sigma_1000() {
    check_discrete_gaussian(1_000_000, 1, 703);
}

/// A fractional σ² = 10/3 (denominator 3 in every acceptance exponent).
#[test]
fn discrete_gaussian_matches_pmf_sigma2_ten_thirds() {
    check_discrete_gaussian(10, 3, 704);
}

/// The harness has power: σ² = 9 samples judged against σ² = 9.5 are rejected.
#[test]
fn gaussian_gof_detects_a_five_percent_variance_error() {
    let g = DiscreteGaussian::new(SigmaSquared::new(9, 1).unwrap()).unwrap();
    let cells = GaussianCells::new(19, 2);
    let mut counts = vec![0u64; cells.probs.len()];
    let mut r = rng(705);
    for _ in 0..1_000_000 {
        counts[cells.cell(g.sample(&mut r).unwrap())] += 1;
    }
    let fit = chi_square_gof(&counts, &cells.probs).unwrap();
    eprintln!("wrong variance: {fit}");
    assert!(fit.p_value < ALPHA, "{fit}");
}

/// The product of `factors` as little-endian 64-bit limbs (exact, for comparisons).
fn big_product(factors: &[u64]) -> Vec<u64> {
    let mut limbs = vec![1u64];
    for &f in factors {
        let mut carry = 0u128;
        for limb in limbs.iter_mut() {
            let x = u128::from(*limb) * u128::from(f) + carry;
            *limb = x as u64;
            carry = x >> 64;
        }
        if carry > 0 {
            limbs.push(carry as u64);
        }
    }
    limbs
}

/// `a ≤ b` for little-endian limbs.
fn big_le(a: &[u64], b: &[u64]) -> bool {
    let n = a.len().max(b.len());
    let limb = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
    for i in (0..n).rev() {
        if limb(a, i) != limb(b, i) {
            return limb(a, i) < limb(b, i);
        }
    }
    true
}

// ---------------------------------------------------------------- Bernoulli

/// Chi-square of a Bernoulli sampler against `P[true] = p` (two cells; equivalent to
/// the two-sided binomial z-test).
fn check_bernoulli(label: &str, p: f64, seed: u64, mut draw: impl FnMut(&mut ChaCha12Rng) -> bool) {
    let n_samples = samples();
    let mut rng = rng(seed);
    let mut hits = 0u64;
    for _ in 0..n_samples {
        hits += u64::from(draw(&mut rng));
    }
    let fit = chi_square_gof(&[hits, n_samples - hits], &[p, 1.0 - p]).unwrap();
    require(
        label,
        fit.p_value,
        format!("{hits}/{n_samples} vs p = {p:.6e}; {fit}"),
        ALPHA,
    );
}

#[test]
fn bernoulli_rational_matches() {
    let cases: [(u64, u64); 7] = [
        (1, 2),
        (1, 3),
        (2, 7),
        (1, 1000),
        (999, 1000),
        // q = 3·2⁶²: a biased `u64 % q` would give 1/2 here, not 1/3.
        (1 << 62, 3 << 62),
        (u64::MAX / 2, u64::MAX),
    ];
    for (i, &(p, q)) in cases.iter().enumerate() {
        let prob = p as f64 / q as f64;
        check_bernoulli(&format!("bernoulli {p}/{q}"), prob, 300 + i as u64, |r| {
            bernoulli(p, q, r).unwrap()
        });
    }
    // The certain cases.
    let mut r = rng(310);
    for _ in 0..10_000 {
        assert!(!bernoulli(0, 9, &mut r).unwrap());
        assert!(bernoulli(9, 9, &mut r).unwrap());
    }
}

#[test]
fn bernoulli_exp_matches() {
    let cases: [(u64, u64); 9] = [
        (1, 2),
        (1, 1),
        (3, 2),
        (5, 2),
        (7, 3),
        (10, 1),
        (1, 1000),
        (999, 1000),
        // Large denominators: q·k leaves u64 once the alternating loop reaches k = 3.
        (1 << 61, 3 << 61),
    ];
    for (i, &(p, q)) in cases.iter().enumerate() {
        let prob = (-(p as f64) / q as f64).exp();
        check_bernoulli(
            &format!("bernoulli_exp {p}/{q}"),
            prob,
            400 + i as u64,
            |r| bernoulli_exp(p, q, r).unwrap(),
        );
    }
    let mut r = rng(410);
    for _ in 0..10_000 {
        assert!(bernoulli_exp(0, 7, &mut r).unwrap());
    }
}

// ---------------------------------------------------------------- uniform

/// Number of `v ∈ [0, n)` with `⌊v·bins/n⌋ = b`.
fn range_bin_size(n: u64, bins: u64, b: u64) -> u64 {
    let start = |b: u64| (u128::from(b) * u128::from(n)).div_ceil(u128::from(bins));
    (start(b + 1) - start(b)) as u64
}

#[test]
fn uniform_below_matches() {
    // Small n, then the edges of the 32-bit path (3·2³⁰ is as bias-prone there as
    // 3·2⁶² is on the 64-bit path), then the 64-bit path.
    let ns: [u64; 12] = [
        2,
        3,
        7,
        10,
        1000,
        3 << 30,
        (1 << 32) - 1,
        1 << 32,
        (1 << 32) + 1,
        3 << 62,
        (1 << 63) + 1,
        u64::MAX,
    ];
    for (i, &n) in ns.iter().enumerate() {
        let n_samples = samples();
        let mut r = rng(500 + i as u64);
        let bins = n.min(1000);
        let mut by_range = vec![0u64; bins as usize];
        let mut by_residue = [0u64; 3];
        for _ in 0..n_samples {
            let v = uniform_below(n, &mut r).unwrap();
            assert!(v < n);
            by_range[(u128::from(v) * u128::from(bins) / u128::from(n)) as usize] += 1;
            by_residue[(v % 3) as usize] += 1;
        }
        let probs: Vec<f64> = (0..bins)
            .map(|b| range_bin_size(n, bins, b) as f64 / n as f64)
            .collect();
        let fit = chi_square_gof(&by_range, &probs).unwrap();
        require(
            &format!("uniform_below({n}) ranges"),
            fit.p_value,
            &fit,
            ALPHA / 2.0,
        );
        if n >= 3 {
            // Residues mod 3 catch a bias that alternates along the range (e.g. an
            // unrejected multiply-shift with n = 3·2⁶²).
            let probs: Vec<f64> = (0..3u64)
                .map(|r| ((n - r).div_ceil(3)) as f64 / n as f64)
                .collect();
            let fit = chi_square_gof(&by_residue, &probs).unwrap();
            require(
                &format!("uniform_below({n}) mod 3"),
                fit.p_value,
                &fit,
                ALPHA / 2.0,
            );
        }
    }
    let mut r = rng(510);
    for _ in 0..1000 {
        assert_eq!(uniform_below(1, &mut r).unwrap(), 0);
    }
    assert_eq!(uniform_below(0, &mut r), Err(Error::EmptyRange));
}

// ---------------------------------------------------------------- the harness itself

/// The chi-square machinery above is not vacuous: samples from a slightly wrong scale
/// (t = 1.02 instead of 1) are rejected.
#[test]
fn gof_detects_a_two_percent_scale_error() {
    let wrong = DiscreteLaplace::new(51, 50).unwrap();
    let cells = LaplaceCells::new(1, 1);
    let mut counts = vec![0u64; cells.probs.len()];
    let mut r = rng(600);
    for _ in 0..1_000_000 {
        counts[cells.cell(wrong.sample(&mut r).unwrap())] += 1;
    }
    let fit = chi_square_gof(&counts, &cells.probs).unwrap();
    eprintln!("wrong scale: {fit}");
    assert!(fit.p_value < ALPHA, "{fit}");
}

// ---------------------------------------------------------------- properties

/// Property tests run from a fixed seed (reproducible, like every test here); a failure
/// prints its minimal counterexample instead of writing a regressions file.
fn proptest_config() -> ProptestConfig {
    ProptestConfig {
        cases: 512,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(0x5eed_0fd1),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    fn uniform_below_is_below(n in 1u64.., seed: u64) {
        let mut r = rng(seed);
        for _ in 0..16 {
            prop_assert!(uniform_below(n, &mut r).unwrap() < n);
        }
    }

    #[test]
    fn bernoulli_never_errors_when_p_at_most_q(q in 1u64.., frac in 0.0f64..=1.0, seed: u64) {
        let p = ((q as f64) * frac) as u64;
        let p = p.min(q);
        let mut r = rng(seed);
        for _ in 0..16 {
            prop_assert!(bernoulli(p, q, &mut r).is_ok());
        }
        prop_assert_eq!(bernoulli(q.saturating_add(1), q, &mut r).is_err(), q < u64::MAX);
    }

    #[test]
    fn bernoulli_exp_never_errors(p in 0u64..1_000_000, q in 1u64.., seed: u64) {
        let mut r = rng(seed);
        for _ in 0..16 {
            prop_assert!(bernoulli_exp(p, q, &mut r).is_ok());
        }
    }

    #[test]
    fn discrete_laplace_samples(num in 1u64..1_000_000_000, den in 1u64..1_000_000_000, seed: u64) {
        let d = DiscreteLaplace::new(num, den).unwrap();
        let mut r = rng(seed);
        for _ in 0..8 {
            prop_assert!(d.sample(&mut r).is_ok());
        }
    }

    #[test]
    fn grid_laplace_outputs_stay_on_the_lattice(
        value in any::<i64>(),
        sensitivity in 1i64..(1i64 << 50),
        eps_num in 1u64..1000,
        eps_den in 1u64..1000,
        seed: u64,
    ) {
        let eps = Epsilon::new(eps_num, eps_den).unwrap();
        let mech = GridLaplace::new(Fixed::from_bits(sensitivity), eps).unwrap();
        let step = mech.grid().to_bits();
        prop_assert!(step > 0 && step.count_ones() == 1);
        let mut r = rng(seed);
        for _ in 0..4 {
            let out = mech.release(Fixed::from_bits(value), &mut r).unwrap();
            prop_assert_eq!(out.to_bits().rem_euclid(step), 0);
        }
        let bounded = mech.with_noise(BoundedDiscreteLaplace::new);
        if let Ok(bounded) = bounded {
            let out = bounded.release(Fixed::from_bits(value), &mut r).unwrap();
            prop_assert_eq!(out.to_bits().rem_euclid(step), 0);
        }
    }

    #[test]
    fn discrete_gaussian_never_panics(num in 1u64.., den in 1u64.., seed: u64) {
        // Valid σ² either builds (and then samples) or is refused as too large.
        match DiscreteGaussian::new(SigmaSquared::new(num, den).unwrap()) {
            Ok(g) => {
                let mut r = rng(seed);
                for _ in 0..4 {
                    prop_assert!(g.sample(&mut r).is_ok());
                }
            }
            Err(e) => prop_assert_eq!(e, Error::Overflow),
        }
    }

    #[test]
    fn discrete_gaussian_samples_for_moderate_sigma(
        num in 1u64..(1 << 40),
        den in 1u64..(1 << 20),
        seed: u64,
    ) {
        let g = DiscreteGaussian::new(SigmaSquared::new(num, den).unwrap()).unwrap();
        let mut r = rng(seed);
        for _ in 0..8 {
            prop_assert!(g.sample(&mut r).is_ok());
        }
    }

    #[test]
    fn gaussian_for_sensitivity_never_exceeds_rho(
        sensitivity in 1u64..(1 << 20),
        rho_num in 1u64..,
        rho_den in 1u64..,
    ) {
        let rho = Rho::new(rho_num, rho_den).unwrap();
        match DiscreteGaussian::for_sensitivity(sensitivity, rho) {
            Ok(g) => {
                // Exactly: σ² ≥ Δ²/(2ρ) ⇔ 2·ρ_num·σ_num ≥ Δ²·ρ_den·σ_den.
                let s = g.sigma_squared();
                let lhs = big_product(&[2, rho.num(), s.num()]);
                let rhs = big_product(&[sensitivity, sensitivity, rho.den(), s.den()]);
                prop_assert!(big_le(&rhs, &lhs), "σ² = {}/{} for ρ = {rho}", s.num(), s.den());
                // And σ² is at most a relative 2⁻²⁰ above it (rounded, not inflated).
                let exact = (sensitivity as f64).powi(2) / (2.0 * rho.to_f64());
                prop_assert!(s.to_f64() <= exact * (1.0 + 1e-6) + 1e-9);
            }
            Err(e) => prop_assert_eq!(e, Error::Overflow),
        }
    }

    #[test]
    fn grid_gaussian_outputs_stay_on_the_lattice(
        value in any::<i64>(),
        sensitivity in 1i64..(1i64 << 50),
        rho in 1e-6f64..100.0,
        seed: u64,
    ) {
        let mech = GridGaussian::new(Fixed::from_bits(sensitivity), Rho::from_f64(rho).unwrap()).unwrap();
        let step = mech.grid().to_bits();
        let mut r = rng(seed);
        for _ in 0..4 {
            let out = mech.release(Fixed::from_bits(value), &mut r).unwrap();
            prop_assert_eq!(out.to_bits().rem_euclid(step), 0);
        }
    }

    #[test]
    fn epsilon_from_f64_never_exceeds_its_input(x in 1e-18f64..1e18) {
        let e = Epsilon::from_f64(x).unwrap();
        // Every accepted value has a power-of-two denominator, so x·den is exact and
        // num ≤ x·den  ⇔  num ≤ ⌊x·den⌋.
        prop_assert!(e.den().is_power_of_two());
        let scaled = x * e.den() as f64;
        let bound = if scaled >= 2f64.powi(64) { u64::MAX } else { scaled.floor() as u64 };
        prop_assert!(e.num() <= bound, "{} > {}", e, x);
        // And it rounds down by less than one unit in the 63rd fractional bit (or is exact).
        prop_assert!(x - e.to_f64() <= x * 1e-15 + 2f64.powi(-63));
    }
}

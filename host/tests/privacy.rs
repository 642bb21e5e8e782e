//! The privacy property of the Laplace mechanism on a grid, tested on its outputs.
//!
//! * **Lattice:** outputs are multiples of the grid γ whatever the input (on the grid or
//!   not), so the set of possible outputs does not reveal the input.
//! * **Exact pmf:** for a coarse grid the output distribution matches
//!   `γ·(round(x/γ) + Z)`, `Z` discrete Laplace with scale `m/ε` (chi-square), and that
//!   exact distribution has probability ratio at most `e^ε` between neighbours — with
//!   equality in the tails (the bound is tight, not slack).
//! * **Empirical ratio:** for two neighbouring inputs (`|x − x'| ≤ Δ`, off-grid, Δ not a
//!   multiple of γ), every output bin with enough mass has an empirical probability ratio
//!   within `e^ε` up to sampling error: a one-sided conditional binomial test per bin and
//!   direction, Bonferroni-corrected so a private mechanism fails with probability < 10⁻⁶.
//!   The same test rejects a pair of inputs at distance 2Δ (so it is not vacuous).
//! * **Bad input:** every invalid parameter returns its typed [`Error`]; nothing panics.
//!
//! All of it runs for the exact sampler and for the bounded-work sampler plugged in
//! with `GridLaplace::with_noise(BoundedDiscreteLaplace::new)`.

use std::collections::BTreeMap;

use privq_core::sample::{BoundedDiscreteLaplace, DiscreteLaplace, IntegerNoise};
use privq_core::{GridLaplace, laplace_on_grid};
use privq_host::histogram::{Histogram, OutOfRange};
use privq_host::stats::{binomial_two_sided_p, chi_square_gof};
use privq_host::{Epsilon, Error, Fixed};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use rand_chacha::ChaCha12Rng;
use rand_core::SeedableRng;

/// Releases per input.
const N: u64 = 1_000_000;

/// Largest probability with which a private mechanism may fail one test.
const ALPHA: f64 = 1e-6;

/// Smallest combined count `c + c'` of a bin for its ratio to be tested.
const MIN_BIN_MASS: u64 = 1_000;

fn fx(s: &str) -> Fixed {
    s.parse().unwrap()
}

fn rng(seed: u64) -> ChaCha12Rng {
    ChaCha12Rng::seed_from_u64(seed)
}

/// The grid point (in steps of `2^grid_exp`) nearest to `x`, ties upward — computed
/// independently of the core, from the definition.
fn snap_steps(x: Fixed, grid_exp: i32) -> i64 {
    let step = 1i128 << (grid_exp + 32);
    let bits = i128::from(x.to_bits());
    // ⌊x/γ + ½⌋ = ⌊(2x + γ) / 2γ⌋.
    (2 * bits + step).div_euclid(2 * step) as i64
}

/// `N` releases of `x`, counted per bin; `bin` maps an output to its bin key.
fn release_counts<M: IntegerNoise>(
    mech: &GridLaplace<M>,
    x: Fixed,
    seed: u64,
    bin: impl Fn(Fixed) -> i64,
) -> BTreeMap<i64, u64> {
    let mut r = rng(seed);
    let mut counts = BTreeMap::new();
    let step = mech.grid().to_bits();
    for _ in 0..N {
        let out = mech.release(x, &mut r).unwrap();
        assert_eq!(
            out.to_bits().rem_euclid(step),
            0,
            "{out} is off the lattice"
        );
        *counts.entry(bin(out)).or_insert(0) += 1;
    }
    counts
}

/// Outcome of [`ratio_test`].
struct RatioReport {
    bins_tested: usize,
    max_ratio: f64,
    rejected: Vec<(i64, u64, u64)>,
}

/// Tests `P[a ∈ bin] ≤ e^ε · P[b ∈ bin]` and the reverse on every bin where the two
/// samples together hold at least [`MIN_BIN_MASS`] outputs.
///
/// Given `c_a + c_b = m` (equal sample sizes), `c_a` is at most as variable as
/// Binomial(m, π) with `π = p_a/(p_a + p_b) ≤ e^ε/(1 + e^ε)` under the hypothesis; a bin
/// is rejected when `c_a` exceeds `m·π` with a two-sided binomial p-value below
/// `ALPHA / (number of one-sided tests)`.
fn ratio_test(a: &BTreeMap<i64, u64>, b: &BTreeMap<i64, u64>, eps: f64) -> RatioReport {
    let keys: std::collections::BTreeSet<i64> = a.keys().chain(b.keys()).copied().collect();
    let get = |m: &BTreeMap<i64, u64>, k| m.get(&k).copied().unwrap_or(0);
    let tested: Vec<(i64, u64, u64)> = keys
        .into_iter()
        .map(|k| (k, get(a, k), get(b, k)))
        .filter(|&(_, ca, cb)| ca + cb >= MIN_BIN_MASS)
        .collect();
    let per_test_alpha = ALPHA / (2 * tested.len()).max(1) as f64;
    let pi = eps.exp() / (1.0 + eps.exp());
    let mut max_ratio: f64 = 0.0;
    let mut rejected = Vec::new();
    for &(k, ca, cb) in &tested {
        let m = ca + cb;
        for (hi, lo) in [(ca, cb), (cb, ca)] {
            max_ratio = max_ratio.max(hi as f64 / lo.max(1) as f64);
            if hi as f64 > m as f64 * pi
                && binomial_two_sided_p(hi, m, pi).unwrap() < per_test_alpha
            {
                rejected.push((k, ca, cb));
            }
        }
    }
    RatioReport {
        bins_tested: tested.len(),
        max_ratio,
        rejected,
    }
}

/// Exact discrete Laplace pmf with scale `num/den`.
fn dlap_pmf(num: u64, den: u64, k: i64) -> f64 {
    let inv_t = den as f64 / num as f64;
    let q = (-inv_t).exp();
    -(-inv_t).exp_m1() / (1.0 + q) * q.powf(k.unsigned_abs() as f64)
}

/// The coarse-grid mechanism of most tests: Δ = 0.3 (not a multiple of γ = 1/4, so it
/// rounds up to m = 2 steps), ε = 1/2, noise scale m/ε = 4 steps.
fn coarse_mechanism() -> GridLaplace {
    let mech = GridLaplace::with_grid(fx("0.3"), Epsilon::new(1, 2).unwrap(), -2).unwrap();
    assert_eq!(mech.sensitivity_steps(), 2);
    assert_eq!(mech.grid(), fx("0.25"));
    mech
}

/// Neighbouring inputs for [`coarse_mechanism`], both off the grid, |x − x'| = 0.3 = Δ;
/// they snap to 0 and 2 steps, the full m apart.
const NEIGHBOURS: (&str, &str) = ("0.1", "0.4");

fn lattice_bin(grid_exp: i32) -> impl Fn(Fixed) -> i64 + Copy {
    move |out: Fixed| out.to_bits() >> (grid_exp + 32)
}

#[test]
fn outputs_lie_on_one_lattice_whatever_the_input() {
    // Inputs on and off the grid, positive and negative, at ties and at the range edges.
    let inputs = [
        "0",
        "0.1",
        "0.125",
        "0.375",
        "-0.1",
        "-0.125",
        "3.14159",
        "-2.71828",
        "1e-9",
        "1000.0001",
        "-2147483648",
        "2147483647.9",
    ];
    let eps = Epsilon::new(1, 2).unwrap();
    for (sensitivity, grid_exp) in [("0.3", -2), ("1", -10), ("7.7", 0)] {
        let mech = GridLaplace::with_grid(fx(sensitivity), eps, grid_exp).unwrap();
        let bounded = mech.with_noise(BoundedDiscreteLaplace::new).unwrap();
        let step = mech.grid().to_bits();
        let mut r = rng(1);
        for x in inputs {
            for _ in 0..2000 {
                let a = mech.release(fx(x), &mut r).unwrap();
                let b = bounded.release(fx(x), &mut r).unwrap();
                assert_eq!(
                    a.to_bits().rem_euclid(step),
                    0,
                    "Δ {sensitivity}, x {x}: {a}"
                );
                assert_eq!(
                    b.to_bits().rem_euclid(step),
                    0,
                    "Δ {sensitivity}, x {x}: {b}"
                );
            }
        }
    }
    // And the default grid of `laplace_on_grid`: γ = 2^-10 for Δ = 1.
    let mut r = rng(2);
    for x in inputs {
        let out = laplace_on_grid(fx(x), Fixed::ONE, Epsilon::new(1, 1).unwrap(), &mut r).unwrap();
        assert_eq!(out.to_bits().rem_euclid(1 << 22), 0, "x {x}: {out}");
    }
}

#[test]
fn exact_output_distribution_is_tightly_e_eps_private() {
    // The model: output steps = snap(x) + Z, Z ~ DLap(m/ε). Its likelihood ratio for
    // neighbours is at most e^{ε·|snap(x) − snap(x')|/m} ≤ e^ε, and reaches e^ε.
    let mech = coarse_mechanism();
    let (x, x2) = (fx(NEIGHBOURS.0), fx(NEIGHBOURS.1));
    let (s, s2) = (snap_steps(x, -2), snap_steps(x2, -2));
    assert_eq!((s, s2), (0, 2));
    let (num, den) = (mech.noise().scale_num(), mech.noise().scale_den());
    assert_eq!((num, den), (4, 1));
    let eps = 0.5f64;
    let mut max_log_ratio = f64::NEG_INFINITY;
    for j in -200..=200 {
        let log_ratio = (dlap_pmf(num, den, j - s) / dlap_pmf(num, den, j - s2)).ln();
        max_log_ratio = max_log_ratio.max(log_ratio.abs());
    }
    assert!(max_log_ratio <= eps + 1e-12, "{max_log_ratio}");
    assert!(
        max_log_ratio >= eps - 1e-12,
        "the bound is tight: {max_log_ratio}"
    );

    // Every pair of inputs at distance ≤ Δ snaps at most m steps apart (including
    // ties, negative values and Δ not a multiple of γ).
    let delta_bits = fx("0.3").to_bits();
    for start in (-3000i64..3000).map(|i| i * 37_000_000 + 12_345) {
        for d in [0, 1, delta_bits / 2, delta_bits - 1, delta_bits] {
            let a = snap_steps(Fixed::from_bits(start), -2);
            let b = snap_steps(Fixed::from_bits(start + d), -2);
            assert!((b - a).abs() <= 2, "{start} + {d}");
        }
    }
}

/// Chi-square of the mechanism's outputs for `x` against the exact model.
fn check_output_pmf<M: IntegerNoise>(label: &str, mech: &GridLaplace<M>, x: Fixed, seed: u64) {
    let grid_exp = mech.grid_exp();
    let counts = release_counts(mech, x, seed, lattice_bin(grid_exp));
    let center = snap_steps(x, grid_exp);
    let k = 120i64;
    // The noise scale of `coarse_mechanism` (m/ε = 4 steps), the only mechanism used here.
    let (num, den) = (4, 1);
    // Cells: ≤ center−k−1, center−k ..= center+k, ≥ center+k+1.
    let tail: f64 = 1.0 - (-k..=k).map(|j| dlap_pmf(num, den, j)).sum::<f64>();
    let mut probs = vec![tail / 2.0];
    probs.extend((-k..=k).map(|j| dlap_pmf(num, den, j)));
    probs.push(tail / 2.0);
    let mut observed = vec![0u64; probs.len()];
    for (&steps, &c) in &counts {
        let cell = (steps - center).clamp(-k - 1, k + 1) + k + 1;
        observed[cell as usize] += c;
    }
    let fit = chi_square_gof(&observed, &probs).unwrap();
    eprintln!("{label}: {fit}");
    assert!(fit.p_value >= ALPHA, "{label}: {fit}");
}

#[test]
fn outputs_follow_the_exact_model() {
    let mech = coarse_mechanism();
    let bounded = mech.with_noise(BoundedDiscreteLaplace::new).unwrap();
    for (i, x) in [NEIGHBOURS.0, NEIGHBOURS.1, "0.125", "-7.3"]
        .into_iter()
        .enumerate()
    {
        check_output_pmf(&format!("exact, x = {x}"), &mech, fx(x), 10 + i as u64);
        check_output_pmf(&format!("bounded, x = {x}"), &bounded, fx(x), 20 + i as u64);
    }
}

/// Runs the empirical ratio test for inputs `x`, `x2` and returns its report.
fn empirical_ratio<M: IntegerNoise>(
    label: &str,
    mech: &GridLaplace<M>,
    x: Fixed,
    x2: Fixed,
    bin: impl Fn(Fixed) -> i64 + Copy,
    seeds: (u64, u64),
) -> RatioReport {
    let a = release_counts(mech, x, seeds.0, bin);
    let b = release_counts(mech, x2, seeds.1, bin);
    let report = ratio_test(&a, &b, mech.epsilon().to_f64());
    eprintln!(
        "{label}: {} bins tested, max empirical ratio {:.4} (e^ε = {:.4}), {} rejected",
        report.bins_tested,
        report.max_ratio,
        mech.epsilon().to_f64().exp(),
        report.rejected.len()
    );
    report
}

#[test]
fn neighbours_have_ratio_within_e_eps_on_a_coarse_grid() {
    let mech = coarse_mechanism();
    let bounded = mech.with_noise(BoundedDiscreteLaplace::new).unwrap();
    let (x, x2) = (fx(NEIGHBOURS.0), fx(NEIGHBOURS.1));
    let e = empirical_ratio(
        "exact, lattice points",
        &mech,
        x,
        x2,
        lattice_bin(-2),
        (30, 31),
    );
    assert!(e.rejected.is_empty(), "bins beyond e^ε: {:?}", e.rejected);
    assert!(e.bins_tested >= 20);
    let b = empirical_ratio(
        "bounded, lattice points",
        &bounded,
        x,
        x2,
        lattice_bin(-2),
        (32, 33),
    );
    assert!(b.rejected.is_empty(), "bins beyond e^ε: {:?}", b.rejected);
    assert!(b.bins_tested >= 20);
    // The bound is attained in the tails, so the largest empirical ratio is near e^½.
    for r in [&e, &b] {
        assert!(r.max_ratio > 1.5, "{}", r.max_ratio);
    }
}

#[test]
fn neighbours_have_ratio_within_e_eps_on_the_default_grid() {
    // laplace_on_grid's default: Δ = 1, ε = 1 → γ = 2^-10, m = 1024, scale 1024 steps.
    // Outputs are binned into intervals of 1/8 (any event obeys the e^ε bound).
    let eps = Epsilon::new(1, 1).unwrap();
    let mech = GridLaplace::new(Fixed::ONE, eps).unwrap();
    assert_eq!(mech.grid_exp(), -10);
    let bounded = mech.with_noise(BoundedDiscreteLaplace::new).unwrap();
    let x = fx("3.14159");
    let x2 = x.checked_add(Fixed::ONE).unwrap();
    let eighths = |out: Fixed| out.to_bits() >> 29;
    let e = empirical_ratio("exact, default grid", &mech, x, x2, eighths, (40, 41));
    assert!(e.rejected.is_empty(), "bins beyond e^ε: {:?}", e.rejected);
    let b = empirical_ratio("bounded, default grid", &bounded, x, x2, eighths, (42, 43));
    assert!(b.rejected.is_empty(), "bins beyond e^ε: {:?}", b.rejected);
    assert!(e.bins_tested >= 50 && b.bins_tested >= 50);

    // Δ = 0.3 on its default grid 2^-12: m = ⌈0.3·4096⌉ = 1229 steps (rounded up).
    let mech = GridLaplace::new(fx("0.3"), eps).unwrap();
    assert_eq!((mech.grid_exp(), mech.sensitivity_steps()), (-12, 1229));
    let x = fx("-0.7777");
    let x2 = x.checked_add(fx("0.3")).unwrap();
    let tenths = |out: Fixed| out.to_bits().div_euclid(fx("0.05").to_bits());
    let r = empirical_ratio(
        "exact, Δ = 0.3 default grid",
        &mech,
        x,
        x2,
        tenths,
        (44, 45),
    );
    assert!(r.rejected.is_empty(), "bins beyond e^ε: {:?}", r.rejected);
}

#[test]
fn ratio_test_rejects_inputs_two_sensitivities_apart() {
    // Same mechanism, inputs 0.6 = 2Δ apart: true ratio e^{2ε} = e in the tails.
    let mech = coarse_mechanism();
    let bounded = mech.with_noise(BoundedDiscreteLaplace::new).unwrap();
    let (x, x2) = (fx("0.1"), fx("0.7"));
    let e = empirical_ratio("exact, 2Δ apart", &mech, x, x2, lattice_bin(-2), (50, 51));
    assert!(!e.rejected.is_empty(), "a 2Δ pair must fail the e^ε test");
    let b = empirical_ratio(
        "bounded, 2Δ apart",
        &bounded,
        x,
        x2,
        lattice_bin(-2),
        (52, 53),
    );
    assert!(!b.rejected.is_empty(), "a 2Δ pair must fail the e^ε test");
}

// ---------------------------------------------------------------- bad input

#[test]
fn bad_epsilon_is_a_typed_error() {
    assert_eq!(Epsilon::new(0, 1), Err(Error::EpsilonZero));
    assert_eq!(Epsilon::new(1, 0), Err(Error::ZeroDenominator));
    assert_eq!(Epsilon::from_f64(0.0), Err(Error::EpsilonZero));
    assert_eq!(Epsilon::from_f64(-0.0), Err(Error::EpsilonZero));
    assert_eq!(Epsilon::from_f64(-0.5), Err(Error::EpsilonNegative));
    assert_eq!(
        Epsilon::from_f64(f64::NEG_INFINITY),
        Err(Error::EpsilonNotFinite)
    );
    assert_eq!(Epsilon::from_f64(f64::NAN), Err(Error::EpsilonNotFinite));
    assert_eq!(Epsilon::from_f64(-f64::NAN), Err(Error::EpsilonNotFinite));
    assert_eq!(
        Epsilon::from_f64(f64::INFINITY),
        Err(Error::EpsilonNotFinite)
    );
    assert_eq!(Epsilon::from_f64(1e-300), Err(Error::EpsilonTooSmall));
    assert_eq!(Epsilon::from_f64(1e300), Err(Error::EpsilonTooLarge));
    assert_eq!("0".parse::<Epsilon>(), Err(Error::EpsilonZero));
    assert_eq!("-1".parse::<Epsilon>(), Err(Error::EpsilonNegative));
    assert_eq!("-1/2".parse::<Epsilon>(), Err(Error::EpsilonNegative));
    assert_eq!("NaN".parse::<Epsilon>(), Err(Error::EpsilonNotFinite));
    assert_eq!("0/5".parse::<Epsilon>(), Err(Error::EpsilonZero));
    assert_eq!("1/0".parse::<Epsilon>(), Err(Error::ZeroDenominator));
    assert_eq!("eps".parse::<Epsilon>(), Err(Error::Parse));
}

#[test]
fn bad_scale_is_a_typed_error() {
    assert_eq!(DiscreteLaplace::new(0, 1), Err(Error::ScaleZero));
    assert_eq!(DiscreteLaplace::new(1, 0), Err(Error::ZeroDenominator));
    assert_eq!(
        BoundedDiscreteLaplace::new(0, 3).unwrap_err(),
        Error::ScaleZero
    );
    assert_eq!(
        BoundedDiscreteLaplace::new(3, 0).unwrap_err(),
        Error::ZeroDenominator
    );
    // Scales whose samples could not fit the sampler's integers.
    assert_eq!(
        BoundedDiscreteLaplace::new(u64::MAX, 1).unwrap_err(),
        Error::Overflow
    );
    let tiny = Epsilon::new(1, u64::MAX).unwrap();
    assert_eq!(
        DiscreteLaplace::for_sensitivity(u64::MAX, tiny),
        Err(Error::Overflow)
    );
    assert_eq!(
        DiscreteLaplace::for_sensitivity(0, Epsilon::new(1, 1).unwrap()),
        Err(Error::SensitivityNotPositive)
    );
    // Grid mechanisms: a sensitivity of 2^30 on the finest grid needs 2^62 steps, and
    // ε = 1/2^63 multiplies that beyond u64.
    let huge = GridLaplace::with_grid(
        Fixed::from_int(1 << 30),
        Epsilon::new(1, 1 << 63).unwrap(),
        -32,
    );
    assert_eq!(huge.unwrap_err(), Error::Overflow);
    let big = GridLaplace::with_grid(
        Fixed::from_int(1 << 20),
        Epsilon::new(1, 1 << 8).unwrap(),
        -32,
    )
    .unwrap();
    assert_eq!(
        big.with_noise(BoundedDiscreteLaplace::new).unwrap_err(),
        Error::Overflow
    );
    let eps = Epsilon::new(1, 1).unwrap();
    let mut r = rng(3);
    assert_eq!(
        laplace_on_grid(Fixed::ONE, Fixed::ZERO, eps, &mut r),
        Err(Error::SensitivityNotPositive)
    );
    assert_eq!(
        laplace_on_grid(Fixed::ONE, fx("-1"), eps, &mut r),
        Err(Error::SensitivityNotPositive)
    );
    assert_eq!(
        GridLaplace::with_grid(Fixed::ONE, eps, 31).unwrap_err(),
        Error::GridOutOfRange
    );
    assert_eq!(
        GridLaplace::with_grid(Fixed::ONE, eps, -33).unwrap_err(),
        Error::GridOutOfRange
    );
}

#[test]
fn bad_histogram_input_is_a_typed_error() {
    let mut h = Histogram::<4>::categorical().unwrap();
    assert_eq!(h.record_index(4), Err(Error::BinOutOfRange));
    assert_eq!(h.record_index(usize::MAX), Err(Error::BinOutOfRange));
    assert_eq!(h.record(Fixed::ONE), Err(Error::BinOutOfRange));
    assert_eq!(h.total(), 0);
    assert_eq!(
        Histogram::<0>::categorical().unwrap_err(),
        Error::EmptyRange
    );
    let mut strict =
        Histogram::<4>::equal_width(Fixed::ZERO, Fixed::from_int(4), OutOfRange::Reject).unwrap();
    assert_eq!(strict.record(Fixed::from_int(4)), Err(Error::OutOfRange));
    assert_eq!(strict.record(fx("-0.001")), Err(Error::OutOfRange));
    assert_eq!(strict.total(), 0);
    assert_eq!(
        Histogram::<4>::equal_width(Fixed::ONE, Fixed::ONE, OutOfRange::Clamp).unwrap_err(),
        Error::EmptyRange
    );
    let other =
        Histogram::<4>::equal_width(Fixed::ZERO, Fixed::from_int(8), OutOfRange::Reject).unwrap();
    assert_eq!(strict.merge(&other), Err(Error::BinningMismatch));
}

#[test]
fn out_of_range_fixed_point_is_a_typed_error() {
    assert_eq!("2147483648".parse::<Fixed>(), Err(Error::OutOfRange));
    assert_eq!("-2147483649".parse::<Fixed>(), Err(Error::OutOfRange));
    assert_eq!("1e40".parse::<Fixed>(), Err(Error::OutOfRange));
    assert_eq!("12,5".parse::<Fixed>(), Err(Error::Parse));
    assert_eq!(Fixed::from_f64(2147483648.0), Err(Error::OutOfRange));
    assert_eq!(Fixed::from_f64(-3e9), Err(Error::OutOfRange));
    assert_eq!(Fixed::from_f64(f64::NAN), Err(Error::OutOfRange));
    assert_eq!(Fixed::from_f64(f64::INFINITY), Err(Error::OutOfRange));
    assert_eq!(
        Fixed::MAX.checked_add(Fixed::from_bits(1)),
        Err(Error::OutOfRange)
    );
    assert_eq!(
        Fixed::MIN.checked_sub(Fixed::from_bits(1)),
        Err(Error::OutOfRange)
    );
    assert_eq!(Fixed::pow2(31), Err(Error::GridOutOfRange));
    // Releases near the edges clamp onto the lattice instead of wrapping.
    let mech = GridLaplace::with_grid(fx("1000"), Epsilon::new(1, 100).unwrap(), 0).unwrap();
    let mut r = rng(4);
    for x in [Fixed::MAX, Fixed::MIN] {
        for _ in 0..1000 {
            let out = mech.release(x, &mut r).unwrap();
            assert_eq!(out.to_bits().rem_euclid(1 << 32), 0);
        }
    }
}

#[test]
fn errors_explain_themselves() {
    for e in [
        Error::EpsilonZero,
        Error::EpsilonNegative,
        Error::EpsilonNotFinite,
        Error::ScaleZero,
        Error::Overflow,
        Error::OutOfRange,
        Error::BinOutOfRange,
        Error::IterationBudgetExhausted,
    ] {
        assert!(!e.to_string().is_empty());
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1024,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(0x09e1_7ac7),
        ..ProptestConfig::default()
    })]

    /// Arbitrary parameters never panic: a release either succeeds on the lattice or
    /// returns a typed error.
    #[test]
    fn arbitrary_parameters_never_panic(
        value: i64,
        sensitivity: i64,
        eps_num: u64,
        eps_den: u64,
        grid_exp in -40i32..40,
        seed: u64,
    ) {
        let mut r = rng(seed);
        let eps = Epsilon::new(eps_num, eps_den);
        let Ok(eps) = eps else {
            prop_assert!(eps_num == 0 || eps_den == 0);
            return Ok(());
        };
        let x = Fixed::from_bits(value);
        let delta = Fixed::from_bits(sensitivity);
        match GridLaplace::with_grid(delta, eps, grid_exp) {
            Ok(mech) => {
                let step = mech.grid().to_bits();
                if let Ok(out) = mech.release(x, &mut r) {
                    prop_assert_eq!(out.to_bits().rem_euclid(step), 0);
                }
                if let Ok(b) = mech.with_noise(BoundedDiscreteLaplace::new) {
                    let out = b.release(x, &mut r).unwrap();
                    prop_assert_eq!(out.to_bits().rem_euclid(step), 0);
                }
            }
            Err(e) => prop_assert!(matches!(
                e,
                Error::SensitivityNotPositive | Error::GridOutOfRange | Error::Overflow
            )),
        }
        let _ = laplace_on_grid(x, delta, eps, &mut r);
    }
}

//! Empirical privacy and distribution checks of the local randomizers.
//!
//! For each randomizer at ε = 1: 10⁶ samples for each of two inputs; (1) a
//! chi-square goodness-of-fit test of the sampler against its exact output
//! probabilities ([`Odds`]), and (2) an empirical lower bound on ε in the style of
//! LDP-Auditor: `max_o ln(CP_low(P[o|x]) / CP_high(P[o|x′]))` with 99.99 %
//! Clopper–Pearson bounds, which must not exceed the claimed ε (and, where the
//! privacy ratio is attained, must come close to it).

use privq_core::local::{
    BinaryRr, Grr, HadamardResponse, Odds, Olh, OneBitMean, SqBit, UeVariant, UnaryEncoding,
    UnitValue,
};
use privq_host::stats::{self, chi_square_gof};
use privq_host::{Epsilon, Fixed};
use rand_chacha::ChaCha12Rng;
use rand_core::SeedableRng;

const N: u64 = 1_000_000;
const EPS: f64 = 1.0;

fn eps() -> Epsilon {
    Epsilon::new(1, 1).unwrap()
}

/// Two-sided Clopper–Pearson interval (the library's exact one, `stats::clopper_pearson`).
fn clopper_pearson(k: u64, n: u64, alpha: f64) -> (f64, f64) {
    stats::clopper_pearson(k, n, alpha).expect("valid counts and level")
}

/// Empirical lower bound on ε from two count vectors over the same cells.
fn empirical_epsilon(a: &[u64], b: &[u64]) -> f64 {
    let (na, nb) = (a.iter().sum::<u64>(), b.iter().sum::<u64>());
    let mut best = f64::NEG_INFINITY;
    for (&ka, &kb) in a.iter().zip(b) {
        for ((k1, n1), (k2, n2)) in [((ka, na), (kb, nb)), ((kb, nb), (ka, na))] {
            let lo = clopper_pearson(k1, n1, 1e-4).0;
            let hi = clopper_pearson(k2, n2, 1e-4).1;
            if lo > 0.0 {
                best = best.max((lo / hi).ln());
            }
        }
    }
    best
}

/// Samples `N` outputs (as cell indices) and checks them against the exact pmf.
fn sample_and_fit(
    name: &str,
    cells: usize,
    mut draw: impl FnMut(&mut ChaCha12Rng) -> usize,
    pmf: impl Fn(usize) -> Odds,
    seed: u64,
) -> Vec<u64> {
    let mut rng = ChaCha12Rng::seed_from_u64(seed);
    let mut counts = vec![0u64; cells];
    for _ in 0..N {
        counts[draw(&mut rng)] += 1;
    }
    let probs: Vec<f64> = (0..cells).map(|o| pmf(o).at(EPS)).collect();
    let fit = chi_square_gof(&counts, &probs).unwrap();
    assert!(
        fit.p_value > 1e-4,
        "{name}: sampler does not match its exact pmf: {fit}"
    );
    counts
}

fn check_pair(name: &str, a: &[u64], b: &[u64], tight: bool) {
    let e = empirical_epsilon(a, b);
    eprintln!("{name}: empirical epsilon lower bound {e:.4} (claimed {EPS})");
    assert!(e <= EPS, "{name}: empirical epsilon {e} exceeds {EPS}");
    if tight {
        assert!(
            e > 0.95 * EPS,
            "{name}: empirical epsilon {e} far below {EPS}: is the claim loose?"
        );
    }
}

#[test]
fn clopper_pearson_sanity() {
    let (lo, hi) = clopper_pearson(50, 100, 0.05);
    // Reference (R binom.test): 0.3983, 0.6017.
    assert!(
        (lo - 0.3983).abs() < 1e-3 && (hi - 0.6017).abs() < 1e-3,
        "{lo} {hi}"
    );
}

#[test]
fn binary_rr() {
    let m = BinaryRr::new(eps()).unwrap();
    let run = |x: bool, seed| {
        sample_and_fit(
            "rr",
            2,
            |r| usize::from(m.randomize(x, r).unwrap()),
            |o| m.probability(x, o == 1),
            seed,
        )
    };
    check_pair("rr", &run(false, 1), &run(true, 2), true);
}

#[test]
fn grr() {
    let m = Grr::new(eps(), 4).unwrap();
    let run = |x: u32, seed| {
        sample_and_fit(
            "grr",
            4,
            |r| m.randomize(x, r).unwrap() as usize,
            |o| m.probability(x, o as u32),
            seed,
        )
    };
    check_pair("grr", &run(0, 3), &run(3, 4), true);
}

#[test]
fn unary_encodings() {
    for (variant, seed) in [(UeVariant::Optimized, 5), (UeVariant::Symmetric, 7)] {
        let m = UnaryEncoding::new(variant, eps(), 3).unwrap();
        // Products of three per-bit probabilities: compared in floating point.
        let mut rng = ChaCha12Rng::seed_from_u64(seed);
        let mut counts = [vec![0u64; 8], vec![0u64; 8]];
        for (x, c) in [0u32, 1].iter().zip(counts.iter_mut()) {
            for _ in 0..N {
                let mut b = [0u8; 1];
                m.randomize_into(*x, &mut rng, &mut b).unwrap();
                c[b[0] as usize] += 1;
            }
            let probs: Vec<f64> = (0..8u32)
                .map(|o| {
                    (0..3)
                        .map(|i| m.bit_probability(*x, i, o >> i & 1 == 1).at(EPS))
                        .product()
                })
                .collect();
            let fit = chi_square_gof(c, &probs).unwrap();
            assert!(fit.p_value > 1e-4, "{variant:?}: {fit}");
        }
        check_pair(&format!("{variant:?}"), &counts[0], &counts[1], true);
    }
}

#[test]
fn olh_given_its_seed() {
    // Cells: whether the bucket equals h_seed(x) for the first input x = 0. Under
    // x = 0 that has probability p = e/(e+g−1); under x′ = 1 it has 1/g up to the
    // hash's 2⁻³¹-relative bias (pairwise independence). The ratio p·g < e^ε.
    let m = Olh::with_buckets(eps(), 64, 4).unwrap();
    let e = EPS.exp();
    let (p, g) = (e / (e + 3.0), 4.0);
    let mut counts = [vec![0u64; 2], vec![0u64; 2]];
    for (x, c) in [0u32, 1].iter().zip(counts.iter_mut()) {
        let mut rng = ChaCha12Rng::seed_from_u64(11 + u64::from(*x));
        for _ in 0..N {
            let o = m.randomize(*x, &mut rng).unwrap();
            c[usize::from(o.supports(0))] += 1;
        }
    }
    let fit0 = chi_square_gof(&counts[0], &[1.0 - p, p]).unwrap();
    let fit1 = chi_square_gof(&counts[1], &[1.0 - 1.0 / g, 1.0 / g]).unwrap();
    assert!(
        fit0.p_value > 1e-4 && fit1.p_value > 1e-4,
        "{fit0} / {fit1}"
    );
    check_pair("olh(event)", &counts[0], &counts[1], false);
}

#[test]
fn hadamard_response() {
    let m = HadamardResponse::new(eps(), 6).unwrap();
    let run = |x: u32, seed| {
        sample_and_fit(
            "hr",
            8,
            |r| m.randomize(x, r).unwrap() as usize,
            |o| m.probability(x, o as u64),
            seed,
        )
    };
    check_pair("hr", &run(0, 13), &run(5, 14), true);
}

#[test]
fn one_bit_mean_and_sq_bit() {
    let m = OneBitMean::new(eps(), 4).unwrap();
    let run = |x: Fixed, seed| {
        sample_and_fit(
            "1bitmean",
            2,
            |r| usize::from(m.randomize(x, r).unwrap()),
            |o| m.probability(x, o == 1).unwrap(),
            seed,
        )
    };
    let a = run(Fixed::ZERO, 15);
    let mid = run("1.5".parse().unwrap(), 16);
    let b = run(Fixed::from_int(4), 17);
    check_pair("1bitmean", &a, &b, true);
    check_pair("1bitmean(mid)", &a, &mid, false);

    let sq = SqBit::new(eps()).unwrap();
    let run = |q: UnitValue, seed| {
        sample_and_fit(
            "sq",
            2,
            |r| usize::from(sq.randomize(q, r).unwrap()),
            |o| sq.probability(q, o == 1),
            seed,
        )
    };
    check_pair(
        "sq-bit",
        &run(UnitValue::ZERO, 18),
        &run(UnitValue::ONE, 19),
        true,
    );
}

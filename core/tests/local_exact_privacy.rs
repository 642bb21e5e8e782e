//! Exact privacy-ratio checks: for every randomizer, every pair of inputs and
//! every output, `P[o | x] ≤ e^ε · P[o | x′]`, proved in integer arithmetic from the
//! randomizers' exact output probabilities (for all ε at once), plus a check that
//! the bound is tight (some ratio equals e^ε, so ε is not overstated).

use privq_core::local::{
    BinaryRr, Grr, HadamardResponse, Odds, Olh, OneBitMean, SqBit, UeVariant, UnaryEncoding,
    UnitValue,
};
use privq_core::{Epsilon, Fixed};

fn eps() -> Epsilon {
    Epsilon::new(3, 4).unwrap()
}

/// Checks the ratio for every (x, x′, o) and that the largest ratio at ε = 3/4
/// equals e^ε to floating-point accuracy (the bound is attained).
fn check_all<X: Copy, O: Copy>(inputs: &[X], outputs: &[O], p: impl Fn(X, O) -> Odds) {
    let e = 0.75f64;
    let mut worst = 0f64;
    for &x in inputs {
        // Probabilities sum to one.
        let total: f64 = outputs.iter().map(|&o| p(x, o).at(e)).sum();
        assert!((total - 1.0).abs() < 1e-9, "sum {total}");
        for &x2 in inputs {
            for &o in outputs {
                let (a, b) = (p(x, o), p(x2, o));
                assert!(a.within_e_eps(&b).unwrap(), "ratio exceeds e^eps");
                worst = worst.max(a.at(e) / b.at(e));
            }
        }
    }
    assert!(
        (worst.ln() - e).abs() < 1e-9,
        "worst log-ratio {} vs {e}",
        worst.ln()
    );
}

#[test]
fn binary_rr() {
    let rr = BinaryRr::new(eps()).unwrap();
    check_all(&[false, true], &[false, true], |x, y| rr.probability(x, y));
}

#[test]
fn grr_small_domains() {
    for d in [2u32, 3, 7, 16] {
        let grr = Grr::new(eps(), d).unwrap();
        let items: Vec<u32> = (0..d).collect();
        check_all(&items, &items, |x, y| grr.probability(x, y));
    }
}

#[test]
fn unary_encodings_over_all_bit_vectors() {
    // d = 4: all 16 output vectors, probabilities as products over the bits.
    for variant in [UeVariant::Symmetric, UeVariant::Optimized] {
        let ue = UnaryEncoding::new(variant, eps(), 4).unwrap();
        let items: Vec<u32> = (0..4).collect();
        let vectors: Vec<u8> = (0..16).collect();
        // Bits other than x, x′ cancel in the ratio; build the product over the two
        // positions that differ (and check full products numerically in `at`).
        for &x in &items {
            for &x2 in &items {
                for &v in &vectors {
                    let prob = |item: u32, positions: &[u32]| {
                        positions.iter().fold(Odds::ONE, |acc, &i| {
                            acc.and(&ue.bit_probability(item, i, v >> i & 1 == 1))
                                .unwrap()
                        })
                    };
                    let pos: Vec<u32> = if x == x2 { vec![x] } else { vec![x, x2] };
                    assert!(prob(x, &pos).within_e_eps(&prob(x2, &pos)).unwrap());
                }
            }
        }
        // Full-vector probabilities (floating point) sum to one and attain e^ε.
        let full = |x: u32, v: u8| -> f64 {
            (0..4)
                .map(|i| ue.bit_probability(x, i, v >> i & 1 == 1).at(0.75))
                .product()
        };
        let mut worst = 0f64;
        for &x in &items {
            let s: f64 = vectors.iter().map(|&v| full(x, v)).sum();
            assert!((s - 1.0).abs() < 1e-12);
            for &x2 in &items {
                for &v in &vectors {
                    worst = worst.max(full(x, v) / full(x2, v));
                }
            }
        }
        assert!(
            (worst.ln() - 0.75).abs() < 1e-9,
            "{variant:?}: {}",
            worst.ln()
        );
    }
}

#[test]
fn olh_given_the_seed() {
    // The seed's distribution does not depend on the item; given the seed the
    // bucket is g-ary RR on h(x). Every h(x) ∈ [0, g) is possible.
    let olh = Olh::with_buckets(eps(), 100, 5).unwrap();
    let buckets: Vec<u32> = (0..5).collect();
    check_all(&buckets, &buckets, |hx, y| olh.probability(hx, y));
}

#[test]
fn hadamard_response() {
    let hr = HadamardResponse::new(eps(), 6).unwrap(); // K = 8
    let items: Vec<u32> = (0..6).collect();
    let outs: Vec<u64> = (0..hr.order()).collect();
    check_all(&items, &outs, |x, j| hr.probability(x, j));
}

#[test]
fn one_bit_mean_and_sq_bit() {
    let m = OneBitMean::new(eps(), 4).unwrap();
    let xs: Vec<Fixed> = ["0", "0.5", "1", "3.25", "4"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    check_all(&xs, &[false, true], |x, b| m.probability(x, b).unwrap());
    let sq = SqBit::new(eps()).unwrap();
    let qs: Vec<UnitValue> = [0u64, 1, 3, 4]
        .iter()
        .map(|&k| UnitValue::from_fraction(k, 4).unwrap())
        .collect();
    check_all(&qs, &[false, true], |q, b| sq.probability(q, b));
}

#[test]
fn a_wrong_randomizer_is_caught() {
    // GRR that keeps with e^ε/(e^ε + 1) regardless of d (a classic bug): the
    // replacement items get (1/(e^ε+1))/(d−1), and the ratio exceeds e^ε.
    let d = 4u128;
    let wrong = |x: u32, y: u32| {
        if x == y {
            Odds::linear([0, d - 1], [d - 1, d - 1], false)
        } else {
            Odds::linear([1, 0], [d - 1, d - 1], false)
        }
    };
    assert!(!wrong(0, 0).within_e_eps(&wrong(1, 0)).unwrap());
}

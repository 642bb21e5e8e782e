//! Lemma 6.3.1 and Lemma 6.3.8 checked exhaustively, Thm 6.3.12's accuracy, bad input.

use privq_core::rand_core::Rng;

use super::*;
use crate::seeded_rng;

fn random_coverage(d: u32, records: usize, seed: u64) -> Coverage {
    let mut rng = seeded_rng(seed);
    // Sparse records (each attribute with probability 1/4) so marginals vary.
    let recs: Vec<(u64, u64)> = (0..records)
        .map(|_| {
            let m = (0..d).fold(0u64, |m, i| {
                m | (u64::from(rng.next_u32().is_multiple_of(4)) << i)
            });
            (m, u64::from(rng.next_u32() % 5 + 1))
        })
        .collect();
    Coverage::new(d, &recs).unwrap()
}

pub(super) fn random_cut(vertices: u32, edges: usize, seed: u64) -> Cut {
    let mut rng = seeded_rng(seed);
    let mut e = Vec::new();
    while e.len() < edges {
        let (u, v) = (rng.next_u32() % vertices, rng.next_u32() % vertices);
        if u != v {
            e.push((u, v));
        }
    }
    Cut::new(vertices, &e, edges as u64).unwrap()
}

/// Subsets of `mask`.
pub(super) fn subsets(mask: u64) -> impl Iterator<Item = u64> {
    let mut next = Some(0u64);
    std::iter::from_fn(move || {
        let s = next?;
        next = if s == mask {
            None
        } else {
            Some(((s | !mask) + 1) & mask)
        };
        Some(s)
    })
}

/// Lemma 6.3.1, items 1–4, on `f` for the exact Algorithm 6.1.
fn check_lemma_6_3_1<F: SetFunction>(f: &mut F, rho: f64) {
    let d = Decomposition::exact(f, rho, 1 << 20).unwrap();
    let n = f.ground();
    let all = (1u64 << n) - 1;
    // 4. Size: |B| ≤ 1/ρ and |I| ≤ |U|^{1/ρ}.
    for p in d.pieces() {
        assert!(f64::from(p.b.count_ones()) <= 1.0 / rho + 1e-9, "{p:?}");
    }
    assert!((d.len() as f64) <= f64::from(n).powf(1.0 / rho).max(1.0) + 1e-9);
    for p in d.pieces() {
        // 1. Lipschitz: ∂_x g^B(S) = ∂_x f(S ∪ B) ≤ ρ for S ⊆ V(B), x ∈ V(B).
        for s in subsets(p.v) {
            let base = f.value(s | p.b).unwrap();
            for x in 0..n {
                let bit = 1u64 << x;
                if p.v & bit != 0 && s & bit == 0 {
                    let m = f.value(s | p.b | bit).unwrap() - base;
                    assert!(m <= rho + 2e-9, "piece {:#b}: ∂ {m} > ρ at {s:#b}", p.b);
                }
            }
        }
    }
    for s in 0..=all {
        // 2. Completeness: F(S) ⊆ S ⊆ V(F(S)).
        let p = d.piece_for(s);
        assert_eq!(p.b & !s, 0, "F({s:#b}) = {:#b} ⊄ S", p.b);
        assert_eq!(s & !p.v, 0, "S = {s:#b} ⊄ V(F(S)) = {:#b}", p.v);
        // 3. Uniqueness: F(S) = B iff B ⊆ S ⊆ V(B) and S ∩ T(B) = ∅.
        for q in d.pieces() {
            let fits = q.b & !s == 0 && s & !q.v == 0 && s & q.t == 0;
            assert_eq!(fits, q.b == p.b, "S = {s:#b}, B = {:#b}", q.b);
        }
    }
}

#[test]
fn lemma_6_3_1_on_random_coverage_functions() {
    for seed in 0..6 {
        for rho in [0.05, 0.15, 0.4] {
            check_lemma_6_3_1(&mut random_coverage(8, 30, seed), rho);
        }
    }
}

#[test]
fn lemma_6_3_1_on_random_cut_functions() {
    for seed in 0..6 {
        for rho in [0.05, 0.15, 0.4] {
            check_lemma_6_3_1(&mut random_cut(8, 20, seed), rho);
        }
    }
}

/// An oracle within `tol` of `f`: a fixed pseudo-random offset per set.
struct Perturbed<F> {
    inner: F,
    tol: f64,
    seed: u64,
}

impl<F: SetFunction> SetFunction for Perturbed<F> {
    fn ground(&self) -> u32 {
        self.inner.ground()
    }

    fn value(&mut self, set: u64) -> Result<f64, DecomposeError> {
        let mut rng = seeded_rng(self.seed ^ set.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let u = f64::from(rng.next_u32()) / f64::from(u32::MAX);
        Ok(self.inner.value(set)? + self.tol * (2.0 * u - 1.0))
    }
}

/// Lemma 6.3.8: with an oracle within ρ/12, the pieces of Algorithm 6.2 are
/// ρ-Lipschitz *for the true f* on V(B), |B| ≤ 6/ρ, and F(S) ⊆ S ⊆ V(F(S)).
#[test]
fn lemma_6_3_8_with_a_tolerant_oracle() {
    for seed in 0..4 {
        for rho in [0.1, 0.3] {
            let mut truth = random_coverage(8, 30, seed);
            let mut oracle = Memo::new(Perturbed {
                inner: truth.clone(),
                tol: rho / 12.0,
                seed,
            });
            let d = Decomposition::tolerant(&mut oracle, rho, 1 << 20).unwrap();
            for p in d.pieces() {
                assert!(f64::from(p.b.count_ones()) <= 6.0 / rho);
                for s in subsets(p.v) {
                    let base = truth.value(s | p.b).unwrap();
                    for x in (0..8)
                        .map(|x| 1u64 << x)
                        .filter(|b| p.v & b != 0 && s & b == 0)
                    {
                        let m = truth.value(s | p.b | x).unwrap() - base;
                        assert!(m <= rho + 2e-9, "∂ {m} > ρ");
                    }
                }
            }
            for s in 0..256u64 {
                let p = d.piece_for(s);
                assert_eq!(p.b & !s, 0);
                assert_eq!(s & !p.v, 0);
            }
        }
    }
}

/// Thm 6.3.12: Learn (α, β)-approximates a monotone submodular f under a product
/// distribution: here every coverage function on d = 12 with p = 1/2 (uniform
/// over the 4096 sets, enumerated exactly) at α = 0.3, β = 0.1.
#[test]
fn learn_is_alpha_beta_accurate_on_coverage_functions() {
    let (alpha, beta) = (0.3, 0.1);
    let p = [0.5; 12];
    for seed in 0..3 {
        let data = random_coverage(12, 200, seed);
        let mut oracle = Memo::new(data.clone());
        let h = learn(&mut oracle, alpha, beta, 1 << 16, |_, forced, free| {
            Ok(data.product_mean(forced, free, &p))
        })
        .unwrap();
        let mut f = data.clone();
        let bad = (0..1u64 << 12)
            .filter(|&s| (f.value(s).unwrap() - h.answer(s)).abs() > alpha)
            .count();
        assert!(
            (bad as f64) <= beta * 4096.0,
            "seed {seed}: {bad} of 4096 sets off by more than alpha ({} pieces)",
            h.decomposition().len()
        );
    }
}

#[test]
fn the_closed_form_mean_matches_enumeration() {
    let data = random_coverage(6, 40, 9);
    let p = [0.2, 0.5, 0.7, 0.1, 0.9, 0.4];
    let (forced, free) = (0b000_100u64, 0b101_011u64);
    let mut f = data.clone();
    let exact: f64 = subsets(free)
        .map(|s| {
            let prob: f64 = (0..6)
                .filter(|i| free >> i & 1 == 1)
                .map(|i| if s >> i & 1 == 1 { p[i] } else { 1.0 - p[i] })
                .product();
            prob * f.value(s | forced).unwrap()
        })
        .sum();
    assert!((data.product_mean(forced, free, &p) - exact).abs() < 1e-12);
}

#[test]
fn bad_input_is_a_typed_error() {
    let mut f = random_coverage(8, 30, 1);
    assert!(matches!(
        Decomposition::exact(&mut f, 0.001, 3),
        Err(DecomposeError::TooManyPieces { cap: 3 })
    ));
    assert!(Decomposition::exact(&mut f, 0.0, 10).is_err());
    assert!(Decomposition::exact(&mut f, f64::NAN, 10).is_err());
    assert!(Coverage::new(0, &[]).is_err());
    assert!(Coverage::new(2, &[(0b100, 1)]).is_err());
    assert!(Coverage::new(2, &[(0b01, 0)]).is_err());
    assert!(Cut::new(3, &[(0, 0)], 1).is_err());
    assert!(Cut::new(3, &[(0, 1), (1, 2)], 1).is_err());
    assert!(learn(&mut f, 0.0, 0.1, 10, |_, _, _| Ok(0.0)).is_err());
    // Conjunctions are one minus the disjunction on the negated records.
    let mut neg = Coverage::new(2, &[(0b11, 3), (0b01, 1)]).unwrap().negated();
    assert_eq!(1.0 - neg.value(0b11).unwrap(), 0.75);
}

/// Fig. 6.6 end to end at an n the tolerance allows: ε charged once, most
/// conjunctions (S ∼ p = 1/2, all 256 sets enumerated) within α; a small n is
/// refused before the charge, naming the n needed.
#[test]
fn private_release_is_alpha_beta_accurate_and_refuses_small_n() {
    use crate::accountant::Accountant;
    use crate::data::{CountHistogram, MemoryCap};
    use privq_core::Epsilon;
    let d = 8u32;
    let mut rng = seeded_rng(21);
    let counts: Vec<u64> = (0..1u64 << d)
        .map(|u| (u64::from(rng.next_u32() % 50) + 1) * (1 + u.count_ones() as u64).pow(4) * 40_000)
        .collect();
    let data = CountHistogram::from_counts(counts, MemoryCap::default()).unwrap();
    let (alpha, beta) = (0.3, 0.1);
    let config = ReleaseConfig {
        alpha,
        beta,
        p: vec![0.5; d as usize],
        cap: 256,
        rho: None,
        require_n: true,
    };
    let eps = Epsilon::new(1, 1).unwrap();
    let mut budget = Accountant::pure(eps);
    let r = release_conjunctions(&data, &config, eps, &mut budget, &mut seeded_rng(22)).unwrap();
    assert_eq!(budget.spent_epsilon(), Some(eps));
    let truth = |s: u64| {
        let c: u64 = data
            .counts()
            .iter()
            .enumerate()
            .filter(|&(u, _)| u as u64 & s == s)
            .map(|(_, &c)| c)
            .sum();
        c as f64 / data.total() as f64
    };
    let bad = (0..1u64 << d)
        .filter(|&s| (r.conjunction(s) - truth(s)).abs() > alpha)
        .count();
    assert!(
        (bad as f64) <= beta * 256.0,
        "{bad} of 256 off by more than alpha"
    );
    // The same release on 10^4 records: refused before any charge.
    let small = CountHistogram::from_counts(vec![40; 256], MemoryCap::default()).unwrap();
    let mut budget = Accountant::pure(eps);
    match release_conjunctions(&small, &config, eps, &mut budget, &mut seeded_rng(1)) {
        Err(ReleaseError::TooFewRecords { n, needed }) => assert!(n == 10_240 && needed > 1e7),
        other => panic!("{other:?}"),
    }
    assert!(budget.ledger().is_empty());
}

/// `c_S(D)` for the attribute set S.
fn conjunction_truth(data: &crate::data::CountHistogram, s: u64) -> f64 {
    let c: u64 = data
        .counts()
        .iter()
        .enumerate()
        .filter(|&(u, _)| u as u64 & s == s)
        .map(|(_, &c)| c)
        .sum();
    c as f64 / data.total() as f64
}

#[test]
fn local_release_is_accurate_and_refuses_a_small_fleet() {
    use crate::data::{CountHistogram, MemoryCap};
    use crate::ldp::sq::{LocalSqOracle, Strategy};
    use privq_core::Epsilon;
    let d = 4u32;
    let counts: Vec<u64> = (0..1u64 << d)
        .map(|u| 4_000 * (1 + u.count_ones() as u64).pow(2))
        .collect();
    let data = CountHistogram::from_counts(counts, MemoryCap::default()).unwrap();
    let (alpha, beta) = (0.3, 0.1);
    let config = ReleaseConfig {
        alpha,
        beta,
        p: vec![0.5; d as usize],
        cap: 16,
        rho: None,
        require_n: false,
    };
    let k = config.query_budget(data.len()).unwrap();
    let eps = Epsilon::new(1, 1).unwrap();
    let oracle = LocalSqOracle::new(eps, k, beta, Strategy::Partition).unwrap();
    let r = release_conjunctions_local(&data, &config, &oracle, 5).unwrap();
    assert_eq!(r.query_budget(), k);
    // τ ≈ 0.07 per answer at n = 400 000, k = 96: every conjunction within α.
    assert!(oracle.worst_tau(data.total()) < 0.1);
    for s in 0..1u64 << d {
        let (got, truth) = (r.conjunction(s), conjunction_truth(&data, s));
        assert!((got - truth).abs() <= alpha, "S = {s:#b}: {got} vs {truth}");
    }
    // With the theorem's tolerance ρ/12 the fleet is far too small: refused.
    let strict = ReleaseConfig {
        rho: None,
        require_n: true,
        ..config.clone()
    };
    match release_conjunctions_local(&data, &strict, &oracle, 5) {
        Err(ReleaseError::TooFewRecords { n, needed }) => {
            assert!(n == data.total() && needed > 1e9, "{needed}")
        }
        other => panic!("{other:?}"),
    }
    // An oracle with another budget is refused.
    let wrong = LocalSqOracle::new(eps, k + 1, beta, Strategy::Partition).unwrap();
    assert!(matches!(
        release_conjunctions_local(&data, &config, &wrong, 5),
        Err(ReleaseError::InvalidParameter(_))
    ));
}

#[test]
fn agnostic_release_through_the_local_oracle() {
    use crate::data::{CountHistogram, MemoryCap};
    use crate::ldp::sq::{LocalSqOracle, Strategy};
    use crate::query::Query;
    use privq_core::Epsilon;
    let counts: Vec<u64> = (0..16u64).map(|u| 10_000 + 5_000 * u).collect();
    let data = CountHistogram::from_counts(counts, MemoryCap::default()).unwrap();
    let class: Vec<Query> = (0..4)
        .map(|i| Query::BitPattern {
            mask: 1 << i,
            pattern: 1 << i,
        })
        .collect();
    let beta = 0.2;
    let oracle = LocalSqOracle::new(
        Epsilon::new(1, 1).unwrap(),
        class.len(),
        beta,
        Strategy::Partition,
    )
    .unwrap();
    let records = device_records(&data).unwrap();
    let mut stat = LocalStat::new(&oracle, &records, class.len(), 3).unwrap();
    let tau = stat.tolerance();
    assert!(tau > 0.0 && tau <= beta / 4.0, "{tau}");
    let r = release_by_agnostic_learning(&class, &mut stat, 16, beta).unwrap();
    // One report per device: each answered exactly one class member.
    assert_eq!(stat.reports(), data.total());
    for (i, q) in class.iter().enumerate() {
        let Query::BitPattern { mask, .. } = q else {
            unreachable!()
        };
        let truth = conjunction_truth(&data, *mask as u64);
        assert!((r.answers[i] - truth).abs() <= beta + tau, "member {i}");
    }
    // A class larger than the oracle's budget is refused.
    assert!(LocalStat::new(&oracle, &records, 5, 3).is_err());
}

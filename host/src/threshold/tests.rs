//! Lemma 7.3.3 (agreement), PRIVLEARN end to end, and bad input.

use privq_core::Epsilon;
use privq_core::rand_core::Rng;

use super::*;
use crate::accountant::Accountant;
use crate::contract::Mechanism;
use crate::data::{CountHistogram, MemoryCap};
use crate::seeded_rng;

fn eps1() -> Epsilon {
    Epsilon::new(1, 1).unwrap()
}

/// Random counts over `{0,1}^d` with about `n` records, skewed so that conjunction
/// fractions spread over [0, 1].
fn random_data(d: u32, n: u64, seed: u64) -> CountHistogram {
    let mut rng = seeded_rng(seed);
    let w: Vec<u64> = (0..1u64 << d)
        .map(|u| u64::from(rng.next_u32() % 100 + 1) * (1 + u64::from(u.count_ones())).pow(3))
        .collect();
    let total: u64 = w.iter().sum();
    CountHistogram::from_counts(
        w.iter().map(|c| c * n.div_ceil(total)).collect(),
        MemoryCap::default(),
    )
    .unwrap()
}

/// Lemma 7.3.3: with n ≥ 30·b·log(b/β)/(εα), every non-⊥ label equals
/// `1[f^D(q) ≥ t]` and every ⊥ has `|f^D(q) − t| < α` (all 64 conjunctions on d = 6,
/// 9 thresholds each, 20 seeds: no violation at β = 0.01).
#[test]
fn lemma_7_3_3_agreement() {
    let (alpha, b) = (0.05, 64);
    let oracle = ThresholdOracle::new(b, eps1(), alpha).unwrap();
    let n = oracle.agreement_n(0.01).ceil() as u64;
    assert!(n > 200_000, "{n}");
    for seed in 0..20 {
        let data = random_data(6, n, seed);
        assert!(data.total() >= n);
        let mut rng = seeded_rng(100 + seed);
        let mut s = oracle
            .release(&data, &mut Accountant::pure(eps1()), &mut rng)
            .unwrap();
        for mask in 0..64u64 {
            let q = CountingQuery::conjunction(mask);
            let f = fraction(&data, &q);
            for t in (1..10).map(|i| i as f64 / 10.0) {
                match s.ask(&q, t, &mut rng).unwrap().bit() {
                    Some(bit) => assert_eq!(bit, f >= t, "seed {seed} q {mask:#b} t {t} f {f}"),
                    None => assert!((f - t).abs() < alpha, "seed {seed} q {mask:#b} t {t} f {f}"),
                }
            }
        }
        assert_eq!(s.queries_left(), 0);
    }
}

#[test]
fn the_oracle_refuses_a_new_query_beyond_b_but_reuses_old_ones() {
    let data = random_data(3, 10_000, 1);
    let mut budget = Accountant::pure(eps1());
    let mut rng = seeded_rng(2);
    let mut s = ThresholdOracle::new(2, eps1(), 0.1)
        .unwrap()
        .release(&data, &mut budget, &mut rng)
        .unwrap();
    let (a, b, c) = (
        CountingQuery::conjunction(1),
        CountingQuery::conjunction(2),
        CountingQuery::conjunction(3),
    );
    s.ask(&a, 0.5, &mut rng).unwrap();
    s.ask(&b, 0.5, &mut rng).unwrap();
    assert!(s.ask(&c, 0.5, &mut rng).is_err());
    for t in [0.1, 0.3, 0.9] {
        s.ask(&a, t, &mut rng).unwrap();
    }
    assert!(s.ask(&a, 1.0, &mut rng).is_err());
    assert!(s.ask(&a, f64::NAN, &mut rng).is_err());
    // The budget is spent: a second session is refused before it samples.
    let again = ThresholdOracle::new(2, eps1(), 0.1).unwrap();
    assert!(again.release(&data, &mut budget, &mut rng).is_err());
}

#[test]
fn bad_oracle_parameters_and_inputs_are_typed_errors() {
    assert!(ThresholdOracle::new(0, eps1(), 0.1).is_err());
    assert!(ThresholdOracle::new(2, eps1(), 0.0).is_err());
    assert!(ThresholdOracle::new(2, eps1(), f64::NAN).is_err());
    let to = ThresholdOracle::new(2, eps1(), 0.1).unwrap();
    let mut rng = seeded_rng(3);
    let three = CountHistogram::from_counts(vec![1, 2, 3], MemoryCap::default()).unwrap();
    let empty = CountHistogram::from_counts(vec![0; 4], MemoryCap::default()).unwrap();
    for data in [&three, &empty] {
        let mut budget = Accountant::pure(eps1());
        assert!(to.release(data, &mut budget, &mut rng).is_err());
        assert!(budget.ledger().is_empty(), "refused before the charge");
    }
}

/// PRIVLEARN end to end on d = 6 with a degree-3 PTF learner: the release answers
/// fresh conjunctions drawn from the same distribution G within α for all but a
/// γ fraction (Lemma 7.3.5's event), at an n far below eq. 7.8's.
#[test]
fn privlearn_is_alpha_gamma_accurate_on_small_d() {
    let (d, alpha, gamma, beta) = (6, 0.25, 0.2, 0.1);
    let learner = PtfLearner::new(d, 3, 64).unwrap();
    let needed = Requirements::thesis(
        alpha,
        beta,
        gamma,
        1.0,
        f64::from(d) * 2f64.ln(),
        |_, g, b| learner.sample_size(g, b),
        true,
    )
    .unwrap();
    let n = 200_000;
    assert!(needed.n_required > 1e3 * n as f64, "{needed:?}");
    let data = random_data(d, n, 7);
    let mut rng = seeded_rng(8);
    let mut draw = |count: usize| -> Vec<CountingQuery> {
        (0..count)
            .map(|_| CountingQuery::conjunction(u64::from(rng.next_u32()) & 63))
            .collect()
    };
    let sample = draw(300);
    let fresh = draw(2_000);
    let mut budget = Accountant::pure(eps1());
    let release = privlearn(
        &data,
        &sample,
        alpha,
        gamma,
        eps1(),
        &learner,
        &mut budget,
        &mut seeded_rng(9),
    )
    .unwrap();
    assert_eq!(budget.spent_epsilon(), Some(eps1()));
    assert_eq!(release.thresholds(), 12);
    let bad = fresh
        .iter()
        .filter(|q| (release.answer(q, |h, q| h.predict(q)) - fraction(&data, q)).abs() > alpha)
        .count();
    assert!(
        (bad as f64) < gamma * fresh.len() as f64,
        "{bad} of {} off by more than alpha",
        fresh.len()
    );
}

#[test]
fn privlearn_refuses_bad_parameters_before_charging() {
    let data = random_data(3, 10_000, 1);
    let learner = PtfLearner::new(3, 2, 64).unwrap();
    let sample = [CountingQuery::conjunction(1)];
    for (alpha, gamma, sample) in [
        (0.3, 0.1, &sample[..]),
        (0.0, 0.1, &sample[..]),
        (0.1, 1.0, &sample[..]),
        (0.1, 0.1, &[][..]),
    ] {
        let mut budget = Accountant::pure(eps1());
        let r = privlearn(
            &data,
            sample,
            alpha,
            gamma,
            eps1(),
            &learner,
            &mut budget,
            &mut seeded_rng(1),
        );
        assert!(matches!(r, Err(PrivLearnError::InvalidParameter(_))));
        assert!(budget.ledger().is_empty());
    }
}

#[test]
fn debug_hides_the_counts_and_bad_samples_are_refused_before_the_charge() {
    let data = CountHistogram::from_counts(vec![12_345, 6_789], MemoryCap::default()).unwrap();
    let mut rng = seeded_rng(4);
    let mut s = ThresholdOracle::new(3, eps1(), 0.1)
        .unwrap()
        .release(&data, &mut Accountant::pure(eps1()), &mut rng)
        .unwrap();
    s.ask(&CountingQuery::conjunction(1), 0.5, &mut rng)
        .unwrap();
    let shown = format!("{s:?}");
    assert!(
        !shown.contains("12345") && !shown.contains("6789"),
        "{shown}"
    );
    assert!(shown.contains("distinct_queries: 1"), "{shown}");
    // A query the learner cannot take, or a tiny alpha: refused, nothing charged.
    let learner = PtfLearner::new(1, 1, 8).unwrap();
    for (alpha, mask) in [(0.1, 0b10), (1e-9, 0b1)] {
        let mut budget = Accountant::pure(eps1());
        let sample = [CountingQuery::conjunction(mask)];
        let r = privlearn(
            &data,
            &sample,
            alpha,
            0.1,
            eps1(),
            &learner,
            &mut budget,
            &mut rng,
        );
        assert!(matches!(r, Err(PrivLearnError::InvalidParameter(_))));
        assert!(budget.ledger().is_empty());
    }
}

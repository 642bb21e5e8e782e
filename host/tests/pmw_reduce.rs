//! PMW domain reduction (Hardt's thesis §4.6, Lemma 4.6.4 / Thm 4.1.4): the size M of
//! eq. 4.26, the distribution of the public sub-universe V, and PMW's accuracy on V
//! for smooth data.

use privq_host::accountant::Accountant;
use privq_host::central::pmw::{PmwConfig, PmwError, PmwSession, PmwVariant};
use privq_host::central::pmw_reduce::{DomainReduction, ReduceError};
use privq_host::data::{CountHistogram, DataError, Distribution, Domain, MemoryCap};
use privq_host::query::Query;
use privq_host::rand_core::Rng;
use privq_host::stats::chi_square_gof;
use privq_host::{Epsilon, seeded_rng};

#[test]
fn draws_follow_eq_4_26() {
    // (ξ, N, α, β, |Q|) → M = 4·max{ξN(ln(1/β) + ln|Q|)/α², ln(1/β)}, computed by hand
    // (Python, natural logarithms).
    let cases = [
        (0.004, 1000, 0.1, 0.01, 50, 13_627.509_106_265_978),
        (2.0 / 1024.0, 1024, 0.25, 0.05, 7, 632.530_230_093_990_9),
        (1.0 / 16.0, 16, 0.5, 0.001, 1, 110.524_084_463_714_19),
        (0.5, 4, 0.9, 0.3, 3, 22.741_581_165_373_29),
    ];
    for (xi, n_cells, alpha, beta, q, want) in cases {
        let m = DomainReduction::new(xi, alpha, beta, q, 0.0)
            .unwrap()
            .draws(n_cells)
            .unwrap();
        assert!((m - want).abs() < 1e-9 * want, "{m} vs {want}");
    }
    // Thm 4.1.4: α = 1/√n, so M = 4·ξN·n·(ln(1/β) + ln k).
    let r = DomainReduction::sublinear(1e-3, 400, 0.1, 10, 0.0).unwrap();
    let want = 4.0 * 1e-3 * 2000.0 * 400.0 * (10f64.ln() + 10f64.ln());
    assert!((r.draws(2000).unwrap() - want).abs() < 1e-9 * want);
    assert_eq!(r.alpha(), 0.05);
}

#[test]
fn v_is_sorted_distinct_in_range_and_independent_of_the_data() {
    let cells = 1 << 14;
    let r = DomainReduction::new(1.0 / cells as f64, 0.1, 0.05, 20, 0.02).unwrap();
    let m = r.draws(cells).unwrap();
    let v = r.sample(cells, &mut seeded_rng(7)).unwrap();
    assert!(!v.is_full());
    assert!(v.len() <= m.ceil() as usize && v.len() > m as usize / 2);
    assert!(v.cells().windows(2).all(|w| w[0] < w[1]));
    assert!(v.cells().iter().all(|&u| u < cells));
    assert_eq!(v.universe(), cells);
    assert!((v.threshold_shift() - 0.12).abs() < 1e-15);
    // Same seed, same V; another seed, another V.
    assert_eq!(v, r.sample(cells, &mut seeded_rng(7)).unwrap());
    assert_ne!(
        v.cells(),
        r.sample(cells, &mut seeded_rng(8)).unwrap().cells()
    );
    // Sessions over two different databases (same public n) start on the same V.
    let w1: Vec<u64> = (0..cells).map(|u| ((u % 5) as u64 + 1) * 1_000).collect();
    let mut w2: Vec<u64> = (0..cells).map(|u| (u % 3) as u64 * 1_500).collect();
    // Same n on both (replace-one neighbours and beyond: n is public).
    w2[1] += w1.iter().sum::<u64>() - w2.iter().sum::<u64>();
    let x1 = CountHistogram::from_counts(w1, MemoryCap::default()).unwrap();
    let x2 = CountHistogram::from_counts(w2, MemoryCap::default()).unwrap();
    assert_eq!(x1.total(), x2.total());
    let n = x1.total();
    let eps = Epsilon::new(1, 1).unwrap();
    let params = PmwConfig::user(0.05, 0.001, 0.02, 100.0, PmwVariant::Pure, eps, n).unwrap();
    let mut supports = Vec::new();
    for x in [&x1, &x2] {
        let v = r.sample(cells, &mut seeded_rng(7)).unwrap();
        let mut budget = Accountant::pure(eps);
        let mut s =
            PmwSession::on_reduced_domain(x, params, 5, eps, &mut budget, &v, seeded_rng(9))
                .unwrap();
        assert_eq!(s.threshold(), 0.02 + v.threshold_shift());
        supports.push(s.hypothesis().support().unwrap().to_vec());
    }
    assert_eq!(supports[0], supports[1]);
    assert_eq!(supports[0], v.cells());
}

/// With ξN = 1, α = 0.99, β = 0.2, |Q| = 2: M = 4(ln 5 + ln 2)/0.9801 = 9.39…, so
/// 10 draws with replacement from N = 16 cells.
fn small_rule() -> DomainReduction {
    DomainReduction::new(1.0 / 16.0, 0.99, 0.2, 2, 0.0).unwrap()
}

#[test]
fn every_cell_is_equally_likely_to_be_in_v() {
    let reps = 20_000u64;
    let mut rng = seeded_rng(11);
    let mut hits = [0u64; 16];
    let mut sizes = [0u64; 11];
    let rule = small_rule();
    assert_eq!(rule.draws(16).unwrap().ceil(), 10.0);
    for _ in 0..reps {
        let v = rule.sample(16, &mut rng).unwrap();
        for &u in v.cells() {
            hits[u] += 1;
        }
        sizes[v.len()] += 1;
    }
    // Each cell lies in V with probability 1 − (15/16)^10 = 0.4755…: a rate check per
    // cell (5σ), and a chi-square test that the hits are spread evenly.
    let p = 1.0 - (15.0f64 / 16.0).powi(10);
    let sd = (reps as f64 * p * (1.0 - p)).sqrt();
    for (u, &h) in hits.iter().enumerate() {
        assert!(
            (h as f64 - reps as f64 * p).abs() < 5.0 * sd,
            "cell {u}: {h} hits, expected {:.0}",
            reps as f64 * p
        );
    }
    let fit = chi_square_gof(&hits, &[1.0 / 16.0; 16]).unwrap();
    assert!(fit.p_value > 1e-4, "hits {hits:?}: p = {}", fit.p_value);
    // |V| follows the occupancy law of 10 draws from 16 cells exactly.
    let mut law = vec![1.0];
    for _ in 0..10 {
        let mut next = vec![0.0; law.len() + 1];
        for (j, &q) in law.iter().enumerate() {
            next[j] += q * j as f64 / 16.0;
            next[j + 1] += q * (16 - j) as f64 / 16.0;
        }
        law = next;
    }
    let fit = chi_square_gof(&sizes, &law).unwrap();
    assert!(fit.p_value > 1e-4, "sizes {sizes:?}: p = {}", fit.p_value);
    assert_eq!(fit.impossible, 0);
}

#[test]
fn full_universe_when_m_reaches_n() {
    // ξN = 4, α = 0.5: M = 16·(ln 20 + ln 10)/0.25 > 64 = N.
    let r = DomainReduction::new(1.0 / 16.0, 0.5, 0.05, 10, 0.3).unwrap();
    let v = r.sample(64, &mut seeded_rng(1)).unwrap();
    assert!(v.is_full() && v.draws() >= 64.0);
    assert_eq!(v.cells(), (0..64).collect::<Vec<_>>());
    assert_eq!(v.threshold_shift(), 0.0, "x itself lives on V = U");
}

/// 18 binary attributes (N = 2^18). The data lives on the quarter of the cells
/// with a0 = 1 and a1 = a2, with counts 800, 1600, 2400 (n ≈ 10^8): ξ-smooth for
/// ξ = 6/N (about).
fn smooth_data(dom: &Domain) -> CountHistogram {
    let a0 = Query::conjunction(dom, &[0]).unwrap();
    let a1 = Query::conjunction(dom, &[1]).unwrap();
    let a2 = Query::conjunction(dom, &[2]).unwrap();
    let w = (0..dom.size())
        .map(|u| {
            if a0.indicator(u) && a1.indicator(u) == a2.indicator(u) {
                ((u % 3) as u64 + 1) * 800
            } else {
                0
            }
        })
        .collect();
    CountHistogram::from_counts(w, MemoryCap::default()).unwrap()
}

fn random_conjunctions(dom: &Domain, count: usize, seed: u64) -> Vec<Query> {
    let mut rng = seeded_rng(seed);
    (0..count)
        .map(|_| {
            let width = 1 + (rng.next_u32() % 3) as usize;
            let mut attrs: Vec<usize> = Vec::new();
            while attrs.len() < width {
                let a = (rng.next_u32() % 6) as usize;
                if !attrs.contains(&a) {
                    attrs.push(a);
                }
            }
            Query::conjunction(dom, &attrs).unwrap()
        })
        .collect()
}

/// `max_f |f(x) − f(x restricted to V)|`: the witness of Lemma 4.6.4.
fn witness_gap(x: &Distribution, v: &[usize], queries: &[Query]) -> f64 {
    let p = x.probabilities();
    let mass: f64 = v.iter().map(|&u| p[u]).sum();
    queries
        .iter()
        .map(|q| {
            let on_v: f64 = v.iter().map(|&u| q.value(u) * p[u]).sum::<f64>() / mass;
            (q.evaluate(p) - on_v).abs()
        })
        .fold(0.0, f64::max)
}

#[test]
fn pmw_on_v_is_accurate_on_smooth_data() {
    let dom = Domain::binary((0..18).map(|i| format!("a{i}"))).unwrap();
    let cells = dom.size();
    let counts = smooth_data(&dom);
    let x = counts.normalized().unwrap();
    let xi = x.probabilities().iter().copied().fold(0.0, f64::max);
    let (alpha, beta, distinct) = (0.05, 0.05, 50);
    let queries = random_conjunctions(&dom, distinct, 3);
    let rule = DomainReduction::new(xi, alpha, beta, distinct, 0.0).unwrap();
    let v = rule.sample(cells, &mut seeded_rng(21)).unwrap();
    assert!(!v.is_full() && v.len() < cells / 3, "|V| = {}", v.len());
    // Lemma 4.6.4: some x* on V answers Q within φ + α = α.
    let gap = witness_gap(&x, v.cells(), &queries);
    assert!(gap <= alpha, "witness gap {gap}");
    // A V biased towards a1 = 1 carries no such witness: the check can fail.
    let a1 = Query::conjunction(&dom, &[1]).unwrap();
    let biased: Vec<usize> = v
        .cells()
        .iter()
        .copied()
        .filter(|&u| a1.indicator(u))
        .collect();
    let biased_gap = witness_gap(&x, &biased, &queries);
    assert!(biased_gap > alpha, "biased gap {biased_gap}");

    // Thm 4.1.4 at n ≈ 10^8: 4 non-adaptive passes over Q.
    let n = counts.total();
    let rounds = 4 * distinct;
    let variant = PmwVariant::Approximate { delta: 1e-6 };
    let eps = Epsilon::new(1, 1).unwrap();
    let params = PmwConfig::theory(eps, beta, n, rounds, v.len(), variant).unwrap();
    let mut budget = Accountant::approximate(eps, 1e-6).unwrap();
    let mut s = PmwSession::on_reduced_domain(
        &counts,
        params,
        rounds,
        eps,
        &mut budget,
        &v,
        seeded_rng(22),
    )
    .unwrap();
    let t_prime = s.threshold();
    assert!((t_prime - (params.threshold() + alpha)).abs() < 1e-12);
    eprintln!(
        "|V| = {} of N = {cells} (M = {:.0}), xi*N = {:.3}, witness gap {gap:.4}, T = {:.4}, T' = {t_prime:.4}",
        v.len(),
        v.draws(),
        xi * cells as f64,
        params.threshold()
    );
    let mut worst: f64 = 0.0;
    for _ in 0..4 {
        for q in &queries {
            let a = s.answer(q).unwrap().value();
            worst = worst.max((a - q.evaluate(x.probabilities())).abs());
        }
    }
    // Lazy answers are within T' of â_t, â_t within T/2 of the truth (w.p. ≥ 1 − β).
    let bound = t_prime + params.threshold() / 2.0;
    assert!(
        worst <= bound,
        "worst error {worst} > T' + T/2 = {bound} (|V| = {}, T = {}, updates {})",
        v.len(),
        params.threshold(),
        s.updates()
    );
    assert!(!s.has_failed());
    eprintln!(
        "worst error {worst:.4} (bound {bound:.4}), {} updates in {rounds} rounds",
        s.updates()
    );
    // The hypothesis lives on V only.
    let h = s.hypothesis();
    assert_eq!(h.support(), Some(v.cells()));
}

#[test]
fn bad_input_is_typed() {
    let ok = |xi, a, b, q, phi| DomainReduction::new(xi, a, b, q, phi);
    for xi in [0.0, -0.1, 1.5, f64::NAN] {
        assert!(matches!(
            ok(xi, 0.1, 0.1, 5, 0.0),
            Err(ReduceError::Smoothness { .. })
        ));
    }
    for a in [0.0, 1.0, -1.0, f64::NAN] {
        let e = ok(0.5, a, 0.1, 5, 0.0).unwrap_err();
        assert!(matches!(e, ReduceError::Alpha(_)) && e.to_string().contains("alpha"));
    }
    for b in [0.0, 1.0, f64::NAN] {
        assert!(matches!(ok(0.5, 0.1, b, 5, 0.0), Err(ReduceError::Beta(_))));
    }
    assert_eq!(ok(0.5, 0.1, 0.1, 0, 0.0), Err(ReduceError::NoQueries));
    for phi in [-0.1, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            ok(0.5, 0.1, 0.1, 5, phi),
            Err(ReduceError::Phi(_))
        ));
    }
    assert_eq!(
        DomainReduction::sublinear(0.5, 0, 0.1, 5, 0.0),
        Err(ReduceError::EmptyDatabase)
    );
    // n = 1 gives α = 1, outside (0, 1).
    assert!(matches!(
        DomainReduction::sublinear(0.5, 1, 0.1, 5, 0.0),
        Err(ReduceError::Alpha(_))
    ));
    let r = ok(0.01, 0.1, 0.1, 5, 0.0).unwrap();
    let mut rng = seeded_rng(1);
    assert_eq!(r.sample(0, &mut rng), Err(ReduceError::EmptyUniverse));
    // ξ < 1/N: no distribution on 50 cells is 0.01-smooth.
    let e = r.sample(50, &mut rng).unwrap_err();
    assert!(e.to_string().contains("[1/N, 1]"), "{e}");
    // A reduced domain for another universe, or a bad shift, is refused by PMW.
    let v = ok(0.01, 0.5, 0.1, 5, 0.0)
        .unwrap()
        .sample(1000, &mut rng)
        .unwrap();
    let x = CountHistogram::from_counts(vec![1; 999], MemoryCap::default()).unwrap();
    let eps = Epsilon::new(1, 1).unwrap();
    let params = PmwConfig::user(0.05, 1.0, 0.02, 100.0, PmwVariant::Pure, eps, 999).unwrap();
    let mut budget = Accountant::pure(eps);
    assert!(matches!(
        PmwSession::on_reduced_domain(&x, params, 5, eps, &mut budget, &v, seeded_rng(2)),
        Err(PmwError::Data(DataError::LengthMismatch { .. }))
    ));
    assert!(budget.ledger().is_empty(), "nothing charged");
    assert!(matches!(
        params.with_threshold_shift(f64::NAN),
        Err(PmwError::InvalidParameter(_))
    ));
}

use super::*;
use crate::accountant::Accountant;
use crate::central::mw::MwState;
use crate::data::{CountHistogram, MemoryCap};
use crate::query::{Query, Workload};
use crate::seeded_rng;

fn eps1() -> Epsilon {
    Epsilon::new(1, 1).unwrap()
}

/// Random counts on `cells` cells with about `n` records in total.
fn random_counts(cells: usize, n: u64, seed: u64) -> CountHistogram {
    use privq_core::rand_core::Rng;
    let mut rng = seeded_rng(seed);
    let w: Vec<u64> = (0..cells)
        .map(|_| u64::from(rng.next_u32() % 1000) + 1)
        .collect();
    let total: u64 = w.iter().sum();
    let scale = (n / total).max(1);
    CountHistogram::from_counts(w.iter().map(|c| c * scale).collect(), MemoryCap::default())
        .unwrap()
}

fn random_queries(cells: usize, k: usize, seed: u64) -> Vec<Query> {
    use privq_core::rand_core::Rng;
    let mut rng = seeded_rng(seed);
    (0..k)
        .map(|_| Query::dense((0..cells).map(|_| f64::from(rng.next_u32() & 1)).collect()).unwrap())
        .collect()
}

#[test]
fn theory_constants_match_eq_4_2_worked_values() {
    let a = PmwConfig::theory(
        eps1(),
        0.05,
        21_574,
        697,
        1 << 16,
        PmwVariant::Approximate { delta: 1e-6 },
    )
    .unwrap();
    assert!((a.eta() - 0.143).abs() < 5e-4, "{}", a.eta());
    // The thesis' σ is 0.150; the corrected privacy condition of the (ε, δ)
    // variant needs σn ≥ 32·L^{1/4}·√ln(2/δ)·√m·(1 + 2⁻⁹)/ε, i.e. σ = 0.2548 here.
    assert!((a.sigma() - 0.2548).abs() < 1e-3, "{}", a.sigma());
    assert!((a.threshold() - 5.71).abs() < 0.01);
    assert!((a.max_updates() - 545.0).abs() < 2.0, "{}", a.max_updates());
    let b = PmwConfig::theory(
        eps1(),
        0.05,
        1_000_000,
        1000,
        1 << 16,
        PmwVariant::Approximate { delta: 1e-6 },
    )
    .unwrap();
    assert!((b.threshold() - 0.854).abs() < 0.002, "{}", b.threshold());
    assert!(
        (b.max_updates() - 24_340.0).abs() < 100.0,
        "{}",
        b.max_updates()
    );
    let p = PmwConfig::theory(eps1(), 0.05, 21_574, 697, 1 << 16, PmwVariant::Pure).unwrap();
    assert!((p.eta() - 0.166).abs() < 5e-4, "{}", p.eta());
    assert!((p.threshold() - 6.63).abs() < 0.02);
    // The sparse-vector comparison scale holds with equality: σn = 10(⌊m⌋+1)/(3ε),
    // below the thesis' 10m/ε (eq. 4.14).
    let c_prime = p.max_updates().floor() + 1.0;
    assert!((p.sigma() * 21_574.0 * 3.0 / (10.0 * c_prime) - 1.0).abs() < 1e-12);
    assert!(p.sigma() * 21_574.0 < 10.0 * p.max_updates());
    assert_eq!(p.cost(), Cost::Pure(eps1()));
    assert_eq!(p.neighbours(), Neighbours::Replace);
}

#[test]
fn bad_input_is_typed() {
    let v = PmwVariant::Approximate { delta: 1e-6 };
    assert!(matches!(
        PmwConfig::theory(eps1(), 0.05, 10, 0, 4, v),
        Err(PmwError::InvalidParameter(_))
    ));
    assert!(matches!(
        PmwConfig::theory(eps1(), 0.05, 0, 10, 4, v),
        Err(PmwError::Data(DataError::EmptyData))
    ));
    assert!(matches!(
        PmwConfig::user(0.1, 0.001, 0.05, 100.0, PmwVariant::Pure, eps1(), 1000),
        Err(PmwError::PrivacyConditionViolated { .. })
    ));
    assert!(PmwConfig::user(0.1, 1.0, 0.05, 100.0, PmwVariant::Pure, eps1(), 1000).is_ok());
    // Pure, m = 1: σn ≥ 20/3 exactly at the edge.
    assert!(
        PmwConfig::user(
            0.1,
            6.67 / 1000.0,
            0.05,
            1.0,
            PmwVariant::Pure,
            eps1(),
            1000
        )
        .is_ok()
    );
    assert!(
        PmwConfig::user(
            0.1,
            6.66 / 1000.0,
            0.05,
            1.0,
            PmwVariant::Pure,
            eps1(),
            1000
        )
        .is_err()
    );
    for m in [0.5, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            PmwConfig::user(0.1, 1.0, 0.05, m, PmwVariant::Pure, eps1(), 1000),
            Err(PmwError::InvalidParameter(_))
        ));
    }
}

/// A user profile with a tiny update budget so that aborts happen.
fn small_budget_params(n: u64, variant: PmwVariant) -> PmwConfig {
    let m = 5.0;
    let sigma = 10.0 * m / n as f64 * 100.0; // generous: both conditions hold
    PmwConfig::user(0.2, sigma, 0.02, m, variant, eps1(), n).unwrap()
}

#[test]
fn update_count_never_exceeds_m_and_failure_is_final() {
    let counts = random_counts(256, 1_000_000, 1);
    let n = counts.total();
    let queries = random_queries(256, 300, 2);
    for variant in [PmwVariant::Pure, PmwVariant::Approximate { delta: 1e-6 }] {
        let params = small_budget_params(n, variant);
        let mut budget = Accountant::approximate(eps1(), 1e-6).unwrap();
        let mut s =
            PmwSession::new(&counts, params, 300, eps1(), &mut budget, seeded_rng(3)).unwrap();
        let mut failed_at = None;
        for (i, q) in queries.iter().enumerate() {
            match s.answer(q) {
                Ok(_) => assert!(failed_at.is_none()),
                Err(PmwError::Failure) => {
                    failed_at.get_or_insert(i);
                }
                Err(e) => panic!("{e}"),
            }
            let kept = s
                .transcript()
                .iter()
                .filter(|e| matches!(e, TranscriptEntry::Update(_)))
                .count();
            assert!(kept as f64 <= params.max_updates());
        }
        assert!(
            failed_at.is_some(),
            "the uniform start is far from x: updates must run out"
        );
        assert_eq!(s.rounds_left(), 0);
        let charges = if variant == PmwVariant::Pure { 3 } else { 1 };
        assert_eq!(budget.ledger().len(), charges);
        assert_eq!(budget.spent_epsilon(), Some(eps1()));
    }
}

#[test]
fn lazy_outputs_are_reproduced_from_the_transcript() {
    let counts = random_counts(128, 10_000_000, 4);
    let n = counts.total();
    let queries = random_queries(128, 200, 5);
    let variants = [PmwVariant::Pure, PmwVariant::Approximate { delta: 1e-6 }];
    for (variant, rule) in variants
        .into_iter()
        .flat_map(|v| [(v, PmwUpdate::Sign), (v, PmwUpdate::Project)])
    {
        let params = PmwConfig::user(0.05, 0.002, 0.01, 2000.0, variant, eps1(), n)
            .unwrap()
            .with_update(rule);
        let mut budget = Accountant::approximate(eps1(), 1e-6).unwrap();
        let mut s =
            PmwSession::new(&counts, params, 200, eps1(), &mut budget, seeded_rng(6)).unwrap();
        let outputs: Vec<f64> = queries
            .iter()
            .map(|q| s.answer(q).unwrap().value())
            .collect();
        let lazy = s
            .transcript()
            .iter()
            .filter(|e| **e == TranscriptEntry::Lazy)
            .count();
        assert!(
            lazy > 20 && s.updates() > 5,
            "lazy {lazy}, updates {}",
            s.updates()
        );
        let start = MwState::uniform(128, MemoryCap::default()).unwrap();
        let replayed = replay(start, &params, &queries, s.transcript());
        assert_eq!(outputs, replayed);
    }
}

#[test]
fn a_projection_step_lands_on_the_released_answer_within_its_cap() {
    let p = PmwConfig::practical(eps1(), 100_000, 0.08).unwrap();
    let mut x = MwState::uniform(8, MemoryCap::default()).unwrap();
    let q = Query::dense(vec![1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]).unwrap();
    // 0.25 → 0.4: ln(0.4·0.75/(0.25·0.6)) = ln 2, under the cap η = 1.
    let step = p.step(0.25, 0.4);
    assert!((step - 2f64.ln()).abs() < 1e-12);
    x.update(&q, step);
    assert!((x.evaluate(&q) - 0.4).abs() < 1e-12);
    // Far targets (and noisy answers outside [0, 1]) are capped at ±η.
    assert_eq!(p.step(0.25, 0.99), 1.0);
    assert_eq!(p.step(0.25, -0.3), -1.0);
    assert_eq!(p.step(0.0, 0.5), 1.0);
    // The sign rule ignores the distance.
    let sign = p.with_update(PmwUpdate::Sign);
    assert_eq!((sign.step(0.25, 0.26), sign.step(0.25, 0.1)), (1.0, -1.0));
}

#[test]
fn deferred_kernel_updates_replay_bit_for_bit() {
    // Parities and conjunctions take the fast path: each update is deferred and
    // fused with the next round's evaluation; the replay must match exactly.
    let counts = random_counts(256, 10_000_000, 11);
    let n = counts.total();
    let dom = crate::data::Domain::binary((0..8).map(|i| format!("a{i}"))).unwrap();
    let queries: Vec<Query> = (0..300)
        .map(|i| {
            let attrs = [i % 8, (i * 3 + 1) % 8];
            if i % 2 == 0 {
                Query::parity(&dom, &attrs).unwrap()
            } else {
                Query::conjunction(&dom, &attrs).unwrap()
            }
        })
        .collect();
    let params = PmwConfig::user(0.05, 0.002, 0.005, 2000.0, PmwVariant::Pure, eps1(), n).unwrap();
    let mut budget = Accountant::pure(eps1());
    let mut s = PmwSession::new(&counts, params, 300, eps1(), &mut budget, seeded_rng(12)).unwrap();
    let outputs: Vec<f64> = queries
        .iter()
        .map(|q| s.answer(q).unwrap().value())
        .collect();
    assert!(s.updates() > 40, "updates {}", s.updates());
    let start = MwState::uniform(256, MemoryCap::default()).unwrap();
    let replayed = replay(start, &params, &queries, s.transcript());
    assert_eq!(outputs, replayed);
    // The flushed hypothesis is the immediate-update one.
    let mut immediate = MwState::uniform(256, MemoryCap::default()).unwrap();
    for (q, e) in queries.iter().zip(s.transcript()) {
        if let TranscriptEntry::Update(noisy) = *e {
            let here = immediate.evaluate(q);
            let step = if here > noisy {
                -params.eta()
            } else {
                params.eta()
            };
            immediate.update_known(q, step, here);
        }
    }
    assert_eq!(s.hypothesis().probabilities(), immediate.probabilities());
}

#[test]
fn pure_variant_draws_the_threshold_once_and_never_shows_it() {
    let counts = random_counts(64, 1_000_000, 7);
    let n = counts.total();
    let queries = random_queries(64, 100, 8);
    let params = PmwConfig::user(0.05, 0.01, 0.02, 500.0, PmwVariant::Pure, eps1(), n).unwrap();
    let mut budget = Accountant::pure(eps1());
    let mut s = PmwSession::new(&counts, params, 100, eps1(), &mut budget, seeded_rng(9)).unwrap();
    let secret = s.compare_threshold;
    assert_ne!(secret.to_f64(), params.threshold(), "T̂ carries noise");
    for q in &queries {
        s.answer(q).unwrap();
        assert_eq!(s.compare_threshold, secret);
    }
    assert_eq!(
        s.threshold(),
        params.threshold(),
        "the getter is the public T"
    );
    assert_eq!(s.threshold_draws(), 1);
    let shown = format!("{s:?}");
    assert!(!shown.contains(&format!("{:?}", secret)), "{shown}");
    assert!(!shown.contains(&secret.to_f64().to_string()), "{shown}");
    // A second session on the same budget is refused.
    assert!(matches!(
        PmwSession::new(&counts, params, 100, eps1(), &mut budget, seeded_rng(9)),
        Err(PmwError::Budget(_))
    ));
}

/// Counts RNG draws.
struct CountingRng {
    inner: rand_chacha::ChaCha12Rng,
    draws: std::rc::Rc<std::cell::Cell<u64>>,
}

impl privq_core::rand_core::TryRng for CountingRng {
    type Error = core::convert::Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        self.draws.set(self.draws.get() + 1);
        self.inner.try_next_u32()
    }
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        self.draws.set(self.draws.get() + 1);
        self.inner.try_next_u64()
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        self.draws.set(self.draws.get() + 1);
        self.inner.try_fill_bytes(dst)
    }
}

impl privq_core::rand_core::TryCryptoRng for CountingRng {}

fn counting_rng(seed: u64) -> (CountingRng, std::rc::Rc<std::cell::Cell<u64>>) {
    let draws = std::rc::Rc::new(std::cell::Cell::new(0));
    (
        CountingRng {
            inner: seeded_rng(seed),
            draws: draws.clone(),
        },
        draws,
    )
}

#[test]
fn budget_split_is_exact_and_a_refused_charge_samples_nothing() {
    for (num, den) in [(1u64, 1u64), (1, 3), (7, 10), (2, 7)] {
        let eps = Epsilon::new(num, den).unwrap();
        let s = PureSplit::of(eps).unwrap();
        let total = s
            .threshold
            .checked_add(s.comparisons)
            .and_then(|t| t.checked_add(s.answers))
            .unwrap();
        assert_eq!(total, eps, "ε = {eps}");
        assert_eq!(s.threshold, eps.checked_div_int(10).unwrap());
    }
    let counts = random_counts(16, 100_000, 1);
    let n = counts.total();
    let eps = Epsilon::new(1, 2).unwrap();
    let params = PmwConfig::user(0.1, 0.01, 0.05, 3.0, PmwVariant::Pure, eps, n).unwrap();
    // The ledger holds the three exact parts and sums to ε.
    let mut budget = Accountant::pure(eps);
    let (rng, draws) = counting_rng(1);
    let s = PmwSession::new(&counts, params, 10, eps, &mut budget, rng).unwrap();
    let parts: Vec<Epsilon> = budget
        .ledger()
        .iter()
        .filter_map(|c| c.cost.epsilon())
        .collect();
    assert_eq!(
        parts,
        vec![
            Epsilon::new(1, 20).unwrap(),
            Epsilon::new(3, 10).unwrap(),
            Epsilon::new(3, 20).unwrap()
        ]
    );
    assert_eq!(budget.spent_epsilon(), Some(eps));
    assert_eq!(budget.remaining(), None);
    assert!(draws.get() > 0, "T̂ is drawn after the charge");
    assert_eq!(s.receipts().len(), 3);
    assert!(budget.ledger_text().contains("ε₁ = ε/10"));
    // Budget too small: refused, nothing recorded, nothing sampled.
    let mut small = Accountant::pure(Epsilon::new(49, 100).unwrap());
    let (rng, draws) = counting_rng(2);
    let err = PmwSession::new(&counts, params, 10, eps, &mut small, rng).unwrap_err();
    assert!(
        matches!(
            err,
            PmwError::Budget(AccountantError::BudgetExceeded { .. })
        ),
        "{err}"
    );
    assert_eq!(draws.get(), 0, "nothing sampled");
    assert!(small.ledger().is_empty() && small.spent_epsilon().is_none());
    // Approximate: δ over budget, likewise.
    let v = PmwVariant::Approximate { delta: 1e-6 };
    let params = PmwConfig::user(0.1, 1.0, 0.05, 3.0, v, eps, n).unwrap();
    let mut no_delta = Accountant::pure(Epsilon::new(1, 1).unwrap());
    let (rng, draws) = counting_rng(3);
    let err = PmwSession::new(&counts, params, 10, eps, &mut no_delta, rng).unwrap_err();
    assert!(
        matches!(err, PmwError::Budget(AccountantError::DeltaExceeded)),
        "{err}"
    );
    assert_eq!(draws.get(), 0);
    assert!(no_delta.ledger().is_empty());
}

#[test]
fn params_checked_for_another_epsilon_or_n_are_refused() {
    let counts = random_counts(16, 100_000, 1);
    let n = counts.total();
    let half = Epsilon::new(1, 2).unwrap();
    for variant in [PmwVariant::Pure, PmwVariant::Approximate { delta: 1e-6 }] {
        let params = PmwConfig::user(0.1, 1.0, 0.05, 3.0, variant, half, n).unwrap();
        let mut budget = Accountant::approximate(eps1(), 1e-6).unwrap();
        let (rng, draws) = counting_rng(1);
        // Checked for ε = 1/2, charged ε = 1.
        let err = PmwSession::new(&counts, params, 10, eps1(), &mut budget, rng).unwrap_err();
        assert!(
            matches!(
                err,
                PmwError::ParamsMismatch {
                    what: "epsilon",
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("epsilon = 1/2"), "{err}");
        // Checked for another n.
        let other = PmwConfig::user(0.1, 1.0, 0.05, 3.0, variant, half, n + 1).unwrap();
        let err =
            PmwSession::new(&counts, other, 10, half, &mut budget, seeded_rng(1)).unwrap_err();
        assert!(
            matches!(err, PmwError::ParamsMismatch { what: "n", .. }),
            "{err}"
        );
        assert_eq!(draws.get(), 0);
        assert!(budget.ledger().is_empty(), "nothing charged");
        // Smaller ε charged than checked is refused too (the noise was sized for ε).
        let err = PmwSession::new(
            &counts,
            params,
            10,
            Epsilon::new(1, 4).unwrap(),
            &mut budget,
            seeded_rng(1),
        )
        .unwrap_err();
        assert!(matches!(err, PmwError::ParamsMismatch { .. }));
    }
}

#[test]
fn abort_draws_no_fresh_answer_and_applies_no_update() {
    // m = 1: the second update round aborts; the hypothesis keeps one step only.
    let counts = CountHistogram::from_counts(vec![300, 0], MemoryCap::default()).unwrap();
    let params = PmwConfig::user(0.5, 0.05, 0.01, 1.0, PmwVariant::Pure, eps1(), 300).unwrap();
    let mut budget = Accountant::pure(eps1());
    let mut s = PmwSession::new(&counts, params, 5, eps1(), &mut budget, seeded_rng(4)).unwrap();
    let q = Query::dense(vec![1.0, 0.0]).unwrap();
    assert!(matches!(s.answer(&q).unwrap(), Answer::Update(_)));
    let after_one = s.hypothesis().probabilities().to_vec();
    assert!(matches!(s.answer(&q), Err(PmwError::Failure)));
    assert_eq!(s.hypothesis().probabilities(), &after_one[..]);
    assert_eq!(s.transcript().len(), 1);
}

#[test]
fn theory_profile_is_accurate_at_large_n() {
    // Lemma 4.3.6: every answer within 2T with probability ≥ 1 − β.
    let cells = 1 << 10;
    let k = 200;
    let beta = 0.05;
    let mut bad_runs = 0;
    for run in 0..20 {
        let counts = random_counts(cells, 100_000_000, 100 + run);
        let n = counts.total();
        let x = counts.normalized().unwrap();
        let queries = random_queries(cells, k, 200 + run);
        let v = PmwVariant::Approximate { delta: 1e-6 };
        let params = PmwConfig::theory(eps1(), beta, n, k, cells, v).unwrap();
        let mut budget = Accountant::approximate(eps1(), 1e-6).unwrap();
        let mut s =
            PmwSession::new(&counts, params, k, eps1(), &mut budget, seeded_rng(run)).unwrap();
        let worst = queries
            .iter()
            .map(|q| (s.answer(q).unwrap().value() - q.evaluate(x.probabilities())).abs())
            .fold(0.0, f64::max);
        bad_runs += usize::from(worst > 2.0 * params.threshold());
    }
    assert!(
        bad_runs <= 3,
        "{bad_runs} of 20 runs had an answer off by more than 2T"
    );
}

#[test]
fn synthetic_mode_stops() {
    let counts = CountHistogram::from_counts(
        (0..64).map(|u| (u * 7 % 13) as u64 * 1_000_000).collect(),
        MemoryCap::default(),
    )
    .unwrap();
    let n = counts.total();
    let x = counts.normalized().unwrap();
    let dom = crate::data::Domain::binary((0..6).map(|i| format!("a{i}"))).unwrap();
    let w = Workload::parities(&dom, 2).unwrap();
    let params = PmwConfig::user(0.1, 0.001, 0.02, 200.0, PmwVariant::Pure, eps1(), n).unwrap();
    let mut budget = Accountant::pure(eps1());
    let out = synthetic(&counts, &w, params, eps1(), &mut budget, seeded_rng(10)).unwrap();
    assert!(out.passes <= params.max_updates().ceil() as usize + 1);
    assert!(out.updates as f64 <= params.max_updates());
    let err = w
        .queries()
        .iter()
        .map(|q| (q.evaluate(x.probabilities()) - out.state.evaluate(q)).abs())
        .fold(0.0, f64::max);
    assert!(err < 0.1, "max error {err}");
    let p = synthetic_rounds(eps1(), 0.05, 21_574, 137, 1 << 16, PmwVariant::Pure).unwrap();
    assert!(p.max_updates() > 1.0);
}

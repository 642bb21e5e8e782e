use super::*;
use crate::data::{Domain, kl};
use crate::query::Query;
use crate::seeded_rng;

#[test]
fn exact_fit_recovers_the_log_linear_model_of_the_workload() {
    // A product distribution on 3 bits is matched exactly by its 1-way
    // marginals; a 3-way interaction needs the degree-3 parities.
    let dom = Domain::binary(["a", "b", "c"]).unwrap();
    let (p, q, r) = (0.2, 0.7, 0.4);
    let product: Vec<u64> = (0..8u64)
        .map(|u| {
            let f = |bit: u64, pr: f64| if u >> bit & 1 == 1 { pr } else { 1.0 - pr };
            (10_000.0 * f(2, p) * f(1, q) * f(0, r)).round() as u64
        })
        .collect();
    let h = CountHistogram::from_counts(product, MemoryCap::default()).unwrap();
    let truth = h.normalized().unwrap();
    let fit = BaselineFitOptions::default();
    let one = exact_fit(&h, &Workload::parities(&dom, 1).unwrap(), fit).unwrap();
    assert!(kl(truth.probabilities(), &one) < 1e-9);

    let parity: Vec<u64> = (0..8u64)
        .map(|u| if u.count_ones() % 2 == 0 { 3 } else { 1 })
        .collect();
    let h = CountHistogram::from_counts(parity, MemoryCap::default()).unwrap();
    let truth = h.normalized().unwrap();
    let two = exact_fit(&h, &Workload::parities(&dom, 2).unwrap(), fit).unwrap();
    let three = exact_fit(&h, &Workload::parities(&dom, 3).unwrap(), fit).unwrap();
    // All 1- and 2-way marginals are uniform, so the degree-2 fit is uniform.
    let uniform_kl = kl(truth.probabilities(), &[0.125; 8]);
    assert!((kl(truth.probabilities(), &two) - uniform_kl).abs() < 1e-9);
    assert!(uniform_kl > 0.1);
    assert!(kl(truth.probabilities(), &three) < 1e-9);
    let empty = CountHistogram::from_counts(vec![0; 8], MemoryCap::default()).unwrap();
    assert!(exact_fit(&empty, &Workload::parities(&dom, 1).unwrap(), fit).is_err());
}

/// A generous accountant for tests that are not about the budget.
fn acct() -> Accountant {
    Accountant::pure(Epsilon::new(1000, 1).unwrap())
}

fn toy() -> (CountHistogram, Workload) {
    let dom = Domain::binary((0..6).map(|i| format!("a{i}"))).unwrap();
    let counts: Vec<u64> = (0..64u64)
        .map(|u| if u % 5 == 0 { 300 } else { u % 3 * 10 })
        .collect();
    let h = CountHistogram::from_counts(counts, MemoryCap::default()).unwrap();
    (h, Workload::parities(&dom, 3).unwrap())
}

#[test]
fn a5_accountant_total_never_exceeds_target() {
    let (h, w) = toy();
    let eps = Epsilon::new(1, 2).unwrap();
    for config in [
        MwemConfig::unoptimized(eps, 7).unwrap(),
        MwemConfig::optimized(eps, 7).unwrap(),
    ] {
        let out = mwem(&h, &w, &config, &mut acct(), &mut seeded_rng(1)).unwrap();
        let spent = out.ledger.spent_epsilon().unwrap();
        assert!(spent <= eps, "{spent}");
        if !config.improvements.adaptive {
            assert_eq!(spent, eps);
            assert_eq!(out.rounds, 7);
            assert_eq!(out.ledger.ledger().len(), 14);
        }
    }
    // The literal profile's true cost is 1.5ε, and it is recorded as such.
    let literal = MwemConfig {
        profile: EmProfile::ThesisLiteral,
        ..MwemConfig::unoptimized(eps, 4).unwrap()
    };
    let out = mwem(&h, &w, &literal, &mut acct(), &mut seeded_rng(1)).unwrap();
    assert_eq!(
        out.ledger.spent_epsilon(),
        Some(Epsilon::new(3, 4).unwrap())
    );
    let b = barak_baseline(
        &h,
        &w,
        eps,
        BaselineFitOptions::default(),
        &mut acct(),
        &mut seeded_rng(2),
    )
    .unwrap();
    assert_eq!(b.ledger.spent_epsilon(), Some(eps));
}

#[test]
fn noisy_init_is_calibrated_to_replace_one_neighbours() {
    // Replacing one record moves it between two cells: the histogram changes by
    // 2 in ℓ1, so ε_init needs noise of scale 2/ε_init (a review found 1/ε_init,
    // i.e. the initialisation spent 2·ε_init while charging ε_init).
    let eps_init = Epsilon::new(1, 10).unwrap();
    assert_eq!(init_noise(eps_init).unwrap().scale(), 20.0);
    // Exact privacy-loss check of the released histogram on the worst pair:
    // counts (c, c') vs (c − 1, c' + 1). The discrete Laplace pmf ratio over the
    // two cells is at most exp(ε_init) exactly when the scale is 2/ε_init.
    let t = init_noise(eps_init).unwrap().scale();
    let ln_pmf = |k: i64| -(k.abs() as f64) / t;
    let worst = (-40i64..40)
        .flat_map(|a| (-40i64..40).map(move |b| (a, b)))
        .map(|(a, b)| (ln_pmf(a) + ln_pmf(b)) - (ln_pmf(a + 1) + ln_pmf(b - 1)))
        .fold(f64::MIN, f64::max);
    assert!(worst <= eps_init.to_f64() + 1e-12, "{worst}");
}

#[test]
fn the_run_is_charged_to_the_callers_accountant_before_sampling() {
    let (h, w) = toy();
    let eps = Epsilon::new(1, 2).unwrap();
    let config = MwemConfig::optimized(eps, 5).unwrap();
    let mut small = Accountant::pure(Epsilon::new(1, 4).unwrap());
    assert!(matches!(
        mwem(&h, &w, &config, &mut small, &mut seeded_rng(1)),
        Err(MwemError::Budget(_))
    ));
    assert!(small.ledger().is_empty(), "a refused run charges nothing");
    let mut enough = Accountant::pure(Epsilon::new(1, 1).unwrap());
    mwem(&h, &w, &config, &mut enough, &mut seeded_rng(1)).unwrap();
    assert_eq!(enough.spent_epsilon(), Some(eps));
    assert_eq!(enough.ledger().len(), 1);
}

#[test]
fn a7_same_seed_same_bits() {
    let (h, w) = toy();
    let config = MwemConfig::optimized(Epsilon::new(1, 1).unwrap(), 10).unwrap();
    let a = mwem(&h, &w, &config, &mut acct(), &mut seeded_rng(42)).unwrap();
    let b = mwem(&h, &w, &config, &mut acct(), &mut seeded_rng(42)).unwrap();
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&a.distribution), bits(&b.distribution));
    assert_eq!(a.measurements, b.measurements);
    let c = mwem(&h, &w, &config, &mut acct(), &mut seeded_rng(43)).unwrap();
    assert_ne!(bits(&a.distribution), bits(&c.distribution));
}

#[test]
fn a6_error_below_the_corrected_bound() {
    // Random distribution on N = 2^10, k = 200 random {0,1} queries, large n.
    use privq_core::rand_core::Rng;
    let cells = 1 << 10;
    let n = 1_000_000_000u64;
    let rounds = 30;
    let eps = Epsilon::new(1, 1).unwrap();
    let runs = 10;
    let mut total_err = 0.0;
    let mut bound = 0.0;
    for run in 0..runs {
        let mut rng = seeded_rng(1000 + run);
        let w: Vec<u64> = (0..cells)
            .map(|_| u64::from(rng.next_u32() % 1000))
            .collect();
        let s: u64 = w.iter().sum();
        let counts: Vec<u64> = w.iter().map(|&v| v * (n / s)).collect();
        let h = CountHistogram::from_counts(counts, MemoryCap::default()).unwrap();
        let queries: Vec<Query> = (0..200)
            .map(|_| {
                Query::dense((0..cells).map(|_| f64::from(rng.next_u32() & 1)).collect()).unwrap()
            })
            .collect();
        let wl = Workload::new(queries, cells).unwrap();
        let config = MwemConfig::unoptimized(eps, rounds).unwrap();
        let out = mwem(&h, &wl, &config, &mut acct(), &mut rng).unwrap();
        let x = h.normalized().unwrap();
        let truth = wl.answers(x.probabilities());
        let got = wl.answers(&out.distribution);
        let err = truth
            .iter()
            .zip(&got)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        total_err += err;
        bound = error_bound(
            cells as f64,
            200.0,
            rounds as f64,
            1.0 / rounds as f64,
            h.total() as f64,
        );
    }
    let mean = total_err / runs as f64;
    assert!(mean <= bound, "mean error {mean} above the bound {bound}");
}

#[test]
fn worked_values_of_thm_5_2_11() {
    for (n, d, k, eps, t, a) in [
        (1841.0, 6, 41.0, 1.0, 63.5, 0.41),
        (665.0, 8, 92.0, 1.0, 31.1, 0.67),
        (70.0, 6, 41.0, 1.0, 7.2, 1.21),
        (21574.0, 16, 696.0, 1.0, 311.0, 0.30),
        (21574.0, 16, 136.0, 0.1, 81.0, 0.59),
    ] {
        let (tt, aa) = optimal_rounds(eps, n, f64::from(1u32 << d), k);
        assert!((tt - t).abs() / t < 0.01, "{tt} vs {t}");
        assert!((aa - a).abs() < 0.01, "{aa} vs {a}");
    }
}

#[test]
fn improvements_help_and_baseline_runs() {
    let (h, w) = toy();
    let x = h.normalized().unwrap();
    let eps = Epsilon::new(1, 1).unwrap();
    let mean_kl = |config: &MwemConfig| {
        (0..10)
            .map(|s| {
                kl(
                    x.probabilities(),
                    &mwem(&h, &w, config, &mut acct(), &mut seeded_rng(s))
                        .unwrap()
                        .distribution,
                )
            })
            .sum::<f64>()
            / 10.0
    };
    let plain = mean_kl(&MwemConfig::unoptimized(eps, 10).unwrap());
    let opt = mean_kl(&MwemConfig::optimized(eps, 10).unwrap());
    assert!(opt < plain, "optimized {opt} vs unoptimized {plain}");
}

#[test]
fn bad_input_is_typed() {
    let (h, w) = toy();
    let eps = Epsilon::new(1, 1).unwrap();
    assert!(matches!(
        MwemConfig::unoptimized(eps, 0),
        Err(MwemError::InvalidParameter(_))
    ));
    let empty = CountHistogram::from_counts(vec![0; 64], MemoryCap::default()).unwrap();
    let config = MwemConfig::unoptimized(eps, 3).unwrap();
    assert!(matches!(
        mwem(&empty, &w, &config, &mut acct(), &mut seeded_rng(1)),
        Err(MwemError::Data(DataError::EmptyData))
    ));
    let other = CountHistogram::from_counts(vec![1; 32], MemoryCap::default()).unwrap();
    assert!(matches!(
        mwem(&other, &w, &config, &mut acct(), &mut seeded_rng(1)),
        Err(MwemError::Data(_))
    ));
    let bad = MwemConfig {
        rounds: 0,
        ..config
    };
    assert!(mwem(&h, &w, &bad, &mut acct(), &mut seeded_rng(1)).is_err());
    assert!("0".parse::<Epsilon>().is_err() && "-1".parse::<Epsilon>().is_err());
}

#[test]
fn a_control_hook_stops_the_run_and_the_charge_stays() {
    let (h, w) = toy();
    let eps = Epsilon::new(1, 2).unwrap();
    let config = MwemConfig::unoptimized(eps, 5).unwrap();
    let mut accountant = Accountant::pure(Epsilon::new(1, 1).unwrap());
    let mut seen = Vec::new();
    let out = mwem_controlled(
        &h,
        &w,
        &config,
        &mut accountant,
        &mut seeded_rng(3),
        &mut |r, t| {
            seen.push((r, t));
            if r == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        },
    );
    assert!(matches!(out, Err(MwemError::Cancelled { round: 3 })));
    assert_eq!(seen, [(1, 5), (2, 5), (3, 5)]);
    assert_eq!(
        accountant.spent_epsilon(),
        Some(eps),
        "the charge stays spent"
    );
    // A hook that never breaks is the progress-only run, bit for bit.
    let a = mwem(&h, &w, &config, &mut acct(), &mut seeded_rng(4)).unwrap();
    let b = mwem_controlled(
        &h,
        &w,
        &config,
        &mut acct(),
        &mut seeded_rng(4),
        &mut |_, _| ControlFlow::Continue(()),
    )
    .unwrap();
    assert_eq!(a.measurements, b.measurements);
}

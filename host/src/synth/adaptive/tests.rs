use super::*;

#[test]
fn candidates_are_the_downward_closure_with_aims_weights() {
    let d = Domain::binary(["a", "b", "c", "d"]).unwrap();
    let w = MarginalWorkload::all_k_way(&d, 3).unwrap();
    assert_eq!(w.cliques().len(), 4);
    let c = w.candidates();
    assert_eq!(c.len(), 4 + 6 + 4);
    // {0}: in 3 of the 4 triples, once each.
    let weight = |attrs: &[usize]| {
        let want = Clique::new(attrs.iter().copied()).unwrap();
        c.iter().find(|(r, _)| *r == want).unwrap().1
    };
    assert_eq!(weight(&[0]), 3);
    // {0,1}: |r ∩ s| = 2 for the 2 triples holding both, 1 for the 2 others.
    assert_eq!(weight(&[0, 1]), 6);
    assert_eq!(weight(&[0, 1, 2]), 3 + 2 + 2 + 2);
    assert!(MarginalWorkload::new(&d, vec![(vec![4], 1)]).is_err());
    assert!(MarginalWorkload::new(&d, vec![(vec![1], 0)]).is_err());
    assert!(MarginalWorkload::all_k_way(&d, 5).is_err());
}

/// Neighbouring true counts move a score by at most w·Δ₁ plus its one rounding,
/// on marginals of a million cells with counts near 2¹⁹ (error sums near 2³⁹,
/// below the clamp), where a plain `f64` sum drifts by more than the slack.
#[test]
fn scores_of_neighbours_differ_by_at_most_the_sensitivity() {
    let mut rng = crate::seeded_rng(9);
    let cells = 1 << 20;
    let y: Vec<u64> = (0..cells)
        .map(|_| (rng.next_u64() >> 45) | (1 << 18))
        .collect();
    let est: Vec<f64> = (0..cells)
        .map(|_| (rng.next_u64() >> 11) as f64 / 2f64.powi(34))
        .collect();
    for (w, noise) in [(1u64, 0.0), (7, 1e9), (300, 3.3e11)] {
        let base = score(w, &y, &est, noise);
        assert!(base.abs() < w as f64 * 2f64.powi(40), "clamped: {base}");
        for cell in [0, cells / 3, cells - 1] {
            for delta in [1i64, -1] {
                let mut z = y.clone();
                z[cell] = z[cell].wrapping_add_signed(delta);
                let moved = (score(w, &z, &est, noise) - base).abs();
                assert!(
                    moved <= w as f64 * (1.0 + SCORE_SLACK),
                    "w {w}: moved {moved}"
                );
            }
        }
    }
    // At the clamp and with the largest weight, where the final rounding is
    // largest: a replace move (two cells) still stays within the sensitivity.
    let near = (1u64 << 40) - 3;
    let (y, est) = (vec![near, 0, 5], vec![0.0, 0.25, 0.0]);
    for w in [u64::MAX, u64::MAX / 3, 1 << 40] {
        let base = score(w, &y, &est, 0.0);
        let z = vec![near + 1, 0, 4];
        let moved = (score(w, &z, &est, 0.0) - base).abs();
        assert!(
            moved <= w as f64 * (2.0 + SCORE_SLACK),
            "w {w}: moved {moved}"
        );
    }
    // Exact on small, hand-checkable values: |3 − 1.5| + |0 − 2| − 1 = 2.5.
    assert_eq!(score(2, &[3, 0], &[1.5, 2.0], 1.0), 5.0);
    assert_eq!(score(1, &[0], &[f64::NAN], 0.0), 0.0);
}

#[test]
fn budget_arithmetic_rounds_down_and_fits() {
    let rho = Rho::new(1, 3).unwrap();
    let r = rho_scaled(rho, 9, 10).unwrap();
    assert!(r.to_f64() <= 0.3 && r.to_f64() > 0.3 - 1e-16);
    let huge = Rho::new(u64::MAX - 2, u64::MAX - 1).unwrap();
    let s = rho_scaled(huge, 9, 1000).unwrap();
    assert!(s.to_f64() <= huge.to_f64() * 0.009 && s.to_f64() > huge.to_f64() * 0.00899);
    assert!(s.den().is_power_of_two());
    let big = rho_scaled(Rho::new(1 << 40, 3).unwrap(), 1, 1).unwrap();
    assert!(big.to_f64() <= (1u64 << 40) as f64 / 3.0 && big.to_f64() > 3.66e11);
    assert!(rho_scaled(Rho::new(u64::MAX, 1).unwrap(), 1, 1).is_err());
    for rho in [Rho::new(1, 8).unwrap(), Rho::new(7, 1024).unwrap(), s] {
        let e = selection_epsilon(rho).unwrap();
        assert!(Rho::from_bounded_range(e).unwrap() <= rho);
        let e2 = e.to_f64() + 2f64.powi(-23);
        assert!(e2 * e2 / 8.0 > rho.to_f64());
        let last = Step::last(rho).unwrap();
        assert!(last.cost().unwrap() <= rho);
    }
    assert!(selection_epsilon(Rho::new(1, u64::MAX).unwrap()).is_err());
}

/// A stand-in estimator: the product of the measured one-way marginals.
struct Independent {
    sizes: Vec<usize>,
}

impl MarginalEstimator for Independent {
    type Model = (Vec<Vec<f64>>, f64);
    fn fit(&self, m: &[Measurement], _: Option<&Self::Model>) -> Result<Self::Model, SynthError> {
        let mut ways = vec![Vec::new(); self.sizes.len()];
        let mut total = 0.0;
        for x in m.iter().filter(|x| x.clique.len() == 1) {
            let v: Vec<f64> = x.values.iter().map(|&v| v.max(0.0) + 1e-9).collect();
            let s: f64 = v.iter().sum();
            // The first attribute's total (a wide one's clamped noise inflates it).
            if total == 0.0 {
                total = s;
            }
            ways[x.clique.attributes()[0]] = v.into_iter().map(|v| v / s).collect();
        }
        Ok((ways, total))
    }
    fn marginal(&self, m: &Self::Model, c: &Clique) -> Result<Vec<f64>, SynthError> {
        let mut out = vec![m.1];
        for &a in c.attributes() {
            out = out
                .iter()
                .flat_map(|&p| m.0[a].iter().map(move |&q| p * q))
                .collect();
        }
        Ok(out)
    }
    fn total(&self, m: &Self::Model) -> f64 {
        m.1
    }
    fn exact_total(&self) -> bool {
        false
    }
    fn covers(&self, _: &Self::Model, c: &Clique) -> bool {
        c.len() == 1
    }
    fn model_cells(&self, _: &Self::Model, added: &Clique) -> Result<u128, SynthError> {
        let one_way: u128 = self.sizes.iter().map(|&s| s as u128).sum();
        Ok(one_way + added.cells_u128(&self.sizes))
    }
}

fn small() -> (Domain, Records) {
    let d = Domain::from_json(r#"{"a": 3, "b": 2, "c": 2, "d": 4}"#).unwrap();
    let n = 400;
    let cols = vec![
        (0..n).map(|i| (i % 3) as u32).collect(),
        (0..n).map(|i| (i % 3 == 0) as u32).collect(),
        (0..n).map(|i| (i % 5 == 0) as u32).collect(),
        (0..n).map(|i| (i * 7 % 4) as u32).collect(),
    ];
    let r = Records::from_columns(cols, &d).unwrap();
    (d, r)
}

#[test]
fn spends_exactly_its_budget_in_at_most_t_rounds() {
    let (d, r) = small();
    let w = MarginalWorkload::all_k_way(&d, 2).unwrap();
    let est = Independent {
        sizes: vec![3, 2, 2, 4],
    };
    for neighbours in [Neighbours::AddRemove, Neighbours::Replace] {
        let mut acct = Accountant::zcdp(Rho::new(1, 2).unwrap(), 1e-9).unwrap();
        let config = AdaptiveConfig::new(neighbours);
        let mut seen = 0;
        let out = adaptive_marginals(
            &r,
            &d,
            &w,
            &config,
            &est,
            &mut acct,
            &mut crate::seeded_rng(5),
            &mut |_| seen += 1,
        )
        .unwrap();
        assert_eq!(seen, out.rounds.len());
        assert!(!out.rounds.is_empty() && out.rounds.len() <= 16 * 4 - 4);
        assert_eq!(out.measurements.len(), 4 + out.rounds.len());
        let spent = acct.spent_rho().unwrap().to_f64();
        assert!(spent <= 0.5 && spent > 0.5 * 0.999, "spent {spent}");
        // The ledger holds exactly the charges: 4 one-way + 2 per round.
        assert_eq!(acct.ledger().len(), 4 + 2 * out.rounds.len());
        // Annealing only ever lowers σ: after an annealed round the next one's σ² is
        // half of it (ρ doubled), otherwise the same — except the last round's,
        // which takes what is left.
        let k = out.rounds.len();
        assert!(out.rounds[..k - 2].iter().any(|r| r.annealed));
        for (i, pair) in out.rounds.windows(2).enumerate() {
            assert!(pair[1].sigma <= pair[0].sigma * (1.0 + 1e-12));
            if i + 2 < k {
                let ratio = (pair[1].sigma / pair[0].sigma).powi(2);
                let want = if pair[0].annealed { 0.5 } else { 1.0 };
                assert!((ratio - want).abs() < 1e-9, "round {}: σ² ×{ratio}", i + 2);
            }
        }
    }
}

/// Annealing doubles both halves of a round's ρ: the measurement's exactly, the
/// selection's up to its ε's 2⁻²⁴ grid (rounded down: never more than double, and
/// ε never falls).
#[test]
fn annealing_doubles_a_rounds_rho() {
    for (budget, d) in [((1, 2), 4), ((1, 100_000), 16), ((3, 1), 15)] {
        let schedule = Schedule::new(Rho::new(budget.0, budget.1).unwrap(), None, d).unwrap();
        let mut step = schedule.step;
        for _ in 0..20 {
            let next = step.annealed().unwrap();
            assert_eq!(next.measure.to_f64(), 2.0 * step.measure.to_f64());
            let (before, after) = (
                Rho::from_bounded_range(step.select).unwrap().to_f64(),
                Rho::from_bounded_range(next.select).unwrap().to_f64(),
            );
            assert!(after <= 2.0 * before);
            // The largest ε on the 2⁻²⁴ grid at most √2 times the last.
            let (e0, e1) = (step.select.to_f64(), next.select.to_f64());
            assert!(e1 <= 2f64.sqrt() * e0 * (1.0 + 1e-12));
            assert!(e1 + 2f64.powi(-24) > 2f64.sqrt() * e0 * (1.0 - 1e-12));
            assert!(next.select >= step.select);
            step = next;
        }
    }
}

/// Three attributes of 1 024 values each, all kept by the compression: the 3-way
/// candidate has 2³⁰ fine cells, far over the model cap, so no coarsening map is
/// built for it (one would take 4 GiB; a clique over the cap is never offered).
#[test]
fn no_coarsening_map_is_built_for_a_clique_over_the_model_cap() {
    let d = Domain::from_json(r#"{"a": 1024, "b": 1024, "c": 1024}"#).unwrap();
    let n = 65_536usize;
    let cols: Vec<Vec<u32>> = (0..3u32)
        .map(|k| (0..n).map(|i| ((i as u32) * (2 * k + 1)) % 1024).collect())
        .collect();
    let r = Records::from_columns(cols, &d).unwrap();
    let w = MarginalWorkload::all_k_way(&d, 3).unwrap();
    let est = PgmEstimator::new(&d, Neighbours::AddRemove, 0);
    let mut acct = Accountant::zcdp(Rho::new(1, 1).unwrap(), 1e-9).unwrap();
    let config = AdaptiveConfig {
        rounds: Some(8),
        ..AdaptiveConfig::new(Neighbours::AddRemove)
    };
    let out = adaptive_marginals(
        &r,
        &d,
        &w,
        &config,
        &est,
        &mut acct,
        &mut crate::seeded_rng(3),
        &mut |_| {},
    )
    .unwrap();
    assert!(out.rounds.iter().all(|r| r.clique.len() < 3));
    // The decision itself: no map over the cap, a map within it.
    let sizes = [512, 512, 512];
    let maps = vec![Some((0..512u32).map(|v| v / 16).collect::<Vec<u32>>()); 3];
    let cap = AdaptiveConfig::new(Neighbours::AddRemove).max_model_cells;
    let three = Clique::new([0, 1, 2]).unwrap();
    assert!(candidate_groups(&three, &sizes, &maps, cap).is_none());
    let two = Clique::new([0, 1]).unwrap();
    let (g, n) = candidate_groups(&two, &sizes, &maps, cap).unwrap();
    assert_eq!((g.len(), n), (1 << 18, 1024));
}

/// Accuracy on a small correlated table, with the junction-tree estimator: at a
/// large budget every 2-way marginal of the model is close to the data's, far
/// closer than the independent model the one-way marginals alone give.
#[test]
fn the_pgm_model_recovers_two_way_structure() {
    let d = Domain::from_json(r#"{"a": 3, "b": 2, "c": 4, "e": 2}"#).unwrap();
    let n = 3000usize;
    let a: Vec<u32> = (0..n).map(|i| (i * 7 % 3) as u32).collect();
    let b: Vec<u32> = a.iter().map(|&v| (v == 0) as u32).collect();
    let c: Vec<u32> = (0..n).map(|i| (a[i] + (i % 2) as u32 * 2) % 4).collect();
    let e: Vec<u32> = (0..n)
        .map(|i| ((c[i] >= 2) as u32) ^ (i % 11 == 0) as u32)
        .collect();
    let r = Records::from_columns(vec![a, b, c, e], &d).unwrap();
    let w = MarginalWorkload::all_k_way(&d, 2).unwrap();
    for neighbours in [Neighbours::AddRemove, Neighbours::Replace] {
        let est = PgmEstimator::new(&d, neighbours, n);
        let mut acct = Accountant::zcdp(Rho::new(4, 1).unwrap(), 1e-9).unwrap();
        let out = adaptive_marginals(
            &r,
            &d,
            &w,
            &AdaptiveConfig::new(neighbours),
            &est,
            &mut acct,
            &mut crate::seeded_rng(11),
            &mut |_| {},
        )
        .unwrap();
        for (clique, _) in w.cliques() {
            let truth = r.marginal(clique.attributes(), &d).unwrap();
            let model = out.model.marginal(clique).unwrap();
            let tv: f64 = truth
                .iter()
                .zip(&model)
                .map(|(&t, &m)| (t as f64 / n as f64 - m / out.model.total()).abs())
                .sum::<f64>()
                / 2.0;
            assert!(tv < 0.02, "{clique:?}: TV {tv} under {neighbours}");
        }
        let total = out.model.total();
        assert!((total - n as f64).abs() < 0.01 * n as f64, "total {total}");
        assert!(
            out.measurements
                .iter()
                .filter(|m| m.clique.len() == 2)
                .count()
                >= 3
        );
    }
}

/// Marginals whose expected noise dwarfs the data (an attribute of 4000 values
/// over 200 records) are never candidates whole; the others still are, and the
/// large attribute's marginals only coarsened.
#[test]
fn noise_dominated_candidates_are_left_out() {
    let d = Domain::from_json(r#"{"a": 2, "b": 2, "big": 4000}"#).unwrap();
    let n = 200;
    let cols = vec![
        (0..n).map(|i| (i % 2) as u32).collect(),
        (0..n).map(|i| (i % 3 == 0) as u32).collect(),
        (0..n).map(|i| (i * 37 % 4000) as u32).collect(),
    ];
    let r = Records::from_columns(cols, &d).unwrap();
    let w = MarginalWorkload::all_k_way(&d, 2).unwrap();
    let est = Independent {
        sizes: vec![2, 2, 4000],
    };
    let mut acct = Accountant::zcdp(Rho::new(1, 2).unwrap(), 1e-9).unwrap();
    let out = adaptive_marginals(
        &r,
        &d,
        &w,
        &AdaptiveConfig::new(Neighbours::AddRemove),
        &est,
        &mut acct,
        &mut crate::seeded_rng(3),
        &mut |_| {},
    )
    .unwrap();
    assert!(!out.rounds.is_empty());
    for round in &out.rounds {
        // {a}, {b} and {a, b} whole, and at most the 3 holding `big` coarsened
        // (≤ 32 groups of its values): never one of those whole.
        assert!((3..=6).contains(&round.candidates), "{round:?}");
        assert!(
            !round.clique.contains(2) || round.coarsened.is_some_and(|g| g <= 64),
            "{round:?}"
        );
    }
}

#[test]
fn refuses_a_pure_accountant_and_too_few_rounds() {
    let (d, r) = small();
    let w = MarginalWorkload::all_k_way(&d, 2).unwrap();
    let est = Independent {
        sizes: vec![3, 2, 2, 4],
    };
    let config = AdaptiveConfig::new(Neighbours::AddRemove);
    let mut pure = Accountant::pure(Epsilon::new(1, 1).unwrap());
    let run = |acct: &mut Accountant, config: &AdaptiveConfig| {
        adaptive_marginals(
            &r,
            &d,
            &w,
            config,
            &est,
            acct,
            &mut crate::seeded_rng(1),
            &mut |_| {},
        )
    };
    assert!(matches!(
        run(&mut pure, &config),
        Err(AdaptiveError::InvalidParameter(_))
    ));
    let mut acct = Accountant::zcdp(Rho::new(1, 2).unwrap(), 1e-9).unwrap();
    let few = AdaptiveConfig {
        rounds: Some(4),
        ..config
    };
    assert!(run(&mut acct, &few).is_err());
    assert!(acct.spent_rho().is_none(), "a refused run spends nothing");
}

/// Round 0's ρ's: one round's for attributes of up to 3 values (so a binary
/// domain runs as AIM's), more for larger ones, ∝ n^{2/3} (2.5 rounds' ·
/// (n^{2/3}/2.5)), and all of round 0 within max(d, T/4) rounds'.
#[test]
fn one_way_rhos_grow_with_the_domain_and_stay_capped() {
    let step = rho_scaled(Rho::new(1, 100).unwrap(), 1, 224).unwrap();
    let small = one_way_rhos(step, &[2, 2, 3, 3], 64).unwrap();
    assert!(small.iter().all(|r| r.to_f64() == step.to_f64()));
    let sizes = [100, 2, 1000];
    let rhos = one_way_rhos(step, &sizes, 224).unwrap();
    // (Each ρ is rounded down to a dyadic fraction.)
    assert!(rhos[1] <= step && rhos[1].to_f64() > step.to_f64() * (1.0 - 1e-9));
    for (&n, r) in sizes.iter().zip(&rhos) {
        let want = f64::max(1.0, (n as f64).powf(2.0 / 3.0) / 2.5);
        let got = r.to_f64() / step.to_f64();
        assert!((got - want).abs() < 1e-3 * want, "{n}: {got} vs {want}");
    }
    // Few planned rounds: round 0 takes at most d rounds' ρ, split in proportion.
    let rhos = one_way_rhos(step, &sizes, 4).unwrap();
    let total: f64 = rhos.iter().map(|r| r.to_f64()).sum();
    assert!(total <= 3.0 * step.to_f64() && total > 2.99 * step.to_f64());
    assert!(rhos[2] > rhos[0] && rhos[0] > rhos[1]);
}

/// 4 000 records of a long-tailed attribute `gain` (0 for most rows, a few rows
/// spread over 1..40), `y` = (gain > 0) and an independent `z`.
fn long_tail() -> (Domain, usize, Records) {
    let d = Domain::from_json(r#"{"gain": 40, "y": 2, "z": 3}"#).unwrap();
    let n = 4000usize;
    let gain: Vec<u32> = (0..n)
        .map(|i| {
            if i % 50 == 0 {
                1 + (i / 50 % 39) as u32
            } else {
                0
            }
        })
        .collect();
    let y: Vec<u32> = gain.iter().map(|&g| (g > 0) as u32).collect();
    let z: Vec<u32> = (0..n).map(|i| (i % 3) as u32).collect();
    let r = Records::from_columns(vec![gain, y, z], &d).unwrap();
    (d, n, r)
}

/// A long-tailed attribute is compressed after round 0: the later measurements are
/// over the compressed values, the released model over the original ones, and
/// the run still spends exactly its budget.
#[test]
fn compresses_rare_values_and_expands_the_model() {
    let (d, n, r) = long_tail();
    let w = MarginalWorkload::all_k_way(&d, 2).unwrap();
    let est = PgmEstimator::new(&d, Neighbours::AddRemove, n);
    let mut acct = Accountant::zcdp(Rho::new(1, 10).unwrap(), 1e-9).unwrap();
    let out = adaptive_marginals(
        &r,
        &d,
        &w,
        &AdaptiveConfig::new(Neighbours::AddRemove),
        &est,
        &mut acct,
        &mut crate::seeded_rng(2),
        &mut |_| {},
    )
    .unwrap();
    let c = out.compression.as_ref().expect("gain's tail is merged");
    assert!(c.sizes()[0] < 40 && c.sizes()[1] == 2 && c.sizes()[2] == 3);
    assert_eq!(out.model.sizes(), &[40, 2, 3]);
    // The one-way marginals as measured, the selected ones over the compressed values.
    for (i, m) in out.measurements.iter().enumerate() {
        let sizes = if i < 3 { c.original_sizes() } else { c.sizes() };
        match &m.groups {
            None => assert_eq!(m.values.len(), m.clique.cells(sizes).unwrap()),
            Some(g) => assert_eq!(g.len(), m.clique.cells(sizes).unwrap()),
        }
    }
    let spent = acct.spent_rho().unwrap().to_f64();
    assert!(spent <= 0.1 && spent > 0.1 * 0.999, "spent {spent}");
    // The model keeps gain = 0 ⇔ y = 0.
    let gy = out.model.marginal(&Clique::new([0, 1]).unwrap()).unwrap();
    let total = out.model.total();
    assert!(
        gy[0] / total > 0.9 && gy[1] / total < 0.02,
        "{:?}",
        &gy[..2]
    );
    // Without compression the measurements are over the original values.
    let mut acct = Accountant::zcdp(Rho::new(1, 10).unwrap(), 1e-9).unwrap();
    let plain = adaptive_marginals(
        &r,
        &d,
        &w,
        &AdaptiveConfig {
            compress: false,
            ..AdaptiveConfig::new(Neighbours::AddRemove)
        },
        &est,
        &mut acct,
        &mut crate::seeded_rng(2),
        &mut |_| {},
    )
    .unwrap();
    assert!(plain.compression.is_none());
    assert_eq!(plain.measurements[0].values.len(), 40);
}

/// The compression is post-processing of round 0's noisy one-way measurements
/// only: the same seed without compression draws the same round-0 noise (the
/// compression draws nothing), and recomputing the compression from those
/// measurements at the module's threshold gives the compressed run's.
#[test]
fn compression_comes_only_from_the_noisy_one_ways() {
    let (d, n, r) = long_tail();
    let w = MarginalWorkload::all_k_way(&d, 2).unwrap();
    let est = PgmEstimator::new(&d, Neighbours::AddRemove, n);
    let run = |compress: bool, seed: u64| {
        let mut acct = Accountant::zcdp(Rho::new(1, 10).unwrap(), 1e-9).unwrap();
        adaptive_marginals(
            &r,
            &d,
            &w,
            &AdaptiveConfig {
                compress,
                ..AdaptiveConfig::new(Neighbours::AddRemove)
            },
            &est,
            &mut acct,
            &mut crate::seeded_rng(seed),
            &mut |_| {},
        )
        .unwrap()
    };
    for seed in [2, 3, 4] {
        let compressed = run(true, seed);
        let plain = run(false, seed);
        let one_ways = &plain.measurements[..d.dims()];
        for (a, m) in one_ways.iter().enumerate() {
            assert_eq!(m.clique, Clique::new([a]).unwrap());
        }
        let noisy: Vec<Vec<f64>> = one_ways.iter().map(|m| m.values.clone()).collect();
        let threshold: Vec<f64> = one_ways.iter().map(|m| COMPRESS_SIGMAS * m.sigma).collect();
        let recomputed = Compression::from_noisy(&noisy, &threshold);
        let c = compressed.compression.expect("gain's tail is merged");
        assert!(!recomputed.is_identity());
        assert_eq!(recomputed, c, "seed {seed}");
        // And the compressed run reports the same one-way measurements, as
        // measured (over the original values).
        assert_eq!(&compressed.measurements[..d.dims()], one_ways);
    }
}

#[test]
fn fit_work_bounds_steps_by_model_size() {
    // Between rounds: 100 steps up to 2¹⁸ cells, fewer beyond, at least 5.
    assert_eq!(ROUND_WORK.iterations(1), 100);
    assert_eq!(ROUND_WORK.iterations(1 << 18), 100);
    assert_eq!(ROUND_WORK.iterations(1 << 20), 25);
    assert_eq!(ROUND_WORK.iterations(1 << 30), 5);
    // Between rounds fitted from the uniform model: 50 up to 2¹⁶ cells.
    assert_eq!(FRESH_ROUND_WORK.iterations(1 << 16), 50);
    assert_eq!(FRESH_ROUND_WORK.iterations((1 << 16) + 1), 49);
    assert_eq!(FRESH_ROUND_WORK.iterations(1 << 30), 5);
    // The released model: 2²⁵ cell-steps, 250 up to 134 217 cells, at least 50.
    assert_eq!(FINAL_WORK.iterations(1 << 17), 250);
    assert_eq!(FINAL_WORK.iterations(1 << 19), 64);
    assert_eq!(FINAL_WORK.iterations(1 << 30), 50);
}

#[test]
fn coarse_maps_cut_large_attributes_into_runs_of_equal_noisy_mass() {
    // Attribute 0: 6 values (> 4), noisy mass 10, 10, -3, 10, 40, 30 (clamped
    // 0): midpoints at 5, 15, 20, 25, 50, 85 of 100, 2 groups → 0, 0, 0, 0, 1, 1.
    // Attribute 1: 3 values, kept whole. Attribute 2: compressed (its last value
    // is the merged one): kept values in 2 runs, the merged value a third group.
    let noisy = vec![
        vec![10.0, 10.0, -3.0, 10.0, 40.0, 30.0],
        vec![5.0, 6.0, 7.0],
        vec![50.0, 50.0, 50.0, 50.0, 50.0, 7.0],
    ];
    let maps = coarse_maps(&noisy, &[false, false, true], 4, 2);
    assert_eq!(maps[0].as_deref(), Some(&[0, 0, 0, 0, 1, 1][..]));
    assert_eq!(maps[1], None);
    assert_eq!(maps[2].as_deref(), Some(&[0, 0, 1, 1, 1, 2][..]));
    // A spike holding more than one group's mass leaves no empty group between.
    let spike = coarse_maps(&[vec![1.0, 100.0, 1.0, 1.0, 1.0]], &[false], 4, 4);
    assert_eq!(spike[0].as_deref(), Some(&[0, 1, 2, 2, 2][..]));
    // As many runs as values: the attribute whole, no map (with or without a
    // merged value).
    let even = vec![vec![5.0; 6], vec![5.0, 5.0, 5.0, 5.0, 5.0, 1.0]];
    assert_eq!(coarse_maps(&even, &[false, true], 4, 8), vec![None, None]);
    // A clique's cells (row-major) go to the product of its attributes' groups.
    let sizes = [6, 3, 6];
    let (g, n) = clique_groups(&Clique::new([0, 1]).unwrap(), &sizes, &maps).unwrap();
    assert_eq!(n, 2 * 3);
    assert_eq!(g.len(), 18);
    assert_eq!(&g[..3], &[0, 1, 2]);
    assert_eq!(&g[15..], &[3, 4, 5]);
    assert!(clique_groups(&Clique::new([1]).unwrap(), &sizes, &maps).is_none());
    let x: Vec<u64> = (0..18).collect();
    let c = coarsen(&g, n, &x);
    assert_eq!(c.iter().sum::<u64>(), x.iter().sum::<u64>());
    assert_eq!(c[0], 3 + 6 + 9);
}

/// A coarsened measurement is a histogram of the groups: a neighbouring input
/// (one record more) changes exactly one group by one, as it changes one cell of
/// the marginal.
#[test]
fn a_coarsened_marginal_has_the_marginals_sensitivity() {
    let maps = vec![Some(vec![0u32, 0, 1, 1, 2]), None];
    let (g, n) = clique_groups(&Clique::new([0, 1]).unwrap(), &[5, 2], &maps).unwrap();
    for cell in 0..10 {
        let mut x = vec![3u64; 10];
        let before = coarsen(&g, n, &x);
        x[cell] += 1;
        let after = coarsen(&g, n, &x);
        let l1: u64 = before.iter().zip(&after).map(|(a, b)| b - a).sum();
        assert_eq!(l1, 1);
    }
}

/// [`Independent`], counting the round fits warm-started and from the uniform
/// model; its total is `scale` times [`Independent`]'s.
struct Counting {
    inner: Independent,
    scale: f64,
    warm: std::sync::atomic::AtomicUsize,
    uniform: std::sync::atomic::AtomicUsize,
}

impl MarginalEstimator for Counting {
    type Model = <Independent as MarginalEstimator>::Model;
    fn fit(&self, m: &[Measurement], p: Option<&Self::Model>) -> Result<Self::Model, SynthError> {
        if p.is_some() {
            self.warm.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        self.inner.fit(m, p)
    }
    fn fit_from_uniform(
        &self,
        m: &[Measurement],
        p: &Self::Model,
    ) -> Result<Self::Model, SynthError> {
        self.uniform
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.fit(m, Some(p))
    }
    fn marginal(&self, m: &Self::Model, c: &Clique) -> Result<Vec<f64>, SynthError> {
        self.inner.marginal(m, c)
    }
    fn total(&self, m: &Self::Model) -> f64 {
        self.scale * self.inner.total(m)
    }
    fn exact_total(&self) -> bool {
        false
    }
    fn covers(&self, m: &Self::Model, c: &Clique) -> bool {
        self.inner.covers(m, c)
    }
    fn model_cells(&self, m: &Self::Model, added: &Clique) -> Result<u128, SynthError> {
        self.inner.model_cells(m, added)
    }
}

/// Round fits start from the uniform model exactly when the first rounds' σ is
/// at least [`ROUNDS_FROM_UNIFORM`] of the model's total after round 0: on 400
/// records, ρ = ½ gives σ ≈ 8.4 (≥ 400/250 = 1.6), ρ = 100 σ ≈ 0.6. The switch
/// reads the model's total, never the records' count: a model whose total is
/// 100 times the data's (σ < 40 000/250) keeps its warm starts at ρ = ½.
#[test]
fn round_fits_start_from_the_uniform_model_when_the_noise_is_large() {
    let (d, r) = small();
    let w = MarginalWorkload::all_k_way(&d, 2).unwrap();
    for (rho, scale, from_uniform) in [
        (Rho::new(1, 2).unwrap(), 1.0, true),
        (Rho::new(100, 1).unwrap(), 1.0, false),
        (Rho::new(1, 2).unwrap(), 100.0, false),
    ] {
        let est = Counting {
            inner: Independent {
                sizes: vec![3, 2, 2, 4],
            },
            scale,
            warm: Default::default(),
            uniform: Default::default(),
        };
        let mut acct = Accountant::zcdp(rho, 1e-9).unwrap();
        let config = AdaptiveConfig::new(Neighbours::AddRemove);
        let out = adaptive_marginals(
            &r,
            &d,
            &w,
            &config,
            &est,
            &mut acct,
            &mut crate::seeded_rng(6),
            &mut |_| {},
        )
        .unwrap();
        let sigma = out.rounds[0].sigma;
        assert_eq!(
            sigma >= ROUNDS_FROM_UNIFORM * 400.0 * scale,
            from_uniform,
            "σ {sigma}"
        );
        assert_eq!(out.rounds_from_uniform, from_uniform);
        let (warm, uniform) = (est.warm.into_inner(), est.uniform.into_inner());
        let rounds = out.rounds.len();
        if from_uniform {
            assert_eq!((warm, uniform), (0, rounds));
        } else {
            assert_eq!((warm, uniform), (rounds, 0));
        }
    }
}

/// A fit from the uniform model needs all its 50 steps: on a model too large for
/// them (a 300 × 300 clique gets 36) the estimator keeps the warm start, the same
/// fit as [`MarginalEstimator::fit`] (72 steps); a small model's differs.
#[test]
fn a_model_too_large_for_a_full_round_fit_keeps_its_warm_start() {
    let d = Domain::from_json(r#"{"a": 300, "b": 300}"#).unwrap();
    let est = PgmEstimator::new(&d, Neighbours::AddRemove, 0);
    let measure = |attrs: &[usize], values: Vec<f64>| {
        Measurement::new(Clique::new(attrs.iter().copied()).unwrap(), values, 3.0).unwrap()
    };
    let one_ways = vec![
        measure(&[0], (0..300).map(|i| 5.0 + (i % 7) as f64).collect()),
        measure(&[1], (0..300).map(|i| 2.0 + (i % 11) as f64).collect()),
    ];
    let first = est.fit(&one_ways, None).unwrap();
    let mut both = one_ways.clone();
    both.push(measure(
        &[0, 1],
        (0..90_000).map(|i| ((i * 37) % 5) as f64 * 0.02).collect(),
    ));
    let warm = est.fit(&both, Some(&first)).unwrap();
    let fresh = est.fit_from_uniform(&both, &first).unwrap();
    assert_eq!(warm.potentials(), fresh.potentials());
    let (warm, fresh) = (
        est.fit(&one_ways, Some(&first)).unwrap(),
        est.fit_from_uniform(&one_ways, &first).unwrap(),
    );
    assert_ne!(warm.potentials(), fresh.potentials());
}

/// A round fit from the uniform model on a model of at most 2¹⁶ cells is exactly
/// [`FRESH_ROUND_WORK`]'s 50 steps from the uniform model (not the warm
/// budget's 100: measurements that disagree keep the fit moving past 50).
#[test]
fn a_fresh_round_fit_takes_fifty_steps_from_the_uniform_model() {
    let sizes = [20usize, 20];
    let d = Domain::from_json(r#"{"a": 20, "b": 20}"#).unwrap();
    let est = PgmEstimator::new(&d, Neighbours::AddRemove, 0);
    let measure = |attrs: &[usize], values: Vec<f64>| {
        Measurement::new(Clique::new(attrs.iter().copied()).unwrap(), values, 0.5).unwrap()
    };
    let mut ms = vec![
        measure(&[0], (0..20).map(|i| 50.0 + (i % 7) as f64 * 9.0).collect()),
        measure(
            &[1],
            (0..20).map(|i| 20.0 + (i % 11) as f64 * 7.0).collect(),
        ),
    ];
    let first = est.fit(&ms, None).unwrap();
    ms.push(measure(
        &[0, 1],
        (0..400).map(|i| ((i * 37) % 13) as f64 * 0.9).collect(),
    ));
    let fresh = est.fit_from_uniform(&ms, &first).unwrap();
    let direct = |iterations: usize| {
        let options = FitOptions {
            iterations,
            warm_start: Some(&first),
            from_uniform: true,
            max_cells: u128::MAX,
            order_sizes: Some(&sizes),
            stall: STALL,
            ..FitOptions::default()
        };
        fit(&sizes, &ms, Total::Estimated, &options).unwrap()
    };
    assert_eq!(
        fresh.potentials(),
        direct(FRESH_ROUND_WORK.max).potentials()
    );
    // Neither fit stalls (σ small against the counts): 50 steps and 100.
    let longer = direct(ROUND_ITERATIONS);
    assert_eq!(fresh.iterations(), FRESH_ROUND_WORK.max);
    assert_eq!(longer.iterations(), ROUND_ITERATIONS);
    assert_ne!(fresh.potentials(), longer.potentials());
}

/// A time budget shorter than any fit makes round 1 the last: it spends all the ρ
/// the one-way marginals left (one larger measurement), so the run still spends
/// its whole budget, and the final fit stops after a step. A budget far beyond
/// the run changes nothing: the same rounds, measurements and model.
#[test]
fn a_time_budget_ends_the_rounds_and_never_changes_the_spend() {
    let (d, n, r) = long_tail();
    let w = MarginalWorkload::all_k_way(&d, 2).unwrap();
    let est = PgmEstimator::new(&d, Neighbours::AddRemove, n);
    let run = |time_budget: Option<Duration>| {
        let mut acct = Accountant::zcdp(Rho::new(1, 2).unwrap(), 1e-9).unwrap();
        let config = AdaptiveConfig {
            time_budget,
            ..AdaptiveConfig::new(Neighbours::AddRemove)
        };
        let out = adaptive_marginals(
            &r,
            &d,
            &w,
            &config,
            &est,
            &mut acct,
            &mut crate::seeded_rng(4),
            &mut |_| {},
        )
        .unwrap();
        (out, acct.spent_rho().unwrap().to_f64())
    };
    let (free, free_spent) = run(None);
    assert!(free.rounds.len() > 2 && !free.ended_by_time);
    let (long, long_spent) = run(Some(Duration::from_secs(3600)));
    assert!(!long.ended_by_time);
    assert_eq!(long.rounds, free.rounds);
    assert_eq!(long.measurements, free.measurements);
    let cells = Clique::new([0, 1, 2]).unwrap();
    assert_eq!(
        long.model.marginal(&cells).unwrap(),
        free.model.marginal(&cells).unwrap()
    );
    assert_eq!(long_spent, free_spent);
    let mut acct = Accountant::zcdp(Rho::new(1, 2).unwrap(), 1e-9).unwrap();
    let zero = AdaptiveConfig {
        time_budget: Some(Duration::ZERO),
        ..AdaptiveConfig::new(Neighbours::AddRemove)
    };
    let refused = adaptive_marginals(
        &r,
        &d,
        &w,
        &zero,
        &est,
        &mut acct,
        &mut crate::seeded_rng(4),
        &mut |_| {},
    );
    assert!(matches!(refused, Err(AdaptiveError::InvalidParameter(_))));
    assert!(acct.spent_rho().is_none(), "a refused run spends nothing");
    let (short, short_spent) = run(Some(Duration::from_nanos(1)));
    assert!(short.ended_by_time);
    assert_eq!(short.rounds.len(), 1);
    assert!(short.rounds[0].sigma < free.rounds[0].sigma / 2.0);
    assert!(
        short_spent <= 0.5 && short_spent > 0.5 * 0.999,
        "spent {short_spent}"
    );
    assert!(short.fitting_time > Duration::ZERO);
}

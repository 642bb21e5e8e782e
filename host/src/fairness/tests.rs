//! The must-show tests of thesis Chapter 8: Thm 8.3.7 and Cor 8.3.10, the
//! exponential mapping's Lipschitz ratios (TYPO-27), the DP connection of §8.2.3,
//! and the typed errors.

use proptest::prelude::*;

use super::*;
use crate::dx::FiniteMetric;

/// Points in `[0, 1]²` → Euclidean metric divided by √2 (so `d ≤ 1`) times `stretch`.
fn plane(points: &[(f64, f64)], stretch: f64) -> Option<FiniteMetric> {
    let pts: Vec<[f64; 2]> = points.iter().map(|&(a, b)| [a, b]).collect();
    FiniteMetric::euclidean(&pts, stretch / 2f64.sqrt()).ok()
}

/// S and T uniform on the members labelled 1 and 2 (disjoint), if both are non-empty.
fn groups(labels: &[u8]) -> Option<(Group, Group)> {
    let of = |l| -> Vec<usize> { (0..labels.len()).filter(|&i| labels[i] == l).collect() };
    let n = labels.len();
    Some((
        Group::uniform(n, &of(1)).ok()?,
        Group::uniform(n, &of(2)).ok()?,
    ))
}

fn case() -> impl Strategy<Value = (Vec<(f64, f64)>, Vec<u8>)> {
    (3usize..11).prop_flat_map(|n| {
        (
            proptest::collection::vec((0.0f64..1.0, 0.0f64..1.0), n),
            proptest::collection::vec(0u8..3, n),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Thm 8.3.7 with d ≤ 1: bias_tv = d_EM (both EM forms agree); Cor 8.3.10.
    #[test]
    fn bias_tv_equals_earthmover_when_d_at_most_1((pts, labels) in case()) {
        let (Some(d), Some((s, t))) = (plane(&pts, 1.0), groups(&labels)) else {
            return Err(TestCaseError::reject("duplicate points or an empty group"));
        };
        let em = earthmover(&d, &s, &t, EmForm::Transport).unwrap();
        let flow = earthmover(&d, &s, &t, EmForm::Flow).unwrap();
        let tv = bias(&d, &s, &t, Divergence::Tv).unwrap();
        let inf = bias(&d, &s, &t, Divergence::Inf).unwrap();
        prop_assert!((tv.value - em).abs() < 1e-7, "bias_tv {} d_EM {em}", tv.value);
        prop_assert!((flow - em).abs() < 1e-7, "flow {flow} transport {em}");
        prop_assert!(inf.value <= tv.value + 1e-9, "bias_inf {} > bias_tv {}", inf.value, tv.value);
        // The maximisers are Lipschitz and attain the value.
        let gap = |m: &Mapping| m.on_group(&s).unwrap()[0] - m.on_group(&t).unwrap()[0];
        prop_assert!((gap(&tv.mapping) - tv.value).abs() < 1e-7);
        // The LP solver's round-off: up to 5.9·10⁻⁹ seen (the regression seed
        // c8b74559…), so the same 10⁻⁷ as D_∞'s below.
        let worst_tv = tv.mapping.worst_violation(&d, Divergence::Tv).unwrap();
        prop_assert!(worst_tv.excess() < 1e-7, "{worst_tv:?}");
        prop_assert!((gap(&inf.mapping) - inf.value).abs() < 1e-7);
        prop_assert!(inf.mapping.worst_violation(&d, Divergence::Inf).unwrap().excess() < 1e-7);
    }

    /// Thm 8.3.7 when d may exceed 1: only bias_tv ≤ d_EM; and bias_∞ ≤ bias_tv.
    #[test]
    fn bias_tv_at_most_earthmover_for_large_d((pts, labels) in case(), stretch in 1.0f64..6.0) {
        let (Some(d), Some((s, t))) = (plane(&pts, stretch), groups(&labels)) else {
            return Err(TestCaseError::reject("duplicate points or an empty group"));
        };
        let em = earthmover(&d, &s, &t, EmForm::Flow).unwrap();
        let tv = bias(&d, &s, &t, Divergence::Tv).unwrap().value;
        let inf = bias(&d, &s, &t, Divergence::Inf).unwrap().value;
        prop_assert!(tv <= em + 1e-9, "bias_tv {tv} > d_EM {em}");
        prop_assert!(inf <= tv + 1e-9, "bias_inf {inf} > bias_tv {tv}");
    }

    /// §8.5 and TYPO-27: scale 2 is (D_∞, d)-Lipschitz, scale 1 only (D_∞, 2d).
    #[test]
    fn exponential_mapping_lipschitz_ratios((pts, _) in case(), stretch in 0.1f64..20.0) {
        let Some(d) = plane(&pts, stretch) else {
            return Err(TestCaseError::reject("duplicate points"));
        };
        let two = exponential_mapping(&d, LIPSCHITZ_SCALE).unwrap();
        let one = exponential_mapping(&d, THESIS_SCALE).unwrap();
        prop_assert!(two.lipschitz_ratio(&d, Divergence::Inf) <= 1.0 + 1e-9);
        prop_assert!(one.lipschitz_ratio(&d, Divergence::Inf) <= 2.0 + 1e-9);
    }

    /// The Fairness LP's mapping is Lipschitz; D_∞ is the stricter constraint so its
    /// loss is at least D_tv's; both are between the unconstrained and constant optima.
    #[test]
    fn fairness_lp_is_lipschitz_and_ordered(
        (pts, _) in case(),
        stretch in 0.2f64..4.0,
        k in 2usize..4,
        seed in 0u64..1000,
    ) {
        let Some(d) = plane(&pts, stretch) else {
            return Err(TestCaseError::reject("duplicate points"));
        };
        let n = d.len();
        let loss: Vec<Vec<f64>> = (0..n)
            .map(|x| (0..k).map(|a| ((x * 7 + a * 13 + seed as usize) % 11) as f64 / 10.0).collect())
            .collect();
        let inst = Instance::new(d.clone(), loss.clone()).unwrap();
        let tv = FairnessLp::new(Divergence::Tv).solve(&inst).unwrap();
        let inf = FairnessLp::new(Divergence::Inf).solve(&inst).unwrap();
        // The LP solver's round-off: up to 5.9·10⁻⁹ seen (the regression seed
        // c8b74559…), so the same 10⁻⁷ as D_∞'s below.
        let worst_tv = tv.mapping.worst_violation(&d, Divergence::Tv).unwrap();
        prop_assert!(worst_tv.excess() < 1e-7, "{worst_tv:?}");
        let worst_inf = inf.mapping.worst_violation(&d, Divergence::Inf).unwrap();
        prop_assert!(worst_inf.excess() < 1e-7, "{worst_inf:?}");
        prop_assert!(tv.loss <= inf.loss + 1e-9);
        let best: f64 = loss.iter().map(|r| r.iter().copied().fold(f64::INFINITY, f64::min)).sum::<f64>() / n as f64;
        let constant: f64 = (0..k)
            .map(|a| loss.iter().map(|r| r[a]).sum::<f64>() / n as f64)
            .fold(f64::INFINITY, f64::min);
        prop_assert!(best <= tv.loss + 1e-9 && inf.loss <= constant + 1e-9);
    }
}

#[test]
fn tv_with_two_outcomes_matches_the_general_formulation() {
    // The |A| = 2 shortcut |μ_x(0) − μ_y(0)| ≤ d against the τ-auxiliary LP with a
    // third, never-worth-it outcome.
    let d = FiniteMetric::euclidean(&[[0.0], [0.3], [0.5], [1.4], [1.5]], 1.0).unwrap();
    let two = vec![
        vec![0.0, 1.0],
        vec![1.0, 0.0],
        vec![0.2, 0.6],
        vec![0.9, 0.1],
        vec![0.0, 0.8],
    ];
    let three: Vec<Vec<f64>> = two.iter().map(|r| vec![r[0], r[1], 5.0]).collect();
    let a = FairnessLp::new(Divergence::Tv)
        .solve(&Instance::new(d.clone(), two).unwrap())
        .unwrap();
    let b = FairnessLp::new(Divergence::Tv)
        .solve(&Instance::new(d, three).unwrap())
        .unwrap();
    assert!((a.loss - b.loss).abs() < 1e-9, "{} vs {}", a.loss, b.loss);
    assert!(a.size.vars < b.size.vars);
}

/// The line with x = 0, x' = δ, a point at −L and a large cluster to the right:
/// the thesis-literal mapping (scale 1) breaks (D_∞, d) at (x, x'); scale 2 does not.
#[test]
fn typo_27_counterexample_scale_1_exceeds_d() {
    let delta = 0.5;
    let mut pts = vec![[0.0], [delta], [-5.0]];
    pts.extend((0..200).map(|i| [3.0 + f64::from(i) * 1e-4]));
    let d = FiniteMetric::euclidean(&pts, 1.0).unwrap();
    let literal = exponential_mapping(&d, THESIS_SCALE).unwrap();
    let div = Divergence::Inf.between(literal.row(0), literal.row(1));
    eprintln!("TYPO-27: scale 1 gives D_∞ = {div} at d = {delta}");
    assert!(div > 1.8 * delta, "D_∞ = {div}, d = {delta}");
    assert!(div <= 2.0 * delta + 1e-12);
    let fixed = exponential_mapping(&d, LIPSCHITZ_SCALE).unwrap();
    assert!(Divergence::Inf.between(fixed.row(0), fixed.row(1)) <= delta + 1e-12);
    assert!(fixed.lipschitz_ratio(&d, Divergence::Inf) <= 1.0 + 1e-12);
    // The price: a larger expected distance.
    assert!(expected_distance(&d, &fixed).unwrap() > expected_distance(&d, &literal).unwrap());
}

/// §8.2.3: V = all subsets of a 4-element universe, d(x, y) = ε|x Δ y|, loss
/// |count(x) − a|. The (D_∞, d) Fairness LP is an ε-DP mechanism for the count.
#[test]
fn fairness_lp_on_databases_is_differentially_private() {
    let eps = 0.5;
    let (m, n) = (4, 16);
    let bits: Vec<Vec<usize>> = (0..n)
        .map(|x| (0..m).map(|i| (x >> i) & 1).collect())
        .collect();
    let d = FiniteMetric::weighted_hamming(&bits, &vec![eps; m]).unwrap();
    let count = |x: usize| (x as u32).count_ones() as f64;
    let loss: Vec<Vec<f64>> = (0..n)
        .map(|x| (0..=m).map(|a| (count(x) - a as f64).abs()).collect())
        .collect();
    let inst = Instance::new(d.clone(), loss).unwrap();
    let sol = FairnessLp::new(Divergence::Inf).solve(&inst).unwrap();
    assert_eq!(
        sol.constrained_pairs,
        n * m / 2,
        "only neighbours keep rows"
    );
    let mut worst = f64::NEG_INFINITY;
    for x in 0..n {
        for i in 0..m {
            let y = x ^ (1 << i);
            for (a, (&p, &q)) in sol
                .mapping
                .row(x)
                .iter()
                .zip(sol.mapping.row(y))
                .enumerate()
            {
                assert!(p == 0.0 || q > 0.0, "support differs at {x}, {y}, {a}");
                if p > 0.0 {
                    worst = worst.max((p / q).ln());
                }
            }
        }
    }
    eprintln!(
        "DP connection: largest neighbouring log-ratio {worst} (ε = {eps}), loss {}",
        sol.loss
    );
    assert!(worst <= eps + 1e-9, "privacy loss {worst} > ε = {eps}");
    // Useful, not trivial: better than the best constant answer (loss 1 at a = 2).
    assert!(sol.loss > 0.0 && sol.loss < 1.0 - 1e-3, "{}", sol.loss);
}

#[test]
fn fig_8_2_parity_between_groups_is_checked() {
    // Two clusters far apart; S mostly in one. A Lipschitz map can tell the
    // clusters apart, so parity between S and T is not forced...
    let pts = [[0.0], [0.1], [0.2], [5.0], [5.1], [5.2]];
    let d = FiniteMetric::euclidean(&pts, 1.0).unwrap();
    let loss = vec![vec![0.0, 1.0]; 3]
        .into_iter()
        .chain(vec![vec![1.0, 0.0]; 3])
        .collect();
    let sol = FairnessLp::new(Divergence::Tv)
        .solve(&Instance::new(d.clone(), loss).unwrap())
        .unwrap();
    assert!(sol.loss < 1e-9);
    let (s, t) = (
        Group::uniform(6, &[0, 1, 3]).unwrap(),
        Group::uniform(6, &[2, 4, 5]).unwrap(),
    );
    let parity = sol.mapping.parity(&s, &t).unwrap();
    assert!((parity - 1.0 / 3.0).abs() < 1e-9);
    // ... and stays within the bias (Lemma 8.3.4).
    assert!(parity <= bias(&d, &s, &t, Divergence::Tv).unwrap().value + 1e-9);
}

#[test]
fn bad_inputs_are_named_errors() {
    // A "metric" breaking the triangle inequality names the triple.
    let tri = vec![0.0, 1.0, 5.0, 1.0, 0.0, 1.0, 5.0, 1.0, 0.0];
    let e: FairnessError = FiniteMetric::from_matrix(3, tri).unwrap_err().into();
    assert!(
        matches!(
            e,
            FairnessError::NotAMetric {
                i: 0,
                j: 2,
                k: 1,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("d(0,2)"));
    let d = FiniteMetric::euclidean(&[[0.0], [1.0]], 1.0).unwrap();
    assert!(matches!(
        Instance::new(d.clone(), vec![vec![0.0, 1.0], vec![-0.5, 0.0]]),
        Err(FairnessError::NegativeLoss {
            individual: 1,
            outcome: 0,
            ..
        })
    ));
    assert!(matches!(
        Instance::new(d.clone(), vec![vec![0.0, 1.0], vec![f64::NAN, 0.0]]),
        Err(FairnessError::NegativeLoss { .. })
    ));
    assert!(matches!(
        Instance::new(d.clone(), vec![vec![0.0, 1.0]]),
        Err(FairnessError::Dimension(_))
    ));
    assert!(matches!(
        Instance::new(d.clone(), vec![vec![0.0, 1.0], vec![0.0]]),
        Err(FairnessError::Dimension(_))
    ));
    assert!(matches!(
        Instance::new(d.clone(), vec![vec![], vec![]]),
        Err(FairnessError::Dimension(_))
    ));
    let inst = Instance::new(d.clone(), vec![vec![0.0, 1.0], vec![1.0, 0.0]]).unwrap();
    assert!(matches!(
        inst.clone().with_weights(&[1.0, -1.0]),
        Err(FairnessError::InvalidWeight {
            individual: Some(1),
            ..
        })
    ));
    assert!(matches!(
        inst.clone().with_weights(&[0.0, 0.0]),
        Err(FairnessError::InvalidWeight {
            individual: None,
            ..
        })
    ));
    assert!(matches!(
        Group::uniform(2, &[]),
        Err(FairnessError::EmptyGroup(_))
    ));
    assert!(matches!(
        Group::weighted(&[0.0, 1.0], &[0]),
        Err(FairnessError::EmptyGroup(_))
    ));
    assert!(matches!(
        Group::uniform(2, &[2]),
        Err(FairnessError::Dimension(_))
    ));
    assert!(Group::uniform(2, &[1, 1]).is_err());
    let big = FairnessLp::new(Divergence::Inf)
        .memory_cap(100)
        .solve(&inst);
    assert!(
        matches!(big, Err(FairnessError::TooLarge { cap: 100, .. })),
        "{big:?}"
    );
    assert!(big.unwrap_err().to_string().contains("memory cap"));
    assert!(exponential_mapping(&d, 0.0).is_err());
    assert!(Mapping::new(vec![vec![0.5, 0.6]]).is_err());
    assert!(Mapping::new(vec![vec![1.0], vec![0.5, 0.5]]).is_err());
    let far = FiniteMetric::euclidean(&[[0.0], [800.0]], 1.0).unwrap();
    let inst = Instance::new(far, vec![vec![0.0, 1.0], vec![1.0, 0.0]]).unwrap();
    assert!(matches!(
        FairnessLp::new(Divergence::Inf).solve(&inst),
        Err(FairnessError::InvalidParameter(_))
    ));
    let other = Group::uniform(3, &[0]).unwrap();
    assert!(earthmover(&d, &other, &other, EmForm::Flow).is_err());
}

#[test]
fn weights_shift_the_optimum() {
    let d = FiniteMetric::euclidean(&[[0.0], [0.1]], 1.0).unwrap();
    let inst = Instance::new(d, vec![vec![0.0, 1.0], vec![1.0, 0.0]]).unwrap();
    // Heavier x = 0 pulls both towards outcome 0.
    let sol = FairnessLp::new(Divergence::Tv)
        .solve(&inst.with_weights(&[3.0, 1.0]).unwrap())
        .unwrap();
    assert!((sol.mapping.row(0)[0] - 1.0).abs() < 1e-9);
    assert!((sol.mapping.row(1)[0] - 0.9).abs() < 1e-9);
    assert!((sol.loss - 0.25 * 0.9).abs() < 1e-9);
}

#[test]
fn unreachable_mass_has_infinite_earthmover_distance() {
    let d = FiniteMetric::graph(3, &[(0, 1, 0.5)]).unwrap();
    let (s, t) = (
        Group::uniform(3, &[0]).unwrap(),
        Group::uniform(3, &[2]).unwrap(),
    );
    assert_eq!(earthmover(&d, &s, &t, EmForm::Flow).unwrap(), f64::INFINITY);
    assert_eq!(
        earthmover(&d, &s, &t, EmForm::Transport).unwrap(),
        f64::INFINITY
    );
    // With no constraint between them, the bias is 1.
    assert!((bias(&d, &s, &t, Divergence::Inf).unwrap().value - 1.0).abs() < 1e-9);
}

/// §8.5 (Thm 8.5.5): on the grid `{0..L}^k` with ℓ1 distance (well-separated,
/// doubling dimension O(k)), the exponential mapping's mean loss stays bounded as L
/// grows.
#[test]
fn exponential_mapping_loss_stays_bounded_on_grids() {
    for k in [1usize, 2] {
        let losses: Vec<f64> = [10usize, 20, 40]
            .iter()
            .map(|&l| {
                let side = l + 1;
                let pts: Vec<Vec<f64>> = (0..side.pow(k as u32))
                    .map(|i| {
                        (0..k)
                            .map(|c| ((i / side.pow(c as u32)) % side) as f64)
                            .collect()
                    })
                    .collect();
                let d = FiniteMetric::weighted_l1(&pts, &vec![1.0; k]).unwrap();
                let e = exponential_mapping(&d, LIPSCHITZ_SCALE).unwrap();
                expected_distance(&d, &e).unwrap()
            })
            .collect();
        eprintln!("k = {k}: mean loss at L = 10, 20, 40: {losses:?}");
        // Growing, but converging: the increments shrink, and the level is O(1).
        assert!(
            losses[2] - losses[1] <= losses[1] - losses[0] + 1e-9,
            "{losses:?}"
        );
        assert!(losses[2] < 2.5 * k as f64 + 1.0, "{losses:?}");
    }
}

/// §8.4's Fig. 8.2: T = S^c, |S| = |V|/10, two far-apart clusters G₀ and G₁ with
/// |S₀| = |T₀| = 9|S|/10 (G₀ holds 18 % of V). The vendor's loss favours accepting
/// G₀ and rejecting G₁. Without parity the Lipschitz optimum has loss 0 and a
/// parity gap of 0.8; imposing exact parity collapses it to (nearly) the best
/// constant treatment, loss 0.18.
#[test]
fn fig_8_2_parity_collapses_the_solution() {
    let pos: Vec<[f64; 1]> = (0..100)
        .map(|i| {
            if i < 18 {
                [i as f64 * 1e-3]
            } else {
                [100.0 + i as f64 * 1e-3]
            }
        })
        .collect();
    let d = FiniteMetric::euclidean(&pos, 1.0).unwrap();
    // S: 9 of G₀ (0..9) and 1 of G₁ (18); T: the rest.
    let s_members: Vec<usize> = (0..9).chain([18]).collect();
    let t_members: Vec<usize> = (0..100).filter(|i| !s_members.contains(i)).collect();
    let (s, t) = (
        Group::uniform(100, &s_members).unwrap(),
        Group::uniform(100, &t_members).unwrap(),
    );
    // Outcomes (reject, accept).
    let loss = (0..100)
        .map(|i| {
            if i < 18 {
                vec![1.0, 0.0]
            } else {
                vec![0.0, 1.0]
            }
        })
        .collect();
    let inst = Instance::new(d, loss).unwrap();
    let free = FairnessLp::new(Divergence::Tv).solve(&inst).unwrap();
    assert!(free.loss < 1e-9);
    assert!((free.mapping.parity(&s, &t).unwrap() - 0.8).abs() < 1e-9);
    let fair = FairnessLp::new(Divergence::Tv)
        .parity(s.clone(), t.clone(), 0.0)
        .unwrap()
        .solve(&inst)
        .unwrap();
    assert!(fair.mapping.parity(&s, &t).unwrap() < 1e-9);
    assert!(
        fair.loss > 0.17 && fair.loss <= 0.18 + 1e-9,
        "{}",
        fair.loss
    );
    // A little slack buys back part of the loss, linearly.
    let loose = FairnessLp::new(Divergence::Tv)
        .parity(s.clone(), t.clone(), 0.4)
        .unwrap()
        .solve(&inst)
        .unwrap();
    assert!(loose.mapping.parity(&s, &t).unwrap() <= 0.4 + 1e-9);
    assert!(
        loose.loss < fair.loss - 0.05,
        "{} vs {}",
        loose.loss,
        fair.loss
    );
    assert!(
        FairnessLp::new(Divergence::Tv)
            .parity(s.clone(), t.clone(), -1.0)
            .is_err()
    );
    // §8.4.1's alternative reaches exact parity too (Prop 8.4.1), Lipschitz inside
    // each group but not across them.
    let pref = preferential_treatment(&inst, &s_members, &t_members, 0.0, Divergence::Tv).unwrap();
    let loss = pref.mapping.expected_loss(&inst).unwrap();
    eprintln!(
        "Fig. 8.2: parity-constrained LP loss {}, §8.4.1 pipeline loss {loss}",
        fair.loss
    );
    assert!(pref.mapping.parity(&s, &t).unwrap() < 1e-7);
    assert!(loss < fair.loss - 0.05, "{loss} vs {}", fair.loss); // measured 0.08 vs 0.179
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Props 8.4.1 and 8.4.2 for §8.4.1's composed classifier.
    #[test]
    fn preferential_treatment_props_8_4_1_and_8_4_2(
        (pts, labels) in case(),
        stretch in 0.3f64..3.0,
        bias in 0.0f64..0.3,
        seed in 0u64..1000,
    ) {
        let Some(d) = plane(&pts, stretch) else {
            return Err(TestCaseError::reject("duplicate points"));
        };
        let n = d.len();
        let s: Vec<usize> = (0..n).filter(|&i| labels[i] == 1).collect();
        let t: Vec<usize> = (0..n).filter(|&i| labels[i] != 1).collect();
        if s.is_empty() || t.is_empty() {
            return Err(TestCaseError::reject("empty group"));
        }
        let loss: Vec<Vec<f64>> = (0..n)
            .map(|x| (0..3).map(|a| ((x * 5 + a * 11 + seed as usize) % 7) as f64 / 6.0).collect())
            .collect();
        let inst = Instance::new(d.clone(), loss).unwrap();
        let (gs, gt) = (Group::uniform(n, &s).unwrap(), Group::uniform(n, &t).unwrap());
        for div in [Divergence::Tv, Divergence::Inf] {
            let p = preferential_treatment(&inst, &s, &t, bias, div).unwrap();
            let m = &p.mapping;
            // Prop 8.4.1: parity up to the bias, Lipschitz inside S and inside T.
            prop_assert!(m.parity(&gs, &gt).unwrap() <= bias + 1e-7);
            for group in [&s, &t] {
                for &x in group.iter() {
                    for &y in group.iter() {
                        let excess = div.between(m.row(x), m.row(y)) - d.get(x, y);
                        prop_assert!(excess <= 1e-7, "{div:?} ({x}, {y}): {excess}");
                    }
                }
            }
            if div == Divergence::Tv {
                // Prop 8.4.2.
                let lhs: f64 = s
                    .iter()
                    .map(|&x| {
                        t.iter()
                            .map(|&y| Divergence::Tv.between(m.row(x), m.row(y)) - d.get(x, y))
                            .fold(f64::NEG_INFINITY, f64::max)
                    })
                    .sum::<f64>()
                    / s.len() as f64;
                prop_assert!(lhs <= p.em_plus_l + 1e-7, "{lhs} > d_EM+L {}", p.em_plus_l);
            }
        }
    }
}

#[test]
fn preferential_treatment_rejects_bad_partitions() {
    let d = FiniteMetric::euclidean(&[[0.0], [1.0], [2.0]], 1.0).unwrap();
    let inst = Instance::new(d, vec![vec![0.0, 1.0]; 3]).unwrap();
    let tv = Divergence::Tv;
    assert!(matches!(
        preferential_treatment(&inst, &[], &[0, 1, 2], 0.1, tv),
        Err(FairnessError::EmptyGroup(_))
    ));
    assert!(preferential_treatment(&inst, &[0], &[0, 1, 2], 0.1, tv).is_err());
    assert!(preferential_treatment(&inst, &[0], &[1], 0.1, tv).is_err());
    assert!(preferential_treatment(&inst, &[0], &[1, 5], 0.1, tv).is_err());
    assert!(preferential_treatment(&inst, &[0], &[1, 2], -0.1, tv).is_err());
    assert!(preferential_treatment(&inst, &[0], &[1, 2], 0.1, tv).is_ok());
}

/// Solvers check what they return: the review's vanishing-leg metric now keeps
/// individual 2's rows, and the Lipschitz check passes; a mapping whose row is no
/// distribution is refused by `verify`.
#[test]
fn results_are_verified_before_they_are_returned() {
    let d = FiniteMetric::euclidean(&[[0.0], [1e-20], [0.5]], 1.0).unwrap();
    let inst = Instance::new(
        d.clone(),
        vec![vec![0.0, 1.0], vec![0.0, 1.0], vec![1.0, 0.0]],
    )
    .unwrap();
    for div in [Divergence::Tv, Divergence::Inf] {
        let sol = FairnessLp::new(div).solve(&inst).unwrap();
        let v = sol.mapping.worst_violation(&d, div).unwrap();
        assert!(v.excess() <= LIPSCHITZ_TOLERANCE, "{div:?}: {v:?}");
    }
    let broken = Mapping::new(vec![vec![0.5, 0.5], vec![1.0, 0.0], vec![0.0, 1.0]]).unwrap();
    assert!(matches!(
        broken.verify(Some((&d, Divergence::Tv))),
        Err(FairnessError::Unverified(_))
    ));
    assert!(broken.verify(None).is_ok());
}

/// Review F1: at d/scale ≳ 708 the weights `e^{−d/scale}` underflow to 0 and the
/// computed mapping degenerates to the identity (D_∞ = ∞); such a scale is refused
/// with a typed error that says why.
#[test]
fn an_underflowing_exponential_mapping_is_refused() {
    let d = FiniteMetric::euclidean(&[[0.0], [1500.0]], 1.0).unwrap();
    let err = exponential_mapping(&d, LIPSCHITZ_SCALE).unwrap_err();
    assert!(matches!(err, FairnessError::InvalidParameter(_)), "{err}");
    assert!(err.to_string().contains("underflow"), "{err}");
    // At d/scale = 700 every weight is still a normal float: accepted and Lipschitz.
    let d = FiniteMetric::euclidean(&[[0.0], [1400.0]], 1.0).unwrap();
    let e = exponential_mapping(&d, LIPSCHITZ_SCALE).unwrap();
    assert!(e.lipschitz_ratio(&d, Divergence::Inf) <= 1.0 + 1e-9);
}

fn em_people(metric: FiniteMetric) -> release::Individuals {
    let n = metric.len();
    release::Individuals {
        ids: (0..n).map(|i| format!("p{i}")).collect(),
        groups: (0..n)
            .map(|i| if i == 0 { "a" } else { "b" }.to_string())
            .collect(),
        weights: None,
        losses: vec![vec![]; n],
        metric,
    }
}

/// Review F2/F3: the proof bounds the exact mapping; the release checks the
/// computed one against `bound + τ` (absolute τ) and says whether it meets it.
#[test]
fn the_release_checks_the_computed_mapping_against_the_bound() {
    // F2: scores 0, 1.2e-16, 1: D_∞/d is well above 1 by rounding, but only
    // ~1e-16 in absolute terms, within τ.
    let d = FiniteMetric::euclidean(&[[0.0], [1.2e-16], [1.0]], 1.0).unwrap();
    let e = release::exponential(&em_people(d), &release::EmRequest::new(2.0)).unwrap();
    assert!(e.guarantee_excess < 1e-12, "{}", e.guarantee_excess);
    assert!(e.meets_guarantee());
    // F3: a metric that passes the relative triangle check but violates the
    // triangle inequality by ~1e-10: D_∞/d = 500, yet the excess stays below τ.
    let d = FiniteMetric::from_matrix(
        3,
        vec![
            0.0,
            1e-13,
            1000.0,
            1e-13,
            0.0,
            1000.0 + 1e-10,
            1000.0,
            1000.0 + 1e-10,
            0.0,
        ],
    );
    if let Ok(d) = d {
        let e = release::exponential(&em_people(d), &release::EmRequest::new(2.0)).unwrap();
        assert!(e.guarantee_ratio > 10.0, "{}", e.guarantee_ratio);
        assert!(e.guarantee_excess < release::GUARANTEE_TOLERANCE);
        assert!(e.meets_guarantee());
    }
    // A computed mapping beyond bound + τ is not reported as meeting it.
    let d = FiniteMetric::euclidean(&[[0.0], [1.0]], 1.0).unwrap();
    let mut e = release::exponential(&em_people(d), &release::EmRequest::new(2.0)).unwrap();
    e.guarantee_excess = 2.0 * release::GUARANTEE_TOLERANCE;
    assert!(!e.meets_guarantee());
}

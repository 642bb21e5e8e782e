//! Brute-force checks of the junction-tree engine over small full joints.

use super::factor::{Factor, Projection};
use super::infer::{BeliefPropagation, MarginalPlan, marginal};
use super::*;
use crate::seeded_rng;
use privq_core::rand_core::Rng;

fn unif<R: Rng>(rng: &mut R) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

fn cl(a: &[usize]) -> Clique {
    Clique::new(a.iter().copied()).unwrap()
}

/// Brute-force marginal (probabilities) of `q` from a full joint over all attributes.
fn brute_marginal(sizes: &[usize], joint: &[f64], q: &Clique) -> Vec<f64> {
    let full = Clique::new(0..sizes.len()).unwrap();
    let mut out = vec![0.0; q.cells(sizes).unwrap()];
    for (cell, &p) in joint.iter().enumerate() {
        let rec = full.cell_values(sizes, cell);
        out[q.cell_of_record(sizes, &rec).unwrap()] += p;
    }
    out
}

/// The normalised joint `∝ exp Σ θ_C` by enumeration.
fn brute_joint(sizes: &[usize], factors: &[(Clique, Vec<f64>)]) -> Vec<f64> {
    let full = Clique::new(0..sizes.len()).unwrap();
    let n = full.cells(sizes).unwrap();
    let mut lj: Vec<f64> = (0..n)
        .map(|cell| {
            let rec = full.cell_values(sizes, cell);
            factors
                .iter()
                .map(|(c, t)| t[c.cell_of_record(sizes, &rec).unwrap()])
                .sum()
        })
        .collect();
    let z = factor::logsumexp(&lj);
    lj.iter_mut().for_each(|x| *x = (*x - z).exp());
    lj
}

fn random_factors<R: Rng>(
    sizes: &[usize],
    cliques: &[Clique],
    rng: &mut R,
) -> Vec<(Clique, Vec<f64>)> {
    cliques
        .iter()
        .map(|c| {
            let n = c.cells(sizes).unwrap();
            (c.clone(), (0..n).map(|_| 3.0 * (unif(rng) - 0.5)).collect())
        })
        .collect()
}

fn subsets(d: usize, k: usize) -> Vec<Clique> {
    (0u32..1 << d)
        .filter(|m| m.count_ones() as usize <= k)
        .map(|m| Clique::new((0..d).filter(|i| m >> i & 1 == 1)).unwrap())
        .collect()
}

/// Checks the running-intersection property and coverage of a junction tree.
fn check_tree(tree: &JunctionTree, cliques: &[Clique]) {
    let cs = tree.cliques();
    for c in cliques {
        assert!(tree.containing(c).is_some(), "{c} not covered");
    }
    for a in 0..tree.sizes().len() {
        let holders: Vec<usize> = (0..cs.len()).filter(|&i| cs[i].contains(a)).collect();
        assert!(!holders.is_empty());
        // The holders form a connected subtree: exactly one has a parent without a.
        let tops = holders
            .iter()
            .filter(|&&i| tree.parent(i).is_none_or(|p| !cs[p].contains(a)))
            .count();
        assert_eq!(tops, 1, "attribute {a} is not in a connected subtree");
    }
}

/// The fit's inner-loop calibration (no log-beliefs) gives the same probability
/// tables and `ln Z`, bit for bit, as the full one (`lin`, `log_z`).
fn assert_same_linear(tree: &JunctionTree, theta: &[Vec<f64>], lin: &[Vec<f64>], log_z: f64) {
    let mut bp = BeliefPropagation::new(tree).unwrap();
    let mut scratch = vec![Vec::new(); theta.len()];
    let mut fast = vec![Vec::new(); theta.len()];
    // As in a fit: the buffers have held another point's tables before.
    let other: Vec<Vec<f64>> = theta
        .iter()
        .map(|t| t.iter().map(|x| 2.0 * x).collect())
        .collect();
    bp.calibrate(tree, &other, &mut scratch, &mut fast, false);
    let fast_z = bp.calibrate(tree, theta, &mut scratch, &mut fast, false);
    assert_eq!(fast_z.to_bits(), log_z.to_bits());
    for (a, b) in fast.iter().zip(lin) {
        assert!(
            a.iter()
                .map(|x| x.to_bits())
                .eq(b.iter().map(|x| x.to_bits()))
        );
    }
}

/// A tree of one clique: the inner-loop calibration reads `theta` directly.
#[test]
fn one_clique_calibrates_the_same_without_log_beliefs() {
    let sizes = [3, 2, 4];
    let mut rng = seeded_rng(11);
    let all = Clique::new(0..3).unwrap();
    let tree = JunctionTree::new(&sizes, std::slice::from_ref(&all)).unwrap();
    assert_eq!(tree.cliques().len(), 1);
    let theta = vec![
        (0..24)
            .map(|_| 3.0 * (unif(&mut rng) - 0.5))
            .collect::<Vec<f64>>(),
    ];
    let mut bp = BeliefPropagation::new(&tree).unwrap();
    let (mut beliefs, mut lin) = (vec![Vec::new()], vec![Vec::new()]);
    let log_z = bp.calibrate(&tree, &theta, &mut beliefs, &mut lin, true);
    let z: f64 = theta[0].iter().map(|t| t.exp()).sum();
    assert!((log_z - z.ln()).abs() < 1e-12);
    assert_same_linear(&tree, &theta, &lin, log_z);
}

fn check_inference(sizes: &[usize], cliques: &[Clique], seed: u64) {
    let mut rng = seeded_rng(seed);
    let factors = random_factors(sizes, cliques, &mut rng);
    let joint = brute_joint(sizes, &factors);
    let tree = JunctionTree::new(sizes, cliques).unwrap();
    check_tree(&tree, cliques);
    let mut theta: Vec<Vec<f64>> = tree
        .cliques()
        .iter()
        .map(|c| vec![0.0; c.cells(sizes).unwrap()])
        .collect();
    for (c, t) in &factors {
        let k = tree.containing(c).unwrap();
        Projection::new(sizes, &tree.cliques()[k], c)
            .unwrap()
            .broadcast_add(&mut theta[k], t, 1.0);
    }
    let mut bp = BeliefPropagation::new(&tree).unwrap();
    let mut beliefs = vec![Vec::new(); theta.len()];
    let mut lin = vec![Vec::new(); theta.len()];
    let log_z = bp.calibrate(&tree, &theta, &mut beliefs, &mut lin, true);
    assert_same_linear(&tree, &theta, &lin, log_z);
    for (c, l) in tree.cliques().iter().zip(&lin) {
        let want = brute_marginal(sizes, &joint, c);
        for (g, w) in l.iter().zip(&want) {
            assert!((g - w).abs() < 1e-9);
        }
    }
    let d = sizes.len();
    let mut beyond = 0;
    for q in subsets(d, d.min(4)) {
        if tree.containing(&q).is_none() {
            beyond += 1;
        }
        let got = marginal(&tree, &beliefs, &q).unwrap();
        let want = brute_marginal(sizes, &joint, &q);
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < 1e-9, "marginal {q}: {g} vs {w}");
        }
    }
    assert!(
        beyond > 0,
        "no query beyond a single tree clique was tested"
    );
}

#[test]
fn clique_is_sorted_and_validated() {
    assert_eq!(cl(&[3, 1]).attributes(), &[1, 3]);
    assert_eq!(Clique::new([1, 1]), Err(SynthError::DuplicateAttribute(1)));
    assert_eq!(
        cl(&[0, 5]).cells(&[2, 2]),
        Err(SynthError::AttributeOutOfRange {
            attribute: 5,
            attributes: 2
        })
    );
    assert_eq!(
        cl(&[0, 1]).cells(&[usize::MAX, 2]),
        Err(SynthError::TooManyCells)
    );
    let sizes = [3, 4, 5];
    let c = cl(&[0, 2]);
    for cell in 0..15 {
        assert_eq!(
            c.cell_index(&sizes, &c.cell_values(&sizes, cell)).unwrap(),
            cell
        );
    }
}

#[test]
fn projections_match_brute_force() {
    let sizes = [2, 3, 1, 4, 2];
    let mut rng = seeded_rng(7);
    let big = Clique::new(0..5).unwrap();
    let vals: Vec<f64> = (0..48).map(|_| unif(&mut rng)).collect();
    let f = Factor::new(&sizes, big.clone(), vals.clone()).unwrap();
    for q in subsets(5, 5) {
        let m = f.marginalize(&sizes, &q).unwrap();
        assert_eq!(m.values().len(), q.cells(&sizes).unwrap());
        let want = brute_marginal(&sizes, &vals, &q);
        for (a, b) in m.values().iter().zip(&want) {
            assert!((a - b).abs() < 1e-12);
        }
        let lf = Factor::new(&sizes, big.clone(), vals.iter().map(|x| x.ln()).collect()).unwrap();
        let lm = lf.log_marginalize(&sizes, &q).unwrap();
        for (a, b) in lm.values().iter().zip(&want) {
            assert!((a.exp() - b).abs() < 1e-12);
        }
        // Broadcast is the transpose of the sum.
        let small: Vec<f64> = (0..want.len()).map(|_| unif(&mut rng)).collect();
        let mut g = Factor::constant(&sizes, big.clone(), 0.0).unwrap();
        g.add_scaled(
            &sizes,
            &Factor::new(&sizes, q.clone(), small.clone()).unwrap(),
            2.0,
        )
        .unwrap();
        let lhs: f64 = g.values().iter().zip(&vals).map(|(a, b)| a * b).sum();
        let rhs: f64 = 2.0 * small.iter().zip(&want).map(|(a, b)| a * b).sum::<f64>();
        assert!((lhs - rhs).abs() < 1e-12);
    }
    assert_eq!(
        Projection::new(&sizes, &cl(&[0]), &cl(&[1])).err(),
        Some(SynthError::NotASubset)
    );
}

#[test]
fn marginal_plan_matches_direct_projections() {
    check_plan(&[2, 3, 2, 2, 3, 2], 3);
    // Tables past `PARALLEL_CELLS`: the passes from the big table run as tasks
    // and the broadcasts into it in blocks; with 3-value attributes outermost
    // (blocks of 2¹³ cells) and interleaved (blocks a multiple of every run).
    let mut outer3 = vec![3, 3];
    outer3.extend([2; 14]);
    check_plan(&outer3, 4);
    check_plan(&[2, 3, 2, 2, 3, 2, 2, 2, 3, 2, 2, 2, 2, 2], 5);
}

fn check_plan(sizes: &[usize], seed: u64) {
    let big = Clique::new(0..sizes.len()).unwrap();
    let mut rng = seeded_rng(seed);
    let vals: Vec<f64> = (0..big.cells(sizes).unwrap())
        .map(|_| unif(&mut rng))
        .collect();
    // 17 targets of up to three attributes spread over every attribute (so the
    // plan makes several passes from the big table).
    let d = sizes.len();
    let targets: Vec<Clique> = (0..17)
        .map(|t| {
            let set: std::collections::BTreeSet<usize> =
                [t % d, (5 * t + 2) % d, (7 * t + 4) % d].into();
            Clique::new(set).unwrap()
        })
        .collect();
    let mut plan = MarginalPlan::new(sizes, &big, &targets).unwrap();
    assert!(
        plan.roots() >= 2,
        "{} passes from the big table",
        plan.roots()
    );
    plan.marginalize(&vals);
    let grads: Vec<Vec<f64>> = targets
        .iter()
        .map(|t| {
            (0..t.cells(sizes).unwrap())
                .map(|_| unif(&mut rng))
                .collect()
        })
        .collect();
    let mut want_b = vec![0.0; vals.len()];
    for (t, tq) in targets.iter().enumerate() {
        let want = brute_marginal(sizes, &vals, tq);
        for (a, b) in plan.target(t).iter().zip(&want) {
            assert!((a - b).abs() < 1e-12 * (1.0 + b.abs()), "{a} vs {b}");
        }
        Projection::new(sizes, &big, tq)
            .unwrap()
            .broadcast_add(&mut want_b, &grads[t], 0.5);
    }
    let mut got_b = vec![0.0; vals.len()];
    let refs: Vec<&[f64]> = grads.iter().map(|g| g.as_slice()).collect();
    plan.broadcast_add(&mut got_b, &refs, 0.5);
    for (a, b) in got_b.iter().zip(&want_b) {
        assert!((a - b).abs() < 1e-12 * (1.0 + b.abs()), "{a} vs {b}");
    }
}

#[test]
fn inference_on_a_chain_matches_brute_force() {
    let sizes = [2, 3, 2, 4, 3, 2];
    let cliques: Vec<Clique> = (0..5).map(|i| cl(&[i, i + 1])).collect();
    check_inference(&sizes, &cliques, 1);
}

#[test]
fn a_marginal_across_a_nearly_impossible_separator_value_is_finite() {
    // A–B–C with P(B = 1) = e^-800: a reciprocal of the separator marginal would
    // underflow to 0 · ∞; the conditionals μ_BC / μ_B never do. A and C take three
    // values (so the two tables, 12 cells, stay smaller than the 18-cell universe):
    // P(A, C) = 1/9 each.
    let sizes = [3, 2, 3];
    let tree = JunctionTree::new(&sizes, &[cl(&[0, 1]), cl(&[1, 2])]).unwrap();
    assert_eq!(tree.cliques().len(), 2);
    let third = (1.0f64 / 3.0).ln();
    let beliefs: Vec<Vec<f64>> = tree
        .cliques()
        .iter()
        .map(|c| {
            // Cells with the last attribute fastest; B is attribute 1.
            let b_first = c.attributes()[0] == 1;
            (0..6)
                .map(|i| {
                    let b = if b_first { i / 3 } else { i % 2 };
                    third - 800.0 * b as f64
                })
                .collect()
        })
        .collect();
    let got = marginal(&tree, &beliefs, &cl(&[0, 2])).unwrap();
    for g in got {
        assert!((g - 1.0 / 9.0).abs() < 1e-9, "{g}");
    }
}

#[test]
fn inference_on_a_tree_matches_brute_force() {
    let sizes = [3, 2, 2, 3, 2, 2, 2];
    let cliques = [
        cl(&[0, 1]),
        cl(&[0, 2, 3]),
        cl(&[3, 4]),
        cl(&[3, 5]),
        cl(&[1, 6]),
    ];
    check_inference(&sizes, &cliques, 2);
}

#[test]
fn inference_on_loopy_cliques_made_chordal_matches_brute_force() {
    let sizes = [2, 3, 2, 2, 3, 2, 2];
    // A 5-cycle, a triangle and an uncovered attribute (6).
    let cliques = [
        cl(&[0, 1]),
        cl(&[1, 2]),
        cl(&[2, 3]),
        cl(&[3, 4]),
        cl(&[0, 4]),
        cl(&[1, 3, 5]),
    ];
    check_inference(&sizes, &cliques, 3);
    check_inference(
        &[2; 7],
        &[
            cl(&[0, 1, 2]),
            cl(&[2, 3, 4]),
            cl(&[4, 5, 0]),
            cl(&[1, 3, 5]),
        ],
        4,
    );
}

/// A 4-cycle needs one chord, and which one the greedy triangulation adds depends
/// on the sizes: a tree over compressed sizes ordered by the original ones has the
/// original tree's cliques, so expanded back it has exactly the cells
/// [`model_cells`] prices at the original sizes (ordered by its own sizes it would
/// have 600 cells there instead of 180).
#[test]
fn a_tree_ordered_by_the_original_sizes_has_the_priced_cells() {
    let cycle = [cl(&[0, 1]), cl(&[1, 2]), cl(&[2, 3]), cl(&[0, 3])];
    let (original, compressed) = ([10, 3, 10, 3], [2, 3, 2, 3]);
    let priced = JunctionTree::new(&original, &cycle).unwrap();
    assert_eq!(priced.cliques(), &[cl(&[0, 1, 3]), cl(&[1, 2, 3])]);
    assert_eq!(model_cells(&original, &cycle).unwrap(), 180);
    let ordered = JunctionTree::ordered_by(&original, &compressed, &cycle).unwrap();
    check_tree(&ordered, &cycle);
    assert_eq!(ordered.cliques(), priced.cliques());
    assert_eq!(ordered.resized(&original).unwrap().cells(), 180);
    let own = JunctionTree::new(&compressed, &cycle).unwrap();
    assert_eq!(own.resized(&original).unwrap().cells(), 600);
    assert!(matches!(
        JunctionTree::ordered_by(&original[..3], &compressed, &cycle),
        Err(SynthError::InvalidDomain(_))
    ));
    // The fit builds the ordered tree when asked to.
    let ms: Vec<Measurement> = cycle
        .iter()
        .map(|c| Measurement::new(c.clone(), vec![1.0; c.cells(&compressed).unwrap()], 1.0))
        .collect::<Result<_, _>>()
        .unwrap();
    let options = FitOptions {
        iterations: 2,
        order_sizes: Some(&original),
        ..FitOptions::default()
    };
    let model = fit(&compressed, &ms, Total::Estimated, &options).unwrap();
    assert_eq!(model.cliques(), priced.cliques());
}

/// A refit on cliques the warm start covers keeps its tree when re-triangulating
/// would grow it: the path s1 – a – v – b – s2 triangulated with v eliminated first
/// gains the fill a – b (70 cells instead of 40 at these sizes).
#[test]
fn a_refit_on_covered_cliques_never_outgrows_its_warm_start() {
    let path = [cl(&[0, 1]), cl(&[1, 2]), cl(&[2, 3]), cl(&[3, 4])];
    let sizes = [2, 5, 2, 5, 2];
    let (no_fill, fill) = ([2, 2, 1000, 2, 2], [1000, 2, 2, 2, 1000]);
    let ms: Vec<Measurement> = path
        .iter()
        .map(|c| Measurement::new(c.clone(), vec![1.0; c.cells(&sizes).unwrap()], 1.0))
        .collect::<Result<_, _>>()
        .unwrap();
    let fit_with = |order: &[usize], warm: Option<&Model>| {
        let options = FitOptions {
            iterations: 2,
            order_sizes: Some(order),
            warm_start: warm,
            ..FitOptions::default()
        };
        fit(&sizes, &ms, Total::Estimated, &options).unwrap()
    };
    let warm = fit_with(&no_fill, None);
    assert_eq!(warm.tree().cells(), 40);
    assert_eq!(
        JunctionTree::ordered_by(&fill, &sizes, warm.cliques())
            .unwrap()
            .cells(),
        70
    );
    let refit = fit_with(&fill, Some(&warm));
    assert_eq!(refit.cliques(), warm.cliques());
    assert_eq!(refit.tree().cells(), 40);
}

#[test]
fn model_cells_is_the_sum_of_built_tables() {
    let mut rng = seeded_rng(11);
    for trial in 0..20 {
        let d = 6 + trial % 5;
        let sizes: Vec<usize> = (0..d).map(|_| 1 + (rng.next_u64() % 4) as usize).collect();
        let cliques: Vec<Clique> = (0..4 + trial % 6)
            .map(|_| {
                let mut v: Vec<usize> = (0..3)
                    .map(|_| (rng.next_u64() % d as u64) as usize)
                    .collect();
                v.sort();
                v.dedup();
                Clique::new(v).unwrap()
            })
            .collect();
        let tree = JunctionTree::new(&sizes, &cliques).unwrap();
        check_tree(&tree, &cliques);
        let built: usize = tree
            .cliques()
            .iter()
            .map(|c| {
                Factor::constant(&sizes, c.clone(), 0.0)
                    .unwrap()
                    .values()
                    .len()
            })
            .sum();
        assert_eq!(model_cells(&sizes, &cliques).unwrap(), built as u128);
        assert_eq!(tree.cells(), built as u128);
    }
    assert!(matches!(
        model_cells(&[], &[]),
        Err(SynthError::InvalidDomain(_))
    ));
    assert!(matches!(
        model_cells(&[2, 0], &[]),
        Err(SynthError::InvalidDomain(_))
    ));
    assert!(matches!(
        model_cells(&[2, 2], &[cl(&[0, 2])]),
        Err(SynthError::AttributeOutOfRange { .. })
    ));
}

/// A random joint over `sizes` (cells in full-clique order), not close to uniform.
fn random_joint<R: Rng>(sizes: &[usize], rng: &mut R) -> Vec<f64> {
    let n: usize = sizes.iter().product();
    let mut p: Vec<f64> = (0..n).map(|_| (2.0 * unif(rng)).exp()).collect();
    let s: f64 = p.iter().sum();
    p.iter_mut().for_each(|x| *x /= s);
    p
}

fn exact_measurements(
    sizes: &[usize],
    joint: &[f64],
    n: f64,
    cliques: &[Clique],
) -> Vec<Measurement> {
    cliques
        .iter()
        .map(|c| {
            let v = brute_marginal(sizes, joint, c)
                .into_iter()
                .map(|p| p * n)
                .collect();
            Measurement::new(c.clone(), v, 1.0).unwrap()
        })
        .collect()
}

fn noisy(ms: &[Measurement], sigma: f64, seed: u64) -> Vec<Measurement> {
    let mut rng = seeded_rng(seed);
    ms.iter()
        .map(|m| {
            let v = m
                .values
                .iter()
                .map(|&x| {
                    // Box–Muller: test noise only.
                    let (u1, u2) = (unif(&mut rng).max(1e-300), unif(&mut rng));
                    x + sigma * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
                })
                .collect();
            Measurement::new(m.clique.clone(), v, sigma).unwrap()
        })
        .collect()
}

#[test]
fn fit_reproduces_exact_marginals() {
    let sizes = [2, 3, 2, 2, 3];
    let mut rng = seeded_rng(21);
    let joint = random_joint(&sizes, &mut rng);
    let n = 1000.0;
    let cliques = [
        cl(&[0, 1]),
        cl(&[1, 2]),
        cl(&[2, 3]),
        cl(&[0, 3]),
        cl(&[3, 4]),
    ];
    let ms = exact_measurements(&sizes, &joint, n, &cliques);
    let opts = FitOptions {
        iterations: 20_000,
        tolerance: 1e-10,
        ..FitOptions::default()
    };
    let model = fit(&sizes, &ms, Total::Known(n), &opts).unwrap();
    for m in &ms {
        let got = model.marginal(&m.clique).unwrap();
        for (g, y) in got.iter().zip(&m.values) {
            assert!(
                (g - y).abs() / n < 1e-6,
                "{}: {g} vs {y} after {} steps",
                m.clique,
                model.iterations()
            );
        }
    }
    assert!(
        model.converged(),
        "gap {} after {} steps",
        model.gap(),
        model.iterations()
    );
    // The estimated total of exact measurements is n.
    let est = fit(
        &sizes,
        &ms,
        Total::Estimated,
        &FitOptions {
            iterations: 1,
            ..opts
        },
    )
    .unwrap();
    assert!((est.total() - n).abs() < 1e-9);
}

#[test]
fn fit_agrees_with_the_dense_estimator_on_noisy_measurements() {
    let sizes = [2, 3, 2, 2, 3, 2];
    let mut rng = seeded_rng(22);
    let joint = random_joint(&sizes, &mut rng);
    let n = 500.0;
    let cliques = [
        cl(&[0, 1, 2]),
        cl(&[2, 3]),
        cl(&[3, 4, 5]),
        cl(&[0, 5]),
        cl(&[1, 4]),
    ];
    let ms = noisy(&exact_measurements(&sizes, &joint, n, &cliques), 5.0, 1);
    let opts = FitOptions {
        iterations: 5000,
        tolerance: 1e-9,
        ..FitOptions::default()
    };
    let tree = fit(&sizes, &ms, Total::Estimated, &opts).unwrap();
    let dense = fit_dense(&sizes, &ms, Total::Estimated, &opts).unwrap();
    assert!(
        tree.converged(),
        "gap {} after {}",
        tree.gap(),
        tree.iterations()
    );
    assert!((tree.total() - dense.total()).abs() < 1e-9);
    assert!(
        (tree.loss() - dense.loss()).abs() < 1e-6 * dense.loss().max(1.0),
        "loss {} vs {}",
        tree.loss(),
        dense.loss()
    );
    for q in subsets(6, 3) {
        let (a, b) = (
            MarginalModel::marginal(&tree, &q).unwrap(),
            dense.marginal(&q).unwrap(),
        );
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() < 1e-3, "{q}: {x} vs {y}");
        }
    }
}

#[test]
fn warm_start_reaches_the_same_optimum_in_fewer_steps() {
    let sizes = [2, 3, 2, 2, 3, 2];
    let mut rng = seeded_rng(23);
    let joint = random_joint(&sizes, &mut rng);
    let n = 800.0;
    let first = [
        cl(&[0, 1]),
        cl(&[1, 2]),
        cl(&[2, 3]),
        cl(&[3, 4]),
        cl(&[4, 5]),
    ];
    let all: Vec<Clique> = first.iter().cloned().chain([cl(&[0, 2])]).collect();
    let ms = noisy(&exact_measurements(&sizes, &joint, n, &all), 3.0, 2);
    let opts = FitOptions {
        iterations: 5000,
        tolerance: 1e-6,
        ..FitOptions::default()
    };
    let before = fit(&sizes, &ms[..5], Total::Known(n), &opts).unwrap();
    let cold = fit(&sizes, &ms, Total::Known(n), &opts).unwrap();
    let warm = fit(
        &sizes,
        &ms,
        Total::Known(n),
        &FitOptions {
            warm_start: Some(&before),
            ..opts
        },
    )
    .unwrap();
    assert!(cold.converged() && warm.converged());
    assert!(
        warm.iterations() < cold.iterations(),
        "warm {} vs cold {}",
        warm.iterations(),
        cold.iterations()
    );
    assert!((warm.loss() - cold.loss()).abs() < 1e-4 * cold.loss().max(1.0));
    for q in subsets(6, 2) {
        for (x, y) in warm
            .marginal(&q)
            .unwrap()
            .iter()
            .zip(&cold.marginal(&q).unwrap())
        {
            assert!((x - y).abs() < 1e-2, "{q}: {x} vs {y}");
        }
    }
}

#[test]
fn fit_errors_are_typed() {
    let sizes = [2, 2];
    let ok = Measurement::new(cl(&[0]), vec![1.0, 2.0], 1.0).unwrap();
    let o = FitOptions::default();
    assert_eq!(
        Measurement::new(cl(&[0]), vec![1.0, 2.0], 0.0),
        Err(SynthError::InvalidSigma {
            index: 0,
            sigma: 0.0
        })
    );
    assert!(matches!(
        Measurement::new(cl(&[0]), vec![1.0, 2.0], f64::NAN),
        Err(SynthError::InvalidSigma { .. })
    ));
    assert_eq!(
        Measurement::new(cl(&[0]), vec![f64::NAN, 2.0], 1.0),
        Err(SynthError::NonFiniteValue { index: 0 })
    );
    for k in [vec![1.0], vec![1.0, 0.5], vec![1.0, f64::NAN]] {
        assert_eq!(
            Measurement::with_cell_variance(cl(&[0]), vec![1.0, 2.0], 1.0, k),
            Err(SynthError::InvalidCellVariance { index: 0 })
        );
    }
    let short = Measurement {
        values: vec![1.0],
        ..ok.clone()
    };
    assert_eq!(
        fit(&sizes, &[ok.clone(), short], Total::Estimated, &o).err(),
        Some(SynthError::MeasurementLength {
            index: 1,
            expected: 2,
            got: 1
        })
    );
    assert_eq!(
        fit(&sizes, &[], Total::Estimated, &o).err(),
        Some(SynthError::NoMeasurements)
    );
    for stall in [-1e-4, f64::NAN, f64::INFINITY] {
        let o = FitOptions { stall, ..o };
        assert!(matches!(
            fit(&sizes, std::slice::from_ref(&ok), Total::Estimated, &o),
            Err(SynthError::InvalidOption(_))
        ));
    }
    assert_eq!(
        fit(&sizes, std::slice::from_ref(&ok), Total::Known(0.0), &o).err(),
        Some(SynthError::InvalidTotal(0.0))
    );
    let big = Measurement::new(cl(&[0, 1]), vec![0.0; 4], 1.0).unwrap();
    assert_eq!(
        fit(
            &sizes,
            &[big],
            Total::Known(1.0),
            &FitOptions { max_cells: 3, ..o }
        )
        .err(),
        Some(SynthError::ModelTooLarge { cells: 4, cap: 3 })
    );
    let out = Measurement::new(cl(&[2]), vec![0.0; 2], 1.0).unwrap();
    assert_eq!(
        fit(&sizes, &[out], Total::Known(1.0), &o).err(),
        Some(SynthError::AttributeOutOfRange {
            attribute: 2,
            attributes: 2
        })
    );
    let m = fit(&sizes, std::slice::from_ref(&ok), Total::Known(3.0), &o).unwrap();
    assert_eq!(
        fit(
            &[2, 2, 2],
            &[ok],
            Total::Known(3.0),
            &FitOptions {
                warm_start: Some(&m),
                ..o
            }
        )
        .err(),
        Some(SynthError::WarmStartMismatch)
    );
}

fn empirical(sizes: &[usize], rows: &[Vec<usize>], q: &Clique) -> Vec<f64> {
    let mut out = vec![0.0; q.cells(sizes).unwrap()];
    for r in rows {
        out[q.cell_of_record(sizes, r).unwrap()] += 1.0;
    }
    out
}

fn sampling_model() -> (Vec<usize>, Model) {
    let sizes = vec![2, 3, 2, 2, 3, 2];
    let mut rng = seeded_rng(31);
    let joint = random_joint(&sizes, &mut rng);
    let cliques = [
        cl(&[0, 1, 2]),
        cl(&[2, 3]),
        cl(&[3, 4]),
        cl(&[1, 5]),
        cl(&[0, 4]),
    ];
    let ms = exact_measurements(&sizes, &joint, 1000.0, &cliques);
    let model = fit(&sizes, &ms, Total::Known(1000.0), &FitOptions::default()).unwrap();
    (sizes, model)
}

#[test]
fn forward_sampling_matches_the_model_marginals() {
    let (sizes, model) = sampling_model();
    let n = 100_000;
    let rows = model.sample_rows(n, &mut seeded_rng(5)).unwrap();
    assert_eq!(rows.len(), n);
    // Every 1-, 2- and 3-way marginal within 5 standard errors per cell, and a
    // chi-square statistic per marginal below its 0.9999 quantile bound
    // (df + 4√(2·df) + 10 is safely above it for these df).
    for q in subsets(6, 3) {
        let p: Vec<f64> = model
            .marginal(&q)
            .unwrap()
            .iter()
            .map(|x| x / model.total())
            .collect();
        let e = empirical(&sizes, &rows, &q);
        let mut chi2 = 0.0;
        for (&pi, &ei) in p.iter().zip(&e) {
            let se = (pi * (1.0 - pi) / n as f64).max(0.0).sqrt();
            assert!(
                (ei / n as f64 - pi).abs() <= 5.0 * se + 1e-9,
                "{q}: {ei} {pi}"
            );
            if pi > 0.0 {
                chi2 += (ei - n as f64 * pi).powi(2) / (n as f64 * pi);
            }
        }
        let df = (p.len() - 1) as f64;
        assert!(
            chi2 <= df + 4.0 * (2.0 * df).sqrt() + 10.0,
            "{q}: chi2 {chi2} df {df}"
        );
    }
}

#[test]
fn rounded_sampling_keeps_the_model_counts() {
    let (sizes, model) = sampling_model();
    for n in [1000, 997, 20] {
        let rows = model.sample_rows_rounded(n, &mut seeded_rng(6)).unwrap();
        assert_eq!(rows.len(), n);
        // The root clique: every cell within 1 of the model's count.
        let root = &model.cliques()[model.tree().order()[0]];
        let want: Vec<f64> = model
            .marginal(root)
            .unwrap()
            .iter()
            .map(|x| x * n as f64 / model.total())
            .collect();
        let got = empirical(&sizes, &rows, root);
        let l1: f64 = got.iter().zip(&want).map(|(g, w)| (g - w).abs()).sum();
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < 1.0, "{root}: {g} vs {w}");
        }
        assert!(l1 / n as f64 <= want.len() as f64 / n as f64);
    }
    // Far closer than i.i.d. sampling on every junction-tree clique.
    let n = 1000;
    let rounded = model.sample_rows_rounded(n, &mut seeded_rng(7)).unwrap();
    let iid = model.sample_rows(n, &mut seeded_rng(7)).unwrap();
    let tv = |rows: &[Vec<usize>], q: &Clique| -> f64 {
        let m = model.marginal(q).unwrap();
        let e = empirical(&sizes, rows, q);
        0.5 * m
            .iter()
            .zip(&e)
            .map(|(a, b)| (a / model.total() - b / n as f64).abs())
            .sum::<f64>()
    };
    let (tr, ti): (f64, f64) = model
        .cliques()
        .iter()
        .map(|q| (tv(&rounded, q), tv(&iid, q)))
        .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
    assert!(tr < 0.5 * ti, "rounded TV {tr} vs i.i.d. {ti}");
}

/// Timing probe on an NLTCS-shaped input (run with `--ignored --nocapture`).
#[test]
#[ignore]
fn timing_probe() {
    let mut rng = seeded_rng(1);
    let sizes = vec![2usize; 16];
    let nltcs =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/nltcs.csv");
    let real: Option<Vec<Vec<usize>>> = std::fs::read_to_string(nltcs).ok().map(|t| {
        t.lines()
            .skip(1)
            .map(|l| l.split(',').map(|v| v.trim().parse().unwrap()).collect())
            .collect()
    });
    let rows: Vec<Vec<usize>> = real.unwrap_or_else(|| {
        (0..21_574)
            .map(|_| {
                let mut r = vec![0usize; 16];
                for i in 0..16 {
                    let p = if i > 0 && r[i - 1] == 1 { 0.7 } else { 0.2 };
                    r[i] = usize::from(unif(&mut rng) < p);
                }
                r
            })
            .collect()
    });
    let mut cliques: Vec<Clique> = Vec::new();
    while cliques.len() < 40 {
        let mut v: Vec<usize> = (0..3).map(|_| (rng.next_u64() % 16) as usize).collect();
        v.sort();
        v.dedup();
        if v.len() == 3 && !cliques.contains(&cl(&v)) {
            cliques.push(cl(&v));
        }
    }
    let ms: Vec<Measurement> = cliques
        .iter()
        .map(|c| {
            let mut v = vec![0.0; c.cells(&sizes).unwrap()];
            for r in &rows {
                v[c.cell_of_record(&sizes, r).unwrap()] += 1.0;
            }
            Measurement::new(c.clone(), v, 10.0).unwrap()
        })
        .collect();
    let ms = noisy(&ms, 10.0, 3);
    for iterations in [250, 1000, 4000] {
        let t = std::time::Instant::now();
        let m = fit(
            &sizes,
            &ms,
            Total::Estimated,
            &FitOptions {
                iterations,
                ..FitOptions::default()
            },
        )
        .unwrap();
        let tv: f64 = cliques
            .iter()
            .zip(&ms)
            .map(|(c, y)| {
                let truth: Vec<f64> = {
                    let mut v = vec![0.0; c.cells(&sizes).unwrap()];
                    for r in &rows {
                        v[c.cell_of_record(&sizes, r).unwrap()] += 1.0;
                    }
                    v
                };
                let got = m.marginal(c).unwrap();
                let _ = y;
                0.5 * truth
                    .iter()
                    .zip(&got)
                    .map(|(a, b)| (a - b).abs())
                    .sum::<f64>()
                    / rows.len() as f64
            })
            .sum::<f64>()
            / cliques.len() as f64;
        eprintln!("mean TV on measured 3-way {tv:.5}");
        eprintln!(
            "{:?}: {} cells, {} steps, {} evaluations, loss {}, gap {}",
            t.elapsed(),
            m.cells(),
            m.iterations(),
            m.evaluations(),
            m.loss(),
            m.gap()
        );
    }
}

#[test]
fn estimated_total_weights_sums_by_their_cell_variances() {
    // Sums 100 (variance 2σ²) and 200 (cells of variance σ² and 3σ²: 4σ²):
    // inverse-variance mean (100/2 + 200/4) / (1/2 + 1/4) = 133.3 (150 if both
    // counted as 2σ²).
    let a = Measurement::new(cl(&[0]), vec![50.0, 50.0], 1.0).unwrap();
    let b =
        Measurement::with_cell_variance(cl(&[0]), vec![120.0, 80.0], 1.0, vec![1.0, 3.0]).unwrap();
    let model = fit(&[2], &[a, b], Total::Estimated, &FitOptions::default()).unwrap();
    assert!(
        (model.total() - 400.0 / 3.0).abs() < 1e-9,
        "{}",
        model.total()
    );
}

/// A grouped measurement is fitted as the linear query it is: the model's cells of
/// a group sum to the group's value, and the split inside a group follows the
/// other measurements.
#[test]
fn a_grouped_measurement_fits_its_groups_sums() {
    let sizes = [4, 2];
    // Attribute 0's values {0, 1} and {2, 3} grouped, attribute 1 kept: 4 groups.
    let groups = vec![0, 1, 0, 1, 2, 3, 2, 3];
    let coarse =
        Measurement::grouped(cl(&[0, 1]), vec![40.0, 10.0, 10.0, 40.0], 0.5, groups).unwrap();
    // The one-way of attribute 0 splits each group 3 : 1 and 1 : 3.
    let one = Measurement::new(cl(&[0]), vec![37.5, 12.5, 12.5, 37.5], 0.5).unwrap();
    let o = FitOptions {
        iterations: 3000,
        ..FitOptions::default()
    };
    let model = fit(&sizes, &[coarse, one], Total::Known(100.0), &o).unwrap();
    let m = model.marginal(&cl(&[0, 1])).unwrap();
    let sum = |cells: &[usize]| cells.iter().map(|&j| m[j]).sum::<f64>();
    for (cells, want) in [
        (&[0, 2][..], 40.0),
        (&[1, 3][..], 10.0),
        (&[4, 6][..], 10.0),
        (&[5, 7][..], 40.0),
    ] {
        assert!((sum(cells) - want).abs() < 0.1, "{m:?}");
    }
    let a = model.marginal(&cl(&[0])).unwrap();
    assert!(
        (a[0] - 37.5).abs() < 0.1 && (a[3] - 37.5).abs() < 0.1,
        "{a:?}"
    );
    // A map of the wrong length, or onto a group with no value, is refused.
    let short = Measurement::grouped(cl(&[0, 1]), vec![1.0; 4], 1.0, vec![0; 7]).unwrap();
    assert_eq!(
        fit(&sizes, &[short], Total::Known(1.0), &o).err(),
        Some(SynthError::InvalidGroups { index: 0 })
    );
    assert_eq!(
        Measurement::grouped(cl(&[0, 1]), vec![1.0; 4], 1.0, vec![4; 8]).err(),
        Some(SynthError::InvalidGroups { index: 0 })
    );
    // The dense fit takes whole marginals only.
    let g = Measurement::grouped(cl(&[0, 1]), vec![1.0; 4], 1.0, vec![0, 1, 0, 1, 2, 3, 2, 3]);
    assert!(fit_dense(&sizes, &[g.unwrap()], Total::Known(1.0), &o).is_err());
}

/// `from_uniform` starts the fit at the uniform model whatever the warm start's
/// potentials; without it the fit starts at the warm start's distribution. With
/// no step taken, each fit is its starting point.
#[test]
fn a_fit_from_uniform_starts_at_the_uniform_model() {
    let sizes = [2, 3, 2];
    let mut rng = seeded_rng(23);
    let joint = random_joint(&sizes, &mut rng);
    let n = 600.0;
    let ms = exact_measurements(&sizes, &joint, n, &[cl(&[0, 1]), cl(&[1, 2])]);
    let opts = FitOptions {
        iterations: 2000,
        ..FitOptions::default()
    };
    let warm = fit(&sizes, &ms, Total::Known(n), &opts).unwrap();
    let start = |from_uniform: bool| {
        let o = FitOptions {
            iterations: 0,
            warm_start: Some(&warm),
            from_uniform,
            ..FitOptions::default()
        };
        fit(&sizes, &ms, Total::Known(n), &o).unwrap()
    };
    let (uniform, kept) = (start(true), start(false));
    // Only the potentials differ: the warm start's cliques are kept.
    assert_eq!(uniform.cliques(), kept.cliques());
    for c in [cl(&[0, 1]), cl(&[1, 2]), cl(&[0, 2])] {
        let cells = c.cells(&sizes).unwrap() as f64;
        for (u, (k, w)) in uniform.marginal(&c).unwrap().iter().zip(
            kept.marginal(&c)
                .unwrap()
                .iter()
                .zip(&warm.marginal(&c).unwrap()),
        ) {
            assert!((u - n / cells).abs() < 1e-9, "{c}: {u} is not uniform");
            assert!((k - w).abs() < 1e-9, "{c}: {k} is not the warm start's {w}");
        }
    }
    // The warm start is far from uniform, so the test tells the two apart.
    let w = warm.marginal(&cl(&[0, 1])).unwrap();
    assert!(w.iter().any(|&x| (x - n / 6.0).abs() > 10.0));
}

/// A model fitted to the exact marginals of a random joint over five attributes
/// (sizes 2, 3, 2, 2, 3; n = 1000) on the chain of pairs; the chain, and the
/// generator for more draws.
fn chain_model(seed: u64) -> (Model, [Clique; 4], rand_chacha::ChaCha12Rng) {
    let sizes = [2, 3, 2, 2, 3];
    let mut rng = seeded_rng(seed);
    let joint = random_joint(&sizes, &mut rng);
    let cliques = [cl(&[0, 1]), cl(&[1, 2]), cl(&[2, 3]), cl(&[3, 4])];
    let ms = exact_measurements(&sizes, &joint, 1000.0, &cliques);
    let model = fit(&sizes, &ms, Total::Known(1000.0), &FitOptions::default()).unwrap();
    (model, cliques, rng)
}

/// A model's marginals read from its kept probability tables are bit-identical
/// to those from tables exponentiated afresh: queries inside one clique and
/// across cliques, repeated after other cliques' tables were made, and on a
/// model expanded (compression) after it was queried.
#[test]
fn kept_probability_tables_change_no_marginal() {
    use super::compress::Compression;
    let (model, cliques, mut rng) = chain_model(22);
    let n = model.total();
    let fresh = |m: &Model, q: &Clique| -> Vec<f64> {
        marginal(m.tree(), m.log_marginals(), q)
            .unwrap()
            .iter()
            .map(|p| p * m.total())
            .collect()
    };
    let queries = [
        cl(&[1]),
        cl(&[0, 1]),
        cl(&[0, 4]),
        cl(&[2, 3]),
        cl(&[1, 3, 4]),
        cl(&[0, 1]),
        cl(&[3, 4]),
        cl(&[4]),
    ];
    for _ in 0..2 {
        for q in &queries {
            assert_eq!(model.marginal(q).unwrap(), fresh(&model, q), "{q}");
        }
    }
    // Attribute 4 (3 values): values 0 and 2 merged.
    let c = Compression::from_noisy(
        &[
            vec![500.0, 500.0],
            vec![300.0, 300.0, 400.0],
            vec![500.0, 500.0],
            vec![500.0, 500.0],
            vec![1.0, 990.0, 2.0],
        ],
        &[10.0; 5],
    );
    let small = fit(
        c.sizes(),
        &exact_measurements(c.sizes(), &random_joint(c.sizes(), &mut rng), n, &cliques),
        Total::Known(n),
        &FitOptions::default(),
    )
    .unwrap();
    for q in &queries {
        small.marginal(q).unwrap();
    }
    assert_eq!(c.sizes(), &[2, 3, 2, 2, 2]);
    let big = c.expand(&small).unwrap();
    for q in &queries {
        assert_eq!(big.marginal(q).unwrap(), fresh(&big, q), "{q} expanded");
    }
}

#[test]
fn batched_marginals_match_single_queries() {
    let (model, _, _) = chain_model(23);
    let n = model.total();
    assert_eq!(model.cliques().len(), 4);
    // Inside one table (several per table, one the whole table), across tables,
    // and a repeat.
    let queries = [
        cl(&[0]),
        cl(&[0, 1]),
        cl(&[1]),
        cl(&[2, 3]),
        cl(&[3]),
        cl(&[0, 4]),
        cl(&[1, 3, 4]),
        cl(&[4]),
        cl(&[0, 1]),
    ];
    let refs: Vec<&Clique> = queries.iter().collect();
    let batch = model.marginals(&refs).unwrap();
    assert_eq!(batch.len(), queries.len());
    for (q, b) in queries.iter().zip(&batch) {
        let one = model.marginal(q).unwrap();
        assert_eq!(b.len(), one.len(), "{q}");
        for (x, y) in b.iter().zip(&one) {
            assert!((x - y).abs() <= 1e-12 * n, "{q}: {x} vs {y}");
        }
    }
    assert!(model.marginals(&[&cl(&[5])]).is_err());
}

#[test]
fn a_tree_as_large_as_the_universe_is_one_table() {
    let chain = [cl(&[0, 1]), cl(&[1, 2])];
    // Binary: two 4-cell tables against an 8-cell universe.
    let tree = JunctionTree::new(&[2, 2, 2], &chain).unwrap();
    assert_eq!(tree.cliques(), &[cl(&[0, 1, 2])]);
    assert_eq!(model_cells(&[2, 2, 2], &chain).unwrap(), 8);
    // Three values at the ends: 12 cells in two tables against 18.
    let tree = JunctionTree::new(&[3, 2, 3], &chain).unwrap();
    assert_eq!(tree.cliques().len(), 2);
    assert_eq!(model_cells(&[3, 2, 3], &chain).unwrap(), 12);
    // A compressed domain's tree follows the original sizes' rule either way.
    let compressed = JunctionTree::ordered_by(&[2, 2, 2], &[2, 1, 2], &chain).unwrap();
    assert_eq!(compressed.cliques(), &[cl(&[0, 1, 2])]);
    let compressed = JunctionTree::ordered_by(&[3, 2, 3], &[2, 2, 2], &chain).unwrap();
    assert_eq!(compressed.cliques().len(), 2);
    // A fit on the one table still matches what it measured.
    let sizes = [2, 2, 2];
    let mut rng = seeded_rng(24);
    let joint = random_joint(&sizes, &mut rng);
    let ms = exact_measurements(&sizes, &joint, 500.0, &chain);
    let model = fit(&sizes, &ms, Total::Known(500.0), &FitOptions::default()).unwrap();
    assert_eq!(model.cliques().len(), 1);
    for m in &ms {
        for (x, y) in model.marginal(&m.clique).unwrap().iter().zip(&m.values) {
            assert!((x - y).abs() < 1e-3, "{x} vs {y}");
        }
    }
}

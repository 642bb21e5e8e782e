//! Tests of NiKM (thesis Fig. 3.3): the level structure, the public subspace
//! decomposition, the accounting and the error.

use privq_core::Epsilon;
use privq_core::rand_core::Rng;
use proptest::prelude::*;

use super::*;
use crate::accountant::{Accountant, Cost};
use crate::contract::{Mechanism, Neighbours};
use crate::seeded_rng;

fn eps(num: u64, den: u64) -> Epsilon {
    Epsilon::new(num, den).unwrap()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// All level subspaces' vectors, in order.
fn all_vectors(mech: &Nikm) -> Vec<Vec<f64>> {
    mech.levels()
        .iter()
        .flat_map(|l| l.subspace().to_vec())
        .collect()
}

/// `[−1, 1] × δ·B₁^{d−1}`: columns `(1, ±δ eᵢ)`; one direction 1/δ times longer
/// than the others.
fn skewed(d: usize, delta: f64) -> Body {
    let n = 2 * (d - 1);
    let rows: Vec<Vec<f64>> = (0..d)
        .map(|i| {
            (0..n)
                .map(|j| match i {
                    0 => 1.0,
                    _ if j / 2 + 1 == i => {
                        if j % 2 == 0 {
                            delta
                        } else {
                            -delta
                        }
                    }
                    _ => 0.0,
                })
                .collect()
        })
        .collect();
    Body::from_rows(&rows).unwrap()
}

/// Mean of `‖v − Fx‖₂²` over `runs` releases.
fn mse<M: Mechanism<Input = [u64], Output = Vec<f64>>>(
    mech: &M,
    body: &Body,
    counts: &[u64],
    runs: usize,
    seed: u64,
) -> f64 {
    let truth = body
        .answer(&counts.iter().map(|&c| c as f64).collect::<Vec<_>>())
        .unwrap();
    let mut rng = seeded_rng(seed);
    let mut acct = Accountant::pure(eps(1_000_000, 1));
    acct.allow_uncertified();
    let mut total = 0.0;
    for _ in 0..runs {
        let v = mech.release(counts, &mut acct, &mut rng).unwrap();
        total += v
            .iter()
            .zip(&truth)
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>();
    }
    total / runs as f64
}

/// Asserts that the level subspaces are orthonormal and `d` vectors in all (so they
/// span ℝᵈ = range(F)), and that the level dimensions halve.
fn assert_decomposition(mech: &Nikm, d: usize) {
    let dims: Vec<usize> = mech.levels().iter().map(NikmLevel::dim).collect();
    assert_eq!(dims.len(), level_count(d));
    assert_eq!(dims.first(), Some(&d));
    assert_eq!(dims.last(), Some(&1));
    for w in dims.windows(2) {
        assert_eq!(w[1], w[0] / 2, "{dims:?}");
    }
    for l in mech.levels() {
        assert_eq!(l.subspace().len(), l.dim() - l.dim() / 2);
    }
    let vs = all_vectors(mech);
    assert_eq!(vs.len(), d);
    for (i, a) in vs.iter().enumerate() {
        for (j, b) in vs.iter().enumerate() {
            let want = if i == j { 1.0 } else { 0.0 };
            assert!(
                (dot(a, b) - want).abs() < 1e-9,
                "⟨v{i}, v{j}⟩ = {}",
                dot(a, b)
            );
        }
    }
}

#[test]
fn identity_levels_are_hand_checkable() {
    let e = eps(1, 1);
    for (d, levels, kept) in [
        (1, 1, vec![1]),
        (2, 2, vec![1, 1]),
        (3, 2, vec![2, 1]),
        (8, 4, vec![4, 2, 1, 1]),
        (9, 4, vec![5, 2, 1, 1]),
    ] {
        let mech = Nikm::new(
            Body::identity(d).unwrap(),
            Neighbours::AddRemove,
            e,
            NikmOptions::default(),
        )
        .unwrap();
        assert_eq!(mech.levels().len(), levels, "d = {d}");
        let sizes: Vec<usize> = mech.levels().iter().map(|l| l.subspace().len()).collect();
        assert_eq!(sizes, kept, "d = {d}");
        assert_decomposition(&mech, d);
        // Unif(B₁ᵈ) is isotropic: every level body is a cross-polytope on a subset of
        // the coordinates, each V_l spanned by standard basis vectors, and the levels
        // together use each coordinate once.
        let mut seen = vec![0; d];
        for l in mech.levels() {
            assert_eq!(l.km().body().shape(), Shape::CrossPolytope);
            assert_eq!(l.km().sampler(), Sampler::Exact);
            assert_eq!(l.scale(), 1.0);
            assert_eq!(
                l.km().cost(),
                Cost::Pure(e.checked_div_int(levels as u64).unwrap())
            );
            for v in l.subspace() {
                let i = v.iter().position(|a| a.abs() == 1.0).unwrap();
                assert_eq!(v.iter().filter(|a| **a != 0.0).count(), 1);
                seen[i] += 1;
            }
        }
        assert!(seen.iter().all(|&c| c == 1), "{seen:?}");
        // The levels' ε/L add up to ε exactly, charged once, as pure ε.
        assert_eq!(mech.cost(), Cost::Pure(e));
        let mut acct = Accountant::pure(e);
        let out = mech
            .release(&vec![3; d][..], &mut acct, &mut seeded_rng(1))
            .unwrap();
        assert_eq!(out.len(), d);
        assert_eq!(acct.spent_epsilon(), Some(e));
        assert_eq!(acct.ledger().len(), 1);
    }
}

/// F = I₈, exact at every level: the measured `E‖v − Fx‖₂²` matches the sum over the
/// levels of Thm 3.3.3's second moment, `θ_l²(d_l + 1)(d_l + 2)·|V_l|·2/((d_l + 1)(d_l + 2))`
/// = `2dθ_l²` with `θ_l = LΔ′/ε` (each coordinate's noise is a cross-polytope
/// coordinate at its level).
#[test]
fn identity_error_matches_the_per_level_theorem() {
    let body = Body::identity(8).unwrap();
    let mech = Nikm::new(
        body.clone(),
        Neighbours::AddRemove,
        eps(1, 1),
        NikmOptions::default(),
    )
    .unwrap();
    let theta = mech.levels()[0].km().scale();
    let predicted = 2.0 * 8.0 * theta * theta;
    assert!((mech.expected_squared_error() - predicted).abs() < 1e-9 * predicted);
    let measured = mse(&mech, &body, &[5; 8], 4000, 11);
    eprintln!("F = I_8, 4000 runs: measured {measured:.2}, predicted {predicted:.2}");
    assert!(
        (measured / predicted - 1.0).abs() < 0.1,
        "measured {measured}, predicted {predicted}"
    );
}

/// The skewed body `[−1, 1] × δB₁^{d−1}`, δ = 1/20: ideal KM's
/// `E‖w‖₂² = θ²(d + 1)(d + 2)·E‖z‖₂²` (Thm 3.3.3, p = 2) is dominated by the long
/// axis, whose coordinate is Uniform[−1, 1] in K (E z₀² = 1/3): about 102θ² at
/// d = 16, 61θ² at d = 12. NiKM answers the long axis at its last, one-dimensional
/// level, where the factor is `(1 + 1)(1 + 2) = 6` instead of `(d + 1)(d + 2)`, at the
/// price of `L²` (25 at d = 16, 16 at d = 12): about 50θ² and 34θ². The measured NiKM
/// error is below ideal KM's. (Hit-and-run KM's *measured* error here is far below
/// its ideal one — its 4·d-step walk barely leaves the thin body's centre, so it
/// under-noises: the approximate-privacy caveat in action. NiKM's long axis is
/// sampled exactly.)
fn skewed_case(d: usize, runs: usize, covariance_samples: usize, tolerance: f64) {
    let delta = 0.05;
    let body = skewed(d, delta);
    let options = NikmOptions {
        steps: Some(4 * d),
        covariance_samples,
        covariance_seed: 3,
    };
    let mech = Nikm::new(body.clone(), Neighbours::AddRemove, eps(1, 1), options).unwrap();
    assert_decomposition(&mech, d);
    assert!(mech.is_approximate());
    assert!(matches!(mech.cost(), Cost::Uncertified(_)));
    // The long axis is (up to the chain's estimate) the last level's direction; its
    // level is exact.
    let last = mech.levels().last().unwrap();
    assert!(last.subspace()[0][0].abs() > 0.95, "{:?}", last.subspace());
    assert_eq!(last.km().sampler(), Sampler::Exact);
    let km = KNorm::hit_and_run_approximate(body.clone(), Neighbours::AddRemove, eps(1, 1), 4 * d)
        .unwrap();
    let theta = km.scale();
    let (df, m) = (d as f64, (d - 1) as f64);
    let km_ideal = theta
        * theta
        * (df + 1.0)
        * (df + 2.0)
        * (1.0 / 3.0 + m * delta * delta * 2.0 / (m + 1.0) / (m + 2.0));
    let counts: Vec<u64> = (0..body.columns() as u64).map(|j| 10 + j % 7).collect();
    let measured = mse(&mech, &body, &counts, runs, 5);
    let predicted = mech.expected_squared_error();
    // For the record (no claim), in the full run: hit-and-run KM's measured error.
    let km_walk = if runs >= 600 {
        format!("{:.2}", mse(&km, &body, &counts, runs / 6, 6))
    } else {
        "-".to_string()
    };
    eprintln!(
        "skewed d = {d}, {runs} runs: NiKM measured {measured:.1}, predicted {predicted:.1}; \
         ideal KM {km_ideal:.1}; hit-and-run KM measured {km_walk} ({} runs)",
        runs / 6
    );
    assert!(
        measured < km_ideal && predicted < 0.6 * km_ideal,
        "NiKM measured {measured}, predicted {predicted}; ideal KM {km_ideal}"
    );
    assert!(
        (measured / predicted - 1.0).abs() < tolerance,
        "{measured} vs {predicted}"
    );
}

/// The squared error's coefficient of variation is about 2.2 (Gamma(2) radius times
/// a uniform coordinate), so 40 runs leave ±35%: the test-size check, at d = 12.
#[test]
fn nikm_beats_ideal_km_on_a_skewed_body() {
    skewed_case(12, 40, 300, 0.6);
}

/// d = 16 at 600 runs (±9%), about a minute:
/// `cargo test -p privq-host --lib nikm_skewed_full -- --ignored --nocapture`.
#[test]
#[ignore]
fn nikm_skewed_full() {
    skewed_case(16, 600, 500, 0.25);
}

#[test]
fn bad_inputs_are_typed_errors() {
    let e = eps(1, 1);
    let opts = NikmOptions::default();
    // ε ≤ 0 cannot be built at all.
    assert!(Epsilon::new(0, 1).is_err());
    assert!(Epsilon::from_f64(-1.0).is_err());
    // Empty, NaN, d > N: the body's errors.
    assert_eq!(Body::from_rows(&[]).unwrap_err(), KnormError::Empty);
    assert!(matches!(
        Body::from_rows(&[vec![0.5, f64::NAN], vec![1.0, 0.0]]),
        Err(KnormError::EntryOutOfRange { row: 0, col: 1, .. })
    ));
    assert_eq!(
        Body::from_rows(&[vec![1.0], vec![0.0]]).unwrap_err(),
        KnormError::MoreQueriesThanColumns { d: 2, n: 1 }
    );
    // A general body needs hit-and-run steps (at least 4·d) and covariance samples.
    let general = skewed(3, 0.5);
    assert_eq!(
        Nikm::new(general.clone(), Neighbours::AddRemove, e, opts).unwrap_err(),
        KnormError::NoExactSampler
    );
    let short = NikmOptions {
        steps: Some(11),
        ..opts
    };
    assert!(matches!(
        Nikm::new(general.clone(), Neighbours::AddRemove, e, short),
        Err(KnormError::InvalidParameter(_))
    ));
    let no_samples = NikmOptions {
        steps: Some(12),
        covariance_samples: 0,
        ..opts
    };
    assert!(matches!(
        Nikm::new(general, Neighbours::AddRemove, e, no_samples),
        Err(KnormError::InvalidParameter(_))
    ));
    // Rank-deficient F.
    let flat = Body::from_rows(&[vec![1.0, 0.5], vec![1.0, 0.5]]).unwrap();
    let walk = NikmOptions {
        steps: Some(8),
        covariance_samples: 50,
        ..opts
    };
    assert!(Nikm::new(flat, Neighbours::AddRemove, e, walk).is_err());
    // A wrong-length histogram is refused before anything is charged.
    let mech = Nikm::new(Body::identity(4).unwrap(), Neighbours::Replace, e, opts).unwrap();
    let mut acct = Accountant::pure(e);
    assert!(
        mech.release(&[1, 2, 3][..], &mut acct, &mut seeded_rng(1))
            .is_err()
    );
    assert_eq!(acct.spent_epsilon(), None);
}

#[test]
fn accounting_is_one_charge_of_the_total() {
    let e = eps(1, 2);
    let mech = Nikm::new(
        Body::hypercube(3).unwrap(),
        Neighbours::AddRemove,
        e,
        NikmOptions::default(),
    )
    .unwrap();
    assert_eq!(mech.cost(), Cost::Pure(e));
    assert!(mech.label().contains("NiKM"));
    // A receipt for one level's ε/L does not pay for the whole release.
    let mut acct = Accountant::pure(e);
    let small = acct.charge("one level", Cost::Pure(eps(1, 4))).unwrap();
    assert!(
        mech.release_paid(&vec![1; 8][..], small, &mut seeded_rng(1))
            .is_err()
    );
    // Too little budget: refused, nothing sampled.
    let mut poor = Accountant::pure(eps(1, 3));
    assert!(
        mech.release(&vec![1; 8][..], &mut poor, &mut seeded_rng(1))
            .is_err()
    );
    // Hit-and-run levels: uncertified, refused by a certified accountant.
    let options = NikmOptions {
        steps: Some(12),
        covariance_samples: 100,
        covariance_seed: 1,
    };
    let general = Nikm::new(skewed(3, 0.5), Neighbours::AddRemove, e, options).unwrap();
    assert_eq!(general.cost(), Cost::Uncertified(e));
    assert!(general.label().contains("APPROXIMATE"));
    let mut certified = Accountant::pure(eps(1, 1));
    assert!(
        general
            .release(&[1, 2, 3, 4][..], &mut certified, &mut seeded_rng(2))
            .is_err()
    );
    let mut opted = Accountant::pure(eps(1, 1));
    opted.allow_uncertified();
    let a = general
        .release(&[1, 2, 3, 4][..], &mut opted, &mut seeded_rng(2))
        .unwrap();
    // Seeded and deterministic: the same seeds give the same decomposition and release.
    let again = Nikm::new(skewed(3, 0.5), Neighbours::AddRemove, e, options).unwrap();
    let b = again
        .release(&[1, 2, 3, 4][..], &mut opted, &mut seeded_rng(2))
        .unwrap();
    assert_eq!(a, b);
    assert_eq!(all_vectors(&general), all_vectors(&again));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// On random full-rank matrices the level subspaces are orthonormal, d vectors in
    /// all, with halving level dimensions.
    #[test]
    fn level_subspaces_are_orthonormal_and_span(
        d in 1usize..=6,
        extra in 0usize..=4,
        seed in any::<u64>(),
    ) {
        let n = d + extra;
        let mut rng = seeded_rng(seed);
        let rows: Vec<Vec<f64>> = (0..d)
            .map(|_| (0..n).map(|_| 2.0 * ((rng.next_u64() >> 11) as f64 / 9_007_199_254_740_992.0) - 1.0).collect())
            .collect();
        let body = Body::from_rows(&rows).unwrap();
        let options = NikmOptions { steps: Some(4 * d), covariance_samples: 60, covariance_seed: seed };
        match Nikm::new(body, Neighbours::AddRemove, eps(1, 1), options) {
            Ok(mech) => assert_decomposition(&mech, d),
            // A nearly singular random matrix: the grid cannot be calibrated.
            Err(KnormError::IllConditioned { .. } | KnormError::RankDeficient { .. }) => {}
            Err(e) => prop_assert!(false, "{e}"),
        }
    }
}

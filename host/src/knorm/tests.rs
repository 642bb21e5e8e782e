//! Tests of the K-norm geometry, samplers and mechanism. Every statistical test
//! has a fixed seed and a power check (the same test rejects a wrong law).

use privq_core::Epsilon;
use privq_core::rand_core::Rng;

use super::sample::{gamma, hit_and_run, uniform_cross_polytope, uniform_cube};
use super::*;
use crate::accountant::Accountant;
use crate::contract::{Mechanism, Neighbours};
use crate::seeded_rng;
use crate::stats::{gamma_p, ks_test};

/// KS p-values below this fail a test (each test runs a handful of KS tests).
const ALPHA: f64 = 1e-3;

fn uniform(rng: &mut impl Rng, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * ((rng.next_u64() >> 11) as f64 / 9_007_199_254_740_992.0)
}

fn random_rows(d: usize, n: usize, rng: &mut impl Rng) -> Vec<Vec<f64>> {
    (0..d)
        .map(|_| (0..n).map(|_| uniform(rng, -1.0, 1.0)).collect())
        .collect()
}

fn rows_of(body: &Body) -> Vec<Vec<f64>> {
    (0..body.dim())
        .map(|i| {
            (0..body.columns())
                .map(|j| body.entry(i, j).unwrap())
                .collect()
        })
        .collect()
}

fn beta_d_1(d: usize) -> impl Fn(f64) -> f64 {
    move |t| t.clamp(0.0, 1.0).powi(d as i32)
}

#[test]
fn shapes_are_detected() {
    assert_eq!(Body::identity(4).unwrap().shape(), Shape::CrossPolytope);
    assert_eq!(Body::hypercube(4).unwrap().shape(), Shape::Cube);
    // Identity padded with columns inside B₁: still the cross-polytope.
    let rows = vec![vec![1.0, 0.0, 0.5, 0.0], vec![0.0, -1.0, 0.5, 0.0]];
    assert_eq!(
        Body::from_rows(&rows).unwrap().shape(),
        Shape::CrossPolytope
    );
    // One sign class missing: not the cube.
    let rows = vec![vec![1.0, 1.0, 0.0], vec![1.0, 1.0, 1.0]];
    assert_eq!(Body::from_rows(&rows).unwrap().shape(), Shape::General);
    let mut rng = seeded_rng(1);
    assert_eq!(
        Body::from_rows(&random_rows(3, 9, &mut rng))
            .unwrap()
            .shape(),
        Shape::General
    );
}

#[test]
fn lp_gauge_is_l1_on_identity_and_linf_on_hypercube() {
    let mut rng = seeded_rng(2);
    for d in 1..=5 {
        let cross = Body::general(&rows_of(&Body::identity(d).unwrap())).unwrap();
        let cube = Body::general(&rows_of(&Body::hypercube(d).unwrap())).unwrap();
        for _ in 0..20 {
            let v: Vec<f64> = (0..d).map(|_| uniform(&mut rng, -3.0, 3.0)).collect();
            let l1: f64 = v.iter().map(|a| a.abs()).sum();
            let linf = v.iter().fold(0.0, |m: f64, a| m.max(a.abs()));
            let g1 = cross.gauge(&v).unwrap();
            let ginf = cube.gauge(&v).unwrap();
            assert!(
                (g1 - l1).abs() <= 1e-9 * (1.0 + l1),
                "d={d}: {g1} vs ‖v‖₁ {l1}"
            );
            assert!(
                (ginf - linf).abs() <= 1e-9 * (1.0 + linf),
                "d={d}: {ginf} vs ‖v‖∞ {linf}"
            );
            assert_eq!(cross.contains(&v).unwrap(), l1 <= 1.0 + 1e-12 || g1 <= 1.0);
        }
    }
}

#[test]
fn gauge_outside_the_range_is_infinite_and_norm_axioms_hold() {
    // Rank 1: the body is a segment on the diagonal.
    let flat = Body::from_rows(&[vec![1.0, 0.5], vec![1.0, 0.5]]).unwrap();
    assert_eq!(flat.gauge(&[1.0, 0.0]).unwrap(), f64::INFINITY);
    assert!((flat.gauge(&[0.5, 0.5]).unwrap() - 0.5).abs() < 1e-9);
    let mut rng = seeded_rng(3);
    let body = Body::from_rows(&random_rows(3, 10, &mut rng)).unwrap();
    for j in 0..body.columns() {
        let col: Vec<f64> = (0..3).map(|i| body.entry(i, j).unwrap()).collect();
        assert!(body.gauge(&col).unwrap() <= 1.0 + 1e-9, "a column is in K");
    }
    for _ in 0..20 {
        let a: Vec<f64> = (0..3).map(|_| uniform(&mut rng, -2.0, 2.0)).collect();
        let b: Vec<f64> = (0..3).map(|_| uniform(&mut rng, -2.0, 2.0)).collect();
        let sum: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
        let neg: Vec<f64> = a.iter().map(|x| -2.5 * x).collect();
        let (ga, gb) = (body.gauge(&a).unwrap(), body.gauge(&b).unwrap());
        assert!(body.gauge(&sum).unwrap() <= ga + gb + 1e-9);
        assert!((body.gauge(&neg).unwrap() - 2.5 * ga).abs() < 1e-8 * (1.0 + ga));
        // K ⊆ B∞ (entries in [−1, 1]), so ‖v‖_K ≥ ‖v‖∞.
        assert!(ga + 1e-12 >= a.iter().fold(0.0, |m: f64, x| m.max(x.abs())));
    }
}

#[test]
fn bad_matrices_are_typed_errors() {
    assert_eq!(Body::from_rows(&[]).unwrap_err(), KnormError::Empty);
    assert_eq!(Body::from_rows(&[vec![]]).unwrap_err(), KnormError::Empty);
    assert!(matches!(
        Body::from_rows(&[vec![0.5, f64::NAN]]),
        Err(KnormError::EntryOutOfRange { row: 0, col: 1, .. })
    ));
    assert!(matches!(
        Body::from_rows(&[vec![0.5, 1.5]]),
        Err(KnormError::EntryOutOfRange { col: 1, .. })
    ));
    assert!(matches!(
        Body::from_rows(&[vec![f64::NEG_INFINITY, 0.0]]),
        Err(KnormError::EntryOutOfRange { .. })
    ));
    assert_eq!(
        Body::from_rows(&[vec![1.0], vec![0.0]]).unwrap_err(),
        KnormError::MoreQueriesThanColumns { d: 2, n: 1 }
    );
    assert!(matches!(
        Body::from_rows(&[vec![1.0, 0.0], vec![0.0]]),
        Err(KnormError::Ragged { row: 1, .. })
    ));
    let wide = vec![vec![0.0; MAX_ENTRIES / 2 + 1]; 2];
    assert!(matches!(
        Body::from_rows(&wide),
        Err(KnormError::TooLarge { .. })
    ));
    let body = Body::identity(2).unwrap();
    assert!(matches!(
        body.gauge(&[1.0]),
        Err(KnormError::DimensionMismatch { .. })
    ));
    assert_eq!(
        body.gauge(&[1.0, f64::NAN]).unwrap_err(),
        KnormError::NonFinite
    );
    // Rank-deficient F: no grid can bound the snapping error in ‖·‖_K.
    let flat = Body::from_rows(&[vec![1.0, 0.5], vec![1.0, 0.5]]).unwrap();
    let eps = Epsilon::new(1, 1).unwrap();
    assert_eq!(
        KNorm::hit_and_run_approximate(flat, Neighbours::AddRemove, eps, 8).unwrap_err(),
        KnormError::RankDeficient { basis: 0 }
    );
    let general = Body::general(&[vec![1.0, 0.0], vec![0.0, 1.0]]).unwrap();
    assert_eq!(
        KNorm::new(general.clone(), Neighbours::AddRemove, eps).unwrap_err(),
        KnormError::NoExactSampler
    );
    assert!(matches!(
        KNorm::hit_and_run_approximate(general, Neighbours::AddRemove, eps, 0),
        Err(KnormError::InvalidParameter(_))
    ));
}

/// `‖z‖_K ∼ Beta(d, 1)` for `z ∼ Unif(K)` (volume scales as `r^d`; the fact behind
/// thesis §3.3's sampler, Remark 3.3.2).
#[test]
fn exact_uniform_samplers_have_beta_gauges() {
    let mut rng = seeded_rng(4);
    for d in [1usize, 2, 5, 16, 64] {
        let l1: Vec<f64> = (0..3000)
            .map(|_| {
                uniform_cross_polytope(d, &mut rng)
                    .iter()
                    .map(|a| a.abs())
                    .sum()
            })
            .collect();
        let (stat, p) = ks_test(&l1, beta_d_1(d));
        eprintln!("cross-polytope d={d}: KS D = {stat:.4}, p = {p:.3}");
        assert!(p > ALPHA, "cross-polytope d={d}: D = {stat}, p = {p}");
        // Power: the same samples reject Beta(d + 1 + ⌊d/4⌋, 1).
        let (_, p_wrong) = ks_test(&l1, beta_d_1(d + 1 + d / 4));
        assert!(
            p_wrong < ALPHA,
            "cross-polytope d={d}: wrong law not rejected"
        );
        let linf: Vec<f64> = (0..3000)
            .map(|_| {
                uniform_cube(d, &mut rng)
                    .iter()
                    .fold(0.0, |m: f64, a| m.max(a.abs()))
            })
            .collect();
        let (stat, p) = ks_test(&linf, beta_d_1(d));
        eprintln!("cube d={d}: KS D = {stat:.4}, p = {p:.3}");
        assert!(p > ALPHA, "cube d={d}: D = {stat}, p = {p}");
    }
}

/// `‖r·z‖_K ∼ Gamma(d, θ)` for `r ∼ Gamma(d + 1, θ)` (a consequence of thesis
/// §3.3's sampler, Remark 3.3.2), on the mechanism's own noise.
#[test]
fn noise_gauge_is_gamma_d() {
    let mut rng = seeded_rng(5);
    for (body, eps) in [
        (Body::identity(1).unwrap(), Epsilon::new(1, 1).unwrap()),
        (Body::identity(8).unwrap(), Epsilon::new(1, 2).unwrap()),
        (Body::hypercube(3).unwrap(), Epsilon::new(2, 1).unwrap()),
        (Body::hypercube(10).unwrap(), Epsilon::new(1, 1).unwrap()),
    ] {
        let d = body.dim();
        let mech = KNorm::new(body, Neighbours::AddRemove, eps).unwrap();
        let theta = mech.scale();
        let gauges: Vec<f64> = (0..3000)
            .map(|_| {
                mech.body()
                    .gauge(&mech.sample_noise(&mut rng).unwrap())
                    .unwrap()
            })
            .collect();
        let (stat, p) = ks_test(&gauges, |t| gamma_p(d as f64, t.max(0.0) / theta));
        eprintln!("noise gauge d={d}: KS D = {stat:.4}, p = {p:.3}");
        assert!(p > ALPHA, "d={d}: D = {stat}, p = {p}");
        let (_, p_wrong) = ks_test(&gauges, |t| gamma_p(d as f64 + 1.0, t.max(0.0) / theta));
        assert!(p_wrong < ALPHA, "d={d}: Gamma(d + 1) not rejected");
        let mean = gauges.iter().sum::<f64>() / gauges.len() as f64;
        let rel = (mean - mech.expected_noise_gauge()).abs() / mech.expected_noise_gauge();
        assert!(rel < 0.05, "d={d}: mean ‖w‖_K {mean}");
    }
}

#[test]
fn gamma_sampler_has_its_law() {
    let mut rng = seeded_rng(6);
    let xs: Vec<f64> = (0..3000).map(|_| gamma(4, 0.5, &mut rng)).collect();
    let (stat, p) = ks_test(&xs, |t| gamma_p(4.0, t.max(0.0) / 0.5));
    assert!(p > ALPHA, "D = {stat}, p = {p}");
}

/// Hit-and-run (chords by LP) on bodies given without their shape: `‖z‖_K` must be
/// `Beta(d, 1)` as for the exact samplers.
#[test]
fn hit_and_run_gauges_are_beta_on_exact_bodies() {
    let mut rng = seeded_rng(7);
    for (name, exact) in [
        ("cross-polytope", Body::identity(2).unwrap()),
        ("cross-polytope", Body::identity(3).unwrap()),
        ("cube", Body::hypercube(2).unwrap()),
        ("cube", Body::hypercube(3).unwrap()),
    ] {
        let d = exact.dim();
        let body = Body::general(&rows_of(&exact)).unwrap();
        let gauges: Vec<f64> = (0..400)
            .map(|_| {
                exact
                    .gauge(&hit_and_run(&body, 20, &mut rng).unwrap())
                    .unwrap()
            })
            .collect();
        assert!(gauges.iter().all(|&g| g <= 1.0 + 1e-9), "{name}: left K");
        let (stat, p) = ks_test(&gauges, beta_d_1(d));
        eprintln!("hit-and-run {name} d={d}: KS D = {stat:.4}, p = {p:.3}");
        assert!(p > ALPHA, "{name} d={d}: D = {stat}, p = {p}");
        // Too few steps is visibly not uniform (the walk starts at the centre).
        let short: Vec<f64> = (0..400)
            .map(|_| {
                exact
                    .gauge(&hit_and_run(&body, 1, &mut rng).unwrap())
                    .unwrap()
            })
            .collect();
        let (_, p_short) = ks_test(&short, beta_d_1(d));
        assert!(p_short < ALPHA, "{name} d={d}: one step not rejected");
    }
}

/// Thesis §3.3: `ε(‖Fx′ − v‖_K − ‖Fx − v‖_K) ≤ ε‖x − x′‖₁`, pointwise.
#[test]
fn pointwise_privacy_ratio_is_bounded() {
    let mut rng = seeded_rng(8);
    let eps = 0.7;
    for (d, n) in [(2usize, 5usize), (3, 8), (4, 12)] {
        let body = Body::from_rows(&random_rows(d, n, &mut rng)).unwrap();
        for _ in 0..30 {
            let x: Vec<f64> = (0..n).map(|_| uniform(&mut rng, 0.0, 5.0)).collect();
            let mut x2 = x.clone();
            let j = (rng.next_u64() % n as u64) as usize;
            x2[j] += uniform(&mut rng, -1.0, 1.0);
            let dist: f64 = x.iter().zip(&x2).map(|(a, b)| (a - b).abs()).sum();
            let (fx, fx2) = (body.answer(&x).unwrap(), body.answer(&x2).unwrap());
            let v: Vec<f64> = fx
                .iter()
                .map(|a| a + uniform(&mut rng, -3.0, 3.0))
                .collect();
            let diff = |a: &[f64]| -> Vec<f64> { a.iter().zip(&v).map(|(p, q)| p - q).collect() };
            let loss = eps * (body.gauge(&diff(&fx2)).unwrap() - body.gauge(&diff(&fx)).unwrap());
            assert!(
                loss <= eps * dist + 1e-7,
                "d={d}: loss {loss} > {}",
                eps * dist
            );
        }
    }
}

/// The calibration claim: snapped answers of neighbouring histograms are within
/// `Δ(1 + 2⁻¹⁰)` in the K-norm (the sensitivity the noise is scaled for).
#[test]
fn snapped_neighbours_stay_within_the_calibrated_sensitivity() {
    let mut rng = seeded_rng(9);
    let eps = Epsilon::new(1, 1).unwrap();
    let bodies = [
        Body::identity(3).unwrap(),
        Body::hypercube(3).unwrap(),
        Body::from_rows(&random_rows(3, 7, &mut rng)).unwrap(),
    ];
    for body in bodies {
        for neighbours in [Neighbours::AddRemove, Neighbours::Replace] {
            let delta = neighbours.histogram_l1() as f64;
            let mech = KNorm::hit_and_run_approximate(body.clone(), neighbours, eps, 12).unwrap();
            let gamma = mech.grid();
            let n = body.columns();
            let mut worst: f64 = 0.0;
            for _ in 0..200 {
                let x: Vec<u64> = (0..n).map(|_| rng.next_u64() % 1000).collect();
                let mut x2 = x.clone();
                let j = (rng.next_u64() % n as u64) as usize;
                x2[j] += 1;
                if neighbours == Neighbours::Replace {
                    let k = (j + 1) % n;
                    x2[k] = x2[k].saturating_sub(1);
                }
                let (y, y2) = (mech.snapped_answer(&x), mech.snapped_answer(&x2));
                let gap: Vec<f64> = y
                    .iter()
                    .zip(&y2)
                    .map(|(a, b)| (b - a) as f64 * gamma)
                    .collect();
                worst = worst.max(body.gauge(&gap).unwrap());
            }
            assert!(
                worst <= delta * (1.0 + 1.0 / 1024.0) + 1e-9,
                "{:?}/{neighbours:?}: snapped gap {worst}",
                body.shape()
            );
        }
    }
}

#[test]
fn release_is_on_the_grid_charged_and_centred() {
    let eps = Epsilon::new(1, 1).unwrap();
    let mech = KNorm::new(Body::hypercube(3).unwrap(), Neighbours::Replace, eps).unwrap();
    assert_eq!(mech.cost(), crate::accountant::Cost::Pure(eps));
    assert!(mech.label().contains("exact sampler"));
    let mut acct = Accountant::pure(Epsilon::new(1200, 1).unwrap());
    let mut rng = seeded_rng(10);
    let counts: Vec<u64> = (0..8).map(|j| j * 10).collect();
    let truth = mech
        .body()
        .answer(&counts.iter().map(|&c| c as f64).collect::<Vec<_>>())
        .unwrap();
    let mut mean = [0.0; 3];
    let runs = 1200;
    for _ in 0..runs {
        let out = mech.release(&counts[..], &mut acct, &mut rng).unwrap();
        for (i, v) in out.iter().enumerate() {
            assert_eq!((v / mech.grid()).fract(), 0.0, "off the grid");
            mean[i] += v / runs as f64;
        }
    }
    // The noise is symmetric: the mean is near F·x (a coordinate's sd is
    // θ·√(E r²/3) = 2·√(20/3) ≈ 5.2, so the mean's is 0.15: 0.6 is 4 of them).
    for i in 0..3 {
        assert!(
            (mean[i] - truth[i]).abs() < 0.6,
            "coordinate {i}: {} vs {}",
            mean[i],
            truth[i]
        );
    }
    assert_eq!(acct.spent_epsilon(), Some(Epsilon::new(runs, 1).unwrap()));
    // A histogram of the wrong length costs nothing.
    assert!(mech.release(&[1, 2][..], &mut acct, &mut rng).is_err());
    assert_eq!(acct.spent_epsilon(), Some(Epsilon::new(runs, 1).unwrap()));
    let approx =
        KNorm::hit_and_run_approximate(Body::identity(2).unwrap(), Neighbours::Replace, eps, 8)
            .unwrap();
    assert!(approx.label().contains("APPROXIMATE"));
}

/// Thesis Thm 3.3.3 at p = 2, where it is an identity (r and z independent):
/// `E‖w‖₂² = E r²·E‖z‖₂² = θ²(d + 1)(d + 2)·E‖z‖₂²`, with `E‖z‖₂² = d/3` on the cube
/// and `2d/((d + 1)(d + 2))` on the cross-polytope. The sample mean must be within
/// 4 standard errors.
#[test]
fn mean_squared_error_matches_theorem_3_3_3() {
    let mut rng = seeded_rng(11);
    let eps = Epsilon::new(1, 1).unwrap();
    for (body, ez2) in [
        (Body::hypercube(4).unwrap(), 4.0 / 3.0),
        (Body::identity(6).unwrap(), 12.0 / 56.0),
    ] {
        let d = body.dim() as f64;
        let mech = KNorm::new(body, Neighbours::AddRemove, eps).unwrap();
        let theta = mech.scale();
        let expected = theta * theta * (d + 1.0) * (d + 2.0) * ez2;
        let sq: Vec<f64> = (0..4000)
            .map(|_| {
                mech.sample_noise(&mut rng)
                    .unwrap()
                    .iter()
                    .map(|a| a * a)
                    .sum()
            })
            .collect();
        let n = sq.len() as f64;
        let mean = sq.iter().sum::<f64>() / n;
        let var = sq.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let z = (mean - expected) / (var / n).sqrt();
        eprintln!("E‖w‖² d={d}: {mean:.3} vs {expected:.3} (z = {z:.2})");
        assert!(z.abs() < 4.0, "d={d}: mean {mean} vs {expected}, z = {z}");
    }
}

/// Thesis Thm 3.2.3 / 3.3.3 on exact bodies: the volume radius by Monte Carlo
/// (LP membership) agrees with the closed form, and KM's measured ℓ2 error lies
/// between the volume lower bound and its own upper bound.
#[test]
fn volume_radius_and_error_bounds() {
    use super::bounds::{km_error_bound, volume_lower_bound, volume_radius};
    let mut rng = seeded_rng(12);
    for exact in [Body::identity(3).unwrap(), Body::hypercube(3).unwrap()] {
        let d = exact.dim();
        let vr = volume_radius(&exact, 0, &mut rng).unwrap();
        let general = Body::general(&rows_of(&exact)).unwrap();
        let mc = volume_radius(&general, 4000, &mut rng).unwrap();
        // Relative standard error of the estimate: (1/d)·√((1 − p)/(n·p)) ≤ 1.2 % here
        // (hit rate p = 1/6 for B₁³, 1 for the cube); allow 4 of them.
        assert!(
            (mc - vr).abs() < 0.05 * vr,
            "{:?}: Monte Carlo {mc} vs {vr}",
            exact.shape()
        );
        let eps = Epsilon::new(1, 1).unwrap();
        let mech = KNorm::new(exact.clone(), Neighbours::AddRemove, eps).unwrap();
        let runs = 3000;
        let (mut err, mut mr) = (0.0, 0.0);
        for _ in 0..runs {
            let w = mech.sample_noise(&mut rng).unwrap();
            err += w.iter().map(|a| a * a).sum::<f64>().sqrt() / runs as f64;
            let z = super::sample::uniform_in_body(&exact, 0, &mut rng).unwrap();
            mr += z.iter().map(|a| a * a).sum::<f64>().sqrt() / runs as f64;
        }
        let lower = volume_lower_bound(d, vr, 1.0).unwrap();
        let upper = km_error_bound(d, mr, 1.0) * mech.scale();
        eprintln!(
            "{:?} d={d}: vr {vr:.4} (MC {mc:.4}); err {err:.3} in [{lower:.3}, {upper:.3}]",
            exact.shape()
        );
        assert!(
            lower < err && err <= upper * 1.05,
            "{err} not in [{lower}, {upper}]"
        );
    }
    assert_eq!(volume_lower_bound(1, 1.0, 1.0), None);
    let big = Body::general(&rows_of(&Body::identity(9).unwrap())).unwrap();
    assert!(volume_radius(&big, 10, &mut rng).is_err());
}

/// Thesis Fig. 3.1 in miniature: on the cube body (all of {−1, 1}ᵈ as columns, the
/// d ≤ log₂ N regime of Fact 3.2.5) KM's ℓ2 error is ≈ (d + 1)√(d/3)/ε against the
/// Laplace mechanism's ≈ d√(2d)/ε (ℓ1 sensitivity d): about √6 times smaller.
#[test]
fn km_beats_laplace_on_the_cube() {
    use crate::central::VectorLaplace;
    let mut rng = seeded_rng(13);
    let eps = Epsilon::new(1, 1).unwrap();
    let d = 6;
    let body = Body::hypercube(d).unwrap();
    let counts: Vec<u64> = (0..body.columns() as u64).map(|j| j % 5).collect();
    let truth = body
        .answer(&counts.iter().map(|&c| c as f64).collect::<Vec<_>>())
        .unwrap();
    let km = KNorm::new(body, Neighbours::AddRemove, eps).unwrap();
    let lap = VectorLaplace::with_sensitivity(Neighbours::AddRemove, d, d as f64, eps).unwrap();
    let runs = 2000;
    let mut acct = Accountant::pure(Epsilon::new(2 * runs, 1).unwrap());
    let l2 = |out: &[f64]| -> f64 {
        out.iter()
            .zip(&truth)
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>()
            .sqrt()
    };
    let (mut e_km, mut e_lap) = (0.0, 0.0);
    for _ in 0..runs {
        e_km += l2(&km.release(&counts[..], &mut acct, &mut rng).unwrap()) / runs as f64;
        e_lap += l2(&lap.release(&truth[..], &mut acct, &mut rng).unwrap()) / runs as f64;
    }
    eprintln!(
        "cube d={d}: ℓ2 error KM {e_km:.2}, Laplace {e_lap:.2}, ratio {:.2}",
        e_lap / e_km
    );
    assert!(e_lap > 1.7 * e_km, "KM {e_km} vs Laplace {e_lap}");
}

#[test]
fn a_tiny_epsilon_is_refused_before_the_noise_outgrows_floating_point() {
    // At ε = 2⁻⁶⁰ the noise would reach 2⁶³ grid steps: the i64 cast would
    // saturate and release the count, and already from 2⁵³ steps the noise's
    // parity would be fixed. Construction refuses it.
    let tiny = Epsilon::new(1, 1 << 60).unwrap();
    for eps in [tiny, Epsilon::new(1, 1 << 45).unwrap()] {
        assert!(matches!(
            KNorm::new(Body::identity(1).unwrap(), Neighbours::AddRemove, eps),
            Err(KnormError::InvalidParameter(_))
        ));
    }
    assert!(
        KNorm::new(
            Body::identity(1).unwrap(),
            Neighbours::AddRemove,
            Epsilon::new(1, 1 << 20).unwrap()
        )
        .is_ok()
    );
}

#[test]
fn hit_and_run_refuses_walks_shorter_than_four_d_steps() {
    let eps = Epsilon::new(1, 1).unwrap();
    let mut rng = seeded_rng(3);
    let general = Body::general(&random_rows(3, 8, &mut rng)).unwrap();
    assert!(
        KNorm::hit_and_run_approximate(general.clone(), Neighbours::AddRemove, eps, 11).is_err()
    );
    assert!(
        KNorm::hit_and_run_approximate(general.clone(), Neighbours::AddRemove, eps, 12).is_ok()
    );
    assert!(hit_and_run(&general, 0, &mut rng).is_err());
}

#[test]
fn hit_and_run_is_booked_as_uncertified_and_refused_by_certified_accountants() {
    let eps = Epsilon::new(1, 1).unwrap();
    let mut rng = seeded_rng(5);
    let general = Body::general(&random_rows(2, 6, &mut rng)).unwrap();
    let mech = KNorm::hit_and_run_approximate(general, Neighbours::AddRemove, eps, 8).unwrap();
    assert_eq!(mech.cost(), crate::accountant::Cost::Uncertified(eps));
    let counts = [1u64, 2, 3, 4, 5, 6];
    let mut certified = Accountant::pure(eps);
    assert!(matches!(
        mech.release(&counts[..], &mut certified, &mut rng),
        Err(crate::central::MechanismError::Budget(
            crate::accountant::AccountantError::Uncertified { .. }
        ))
    ));
    assert_eq!(certified.spent_epsilon(), None);
    let mut opted_in = Accountant::pure(eps);
    opted_in.allow_uncertified();
    mech.release(&counts[..], &mut opted_in, &mut rng).unwrap();
    assert!(opted_in.ledger_text().contains("UNCERTIFIED"));
    assert!(
        opted_in.ledger_text().contains(
            "total: ε = 1 of 1, δ = 0 of 0 (1 charge(s), basic composition) — UNCERTIFIED"
        )
    );
    assert_eq!(opted_in.ledger_json()["certified"], false);
    assert_eq!(certified.ledger_json()["certified"], true);
}

/// The exact cube sampler's law: `P(k) ∝ q^{‖k‖∞}` on ℤ², checked by χ² on the
/// shells `‖k‖∞ = m` (probability ∝ ((2m+1)² − (2m−1)²)·q^m) at a small scale t.
#[test]
fn exact_cube_steps_follow_the_discrete_k_norm_law() {
    // d = 2, Δ = 1 (add/remove), ε large enough that t is a few steps.
    let mech = KNorm::new(
        Body::hypercube(2).unwrap(),
        Neighbours::AddRemove,
        Epsilon::new(2000, 1).unwrap(),
    )
    .unwrap();
    let t = 1025.0 / 1024.0 / 2000.0 / mech.grid();
    assert!((1.0..20.0).contains(&t), "t = {t}");
    let q = (-1.0 / t).exp();
    let shells = 60usize;
    let weight = |m: usize| {
        let m = m as f64;
        let points = if m == 0.0 {
            1.0
        } else {
            (2.0 * m + 1.0).powi(2) - (2.0 * m - 1.0).powi(2)
        };
        points * q.powf(m)
    };
    let z: f64 = (0..10_000).map(weight).sum();
    let mut rng = seeded_rng(77);
    let runs = 40_000;
    let mut seen = vec![0.0; shells + 1];
    let mut sum = [0i64; 2];
    for _ in 0..runs {
        let k = mech.sample_steps(&mut rng).unwrap();
        let m = k.iter().map(|v| v.unsigned_abs()).max().unwrap() as usize;
        seen[m.min(shells)] += 1.0;
        sum[0] += k[0];
        sum[1] += k[1];
    }
    let mut chi2 = 0.0;
    for (m, &count) in seen.iter().enumerate() {
        let p = if m < shells {
            weight(m) / z
        } else {
            1.0 - (0..shells).map(weight).sum::<f64>() / z
        };
        let e = p * runs as f64;
        if e > 5.0 {
            chi2 += (count - e).powi(2) / e;
        }
    }
    // About 60 degrees of freedom: 120 is far beyond the 99.99 % quantile (~107).
    assert!(chi2 < 120.0, "chi2 = {chi2}");
    // Symmetric: the coordinate sums stay near 0 (sd of a coordinate ≈ 2t).
    for s in sum {
        assert!((s as f64 / runs as f64).abs() < 0.1 * t, "{sum:?}");
    }
}

/// The review's cancellation case: F = [1, −1] and counts near 2⁵⁴ — summed in
/// f64 the answers of neighbours are 4 and 8; the release path is exact.
#[test]
fn the_answer_for_other_mechanisms_is_exact_on_huge_counts() {
    let body = Body::from_rows(&[vec![1.0, -1.0]]).unwrap();
    let big = 1u64 << 54;
    assert_eq!(body.answer_for_release(&[big + 5, big]).unwrap(), vec![5.0]);
    assert_eq!(body.answer_for_release(&[big + 6, big]).unwrap(), vec![6.0]);
    // Beyond the fixed-point range it clamps (1-Lipschitz), never wraps.
    assert_eq!(
        body.answer_for_release(&[u64::MAX, 0]).unwrap(),
        vec![2f64.powi(31)]
    );
    assert!(body.answer_for_release(&[1]).is_err());
}

/// The dense simplex of `chord` finds the same chord ends as the general LP layer
/// on random bodies (random interior points and directions, both signs), and the
/// cube's closed form on the cube forced through the general path.
#[test]
fn fast_chords_match_the_general_lp() {
    let mut rng = seeded_rng(23);
    for &(d, n) in &[(2usize, 5usize), (3, 9), (5, 16), (8, 40), (12, 64)] {
        let rows = random_rows(d, n, &mut rng);
        let body = Body::general(&rows).unwrap();
        for _ in 0..12 {
            let mut z = uniform_cube(d, &mut rng);
            // Scale z well inside K: K ⊇ (1/‖z‖_K)·z.
            let g = body.gauge_lp(&z).unwrap();
            let s = uniform(&mut rng, 0.0, 0.95) / g;
            z.iter_mut().for_each(|a| *a *= s);
            let u = uniform_cube(d, &mut rng);
            let fast = body.ray_exit(&z, &u).unwrap();
            let slow = body.ray_exit_lp(&z, &u).unwrap();
            assert!(
                (fast - slow).abs() <= 1e-7 * (1.0 + slow),
                "d = {d}, N = {n}: {fast} vs {slow}"
            );
        }
    }
    // The 4-cube through the LP path: the chord end is the closed form.
    let cube = Body::hypercube(4).unwrap();
    let general = Body::general(&rows_of(&cube)).unwrap();
    for _ in 0..20 {
        let z: Vec<f64> = uniform_cube(4, &mut rng).iter().map(|a| 0.9 * a).collect();
        let u = uniform_cube(4, &mut rng);
        let exact = cube.ray_exit(&z, &u).unwrap();
        let fast = general.ray_exit(&z, &u).unwrap();
        assert!((fast - exact).abs() < 1e-9, "{fast} vs {exact}");
    }
    // A point outside K (by more than round-off) has a chord of length 0.
    let outside = vec![1.5; 4];
    assert_eq!(
        general.ray_exit(&outside, &[1.0, 0.0, 0.0, 0.0]).unwrap(),
        0.0
    );
}

/// Timing of one chord at the Fig. 3.1 sizes (`--ignored`): the dense simplex
/// against the general LP layer.
#[test]
#[ignore = "timing probe"]
fn chord_timing_probe() {
    let mut rng = seeded_rng(5);
    for &d in &[8usize, 16, 32, 64] {
        let n = 1024;
        let rows: Vec<Vec<f64>> = (0..d)
            .map(|_| {
                (0..n)
                    .map(|_| if rng.next_u32() & 1 == 1 { 1.0 } else { -1.0 })
                    .collect()
            })
            .collect();
        let body = Body::general(&rows).unwrap();
        let mut z = vec![0.0; d];
        super::sample::walk(&body, &mut z, 2 * d, &mut rng).unwrap();
        let u = uniform_cube(d, &mut rng);
        let t0 = std::time::Instant::now();
        let reps = 20;
        let mut fast = 0.0;
        for _ in 0..reps {
            fast = body.ray_exit(&z, &u).unwrap();
        }
        let tf = t0.elapsed().as_secs_f64() / reps as f64;
        let t0 = std::time::Instant::now();
        let slow = body.ray_exit_lp(&z, &u).unwrap();
        let ts = t0.elapsed().as_secs_f64();
        eprintln!(
            "d = {d}, N = {n}: dense simplex {:.2} ms, general LP {:.1} ms ({fast} vs {slow})",
            tf * 1e3,
            ts * 1e3
        );
        // The gauge: a chord from the centre (a degenerate start).
        let t0 = std::time::Instant::now();
        let fast = body.gauge(&u).unwrap();
        let tf = t0.elapsed().as_secs_f64();
        let t0 = std::time::Instant::now();
        let slow = body.gauge_lp(&u).unwrap();
        let ts = t0.elapsed().as_secs_f64();
        eprintln!(
            "  gauge: dense simplex {:.2} ms, general LP {:.1} ms ({fast} vs {slow})",
            tf * 1e3,
            ts * 1e3
        );
    }
}

/// VolLB (thesis Cor. 3.2.4) on bodies whose answer is known by hand.
#[test]
fn vol_lb_over_projections_on_known_bodies() {
    use super::bounds::{Projection, VolLbOptions, vol_lb};
    use std::f64::consts::PI;
    let opts = VolLbOptions::default();
    let mut rng = seeded_rng(41);
    // F = I₄: every coordinate projection is B₁ᵏ, and k·vr_k(B₁ᵏ) grows with k, so
    // the maximum is the whole body: 4·((2⁴/4!)/Vol(B₂⁴))^{1/4}/16, Vol(B₂⁴) = π²/2.
    let all = vol_lb(&Body::identity(4).unwrap(), 1.0, &opts, &mut rng).unwrap();
    let best = &all[0];
    let want = 4.0 * ((16.0 / 24.0) / (PI * PI / 2.0)).powf(0.25) / 16.0;
    assert!((best.bound - want).abs() < 1e-12, "{all:?}");
    assert!(best.exact && best.k == 4);
    // k = 2 on B₁²: vr = (2/π)^{1/2}; at ε = 1/2 the bound doubles.
    let two = all
        .iter()
        .find(|b| b.k == 2 && matches!(b.projection, Projection::Coordinates(_)))
        .unwrap();
    assert!((two.volume_radius - (2.0 / PI).sqrt()).abs() < 1e-12);
    let half = vol_lb(&Body::identity(4).unwrap(), 0.5, &opts, &mut rng).unwrap();
    assert!((half[0].bound - 2.0 * want).abs() < 1e-12);
    // The cube B∞³: every projection onto coordinates is a cube; the best is k = 3,
    // 3·(2³/(4π/3))^{1/3}/16.
    let cube = vol_lb(&Body::hypercube(3).unwrap(), 1.0, &opts, &mut rng).unwrap();
    let want = 3.0 * (8.0 / (4.0 * PI / 3.0)).powf(1.0 / 3.0) / 16.0;
    assert!((cube[0].bound - want).abs() < 1e-12, "{cube:?}");
    // The cube forced through the general path: Monte Carlo lower limits stay
    // below the truth, and not far below it.
    let rows: Vec<Vec<f64>> = (0..3)
        .map(|i| {
            (0..8)
                .map(|s: usize| if s >> i & 1 == 1 { 1.0 } else { -1.0 })
                .collect()
        })
        .collect();
    let general = Body::general(&rows).unwrap();
    let mc = vol_lb(&general, 1.0, &opts, &mut rng).unwrap();
    assert!(mc.iter().all(|b| b.bound <= want + 1e-12), "{mc:?}");
    assert!(mc[0].bound > 0.95 * want, "{mc:?}");
    // The hexagon conv(±e₁, ±e₂, ±(1, 1)) has area 3: vr = (3/π)^{1/2}.
    let hexagon = Body::from_rows(&[vec![1.0, 0.0, 1.0], vec![0.0, 1.0, 1.0]]).unwrap();
    // (A one-sided 97.5 % limit per projection here: 20 000 points, fixed seed.)
    let many = VolLbOptions {
        samples: 20_000,
        ..opts
    };
    let hex = vol_lb(&hexagon, 1.0, &many, &mut rng).unwrap();
    let vr = (3.0 / PI).sqrt();
    let coords = hex
        .iter()
        .find(|b| matches!(b.projection, Projection::Coordinates(_)))
        .unwrap();
    assert!(
        coords.volume_radius <= vr && coords.volume_radius > 0.95 * vr,
        "{hex:?}"
    );
    // The inscribed cross-polytope of the hexagon: two columns, |det| = 1.
    let inscribed = hex
        .iter()
        .find(|b| b.projection == Projection::InscribedCrossPolytope)
        .unwrap();
    assert!((inscribed.volume_radius - (2.0 / PI).sqrt()).abs() < 1e-12);
    // Bad input is a typed error; d = 1 has no bound (Thm 3.2.3 needs d ≥ 2).
    let bad = VolLbOptions { samples: 0, ..opts };
    assert!(vol_lb(&hexagon, 1.0, &bad, &mut rng).is_err());
    assert!(vol_lb(&hexagon, 0.0, &opts, &mut rng).is_err());
    assert!(vol_lb(&hexagon, f64::NAN, &opts, &mut rng).is_err());
    assert!(
        vol_lb(&Body::identity(1).unwrap(), 1.0, &opts, &mut rng)
            .unwrap()
            .is_empty()
    );
}

/// A flat body (rank 1 in ℝ²): the gauge is finite on its line and +∞ off it,
/// although the degeneracy shift moves the chord's start off the line.
#[test]
fn gauge_of_a_flat_body_through_the_chord_simplex() {
    let flat = Body::general(&[vec![1.0, 0.5, -1.0], vec![1.0, 0.5, -1.0]]).unwrap();
    assert!((flat.gauge(&[0.5, 0.5]).unwrap() - 0.5).abs() < 1e-12);
    assert_eq!(flat.gauge(&[0.5, -0.5]).unwrap(), f64::INFINITY);
    assert_eq!(flat.gauge(&[0.0, 0.0]).unwrap(), 0.0);
}

//! The K-norm mechanism (thesis Def 3.3.1) with `F = I` (K = B₁ᵈ), with off-grid
//! antipodal columns under replace-one neighbours, and, at ε = 4, on the cube; NiKM
//! (Fig. 3.3) on the cube; and the broken twins they must catch.

use privq_core::Epsilon;

use super::setup;
use crate::accountant::Accountant;
use crate::audit::{AuditCase, AuditError, Claim, Event, Side};
use crate::contract::{Mechanism, Neighbours};
use crate::knorm::{Body, KNorm, Nikm, NikmOptions};

/// KM with `F = I_d` (d = 2 at test size, 3 at full size) under add/remove-one
/// neighbours: one record added to bin 0. The density ratio is
/// `exp(ε(‖y′ − v‖₁ − ‖y − v‖₁)/Δ′)`, largest (→ ε) where `v₀` is beyond both
/// answers, so the events are tails of `out[0]` on both sides, alone and jointly
/// with a tail of `out[1]`.
pub fn knorm_l1(small: bool) -> Result<AuditCase, AuditError> {
    let d = if small { 2 } else { 3 };
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let body = Body::identity(d).map_err(setup)?;
    let mech = KNorm::new(body, Neighbours::AddRemove, eps).map_err(setup)?;
    knorm_l1_case(mech, eps, d)
}

/// The `knorm-l1` case for a mechanism (the real one, or a twin) on `d` counts,
/// each run charged `charge`; the claim is ε = 1.
pub(crate) fn knorm_l1_case(
    mech: KNorm,
    charge: Epsilon,
    d: usize,
) -> Result<AuditCase, AuditError> {
    let mut events: Vec<Event> = (0..=4)
        .flat_map(|t| {
            [
                Event::at_least(0, f64::from(6 + t)),
                Event::at_most(0, f64::from(5 - t)),
            ]
        })
        .collect();
    for t in 0..3 {
        events.push(Event::new(
            format!("out[0] >= {} and out[1] >= 3", 7 + t),
            move |o| o[0] >= f64::from(7 + t) && o[1] >= 3.0,
        ));
    }
    let base: Vec<u64> = (0..d as u64).map(|i| if i == 0 { 5 } else { 3 }).collect();
    let neighbour: Vec<u64> = base
        .iter()
        .enumerate()
        .map(|(i, &c)| if i == 0 { c + 1 } else { c })
        .collect();
    Ok(AuditCase::new(
        "knorm-l1",
        format!("add/remove-one: {base:?} vs {neighbour:?} (F = I_{d})"),
        Claim::Pure(1.0),
        100_000,
    )
    .mechanism(mech.label())
    .run(move |side, rng| {
        let counts = if side == Side::D { &base } else { &neighbour };
        // Each run is one release through the contract, charged to its own budget.
        Ok(mech.release(&counts[..], &mut Accountant::pure(charge), rng)?)
    })
    .events(events))
}

/// The columns of the replace-one K-norm case: `e₁`, `e₂`, `a = (2/3, 1/3)` and
/// `−a` (every column in B₁², each `±eᵢ` present: K = B₁², the exact sampler).
fn replace_body() -> Result<Body, AuditError> {
    let (a0, a1) = (2.0 / 3.0, 1.0 / 3.0);
    Body::from_rows(&[vec![1.0, 0.0, a0, -a0], vec![0.0, 1.0, a1, -a1]]).map_err(setup)
}

/// KM (thesis Def 3.3.1) under **replace-one** neighbours (Δ = 2), ε = 1, with
/// `F = [e₁ e₂ a −a]`, `a = (2/3, 1/3)` (K = B₁²): one record moves from column
/// `a` to column `−a`, counts [3, 3, 4, 2] vs [3, 3, 3, 3], so `F·x` moves by
/// `2a = (4/3, 2/3)`, the whole replace sensitivity `‖2a‖₁ = 2`, and neither answer
/// lies on the grid (thirds): snapping moves each by up to γ/2 and the margin
/// `Δ·2⁻¹⁰` of the calibration is what covers it. The noise is a product of two
/// Laplace laws of scale Δ′/ε; on the quadrant beyond `D`'s answer in both
/// coordinates the density ratio is the full `e^{ε/(1 + 2⁻¹⁰)}`. Events: those
/// quadrants (and their mirror images beyond `D′`), and one-coordinate tails.
pub fn knorm_replace(small: bool) -> Result<AuditCase, AuditError> {
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let mech = KNorm::new(replace_body()?, Neighbours::Replace, eps).map_err(setup)?;
    knorm_replace_case(mech, eps, small)
}

/// The replace-one case for a mechanism (the real one, or a twin).
pub(crate) fn knorm_replace_case(
    mech: KNorm,
    eps: Epsilon,
    small: bool,
) -> Result<AuditCase, AuditError> {
    let base: Vec<u64> = vec![3, 3, 4, 2];
    let neighbour: Vec<u64> = vec![3, 3, 3, 3];
    // F·x on D is (3 + 4/3, 3 + 2/3), on D′ (3, 3).
    let (y0, y1) = (3.0 + 4.0 / 3.0, 3.0 + 2.0 / 3.0);
    let offsets: &[f64] = if small {
        &[0.0, 1.0]
    } else {
        &[0.0, 0.5, 1.0, 2.0]
    };
    let mut events: Vec<Event> = Vec::new();
    for &s in offsets {
        let (hi0, hi1) = (y0 + s, y1 + s);
        let (lo0, lo1) = (3.0 - s, 3.0 - s);
        events.push(Event::new(
            format!("out >= ({hi0:.3}, {hi1:.3})"),
            move |o: &[f64]| o[0] >= hi0 && o[1] >= hi1,
        ));
        events.push(Event::new(
            format!("out <= ({lo0:.3}, {lo1:.3})"),
            move |o: &[f64]| o[0] <= lo0 && o[1] <= lo1,
        ));
        events.push(Event::at_least(0, hi0));
        events.push(Event::at_most(0, lo0));
    }
    Ok(AuditCase::new(
        "knorm-replace",
        "replace-one: a record moves from column a = (2/3, 1/3) to -a (F = [e1 e2 a -a], K = B1^2), counts [3, 3, 4, 2] vs [3, 3, 3, 3]",
        Claim::Pure(eps.to_f64()),
        100_000,
    )
    .mechanism(mech.label())
    .run(move |side, rng| {
        let counts = if side == Side::D { &base } else { &neighbour };
        Ok(mech.release(&counts[..], &mut Accountant::pure(eps), rng)?)
    })
    .events(events))
}

/// NiKM (thesis Fig. 3.3) with `F` the `d × 2ᵈ` matrix of all sign vectors
/// (K = B∞ᵈ, isotropic, so the levels answer coordinates), d = 2 at test size
/// (L = 2 levels at ε/2), 3 at full size (L = 2), under add/remove-one neighbours:
/// one record added to the all-ones column, which moves every coordinate by 1, so
/// every level sees a neighbour at K-norm distance 1. Events: tails of each output
/// and joint tails (the levels' losses add only jointly).
pub fn nikm_linf(small: bool) -> Result<AuditCase, AuditError> {
    let d = if small { 2 } else { 3 };
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let body = Body::hypercube(d).map_err(setup)?;
    let mech =
        Nikm::new(body, Neighbours::AddRemove, eps, NikmOptions::default()).map_err(setup)?;
    nikm_case(mech, eps, d)
}

/// The `nikm-linf` case for a mechanism (the real one, or a twin) on the cube of
/// dimension `d`, each run charged `charge`; the claim is ε = 1.
pub(crate) fn nikm_case(mech: Nikm, charge: Epsilon, d: usize) -> Result<AuditCase, AuditError> {
    let n = 1usize << d;
    let base: Vec<u64> = vec![3; n];
    // Column n − 1 is (1, …, 1) (bit i of the column index set ⇔ +1 in row i).
    let neighbour: Vec<u64> = (0..n).map(|j| if j == n - 1 { 4 } else { 3 }).collect();
    let mut events: Vec<Event> = Vec::new();
    for t in 0..4 {
        let hi = f64::from(2 + 2 * t);
        let lo = f64::from(-1 - 2 * t);
        events.push(Event::at_least(0, hi));
        events.push(Event::at_most(0, lo));
        events.push(Event::at_least(1, hi));
        events.push(Event::new(
            format!("out[0] >= {hi} and out[1] >= {hi}"),
            move |o| o[0] >= hi && o[1] >= hi,
        ));
        events.push(Event::new(
            format!("out[0] <= {lo} and out[1] <= {lo}"),
            move |o| o[0] <= lo && o[1] <= lo,
        ));
    }
    Ok(AuditCase::new(
        "nikm-linf",
        format!("add/remove-one: one more record in the all-ones column of F (d = {d}, N = {n})"),
        Claim::Pure(1.0),
        100_000,
    )
    .mechanism(mech.label())
    .run(move |side, rng| {
        let counts = if side == Side::D { &base } else { &neighbour };
        Ok(mech.release(&counts[..], &mut Accountant::pure(charge), rng)?)
    })
    .events(events))
}

/// KM (thesis Def 3.3.1) at a large ε = 4 on the cube `K = B∞ᵈ` (F = all sign
/// vectors; d = 2 at test size, 3 at full size), the exact sampler whose radius
/// is a rejection-thinned negative binomial: at large ε the noise spans few
/// units, so a truncated radius or a mis-rounded acceptance probability would
/// show as loss above ε (F·x lies on the grid here: snapping is not exercised).
/// Add/remove-one neighbours: one more record in the all-ones column moves the
/// answer from 0 to (1, …, 1). On the orthant `{v ≥ (1 + s)·1}` the density ratio
/// is `e^{ε/(1 + 2⁻¹⁰)}` pointwise, the largest possible, and the orthant has
/// probability `2⁻ᵈ` under `D′`; the events are these orthants, their mirror
/// images `{v ≤ −s·1}`, and one-coordinate tails.
pub fn knorm_cube_large_eps(small: bool) -> Result<AuditCase, AuditError> {
    let d = if small { 2 } else { 3 };
    let eps = Epsilon::new(4, 1).map_err(setup)?;
    let body = Body::hypercube(d).map_err(setup)?;
    let mech = KNorm::new(body, Neighbours::AddRemove, eps).map_err(setup)?;
    knorm_cube_case(mech, eps, d)
}

/// The `knorm-linf-eps4` case for a mechanism (the real one, or a twin) on the
/// cube of dimension `d`, each run charged `charge`; the claim is ε = 4.
pub(crate) fn knorm_cube_case(
    mech: KNorm,
    charge: Epsilon,
    d: usize,
) -> Result<AuditCase, AuditError> {
    let n = 1usize << d;
    let base: Vec<u64> = vec![2; n];
    // Column n − 1 is (1, …, 1) (bit i of the column index set ⇔ +1 in row i).
    let neighbour: Vec<u64> = (0..n).map(|j| if j == n - 1 { 3 } else { 2 }).collect();
    let mut events: Vec<Event> = Vec::new();
    for s in [0.0, 0.25, 0.5] {
        let hi = 1.0 + s;
        let lo = 0.0 - s; // not -s: no "-0" in the event name
        events.push(Event::new(format!("every out[i] >= {hi}"), move |o| {
            o.iter().all(|&v| v >= hi)
        }));
        events.push(Event::new(format!("every out[i] <= {lo}"), move |o| {
            o.iter().all(|&v| v <= lo)
        }));
        events.push(Event::at_least(0, hi));
        events.push(Event::at_most(0, lo));
    }
    Ok(AuditCase::new(
        "knorm-linf-eps4",
        format!(
            "add/remove-one at ε = 4: one more record in the all-ones column of F \
             (d = {d}, N = {n}, K = B∞^{d})"
        ),
        Claim::Pure(4.0),
        100_000,
    )
    .mechanism(mech.label())
    .run(move |side, rng| {
        let counts = if side == Side::D { &base } else { &neighbour };
        Ok(mech.release(&counts[..], &mut Accountant::pure(charge), rng)?)
    })
    .events(events))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::cases::twins::check;

    /// The replace-one case's twin is KM calibrated for add/remove (Δ = 1 where
    /// replace-one needs 2: half the noise); the real mechanism passes and the twin
    /// is flagged. The case's answers are off the grid, so snapping is exercised.
    #[test]
    fn the_auditor_flags_the_replace_twin_of_knorm() {
        let eps = Epsilon::new(1, 1).unwrap();
        let real = knorm_replace(true).unwrap();
        let twin = KNorm::new(replace_body().unwrap(), Neighbours::AddRemove, eps).unwrap();
        let twin = knorm_replace_case(twin, eps, true).unwrap();
        check("knorm-replace", &real, &[("add/remove calibration", &twin)]);
    }

    /// The existing cases' twins with half the noise (KM or NiKM at 2ε, judged
    /// against ε): `knorm-l1` and `nikm-linf` (ε = 1), `knorm-linf-eps4` (ε = 4, twin
    /// at 8).
    #[test]
    fn the_auditor_flags_the_half_noise_twins_of_knorm() {
        for (name, claim, twin) in [
            (
                "knorm-l1",
                1,
                knorm_l1_case(
                    KNorm::new(
                        Body::identity(2).unwrap(),
                        Neighbours::AddRemove,
                        Epsilon::new(2, 1).unwrap(),
                    )
                    .unwrap(),
                    Epsilon::new(2, 1).unwrap(),
                    2,
                )
                .unwrap(),
            ),
            (
                "nikm-linf",
                1,
                nikm_case(
                    Nikm::new(
                        Body::hypercube(2).unwrap(),
                        Neighbours::AddRemove,
                        Epsilon::new(2, 1).unwrap(),
                        NikmOptions::default(),
                    )
                    .unwrap(),
                    Epsilon::new(2, 1).unwrap(),
                    2,
                )
                .unwrap(),
            ),
            (
                "knorm-linf-eps4",
                4,
                knorm_cube_case(
                    KNorm::new(
                        Body::hypercube(2).unwrap(),
                        Neighbours::AddRemove,
                        Epsilon::new(8, 1).unwrap(),
                    )
                    .unwrap(),
                    Epsilon::new(8, 1).unwrap(),
                    2,
                )
                .unwrap(),
            ),
        ] {
            let real = super::super::by_name(name, true).unwrap().unwrap();
            let reports = check(name, &real, &[("half the noise", &twin)]);
            assert_eq!(reports[0].claimed_epsilon, f64::from(claim), "{name}");
        }
    }

    /// The case's answers are off the grid, and the snapped answers of the two
    /// neighbours are within the calibrated sensitivity Δ′ = Δ(1 + 2⁻¹⁰) but can be
    /// beyond Δ (the margin is what covers them).
    #[test]
    fn the_replace_case_exercises_snapping() {
        let eps = Epsilon::new(1, 1).unwrap();
        let mech = KNorm::new(replace_body().unwrap(), Neighbours::Replace, eps).unwrap();
        let gamma = mech.grid();
        let y = mech.snapped_answer(&[3, 3, 4, 2]);
        let y_prime = mech.snapped_answer(&[3, 3, 3, 3]);
        let exact = [3.0 + 4.0 / 3.0, 3.0 + 2.0 / 3.0];
        for (i, &e) in exact.iter().enumerate() {
            let snapped = y[i] as f64 * gamma;
            assert!(
                snapped != e && (snapped - e).abs() <= gamma / 2.0,
                "{snapped} vs {e}"
            );
        }
        let l1: f64 = y
            .iter()
            .zip(&y_prime)
            .map(|(a, b)| (a - b).abs() as f64 * gamma)
            .sum();
        assert!(l1 <= 2.0 * (1.0 + 2f64.powi(-10)), "{l1}");
    }
}

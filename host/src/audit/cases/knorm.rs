//! The K-norm mechanism (thesis Def 3.3.1) with `F = I` (K = B₁ᵈ) and, at ε = 4, on
//! the cube; NiKM (Fig. 3.3) on the cube.

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
        // Each run is one release through the contract, charged to its own ε = 1.
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
        Ok(mech.release(&counts[..], &mut Accountant::pure(eps), rng)?)
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
        Ok(mech.release(&counts[..], &mut Accountant::pure(eps), rng)?)
    })
    .events(events))
}

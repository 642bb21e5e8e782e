//! Cases for the basic central mechanisms: vector Laplace, geometric, exponential,
//! and the SQ oracle.

use privq_core::{Epsilon, Rho};

use super::{advertised_sigma_squared, setup};
use crate::accountant::Accountant;
use crate::audit::gaussian_profile::DiscreteGaussianProfile;
use crate::audit::{AuditCase, AuditError, Claim, Event, Side};
use crate::central::{DiscreteGaussian, ExponentialMechanism, Geometric, SqOracle, VectorLaplace};
use crate::contract::{Mechanism, Neighbours};
use crate::data::{CountHistogram, MemoryCap};
use crate::query::Query;

/// One unit of the fixed-point format, 2⁻³².
const UNIT: f64 = 1.0 / 4_294_967_296.0;

/// Vector Laplace with Δ = 1/n tiny (n = 2³², so Δ is one fixed-point unit and the
/// grid cannot be finer than Δ) and maximal grid-rounding neighbours: every
/// coordinate sits just below a half-unit point on `D` and just above it on `D′`,
/// the ℓ1 distance is Δ/2, but each coordinate rounds one grid step apart.
pub fn vector_laplace(small: bool) -> Result<AuditCase, AuditError> {
    let dims = if small { 3 } else { 4 };
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let mech =
        VectorLaplace::with_sensitivity(Neighbours::Replace, dims, UNIT, eps).map_err(setup)?;
    let half = 0.25 + 0.5 * UNIT;
    let nudge = UNIT / (4.0 * dims as f64);
    let events = (1..=dims).flat_map(|j| {
        [
            Event::new(
                format!("at least {j} coordinates >= 0.25+2^-33"),
                move |o| o.iter().filter(|&&v| v >= half).count() >= j,
            ),
            Event::new(format!("at least {j} coordinates < 0.25+2^-33"), move |o| {
                o.iter().filter(|&&v| v < half).count() >= j
            }),
        ]
    });
    Ok(AuditCase::new(
        "vector-laplace",
        format!("{dims} coords 0.25+2^-33 -/+ Δ/(4·{dims}), Δ = 2^-32 (n = 2^32)"),
        Claim::Pure(1.0),
        100_000,
    )
    .mechanism("VectorLaplace")
    .run(move |side, rng| {
        let v = if side == Side::D {
            half - nudge
        } else {
            half + nudge
        };
        // Each run is one release through the contract, charged to its own ε = 1.
        Ok(mech.release(&vec![v; dims][..], &mut Accountant::pure(eps), rng)?)
    })
    .events(events))
}

/// The geometric mechanism on a histogram under replace-one neighbours, at the
/// sensitivity the caller charges for that relation (Δ = 2): one record moves from
/// bin 0 to bin 1.
pub fn geometric_histogram(small: bool) -> Result<AuditCase, AuditError> {
    let _ = small;
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let mech = Geometric::histogram(Neighbours::Replace, eps).map_err(setup)?;
    let mut events: Vec<Event> = (8..=12)
        .flat_map(|t| {
            [
                Event::at_most(0, t as f64),
                Event::at_least(1, (t - 4) as f64),
            ]
        })
        .collect();
    for t in 0..4 {
        events.push(Event::new(
            format!("out[0] <= {} and out[1] >= {}", 9 - t, 6 + t),
            move |o| o[0] <= (9 - t) as f64 && o[1] >= (6 + t) as f64,
        ));
    }
    Ok(AuditCase::new(
        "geometric-histogram",
        "replace-one: [10, 5, 0] vs [9, 6, 0]",
        Claim::Pure(1.0),
        100_000,
    )
    .mechanism("Geometric (Δ = 2)")
    .run(move |side, rng| {
        let counts: [u64; 3] = if side == Side::D {
            [10, 5, 0]
        } else {
            [9, 6, 0]
        };
        let out = mech.release(&counts[..], &mut Accountant::pure(eps), rng)?;
        Ok(out.into_iter().map(|c| c as f64).collect())
    })
    .events(events))
}

/// The discrete Gaussian histogram at ρ = 1/2 under replace-one neighbours (Δ₂² = 2,
/// σ² = 2) on the pair of [`geometric_histogram`], one count down and one up. The
/// claim is the mechanism's exact privacy profile at δ = 10⁻³ (CKS20 Thm. 7, here
/// for the two shifted coordinates together: every replace-one pair shifts the
/// counts by some `e_i − e_j`, so this pair is the worst case): ε ≈ 3.128, where the
/// general conversion of ρ (CKS20 Cor. 13) claimed 3.54 and let a 2× noise bug
/// pass. The auditor's ratio is δ-adjusted.
pub fn discrete_gaussian(small: bool) -> Result<AuditCase, AuditError> {
    let rho = Rho::new(1, 2).map_err(setup)?;
    discrete_gaussian_case(small, rho)
}

/// The case with noise for `noise_rho` under the claim for ρ = 1/2 (a twin when
/// they differ).
pub(crate) fn discrete_gaussian_case(small: bool, noise_rho: Rho) -> Result<AuditCase, AuditError> {
    let _ = small;
    let rho = Rho::new(1, 2).map_err(setup)?;
    let delta = 1e-3;
    // The claim's σ² from the advertised ρ = 1/2 and replace-one's Δ₂² = 2
    // (σ² = Δ₂²/(2ρ) = 2), not from the mechanism's own computation.
    let sigma2 = advertised_sigma_squared(2.0, rho.to_f64());
    let epsilon = DiscreteGaussianProfile::new(sigma2, &[-1, 1])?.epsilon(delta)?;
    let mech = DiscreteGaussian::histogram(Neighbours::Replace, noise_rho).map_err(setup)?;
    let mut events: Vec<Event> = (7..=12)
        .flat_map(|t| {
            [
                Event::at_most(0, t as f64),
                Event::at_least(1, (t - 4) as f64),
            ]
        })
        .collect();
    for t in 0..5 {
        events.push(Event::new(
            format!("out[0] <= {} and out[1] >= {}", 9 - t, 6 + t),
            move |o| o[0] <= (9 - t) as f64 && o[1] >= (6 + t) as f64,
        ));
        events.push(Event::new(
            format!("out[1] - out[0] >= {}", -3 + 2 * t),
            move |o| o[1] - o[0] >= (-3 + 2 * t) as f64,
        ));
    }
    Ok(AuditCase::new(
        "discrete-gaussian",
        "replace-one: [10, 5, 0] vs [9, 6, 0], rho = 1/2",
        Claim::Approximate { epsilon, delta },
        100_000,
    )
    .mechanism(format!(
        "DiscreteGaussian (Δ₂² = 2, σ² = {})",
        mech.sigma_squared().to_f64()
    ))
    .run(move |side, rng| {
        let counts: [u64; 3] = if side == Side::D {
            [10, 5, 0]
        } else {
            [9, 6, 0]
        };
        let mut acct = Accountant::zcdp(noise_rho, delta)?;
        let out = mech.release(&counts[..], &mut acct, rng)?;
        Ok(out.into_iter().map(|c| c as f64).collect())
    })
    .events(events))
}

/// The exponential mechanism over k candidates whose scores all move by the
/// sensitivity, in opposite directions for candidate 0 and the others (the pair
/// that attains the full ε).
pub fn exponential(small: bool) -> Result<AuditCase, AuditError> {
    let k = if small { 20 } else { 50 };
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let em = ExponentialMechanism::counts(Neighbours::Replace, eps).map_err(setup)?;
    let scores = move |side: Side| -> Vec<f64> {
        (0..k)
            .map(|i| match (side, i) {
                (Side::D, 0) | (Side::DPrime, 1..) => 1.0,
                _ => 0.0,
            })
            .collect()
    };
    Ok(AuditCase::new(
        "exponential",
        format!("{k} candidates: s = (1, 0, …) vs (0, 1, …), Δ = 1"),
        Claim::Pure(1.0),
        200_000,
    )
    .mechanism("ExponentialMechanism")
    .run(move |side, rng| {
        let chosen = em.release(&scores(side)[..], &mut Accountant::pure(eps), rng)?;
        Ok(vec![chosen as f64])
    })
    .events([Event::equals(0, 0.0), Event::equals(0, 1.0)]))
}

/// The SQ oracle (Prop. 2.9.1) with k = 2 queries on a 2-cell histogram of n = 100
/// records under replace-one neighbours: both queries ask for cell 0.
pub fn sq_oracle(small: bool) -> Result<AuditCase, AuditError> {
    let _ = small;
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let make = |c0: u64| -> Result<_, AuditError> {
        CountHistogram::from_counts(vec![c0, 100 - c0], MemoryCap::default()).map_err(setup)
    };
    let (d, d_prime) = (make(60)?, make(61)?);
    let query = Query::dense(vec![1.0, 0.0]).map_err(setup)?;
    let events = [0.60, 0.61, 0.62, 0.63, 0.64].into_iter().flat_map(|t| {
        [
            Event::new(format!("both answers >= {t}"), move |o: &[f64]| {
                o.iter().all(|&v| v >= t)
            }),
            Event::new(format!("both answers <= {t}"), move |o: &[f64]| {
                o.iter().all(|&v| v <= t)
            }),
        ]
    });
    Ok(AuditCase::new(
        "sq-oracle",
        "replace-one, n = 100: cell 0 holds 60 vs 61; k = 2 queries on it",
        Claim::Pure(1.0),
        100_000,
    )
    .mechanism("SqOracle")
    .run(move |side, rng| {
        let data = if side == Side::D { &d } else { &d_prime };
        let oracle = SqOracle::new(Neighbours::Replace, 2, eps)?;
        let mut session = oracle.release(data, &mut Accountant::pure(eps), rng)?;
        Ok(vec![
            session.answer(&query, rng)?,
            session.answer(&query, rng)?,
        ])
    })
    .events(events))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::cases::twins::check;

    /// The deployed mechanism's σ² is at least the claim's, computed apart: a
    /// mechanism with too little noise fails here (its claim no longer follows it).
    #[test]
    fn the_deployed_sigma_squared_is_at_least_the_advertised_one() {
        let rho = Rho::new(1, 2).unwrap();
        let deployed = DiscreteGaussian::histogram(Neighbours::Replace, rho)
            .unwrap()
            .sigma_squared()
            .to_f64();
        let advertised = advertised_sigma_squared(2.0, 0.5);
        assert_eq!(advertised, 2.0);
        assert!(
            deployed >= advertised * (1.0 - 1e-12),
            "{deployed} < {advertised}"
        );
    }

    /// The twin: noise for ρ = 2 (σ/2, σ² = 1/2) under the claim for ρ = 1/2 (the
    /// exact profile, 3.128). At test size noise for 2ρ (σ/√2) reads 2.82 and
    /// passes; 2.625ρ reads 3.66. Seeds 7/8/9/10 at test size: real
    /// 2.199/1.884/2.022/2.158, this twin 4.661/4.375/4.491/4.501.
    #[test]
    fn the_auditor_flags_the_discrete_gaussian_with_half_the_noise() {
        let real = discrete_gaussian(true).unwrap();
        let half = discrete_gaussian_case(true, Rho::new(2, 1).unwrap()).unwrap();
        check(
            "discrete-gaussian",
            &real,
            &[("half the noise (4ρ)", &half)],
        );
    }
}

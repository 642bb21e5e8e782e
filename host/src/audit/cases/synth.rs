//! The adaptive-marginals mechanism (`privq synth`'s default), end to end.

use privq_core::Rho;

use super::{advertised_sigma_squared, setup};
use crate::accountant::Accountant;
use crate::audit::gaussian_profile::DiscreteGaussianProfile;
use crate::audit::{AuditCase, AuditError, Claim, Event, Side};
use crate::contract::Neighbours;
use crate::data::{Domain, Records};
use crate::synth::adaptive::{AdaptiveConfig, MarginalWorkload, PgmEstimator, adaptive_marginals};

/// The whole mechanism on two binary attributes with T = 4 planned rounds, under
/// add/remove neighbours: D holds 20 records (0, 0) and 10 records (1, 1); D′ adds
/// one record (1, 0), which moves a = 1 up and b = 0 up. Outputs: the noisy one-way
/// counts of a and b (round 0's two measurements), and 1 when round 1 selects the
/// two-way marginal. Events: thresholds on the two counts the extra record moves,
/// their conjunction, and the selection.
///
/// The outputs are a function of the run's first steps only (round 0's two
/// discrete Gaussian measurements at ρ = 9/(10T) each, then round 1's selection
/// at ε₀ = √(8·ρ/(10T)), bounded range), a mechanism of its own by adaptive
/// composition, so the claim is that prefix's exact profile at δ = 10⁻² (a point
/// of the profile where 4 000 runs resolve the events; 10⁻³ gives 3.21): the two
/// measurements shift (1, 1) at σ² = 20/9 (CKS20 Thm. 7 for the pair), composed
/// with randomized response at ε₀, which dominates any ε₀-DP step (Dong, Roth,
/// Su 2022, Prop. 2.4, Thm. 3.2), where the whole run's ρ = 1 converted by CKS20
/// Cor. 13 at δ = 10⁻³ claimed 5.42.
pub fn adaptive_marginals_case(small: bool) -> Result<AuditCase, AuditError> {
    adaptive_case(small, Rho::new(1, 1).map_err(setup)?)
}

/// The case with a run spending `noise_rho` under the claim for ρ = 1 (a twin when
/// they differ).
pub(crate) fn adaptive_case(small: bool, noise_rho: Rho) -> Result<AuditCase, AuditError> {
    let rho = Rho::new(1, 1).map_err(setup)?;
    let delta = 1e-2;
    // The claim from the advertised ρ and the paper's split, not from the
    // mechanism's `Schedule`: each measurement gets ρ_m = 9ρ/(10T) = 9/40
    // (add/remove, Δ₂² = 1: σ² = 1/(2ρ_m) = 20/9), each selection
    // ε₀ = √(8·ρ/(10T)) = √(8/40).
    let (rho_f, t) = (rho.to_f64(), 4.0);
    let sigma2 = advertised_sigma_squared(1.0, 9.0 * rho_f / (10.0 * t));
    let eps0 = (8.0 * rho_f / (10.0 * t)).sqrt();
    let epsilon = DiscreteGaussianProfile::new(sigma2, &[1, 1])?
        .with_pure_step(eps0)
        .epsilon(delta)?;
    let domain = Domain::from_json(r#"{"a": 2, "b": 2}"#).map_err(setup)?;
    let records = |side: Side| -> Result<Records, AuditError> {
        let mut a = vec![0u32; 20];
        a.extend([1; 10]);
        let mut b = a.clone();
        if side == Side::DPrime {
            a.push(1);
            b.push(0);
        }
        Records::from_columns(vec![a, b], &domain).map_err(setup)
    };
    let (d, d_prime) = (records(Side::D)?, records(Side::DPrime)?);
    let workload = MarginalWorkload::all_k_way(&domain, 2).map_err(setup)?;
    let config = AdaptiveConfig {
        rounds: Some(4),
        ..AdaptiveConfig::new(Neighbours::AddRemove)
    };
    let estimator = PgmEstimator::new(&domain, Neighbours::AddRemove, 0);
    let mut events = Vec::new();
    for t in [10.0, 11.0, 12.0, 13.0] {
        events.push(Event::at_most(1, t));
        events.push(Event::at_least(1, t));
        events.push(Event::at_least(2, t + 10.0));
        events.push(Event::new(
            format!("a=1 count >= {t} and b=0 count >= {}", t + 10.0),
            move |o| o[1] >= t && o[2] >= t + 10.0,
        ));
    }
    events.push(Event::equals(4, 1.0));
    events.push(Event::equals(4, 0.0));
    Ok(AuditCase::new(
        "adaptive-marginals",
        format!(
            "add/remove: 20×(0,0) + 10×(1,1) vs the same plus (1,0); rho = {}, T = 4",
            noise_rho.to_f64()
        ),
        Claim::Approximate { epsilon, delta },
        if small { 4_000 } else { 40_000 },
    )
    .mechanism("adaptive marginals (discrete Gaussian + exponential mechanism + PGM)")
    .run(move |side, rng| {
        let data = if side == Side::D { &d } else { &d_prime };
        let mut acct = Accountant::zcdp(noise_rho, delta)?;
        acct.bind(Neighbours::AddRemove);
        let out = adaptive_marginals(
            data,
            &domain,
            &workload,
            &config,
            &estimator,
            &mut acct,
            rng,
            &mut |_| {},
        )?;
        let mut o: Vec<f64> = Vec::with_capacity(5);
        for m in out.measurements.iter().take(2) {
            o.extend(&m.values);
        }
        let pair = out.rounds.first().is_some_and(|r| r.clique.len() == 2);
        o.push(if pair { 1.0 } else { 0.0 });
        Ok(o)
    })
    .events(events))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::cases::twins::check;
    use crate::central::DiscreteGaussian;
    use crate::synth::adaptive::Schedule;

    /// The deployed schedule's noise is at least the claim's, computed apart:
    /// σ² ≥ 20/9 per measurement and ε₀ ≤ √(8/40) per selection.
    #[test]
    fn the_deployed_noise_is_at_least_the_advertised_one() {
        let schedule = Schedule::new(Rho::new(1, 1).unwrap(), Some(4), 2).unwrap();
        let deployed = DiscreteGaussian::histogram(Neighbours::AddRemove, schedule.measure_rho())
            .unwrap()
            .sigma_squared()
            .to_f64();
        let advertised = advertised_sigma_squared(1.0, 9.0 / 40.0);
        assert!((advertised - 20.0 / 9.0).abs() < 1e-12);
        assert!(
            deployed >= advertised * (1.0 - 1e-12),
            "{deployed} < {advertised}"
        );
        let eps0 = schedule.select_epsilon().to_f64();
        assert!(eps0 <= (8.0f64 / 40.0).sqrt() * (1.0 + 1e-12), "{eps0}");
    }

    /// The twin: a run spending ρ = 9 (every measurement's σ divided by 3, every
    /// selection's ε tripled) under the claim for ρ = 1 (2.449). Measured at test
    /// size, seeds 7/8/9/10: the real case 1.330/1.191/1.125/1.439; this twin
    /// 3.884/3.850/3.809/3.815. The earlier half-noise twin (ρ = 4) read
    /// 2.747/2.934/2.666/2.462, flagged at every seed but by 0.013 at seed 10, too
    /// thin to keep.
    #[test]
    fn the_auditor_flags_adaptive_marginals_with_a_third_of_the_noise() {
        let real = adaptive_marginals_case(true).unwrap();
        let third = adaptive_case(true, Rho::new(9, 1).unwrap()).unwrap();
        check(
            "adaptive-marginals",
            &real,
            &[("a third of the noise (9ρ)", &third)],
        );
    }
}

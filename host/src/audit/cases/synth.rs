//! The adaptive-marginals mechanism (`privq synth`'s default), end to end.

use privq_core::Rho;

use super::{advertised_sigma_squared, setup};
use crate::accountant::Accountant;
use crate::audit::gaussian_profile::DiscreteGaussianProfile;
use crate::audit::{AuditCase, AuditError, Claim, Event, Side};
use crate::contract::Neighbours;
use crate::data::{Domain, Records};
use crate::synth::adaptive::{
    AdaptiveConfig, CoarseFrom, MarginalWorkload, PgmEstimator, adaptive_marginals, run,
};
use std::ops::ControlFlow;

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

/// Both cases' run: every 1- and 2-way marginal, T = 4 planned rounds, add/remove
/// neighbours, the junction-tree estimator with the model's total estimated.
fn two_way_run(
    domain: &Domain,
) -> Result<(MarginalWorkload, AdaptiveConfig, PgmEstimator), AuditError> {
    let workload = MarginalWorkload::all_k_way(domain, 2).map_err(setup)?;
    let config = AdaptiveConfig {
        rounds: Some(4),
        ..AdaptiveConfig::new(Neighbours::AddRemove)
    };
    Ok((
        workload,
        config,
        PgmEstimator::new(domain, Neighbours::AddRemove, 0),
    ))
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
    let (workload, config, estimator) = two_way_run(&domain)?;
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

/// The adaptive-marginals mechanism where round 1 measures a coarsened marginal
/// ([`coarse_maps`](crate::synth::adaptive::coarse_maps)), under add/remove
/// neighbours, T = 4: attribute a has 40 values of 50 records each, b = 1 exactly
/// when a ≥ 20 (2 000 records); D′ adds the record (39, 1). a has more than 16
/// values, so its values are cut into 32 runs of equal noisy mass, and the 2-way
/// marginal is offered whole (80 cells) and coarsened (64 groups); the
/// correlation makes round 1 pick it, mostly coarsened. The record is placed so
/// that cuts from the *true* counts differ between D and D′: value 2's midpoint
/// 125 lies exactly on a cut (125/2000·32 = 2), and the extra record moves the
/// total, not the midpoint, so value 2 joins value 1's run in D′ only.
///
/// Outputs: a's noisy count of value 39 and b's of b = 1 (round 0), 1 when round
/// 1 measured coarsened, round 1's noisy count of the cell or group holding
/// (39, 1) when it measured the 2-way marginal, and 1 when its coarsening puts
/// values 1 and 2 together. The claim is the exact profile at δ = 10⁻² of three
/// discrete Gaussian measurements each shifted by 1 (a's one-way at its ρ_a,
/// b's at ρ_b, round 1's at 9ρ/(10T)) composed with the selection at
/// ε₀ = √(8ρ/(10T)); the coarsening itself reads only a's noisy counts, so it is
/// post-processing and adds nothing. ρ_a and ρ_b are the documented split of
/// round 0 (`ρ_a ∝ u_a = max(2560, ⌊∛(n_a²·2³⁰)⌋)`, two rounds' worth in all for
/// d = 2, T = 4), computed here apart from the mechanism's schedule.
pub fn adaptive_coarsened_case(small: bool) -> Result<AuditCase, AuditError> {
    coarsened_case(small, CoarseFrom::Noisy)
}

/// The advertised (σ²_a, σ²_b, σ²_round, ε₀) of [`adaptive_coarsened_case`].
fn coarsened_noise() -> (f64, f64, f64, f64) {
    let (rho, t) = (1.0, 4.0);
    let step = 9.0 * rho / (10.0 * t);
    let unit = |n: f64| ((n * n * 2f64.powi(30)).cbrt().floor()).max(2560.0);
    let (ua, ub) = (unit(40.0), unit(2.0));
    // Round 0 takes max(d, ⌊T/4⌋) = 2 rounds' step (Σu > 2·2560 here).
    let round0 = step * 2.0;
    let sigma2 = |rho: f64| advertised_sigma_squared(1.0, rho);
    (
        sigma2(round0 * ua / (ua + ub)),
        sigma2(round0 * ub / (ua + ub)),
        sigma2(step),
        (8.0 * rho / (10.0 * t)).sqrt(),
    )
}

/// [`adaptive_coarsened_case`] with the coarsenings cut from `from` (a twin
/// when it is not the noisy counts).
pub(crate) fn coarsened_case(small: bool, from: CoarseFrom) -> Result<AuditCase, AuditError> {
    let delta = 1e-2;
    let (sa, sb, sm, eps0) = coarsened_noise();
    let epsilon = DiscreteGaussianProfile::new(sa, &[1])?
        .compose(&DiscreteGaussianProfile::new(sb, &[1])?)
        .compose(&DiscreteGaussianProfile::new(sm, &[1])?)
        .with_pure_step(eps0)
        .epsilon(delta)?;
    let domain = Domain::from_json(r#"{"a": 40, "b": 2}"#).map_err(setup)?;
    let records = |side: Side| -> Result<Records, AuditError> {
        let mut a: Vec<u32> = (0..40u32).flat_map(|v| [v; 50]).collect();
        if side == Side::DPrime {
            a.push(39);
        }
        let b = a.iter().map(|&v| u32::from(v >= 20)).collect();
        Records::from_columns(vec![a, b], &domain).map_err(setup)
    };
    let (d, d_prime) = (records(Side::D)?, records(Side::DPrime)?);
    let (workload, config, estimator) = two_way_run(&domain)?;
    let mut events = Vec::new();
    for t in [51.0, 52.0, 53.0, 54.0] {
        events.push(Event::at_least(0, t));
        events.push(Event::at_least(3, t));
        events.push(Event::new(
            format!("a=39 and round 1's (39, 1) counts both >= {t}"),
            move |o| o[0] >= t && o[3] >= t,
        ));
        events.push(Event::new(
            format!(
                "a=39, b=1 and round 1's (39, 1) counts all >= {t}, {}",
                t + 950.0
            ),
            move |o| o[0] >= t && o[1] >= t + 950.0 && o[3] >= t,
        ));
    }
    for t in [1003.0, 1005.0] {
        events.push(Event::at_least(1, t));
    }
    for v in [0.0, 1.0] {
        events.push(Event::equals(2, v));
        events.push(Event::equals(4, v));
    }
    events.push(Event::new(
        "coarsened, (39, 1) >= 53, values 1 and 2 together",
        |o| o[2] == 1.0 && o[3] >= 53.0 && o[4] == 1.0,
    ));
    Ok(AuditCase::new(
        "adaptive-marginals-coarsened",
        format!(
            "add/remove: a = 0..39 × 50, b = [a >= 20] vs the same plus (39, 1); rho = 1, T = 4; cuts from the {} counts",
            if from == CoarseFrom::Noisy { "noisy" } else { "true" }
        ),
        Claim::Approximate { epsilon, delta },
        if small { 4_000 } else { 40_000 },
    )
    .mechanism("adaptive marginals with coarsened measurements (discrete Gaussian + exponential mechanism + PGM)")
    .run(move |side, rng| {
        let data = if side == Side::D { &d } else { &d_prime };
        let mut acct = Accountant::zcdp(Rho::new(1, 1).map_err(setup)?, delta)?;
        acct.bind(Neighbours::AddRemove);
        let out = run(
            data,
            &domain,
            &workload,
            &config,
            &estimator,
            &mut acct,
            rng,
            &mut |_| ControlFlow::Continue(()),
            from,
        )?;
        let m = &out.measurements;
        // The claim holds only if the run spent what it advertises on this prefix
        // (round 1 not the last round, which would measure at 9/10 of the rest).
        let first = out.rounds.first();
        let spent_as_advertised = m[0].sigma.powi(2) >= sa * (1.0 - 1e-12)
            && m[1].sigma.powi(2) >= sb * (1.0 - 1e-12)
            && first.is_some_and(|r| {
                r.sigma.powi(2) >= sm * (1.0 - 1e-12)
                    && r.epsilon.is_some_and(|e| e.to_f64() <= eps0 * (1.0 + 1e-12))
            });
        if !spent_as_advertised {
            return Err("the run's round 0 or round 1 noise is below the claim's".into());
        }
        let mut o = vec![m[0].values[39], m[1].values[1], 0.0, f64::NAN, 0.0];
        if let Some(round1) = m.get(2).filter(|r| r.clique.len() == 2) {
            // Cell (39, 1) of the 2-way marginal is 39·2 + 1.
            let cell = 39 * 2 + 1;
            match &round1.groups {
                None => o[3] = round1.values[cell],
                Some(g) => {
                    o[2] = 1.0;
                    o[3] = round1.values[g[cell] as usize];
                    // Cells (1, 0) and (2, 0).
                    o[4] = f64::from(u8::from(g[2] == g[4]));
                }
            }
        }
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

    /// The coarsened case's deployed noise is at least its advertised noise:
    /// round 0's two one-way ρ's and round 1's measurement ρ at most the
    /// advertised ones, the selection's ε₀ at most √(8/40).
    #[test]
    fn the_coarsened_case_deploys_at_least_its_advertised_noise() {
        let schedule = Schedule::new(Rho::new(1, 1).unwrap(), Some(4), 2).unwrap();
        let (sa, sb, sm, eps0) = coarsened_noise();
        let sigma2 = |rho: Rho| {
            DiscreteGaussian::histogram(Neighbours::AddRemove, rho)
                .unwrap()
                .sigma_squared()
                .to_f64()
        };
        let one_way = schedule.one_way_rhos(&[40, 2]).unwrap();
        for (deployed, advertised) in [
            (sigma2(one_way[0]), sa),
            (sigma2(one_way[1]), sb),
            (sigma2(schedule.measure_rho()), sm),
        ] {
            assert!(
                deployed >= advertised * (1.0 - 1e-12),
                "{deployed} < {advertised}"
            );
            assert!(deployed <= advertised * 1.01, "{deployed} ≫ {advertised}");
        }
        assert!(schedule.select_epsilon().to_f64() <= eps0 * (1.0 + 1e-12));
    }

    /// The case's premise: cut from the true counts, values 1 and 2 are apart in
    /// D and together in D′ (the cut the twin leaks).
    #[test]
    fn the_true_cuts_of_the_coarsened_case_differ_between_the_neighbours() {
        use crate::synth::adaptive::{COARSE_ABOVE, COARSE_GROUPS, coarse_maps};
        let d = vec![vec![50.0; 40]];
        let mut d_prime = d.clone();
        d_prime[0][39] += 1.0;
        let cut = |y: &[Vec<f64>]| coarse_maps(y, &[false], COARSE_ABOVE, COARSE_GROUPS);
        let (m, m_prime) = (cut(&d), cut(&d_prime));
        let (m, m_prime) = (m[0].as_ref().unwrap(), m_prime[0].as_ref().unwrap());
        assert_ne!(m[1], m[2]);
        assert_eq!(m_prime[1], m_prime[2]);
        assert_eq!(m[39], 31);
    }

    /// The twin cutting a's values at its true counts instead of its noisy ones,
    /// under the same claim: values 1 and 2 share a run in D′ and never in D.
    #[test]
    fn the_auditor_flags_coarsenings_cut_from_the_true_counts() {
        let real = adaptive_coarsened_case(true).unwrap();
        let truth = coarsened_case(true, CoarseFrom::Truth).unwrap();
        check(
            "adaptive-marginals-coarsened",
            &real,
            &[("cuts from the true counts", &truth)],
        );
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

//! The adaptive-marginals mechanism (`privq synth`'s default), end to end.

use privq_core::Rho;

use super::setup;
use crate::accountant::{Accountant, zcdp_epsilon};
use crate::audit::{AuditCase, AuditError, Claim, Event, Side};
use crate::contract::Neighbours;
use crate::data::{Domain, Records};
use crate::synth::adaptive::{AdaptiveConfig, MarginalWorkload, PgmEstimator, adaptive_marginals};

/// The whole mechanism on two binary attributes with T = 4 planned rounds, under
/// add/remove neighbours: D holds 20 records (0, 0) and 10 records (1, 1); D′ adds
/// one record (1, 0), which moves a = 1 up and b = 0 up. The claim is the run's ρ = 1
/// converted to (ε, δ) at δ = 10⁻³ (CKS20 Cor. 13). Outputs: the noisy one-way
/// counts of a and b (first measurements), and 1 when the first round selects the
/// two-way marginal. Events: thresholds on the two counts the extra record moves,
/// their conjunction, and the selection.
pub fn adaptive_marginals_case(small: bool) -> Result<AuditCase, AuditError> {
    let rho = Rho::new(1, 1).map_err(setup)?;
    let delta = 1e-3;
    let epsilon = zcdp_epsilon(rho.to_f64(), delta).map_err(setup)?;
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
        "add/remove: 20×(0,0) + 10×(1,1) vs the same plus (1,0); rho = 1, T = 4",
        Claim::Approximate { epsilon, delta },
        if small { 4_000 } else { 40_000 },
    )
    .mechanism("adaptive marginals (discrete Gaussian + exponential mechanism + PGM)")
    .run(move |side, rng| {
        let data = if side == Side::D { &d } else { &d_prime };
        let mut acct = Accountant::zcdp(rho, delta)?;
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

//! Cases for private multiplicative weights (thesis Fig. 4.2).
//!
//! The adversarial pattern: n small, σ small, m = 1 update allowed; the first
//! query has a large gap (an update round), then the same query is asked `k` more
//! times with the gap at the threshold T, so every later round is lazy or not
//! depending on fresh noise around the data's answer (each lazy round there has
//! likelihood ratio up to e^{1/(nσ)} between the neighbours). The
//! released transcript is the number of lazy rounds before the session stops. (An
//! earlier pure variant released the compared answer on update rounds and printed
//! T̂; the session now exposes neither, so T̂ cannot be conditioned on.)

use privq_core::Epsilon;

use super::setup;
use crate::accountant::Accountant;
use crate::audit::{AuditCase, AuditError, Claim, Event, Side};
use crate::central::pmw::{PmwError, PmwParams, PmwSession, PmwVariant};
use crate::data::{CountHistogram, MemoryCap};
use crate::query::Query;

/// The case's constants.
struct Pattern {
    n: u64,
    sigma: f64,
    threshold: f64,
    lazy_rounds: usize,
    variant: PmwVariant,
}

/// Pure PMW (randomized threshold drawn once), n = 1841, σ = 0.01, m = 1, and
/// k = 200 lazy rounds (k = 50 at the test size).
pub fn pmw_pure(small: bool) -> Result<AuditCase, AuditError> {
    let p = Pattern {
        n: 1841,
        sigma: 0.01,
        threshold: 0.05,
        lazy_rounds: if small { 50 } else { 200 },
        variant: PmwVariant::Pure,
    };
    build("pmw-pure", p, Claim::Pure(1.0))
}

/// Approximate PMW (fixed threshold), n = 1841, σ = 0.13 (just above the smallest
/// the corrected privacy condition accepts at δ = 10⁻⁶, m = 1), k = 200 lazy rounds.
pub fn pmw_approximate(small: bool) -> Result<AuditCase, AuditError> {
    let delta = 1e-6;
    let p = Pattern {
        n: 1841,
        sigma: 0.13,
        threshold: 0.2,
        lazy_rounds: if small { 50 } else { 200 },
        variant: PmwVariant::Approximate { delta },
    };
    build(
        "pmw-approx",
        p,
        Claim::Approximate {
            epsilon: 1.0,
            delta,
        },
    )
}

fn build(name: &str, p: Pattern, claim: Claim) -> Result<AuditCase, AuditError> {
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let params =
        PmwParams::user(1.0, p.sigma, p.threshold, 1.0, p.variant, eps, p.n).map_err(setup)?;
    // After one update with η = 1 the hypothesis answers e/(e+1) on cell 0; put
    // the data's answer T above it.
    let after = std::f64::consts::E / (1.0 + std::f64::consts::E);
    let c0 = ((after + p.threshold) * p.n as f64).round() as u64;
    if c0 >= p.n {
        return Err(AuditError::InvalidCase(format!(
            "{name}: e/(e+1) + T must be below 1 − 1/n"
        )));
    }
    let hist = |c: u64| -> Result<CountHistogram, AuditError> {
        CountHistogram::from_counts(vec![c, p.n.saturating_sub(c)], MemoryCap::default())
            .map_err(setup)
    };
    let (d, d_prime) = (hist(c0)?, hist(c0 + 1)?);
    let query = Query::dense(vec![1.0, 0.0]).map_err(setup)?;
    let (n, k, variant) = (p.n, p.lazy_rounds, p.variant);
    let pure = matches!(variant, PmwVariant::Pure);
    let events: Vec<Event> = [1, 2, 3, 5, 8, 12, 20, 50, 100, 200]
        .into_iter()
        .filter(|&j| j <= k)
        .flat_map(|j| [Event::at_least(0, j as f64), Event::at_most(0, j as f64)])
        .collect();
    let neighbours = format!(
        "replace-one, n = {n}: cell 0 holds {c0} vs {}; 1 update, then {k} rounds at gap T",
        c0 + 1
    );
    Ok(AuditCase::new(name, neighbours, claim, 20_000)
        .mechanism(if pure { "PMW (ε, 0)" } else { "PMW (ε, δ)" })
        .run(move |side, rng| {
            let data = if side == Side::D { &d } else { &d_prime };
            let mut budget = match variant {
                PmwVariant::Pure => Accountant::pure(eps),
                PmwVariant::Approximate { delta } => Accountant::approximate(eps, delta)?,
            };
            let mut s = PmwSession::new(data, params, k + 1, eps, &mut budget, rng.clone())?;
            let mut lazy = 0.0;
            for round in 0..=k {
                match s.answer(&query) {
                    Ok(a) if round > 0 && matches!(a, crate::central::pmw::Answer::Lazy(_)) => {
                        lazy += 1.0
                    }
                    Ok(_) => {}
                    Err(PmwError::Failure) => break,
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(vec![lazy])
        })
        .events(events))
}

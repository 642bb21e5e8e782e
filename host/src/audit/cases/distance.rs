//! The Huang–Roth offline distance-query synopsis (seeds 000/001).

use privq_core::Epsilon;

use super::setup;
use crate::audit::{AuditCase, AuditError, Claim, Event, Side};
use crate::distance::BoxDomain;
use crate::distance::offline::{OfflineConfig, Synopsis};
use crate::distance::privacy::Privacy;

/// The offline synopsis on the unit interval: n points at 1/2 and one point that
/// sits at 0 on `D` and at 1 on `D′` (the largest move a record can make, changing
/// every answer by up to 1/n). The output is the synopsis' answers at 0, 1/2, 1.
pub fn distance_offline(small: bool) -> Result<AuditCase, AuditError> {
    let n = if small { 100 } else { 200 };
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let domain = BoxDomain::unit_cube(1).map_err(setup)?;
    let config = OfflineConfig::new(Privacy::pure(eps));
    let points = |far: f64| -> Vec<[f64; 1]> {
        std::iter::once([far])
            .chain(std::iter::repeat_n([0.5], n - 1))
            .collect()
    };
    let (d, d_prime) = (points(0.0), points(1.0));
    // The noise is wide at this n: thresholds across the range, on the answer at 0
    // and on F(0) − F(1), which the move shifts by 2/n.
    let events = (1..10).flat_map(|i| {
        let t = i as f64 / 10.0;
        let u = 2.0 * t - 1.0;
        [
            Event::at_least(0, t),
            Event::at_most(0, t),
            Event::new(format!("F(0) - F(1) >= {u:.1}"), move |o: &[f64]| {
                o[0] - o[2] >= u
            }),
            Event::new(format!("F(0) - F(1) <= {u:.1}"), move |o: &[f64]| {
                o[0] - o[2] <= u
            }),
        ]
    });
    Ok(AuditCase::new(
        "distance-offline",
        format!("n = {n} points at 1/2; one record at 0 vs at 1"),
        Claim::Pure(1.0),
        20_000,
    )
    .mechanism("Huang–Roth synopsis")
    .run(move |side, rng| {
        let pts = if side == Side::D { &d } else { &d_prime };
        let mut accountant = crate::accountant::Accountant::exactly(config.privacy.cost())?;
        let s = Synopsis::release(&domain, pts, &config, &mut accountant, rng)?;
        Ok(vec![
            s.answer(&[0.0])?,
            s.answer(&[0.5])?,
            s.answer(&[1.0])?,
        ])
    })
    .events(events))
}

//! The threshold oracle TO of thesis Fig. 7.1 (Lemma 7.3.1).

use privq_core::Epsilon;

use super::setup;
use crate::accountant::Accountant;
use crate::audit::{AuditCase, AuditError, Claim, Event, Side};
use crate::contract::Mechanism;
use crate::data::{CountHistogram, MemoryCap};
use crate::threshold::{CountingQuery, Label, ThresholdOracle};

/// The labels are encoded as numbers for the auditor's events.
fn code(label: Label) -> f64 {
    match label {
        Label::Below => 0.0,
        Label::Close => 0.5,
        Label::Above => 1.0,
    }
}

/// TO with b = 2 distinct queries, ε = 1: one record moves from cell 00 to 11
/// (replace-one, n = 100), so both queries' counts (attribute 0; attributes 0 and 1)
/// grow by one (50 → 51 and 30 → 31). Each query is asked at thresholds whose band
/// edges `n·(t ± 2α/3)` (α = 0.3) sit on its two counts, and asked twice (reuse
/// must not leak more).
pub fn threshold_oracle(small: bool) -> Result<AuditCase, AuditError> {
    let eps = Epsilon::new(1, 1).map_err(setup)?;
    let make = |c00: u64, c11: u64| -> Result<_, AuditError> {
        CountHistogram::from_counts(vec![c00, 20, 30, c11], MemoryCap::default()).map_err(setup)
    };
    // attribute 0 (cells 01, 11): 20 + c11; attributes 0 and 1 (cell 11): c11.
    let (d, d_prime) = (make(20, 30)?, make(19, 31)?);
    let thresholds: &[f64] = if small {
        &[0.3, 0.31, 0.7, 0.71]
    } else {
        &[0.29, 0.3, 0.31, 0.32, 0.69, 0.7, 0.71, 0.72]
    };
    let queries = [
        CountingQuery::conjunction(0b01),
        CountingQuery::conjunction(0b11),
    ];
    let slots = thresholds.len();
    let events = (0..2 * slots).flat_map(move |j| {
        [
            Event::new(format!("answer {j} is 1"), move |o: &[f64]| o[j] == 1.0),
            Event::new(format!("answer {j} is 0"), move |o: &[f64]| o[j] == 0.0),
            Event::new(format!("answer {j} is ⊥"), move |o: &[f64]| o[j] == 0.5),
        ]
    });
    // Both queries at once: their losses add up to ε.
    let joint = (0..slots).flat_map(move |i| {
        (slots..2 * slots).flat_map(move |j| {
            [
                Event::new(format!("answers {i} and {j} are 1"), move |o: &[f64]| {
                    o[i] == 1.0 && o[j] == 1.0
                }),
                Event::new(format!("answers {i} and {j} are 0"), move |o: &[f64]| {
                    o[i] == 0.0 && o[j] == 0.0
                }),
            ]
        })
    });
    let events = events.chain(joint);
    let ts = thresholds.to_vec();
    Ok(AuditCase::new(
        "threshold-oracle",
        "replace-one, n = 100: a record moves from cell 00 to 11; b = 2 queries, each asked at every threshold twice",
        Claim::Pure(1.0),
        50_000,
    )
    .mechanism("ThresholdOracle")
    .run(move |side, rng| {
        let data = if side == Side::D { &d } else { &d_prime };
        let oracle = ThresholdOracle::new(2, eps, 0.3)?;
        let mut s = oracle.release(data, &mut Accountant::pure(eps), rng)?;
        let mut out = Vec::with_capacity(2 * ts.len());
        for q in &queries {
            for &t in &ts {
                // The band edges n(t ∓ 0.2) sit on the counts 50/51 of the first
                // query; the second one's counts are 30/31, 20 lower.
                let t = if q.mask() == 0b11 { t - 0.2 } else { t };
                let first = s.ask(q, t, rng)?;
                let again = s.ask(q, t, rng)?;
                debug_assert_eq!(first, again);
                out.push(code(first));
            }
        }
        Ok(out)
    })
    .events(events))
}

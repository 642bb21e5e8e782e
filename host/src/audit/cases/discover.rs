//! Private domain discovery (DP partition selection with a threshold).

use privq_core::Epsilon;

use super::setup;
use crate::accountant::Accountant;
use crate::audit::{AuditCase, AuditError, Claim, Event, Side};
use crate::contract::Neighbours;
use crate::data::{CsvColumns, Discovery, ValueCounts};

/// The pair partition selection is most fragile against, under replace-one
/// neighbours: one record moves from a value `b` whose count sits exactly at the
/// threshold τ to a value `zz` that `D` does not have at all. `b` then drops below
/// τ, and `zz` appears with count 1 (kept only with probability ≤ δ). δ = 10⁻² so
/// that the δ part is observable (zz is kept in hundreds of runs) and the event
/// "zz kept" tests it through the δ-adjusted bound. Output: `[b kept, zz kept]`.
pub fn discovery(small: bool) -> Result<AuditCase, AuditError> {
    let _ = small;
    let (eps, delta) = (Epsilon::new(1, 1).map_err(setup)?, 1e-2);
    let mech = Discovery::new(Neighbours::Replace, eps, delta, 1).map_err(setup)?;
    let tau = u64::try_from(mech.threshold()).map_err(setup)?;
    let table = |rows: &[(&str, u64)]| -> Result<ValueCounts, AuditError> {
        let mut text = String::from("x,count\n");
        for (value, count) in rows {
            text.push_str(&format!("{value},{count}\n"));
        }
        ValueCounts::from_csv(text.as_bytes(), &CsvColumns::new().count("count")).map_err(setup)
    };
    let d = table(&[("a", 1000), ("b", tau)])?;
    let d_prime = table(&[("a", 1000), ("b", tau - 1), ("zz", 1)])?;
    Ok(AuditCase::new(
        "discovery",
        format!("replace-one: b at the threshold ({tau}) vs one b moved to a new value zz"),
        Claim::Approximate {
            epsilon: 1.0,
            delta,
        },
        100_000,
    )
    .mechanism("domain discovery (partition selection)")
    .run(move |side, rng| {
        let counts = if side == Side::D { &d } else { &d_prime };
        let mut accountant = Accountant::approximate(eps, delta)?;
        let domain = mech.release(counts, &mut accountant, rng)?;
        let kept = |v: &str| {
            let found = domain.attribute(0).and_then(|a| a.index_of(v)).is_some();
            f64::from(u8::from(found))
        };
        Ok(vec![kept("b"), kept("zz")])
    })
    .events([
        Event::equals(0, 1.0),
        Event::equals(0, 0.0),
        Event::equals(1, 1.0),
        Event::new("b kept and zz dropped", |o: &[f64]| {
            o[0] == 1.0 && o[1] == 0.0
        }),
    ]))
}

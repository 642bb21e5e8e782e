//! The Fairness LP as a DP mechanism (thesis §8.2.3): V = all subsets of a small
//! universe, `d(x, y) = ε|x Δ y|`, so a (D_∞, d)-Lipschitz mapping is ε-DP.

use privq_core::rand_core::Rng;

use super::setup;
use crate::audit::{AuditCase, AuditError, Claim, Event, Side};
use crate::dx::FiniteMetric;
use crate::fairness::{Divergence, FairnessLp, Instance};

/// The (D_∞, d) Fairness LP's optimal mechanism for the count `|x|` (loss
/// `| |x| − a |`, outcomes `0..=m`) over the subsets of an m-element universe
/// (m = 3 at test size, 4 at full size), ε = 1/2, sampled in floating point from
/// the solved rows. The neighbouring pair is the one where the solved mapping's
/// log-ratio is largest (the LP makes many pairs tight at ε).
pub fn fairness_dp(small: bool) -> Result<AuditCase, AuditError> {
    let m = if small { 3 } else { 4 };
    let n = 1usize << m;
    let eps = 0.5;
    let bits: Vec<Vec<usize>> = (0..n)
        .map(|x| (0..m).map(|i| (x >> i) & 1).collect())
        .collect();
    let metric = FiniteMetric::weighted_hamming(&bits, &vec![eps; m]).map_err(setup)?;
    let loss = (0..n)
        .map(|x| {
            (0..=m)
                .map(|a| (f64::from(x.count_ones()) - a as f64).abs())
                .collect()
        })
        .collect();
    let instance = Instance::new(metric, loss).map_err(setup)?;
    let mapping = FairnessLp::new(Divergence::Inf)
        .solve(&instance)
        .map_err(setup)?
        .mapping;
    // The tightest neighbouring pair and outcome.
    let mut worst = (0, 1, f64::NEG_INFINITY);
    for x in 0..n {
        for i in 0..m {
            let y = x ^ (1 << i);
            for (&p, &q) in mapping.row(x).iter().zip(mapping.row(y)) {
                // p > 0 = q is an infinite loss: the pair to audit, above all.
                let loss = if p > 0.0 && q == 0.0 {
                    f64::INFINITY
                } else if p > 0.0 {
                    (p / q).ln()
                } else {
                    f64::NEG_INFINITY
                };
                if loss > worst.2 {
                    worst = (x, y, loss);
                }
            }
        }
    }
    let (x, y, _) = worst;
    let rows = [mapping.row(x).to_vec(), mapping.row(y).to_vec()];
    Ok(AuditCase::new(
        "fairness-dp",
        format!("add/remove-one on {m} elements: database {x:0m$b} vs {y:0m$b}"),
        Claim::Pure(eps),
        100_000,
    )
    .mechanism("Fairness LP (D_∞, ε|xΔy|), optimal for the count")
    .run(move |side, rng| {
        let row = if side == Side::D { &rows[0] } else { &rows[1] };
        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let mut acc = 0.0;
        let a = row
            .iter()
            .position(|p| {
                acc += p;
                u < acc
            })
            .unwrap_or(row.len() - 1);
        Ok(vec![a as f64])
    })
    .events((0..=m).map(|a| Event::equals(0, a as f64))))
}

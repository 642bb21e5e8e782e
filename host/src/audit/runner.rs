//! Running a case: seeded runs on both sides (in parallel), counts, the report.

use rand_chacha::ChaCha12Rng;
use rand_core::SeedableRng;
use rayon::prelude::*;
use serde::Serialize;

use super::AuditError;
use super::case::{AuditCase, Side};
use super::estimate::{DEFAULT_ALPHA, EventCounts, empirical_epsilon};

/// One row of the audit table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditReport {
    /// The case's name.
    pub name: String,
    /// The mechanism's label.
    pub mechanism: String,
    /// The neighbour pair pattern.
    pub neighbours: String,
    /// Runs per side.
    pub runs: u64,
    /// Number of events.
    pub events: usize,
    /// The empirical lower bound on ε (0 when no event separates the sides).
    pub empirical_epsilon: f64,
    /// The claimed ε.
    pub claimed_epsilon: f64,
    /// The claimed δ (0 for pure claims; then the bound is δ-adjusted).
    pub claimed_delta: f64,
    /// The event attaining the bound, if any.
    pub witness: Option<String>,
    /// The confidence level of the bound is `1 − alpha`.
    pub alpha: f64,
}

impl AuditReport {
    /// True when the empirical lower bound does not exceed the claim.
    pub fn passed(&self) -> bool {
        self.empirical_epsilon <= self.claimed_epsilon
    }

    /// "ok" or "VIOLATED".
    pub fn verdict(&self) -> &'static str {
        if self.passed() { "ok" } else { "VIOLATED" }
    }
}

/// The seed of run `run` on `side` of an audit seeded with `seed` (SplitMix64 of
/// the three, so every run has its own independent-looking stream).
pub fn run_seed(seed: u64, side: Side, run: u64) -> u64 {
    let side = match side {
        Side::D => 0x5151_5151_5151_5151u64,
        Side::DPrime => 0xa3a3_a3a3_a3a3_a3a3u64,
    };
    let mut z = seed
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(side)
        .wrapping_add(run.wrapping_mul(0xbf58_476d_1ce4_e5b9));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Runs `case` `runs` times on each side (in parallel; deterministic given `seed`),
/// counts its events and bounds ε at confidence 95 %. `progress` is called with 1
/// after every finished run (from worker threads).
///
/// ```
/// use privq_host::audit::{audit, cases};
/// let case = cases::geometric_histogram(true)?;
/// let report = audit(&case, 500, 1, &|_| {})?;
/// assert_eq!(report.runs, 500);
/// assert!(report.passed());
/// # Ok::<(), privq_host::audit::AuditError>(())
/// ```
pub fn audit(
    case: &AuditCase,
    runs: u64,
    seed: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<AuditReport, AuditError> {
    if runs == 0 {
        return Err(AuditError::InvalidCase("runs must be at least 1".into()));
    }
    if case.events.is_empty() {
        return Err(AuditError::InvalidCase(format!(
            "case {} has no events",
            case.name
        )));
    }
    let counts = EventCounts {
        runs,
        d: count_side(case, Side::D, runs, seed, progress)?,
        d_prime: count_side(case, Side::DPrime, runs, seed, progress)?,
    };
    let (empirical, witness) = empirical_epsilon(&counts, &case.claim, DEFAULT_ALPHA)?;
    Ok(AuditReport {
        name: case.name.clone(),
        mechanism: case.mechanism.clone(),
        neighbours: case.neighbours.clone(),
        runs,
        events: case.events.len(),
        empirical_epsilon: empirical,
        claimed_epsilon: case.claim.epsilon(),
        claimed_delta: case.claim.delta(),
        witness: witness.map(|w| {
            let event = case.events.get(w.event).map_or("?", |e| e.name());
            let (num, den) = if w.d_over_d_prime {
                ("D", "D'")
            } else {
                ("D'", "D")
            };
            format!(
                "{event}: {:.4} on {num} vs {:.4} on {den}",
                w.p_hat, w.q_hat
            )
        }),
        alpha: DEFAULT_ALPHA,
    })
}

/// Event counts over `runs` runs on one side.
fn count_side(
    case: &AuditCase,
    side: Side,
    runs: u64,
    seed: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<u64>, AuditError> {
    let run = case
        .run
        .as_ref()
        .ok_or_else(|| AuditError::InvalidCase(format!("case {} has no run closure", case.name)))?;
    let zero = || vec![0u64; case.events.len()];
    (0..runs)
        .into_par_iter()
        .try_fold(zero, |mut acc, i| {
            let mut rng = ChaCha12Rng::seed_from_u64(run_seed(seed, side, i));
            let out = run(side, &mut rng).map_err(|source| AuditError::Mechanism {
                run: i,
                side,
                source,
            })?;
            for (slot, event) in acc.iter_mut().zip(&case.events) {
                *slot += u64::from(event.holds(&out));
            }
            progress(1);
            Ok(acc)
        })
        .try_reduce(zero, |mut a, b| {
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
            Ok(a)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{Claim, Event};

    fn coin(bias_d: u64, bias_dp: u64) -> AuditCase {
        AuditCase::new("coin", "biased coins", Claim::Pure(1.0), 100)
            .run(move |side, rng| {
                use rand_core::Rng;
                let bias = if side == Side::D { bias_d } else { bias_dp };
                Ok(vec![u64::from(rng.next_u32() % 100 < bias as u32) as f64])
            })
            .events([Event::equals(0, 1.0), Event::equals(0, 0.0)])
    }

    #[test]
    fn audits_are_deterministic_given_the_seed() {
        let case = coin(50, 50);
        let a = audit(&case, 2_000, 9, &|_| {}).unwrap();
        assert_eq!(a, audit(&case, 2_000, 9, &|_| {}).unwrap());
        assert!(a.passed());
        assert_ne!(run_seed(9, Side::D, 0), run_seed(9, Side::DPrime, 0));
        assert_ne!(run_seed(9, Side::D, 0), run_seed(9, Side::D, 1));
    }

    #[test]
    fn a_large_separation_is_flagged() {
        // P = 0.9 vs 0.1: ln 9 ≈ 2.2 > 1.
        let r = audit(&coin(90, 10), 5_000, 1, &|_| {}).unwrap();
        assert!(!r.passed() && r.empirical_epsilon > 1.8, "{r:?}");
        assert_eq!(r.verdict(), "VIOLATED");
        assert!(r.witness.is_some());
    }

    #[test]
    fn progress_counts_every_run() {
        let done = std::sync::atomic::AtomicU64::new(0);
        audit(&coin(50, 50), 300, 1, &|k| {
            done.fetch_add(k, std::sync::atomic::Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(done.into_inner(), 600);
    }

    #[test]
    fn bad_cases_and_failing_runs_are_errors() {
        let empty = AuditCase::new("x", "-", Claim::Pure(1.0), 10);
        assert!(matches!(
            audit(&empty, 10, 1, &|_| {}),
            Err(AuditError::InvalidCase(_))
        ));
        assert!(matches!(
            audit(&coin(1, 1), 0, 1, &|_| {}),
            Err(AuditError::InvalidCase(_))
        ));
        let failing = AuditCase::new("f", "-", Claim::Pure(1.0), 10)
            .run(|_, _| Err("boom".into()))
            .events([Event::contains(1.0)]);
        let err = audit(&failing, 10, 1, &|_| {}).unwrap_err();
        assert!(err.to_string().contains("boom"), "{err}");
    }
}

//! From event counts to a lower confidence bound on ε.

use super::AuditError;
use super::case::Claim;
use crate::stats::clopper_pearson;

/// The default confidence: the bound is valid with probability ≥ 1 − 0.05.
pub const DEFAULT_ALPHA: f64 = 0.05;

/// How often each event occurred on `D` and on `D′`, out of `runs` runs per side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventCounts {
    /// Runs per side.
    pub runs: u64,
    /// Occurrences on `D`, one per event.
    pub d: Vec<u64>,
    /// Occurrences on `D′`, one per event.
    pub d_prime: Vec<u64>,
}

/// The comparison that attains the empirical ε.
#[derive(Debug, Clone, PartialEq)]
pub struct Witness {
    /// Index of the event.
    pub event: usize,
    /// True when the event is likelier on `D` (the bound is `P_D / P_D′`).
    pub d_over_d_prime: bool,
    /// Observed frequency of the event on the numerator's side.
    pub p_hat: f64,
    /// Observed frequency on the denominator's side.
    pub q_hat: f64,
    /// The lower bound this comparison gives.
    pub epsilon: f64,
}

/// The empirical lower bound on ε, after LDP-Auditor and Google's stochastic tester:
///
/// `max over events e, both directions: ln((CP_low(p) − δ) / CP_high(q))`
///
/// where `p` and `q` are the event's frequencies on the two sides and every
/// two-sided Clopper–Pearson interval is taken at level `alpha / (2·events)`
/// (Bonferroni over all intervals), so with probability ≥ 1 − `alpha` every
/// interval holds and the result is a valid lower bound. δ is 0 for pure claims.
/// Returns 0 (and no witness) when no event separates the sides.
///
/// ```
/// use privq_host::audit::{Claim, EventCounts, empirical_epsilon};
/// // Randomized response at ε = ln 3: outputs 1 w.p. 3/4 on D and 1/4 on D′.
/// let counts = EventCounts { runs: 100_000, d: vec![75_000], d_prime: vec![25_000] };
/// let (eps, _) = empirical_epsilon(&counts, &Claim::Pure(3f64.ln()), 0.05)?;
/// assert!(eps > 1.0 && eps <= 3f64.ln());
/// # Ok::<(), privq_host::audit::AuditError>(())
/// ```
pub fn empirical_epsilon(
    counts: &EventCounts,
    claim: &Claim,
    alpha: f64,
) -> Result<(f64, Option<Witness>), AuditError> {
    if counts.d.len() != counts.d_prime.len() {
        return Err(AuditError::InvalidCase(
            "event counts differ in length".into(),
        ));
    }
    if counts.d.is_empty() {
        return Ok((0.0, None));
    }
    let level = alpha / (2 * counts.d.len()) as f64;
    let delta = claim.delta();
    let mut best: Option<Witness> = None;
    for (event, (&kd, &kp)) in counts.d.iter().zip(&counts.d_prime).enumerate() {
        let d = clopper_pearson(kd, counts.runs, level)?;
        let dp = clopper_pearson(kp, counts.runs, level)?;
        for (d_over_d_prime, (k_num, low), (k_den, high)) in [
            (true, (kd, d.0), (kp, dp.1)),
            (false, (kp, dp.0), (kd, d.1)),
        ] {
            let numerator = low - delta;
            if numerator <= 0.0 || high <= 0.0 {
                continue;
            }
            let epsilon = (numerator / high).ln();
            if epsilon > best.as_ref().map_or(0.0, |w| w.epsilon) {
                best = Some(Witness {
                    event,
                    d_over_d_prime,
                    p_hat: k_num as f64 / counts.runs as f64,
                    q_hat: k_den as f64 / counts.runs as f64,
                    epsilon,
                });
            }
        }
    }
    Ok((best.as_ref().map_or(0.0, |w| w.epsilon), best))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_counts_give_zero() {
        let c = EventCounts {
            runs: 1000,
            d: vec![500, 3, 0],
            d_prime: vec![500, 3, 0],
        };
        assert_eq!(
            empirical_epsilon(&c, &Claim::Pure(1.0), 0.05).unwrap(),
            (0.0, None)
        );
    }

    #[test]
    fn separation_in_either_direction_is_found() {
        let c = EventCounts {
            runs: 10_000,
            d: vec![100, 5_000],
            d_prime: vec![5_000, 5_000],
        };
        let (eps, w) = empirical_epsilon(&c, &Claim::Pure(1.0), 0.05).unwrap();
        let w = w.unwrap();
        assert_eq!((w.event, w.d_over_d_prime), (0, false));
        // ln(0.5/0.01) = 3.9; the bound is below it.
        assert!(eps > 3.3 && eps < 3.9, "{eps}");
    }

    #[test]
    fn delta_shrinks_the_bound_and_more_events_widen_the_intervals() {
        let one = EventCounts {
            runs: 10_000,
            d: vec![2_000],
            d_prime: vec![1_000],
        };
        let pure = empirical_epsilon(&one, &Claim::Pure(1.0), 0.05).unwrap().0;
        let approx = Claim::Approximate {
            epsilon: 1.0,
            delta: 0.05,
        };
        assert!(empirical_epsilon(&one, &approx, 0.05).unwrap().0 < pure);
        let many = EventCounts {
            runs: 10_000,
            d: vec![2_000; 50],
            d_prime: vec![1_000; 50],
        };
        assert!(empirical_epsilon(&many, &Claim::Pure(1.0), 0.05).unwrap().0 < pure);
    }

    #[test]
    fn deterministic_separation_is_bounded_by_the_runs() {
        let c = EventCounts {
            runs: 1_000,
            d: vec![0],
            d_prime: vec![1_000],
        };
        let (eps, _) = empirical_epsilon(&c, &Claim::Pure(1.0), 0.05).unwrap();
        // CP_high(0 of 1000) at level 0.025 is 1 − 0.0125^(1/1000) ≈ 0.00437.
        assert!(
            (eps - (1.0 - 0.0125f64.powf(1e-3)).ln().abs()).abs() < 0.01,
            "{eps}"
        );
    }
}

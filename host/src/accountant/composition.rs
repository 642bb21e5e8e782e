//! Basic and advanced composition in floating point (thesis Thm 2.4.4 and the
//! corrected Thm 2.4.5), and the inverse of advanced composition.

use super::AccountantError;

/// An (ε, δ) privacy guarantee in floating point, for reports and planning.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrivacyLoss {
    /// ε.
    pub epsilon: f64,
    /// δ.
    pub delta: f64,
}

/// Basic composition (Thm 2.4.4): ε's and δ's add, also adaptively.
pub fn basic(losses: &[PrivacyLoss]) -> PrivacyLoss {
    losses.iter().fold(
        PrivacyLoss {
            epsilon: 0.0,
            delta: 0.0,
        },
        |acc, l| PrivacyLoss {
            epsilon: acc.epsilon + l.epsilon,
            delta: acc.delta + l.delta,
        },
    )
}

/// Advanced composition (Thm 2.4.5, with the slack δ′ in the square root as
/// corrected by TYPO-1, `docs/src/corrections.md`): `k` mechanisms, each (ε, δ)-DP, compose to
/// `(√(2k ln(1/δ′))·ε + k·ε·(e^ε − 1), k·δ + δ′)`.
///
/// ```
/// use privq_host::accountant::advanced;
/// let total = advanced(100, 0.01, 0.0, 1e-6)?;
/// assert!((total.epsilon - 0.5357).abs() < 1e-4);
/// assert_eq!(total.delta, 1e-6);
/// # Ok::<(), privq_host::accountant::AccountantError>(())
/// ```
pub fn advanced(
    k: u64,
    epsilon: f64,
    delta: f64,
    delta_slack: f64,
) -> Result<PrivacyLoss, AccountantError> {
    if k == 0 {
        return Err(AccountantError::InvalidParameter("k must be at least 1"));
    }
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(AccountantError::InvalidParameter(
            "epsilon must be positive and finite",
        ));
    }
    if !((0.0..1.0).contains(&delta) && delta_slack > 0.0 && delta_slack < 1.0) {
        return Err(AccountantError::InvalidParameter(
            "delta must be in [0, 1) and the slack delta' in (0, 1)",
        ));
    }
    let kf = k as f64;
    Ok(PrivacyLoss {
        epsilon: advanced_epsilon(kf, epsilon, delta_slack),
        delta: kf * delta + delta_slack,
    })
}

fn advanced_epsilon(k: f64, eps: f64, delta_slack: f64) -> f64 {
    (2.0 * k * (1.0 / delta_slack).ln()).sqrt() * eps + k * eps * eps.exp_m1()
}

/// The largest per-step ε₀ with `√(2k ln(1/δ′))·ε₀ + k·ε₀·(e^{ε₀} − 1) ≤ ε_target`
/// (bisection on the increasing left side; the result always satisfies the bound).
///
/// ```
/// use privq_host::accountant::{advanced, invert_advanced};
/// let eps0 = invert_advanced(100, 0.5357, 1e-6)?;
/// assert!((eps0 - 0.01).abs() < 1e-5);
/// assert!(advanced(100, eps0, 0.0, 1e-6)?.epsilon <= 0.5357);
/// # Ok::<(), privq_host::accountant::AccountantError>(())
/// ```
pub fn invert_advanced(
    k: u64,
    epsilon_target: f64,
    delta_slack: f64,
) -> Result<f64, AccountantError> {
    if k == 0 {
        return Err(AccountantError::InvalidParameter("k must be at least 1"));
    }
    if !(epsilon_target.is_finite() && epsilon_target > 0.0) {
        return Err(AccountantError::InvalidParameter(
            "epsilon must be positive and finite",
        ));
    }
    if !(delta_slack > 0.0 && delta_slack < 1.0) {
        return Err(AccountantError::InvalidParameter(
            "the slack delta' must be in (0, 1)",
        ));
    }
    let kf = k as f64;
    let (mut lo, mut hi) = (0.0f64, epsilon_target);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if advanced_epsilon(kf, mid, delta_slack) <= epsilon_target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    if lo <= 0.0 {
        return Err(AccountantError::InvalidParameter(
            "the target epsilon is too small",
        ));
    }
    Ok(lo)
}

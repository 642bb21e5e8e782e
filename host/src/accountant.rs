//! Privacy accounting: basic and advanced composition (thesis Thm 2.4.4 and the
//! corrected Thm 2.4.5), the inverse of advanced composition, and a budget filter
//! that refuses to overspend.
//!
//! Pure-ε spending is tracked **exactly** with [`Epsilon`] rationals, so "total ≤
//! budget" is decided without rounding. Advanced composition involves `√` and `exp`
//! and is computed in `f64` for planning; [`invert_advanced`] rounds towards the
//! smaller (safer) per-step ε.

use std::fmt;

use privq_core::Epsilon;

/// What the accountant refuses.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AccountantError {
    /// The charge would exceed the budget; nothing was spent.
    BudgetExceeded {
        /// What the charge is for.
        label: String,
        /// ε requested, as a fraction string.
        requested: String,
        /// ε still available, as a fraction string ("0" when none).
        remaining: String,
    },
    /// A δ is outside `[0, 1)`, or the total δ would exceed the budget's δ.
    DeltaExceeded,
    /// A parameter is out of range (k = 0, ε ≤ 0, δ' ∉ (0,1), non-finite values).
    InvalidParameter(&'static str),
    /// Exact rational arithmetic overflowed.
    Overflow,
}

impl fmt::Display for AccountantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccountantError::BudgetExceeded {
                label,
                requested,
                remaining,
            } => write!(
                f,
                "privacy budget exceeded: {label} needs epsilon {requested}, only {remaining} remains"
            ),
            AccountantError::DeltaExceeded => write!(f, "the delta budget would be exceeded"),
            AccountantError::InvalidParameter(what) => write!(f, "invalid parameter: {what}"),
            AccountantError::Overflow => write!(f, "exact epsilon arithmetic overflowed"),
        }
    }
}

impl std::error::Error for AccountantError {}

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
/// corrected by spec TYPO-1): `k` mechanisms, each (ε, δ)-DP, compose to
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

/// One recorded charge.
#[derive(Debug, Clone, PartialEq)]
pub struct Charge {
    /// What the budget was spent on.
    pub label: String,
    /// Exact ε.
    pub epsilon: Epsilon,
    /// δ (0 for pure ε-DP).
    pub delta: f64,
}

/// A privacy filter under basic composition: it holds a total budget (exact ε, δ),
/// records every charge, and refuses any charge that would exceed the budget.
///
/// ```
/// use privq_host::accountant::BudgetFilter;
/// use privq_host::Epsilon;
/// let mut filter = BudgetFilter::pure(Epsilon::new(1, 1)?);
/// filter.charge("round 1", Epsilon::new(1, 2)?)?;
/// filter.charge("round 2", Epsilon::new(1, 2)?)?;
/// assert!(filter.charge("one too many", Epsilon::new(1, 1000)?).is_err());
/// assert_eq!(filter.spent_epsilon().map(|e| e.to_string()), Some("1".to_string()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct BudgetFilter {
    epsilon: Epsilon,
    delta: f64,
    spent: Option<Epsilon>,
    spent_delta: f64,
    ledger: Vec<Charge>,
}

impl BudgetFilter {
    /// A pure ε-DP budget.
    pub fn pure(epsilon: Epsilon) -> Self {
        BudgetFilter {
            epsilon,
            delta: 0.0,
            spent: None,
            spent_delta: 0.0,
            ledger: Vec::new(),
        }
    }

    /// An (ε, δ) budget; δ must be in `[0, 1)`.
    pub fn approximate(epsilon: Epsilon, delta: f64) -> Result<Self, AccountantError> {
        if !(0.0..1.0).contains(&delta) {
            return Err(AccountantError::DeltaExceeded);
        }
        Ok(BudgetFilter {
            delta,
            ..BudgetFilter::pure(epsilon)
        })
    }

    /// Charges a pure-ε release.
    pub fn charge(&mut self, label: &str, epsilon: Epsilon) -> Result<(), AccountantError> {
        self.charge_approx(label, epsilon, 0.0)
    }

    /// Charges an (ε, δ) release; on refusal nothing is recorded.
    pub fn charge_approx(
        &mut self,
        label: &str,
        epsilon: Epsilon,
        delta: f64,
    ) -> Result<(), AccountantError> {
        if !(0.0..1.0).contains(&delta) || self.spent_delta + delta > self.delta {
            return Err(AccountantError::DeltaExceeded);
        }
        let total = match self.spent {
            None => epsilon,
            Some(s) => s
                .checked_add(epsilon)
                .map_err(|_| AccountantError::Overflow)?,
        };
        if total > self.epsilon {
            return Err(AccountantError::BudgetExceeded {
                label: label.to_string(),
                requested: epsilon.to_string(),
                remaining: self
                    .remaining()
                    .map(|e| e.to_string())
                    .unwrap_or_else(|| "0".into()),
            });
        }
        self.spent = Some(total);
        self.spent_delta += delta;
        self.ledger.push(Charge {
            label: label.to_string(),
            epsilon,
            delta,
        });
        Ok(())
    }

    /// True when a charge of `epsilon` would be accepted.
    pub fn can_afford(&self, epsilon: Epsilon) -> bool {
        match self.spent {
            None => epsilon <= self.epsilon,
            Some(s) => s.checked_add(epsilon).is_ok_and(|t| t <= self.epsilon),
        }
    }

    /// ε still available (`None` when the budget is used up exactly).
    pub fn remaining(&self) -> Option<Epsilon> {
        match self.spent {
            None => Some(self.epsilon),
            Some(s) => self.epsilon.checked_sub(s).ok().flatten(),
        }
    }

    /// Exact total ε spent (`None` before the first charge).
    pub fn spent_epsilon(&self) -> Option<Epsilon> {
        self.spent
    }

    /// Total δ spent.
    pub fn spent_delta(&self) -> f64 {
        self.spent_delta
    }

    /// The total budget ε.
    pub fn budget(&self) -> Epsilon {
        self.epsilon
    }

    /// Every accepted charge, in order.
    pub fn ledger(&self) -> &[Charge] {
        &self.ledger
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_value_of_spec_section_10() {
        let l = advanced(100, 0.01, 0.0, 1e-6).unwrap();
        let expected = (200.0 * 1e6f64.ln()).sqrt() * 0.01 + 100.0 * 0.01 * 0.01f64.exp_m1();
        assert!((l.epsilon - expected).abs() < 1e-15);
        assert!((l.epsilon - 0.5357).abs() < 5e-5, "{}", l.epsilon);
        // The thesis' printed formula (ln(1/δ) with δ = 0) would be infinite: the
        // corrected one uses the slack δ'.
        let with_delta = advanced(100, 0.01, 1e-8, 1e-6).unwrap();
        assert!((with_delta.delta - (100.0 * 1e-8 + 1e-6)).abs() < 1e-20);
    }

    #[test]
    fn inverse_round_trips() {
        for &(k, eps) in &[
            (1u64, 0.5),
            (10, 0.1),
            (100, 0.01),
            (1000, 0.003),
            (40, 1.0),
        ] {
            let target = advanced(k, eps, 0.0, 1e-6).unwrap().epsilon;
            let back = invert_advanced(k, target, 1e-6).unwrap();
            assert!((back - eps).abs() < 1e-9 * eps.max(1.0), "{k} {eps} {back}");
            assert!(advanced(k, back, 0.0, 1e-6).unwrap().epsilon <= target);
        }
        assert!(invert_advanced(0, 1.0, 1e-6).is_err());
        assert!(invert_advanced(10, -1.0, 1e-6).is_err());
        assert!(advanced(10, 0.0, 0.0, 1e-6).is_err());
        assert!(advanced(10, 0.1, 0.0, 0.0).is_err());
    }

    #[test]
    fn filter_is_exact_and_refuses_overspending() {
        let third = Epsilon::new(1, 3).unwrap();
        let mut f = BudgetFilter::pure(Epsilon::new(1, 1).unwrap());
        for i in 0..3 {
            f.charge(&format!("q{i}"), third).unwrap();
        }
        assert_eq!(f.remaining(), None);
        assert_eq!(f.spent_epsilon(), Some(Epsilon::new(1, 1).unwrap()));
        let err = f.charge("q3", third).unwrap_err();
        assert!(matches!(err, AccountantError::BudgetExceeded { .. }));
        assert_eq!(f.ledger().len(), 3);
        let mut g = BudgetFilter::approximate(Epsilon::new(1, 1).unwrap(), 1e-6).unwrap();
        g.charge_approx("a", third, 1e-6).unwrap();
        assert_eq!(
            g.charge_approx("b", third, 1e-7),
            Err(AccountantError::DeltaExceeded)
        );
        let b = basic(&[
            PrivacyLoss {
                epsilon: 0.1,
                delta: 0.0,
            },
            PrivacyLoss {
                epsilon: 0.2,
                delta: 1e-6,
            },
        ]);
        assert!((b.epsilon - 0.3).abs() < 1e-15 && b.delta == 1e-6);
    }
}

//! Privacy accounting: basic and advanced composition (thesis Thm 2.4.4 and the
//! corrected Thm 2.4.5), the inverse of advanced composition, and the one
//! [`Accountant`] every central mechanism charges before it samples.
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
        /// ε requested.
        requested: Epsilon,
        /// ε still available (`None` when none is left).
        remaining: Option<Epsilon>,
    },
    /// A receipt paid for less than the release it was presented to.
    ReceiptTooSmall {
        /// What the receipt paid.
        paid: Cost,
        /// What the release costs.
        needed: Cost,
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
                "privacy budget exceeded: {label} needs epsilon {requested}, only {} remains",
                remaining
                    .map(|e| e.to_string())
                    .unwrap_or_else(|| "0".into())
            ),
            AccountantError::ReceiptTooSmall { paid, needed } => write!(
                f,
                "a release costing {needed} was presented a receipt for only {paid}"
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

/// What a release costs, stated by the mechanism before it samples (privacy
/// contract: the cost is known before anything is released).
///
/// Pure ε is exact. δ is a probability carried in `f64` (it never decides noise).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Cost {
    /// Pure ε-differential privacy.
    Pure(Epsilon),
    /// (ε, δ)-differential privacy.
    Approximate {
        /// ε.
        epsilon: Epsilon,
        /// δ ∈ [0, 1).
        delta: f64,
    },
}

impl Cost {
    /// The ε part.
    pub fn epsilon(&self) -> Epsilon {
        match *self {
            Cost::Pure(e) | Cost::Approximate { epsilon: e, .. } => e,
        }
    }

    /// The δ part (0 for pure ε).
    pub fn delta(&self) -> f64 {
        match *self {
            Cost::Pure(_) => 0.0,
            Cost::Approximate { delta, .. } => delta,
        }
    }

    /// True when a release of cost `other` is covered by this cost
    /// (ε and δ no larger).
    pub fn covers(&self, other: &Cost) -> bool {
        other.epsilon() <= self.epsilon() && other.delta() <= self.delta()
    }
}

impl fmt::Display for Cost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cost::Pure(e) => write!(f, "ε = {e}"),
            Cost::Approximate { epsilon, delta } => write!(f, "ε = {epsilon}, δ = {delta:e}"),
        }
    }
}

impl From<Epsilon> for Cost {
    fn from(e: Epsilon) -> Self {
        Cost::Pure(e)
    }
}

/// One recorded charge.
#[derive(Debug, Clone, PartialEq)]
pub struct Charge {
    /// What the budget was spent on.
    pub label: String,
    /// What it cost.
    pub cost: Cost,
}

/// Proof that a charge was accepted: only [`Accountant::charge`] makes one, and a
/// mechanism's sampling step consumes it (see [`crate::contract::Mechanism`]), so
/// nothing is sampled that was not charged first.
#[derive(Debug)]
pub struct Receipt {
    cost: Cost,
}

impl Receipt {
    /// What was charged.
    pub fn cost(&self) -> Cost {
        self.cost
    }

    /// Errors unless this receipt pays for a release of cost `needed`.
    pub fn check_covers(&self, needed: &Cost) -> Result<(), AccountantError> {
        if self.cost.covers(needed) {
            Ok(())
        } else {
            Err(AccountantError::ReceiptTooSmall {
                paid: self.cost,
                needed: *needed,
            })
        }
    }
}

/// The privacy accountant: a filter under basic composition. It holds a total
/// budget (exact ε, δ), records every charge in a ledger, and refuses any charge
/// that would exceed the budget — before anything is sampled. Pure ε adds exactly.
///
/// ```
/// use privq_host::accountant::{Accountant, Cost};
/// use privq_host::Epsilon;
/// let mut acct = Accountant::pure(Epsilon::new(1, 1)?);
/// let _ = acct.charge("round 1", Cost::Pure(Epsilon::new(1, 2)?))?;
/// let _ = acct.charge("round 2", Epsilon::new(1, 2)?.into())?;
/// assert!(acct.charge("one too many", Epsilon::new(1, 1000)?.into()).is_err());
/// assert_eq!(acct.spent_epsilon().map(|e| e.to_string()), Some("1".to_string()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Accountant {
    epsilon: Epsilon,
    delta: f64,
    spent: Option<Epsilon>,
    spent_delta: f64,
    ledger: Vec<Charge>,
}

impl Accountant {
    /// A pure ε-DP budget.
    pub fn pure(epsilon: Epsilon) -> Self {
        Accountant {
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
        Ok(Accountant {
            delta,
            ..Accountant::pure(epsilon)
        })
    }

    /// A budget of exactly `cost` (pure or approximate), for one release that gets
    /// a budget of its own.
    pub fn exactly(cost: Cost) -> Result<Self, AccountantError> {
        match cost {
            Cost::Pure(e) => Ok(Accountant::pure(e)),
            Cost::Approximate { epsilon, delta } => Accountant::approximate(epsilon, delta),
        }
    }

    /// Charges a release of cost `cost`; on refusal nothing is recorded.
    pub fn charge(&mut self, label: &str, cost: Cost) -> Result<Receipt, AccountantError> {
        let delta = cost.delta();
        if !(0.0..1.0).contains(&delta) || self.spent_delta + delta > self.delta {
            return Err(AccountantError::DeltaExceeded);
        }
        let epsilon = cost.epsilon();
        let total = match self.spent {
            None => epsilon,
            Some(s) => s
                .checked_add(epsilon)
                .map_err(|_| AccountantError::Overflow)?,
        };
        if total > self.epsilon {
            return Err(AccountantError::BudgetExceeded {
                label: label.to_string(),
                requested: epsilon,
                remaining: self.remaining(),
            });
        }
        self.spent = Some(total);
        self.spent_delta += delta;
        self.ledger.push(Charge {
            label: label.to_string(),
            cost,
        });
        Ok(Receipt { cost })
    }

    /// True when a charge of `cost` would be accepted.
    pub fn can_afford(&self, cost: &Cost) -> bool {
        let eps_ok = match self.spent {
            None => cost.epsilon() <= self.epsilon,
            Some(s) => s
                .checked_add(cost.epsilon())
                .is_ok_and(|t| t <= self.epsilon),
        };
        eps_ok && self.spent_delta + cost.delta() <= self.delta
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

    /// The total budget δ.
    pub fn budget_delta(&self) -> f64 {
        self.delta
    }

    /// Every accepted charge, in order.
    pub fn ledger(&self) -> &[Charge] {
        &self.ledger
    }

    /// The ledger as text, one charge per line and a total — the one format every
    /// `privq` command prints.
    pub fn ledger_text(&self) -> String {
        let mut out = String::new();
        for (i, c) in self.ledger.iter().enumerate() {
            out.push_str(&format!("  {:>3}. {}: {}\n", i + 1, c.label, c.cost));
        }
        let spent = self
            .spent
            .map(|e| e.to_string())
            .unwrap_or_else(|| "0".into());
        out.push_str(&format!(
            "  total: ε = {spent} of {}, δ = {:e} of {:e} ({} charge(s), basic composition)",
            self.epsilon,
            self.spent_delta,
            self.delta,
            self.ledger.len()
        ));
        out
    }

    /// The ledger as JSON: `{"budget": {...}, "spent": {...}, "charges": [...]}`
    /// with every ε as an exact fraction string and as a float.
    pub fn ledger_json(&self) -> serde_json::Value {
        fn eps(e: Option<Epsilon>) -> serde_json::Value {
            match e {
                Some(e) => serde_json::json!({"exact": e.to_string(), "value": e.to_f64()}),
                None => serde_json::json!({"exact": "0", "value": 0.0}),
            }
        }
        serde_json::json!({
            "composition": "basic",
            "budget": {"epsilon": eps(Some(self.epsilon)), "delta": self.delta},
            "spent": {"epsilon": eps(self.spent), "delta": self.spent_delta},
            "charges": self.ledger.iter().map(|c| serde_json::json!({
                "label": c.label,
                "epsilon": eps(Some(c.cost.epsilon())),
                "delta": c.cost.delta(),
            })).collect::<Vec<_>>(),
        })
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
        let mut f = Accountant::pure(Epsilon::new(1, 1).unwrap());
        for i in 0..3 {
            let _ = f.charge(&format!("q{i}"), third.into()).unwrap();
        }
        assert_eq!(f.remaining(), None);
        assert_eq!(f.spent_epsilon(), Some(Epsilon::new(1, 1).unwrap()));
        let err = f.charge("q3", third.into()).unwrap_err();
        assert!(matches!(err, AccountantError::BudgetExceeded { .. }));
        assert_eq!(f.ledger().len(), 3);
        let mut g = Accountant::approximate(Epsilon::new(1, 1).unwrap(), 1e-6).unwrap();
        let approx = |delta| Cost::Approximate {
            epsilon: third,
            delta,
        };
        let receipt = g.charge("a", approx(1e-6)).unwrap();
        assert!(receipt.check_covers(&Cost::Pure(third)).is_ok());
        assert!(receipt.check_covers(&approx(2e-6)).is_err());
        assert_eq!(
            g.charge("b", approx(1e-7)).unwrap_err(),
            AccountantError::DeltaExceeded
        );
        assert!(g.ledger_text().contains("total: ε = 1/3 of 1"));
        assert_eq!(g.ledger_json()["charges"][0]["epsilon"]["exact"], "1/3");
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

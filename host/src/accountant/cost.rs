//! [`Cost`]: what a release costs, and how it is charged and shown.

use std::fmt;

use privq_core::{Epsilon, Rho};

use super::AccountantError;
use super::short::{delta_text, fraction};

/// What a release costs, stated by the mechanism before it samples (privacy
/// contract: the cost is known before anything is released).
///
/// Pure ε and ρ are exact. δ is a probability carried in `f64` (it never decides noise).
///
/// How a cost is charged depends on the accountant ([`Accountant::charge`](super::Accountant::charge)):
///
/// | cost | pure / (ε, δ) accountant | zCDP accountant |
/// |---|---|---|
/// | `Pure(ε)` | ε | ρ = ε²/2 (Bun–Steinke 2016, Prop. 1.4) |
/// | `BoundedRange(ε)` | ε | ρ = ε²/8 (Cesar–Rogers 2021, Lemma 3.2) |
/// | `Approximate { ε, δ }` | (ε, δ) | refused unless δ = 0 (then as `Pure`) |
/// | `Zcdp(ρ)` | refused | ρ |
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
    /// ρ-zero-concentrated differential privacy (Bun–Steinke 2016, Def. 1.1), e.g.
    /// the discrete Gaussian mechanism with ρ = Δ₂²/(2σ²) (CKS20 Thm. 14).
    Zcdp(Rho),
    /// ε-differential privacy with ε-bounded range (Durfee–Rogers 2019), declared by
    /// mechanisms that have it, such as the exponential mechanism: charged as ε by
    /// a pure accountant and as the tighter ρ = ε²/8 by a zCDP accountant.
    BoundedRange(Epsilon),
    /// An ε a mechanism aims for **without a proof** that it holds (e.g. K-norm with
    /// a hit-and-run sampler, whose finite walk is not uniform). Charged like pure ε,
    /// but only by an accountant that opted in with
    /// [`Accountant::allow_uncertified`](super::Accountant::allow_uncertified); every other accountant refuses it, so an
    /// uncertified release never composes silently into a certified total.
    Uncertified(Epsilon),
}

impl Cost {
    /// ρ = ε²/2 for pure ε (Bun–Steinke 2016, Prop. 1.4), exact or rounded up.
    pub fn pure_as_zcdp(epsilon: Epsilon) -> Result<Cost, AccountantError> {
        Rho::from_pure(epsilon)
            .map(Cost::Zcdp)
            .map_err(|_| AccountantError::Overflow)
    }

    /// The ε part (`None` for a ρ-zCDP cost, which has no ε of its own).
    pub fn epsilon(&self) -> Option<Epsilon> {
        match *self {
            Cost::Pure(e)
            | Cost::BoundedRange(e)
            | Cost::Uncertified(e)
            | Cost::Approximate { epsilon: e, .. } => Some(e),
            Cost::Zcdp(_) => None,
        }
    }

    /// The δ part of an (ε, δ) cost (0 for pure, bounded-range and ρ-zCDP costs).
    pub fn delta(&self) -> f64 {
        match *self {
            Cost::Approximate { delta, .. } => delta,
            _ => 0.0,
        }
    }

    /// The ρ this cost is charged as by a zCDP accountant (see the type docs): exact,
    /// or rounded up when ε²/2 or ε²/8 has no 64-bit fraction. Errors for an (ε, δ)
    /// cost with δ > 0, which implies no ρ-zCDP guarantee.
    pub fn rho(&self) -> Result<Rho, AccountantError> {
        let converted = match *self {
            Cost::Zcdp(rho) => return Ok(rho),
            Cost::Pure(e) => Rho::from_pure(e),
            Cost::Approximate {
                epsilon,
                delta: 0.0,
            } => Rho::from_pure(epsilon),
            Cost::BoundedRange(e) => Rho::from_bounded_range(e),
            Cost::Approximate { .. } | Cost::Uncertified(_) => {
                return Err(AccountantError::IncompatibleCost {
                    cost: *self,
                    composition: "zCDP",
                });
            }
        };
        converted.map_err(|_| AccountantError::Overflow)
    }

    /// True when a receipt for this cost pays for a release of cost `other` under
    /// every accountant the receipt could have come from:
    ///
    /// * a ρ-zCDP cost covers only ρ-zCDP costs with ρ no larger (never a pure one);
    /// * a bounded-range cost covers only bounded-range costs with ε no larger (in a
    ///   zCDP accountant it paid only ε²/8);
    /// * pure and (ε, δ) costs cover pure, (ε, δ) and bounded-range costs whose ε
    ///   and δ are no larger.
    pub fn covers(&self, other: &Cost) -> bool {
        match (*self, *other) {
            (Cost::Zcdp(paid), Cost::Zcdp(needed)) => needed <= paid,
            (Cost::Zcdp(_), _) | (_, Cost::Zcdp(_)) => false,
            (Cost::BoundedRange(paid), Cost::BoundedRange(needed)) => needed <= paid,
            (Cost::BoundedRange(_), _) => false,
            (Cost::Uncertified(paid), Cost::Uncertified(needed)) => needed <= paid,
            (Cost::Uncertified(_), _) | (_, Cost::Uncertified(_)) => false,
            (paid, needed) => match (paid.epsilon(), needed.epsilon()) {
                (Some(p), Some(n)) => n <= p && needed.delta() <= paid.delta(),
                _ => false,
            },
        }
    }
}

impl Cost {
    /// The cost in words: exact (its `Display`, as in the JSON ledger), or short as
    /// the text ledger shows it (see [`Accountant::ledger_text`](super::Accountant::ledger_text)).
    pub(super) fn describe(&self, exact: bool) -> String {
        let e = |e: &Epsilon| fraction(e.num(), e.den(), exact);
        match self {
            Cost::Pure(x) => format!("ε = {}", e(x)),
            Cost::Approximate { epsilon, delta } => {
                format!("ε = {}, δ = {}", e(epsilon), delta_text(*delta, exact))
            }
            Cost::Zcdp(rho) => format!("ρ = {} (zCDP)", fraction(rho.num(), rho.den(), exact)),
            Cost::BoundedRange(x) => format!("ε = {} (bounded range)", e(x)),
            Cost::Uncertified(x) => {
                format!("ε = {} (UNCERTIFIED: no proof that it holds)", e(x))
            }
        }
    }
}

impl fmt::Display for Cost {
    /// Exact: every ε and ρ as a fraction, δ in Rust's `{:e}` form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe(true))
    }
}

impl From<Epsilon> for Cost {
    fn from(e: Epsilon) -> Self {
        Cost::Pure(e)
    }
}

impl From<Rho> for Cost {
    fn from(rho: Rho) -> Self {
        Cost::Zcdp(rho)
    }
}

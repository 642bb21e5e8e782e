//! Privacy accounting: basic and advanced composition (thesis Thm 2.4.4 and the
//! corrected Thm 2.4.5), the inverse of advanced composition, zero-concentrated DP
//! (ρ-zCDP) and its conversion to (ε, δ), and the one [`Accountant`] every central
//! mechanism charges before it samples.
//!
//! Pure-ε spending is tracked **exactly** with [`Epsilon`] rationals, and ρ spending
//! with [`Rho`] rationals, so "total ≤ budget" is decided without rounding. Advanced
//! composition and the ρ → (ε, δ) conversions involve `√`, `exp` and `ln` and are
//! computed in `f64` for reports and planning, rounded in the safe direction:
//! [`invert_advanced`] towards the smaller per-step ε, [`zcdp_epsilon`] and
//! [`zcdp_epsilon_simple`] towards the larger ε, [`zcdp_rho_for`] towards the smaller ρ.

use std::fmt;

use privq_core::{Epsilon, Rho};

use crate::contract::Neighbours;

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
    /// The charge would take the total ρ of a zCDP accountant above its budget;
    /// nothing was spent.
    RhoBudgetExceeded {
        /// What the charge is for.
        label: String,
        /// ρ requested (a pure or bounded-range ε already converted to ρ).
        requested: Rho,
        /// ρ still available (`None` when none is left).
        remaining: Option<Rho>,
    },
    /// The cost cannot be charged to this kind of accountant: an (ε, δ) cost with
    /// δ > 0 to a zCDP accountant, or a ρ-zCDP cost to a pure or (ε, δ) accountant.
    IncompatibleCost {
        /// The cost.
        cost: Cost,
        /// The accountant's composition ("basic" or "zCDP").
        composition: &'static str,
    },
    /// An [`Cost::Uncertified`] charge to an accountant that did not opt in with
    /// [`Accountant::allow_uncertified`]; nothing was spent.
    Uncertified {
        /// What the charge is for.
        label: String,
    },
    /// The charge is stated for another neighbour relation than the one this
    /// accountant is bound to ([`Accountant::bind`]), or states none; nothing was
    /// spent. Costs under different relations do not add up to a guarantee under
    /// either.
    RelationMismatch {
        /// What the charge is for.
        label: String,
        /// The accountant's relation.
        bound: Neighbours,
        /// The charge's relation (`None`: not stated).
        stated: Option<Neighbours>,
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
            AccountantError::RhoBudgetExceeded {
                label,
                requested,
                remaining,
            } => write!(
                f,
                "zCDP budget exceeded: {label} needs rho {requested}, only {} remains",
                remaining
                    .map(|r| r.to_string())
                    .unwrap_or_else(|| "0".into())
            ),
            AccountantError::IncompatibleCost { cost, composition } => write!(
                f,
                "a cost of {cost} cannot be charged to a {composition} accountant"
            ),
            AccountantError::ReceiptTooSmall { paid, needed } => write!(
                f,
                "a release costing {needed} was presented a receipt for only {paid}"
            ),
            AccountantError::Uncertified { label } => write!(
                f,
                "{label} has no proven privacy guarantee; this accountant accepts only certified \
                 costs (opt in with allow_uncertified)"
            ),
            AccountantError::RelationMismatch {
                label,
                bound,
                stated,
            } => match stated {
                Some(stated) => write!(
                    f,
                    "{label} is stated for {stated}, but this accountant is bound to {bound}"
                ),
                None => write!(
                    f,
                    "{label} states no neighbour relation, but this accountant is bound to {bound}"
                ),
            },
            AccountantError::DeltaExceeded => write!(f, "the delta budget would be exceeded"),
            AccountantError::InvalidParameter(what) => write!(f, "invalid parameter: {what}"),
            AccountantError::Overflow => write!(f, "exact epsilon or rho arithmetic overflowed"),
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
/// Pure ε and ρ are exact. δ is a probability carried in `f64` (it never decides noise).
///
/// How a cost is charged depends on the accountant ([`Accountant::charge`]):
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
    /// [`Accountant::allow_uncertified`]; every other accountant refuses it, so an
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
    /// the text ledger shows it (see [`Accountant::ledger_text`]).
    fn describe(&self, exact: bool) -> String {
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

// ---------------------------------------------------------------- short numbers

/// An ε or ρ exactly (`num/den`, or `num` when `den` is 1, as their `Display`),
/// or as [`short_ratio`] rounded up.
fn fraction(num: u64, den: u64, exact: bool) -> String {
    match (exact, den) {
        (true, 1) => num.to_string(),
        (true, _) => format!("{num}/{den}"),
        (false, _) => short_ratio(num, den, true),
    }
}

/// A δ exactly (Rust's `{:e}`: `0e0`, `1e-9`), or as [`short_f64`].
fn delta_text(delta: f64, exact: bool) -> String {
    if exact {
        format!("{delta:e}")
    } else {
        short_f64(delta)
    }
}

/// `num/den` for reading: exact when numerator and denominator have at most four
/// digits (`1/2`, `3`, `7/40`), else a decimal of four significant digits (every
/// integer digit from 1000 on) rounded up (`up`) or down, computed on integers so
/// that the shown value is exactly on that side of the true one; scientific below
/// 10⁻⁴ (`1.235e-7`).
pub(crate) fn short_ratio(num: u64, den: u64, up: bool) -> String {
    if num == 0 || (num <= 9999 && den <= 9999) {
        return if den == 1 || num == 0 {
            num.to_string()
        } else {
            format!("{num}/{den}")
        };
    }
    let den = u128::from(den.max(1));
    let div = |n: u128| if up { n.div_ceil(den) } else { n / den };
    let mut n = u128::from(num);
    if n >= 1000 * den {
        return div(n).to_string();
    }
    // Scale by 10^k until n/den ∈ [1000, 10000): then n < 10⁴·den < 2⁷⁸.
    let mut exp = 0;
    while n < 1000 * den {
        n *= 10;
        exp -= 1;
    }
    decimal(div(n), exp)
}

/// An `f64` (a δ, or an ε converted from ρ) for reading: its shortest round-trip
/// form when that has at most four significant digits (`1e-9`, `1.5e-6`, `0.5`),
/// else four significant digits rounded up (an integer from 1000 on), so that it
/// never reads as less than the value; `0` for zero.
pub(crate) fn short_f64(x: f64) -> String {
    if !(x.is_finite() && x > 0.0) {
        return if x == 0.0 { "0".into() } else { x.to_string() };
    }
    if x >= 1000.0 {
        return x.ceil().to_string();
    }
    // (digits, exponent) of Rust's `{:e}` form, e.g. "7.766e0" → (7766, -3).
    let split = |s: &str| -> (u128, i32) {
        let (mantissa, e) = s.split_once('e').unwrap_or((s, "0"));
        let digits = mantissa.replace('.', "");
        let e: i32 = e.parse().unwrap_or(0);
        (digits.parse().unwrap_or(0), e + 1 - digits.len() as i32)
    };
    let (m, exp) = split(&format!("{x:e}"));
    if m < 10_000 {
        return decimal(m, exp);
    }
    let four = format!("{x:.3e}");
    let (mut m, mut exp) = split(&four);
    if four.parse::<f64>().is_ok_and(|shown| shown < x) {
        m += 1;
        if m == 10_000 {
            (m, exp) = (1000, exp + 1);
        }
    }
    decimal(m, exp)
}

/// `m · 10^exp` (m > 0) in decimal, trailing zeros dropped; scientific below 10⁻⁴.
fn decimal(mut m: u128, mut exp: i32) -> String {
    while m > 0 && m.is_multiple_of(10) {
        m /= 10;
        exp += 1;
    }
    let digits = m.to_string();
    let int_len = digits.len() as i32 + exp;
    if int_len - 1 < -4 {
        let (lead, rest) = digits.split_at(1);
        let point = if rest.is_empty() { "" } else { "." };
        return format!("{lead}{point}{rest}e{}", int_len - 1);
    }
    if exp >= 0 {
        format!("{digits}{}", "0".repeat(exp as usize))
    } else if int_len > 0 {
        let (int, frac) = digits.split_at(int_len as usize);
        format!("{int}.{frac}")
    } else {
        format!("0.{}{digits}", "0".repeat(int_len.unsigned_abs() as usize))
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

// ---------------------------------------------------------------- zCDP conversions

/// Checks `ρ > 0` finite and `δ ∈ (0, 1)`.
fn check_zcdp_args(rho: f64, delta: f64) -> Result<(), AccountantError> {
    if !(rho.is_finite() && rho > 0.0) {
        return Err(AccountantError::InvalidParameter(
            "rho must be positive and finite",
        ));
    }
    if !(delta > 0.0 && delta < 1.0) {
        return Err(AccountantError::InvalidParameter("delta must be in (0, 1)"));
    }
    Ok(())
}

/// `ε(α) = αρ + ln(1/(αδ))/(α − 1) + ln(1 − 1/α)` at `α = 1 + 10^x`, and a bound on
/// its floating-point evaluation error.
fn cks_epsilon_at(x: f64, rho: f64, delta: f64) -> (f64, f64) {
    let am1 = 10f64.powf(x);
    let alpha = 1.0 + am1;
    let terms = [
        alpha * rho,
        (-(alpha.ln()) - delta.ln()) / am1,
        // ln(1 − 1/α) = ln((α − 1)/α), accurate for α near 1 as well.
        am1.ln() - alpha.ln(),
    ];
    let value: f64 = terms.iter().sum();
    let magnitude: f64 = terms.iter().map(|t| t.abs()).sum();
    (value, magnitude * 1e-13)
}

/// ε of the (ε, δ)-DP guarantee implied by ρ-zCDP, by the tight conversion of
/// Canonne–Kamath–Steinke 2020 (Prop. 12 and Cor. 13):
/// `ε = inf_{α>1} αρ + (ln(1/(αδ)) + (α−1)·ln(1 − 1/α))/(α − 1)`.
///
/// Every α gives a valid ε, so the value returned is ε at the α found by a scan of
/// `log10(α − 1)` over `[−8, 8]` refined by golden-section search, **plus** a bound on
/// its floating-point error (10⁻¹³ of the terms' magnitudes): never below the exact
/// bound at that α (and never below 0). For planning and reports; budgets are
/// enforced on ρ exactly.
///
/// ```
/// use privq_host::accountant::{zcdp_epsilon, zcdp_epsilon_simple};
/// let tight = zcdp_epsilon(0.5, 1e-5)?;
/// assert!((tight - 4.728387).abs() < 1e-6);
/// assert!(tight < zcdp_epsilon_simple(0.5, 1e-5)?);
/// # Ok::<(), privq_host::accountant::AccountantError>(())
/// ```
pub fn zcdp_epsilon(rho: f64, delta: f64) -> Result<f64, AccountantError> {
    check_zcdp_args(rho, delta)?;
    let at = |x: f64| cks_epsilon_at(x, rho, delta);
    // Scan, then golden-section search in the bracket around the best scan point.
    const STEPS: i32 = 320;
    let (lo_x, hi_x) = (-8.0f64, 8.0f64);
    let step = (hi_x - lo_x) / f64::from(STEPS);
    let mut best = (lo_x, f64::INFINITY);
    for i in 0..=STEPS {
        let x = lo_x + step * f64::from(i);
        let (v, _) = at(x);
        if v < best.1 {
            best = (x, v);
        }
    }
    let (mut a, mut b) = (best.0 - step, best.0 + step);
    let phi = (5f64.sqrt() - 1.0) / 2.0;
    let (mut c, mut d) = (b - phi * (b - a), a + phi * (b - a));
    for _ in 0..100 {
        if at(c).0 < at(d).0 {
            b = d;
        } else {
            a = c;
        }
        c = b - phi * (b - a);
        d = a + phi * (b - a);
    }
    let x = if at(0.5 * (a + b)).0 <= best.1 {
        0.5 * (a + b)
    } else {
        best.0
    };
    let (value, error) = at(x);
    // For large δ and small ρ the bound can be negative: (0, δ)-DP then holds.
    Ok((value + error).max(0.0))
}

/// ε of the simple conversion `ε = ρ + 2√(ρ ln(1/δ))` (Bun–Steinke 2016, Prop. 1.3),
/// which is never tighter than [`zcdp_epsilon`]; rounded up by a relative 10⁻¹³.
pub fn zcdp_epsilon_simple(rho: f64, delta: f64) -> Result<f64, AccountantError> {
    check_zcdp_args(rho, delta)?;
    let value = rho + 2.0 * (rho * (1.0 / delta).ln()).sqrt();
    Ok(value * (1.0 + 1e-13))
}

/// The largest ρ (an exact [`Rho`]) whose tight conversion [`zcdp_epsilon`] at δ is at
/// most ε: bisection on the increasing map ρ ↦ ε(ρ, δ), rounded down, and checked.
///
/// ```
/// use privq_host::accountant::{zcdp_epsilon, zcdp_rho_for};
/// let rho = zcdp_rho_for(1.0, 1e-6)?;
/// assert!(zcdp_epsilon(rho.to_f64(), 1e-6)? <= 1.0);
/// // 0.0243559703… by mpmath (50 digits); the simple bound would allow only ≈ 0.0175.
/// assert!((rho.to_f64() - 0.024_355_97).abs() < 1e-8);
/// # Ok::<(), privq_host::accountant::AccountantError>(())
/// ```
pub fn zcdp_rho_for(epsilon: f64, delta: f64) -> Result<Rho, AccountantError> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(AccountantError::InvalidParameter(
            "epsilon must be positive and finite",
        ));
    }
    check_zcdp_args(1.0, delta)?;
    // ε(ρ) ≥ ρ, so the answer is below ε.
    let (mut lo, mut hi) = (0.0f64, epsilon);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid > 0.0 && zcdp_epsilon(mid, delta)? <= epsilon {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let rho = Rho::from_f64(lo).map_err(|_| {
        AccountantError::InvalidParameter("epsilon is too small for any rho at this delta")
    })?;
    if zcdp_epsilon(rho.to_f64(), delta)? > epsilon {
        return Err(AccountantError::InvalidParameter(
            "no rho found whose conversion meets (epsilon, delta)",
        ));
    }
    Ok(rho)
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

/// The privacy accountant: a filter under basic composition, or under ρ-zCDP
/// composition. It holds a total budget, records every charge in a ledger, and
/// refuses any charge that would exceed the budget — before anything is sampled.
///
/// * [`Accountant::pure`] / [`Accountant::approximate`]: an exact ε budget (and a δ);
///   ε's add exactly, δ's add. ρ-zCDP costs are refused.
/// * [`Accountant::zcdp`] / [`Accountant::zcdp_for`]: an exact ρ budget; ρ's add
///   exactly (Bun–Steinke 2016, Lemma 2.3), pure ε is charged as ρ = ε²/2 and
///   bounded-range ε as ε²/8 (see [`Cost`]); (ε, δ) costs with δ > 0 are refused.
///   The guarantee is reported as (ε, δ) at the accountant's δ by
///   [`zcdp_epsilon`] (CKS20 Cor. 13).
///
/// ```
/// use privq_host::accountant::{Accountant, Cost};
/// use privq_host::Epsilon;
/// let mut acct = Accountant::pure(Epsilon::new(1, 1)?);
/// let _ = acct.charge("round 1", Cost::Pure(Epsilon::new(1, 2)?))?;
/// let _ = acct.charge("round 2", Epsilon::new(1, 2)?.into())?;
/// assert!(acct.charge("one too many", Epsilon::new(1, 1000)?.into()).is_err());
/// assert_eq!(acct.spent_epsilon().map(|e| e.to_string()), Some("1".to_string()));
///
/// // zCDP: ρ's add; a pure ε = 1/2 costs ρ = 1/8.
/// use privq_host::Rho;
/// let mut z = Accountant::zcdp(Rho::new(1, 2)?, 1e-6)?;
/// let _ = z.charge("gaussian counts", Rho::new(1, 4)?.into())?;
/// let _ = z.charge("laplace count", Epsilon::new(1, 2)?.into())?;
/// assert_eq!(z.spent_rho(), Some(Rho::new(3, 8)?));
/// assert!(z.charge("too much", Rho::new(1, 4)?.into()).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Accountant {
    epsilon: Epsilon,
    delta: f64,
    spent: Option<Epsilon>,
    spent_delta: f64,
    zcdp: Option<ZcdpBudget>,
    ledger: Vec<Charge>,
    uncertified: bool,
    neighbours: Option<Neighbours>,
}

/// The ρ side of a zCDP accountant.
#[derive(Debug, Clone, Copy)]
struct ZcdpBudget {
    rho: Rho,
    spent: Option<Rho>,
}

impl Accountant {
    /// Binds the accountant to one neighbour relation: from now on it accepts only
    /// charges stated under it ([`Accountant::charge_as`]), so costs computed for
    /// add/remove and for replace-one neighbours are never added up. privq's
    /// commands bind their accountant to the relation they declare.
    pub fn bind(&mut self, neighbours: Neighbours) {
        self.neighbours = Some(neighbours);
    }

    /// The relation this accountant is bound to, if any.
    pub fn neighbours(&self) -> Option<Neighbours> {
        self.neighbours
    }

    /// Lets this accountant accept [`Cost::Uncertified`] charges (counted like pure
    /// ε, marked in the ledger). For experiments with heuristic mechanisms only: the
    /// total is then not a proven guarantee.
    pub fn allow_uncertified(&mut self) {
        self.uncertified = true;
    }

    /// A pure ε-DP budget.
    pub fn pure(epsilon: Epsilon) -> Self {
        Accountant {
            epsilon,
            delta: 0.0,
            spent: None,
            spent_delta: 0.0,
            zcdp: None,
            ledger: Vec::new(),
            uncertified: false,
            neighbours: None,
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

    /// A ρ-zCDP budget, whose guarantee is reported as (ε, δ) at `delta ∈ (0, 1)`
    /// ([`budget`](Self::budget) is then the ε of ρ at δ by [`zcdp_epsilon`], for
    /// reports; the exact ρ is what is enforced).
    pub fn zcdp(rho: Rho, delta: f64) -> Result<Self, AccountantError> {
        let eps = zcdp_epsilon(rho.to_f64(), delta)?;
        let epsilon = Epsilon::from_f64(eps)
            .map_err(|_| AccountantError::InvalidParameter("rho converts to no epsilon"))?;
        Ok(Accountant {
            epsilon,
            delta,
            spent: None,
            spent_delta: 0.0,
            zcdp: Some(ZcdpBudget { rho, spent: None }),
            ledger: Vec::new(),
            uncertified: false,
            neighbours: None,
        })
    }

    /// A ρ-zCDP budget with the largest ρ whose conversion meets (ε, δ)
    /// ([`zcdp_rho_for`]); [`budget`](Self::budget) is the given ε.
    ///
    /// ```
    /// use privq_host::accountant::Accountant;
    /// use privq_host::Epsilon;
    /// let acct = Accountant::zcdp_for(Epsilon::new(1, 1)?, 1e-6)?;
    /// let rho = acct.rho_budget().unwrap().to_f64();
    /// assert!(rho > 0.0243 && rho < 0.0244);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn zcdp_for(epsilon: Epsilon, delta: f64) -> Result<Self, AccountantError> {
        let rho = zcdp_rho_for(epsilon.to_f64(), delta)?;
        Ok(Accountant {
            epsilon,
            delta,
            spent: None,
            spent_delta: 0.0,
            zcdp: Some(ZcdpBudget { rho, spent: None }),
            ledger: Vec::new(),
            uncertified: false,
            neighbours: None,
        })
    }

    /// A budget of exactly `cost`, for one release that gets a budget of its own: pure
    /// or approximate for ε costs (bounded range as pure), zCDP with δ = 10⁻⁹
    /// (for reports only) for a ρ cost; an uncertified ε opts the accountant in.
    pub fn exactly(cost: Cost) -> Result<Self, AccountantError> {
        match cost {
            Cost::Pure(e) | Cost::BoundedRange(e) => Ok(Accountant::pure(e)),
            Cost::Uncertified(e) => {
                let mut acct = Accountant::pure(e);
                acct.allow_uncertified();
                Ok(acct)
            }
            Cost::Approximate { epsilon, delta } => Accountant::approximate(epsilon, delta),
            Cost::Zcdp(rho) => Accountant::zcdp(rho, 1e-9),
        }
    }

    /// True for a ρ-zCDP accountant.
    pub fn is_zcdp(&self) -> bool {
        self.zcdp.is_some()
    }

    /// The composition rule: `"basic"` or `"zCDP"`.
    pub fn composition(&self) -> &'static str {
        if self.is_zcdp() { "zCDP" } else { "basic" }
    }

    /// Charges a release of cost `cost`; on refusal nothing is recorded.
    pub fn charge(&mut self, label: &str, cost: Cost) -> Result<Receipt, AccountantError> {
        if let Some(bound) = self.neighbours {
            return Err(AccountantError::RelationMismatch {
                label: label.to_string(),
                bound,
                stated: None,
            });
        }
        self.charge_unbound(label, cost)
    }

    /// [`Accountant::charge`] for a cost stated under `neighbours`: a bound
    /// accountant ([`Accountant::bind`]) refuses any other relation. Every
    /// mechanism charges through this.
    pub fn charge_as(
        &mut self,
        neighbours: Neighbours,
        label: &str,
        cost: Cost,
    ) -> Result<Receipt, AccountantError> {
        if let Some(bound) = self.neighbours
            && bound != neighbours
        {
            return Err(AccountantError::RelationMismatch {
                label: label.to_string(),
                bound,
                stated: Some(neighbours),
            });
        }
        self.charge_unbound(label, cost)
    }

    fn charge_unbound(&mut self, label: &str, cost: Cost) -> Result<Receipt, AccountantError> {
        if matches!(cost, Cost::Uncertified(_)) && !self.uncertified {
            return Err(AccountantError::Uncertified {
                label: label.to_string(),
            });
        }
        if let Some(z) = self.zcdp {
            let total = self.zcdp_total(&cost)?;
            if total > z.rho {
                return Err(AccountantError::RhoBudgetExceeded {
                    label: label.to_string(),
                    requested: cost.rho()?,
                    remaining: self.remaining_rho(),
                });
            }
            self.zcdp = Some(ZcdpBudget {
                spent: Some(total),
                ..z
            });
            self.ledger.push(Charge {
                label: label.to_string(),
                cost,
            });
            return Ok(Receipt { cost });
        }
        let Some(epsilon) = cost.epsilon() else {
            return Err(AccountantError::IncompatibleCost {
                cost,
                composition: "basic",
            });
        };
        let delta = cost.delta();
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

    /// The total ρ after charging `cost` to this zCDP accountant (exact).
    fn zcdp_total(&self, cost: &Cost) -> Result<Rho, AccountantError> {
        let rho = cost.rho()?;
        match self.zcdp.and_then(|z| z.spent) {
            None => Ok(rho),
            Some(s) => s.checked_add(rho).map_err(|_| AccountantError::Overflow),
        }
    }

    /// True when a charge of `cost` would be accepted.
    pub fn can_afford(&self, cost: &Cost) -> bool {
        if let Some(z) = self.zcdp {
            return self.zcdp_total(cost).is_ok_and(|t| t <= z.rho);
        }
        let Some(epsilon) = cost.epsilon() else {
            return false;
        };
        let eps_ok = match self.spent {
            None => epsilon <= self.epsilon,
            Some(s) => s.checked_add(epsilon).is_ok_and(|t| t <= self.epsilon),
        };
        eps_ok && self.spent_delta + cost.delta() <= self.delta
    }

    /// ε still available (`None` when the budget is used up exactly, and always for
    /// a zCDP accountant: see [`remaining_rho`](Self::remaining_rho)).
    pub fn remaining(&self) -> Option<Epsilon> {
        if self.is_zcdp() {
            return None;
        }
        match self.spent {
            None => Some(self.epsilon),
            Some(s) => self.epsilon.checked_sub(s).ok().flatten(),
        }
    }

    /// Exact total ε spent (`None` before the first charge, and always for a zCDP
    /// accountant: see [`spent_rho`](Self::spent_rho)).
    pub fn spent_epsilon(&self) -> Option<Epsilon> {
        self.spent
    }

    /// Total δ spent (0 for a zCDP accountant, whose δ is that of the conversion).
    pub fn spent_delta(&self) -> f64 {
        self.spent_delta
    }

    /// The total budget ε (for a zCDP accountant, the ε of its (ε, δ) target).
    pub fn budget(&self) -> Epsilon {
        self.epsilon
    }

    /// The total budget δ (for a zCDP accountant, the δ its guarantee is reported at).
    pub fn budget_delta(&self) -> f64 {
        self.delta
    }

    /// The ρ budget of a zCDP accountant.
    pub fn rho_budget(&self) -> Option<Rho> {
        self.zcdp.map(|z| z.rho)
    }

    /// Exact total ρ spent by a zCDP accountant (`None` before the first charge).
    pub fn spent_rho(&self) -> Option<Rho> {
        self.zcdp.and_then(|z| z.spent)
    }

    /// ρ still available to a zCDP accountant (`None` when used up exactly, or for
    /// other accountants).
    pub fn remaining_rho(&self) -> Option<Rho> {
        let z = self.zcdp?;
        match z.spent {
            None => Some(z.rho),
            Some(s) => z.rho.checked_sub(s).ok().flatten(),
        }
    }

    /// The (ε, δ) guarantee of what has been spent: exact ε and δ for a basic
    /// accountant; for a zCDP accountant the spent ρ converted at the budget δ by
    /// [`zcdp_epsilon`] (ε = 0 before the first charge).
    pub fn spent_guarantee(&self) -> Result<PrivacyLoss, AccountantError> {
        match self.zcdp {
            Some(z) => Ok(PrivacyLoss {
                epsilon: match z.spent {
                    Some(rho) => zcdp_epsilon(rho.to_f64(), self.delta)?,
                    None => 0.0,
                },
                delta: self.delta,
            }),
            None => Ok(PrivacyLoss {
                epsilon: self.spent.map_or(0.0, |e| e.to_f64()),
                delta: self.spent_delta,
            }),
        }
    }

    /// Every accepted charge, in order.
    pub fn ledger(&self) -> &[Charge] {
        &self.ledger
    }

    /// The ledger as text, one charge per line and a total — the one format every
    /// `privq` command prints. A zCDP ledger shows each charge's ρ and the total ρ
    /// with its (ε, δ) by the tight (CKS20) and the simple (Bun–Steinke) conversion.
    ///
    /// Short: an ε or ρ whose numerator and denominator have at most four digits is
    /// shown exactly (`ε = 1/2`), any other as four significant digits **rounded
    /// up** (`ρ = 0.125`, `ρ = 0.1235`, `1.235e-7`) — costs, totals and the budget
    /// alike, so no cost reads smaller than it is and a spent total never reads
    /// above a budget it fits in. δ is `0`, or its shortest form when that has at
    /// most four digits (`1e-9`), else four digits rounded up; the converted ε is
    /// rounded up to four digits. [`Accountant::ledger_text_exact`] has every
    /// fraction exact, as does [`Accountant::ledger_json`].
    ///
    /// ```
    /// use privq_host::accountant::Accountant;
    /// use privq_host::Epsilon;
    /// let mut acct = Accountant::pure(Epsilon::new(1, 1)?);
    /// let _ = acct.charge("a", Epsilon::new(123_456_789, 987_654_321)?.into())?;
    /// assert!(acct.ledger_text().contains("1. a: ε = 0.125\n"));
    /// assert!(acct.ledger_text().contains("total: ε = 0.125 of 1, δ = 0 of 0 "));
    /// assert!(acct.ledger_text_exact().contains("ε = 13717421/109739369 of 1, δ = 0e0 of 0e0"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ledger_text(&self) -> String {
        self.ledger_lines(false)
    }

    /// The ledger as text with every ε and ρ an exact fraction and δ in Rust's
    /// `{:e}` form (`0e0`), the converted ε to six decimals.
    pub fn ledger_text_exact(&self) -> String {
        self.ledger_lines(true)
    }

    fn ledger_lines(&self, exact: bool) -> String {
        let mut out = String::new();
        for (i, c) in self.ledger.iter().enumerate() {
            let cost = c.cost.describe(exact);
            match (self.zcdp, &c.cost) {
                (Some(_), Cost::Zcdp(_)) | (None, _) => {
                    out.push_str(&format!("  {:>3}. {}: {cost}\n", i + 1, c.label));
                }
                (Some(_), _) => {
                    let rho = c
                        .cost
                        .rho()
                        .map_or_else(|_| "?".into(), |r| fraction(r.num(), r.den(), exact));
                    out.push_str(&format!(
                        "  {:>3}. {}: {cost} → ρ = {rho}\n",
                        i + 1,
                        c.label
                    ));
                }
            }
        }
        if let Some(z) = self.zcdp {
            let spent = z
                .spent
                .map_or_else(|| "0".into(), |r| fraction(r.num(), r.den(), exact));
            let rho = z.spent.map_or(0.0, |r| r.to_f64());
            let conv = |f: fn(f64, f64) -> Result<f64, AccountantError>| {
                if rho > 0.0 {
                    f(rho, self.delta).map_or_else(
                        |_| "?".into(),
                        |e| {
                            if exact {
                                format!("{e:.6}")
                            } else {
                                short_f64(e)
                            }
                        },
                    )
                } else {
                    "0".into()
                }
            };
            out.push_str(&format!(
                "  total: ρ = {spent} of {} ⇒ (ε, δ) = ({}, {}) [CKS20 Cor. 13; \
                 simple bound ε = {}] ({} charge(s), zCDP composition)",
                fraction(z.rho.num(), z.rho.den(), exact),
                conv(zcdp_epsilon),
                delta_text(self.delta, exact),
                conv(zcdp_epsilon_simple),
                self.ledger.len()
            ));
            return out;
        }
        let eps = |e: Epsilon| fraction(e.num(), e.den(), exact);
        let spent = self.spent.map_or_else(|| "0".into(), eps);
        out.push_str(&format!(
            "  total: ε = {spent} of {}, δ = {} of {} ({} charge(s), basic composition)",
            eps(self.epsilon),
            delta_text(self.spent_delta, exact),
            delta_text(self.delta, exact),
            self.ledger.len()
        ));
        if self.has_uncertified() {
            out.push_str(" — UNCERTIFIED: includes ε with no proof that it holds");
        }
        out
    }

    /// True when an [`Cost::Uncertified`] charge was accepted.
    fn has_uncertified(&self) -> bool {
        self.ledger
            .iter()
            .any(|c| matches!(c.cost, Cost::Uncertified(_)))
    }

    /// The ledger as JSON: `{"budget": {...}, "spent": {...}, "charges": [...]}`
    /// with every ε (and ρ) as an exact fraction string and as a float. A zCDP
    /// ledger has `"composition": "zCDP"`, ρ budget and spent ρ, the spent ρ
    /// converted to (ε, δ) (`"epsilon"`: CKS20 Cor. 13, `"epsilon_simple"`:
    /// Bun–Steinke Prop. 1.3), and each charge's ρ.
    pub fn ledger_json(&self) -> serde_json::Value {
        fn eps(e: Option<Epsilon>) -> serde_json::Value {
            match e {
                Some(e) => serde_json::json!({"exact": e.to_string(), "value": e.to_f64()}),
                None => serde_json::json!({"exact": "0", "value": 0.0}),
            }
        }
        fn rho(r: Option<Rho>) -> serde_json::Value {
            match r {
                Some(r) => serde_json::json!({"exact": r.to_string(), "value": r.to_f64()}),
                None => serde_json::json!({"exact": "0", "value": 0.0}),
            }
        }
        if let Some(z) = self.zcdp {
            let spent = z.spent.map_or(0.0, |r| r.to_f64());
            let convert = |f: fn(f64, f64) -> Result<f64, AccountantError>| {
                if spent > 0.0 {
                    f(spent, self.delta).ok()
                } else {
                    Some(0.0)
                }
            };
            return serde_json::json!({
                "composition": "zCDP",
                "budget": {"rho": rho(Some(z.rho)), "epsilon": eps(Some(self.epsilon)), "delta": self.delta},
                "spent": {
                    "rho": rho(z.spent),
                    "epsilon": convert(zcdp_epsilon),
                    "epsilon_simple": convert(zcdp_epsilon_simple),
                    "delta": self.delta,
                },
                "charges": self.ledger.iter().map(|c| serde_json::json!({
                    "label": c.label,
                    "cost": c.cost.to_string(),
                    "rho": rho(c.cost.rho().ok()),
                })).collect::<Vec<_>>(),
            });
        }
        serde_json::json!({
            "composition": "basic",
            "budget": {"epsilon": eps(Some(self.epsilon)), "delta": self.delta},
            "spent": {"epsilon": eps(self.spent), "delta": self.spent_delta},
            "certified": !self.has_uncertified(),
            "charges": self.ledger.iter().map(|c| serde_json::json!({
                "label": c.label,
                "epsilon": eps(c.cost.epsilon()),
                "delta": c.cost.delta(),
                "certified": !matches!(c.cost, Cost::Uncertified(_)),
            })).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_accountant_refuses_other_and_unstated_relations() {
        let one = Epsilon::new(1, 1).unwrap();
        let mut acct = Accountant::pure(Epsilon::new(3, 1).unwrap());
        acct.bind(Neighbours::Replace);
        assert_eq!(acct.neighbours(), Some(Neighbours::Replace));
        // A cost computed for add/remove does not add up with replace-one costs.
        let e = acct
            .charge_as(Neighbours::AddRemove, "add/remove histogram", one.into())
            .unwrap_err();
        assert!(matches!(
            e,
            AccountantError::RelationMismatch {
                stated: Some(_),
                ..
            }
        ));
        assert!(e.to_string().contains("add/remove"), "{e}");
        // A charge that states no relation is refused too (fail closed).
        assert!(matches!(
            acct.charge("unstated", one.into()),
            Err(AccountantError::RelationMismatch { stated: None, .. })
        ));
        assert_eq!(acct.spent_epsilon(), None, "nothing recorded");
        acct.charge_as(Neighbours::Replace, "replace-one", one.into())
            .unwrap();
        assert_eq!(acct.spent_epsilon(), Some(one));
        // An unbound accountant takes any relation (the caller vouches for them).
        let mut free = Accountant::pure(one);
        free.charge_as(Neighbours::AddRemove, "any", one.into())
            .unwrap();
    }

    #[test]
    fn a_mechanism_declaring_another_relation_is_refused_before_it_samples() {
        use crate::contract::Mechanism;
        let one = Epsilon::new(1, 1).unwrap();
        let geo = crate::central::Geometric::histogram(Neighbours::AddRemove, one).unwrap();
        let mut acct = Accountant::pure(Epsilon::new(2, 1).unwrap());
        acct.bind(Neighbours::Replace);
        let refused = geo.release(&[3u64, 4][..], &mut acct, &mut crate::seeded_rng(1));
        assert!(refused.is_err());
        assert_eq!(acct.spent_epsilon(), None);
    }

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

    /// Reference values of the tight conversion (CKS20 Cor. 13) and the simple one
    /// (Bun–Steinke 2016 Prop. 1.3), computed independently with mpmath 1.3 at 50
    /// digits: a scan of α = 1 + 10^x, then `findroot` on dε/dα = 0.
    const REFERENCE: [(f64, f64, f64, f64); 6] = [
        // (ρ, δ, ε tight, ε simple)
        (0.5, 1e-5, 4.728_386_984_943_314, 5.298_525_912_188_081),
        (0.1, 1e-6, 2.141_938_928_385_474, 2.450_788_000_476_8),
        (1.0, 1e-6, 7.766_216_625_311_721, 8.433_844_377_699_677),
        (0.01, 1e-9, 0.810_174_467_867_534, 0.920_456_277_631_088),
        (2.0, 1e-3, 8.416_064_294_321_277, 9.433_844_377_699_677),
        (0.005, 1e-6, 0.429_941_468_836_949, 0.530_652_176_975_693),
    ];

    #[test]
    fn zcdp_conversions_match_reference_values_and_round_up() {
        for (rho, delta, tight, simple) in REFERENCE {
            let ours = zcdp_epsilon(rho, delta).unwrap();
            // Never below the exact infimum, and within 10⁻¹⁰ of it.
            assert!(ours >= tight, "{rho} {delta}: {ours} < {tight}");
            assert!(
                ours - tight < 1e-10 * tight,
                "{rho} {delta}: {ours} vs {tight}"
            );
            let s = zcdp_epsilon_simple(rho, delta).unwrap();
            assert!(
                s >= simple && s - simple < 1e-12 * simple,
                "{s} vs {simple}"
            );
            assert!(ours < s);
        }
    }

    #[test]
    fn zcdp_conversion_is_no_worse_than_a_brute_force_minimum() {
        // Any α gives a valid ε; a dense grid of α must not beat our infimum.
        for rho in [0.001, 0.02, 0.3, 1.0, 5.0, 40.0] {
            for delta in [1e-12, 1e-6, 1e-3, 0.1] {
                let brute = (1..200_000)
                    .map(|i| 1.0 + f64::from(i) * 1e-3 * (1.0 + f64::from(i) * 1e-3))
                    .map(|a: f64| {
                        a * rho + (1.0 / (a * delta)).ln() / (a - 1.0) + (1.0 - 1.0 / a).ln()
                    })
                    .fold(f64::INFINITY, f64::min)
                    .max(0.0);
                let ours = zcdp_epsilon(rho, delta).unwrap();
                assert!(
                    ours <= brute + 1e-9 * brute,
                    "{rho} {delta}: {ours} > {brute}"
                );
                assert!(ours >= 0.98 * brute, "{rho} {delta}: {ours} ≪ {brute}");
            }
        }
    }

    #[test]
    fn zcdp_conversion_is_monotone() {
        let rhos = [1e-4, 1e-3, 0.01, 0.1, 0.5, 1.0, 3.0, 10.0];
        let deltas = [1e-10, 1e-6, 1e-3, 0.05];
        for &delta in &deltas {
            let eps: Vec<f64> = rhos
                .iter()
                .map(|&r| zcdp_epsilon(r, delta).unwrap())
                .collect();
            // Strictly increasing once positive (0 is the floor for large δ).
            let up = eps.windows(2).all(|w| w[0] < w[1] || w[1] == 0.0);
            assert!(up, "δ = {delta}: {eps:?}");
        }
        for &rho in &rhos {
            let eps: Vec<f64> = deltas
                .iter()
                .map(|&d| zcdp_epsilon(rho, d).unwrap())
                .collect();
            let down = eps.windows(2).all(|w| w[0] > w[1] || w[0] == 0.0);
            assert!(down, "ρ = {rho}: {eps:?}");
            for &d in &deltas {
                let tight = zcdp_epsilon(rho, d).unwrap();
                assert!(tight <= zcdp_epsilon_simple(rho, d).unwrap());
                assert!(tight >= 0.0);
            }
        }
        assert!(zcdp_epsilon(0.0, 1e-6).is_err());
        assert!(zcdp_epsilon(f64::NAN, 1e-6).is_err());
        assert!(zcdp_epsilon(0.1, 0.0).is_err());
        assert!(zcdp_epsilon_simple(0.1, 1.0).is_err());
    }

    #[test]
    fn largest_rho_for_a_target_meets_it() {
        for (eps, delta) in [(1.0, 1e-6), (0.5, 1e-9), (4.0, 1e-5), (10.0, 1e-3)] {
            let rho = zcdp_rho_for(eps, delta).unwrap();
            assert!(zcdp_epsilon(rho.to_f64(), delta).unwrap() <= eps);
            // And it is the largest, to 10⁻⁹.
            assert!(zcdp_epsilon(rho.to_f64() * (1.0 + 1e-9), delta).unwrap() > eps);
        }
        // Round trip through the reference table.
        let rho = zcdp_rho_for(4.728_386_985, 1e-5).unwrap().to_f64();
        assert!((rho - 0.5).abs() < 1e-8, "{rho}");
        assert!(zcdp_rho_for(0.0, 1e-6).is_err());
        assert!(zcdp_rho_for(1.0, 2.0).is_err());
    }

    #[test]
    fn zcdp_accountant_adds_rho_exactly_and_converts_pure_costs() {
        let rho = |n, d| Rho::new(n, d).unwrap();
        let eps = |n, d| Epsilon::new(n, d).unwrap();
        let mut a = Accountant::zcdp(rho(1, 1), 1e-6).unwrap();
        assert!(a.is_zcdp() && a.composition() == "zCDP");
        let r1 = a.charge("gauss", Cost::Zcdp(rho(1, 3))).unwrap();
        let _ = a.charge("laplace", Cost::Pure(eps(1, 2))).unwrap(); // ρ = 1/8
        let _ = a.charge("exp mech", Cost::BoundedRange(eps(1, 1))).unwrap(); // ρ = 1/8
        let _ = a
            .charge(
                "δ = 0",
                Cost::Approximate {
                    epsilon: eps(1, 2),
                    delta: 0.0,
                },
            )
            .unwrap(); // ρ = 1/8
        assert_eq!(a.spent_rho(), Some(rho(17, 24)));
        assert_eq!(a.remaining_rho(), Some(rho(7, 24)));
        assert!(a.can_afford(&Cost::Zcdp(rho(7, 24))));
        assert!(!a.can_afford(&Cost::Zcdp(rho(8, 24))));
        // Refusals record nothing.
        let before = (a.ledger().len(), a.spent_rho());
        let err = a.charge("over", Cost::Zcdp(rho(1, 3))).unwrap_err();
        assert!(
            matches!(err, AccountantError::RhoBudgetExceeded { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("needs rho 1/3, only 7/24 remains"));
        let approx = Cost::Approximate {
            epsilon: eps(1, 10),
            delta: 1e-9,
        };
        assert!(matches!(
            a.charge("approx", approx).unwrap_err(),
            AccountantError::IncompatibleCost {
                composition: "zCDP",
                ..
            }
        ));
        assert!(!a.can_afford(&approx));
        assert_eq!((a.ledger().len(), a.spent_rho()), before);
        // Exactly the remainder is accepted.
        let _ = a.charge("rest", Cost::Zcdp(rho(7, 24))).unwrap();
        assert_eq!(a.remaining_rho(), None);
        assert_eq!(a.spent_epsilon(), None);
        assert_eq!(a.remaining(), None);
        // The guarantee of ρ = 1 at δ = 10⁻⁶ (reference table).
        let g = a.spent_guarantee().unwrap();
        assert!((g.epsilon - 7.766_216_625).abs() < 1e-8 && g.delta == 1e-6);
        assert!(r1.check_covers(&Cost::Zcdp(rho(1, 3))).is_ok());
    }

    #[test]
    fn zcdp_for_targets_and_mixed_accountants_refuse() {
        let a = Accountant::zcdp_for(Epsilon::new(1, 1).unwrap(), 1e-6).unwrap();
        assert_eq!(a.budget(), Epsilon::new(1, 1).unwrap());
        let r = a.rho_budget().unwrap();
        assert!(zcdp_epsilon(r.to_f64(), 1e-6).unwrap() <= 1.0);
        // A pure accountant refuses ρ costs, records nothing.
        let mut p = Accountant::pure(Epsilon::new(1, 1).unwrap());
        let z = Cost::Zcdp(Rho::new(1, 100).unwrap());
        assert!(matches!(
            p.charge("z", z).unwrap_err(),
            AccountantError::IncompatibleCost {
                composition: "basic",
                ..
            }
        ));
        assert!(!p.can_afford(&z));
        assert!(p.ledger().is_empty() && p.spent_epsilon().is_none());
        // Bounded range is plain ε in a pure accountant.
        let _ = p
            .charge("em", Cost::BoundedRange(Epsilon::new(1, 2).unwrap()))
            .unwrap();
        assert_eq!(p.spent_epsilon(), Some(Epsilon::new(1, 2).unwrap()));
        let ex = Accountant::exactly(z).unwrap();
        assert_eq!(ex.rho_budget(), Some(Rho::new(1, 100).unwrap()));
        assert_eq!(
            Cost::pure_as_zcdp(Epsilon::new(1, 1).unwrap()).unwrap(),
            Cost::Zcdp(Rho::new(1, 2).unwrap())
        );
    }

    #[test]
    fn receipts_never_cover_across_kinds_silently() {
        let e = |n, d| Epsilon::new(n, d).unwrap();
        let r = |n, d| Rho::new(n, d).unwrap();
        let zcdp = Cost::Zcdp(r(1, 4));
        assert!(zcdp.covers(&Cost::Zcdp(r(1, 5))));
        assert!(!zcdp.covers(&Cost::Zcdp(r(1, 3))));
        assert!(!zcdp.covers(&Cost::Pure(e(1, 100))));
        assert!(!zcdp.covers(&Cost::BoundedRange(e(1, 100))));
        assert!(!Cost::Pure(e(10, 1)).covers(&Cost::Zcdp(r(1, 100))));
        let br = Cost::BoundedRange(e(1, 1));
        assert!(br.covers(&Cost::BoundedRange(e(1, 2))));
        assert!(!br.covers(&Cost::Pure(e(1, 2))));
        assert!(Cost::Pure(e(1, 1)).covers(&Cost::BoundedRange(e(1, 1))));
        let receipt = Receipt { cost: zcdp };
        assert!(matches!(
            receipt.check_covers(&Cost::Pure(e(1, 100))),
            Err(AccountantError::ReceiptTooSmall { .. })
        ));
    }

    #[test]
    fn zcdp_ledger_shows_rho_and_the_converted_guarantee() {
        let mut a = Accountant::zcdp(Rho::new(1, 1).unwrap(), 1e-6).unwrap();
        let _ = a
            .charge("counts", Cost::Zcdp(Rho::new(1, 2).unwrap()))
            .unwrap();
        let _ = a
            .charge("laplace", Cost::Pure(Epsilon::new(1, 1).unwrap()))
            .unwrap();
        let text = a.ledger_text();
        assert!(text.contains("1. counts: ρ = 1/2 (zCDP)"), "{text}");
        assert!(text.contains("2. laplace: ε = 1 → ρ = 1/2"), "{text}");
        // The converted ε = 7.7662166… and 8.4338… read rounded up.
        assert!(
            text.contains("total: ρ = 1 of 1 ⇒ (ε, δ) = (7.767, 1e-6)"),
            "{text}"
        );
        assert!(text.contains("simple bound ε = 8.434]"), "{text}");
        let exact = a.ledger_text_exact();
        assert!(
            exact.contains("total: ρ = 1 of 1 ⇒ (ε, δ) = (7.766217, 1e-6)"),
            "{exact}"
        );
        assert!(exact.contains("simple bound ε = 8.433844"), "{exact}");
        let json = a.ledger_json();
        assert_eq!(json["composition"], "zCDP");
        assert_eq!(json["spent"]["rho"]["exact"], "1");
        assert_eq!(json["charges"][1]["rho"]["exact"], "1/2");
        let eps = json["spent"]["epsilon"].as_f64().unwrap();
        assert!((eps - 7.766_216_625).abs() < 1e-8);
        assert!(json["spent"]["epsilon_simple"].as_f64().unwrap() > eps);
        assert_eq!(json["budget"]["delta"], 1e-6);
    }

    #[test]
    fn short_numbers_round_exactly_in_the_stated_direction() {
        // Short fractions stay exact.
        assert_eq!(short_ratio(1, 2, true), "1/2");
        assert_eq!(short_ratio(3, 1, true), "3");
        assert_eq!(short_ratio(0, 123_456_789, true), "0");
        assert_eq!(short_ratio(9999, 9998, true), "9999/9998");
        // 1/8 + 2⁻⁶³: the nearest f64 is 1/8, so float formatting would show 0.125.
        assert_eq!((((1u64 << 60) + 1) as f64 / (1u64 << 63) as f64), 0.125);
        assert_eq!(short_ratio((1 << 60) + 1, 1 << 63, true), "0.1251");
        assert_eq!(short_ratio((1 << 60) + 1, 1 << 63, false), "0.125");
        // 0.3333366…: `{:.4}` rounds to nearest, down here.
        assert_eq!(format!("{:.4}", 100_001.0 / 300_000.0), "0.3333");
        assert_eq!(short_ratio(100_001, 300_000, true), "0.3334");
        assert_eq!(short_ratio(100_001, 300_000, false), "0.3333");
        assert_eq!(short_ratio(12_500, 100_000, true), "0.125");
        assert_eq!(short_ratio(99_999, 100_000, true), "1");
        assert_eq!(short_ratio(99_999, 100_000, false), "0.9999");
        assert_eq!(short_ratio(12_345, 100_000_000_000, true), "1.235e-7");
        assert_eq!(short_ratio(12_345, 100_000_000_000, false), "1.234e-7");
        assert_eq!(short_ratio(1, u64::MAX, true), "5.422e-20");
        assert_eq!(short_ratio(u64::MAX, 3, true), "6148914691236517205");
        // σ² = 2⁵⁵/10114898543903 = 3561.98…: integer digits are kept.
        assert_eq!(short_ratio(1 << 55, 10_114_898_543_903, true), "3562");
        assert_eq!(short_ratio(1 << 55, 10_114_898_543_903, false), "3561");
        assert_eq!(short_ratio(123_456_789, 987_654_321, true), "0.125");
        // Floats: the shortest form when it is short, else four digits rounded up.
        assert_eq!(short_f64(0.0), "0");
        assert_eq!(short_f64(1e-9), "1e-9");
        assert_eq!(short_f64(1.5e-6), "1.5e-6");
        assert_eq!(short_f64(0.5), "0.5");
        assert_eq!(short_f64(1e-4), "0.0001");
        assert_eq!(short_f64(0.1 + 0.2), "0.3001");
        assert_eq!(format!("{:.3e}", 1.23449e-6), "1.234e-6");
        assert_eq!(short_f64(1.23449e-6), "1.235e-6");
        assert_eq!(short_f64(0.999_99), "1");
        assert_eq!(short_f64(1234.5), "1235");
    }

    #[test]
    fn the_text_ledger_is_short_and_the_exact_one_keeps_fractions() {
        let e = |n, d| Epsilon::new(n, d).unwrap();
        let mut a = Accountant::approximate(e(1, 1), 1e-6).unwrap();
        let long = e(123_456_789, 987_654_321);
        let _ = a.charge("long", long.into()).unwrap();
        let _ = a
            .charge(
                "approx",
                Cost::Approximate {
                    epsilon: e(1, 10),
                    delta: 1.5e-7,
                },
            )
            .unwrap();
        let text = a.ledger_text();
        assert!(text.contains("1. long: ε = 0.125\n"), "{text}");
        assert!(text.contains("2. approx: ε = 1/10, δ = 1.5e-7\n"), "{text}");
        // 0.2249999988… + nothing lost: the total reads 0.225 ≥ the exact spend.
        assert!(
            text.contains("total: ε = 0.225 of 1, δ = 1.5e-7 of 1e-6 (2 charge(s)"),
            "{text}"
        );
        let exact = a.ledger_text_exact();
        assert!(
            exact.contains("1. long: ε = 13717421/109739369\n"),
            "{exact}"
        );
        assert!(exact.contains("δ = 1.5e-7 of 1e-6"), "{exact}");
        let spent = a.spent_epsilon().unwrap();
        assert!(
            exact.contains(&format!("total: ε = {spent} of 1,")),
            "{exact}"
        );
        assert_eq!(
            a.ledger_json()["spent"]["epsilon"]["exact"],
            spent.to_string()
        );
        let pure = Accountant::pure(e(1, 2));
        assert!(
            pure.ledger_text()
                .contains("total: ε = 0 of 1/2, δ = 0 of 0 (0 charge(s)"),
            "{}",
            pure.ledger_text()
        );
        assert!(pure.ledger_text_exact().contains("δ = 0e0 of 0e0"));
    }
}

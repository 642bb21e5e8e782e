//! zCDP conversions: ρ-zCDP to (ε, δ), tight (Canonne–Kamath–Steinke 2020) and
//! simple (Bun–Steinke 2016), and the largest ρ meeting an (ε, δ) target.

use privq_core::Rho;

use super::AccountantError;

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

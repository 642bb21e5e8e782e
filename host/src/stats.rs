//! Small statistics toolkit for the test suites: chi-square tests against exact
//! probabilities, and normal/binomial tail bounds.
//!
//! These are floating-point helpers for *checking* samplers and mechanisms (reports,
//! test thresholds). Nothing here decides what noise a released value gets.
//!
//! * [`chi2_sf`]: the chi-square survival function `P[χ²_df ≥ x]`, via the regularized
//!   upper incomplete gamma function [`gamma_q`]. Against mpmath it is within 10⁻¹³
//!   relative for df ≤ 1000 and 10⁻¹¹ at df = 10⁴, including far tails (10⁻¹²⁸).
//! * [`chi_square_gof`]: Pearson's goodness-of-fit test of observed counts against exact
//!   cell probabilities, pooling cells whose expected count is below 5.
//! * [`clopper_pearson`]: exact binomial confidence intervals from Beta quantiles
//!   ([`beta_quantile`], bisection on [`beta_inc`]).
//! * [`normal_sf`], [`normal_isf`], [`binomial_two_sided_p`], [`binomial_acceptance`]:
//!   two-sided tail bounds for counts, by the normal approximation.
//!
//! ```
//! use privq_host::stats::chi_square_gof;
//! // 600 rolls of a die.
//! let observed = [95, 108, 97, 101, 99, 100];
//! let fit = chi_square_gof(&observed, &[1.0 / 6.0; 6]).unwrap();
//! assert_eq!(fit.df, 5);
//! assert!(fit.p_value > 0.9);
//! ```

use std::fmt;

/// The smallest expected count a cell of [`chi_square_gof`] may have before it is
/// pooled with its neighbours (the usual rule of thumb for the χ² approximation).
pub const MIN_EXPECTED: f64 = 5.0;

/// Largest number of series or continued-fraction terms [`gamma_q`] evaluates.
const MAX_TERMS: usize = 1_000_000;

/// Errors of the statistics helpers (bad arguments; never a panic).
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StatsError {
    /// `observed` and `probabilities` have different lengths.
    #[error("{observed} observed counts but {probabilities} probabilities")]
    LengthMismatch {
        /// Number of observed counts.
        observed: usize,
        /// Number of probabilities.
        probabilities: usize,
    },
    /// A probability is negative or not finite.
    #[error("a probability is negative or not finite")]
    BadProbability,
    /// The probabilities do not sum to 1 (within 10⁻⁹).
    #[error("the probabilities sum to {sum}, not 1")]
    NotNormalized {
        /// Their sum.
        sum: f64,
    },
    /// No observations at all.
    #[error("there are no observations")]
    NoObservations,
    /// Fewer than two cells remain after pooling, so the test has no degrees of freedom.
    #[error("fewer than two cells remain after pooling small cells")]
    TooFewCells,
    /// A parameter is outside its domain (e.g. a degree-of-freedom count of 0,
    /// a probability outside `(0, 1)`, or a NaN).
    #[error("a parameter is outside its domain")]
    Domain,
}

/// `ln Γ(a)` for `a > 0`: the Stirling series for `a ≥ 20`, shifted by the recurrence
/// `Γ(a) = Γ(a + n) / (a(a+1)…(a+n−1))` below that. Absolute error ≈ 10⁻¹⁵·a·ln a.
pub fn ln_gamma(a: f64) -> f64 {
    if a.is_nan() || a <= 0.0 {
        return f64::NAN;
    }
    if a.is_infinite() {
        return f64::INFINITY;
    }
    let mut x = a;
    let mut product = 1.0;
    while x < 20.0 {
        product *= x;
        x += 1.0;
        // At most 20 factors below 20 each: no overflow.
    }
    let shift = product.ln();
    // Stirling: ln Γ(x) = (x − ½) ln x − x + ½ ln 2π + Σ B₂ₖ / (2k(2k−1) x^{2k−1}).
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    let series = inv
        * (1.0 / 12.0
            + inv2
                * (-1.0 / 360.0
                    + inv2 * (1.0 / 1260.0 + inv2 * (-1.0 / 1680.0 + inv2 * (1.0 / 1188.0)))));
    const HALF_LN_TWO_PI: f64 = 0.918_938_533_204_672_8;
    (x - 0.5) * x.ln() - x + HALF_LN_TWO_PI + series - shift
}

/// `ln(x^a e^{−x} / Γ(a))`, the common prefactor of the incomplete gamma functions.
fn ln_prefactor(a: f64, x: f64) -> f64 {
    a * x.ln() - x - ln_gamma(a)
}

/// The regularized upper incomplete gamma function `Q(a, x) = Γ(a, x) / Γ(a)`,
/// for `a > 0`, `x ≥ 0`.
///
/// For `x < a + 1` it sums the power series of `P = 1 − Q` (where `Q` is not small,
/// so `1 − P` loses nothing that matters); otherwise it evaluates the continued
/// fraction for `Q` directly, which keeps full relative accuracy in the far tail.
/// Returns NaN for arguments outside the domain.
pub fn gamma_q(a: f64, x: f64) -> f64 {
    if a.is_nan() || x.is_nan() || a <= 0.0 || a.is_infinite() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return 1.0;
    }
    if x.is_infinite() {
        return 0.0;
    }
    if x < a + 1.0 {
        1.0 - gamma_p_series(a, x)
    } else {
        gamma_q_continued_fraction(a, x)
    }
}

/// The regularized lower incomplete gamma function `P(a, x) = 1 − Q(a, x)`.
pub fn gamma_p(a: f64, x: f64) -> f64 {
    if a.is_nan() || x.is_nan() || a <= 0.0 || a.is_infinite() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return 0.0;
    }
    if x.is_infinite() {
        return 1.0;
    }
    if x < a + 1.0 {
        gamma_p_series(a, x)
    } else {
        1.0 - gamma_q_continued_fraction(a, x)
    }
}

/// `P(a, x) = x^a e^{−x}/Γ(a+1) · Σₙ xⁿ / ((a+1)…(a+n))`; all terms positive.
fn gamma_p_series(a: f64, x: f64) -> f64 {
    let mut term = 1.0;
    let mut sum = 1.0;
    let mut denom = a;
    for _ in 0..MAX_TERMS {
        denom += 1.0;
        term *= x / denom;
        sum += term;
        if term < sum * 1e-17 {
            break;
        }
    }
    // x^a e^{−x} / Γ(a + 1) = x^a e^{−x} / (a Γ(a)).
    (ln_prefactor(a, x) + sum.ln() - a.ln()).exp()
}

/// `Q(a, x) = x^a e^{−x}/Γ(a) · 1/(x + 1 − a − 1·(1−a)/(x + 3 − a − 2·(2−a)/(x + 5 − a − …)))`,
/// evaluated with the modified Lentz method.
fn gamma_q_continued_fraction(a: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut b = x + 1.0 - a;
    let mut c = 1.0 / TINY;
    let mut d = 1.0 / b;
    let mut h = d;
    for i in 1..MAX_TERMS {
        let i = i as f64;
        let an = -i * (i - a);
        b += 2.0;
        d = an * d + b;
        if d.abs() < TINY {
            d = TINY;
        }
        c = b + an / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let delta = d * c;
        h *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    (ln_prefactor(a, x) + h.ln()).exp()
}

/// The chi-square survival function `P[χ²_df ≥ x] = Q(df/2, x/2)` (the p-value of a
/// statistic `x`). Returns NaN when `df = 0` or `x` is NaN; 1 for `x ≤ 0`.
///
/// ```
/// use privq_host::stats::chi2_sf;
/// assert!((chi2_sf(3.841458820694124, 1) - 0.05).abs() < 1e-12);
/// ```
pub fn chi2_sf(x: f64, df: usize) -> f64 {
    if df == 0 || x.is_nan() {
        return f64::NAN;
    }
    if x <= 0.0 {
        return 1.0;
    }
    gamma_q(df as f64 / 2.0, x / 2.0)
}

/// The standard normal upper tail `P[Z ≥ z]`, accurate in the far tails
/// (`= ½ Q(½, z²/2)` for `z ≥ 0`).
pub fn normal_sf(z: f64) -> f64 {
    if z.is_nan() {
        return f64::NAN;
    }
    if z >= 0.0 {
        0.5 * gamma_q(0.5, 0.5 * z * z)
    } else {
        1.0 - 0.5 * gamma_q(0.5, 0.5 * z * z)
    }
}

/// The `z` with `P[Z ≥ z] = p` (inverse of [`normal_sf`]), for `p ∈ (0, 1)`, by
/// bisection to full precision. NaN outside the domain.
///
/// ```
/// use privq_host::stats::normal_isf;
/// assert!((normal_isf(0.025) - 1.959963984540054).abs() < 1e-9);
/// ```
pub fn normal_isf(p: f64) -> f64 {
    if p.is_nan() || p <= 0.0 || p >= 1.0 {
        return f64::NAN;
    }
    // normal_sf(−40) = 1 and normal_sf(40) ≈ 4e−350 < any positive f64 p.
    let (mut lo, mut hi) = (-40.0f64, 40.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid == lo || mid == hi {
            break;
        }
        if normal_sf(mid) > p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Two-sided p-value for observing `k` successes in `n` Bernoulli(`p`) trials, by the
/// normal approximation with continuity correction: `2·P[Z ≥ (|k − np| − ½)/√(np(1−p))]`,
/// capped at 1. Good when `np(1−p)` is at least about 10.
///
/// Returns `Err(Domain)` when `p ∉ (0, 1)`, `n = 0` or `k > n`.
///
/// ```
/// use privq_host::stats::binomial_two_sided_p;
/// // 5300 heads in 10 000 fair tosses is a 6σ event.
/// assert!(binomial_two_sided_p(5300, 10_000, 0.5).unwrap() < 1e-8);
/// assert!(binomial_two_sided_p(5030, 10_000, 0.5).unwrap() > 0.5);
/// ```
pub fn binomial_two_sided_p(k: u64, n: u64, p: f64) -> Result<f64, StatsError> {
    if !(p > 0.0 && p < 1.0) || n == 0 || k > n {
        return Err(StatsError::Domain);
    }
    let n = n as f64;
    let sd = (n * p * (1.0 - p)).sqrt();
    let dev = ((k as f64 - n * p).abs() - 0.5).max(0.0);
    Ok((2.0 * normal_sf(dev / sd)).min(1.0))
}

/// The range `[lo, hi]` of success counts in `n` Bernoulli(`p`) trials that a two-sided
/// test at level `alpha` accepts (normal approximation, continuity-corrected):
/// `np ∓ (z·√(np(1−p)) + ½)` with `z = normal_isf(alpha/2)`.
///
/// Returns `Err(Domain)` when `p ∉ (0, 1)`, `alpha ∉ (0, 1)` or `n = 0`.
pub fn binomial_acceptance(n: u64, p: f64, alpha: f64) -> Result<(f64, f64), StatsError> {
    if !(p > 0.0 && p < 1.0 && alpha > 0.0 && alpha < 1.0) || n == 0 {
        return Err(StatsError::Domain);
    }
    let n = n as f64;
    let z = normal_isf(alpha / 2.0);
    let half_width = z * (n * p * (1.0 - p)).sqrt() + 0.5;
    Ok((n * p - half_width, n * p + half_width))
}

/// The result of a chi-square goodness-of-fit test ([`chi_square_gof`]).
#[derive(Debug, Clone, PartialEq)]
pub struct GoodnessOfFit {
    /// Pearson's statistic `Σ (O − E)² / E` over the pooled cells.
    pub statistic: f64,
    /// Degrees of freedom: pooled cells − 1.
    pub df: usize,
    /// `P[χ²_df ≥ statistic]`; 0 when an observation fell in a cell of probability 0.
    pub p_value: f64,
    /// Number of cells after pooling.
    pub cells: usize,
    /// Observations that fell in cells of probability exactly 0 (impossible outcomes).
    pub impossible: u64,
    /// Total number of observations.
    pub total: u64,
}

impl fmt::Display for GoodnessOfFit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "chi2 = {:.2} on {} df (n = {}, {} cells), p = {:.3e}",
            self.statistic, self.df, self.total, self.cells, self.p_value
        )?;
        if self.impossible > 0 {
            write!(f, ", {} impossible observations", self.impossible)?;
        }
        Ok(())
    }
}

/// Pearson's chi-square goodness-of-fit test of `observed` counts against exact cell
/// `probabilities` (which must sum to 1 within 10⁻⁹; give the tails their own cells).
///
/// Cells are taken in order and pooled with their neighbours until every pooled cell
/// expects at least [`MIN_EXPECTED`] observations: runs of small cells are gathered
/// left to right, and a small remainder at the end joins the last pooled cell. For a
/// unimodal distribution listed in order this pools the thin tails into tail cells.
/// Any observation in a cell of probability exactly 0 makes the p-value 0.
///
/// ```
/// use privq_host::stats::chi_square_gof;
/// // A coin that came up heads 700 times in 1000.
/// let fit = chi_square_gof(&[700, 300], &[0.5, 0.5]).unwrap();
/// assert!(fit.p_value < 1e-30);
/// ```
pub fn chi_square_gof(
    observed: &[u64],
    probabilities: &[f64],
) -> Result<GoodnessOfFit, StatsError> {
    chi_square_gof_with_min(observed, probabilities, MIN_EXPECTED)
}

/// [`chi_square_gof`] with a custom smallest expected count per pooled cell.
pub fn chi_square_gof_with_min(
    observed: &[u64],
    probabilities: &[f64],
    min_expected: f64,
) -> Result<GoodnessOfFit, StatsError> {
    if observed.len() != probabilities.len() {
        return Err(StatsError::LengthMismatch {
            observed: observed.len(),
            probabilities: probabilities.len(),
        });
    }
    if !(min_expected > 0.0 && min_expected.is_finite()) {
        return Err(StatsError::Domain);
    }
    if probabilities.iter().any(|p| !(p.is_finite() && *p >= 0.0)) {
        return Err(StatsError::BadProbability);
    }
    let sum: f64 = probabilities.iter().sum();
    if (sum - 1.0).abs() > 1e-9 {
        return Err(StatsError::NotNormalized { sum });
    }
    let total: u64 = observed.iter().sum();
    if total == 0 {
        return Err(StatsError::NoObservations);
    }
    let n = total as f64;
    let impossible: u64 = observed
        .iter()
        .zip(probabilities)
        .filter(|&(_, &p)| p == 0.0)
        .map(|(&o, _)| o)
        .sum();

    // Pool left to right into (observed, expected) cells.
    let mut pooled: Vec<(f64, f64)> = Vec::new();
    let (mut obs, mut exp) = (0.0, 0.0);
    for (&o, &p) in observed.iter().zip(probabilities) {
        obs += o as f64;
        exp += p * n;
        if exp >= min_expected {
            pooled.push((obs, exp));
            (obs, exp) = (0.0, 0.0);
        }
    }
    if obs > 0.0 || exp > 0.0 {
        match pooled.last_mut() {
            Some(last) => {
                last.0 += obs;
                last.1 += exp;
            }
            None => pooled.push((obs, exp)),
        }
    }
    if pooled.len() < 2 {
        return Err(StatsError::TooFewCells);
    }
    let statistic: f64 = pooled.iter().map(|&(o, e)| (o - e) * (o - e) / e).sum();
    let df = pooled.len() - 1;
    let p_value = if impossible > 0 {
        0.0
    } else {
        chi2_sf(statistic, df)
    };
    Ok(GoodnessOfFit {
        statistic,
        df,
        p_value,
        cells: pooled.len(),
        impossible,
        total,
    })
}

/// The regularized incomplete beta function `I_x(a, b)` for `a, b > 0`, by the
/// continued fraction of Numerical Recipes §6.4 (modified Lentz), using the symmetry
/// `I_x(a, b) = 1 − I_{1−x}(b, a)` where the fraction converges slowly.
pub fn beta_inc(x: f64, a: f64, b: f64) -> Result<f64, StatsError> {
    if !(a > 0.0 && b > 0.0 && a.is_finite() && b.is_finite()) || x.is_nan() {
        return Err(StatsError::Domain);
    }
    if x <= 0.0 {
        return Ok(0.0);
    }
    if x >= 1.0 {
        return Ok(1.0);
    }
    if x > (a + 1.0) / (a + b + 2.0) {
        return Ok(1.0 - beta_inc_cf(1.0 - x, b, a));
    }
    Ok(beta_inc_cf(x, a, b))
}

/// `I_x(a, b)` by its continued fraction; accurate for `x < (a+1)/(a+b+2)`.
fn beta_inc_cf(x: f64, a: f64, b: f64) -> f64 {
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let tiny = 1e-300;
    let guard = |v: f64| if v.abs() < tiny { tiny } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0));
    let mut h = d;
    for m in 1..MAX_TERMS {
        let m = m as f64;
        let even = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        let odd = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        let mut last = 1.0;
        for num in [even, odd] {
            d = 1.0 / guard(1.0 + num * d);
            c = guard(1.0 + num / c);
            last = d * c;
            h *= last;
        }
        if (last - 1.0).abs() < 1e-15 {
            break;
        }
    }
    (ln_front.exp() * h / a).clamp(0.0, 1.0)
}

/// The `p`-quantile of the Beta(a, b) distribution: the `x` with `I_x(a, b) = p`,
/// by bisection (200 halvings; `I_x` is monotone in `x`, so this cannot diverge).
pub fn beta_quantile(p: f64, a: f64, b: f64) -> Result<f64, StatsError> {
    if !(0.0..=1.0).contains(&p) {
        return Err(StatsError::Domain);
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if beta_inc(mid, a, b)? < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(0.5 * (lo + hi))
}

/// The exact two-sided Clopper–Pearson interval for a binomial proportion after `k`
/// successes in `n` trials, at confidence `1 − alpha`: the `alpha/2` quantile of
/// Beta(k, n−k+1) and the `1 − alpha/2` quantile of Beta(k+1, n−k) (0 and 1 at the
/// ends).
///
/// ```
/// use privq_host::stats::clopper_pearson;
/// let (lo, hi) = clopper_pearson(5, 10, 0.05)?;
/// assert!((lo - 0.187086).abs() < 1e-6 && (hi - 0.812914).abs() < 1e-6);
/// # Ok::<(), privq_host::stats::StatsError>(())
/// ```
pub fn clopper_pearson(k: u64, n: u64, alpha: f64) -> Result<(f64, f64), StatsError> {
    if n == 0 {
        return Err(StatsError::NoObservations);
    }
    if k > n || !(alpha > 0.0 && alpha < 1.0) {
        return Err(StatsError::Domain);
    }
    let (kf, nf) = (k as f64, n as f64);
    let low = if k == 0 {
        0.0
    } else {
        beta_quantile(alpha / 2.0, kf, nf - kf + 1.0)?
    };
    let high = if k == n {
        1.0
    } else {
        beta_quantile(1.0 - alpha / 2.0, kf + 1.0, nf - kf)?
    };
    Ok((low, high))
}

/// The one-sample Kolmogorov–Smirnov test of `samples` against a continuous `cdf`:
/// the statistic `D = sup |F_n − F|` and its asymptotic p-value (Kolmogorov's
/// distribution at `(√n + 0.12 + 0.11/√n)·D`, Stephens' small-sample correction).
/// Returns `(D, p)`; `(NaN, NaN)` for no samples or a NaN sample.
///
/// ```
/// use privq_host::stats::ks_test;
/// let uniform: Vec<f64> = (0..1000).map(|i| (i as f64 + 0.5) / 1000.0).collect();
/// let (d, p) = ks_test(&uniform, |t| t.clamp(0.0, 1.0));
/// assert!(d < 0.001 && p > 0.99);
/// let (_, p) = ks_test(&uniform, |t| t.clamp(0.0, 1.0).powi(2));
/// assert!(p < 1e-6);
/// ```
pub fn ks_test(samples: &[f64], cdf: impl Fn(f64) -> f64) -> (f64, f64) {
    let n = samples.len();
    if n == 0 || samples.iter().any(|s| s.is_nan()) {
        return (f64::NAN, f64::NAN);
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let nf = n as f64;
    let d = sorted
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            let f = cdf(s);
            (f - i as f64 / nf).max((i + 1) as f64 / nf - f)
        })
        .fold(0.0, f64::max);
    let sqrt_n = nf.sqrt();
    let lambda = (sqrt_n + 0.12 + 0.11 / sqrt_n) * d;
    (d, kolmogorov_sf(lambda))
}

/// `P[K > λ]` for Kolmogorov's distribution: `2 Σ_{k ≥ 1} (−1)^{k−1} e^{−2k²λ²}`.
fn kolmogorov_sf(lambda: f64) -> f64 {
    if lambda < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    for k in 1..=100 {
        let k = k as f64;
        let term = (-2.0 * k * k * lambda * lambda).exp();
        sum += if k as u64 % 2 == 1 { term } else { -term };
        if term < 1e-16 {
            break;
        }
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Relative error, treating both-zero as exact.
    fn rel(got: f64, want: f64) -> f64 {
        if want == 0.0 {
            got.abs()
        } else {
            ((got - want) / want).abs()
        }
    }

    #[test]
    #[allow(clippy::excessive_precision)] // reference digits kept as mpmath printed them
    fn chi2_sf_matches_mpmath() {
        // Reference values: mpmath 1.3 at 40 digits, gammainc(df/2, x/2, inf, regularized=True).
        let cases: &[(f64, usize, f64)] = &[
            (3.841458820694124, 1, 0.050000000000000057435),
            (148.23, 99, 0.0010000659269003319586),
            (0.5, 1, 0.47950012218695346232),
            (1e-3, 3, 0.99999159208094195384),
            (20.0, 2, 0.000045399929762484851536),
            (100.0, 10, 5.4497019829205293351e-17),
            (300.0, 100, 7.4121008573228767906e-22),
            (1000.0, 1000, 0.49405285382923964195),
            (1100.0, 1000, 0.014614408126295194045),
            (1300.0, 1000, 3.8897364994868524768e-10),
            (50.0, 1, 1.5374597944280348502e-12),
            (200.0, 3, 4.2185411071920423377e-43),
            (10.0, 50, 0.99999999984004136015),
            (9999.0, 10000, 0.50094038441269355687),
            (12000.0, 10000, 1.1470065524601247764e-40),
            (2.5, 7, 0.92709706501347376501),
            (700.0, 30, 4.9107841763029119469e-128),
        ];
        for &(x, df, want) in cases {
            let got = chi2_sf(x, df);
            assert!(
                rel(got, want) < 1e-10,
                "sf({x}, {df}) = {got:e}, want {want:e}"
            );
        }
    }

    #[test]
    fn chi2_sf_edges() {
        assert_eq!(chi2_sf(0.0, 3), 1.0);
        assert_eq!(chi2_sf(-1.0, 3), 1.0);
        assert_eq!(chi2_sf(f64::INFINITY, 3), 0.0);
        assert!(chi2_sf(1.0, 0).is_nan());
        assert!(chi2_sf(f64::NAN, 2).is_nan());
        // df = 2 has the closed form e^{−x/2}.
        for x in [0.1, 1.0, 7.5, 40.0, 600.0] {
            assert!(rel(chi2_sf(x, 2), (-x / 2.0f64).exp()) < 1e-13, "x = {x}");
        }
        // P + Q = 1 on both sides of the branch point.
        for (a, x) in [
            (3.0, 1.0),
            (3.0, 5.0),
            (0.5, 0.2),
            (50.0, 49.5),
            (50.0, 52.0),
        ] {
            assert!((gamma_p(a, x) + gamma_q(a, x) - 1.0).abs() < 1e-14);
        }
    }

    #[test]
    fn ln_gamma_matches_factorials() {
        let mut fact = 1.0f64;
        for n in 1..=30u32 {
            // Γ(n) = (n − 1)!
            assert!(
                (ln_gamma(f64::from(n)) - fact.ln()).abs() < 1e-13,
                "n = {n}"
            );
            fact *= f64::from(n);
        }
        // Γ(½) = √π.
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-14);
        assert!(ln_gamma(0.0).is_nan());
    }

    #[test]
    #[allow(clippy::excessive_precision)] // reference digits kept as mpmath printed them
    fn normal_tails_match_mpmath() {
        let cases = [
            (0.0, 0.5),
            (1.0, 0.15865525393145705141),
            (1.96, 0.024997895148220436213),
            (3.0, 0.0013498980316300945267),
            (5.0, 2.8665157187919391167e-7),
            (8.0, 6.2209605742717841235e-16),
            (20.0, 2.7536241186062336951e-89),
            (37.0, 5.7255712225245768227e-300),
        ];
        for (z, want) in cases {
            assert!(rel(normal_sf(z), want) < 1e-10, "z = {z}");
            assert!((normal_sf(-z) - (1.0 - want)).abs() < 1e-15, "z = −{z}");
        }
        for p in [0.5, 0.1, 1e-3, 1e-7, 1e-20] {
            assert!(rel(normal_sf(normal_isf(p)), p) < 1e-9, "p = {p}");
        }
        assert!(normal_isf(0.0).is_nan());
    }

    #[test]
    fn binomial_bounds() {
        let (lo, hi) = binomial_acceptance(10_000, 0.5, 0.05).unwrap();
        assert!((lo - (5000.0 - 98.5)).abs() < 0.1 && (hi - (5000.0 + 98.5)).abs() < 0.1);
        assert!(binomial_two_sided_p(5000, 10_000, 0.5).unwrap() == 1.0);
        let p = binomial_two_sided_p(5099, 10_000, 0.5).unwrap();
        assert!((p - 0.05).abs() < 0.002, "p = {p}");
        assert_eq!(binomial_two_sided_p(1, 10, 0.0), Err(StatsError::Domain));
        assert_eq!(binomial_two_sided_p(11, 10, 0.5), Err(StatsError::Domain));
        assert_eq!(binomial_acceptance(10, 0.5, 1.0), Err(StatsError::Domain));
    }

    #[test]
    fn gof_pools_small_cells() {
        // Expected counts 2, 3, 50, 40, 3, 1, 1 for n = 100.
        let probs = [0.02, 0.03, 0.5, 0.4, 0.03, 0.01, 0.01];
        let obs = [2, 3, 50, 40, 3, 1, 1];
        let fit = chi_square_gof(&obs, &probs).unwrap();
        // {2,3} → 5, {50}, {40}, {3,1,1} → 5: four cells.
        assert_eq!(fit.cells, 4);
        assert_eq!(fit.df, 3);
        assert!(fit.statistic.abs() < 1e-12);
        assert!((fit.p_value - 1.0).abs() < 1e-12);
        // A trailing remainder joins the last cell: {5}, {50}, {44} and then {1} → {44, 1}.
        let probs = [0.05, 0.5, 0.44, 0.01];
        let fit = chi_square_gof(&[5, 50, 44, 1], &probs).unwrap();
        assert_eq!(fit.cells, 3);
    }

    #[test]
    fn gof_detects_bias_and_impossible_outcomes() {
        let fit = chi_square_gof(&[5200, 4800], &[0.5, 0.5]).unwrap();
        // (200² / 5000)·2 = 16 on 1 df.
        assert!((fit.statistic - 16.0).abs() < 1e-9);
        assert!(rel(fit.p_value, chi2_sf(16.0, 1)) < 1e-15);
        let fit = chi_square_gof(&[500, 499, 1], &[0.5, 0.5, 0.0]).unwrap();
        assert_eq!(fit.impossible, 1);
        assert_eq!(fit.p_value, 0.0);
    }

    #[test]
    fn gof_rejects_bad_arguments() {
        assert_eq!(
            chi_square_gof(&[1, 2], &[1.0]),
            Err(StatsError::LengthMismatch {
                observed: 2,
                probabilities: 1
            })
        );
        assert_eq!(
            chi_square_gof(&[1, 2], &[0.5, -0.5]),
            Err(StatsError::BadProbability)
        );
        assert!(matches!(
            chi_square_gof(&[1, 2], &[0.5, 0.4]),
            Err(StatsError::NotNormalized { .. })
        ));
        assert_eq!(
            chi_square_gof(&[0, 0], &[0.5, 0.5]),
            Err(StatsError::NoObservations)
        );
        assert_eq!(
            chi_square_gof(&[3, 2], &[0.5, 0.5]),
            Err(StatsError::TooFewCells)
        );
        assert!(StatsError::TooFewCells.to_string().contains("two cells"));
    }

    #[test]
    fn incomplete_beta_matches_binomial_tails() {
        // I_x(k, n−k+1) = P[Bin(n, x) ≥ k].
        assert!((beta_inc(0.5, 2.0, 3.0).unwrap() - 11.0 / 16.0).abs() < 1e-14);
        assert!((beta_inc(0.3, 1.0, 1.0).unwrap() - 0.3).abs() < 1e-14);
        // I_x(a, 1) = x^a; far tail.
        assert!((beta_inc(0.01, 5.0, 1.0).unwrap() / 1e-10 - 1.0).abs() < 1e-10);
        // A large case: P[Bin(1000, 0.5) ≥ 530], summed exactly.
        let v = beta_inc(0.5, 530.0, 471.0).unwrap();
        assert!((v - 0.031_011_597_549).abs() < 1e-10, "{v}");
        assert_eq!(beta_inc(0.5, 0.0, 1.0), Err(StatsError::Domain));
    }

    #[test]
    fn clopper_pearson_known_values() {
        let (lo, hi) = clopper_pearson(0, 10, 0.05).unwrap();
        assert_eq!(lo, 0.0);
        assert!((hi - (1.0 - 0.025f64.powf(0.1))).abs() < 1e-12);
        let (lo, hi) = clopper_pearson(10, 10, 0.05).unwrap();
        assert!((lo - 0.025f64.powf(0.1)).abs() < 1e-12);
        assert_eq!(hi, 1.0);
        let (lo, hi) = clopper_pearson(5, 10, 0.05).unwrap();
        assert!((lo - 0.187_086_028).abs() < 1e-8 && (hi - 0.812_913_972).abs() < 1e-8);
        // Quantile inverts the cdf.
        let q = beta_quantile(0.9, 3.5, 7.25).unwrap();
        assert!((beta_inc(q, 3.5, 7.25).unwrap() - 0.9).abs() < 1e-12);
        assert_eq!(clopper_pearson(0, 0, 0.05), Err(StatsError::NoObservations));
        assert_eq!(clopper_pearson(3, 2, 0.05), Err(StatsError::Domain));
    }
}

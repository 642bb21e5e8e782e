//! The paper's error and utility bounds (Theorems 2, 4, 6, 8 and 11 and
//! Proposition 1, §3.1–3.4 and Appendix C), with privq's corrections of Theorem 4,
//! Proposition 1 and Theorem 6 (`docs/src/dx.md`, "How privq reads the paper"),
//! plus the exact l2² identity of the d_X Laplace mechanism.
//!
//! Conventions: natural logarithms throughout; `n = ‖x‖₁`; `Q` is the target query
//! matrix and `Q̃ = c ⊙ Q'` the effective one ([`Queries`]). Where the paper's
//! bound assumes an integer (`m = ln|Q|/α²` for SmallDB), the functions account for
//! the rounding the implementation does and say so.
//!
//! ```
//! use privq_host::dx::{Queries, bounds};
//! let q = Queries::new(vec![vec![0.0, 1.0, 3.0]])?;
//! // c ⊙ Q' = Q: the l2² error is exactly 2c², Theorem 2.1 bounds it by 4c².
//! let exact = bounds::laplace_l2sq_exact(&q, &q, &[1.0], &[1.0, 2.0, 3.0])?;
//! assert!((exact - 2.0).abs() < 1e-12);
//! assert!((bounds::laplace_l2sq(&q, &q, &[1.0], 6.0)? - 4.0).abs() < 1e-12);
//! # Ok::<(), privq_host::dx::DxError>(())
//! ```

use super::{DxError, Queries};

fn same_shape(a: &Queries, b: &Queries, c: &[f64]) -> Result<(), DxError> {
    if a.rows() != b.rows() || a.cols() != b.cols() || c.len() != a.rows() {
        return Err(DxError::Dimension(format!(
            "Q is {}×{}, c⊙Q' is {}×{}, c has {} entries",
            a.rows(),
            a.cols(),
            b.rows(),
            b.cols(),
            c.len()
        )));
    }
    if c.iter().any(|v| v.is_nan() || *v < 0.0) {
        return Err(DxError::InvalidValue("noise scales must be ≥ 0".into()));
    }
    Ok(())
}

/// Entrywise `p`-norm of `Q̃ − Q` (the paper's matrix norm, §2.1: entrywise, not
/// the operator norm; `p = ∞` is the max |entry|).
pub fn approx_norm(q: &Queries, q_eff: &Queries, p: f64) -> Result<f64, DxError> {
    same_shape(q, q_eff, &vec![0.0; q.rows()])?;
    let diffs = (0..q.rows())
        .flat_map(|k| {
            q.row(k)
                .iter()
                .zip(q_eff.row(k))
                .map(|(a, b)| (a - b).abs())
        })
        .collect::<Vec<_>>();
    Ok(lp(&diffs, p))
}

fn lp(v: &[f64], p: f64) -> f64 {
    if p.is_infinite() {
        v.iter().copied().fold(0.0, f64::max)
    } else {
        v.iter().map(|a| a.abs().powf(p)).sum::<f64>().powf(1.0 / p)
    }
}

/// `E‖Y‖_p` for independent `Y_k ~ Lap(c_k)` — exact for `p = 1` (`‖c‖₁`) and
/// `p = ∞` (`∫₀^∞ 1 − Π_k (1 − e^{−t/c_k}) dt`, by quadrature; `c·H_k` for equal
/// scales), and the Jensen upper bound `(Σ_k Γ(p+1) c_k^p)^{1/p}` otherwise
/// (`√2‖c‖₂` for `p = 2`).
pub fn expected_noise_norm(c: &[f64], p: f64) -> f64 {
    if p.is_nan() || p < 1.0 {
        return f64::NAN;
    }
    let active: Vec<f64> = c.iter().copied().filter(|&v| v > 0.0).collect();
    if active.is_empty() {
        return 0.0;
    }
    if p == 1.0 {
        return active.iter().sum();
    }
    if p.is_infinite() {
        // Substitute t = s·c_max; the integrand decays like k·e^{−s}.
        let cmax = active.iter().copied().fold(0.0, f64::max);
        let k = active.len() as f64;
        let upper = 40.0 + k.ln();
        let steps = 20_000;
        let h = upper / steps as f64;
        let f = |s: f64| {
            1.0 - active
                .iter()
                .map(|&ck| 1.0 - (-s * cmax / ck).exp())
                .product::<f64>()
        };
        let mut acc = f(0.0) + f(upper);
        for i in 1..steps {
            acc += f(i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
        }
        return acc * h / 3.0 * cmax;
    }
    // E|Y|^p = Γ(p+1)·c^p for Laplace(c); Jensen: E‖Y‖_p ≤ (E‖Y‖_p^p)^{1/p}.
    let gamma = gamma_fn(p + 1.0);
    active
        .iter()
        .map(|ck| gamma * ck.powf(p))
        .sum::<f64>()
        .powf(1.0 / p)
}

/// Lanczos Γ (g = 7), accurate to ~1e-13 for the positive arguments used here.
fn gamma_fn(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    (2.0 * std::f64::consts::PI).sqrt() * t.powf(x + 0.5) * (-t).exp() * a
}

/// The exact l2² error at `x` (privq's derivation: Theorem 2.1's proof in
/// Appendix A.1 without the loosening): `E‖Z − Qx‖₂² = ‖(Q̃ − Q)x‖₂² + 2‖c‖₂²`.
pub fn laplace_l2sq_exact(
    q: &Queries,
    q_eff: &Queries,
    c: &[f64],
    x: &[f64],
) -> Result<f64, DxError> {
    same_shape(q, q_eff, c)?;
    if x.len() != q.cols() {
        return Err(DxError::Dimension("histogram length ≠ N".into()));
    }
    let bias: f64 = q
        .answers(x)
        .iter()
        .zip(q_eff.answers(x))
        .map(|(a, b)| (a - b).powi(2))
        .sum();
    Ok(bias + 2.0 * c.iter().map(|v| v * v).sum::<f64>())
}

/// Theorem 2.1: `err_{l2²} ≤ 2n²‖c⊙Q' − Q‖₂² + 4‖c‖₂²` (loose by a factor of 2,
/// `docs/src/dx.md`; [`laplace_l2sq_exact`] is the exact value).
pub fn laplace_l2sq(q: &Queries, q_eff: &Queries, c: &[f64], n: f64) -> Result<f64, DxError> {
    same_shape(q, q_eff, c)?;
    let a = approx_norm(q, q_eff, 2.0)?;
    Ok(2.0 * n * n * a * a + 4.0 * c.iter().map(|v| v * v).sum::<f64>())
}

/// Theorem 2.2: `err_{lp} ≤ n‖c⊙Q' − Q‖_p + E‖Y‖_p` (with
/// [`expected_noise_norm`], exact for p ∈ {1, ∞}, an upper bound otherwise).
pub fn laplace_lp(q: &Queries, q_eff: &Queries, c: &[f64], n: f64, p: f64) -> Result<f64, DxError> {
    same_shape(q, q_eff, c)?;
    Ok(n * approx_norm(q, q_eff, p)? + expected_noise_norm(c, p))
}

/// Theorem 2.3: with probability ≥ 1 − δ,
/// `‖Qx − Z‖_∞ ≤ n‖c⊙Q' − Q‖_∞ + ln(k/δ)·‖c‖_∞`.
pub fn laplace_linf_tail(
    q: &Queries,
    q_eff: &Queries,
    c: &[f64],
    n: f64,
    delta: f64,
) -> Result<f64, DxError> {
    same_shape(q, q_eff, c)?;
    check_prob(delta, "δ")?;
    let cmax = c.iter().copied().fold(0.0, f64::max);
    Ok(n * approx_norm(q, q_eff, f64::INFINITY)? + (q.rows() as f64 / delta).ln() * cmax)
}

fn check_prob(p: f64, name: &str) -> Result<(), DxError> {
    if p > 0.0 && p <= 1.0 {
        Ok(())
    } else {
        Err(DxError::InvalidValue(format!(
            "{name} must be in (0, 1], got {p}"
        )))
    }
}

/// Theorem 4, **sign-corrected** (privq's correction of the sign of `δ_{u,u'}` in
/// Theorem 4 and its proof in Appendix A.2; `docs/src/dx.md`): for
/// `Z = M_{Exp,c}(x, u')`, with probability ≥ 1 − e^{−t},
/// `u(x, Z) > ⋆_{u'}(x) − δ_{u,u'} − 2c(ln(|R|/|R_⋆|) + t)`. Returns that threshold.
///
/// `star` = `max_r u'(x, r)`, `delta_uu` = `max_{x,r} |u − u'|`, `range` = `|R|`,
/// `optimal` = `|R_⋆|` (pass 1 for the weaker, `|R_⋆|`-free form).
pub fn exponential_lower(
    star: f64,
    delta_uu: f64,
    c: f64,
    range: f64,
    optimal: f64,
    t: f64,
) -> f64 {
    star - delta_uu - 2.0 * c * ((range / optimal).ln() + t)
}

/// Theorem 4 exactly as printed (`+δ_{u,u'}`): **wrong** whenever `δ > 0`; kept
/// only to test that the correction matters.
pub fn exponential_lower_literal(
    star: f64,
    delta_uu: f64,
    c: f64,
    range: f64,
    optimal: f64,
    t: f64,
) -> f64 {
    star + delta_uu - 2.0 * c * ((range / optimal).ln() + t)
}

/// Proposition 1 (privq fixes a sign slip in its proof, Appendix A.3;
/// `docs/src/dx.md`): for
/// `y = SmallDB(x, Q', c, α)` with synthetic size `m`, with probability ≥ 1 − β,
/// `max_q |q(x) − c·q'(y)| ≤ n·max_q‖q − c q'‖_∞ + αn + 2c(m·ln N + ln(1/β))`.
///
/// The paper writes `ln|Q|/α²` for `m`; the implementation uses
/// `m = max(1, ⌈ln|Q|/α²⌉)` and `|R| ≤ N^m`, so the actual `m` goes here. Requires
/// Theorem 9's setting: `c·q'` with entries in `[0, 1]` (Theorem 9 is Dwork and
/// Roth's Theorem 4.2, stated for queries with values in `[0, 1]`) and the
/// normalised (default) SmallDB.
pub fn smalldb_prop1(
    n: f64,
    approx_inf: f64,
    alpha: f64,
    c: f64,
    universe: usize,
    m: usize,
    beta: f64,
) -> Result<f64, DxError> {
    check_prob(beta, "β")?;
    Ok(n * approx_inf
        + alpha * n
        + 2.0 * c * (m as f64 * (universe as f64).ln() + (1.0 / beta).ln()))
}

/// `γ = 16 ln N ln|Q| + 4 ln(1/β)` of Theorem 6.
pub fn smalldb_gamma(universe: usize, queries: usize, beta: f64) -> f64 {
    16.0 * (universe as f64).ln() * (queries as f64).ln() + 4.0 * (1.0 / beta).ln()
}

/// Theorem 6's accuracy `α = (cγ/n)^{1/3}`; SmallDB must be run with `α/2`.
/// Valid only when `α ≤ 1` (the step from Proposition 1 to (10) in Theorem 6's
/// proof needs it; `docs/src/dx.md`) — `None` otherwise.
pub fn smalldb_thm6_alpha(
    n: f64,
    c: f64,
    universe: usize,
    queries: usize,
    beta: f64,
) -> Option<f64> {
    let a = (c * smalldb_gamma(universe, queries, beta) / n).cbrt();
    (a <= 1.0).then_some(a)
}

/// Theorem 6 (eq. 9): for `y = SmallDB(x, Q', c, α/2)` with `α` from
/// [`smalldb_thm6_alpha`], with probability ≥ 1 − β,
/// `max_q |q(x) − c q'(y)| ≤ n·max_q‖q − c q'‖_∞ + (c n² γ)^{1/3} + 2c·ln N`.
///
/// The last term is the rounding slack: the theorem assumes `4ln|Q|/α²` is an
/// integer; `⌈·⌉` adds at most one record, i.e. `ln N` to `ln|R|` (privq's
/// derivation: Proposition 1 at `α/2`, which needs `α ≤ 1`). Errors if `α > 1`.
pub fn smalldb_thm6(
    n: f64,
    approx_inf: f64,
    c: f64,
    universe: usize,
    queries: usize,
    beta: f64,
) -> Result<f64, DxError> {
    check_prob(beta, "β")?;
    if smalldb_thm6_alpha(n, c, universe, queries, beta).is_none() {
        return Err(DxError::InvalidValue(
            "Theorem 6 needs α = (cγ/n)^{1/3} ≤ 1".into(),
        ));
    }
    let gamma = smalldb_gamma(universe, queries, beta);
    Ok(n * approx_inf + (c * n * n * gamma).cbrt() + 2.0 * c * (universe as f64).ln())
}

/// Theorem 8 (Hardt et al.'s Theorem 2.2 with ε = 1/c): with probability ≥
/// [`mwem_thm8_probability`], `max_q |c q'(y) − q(x)| ≤ 2n√(ln N/T) + 10Tc·ln|Q| +
/// n·max_q‖c q' − q‖_∞`. Assumes `c·q'` with entries in `[0, 1]` and the
/// scale-fixed (default) MWEM.
pub fn mwem_thm8(
    n: f64,
    approx_inf: f64,
    c: f64,
    universe: usize,
    queries: usize,
    rounds: usize,
) -> f64 {
    let t = rounds as f64;
    2.0 * n * ((universe as f64).ln() / t).sqrt()
        + 10.0 * t * c * (queries as f64).ln()
        + n * approx_inf
}

/// Theorem 8's stated probability `1 − 2T/|Q|` (taken as stated from the paper's
/// reference \[14\], Hardt, Ligett and McSherry's MWEM; vacuous, i.e. ≤ 0, when
/// `|Q| ≤ 2T`).
pub fn mwem_thm8_probability(queries: usize, rounds: usize) -> f64 {
    1.0 - 2.0 * rounds as f64 / queries as f64
}

/// Theorem 11.1: `err_{l2²} ≤ 2(max_u ‖c⊙q(u') − q(u)‖₂² + 2‖c‖₂²)` for the
/// statistical-query mechanism (12). `q_u[u]` is `q(u)` and `q_eff_u[u]` is
/// `c ⊙ q(u')` (both k-vectors per universe element).
pub fn sq_l2sq(q_u: &[Vec<f64>], q_eff_u: &[Vec<f64>], c: &[f64]) -> Result<f64, DxError> {
    let a = sq_approx(q_u, q_eff_u, c, 2.0)?;
    Ok(2.0 * (a * a + 2.0 * c.iter().map(|v| v * v).sum::<f64>()))
}

/// Theorem 11.2: `err_{lp} ≤ max_u ‖c⊙q(u') − q(u)‖_p + E‖Y‖_p`.
pub fn sq_lp(q_u: &[Vec<f64>], q_eff_u: &[Vec<f64>], c: &[f64], p: f64) -> Result<f64, DxError> {
    Ok(sq_approx(q_u, q_eff_u, c, p)? + expected_noise_norm(c, p))
}

/// Theorem 11.3: with probability ≥ 1 − δ,
/// `‖Z − q(x)‖_∞ ≤ max_u ‖c⊙q(u') − q(u)‖_∞ + ln(k/δ)‖c‖_∞`.
pub fn sq_linf_tail(
    q_u: &[Vec<f64>],
    q_eff_u: &[Vec<f64>],
    c: &[f64],
    delta: f64,
) -> Result<f64, DxError> {
    check_prob(delta, "δ")?;
    let cmax = c.iter().copied().fold(0.0, f64::max);
    Ok(sq_approx(q_u, q_eff_u, c, f64::INFINITY)? + (c.len() as f64 / delta).ln() * cmax)
}

fn sq_approx(q_u: &[Vec<f64>], q_eff_u: &[Vec<f64>], c: &[f64], p: f64) -> Result<f64, DxError> {
    if q_u.len() != q_eff_u.len() || q_u.iter().chain(q_eff_u).any(|v| v.len() != c.len()) {
        return Err(DxError::Dimension(
            "one k-vector per universe element in both maps, k scales".into(),
        ));
    }
    Ok(q_u
        .iter()
        .zip(q_eff_u)
        .map(|(a, b)| {
            let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
            lp(&d, p)
        })
        .fold(0.0, f64::max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_noise_norms() {
        // Equal scales: E‖Y‖_∞ = c·H_k.
        let h3 = 1.0 + 0.5 + 1.0 / 3.0;
        assert!((expected_noise_norm(&[2.0; 3], f64::INFINITY) - 2.0 * h3).abs() < 1e-9);
        assert_eq!(expected_noise_norm(&[1.0, 2.0], 1.0), 3.0);
        let l2 = expected_noise_norm(&[1.0, 2.0], 2.0);
        assert!((l2 - (2.0f64 * 5.0).sqrt()).abs() < 1e-9, "{l2}");
        assert!((gamma_fn(5.0) - 24.0).abs() < 1e-9);
    }

    /// Theorem 4's sign (privq's correction): with `u = u' − δ` and a single
    /// optimum, `u(x, Z) = ⋆ − δ` surely; the corrected bound holds, the printed
    /// `+δ` one fails for every `t < δ/c` — with probability 1, not ≤ e^{−t}.
    #[test]
    fn theorem4_sign_fix() {
        let (star, delta, c, t) = (5.0, 3.0, 0.5, 1.0);
        let achieved = star - delta; // |R| = |R⋆| = 1: Z is the optimum
        assert!(achieved > exponential_lower(star, delta, c, 1.0, 1.0, t));
        assert!(achieved <= exponential_lower_literal(star, delta, c, 1.0, 1.0, t));
        // With δ = 0 the two coincide.
        assert_eq!(
            exponential_lower(star, 0.0, c, 4.0, 1.0, t),
            exponential_lower_literal(star, 0.0, c, 4.0, 1.0, t)
        );
    }

    #[test]
    fn theorem6_needs_alpha_at_most_one() {
        assert!(smalldb_thm6(10.0, 0.0, 100.0, 3, 2, 0.1).is_err());
        assert!(smalldb_thm6(1e4, 0.0, 20.0, 3, 2, 0.1).is_ok());
    }
}

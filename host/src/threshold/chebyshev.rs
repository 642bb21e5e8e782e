//! Claim 7.4.4's polynomial: a low-degree "step" that is 1 at `w` and tiny on
//! `0, …, w − 1`, from Chebyshev polynomials.

/// The Chebyshev polynomial `C_r(x)` (first kind), by the three-term recurrence.
pub fn chebyshev(r: u32, x: f64) -> f64 {
    let (mut prev, mut cur) = (1.0, x);
    if r == 0 {
        return prev;
    }
    for _ in 1..r {
        (prev, cur) = (cur, 2.0 * x * cur - prev);
    }
    cur
}

/// `s(j) = (C_r((j/w)(1 + 1/w)) / C_r(1 + 1/w))^m` with `r = ⌈√w⌉` and
/// `m = ⌈log₂(1/ε)⌉` (Claim 7.4.4 with the base-2 log of TYPO-25): `s(w) = 1` and
/// `|s(j)| ≤ ε` for the integers `0 ≤ j ≤ w − 1`, a polynomial of degree `r·m`.
/// Returns `(s(j), degree)`; `w ≥ 1`, `ε ∈ (0, 1)`.
///
/// ```
/// use privq_host::threshold::chebyshev_step;
/// let (top, degree) = chebyshev_step(9, 0.01, 9.0);
/// assert!((top - 1.0).abs() < 1e-12);
/// assert_eq!(degree, 3 * 7); // r = 3, m = ⌈log₂ 100⌉ = 7
/// assert!((0..9).all(|j| chebyshev_step(9, 0.01, j as f64).0.abs() <= 0.01));
/// ```
pub fn chebyshev_step(w: u32, epsilon: f64, j: f64) -> (f64, u32) {
    let w = w.max(1);
    let r = (w as f64).sqrt().ceil() as u32;
    let m = (1.0 / epsilon).log2().ceil().max(0.0) as u32;
    let scale = 1.0 + 1.0 / w as f64;
    let ratio = chebyshev(r, j / w as f64 * scale) / chebyshev(r, scale);
    (ratio.powi(m as i32), r * m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chebyshev_values() {
        // C_2(x) = 2x² − 1, C_3(x) = 4x³ − 3x; |C_r| ≤ 1 on [−1, 1].
        assert_eq!(chebyshev(2, 0.5), -0.5);
        assert_eq!(chebyshev(3, 2.0), 26.0);
        assert_eq!(chebyshev(0, 7.0), 1.0);
        assert!((0..=100).all(|i| chebyshev(5, i as f64 / 50.0 - 1.0).abs() <= 1.0 + 1e-12));
    }

    #[test]
    fn claim_7_4_4_holds_on_every_small_case() {
        for w in 1..=40 {
            for eps in [0.5, 0.1, 0.01, 1e-4, 1e-8] {
                let (top, _) = chebyshev_step(w, eps, w as f64);
                assert!((top - 1.0).abs() < 1e-9, "w {w} eps {eps}: s(w) = {top}");
                for j in 0..w {
                    let (s, _) = chebyshev_step(w, eps, j as f64);
                    assert!(s.abs() <= eps, "w {w} eps {eps} j {j}: {s}");
                }
            }
        }
    }
}

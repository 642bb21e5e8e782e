//! Relative entropy (eq. 2.9 of the thesis) and KL divergence, in nats.

/// Relative entropy of non-negative vectors,
/// `RE(x‖y) = Σ_i x_i ln(x_i/y_i) + y_i − x_i`, with `0·ln 0 = 0`.
///
/// It is ≥ 0, zero iff `x = y`, and equals [`kl`] when both sum to 1. It is `+∞`
/// when some `y_i = 0 < x_i`. Panics never; unequal lengths compare the common prefix.
pub fn relative_entropy(x: &[f64], y: &[f64]) -> f64 {
    x.iter()
        .zip(y)
        .map(|(&a, &b)| {
            let log_term = if a > 0.0 {
                if b > 0.0 {
                    a * (a / b).ln()
                } else {
                    f64::INFINITY
                }
            } else {
                0.0
            };
            log_term + b - a
        })
        .sum()
}

/// Kullback–Leibler divergence `KL(p‖q) = Σ_u p_u ln(p_u/q_u)` in nats, with
/// `0·ln 0 = 0` (`+∞` when q misses some of p's support).
///
/// The Chapter 5 experiments report `KL(true ‖ synthetic)`.
///
/// ```
/// use privq_host::data::kl;
/// assert_eq!(kl(&[0.5, 0.5], &[0.5, 0.5]), 0.0);
/// assert!((kl(&[1.0, 0.0], &[0.5, 0.5]) - 2f64.ln()).abs() < 1e-15);
/// assert_eq!(kl(&[0.5, 0.5], &[1.0, 0.0]), f64::INFINITY);
/// ```
pub fn kl(p: &[f64], q: &[f64]) -> f64 {
    p.iter()
        .zip(q)
        .map(|(&a, &b)| {
            if a <= 0.0 {
                0.0
            } else if b <= 0.0 {
                f64::INFINITY
            } else {
                a * (a / b).ln()
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_entropy_properties() {
        let x = [0.2, 0.3, 0.5];
        let y = [0.1, 0.6, 0.3];
        assert!(relative_entropy(&x, &y) > 0.0);
        assert!((relative_entropy(&x, &y) - kl(&x, &y)).abs() < 1e-15);
        assert_eq!(relative_entropy(&x, &x), 0.0);
        // Unnormalized vectors: the y − x terms matter.
        let re = relative_entropy(&[1.0, 0.0], &[2.0, 1.0]);
        assert!((re - (0.5f64.ln() + 2.0)).abs() < 1e-12);
    }
}

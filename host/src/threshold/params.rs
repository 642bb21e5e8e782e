//! PRIVLEARN's exact parameters (thesis eqs. 7.6–7.8, Thm 7.3.10).

/// The parameters PRIVLEARN's analysis needs for (α, β, γ)-accuracy at ε (thesis
/// eqs. 7.6–7.8), given the learner's sample/query complexity `b(n′, γ′, β′)`.
/// Logarithms are natural.
///
/// ```
/// use privq_host::threshold::Requirements;
/// // Conjunctions on d = 8 attributes (|Q| = 2^8), α = 0.25, β = γ = 0.1, ε = 1,
/// // and a learner that needs 1 000 examples whatever its parameters.
/// let r = Requirements::thesis(0.25, 0.1, 0.1, 1.0, 256f64.ln(), |_, _, _| 1_000.0, true)?;
/// assert_eq!(r.k, 12);
/// assert!((r.n_prime - 4410.0 * 256f64.ln() / 0.0625).abs() < 1e-6);
/// assert!(r.n_required > 1e10); // astronomically many records
/// # Ok::<(), String>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Requirements {
    /// `n′ = 4410·log|Q|/α²` (eq. 7.6): the size of the small database the
    /// learner's threshold functions are over.
    pub n_prime: f64,
    /// `k = ⌈3/α⌉` thresholds.
    pub k: u64,
    /// `γ′ = γ/k`.
    pub gamma_prime: f64,
    /// `β′ = β/(6k)`.
    pub beta_prime: f64,
    /// `b(n′, γ′, β′)`: the learner's complexity.
    pub b_base: f64,
    /// `b_iter = 100·b_base·log(1/β′)/γ` sampled queries.
    pub b_iter: f64,
    /// Oracle queries: `2k·b_iter`, or `2·b_iter` for a sampling-only learner (Thm 7.3.10).
    pub b_total: f64,
    /// eq. 7.8: `n ≥ 210·b_total·log(10·b_total/β)/(εα)`.
    pub n_required: f64,
}

impl Requirements {
    /// The thesis' parameters for `alpha`, `beta`, `gamma` ∈ (0, 1), `epsilon` > 0,
    /// `ln_q = ln |Q|` and the learner complexity `b(n′, γ′, β′)`.
    pub fn thesis(
        alpha: f64,
        beta: f64,
        gamma: f64,
        epsilon: f64,
        ln_q: f64,
        b: impl Fn(f64, f64, f64) -> f64,
        sampling_only: bool,
    ) -> Result<Self, String> {
        for (name, v) in [("alpha", alpha), ("beta", beta), ("gamma", gamma)] {
            if !(v > 0.0 && v < 1.0) {
                return Err(format!("{name} = {v} must be in (0, 1)"));
            }
        }
        if !(epsilon > 0.0 && epsilon.is_finite() && ln_q > 0.0 && ln_q.is_finite()) {
            return Err("epsilon and ln|Q| must be positive and finite".into());
        }
        let n_prime = 4410.0 * ln_q / (alpha * alpha);
        let k = (3.0 / alpha).ceil() as u64;
        let gamma_prime = gamma / k as f64;
        let beta_prime = beta / (6.0 * k as f64);
        let b_base = b(n_prime, gamma_prime, beta_prime);
        if !(b_base >= 1.0 && b_base.is_finite()) {
            return Err(format!(
                "the learner complexity b = {b_base} must be ≥ 1 and finite"
            ));
        }
        let b_iter = 100.0 * b_base * (1.0 / beta_prime).ln() / gamma;
        let b_total = if sampling_only { 2.0 } else { 2.0 * k as f64 } * b_iter;
        let n_required = 210.0 * b_total * (10.0 * b_total / beta).ln() / (epsilon * alpha);
        Ok(Requirements {
            n_prime,
            k,
            gamma_prime,
            beta_prime,
            b_base,
            b_iter,
            b_total,
            n_required,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_checked_values() {
        // α = 1/2: k = 6, γ′ = γ/6, β′ = β/36; b = 10.
        let r = Requirements::thesis(0.5, 0.36, 0.3, 2.0, 1.0, |_, _, _| 10.0, false).unwrap();
        assert_eq!(r.k, 6);
        assert_eq!(r.n_prime, 4410.0 * 4.0);
        assert!((r.gamma_prime - 0.05).abs() < 1e-15);
        assert!((r.beta_prime - 0.01).abs() < 1e-15);
        let b_iter = 100.0 * 10.0 * 100f64.ln() / 0.3;
        assert!((r.b_iter - b_iter).abs() < 1e-9);
        assert!((r.b_total - 12.0 * b_iter).abs() < 1e-9);
        let n = 210.0 * r.b_total * (10.0 * r.b_total / 0.36).ln() / 1.0;
        assert!((r.n_required - n).abs() < 1e-6 * n);
        // Sampling-only learners ask 2·b_iter.
        let s = Requirements::thesis(0.5, 0.36, 0.3, 2.0, 1.0, |_, _, _| 10.0, true).unwrap();
        assert!((s.b_total - 2.0 * b_iter).abs() < 1e-9);
        assert!(Requirements::thesis(0.0, 0.1, 0.1, 1.0, 1.0, |_, _, _| 1.0, true).is_err());
        assert!(Requirements::thesis(0.1, 0.1, 0.1, 1.0, 1.0, |_, _, _| 0.0, true).is_err());
    }
}

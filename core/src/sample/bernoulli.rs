use rand_core::Rng;

use super::uniform::uniform_below;
use crate::error::{Error, Result};

/// Bernoulli(`p/q`): `true` with probability exactly `p/q`.
///
/// Errors on `q = 0` ([`Error::ZeroDenominator`]) and `p > q` ([`Error::ProbabilityAboveOne`]).
#[inline]
pub fn bernoulli<R: Rng + ?Sized>(p: u64, q: u64, rng: &mut R) -> Result<bool> {
    if q == 0 {
        return Err(Error::ZeroDenominator);
    }
    if p > q {
        return Err(Error::ProbabilityAboveOne);
    }
    Ok(uniform_below(q, rng)? < p)
}

/// Bernoulli(exp(−`p/q`)) for `p/q ≥ 0`, exactly
/// (Canonne–Kamath–Steinke 2020, Algorithm 1).
///
/// ```
/// use rand_chacha::ChaCha12Rng;
/// use rand_core::SeedableRng;
/// let mut rng = ChaCha12Rng::seed_from_u64(3);
/// let hits = (0..10_000)
///     .filter(|_| privq_core::sample::bernoulli_exp(1, 1, &mut rng).unwrap())
///     .count();
/// // E[hits] = 10_000 / e ≈ 3679.
/// assert!((3400..3950).contains(&hits));
/// ```
pub fn bernoulli_exp<R: Rng + ?Sized>(p: u64, q: u64, rng: &mut R) -> Result<bool> {
    if q == 0 {
        return Err(Error::ZeroDenominator);
    }
    // exp(−p/q) = exp(−1)^⌊p/q⌋ · exp(−(p mod q)/q).
    for _ in 0..p / q {
        if !bernoulli_exp_unit(1, 1, rng)? {
            return Ok(false);
        }
    }
    bernoulli_exp_unit(p % q, q, rng)
}

/// Bernoulli(exp(−`p/q`)) for `0 ≤ p ≤ q`, `q > 0`: the alternating-series loop.
#[inline]
pub(crate) fn bernoulli_exp_unit<R: Rng + ?Sized>(p: u64, q: u64, rng: &mut R) -> Result<bool> {
    if p == 0 {
        return Ok(true);
    }
    let mut k: u64 = 1;
    loop {
        // Continue with probability p/(q·k): one uniform draw below q·k when that
        // fits in u64, otherwise Bernoulli(p/q) ∧ Bernoulli(1/k) (same probability).
        let continues = match q.checked_mul(k) {
            Some(qk) => uniform_below(qk, rng)? < p,
            None => uniform_below(q, rng)? < p && uniform_below(k, rng)? == 0,
        };
        if !continues {
            return Ok(k % 2 == 1);
        }
        k += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha12Rng;
    use rand_core::SeedableRng;

    #[test]
    fn rejects_bad_parameters() {
        let mut rng = ChaCha12Rng::seed_from_u64(1);
        assert_eq!(bernoulli(1, 0, &mut rng), Err(Error::ZeroDenominator));
        assert_eq!(bernoulli(3, 2, &mut rng), Err(Error::ProbabilityAboveOne));
        assert_eq!(bernoulli_exp(1, 0, &mut rng), Err(Error::ZeroDenominator));
    }

    #[test]
    fn edge_probabilities_are_certain() {
        let mut rng = ChaCha12Rng::seed_from_u64(2);
        for _ in 0..1000 {
            assert!(!bernoulli(0, 5, &mut rng).unwrap());
            assert!(bernoulli(5, 5, &mut rng).unwrap());
            assert!(bernoulli_exp(0, 5, &mut rng).unwrap());
        }
    }
}

//! The exact "keep with odds `e^ε : c`" coin that every randomizer is built on.

use rand_core::Rng;

use crate::epsilon::Epsilon;
use crate::error::{Error, Result};
use crate::sample::{bernoulli, bernoulli_exp, uniform_below};

/// `true` with probability exactly `e^ε / (e^ε + c)`, for an integer `c ≥ 1`.
///
/// The loop: draw one of `c + 1` equally likely tickets. Ticket 0 → return `true`
/// ("keep"). Any other ticket → with probability `e^{−ε}` (exact,
/// Canonne–Kamath–Steinke) return `false` ("flip"), otherwise start again.
///
/// Per round, `P[keep] = 1/(c+1)` and `P[flip] = c·e^{−ε}/(c+1)`; the loop ends
/// with keep with probability `1 / (1 + c·e^{−ε}) = e^ε/(e^ε + c)`. The expected
/// number of rounds is `(c+1)/(1 + c·e^{−ε}) ≤ min(c+1, e^ε)`. With `c = 1` this
/// is the fair-coin loop of randomized response: heads → keep; tails → with
/// Bernoulli(e^{−ε}) flip, else repeat.
///
/// Errors: [`Error::ZeroDenominator`] for `c = 0` (there is nothing to flip to),
/// [`Error::Overflow`] for `c = u64::MAX`.
///
/// ```
/// use privq_core::{Epsilon, local::keep_with_odds};
/// use privq_core::rng::ChaCha12;
/// use rand_core::SeedableRng;
/// let mut rng = ChaCha12::from_seed([5; 32]); // tests only: a device seeds from its TRNG
/// let eps = Epsilon::new(1, 1)?;
/// let kept = (0..10_000).filter(|_| keep_with_odds(eps, 1, &mut rng).unwrap()).count();
/// // e/(e+1) ≈ 0.731
/// assert!((7_000..7_600).contains(&kept));
/// # Ok::<(), privq_core::Error>(())
/// ```
pub fn keep_with_odds<R: Rng + ?Sized>(epsilon: Epsilon, c: u64, rng: &mut R) -> Result<bool> {
    if c == 0 {
        return Err(Error::ZeroDenominator);
    }
    let tickets = c.checked_add(1).ok_or(Error::Overflow)?;
    loop {
        if uniform_below(tickets, rng)? == 0 {
            return Ok(true);
        }
        if bernoulli_exp(epsilon.num(), epsilon.den(), rng)? {
            return Ok(false);
        }
    }
}

/// One randomized-response bit about a fraction `num/den ∈ [0, 1]`:
/// `true` with probability exactly `(1 − p) + (num/den)(2p − 1)`, `p = e^ε/(e^ε + 1)`.
///
/// Draws `s ~ Bernoulli(num/den)` exactly, then reports `s` kept with probability
/// `p` ([`keep_with_odds`] with `c = 1`) and flipped otherwise. Since
/// `P[true] ∈ [1 − p, p]` for every input, any two inputs give odds within
/// `p/(1−p) = e^ε`: the bit is ε-locally private. This is the device side of the
/// local statistical-query oracle and of 1BitMean.
pub fn mixture_bit<R: Rng + ?Sized>(
    num: u64,
    den: u64,
    epsilon: Epsilon,
    rng: &mut R,
) -> Result<bool> {
    let s = bernoulli(num, den, rng)?;
    let keep = keep_with_odds(epsilon, 1, rng)?;
    Ok(s == keep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha12Rng;
    use rand_core::SeedableRng;

    #[test]
    fn rejects_zero_and_overflowing_c() {
        let mut rng = ChaCha12Rng::seed_from_u64(1);
        let eps = Epsilon::new(1, 1).unwrap();
        assert_eq!(
            keep_with_odds(eps, 0, &mut rng),
            Err(Error::ZeroDenominator)
        );
        assert_eq!(
            keep_with_odds(eps, u64::MAX, &mut rng),
            Err(Error::Overflow)
        );
    }

    #[test]
    fn frequency_matches_for_several_c() {
        let mut rng = ChaCha12Rng::seed_from_u64(2);
        let eps = Epsilon::new(3, 2).unwrap();
        let e = libm::exp(1.5);
        for c in [1u64, 3, 40] {
            let n = 40_000;
            let k = (0..n)
                .filter(|_| keep_with_odds(eps, c, &mut rng).unwrap())
                .count();
            let p = e / (e + c as f64);
            let sd = (p * (1.0 - p) / n as f64).sqrt();
            assert!((k as f64 / n as f64 - p).abs() < 5.0 * sd, "c={c}");
        }
    }

    #[test]
    fn mixture_bit_extremes() {
        let mut rng = ChaCha12Rng::seed_from_u64(3);
        let eps = Epsilon::new(2, 1).unwrap();
        let n = 20_000;
        let ones = (0..n)
            .filter(|_| mixture_bit(1, 1, eps, &mut rng).unwrap())
            .count();
        let p = libm::exp(2.0) / (libm::exp(2.0) + 1.0);
        assert!((ones as f64 / n as f64 - p).abs() < 0.02);
        assert_eq!(
            mixture_bit(2, 1, eps, &mut rng),
            Err(Error::ProbabilityAboveOne)
        );
    }
}

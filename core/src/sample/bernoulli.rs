use rand_core::Rng;

use super::uniform::{uniform_below, uniform_below_u128};
use super::wide::U256;
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
/// use privq_core::rng::ChaCha12;
/// use rand_core::SeedableRng;
/// let mut rng = ChaCha12::from_seed([3; 32]); // tests only: a device seeds from its TRNG
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

/// Bernoulli(exp(−(`whole` + `rem/den`))) for `rem < den`, exactly: `whole` trials of
/// Bernoulli(e⁻¹) (stopping at the first failure), then the alternating-series loop for
/// the fraction — the decomposition of [`bernoulli_exp`] for exponents whose numerator
/// and denominator leave `u64`. A denominator below 2⁶⁴ takes the 64-bit path.
pub(crate) fn bernoulli_exp_wide<R: Rng + ?Sized>(
    whole: U256,
    rem: u128,
    den: u128,
    rng: &mut R,
) -> Result<bool> {
    if rem >= den {
        return Err(Error::ProbabilityAboveOne);
    }
    let mut left = whole;
    while let Some(next) = left.checked_dec() {
        if !bernoulli_exp_minus_one(rng)? {
            return Ok(false);
        }
        left = next;
    }
    match (u64::try_from(rem), u64::try_from(den)) {
        (Ok(p), Ok(q)) => bernoulli_exp_unit(p, q, rng),
        _ => alternating_loop_wide(rem, den, rng),
    }
}

/// The alternating-series loop for `0 ≤ p < q` in 128 bits: step `k` continues with
/// probability `p/(q·k)`, drawn as Bernoulli(p/q) ∧ Bernoulli(1/k).
fn alternating_loop_wide<R: Rng + ?Sized>(p: u128, q: u128, rng: &mut R) -> Result<bool> {
    let mut k: u64 = 1;
    loop {
        let continues = uniform_below_u128(q, rng)? < p && uniform_below(k, rng)? == 0;
        if !continues {
            return Ok(k % 2 == 1);
        }
        k = k.checked_add(1).ok_or(Error::Overflow)?;
    }
}

/// Bernoulli(exp(−`p/q`)) for `0 ≤ p ≤ q`, `q > 0`: the alternating-series loop.
///
/// Step `k = 1, 2, …` of the loop continues with probability `p/(q·k)` and the result is
/// "the loop stopped at an odd step", so `P[K > k] = (p/q)^k / k!`. Two shortcuts draw
/// several steps from one uniform integer with exactly these probabilities:
/// Bernoulli(e⁻¹) ([`bernoulli_exp_minus_one`]) and the first two steps when `2q²`
/// fits in `u64`. Either way the remaining steps, if reached, run the plain loop.
#[inline]
pub(crate) fn bernoulli_exp_unit<R: Rng + ?Sized>(p: u64, q: u64, rng: &mut R) -> Result<bool> {
    if p == 0 {
        return Ok(true);
    }
    if p == q {
        return bernoulli_exp_minus_one(rng);
    }
    // Steps 1 and 2 from one W uniform in [0, 2q²): P[K > 1] = p/q = P[W < 2qp] and
    // P[K > 2] = p²/(2q²) = P[W < p²] (nested, as p < q).
    let two_q_sq = q.checked_mul(q).and_then(|q2| q2.checked_mul(2));
    let first_step = match two_q_sq {
        Some(n) => {
            let w = uniform_below(n, rng)?;
            // 2qp < 2q² fits.
            if w >= 2 * q * p {
                return Ok(true); // stopped at step 1
            }
            if w >= p * p {
                return Ok(false); // stopped at step 2
            }
            3
        }
        None => 1,
    };
    alternating_loop(p, q, first_step, rng)
}

/// The alternating-series loop from step `k` on (all earlier steps continued).
#[inline]
fn alternating_loop<R: Rng + ?Sized>(p: u64, q: u64, mut k: u64, rng: &mut R) -> Result<bool> {
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

/// Steps of the Bernoulli(e⁻¹) loop decided by one draw.
const FACT_STEPS: usize = 8;
/// `FACT_STEPS!`, the range of that draw.
pub(crate) const FACTORIAL: u32 = 40_320;

/// `FACTORIAL / k!` for `k = 2 ..= FACT_STEPS`: `W < T_k` has probability `1/k!`
/// (checked by a unit test).
const INV_FACTORIAL_THRESHOLDS: [u32; FACT_STEPS - 1] = [20_160, 6_720, 1_680, 336, 56, 8, 1];

/// Bernoulli(e⁻¹), exactly: the alternating loop with `p = q`, whose step `k` continues
/// with probability `1/k`, so `P[K > k] = 1/k!`. One `W` uniform in `[0, 8!)` decides
/// the first 8 steps at once — `K > k ⇔ W < 8!/k!` — with branch-free comparisons;
/// only when `W = 0` (probability 1/8!) does the plain loop continue from step 9.
#[inline]
pub(crate) fn bernoulli_exp_minus_one<R: Rng + ?Sized>(rng: &mut R) -> Result<bool> {
    let w = uniform_below(u64::from(FACTORIAL), rng)? as u32;
    bernoulli_exp_minus_one_from(w, rng)
}

/// [`bernoulli_exp_minus_one`] given its first draw `w`, uniform in `[0, 8!)`.
#[inline]
pub(crate) fn bernoulli_exp_minus_one_from<R: Rng + ?Sized>(w: u32, rng: &mut R) -> Result<bool> {
    // Steps continued: step 1 always, step k ≥ 2 iff w < 8!/k!.
    let mut continued = 1u32;
    for t in INV_FACTORIAL_THRESHOLDS {
        continued += u32::from(w < t);
    }
    if continued as usize == FACT_STEPS {
        return alternating_loop(1, 1, FACT_STEPS as u64 + 1, rng);
    }
    // Stopped at step K = continued + 1; the result is "K is odd".
    Ok(continued.is_multiple_of(2))
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
    fn factorial_thresholds_are_exact() {
        let mut f: u32 = 1;
        for k in 1..=FACT_STEPS as u32 {
            f *= k;
        }
        assert_eq!(f, FACTORIAL);
        let mut kf: u32 = 1;
        for (i, &t) in INV_FACTORIAL_THRESHOLDS.iter().enumerate() {
            kf *= i as u32 + 2;
            assert_eq!(t * kf, FACTORIAL, "k = {}", i + 2);
        }
        assert_eq!(INV_FACTORIAL_THRESHOLDS[FACT_STEPS - 2], 1);
    }

    #[test]
    fn wide_exponents_agree_with_the_64_bit_path() {
        // Bernoulli(exp(−(2 + 1/3))) through both paths: same probability ≈ 0.0970.
        let n = 100_000;
        let mut rng = ChaCha12Rng::seed_from_u64(5);
        let whole = U256 { hi: 0, lo: 2 };
        let den = 3u128 << 80;
        let wide = (0..n)
            .filter(|_| bernoulli_exp_wide(whole, 1 << 80, den, &mut rng).unwrap())
            .count();
        let narrow = (0..n)
            .filter(|_| bernoulli_exp(7, 3, &mut rng).unwrap())
            .count();
        let want = n as f64 * (-7.0f64 / 3.0).exp();
        // 5 standard deviations of a binomial count.
        let tol = 5.0 * (want * (1.0 - want / n as f64)).sqrt();
        for got in [wide, narrow] {
            assert!((got as f64 - want).abs() < tol, "{got} vs {want}");
        }
        assert_eq!(
            bernoulli_exp_wide(U256::ZERO, 5, 5, &mut rng),
            Err(Error::ProbabilityAboveOne)
        );
        assert!(bernoulli_exp_wide(U256::ZERO, 0, u128::MAX, &mut rng).unwrap());
        // A huge whole part: stops at the first failed Bernoulli(e⁻¹).
        let huge = U256 { hi: 1, lo: 0 };
        assert!(!bernoulli_exp_wide(huge, 0, 1, &mut rng).unwrap());
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

use rand_core::Rng;

use crate::error::{Error, Result};

/// A uniform integer in `[0, n)`, exactly (no modulo bias).
///
/// Uses Lemire's multiply-and-reject method: one random word and one multiplication
/// in the common case. Ranges below 2³² draw a 32-bit word (half the randomness, and a
/// cheap multiply on 32-bit cores); larger ones a 64-bit word. `n = 1` draws nothing.
/// Errors with [`Error::EmptyRange`] when `n = 0`.
///
/// ```
/// use privq_core::rng::ChaCha12;
/// use rand_core::SeedableRng;
/// let mut rng = ChaCha12::from_seed([7; 32]); // tests only: a device seeds from its TRNG
/// let d = privq_core::sample::uniform_below(6, &mut rng)?;
/// assert!(d < 6);
/// # Ok::<(), privq_core::Error>(())
/// ```
#[inline]
pub fn uniform_below<R: Rng + ?Sized>(n: u64, rng: &mut R) -> Result<u64> {
    if n == 0 {
        return Err(Error::EmptyRange);
    }
    match u32::try_from(n) {
        Ok(1) => Ok(0),
        Ok(n32) => Ok(u64::from(uniform_below_u32(n32, rng))),
        Err(_) => Ok(uniform_below_u64(n, rng)),
    }
}

/// A uniform integer in `[0, n)` for 128-bit `n ≥ 1`, by rejection: draw as many bits as
/// `n − 1` has (two 64-bit words, high word first) and retry while the draw is `≥ n`;
/// each try succeeds with probability above ½. For the rare wide paths of the discrete
/// Gaussian; `n < 2⁶⁴` should use [`uniform_below`].
pub(crate) fn uniform_below_u128<R: Rng + ?Sized>(n: u128, rng: &mut R) -> Result<u128> {
    if n == 0 {
        return Err(Error::EmptyRange);
    }
    let top = n - 1;
    if top == 0 {
        return Ok(0);
    }
    let mask = u128::MAX >> top.leading_zeros();
    loop {
        let hi = u128::from(rng.next_u64());
        let lo = u128::from(rng.next_u64());
        let x = ((hi << 64) | lo) & mask;
        if x < n {
            return Ok(x);
        }
    }
}

/// Lemire's method on 32-bit words, for `2 ≤ n < 2³²`.
#[inline(always)]
fn uniform_below_u32<R: Rng + ?Sized>(n: u32, rng: &mut R) -> u32 {
    let mut m = u64::from(rng.next_u32()) * u64::from(n);
    let mut low = m as u32;
    if low < n {
        // Reject the first (2^32 mod n) low halves so every result has equal weight.
        let threshold = n.wrapping_neg() % n;
        while low < threshold {
            m = u64::from(rng.next_u32()) * u64::from(n);
            low = m as u32;
        }
    }
    (m >> 32) as u32
}

/// Lemire's method on 64-bit words, for `n ≥ 2³²`.
#[inline(always)]
fn uniform_below_u64<R: Rng + ?Sized>(n: u64, rng: &mut R) -> u64 {
    let mut m = u128::from(rng.next_u64()) * u128::from(n);
    let mut low = m as u64;
    if low < n {
        // Reject the first (2^64 mod n) low halves so every result has equal weight.
        let threshold = n.wrapping_neg() % n;
        while low < threshold {
            m = u128::from(rng.next_u64()) * u128::from(n);
            low = m as u64;
        }
    }
    (m >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha12Rng;
    use rand_core::SeedableRng;

    #[test]
    fn stays_in_range_and_rejects_zero() {
        let mut rng = ChaCha12Rng::seed_from_u64(1);
        assert_eq!(uniform_below(0, &mut rng), Err(Error::EmptyRange));
        for n in [1u64, 2, 3, 7, 1000, (1 << 32) - 1, 1 << 32, u64::MAX] {
            for _ in 0..1000 {
                assert!(uniform_below(n, &mut rng).unwrap() < n);
            }
        }
    }

    #[test]
    fn wide_uniform_stays_in_range() {
        let mut rng = ChaCha12Rng::seed_from_u64(2);
        assert_eq!(uniform_below_u128(0, &mut rng), Err(Error::EmptyRange));
        assert_eq!(uniform_below_u128(1, &mut rng), Ok(0));
        for n in [2u128, 4, (1 << 64) + 1, 3 << 100, u128::MAX] {
            let mut high_half = 0;
            for _ in 0..1000 {
                let x = uniform_below_u128(n, &mut rng).unwrap();
                assert!(x < n);
                high_half += u32::from(x >= n / 2);
            }
            // Both halves of the range occur (about 500 each).
            assert!((400..600).contains(&high_half), "{n}: {high_half}");
        }
    }
}

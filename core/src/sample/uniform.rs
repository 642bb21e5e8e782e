use rand_core::Rng;

use crate::error::{Error, Result};

/// A uniform integer in `[0, n)`, exactly (no modulo bias).
///
/// Uses Lemire's multiply-and-reject method: one 64-bit draw and one
/// multiplication in the common case. Errors with [`Error::EmptyRange`] when `n = 0`.
///
/// ```
/// use rand_chacha::ChaCha12Rng;
/// use rand_core::SeedableRng;
/// let mut rng = ChaCha12Rng::seed_from_u64(7);
/// let d = privq_core::sample::uniform_below(6, &mut rng)?;
/// assert!(d < 6);
/// # Ok::<(), privq_core::Error>(())
/// ```
#[inline]
pub fn uniform_below<R: Rng + ?Sized>(n: u64, rng: &mut R) -> Result<u64> {
    if n == 0 {
        return Err(Error::EmptyRange);
    }
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
    Ok((m >> 64) as u64)
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
        for n in [1u64, 2, 3, 7, 1000, u64::MAX] {
            for _ in 0..1000 {
                assert!(uniform_below(n, &mut rng).unwrap() < n);
            }
        }
    }
}

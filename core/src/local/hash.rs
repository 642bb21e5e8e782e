//! A seeded universal hash family for local hashing, `no_std` and exact.

use rand_core::Rng;

use crate::error::{Error, Result};
use crate::sample::uniform_below;

/// The Mersenne prime 2³¹ − 1.
pub(crate) const PRIME: u64 = (1 << 31) - 1;

/// `h(x) = ((a·x + b) mod P) mod g` with `P = 2³¹ − 1` and a seed `(a, b)` drawn
/// uniformly from `[0, P)²` (Carter–Wegman).
///
/// For distinct `x ≠ x′ < P` the pair `((a·x+b) mod P, (a·x′+b) mod P)` is
/// uniform on `[0, P)²`, so the family is pairwise independent before the final
/// `mod g`; reducing mod `g` leaves each bucket's probability within `1/P` of `1/g`.
/// Privacy never depends on the hash (the seed is public and chosen independently
/// of the data); only the estimator's unbiasedness does, up to that relative
/// `g/P < 2⁻¹⁵` term for `g ≤ 2¹⁶`.
///
/// The seed travels in the report (8 bytes).
///
/// ```
/// use privq_core::local::UniversalHash;
/// let h = UniversalHash::from_parts(12345, 678)?;
/// assert_eq!(h.hash(10, 7), ((12345u64 * 10 + 678) % 2147483647 % 7) as u32);
/// assert!(UniversalHash::from_parts(u32::MAX, 0).is_err());
/// # Ok::<(), privq_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct UniversalHash {
    a: u32,
    b: u32,
}

impl UniversalHash {
    /// A seed from its two parts; [`Error::OutOfRange`] unless both are below `P`.
    pub fn from_parts(a: u32, b: u32) -> Result<UniversalHash> {
        if u64::from(a) >= PRIME || u64::from(b) >= PRIME {
            return Err(Error::OutOfRange);
        }
        Ok(UniversalHash { a, b })
    }

    /// A uniformly random seed.
    pub fn random<R: Rng + ?Sized>(rng: &mut R) -> Result<UniversalHash> {
        // Both below PRIME < 2^31: the casts are exact.
        let a = uniform_below(PRIME, rng)? as u32;
        let b = uniform_below(PRIME, rng)? as u32;
        Ok(UniversalHash { a, b })
    }

    /// The seed's parts `(a, b)`.
    pub const fn parts(&self) -> (u32, u32) {
        (self.a, self.b)
    }

    /// `(a·x + b) mod P`, for `x < P`.
    #[inline]
    pub fn mix(&self, x: u32) -> u32 {
        reduce(u64::from(self.a) * u64::from(x) + u64::from(self.b))
    }

    /// `h(x) ∈ [0, g)` for `x < P`, `g ≥ 1` (`g = 0` is treated as 1).
    #[inline]
    pub fn hash(&self, x: u32, g: u32) -> u32 {
        self.mix(x) % g.max(1)
    }
}

/// `x mod (2³¹ − 1)` for `x < 2⁶²`.
#[inline]
pub(crate) fn reduce(x: u64) -> u32 {
    let folded = (x & PRIME) + (x >> 31); // < 2^32
    let folded = (folded & PRIME) + (folded >> 31); // ≤ PRIME
    (if folded >= PRIME {
        folded - PRIME
    } else {
        folded
    }) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha12Rng;
    use rand_core::SeedableRng;

    #[test]
    fn reduce_matches_modulo() {
        let mut rng = ChaCha12Rng::seed_from_u64(8);
        for x in [
            0u64,
            1,
            PRIME - 1,
            PRIME,
            PRIME + 1,
            (1 << 62) - 1,
            PRIME * PRIME,
        ] {
            assert_eq!(u64::from(reduce(x)), x % PRIME, "{x}");
        }
        for _ in 0..10_000 {
            let x = rng.next_u64() >> 2;
            assert_eq!(u64::from(reduce(x)), x % PRIME);
        }
    }

    #[test]
    fn random_seeds_are_valid_and_spread_buckets() {
        let mut rng = ChaCha12Rng::seed_from_u64(9);
        let mut buckets = [0u32; 4];
        for _ in 0..40_000 {
            let h = UniversalHash::random(&mut rng).unwrap();
            let (a, b) = h.parts();
            assert!(UniversalHash::from_parts(a, b).is_ok());
            buckets[h.hash(17, 4) as usize] += 1;
        }
        for c in buckets {
            assert!((9_500..10_500).contains(&c), "{buckets:?}");
        }
    }
}

//! Random number generators for the checks.
//!
//! * [`chacha`]: the seeded ChaCha12 of the known-answer and distribution checks.
//! * [`SplitMix64`]: a tiny generator whose every call costs the same instructions,
//!   used only to measure samplers' instruction counts (ChaCha refills a 64-word block
//!   every so often, which would add noise unrelated to the sampler).
//!   It is **not** cryptographic and never feeds a release.

use core::convert::Infallible;

use rand_chacha::ChaCha12Rng;
use rand_core::{Rng, SeedableRng, TryCryptoRng, TryRng};

/// ChaCha12 seeded from a `u64` (tests only: fixed seeds make runs reproducible).
pub fn chacha(seed: u64) -> Chacha {
    Chacha(ChaCha12Rng::seed_from_u64(seed))
}

/// `rand_chacha::ChaCha12Rng`, word for word, with its methods kept out of line.
///
/// `ChaCha12Rng`'s `next_u32`/`next_u64` inline its 2.7 KB block function into every
/// sampler instantiated with it; the Cortex-M0 suite's image (256 KiB flash) held
/// eight such copies. Through this wrapper the checks share one. (The cost
/// measurements use `ChaCha12Rng` itself, as the firmware does, or [`SplitMix64`].)
#[derive(Debug, Clone)]
pub struct Chacha(pub ChaCha12Rng);

impl TryRng for Chacha {
    type Error = Infallible;

    #[inline(never)]
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok(self.0.next_u32())
    }

    #[inline(never)]
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(self.0.next_u64())
    }

    #[inline(never)]
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        self.0.fill_bytes(dst);
        Ok(())
    }
}

/// ChaCha12 is a cryptographic generator; the wrapper changes nothing of its output.
impl TryCryptoRng for Chacha {}

/// SplitMix64 (Steele, Lea, Flood 2014): constant work per output, no branches.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub const fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }
}

impl TryRng for SplitMix64 {
    type Error = Infallible;

    #[inline]
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok((self.try_next_u64()? >> 32) as u32)
    }

    #[inline]
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Ok(z ^ (z >> 31))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        for chunk in dst.chunks_mut(8) {
            let word = self.try_next_u64()?.to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::SplitMix64;
    use rand_core::Rng;

    #[test]
    fn splitmix_reference_output() {
        // First output for seed 0 in the reference implementation.
        assert_eq!(SplitMix64::new(0).next_u64(), 0xe220_a839_7b1d_cdaf);
    }
}

//! A small-flash ChaCha12 RNG with exactly the output of `rand_chacha::ChaCha12Rng`.
//!
//! `rand_chacha` computes four blocks at a time with fully unrolled rounds, which is
//! fast but costs about 2.4 KB of flash on Cortex-M0. The firmware only draws a few
//! hundred words per epoch, so [`ChaCha12`] computes one 16-word block at a time with
//! a rolled round loop (a few hundred bytes).
//!
//! It is the same stream: `rand_chacha` keys ChaCha with the 32-byte seed, a 64-bit
//! block counter starting at 0 (state words 12–13) and a zero 64-bit nonce (words
//! 14–15), and its four-block buffer holds four consecutive blocks. Its `BlockRng`
//! consumes that buffer strictly in order, one word per `next_u32`, two per `next_u64`
//! (low word first, across buffer ends), and `ceil(len / 4)` words (little-endian, the
//! unused bytes of a final partial word discarded) per `fill_bytes`. So a one-block
//! buffer consumed the same way yields identical values for any sequence of calls;
//! the unit tests check this against `rand_chacha` call by call.

use core::convert::Infallible;
use rand_core::{SeedableRng, TryCryptoRng, TryRng};

/// ChaCha's constant words, "expand 32-byte k".
const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// The state words of the eight quarter-rounds of one double round (4 column rounds,
/// then 4 diagonal rounds).
const QUARTER_ROUNDS: [[u8; 4]; 8] = [
    [0, 4, 8, 12],
    [1, 5, 9, 13],
    [2, 6, 10, 14],
    [3, 7, 11, 15],
    [0, 5, 10, 15],
    [1, 6, 11, 12],
    [2, 7, 8, 13],
    [3, 4, 9, 14],
];

/// Double rounds of ChaCha12.
const DOUBLE_ROUNDS: usize = 6;

/// Words per block.
const BLOCK_WORDS: usize = 16;

/// ChaCha12 with a one-block buffer; output identical to `rand_chacha::ChaCha12Rng`
/// seeded with the same 32 bytes (see the module documentation).
#[derive(Clone)]
pub struct ChaCha12 {
    key: [u32; 8],
    counter: u64,
    block: [u32; BLOCK_WORDS],
    /// Next word of `block` to hand out; `BLOCK_WORDS` when it is used up.
    index: usize,
}

impl core::fmt::Debug for ChaCha12 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Never print the key or the buffered output.
        f.write_str("ChaCha12 { .. }")
    }
}

impl ChaCha12 {
    /// Computes the block at `counter` into `block` and advances the counter.
    #[inline(never)]
    fn refill(&mut self) {
        let [k0, k1, k2, k3, k4, k5, k6, k7] = self.key;
        let [s0, s1, s2, s3] = SIGMA;
        let input = [
            s0,
            s1,
            s2,
            s3,
            k0,
            k1,
            k2,
            k3,
            k4,
            k5,
            k6,
            k7,
            self.counter as u32,
            (self.counter >> 32) as u32,
            0,
            0,
        ];
        let mut x = input;
        for _ in 0..DOUBLE_ROUNDS {
            for q in QUARTER_ROUNDS {
                let m = BLOCK_WORDS - 1;
                let [a, b, c, d] = [
                    usize::from(q[0]) & m,
                    usize::from(q[1]) & m,
                    usize::from(q[2]) & m,
                    usize::from(q[3]) & m,
                ];
                x[a] = x[a].wrapping_add(x[b]);
                x[d] = (x[d] ^ x[a]).rotate_left(16);
                x[c] = x[c].wrapping_add(x[d]);
                x[b] = (x[b] ^ x[c]).rotate_left(12);
                x[a] = x[a].wrapping_add(x[b]);
                x[d] = (x[d] ^ x[a]).rotate_left(8);
                x[c] = x[c].wrapping_add(x[d]);
                x[b] = (x[b] ^ x[c]).rotate_left(7);
            }
        }
        for ((out, w), i) in self.block.iter_mut().zip(x).zip(input) {
            *out = w.wrapping_add(i);
        }
        self.counter = self.counter.wrapping_add(1);
        self.index = 0;
    }

    /// The next word of the stream.
    fn word(&mut self) -> u32 {
        if self.index >= BLOCK_WORDS {
            self.refill();
        }
        let w = self.block[self.index & (BLOCK_WORDS - 1)];
        self.index += 1;
        w
    }
}

impl SeedableRng for ChaCha12 {
    type Seed = [u8; 32];

    fn from_seed(seed: [u8; 32]) -> Self {
        let mut key = [0u32; 8];
        for (k, bytes) in key.iter_mut().zip(seed.chunks_exact(4)) {
            let mut b = [0u8; 4];
            for (d, s) in b.iter_mut().zip(bytes) {
                *d = *s;
            }
            *k = u32::from_le_bytes(b);
        }
        ChaCha12 {
            key,
            counter: 0,
            block: [0; BLOCK_WORDS],
            index: BLOCK_WORDS,
        }
    }
}

impl TryRng for ChaCha12 {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok(self.word())
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        let lo = self.word();
        let hi = self.word();
        Ok(u64::from(hi) << 32 | u64::from(lo))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        for chunk in dst.chunks_mut(4) {
            for (d, s) in chunk.iter_mut().zip(self.word().to_le_bytes()) {
                *d = s;
            }
        }
        Ok(())
    }
}

/// ChaCha12 is a cryptographically secure generator (as `rand_chacha::ChaCha12Rng`).
impl TryCryptoRng for ChaCha12 {}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha12Rng;
    use rand_core::Rng;

    fn pair(seed: [u8; 32]) -> (ChaCha12, ChaCha12Rng) {
        (ChaCha12::from_seed(seed), ChaCha12Rng::from_seed(seed))
    }

    #[test]
    fn words_match_rand_chacha() {
        let mut seed = [0u8; 32];
        for (i, b) in seed.iter_mut().enumerate() {
            *b = (i * 37 + 11) as u8;
        }
        let (mut a, mut b) = pair(seed);
        for _ in 0..1000 {
            assert_eq!(a.next_u32(), b.next_u32());
        }
    }

    #[test]
    fn mixed_calls_match_rand_chacha() {
        for s in 0..20u64 {
            let mut seed = [0u8; 32];
            seed[..8].copy_from_slice(&s.to_le_bytes());
            seed[8..16].copy_from_slice(&(s * 7919).to_le_bytes());
            let (mut a, mut b) = pair(seed);
            // A simple LCG picks the call sequence, to cross buffer ends at every offset.
            let mut lcg = s.wrapping_mul(6364136223846793005).wrapping_add(1);
            for _ in 0..3000 {
                lcg = lcg
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                match (lcg >> 33) % 3 {
                    0 => assert_eq!(a.next_u32(), b.next_u32()),
                    1 => assert_eq!(a.next_u64(), b.next_u64()),
                    _ => {
                        let len = ((lcg >> 40) % 41) as usize;
                        let (mut x, mut y) = ([0u8; 40], [0u8; 40]);
                        a.fill_bytes(&mut x[..len]);
                        b.fill_bytes(&mut y[..len]);
                        assert_eq!(x, y);
                    }
                }
            }
        }
    }
}

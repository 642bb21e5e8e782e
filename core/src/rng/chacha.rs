//! [`ChaCha12`]: a small-flash ChaCha12 generator with exactly the output of
//! `rand_chacha::ChaCha12Rng`.
//!
//! `rand_chacha` computes four blocks at a time with fully unrolled rounds, which is fast but
//! large: the quick start's images grow by 2.2–2.7 KB with it (thumbv6m and thumbv7em,
//! `tools/device-sizes.sh`). A device draws a few hundred words per reading period, so
//! [`ChaCha12`] computes one 16-word block at a time with a rolled round loop (about 630 B on
//! thumbv6m).
//!
//! It is the same stream: `rand_chacha` keys ChaCha (Bernstein, "ChaCha, a variant of
//! Salsa20", 2008; 12 rounds) with the 32-byte seed, a 64-bit block counter starting at 0
//! (state words 12–13) and a zero 64-bit nonce (words 14–15), and its four-block buffer holds
//! four consecutive blocks. Its `BlockRng` consumes that buffer strictly in order, one word
//! per `next_u32`, two per `next_u64` (low word first, across buffer ends), and
//! `ceil(len / 4)` words (little-endian, the unused bytes of a final partial word discarded)
//! per `fill_bytes`. So a one-block buffer consumed the same way yields identical values for
//! any sequence of calls; the unit tests check this against `rand_chacha` call by call.

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

/// ChaCha12 with a one-block buffer and rolled rounds: a cryptographically secure generator
/// ([`CryptoRng`](rand_core::CryptoRng)) whose output is **identical to
/// `rand_chacha::ChaCha12Rng` (rand_chacha 0.10) seeded with the same 32 bytes**, for any
/// sequence of `next_u32`, `next_u64` and `fill_bytes` calls (`seed_from_u64` and
/// `try_from_rng` too: they derive the same seed). 2.2–2.7 KB less flash than `rand_chacha`
/// in the quick start's images, slower per word (one block of 64 bytes at a time); no
/// allocation, no dependency beyond `rand_core`, no panic path.
///
/// Flash cost (thumbv6m, measured by `tools/device-sizes.sh`): about 630 B, plus about 1 080 B of
/// compiler-builtins' `memcpy`/`memset` where nothing else links them.
///
/// Seed it once per boot from the MCU's hardware RNG (see the [module docs](crate::rng));
/// `seed_from_u64` and fixed seeds are for tests only.
///
/// ```
/// use privq_core::rng::ChaCha12;
/// use rand_core::{Rng, SeedableRng};
///
/// # fn read_trng(seed: &mut [u8; 32]) -> Result<(), ()> { seed.fill(0x5a); Ok(()) }
/// let mut seed = [0u8; 32];
/// read_trng(&mut seed).expect("hardware RNG failed"); // the MCU's TRNG, once per boot
/// let mut rng = ChaCha12::from_seed(seed);
/// let _word = rng.next_u32();
/// ```
///
/// `Debug` prints neither the key nor the buffered output. `Clone` copies the state: the
/// clone repeats the original's stream, so never release with both.
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
            for [a, b, c, d] in QUARTER_ROUNDS {
                quarter_round(&mut x, a, b, c, d);
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
        // `index < BLOCK_WORDS` here; the mask lets the compiler see it (no bounds check).
        let w = self.block.get(self.index & (BLOCK_WORDS - 1)).copied();
        self.index += 1;
        w.unwrap_or(0)
    }
}

/// One ChaCha quarter-round on the state words `a`, `b`, `c`, `d` (distinct, each masked to
/// `0..16` so the compiler sees every access in bounds and links no panic).
#[inline(always)]
fn quarter_round(x: &mut [u32; BLOCK_WORDS], a: u8, b: u8, c: u8, d: u8) {
    let m = BLOCK_WORDS - 1;
    let (a, b, c, d) = (
        usize::from(a) & m,
        usize::from(b) & m,
        usize::from(c) & m,
        usize::from(d) & m,
    );
    let word = |x: &[u32; BLOCK_WORDS], i: usize| x.get(i).copied().unwrap_or(0);
    let (xa, xb, xc, xd) = (word(x, a), word(x, b), word(x, c), word(x, d));
    let xa = xa.wrapping_add(xb);
    let xd = (xd ^ xa).rotate_left(16);
    let xc = xc.wrapping_add(xd);
    let xb = (xb ^ xc).rotate_left(12);
    let xa = xa.wrapping_add(xb);
    let xd = (xd ^ xa).rotate_left(8);
    let xc = xc.wrapping_add(xd);
    let xb = (xb ^ xc).rotate_left(7);
    let mut set = |i: usize, v: u32| {
        if let Some(w) = x.get_mut(i) {
            *w = v;
        }
    };
    set(a, xa);
    set(b, xb);
    set(c, xc);
    set(d, xd);
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

    #[test]
    fn seeded_from_u64_and_from_rng_match_rand_chacha() {
        for s in [0u64, 1, 42, u64::MAX] {
            let (mut a, mut b) = (ChaCha12::seed_from_u64(s), ChaCha12Rng::seed_from_u64(s));
            for _ in 0..40 {
                assert_eq!(a.next_u64(), b.next_u64());
            }
            // Seeding from another generator reads the same 32 bytes.
            let (mut a2, mut b2) = (ChaCha12::from_rng(&mut a), ChaCha12Rng::from_rng(&mut b));
            for _ in 0..40 {
                assert_eq!(a2.next_u32(), b2.next_u32());
            }
        }
    }

    #[test]
    fn long_fills_match_rand_chacha() {
        // Fills spanning many blocks (and rand_chacha's four-block buffer), at every
        // word offset and with every tail length.
        for (seed, lead) in [
            ([0u8; 32], 0),
            ([0xff; 32], 1),
            ([0x5a; 32], 3),
            ([1; 32], 17),
        ] {
            let (mut a, mut b) = pair(seed);
            for _ in 0..lead {
                assert_eq!(a.next_u32(), b.next_u32());
            }
            for len in [1usize, 63, 64, 65, 255, 256, 257, 1021] {
                let (mut x, mut y) = ([0u8; 1024], [0u8; 1024]);
                a.fill_bytes(&mut x[..len]);
                b.fill_bytes(&mut y[..len]);
                assert_eq!(x, y, "len {len}");
            }
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn clone_repeats_and_debug_hides_the_state() {
        let (mut a, _) = pair([9; 32]);
        a.next_u32();
        let mut c = a.clone();
        assert_eq!(a.next_u64(), c.next_u64());
        extern crate std;
        assert_eq!(std::format!("{a:?}"), "ChaCha12 { .. }");
    }
}

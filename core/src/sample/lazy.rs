//! Exact coins from a few random bits each: the Canonne–Kamath–Steinke Bernoulli(e^{−γ})
//! and the randomized-response coin `1/(1 + e^γ)`, decided by comparing one uniform
//! number, read lazily from a shared bit buffer, against exact rational thresholds.
//!
//! These are the samplers behind unary encoding (OUE, SUE), which draws `d` independent
//! coins per report. [`bernoulli_exp`](super::bernoulli_exp) and
//! [`keep_with_odds`](crate::local::keep_with_odds) draw a whole 32-bit word (and a
//! multiply-and-reject) for every fair coin and every step; here a fair coin costs one
//! bit and the first steps of the exponential loop cost one 8-bit chunk.
//! The probabilities are exactly the same (see [`ExpCoin`] and [`FlipCoin`]); the random
//! words are used differently, so the outputs for a given seed differ from those
//! samplers'. Successive coins are independent by the order in which they read the
//! stream ([`Bits`]); their work is not constant and depends on their outcomes
//! ([`FlipCoin`]).

use core::num::NonZeroU64;

use rand_core::Rng;

use crate::error::{Error, Result};

/// Bits of the chunk that decides the first steps of the exponential loop.
const CHUNK_BITS: u32 = 8;

/// Steps of the exponential loop decided by one chunk, at most.
pub(crate) const MAX_STEPS: usize = 8;

/// A source of 32-bit random words behind one indirect call: the samplers here take
/// `&mut dyn Words`, so one copy of them serves every generator type, and a generator's
/// block function is linked once per type (a `dyn Rng` would link it three times:
/// `next_u32`, `next_u64` and `fill_bytes` each inline it). The call happens once per
/// 32 bits.
pub(crate) trait Words {
    /// The generator's next 32-bit word.
    fn word(&mut self) -> u32;

    /// Test hook: the `left` bits still in the buffer are dropped by the refill that
    /// follows (the exact search branches only on bits that are read).
    #[cfg(test)]
    fn dropping(&mut self, _left: u32) {}
}

/// [`Words`] of a generator, word for word its `next_u32`.
pub(crate) struct WordsOf<'a, R: ?Sized>(pub(crate) &'a mut R);

impl<R: Rng + ?Sized> Words for WordsOf<'_, R> {
    fn word(&mut self) -> u32 {
        self.0.next_u32()
    }
}

/// Random bits, most significant first, taken from 32-bit words of the generator.
///
/// Every bit handed out is a fresh bit of the generator's stream, used once; bits left
/// in a word when a chunk does not fit are dropped (never reused).
///
/// **Independence by stream order.** Draws take consecutive, disjoint pieces of one
/// stream of i.i.d. uniform bits, in the order they are made: a draw gets the bits
/// right after everything earlier draws read or dropped. *Where* a draw starts depends
/// on what earlier draws returned (it is a stopping time of the stream, and so is the
/// buffer state `left` it starts from), but the bits from that point on are i.i.d.
/// uniform and independent of everything before it. So a coin drawn from this buffer
/// has the same law from every buffer state and is independent of all earlier coins;
/// it is not enough that coins read disjoint bits, it matters that which bits a coin
/// reads is decided by earlier bits only. (Unit tests enumerate a coin, and a round of
/// the flip coin, exactly from each buffer state 0..=32.)
#[derive(Debug, Default)]
pub(crate) struct Bits {
    word: u32,
    left: u32,
}

impl Bits {
    /// An empty buffer: the first draw takes a word from the generator.
    pub(crate) const fn new() -> Bits {
        Bits { word: 0, left: 0 }
    }

    /// Takes a new word from the generator (out of line: inlined at every draw, the
    /// generator's block function would be copied into each caller).
    #[inline(never)]
    fn refill(&mut self, rng: &mut dyn Words) {
        #[cfg(test)]
        rng.dropping(self.left);
        self.word = rng.word();
        self.left = 32;
    }

    /// One fair bit.
    #[inline(always)]
    pub(crate) fn bit(&mut self, rng: &mut dyn Words) -> bool {
        if self.left == 0 {
            self.refill(rng);
        }
        let b = self.word >> 31;
        self.word <<= 1;
        self.left -= 1;
        b != 0
    }

    /// A uniform integer in `[0, 2^CHUNK_BITS)`.
    #[inline(always)]
    fn chunk(&mut self, rng: &mut dyn Words) -> u32 {
        if self.left < CHUNK_BITS {
            self.refill(rng);
        }
        let c = self.word >> (32 - CHUNK_BITS);
        self.word <<= CHUNK_BITS;
        self.left -= CHUNK_BITS;
        c
    }
}

/// The thresholds of Bernoulli(e⁻¹) (`p = q = 1`): `⌊2⁸/k!⌋` for `k = 1..=5`
/// (`⌊2⁸/6!⌋ = 0`; checked against [`ExpCoin::new`] by a unit test).
const E_MINUS_ONE: [u32; MAX_STEPS] = [256, 128, 42, 10, 2, 0, 0, 0];
/// Steps of Bernoulli(e⁻¹) decided by the chunk.
const E_MINUS_ONE_STEPS: u8 = 5;

/// Bernoulli(exp(−`p/q`)) for `0 ≤ p ≤ q`, exactly, with its first steps decided by
/// one 8-bit chunk.
///
/// **The distribution.** The Canonne–Kamath–Steinke loop (as in
/// [`bernoulli_exp`](super::bernoulli_exp)) continues at step `k = 1, 2, …` with
/// probability `γ/k` (`γ = p/q`) and returns "it stopped at an odd step"; so the
/// number `C` of steps that continued has `P[C ≥ k] = T_k = γ^k/k!`. Here one uniform
/// `U ∈ [0, 1)` decides the first `n ≤ 8` steps: `C ≥ k ⇔ U < T_k` for `k ≤ n`, which
/// has probability exactly `T_k` since the `T_k` are decreasing (the events are nested).
/// When `U < T_n` (all `n` steps continued) the plain loop runs on from step `n + 1`,
/// which continues at step `k` with probability `γ/k` as before, so
/// `P[C ≥ k | C ≥ n] = T_k/T_n` and the whole law of `C` is the loop's. The result is
/// `C` even (stopped at step `C + 1`, odd) in both cases.
///
/// **Comparing `U` with `T_k` exactly.** `U` is read lazily: its first 8 bits `u`
/// (one chunk), then single bits. With `t_k = ⌊2⁸·T_k⌋`: `u < t_k` means
/// `U < (u+1)/2⁸ ≤ T_k`; `u > t_k` means `U ≥ (t_k+1)/2⁸ > T_k`; only `u = t_k`
/// (probability 2⁻⁸) needs further bits, which are compared with the binary digits of
/// the rational `T_k` produced by long division until the first difference (or until
/// the expansion ends, when `U ≥ T_k`). The `t_k` are kept strictly decreasing, so a
/// chunk ties with at most one threshold and every other comparison is decided by `u`.
/// Nothing is rounded: each comparison has the exact answer for the real number `U`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(crate) struct ExpCoin {
    p: u64,
    q: u64,
    /// Steps decided by the chunk (0: the plain loop from step 1).
    steps: u8,
    /// `t_k` for `k = 1..=steps`, strictly decreasing and positive; zero beyond.
    thresholds: [u32; MAX_STEPS],
}

impl ExpCoin {
    /// The coin for exp(−`p/q`); [`Error::ZeroDenominator`] for `q = 0` and
    /// [`Error::ProbabilityAboveOne`] for `p > q`.
    pub(crate) fn new(p: u64, q: u64) -> Result<ExpCoin> {
        if q == 0 {
            return Err(Error::ZeroDenominator);
        }
        if p > q {
            return Err(Error::ProbabilityAboveOne);
        }
        let mut coin = ExpCoin {
            p,
            q,
            steps: 0,
            thresholds: [0; MAX_STEPS],
        };
        if p == 0 {
            return Ok(coin);
        }
        let mut prev = u32::MAX;
        for (k, slot) in (1..=MAX_STEPS as u64).zip(coin.thresholds.iter_mut()) {
            let Some((num, den)) = threshold(p, q, k) else {
                break;
            };
            // num ≤ den < 2^47, so num·2^8 < 2^63 and the quotient is at most 2^8.
            let t = ((num << CHUNK_BITS) / den) as u32;
            if t == 0 || t >= prev {
                break;
            }
            *slot = t;
            prev = t;
            coin.steps = k as u8;
        }
        Ok(coin)
    }

    /// The coin for e⁻¹, with its thresholds from the table.
    pub(crate) const fn minus_one() -> ExpCoin {
        ExpCoin {
            p: 1,
            q: 1,
            steps: E_MINUS_ONE_STEPS,
            thresholds: E_MINUS_ONE,
        }
    }

    /// Draws the coin: `true` with probability exactly exp(−p/q). (Inlined: with the
    /// constant e⁻¹ coin the thresholds become immediates; the rare paths stay out of
    /// line.)
    #[inline(always)]
    pub(crate) fn sample(&self, bits: &mut Bits, rng: &mut dyn Words) -> Result<bool> {
        if self.p == 0 {
            return Ok(true);
        }
        let steps = u32::from(self.steps);
        let mut continued = 0u32;
        if steps > 0 {
            let u = bits.chunk(rng);
            // The thresholds decrease: count them from the first while u is below.
            for &t in self.thresholds.iter().take(self.steps as usize) {
                if u < t {
                    continued += 1;
                    continue;
                }
                // u = t: U < T_k decided by further bits; below the next threshold it
                // cannot be (t_{k+1} < u).
                if u == t && self.below_threshold(u64::from(continued) + 1, bits, rng)? {
                    continued += 1;
                }
                break;
            }
        }
        if continued == steps {
            return self.continue_loop(u64::from(steps) + 1, bits, rng);
        }
        Ok(continued.is_multiple_of(2))
    }

    /// Whether `U < T_k`, given that the first 8 bits of `U` equal `t_k`: the rest of
    /// `U` (a fresh uniform) against the rest of `T_k`, `(num·2⁸ − t_k·den)/den`.
    #[cold]
    #[inline(never)]
    fn below_threshold(&self, k: u64, bits: &mut Bits, rng: &mut dyn Words) -> Result<bool> {
        let (num, den) = threshold(self.p, self.q, k).ok_or(Error::Overflow)?;
        let t = self
            .thresholds
            .get(k as usize - 1)
            .copied()
            .ok_or(Error::Overflow)?;
        // Below den < 2^47 (t = ⌊num·2^8/den⌋).
        let rem = (num << CHUNK_BITS) - u64::from(t) * den.get();
        Ok(below(u128::from(rem), u128::from(den.get()), bits, rng))
    }

    /// The plain loop from step `k` on (every earlier step continued): step `k`
    /// continues with probability `p/(q·k)`, a fresh uniform compared with that
    /// rational; the result is "stopped at an odd step".
    #[cold]
    #[inline(never)]
    fn continue_loop(&self, mut k: u64, bits: &mut Bits, rng: &mut dyn Words) -> Result<bool> {
        loop {
            // q < 2^64 and k < 2^63, so q·k < 2^127.
            if k >= 1 << 63 {
                return Err(Error::Overflow);
            }
            let qk = u128::from(self.q) * u128::from(k);
            if !below(u128::from(self.p), qk, bits, rng) {
                return Ok(k % 2 == 1);
            }
            k += 1;
        }
    }
}

/// Whether a fresh uniform `V ∈ [0, 1)`, read bit by bit, is below `rem/den`
/// (`rem ≤ den < 2¹²⁷`): `V`'s bits against the binary digits of `rem/den` from long
/// division, until the first difference (`V`'s 0 against a 1: below; the reverse: not
/// below) or until the expansion ends (`V ≥ rem/den`). Each bit differs with
/// probability ½, so this reads two bits on average, and its answer is exact.
#[inline(never)]
fn below(mut rem: u128, den: u128, bits: &mut Bits, rng: &mut dyn Words) -> bool {
    loop {
        if rem == 0 {
            return false;
        }
        rem <<= 1;
        let digit = rem >= den;
        if digit {
            rem -= den;
        }
        if bits.bit(rng) != digit {
            return digit;
        }
    }
}

/// `T_k = p^k / (q^k·k!)` as `(numerator, denominator)`, when `q < 2²⁷` and the
/// denominator stays below 2⁴⁷ (so the chunk arithmetic cannot overflow); otherwise
/// `None`, and the chunk decides fewer steps (the plain loop does the rest, exactly).
#[inline(never)]
fn threshold(p: u64, q: u64, k: u64) -> Option<(u64, NonZeroU64)> {
    // Overflow excluded by magnitudes, without 64-bit multiply-with-overflow (a long
    // routine on Cortex-M0): q·i < 2^31 and den < 2^32 before each step, so
    // den·q·i < 2^63; num ≤ den and p ≤ q·i, so num·p fits too.
    if q >= 1 << 27 {
        return None;
    }
    let mut num: u64 = 1;
    let mut den: u64 = 1;
    for i in 1..=k {
        if den >= 1 << 32 {
            return None;
        }
        den *= q * i;
        num *= p;
    }
    if den >= 1 << 47 {
        return None;
    }
    Some((num, NonZeroU64::new(den)?))
}

/// The randomized-response coin: `true` ("flip") with probability exactly
/// `1/(1 + e^γ)`, `false` ("keep") with `e^γ/(1 + e^γ)`, for a rational `γ = a/b > 0`.
///
/// **The distribution.** The loop of [`keep_with_odds`](crate::local::keep_with_odds)
/// with `c = 1`: a fair bit, `0` → keep; `1` → Bernoulli(e^{−γ}) → flip, else start
/// again. A round keeps with probability ½ and flips with `e^{−γ}/2`, so the loop flips
/// with probability `e^{−γ}/(1 + e^{−γ}) = 1/(1 + e^γ)`. Bernoulli(e^{−γ}) is
/// `⌊γ⌋` coins Bernoulli(e⁻¹) and one Bernoulli(e^{−(a mod b)/b}), all of which must
/// succeed (`e^{−γ} = (e⁻¹)^{⌊γ⌋}·e^{−(a mod b)/b}`), each an exact [`ExpCoin`]. Every
/// coin and every fair bit reads the next fresh bits of the stream, so successive calls
/// are independent and identically distributed (see [`Bits`]: independence by stream
/// order).
///
/// **Work.** Not constant: a round that keeps reads one bit; one that goes on reads a
/// chunk per Bernoulli(e⁻¹) coin and per fractional coin, and rarely further bits (ties,
/// the plain loop's tail); a flip is reached after `≥ 1` such rounds. So the time of a
/// call depends on its outcome (a "flip" costs more than a "keep"), and a caller that
/// releases the outcomes releases information correlated with that time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(crate) struct FlipCoin {
    whole: u64,
    frac: ExpCoin,
}

impl FlipCoin {
    /// The coin for `γ = a/b`; [`Error::ZeroDenominator`] for `b = 0`.
    pub(crate) fn new(a: u64, b: u64) -> Result<FlipCoin> {
        let den = NonZeroU64::new(b).ok_or(Error::ZeroDenominator)?;
        Ok(FlipCoin {
            whole: a / den,
            frac: ExpCoin::new(a % den, b)?,
        })
    }

    /// Bernoulli(e^{−γ}).
    #[inline(always)]
    fn exp_neg(&self, bits: &mut Bits, rng: &mut dyn Words) -> Result<bool> {
        const ONE: ExpCoin = ExpCoin::minus_one();
        for _ in 0..self.whole {
            if !ONE.sample(bits, rng)? {
                return Ok(false);
            }
        }
        self.frac.sample(bits, rng)
    }

    /// `true` with probability exactly `1/(1 + e^γ)`.
    #[inline(always)]
    pub(crate) fn flip(&self, bits: &mut Bits, rng: &mut dyn Words) -> Result<bool> {
        loop {
            if !bits.bit(rng) {
                return Ok(false);
            }
            if self.exp_neg(bits, rng)? {
                return Ok(true);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::epsilon::Epsilon;
    use rand_chacha::ChaCha12Rng;
    use rand_core::SeedableRng;

    #[test]
    fn e_minus_one_table_is_the_computed_one() {
        assert_eq!(ExpCoin::new(1, 1).unwrap(), ExpCoin::minus_one());
        // ⌊2^8/k!⌋ directly.
        let mut f = 1u64;
        for (k, &t) in (1u64..).zip(E_MINUS_ONE.iter()) {
            f *= k;
            assert_eq!(u64::from(t), (1 << CHUNK_BITS) / f, "k = {k}");
        }
    }

    #[test]
    fn thresholds_are_floors_and_strictly_decreasing() {
        for (p, q) in [
            (1u64, 2u64),
            (1, 3),
            (2, 3),
            (7, 10),
            (1, 1000),
            (999_999, 1_000_000),
            (1, 1 << 20),
        ] {
            let c = ExpCoin::new(p, q).unwrap();
            let mut prev = u128::MAX;
            for k in 1..=u64::from(c.steps) {
                let (num, den) = threshold(p, q, k).unwrap();
                let t = u128::from(c.thresholds[k as usize - 1]);
                // t ≤ 2^8·num/den < t + 1, in exact integers.
                let scaled = u128::from(num) << CHUNK_BITS;
                let den = u128::from(den.get());
                assert!(t * den <= scaled && scaled < (t + 1) * den, "{p}/{q} k={k}");
                assert!(t > 0 && t < prev);
                prev = t;
            }
            assert!(c.thresholds[usize::from(c.steps)..].iter().all(|&t| t == 0));
        }
        // γ below 2^-8: no step from the chunk, the plain loop does everything.
        assert_eq!(ExpCoin::new(1, 1 << 20).unwrap().steps, 0);
        assert_eq!(ExpCoin::new(2, 1), Err(Error::ProbabilityAboveOne));
        assert_eq!(ExpCoin::new(0, 0), Err(Error::ZeroDenominator));
    }

    /// A generator that returns scripted words, then zeros.
    struct Script<'a>(&'a [u32]);
    impl rand_core::TryRng for Script<'_> {
        type Error = core::convert::Infallible;
        fn try_next_u32(&mut self) -> core::result::Result<u32, Self::Error> {
            let (first, rest) = self.0.split_first().unwrap_or((&0, &[]));
            self.0 = rest;
            Ok(*first)
        }
        fn try_next_u64(&mut self) -> core::result::Result<u64, Self::Error> {
            Ok(u64::from(self.try_next_u32()?) | (u64::from(self.try_next_u32()?) << 32))
        }
        fn try_fill_bytes(&mut self, dst: &mut [u8]) -> core::result::Result<(), Self::Error> {
            dst.fill(0);
            Ok(())
        }
    }

    #[test]
    fn a_tied_chunk_is_decided_by_the_digits_of_the_threshold() {
        // e^-1, k = 3: T_3 = 1/6 = 0.0010101010…₂; t_3 = 42 = 0b0010_1010, and the
        // digits after the first 8 are 1010…. U = t_3 then bits 0… is below T_3 (3 steps
        // continued, stopped at 4: false); U = t_3 then 11… is above (2 steps, stopped at
        // 3: true).
        let coin = ExpCoin::minus_one();
        let mut bits = Bits::new();
        let below = [42u32 << 24];
        assert!(
            !coin
                .sample(&mut bits, &mut WordsOf(&mut Script(&below)))
                .unwrap()
        );
        let mut bits = Bits::new();
        let above = [(42u32 << 24) | 0x00c0_0000];
        assert!(
            coin.sample(&mut bits, &mut WordsOf(&mut Script(&above)))
                .unwrap()
        );
        // A threshold with a finite expansion: T_2 = 1/2 = t_2/2^8 exactly, so a tie
        // means U ≥ 1/2: one step continued, stopped at 2: false.
        let mut bits = Bits::new();
        assert!(
            !coin
                .sample(&mut bits, &mut WordsOf(&mut Script(&[128u32 << 24])))
                .unwrap()
        );
        // U below T_5 = 1/120 (chunk 0): the plain loop from step 6 on, whose step 6
        // continues iff the next bits are below 1/6 = 0.001…₂: bits 1… are not (stopped
        // at step 6, even: false).
        let mut bits = Bits::new();
        let deep = [0x00ff_ffff];
        assert!(
            !coin
                .sample(&mut bits, &mut WordsOf(&mut Script(&deep)))
                .unwrap()
        );
    }

    /// A word source whose first word is given and whose later words are arbitrary
    /// (a fixed mixing sequence, so loops that read on end); counts the words taken.
    struct Prefix {
        word: u32,
        calls: u32,
    }

    impl Words for Prefix {
        fn word(&mut self) -> u32 {
            self.calls += 1;
            if self.calls == 1 {
                self.word
            } else {
                self.calls.wrapping_mul(0x9e37_79b9).rotate_left(13) ^ self.word
            }
        }
    }

    /// The exact law, not a frequency: every string of the first `L` random bits is run
    /// once. A string after which the coin has decided (it read at most `L` bits) has
    /// probability exactly 2^-L and a fixed outcome, whatever follows; the others are
    /// "undecided". So `P[true]` lies in `[yes, yes + undecided]·2^-L`, and this
    /// interval must contain the target probability and be narrow.
    fn enumerate(mut coin: impl FnMut(&mut Bits, &mut Prefix) -> bool) -> (f64, f64) {
        const L: u32 = 20;
        let (mut yes, mut undecided) = (0u64, 0u64);
        for s in 0..(1u32 << L) {
            let mut src = Prefix {
                word: s << (32 - L),
                calls: 0,
            };
            let mut bits = Bits::new();
            let r = coin(&mut bits, &mut src);
            if src.calls > 1 || 32 - bits.left > L {
                undecided += 1;
            } else if r {
                yes += 1;
            }
        }
        let scale = f64::from(1u32 << L);
        (yes as f64 / scale, (yes + undecided) as f64 / scale)
    }

    #[test]
    fn exact_law_by_enumerating_every_bit_string() {
        for (p, q) in [(1u64, 1u64), (1, 2), (5, 7), (1, 300)] {
            let c = ExpCoin::new(p, q).unwrap();
            let (lo, hi) = enumerate(|bits, src| c.sample(bits, src).unwrap());
            let want = libm::exp(-(p as f64) / q as f64);
            assert!(
                lo <= want && want <= hi,
                "e^-{p}/{q}: {want} not in [{lo}, {hi}]"
            );
            assert!(hi - lo < 1e-3, "e^-{p}/{q}: undecided mass {}", hi - lo);
        }
        for (a, b) in [(1u64, 1u64), (1, 2), (3, 2)] {
            let c = FlipCoin::new(a, b).unwrap();
            let (lo, hi) = enumerate(|bits, src| c.flip(bits, src).unwrap());
            let want = 1.0 / (1.0 + libm::exp(a as f64 / b as f64));
            assert!(
                lo <= want && want <= hi,
                "flip {a}/{b}: {want} not in [{lo}, {hi}]"
            );
            assert!(hi - lo < 0.2, "flip {a}/{b}: undecided mass {}", hi - lo);
        }
    }

    /// Frequencies of Bernoulli(e^{-γ}) and of the flip coin against the exact values,
    /// with 5-sigma bounds.
    #[test]
    fn frequencies_match_the_exact_probabilities() {
        let mut rng = ChaCha12Rng::seed_from_u64(11);
        let n = 200_000u32;
        for (p, q) in [(1u64, 1u64), (1, 2), (1, 3), (5, 7), (1, 1 << 20), (0, 4)] {
            let coin = ExpCoin::new(p, q).unwrap();
            let mut bits = Bits::new();
            let words = &mut WordsOf(&mut rng);
            let hits = (0..n)
                .filter(|_| coin.sample(&mut bits, words).unwrap())
                .count();
            let want = libm::exp(-(p as f64) / q as f64);
            let sd = (want * (1.0 - want) / f64::from(n)).sqrt().max(1e-9);
            let got = hits as f64 / f64::from(n);
            assert!((got - want).abs() < 5.0 * sd, "{p}/{q}: {got} vs {want}");
        }
        for (a, b) in [(1u64, 1u64), (1, 2), (3, 2), (5, 1), (1, 100)] {
            let coin = FlipCoin::new(a, b).unwrap();
            let mut bits = Bits::new();
            let words = &mut WordsOf(&mut rng);
            let hits = (0..n)
                .filter(|_| coin.flip(&mut bits, words).unwrap())
                .count();
            let want = 1.0 / (1.0 + libm::exp(a as f64 / b as f64));
            let sd = (want * (1.0 - want) / f64::from(n)).sqrt();
            let got = hits as f64 / f64::from(n);
            assert!((got - want).abs() < 5.0 * sd, "{a}/{b}: {got} vs {want}");
        }
    }

    // ---- Exact search over the random stream, from every buffer state ----

    extern crate std;
    use std::vec::Vec;

    /// Fixed-point scale of the reference values and of the report-law bounds: 2⁶².
    const FX: u32 = 62;
    const ONE_FX: u128 = 1 << FX;

    /// Scale of the search's masses: a decided path of `n` bits has mass 2^(64−n), over
    /// 2⁶⁴ (paths are at most 64 bits).
    const MAX_DEPTH: u32 = 64;

    /// The search deepens while the undecided mass exceeds 2⁻²⁴ and at most
    /// `BUDGET` paths are undecided (the tail of the loop reads a random number of
    /// bits with a slowly decaying law, so the number of undecided paths grows about
    /// 1.4-fold per level where it is likely).
    const TARGET: u128 = 1 << (MAX_DEPTH - 24);
    const BUDGET: usize = 1 << 14;

    /// Rigorous bounds `[lo, hi]·2⁻⁶²` on `e^{−p/q}` for `0 ≤ p ≤ q < 2⁴⁰`: the
    /// alternating Taylor series with decreasing terms `t_k = γ^k/k!` (γ ≤ 1) lies
    /// between consecutive partial sums; every term is rounded down where it is added
    /// and up where it is subtracted (and the reverse for the upper bound).
    fn exp_neg_frac(p: u64, q: u64) -> (u128, u128) {
        assert!(p <= q && q < 1 << 40);
        const N: usize = 28;
        // Floor and ceiling chains of t_k, k = 0..N.
        let (mut fl, mut ce) = ([0u128; N], [0u128; N]);
        fl[0] = ONE_FX;
        ce[0] = ONE_FX;
        for k in 1..N {
            let d = u128::from(q) * k as u128;
            fl[k] = fl[k - 1] * u128::from(p) / d;
            ce[k] = (ce[k - 1] * u128::from(p)).div_ceil(d);
        }
        // S_{N-1} (N-1 odd: ends with a subtracted term) ≤ e^-γ ≤ S_{N-2}.
        let (mut lo, mut hi) = (0i128, 0i128);
        for k in 0..N {
            let (f, c) = (fl[k] as i128, ce[k] as i128);
            if k % 2 == 0 {
                lo += f;
                if k < N - 1 {
                    hi += c;
                }
            } else {
                lo -= c;
                if k < N - 1 {
                    hi -= f;
                }
            }
        }
        assert!(0 <= lo && lo <= hi && hi <= ONE_FX as i128);
        (lo as u128, hi as u128)
    }

    /// Fixed-point products rounded down and up.
    fn mul_lo(a: u128, b: u128) -> u128 {
        (a * b) >> FX
    }
    fn mul_hi(a: u128, b: u128) -> u128 {
        (a * b).div_ceil(ONE_FX)
    }

    /// Bounds on `e^{−a/b}` for any `a/b`: `(e⁻¹)^⌊a/b⌋·e^{−(a mod b)/b}`.
    fn exp_neg(a: u64, b: u64) -> (u128, u128) {
        let (l1, h1) = exp_neg_frac(1, 1);
        let (mut lo, mut hi) = exp_neg_frac(a % b, b);
        for _ in 0..a / b {
            lo = mul_lo(lo, l1);
            hi = mul_hi(hi, h1);
        }
        (lo, hi)
    }

    /// Bounds on the flip probability `1/(1 + e^γ) = e^{−γ}/(1 + e^{−γ})` (increasing
    /// in `e^{−γ}`).
    fn flip_probability(a: u64, b: u64) -> (u128, u128) {
        let (lo, hi) = exp_neg(a, b);
        ((lo << FX) / (ONE_FX + lo), (hi << FX).div_ceil(ONE_FX + hi))
    }

    /// The random stream of the search: positions `0..len` are the known bits of the
    /// path (position `i` is bit `63 − i` of `known`); later positions are filled from a
    /// fixed mixing sequence (so that loops reading on end), and a run that reaches
    /// them is extended by one position in both ways.
    struct Tape {
        /// The known bits, then the fill up to position 63.
        head: u64,
        /// Stream position of the first bit of the next word handed out.
        next: u64,
        /// Positions (below 64) dropped by a refill, unread.
        dropped: u64,
    }

    impl Tape {
        fn new(known: u64, len: u32) -> Tape {
            const FILL: u64 = 0x9e37_79b9_7f4a_7c15;
            let mask = u64::MAX.checked_shr(len).unwrap_or(0);
            Tape {
                head: (known & !mask) | (FILL & mask),
                next: 0,
                dropped: 0,
            }
        }

        /// The 32 stream bits from `pos`, the first at the top.
        fn word_at(&self, pos: u64) -> u32 {
            let fill = (pos.wrapping_mul(0xd1b5_4a32_d192_ed03) >> 32) as u32;
            if pos <= 32 {
                (self.head << pos >> 32) as u32
            } else if pos < 64 {
                // The top 64 - pos bits from `head`, the rest fill.
                ((self.head << pos >> 32) as u32) | (fill >> (64 - pos))
            } else {
                fill
            }
        }
    }

    impl Words for Tape {
        fn word(&mut self) -> u32 {
            let w = self.word_at(self.next);
            self.next += 32;
            w
        }

        fn dropping(&mut self, left: u32) {
            for pos in self.next - u64::from(left)..self.next.min(64) {
                self.dropped |= 1 << (63 - pos);
            }
        }
    }

    /// The exact law of `run` started with `start` fresh bits in the buffer (buffer
    /// state `left = start`, 0..=32), by a breadth-first search over the random stream
    /// that branches on each position the run reads: a run whose stream position
    /// (bits handed out or dropped at a refill) ends within the known prefix is decided
    /// by that prefix, with mass exactly 2^-(bits read); otherwise the next position is
    /// tried both ways (or just passed when the run drops it unread), level by level,
    /// until the undecided mass is at most [`TARGET`] or more than [`BUDGET`] paths are
    /// undecided.
    ///
    /// Returns the mass (over 2⁶⁴) of each (outcome, buffer state after the run), and
    /// the undecided mass. The unread bits left in the buffer after a decided run are
    /// beyond the prefix, i.e. fresh: so a sequence of runs is a Markov chain on the
    /// buffer state, and this is its exact transition kernel.
    fn search<T: Copy + PartialEq>(
        start: u32,
        mut run: impl FnMut(&mut Bits, &mut Tape) -> T,
    ) -> (Vec<(T, u32, u128)>, u128) {
        let mut law: Vec<(T, u32, u128)> = Vec::new();
        // Undecided paths of the current length: (known bits, mass over 2^64).
        let mut level: Vec<(u64, u128)> = std::vec![(0, 1 << MAX_DEPTH)];
        let mut len = 0u32;
        loop {
            let mut next = Vec::new();
            for &(known, mass) in &level {
                let mut tape = Tape::new(known, len);
                let head = tape.word_at(0);
                tape.next = u64::from(start);
                let mut bits = Bits {
                    word: head & !u32::MAX.checked_shr(start).unwrap_or(0),
                    left: start,
                };
                let out = run(&mut bits, &mut tape);
                let end = tape.next - u64::from(bits.left);
                if end <= u64::from(len) {
                    match law.iter_mut().find(|e| e.0 == out && e.1 == bits.left) {
                        Some(e) => e.2 += mass,
                        None => law.push((out, bits.left, mass)),
                    }
                } else if len < MAX_DEPTH && tape.dropped >> (63 - len) & 1 == 1 {
                    // Position len is dropped whatever follows (the reads before it
                    // depend on the prefix only): one path, the same mass.
                    next.push((known, mass));
                } else if len < MAX_DEPTH {
                    next.push((known, mass / 2));
                    next.push((known | (1 << (63 - len)), mass / 2));
                } else {
                    next.push((known, mass));
                }
            }
            let undecided: u128 = next.iter().map(|e| e.1).sum();
            if undecided <= TARGET || next.len() > BUDGET || len == MAX_DEPTH {
                return (law, undecided);
            }
            level = next;
            len += 1;
        }
    }

    /// Whether the exact value `v` can lie in both `[got, got + und]·2⁻⁶⁴` and
    /// `[lo, hi]·2^-62`, i.e. the two brackets overlap.
    fn overlaps(got: u128, und: u128, lo: u128, hi: u128) -> bool {
        let s = MAX_DEPTH - FX;
        got <= hi << s && lo << s <= got + und
    }

    /// Mass of outcome `o` in a law from [`search`].
    fn mass_of<T: PartialEq>(law: &[(T, u32, u128)], o: T) -> u128 {
        law.iter().filter(|e| e.0 == o).map(|e| e.2).sum()
    }

    /// Largest undecided mass allowed: 2⁻¹⁶ (the effects of a wrong tail step are
    /// around 10⁻² to 10⁻⁶; the search itself stops at 2⁻²⁴ where it can).
    const SLACK: u128 = 1 << (MAX_DEPTH - 16);

    /// Bernoulli(e^{−γ}) exactly, from every buffer state: the search's bracket must
    /// contain e^{−γ} (bounded rigorously) with at most 2⁻¹⁶ undecided. Covers the
    /// chunk steps, ties, and the plain loop's tail (the step after the last chunk step
    /// continues with `γ/(steps + 1)`), for γ with 0 to 5 chunk steps and the large
    /// denominators of SUE/OUE at ε = 65535/65534.
    #[test]
    fn exact_search_exp_coin_from_every_buffer_state() {
        // (p, q, largest undecided mass allowed as a power of 2): γ near 1 with only
        // two chunk steps (q near 2^16) enters the tail half the time, where paths
        // are many; a wrong tail step moves its law by about 10^-2 there.
        for (p, q, slack) in [
            (1u64, 1u64, 16u32),
            (1, 2, 16),
            (5, 7, 16),
            (1, 300, 16),
            (1, 65534, 24),
            (65535, 131_068, 12),
            (65533, 65534, 8),
            (0, 4, 64),
        ] {
            let coin = ExpCoin::new(p, q).unwrap();
            let (lo, hi) = exp_neg(p, q);
            for start in 0..=32 {
                let (law, und) = search(start, |bits, tape| coin.sample(bits, tape).unwrap());
                let yes = mass_of(&law, true);
                let no = mass_of(&law, false);
                assert_eq!(yes + no + und, 1 << MAX_DEPTH);
                assert!(
                    und <= (1 << MAX_DEPTH) >> slack,
                    "e^-{p}/{q}, buffer {start}: undecided {und}"
                );
                assert!(
                    overlaps(yes, und, lo, hi),
                    "e^-{p}/{q}, buffer {start}: P[true] in [{yes}, {}]·2^-64, \
                     e^-γ in [{lo}, {hi}]·2^-{FX}",
                    yes + und
                );
            }
        }
    }

    /// One round of [`FlipCoin::flip`]'s loop (the loop repeats the round until it is
    /// not `AGAIN`): a fair bit, 0 → keep; 1 → Bernoulli(e^{−γ}): flip, else again.
    const KEEP: u8 = 0;
    const FLIP: u8 = 1;
    const AGAIN: u8 = 2;

    fn round(coin: &FlipCoin, bits: &mut Bits, tape: &mut Tape) -> u8 {
        if !bits.bit(tape) {
            KEEP
        } else if coin.exp_neg(bits, tape).unwrap() {
            FLIP
        } else {
            AGAIN
        }
    }

    /// The exact kernel of one round from every buffer state: `mass[start][o][end]`
    /// over 2⁶⁴, and the undecided mass per start.
    struct RoundKernel {
        mass: [[[u128; 33]; 3]; 33],
        undecided: [u128; 33],
    }

    fn round_kernel(coin: &FlipCoin) -> RoundKernel {
        let mut k = RoundKernel {
            mass: [[[0; 33]; 3]; 33],
            undecided: [0; 33],
        };
        for start in 0..=32u32 {
            let (law, und) = search(start, |bits, tape| round(coin, bits, tape));
            for (o, end, m) in law {
                k.mass[start as usize][usize::from(o)][end as usize] += m;
            }
            k.undecided[start as usize] = und;
        }
        k
    }

    /// The bit-level ε of the noise coins: (OUE ε, SUE ε/2) for ε = 1, 1/2, 2 and
    /// 65535/65534, as [`FlipCoin`] parameters.
    const FLIP_COINS: [(u64, u64); 5] =
        [(1, 1), (1, 2), (65535, 65534), (65535, 131_068), (1, 300)];

    /// A round of the randomized-response coin exactly, from every buffer state: keep
    /// with exactly 1/2, flip with e^{−γ}/2, again with (1 − e^{−γ})/2.
    #[test]
    fn exact_search_flip_round_from_every_buffer_state() {
        for (a, b) in FLIP_COINS {
            let coin = FlipCoin::new(a, b).unwrap();
            let k = round_kernel(&coin);
            let (lo, hi) = exp_neg(a, b);
            for start in 0..=32 {
                let und = k.undecided[start];
                let sum = |o: u8| k.mass[start][usize::from(o)].iter().sum::<u128>();
                let (keep, flip, again) = (sum(KEEP), sum(FLIP), sum(AGAIN));
                assert_eq!(keep + flip + again + und, 1 << MAX_DEPTH);
                assert!(und <= SLACK, "γ = {a}/{b}, buffer {start}: undecided {und}");
                let half = ONE_FX / 2;
                assert!(
                    overlaps(keep, und, half, half),
                    "γ = {a}/{b}, buffer {start}: keep"
                );
                assert!(
                    overlaps(flip, und, lo / 2, hi.div_ceil(2)),
                    "γ = {a}/{b}, buffer {start}: flip {flip} vs e^-γ/2 in [{lo}, {hi}]/2"
                );
                assert!(
                    overlaps(again, und, (ONE_FX - hi) / 2, (ONE_FX - lo).div_ceil(2)),
                    "γ = {a}/{b}, buffer {start}: again"
                );
            }
        }
    }

    /// Lower bounds (over 2⁶²) on the law of (noise bit, buffer state after it) for one
    /// call of [`FlipCoin::flip`], from lower bounds `m` on the buffer state before it:
    /// its rounds composed through the exact round kernel (at most 48 rounds; the
    /// mass still in the loop after them, below 0.4⁴⁸, is left out like the
    /// undecided mass, so only lower bounds are kept).
    fn coin_step(k: &RoundKernel, m: &[u128; 33]) -> [[u128; 33]; 2] {
        let mut out = [[0u128; 33]; 2];
        let mut alive = *m;
        for _ in 0..48 {
            let mut again = [0u128; 33];
            for (start, &a) in alive.iter().enumerate() {
                if a == 0 {
                    continue;
                }
                let row = &k.mass[start];
                for end in 0..33 {
                    out[0][end] += (a * row[usize::from(KEEP)][end]) >> MAX_DEPTH;
                    out[1][end] += (a * row[usize::from(FLIP)][end]) >> MAX_DEPTH;
                    again[end] += (a * row[usize::from(AGAIN)][end]) >> MAX_DEPTH;
                }
            }
            alive = again;
        }
        out
    }

    /// The law of one fair bit (OUE's true bit) from every buffer state, exactly.
    fn fair_bit_kernel() -> [[[u128; 33]; 2]; 33] {
        let mut k = [[[0u128; 33]; 2]; 33];
        for start in 0..=32u32 {
            let (law, und) = search(start, |bits, tape| bits.bit(tape));
            assert_eq!(und, 0);
            for (b, end, m) in law {
                k[start as usize][usize::from(b)][end as usize] += m;
            }
        }
        k
    }

    /// Lower bounds (over 2⁶²) on the law of the report bits `tracked` (a bit mask
    /// over `0..d`; the others are summed out) of unary encoding over `d` items for
    /// item `x`, composed as [`UnaryEncoding::randomize_into`](crate::local::UnaryEncoding::randomize_into)
    /// draws them: from an empty buffer, a noise coin at every position, then at `x`
    /// SUE's complement or OUE's fresh fair bit. Indexed by the tracked bits' values.
    fn report_law(
        k: &RoundKernel,
        fair: &[[[u128; 33]; 2]; 33],
        sue: bool,
        d: u32,
        x: u32,
        tracked: u32,
    ) -> Vec<u128> {
        let mut law: Vec<[u128; 33]> = std::vec![[0; 33]; 1 << d];
        law[0][0] = ONE_FX;
        for i in 0..d {
            let mut next = std::vec![[0u128; 33]; 1 << d];
            for (v, m) in law.iter().enumerate() {
                if m.iter().all(|&a| a == 0) {
                    continue;
                }
                let out = coin_step(k, m);
                for (b, row) in out.iter().enumerate() {
                    let w = v | ((b << i) & tracked as usize);
                    for (e, &a) in row.iter().enumerate() {
                        next[w][e] += a;
                    }
                }
            }
            law = next;
        }
        let xm = (1usize << x) & tracked as usize;
        let mut res = std::vec![0u128; 1 << d];
        for (v, m) in law.iter().enumerate() {
            for (start, &a) in m.iter().enumerate() {
                if sue {
                    res[v ^ xm] += a;
                } else {
                    for (b, row) in fair[start].iter().enumerate() {
                        let w = (v & !xm) | if b == 1 { xm } else { 0 };
                        res[w] += row.iter().map(|&f| (a * f) >> MAX_DEPTH).sum::<u128>();
                    }
                }
            }
        }
        res
    }

    /// Unary encoding's coins at ε = 1 and ε = 65535/65534: (SUE?, ε/2 or ε as the
    /// flip coin's γ).
    fn unary_coins() -> [(bool, (u64, u64)); 4] {
        let mut out = [(false, (0, 0)); 4];
        for (i, (sue, eps)) in [
            (false, Epsilon::new(1, 1)),
            (true, Epsilon::new(1, 1)),
            (false, Epsilon::new(65535, 65534)),
            (true, Epsilon::new(65535, 65534)),
        ]
        .into_iter()
        .enumerate()
        {
            let eps = eps.unwrap();
            let g = if sue {
                eps.checked_div_int(2).unwrap()
            } else {
                eps
            };
            out[i] = (sue, (g.num(), g.den()));
        }
        out
    }

    /// Bounds on `P[bit = b]` (over 2⁶²) for a noise bit or the true bit.
    fn bit_bounds(sue: bool, (a, b): (u64, u64), is_x: bool, bit: bool) -> (u128, u128) {
        let (fl, fh) = flip_probability(a, b);
        let one = match (sue, is_x) {
            (false, true) => (ONE_FX / 2, ONE_FX / 2),
            (true, true) => (ONE_FX - fh, ONE_FX - fl),
            (_, false) => (fl, fh),
        };
        if bit {
            one
        } else {
            (ONE_FX - one.1, ONE_FX - one.0)
        }
    }

    /// The whole report's law, exactly: every output vector of OUE and SUE over 4
    /// items (every true item), at ε = 1 and ε = 65535/65534, has the probability of
    /// the product of independent Bernoulli bits (p at the true item, q elsewhere),
    /// within the mass the search left undecided. The coins are composed from the
    /// exact round kernels over the buffer state, so a coin whose law depended on the
    /// buffer state it starts from (bits shared or reused between coins) would fail.
    #[test]
    fn exact_report_law_is_the_product_law() {
        const D: u32 = 4;
        let fair = fair_bit_kernel();
        for (sue, g) in unary_coins() {
            let k = round_kernel(&FlipCoin::new(g.0, g.1).unwrap());
            for x in 0..D {
                let lo = report_law(&k, &fair, sue, D, x, (1 << D) - 1);
                let deficit = ONE_FX - lo.iter().sum::<u128>();
                assert!(
                    deficit <= ONE_FX >> 12,
                    "sue {sue} γ {g:?}: slack {deficit}"
                );
                for (v, &l) in lo.iter().enumerate() {
                    let (mut pl, mut ph) = (ONE_FX, ONE_FX);
                    for i in 0..D {
                        let (bl, bh) = bit_bounds(sue, g, i == x, v >> i & 1 == 1);
                        pl = mul_lo(pl, bl);
                        ph = mul_hi(ph, bh);
                    }
                    assert!(
                        l <= ph && pl <= l + deficit,
                        "sue {sue} γ {g:?} x {x} v {v:04b}: [{l}, +{deficit}] vs [{pl}, {ph}]"
                    );
                }
            }
        }
    }

    /// The bit at the true item and the bit at position 0 are independent, exactly:
    /// their joint law (the other 10 bits of a 12-item report summed out; the true item
    /// drawn after 7 coins, so from any buffer state) is the product of its marginals,
    /// and the marginals are p and q, within the undecided mass.
    #[test]
    fn exact_true_bit_and_other_bit_are_independent() {
        const D: u32 = 12;
        const X: u32 = 7;
        let fair = fair_bit_kernel();
        for (sue, g) in unary_coins() {
            let k = round_kernel(&FlipCoin::new(g.0, g.1).unwrap());
            let lo = report_law(&k, &fair, sue, D, X, 1 | (1 << X));
            let deficit = ONE_FX - lo.iter().sum::<u128>();
            assert!(
                deficit <= ONE_FX >> 10,
                "sue {sue} γ {g:?}: slack {deficit}"
            );
            let joint = |a: bool, b: bool| lo[(usize::from(a) << X) | usize::from(b)];
            let mx = |a: bool| joint(a, false) + joint(a, true);
            let m0 = |b: bool| joint(false, b) + joint(true, b);
            for a in [false, true] {
                for b in [false, true] {
                    // Product of the marginals, each known within the deficit.
                    let pl = mul_lo(mx(a), m0(b));
                    let ph = mul_hi(mx(a) + deficit, m0(b) + deficit);
                    let j = joint(a, b);
                    assert!(
                        j <= ph && pl <= j + deficit,
                        "sue {sue} γ {g:?} (r_x, r_0) = ({a}, {b}): {j} vs [{pl}, {ph}]"
                    );
                    // And the product of the exact p and q.
                    let (xl, xh) = bit_bounds(sue, g, true, a);
                    let (ol, oh) = bit_bounds(sue, g, false, b);
                    assert!(j <= mul_hi(xh, oh) && mul_lo(xl, ol) <= j + deficit);
                }
            }
        }
    }
}

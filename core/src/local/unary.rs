//! Unary encoding: symmetric (SUE, basic one-time RAPPOR) and optimized (OUE).

use rand_core::{CryptoRng, Rng};

use super::{LocalRandomizer, Odds, QueryId, check_item, check_item_params};
use crate::epsilon::Epsilon;
use crate::error::{Error, Result};
use crate::report::{HEADER_LEN, Header, MechanismId};
use crate::sample::lazy::{Bits, FlipCoin, Words, WordsOf};

/// Which unary-encoding variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum UeVariant {
    /// Symmetric: the true bit is 1 with `p = e^{ε/2}/(e^{ε/2}+1)`, every other bit
    /// is 1 with `q = 1 − p` (basic one-time RAPPOR).
    Symmetric,
    /// Optimized (Wang et al. 2017): the true bit is 1 with `p = 1/2`, every other
    /// bit is 1 with `q = 1/(e^ε + 1)`.
    Optimized,
}

/// Unary encoding over items `0..d`: the device sends `d` bits, bit `x` for its
/// item and the others as noise, each bit drawn independently.
///
/// **Privacy.** Two inputs `x ≠ x′` change the distribution of bits `x` and `x′`
/// only, so the odds of any output are at most
/// `(p/q)·((1−q)/(1−p))`: `e^{ε/2}·e^{ε/2} = e^ε` for SUE and
/// `(1/2)/(1/(e^ε+1)) · (e^ε/(e^ε+1))/(1/2) = e^ε` for OUE.
/// **Sampling.** Each bit is the [`keep_with_odds`](super::keep_with_odds) coin with
/// `c = 1` at `γ = ε` (OUE) or `γ = ε/2` (SUE, exact since ε/2 is an exact rational),
/// or a fair coin (OUE's true bit): a noise bit is 1 ("flip") with probability exactly
/// `1/(1 + e^γ)`, SUE's true bit is 1 ("keep") with exactly `e^γ/(1 + e^γ)`.
///
/// **In bulk, exactly.** The `d` coins of a report share one buffer of random bits
/// instead of drawing whole 32-bit words per fair coin and per step of the
/// Bernoulli(e^{−γ}) loop: a fair coin is one bit, and the first steps of the
/// Canonne–Kamath–Steinke loop are decided together by comparing one uniform number
/// `U` (an 8-bit chunk, then single bits only on a tie) with the exact rationals
/// `γ^k/k!`, the loop's probabilities of reaching step `k + 1`, computed once in
/// [`UnaryEncoding::new`]. Why this is exact, with no rounding anywhere:
/// * `U < γ^k/k!` is decided for the real number `U` whose bits are read: a chunk
///   below (above) the threshold's first 8 binary digits is below (above) it
///   whatever bits follow; a tie (probability 2⁻⁸) reads further bits of `U` against
///   the threshold's digits, from exact integer long division, until they differ.
/// * The thresholds decrease in `k`, so the events `U < γ^k/k!` are nested and
///   `P[steps continued ≥ k] = γ^k/k!` exactly, as in the loop; past the last
///   tabulated step the plain loop runs on, with the same per-step probability `γ/k`.
///   So each Bernoulli(e^{−γ}) and hence each report bit has exactly today's
///   probability (the loop's proof: [`keep_with_odds`](super::keep_with_odds)).
/// * Every bit of the buffer comes from the generator and is used once; bits left in a
///   word are dropped, never reused. The coins are drawn in stream order, position 0
///   first: coin `i` reads the bits right after those coins `0..i` read or dropped.
///   Where it starts depends on the earlier outcomes, but the bits from there on are
///   i.i.d. uniform and independent of everything before, so coin `i` has its exact law
///   whatever the earlier coins were, and the `d` bits are independent given the input,
///   as before. (The loop draws a noise coin at every position; at the true item SUE
///   reports its complement, "keep", and OUE discards it and draws a fair coin from the
///   next fresh bit, after the last coin. A discarded coin changes no distribution.)
///
/// **Timing.** The work of a report is not constant: a noise coin that keeps reads one
/// bit, one that flips (or starts over) reads an 8-bit chunk and sometimes more, so the
/// time grows with the number of coins that came up "flip", i.e. with the set bits the
/// coins produced. What is data-independent: coins are drawn at all `d` positions, in
/// the same order and with the same law whatever the item `x`, and the true bit costs
/// the same for every `x` (SUE: a complement; OUE: one fresh bit); so the law of the
/// work alone is the same for every input. But the work is correlated with the coins,
/// and the coin at `x` is complemented (SUE) or replaced (OUE) in the report: the work
/// *together with* the report is not covered by the ε guarantee. For SUE the number of
/// "flip" coins is the report's set bits other than `x` plus `1 − r_x`; for OUE it is
/// the set bits other than `x` plus a discarded coin. So whoever receives a report
/// must not also be able to time its making (the privacy model's timing caveat).
///
/// The probabilities are unchanged; the way random words are consumed is not, so a
/// given seed gives other bits than before (about 16 words per 64-bit OUE report at
/// ε = 1 instead of about 140).
///
/// **Variance** (host): OUE `n·Var = 4e^ε/(e^ε−1)²`, SUE `e^{ε/2}/(e^{ε/2}−1)²` at `f → 0`.
/// **Report**: `12 + ⌈d/8⌉` bytes; OUE over 64 items is 20 bytes.
///
/// Flash cost (thumbv6m, measured by `tools/device-sizes.sh`): about 1 360 B (OUE over 64 items,
/// writing the payload).
///
/// ```
/// use privq_core::{Epsilon, local::{UeVariant, UnaryEncoding}};
/// use privq_core::rng::ChaCha12;
/// use rand_core::SeedableRng;
/// let mut rng = ChaCha12::from_seed([1; 32]); // tests only: a device seeds from its TRNG
/// let oue = UnaryEncoding::new(UeVariant::Optimized, Epsilon::new(1, 1)?, 64)?;
/// let mut bits = [0u8; 8];
/// oue.randomize_into(17, &mut rng, &mut bits)?;
/// # Ok::<(), privq_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct UnaryEncoding {
    variant: UeVariant,
    epsilon: Epsilon,
    /// ε for each bit's coin: ε/2 for SUE, ε for OUE.
    bit_epsilon: Epsilon,
    /// The coin `1/(1 + e^{bit_epsilon})`, its thresholds computed once.
    flip: FlipCoin,
    domain: u32,
}

impl UnaryEncoding {
    /// Unary encoding over `domain` items; [`Error::InvalidDomain`] unless
    /// `2 ≤ d ≤ 2³¹ − 2`.
    pub fn new(variant: UeVariant, epsilon: Epsilon, domain: u32) -> Result<UnaryEncoding> {
        check_item_params(epsilon, domain)?;
        let bit_epsilon = match variant {
            UeVariant::Symmetric => epsilon.checked_div_int(2)?,
            UeVariant::Optimized => epsilon,
        };
        Ok(UnaryEncoding {
            variant,
            epsilon,
            bit_epsilon,
            flip: FlipCoin::new(bit_epsilon.num(), bit_epsilon.den())?,
            domain,
        })
    }

    /// The variant.
    pub fn variant(&self) -> UeVariant {
        self.variant
    }

    /// The number of items `d`.
    pub fn domain(&self) -> u32 {
        self.domain
    }

    /// Bytes of the bit vector, `⌈d/8⌉`.
    pub fn bytes(&self) -> usize {
        (self.domain as usize).div_ceil(8)
    }

    /// Writes the `d` randomized bits for item `x` into `out[..⌈d/8⌉]`, least
    /// significant bit of byte 0 first, padding bits zero.
    pub fn randomize_into<R: Rng + ?Sized>(
        &self,
        x: u32,
        rng: &mut R,
        out: &mut [u8],
    ) -> Result<()> {
        check_item(x, self.domain)?;
        let out = out.get_mut(..self.bytes()).ok_or(Error::BufferTooSmall)?;
        let mut bits = Bits::new();
        // One copy of the coins for every generator type.
        let rng: &mut dyn Words = &mut WordsOf(rng);
        // Every bit is first drawn as a noise bit (1 on "flip"), with no per-bit test
        // of the position: one inlined copy of the coin, nothing else in the loop.
        let mut left = self.domain;
        for byte in out.iter_mut() {
            let mut acc = 0u8;
            for bit in 0..8 {
                if left == 0 {
                    break;
                }
                acc |= u8::from(self.flip.flip(&mut bits, rng)?) << bit;
                left -= 1;
            }
            *byte = acc;
        }
        // Then the true item's bit: SUE's is 1 on "keep", the complement of the coin
        // drawn there; OUE's is a fair coin from fresh bits, replacing the coin drawn
        // there (which is discarded, unused: the bits stay independent).
        let byte = out.get_mut((x / 8) as usize).ok_or(Error::BufferTooSmall)?;
        let mask = 1u8 << (x % 8);
        match self.variant {
            UeVariant::Symmetric => *byte ^= mask,
            UeVariant::Optimized => {
                *byte &= !mask;
                if bits.bit(rng) {
                    *byte |= mask;
                }
            }
        }
        Ok(())
    }

    /// Exact `P[bit i = b | input = x]`; bits are independent given `x`.
    pub fn bit_probability(&self, x: u32, i: u32, b: bool) -> Odds {
        let half = self.variant == UeVariant::Symmetric;
        let one = match (self.variant, i == x) {
            (UeVariant::Optimized, true) => Odds::linear([1, 0], [2, 0], false),
            (_, true) => Odds::linear([0, 1], [1, 1], half),
            (_, false) => Odds::linear([1, 0], [1, 1], half),
        };
        if b {
            one
        } else {
            // 1 − N/D = (D − N)/D, coefficient-wise (N ≤ D coefficient-wise here).
            Odds {
                num: [
                    one.den[0] - one.num[0],
                    one.den[1] - one.num[1],
                    one.den[2] - one.num[2],
                ],
                ..one
            }
        }
    }
}

impl LocalRandomizer for UnaryEncoding {
    type Input = u32;

    fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    fn header(&self, query: QueryId) -> Header {
        Header {
            mechanism: match self.variant {
                UeVariant::Symmetric => MechanismId::Sue,
                UeVariant::Optimized => MechanismId::Oue,
            },
            query,
            epsilon: self.epsilon,
            param: self.domain,
        }
    }

    fn report_len(&self) -> usize {
        HEADER_LEN + self.bytes()
    }

    fn validate(&self, input: &u32) -> Result<()> {
        check_item(*input, self.domain)
    }

    fn write_payload<R: Rng + CryptoRng + ?Sized>(
        &self,
        input: &u32,
        rng: &mut R,
        payload: &mut [u8],
    ) -> Result<()> {
        self.validate(input)?;
        self.randomize_into(*input, rng, payload)
    }
}

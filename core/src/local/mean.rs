//! One-bit mean estimation (Ding, Kulkarni, Yekhanin 2017, "1BitMean").

use rand_core::{CryptoRng, Rng};

use super::{LocalRandomizer, Odds, QueryId, mixture_bit};
use crate::epsilon::Epsilon;
use crate::error::{Error, Result};
use crate::fixed::Fixed;
use crate::report::{HEADER_LEN, Header, MechanismId, check_encodable};

/// 1BitMean: a reading `x ∈ [0, m]` is released as one bit, 1 with probability
/// `1/(e^ε+1) + (x/m)·(e^ε−1)/(e^ε+1)`.
///
/// **Privacy.** `P[1] ∈ [1/(e^ε+1), e^ε/(e^ε+1)]` for every `x`: odds at most `e^ε`.
/// **Sampling.** `P[1] = (1 − x/m)·1/(e^ε+1) + (x/m)·e^ε/(e^ε+1)`: draw
/// `s ~ Bernoulli(x/m)` exactly on the fixed-point representation, then binary
/// randomized response of `s` ([`mixture_bit`]).
/// **Estimation** (host): `σ̂ = (m/n)·Σ (bᵢ(e^ε+1) − 1)/(e^ε−1)`, unbiased; Hoeffding
/// gives `|σ̂ − σ| ≤ m·(e^ε+1)/(e^ε−1)·√(ln(2/β)/(2n))` with probability `1 − β`.
/// **Report**: 13 bytes. The bound `m` is a positive integer below 2³¹.
///
/// ```
/// use privq_core::{Epsilon, Fixed, local::OneBitMean};
/// use privq_core::rng::ChaCha12;
/// use rand_core::SeedableRng;
/// let mut rng = ChaCha12::from_seed([1; 32]); // tests only: a device seeds from its TRNG
/// let mech = OneBitMean::new(Epsilon::new(1, 1)?, 50)?;
/// let _bit = mech.randomize("21.5".parse()?, &mut rng)?;
/// assert!(mech.randomize(Fixed::from_int(51), &mut rng).is_err());
/// # Ok::<(), privq_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct OneBitMean {
    epsilon: Epsilon,
    bound: u32,
}

impl OneBitMean {
    /// Values in `[0, bound]`; [`Error::InvalidDomain`] unless `1 ≤ bound < 2³¹`.
    pub fn new(epsilon: Epsilon, bound: u32) -> Result<OneBitMean> {
        check_encodable(epsilon)?;
        if bound == 0 || bound > i32::MAX as u32 {
            return Err(Error::InvalidDomain);
        }
        Ok(OneBitMean { epsilon, bound })
    }

    /// The range bound `m`.
    pub fn bound(&self) -> u32 {
        self.bound
    }

    fn fraction(&self, x: Fixed) -> Result<(u64, u64)> {
        let m = u64::from(self.bound) << Fixed::FRAC_BITS;
        let bits = u64::try_from(x.to_bits()).map_err(|_| Error::OutOfRange)?;
        if bits > m {
            return Err(Error::OutOfRange);
        }
        Ok((bits, m))
    }

    /// The released bit; [`Error::OutOfRange`] for `x ∉ [0, m]`.
    pub fn randomize<R: Rng + ?Sized>(&self, x: Fixed, rng: &mut R) -> Result<bool> {
        let (num, den) = self.fraction(x)?;
        mixture_bit(num, den, self.epsilon, rng)
    }

    /// Exact `P[output = b | input = x]`.
    pub fn probability(&self, x: Fixed, b: bool) -> Result<Odds> {
        let (num, den) = self.fraction(x)?;
        let (num, den) = (u128::from(num), u128::from(den));
        Ok(if b {
            Odds::linear([den - num, num], [den, den], false)
        } else {
            Odds::linear([num, den - num], [den, den], false)
        })
    }
}

impl LocalRandomizer for OneBitMean {
    type Input = Fixed;

    fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    fn header(&self, query: QueryId) -> Header {
        Header {
            mechanism: MechanismId::OneBitMean,
            query,
            epsilon: self.epsilon,
            param: self.bound,
        }
    }

    fn report_len(&self) -> usize {
        HEADER_LEN + 1
    }

    fn validate(&self, input: &Fixed) -> Result<()> {
        self.fraction(*input).map(|_| ())
    }

    fn write_payload<R: Rng + CryptoRng + ?Sized>(
        &self,
        input: &Fixed,
        rng: &mut R,
        payload: &mut [u8],
    ) -> Result<()> {
        let bit = self.randomize(*input, rng)?;
        *payload.first_mut().ok_or(Error::BufferTooSmall)? = u8::from(bit);
        Ok(())
    }
}

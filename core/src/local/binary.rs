//! Binary randomized response.

use rand_core::{CryptoRng, Rng};

use super::{LocalRandomizer, Odds, QueryId, keep_with_odds};
use crate::epsilon::Epsilon;
use crate::error::{Error, Result};
use crate::report::{HEADER_LEN, Header, MechanismId, check_encodable};

/// Binary randomized response (Warner 1965): report the true bit with probability
/// `e^ε/(e^ε + 1)`, the other bit otherwise.
///
/// **Privacy.** `P[y = x] / P[y ≠ x] = e^ε` exactly, so every output's odds between
/// the two inputs are at most `e^ε`. **Sampling.** [`keep_with_odds`] with `c = 1`:
/// the fair-coin loop. **Report**: 13 bytes.
///
/// ```
/// use privq_core::{Epsilon, local::BinaryRr};
/// use privq_core::rng::ChaCha12;
/// use rand_core::SeedableRng;
/// let mut rng = ChaCha12::from_seed([1; 32]); // tests only: a device seeds from its TRNG
/// let rr = BinaryRr::new(Epsilon::new(1, 2)?)?;
/// let _released: bool = rr.randomize(true, &mut rng)?;
/// # Ok::<(), privq_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BinaryRr {
    epsilon: Epsilon,
}

impl BinaryRr {
    /// Randomized response at ε; [`Error::NotEncodable`] when ε's reduced fraction
    /// does not fit the report header (16-bit numerator and denominator).
    pub const fn new(epsilon: Epsilon) -> Result<BinaryRr> {
        match check_encodable(epsilon) {
            Ok(()) => Ok(BinaryRr { epsilon }),
            Err(e) => Err(e),
        }
    }

    /// The released bit.
    pub fn randomize<R: Rng + ?Sized>(&self, x: bool, rng: &mut R) -> Result<bool> {
        Ok(if keep_with_odds(self.epsilon, 1, rng)? {
            x
        } else {
            !x
        })
    }

    /// Exact `P[output = y | input = x]`.
    pub fn probability(&self, x: bool, y: bool) -> Odds {
        if x == y {
            Odds::linear([0, 1], [1, 1], false)
        } else {
            Odds::linear([1, 0], [1, 1], false)
        }
    }
}

impl LocalRandomizer for BinaryRr {
    type Input = bool;

    fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    fn header(&self, query: QueryId) -> Header {
        Header {
            mechanism: MechanismId::BinaryRr,
            query,
            epsilon: self.epsilon,
            param: 2,
        }
    }

    fn report_len(&self) -> usize {
        HEADER_LEN + 1
    }

    fn validate(&self, _input: &bool) -> Result<()> {
        Ok(())
    }

    fn write_payload<R: Rng + CryptoRng + ?Sized>(
        &self,
        input: &bool,
        rng: &mut R,
        payload: &mut [u8],
    ) -> Result<()> {
        let bit = self.randomize(*input, rng)?;
        *payload.first_mut().ok_or(Error::BufferTooSmall)? = u8::from(bit);
        Ok(())
    }
}

//! k-ary (generalized) randomized response.

use rand_core::{CryptoRng, Rng};

use super::{LocalRandomizer, Odds, QueryId, check_item, check_item_params, keep_with_odds};
use crate::epsilon::Epsilon;
use crate::error::Result;
use crate::report::{HEADER_LEN, Header, MechanismId, index_width, put_index};
use crate::sample::uniform_below;

/// k-ary randomized response (GRR, "direct encoding") over items `0..d`.
///
/// Report the true item with probability `p = e^ε/(e^ε + d − 1)`, otherwise one of
/// the other `d − 1` items uniformly, each with `q = 1/(e^ε + d − 1)`.
///
/// **Privacy.** Every output has probability `p` or `q` under any input and
/// `p/q = e^ε`. **Sampling.** [`keep_with_odds`] with `c = d − 1` decides "keep"
/// with exactly `p`; the replacement is `uniform_below(d − 1)` shifted past the
/// true item. **Variance** of the unbiased frequency estimate (host):
/// `n·Var = (e^ε + d − 2)/(e^ε − 1)²` at `f → 0`.
///
/// Flash cost (thumbv6m, measured by `tools/device-sizes.sh`): about 2 720 B (64 items, writing the
/// payload), of which about 1.9 KB is exact ε arithmetic and 64-bit division that the
/// [`Ledger`](crate::ledger::Ledger) links too: about 840 B in a path with the ledger.
///
/// ```
/// use privq_core::{Epsilon, local::Grr};
/// use privq_core::rng::ChaCha12;
/// use rand_core::SeedableRng;
/// let mut rng = ChaCha12::from_seed([1; 32]); // tests only: a device seeds from its TRNG
/// let grr = Grr::new(Epsilon::new(2, 1)?, 5)?;
/// assert!(grr.randomize(4, &mut rng)? < 5);
/// assert!(grr.randomize(5, &mut rng).is_err());
/// # Ok::<(), privq_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Grr {
    epsilon: Epsilon,
    domain: u32,
}

impl Grr {
    /// GRR over `domain` items; [`crate::Error::InvalidDomain`] unless `2 ≤ d ≤ 2³¹ − 2`.
    pub const fn new(epsilon: Epsilon, domain: u32) -> Result<Grr> {
        match check_item_params(epsilon, domain) {
            Ok(()) => Ok(Grr { epsilon, domain }),
            Err(e) => Err(e),
        }
    }

    /// The number of items `d`.
    pub fn domain(&self) -> u32 {
        self.domain
    }

    /// The released item.
    pub fn randomize<R: Rng + ?Sized>(&self, x: u32, rng: &mut R) -> Result<u32> {
        check_item(x, self.domain)?;
        grr_core(self.epsilon, self.domain, x, rng)
    }

    /// Exact `P[output = y | input = x]`.
    pub fn probability(&self, x: u32, y: u32) -> Odds {
        let c = u128::from(self.domain - 1);
        if x == y {
            Odds::linear([0, 1], [c, 1], false)
        } else {
            Odds::linear([1, 0], [c, 1], false)
        }
    }
}

/// GRR on `0..k` for an already validated `x < k`, `k ≥ 2`.
pub(crate) fn grr_core<R: Rng + ?Sized>(
    epsilon: Epsilon,
    k: u32,
    x: u32,
    rng: &mut R,
) -> Result<u32> {
    let others = u64::from(k) - 1;
    if keep_with_odds(epsilon, others, rng)? {
        return Ok(x);
    }
    // Below k − 1 ≤ u32::MAX: exact.
    let y = uniform_below(others, rng)? as u32;
    Ok(if y >= x { y + 1 } else { y })
}

impl LocalRandomizer for Grr {
    type Input = u32;

    fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    fn header(&self, query: QueryId) -> Header {
        Header {
            mechanism: MechanismId::Grr,
            query,
            epsilon: self.epsilon,
            param: self.domain,
        }
    }

    fn report_len(&self) -> usize {
        HEADER_LEN + index_width(u64::from(self.domain))
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
        let y = self.randomize(*input, rng)?;
        put_index(y, u64::from(self.domain), payload).map(drop)
    }
}

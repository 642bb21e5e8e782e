//! Optimized local hashing (OLH).

use rand_core::{CryptoRng, Rng};

use super::grr::grr_core;
use super::{LocalRandomizer, Odds, QueryId, UniversalHash, check_item, check_item_params};
use crate::epsilon::Epsilon;
use crate::error::{Error, Result};
use crate::report::{HEADER_LEN, Header, MechanismId, index_width, put_index};

/// One local-hashing report: the public hash seed, the bucket count `g` and the
/// randomized bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct OlhOutput {
    /// The hash function the device drew.
    pub hash: UniversalHash,
    /// Number of buckets.
    pub g: u16,
    /// The reported bucket, `< g`.
    pub value: u32,
}

impl OlhOutput {
    /// Whether this report "supports" item `v`: `h(v) = value`.
    #[inline]
    pub fn supports(&self, v: u32) -> bool {
        self.hash.hash(v, u32::from(self.g)) == self.value
    }
}

/// Optimized local hashing (Wang et al. 2017): hash the item into `g` buckets with
/// a freshly drawn [`UniversalHash`], then report the bucket through `g`-ary
/// randomized response.
///
/// **Privacy.** The seed is drawn independently of the item, and given the seed
/// the bucket is GRR over `g` values: every output has probability
/// `P[seed]·e^ε/(e^ε+g−1)` or `P[seed]·1/(e^ε+g−1)`, odds at most `e^ε`.
/// **Sampling.** [`UniversalHash::random`] (uniform integers) and the exact GRR loop.
/// **Estimation** (host): an item `v ≠ x` is supported with `q = 1/g` (up to the
/// hash's `1/P` bucket bias), the true item with `p = e^ε/(e^ε+g−1)`; with the
/// optimal `g = round(e^ε) + 1`, `n·Var ≈ 4e^ε/(e^ε−1)²` at `f → 0`.
/// `g` only affects utility, so choosing it with floating point is harmless.
/// **Report**: `12 + 2 (g) + 8 (seed) + 1 or 2 (bucket)` bytes: 23 for `g ≤ 256`.
///
/// ```
/// use privq_core::{Epsilon, local::Olh};
/// use privq_core::rng::ChaCha12;
/// use rand_core::SeedableRng;
/// let mut rng = ChaCha12::from_seed([1; 32]); // tests only: a device seeds from its TRNG
/// let olh = Olh::new(Epsilon::new(2, 1)?, 1024)?;
/// assert_eq!(olh.g(), 8); // round(e²) + 1
/// let out = olh.randomize(77, &mut rng)?;
/// assert!(out.value < 8);
/// # Ok::<(), privq_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Olh {
    epsilon: Epsilon,
    domain: u32,
    g: u16,
}

impl Olh {
    /// OLH with the optimal `g = round(e^ε) + 1` (capped at 65535).
    pub fn new(epsilon: Epsilon, domain: u32) -> Result<Olh> {
        let e = libm::exp(epsilon.to_f64());
        let g = libm::round(e) + 1.0;
        let g = if g >= 65535.0 { 65535 } else { g as u16 };
        Olh::with_buckets(epsilon, domain, g)
    }

    /// OLH with an explicit bucket count `g ≥ 2`.
    pub fn with_buckets(epsilon: Epsilon, domain: u32, g: u16) -> Result<Olh> {
        check_item_params(epsilon, domain)?;
        if g < 2 {
            return Err(Error::InvalidDomain);
        }
        Ok(Olh { epsilon, domain, g })
    }

    /// The number of items `d`.
    pub fn domain(&self) -> u32 {
        self.domain
    }

    /// The number of hash buckets `g`.
    pub fn g(&self) -> u16 {
        self.g
    }

    /// Draws a seed, hashes `x` and randomizes the bucket.
    pub fn randomize<R: Rng + ?Sized>(&self, x: u32, rng: &mut R) -> Result<OlhOutput> {
        check_item(x, self.domain)?;
        let hash = UniversalHash::random(rng)?;
        let bucket = hash.hash(x, u32::from(self.g));
        let value = grr_core(self.epsilon, u32::from(self.g), bucket, rng)?;
        Ok(OlhOutput {
            hash,
            g: self.g,
            value,
        })
    }

    /// Exact `P[bucket = y | seed, input = x]` given the hash value `h(x)`.
    pub fn probability(&self, hashed: u32, y: u32) -> Odds {
        let c = u128::from(self.g) - 1;
        if hashed == y {
            Odds::linear([0, 1], [c, 1], false)
        } else {
            Odds::linear([1, 0], [c, 1], false)
        }
    }
}

impl LocalRandomizer for Olh {
    type Input = u32;

    fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    fn header(&self, query: QueryId) -> Header {
        Header {
            mechanism: MechanismId::Olh,
            query,
            epsilon: self.epsilon,
            param: self.domain,
        }
    }

    fn report_len(&self) -> usize {
        HEADER_LEN + 10 + index_width(u64::from(self.g))
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
        let o = self.randomize(*input, rng)?;
        let (a, b) = o.hash.parts();
        let [g0, g1] = o.g.to_le_bytes();
        let [a0, a1, a2, a3] = a.to_le_bytes();
        let [b0, b1, b2, b3] = b.to_le_bytes();
        let fixed = [g0, g1, a0, a1, a2, a3, b0, b1, b2, b3];
        payload
            .get_mut(..10)
            .ok_or(Error::BufferTooSmall)?
            .copy_from_slice(&fixed);
        put_index(
            o.value,
            u64::from(o.g),
            payload.get_mut(10..).ok_or(Error::BufferTooSmall)?,
        )
        .map(drop)
    }
}

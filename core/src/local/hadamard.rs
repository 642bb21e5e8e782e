//! Hadamard response: one index per report, for large domains.

use rand_core::{CryptoRng, Rng};

use super::{LocalRandomizer, Odds, QueryId, check_item, check_item_params, keep_with_odds};
use crate::epsilon::Epsilon;
use crate::error::{Error, Result};
use crate::report::{HEADER_LEN, Header, MechanismId, hadamard_order, index_width, put_index};
use crate::sample::uniform_below;

/// Hadamard response (Acharya, Sun, Zhang 2019) over items `0..d`.
///
/// Let `K = 2^⌈log₂(d+1)⌉` and `H` the `K×K` Sylvester–Hadamard matrix,
/// `H[r][j] = (−1)^{popcount(r & j)}`. Item `x` owns the half
/// `C_x = {j : H[x+1][j] = +1}` of the indices (row 0 is skipped, so every `C_x` is
/// exactly half). The device reports an index uniform in `C_x` with probability
/// `e^ε/(e^ε+1)` and uniform in its complement otherwise.
///
/// **Privacy.** Each index has probability `2e^ε/(K(e^ε+1))` or `2/(K(e^ε+1))`
/// under any input: odds at most `e^ε`. **Sampling.** [`keep_with_odds`] (`c = 1`)
/// picks the half; a uniform index `j < K` is moved into that half, when needed,
/// by flipping the bit at the lowest set bit of `x + 1`, a bijection between the
/// halves, so the result is exactly uniform on the chosen half.
/// **Estimation** (host): `P[j ∈ C_v]` is `p = e^ε/(e^ε+1)` for the true item and
/// exactly `1/2` for every other (rows of `H` are orthogonal), so it is a pure
/// protocol with `q = 1/2`; all `d` support counts come from one fast
/// Walsh–Hadamard transform of the index histogram.
/// **Report**: `12 + index_width(K)` bytes: 14 for `d = 1024` (`K = 2048`).
///
/// ```
/// use privq_core::{Epsilon, local::HadamardResponse};
/// use privq_core::rng::ChaCha12;
/// use rand_core::SeedableRng;
/// let mut rng = ChaCha12::from_seed([1; 32]); // tests only: a device seeds from its TRNG
/// let hr = HadamardResponse::new(Epsilon::new(1, 1)?, 1024)?;
/// assert_eq!(hr.order(), 2048);
/// assert!(hr.randomize(5, &mut rng)? < 2048);
/// # Ok::<(), privq_core::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HadamardResponse {
    epsilon: Epsilon,
    domain: u32,
}

impl HadamardResponse {
    /// Hadamard response over `domain` items, `2 ≤ d ≤ 2³¹ − 2`.
    pub fn new(epsilon: Epsilon, domain: u32) -> Result<HadamardResponse> {
        check_item_params(epsilon, domain)?;
        Ok(HadamardResponse { epsilon, domain })
    }

    /// The number of items `d`.
    pub fn domain(&self) -> u32 {
        self.domain
    }

    /// The matrix order `K` (outputs are below `K`).
    pub fn order(&self) -> u64 {
        hadamard_order(self.domain)
    }

    /// Whether index `j` lies in item `x`'s half `C_x`.
    #[inline]
    pub fn in_half(x: u32, j: u64) -> bool {
        ((u64::from(x) + 1) & j).count_ones().is_multiple_of(2)
    }

    /// The released index.
    pub fn randomize<R: Rng + ?Sized>(&self, x: u32, rng: &mut R) -> Result<u32> {
        check_item(x, self.domain)?;
        let row = u64::from(x) + 1;
        let want_own_half = keep_with_odds(self.epsilon, 1, rng)?;
        let mut j = uniform_below(self.order(), rng)?;
        if Self::in_half(x, j) != want_own_half {
            j ^= 1 << row.trailing_zeros();
        }
        // j < K ≤ 2^31.
        u32::try_from(j).map_err(|_| Error::Overflow)
    }

    /// Exact `P[output = j | input = x]`.
    pub fn probability(&self, x: u32, j: u64) -> Odds {
        let k = u128::from(self.order());
        if Self::in_half(x, j) {
            Odds::linear([0, 2], [k, k], false)
        } else {
            Odds::linear([2, 0], [k, k], false)
        }
    }
}

impl LocalRandomizer for HadamardResponse {
    type Input = u32;

    fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    fn header(&self, query: QueryId) -> Header {
        Header {
            mechanism: MechanismId::Hadamard,
            query,
            epsilon: self.epsilon,
            param: self.domain,
        }
    }

    fn report_len(&self) -> usize {
        HEADER_LEN + index_width(self.order())
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
        let j = self.randomize(*input, rng)?;
        put_index(j, self.order(), payload).map(drop)
    }
}

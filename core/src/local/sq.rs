//! The device side of the local statistical-query (SQ) oracle.
//!
//! A statistical query maps a device's record to `[0, 1]` ([`UnitValue`]); the
//! host wants the fleet average. The device answers one query with one report:
//!
//! * [`SqBit`]: one randomized-response bit with
//!   `P[1] = (1 − p) + q(x)(2p − 1)`, `p = e^ε/(e^ε+1)`, sampled exactly;
//! * [`SqLaplace`]: `q(x)` plus discrete Laplace noise on a power-of-two grid
//!   (sensitivity 1, since `q(x) ∈ [0, 1]`).
//!
//! [`StatQuery`] turns a record into `q(x)`; [`BinRange`] answers "which fraction
//! of my readings fell in bins `lo..hi`" about a device's [`Histogram`].
//!
//! ```
//! use privq_core::histogram::Histogram;
//! use privq_core::local::{sq::{BinRange, StatQuery}, LocalRandomizer, QueryId, SqBit};
//! use privq_core::Epsilon;
//! use privq_core::rng::ChaCha12;
//! use rand_core::SeedableRng;
//!
//! let mut h = Histogram::<8>::categorical()?;
//! for bin in [1, 2, 2, 7] { h.record_index(bin)?; }
//! let q = BinRange::new(2, 8)?.evaluate(&h)?;         // 3 of 4 readings
//! assert_eq!(q.to_bits(), 3 << 30);
//! let mut rng = ChaCha12::from_seed([1; 32]); // tests only: a device seeds from its TRNG
//! let mut buf = [0u8; 13];
//! SqBit::new(Epsilon::new(1, 1)?)?.privatize_into(&q, QueryId(4), &mut rng, &mut buf)?;
//! # Ok::<(), privq_core::Error>(())
//! ```

use rand_core::{CryptoRng, Rng};

use super::{LocalRandomizer, Odds, QueryId, mixture_bit};
use crate::epsilon::Epsilon;
use crate::error::{Error, Result};
use crate::fixed::Fixed;
use crate::grid::GridLaplace;
use crate::histogram::Histogram;
use crate::report::{HEADER_LEN, Header, MechanismId, check_encodable};

/// `2^32`, the fixed-point one.
const ONE_BITS: u64 = 1 << 32;

/// A fixed-point value in `[0, 1]` (units of 2⁻³²): the answer of a statistical
/// query on one record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct UnitValue(u64);

impl UnitValue {
    /// Zero.
    pub const ZERO: UnitValue = UnitValue(0);
    /// One.
    pub const ONE: UnitValue = UnitValue(ONE_BITS);

    /// From units of 2⁻³²; [`Error::OutOfRange`] above 2³².
    pub fn from_bits(bits: u64) -> Result<UnitValue> {
        if bits > ONE_BITS {
            return Err(Error::OutOfRange);
        }
        Ok(UnitValue(bits))
    }

    /// `⌊num/den · 2³²⌋ / 2³²` for `num ≤ den`.
    pub fn from_fraction(num: u64, den: u64) -> Result<UnitValue> {
        if den == 0 {
            return Err(Error::ZeroDenominator);
        }
        if num > den {
            return Err(Error::OutOfRange);
        }
        let bits = (u128::from(num) << 32) / u128::from(den);
        UnitValue::from_bits(u64::try_from(bits).map_err(|_| Error::Overflow)?)
    }

    /// From a fixed-point number in `[0, 1]`.
    pub fn from_fixed(x: Fixed) -> Result<UnitValue> {
        UnitValue::from_bits(u64::try_from(x.to_bits()).map_err(|_| Error::OutOfRange)?)
    }

    /// Units of 2⁻³².
    pub const fn to_bits(self) -> u64 {
        self.0
    }

    /// As a fixed-point number.
    pub fn to_fixed(self) -> Fixed {
        // ≤ 2^32 < i64::MAX.
        Fixed::from_bits(self.0 as i64)
    }
}

/// A statistical query over records of type `T`.
pub trait StatQuery<T: ?Sized> {
    /// `q(record) ∈ [0, 1]`.
    fn evaluate(&self, record: &T) -> Result<UnitValue>;
}

/// The fraction of a histogram's readings in bins `lo..hi` (0 for an empty
/// histogram).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BinRange {
    lo: usize,
    hi: usize,
}

impl BinRange {
    /// Bins `lo..hi`; [`Error::EmptyRange`] when `lo ≥ hi`.
    pub fn new(lo: usize, hi: usize) -> Result<BinRange> {
        if lo >= hi {
            return Err(Error::EmptyRange);
        }
        Ok(BinRange { lo, hi })
    }
}

impl<const BINS: usize> StatQuery<Histogram<BINS>> for BinRange {
    fn evaluate(&self, h: &Histogram<BINS>) -> Result<UnitValue> {
        if self.hi > BINS {
            return Err(Error::BinOutOfRange);
        }
        let counts = h
            .counts()
            .get(self.lo..self.hi)
            .ok_or(Error::BinOutOfRange)?;
        let inside: u64 = counts.iter().map(|&c| u64::from(c)).sum();
        let total = h.total();
        if total == 0 {
            return Ok(UnitValue::ZERO);
        }
        UnitValue::from_fraction(inside, total)
    }
}

/// The SQ oracle's randomized-response answer: one bit,
/// `P[1] = (1 − p) + q(x)(2p − 1)` with `p = e^ε/(e^ε + 1)`.
///
/// **Privacy.** `P[1] ∈ [1 − p, p]` for every record: odds at most `e^ε`.
/// **Sampling.** [`mixture_bit`]: Bernoulli(q(x)) exactly, then the fair-coin loop.
/// **Report**: 13 bytes (parameter 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SqBit {
    epsilon: Epsilon,
}

impl SqBit {
    /// The bit responder at ε.
    pub fn new(epsilon: Epsilon) -> Result<SqBit> {
        check_encodable(epsilon)?;
        Ok(SqBit { epsilon })
    }

    /// The answer bit for `q(x)`.
    pub fn randomize<R: Rng + ?Sized>(&self, q: UnitValue, rng: &mut R) -> Result<bool> {
        mixture_bit(q.to_bits(), ONE_BITS, self.epsilon, rng)
    }

    /// Exact `P[output = b | q(x) = q]`.
    pub fn probability(&self, q: UnitValue, b: bool) -> Odds {
        let (num, den) = (u128::from(q.to_bits()), u128::from(ONE_BITS));
        if b {
            Odds::linear([den - num, num], [den, den], false)
        } else {
            Odds::linear([num, den - num], [den, den], false)
        }
    }
}

impl LocalRandomizer for SqBit {
    type Input = UnitValue;

    fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    fn header(&self, query: QueryId) -> Header {
        Header {
            mechanism: MechanismId::SqBit,
            query,
            epsilon: self.epsilon,
            param: 0,
        }
    }

    fn report_len(&self) -> usize {
        HEADER_LEN + 1
    }

    fn validate(&self, _input: &UnitValue) -> Result<()> {
        Ok(())
    }

    fn write_payload<R: Rng + CryptoRng + ?Sized>(
        &self,
        input: &UnitValue,
        rng: &mut R,
        payload: &mut [u8],
    ) -> Result<()> {
        let bit = self.randomize(*input, rng)?;
        *payload.first_mut().ok_or(Error::BufferTooSmall)? = u8::from(bit);
        Ok(())
    }
}

/// The SQ oracle's Laplace answer: `q(x)` plus grid-Laplace noise with
/// sensitivity 1 ([`GridLaplace`], exact discrete Laplace on the grid `2^k`).
///
/// **Privacy.** `q(x) ∈ [0, 1]`, so any two records' answers differ by at most
/// the sensitivity 1: the grid Laplace mechanism's ε-DP guarantee is ε-LDP here.
/// **Report**: 20 bytes (parameter = grid exponent `k`; payload the fixed-point value).
#[derive(Debug, Clone)]
pub struct SqLaplace {
    mech: GridLaplace,
}

impl SqLaplace {
    /// Default grid `2^{−10}`.
    pub fn new(epsilon: Epsilon) -> Result<SqLaplace> {
        SqLaplace::with_grid(epsilon, -10)
    }

    /// Grid `2^grid_exp`, `grid_exp ∈ [−32, 0]`.
    pub fn with_grid(epsilon: Epsilon, grid_exp: i32) -> Result<SqLaplace> {
        check_encodable(epsilon)?;
        if grid_exp > 0 {
            return Err(Error::GridOutOfRange);
        }
        Ok(SqLaplace {
            mech: GridLaplace::with_grid(Fixed::ONE, epsilon, grid_exp)?,
        })
    }

    /// The underlying grid mechanism (noise scale, grid).
    pub fn mechanism(&self) -> &GridLaplace {
        &self.mech
    }

    /// The noisy answer.
    pub fn randomize<R: Rng + CryptoRng + ?Sized>(
        &self,
        q: UnitValue,
        rng: &mut R,
    ) -> Result<Fixed> {
        self.mech.release(q.to_fixed(), rng)
    }
}

impl LocalRandomizer for SqLaplace {
    type Input = UnitValue;

    fn epsilon(&self) -> Epsilon {
        self.mech.epsilon()
    }

    fn header(&self, query: QueryId) -> Header {
        Header {
            mechanism: MechanismId::SqLaplace,
            query,
            epsilon: self.mech.epsilon(),
            // Two's complement of the (negative or zero) exponent.
            param: self.mech.grid_exp() as u32,
        }
    }

    fn report_len(&self) -> usize {
        HEADER_LEN + 8
    }

    fn validate(&self, _input: &UnitValue) -> Result<()> {
        Ok(())
    }

    fn write_payload<R: Rng + CryptoRng + ?Sized>(
        &self,
        input: &UnitValue,
        rng: &mut R,
        payload: &mut [u8],
    ) -> Result<()> {
        let value = self.randomize(*input, rng)?;
        payload
            .get_mut(..8)
            .ok_or(Error::BufferTooSmall)?
            .copy_from_slice(&value.to_bits().to_le_bytes());
        Ok(())
    }
}

//! Local differential privacy: randomizers that run on the device.
//!
//! Each randomizer turns one private input into a report that is ε-locally
//! differentially private: for every pair of inputs `x, x′` and every output `o`,
//! `P[o | x] ≤ e^ε · P[o | x′]`. Every random choice is drawn exactly with integer
//! arithmetic (`docs/src/design.md`): the probabilities below are exact, not
//! approximations, and [`Odds`] exposes each randomizer's output probabilities as
//! exact rational functions of `e^ε` so tests can check the privacy ratio exactly.
//!
//! | randomizer | input | output | report bytes (see `docs/src/report-format.md`) |
//! |---|---|---|---|
//! | [`BinaryRr`] | `bool` | `bool` | 13 |
//! | [`Grr`] (k-ary RR) | item `< d` | item `< d` | 12 + 1/2/4 |
//! | [`UnaryEncoding`] SUE / OUE | item `< d` | `d` bits | 12 + ⌈d/8⌉ |
//! | [`Olh`] | item `< d` | hash seed + value `< g` | 12 + 10 + 1/2/4 |
//! | [`HadamardResponse`] | item `< d` | index `< K` | 12 + 1/2/4 |
//! | [`OneBitMean`] | value in `[0, m]` | `bool` | 13 |
//! | [`SqBit`] / [`SqLaplace`] | statistical query answer in `[0, 1]` | `bool` / fixed-point | 13 / 20 |
//!
//! The shared building block is the exact "keep with odds" coin ([`keep_with_odds`]):
//! `true` with probability exactly `e^ε / (e^ε + c)` for an integer `c ≥ 1`.
//!
//! A device spends its lifetime budget through [`Ledger::release`](crate::ledger::Ledger::release),
//! which debits first and then calls a [`LocalRandomizer`] to write the report.
//!
//! ```
//! use privq_core::local::{Grr, LocalRandomizer, QueryId};
//! use privq_core::Epsilon;
//! use privq_core::rng::ChaCha12;
//! use rand_core::SeedableRng;
//!
//! let mut rng = ChaCha12::from_seed([1; 32]); // tests only: a device seeds from its TRNG
//! let grr = Grr::new(Epsilon::new(1, 1)?, 10)?;
//! let mut buf = [0u8; 32];
//! let n = grr.privatize_into(&3, QueryId(7), &mut rng, &mut buf)?;
//! assert_eq!(n, grr.report_len());
//! assert_eq!(n, 13);
//! # Ok::<(), privq_core::Error>(())
//! ```

mod binary;
mod grr;
mod hadamard;
mod hash;
mod keep;
mod mean;
mod odds;
mod olh;
pub mod sq;
mod unary;

pub use binary::BinaryRr;
pub use grr::Grr;
pub use hadamard::HadamardResponse;
pub use hash::UniversalHash;
pub use keep::{keep_with_odds, mixture_bit};
pub use mean::OneBitMean;
pub use odds::Odds;
pub use olh::{Olh, OlhOutput};
pub use sq::{SqBit, SqLaplace, UnitValue};
pub use unary::{UeVariant, UnaryEncoding};

use rand_core::{CryptoRng, Rng};

use crate::epsilon::Epsilon;
use crate::error::{Error, Result};
use crate::report::{HEADER_LEN, Header, encode_header};

/// A device-chosen identifier carried in every report: which statistical query,
/// collection round or parameter epoch the report answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QueryId(pub u16);

/// A local randomizer that writes its reports in the wire format of
/// [`report`](crate::report).
///
/// Implementations validate the input **before** drawing any randomness, so
/// [`Ledger::release`](crate::ledger::Ledger::release) can check the input, debit
/// the budget, and only then randomize.
pub trait LocalRandomizer {
    /// The private input (an item index, a bit, a reading, …).
    type Input: ?Sized;

    /// The privacy parameter ε of one report.
    fn epsilon(&self) -> Epsilon;

    /// The report header (mechanism, parameters) for a given query id.
    fn header(&self, query: QueryId) -> Header;

    /// The exact length in bytes of every report this randomizer writes.
    fn report_len(&self) -> usize;

    /// Checks that `input` is acceptable, without drawing randomness.
    fn validate(&self, input: &Self::Input) -> Result<()>;

    /// Randomizes `input` into the report's payload: the
    /// `report_len() − HEADER_LEN` bytes after the header.
    fn write_payload<R: Rng + CryptoRng + ?Sized>(
        &self,
        input: &Self::Input,
        rng: &mut R,
        payload: &mut [u8],
    ) -> Result<()>;

    /// Randomizes `input` and encodes the report into the front of `buf`,
    /// returning the number of bytes written ([`report_len`](Self::report_len)).
    ///
    /// Errors with [`crate::Error::BufferTooSmall`] before
    /// drawing randomness when `buf` is shorter than the report (and with the
    /// header's error when ε cannot be encoded).
    fn privatize_into<R: Rng + CryptoRng + ?Sized>(
        &self,
        input: &Self::Input,
        query: QueryId,
        rng: &mut R,
        buf: &mut [u8],
    ) -> Result<usize> {
        let len = self.report_len();
        let out = buf.get_mut(..len).ok_or(Error::BufferTooSmall)?;
        let (head, payload) = out
            .split_at_mut_checked(HEADER_LEN)
            .ok_or(Error::BufferTooSmall)?;
        encode_header(&self.header(query), head)?;
        self.write_payload(input, rng, payload)?;
        Ok(len)
    }
}

/// Shared parameter check for item-valued randomizers: ε fits the report header and
/// the domain is `2 ≤ d ≤` [`MAX_DOMAIN`](crate::report::MAX_DOMAIN).
pub(crate) const fn check_item_params(epsilon: Epsilon, domain: u32) -> Result<()> {
    if let Err(e) = crate::report::check_encodable(epsilon) {
        return Err(e);
    }
    if 2 <= domain && domain <= crate::report::MAX_DOMAIN {
        Ok(())
    } else {
        Err(Error::InvalidDomain)
    }
}

/// Shared input check for item-valued randomizers.
pub(crate) fn check_item(item: u32, domain: u32) -> Result<()> {
    if item < domain {
        Ok(())
    } else {
        Err(crate::Error::ItemOutOfDomain)
    }
}

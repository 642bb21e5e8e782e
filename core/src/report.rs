//! The device-report wire format, version 1 (specified in `docs/src/report-format.md`).
//!
//! Every report is a 12-byte header followed by a mechanism-specific payload; all
//! integers are little-endian and every report of a given mechanism and parameter
//! set has the same length.
//!
//! Flash cost (thumbv6m, measured by `tools/device-sizes.sh`): about 40 B for the header
//! ([`encode_header`]); each randomizer writes its own payload.
//!
//! ```text
//! offset size field
//!      0    1 format version (= 1)
//!      1    1 mechanism id (MechanismId)
//!      2    2 query id (u16, device-chosen)
//!      4    2 ε numerator   (u16, ≥ 1)
//!      6    2 ε denominator (u16, ≥ 1)
//!      8    4 parameter (u32): domain size d, 1BitMean bound m, grid exponent, …
//!     12    … payload
//! ```
//!
//! [`encode_header`] writes into a caller's buffer (no allocation); [`decode`]
//! validates a byte slice completely — version, mechanism, parameters, exact
//! length, and the range of every payload value — and returns a borrowed view.
//!
//! ```
//! use privq_core::local::{HadamardResponse, LocalRandomizer, QueryId};
//! use privq_core::report::{decode, Payload, MechanismId};
//! use privq_core::Epsilon;
//! use privq_core::rng::ChaCha12;
//! use rand_core::SeedableRng;
//!
//! let mut rng = ChaCha12::from_seed([3; 32]); // tests only: a device seeds from its TRNG
//! let hr = HadamardResponse::new(Epsilon::new(1, 1)?, 1000)?;
//! let mut buf = [0u8; 16];
//! let n = hr.privatize_into(&42, QueryId(1), &mut rng, &mut buf)?;
//! let report = decode(&buf[..n])?;
//! assert_eq!(report.header.mechanism, MechanismId::Hadamard);
//! assert!(matches!(report.payload, Payload::Index(i) if i < 1024));
//! # Ok::<(), privq_core::Error>(())
//! ```

use crate::epsilon::Epsilon;
use crate::error::{Error, Result};
use crate::fixed::Fixed;
use crate::local::{OlhOutput, QueryId, UniversalHash};

/// The wire-format version this crate writes and reads.
pub const FORMAT_VERSION: u8 = 1;
/// Bytes in the common header.
pub const HEADER_LEN: usize = 12;
/// The largest report any randomizer writes for a given buffer; unary encoding
/// over `d` items needs `HEADER_LEN + ⌈d/8⌉`.
pub const fn unary_report_len(domain: u32) -> usize {
    HEADER_LEN + (domain as usize).div_ceil(8)
}

/// Which randomizer produced a report (byte 1 of the header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
#[non_exhaustive]
pub enum MechanismId {
    /// Binary randomized response; parameter 2; payload 1 byte (0 or 1).
    BinaryRr = 1,
    /// k-ary randomized response; parameter d; payload an item (width by d).
    Grr = 2,
    /// Symmetric unary encoding (basic one-time RAPPOR); parameter d; ⌈d/8⌉ bytes.
    Sue = 3,
    /// Optimized unary encoding; parameter d; ⌈d/8⌉ bytes.
    Oue = 4,
    /// Optimized local hashing; parameter d; payload g (u16), seed (2×u32), value.
    Olh = 5,
    /// Hadamard response; parameter d; payload an index below K = 2^⌈log₂(d+1)⌉.
    Hadamard = 6,
    /// One-bit mean estimation; parameter m (range [0, m]); payload 1 byte.
    OneBitMean = 7,
    /// Statistical-query answer, randomized-response bit; parameter 0; 1 byte.
    SqBit = 8,
    /// Statistical-query answer, grid Laplace; parameter = grid exponent (i32); 8 bytes.
    SqLaplace = 9,
}

impl MechanismId {
    /// Every mechanism, in id order.
    pub const ALL: [MechanismId; 9] = [
        MechanismId::BinaryRr,
        MechanismId::Grr,
        MechanismId::Sue,
        MechanismId::Oue,
        MechanismId::Olh,
        MechanismId::Hadamard,
        MechanismId::OneBitMean,
        MechanismId::SqBit,
        MechanismId::SqLaplace,
    ];

    /// The mechanism with wire id `byte`, if any.
    pub fn from_u8(byte: u8) -> Option<MechanismId> {
        MechanismId::ALL.into_iter().find(|m| *m as u8 == byte)
    }

    /// A short lowercase name (`"oue"`, `"olh"`, …).
    pub fn name(self) -> &'static str {
        match self {
            MechanismId::BinaryRr => "rr",
            MechanismId::Grr => "grr",
            MechanismId::Sue => "sue",
            MechanismId::Oue => "oue",
            MechanismId::Olh => "olh",
            MechanismId::Hadamard => "hr",
            MechanismId::OneBitMean => "1bitmean",
            MechanismId::SqBit => "sq-bit",
            MechanismId::SqLaplace => "sq-laplace",
        }
    }
}

/// The decoded common header of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Header {
    /// The randomizer.
    pub mechanism: MechanismId,
    /// The device-chosen query / epoch id.
    pub query: QueryId,
    /// ε of this report.
    pub epsilon: Epsilon,
    /// The mechanism's parameter (domain size, bound, grid exponent; see [`MechanismId`]).
    pub param: u32,
}

/// Bytes used to write an item below `n` (1, 2 or 4).
pub const fn index_width(n: u64) -> usize {
    if n <= 1 << 8 {
        1
    } else if n <= 1 << 16 {
        2
    } else {
        4
    }
}

/// Checks that `epsilon` can be written in the header (numerator and denominator of
/// the reduced fraction both fit in 16 bits).
pub const fn check_encodable(epsilon: Epsilon) -> Result<()> {
    if epsilon.num() > u16::MAX as u64 || epsilon.den() > u16::MAX as u64 {
        return Err(Error::NotEncodable);
    }
    Ok(())
}

/// Writes `header` into `buf[..HEADER_LEN]`.
pub fn encode_header(header: &Header, buf: &mut [u8]) -> Result<()> {
    check_encodable(header.epsilon)?;
    // A fixed-size array assignment: no length check behind `copy_from_slice` (whose
    // panic would link `core::fmt` into a device image).
    let out = buf
        .first_chunk_mut::<HEADER_LEN>()
        .ok_or(Error::BufferTooSmall)?;
    let q = header.query.0.to_le_bytes();
    let n = (header.epsilon.num() as u16).to_le_bytes();
    let d = (header.epsilon.den() as u16).to_le_bytes();
    let p = header.param.to_le_bytes();
    let bytes = [
        FORMAT_VERSION,
        header.mechanism as u8,
        q[0],
        q[1],
        n[0],
        n[1],
        d[0],
        d[1],
        p[0],
        p[1],
        p[2],
        p[3],
    ];
    *out = bytes;
    Ok(())
}

/// Writes `value` (below `n`) in [`index_width`]`(n)` little-endian bytes.
pub(crate) fn put_index(value: u32, n: u64, buf: &mut [u8]) -> Result<usize> {
    let w = index_width(n);
    let bytes = value.to_le_bytes();
    let src = bytes.get(..w).ok_or(Error::Overflow)?;
    buf.get_mut(..w)
        .ok_or(Error::BufferTooSmall)?
        .copy_from_slice(src);
    Ok(w)
}

/// A borrowed, fully validated report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report<'a> {
    /// The header.
    pub header: Header,
    /// The payload.
    pub payload: Payload<'a>,
}

/// A validated payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload<'a> {
    /// One bit (binary RR, 1BitMean, SQ bit).
    Bit(bool),
    /// An item index (GRR: `< d`; Hadamard: `< K`).
    Index(u32),
    /// `d` bits, least significant bit of byte 0 first; padding bits are zero.
    Bits(&'a [u8]),
    /// A local-hashing report.
    Olh(OlhOutput),
    /// A fixed-point value on the grid 2^param.
    Value(Fixed),
}

fn take<const N: usize>(bytes: &[u8], at: usize) -> Result<[u8; N]> {
    let end = at.checked_add(N).ok_or(Error::ReportLength)?;
    let s = bytes.get(at..end).ok_or(Error::ReportLength)?;
    let mut out = [0u8; N];
    out.copy_from_slice(s);
    Ok(out)
}

fn read_index(bytes: &[u8], n: u64) -> Result<u32> {
    let w = index_width(n);
    let mut b = [0u8; 4];
    let dst = b.get_mut(..w).ok_or(Error::ReportLength)?;
    dst.copy_from_slice(bytes.get(..w).ok_or(Error::ReportLength)?);
    let v = u32::from_le_bytes(b);
    if u64::from(v) >= n {
        return Err(Error::ReportValueOutOfRange);
    }
    Ok(v)
}

fn read_bit(byte: u8) -> Result<bool> {
    match byte {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Error::ReportValueOutOfRange),
    }
}

/// `2^⌈log₂(d+1)⌉`: the Hadamard matrix order for a domain of `d` items.
pub const fn hadamard_order(domain: u32) -> u64 {
    (domain as u64 + 1).next_power_of_two()
}

/// The largest domain any item-valued mechanism accepts (`2³¹ − 2`, below the
/// local-hashing prime).
pub const MAX_DOMAIN: u32 = (1 << 31) - 2;

/// The exact report length implied by a header and, for local hashing, the
/// `g` field; `Err(ReportParameter)` for parameters no randomizer produces.
pub fn payload_len(header: &Header, olh_g: Option<u16>) -> Result<usize> {
    let d = header.param;
    let domain_ok = (2..=MAX_DOMAIN).contains(&d);
    let len = match header.mechanism {
        MechanismId::BinaryRr if d == 2 => 1,
        MechanismId::Grr if domain_ok => index_width(u64::from(d)),
        MechanismId::Sue | MechanismId::Oue if domain_ok => (d as usize).div_ceil(8),
        MechanismId::Olh if domain_ok => match olh_g {
            Some(g) if g >= 2 => 10 + index_width(u64::from(g)),
            Some(_) => return Err(Error::ReportParameter),
            None => 10,
        },
        MechanismId::Hadamard if domain_ok => index_width(hadamard_order(d)),
        MechanismId::OneBitMean if d >= 1 && d <= i32::MAX as u32 => 1,
        MechanismId::SqBit if d == 0 => 1,
        MechanismId::SqLaplace if (-32..=0).contains(&(d as i32)) => 8,
        _ => return Err(Error::ReportParameter),
    };
    Ok(len)
}

/// Decodes and fully validates one report.
///
/// Errors, each its own class: [`Error::ReportTruncated`] (shorter than a
/// header), [`Error::ReportVersion`], [`Error::UnknownMechanism`],
/// [`Error::ReportParameter`] (ε zero or parameters no randomizer produces),
/// [`Error::ReportLength`] (payload not exactly the implied length) and
/// [`Error::ReportValueOutOfRange`] (item ≥ domain, bit not 0/1, set padding bits,
/// hash seed ≥ prime, off-grid value).
pub fn decode(bytes: &[u8]) -> Result<Report<'_>> {
    let head: [u8; HEADER_LEN] = take(bytes, 0).map_err(|_| Error::ReportTruncated)?;
    let [version, mech, q0, q1, n0, n1, d0, d1, p0, p1, p2, p3] = head;
    if version != FORMAT_VERSION {
        return Err(Error::ReportVersion);
    }
    let mechanism = MechanismId::from_u8(mech).ok_or(Error::UnknownMechanism)?;
    let num = u16::from_le_bytes([n0, n1]);
    let den = u16::from_le_bytes([d0, d1]);
    let epsilon =
        Epsilon::new(u64::from(num), u64::from(den)).map_err(|_| Error::ReportParameter)?;
    let header = Header {
        mechanism,
        query: QueryId(u16::from_le_bytes([q0, q1])),
        epsilon,
        param: u32::from_le_bytes([p0, p1, p2, p3]),
    };
    let body = bytes.get(HEADER_LEN..).unwrap_or(&[]);
    let olh_g = if mechanism == MechanismId::Olh {
        Some(u16::from_le_bytes(take(body, 0)?))
    } else {
        None
    };
    let expect = payload_len(&header, olh_g)?;
    if body.len() != expect {
        return Err(Error::ReportLength);
    }
    let d = header.param;
    let payload = match mechanism {
        MechanismId::BinaryRr | MechanismId::OneBitMean | MechanismId::SqBit => {
            Payload::Bit(read_bit(body.first().copied().unwrap_or(2))?)
        }
        MechanismId::Grr => Payload::Index(read_index(body, u64::from(d))?),
        MechanismId::Hadamard => Payload::Index(read_index(body, hadamard_order(d))?),
        MechanismId::Sue | MechanismId::Oue => {
            let used = d % 8;
            if used != 0 {
                let last = body.last().copied().unwrap_or(0);
                if last >> used != 0 {
                    return Err(Error::ReportValueOutOfRange);
                }
            }
            Payload::Bits(body)
        }
        MechanismId::Olh => {
            let g = olh_g.unwrap_or(0);
            let a = u32::from_le_bytes(take(body, 2)?);
            let b = u32::from_le_bytes(take(body, 6)?);
            let hash = UniversalHash::from_parts(a, b).map_err(|_| Error::ReportValueOutOfRange)?;
            let value = read_index(body.get(10..).unwrap_or(&[]), u64::from(g))?;
            Payload::Olh(OlhOutput { hash, g, value })
        }
        MechanismId::SqLaplace => {
            let bits = i64::from_le_bytes(take(body, 0)?);
            let shift = (d as i32) + 32;
            if bits.trailing_zeros() < shift as u32 && bits != 0 {
                return Err(Error::ReportValueOutOfRange);
            }
            Payload::Value(Fixed::from_bits(bits))
        }
    };
    Ok(Report { header, payload })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(m: MechanismId, param: u32) -> [u8; HEADER_LEN] {
        let mut buf = [0u8; HEADER_LEN];
        let h = Header {
            mechanism: m,
            query: QueryId(0x0102),
            epsilon: Epsilon::new(1, 2).unwrap(),
            param,
        };
        encode_header(&h, &mut buf).unwrap();
        buf
    }

    #[test]
    fn header_layout_is_little_endian() {
        let h = header(MechanismId::Grr, 0x0a0b0c0d);
        assert_eq!(h, [1, 2, 0x02, 0x01, 1, 0, 2, 0, 0x0d, 0x0c, 0x0b, 0x0a]);
    }

    #[test]
    fn each_malformed_class_has_its_error() {
        let mut good = [0u8; 13];
        good[..12].copy_from_slice(&header(MechanismId::Grr, 10));
        good[12] = 9;
        assert!(decode(&good).is_ok());
        assert_eq!(decode(&good[..5]), Err(Error::ReportTruncated));
        let mut v = good;
        v[0] = 2;
        assert_eq!(decode(&v), Err(Error::ReportVersion));
        let mut m = good;
        m[1] = 200;
        assert_eq!(decode(&m), Err(Error::UnknownMechanism));
        let mut z = good;
        z[4] = 0;
        assert_eq!(decode(&z), Err(Error::ReportParameter));
        assert_eq!(decode(&good[..12]), Err(Error::ReportLength));
        let mut r = good;
        r[12] = 10;
        assert_eq!(decode(&r), Err(Error::ReportValueOutOfRange));
    }

    #[test]
    fn unary_padding_bits_must_be_zero() {
        let mut b = [0u8; 14];
        b[..12].copy_from_slice(&header(MechanismId::Oue, 10));
        b[13] = 0b11;
        assert!(decode(&b).is_ok());
        b[13] = 0b100;
        assert_eq!(decode(&b), Err(Error::ReportValueOutOfRange));
    }

    #[test]
    fn ids_round_trip() {
        for m in MechanismId::ALL {
            assert_eq!(MechanismId::from_u8(m as u8), Some(m));
        }
        assert_eq!(MechanismId::from_u8(0), None);
    }
}

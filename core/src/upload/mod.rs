//! Upload frames: a device's reports, authenticated for a collector, and the
//! device-side outbox that keeps them until the collector acknowledges them
//! (specified byte by byte in `docs/src/upload-frame.md`).
//!
//! ```text
//! offset size field
//!      0    4 magic "PQUF"
//!      4    1 frame version (= 1)
//!      5    2 frame length L (u16, whole frame including the tag)
//!      7    8 device id (u64)
//!     15    4 epoch (u32)
//!     19    4 sequence number (u32)
//!     23    2 report count n (u16, ≥ 1)
//!     25    … n × (report length u16 · report in the wire format of `report`)
//!   L−32   32 HMAC-SHA-256 (RFC 2104, FIPS 180-4) under the device key of bytes 0..L−32
//! ```
//!
//! All integers are little-endian. [`open`] checks the framing, verifies the tag
//! in constant time (the `hmac` crate's `verify_slice`) **before** it looks at the
//! body, then checks the count, the report lengths and every report with
//! [`report::decode`]; each hostile case has its own
//! [`FrameError`]. The collector's replay key is `(device, epoch, sequence)`.
//!
//! [`Outbox`] is the device side: a fixed-capacity queue (`heapless`) of encoded
//! reports grouped into frames. A full outbox is an error ([`Error::OutboxFull`]),
//! never a silent drop; a frame leaves the outbox only when the caller
//! acknowledges its sequence number, so until then [`Outbox::write_front`] writes
//! the same bytes (same sequence number, same tag) on every retry.
//!
//! ```
//! use privq_core::upload::{open, DeviceKey, Outbox};
//!
//! let key = DeviceKey::new([7; 32]); // a fixed key: tests only
//! let mut outbox: Outbox<4, 256> = Outbox::new(42, 0);
//! let report = [1, 1, 0, 0, 1, 0, 2, 0, 2, 0, 0, 0, 1]; // binary RR, ε = 1/2, bit 1
//! outbox.push(3, &report)?;
//! outbox.seal()?;
//! let mut buf = [0u8; Outbox::<4, 256>::MAX_FRAME_LEN];
//! let n = outbox.write_front(&key, &mut buf)?.ok_or(privq_core::Error::NotPending)?;
//! let frame = open(&buf[..n], &key).map_err(|_| privq_core::Error::NotPending)?;
//! assert_eq!((frame.header.device, frame.header.epoch, frame.header.sequence), (42, 3, 0));
//! assert_eq!(frame.reports().next(), Some(&report[..]));
//! outbox.acknowledge(frame.header.sequence)?; // only now is the frame gone
//! assert_eq!(outbox.pending(), 0);
//! # Ok::<(), privq_core::Error>(())
//! ```

use core::fmt;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::error::{Error, Result};
use crate::report;

/// The first four bytes of every frame.
pub const FRAME_MAGIC: [u8; 4] = *b"PQUF";
/// The frame-format version this crate writes and reads.
pub const FRAME_VERSION: u8 = 1;
/// Bytes before the first report: magic, version, length, device, epoch, sequence, count.
pub const FRAME_HEADER_LEN: usize = 25;
/// Bytes of the HMAC-SHA-256 tag at the end of a frame.
pub const TAG_LEN: usize = 32;
/// Bytes of the length prefix in front of each report.
pub const REPORT_PREFIX_LEN: usize = 2;
/// Header and tag: a frame is this plus, per report, its prefix and its bytes.
pub const FRAME_OVERHEAD: usize = FRAME_HEADER_LEN + TAG_LEN;
/// The longest frame the 16-bit length field can describe.
pub const MAX_FRAME_LEN: usize = u16::MAX as usize;
/// Bytes of a device key (the HMAC-SHA-256 output length, as RFC 2104 §3 recommends).
pub const KEY_LEN: usize = 32;

type HmacSha256 = Hmac<Sha256>;

/// A device's 32-byte frame-authentication key. Its `Debug` output hides the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct DeviceKey([u8; KEY_LEN]);

impl DeviceKey {
    /// A key from its bytes (provisioned per device; never derived from public data
    /// outside tests).
    pub const fn new(bytes: [u8; KEY_LEN]) -> DeviceKey {
        DeviceKey(bytes)
    }

    /// The key bytes.
    pub fn as_bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }

    fn mac(&self) -> HmacSha256 {
        // RFC 2104 §2: a key shorter than the 64-byte block is zero-padded to it, so
        // the padded block is the same HMAC key, and this constructor cannot fail.
        let mut block = [0u8; 64];
        for (dst, &b) in block.iter_mut().zip(&self.0) {
            *dst = b;
        }
        <HmacSha256 as Mac>::new(&block.into())
    }
}

impl fmt::Debug for DeviceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DeviceKey(..)")
    }
}

/// HMAC-SHA-256 of `bytes` under `key`: the tag a frame ends with, computed over
/// the frame's first `L − 32` bytes.
///
/// Computed on `sha2`'s compression function alone (RFC 2104 over FIPS 180-4's padding,
/// below) rather than through the `hmac` crate: the digest traits' block buffers and
/// finalisation cost about 1 KB of flash on thumbv6m and link the slice-index panic (and
/// with it `core::fmt`). [`open`] verifies with the `hmac` crate, so every round trip in
/// the tests checks one implementation against the other.
pub fn tag(key: &DeviceKey, bytes: &[u8]) -> [u8; TAG_LEN] {
    mac(key, &[], bytes)
}

/// HMAC-SHA-256 under `key` of `head` followed by `bytes`.
fn mac(key: &DeviceKey, head: &[u8], bytes: &[u8]) -> [u8; TAG_LEN] {
    let mut inner = Sha256Stream::keyed(&key.0, 0x36);
    for &b in head {
        inner.push(b);
    }
    let inner = inner.finish(bytes);
    Sha256Stream::keyed(&key.0, 0x5c).finish(&inner)
}

/// SHA-256 fed byte by byte into a 64-byte block (no slicing, no panic path), for
/// [`tag`].
struct Sha256Stream {
    state: [u32; 8],
    block: [u8; 64],
    /// Bytes hashed so far (the block's fill is `len % 64`).
    len: u64,
}

impl Sha256Stream {
    /// FIPS 180-4 §5.3.3.
    const IV: [u32; 8] = [
        0x6a09_e667,
        0xbb67_ae85,
        0x3c6e_f372,
        0xa54f_f53a,
        0x510e_527f,
        0x9b05_688c,
        0x1f83_d9ab,
        0x5be0_cd19,
    ];

    /// A hash that has absorbed the key block (`key` zero-padded to 64 bytes, RFC 2104
    /// §2) XOR `pad` (0x36: inner, 0x5c: outer).
    fn keyed(key: &[u8; KEY_LEN], pad: u8) -> Self {
        let mut s = Sha256Stream {
            state: Self::IV,
            block: [0; 64],
            len: 0,
        };
        for i in 0..64 {
            s.push(key.get(i).copied().unwrap_or(0) ^ pad);
        }
        s
    }

    #[inline(never)]
    fn push(&mut self, b: u8) {
        if let Some(slot) = self.block.get_mut((self.len % 64) as usize) {
            *slot = b;
        }
        self.len += 1;
        if self.len.is_multiple_of(64) {
            let block: &sha2::digest::generic_array::GenericArray<u8, _> = (&self.block).into();
            sha2::compress256(&mut self.state, core::slice::from_ref(block));
        }
    }

    /// Absorbs `bytes`, pads (FIPS 180-4 §5.1.1) and returns the digest.
    fn finish(mut self, bytes: &[u8]) -> [u8; 32] {
        for &b in bytes {
            self.push(b);
        }
        let bits = self.len.wrapping_mul(8);
        self.push(0x80);
        while self.len % 64 != 56 {
            self.push(0);
        }
        // The message length in bits, big-endian; then the state words, big-endian.
        for shift in (0..64).step_by(8).rev() {
            self.push((bits >> shift) as u8);
        }
        let mut out = [0u8; 32];
        for (i, o) in out.iter_mut().enumerate() {
            let word = self.state.get(i / 4).copied().unwrap_or(0);
            *o = (word >> (24 - 8 * (i % 4))) as u8;
        }
        out
    }
}

/// The fields of a frame header after the version and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FrameHeader {
    /// The device that sent the frame (selects the key).
    pub device: u64,
    /// The collection epoch of the reports in the frame.
    pub epoch: u32,
    /// The device's frame counter; with `device` and `epoch`, the replay key.
    pub sequence: u32,
    /// Number of reports in the frame.
    pub count: u16,
}

/// Why a frame was rejected, one variant per class (`docs/src/upload-frame.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum FrameError {
    /// Shorter than the header, or shorter than its length field says.
    Truncated,
    /// The first four bytes are not `PQUF`.
    Magic,
    /// An unsupported frame version.
    Version,
    /// The length field is below the header and tag (57 bytes).
    Length,
    /// Bytes follow the length the length field gives.
    TrailingBytes,
    /// The tag does not verify under the device's key.
    Mac,
    /// Authenticated, but the report count is zero.
    Count,
    /// Authenticated, but `count` length-prefixed reports do not fill the body
    /// exactly (a report runs past the tag, or bytes are left over).
    BodyLength,
    /// Authenticated, but report number `index` (from 0) fails
    /// [`report::decode`] with `error`.
    Report {
        /// Position of the report in the frame.
        index: u16,
        /// Its decoding error.
        error: Error,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Truncated => f.write_str("the frame is shorter than its header or length"),
            FrameError::Magic => f.write_str("the frame does not start with PQUF"),
            FrameError::Version => f.write_str("the frame has an unsupported version"),
            FrameError::Length => f.write_str("the frame's length field is too small"),
            FrameError::TrailingBytes => f.write_str("bytes follow the frame"),
            FrameError::Mac => f.write_str("the frame's HMAC-SHA-256 tag does not verify"),
            FrameError::Count => f.write_str("the frame holds no report"),
            FrameError::BodyLength => {
                f.write_str("the frame's reports do not fill its body exactly")
            }
            FrameError::Report { index, error } => write!(f, "report {index}: {error}"),
        }
    }
}

impl core::error::Error for FrameError {}

fn le_u16(bytes: &[u8], at: usize) -> Option<u16> {
    let b = bytes.get(at..at.checked_add(2)?)?;
    Some(u16::from_le_bytes([*b.first()?, *b.get(1)?]))
}

fn le_array<const N: usize>(bytes: &[u8], at: usize) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    out.copy_from_slice(bytes.get(at..at.checked_add(N)?)?);
    Some(out)
}

/// Reads the header and checks the framing (magic, version, length field against
/// the input length), **without** authenticating anything: use it only to find the
/// key of `header.device`, then call [`open`].
pub fn peek_header(frame: &[u8]) -> core::result::Result<FrameHeader, FrameError> {
    let head: [u8; FRAME_HEADER_LEN] = le_array(frame, 0).ok_or(FrameError::Truncated)?;
    if le_array::<4>(&head, 0) != Some(FRAME_MAGIC) {
        return Err(FrameError::Magic);
    }
    if head.get(4) != Some(&FRAME_VERSION) {
        return Err(FrameError::Version);
    }
    let len = usize::from(le_u16(&head, 5).ok_or(FrameError::Truncated)?);
    if len < FRAME_OVERHEAD {
        return Err(FrameError::Length);
    }
    if frame.len() < len {
        return Err(FrameError::Truncated);
    }
    if frame.len() > len {
        return Err(FrameError::TrailingBytes);
    }
    let field = |at| le_array::<8>(&head, at).map(u64::from_le_bytes);
    let word = |at| le_array::<4>(&head, at).map(u32::from_le_bytes);
    Ok(FrameHeader {
        device: field(7).ok_or(FrameError::Truncated)?,
        epoch: word(15).ok_or(FrameError::Truncated)?,
        sequence: word(19).ok_or(FrameError::Truncated)?,
        count: le_u16(&head, 23).ok_or(FrameError::Truncated)?,
    })
}

/// An authenticated, fully validated frame borrowed from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The header.
    pub header: FrameHeader,
    body: &'a [u8],
}

impl<'a> Frame<'a> {
    /// The reports, in order, each exactly the bytes of one wire-format report
    /// (each already passed [`report::decode`]).
    pub fn reports(&self) -> Reports<'a> {
        Reports { rest: self.body }
    }
}

/// Iterator over the reports of a frame body (see [`Frame::reports`]).
#[derive(Debug, Clone)]
pub struct Reports<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Reports<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let len = usize::from(le_u16(self.rest, 0)?);
        let end = REPORT_PREFIX_LEN.checked_add(len)?;
        let item = self.rest.get(REPORT_PREFIX_LEN..end)?;
        self.rest = self.rest.get(end..)?;
        Some(item)
    }
}

/// Verifies and decodes one frame under `key`.
///
/// Order: framing ([`peek_header`]: `Truncated`, `Magic`, `Version`, `Length`,
/// `TrailingBytes`), then the tag in constant time (`Mac`), then — only for
/// authenticated bytes — the count (`Count`), the report lengths (`BodyLength`)
/// and each report (`Report`). Never panics.
///
/// ```
/// use privq_core::upload::{open, DeviceKey, FrameError, FrameWriter};
///
/// let key = DeviceKey::new([1; 32]);
/// let mut buf = [0u8; 128];
/// let mut w = FrameWriter::new(&mut buf, 9, 0, 5)?;
/// w.push(&[1, 8, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0])?; // SQ bit report, ε = 1
/// let n = w.finish(&key)?;
/// assert!(open(&buf[..n], &key).is_ok());
/// buf[30] ^= 1;
/// assert_eq!(open(&buf[..n], &key), Err(FrameError::Mac));
/// assert_eq!(open(&buf[..n - 1], &key), Err(FrameError::Truncated));
/// # Ok::<(), privq_core::Error>(())
/// ```
pub fn open<'a>(frame: &'a [u8], key: &DeviceKey) -> core::result::Result<Frame<'a>, FrameError> {
    let header = peek_header(frame)?;
    let split = frame.len().saturating_sub(TAG_LEN);
    let signed = frame.get(..split).ok_or(FrameError::Truncated)?;
    let tag = frame.get(split..).ok_or(FrameError::Truncated)?;
    let mut mac = key.mac();
    mac.update(signed);
    mac.verify_slice(tag).map_err(|_| FrameError::Mac)?;
    if header.count == 0 {
        return Err(FrameError::Count);
    }
    let body = signed
        .get(FRAME_HEADER_LEN..)
        .ok_or(FrameError::Truncated)?;
    let mut rest = body;
    for index in 0..header.count {
        let len = usize::from(le_u16(rest, 0).ok_or(FrameError::BodyLength)?);
        let end = REPORT_PREFIX_LEN + len;
        let bytes = rest
            .get(REPORT_PREFIX_LEN..end)
            .ok_or(FrameError::BodyLength)?;
        report::decode(bytes).map_err(|error| FrameError::Report { index, error })?;
        rest = rest.get(end..).ok_or(FrameError::BodyLength)?;
    }
    if !rest.is_empty() {
        return Err(FrameError::BodyLength);
    }
    Ok(Frame { header, body })
}

/// Writes the header for `header` and a body of `body_len` bytes into `buf`, and
/// returns the frame length.
fn write_header(header: &FrameHeader, body_len: usize, buf: &mut [u8]) -> Result<usize> {
    let len = FRAME_OVERHEAD
        .checked_add(body_len)
        .filter(|&l| l <= MAX_FRAME_LEN)
        .ok_or(Error::Overflow)?;
    let out = buf
        .get_mut(..FRAME_HEADER_LEN)
        .ok_or(Error::BufferTooSmall)?;
    let fields = [
        &FRAME_MAGIC[..],
        &[FRAME_VERSION],
        &(len as u16).to_le_bytes(),
        &header.device.to_le_bytes(),
        &header.epoch.to_le_bytes(),
        &header.sequence.to_le_bytes(),
        &header.count.to_le_bytes(),
    ];
    let mut at = 0;
    for f in fields {
        for &b in f {
            if let Some(slot) = out.get_mut(at) {
                *slot = b;
            }
            at += 1;
        }
    }
    Ok(len)
}

/// Appends the tag over `buf[..len − 32]` at `buf[len − 32..len]`.
fn write_tag(key: &DeviceKey, buf: &mut [u8], len: usize) -> Result<()> {
    let split = len.checked_sub(TAG_LEN).ok_or(Error::Overflow)?;
    let t = tag(key, buf.get(..split).ok_or(Error::BufferTooSmall)?);
    buf.get_mut(split..len)
        .ok_or(Error::BufferTooSmall)?
        .copy_from_slice(&t);
    Ok(())
}

/// Builds one frame in a caller's buffer (host tools, tests; the device uses
/// [`Outbox`]).
#[derive(Debug)]
pub struct FrameWriter<'a> {
    buf: &'a mut [u8],
    header: FrameHeader,
    body_len: usize,
}

impl<'a> FrameWriter<'a> {
    /// Starts a frame for `device`, `epoch` and `sequence` in `buf`.
    pub fn new(buf: &'a mut [u8], device: u64, epoch: u32, sequence: u32) -> Result<Self> {
        if buf.len() < FRAME_OVERHEAD {
            return Err(Error::BufferTooSmall);
        }
        Ok(FrameWriter {
            buf,
            header: FrameHeader {
                device,
                epoch,
                sequence,
                count: 0,
            },
            body_len: 0,
        })
    }

    /// Appends one encoded report (not validated here: [`open`] rejects a bad one).
    /// [`Error::BufferTooSmall`] if the report and the tag do not fit.
    pub fn push(&mut self, report: &[u8]) -> Result<()> {
        let len = u16::try_from(report.len()).map_err(|_| Error::Overflow)?;
        let count = self.header.count.checked_add(1).ok_or(Error::Overflow)?;
        let at = FRAME_HEADER_LEN + self.body_len;
        let end = at + REPORT_PREFIX_LEN + report.len();
        if end.saturating_add(TAG_LEN) > self.buf.len().min(MAX_FRAME_LEN) {
            return Err(Error::BufferTooSmall);
        }
        let dst = self.buf.get_mut(at..end).ok_or(Error::BufferTooSmall)?;
        let (prefix, body) = dst.split_at_mut(REPORT_PREFIX_LEN);
        prefix.copy_from_slice(&len.to_le_bytes());
        body.copy_from_slice(report);
        self.header.count = count;
        self.body_len = end - FRAME_HEADER_LEN;
        Ok(())
    }

    /// Writes the header and the tag; returns the frame length.
    /// [`Error::EmptyFrame`] if no report was pushed.
    pub fn finish(self, key: &DeviceKey) -> Result<usize> {
        if self.header.count == 0 {
            return Err(Error::EmptyFrame);
        }
        let len = write_header(&self.header, self.body_len, self.buf)?;
        write_tag(key, self.buf, len)?;
        Ok(len)
    }
}

/// A frame waiting in an [`Outbox`]: its header; its reports are the first
/// `body_len` bytes of the outbox's report storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PendingFrame {
    /// The header the frame is sent with.
    pub header: FrameHeader,
    /// Bytes of its body (length-prefixed reports).
    pub body_len: u16,
}

/// The frame being filled: reports pushed but not yet sealed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct OpenFrame {
    epoch: u32,
    count: u16,
    body_len: u16,
}

/// A device's queue of reports awaiting upload, with room for `FRAMES` sealed
/// frames and `BYTES` bytes of length-prefixed reports (sealed and open together).
///
/// Reports are [`push`](Outbox::push)ed into an open frame, which is sealed by
/// [`seal`](Outbox::seal) or automatically when a report of another epoch arrives;
/// sealing assigns the next sequence number. [`write_front`](Outbox::write_front)
/// writes the oldest sealed frame (the same bytes every time), and
/// [`acknowledge`](Outbox::acknowledge) removes it once the collector has it.
/// A report or seal that does not fit is refused with [`Error::OutboxFull`] and the
/// outbox is left unchanged. The one way a frame leaves unacknowledged is
/// [`reject`](Outbox::reject), for a frame the collector rejected permanently
/// ([`Delivery::Rejected`]); such drops are counted ([`dropped`](Outbox::dropped)).
/// The outbox lives in RAM: a power cut loses its frames (their ε stays charged).
///
/// Flash cost (thumbv6m, measured by `tools/device-sizes.sh`): about 2.5 KB for one frame of a
/// report, with [`UploadCounters`](crate::upload_counters::UploadCounters) in flash and
/// HMAC-SHA-256 (feature `compact-sha`).
#[derive(Debug)]
pub struct Outbox<const FRAMES: usize, const BYTES: usize> {
    device: u64,
    next_sequence: Option<u32>,
    sealed: heapless::Deque<PendingFrame, FRAMES>,
    open: Option<OpenFrame>,
    bytes: heapless::Vec<u8, BYTES>,
    dropped: u32,
}

/// What became of one delivery attempt of a frame, as the device reads the
/// collector's answer (`docs/src/collector.md`). Only an answer that verifies under
/// the device key ([`Verdict::delivery`]) acknowledges or drops a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Delivery {
    /// `accepted` or `duplicate`, authenticated: the collector has the frame; remove
    /// it ([`Outbox::acknowledge`]).
    Acknowledged,
    /// `rejected` (any reason), authenticated: resending the same bytes cannot
    /// succeed; drop it and count the drop ([`Outbox::reject`]).
    Rejected,
    /// Anything else — `refused`, an unknown status, a status whose tag does not
    /// verify, no status at all (no connection, timeout, `503`, `408`): keep the
    /// frame and resend the same bytes later.
    NotDelivered,
}

/// The first four bytes of a verdict's MAC input (a frame's are `PQUF`, so no
/// verdict tag is ever a frame tag).
pub const VERDICT_MAGIC: [u8; 4] = *b"PQUS";
/// The verdict-tag format version.
pub const VERDICT_VERSION: u8 = 1;

/// A collector's verdict on one frame that a device acts on: the three per-frame
/// statuses that remove a frame from the outbox. The collector sends each with a tag
/// ([`Verdict::tag`]) under the device key; a device acts on a verdict only through
/// [`Verdict::delivery`], which checks that tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Verdict {
    /// `accepted`: stored now.
    Accepted = 1,
    /// `duplicate`: stored before.
    Duplicate = 2,
    /// `rejected`: permanently refused (budget spent, a bad report, …).
    Rejected = 3,
}

impl Verdict {
    /// The verdict a per-frame `status` names (`accepted`, `duplicate`, `rejected`);
    /// `None` for anything else (`refused`, an unknown status).
    pub fn from_status(status: &str) -> Option<Verdict> {
        match status {
            "accepted" => Some(Verdict::Accepted),
            "duplicate" => Some(Verdict::Duplicate),
            "rejected" => Some(Verdict::Rejected),
            _ => None,
        }
    }

    /// The verdict's tag for `frame` (the frame's bytes as sent): HMAC-SHA-256 under
    /// the device key of `PQUS` ‖ version 1 ‖ the verdict's code (1, 2, 3) ‖ the
    /// frame's own tag (its last 32 bytes). The frame's tag binds the verdict to that
    /// frame's exact bytes (device, epoch, sequence, reports). `None` if `frame` is
    /// shorter than a tag.
    pub fn tag(self, key: &DeviceKey, frame: &[u8]) -> Option<[u8; TAG_LEN]> {
        let frame_tag = frame.get(frame.len().checked_sub(TAG_LEN)?..)?;
        let [m0, m1, m2, m3] = VERDICT_MAGIC;
        Some(mac(
            key,
            &[m0, m1, m2, m3, VERDICT_VERSION, self as u8],
            frame_tag,
        ))
    }

    /// What the device does with `frame` given this verdict and the tag the collector
    /// sent with it: [`Delivery::Acknowledged`] or [`Delivery::Rejected`] only if the
    /// tag equals [`Verdict::tag`] (compared in constant time); otherwise
    /// [`Delivery::NotDelivered`], so a forged or damaged answer changes nothing.
    ///
    /// ```
    /// use privq_core::upload::{Delivery, DeviceKey, Outbox, Verdict};
    ///
    /// let key = DeviceKey::new([7; 32]); // a fixed key: tests only
    /// let mut outbox: Outbox<2, 64> = Outbox::new(42, 0);
    /// outbox.push(0, &[1, 1, 0, 0, 1, 0, 2, 0, 2, 0, 0, 0, 1])?;
    /// outbox.seal()?;
    /// let mut buf = [0u8; 121];
    /// let n = outbox.write_front(&key, &mut buf)?.unwrap_or(0);
    /// let frame = &buf[..n];
    /// // The collector's answer, tagged under the same key:
    /// let good = Verdict::Accepted.tag(&key, frame).unwrap_or([0; 32]);
    /// assert_eq!(Verdict::Accepted.delivery(&key, frame, &good), Delivery::Acknowledged);
    /// // A forged answer (another key, or another verdict's tag) is ignored:
    /// assert_eq!(Verdict::Rejected.delivery(&key, frame, &good), Delivery::NotDelivered);
    /// # Ok::<(), privq_core::Error>(())
    /// ```
    pub fn delivery(self, key: &DeviceKey, frame: &[u8], tag: &[u8; TAG_LEN]) -> Delivery {
        let Some(expected) = self.tag(key, frame) else {
            return Delivery::NotDelivered;
        };
        let mut diff = 0u8;
        for (a, b) in expected.iter().zip(tag) {
            diff |= a ^ b;
        }
        match (core::hint::black_box(diff), self) {
            (0, Verdict::Accepted | Verdict::Duplicate) => Delivery::Acknowledged,
            (0, Verdict::Rejected) => Delivery::Rejected,
            _ => Delivery::NotDelivered,
        }
    }
}

impl<const FRAMES: usize, const BYTES: usize> Outbox<FRAMES, BYTES> {
    /// The longest frame this outbox writes (all its bytes in one frame).
    pub const MAX_FRAME_LEN: usize = FRAME_OVERHEAD + BYTES;

    /// Refuses, at compile time, an outbox whose frames the 16-bit length cannot describe.
    const FITS: () = assert!(FRAME_OVERHEAD + BYTES <= MAX_FRAME_LEN && FRAMES > 0);

    /// An empty outbox for `device`, whose first frame gets sequence number
    /// `first_sequence` (a device that persists its counter resumes from it; one that
    /// does not must start a new epoch, since the replay key is (device, epoch, sequence)).
    pub const fn new(device: u64, first_sequence: u32) -> Self {
        let () = Self::FITS;
        Outbox {
            device,
            next_sequence: Some(first_sequence),
            sealed: heapless::Deque::new(),
            open: None,
            bytes: heapless::Vec::new(),
            dropped: 0,
        }
    }

    /// Frames dropped after a permanent rejection ([`reject`](Self::reject)),
    /// saturating at `u32::MAX`: a number the device can report.
    pub fn dropped(&self) -> u32 {
        self.dropped
    }

    /// The device id written into every frame.
    pub fn device(&self) -> u64 {
        self.device
    }

    /// Sealed frames waiting for an acknowledgement.
    pub fn pending(&self) -> usize {
        self.sealed.len()
    }

    /// Reports pushed but not yet sealed into a frame.
    pub fn unsealed_reports(&self) -> u16 {
        self.open.map_or(0, |o| o.count)
    }

    /// Free bytes for reports (each also takes a 2-byte length prefix).
    pub fn free_bytes(&self) -> usize {
        BYTES - self.bytes.len()
    }

    /// The oldest sealed frame, if any (the one [`write_front`](Self::write_front) writes).
    pub fn front(&self) -> Option<PendingFrame> {
        self.sealed.front().copied()
    }

    /// The sequence number the next sealed frame will get (`None` once all 2³² are used).
    pub fn next_sequence(&self) -> Option<u32> {
        self.next_sequence
    }

    /// Whether [`push`](Self::push) of one report of `len` bytes and epoch `epoch`
    /// would find room now: its bytes and prefix, and, when it must seal an open
    /// frame of another epoch first, a free frame slot and a sequence number. A
    /// caller that must not lose a report checks this **before** it pays for the
    /// report (the firmware charges its privacy ledger only after this holds).
    pub fn has_room(&self, epoch: u32, len: usize) -> bool {
        let Some(entry) = len
            .checked_add(REPORT_PREFIX_LEN)
            .filter(|&n| n <= self.free_bytes())
        else {
            return false;
        };
        let fits_body = |body_len: u16| {
            usize::from(body_len)
                .checked_add(entry)
                .is_some_and(|n| n <= usize::from(u16::MAX))
        };
        match self.open {
            Some(o) if o.epoch == epoch => o.count < u16::MAX && fits_body(o.body_len),
            Some(_) => self.check_seal().is_ok() && fits_body(0),
            None => fits_body(0),
        }
    }

    /// Adds one encoded report of collection epoch `epoch`. If the open frame holds
    /// another epoch it is sealed first. Refused, with the outbox unchanged:
    /// [`Error::OutboxFull`] (no room for the report, or no frame slot for that seal),
    /// [`Error::SequenceExhausted`], [`Error::ReportTruncated`] (shorter than a report
    /// header) and [`Error::ReportVersion`] (not a version-1 report).
    pub fn push(&mut self, epoch: u32, report: &[u8]) -> Result<()> {
        if report.len() < report::HEADER_LEN {
            return Err(Error::ReportTruncated);
        }
        if report.first() != Some(&report::FORMAT_VERSION) {
            return Err(Error::ReportVersion);
        }
        let entry = report
            .len()
            .checked_add(REPORT_PREFIX_LEN)
            .filter(|&n| n <= self.free_bytes())
            .ok_or(Error::OutboxFull)?;
        // Everything that can fail is checked before anything changes.
        let same_epoch = self.open.filter(|o| o.epoch == epoch);
        let (count, body_len) = same_epoch.map_or((0, 0), |o| (o.count, o.body_len));
        let count = count.checked_add(1).ok_or(Error::OutboxFull)?;
        let body_len = usize::from(body_len)
            .checked_add(entry)
            .and_then(|n| u16::try_from(n).ok())
            .ok_or(Error::OutboxFull)?;
        if self.open.is_some() && same_epoch.is_none() {
            self.check_seal()?;
            self.seal()?;
        }
        let prefix = (report.len() as u16).to_le_bytes();
        self.bytes
            .extend_from_slice(&prefix)
            .map_err(|_| Error::OutboxFull)?;
        if self.bytes.extend_from_slice(report).is_err() {
            // Unreachable after the room check above; undo the prefix regardless.
            self.bytes.truncate(self.bytes.len() - REPORT_PREFIX_LEN);
            return Err(Error::OutboxFull);
        }
        self.open = Some(OpenFrame {
            epoch,
            count,
            body_len,
        });
        Ok(())
    }

    fn check_seal(&self) -> Result<()> {
        if self.sealed.is_full() {
            return Err(Error::OutboxFull);
        }
        self.next_sequence
            .map(|_| ())
            .ok_or(Error::SequenceExhausted)
    }

    /// Seals the open frame (if any) with the next sequence number. Refused with the
    /// outbox unchanged: [`Error::OutboxFull`] when all `FRAMES` slots hold
    /// unacknowledged frames, [`Error::SequenceExhausted`] after 2³² frames.
    pub fn seal(&mut self) -> Result<()> {
        let Some(open) = self.open else {
            return Ok(());
        };
        self.check_seal()?;
        let sequence = self.next_sequence.ok_or(Error::SequenceExhausted)?;
        let frame = PendingFrame {
            header: FrameHeader {
                device: self.device,
                epoch: open.epoch,
                sequence,
                count: open.count,
            },
            body_len: open.body_len,
        };
        self.sealed
            .push_back(frame)
            .map_err(|_| Error::OutboxFull)?;
        self.next_sequence = sequence.checked_add(1);
        self.open = None;
        Ok(())
    }

    /// Writes the oldest sealed frame into `buf` (at most
    /// [`MAX_FRAME_LEN`](Self::MAX_FRAME_LEN) bytes) and returns its length, or
    /// `None` when no frame is pending. Calling it again before
    /// [`acknowledge`](Self::acknowledge) writes the same bytes.
    pub fn write_front(&self, key: &DeviceKey, buf: &mut [u8]) -> Result<Option<usize>> {
        let Some(front) = self.sealed.front() else {
            return Ok(None);
        };
        let body_len = usize::from(front.body_len);
        let body = self.bytes.get(..body_len).ok_or(Error::Overflow)?;
        let len = write_header(&front.header, body_len, buf)?;
        let dst = buf
            .get_mut(FRAME_HEADER_LEN..FRAME_HEADER_LEN + body_len)
            .ok_or(Error::BufferTooSmall)?;
        // Byte by byte: `copy_from_slice`'s length check, when not inlined, links a panic and
        // `core::fmt` into a device image.
        for (d, &s) in dst.iter_mut().zip(body) {
            *d = s;
        }
        write_tag(key, buf, len)?;
        Ok(Some(len))
    }

    /// Removes the oldest sealed frame once the collector has acknowledged it.
    /// [`Error::NotPending`] (and nothing removed) unless `sequence` is that frame's
    /// sequence number: a late or repeated acknowledgement never removes another frame.
    pub fn acknowledge(&mut self, sequence: u32) -> Result<()> {
        self.remove_front(sequence)
    }

    /// Drops the oldest sealed frame after the collector rejected it permanently
    /// ([`Delivery::Rejected`]: a bad tag after a re-key, the device's ε cap
    /// reached, a replay conflict, a kind already reported, …), so that it does not
    /// block the frames behind it, and counts the drop ([`dropped`](Self::dropped)).
    /// Its reports are lost; the ε charged for them stays charged (privacy-safe).
    /// [`Error::NotPending`] (and nothing removed) unless `sequence` is that frame's.
    pub fn reject(&mut self, sequence: u32) -> Result<()> {
        self.remove_front(sequence)?;
        self.dropped = self.dropped.saturating_add(1);
        Ok(())
    }

    fn remove_front(&mut self, sequence: u32) -> Result<()> {
        let front = self.front().ok_or(Error::NotPending)?;
        if front.header.sequence != sequence {
            return Err(Error::NotPending);
        }
        let n = usize::from(front.body_len);
        let len = self.bytes.len();
        if n > len {
            return Err(Error::Overflow);
        }
        // Shift the remaining reports to the front (no slice-range panics).
        for i in n..len {
            if let Some(b) = self.bytes.get(i).copied() {
                if let Some(dst) = self.bytes.get_mut(i - n) {
                    *dst = b;
                }
            }
        }
        self.bytes.truncate(len - n);
        self.sealed.pop_front();
        Ok(())
    }
}

#[cfg(test)]
mod tests;

//! The report-file format: a stream of length-prefixed report frames.
//!
//! ```text
//! file  = magic "PQRS" · version u8 (= 1) · frame*
//! frame = length u16 LE · report bytes (length of them)
//! ```
//!
//! Framing is independent of report content, so a malformed report (garbage,
//! truncated, wrong version, …) inside a frame is rejected on its own and never
//! desynchronizes the frames after it. A file that ends inside a frame is
//! reported as a truncated final frame.
//!
//! [`Scanner`] reads a stream that may hold several files back to back and
//! damaged framing, knowing the campaign's report length and header
//! ([`FrameSync`]): a file header where a frame would start begins a new file;
//! a length prefix other than the campaign's report length delimits a frame
//! (to be rejected by the campaign check) if a plausible frame boundary follows
//! it — the end of input, a file header, or a length prefix followed by
//! version 1 and a known mechanism id — and is otherwise a corrupted length: a
//! rejected frame, after which the scanner skips bytes up to the next file header or the next
//! position that looks like a frame of the campaign (its length prefix and the
//! 10 header bytes other than the query id), and goes on from there. Every byte
//! is accounted for as a file header, a frame, or skipped.

use std::io::{self, Read, Write};

use privq_core::report::HEADER_LEN;

use super::decode::RejectReason;

/// File magic.
pub const MAGIC: [u8; 4] = *b"PQRS";
/// File format version.
pub const FILE_VERSION: u8 = 1;

/// Writes the file header.
pub fn write_file_header(w: &mut dyn Write) -> io::Result<()> {
    w.write_all(&MAGIC)?;
    w.write_all(&[FILE_VERSION])
}

/// Writes one frame; errors if the report is longer than 65535 bytes.
pub fn write_frame(w: &mut dyn Write, report: &[u8]) -> io::Result<()> {
    let len = u16::try_from(report.len()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "report longer than 65535 bytes",
        )
    })?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(report)
}

/// Problems with the file itself (not with the reports in it).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportFileError {
    /// The file does not start with `PQRS` and version 1.
    #[error("not a privq report file (expected magic PQRS, version 1)")]
    BadFileHeader,
    /// Reading failed.
    #[error("reading the reports failed: {0}")]
    Io(#[source] io::Error),
}

/// Splits an in-memory report file into frames. Yields `Ok(report)` per complete
/// frame and a final `Err(truncated_bytes)` if the file ends inside a frame. A
/// file header where a frame would start begins a concatenated file: its length
/// prefix would be `PQ`, and no report starts with the `RS` that follows (a
/// report starts with its format version, 1). Damaged length prefixes are not
/// detected: [`Scanner`] resynchronises, knowing the campaign.
pub fn frames(file: &[u8]) -> Result<Frames<'_>, ReportFileError> {
    let rest = file
        .strip_prefix(&MAGIC)
        .ok_or(ReportFileError::BadFileHeader)?;
    match rest.split_first() {
        Some((&FILE_VERSION, body)) => Ok(Frames { rest: body }),
        _ => Err(ReportFileError::BadFileHeader),
    }
}

/// Reads a whole report file into memory.
pub fn read_file(r: &mut dyn Read) -> Result<Vec<u8>, ReportFileError> {
    let mut buf = Vec::new();
    r.read_to_end(&mut buf).map_err(ReportFileError::Io)?;
    Ok(buf)
}

/// Iterator over the frames of a report file.
#[derive(Debug, Clone)]
pub struct Frames<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Frames<'a> {
    /// A complete frame's report bytes, or the bytes of a truncated final frame.
    type Item = Result<&'a [u8], &'a [u8]>;

    fn next(&mut self) -> Option<Self::Item> {
        while let Some(next) = self.rest.strip_prefix(&FILE_HEADER) {
            self.rest = next;
        }
        if self.rest.is_empty() {
            return None;
        }
        let Some((len, body)) = self.rest.split_first_chunk::<2>() else {
            let tail = self.rest;
            self.rest = &[];
            return Some(Err(tail));
        };
        let len = usize::from(u16::from_le_bytes(*len));
        if body.len() < len {
            let tail = self.rest;
            self.rest = &[];
            return Some(Err(tail));
        }
        let (frame, rest) = body.split_at(len);
        self.rest = rest;
        Some(Ok(frame))
    }
}

/// The 5-byte file header.
pub const FILE_HEADER: [u8; 5] = [b'P', b'Q', b'R', b'S', FILE_VERSION];

/// Bytes a [`Scanner`] step may need to see (unless the input ends sooner): a
/// whole frame plus one sync pattern.
pub const LOOKAHEAD: usize = 2 + u16::MAX as usize + SYNC_LEN;

/// Bytes of the frame pattern resynchronisation looks for: length prefix and
/// report header.
const SYNC_LEN: usize = 2 + HEADER_LEN;

/// What a frame of a campaign looks like: its exact length and its report
/// header (whose query id, bytes 2–3, may vary).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameSync {
    len: [u8; 2],
    header: [u8; HEADER_LEN],
}

impl FrameSync {
    /// The pattern for reports of `report_len` bytes starting with `header`;
    /// `None` if the length does not fit a frame.
    pub fn new(report_len: usize, header: [u8; HEADER_LEN]) -> Option<FrameSync> {
        let len = u16::try_from(report_len).ok()?.to_le_bytes();
        Some(FrameSync { len, header })
    }

    /// The report length.
    pub fn report_len(&self) -> usize {
        usize::from(u16::from_le_bytes(self.len))
    }

    /// Whether `rest` starts with this pattern.
    fn matches(&self, rest: &[u8]) -> bool {
        rest.get(..2).is_some_and(|l| l == self.len) && self.matches_header(&rest[2..])
    }

    /// Whether `report` starts with the campaign's header (any query id).
    fn matches_header(&self, report: &[u8]) -> bool {
        let Some(h) = report.get(..HEADER_LEN) else {
            return false;
        };
        h[..2] == self.header[..2] && h[4..] == self.header[4..]
    }
}

/// Whether a frame may end right before `next`: at the end of the input, at a
/// file header, or before a length prefix of at least a header followed by
/// format version 1 and a known mechanism id — or (`hops` more times) before a
/// length prefix whose frame ends at such a boundary, so that one damaged
/// report header does not hide the boundary before it.
fn plausible_boundary(next: &[u8], eof: bool, hops: u8) -> bool {
    match next {
        [] => eof,
        _ if next.starts_with(&FILE_HEADER) => true,
        [l0, l1, version, mechanism, ..] => {
            let len = usize::from(u16::from_le_bytes([*l0, *l1]));
            (len >= HEADER_LEN
                && *version == privq_core::report::FORMAT_VERSION
                && privq_core::report::MechanismId::from_u8(*mechanism).is_some())
                || (hops > 0
                    && next
                        .get(2 + len..)
                        .is_some_and(|after| plausible_boundary(after, eof, hops - 1)))
        }
        _ => eof && hops > 0 && next.len() < 2,
    }
}

/// One step's finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// A file header (the first of the input or one of a concatenated file).
    FileHeader,
    /// A complete frame: the report bytes. Of the campaign's length, or of
    /// another length when a plausible frame boundary follows it (a foreign or
    /// malformed report, which the campaign check then rejects).
    Frame(&'a [u8]),
    /// A rejected frame: a length prefix other than the campaign's
    /// ([`RejectReason::FrameLength`]), or the input ends inside the frame
    /// ([`RejectReason::FrameTruncated`]). The bytes consumed are skipped.
    BadFrame(RejectReason),
    /// The input does not start with a file header (nothing consumed; the
    /// scanner resynchronises).
    MissingFileHeader,
    /// Bytes skipped while resynchronising.
    Skipped,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    FileStart,
    Frames,
    Lost,
}

/// A resynchronising reader of (possibly concatenated, possibly damaged)
/// report files; see the module documentation.
///
/// ```
/// use privq_host::ldp::frames::{Event, FrameSync, Scanner, write_file_header, write_frame};
///
/// let report = [1u8, 2, 0, 0, 1, 0, 1, 0, 10, 0, 0, 0, 3]; // GRR, ε = 1, d = 10, item 3
/// let mut file = Vec::new();
/// write_file_header(&mut file)?;
/// write_frame(&mut file, &report)?;
/// let header: [u8; 12] = report[..12].try_into()?;
/// let mut twice = file.clone();
/// twice.extend_from_slice(&file); // two files back to back
/// let mut scanner = Scanner::new(FrameSync::new(13, header).ok_or("sync")?);
/// let (mut rest, mut frames) = (&twice[..], 0);
/// while let Some((event, used)) = scanner.step(rest, true) {
///     frames += usize::from(matches!(event, Event::Frame(_)));
///     rest = &rest[used..];
/// }
/// assert_eq!(frames, 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Scanner {
    sync: FrameSync,
    state: State,
}

impl Scanner {
    /// A scanner at the start of an input.
    pub fn new(sync: FrameSync) -> Scanner {
        Scanner {
            sync,
            state: State::FileStart,
        }
    }

    /// One step over `rest`, the input not yet consumed; `eof` says that nothing
    /// follows it, else `rest` must hold at least [`LOOKAHEAD`] bytes. Returns
    /// the event and the bytes it consumes, `None` once `rest` is empty. Every
    /// call either consumes bytes or changes state towards consuming them.
    pub fn step<'a>(&mut self, rest: &'a [u8], eof: bool) -> Option<(Event<'a>, usize)> {
        if rest.is_empty() {
            return None;
        }
        match self.state {
            State::FileStart => Some(if rest.starts_with(&FILE_HEADER) {
                self.state = State::Frames;
                (Event::FileHeader, FILE_HEADER.len())
            } else {
                self.state = State::Lost;
                (Event::MissingFileHeader, 0)
            }),
            State::Frames => Some(self.frame(rest, eof)),
            State::Lost => Some(self.resync(rest, eof)),
        }
    }

    fn frame<'a>(&mut self, rest: &'a [u8], eof: bool) -> (Event<'a>, usize) {
        if rest.starts_with(&FILE_HEADER) {
            return (Event::FileHeader, FILE_HEADER.len());
        }
        let Some((len, body)) = rest.split_first_chunk::<2>() else {
            return (Event::BadFrame(RejectReason::FrameTruncated), rest.len());
        };
        if *len != self.sync.len {
            return self.other_length(rest, usize::from(u16::from_le_bytes(*len)), eof);
        }
        match body.get(..self.sync.report_len()) {
            Some(report) => (Event::Frame(report), 2 + report.len()),
            None => (Event::BadFrame(RejectReason::FrameTruncated), rest.len()),
        }
    }

    /// A length prefix other than the campaign's report length.
    fn other_length<'a>(&mut self, rest: &'a [u8], len: usize, eof: bool) -> (Event<'a>, usize) {
        let sync_or_end = |next: &[u8]| {
            (next.is_empty() && eof) || next.starts_with(&FILE_HEADER) || self.sync.matches(next)
        };
        if self.sync.matches_header(rest.get(2..).unwrap_or(&[])) {
            // A campaign report behind a corrupted length: rejected, and skipped
            // at the campaign's length if a frame or the end follows there.
            let end = 2 + self.sync.report_len();
            if rest.get(end..).is_some_and(sync_or_end) {
                return (Event::BadFrame(RejectReason::FrameLength), end);
            }
        } else {
            // A foreign or malformed report if it ends where something frame-like
            // begins and holds no campaign frame; else a corrupted length.
            let end = 2 + len;
            let inside = |to: usize| self.any_sync(rest.get(1..to).unwrap_or(&[]));
            if let Some(next) = rest.get(end..)
                && plausible_boundary(next, eof, 3)
                && !inside(end)
            {
                return (Event::Frame(&rest[2..end]), end);
            }
            // The input ends inside this frame and nothing frame-like follows
            // its prefix: a truncated final frame, not a corrupted length.
            if eof && rest.len() < end && !inside(rest.len()) {
                return (Event::BadFrame(RejectReason::FrameTruncated), rest.len());
            }
        }
        self.state = State::Lost;
        (Event::BadFrame(RejectReason::FrameLength), 1)
    }

    /// Whether a file header or a campaign frame starts anywhere in `bytes`.
    fn any_sync(&self, bytes: &[u8]) -> bool {
        (0..bytes.len()).any(|i| {
            let at = &bytes[i..];
            at.starts_with(&FILE_HEADER) || self.sync.matches(at)
        })
    }

    fn resync<'a>(&mut self, rest: &'a [u8], eof: bool) -> (Event<'a>, usize) {
        // Without the end of input, only positions with a whole pattern in view.
        let end = if eof {
            rest.len()
        } else {
            rest.len().saturating_sub(SYNC_LEN - 1).max(1)
        };
        let found = (0..end).find(|&i| {
            let at = rest.get(i..).unwrap_or(&[]);
            at.starts_with(&FILE_HEADER) || self.sync.matches(at)
        });
        match found {
            Some(i) => {
                self.state = State::Frames;
                if i == 0 {
                    self.frame(rest, eof)
                } else {
                    (Event::Skipped, i)
                }
            }
            None => (Event::Skipped, end),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(reports: &[&[u8]]) -> Vec<u8> {
        let mut f = Vec::new();
        write_file_header(&mut f).unwrap();
        for r in reports {
            write_frame(&mut f, r).unwrap();
        }
        f
    }

    #[test]
    fn frames_splits_concatenated_files_and_reports_a_truncated_tail() {
        let (a, b, c) = ([1u8, 2, 3].as_slice(), [1u8; 20].as_slice(), [].as_slice());
        let mut all = file(&[a, b]);
        all.extend(file(&[]));
        all.extend(file(&[c, a]));
        all.extend([7, 0, 1, 2]); // a frame of 7 bytes with 2 of them
        let got: Vec<_> = frames(&all).unwrap().collect();
        assert_eq!(
            got,
            [Ok(a), Ok(b), Ok(c), Ok(a), Err([7u8, 0, 1, 2].as_slice())]
        );
        assert!(matches!(
            frames(b"PQRS\x02"),
            Err(ReportFileError::BadFileHeader)
        ));
    }
}

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

use std::io::{self, Read, Write};

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
#[derive(Debug)]
#[non_exhaustive]
pub enum FrameError {
    /// The file does not start with `PQRS` and version 1.
    BadFileHeader,
    /// Reading failed.
    Io(io::Error),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::BadFileHeader => {
                f.write_str("not a privq report file (expected magic PQRS, version 1)")
            }
            FrameError::Io(e) => write!(f, "i/o error: {e}"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Splits an in-memory report file into frames. Yields `Ok(report)` per complete
/// frame and a final `Err(truncated_bytes)` if the file ends inside a frame.
pub fn frames(file: &[u8]) -> Result<Frames<'_>, FrameError> {
    let rest = file.strip_prefix(&MAGIC).ok_or(FrameError::BadFileHeader)?;
    match rest.split_first() {
        Some((&FILE_VERSION, body)) => Ok(Frames { rest: body }),
        _ => Err(FrameError::BadFileHeader),
    }
}

/// Reads a whole report file into memory.
pub fn read_file(r: &mut dyn Read) -> Result<Vec<u8>, FrameError> {
    let mut buf = Vec::new();
    r.read_to_end(&mut buf).map_err(FrameError::Io)?;
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

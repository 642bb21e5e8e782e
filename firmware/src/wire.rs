//! The raw-report channel: one text line per report, for a host to parse.
//!
//! In QEMU the firmware writes these lines to semihosting **stderr** (its defmt log
//! goes to semihosting stdout, as binary frames for `defmt-print`), so the two never
//! mix. Lines (`\n`-terminated, ASCII, one space between fields):
//!
//! ```text
//! privq-report fleet=<u64> device=<u64> query=<u16> hex=<report bytes, lowercase hex>
//! privq-refused fleet=<u64> device=<u64> epoch=<u16> reason=<budget-exhausted|ledger-corrupted>
//! privq-done fleet=<u64> device=<u64> mechanism=<name> released=<n> refused=<n> stack=<bytes>
//! privq-frame fleet=<u64> device=<u64> epoch=<u32> seq=<u32> hex=<upload frame, lowercase hex>
//! ```
//!
//! `privq-frame` lines (feature `frames`) carry one whole upload frame
//! (`docs/src/upload-frame.md`); the firmware writes them in pieces ([`frame_line_head`],
//! then [`hex_piece`]s, then `\n`) so one 160-byte line buffer serves every line.
//!
//! `hex` is the exact wire-format report (`docs/src/report-format.md`). The formatting is
//! allocation-free and does not use `core::fmt` (small flash); [`field`] and
//! [`decode_hex`] are the matching parsers, used by the host side of the end-to-end test.

/// A fixed-capacity line being built; pushes past the capacity are dropped and
/// flagged ([`Line::overflowed`]).
#[derive(Debug, Clone)]
pub struct Line<const N: usize> {
    buf: [u8; N],
    len: usize,
    overflowed: bool,
}

impl<const N: usize> Default for Line<N> {
    fn default() -> Self {
        Self::new()
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

impl<const N: usize> Line<N> {
    /// An empty line.
    pub const fn new() -> Self {
        Line {
            buf: [0; N],
            len: 0,
            overflowed: false,
        }
    }

    /// Appends one byte. Not inlined: every other push goes through it (smaller flash).
    #[inline(never)]
    pub fn push_byte(&mut self, b: u8) -> &mut Self {
        match self.buf.get_mut(self.len) {
            Some(slot) => {
                *slot = b;
                self.len += 1;
            }
            None => self.overflowed = true,
        }
        self
    }

    /// Appends text.
    pub fn push_str(&mut self, s: &str) -> &mut Self {
        for &b in s.as_bytes() {
            self.push_byte(b);
        }
        self
    }

    /// Appends `v` in decimal.
    pub fn push_u64(&mut self, mut v: u64) -> &mut Self {
        let mut digits = [0u8; 20];
        let mut n = 0;
        loop {
            if let Some(d) = digits.get_mut(n) {
                *d = b'0' + (v % 10) as u8;
            }
            n += 1;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        for i in (0..n).rev() {
            self.push_byte(digits.get(i).copied().unwrap_or(b'?'));
        }
        self
    }

    /// Appends ` key=value` (value in decimal).
    pub fn field(&mut self, key: &str, value: u64) -> &mut Self {
        self.push_byte(b' ')
            .push_str(key)
            .push_byte(b'=')
            .push_u64(value)
    }

    /// Appends `bytes` as lowercase hex.
    pub fn push_hex(&mut self, bytes: &[u8]) -> &mut Self {
        for &b in bytes {
            self.push_byte(HEX[usize::from(b >> 4)]);
            self.push_byte(HEX[usize::from(b & 0xf)]);
        }
        self
    }

    /// The line so far.
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }

    /// Whether something did not fit.
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }
}

/// `privq-report …` for one report (newline included; at most 133 bytes for a 24-byte report).
pub fn report_line(fleet: u64, device: u64, query: u16, report: &[u8]) -> Line<160> {
    let mut line = Line::new();
    line.push_str("privq-report")
        .field("fleet", fleet)
        .field("device", device)
        .field("query", u64::from(query))
        .push_str(" hex=")
        .push_hex(report)
        .push_byte(b'\n');
    line
}

/// `privq-refused …` for a refused epoch (a `Line<160>` like the other lines, so the
/// firmware links one copy of the [`Line`] methods).
pub fn refused_line(fleet: u64, device: u64, epoch: u16, reason: privq_core::Error) -> Line<160> {
    let mut line = Line::new();
    line.push_str("privq-refused")
        .field("fleet", fleet)
        .field("device", device)
        .field("epoch", u64::from(epoch))
        .push_str(" reason=")
        .push_str(match reason {
            privq_core::Error::BudgetExhausted => "budget-exhausted",
            privq_core::Error::LedgerCorrupted => "ledger-corrupted",
            _ => "other",
        })
        .push_byte(b'\n');
    line
}

/// `privq-done …`, the last line of a completed run.
pub fn done_line(
    fleet: u64,
    device: u64,
    mechanism: &str,
    released: u32,
    refused: u32,
    stack: u32,
) -> Line<160> {
    let mut line = Line::new();
    line.push_str("privq-done")
        .field("fleet", fleet)
        .field("device", device)
        .push_str(" mechanism=")
        .push_str(mechanism)
        .field("released", u64::from(released))
        .field("refused", u64::from(refused))
        .field("stack", u64::from(stack))
        .push_byte(b'\n');
    line
}

/// The start of a `privq-frame …` line, up to and including `hex=`; the frame's hex
/// follows in [`hex_piece`]s and the line ends with `\n`.
pub fn frame_line_head(fleet: u64, device: u64, epoch: u32, sequence: u32) -> Line<160> {
    let mut line = Line::new();
    line.push_str("privq-frame")
        .field("fleet", fleet)
        .field("device", device)
        .field("epoch", u64::from(epoch))
        .field("seq", u64::from(sequence))
        .push_str(" hex=");
    line
}

/// Bytes of a frame per [`hex_piece`] (hex: twice as many characters).
pub const HEX_PIECE: usize = 64;

/// Up to [`HEX_PIECE`] bytes as lowercase hex (no newline).
pub fn hex_piece(bytes: &[u8]) -> Line<160> {
    let mut line = Line::new();
    line.push_hex(bytes);
    line
}

/// The value of ` key=` in `line` (up to the next space or the end).
pub fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split(' ').find_map(|part| {
        part.strip_prefix(key)
            .and_then(|rest| rest.strip_prefix('='))
    })
}

/// Decodes lowercase or uppercase hex into `out`; `None` on odd length, a bad digit
/// or a too small `out`. Returns the number of bytes.
pub fn decode_hex(hex: &str, out: &mut [u8]) -> Option<usize> {
    let digits = hex.as_bytes();
    if !digits.len().is_multiple_of(2) || digits.len() / 2 > out.len() {
        return None;
    }
    let nibble = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    for (slot, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        let hi = nibble(*pair.first()?)?;
        let lo = nibble(*pair.get(1)?)?;
        *slot = hi << 4 | lo;
    }
    Some(digits.len() / 2)
}

/// Parses `key=value` as a `u64`.
pub fn field_u64(line: &str, key: &str) -> Option<u64> {
    field(line, key)?.parse().ok()
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;

    #[test]
    fn report_lines_round_trip() {
        let report = [
            1u8, 4, 0, 0, 1, 0, 1, 0, 64, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef,
        ];
        let line = report_line(u64::MAX, 12, 3, &report);
        assert!(!line.overflowed());
        let text = core::str::from_utf8(line.as_bytes()).unwrap();
        assert_eq!(
            text,
            "privq-report fleet=18446744073709551615 device=12 query=3 hex=010400000100010040000000deadbeef\n"
        );
        let text = text.trim_end();
        assert_eq!(field_u64(text, "fleet"), Some(u64::MAX));
        assert_eq!(field_u64(text, "device"), Some(12));
        assert_eq!(field_u64(text, "query"), Some(3));
        let mut out = [0u8; 32];
        let n = decode_hex(field(text, "hex").unwrap(), &mut out).unwrap();
        assert_eq!(&out[..n], &report);
    }

    #[test]
    fn the_longest_report_fits() {
        let line = report_line(
            u64::MAX,
            u64::MAX,
            u16::MAX,
            &[0xff; crate::release::MAX_REPORT_LEN],
        );
        assert!(!line.overflowed());
        let done = done_line(
            u64::MAX,
            u64::MAX,
            "sq-laplace",
            u32::MAX,
            u32::MAX,
            u32::MAX,
        );
        assert!(!done.overflowed());
        let mut short = Line::<4>::new();
        short.push_str("hello");
        assert!(short.overflowed());
        assert_eq!(short.as_bytes(), b"hell");
    }

    #[test]
    fn refused_and_done_lines() {
        let r = refused_line(7, 1, 4, privq_core::Error::BudgetExhausted);
        assert_eq!(
            r.as_bytes(),
            b"privq-refused fleet=7 device=1 epoch=4 reason=budget-exhausted\n"
        );
        let d = done_line(7, 1, "oue", 4, 1, 1234);
        assert_eq!(
            d.as_bytes(),
            b"privq-done fleet=7 device=1 mechanism=oue released=4 refused=1 stack=1234\n"
        );
        assert_eq!(field("a b=1 bc=2", "bc"), Some("2"));
        assert_eq!(field("a b=1", "c"), None);
    }

    #[test]
    fn frame_lines_round_trip() {
        let frame: std::vec::Vec<u8> = (0..=200u8).collect();
        let mut text = std::string::String::new();
        let head = frame_line_head(u64::MAX, 2, u32::MAX, 7);
        text.push_str(core::str::from_utf8(head.as_bytes()).unwrap());
        for piece in frame.chunks(HEX_PIECE) {
            let p = hex_piece(piece);
            assert!(!p.overflowed() && !head.overflowed());
            text.push_str(core::str::from_utf8(p.as_bytes()).unwrap());
        }
        assert!(text.starts_with(
            "privq-frame fleet=18446744073709551615 device=2 epoch=4294967295 seq=7 hex=0001"
        ));
        assert_eq!(field_u64(&text, "seq"), Some(7));
        assert_eq!(field_u64(&text, "epoch"), Some(u64::from(u32::MAX)));
        let mut out = [0u8; 256];
        let n = decode_hex(field(&text, "hex").unwrap(), &mut out).unwrap();
        assert_eq!(&out[..n], &frame[..]);
    }

    #[test]
    fn bad_hex_is_rejected() {
        let mut out = [0u8; 2];
        assert_eq!(decode_hex("abc", &mut out), None);
        assert_eq!(decode_hex("zz", &mut out), None);
        assert_eq!(decode_hex("aabbcc", &mut out), None);
        assert_eq!(decode_hex("AbcD", &mut out), Some(2));
        assert_eq!(out, [0xab, 0xcd]);
    }
}

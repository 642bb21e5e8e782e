//! A table column handed over from Python in copies of Arrow's buffers
//! (`privq._frames.sql_columns`): texts as offsets into one UTF-8 buffer, or
//! numbers as `float64` values, with Arrow's validity bitmap. Every buffer is
//! checked before a value is read: a malformed one is an error, never a panic
//! or a wrong value.

use privq_host::aggregate::TextColumn;

/// Arrow's validity bitmap: bit `offset + i` (least significant first) set where
/// value `i` is present; none: every value present.
pub(crate) struct Validity {
    bits: Option<Vec<u8>>,
    offset: usize,
}

impl Validity {
    fn new(bits: Option<Vec<u8>>, offset: usize, rows: usize) -> Result<Self, String> {
        if let Some(b) = &bits {
            let needed = offset
                .checked_add(rows)
                .map(|n| n.div_ceil(8))
                .ok_or("the validity offset overflows")?;
            if b.len() < needed {
                return Err(format!(
                    "a validity bitmap of {} bytes for {rows} values from bit {offset}",
                    b.len()
                ));
            }
        }
        Ok(Validity { bits, offset })
    }

    fn present(&self, row: usize) -> bool {
        match &self.bits {
            None => true,
            Some(b) => {
                let bit = self.offset + row;
                b[bit / 8] >> (bit % 8) & 1 == 1
            }
        }
    }
}

/// A text column's bytes, as checked when it was made.
pub(crate) enum Utf8 {
    /// One UTF-8 text, every present value's ends between its characters.
    Whole(String),
    /// Bytes of which only the present values are UTF-8 (each checked on its own).
    Values(Vec<u8>),
}

/// One column: its values' texts or numbers.
pub(crate) enum FrameColumn {
    /// Value `i` is `text[offsets[i]..offsets[i + 1]]`, checked UTF-8 when
    /// present (missing: the empty text).
    Text {
        text: Utf8,
        offsets: Vec<usize>,
        valid: Validity,
    },
    /// Value `i` is `values[i]` (missing: none).
    Numbers { values: Vec<f64>, valid: Validity },
}

impl FrameColumn {
    /// The column of `rows` values from its kind (`"text"` or `"numbers"`) and
    /// buffers, as `privq._frames.sql_columns` writes them: native-endian `int64`
    /// offsets and UTF-8 bytes, or native-endian `float64` values; an optional
    /// validity bitmap from bit `offset`.
    pub(crate) fn new(
        kind: &str,
        a: Vec<u8>,
        b: Option<Vec<u8>>,
        bits: Option<Vec<u8>>,
        offset: usize,
        rows: usize,
    ) -> Result<Self, String> {
        let valid = Validity::new(bits, offset, rows)?;
        match kind {
            "numbers" => {
                if a.len() != rows.saturating_mul(8) {
                    return Err(format!("{} bytes of float64 for {rows} values", a.len()));
                }
                let values = a
                    .chunks_exact(8)
                    .map(|c| f64::from_ne_bytes(c.try_into().expect("8 bytes")))
                    .collect();
                Ok(FrameColumn::Numbers { values, valid })
            }
            "text" => {
                if a.len() != rows.saturating_add(1).saturating_mul(8) {
                    return Err(format!(
                        "{} bytes of int64 offsets for {rows} values",
                        a.len()
                    ));
                }
                let text = b.unwrap_or_default();
                let offsets = a
                    .chunks_exact(8)
                    .map(|c| {
                        let o = i64::from_ne_bytes(c.try_into().expect("8 bytes"));
                        usize::try_from(o)
                            .ok()
                            .filter(|&o| o <= text.len())
                            .ok_or_else(|| format!("offset {o} is outside the text"))
                    })
                    .collect::<Result<Vec<usize>, String>>()?;
                if offsets.windows(2).any(|w| w[0] > w[1]) {
                    return Err("the offsets decrease".into());
                }
                let present = || (0..rows).filter(|&r| valid.present(r));
                // Usually the whole buffer is UTF-8 and every present value starts and
                // ends between characters: then a value is a slice of one checked text.
                let text = match String::from_utf8(text) {
                    Ok(whole)
                        if present().all(|r| {
                            whole.is_char_boundary(offsets[r])
                                && whole.is_char_boundary(offsets[r + 1])
                        }) =>
                    {
                        Utf8::Whole(whole)
                    }
                    other => {
                        let bytes = other.map_or_else(|e| e.into_bytes(), String::into_bytes);
                        // Only present values must be UTF-8 (Arrow's rule: a missing
                        // value's bytes may be anything, and are never read).
                        for row in present() {
                            std::str::from_utf8(&bytes[offsets[row]..offsets[row + 1]])
                                .map_err(|e| format!("value {row} is not UTF-8: {e}"))?;
                        }
                        Utf8::Values(bytes)
                    }
                };
                Ok(FrameColumn::Text {
                    text,
                    offsets,
                    valid,
                })
            }
            other => Err(format!("unknown column kind {other:?}")),
        }
    }
}

impl TextColumn for FrameColumn {
    fn len(&self) -> usize {
        match self {
            FrameColumn::Text { offsets, .. } => offsets.len().saturating_sub(1),
            FrameColumn::Numbers { values, .. } => values.len(),
        }
    }

    fn text(&self, row: usize) -> &str {
        match self {
            FrameColumn::Text {
                text,
                offsets,
                valid,
            } if row + 1 < offsets.len() && valid.present(row) => {
                // Checked when the column was made: never the empty fallback.
                let (start, end) = (offsets[row], offsets[row + 1]);
                match text {
                    Utf8::Whole(whole) => whole.get(start..end).unwrap_or_default(),
                    Utf8::Values(bytes) => {
                        std::str::from_utf8(&bytes[start..end]).unwrap_or_default()
                    }
                }
            }
            _ => "",
        }
    }

    fn holds_numbers(&self) -> bool {
        matches!(self, FrameColumn::Numbers { .. })
    }

    fn number(&self, row: usize) -> Option<f64> {
        match self {
            FrameColumn::Numbers { values, valid } if row < values.len() && valid.present(row) => {
                Some(values[row])
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offsets(o: &[i64]) -> Vec<u8> {
        o.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    #[test]
    fn texts_and_numbers_read_their_buffers() {
        let c = FrameColumn::new(
            "text",
            offsets(&[0, 1, 1, 4]),
            Some("aHé".as_bytes().to_vec()),
            Some(vec![0b1101]),
            0,
            3,
        )
        .unwrap();
        assert_eq!(
            (c.len(), c.text(0), c.text(1), c.text(2)),
            (3, "a", "", "Hé")
        );
        // Bits from 1 (0b1010 >> 1): row 1 missing; from 0 it would be rows 0 and 2.
        let c = FrameColumn::new(
            "text",
            offsets(&[0, 1, 1, 4]),
            Some("aHé".as_bytes().to_vec()),
            Some(vec![0b1010]),
            1,
            3,
        )
        .unwrap();
        assert_eq!((c.text(0), c.text(1), c.text(2)), ("a", "", "Hé"));
        let v: Vec<u8> = [1.5f64, -0.0, f64::NAN]
            .iter()
            .flat_map(|x| x.to_ne_bytes())
            .collect();
        let c = FrameColumn::new("numbers", v, None, Some(vec![0b011]), 0, 3).unwrap();
        assert!(c.holds_numbers());
        assert_eq!(c.number(0), Some(1.5));
        // As it is: the library's reader makes -0.0 zero.
        assert!(c.number(1).unwrap().is_sign_negative());
        assert_eq!(c.number(2), None);
    }

    #[test]
    fn a_missing_value_s_bytes_are_never_read() {
        // Arrow lets a null slot hold any bytes: not UTF-8 here.
        let c = FrameColumn::new(
            "text",
            offsets(&[0, 2, 4]),
            Some(vec![0xff, 0xfe, b'o', b'k']),
            Some(vec![0b10]),
            0,
            2,
        )
        .unwrap();
        assert!(matches!(
            &c,
            FrameColumn::Text {
                text: Utf8::Values(_),
                ..
            }
        ));
        assert_eq!((c.text(0), c.text(1)), ("", "ok"));
    }

    #[test]
    fn a_missing_value_may_cut_a_character() {
        // The buffer is UTF-8 and the missing values' ends cut "é" (bytes 1..3):
        // only the present values' ends must fall between characters.
        let c = FrameColumn::new(
            "text",
            offsets(&[0, 1, 2, 3]),
            Some("aé".as_bytes().to_vec()),
            Some(vec![0b001]),
            0,
            3,
        )
        .unwrap();
        assert!(matches!(
            &c,
            FrameColumn::Text {
                text: Utf8::Whole(_),
                ..
            }
        ));
        assert_eq!((c.text(0), c.text(1), c.text(2)), ("a", "", ""));
    }

    #[test]
    fn malformed_buffers_are_errors() {
        let bad = |kind: &str, a: Vec<u8>, b: Option<Vec<u8>>, bits: Option<Vec<u8>>, rows| {
            FrameColumn::new(kind, a, b, bits, 0, rows).is_err()
        };
        assert!(bad("text", offsets(&[0, 2]), Some(b"a".to_vec()), None, 1)); // past the end
        assert!(bad(
            "text",
            offsets(&[0, 2, 1]),
            Some(b"ab".to_vec()),
            None,
            2
        )); // decreasing
        assert!(bad("text", offsets(&[-1, 0]), Some(b"a".to_vec()), None, 1)); // negative
        assert!(bad(
            "text",
            offsets(&[0, 1]),
            Some("é".as_bytes().to_vec()),
            None,
            1
        )); // mid-character
        assert!(bad("text", offsets(&[0, 1]), Some(vec![0xff]), None, 1)); // not UTF-8
        assert!(bad("text", offsets(&[0, 1]), Some(b"a".to_vec()), None, 2)); // too few offsets
        assert!(bad("numbers", vec![0; 12], None, None, 2)); // not whole float64s
        assert!(bad("numbers", vec![0; 16], None, Some(vec![]), 2)); // bitmap too short
        assert!(bad("bytes", vec![], None, None, 0));
    }
}

//! A bounds check of a Parquet footer, before any Parquet reader parses it.
//!
//! The Parquet reader trusts a footer's Thrift metadata. A list header may declare
//! 2³¹ elements, which it reserves before reading them, and a schema may nest as
//! deep as it has elements, which its schema conversion follows recursively. The
//! first makes the allocator abort the process, the second overflows the stack:
//! neither is a panic that `catch_unwind` could turn into an error. A compressed
//! page may also expand to about 2 GiB.
//!
//! privq's report tables (`privq ldp export`) have footers of a few kilobytes, a
//! flat schema of seven columns and uncompressed column chunks. [`check_footer`]
//! walks the metadata once in the Thrift compact protocol, without allocating, and
//! accepts only footers of that shape:
//!
//! * at most [`MAX_FOOTER`] bytes and Thrift nesting at most [`MAX_DEPTH`] deep;
//!   every list, set or map declares no more elements than the bytes left can
//!   hold, and only the compact protocol's types 1–12 occur;
//! * a flat schema: a root whose `num_children` counts the columns, then at most
//!   [`MAX_COLUMNS`] columns without children; a row group has at most as many
//!   column chunks;
//! * every column chunk stored in the file itself (no `file_path`), unencrypted,
//!   with its metadata, and uncompressed (so no page holds more bytes than the file
//!   stores); no encrypted footer.
//!
//! Page indexes and bloom filters are stored outside the footer; the aggregation
//! query does not read them.
//!
//! This is a first filter with clear errors, not a proof that the reader is safe
//! on what it accepts: the reader decodes a struct's fields by id whatever type
//! their header declares, the walk skips them by the declared type, so crafted
//! bytes can mean different things to each; and page headers and page data,
//! outside the footer, are the reader's alone. `privq ldp aggregate --parquet`
//! therefore reads tables in a child process with a capped address space.
//!
//! ```
//! use privq_host::ldp::parquet_footer::{check_footer, FooterError};
//!
//! // FileMetaData { version: 1, schema: [root with 0 children], num_rows: 0, row_groups: [] }
//! let footer = [0x15, 0x02, 0x19, 0x1c, 0x55, 0x00, 0x00, 0x16, 0x00, 0x19, 0x0c, 0x00];
//! assert_eq!(check_footer(&footer)?.rows, 0);
//! // The same footer claiming 2^28 row groups in its last list header.
//! let hostile = [0x15, 0x02, 0x19, 0x1c, 0x55, 0x00, 0x00, 0x16, 0x00, 0x19, 0xfc, 0x80, 0x80, 0x80, 0x80, 0x01];
//! assert!(matches!(check_footer(&hostile), Err(FooterError::ListTooLong { .. })));
//! # Ok::<(), FooterError>(())
//! ```

/// The largest footer accepted, in bytes (privq's tables have footers of a few KiB).
pub const MAX_FOOTER: usize = 1 << 20;
/// The deepest Thrift nesting accepted (a valid footer nests about six deep).
pub const MAX_DEPTH: usize = 16;
/// The most columns a report table may have (privq writes seven).
pub const MAX_COLUMNS: usize = 64;

/// What a checked footer declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FooterSummary {
    /// `num_rows` of the file.
    pub rows: u64,
    /// Columns of the (flat) schema.
    pub columns: usize,
    /// Row groups.
    pub row_groups: usize,
}

/// Why a footer was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FooterError {
    /// The footer is longer than [`MAX_FOOTER`].
    #[error("a footer of {len} bytes (report tables have at most {MAX_FOOTER})")]
    TooLong {
        /// Its length.
        len: usize,
    },
    /// The metadata ends inside a value.
    #[error("the footer ends inside a value")]
    Truncated,
    /// A variable-length integer of more than ten bytes, or one out of range.
    #[error("a malformed variable-length integer")]
    Varint,
    /// A Thrift type code outside 1–12.
    #[error("Thrift type code {0}")]
    Type(u8),
    /// Thrift nesting deeper than [`MAX_DEPTH`].
    #[error("nesting deeper than {MAX_DEPTH}")]
    TooDeep,
    /// A list, set or map declares more elements than the bytes left can hold.
    #[error("a list of {declared} elements declared with {left} bytes left")]
    ListTooLong {
        /// The declared count.
        declared: u64,
        /// The bytes left after its header.
        left: usize,
    },
    /// Bytes after the end of the metadata.
    #[error("{0} bytes after the footer's end")]
    Trailing(usize),
    /// The footer has a field privq's tables never have, or lacks one they need.
    #[error("{0}")]
    Shape(&'static str),
}

// Thrift compact protocol type codes.
const TRUE: u8 = 1;
const FALSE: u8 = 2;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;

/// Checks the Thrift `FileMetaData` of a Parquet file (the bytes between the
/// column chunks and the footer length) against the shape of privq's report
/// tables; see the [module documentation](self).
pub fn check_footer(meta: &[u8]) -> Result<FooterSummary, FooterError> {
    if meta.len() > MAX_FOOTER {
        return Err(FooterError::TooLong { len: meta.len() });
    }
    let mut w = Walk { buf: meta, at: 0 };
    let (mut rows, mut columns, mut row_groups) = (None, None, 0);
    w.fields(1, |w, id, ty| match (id, ty) {
        (2, LIST) => {
            columns = Some(w.schema()?);
            Ok(true)
        }
        (3, I64) => {
            let n = w.zigzag()?;
            rows = Some(u64::try_from(n).map_err(|_| FooterError::Shape("a negative row count"))?);
            Ok(true)
        }
        (4, LIST) => {
            let count = w.list(STRUCT)?;
            for _ in 0..count {
                w.row_group()?;
            }
            row_groups = count;
            Ok(true)
        }
        (8 | 9, _) => Err(FooterError::Shape("an encrypted footer")),
        (2..=4, _) => Err(FooterError::Shape(
            "a schema, row count or row group list of the wrong type",
        )),
        _ => Ok(false),
    })?;
    if w.at != meta.len() {
        return Err(FooterError::Trailing(meta.len() - w.at));
    }
    let columns = columns.ok_or(FooterError::Shape("no schema"))?;
    let rows = rows.ok_or(FooterError::Shape("no row count"))?;
    Ok(FooterSummary {
        rows,
        columns,
        row_groups,
    })
}

/// A cursor over Thrift compact-protocol bytes.
struct Walk<'a> {
    buf: &'a [u8],
    at: usize,
}

impl Walk<'_> {
    fn left(&self) -> usize {
        self.buf.len() - self.at
    }

    fn byte(&mut self) -> Result<u8, FooterError> {
        let b = *self.buf.get(self.at).ok_or(FooterError::Truncated)?;
        self.at += 1;
        Ok(b)
    }

    fn skip(&mut self, n: usize) -> Result<(), FooterError> {
        if n > self.left() {
            return Err(FooterError::Truncated);
        }
        self.at += n;
        Ok(())
    }

    fn varint(&mut self) -> Result<u64, FooterError> {
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.byte()?;
            if i == 9 && b > 1 {
                return Err(FooterError::Varint);
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(FooterError::Varint)
    }

    fn zigzag(&mut self) -> Result<i64, FooterError> {
        let v = self.varint()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    fn i32(&mut self) -> Result<i32, FooterError> {
        i32::try_from(self.zigzag()?).map_err(|_| FooterError::Varint)
    }

    /// A list or set header whose elements must be of type `elem`: its count,
    /// checked against the bytes left.
    fn list(&mut self, elem: u8) -> Result<usize, FooterError> {
        let (ty, count) = self.collection_header()?;
        if ty != elem {
            return Err(FooterError::Shape("a list of the wrong element type"));
        }
        Ok(count)
    }

    /// A list or set header: element type and count, checked against the bytes left.
    fn collection_header(&mut self) -> Result<(u8, usize), FooterError> {
        let h = self.byte()?;
        let ty = h & 0x0f;
        let count = match h >> 4 {
            15 => self.varint()?,
            n => u64::from(n),
        };
        let min = min_size(ty)?;
        let left = self.left();
        match usize::try_from(count) {
            Ok(n) if n.checked_mul(min).is_some_and(|b| b <= left) => Ok((ty, n)),
            _ => Err(FooterError::ListTooLong {
                declared: count,
                left,
            }),
        }
    }

    /// Skips a value of type `ty` at nesting `depth`.
    fn value(&mut self, ty: u8, depth: usize) -> Result<(), FooterError> {
        if depth > MAX_DEPTH {
            return Err(FooterError::TooDeep);
        }
        match ty {
            TRUE | FALSE | 3 => self.skip(1),
            4..=6 => self.varint().map(drop),
            DOUBLE => self.skip(8),
            BINARY => {
                let n = self.varint()?;
                self.skip(usize::try_from(n).map_err(|_| FooterError::Truncated)?)
            }
            LIST | SET => {
                let (elem, count) = self.collection_header()?;
                for _ in 0..count {
                    self.value(elem, depth + 1)?;
                }
                Ok(())
            }
            MAP => {
                let count = self.varint()?;
                if count == 0 {
                    return Ok(());
                }
                let kv = self.byte()?;
                let (k, v) = (kv >> 4, kv & 0x0f);
                let min = min_size(k)? + min_size(v)?;
                let left = self.left();
                let n = usize::try_from(count)
                    .ok()
                    .filter(|n| n.checked_mul(min).is_some_and(|b| b <= left))
                    .ok_or(FooterError::ListTooLong {
                        declared: count,
                        left,
                    })?;
                for _ in 0..n {
                    self.value(k, depth + 1)?;
                    self.value(v, depth + 1)?;
                }
                Ok(())
            }
            STRUCT => self.fields(depth, |_, _, _| Ok(false)),
            t => Err(FooterError::Type(t)),
        }
    }

    /// Walks a struct at nesting `depth`: `visit(id, type)` reads the fields it
    /// knows (returning `true`); the others are skipped.
    fn fields(
        &mut self,
        depth: usize,
        mut visit: impl FnMut(&mut Self, i16, u8) -> Result<bool, FooterError>,
    ) -> Result<(), FooterError> {
        if depth > MAX_DEPTH {
            return Err(FooterError::TooDeep);
        }
        let mut id: i16 = 0;
        loop {
            let h = self.byte()?;
            if h == 0 {
                return Ok(());
            }
            let ty = h & 0x0f;
            id = match h >> 4 {
                0 => i16::try_from(self.zigzag()?).map_err(|_| FooterError::Varint)?,
                delta => id
                    .checked_add(i16::from(delta))
                    .ok_or(FooterError::Varint)?,
            };
            if ty != TRUE && ty != FALSE && !visit(self, id, ty)? {
                self.value(ty, depth + 1)?;
            }
        }
    }

    /// Walks a struct at nesting `depth` and returns its i32 field `want` (the
    /// last, if repeated); `wrong` if that field has another type.
    fn i32_field(
        &mut self,
        depth: usize,
        want: i16,
        wrong: &'static str,
    ) -> Result<Option<i32>, FooterError> {
        let mut value = None;
        self.fields(depth, |w, id, ty| match (id == want, ty) {
            (true, I32) => {
                value = Some(w.i32()?);
                Ok(true)
            }
            (true, _) => Err(FooterError::Shape(wrong)),
            (false, _) => Ok(false),
        })?;
        Ok(value)
    }

    /// The schema list: a root counting the columns, then flat columns. Returns
    /// the number of columns.
    fn schema(&mut self) -> Result<usize, FooterError> {
        let count = self.list(STRUCT)?;
        if count == 0 || count > MAX_COLUMNS + 1 {
            return Err(FooterError::Shape(
                "a schema of no element or more than 64 columns",
            ));
        }
        for i in 0..count {
            let children = self.i32_field(3, 5, "num_children of the wrong type")?;
            let expected = if i == 0 { count - 1 } else { 0 };
            if usize::try_from(children.unwrap_or(0)).ok() != Some(expected) {
                return Err(FooterError::Shape(
                    "a nested schema (report tables are flat)",
                ));
            }
        }
        Ok(count - 1)
    }

    /// A row group: at most `MAX_COLUMNS` column chunks, each checked.
    fn row_group(&mut self) -> Result<(), FooterError> {
        self.fields(3, |w, id, ty| match (id, ty) {
            (1, LIST) => {
                let chunks = w.list(STRUCT)?;
                if chunks > MAX_COLUMNS {
                    return Err(FooterError::Shape("a row group of more than 64 columns"));
                }
                for _ in 0..chunks {
                    w.column_chunk()?;
                }
                Ok(true)
            }
            (1, _) => Err(FooterError::Shape("a column list of the wrong type")),
            _ => Ok(false),
        })
    }

    /// A column chunk: in this file, unencrypted, with uncompressed metadata.
    fn column_chunk(&mut self) -> Result<(), FooterError> {
        let mut meta = false;
        self.fields(5, |w, id, ty| match (id, ty) {
            (1, _) => Err(FooterError::Shape("a column chunk stored in another file")),
            (8 | 9, _) => Err(FooterError::Shape("an encrypted column chunk")),
            (3, STRUCT) => {
                meta = true;
                match w.i32_field(6, 4, "a codec of the wrong type")? {
                    Some(0) => Ok(true),
                    _ => Err(FooterError::Shape(
                        "a compressed column chunk (report tables are uncompressed)",
                    )),
                }
            }
            (3, _) => Err(FooterError::Shape("column metadata of the wrong type")),
            _ => Ok(false),
        })?;
        if meta {
            Ok(())
        } else {
            Err(FooterError::Shape("a column chunk without metadata"))
        }
    }
}

/// The fewest bytes a value of compact type `ty` takes inside a collection.
fn min_size(ty: u8) -> Result<usize, FooterError> {
    match ty {
        1..=6 | BINARY | LIST | SET | MAP | STRUCT => Ok(1),
        DOUBLE => Ok(8),
        t => Err(FooterError::Type(t)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal compact-protocol writer for hand-made footers.
    #[derive(Default)]
    struct W {
        out: Vec<u8>,
        last: Vec<i16>,
    }

    impl W {
        fn varint(&mut self, mut v: u64) {
            while v >= 0x80 {
                self.out.push((v as u8) | 0x80);
                v >>= 7;
            }
            self.out.push(v as u8);
        }
        fn field(&mut self, id: i16, ty: u8) {
            let last = self.last.last_mut().unwrap();
            let delta = id - *last;
            *last = id;
            if (1..=15).contains(&delta) {
                self.out.push(((delta as u8) << 4) | ty);
            } else {
                self.out.push(ty);
                self.varint(((id << 1) ^ (id >> 15)) as u16 as u64);
            }
        }
        fn i(&mut self, id: i16, ty: u8, v: i64) {
            self.field(id, ty);
            self.varint(((v << 1) ^ (v >> 63)) as u64);
        }
        /// An open `FileMetaData` with a root-only schema and `rows` rows.
        fn head(rows: i64) -> W {
            let mut w = W::default();
            w.begin();
            w.list(2, STRUCT, 1);
            w.begin();
            w.end();
            w.i(3, I64, rows);
            w
        }
        fn begin(&mut self) {
            self.last.push(0);
        }
        fn end(&mut self) {
            self.out.push(0);
            self.last.pop();
        }
        fn list(&mut self, id: i16, elem: u8, n: u64) {
            self.field(id, LIST);
            if n < 15 {
                self.out.push(((n as u8) << 4) | elem);
            } else {
                self.out.push(0xf0 | elem);
                self.varint(n);
            }
        }
        fn binary(&mut self, id: i16, b: &[u8]) {
            self.field(id, BINARY);
            self.varint(b.len() as u64);
            self.out.extend_from_slice(b);
        }
    }

    /// A footer shaped like privq's: `columns` flat columns, `groups` row groups
    /// of `rows_each` rows, every chunk with codec `codec`.
    fn footer(columns: usize, groups: usize, rows_each: i64, codec: i64) -> Vec<u8> {
        let mut w = W::default();
        w.begin();
        w.i(1, I32, 2);
        w.list(2, STRUCT, columns as u64 + 1);
        w.begin();
        w.binary(4, b"arrow_schema");
        w.i(5, I32, columns as i64);
        w.end();
        for c in 0..columns {
            w.begin();
            w.i(1, I32, 6);
            w.i(3, I32, 0);
            w.binary(4, format!("c{c}").as_bytes());
            w.end();
        }
        w.i(3, I64, rows_each * groups as i64);
        w.list(4, STRUCT, groups as u64);
        for _ in 0..groups {
            w.begin();
            w.list(1, STRUCT, columns as u64);
            for c in 0..columns {
                w.begin();
                w.i(2, I64, 4);
                w.field(3, STRUCT);
                w.begin();
                w.i(1, I32, 6);
                w.list(2, I32, 2);
                w.varint(0);
                w.varint(6);
                w.list(3, BINARY, 1);
                let name = format!("c{c}");
                w.varint(name.len() as u64);
                w.out.extend_from_slice(name.as_bytes());
                w.i(4, I32, codec);
                w.i(5, I64, rows_each);
                w.field(12, STRUCT);
                w.begin();
                w.binary(1, b"max");
                w.field(7, TRUE);
                w.end();
                w.end();
                w.end();
            }
            w.i(2, I64, 100);
            w.i(3, I64, rows_each);
            w.end();
        }
        w.binary(6, b"privq test");
        w.end();
        w.out
    }

    #[test]
    fn privq_shaped_footers_pass_and_declare_their_rows() {
        let s = check_footer(&footer(7, 3, 1000, 0)).unwrap();
        assert_eq!(
            s,
            FooterSummary {
                rows: 3000,
                columns: 7,
                row_groups: 3
            }
        );
        // Field ids out of delta range (written long form) read the same.
        let mut w = W::head(5);
        w.i(40, I64, 9);
        w.i(3 + 20, I32, 1);
        w.end();
        assert_eq!(check_footer(&w.out).unwrap().rows, 5);
    }

    #[test]
    fn compressed_nested_external_and_encrypted_footers_are_refused() {
        let shape = |f: &[u8]| match check_footer(f) {
            Err(FooterError::Shape(why)) => why,
            other => panic!("{other:?}"),
        };
        assert!(shape(&footer(7, 2, 10, 6)).contains("compressed"));
        // A nested schema: the second element claims a child.
        let mut w = W::default();
        w.begin();
        w.list(2, STRUCT, 3);
        for children in [1, 1, 0] {
            w.begin();
            w.i(5, I32, children);
            w.end();
        }
        w.i(3, I64, 0);
        w.end();
        assert!(shape(&w.out).contains("nested"));
        // A column chunk naming another file.
        let mut w = W::head(0);
        w.list(4, STRUCT, 1);
        w.begin();
        w.list(1, STRUCT, 1);
        w.begin();
        w.binary(1, b"/etc/passwd");
        w.end();
        w.end();
        w.end();
        assert!(shape(&w.out).contains("another file"));
        // An encrypted footer (field 8 of FileMetaData).
        let mut w = W::head(0);
        w.field(8, STRUCT);
        w.begin();
        w.end();
        w.end();
        assert!(shape(&w.out).contains("encrypted"));
        // Too many columns.
        assert!(shape(&footer(65, 1, 1, 0)).contains("64 columns"));
    }

    #[test]
    fn hostile_counts_and_depths_are_refused_without_allocating() {
        // A list of 2^31 strings in a column's key-value metadata.
        let mut w = W::head(0);
        w.list(5, STRUCT, 1 << 31);
        w.end();
        assert!(matches!(
            check_footer(&w.out),
            Err(FooterError::ListTooLong {
                declared: 0x8000_0000,
                ..
            })
        ));
        // Doubles need eight bytes each.
        let mut w = W::default();
        w.begin();
        w.list(7, DOUBLE, 2);
        w.out.extend_from_slice(&[0; 15]);
        assert!(matches!(
            check_footer(&w.out),
            Err(FooterError::ListTooLong { declared: 2, .. })
        ));
        // A map of 2^40 entries.
        let mut w = W::default();
        w.begin();
        w.field(7, MAP);
        w.varint(1 << 40);
        w.out.push(0x88);
        assert!(matches!(
            check_footer(&w.out),
            Err(FooterError::ListTooLong { .. })
        ));
        // Structs nested 10 000 deep in an unknown field.
        let mut f = vec![0x7c; 10_000];
        f.extend(std::iter::repeat_n(0, 10_001));
        assert_eq!(check_footer(&f), Err(FooterError::TooDeep));
        // Over-long varints, unknown types, truncation, trailing bytes, length.
        assert_eq!(
            check_footer(&[
                0x36, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f
            ]),
            Err(FooterError::Varint)
        );
        assert_eq!(check_footer(&[0x5d]), Err(FooterError::Type(13)));
        let good = footer(2, 1, 5, 0);
        for cut in 0..good.len() {
            assert!(check_footer(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut long = good.clone();
        long.push(0);
        assert_eq!(check_footer(&long), Err(FooterError::Trailing(1)));
        let big = vec![0u8; MAX_FOOTER + 1];
        assert_eq!(
            check_footer(&big),
            Err(FooterError::TooLong {
                len: MAX_FOOTER + 1
            })
        );
    }

    #[test]
    fn every_single_byte_change_of_a_footer_is_checked_without_panic() {
        let good = footer(7, 2, 10, 0);
        for i in 0..good.len() {
            for b in [0x00, 0x01, 0x0f, 0x19, 0x7f, 0x80, 0xfc, 0xff] {
                let mut f = good.clone();
                f[i] = b;
                if let Ok(s) = check_footer(&f) {
                    assert!(s.columns <= MAX_COLUMNS && s.row_groups <= f.len());
                }
            }
        }
    }
}

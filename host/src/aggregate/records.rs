//! The records of a CSV text for [`Table::from_csv`](super::Table::from_csv):
//! plain records split here, every other record read by the `csv` crate.
//!
//! A *plain* line ends in `\n` (the last one may end the text instead), is not
//! empty, holds no `"` and no `\r`, is valid UTF-8 and has exactly the header's
//! number of fields. The `csv` crate (its defaults: comma, RFC 4180 quotes, any of
//! `\r`, `\n`, `\r\n` ending a record, blank lines skipped) reads such a line as
//! one record whose fields are the texts between its commas, so that split is all
//! this reader does. The first line that is not plain, and everything after it,
//! goes to the `csv` crate positioned exactly there (its byte, line and record),
//! so a quoted field is read, and an error — a record of another length, invalid
//! UTF-8 — is reported, word for word as the crate reads the whole text. A header
//! that is not plain ASCII ending in `\n` hands the whole text to the crate.
//!
//! One wrinkle: the crate drops a UTF-8 byte-order mark at the start of the first
//! record it reads after being positioned, as at the start of a file. So a line
//! starting with one is never plain, and the crate is positioned one record back,
//! at the last plain one (or the header), which it reads again and this reader
//! skips.

use std::io::{self, Read, Seek, SeekFrom};

/// The bytes read from the source at a time.
const CHUNK: usize = 1 << 16;

/// The records of a CSV text with a header: [`CsvRecords::read`] then
/// [`CsvRecords::field`], as `csv::Reader::read_record` and a `StringRecord`.
pub(super) struct CsvRecords<R: Read> {
    mode: Mode<R>,
    header: Vec<String>,
}

enum Mode<R: Read> {
    Plain(Box<Plain<R>>),
    Csv(Box<csv::Reader<Replay<R>>>, csv::StringRecord),
    /// Between the two, while switching.
    Switching,
}

/// The plain reader's state: the text from the current record (the one read
/// last, or the header) on.
struct Plain<R> {
    source: R,
    /// The valid UTF-8 read, from the current record on.
    text: String,
    /// Bytes read after `text` that are not (yet) UTF-8: an incomplete character
    /// at the end, or, when `invalid`, a byte no character starts with.
    raw: Vec<u8>,
    invalid: bool,
    /// The source has ended.
    ended: bool,
    /// The current record is `text[current..current + len]`, its fields but the
    /// last ending at `commas` (from its start); the next line starts at `next`.
    current: Option<usize>,
    len: usize,
    commas: Vec<usize>,
    next: usize,
    /// The next line's commas, and the bytes of it scanned so far.
    next_commas: Vec<usize>,
    scanned: usize,
    /// The header's number of fields.
    width: usize,
    /// The current record's position, as the `csv` crate counts it (its byte,
    /// line and record number).
    position: (u64, u64, u64),
}

/// What [`Plain::scan`] finds at the start of the next line.
enum Scan {
    /// A plain line of this many bytes (its `\n` not counted), its commas noted;
    /// it may still be of another width.
    Line(usize),
    /// A line the `csv` crate must read.
    Other,
    /// No `\n` yet: more bytes are needed (or the text ends here).
    Partial,
}

/// The UTF-8 byte-order mark.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// The high bit of each byte of `word` that equals `byte`, exactly.
fn bytes_equal(word: u64, byte: u8) -> u64 {
    const LOW: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let x = word ^ (u64::from(byte) * 0x0101_0101_0101_0101);
    !(((x & LOW) + LOW) | x | LOW)
}

impl<R: Read> CsvRecords<R> {
    /// Reads the header (refused as the `csv` crate refuses it).
    pub(super) fn new(source: R) -> Result<Self, csv::Error> {
        let mut plain = Plain {
            source,
            text: String::new(),
            raw: Vec::new(),
            invalid: false,
            ended: false,
            current: None,
            len: 0,
            commas: Vec::new(),
            next: 0,
            next_commas: Vec::new(),
            scanned: 0,
            width: 0,
            position: (0, 1, 0),
        };
        let header = match plain.next_line()? {
            Some((Scan::Line(len), 1)) if plain.text[..len].is_ascii() => {
                plain.advance(len, 1);
                plain.width = plain.commas.len() + 1;
                Some(
                    (0..plain.width)
                        .map(|i| plain.field(i).to_string())
                        .collect(),
                )
            }
            _ => None,
        };
        match header {
            Some(header) => Ok(CsvRecords {
                mode: Mode::Plain(Box::new(plain)),
                header,
            }),
            None => {
                // The whole text, header included, to the `csv` crate. Its first
                // read holds more than a byte-order mark (one alone it would take
                // for the end of the text).
                while plain.text.len() + plain.raw.len() <= BOM.len() && !plain.ended {
                    plain.fill()?;
                }
                let mut head = std::mem::take(&mut plain.text).into_bytes();
                head.extend_from_slice(&plain.raw);
                let mut reader =
                    csv::ReaderBuilder::new().from_reader(Replay::new(head, plain.source));
                let header = reader.headers()?.iter().map(str::to_string).collect();
                Ok(CsvRecords {
                    mode: Mode::Csv(Box::new(reader), csv::StringRecord::new()),
                    header,
                })
            }
        }
    }

    /// The header's fields.
    pub(super) fn header(&self) -> &[String] {
        &self.header
    }

    /// Reads the next record: false at the end of the text.
    pub(super) fn read(&mut self) -> Result<bool, csv::Error> {
        if let Mode::Plain(plain) = &mut self.mode {
            match plain.next_line()? {
                None => return Ok(false),
                Some((Scan::Line(len), terminator))
                    if plain.next_commas.len() + 1 == plain.width =>
                {
                    plain.advance(len, terminator);
                    return Ok(true);
                }
                Some(_) => {}
            }
            self.switch()?;
        }
        match &mut self.mode {
            Mode::Csv(reader, record) => reader.read_record(record),
            Mode::Plain(_) | Mode::Switching => Ok(false),
        }
    }

    /// Field `i` of the record read last (empty when it has none).
    pub(super) fn field(&self, i: usize) -> &str {
        match &self.mode {
            Mode::Plain(plain) => plain.field(i),
            Mode::Csv(_, record) => record.get(i).unwrap_or(""),
            Mode::Switching => "",
        }
    }

    /// Hands the rest of the text to the `csv` crate, positioned at the current
    /// record (or the header), which it reads again.
    fn switch(&mut self) -> Result<(), csv::Error> {
        let Mode::Plain(plain) = std::mem::replace(&mut self.mode, Mode::Switching) else {
            return Ok(());
        };
        let plain = *plain;
        // A stand-in header of the header's width sets the length every record
        // is checked against; the reader then continues at the current record.
        let mut head = vec![b'h'; plain.width * 2];
        for i in 0..plain.width - 1 {
            head[2 * i + 1] = b',';
        }
        head[plain.width * 2 - 1] = b'\n';
        head.extend_from_slice(&plain.text.as_bytes()[plain.current.unwrap_or(0)..]);
        head.extend_from_slice(&plain.raw);
        let mut reader = csv::ReaderBuilder::new().from_reader(Replay::new(head, plain.source));
        let (byte, line, record) = plain.position;
        let mut position = csv::Position::new();
        position.set_byte(byte).set_line(line).set_record(record);
        reader.seek_raw(SeekFrom::Current(0), position)?;
        let mut current = csv::StringRecord::new();
        reader.read_record(&mut current)?;
        self.mode = Mode::Csv(Box::new(reader), current);
        Ok(())
    }
}

impl<R: Read> Plain<R> {
    /// Field `i` of the current record.
    fn field(&self, i: usize) -> &str {
        let from = match i {
            0 => 0,
            _ => match self.commas.get(i - 1) {
                Some(&c) => c + 1,
                None => return "",
            },
        };
        let to = self.commas.get(i).copied().unwrap_or(self.len);
        let at = self.current.unwrap_or(0);
        &self.text[at + from..at + to]
    }

    /// Makes the next line, of `len` bytes and a terminator of `terminator`,
    /// the current record.
    fn advance(&mut self, len: usize, terminator: usize) {
        // The header's position is the text's start; a record's, the last one's
        // end (after its `\n`).
        if self.current.is_some() {
            let (byte, line, record) = self.position;
            self.position = (byte + self.len as u64 + 1, line + 1, record + 1);
        }
        // The commas were noted from the line's start.
        std::mem::swap(&mut self.commas, &mut self.next_commas);
        self.current = Some(self.next);
        self.len = len;
        self.next += len + terminator;
        self.scanned = 0;
    }

    /// The next line's scan and its terminator's length (1, or 0 for a last line
    /// without `\n`), reading from the source as needed; `None` at the end of the
    /// text.
    fn next_line(&mut self) -> io::Result<Option<(Scan, usize)>> {
        loop {
            match self.scan() {
                Scan::Partial if self.ended || self.invalid => {
                    let len = self.text.len() - self.next;
                    return Ok(match (len, self.raw.is_empty()) {
                        (0, true) => None,
                        (_, true) => Some((Scan::Line(len), 0)),
                        // Not UTF-8 (or not all of it).
                        _ => Some((Scan::Other, 0)),
                    });
                }
                Scan::Partial => self.fill()?,
                other => return Ok(Some((other, 1))),
            }
        }
    }

    /// Scans the next line from where its last scan stopped for want of bytes,
    /// noting its commas (in `next_commas`, from the line's start).
    fn scan(&mut self) -> Scan {
        let bytes = &self.text.as_bytes()[self.next..];
        if self.scanned == 0 {
            self.next_commas.clear();
            if bytes.starts_with(BOM) {
                return Scan::Other;
            }
            if BOM.starts_with(bytes) && !(self.ended || self.invalid) {
                // Perhaps a byte-order mark, not all read yet.
                return Scan::Partial;
            }
        }
        let mut i = self.scanned;
        // Eight bytes at a time, then one by one.
        while i + 8 <= bytes.len() {
            let word = u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap_or_default());
            let commas = bytes_equal(word, b',');
            let stops =
                bytes_equal(word, b'\n') | bytes_equal(word, b'"') | bytes_equal(word, b'\r');
            let mut marks = commas | stops;
            while marks != 0 {
                let at = marks.trailing_zeros() as usize / 8;
                let bit = 1u64 << (at * 8 + 7);
                if commas & bit != 0 {
                    self.next_commas.push(i + at);
                } else {
                    return self.stop(i + at);
                }
                marks &= marks - 1;
            }
            i += 8;
        }
        while i < bytes.len() {
            match bytes[i] {
                b',' => self.next_commas.push(i),
                b'\n' | b'"' | b'\r' => return self.stop(i),
                _ => {}
            }
            i += 1;
        }
        self.scanned = i;
        Scan::Partial
    }

    /// The scan's result at a `\n`, `"` or `\r` at `at`.
    fn stop(&self, at: usize) -> Scan {
        if self.text.as_bytes()[self.next + at] == b'\n' && at > 0 {
            Scan::Line(at)
        } else {
            Scan::Other
        }
    }

    /// Reads more of the source, first dropping the text before the current
    /// record.
    fn fill(&mut self) -> io::Result<()> {
        let from = self.current.unwrap_or(0);
        self.text.drain(..from);
        self.next -= from;
        self.current = self.current.map(|_| 0);
        let kept = self.raw.len();
        self.raw.resize(kept + CHUNK, 0);
        let read = loop {
            match self.source.read(&mut self.raw[kept..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.raw.truncate(kept);
                    return Err(e);
                }
            }
        };
        self.raw.truncate(kept + read);
        self.ended = read == 0;
        match std::str::from_utf8(&self.raw) {
            Ok(valid) => {
                self.text.push_str(valid);
                self.raw.clear();
            }
            Err(e) => {
                let valid = e.valid_up_to();
                self.text
                    .push_str(&String::from_utf8_lossy(&self.raw[..valid]));
                self.raw.drain(..valid);
                // An incomplete character at the end waits for the next read.
                self.invalid = e.error_len().is_some() || self.ended;
            }
        }
        Ok(())
    }
}

/// A source read again from some of its bytes already read (`head`), for the
/// `csv` crate; it may step back within `head` (the crate's buffer is emptied
/// by `seek_raw`).
struct Replay<R> {
    head: Vec<u8>,
    at: usize,
    rest: R,
    /// Some of `rest` was read: no step back any more.
    past_head: bool,
}

impl<R> Replay<R> {
    fn new(head: Vec<u8>, rest: R) -> Self {
        Replay {
            head,
            at: 0,
            rest,
            past_head: false,
        }
    }
}

impl<R: Read> Read for Replay<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.at < self.head.len() {
            // Never across the end of `head`, so a step back stays inside it.
            let n = out.len().min(self.head.len() - self.at);
            out[..n].copy_from_slice(&self.head[self.at..self.at + n]);
            self.at += n;
            return Ok(n);
        }
        self.past_head = true;
        self.rest.read(out)
    }
}

impl<R> Seek for Replay<R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        match to {
            SeekFrom::Current(back)
                if !self.past_head && back <= 0 && back.unsigned_abs() <= self.at as u64 =>
            {
                self.at -= back.unsigned_abs() as usize;
                Ok(self.at as u64)
            }
            _ => Err(io::Error::other(
                "a CSV text read again can only step back within what was read of it",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A source that gives at most `step` bytes a read.
    struct Trickle<'a> {
        text: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = out.len().min(self.step).min(self.text.len());
            out[..n].copy_from_slice(&self.text[..n]);
            self.text = &self.text[n..];
            Ok(n)
        }
    }

    /// The header, then each record's first `width + 1` fields or the error's text,
    /// ending at the first error.
    type Read_ = (
        Result<Vec<String>, String>,
        Vec<Result<Vec<String>, String>>,
    );

    fn by_crate(text: &[u8]) -> Read_ {
        let mut reader = csv::ReaderBuilder::new().from_reader(text);
        let header: Vec<String> = match reader.headers() {
            Ok(h) => h.iter().map(str::to_string).collect(),
            Err(e) => return (Err(e.to_string()), Vec::new()),
        };
        let width = header.len();
        let mut rows = Vec::new();
        let mut record = csv::StringRecord::new();
        loop {
            match reader.read_record(&mut record) {
                Ok(true) => rows.push(Ok((0..=width)
                    .map(|i| record.get(i).unwrap_or("").to_string())
                    .collect())),
                Ok(false) => break,
                Err(e) => {
                    rows.push(Err(e.to_string()));
                    break;
                }
            }
        }
        (Ok(header), rows)
    }

    fn by_records(text: &[u8], step: usize) -> (Read_, bool) {
        let mut records = match CsvRecords::new(Trickle { text, step }) {
            Ok(r) => r,
            Err(e) => return ((Err(e.to_string()), Vec::new()), false),
        };
        let header = records.header().to_vec();
        let width = header.len();
        let mut rows = Vec::new();
        loop {
            match records.read() {
                Ok(true) => rows.push(Ok((0..=width)
                    .map(|i| records.field(i).to_string())
                    .collect())),
                Ok(false) => break,
                Err(e) => {
                    rows.push(Err(e.to_string()));
                    break;
                }
            }
        }
        let plain = matches!(records.mode, Mode::Plain(_));
        ((Ok(header), rows), plain)
    }

    /// Lines of every kind the two readers must read alike.
    const LINES: &[&str] = &[
        "a,b,c\n",
        "1, 2 ,3.5\n",
        ",,\n",
        "é,日本,x\n",
        "\u{feff}a,b,c\n",
        "\"a,b\",c,d\n",
        "\"x\ny\",1,2\n",
        "p,\"q\"\"r\",s\n",
        "a,b\"c,d\n",
        "r,s,t\r\n",
        "u,v,w\r",
        "\n",
        "\r\n",
        "a,b\n",
        "a,b,c,d\n",
        "a,\u{ff}b,c\n",
        "x,y,z",
    ];

    fn text_of(lines: &[usize], bad_utf8_at: Option<usize>) -> Vec<u8> {
        let mut text = Vec::new();
        for (k, &l) in lines.iter().enumerate() {
            let line = LINES[l % LINES.len()];
            if line.contains('\u{ff}') || bad_utf8_at == Some(k) {
                // The invalid byte 0xFF in place of the marker.
                text.extend_from_slice(b"a,\xffb,c\n");
            } else {
                text.extend_from_slice(line.as_bytes());
            }
        }
        text
    }

    #[test]
    fn plain_text_is_read_as_the_crate_reads_it_without_the_crate() {
        let mut text = b"unit,key,x\n".to_vec();
        for i in 0..5000 {
            text.extend_from_slice(format!("u{},k{},{}.5\n", i % 37, i % 11, i).as_bytes());
        }
        // A field longer than a chunk.
        text.extend_from_slice(format!("{},k,1\n", "w".repeat(3 * CHUNK)).as_bytes());
        text.extend_from_slice("é,日本,2".as_bytes());
        for step in [1, 7, CHUNK - 1, usize::MAX] {
            let (read, plain) = by_records(&text, step);
            assert_eq!(read, by_crate(&text), "step {step}");
            assert_eq!(read.1.len(), 5002);
            assert!(plain, "a plain text stays on the fast path (step {step})");
        }
    }

    #[test]
    fn every_kind_of_line_is_read_as_the_crate_reads_it() {
        // Each kind of line after plain ones, and as the header.
        for (l, line) in LINES.iter().enumerate() {
            for header in [0, l] {
                for plain_before in [0, 1, 3] {
                    let mut lines = vec![header];
                    lines.extend(std::iter::repeat_n(1, plain_before));
                    lines.extend([l, 0, 2]);
                    let text = text_of(&lines, None);
                    for step in [1, 2, 5, usize::MAX] {
                        assert_eq!(
                            by_records(&text, step).0,
                            by_crate(&text),
                            "line {line:?}, header {header}, {plain_before} plain before, step {step}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_empty_text_and_a_lone_header_are_read_as_the_crate_reads_them() {
        for text in [
            &b""[..],
            b"a,b",
            b"a,b\n",
            b"\n",
            b"\n\na,b\n1,2\n",
            b"a\n1\n\n2\n",
        ] {
            for step in [1, usize::MAX] {
                assert_eq!(by_records(text, step).0, by_crate(text), "{text:?}");
            }
        }
    }

    proptest! {
        #[test]
        fn any_mix_of_lines_is_read_as_the_crate_reads_it(
            lines in proptest::collection::vec(0usize..LINES.len(), 1..40),
            step in prop_oneof![1usize..9, Just(usize::MAX)],
        ) {
            let text = text_of(&lines, None);
            prop_assert_eq!(by_records(&text, step).0, by_crate(&text));
        }
    }
}

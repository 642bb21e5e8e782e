//! The records of a CSV table exactly as the `csv` crate reads them in its
//! default dialect (a header row; commas; double quotes; CR, LF or CRLF line
//! ends; every record as many fields as the header), split directly where the
//! text is plain.
//!
//! A line is *plain* when it is not empty, holds no quote and no carriage
//! return, is valid UTF-8, fits in the reader's buffer and has as many fields as
//! the header (and, for the header, starts with no byte-order mark): its fields
//! are then the texts between its commas, which is what the crate reads. Plain
//! lines are taken a block at a time (the text is checked for quotes, carriage
//! returns and UTF-8 once a block), then split one by one. From the first line
//! that is not plain on, the crate reads the rest, told the header and the
//! position it would have reached there, so quoted fields, blank lines, other
//! line ends and every error (with its record, line and byte) are the crate's
//! own.
//!
//! The text is what the input gives up to its first read of no bytes (a read
//! interrupted is tried again), and an input error comes after every record the
//! crate would read from the bytes before it. One difference from the crate
//! reading the input itself: a byte-order mark opening the text is dropped
//! however the input delivers it (the crate drops it only when its first read
//! holds all three bytes).

use std::io::{self, Read, Seek, SeekFrom};

/// Bytes of text the plain reader holds at once; a longer line is left to the
/// `csv` crate.
const BUFFER: usize = 1 << 20;

/// The records of a CSV text, read as [`csv::Reader`] reads them.
pub(super) struct Records<R: Read> {
    header: Vec<String>,
    mode: Mode<Fused<R>>,
}

enum Mode<R: Read> {
    Plain(Plain<R>),
    Csv(csv::Reader<Replay<R>>),
}

/// The input as the records read it: a read interrupted is tried again (for as
/// long as the input says so, as the standard library's `read_to_end` does), and
/// the first read of no bytes ends the text for good.
struct Fused<R> {
    input: R,
    done: bool,
}

impl<R: Read> Read for Fused<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.done || out.is_empty() {
            return Ok(0);
        }
        loop {
            match self.input.read(out) {
                Ok(0) => {
                    self.done = true;
                    return Ok(0);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                read => return read,
            }
        }
    }
}

/// The plain reader: the text not yet read is the record's block from its next
/// line on, then `buf[start..end]`, then `input`.
struct Plain<R> {
    /// `None` once handed to the crate.
    input: Option<R>,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    /// `buf[start..scanned]` holds no line end (when `scanned > start`).
    scanned: usize,
    /// The input's error that ended the reading here, for the crate to meet
    /// after the bytes read before it.
    failure: Option<io::Error>,
    /// The header line with its line end, for the crate should it take over.
    header_line: Vec<u8>,
    /// Where the next line starts: its byte, line and record, as the crate counts
    /// them (the header is record 0 on line 1).
    position: csv::Position,
}

/// One record: its fields by position. Pass the same record to every
/// [`Records::read`] of one text: it holds the block of plain lines being read.
#[derive(Default)]
pub(super) struct Record {
    /// Plain lines, each with its line end (but perhaps the text's last).
    block: String,
    /// Where the next line of the block starts.
    next: usize,
    /// The current plain line's fields: field `i` ends at `ends[i]` and starts
    /// after the end of field `i - 1` (at `ends[0]`, the line's start).
    ends: Vec<usize>,
    /// A record the crate read.
    csv: csv::StringRecord,
    plain: bool,
}

impl Record {
    /// Field `i` (empty when the record has none).
    pub(super) fn get(&self, i: usize) -> &str {
        if !self.plain {
            return self.csv.get(i).unwrap_or("");
        }
        match (self.ends.get(i), self.ends.get(i + 1)) {
            (Some(&a), Some(&b)) => self.block.get(a + usize::from(i > 0)..b).unwrap_or(""),
            _ => "",
        }
    }

    /// Splits the block's next line into `ends` (a line start, then each field's
    /// end): false, consuming nothing, when the line is blank or has other than
    /// `fields` fields.
    fn split_next(&mut self, fields: usize) -> bool {
        let bytes = &self.block.as_bytes()[self.next..];
        self.ends.clear();
        self.ends.push(self.next);
        let mut len = bytes.len();
        for (i, &b) in bytes.iter().enumerate() {
            if b == b',' {
                self.ends.push(self.next + i);
            } else if b == b'\n' {
                len = i;
                break;
            }
        }
        if len == 0 || self.ends.len() != fields {
            return false;
        }
        self.ends.push(self.next + len);
        self.next = (self.next + len + 1).min(self.block.len());
        true
    }

    /// The bytes of the block not read yet.
    fn rest(&self) -> &[u8] {
        &self.block.as_bytes()[self.next..]
    }
}

impl<R: Read> Records<R> {
    /// Reads the header row (the crate's error, if any, as it gives it).
    pub(super) fn new(input: R) -> Result<Self, csv::Error> {
        Self::with_buffer(input, BUFFER)
    }

    /// [`Records::new`] holding at most `buffer` bytes of text at once (tests
    /// reach the buffer's edge with small ones).
    fn with_buffer(input: R, buffer: usize) -> Result<Self, csv::Error> {
        let mut input = Fused { input, done: false };
        let mut buf = vec![0u8; buffer.max(1)];
        let (mut end, mut scanned) = (0, 0);
        // The header line: read until a line end, the buffer full or the end.
        let mut failure = None;
        let newline = loop {
            if let Some(n) = memchr::memchr(b'\n', &buf[scanned..end]) {
                break Some(scanned + n);
            }
            scanned = end;
            if end == buf.len() {
                break None;
            }
            match input.read(&mut buf[end..]) {
                Ok(0) => break None,
                Ok(n) => end += n,
                Err(e) => {
                    failure = Some(e);
                    break None;
                }
            }
        };
        let eof = newline.is_none() && end < buf.len() && failure.is_none();
        let line = &buf[..newline.unwrap_or(end)];
        // The crate drops a byte-order mark before the header: not plain.
        let plain = (newline.is_some() || eof)
            && !line.is_empty()
            && !line.starts_with(b"\xef\xbb\xbf")
            && memchr::memchr2(b'"', b'\r', line).is_none();
        let header = match std::str::from_utf8(line) {
            Ok(text) if plain => text.split(',').map(str::to_string).collect(),
            _ => {
                // Not plain: the crate reads everything, from the start.
                buf.truncate(end);
                let replay = Replay::new(buf, failure, Some(input));
                let mut csv = csv::ReaderBuilder::new().from_reader(replay);
                let header = csv.headers()?.iter().map(str::to_string).collect();
                return Ok(Records {
                    header,
                    mode: Mode::Csv(csv),
                });
            }
        };
        let start = newline.map_or(end, |n| n + 1);
        let mut position = csv::Position::new();
        position
            .set_byte(start as u64)
            .set_line(1 + u64::from(newline.is_some()))
            .set_record(1);
        Ok(Records {
            header,
            mode: Mode::Plain(Plain {
                input: Some(input),
                header_line: buf[..start].to_vec(),
                buf,
                start,
                end,
                eof,
                scanned: start,
                failure: None,
                position,
            }),
        })
    }

    /// The header's fields.
    pub(super) fn header(&self) -> &[String] {
        &self.header
    }

    /// Reads the next record into `record`: false at the end of the text.
    pub(super) fn read(&mut self, record: &mut Record) -> Result<bool, csv::Error> {
        if let Mode::Plain(p) = &mut self.mode {
            let fields = self.header.len();
            loop {
                if record.next < record.block.len() {
                    let start = record.next;
                    if !record.split_next(fields) {
                        break;
                    }
                    let newline = record.block.as_bytes()[record.next - 1] == b'\n';
                    p.advance((record.next - start) as u64, newline);
                    record.plain = true;
                    return Ok(true);
                }
                if !p.next_block(&mut record.block) {
                    break;
                }
                record.next = 0;
            }
            if record.rest().is_empty() && p.start == p.end && p.eof {
                return Ok(false);
            }
            let csv = p.hand_over(record.rest())?;
            record.block = String::new();
            record.next = 0;
            self.mode = Mode::Csv(csv);
        }
        let Mode::Csv(csv) = &mut self.mode else {
            unreachable!("set just above")
        };
        record.plain = false;
        csv.read_record(&mut record.csv)
    }
}

impl<R: Read> Plain<R> {
    /// Counts a line of `bytes` read (with its line end when `newline`).
    fn advance(&mut self, bytes: u64, newline: bool) {
        let p = &self.position;
        let (byte, line, records) = (p.byte(), p.line(), p.record());
        self.position
            .set_byte(byte + bytes)
            .set_line(line + u64::from(newline))
            .set_record(records + 1);
    }

    /// Moves the next lines of the text into `block` (replacing it) as long as
    /// they hold no quote, no carriage return and only UTF-8: false when the next
    /// line is not such a line (or is longer than the buffer), or at the end.
    fn next_block(&mut self, block: &mut String) -> bool {
        loop {
            let text = &self.buf[self.start..self.end];
            // Whole lines only (but the last one of the text); a line awaiting
            // its end is searched once, not again at each refill.
            let from = self.scanned.max(self.start);
            let whole = match memchr::memrchr(b'\n', &self.buf[from..self.end]) {
                Some(n) => from - self.start + n + 1,
                None if self.eof => text.len(),
                None => 0,
            };
            let mut take = &text[..whole];
            if let Some(n) = memchr::memchr2(b'"', b'\r', take) {
                take = &take[..line_start(take, n)];
            }
            let valid = match std::str::from_utf8(take) {
                Ok(valid) => valid,
                Err(e) => {
                    let n = line_start(take, e.valid_up_to());
                    std::str::from_utf8(&take[..n]).unwrap_or_default()
                }
            };
            if !valid.is_empty() {
                block.clear();
                block.push_str(valid);
                self.start += valid.len();
                return true;
            }
            if whole > 0 || self.eof {
                return false;
            }
            self.scanned = self.end;
            if !self.fill() {
                return false;
            }
        }
    }

    /// Moves the text not yet read to the front and reads more after it: false
    /// when the buffer is full or the input failed (the failure kept for the
    /// crate, which reads the bytes before it first).
    fn fill(&mut self) -> bool {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.scanned = self.scanned.saturating_sub(self.start);
            self.start = 0;
        }
        if self.end == self.buf.len() || self.failure.is_some() {
            return false;
        }
        let Some(input) = &mut self.input else {
            self.eof = true;
            return true;
        };
        match input.read(&mut self.buf[self.end..]) {
            Ok(0) => self.eof = true,
            Ok(n) => self.end += n,
            Err(e) => {
                self.failure = Some(e);
                return false;
            }
        }
        true
    }

    /// The crate's reader of the rest of the text (`block`, the lines taken but
    /// not read, then the buffer and the input), at the position it would have
    /// reached reading every record so far itself.
    fn hand_over(&mut self, block: &[u8]) -> Result<csv::Reader<Replay<R>>, csv::Error> {
        // The crate reads the header (so it checks each record's fields against
        // it) and is rewound to what follows it, told it stands one line before
        // the first line not read here. It reads the header's line there again,
        // as a record: a reader just repositioned would strip a byte-order mark
        // from the start of the next record, which reading from the start does
        // only before the header.
        let header = std::mem::take(&mut self.header_line);
        let mut pending = header.repeat(2);
        pending.extend_from_slice(block);
        pending.extend_from_slice(&self.buf[self.start..self.end]);
        self.buf = Vec::new();
        let replay = Replay::new(pending, self.failure.take(), self.input.take());
        let mut csv = csv::ReaderBuilder::new().from_reader(replay);
        let (p, mut before) = (&self.position, csv::Position::new());
        before
            .set_byte(p.byte() - header.len() as u64)
            .set_line(p.line() - 1)
            .set_record(p.record() - 1);
        csv.seek_raw(SeekFrom::Current(0), before)?;
        let mut again = csv::ByteRecord::new();
        let read = csv.read_byte_record(&mut again)?;
        debug_assert!(read && csv.position() == &self.position);
        Ok(csv)
    }
}

/// The start of the line of `text` that byte `n` is in.
fn line_start(text: &[u8], n: usize) -> usize {
    memchr::memrchr(b'\n', &text[..n]).map_or(0, |i| i + 1)
}

/// Bytes already read, then the input's error that stopped the reading there (if
/// any), then the rest of the input: what the crate reads when it takes over. It
/// can be rewound within the bytes already read (the crate's buffered reader does
/// so once, when it is told where it stands).
struct Replay<R> {
    pending: Vec<u8>,
    at: usize,
    failure: Option<io::Error>,
    input: Option<R>,
    /// The pending bytes are all read, and the input's after them.
    reading_input: bool,
}

impl<R> Replay<R> {
    fn new(pending: Vec<u8>, failure: Option<io::Error>, input: Option<R>) -> Self {
        Replay {
            pending,
            at: 0,
            failure,
            input,
            reading_input: false,
        }
    }
}

impl<R: Read> Read for Replay<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.at < self.pending.len() {
            let n = out.len().min(self.pending.len() - self.at);
            out[..n].copy_from_slice(&self.pending[self.at..self.at + n]);
            self.at += n;
            return Ok(n);
        }
        self.reading_input = true;
        if let Some(e) = self.failure.take() {
            return Err(e);
        }
        match &mut self.input {
            Some(input) => input.read(out),
            None => Ok(0),
        }
    }
}

impl<R> Seek for Replay<R> {
    /// Only rewinds (or stays) within the bytes already read, before the input's.
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let back = match to {
            SeekFrom::Current(d) if d <= 0 => d.unsigned_abs() as usize,
            _ => usize::MAX,
        };
        if back > self.at || self.reading_input {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "a CSV text read ahead is only rewound within what was read",
            ));
        }
        self.at -= back;
        Ok(self.at as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A text's header (or the error reading it), its records, and the error
    /// that ended the reading (as its text, with its position).
    type Outcome = (
        Result<Vec<String>, String>,
        Vec<Vec<String>>,
        Option<String>,
    );

    /// What the `csv` crate reads: the header, then each record's fields, or the
    /// error (as its text, with its position) that ends the reading.
    fn by_the_crate(text: &[u8]) -> Outcome {
        by_the_crate_from(text)
    }

    /// The same from any input.
    fn by_the_crate_from(input: impl Read) -> Outcome {
        let mut csv = csv::ReaderBuilder::new().from_reader(input);
        let header = match csv.headers() {
            Ok(h) => Ok(h.iter().map(str::to_string).collect()),
            Err(e) => return (Err(e.to_string()), Vec::new(), None),
        };
        let mut rows = Vec::new();
        let mut record = csv::StringRecord::new();
        loop {
            match csv.read_record(&mut record) {
                Ok(true) => rows.push(record.iter().map(str::to_string).collect()),
                Ok(false) => return (header, rows, None),
                Err(e) => return (header, rows, Some(e.to_string())),
            }
        }
    }

    /// The same through [`Records`], reading `chunk` bytes at a time.
    fn by_records(text: &[u8], chunk: usize) -> Outcome {
        by_records_from(Delivery::new(text, chunk, None))
    }

    /// The same from any input.
    fn by_records_from(input: impl Read) -> Outcome {
        by_records_buffered(input, BUFFER)
    }

    /// The same holding at most `buffer` bytes of text at once.
    fn by_records_buffered(input: impl Read, buffer: usize) -> Outcome {
        let mut records = match Records::with_buffer(input, buffer) {
            Ok(r) => r,
            Err(e) => return (Err(e.to_string()), Vec::new(), None),
        };
        let header = Ok(records.header().to_vec());
        let fields = records.header().len();
        let mut rows = Vec::new();
        let mut record = Record::default();
        loop {
            match records.read(&mut record) {
                Ok(true) => {
                    // As many fields as the crate's record has (it refuses others).
                    let n = if record.plain {
                        record.ends.len() - 1
                    } else {
                        record.csv.len()
                    };
                    assert!(!record.plain || n == fields);
                    rows.push((0..n).map(|i| record.get(i).to_string()).collect());
                }
                Ok(false) => return (header, rows, None),
                Err(e) => return (header, rows, Some(e.to_string())),
            }
        }
    }

    /// What an input does once, before giving a text's byte `at`.
    #[derive(Clone, Copy, Debug)]
    enum Event {
        /// A read of no bytes, then the rest of the text.
        Nothing,
        /// A read interrupted.
        Interrupted,
        /// A read failing, then the rest of the text.
        Failure,
    }

    /// An input that gives at most `chunk` bytes a read, and perhaps an event.
    struct Delivery<'t> {
        text: &'t [u8],
        chunk: usize,
        given: usize,
        event: Option<(usize, Event)>,
    }

    impl<'t> Delivery<'t> {
        fn new(text: &'t [u8], chunk: usize, event: Option<(usize, Event)>) -> Self {
            Delivery {
                text,
                chunk,
                given: 0,
                event,
            }
        }
    }

    impl Read for Delivery<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let mut n = out.len().min(self.chunk).min(self.text.len());
            if let Some((at, event)) = self.event {
                if at == self.given && !out.is_empty() {
                    self.event = None;
                    return match event {
                        Event::Nothing => Ok(0),
                        Event::Interrupted => Err(io::ErrorKind::Interrupted.into()),
                        Event::Failure => Err(io::Error::other("disk on fire")),
                    };
                }
                if at > self.given {
                    n = n.min(at - self.given);
                }
            }
            out[..n].copy_from_slice(&self.text[..n]);
            self.text = &self.text[n..];
            self.given += n;
            Ok(n)
        }
    }

    /// Reads `text` with `event` before byte `at`, in chunks of 1, 3, 64 bytes
    /// and at once: the text before a read of nothing reads as the crate reads
    /// it, an interrupted read changes nothing, and a failure comes after the
    /// records the crate reads before meeting it.
    fn check_event(text: &[u8], at: usize, event: Event) {
        let want = match event {
            Event::Nothing => by_the_crate(&text[..at]),
            Event::Interrupted => by_the_crate(text),
            Event::Failure => by_the_crate_from(Delivery::new(text, usize::MAX, Some((at, event)))),
        };
        for chunk in [1, 3, 64, usize::MAX] {
            // The buffer's edge (a line across it, a line longer than it) too.
            for buffer in [BUFFER, 5, 16] {
                let input = Delivery::new(text, chunk, Some((at, event)));
                assert_eq!(
                    by_records_buffered(input, buffer),
                    want,
                    "{:?}, {event:?} at {at}, chunks of {chunk}, buffer {buffer}",
                    String::from_utf8_lossy(text)
                );
            }
        }
    }

    /// The one difference from the crate reading the input itself: a byte-order
    /// mark opening the text is dropped however the input delivers it; the crate
    /// drops it only when its first read holds all three bytes.
    #[test]
    fn a_byte_order_mark_is_dropped_whatever_the_reads() {
        let text = b"\xef\xbb\xbfa,b\n1,2\n";
        let whole = by_the_crate(text);
        assert_eq!(whole.0, Ok(vec!["a".to_string(), "b".to_string()]));
        for chunk in [1, 2, 3, usize::MAX] {
            assert_eq!(by_records(text, chunk), whole, "chunks of {chunk}");
        }
        let by_byte = by_the_crate_from(Delivery::new(text, 1, None));
        assert_ne!(
            by_byte.0, whole.0,
            "the crate reading a byte at a time keeps it"
        );
    }

    #[test]
    fn reads_as_the_crate_whatever_the_input_does() {
        let texts: [&[u8]; 5] = [
            b"a,b\n1,2\n3,4\n",
            b"a,b\n1,2\r3,4\n5,6\n",
            b"a,b\r1,2\n",
            b"a,b\n1,\"2\"\n3,4",
            b"\xef\xbb\xbfa,b\n1,2\n",
        ];
        for text in texts {
            for at in 0..=text.len() {
                for event in [Event::Nothing, Event::Interrupted, Event::Failure] {
                    check_event(text, at, event);
                }
            }
        }
    }

    fn check(text: &[u8]) {
        let want = by_the_crate(text);
        for chunk in [1, 3, 64, usize::MAX] {
            for buffer in [BUFFER, 5, 16] {
                assert_eq!(
                    by_records_buffered(Delivery::new(text, chunk, None), buffer),
                    want,
                    "{:?}, chunks of {chunk}, buffer {buffer}",
                    String::from_utf8_lossy(text)
                );
            }
        }
    }

    #[test]
    fn reads_what_the_csv_crate_reads() {
        let plain = "u,g,x\nd1,g1,2.5\nd2,,-1\n,g3,\nd4,g 4 ,1e3\n";
        check(plain.as_bytes());
        // A text without a last line end, with only a header, empty.
        check(b"u,g,x\nd1,g1,2.5");
        check(b"u,g,x\n");
        check(b"u,g,x");
        check(b"");
        check(b"\n");
        check(b"\n\nu,g\n1,2\n");
        // Every kind of line the crate reads otherwise, first and after plain lines.
        let odd: [&[u8]; 14] = [
            b"\"d,1\",g1,2\n",
            b"d\"1,g1,2\n",
            b"d1,g1,2\r\n",
            b"d1,g1,2\rd2,g2,3\n",
            b"\n",
            b"d1,g1\n",
            b"d1,g1,2,3\n",
            b"d\xff1,g1,2\n",
            b"\xc3\xa9t\xc3\xa9,g\xe2\x82\xac,2\n",
            b"\"multi\nline\",g,1\n",
            b"\xef\xbb\xbfd1,g1,2\n",
            b"d1,g1,\"2\"\"\"\n",
            // A byte-order mark opening a line the crate reads.
            b"\xef\xbb\xbf,\"g\r\n1\",2\n",
            b"\xef\xbb\xbfd1\r\n",
        ];
        for line in odd {
            for before in [0, 1, 5] {
                for after in [0, 1, 3] {
                    let mut text = b"u,g,x\n".to_vec();
                    for i in 0..before {
                        text.extend_from_slice(format!("d{i},g{i},{i}\n").as_bytes());
                    }
                    text.extend_from_slice(line);
                    for i in 0..after {
                        text.extend_from_slice(format!("e{i},h{i},{i}\n").as_bytes());
                    }
                    check(&text);
                    // The same as the header's line.
                    let mut head = line.to_vec();
                    head.extend_from_slice(&text[6..]);
                    check(&head);
                }
            }
        }
    }

    /// A line longer than the buffer, and many lines across its refills.
    #[test]
    fn long_lines_and_many_lines() {
        let long = "y".repeat(BUFFER + 10);
        check(format!("u,g\nd1,1\n{long},2\nd3,3\n").as_bytes());
        check(format!("u,{long}\nd1,1\n").as_bytes());
        let mut text = String::from("unit,key,value\n");
        for i in 0..120_000 {
            text.push_str(&format!("d{i},g{},{}.25\n", i % 13, i));
        }
        text.push_str("d,g,\"1\"\n");
        let want = by_the_crate(text.as_bytes());
        assert_eq!(want.1.len(), 120_001);
        assert_eq!(by_records(text.as_bytes(), usize::MAX), want);
        assert_eq!(by_records(text.as_bytes(), 4093), want);
        // An error far into the text names the crate's line and byte.
        text.push_str("d,g\n");
        let want = by_the_crate(text.as_bytes());
        assert!(
            want.2
                .as_deref()
                .is_some_and(|e| e.contains("line: 120003")),
            "{want:?}"
        );
        assert_eq!(by_records(text.as_bytes(), usize::MAX), want);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

        /// Any text made of plain lines and the pieces that end the direct
        /// splitting (quotes, CR, byte-order marks, invalid and split UTF-8, blank
        /// lines, other field counts), anywhere and in any order, reads as the
        /// crate reads it, in chunks of 1, 3, 64 bytes or at once.
        #[test]
        fn any_text_reads_as_the_crate_reads(
            pieces in proptest::collection::vec(0usize..PIECES.len(), 0..48),
        ) {
            let text: Vec<u8> = pieces.iter().flat_map(|&i| PIECES[i].iter().copied()).collect();
            check(&text);
        }

        /// The same with a read of nothing, an interrupted read or a failure
        /// anywhere.
        #[test]
        fn any_text_reads_as_the_crate_reads_whatever_the_input_does(
            pieces in proptest::collection::vec(0usize..PIECES.len(), 0..48),
            at in proptest::prelude::any::<proptest::sample::Index>(),
            event in 0usize..3,
        ) {
            let text: Vec<u8> = pieces.iter().flat_map(|&i| PIECES[i].iter().copied()).collect();
            let event = [Event::Nothing, Event::Interrupted, Event::Failure][event];
            check_event(&text, at.index(text.len() + 1), event);
        }
    }

    /// The pieces of [`any_text_reads_as_the_crate_reads`]'s texts.
    const PIECES: &[&[u8]] = &[
        b"u,g,x\n",
        b"d1,g1,2.5\n",
        b"d2,g2,-1\n",
        b"d3,,\n",
        b"a",
        b",",
        b"\n",
        b"\r",
        b"\r\n",
        b"\"",
        b"\"q,\"\"\n\"",
        b"\xef\xbb\xbf",
        b"\xef\xbb\xbfd1,g1,1\n",
        b"\xff",
        b"\xc3",
        b"\xa9",
        b"\xc3\xa9",
        b" ",
        b"d9,g9\n",
        b"d9,g9,1,2\n",
        b"\n\n",
    ];

    /// An input error surfaces as the crate's, wherever it comes.
    #[test]
    fn input_errors_are_errors() {
        struct Failing(usize);
        impl Read for Failing {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                if self.0 == 0 {
                    return Err(io::Error::other("disk on fire"));
                }
                let n = out.len().min(self.0).min(6);
                out[..n].copy_from_slice(&b"a,b\n1,"[..n]);
                self.0 -= n;
                Ok(n)
            }
        }
        assert!(Records::new(Failing(0)).is_err());
        let mut r = Records::new(Failing(4)).unwrap();
        let e = r.read(&mut Record::default()).unwrap_err();
        assert!(e.to_string().contains("disk on fire"), "{e}");
    }
}

//! The rows a query reads: each row's privacy unit, its group key and its values.

use std::collections::BTreeMap;
use std::io::Read;

use super::AggregateError;
use super::bins::Binning;
use super::bounding::encode_key_into;
use super::filter::Filter;
use super::intern::{Interner, Names, TextHash};
use super::records::{Record, Records};

/// Which columns of a CSV table a query reads, and which rows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Columns {
    /// The privacy-unit column (`None`: every row is its own unit).
    pub unit: Option<String>,
    /// The grouping keys, in order (none: one group, the whole table): a column's
    /// text, or, for a name in `bins`, a histogram bin's label.
    pub group_by: Vec<String>,
    /// The group-by keys that are histogram bins, by name: the key is the label of
    /// the bin the binned column's value falls in (a value checked like the
    /// aggregated values: a finite number, or the row is refused or dropped).
    pub bins: BTreeMap<String, Binning>,
    /// The numeric columns the aggregates read.
    pub values: Vec<String>,
    /// The rows kept (`WHERE`); none: every row.
    pub filter: Option<Filter>,
    /// Drop a row whose unit is empty or whose values (aggregated or binned) are not
    /// finite numbers, instead of refusing the table (a per-row rule, so it costs
    /// nothing; how many rows it drops is not reported).
    pub drop_invalid: bool,
}

impl Columns {
    /// The columns compared as text — the privacy unit, plain group-by keys,
    /// `WHERE` columns — in that order, each once.
    pub fn text_columns(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let plain = self.group_by.iter().filter(|g| !self.bins.contains_key(*g));
        let filter = self.filter.iter().flat_map(|f| f.columns());
        for c in self.unit.iter().chain(plain).cloned().chain(filter) {
            if !out.contains(&c) {
                out.push(c);
            }
        }
        out
    }

    /// The columns read only as numbers — binned keys' columns and aggregated
    /// values not among [`Columns::text_columns`] — each once.
    pub fn number_columns(&self) -> Vec<String> {
        let text = self.text_columns();
        let mut out: Vec<String> = Vec::new();
        let binned = self.bins.values().map(|b| b.column().to_string());
        for c in binned.chain(self.values.iter().cloned()) {
            if !text.contains(&c) && !out.contains(&c) {
                out.push(c);
            }
        }
        out
    }
}

/// The error of a table path that is not one regular file (a directory, which an
/// engine reading a path would read every file under, a pipe or a device): the
/// one `privq sql` gives on every engine.
pub fn not_a_regular_file() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        "not a regular file: privq sql reads a table from one regular file",
    )
}

/// The rows of a table as a query reads them: held in memory, with each privacy
/// unit and each group key interned to a number.
///
/// Loading refuses what it cannot read faithfully, naming the line and column (not
/// the value): a missing column, an empty or non-numeric or non-finite value (of an
/// aggregated or a binned column), a
/// row with no privacy unit — checked on every row, whatever the filter keeps (or
/// such rows are dropped, with [`Columns::drop_invalid`]). Nothing is dropped or reinterpreted silently. Refusals (and the
/// row cap) are for the curator: they depend on the data and are not releases, so
/// an automated pipeline that publishes them would publish that dependence.
#[derive(Debug, Clone)]
pub struct Table {
    columns: Columns,
    units: Vec<u32>,
    unit_names: Names,
    keys: Vec<u32>,
    key_values: Vec<Vec<String>>,
    values: Vec<Vec<f64>>,
    read: usize,
}

impl Table {
    /// Reads a CSV table with a header row, keeping the rows the filter accepts.
    /// `max_rows` caps the number of rows read (a table past it is refused before
    /// anything is spent; past `u32::MAX` rows, whatever the cap).
    ///
    /// Two threads share the work: this one parses the CSV text, checks each
    /// row (its values, bins and the filter) and numbers each kept row's group
    /// key, in batches of 2 048 rows (or 1 MiB of the kept rows' units and new
    /// keys), each batch holding only what is kept, column by column, at most two
    /// batches ahead of a second that interns the units of the rows kept, in row
    /// order. The table, and the first error in row
    /// order, are those of reading the rows one by one (as it does when no second
    /// thread can be started); rows past the cap or after an error are not parsed.
    pub fn from_csv<R: Read>(
        reader: R,
        columns: &Columns,
        max_rows: usize,
    ) -> Result<Self, AggregateError> {
        let max_rows = max_rows.min(MAX_ROWS);
        let mut records = Records::new(reader)?;
        if records.header().is_empty() {
            return Err(AggregateError::EmptyTable);
        }
        let reader = RowReader::new(records.header(), columns)?;
        // Two batches in flight: the parser runs at most two batches ahead.
        let (full, batches) = std::sync::mpsc::sync_channel::<Batch>(2);
        let (recycle, spent) = std::sync::mpsc::channel::<Batch>();
        let hash = TextHash::default();
        std::thread::scope(|scope| {
            let reader = &reader;
            let unit_hash = hash.clone();
            let interner = std::thread::Builder::new().spawn_scoped(scope, move || {
                intern_batches(columns, max_rows, unit_hash, batches, recycle)
            });
            let Ok(interner) = interner else {
                // No thread to be had (a process limit): one by one, here.
                let mut record = Record::default();
                return Self::read(reader, columns, max_rows, &mut record, &|_| None, |r| {
                    Ok(records.read(r)?)
                });
            };
            parse_batches(&mut records, reader, columns, max_rows, &hash, full, spent);
            interner
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }

    /// Reads a table of `rows` rows given column by column, each value as its text
    /// (a missing value as the empty text), with the checks and the row cap of
    /// [`Table::from_csv`]: a value is read exactly as the same text in a CSV
    /// field would be, and an error names the line that row would have in a CSV
    /// file with a header (row `r`, from 0, is line `r + 2`). Every column must
    /// have exactly `rows` values; `data` may be empty (a plan that reads no
    /// column, such as `SELECT COUNT(*) FROM t`, still counts the rows).
    ///
    /// A column is anything that gives its values' texts ([`TextColumn`]): a
    /// `Vec<String>`, or an engine's own array wrapped, so nothing is copied. A
    /// column of numbers ([`TextColumn::number`]) skips the text for the fields read
    /// as numbers — aggregated values and binned keys — and is refused where the
    /// query compares text (the privacy unit, a plain group-by key, `WHERE`).
    pub fn from_columns<C: TextColumn>(
        data: &[(String, C)],
        rows: usize,
        columns: &Columns,
        max_rows: usize,
    ) -> Result<Self, AggregateError> {
        let max_rows = max_rows.min(MAX_ROWS);
        if let Some((name, values)) = data.iter().find(|(_, v)| v.len() != rows) {
            return Err(AggregateError::InvalidParameter(format!(
                "column {name:?} has {} values, the table {rows} rows",
                values.len()
            )));
        }
        let header: Vec<String> = data.iter().map(|(name, _)| name.clone()).collect();
        let reader = RowReader::new(&header, columns)?;
        if let Some((name, _)) = reader
            .text_fields()
            .iter()
            .filter_map(|&i| data.get(i))
            .find(|(_, c)| c.holds_numbers())
        {
            return Err(AggregateError::InvalidParameter(format!(
                "column {name:?} is given as numbers, but the query reads it as text \
                 (the privacy unit, a group-by key or a WHERE column): give its texts"
            )));
        }
        let mut record = ColumnRow { data, row: None };
        let unit_of = |r: usize| reader.unit(|i| trim_field(ColumnRow::text(data, r, i)));
        Self::read(&reader, columns, max_rows, &mut record, &unit_of, |r| {
            let next = r.row.map_or(0, |i| i + 1);
            r.row = Some(next);
            Ok(next < rows)
        })
    }

    /// The rows of `next` (which loads the next row into `record`, or returns
    /// false at the end), read against `header` as [`Table::from_csv`] describes.
    /// `unit_of(r)` is row `r`'s unit (from 0; `None` when not known ahead): the
    /// interner's slots of the next rows' units are loaded before they are looked
    /// up ([`Interner::warm`]; a wrong text would only load a useless slot).
    fn read<'u, F: Fields>(
        reader: &RowReader,
        columns: &Columns,
        max_rows: usize,
        record: &mut F,
        unit_of: &dyn Fn(usize) -> Option<&'u str>,
        mut next: impl FnMut(&mut F) -> Result<bool, AggregateError>,
    ) -> Result<Self, AggregateError> {
        let hash = TextHash::default();
        let mut table = TableBuilder::new(columns, hash.clone());
        let mut parsed: Vec<f64> = Vec::with_capacity(columns.values.len());
        // The bin of each key (unused for a plain one).
        let mut bin_of: Vec<usize> = vec![0; columns.group_by.len()];
        let mut ahead: Vec<u32> = Vec::with_capacity(WARM);
        let mut row = 0usize;
        while next(record)? {
            let line = row + 2;
            if row == max_rows {
                return Err(AggregateError::TooManyRows { max: max_rows });
            }
            if row.is_multiple_of(WARM) {
                ahead.clear();
                ahead.extend((row..row + WARM).filter_map(|r| unit_of(r).map(|u| hash.of(u))));
                table.warm_units(&ahead);
            }
            row += 1;
            let field = |i: usize| trim_field(record.field(i));
            let number = |i: usize| record.number(i);
            if reader.read(field, number, line, &mut parsed, &mut bin_of)? {
                table.push(reader, row, &field, &parsed, &bin_of);
            }
        }
        table.finish(row)
    }

    /// The columns the table was read with.
    pub fn columns(&self) -> &Columns {
        &self.columns
    }

    /// The number of rows kept.
    pub fn rows(&self) -> usize {
        self.keys.len()
    }

    /// True when the input had no data row at all (before any filter).
    pub fn is_empty(&self) -> bool {
        self.read == 0
    }

    #[cfg(test)]
    pub(super) fn unit(&self, row: usize) -> u32 {
        self.units[row]
    }

    /// Each row's interned unit (with a privacy-unit column; below
    /// [`Table::unit_count`]).
    pub(super) fn unit_ids(&self) -> &[u32] {
        &self.units
    }

    /// The number of distinct units (with a privacy-unit column).
    pub(super) fn unit_count(&self) -> usize {
        self.unit_names.len()
    }

    /// Each row's interned group key (an index into [`Table::key_values`]).
    pub(super) fn key_ids(&self) -> &[u32] {
        &self.keys
    }

    /// The text of unit `id` (only with a privacy-unit column).
    pub(super) fn unit_name(&self, id: u32) -> &str {
        self.unit_names.text(id)
    }

    #[cfg(test)]
    pub(super) fn key(&self, row: usize) -> u32 {
        self.keys[row]
    }

    pub(super) fn key_values(&self) -> &[Vec<String>] {
        &self.key_values
    }

    /// The values of numeric column `c` (an index into [`Columns::values`]).
    pub(super) fn values(&self, c: usize) -> &[f64] {
        &self.values[c]
    }
}

/// A field as every engine reads it: without the white space (Unicode's, as
/// [`str::trim`] removes it) at either end. Equal to `field.trim()`; a field that
/// starts and ends with a visible ASCII character, the usual one, is returned
/// without scanning its characters.
///
/// ```
/// use privq_host::aggregate::trim_field;
/// assert_eq!(trim_field(" d17\t"), "d17");
/// assert_eq!(trim_field("\u{a0}d17"), "d17");
/// assert_eq!(trim_field("d 17"), "d 17");
/// ```
pub fn trim_field(field: &str) -> &str {
    let visible = |b: Option<&u8>| b.is_some_and(|&b| b > b' ' && b.is_ascii());
    let bytes = field.as_bytes();
    if visible(bytes.first()) && visible(bytes.last()) {
        field
    } else {
        field.trim()
    }
}

/// The most rows a table holds, whatever cap the caller gives: rows, units and
/// keys are numbered by `u32` (the interner stores a number plus one, 0 marking a
/// free slot), so a table past it is refused while it is read (as past any cap),
/// before a number could overflow.
const MAX_ROWS: usize = u32::MAX as usize;

/// Records a batch of [`Table::from_csv`] carries from the parser to the interner.
const BATCH: usize = 2048;

/// Bytes of text (the kept rows' units and the keys first seen) after which a
/// batch is sent even if it has fewer records. At most four batches exist at once
/// (two queued, one being interned, one being filled), each holding at most this
/// plus one row's unit and key (the units in a buffer of at most twice that; the
/// new keys counted by their text, each field also costing a `String`'s few dozen
/// bytes, of at most `BATCH` rows), and a spent batch keeps at most this much in
/// its units' buffer for reuse: at most 16 MiB in all with short rows, and a few
/// times a long row's size, whatever the rows.
const BATCH_BYTES: usize = 1 << 20;

/// Rows whose units' slots the interner loads together ([`Interner::warm`]).
const WARM: usize = 16;

/// A batch of records parsed and checked by [`Table::from_csv`]'s parser, column
/// by column: only what the interner needs of the rows kept.
#[derive(Default)]
struct Batch {
    /// The records read (kept, skipped, and the invalid one last).
    records: usize,
    /// Each kept row's position among the batch's records.
    kept: Vec<u32>,
    /// The kept rows' units (with a privacy-unit column), and their hashes.
    units: Names,
    unit_tags: Vec<u32>,
    /// The kept rows' group keys' numbers ([`KeyNumbers`], given by the parser),
    /// and the fields of the keys first seen in this batch, in order (a binned
    /// key's field is its bin label), with their bytes.
    key_ids: Vec<u32>,
    new_keys: Vec<Vec<String>>,
    new_key_bytes: usize,
    /// The kept rows' values, [`Columns::values`]`.len()` a row.
    values: Vec<f64>,
    /// The error of the last record, which refuses the table.
    invalid: Option<AggregateError>,
    /// The parser's error after the last record (the file ends there).
    error: Option<csv::Error>,
}

impl Batch {
    fn clear(&mut self) {
        self.records = 0;
        self.kept.clear();
        self.units.clear(BATCH_BYTES);
        self.unit_tags.clear();
        self.key_ids.clear();
        self.new_keys.clear();
        self.new_key_bytes = 0;
        self.values.clear();
        self.invalid = None;
        self.error = None;
    }

    /// The bytes of text the batch holds.
    fn bytes(&self) -> usize {
        self.units.bytes() + self.new_key_bytes
    }
}

/// The parser of [`Table::from_csv`]: parses and checks the records in batches
/// sent to `full` (reusing the batches from `spent`), numbering each kept row's
/// group key and hashing its unit with `unit_hash` (the interner's). It stops
/// after the first error, after the record past the cap, at the end of the text,
/// or when the interner stops listening.
fn parse_batches<R: Read>(
    records: &mut Records<R>,
    reader: &RowReader,
    columns: &Columns,
    max_rows: usize,
    unit_hash: &TextHash,
    full: std::sync::mpsc::SyncSender<Batch>,
    spent: std::sync::mpsc::Receiver<Batch>,
) {
    let mut record = Record::default();
    let mut row = 0usize;
    let mut parsed = Vec::with_capacity(columns.values.len());
    let mut bin_of = vec![0usize; columns.group_by.len()];
    let mut keys = KeyNumbers::new(columns.group_by.len());
    while row <= max_rows {
        let mut batch = spent.try_recv().unwrap_or_default();
        batch.clear();
        let mut stop = false;
        while batch.records < BATCH && batch.bytes() < BATCH_BYTES && row <= max_rows {
            match records.read(&mut record) {
                Ok(true) => {}
                Ok(false) => {
                    stop = true;
                    break;
                }
                Err(e) => {
                    batch.error = Some(e);
                    stop = true;
                    break;
                }
            }
            let field = |i: usize| trim_field(record.get(i));
            let line = row + 2;
            row += 1;
            batch.records += 1;
            match reader.read(field, |_| None, line, &mut parsed, &mut bin_of) {
                Ok(true) => {
                    if let Some(unit) = reader.unit(field) {
                        batch.units.push(unit);
                        batch.unit_tags.push(unit_hash.of(unit));
                    }
                    let key = |k: usize| reader.key_field(k, field, &bin_of);
                    let new = batch.new_keys.len();
                    batch.key_ids.push(keys.id(key, &mut batch.new_keys));
                    if let Some(fields) = batch.new_keys.get(new) {
                        batch.new_key_bytes += fields.iter().map(String::len).sum::<usize>();
                    }
                    batch.values.extend_from_slice(&parsed);
                    // Below BATCH.
                    batch.kept.push((batch.records - 1) as u32);
                }
                Ok(false) => {}
                Err(e) => {
                    batch.invalid = Some(e);
                    stop = true;
                    break;
                }
            }
        }
        // The interner stops at the first error (it drops the receiver).
        if full.send(batch).is_err() || stop {
            return;
        }
    }
}

/// The interner of [`Table::from_csv`]: the table of the batches' kept rows, in
/// row order, or the first error in row order (the row cap checked before each
/// record, as reading them one by one does). Spent batches go back to the
/// parser through `recycle`.
fn intern_batches(
    columns: &Columns,
    max_rows: usize,
    hash: TextHash,
    batches: std::sync::mpsc::Receiver<Batch>,
    recycle: std::sync::mpsc::Sender<Batch>,
) -> Result<Table, AggregateError> {
    let mut table = TableBuilder::new(columns, hash);
    let width = columns.values.len();
    let with_units = columns.unit.is_some();
    // Records read before this batch: at most max_rows (the parser reads at most
    // one past the cap, and that one is refused here).
    let mut row = 0usize;
    for mut batch in batches.iter() {
        // A record at position max_rows is refused before its outcome counts: an
        // invalid last record, or an error after it, comes after the cap.
        if batch.records > max_rows - row {
            return Err(AggregateError::TooManyRows { max: max_rows });
        }
        table.table.key_values.append(&mut batch.new_keys);
        // The kept rows' keys and values a column at a time, then their units.
        let t = &mut table.table;
        t.keys.extend_from_slice(&batch.key_ids);
        for (c, column) in t.values.iter_mut().enumerate() {
            column.extend(batch.values.iter().skip(c).step_by(width));
        }
        if with_units {
            let tags = &batch.unit_tags;
            for (j, &tag) in tags.iter().enumerate() {
                if j.is_multiple_of(WARM) {
                    table.warm_units(&tags[j..tags.len().min(j + WARM)]);
                }
                let id = table.units.id_hashed(batch.units.text(j as u32), tag);
                table.table.units.push(id);
            }
        } else {
            // Each row its own unit: its index among all records read (below
            // MAX_ROWS, the most rows read).
            let rows = batch.kept.iter().map(|&at| (row + at as usize) as u32);
            table.table.units.extend(rows);
        }
        row += batch.records;
        if let Some(e) = batch.invalid.take() {
            return Err(e);
        }
        if let Some(e) = batch.error.take() {
            return Err(e.into());
        }
        // The parser may have stopped: a spent batch is then dropped.
        let _ = recycle.send(batch);
    }
    table.finish(row)
}

/// Group keys numbered 0, 1, 2 … in the order first seen: a key of one field by
/// that field, a key of several by their [`encode_key`](super::encode_key) text
/// (unambiguous whatever the fields hold), built in one reused buffer.
struct KeyNumbers {
    /// The number of fields a key has.
    fields: usize,
    keys: Interner,
    text: String,
}

impl KeyNumbers {
    fn new(fields: usize) -> Self {
        KeyNumbers {
            fields,
            keys: Interner::new(TextHash::default()),
            text: String::new(),
        }
    }

    /// The number of the key whose fields are `key(0)`, `key(1)` …; a key not
    /// seen before has its fields pushed onto `new`.
    fn id<'k>(&mut self, key: impl Fn(usize) -> &'k str, new: &mut Vec<Vec<String>>) -> u32 {
        let known = self.keys.len();
        let id = if self.fields == 1 {
            self.keys.id(key(0))
        } else {
            encode_key_into(&mut self.text, (0..self.fields).map(&key));
            self.keys.id(&self.text)
        };
        if id as usize == known {
            new.push((0..self.fields).map(|k| key(k).to_string()).collect());
        }
        id
    }
}

/// A table being built from its kept rows, in row order: units and keys numbered
/// in first-seen order.
struct TableBuilder {
    table: Table,
    units: Interner,
    keys: KeyNumbers,
}

impl TableBuilder {
    /// An empty table of `columns`, its units found by `unit_hash`.
    fn new(columns: &Columns, unit_hash: TextHash) -> Self {
        TableBuilder {
            table: Table {
                columns: columns.clone(),
                units: Vec::new(),
                unit_names: Names::default(),
                keys: Vec::new(),
                key_values: Vec::new(),
                values: vec![Vec::new(); columns.values.len()],
                read: 0,
            },
            units: Interner::new(unit_hash),
            keys: KeyNumbers::new(columns.group_by.len()),
        }
    }

    /// Loads the interner's slots of the units of these hashes (the next rows').
    fn warm_units(&self, tags: &[u32]) {
        self.units.warm(tags);
    }

    /// Adds kept row number `row` (from 1) of the row-by-row reader: its fields,
    /// values and bins.
    fn push<'f>(
        &mut self,
        reader: &RowReader,
        row: usize,
        field: &dyn Fn(usize) -> &'f str,
        parsed: &[f64],
        bin_of: &[usize],
    ) {
        let key = |k: usize| reader.key_field(k, field, bin_of);
        let key = self.keys.id(key, &mut self.table.key_values);
        let table = &mut self.table;
        let unit = match reader.unit(field) {
            Some(unit) => self.units.id(unit),
            // Each row its own unit: its index among all records read (below
            // MAX_ROWS, the most rows read).
            None => (row - 1) as u32,
        };
        for (c, &x) in parsed.iter().enumerate() {
            table.values[c].push(x);
        }
        table.units.push(unit);
        table.keys.push(key);
    }

    /// The table of `rows` rows read.
    fn finish(mut self, rows: usize) -> Result<Table, AggregateError> {
        debug_assert!(rows <= MAX_ROWS, "the readers stop at MAX_ROWS");
        self.table.read = rows;
        self.table.unit_names = self.units.into_names();
        Ok(self.table)
    }
}

/// How one row of a table is read, for [`Table::from_csv`] and for any engine that
/// reads the same rows elsewhere: which fields a row's unit, key and values come
/// from, the checks every row passes (before any filter) and the filter.
#[derive(Debug, Clone)]
pub struct RowReader {
    columns: Columns,
    unit_index: Option<usize>,
    /// Each key's field, and its binning for a histogram key.
    key_index: Vec<(usize, Option<Binning>)>,
    value_index: Vec<usize>,
    filter_columns: Vec<(String, usize)>,
}

/// A row as [`RowReader::row`] reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadRow {
    /// The unit's text (`None` without a privacy-unit column).
    pub unit: Option<String>,
    /// The group key, one text per group-by key.
    pub key: Vec<String>,
    /// The values of `Columns::values`, in order.
    pub values: Vec<f64>,
}

impl RowReader {
    /// The reader of `columns` for a table with `header` (names compared after
    /// trimming): refuses a missing or duplicated column as [`Table::from_csv`] does.
    pub fn new(header: &[String], columns: &Columns) -> Result<Self, AggregateError> {
        let index = |name: &str| -> Result<usize, AggregateError> {
            let mut found = header.iter().enumerate().filter(|(_, h)| h.trim() == name);
            match (found.next(), found.next()) {
                (Some((i, _)), None) => Ok(i),
                (Some((i, _)), Some((j, _))) => Err(AggregateError::DuplicateColumn {
                    column: name.to_string(),
                    first: i + 1,
                    second: j + 1,
                }),
                (None, _) => Err(AggregateError::MissingColumn {
                    column: name.to_string(),
                    available: header.to_vec(),
                }),
            }
        };
        let unit_index = columns.unit.as_deref().map(index).transpose()?;
        let key_index = columns
            .group_by
            .iter()
            .map(|c| match columns.bins.get(c) {
                Some(b) => index(b.column()).map(|i| (i, Some(b.clone()))),
                None => index(c).map(|i| (i, None)),
            })
            .collect::<Result<_, _>>()?;
        let value_index = columns
            .values
            .iter()
            .map(|c| index(c))
            .collect::<Result<_, _>>()?;
        let filter_columns = match &columns.filter {
            Some(f) => f
                .columns()
                .into_iter()
                .map(|c| index(&c).map(|i| (c, i)))
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        Ok(RowReader {
            columns: columns.clone(),
            unit_index,
            key_index,
            value_index,
            filter_columns,
        })
    }

    /// The header positions whose fields are compared as text — the privacy unit,
    /// plain group-by keys, `WHERE` columns — ascending, each once. The others
    /// (aggregated values, binned keys) are only read as numbers.
    pub fn text_fields(&self) -> Vec<usize> {
        positions(
            self.unit_index
                .iter()
                .copied()
                .chain(
                    self.key_index
                        .iter()
                        .filter(|(_, b)| b.is_none())
                        .map(|&(i, _)| i),
                )
                .chain(self.filter_columns.iter().map(|&(_, i)| i)),
        )
    }

    /// The header positions a row is read from, ascending, each once.
    pub fn fields(&self) -> Vec<usize> {
        positions(
            self.text_fields()
                .into_iter()
                .chain(self.key_index.iter().map(|&(i, _)| i))
                .chain(self.value_index.iter().copied()),
        )
    }

    /// Reads the row whose field `i` (trimmed) is `field(i)`, at `line` (for
    /// errors): the row kept (unit, key and values), `None` for a row the filter
    /// rejects or an invalid row dropped by `drop_invalid`, or the error that
    /// refuses the table.
    pub fn row<'f>(
        &self,
        field: &dyn Fn(usize) -> &'f str,
        line: usize,
    ) -> Result<Option<ReadRow>, AggregateError> {
        let mut values = Vec::with_capacity(self.value_index.len());
        let mut bin_of = vec![0; self.key_index.len()];
        if !self.read(field, |_| None, line, &mut values, &mut bin_of)? {
            return Ok(None);
        }
        Ok(Some(ReadRow {
            unit: self.unit(field).map(str::to_string),
            key: (0..bin_of.len())
                .map(|k| self.key_field(k, field, &bin_of).to_string())
                .collect(),
            values,
        }))
    }

    /// Reads a row as [`RowReader::row`] does, without allocating for a kept row:
    /// true when it is kept, with its values in `values` and its group key encoded
    /// by [`encode_key`](super::encode_key) in `key` (both overwritten); false for
    /// a row the filter rejects or an invalid row `drop_invalid` drops. The row's
    /// unit is [`RowReader::unit_of`].
    ///
    /// `number(i)` is `Some(value)` for a field given as a number rather than text
    /// (`Some(None)`: missing), read as its text would be; `None` for a text field.
    /// Only fields outside [`RowReader::text_fields`] may be numbers.
    pub fn read_encoded<'f>(
        &self,
        field: &dyn Fn(usize) -> &'f str,
        number: &dyn Fn(usize) -> Option<Option<f64>>,
        line: usize,
        values: &mut Vec<f64>,
        key: &mut String,
    ) -> Result<bool, AggregateError> {
        let mut bins = [0usize; 4];
        let mut more = Vec::new();
        let bin_of: &mut [usize] = if self.key_index.len() <= bins.len() {
            &mut bins[..self.key_index.len()]
        } else {
            more.resize(self.key_index.len(), 0);
            &mut more
        };
        if !self.read(field, number, line, values, bin_of)? {
            return Ok(false);
        }
        encode_key_into(
            key,
            (0..bin_of.len()).map(|k| self.key_field(k, field, bin_of)),
        );
        Ok(true)
    }

    /// The unit of the row whose field `i` (trimmed) is `field(i)` (`None`
    /// without a privacy-unit column).
    pub fn unit_of<'f>(&self, field: &dyn Fn(usize) -> &'f str) -> Option<&'f str> {
        self.unit(field)
    }

    /// Checks and filters a row: true when it is kept, with its values in
    /// `parsed` and each binned key's bin in `bin_of`. A field is read as a number
    /// from `number(i)` when that is `Some` (a typed column), else from its text.
    fn read<'f>(
        &self,
        field: impl Fn(usize) -> &'f str,
        number: impl Fn(usize) -> Option<Option<f64>>,
        line: usize,
        parsed: &mut Vec<f64>,
        bin_of: &mut [usize],
    ) -> Result<bool, AggregateError> {
        let columns = &self.columns;
        // Every row's unit and values are checked before any filter, so whether
        // a query is refused cannot be steered row by row with WHERE; with
        // `drop_invalid` such a row is dropped instead (a per-row rule).
        let mut invalid = None;
        if let Some(i) = self.unit_index
            && field(i).is_empty()
        {
            invalid = Some(AggregateError::EmptyUnit {
                column: columns.unit.clone().unwrap_or_default(),
                line,
            });
        }
        // The field's number: its own (a typed column), else its text parsed; `None`
        // when it has none (missing, or text that is not a number).
        let value = |i: usize| match number(i) {
            Some(x) => x,
            None => field(i).parse::<f64>().ok(),
        };
        parsed.clear();
        for (c, &i) in self.value_index.iter().enumerate() {
            match value(i) {
                // -0.0 is 0.0: one value, whichever text or number gave it (bounding
                // ranks a row by its values' bits).
                Some(x) if x.is_finite() => parsed.push(x + 0.0),
                x => {
                    invalid.get_or_insert(not_finite(x, &columns.values[c], line));
                }
            }
        }
        for (k, (i, b)) in self.key_index.iter().enumerate() {
            let Some(b) = b else { continue };
            match value(*i) {
                Some(x) if x.is_finite() => bin_of[k] = b.bin(x),
                x => {
                    invalid.get_or_insert(not_finite(x, b.column(), line));
                }
            }
        }
        match invalid {
            Some(_) if columns.drop_invalid => return Ok(false),
            Some(e) => return Err(e),
            None => {}
        }
        if let Some(filter) = &columns.filter {
            let named = |c: &str| {
                self.filter_columns
                    .iter()
                    .find(|(n, _)| n == c)
                    .map_or("", |&(_, i)| field(i))
            };
            if !filter.holds(&named) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn unit<'f>(&self, field: impl Fn(usize) -> &'f str) -> Option<&'f str> {
        self.unit_index.map(field)
    }

    fn key_field<'a, 'f: 'a>(
        &'a self,
        k: usize,
        field: impl Fn(usize) -> &'f str,
        bin_of: &[usize],
    ) -> &'a str {
        match &self.key_index[k] {
            (_, Some(b)) => b.labels()[bin_of[k]].as_str(),
            (i, None) => field(*i),
        }
    }
}

/// Header positions ascending, each once.
fn positions(i: impl Iterator<Item = usize>) -> Vec<usize> {
    let mut out: Vec<usize> = i.collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The error of a value that is not a finite number: non-finite (NaN, ±∞) or
/// not a number at all (`None`: missing, or text that does not parse).
fn not_finite(x: Option<f64>, column: &str, line: usize) -> AggregateError {
    let column = column.to_string();
    match x {
        Some(_) => AggregateError::NotFinite { column, line },
        None => AggregateError::NotANumber { column, line },
    }
}

/// One row of a table being read: its fields by column position.
trait Fields {
    /// The text of field `i` (empty when the row has none).
    fn field(&self, i: usize) -> &str;
    /// Field `i` as a number, for a column given as numbers (`Some(None)`:
    /// missing); `None` for a text field.
    fn number(&self, _i: usize) -> Option<Option<f64>> {
        None
    }
}

impl Fields for csv::StringRecord {
    fn field(&self, i: usize) -> &str {
        self.get(i).unwrap_or("")
    }
}

impl Fields for Record {
    fn field(&self, i: usize) -> &str {
        self.get(i)
    }
}

/// One column of a table given by columns ([`Table::from_columns`]): each value
/// as its text (a missing value as the empty text).
pub trait TextColumn {
    /// The number of values.
    fn len(&self) -> usize;
    /// Whether the column has no value.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The text of value `row` (`row < len()`).
    fn text(&self, row: usize) -> &str;
    /// True for a column of numbers, read by [`TextColumn::number`] with no text
    /// (an engine's floating-point array): the value the text of the same number
    /// would parse to, so a table reads the same either way.
    fn holds_numbers(&self) -> bool {
        false
    }
    /// Value `row` of a column of numbers (`None`: missing). Unused unless
    /// [`TextColumn::holds_numbers`].
    fn number(&self, _row: usize) -> Option<f64> {
        None
    }
}

impl<S: AsRef<str>> TextColumn for Vec<S> {
    fn len(&self) -> usize {
        <[S]>::len(self)
    }
    fn text(&self, row: usize) -> &str {
        self[row].as_ref()
    }
}

/// A row of a table given by columns ([`Table::from_columns`]).
struct ColumnRow<'a, C> {
    data: &'a [(String, C)],
    row: Option<usize>,
}

impl<'a, C: TextColumn> ColumnRow<'a, C> {
    /// The text of column `i` in row `r` (empty for a column of numbers or past
    /// the column's end).
    fn text(data: &'a [(String, C)], r: usize, i: usize) -> &'a str {
        match data.get(i) {
            Some((_, c)) if r < c.len() && !c.holds_numbers() => c.text(r),
            _ => "",
        }
    }
}

impl<C: TextColumn> Fields for ColumnRow<'_, C> {
    fn field(&self, i: usize) -> &str {
        self.row.map_or("", |r| ColumnRow::text(self.data, r, i))
    }
    fn number(&self, i: usize) -> Option<Option<f64>> {
        match (self.row, self.data.get(i)) {
            (Some(r), Some((_, c))) if c.holds_numbers() => {
                Some(if r < c.len() { c.number(r) } else { None })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns() -> Columns {
        Columns {
            unit: Some("id".into()),
            group_by: vec!["region".into()],
            bins: BTreeMap::new(),
            values: vec!["temp".into()],
            filter: None,
            drop_invalid: false,
        }
    }

    /// Batches are cut by the bytes of the keys first seen in them: rows that each
    /// bring a new 1 000-byte key fill 1 MiB before `BATCH` rows, and no batch
    /// holds much more than `BATCH_BYTES` (one row past it at most).
    #[test]
    fn new_keys_cut_batches_by_their_bytes() {
        let cols = Columns {
            group_by: vec!["note".into()],
            ..columns()
        };
        let rows = 1500;
        let long = "k".repeat(1000);
        let mut csv = String::from("id,region,temp,note\n");
        for r in 0..rows {
            csv.push_str(&format!("u{},r1,1.5,{long}{r}\n", r % 7));
        }
        let mut records = Records::new(csv.as_bytes()).unwrap();
        let reader = RowReader::new(records.header(), &cols).unwrap();
        let (full, batches) = std::sync::mpsc::sync_channel::<Batch>(rows);
        let (_recycle, spent) = std::sync::mpsc::channel::<Batch>();
        let hash = TextHash::default();
        parse_batches(&mut records, &reader, &cols, usize::MAX, &hash, full, spent);
        let sizes: Vec<(usize, usize)> = batches.iter().map(|b| (b.records, b.bytes())).collect();
        assert!(sizes.len() >= 2, "{sizes:?}");
        assert_eq!(sizes.iter().map(|&(r, _)| r).sum::<usize>(), rows);
        for &(_, bytes) in &sizes {
            assert!(bytes < BATCH_BYTES + 1100, "{sizes:?}");
        }
    }

    /// The fast path of `trim_field` agrees with `str::trim` on every text: ASCII
    /// and Unicode white space, control characters and multi-byte characters at
    /// either end, one character, none.
    #[test]
    fn trim_field_is_trim() {
        use proptest::prelude::*;
        let ends = [
            "", " ", "\t", "\n", "\r", "\u{b}", "\u{c}", "\u{0}", "\u{1f}", "\u{7f}", "\u{85}",
            "\u{a0}", "\u{2028}", "\u{3000}", "\u{feff}", "é", "a", "~", "!",
        ];
        for a in ends {
            for b in ends {
                for mid in ["", "x", " ", "a b", "\u{a0}"] {
                    let s = format!("{a}{mid}{b}");
                    assert_eq!(trim_field(&s), s.trim(), "{s:?}");
                }
            }
        }
        proptest!(|(s in "\\PC{0,6}|[ \t\u{a0}\u{2000}-\u{200b}a-z!~\u{0}-\u{1f}]{0,6}")| {
            prop_assert_eq!(trim_field(&s), s.trim());
        });
    }

    #[test]
    fn reads_units_keys_and_values() {
        let csv = "id,region,temp\na,north,1.5\nb,south,2\na,north,-3\n";
        let t = Table::from_csv(csv.as_bytes(), &columns(), 10).unwrap();
        assert_eq!(t.rows(), 3);
        assert_eq!((t.unit(0), t.unit(1), t.unit(2)), (0, 1, 0));
        assert_eq!((t.key(0), t.key(1), t.key(2)), (0, 1, 0));
        assert_eq!(t.key_values()[1], vec!["south".to_string()]);
        assert_eq!(t.values(0), &[1.5, 2.0, -3.0]);
    }

    #[test]
    fn long_and_short_units_and_keys_intern_apart() {
        // Texts around the inline length (23 bytes), and ones differing at the end.
        let texts: Vec<String> = [22, 23, 24, 40]
            .iter()
            .flat_map(|&n| ["x".repeat(n), format!("{}y", "x".repeat(n - 1))])
            .collect();
        let mut csv = String::from("id,region,temp\n");
        for (i, t) in texts.iter().enumerate() {
            csv.push_str(&format!("{t},{t},{i}\n{t},{t},{i}\n"));
        }
        let t = Table::from_csv(csv.as_bytes(), &columns(), 100).unwrap();
        assert_eq!(t.unit_count(), texts.len());
        assert_eq!(t.key_values().len(), texts.len());
        for (i, text) in texts.iter().enumerate() {
            for r in [2 * i, 2 * i + 1] {
                assert_eq!(t.unit_name(t.unit(r)), text);
                assert_eq!(t.key_values()[t.key(r) as usize], vec![text.clone()]);
            }
        }
    }

    /// A row's key number is the first-seen rank of its encoded key, whether the
    /// table interns one key's text as it is or encodes two or more: checked
    /// against ranks computed here from the CSV text, not by the reader's code.
    #[test]
    fn key_numbers_are_first_seen_ranks_of_encoded_keys() {
        use std::collections::HashMap;
        let long = "x".repeat(30);
        let fields = ["", "r1", "02:r1", "2:r1", "1:", "r1 ", "é", &long];
        let mut csv = String::from("id,region,zone,temp\n");
        let mut rows = Vec::new();
        for i in 0..40 {
            let (a, b) = (
                fields[(i * 7) % fields.len()],
                fields[(i * 3) % fields.len()],
            );
            csv.push_str(&format!("u{i},{a},{b},{i}\n"));
            rows.push([a.trim().to_string(), b.trim().to_string()]);
        }
        for keys in [1, 2] {
            let mut cols = columns();
            cols.group_by = ["region", "zone"][..keys]
                .iter()
                .map(|k| k.to_string())
                .collect();
            let t = Table::from_csv(csv.as_bytes(), &cols, 100).unwrap();
            let mut rank: HashMap<String, u32> = HashMap::new();
            for (r, row) in rows.iter().enumerate() {
                let next = rank.len() as u32;
                let encoded = crate::aggregate::encode_key(&row[..keys]);
                let want = *rank.entry(encoded).or_insert(next);
                assert_eq!(t.key(r), want, "{keys} keys, row {r}");
                assert_eq!(
                    t.key_values()[want as usize],
                    row[..keys],
                    "{keys} keys, row {r}"
                );
            }
            assert_eq!(t.key_values().len(), rank.len());
        }
    }

    #[test]
    fn columns_read_as_the_same_csv_does() {
        let data: Vec<(String, Vec<String>)> = vec![
            ("id".to_string(), vec!["a".into(), "b".into(), "a".into()]),
            (
                "region".to_string(),
                vec!["north".into(), "south".into(), "north".into()],
            ),
            (
                "temp".to_string(),
                vec!["1.5".into(), "2".into(), "-3".into()],
            ),
        ];
        let t = Table::from_columns(&data, 3, &columns(), 10).unwrap();
        assert_eq!(t.rows(), 3);
        assert_eq!((t.unit(0), t.unit(1), t.unit(2)), (0, 1, 0));
        assert_eq!(t.key_values()[1], vec!["south".to_string()]);
        assert_eq!(t.values(0), &[1.5, 2.0, -3.0]);
        assert!(matches!(
            Table::from_columns(&data, 3, &columns(), 2),
            Err(AggregateError::TooManyRows { max: 2 })
        ));
        let mut ragged = data.clone();
        ragged[2].1.pop();
        assert!(Table::from_columns(&ragged, 3, &columns(), 10).is_err());
        assert!(Table::from_columns(&data, 4, &columns(), 10).is_err());
        // A plan that reads no column still counts the rows.
        let none = Columns {
            unit: None,
            group_by: Vec::new(),
            values: Vec::new(),
            ..columns()
        };
        let t = Table::from_columns::<Vec<String>>(&[], 5, &none, 10).unwrap();
        assert_eq!(t.rows(), 5);
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        let bad = [
            ("id,region\na,north\n", "no column \"temp\""),
            ("id,region,temp\na,north,\n", "line 2"),
            ("id,region,temp\na,north,abc\n", "not a number"),
            ("id,region,temp\na,north,1\nb,north,secret\n", "line 3"),
            ("id,region,temp\na,north,NaN\n", "not finite"),
            ("id,region,temp\na,north,1e999\n", "not finite"),
            ("id,region,temp,temp\na,north,1,2\n", "twice"),
            ("id,region,temp\n,north,1\n", "no privacy unit"),
        ];
        for (csv, needle) in bad {
            let e = Table::from_csv(csv.as_bytes(), &columns(), 10).unwrap_err();
            assert!(e.to_string().contains(needle), "{csv:?}: {e}");
        }
        for (csv, needle) in bad {
            // The same table given by columns: the same refusal.
            let mut rows = csv.lines();
            let names: Vec<&str> = rows.next().unwrap().split(',').collect();
            let rows: Vec<Vec<&str>> = rows.map(|r| r.split(',').collect()).collect();
            let data: Vec<(String, Vec<String>)> = names
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    (
                        n.to_string(),
                        rows.iter().map(|r| r[i].to_string()).collect(),
                    )
                })
                .collect();
            let e = Table::from_columns(&data, rows.len(), &columns(), 10).unwrap_err();
            assert!(e.to_string().contains(needle), "{csv:?}: {e}");
        }
        let csv = "id,region,temp\na,n,1\nb,n,1\nc,n,1\n";
        assert!(matches!(
            Table::from_csv(csv.as_bytes(), &columns(), 2),
            Err(AggregateError::TooManyRows { max: 2 })
        ));
    }

    /// The CSV rows read one by one on one thread, as [`Table::from_csv`] read
    /// them before it split the work: the reference its two threads must match.
    fn from_csv_one_by_one(
        csv: &str,
        columns: &Columns,
        max_rows: usize,
    ) -> Result<Table, AggregateError> {
        let mut csv = csv::ReaderBuilder::new().from_reader(csv.as_bytes());
        let header: Vec<String> = csv.headers()?.iter().map(str::to_string).collect();
        if header.is_empty() {
            return Err(AggregateError::EmptyTable);
        }
        let reader = RowReader::new(&header, columns)?;
        let mut record = csv::StringRecord::new();
        Table::read(&reader, columns, max_rows, &mut record, &|_| None, |r| {
            Ok(csv.read_record(r)?)
        })
    }

    fn same(a: &Result<Table, AggregateError>, b: &Result<Table, AggregateError>) -> bool {
        match (a, b) {
            (Ok(a), Ok(b)) => {
                a.rows() == b.rows()
                    && a.read == b.read
                    && a.unit_ids() == b.unit_ids()
                    && a.key_ids() == b.key_ids()
                    && a.key_values() == b.key_values()
                    && a.values == b.values
                    && (0..a.unit_count() as u32).all(|u| a.unit_name(u) == b.unit_name(u))
                    && a.unit_count() == b.unit_count()
            }
            (Err(a), Err(b)) => a.to_string() == b.to_string(),
            _ => false,
        }
    }

    /// Tables of several batches, with filtered, dropped and invalid rows, a
    /// malformed record and row caps around each: the two threads read exactly
    /// the table, or the first error in row order, of reading row by row.
    #[test]
    fn the_parallel_reader_reads_as_one_thread_does() {
        use rand_core::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let filtered = Columns {
            filter: Some(Filter::Compare {
                column: "region".into(),
                op: super::super::filter::Compare::NotEq,
                value: super::super::filter::Literal::Text("r1".into()),
            }),
            ..columns()
        };
        for case in 0..40 {
            let rows = [0, 1, BATCH - 1, BATCH, BATCH + 1, 3 * BATCH + 17][case % 6];
            // Some tables with a long unit and note in every row: batches cut by
            // bytes (of the unit, or of the keys first seen).
            let long = if case % 5 == 4 {
                "n".repeat(1500)
            } else {
                String::new()
            };
            let mut csv = String::from("id,region,temp,note,w\n");
            let mut invalid_at = None;
            let malformed_at = [rows / 2, BATCH - 1, BATCH][case % 3];
            for r in 0..rows {
                let unit = rng.next_u64() % 700;
                let unit = if unit % 7 == 0 {
                    format!("a unit text longer than 23 bytes {unit}")
                } else if unit == 1 && case % 4 == 0 {
                    // An empty unit: invalid (refused, or dropped).
                    invalid_at.get_or_insert(r);
                    String::new()
                } else {
                    format!("u{unit}")
                };
                let temp = match rng.next_u64() % 1000 {
                    0 if case % 4 == 1 => {
                        invalid_at.get_or_insert(r);
                        "x".to_string()
                    }
                    1 if case % 4 == 2 => {
                        invalid_at.get_or_insert(r);
                        "NaN".to_string()
                    }
                    v => format!("{}", v as f64 / 10.0 - 20.0),
                };
                // A malformed record (a field too many) in the middle, or just
                // before or at the first batch's end.
                if case % 4 == 3 && r == malformed_at {
                    csv.push_str("a,b,c,d,e,f\n");
                }
                // A note new in every row: as a key, every row's key is first
                // seen there (with `long`, batches are cut by the new keys' bytes).
                csv.push_str(&format!(
                    " {long}{unit} ,r{},{temp},{long}{r},{}\n",
                    rng.next_u64() % 5,
                    r as f64 * 0.5
                ));
            }
            // No unit (a row's unit is its position among all rows, kept or not)
            // and two keys.
            let no_unit = Columns {
                unit: None,
                group_by: vec!["region".into(), "id".into()],
                ..filtered.clone()
            };
            // A binned key, and the unit also a key.
            let binned = Columns {
                group_by: vec!["region".into(), "t".into(), "id".into()],
                bins: BTreeMap::from([(
                    "t".to_string(),
                    Binning::new("temp", &[-20.0, 0.0, 20.0, 80.0]).unwrap(),
                )]),
                ..columns()
            };
            // No key and no value: the batches carry units only.
            let bare = Columns {
                group_by: Vec::new(),
                values: Vec::new(),
                ..columns()
            };
            // A long key new in every row (the note): batches cut by the new
            // keys' bytes.
            let noted = Columns {
                group_by: vec!["note".into()],
                ..filtered.clone()
            };
            // Two values, in another order than the header's: the batches carry
            // them row by row, the table column by column.
            let two_values = Columns {
                values: vec!["w".into(), "temp".into()],
                ..no_unit.clone()
            };
            for base in [
                columns(),
                filtered.clone(),
                no_unit,
                binned,
                bare,
                noted,
                two_values,
            ] {
                for drop_invalid in [false, true] {
                    let columns = Columns {
                        drop_invalid,
                        ..base.clone()
                    };
                    for max_rows in [
                        usize::MAX,
                        rows,
                        rows.saturating_sub(1),
                        BATCH,
                        rows / 2,
                        malformed_at,
                        invalid_at.unwrap_or(3),
                    ] {
                        let want = from_csv_one_by_one(&csv, &columns, max_rows);
                        let got = Table::from_csv(csv.as_bytes(), &columns, max_rows);
                        assert!(
                            same(&got, &want),
                            "case {case}, rows {rows}, max {max_rows}, drop {drop_invalid}: {:?} vs {:?}",
                            got.as_ref().err(),
                            want.as_ref().err()
                        );
                        // Independently of the numbering both readers share: key
                        // numbers are first-seen ranks of distinct keys.
                        if let Ok(t) = &got {
                            let mut seen = 0u32;
                            for &k in t.key_ids() {
                                assert!(k <= seen, "case {case}: key {k} after {seen} keys");
                                seen += u32::from(k == seen);
                            }
                            assert_eq!(t.key_values().len(), seen as usize);
                            let distinct: std::collections::HashSet<_> =
                                t.key_values().iter().collect();
                            assert_eq!(distinct.len(), t.key_values().len(), "case {case}");
                        }
                    }
                }
            }
        }
    }

    /// A column of numbers, or of texts, for [`Table::from_columns`].
    enum Typed {
        Numbers(Vec<Option<f64>>),
        Texts(Vec<&'static str>),
    }

    impl TextColumn for Typed {
        fn len(&self) -> usize {
            match self {
                Typed::Numbers(v) => v.len(),
                Typed::Texts(v) => v.len(),
            }
        }
        fn text(&self, row: usize) -> &str {
            match self {
                Typed::Texts(v) => v[row],
                Typed::Numbers(_) => panic!("a column of numbers read as text"),
            }
        }
        fn holds_numbers(&self) -> bool {
            matches!(self, Typed::Numbers(_))
        }
        fn number(&self, row: usize) -> Option<f64> {
            match self {
                Typed::Numbers(v) => v[row],
                Typed::Texts(_) => None,
            }
        }
    }

    #[test]
    fn numbers_read_as_their_texts_and_never_as_text() {
        let data = |temp: Typed| {
            vec![
                ("id".to_string(), Typed::Texts(vec!["a", "b", "a", "c"])),
                ("region".to_string(), Typed::Texts(vec!["n", "s", "n", "s"])),
                ("temp".to_string(), temp),
            ]
        };
        let typed = data(Typed::Numbers(vec![
            Some(1.5),
            Some(-0.0),
            None,
            Some(f64::NAN),
        ]));
        let texts = data(Typed::Texts(vec!["1.5", "-0", "", "NaN"]));
        let mut c = columns();
        c.drop_invalid = true;
        let (a, b) = (
            Table::from_columns(&typed, 4, &c, 10).unwrap(),
            Table::from_columns(&texts, 4, &c, 10).unwrap(),
        );
        assert_eq!(a.rows(), 2);
        assert_eq!(
            (a.values(0), a.units.clone()),
            (b.values(0), b.units.clone())
        );
        // -0.0 is read as 0.0, from text or number: one value for bounding's ranks.
        assert!(a.values(0)[1].is_sign_positive() && b.values(0)[1].is_sign_positive());
        // Without drop_invalid, the same refusal: the first invalid row, named.
        let (ea, eb) = (
            Table::from_columns(&typed, 4, &columns(), 10).unwrap_err(),
            Table::from_columns(&texts, 4, &columns(), 10).unwrap_err(),
        );
        assert_eq!(ea.to_string(), eb.to_string());
        assert!(
            matches!(ea, AggregateError::NotANumber { line: 4, .. }),
            "{ea}"
        );
        // A column the query compares as text (the unit, a key, WHERE) cannot be numbers.
        let numbers = || Typed::Numbers(vec![Some(1.0); 4]);
        for position in [0, 1] {
            let mut d = data(numbers());
            d[position].1 = numbers();
            let e = Table::from_columns(&d, 4, &columns(), 10).unwrap_err();
            assert!(e.to_string().contains("given as numbers"), "{e}");
        }
        let mut c = columns();
        c.filter = Some(Filter::Compare {
            column: "temp".into(),
            op: super::super::filter::Compare::Gt,
            value: super::super::filter::Literal::Number(0.0),
        });
        let e = Table::from_columns(&data(numbers()), 4, &c, 10).unwrap_err();
        assert!(e.to_string().contains("given as numbers"), "{e}");
        // Which columns a front end may give as numbers.
        assert_eq!(columns().text_columns(), ["id", "region"]);
        assert_eq!(columns().number_columns(), ["temp"]);
        assert_eq!(c.text_columns(), ["id", "region", "temp"]);
        assert!(c.number_columns().is_empty());
    }
}

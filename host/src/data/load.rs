//! CSV loading: one row per record, or one row per cell with a count column.

use std::io::{Read, Write};
use std::path::Path;

use super::columns::{CsvColumns, header};
use super::domain::{BinOutput, Domain};
use super::error::DataError;
use super::histogram::{CountHistogram, MemoryCap};

/// A named dataset: its domain and exact counts.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// A short name (the file stem for files).
    pub name: String,
    /// The domain.
    pub domain: Domain,
    /// Exact counts per cell.
    pub counts: CountHistogram,
}

/// The whole text of `path`, with the path in the error.
fn read_file(path: &Path) -> Result<String, DataError> {
    std::fs::read_to_string(path).map_err(|source| DataError::File {
        path: path.to_path_buf(),
        source,
    })
}

impl Dataset {
    /// Loads a CSV file under a public domain, its columns read as `columns`
    /// declares (see [`load_records`]). A table with no records is refused
    /// ([`DataError::EmptyData`]): a `Dataset` feeds the replace-one-record
    /// releases (PMW, MWEM, the conjunction release), where n is public, so the
    /// refusal before any charge reveals nothing. Under add/remove neighbours read
    /// the table with [`load_records`], which does not refuse n = 0.
    ///
    /// ```no_run
    /// use privq_host::data::{CsvColumns, Dataset, Domain, MemoryCap};
    /// let domain = Domain::from_json(&std::fs::read_to_string("domain.json")?)?;
    /// let ds = Dataset::from_csv_with_domain(
    ///     "people.csv".as_ref(), domain, &CsvColumns::new(), MemoryCap::default())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_csv_with_domain(
        path: &Path,
        domain: Domain,
        columns: &CsvColumns,
        cap: MemoryCap,
    ) -> Result<Self, DataError> {
        let text = read_file(path)?;
        let counts = non_empty(load_records(text.as_bytes(), &domain, columns, cap)?)?;
        Ok(Dataset {
            name: file_name(path),
            domain,
            counts,
        })
    }

    /// The counts of `records` (read over `domain`, e.g. from a front end's
    /// DataFrame by [`Records::from_dictionary_columns`](super::Records)), as
    /// [`Dataset::from_csv_with_domain`] counts a CSV file's rows over the same
    /// domain; an empty table is refused as there.
    pub fn from_records(
        name: impl Into<String>,
        records: &super::Records,
        domain: Domain,
        cap: MemoryCap,
    ) -> Result<Self, DataError> {
        let mut counts = CountHistogram::zeros(&domain, cap)?;
        let columns: Vec<&[u32]> = (0..domain.dims())
            .map(|a| {
                records.column(a).ok_or(DataError::LengthMismatch {
                    expected: domain.dims(),
                    got: a,
                })
            })
            .collect::<Result<_, _>>()?;
        let mut values = vec![0usize; domain.dims()];
        for r in 0..records.len() {
            for (v, column) in values.iter_mut().zip(&columns) {
                *v = column.get(r).copied().unwrap_or(0) as usize;
            }
            counts.add(domain.encode(&values)?, 1)?;
        }
        Ok(Dataset {
            name: name.into(),
            domain,
            counts: non_empty(counts)?,
        })
    }

    /// Loads a CSV file whose every column (except those `columns` declares) is a
    /// binary `0`/`1` attribute. Only the header, which is public schema, fixes the
    /// domain; a value other than `0`/`1` is [`DataError::UnknownValue`]. A table
    /// with no records is refused, as by [`Dataset::from_csv_with_domain`].
    pub fn binary_from_header(
        path: &Path,
        columns: &CsvColumns,
        cap: MemoryCap,
    ) -> Result<Self, DataError> {
        let text = read_file(path)?;
        let domain = Domain::binary(attribute_names(text.as_bytes(), columns)?)?;
        let counts = non_empty(load_records(text.as_bytes(), &domain, columns, cap)?)?;
        Ok(Dataset {
            name: file_name(path),
            domain,
            counts,
        })
    }
}

pub(super) fn file_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "data".into())
}

/// The attribute names of a CSV file: its header without the columns `columns`
/// declares. The header is public schema; no value is read.
pub fn attribute_names<R: Read>(reader: R, columns: &CsvColumns) -> Result<Vec<String>, DataError> {
    let mut rdr = csv::Reader::from_reader(reader);
    columns.attributes(&header(&mut rdr)?)
}

/// What the loader does with a value its attribute does not list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unknown {
    /// [`DataError::UnknownValue`].
    Refuse,
    /// Map it to the attribute's value index 0: a fixed record-wise map, so
    /// neighbouring datasets stay neighbours and n is unchanged.
    MapToFirst,
}

/// Loads the records of a CSV table into exact counts per cell: every domain
/// attribute must be a column, every other column declared in `columns` (as the
/// count column, each row then standing for that many records, or as ignored).
/// A value outside the domain is [`DataError::UnknownValue`], NaN or ±inf in a
/// numeric attribute [`DataError::NotFinite`], each naming the line.
///
/// A table with no records loads as all-zero counts (n = 0), not as an error:
/// under add/remove-one-record neighbours n is private, and a loader that refused
/// the empty table would tell an empty table from its one-record neighbour with
/// certainty — charging first would not help, since a refusal that always happens
/// on one side and never on the other has unbounded privacy loss whatever the
/// ledger says. So the loader leaves n = 0 to the release: a release under
/// add/remove must treat it as any other input (the adaptive synthesis does), and
/// only releases whose n is public (replace-one) refuse it, see
/// [`Dataset::from_csv_with_domain`].
///
/// ```
/// use privq_host::data::{load_records, CsvColumns, Domain, MemoryCap};
/// let d = Domain::binary(["a", "b"])?;
/// let h = load_records("b,a\n1,0\n1,1\n".as_bytes(), &d, &CsvColumns::new(), MemoryCap::default())?;
/// assert_eq!(h.counts(), &[0, 0, 1, 1]);
/// # Ok::<(), privq_host::data::DataError>(())
/// ```
pub fn load_records<R: Read>(
    reader: R,
    domain: &Domain,
    columns: &CsvColumns,
    cap: MemoryCap,
) -> Result<CountHistogram, DataError> {
    load_csv(reader, domain, columns, Unknown::Refuse, cap)
}

pub(crate) fn load_csv<R: Read>(
    reader: R,
    domain: &Domain,
    columns: &CsvColumns,
    unknown: Unknown,
    cap: MemoryCap,
) -> Result<CountHistogram, DataError> {
    let mut rdr = csv::Reader::from_reader(reader);
    let layout = columns.layout(header(&mut rdr)?, domain)?;
    let mut hist = CountHistogram::zeros(domain, cap)?;
    let mut values = vec![0usize; domain.dims()];
    for (row, rec) in rdr.records().enumerate() {
        let rec = rec?;
        let line = row + 2;
        for ((slot, &col), attr) in values
            .iter_mut()
            .zip(&layout.attributes)
            .zip(domain.attributes())
        {
            let text = rec.get(col).unwrap_or("");
            *slot = match (attr.index_of(text), unknown) {
                (Some(i), _) => i,
                (None, Unknown::MapToFirst) => 0,
                (None, Unknown::Refuse) => return Err(attr.value_error(text, line)),
            };
        }
        let count = match layout.count {
            Some(c) => {
                let text = rec.get(c).unwrap_or("").trim();
                text.parse::<u64>().map_err(|_| DataError::BadCount {
                    line,
                    text: text.to_string(),
                })?
            }
            None => 1,
        };
        hist.add(domain.encode(&values)?, count)?;
    }
    Ok(hist)
}

/// Refuses counts that hold no records. Only for loaders whose data are released
/// under replace-one-record neighbours, where n is public: a table and its
/// neighbours then have the same n, so refusing n = 0 reveals nothing. Under
/// add/remove n is private, and the loader must not refuse for it (see
/// [`load_records`]).
fn non_empty(counts: CountHistogram) -> Result<CountHistogram, DataError> {
    if counts.total() == 0 {
        return Err(DataError::EmptyData);
    }
    Ok(counts)
}

/// Writes universe cells as CSV rows with the domain's attribute names: categories
/// as they are, bins as `bins` says (midpoints or labels).
pub fn write_records<W: Write>(
    writer: W,
    domain: &Domain,
    cells: &[usize],
    bins: BinOutput,
) -> Result<(), DataError> {
    write_rows(
        writer,
        domain,
        cells.iter().map(|&c| domain.decode(c)),
        bins,
    )
}

/// Writes rows of value indices (one per attribute, in the domain's order) as CSV
/// with the domain's attribute names: categories as they are, bins as `bins` says.
pub fn write_rows<W: Write, R: AsRef<[usize]>>(
    writer: W,
    domain: &Domain,
    rows: impl IntoIterator<Item = R>,
    bins: BinOutput,
) -> Result<(), DataError> {
    let mut w = csv::Writer::from_writer(writer);
    w.write_record(domain.attributes().iter().map(|a| a.name()))?;
    let mut line = Vec::with_capacity(domain.dims());
    for row in rows {
        line.clear();
        for (a, &v) in domain.attributes().iter().zip(row.as_ref()) {
            line.push(bins.text(a, v).unwrap_or_default());
        }
        w.write_record(&line)?;
    }
    w.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_tables_and_errors() {
        let d = Domain::binary(["a", "b"]).unwrap();
        let cap = MemoryCap::default();
        let count = CsvColumns::new().count("count");
        let h = load_records("a,b,count\n0,0,3\n1,1,2\n".as_bytes(), &d, &count, cap).unwrap();
        assert_eq!(h.counts(), &[3, 0, 0, 2]);
        let e = load_records("a,b\n0,2\n".as_bytes(), &d, &CsvColumns::new(), cap).unwrap_err();
        assert!(matches!(e, DataError::UnknownValue { line: 2, .. }), "{e}");
        let e = load_records("a,c\n0,1\n".as_bytes(), &d, &CsvColumns::new(), cap).unwrap_err();
        assert!(matches!(e, DataError::MissingColumn { .. }));
        // An empty table loads as n = 0 (n is private under add/remove).
        let h = load_records("a,b\n".as_bytes(), &d, &CsvColumns::new(), cap).unwrap();
        assert_eq!((h.counts(), h.total()), (&[0, 0, 0, 0][..], 0));
        let e = load_records("a,b,count\n0,0,x\n".as_bytes(), &d, &count, cap).unwrap_err();
        assert!(matches!(e, DataError::BadCount { .. }));
    }

    /// The add/remove loader does not refuse an empty table (an empty table and its
    /// one-record neighbour both load, so whatever the release does with them is
    /// paid for alike); the replace-one `Dataset` loaders still refuse it (n is
    /// public there), with the clear error.
    #[test]
    fn only_the_replace_one_loaders_refuse_an_empty_table() {
        let d = Domain::binary(["a", "b"]).unwrap();
        let (cols, cap) = (CsvColumns::new(), MemoryCap::default());
        let empty = load_records("a,b\n".as_bytes(), &d, &cols, cap).unwrap();
        let one = load_records("a,b\n1,0\n".as_bytes(), &d, &cols, cap).unwrap();
        assert_eq!((empty.total(), one.total()), (0, 1));
        let counted = CsvColumns::new().count("count");
        let zero = load_records("a,b,count\n1,0,0\n".as_bytes(), &d, &counted, cap).unwrap();
        assert_eq!(zero.total(), 0);
        let dir = std::env::temp_dir().join(format!("privq-load-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("empty.csv");
        std::fs::write(&path, "a,b\n").unwrap();
        let e = Dataset::from_csv_with_domain(&path, d.clone(), &cols, cap).unwrap_err();
        assert!(matches!(e, DataError::EmptyData), "{e}");
        assert_eq!(e.to_string(), "the data hold no records");
        let e = Dataset::binary_from_header(&path, &cols, cap).unwrap_err();
        assert!(matches!(e, DataError::EmptyData), "{e}");
        std::fs::write(&path, "a,b\n1,0\n").unwrap();
        let ds = Dataset::from_csv_with_domain(&path, d, &cols, cap).unwrap();
        assert_eq!(ds.counts.total(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn public_domains_and_writing() {
        let text = "color,flag\nred,1\nblue,0\ngreen,0\n";
        let d = Domain::new(vec![
            super::super::Attribute::categorical("color", ["blue", "green", "red", "violet"])
                .unwrap(),
            super::super::Attribute::binary("flag"),
        ])
        .unwrap();
        assert_eq!(d.size(), 8);
        let h = load_records(
            text.as_bytes(),
            &d,
            &CsvColumns::new(),
            MemoryCap::default(),
        )
        .unwrap();
        assert_eq!(h.total(), 3);
        let mut out = Vec::new();
        write_records(&mut out, &d, &[0, 6], BinOutput::Midpoint).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "color,flag\nblue,0\nred,1\n"
        );
        // Bins: the midpoint by default, the label on request.
        let edges = [0, 18, 30].map(privq_core::Fixed::from_int).to_vec();
        let b = Domain::new(vec![super::super::Attribute::binned("age", edges).unwrap()]).unwrap();
        for (bins, shown) in [
            (BinOutput::Midpoint, "9\n24"),
            (BinOutput::Label, "\"[0,18)\"\n\"[18,30)\""),
        ] {
            let mut out = Vec::new();
            write_records(&mut out, &b, &[0, 1], bins).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), format!("age\n{shown}\n"));
        }
        assert_eq!(
            attribute_names(
                "a, b ,count\n1,0,3\n".as_bytes(),
                &CsvColumns::new().count("count")
            )
            .unwrap(),
            ["a", "b"]
        );
        // An unknown value can be mapped to value 0 (discovery) instead of refused.
        let h = load_csv(
            "color,flag\nmauve,1\n".as_bytes(),
            &d,
            &CsvColumns::new(),
            Unknown::MapToFirst,
            MemoryCap::default(),
        )
        .unwrap();
        assert_eq!(h.counts()[d.encode(&[0, 1]).unwrap()], 1);
    }

    /// The privacy model (`docs/src/privacy-model.md`): the universe does not depend
    /// on the private values. D′ is D plus one record holding a rare value; under a
    /// public domain both load into the same universe (the inferred domain of old grew with the rare value).
    #[test]
    fn public_domain_gives_the_same_universe_on_neighbours() {
        let d = Domain::new(vec![
            super::super::Attribute::categorical("city", ["Oslo", "Rome", "Lima"]).unwrap(),
            super::super::Attribute::binary("smoker"),
        ])
        .unwrap();
        let base = "city,smoker\nOslo,1\nRome,0\nOslo,0\n";
        let with_rare = format!("{base}Lima,1\n");
        let none = CsvColumns::new();
        let a = load_records(base.as_bytes(), &d, &none, MemoryCap::default()).unwrap();
        let b = load_records(with_rare.as_bytes(), &d, &none, MemoryCap::default()).unwrap();
        assert_eq!(a.len(), b.len());
        assert_eq!(a.len(), d.size());
        let diff: u64 = a
            .counts()
            .iter()
            .zip(b.counts())
            .map(|(x, y)| x.abs_diff(*y))
            .sum();
        assert_eq!(diff, 1);
        // The binary shorthand reads the header only.
        let dir = std::env::temp_dir().join(format!("privq-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (p, q) = (dir.join("d.csv"), dir.join("d2.csv"));
        std::fs::write(&p, "a,b,c\n0,0,0\n0,0,0\n").unwrap();
        std::fs::write(&q, "a,b,c\n0,0,0\n1,1,1\n").unwrap();
        let (x, y) = (
            Dataset::binary_from_header(&p, &none, MemoryCap::default()).unwrap(),
            Dataset::binary_from_header(&q, &none, MemoryCap::default()).unwrap(),
        );
        assert_eq!(x.domain, y.domain);
        assert_eq!(x.counts.len(), 8);
        std::fs::write(&q, "a,b,c\n0,2,0\n").unwrap();
        assert!(matches!(
            Dataset::binary_from_header(&q, &none, MemoryCap::default()),
            Err(DataError::UnknownValue { .. })
        ));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn shared_datasets_match_table_5_1() {
        use crate::data::shared_table;
        let Some(dir) = crate::data::shared_data_dir("Table 5.1 check") else {
            return;
        };
        for (name, n, d, nonzero) in [
            ("mildew", 70, 6, 22),
            ("czech", 1841, 6, 63),
            ("rochdale", 665, 8, 91),
            ("nltcs", 21574, 16, 3152),
        ] {
            let path = dir.join(format!("{name}.csv"));
            let ds = Dataset::binary_from_header(&path, &shared_table(name), MemoryCap::default())
                .unwrap();
            assert!(ds.domain.is_binary(), "{name}");
            assert_eq!(ds.domain.dims(), d, "{name}");
            assert_eq!(ds.counts.total(), n, "{name}");
            assert_eq!(ds.counts.len(), 1 << d, "{name}");
            assert_eq!(ds.counts.nonzero_cells(), nonzero, "{name}");
        }
    }
}

//! CSV loading: one row per record, or one row per cell with a count column.

use std::io::{Read, Write};
use std::path::Path;

use super::domain::{Attribute, Domain};
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

impl Dataset {
    /// Loads a CSV file with a header. With a column called `count` each row is a cell
    /// and its count (a contingency table like `czech.csv`); otherwise each row is a
    /// record. The domain is inferred: columns whose values are all `0`/`1` are binary
    /// (value index = the digit, so cell bit `i` = column `i`), other columns are
    /// categorical with their distinct values in sorted order.
    pub fn from_csv_path(path: &Path, cap: MemoryCap) -> Result<Self, DataError> {
        let text = std::fs::read_to_string(path)?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "data".into());
        let domain = infer_domain(text.as_bytes(), "count")?;
        let counts = load_auto(text.as_bytes(), &domain, cap)?;
        Ok(Dataset {
            name,
            domain,
            counts,
        })
    }

    /// Loads a CSV file under a given domain (see [`load_auto`]).
    pub fn from_csv_with_domain(
        path: &Path,
        domain: Domain,
        cap: MemoryCap,
    ) -> Result<Self, DataError> {
        let text = std::fs::read_to_string(path)?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "data".into());
        let counts = load_auto(text.as_bytes(), &domain, cap)?;
        Ok(Dataset {
            name,
            domain,
            counts,
        })
    }
}

/// Infers a domain from a CSV header and values, ignoring `count_column`.
pub fn infer_domain<R: Read>(reader: R, count_column: &str) -> Result<Domain, DataError> {
    let mut rdr = csv::Reader::from_reader(reader);
    let header: Vec<String> = rdr
        .headers()?
        .iter()
        .map(|s| s.trim().to_string())
        .collect();
    let mut values: Vec<Vec<String>> = vec![Vec::new(); header.len()];
    for rec in rdr.records() {
        let rec = rec?;
        for (i, field) in rec.iter().enumerate() {
            if header.get(i).is_some_and(|h| h == count_column) {
                continue;
            }
            if let Some(v) = values.get_mut(i) {
                let f = field.trim();
                if !v.iter().any(|s| s == f) {
                    v.push(f.to_string());
                }
            }
        }
    }
    let mut attrs = Vec::new();
    for (name, mut vals) in header.into_iter().zip(values) {
        if name == count_column {
            continue;
        }
        if vals.iter().all(|v| v == "0" || v == "1") {
            attrs.push(Attribute::binary(name));
        } else {
            vals.sort();
            attrs.push(Attribute::categorical(name, vals)?);
        }
    }
    Domain::new(attrs)
}

/// Loads a count table if the header has a `count` column, else records.
pub fn load_auto<R: Read>(
    reader: R,
    domain: &Domain,
    cap: MemoryCap,
) -> Result<CountHistogram, DataError> {
    load_csv(reader, domain, Some("count"), cap)
}

/// Loads one record per row: every domain attribute must be a column (extra
/// columns are ignored). Unknown values are [`DataError::UnknownValue`].
///
/// ```
/// use privq_host::data::{load_records, Domain, MemoryCap};
/// let d = Domain::binary(["a", "b"])?;
/// let h = load_records("b,a\n1,0\n1,1\n".as_bytes(), &d, MemoryCap::default())?;
/// assert_eq!(h.counts(), &[0, 0, 1, 1]);
/// # Ok::<(), privq_host::data::DataError>(())
/// ```
pub fn load_records<R: Read>(
    reader: R,
    domain: &Domain,
    cap: MemoryCap,
) -> Result<CountHistogram, DataError> {
    load_csv(reader, domain, None, cap)
}

/// Loads one cell per row with its count in `count_column`.
pub fn load_count_table<R: Read>(
    reader: R,
    domain: &Domain,
    count_column: &str,
    cap: MemoryCap,
) -> Result<CountHistogram, DataError> {
    load_csv(reader, domain, Some(count_column), cap)
}

fn load_csv<R: Read>(
    reader: R,
    domain: &Domain,
    count_column: Option<&str>,
    cap: MemoryCap,
) -> Result<CountHistogram, DataError> {
    let mut rdr = csv::Reader::from_reader(reader);
    let header: Vec<String> = rdr
        .headers()?
        .iter()
        .map(|s| s.trim().to_string())
        .collect();
    let find = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| DataError::MissingColumn {
                column: name.to_string(),
                available: header.clone(),
            })
    };
    let columns = domain
        .attributes()
        .iter()
        .map(|a| find(a.name()))
        .collect::<Result<Vec<_>, _>>()?;
    let count_col = count_column.and_then(|c| header.iter().position(|h| h == c));
    let mut hist = CountHistogram::zeros(domain, cap)?;
    let mut values = vec![0usize; domain.dims()];
    for (row, rec) in rdr.records().enumerate() {
        let rec = rec?;
        let line = row + 2;
        for ((slot, &col), attr) in values.iter_mut().zip(&columns).zip(domain.attributes()) {
            let text = rec.get(col).unwrap_or("");
            *slot = attr.index_of(text).ok_or_else(|| DataError::UnknownValue {
                attribute: attr.name().to_string(),
                value: text.to_string(),
                line,
            })?;
        }
        let count = match count_col {
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
    if hist.total() == 0 {
        return Err(DataError::EmptyData);
    }
    Ok(hist)
}

/// Writes records (cell indices) as CSV with the domain's attribute names and labels.
pub fn write_records<W: Write>(
    writer: W,
    domain: &Domain,
    cells: &[usize],
) -> Result<(), DataError> {
    let mut w = csv::Writer::from_writer(writer);
    w.write_record(domain.attributes().iter().map(|a| a.name()))?;
    for &cell in cells {
        let row: Vec<String> = domain
            .decode(cell)
            .iter()
            .zip(domain.attributes())
            .map(|(&v, a)| a.label(v).unwrap_or_default())
            .collect();
        w.write_record(&row)?;
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
        let h = load_count_table("a,b,count\n0,0,3\n1,1,2\n".as_bytes(), &d, "count", cap).unwrap();
        assert_eq!(h.counts(), &[3, 0, 0, 2]);
        let e = load_records("a,b\n0,2\n".as_bytes(), &d, cap).unwrap_err();
        assert!(matches!(e, DataError::UnknownValue { line: 2, .. }), "{e}");
        let e = load_records("a,c\n0,1\n".as_bytes(), &d, cap).unwrap_err();
        assert!(matches!(e, DataError::MissingColumn { .. }));
        let e = load_records("a,b\n".as_bytes(), &d, cap).unwrap_err();
        assert!(matches!(e, DataError::EmptyData));
        let e = load_count_table("a,b,count\n0,0,x\n".as_bytes(), &d, "count", cap).unwrap_err();
        assert!(matches!(e, DataError::BadCount { .. }));
    }

    #[test]
    fn infers_categorical_and_binary() {
        let text = "color,flag\nred,1\nblue,0\ngreen,0\n";
        let d = infer_domain(text.as_bytes(), "count").unwrap();
        assert_eq!(d.size(), 6);
        assert!(!d.is_binary());
        let h = load_auto(text.as_bytes(), &d, MemoryCap::default()).unwrap();
        assert_eq!(h.total(), 3);
        let mut out = Vec::new();
        write_records(&mut out, &d, &[0, 5]).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "color,flag\nblue,0\nred,1\n"
        );
    }

    #[test]
    fn shared_datasets_match_table_5_1() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data");
        if !dir.exists() {
            eprintln!("SKIPPED: {} is absent (Table 5.1 check)", dir.display());
            return;
        }
        for (name, n, d, nonzero) in [
            ("mildew", 70, 6, 22),
            ("czech", 1841, 6, 63),
            ("rochdale", 665, 8, 91),
            ("nltcs", 21574, 16, 3152),
        ] {
            let path = dir.join(format!("{name}.csv"));
            if !path.exists() {
                eprintln!("SKIPPED: {} is absent", path.display());
                continue;
            }
            let ds = Dataset::from_csv_path(&path, MemoryCap::default()).unwrap();
            assert!(ds.domain.is_binary(), "{name}");
            assert_eq!(ds.domain.dims(), d, "{name}");
            assert_eq!(ds.counts.total(), n, "{name}");
            assert_eq!(ds.counts.len(), 1 << d, "{name}");
            assert_eq!(ds.counts.nonzero_cells(), nonzero, "{name}");
        }
    }
}

//! How the columns of a CSV table map onto a domain. Nothing is guessed from a
//! column's name: a row weight is used only when declared, and every column that
//! is neither an attribute nor the weight must be declared as ignored.

use super::domain::Domain;
use super::error::DataError;

/// The declared layout of a CSV table: which column, if any, holds a row weight
/// (each row then stands for that many records, and the guarantee is per record),
/// and which columns are deliberately left out of the release.
///
/// The default is one record per row with every column an attribute.
///
/// ```
/// use privq_host::data::{load_records, CsvColumns, DataError, Domain, MemoryCap};
/// let d = Domain::binary(["smoke"])?;
/// let table = "id,smoke,count\n7,0,5\n8,1,2\n";
/// // Undeclared columns are refused, naming them …
/// let e = load_records(table.as_bytes(), &d, &CsvColumns::new(), MemoryCap::default());
/// assert!(matches!(e, Err(DataError::UncoveredColumns { .. })));
/// // … and read as declared.
/// let columns = CsvColumns::new().count("count").ignore(["id"]);
/// let h = load_records(table.as_bytes(), &d, &columns, MemoryCap::default())?;
/// assert_eq!(h.counts(), &[5, 2]);
/// # Ok::<(), DataError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CsvColumns {
    count: Option<String>,
    ignored: Vec<String>,
}

/// Where the attributes and the weight are in one CSV header.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// The column of every domain attribute, in domain order.
    pub attributes: Vec<usize>,
    /// The weight column.
    pub count: Option<usize>,
}

impl CsvColumns {
    /// One record per row; every column is an attribute.
    pub fn new() -> Self {
        Self::default()
    }

    /// Column `name` holds a non-negative integer weight: each row stands for that
    /// many records (a count table).
    pub fn count(mut self, name: impl Into<String>) -> Self {
        self.count = Some(name.into());
        self
    }

    /// Leaves the columns `names` out: they are read past, never released.
    pub fn ignore<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.ignored.extend(names.into_iter().map(Into::into));
        self
    }

    /// The declared weight column.
    pub fn count_column(&self) -> Option<&str> {
        self.count.as_deref()
    }

    /// The declared ignored columns.
    pub fn ignored(&self) -> &[String] {
        &self.ignored
    }

    /// Every declared column must be in the header, a header name must not repeat,
    /// and an ignored column is not also the count column.
    fn check_declared(&self, header: &[String]) -> Result<(), DataError> {
        if let Some((i, name)) = header
            .iter()
            .enumerate()
            .find(|(i, h)| header[..*i].contains(h))
        {
            return Err(DataError::InvalidValue(format!(
                "the header names column {:?} twice (column {} repeats it)",
                name,
                i + 1
            )));
        }
        if let Some(c) = &self.count
            && self.ignored.contains(c)
        {
            return Err(DataError::InvalidDomain(format!(
                "{c:?} is declared both as the count column and as ignored"
            )));
        }
        for name in self.count.iter().chain(&self.ignored) {
            if !header.contains(name) {
                return Err(DataError::MissingColumn {
                    column: name.clone(),
                    available: header.to_vec(),
                });
            }
        }
        Ok(())
    }

    fn declared(&self, column: &str) -> bool {
        self.count.as_deref() == Some(column) || self.ignored.iter().any(|c| c == column)
    }

    /// The attribute names of a header: every column but the declared ones (the
    /// binary shorthand, where the header alone fixes the domain).
    pub(crate) fn attributes(&self, header: &[String]) -> Result<Vec<String>, DataError> {
        self.check_declared(header)?;
        Ok(header
            .iter()
            .filter(|h| !self.declared(h))
            .cloned()
            .collect())
    }

    /// The layout of `header` under `domain`: every attribute must be a column
    /// ([`DataError::MissingColumn`]), and every other column declared
    /// ([`DataError::UncoveredColumns`] naming the rest).
    pub(crate) fn layout(&self, header: Vec<String>, domain: &Domain) -> Result<Layout, DataError> {
        self.check_declared(&header)?;
        if let Some(c) = self
            .count
            .iter()
            .chain(&self.ignored)
            .find(|c| domain.position(c).is_some())
        {
            return Err(DataError::InvalidDomain(format!(
                "{c:?} is declared as the count column or as ignored, and is also an \
                 attribute of the domain"
            )));
        }
        let attributes = domain
            .attributes()
            .iter()
            .map(|a| {
                header
                    .iter()
                    .position(|h| h == a.name())
                    .ok_or_else(|| DataError::MissingColumn {
                        column: a.name().to_string(),
                        available: header.clone(),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let uncovered: Vec<String> = header
            .iter()
            .filter(|h| domain.position(h).is_none() && !self.declared(h))
            .cloned()
            .collect();
        if !uncovered.is_empty() {
            return Err(DataError::UncoveredColumns { columns: uncovered });
        }
        let count = self
            .count
            .as_ref()
            .and_then(|c| header.iter().position(|h| h == c));
        Ok(Layout { attributes, count })
    }
}

/// The trimmed header of a CSV reader.
pub(crate) fn header<R: std::io::Read>(rdr: &mut csv::Reader<R>) -> Result<Vec<String>, DataError> {
    Ok(rdr
        .headers()?
        .iter()
        .map(|s| s.trim().to_string())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_column_named_count_is_an_attribute_unless_declared() {
        let d = Domain::binary(["sex"]).unwrap();
        let e = CsvColumns::new()
            .layout(h(&["sex", "count"]), &d)
            .unwrap_err();
        assert!(
            matches!(&e, DataError::UncoveredColumns { columns } if columns == &["count"]),
            "{e}"
        );
        assert!(e.to_string().contains("count"), "{e}");
        let l = CsvColumns::new()
            .count("count")
            .layout(h(&["sex", "count"]), &d)
            .unwrap();
        assert_eq!((l.attributes, l.count), (vec![0], Some(1)));
    }

    #[test]
    fn declared_columns_must_exist_and_not_collide() {
        let d = Domain::binary(["a"]).unwrap();
        assert!(matches!(
            CsvColumns::new().count("n").layout(h(&["a"]), &d),
            Err(DataError::MissingColumn { .. })
        ));
        assert!(matches!(
            CsvColumns::new().ignore(["x"]).attributes(&h(&["a"])),
            Err(DataError::MissingColumn { .. })
        ));
        assert!(matches!(
            CsvColumns::new().count("a").layout(h(&["a"]), &d),
            Err(DataError::InvalidDomain(_))
        ));
        // An ignored column is never read as an attribute or as the weight.
        assert!(matches!(
            CsvColumns::new().ignore(["a"]).layout(h(&["a"]), &d),
            Err(DataError::InvalidDomain(_))
        ));
        assert!(matches!(
            CsvColumns::new()
                .count("n")
                .ignore(["n"])
                .layout(h(&["a", "n"]), &d),
            Err(DataError::InvalidDomain(_))
        ));
        // A repeated header name is refused, not read from its first column.
        assert!(matches!(
            CsvColumns::new().layout(h(&["a", "b", "a"]), &d),
            Err(DataError::InvalidValue(_))
        ));
        let names = CsvColumns::new()
            .count("n")
            .ignore(["id"])
            .attributes(&h(&["id", "a", "b", "n"]))
            .unwrap();
        assert_eq!(names, ["a", "b"]);
    }
}

//! Records kept column by column as value indices, for domains whose universe is
//! far too large for a dense histogram (Adult: 4.6·10¹⁶ cells). Marginals are
//! counted from the columns directly.

use std::io::Read;

use super::columns::{CsvColumns, header};
use super::domain::Domain;
use super::error::DataError;

/// The records of a dataset as one column of value indices per domain attribute.
///
/// ```
/// use privq_host::data::{CsvColumns, Domain, Records};
/// let d = Domain::from_json(r#"{"a": 3, "b": 2}"#)?;
/// let r = Records::from_csv("b,a\n1,2\n0,2\n1,0\n".as_bytes(), &d, &CsvColumns::new())?;
/// assert_eq!(r.len(), 3);
/// // The (a, b) marginal, row-major: cell index = 2·a + b.
/// assert_eq!(r.marginal(&[0, 1], &d)?, vec![0, 1, 0, 0, 1, 1]);
/// # Ok::<(), privq_host::data::DataError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Records {
    columns: Vec<Vec<u32>>,
    len: usize,
}

impl Records {
    /// Loads one record per CSV row, or, when `columns` declares a count column,
    /// one cell per row repeated `count` times (at most 2³² records in all). Every
    /// domain attribute must be a column, every other column declared. A value
    /// outside the domain is [`DataError::UnknownValue`] naming the attribute, the
    /// value and the line (NaN or ±inf in a numeric attribute
    /// [`DataError::NotFinite`]); a bad count is [`DataError::BadCount`]. A file
    /// without records gives empty `Records`: under add/remove-one neighbours the
    /// empty dataset is a valid input, and refusing it would reveal that n = 0
    /// (callers with n public may refuse it).
    pub fn from_csv<R: Read>(
        reader: R,
        domain: &Domain,
        columns: &CsvColumns,
    ) -> Result<Self, DataError> {
        Self::from_csv_within(reader, domain, columns, 1 << 32)
    }

    /// [`Records::from_csv`] holding at most `max` records (count-column weights
    /// included): one more is [`DataError::TooManyRecords`], refused before it is
    /// stored, so a memory cap binds before the memory is taken.
    pub fn from_csv_within<R: Read>(
        reader: R,
        domain: &Domain,
        columns: &CsvColumns,
        max: usize,
    ) -> Result<Self, DataError> {
        let mut rdr = csv::Reader::from_reader(reader);
        let layout = columns.layout(header(&mut rdr)?, domain)?;
        let mut out = vec![Vec::new(); domain.dims()];
        let mut len = 0usize;
        let mut values = vec![0u32; domain.dims()];
        for (row, rec) in rdr.records().enumerate() {
            let rec = rec?;
            let line = row + 2;
            for ((slot, &pos), attr) in values
                .iter_mut()
                .zip(&layout.attributes)
                .zip(domain.attributes())
            {
                let text = rec.get(pos).unwrap_or("");
                *slot = attr
                    .index_of(text)
                    .and_then(|v| u32::try_from(v).ok())
                    .ok_or_else(|| attr.value_error(text, line))?;
            }
            let times = match layout.count {
                None => 1,
                Some(c) => {
                    let text = rec.get(c).unwrap_or("").trim();
                    text.parse::<usize>()
                        .ok()
                        .filter(|&t| t <= 1 << 32)
                        .ok_or_else(|| DataError::BadCount {
                            line,
                            text: text.to_string(),
                        })?
                }
            };
            if len.saturating_add(times) > max.min(1 << 32) {
                return Err(DataError::TooManyRecords {
                    line,
                    max: max.min(1 << 32),
                });
            }
            for (column, &v) in out.iter_mut().zip(&values) {
                column.extend(std::iter::repeat_n(v, times));
            }
            len += times;
        }
        Ok(Records { columns: out, len })
    }

    /// Records from columns of value indices (all of one length, each value below
    /// its attribute's size; zero records allowed).
    pub fn from_columns(columns: Vec<Vec<u32>>, domain: &Domain) -> Result<Self, DataError> {
        if columns.len() != domain.dims() {
            return Err(DataError::LengthMismatch {
                expected: domain.dims(),
                got: columns.len(),
            });
        }
        let len = columns.first().map_or(0, Vec::len);
        for (column, attr) in columns.iter().zip(domain.attributes()) {
            if column.len() != len {
                return Err(DataError::LengthMismatch {
                    expected: len,
                    got: column.len(),
                });
            }
            if let Some(&v) = column.iter().find(|&&v| v as usize >= attr.size()) {
                return Err(DataError::UnknownValue {
                    attribute: attr.name().to_string(),
                    value: v.to_string(),
                    line: 0,
                });
            }
        }
        Ok(Records { columns, len })
    }

    /// The number of records.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are no records.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Column `attr`: one value index per record.
    pub fn column(&self, attr: usize) -> Option<&[u32]> {
        self.columns.get(attr).map(Vec::as_slice)
    }

    /// The exact counts of the marginal on the attributes `attrs` (distinct, in
    /// the order given), row-major: cell index `Σ_j v_j·Π_{i>j} size(attrs[i])`,
    /// the last attribute varying fastest. Refuses a marginal of more than 2³²
    /// cells.
    pub fn marginal(&self, attrs: &[usize], domain: &Domain) -> Result<Vec<u64>, DataError> {
        let mut strides = vec![0usize; attrs.len()];
        let mut cells: usize = 1;
        for (i, &a) in attrs.iter().enumerate().rev() {
            let attr = domain.attribute(a).ok_or_else(|| {
                DataError::InvalidValue(format!("the domain has no attribute number {a}"))
            })?;
            if attrs[..i].contains(&a) {
                return Err(DataError::InvalidValue(format!(
                    "attribute {:?} appears twice in a marginal",
                    attr.name()
                )));
            }
            strides[i] = cells;
            cells = cells
                .checked_mul(attr.size())
                .filter(|&c| c <= 1 << 32)
                .ok_or_else(|| {
                    DataError::InvalidValue("a marginal of more than 2^32 cells".into())
                })?;
        }
        let mut counts = vec![0u64; cells];
        let mut index = vec![0usize; self.len];
        for (&a, &stride) in attrs.iter().zip(&strides) {
            for (i, &v) in index.iter_mut().zip(&self.columns[a]) {
                *i += v as usize * stride;
            }
        }
        for i in index {
            counts[i] += 1;
        }
        Ok(counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marginals_count_every_record_once() {
        let d = Domain::from_json(r#"{"a": 3, "b": 2, "c": 4}"#).unwrap();
        let cols = vec![
            vec![0, 1, 2, 2, 1],
            vec![1, 1, 0, 1, 0],
            vec![3, 0, 0, 2, 3],
        ];
        let r = Records::from_columns(cols, &d).unwrap();
        assert_eq!(r.marginal(&[], &d).unwrap(), vec![5]);
        assert_eq!(r.marginal(&[0], &d).unwrap(), vec![1, 2, 2]);
        // (b, a) row-major: index 3·b + a.
        assert_eq!(r.marginal(&[1, 0], &d).unwrap(), vec![0, 1, 1, 1, 1, 1]);
        let abc = r.marginal(&[0, 1, 2], &d).unwrap();
        assert_eq!(abc.len(), 24);
        assert_eq!(abc.iter().sum::<u64>(), 5);
        assert_eq!(abc[4 + 3], 1); // a=0, b=1, c=3: (a·2 + b)·4 + c
        assert!(r.marginal(&[0, 0], &d).is_err());
        assert!(r.marginal(&[3], &d).is_err());
    }

    #[test]
    fn a_count_column_repeats_cells() {
        let d = Domain::binary(["a", "b"]).unwrap();
        let count = CsvColumns::new().count("count");
        let r =
            Records::from_csv("a,b,count\n0,1,3\n1,1,0\n1,0,2\n".as_bytes(), &d, &count).unwrap();
        assert_eq!(r.len(), 5);
        assert_eq!(r.marginal(&[0, 1], &d).unwrap(), vec![0, 3, 2, 0]);
    }

    #[test]
    fn bad_input_is_named() {
        let d = Domain::from_json(r#"{"a": 3, "b": 2}"#).unwrap();
        let count = CsvColumns::new().count("count");
        let e =
            Records::from_csv("a,b\n1,0\n3,1\n".as_bytes(), &d, &CsvColumns::new()).unwrap_err();
        assert!(e.to_string().contains("\"3\""), "{e}");
        assert!(e.to_string().contains("3"), "{e}");
        assert!(matches!(
            Records::from_csv("a\n1\n".as_bytes(), &d, &CsvColumns::new()),
            Err(DataError::MissingColumn { .. })
        ));
        assert!(
            Records::from_csv("a,b\n".as_bytes(), &d, &CsvColumns::new())
                .unwrap()
                .is_empty()
        );
        assert!(matches!(
            Records::from_csv("a,b,count\n1,0,x\n".as_bytes(), &d, &count),
            Err(DataError::BadCount { line: 2, .. })
        ));
        assert!(matches!(
            Records::from_csv("a,b,count\n1,0,9999999999\n".as_bytes(), &d, &count),
            Err(DataError::BadCount { .. })
        ));
        // A column named `count` is an attribute like any other unless declared.
        assert!(matches!(
            Records::from_csv("a,b,count\n1,0,500\n".as_bytes(), &d, &CsvColumns::new()),
            Err(DataError::UncoveredColumns { .. })
        ));
        assert!(Records::from_columns(vec![vec![0], vec![2]], &d).is_err());
        assert!(Records::from_columns(vec![vec![0], vec![0, 1]], &d).is_err());
    }
}

#[cfg(test)]
mod numeric_tests {
    use super::*;

    /// NaN, ±inf and numbers too large for a double are refused naming the line
    /// and column; finite outliers are clamped into the end bins.
    #[test]
    fn non_finite_numbers_are_refused_and_outliers_clamped() {
        let d = Domain::from_json(r#"{"attributes": [{"name": "income", "edges": [0, 10, 20]}]}"#)
            .unwrap();
        for bad in ["NaN", "inf", "-inf", "1e999", "-1e999"] {
            let csv = format!("income\n5\n{bad}\n");
            let e = Records::from_csv(csv.as_bytes(), &d, &CsvColumns::new()).unwrap_err();
            assert!(
                matches!(&e, DataError::NotFinite { line: 3, attribute, .. } if attribute == "income"),
                "{bad}: {e}"
            );
            assert!(e.to_string().contains("not a finite number"), "{e}");
        }
        let r = Records::from_csv(
            "income\n-1e300\n1e300\n25\n".as_bytes(),
            &d,
            &CsvColumns::new(),
        )
        .unwrap();
        assert_eq!(r.column(0).unwrap(), &[0, 1, 1]);
    }

    #[test]
    fn a_record_limit_binds_before_the_records_are_stored() {
        let d = Domain::binary(["a", "b"]).unwrap();
        let count = CsvColumns::new().count("count");
        let csv = "a,b,count\n0,1,3\n1,0,300000000\n";
        let e = Records::from_csv_within(csv.as_bytes(), &d, &count, 10).unwrap_err();
        assert!(
            matches!(e, DataError::TooManyRecords { line: 3, max: 10 }),
            "{e}"
        );
        let r = Records::from_csv_within("a,b,count\n0,1,3\n".as_bytes(), &d, &count, 3).unwrap();
        assert_eq!(r.len(), 3);
    }
}

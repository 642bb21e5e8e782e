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

/// One column of a table in dictionary form, for
/// [`Records::from_dictionary_columns`]: its name, its distinct values as text
/// (`None`: a missing value), and for each row the position of the row's value
/// in that list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DictionaryColumn {
    name: String,
    values: Vec<Option<String>>,
    codes: Vec<u32>,
}

impl DictionaryColumn {
    /// The column `name` with dictionary `values` and one code per row.
    pub fn new(name: impl Into<String>, values: Vec<Option<String>>, codes: Vec<u32>) -> Self {
        DictionaryColumn {
            name: name.into(),
            values,
            codes,
        }
    }

    /// The column's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The column's distinct values as text (`None`: a missing value).
    pub fn values(&self) -> &[Option<String>] {
        &self.values
    }

    /// For each row, the position of its value in [`DictionaryColumn::values`].
    pub fn codes(&self) -> &[u32] {
        &self.codes
    }
}

/// A code that points past its column's dictionary of `len` values.
fn bad_code(name: &str, len: usize, code: u32) -> DataError {
    DataError::InvalidValue(format!(
        "column {name:?}: code {code} is not a position in its dictionary of {len} values"
    ))
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
    ///
    /// The refusal depends on the number of records, which is private under
    /// add/remove-one neighbours (a count table declares any total in one line):
    /// a caller under that relation charges the run before reading (as `privq
    /// synth` charges its budget file), so the refusal releases nothing and is no
    /// free probe of n.
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

    /// Loads a table held column by column in dictionary form (as an Arrow
    /// dictionary array holds a column, or a DataFrame's categorical column): one
    /// record per row, read by the same rules as [`Records::from_csv`]. Every
    /// domain attribute must be a column and every other column declared in
    /// `declared` (a count column's values are the rows' weights); each value's
    /// text is matched by [`Attribute::index_of`](super::Attribute::index_of); a
    /// row holding a missing value (`None`) is refused ([`DataError::MissingValue`],
    /// even where the domain lists the empty text). A dictionary value that no row uses is
    /// never looked at; a used one outside the domain is the error `from_csv`
    /// gives, with `line` the line the row would have in the table written as CSV
    /// (row `r`, counted from 0, is line `r + 2`).
    ///
    /// ```
    /// use privq_host::data::{CsvColumns, DictionaryColumn, Domain, Records};
    /// let d = Domain::from_json(r#"{"attributes": [{"name": "city", "values": ["Oslo", "Rome"]},
    ///                                              {"name": "age", "edges": [0, 18, 120]}]}"#)?;
    /// let columns = vec![
    ///     DictionaryColumn::new("age", vec![Some("30".into()), Some("7".into())], vec![0, 1, 0]),
    ///     DictionaryColumn::new("city", vec![Some("Rome".into()), Some("Paris".into()), Some("Oslo".into())], vec![0, 2, 2]),
    /// ];
    /// let r = Records::from_dictionary_columns(columns, &d, &CsvColumns::new())?;
    /// assert_eq!((r.column(0), r.column(1)), (Some(&[1, 0, 0][..]), Some(&[1, 0, 1][..])));
    /// # Ok::<(), privq_host::data::DataError>(())
    /// ```
    pub fn from_dictionary_columns(
        columns: Vec<DictionaryColumn>,
        domain: &Domain,
        declared: &CsvColumns,
    ) -> Result<Self, DataError> {
        let header: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
        let layout = declared.layout(header, domain)?;
        let rows = columns.first().map_or(0, |c| c.codes.len());
        if let Some(c) = columns.iter().find(|c| c.codes.len() != rows) {
            return Err(DataError::LengthMismatch {
                expected: rows,
                got: c.codes.len(),
            });
        }
        let times: Option<Vec<usize>> = match layout.count {
            None => None,
            Some(i) => {
                let c = &columns[i];
                let counts = c
                    .values
                    .iter()
                    .map(|v| {
                        let text = v.as_deref().unwrap_or("").trim();
                        text.parse::<usize>().ok().filter(|&t| t <= 1 << 32)
                    })
                    .collect::<Vec<_>>();
                let mut times = Vec::with_capacity(rows);
                for (row, &code) in c.codes.iter().enumerate() {
                    let slot = counts
                        .get(code as usize)
                        .ok_or_else(|| bad_code(&c.name, c.values.len(), code))?;
                    times.push(slot.ok_or_else(|| DataError::BadCount {
                        line: row + 2,
                        text: c.values[code as usize].clone().unwrap_or_default(),
                    })?);
                }
                let total = times.iter().try_fold(0usize, |a, &t| a.checked_add(t));
                if total.is_none_or(|t| t > 1 << 32) {
                    return Err(DataError::TooManyRecords {
                        line: rows + 1,
                        max: 1 << 32,
                    });
                }
                Some(times)
            }
        };
        let mut slots: Vec<Option<DictionaryColumn>> = columns.into_iter().map(Some).collect();
        let mut out = Vec::with_capacity(domain.dims());
        for (&pos, attr) in layout.attributes.iter().zip(domain.attributes()) {
            let Some(c) = slots.get_mut(pos).and_then(Option::take) else {
                return Err(DataError::InvalidValue(format!(
                    "column {:?} is read twice",
                    attr.name()
                )));
            };
            let DictionaryColumn {
                name,
                values,
                mut codes,
            } = c;
            let lookup: Vec<Option<u32>> = values
                .iter()
                .map(|v| {
                    attr.index_of(v.as_deref().unwrap_or(""))
                        .and_then(|i| u32::try_from(i).ok())
                })
                .collect();
            for (row, code) in codes.iter_mut().enumerate() {
                let Some(&found) = lookup.get(*code as usize) else {
                    return Err(bad_code(&name, values.len(), *code));
                };
                let Some(text) = values[*code as usize].as_deref() else {
                    return Err(DataError::MissingValue {
                        attribute: name,
                        line: row + 2,
                    });
                };
                *code = found.ok_or_else(|| attr.value_error(text, row + 2))?;
            }
            out.push(match &times {
                None => codes,
                Some(times) => codes
                    .iter()
                    .zip(times)
                    .flat_map(|(&v, &t)| std::iter::repeat_n(v, t))
                    .collect(),
            });
        }
        let len = match &times {
            None => rows,
            Some(t) => t.iter().sum(),
        };
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
mod dictionary_tests {
    use super::*;

    fn col(name: &str, values: &[Option<&str>], codes: &[u32]) -> DictionaryColumn {
        let values = values.iter().map(|v| v.map(str::to_string)).collect();
        DictionaryColumn::new(name, values, codes.to_vec())
    }

    /// The same table as CSV and in dictionary form gives the same records; a
    /// dictionary value no row uses is never looked at.
    #[test]
    fn dictionary_columns_read_as_the_csv_does() {
        let d = Domain::from_json(
            r#"{"attributes": [{"name": "a", "values": ["x", "y", "z"]},
                                                     {"name": "n", "edges": [0, 10, 20]}]}"#,
        )
        .unwrap();
        let csv = "n,a\n5,y\n25,x\n-3,y\n10,z\n";
        let from_csv = Records::from_csv(csv.as_bytes(), &d, &CsvColumns::new()).unwrap();
        let columns = vec![
            col(
                "n",
                &[Some("5"), Some("25"), Some("-3"), Some("10")],
                &[0, 1, 2, 3],
            ),
            col(
                "a",
                &[Some("y"), Some("unused"), Some("x"), Some("z")],
                &[0, 2, 0, 3],
            ),
        ];
        let table = Records::from_dictionary_columns(columns, &d, &CsvColumns::new()).unwrap();
        assert_eq!(table, from_csv);
        let weighted = vec![
            col("a", &[Some("x"), Some("z")], &[0, 1]),
            col("n", &[Some("1")], &[0, 0]),
            col("w", &[Some("3"), Some("0")], &[0, 1]),
        ];
        let r =
            Records::from_dictionary_columns(weighted, &d, &CsvColumns::new().count("w")).unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(r.column(0), Some(&[0, 0, 0][..]));
    }

    #[test]
    fn bad_tables_are_the_csv_errors() {
        let d = Domain::binary(["a", "b"]).unwrap();
        let read = |columns| Records::from_dictionary_columns(columns, &d, &CsvColumns::new());
        let e = read(vec![
            col("a", &[Some("0"), Some("7")], &[0, 0, 1]),
            col("b", &[Some("1")], &[0, 0, 0]),
        ])
        .unwrap_err();
        assert!(
            matches!(&e, DataError::UnknownValue { attribute, value, line: 4 } if attribute == "a" && value == "7"),
            "{e}"
        );
        let e = read(vec![col("a", &[None], &[0]), col("b", &[Some("1")], &[0])]).unwrap_err();
        assert!(
            matches!(&e, DataError::MissingValue { attribute, line: 2 } if attribute == "a"),
            "{e}"
        );
        assert!(matches!(
            read(vec![
                col("a", &[Some("0")], &[0]),
                col("c", &[Some("1")], &[0]),
                col("b", &[Some("1")], &[0])
            ]),
            Err(DataError::UncoveredColumns { .. })
        ));
        assert!(matches!(
            read(vec![col("a", &[Some("0")], &[0])]),
            Err(DataError::MissingColumn { .. })
        ));
        assert!(matches!(
            read(vec![
                col("a", &[Some("0")], &[0, 0]),
                col("b", &[Some("1")], &[0])
            ]),
            Err(DataError::LengthMismatch { .. })
        ));
        assert!(matches!(
            read(vec![
                col("a", &[Some("0")], &[1]),
                col("b", &[Some("1")], &[0])
            ]),
            Err(DataError::InvalidValue(_))
        ));
        assert!(
            read(vec![col("a", &[], &[]), col("b", &[], &[])])
                .unwrap()
                .is_empty()
        );
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

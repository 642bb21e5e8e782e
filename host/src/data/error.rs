//! The data model's error type.

use std::fmt;

/// Everything that can go wrong while describing, loading or summarising data.
#[derive(Debug)]
#[non_exhaustive]
pub enum DataError {
    /// A record holds a value that its attribute does not list (or a number outside
    /// every bin).
    UnknownValue {
        /// The attribute (column) name.
        attribute: String,
        /// The offending text.
        value: String,
        /// 1-based line in the input (the header is line 1).
        line: usize,
    },
    /// A numeric attribute's value is NaN or infinite (or too large to be a
    /// finite number, such as `1e999`).
    NotFinite {
        /// The attribute (column) name.
        attribute: String,
        /// The offending text.
        value: String,
        /// 1-based line in the input (the header is line 1).
        line: usize,
    },
    /// A numeric (binned) attribute's value is not a number at all (`abc`).
    NotANumber {
        /// The attribute (column) name.
        attribute: String,
        /// The offending text.
        value: String,
        /// 1-based line in the input (the header is line 1).
        line: usize,
    },
    /// Columns of the CSV header that are neither attributes of the domain nor
    /// declared (as the count column or as ignored): nothing is dropped silently.
    UncoveredColumns {
        /// The columns, in header order.
        columns: Vec<String>,
    },
    /// A column that the domain needs is missing from the CSV header.
    MissingColumn {
        /// The missing column.
        column: String,
        /// The columns the header has.
        available: Vec<String>,
    },
    /// The universe (product of the attribute sizes) needs more memory than the cap.
    UniverseTooLarge {
        /// Number of cells (saturating at `u64::MAX`).
        cells: u64,
        /// Bytes a dense histogram of that size needs (saturating).
        bytes: u64,
        /// The configured cap in bytes.
        cap: u64,
    },
    /// The input holds more records (count-column weights included) than the
    /// caller's limit, reached at `line`.
    TooManyRecords {
        /// 1-based line where the limit was passed.
        line: usize,
        /// The limit.
        max: usize,
    },
    /// The data hold no records (or every count is zero).
    EmptyData,
    /// Records were to be loaded for a release without a domain. The values each
    /// attribute can take are part of the release and must not be read from the
    /// private data (one record with a rare value would change the universe).
    DomainRequired {
        /// Whether the caller offers private discovery (`--discover-domain`) as
        /// the other fix.
        discovery: bool,
    },
    /// The domain description is not usable (why is in the message).
    InvalidDomain(String),
    /// A count column value is not a non-negative integer.
    BadCount {
        /// 1-based line.
        line: usize,
        /// The offending text.
        text: String,
    },
    /// Two vectors that must have the same length do not.
    LengthMismatch {
        /// The expected length.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// A numeric value is negative, NaN or infinite where that is not allowed.
    InvalidValue(String),
    /// Malformed CSV.
    Csv(csv::Error),
    /// Malformed JSON domain spec.
    Json(serde_json::Error),
    /// Reading or writing failed.
    Io(std::io::Error),
    /// Reading the file at `path` failed (missing, unreadable, not UTF-8 text).
    File {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataError::UnknownValue {
                attribute,
                value,
                line,
            } if value.trim().is_empty() => write!(
                f,
                "line {line}: attribute {attribute:?} is empty; privq has no missing values \
                 (drop or impute such rows, or give the attribute a value such as \"missing\")"
            ),
            DataError::UnknownValue {
                attribute,
                value,
                line,
            } => write!(
                f,
                "line {line}: attribute {attribute:?} has no value {:?}",
                super::shorten(value)
            ),
            DataError::NotANumber {
                attribute,
                value,
                line,
            } => write!(
                f,
                "line {line}: attribute {attribute:?} is numeric (binned on its edges), and {:?} \
                 is not a number",
                super::shorten(value)
            ),
            DataError::NotFinite {
                attribute,
                value,
                line,
            } => write!(
                f,
                "line {line}, column {attribute:?}: {} is not a finite number",
                super::shorten(value)
            ),
            DataError::UncoveredColumns { columns } => write!(
                f,
                "the column(s) {} are not attributes of the domain: add them to the domain, \
                 declare a weight column with --count-column NAME (each row then stands for \
                 NAME records), or leave them out with --ignore-columns {}",
                columns
                    .iter()
                    .map(|c| format!("{:?}", super::shorten(c)))
                    .collect::<Vec<_>>()
                    .join(", "),
                columns.join(",")
            ),
            DataError::MissingColumn { column, available } => write!(
                f,
                "no column named {column:?}; the header has: {}",
                available.join(", ")
            ),
            DataError::UniverseTooLarge { cells, .. } if *cells == u64::MAX => write!(
                f,
                "the universe has 2^64 cells or more, too many for a dense histogram or a cell \
                 index (the adaptive mechanism handles it; or use fewer attributes or coarser bins)"
            ),
            DataError::UniverseTooLarge { cells, bytes, cap } => write!(
                f,
                "the universe has {cells} cells, which needs {bytes} bytes for a dense histogram; \
                 the memory cap is {cap} bytes (raise it, or use fewer attributes or coarser bins)"
            ),
            DataError::TooManyRecords { line, max } => write!(
                f,
                "line {line}: the input holds more than {max} records (count-column weights \
                 included), more than the memory cap allows"
            ),
            DataError::EmptyData => write!(f, "the data hold no records"),
            DataError::DomainRequired { discovery } => {
                write!(
                    f,
                    "no domain given: the values of each attribute must be public, not read from \
                     the private data; pass --domain FILE (a JSON spec) or --domain binary (0/1 \
                     attributes named by the CSV header)"
                )?;
                if *discovery {
                    write!(
                        f,
                        ", or choose the values privately with --discover-domain (charged to the \
                         budget; the run becomes (epsilon, delta)-DP)"
                    )?;
                }
                Ok(())
            }
            DataError::InvalidDomain(why) => write!(f, "invalid domain: {why}"),
            DataError::BadCount { line, text } => {
                write!(
                    f,
                    "line {line}: count {text:?} is not a non-negative integer"
                )
            }
            DataError::LengthMismatch { expected, got } => {
                write!(f, "length mismatch: expected {expected}, got {got}")
            }
            DataError::InvalidValue(why) => write!(f, "invalid value: {why}"),
            DataError::Csv(e) => write!(f, "malformed CSV: {e}"),
            DataError::Json(e) => write!(f, "malformed domain spec: {e}"),
            DataError::File { path, source } => {
                write!(f, "{}: {}", path.display(), describe_io(source))
            }
            DataError::Io(e) => f.write_str(&describe_io(e)),
        }
    }
}

impl std::error::Error for DataError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DataError::Csv(e) => Some(e),
            DataError::Json(e) => Some(e),
            DataError::Io(e) | DataError::File { source: e, .. } => Some(e),
            _ => None,
        }
    }
}

/// An I/O error in words a user can act on: text that is not UTF-8 is a format
/// problem, not a failing disk.
pub(crate) fn describe_io(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::InvalidData => format!("not UTF-8 text ({e})"),
        std::io::ErrorKind::NotFound => format!("no such file ({e})"),
        _ => format!("reading or writing failed: {e}"),
    }
}

impl From<csv::Error> for DataError {
    fn from(e: csv::Error) -> Self {
        DataError::Csv(e)
    }
}

impl From<serde_json::Error> for DataError {
    fn from(e: serde_json::Error) -> Self {
        DataError::Json(e)
    }
}

impl From<std::io::Error> for DataError {
    fn from(e: std::io::Error) -> Self {
        DataError::Io(e)
    }
}

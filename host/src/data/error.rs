//! The data model's error type.

use std::fmt;

/// Everything that can go wrong while describing, loading or summarising data.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// A record holds a value that its attribute does not list (or a number outside
    /// every bin).
    #[error(fmt = unknown_value)]
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
    #[error(
        "line {line}, column {attribute:?}: {} is not a finite number",
        super::shorten(value)
    )]
    NotFinite {
        /// The attribute (column) name.
        attribute: String,
        /// The offending text.
        value: String,
        /// 1-based line in the input (the header is line 1).
        line: usize,
    },
    /// A numeric (binned) attribute's value is not a number at all (`abc`).
    #[error(
        "line {line}: attribute {attribute:?} is numeric (binned on its edges), and {:?} is not \
         a number",
        super::shorten(value)
    )]
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
    #[error(
        "the column(s) {} are not attributes of the domain: add them to the domain, declare a \
         weight column with --count-column NAME (each row then stands for NAME records), or \
         leave them out with --ignore-columns {}",
        columns.iter().map(|c| format!("{:?}", super::shorten(c))).collect::<Vec<_>>().join(", "), columns.join(",")
    )]
    UncoveredColumns {
        /// The columns, in header order.
        columns: Vec<String>,
    },
    /// A column that the domain needs is missing from the CSV header.
    #[error("no column named {column:?}; the header has: {}", available.join(", "))]
    MissingColumn {
        /// The missing column.
        column: String,
        /// The columns the header has.
        available: Vec<String>,
    },
    /// The universe (product of the attribute sizes) needs more memory than the cap.
    #[error(fmt = universe_too_large)]
    UniverseTooLarge {
        /// Number of cells (saturating at `u64::MAX`).
        cells: u64,
        /// Bytes a dense histogram of that size needs (saturating).
        bytes: u64,
        /// The configured cap in bytes.
        cap: u64,
    },
    /// The memory cap allows a dense histogram the machine cannot allocate (a
    /// cap set above the memory there is); nothing was charged for it.
    #[error(
        "a dense histogram of {cells} cells needs {bytes} bytes, which could not be allocated \
         (the memory cap allows it, but the machine does not have it): lower the memory cap, \
         or use fewer attributes or coarser bins"
    )]
    OutOfMemory {
        /// Number of cells.
        cells: u64,
        /// Bytes asked for.
        bytes: u64,
    },
    /// The input holds more records (count-column weights included) than the
    /// caller's limit, reached at `line`.
    #[error(
        "line {line}: the input holds more than {max} records (count-column weights included), \
         more than the memory cap allows"
    )]
    TooManyRecords {
        /// 1-based line where the limit was passed.
        line: usize,
        /// The limit.
        max: usize,
    },
    /// A row holds a missing value (a front end's null, `None`): privq has no
    /// missing values, and an empty text is not one.
    #[error(
        "line {line}: attribute {attribute:?} holds a missing value (null); privq has no missing \
         values"
    )]
    MissingValue {
        /// The attribute (column).
        attribute: String,
        /// 1-based line the row would have in the table written as CSV (row `r`,
        /// counted from 0, is line `r + 2`).
        line: usize,
    },
    /// The data hold no records (or every count is zero).
    #[error("the data hold no records")]
    EmptyData,
    /// Records were to be loaded for a release without a domain. The values each
    /// attribute can take are part of the release and must not be read from the
    /// private data (one record with a rare value would change the universe).
    #[error(fmt = domain_required)]
    DomainRequired {
        /// Whether the caller offers private discovery (`--discover-domain`) as
        /// the other fix.
        discovery: bool,
    },
    /// The domain description is not usable (why is in the message).
    #[error("invalid domain: {0}")]
    InvalidDomain(String),
    /// A count column value is not a non-negative integer.
    #[error("line {line}: count {text:?} is not a non-negative integer")]
    BadCount {
        /// 1-based line.
        line: usize,
        /// The offending text.
        text: String,
    },
    /// Two vectors that must have the same length do not.
    #[error("length mismatch: expected {expected}, got {got}")]
    LengthMismatch {
        /// The expected length.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// A numeric value is negative, NaN or infinite where that is not allowed.
    #[error("invalid value: {0}")]
    InvalidValue(String),
    /// Malformed CSV.
    #[error("malformed CSV: {0}")]
    Csv(#[from] csv::Error),
    /// Malformed JSON domain spec.
    #[error("malformed domain spec: {0}")]
    Json(#[from] serde_json::Error),
    /// Reading or writing failed.
    #[error("{}", describe_io(.0))]
    Io(#[from] std::io::Error),
    /// Reading the file at `path` failed (missing, unreadable, not UTF-8 text).
    #[error("{}: {}", path.display(), describe_io(source))]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// [`DataError::UnknownValue`]'s message: an empty value is a missing value, which
/// privq does not have.
fn unknown_value(
    attribute: &str,
    value: &str,
    line: &usize,
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    if value.trim().is_empty() {
        write!(
            f,
            "line {line}: attribute {attribute:?} is empty; privq has no missing values \
             (drop or impute such rows, or give the attribute a value such as \"missing\")"
        )
    } else {
        write!(
            f,
            "line {line}: attribute {attribute:?} has no value {:?}",
            super::shorten(value)
        )
    }
}

/// [`DataError::UniverseTooLarge`]'s message (`cells` saturates at `u64::MAX`).
fn universe_too_large(
    cells: &u64,
    bytes: &u64,
    cap: &u64,
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    if *cells == u64::MAX {
        write!(
            f,
            "the universe has 2^64 cells or more, too many for a dense histogram or a cell \
             index (the adaptive mechanism handles it; or use fewer attributes or coarser bins)"
        )
    } else {
        write!(
            f,
            "the universe has {cells} cells, which needs {bytes} bytes for a dense histogram; \
             the memory cap is {cap} bytes (raise it, or use fewer attributes or coarser bins)"
        )
    }
}

/// [`DataError::DomainRequired`]'s message, naming private discovery when the
/// caller offers it.
fn domain_required(discovery: &bool, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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

/// An I/O error in words a user can act on: text that is not UTF-8 is a format
/// problem, not a failing disk.
pub(crate) fn describe_io(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::InvalidData => format!("not UTF-8 text ({e})"),
        std::io::ErrorKind::NotFound => format!("no such file ({e})"),
        _ => format!("reading or writing failed: {e}"),
    }
}

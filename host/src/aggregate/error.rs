//! What can go wrong in a private-statistics query.

use crate::accountant::AccountantError;
use crate::data::DiscoveryError;

/// Why a query was refused. Every refusal happens before any budget is spent,
/// except [`AggregateError::Budget`], which is the accountant refusing the charge.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AggregateError {
    /// A column the query reads is not in the table's header.
    #[error("no column {column:?}; the header has: {}", available.join(", "))]
    MissingColumn {
        /// The missing column.
        column: String,
        /// The columns the header has.
        available: Vec<String>,
    },
    /// The header names a column twice.
    #[error("the header names column {column:?} twice (columns {first} and {second}); rename one")]
    DuplicateColumn {
        /// The column.
        column: String,
        /// Its first position (1-based).
        first: usize,
        /// Its second position (1-based).
        second: usize,
    },
    /// A value is not a number (an empty field included). The message names the
    /// line and column, not the text, which may be private.
    #[error("line {line}: column {column:?} is not a number (empty or text)")]
    NotANumber {
        /// The column.
        column: String,
        /// 1-based line (the header is line 1).
        line: usize,
    },
    /// A value is NaN or infinite.
    #[error("line {line}: column {column:?} is not finite (NaN or infinite)")]
    NotFinite {
        /// The column.
        column: String,
        /// 1-based line (the header is line 1).
        line: usize,
    },
    /// A row names no privacy unit.
    #[error("line {line}: the row has no privacy unit (column {column:?} is empty)")]
    EmptyUnit {
        /// The privacy-unit column.
        column: String,
        /// 1-based line (the header is line 1).
        line: usize,
    },
    /// The table has more rows than the caller allowed.
    #[error("the table has more than {max} rows; raise the limit")]
    TooManyRows {
        /// The limit.
        max: usize,
    },
    /// The table has no row.
    #[error("the table has no row")]
    EmptyTable,
    /// Bounds that are not `LO < HI` decimals within the fixed-point range.
    #[error("invalid bounds: {0}")]
    InvalidBounds(String),
    /// Histogram bin edges that are not at least two finite, strictly increasing
    /// numbers, or too many of them ([`Binning`](super::Binning)).
    #[error("invalid bins for column {column:?}: {reason}")]
    InvalidBins {
        /// The binned column.
        column: String,
        /// What is wrong with the edges.
        reason: String,
    },
    /// More public groups than a release may list (the listed keys times every
    /// histogram's bins), refused before they are built.
    #[error(
        "{groups} public groups (the listed keys times the bins) is more than the {max} a \
         release may list"
    )]
    TooManyGroups {
        /// How many the plan would list (saturating).
        groups: u64,
        /// The limit.
        max: u64,
    },
    /// Private group selection (a δ) asked for a query whose every group-by key is
    /// a histogram bin: the bins are public, every one is released, so there is
    /// nothing to select. Refused before anything is charged.
    #[error(
        "every group-by key ({}) is a histogram bin: bins are public and every bin is \
         released, so private group selection would spend budget for nothing; drop the δ \
         (--delta) and use public groups",
        keys.join(", ")
    )]
    PrivateBins {
        /// The group-by keys (all binned).
        keys: Vec<String>,
    },
    /// An aggregate reads a column no bounds were given for.
    #[error(
        "column {0:?} has no bounds: give its public range (e.g. --bounds {0}=LO:HI); \
         bounds from the data would leak it"
    )]
    Unbounded(String),
    /// The query reads a table the caller was not given.
    #[error(
        "the query reads table {table:?}, and the table given is {}",
        if given.is_empty() { "none".to_string() } else {
            given.iter().map(|g| format!("{g:?}")).collect::<Vec<_>>().join(", ")
        }
    )]
    UnknownTable {
        /// The table in the query's `FROM`.
        table: String,
        /// The names of the tables given.
        given: Vec<String>,
    },
    /// Contribution limits other than one group and one row without a privacy unit.
    #[error(
        "the limits on groups and rows limit what one unit contributes: name the unit \
         column as the privacy unit (without it every row is its own unit)"
    )]
    LimitsWithoutUnit,
    /// A column given twice in one option (`bounds` or `keys`).
    #[error("{column:?} is given twice")]
    Twice {
        /// The option.
        option: &'static str,
        /// The column.
        column: String,
    },
    /// Bounds for a column no aggregate reads (with the columns it does read).
    #[error(
        "the query aggregates no column {column:?} (names are case-sensitive; it reads {read})"
    )]
    BoundsNotAggregated {
        /// The column the bounds name.
        column: String,
        /// The columns the query's aggregates read, listed for the message.
        read: String,
    },
    /// Both public keys and a δ for private group selection.
    #[error("give either keys (public groups) or a δ (groups selected privately), not both")]
    KeysAndDelta,
    /// A δ for private group selection in a query without groups.
    #[error("the query has no GROUP BY, so there are no groups to select")]
    NothingToSelect,
    /// Keys listed for a histogram (`BIN`) column.
    #[error(
        "{0:?} is a histogram (BIN): its groups are its bins, from the edges; list keys for \
         the other group-by columns only"
    )]
    KeysForBins(String),
    /// Keys listed for a column the query does not group by.
    #[error("the query does not group by {0:?}")]
    KeysNotGrouped(String),
    /// A key list that is empty or holds an empty value.
    #[error("the keys of {0:?} are empty or hold an empty value (a stray comma?)")]
    EmptyKey(String),
    /// A public key with leading or trailing whitespace: a row's key is trimmed,
    /// so it would match no row (a request trims its keys; a plan from elsewhere
    /// must hold them trimmed).
    #[error("the key {key:?} of {column:?} is not trimmed (a row's key is)")]
    UntrimmedKey {
        /// The group-by column.
        column: String,
        /// The key.
        key: String,
    },
    /// More combinations of public keys than a request may list.
    #[error("more than 10^6 combinations of keys (at most {max})")]
    TooManyKeys {
        /// The limit.
        max: usize,
    },
    /// Group-by columns whose groups are neither listed nor selected privately.
    #[error(
        "{}",
        if *listed {
            format!("no keys for group-by column {:?}", columns[0])
        } else {
            format!(
                "grouping by {} needs its groups: list them (keys for {:?}, ...) or select \
                 them privately (a δ such as 1e-6)",
                columns.join(", "),
                columns[0]
            )
        }
    )]
    MissingKeys {
        /// The columns without keys.
        columns: Vec<String>,
        /// Whether keys were listed for other columns.
        listed: bool,
    },
    /// A parameter out of range, or a plan whose parts do not fit together.
    #[error("{0}")]
    InvalidParameter(String),
    /// An engine's totals (or one unit's piece of them) that this plan cannot
    /// produce: refused before any charge
    /// ([`Plan::check_piece`](super::Plan::check_piece),
    /// [`Plan::check_totals`](super::Plan::check_totals)).
    #[error("engine totals inconsistent with the plan: {0}")]
    InconsistentTotals(String),
    /// A SQL construct outside the supported subset.
    #[error("SQL: {0}")]
    Sql(String),
    /// The query is not valid SQL.
    #[error("SQL: cannot parse the query: {0}")]
    SqlSyntax(#[source] sqlparser::parser::ParserError),
    /// A bound is not a decimal privq's fixed point can hold.
    #[error("invalid bounds: {text:?} in {bounds:?} is not a decimal: {source}")]
    Decimal {
        /// The bound's text.
        text: String,
        /// The bounds as given.
        bounds: String,
        /// Why.
        #[source]
        source: privq_core::Error,
    },
    /// The CSV reader failed.
    #[error("CSV: {}", csv_message(.0))]
    Csv(#[from] csv::Error),
    /// The accountant refused a charge (or its parameters).
    #[error(transparent)]
    Budget(#[from] AccountantError),
    /// Calibrating private group selection failed.
    #[error(transparent)]
    Selection(#[from] DiscoveryError),
    /// Exact arithmetic or a sampler failed.
    #[error(transparent)]
    Core(#[from] privq_core::Error),
}

impl AggregateError {
    /// The request option a refusal is about (`"table"`, `"privacy-unit"`,
    /// `"bounds"`, `"keys"`, `"delta"`), for a front end to name it in its own
    /// spelling; `None` for the other errors.
    pub fn option(&self) -> Option<&'static str> {
        Some(match self {
            AggregateError::UnknownTable { .. } => "table",
            AggregateError::LimitsWithoutUnit => "privacy-unit",
            AggregateError::Twice { option, .. } => option,
            AggregateError::BoundsNotAggregated { .. } => "bounds",
            AggregateError::KeysAndDelta | AggregateError::NothingToSelect => "delta",
            AggregateError::KeysForBins(_)
            | AggregateError::KeysNotGrouped(_)
            | AggregateError::EmptyKey(_)
            | AggregateError::UntrimmedKey { .. }
            | AggregateError::TooManyKeys { .. }
            | AggregateError::MissingKeys { .. } => "keys",
            _ => return None,
        })
    }
}

/// The `csv` crate's message without its own "CSV error: " prefix.
fn csv_message(e: &csv::Error) -> String {
    let text = e.to_string();
    [
        "CSV error: ",
        "CSV parse error: ",
        "CSV deserialize error: ",
    ]
    .iter()
    .find_map(|p| text.strip_prefix(p))
    .map_or_else(|| text.clone(), str::to_string)
}

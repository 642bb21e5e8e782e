//! Private statistics by group over data with many rows per person: counts, sums,
//! means, quantiles and histograms, with contribution bounding, exact noise and
//! confidence intervals (`privq sql`).
//!
//! A query is a [`Query`] (group-by columns and [`Aggregate`]s); a [`Plan`] adds
//! everything the guarantee depends on, all of it public:
//!
//! * **the privacy unit** — the column that names the person or device a row
//!   belongs to (default: every row is its own unit), and the [`Contribution`]
//!   limits: at most `max_groups` groups and `max_rows` rows per group per unit,
//!   kept by a secret keyed PRF of each unit's own rows ([`BoundingKey`]), a
//!   choice every engine makes alike whatever the row order;
//! * **the neighbour relation** ([`Neighbours`]): add/remove one *unit* (default)
//!   or replace one unit;
//! * **[`Bounds`]** for every numeric column an aggregate reads: values are clamped
//!   into them and snapped to a power-of-two grid;
//! * **the groups**: a public list of keys ([`Groups::Public`]; a key absent from
//!   the data is released as noisy zeros) or keys selected privately
//!   ([`Groups::Private`]: the number of units per key plus discrete Laplace noise,
//!   kept above a threshold τ chosen for δ);
//! * **histogram bins** ([`Binning`], [`Query::bin`]; `BIN(x, e₀, e₁, …)` in SQL): a
//!   group-by key derived from a numeric column by declared edges, bins `[e_i,
//!   e_{i+1})` with the last closed and values outside clamped into the end bins.
//!   The bins are public (from the edges), so with public groups every bin of every
//!   listed key is released; a (key, bin) pair is one group for the contribution
//!   limits, so nothing in the sensitivity argument changes;
//! * **ε** (and δ for private groups), split evenly over the measurements.
//!
//! A front end states a request as [`SqlRequest`]: the SQL text and its options
//! (the tables it has, the unit, bounds and keys per column, δ), checked against
//! the query and each other before the plan is built, so `privq sql` and
//! `privq.sql` refuse the same requests for the same reasons
//! ([`AggregateError::option`] names the option). [`Table::from_csv`] reads a CSV
//! file, [`Table::from_columns`] a table given column by column, with the same checks.
//!
//! [`Plan::release`] is [`Plan::totals`] (the exact bounded aggregates per group)
//! then [`Plan::release_totals`] (charges, group selection, noise, the table): an
//! engine that computes the same [`GroupTotals`] elsewhere (DataFusion, in the
//! `privq-analytics` crate) releases the same bytes for the same seed.
//!
//! Every sensitivity follows from these, never from the data; the argument is in
//! the book's "Private statistics" chapter. Noise is exact discrete Laplace
//! (Canonne–Kamath–Steinke 2020) on integer counts and on grid-step sums.
//!
//! | aggregate | released as | interval |
//! |---|---|---|
//! | `COUNT(*)` | bounded rows + noise | exact, from the noise's distribution |
//! | histogram: `COUNT(*)` by `BIN(x, e₀, …)` | bounded rows per (group, bin) + noise, every bin | exact, from the noise's distribution |
//! | `SUM(x)` | clamped grid sum + noise | exact, from the noise's distribution |
//! | `AVG(x)` | midpoint + (noisy sum of `x − midpoint`) / noisy count, clamped | `± √(k_s² + (m·k_n)²)/n` from the noises' exact half widths |
//! | `QUANTILE(x, q)` | report noisy max over a public grid of candidates | none |
//!
//! ```
//! use privq_host::aggregate::{Aggregate, Bounds, Contribution, Groups, Plan, Query, Table};
//! use privq_host::{Epsilon, seeded_rng};
//!
//! let query = Query::new(
//!     ["region"],
//!     [("n", Aggregate::Count), ("mean_temp", Aggregate::Mean("temp".into()))],
//! );
//! let plan = Plan::builder(query)
//!     .privacy_unit("device", Contribution::new(1, 1)?)
//!     .bounds("temp", "-20:50".parse()?)
//!     .groups(Groups::public([["north"], ["south"]]))
//!     .build(Epsilon::new(1, 1)?)?;
//! let mut csv = String::from("device,region,temp\n");
//! for d in 0..200 {
//!     csv.push_str(&format!("d{d},{},{}\n", if d % 2 == 0 { "north" } else { "south" }, d % 30));
//! }
//! let table = Table::from_csv(csv.as_bytes(), &plan.columns(), 1_000_000)?;
//! let (release, ledger) = plan.release(&table, &mut seeded_rng(1))?;
//! assert_eq!(release.rows().len(), 2);
//! assert_eq!(ledger.spent_epsilon(), Some(Epsilon::new(1, 1)?));
//! let n = release.rows()[0].estimates()[0].value();
//! assert!((n - 100.0).abs() < 30.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod bins;
mod bounding;
mod bounds;
mod error;
mod filter;
mod intern;
mod measure;
mod partial;
mod plan;
mod records;
mod request;
mod spec;
mod sql;
mod table;
#[cfg(test)]
mod tests;
mod totals;

pub use bins::Binning;
pub use bounding::{
    BoundingKey, Contribution, MAX_CONTRIBUTION, decode_key, encode_key, row_order,
};
pub use bounds::Bounds;
pub use error::AggregateError;
pub use filter::{Compare, Filter, Literal, MAX_FILTER_DEPTH};
pub use partial::{
    Partial, PartialState, PartialStates, PartialTotals, PieceCheck, RowTotals, UnitColumns,
    UnitRows,
};
pub use plan::{
    Aggregate, Estimate, Groups, MAX_QUANTILE_CANDIDATES, Plan, PlanBuilder, PlannedMeasurement,
    QuantileNote, Query, Release, ReleasedColumn, ReleasedRow, ReleasedValues, whole_number,
};
pub use request::{LARGE_DELTA, MAX_KEY_COMBINATIONS, SqlRequest};
pub use spec::PlanSpec;
pub use sql::{SqlQuery, parse_sql};
pub use table::{Columns, ReadRow, RowReader, Table, TextColumn, not_a_regular_file, trim_field};
pub use totals::{ColumnTotals, GroupTotals, candidate_bucket};

pub use crate::contract::Neighbours;

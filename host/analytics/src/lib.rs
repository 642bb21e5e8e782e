//! privq-analytics: local reports as Parquet tables, aggregated by DataFusion.
//!
//! Aggregating local reports is post-processing of already privatized data: no
//! noise is added here, and the result must be exactly that of the in-process
//! path ([`Intake`](privq_host::ldp::intake::Intake) over the same reports).
//!
//! * [`table`]: the Parquet schema of a report table (one row per report: the
//!   report's kind as columns and its encoded bytes), and [`ReportTableWriter`](table::ReportTableWriter),
//!   which writes a directory of Parquet partitions
//!   atomically.
//! * [`udaf`]: `privq_aggregate(report)`, a DataFusion user-defined aggregate
//!   function whose state is a campaign-checked [`Intake`](privq_host::ldp::intake::Intake):
//!   `update_batch` ingests reports, `state` serializes the intake (the saved-state
//!   JSON of `privq ldp aggregate --save-state`), `merge_batch` merges intakes,
//!   and `evaluate` returns the serialized state.
//! * [`query`]: runs `SELECT privq_aggregate(report) FROM reports` over a
//!   directory of Parquet files and merges the result into one intake.
//! * [`private_sql`]: `privq sql --engine datafusion`'s exact bounded totals, and
//!   [`release_parquet`]: a release written as a Parquet file (`privq sql --output
//!   FILE.parquet`).
//! * `codec` and `ballista` (feature `ballista`): a DataFusion extension codec
//!   that carries `privq_aggregate`'s campaign inside serialized plans, and the
//!   same query on an Apache Ballista cluster in standalone mode.
//!
//! The bytes of the `report` column are untrusted: every report is checked
//! against the campaign (never against the table's kind columns, which only
//! describe the rows) and malformed ones are counted under their
//! [`RejectReason`](privq_host::ldp::decode::RejectReason), as in a report file.
//!
//! ```
//! use privq_analytics::{query, table::ReportTableWriter};
//! use privq_host::ldp::campaign::{Campaign, Limits};
//! use privq_host::ldp::fleet::{Fleet, MechanismSpec};
//! use privq_host::Epsilon;
//!
//! let spec = MechanismSpec::parse("grr", Epsilon::new(1, 1)?, 8)?;
//! let reports = Fleet::from_weights(&[1.0; 8], 500)?.privatize(&spec, 1)?;
//! let dir = std::env::temp_dir().join(format!("privq-doc-analytics-{}", std::process::id()));
//! let mut out = ReportTableWriter::create(&dir, 200)?;
//! for r in reports.iter() {
//!     out.push(r)?;
//! }
//! out.commit()?; // three partitions: 200 + 200 + 100 rows
//! let plan = Campaign::for_spec(&spec).validate(&Limits::default())?;
//! let intake = query::aggregate_parquet(&dir, &plan, &Limits::default(), 2)?;
//! assert_eq!(intake.stats().accepted, 500);
//! std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[cfg(feature = "ballista")]
pub mod ballista;
#[cfg(feature = "ballista")]
pub mod codec;
pub mod private_sql;
pub mod query;
pub mod release_parquet;
pub mod table;
pub mod udaf;

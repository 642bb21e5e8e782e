//! Local differential privacy, host side: decode device reports, aggregate them
//! into unbiased estimates with error bars, and run the local statistical-query
//! oracle.
//!
//! * [`decode`]: validation of the wire format (`docs/src/report-format.md`) with one
//!   counter per rejection class; [`frames`]: the report-file framing.
//! * [`aggregate`]: mergeable, serializable aggregators for every randomizer in
//!   [`privq_core::local`], with unbiased estimates, exact per-item variances and
//!   confidence intervals ([`estimate`]), and post-processing ([`postprocess`]).
//! * [`sq`]: the local SQ oracle over a fleet, with its tolerance formula.
//! * [`campaign`]: the public campaign configuration an aggregation is checked
//!   against; [`intake`]: campaign-checked, resynchronising, bounded intake of
//!   report files with full accounting; [`output`]: atomic outputs and rendering.
//! * [`upload`]: HMAC-SHA-256-authenticated upload frames (`docs/src/upload-frame.md`):
//!   verification with per-device keys, reject classes, the replay key.
//! * The `privq-analytics` crate: reports as Parquet tables, aggregated by
//!   DataFusion with privq's intake as a user-defined aggregate function.
//! * [`fleet`]: simulated fleets of devices (tests, benchmarks, `privq ldp simulate`).
//!
//! ```
//! use privq_host::ldp::aggregate::Aggregator;
//! use privq_host::ldp::fleet::{Fleet, MechanismSpec};
//! use privq_host::Epsilon;
//!
//! let spec = MechanismSpec::parse("oue", Epsilon::new(1, 1)?, 16)?;
//! let fleet = Fleet::from_weights(&[1.0; 16], 20_000)?;
//! let reports = fleet.privatize(&spec, 7)?;            // seeded: simulation only
//! let mut agg = Aggregator::new(reports.kind())?;
//! for r in reports.iter() {
//!     agg.ingest_bytes(r)?;
//! }
//! let est = agg.frequencies(0.95)?;
//! assert!((est.items[3].value - 1.0 / 16.0).abs() < 5.0 * est.items[3].std_error());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod aggregate;
pub mod campaign;
pub mod decode;
pub mod estimate;
pub mod fleet;
pub mod frames;
pub mod intake;
pub mod output;
pub mod parquet_footer;
pub mod postprocess;
pub mod sq;
pub mod unary;
pub mod upload;

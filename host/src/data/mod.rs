//! The curator's data model: domains of named attributes, CSV loading, dense
//! histograms with a memory cap, and relative entropy.
//!
//! ```
//! use privq_host::data::{load_count_table, kl, Domain, MemoryCap};
//! let domain = Domain::binary(["smoke", "mental"])?;
//! let table = "smoke,mental,count\n0,0,5\n0,1,3\n1,0,0\n1,1,2\n";
//! let counts = load_count_table(table.as_bytes(), &domain, "count", MemoryCap::default())?;
//! let x = counts.normalized()?;
//! assert_eq!(counts.total(), 10);
//! assert_eq!(kl(x.probabilities(), x.probabilities()), 0.0);
//! # Ok::<(), privq_host::data::DataError>(())
//! ```

mod divergence;
mod domain;
mod error;
mod histogram;
mod load;

pub use divergence::{kl, relative_entropy};
pub use domain::{Attribute, AttributeKind, Domain};
pub use error::DataError;
pub use histogram::{CountHistogram, Distribution, MemoryCap};
pub use load::{Dataset, infer_domain, load_auto, load_count_table, load_records, write_records};

//! Linear queries and workloads: dense, counting, k-way marginals, monotone
//! conjunctions, parity queries `Q_w` (with a fast Walsh–Hadamard transform for all
//! parity answers at once) and range queries.

mod linear;
mod wht;
mod workload;

pub use linear::{AttrRange, Query};
pub use wht::{fwht, fwht_i64, parity_answers, parity_counts, pattern_answers, pattern_counts};
pub use workload::Workload;

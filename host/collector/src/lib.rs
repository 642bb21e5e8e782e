//! The upload collector behind `privq serve` (feature `serve`): a SQLite
//! [`store`] that authenticates, de-duplicates, budgets and persists batches of
//! upload frames, and the [`http`] API over it (`docs/src/collector.md`).

pub mod client;
pub mod http;
pub mod store;

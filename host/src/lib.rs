//! privq-host
pub use privq_core::*;

//! The device side of local privacy, re-exported for host code whose signatures
//! name it: the local randomizers (randomized response, unary and hash
//! encodings, Hadamard response, the one-bit mean) and the device side of the
//! local statistical-query oracle ([`local::sq`]), with [`local::UnitValue`] and
//! [`local::QueryId`].
//!
//! **These samplers charge no host [`Accountant`](crate::accountant::Accountant).**
//! On a device the budget is enforced by the device's own lifetime ledger
//! (`privq_core::ledger`); each randomizer's guarantee is local ε-DP for the one
//! report it makes (Warner 1965; Wang, Blocki, Li and Jha 2017; for the SQ oracle
//! Kasiviswanathan, Lee, Nissim, Raskhodnikova and Smith 2011). Host code uses
//! them to simulate fleets and to name the queries the aggregator decodes, never to
//! release a curator's central data: that goes through a
//! [`Mechanism`](crate::contract::Mechanism), which charges an accountant first.
//!
//! ```
//! use privq_host::device::local::Grr;
//! use privq_host::{Epsilon, seeded_rng};
//! // One device's report of item 2 of 4 under ε = 1 (simulation: fixed seed).
//! let grr = Grr::new(Epsilon::new(1, 1)?, 4)?;
//! let report = grr.randomize(2, &mut seeded_rng(7))?;
//! assert!(report < 4);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use privq_core::local;

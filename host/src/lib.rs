//! # privq-host
//!
//! The curator's side of privq: everything in [`privq_core`] (re-exported here, so
//! std users need one dependency), an OS-seeded secure RNG, and the offline
//! mechanisms. The `privq` program is the `privq` crate (`host/cli`); the upload
//! collector is `privq-collector` and the DataFusion integration `privq-analytics`.
//!
//! ```
//! use privq_host::{Epsilon, Fixed, GridLaplace, secure_rng};
//!
//! let mech = GridLaplace::new(Fixed::ONE, Epsilon::new(1, 2)?)?;
//! let mut rng = secure_rng().expect("the OS provides entropy");
//! let released = mech.release("41.5".parse()?, &mut rng)?;
//! println!("{released}");
//! # Ok::<(), privq_host::Error>(())
//! ```

pub use privq_core::*;

mod rng;
pub mod stats;

pub use rng::{SeedError, secure_rng, seeded_rng};
pub mod accountant;
pub mod aggregate;
pub mod audit;
pub mod central;
pub mod choice;
pub mod conjunctions;
pub mod contract;
pub mod data;
pub mod distance;
pub mod dx;
pub mod experiment;
pub mod fairness;
pub mod knorm;
pub mod ldp;
pub mod lp;
pub mod query;
pub mod synth;
pub mod threshold;

/// The README's Rust examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

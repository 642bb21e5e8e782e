//! # privq-host
//!
//! The curator's side of privq: the offline mechanisms, each charging an
//! [`Accountant`](accountant::Accountant) before it samples
//! ([`contract`]), private statistics by group ([`aggregate`]), synthetic data
//! ([`synth`]), the aggregation of device reports ([`ldp`]) and an OS-seeded secure RNG.
//! The `privq` program is the `privq` crate (`host/cli`); the upload collector is
//! `privq-collector` and the DataFusion integration `privq-analytics`.
//!
//! ```
//! use privq_host::central::Geometric;
//! use privq_host::contract::{Mechanism, Neighbours};
//! use privq_host::{Epsilon, secure_rng};
//!
//! // A histogram under replace-one neighbours at ε = 1/2: the accountant holds exactly
//! // that budget, is bound to the relation, and is charged before any noise is drawn.
//! let mech = Geometric::histogram(Neighbours::Replace, Epsilon::new(1, 2)?)?;
//! let mut rng = secure_rng().expect("the OS provides entropy");
//! let (noisy, ledger) = mech.release_with_ledger(&[120, 7, 33][..], &mut rng)?;
//! assert_eq!(noisy.len(), 3);
//! assert_eq!(ledger.spent_epsilon(), Some(Epsilon::new(1, 2)?));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The core's types that host APIs name are re-exported here; none of them samples.
//! The device's local randomizers, which charge no host accountant, are under
//! [`device`]. The rest of the device crate (report and upload formats, the device
//! ledger, and the bare samplers) is used from [`privq_core`] itself.

pub use privq_core::{Epsilon, Error, Fixed, Histogram, Rho, histogram, rand_core};

mod rng;
pub mod stats;

pub use rng::{SeedError, derived_rng, secure_rng, seeded_rng};
pub mod accountant;
pub mod aggregate;
pub mod audit;
pub mod central;
pub mod choice;
pub mod conjunctions;
pub mod contract;
pub mod data;
pub mod device;
pub mod distance;
pub mod dx;
pub mod fairness;
pub mod knorm;
pub mod ldp;
pub mod lp;
mod parallel;
pub mod query;
pub mod synth;
pub mod threshold;

/// The README's Rust examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

#[cfg(test)]
mod api_chapter {
    /// The book's API chapter (`docs/src/library.md`) has one row per public module,
    /// and no row for a module that is not public: a module made public, renamed or
    /// hidden without the chapter fails here.
    #[test]
    fn the_api_chapter_lists_exactly_the_public_modules() {
        let chapter = include_str!("../../docs/src/library.md");
        let table = chapter
            .split("module by module")
            .nth(1)
            .and_then(|rest| rest.split("## Conventions").next())
            .expect("the chapter has its module table");
        let mut rows: Vec<&str> = table
            .lines()
            .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
            .collect();
        let mut modules: Vec<&str> = include_str!("lib.rs")
            .lines()
            .filter_map(|l| l.strip_prefix("pub mod ")?.strip_suffix(';'))
            .collect();
        rows.sort_unstable();
        modules.sort_unstable();
        assert_eq!(
            rows, modules,
            "docs/src/library.md against lib.rs's `pub mod` lines"
        );
    }
}

//! An in-project privacy auditor: a stochastic tester in the style of Google's DP
//! library stochastic tester and LDP-Auditor (Arcolezi & Gambs, PETS 2024).
//!
//! An [`AuditCase`] runs a mechanism many times on a dataset `D` and on a
//! neighbour `D′` (each run with its own seeded ChaCha generator, so an audit is
//! reproducible from one seed), counts how often each [`Event`] over the outputs
//! occurs on either side, and turns the counts into a statistically valid
//! **lower bound** on the privacy loss ([`empirical_epsilon`]): the largest
//! `ln(CP_low(p_D) / CP_high(p_D′))` over events and both directions, with exact
//! Clopper–Pearson bounds and the confidence split over all comparisons
//! (Bonferroni). If that bound exceeds the claimed ε, the claim is false with
//! probability at least the confidence level.
//!
//! ```
//! use privq_host::accountant::Accountant;
//! use privq_host::audit::{AuditCase, Claim, Event, Side, audit};
//! use privq_host::contract::{Mechanism, Neighbours};
//! use privq_host::central::Geometric;
//! use privq_host::Epsilon;
//!
//! // A count of 10 on D and 11 on D′, released with the geometric mechanism at ε = 1;
//! // each run is one release charged to its own accountant.
//! let eps = Epsilon::new(1, 1)?;
//! let mech = Geometric::counts(Neighbours::AddRemove, 1, eps)?;
//! let case = AuditCase::new("geometric", "count 10 vs 11", Claim::Pure(1.0), 2_000)
//!     .run(move |side, rng| {
//!         let count = if side == Side::D { 10 } else { 11 };
//!         let out = mech.release(&[count][..], &mut Accountant::pure(eps), rng)?;
//!         Ok(vec![out[0] as f64])
//!     })
//!     .events((9..13).map(|t| Event::at_least(0, t as f64)));
//! let report = audit(&case, 2_000, 7, &|_| {})?;
//! assert!(report.passed());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod case;
pub mod cases;
mod estimate;
pub mod gaussian_profile;
mod runner;

pub use case::{AuditCase, Claim, Event, Output, Predicate, RunError, RunFn, Side};
pub use estimate::{DEFAULT_ALPHA, EventCounts, Witness, empirical_epsilon};
pub use runner::{AuditReport, audit, run_seed};

/// Why an audit could not be completed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// The case is incomplete or a parameter is out of range.
    #[error("invalid audit case: {0}")]
    InvalidCase(String),
    /// The mechanism under audit returned an error on a run.
    #[error("the mechanism failed on run {run} on {side}: {source}")]
    Mechanism {
        /// The run (0-based) and side that failed.
        run: u64,
        /// Which dataset.
        side: Side,
        /// The mechanism's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A confidence bound could not be computed.
    #[error("confidence bound: {0}")]
    Stats(#[from] crate::stats::StatsError),
}

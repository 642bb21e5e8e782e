//! The registered audit cases: one small function per host mechanism, each built
//! on the mechanism's public API and the neighbouring pair its privacy proof is
//! most fragile against. `small` selects a problem size for the test suite.
//!
//! Every case asserts the *contract* (empirical ε ≤ claimed ε), not today's
//! behaviour: a case that fails points at a defect.

mod baselines;
mod central;
mod conjunctions;
mod discover;
mod distance;
mod dx;
mod fairness;
mod knorm;
mod mwem;
mod pmw;
mod synth;
mod threshold;

pub use baselines::{grid_mwem, laplace_per_query, tree_cdf};
pub use central::{discrete_gaussian, exponential, geometric_histogram, sq_oracle, vector_laplace};
pub use conjunctions::{
    agnostic_mw, conjunction_release, conjunction_release_local, cut_oracle, cut_release,
};
pub use discover::discovery;
pub use distance::{distance_offline, distance_session};
pub use dx::{dx_laplace, dx_mwem, smalldb};
pub use fairness::fairness_dp;
pub use knorm::{knorm_cube_large_eps, knorm_l1, nikm_linf};
pub use mwem::{mwem_init, mwem_rounds, synth_rare_value};
pub use pmw::{pmw_approximate, pmw_project, pmw_pure, pmw_reduce};
pub use synth::adaptive_marginals_case;
pub use threshold::threshold_oracle;

use super::{AuditCase, AuditError};

/// Builds a case at the test (`true`) or full (`false`) size.
pub type CaseFn = fn(bool) -> Result<AuditCase, AuditError>;

/// Every case, by name, in table order.
pub const REGISTRY: &[(&str, CaseFn)] = &[
    ("vector-laplace", vector_laplace),
    ("geometric-histogram", geometric_histogram),
    ("discrete-gaussian", discrete_gaussian),
    ("exponential", exponential),
    ("sq-oracle", sq_oracle),
    ("pmw-pure", pmw_pure),
    ("pmw-approx", pmw_approximate),
    ("pmw-project", pmw_project),
    ("pmw-reduce", pmw_reduce),
    ("mwem-init", mwem_init),
    ("mwem-rounds", mwem_rounds),
    ("synth-rare-value", synth_rare_value),
    ("discovery", discovery),
    ("dx-laplace", dx_laplace),
    ("smalldb", smalldb),
    ("dx-mwem", dx_mwem),
    ("distance-offline", distance_offline),
    ("distance-session", distance_session),
    ("knorm-l1", knorm_l1),
    ("knorm-linf-eps4", knorm_cube_large_eps),
    ("nikm-linf", nikm_linf),
    ("tree-cdf", tree_cdf),
    ("laplace-per-query", laplace_per_query),
    ("grid-mwem", grid_mwem),
    ("threshold-oracle", threshold_oracle),
    ("fairness-dp", fairness_dp),
    ("agnostic-mw", agnostic_mw),
    ("conjunction-release", conjunction_release),
    ("conjunction-release-local", conjunction_release_local),
    ("cut-oracle", cut_oracle),
    ("cut-release", cut_release),
    ("adaptive-marginals", adaptive_marginals_case),
];

/// The case called `name`, if registered.
pub fn by_name(name: &str, small: bool) -> Option<Result<AuditCase, AuditError>> {
    REGISTRY
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, make)| make(small))
}

/// The registered names.
pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|(n, _)| *n).collect()
}

/// Wraps a construction error of a mechanism.
pub(crate) fn setup<E: std::error::Error + Send + Sync + 'static>(e: E) -> AuditError {
    AuditError::InvalidCase(format!("setting up the mechanism failed: {e}"))
}

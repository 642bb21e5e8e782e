//! Fairness through awareness — Hardt's thesis, Chapter 8 (with Dwork, Pitassi,
//! Reingold and Zemel): treat similar individuals similarly.
//!
//! Individuals V carry a task-specific metric `d` (privq's [`FiniteMetric`]: one
//! metric abstraction, shared with d_X privacy); a randomised classifier maps each
//! individual to a distribution over outcomes A and must be Lipschitz,
//! `D(μ_x, μ_y) ≤ d(x, y)` (Def 8.2.1), for `D_tv` or `D_∞` ([`Divergence`]).
//!
//! * [`Instance`], [`Group`], [`Mapping`]: the objects of §8.2–8.3, validated;
//! * [`FairnessLp`]: the loss-minimising Lipschitz mapping (Fig. 8.1);
//! * [`earthmover`] (Def 8.3.5, Lemma 8.3.6) and [`bias`] (Def 8.3.3, Thm 8.3.7,
//!   Lemma 8.3.9); [`Mapping::parity`] checks statistical parity (Def 8.3.1);
//! * [`preferential_treatment`]: §8.4.1's fair affirmative action (eqs. 8.15–8.16);
//! * [`exponential_mapping`] (§8.5, with the TYPO-27 correction: scale 2);
//!   [`doubling_dimension`] (Def 8.5.3, a greedy upper estimate),
//!   [`is_well_separated`] (Def 8.5.4) and [`net_mapping`], the ε-net extension of
//!   Remark 8.5.6 for metrics that are not well separated.
//!
//! With `V` the subsets of a universe and `d(x, y) = ε|x Δ y|`, (D_∞, d)-Lipschitz
//! is ε-differential privacy (§8.2.3), and the Fairness LP finds the optimal
//! ε-DP mechanism for the loss. These are floating-point optimisations: the
//! mappings they produce are checked, not exactly sampled.
//!
//! ```
//! use privq_host::dx::FiniteMetric;
//! use privq_host::fairness::{Divergence, EmForm, FairnessLp, Group, Instance, bias, earthmover};
//! let d = FiniteMetric::euclidean(&[[0.0, 0.0], [0.3, 0.0], [0.0, 0.4]], 1.0)?;
//! let inst = Instance::new(d.clone(), vec![vec![0.0, 1.0], vec![1.0, 0.0], vec![0.5, 0.5]])?;
//! let sol = FairnessLp::new(Divergence::Inf).solve(&inst)?;
//! let (s, t) = (Group::uniform(3, &[0])?, Group::uniform(3, &[1, 2])?);
//! // Any Lipschitz mapping has parity at most bias_tv = d_EM (Thm 8.3.7, d ≤ 1).
//! let em = earthmover(&d, &s, &t, EmForm::Flow)?;
//! assert!(sol.mapping.parity(&s, &t)? <= bias(&d, &s, &t, Divergence::Tv)?.value + 1e-9);
//! assert!((bias(&d, &s, &t, Divergence::Tv)?.value - em).abs() < 1e-9);
//! # Ok::<(), privq_host::fairness::FairnessError>(())
//! ```

mod bias;
mod doubling;
mod earthmover;
mod error;
mod exponential;
mod instance;
mod mapping;
mod pairs;
mod preferential;
mod program;
pub mod release;

pub use crate::dx::FiniteMetric;
pub use bias::{Bias, bias};
pub use doubling::{
    Doubling, MAX_DOUBLING_POINTS, doubling_dimension, is_well_separated, net_mapping,
};
pub use earthmover::{EmForm, earthmover};
pub use error::FairnessError;
pub use exponential::{LIPSCHITZ_SCALE, THESIS_SCALE, expected_distance, exponential_mapping};
pub use instance::{Group, Instance};
pub use mapping::{Divergence, LIPSCHITZ_TOLERANCE, Mapping, Violation};
pub use preferential::{Preferential, preferential_treatment};
pub use program::{DEFAULT_MEMORY_CAP, FairSolution, FairnessLp, LpSize};

#[cfg(test)]
mod tests;

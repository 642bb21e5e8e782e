//! Central-model (curator) mechanisms: the data sit with a trusted curator, who
//! releases noisy statistics about them.
//!
//! - The basic mechanisms: the vector Laplace mechanism on the core's exact
//!   fixed-point grid ([`VectorLaplace`]), the geometric mechanism for counts
//!   ([`Geometric`]), the discrete Gaussian mechanism for counts under ρ-zCDP
//!   ([`DiscreteGaussian`]), the exponential mechanism with exact sampling
//!   ([`ExponentialMechanism`]) and the statistical-query oracle of Prop. 2.9.1
//!   ([`SqOracle`]), report noisy max ([`ReportNoisyMax`]), and one value per
//!   individual on the grid ([`values`]). Each
//!   implements [`Mechanism`](crate::contract::Mechanism).
//! - The multiplicative-weights engine ([`mw`]) and what is built on it: private
//!   multiplicative weights ([`pmw`], thesis Ch. 4) with its domain reduction
//!   ([`pmw_reduce`], §4.5), and MWEM ([`mwem`], thesis Ch. 5).
//!
//! Every noise draw goes through the core's exact integer samplers; floats only
//! carry query answers and scores, which are snapped to power-of-two grids before
//! any random decision depends on them.

mod counts;
mod error;
mod exponential;
mod gaussian;
mod laplace;
pub mod mw;
pub mod mwem;
mod noisy_max;
pub mod pmw;
pub mod pmw_reduce;
mod sq_oracle;
pub mod values;

pub use error::MechanismError;
pub use exponential::{ExponentialMechanism, Sampling};
pub use gaussian::DiscreteGaussian;
pub use laplace::{Geometric, VectorLaplace, epsilon_at_most, fixed_ceil};
pub use noisy_max::ReportNoisyMax;
pub use sq_oracle::{SqOracle, SqSession};

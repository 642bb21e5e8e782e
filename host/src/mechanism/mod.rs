//! Central (curator) mechanisms: the vector Laplace mechanism on the core's exact
//! fixed-point grid, the geometric mechanism and the discrete Gaussian mechanism
//! (ρ-zCDP) for counts, the exponential mechanism
//! with exact sampling, and the statistical-query oracle of Prop. 2.9.1.
//!
//! Every noise draw goes through the core's exact integer samplers; floats only
//! carry query answers and scores, which are snapped to power-of-two grids before
//! any random decision depends on them.

mod error;
mod exponential;
mod gaussian;
mod laplace;
mod sq_oracle;

pub use error::MechanismError;
pub use exponential::{ExponentialMechanism, Sampling};
pub use gaussian::DiscreteGaussian;
pub use laplace::{Geometric, VectorLaplace, epsilon_at_most, fixed_ceil};
pub use sq_oracle::{SqOracle, SqSession};

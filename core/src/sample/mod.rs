//! Exact samplers built from uniform random integers.
//!
//! Everything here uses integer arithmetic only, with checked operations:
//! an overflow is reported as [`Error::Overflow`](crate::Error::Overflow), never wrapped.
//!
//! * [`uniform_below`]: uniform integer in `[0, n)` without modulo bias (Lemire's method).
//! * [`bernoulli`]: Bernoulli(p/q) for integers `0 ≤ p ≤ q`.
//! * [`bernoulli_exp`]: Bernoulli(exp(−p/q)), Canonne–Kamath–Steinke 2020, Algorithm 1.
//! * [`DiscreteLaplace`]: the two-sided geometric distribution `P[k] ∝ exp(−|k|/t)`,
//!   Canonne–Kamath–Steinke 2020, Algorithm 2.
//! * [`DiscreteGaussian`]: `P[k] ∝ exp(−k²/(2σ²))` for an exact rational σ²
//!   ([`SigmaSquared`]), Canonne–Kamath–Steinke 2020, Algorithm 3.
//! * `lazy` (crate-internal): the Bernoulli(e^{−γ}) and randomized-response coins of
//!   unary encoding, the same probabilities from a few bits of a shared buffer each.
//! * [`BoundedDiscreteLaplace`]: the same distribution with a fixed amount of work per
//!   sample, exact except with probability δ ≤ 2⁻⁶⁴.

mod bernoulli;
mod bounded;
mod gaussian;
mod laplace;
pub(crate) mod lazy;
mod uniform;
pub(crate) mod wide;

pub use bernoulli::{bernoulli, bernoulli_exp};
pub use bounded::BoundedDiscreteLaplace;
pub use gaussian::{DiscreteGaussian, SigmaSquared};
pub use laplace::DiscreteLaplace;
pub use uniform::uniform_below;

use crate::error::Result;

/// A sampler of integer noise, as used by the grid Laplace mechanism.
pub trait IntegerNoise {
    /// Draws one noise value.
    fn sample<R: rand_core::Rng + ?Sized>(&self, rng: &mut R) -> Result<i64>;

    /// `log2` of an upper bound on the probability that a sample differs from an exact
    /// draw of the target distribution (`None` when the sampler is exact, δ = 0).
    fn delta_log2(&self) -> Option<i32>;
}

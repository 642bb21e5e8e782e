//! What the count mechanisms share: integer noise added to a vector of counts whose
//! length may be fixed at construction.

use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::sample::IntegerNoise;

use super::MechanismError;

/// Checks the length of `counts` against a dimension fixed at construction (`None`:
/// any length). Runs before the charge, so a malformed input costs nothing.
pub(crate) fn check_dim(dim: Option<usize>, counts: &[u64]) -> Result<(), MechanismError> {
    match dim {
        Some(k) if k != counts.len() => Err(MechanismError::DimensionMismatch {
            expected: k,
            got: counts.len(),
        }),
        _ => Ok(()),
    }
}

/// One count plus one independent draw of `noise`, exactly in `i64`.
pub(crate) fn noisy_count<N: IntegerNoise, R: Rng + CryptoRng + ?Sized>(
    noise: &N,
    count: u64,
    rng: &mut R,
) -> Result<i64, MechanismError> {
    let c = i64::try_from(count).map_err(|_| privq_core::Error::Overflow)?;
    c.checked_add(noise.sample(rng)?)
        .ok_or(MechanismError::Core(privq_core::Error::Overflow))
}

/// Every count plus its own independent draw of `noise`.
pub(crate) fn noisy_counts<N: IntegerNoise, R: Rng + CryptoRng + ?Sized>(
    noise: &N,
    counts: &[u64],
    rng: &mut R,
) -> Result<Vec<i64>, MechanismError> {
    counts.iter().map(|&c| noisy_count(noise, c, rng)).collect()
}

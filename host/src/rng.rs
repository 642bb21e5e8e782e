//! Random number generators for the host.

use rand_chacha::ChaCha12Rng;
use rand_core::SeedableRng;

/// The operating system could not provide entropy.
#[derive(Debug, thiserror::Error)]
#[error("could not read entropy from the operating system: {0}")]
pub struct SeedError(#[source] getrandom::Error);

/// A ChaCha12 generator seeded with 256 bits from the operating system: use this
/// for real releases.
pub fn secure_rng() -> Result<ChaCha12Rng, SeedError> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(SeedError)?;
    Ok(ChaCha12Rng::from_seed(seed))
}

/// A ChaCha12 generator from a fixed seed: reproducible runs, tests and
/// experiments. Anyone who knows the seed can remove the noise, so never use it
/// for a real release.
pub fn seeded_rng(seed: u64) -> ChaCha12Rng {
    ChaCha12Rng::seed_from_u64(seed)
}

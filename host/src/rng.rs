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

/// A ChaCha12 generator for one use of a fixed seed, separated from every other
/// use: its 256-bit seed is SHA-256 of a tag, `seed`, `purpose` and `index`. So
/// one user seed can drive several draws (a synthesizer's second fit, sampling a
/// fitted release) without two of them sharing a stream: two fits on
/// neighbouring tables under one stream would draw the same noise, and their
/// difference would be released without any. The same caveat as
/// [`seeded_rng`]: for tests and demos only.
pub fn derived_rng(seed: u64, purpose: &str, index: u64) -> ChaCha12Rng {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"privq derived seed v1\0");
    h.update(seed.to_le_bytes());
    h.update((purpose.len() as u64).to_le_bytes());
    h.update(purpose.as_bytes());
    h.update(index.to_le_bytes());
    ChaCha12Rng::from_seed(h.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::Rng;

    #[test]
    fn derived_streams_differ_from_the_seed_and_each_other() {
        let first = |mut r: ChaCha12Rng| r.next_u64();
        let plain = first(seeded_rng(7));
        let fit1 = first(derived_rng(7, "fit", 1));
        let fit2 = first(derived_rng(7, "fit", 2));
        let sample = first(derived_rng(7, "sample", 0));
        assert_eq!(fit1, first(derived_rng(7, "fit", 1)));
        let all = [plain, fit1, fit2, sample, first(derived_rng(8, "fit", 1))];
        for i in 0..all.len() {
            for j in i + 1..all.len() {
                assert_ne!(all[i], all[j]);
            }
        }
    }
}

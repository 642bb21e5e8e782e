//! Seeding the release RNG.
//!
//! privq's core never makes its own entropy: the application passes in a
//! cryptographically secure RNG. On a real device, seed [`ChaCha12Rng`] from the MCU's
//! hardware TRNG (e.g. the nRF RNG peripheral) at every boot.

use rand_chacha::ChaCha12Rng;
use rand_core::SeedableRng;

/// **QEMU / TEST ONLY — NEVER ON A REAL DEVICE.** A fixed, public seed makes every
/// "random" noise value predictable, which voids the privacy guarantee entirely.
/// It exists so QEMU runs and tests are reproducible.
pub const QEMU_TEST_ONLY_SEED: [u8; 32] = *b"privq: QEMU/test-only fixed seed";

/// The release RNG for QEMU runs and tests, seeded from [`QEMU_TEST_ONLY_SEED`].
/// **Not private**: see the constant's warning.
pub fn qemu_test_only_rng() -> ChaCha12Rng {
    ChaCha12Rng::from_seed(QEMU_TEST_ONLY_SEED)
}

/// The release RNG from 32 bytes of hardware entropy.
pub fn rng_from_entropy(entropy: [u8; 32]) -> ChaCha12Rng {
    ChaCha12Rng::from_seed(entropy)
}

//! Seeding the release RNG.
//!
//! privq's core never makes its own entropy: the application passes in a
//! cryptographically secure RNG. On a real device, seed [`ChaCha12`] from the MCU's
//! hardware TRNG (e.g. the nRF RNG peripheral) at every boot ([`rng_from_entropy`]).
//!
//! The fixed seeds here are **QEMU / TEST ONLY — NEVER ON A REAL DEVICE**: a known
//! seed makes every "random" noise value predictable, which voids the privacy
//! guarantee entirely. They exist so QEMU runs and tests are reproducible.

use crate::chacha::ChaCha12;
use rand_core::SeedableRng;

/// **QEMU / TEST ONLY.** The fixed seed of the original single-device demo.
pub const QEMU_TEST_ONLY_SEED: [u8; 32] = *b"privq: QEMU/test-only fixed seed";

/// The release RNG from [`QEMU_TEST_ONLY_SEED`]. **Not private.**
pub fn qemu_test_only_rng() -> ChaCha12 {
    ChaCha12::from_seed(QEMU_TEST_ONLY_SEED)
}

/// **QEMU / TEST ONLY.** The RNG of simulated device `device` in the fleet with seed
/// `fleet_seed`: ChaCha12 keyed with `fleet_seed` (8 bytes LE) ‖ `device` (8 bytes LE)
/// ‖ 16 zero bytes — exactly `privq_host::ldp::fleet::device_rng`, so a QEMU run and
/// the host simulation of the same device produce the same report bytes (checked by
/// `tests/tests/e2e.rs`). **Not private.**
pub fn fleet_device_rng(fleet_seed: u64, device: u64) -> ChaCha12 {
    let mut seed = [0u8; 32];
    let (fleet, rest) = seed.split_at_mut(8);
    fleet.copy_from_slice(&fleet_seed.to_le_bytes());
    if let Some(dev) = rest.get_mut(..8) {
        dev.copy_from_slice(&device.to_le_bytes());
    }
    ChaCha12::from_seed(seed)
}

/// The release RNG from 32 bytes of hardware entropy.
pub fn rng_from_entropy(entropy: [u8; 32]) -> ChaCha12 {
    ChaCha12::from_seed(entropy)
}

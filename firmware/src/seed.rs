//! Seeding the release RNG.
//!
//! privq's core never makes its own entropy: the application passes in a
//! cryptographically secure RNG. On a real device, seed [`ChaCha12`] from the MCU's
//! hardware TRNG (e.g. the nRF RNG peripheral) at every boot ([`rng_from_entropy`]).
//!
//! The fixed seeds here are **QEMU / TEST ONLY — NEVER ON A REAL DEVICE**: a known
//! seed makes every "random" noise value predictable, which voids the privacy
//! guarantee entirely. They exist so QEMU runs and tests are reproducible.

use privq_core::rng::ChaCha12;
use privq_core::upload::DeviceKey;
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

/// **QEMU / TEST ONLY — NOT A SECRET.** The last 16 bytes of every test-only frame key.
pub const QEMU_TEST_ONLY_KEY_LABEL: [u8; 16] = *b"NOT-A-REAL-KEY!!";

/// **QEMU / TEST ONLY — NOT A SECRET.** The upload-frame key of simulated device
/// `device` in fleet `fleet_seed`: `fleet_seed` (8 bytes LE) ‖ `device` (8 bytes LE) ‖
/// [`QEMU_TEST_ONLY_KEY_LABEL`], derived like [`fleet_device_rng`]'s seed (but never
/// equal to it), so the host can verify a QEMU device's frames. Anyone can compute
/// it: frames tagged with it prove nothing. A real device gets a random per-device
/// key provisioned into protected storage.
pub fn qemu_test_only_device_key(fleet_seed: u64, device: u64) -> DeviceKey {
    let mut key = [0u8; 32];
    let (fleet, rest) = key.split_at_mut(8);
    fleet.copy_from_slice(&fleet_seed.to_le_bytes());
    let (dev, label) = rest.split_at_mut(8);
    dev.copy_from_slice(&device.to_le_bytes());
    label.copy_from_slice(&QEMU_TEST_ONLY_KEY_LABEL);
    DeviceKey::new(key)
}

/// The release RNG from 32 bytes of hardware entropy.
pub fn rng_from_entropy(entropy: [u8; 32]) -> ChaCha12 {
    ChaCha12::from_seed(entropy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_key_layout() {
        let k = qemu_test_only_device_key(0x0102_0304_0506_0708, 3);
        let b = k.as_bytes();
        assert_eq!(b[..8], [8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(b[8..16], [3, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&b[16..], b"NOT-A-REAL-KEY!!");
    }
}

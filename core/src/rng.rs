//! Randomness on a device: the compact [`ChaCha12`] generator, where its seed comes from, and
//! HAL random-number generators.
//!
//! The crate never makes its own entropy: every sampler takes `&mut R` with
//! `R: rand_core::Rng` (rand_core 0.10). The calls that write or release a report also require
//! `R: CryptoRng`: [`Ledger::release`](crate::ledger::Ledger::release), the
//! [`LocalRandomizer`](crate::local::LocalRandomizer) methods `privatize_into` and
//! `write_payload`, and the grid mechanisms' `release`. The randomizers' own `randomize`
//! methods (e.g. [`Grr::randomize`](crate::local::Grr::randomize),
//! [`UnaryEncoding::randomize_into`](crate::local::UnaryEncoding::randomize_into)) and the
//! samplers accept any `Rng`, for simulations and tests; their output is only as private as
//! the generator is unpredictable, so a device passes them a `CryptoRng` as well. On a device the usual choice is a ChaCha generator **seeded once per boot
//! with 32 bytes from the MCU's hardware random-number generator (TRNG)** via
//! `SeedableRng::from_seed` (or `try_from_rng`):
//!
//! * the seed is the whole secret: an attacker who knows or guesses it can subtract the
//!   noise from every report. Never derive it from a device id, a counter, a clock or a
//!   constant, and never reuse one across boots (a reboot that repeats a seed repeats the
//!   noise of the reports that follow);
//! * `SeedableRng::seed_from_u64` spreads a 64-bit number into a seed; it is for tests,
//!   benchmarks and simulations that must be reproducible, never for a device in the field
//!   (64 bits are guessable, and the examples' fixed seeds are public);
//! * reading the TRNG once for a seed and then drawing from ChaCha is faster than drawing every
//!   sample from the TRNG (which may stall for each word), and a TRNG failure is met once, at
//!   boot, where it can be handled, instead of inside a release.
//!
//! # Which ChaCha: [`ChaCha12`] on flash-bound parts
//!
//! [`ChaCha12`] (always available: no feature, no allocation, no extra dependency) computes one
//! 64-byte block at a time with its rounds in a loop. Its output is **identical to
//! `rand_chacha::ChaCha12Rng`** (rand_chacha 0.10) seeded with the same bytes, call by call
//! (`next_u32`, `next_u64`, `fill_bytes` in any mix; checked against rand_chacha by this
//! crate's tests), so the host can reproduce a device's stream with `rand_chacha`, and a device
//! can switch between the two without changing a single report. On thumbv6m (Cortex-M0) it
//! costs about 630 B of flash of its own, 1 708 B with the compiler-builtins `memcpy`/`memset`
//! it is the first to link (which later code uses too); with `rand_chacha::ChaCha12Rng`
//! instead, the quick start's images are 2.2–2.7 KB larger (figures by
//! `tools/device-sizes.sh`, in the book's devices chapter): use it on parts with 16–64 KiB of
//! flash. `rand_chacha` (with
//! `default-features = false`; it pulls in `std` otherwise) computes four blocks at a time
//! with unrolled rounds and is faster per word where flash is plentiful.
//!
//! ```
//! use privq_core::rng::ChaCha12;
//! use rand_core::SeedableRng;
//!
//! # fn read_trng(seed: &mut [u8; 32]) -> Result<(), ()> { seed.fill(0x5a); Ok(()) }
//! // On a board: fill the seed from the HAL's TRNG, e.g. `rng.try_fill_bytes(&mut seed)`
//! // (rand_core 0.6 HALs) or the HAL's own read method, and refuse to run if it fails.
//! let mut seed = [0u8; 32];
//! read_trng(&mut seed).expect("hardware RNG failed");
//! let mut rng = ChaCha12::from_seed(seed); // or rand_chacha::ChaCha12Rng: the same stream
//! # let _ = &mut rng;
//! ```
//!
//! # HAL RNGs on rand_core 0.6
//!
//! Most HAL crates implement rand_core **0.6**'s `RngCore` (and `CryptoRng`) for their TRNG
//! peripheral; this crate uses rand_core 0.10, whose traits are different. With the feature
//! `rand-core-06` (one extra crate, rand_core 0.6 without default features, which has no
//! dependencies), two adapters bridge them:
//!
//! * `TryCompat06`: a fallible [`TryRng`](rand_core::TryRng) (its error is `Rng06Error`),
//!   for seeding:
//!   `ChaCha12::try_from_rng(&mut TryCompat06(&mut hal_rng))?` — a hardware failure is an
//!   error you handle, not a panic;
//! * `Compat06`: an infallible [`Rng`](rand_core::Rng) (and `CryptoRng` when the HAL's
//!   generator is a rand_core 0.6 `CryptoRng`), for passing the TRNG to the samplers
//!   directly. It forwards to the HAL's `next_u32`/`next_u64`/`fill_bytes`, which in most
//!   HALs block until the peripheral has data and panic (or return a fixed word) if it
//!   fails: prefer seeding ChaCha unless the TRNG is fast and its failure modes known.
//!
//! Without the feature, the same bridge is three lines in your crate: read 32 bytes with the
//! HAL's `try_fill_bytes` and call `from_seed`, as above.
#![cfg_attr(
    feature = "rand-core-06",
    doc = r#"
The adapters: [`Compat06`], [`TryCompat06`] and [`Rng06Error`].

```
use privq_core::rng::{ChaCha12, Compat06, TryCompat06, rand_core_06};
use privq_core::{Epsilon, local::{Grr, LocalRandomizer}};
use rand_core::SeedableRng;

// A stand-in for a HAL's TRNG, which implements rand_core 0.6's traits.
struct Trng(u32);
impl rand_core_06::RngCore for Trng {
    fn next_u32(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        self.0
    }
    fn next_u64(&mut self) -> u64 {
        rand_core_06::impls::next_u64_via_u32(self)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        rand_core_06::impls::fill_bytes_via_next(self, dest)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core_06::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}
impl rand_core_06::CryptoRng for Trng {}

let mut trng = Trng(1);
// Seeding (the usual path): a TRNG failure is an error, not a panic.
let mut rng = ChaCha12::try_from_rng(&mut TryCompat06(&mut trng))?;
// Or the TRNG itself as the randomizers' `Rng + CryptoRng`.
let grr = Grr::new(Epsilon::new(1, 1)?, 8)?;
let mut report = [0u8; 13];
grr.privatize_into(&3, privq_core::local::QueryId(1), &mut Compat06(&mut trng), &mut report)?;
grr.privatize_into(&3, privq_core::local::QueryId(2), &mut rng, &mut report)?;
# Ok::<(), Box<dyn std::error::Error>>(())
```
"#
)]
mod chacha;
pub use chacha::ChaCha12;

#[cfg(feature = "rand-core-06")]
#[cfg_attr(docsrs, doc(cfg(feature = "rand-core-06")))]
pub use adapters::{Compat06, Rng06Error, TryCompat06};
/// rand_core 0.6, as this crate's adapters see it (feature `rand-core-06`).
#[cfg(feature = "rand-core-06")]
#[cfg_attr(docsrs, doc(cfg(feature = "rand-core-06")))]
pub use rand_core_06;

#[cfg(feature = "rand-core-06")]
mod adapters {
    use core::convert::Infallible;
    use core::fmt;
    use core::num::NonZeroU32;

    use rand_core::{TryCryptoRng, TryRng};
    use rand_core_06::{CryptoRng as CryptoRng06, RngCore as RngCore06};

    /// A rand_core 0.6 `RngCore` as this crate's infallible [`Rng`](rand_core::Rng)
    /// (rand_core 0.10), and as a `CryptoRng` when the wrapped generator is a rand_core 0.6
    /// `CryptoRng`. Each call forwards to the same method of the wrapped generator.
    ///
    /// Wrap a reference to keep the HAL's generator: `Compat06(&mut hal_rng)`. See the
    /// [module docs](crate::rng) for when to use this and when to seed ChaCha instead.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct Compat06<R>(pub R);

    impl<R: RngCore06> TryRng for Compat06<R> {
        type Error = Infallible;

        #[inline]
        fn try_next_u32(&mut self) -> Result<u32, Infallible> {
            Ok(self.0.next_u32())
        }

        #[inline]
        fn try_next_u64(&mut self) -> Result<u64, Infallible> {
            Ok(self.0.next_u64())
        }

        #[inline]
        fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
            self.0.fill_bytes(dst);
            Ok(())
        }
    }

    impl<R: RngCore06 + CryptoRng06> TryCryptoRng for Compat06<R> {}

    /// A rand_core 0.6 `RngCore` as a fallible [`TryRng`] (rand_core 0.10): every call
    /// goes through the wrapped generator's `try_fill_bytes`, and its failure is returned as
    /// an [`Rng06Error`]. For seeding: `ChaCha12::try_from_rng(&mut TryCompat06(&mut hal_rng))`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct TryCompat06<R>(pub R);

    impl<R: RngCore06> TryRng for TryCompat06<R> {
        type Error = Rng06Error;

        fn try_next_u32(&mut self) -> Result<u32, Rng06Error> {
            let mut word = [0u8; 4];
            self.try_fill_bytes(&mut word)?;
            Ok(u32::from_le_bytes(word))
        }

        fn try_next_u64(&mut self) -> Result<u64, Rng06Error> {
            let mut word = [0u8; 8];
            self.try_fill_bytes(&mut word)?;
            Ok(u64::from_le_bytes(word))
        }

        fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Rng06Error> {
            self.0
                .try_fill_bytes(dst)
                .map_err(|e| Rng06Error { code: e.code() })
        }
    }

    impl<R: RngCore06 + CryptoRng06> TryCryptoRng for TryCompat06<R> {}

    /// A rand_core 0.6 generator's failure, seen through [`TryCompat06`]: the error's code
    /// (rand_core 0.6's `Error::code`, the HAL's or OS's number), when it has one.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Rng06Error {
        code: Option<NonZeroU32>,
    }

    impl Rng06Error {
        /// The wrapped generator's error code, if it gave one.
        pub const fn code(&self) -> Option<NonZeroU32> {
            self.code
        }
    }

    impl fmt::Display for Rng06Error {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self.code {
                Some(code) => write!(f, "hardware random-number generator failed (code {code})"),
                None => f.write_str("hardware random-number generator failed"),
            }
        }
    }

    impl core::error::Error for Rng06Error {}

    #[cfg(test)]
    mod tests {
        use super::*;
        use rand_core::Rng;

        /// Counts up; fails when told to (code 7).
        struct Counter {
            next: u8,
            fail: bool,
        }

        impl RngCore06 for Counter {
            fn next_u32(&mut self) -> u32 {
                rand_core_06::impls::next_u32_via_fill(self)
            }
            fn next_u64(&mut self) -> u64 {
                rand_core_06::impls::next_u64_via_fill(self)
            }
            fn fill_bytes(&mut self, dest: &mut [u8]) {
                for b in dest {
                    *b = self.next;
                    self.next = self.next.wrapping_add(1);
                }
            }
            fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core_06::Error> {
                if self.fail {
                    let code = NonZeroU32::new(rand_core_06::Error::CUSTOM_START + 7).unwrap();
                    return Err(rand_core_06::Error::from(code));
                }
                self.fill_bytes(dest);
                Ok(())
            }
        }
        impl CryptoRng06 for Counter {}

        fn is_crypto<R: rand_core::CryptoRng>(_: &R) {}

        #[test]
        fn compat_forwards_each_call() {
            let mut c = Counter {
                next: 1,
                fail: false,
            };
            let mut rng = Compat06(&mut c);
            is_crypto(&rng);
            assert_eq!(rng.next_u32(), u32::from_le_bytes([1, 2, 3, 4]));
            assert_eq!(
                rng.next_u64(),
                u64::from_le_bytes([5, 6, 7, 8, 9, 10, 11, 12])
            );
            let mut buf = [0u8; 3];
            rng.fill_bytes(&mut buf);
            assert_eq!(buf, [13, 14, 15]);
        }

        #[test]
        fn try_compat_returns_the_failure() {
            let mut c = Counter {
                next: 1,
                fail: false,
            };
            let mut rng = TryCompat06(&mut c);
            assert_eq!(rng.try_next_u32(), Ok(u32::from_le_bytes([1, 2, 3, 4])));
            rng.0.fail = true;
            let err = rng.try_next_u64().unwrap_err();
            assert_eq!(
                err.code().map(NonZeroU32::get),
                Some(rand_core_06::Error::CUSTOM_START + 7)
            );
            let mut buf = [0u8; 32];
            assert!(rng.try_fill_bytes(&mut buf).is_err());
            assert_eq!(buf, [0; 32], "nothing was written");
        }
    }
}

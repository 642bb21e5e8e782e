//! # privq-core
//!
//! Exact, integer-only differential-privacy primitives for devices: `#![no_std]`,
//! no allocation, no floating point in any decision about released noise.
//!
//! * [`Epsilon`] and [`Rho`]: privacy parameters (ε-DP, ρ-zCDP) as exact rationals.
//! * [`sample`]: exact samplers — uniform integers, Bernoulli(p/q), Bernoulli(e^{−p/q}),
//!   discrete Laplace and discrete Gaussian (Canonne–Kamath–Steinke 2020) and a
//!   bounded-work, timing-independent discrete Laplace.
//! * [`Fixed`], [`GridLaplace`] and [`GridGaussian`]: the Laplace and Gaussian
//!   mechanisms on a power-of-two grid.
//! * [`histogram::Histogram`]: fixed-size histograms of readings, binned exactly from
//!   [`Fixed`] values or, in 32-bit arithmetic, from raw integer readings
//!   ([`histogram::IntegerBins`]).
//! * [`report`]: the device-report wire format; `upload` (feature `upload`, on by default):
//!   HMAC-SHA-256-authenticated upload frames of reports and the device's outbox that keeps
//!   them until acknowledged.
//!
//! * [`rng`]: [`rng::ChaCha12`], a small-flash ChaCha12 with exactly `rand_chacha::ChaCha12Rng`'s
//!   output; where a device's randomness comes from (seed it from the hardware RNG) and, with
//!   feature `rand-core-06`, adapters for HAL RNGs that implement rand_core 0.6.
//!
//! Randomness is always passed in (`R: rand_core::Rng`; releases need `CryptoRng`),
//! and every fallible operation returns [`Result`] with a typed [`Error`], whose variants have
//! stable numeric codes for C callers ([`Error::code`]). Constructors whose arithmetic allows it
//! are `const fn` ([`Epsilon::new`], [`Rho::new`], [`Histogram::equal_width`],
//! [`histogram::IntegerBins::new`], [`local::Grr::new`], ...), so a device's configuration can
//! be checked at compile time.
//!
//! Minimum Rust: **1.87** (`rust-version`; heapless 0.9.3 needs it, 0.9.4 needs 1.88). The
//! test command builds this crate (host and `thumbv6m-none-eabi`) and the example firmware
//! with exactly Rust 1.87 and the workspace's lock file.
//!
//! # Quick start: a device
//!
//! ```toml
//! [dependencies]
//! # The configuration the flash figures below are measured with: the flash ledger, and the
//! # upload frames with the compact SHA-256 (`compact-sha`, which turns on `upload`).
//! privq-core = { version = "0.1", features = ["flash-ledger", "compact-sha"] }
//! rand_core = "0.10"
//! # The randomizers' CryptoRng is built in: privq_core::rng::ChaCha12 (the same stream as
//! # rand_chacha::ChaCha12Rng, 2.2-2.7 KB less flash on thumbv6m). rand_chacha works too, with
//! # `default-features = false` (it pulls in `std` otherwise).
//! # Code generic over the board's flash needs no `embedded-storage` line: with
//! # `flash-ledger`, privq_core::embedded_storage is the crate the store is written against.
//! ```
//!
//! One reading period of a device: readings into histogram bins, the modal bin privatized with
//! OUE (and GRR) at ε = 1 after the lifetime ledger in flash is debited, the reports in the
//! [`report`] wire format, sealed into an HMAC-SHA-256 upload frame numbered by counters that
//! survive reboots. The ledger and the counters share one flash driver, in two regions.
//!
//! ```
//! # #[cfg(all(feature = "flash-ledger", feature = "upload"))]
//! # fn main() -> Result<(), privq_core::Error> {
//! use privq_core::flash_store::{FlashStore, RamFlash, SharedFlash};
//! use privq_core::histogram::{Histogram, IntegerBins};
//! use privq_core::ledger::Ledger;
//! use privq_core::local::{Grr, LocalRandomizer, QueryId, UeVariant, UnaryEncoding};
//! use privq_core::report::{self, MechanismId};
//! use privq_core::upload::{DeviceKey, Outbox};
//! use privq_core::upload_counters::UploadCounters;
//! use privq_core::rng::ChaCha12;
//! use privq_core::{Epsilon, Error};
//! use rand_core::SeedableRng;
//!
//! // Randomness: the crate's compact ChaCha12 (output identical to rand_chacha's
//! // ChaCha12Rng). On a device, seed it from the hardware RNG (32 bytes of the MCU's TRNG,
//! // read once per boot; see `privq_core::rng`). A fixed seed, as here, or `seed_from_u64`
//! // is for tests only: it makes the noise predictable.
//! let mut rng = ChaCha12::from_seed([7; 32]);
//!
//! // 1-2. Raw readings (the sensor's 1/16 °C units) into 64 bins of 0.5 °C over [5, 37) °C,
//! //      in 32-bit integers; outliers clamp into the edge bins. A `const`: checked when the
//! //      firmware compiles.
//! const BINS: IntegerBins<64> = match IntegerBins::new(5 * 16, 37 * 16) {
//!     Ok(bins) => bins,
//!     Err(_) => panic!("not a whole number of raw units per bin"), // a compile error
//! };
//! let mut histogram = Histogram::<64>::categorical()?;
//! for raw in [344, 348, 352, 346, 643] { // 21.5, 21.75, 22.0, 21.625, 40.1875 °C
//!     histogram.record_raw_clamped(&BINS, raw); // returns the bin; cannot fail
//! }
//! // The item to report: the modal bin (the lowest of the most frequent), as the `u32` the
//! // randomizers take.
//! let modal = histogram.modal_bin();
//! assert_eq!(modal, 33); // [21.5, 22.0)
//!
//! // 3. One flash driver, two regions: the lifetime budget (ε = 4) and the upload counters,
//! //    both open at once. On a board: `SharedFlash::new(flash, regions)` on the HAL's
//! //    `embedded_storage::nor_flash::NorFlash` and disjoint regions of whole pages (checked),
//! //    e.g. the last 6 KiB of a 256 KiB nRF51 (1 KiB pages): `0x3_E800..0x3_F400` and
//! //    `0x3_F400..0x4_0000`. Here a simulated flash of six 256-byte pages.
//! let flash = SharedFlash::new(RamFlash::<1536>::new(), [0..768, 768..1536])?;
//! let mut ledger = Ledger::open(FlashStore::new(flash.region(0)?), Epsilon::new(4, 1)?)?;
//! let mut counters = UploadCounters::open(FlashStore::new(flash.region(1)?))?;
//!
//! // 4. The outbox, and the epoch its frames carry: the epoch comes from counters persisted
//! //    before use, so (device, epoch, sequence) never repeats across reboots.
//! let key = DeviceKey::new([0x42; 32]); // provisioned per device; never a constant
//! let mut outbox: Outbox<2, 64> = Outbox::new(1234, counters.next_sequence());
//! let epoch = counters.begin_epoch(outbox.next_sequence().ok_or(Error::SequenceExhausted)?)?;
//!
//! // 5. OUE at ε = 1, only once the outbox has room for the report: `release` debits the
//! //    ledger (and persists it) before it randomizes, and spent ε does not come back if the
//! //    report is then dropped.
//! let oue = UnaryEncoding::new(UeVariant::Optimized, Epsilon::new(1, 1)?, 64)?;
//! if !outbox.has_room(epoch, oue.report_len()) {
//!     return Err(Error::OutboxFull); // send and acknowledge pending frames first
//! }
//! let mut report = [0u8; 20];
//! let len = ledger.release(&oue, &modal, QueryId(1), &mut rng, &mut report)?;
//! // The wire-format report (12-byte header + 64 bits), as the host decodes it.
//! assert_eq!(report::decode(&report[..len])?.header.mechanism, MechanismId::Oue);
//! outbox.push(epoch, &report[..len])?;
//! // GRR as well (or instead): a 13-byte report, checked the same way.
//! let grr = Grr::new(Epsilon::new(1, 1)?, 64)?;
//! if outbox.has_room(epoch, grr.report_len()) {
//!     let mut short = [0u8; 13];
//!     let len = ledger.release(&grr, &modal, QueryId(2), &mut rng, &mut short)?;
//!     outbox.push(epoch, &short[..len])?;
//! }
//! assert_eq!(ledger.spent().num(), 2); // ε = 2 of 4 spent, and on flash
//!
//! // 6. An authenticated upload frame of both reports.
//! outbox.seal()?;
//! let mut frame = [0u8; Outbox::<2, 64>::MAX_FRAME_LEN];
//! let frame_len = outbox.write_front(&key, &mut frame)?.ok_or(Error::NotPending)?;
//! assert_eq!(frame_len, 25 + (2 + 20) + (2 + 13) + 32); // header, reports, tag
//! // ... send `frame[..frame_len]`; resend the same bytes until the collector acknowledges
//! // the front frame's sequence number, then:
//! let sent = outbox.front().ok_or(Error::NotPending)?.header.sequence;
//! outbox.acknowledge(sent)?;
//! assert_eq!(outbox.pending(), 0);
//! # Ok(())
//! # }
//! # #[cfg(not(all(feature = "flash-ledger", feature = "upload")))]
//! # fn main() {} // the example needs the `flash-ledger` and `upload` features
//! ```
//!
//! The host side (`privq-host`, or the `privq serve` collector) verifies the frame, decodes
//! the report and aggregates the fleet's reports into unbiased estimates.
//!
//! **Flash cost** of this path with [`rng::ChaCha12`], each variant linked alone (opt-level
//! `"z"`, LTO; features `flash-ledger` and `compact-sha`, as in the `Cargo.toml` above; rustc
//! 1.95.0; measured by `tools/device-sizes.sh` from `examples/device-flow`, the table is in the
//! book's devices chapter): on thumbv6m an OUE report 10 448 B and a GRR report 9 928 B, with
//! the upload frame 13 024 B and 12 424 B; on thumbv7em 9 860 B, 9 352 B, 12 320 B and
//! 11 708 B. `rand_chacha::ChaCha12Rng` instead adds 2.2–2.7 KB. Each component's share (the
//! same script, a second table in the book) is stated in its type's docs.
//!
//! A failed flash write or read is [`Error::Storage`] with a [`StorageKind`] (the flash
//! store's own layout, tamper and counter errors, or the driver's `NorFlashErrorKind`), and
//! every error has a stable code for a C caller or a log line:
//!
//! ```
//! use privq_core::{Error, StorageKind};
//! let e = Error::Storage(StorageKind::FlashOutOfBounds);
//! assert_eq!(e.code(), 85); // never renumbered; the table is in `Error::code`'s docs
//! assert_eq!(Error::from_code(85), Some(e));
//! ```
//!
//! # Cargo features
//!
//! | feature | default | what it adds | dependencies |
//! |---|---|---|---|
//! | `upload` | yes | `upload`: HMAC-SHA-256 (RFC 2104) upload frames and the device's outbox | `hmac` 0.12, `sha2` 0.10 |
//! | `compact-sha` | no | `upload` with SHA-256's rounds in a loop (`sha2`'s `force-soft-compact`): about 1.8 KB less flash on thumbv6m, slower | |
//! | `flash-ledger` | no | `flash_store`: the fail-closed, wear-levelled ledger store on any `embedded_storage::nor_flash::NorFlash`, `SharedFlash` (one driver under several stores, in checked disjoint regions) and `RamFlash` (a simulated flash); re-exports `embedded_storage` | `embedded-storage` 0.3 |
//! | `rand-core-06` | no | `rng::Compat06` and `rng::TryCompat06`: HAL RNGs implementing rand_core 0.6's `RngCore` as this crate's rand_core 0.10 `Rng` / `CryptoRng` | `rand_core` 0.6 (no default features, no dependencies) |
//! | `defmt` | no | `defmt::Format` for the crate's types | `defmt` 1 |
//!
//! Without a feature, nothing of it is compiled (`default-features = false` drops `upload` and
//! its two crates); what a firmware does not call is removed by the linker either way. The
//! `Error` variants of every feature are always present, so matches compile under any set.
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::unreachable,
        clippy::todo
    )
)]

mod epsilon;
mod error;
mod fixed;
mod grid;
pub mod histogram;
mod rho;
pub mod sample;

/// `embedded-storage` 0.3, the flash traits [`flash_store`] is written against (feature
/// `flash-ledger`): code generic over the board's flash can name
/// `privq_core::embedded_storage::nor_flash::NorFlash` without a dependency of its own.
#[cfg(feature = "flash-ledger")]
#[cfg_attr(docsrs, doc(cfg(feature = "flash-ledger")))]
pub use embedded_storage;
pub use epsilon::Epsilon;
pub use error::{Error, Result, StorageKind};
pub use fixed::Fixed;
pub use grid::{GridGaussian, GridLaplace, laplace_on_grid};
pub use histogram::Histogram;
pub use rand_core;
pub use rho::Rho;
#[cfg(feature = "flash-ledger")]
#[cfg_attr(docsrs, doc(cfg(feature = "flash-ledger")))]
pub mod flash_store;
pub mod ledger;
pub mod local;
pub mod report;
pub mod rng;
#[cfg(feature = "upload")]
#[cfg_attr(docsrs, doc(cfg(feature = "upload")))]
pub mod upload;
pub mod upload_counters;

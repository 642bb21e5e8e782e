//! # privq-firmware
//!
//! The privq device application, written against embedded-hal 1.0 traits so the
//! same code runs on a board, in QEMU and in host simulations of whole fleets:
//!
//! 1. [`sensor::TempSensor`] reads temperatures from an I²C sensor (any
//!    [`embedded_hal::i2c::I2c`]); [`synthetic::SyntheticSensorBus`] is a fake bus that
//!    serves a per-device synthetic waveform, standing in for hardware in QEMU and tests;
//! 2. every epoch, [`app::Device::run_epoch`] records [`app::READINGS_PER_EPOCH`]
//!    readings into a fixed-size [`privq_core::Histogram`] of [`app::BINS`] bins, pacing
//!    reads with an [`embedded_hal::delay::DelayNs`];
//! 3. [`release`] privatizes the epoch with the **one** local randomizer chosen by cargo
//!    feature (`oue` by default; `grr`, `olh`, `hadamard`, or per-bin grid Laplace with
//!    `laplace`), debiting the lifetime budget [`privq_core::ledger::Ledger`] first; the
//!    ledger lives in NOR flash through privq-core's `FlashStore` ([`store`]), where
//!    erased flash after the first boot fails closed;
//! 4. each report is encoded in the wire format of [`privq_core::report`] and emitted:
//!    a defmt log line, plus in QEMU the raw bytes as a text line on semihosting stderr
//!    ([`wire`]) for the host to decode and aggregate;
//! 5. with feature `frames`, the reports also go into an outbox ([`uplink`]) and leave
//!    as HMAC-SHA-256-authenticated upload frames (`docs/src/upload-frame.md`), each kept
//!    until acknowledged or permanently rejected (then dropped and counted); in QEMU one
//!    `privq-frame` line per frame.
//!
//! Randomness is passed in: [`seed`] holds the **QEMU/test-only** fixed seeds (device
//! `i` of fleet `s` uses exactly the host simulator's seed, so QEMU and host reports can
//! be compared byte for byte); a real device must seed from its hardware entropy source.
//!
//! The binary (`src/main.rs`, feature `rt`) logs with defmt: over semihosting in QEMU
//! (feature `qemu`), over RTT on hardware.
#![no_std]

pub mod app;
pub mod divide;
pub mod release;
pub mod seed;
pub mod sensor;
pub mod store;
pub mod synthetic;
pub mod uplink;
pub mod wire;

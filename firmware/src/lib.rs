//! # privq-firmware
//!
//! An example privq device application, written against embedded-hal 1.0 traits so the
//! same code runs on a board, in QEMU and in host unit tests:
//!
//! 1. [`sensor::TempSensor`] reads temperatures from an I²C sensor (any [`embedded_hal::i2c::I2c`]);
//!    [`synthetic::SyntheticSensorBus`] is a fake bus that serves a synthetic waveform
//!    (micromath `sin`), standing in for real hardware in QEMU;
//! 2. [`app::collect`] records the readings into a fixed-size [`privq_core::Histogram`],
//!    pacing reads with an [`embedded_hal::delay::DelayNs`];
//! 3. [`app::privatize`] releases every bin with the core's Laplace mechanism on a grid
//!    ([`privq_core::GridLaplace`]), so only ε-differentially-private counts leave the device.
//!
//! Randomness is passed in: [`seed`] holds the **QEMU/test-only** fixed seed; a real
//! device must seed from its hardware entropy source.
//!
//! The binary (`src/main.rs`, feature `rt`) logs with defmt: over semihosting in QEMU
//! (feature `qemu`), over RTT on hardware.
#![no_std]

pub mod app;
pub mod seed;
pub mod sensor;
pub mod synthetic;

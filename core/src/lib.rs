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
//! * [`histogram::Histogram`]: fixed-size histograms of readings.
//! * [`report`]: the device-report wire format; [`upload`]: HMAC-SHA-256-authenticated
//!   upload frames of reports and the device's outbox that keeps them until acknowledged.
//!
//! Randomness is always passed in (`R: rand_core::Rng`; releases need `CryptoRng`),
//! and every fallible operation returns [`Result`] with a typed [`Error`].
//!
//! Minimum Rust: **1.87** (`rust-version`; heapless 0.9.3 needs it, 0.9.4 needs 1.88). The
//! test command builds this crate (host and `thumbv6m-none-eabi`) and the example firmware
//! with exactly Rust 1.87 and the workspace's lock file.
//!
//! ```
//! use privq_core::{laplace_on_grid, Epsilon, Fixed};
//! use rand_chacha::ChaCha12Rng;
//! use rand_core::SeedableRng;
//!
//! let mut rng = ChaCha12Rng::seed_from_u64(2024); // fixed seed: tests only
//! let reading: Fixed = "23.75".parse()?;
//! let released = laplace_on_grid(reading, Fixed::ONE, Epsilon::new(1, 1)?, &mut rng)?;
//! println!("{released}");
//! # Ok::<(), privq_core::Error>(())
//! ```
#![no_std]
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

pub use epsilon::Epsilon;
pub use error::{Error, Result};
pub use fixed::Fixed;
pub use grid::{GridGaussian, GridLaplace, laplace_on_grid};
pub use histogram::Histogram;
pub use rand_core;
pub use rho::Rho;
pub mod ledger;
pub mod local;
pub mod report;
pub mod upload;
pub mod upload_counters;

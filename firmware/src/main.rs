//! The privq example firmware: read a (synthetic) temperature sensor, histogram the
//! readings, release the histogram with ε-differential privacy, log with defmt.
//!
//! * feature `qemu`: defmt over semihosting (decoded by `defmt-print` in
//!   tools/qemu-run.sh), the **QEMU/test-only fixed seed**, exit status via semihosting;
//! * otherwise (hardware): defmt over RTT, panic-probe. A board must provide hardware
//!   entropy in [`hardware_entropy`]; without it the firmware refuses to release.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use privq_core::Epsilon;
use privq_firmware::app::{self, AppError, CountingDelay};
use privq_firmware::sensor::{DEFAULT_ADDRESS, TempSensor};
use privq_firmware::synthetic::SyntheticSensorBus;

#[cfg(not(feature = "qemu"))]
use {defmt_rtt as _, panic_probe as _};
// critical-section implementation for defmt-semihosting's logger.
#[cfg(feature = "qemu")]
use {cortex_m as _, defmt_semihosting as _};

/// Readings per report.
const READINGS: u32 = 96;

#[entry]
fn main() -> ! {
    defmt::info!(
        "privq-firmware: {=u32} readings, {=usize} bins",
        READINGS,
        app::BINS
    );
    match run() {
        Ok(()) => finish(true),
        Err(e) => {
            defmt::error!("privq-firmware failed: {}", e);
            finish(false)
        }
    }
}

fn run() -> Result<(), AppError> {
    let mut sensor = TempSensor::new(SyntheticSensorBus::new(), DEFAULT_ADDRESS);
    let mut delay = CountingDelay::default();
    let mut histogram = app::new_histogram()?;
    app::collect(
        &mut sensor,
        &mut delay,
        &mut histogram,
        READINGS,
        |n, celsius| {
            if n % 16 == 0 {
                // Floats only for display; nothing private is decided with them.
                defmt::info!("reading {=u32}: {=f32} °C", n, celsius.to_f64() as f32);
            }
        },
    )?;
    defmt::info!(
        "histogram {} (under {=u32}, over {=u32})",
        histogram.counts(),
        histogram.underflow(),
        histogram.overflow()
    );

    let mut rng = release_rng()?;
    let epsilon = Epsilon::new(1, 2)?;
    let released = app::privatize(&histogram, epsilon, &mut rng)?;
    let mut shown = [0f32; app::BINS];
    for (s, r) in shown.iter_mut().zip(released) {
        *s = r.to_f64() as f32;
    }
    defmt::info!("released (epsilon = 1/2): {}", shown);
    Ok(())
}

/// The RNG that noises releases.
#[cfg(feature = "qemu")]
fn release_rng() -> Result<rand_chacha::ChaCha12Rng, AppError> {
    defmt::warn!("QEMU build: fixed test-only seed, released values are NOT private");
    Ok(privq_firmware::seed::qemu_test_only_rng())
}

/// The RNG that noises releases: seeded from the board's entropy source.
#[cfg(not(feature = "qemu"))]
fn release_rng() -> Result<rand_chacha::ChaCha12Rng, AppError> {
    hardware_entropy()
        .map(privq_firmware::seed::rng_from_entropy)
        .ok_or(AppError::NoEntropy)
}

/// 32 bytes from the board's TRNG. This generic example targets no particular board,
/// so it has none and the firmware refuses to release (never falls back to a fixed seed).
#[cfg(not(feature = "qemu"))]
fn hardware_entropy() -> Option<[u8; 32]> {
    defmt::error!("no hardware entropy source wired for this board: refusing to release");
    None
}

/// Ends the run: semihosting exit status in QEMU, sleep forever on hardware.
fn finish(ok: bool) -> ! {
    #[cfg(feature = "qemu")]
    semihosting::process::exit(if ok { 0 } else { 1 });
    #[cfg(not(feature = "qemu"))]
    {
        let _ = ok;
        loop {
            cortex_m::asm::wfi();
        }
    }
}

/// QEMU: a panic prints its message (defmt) and exits with status 101.
/// (panic-probe would execute `udf`, which QEMU turns into an endless HardFault loop.)
#[cfg(feature = "qemu")]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    defmt::error!("panicked: {}", defmt::Display2Format(info));
    semihosting::process::exit(101)
}

/// QEMU: `defmt::panic!` has already logged its message; just exit non-zero.
#[cfg(feature = "qemu")]
#[defmt::panic_handler]
fn defmt_panic() -> ! {
    semihosting::process::exit(101)
}

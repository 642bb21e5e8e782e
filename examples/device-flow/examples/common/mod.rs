//! The documented path (privq-core's crate-level quick start) as one bare-metal image, for
//! measuring its flash cost (`tools/device-sizes.sh`): raw readings → histogram bins (32-bit
//! integer binning) → the modal bin → OUE or GRR at ε = 1 after the lifetime ledger in NOR
//! flash is debited → a wire-format report → the report sealed into an HMAC-SHA-256 upload
//! frame numbered by persisted counters. The randomness is `privq_core::rng::ChaCha12`.
//!
//! An image runs the path up to a [`stage`]; each stage adds one component to the one before,
//! so the difference between two images is that component's flash cost.
//!
//! Inputs pass through `black_box`, so nothing is computed at compile time, and the results
//! go into one, so nothing is dropped. The flash is `RamFlash` (a simulated NOR flash in RAM):
//! a board's HAL flash driver costs its own bytes instead.

use core::hint::black_box;

use privq_core::flash_store::{FlashStore, RamFlash};
use privq_core::histogram::{Histogram, IntegerBins};
use privq_core::ledger::Ledger;
use privq_core::local::{LocalRandomizer, QueryId};
use privq_core::report::HEADER_LEN;
use privq_core::rng::ChaCha12;
use privq_core::upload::{DeviceKey, Outbox};
use privq_core::upload_counters::UploadCounters;
use privq_core::{Epsilon, Error};
use rand_core::{Rng, SeedableRng};

/// Bins: 0.5 °C over [5, 37) °C.
pub const BINS: u32 = 64;

/// How far an image runs the path.
pub mod stage {
    /// Nothing of privq-core: the runtime (vector table, start-up code) and an idle loop.
    pub const RUNTIME: u8 = 0;
    /// A seeded [`ChaCha12`](privq_core::rng::ChaCha12) drawing a word.
    pub const RNG: u8 = 1;
    /// Raw readings into a histogram by `IntegerBins`, and the modal bin.
    pub const BINS: u8 = 2;
    /// The randomizer's payload for the modal bin (no header).
    pub const RANDOMIZER: u8 = 3;
    /// The whole wire-format report: header and payload.
    pub const REPORT: u8 = 4;
    /// The report released through the lifetime ledger in flash (the documented path).
    pub const LEDGER: u8 = 5;
    /// The report sealed into an upload frame.
    pub const FRAME: u8 = 6;
}

/// One reading period up to stage `UPTO`, with the randomizer that `make` builds for ε = 1;
/// returns what the last stage produced: the bytes drawn, the modal bin, or the length of
/// the payload, report or frame.
pub fn period<M, const UPTO: u8>(
    make: impl FnOnce(Epsilon) -> Result<M, Error>,
) -> Result<usize, Error>
where
    M: LocalRandomizer<Input = u32>,
{
    if UPTO == stage::RUNTIME {
        return Ok(0);
    }
    // On a board: 32 bytes from the MCU's hardware RNG, once per boot.
    let mut rng = ChaCha12::from_seed(black_box([7; 32]));
    if UPTO == stage::RNG {
        black_box(rng.next_u32());
        return Ok(4);
    }
    // Raw readings in the sensor's 1/16 °C units, 8 per bin.
    let bins = IntegerBins::<{ BINS as usize }>::new(5 * 16, 37 * 16)?;
    let mut histogram = Histogram::<{ BINS as usize }>::categorical()?;
    for raw in black_box([21 * 16, 22 * 16, 40 * 16]) {
        histogram.record_raw_clamped(&bins, raw);
    }
    let modal = histogram.modal_bin();
    if UPTO == stage::BINS {
        black_box(rng.next_u32());
        return Ok(black_box(modal) as usize);
    }

    let randomizer = make(Epsilon::new(1, 1)?)?;
    let mut report = [0u8; 20];
    if UPTO == stage::RANDOMIZER {
        let payload = report.get_mut(HEADER_LEN..randomizer.report_len());
        let payload = payload.ok_or(Error::BufferTooSmall)?;
        randomizer.validate(&modal)?;
        randomizer.write_payload(&modal, &mut rng, payload)?;
        black_box(&report);
        return Ok(randomizer.report_len().saturating_sub(HEADER_LEN));
    }
    if UPTO == stage::REPORT {
        let len = randomizer.privatize_into(&modal, QueryId(1), &mut rng, &mut report)?;
        black_box(&report);
        return Ok(len);
    }

    let mut ledger_flash = RamFlash::<768>::new();
    let mut ledger = Ledger::open(FlashStore::new(&mut ledger_flash), Epsilon::new(4, 1)?)?;
    let len = ledger.release(&randomizer, &modal, QueryId(1), &mut rng, &mut report)?;
    let report = report.get(..len).ok_or(Error::BufferTooSmall)?;
    if UPTO == stage::LEDGER {
        black_box(report);
        return Ok(len);
    }

    debug_assert_eq!(UPTO, stage::FRAME);
    let mut counter_flash = RamFlash::<768>::new();
    let mut counters = UploadCounters::open(FlashStore::new(&mut counter_flash))?;
    let key = DeviceKey::new(black_box([0x42; 32])); // provisioned per device
    let mut outbox: Outbox<2, 64> = Outbox::new(black_box(1234), counters.next_sequence());
    let next = outbox.next_sequence().ok_or(Error::SequenceExhausted)?;
    let epoch = counters.begin_epoch(next)?;
    outbox.push(epoch, report)?;
    outbox.seal()?;
    let mut frame = [0u8; Outbox::<2, 64>::MAX_FRAME_LEN];
    let frame_len = outbox
        .write_front(&key, &mut frame)?
        .ok_or(Error::NotPending)?;
    black_box(&frame);
    outbox.acknowledge(next)?;
    Ok(frame_len)
}

/// The entry point (bare metal) or `main` (host) of a size image around
/// `period::<_, $upto>($make)`; on the host the image runs the path once and prints the
/// length it wrote.
macro_rules! size_image {
    ($make:expr, upto = $upto:ident) => {
        fn period() -> Result<usize, privq_core::Error> {
            common::period::<_, { common::stage::$upto }>($make)
        }

        #[cfg(target_os = "none")]
        #[cortex_m_rt::entry]
        fn main() -> ! {
            core::hint::black_box(period().is_ok());
            loop {
                core::hint::spin_loop();
            }
        }

        #[cfg(target_os = "none")]
        #[panic_handler]
        fn panic(_: &core::panic::PanicInfo) -> ! {
            loop {
                core::hint::spin_loop();
            }
        }

        #[cfg(not(target_os = "none"))]
        fn main() {
            let len =
                core::hint::black_box(period()).expect("the documented path runs on the host");
            println!("{len} bytes");
        }
    };
}

//! The on-target suite: runs every shared check of `privq_tests::CHECKS` on a Cortex-M
//! or RISC-V (riscv32imc) core in QEMU, then measures the per-call instruction cost of the exact and the
//! bounded-work discrete Laplace samplers.
//!
//! Output goes to the host over semihosting: `test NAME ... ok|FAILED` lines, the cost
//! tables, and the closing `N passed, N failed`. The exit status (semihosting) is 0 only
//! when every check passed and at least one ran; a panic exits with status 1.
//!
//! It also measures the instructions per **report** of every local randomizer the
//! firmware can use (`privatize_into`: randomize + encode, with the device's ChaCha12),
//! of a release through the budget ledger, and of a whole firmware epoch (96 sensor
//! readings, binning, ledger debit in simulated flash, OUE report); see [`report_costs`].
//!
//! Cost: QEMU runs with `-icount shift=N` (tools/qemu-run.sh), so virtual time advances
//! exactly 2^N ns per instruction and SysTick (core clock) counts instructions times a
//! fixed ratio, calibrated here against a delay loop (2 instructions per loop). On RISC-V
//! the counter is `mcycle`, which QEMU advances with virtual time under `-icount` (2^N
//! per instruction, like SysTick), calibrated the same way. (`minstret` would count
//! instructions exactly, but one tick per instruction is below the 2 ticks per
//! instruction that [`CostProfile::check_constant`] needs to resolve one instruction.)
//! The architecture-specific parts are in [`arch`].
#![no_std]
#![no_main]

use core::fmt::Write;
use core::hint::black_box;
use core::sync::atomic::{Ordering, compiler_fence};

use arch::{entry, exit};
use privq_core::ledger::{Ledger, MemoryStore};
use privq_core::local::{
    Grr, HadamardResponse, LocalRandomizer, Olh, QueryId, SqLaplace, UeVariant, UnaryEncoding,
    UnitValue,
};
use privq_core::sample::{BoundedDiscreteLaplace, DiscreteLaplace};
use privq_core::{Epsilon, Result};
use privq_firmware::app::{BINS, CountingDelay, Device, EmitTo};
use privq_firmware::release::ModalBin;
use privq_firmware::sensor::{
    DEFAULT_ADDRESS, NTC_10K_B3950, NTC_10K_B3950_DIGEST, TempSensor, ntc_digest,
};
use privq_firmware::store::{FlashLedgerStore, SimFlash};
use privq_firmware::synthetic::SyntheticSensorBus;
use privq_tests::CHECKS;
use privq_tests::check::{Failure, Runner, expect_ok};
use privq_tests::cost::CostProfile;
use privq_tests::rng::SplitMix64;
use rand_chacha::ChaCha12Rng;
use rand_core::SeedableRng;

/// Scales `num/den` whose sampler costs are measured, with the width of the value
/// buckets the costs are grouped by.
const COST_SCALES: [(u64, u64, i64, &str); 3] = [
    (1, 1, 1, "t=1"),
    (10, 3, 1, "t=10/3"),
    (1000, 1, 250, "t=1000"),
];

/// Calls measured per sampler and scale.
const COST_CALLS: u32 = 1500;

/// The core's free-running counter ([`arch::Counter`]: SysTick or `minstret`).
struct Ticks(arch::Counter);

impl Ticks {
    /// Runs `f` and returns its result with the counter ticks it took.
    #[inline(always)]
    fn time<T>(&self, f: impl FnOnce() -> T) -> (T, u32) {
        compiler_fence(Ordering::SeqCst);
        let start = self.0.now();
        compiler_fence(Ordering::SeqCst);
        let out = black_box(f());
        compiler_fence(Ordering::SeqCst);
        let end = self.0.now();
        compiler_fence(Ordering::SeqCst);
        (out, arch::Counter::elapsed(start, end))
    }

    /// Ticks per executed instruction: `spin(n)` runs `n + 1` two-instruction loops.
    fn per_instruction(&self) -> f64 {
        const LOOPS: u32 = 100_000;
        let ((), short) = self.time(|| arch::spin(black_box(0)));
        let ((), long) = self.time(|| arch::spin(black_box(LOOPS)));
        f64::from(long - short) / f64::from(2 * LOOPS)
    }
}

#[inline(never)]
fn exact(d: &DiscreteLaplace, rng: &mut SplitMix64) -> Result<i64> {
    d.sample(rng)
}

#[inline(never)]
fn bounded(d: &BoundedDiscreteLaplace, rng: &mut SplitMix64) -> Result<i64> {
    d.sample(rng)
}

/// Measures both samplers at every scale of [`COST_SCALES`], prints the tables and
/// runs the cost checks.
// Out of line: `main`'s frame stays small, so that it and the deepest check fit the
// Cortex-M0's 16 KiB of RAM together (inlined, these took `main` to 5.6 KB).
#[inline(never)]
fn cost_checks<W: Write>(runner: &mut Runner<W>, ticks: &Ticks) {
    let ratio = ticks.per_instruction();
    let ((), overhead) = ticks.time(|| ());
    let _ = writeln!(
        runner.out(),
        "cost: {} ticks per instruction {ratio:.5}; timer overhead {overhead} ticks (included below)",
        arch::COUNTER
    );
    for (num, den, bucket, label) in COST_SCALES {
        let mut rng = SplitMix64::new(0xc057 + num);
        let profile = match DiscreteLaplace::new(num, den) {
            Ok(d) => {
                CostProfile::measure("DiscreteLaplace::sample", ratio, bucket, COST_CALLS, || {
                    ticks.time(|| exact(black_box(&d), black_box(&mut rng)))
                })
            }
            Err(e) => {
                runner.run("cost_exact_constructor", || expect_ok(label, Err(e)));
                continue;
            }
        };
        let _ = write!(runner.out(), "{label} {profile}");
        runner.run(exact_name(label), || profile.check_varies());

        let profile = match BoundedDiscreteLaplace::new(num, den) {
            Ok(d) => CostProfile::measure(
                "BoundedDiscreteLaplace::sample",
                ratio,
                bucket,
                COST_CALLS,
                || ticks.time(|| bounded(black_box(&d), black_box(&mut rng))),
            ),
            Err(e) => {
                runner.run("cost_bounded_constructor", || expect_ok(label, Err(e)));
                continue;
            }
        };
        let _ = write!(runner.out(), "{label} {profile}");
        runner.run(bounded_name(label), || profile.check_constant());
    }
}

/// Reports measured per randomizer (and epochs for the firmware).
const REPORT_CALLS: u32 = 64;

/// One report, not inlined so the measurement brackets exactly this call.
#[inline(never)]
fn one_report<M: LocalRandomizer>(
    m: &M,
    input: &M::Input,
    rng: &mut ChaCha12Rng,
    buf: &mut [u8],
) -> Result<usize> {
    m.privatize_into(input, QueryId(0), rng, buf)
}

/// One release through the budget ledger (validate, debit + persist, randomize, encode).
#[inline(never)]
fn one_release<M: LocalRandomizer>(
    ledger: &mut Ledger<MemoryStore>,
    m: &M,
    input: &M::Input,
    rng: &mut ChaCha12Rng,
    buf: &mut [u8],
) -> Result<usize> {
    ledger.release(m, input, QueryId(0), rng, buf)
}

/// Prints one cost line (mean, min, max instructions per call, timer overhead
/// subtracted) and checks that every call was measured without error.
fn report_line<W: Write>(
    runner: &mut Runner<W>,
    check: &'static str,
    profile: &CostProfile,
    overhead: u32,
) {
    let all = profile.overall();
    let mean = all.sum as f64 / f64::from(all.calls.max(1)) - f64::from(overhead);
    let _ = writeln!(
        runner.out(),
        "report cost {}: {} calls, instructions per call mean {:.0}, min {:.0}, max {:.0}",
        profile.name,
        all.calls,
        profile.instructions(mean),
        profile.instructions(f64::from(all.min.saturating_sub(overhead))),
        profile.instructions(f64::from(all.max.saturating_sub(overhead)))
    );
    runner.run(check, || profile.check_measured());
}

/// Measures `privatize_into` of `m` over [`REPORT_CALLS`] inputs from `input`.
fn measure_reports<W: Write, M: LocalRandomizer>(
    runner: &mut Runner<W>,
    ticks: &Ticks,
    (ratio, overhead): (f64, u32),
    (name, check): (&'static str, &'static str),
    m: &M,
    mut input: impl FnMut(u32) -> M::Input,
) where
    M::Input: Sized,
{
    let mut rng = ChaCha12Rng::seed_from_u64(0x5e90);
    let mut buf = [0u8; 32];
    let mut k = 0;
    let profile = CostProfile::measure(name, ratio, 1, REPORT_CALLS, || {
        k += 1;
        let x = input(k);
        let (r, t) =
            ticks.time(|| one_report(black_box(m), black_box(&x), black_box(&mut rng), &mut buf));
        (r.map(|_| 0), t)
    });
    report_line(runner, check, &profile, overhead);
}

/// Instructions per report of every randomizer the firmware can be configured with
/// (ε = 1 over the firmware's 64 bins), of an OUE release through the ledger, and of a
/// whole firmware epoch with OUE.
// Out of line: `main`'s frame stays small, so that it and the deepest check fit the
// Cortex-M0's 16 KiB of RAM together (inlined, these took `main` to 5.6 KB).
#[inline(never)]
fn report_costs<W: Write>(runner: &mut Runner<W>, ticks: &Ticks) {
    let ratio = ticks.per_instruction();
    let ((), overhead) = ticks.time(|| ());
    let cal = (ratio, overhead);
    let d = BINS as u32;
    let (Ok(eps), Ok(cap)) = (Epsilon::new(1, 1), Epsilon::new(1_000_000, 1)) else {
        runner.run("report_cost_parameters", || {
            expect_ok("Epsilon::new", Err(privq_core::Error::EpsilonZero))
        });
        return;
    };
    let item = |k: u32| (k * 17) % BINS as u32;
    match UnaryEncoding::new(UeVariant::Optimized, eps, d) {
        Ok(m) => {
            measure_reports(runner, ticks, cal, ("oue-64", "report_cost_oue"), &m, item);
            let mut ledger = match Ledger::open(MemoryStore::new(), cap) {
                Ok(l) => l,
                Err(e) => return runner.run("report_cost_ledger", || expect_ok("open", Err(e))),
            };
            let mut rng = ChaCha12Rng::seed_from_u64(0x1ed9);
            let mut buf = [0u8; 32];
            let mut k = 0;
            let profile = CostProfile::measure("oue-64 + ledger", ratio, 1, REPORT_CALLS, || {
                k += 1;
                let (r, t) = ticks
                    .time(|| one_release(&mut ledger, black_box(&m), &item(k), &mut rng, &mut buf));
                (r.map(|_| 0), t)
            });
            report_line(runner, "report_cost_oue_with_ledger", &profile, overhead);
            firmware_epoch_cost(runner, ticks, cal, m, cap);
        }
        Err(e) => runner.run("report_cost_oue", || expect_ok("oue", Err(e))),
    }
    match UnaryEncoding::new(UeVariant::Symmetric, eps, d) {
        Ok(m) => measure_reports(runner, ticks, cal, ("sue-64", "report_cost_sue"), &m, item),
        Err(e) => runner.run("report_cost_sue", || expect_ok("sue", Err(e))),
    }
    match Grr::new(eps, d) {
        Ok(m) => measure_reports(runner, ticks, cal, ("grr-64", "report_cost_grr"), &m, item),
        Err(e) => runner.run("report_cost_grr", || expect_ok("grr", Err(e))),
    }
    match Olh::new(eps, d) {
        Ok(m) => measure_reports(runner, ticks, cal, ("olh-64", "report_cost_olh"), &m, item),
        Err(e) => runner.run("report_cost_olh", || expect_ok("olh", Err(e))),
    }
    match HadamardResponse::new(eps, d) {
        Ok(m) => measure_reports(runner, ticks, cal, ("hr-64", "report_cost_hr"), &m, item),
        Err(e) => runner.run("report_cost_hr", || expect_ok("hr", Err(e))),
    }
    // The firmware's `laplace` release answers 64 such queries per epoch at ε/64.
    match Epsilon::new(1, 64).and_then(SqLaplace::new) {
        Ok(m) => measure_reports(
            runner,
            ticks,
            cal,
            ("sq-laplace eps=1/64", "report_cost_sq_laplace"),
            &m,
            |k| UnitValue::from_fraction(u64::from(k % 97), 96).unwrap_or(UnitValue::ZERO),
        ),
        Err(e) => runner.run("report_cost_sq_laplace", || expect_ok("sq", Err(e))),
    }
}

/// A whole firmware epoch with OUE: 96 readings of the synthetic I²C sensor, binning,
/// modal bin, ledger debit persisted to simulated flash, one OUE report.
fn firmware_epoch_cost<W: Write>(
    runner: &mut Runner<W>,
    ticks: &Ticks,
    (ratio, overhead): (f64, u32),
    oue: UnaryEncoding,
    cap: Epsilon,
) {
    let mut flash = SimFlash::<512>::new();
    let device = Ledger::open(FlashLedgerStore::new(&mut flash), cap).and_then(|ledger| {
        Device::new(
            TempSensor::new(SyntheticSensorBus::for_device(3), DEFAULT_ADDRESS),
            CountingDelay::default(),
            ledger,
            ChaCha12Rng::seed_from_u64(0xf1e1d),
            ModalBin(oue),
        )
        .map_err(|_| privq_core::Error::Storage(privq_core::StorageKind::Unspecified))
    });
    let mut device = match device {
        Ok(d) => d,
        Err(e) => return runner.run("report_cost_firmware_epoch", || expect_ok("device", Err(e))),
    };
    let mut epoch = 0u16;
    let profile = CostProfile::measure("firmware epoch (oue-64)", ratio, 1, REPORT_CALLS, || {
        epoch += 1;
        let (r, t) = ticks.time(|| {
            device
                .run_epoch(
                    black_box(epoch),
                    |_, _| {},
                    &mut EmitTo(|_, r| {
                        black_box(r);
                    }),
                )
                .map_err(|_| privq_core::Error::Storage(privq_core::StorageKind::Unspecified))
        });
        (r.map(|_| 0), t)
    });
    report_line(runner, "report_cost_firmware_epoch", &profile, overhead);
}

fn exact_name(label: &str) -> &'static str {
    match label {
        "t=1" => "cost_exact_laplace_varies_t_1 (control)",
        "t=10/3" => "cost_exact_laplace_varies_t_10_3 (control)",
        _ => "cost_exact_laplace_varies_t_1000 (control)",
    }
}

fn bounded_name(label: &str) -> &'static str {
    match label {
        "t=1" => "cost_bounded_laplace_constant_t_1",
        "t=10/3" => "cost_bounded_laplace_constant_t_10_3",
        _ => "cost_bounded_laplace_constant_t_1000",
    }
}

#[entry]
fn main() -> ! {
    let Some(out) = arch::stdout() else {
        exit(false)
    };
    let mut runner = Runner::new(out);
    let _ = writeln!(
        runner.out(),
        "privq on-target suite: {} shared checks",
        CHECKS.len()
    );
    runner.run_all(CHECKS);
    runner.run("ntc_micromath_conversion_bit_identical_to_host", || {
        let got = ntc_digest(&NTC_10K_B3950);
        if got == NTC_10K_B3950_DIGEST {
            Ok(())
        } else {
            Err(Failure::Mismatch {
                what: "digest of the thermistor conversion (f32, micromath)",
                got: i128::from(got),
                want: i128::from(NTC_10K_B3950_DIGEST),
            })
        }
    });
    runner.run(
        "hmac_sha256_rfc4231_case_2_and_frame_round_trip",
        hmac_on_target,
    );
    match arch::Counter::start() {
        Some(counter) => {
            let ticks = Ticks(counter);
            cost_checks(&mut runner, &ticks);
            report_costs(&mut runner, &ticks);
        }
        None => runner.run("cost_counter_available", || {
            expect_ok("arch::Counter::start", Err(privq_core::Error::EmptyRange))
        }),
    }
    let ok = runner.finish();
    exit(ok)
}

/// HMAC-SHA-256 on the target: RFC 4231 test case 2 ("Jefe", zero-padded to the
/// 32-byte device key: the same HMAC key), and a frame written by an outbox that
/// verifies, then fails after a one-bit change.
// Out of line: `main`'s frame stays small, so that it and the deepest check fit the
// Cortex-M0's 16 KiB of RAM together (inlined, these took `main` to 5.6 KB).
#[inline(never)]
fn hmac_on_target() -> privq_tests::check::Outcome {
    use privq_core::upload::{DeviceKey, FrameError, Outbox, open, tag};
    let mut k = [0u8; 32];
    k[..4].copy_from_slice(b"Jefe");
    let key = DeviceKey::new(k);
    let want: [u8; 32] = [
        0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24, 0x26, 0x08, 0x95, 0x75,
        0xc7, 0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27, 0x39, 0x83, 0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec,
        0x38, 0x43,
    ];
    let got = tag(&key, b"what do ya want for nothing?");
    if got != want {
        return Err(Failure::Mismatch {
            what: "HMAC-SHA-256 RFC 4231 case 2, first 8 bytes",
            got: i128::from(u64::from_be_bytes([
                got[0], got[1], got[2], got[3], got[4], got[5], got[6], got[7],
            ])),
            want: i128::from(u64::from_be_bytes([
                want[0], want[1], want[2], want[3], want[4], want[5], want[6], want[7],
            ])),
        });
    }
    let mut outbox: Outbox<2, 32> = Outbox::new(7, 0);
    let report = [1, 8, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1];
    expect_ok("outbox push", outbox.push(3, &report))?;
    expect_ok("outbox seal", outbox.seal())?;
    let mut buf = [0u8; 89];
    let n = expect_ok("write_front", outbox.write_front(&key, &mut buf))?.unwrap_or(0);
    let ok = open(&buf[..n], &key).map(|f| f.header.sequence);
    buf[30] ^= 1;
    let bad = open(&buf[..n], &key).map(|f| f.header.sequence);
    if ok == Ok(0) && bad == Err(FrameError::Mac) {
        Ok(())
    } else {
        Err(Failure::Mismatch {
            what: "frame verifies (1) and a flipped bit fails (1)",
            got: i128::from(u8::from(ok == Ok(0))) * 2
                + i128::from(u8::from(bad == Err(FrameError::Mac))),
            want: 3,
        })
    }
}

/// Cortex-M: SysTick, cortex-m-semihosting.
#[cfg(target_arch = "arm")]
mod arch {
    use core::fmt::Write;

    use cortex_m::peripheral::SYST;
    use cortex_m::peripheral::syst::SystClkSource;
    pub use cortex_m_rt::entry;
    use cortex_m_semihosting::{debug, hio};

    /// The counter's name in the output.
    pub const COUNTER: &str = "SysTick";

    /// SysTick is a 24-bit down-counter.
    const SYSTICK_MASK: u32 = 0x00ff_ffff;

    /// The free-running SysTick, clocked by the core clock.
    pub struct Counter;

    impl Counter {
        /// Starts SysTick; `None` if its peripheral was taken already.
        pub fn start() -> Option<Counter> {
            let mut syst = cortex_m::Peripherals::take()?.SYST;
            syst.set_clock_source(SystClkSource::Core);
            syst.set_reload(SYSTICK_MASK);
            syst.clear_current();
            syst.enable_counter();
            Some(Counter)
        }

        /// The current count.
        #[inline(always)]
        pub fn now(&self) -> u32 {
            SYST::get_current()
        }

        /// Ticks from `start` to `end` (SysTick counts down).
        #[inline(always)]
        pub fn elapsed(start: u32, end: u32) -> u32 {
            start.wrapping_sub(end) & SYSTICK_MASK
        }
    }

    /// `n + 1` two-instruction loops.
    #[inline(always)]
    pub fn spin(n: u32) {
        cortex_m::asm::delay(n);
    }

    /// Semihosting stdout.
    pub fn stdout() -> Option<impl Write> {
        hio::hstdout().ok()
    }

    /// Semihosting stderr.
    pub fn stderr() -> Option<impl Write> {
        hio::hstderr().ok()
    }

    /// Ends QEMU with status 0 (`ok`) or 1.
    pub fn exit(ok: bool) -> ! {
        debug::exit(if ok {
            debug::EXIT_SUCCESS
        } else {
            debug::EXIT_FAILURE
        });
        // Not reached under QEMU; on a debugger-less board just stop here.
        loop {
            cortex_m::asm::wfi();
        }
    }
}

/// RISC-V (riscv32imc, QEMU `virt`): `mcycle`, the `semihosting` crate.
#[cfg(target_arch = "riscv32")]
mod arch {
    use core::fmt::{self, Write};

    pub use riscv_rt::entry;

    /// The counter's name in the output.
    pub const COUNTER: &str = "mcycle";

    /// `mcycle`, the low 32 bits: the core clock (QEMU: virtual time under `-icount`; at
    /// shift 10 it wraps after about 4 million instructions, far above any measurement).
    pub struct Counter;

    impl Counter {
        /// The counter runs from reset (machine mode may always read it).
        pub fn start() -> Option<Counter> {
            Some(Counter)
        }

        /// The current count.
        #[inline(always)]
        pub fn now(&self) -> u32 {
            riscv::register::mcycle::read() as u32
        }

        /// Ticks from `start` to `end` (`mcycle` counts up).
        #[inline(always)]
        pub fn elapsed(start: u32, end: u32) -> u32 {
            end.wrapping_sub(start)
        }
    }

    /// `n + 1` two-instruction loops (`riscv::asm::delay(c)` runs `1 + c / 2`).
    #[inline(always)]
    pub fn spin(n: u32) {
        riscv::asm::delay(n.saturating_mul(2));
    }

    /// A semihosting stream as a `core::fmt::Write`.
    struct Stream<S>(S);

    impl<S: semihosting::io::Write> Write for Stream<S> {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.0.write_all(s.as_bytes()).map_err(|_| fmt::Error)
        }
    }

    /// Semihosting stdout.
    pub fn stdout() -> Option<impl Write> {
        semihosting::io::stdout().ok().map(Stream)
    }

    /// Semihosting stderr.
    pub fn stderr() -> Option<impl Write> {
        semihosting::io::stderr().ok().map(Stream)
    }

    /// Ends QEMU with status 0 (`ok`) or 1.
    pub fn exit(ok: bool) -> ! {
        semihosting::process::exit(if ok { 0 } else { 1 })
    }
}

/// Any panic fails the suite: print it to the host's stderr, exit with status 1.
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    if let Some(mut err) = arch::stderr() {
        let _ = writeln!(err, "panicked: {info}");
    }
    exit(false)
}

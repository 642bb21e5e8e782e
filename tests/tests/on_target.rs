//! The on-target suite: runs every shared check of `privq_tests::CHECKS` on a Cortex-M
//! core in QEMU, then measures the per-call instruction cost of the exact and the
//! bounded-work discrete Laplace samplers.
//!
//! Output goes to the host over semihosting: `test NAME ... ok|FAILED` lines, the cost
//! tables, and the closing `N passed, N failed`. The exit status (semihosting) is 0 only
//! when every check passed and at least one ran; a panic exits with status 1.
//!
//! Cost: QEMU runs with `-icount shift=N` (tools/qemu-run.sh), so virtual time advances
//! exactly 2^N ns per instruction and SysTick (core clock) counts instructions times a
//! fixed ratio, calibrated here against `cortex_m::asm::delay` (2 instructions per loop).
#![no_std]
#![no_main]

use core::fmt::Write;
use core::hint::black_box;
use core::sync::atomic::{Ordering, compiler_fence};

use cortex_m::peripheral::SYST;
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hio};
use privq_core::Result;
use privq_core::sample::{BoundedDiscreteLaplace, DiscreteLaplace};
use privq_tests::CHECKS;
use privq_tests::check::{Runner, expect_ok};
use privq_tests::cost::CostProfile;
use privq_tests::rng::SplitMix64;

/// SysTick is a 24-bit down-counter.
const SYSTICK_MASK: u32 = 0x00ff_ffff;

/// Scales `num/den` whose sampler costs are measured, with the width of the value
/// buckets the costs are grouped by.
const COST_SCALES: [(u64, u64, i64, &str); 3] = [
    (1, 1, 1, "t=1"),
    (10, 3, 1, "t=10/3"),
    (1000, 1, 250, "t=1000"),
];

/// Calls measured per sampler and scale.
const COST_CALLS: u32 = 1500;

/// The free-running SysTick, clocked by the core clock.
struct Ticks;

impl Ticks {
    fn start(mut syst: SYST) -> Ticks {
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(SYSTICK_MASK);
        syst.clear_current();
        syst.enable_counter();
        Ticks
    }

    /// Runs `f` and returns its result with the SysTick ticks it took.
    #[inline(always)]
    fn time<T>(&self, f: impl FnOnce() -> T) -> (T, u32) {
        compiler_fence(Ordering::SeqCst);
        let start = SYST::get_current();
        compiler_fence(Ordering::SeqCst);
        let out = black_box(f());
        compiler_fence(Ordering::SeqCst);
        let end = SYST::get_current();
        compiler_fence(Ordering::SeqCst);
        (out, start.wrapping_sub(end) & SYSTICK_MASK)
    }

    /// Ticks per executed instruction: `delay(n)` runs `n + 1` two-instruction loops.
    fn per_instruction(&self) -> f64 {
        const LOOPS: u32 = 100_000;
        let ((), short) = self.time(|| cortex_m::asm::delay(black_box(0)));
        let ((), long) = self.time(|| cortex_m::asm::delay(black_box(LOOPS)));
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
fn cost_checks<W: Write>(runner: &mut Runner<W>, ticks: &Ticks) {
    let ratio = ticks.per_instruction();
    let ((), overhead) = ticks.time(|| ());
    let _ = writeln!(
        runner.out(),
        "cost: SysTick ticks per instruction {ratio:.5}; timer overhead {overhead} ticks (included below)"
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
    let Ok(out) = hio::hstdout() else { exit(false) };
    let mut runner = Runner::new(out);
    let _ = writeln!(
        runner.out(),
        "privq on-target suite: {} shared checks",
        CHECKS.len()
    );
    runner.run_all(CHECKS);
    match cortex_m::Peripherals::take() {
        Some(p) => cost_checks(&mut runner, &Ticks::start(p.SYST)),
        None => runner.run("cost_systick_available", || {
            expect_ok(
                "cortex_m::Peripherals::take",
                Err(privq_core::Error::EmptyRange),
            )
        }),
    }
    let ok = runner.finish();
    exit(ok)
}

/// Ends QEMU with status 0 (`ok`) or 1.
fn exit(ok: bool) -> ! {
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

/// Any panic fails the suite: print it to the host's stderr, exit with status 1.
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    if let Ok(mut err) = hio::hstderr() {
        let _ = writeln!(err, "panicked: {info}");
    }
    exit(false)
}

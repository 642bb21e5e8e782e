//! The privq firmware: every epoch, read a (synthetic) temperature sensor, histogram
//! the readings, and release them through the configured local randomizer after
//! debiting the lifetime budget ledger kept in (simulated) flash; log with defmt.
//!
//! * feature `qemu`: defmt over semihosting stdout (decoded by `defmt-print` in
//!   tools/qemu-run.sh), raw reports as text lines on semihosting stderr (see
//!   `privq_firmware::wire`), the **QEMU/test-only fixed seed** of simulated device
//!   `device` in fleet `fleet` (semihosting arguments `fleet=<u64> device=<u64>`, both
//!   0 by default), exit status via semihosting;
//! * otherwise (hardware): defmt over RTT, panic-probe (Cortex-M; on RISC-V a panic
//!   stops the hart). A board must provide hardware entropy in [`hardware_entropy`];
//!   without it the firmware refuses to release.
//!
//! Targets: Cortex-M (cortex-m-rt) and RISC-V riscv32imc (riscv-rt, QEMU `virt`); the
//! few architecture-specific lines are under `cfg(target_arch = ...)` in [`arch`].
#![no_std]
#![no_main]

#[cfg(target_arch = "arm")]
use cortex_m_rt::entry;
use privq_core::ledger::Ledger;
use privq_core::local::QueryId;
#[cfg(feature = "frames")]
use privq_core::upload_counters::UploadCounters;
use privq_firmware::app::{self, AppError, CountingDelay, Device, EpochOutcome, ReportSink};
use privq_firmware::release::{self, EpochRelease};
#[cfg(not(feature = "ntc"))]
use privq_firmware::sensor::{DEFAULT_ADDRESS, TempSensor};
#[cfg(feature = "ntc")]
use privq_firmware::sensor::{NTC_10K_B3950, NTC_ADC_ADDRESS, NtcSensor};
use privq_firmware::store::{FlashStore, SimFlash};
#[cfg(feature = "ntc")]
use privq_firmware::synthetic::SyntheticNtcBus;
#[cfg(not(feature = "ntc"))]
use privq_firmware::synthetic::SyntheticSensorBus;
use privq_firmware::wire;

#[cfg(not(feature = "qemu"))]
use defmt_rtt as _;
#[cfg(all(not(feature = "qemu"), target_arch = "arm"))]
use panic_probe as _;
#[cfg(target_arch = "riscv32")]
use riscv_rt::entry;

/// Epochs the firmware runs: one more than the lifetime budget covers, to show the
/// ledger refusing.
const EPOCHS: u16 = 5;

/// Bytes of simulated flash for the ledger: a flag page and three log pages (128-byte pages).
const FLASH_BYTES: usize = 512;

/// Feature `frames`: the outbox holds 2 sealed frames and 4 reports of the longest kind
/// (with their 2-byte length prefixes); a frame is at most 57 + 104 = 161 bytes.
#[cfg(feature = "frames")]
type FirmwareUplink = privq_firmware::uplink::Uplink<2, OUTBOX_BYTES, { OUTBOX_BYTES + 57 }>;
#[cfg(feature = "frames")]
const OUTBOX_BYTES: usize = 4 * (release::MAX_REPORT_LEN + 2);

#[entry]
fn main() -> ! {
    stack::paint();
    let (fleet, device) = device_identity();
    // Built once: the banner names it, `run` releases with it (one copy of the
    // randomizer's construction in flash).
    let release = release::selected();
    defmt::info!(
        "privq-firmware: mechanism {=str}, {=usize} bins, {=u32} readings/epoch, fleet {=u64} device {=u64}",
        release.as_ref().map_or("?", |r| r.name()),
        app::BINS,
        app::READINGS_PER_EPOCH,
        fleet,
        device
    );
    match run(fleet, device, release) {
        Ok(()) => finish(true),
        Err(e) => {
            defmt::error!("privq-firmware failed: {}", e);
            finish(false)
        }
    }
}

/// The firmware's epochs with `release` (its error, if any, is reported after the ledger's).
fn run(
    fleet: u64,
    device: u64,
    release: Result<release::Selected, privq_core::Error>,
) -> Result<(), AppError> {
    // The simulated flash lives in a static (as flash would be outside the stack).
    let flash = arch::singleton!(: SimFlash<FLASH_BYTES> = SimFlash::new()).ok_or(
        privq_core::Error::Storage(privq_core::StorageKind::Unspecified),
    )?;
    let ledger = Ledger::open(FlashStore::new(flash), release::lifetime_epsilon()?)?;
    let release = release?;
    let name = release.name();
    let mut device_app = Device::new(
        #[cfg(not(feature = "ntc"))]
        TempSensor::new(SyntheticSensorBus::for_device(device), DEFAULT_ADDRESS),
        // Feature `ntc`: a thermistor through an ADC, converted with micromath.
        #[cfg(feature = "ntc")]
        NtcSensor::new(
            SyntheticNtcBus::for_device(device, NTC_10K_B3950),
            NTC_ADC_ADDRESS,
            NTC_10K_B3950,
        ),
        CountingDelay::default(),
        ledger,
        release_rng(fleet, device)?,
        release,
    )?;
    let (mut released, mut refused) = (0u32, 0u32);
    #[cfg(feature = "frames")]
    let mut counters = {
        // The upload counters (next epoch, next sequence) persist beside the ledger, in
        // their own flash region with the same wear-levelled, fail-closed record log.
        let flash = arch::singleton!(: SimFlash<FLASH_BYTES> = SimFlash::new()).ok_or(
            privq_core::Error::Storage(privq_core::StorageKind::Unspecified),
        )?;
        UploadCounters::open(FlashStore::new(flash))?
    };
    #[cfg(feature = "frames")]
    let frame_key = device_key(fleet, device)?;
    #[cfg(feature = "frames")]
    let mut uplink = FirmwareUplink::resume(device, frame_key.clone(), counters.next_sequence());
    #[cfg(feature = "frames")]
    let mut send = |h: &privq_core::upload::FrameHeader, frame: &[u8]| {
        emit(wire::frame_line_head(fleet, device, h.epoch, h.sequence).as_bytes());
        for piece in frame.chunks(wire::HEX_PIECE) {
            emit(wire::hex_piece(piece).as_bytes());
        }
        emit(b"\n");
        collector_answer(&frame_key, frame)
    };
    for step in 0..EPOCHS {
        // With frames, the collection epoch comes from the persisted counters, so a
        // reboot never repeats a replay key (device, epoch, sequence); without, it
        // counts from 0 in every run as before.
        #[cfg(feature = "frames")]
        let (epoch, frame_epoch) = {
            let _ = step; // the counters number the epochs
            let next = uplink.outbox().next_sequence().unwrap_or(u32::MAX);
            let e = counters.begin_epoch(next)?;
            (
                u16::try_from(e).map_err(|_| privq_core::Error::Overflow)?,
                e,
            )
        };
        #[cfg(not(feature = "frames"))]
        let epoch = step;
        let mut sink = Sink {
            fleet,
            device,
            #[cfg(feature = "frames")]
            upload: (frame_epoch, &mut uplink, &mut send),
            #[cfg(not(feature = "frames"))]
            upload: core::marker::PhantomData,
        };
        let outcome = device_app.run_epoch(
            epoch,
            |n, raw| {
                if n == 0 {
                    // 1/128 °C units: integers only, no float formatting on the device.
                    defmt::info!("epoch {=u16}: first reading {=i16}/128 °C", epoch, raw);
                }
            },
            &mut sink,
        )?;
        #[cfg(feature = "frames")]
        uplink.flush(&mut send)?;
        match outcome {
            EpochOutcome::Released { item, reports } => {
                released += reports;
                defmt::info!(
                    "epoch {=u16}: released {=u32} report(s) (modal bin {=u32}), spent {=u64}/{=u64}",
                    epoch,
                    reports,
                    item,
                    device_app.ledger.spent().num(),
                    device_app.ledger.spent().den()
                );
            }
            EpochOutcome::Refused(reason) => {
                refused += 1;
                defmt::warn!("epoch {=u16}: refused by the ledger: {}", epoch, reason);
                emit(wire::refused_line(fleet, device, epoch, reason).as_bytes());
            }
        }
    }
    let stack = stack::used();
    defmt::info!("stack high-water mark: {=u32} bytes", stack);
    emit(wire::done_line(fleet, device, name, released, refused, stack).as_bytes());
    Ok(())
}

/// Where an epoch's reports go: a defmt line and a `privq-report` line each and, with
/// feature `frames`, the uplink's outbox of the frame epoch, whose room is reserved
/// before the ledger is charged (delivering pending frames if needed): a report the
/// outbox cannot take is refused before it is charged, and the firmware stops.
struct Sink<'a> {
    fleet: u64,
    device: u64,
    #[cfg(feature = "frames")]
    upload: (
        u32,
        &'a mut FirmwareUplink,
        &'a mut privq_firmware::uplink::Deliver<'a>,
    ),
    #[cfg(not(feature = "frames"))]
    upload: core::marker::PhantomData<&'a ()>,
}

impl ReportSink for Sink<'_> {
    fn reserve(&mut self, len: usize) -> Result<(), privq_core::Error> {
        #[cfg(feature = "frames")]
        {
            let (epoch, uplink, send) = &mut self.upload;
            uplink.reserve(*epoch, len, &mut **send)
        }
        #[cfg(not(feature = "frames"))]
        {
            let _ = len;
            Ok(())
        }
    }

    fn accept(&mut self, query: QueryId, report: &[u8]) -> Result<(), privq_core::Error> {
        defmt::info!("report query {=u16}: {=[u8]:02x}", query.0, report);
        emit(wire::report_line(self.fleet, self.device, query.0, report).as_bytes());
        #[cfg(feature = "frames")]
        {
            let (epoch, uplink, send) = &mut self.upload;
            uplink.queue(*epoch, report, &mut **send)?;
        }
        Ok(())
    }
}

/// Stack high-water mark by painting (QEMU builds): [`stack::paint`] fills the free
/// stack below the current stack pointer with a pattern at boot, [`stack::used`] finds
/// the lowest word that no longer holds it. The measurement includes everything that
/// ran (logging, semihosting), so it is an upper bound for the application itself.
#[cfg(feature = "qemu")]
#[allow(unsafe_code)]
mod stack {
    use core::ptr;

    const PAINT: u32 = 0x5a5a_c3c3;
    /// Words left unpainted right below the stack pointer of `paint` (its own frame).
    const MARGIN: usize = 16;
    /// At most this many bytes are painted (the M4F machine has 4 MiB of RAM).
    const MAX_PAINT: usize = 64 * 1024;

    unsafe extern "C" {
        /// Top of the stack (cortex-m-rt, riscv-rt: end of RAM).
        static _stack_start: u32;
        /// Lowest address the stack may grow to (cortex-m-rt: end of .bss/.uninit).
        #[cfg(target_arch = "arm")]
        static _stack_end: u32;
        /// Lowest address the stack may grow to (riscv-rt: end of .bss/.uninit/heap).
        #[cfg(target_arch = "riscv32")]
        #[link_name = "__estack"]
        static _stack_end: u32;
    }

    fn bounds() -> (usize, usize) {
        let top = ptr::addr_of!(_stack_start) as usize;
        let end = ptr::addr_of!(_stack_end) as usize;
        (end.max(top.saturating_sub(MAX_PAINT)), top)
    }

    /// Paints the free stack. Call first thing in `main`.
    #[inline(never)]
    pub fn paint() {
        let (bottom, _) = bounds();
        let sp = super::arch::stack_pointer();
        let mut p = bottom;
        while p + 4 * MARGIN < sp {
            // SAFETY: `p` is word aligned (both bounds are) and lies between the end of
            // the statics and the live part of the stack (`MARGIN` words below the stack
            // pointer of this frame, which calls nothing): memory nothing else uses.
            unsafe { ptr::write_volatile(p as *mut u32, PAINT) };
            p += 4;
        }
    }

    /// Bytes of stack used since [`paint`].
    pub fn used() -> u32 {
        let (bottom, top) = bounds();
        let mut p = bottom;
        // SAFETY: reads of aligned words of RAM inside the stack region.
        while p < top && unsafe { ptr::read_volatile(p as *const u32) } == PAINT {
            p += 4;
        }
        (top - p) as u32
    }
}

/// `__aeabi_uldivmod` (the EABI's `u64` divide-with-remainder) on
/// [`privq_firmware::divide::udivmod64`], replacing compiler-builtins' weak definition:
/// about 850 bytes less flash on thumbv6m (see that module). EABI: dividend in r0:r1,
/// divisor in r2:r3; quotient returned in r0:r1, remainder in r2:r3.
#[cfg(target_arch = "arm")]
#[allow(unsafe_code)]
mod uldivmod {
    /// The shim's callee: `*rem = n % d`, returns `n / d`.
    #[unsafe(no_mangle)]
    extern "C" fn privq_firmware_udivmod64(n: u64, d: u64, rem: &mut u64) -> u64 {
        let (q, r) = privq_firmware::divide::udivmod64(n, d);
        *rem = r;
        q
    }

    /// The `u32` shim's callee: `n / d` in the low word, `n % d` in the high word (r0, r1).
    #[unsafe(no_mangle)]
    extern "C" fn privq_firmware_udivmod32(n: u32, d: u32) -> u64 {
        let (q, r) = privq_firmware::divide::udivmod32(n, d);
        u64::from(q) | u64::from(r) << 32
    }

    // `__aeabi_uidivmod`: dividend r0, divisor r1; quotient r0, remainder r1.
    core::arch::global_asm!(
        ".section .text.__aeabi_uidivmod,\"ax\",%progbits",
        ".global __aeabi_uidivmod",
        ".type __aeabi_uidivmod,%function",
        ".thumb_func",
        "__aeabi_uidivmod:",
        "push {{r4, lr}}",
        "bl privq_firmware_udivmod32",
        "pop {{r4, pc}}",
        ".size __aeabi_uidivmod, . - __aeabi_uidivmod",
    );

    // The remainder goes through a stack slot (sp + 8), whose address is the callee's
    // third argument (at [sp], AAPCS); 8-byte stack alignment is kept at the call.
    core::arch::global_asm!(
        ".section .text.__aeabi_uldivmod,\"ax\",%progbits",
        ".global __aeabi_uldivmod",
        ".type __aeabi_uldivmod,%function",
        ".thumb_func",
        "__aeabi_uldivmod:",
        "push {{r4, lr}}",
        "sub sp, #16",
        "add r4, sp, #8",
        "str r4, [sp]",
        "bl privq_firmware_udivmod64",
        "ldr r2, [sp, #8]",
        "ldr r3, [sp, #12]",
        "add sp, #16",
        "pop {{r4, pc}}",
        ".size __aeabi_uldivmod, . - __aeabi_uldivmod",
    );
}

/// Byte-loop `memcpy` and `memset`/`memclr` (the EABI names the compiler calls), replacing
/// compiler-builtins' weak word-at-a-time versions: about 1.6 KB less flash on thumbv6m
/// for copies and fills of at most a few hundred bytes (lines, frames, buffers). Written in
/// assembly so that the compiler cannot turn the loops back into calls to themselves.
#[cfg(target_arch = "arm")]
#[allow(unsafe_code)]
mod mem {
    // memcpy(dst r0, src r1, n r2) -> dst; the __aeabi_memcpy* take the same arguments.
    core::arch::global_asm!(
        ".section .text.privq_memcpy,\"ax\",%progbits",
        ".global memcpy",
        ".global __aeabi_memcpy",
        ".global __aeabi_memcpy4",
        ".global __aeabi_memcpy8",
        ".type memcpy,%function",
        ".type __aeabi_memcpy,%function",
        ".type __aeabi_memcpy4,%function",
        ".type __aeabi_memcpy8,%function",
        ".thumb_func",
        "memcpy:",
        ".thumb_func",
        "__aeabi_memcpy:",
        ".thumb_func",
        "__aeabi_memcpy4:",
        ".thumb_func",
        "__aeabi_memcpy8:",
        "push {{r4, lr}}",
        "movs r3, #0",
        "1:",
        "cmp r3, r2",
        "beq 2f",
        "ldrb r4, [r1, r3]",
        "strb r4, [r0, r3]",
        "adds r3, #1",
        "b 1b",
        "2:",
        "pop {{r4, pc}}",
        ".size memcpy, . - memcpy",
    );

    // __aeabi_memclr*(dst r0, n r1); __aeabi_memset*(dst r0, n r1, byte r2).
    core::arch::global_asm!(
        ".section .text.privq_memset,\"ax\",%progbits",
        ".global __aeabi_memclr",
        ".global __aeabi_memclr4",
        ".global __aeabi_memclr8",
        ".global __aeabi_memset",
        ".global __aeabi_memset4",
        ".global __aeabi_memset8",
        ".type __aeabi_memclr,%function",
        ".type __aeabi_memclr4,%function",
        ".type __aeabi_memclr8,%function",
        ".type __aeabi_memset,%function",
        ".type __aeabi_memset4,%function",
        ".type __aeabi_memset8,%function",
        ".thumb_func",
        "__aeabi_memclr:",
        ".thumb_func",
        "__aeabi_memclr4:",
        ".thumb_func",
        "__aeabi_memclr8:",
        "movs r2, #0",
        ".thumb_func",
        "__aeabi_memset:",
        ".thumb_func",
        "__aeabi_memset4:",
        ".thumb_func",
        "__aeabi_memset8:",
        "movs r3, #0",
        "1:",
        "cmp r3, r1",
        "beq 2f",
        "strb r2, [r0, r3]",
        "adds r3, #1",
        "b 1b",
        "2:",
        "bx lr",
        ".size __aeabi_memclr, . - __aeabi_memclr",
    );
}

/// Hardware builds do not measure the stack.
#[cfg(not(feature = "qemu"))]
mod stack {
    /// Nothing to do.
    pub fn paint() {}
    /// Not measured: 0.
    pub fn used() -> u32 {
        0
    }
}

/// The collector's answer to a frame just sent. QEMU has no network: the host reads
/// the frame lines and stands in for the collector, and the semihosting channel
/// cannot lose a line, so the answer is the one a collector that stored the line
/// would send — `accepted`, tagged under the device key — which the uplink checks as
/// it checks any collector's (`Verdict::delivery`).
#[cfg(all(feature = "frames", feature = "qemu"))]
fn collector_answer(
    key: &privq_core::upload::DeviceKey,
    frame: &[u8],
) -> Option<(
    privq_core::upload::Verdict,
    [u8; privq_core::upload::TAG_LEN],
)> {
    let accepted = privq_core::upload::Verdict::Accepted;
    Some((accepted, accepted.tag(key, frame)?))
}

/// On hardware this example firmware has no transport (`emit` sends nothing), so
/// there is no answer: every frame stays queued, and once the outbox is full the
/// device stops releasing (`OutboxFull`) — never acknowledged without a collector.
/// A port wires its radio here and returns the collector's verdict and tag.
#[cfg(all(feature = "frames", not(feature = "qemu")))]
fn collector_answer(
    _key: &privq_core::upload::DeviceKey,
    _frame: &[u8],
) -> Option<(
    privq_core::upload::Verdict,
    [u8; privq_core::upload::TAG_LEN],
)> {
    None
}

/// Writes one raw-report line to semihosting stderr (QEMU); nothing on hardware.
fn emit(line: &[u8]) {
    #[cfg(feature = "qemu")]
    if let Some(err) = stdio::stderr() {
        stdio::write_all(&err, line);
    }
    #[cfg(not(feature = "qemu"))]
    let _ = line;
}

/// Semihosting stdout and stderr (QEMU) as plain descriptors, written with
/// `semihosting::sys::write`, instead of `semihosting::io::{stdout, stderr}`: their writes
/// borrow the descriptor through `BorrowedFd::borrow_raw`, whose `assert!(fd != -1)` is a
/// panic path (`core::panicking`, the panic handler and its location strings in flash);
/// here the same check is an `if`, which the compiler then knows.
#[cfg(feature = "qemu")]
#[allow(unsafe_code)]
mod stdio {
    use semihosting::fd::{BorrowedFd, OwnedFd};
    use semihosting::sys::arm_compat::{OpenMode, sys_open};

    /// Semihosting stdout: `:tt` opened for writing, as `semihosting::io::stdout` does.
    pub fn stdout() -> Option<OwnedFd> {
        sys_open(c":tt", OpenMode::WRONLY_TRUNC).ok()
    }

    /// Semihosting stderr: `:tt` opened for appending, or stdout if that fails, as
    /// `semihosting::io::stderr` does.
    pub fn stderr() -> Option<OwnedFd> {
        sys_open(c":tt", OpenMode::WRONLY_APPEND)
            .ok()
            .or_else(stdout)
    }

    /// `write` in a loop rather than `semihosting`'s `write_all`, whose `&buf[n..]` links
    /// the slice-index panic and with it `core::fmt` integer formatting (about 0.8 KB on
    /// thumbv6m).
    pub fn write_all(fd: &OwnedFd, bytes: &[u8]) {
        let raw = fd.as_raw_fd();
        if raw == -1 {
            return;
        }
        // SAFETY: `raw` is `fd`'s open descriptor (not -1), and `fd` outlives the borrow.
        let fd = unsafe { BorrowedFd::borrow_raw(raw) };
        let mut rest = bytes;
        while let Some(n) = semihosting::sys::write(fd, rest).ok().filter(|&n| n > 0) {
            match rest.get(n..) {
                Some(r) if !r.is_empty() => rest = r,
                _ => break,
            }
        }
    }
}

/// QEMU: the defmt global logger, frames over semihosting stdout (decoded by `defmt-print`
/// in tools/qemu-run.sh). It replaces the `defmt-semihosting` crate, whose `write_all` and
/// panicking lock checks link `core::fmt` (about 0.8 KB of the 16 KiB thumbv6m image).
/// Like it, it masks interrupts from `acquire` to `release` (single core); a nested frame
/// (a panic while a frame is open, logged by the panic handler) is dropped instead of
/// corrupting the open one.
#[cfg(feature = "qemu")]
#[allow(unsafe_code)]
mod semihosting_log {
    use core::ptr::addr_of_mut;

    use semihosting::fd::OwnedFd as Stdout;

    #[defmt::global_logger]
    struct Logger;

    /// The logger's state; touched only with interrupts masked (between `acquire` and
    /// `release`, on the single core).
    struct State {
        taken: bool,
        nested: u8,
        /// Whether interrupts were enabled at `acquire` (restored by `release`).
        restore: bool,
        encoder: defmt::Encoder,
        out: Option<Stdout>,
    }

    static mut STATE: State = State {
        taken: false,
        nested: 0,
        restore: false,
        encoder: defmt::Encoder::new(),
        out: None,
    };

    /// The state. SAFETY (callers): interrupts are masked and no other reference to
    /// `STATE` is live (defmt calls the logger from one context at a time).
    unsafe fn state() -> &'static mut State {
        // SAFETY: see the function's contract.
        unsafe { &mut *addr_of_mut!(STATE) }
    }

    fn put(out: &mut Option<Stdout>, bytes: &[u8]) {
        if let Some(out) = out {
            super::stdio::write_all(out, bytes);
        }
    }

    // SAFETY: `acquire` masks interrupts and marks the logger taken before any frame is
    // started, `release` ends the frame and unmasks them; a nested `acquire` (only a panic
    // inside a frame can cause one, single core, interrupts masked) is counted and its
    // writes and release are dropped, so frames never interleave.
    unsafe impl defmt::Logger for Logger {
        fn acquire() {
            let enabled = super::arch::disable_interrupts();
            // SAFETY: interrupts are masked; this is the only live reference.
            let s = unsafe { state() };
            if s.taken {
                s.nested = s.nested.saturating_add(1);
                return;
            }
            s.taken = true;
            s.restore = enabled;
            if s.out.is_none() {
                s.out = super::stdio::stdout();
            }
            let State { encoder, out, .. } = s;
            encoder.start_frame(|b| put(out, b));
        }

        unsafe fn flush() {}

        unsafe fn release() {
            // SAFETY: called after `acquire`, interrupts masked.
            let s = unsafe { state() };
            if s.nested > 0 {
                s.nested -= 1;
                return;
            }
            if !s.taken {
                return;
            }
            let State { encoder, out, .. } = s;
            encoder.end_frame(|b| put(out, b));
            s.taken = false;
            if s.restore {
                // SAFETY: interrupts were enabled when this frame was acquired.
                unsafe { super::arch::enable_interrupts() };
            }
        }

        unsafe fn write(bytes: &[u8]) {
            // SAFETY: called between `acquire` and `release`, interrupts masked.
            let s = unsafe { state() };
            if s.nested > 0 || !s.taken {
                return;
            }
            let State { encoder, out, .. } = s;
            encoder.write(bytes, |b| put(out, b));
        }
    }
}

/// `(fleet seed, device index)` from the semihosting arguments `fleet=<u64>` and
/// `device=<u64>` (QEMU); both 0 when absent.
#[cfg(feature = "qemu")]
fn device_identity() -> (u64, u64) {
    let (mut fleet, mut device) = (0, 0);
    let mut buf = [0u8; cmdline::CAPACITY];
    if let Some(line) = cmdline::read(&mut buf) {
        let mut next = 0;
        while let Some(arg) = cmdline::next_arg(line, &mut next) {
            if let Some(v) = strip_prefix(arg, b"fleet=").and_then(parse_u64) {
                fleet = v;
            } else if let Some(v) = strip_prefix(arg, b"device=").and_then(parse_u64) {
                device = v;
            }
        }
    }
    (fleet, device)
}

/// `<[u8]>::strip_prefix` without its `split_at`, whose length check the compiler
/// keeps and whose panic links `core::fmt`.
#[cfg(feature = "qemu")]
fn strip_prefix<'a>(bytes: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    if bytes.get(..prefix.len())? == prefix {
        bytes.get(prefix.len()..)
    } else {
        None
    }
}

/// `str::parse::<u64>` on ASCII bytes (optional `+`, at least one digit, no overflow),
/// as a digit loop: `str::parse` links `core::fmt` code through its panics.
#[cfg(feature = "qemu")]
fn parse_u64(digits: &[u8]) -> Option<u64> {
    let digits = strip_prefix(digits, b"+").unwrap_or(digits);
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |acc, &c| {
        let d = c.checked_sub(b'0').filter(|&d| d < 10)?;
        // `acc * 10` overflows exactly when `acc > u64::MAX / 10` (cheaper than
        // `checked_mul`'s 64×64 overflow test on the M0).
        if acc > u64::MAX / 10 {
            return None;
        }
        (acc * 10).checked_add(u64::from(d))
    })
}

/// The semihosting command line (QEMU), read and split like
/// `semihosting::experimental::env::args::<256>` (which links the slice-index panic
/// and so `core::fmt`).
#[cfg(feature = "qemu")]
#[allow(unsafe_code, deprecated)]
mod cmdline {
    use semihosting::sys::arm_compat::{CommandLine, sys_get_cmdline};

    /// Bytes of command line read, including the trailing NUL.
    pub const CAPACITY: usize = 256;

    /// The command line (without the trailing NUL), `None` if it does not fit `buf`
    /// or semihosting fails.
    pub fn read(buf: &mut [u8; CAPACITY]) -> Option<&[u8]> {
        let mut cmd = CommandLine {
            ptr: buf.as_mut_ptr(),
            size: CAPACITY,
        };
        // SAFETY: `cmd.ptr` is valid for writes of `cmd.size` bytes (all of `buf`,
        // borrowed mutably for the call).
        unsafe { sys_get_cmdline(&mut cmd) }.ok()?;
        buf.get(..cmd.size)
    }

    /// The argument starting at `*next` (blank separated; a leading `"` or `'` quotes
    /// up to the matching one), advancing `*next`; `None` at the end. The same
    /// splitting as the `semihosting` crate's `next_from_cmdline`.
    pub fn next_arg<'a>(line: &'a [u8], next: &mut usize) -> Option<&'a [u8]> {
        if *next >= line.len() {
            return None;
        }
        let is_blank = |b: u8| b == b' ' || b == b'\t';
        let mut start = *next;
        let mut end = None;
        let mut delim = 0u8;
        let mut in_argument = false;
        while let Some(&b) = line.get(*next) {
            if !in_argument {
                if is_blank(b) {
                    end = Some(*next);
                    *next += 1;
                    break;
                }
                if b == b'"' || b == b'\'' {
                    delim = b;
                    start += 1;
                }
                in_argument = true;
            } else if delim != 0 {
                if b == delim {
                    end = Some(*next);
                    *next += 2;
                    break;
                }
            } else if is_blank(b) {
                end = Some(*next);
                *next += 1;
                break;
            }
            *next += 1;
        }
        Some(line.get(start..end.unwrap_or(*next)).unwrap_or(&[]))
    }
}

/// Hardware: the device's identity does not matter for the release (it is never
/// sent); 0.
#[cfg(not(feature = "qemu"))]
fn device_identity() -> (u64, u64) {
    (0, 0)
}

/// The upload-frame key: the **QEMU/test-only** key of simulated device `device`.
#[cfg(all(feature = "frames", feature = "qemu"))]
fn device_key(fleet: u64, device: u64) -> Result<privq_core::upload::DeviceKey, AppError> {
    defmt::warn!("QEMU build: test-only frame key, frames are NOT authenticated");
    Ok(privq_firmware::seed::qemu_test_only_device_key(
        fleet, device,
    ))
}

/// The upload-frame key, provisioned per device. This generic example targets no
/// particular board, so it has none and the firmware refuses to run.
#[cfg(all(feature = "frames", not(feature = "qemu")))]
fn device_key(_fleet: u64, _device: u64) -> Result<privq_core::upload::DeviceKey, AppError> {
    defmt::error!("no provisioned frame key for this board: refusing to run");
    Err(AppError::NoDeviceKey)
}

/// The RNG that noises releases.
#[cfg(feature = "qemu")]
fn release_rng(fleet: u64, device: u64) -> Result<privq_core::rng::ChaCha12, AppError> {
    defmt::warn!("QEMU build: fixed test-only seed, released values are NOT private");
    Ok(privq_firmware::seed::fleet_device_rng(fleet, device))
}

/// The RNG that noises releases: seeded from the board's entropy source.
#[cfg(not(feature = "qemu"))]
fn release_rng(_fleet: u64, _device: u64) -> Result<privq_core::rng::ChaCha12, AppError> {
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
        arch::sleep_forever()
    }
}

/// QEMU: a panic logs where it happened (defmt) and exits with status 101.
/// (panic-probe would execute `udf`, which QEMU turns into an endless HardFault loop.)
/// The message is not formatted: that would link `core::fmt` (kilobytes of flash).
#[cfg(feature = "qemu")]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    match info.location() {
        Some(l) => defmt::error!("panicked at {=str}:{=u32}", l.file(), l.line()),
        None => defmt::error!("panicked"),
    }
    semihosting::process::exit(101)
}

/// QEMU: `defmt::panic!` has already logged its message; just exit non-zero.
#[cfg(feature = "qemu")]
#[defmt::panic_handler]
fn defmt_panic() -> ! {
    semihosting::process::exit(101)
}

/// What differs between the architectures: the core's registers and instructions, and
/// on RISC-V without `qemu` the panic handler (panic-probe is Cortex-M only).
#[cfg(target_arch = "arm")]
#[allow(unsafe_code)]
mod arch {
    pub use cortex_m::singleton;

    /// Masks interrupts; returns whether they were enabled.
    #[cfg(feature = "qemu")]
    pub fn disable_interrupts() -> bool {
        let enabled = cortex_m::register::primask::read().is_inactive();
        cortex_m::interrupt::disable();
        enabled
    }

    /// Unmasks interrupts. SAFETY (callers): not inside a critical section that relies on
    /// them staying masked.
    #[cfg(feature = "qemu")]
    pub unsafe fn enable_interrupts() {
        // SAFETY: see the function's contract.
        unsafe { cortex_m::interrupt::enable() }
    }

    /// The current stack pointer.
    #[cfg(feature = "qemu")]
    pub fn stack_pointer() -> usize {
        cortex_m::register::msp::read() as usize
    }

    /// Sleeps until the next interrupt, forever.
    #[cfg(not(feature = "qemu"))]
    pub fn sleep_forever() -> ! {
        loop {
            cortex_m::asm::wfi();
        }
    }
}

/// RISC-V (riscv32imc): machine mode, one hart.
#[cfg(target_arch = "riscv32")]
#[allow(unsafe_code)]
mod arch {
    /// `riscv::singleton!` with cortex-m's layout: the value in a `MaybeUninit` (in .bss)
    /// and a separate flag. riscv's own keeps an `Option<T>` whose `None` is not all zero
    /// bytes, so a 512-byte simulated flash put its initial value in .data (flash).
    macro_rules! singleton {
        (: $ty:ty = $expr:expr) => {
            riscv::interrupt::free(|| {
                static mut TAKEN: bool = false;
                static mut VAR: core::mem::MaybeUninit<$ty> = core::mem::MaybeUninit::uninit();
                // SAFETY: interrupts are masked on the only hart, so nothing else runs
                // this block meanwhile; `TAKEN` hands out the `&'static mut` only once.
                #[allow(unsafe_code)]
                let taken = unsafe { core::ptr::replace(core::ptr::addr_of_mut!(TAKEN), true) };
                if taken {
                    None
                } else {
                    let value = $expr;
                    // SAFETY: as above; the first and only reference to `VAR`.
                    #[allow(unsafe_code)]
                    Some(unsafe { (*core::ptr::addr_of_mut!(VAR)).write(value) })
                }
            })
        };
    }
    pub(crate) use singleton;

    /// Masks machine-mode interrupts; returns whether they were enabled.
    #[cfg(feature = "qemu")]
    pub fn disable_interrupts() -> bool {
        let enabled = riscv::register::mstatus::read().mie();
        riscv::interrupt::disable();
        enabled
    }

    /// Unmasks machine-mode interrupts. SAFETY (callers): not inside a critical section
    /// that relies on them staying masked.
    #[cfg(feature = "qemu")]
    pub unsafe fn enable_interrupts() {
        // SAFETY: see the function's contract.
        unsafe { riscv::interrupt::enable() }
    }

    /// The current stack pointer.
    #[cfg(feature = "qemu")]
    pub fn stack_pointer() -> usize {
        let sp: usize;
        // SAFETY: copies the stack pointer into a register; no memory is touched.
        unsafe { core::arch::asm!("mv {}, sp", out(reg) sp, options(nomem, nostack)) };
        sp
    }

    /// Sleeps until the next interrupt, forever.
    #[cfg(not(feature = "qemu"))]
    pub fn sleep_forever() -> ! {
        loop {
            riscv::asm::wfi();
        }
    }

    /// Hardware: a panic stops here (no debugger protocol assumed; defmt-rtt has the log).
    #[cfg(not(feature = "qemu"))]
    #[panic_handler]
    fn panic(_: &core::panic::PanicInfo) -> ! {
        sleep_forever()
    }
}

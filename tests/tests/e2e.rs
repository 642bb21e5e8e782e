//! Device → host, end to end.
//!
//! A fleet of [`DEVICES`] simulated devices runs the **firmware's own code**
//! (`privq_firmware::app::Device`: per-device synthetic I²C sensor, 64-bin histogram,
//! budget ledger in simulated flash, the configured local randomizer, core wire
//! format), each with the release RNG of device `i` in fleet [`FLEET_SEED`] — the
//! host simulator's `device_rng` seeding, reused exactly. Then:
//!
//! * [`firmware_fleet_matches_the_host_simulator_and_the_truth`] (host only, part of
//!   `cargo test`): the firmware pipeline's reports are byte-identical to
//!   `privq_host::ldp::fleet::Fleet::privatize` for the same items and seed, for OUE,
//!   GRR, OLH and Hadamard response; the host decodes and aggregates them, and every
//!   bin's estimate lies within its stated confidence interval around the true
//!   histogram of the devices' items (Bonferroni-simultaneous 99 % intervals for all
//!   64 bins, and the per-bin 95 % intervals cover at least 56 of the 64 bins).
//! * [`qemu_devices_match_the_host`] (`#[ignore]`d: it needs the firmware ELFs, which
//!   `tools/test-all.sh` builds and passes in `PRIVQ_E2E_ELFS`): a sample of devices
//!   runs in QEMU on Cortex-M0, Cortex-M4F and RISC-V (riscv32imc); every raw report they emit on
//!   semihosting stderr must be byte-identical to the host run of the same device
//!   (all five epochs, including the ledger refusing the fifth), the epoch-0 reports
//!   are put in place of the host-simulated ones and the fleet is aggregated again.
//!
//!   Firmware built with feature `ntc` (labels containing `ntc`) reads a simulated
//!   thermistor through an ADC and converts with micromath in `f32`: its reports must be
//!   byte-identical to the host's run of the same sensor (soft-float Cortex-M0,
//!   FPU Cortex-M4F and x86-64 agree bit for bit).
//!   Firmware built with feature `frames` (labels containing `frames`) also sends every
//!   report inside HMAC-SHA-256-authenticated upload frames (`privq-frame` lines); the
//!   host verifies each frame with the device's test-only key (derived here
//!   independently of the firmware), requires sequence numbers 0, 1, 2, … with no gap
//!   or repeat, each frame's epoch to match its reports' query ids, and the reports in
//!   the frames to equal, in order, the reports checked above.
//!
//! Both fail the run on any byte difference or estimate outside its interval.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use privq_core::Epsilon;
use privq_core::ledger::Ledger;
use privq_core::local::{Grr, HadamardResponse, Olh, QueryId, UeVariant, UnaryEncoding};
use privq_core::report::decode;
use privq_core::upload::DeviceKey;
use privq_firmware::app::{BINS, CountingDelay, Device, EmitTo, EpochOutcome};
use privq_firmware::release::{
    BinFractions, EpochRelease, ModalBin, epoch_epsilon, lifetime_epsilon,
};
use privq_firmware::seed::fleet_device_rng;
use privq_firmware::sensor::{
    DEFAULT_ADDRESS, NTC_10K_B3950, NTC_ADC_ADDRESS, NtcSensor, TempSensor, Thermometer,
};
use privq_firmware::store::{FlashLedgerStore, SimFlash};
use privq_firmware::synthetic::{SyntheticNtcBus, SyntheticSensorBus};
use privq_firmware::wire;
use privq_host::ldp::aggregate::Aggregator;
use privq_host::ldp::fleet::{Fleet, MechanismSpec, device_rng};
use privq_host::ldp::upload::{Admission, SeenFrames, VerifiedFrame, verify_frame};
use rand_core::Rng;

/// The fleet seed (QEMU/test only: fixed seeds are not private).
const FLEET_SEED: u64 = 20_261_121;

/// Devices in the simulated fleet.
const DEVICES: usize = 40_000;

/// Epochs the firmware runs (`EPOCHS` in firmware/src/main.rs): one more than the
/// lifetime budget covers.
const EPOCHS: u16 = 5;

/// Bytes of simulated flash (`FLASH_BYTES` in firmware/src/main.rs).
const FLASH_BYTES: usize = 512;

/// Devices run in QEMU on each target.
const QEMU_DEVICES: [u64; 8] = [0, 1, 2, 3, 4, 5, 17_077, 39_999];

/// What one device emitted over its run: its epoch-0 item, its reports (query id,
/// bytes) and the epochs the ledger refused.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DeviceRun {
    item: u32,
    reports: Vec<(u16, Vec<u8>)>,
    refused: Vec<u16>,
}

/// Runs device `device` of the fleet for `epochs` epochs exactly as the firmware's
/// `main` does, with release policy `release`; with `ntc`, the temperature comes from
/// the simulated thermistor (firmware feature `ntc`), converted with micromath.
fn run_device<E: EpochRelease>(release: E, device: u64, epochs: u16, ntc: bool) -> DeviceRun {
    if ntc {
        let sensor = NtcSensor::new(
            SyntheticNtcBus::for_device(device, NTC_10K_B3950),
            NTC_ADC_ADDRESS,
            NTC_10K_B3950,
        );
        run_with(sensor, release, device, epochs)
    } else {
        let sensor = TempSensor::new(SyntheticSensorBus::for_device(device), DEFAULT_ADDRESS);
        run_with(sensor, release, device, epochs)
    }
}

fn run_with<T: Thermometer, E: EpochRelease>(
    sensor: T,
    release: E,
    device: u64,
    epochs: u16,
) -> DeviceRun {
    let ledger = Ledger::open(
        FlashLedgerStore::new(SimFlash::<FLASH_BYTES>::new()),
        lifetime_epsilon().unwrap(),
    )
    .unwrap();
    let mut dev = Device::new(
        sensor,
        CountingDelay::default(),
        ledger,
        fleet_device_rng(FLEET_SEED, device),
        release,
    )
    .unwrap();
    let mut run = DeviceRun {
        item: u32::MAX,
        reports: Vec::new(),
        refused: Vec::new(),
    };
    for epoch in 0..epochs {
        let mut emitted = Vec::new();
        let outcome = dev
            .run_epoch(
                epoch,
                |_, _| {},
                &mut EmitTo(|q: QueryId, r: &[u8]| emitted.push((q.0, r.to_vec()))),
            )
            .unwrap();
        match outcome {
            EpochOutcome::Released { item, .. } => {
                if epoch == 0 {
                    run.item = item;
                }
            }
            EpochOutcome::Refused(_) => run.refused.push(epoch),
        }
        run.reports.extend(emitted);
    }
    run
}

fn eps() -> Epsilon {
    epoch_epsilon().unwrap()
}

/// Runs `device` with the release of mechanism `name` (as written in report headers).
fn run_named(name: &str, device: u64, epochs: u16) -> DeviceRun {
    run_named_with(name, device, epochs, false)
}

/// [`run_named`], with the thermistor sensor when `ntc`.
fn run_named_with(name: &str, device: u64, epochs: u16, ntc: bool) -> DeviceRun {
    let d = BINS as u32;
    match name {
        "oue" => run_device(
            ModalBin(UnaryEncoding::new(UeVariant::Optimized, eps(), d).unwrap()),
            device,
            epochs,
            ntc,
        ),
        "grr" => run_device(ModalBin(Grr::new(eps(), d).unwrap()), device, epochs, ntc),
        "olh" => run_device(ModalBin(Olh::new(eps(), d).unwrap()), device, epochs, ntc),
        "hr" => run_device(
            ModalBin(HadamardResponse::new(eps(), d).unwrap()),
            device,
            epochs,
            ntc,
        ),
        "sq-laplace" => run_device(BinFractions::new(eps()).unwrap(), device, epochs, ntc),
        other => panic!("no firmware release for mechanism {other}"),
    }
}

/// The epoch-0 items of the whole fleet, from the firmware pipeline (OUE).
fn fleet_items() -> Vec<u32> {
    (0..DEVICES as u64)
        .map(|d| run_named("oue", d, 1).item)
        .collect()
}

/// Per-bin results of comparing estimates with the truth.
#[derive(Debug)]
struct Accuracy {
    max_abs_error: f64,
    max_error_over_half_width: f64,
    covered_95: usize,
    outside_simultaneous_99: Vec<usize>,
}

/// Aggregates back-to-back `reports` and compares every bin with `truth`.
fn aggregate_and_compare(reports: &[u8], report_len: usize, truth: &[f64]) -> Accuracy {
    let mut chunks = reports.chunks_exact(report_len);
    let first = chunks.next().unwrap();
    let mut agg = Aggregator::for_report(first).unwrap();
    for r in reports.chunks_exact(report_len) {
        agg.ingest_bytes(r).unwrap();
    }
    assert_eq!(agg.n() as usize, reports.len() / report_len);
    let per_95 = agg.frequencies(0.95).unwrap();
    let simultaneous = agg.frequencies(1.0 - 0.01 / BINS as f64).unwrap();
    let mut acc = Accuracy {
        max_abs_error: 0.0,
        max_error_over_half_width: 0.0,
        covered_95: 0,
        outside_simultaneous_99: Vec::new(),
    };
    for (bin, (&t, (e95, e99))) in truth
        .iter()
        .zip(per_95.items.iter().zip(&simultaneous.items))
        .enumerate()
    {
        let err = (e95.value - t).abs();
        acc.max_abs_error = acc.max_abs_error.max(err);
        acc.max_error_over_half_width = acc
            .max_error_over_half_width
            .max(err / (e95.ci_high - e95.value));
        acc.covered_95 += usize::from(e95.covers(t));
        if !e99.covers(t) {
            acc.outside_simultaneous_99.push(bin);
        }
    }
    acc
}

fn check_accuracy(name: &str, acc: &Accuracy, n: usize) {
    println!(
        "e2e {name}: n={n}, max |estimate - truth| = {:.5}, max |error| / 95% half-width = {:.3}, \
         95% intervals cover {}/{BINS} bins, outside the simultaneous 99% intervals: {:?}",
        acc.max_abs_error,
        acc.max_error_over_half_width,
        acc.covered_95,
        acc.outside_simultaneous_99
    );
    assert!(
        acc.outside_simultaneous_99.is_empty(),
        "{name}: bins outside their simultaneous 99% intervals: {:?}",
        acc.outside_simultaneous_99
    );
    assert!(
        acc.covered_95 >= 56,
        "{name}: per-bin 95% intervals cover only {}/{BINS} bins",
        acc.covered_95
    );
}

fn true_frequencies(items: &[u32]) -> Vec<f64> {
    Fleet::from_items(items.to_vec(), BINS as u32).true_frequencies()
}

#[test]
fn firmware_and_host_seed_device_rngs_identically() {
    for (fleet, device) in [(0, 0), (FLEET_SEED, 7), (u64::MAX, u64::MAX - 1)] {
        let mut a = fleet_device_rng(fleet, device);
        let mut b = device_rng(fleet, device);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }
}

#[test]
fn firmware_fleet_matches_the_host_simulator_and_the_truth() {
    let items = fleet_items();
    let truth = true_frequencies(&items);
    let occupied = truth.iter().filter(|&&f| f > 0.0).count();
    println!("e2e fleet: {DEVICES} devices, items in {occupied} of {BINS} bins");
    assert!(occupied >= 20, "the fleet should spread over many bins");
    let fleet = Fleet::from_items(items.clone(), BINS as u32);
    for name in ["oue", "grr", "olh", "hr"] {
        let spec = MechanismSpec::parse(name, eps(), BINS as u32).unwrap();
        let batch = fleet.privatize(&spec, FLEET_SEED).unwrap();
        // Byte identity of the firmware pipeline and the host simulator (a sample of
        // devices for the non-default mechanisms, the whole fleet for OUE).
        let checked = if name == "oue" { DEVICES } else { 2_000 };
        for (device, host_report) in batch.iter().enumerate().take(checked) {
            let run = run_named(name, device as u64, 1);
            assert_eq!(run.item, items[device]);
            assert_eq!(run.reports.len(), 1);
            assert_eq!(
                run.reports[0].1, host_report,
                "{name}: device {device}: firmware and host reports differ"
            );
        }
        let acc = aggregate_and_compare(batch.bytes(), batch.report_len(), &truth);
        check_accuracy(name, &acc, DEVICES);
    }
}

#[test]
fn a_device_run_spends_its_budget_then_is_refused() {
    for name in ["oue", "grr", "olh", "hr", "sq-laplace"] {
        let run = run_named(name, 11, EPOCHS);
        assert_eq!(run.refused, vec![EPOCHS - 1], "{name}");
        let per_epoch = if name == "sq-laplace" { BINS } else { 1 };
        assert_eq!(run.reports.len(), 4 * per_epoch, "{name}");
        for (q, r) in &run.reports {
            let report = decode(r).unwrap();
            assert_eq!(report.header.query.0, *q);
            assert_eq!(report.header.mechanism.name(), name);
        }
    }
}

/// One QEMU target of the sample.
struct Target {
    label: String,
    qemu: &'static str,
    machine: &'static str,
    cpu: &'static str,
    elf: PathBuf,
}

/// `PRIVQ_E2E_ELFS`: whitespace-separated `label=path` pairs; the label starts with
/// `m0` (QEMU microbit, Cortex-M0), `m4f` (mps2-an386, Cortex-M4F) or `rv32` (virt,
/// an RV32IMC core), e.g. `m0=target/…/privq-firmware m4f=… m0-grr=… rv32=…`.
fn targets() -> Vec<Target> {
    let spec = std::env::var("PRIVQ_E2E_ELFS")
        .expect("set PRIVQ_E2E_ELFS to the firmware ELFs (tools/test-all.sh does)");
    spec.split_whitespace()
        .map(|pair| {
            let (label, path) = pair
                .split_once('=')
                .unwrap_or_else(|| panic!("PRIVQ_E2E_ELFS entry {pair:?} is not label=path"));
            let (qemu, machine, cpu) = if label.starts_with("m0") {
                ("qemu-system-arm", "microbit", "cortex-m0")
            } else if label.starts_with("m4f") {
                ("qemu-system-arm", "mps2-an386", "cortex-m4")
            } else if label.starts_with("rv32") {
                // The core of the riscv32imc runner in .cargo/config.toml: I, M, C only.
                (
                    "qemu-system-riscv32",
                    "virt",
                    "rv32,a=false,zawrs=false,f=false,d=false,zfa=false",
                )
            } else {
                panic!("unknown target label {label} (m0…, m4f… or rv32…)")
            };
            Target {
                label: label.to_string(),
                qemu,
                machine,
                cpu,
                elf: PathBuf::from(path),
            }
        })
        .collect()
}

/// The test-only frame key of `device` (docs/src/upload-frame.md), spelled out here rather
/// than taken from the firmware: fleet (8 bytes LE) ‖ device (8 bytes LE) ‖ the label.
fn test_only_key(fleet: u64, device: u64) -> DeviceKey {
    let mut k = Vec::with_capacity(32);
    k.extend_from_slice(&fleet.to_le_bytes());
    k.extend_from_slice(&device.to_le_bytes());
    k.extend_from_slice(b"NOT-A-REAL-KEY!!");
    DeviceKey::new(k.try_into().unwrap())
}

#[test]
fn the_firmware_derives_the_documented_test_key() {
    for (fleet, device) in [(0, 0), (FLEET_SEED, 7), (u64::MAX, 3)] {
        assert_eq!(
            privq_firmware::seed::qemu_test_only_device_key(fleet, device),
            test_only_key(fleet, device)
        );
    }
}

/// What a QEMU run of the firmware printed.
struct QemuRun {
    mechanism: String,
    /// Verified upload frames, in the order printed.
    frames: Vec<VerifiedFrame>,
    /// Their `privq-frame` lines, as printed.
    frame_lines: Vec<String>,
    reports: Vec<(u16, Vec<u8>)>,
    refused: Vec<u16>,
    defmt_report_lines: usize,
    stack: u64,
}

fn run_qemu(target: &Target, device: u64) -> QemuRun {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(root.join("tools/qemu-run.sh"))
        .current_dir(&root)
        .args([target.qemu, target.machine, target.cpu])
        .arg(&target.elf)
        .arg(format!("fleet={FLEET_SEED}"))
        .arg(format!("device={device}"))
        .env("QEMU_TIMEOUT", "60")
        .output()
        .expect("cannot run tools/qemu-run.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{} device {device}: QEMU run failed ({})\n{stdout}\n{stderr}",
        target.label,
        out.status
    );
    let mut run = QemuRun {
        mechanism: String::new(),
        frames: Vec::new(),
        frame_lines: Vec::new(),
        reports: Vec::new(),
        refused: Vec::new(),
        defmt_report_lines: stdout.matches("report query").count(),
        stack: 0,
    };
    let mut done = false;
    for line in stderr.lines() {
        let same_device = wire::field_u64(line, "fleet") == Some(FLEET_SEED)
            && wire::field_u64(line, "device") == Some(device);
        if line.starts_with("privq-") {
            assert!(
                same_device,
                "{}: line for another device: {line}",
                target.label
            );
        }
        if line.starts_with("privq-report ") {
            let query = wire::field_u64(line, "query").unwrap() as u16;
            let mut bytes = [0u8; 64];
            let n = wire::decode_hex(wire::field(line, "hex").unwrap(), &mut bytes).unwrap();
            run.reports.push((query, bytes[..n].to_vec()));
        } else if line.starts_with("privq-frame ") {
            let hex = wire::field(line, "hex").unwrap();
            let mut bytes = vec![0u8; hex.len() / 2];
            let n = wire::decode_hex(hex, &mut bytes).unwrap();
            let frame = verify_frame(&bytes[..n], |d| {
                (d == device).then(|| test_only_key(FLEET_SEED, device))
            })
            .unwrap_or_else(|e| {
                panic!(
                    "{} device {device}: frame rejected ({e}): {line}",
                    target.label
                )
            });
            assert_eq!(wire::field_u64(line, "epoch"), Some(u64::from(frame.epoch)));
            assert_eq!(
                wire::field_u64(line, "seq"),
                Some(u64::from(frame.sequence))
            );
            run.frames.push(frame);
            run.frame_lines.push(line.to_string());
        } else if line.starts_with("privq-refused ") {
            assert_eq!(wire::field(line, "reason"), Some("budget-exhausted"));
            run.refused
                .push(wire::field_u64(line, "epoch").unwrap() as u16);
        } else if line.starts_with("privq-done ") {
            run.mechanism = wire::field(line, "mechanism").unwrap().to_string();
            run.stack = wire::field_u64(line, "stack").unwrap();
            assert_eq!(
                wire::field_u64(line, "released"),
                Some(run.reports.len() as u64)
            );
            done = true;
        }
    }
    assert!(
        done,
        "{} device {device}: no privq-done line\n{stderr}",
        target.label
    );
    check_frames(target, device, &run);
    run
}

/// Frames (labels with `frames`): numbered 0, 1, 2, … without gap or repeat, admitted
/// once each, epochs matching their reports' query ids, and together exactly the
/// reports of the `privq-report` lines, in order. Other builds send no frame.
fn check_frames(target: &Target, device: u64, run: &QemuRun) {
    let who = format!("{} device {device}", target.label);
    if !target.label.contains("frames") {
        assert!(
            run.frames.is_empty(),
            "{who}: frames from a build without them"
        );
        return;
    }
    assert!(!run.frames.is_empty(), "{who}: no privq-frame line");
    let mut seen = SeenFrames::default();
    let mut framed = Vec::new();
    for (i, f) in run.frames.iter().enumerate() {
        assert_eq!(f.sequence, i as u32, "{who}: sequence numbers 0, 1, 2, …");
        assert_eq!(seen.admit(f), Admission::New, "{who}: replayed frame");
        for r in &f.reports {
            let query = decode(r).unwrap().header.query.0;
            let epoch = if run.mechanism == "sq-laplace" {
                u32::from(query) / BINS as u32
            } else {
                u32::from(query)
            };
            assert_eq!(
                epoch, f.epoch,
                "{who}: report of another epoch in the frame"
            );
            framed.push((query, r.clone()));
        }
    }
    assert_eq!(
        framed, run.reports,
        "{who}: framed reports differ from the report lines"
    );
}

#[test]
#[ignore = "needs the firmware ELFs in PRIVQ_E2E_ELFS (tools/test-all.sh builds them)"]
fn qemu_devices_match_the_host() {
    let targets = targets();
    assert!(!targets.is_empty());
    // Every (target, device) run, two at a time (the machine has two cores).
    let jobs: Vec<(usize, u64)> = (0..targets.len())
        .flat_map(|t| {
            // The non-default configurations get a shorter sample (frames of the
            // default mechanism get the full one).
            let full = [
                "m0",
                "m4f",
                "rv32",
                "m0-frames",
                "m4f-frames",
                "m0-ntc",
                "m4f-ntc",
            ];
            let n = if !full.contains(&targets[t].label.as_str()) {
                2
            } else {
                QEMU_DEVICES.len()
            };
            QEMU_DEVICES[..n].iter().map(move |&d| (t, d))
        })
        .collect();
    let runs: Vec<((usize, u64), QemuRun)> = std::thread::scope(|s| {
        let (a, b) = jobs.split_at(jobs.len() / 2);
        let targets = &targets;
        let handles: Vec<_> = [a, b]
            .into_iter()
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|&(t, d)| ((t, d), run_qemu(&targets[t], d)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });

    let items = fleet_items();
    let fleet = Fleet::from_items(items.clone(), BINS as u32);
    let spec = MechanismSpec::parse("oue", eps(), BINS as u32).unwrap();
    let batch = fleet.privatize(&spec, FLEET_SEED).unwrap();
    let len = batch.report_len();
    let mut merged = batch.bytes().to_vec();
    let mut identical = 0;
    let mut per_target: BTreeMap<String, (usize, usize, u64)> = BTreeMap::new();
    let mut frames = 0;
    for ((t, device), qemu) in &runs {
        let target = &targets[*t];
        let ntc = target.label.contains("ntc");
        let host = run_named_with(&qemu.mechanism, *device, EPOCHS, ntc);
        assert_eq!(
            qemu.reports, host.reports,
            "{} device {device} ({}): QEMU reports differ from the host's",
            target.label, qemu.mechanism
        );
        assert_eq!(
            qemu.refused, host.refused,
            "{} device {device}",
            target.label
        );
        assert_eq!(qemu.refused, vec![EPOCHS - 1], "the fifth epoch is refused");
        assert_eq!(
            qemu.defmt_report_lines,
            qemu.reports.len(),
            "{} device {device}: every report is also in the defmt log",
            target.label
        );
        identical += qemu.reports.len();
        frames += qemu.frames.len();
        let entry = per_target.entry(target.label.clone()).or_default();
        entry.0 += 1;
        entry.1 += qemu.reports.len();
        entry.2 = entry.2.max(qemu.stack);
        if qemu.mechanism == "oue" && !ntc {
            // The epoch-0 report is also the host simulator's report of this device.
            let i = *device as usize;
            let (_, epoch0) = &qemu.reports[0];
            assert_eq!(epoch0.as_slice(), &batch.bytes()[i * len..(i + 1) * len]);
            merged[i * len..(i + 1) * len].copy_from_slice(epoch0);
        }
    }
    for (label, (devices, reports, stack)) in &per_target {
        println!(
            "e2e-qemu {label}: {devices} devices, {reports} reports byte-identical to the host, \
             max stack {stack} B"
        );
    }
    let acc = aggregate_and_compare(&merged, len, &true_frequencies(&items));
    check_accuracy("oue (fleet with the QEMU devices' reports)", &acc, DEVICES);
    println!(
        "e2e-qemu: {} runs on {} targets, {identical} reports, all byte-identical to the host",
        runs.len(),
        targets.len()
    );
    println!(
        "e2e-qemu frames: {frames} upload frames verified (HMAC-SHA-256, test-only keys), \
         their reports equal to the report lines"
    );
    // One collector per mechanism: a device id runs one firmware in a real fleet.
    let mut framed: BTreeMap<&str, Vec<&QemuRun>> = BTreeMap::new();
    for (_, q) in &runs {
        if !q.frame_lines.is_empty() {
            framed.entry(q.mechanism.as_str()).or_default().push(q);
        }
    }
    assert!(!framed.is_empty(), "no QEMU run sent upload frames");
    for (mechanism, runs) in framed {
        upload_to_collector(mechanism, &runs);
    }
}

/// `PRIVQ_SERVE_BIN`: a `privq` binary built with feature `serve`.
fn serve_bin() -> PathBuf {
    PathBuf::from(std::env::var("PRIVQ_SERVE_BIN").expect(
        "set PRIVQ_SERVE_BIN to a privq binary built with --features serve (tools/test-all.sh does)",
    ))
}

/// `GET path` from the collector at `addr` (HTTP/1.1, connection closed after):
/// the body parsed, and as text.
fn http_get(addr: &str, path: &str) -> (serde_json::Value, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).unwrap();
    let text = String::from_utf8(answer).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    (serde_json::from_str(body).unwrap(), body.to_string())
}

/// The upload frames of the QEMU devices running `mechanism`, sent to a running
/// `privq serve` on loopback by `privq serve upload` (the `privq-frame` lines as
/// the firmware printed them, each device's frames from every target that ran it:
/// the repeats are byte-identical, so the collector acknowledges them as
/// duplicates). The collector's estimates must equal, group by group, the
/// in-process aggregation of the host simulation of the same devices.
fn upload_to_collector(mechanism: &str, runs: &[&QemuRun]) {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let bin = serve_bin();
    let dir = std::env::temp_dir().join(format!(
        "privq-e2e-serve-{mechanism}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("collector.db");
    // The devices in upload order (the collector's order within each group).
    let mut devices: Vec<u64> = Vec::new();
    let mut log = String::new();
    for run in runs {
        let device = run.frames[0].device;
        if !devices.contains(&device) {
            devices.push(device);
        }
        for line in &run.frame_lines {
            log.push_str(line);
            log.push('\n');
        }
    }
    let frames_file = dir.join("frames.log");
    std::fs::write(&frames_file, &log).unwrap();
    for &device in &devices {
        let mut p = Command::new(&bin)
            .args(["serve", "provision", "--allow-test-key", "--key-file", "-"])
            .arg("--device")
            .arg(device.to_string())
            .arg("--cap")
            .arg(lifetime_epsilon().unwrap().to_string())
            .arg("--db")
            .arg(&db)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let key = test_only_key(FLEET_SEED, device);
        let hex: String = key.as_bytes().iter().map(|b| format!("{b:02x}")).collect();
        writeln!(p.stdin.take().unwrap(), "{hex}").unwrap();
        assert!(p.wait().unwrap().success(), "provision device {device}");
    }
    /// Kills the collector however the test ends.
    struct Server(std::process::Child);
    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut server = Command::new(&bin)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--allow-test-keys",
            "--quiet",
        ])
        .arg("--db")
        .arg(&db)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map(Server)
        .unwrap();
    let mut lines = BufReader::new(server.0.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("privq serve exited").unwrap();
        if let Some(rest) = line.strip_prefix("privq serve: listening on ") {
            break rest.split(' ').next().unwrap().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    let out = Command::new(&bin)
        .args(["serve", "upload", "--server", &addr])
        .arg(&frames_file)
        .output()
        .unwrap();
    let summary = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "privq serve upload: {summary}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (collector, text) = http_get(&addr, "/v1/estimates?confidence=0.95");
    drop(server);
    // Each distinct frame accepted once, every repeat a duplicate.
    let distinct: std::collections::BTreeSet<&str> = log.lines().collect();
    // Every run of a mechanism releases the same number of reports.
    let stored = runs[0].reports.len() * devices.len();
    let want = format!(
        "{} accepted ({stored} reports), {} duplicate, 0 rejected, 0 refused",
        distinct.len(),
        log.lines().count() - distinct.len()
    );
    assert!(summary.contains(&want), "{summary} (expected {want})");

    // The host simulation of the same devices, aggregated in process.
    let mut host = BTreeMap::new();
    let mut rejected = privq_host::ldp::decode::RejectCounts::default();
    let reports: Vec<Vec<u8>> = devices
        .iter()
        .flat_map(|&device| {
            run_named(mechanism, device, EPOCHS)
                .reports
                .into_iter()
                .map(|(_, r)| r)
        })
        .collect();
    let accepted = privq_host::ldp::aggregate::ingest_grouped(
        &mut host,
        reports.iter().map(Vec::as_slice),
        &mut rejected,
    );
    assert_eq!(rejected.total(), 0);
    assert_eq!(collector["reports"], accepted, "{collector}");
    let groups = collector["groups"].as_array().unwrap();
    assert_eq!(groups.len(), host.len(), "{collector}");
    for (kind, agg) in &host {
        let want = serde_json::to_value(kind).unwrap();
        let got = groups
            .iter()
            .find(|g| g["kind"] == want)
            .unwrap_or_else(|| panic!("no group {want} at the collector"));
        assert_eq!(got["n"], agg.n(), "{want}");
        // The host's estimates, printed as the collector prints its own, must appear
        // in its answer verbatim: the shortest round-trip form of an f64 is unique,
        // so equal text is equal bits (parsed numbers could hide an ulp).
        let (frequencies, mean) = (agg.frequencies(0.95), agg.mean(0.95));
        assert!(frequencies.is_ok() || mean.is_ok(), "{want}");
        let printed = match (&frequencies, &mean) {
            (Ok(f), _) => format!("\"frequencies\":{}", serde_json::to_string(f).unwrap()),
            (_, Ok(m)) => format!("\"mean\":{}", serde_json::to_string(m).unwrap()),
            _ => unreachable!(),
        };
        assert!(
            text.contains(&printed),
            "{want}: the collector's estimates differ from {printed}"
        );
        let finite = |e: &privq_host::ldp::estimate::Estimate| {
            [e.value, e.variance, e.ci_low, e.ci_high]
                .iter()
                .all(|x| x.is_finite())
        };
        if let Ok(f) = &frequencies {
            assert!(f.items.iter().all(finite), "{want}: a non-finite estimate");
        }
        if let Ok(m) = &mean {
            assert!(finite(&m.estimate), "{want}: a non-finite mean");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "e2e-qemu collector {mechanism}: {} frames of {} QEMU runs ({} devices) sent to privq \
         serve: {}; {} groups, estimates equal to the host simulation's",
        log.lines().count(),
        runs.len(),
        devices.len(),
        summary.trim(),
        host.len()
    );
}

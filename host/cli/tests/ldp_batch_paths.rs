//! The batched multi-kind aggregation path of `privq ldp aggregate`
//! ([`ingest_grouped`]) against the report-at-a-time loop it replaced, on mixed
//! inputs with malformed and mismatched reports: identical states, estimates
//! and rejection counts; and `privq ldp aggregate` with a campaign on the same
//! file gives the one-by-one estimates of the campaign's reports and rejects
//! every other frame with its reason.

use std::collections::BTreeMap;

use privq_core::local::{LocalRandomizer, QueryId, SqLaplace, UnitValue};
use privq_host::Epsilon;
use privq_host::ldp::aggregate::{Aggregator, ReportKind, ingest_grouped};
use privq_host::ldp::decode::{RejectCounts, RejectReason, decode_report};
use privq_host::ldp::fleet::{Fleet, MechanismSpec, default_distribution};
use privq_host::ldp::frames;
use rand_chacha::ChaCha12Rng;
use rand_core::{Rng, SeedableRng};

fn eps(num: u64, den: u64) -> Epsilon {
    Epsilon::new(num, den).unwrap()
}

/// Reports of `mechanism` over `d` items from `n` simulated devices.
fn fleet_reports(mechanism: &str, e: Epsilon, d: u32, n: usize, seed: u64) -> Vec<Vec<u8>> {
    let spec = MechanismSpec::parse(mechanism, e, d).unwrap();
    Fleet::from_weights(&default_distribution(d), n)
        .unwrap()
        .privatize(&spec, seed)
        .unwrap()
        .iter()
        .map(<[u8]>::to_vec)
        .collect()
}

/// SQ-Laplace reports with noisy values for query `query`.
fn laplace_reports(n: usize, query: u16, seed: u64) -> Vec<Vec<u8>> {
    let sq = SqLaplace::new(eps(1, 1)).unwrap();
    let mut rng = ChaCha12Rng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            let v = UnitValue::from_fraction(i as u64 % 7, 6).unwrap_or(UnitValue::ONE);
            let mut buf = vec![0u8; sq.report_len()];
            sq.privatize_into(&v, QueryId(query), &mut rng, &mut buf)
                .unwrap();
            buf
        })
        .collect()
}

/// One corrupted copy of `r` per kind of damage, chosen by `which`.
fn corrupt(r: &[u8], which: u32) -> Vec<u8> {
    let mut c = r.to_vec();
    match which % 9 {
        0 => c.truncate(5),                    // shorter than a header
        1 => c[0] = 9,                         // wrong version
        2 => c[1] = 200,                       // unknown mechanism
        3 => c.push(0),                        // wrong length
        4 => c.truncate(c.len() - 1),          // wrong length
        5 => c[4..8].copy_from_slice(&[0; 4]), // ε = 0/0: bad parameter
        6 => {
            // Highest byte of a unary payload / SQ value: padding bits or out of range.
            if let Some(last) = c.last_mut() {
                *last = 0xff;
            }
        }
        7 => c[2] ^= 0x40, // another query: a valid report of another kind
        _ => c.clear(),    // empty frame
    }
    c
}

/// A mixed stream: OUE (d = 100, not a multiple of 8), SUE (d = 64), GRR,
/// SQ Laplace on two queries and OUE at another ε, interleaved, with about one in
/// eight reports corrupted.
fn mixed_reports() -> Vec<Vec<u8>> {
    let mut sources = [
        fleet_reports("oue", eps(1, 1), 100, 700, 1),
        fleet_reports("sue", eps(3, 2), 64, 300, 2),
        fleet_reports("grr", eps(1, 1), 16, 200, 3),
        fleet_reports("oue", eps(1, 2), 100, 90, 4),
        laplace_reports(250, 0, 5),
        laplace_reports(120, 1, 6),
    ];
    let mut rng = ChaCha12Rng::seed_from_u64(99);
    let mut out = Vec::new();
    while sources.iter().any(|s| !s.is_empty()) {
        // Runs of one source, so the unary fast path sees full blocks and switches.
        let pick = rng.next_u32() as usize % sources.len();
        let run = 1 + rng.next_u32() as usize % 80;
        for _ in 0..run {
            let Some(r) = sources[pick].pop() else { break };
            if rng.next_u32() % 8 == 0 {
                out.push(corrupt(&r, rng.next_u32()));
            } else {
                out.push(r);
            }
        }
    }
    out
}

/// The report-at-a-time loop `privq ldp aggregate` ran before the batched path.
fn grouped_one_by_one(reports: &[Vec<u8>]) -> (BTreeMap<ReportKind, Aggregator>, RejectCounts) {
    let mut groups: BTreeMap<ReportKind, Aggregator> = BTreeMap::new();
    let mut rejected = RejectCounts::default();
    for bytes in reports {
        match decode_report(bytes) {
            Ok(r) => {
                let kind = ReportKind::of(&r);
                let agg = match groups.entry(kind) {
                    std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                    std::collections::btree_map::Entry::Vacant(v) => match Aggregator::new(kind) {
                        Ok(a) => v.insert(a),
                        Err(_) => {
                            rejected.record(RejectReason::Parameter);
                            continue;
                        }
                    },
                };
                if let Err(e) = agg.ingest(&r) {
                    rejected.record(e);
                }
            }
            Err(e) => rejected.record(e),
        }
    }
    (groups, rejected)
}

/// Serialized, then parsed like the CLI's output (the text of equal f64s is equal).
fn value<T: serde::Serialize>(t: &T) -> serde_json::Value {
    serde_json::from_str(&json(t)).unwrap()
}

/// Bit-exact serialization (f64 sums included) for comparisons.
fn json<T: serde::Serialize>(t: &T) -> String {
    serde_json::to_string(t).unwrap()
}

#[test]
fn grouped_batch_equals_one_by_one_on_mixed_reports() {
    let reports = mixed_reports();
    let (slow, slow_rejected) = grouped_one_by_one(&reports);
    let mut fast = BTreeMap::new();
    let mut fast_rejected = RejectCounts::default();
    let accepted = ingest_grouped(
        &mut fast,
        reports.iter().map(Vec::as_slice),
        &mut fast_rejected,
    );
    assert_eq!(fast, slow);
    let pairs = |m: &BTreeMap<ReportKind, Aggregator>| json(&m.iter().collect::<Vec<_>>());
    assert_eq!(pairs(&fast), pairs(&slow));
    assert_eq!(fast_rejected, slow_rejected);
    assert_eq!(accepted, slow.values().map(Aggregator::n).sum::<u64>());
    assert_eq!(accepted + fast_rejected.total(), reports.len() as u64);
    // The input really is mixed: several kinds and every rejection class but one
    // (all-zero ε and unknown mechanisms cover Parameter and UnknownMechanism).
    assert!(fast.len() >= 6, "{} groups", fast.len());
    for class in [
        RejectReason::Truncated,
        RejectReason::Version,
        RejectReason::UnknownMechanism,
        RejectReason::Parameter,
        RejectReason::Length,
        RejectReason::ValueOutOfRange,
    ] {
        assert!(fast_rejected.get(class) > 0, "no {class:?} rejections");
    }
    for (kind, agg) in &fast {
        let other = &slow[kind];
        if let Ok(f) = agg.frequencies(0.95) {
            assert_eq!(json(&f), json(&other.frequencies(0.95).unwrap()));
        }
        if let Ok(m) = agg.mean(0.95) {
            assert_eq!(json(&m), json(&other.mean(0.95).unwrap()));
        }
    }
}

#[test]
fn cli_aggregate_output_equals_one_by_one() {
    let reports = mixed_reports();
    let mut file = Vec::new();
    frames::write_file_header(&mut file).unwrap();
    for r in &reports {
        frames::write_frame(&mut file, r).unwrap();
    }
    file.extend_from_slice(&[200, 0, 1, 2, 3]); // a truncated final frame
    let dir = std::env::temp_dir().join(format!("privq-ldp-batch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("mixed.pqr");
    std::fs::write(&input, &file).unwrap();
    // The campaign: OUE, ε = 1, d = 100, every query id. Every other report in
    // the mixed file is rejected with its reason, frame by frame.
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_privq"))
        .args(["ldp", "aggregate", "--mechanism", "oue", "--epsilon", "1"])
        .args([
            "--domain",
            "100",
            "--queries",
            "0-65535",
            "--confidence",
            "0.9",
        ])
        .args(["--post", "simplex", "--format", "json", "--input"])
        .arg(&input)
        .output()
        .unwrap();
    let out = run.stdout;
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(run.status.code(), Some(3), "some frames are rejected");
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();

    let (slow, _) = grouped_one_by_one(&reports);
    let campaign =
        |k: &ReportKind| (k.mechanism, k.epsilon_num, k.epsilon_den, k.param) == (4, 1, 1, 100);
    let ours: Vec<_> = slow.iter().filter(|(k, _)| campaign(k)).collect();
    let accepted: u64 = ours.iter().map(|(_, a)| a.n()).sum();
    let stats = &doc["stats"];
    // Every campaign report is found, also after damaged framing.
    assert_eq!(stats["accepted"], accepted);
    let rejected: RejectCounts = serde_json::from_value(stats["rejected"].clone()).unwrap();
    let frames = stats["frames"].as_u64().unwrap();
    assert_eq!(accepted + rejected.total(), frames);
    // Foreign and malformed frames are delimited one by one (runs of reports
    // with damaged headers may be skipped as a region, and are counted there).
    assert!(frames * 100 >= 98 * reports.len() as u64, "{frames} frames");
    let skipped = stats["skipped_bytes"].as_u64().unwrap();
    assert!(skipped * 50 < file.len() as u64, "{skipped} bytes skipped");
    assert_eq!(rejected.get(RejectReason::FrameTruncated), 1);
    assert!(rejected.get(RejectReason::MechanismMismatch) > 0);
    assert!(rejected.get(RejectReason::EpsilonMismatch) > 0);
    let groups = doc["groups"].as_array().unwrap();
    assert_eq!(groups.len(), ours.len());
    for (g, (_, agg)) in groups.iter().zip(&ours) {
        assert_eq!(g["n"], agg.n());
        assert_eq!(g["frequencies"], value(&agg.frequencies(0.9).ok()));
        assert_eq!(g["mean"], value(&agg.mean(0.9).ok()));
    }
}

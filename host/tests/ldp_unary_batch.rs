//! The batch aggregation path for unary encoding (SUE, OUE) against the
//! report-at-a-time path and a bit-by-bit reference: identical counts, report
//! totals and per-class rejection counts on random reports, with malformed and
//! mismatched reports mixed in, partial final blocks, counter flushes, domains
//! that are not multiples of 8 or 64, and several threads.

use privq_core::local::QueryId;
use privq_core::report::{HEADER_LEN, Header, MechanismId, encode_header};
use privq_host::Epsilon;
use privq_host::ldp::aggregate::{Aggregator, ReportKind, aggregate_packed};
use privq_host::ldp::decode::{RejectCounts, RejectReason};
use privq_host::ldp::fleet::{Fleet, MechanismSpec, aggregate_parallel, default_distribution};
use privq_host::ldp::unary::BLOCK;
use proptest::prelude::*;
use rand_chacha::ChaCha12Rng;
use rand_core::{Rng, SeedableRng};

/// The canonical header bytes of a unary report.
fn header(mechanism: MechanismId, eps: (u64, u64), d: u32, query: u16) -> [u8; HEADER_LEN] {
    let h = Header {
        mechanism,
        query: QueryId(query),
        epsilon: Epsilon::new(eps.0, eps.1).unwrap(),
        param: d,
    };
    let mut out = [0u8; HEADER_LEN];
    encode_header(&h, &mut out).unwrap();
    out
}

/// A random payload of `d` bits, each set with probability `density/256`.
fn payload(rng: &mut ChaCha12Rng, d: u32, density: u32) -> Vec<u8> {
    let mut p = vec![0u8; (d as usize).div_ceil(8)];
    for j in 0..d as usize {
        if rng.next_u32() % 256 < density {
            p[j / 8] |= 1 << (j % 8);
        }
    }
    p
}

/// Counting bit by bit: the simplest possible reference.
fn reference_counts(d: u32, payloads: &[Vec<u8>]) -> Vec<u64> {
    let mut counts = vec![0u64; d as usize];
    for p in payloads {
        for (j, c) in counts.iter_mut().enumerate() {
            *c += u64::from((p[j / 8] >> (j % 8)) & 1);
        }
    }
    counts
}

/// The report-at-a-time path (the implementation before the batch path).
fn one_by_one(kind: ReportKind, reports: &[Vec<u8>]) -> (Aggregator, RejectCounts) {
    let mut agg = Aggregator::new(kind).unwrap();
    let mut rejected = RejectCounts::default();
    for r in reports {
        if let Err(e) = agg.ingest_bytes(r) {
            rejected.record(e);
        }
    }
    (agg, rejected)
}

/// A workload: reports (valid and not), the payloads of the valid ones, and the
/// rejection class expected for each invalid one.
struct Workload {
    kind: ReportKind,
    reports: Vec<Vec<u8>>,
    valid_payloads: Vec<Vec<u8>>,
    expected_rejections: RejectCounts,
}

/// `n` reports of `mechanism` over `d` items at ε = 1, query 7; about
/// `garbage_per_256/256` of them are corrupted in one of the ways below.
fn workload(
    mechanism: MechanismId,
    d: u32,
    n: usize,
    density: u32,
    garbage_per_256: u32,
    seed: u64,
) -> Workload {
    let mut rng = ChaCha12Rng::seed_from_u64(seed);
    let canonical = header(mechanism, (1, 1), d, 7);
    let kind = ReportKind::from_header(
        &Header {
            mechanism,
            query: QueryId(7),
            epsilon: Epsilon::new(1, 1).unwrap(),
            param: d,
        },
        0,
    );
    let other = if mechanism == MechanismId::Oue {
        MechanismId::Sue
    } else {
        MechanismId::Oue
    };
    let mut w = Workload {
        kind,
        reports: Vec::with_capacity(n),
        valid_payloads: Vec::new(),
        expected_rejections: RejectCounts::default(),
    };
    for _ in 0..n {
        let p = payload(&mut rng, d, density);
        let mut r = canonical.to_vec();
        r.extend_from_slice(&p);
        if rng.next_u32() % 256 >= garbage_per_256 {
            w.reports.push(r);
            w.valid_payloads.push(p);
            continue;
        }
        let class = match rng.next_u32() % 12 {
            0 => {
                r.truncate((rng.next_u32() % HEADER_LEN as u32) as usize);
                Some(RejectReason::Truncated)
            }
            1 => {
                r[0] = 2;
                Some(RejectReason::Version)
            }
            2 => {
                r[1] = 200;
                Some(RejectReason::UnknownMechanism)
            }
            3 => {
                r[4] = 0;
                r[5] = 0;
                Some(RejectReason::Parameter)
            }
            4 => {
                r.pop();
                Some(RejectReason::Length)
            }
            5 => {
                r.push(0);
                Some(RejectReason::Length)
            }
            6 if !d.is_multiple_of(8) => {
                *r.last_mut().unwrap() |= 0x80;
                Some(RejectReason::ValueOutOfRange)
            }
            7 => {
                r[2] ^= 1; // another query
                Some(RejectReason::Mismatch)
            }
            8 => {
                r[1] = other as u8; // SUE for an OUE aggregator or vice versa
                Some(RejectReason::Mismatch)
            }
            9 => {
                r[..HEADER_LEN].copy_from_slice(&header(mechanism, (1, 2), d, 7));
                Some(RejectReason::Mismatch)
            }
            10 => {
                // ε = 3/3: not the canonical bytes, but the same kind once reduced.
                r[..HEADER_LEN].copy_from_slice(&canonical);
                r[4] = 3;
                r[6] = 3;
                None
            }
            _ => {
                // The header of a domain of d + 1 items.
                r[..HEADER_LEN].copy_from_slice(&header(mechanism, (1, 1), d + 1, 7));
                if (d as usize).div_ceil(8) == (d as usize + 1).div_ceil(8) {
                    Some(RejectReason::Mismatch)
                } else {
                    Some(RejectReason::Length)
                }
            }
        };
        match class {
            Some(c) => w.expected_rejections.record(c),
            None => w.valid_payloads.push(p),
        }
        w.reports.push(r);
    }
    w
}

/// Checks the batch path (one thread, and `aggregate_packed` on 1–3 threads)
/// against the report-at-a-time path and the bit-by-bit reference.
fn check(w: &Workload) {
    let (slow, slow_rejected) = one_by_one(w.kind, &w.reports);
    assert_eq!(
        slow.counts(),
        reference_counts(w.kind.param, &w.valid_payloads)
    );
    assert_eq!(slow.n(), w.valid_payloads.len() as u64);
    assert_eq!(slow_rejected, w.expected_rejections);

    let mut fast = Aggregator::new(w.kind).unwrap();
    let mut rejected = RejectCounts::default();
    let accepted = fast.ingest_batch(w.reports.iter().map(Vec::as_slice), &mut rejected);
    assert_eq!(accepted, w.valid_payloads.len() as u64);
    assert_eq!(fast, slow, "d = {}, n = {}", w.kind.param, w.reports.len());
    assert_eq!(rejected, slow_rejected);

    // Back to back (every report padded to one length would change them, so only
    // for workloads whose reports all have the canonical length).
    let len = HEADER_LEN + (w.kind.param as usize).div_ceil(8);
    if w.reports.iter().all(|r| r.len() == len) {
        let packed: Vec<u8> = w.reports.concat();
        for threads in 1..=3 {
            let (a, r) = aggregate_packed(&packed, len, w.kind, threads).unwrap();
            assert_eq!(a, slow, "{threads} threads");
            assert_eq!(r, slow_rejected);
            let (b, rb) = aggregate_parallel(&packed, len, w.kind, threads).unwrap();
            assert_eq!((a, r), (b, rb));
        }
    }
}

#[test]
fn random_reports_match_the_reference() {
    let block = BLOCK;
    let ns = [
        0,
        1,
        block - 1,
        block,
        block + 1,
        3 * block + 5,
        255 * block - 1,
        255 * block,
        255 * block + 1,
        2 * 255 * block + 77,
    ];
    for mechanism in [MechanismId::Oue, MechanismId::Sue] {
        for d in [2, 7, 8, 63, 64, 65, 100, 511, 512, 513, 1000, 1024, 1031] {
            for (i, &n) in ns.iter().enumerate() {
                let seed = u64::from(d) * 1000 + i as u64;
                check(&workload(mechanism, d, n, 70, 0, seed));
            }
        }
    }
}

#[test]
fn malformed_reports_are_counted_as_before() {
    for mechanism in [MechanismId::Oue, MechanismId::Sue] {
        for d in [2, 9, 64, 100, 1024, 1031] {
            for garbage in [8, 64, 255] {
                let w = workload(mechanism, d, 3000, 128, garbage, u64::from(d) + 7);
                assert!(w.expected_rejections.total() > 0);
                check(&w);
            }
        }
    }
}

#[test]
fn saturated_and_empty_columns() {
    for density in [0, 256] {
        for d in [3, 64, 1031] {
            check(&workload(MechanismId::Oue, d, 9000, density, 0, 5));
        }
    }
}

#[test]
fn large_domain() {
    check(&workload(MechanismId::Oue, 70_001, 200, 30, 16, 11));
}

#[test]
fn device_reports_and_merged_batches() {
    for name in ["oue", "sue"] {
        let spec = MechanismSpec::parse(name, Epsilon::new(1, 1).unwrap(), 1024).unwrap();
        let batch = Fleet::from_weights(&default_distribution(1024), 20_000)
            .unwrap()
            .privatize(&spec, 21)
            .unwrap();
        let (slow, _) = one_by_one(
            batch.kind(),
            &batch.iter().map(<[u8]>::to_vec).collect::<Vec<_>>(),
        );
        // Three uneven batches merged equal one pass, and the state round-trips.
        let mut merged = Aggregator::new(batch.kind()).unwrap();
        let mut rejected = RejectCounts::default();
        let reports: Vec<&[u8]> = batch.iter().collect();
        for part in [&reports[..17], &reports[17..12_345], &reports[12_345..]] {
            let mut a = Aggregator::new(batch.kind()).unwrap();
            a.ingest_batch(part.iter().copied(), &mut rejected);
            merged.merge(&a).unwrap();
        }
        assert_eq!(rejected.total(), 0);
        assert_eq!(merged, slow);
        let json = serde_json::to_string(&merged).unwrap();
        assert_eq!(serde_json::from_str::<Aggregator>(&json).unwrap(), slow);
        // Ingesting in several calls on one aggregator is the same too.
        let mut again = Aggregator::new(batch.kind()).unwrap();
        for part in reports.chunks(1000) {
            again.ingest_batch(part.iter().copied(), &mut rejected);
        }
        assert_eq!(again, slow);
    }
}

#[test]
fn other_mechanisms_take_the_report_at_a_time_path() {
    for name in ["rr", "grr", "olh", "hr"] {
        let spec = MechanismSpec::parse(name, Epsilon::new(1, 1).unwrap(), 100).unwrap();
        let batch = Fleet::from_weights(&default_distribution(100), 2000)
            .unwrap()
            .privatize(&spec, 2)
            .unwrap();
        let mut reports: Vec<Vec<u8>> = batch.iter().map(<[u8]>::to_vec).collect();
        reports[5][0] = 9;
        reports[6].pop();
        let (slow, slow_rejected) = one_by_one(batch.kind(), &reports);
        let mut fast = Aggregator::new(batch.kind()).unwrap();
        let mut rejected = RejectCounts::default();
        fast.ingest_batch(reports.iter().map(Vec::as_slice), &mut rejected);
        assert_eq!((fast, rejected), (slow, slow_rejected), "{name}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn batch_equals_one_by_one(
        d in 2u32..1500,
        n in 0usize..600,
        density in 0u32..=256,
        garbage in 0u32..64,
        sue in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let mechanism = if sue { MechanismId::Sue } else { MechanismId::Oue };
        check(&workload(mechanism, d, n, density, garbage, seed));
    }
}

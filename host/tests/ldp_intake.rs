//! Report intake against untrusted inputs (`privq_host::ldp::intake`):
//! regression tests for each crash and silent loss a tester found, campaign
//! validation, saved states, and a seeded fuzz test of ≥ 10⁵ random
//! corruptions of valid files for every mechanism.

use std::time::{Duration, Instant};

use privq_core::Fixed;
use privq_core::local::{LocalRandomizer, OneBitMean, QueryId, SqBit, SqLaplace, UnitValue};
use privq_host::Epsilon;
use privq_host::ldp::aggregate::Aggregator;
use privq_host::ldp::campaign::{Campaign, CampaignError, CampaignPlan, Limits};
use privq_host::ldp::decode::RejectReason;
use privq_host::ldp::fleet::{Fleet, MechanismSpec, default_distribution};
use privq_host::ldp::frames;
use privq_host::ldp::intake::{
    FILE_HEADER_LEN, Intake, IntakeStats, Issue, MAX_PROBLEMS, Outcome, Problem, StateError,
};
use rand_chacha::ChaCha12Rng;
use rand_core::{Rng, SeedableRng};

fn eps(num: u64, den: u64) -> Epsilon {
    Epsilon::new(num, den).unwrap()
}

/// A report file of `n` simulated devices and its campaign.
fn simulated(mechanism: &str, d: u32, n: usize, seed: u64) -> (Vec<u8>, CampaignPlan) {
    let spec = MechanismSpec::parse(mechanism, eps(1, 1), d).unwrap();
    let batch = Fleet::from_weights(&default_distribution(spec.domain()), n)
        .unwrap()
        .privatize(&spec, seed)
        .unwrap();
    let plan = Campaign::for_spec(&spec)
        .validate(&Limits::default())
        .unwrap();
    (file_of(batch.iter()), plan)
}

fn file_of<'a>(reports: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut file = Vec::new();
    frames::write_file_header(&mut file).unwrap();
    for r in reports {
        frames::write_frame(&mut file, r).unwrap();
    }
    file
}

/// Reports of a mean mechanism (1BitMean, SQ bit, SQ Laplace) and its campaign.
fn mean_file(which: &str, n: usize, seed: u64) -> (Vec<u8>, CampaignPlan) {
    let mut rng = ChaCha12Rng::seed_from_u64(seed);
    let mut reports = Vec::new();
    let (json, bound) = match which {
        "1bitmean" => (r#"{"mechanism":"1bitmean","epsilon":"1","bound":4}"#, 4),
        "sq-bit" => (r#"{"mechanism":"sq-bit","epsilon":"1"}"#, 0),
        _ => (
            r#"{"mechanism":"sq-laplace","epsilon":"1","grid_exponent":-10}"#,
            0,
        ),
    };
    for i in 0..n {
        let unit = UnitValue::from_fraction(i as u64 % 5, 4).unwrap();
        let mut buf = vec![0u8; 32];
        let len = match which {
            "1bitmean" => OneBitMean::new(eps(1, 1), bound)
                .unwrap()
                .privatize_into(
                    &Fixed::from_bits((i as i64 % 5) << 32),
                    QueryId(0),
                    &mut rng,
                    &mut buf,
                )
                .unwrap(),
            "sq-bit" => SqBit::new(eps(1, 1))
                .unwrap()
                .privatize_into(&unit, QueryId(0), &mut rng, &mut buf)
                .unwrap(),
            _ => SqLaplace::new(eps(1, 1))
                .unwrap()
                .privatize_into(&unit, QueryId(0), &mut rng, &mut buf)
                .unwrap(),
        };
        buf.truncate(len);
        reports.push(buf);
    }
    let plan = Campaign::from_json(json)
        .unwrap()
        .validate(&Limits::default())
        .unwrap();
    (file_of(reports.iter().map(Vec::as_slice)), plan)
}

fn intake_of(plan: &CampaignPlan, inputs: &[&[u8]]) -> Intake {
    let mut intake = Intake::new(plan.clone());
    for (i, bytes) in inputs.iter().enumerate() {
        intake.ingest_slice(&format!("input{i}"), bytes);
    }
    intake
}

/// Every frame accepted or rejected, every byte a header, a frame or skipped.
fn assert_accounted(s: &IntakeStats) {
    assert_eq!(s.accepted + s.rejected.total(), s.frames, "{s:?}");
    assert_eq!(
        s.files * FILE_HEADER_LEN as u64 + s.frame_bytes + s.skipped_bytes,
        s.bytes,
        "{s:?}"
    );
}

fn counters(intake: &Intake) -> usize {
    intake.groups().map(|g| g.counts().len()).sum()
}

/// The tester's crafted GRR frame (ε = 1, d = 2³¹ − 2) appended to a valid file
/// made the aggregator allocate 17 GB and abort.
#[test]
fn crafted_grr_frame_is_rejected_with_reason_and_bounded_memory() {
    let (mut file, plan) = simulated("grr", 64, 2000, 7);
    let valid_len = file.len() as u64;
    // struct.pack('<BBHHHII', 1, 2, 0, 1, 1, 2147483646, 0)
    let mut crafted = vec![1u8, 2, 0, 0, 1, 0, 1, 0];
    crafted.extend_from_slice(&2_147_483_646u32.to_le_bytes());
    crafted.extend_from_slice(&0u32.to_le_bytes());
    assert_eq!(crafted.len() + 2, 18); // with its length prefix
    frames::write_frame(&mut file, &crafted).unwrap();
    let intake = intake_of(&plan, &[&file]);
    let s = intake.stats();
    assert_accounted(s);
    assert_eq!(s.accepted, 2000);
    assert_eq!(s.rejected.get(RejectReason::ParameterMismatch), 1);
    assert_eq!(s.rejected.total(), 1);
    assert_eq!(
        s.problems[0].issue,
        Issue::Rejected(RejectReason::ParameterMismatch)
    );
    assert_eq!(s.problems[0].offset, valid_len);
    assert_eq!(intake.outcome(), Outcome::Rejected);
    // Memory is the campaign's: one group of 64 counters.
    assert_eq!(counters(&intake), 64);
    assert!(plan.memory_bytes() < 4096);
}

/// One changed byte of an OLH report: byte 18 of the file (the parameter's top
/// byte) set to 0x7f tried to allocate 17 GB, 0x01 ran for minutes; byte 17 set
/// to 0x01 made one report a 65 636-item group.
#[test]
fn olh_parameter_byte_corruptions_are_rejected_quickly() {
    let (file, plan) = simulated("olh", 100, 2000, 7);
    for (at, value) in [(18, 0x7f), (18, 0x01), (17, 0x01)] {
        let mut bad = file.clone();
        bad[at] = value;
        let start = Instant::now();
        let intake = intake_of(&plan, &[&bad]);
        let took = start.elapsed();
        assert!(
            took < Duration::from_millis(500),
            "byte {at} = {value:#x}: {took:?}"
        );
        let s = intake.stats();
        assert_accounted(s);
        assert_eq!((s.accepted, s.rejected.total()), (1999, 1), "{s:?}");
        assert_eq!(s.rejected.get(RejectReason::ParameterMismatch), 1);
        assert_eq!(intake.groups().count(), 1);
        assert_eq!(counters(&intake), 100);
    }
}

/// Two report files concatenated: the second was silently dropped.
#[test]
fn concatenated_files_aggregate_completely() {
    let (a, plan) = simulated("oue", 100, 1500, 1);
    let (b, _) = simulated("oue", 100, 700, 2);
    let (c, _) = simulated("oue", 100, 9, 3);
    let joined: Vec<u8> = [&a[..], &b[..], &c[..]].concat();
    let one = intake_of(&plan, &[&joined]);
    assert_accounted(one.stats());
    assert_eq!(one.stats().accepted, 1500 + 700 + 9);
    assert_eq!(one.stats().files, 3);
    assert_eq!(one.outcome(), Outcome::Complete);
    // Exactly the state of reading the three files as separate inputs.
    let three = intake_of(&plan, &[&a, &b, &c]);
    let states = |i: &Intake| i.groups().cloned().collect::<Vec<Aggregator>>();
    assert_eq!(states(&one), states(&three));
}

/// Two corrupted length bytes: 1 990 of 2 000 reports were dropped silently.
#[test]
fn corrupted_lengths_are_reported_and_resynchronised() {
    let (mut file, plan) = simulated("grr", 64, 2000, 7);
    let frame = 2 + 13;
    let first = 5;
    let second = 5 + 300 * frame;
    file[first] = 0xff;
    file[second + 1] ^= 0x5a;
    let intake = intake_of(&plan, &[&file]);
    let s = intake.stats();
    assert_accounted(s);
    assert_eq!(s.rejected.get(RejectReason::FrameLength), 2, "{s:?}");
    assert_eq!(s.accepted, 1998);
    assert_eq!(s.skipped_bytes, 2 * frame as u64);
    let offsets: Vec<(u64, Issue)> = s.problems.iter().map(|p| (p.offset, p.issue)).collect();
    assert_eq!(
        offsets,
        [
            (first as u64, Issue::Rejected(RejectReason::FrameLength)),
            (first as u64, Issue::Skipped(frame as u64)),
            (second as u64, Issue::Rejected(RejectReason::FrameLength)),
            (second as u64, Issue::Skipped(frame as u64)),
        ]
    );
    assert_eq!(intake.outcome(), Outcome::Rejected);
}

/// Empty and truncated inputs printed nothing and exited 0.
#[test]
fn empty_and_truncated_inputs_are_nothing_usable() {
    let (file, plan) = simulated("grr", 64, 10, 7);
    for (name, bytes) in [
        ("empty", &file[..0]),
        ("partial header", &file[..3]),
        ("header only", &file[..5]),
        ("truncated frame", &file[..12]),
    ] {
        let intake = intake_of(&plan, &[bytes]);
        assert_accounted(intake.stats());
        assert_eq!(intake.outcome(), Outcome::NothingUsable, "{name}");
        assert_eq!(intake.outcome().exit_code(), 4);
    }
    let truncated = intake_of(&plan, &[&file[..12]]);
    assert_eq!(
        truncated.stats().rejected.get(RejectReason::FrameTruncated),
        1
    );
    let empty = intake_of(&plan, &[&file[..0]]);
    assert_eq!(empty.stats().problems[0].issue, Issue::EmptyInput);
    // A file cut inside its last frame: the rest is aggregated, the cut counted.
    let cut = intake_of(&plan, &[&file[..file.len() - 4]]);
    assert_eq!(cut.stats().accepted, 9);
    assert_eq!(cut.stats().rejected.get(RejectReason::FrameTruncated), 1);
    assert_eq!(cut.outcome(), Outcome::Rejected);
}

/// Reports that disagree with the campaign are rejected with their reason.
#[test]
fn reports_disagreeing_with_the_campaign_are_rejected_by_reason() {
    let (grr, plan) = simulated("grr", 64, 50, 1);
    let (oue, _) = simulated("oue", 64, 20, 2);
    let (grr32, _) = simulated("grr", 32, 30, 3);
    let spec = MechanismSpec::parse("grr", eps(1, 2), 64).unwrap();
    let half = file_of(
        Fleet::from_weights(&[1.0; 64], 40)
            .unwrap()
            .privatize(&spec, 4)
            .unwrap()
            .iter(),
    );
    let mut other_query = grr.clone();
    other_query[9] = 7; // report 0's query id: 7
    let intake = intake_of(&plan, &[&grr, &oue, &grr32, &half, &other_query]);
    let s = intake.stats();
    assert_accounted(s);
    assert_eq!(s.accepted, 50 + 49);
    assert_eq!(s.rejected.get(RejectReason::MechanismMismatch), 20);
    assert_eq!(s.rejected.get(RejectReason::ParameterMismatch), 30);
    assert_eq!(s.rejected.get(RejectReason::EpsilonMismatch), 40);
    assert_eq!(s.rejected.get(RejectReason::QueryMismatch), 1);
}

#[test]
fn campaign_validation_has_typed_errors() {
    let check = |json: &str, limits: Limits| Campaign::from_json(json)?.validate(&limits);
    let lim = Limits::default();
    assert!(matches!(
        check(
            r#"{"mechanism":"olh","epsilon":"1","domain":2147483646}"#,
            lim
        ),
        Err(CampaignError::Memory { .. })
    ));
    assert!(
        check(
            r#"{"mechanism":"olh","epsilon":"1","domain":2000000}"#,
            Limits::from_mib(32)
        )
        .is_ok()
    );
    assert!(matches!(
        check(
            r#"{"mechanism":"grr","epsilon":"1","domain":4000000}"#,
            Limits::from_mib(16)
        ),
        Err(CampaignError::Memory { .. })
    ));
    let e710 = check(r#"{"mechanism":"grr","epsilon":"710","domain":10}"#, lim);
    assert!(matches!(e710, Err(CampaignError::EpsilonUnusable(_))));
    assert_eq!(e710.unwrap_err().field(), "epsilon");
    assert!(check(r#"{"mechanism":"grr","epsilon":"709","domain":10}"#, lim).is_ok());
    assert!(matches!(
        check(r#"{"mechanism":"oue","epsilon":"1","domain":600000}"#, lim),
        Err(CampaignError::ReportTooLong(_))
    ));
    assert!(matches!(
        check(r#"{"mechanism":"nope","epsilon":"1","domain":10}"#, lim),
        Err(CampaignError::UnknownMechanism(_))
    ));
    assert!(matches!(
        check(r#"{"mechanism":"grr","epsilon":"1"}"#, lim),
        Err(CampaignError::Missing("domain"))
    ));
    assert!(matches!(
        check(r#"{"mechanism":"grr","epsilon":"1","domain":1}"#, lim),
        Err(CampaignError::Parameter("domain", _))
    ));
    assert!(matches!(
        check(
            r#"{"mechanism":"grr","epsilon":"1","domain":8,"queries":["9-3"]}"#,
            lim
        ),
        Err(CampaignError::Query(_))
    ));
    assert!(matches!(
        check(
            r#"{"mechanism":"grr","epsilon":"1","domain":8,"queries":[]}"#,
            lim
        ),
        Err(CampaignError::NoQueries)
    ));
    assert!(matches!(
        check(r#"{"mechanism":"grr","epsilon":"1","domian":8}"#, lim),
        Err(CampaignError::Json(_))
    ));
    // 65 536 queries × 1 000 items × 8 bytes: over 256 MiB.
    assert!(matches!(
        check(
            r#"{"mechanism":"grr","epsilon":"1","domain":1000,"queries":["0-65535"]}"#,
            lim
        ),
        Err(CampaignError::Memory { .. })
    ));
}

#[test]
fn saved_states_round_trip_and_merge_like_one_run() {
    let (a, plan) = simulated("hr", 50, 800, 1);
    let (b, _) = simulated("hr", 50, 300, 2);
    let mut damaged = b.clone();
    damaged.truncate(b.len() - 3);
    let both = intake_of(&plan, &[&a, &damaged]);
    let mut first = intake_of(&plan, &[&a]);
    let second = intake_of(&plan, &[&damaged]);
    let json = serde_json::to_string(&second.to_state()).unwrap();
    let restored = Intake::from_json(&json, &Limits::default()).unwrap();
    first.merge(&restored).unwrap();
    let mut expected = both.stats().clone();
    for p in &mut expected.problems {
        p.input = "input0".into(); // `second` read the damaged file as its input 0
    }
    assert_eq!(first.stats(), &expected);
    let states = |i: &Intake| i.groups().cloned().collect::<Vec<Aggregator>>();
    assert_eq!(states(&first), states(&both));
    assert_eq!(first.outcome(), Outcome::Rejected);
    // A state of another campaign does not merge.
    let (_, other) = simulated("hr", 51, 1, 1);
    assert!(first.merge(&Intake::new(other)).is_err());
    // A tampered state (a group for a query outside the campaign) is refused.
    let tampered = json
        .replace("\"query\": 0", "\"query\": 5")
        .replace("\"query\":0", "\"query\":5");
    assert!(Intake::from_json(&tampered, &Limits::default()).is_err());
    // Counters that disagree with the groups or with each other are refused.
    let state = second.to_state();
    let problem = state
        .stats
        .problems
        .first()
        .cloned()
        .expect("a damaged input");
    type Edit = fn(&mut IntakeStats, &Problem);
    let edits: [(&str, Edit); 4] = [
        ("accepted", |s, _| s.accepted += 1),
        ("frames", |s, _| s.frames -= 1),
        ("rejected", |s, _| s.rejected.record(RejectReason::Version)),
        ("problems", |s, p| {
            s.problems = vec![p.clone(); MAX_PROBLEMS + 1]
        }),
    ];
    for (what, edit) in edits {
        let mut bad = state.clone();
        edit(&mut bad.stats, &problem);
        assert!(
            matches!(
                Intake::from_state(bad, &Limits::default()),
                Err(StateError::Stats(_))
            ),
            "{what}"
        );
    }
    assert!(Intake::from_state(state, &Limits::default()).is_ok());
}

/// One random corruption: a byte changed, a truncation, bytes inserted, a range
/// duplicated, the file concatenated with itself, or a range deleted.
fn mutate(file: &mut Vec<u8>, rng: &mut ChaCha12Rng) {
    let len = file.len().max(1);
    let at = rng.next_u32() as usize % len;
    match rng.next_u32() % 6 {
        0 => {
            if let Some(b) = file.get_mut(at) {
                *b = rng.next_u32() as u8;
            }
        }
        1 => file.truncate(at),
        2 => {
            let n = 1 + rng.next_u32() as usize % 24;
            let bytes: Vec<u8> = (0..n).map(|_| rng.next_u32() as u8).collect();
            file.splice(at.min(file.len())..at.min(file.len()), bytes);
        }
        3 => {
            let n = 1 + rng.next_u32() as usize % 64;
            let end = (at + n).min(file.len());
            let piece = file[at.min(end)..end].to_vec();
            let to = rng.next_u32() as usize % (file.len() + 1);
            file.splice(to..to, piece);
        }
        4 => {
            // The whole (possibly already damaged) file again: concatenated files.
            let copy = file.clone();
            file.extend_from_slice(&copy);
        }
        _ => {
            let n = 1 + rng.next_u32() as usize % 32;
            let end = (at + n).min(file.len());
            file.drain(at.min(end)..end);
        }
    }
}

/// ≥ 10⁵ random corruptions of valid files of every mechanism: no panic, no
/// case slower than a fraction of a second, every frame accepted (as a valid
/// report of the campaign) or rejected with a reason, every byte accounted for,
/// and a single changed byte loses at most a few reports.
#[test]
fn fuzz_random_corruptions_are_accounted_for() {
    const CASES_PER_FILE: usize = 11_200;
    const REPORTS: usize = 200;
    let mut bases: Vec<(String, Vec<u8>, CampaignPlan)> = [
        ("rr", 2),
        ("grr", 300),
        ("sue", 20),
        ("oue", 100),
        ("olh", 64),
        ("hr", 70),
    ]
    .into_iter()
    .map(|(m, d)| {
        let (f, p) = simulated(m, d, REPORTS, 11);
        (m.to_string(), f, p)
    })
    .collect();
    for m in ["1bitmean", "sq-bit", "sq-laplace"] {
        let (f, p) = mean_file(m, REPORTS, 12);
        bases.push((m.to_string(), f, p));
    }
    let mut rng = ChaCha12Rng::seed_from_u64(0x5eed);
    let (mut cases, mut slowest) = (0usize, Duration::ZERO);
    let started = Instant::now();
    for (name, base, plan) in &bases {
        let clean = intake_of(plan, &[base]);
        assert_eq!(clean.outcome(), Outcome::Complete, "{name}");
        let n = clean.stats().accepted;
        assert_eq!(n, REPORTS as u64);
        for case in 0..CASES_PER_FILE {
            let mut file = base.clone();
            let single = case % 4 == 0;
            let mutations = if single { 1 } else { 1 + rng.next_u32() % 3 };
            let flip_only = single && rng.next_u32() % 2 == 0;
            for _ in 0..mutations {
                if flip_only {
                    let at = rng.next_u32() as usize % file.len();
                    file[at] ^= 1 << (rng.next_u32() % 8);
                } else {
                    mutate(&mut file, &mut rng);
                }
            }
            let t = Instant::now();
            let intake = intake_of(plan, &[&file]);
            slowest = slowest.max(t.elapsed());
            let s = intake.stats();
            assert_accounted(s);
            assert_eq!(
                intake.groups().map(Aggregator::n).sum::<u64>(),
                s.accepted,
                "{name} case {case}"
            );
            assert!(counters(&intake) as u64 <= plan.memory_bytes());
            if flip_only {
                assert!(s.accepted + 2 >= n, "{name} case {case}: {s:?}");
            }
            cases += 1;
        }
    }
    let took = started.elapsed();
    eprintln!("fuzz: {cases} corruptions in {took:?}, slowest case {slowest:?}");
    assert!(cases >= 100_000);
    assert!(slowest < Duration::from_millis(250), "slowest {slowest:?}");
}

#[test]
fn reports_one_by_one_equal_the_same_reports_framed() {
    for (mechanism, d) in [("oue", 64), ("grr", 16), ("olh", 32)] {
        let (file, plan) = simulated(mechanism, d, 2000, 17);
        let mut reports: Vec<Vec<u8>> = frames::frames(&file)
            .unwrap()
            .map(|f| f.unwrap().to_vec())
            .collect();
        // Malformed reports of the campaign's length: version, mechanism, ε, payload.
        for (i, r) in reports.iter_mut().enumerate().filter(|(i, _)| i % 97 == 0) {
            match i % 4 {
                0 => r[0] ^= 0x40,
                1 => r[1] = 0xee,
                2 => r[4] = r[4].wrapping_add(1),
                _ => r.iter_mut().skip(12).for_each(|b| *b = 0xff),
            }
        }
        let framed = intake_of(&plan, &[&file_of(reports.iter().map(Vec::as_slice))]);
        let mut loose = Intake::new(plan.clone());
        loose.ingest_reports(reports.iter().map(Vec::as_slice));
        let (a, b) = (framed.to_state(), loose.to_state());
        assert_eq!(a.groups, b.groups, "{mechanism}");
        assert_eq!(a.stats.rejected, b.stats.rejected, "{mechanism}");
        assert!(b.stats.rejected.total() > 0, "{mechanism}");
        assert_eq!(
            (a.stats.frames, a.stats.accepted),
            (b.stats.frames, b.stats.accepted)
        );
        assert_eq!(b.stats.frame_bytes, b.stats.bytes);
    }
}

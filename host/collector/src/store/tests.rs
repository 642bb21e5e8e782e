use super::*;
use privq_core::upload::{Delivery, FrameWriter, Verdict};

fn temp_db(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("privq-store-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("c.db")
}

/// A frame of `device` whose reports are SQ-bit reports with ε = 1/`den` each,
/// report `i` for query `8 * seq + i` (a kind of its own).
fn frame(key: &DeviceKey, device: u64, seq: u32, reports: usize, den: u8) -> Vec<u8> {
    let mut buf = vec![0u8; 4096];
    let mut w = FrameWriter::new(&mut buf, device, 1, seq).unwrap();
    for i in 0..reports {
        let q = (8 * seq as usize + i) as u8;
        w.push(&[1, 8, q, 0, 1, 0, den, 0, 0, 0, 0, 0, (i % 2) as u8])
            .unwrap();
    }
    let n = w.finish(key).unwrap();
    buf.truncate(n);
    buf
}

fn eps(n: u64, d: u64) -> Epsilon {
    Epsilon::new(n, d).unwrap()
}

/// A frame of one SQ-bit report with ε = 1/`den` (`den` < 2^16).
fn frame_eps(key: &DeviceKey, device: u64, seq: u32, den: u16) -> Vec<u8> {
    frame_with(key, device, seq, &frame_report(den))
}

/// A frame (epoch 1, sequence `seq`) of one report.
fn frame_with(key: &DeviceKey, device: u64, seq: u32, report: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; 256];
    let mut w = FrameWriter::new(&mut buf, device, 1, seq).unwrap();
    w.push(report).unwrap();
    let n = w.finish(key).unwrap();
    buf.truncate(n);
    buf
}

/// The report of [`frame_eps`].
fn frame_report(den: u16) -> Vec<u8> {
    let [lo, hi] = den.to_le_bytes();
    vec![1, 8, 0, 0, 1, 0, lo, hi, 0, 0, 0, 0, 1]
}

#[test]
fn groups_beyond_the_limit_and_tiny_epsilon_are_refused_and_survive_restart() {
    use crate::http::Collector;
    let path = temp_db("groups");
    let mut s = Store::open(&path).unwrap();
    let k = DeviceKey::new([6; 32]);
    s.provision(6, &k, eps(10, 1)).unwrap();
    let k7 = DeviceKey::new([7; 32]);
    s.provision(7, &k7, eps(10, 1)).unwrap();
    let policy = Policy {
        max_groups: 3,
        ..Policy::default()
    };
    let c = Collector::new(s, policy.clone(), true).unwrap();
    // Each ε is a group of its own: 1/2, 1/3, 1/4 open three groups.
    let first: Vec<Vec<u8>> = (0..3).map(|i| frame_eps(&k, 6, i, i as u16 + 2)).collect();
    let st = c
        .submit(&first.iter().map(Vec::as_slice).collect::<Vec<_>>())
        .unwrap();
    assert!(st.iter().all(FrameStatus::acknowledged), "{st:?}");
    // A fourth ε is refused, in the next batch and within one batch alike, while
    // the open groups keep accepting (from another device: one report per device
    // and kind); ε = 1/2048 is below the 1/1024 minimum.
    let more = [
        frame_eps(&k, 6, 3, 5),
        frame_eps(&k7, 7, 0, 2),
        frame_eps(&k, 6, 5, 6),
        frame_eps(&k, 6, 6, 2048),
        frame_eps(&k, 6, 7, 1024),
    ];
    let st = c
        .submit(&more.iter().map(Vec::as_slice).collect::<Vec<_>>())
        .unwrap();
    use FrameStatus::*;
    assert_eq!(st[0], Rejected(Rejection::GroupLimit { index: 0 }));
    // A limit is configuration: refused, so the device keeps the frame.
    assert_eq!(StatusJson::from(&st[0]).status, "refused");
    assert_eq!(st[0].delivery(), Delivery::NotDelivered);
    assert!(matches!(st[1], Accepted { reports: 1, .. }));
    assert_eq!(st[2], Rejected(Rejection::GroupLimit { index: 0 }));
    assert_eq!(st[3], Rejected(Rejection::EpsilonTooSmall { index: 0 }));
    // 1/1024 is allowed by ε, but it would be a fourth group.
    assert_eq!(st[4], Rejected(Rejection::GroupLimit { index: 0 }));
    assert_eq!(StatusJson::from(&st[0]).reason, Some("group_limit"));
    assert_eq!(StatusJson::from(&st[3]).reason, Some("epsilon_too_small"));
    assert_eq!(c.reports(), 4);
    drop(c);
    // Nothing of the refused frames was stored or charged.
    let s = Store::open(&path).unwrap();
    assert_eq!(s.frame_count().unwrap(), 4);
    let spent = s.devices().unwrap()[0].spent.unwrap();
    let want = [3u64, 4]
        .iter()
        .fold(eps(1, 2), |t, &d| t.checked_add(eps(1, d)).unwrap());
    assert_eq!(spent, want);
    // Restarting with the same database and limits rebuilds the same aggregate.
    let c = Collector::new(s, policy.clone(), true).unwrap();
    assert_eq!(c.reports(), 4);
    let st = c
        .submit(&[&frame_eps(&k7, 7, 1, 3), &frame_eps(&k, 6, 9, 7)])
        .unwrap();
    assert!(st[0].acknowledged());
    assert_eq!(st[1], Rejected(Rejection::GroupLimit { index: 0 }));
    drop(c);
    // With a smaller limit the reports of the later groups are refused, not
    // allocated for.
    let s = Store::open(&path).unwrap();
    let small = Policy {
        max_groups: 1,
        ..policy
    };
    let c = Collector::new(s, small, true).unwrap();
    assert_eq!(c.reports(), 2, "only the two reports with ε = 1/2");
}

/// Groups whose items (domains; a mean counts 1) would take the total past
/// `max_items` are refused, and so held back at a restart with a smaller limit.
#[test]
fn groups_beyond_the_item_limit_are_refused_and_held_back() {
    use crate::http::Collector;
    use FrameStatus::*;
    let path = temp_db("items");
    let mut s = Store::open(&path).unwrap();
    let k = DeviceKey::new([5; 32]);
    s.provision(5, &k, eps(10, 1)).unwrap();
    // k-ary randomized response over 100 items (ε = 1), query `q`, item 7.
    let grr = |q: u8| vec![1, 2, q, 0, 1, 0, 1, 0, 100, 0, 0, 0, 7];
    let one = |seq: u32, report: Vec<u8>| frame_with(&k, 5, seq, &report);
    let policy = Policy {
        max_items: 250,
        max_items_per_device: 250,
        ..Policy::default()
    };
    let c = Collector::new(s, policy.clone(), true).unwrap();
    let frames = [
        one(0, grr(0)),
        one(1, grr(1)),
        one(2, frame_report(2)),
        one(3, grr(2)),
        one(4, frame_report(3)),
    ];
    let st = c
        .submit(&frames.iter().map(Vec::as_slice).collect::<Vec<_>>())
        .unwrap();
    assert!(st[..3].iter().all(FrameStatus::acknowledged), "{st:?}");
    // 100 + 100 + 1 open; another 100 would make 301.
    assert_eq!(st[3], Rejected(Rejection::ItemLimit { index: 0 }));
    assert_eq!(StatusJson::from(&st[3]).status, "refused");
    assert_eq!(StatusJson::from(&st[3]).reason, Some("item_limit"));
    assert!(st[4].acknowledged(), "a mean fits: 202 items");
    assert_eq!(c.reports(), 4);
    drop(c);
    // At 150 items, the second domain-100 group is held back (in acceptance order).
    let c = Collector::new(
        Store::open(&path).unwrap(),
        Policy {
            max_items: 150,
            ..Policy::default()
        },
        true,
    )
    .unwrap();
    let est = c.estimates(0.95);
    assert_eq!((est.reports, est.held_back), (3, 1));
    drop(c);
    // One device's groups hold at most `max_items_per_device` items: device 5
    // opened 202 of them, so another 100 are refused for it.
    let c = Collector::new(
        Store::open(&path).unwrap(),
        Policy {
            max_items: 1000,
            max_items_per_device: 250,
            ..policy
        },
        true,
    )
    .unwrap();
    let st = c.submit(&[&one(5, grr(3))]).unwrap();
    assert_eq!(st[0], Rejected(Rejection::DeviceItemLimit { index: 0 }));
    assert_eq!(StatusJson::from(&st[0]).reason, Some("device_item_limit"));
    assert_eq!(StatusJson::from(&st[0]).status, "refused");
}

#[test]
fn one_device_opens_at_most_its_quota_of_groups_and_restart_remembers_openers() {
    use crate::http::{Aggregates, Collector};
    use FrameStatus::*;
    let path = temp_db("quota");
    let mut s = Store::open(&path).unwrap();
    let (ka, kb) = (DeviceKey::new([8; 32]), DeviceKey::new([9; 32]));
    s.provision(8, &ka, eps(10, 1)).unwrap();
    s.provision(9, &kb, eps(10, 1)).unwrap();
    let policy = Policy {
        max_groups_per_device: 2,
        ..Policy::default()
    };
    let submit = |c: &Collector, frames: &[Vec<u8>]| {
        c.submit(&frames.iter().map(Vec::as_slice).collect::<Vec<_>>())
            .unwrap()
    };
    let c = Collector::new(s, policy.clone(), true).unwrap();
    // Device 8 opens ε = 1/2 and 1/3; a third group (1/4) is refused, in the same
    // batch and in the next.
    let st = submit(
        &c,
        &[
            frame_eps(&ka, 8, 0, 2),
            frame_eps(&ka, 8, 1, 3),
            frame_eps(&ka, 8, 2, 4),
        ],
    );
    assert!(st[0].acknowledged() && st[1].acknowledged(), "{st:?}");
    assert_eq!(st[2], Rejected(Rejection::DeviceGroupLimit { index: 0 }));
    assert_eq!(StatusJson::from(&st[2]).status, "refused");
    assert_eq!(StatusJson::from(&st[2]).reason, Some("device_group_limit"));
    assert_eq!(st[2].delivery(), Delivery::NotDelivered);
    let st = submit(&c, &[frame_eps(&ka, 8, 2, 4)]);
    assert_eq!(st[0], Rejected(Rejection::DeviceGroupLimit { index: 0 }));
    // Device 9 opens 1/4 and 1/5; then device 8's resent frame joins 1/4.
    let st = submit(
        &c,
        &[
            frame_eps(&kb, 9, 0, 4),
            frame_eps(&kb, 9, 1, 5),
            frame_eps(&ka, 8, 2, 4),
        ],
    );
    assert!(st.iter().all(FrameStatus::acknowledged), "{st:?}");
    assert_eq!(c.reports(), 5);
    drop(c);
    // After a restart the openers are rebuilt from the stored reports: two
    // groups each. Neither device opens 1/6; device 8 still joins 1/5.
    let s = Store::open(&path).unwrap();
    let (_, open) = Aggregates::from_store_within(&s, &Policy::default()).unwrap();
    assert_eq!(
        (open.len(), open.opened_by(8), open.opened_by(9)),
        (4, 2, 2)
    );
    assert_eq!(
        open.opener(&ReportKind::of(&decode_report(&frame_report(4)).unwrap())),
        Some(9)
    );
    let c = Collector::new(s, policy, true).unwrap();
    let st = submit(
        &c,
        &[
            frame_eps(&ka, 8, 3, 6),
            frame_eps(&kb, 9, 2, 6),
            frame_eps(&ka, 8, 4, 5),
        ],
    );
    assert_eq!(st[0], Rejected(Rejection::DeviceGroupLimit { index: 0 }));
    assert_eq!(st[1], Rejected(Rejection::DeviceGroupLimit { index: 0 }));
    assert!(st[2].acknowledged(), "{st:?}");
    assert_eq!(c.reports(), 6);
}

#[test]
fn with_campaigns_only_their_kinds_are_accepted() {
    use crate::http::Collector;
    use FrameStatus::*;
    use privq_host::ldp::campaign::{Campaign, Limits};
    let path = temp_db("campaigns");
    let mut s = Store::open(&path).unwrap();
    let k = DeviceKey::new([5; 32]);
    s.provision(5, &k, eps(10, 1)).unwrap();
    let plan =
        Campaign::from_json(r#"{"mechanism": "sq-bit", "epsilon": "1/2", "queries": ["0-1"]}"#)
            .unwrap()
            .validate(&Limits::from_mib(1))
            .unwrap();
    let policy = Policy {
        campaigns: Some(vec![plan].into()),
        ..Policy::default()
    };
    // A report accepted before the collector had campaigns is held back when it
    // restarts with them: its group is not reopened.
    let c = Collector::new(s, Policy::default(), true).unwrap();
    assert!(c.submit(&[&frame_eps(&k, 5, 9, 3)]).unwrap()[0].acknowledged());
    drop(c);
    let c = Collector::new(Store::open(&path).unwrap(), policy, true).unwrap();
    let e = c.estimates(0.95);
    assert_eq!((e.reports, e.held_back, e.groups.len()), (0, 1, 0));
    // ε = 1/2 query 0 is the campaign's; ε = 1/3 is not, nor is a frame whose
    // second report is of query 2 (nothing of it counts).
    let st = c
        .submit(&[
            &frame_eps(&k, 5, 0, 3),
            &frame(&k, 5, 0, 3, 2),
            &frame_eps(&k, 5, 1, 2),
        ])
        .unwrap();
    assert_eq!(st[0], Rejected(Rejection::NotInCampaign { index: 0 }));
    assert_eq!(StatusJson::from(&st[0]).status, "refused");
    assert_eq!(StatusJson::from(&st[0]).reason, Some("not_in_campaign"));
    assert_eq!(st[1], Rejected(Rejection::NotInCampaign { index: 2 }));
    assert!(st[2].acknowledged(), "{st:?}");
    assert_eq!(c.reports(), 1);
}

#[test]
fn an_edited_huge_domain_is_not_aggregated_at_startup() {
    use crate::http::Collector;
    let path = temp_db("huge");
    let mut s = Store::open(&path).unwrap();
    let k = DeviceKey::new([3; 32]);
    s.provision(5, &k, eps(4, 1)).unwrap();
    let f = frame(&k, 5, 0, 1, 2);
    s.submit(&[&f], &Policy::default(), &mut OpenGroups::default())
        .unwrap();
    // A GRR report over 2^20 items (past the policy's 2^16), written by hand.
    let mut grr = vec![1, 2, 0, 0, 1, 0, 2, 0];
    grr.extend_from_slice(&(1u32 << 20).to_le_bytes());
    grr.extend_from_slice(&[7, 0, 0, 0]);
    assert!(decode_report(&grr).is_ok());
    s.conn
        .execute(
            "INSERT INTO reports (device, epoch, sequence, position, report)
                 VALUES (5, 1, 0, 1, ?1)",
            params![grr],
        )
        .unwrap();
    let c = Collector::new(s, Policy::default(), true).unwrap();
    assert_eq!(c.reports(), 1, "only the accepted SQ report");
}

#[test]
fn reopening_a_current_store_writes_nothing() {
    let path = temp_db("reopen");
    let mut s = Store::open(&path).unwrap();
    s.provision(1, &DeviceKey::new([1; 32]), eps(1, 1)).unwrap();
    drop(s);
    let before = std::fs::read(&path).unwrap();
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    drop(Store::open(&path).unwrap());
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        modified
    );
}

#[test]
fn auth_replay_and_budget() {
    let path = temp_db("auth");
    let mut s = Store::open(&path).unwrap();
    let (k1, k2) = (DeviceKey::new([1; 32]), DeviceKey::new([2; 32]));
    s.provision(1, &k1, eps(1, 1)).unwrap();
    s.provision(u64::MAX, &k2, eps(1, 1)).unwrap();
    let p = Policy::default();
    let mut open = OpenGroups::default();
    let a = frame(&k1, 1, 0, 2, 4); // ε 1/2
    let a_other = frame(&k1, 1, 0, 1, 4); // same replay key, other bytes
    let forged = frame(&k2, 1, 1, 1, 4); // device 1's id, device 2's key
    let unknown = frame(&k1, 9, 0, 1, 4);
    let big = frame(&k2, u64::MAX, 0, 3, 2); // ε 3/2 > cap 1
    let (st, fresh) = s
        .submit(
            &[&a, &a, &a_other, &forged, &unknown, &big, b"garbage"],
            &p,
            &mut open,
        )
        .unwrap();
    use FrameStatus::*;
    assert_eq!(
        st,
        vec![
            Accepted {
                device: 1,
                epoch: 1,
                sequence: 0,
                reports: 2
            },
            Duplicate {
                device: 1,
                epoch: 1,
                sequence: 0
            },
            Rejected(Rejection::Conflict),
            Rejected(Rejection::Frame(FrameReject::Mac)),
            Rejected(Rejection::Frame(FrameReject::UnknownDevice)),
            Rejected(Rejection::BudgetExceeded),
            Rejected(Rejection::Frame(FrameReject::Truncated)),
        ]
    );
    assert_eq!(fresh.len(), 2);
    // On the wire an unknown device and a bad tag look the same.
    let (wire_mac, wire_unknown) = (StatusJson::from(&st[3]), StatusJson::from(&st[4]));
    assert_eq!(wire_mac.reason, Some("unauthenticated"));
    assert_eq!(
        (wire_mac.reason, &wire_mac.detail),
        (wire_unknown.reason, &wire_unknown.detail)
    );
    // The spent ε persists across reopening; the next 1/2 fits exactly, then no more.
    drop(s);
    let mut s = Store::open(&path).unwrap();
    let spent = s.devices().unwrap()[1].spent;
    assert_eq!(spent, Some(eps(1, 2)));
    let b = frame(&k1, 1, 1, 2, 4);
    let c = frame(&k1, 1, 2, 1, 64);
    let (st, _) = s.submit(&[&b, &c], &p, &mut open).unwrap();
    assert!(matches!(st[0], Accepted { .. }));
    assert_eq!(st[1], Rejected(Rejection::BudgetExceeded));
    assert_eq!(s.reports().unwrap().len(), 4);
    assert_eq!(s.frame_count().unwrap(), 2);
    let max = s
        .devices()
        .unwrap()
        .into_iter()
        .find(|d| d.device == u64::MAX)
        .unwrap();
    assert_eq!(max.spent, None);
}

#[test]
fn domain_limit_and_test_keys() {
    let mut s = Store::open(&temp_db("policy")).unwrap();
    let mut tk = [0u8; 32];
    tk[16..].copy_from_slice(b"NOT-A-REAL-KEY!!");
    let test_key = DeviceKey::new(tk);
    assert!(is_test_key(&test_key));
    s.provision(3, &test_key, eps(10, 1)).unwrap();
    let f = frame(&test_key, 3, 0, 1, 1);
    let strict = Policy::default();
    let mut open = OpenGroups::default();
    assert_eq!(
        s.submit(&[&f], &strict, &mut open).unwrap().0,
        vec![FrameStatus::Rejected(Rejection::TestKey)]
    );
    let lax = Policy {
        allow_test_keys: true,
        ..strict.clone()
    };
    assert!(s.submit(&[&f], &lax, &mut open).unwrap().0[0].acknowledged());
    // A GRR report over 70 000 items (ε = 1, item 5): above the default limit.
    let key = DeviceKey::new([5; 32]);
    s.provision(4, &key, eps(10, 1)).unwrap();
    let mut buf = vec![0u8; 256];
    let mut w = FrameWriter::new(&mut buf, 4, 0, 0).unwrap();
    let d = 70_000u32.to_le_bytes();
    w.push(&[1, 2, 0, 0, 1, 0, 1, 0, d[0], d[1], d[2], d[3], 5, 0, 0, 0])
        .unwrap();
    let n = w.finish(&key).unwrap();
    let st = s.submit(&[&buf[..n]], &strict, &mut open).unwrap().0;
    assert_eq!(
        st,
        vec![FrameStatus::Rejected(Rejection::DomainTooLarge {
            index: 0
        })]
    );
}

/// A frame of one SQ-bit report for `query` at ε = 1/`den`, in `epoch`.
fn frame_q(key: &DeviceKey, device: u64, epoch: u32, seq: u32, query: u8, den: u8) -> Vec<u8> {
    let mut buf = vec![0u8; 256];
    let mut w = FrameWriter::new(&mut buf, device, epoch, seq).unwrap();
    w.push(&[1, 8, query, 0, 1, 0, den, 0, 0, 0, 0, 0, 1])
        .unwrap();
    let n = w.finish(key).unwrap();
    buf.truncate(n);
    buf
}

#[test]
fn one_report_per_device_and_kind_survives_restart() {
    use crate::http::Collector;
    let path = temp_db("once");
    let mut s = Store::open(&path).unwrap();
    let k = DeviceKey::new([8; 32]);
    s.provision(8, &k, eps(10, 1)).unwrap();
    let p = Policy::default();
    let mut open = OpenGroups::default();
    use FrameStatus::*;
    // Query 0 twice in one batch (other epochs, other sequence numbers): the
    // second is refused, not charged.
    let (st, fresh) = s
        .submit(
            &[&frame_q(&k, 8, 0, 0, 0, 2), &frame_q(&k, 8, 1, 0, 0, 2)],
            &p,
            &mut open,
        )
        .unwrap();
    assert!(matches!(st[0], Accepted { .. }));
    assert_eq!(st[1], Rejected(Rejection::AlreadyReported { index: 0 }));
    assert_eq!(StatusJson::from(&st[1]).reason, Some("already_reported"));
    // The device drops it (it would be refused for ever) rather than retrying.
    assert_eq!(st[1].delivery(), Delivery::Rejected);
    assert_eq!(
        Verdict::from_status(StatusJson::from(&st[1]).status),
        Some(Verdict::Rejected)
    );
    assert_eq!(st[0].delivery(), Delivery::Acknowledged);
    assert_eq!(fresh.len(), 1);
    // Two reports of one kind in a single frame: refused whole.
    let mut buf = vec![0u8; 256];
    let mut w = FrameWriter::new(&mut buf, 8, 2, 0).unwrap();
    w.push(&[1, 8, 5, 0, 1, 0, 2, 0, 0, 0, 0, 0, 1]).unwrap();
    w.push(&[1, 8, 5, 0, 1, 0, 2, 0, 0, 0, 0, 0, 0]).unwrap();
    let n = w.finish(&k).unwrap();
    let (st, _) = s.submit(&[&buf[..n]], &p, &mut open).unwrap();
    assert_eq!(st[0], Rejected(Rejection::AlreadyReported { index: 1 }));
    drop(s);
    // After a restart the rule holds (the `reported` table), the spent ε is that
    // of the one accepted report, and another ε is another kind.
    let s = Store::open(&path).unwrap();
    assert_eq!(s.devices().unwrap()[0].spent, Some(eps(1, 2)));
    let c = Collector::new(s, p, true).unwrap();
    let st = c
        .submit(&[&frame_q(&k, 8, 3, 0, 0, 2), &frame_q(&k, 8, 3, 1, 0, 4)])
        .unwrap();
    assert_eq!(st[0], Rejected(Rejection::AlreadyReported { index: 0 }));
    assert!(st[1].acknowledged());
    assert_eq!(c.reports(), 2);
}

#[test]
fn a_version_1_database_migrates_and_its_rebuild_agrees() {
    use crate::http::{Aggregates, Collector};
    let path = temp_db("v1");
    {
        // The version-1 schema, with two reports of one kind from one device (the
        // old rules allowed it).
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
                 CREATE TABLE devices (device INTEGER PRIMARY KEY, key BLOB NOT NULL CHECK (length(key) = 32), cap TEXT NOT NULL, spent TEXT);
                 CREATE TABLE frames (device INTEGER NOT NULL REFERENCES devices(device), epoch INTEGER NOT NULL, sequence INTEGER NOT NULL, tag BLOB NOT NULL CHECK (length(tag) = 32), reports INTEGER NOT NULL, received INTEGER NOT NULL, PRIMARY KEY (device, epoch, sequence));
                 CREATE TABLE reports (id INTEGER PRIMARY KEY, device INTEGER NOT NULL, epoch INTEGER NOT NULL, sequence INTEGER NOT NULL, position INTEGER NOT NULL, report BLOB NOT NULL, UNIQUE (device, epoch, sequence, position), FOREIGN KEY (device, epoch, sequence) REFERENCES frames(device, epoch, sequence));
                 PRAGMA user_version = 1;",
        )
        .unwrap();
        conn.execute(
            "INSERT INTO devices VALUES (9, ?1, '10', '1')",
            params![[9u8; 32].as_slice()],
        )
        .unwrap();
        for seq in 0..2 {
            conn.execute(
                "INSERT INTO frames VALUES (9, 0, ?1, ?2, 1, 0)",
                params![seq, [seq as u8; 32].as_slice()],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO reports (device, epoch, sequence, position, report) VALUES (9, 0, ?1, 0, ?2)",
                params![seq, [1u8, 8, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 1].as_slice()],
            )
            .unwrap();
        }
    }
    let s = Store::open(&path).unwrap();
    assert_eq!(s.frame_count().unwrap(), 2);
    assert_eq!(s.reports().unwrap().len(), 2);
    assert_eq!(s.devices().unwrap()[0].generation, 0);
    // `ldp aggregate --db` and the rebuild read the first report of the kind and
    // hold back the second, as intake would have.
    let mut n = 0;
    assert_eq!(s.for_each_admitted_report(|_| n += 1).unwrap(), 1);
    assert_eq!(n, 1);
    let a = Aggregates::from_store(&s).unwrap();
    assert_eq!((a.reports(), a.held_back()), (1, 1));
    let c = Collector::new(s, Policy::default(), true).unwrap();
    let k = DeviceKey::new([9; 32]);
    let st = c.submit(&[&frame_q(&k, 9, 1, 0, 0, 2)]).unwrap();
    assert_eq!(
        st[0],
        FrameStatus::Rejected(Rejection::AlreadyReported { index: 0 })
    );
    let est = c.estimates(0.95);
    assert_eq!((est.reports, est.held_back), (1, 1));
}

#[test]
fn provisioning_twice_is_refused_and_rotation_starts_a_new_replay_space() {
    let path = temp_db("rotate");
    let mut s = Store::open(&path).unwrap();
    let (old, new) = (DeviceKey::new([1; 32]), DeviceKey::new([2; 32]));
    s.provision(4, &old, eps(10, 1)).unwrap();
    assert!(matches!(
        s.provision(4, &new, eps(10, 1)),
        Err(ProvisionError::Exists { device: 4 })
    ));
    assert!(matches!(
        s.rotate(5, &new, eps(10, 1)),
        Err(ProvisionError::NotProvisioned { device: 5 })
    ));
    let p = Policy::default();
    let mut open = OpenGroups::default();
    let before = frame_q(&old, 4, 0, 0, 0, 2);
    assert!(s.submit(&[&before], &p, &mut open).unwrap().0[0].acknowledged());
    assert_eq!(s.rotate(4, &new, eps(10, 1)).unwrap(), 1);
    // The re-keyed device starts again at (epoch 0, sequence 0): no conflict with
    // the old frame; the old frame itself no longer verifies.
    let after = frame_q(&new, 4, 0, 0, 1, 2);
    let (st, _) = s.submit(&[&after, &before], &p, &mut open).unwrap();
    assert!(matches!(st[0], FrameStatus::Accepted { .. }), "{st:?}");
    assert_eq!(
        st[1],
        FrameStatus::Rejected(Rejection::Frame(FrameReject::Mac))
    );
    let d = &s.devices().unwrap()[0];
    assert_eq!((d.generation, d.spent), (1, Some(eps(1, 1))));
    let gens: Vec<u32> = s.reports().unwrap().iter().map(|r| r.generation).collect();
    assert_eq!(gens, vec![0, 1]);
    // A new cap alone keeps the generation, so a resent acknowledged frame is
    // still a duplicate.
    s.set_cap(4, eps(20, 1)).unwrap();
    let (st, _) = s.submit(&[&after], &p, &mut open).unwrap();
    assert!(matches!(st[0], FrameStatus::Duplicate { .. }), "{st:?}");
    let d = &s.devices().unwrap()[0];
    assert_eq!((d.generation, d.cap), (1, eps(20, 1)));
    assert!(matches!(
        s.set_cap(5, eps(1, 1)),
        Err(ProvisionError::NotProvisioned { device: 5 })
    ));
}

#[test]
fn an_overflowing_exact_sum_is_a_typed_rejection() {
    let mut s = Store::open(&temp_db("overflow")).unwrap();
    let k = DeviceKey::new([4; 32]);
    s.provision(3, &k, eps(1 << 40, 1)).unwrap();
    let p = Policy {
        min_epsilon: None,
        ..Policy::default()
    };
    let mut open = OpenGroups::default();
    // Distinct primes as denominators: the exact sum's denominator is their
    // product, past 2^64 after a few.
    let primes = [65521u16, 65519, 65497, 65479, 65449];
    let mut last = None;
    for (i, den) in primes.into_iter().enumerate() {
        let f = frame_eps(&k, 3, i as u32, den);
        last = Some(s.submit(&[&f], &p, &mut open).unwrap().0.remove(0));
        if !last.as_ref().unwrap().acknowledged() {
            break;
        }
    }
    let last = last.unwrap();
    assert_eq!(last, FrameStatus::Rejected(Rejection::EpsilonOverflow));
    assert_eq!(
        StatusJson::from(&last).reason,
        Some("epsilon_accounting_overflow")
    );
}

#[test]
fn a_reader_opens_only_a_collector_database_and_changes_no_other_file() {
    let path = temp_db("open-existing");
    assert!(matches!(
        Store::open_existing(&path),
        Err(StoreError::NotFound(_))
    ));
    assert!(!path.exists(), "a reader created the database");
    std::fs::write(&path, b"not a database at all".repeat(100)).unwrap();
    let e = Store::open_existing(&path).unwrap_err();
    assert!(matches!(e, StoreError::NotAStore(_)), "{e}");
    assert!(e.to_string().contains("not an SQLite database"), "{e}");
    std::fs::remove_file(&path).unwrap();
    // Another application's SQLite database: refused, byte for byte unchanged.
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE notes (body TEXT)")
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let e = Store::open_existing(&path).unwrap_err();
    assert!(matches!(e, StoreError::NotAStore(_)), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    std::fs::remove_file(&path).unwrap();
    // A collector's database opens, and reads into an intake.
    drop(Store::open(&path).unwrap());
    let store = Store::open_existing(&path).unwrap();
    let plan = privq_host::ldp::campaign::Campaign::from_json(
        r#"{"format": "privq-ldp-campaign", "version": 1, "mechanism": "sq-bit", "epsilon": "1/64"}"#,
    )
    .and_then(|c| c.validate(&privq_host::ldp::campaign::Limits::from_mib(16)))
    .unwrap();
    let mut intake = privq_host::ldp::intake::Intake::new(plan);
    assert_eq!(store.ingest_admitted(&mut intake).unwrap(), 0);
    assert_eq!(intake.stats().frames, 0);
}

/// Frames of `devices` devices (ids from `first`, key `[id; 32]`), each with
/// `reports` SQ-bit reports at ε = 1/4 over queries 0.., bits from a fixed pattern.
fn fleet_frames(first: u64, devices: u64, reports: usize) -> Vec<Vec<u8>> {
    (first..first + devices)
        .map(|d| {
            let key = DeviceKey::new([d as u8; 32]);
            let mut buf = vec![0u8; 4096];
            let mut w = FrameWriter::new(&mut buf, d, 2, 0).unwrap();
            for q in 0..reports {
                let bit = ((d as usize * 7 + q * 3) % 5 < 2) as u8;
                w.push(&[1, 8, q as u8, 0, 1, 0, 4, 0, 0, 0, 0, 0, bit])
                    .unwrap();
            }
            let n = w.finish(&key).unwrap();
            buf.truncate(n);
            buf
        })
        .collect()
}

/// A database of schema version 2 (as that collector wrote it: a row per report and
/// per reported kind) holding `frames`, accepted in order.
fn version_2_database(path: &std::path::Path, frames: &[Vec<u8>]) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch("PRAGMA journal_mode = WAL;").unwrap();
    conn.execute_batch(schema::SCHEMA_V2).unwrap();
    conn.execute_batch("PRAGMA user_version = 2;").unwrap();
    for f in frames {
        let h = upload::peek_header(f).unwrap();
        let key = DeviceKey::new([h.device as u8; 32]);
        let opened = upload::open(f, &key).unwrap();
        let spent = opened
            .reports()
            .map(|r| decode_report(r).unwrap().header.epsilon)
            .reduce(|a, b| a.checked_add(b).unwrap());
        conn.execute(
            "INSERT INTO devices (device, key, cap, spent, generation) VALUES (?1, ?2, '100', ?3, 0)",
            params![
                dev(h.device),
                key.as_bytes().as_slice(),
                spent.map(|s| s.to_string())
            ],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO frames (device, generation, epoch, sequence, tag, reports, received)
             VALUES (?1, 0, ?2, ?3, ?4, ?5, 0)",
            params![
                dev(h.device),
                h.epoch,
                h.sequence,
                &f[f.len() - TAG_LEN..],
                h.count
            ],
        )
        .unwrap();
        for (i, r) in opened.reports().enumerate() {
            conn.execute(
                "INSERT INTO reports (device, generation, epoch, sequence, position, report)
                 VALUES (?1, 0, ?2, ?3, ?4, ?5)",
                params![dev(h.device), h.epoch, h.sequence, i as i64, r],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO reported (device, kind) VALUES (?1, ?2)",
                params![
                    dev(h.device),
                    schema::kind_key(&ReportKind::of(&decode_report(r).unwrap()))
                ],
            )
            .unwrap();
        }
    }
}

#[test]
fn frames_stored_whole_aggregate_exactly_as_rows_per_report() {
    use crate::http::Aggregates;
    let frames = fleet_frames(1, 40, 12);
    // Schema 3: the frames stored whole by intake.
    let path = temp_db("blobs");
    let mut s = Store::open(&path).unwrap();
    for d in 1..=40u64 {
        s.provision(d, &DeviceKey::new([d as u8; 32]), eps(100, 1))
            .unwrap();
    }
    let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
    let (st, fresh) = s
        .submit(&refs, &Policy::default(), &mut OpenGroups::default())
        .unwrap();
    assert!(st.iter().all(FrameStatus::acknowledged));
    assert_eq!(fresh.len(), 40 * 12);
    let stored: i64 = s
        .conn
        .query_row("SELECT count(*) FROM reports", [], |r| r.get(0))
        .unwrap();
    assert_eq!(stored, 0, "no row per report");
    drop(s);
    let s = Store::open(&path).unwrap();
    let from_blobs = s.reports().unwrap();
    let blobs = Aggregates::from_store(&s).unwrap();
    // Schema 2: the same frames as rows per report, migrated on opening.
    let old = temp_db("rows");
    version_2_database(&old, &frames);
    let s2 = Store::open(&old).unwrap();
    let version: i64 = s2
        .conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let from_rows = s2.reports().unwrap();
    let rows = Aggregates::from_store(&s2).unwrap();
    assert_eq!(
        from_blobs, from_rows,
        "the same reports, replay keys and positions"
    );
    assert_eq!((blobs.reports(), rows.reports()), (480, 480));
    assert_eq!(
        serde_json::to_string(&blobs.estimates(0.95)).unwrap(),
        serde_json::to_string(&rows.estimates(0.95)).unwrap()
    );
    // And equal to aggregating the reports directly.
    let mut direct = Aggregates::default();
    direct.ingest(fresh.iter().map(Vec::as_slice));
    assert_eq!(
        serde_json::to_string(&blobs.estimates(0.95)).unwrap(),
        serde_json::to_string(&direct.estimates(0.95)).unwrap()
    );
}

#[test]
fn a_migrated_version_2_database_keeps_replay_budget_and_kind_rules() {
    use crate::http::Collector;
    let old = fleet_frames(1, 3, 4);
    let path = temp_db("v2");
    version_2_database(&path, &old);
    let s = Store::open(&path).unwrap();
    assert_eq!(s.frame_count().unwrap(), 3);
    let c = Collector::new(s, Policy::default(), true).unwrap();
    assert_eq!(c.reports(), 12);
    let k1 = DeviceKey::new([1; 32]);
    // A resent version-2 frame is a duplicate; another frame under its replay key
    // a conflict; a kind stored as a version-2 row is already reported; a new kind
    // is accepted and stored whole, after the rows in acceptance order.
    let mut other = vec![0u8; 256];
    let mut w = FrameWriter::new(&mut other, 1, 2, 0).unwrap();
    w.push(&[1, 8, 9, 0, 1, 0, 4, 0, 0, 0, 0, 0, 1]).unwrap();
    let n = w.finish(&k1).unwrap();
    let st = c
        .submit(&[
            &old[0],
            &other[..n],
            &frame_q(&k1, 1, 3, 0, 0, 4),
            &frame_q(&k1, 1, 3, 1, 20, 4),
        ])
        .unwrap();
    use FrameStatus::*;
    assert!(matches!(st[0], Duplicate { device: 1, .. }), "{st:?}");
    assert_eq!(st[1], Rejected(Rejection::Conflict));
    assert_eq!(st[2], Rejected(Rejection::AlreadyReported { index: 0 }));
    assert!(matches!(st[3], Accepted { reports: 1, .. }), "{st:?}");
    assert_eq!(c.reports(), 13);
    drop(c);
    let s = Store::open(&path).unwrap();
    let all = s.reports().unwrap();
    assert_eq!(all.len(), 13);
    assert_eq!(
        all.last().unwrap().report[2],
        20,
        "the stored frame's report comes last"
    );
    // The spent ε continues from the version-2 value: 4 × 1/4 + 1/4.
    assert_eq!(s.devices().unwrap()[0].spent, Some(eps(5, 4)));
}

#[test]
fn hostile_stored_frames_are_typed_errors() {
    use crate::http::{Aggregates, Collector};
    let k = DeviceKey::new([3; 32]);
    let good = frame(&k, 3, 0, 2, 4);
    type Damage = Box<dyn Fn(&Connection)>;
    let cases: Vec<(&str, Damage)> = vec![
        (
            "truncated",
            Box::new(|c: &Connection| {
                c.execute("UPDATE frames SET body = substr(body, 1, 40)", [])
                    .unwrap();
            }),
        ),
        (
            "a length prefix past the body",
            Box::new(|c: &Connection| {
                let mut b: Vec<u8> = c
                    .query_row("SELECT body FROM frames", [], |r| r.get(0))
                    .unwrap();
                b[25] = 0xff;
                c.execute("UPDATE frames SET body = ?1", params![b])
                    .unwrap();
            }),
        ),
        (
            "a count of zero",
            Box::new(|c: &Connection| {
                let mut b: Vec<u8> = c
                    .query_row("SELECT body FROM frames", [], |r| r.get(0))
                    .unwrap();
                b[23] = 0;
                b[24] = 0;
                c.execute("UPDATE frames SET body = ?1", params![b])
                    .unwrap();
            }),
        ),
        (
            "another replay key",
            Box::new(|c: &Connection| {
                c.execute("UPDATE frames SET sequence = 7", []).unwrap();
            }),
        ),
        (
            "text",
            Box::new(|c: &Connection| {
                c.execute("UPDATE frames SET body = 'PQUF'", []).unwrap();
            }),
        ),
        (
            "empty",
            Box::new(|c: &Connection| {
                c.execute("UPDATE frames SET body = x''", []).unwrap();
            }),
        ),
    ];
    for (what, damage) in cases {
        let path = temp_db(&format!("hostile-{}", what.replace(' ', "-")));
        let mut s = Store::open(&path).unwrap();
        s.provision(3, &k, eps(10, 1)).unwrap();
        let (st, _) = s
            .submit(&[&good], &Policy::default(), &mut OpenGroups::default())
            .unwrap();
        assert!(st[0].acknowledged());
        drop(s);
        damage(&Connection::open(&path).unwrap());
        let mut s = Store::open(&path).unwrap();
        assert!(
            matches!(s.reports(), Err(StoreError::Corrupt(_))),
            "{what}: {:?}",
            s.reports()
        );
        assert!(
            matches!(Aggregates::from_store(&s), Err(StoreError::Corrupt(_))),
            "{what}"
        );
        let mut n = 0;
        assert!(s.for_each_admitted_report(|_| n += 1).is_err(), "{what}");
        // Intake reads the device's stored kinds: fail closed, nothing stored.
        let next = frame(&k, 3, 1, 1, 4);
        assert!(
            matches!(
                s.submit(&[&next], &Policy::default(), &mut OpenGroups::default()),
                Err(StoreError::Corrupt(_))
            ),
            "{what}"
        );
        assert_eq!(s.frame_count().unwrap(), 1, "{what}");
        assert!(
            Collector::new(s, Policy::default(), true).is_err(),
            "{what}"
        );
    }
}

#[test]
fn changes_by_other_connections_reach_intake() {
    let path = temp_db("others");
    let mut s = Store::open(&path).unwrap();
    let k = DeviceKey::new([4; 32]);
    s.provision(4, &k, eps(1, 1)).unwrap();
    let p = Policy::default();
    let mut open = OpenGroups::default();
    let (st, _) = s
        .submit(&[&frame_q(&k, 4, 0, 0, 0, 2)], &p, &mut open)
        .unwrap();
    assert!(st[0].acknowledged());
    // Another connection (`privq serve provision` beside a live collector) lowers the
    // cap, provisions a device and rotates a key; the cached devices follow.
    let mut other = Store::open(&path).unwrap();
    other.set_cap(4, eps(1, 2)).unwrap();
    let k5 = DeviceKey::new([5; 32]);
    other.provision(5, &k5, eps(1, 1)).unwrap();
    let (st, _) = s
        .submit(
            &[&frame_q(&k, 4, 0, 1, 1, 4), &frame_q(&k5, 5, 0, 0, 0, 2)],
            &p,
            &mut open,
        )
        .unwrap();
    assert_eq!(st[0], FrameStatus::Rejected(Rejection::BudgetExceeded));
    assert!(st[1].acknowledged(), "{st:?}");
    let k6 = DeviceKey::new([6; 32]);
    other.rotate(5, &k6, eps(2, 1)).unwrap();
    let (st, _) = s
        .submit(
            &[&frame_q(&k5, 5, 1, 0, 1, 2), &frame_q(&k6, 5, 1, 0, 1, 2)],
            &p,
            &mut open,
        )
        .unwrap();
    assert_eq!(
        st[0],
        FrameStatus::Rejected(Rejection::Frame(FrameReject::Mac))
    );
    assert!(st[1].acknowledged(), "{st:?}");
    // The kind the device reported before the rotation is still reported.
    let (st, _) = s
        .submit(&[&frame_q(&k6, 5, 2, 0, 0, 2)], &p, &mut open)
        .unwrap();
    assert_eq!(
        st[0],
        FrameStatus::Rejected(Rejection::AlreadyReported { index: 0 })
    );
}

#[test]
fn a_batch_that_fails_changes_nothing_in_the_cache() {
    let path = temp_db("rollback");
    let mut s = Store::open(&path).unwrap();
    let k = DeviceKey::new([7; 32]);
    s.provision(7, &k, eps(1, 1)).unwrap();
    let p = Policy::default();
    let mut open = OpenGroups::default();
    // Warm the cache with the device, then make the batch's last statement fail on
    // the store's own connection (which does not change its data_version).
    let (st, _) = s
        .submit(&[&frame_q(&k, 7, 0, 0, 0, 4)], &p, &mut open)
        .unwrap();
    assert!(st[0].acknowledged());
    s.conn
        .execute_batch(
            "CREATE TRIGGER fail BEFORE UPDATE ON devices BEGIN SELECT RAISE(ABORT, 'no'); END;",
        )
        .unwrap();
    let f = frame_q(&k, 7, 0, 1, 1, 2);
    let groups = open.clone();
    assert!(s.submit(&[&f], &p, &mut open).is_err());
    assert_eq!(open, groups, "no group opened by the failed batch");
    s.conn.execute_batch("DROP TRIGGER fail;").unwrap();
    // Neither the kind, the spent ε nor the replay key of the failed batch stuck.
    let (st, _) = s.submit(&[&f], &p, &mut open).unwrap();
    assert!(matches!(st[0], FrameStatus::Accepted { .. }), "{st:?}");
    assert_eq!(s.devices().unwrap()[0].spent, Some(eps(3, 4)));
    assert_eq!(s.frame_count().unwrap(), 2);
}

#[test]
fn a_kind_repeated_in_a_frame_is_found_before_and_past_the_scan() {
    let mut s = Store::open(&temp_db("repeat")).unwrap();
    let k = DeviceKey::new([2; 32]);
    s.provision(2, &k, eps(100, 1)).unwrap();
    let p = Policy::default();
    let mut open = OpenGroups::default();
    // Queries 0..n with query `from` at position `at` again.
    let frame_repeating = |seq: u32, n: u8, at: usize, from: u8| {
        let mut buf = vec![0u8; 1024];
        let mut w = FrameWriter::new(&mut buf, 2, 0, seq).unwrap();
        for (i, q) in (0..n).enumerate() {
            let q = if i == at {
                from
            } else {
                q + 100 * (seq as u8 % 2)
            };
            w.push(&[1, 8, q, 0, 1, 0, 4, 0, 0, 0, 0, 0, 1]).unwrap();
        }
        let n = w.finish(&k).unwrap();
        buf.truncate(n);
        buf
    };
    for (seq, n, at, from) in [
        (0, 6, 5, 2),
        (1, 20, 3, 101),
        (2, 20, 15, 9),
        (3, 20, 19, 100),
    ] {
        let f = frame_repeating(seq, n, at, from);
        let (st, _) = s.submit(&[&f], &p, &mut open).unwrap();
        assert_eq!(
            st[0],
            FrameStatus::Rejected(Rejection::AlreadyReported { index: at as u16 }),
            "frame {seq}"
        );
    }
    assert_eq!(s.frame_count().unwrap(), 0);
}

/// Every verdict a device acts on carries a tag that verifies under its key with
/// privq-core's device-side check, through the JSON the collector sends; refusals
/// carry none; a tag moved to another frame or verdict verifies for nothing.
#[test]
fn verdicts_are_tagged_for_the_device_and_refusals_are_not() {
    use crate::http::Collector;
    let path = temp_db("verdict-tags");
    let mut s = Store::open(&path).unwrap();
    let k = DeviceKey::new([3; 32]);
    s.provision(3, &k, eps(1, 1)).unwrap();
    let c = Collector::new(s, Policy::default(), true).unwrap();
    let accepted = frame_eps(&k, 3, 0, 2);
    let conflict = frame_eps(&k, 3, 0, 4); // same replay key, other bytes
    let over_cap = frame(&k, 3, 1, 3, 1); // three reports at ε = 1: past the cap
    let unknown = frame_eps(&DeviceKey::new([9; 32]), 9, 0, 2);
    let bad_mac = {
        let mut f = frame_eps(&k, 3, 2, 2);
        let last = f.len() - 1;
        f[last] ^= 1;
        f
    };
    let batch = [
        &accepted, &accepted, &conflict, &over_cap, &unknown, &bad_mac,
    ];
    let refs: Vec<&[u8]> = batch.iter().map(|f| f.as_slice()).collect();
    let answers = c.submit_answered(&refs).unwrap();
    let device_side: Vec<Delivery> = answers
        .iter()
        .zip(&refs)
        .map(|((status, tag), frame)| {
            // What a device reads back: the JSON status and tag.
            let json = serde_json::to_value(StatusJson::from(status).with_tag(*tag)).unwrap();
            let verdict = Verdict::from_status(json["status"].as_str().unwrap());
            let tag = json.get("tag").map(|t| {
                let hex = t.as_str().unwrap();
                let bytes: Vec<u8> = (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                    .collect();
                <[u8; TAG_LEN]>::try_from(bytes).unwrap()
            });
            assert_eq!(verdict.is_some(), tag.is_some(), "{json}");
            match (verdict, tag) {
                (Some(v), Some(t)) => v.delivery(&k, frame, &t),
                _ => Delivery::NotDelivered,
            }
        })
        .collect();
    assert_eq!(
        device_side,
        [
            Delivery::Acknowledged, // accepted
            Delivery::Acknowledged, // duplicate
            Delivery::Rejected,     // replay_conflict (permanent)
            Delivery::Rejected,     // budget_exceeded (permanent)
            Delivery::NotDelivered, // unauthenticated: refused, no tag
            Delivery::NotDelivered, // bad tag: refused, no tag
        ],
        "{answers:?}"
    );
    // The accepted frame's tag is bound to it: it acknowledges no other frame, and
    // says nothing as another verdict.
    let accepted_tag = answers[0].1.unwrap();
    assert_eq!(
        Verdict::Accepted.delivery(&k, &over_cap, &accepted_tag),
        Delivery::NotDelivered
    );
    assert_eq!(
        Verdict::Rejected.delivery(&k, &accepted, &accepted_tag),
        Delivery::NotDelivered
    );
}

/// A database file's bytes with its side files (`-wal`, `-shm`): what a reader
/// must leave as it was.
fn file_bytes(path: &std::path::Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

/// `sql` run on a new SQLite file at `path` (another application's, or a forged
/// collector database).
fn sqlite_file(path: &std::path::Path, sql: &str) {
    let _ = std::fs::remove_file(path);
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(sql).unwrap();
}

#[test]
fn a_reader_refuses_foreign_and_forged_schemas_and_writes_nothing() {
    let path = temp_db("foreign-schemas");
    let v2 = schema::SCHEMA_V2;
    let v3 = schema::SCHEMA;
    let cases: Vec<(&str, String)> = vec![
        // A `reports` table and a schema version of 1 or 7: not ours.
        (
            "version 1, reports and frames of another shape",
            "CREATE TABLE reports (id INTEGER PRIMARY KEY, device INTEGER, epoch INTEGER, \
             sequence INTEGER, position INTEGER, report BLOB);
             CREATE TABLE frames (device INTEGER, epoch INTEGER, sequence INTEGER, tag BLOB, \
             reports INTEGER, received INTEGER);
             CREATE TABLE x(a); PRAGMA user_version = 1;"
                .into(),
        ),
        (
            "version 7, a reports table",
            "CREATE TABLE reports (x TEXT); PRAGMA user_version = 7;".into(),
        ),
        // The collector's version-2 tables, but another `reports`: not migrated.
        (
            "version 2, another reports table",
            format!("CREATE TABLE reports (x TEXT); {v2} PRAGMA user_version = 2;"),
        ),
        // A generated report of 200 MB (the reader allocated until it aborted).
        (
            "version 2, generated report column",
            format!(
                "CREATE TABLE reports (id INTEGER PRIMARY KEY, device INTEGER, generation \
                 INTEGER, epoch INTEGER, sequence INTEGER, position INTEGER, report BLOB \
                 GENERATED ALWAYS AS (zeroblob(200000000)) VIRTUAL);
                 {v2} INSERT INTO reports (id, device, generation, epoch, sequence, position)
                 VALUES (1, 1, 0, 0, 0, 0); PRAGMA user_version = 2;"
            ),
        ),
        (
            "version 3, generated frame body",
            format!(
                "CREATE TABLE frames (device INTEGER NOT NULL, generation INTEGER NOT NULL \
                 DEFAULT 0, epoch INTEGER NOT NULL, sequence INTEGER NOT NULL, tag BLOB NOT \
                 NULL, reports INTEGER NOT NULL, received INTEGER NOT NULL, body BLOB \
                 GENERATED ALWAYS AS (zeroblob(200000000)) VIRTUAL, PRIMARY KEY (device, \
                 generation, epoch, sequence));
                 {v3} INSERT INTO frames VALUES (1, 0, 0, 0, zeroblob(32), 1, 0);
                 PRAGMA user_version = 3;"
            ),
        ),
        // A virtual `id` computed at every row (the read hung).
        (
            "version 3, generated id",
            format!(
                "CREATE TABLE reports (rid INTEGER PRIMARY KEY, device INTEGER, generation \
                 INTEGER, epoch INTEGER, sequence INTEGER, position INTEGER, report BLOB, id \
                 INTEGER GENERATED ALWAYS AS (length(hex(zeroblob(20000000 + rid))) + rid) \
                 VIRTUAL); {v3} PRAGMA user_version = 3;"
            ),
        ),
        (
            "version 3, an extra column",
            format!(
                "CREATE TABLE devices (device INTEGER PRIMARY KEY, key BLOB NOT NULL, cap TEXT \
                 NOT NULL, spent TEXT, generation INTEGER NOT NULL DEFAULT 0, note TEXT);
                 {v3} PRAGMA user_version = 3;"
            ),
        ),
        (
            "version 3, a view",
            format!("{v3} CREATE VIEW v AS SELECT 1; PRAGMA user_version = 3;"),
        ),
        (
            "version 3, a trigger",
            format!(
                "{v3} CREATE TRIGGER t AFTER INSERT ON devices BEGIN SELECT 1; END;
                 PRAGMA user_version = 3;"
            ),
        ),
    ];
    let side = |end: &str| {
        let mut p = path.as_os_str().to_owned();
        p.push(end);
        std::path::PathBuf::from(p)
    };
    for ((what, sql), journal) in cases.iter().flat_map(|c| [(c, "DELETE"), (c, "WAL")]) {
        sqlite_file(&path, &format!("PRAGMA journal_mode = {journal}; {sql}"));
        assert!(!side("-wal").exists() && !side("-shm").exists());
        let before = file_bytes(&path);
        let e = Store::open_existing(&path).unwrap_err();
        assert!(matches!(e, StoreError::NotAStore(_)), "{what}: {e}");
        assert!(
            !e.to_string().contains("the collector's schema"),
            "{what}: {e}"
        );
        assert_eq!(file_bytes(&path), before, "{what}: the file changed");
        // Not even SQLite's side files of a WAL-mode file.
        assert!(
            !side("-wal").exists() && !side("-shm").exists(),
            "{what} ({journal})"
        );
        let version: i64 = Connection::open(&path)
            .unwrap()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert!(version != SCHEMA_VERSION || sql.contains("= 3;"), "{what}");
    }
}

#[test]
fn a_reader_never_migrates_and_names_other_versions() {
    // A collector database of version 2: refused as it is, with the way out.
    let path = temp_db("reader-v2");
    version_2_database(&path, &fleet_frames(1, 2, 3));
    let before = file_bytes(&path);
    let e = Store::open_existing(&path).unwrap_err();
    assert!(
        matches!(e, StoreError::SchemaVersion { found: 2, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("privq serve --db"), "{e}");
    assert_eq!(file_bytes(&path), before, "a reader migrated the database");
    // Migrated by the collector, it reads.
    drop(Store::open(&path).unwrap());
    assert_eq!(
        Store::open_existing(&path)
            .unwrap()
            .reports()
            .unwrap()
            .len(),
        6
    );
    // Newer than this program: refused, naming the version.
    let newer = temp_db("reader-v4");
    drop(Store::open(&newer).unwrap());
    Connection::open(&newer)
        .unwrap()
        .execute_batch("PRAGMA user_version = 4;")
        .unwrap();
    let before = file_bytes(&newer);
    let e = Store::open_existing(&newer).unwrap_err();
    assert!(
        matches!(e, StoreError::SchemaVersion { found: 4, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("version 4"), "{e}");
    assert_eq!(file_bytes(&newer), before);
    // Version 1, its schema: refused the same way.
    let v1 = temp_db("reader-v1");
    sqlite_file(
        &v1,
        &format!("{} PRAGMA user_version = 1;", schema::SCHEMA_V1),
    );
    let before = file_bytes(&v1);
    let e = Store::open_existing(&v1).unwrap_err();
    assert!(
        matches!(e, StoreError::SchemaVersion { found: 1, .. }),
        "{e}"
    );
    assert_eq!(file_bytes(&v1), before);
}

#[test]
fn a_reader_connection_is_read_only_and_refuses_oversized_values() {
    let path = temp_db("reader-limits");
    {
        let mut s = Store::open(&path).unwrap();
        s.provision(1, &DeviceKey::new([1; 32]), eps(100, 1))
            .unwrap();
        // A stored body far longer than any frame (written behind the collector).
        s.conn
            .execute(
                "INSERT INTO frames (device, generation, epoch, sequence, tag, reports, received, body)
                 VALUES (1, 0, 0, 0, zeroblob(32), 1, 0, zeroblob(4000000))",
                [],
            )
            .unwrap();
    }
    let before = file_bytes(&path);
    let s = Store::open_existing(&path).unwrap();
    let e = s.reports().unwrap_err();
    assert!(e.to_string().contains("too big"), "{e}");
    // Its connection writes nothing.
    assert!(s.conn.execute("DELETE FROM frames", []).is_err());
    let mut open = OpenGroups::default();
    assert!(
        s.devices().is_ok()
            && Store::open_existing(&path)
                .unwrap()
                .submit(
                    &[&frame(&DeviceKey::new([1; 32]), 1, 1, 1, 4)],
                    &Policy::default(),
                    &mut open
                )
                .is_err()
    );
    drop(s);
    assert_eq!(file_bytes(&path), before);
}

#[test]
fn reports_without_frames_and_frames_without_devices_are_corrupt() {
    // Forged rows (written with the foreign keys off): a report row of no stored
    // frame, a frame of no provisioned device. Readers refuse them.
    let report = frame_report(4);
    for (what, sql) in [
        (
            "report row without its frame",
            "INSERT INTO reports (device, generation, epoch, sequence, position, report)
             VALUES (7, 0, 0, 0, 0, ?1)",
        ),
        (
            "frame of an unprovisioned device",
            "INSERT INTO frames (device, generation, epoch, sequence, tag, reports, received, body)
             VALUES (7, 0, 1, 0, zeroblob(32), 1, 0, ?1)",
        ),
    ] {
        let path = temp_db("forged-rows");
        drop(Store::open(&path).unwrap());
        let body = frame_with(&DeviceKey::new([7; 32]), 7, 0, &report);
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
            let value: &[u8] = if what.starts_with("report") {
                &report
            } else {
                &body
            };
            conn.execute(sql, params![value]).unwrap();
        }
        let s = Store::open_existing(&path).unwrap();
        let e = s.reports().unwrap_err();
        assert!(matches!(e, StoreError::Corrupt(_)), "{what}: {e}");
    }
}

// ---------------------------------------------------------------- rev77 audit reproducers

/// A one-report frame of `device` (epoch 0, sequence `seq`, query `q`) under `key`.
fn rev77_frame(key: &DeviceKey, device: u64, seq: u32, q: u16) -> Vec<u8> {
    let mut buf = vec![0u8; 256];
    let mut w = FrameWriter::new(&mut buf, device, 0, seq).unwrap();
    let [q0, q1] = q.to_le_bytes();
    w.push(&[1, 8, q0, q1, 1, 0, 64, 0, 0, 0, 0, 0, 1]).unwrap();
    let n = w.finish(key).unwrap();
    buf.truncate(n);
    buf
}

fn rev77_key(d: u64) -> DeviceKey {
    let mut k = [0u8; 32];
    k[..8].copy_from_slice(&d.to_le_bytes());
    k[8] = 0xa5;
    DeviceKey::new(k)
}

/// Provisions ids in one transaction on the store's own connection (fast; the cache
/// is empty at this point anyway).
fn rev77_provision(s: &mut Store, ids: impl Iterator<Item = u64>) {
    let tx = s.conn.transaction().unwrap();
    {
        let mut st = tx
            .prepare("INSERT INTO devices (device, key, cap, spent, generation) VALUES (?1, ?2, '1000000', NULL, 0)")
            .unwrap();
        for d in ids {
            st.execute(params![dev(d), rev77_key(d).as_bytes().as_slice()])
                .unwrap();
        }
    }
    tx.commit().unwrap();
}

fn rev77_policy() -> Policy {
    Policy {
        max_groups: 1 << 16,
        max_groups_per_device: 1 << 16,
        max_items: 1 << 30,
        max_items_per_device: 1 << 30,
        ..Policy::default()
    }
}

thread_local! {
    /// SQL statements started and rows produced on this thread's traced connections.
    static SQL_WORK: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

fn count_sql(e: rusqlite::trace::TraceEvent<'_>) {
    SQL_WORK.with(|w| {
        let (stmts, rows) = w.get();
        match e {
            rusqlite::trace::TraceEvent::Stmt(..) => w.set((stmts + 1, rows)),
            rusqlite::trace::TraceEvent::Row(..) => w.set((stmts, rows + 1)),
            _ => {}
        }
    });
}

/// The SQL work (statements, rows) of one `submit` of `frames`.
fn sql_work_of(s: &mut Store, frames: &[Vec<u8>], p: &Policy, open: &mut OpenGroups) -> (u64, u64) {
    let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
    SQL_WORK.with(|w| w.set((0, 0)));
    let (st, _) = s.submit(&refs, p, open).unwrap();
    // Every answer is the same `unauthenticated`.
    assert!(
        st.iter()
            .all(|x| matches!(x, FrameStatus::Rejected(r) if r.wire_name() == "unauthenticated")),
        "{st:?}"
    );
    SQL_WORK.with(std::cell::Cell::get)
}

/// rev77 (HIGH): the work before a frame's tag is checked is the same whatever its
/// device id — active provisioned (its kinds cached), idle provisioned, or unknown —
/// so a client without keys cannot tell them apart by time. Asserted on the work,
/// not on time: the SQL statements run and rows read by a batch of forged frames
/// (none per frame; the cache holds the whole `devices` table), on a warm cache and
/// on the batch that builds it, and no entry is made for an unknown id.
#[test]
fn rev77_forged_frames_cost_the_same_work_whatever_the_id() {
    const N: u64 = 256;
    let mut s = Store::open(&temp_db("rev77-work")).unwrap();
    let p = rev77_policy();
    let mut open = OpenGroups::default();
    let active = 0..N;
    // Idle provisioned ids and unknown ids interleaved (even / odd).
    let idle = || ((1u64 << 40) / 2..(1u64 << 40) / 2 + N).map(|i| 2 * i);
    let unknown = || ((1u64 << 40) / 2..(1u64 << 40) / 2 + N).map(|i| 2 * i + 1);
    rev77_provision(&mut s, active.clone());
    rev77_provision(&mut s, idle());
    // The fleet at work: every active device sends one authenticated frame.
    let fs: Vec<Vec<u8>> = active
        .clone()
        .map(|d| rev77_frame(&rev77_key(d), d, 0, 0))
        .collect();
    let refs: Vec<&[u8]> = fs.iter().map(Vec::as_slice).collect();
    let (st, _) = s.submit(&refs, &p, &mut open).unwrap();
    assert!(st.iter().all(FrameStatus::acknowledged));
    assert!(active.clone().all(|d| s.intake.devices[&d].kinds.is_some()));
    let forged = |ids: Vec<u64>| -> Vec<Vec<u8>> {
        ids.into_iter()
            .map(|d| rev77_frame(&DeviceKey::new([0x77; 32]), d, 9, 9))
            .collect()
    };
    let sets: [Vec<u64>; 3] = [
        active.clone().collect(),
        idle().collect(),
        unknown().collect(),
    ];
    s.conn.trace_v2(
        rusqlite::trace::TraceEventCodes::SQLITE_TRACE_STMT
            | rusqlite::trace::TraceEventCodes::SQLITE_TRACE_ROW,
        Some(count_sql),
    );
    let mut warm = Vec::new();
    let mut cold = Vec::new();
    for ids in &sets {
        // A whole batch of forged frames, and one of a single frame.
        warm.push(sql_work_of(&mut s, &forged(ids.clone()), &p, &mut open));
        warm.push(sql_work_of(&mut s, &forged(vec![ids[0]]), &p, &mut open));
        // The batch that builds the cache (first batch, or after another commit).
        s.intake.invalidate();
        cold.push(sql_work_of(&mut s, &forged(ids.clone()), &p, &mut open));
    }
    eprintln!("SQL (statements, rows) per batch: warm {warm:?}, building the cache {cold:?}");
    assert!(warm.iter().all(|w| *w == warm[0]), "{warm:?}");
    assert!(cold.iter().all(|w| *w == cold[0]), "{cold:?}");
    // Building reads the devices once (2N rows), whatever the frames.
    assert!(cold[0].1 >= 2 * N, "{cold:?}");
    // No entry for an unknown id.
    assert_eq!(s.intake.devices.len(), 2 * N as usize);
    assert!(sets[2].iter().all(|d| !s.intake.devices.contains_key(d)));
}

/// rev77 (MEDIUM): unauthenticated frames of random ids leave nothing in the
/// intake cache, so they can neither grow it nor force a drop that would make
/// legitimate devices re-read their histories.
#[test]
fn rev77_random_ids_leave_the_cache_alone() {
    let mut s = Store::open(&temp_db("rev77-flood")).unwrap();
    let p = rev77_policy();
    let mut open = OpenGroups::default();
    let legit = 5u64;
    rev77_provision(&mut s, std::iter::once(legit));
    let k = rev77_key(legit);
    let fs: Vec<Vec<u8>> = (0..100)
        .map(|i| rev77_frame(&k, legit, i, i as u16))
        .collect();
    let refs: Vec<&[u8]> = fs.iter().map(Vec::as_slice).collect();
    let (st, _) = s.submit(&refs, &p, &mut open).unwrap();
    assert!(st.iter().all(FrameStatus::acknowledged));
    let held = (s.intake.kinds, s.intake.sets);
    assert_eq!(held, (100, 1));
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..64 {
        let mut fs = Vec::with_capacity(1024);
        for _ in 0..1024 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Header by hand (count 1, no body): framing passes, the tag fails.
            let len = (FRAME_HEADER_LEN + TAG_LEN) as u16;
            let mut f = Vec::with_capacity(len as usize);
            f.extend_from_slice(b"PQUF");
            f.push(1);
            f.extend_from_slice(&len.to_le_bytes());
            f.extend_from_slice(&x.to_le_bytes());
            f.extend_from_slice(&[0; 8]);
            f.extend_from_slice(&1u16.to_le_bytes());
            f.extend_from_slice(&[0; TAG_LEN]);
            fs.push(f);
        }
        let refs: Vec<&[u8]> = fs.iter().map(Vec::as_slice).collect();
        let (st, _) = s.submit(&refs, &p, &mut open).unwrap();
        assert!(
            st.iter().all(|x| matches!(x, FrameStatus::Rejected(_))),
            "{:?}",
            st[0]
        );
        assert_eq!(s.intake.devices.len(), 1);
        assert_eq!((s.intake.kinds, s.intake.sets), held);
    }
}

/// rev77 (MEDIUM): past the cache's byte bound the held kinds are dropped, never
/// the devices; a device's kinds are read again after its next authenticated frame
/// and the one-report-per-kind rule holds throughout.
#[test]
fn rev77_kinds_past_the_byte_bound_are_dropped_and_read_again() {
    let mut s = Store::open(&temp_db("rev77-bound")).unwrap();
    let p = rev77_policy();
    let mut open = OpenGroups::default();
    rev77_provision(&mut s, 0..4);
    let (st, _) = s
        .submit(&[&rev77_frame(&rev77_key(1), 1, 0, 0)], &p, &mut open)
        .unwrap();
    assert!(st[0].acknowledged());
    assert!(s.intake.devices[&1].kinds.is_some());
    // As if the cache held more than its bound.
    s.intake.kinds = CACHE_BYTES / KIND_BYTES + 1;
    assert!(s.intake.bytes() > CACHE_BYTES);
    let (st, _) = s
        .submit(&[&rev77_frame(&rev77_key(1), 1, 1, 0)], &p, &mut open)
        .unwrap();
    assert_eq!(
        st[0],
        FrameStatus::Rejected(Rejection::AlreadyReported { index: 0 })
    );
    assert_eq!(s.intake.devices.len(), 4);
    assert_eq!((s.intake.kinds, s.intake.sets), (1, 1));
    eprintln!(
        "estimates: {DEVICE_BYTES} bytes per device, {SET_BYTES} per kind set, {KIND_BYTES} per kind; \
         at most {} devices",
        Store::MAX_DEVICES
    );
}

/// Checks found sound: repeats and conflicts inside one batch, budget across frames
/// of one batch, duplicate winning over budget and kind after a restart, own-
/// connection set_cap and rotation between batches.
#[test]
fn rev77_batch_internal_replay_budget_and_cache_are_sound() {
    let path = temp_db("rev77-sound");
    let p = rev77_policy();
    let k = rev77_key(1);
    {
        let mut s = Store::open(&path).unwrap();
        s.provision(1, &k, eps(3, 64)).unwrap();
        let mut open = OpenGroups::default();
        let a = rev77_frame(&k, 1, 0, 0);
        let a2 = rev77_frame(&k, 1, 0, 1); // same replay key, another report
        let b = rev77_frame(&k, 1, 1, 2);
        let c = rev77_frame(&k, 1, 2, 3);
        let d = rev77_frame(&k, 1, 3, 4);
        let (st, fresh) = s
            .submit(&[&a, &a, &a2, &b, &c, &d, &b], &p, &mut open)
            .unwrap();
        assert!(matches!(st[0], FrameStatus::Accepted { .. }), "{st:?}");
        assert!(matches!(st[1], FrameStatus::Duplicate { .. }), "{st:?}");
        assert_eq!(st[2], FrameStatus::Rejected(Rejection::Conflict));
        assert!(matches!(st[3], FrameStatus::Accepted { .. }), "{st:?}");
        assert!(matches!(st[4], FrameStatus::Accepted { .. }), "{st:?}");
        assert_eq!(st[5], FrameStatus::Rejected(Rejection::BudgetExceeded));
        assert!(matches!(st[6], FrameStatus::Duplicate { .. }), "{st:?}");
        assert_eq!(fresh.len(), 3);
        assert_eq!(s.devices().unwrap()[0].spent, Some(eps(3, 64)));
        // Same batch again: all duplicates (budget exhausted, kinds reported).
        let (st, fresh) = s.submit(&[&d, &c, &a, &b], &p, &mut open).unwrap();
        assert_eq!(st[0], FrameStatus::Rejected(Rejection::BudgetExceeded));
        assert!(
            st[1..]
                .iter()
                .all(|x| matches!(x, FrameStatus::Duplicate { .. })),
            "{st:?}"
        );
        assert!(fresh.is_empty());
        // set_cap on the store's own connection reaches the cache.
        s.set_cap(1, eps(4, 64)).unwrap();
        let (st, _) = s.submit(&[&d], &p, &mut open).unwrap();
        assert!(matches!(st[0], FrameStatus::Accepted { .. }), "{st:?}");
    }
    // Restart: a replayed frame is the device's first (kinds loaded lazily).
    let mut s = Store::open(&path).unwrap();
    let mut open = OpenGroups::default();
    let (st, _) = s
        .submit(
            &[&rev77_frame(&k, 1, 1, 2), &rev77_frame(&k, 1, 9, 2)],
            &p,
            &mut open,
        )
        .unwrap();
    assert!(matches!(st[0], FrameStatus::Duplicate { .. }), "{st:?}");
    assert_eq!(
        st[1],
        FrameStatus::Rejected(Rejection::AlreadyReported { index: 0 })
    );
    // Rotation on the same connection: new replay space, old kinds stay.
    let k2 = rev77_key(99);
    s.rotate(1, &k2, eps(100, 1)).unwrap();
    let (st, _) = s
        .submit(
            &[
                &rev77_frame(&k, 1, 0, 0),
                &rev77_frame(&k2, 1, 0, 0),
                &rev77_frame(&k2, 1, 0, 7),
            ],
            &p,
            &mut open,
        )
        .unwrap();
    assert_eq!(
        st[0],
        FrameStatus::Rejected(Rejection::Frame(FrameReject::Mac))
    );
    assert_eq!(
        st[1],
        FrameStatus::Rejected(Rejection::AlreadyReported { index: 0 })
    );
    assert!(matches!(st[2], FrameStatus::Accepted { .. }), "{st:?}");
    assert_eq!(s.reports().unwrap().len(), 5);
}

/// rev77 (LOW): two programs opening a version-2 database at once (the upgraded
/// collector starting while `privq serve provision` runs) both read version 2; the
/// second, waiting for the first's write lock, finds the database migrated instead
/// of failing on "duplicate column name: body".
#[test]
fn rev77_concurrent_first_opens_of_a_version_2_database() {
    let path = temp_db("rev77-migrate-race");
    version_2_database(&path, &fleet_frames(1, 2, 2));
    // The other program's migration, holding the write lock while this one opens.
    let other = Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE;").unwrap();
    let p2 = path.clone();
    let opener = std::thread::spawn(move || Store::open(&p2).map(|_| ()));
    std::thread::sleep(std::time::Duration::from_millis(300));
    other
        .execute_batch("ALTER TABLE frames ADD COLUMN body BLOB; PRAGMA user_version = 3; COMMIT;")
        .unwrap();
    let r = opener.join().unwrap();
    // The version is read again under the write lock: the database is found
    // migrated, not migrated twice.
    assert!(r.is_ok(), "{r:?}");
    let s = Store::open(&path).unwrap();
    let v: i64 = s
        .conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, SCHEMA_VERSION);
}

/// The device bound the docs state (`Store::MAX_DEVICES`: 242 estimated bytes per
/// device, half of a 1 GiB cache).
#[test]
fn the_documented_device_bound_holds() {
    assert_eq!(DEVICE_BYTES, 242);
    assert_eq!(Store::MAX_DEVICES, (1 << 29) / 242);
}

/// Provisioning stops at the device bound ([`Store::MAX_DEVICES`], here a small
/// one): one device more would make the collector refuse to start on the database,
/// so the store refuses to add it and leaves the table as it was (an id already
/// there is still `Exists`).
#[test]
fn provisioning_past_the_device_bound_is_refused() {
    let path = temp_db("full");
    let mut s = Store::open(&path).unwrap();
    let key = DeviceKey::new([7; KEY_LEN]);
    for d in 0..3 {
        s.provision_within(d, &key, eps(1, 1), 3).unwrap();
    }
    assert!(matches!(
        s.provision_within(1, &key, eps(1, 1), 3),
        Err(ProvisionError::Exists { device: 1 })
    ));
    let err = s
        .provision_within(u64::MAX, &key, eps(1, 1), 3)
        .unwrap_err();
    assert!(matches!(err, ProvisionError::Full { max: 3 }));
    assert!(err.to_string().contains("nothing added"), "{err}");
    let n: i64 = s
        .conn
        .query_row("SELECT count(*) FROM devices", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 3);
    s.provision(u64::MAX, &key, eps(1, 1)).unwrap(); // the real bound is far away
    drop(s);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

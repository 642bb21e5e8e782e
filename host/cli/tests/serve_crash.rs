//! `privq serve` loses nothing and counts nothing twice: the real binary on
//! loopback is killed with SIGKILL at random points while a client sends batches;
//! unacknowledged batches are retried after each restart. Afterwards every sent
//! report is stored exactly once, and the estimates (the server's, and those of
//! `privq ldp aggregate --db`) equal the in-process aggregation of exactly those
//! reports.
#![cfg(feature = "serve")]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use privq_collector::client::Client;
use privq_collector::http::{Aggregates, push_batch};
use privq_collector::store::Store;
use privq_core::upload::{DeviceKey, FrameWriter};
use privq_host::ldp::frames;
use rand_chacha::ChaCha12Rng;
use rand_core::{Rng, SeedableRng};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_privq");
const FLEET: u64 = 11;
const DEVICES: u64 = 1024;
/// Queries per mechanism: each device reports each (mechanism, query) at most once.
const QUERIES: u8 = 8;
const BATCHES: usize = 2000;
const KILLS: usize = 60;

/// The documented test-only key of simulated device `device` in fleet `FLEET`.
fn test_key(device: u64) -> DeviceKey {
    let mut k = [0u8; 32];
    k[..8].copy_from_slice(&FLEET.to_le_bytes());
    k[8..16].copy_from_slice(&device.to_le_bytes());
    k[16..].copy_from_slice(b"NOT-A-REAL-KEY!!");
    DeviceKey::new(k)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("privq-serve-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Starts `privq serve` on a free loopback port; returns it and its address.
fn start(db: &Path) -> (Child, SocketAddr) {
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--allow-test-keys",
            "--quiet",
            "--db",
        ])
        .arg(db)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start privq serve");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("privq serve exited before listening")
            .unwrap();
        if let Some(rest) = line.strip_prefix("privq serve: listening on ") {
            break rest.split(' ').next().unwrap().parse().unwrap();
        }
    };
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (child, addr)
}

/// One frame of the workload, with what the server must answer for it.
struct SentFrame {
    replay: (u64, u32, u32),
    reports: Vec<Vec<u8>>,
    /// A frame whose tag was corrupted: must be rejected as `frame_bad_mac`.
    forged: bool,
}

/// The report of kind `kind` (0..QUERIES: SQ bit, ε = 1/8, query `kind`; then binary
/// RR, ε = 1/2, query `kind − QUERIES`) with bit `bit`.
fn report(kind: u8, bit: u8) -> Vec<u8> {
    if kind < QUERIES {
        vec![1, 8, kind, 0, 1, 0, 8, 0, 0, 0, 0, 0, bit]
    } else {
        vec![1, 1, kind - QUERIES, 0, 1, 0, 2, 0, 2, 0, 0, 0, bit]
    }
}

/// Up to `BATCHES` batches of 1–6 frames of 1–4 reports, each frame from a random
/// device with its next sequence number and kinds that device has not reported
/// (the collector accepts one report per device and kind); every tenth batch also
/// carries a frame with a flipped tag bit.
fn workload(rng: &mut ChaCha12Rng) -> Vec<(Vec<u8>, Vec<SentFrame>)> {
    let mut next_seq = vec![0u32; DEVICES as usize];
    // Kinds each device has left, and the devices with any left.
    let mut left: Vec<Vec<u8>> = (0..DEVICES).map(|_| (0..2 * QUERIES).collect()).collect();
    let mut active: Vec<u64> = (0..DEVICES).collect();
    let mut buf = vec![0u8; 1024];
    (0..BATCHES)
        .map_while(|b| {
            if active.is_empty() {
                return None;
            }
            let mut body = Vec::new();
            let mut sent = Vec::new();
            for f in 0..1 + rng.next_u32() % 6 {
                if active.is_empty() {
                    break;
                }
                let slot = rng.next_u32() as usize % active.len();
                let device = active[slot];
                let forged = b % 10 == 0 && f == 0;
                let seq = if forged {
                    u32::MAX
                } else {
                    let s = next_seq[device as usize];
                    next_seq[device as usize] += 1;
                    s
                };
                let mut w = FrameWriter::new(&mut buf, device, 0, seq).unwrap();
                let mut reports = Vec::new();
                let kinds = &mut left[device as usize];
                for i in 0..(1 + rng.next_u32() as usize % 4).min(kinds.len()) {
                    let bit = (rng.next_u32() & 1) as u8;
                    let r = if forged {
                        report(kinds[i], bit) // rejected: uses up nothing
                    } else {
                        let at = rng.next_u32() as usize % kinds.len();
                        report(kinds.swap_remove(at), bit)
                    };
                    w.push(&r).unwrap();
                    reports.push(r);
                }
                if kinds.is_empty() {
                    active.swap_remove(slot);
                }
                let n = w.finish(&test_key(device)).unwrap();
                let mut frame = buf[..n].to_vec();
                if forged {
                    frame[n - 1] ^= 1;
                }
                push_batch(&mut body, &frame).unwrap();
                sent.push(SentFrame {
                    replay: (device, 0, seq),
                    reports,
                    forged,
                });
            }
            Some((body, sent))
        })
        .collect()
}

#[derive(Default, Debug)]
struct Tally {
    attempts: usize,
    failed: usize,
    accepted: BTreeMap<(u64, u32, u32), usize>,
    duplicates: usize,
    rejected: usize,
}

/// Sends every batch in order until the server answers it, through restarts.
fn send_all(
    batches: &[(Vec<u8>, Vec<SentFrame>)],
    addr: &Mutex<Option<SocketAddr>>,
    answered: &AtomicUsize,
) -> Tally {
    let mut t = Tally::default();
    let mut client: Option<(SocketAddr, Client)> = None;
    for (body, sent) in batches {
        let reply = loop {
            let Some(a) = *addr.lock().unwrap() else {
                std::thread::sleep(Duration::from_millis(2));
                continue;
            };
            if client.as_ref().is_none_or(|(ca, _)| *ca != a) {
                client = Some((a, Client::new(a, Duration::from_secs(5))));
            }
            t.attempts += 1;
            match client.as_mut().unwrap().1.post("/v1/frames", body) {
                Ok((200, reply)) => break reply,
                Ok((status, reply)) => {
                    panic!("status {status}: {}", String::from_utf8_lossy(&reply))
                }
                Err(_) => {
                    t.failed += 1; // killed mid-request or not yet listening: retry
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        };
        answered.fetch_add(1, Ordering::SeqCst);
        let v: Value = serde_json::from_slice(&reply).unwrap();
        let results = v["results"].as_array().unwrap();
        assert_eq!(results.len(), sent.len());
        for (r, f) in results.iter().zip(sent) {
            match (r["status"].as_str().unwrap(), f.forged) {
                ("accepted", false) => {
                    assert_eq!(r["reports"].as_u64().unwrap() as usize, f.reports.len());
                    *t.accepted.entry(f.replay).or_default() += 1;
                }
                ("duplicate", false) => t.duplicates += 1,
                ("refused", true) => {
                    assert_eq!(r["reason"], "unauthenticated");
                    t.rejected += 1;
                }
                (s, forged) => panic!("frame {:?} (forged: {forged}): {s}: {r}", f.replay),
            }
        }
    }
    t
}

fn ldp_aggregate(args: &[&str], source: &[&str]) -> (Option<i32>, Value) {
    let out = Command::new(BIN)
        .args(["ldp", "aggregate", "--format", "json"])
        .args(args)
        .args(source)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), v["groups"].clone())
}

#[test]
fn sigkill_loses_nothing_and_counts_nothing_twice() {
    let t0 = Instant::now();
    let dir = temp_dir();
    let db = dir.join("collector.db");
    // Device 0 through the command (key on standard input), the rest in process.
    let mut provision = Command::new(BIN)
        .args([
            "serve",
            "provision",
            "--allow-test-key",
            "--cap",
            "10000",
            "--device",
            "0",
            "--key-file",
            "-",
            "--db",
        ])
        .arg(&db)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = provision.stdin.take().unwrap();
        writeln!(stdin, "{}", hex(test_key(0).as_bytes())).unwrap();
    }
    assert!(provision.wait().unwrap().success());
    {
        let mut store = Store::open(&db).unwrap();
        let cap = "10000".parse().unwrap();
        for d in 1..DEVICES {
            store.provision(d, &test_key(d), cap).unwrap();
        }
    }
    let mut rng = ChaCha12Rng::seed_from_u64(0x5e_7e);
    let batches = Arc::new(workload(&mut rng));
    let addr = Arc::new(Mutex::new(None));
    let answered = Arc::new(AtomicUsize::new(0));
    let sender = {
        let (batches, addr, answered) = (
            Arc::clone(&batches),
            Arc::clone(&addr),
            Arc::clone(&answered),
        );
        std::thread::spawn(move || send_all(&batches, &addr, &answered))
    };
    let mut kills = 0;
    while kills < KILLS && !sender.is_finished() {
        let (mut child, a) = start(&db);
        *addr.lock().unwrap() = Some(a);
        // Kill after 1–40 more answered batches plus 0–2 ms: at a random point of a
        // request (receiving, verifying, committing or answering).
        let target = answered.load(Ordering::SeqCst) + 1 + (rng.next_u32() % 40) as usize;
        while answered.load(Ordering::SeqCst) < target && !sender.is_finished() {
            std::thread::sleep(Duration::from_micros(200));
        }
        std::thread::sleep(Duration::from_micros(u64::from(rng.next_u32() % 2000)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        *addr.lock().unwrap() = None;
        kills += 1;
    }
    let (mut child, a) = start(&db);
    *addr.lock().unwrap() = Some(a);
    let tally = sender.join().unwrap();
    assert!(
        kills > 0 && tally.failed > 0,
        "no request was cut by a kill"
    );

    // Every valid frame was accepted exactly once, or (its answer lost in a kill)
    // accepted by a killed server and answered `duplicate` on the retry.
    let valid: Vec<&SentFrame> = batches
        .iter()
        .flat_map(|b| &b.1)
        .filter(|f| !f.forged)
        .collect();
    assert!(
        tally.accepted.values().all(|&n| n == 1),
        "a frame was accepted twice"
    );
    let mut expected = Vec::new();
    for f in &valid {
        for (i, r) in f.reports.iter().enumerate() {
            expected.push((f.replay.0, f.replay.1, f.replay.2, i as u16, r.clone()));
        }
    }
    let mut stored: Vec<_> = Store::open(&db)
        .unwrap()
        .reports()
        .unwrap()
        .into_iter()
        .map(|r| (r.device, r.epoch, r.sequence, r.position, r.report))
        .collect();
    stored.sort();
    expected.sort();
    assert_eq!(stored.len(), expected.len(), "stored vs sent reports");
    assert!(
        stored == expected,
        "the stored reports are not exactly the sent ones"
    );

    // The server's estimates equal the in-process aggregation of exactly those reports.
    let mut local = Aggregates::default();
    local.ingest(expected.iter().map(|r| r.4.as_slice()));
    let want = serde_json::to_vec(&local.estimates(0.9)).unwrap();
    let mut c = Client::new(a, Duration::from_secs(5));
    let (status, body) = c.get("/v1/estimates?confidence=0.9").unwrap();
    assert_eq!(status, 200);
    assert!(
        body == want,
        "the server's estimates differ from the in-process ones"
    );
    let got: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        got["groups"].as_array().unwrap().len(),
        2 * usize::from(QUERIES)
    );

    // SIGTERM: a clean shutdown with exit code 0.
    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let exit = child.wait().unwrap();
    assert_eq!(exit.code(), Some(0), "privq serve after SIGTERM: {exit:?}");

    // `privq ldp aggregate --db` equals the same command on a file of the expected reports.
    let file = dir.join("expected.pqr");
    let mut bytes = Vec::new();
    frames::write_file_header(&mut bytes).unwrap();
    for r in &expected {
        frames::write_frame(&mut bytes, &r.4).unwrap();
    }
    std::fs::write(&file, &bytes).unwrap();
    let db_arg = db.to_str().unwrap();
    let file_arg = file.to_str().unwrap();
    for campaign in [
        &[
            "--mechanism",
            "sq-bit",
            "--epsilon",
            "1/8",
            "--queries",
            "0-7",
        ][..],
        &[
            "--mechanism",
            "rr",
            "--epsilon",
            "1/2",
            "--domain",
            "2",
            "--queries",
            "0-7",
        ][..],
    ] {
        let from_db = ldp_aggregate(campaign, &["--db", db_arg]);
        let from_file = ldp_aggregate(campaign, &["--input", file_arg]);
        // Exit 3: the other kind's reports are rejected as not of this campaign.
        assert_eq!(from_db.0, Some(3), "{campaign:?}");
        assert_eq!(from_db, from_file, "{campaign:?}");
        assert!(from_db.1.as_array().is_some_and(|g| !g.is_empty()));
    }

    let sent_reports = expected.len();
    eprintln!(
        "serve-crash: {kills} SIGKILLs, {} batches ({} frames, {} forged) in {} attempts \
         ({} failed), {} frames accepted, {} answered duplicate after a lost reply, \
         {sent_reports} reports stored exactly once, {:.1} s",
        batches.len(),
        valid.len() + tally.rejected,
        tally.rejected,
        tally.attempts,
        tally.failed,
        tally.accepted.len(),
        tally.duplicates,
        t0.elapsed().as_secs_f64()
    );
    // A frame never answered `accepted` was committed by a server killed before it replied.
    assert!(tally.duplicates >= valid.len() - tally.accepted.len());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Hostile requests get typed answers and never stop the server; a second
/// collector on the same database is refused.
#[test]
fn hostile_requests_are_answered_not_fatal() {
    let dir = std::env::temp_dir().join(format!("privq-serve-hostile-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("c.db");
    let (mut child, a) = start(&db);
    let mut c = Client::new(a, Duration::from_secs(5));
    let status = |c: &mut Client, body: &[u8]| c.post("/v1/frames", body).unwrap();
    assert_eq!(status(&mut c, b"").0, 400); // empty batch
    assert_eq!(status(&mut c, &[9, 0, 1]).0, 400); // entry runs past the body
    assert_eq!(status(&mut c, &vec![0u8; (1 << 20) + 1]).0, 413);
    let mut body = Vec::new();
    push_batch(&mut body, b"PQUF\x01garbage").unwrap();
    let mut buf = [0u8; 128];
    let mut w = FrameWriter::new(&mut buf, 99, 0, 0).unwrap();
    w.push(&[1, 8, 0, 0, 1, 0, 8, 0, 0, 0, 0, 0, 1]).unwrap();
    let n = w.finish(&test_key(99)).unwrap();
    push_batch(&mut body, &buf[..n]).unwrap();
    let (code, reply) = status(&mut c, &body);
    assert_eq!(code, 200);
    let v: Value = serde_json::from_slice(&reply).unwrap();
    // Framing found wrong before the tag is checked may be line noise on an intact
    // frame: refused, so the device keeps it and resends it.
    assert_eq!(v["results"][0]["reason"], "frame_truncated");
    assert_eq!(v["results"][0]["status"], "refused");
    // Unknown to this collector's key store: refused (the device keeps the frame).
    assert_eq!(v["results"][1]["reason"], "unauthenticated");
    assert_eq!(v["results"][1]["status"], "refused");
    assert_eq!(c.get("/v1/nothing").unwrap().0, 404);
    assert_eq!(c.get("/v1/frames").unwrap().0, 405);
    assert_eq!(c.get("/v1/estimates?confidence=abc").unwrap().0, 400);
    assert_eq!(c.get("/v1/estimates").unwrap().0, 200);
    // A second collector on the same database (here through a symbolic link) would
    // keep aggregates of its own.
    let alias = dir.join("alias.db");
    std::os::unix::fs::symlink(&db, &alias).unwrap();
    let mut second = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--quiet", "--db"])
        .arg(&alias)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while second.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    if second.try_wait().unwrap().is_none() {
        second.kill().unwrap();
        panic!("a second privq serve on the same database kept running");
    }
    let second = second.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{err}");
    assert!(err.contains("another privq serve"), "{err}");
    assert_eq!(c.get("/v1/estimates").unwrap().0, 200);
    child.kill().unwrap();
    child.wait().unwrap();
    // The operating system released the lock with the process.
    let (mut child, _) = start(&db);
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// `provision` takes the key from a file, standard input or generates it, refuses it
/// on the command line, refuses an existing id, and rotates on request.
#[test]
fn provision_keeps_keys_off_the_command_line_rotates_explicitly_and_sets_caps() {
    let dir = std::env::temp_dir().join(format!("privq-serve-provision-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("c.db");
    let key_file = dir.join("k.hex");
    std::fs::write(&key_file, format!("{}\n", hex(&[0x5a; 32]))).unwrap();
    let run = |extra: &[&str]| {
        Command::new(BIN)
            .args(["serve", "provision", "--cap", "3", "--db"])
            .arg(&db)
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let with_file = ["--device", "1", "--key-file", key_file.to_str().unwrap()];
    let out = run(&["--device", "1", "--key", &hex(&[0x5a; 32])]);
    assert_eq!(out.status.code(), Some(2), "--key is refused");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--key-file"));
    assert!(run(&with_file).status.success());
    let again = run(&with_file);
    assert!(!again.status.success(), "an existing id is refused");
    assert!(String::from_utf8_lossy(&again.stderr).contains("--rotate"));
    let rotated = run(&["--device", "1", "--generate-key", "--rotate"]);
    assert!(rotated.status.success());
    let printed = String::from_utf8_lossy(&rotated.stdout).trim().to_string();
    assert_eq!(
        printed.len(),
        64,
        "the generated key, printed once: {printed}"
    );
    let store = Store::open(&db).unwrap();
    let d = &store.devices().unwrap()[0];
    assert_eq!((d.device, d.generation), (1, 1));
    drop(store);
    // --set-cap takes no key and keeps the generation.
    let set = Command::new(BIN)
        .args([
            "serve",
            "provision",
            "--cap",
            "7/2",
            "--set-cap",
            "--device",
            "1",
            "--db",
        ])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        set.status.success(),
        "{}",
        String::from_utf8_lossy(&set.stderr)
    );
    let d = &Store::open(&db).unwrap().devices().unwrap()[0];
    assert_eq!((d.generation, d.cap.to_string().as_str()), (1, "7/2"));
    let unknown = run(&["--device", "9", "--set-cap"]);
    assert_eq!(unknown.status.code(), Some(2), "an unknown id");
    let both = run(&["--device", "1", "--set-cap", "--generate-key"]);
    assert_eq!(both.status.code(), Some(2), "--set-cap takes no key");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `privq ldp aggregate --db` classifies each stored report on its own. A device's
/// long report of another kind whose payload holds reports of the campaign, framed
/// as in a report file, adds nothing to the campaign's group (re-framing the stored
/// reports and scanning them would resynchronise into that payload and count the
/// hidden reports past the one-report-per-kind rule).
#[test]
fn aggregate_db_counts_stored_reports_not_frames_hidden_in_them() {
    use privq_collector::store::Policy;
    use privq_core::Epsilon;
    use privq_host::ldp::fleet::{Fleet, MechanismSpec};
    let dir = std::env::temp_dir().join(format!("privq-serve-db-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let eps = Epsilon::new(1, 1).unwrap();
    let grr = MechanismSpec::parse("grr", eps, 16).unwrap();
    let honest: Vec<Vec<u8>> = Fleet::from_weights(&[1.0; 16], 40)
        .unwrap()
        .privatize(&grr, 3)
        .unwrap()
        .iter()
        .map(<[u8]>::to_vec)
        .collect();
    let oue = MechanismSpec::parse("oue", eps, 4096).unwrap();
    let mut carrier = Fleet::from_weights(&[1.0; 4096], 1)
        .unwrap()
        .privatize(&oue, 4)
        .unwrap()
        .iter()
        .next()
        .unwrap()
        .to_vec();
    // The carrier's payload (its last 512 bytes, one bit per item): GRR reports
    // framed as in a report file, behind a file header.
    let mut hidden = Vec::new();
    frames::write_file_header(&mut hidden).unwrap();
    for r in honest.iter().cycle() {
        if hidden.len() + 2 + r.len() > 512 {
            break;
        }
        frames::write_frame(&mut hidden, r).unwrap();
    }
    let start = carrier.len() - 512;
    carrier[start..start + hidden.len()].copy_from_slice(&hidden);

    let db = dir.join("c.db");
    let key = DeviceKey::new([9; 32]);
    let mut store = Store::open(&db).unwrap();
    let mut sent = Vec::new();
    for (device, r) in honest.iter().chain([&carrier]).enumerate() {
        store
            .provision(device as u64, &key, Epsilon::new(100, 1).unwrap())
            .unwrap();
        let mut buf = vec![0u8; 1024];
        let mut w = FrameWriter::new(&mut buf, device as u64, 1, 0).unwrap();
        w.push(r).unwrap();
        let n = w.finish(&key).unwrap();
        buf.truncate(n);
        sent.push(buf);
    }
    let refs: Vec<&[u8]> = sent.iter().map(Vec::as_slice).collect();
    let (statuses, _) = store
        .submit(&refs, &Policy::default(), &mut Default::default())
        .unwrap();
    assert!(statuses.iter().all(|s| s.acknowledged()), "{statuses:?}");
    drop(store);

    let file = dir.join("honest.pqr");
    let mut bytes = Vec::new();
    frames::write_file_header(&mut bytes).unwrap();
    for r in &honest {
        frames::write_frame(&mut bytes, r).unwrap();
    }
    std::fs::write(&file, &bytes).unwrap();
    let campaign = [
        "--mechanism",
        "grr",
        "--epsilon",
        "1",
        "--domain",
        "16",
        "--queries",
        "0",
    ];
    let from_db = ldp_aggregate(&campaign, &["--db", db.to_str().unwrap()]);
    let from_file = ldp_aggregate(&campaign, &["--input", file.to_str().unwrap()]);
    // Exit 3 from the database: the carrier is rejected as not of this campaign.
    assert_eq!(from_db.0, Some(3));
    assert_eq!(from_file.0, Some(0));
    assert_eq!(from_db.1, from_file.1);
    assert!(from_db.1.as_array().is_some_and(|g| g.len() == 1));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `privq serve upload` relays the `privq-frame` lines of device output (other lines
/// skipped): each frame is accepted once and a resent log is all duplicates (exit
/// 0); a frame that does not verify is refused and named (exit 3); an input without
/// frame lines is exit 4; a malformed line fails the run before anything is sent,
/// and an unreachable collector is an error (exit 2).
#[test]
fn upload_relays_device_output_once_and_exits_by_outcome() {
    let dir = std::env::temp_dir().join(format!("privq-serve-upload-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("c.db");
    {
        let mut store = Store::open(&db).unwrap();
        for d in 0..4 {
            store
                .provision(d, &test_key(d), "3".parse().unwrap())
                .unwrap();
        }
    }
    let frame = |device: u64, key: &DeviceKey| {
        let mut buf = vec![0u8; 256];
        let mut w = FrameWriter::new(&mut buf, device, 1, 0).unwrap();
        w.push(&report(device as u8, 1)).unwrap();
        let n = w.finish(key).unwrap();
        buf.truncate(n);
        format!(
            "privq-frame fleet={FLEET} device={device} epoch=1 seq=0 hex={}\n",
            hex(&buf)
        )
    };
    let mut log = String::from("privq-start fleet=11\nnot a frame line\n");
    for d in 0..3 {
        // A logger's timestamp before the frame line is allowed.
        if d == 1 {
            log.push_str("[12:00:01] ");
        }
        log.push_str(&frame(d, &test_key(d)));
        log.push_str("privq-report query=0 hex=00\n");
    }
    let good = dir.join("good.log");
    std::fs::write(&good, &log).unwrap();
    let forged = dir.join("forged.log");
    std::fs::write(&forged, frame(3, &DeviceKey::new([1; 32]))).unwrap();
    let bad = dir.join("bad.log");
    std::fs::write(
        &bad,
        format!("{}privq-frame device=2 hex=5g\n", frame(3, &test_key(3))),
    )
    .unwrap();

    let (mut child, addr) = start(&db);
    let upload = |files: &[&Path], extra: &[&str]| {
        let out = Command::new(BIN)
            .args(["serve", "upload", "--server", &addr.to_string()])
            .args(extra)
            .args(files)
            .output()
            .unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let summary = |a: usize, r: usize, d: usize, j: usize, f: usize| {
        format!(
            "uploaded {} frames to {addr}: {a} accepted ({r} reports), {d} duplicate, {j} rejected, {f} refused\n",
            a + d + j + f
        )
    };
    assert_eq!(
        upload(&[&good], &[]),
        (Some(0), summary(3, 3, 0, 0, 0), String::new())
    );
    assert_eq!(
        upload(&[&good], &[]),
        (Some(0), summary(0, 0, 3, 0, 0), String::new())
    );
    let (code, out, err) = upload(&[&good, &forged], &[]);
    assert_eq!((code, out), (Some(3), summary(0, 0, 3, 0, 1)));
    assert!(
        err.contains("forged.log:1 device 3 epoch 1 sequence 0: refused unauthenticated"),
        "{err}"
    );
    let foreign = dir.join("foreign.log");
    std::fs::write(&foreign, "no frames here\n").unwrap();
    let (code, out, err) = upload(&[&foreign], &[]);
    assert_eq!((code, out), (Some(4), summary(0, 0, 0, 0, 0)));
    assert!(err.contains("no privq-frame line"), "{err}");
    let (code, out, err) = upload(&[&bad], &[]);
    assert_eq!((code, out.as_str()), (Some(2), ""));
    assert!(
        err.contains("bad.log:2") && err.contains("nothing was uploaded"),
        "{err}"
    );
    let (_, estimates) = Client::new(addr, Duration::from_secs(10))
        .get("/v1/estimates")
        .unwrap();
    let estimates: Value = serde_json::from_slice(&estimates).unwrap();
    assert_eq!(
        estimates["reports"], 3,
        "the malformed file's good frame was not sent"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let (code, out, err) = upload(&[&good], &["--attempts", "2", "--timeout", "1"]);
    assert_eq!((code, out.as_str()), (Some(2), ""));
    assert!(err.contains("no answer from the collector"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--campaign` files are checked before serving: a campaign whose reports the
/// collector's limits would all refuse is a usage error (exit 2), as is a file
/// that is not a campaign.
#[test]
fn campaigns_the_limits_would_refuse_are_usage_errors() {
    let dir = std::env::temp_dir().join(format!("privq-serve-campaign-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let serve = |campaign: &str| {
        let path = dir.join("campaign.json");
        std::fs::write(&path, campaign).unwrap();
        let out = Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--db"])
            .arg(dir.join("c.db"))
            .arg("--campaign")
            .arg(&path)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = serve(r#"{"mechanism": "grr", "epsilon": "1", "domain": 100000}"#);
    assert_eq!(code, Some(2));
    assert!(err.contains("above --max-domain"), "{err}");
    let (code, err) = serve(r#"{"mechanism": "grr", "epsilon": "1/2048", "domain": 4}"#);
    assert_eq!(code, Some(2));
    assert!(err.contains("below --min-epsilon"), "{err}");
    let (code, err) = serve(r#"{"mechanism": "grr"}"#);
    assert_eq!(code, Some(2), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

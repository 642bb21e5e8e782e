//! The collector's HTTP request handling, in process: `POST /v1/frames` through the
//! axum router (`tower::ServiceExt::oneshot`) against a fresh SQLite store with
//! three provisioned devices. The first byte sets the policy and whether the body
//! is sent raw or built from entries: raw frames, frames re-tagged under a known
//! key, frames of valid (optionally damaged) reports, and resent earlier frames.
//! The estimates of what was accepted are then built and parsed (under the
//! small domain limit).
#![no_main]

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode};
use libfuzzer_sys::fuzz_target;
use privq_core::Epsilon;
use privq_fuzz::{Cursor, DEVICES, db_path, frame, key_of, retag, valid_reports};
use privq_collector::http::{Collector, push_batch, router};
use privq_collector::store::{Policy, Store};
use rusqlite::Connection;
use tower::ServiceExt;

struct Harness {
    path: PathBuf,
    raw: Connection,
    rt: tokio::runtime::Runtime,
    seeds: Vec<Vec<u8>>,
}

fn harness() -> &'static Mutex<Harness> {
    static H: OnceLock<Mutex<Harness>> = OnceLock::new();
    H.get_or_init(|| {
        let path = db_path("collector_http");
        let mut store = Store::open(&path).expect("a fresh store opens");
        let cap = Epsilon::new(4, 1).expect("ε = 4");
        for d in DEVICES {
            store.provision(d, &key_of(d), cap).expect("provision");
        }
        drop(store);
        let raw = Connection::open(&path).expect("raw connection");
        raw.execute_batch("PRAGMA synchronous = OFF")
            .expect("pragma");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        Mutex::new(Harness {
            path,
            raw,
            rt,
            seeds: valid_reports(),
        })
    })
}

fn body(c: &mut Cursor<'_>, seeds: &[Vec<u8>]) -> (Vec<u8>, usize) {
    let mut body = Vec::new();
    let mut sent: Vec<Vec<u8>> = Vec::new();
    while !c.is_empty() && sent.len() < 16 {
        let mode = c.byte();
        let device = DEVICES[usize::from(mode >> 2) % DEVICES.len()];
        let f = match mode % 4 {
            0 => c.long_chunk().to_vec(),
            1 => {
                let mut signed = c.long_chunk().to_vec();
                if let Some(id) = signed.get_mut(7..15) {
                    id.copy_from_slice(&device.to_le_bytes());
                }
                retag(&signed, &key_of(device))
            }
            2 => {
                let (epoch, sequence) = (u32::from(c.byte() % 4), u32::from(c.byte() % 4));
                let k = usize::from(c.byte() % 4) + 1;
                let mut reports: Vec<Vec<u8>> = (0..k)
                    .map(|_| seeds[usize::from(c.byte()) % seeds.len()].clone())
                    .collect();
                if let Some(r) = reports.last_mut() {
                    let at = usize::from(c.byte());
                    if let Some(b) = r.get_mut(at) {
                        *b ^= c.byte();
                    }
                }
                frame(device, epoch, sequence, &reports)
            }
            _ => sent.last().cloned().unwrap_or_default(),
        };
        if push_batch(&mut body, &f).is_ok() {
            sent.push(f);
        }
    }
    (body, sent.len())
}

fuzz_target!(|data: &[u8]| {
    let h = harness().lock().unwrap_or_else(|e| e.into_inner());
    h.raw
        .execute_batch(
            "BEGIN; DELETE FROM reports; DELETE FROM frames; DELETE FROM reported; UPDATE devices SET spent = NULL; COMMIT;",
        )
        .expect("reset");
    let mut c = Cursor::new(data);
    let flags = c.byte();
    let policy = Policy {
        max_domain: if flags & 1 == 0 { 1 << 16 } else { 100 },
        allow_test_keys: flags & 2 != 0,
        max_items: if flags & 8 == 0 { 1 << 20 } else { 150 },
        max_items_per_device: if flags & 16 == 0 { 1 << 18 } else { 120 },
        ..Policy::default()
    };
    let (body, frames) = if flags & 4 == 0 {
        (c.rest().to_vec(), None)
    } else {
        let (b, n) = body(&mut c, &h.seeds);
        (b, Some(n))
    };
    let store = Store::open(&h.path).expect("store opens");
    let collector = Arc::new(Collector::new(store, policy, true).expect("collector"));
    let app = router(Arc::clone(&collector));
    let (status, answer) = h.rt.block_on(async move {
        let req = Request::post("/v1/frames")
            .body(Body::from(body))
            .expect("request");
        let resp = app.oneshot(req).await.expect("infallible");
        let status = resp.status();
        let bytes = to_bytes(resp.into_body(), 1 << 24).await.expect("body");
        (status, bytes)
    });
    let json: serde_json::Value = serde_json::from_slice(&answer).expect("JSON answer");
    match status {
        StatusCode::OK => {
            let results = json["results"].as_array().expect("results");
            if let Some(n) = frames.filter(|&n| n > 0) {
                assert_eq!(results.len(), n);
            }
        }
        StatusCode::BAD_REQUEST => assert!(json["error"].is_string()),
        s => panic!("unexpected status {s}: {json}"),
    }
    // The estimates of whatever was accepted are served, and name its count (under
    // the small domain limit only: a domain of 2^16 items is 7 MB of JSON, which
    // would halve the inputs per second).
    if flags & 1 != 0 {
        let est = collector.estimates_json(0.95).expect("estimates serialize");
        let est: serde_json::Value = serde_json::from_slice(&est).expect("estimates JSON");
        assert_eq!(est["reports"].as_u64(), Some(collector.reports()));
    }
});

//! The collector's database loader: rows as a damaged or edited database could
//! hold them (any key blob, ε text, counters, report bytes and stored frame
//! bodies) are written with
//! plain SQL, then read back through `Store` (devices, reports), the collector's
//! start-up aggregation (`Aggregates::from_store_within`, as `Collector::new` runs
//! it) and a submit against the loaded device (`Store::submit`, as
//! `Collector::submit` runs it).
//!
//! One `Store` connection serves every input: `Store::open` reads no rows (it sets
//! the journal mode and checks the schema version), and reopening per input spent
//! most of the time parsing the schema.
#![no_main]

use std::sync::{Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use privq_fuzz::{Cursor, DEVICES, db_path, frame, key_of, valid_reports};
use privq_collector::http::Aggregates;
use privq_collector::store::{Policy, Store};
use rusqlite::{Connection, params};

struct Db {
    store: Store,
    raw: Connection,
}

fn db() -> &'static Mutex<Db> {
    static DB: OnceLock<Mutex<Db>> = OnceLock::new();
    DB.get_or_init(|| {
        let path = db_path("store_load");
        let store = Store::open(&path).expect("a fresh store opens");
        let raw = Connection::open(&path).expect("raw connection");
        // The harness's own writes need no durability (the store's connection
        // keeps its own settings).
        raw.execute_batch("PRAGMA synchronous = OFF")
            .expect("pragma");
        Mutex::new(Db { store, raw })
    })
}

/// A signed integer of any magnitude from two bytes.
fn int(c: &mut Cursor<'_>) -> i64 {
    i64::from(c.byte() as i8) << (c.byte() % 64)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fuzz_target!(|data: &[u8]| {
    let mut db = db().lock().unwrap_or_else(|e| e.into_inner());
    // The rows are written in one transaction, not ~35 autocommits (each a WAL
    // write and sync); what `Store` then reads is the same.
    db.raw
        .execute_batch(
            "BEGIN; DELETE FROM reports; DELETE FROM frames; DELETE FROM reported; DELETE FROM devices;",
        )
        .expect("reset");
    let mut c = Cursor::new(data);
    let flags = c.byte();
    let device = DEVICES[usize::from(flags) % 2];
    // Mostly the device's real key, so that the submit below can authenticate.
    let key = if flags & 8 == 0 {
        key_of(device).as_bytes().to_vec()
    } else {
        c.chunk().to_vec()
    };
    let cap = text(c.chunk());
    let spent = (flags & 4 != 0).then(|| text(c.chunk()));
    // Rows the schema's checks refuse are simply not there.
    let _ = db.raw.execute(
        "INSERT INTO devices (device, key, cap, spent) VALUES (?1, ?2, ?3, ?4)",
        params![device as i64, key, cap, spent],
    );
    let mut n = 0;
    while !c.is_empty() && n < 32 {
        let (epoch, sequence, position) = (int(&mut c), int(&mut c), int(&mut c));
        let report = if c.byte() & 1 == 0 {
            c.chunk().to_vec()
        } else {
            let seeds = valid_reports_cached();
            let mut r = seeds[usize::from(c.byte()) % seeds.len()].clone();
            let at = usize::from(c.byte());
            if let Some(b) = r.get_mut(at) {
                *b ^= c.byte();
            }
            r
        };
        let _ = db.raw.execute(
            "INSERT INTO reports (device, epoch, sequence, position, report)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![device as i64, epoch, sequence, position, report],
        );
        n += 1;
    }
    // Frames stored whole (schema version 3): a real frame of the device, bit-flipped
    // or cut, or any bytes, under any replay key; readers must answer a typed error.
    let mut n = 0;
    while flags & 16 != 0 && !c.is_empty() && n < 8 {
        let (epoch, sequence) = (int(&mut c), int(&mut c));
        let body = if c.byte() & 1 == 0 {
            c.chunk().to_vec()
        } else {
            let seeds = valid_reports_cached();
            let take = 1 + usize::from(c.byte()) % seeds.len();
            let mut f = frame(device, epoch as u32, sequence as u32, &seeds[..take]);
            let at = usize::from(c.byte()) % f.len().max(1);
            if let Some(b) = f.get_mut(at) {
                *b ^= c.byte();
            }
            f.truncate(f.len().saturating_sub(usize::from(c.byte() % 4)));
            f
        };
        let _ = db.raw.execute(
            "INSERT INTO frames (device, generation, epoch, sequence, tag, reports, received, body)
             VALUES (?1, 0, ?2, ?3, zeroblob(32), 1, 0, ?4)",
            params![device as i64, epoch, sequence, body],
        );
        n += 1;
    }
    db.raw.execute_batch("COMMIT").expect("commit");
    let store = &mut db.store;
    let _ = store.devices();
    let _ = store.reports();
    let _ = store.frame_count();
    let policy = Policy::default();
    let Ok((mut aggregates, mut open)) = Aggregates::from_store_within(store, &policy) else {
        return;
    };
    let seeds = valid_reports_cached();
    let f = frame(device, 1, 0, &seeds[..1]);
    if let Ok((_, fresh)) = store.submit(&[&f], &policy, &mut open) {
        aggregates.ingest(fresh.iter().map(Vec::as_slice));
    }
    let _ = aggregates.estimates(0.95);
});

fn valid_reports_cached() -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS.get_or_init(valid_reports)
}

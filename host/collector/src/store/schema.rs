//! The SQLite schema: its version, the tables, the migrations from versions 1
//! and 2, and how device ids, counters and report kinds are stored.
//!
//! Version 3 stores each accepted frame whole, as its authenticated bytes, in
//! `frames.body` (one row per frame), and no longer writes a row per report:
//! readers decode the reports from the bodies. The `reports` and `reported`
//! tables stay for the rows written by versions 1 and 2 (read first, in their
//! order: they were all accepted before any body was written); a version-3
//! collector writes neither.

use rusqlite::{Connection, params};

use privq_host::ldp::aggregate::ReportKind;
use privq_host::ldp::decode::decode_report;

use super::StoreError;

/// The schema version this module writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 3;

/// Version 3: version 2 with `frames.body`.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS devices (
    device     INTEGER PRIMARY KEY,        -- u64 device id, stored as its two's-complement i64
    key        BLOB NOT NULL CHECK (length(key) = 32),
    cap        TEXT NOT NULL,              -- lifetime ε cap, exact: 'num/den' or 'num'
    spent      TEXT,                       -- ε of the accepted reports, exact; NULL = 0
    generation INTEGER NOT NULL DEFAULT 0  -- key generation, +1 per rotation
);
CREATE TABLE IF NOT EXISTS frames (        -- one row per accepted frame; rowid: acceptance order
    device     INTEGER NOT NULL REFERENCES devices(device),
    generation INTEGER NOT NULL DEFAULT 0,  -- the device's key generation
    epoch      INTEGER NOT NULL,
    sequence   INTEGER NOT NULL,
    tag        BLOB NOT NULL CHECK (length(tag) = 32),
    reports    INTEGER NOT NULL,
    received   INTEGER NOT NULL,            -- Unix seconds
    body       BLOB,                        -- the whole frame as received (version 3); NULL:
                                            -- its reports are rows of `reports` (versions 1, 2)
    PRIMARY KEY (device, generation, epoch, sequence)
);
CREATE TABLE IF NOT EXISTS reports (       -- versions 1 and 2 only
    id         INTEGER PRIMARY KEY,         -- acceptance order
    device     INTEGER NOT NULL,
    generation INTEGER NOT NULL DEFAULT 0,
    epoch      INTEGER NOT NULL,
    sequence   INTEGER NOT NULL,
    position   INTEGER NOT NULL,            -- index of the report in its frame
    report     BLOB NOT NULL,               -- wire format (docs/src/report-format.md)
    UNIQUE (device, generation, epoch, sequence, position),
    FOREIGN KEY (device, generation, epoch, sequence)
        REFERENCES frames(device, generation, epoch, sequence)
);
CREATE TABLE IF NOT EXISTS reported (      -- version 2 only: one report per (device, report kind)
    device     INTEGER NOT NULL,
    kind       TEXT NOT NULL,               -- ReportKind::key
    PRIMARY KEY (device, kind)
);
";

/// Checks that `conn` holds exactly the tables and columns of `schema` ([`SCHEMA`],
/// or [`SCHEMA_V2`], [`SCHEMA_V1`]) (as a
/// fresh or a migrated collector database holds them) before a reader reads
/// anything: the same schema objects (tables and their constraint indexes, nothing
/// else but `sqlite_stat*` tables), each table an ordinary rowid table, its
/// columns of the same names, types, constraints, defaults, in the same order, and
/// none hidden or generated (a generated column would be computed at every read:
/// a crafted file could make a reader allocate or compute without bound).
/// `Err`: what differs.
pub(super) fn check_reader_schema(conn: &Connection, schema: &str) -> Result<(), String> {
    use rusqlite::types::Value;
    fn rows(conn: &Connection, sql: &str) -> rusqlite::Result<Vec<Vec<Value>>> {
        let mut st = conn.prepare(sql)?;
        let n = st.column_count();
        let mut rows = st.query([])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            out.push(
                (0..n)
                    .map(|i| r.get::<_, Value>(i))
                    .collect::<Result<_, _>>()?,
            );
        }
        Ok(out)
    }
    fn shape(conn: &Connection) -> rusqlite::Result<Vec<(String, Vec<Vec<Value>>)>> {
        const OBJECTS: &str = "SELECT type, name, tbl_name, sql IS NULL FROM sqlite_schema
             WHERE name NOT LIKE 'sqlite\\_stat%' ESCAPE '\\' ORDER BY type, name";
        let mut out = vec![("schema objects".to_string(), rows(conn, OBJECTS)?)];
        for table in ["devices", "frames", "reports", "reported"] {
            out.push((
                format!("table {table}"),
                rows(
                    conn,
                    &format!("SELECT type, ncol, wr, strict FROM pragma_table_list('{table}') WHERE schema = 'main'"),
                )?,
            ));
            out.push((
                format!("columns of {table}"),
                rows(
                    conn,
                    &format!(
                        "SELECT cid, name, type, \"notnull\", dflt_value, pk, hidden
                         FROM pragma_table_xinfo('{table}', 'main') ORDER BY cid"
                    ),
                )?,
            ));
        }
        Ok(out)
    }
    let expected = Connection::open_in_memory()
        .and_then(|c| c.execute_batch(schema).map(|()| c))
        .and_then(|c| shape(&c))
        .map_err(|e| format!("the collector's schema: {e}"))?;
    let found = shape(conn).map_err(|e| format!("its schema could not be read: {e}"))?;
    for ((what, want), (_, got)) in expected.iter().zip(&found) {
        if want != got {
            return Err(format!("{what}: not the collector's"));
        }
    }
    Ok(())
}

/// Version 2, as the migration from version 1 creates it.
pub(super) const SCHEMA_V2: &str = "
CREATE TABLE IF NOT EXISTS devices (
    device     INTEGER PRIMARY KEY,        -- u64 device id, stored as its two's-complement i64
    key        BLOB NOT NULL CHECK (length(key) = 32),
    cap        TEXT NOT NULL,              -- lifetime ε cap, exact: 'num/den' or 'num'
    spent      TEXT,                       -- ε of the accepted reports, exact; NULL = 0
    generation INTEGER NOT NULL DEFAULT 0  -- key generation, +1 per rotation
);
CREATE TABLE IF NOT EXISTS frames (
    device     INTEGER NOT NULL REFERENCES devices(device),
    generation INTEGER NOT NULL DEFAULT 0,  -- the device's key generation
    epoch      INTEGER NOT NULL,
    sequence   INTEGER NOT NULL,
    tag        BLOB NOT NULL CHECK (length(tag) = 32),
    reports    INTEGER NOT NULL,
    received   INTEGER NOT NULL,            -- Unix seconds
    PRIMARY KEY (device, generation, epoch, sequence)
);
CREATE TABLE IF NOT EXISTS reports (
    id         INTEGER PRIMARY KEY,         -- acceptance order
    device     INTEGER NOT NULL,
    generation INTEGER NOT NULL DEFAULT 0,
    epoch      INTEGER NOT NULL,
    sequence   INTEGER NOT NULL,
    position   INTEGER NOT NULL,            -- index of the report in its frame
    report     BLOB NOT NULL,               -- wire format (docs/src/report-format.md)
    UNIQUE (device, generation, epoch, sequence, position),
    FOREIGN KEY (device, generation, epoch, sequence)
        REFERENCES frames(device, generation, epoch, sequence)
);
CREATE TABLE IF NOT EXISTS reported (      -- at most one report per (device, report kind)
    device     INTEGER NOT NULL,
    kind       TEXT NOT NULL,               -- ReportKind::key
    PRIMARY KEY (device, kind)
);
";

/// Version 1, as a reader compares it ([`check_reader_schema`]: only an old
/// collector database is sent to the collector to be migrated).
pub(super) const SCHEMA_V1: &str = "
CREATE TABLE devices (device INTEGER PRIMARY KEY, key BLOB NOT NULL CHECK (length(key) = 32),
    cap TEXT NOT NULL, spent TEXT);
CREATE TABLE frames (device INTEGER NOT NULL REFERENCES devices(device), epoch INTEGER NOT NULL,
    sequence INTEGER NOT NULL, tag BLOB NOT NULL CHECK (length(tag) = 32),
    reports INTEGER NOT NULL, received INTEGER NOT NULL, PRIMARY KEY (device, epoch, sequence));
CREATE TABLE reports (id INTEGER PRIMARY KEY, device INTEGER NOT NULL, epoch INTEGER NOT NULL,
    sequence INTEGER NOT NULL, position INTEGER NOT NULL, report BLOB NOT NULL,
    UNIQUE (device, epoch, sequence, position),
    FOREIGN KEY (device, epoch, sequence) REFERENCES frames(device, epoch, sequence));
";

/// Schema version 1 to 2: the key generation joins the replay key (tables
/// rebuilt, old rows generation 0) and the `reported` table is filled from the
/// stored reports (the first per device and kind, as the startup rebuild counts).
pub(super) const MIGRATE_1_TO_2: &str = "
ALTER TABLE devices ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
ALTER TABLE frames RENAME TO frames_v1;
ALTER TABLE reports RENAME TO reports_v1;
";

// SQLite integers are i64: u64 device ids and u32 counters are stored by bit pattern.
pub(super) fn dev(d: u64) -> i64 {
    i64::from_ne_bytes(d.to_ne_bytes())
}
pub(super) fn undev(d: i64) -> u64 {
    u64::from_ne_bytes(d.to_ne_bytes())
}

/// The text key of a report kind in the `reported` table.
pub(super) fn kind_key(k: &ReportKind) -> String {
    format!(
        "{}/{}/{}/{}/{}/{}",
        k.mechanism, k.epsilon_num, k.epsilon_den, k.param, k.query, k.g
    )
}

/// Schema version 1 to 2, inside the caller's write transaction (`tx`), with
/// foreign keys off (the caller sets them around the transaction: the pragma is a
/// no-op inside one).
pub(super) fn migrate_1_to_2(tx: &Connection) -> Result<(), StoreError> {
    tx.execute_batch(MIGRATE_1_TO_2)?;
    tx.execute_batch(SCHEMA_V2)?;
    tx.execute_batch(
        "INSERT INTO frames (device, generation, epoch, sequence, tag, reports, received)
             SELECT device, 0, epoch, sequence, tag, reports, received FROM frames_v1;
         INSERT INTO reports (id, device, generation, epoch, sequence, position, report)
             SELECT id, device, 0, epoch, sequence, position, report FROM reports_v1;
         DROP TABLE reports_v1;
         DROP TABLE frames_v1;",
    )?;
    {
        let mut st = tx.prepare("SELECT device, report FROM reports ORDER BY id")?;
        let mut rows = st.query([])?;
        let mut mark =
            tx.prepare("INSERT OR IGNORE INTO reported (device, kind) VALUES (?1, ?2)")?;
        while let Some(r) = rows.next()? {
            let (d, bytes): (i64, Vec<u8>) = (r.get(0)?, r.get(1)?);
            if let Ok(rep) = decode_report(&bytes) {
                mark.execute(params![d, kind_key(&ReportKind::of(&rep))])?;
            }
        }
    }
    tx.execute_batch("PRAGMA user_version = 2;")?;
    Ok(())
}

/// Schema version 2 to 3: frames gain their body (NULL for the frames stored
/// before, whose reports stay rows of `reports`). SQLite adds a nullable column
/// without rewriting the table. Inside the caller's write transaction (`tx`).
pub(super) fn migrate_2_to_3(tx: &Connection) -> Result<(), StoreError> {
    tx.execute_batch("ALTER TABLE frames ADD COLUMN body BLOB; PRAGMA user_version = 3;")?;
    Ok(())
}

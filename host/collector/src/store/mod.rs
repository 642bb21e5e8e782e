//! The collector's SQLite store: device keys and budgets, and the accepted frames
//! (the replay keys with their tags), each stored whole as its authenticated bytes
//! (schema in `docs/src/collector.md`).
//!
//! [`Store::submit`] handles one batch of frames in **one** transaction: every
//! frame is authenticated, checked against its device's lifetime ε cap, its
//! reported kinds and the replay table, and the accepted frames (one row each,
//! their bytes as a blob) and the devices' new spent ε are written together. The
//! transaction commits before the caller gets the statuses, so an
//! acknowledgement always describes data on disk (WAL mode, `synchronous = FULL`).
//! Readers ([`Store::for_each_report`]) decode the reports from the stored frames.
//!
//! Until schema version 3 every report was a row of its own (and every report
//! kind a row of `reported`): three SQLite statements per report, the collector's
//! ceiling. Version 3 writes one row per frame and keeps the one-report-per-kind
//! record in memory, rebuilt per device from its stored frames.

mod policy;
mod schema;
mod status;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::path::Path;
use std::time::Duration;

use privq_core::Epsilon;
use privq_core::upload::{self, DeviceKey, FRAME_HEADER_LEN, KEY_LEN, TAG_LEN};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use privq_host::ldp::aggregate::ReportKind;
use privq_host::ldp::decode::decode_report;
use privq_host::ldp::upload::FrameReject;

pub use policy::{OpenGroups, Policy, is_test_key};
pub use schema::SCHEMA_VERSION;
pub use status::{FrameStatus, Rejection, StatusJson};

use policy::{Admission, charge};
use schema::{SCHEMA, dev, migrate_1_to_2, migrate_2_to_3, undev};

/// Why the store failed (the batch was not committed; nothing was acknowledged).
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// SQLite failed.
    Sqlite(rusqlite::Error),
    /// The database holds a value this module does not write (edited by hand, or a
    /// newer schema).
    Corrupt(String),
    /// No database file at this path ([`Store::open_existing`]).
    NotFound(String),
    /// The file is not a privq collector's database ([`Store::open_existing`]).
    NotAStore(String),
    /// The file is a privq collector's database of another schema version than
    /// [`SCHEMA_VERSION`] ([`Store::open_existing`], which never migrates: an older
    /// database is migrated by running the collector on it once).
    SchemaVersion {
        /// The database.
        path: String,
        /// Its schema version (`PRAGMA user_version`).
        found: i64,
    },
    /// More devices are provisioned than the intake cache holds
    /// ([`Store::MAX_DEVICES`]): the collector refuses to start on this database.
    TooManyDevices {
        /// Provisioned devices.
        devices: usize,
        /// The most the collector serves.
        max: usize,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Sqlite(e) => write!(f, "database: {e}"),
            StoreError::Corrupt(what) => write!(f, "database content not understood: {what}"),
            StoreError::NotFound(path) => write!(f, "{path}: no such database file"),
            StoreError::NotAStore(why) => write!(f, "not a privq collector database: {why}"),
            StoreError::SchemaVersion { path, found } if *found < SCHEMA_VERSION => write!(
                f,
                "{path}: a collector database of schema version {found}, and this program reads \
                 version {SCHEMA_VERSION} only: run the collector on it once (`privq serve --db \
                 {path}`, which migrates it) and read it again"
            ),
            StoreError::SchemaVersion { path, found } => write!(
                f,
                "{path}: a database of schema version {found}, newer than this program's \
                 {SCHEMA_VERSION}: read it with a newer privq"
            ),
            StoreError::TooManyDevices { devices, max } => write!(
                f,
                "{devices} devices are provisioned; the collector holds every device's key in \
                 memory and serves at most {max}"
            ),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Sqlite(e) => Some(e),
            StoreError::Corrupt(_)
            | StoreError::NotFound(_)
            | StoreError::NotAStore(_)
            | StoreError::SchemaVersion { .. }
            | StoreError::TooManyDevices { .. } => None,
        }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> StoreError {
        StoreError::Sqlite(e)
    }
}

/// A provisioned device as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceRecord {
    /// The device id.
    pub device: u64,
    /// Lifetime ε cap.
    pub cap: Epsilon,
    /// ε of its accepted reports (`None`: nothing yet).
    pub spent: Option<Epsilon>,
    /// Its key generation (0 at first provisioning, +1 per rotation).
    pub generation: u32,
}

/// One stored report with its frame's replay key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct StoredReport {
    /// Sending device.
    pub device: u64,
    /// The device's key generation when the frame was accepted.
    pub generation: u32,
    /// Frame epoch.
    pub epoch: u32,
    /// Frame sequence number.
    pub sequence: u32,
    /// Position in the frame.
    pub position: u16,
    /// The report bytes.
    pub report: Vec<u8>,
}

/// The collector's database.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    intake: Intake,
}

fn parse_eps(text: &str) -> Result<Epsilon, StoreError> {
    text.parse()
        .map_err(|_| StoreError::Corrupt(format!("epsilon {text:?}")))
}

#[derive(Debug)]
struct DeviceState {
    key: DeviceKey,
    cap: Epsilon,
    spent: Option<Epsilon>,
    generation: i64,
    /// The kinds of its stored reports; read on its first authenticated frame
    /// (`None` until then), so that the work before the tag is checked is the same
    /// for every device id, provisioned or not, whatever its history (the row
    /// itself is read with the whole `devices` table when the cache is built).
    kinds: Option<KindSet>,
}

/// Why [`Store::provision`] refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum ProvisionError {
    /// The device id is provisioned already and no rotation was asked for.
    Exists {
        /// The device id.
        device: u64,
    },
    /// A rotation of a device id that is not provisioned.
    NotProvisioned {
        /// The device id.
        device: u64,
    },
    /// [`Store::MAX_DEVICES`] devices are provisioned already: the collector could
    /// not serve one more ([`StoreError::TooManyDevices`]).
    Full {
        /// The most the collector serves.
        max: usize,
    },
    /// The store failed.
    Store(StoreError),
}

impl fmt::Display for ProvisionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProvisionError::Exists { device } => write!(
                f,
                "device {device} is provisioned already; give it a new key with --rotate"
            ),
            ProvisionError::NotProvisioned { device } => {
                write!(f, "device {device} is not provisioned: nothing to rotate")
            }
            ProvisionError::Full { max } => write!(
                f,
                "{max} devices are provisioned, the most the collector serves (it holds every \
                 device's key in memory): nothing added"
            ),
            ProvisionError::Store(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ProvisionError {}

impl From<StoreError> for ProvisionError {
    fn from(e: StoreError) -> ProvisionError {
        ProvisionError::Store(e)
    }
}

impl From<rusqlite::Error> for ProvisionError {
    fn from(e: rusqlite::Error) -> ProvisionError {
        ProvisionError::Store(StoreError::Sqlite(e))
    }
}

impl Store {
    /// Opens (creating if needed) the database at `path`: WAL journal,
    /// `synchronous = FULL`, foreign keys on, a 5 s busy timeout (so `provision`
    /// can run beside a live collector), and the schema.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        #[cfg(unix)]
        if !path.exists() {
            // The store holds device keys: readable by its owner only.
            use std::os::unix::fs::OpenOptionsExt;
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path);
        }
        let conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Corrupt(format!(
                "journal mode {mode:?} instead of wal"
            )));
        }
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::Corrupt(format!(
                "schema version {version}, this program knows {SCHEMA_VERSION}"
            )));
        }
        if version == SCHEMA_VERSION {
            // Readers (`ldp aggregate --db`, `serve status`) leave a current store
            // untouched: the schema statements are `IF NOT EXISTS`.
            conn.execute_batch(SCHEMA)?;
        } else {
            // Created or migrated under the write lock, the version read again
            // there: another program opening the same database at the same time
            // (the collector starting while `serve provision` runs) may have done
            // it since the read above. Foreign keys are off while the tables are
            // rebuilt (the pragma is a no-op inside a transaction).
            conn.execute_batch("PRAGMA foreign_keys = OFF;")?;
            let migrated = (|| -> Result<(), StoreError> {
                let tx =
                    rusqlite::Transaction::new_unchecked(&conn, TransactionBehavior::Immediate)?;
                let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
                if version > SCHEMA_VERSION {
                    return Err(StoreError::Corrupt(format!(
                        "schema version {version}, this program knows {SCHEMA_VERSION}"
                    )));
                }
                if version == 1 {
                    migrate_1_to_2(&tx)?;
                }
                if version == 1 || version == 2 {
                    migrate_2_to_3(&tx)?;
                }
                tx.execute_batch(SCHEMA)?;
                if version != SCHEMA_VERSION {
                    tx.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))?;
                }
                tx.commit()?;
                Ok(())
            })();
            conn.execute_batch("PRAGMA foreign_keys = ON;")?;
            migrated?;
        }
        Ok(Store {
            conn,
            intake: Intake::default(),
        })
    }

    /// Opens the collector database at `path` to read it (`privq ldp aggregate
    /// --db`, `privq ldp export`, `privq.ldp.aggregate`). The reader never writes
    /// to the file: it is opened read-only (`SQLITE_OPEN_READ_ONLY`, `PRAGMA
    /// query_only`), never migrated, never given a journal mode or a table.
    ///
    /// A missing file is [`StoreError::NotFound`]; a file that is not a privq
    /// collector's database (not SQLite, or without the collector's schema: the
    /// tables and columns it reads exactly as the collector writes them, none
    /// generated or hidden) is [`StoreError::NotAStore`]; a collector database of
    /// another schema version than [`SCHEMA_VERSION`] is
    /// [`StoreError::SchemaVersion`] (an older one is migrated by running the
    /// collector on it once). No value longer than [`READ_LENGTH_LIMIT`] bytes is
    /// read (SQLite's length limit: an error, never an allocation without bound).
    ///
    /// The database is trusted input: the reports are read as stored, not
    /// verified again against the device keys (the keys are in the same file).
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        if !path.is_file() {
            return Err(StoreError::NotFound(path.display().to_string()));
        }
        // A WAL-mode file read by SQLite gets its `-wal` and `-shm` side files
        // (left behind by a read-only connection). When it has no `-wal` (nothing
        // uncheckpointed: the file is the whole database), it is first checked
        // through a connection that opens it as immutable, which creates no side
        // file: a foreign WAL-mode file is refused with none. The checks run again
        // on the connection that reads.
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        if !Path::new(&wal).exists() {
            let probe = Connection::open_with_flags(
                immutable_uri(path),
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                    | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX
                    | rusqlite::OpenFlags::SQLITE_OPEN_URI,
            )?;
            check_reader(&probe, path)?;
        }
        let conn = Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(Duration::from_secs(5))?;
        check_reader(&conn, path)?;
        Ok(Store {
            conn,
            intake: Intake::default(),
        })
    }

    /// A handle that interrupts this store's running SQLite statement from another
    /// thread (the statement, so the read, fails with an SQLite `interrupted`
    /// error): how `privq.ldp.aggregate` answers Ctrl-C while it reads.
    pub fn interrupt_handle(&self) -> rusqlite::InterruptHandle {
        self.conn.get_interrupt_handle()
    }

    /// Adds every stored report that [`Store::for_each_admitted_report`] admits
    /// to `intake`, each classified on its own against the intake's campaign (as
    /// the collector counts them: never re-framed and re-scanned, where a long
    /// report of another kind could carry frames of the campaign past the
    /// one-report-per-kind rule). Returns the number of repeats skipped. Reports
    /// of other campaigns are counted as rejected by the intake.
    pub fn ingest_admitted(
        &self,
        intake: &mut privq_host::ldp::intake::Intake,
    ) -> Result<u64, StoreError> {
        /// Stored reports classified at a time.
        const CHUNK: usize = 4096;
        let mut chunk: Vec<Vec<u8>> = Vec::new();
        let skipped = self.for_each_admitted_report(|r| {
            chunk.push(r.report);
            if chunk.len() == CHUNK {
                intake.ingest_reports(chunk.iter().map(Vec::as_slice));
                chunk.clear();
            }
        })?;
        intake.ingest_reports(chunk.iter().map(Vec::as_slice));
        Ok(skipped)
    }

    /// Adds a new device with key generation 0; [`ProvisionError::Exists`] if the
    /// id is provisioned already (see [`rotate`](Self::rotate)),
    /// [`ProvisionError::Full`] if [`Store::MAX_DEVICES`] are (a collector would
    /// refuse to start on the database with one more).
    pub fn provision(
        &mut self,
        device: u64,
        key: &DeviceKey,
        cap: Epsilon,
    ) -> Result<(), ProvisionError> {
        self.provision_within(device, key, cap, Store::MAX_DEVICES)
    }

    /// [`provision`](Self::provision) with `max` devices at most.
    fn provision_within(
        &mut self,
        device: u64,
        key: &DeviceKey,
        cap: Epsilon,
        max: usize,
    ) -> Result<(), ProvisionError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let devices: i64 = tx.query_row("SELECT count(*) FROM devices", [], |r| r.get(0))?;
        let full = usize::try_from(devices).map_or(true, |n| n >= max);
        let n = tx.execute(
            "INSERT INTO devices (device, key, cap, spent, generation) VALUES (?1, ?2, ?3, NULL, 0)
             ON CONFLICT (device) DO NOTHING",
            params![dev(device), key.as_bytes().as_slice(), cap.to_string()],
        )?;
        if n == 0 {
            return Err(ProvisionError::Exists { device });
        }
        if full {
            return Err(ProvisionError::Full { max });
        }
        tx.commit()?;
        self.intake.invalidate();
        Ok(())
    }

    /// Gives a provisioned device a new key and cap and bumps its key generation,
    /// which is part of the replay key `(device, generation, epoch, sequence)`: a
    /// re-keyed device may start again at epoch 0 without colliding with the replay
    /// keys of its old frames, and those frames (tagged under the old key) do not
    /// verify under the new one. Its spent ε and its stored reports stay (the cap
    /// and the one-report-per-kind rule are per device id, across generations).
    /// Returns the new generation. To change only the cap, use
    /// [`set_cap`](Self::set_cap): rotating to the same key would reopen the replay
    /// keys of frames tagged under it, so a resent acknowledged frame would be
    /// answered `already_reported` instead of `duplicate`.
    pub fn rotate(
        &mut self,
        device: u64,
        key: &DeviceKey,
        cap: Epsilon,
    ) -> Result<u32, ProvisionError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let generation: Option<i64> = tx
            .query_row(
                "SELECT generation FROM devices WHERE device = ?1",
                params![dev(device)],
                |r| r.get(0),
            )
            .optional()?;
        let generation = generation
            .ok_or(ProvisionError::NotProvisioned { device })?
            .checked_add(1)
            .and_then(|g| u32::try_from(g).ok())
            .ok_or_else(|| StoreError::Corrupt(format!("generation of device {device}")))?;
        tx.execute(
            "UPDATE devices SET key = ?2, cap = ?3, generation = ?4 WHERE device = ?1",
            params![
                dev(device),
                key.as_bytes().as_slice(),
                cap.to_string(),
                i64::from(generation)
            ],
        )?;
        tx.commit()?;
        self.intake.invalidate();
        Ok(generation)
    }

    /// Changes a provisioned device's lifetime ε cap, keeping its key, key
    /// generation (so its replay keys), spent ε and reports. A cap below the spent
    /// ε refuses its further reports (`budget_exceeded`).
    pub fn set_cap(&mut self, device: u64, cap: Epsilon) -> Result<(), ProvisionError> {
        let n = self.conn.execute(
            "UPDATE devices SET cap = ?2 WHERE device = ?1",
            params![dev(device), cap.to_string()],
        )?;
        if n == 0 {
            return Err(ProvisionError::NotProvisioned { device });
        }
        self.intake.invalidate();
        Ok(())
    }

    /// Every provisioned device, by id.
    pub fn devices(&self) -> Result<Vec<DeviceRecord>, StoreError> {
        let mut st = self
            .conn
            .prepare("SELECT device, cap, spent, generation FROM devices ORDER BY device")?;
        let rows = st.query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (d, cap, spent, generation) = row?;
            out.push(DeviceRecord {
                device: undev(d),
                cap: parse_eps(&cap)?,
                spent: spent.as_deref().map(parse_eps).transpose()?,
                generation: u32::try_from(generation)
                    .map_err(|_| StoreError::Corrupt(format!("generation of device {d}")))?,
            });
        }
        Ok(out)
    }

    /// Every stored report, in acceptance order.
    pub fn reports(&self) -> Result<Vec<StoredReport>, StoreError> {
        let mut out = Vec::new();
        self.for_each_report(|r| out.push(r))?;
        Ok(out)
    }

    /// Calls `f` with every stored report, in acceptance order: the report rows of
    /// schema versions 1 and 2 (all accepted before any frame was stored whole),
    /// then the reports of the stored frames. A stored frame that does not parse,
    /// a report row without its frame and a frame of a device that is not
    /// provisioned are [`StoreError::Corrupt`] (a cheap consistency check of a
    /// database edited by hand; the frames' tags are not verified again).
    pub fn for_each_report(&self, mut f: impl FnMut(StoredReport)) -> Result<(), StoreError> {
        let small = |v: i64, what: &str| -> Result<u32, StoreError> {
            u32::try_from(v).map_err(|_| StoreError::Corrupt(format!("{what} out of range")))
        };
        // A cheap cross-check of a database edited by hand (not a verification:
        // the database is trusted input, see `open_existing`): every report row
        // belongs to a stored frame, every frame to a provisioned device (the
        // foreign keys the collector writes under), one primary-key lookup each.
        let mut st = self.conn.prepare(
            "SELECT device, generation, epoch, sequence, position, report,
                 EXISTS (SELECT 1 FROM frames f WHERE f.device = r.device
                     AND f.generation = r.generation AND f.epoch = r.epoch
                     AND f.sequence = r.sequence)
             FROM reports r ORDER BY id",
        )?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            let int = |i| -> Result<i64, StoreError> { Ok(r.get::<_, i64>(i)?) };
            if int(6)? == 0 {
                return Err(StoreError::Corrupt(format!(
                    "a report of device {} without its frame (epoch {}, sequence {})",
                    undev(int(0)?),
                    int(2)?,
                    int(3)?
                )));
            }
            f(StoredReport {
                device: undev(int(0)?),
                generation: small(int(1)?, "generation")?,
                epoch: small(int(2)?, "epoch")?,
                sequence: small(int(3)?, "sequence")?,
                position: u16::try_from(int(4)?)
                    .map_err(|_| StoreError::Corrupt("position out of range".into()))?,
                report: r.get(5)?,
            });
        }
        let mut st = self.conn.prepare(
            "SELECT device, generation, epoch, sequence, body,
                 EXISTS (SELECT 1 FROM devices d WHERE d.device = f.device)
             FROM frames f WHERE body IS NOT NULL ORDER BY rowid",
        )?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            let (d, g, e, s): (i64, i64, i64, i64) = (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
            if r.get::<_, i64>(5)? == 0 {
                return Err(StoreError::Corrupt(format!(
                    "a frame of device {}, which is not provisioned (epoch {e}, sequence {s})",
                    undev(d)
                )));
            }
            let body = blob(r, 4)?;
            let (generation, epoch, sequence) = (
                small(g, "generation")?,
                small(e, "epoch")?,
                small(s, "sequence")?,
            );
            for (position, report) in stored_frame_reports(body, d, e, s)?.into_iter().enumerate() {
                f(StoredReport {
                    device: undev(d),
                    generation,
                    epoch,
                    sequence,
                    // A frame of at most 65 535 bytes holds fewer reports.
                    position: u16::try_from(position).unwrap_or(u16::MAX),
                    report: report.to_vec(),
                });
            }
        }
        Ok(())
    }

    /// Calls `f` with every stored report that intake's one-report-per-device-and-
    /// kind rule admits, in acceptance order: a report that repeats the kind of an
    /// earlier report of its device (possible only in a database written by schema
    /// version 1) is skipped. Returns the number skipped. The startup aggregate and
    /// `privq ldp aggregate --db` both read the store through this.
    pub fn for_each_admitted_report(
        &self,
        mut f: impl FnMut(StoredReport),
    ) -> Result<u64, StoreError> {
        let mut seen = BTreeSet::new();
        let mut skipped = 0;
        self.for_each_report(|r| {
            let repeat = decode_report(&r.report)
                .is_ok_and(|d| !seen.insert((r.device, ReportKind::of(&d))));
            if repeat {
                skipped += 1;
            } else {
                f(r);
            }
        })?;
        Ok(skipped)
    }

    /// Number of accepted frames.
    pub fn frame_count(&self) -> Result<u64, StoreError> {
        let n: i64 = self
            .conn
            .query_row("SELECT count(*) FROM frames", [], |r| r.get(0))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// Authenticates, admits and stores a batch of frames in one transaction, and
    /// returns one status per frame plus the reports newly accepted (in storage
    /// order). On error nothing of the batch is stored.
    ///
    /// An accepted frame is stored as one row holding its whole authenticated
    /// bytes (`frames.body`); its reports are decoded from it by the readers. The
    /// devices' keys, caps, spent ε and reported kinds are cached between batches
    /// (read once per device from the database, and read again after any other
    /// connection commits: `PRAGMA data_version`); what a batch changes enters
    /// the cache only after its commit.
    ///
    /// `open` holds the aggregation groups already open; a frame whose reports
    /// would take their number past [`Policy::max_groups`] is refused
    /// ([`Rejection::GroupLimit`]), and so is one whose device would open more than
    /// [`Policy::max_groups_per_device`] ([`Rejection::DeviceGroupLimit`]), or the
    /// open groups' items past [`Policy::max_items`] ([`Rejection::ItemLimit`]) or
    /// its device's past [`Policy::max_items_per_device`]
    /// ([`Rejection::DeviceItemLimit`]). Groups
    /// opened by earlier frames of the batch count; after the commit they are
    /// added to `open`, with their openers.
    pub fn submit(
        &mut self,
        frames: &[&[u8]],
        policy: &Policy,
        open: &mut OpenGroups,
    ) -> Result<(Vec<FrameStatus>, Vec<Vec<u8>>), StoreError> {
        let (statuses, fresh) = self.submit_borrowed(frames, policy, open)?;
        Ok((statuses, fresh.into_iter().map(<[u8]>::to_vec).collect()))
    }

    /// The verdict tags of a batch [`submit`](Self::submit) just answered with
    /// `statuses`, one per frame: for an `accepted`, `duplicate` or (permanently)
    /// `rejected` frame, [`upload::Verdict::tag`] under the key that verified it
    /// (`docs/src/upload-frame.md`, "Verdict tags"); `None` for a refused frame,
    /// whose tag did not verify or was not checked. Call it before the next batch:
    /// the keys are those of the batch's cache. A device acts on a verdict only if
    /// its tag verifies, so a status forged on the way changes nothing on it.
    pub fn verdict_tags(
        &self,
        frames: &[&[u8]],
        statuses: &[FrameStatus],
    ) -> Vec<Option<[u8; TAG_LEN]>> {
        frames
            .iter()
            .zip(statuses)
            .map(|(&bytes, status)| {
                let verdict = status.verdict()?;
                let device = upload::peek_header(bytes).ok()?.device;
                let state = self.intake.devices.get(&device)?;
                verdict.tag(&state.key, bytes)
            })
            .collect()
    }

    /// [`submit`](Self::submit), with the newly accepted reports borrowed from
    /// `frames` instead of copied.
    pub fn submit_borrowed<'f>(
        &mut self,
        frames: &[&'f [u8]],
        policy: &Policy,
        open: &mut OpenGroups,
    ) -> Result<(Vec<FrameStatus>, Vec<&'f [u8]>), StoreError> {
        let received = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let Store { conn, intake } = self;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Under the write lock: if another connection (provisioning, a rotation, a
        // new cap, an edit) committed since the last batch, the cache is built again
        // from the whole `devices` table.
        intake.refresh(&tx)?;
        // What this batch changes, per device: entered into the cache after the commit.
        let mut pending: HashMap<u64, Pending> = HashMap::new();
        let mut statuses = Vec::with_capacity(frames.len());
        let mut fresh = Vec::new();
        // Groups opened by the frames accepted so far in this batch.
        let mut opened = OpenGroups::default();
        // The statements of every frame, prepared once per batch.
        let mut select_tag = tx.prepare_cached(
            "SELECT tag FROM frames
             WHERE device = ?1 AND generation = ?2 AND epoch = ?3 AND sequence = ?4",
        )?;
        let mut insert = tx.prepare_cached(
            "INSERT INTO frames (device, generation, epoch, sequence, tag, reports, received, body)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT DO NOTHING",
        )?;
        for &bytes in frames {
            // Only the framing is read before the tag is checked (upload::open).
            let header = match upload::peek_header(bytes) {
                Ok(h) => h,
                Err(e) => {
                    statuses.push(FrameStatus::Rejected(Rejection::Frame(
                        FrameReject::from_core(e),
                    )));
                    continue;
                }
            };
            let device = header.device;
            // Before the tag is checked: one probe of the cache, which holds every
            // provisioned device, whatever the id (no SQL, nothing inserted).
            let Some(state) = intake.devices.get_mut(&device) else {
                // Verify under a secret dummy key anyway, so an unknown id costs the
                // same work as a bad tag (the client sees `unauthenticated` for both).
                // The key is random per process: with a fixed one, a client could tag
                // frames that verify for unknown ids only, whose report decoding would
                // then tell provisioned ids apart by time.
                let _ = upload::open(bytes, unknown_device_key());
                statuses.push(FrameStatus::Rejected(Rejection::Frame(
                    FrameReject::UnknownDevice,
                )));
                continue;
            };
            let frame = match upload::open(bytes, &state.key) {
                Ok(f) => f,
                Err(e) => {
                    statuses.push(FrameStatus::Rejected(Rejection::Frame(
                        FrameReject::from_core(e),
                    )));
                    continue;
                }
            };
            if !policy.allow_test_keys && is_test_key(&state.key) {
                statuses.push(FrameStatus::Rejected(Rejection::TestKey));
                continue;
            }
            if state.kinds.is_none() {
                let kinds = load_kinds(&tx, device, &mut intake.legacy)?;
                intake.kinds += kinds.len();
                intake.sets += 1;
                state.kinds = Some(kinds);
            }
            let tag = bytes
                .get(bytes.len().saturating_sub(TAG_LEN)..)
                .unwrap_or_default();
            let (d, g, e, s) = (
                dev(device),
                state.generation,
                i64::from(header.epoch),
                i64::from(header.sequence),
            );
            // A resent frame is acknowledged again (`duplicate`), another frame under
            // its replay key refused (`replay_conflict`), whatever its reports.
            let mut replayed = || -> Result<Option<FrameStatus>, StoreError> {
                let seen: Option<Vec<u8>> = select_tag
                    .query_row(params![d, g, e, s], |r| r.get(0))
                    .optional()?;
                Ok(seen.map(|seen| {
                    if seen.as_slice() == tag {
                        FrameStatus::Duplicate {
                            device,
                            epoch: header.epoch,
                            sequence: header.sequence,
                        }
                    } else {
                        FrameStatus::Rejected(Rejection::Conflict)
                    }
                }))
            };
            let admitted = Admission {
                policy,
                device,
                open,
                opened: &opened,
            };
            let mine = pending.get(&device);
            let spent = mine.map_or(state.spent, |p| Some(p.spent));
            let reported = |k: &ReportKind| {
                state.kinds.as_ref().is_some_and(|s| s.contains(k))
                    || mine.is_some_and(|p| p.kinds.contains(k))
            };
            let (total, new, kinds) =
                match charge(state.cap, spent, frame.reports(), &admitted, reported) {
                    Ok(c) => c,
                    Err(r) => {
                        if let Some(st) = replayed()? {
                            statuses.push(st);
                            continue;
                        }
                        if r == Rejection::EpsilonOverflow {
                            eprintln!(
                                "privq serve: device {device}: epsilon_accounting_overflow: its \
                                 exact spent epsilon plus the frame's does not fit 64 bits; frame \
                                 refused"
                            );
                        }
                        statuses.push(FrameStatus::Rejected(r));
                        continue;
                    }
                };
            // The replay key is the table's primary key: a frame that is not new
            // inserts nothing, and is answered from the stored tag.
            let inserted = insert.execute(params![
                d,
                g,
                e,
                s,
                tag,
                i64::from(header.count),
                received,
                bytes
            ])?;
            if inserted == 0 {
                statuses.push(replayed()?.unwrap_or(FrameStatus::Rejected(Rejection::Conflict)));
                continue;
            }
            for kind in new {
                opened.open(kind, device);
            }
            let p = pending.entry(device).or_insert_with(|| Pending {
                spent: total,
                kinds: KindSet::default(),
            });
            p.spent = total;
            p.kinds.extend(kinds);
            statuses.push(FrameStatus::Accepted {
                device,
                epoch: header.epoch,
                sequence: header.sequence,
                reports: usize::from(header.count),
            });
            fresh.extend(frame.reports());
        }
        drop((select_tag, insert));
        {
            let mut update =
                tx.prepare_cached("UPDATE devices SET spent = ?2 WHERE device = ?1")?;
            for (&device, p) in &pending {
                update.execute(params![dev(device), p.spent.to_string()])?;
            }
        }
        tx.commit()?;
        for (device, p) in pending {
            if let Some(state) = intake.devices.get_mut(&device) {
                state.spent = Some(p.spent);
                intake.kinds += p.kinds.len();
                if state.kinds.is_none() {
                    intake.sets += 1;
                }
                state.kinds.get_or_insert_default().extend(p.kinds);
            }
        }
        // Each group's opener is the device of the first frame that reported it.
        for (kind, device) in opened.opener {
            open.open(kind, device);
        }
        Ok((statuses, fresh))
    }
}

/// What [`Store::submit`] keeps between batches: every provisioned device as
/// committed (read whole from `devices` when the cache is built; an unknown id is
/// never entered), each device's reported kinds once read, and whether the
/// database holds report rows of schema versions 1 and 2. Valid while `PRAGMA
/// data_version` stays `data_version` (no other connection has committed).
#[derive(Debug, Default)]
struct Intake {
    data_version: Option<i64>,
    devices: HashMap<u64, DeviceState>,
    /// Reported kinds held by `devices`.
    kinds: usize,
    /// Devices whose kinds are held.
    sets: usize,
    legacy: Option<bool>,
}

/// The longest string or blob [`Store::open_existing`] reads: a stored frame is at
/// most 65 535 bytes, a report shorter; with a margin.
pub const READ_LENGTH_LIMIT: i32 = 1 << 17;

/// Estimated bytes of the cache per device (its entry in a hash table at most
/// half full, plus the table's control byte).
const DEVICE_BYTES: usize = 2 * (std::mem::size_of::<(u64, DeviceState)>() + 1);
/// Estimated bytes per held set of kinds (the smallest allocated table: 4 slots
/// and 16 control bytes).
const SET_BYTES: usize = 4 * (std::mem::size_of::<ReportKind>() + 1) + 16;
/// Estimated bytes per held kind (its slot in a table at most half full).
const KIND_BYTES: usize = 2 * (std::mem::size_of::<ReportKind>() + 1);
/// The cache's memory bound (estimated): the devices take at most half of it
/// ([`Store::MAX_DEVICES`]); past it, the kinds are dropped (read again after each
/// device's next authenticated frame).
const CACHE_BYTES: usize = 1 << 30;

impl Store {
    /// The most devices the collector serves: their keys, caps and spent ε are
    /// held in memory (an estimated 242 bytes each; the devices take at most half of the
    /// cache's 1 GiB bound).
    /// A collector refuses to start on a database holding more, and a batch that
    /// finds more (provisioned since it started) fails, nothing stored
    /// ([`StoreError::TooManyDevices`]).
    pub const MAX_DEVICES: usize = CACHE_BYTES / 2 / DEVICE_BYTES;

    /// Builds the intake cache now (as the first batch would), so that a
    /// collector refuses to start on a database with more than
    /// [`Store::MAX_DEVICES`] devices ([`StoreError::TooManyDevices`]).
    pub fn prepare_intake(&mut self) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        self.intake.refresh(&tx)?;
        tx.commit()?;
        Ok(())
    }
}

impl Intake {
    /// Forgets everything: the next batch builds the cache again (after a change
    /// on the store's own connection, which `data_version` does not show).
    fn invalidate(&mut self) {
        self.data_version = None;
    }

    /// Estimated bytes held.
    fn bytes(&self) -> usize {
        self.devices.len() * DEVICE_BYTES + self.sets * SET_BYTES + self.kinds * KIND_BYTES
    }

    /// Inside a transaction: builds the cache again from the whole `devices` table
    /// if another connection committed (or on the first batch), and drops the held
    /// kinds if they take the cache past [`CACHE_BYTES`].
    fn refresh(&mut self, tx: &rusqlite::Transaction<'_>) -> Result<(), StoreError> {
        let version: i64 = tx.query_row("PRAGMA data_version", [], |r| r.get(0))?;
        if self.data_version != Some(version) {
            *self = Intake::default();
            let n: i64 = tx.query_row("SELECT count(*) FROM devices", [], |r| r.get(0))?;
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            if n > Store::MAX_DEVICES {
                return Err(StoreError::TooManyDevices {
                    devices: n,
                    max: Store::MAX_DEVICES,
                });
            }
            let mut devices = HashMap::with_capacity(n);
            let mut st = tx.prepare("SELECT device, key, cap, spent, generation FROM devices")?;
            let mut rows = st.query([])?;
            while let Some(r) = rows.next()? {
                let device = undev(r.get(0)?);
                let key: [u8; KEY_LEN] = blob(r, 1)?
                    .try_into()
                    .map_err(|_| StoreError::Corrupt(format!("key of device {device}")))?;
                let cap: String = r.get(2)?;
                let spent: Option<String> = r.get(3)?;
                devices.insert(
                    device,
                    DeviceState {
                        key: DeviceKey::new(key),
                        cap: parse_eps(&cap)?,
                        spent: spent.as_deref().map(parse_eps).transpose()?,
                        generation: r.get(4)?,
                        kinds: None,
                    },
                );
            }
            self.devices = devices;
            self.data_version = Some(version);
        } else if self.bytes() > CACHE_BYTES {
            for state in self.devices.values_mut() {
                state.kinds = None;
            }
            self.kinds = 0;
            self.sets = 0;
        }
        Ok(())
    }
}

/// A device's changes in the batch being stored.
struct Pending {
    spent: Epsilon,
    kinds: KindSet,
}

/// A set of report kinds, hashed by [`KindHasher`].
type KindSet = HashSet<ReportKind, std::hash::BuildHasherDefault<KindHasher>>;

/// A multiply-rotate hash (as rustc's FxHash) for the sets of report kinds intake
/// looks up for every report: SipHash was a tenth of its time. Not keyed: only a
/// device's own kinds share a set, at most the collector's group limit of them, so
/// collisions chosen by a key holder cost it a slower lookup among its own kinds.
#[derive(Debug, Default, Clone, Copy)]
struct KindHasher(u64);

impl KindHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl std::hash::Hasher for KindHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            for (w, b) in word.iter_mut().zip(chunk) {
                *w = *b;
            }
            self.add(u64::from_le_bytes(word));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// The kinds of a device's stored reports (one report per device and kind): from
/// the bodies of its frames, and from the report rows of versions 1 and 2 if the
/// database has any.
fn load_kinds(
    tx: &rusqlite::Transaction<'_>,
    device: u64,
    legacy: &mut Option<bool>,
) -> Result<KindSet, StoreError> {
    let mut kinds = KindSet::default();
    {
        let mut st = tx.prepare_cached(
            "SELECT epoch, sequence, body FROM frames WHERE device = ?1 AND body IS NOT NULL",
        )?;
        let mut rows = st.query(params![dev(device)])?;
        while let Some(r) = rows.next()? {
            let (epoch, sequence) = (r.get::<_, i64>(0)?, r.get::<_, i64>(1)?);
            let body = blob(r, 2)?;
            let reports = stored_frame_reports(body, dev(device), epoch, sequence)?;
            for report in reports {
                if let Ok(rep) = decode_report(report) {
                    kinds.insert(ReportKind::of(&rep));
                }
            }
        }
    }
    let has_legacy = match *legacy {
        Some(b) => b,
        None => {
            let b = tx.query_row("SELECT EXISTS (SELECT 1 FROM reports)", [], |r| r.get(0))?;
            *legacy = Some(b);
            b
        }
    };
    if has_legacy {
        let mut st = tx.prepare_cached("SELECT report FROM reports WHERE device = ?1")?;
        let mut rows = st.query(params![dev(device)])?;
        while let Some(r) = rows.next()? {
            if let Ok(rep) = decode_report(blob(r, 0)?) {
                kinds.insert(ReportKind::of(&rep));
            }
        }
    }
    Ok(kinds)
}

/// Column `i` of `row` as a blob ([`StoreError::Corrupt`] if it holds another type).
fn blob<'r>(row: &'r rusqlite::Row<'_>, i: usize) -> Result<&'r [u8], StoreError> {
    row.get_ref(i)?
        .as_blob()
        .map_err(|_| StoreError::Corrupt(format!("column {i} holds no blob")))
}

/// The reports of a stored frame body, read by its framing (header, count, length
/// prefixes) without verifying its tag again (its key may have been rotated since):
/// intake verified it before storing it. Anything else — a body that does not
/// parse, or whose header names another device, epoch or sequence than its row —
/// is [`StoreError::Corrupt`], never a panic.
fn stored_frame_reports(
    body: &[u8],
    device: i64,
    epoch: i64,
    sequence: i64,
) -> Result<Vec<&[u8]>, StoreError> {
    let corrupt = |what: &str| {
        StoreError::Corrupt(format!(
            "stored frame of device {} (epoch {epoch}, sequence {sequence}): {what}",
            undev(device)
        ))
    };
    let header = upload::peek_header(body).map_err(|e| corrupt(&e.to_string()))?;
    if (
        dev(header.device),
        i64::from(header.epoch),
        i64::from(header.sequence),
    ) != (device, epoch, sequence)
    {
        return Err(corrupt("its header names another replay key"));
    }
    let signed_end = body.len().saturating_sub(TAG_LEN);
    let mut rest = body
        .get(FRAME_HEADER_LEN..signed_end)
        .ok_or_else(|| corrupt("shorter than a header and tag"))?;
    let mut out = Vec::with_capacity(usize::from(header.count));
    for _ in 0..header.count {
        let (len, tail) = match rest {
            [lo, hi, tail @ ..] => (usize::from(u16::from_le_bytes([*lo, *hi])), tail),
            _ => return Err(corrupt("its reports do not fill its body")),
        };
        let (report, tail) = tail
            .split_at_checked(len)
            .ok_or_else(|| corrupt("its reports do not fill its body"))?;
        out.push(report);
        rest = tail;
    }
    if header.count == 0 || !rest.is_empty() {
        return Err(corrupt("its reports do not fill its body"));
    }
    Ok(out)
}

/// The `file:` URI opening `path` read-only as immutable (every byte outside
/// the unreserved set percent-encoded).
fn immutable_uri(path: &Path) -> String {
    let bytes = path.as_os_str().as_encoded_bytes();
    let mut uri = String::from("file:");
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?mode=ro&immutable=1");
    uri
}

/// [`Store::open_existing`]'s checks on a reader's connection: query only, the
/// length limit, the schema version and the exact schema.
fn check_reader(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let not_ours = |why: &str| StoreError::NotAStore(format!("{}: {why}", path.display()));
    // Lower than SQLite's default (1e9), so a crafted value is an error.
    conn.set_limit(
        rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH,
        READ_LENGTH_LIMIT,
    )?;
    let version: i64 = match conn
        .execute_batch("PRAGMA query_only = ON")
        .and_then(|()| conn.query_row("PRAGMA user_version", [], |r| r.get(0)))
    {
        Ok(v) => v,
        Err(rusqlite::Error::SqliteFailure(e, _))
            if e.code == rusqlite::ErrorCode::NotADatabase =>
        {
            return Err(not_ours("not an SQLite database"));
        }
        Err(e) => return Err(e.into()),
    };
    let tables: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_schema WHERE type = 'table'
             AND name IN ('devices', 'frames', 'reports')",
        [],
        |r| r.get(0),
    )?;
    if version < 1 || tables < 3 {
        return Err(not_ours(
            "an SQLite database without a privq collector's schema (make one with \
                 `privq serve provision --db`)",
        ));
    }
    // An older database is refused, not migrated by a reader; it is called a
    // collector database (to be migrated by the collector) only if it has that
    // version's schema: anything else is another application's file.
    let old = match version {
        1 => Some(schema::SCHEMA_V1),
        2 => Some(schema::SCHEMA_V2),
        _ => None,
    };
    if let Some(old) = old {
        schema::check_reader_schema(conn, old).map_err(|why| not_ours(&why))?;
    }
    if version != SCHEMA_VERSION {
        return Err(StoreError::SchemaVersion {
            path: path.display().to_string(),
            found: version,
        });
    }
    schema::check_reader_schema(conn, SCHEMA).map_err(|why| not_ours(&why))?;
    Ok(())
}

/// The key frames of unprovisioned ids are verified under: random per process
/// (all zeros only if the system has no random source, which costs the timing
/// protection and nothing else).
fn unknown_device_key() -> &'static DeviceKey {
    static KEY: std::sync::OnceLock<DeviceKey> = std::sync::OnceLock::new();
    KEY.get_or_init(|| {
        let mut k = [0u8; KEY_LEN];
        let _ = getrandom::fill(&mut k);
        DeviceKey::new(k)
    })
}

#[cfg(test)]
mod tests;

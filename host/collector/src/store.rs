//! The collector's SQLite store: device keys and budgets, accepted frames (the
//! replay keys with their tags) and their reports (schema in `docs/src/collector.md`).
//!
//! [`Store::submit`] handles one batch of frames in **one** transaction: every
//! frame is authenticated, checked against the replay table and its device's
//! lifetime ε cap, and the accepted frames, their reports and the devices' new
//! spent ε are written together. The transaction commits before the caller gets
//! the statuses, so an acknowledgement always describes data on disk (WAL mode,
//! `synchronous = FULL`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use privq_core::Epsilon;
use privq_core::upload::{self, Delivery, DeviceKey, KEY_LEN};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;

use privq_host::ldp::aggregate::ReportKind;
use privq_host::ldp::campaign::CampaignPlan;
use privq_host::ldp::decode::decode_report;
use privq_host::ldp::upload::{FrameReject, verify_frame};

/// The schema version this module writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 2;

const SCHEMA: &str = "
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

/// Schema version 1 to 2: the key generation joins the replay key (tables
/// rebuilt, old rows generation 0) and the `reported` table is filled from the
/// stored reports (the first per device and kind, as the startup rebuild counts).
const MIGRATE_1_TO_2: &str = "
ALTER TABLE devices ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
ALTER TABLE frames RENAME TO frames_v1;
ALTER TABLE reports RENAME TO reports_v1;
";

/// Why the store failed (the batch was not committed; nothing was acknowledged).
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// SQLite failed.
    Sqlite(rusqlite::Error),
    /// The database holds a value this module does not write (edited by hand, or a
    /// newer schema).
    Corrupt(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Sqlite(e) => write!(f, "database: {e}"),
            StoreError::Corrupt(what) => write!(f, "database content not understood: {what}"),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Sqlite(e) => Some(e),
            StoreError::Corrupt(_) => None,
        }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> StoreError {
        StoreError::Sqlite(e)
    }
}

/// Why the collector refused a frame (besides [`FrameReject`]'s authentication
/// and format classes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rejection {
    /// The frame failed verification (format, unknown device, MAC, body, report).
    Frame(FrameReject),
    /// The replay key `(device, epoch, sequence)` was accepted before with another
    /// tag: a reused counter or a forgery attempt by a key holder. Not acknowledged.
    Conflict,
    /// The frame's reports would take the device past its lifetime ε cap. Nothing
    /// of the frame is counted.
    BudgetExceeded,
    /// The exact sum of the device's spent ε and the frame's ε does not fit
    /// [`Epsilon`]'s 64-bit numerator and denominator (many coprime denominators).
    /// Fail-closed: nothing is counted, and no later frame with such ε can be
    /// accepted for this device either. Logged.
    EpsilonOverflow,
    /// Report `index` is of a kind (mechanism, ε, parameter, query, g) the device
    /// has reported before, or repeats a kind earlier in the frame: each device
    /// contributes at most one report to each aggregation group. Not charged.
    AlreadyReported {
        /// Position of the report in the frame.
        index: u16,
    },
    /// Report `index` declares a domain above the collector's `max_domain`
    /// (its aggregator would be too large to allocate).
    DomainTooLarge {
        /// Position of the report in the frame.
        index: u16,
    },
    /// Report `index` has an ε below the collector's `min_epsilon` (each distinct
    /// ε is an aggregation group of its own).
    EpsilonTooSmall {
        /// Position of the report in the frame.
        index: u16,
    },
    /// Report `index` would open an aggregation group (mechanism, ε, parameter,
    /// query, g) beyond the collector's `max_groups`. Groups already open keep
    /// accepting reports.
    GroupLimit {
        /// Position of the report in the frame.
        index: u16,
    },
    /// Report `index` would open an aggregation group, and the device has already
    /// opened the collector's `max_groups_per_device` groups (it was the first to
    /// report their kinds). Its reports of open groups are accepted; the frame is
    /// accepted once another device has opened the group.
    DeviceGroupLimit {
        /// Position of the report in the frame.
        index: u16,
    },
    /// Report `index` would open an aggregation group whose items (its domain; 1
    /// for a mean) would take the open groups' total past the collector's
    /// `max_items`, which bounds its counters and the size of its estimates.
    ItemLimit {
        /// Position of the report in the frame.
        index: u16,
    },
    /// Report `index` would open an aggregation group, and the items of the groups
    /// its device opened would pass the collector's `max_items_per_device`: one
    /// key cannot take the whole item budget with a few large domains. Accepted
    /// once another device has opened the group.
    DeviceItemLimit {
        /// Position of the report in the frame.
        index: u16,
    },
    /// The device's key is a documented test-only key (`docs/src/upload-frame.md`) and
    /// the collector was not started with test keys allowed.
    TestKey,
    /// Report `index` is of a kind none of the collector's campaigns collects (only
    /// when it was started with campaigns, [`Policy::campaigns`]).
    NotInCampaign {
        /// Position of the report in the frame.
        index: u16,
    },
}

impl Rejection {
    /// The snake_case name used in responses and logs.
    pub fn name(self) -> &'static str {
        match self {
            Rejection::Frame(f) => f.name(),
            Rejection::Conflict => "replay_conflict",
            Rejection::BudgetExceeded => "budget_exceeded",
            Rejection::EpsilonOverflow => "epsilon_accounting_overflow",
            Rejection::AlreadyReported { .. } => "already_reported",
            Rejection::DomainTooLarge { .. } => "domain_too_large",
            Rejection::EpsilonTooSmall { .. } => "epsilon_too_small",
            Rejection::GroupLimit { .. } => "group_limit",
            Rejection::DeviceGroupLimit { .. } => "device_group_limit",
            Rejection::ItemLimit { .. } => "item_limit",
            Rejection::DeviceItemLimit { .. } => "device_item_limit",
            Rejection::TestKey => "test_key_refused",
            Rejection::NotInCampaign { .. } => "not_in_campaign",
        }
    }
}

impl Rejection {
    /// The reason sent to the client: [`name`](Self::name), except that an unknown
    /// device and a tag that does not verify are both `unauthenticated`, so a client
    /// cannot tell provisioned device ids apart (the logs keep the distinction).
    pub fn wire_name(self) -> &'static str {
        match self {
            Rejection::Frame(FrameReject::UnknownDevice | FrameReject::Mac) => "unauthenticated",
            r => r.name(),
        }
    }

    /// The rejection in words, as sent to the client (one text for both
    /// `unauthenticated` causes).
    pub fn wire_detail(self) -> String {
        match self {
            Rejection::Frame(FrameReject::UnknownDevice | FrameReject::Mac) => {
                "the frame does not verify under a provisioned device key".into()
            }
            r => r.to_string(),
        }
    }

    /// Whether resending the same frame can never succeed, so the device drops it
    /// from its outbox and counts the drop (wire status `rejected`,
    /// `docs/src/collector.md`). Rejections that depend on the collector's
    /// configuration — its limits, its key store (`unauthenticated`: a device may
    /// upload before its provisioning is committed, or after a restore from an
    /// older backup) and the test-key switch — are not: the operator can change
    /// them, so the frame is `refused` and the device keeps it and resends it
    /// later, rather than losing reports to a setting. Nor is any framing fault
    /// found before the tag is verified (truncated, magic, version, length,
    /// trailing bytes): those bytes are not authenticated, so they may be line
    /// noise on an intact frame the device still holds, exactly like a failed tag.
    pub fn permanent(self) -> bool {
        !matches!(
            self,
            Rejection::Frame(
                FrameReject::Truncated
                    | FrameReject::Magic
                    | FrameReject::Version
                    | FrameReject::Length
                    | FrameReject::TrailingBytes
                    | FrameReject::UnknownDevice
                    | FrameReject::Mac
            ) | Rejection::DomainTooLarge { .. }
                | Rejection::EpsilonTooSmall { .. }
                | Rejection::GroupLimit { .. }
                | Rejection::DeviceGroupLimit { .. }
                | Rejection::ItemLimit { .. }
                | Rejection::DeviceItemLimit { .. }
                | Rejection::NotInCampaign { .. }
                | Rejection::TestKey
        )
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::Frame(r) => write!(f, "{r}"),
            Rejection::Conflict => f.write_str(
                "another frame with the same device, epoch and sequence number was accepted",
            ),
            Rejection::BudgetExceeded => {
                f.write_str("the frame's reports would exceed the device's lifetime epsilon cap")
            }
            Rejection::EpsilonOverflow => f.write_str(
                "the exact sum of the device's epsilon does not fit 64-bit numerator and denominator",
            ),
            Rejection::AlreadyReported { index } => write!(
                f,
                "report {index} is of a kind the device has already reported"
            ),
            Rejection::DomainTooLarge { index } => {
                write!(
                    f,
                    "report {index} declares a domain above the collector's limit"
                )
            }
            Rejection::EpsilonTooSmall { index } => {
                write!(
                    f,
                    "report {index} has an epsilon below the collector's minimum"
                )
            }
            Rejection::GroupLimit { index } => write!(
                f,
                "report {index} would open an aggregation group beyond the collector's limit"
            ),
            Rejection::DeviceGroupLimit { index } => write!(
                f,
                "report {index} would open an aggregation group, and the device has opened \
                 as many as the collector allows one device"
            ),
            Rejection::ItemLimit { index } => write!(
                f,
                "report {index} would open an aggregation group beyond the collector's limit \
                 on estimated items"
            ),
            Rejection::DeviceItemLimit { index } => write!(
                f,
                "report {index} would open an aggregation group, and the groups the device \
                 has opened hold as many items as the collector allows one device"
            ),
            Rejection::TestKey => f.write_str("the device holds a test-only key"),
            Rejection::NotInCampaign { index } => write!(
                f,
                "report {index} is of a kind none of the collector's campaigns collects"
            ),
        }
    }
}

/// The outcome for one frame of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameStatus {
    /// New: its reports are stored and counted.
    Accepted {
        /// Replay key: device.
        device: u64,
        /// Replay key: epoch.
        epoch: u32,
        /// Replay key: sequence number.
        sequence: u32,
        /// Reports stored.
        reports: usize,
    },
    /// A byte-identical retry of an accepted frame: acknowledged, nothing counted.
    Duplicate {
        /// Replay key: device.
        device: u64,
        /// Replay key: epoch.
        epoch: u32,
        /// Replay key: sequence number.
        sequence: u32,
    },
    /// Refused: nothing of it is stored; not acknowledged.
    Rejected(Rejection),
}

impl FrameStatus {
    /// Whether the device may drop the frame (accepted or duplicate).
    pub fn acknowledged(&self) -> bool {
        !matches!(self, FrameStatus::Rejected(_))
    }

    /// What the device does with the frame: remove it (acknowledged), or drop and
    /// count it (a [permanent](Rejection::permanent) rejection).
    pub fn delivery(&self) -> Delivery {
        match self {
            FrameStatus::Accepted { .. } | FrameStatus::Duplicate { .. } => Delivery::Acknowledged,
            FrameStatus::Rejected(r) if r.permanent() => Delivery::Rejected,
            FrameStatus::Rejected(_) => Delivery::NotDelivered,
        }
    }
}

/// The JSON form of a [`FrameStatus`] (`docs/src/collector.md`).
#[derive(Debug, Clone, Serialize)]
pub struct StatusJson {
    /// `accepted`, `duplicate`, `rejected` (permanent) or `refused` (by the
    /// collector's configuration: keep the frame and resend it later).
    pub status: &'static str,
    /// The replay key's device (absent when rejected).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<u64>,
    /// The replay key's epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epoch: Option<u32>,
    /// The replay key's sequence number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence: Option<u32>,
    /// Reports stored (accepted frames).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reports: Option<usize>,
    /// The rejection class.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    /// The rejection in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl From<&FrameStatus> for StatusJson {
    fn from(s: &FrameStatus) -> StatusJson {
        let mut j = StatusJson {
            status: "rejected",
            device: None,
            epoch: None,
            sequence: None,
            reports: None,
            reason: None,
            detail: None,
        };
        match *s {
            FrameStatus::Accepted {
                device,
                epoch,
                sequence,
                reports,
            } => {
                j.status = "accepted";
                (j.device, j.epoch, j.sequence) = (Some(device), Some(epoch), Some(sequence));
                j.reports = Some(reports);
            }
            FrameStatus::Duplicate {
                device,
                epoch,
                sequence,
            } => {
                j.status = "duplicate";
                (j.device, j.epoch, j.sequence) = (Some(device), Some(epoch), Some(sequence));
            }
            FrameStatus::Rejected(r) => {
                if !r.permanent() {
                    j.status = "refused";
                }
                j.reason = Some(r.wire_name());
                j.detail = Some(r.wire_detail());
            }
        }
        j
    }
}

/// What the collector accepts beyond a valid frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// The largest domain (items, or Hadamard's header parameter) a report may declare.
    pub max_domain: u32,
    /// The most aggregation groups (distinct [`ReportKind`]s) the collector keeps;
    /// each allocates up to about `2 * max_domain` counters.
    pub max_groups: usize,
    /// The most groups one device may open (be the first to report a kind of):
    /// a single key holder cannot take all `max_groups`.
    pub max_groups_per_device: usize,
    /// The most estimated items over all open groups (the sum of their domains,
    /// counting a mean as 1): bounds the collector's counters and the size of
    /// `GET /v1/estimates` (about 110 bytes of JSON per item).
    pub max_items: u64,
    /// The most estimated items in the groups one device opened: one key cannot
    /// take all `max_items` with a few groups of large domains.
    pub max_items_per_device: u64,
    /// The smallest ε a report may have (`None`: any).
    pub min_epsilon: Option<Epsilon>,
    /// Accept devices whose key is a documented test-only key.
    pub allow_test_keys: bool,
    /// The campaigns whose reports are accepted (`None`: any kind, within the
    /// group limits). With campaigns, no key holder can open a group outside them.
    pub campaigns: Option<Arc<[CampaignPlan]>>,
}

impl Policy {
    /// Whether the campaigns (if any) collect reports of `kind`.
    pub fn collects(&self, kind: &ReportKind) -> bool {
        self.campaigns.as_ref().is_none_or(|plans| {
            plans
                .iter()
                .any(|p| p.collects(kind.query) && p.kind(kind.query) == *kind)
        })
    }
}

impl Default for Policy {
    /// Domains up to 2^16, 1024 groups, 256 opened per device, 2^20 items in all
    /// and 2^18 in the groups one device opened, ε at least 1/1024, no test keys.
    fn default() -> Policy {
        Policy {
            max_domain: 1 << 16,
            max_groups: 1024,
            max_groups_per_device: 256,
            max_items: 1 << 20,
            max_items_per_device: 1 << 18,
            min_epsilon: Epsilon::new(1, 1024).ok(),
            allow_test_keys: false,
            campaigns: None,
        }
    }
}

/// Whether `key` is a documented test-only key (`fleet ‖ device ‖ "NOT-A-REAL-KEY!!"`).
pub fn is_test_key(key: &DeviceKey) -> bool {
    key.as_bytes().get(16..) == Some(b"NOT-A-REAL-KEY!!".as_slice())
}

/// The open aggregation groups, each with the device that opened it (the first
/// to report its kind). [`Store::submit`] admits reports against it; the
/// collector rebuilds it at startup from the stored reports in acceptance order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenGroups {
    opener: BTreeMap<ReportKind, u64>,
    opened: HashMap<u64, (usize, u64)>,
    items: u64,
}

impl OpenGroups {
    /// Records that `device` opened the group of `kind`; `false` (and no change)
    /// if it was open already.
    pub fn open(&mut self, kind: ReportKind, device: u64) -> bool {
        if self.opener.contains_key(&kind) {
            return false;
        }
        self.opener.insert(kind, device);
        let (groups, items) = self.opened.entry(device).or_insert((0, 0));
        *groups += 1;
        *items = items.saturating_add(kind.items());
        self.items = self.items.saturating_add(kind.items());
        true
    }

    /// Estimated items in the groups `device` opened.
    pub fn items_opened_by(&self, device: u64) -> u64 {
        self.opened.get(&device).map_or(0, |o| o.1)
    }

    /// Estimated items over the open groups ([`Policy::max_items`]).
    pub fn items(&self) -> u64 {
        self.items
    }

    /// Whether the group of `kind` is open.
    pub fn contains(&self, kind: &ReportKind) -> bool {
        self.opener.contains_key(kind)
    }

    /// The device that opened the group of `kind`.
    pub fn opener(&self, kind: &ReportKind) -> Option<u64> {
        self.opener.get(kind).copied()
    }

    /// Groups opened by `device`.
    pub fn opened_by(&self, device: u64) -> usize {
        self.opened.get(&device).map_or(0, |o| o.0)
    }

    /// Open groups.
    pub fn len(&self) -> usize {
        self.opener.len()
    }

    /// Whether no group is open.
    pub fn is_empty(&self) -> bool {
        self.opener.is_empty()
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
}

// SQLite integers are i64: u64 device ids and u32 counters are stored by bit pattern.
fn dev(d: u64) -> i64 {
    i64::from_ne_bytes(d.to_ne_bytes())
}
fn undev(d: i64) -> u64 {
    u64::from_ne_bytes(d.to_ne_bytes())
}

fn parse_eps(text: &str) -> Result<Epsilon, StoreError> {
    text.parse()
        .map_err(|_| StoreError::Corrupt(format!("epsilon {text:?}")))
}

struct DeviceState {
    key: DeviceKey,
    cap: Epsilon,
    spent: Option<Epsilon>,
    generation: i64,
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

/// The text key of a report kind in the `reported` table.
fn kind_key(k: &ReportKind) -> String {
    format!(
        "{}/{}/{}/{}/{}/{}",
        k.mechanism, k.epsilon_num, k.epsilon_den, k.param, k.query, k.g
    )
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
        if version == 1 {
            migrate_1_to_2(&conn)?;
        }
        conn.execute_batch(SCHEMA)?;
        // Readers (`ldp aggregate --db`, `serve status`) leave a current store
        // untouched: the schema statements are `IF NOT EXISTS`, and the version
        // is written only when it changes.
        if version != SCHEMA_VERSION {
            conn.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))?;
        }
        Ok(Store { conn })
    }

    /// Adds a new device with key generation 0; [`ProvisionError::Exists`] if the
    /// id is provisioned already (see [`rotate`](Self::rotate)).
    pub fn provision(
        &mut self,
        device: u64,
        key: &DeviceKey,
        cap: Epsilon,
    ) -> Result<(), ProvisionError> {
        let n = self.conn.execute(
            "INSERT INTO devices (device, key, cap, spent, generation) VALUES (?1, ?2, ?3, NULL, 0)
             ON CONFLICT (device) DO NOTHING",
            params![dev(device), key.as_bytes().as_slice(), cap.to_string()],
        )?;
        if n == 0 {
            return Err(ProvisionError::Exists { device });
        }
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

    /// Calls `f` with every stored report, in acceptance order.
    pub fn for_each_report(&self, mut f: impl FnMut(StoredReport)) -> Result<(), StoreError> {
        let mut st = self.conn.prepare(
            "SELECT device, generation, epoch, sequence, position, report FROM reports ORDER BY id",
        )?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            let int = |i| -> Result<i64, StoreError> { Ok(r.get::<_, i64>(i)?) };
            let small = |i, what: &str| -> Result<u32, StoreError> {
                u32::try_from(int(i)?)
                    .map_err(|_| StoreError::Corrupt(format!("{what} out of range")))
            };
            f(StoredReport {
                device: undev(int(0)?),
                generation: small(1, "generation")?,
                epoch: small(2, "epoch")?,
                sequence: small(3, "sequence")?,
                position: u16::try_from(int(4)?)
                    .map_err(|_| StoreError::Corrupt("position out of range".into()))?,
                report: r.get(5)?,
            });
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
        let received = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut devices: HashMap<u64, Option<DeviceState>> = HashMap::new();
        let mut statuses = Vec::with_capacity(frames.len());
        let mut fresh = Vec::new();
        // Groups opened by the frames accepted so far in this batch.
        let mut opened = OpenGroups::default();
        for bytes in frames {
            // Only the framing is read before the tag is checked (verify_frame).
            let header = match upload::peek_header(bytes) {
                Ok(h) => h,
                Err(e) => {
                    statuses.push(FrameStatus::Rejected(Rejection::Frame(
                        FrameReject::from_core(e),
                    )));
                    continue;
                }
            };
            let state = match devices.entry(header.device) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(load_device(&tx, header.device)?)
                }
            };
            let Some(state) = state else {
                // Verify under a secret dummy key anyway, so an unknown id costs the
                // same work as a bad tag (the client sees `unauthenticated` for both).
                // The key is random per process: with a fixed one, a client could tag
                // frames that verify for unknown ids only, whose report decoding would
                // then tell provisioned ids apart by time.
                let _ = verify_frame(bytes, |_| Some(unknown_device_key().clone()));
                statuses.push(FrameStatus::Rejected(Rejection::Frame(
                    FrameReject::UnknownDevice,
                )));
                continue;
            };
            let frame = match verify_frame(bytes, |_| Some(state.key.clone())) {
                Ok(f) => f,
                Err(e) => {
                    statuses.push(FrameStatus::Rejected(Rejection::Frame(e)));
                    continue;
                }
            };
            if !policy.allow_test_keys && is_test_key(&state.key) {
                statuses.push(FrameStatus::Rejected(Rejection::TestKey));
                continue;
            }
            let (d, g, e, s) = (
                dev(frame.device),
                state.generation,
                i64::from(frame.epoch),
                i64::from(frame.sequence),
            );
            let seen: Option<Vec<u8>> = tx
                .prepare_cached(
                    "SELECT tag FROM frames
                     WHERE device = ?1 AND generation = ?2 AND epoch = ?3 AND sequence = ?4",
                )?
                .query_row(params![d, g, e, s], |r| r.get(0))
                .optional()?;
            if let Some(tag) = seen {
                statuses.push(if tag.as_slice() == frame.tag.as_slice() {
                    FrameStatus::Duplicate {
                        device: frame.device,
                        epoch: frame.epoch,
                        sequence: frame.sequence,
                    }
                } else {
                    FrameStatus::Rejected(Rejection::Conflict)
                });
                continue;
            }
            let admitted = Admission {
                policy,
                device: frame.device,
                open,
                opened: &opened,
            };
            let reported = |kind: &ReportKind| -> Result<bool, rusqlite::Error> {
                tx.prepare_cached("SELECT 1 FROM reported WHERE device = ?1 AND kind = ?2")?
                    .exists(params![d, kind_key(kind)])
            };
            let kinds = match charge(state, &frame.reports, &admitted, reported)? {
                Ok((total, new, kinds)) => {
                    state.spent = Some(total);
                    for kind in new {
                        opened.open(kind, frame.device);
                    }
                    kinds
                }
                Err(r) => {
                    if r == Rejection::EpsilonOverflow {
                        eprintln!(
                            "privq serve: device {}: epsilon_accounting_overflow: its exact spent \
                             epsilon plus the frame's does not fit 64 bits; frame refused",
                            frame.device
                        );
                    }
                    statuses.push(FrameStatus::Rejected(r));
                    continue;
                }
            };
            let mut mark =
                tx.prepare_cached("INSERT INTO reported (device, kind) VALUES (?1, ?2)")?;
            for kind in &kinds {
                mark.execute(params![d, kind_key(kind)])?;
            }
            drop(mark);
            tx.prepare_cached(
                "INSERT INTO frames (device, generation, epoch, sequence, tag, reports, received)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                d,
                g,
                e,
                s,
                frame.tag.as_slice(),
                i64::try_from(frame.reports.len()).unwrap_or(i64::MAX),
                received
            ])?;
            let mut insert = tx.prepare_cached(
                "INSERT INTO reports (device, generation, epoch, sequence, position, report)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for (i, r) in frame.reports.iter().enumerate() {
                insert.execute(params![d, g, e, s, i64::try_from(i).unwrap_or(i64::MAX), r])?;
            }
            drop(insert);
            tx.prepare_cached("UPDATE devices SET spent = ?2 WHERE device = ?1")?
                .execute(params![d, state.spent.map(|x| x.to_string())])?;
            statuses.push(FrameStatus::Accepted {
                device: frame.device,
                epoch: frame.epoch,
                sequence: frame.sequence,
                reports: frame.reports.len(),
            });
            fresh.extend(frame.reports);
        }
        tx.commit()?;
        // Each group's opener is the device of the first frame that reported it.
        for (kind, device) in opened.opener {
            open.open(kind, device);
        }
        Ok((statuses, fresh))
    }
}

fn load_device(
    tx: &rusqlite::Transaction<'_>,
    device: u64,
) -> Result<Option<DeviceState>, StoreError> {
    let row: Option<(Vec<u8>, String, Option<String>, i64)> = tx
        .prepare_cached("SELECT key, cap, spent, generation FROM devices WHERE device = ?1")?
        .query_row(params![dev(device)], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .optional()?;
    let Some((key, cap, spent, generation)) = row else {
        return Ok(None);
    };
    let key: [u8; KEY_LEN] = key
        .try_into()
        .map_err(|_| StoreError::Corrupt(format!("key of device {device}")))?;
    Ok(Some(DeviceState {
        key: DeviceKey::new(key),
        cap: parse_eps(&cap)?,
        spent: spent.as_deref().map(parse_eps).transpose()?,
        generation,
    }))
}

fn migrate_1_to_2(conn: &Connection) -> Result<(), StoreError> {
    // Foreign keys are off while the tables are rebuilt (the pragma is a no-op
    // inside a transaction, so it is set around it).
    conn.execute_batch("PRAGMA foreign_keys = OFF;")?;
    let tx = conn.unchecked_transaction()?;
    tx.execute_batch(MIGRATE_1_TO_2)?;
    tx.execute_batch(SCHEMA)?;
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
    tx.commit()?;
    conn.execute_batch("PRAGMA foreign_keys = ON;")?;
    Ok(())
}

/// What a frame's reports are admitted against besides the device's cap.
struct Admission<'a> {
    policy: &'a Policy,
    /// The frame's device.
    device: u64,
    /// Groups open before the batch.
    open: &'a OpenGroups,
    /// Groups opened by earlier frames of the batch.
    opened: &'a OpenGroups,
}

/// A frame's admission: the device's spent ε after it, the groups it opens and
/// the kinds it reports.
type Charge = (Epsilon, BTreeSet<ReportKind>, Vec<ReportKind>);

/// The device's spent ε after `reports`, exactly, with the groups they open and
/// their kinds, or why they are refused: a domain above the policy's, an ε below
/// its minimum, a kind the device has reported (`reported`) or repeats in the frame,
/// a group beyond its limit, a total above the cap, or an exact sum that overflows.
fn charge(
    state: &DeviceState,
    reports: &[Vec<u8>],
    adm: &Admission<'_>,
    reported: impl Fn(&ReportKind) -> Result<bool, rusqlite::Error>,
) -> Result<Result<Charge, Rejection>, StoreError> {
    let policy = adm.policy;
    let mut new = BTreeSet::new();
    let mut new_items = 0u64;
    let mut kinds: Vec<ReportKind> = Vec::with_capacity(reports.len());
    let mut seen = BTreeSet::new();
    let mut total = state.spent;
    for (i, bytes) in reports.iter().enumerate() {
        let index = u16::try_from(i).unwrap_or(u16::MAX);
        // verify_frame decoded every report already; this cannot fail.
        let r = match decode_report(bytes) {
            Ok(r) => r,
            Err(reason) => {
                return Ok(Err(Rejection::Frame(FrameReject::Report { index, reason })));
            }
        };
        let kind = ReportKind::of(&r);
        if kind.domain().is_some_and(|d| d > policy.max_domain) {
            return Ok(Err(Rejection::DomainTooLarge { index }));
        }
        let eps = r.header.epsilon;
        if policy.min_epsilon.is_some_and(|m| eps < m) {
            return Ok(Err(Rejection::EpsilonTooSmall { index }));
        }
        if !policy.collects(&kind) {
            return Ok(Err(Rejection::NotInCampaign { index }));
        }
        if !seen.insert(kind) || reported(&kind)? {
            return Ok(Err(Rejection::AlreadyReported { index }));
        }
        kinds.push(kind);
        if !adm.open.contains(&kind) && !adm.opened.contains(&kind) && !new.contains(&kind) {
            let groups = adm.open.len() + adm.opened.len() + new.len();
            if groups >= policy.max_groups {
                return Ok(Err(Rejection::GroupLimit { index }));
            }
            let mine =
                adm.open.opened_by(adm.device) + adm.opened.opened_by(adm.device) + new.len();
            if mine >= policy.max_groups_per_device {
                return Ok(Err(Rejection::DeviceGroupLimit { index }));
            }
            new_items = new_items.saturating_add(kind.items());
            let items = adm.open.items().saturating_add(adm.opened.items());
            if items.saturating_add(new_items) > policy.max_items {
                return Ok(Err(Rejection::ItemLimit { index }));
            }
            let mine = adm
                .open
                .items_opened_by(adm.device)
                .saturating_add(adm.opened.items_opened_by(adm.device));
            if mine.saturating_add(new_items) > policy.max_items_per_device {
                return Ok(Err(Rejection::DeviceItemLimit { index }));
            }
            new.insert(kind);
        }
        total = Some(match total {
            None => eps,
            Some(t) => match t.checked_add(eps) {
                Ok(t) => t,
                Err(_) => return Ok(Err(Rejection::EpsilonOverflow)),
            },
        });
    }
    Ok(match total {
        Some(t) if t > state.cap => Err(Rejection::BudgetExceeded),
        Some(t) => Ok((t, new, kinds)),
        // A verified frame holds at least one report.
        None => Err(Rejection::Frame(FrameReject::Count)),
    })
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
mod tests {
    use super::*;
    use privq_core::upload::FrameWriter;

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
            Delivery::from_status(StatusJson::from(&st[1]).status),
            Delivery::Rejected
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
}

//! `privq serve` (feature `serve`): the authenticated upload collector, device
//! provisioning, and a loopback load benchmark. The work is done by
//! [`privq_collector`]; this module parses options and logs on stderr.

use std::io::{BufRead, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use privq_collector::client::Client;
use privq_collector::http::{self, Collector, push_batch};
use privq_collector::store::{Policy, ProvisionError, Store, StoreError, is_test_key};
use privq_core::upload::{DeviceKey, FrameWriter, KEY_LEN};
use privq_host::ldp::campaign::{CampaignPlan, Limits};
use rand_core::Rng;

use super::CliError;

/// Options of `privq serve`.
#[derive(Debug, Clone, clap::Args)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "Examples:
  privq serve provision --db fleet.db --device 42 --key-file device42.key --cap 10
  privq serve --db fleet.db --listen 127.0.0.1:8080
  curl -s http://127.0.0.1:8080/v1/estimates

API and database schema: docs/src/collector.md. Exit codes: 0 after a clean shutdown
(SIGTERM or ctrl-c), 2 if the database cannot be opened or the address bound."
)]
pub struct Args {
    /// Provision devices or benchmark instead of serving.
    #[command(subcommand)]
    pub action: Option<Action>,
    /// The SQLite database (created if missing).
    #[arg(long, value_name = "PATH", required = true)]
    pub db: Option<PathBuf>,
    /// Address to listen on (port 0: any free port, printed on stderr).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Largest domain a report may declare (bounds the aggregate's memory).
    #[arg(long, value_name = "N", default_value_t = 1 << 16)]
    pub max_domain: u32,
    /// Most aggregation groups (mechanism, ε, parameter, query, g) kept; reports
    /// that would open more are rejected (`group_limit`). Bounds the aggregate's
    /// memory to about max-groups × 2 × max-domain counters.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub max_groups: usize,
    /// Most estimated items over all groups (the sum of their domains, a mean
    /// counting 1); reports that would open a group past it are refused
    /// (`item_limit`). Bounds the counters and the size of `GET /v1/estimates`
    /// (about 110 bytes of JSON per item: 115 MB at the default).
    #[arg(long, value_name = "N", default_value_t = 1 << 20)]
    pub max_items: u64,
    /// Most estimated items in the groups one device opened (`device_item_limit`
    /// past it, until another device opens the group): one key cannot take all of
    /// --max-items with a few large domains.
    #[arg(long, value_name = "N", default_value_t = 1 << 18)]
    pub max_items_per_device: u64,
    /// Most groups one device may open, by being the first to report their kind;
    /// past it, its reports that would open a group are refused
    /// (`device_group_limit`) until another device opens it. One compromised key
    /// cannot take every group. The first device to report a campaign opens all
    /// its kinds (the firmware's SQ-Laplace campaign: 64 bins × 4 epochs = 256).
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub max_groups_per_device: usize,
    /// Smallest ε a report may have, exact (`num/den`); smaller: `epsilon_too_small`.
    #[arg(long, value_name = "EPS", default_value = "1/1024")]
    pub min_epsilon: String,
    /// Accept devices holding the documented test-only keys (tests only).
    #[arg(long)]
    pub allow_test_keys: bool,
    /// A campaign file (as for `privq ldp aggregate`; repeatable): accept only
    /// reports of the campaigns' kinds (`not_in_campaign` otherwise), so no key
    /// holder can open groups outside them. Without it, any kind within the limits.
    #[arg(long, value_name = "FILE")]
    pub campaign: Vec<PathBuf>,
    /// Connections one peer (an IPv4 address or an IPv6 /64) may hold of the 256;
    /// a further one is closed at once. A gateway needs one.
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub max_connections_per_peer: usize,
    /// Seconds a connection may last in all (reading requests, writing responses,
    /// idle between them); then it is closed. Cuts off a client that never reads
    /// its response, which hyper's own timeouts do not.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub connection_timeout: u64,
    /// Log only startup, shutdown and errors (no line per batch).
    #[arg(long)]
    pub quiet: bool,
}

/// `privq serve` actions.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Action {
    /// Add a device, or give a provisioned one a new key (`--rotate`).
    Provision(ProvisionArgs),
    /// List the provisioned devices with their caps and spent ε.
    Devices(DevicesArgs),
    /// Load benchmark: an in-process collector on 127.0.0.1 and blocking clients.
    Bench(BenchArgs),
    /// Send the upload frames a device printed (`privq-frame` lines) to a collector.
    Upload(super::serve_upload::UploadArgs),
}

/// Options of `privq serve provision`.
#[derive(Debug, Clone, clap::Args)]
pub struct ProvisionArgs {
    /// The SQLite database (created if missing).
    #[arg(long, value_name = "PATH")]
    pub db: PathBuf,
    /// Device id (u64).
    #[arg(long)]
    pub device: u64,
    /// A file holding the device's 32-byte HMAC key as 64 hex digits (`-`:
    /// standard input). Not on the command line, where other users can read it.
    #[arg(long, value_name = "FILE", conflicts_with = "generate_key")]
    pub key_file: Option<PathBuf>,
    /// Generate a random key and print it once, as 64 hex digits, on standard output.
    #[arg(long)]
    pub generate_key: bool,
    /// Removed: a key on the command line is visible in /proc/*/cmdline.
    #[arg(long, value_name = "HEX", hide = true)]
    pub key: Option<String>,
    /// Replace the key of a provisioned device and bump its key generation (its
    /// spent ε, reports and one-report-per-kind record are kept): a new replay
    /// space, for a replaced or reset device.
    #[arg(long, conflicts_with = "set_cap")]
    pub rotate: bool,
    /// Change only the cap of a provisioned device (no key: its key, generation,
    /// replay keys, spent ε and reports are kept).
    #[arg(long, conflicts_with_all = ["key_file", "generate_key"])]
    pub set_cap: bool,
    /// Lifetime ε cap, exactly (`10`, `2.5`, `5/2`).
    #[arg(long, value_name = "EPS")]
    pub cap: String,
    /// Allow a documented test-only key (tests only).
    #[arg(long)]
    pub allow_test_key: bool,
}

/// Options of `privq serve devices`.
#[derive(Debug, Clone, clap::Args)]
pub struct DevicesArgs {
    /// The SQLite database.
    #[arg(long, value_name = "PATH")]
    pub db: PathBuf,
}

/// Options of `privq serve bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// A database to create for the run (must not exist; default: a temporary file, removed).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Concurrent clients (one keep-alive connection each).
    #[arg(long, default_value_t = 2)]
    pub clients: usize,
    /// Batches per client.
    #[arg(long, default_value_t = 200)]
    pub batches: usize,
    /// Frames per batch (each from another device, which sends only that frame).
    #[arg(long, default_value_t = 8)]
    pub frames: usize,
    /// Reports per frame (13-byte SQ-bit reports, ε = 1/64 each, one per query id).
    #[arg(long, default_value_t = 16)]
    pub reports: usize,
}

fn store_error(path: &Path, e: StoreError) -> CliError {
    CliError::at(path.display(), e)
}

/// Runs `privq serve`.
pub fn run(
    args: &Args,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    match &args.action {
        Some(Action::Provision(a)) => provision(a, stdin, stdout, stderr),
        Some(Action::Devices(a)) => devices(a, stdout),
        Some(Action::Bench(a)) => bench(a, stdout, stderr),
        Some(Action::Upload(a)) => super::serve_upload::upload(a, stdin, stdout, stderr),
        None => {
            let db = args.db.as_deref().ok_or(CliError::Usage {
                option: "db",
                message: "give the database: --db PATH".into(),
            })?;
            let policy = Policy {
                max_domain: args.max_domain,
                max_groups: args.max_groups,
                max_groups_per_device: args.max_groups_per_device,
                max_items: args.max_items,
                max_items_per_device: args.max_items_per_device,
                min_epsilon: Some(args.min_epsilon.parse().map_err(|source| {
                    CliError::Parameter {
                        option: "min-epsilon",
                        source,
                    }
                })?),
                allow_test_keys: args.allow_test_keys,
                campaigns: None,
            };
            let policy = Policy {
                campaigns: campaigns(&args.campaign, &policy)?,
                ..policy
            };
            if let Some(plans) = &policy.campaigns {
                let kinds: u64 = plans.iter().map(|p| p.query_count()).sum();
                if kinds > policy.max_groups as u64 {
                    writeln!(
                        stderr,
                        "privq serve: warning: the campaigns collect {kinds} report kinds, more \
                         than --max-groups {}: key holders can fill the groups with kinds not \
                         in use yet; list only the query ids being collected",
                        policy.max_groups
                    )
                    .map_err(CliError::Io)?;
                }
                let items: u64 = plans
                    .iter()
                    .map(|p| p.kind(0).items().saturating_mul(p.query_count()))
                    .fold(0, u64::saturating_add);
                if items > policy.max_items {
                    writeln!(
                        stderr,
                        "privq serve: warning: the campaigns estimate {items} items, more than \
                         --max-items {}: reports of the last groups to open will be refused",
                        policy.max_items
                    )
                    .map_err(CliError::Io)?;
                }
            }
            if policy.max_groups_per_device >= policy.max_groups {
                writeln!(
                    stderr,
                    "privq serve: warning: --max-groups-per-device {} is not below --max-groups \
                     {}: one device can open every aggregation group",
                    policy.max_groups_per_device, policy.max_groups
                )
                .map_err(CliError::Io)?;
            }
            if policy.max_items_per_device >= policy.max_items {
                writeln!(
                    stderr,
                    "privq serve: warning: --max-items-per-device {} is not below --max-items \
                     {}: one device can take every item",
                    policy.max_items_per_device, policy.max_items
                )
                .map_err(CliError::Io)?;
            }
            let limits = http::ConnectionLimits {
                connection_timeout: Duration::from_secs(args.connection_timeout.max(1)),
                max_connections_per_peer: args.max_connections_per_peer.max(1),
                ..http::ConnectionLimits::default()
            };
            serve(db, args.listen, policy, limits, args.quiet)
        }
    }
}

/// The campaigns of `--campaign` (`None` without any), each checked against the
/// policy's domain and ε limits, which would otherwise refuse all its reports.
fn campaigns(paths: &[PathBuf], policy: &Policy) -> Result<Option<Arc<[CampaignPlan]>>, CliError> {
    if paths.is_empty() {
        return Ok(None);
    }
    // The collector bounds its memory by --max-groups and --max-domain, not by
    // the campaign's full size.
    let limits = Limits {
        memory_bytes: u64::MAX,
    };
    let mut plans = Vec::with_capacity(paths.len());
    for path in paths {
        let plan = super::ldp::campaign_from_file(path, &limits)?;
        let kind = plan.kind(0);
        let usage = |what: &str| CliError::Usage {
            option: "campaign",
            message: format!(
                "{}: {what}; none of its reports would be accepted",
                path.display()
            ),
        };
        if kind.domain().is_some_and(|d| d > policy.max_domain) {
            return Err(usage("its domain is above --max-domain"));
        }
        if let (Some(e), Some(min)) = (kind.epsilon(), policy.min_epsilon)
            && e < min
        {
            return Err(usage("its epsilon is below --min-epsilon"));
        }
        plans.push(plan);
    }
    Ok(Some(plans.into()))
}

fn parse_key(hex: &str) -> Result<DeviceKey, CliError> {
    let usage = |message: &str| CliError::Usage {
        option: "key",
        message: message.into(),
    };
    let hex = hex.trim();
    if hex.len() != 2 * KEY_LEN {
        return Err(usage("expected 64 hex digits (a 32-byte key)"));
    }
    let mut key = [0u8; KEY_LEN];
    for (i, byte) in key.iter_mut().enumerate() {
        let digits = hex
            .get(2 * i..2 * i + 2)
            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| usage("not hex"))?;
        *byte = u8::from_str_radix(digits, 16).map_err(|_| usage("not hex"))?;
    }
    Ok(DeviceKey::new(key))
}

/// The key of `privq serve provision`: read from `--key-file` (or standard input),
/// or generated and printed once.
fn provision_key(args: &ProvisionArgs, stdin: &mut dyn BufRead) -> Result<DeviceKey, CliError> {
    let usage = |message: &str| CliError::Usage {
        option: "key-file",
        message: message.into(),
    };
    if args.key.is_some() {
        return Err(CliError::Usage {
            option: "key",
            message: "--key was removed: a key on the command line is visible to other users \
                      (/proc/*/cmdline, shell history); use --key-file FILE, --key-file - \
                      (standard input) or --generate-key"
                .into(),
        });
    }
    match (&args.key_file, args.generate_key) {
        (Some(path), false) => {
            // 64 hex digits and some whitespace: read at most 1 KiB.
            let mut text = String::new();
            let read = if path.as_os_str() == "-" {
                Read::take(stdin, 1024).read_to_string(&mut text)
            } else {
                std::fs::File::open(path)
                    .and_then(|f| Read::take(f, 1024).read_to_string(&mut text))
            };
            read.map_err(|e| CliError::at(format_args!("--key-file {}", path.display()), e))?;
            parse_key(&text)
        }
        (None, true) => {
            let mut rng = privq_host::secure_rng().map_err(CliError::Seed)?;
            let mut k = [0u8; KEY_LEN];
            rng.fill_bytes(&mut k);
            Ok(DeviceKey::new(k))
        }
        _ => Err(usage(
            "give the key: --key-file FILE, --key-file - or --generate-key",
        )),
    }
}

fn provision(
    args: &ProvisionArgs,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    if args.set_cap {
        return set_cap(args, stderr);
    }
    let key = provision_key(args, stdin)?;
    if is_test_key(&key) && !args.allow_test_key {
        return Err(CliError::Usage {
            option: "key",
            message: "this is a documented test-only key (docs/src/upload-frame.md); \
                      pass --allow-test-key in tests"
                .into(),
        });
    }
    let cap = args.cap.parse().map_err(|source| CliError::Parameter {
        option: "cap",
        source,
    })?;
    let mut store = Store::open(&args.db).map_err(|e| store_error(&args.db, e))?;
    let provisioned = if args.rotate {
        store.rotate(args.device, &key, cap)
    } else {
        store.provision(args.device, &key, cap).map(|()| 0)
    };
    let generation = provisioned.map_err(|e| match e {
        ProvisionError::Store(e) => store_error(&args.db, e),
        full @ ProvisionError::Full { .. } => CliError::Usage {
            option: "device",
            message: full.to_string(),
        },
        other => CliError::Usage {
            option: "rotate",
            message: other.to_string(),
        },
    })?;
    // A generated key is shown once, and only once it is stored.
    if args.generate_key {
        let hex: String = key.as_bytes().iter().map(|b| format!("{b:02x}")).collect();
        writeln!(stdout, "{hex}")?;
    }
    writeln!(
        stderr,
        "privq serve: provisioned device {} (cap eps = {cap}, key generation {generation}) in {}",
        args.device,
        args.db.display()
    )?;
    Ok(())
}

fn set_cap(args: &ProvisionArgs, stderr: &mut dyn Write) -> Result<(), CliError> {
    let cap = args.cap.parse().map_err(|source| CliError::Parameter {
        option: "cap",
        source,
    })?;
    let mut store = Store::open(&args.db).map_err(|e| store_error(&args.db, e))?;
    store.set_cap(args.device, cap).map_err(|e| match e {
        ProvisionError::Store(e) => store_error(&args.db, e),
        other => CliError::Usage {
            option: "set-cap",
            message: other.to_string(),
        },
    })?;
    writeln!(
        stderr,
        "privq serve: device {} now has cap eps = {cap} in {}",
        args.device,
        args.db.display()
    )?;
    Ok(())
}

fn devices(args: &DevicesArgs, stdout: &mut dyn Write) -> Result<(), CliError> {
    let store = Store::open(&args.db).map_err(|e| store_error(&args.db, e))?;
    writeln!(stdout, "device\tcap\tspent\tgeneration")?;
    for d in store.devices().map_err(|e| store_error(&args.db, e))? {
        let spent = d.spent.map_or_else(|| "0".to_string(), |s| s.to_string());
        writeln!(stdout, "{}\t{}\t{spent}\t{}", d.device, d.cap, d.generation)?;
    }
    Ok(())
}

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(CliError::Io)
}

fn serve(
    db: &Path,
    listen: SocketAddr,
    policy: Policy,
    limits: http::ConnectionLimits,
    quiet: bool,
) -> Result<(), CliError> {
    lock_for_serving(db)?;
    let store = Store::open(db).map_err(|e| store_error(db, e))?;
    let (devices, frames) = (
        store.devices().map_err(|e| store_error(db, e))?.len(),
        store.frame_count().map_err(|e| store_error(db, e))?,
    );
    let collector = Arc::new(Collector::new(store, policy, quiet).map_err(|e| store_error(db, e))?);
    let rt = runtime()?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| CliError::at(format_args!("--listen {listen}"), e))?;
        let addr = http::local_addr(&listener)?;
        eprintln!(
            "privq serve: listening on {addr} (db {}: {devices} devices, {frames} frames, {} reports)",
            db.display(),
            collector.reports()
        );
        http::serve_with(listener, collector, limits, http::shutdown_signal()).await?;
        eprintln!("privq serve: shut down cleanly");
        Ok(())
    })
}

/// Locks the database file itself (`flock`, exclusive) for the rest of the
/// process, so that a second `privq serve` on the same database (by any path:
/// a symbolic or hard link is the same file) fails instead of keeping its own
/// aggregates and open groups beside the first one's. The operating system
/// releases the lock when the process ends, SIGKILL included.
///
/// The handle is never closed: SQLite's POSIX locks on the file belong to the
/// process, and closing any handle on the file would drop them. `flock` locks
/// are separate from POSIX locks on local file systems, so provisioning and
/// `privq ldp aggregate --db` beside the collector are unaffected. Elsewhere (on
/// Windows a file lock is mandatory and would stop SQLite itself) nothing is
/// locked.
#[cfg(unix)]
fn lock_for_serving(db: &Path) -> Result<(), CliError> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(db)
        .map_err(|source| CliError::file(db, source))?;
    match file.try_lock() {
        Ok(()) => {
            std::mem::forget(file);
            Ok(())
        }
        Err(std::fs::TryLockError::WouldBlock) => Err(CliError::Run(
            format!(
                "{}: another privq serve is serving this database",
                db.display()
            )
            .into(),
        )),
        Err(std::fs::TryLockError::Error(source)) => Err(CliError::file(db, source)),
    }
}

#[cfg(not(unix))]
fn lock_for_serving(_db: &Path) -> Result<(), CliError> {
    Ok(())
}

/// CPU time of the clock `id` (the process's, or the calling thread's).
fn cpu_time(id: rustix::time::ClockId) -> Duration {
    let t = rustix::time::clock_gettime(id);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// Latency quantile `q` of sorted durations.
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted.get(i).copied().unwrap_or_default()
}

fn bench(args: &BenchArgs, stdout: &mut dyn Write, stderr: &mut dyn Write) -> Result<(), CliError> {
    let usage = |option, message: &str| CliError::Usage {
        option,
        message: message.into(),
    };
    if args.clients == 0 || args.batches == 0 || args.frames == 0 || args.reports == 0 {
        return Err(usage(
            "clients",
            "clients, batches, frames and reports must be positive",
        ));
    }
    if args.reports > 1000 || args.frames > 1000 {
        return Err(usage(
            "reports",
            "at most 1000 reports per frame and frames per batch",
        ));
    }
    let (db, temporary) = match &args.db {
        Some(p) if p.exists() => return Err(usage("db", "the benchmark database must not exist")),
        Some(p) => (p.clone(), false),
        None => (
            std::env::temp_dir().join(format!("privq-bench-{}.db", std::process::id())),
            true,
        ),
    };
    let mut rng = privq_host::secure_rng().map_err(CliError::Seed)?;
    // One frame per device, its reports one per query: each device contributes
    // at most one report to each aggregation group (`already_reported`).
    let devices = args
        .clients
        .checked_mul(args.batches)
        .and_then(|n| n.checked_mul(args.frames))
        .filter(|&n| n <= 1 << 20)
        .ok_or_else(|| {
            usage(
                "batches",
                "clients x batches x frames (one device each) must be at most 2^20",
            )
        })?;
    let mut store = Store::open(&db).map_err(|e| store_error(&db, e))?;
    let cap = privq_core::Epsilon::new(1 << 40, 1).map_err(|source| CliError::Parameter {
        option: "reports",
        source,
    })?;
    let mut keys = Vec::with_capacity(devices);
    for d in 0..devices {
        let mut k = [0u8; KEY_LEN];
        rng.fill_bytes(&mut k);
        let key = DeviceKey::new(k);
        store
            .provision(d as u64, &key, cap)
            .map_err(|e| CliError::at(db.display(), e))?;
        keys.push(key);
    }
    // Client c sends batch b with one frame of each of its next `frames` devices.
    let mut work: Vec<Vec<Vec<u8>>> = Vec::with_capacity(args.clients);
    let mut frame = vec![0u8; 65_535];
    for c in 0..args.clients {
        let mut batches = Vec::with_capacity(args.batches);
        for b in 0..args.batches {
            let mut body = Vec::new();
            for f in 0..args.frames {
                let d = (c * args.batches + b) * args.frames + f;
                let key = keys.get(d).ok_or(CliError::EmptyInput)?;
                let mut w = FrameWriter::new(&mut frame, d as u64, 0, 0).map_err(|source| {
                    CliError::Parameter {
                        option: "frames",
                        source,
                    }
                })?;
                for r in 0..args.reports {
                    let bit = (rng.next_u32() & 1) as u8;
                    let [q0, q1] = (r as u16).to_le_bytes();
                    w.push(&[1, 8, q0, q1, 1, 0, 64, 0, 0, 0, 0, 0, bit])
                        .map_err(|source| CliError::Parameter {
                            option: "reports",
                            source,
                        })?;
                }
                let n = w.finish(key).map_err(|source| CliError::Parameter {
                    option: "reports",
                    source,
                })?;
                push_batch(&mut body, frame.get(..n).unwrap_or_default())
                    .map_err(|e| CliError::Run(e.to_string().into()))?;
            }
            batches.push(body);
        }
        work.push(batches);
    }
    let collector =
        Arc::new(Collector::new(store, Policy::default(), true).map_err(|e| store_error(&db, e))?);
    let rt = runtime()?;
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .map_err(CliError::Io)?;
    let addr = listener.local_addr()?;
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    // Every client is on 127.0.0.1: one peer, so it gets every slot.
    let limits = http::ConnectionLimits {
        max_connections: args.clients.max(256),
        max_connections_per_peer: args.clients.max(256),
        ..http::ConnectionLimits::default()
    };
    let stop = async move {
        let _ = tokio::task::spawn_blocking(move || stop_rx.recv()).await;
    };
    let server = rt.spawn(http::serve_with(
        listener,
        Arc::clone(&collector),
        limits,
        stop,
    ));
    writeln!(
        stderr,
        "privq serve bench: {} clients x {} batches x {} frames x {} reports on {addr}",
        args.clients, args.batches, args.frames, args.reports
    )?;
    let start = Instant::now();
    let process_start = cpu_time(rustix::time::ClockId::ProcessCPUTime);
    let results: Vec<Result<(Vec<Duration>, Duration), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = work
            .iter()
            .map(|batches| {
                s.spawn(move || {
                    let thread_start = cpu_time(rustix::time::ClockId::ThreadCPUTime);
                    let mut client = Client::new(addr, Duration::from_secs(30));
                    let mut lat = Vec::with_capacity(batches.len());
                    for body in batches {
                        let t = Instant::now();
                        let (status, reply) =
                            client.post("/v1/frames", body).map_err(|e| e.to_string())?;
                        lat.push(t.elapsed());
                        let text = String::from_utf8_lossy(&reply);
                        if status != 200
                            || text.contains("\"rejected\"")
                            || text.contains("\"refused\"")
                        {
                            return Err(format!("status {status}: {text}"));
                        }
                    }
                    let client_cpu =
                        cpu_time(rustix::time::ClockId::ThreadCPUTime).saturating_sub(thread_start);
                    Ok((lat, client_cpu))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("client thread panicked".into()))
            })
            .collect()
    });
    let elapsed = start.elapsed();
    let process_cpu = cpu_time(rustix::time::ClockId::ProcessCPUTime).saturating_sub(process_start);
    let _ = stop_tx.send(());
    let _ = rt.block_on(server);
    let mut lat = Vec::new();
    let mut client_cpu = Duration::ZERO;
    for r in results {
        let (l, cpu) = r.map_err(|e| CliError::Run(format!("bench client: {e}").into()))?;
        lat.extend(l);
        client_cpu += cpu;
    }
    lat.sort();
    let reports = (args.clients * args.batches * args.frames * args.reports) as f64;
    let stored = collector.reports();
    // The server's CPU: the whole process's CPU time over the run less the client
    // threads' own (each reads its thread clock); the rest is the collector's
    // runtime workers and its store thread.
    let server_cpu = process_cpu.saturating_sub(client_cpu).as_secs_f64();
    writeln!(
        stdout,
        "batches {}  reports {reports}  stored {stored}  time {:.2} s  reports/s {:.0}  batches/s {:.0}  \
         latency p50 {:.2} ms  p99 {:.2} ms  server cpu {server_cpu:.3} s  \
         server cpu/report {:.3} us  reports/s per server core {:.0}  client cpu {:.3} s",
        lat.len(),
        elapsed.as_secs_f64(),
        reports / elapsed.as_secs_f64(),
        lat.len() as f64 / elapsed.as_secs_f64(),
        quantile(&lat, 0.5).as_secs_f64() * 1e3,
        quantile(&lat, 0.99).as_secs_f64() * 1e3,
        server_cpu * 1e6 / reports,
        reports / server_cpu.max(f64::MIN_POSITIVE),
        client_cpu.as_secs_f64(),
    )?;
    drop(collector);
    if temporary {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
        }
    }
    if stored as f64 != reports {
        return Err(CliError::Run(
            format!("stored {stored} reports, sent {reports}").into(),
        ));
    }
    Ok(())
}

//! The collector's HTTP API (`docs/src/collector.md`): `POST /v1/frames` takes a batch
//! of upload frames and answers one status per frame after the batch is committed;
//! `GET /v1/estimates` serves the aggregate of every stored report.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};

use super::store::{FrameStatus, OpenGroups, Policy, StatusJson, Store, StoreError};
use privq_host::ldp::aggregate::{
    Aggregator, FrequencyEstimates, MeanEstimate, ReportKind, ingest_grouped,
};
use privq_host::ldp::decode::{RejectCounts, decode_report};

/// The largest request body `POST /v1/frames` accepts (413 beyond).
pub const MAX_BATCH_BYTES: usize = 1 << 20;
/// Batches received and waiting for the store at once; more are answered 503
/// (bounds the memory held by queued bodies to this many MiB).
pub const MAX_QUEUED_BATCHES: usize = 64;

/// How [`serve_with`] treats connections: slow clients are cut off and the number
/// served at once is bounded, so that slow or idle clients cannot hold the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Time a client has to send a request's headers, from the start of the
    /// connection or the end of its previous request (hyper's `header_read_timeout`);
    /// then the connection is closed.
    pub header_timeout: Duration,
    /// Time a client has to send a whole request body once the handler reads it;
    /// then `408` and nothing is stored.
    pub body_timeout: Duration,
    /// Connections served at once; further clients wait in the listen queue until one
    /// closes.
    pub max_connections: usize,
    /// Connections one peer (an IPv4 address, or an IPv6 /64 network) may hold at
    /// once; a further connection of it is closed as soon as it is accepted, so
    /// that one client cannot hold every slot (a gateway needs one).
    pub max_connections_per_peer: usize,
    /// The longest a connection lasts in all (requests, responses, idle time between
    /// them); then it is closed, also in the middle of writing a response. Hyper
    /// has no write timeout, so without this a client that never reads its
    /// responses would hold a slot for ever.
    pub connection_timeout: Duration,
}

impl Default for ConnectionLimits {
    /// 10 s for the headers, 30 s for a body (1 MiB at 35 KB/s), 256 connections,
    /// 32 per peer, 60 s per connection.
    fn default() -> ConnectionLimits {
        ConnectionLimits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            max_connections: 256,
            max_connections_per_peer: 32,
            connection_timeout: Duration::from_secs(60),
        }
    }
}

/// Why a batch body could not be split into frames (400, nothing stored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BatchError {
    /// The body holds no frame.
    Empty,
    /// The body ends inside a length prefix or a frame.
    Truncated {
        /// Byte offset of the incomplete entry.
        offset: usize,
    },
    /// The body holds more than [`MAX_BATCH_FRAMES`] entries (its answer, a
    /// status per frame, would be many times larger than the body).
    TooManyFrames,
}

/// The most frames one batch may hold.
pub const MAX_BATCH_FRAMES: usize = 1024;

impl fmt::Display for BatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BatchError::Empty => f.write_str("the batch holds no frame"),
            BatchError::Truncated { offset } => {
                write!(f, "the batch ends inside the entry at byte {offset}")
            }
            BatchError::TooManyFrames => {
                write!(f, "the batch holds more than {MAX_BATCH_FRAMES} frames")
            }
        }
    }
}

impl std::error::Error for BatchError {}

/// Splits a batch body: entries of a u16 little-endian length `n` followed by `n`
/// bytes of one frame, back to back.
pub fn split_batch(body: &[u8]) -> Result<Vec<&[u8]>, BatchError> {
    let mut frames = Vec::new();
    let mut rest = body;
    let mut offset = 0;
    while !rest.is_empty() {
        let (Some(&lo), Some(&hi)) = (rest.first(), rest.get(1)) else {
            return Err(BatchError::Truncated { offset });
        };
        let n = usize::from(u16::from_le_bytes([lo, hi]));
        let frame = rest.get(2..2 + n).ok_or(BatchError::Truncated { offset })?;
        if frames.len() == MAX_BATCH_FRAMES {
            return Err(BatchError::TooManyFrames);
        }
        frames.push(frame);
        rest = rest.get(2 + n..).unwrap_or_default();
        offset += 2 + n;
    }
    if frames.is_empty() {
        return Err(BatchError::Empty);
    }
    Ok(frames)
}

/// Appends one frame to a batch body (errors if longer than 65535 bytes).
pub fn push_batch(body: &mut Vec<u8>, frame: &[u8]) -> Result<(), BatchError> {
    let n = u16::try_from(frame.len()).map_err(|_| BatchError::Truncated { offset: body.len() })?;
    body.extend_from_slice(&n.to_le_bytes());
    body.extend_from_slice(frame);
    Ok(())
}

/// The in-memory aggregate of every stored report, one aggregator per report kind.
#[derive(Debug, Default)]
pub struct Aggregates {
    groups: BTreeMap<ReportKind, Aggregator>,
    rejected: RejectCounts,
    reports: u64,
    refused: u64,
}

impl Aggregates {
    /// Adds reports (already verified and stored).
    pub fn ingest<'r>(&mut self, reports: impl IntoIterator<Item = &'r [u8]>) {
        self.reports += ingest_grouped(&mut self.groups, reports, &mut self.rejected);
    }

    /// The aggregate of every report in `store`.
    pub fn from_store(store: &Store) -> Result<Aggregates, StoreError> {
        let everything = Policy {
            max_domain: u32::MAX,
            max_groups: usize::MAX,
            max_items: u64::MAX,
            max_items_per_device: u64::MAX,
            ..Policy::default()
        };
        Ok(Aggregates::from_store_within(store, &everything)?.0)
    }

    /// The aggregate of the reports in `store` whose domain is at most the
    /// policy's `max_domain` and whose kind its campaigns (if any) collect, in at
    /// most `max_groups` groups of at most `max_items` items in all (the first
    /// kinds in acceptance order), with at most
    /// one report per device and kind (the first, as intake admits); the other
    /// reports are [held back](Self::held_back) and not allocated for. Intake
    /// ([`Store::submit`]) enforces these bounds, but an edited database, a
    /// database of schema version 1, or a collector restarted with smaller limits
    /// or other campaigns could hold anything, and an aggregator allocates a
    /// counter per item (`Collector::new` applies its policy).
    ///
    /// Also returns the open groups with their openers: the device of each
    /// group's first report, as [`Store::submit`] recorded them.
    pub fn from_store_within(
        store: &Store,
        policy: &Policy,
    ) -> Result<(Aggregates, OpenGroups), StoreError> {
        // Reports are aggregated a chunk at a time, in acceptance order, so memory
        // does not grow with the database.
        const CHUNK: usize = 4096;
        let mut a = Aggregates::default();
        let mut open = OpenGroups::default();
        let mut chunk = Vec::with_capacity(CHUNK);
        let repeated = store.for_each_admitted_report(|r| {
            let refused = decode_report(&r.report).is_ok_and(|d| {
                let kind = ReportKind::of(&d);
                if kind.domain().is_some_and(|n| n > policy.max_domain) || !policy.collects(&kind) {
                    return true;
                }
                if !open.contains(&kind) {
                    if open.len() >= policy.max_groups
                        || open.items().saturating_add(kind.items()) > policy.max_items
                    {
                        return true;
                    }
                    open.open(kind, r.device);
                }
                false
            });
            if refused {
                a.refused += 1;
            } else {
                chunk.push(r.report);
                if chunk.len() == CHUNK {
                    a.ingest(chunk.iter().map(Vec::as_slice));
                    chunk.clear();
                }
            }
        })?;
        a.refused += repeated;
        a.ingest(chunk.iter().map(Vec::as_slice));
        Ok((a, open))
    }

    /// Stored reports left out by [`from_store_within`](Self::from_store_within)'s
    /// domain, campaign, group, item and one-report-per-device-and-kind limits.
    pub fn held_back(&self) -> u64 {
        self.refused
    }

    /// Reports aggregated.
    pub fn reports(&self) -> u64 {
        self.reports
    }

    /// Estimates of every group at two-sided `confidence`.
    pub fn estimates(&self, confidence: f64) -> EstimatesJson {
        let groups = self
            .groups
            .values()
            .map(|agg| {
                let mut g = GroupJson {
                    kind: *agg.kind(),
                    n: agg.n(),
                    frequencies: None,
                    mean: None,
                    error: None,
                };
                match (agg.frequencies(confidence), agg.mean(confidence)) {
                    (Ok(f), _) => g.frequencies = Some(f),
                    (_, Ok(m)) => g.mean = Some(m),
                    (Err(e), _) => g.error = Some(e.to_string()),
                }
                g
            })
            .collect();
        EstimatesJson {
            reports: self.reports,
            undecodable: self.rejected.total(),
            held_back: self.refused,
            confidence,
            groups,
        }
    }
}

/// `GET /v1/estimates`.
#[derive(Debug, Clone, Serialize)]
pub struct EstimatesJson {
    /// Reports aggregated.
    pub reports: u64,
    /// Stored reports the aggregator could not use (0 unless the database was
    /// edited).
    pub undecodable: u64,
    /// Stored (acknowledged) reports held back at startup by the domain, group or
    /// item limit (the collector was restarted with lower `--max-domain`,
    /// `--max-groups` or `--max-items`, or the database was written without the
    /// item limit), as outside the campaigns (`--campaign`), or as a second report
    /// of one device for one kind (stored under schema version 1); logged at
    /// startup.
    pub held_back: u64,
    /// Two-sided confidence of the intervals.
    pub confidence: f64,
    /// One entry per report kind (mechanism, ε, parameter, query, g).
    pub groups: Vec<GroupJson>,
}

/// One report kind's estimates.
#[derive(Debug, Clone, Serialize)]
pub struct GroupJson {
    /// The report kind.
    pub kind: ReportKind,
    /// Reports of this kind.
    pub n: u64,
    /// Frequency mechanisms: per-item estimates with intervals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frequencies: Option<FrequencyEstimates>,
    /// Mean mechanisms: the mean with its interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean: Option<MeanEstimate>,
    /// Why no estimate could be made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `POST /v1/frames` response.
#[derive(Debug, Clone, Serialize)]
pub struct BatchJson {
    /// One status per frame, in the batch's order.
    pub results: Vec<StatusJson>,
}

/// The store with the open groups it admits reports against; they change
/// together, under one lock.
#[derive(Debug)]
struct Writer {
    store: Store,
    open: OpenGroups,
}

/// What the handlers share.
#[derive(Debug)]
pub struct Collector {
    writer: Mutex<Writer>,
    aggregates: Mutex<Aggregates>,
    /// The last `GET /v1/estimates` answer: (reports aggregated, confidence bits, JSON).
    answered: Mutex<Option<(u64, u64, Bytes)>>,
    /// Permits for `GET /v1/estimates` answers being built or sent
    /// ([`MAX_ESTIMATES_IN_FLIGHT`]); each sent answer holds one until written.
    answers: Arc<tokio::sync::Semaphore>,
    policy: Policy,
    quiet: bool,
    queued: AtomicUsize,
}

impl Collector {
    /// A collector over `store`, its aggregate rebuilt from the stored reports.
    pub fn new(store: Store, policy: Policy, quiet: bool) -> Result<Collector, StoreError> {
        let (aggregates, open) = Aggregates::from_store_within(&store, &policy)?;
        if aggregates.held_back() > 0 {
            eprintln!(
                "privq serve: warning: {} stored reports are held back (reported as held_back \
                 in /v1/estimates): they exceed the domain limit ({}), the group limit ({}) \
                 or the item limit ({}), are of kinds outside the campaigns, or repeat a \
                 device's report kind",
                aggregates.held_back(),
                policy.max_domain,
                policy.max_groups,
                policy.max_items
            );
        }
        Ok(Collector {
            writer: Mutex::new(Writer { store, open }),
            aggregates: Mutex::new(aggregates),
            answered: Mutex::new(None),
            answers: Arc::new(tokio::sync::Semaphore::new(MAX_ESTIMATES_IN_FLIGHT)),
            policy,
            quiet,
            queued: AtomicUsize::new(0),
        })
    }

    /// Reports in the aggregate.
    pub fn reports(&self) -> u64 {
        self.aggregates
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .reports()
    }

    /// The estimates of the aggregate at two-sided `confidence`.
    pub fn estimates(&self, confidence: f64) -> EstimatesJson {
        self.aggregates
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .estimates(confidence)
    }

    /// The JSON of [`estimates`](Self::estimates). The last answer is kept until a
    /// report is added (the aggregate only grows, so its report count names it) or
    /// another confidence is asked for; answers are built one at a time, and
    /// requests for the kept one share it.
    pub fn estimates_json(&self, confidence: f64) -> Result<Bytes, serde_json::Error> {
        let mut answered = self.answered.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (self.reports(), confidence.to_bits());
        if let Some((reports, bits, json)) = &*answered
            && (*reports, *bits) == key
        {
            return Ok(json.clone());
        }
        *answered = None;
        let est = self.estimates(confidence);
        let json = Bytes::from(serde_json::to_vec(&est)?);
        *answered = Some((est.reports, key.1, json.clone()));
        Ok(json)
    }

    /// Stores a batch (one transaction) and then counts its new reports.
    pub fn submit(&self, frames: &[&[u8]]) -> Result<Vec<FrameStatus>, StoreError> {
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let Writer { store, open } = &mut *writer;
        let (statuses, fresh) = store.submit(frames, &self.policy, open)?;
        // Still under the store lock, so the aggregate follows the commit order.
        self.aggregates
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .ingest(fresh.iter().map(Vec::as_slice));
        Ok(statuses)
    }
}

fn json_response(status: StatusCode, body: &impl Serialize) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => (status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

#[derive(Serialize)]
struct ErrorJson {
    error: String,
}

fn error(status: StatusCode, message: impl fmt::Display) -> Response {
    json_response(
        status,
        &ErrorJson {
            error: message.to_string(),
        },
    )
}

/// Frees a queue slot when the batch is done, also if its worker panicked.
struct QueueSlot<'a>(&'a AtomicUsize);

impl Drop for QueueSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What the handlers share: the collector and the body timeout.
#[derive(Debug, Clone)]
struct AppState {
    collector: Arc<Collector>,
    body_timeout: Duration,
}

/// Reads a request body of at most `limit` bytes within `timeout`, or the status and
/// message to answer: `413` once it passes the limit, `408` when the client is too
/// slow, `400` when the body breaks off.
async fn read_body(
    body: Body,
    limit: usize,
    timeout: Duration,
) -> Result<Bytes, (StatusCode, String)> {
    let read = async {
        let mut body = std::pin::pin!(body);
        let mut out = Vec::new();
        while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
            let frame =
                frame.map_err(|e| (StatusCode::BAD_REQUEST, format!("reading the body: {e}")))?;
            if let Ok(data) = frame.into_data() {
                if out.len() + data.len() > limit {
                    return Err((
                        StatusCode::PAYLOAD_TOO_LARGE,
                        format!("the body is larger than {limit} bytes"),
                    ));
                }
                out.extend_from_slice(&data);
            }
        }
        Ok(Bytes::from(out))
    };
    tokio::time::timeout(timeout, read)
        .await
        .unwrap_or_else(|_| {
            Err((
                StatusCode::REQUEST_TIMEOUT,
                format!("the body did not arrive within {} ms", timeout.as_millis()),
            ))
        })
}

async fn post_frames(State(st): State<AppState>, body: Body) -> Response {
    let body = match read_body(body, MAX_BATCH_BYTES, st.body_timeout).await {
        Ok(b) => b,
        Err((status, message)) => return error(status, message),
    };
    let c = st.collector;
    if let Err(e) = split_batch(&body) {
        return error(StatusCode::BAD_REQUEST, e);
    }
    if c.queued.fetch_add(1, Ordering::SeqCst) >= MAX_QUEUED_BATCHES {
        c.queued.fetch_sub(1, Ordering::SeqCst);
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy: batch not stored, retry later",
        );
    }
    let worker = Arc::clone(&c);
    let done = tokio::task::spawn_blocking(move || {
        let _slot = QueueSlot(&worker.queued);
        let frames = split_batch(&body).unwrap_or_default();
        worker.submit(&frames)
    })
    .await;
    match done {
        Ok(Ok(statuses)) => {
            if !c.quiet {
                let acked = statuses.iter().filter(|s| s.acknowledged()).count();
                let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
                for s in &statuses {
                    if let FrameStatus::Rejected(r) = s {
                        *reasons.entry(r.name()).or_default() += 1;
                    }
                }
                eprintln!(
                    "privq serve: batch of {} frames committed: {acked} acknowledged, {} rejected {reasons:?}",
                    statuses.len(),
                    statuses.len() - acked
                );
            }
            let results = statuses.iter().map(StatusJson::from).collect();
            json_response(StatusCode::OK, &BatchJson { results })
        }
        Ok(Err(e)) => {
            eprintln!("privq serve: error: batch not stored: {e}");
            // The detail (which may name devices) stays in the log.
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                "batch not stored; retry later",
            )
        }
        Err(e) => {
            eprintln!("privq serve: error: batch worker failed: {e}");
            error(StatusCode::INTERNAL_SERVER_ERROR, "batch not stored")
        }
    }
}

/// Query of `GET /v1/estimates`.
#[derive(Debug, Deserialize)]
struct EstimatesQuery {
    confidence: Option<f64>,
}

async fn get_estimates(
    State(AppState { collector: c, .. }): State<AppState>,
    q: Result<Query<EstimatesQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Ok(Query(q)) = q else {
        return error(StatusCode::BAD_REQUEST, "query: expected ?confidence=0.95");
    };
    let confidence = q.confidence.unwrap_or(0.95);
    if !(confidence > 0.0 && confidence < 1.0) {
        return error(StatusCode::BAD_REQUEST, "confidence must be in (0, 1)");
    }
    // Estimates and their JSON take time and memory in the open groups' items
    // (at most `Policy::max_items`): built off the async workers, one at a time,
    // and at most MAX_ESTIMATES_IN_FLIGHT answers built or being sent at once, so
    // slow readers asking for new answers cannot pile them up in memory.
    let Ok(permit) = Arc::clone(&c.answers).try_acquire_owned() else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy: too many estimates answers in flight; retry later",
        );
    };
    match tokio::task::spawn_blocking(move || c.estimates_json(confidence)).await {
        Ok(Ok(json)) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            // The permit is released when hyper drops the bytes: once written.
            Bytes::from_owner(InFlight {
                json,
                _permit: permit,
            }),
        )
            .into_response(),
        _ => error(StatusCode::INTERNAL_SERVER_ERROR, "estimates failed"),
    }
}

/// `GET /v1/estimates` answers built or being sent at once; more get `503`.
pub const MAX_ESTIMATES_IN_FLIGHT: usize = 4;

/// An estimates answer with its in-flight permit.
struct InFlight {
    json: Bytes,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl AsRef<[u8]> for InFlight {
    fn as_ref(&self) -> &[u8] {
        &self.json
    }
}

async fn not_found() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "no such endpoint: POST /v1/frames, GET /v1/estimates",
    )
}

/// The routes, with the default body timeout.
pub fn router(collector: Arc<Collector>) -> Router {
    router_with(collector, ConnectionLimits::default().body_timeout)
}

/// The routes; `POST /v1/frames` reads at most [`MAX_BATCH_BYTES`] of body within
/// `body_timeout`.
pub fn router_with(collector: Arc<Collector>, body_timeout: Duration) -> Router {
    Router::new()
        .route("/v1/frames", post(post_frames))
        .route("/v1/estimates", get(get_estimates))
        .fallback(not_found)
        .with_state(AppState {
            collector,
            body_timeout,
        })
}

/// Serves `collector` on `listener` with the default [`ConnectionLimits`] until
/// `shutdown` completes, then finishes the requests in flight.
pub async fn serve(
    listener: tokio::net::TcpListener,
    collector: Arc<Collector>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, collector, ConnectionLimits::default(), shutdown).await
}

/// Serves `collector` on `listener` under `limits` until `shutdown` completes, then
/// finishes the connections in flight. A connection is accepted only when one of the
/// `max_connections` slots is free, and closed at once if its peer holds
/// `max_connections_per_peer` already; each is served by hyper's HTTP/1 with the header
/// timeout, every body is read under the body timeout, and the connection is closed
/// at the connection timeout.
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    collector: Arc<Collector>,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;

    let app = router_with(collector, limits.body_timeout);
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let peers = Arc::new(Mutex::new(Peers::default()));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            s = Arc::clone(&slots).acquire_owned() => match s {
                Ok(s) => s,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok((stream, addr)) => (stream, Peer::of(addr.ip())),
                Err(e) => {
                    // E.g. out of file descriptors: wait a little instead of spinning.
                    eprintln!("privq serve: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(held) = Peers::hold(&peers, peer, limits.max_connections_per_peer) else {
            continue; // closes the stream and frees the slot
        };
        let service = TowerToHyperService::new(app.clone());
        let conn = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
        let deadline = limits.connection_timeout;
        tokio::spawn(async move {
            // A client that breaks off or times out ends only its own connection;
            // past the deadline the connection is dropped (closed), whatever it is
            // doing, and its slot freed.
            let _ = tokio::time::timeout(deadline, conn).await;
            drop((held, slot));
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// A peer for the per-peer connection limit: an IPv4 address, or the /64 network
/// of an IPv6 address (one host commonly holds a whole /64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Peer {
    V4(std::net::Ipv4Addr),
    V6Net(u64),
}

impl Peer {
    fn of(ip: std::net::IpAddr) -> Peer {
        match ip {
            std::net::IpAddr::V4(a) => Peer::V4(a),
            std::net::IpAddr::V6(a) => match a.to_ipv4_mapped() {
                Some(v4) => Peer::V4(v4),
                None => Peer::V6Net((a.to_bits() >> 64) as u64),
            },
        }
    }
}

/// Connections held per peer.
#[derive(Debug, Default)]
struct Peers(std::collections::HashMap<Peer, usize>);

/// One connection counted against its peer until dropped.
struct HeldByPeer {
    peers: Arc<Mutex<Peers>>,
    peer: Peer,
}

impl Peers {
    /// Counts a connection of `peer`, or `None` if it holds `limit` already.
    fn hold(peers: &Arc<Mutex<Peers>>, peer: Peer, limit: usize) -> Option<HeldByPeer> {
        let mut p = peers.lock().unwrap_or_else(PoisonError::into_inner);
        let n = p.0.entry(peer).or_insert(0);
        if *n >= limit.max(1) {
            return None;
        }
        *n += 1;
        Some(HeldByPeer {
            peers: Arc::clone(peers),
            peer,
        })
    }
}

impl Drop for HeldByPeer {
    fn drop(&mut self) {
        let mut p = self.peers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = p.0.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                p.0.remove(&self.peer);
            }
        }
    }
}

/// Completes on ctrl-c (SIGINT) or, on Unix, SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

/// The address a listener is bound to, for logs.
pub fn local_addr(listener: &tokio::net::TcpListener) -> std::io::Result<SocketAddr> {
    listener.local_addr()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Policy, Store};

    use std::net::SocketAddr;
    use std::time::Instant;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    /// A collector on 127.0.0.1 under `limits` (empty store); dropping the sender stops it.
    async fn start(
        name: &str,
        limits: ConnectionLimits,
    ) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
        let store = fresh_store(name);
        let collector = Arc::new(Collector::new(store, Policy::default(), true).unwrap());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(serve_with(listener, collector, limits, async move {
            let _ = stopped.await;
        }));
        (addr, stop)
    }

    /// An empty store in a fresh temporary database named after `name`.
    fn fresh_store(name: &str) -> Store {
        let path =
            std::env::temp_dir().join(format!("privq-http-{name}-{}.sqlite", std::process::id()));
        for ext in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{ext}", path.display()));
        }
        Store::open(&path).unwrap()
    }

    /// `n` connections that send nothing, once the server has accepted them.
    async fn idle_connections(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
        let mut idle = Vec::with_capacity(n);
        for _ in 0..n {
            idle.push(TcpStream::connect(addr).await.unwrap());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        idle
    }

    /// Everything the server sends until it closes the connection (at most `within`).
    async fn read_all(s: &mut TcpStream, within: Duration) -> Option<String> {
        let mut out = Vec::new();
        tokio::time::timeout(within, s.read_to_end(&mut out))
            .await
            .ok()
            .map(|_| String::from_utf8_lossy(&out).into_owned())
    }

    const GET: &[u8] = b"GET /v1/estimates HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slow_clients_do_not_block_others_and_are_cut_off() {
        let limits = ConnectionLimits {
            header_timeout: Duration::from_secs(2),
            body_timeout: Duration::from_secs(2),
            max_connections: 8,
            max_connections_per_peer: 32,
            connection_timeout: Duration::from_secs(60),
        };
        let (addr, _stop) = start("slow", limits).await;
        let mut headers = TcpStream::connect(addr).await.unwrap();
        headers
            .write_all(b"POST /v1/frames HTTP/1.1\r\nHost: t\r\n")
            .await
            .unwrap();
        let mut body = TcpStream::connect(addr).await.unwrap();
        body.write_all(
            b"POST /v1/frames HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n0123456789",
        )
        .await
        .unwrap();
        let started = Instant::now();
        let mut other = TcpStream::connect(addr).await.unwrap();
        other.write_all(GET).await.unwrap();
        let answer = read_all(&mut other, Duration::from_secs(10)).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(
            started.elapsed() < Duration::from_millis(1500),
            "answered while the slow clients stall: {:?}",
            started.elapsed()
        );
        let cut = read_all(&mut body, Duration::from_secs(10)).await.unwrap();
        assert!(cut.starts_with("HTTP/1.1 408"), "slow body: {cut}");
        let cut = read_all(&mut headers, Duration::from_secs(10)).await;
        assert!(cut.is_some(), "slow headers: the connection is closed");
        assert!(started.elapsed() >= Duration::from_millis(1500));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_connection_limit_holds() {
        let limits = ConnectionLimits {
            header_timeout: Duration::from_secs(2),
            body_timeout: Duration::from_secs(2),
            max_connections: 2,
            max_connections_per_peer: 32,
            connection_timeout: Duration::from_secs(60),
        };
        let (addr, _stop) = start("limit", limits).await;
        let idle = idle_connections(addr, 2).await;
        let mut third = TcpStream::connect(addr).await.unwrap();
        third.write_all(GET).await.unwrap();
        // Both slots are held: no answer while the idle connections last …
        let mut byte = [0u8; 1];
        let early = tokio::time::timeout(Duration::from_millis(1000), third.read(&mut byte)).await;
        assert!(early.is_err(), "served beyond the limit: {early:?}");
        // … and an answer once the header timeout has closed them.
        let answer = read_all(&mut third, Duration::from_secs(10)).await.unwrap();
        assert!(
            format!("{}{answer}", byte[0] as char).contains("200 OK"),
            "{answer}"
        );
        for mut s in idle {
            assert!(read_all(&mut s, Duration::from_secs(10)).await.is_some());
        }
    }

    /// Answers of `GET /v1/estimates` that clients do not read hold their permits:
    /// past `MAX_ESTIMATES_IN_FLIGHT` the collector answers 503 instead of building
    /// more, and serves again once they are read.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn unread_estimates_answers_are_bounded() {
        use privq_core::upload::{DeviceKey, FrameWriter};
        let mut store = fresh_store("inflight");
        let key = DeviceKey::new([3; 32]);
        store
            .provision(3, &key, privq_core::Epsilon::new(100, 1).unwrap())
            .unwrap();
        let c = Arc::new(Collector::new(store, Policy::default(), true).unwrap());
        // Four OUE groups over 2^16 items: about 25 MB of estimates JSON, more
        // than the socket buffers hold.
        let mut buf = vec![0u8; 40_000];
        for q in 0..4u8 {
            let mut w = FrameWriter::new(&mut buf, 3, 0, u32::from(q)).unwrap();
            let mut report = vec![1, 4, q, 0, 1, 0, 1, 0, 0, 0, 1, 0];
            report.extend(std::iter::repeat_n(0x5a, 8192));
            w.push(&report).unwrap();
            let n = w.finish(&key).unwrap();
            assert!(c.submit(&[&buf[..n]]).unwrap()[0].acknowledged());
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(serve_with(
            listener,
            c,
            ConnectionLimits::default(),
            async move {
                let _ = stopped.await;
            },
        ));
        let get = |confidence: u32| {
            format!(
                "GET /v1/estimates?confidence=0.{confidence} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
            )
        };
        let mut unread = Vec::new();
        for i in 0..MAX_ESTIMATES_IN_FLIGHT as u32 {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(get(90 + i).as_bytes()).await.unwrap();
            let mut head = [0u8; 12];
            s.read_exact(&mut head).await.unwrap();
            assert_eq!(&head, b"HTTP/1.1 200");
            unread.push(s);
        }
        let mut busy = TcpStream::connect(addr).await.unwrap();
        busy.write_all(get(80).as_bytes()).await.unwrap();
        let answer = read_all(&mut busy, Duration::from_secs(30)).await.unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 503"),
            "{}",
            &answer[..answer.len().min(200)]
        );
        for mut s in unread {
            let rest = read_all(&mut s, Duration::from_secs(60)).await.unwrap();
            assert!(rest.len() > 1 << 20, "a large answer: {} bytes", rest.len());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut again = TcpStream::connect(addr).await.unwrap();
        again.write_all(get(80).as_bytes()).await.unwrap();
        let answer = read_all(&mut again, Duration::from_secs(30)).await.unwrap();
        assert!(
            answer.starts_with("HTTP/1.1 200"),
            "{}",
            &answer[..answer.len().min(200)]
        );
    }

    /// One peer holds at most its share of the slots; another peer is served.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_peer_cannot_take_every_slot() {
        let limits = ConnectionLimits {
            max_connections: 4,
            max_connections_per_peer: 2,
            ..ConnectionLimits::default()
        };
        let (addr, _stop) = start("peer", limits).await;
        let idle = idle_connections(addr, 2).await;
        // A third connection of 127.0.0.1 is closed without an answer …
        let mut third = TcpStream::connect(addr).await.unwrap();
        let _ = third.write_all(GET).await;
        let answer = read_all(&mut third, Duration::from_secs(5)).await;
        assert_eq!(answer.as_deref(), Some(""), "closed at once, unanswered");
        // … while another peer (127.0.0.2, also loopback on Linux) is served.
        let other = tokio::net::TcpSocket::new_v4().unwrap();
        other.bind("127.0.0.2:0".parse().unwrap()).unwrap();
        let mut other = other.connect(addr).await.unwrap();
        other.write_all(GET).await.unwrap();
        let answer = read_all(&mut other, Duration::from_secs(5)).await.unwrap();
        assert!(answer.contains("200 OK"), "{answer}");
        // Once its connections close, the first peer is served again.
        drop(idle);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut again = TcpStream::connect(addr).await.unwrap();
        again.write_all(GET).await.unwrap();
        let answer = read_all(&mut again, Duration::from_secs(5)).await.unwrap();
        assert!(answer.contains("200 OK"), "{answer}");
    }

    #[test]
    fn ipv6_peers_are_their_64_networks() {
        let a: std::net::IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let b: std::net::IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let c: std::net::IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(Peer::of(a), Peer::of(b));
        assert_ne!(Peer::of(a), Peer::of(c));
        let mapped: std::net::IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(Peer::of(mapped), Peer::of("10.0.0.1".parse().unwrap()));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_that_never_reads_is_cut_off_and_its_slot_freed() {
        let limits = ConnectionLimits {
            header_timeout: Duration::from_secs(2),
            body_timeout: Duration::from_secs(2),
            max_connections: 1,
            max_connections_per_peer: 32,
            connection_timeout: Duration::from_secs(2),
        };
        let (addr, _stop) = start("noread", limits).await;
        // Pipelined requests whose responses are never read: the server's writes fill
        // the socket buffers and block; every request's headers arrived at once, so
        // the header timeout does not help.
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let hog = socket.connect(addr).await.unwrap();
        let (mut hog_read, mut hog_write) = hog.into_split();
        let flood = tokio::spawn(async move {
            let one: &[u8] = b"GET /v1/estimates HTTP/1.1\r\nHost: t\r\n\r\n";
            let many = one.repeat(1000);
            for _ in 0..200 {
                if hog_write.write_all(&many).await.is_err() {
                    break;
                }
            }
            hog_write
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
        // The only slot is held; a second client is answered once the deadline has
        // closed the hog's connection.
        let started = Instant::now();
        let mut other = TcpStream::connect(addr).await.unwrap();
        other.write_all(GET).await.unwrap();
        let answer = read_all(&mut other, Duration::from_secs(20)).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        // The hog's connection was closed: reading drains to its end.
        let mut sink = vec![0u8; 1 << 16];
        let closed = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                match hog_read.read(&mut sink).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        })
        .await;
        assert!(
            closed.is_ok(),
            "the non-reading client was not disconnected"
        );
        flood.abort();
    }

    /// One answer is shared until a report is added or another confidence asked.
    #[test]
    fn estimates_json_is_kept_until_the_aggregate_changes() {
        use privq_core::upload::{DeviceKey, FrameWriter};
        let mut store = fresh_store("answered");
        let key = DeviceKey::new([4; 32]);
        let cap = privq_core::Epsilon::new(10, 1).unwrap();
        store.provision(4, &key, cap).unwrap();
        let c = Collector::new(store, Policy::default(), true).unwrap();
        let first = c.estimates_json(0.95).unwrap();
        let again = c.estimates_json(0.95).unwrap();
        assert_eq!(
            first.as_ptr(),
            again.as_ptr(),
            "the same answer, not a copy"
        );
        let other = c.estimates_json(0.9).unwrap();
        assert_ne!(first, other);
        let mut buf = [0u8; 128];
        let mut w = FrameWriter::new(&mut buf, 4, 0, 0).unwrap();
        w.push(&[1, 8, 0, 0, 1, 0, 8, 0, 0, 0, 0, 0, 1]).unwrap();
        let n = w.finish(&key).unwrap();
        assert!(c.submit(&[&buf[..n]]).unwrap()[0].acknowledged());
        let after = c.estimates_json(0.9).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&after).unwrap();
        assert_eq!(v["reports"], 1);
        assert_eq!(
            serde_json::to_vec(&c.estimates(0.9)).unwrap(),
            after.to_vec(),
            "the kept answer is the estimates' JSON"
        );
    }

    #[test]
    fn batches_split_and_refuse_truncation() {
        let mut body = Vec::new();
        push_batch(&mut body, b"abc").unwrap();
        push_batch(&mut body, b"").unwrap();
        assert_eq!(split_batch(&body).unwrap(), vec![&b"abc"[..], &b""[..]]);
        assert_eq!(split_batch(&[]), Err(BatchError::Empty));
        assert_eq!(split_batch(&[5]), Err(BatchError::Truncated { offset: 0 }));
        // Empty entries are two bytes each: a body of many of them would be
        // answered with a status each, so their number is bounded.
        let zeros = vec![0u8; 2 * MAX_BATCH_FRAMES];
        assert_eq!(split_batch(&zeros).unwrap().len(), MAX_BATCH_FRAMES);
        let zeros = vec![0u8; 2 * MAX_BATCH_FRAMES + 2];
        assert_eq!(split_batch(&zeros), Err(BatchError::TooManyFrames));
        assert_eq!(
            split_batch(&body[..body.len() - 1]),
            Err(BatchError::Truncated { offset: 5 })
        );
    }
}

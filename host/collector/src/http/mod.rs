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

/// A verdict's tag ([`Store::verdict_tags`]).
pub type VerdictTag = [u8; privq_core::upload::TAG_LEN];
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
    /// Refuses a database with more devices than the collector holds in memory
    /// ([`StoreError::TooManyDevices`]).
    pub fn new(mut store: Store, policy: Policy, quiet: bool) -> Result<Collector, StoreError> {
        store.prepare_intake()?;
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
        Ok(self
            .submit_answered(frames)?
            .into_iter()
            .map(|(s, _)| s)
            .collect())
    }

    /// [`submit`](Self::submit), with each frame's verdict tag
    /// ([`Store::verdict_tags`]): what `POST /v1/frames` answers.
    pub fn submit_answered(
        &self,
        frames: &[&[u8]],
    ) -> Result<Vec<(FrameStatus, Option<VerdictTag>)>, StoreError> {
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let Writer { store, open } = &mut *writer;
        let (statuses, fresh) = store.submit_borrowed(frames, &self.policy, open)?;
        let tags = store.verdict_tags(frames, &statuses);
        // Still under the store lock, so the aggregate follows the commit order.
        self.aggregates
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .ingest(fresh);
        Ok(statuses.into_iter().zip(tags).collect())
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
        worker.submit_answered(&frames)
    })
    .await;
    match done {
        Ok(Ok(answers)) => {
            if !c.quiet {
                let acked = answers.iter().filter(|(s, _)| s.acknowledged()).count();
                let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
                for (s, _) in &answers {
                    if let FrameStatus::Rejected(r) = s {
                        *reasons.entry(r.name()).or_default() += 1;
                    }
                }
                eprintln!(
                    "privq serve: batch of {} frames committed: {acked} acknowledged, {} rejected {reasons:?}",
                    answers.len(),
                    answers.len() - acked
                );
            }
            let results = answers
                .iter()
                .map(|(s, tag)| StatusJson::from(s).with_tag(*tag))
                .collect();
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
mod tests;

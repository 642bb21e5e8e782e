//! The collector's HTTP API (`docs/collector.md`): `POST /v1/frames` takes a batch
//! of upload frames and answers one status per frame after the batch is committed;
//! `GET /v1/estimates` serves the aggregate of every stored report.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};

use super::store::{FrameStatus, Policy, StatusJson, Store, StoreError};
use crate::ldp::aggregate::{
    Aggregator, FrequencyEstimates, MeanEstimate, ReportKind, ingest_grouped,
};
use crate::ldp::decode::RejectCounts;

/// The largest request body `POST /v1/frames` accepts (413 beyond).
pub const MAX_BATCH_BYTES: usize = 1 << 20;
/// Batches received and waiting for the store at once; more are answered 503
/// (bounds the memory held by queued bodies to this many MiB).
pub const MAX_QUEUED_BATCHES: usize = 64;

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
}

impl fmt::Display for BatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BatchError::Empty => f.write_str("the batch holds no frame"),
            BatchError::Truncated { offset } => {
                write!(f, "the batch ends inside the entry at byte {offset}")
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
}

impl Aggregates {
    /// Adds reports (already verified and stored).
    pub fn ingest<'r>(&mut self, reports: impl IntoIterator<Item = &'r [u8]>) {
        self.reports += ingest_grouped(&mut self.groups, reports, &mut self.rejected);
    }

    /// The aggregate of every report in `store`.
    pub fn from_store(store: &Store) -> Result<Aggregates, StoreError> {
        let mut all = Vec::new();
        store.for_each_report(|r| all.push(r.report))?;
        let mut a = Aggregates::default();
        a.ingest(all.iter().map(Vec::as_slice));
        Ok(a)
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
    /// Stored reports the aggregator could not use (0 unless the database was edited).
    pub undecodable: u64,
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

/// What the handlers share.
#[derive(Debug)]
pub struct Collector {
    store: Mutex<Store>,
    aggregates: Mutex<Aggregates>,
    policy: Policy,
    quiet: bool,
    queued: AtomicUsize,
}

impl Collector {
    /// A collector over `store`, its aggregate rebuilt from the stored reports.
    pub fn new(store: Store, policy: Policy, quiet: bool) -> Result<Collector, StoreError> {
        let aggregates = Aggregates::from_store(&store)?;
        Ok(Collector {
            store: Mutex::new(store),
            aggregates: Mutex::new(aggregates),
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

    /// Stores a batch (one transaction) and then counts its new reports.
    pub fn submit(&self, frames: &[&[u8]]) -> Result<Vec<FrameStatus>, StoreError> {
        let mut store = self.store.lock().unwrap_or_else(PoisonError::into_inner);
        let (statuses, fresh) = store.submit(frames, &self.policy)?;
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

async fn post_frames(State(c): State<Arc<Collector>>, body: Bytes) -> Response {
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
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("batch not stored: {e}"),
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
    State(c): State<Arc<Collector>>,
    q: Result<Query<EstimatesQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Ok(Query(q)) = q else {
        return error(StatusCode::BAD_REQUEST, "query: expected ?confidence=0.95");
    };
    let confidence = q.confidence.unwrap_or(0.95);
    if !(confidence > 0.0 && confidence < 1.0) {
        return error(StatusCode::BAD_REQUEST, "confidence must be in (0, 1)");
    }
    let est = c
        .aggregates
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .estimates(confidence);
    json_response(StatusCode::OK, &est)
}

async fn not_found() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "no such endpoint: POST /v1/frames, GET /v1/estimates",
    )
}

/// The routes, with the request-size limit.
pub fn router(collector: Arc<Collector>) -> Router {
    Router::new()
        .route("/v1/frames", post(post_frames))
        .route("/v1/estimates", get(get_estimates))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BATCH_BYTES))
        .with_state(collector)
}

/// Serves `collector` on `listener` until `shutdown` completes, then finishes the
/// requests in flight.
pub async fn serve(
    listener: tokio::net::TcpListener,
    collector: Arc<Collector>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(collector))
        .with_graceful_shutdown(shutdown)
        .await
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

    #[test]
    fn batches_split_and_refuse_truncation() {
        let mut body = Vec::new();
        push_batch(&mut body, b"abc").unwrap();
        push_batch(&mut body, b"").unwrap();
        assert_eq!(split_batch(&body).unwrap(), vec![&b"abc"[..], &b""[..]]);
        assert_eq!(split_batch(&[]), Err(BatchError::Empty));
        assert_eq!(split_batch(&[5]), Err(BatchError::Truncated { offset: 0 }));
        assert_eq!(
            split_batch(&body[..body.len() - 1]),
            Err(BatchError::Truncated { offset: 5 })
        );
    }
}

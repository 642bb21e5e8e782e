//! The same aggregation on Apache Ballista in standalone mode (feature
//! `ballista`).
//!
//! [`aggregate_parquet_ballista`] runs [`query::aggregate_parquet`]'s query,
//! `SELECT privq_aggregate(report) FROM reports`, unchanged, on a Ballista
//! cluster started in this process: a scheduler and one executor, each a gRPC
//! server on a loopback port the system picks.
//!
//! | where     | what runs                                                                    |
//! |-----------|------------------------------------------------------------------------------|
//! | client    | parses the SQL, plans it with `privq_aggregate` registered, sends the plan    |
//! | scheduler | decodes the logical plan, splits it into stages, sends each task's plan       |
//! | executor  | decodes a task's plan, scans Parquet, runs the partial or final aggregate     |
//! | client    | fetches the one final state and re-validates it ([`query::aggregate_parquet`]'s merge) |
//!
//! What crosses the wire: the plans (DataFusion protobuf), in which
//! `privq_aggregate` carries its campaign ([`codec`]: a tag and the campaign
//! JSON, decoded against the receiver's [`Limits`]); the partial states
//! between stages and the final state (Arrow IPC, one Binary value per
//! partition: an intake's saved-state JSON, re-validated against the limits
//! wherever it is merged). Reports never leave the executor that scans them.
//! The scheduler and executor are generic: their function registries are
//! DataFusion's and Ballista's defaults, and they learn the campaign only
//! from the plan.
//!
//! Why the result equals the in-process intake: each partial aggregate is an
//! [`Intake`] fed the reports of its files, and intakes merge exactly (their
//! states are counts, and for SQ Laplace sums of dyadic grid values), whatever
//! the split; so the final state is that of one intake over all reports, as
//! for DataFusion in one process.
//!
//! ```
//! use privq_host::ldp::analytics::{ballista, query, table::ReportTableWriter};
//! use privq_host::ldp::campaign::{Campaign, Limits};
//! use privq_host::ldp::fleet::{Fleet, MechanismSpec};
//! use privq_host::Epsilon;
//!
//! let spec = MechanismSpec::parse("oue", Epsilon::new(1, 1)?, 8)?;
//! let reports = Fleet::from_weights(&[1.0; 8], 300)?.privatize(&spec, 1)?;
//! let dir = std::env::temp_dir().join(format!("privq-doc-ballista-{}", std::process::id()));
//! let mut out = ReportTableWriter::create(&dir, 100)?;
//! for r in reports.iter() {
//!     out.push(r)?;
//! }
//! out.commit()?;
//! let (limits, plan) = (Limits::default(), Campaign::for_spec(&spec).validate(&Limits::default())?);
//! let distributed = ballista::aggregate_parquet_ballista(&dir, &plan, &limits, 2)?;
//! let local = query::aggregate_parquet(&dir, &plan, &limits, 2)?;
//! assert_eq!(distributed.to_state(), local.to_state());
//! assert_eq!(distributed.stats().accepted, 300);
//! std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`codec`]: super::codec
//! [`query::aggregate_parquet`]: super::query::aggregate_parquet

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ballista_core::extension::{SessionConfigExt, SessionStateExt};
use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
use ballista_core::utils::default_session_builder;
use datafusion::execution::SessionState;
use datafusion::prelude::{SessionConfig, SessionContext};

use super::super::campaign::{CampaignPlan, Limits};
use super::super::intake::Intake;
use super::codec::PrivqCodec;
use super::query::{self, QueryError};
use super::udaf::privq_aggregate;

/// How long the client waits for the in-process scheduler to answer.
const CONNECT_TRIES: u32 = 100;
const CONNECT_WAIT: Duration = Duration::from_millis(50);

/// A generic session state (DataFusion's and Ballista's default functions,
/// no `privq_aggregate`) whose Ballista codecs are [`PrivqCodec`]s.
fn generic_state(limits: &Limits, target_partitions: usize) -> Result<SessionState, QueryError> {
    let codec = Arc::new(PrivqCodec::new(*limits));
    let config = SessionConfig::new_with_ballista()
        .with_target_partitions(target_partitions)
        .with_ballista_standalone_parallelism(target_partitions)
        .with_ballista_logical_extension_codec(codec.clone())
        .with_ballista_physical_extension_codec(codec);
    Ok(default_session_builder(config)?)
}

/// Starts a scheduler and an executor (`target_partitions` task slots) in
/// this runtime, and returns a client session with `privq_aggregate` for
/// `plan` registered. Only the client knows the campaign.
pub async fn standalone_session(
    plan: &CampaignPlan,
    limits: &Limits,
    target_partitions: usize,
) -> Result<SessionContext, QueryError> {
    let slots = target_partitions.max(1);
    let generic = generic_state(limits, slots)?;
    let addr =
        ballista_scheduler::standalone::new_standalone_scheduler_from_state(&generic).await?;
    let url = format!("http://localhost:{}", addr.port());
    let mut tries = 0;
    let scheduler = loop {
        match SchedulerGrpcClient::connect(url.clone()).await {
            Ok(client) => break client,
            Err(_) if tries < CONNECT_TRIES => {
                tries += 1;
                tokio::time::sleep(CONNECT_WAIT).await;
            }
            Err(e) => {
                let e = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, e);
                return Err(QueryError::Io(e));
            }
        }
    };
    ballista_executor::new_standalone_executor_from_state(scheduler, slots, &generic).await?;
    let ctx = SessionContext::new_with_state(generic.upgrade_for_ballista(url)?);
    ctx.register_udaf(privq_aggregate(plan.clone(), *limits));
    Ok(ctx)
}

/// [`query::aggregate_parquet`] on a standalone Ballista cluster started for
/// this call (and stopped when it returns): the same query and function, the
/// same result. `target_partitions` is the executor's task slots and the
/// scan's partitions.
pub fn aggregate_parquet_ballista(
    dir: &Path,
    plan: &CampaignPlan,
    limits: &Limits,
    target_partitions: usize,
) -> Result<Intake, QueryError> {
    let files = query::parquet_files(dir)?;
    // The scheduler's and executor's loops share the runtime with the query.
    let runtime = query::runtime(target_partitions.max(2))?;
    let batches = query::block_on_guarded(&runtime, async {
        let ctx = standalone_session(plan, limits, target_partitions).await?;
        query::register_reports(&ctx, dir).await?;
        Ok(ctx.sql(&query::total_sql()).await?.collect().await?)
    });
    runtime.shutdown_timeout(Duration::from_secs(5));
    query::total_intake(plan, limits, &batches?, files)
}

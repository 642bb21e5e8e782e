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
//! `privq sql --engine ballista` uses the same cluster
//! ([`cluster_session`]) for its one aggregate, `privq_bound`, whose payload
//! carries the plan, the table's header and the secret bounding key (see
//! [`codec`]): the executor then holds the key, as it holds the rows.
//!
//! Who can talk to the cluster: the scheduler and the executor listen on
//! loopback ports while the call runs, and Ballista 55 authenticates no gRPC
//! or Flight peer. Another user of the same machine could, during the call,
//! submit plans of their own to the scheduler (they run with this process's
//! permissions) or register as an executor and return forged partial states.
//! What privq checks: every state's campaign and limits, exactly one final
//! state, and that it counted exactly the rows the Parquet footers declare
//! (so a lost or duplicated partial state is an error). A forged state with
//! the right row count is not detected. Use this engine on a machine whose
//! users you trust (or in its own network namespace); the default engine,
//! DataFusion in this process, opens no port. The executor's shuffle files go
//! to a private directory ([`WorkDir`]) removed when the call returns, or by
//! the `privq` program's signal handler when it is interrupted.
//!
//! Why the result equals the in-process intake: each partial aggregate is an
//! [`Intake`] fed the reports of its files, and intakes merge exactly (their
//! states are counts, and for SQ Laplace sums of dyadic grid values), whatever
//! the split; so the final state is that of one intake over all reports, as
//! for DataFusion in one process.
//!
//! ```
//! use privq_analytics::{ballista, query, table::ReportTableWriter};
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
//! [`codec`]: crate::codec
//! [`query::aggregate_parquet`]: crate::query::aggregate_parquet

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arrow_flight::flight_service_server::FlightServiceServer;
use ballista_core::extension::{SessionConfigExt, SessionStateExt};
use ballista_core::serde::BallistaCodec;
use ballista_core::serde::protobuf::ExecutorRegistration;
use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
use ballista_core::serde::scheduler::{
    ExecutorOperatingSystemSpecification, ExecutorSpecification,
};
use ballista_core::utils::{GrpcServerConfig, create_grpc_server, default_session_builder};
use ballista_core::{BALLISTA_PROTOCOL_VERSION, ConfigProducer, RuntimeProducer};
use ballista_executor::executor::Executor;
use ballista_executor::flight_service::BallistaFlightService;
use ballista_executor::metrics::LoggingMetricsCollector;
use datafusion::execution::SessionState;
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::codec::PrivqCodec;
use crate::query::{self, QueryError};
use crate::udaf::privq_aggregate;
use privq_host::ldp::campaign::{CampaignPlan, Limits};
use privq_host::ldp::intake::Intake;

/// How long the client waits for the in-process scheduler to answer.
const CONNECT_TRIES: u32 = 100;
const CONNECT_WAIT: Duration = Duration::from_millis(50);

/// A generic session state (DataFusion's and Ballista's default functions,
/// no `privq_aggregate`) whose Ballista codecs are [`PrivqCodec`]s.
fn generic_state(limits: &Limits, target_partitions: usize) -> Result<SessionState, QueryError> {
    let codec = Arc::new(PrivqCodec::new(*limits));
    let config = query::trusted_reads_only(SessionConfig::new_with_ballista())
        .with_target_partitions(target_partitions)
        .with_ballista_standalone_parallelism(target_partitions)
        .with_ballista_logical_extension_codec(codec.clone())
        .with_ballista_physical_extension_codec(codec);
    Ok(default_session_builder(config)?)
}

/// The executor's work directory (its shuffle files, partial states among
/// them): created with mode 0700 under a fresh random name, so no other user
/// can read it or plant it beforehand, and removed when dropped. While it
/// exists it is registered with [`remove_pending_temporaries`], so a program
/// interrupted by a signal (no destructor runs) removes its contents too: the
/// empty directory stays (mode 0700), so executor threads still running
/// re-create nothing outside it. A process killed outright (SIGKILL, the
/// out-of-memory killer) leaves the directory with its shuffle files, readable
/// by its owner only.
///
/// [`remove_pending_temporaries`]: privq_host::ldp::output::remove_pending_temporaries
pub struct WorkDir(PathBuf);

impl WorkDir {
    /// A new private directory in the system's temporary directory.
    pub fn create() -> std::io::Result<WorkDir> {
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        loop {
            let mut nonce = [0u8; 8];
            getrandom::fill(&mut nonce).map_err(std::io::Error::other)?;
            let name = format!("privq-ballista-{}", u64::from_le_bytes(nonce));
            let path = std::env::temp_dir().join(name);
            match builder.create(&path) {
                Ok(()) => {
                    privq_host::ldp::output::track_temporary_dir(&path);
                    return Ok(WorkDir(path));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        privq_host::ldp::output::forget_temporary_dir(&self.0);
    }
}

/// Starts an executor of `slots` task slots on this runtime: it polls
/// `scheduler` for tasks, decodes their plans with `state`'s codecs, writes
/// its shuffle files into `work_dir` and serves them on a Flight port of
/// 127.0.0.1. (Ballista's own standalone executor uses a world-readable
/// temporary directory that it neither creates safely nor removes.)
async fn start_executor(
    scheduler: SchedulerGrpcClient<tonic::transport::Channel>,
    slots: usize,
    state: &SessionState,
    work_dir: &Path,
) -> Result<(), QueryError> {
    let work_dir = work_dir.to_string_lossy().into_owned();
    let config = state.config().clone().upgrade_for_ballista();
    let max_message = config.ballista_grpc_client_max_message_size();
    let codec: BallistaCodec = BallistaCodec::new(
        config.ballista_logical_extension_codec(),
        config.ballista_physical_extension_codec(),
    );
    let runtime = state.runtime_env().clone();
    let config_producer: ConfigProducer = Arc::new(move || config.clone());
    let runtime_producer: RuntimeProducer = Arc::new(move |_| Ok(runtime.clone()));
    let incoming =
        tonic::transport::server::TcpIncoming::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?
            .with_nodelay(Some(true));
    let flight = incoming.local_addr()?;
    let registration = ExecutorRegistration {
        id: ballista_core::ids::new_instance_id(),
        host: Some(flight.ip().to_string()),
        port: u32::from(flight.port()),
        grpc_port: 0,
        specification: Some(
            ExecutorSpecification::default()
                .with_vcores(slots as u32)
                .into(),
        ),
        os_info: Some(ExecutorOperatingSystemSpecification::default().into()),
        ballista_protocol_version: BALLISTA_PROTOCOL_VERSION,
    };
    let executor = Arc::new(Executor::with_default_execution_engine(
        registration,
        &work_dir,
        runtime_producer,
        config_producer,
        Arc::new(state.into()),
        Arc::new(LoggingMetricsCollector::default()),
        slots,
    ));
    let service = FlightServiceServer::new(BallistaFlightService::new(work_dir))
        .max_decoding_message_size(max_message)
        .max_encoding_message_size(max_message);
    tokio::spawn(
        create_grpc_server(&GrpcServerConfig::default())
            .add_service(service)
            .serve_with_incoming(incoming),
    );
    tokio::spawn(ballista_executor::execution_loop::poll_loop(
        scheduler,
        executor,
        codec,
        None,
        None,
        ballista_executor::health::ExecutorHealth::new(),
    ));
    Ok(())
}

/// Starts a scheduler and an executor (`target_partitions` task slots, shuffle
/// files in `work_dir`) in this runtime, and returns a client session with
/// `privq_aggregate` for `plan` registered. Only the client knows the
/// campaign. Both listen on loopback only, and neither authenticates its
/// peers (Ballista has no authentication): see the module documentation.
pub async fn standalone_session(
    plan: &CampaignPlan,
    limits: &Limits,
    target_partitions: usize,
    work_dir: &Path,
) -> Result<SessionContext, QueryError> {
    let ctx = cluster_session(limits, target_partitions, work_dir).await?;
    ctx.register_udaf(privq_aggregate(plan.clone(), *limits));
    Ok(ctx)
}

/// Starts a scheduler and an executor (`target_partitions` task slots, shuffle
/// files in `work_dir`) in this runtime, and returns a client session without
/// any privq function registered: a generic cluster whose codecs are
/// [`PrivqCodec`]s (campaigns validated against `limits`). Loopback only,
/// unauthenticated: see the module documentation.
pub async fn cluster_session(
    limits: &Limits,
    target_partitions: usize,
    work_dir: &Path,
) -> Result<SessionContext, QueryError> {
    let slots = target_partitions.max(1);
    let generic = generic_state(limits, slots)?;
    let addr =
        ballista_scheduler::standalone::new_standalone_scheduler_from_state(&generic).await?;
    // The address bound, not a name that may resolve to the other address family.
    let url = format!("http://{addr}");
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
    start_executor(scheduler, slots, &generic, work_dir).await?;
    Ok(SessionContext::new_with_state(
        generic.upgrade_for_ballista(url)?,
    ))
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
    let table = query::checked_table(dir)?;
    let work_dir = WorkDir::create()?;
    // The scheduler's and executor's loops share the runtime with the query.
    let runtime = query::runtime(target_partitions.max(2))?;
    let batches = query::block_on_guarded(&runtime, async {
        let ctx = standalone_session(plan, limits, target_partitions, work_dir.path()).await?;
        query::register_reports(&ctx, dir).await?;
        Ok(ctx.sql(&query::total_sql()).await?.collect().await?)
    });
    runtime.shutdown_timeout(Duration::from_secs(5));
    query::total_intake(plan, limits, &batches?, table)
}

//! `privq ldp export` and `privq ldp scale` (feature `analytics`): reports as
//! Parquet tables for DataFusion ([`privq_analytics`]), and the
//! throughput measurement of aggregating them.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use privq_analytics::{query, table};
use privq_core::local::QueryId;
use privq_host::ldp::campaign::{Campaign, CampaignPlan, Limits};
use privq_host::ldp::fleet::{Fleet, default_distribution, device_rng};
use privq_host::ldp::frames::{self, Event, FrameSync, Scanner};
use privq_host::ldp::intake::{Intake, Outcome};
use rayon::prelude::*;

use super::CliError;
use super::ldp::{CampaignFlags, LdpError, campaign_plan, simulation_spec_of};

/// Options of `privq ldp export`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:
  privq ldp export --input day1.pqr --input day2.pqr --out reports/
  privq ldp export --db collector.db --out reports/ --rows-per-file 1000000
  cat day*.pqr | privq ldp export --input - --campaign campaign.json --out reports/
  privq ldp aggregate --campaign campaign.json --parquet reports/

The table is a directory of Parquet files part-00000.parquet, … with one row per
report: the kind columns mechanism (UInt8), epsilon_num, epsilon_den (UInt64), param
(UInt32), query, g (UInt16), null for a report that does not decode, and report
(Binary), the encoded bytes. Undecodable reports are kept, so that aggregation counts
their rejections. The directory is written under a temporary name and renamed into
place at the end: on failure nothing is left.

Report files are split into frames by their length prefixes; a report file header
where a frame would start begins a concatenated file. A length prefix damaged in
transit cannot be told from a long foreign report without knowing the campaign:
with --campaign, the files are read by the resynchronising reader of `ldp aggregate
--input` (frames of other kinds are still exported, to be counted as rejections),
and damaged framing is skipped up to the next frame of the campaign. What has no
report to export (a truncated final frame, a damaged length prefix, skipped bytes,
a missing file header, an empty input) and, without --campaign, undecodable frames
(which a damaged length prefix would produce) are reported on stderr, and the exit
code is 3.")]
pub struct ExportArgs {
    /// Report files (`-` for standard input), one report file each.
    #[arg(long, value_name = "PATH", num_args = 1..)]
    pub input: Vec<PathBuf>,
    /// The reports a collector accepted (`privq serve --db`).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// The table directory to create (must not exist).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Rows per Parquet file.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub rows_per_file: u64,
    /// Read --input files with the resynchronising reader of `ldp aggregate`, which
    /// knows this campaign's report length and header (see below).
    #[arg(long, value_name = "FILE")]
    pub campaign: Option<PathBuf>,
}

/// The engine that runs a Parquet aggregation (`--engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Engine {
    /// DataFusion in this process.
    #[default]
    Datafusion,
    /// Apache Ballista in standalone mode: a scheduler and an executor in
    /// this process, on loopback gRPC without authentication (feature
    /// `ballista`).
    Ballista,
}

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Datafusion => "datafusion",
            Engine::Ballista => "ballista",
        }
    }

    /// `privq_aggregate` over the Parquet table `dir` on this engine, in a child
    /// process (see [`WorkerArgs`]): whatever the table's bytes make the Parquet
    /// reader do, this process survives, and a crash of the reader is an error
    /// that names the table.
    pub fn aggregate(
        self,
        dir: &Path,
        plan: &CampaignPlan,
        limits: &Limits,
        target_partitions: usize,
    ) -> Result<Intake, CliError> {
        let failed = |why: String| CliError::Run(format!("{}: {why}", dir.display()).into());
        let exe = std::env::current_exe().map_err(|e| failed(format!("privq's own path: {e}")))?;
        let mut child = std::process::Command::new(exe)
            .args([
                "ldp",
                "parquet-worker",
                "--engine",
                self.name(),
                "--partitions",
            ])
            .arg(target_partitions.to_string())
            .arg("--memory-bytes")
            .arg(limits.memory_bytes.to_string())
            .arg("--address-space-mib")
            .arg(address_space_mib(limits, target_partitions).to_string())
            .arg("--parquet")
            .arg(dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| failed(format!("cannot start the reader process: {e}")))?;
        let campaign = serde_json::to_vec(plan.campaign()).map_err(io::Error::from)?;
        if let Some(mut stdin) = child.stdin.take() {
            // A worker that dies before reading its campaign is reported below.
            let _ = stdin.write_all(&campaign);
        }
        let out = child
            .wait_with_output()
            .map_err(|e| failed(format!("the reader process: {e}")))?;
        let said = String::from_utf8_lossy(&out.stderr);
        let said = said.trim();
        if !out.status.success() {
            return Err(failed(match crashed(&out.status) {
                Some(signal) => format!(
                    "the Parquet reader crashed on this table (signal {signal}){}; nothing was \
                     aggregated. A table written by `privq ldp export` does not do this: it is \
                     damaged or crafted",
                    if said.is_empty() {
                        String::new()
                    } else {
                        format!(": {said}")
                    }
                ),
                None => said.strip_prefix("privq: ").unwrap_or(said).to_string(),
            }));
        }
        let text = std::str::from_utf8(&out.stdout)
            .map_err(|_| failed("the reader process wrote a state that is not UTF-8".into()))?;
        Intake::from_json(text, limits).map_err(|e| LdpError::State(dir.to_path_buf(), e).into())
    }

    /// `privq_aggregate` over the Parquet table `dir` on this engine, in this
    /// process (tables privq wrote itself: `ldp scale`, and the worker).
    pub fn aggregate_in_process(
        self,
        dir: &Path,
        plan: &CampaignPlan,
        limits: &Limits,
        target_partitions: usize,
    ) -> Result<Intake, CliError> {
        let run = |e: query::QueryError| CliError::at(dir.display(), e);
        match self {
            Engine::Datafusion => {
                query::aggregate_parquet(dir, plan, limits, target_partitions).map_err(run)
            }
            #[cfg(feature = "ballista")]
            Engine::Ballista => privq_analytics::ballista::aggregate_parquet_ballista(
                dir,
                plan,
                limits,
                target_partitions,
            )
            .map_err(run),
            #[cfg(not(feature = "ballista"))]
            Engine::Ballista => Err(CliError::Usage {
                option: "engine",
                message: "this privq was built without the feature `ballista`".into(),
            }),
        }
    }
}

/// The signal that ended a process, if one did.
fn crashed(status: &std::process::ExitStatus) -> Option<i32> {
    #[cfg(unix)]
    {
        std::os::unix::process::ExitStatusExt::signal(status)
    }
    #[cfg(not(unix))]
    {
        let _ = status;
        None
    }
}

/// Options of the hidden `privq ldp parquet-worker`, the child process that
/// `ldp aggregate --parquet` runs the query in. The Parquet reader trusts a
/// file's metadata and page headers: crafted bytes can make it request an
/// allocation of terabytes or recurse without bound, which aborts the process
/// rather than returning an error. The worker caps its own address space
/// (`--address-space-mib`, so a huge allocation fails at once instead of
/// exhausting the machine), reads the campaign as JSON on standard input, runs
/// the query and writes the resulting state (`aggregate --save-state` JSON) on
/// standard output; the parent checks that state like any saved state.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkerArgs {
    /// The table directory.
    #[arg(long, value_name = "DIR")]
    pub parquet: PathBuf,
    /// DataFusion target partitions.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub partitions: usize,
    /// The engine.
    #[arg(long, value_enum, default_value = "datafusion")]
    pub engine: Engine,
    /// Cap on the aggregation state in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 256 << 20)]
    pub memory_bytes: u64,
    /// Cap on the worker's virtual address space in MiB.
    #[arg(long, value_name = "MIB", default_value_t = WORKER_ADDRESS_SPACE_MIB)]
    pub address_space_mib: u64,
}

/// The worker's default address-space cap: room for the runtime's threads and
/// allocator arenas, the campaign's state in every partition and the pages in
/// flight, far below what a crafted length field asks for.
const WORKER_ADDRESS_SPACE_MIB: u64 = 16 * 1024;

/// The worker's address-space cap for a query: the default, plus the
/// campaign's state twice over in every partition and in the final merge.
fn address_space_mib(limits: &Limits, target_partitions: usize) -> u64 {
    let partitions = u64::try_from(target_partitions).unwrap_or(u64::MAX);
    let state =
        (limits.memory_bytes >> 20).saturating_mul(partitions.saturating_add(1).saturating_mul(2));
    WORKER_ADDRESS_SPACE_MIB.saturating_add(state)
}

/// Runs `privq ldp parquet-worker`.
pub fn worker(
    args: &WorkerArgs,
    stdin: &mut dyn io::BufRead,
    stdout: &mut dyn Write,
) -> Result<(), CliError> {
    let bytes = args.address_space_mib.saturating_mul(1 << 20);
    let cap = rustix::process::Rlimit {
        current: Some(bytes),
        maximum: Some(bytes),
    };
    rustix::process::setrlimit(rustix::process::Resource::As, cap)
        .map_err(|e| CliError::at("cannot cap the address space", e))?;
    let mut text = String::new();
    stdin.take(1 << 20).read_to_string(&mut text)?;
    let limits = Limits {
        memory_bytes: args.memory_bytes,
    };
    let plan = Campaign::from_json(&text)
        .and_then(|c| c.validate(&limits))
        .map_err(|e| CliError::at("the campaign given to the worker", e))?;
    let intake =
        args.engine
            .aggregate_in_process(&args.parquet, &plan, &limits, args.partitions)?;
    serde_json::to_writer(&mut *stdout, &intake.to_state()).map_err(io::Error::from)?;
    Ok(())
}

fn table_err(path: &Path) -> impl Fn(table::TableError) -> CliError + '_ {
    move |e| CliError::at(path.display(), e)
}

/// Runs `privq ldp export`.
pub fn export(
    args: &ExportArgs,
    stdin: &mut dyn Read,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    if args.input.is_empty() && args.db.is_none() {
        return Err(CliError::Usage {
            option: "input",
            message: "give report files (--input PATH) or a collector database (--db PATH)".into(),
        });
    }
    let mut out = table::ReportTableWriter::create(&args.out, args.rows_per_file)
        .map_err(table_err(&args.out))?;
    if let Some(db) = &args.db {
        if !db.is_file() {
            let missing = io::Error::new(io::ErrorKind::NotFound, "no such database file");
            return Err(LdpError::Read(db.display().to_string(), missing).into());
        }
        // Read only, never migrated: any other file is refused untouched.
        let store = privq_collector::store::Store::open_existing(db)
            .map_err(|e| CliError::at(db.display(), e))?;
        // The reports the collector counts, as `ldp aggregate --db` reads them.
        let mut pushed = Ok(());
        let skipped = store
            .for_each_admitted_report(|r| {
                if pushed.is_ok() {
                    pushed = out.push(&r.report);
                }
            })
            .map_err(|e| CliError::at(db.display(), e))?;
        pushed.map_err(table_err(&args.out))?;
        if skipped > 0 {
            writeln!(
                stderr,
                "privq:   {}: {skipped} repeated report(s) of a device and kind not exported (a schema-1 database)",
                db.display()
            )?;
        }
    }
    // The campaign's frame pattern, for the resynchronising reader.
    let sync = match &args.campaign {
        Some(path) => {
            let plan = campaign_plan(&CampaignFlags::file(path))?;
            let sync = FrameSync::new(plan.report_len(), plan.header()).ok_or_else(|| {
                CliError::Run(format!("{}: its reports do not fit a frame", path.display()).into())
            })?;
            Some(sync)
        }
        None => None,
    };
    let mut lost = 0u64;
    for input in &args.input {
        let name = input.display().to_string();
        let bytes = if input.as_os_str() == "-" {
            frames::read_file(stdin)
        } else {
            std::fs::File::open(input)
                .map_err(frames::ReportFileError::Io)
                .and_then(|mut f| frames::read_file(&mut f))
        }
        .map_err(|e| CliError::at(&name, e))?;
        let before = out.undecodable();
        let mut push = |r: &[u8]| out.push(r).map_err(table_err(&args.out));
        let mut report = |offset: usize, what: String| {
            lost += 1;
            writeln!(
                stderr,
                "privq:   {name}: byte {offset}: {what}, not exported"
            )
        };
        if bytes.is_empty() {
            report(0, "an empty input".into())?;
        }
        match sync {
            Some(sync) => {
                let mut scanner = Scanner::new(sync);
                let (mut offset, mut skipped) = (0, None::<(usize, usize)>);
                while let Some((event, used)) = scanner.step(&bytes[offset..], true) {
                    match event {
                        Event::FileHeader => {}
                        Event::Frame(r) => push(r)?,
                        Event::Skipped => skipped.get_or_insert((offset, 0)).1 += used,
                        Event::BadFrame(reason) => {
                            report(offset, format!("{reason} ({used} bytes)"))?
                        }
                        Event::MissingFileHeader => {
                            report(offset, "no report file header here".into())?
                        }
                    }
                    if !matches!(event, Event::Skipped)
                        && let Some((at, n)) = skipped.take()
                    {
                        report(at, format!("{n} bytes skipped to the next frame"))?;
                    }
                    offset += used;
                }
                if let Some((at, n)) = skipped {
                    report(at, format!("{n} bytes skipped to the end"))?;
                }
            }
            None => {
                let frames = frames::frames(&bytes).map_err(|e| CliError::at(&name, e))?;
                for f in frames {
                    match f {
                        Ok(r) => push(r)?,
                        Err(tail) => report(
                            bytes.len() - tail.len(),
                            format!("a truncated final frame ({} bytes)", tail.len()),
                        )?,
                    }
                }
                // Without the campaign a damaged length prefix cannot be told from
                // a foreign report: an undecodable row may hold reports.
                let undecodable = out.undecodable() - before;
                if undecodable > 0 {
                    lost += 1;
                    writeln!(
                        stderr,
                        "privq:   {name}: {undecodable} undecodable frame(s), exported as such; a \
                         damaged length prefix would look the same (export with --campaign to \
                         resynchronise)"
                    )?;
                }
            }
        }
    }
    let undecodable = out.undecodable();
    let rows = out.commit().map_err(table_err(&args.out))?;
    let files = query::parquet_files(&args.out).map_err(|e| CliError::Run(e.to_string().into()))?;
    writeln!(
        stderr,
        "privq: exported {rows} reports ({undecodable} undecodable, kept with null kind columns) \
         to {} in {files} Parquet file(s)",
        args.out.display()
    )?;
    if lost > 0 {
        writeln!(
            stderr,
            "privq: warning: {lost} problem(s) in the report files: see above (exit code 3)"
        )?;
        return Err(CliError::Outcome(Outcome::Rejected));
    }
    Ok(())
}

/// Options of `privq ldp scale`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:
  privq ldp scale --reports 100000000 --dir /tmp/privq-scale
  privq ldp scale --reports 100000000 --engine datafusion,ballista --dir /tmp/privq-scale

Simulates a fleet (device i privatizes its item with ChaCha12 seeded by --seed and i),
writes its reports as Parquet partitions into --dir (created, removed at the end unless
--keep), aggregates them in process (the plain Parquet reader and privq's Intake on one
thread: the baseline) and with each --engine at each --partitions value (one warm-up
run, then the fastest of --repeat runs), checks that every result equals the in-process
one, and prints reports/s.")]
pub struct ScaleArgs {
    /// Number of reports (devices).
    #[arg(long, default_value_t = 10_000_000)]
    pub reports: u64,
    /// Randomizer: rr, grr, sue, oue, olh or hr.
    #[arg(long, default_value = "oue")]
    pub mechanism: String,
    /// ε per report.
    #[arg(long, default_value = "1")]
    pub epsilon: String,
    /// Number of items d.
    #[arg(long, default_value_t = 64)]
    pub domain: u32,
    /// Reports per Parquet file.
    #[arg(long, value_name = "N", default_value_t = 4_000_000)]
    pub rows_per_file: u64,
    /// Target partitions (and threads) to measure, for each engine.
    #[arg(long, value_name = "N", value_delimiter = ',', default_value = "1,2")]
    pub partitions: Vec<usize>,
    /// Engines to measure at each --partitions value.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "datafusion")]
    pub engine: Vec<Engine>,
    /// Fleet seed (simulation only).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Scratch directory for the table (must not exist).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// Timed runs per partition count (after one untimed warm-up run); the
    /// fastest is reported.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Keep the table instead of removing it.
    #[arg(long)]
    pub keep: bool,
}

fn rate(n: u64, t: Duration) -> f64 {
    n as f64 / t.as_secs_f64().max(1e-9)
}

/// Whether two intakes hold the same groups and counts.
fn same(a: &Intake, b: &Intake) -> bool {
    let (sa, sb) = (a.to_state(), b.to_state());
    sa.groups == sb.groups
        && sa.stats.accepted == sb.stats.accepted
        && sa.stats.rejected == sb.stats.rejected
        && sa.stats.frames == sb.stats.frames
}

/// Runs `privq ldp scale`.
pub fn scale(args: &ScaleArgs, stdout: &mut dyn Write) -> Result<(), CliError> {
    let spec = simulation_spec_of(&args.mechanism, &args.epsilon, args.domain)?;
    let n = usize::try_from(args.reports).map_err(|_| CliError::Usage {
        option: "reports",
        message: "too many reports for this machine".into(),
    })?;
    let per = usize::try_from(args.rows_per_file.max(1)).unwrap_or(usize::MAX);
    let plan = Campaign::for_spec(&spec)
        .validate(&Limits::default())
        .map_err(LdpError::Flag)?;
    let fleet = Fleet::from_weights(&default_distribution(spec.domain()), n).map_err(|source| {
        CliError::Parameter {
            option: "reports",
            source,
        }
    })?;
    std::fs::create_dir(&args.dir).map_err(|e| CliError::file(&args.dir, e))?;
    let result = measure(args, &spec, &plan, &fleet, per, stdout);
    if !args.keep {
        std::fs::remove_dir_all(&args.dir).map_err(|e| CliError::file(&args.dir, e))?;
    }
    result
}

fn measure(
    args: &ScaleArgs,
    spec: &privq_host::ldp::fleet::MechanismSpec,
    plan: &privq_host::ldp::campaign::CampaignPlan,
    fleet: &Fleet,
    per: usize,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let len = spec.report_len();
    let items = fleet.items();
    let t0 = Instant::now();
    // One partition per task: privatize and write.
    let parts: Vec<Result<PathBuf, CliError>> = items
        .par_chunks(per)
        .enumerate()
        .map(|(p, chunk)| {
            let mut bytes = vec![0u8; chunk.len() * len];
            for (k, (buf, &item)) in bytes.chunks_exact_mut(len).zip(chunk).enumerate() {
                let mut rng = device_rng(args.seed, (p * per + k) as u64);
                spec.privatize_into(item, QueryId(0), &mut rng, buf)
                    .map_err(|source| CliError::Parameter {
                        option: "epsilon",
                        source,
                    })?;
            }
            let path = args.dir.join(format!("part-{p:05}.parquet"));
            table::write_file(&path, bytes.chunks_exact(len))
                .map_err(|e| CliError::at(path.display(), e))?;
            Ok(path)
        })
        .collect();
    let generated = t0.elapsed();
    // The baseline: the same files read by the plain Parquet reader and ingested by
    // one intake, on this thread alone (after the generation, so nothing else of
    // this program runs meanwhile).
    let mut baseline = Intake::new(plan.clone());
    let t = Instant::now();
    for part in parts {
        let path = part?;
        table::for_each_batch(&path, |reports| baseline.ingest_reports(reports))
            .map_err(|e| CliError::at(path.display(), e))?;
    }
    let cpu = t.elapsed();
    let n = fleet.len() as u64;
    let files = query::parquet_files(&args.dir).map_err(|e| CliError::Run(e.to_string().into()))?;
    let disk: u64 = std::fs::read_dir(&args.dir)
        .and_then(|d| {
            d.map(|e| e.and_then(|e| e.metadata()).map(|m| m.len()))
                .sum::<io::Result<u64>>()
        })
        .map_err(|e| CliError::file(&args.dir, e))?;
    writeln!(
        out,
        "scale: {n} {} reports ({len} bytes each) in {files} Parquet files, {:.1} MB; generated in {:.1} s",
        args.mechanism,
        disk as f64 / 1e6,
        generated.as_secs_f64()
    )?;
    writeln!(
        out,
        "scale: in process (Parquet reader + Intake, one thread): {:.2} s, {:.3e} reports/s",
        cpu.as_secs_f64(),
        rate(n, cpu)
    )?;
    for &engine in &args.engine {
        // Every run is checked; the first (page cache, allocator, thread start-up,
        // Ballista's cluster start) is not timed.
        let run = |tp: usize| -> Result<Duration, CliError> {
            let t = Instant::now();
            let intake = engine.aggregate_in_process(&args.dir, plan, &Limits::default(), tp)?;
            let took = t.elapsed();
            if !same(&intake, &baseline) {
                let e = format!(
                    "the {} aggregate differs from the in-process one",
                    engine.name()
                );
                return Err(CliError::Run(e.into()));
            }
            Ok(took)
        };
        run(args.partitions.first().copied().unwrap_or(1))?;
        let mut first: Option<f64> = None;
        for &tp in &args.partitions {
            let mut best = Duration::MAX;
            for _ in 0..args.repeat {
                best = best.min(run(tp)?);
            }
            let r = rate(n, best);
            let scaling = first.map_or(String::new(), |f| format!(", {:.2}× the first", r / f));
            first.get_or_insert(r);
            writeln!(
                out,
                "scale: {} target_partitions={tp}: {:.2} s (fastest of {}), {r:.3e} reports/s ({:.3e} per partition){scaling}; equal to in-process: yes",
                engine.name(),
                best.as_secs_f64(),
                args.repeat,
                r / tp.max(1) as f64,
            )?;
        }
    }
    Ok(())
}

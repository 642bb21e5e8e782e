//! `privq ldp`: simulate a fleet of devices that privatize their items locally,
//! aggregate report files into frequency estimates with confidence intervals
//! (checked against a public campaign configuration), and merge saved states.
//!
//! The work is done by the library ([`privq_host::ldp::campaign`],
//! [`privq_host::ldp::intake`], [`privq_host::ldp::output`]); this module parses options
//! and wires streams.

use std::fs::File;
use std::io::{self, BufRead, Read, Write};
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use privq_core::Epsilon;

use super::CliError;
use privq_host::ldp::campaign::{Campaign, CampaignError, CampaignPlan, Limits, QuerySpec};
use privq_host::ldp::fleet::{Fleet, FleetSeed, MechanismSpec, default_distribution};
use privq_host::ldp::frames;
use privq_host::ldp::intake::{Intake, Outcome, StateError};
use privq_host::ldp::output::{self, AtomicFile, Destination, IntakeReport};
use privq_host::ldp::postprocess::PostProcess;

/// Options of `privq ldp`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
    privq ldp simulate --mechanism oue --epsilon 1 --domain 64 --devices 100000 --seed 7 \\\n      \
    --output reports.pqr --campaign campaign.json\n  \
    privq ldp aggregate --campaign campaign.json --input reports.pqr\n\n\
    `privq ldp aggregate --help` lists the exit codes.")]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub action: Action,
}

/// `privq ldp` actions.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Action {
    /// Simulate devices that each privatize one item and write their reports to a file.
    Simulate(SimulateArgs),
    /// Decode report files, check them against a campaign and aggregate them.
    Aggregate(AggregateArgs),
    /// Merge saved aggregation states (`aggregate --save-state`) and print their estimates.
    Merge(MergeArgs),
    /// Write report files or a collector's reports as a Parquet table (feature `analytics`).
    #[cfg(feature = "analytics")]
    Export(super::ldp_parquet::ExportArgs),
    /// Measure DataFusion's aggregation of a simulated fleet's Parquet table (feature `analytics`).
    #[cfg(feature = "analytics")]
    Scale(super::ldp_parquet::ScaleArgs),
    /// The child process of `aggregate --parquet` (internal).
    #[cfg(feature = "analytics")]
    #[command(hide = true)]
    ParquetWorker(super::ldp_parquet::WorkerArgs),
}

/// Options of `privq ldp simulate`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Example:
  privq ldp simulate --mechanism oue --epsilon 1 --domain 64 --devices 100000 --seed 7 \\
      --output reports.pqr --campaign campaign.json

The report file is written atomically (a temporary file renamed into place; nothing is left
behind on failure). `--output -` writes the reports to standard output.")]
pub struct SimulateArgs {
    /// Randomizer: rr, grr, sue, oue, olh or hr.
    #[arg(long, default_value = "oue")]
    pub mechanism: String,
    /// ε per report: a decimal (`0.5`) or a fraction (`1/2`), read exactly.
    #[arg(long, value_name = "EPS", allow_hyphen_values = true)]
    pub epsilon: String,
    /// Number of items d (rr is binary: d = 2, its default).
    #[arg(long, default_value_t = 64, default_value_if("mechanism", "rr", "2"))]
    pub domain: u32,
    /// Number of devices.
    #[arg(long, default_value_t = 100_000)]
    pub devices: usize,
    /// Item weights, one number per line (default: the embedded Zipf(1.1) distribution over d items).
    #[arg(long, value_name = "PATH")]
    pub weights: Option<PathBuf>,
    /// Fleet seed (device i uses ChaCha12 seeded with seed and i). Reproducible: simulations only.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// The report file to write (`-` for standard output).
    #[arg(long, value_name = "PATH")]
    pub output: PathBuf,
    /// Also write the matching campaign configuration (JSON) here, for `ldp aggregate --campaign`
    /// (atomically, together with the reports).
    #[arg(long, value_name = "PATH")]
    pub campaign: Option<PathBuf>,
    /// Cap in MiB on the simulation's memory (every report is held until the file is
    /// written): devices × (report bytes + 4) plus 16 bytes per item must fit.
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    pub memory_mib: u64,
}

/// Output formats of `privq ldp aggregate` and `merge`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A human-readable table.
    Table,
    /// JSON: campaign, outcome, counts, problems and every group's estimates.
    Json,
    /// CSV: one row per (group, item).
    Csv,
}

/// The campaign given by flags instead of a file.
#[derive(Debug, Clone, clap::Args)]
pub struct CampaignFlags {
    /// The campaign configuration (JSON): mechanism, epsilon, domain, queries.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["mechanism", "epsilon", "domain", "queries", "bound", "grid_exponent"])]
    pub campaign: Option<PathBuf>,
    /// Campaign by flags: the mechanism (rr, grr, sue, oue, olh, hr, 1bitmean, sq-bit, sq-laplace).
    #[arg(long)]
    pub mechanism: Option<String>,
    /// Campaign by flags: ε per report, exactly (`1`, `0.5`, `1/2`).
    #[arg(long, value_name = "EPS", allow_hyphen_values = true)]
    pub epsilon: Option<String>,
    /// Campaign by flags: the domain size d.
    #[arg(long)]
    pub domain: Option<u32>,
    /// Campaign by flags: query ids collected, e.g. `0` or `0,5-9` (default 0).
    #[arg(long, value_name = "IDS")]
    pub queries: Option<String>,
    /// Campaign by flags: 1BitMean's bound m.
    #[arg(long)]
    pub bound: Option<u32>,
    /// Campaign by flags: SQ Laplace's grid exponent.
    #[arg(long, allow_hyphen_values = true)]
    pub grid_exponent: Option<i32>,
    /// Cap on the aggregation state in MiB; the campaign (domain × queries) must fit.
    #[arg(long, value_name = "MIB", default_value_t = 256)]
    pub memory_mib: u64,
}

impl CampaignFlags {
    /// The campaign file `path`, with the default memory cap.
    #[cfg(feature = "analytics")]
    pub(super) fn file(path: &Path) -> CampaignFlags {
        CampaignFlags {
            campaign: Some(path.to_path_buf()),
            mechanism: None,
            epsilon: None,
            domain: None,
            queries: None,
            bound: None,
            grid_exponent: None,
            memory_mib: 256,
        }
    }
}

/// Options shared by `aggregate` and `merge`: what to print and save.
#[derive(Debug, Clone, clap::Args)]
pub struct ResultArgs {
    /// Two-sided confidence of the intervals.
    #[arg(long, default_value_t = 0.95)]
    pub confidence: f64,
    /// Post-processing of frequency estimates: none, clip, nonneg or simplex.
    #[arg(long, default_value = "none")]
    pub post: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the estimates here (atomically) instead of standard output.
    #[arg(long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Save the aggregation state (JSON, versioned) for `privq ldp merge`.
    #[arg(long, value_name = "PATH")]
    pub save_state: Option<PathBuf>,
    /// Fail (no estimates, no state) if any frame is rejected or any byte skipped.
    #[arg(long)]
    pub strict: bool,
}

const EXIT_CODES: &str = "Exit codes:
  0  every frame was accepted; estimates printed
  2  usage error, invalid campaign, unreadable input or failed output (nothing printed)
  3  some frames were rejected or bytes skipped; estimates from the accepted reports
     printed, counts, reasons and the first problems (with byte offsets) on stderr
     (with --strict: nothing printed)
  4  no usable report was read (empty, truncated or foreign inputs)
  5  estimates printed, but some are undefined (printed as `undefined`)";

/// Options of `privq ldp aggregate`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = format!("The reports are checked against a public campaign (--campaign FILE, or --mechanism,
--epsilon, --domain and --queries); a report that disagrees is rejected with its reason.
A campaign file (written by `privq ldp simulate --campaign`):
  {{\"mechanism\": \"oue\", \"epsilon\": \"1\", \"domain\": 64, \"queries\": [0, \"5-9\"]}}
Several inputs are read in order; a file made of concatenated report files is read whole;
damaged framing is reported with byte offsets and skipped up to the next frame.

Examples:
  privq ldp aggregate --campaign campaign.json --input day1.pqr --input day2.pqr --post simplex
  cat *.pqr | privq ldp aggregate --mechanism oue --epsilon 1 --domain 64 --input - --strict
  privq ldp aggregate --campaign campaign.json --input a.pqr --save-state a.json

{EXIT_CODES}"))]
pub struct AggregateArgs {
    /// The campaign the reports must belong to.
    #[command(flatten)]
    pub campaign: CampaignFlags,
    /// Report files (`-` for standard input); repeat or list several.
    #[arg(long, value_name = "PATH", num_args = 1..)]
    pub input: Vec<PathBuf>,
    /// Also aggregate the reports a collector accepted (`privq serve --db`), read
    /// from its SQLite database (feature `serve`). Reports carry no identity, so
    /// nothing is deduplicated across sources: a report both in the database and
    /// in an `--input` file (an export of the same collector, say) counts twice.
    #[cfg(feature = "serve")]
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Also aggregate the Parquet report table in this directory (`privq ldp export`)
    /// with DataFusion (feature `analytics`), in a child process with a capped
    /// address space: a damaged or crafted table that crashes the Parquet reader
    /// is an error naming the table.
    #[cfg(feature = "analytics")]
    #[arg(long, value_name = "DIR")]
    pub parquet: Option<PathBuf>,
    /// DataFusion's target partitions (and threads) for --parquet (default: the cores).
    #[cfg(feature = "analytics")]
    #[arg(long, value_name = "N", requires = "parquet")]
    pub partitions: Option<usize>,
    /// The engine for --parquet: DataFusion, or Apache Ballista in
    /// standalone mode (feature `ballista`; its scheduler and executor listen
    /// on loopback, unauthenticated, while it runs: for machines whose users
    /// you trust).
    #[cfg(feature = "analytics")]
    #[arg(long, value_enum, default_value = "datafusion", requires = "parquet")]
    pub engine: super::ldp_parquet::Engine,
    /// What to print and save.
    #[command(flatten)]
    pub result: ResultArgs,
}

/// Options of `privq ldp merge`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = format!("Example:
  privq ldp merge a.json b.json --save-state all.json --format csv

The states must be of the same campaign. The exit code reflects every merged run:
{EXIT_CODES}"))]
pub struct MergeArgs {
    /// Saved states (`privq ldp aggregate --save-state`).
    #[arg(required = true, value_name = "STATE")]
    pub states: Vec<PathBuf>,
    /// Cap on the aggregation state in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 256)]
    pub memory_mib: u64,
    /// What to print and save.
    #[command(flatten)]
    pub result: ResultArgs,
}

/// Errors of `privq ldp` with the option or file they concern.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LdpError {
    /// A campaign given by flags (or a simulation's parameters) is invalid.
    #[error("--{flag}: {0}", flag = .0.field().replace('_', "-"))]
    Flag(#[source] CampaignError),
    /// A campaign file is invalid.
    #[error("{path}: field {field:?}: {1}", path = .0.display(), field = .1.field())]
    CampaignFile(PathBuf, #[source] CampaignError),
    /// Neither `--campaign` nor `--mechanism`/`--epsilon` was given.
    #[error(
        "no campaign: give --campaign FILE (see `privq ldp simulate --campaign`) or --mechanism, --epsilon and --domain"
    )]
    NoCampaign,
    /// A saved state could not be used.
    #[error("{path}: {1}", path = .0.display())]
    State(PathBuf, #[source] StateError),
    /// An input, state or output file could not be read or created.
    #[error("{0}: {1}")]
    Read(String, #[source] io::Error),
    /// `--weights` does not have one value per item.
    #[error("--weights has {found} values, the domain has {domain} items")]
    WeightCount {
        /// Values in the file.
        found: usize,
        /// Items in the domain.
        domain: u32,
    },
    /// `--confidence` outside (0, 1).
    #[error("--confidence must be in (0, 1), got {0}")]
    Confidence(f64),
    /// `--post` is not a post-processing name.
    #[error("--post: {0}")]
    Post(String),
    /// `--mechanism` is not a simulated randomizer.
    #[error(
        "--mechanism: unknown randomizer {0:?} (one of {names})",
        names = MechanismSpec::NAMES.join(", ")
    )]
    Mechanism(String),
}

/// Runs `privq ldp`.
pub fn run(
    args: &Args,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    match &args.action {
        Action::Simulate(a) => simulate(a, stdout, stderr),
        Action::Aggregate(a) => aggregate(a, stdin, stdout, stderr),
        Action::Merge(a) => merge(a, stdout, stderr),
        #[cfg(feature = "analytics")]
        Action::Export(a) => super::ldp_parquet::export(a, stdin, stderr),
        #[cfg(feature = "analytics")]
        Action::Scale(a) => super::ldp_parquet::scale(a, stdout),
        #[cfg(feature = "analytics")]
        Action::ParquetWorker(a) => super::ldp_parquet::worker(a, stdin, stdout),
    }
}

fn simulation_spec(args: &SimulateArgs) -> Result<(MechanismSpec, Epsilon), CliError> {
    if args.mechanism == "rr" && args.domain != 2 {
        return Err(CliError::Usage {
            option: "domain",
            message: format!(
                "randomized response (--mechanism rr) is binary: it needs --domain 2 (or no \
                 --domain), not {}; for {} items use grr, sue, oue, olh or hr",
                args.domain, args.domain
            ),
        });
    }
    let spec = simulation_spec_of(&args.mechanism, &args.epsilon, args.domain)?;
    let epsilon: Epsilon = super::parse_epsilon(&args.epsilon)?;
    Ok((spec, epsilon))
}

/// A simulated randomizer from `--mechanism`, `--epsilon` and `--domain`, checked
/// like a campaign (ε usable, reports fit a frame).
pub(crate) fn simulation_spec_of(
    mechanism: &str,
    epsilon: &str,
    domain: u32,
) -> Result<MechanismSpec, CliError> {
    let epsilon: Epsilon = super::parse_epsilon(epsilon)?;
    let spec = MechanismSpec::parse(mechanism, epsilon, domain).map_err(|e| match e {
        privq_core::Error::Parse => LdpError::Mechanism(mechanism.to_string()).into(),
        source => CliError::Parameter {
            option: "domain",
            source,
        },
    })?;
    // The aggregator's checks (ε usable, reports fit a frame), without its memory cap.
    let unlimited = Limits {
        memory_bytes: u64::MAX,
    };
    Campaign::for_spec(&spec)
        .validate(&unlimited)
        .map_err(LdpError::Flag)?;
    Ok(spec)
}

fn read_weights(path: Option<&Path>, domain: u32) -> Result<Vec<f64>, CliError> {
    let Some(path) = path else {
        return Ok(default_distribution(domain));
    };
    let mut text = String::new();
    File::open(path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(|e| LdpError::Read(path.display().to_string(), e))?;
    let mut w = Vec::new();
    let refused = |place: String| CliError::Usage {
        option: "weights",
        message: format!("{place}: weights must be finite, non-negative and not all zero"),
    };
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let place = || format!("{} line {}", path.display(), i + 1);
        let x = line
            .trim()
            .parse::<f64>()
            .map_err(|_| CliError::NotANumber {
                place: place(),
                text: line.to_string(),
            })?;
        if !(x.is_finite() && x >= 0.0) {
            return Err(refused(format!("{} holds {:?}", place(), line.trim())));
        }
        w.push(x);
    }
    if !w.is_empty() && w.iter().all(|&x| x == 0.0) {
        return Err(refused(format!("{} holds only zeros", path.display())));
    }
    if w.len() != domain as usize {
        return Err(LdpError::WeightCount {
            found: w.len(),
            domain,
        }
        .into());
    }
    Ok(w)
}

fn simulate(
    args: &SimulateArgs,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    let param = |option| move |source| CliError::Parameter { option, source };
    let (spec, epsilon) = simulation_spec(args)?;
    let needed =
        (args.devices as u128) * (spec.report_len() as u128 + 4) + u128::from(spec.domain()) * 16;
    let cap = u128::from(args.memory_mib) << 20;
    if needed > cap {
        return Err(CliError::Usage {
            option: "devices",
            message: format!(
                "{} devices with {}-byte reports over {} items need about {} MiB, over --memory-mib {}; \
                 simulate fewer devices (several files aggregate together) or raise the cap",
                args.devices,
                spec.report_len(),
                spec.domain(),
                needed.div_ceil(1 << 20),
                args.memory_mib
            ),
        });
    }
    let weights = read_weights(args.weights.as_deref(), spec.domain())?;
    let fleet = Fleet::from_weights(&weights, args.devices).map_err(param("weights"))?;
    let seed = match args.seed {
        Some(s) => {
            writeln!(
                stderr,
                "privq: warning: --seed {s} makes the reports reproducible; use it only for simulations"
            )?;
            FleetSeed::from(s)
        }
        None => FleetSeed::random(&mut privq_host::secure_rng().map_err(CliError::Seed)?),
    };
    let bar = ProgressBar::with_draw_target(Some(fleet.len() as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} privatizing {pos}/{len} devices [{elapsed_precise}, eta {eta}]",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let batch = fleet
        .privatize_from_with_progress(&spec, &seed, &|k| bar.inc(k))
        .map_err(param("epsilon"))?;
    bar.finish_and_clear();
    // Both outputs or neither: the campaign is written to its temporary file
    // first and renamed into place only once the reports are.
    let campaign = match &args.campaign {
        Some(path) => Some(campaign_file(path, &Campaign::for_spec(&spec))?),
        None => None,
    };
    let dest = Destination::from_path(&args.output);
    dest.write_with(stdout, |out| -> Result<(), CliError> {
        frames::write_file_header(out)?;
        for r in batch.iter() {
            frames::write_frame(out, r)?;
        }
        Ok(())
    })
    .map_err(|e| match (e, &dest) {
        (CliError::Io(e), Destination::File(p)) => CliError::file(p, e),
        (e, _) => e,
    })?;
    if let (Some(f), Some(path)) = (campaign, &args.campaign) {
        f.commit().map_err(|e| CliError::file(path, e))?;
    }
    writeln!(
        stderr,
        "privq: wrote {} {} reports ({} bytes each, eps = {epsilon} per device) to {}",
        batch.count(),
        args.mechanism,
        batch.report_len(),
        dest.display()
    )?;
    Ok(())
}

/// The campaign JSON in a temporary file next to `path`, not yet committed.
fn campaign_file(path: &Path, campaign: &Campaign) -> Result<AtomicFile, CliError> {
    let mut f =
        AtomicFile::create(path).map_err(|e| LdpError::Read(path.display().to_string(), e))?;
    serde_json::to_writer_pretty(&mut f, campaign).map_err(io::Error::from)?;
    writeln!(f)?;
    Ok(f)
}

/// The validated campaign of the file `path`.
pub(super) fn campaign_from_file(path: &Path, limits: &Limits) -> Result<CampaignPlan, CliError> {
    let text =
        std::fs::read_to_string(path).map_err(|e| LdpError::Read(path.display().to_string(), e))?;
    let c = Campaign::from_json(&text).map_err(|e| LdpError::CampaignFile(path.into(), e))?;
    Ok(c.validate(limits)
        .map_err(|e| LdpError::CampaignFile(path.into(), e))?)
}

/// The validated campaign of `flags`: from the file, or from the flags.
pub(super) fn campaign_plan(flags: &CampaignFlags) -> Result<CampaignPlan, CliError> {
    let limits = Limits::from_mib(flags.memory_mib);
    if let Some(path) = &flags.campaign {
        return campaign_from_file(path, &limits);
    }
    let (Some(mechanism), Some(epsilon)) = (&flags.mechanism, &flags.epsilon) else {
        return Err(LdpError::NoCampaign.into());
    };
    let queries = match &flags.queries {
        Some(text) => text
            .split(',')
            .map(|q| QuerySpec::Range(q.trim().to_string()))
            .collect(),
        None => vec![QuerySpec::One(0)],
    };
    let c = Campaign {
        format: privq_host::ldp::campaign::CAMPAIGN_FORMAT.to_string(),
        version: privq_host::ldp::campaign::CAMPAIGN_VERSION,
        mechanism: mechanism.clone(),
        epsilon: epsilon.clone(),
        domain: flags.domain,
        bound: flags.bound,
        grid_exponent: flags.grid_exponent,
        g: None,
        queries,
    };
    Ok(c.validate(&limits).map_err(LdpError::Flag)?)
}

fn check_result_args(args: &ResultArgs) -> Result<PostProcess, CliError> {
    if !(args.confidence > 0.0 && args.confidence < 1.0) {
        return Err(LdpError::Confidence(args.confidence).into());
    }
    Ok(args.post.parse().map_err(LdpError::Post)?)
}

/// Before anything is read: `--output` and `--save-state` name neither an input
/// (reports, campaign, database, states) nor each other, and no input is given
/// twice (its reports would count twice and the intervals shrink).
fn check_paths(inputs: &[&Path], args: &ResultArgs) -> Result<(), CliError> {
    for (i, input) in inputs.iter().enumerate() {
        super::refuse_overwriting_input(input, args.output.as_deref(), "output")?;
        super::refuse_overwriting_input(input, args.save_state.as_deref(), "save-state")?;
        for earlier in &inputs[..i] {
            if super::refuse_overwriting_input(earlier, Some(input), "input").is_err() {
                return Err(CliError::Usage {
                    option: "input",
                    message: format!(
                        "{} is given twice (as {} too); its reports would count twice",
                        input.display(),
                        earlier.display()
                    ),
                });
            }
        }
    }
    if let (Some(out), Some(state)) = (&args.output, &args.save_state)
        && (out == state
            || super::refuse_overwriting_input(out, Some(state), "save-state").is_err())
    {
        return Err(CliError::Usage {
            option: "save-state",
            message: format!(
                "{} is also --output; give the state and the estimates different files",
                state.display()
            ),
        });
    }
    Ok(())
}

fn aggregate(
    args: &AggregateArgs,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    let post = check_result_args(&args.result)?;
    let mut inputs: Vec<&Path> = args.input.iter().map(PathBuf::as_path).collect();
    inputs.extend(args.campaign.campaign.as_deref());
    #[cfg(feature = "serve")]
    inputs.extend(args.db.as_deref());
    #[cfg(feature = "analytics")]
    inputs.extend(args.parquet.as_deref());
    check_paths(&inputs, &args.result)?;
    #[cfg(feature = "serve")]
    let from_db = args.db.is_some();
    #[cfg(not(feature = "serve"))]
    let from_db = false;
    #[cfg(feature = "analytics")]
    let from_db = from_db || args.parquet.is_some();
    if args.input.is_empty() && !from_db {
        return Err(CliError::Usage {
            option: "input",
            message: "give at least one report file (--input PATH, `-` for standard input)".into(),
        });
    }
    let mut intake = Intake::new(campaign_plan(&args.campaign)?);
    #[cfg(feature = "serve")]
    if let Some(db) = &args.db {
        // The stored reports the collector counts (one per device and kind), each
        // classified on its own, as the collector and the Parquet path count them:
        // never re-framed and re-scanned, where a long report of another kind could
        // carry frames of this campaign past the one-report-per-kind rule.
        if !db.is_file() {
            let missing = io::Error::new(io::ErrorKind::NotFound, "no such database file");
            return Err(LdpError::Read(db.display().to_string(), missing).into());
        }
        // Opened read-only, never migrated, its schema checked before anything is
        // read: any other file is refused untouched.
        let store = privq_collector::store::Store::open_existing(db)
            .map_err(|e| CliError::at(db.display(), e))?;
        store
            .ingest_admitted(&mut intake)
            .map_err(|e| CliError::at(db.display(), e))?;
    }
    #[cfg(feature = "analytics")]
    if let Some(dir) = &args.parquet {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let limits = Limits::from_mib(args.campaign.memory_mib);
        let table = args.engine.aggregate(
            dir,
            intake.plan(),
            &limits,
            args.partitions.unwrap_or(threads),
        )?;
        intake
            .merge(&table)
            .map_err(|e| LdpError::State(dir.clone(), e))?;
    }
    for input in &args.input {
        let name = input.display().to_string();
        let read = if input.as_os_str() == "-" {
            intake.ingest_reader(&name, stdin)
        } else {
            File::open(input).and_then(|mut f| intake.ingest_reader(&name, &mut f))
        };
        read.map_err(|e| LdpError::Read(name, e))?;
    }
    finish(&intake, &args.result, post, stdout, stderr)
}

fn merge(args: &MergeArgs, stdout: &mut dyn Write, stderr: &mut dyn Write) -> Result<(), CliError> {
    let post = check_result_args(&args.result)?;
    let states: Vec<&Path> = args.states.iter().map(PathBuf::as_path).collect();
    check_paths(&states, &args.result)?;
    let limits = Limits::from_mib(args.memory_mib);
    let mut total: Option<Intake> = None;
    for path in &args.states {
        let text = std::fs::read_to_string(path)
            .map_err(|e| LdpError::Read(path.display().to_string(), e))?;
        let state =
            Intake::from_json(&text, &limits).map_err(|e| LdpError::State(path.clone(), e))?;
        match &mut total {
            None => total = Some(state),
            Some(t) => t
                .merge(&state)
                .map_err(|e| LdpError::State(path.clone(), e))?,
        }
    }
    let Some(total) = total else {
        return Err(CliError::EmptyInput);
    };
    finish(&total, &args.result, post, stdout, stderr)
}

/// Prints (or refuses to print) the results, saves the state, summarises on
/// standard error and turns the outcome into the exit status.
fn finish(
    intake: &Intake,
    args: &ResultArgs,
    post: PostProcess,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    let groups = intake.estimates(args.confidence, post);
    let outcome = intake.outcome_with(&groups);
    let refuse = outcome == Outcome::NothingUsable || (args.strict && outcome != Outcome::Complete);
    if !refuse {
        let dest = args
            .output
            .as_deref()
            .map_or(Destination::Stdout, Destination::from_path);
        dest.write_with(stdout, |out| {
            write_results(intake, &groups, outcome, args, out)
        })?;
        if let Some(path) = &args.save_state {
            Destination::from_path(path).write_with(stdout, |out| -> Result<(), CliError> {
                serde_json::to_writer_pretty(&mut *out, &intake.to_state())
                    .map_err(io::Error::from)?;
                writeln!(out)?;
                Ok(())
            })?;
        }
    }
    output::write_summary(intake.stats(), &groups, outcome, stderr)?;
    if refuse && outcome != Outcome::NothingUsable {
        writeln!(stderr, "privq: --strict: no estimates written")?;
    }
    match outcome {
        Outcome::Complete => Ok(()),
        o => Err(CliError::Outcome(o)),
    }
}

fn write_results(
    intake: &Intake,
    groups: &[privq_host::ldp::intake::GroupEstimates],
    outcome: Outcome,
    args: &ResultArgs,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    match args.format {
        Format::Json => {
            let doc = IntakeReport {
                campaign: intake.plan().campaign(),
                outcome,
                exit_code: outcome.exit_code(),
                stats: intake.stats(),
                groups,
            };
            serde_json::to_writer_pretty(&mut *out, &doc).map_err(io::Error::from)?;
            writeln!(out)?;
        }
        Format::Csv => output::write_csv(groups, out)?,
        Format::Table => output::write_table(groups, args.confidence, out)?,
    }
    Ok(())
}

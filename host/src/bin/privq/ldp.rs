//! `privq ldp`: simulate a fleet of devices that privatize their items locally,
//! and aggregate report files into frequency estimates with confidence intervals.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufWriter, Read, Write};
use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use privq_core::Epsilon;
use rand_core::Rng;
use serde::Serialize;

use super::CliError;
use privq_host::ldp::aggregate::{
    Aggregator, FrequencyEstimates, MeanEstimate, ReportKind, ingest_grouped,
};
use privq_host::ldp::decode::RejectCounts;
use privq_host::ldp::fleet::{Fleet, MechanismSpec, default_distribution};
use privq_host::ldp::frames;
use privq_host::ldp::postprocess::PostProcess;

/// Options of `privq ldp`.
#[derive(Debug, Clone, clap::Args)]
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
    /// Decode and aggregate a report file: estimates with confidence intervals.
    Aggregate(AggregateArgs),
}

/// Options of `privq ldp simulate`.
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Example:\n  privq ldp simulate --mechanism oue --epsilon 1 --domain 64 --devices 100000 --seed 7 --output reports.pqr"
)]
pub struct SimulateArgs {
    /// Randomizer: rr, grr, sue, oue, olh or hr.
    #[arg(long, default_value = "oue")]
    pub mechanism: String,
    /// ε per report: a decimal (`0.5`) or a fraction (`1/2`), read exactly.
    #[arg(long, value_name = "EPS", allow_hyphen_values = true)]
    pub epsilon: String,
    /// Number of items d.
    #[arg(long, default_value_t = 64)]
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
    /// The report file to write.
    #[arg(long, value_name = "PATH")]
    pub output: PathBuf,
}

/// Output formats of `privq ldp aggregate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A human-readable table.
    Table,
    /// JSON: every group's estimates and the rejection counts.
    Json,
    /// CSV: one row per (group, item).
    Csv,
}

/// Options of `privq ldp aggregate`.
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Example:\n  privq ldp aggregate --input reports.pqr --confidence 0.95 --post simplex --format csv"
)]
pub struct AggregateArgs {
    /// The report file (`-` for standard input).
    #[arg(long, value_name = "PATH")]
    pub input: PathBuf,
    /// Two-sided confidence of the intervals.
    #[arg(long, default_value_t = 0.95)]
    pub confidence: f64,
    /// Post-processing of frequency estimates: none, clip, nonneg or simplex.
    #[arg(long, default_value = "none")]
    pub post: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the output here instead of standard output.
    #[arg(long, value_name = "PATH")]
    pub output: Option<PathBuf>,
}

/// Runs `privq ldp`.
pub fn run(
    args: &Args,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    match &args.action {
        Action::Simulate(a) => simulate(a, stderr),
        Action::Aggregate(a) => aggregate(a, stdin, stdout, stderr),
    }
}

fn invalid(msg: String) -> CliError {
    CliError::Io(io::Error::new(io::ErrorKind::InvalidData, msg))
}

fn simulate(args: &SimulateArgs, stderr: &mut dyn Write) -> Result<(), CliError> {
    let param = |option| move |source| CliError::Parameter { option, source };
    let epsilon: Epsilon = args.epsilon.parse().map_err(param("epsilon"))?;
    let spec =
        MechanismSpec::parse(&args.mechanism, epsilon, args.domain).map_err(|e| match e {
            privq_core::Error::Parse => invalid(format!(
                "--mechanism: unknown randomizer {:?} (one of {})",
                args.mechanism,
                MechanismSpec::NAMES.join(", ")
            )),
            source => CliError::Parameter {
                option: "domain",
                source,
            },
        })?;
    let weights = match &args.weights {
        Some(path) => {
            let mut text = String::new();
            File::open(path)?.read_to_string(&mut text)?;
            let mut w = Vec::new();
            for (i, line) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                w.push(line.trim().parse::<f64>().map_err(|_| CliError::Value {
                    line: i + 1,
                    text: line.to_string(),
                    source: privq_core::Error::Parse,
                })?);
            }
            if w.len() != spec.domain() as usize {
                return Err(invalid(format!(
                    "--weights has {} values, the domain has {} items",
                    w.len(),
                    spec.domain()
                )));
            }
            w
        }
        None => default_distribution(spec.domain()),
    };
    let fleet = Fleet::from_weights(&weights, args.devices).map_err(param("weights"))?;
    let seed = match args.seed {
        Some(s) => {
            writeln!(
                stderr,
                "privq: warning: --seed {s} makes the reports reproducible; use it only for simulations"
            )?;
            s
        }
        None => privq_host::secure_rng().map_err(CliError::Seed)?.next_u64(),
    };
    let bar = ProgressBar::with_draw_target(Some(fleet.len() as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} privatizing {pos}/{len} devices [{elapsed_precise}, eta {eta}]",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let batch = fleet
        .privatize_with_progress(&spec, seed, &|k| bar.inc(k))
        .map_err(param("epsilon"))?;
    bar.finish_and_clear();
    let mut out = BufWriter::new(File::create(&args.output)?);
    frames::write_file_header(&mut out)?;
    for r in batch.iter() {
        frames::write_frame(&mut out, r)?;
    }
    out.flush()?;
    writeln!(
        stderr,
        "privq: wrote {} {} reports ({} bytes each, eps = {epsilon} per device) to {}",
        batch.count(),
        args.mechanism,
        batch.report_len(),
        args.output.display()
    )?;
    Ok(())
}

/// The JSON document written by `privq ldp aggregate --format json`.
#[derive(Debug, Serialize)]
pub struct AggregateOutput {
    /// Frames read.
    pub frames: u64,
    /// Valid reports aggregated.
    pub accepted: u64,
    /// Rejections by class.
    pub rejected: RejectCounts,
    /// A truncated final frame was found.
    pub truncated_final_frame: bool,
    /// One entry per report kind.
    pub groups: Vec<GroupOutput>,
}

/// Estimates for one report kind.
#[derive(Debug, Serialize)]
pub struct GroupOutput {
    /// What the reports are.
    pub kind: String,
    /// The raw key.
    pub key: ReportKind,
    /// Frequency estimates (frequency mechanisms).
    pub frequencies: Option<FrequencyEstimates>,
    /// Post-processed frequencies.
    pub post_processed: Option<Vec<f64>>,
    /// Mean estimate (mean mechanisms).
    pub mean: Option<MeanEstimate>,
    /// The aggregation state (mergeable with other runs).
    pub state: Aggregator,
}

fn aggregate(
    args: &AggregateArgs,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    if !(args.confidence > 0.0 && args.confidence < 1.0) {
        return Err(invalid(format!(
            "--confidence must be in (0, 1), got {}",
            args.confidence
        )));
    }
    let post: PostProcess = args.post.parse().map_err(invalid)?;
    let bytes = if args.input.as_os_str() == "-" {
        frames::read_file(stdin)
    } else {
        frames::read_file(&mut File::open(&args.input)?)
    }
    .map_err(|e| invalid(format!("{}: {e}", args.input.display())))?;
    let mut groups: BTreeMap<ReportKind, Aggregator> = BTreeMap::new();
    let mut rejected = RejectCounts::default();
    let (mut count, mut truncated) = (0u64, false);
    let iter =
        frames::frames(&bytes).map_err(|e| invalid(format!("{}: {e}", args.input.display())))?;
    // Every frame is counted; a truncated final frame is flagged, never a report.
    let reports = iter.filter_map(|frame| {
        count += 1;
        match frame {
            Ok(report) => Some(report),
            Err(_) => {
                truncated = true;
                None
            }
        }
    });
    ingest_grouped(&mut groups, reports, &mut rejected);
    let accepted = groups.values().map(Aggregator::n).sum();
    let mut out_groups = Vec::new();
    for (kind, agg) in groups {
        let frequencies = agg.frequencies(args.confidence).ok();
        let post_processed = frequencies.as_ref().map(|f| post.apply(&f.values()));
        out_groups.push(GroupOutput {
            kind: kind.to_string(),
            key: kind,
            frequencies,
            post_processed,
            mean: agg.mean(args.confidence).ok(),
            state: agg,
        });
    }
    let doc = AggregateOutput {
        frames: count,
        accepted,
        rejected,
        truncated_final_frame: truncated,
        groups: out_groups,
    };
    let mut file_out;
    let out: &mut dyn Write = match &args.output {
        Some(p) => {
            file_out = BufWriter::new(File::create(p)?);
            &mut file_out
        }
        None => stdout,
    };
    match args.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, &doc).map_err(|e| CliError::Io(e.into()))?;
            writeln!(out)?;
        }
        Format::Csv => write_csv(&doc, out)?,
        Format::Table => write_table(&doc, args.confidence, out)?,
    }
    out.flush()?;
    writeln!(
        stderr,
        "privq: {} frames: {} reports aggregated, {} rejected{}",
        doc.frames,
        doc.accepted,
        doc.rejected.total(),
        if truncated {
            ", the file ends inside a frame"
        } else {
            ""
        }
    )?;
    for class in privq_host::ldp::decode::RejectReason::ALL {
        let c = doc.rejected.get(class);
        if c > 0 {
            writeln!(stderr, "privq:   {c} {class}")?;
        }
    }
    Ok(())
}

fn write_csv(doc: &AggregateOutput, out: &mut dyn Write) -> Result<(), CliError> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record([
        "group",
        "item",
        "estimate",
        "std_error",
        "ci_low",
        "ci_high",
        "post_processed",
    ])?;
    for g in &doc.groups {
        if let (Some(f), Some(pp)) = (&g.frequencies, &g.post_processed) {
            for (i, (e, p)) in f.items.iter().zip(pp).enumerate() {
                w.write_record([
                    g.kind.clone(),
                    i.to_string(),
                    e.value.to_string(),
                    e.std_error().to_string(),
                    e.ci_low.to_string(),
                    e.ci_high.to_string(),
                    p.to_string(),
                ])?;
            }
        }
        if let Some(m) = &g.mean {
            let e = m.estimate;
            w.write_record([
                g.kind.clone(),
                "mean".into(),
                e.value.to_string(),
                e.std_error().to_string(),
                e.ci_low.to_string(),
                e.ci_high.to_string(),
                String::new(),
            ])?;
        }
    }
    w.flush()?;
    Ok(())
}

fn write_table(
    doc: &AggregateOutput,
    confidence: f64,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    for g in &doc.groups {
        writeln!(out, "# {} — {} reports", g.kind, g.state.n())?;
        if let (Some(f), Some(pp)) = (&g.frequencies, &g.post_processed) {
            writeln!(
                out,
                "{:>6} {:>10} {:>10} {:>22} {:>10}",
                "item",
                "estimate",
                "std.err",
                format!("{:.0}% interval", confidence * 100.0),
                "post"
            )?;
            for (i, (e, p)) in f.items.iter().zip(pp).enumerate() {
                writeln!(
                    out,
                    "{i:>6} {:>10.5} {:>10.5} [{:>9.5}, {:>9.5}] {p:>10.5}",
                    e.value,
                    e.std_error(),
                    e.ci_low,
                    e.ci_high
                )?;
            }
        }
        if let Some(m) = &g.mean {
            let e = m.estimate;
            writeln!(
                out,
                "mean {:.6} ± {:.6} ({:.0}% interval [{:.6}, {:.6}])",
                e.value,
                e.ci_high - e.value,
                confidence * 100.0,
                e.ci_low,
                e.ci_high
            )?;
        }
    }
    Ok(())
}

//! `privq experiment mwem`: the thesis' Chapter 5 experiments.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use privq_core::Epsilon;

use super::CliError;
use super::progress::bar;
use crate::experiments::mwem::{Baseline, Protocol, default_data_dir, run as run_protocol};

/// Options of `privq experiment`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
    privq experiment mwem --quick\n  \
    privq experiment distance --out-dir target/experiments\n  \
    privq experiment dx --no-optimum\n  \
    privq experiment sql-accuracy --runs 1000 --csv target/experiments/sql-accuracy.csv\n\n\
    Every experiment creates --out-dir and checks it is writable before it starts.")]
pub struct Args {
    /// Which experiment.
    #[command(subcommand)]
    pub which: Which,
}

/// The experiments.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Which {
    /// MWEM vs optimized MWEM vs the modified Barak et al. baseline (thesis Figs. 5.2–5.3).
    Mwem(MwemArgs),
    /// Huang–Roth distance queries: error vs n for every mechanism and baseline.
    Distance(DistanceArgs),
    /// The K-norm mechanism vs Laplace on random ±1 queries (thesis Fig. 3.1).
    Knorm(KnormArgs),
    /// d_X-privacy (Kamalaruban et al. §4.1–4.4): improvement factors, strategies, US cities, Blowfish.
    Dx(DxArgs),
    /// PMW's practical profile vs the thesis constants vs the uniform guess on NLTCS.
    Pmw(PmwArgs),
    /// PRIVLEARN (thesis Fig. 7.2) with a PTF learner on a few NLTCS attributes.
    Privlearn(PrivlearnArgs),
    /// Releasing conjunctions (thesis Fig. 6.6), central vs local vs MWEM, and the SQ barrier.
    Conjunctions(ConjunctionsArgs),
    /// `privq sql`'s accuracy on Adult: RMSE against the analytic noise sd, interval coverage.
    SqlAccuracy(SqlAccuracyArgs),
}

/// Options of `privq experiment sql-accuracy`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
    privq experiment sql-accuracy                # from the repository root (../shared/data)\n  \
    privq experiment sql-accuracy --runs 100 --epsilons 1 --csv sql-accuracy.csv\n\n\
    COUNT(*), AVG(age), AVG(hours-per-week) BY education-num (public keys 1-16; bounds\n\
    age 17:90, hours 1:99) and MEDIAN(age), each query at ε, one row per privacy unit.\n\
    Per group: the empirical RMSE against the analytic sd of the noise, and the coverage\n\
    of the 95 % intervals over the runs (seeds SEED..SEED+RUNS).")]
pub struct SqlAccuracyArgs {
    /// The Adult CSV (default ../shared/data/adult/adult.csv, the benchmark file of
    /// value indices: age − 16, hours − 1, education-num − 1).
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// The input holds plain values (ages in years …), not the benchmark's indices.
    #[arg(long)]
    pub plain: bool,
    /// Comma-separated budgets ε, one table each (decimals or fractions).
    #[arg(long, value_delimiter = ',', default_value = "1,0.1")]
    pub epsilons: Vec<String>,
    /// Releases per ε.
    #[arg(long, default_value_t = 1000)]
    pub runs: usize,
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Also write every row (per ε, group and statistic) to this CSV file.
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,
}

/// Options of `privq experiment conjunctions`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
    privq experiment conjunctions                # from the repository root (../shared/data)\n  \
    privq experiment conjunctions --epsilons 1 --widths 3 --runs 1\n\n\
    Three tables: (alpha, beta)-accuracy against MWEM, the SQ barrier against d, and the\n\
    price of the local model (central vs local oracle), measured and predicted.")]
pub struct ConjunctionsArgs {
    /// A binary CSV (0/1 columns named by the header; default ../shared/data/nltcs.csv).
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Comma-separated budgets ε (decimals or fractions).
    #[arg(long, value_delimiter = ',', default_value = "0.1,1")]
    pub epsilons: Vec<String>,
    /// Comma-separated query widths w (attributes in S with probability w/d); 0 means p = 1/2.
    #[arg(long, value_delimiter = ',', default_value = "0,2,3,4")]
    pub widths: Vec<u32>,
    /// Conjunctions scored per run (also MWEM's workload).
    #[arg(long, default_value_t = 500)]
    pub queries: usize,
    /// Runs per table cell.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// The error threshold of the "within α" column.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Comma-separated piece caps of Fig. 6.6, one row each (the query budget is cap·(d+2)).
    #[arg(long, value_delimiter = ',', default_value = "8,64,512")]
    pub caps: Vec<usize>,
    /// Comma-separated replication factors of the table (n·m records, same distribution).
    #[arg(long, value_delimiter = ',', default_value = "1,100")]
    pub scales: Vec<u64>,
    /// Base seed.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
}

/// Options of `privq experiment privlearn`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
    privq experiment privlearn                   # from the repository root (../shared/data)\n  \
    privq experiment privlearn --d 6 --degree 3 --samples 300 --epsilons 1 --runs 1\n\n\
    The table prints the sample size and n that eqs. 7.7–7.8 require beside the ones used.")]
pub struct PrivlearnArgs {
    /// A binary CSV (0/1 columns named by the header; default ../shared/data/nltcs.csv).
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Attributes kept (the first d in cell order), 1..=12.
    #[arg(long, default_value_t = 8)]
    pub d: u32,
    /// Degree of the polynomial threshold functions.
    #[arg(long, default_value_t = 2)]
    pub degree: u32,
    /// Sampled queries per run (b_iter).
    #[arg(long, default_value_t = 400)]
    pub samples: usize,
    /// Fresh queries scored per run.
    #[arg(long, default_value_t = 2000)]
    pub fresh: usize,
    /// Accuracy alpha, in (0, 1/4].
    #[arg(long, default_value_t = 0.25)]
    pub alpha: f64,
    /// gamma, in (0, 1).
    #[arg(long, default_value_t = 0.2)]
    pub gamma: f64,
    /// Comma-separated budgets ε (decimals or fractions).
    #[arg(long, value_delimiter = ',', default_value = "0.5,1,2")]
    pub epsilons: Vec<String>,
    /// Runs per ε.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Base seed.
    #[arg(long, default_value_t = 5)]
    pub seed: u64,
}

/// Options of `privq experiment pmw`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
    privq experiment pmw                         # from the repository root (../shared/data)\n  \
    privq experiment pmw --epsilons 1 --runs 1 --alpha 0.05")]
pub struct PmwArgs {
    /// A binary CSV (0/1 columns named by the header; default ../shared/data/nltcs.csv).
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Comma-separated budgets ε of a whole session (decimals or fractions).
    #[arg(long, value_delimiter = ',', default_value = "0.5,1,2")]
    pub epsilons: Vec<String>,
    /// The practical profile's accuracy target α (its threshold T).
    #[arg(long, default_value_t = 0.08)]
    pub alpha: f64,
    /// Queries per session.
    #[arg(long, default_value_t = 1000)]
    pub queries: usize,
    /// Sessions per ε.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Base seed (queries and noise).
    #[arg(long, default_value_t = 11)]
    pub seed: u64,
}

/// Options of `privq experiment knorm`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
    privq experiment knorm                                   # quick: d = 2, 4, 6, 8, N = 64\n  \
    privq experiment knorm --full --out-dir target/experiments   # d = 8, 16, 32, 64, N = 1024\n  \
    privq experiment knorm --dims 8,16,32,64 --n 1024 --runs 10")]
pub struct KnormArgs {
    /// The protocol at the sizes: d = 8, 16, 32, 64, N = 1024, 30 runs
    /// (minutes in a release build); the options below override it.
    #[arg(long)]
    pub full: bool,
    /// Comma-separated numbers of queries d [default: 2,4,6,8].
    #[arg(long, value_delimiter = ',')]
    pub dims: Option<Vec<usize>>,
    /// Number of columns N of the random ±1 matrix [default: 64].
    #[arg(long, alias = "n")]
    pub columns: Option<usize>,
    /// Releases per mechanism and d [default: 200].
    #[arg(long)]
    pub runs: Option<usize>,
    /// Hit-and-run steps when K has no exact sampler, at least 4·d (APPROXIMATE
    /// privacy) [default: 50].
    #[arg(long)]
    pub steps: Option<usize>,
    /// ε of each release: a decimal or a fraction.
    #[arg(long, default_value = "1")]
    pub epsilon: String,
    /// Base seed (matrices and noise).
    #[arg(long, default_value_t = 31)]
    pub seed: u64,
    /// Also draw the table as `knorm-fig3-1.svg` in this directory.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// Options of `privq experiment dx`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
    privq experiment dx                          # from the repository root (../shared/data)\n  \
    privq experiment dx --cities us_cities.csv --no-optimum --out-dir figures")]
pub struct DxArgs {
    /// The US-cities CSV (default ../shared/data/us_cities.csv).
    #[arg(long, value_name = "FILE")]
    pub cities: Option<PathBuf>,
    /// Where to write the SVG figures.
    #[arg(long, value_name = "DIR", default_value = "target/experiments")]
    pub out_dir: PathBuf,
    /// Base seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Skip the exact relaxed optimum (PSA's gap) for speed.
    #[arg(long)]
    pub no_optimum: bool,
}

/// Options of `privq experiment distance`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
    privq experiment distance                    # n up to 10^5, 2000 queries\n  \
    privq experiment distance --full --out-dir figures")]
pub struct DistanceArgs {
    /// Where to write the SVG figures and distance-results.csv.
    #[arg(long, value_name = "DIR", default_value = "target/experiments")]
    pub out_dir: PathBuf,
    /// The full grid (n up to 10^6, 10^4 queries); the default stops at n = 10^5 with 2000 queries.
    #[arg(long)]
    pub full: bool,
}

/// Options of `privq experiment mwem`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
    privq experiment mwem                       # the full protocol (100 runs small, 10 nltcs)\n  \
    privq experiment mwem --quick               # 10 runs / 2 runs, for a first look\n  \
    privq experiment mwem --datasets czech --runs 20 --epsilons 0.05,0.5")]
pub struct MwemArgs {
    /// Directory holding mildew.csv, czech.csv, rochdale.csv and nltcs.csv.
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Where to write the SVG figures and mwem-results.csv (created, and checked
    /// writable, before the runs start).
    #[arg(long, value_name = "DIR", default_value = "target/experiments")]
    pub out_dir: PathBuf,
    /// Runs per point on the small datasets (thesis: 100).
    #[arg(long, value_name = "N")]
    pub runs: Option<usize>,
    /// Runs per point on NLTCS (thesis: 10).
    #[arg(long, value_name = "N")]
    pub runs_nltcs: Option<usize>,
    /// Comma-separated datasets (default: mildew,czech,rochdale,nltcs).
    #[arg(long, value_delimiter = ',')]
    pub datasets: Vec<String>,
    /// Comma-separated ε grid (default: 0.01,0.02,0.05,0.1,0.2,0.5,1,2).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub epsilons: Vec<String>,
    /// Base seed of all runs.
    #[arg(long, default_value_t = 2011)]
    pub seed: u64,
    /// Re-iteration passes per round of optimized MWEM.
    #[arg(long, value_name = "R")]
    pub passes: Option<usize>,
    /// 10 runs on the small datasets and 2 on NLTCS.
    #[arg(long)]
    pub quick: bool,
    /// Fits of the Barak baseline to run: `fit` (to convergence, the plain reading
    /// of the thesis) and/or `discrepancy` (stop at the noise level).
    #[arg(long, value_delimiter = ',', value_name = "FIT,...", value_parser = crate::choice::<Baseline>())]
    pub baselines: Vec<Baseline>,
    /// Largest Laplace scale (normalized) of a measurement that MWEM's
    /// re-iteration re-uses.
    #[arg(long, value_name = "SCALE")]
    pub max_noise: Option<f64>,
    /// Pass cap of the baseline's MW fit.
    #[arg(long, value_name = "N")]
    pub barak_passes: Option<usize>,
}

/// Runs `privq experiment`.
pub fn run(
    args: &Args,
    _stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    match &args.which {
        Which::Mwem(a) => run_mwem(a, stdout, stderr),
        Which::Dx(d) => run_dx(d, stdout, stderr),
        Which::Knorm(k) => run_knorm(k, stdout),
        Which::Pmw(p) => run_pmw(p, stdout),
        Which::Privlearn(p) => run_privlearn(p, stdout),
        Which::Conjunctions(c) => run_conjunctions(c, stdout, stderr),
        Which::Distance(d) => run_distance(d, stdout, stderr),
        Which::SqlAccuracy(a) => run_sql_accuracy(a, stdout, stderr),
    }
}

/// `privq experiment sql-accuracy`: the errors and interval coverage of `privq sql`.
fn run_sql_accuracy(
    a: &SqlAccuracyArgs,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    use crate::experiments::sql_accuracy::{Config, run};
    at_least_one(&[("runs", a.runs)])?;
    let input = a
        .input
        .clone()
        .unwrap_or_else(|| default_data_dir().join("adult").join("adult.csv"));
    if !input.exists() {
        return Err(CliError::Run(
            format!(
                "the Adult data {} is absent; pass --input FILE",
                input.display()
            )
            .into(),
        ));
    }
    let csv = std::fs::read(&input).map_err(|e| CliError::file(&input, e))?;
    // The CSV's directory is created and checked writable before the runs.
    if let Some(dir) = a.csv.as_ref().and_then(|p| p.parent())
        && !dir.as_os_str().is_empty()
    {
        super::check_out_dir(dir)?;
    }
    let mut config = Config::adult().map_err(CliError::Run)?;
    config.epsilons = parse_epsilons(&a.epsilons)?;
    config.runs = a.runs;
    config.seed = a.seed;
    if a.plain {
        config.shifts.clear();
    }
    writeln!(
        stderr,
        "privq: sql-accuracy on {}: {} runs per ε",
        input.display(),
        a.runs
    )?;
    let report = run(&csv, &config, stdout).map_err(CliError::Run)?;
    if let Some(path) = &a.csv {
        let mut text = Vec::new();
        report.write_csv(&mut text)?;
        std::fs::write(path, text).map_err(|e| CliError::file(path, e))?;
        writeln!(stdout, "wrote {}", path.display())?;
    }
    Ok(())
}

/// A binary table: `input`, or NLTCS from the shared data directory.
fn binary_table(input: Option<&PathBuf>) -> Result<privq_host::data::Dataset, CliError> {
    use privq_host::data::{Dataset, MemoryCap};
    let input = input
        .cloned()
        .unwrap_or_else(|| default_data_dir().join("nltcs.csv"));
    std::fs::File::open(&input).map_err(|e| CliError::file(&input, e))?;
    Dataset::binary_from_header(
        &input,
        &privq_host::data::CsvColumns::new(),
        MemoryCap::default(),
    )
    .map_err(CliError::from)
}

/// A comma-separated list of exact budgets.
fn parse_epsilons(texts: &[String]) -> Result<Vec<Epsilon>, CliError> {
    texts.iter().map(|e| super::parse_epsilon(e)).collect()
}

/// Positive counts, or a usage error naming the option.
fn at_least_one(options: &[(&'static str, usize)]) -> Result<(), CliError> {
    match options.iter().find(|(_, v)| *v == 0) {
        Some(&(option, _)) => Err(CliError::Usage {
            option,
            message: "must be at least 1".into(),
        }),
        None => Ok(()),
    }
}

/// `privq experiment privlearn`: Fig. 7.2 on a small table, beside eq. 7.8's n.
fn run_privlearn(p: &PrivlearnArgs, stdout: &mut dyn Write) -> Result<(), CliError> {
    use crate::experiments::privlearn::{Config, run};
    let data = binary_table(p.input.as_ref())?;
    at_least_one(&[("runs", p.runs), ("samples", p.samples), ("fresh", p.fresh)])?;
    let mut config = Config::standard().map_err(|source| CliError::Parameter {
        option: "epsilons",
        source,
    })?;
    config.epsilons = parse_epsilons(&p.epsilons)?;
    config.d = p.d;
    config.degree = p.degree;
    config.samples = p.samples;
    config.fresh = p.fresh;
    config.alpha = p.alpha;
    config.gamma = p.gamma;
    config.runs = p.runs;
    config.seed = p.seed;
    run(&data.counts, &config, stdout)
        .map(|_| ())
        .map_err(CliError::Run)
}

/// `privq experiment conjunctions`: Fig. 6.6 central and local against MWEM, and the SQ barrier.
fn run_conjunctions(
    c: &ConjunctionsArgs,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    use crate::experiments::conjunctions::{Config, QueryDistribution, run};
    let data = binary_table(c.input.as_ref())?;
    at_least_one(&[("runs", c.runs), ("queries", c.queries)])?;
    let mut config = Config::standard().map_err(|source| CliError::Parameter {
        option: "epsilons",
        source,
    })?;
    config.epsilons = parse_epsilons(&c.epsilons)?;
    config.distributions = c
        .widths
        .iter()
        .map(|&w| match w {
            0 => QueryDistribution::Half,
            w => QueryDistribution::Width(w),
        })
        .collect();
    config.queries = c.queries;
    config.runs = c.runs;
    config.alpha = c.alpha;
    config.caps = c.caps.clone();
    config.scales = c.scales.clone();
    config.seed = c.seed;
    run(&data.counts, &config, stdout, &mut |what| {
        let _ = writeln!(stderr, "conjunctions: {what}");
    })
    .map(|_| ())
    .map_err(CliError::Run)
}

/// `privq experiment pmw`: the default profile's usefulness, measured.
fn run_pmw(p: &PmwArgs, stdout: &mut dyn Write) -> Result<(), CliError> {
    use crate::experiments::pmw::{Config, run};
    let data = binary_table(p.input.as_ref())?;
    at_least_one(&[("runs", p.runs), ("queries", p.queries)])?;
    let mut config = Config::standard().map_err(|source| CliError::Parameter {
        option: "epsilons",
        source,
    })?;
    config.epsilons = parse_epsilons(&p.epsilons)?;
    config.alpha = p.alpha;
    config.queries = p.queries;
    config.runs = p.runs;
    config.seed = p.seed;
    run(&data, &config, stdout)
        .map(|_| ())
        .map_err(CliError::Run)
}

/// `privq experiment knorm`: the Fig. 3.1 comparison of Laplace and K-norm noise.
fn run_knorm(k: &KnormArgs, stdout: &mut dyn Write) -> Result<(), CliError> {
    use crate::experiments::knorm::{Config, run};
    let base = if k.full {
        Config::full()
    } else {
        Config::standard()
    };
    let mut config = base.map_err(|source| CliError::Parameter {
        option: "epsilon",
        source,
    })?;
    if let Some(dims) = &k.dims {
        config.dims = dims.clone();
    }
    config.columns = k.columns.unwrap_or(config.columns);
    config.runs = k.runs.unwrap_or(config.runs);
    config.steps = k.steps.unwrap_or(config.steps);
    config.seed = k.seed;
    config.epsilon = super::parse_epsilon(&k.epsilon)?;
    if let Some(dir) = &k.out_dir {
        super::check_out_dir(dir)?;
        config.out_dir = Some(dir.clone());
    }
    run(&config, stdout).map(|_| ()).map_err(CliError::Run)
}

fn run_distance(
    d: &DistanceArgs,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    let dir = d.out_dir.clone();
    let p = if d.full {
        crate::experiments::distance::Protocol::full(dir)
    } else {
        crate::experiments::distance::Protocol::quick(dir)
    }?;
    super::check_out_dir(&d.out_dir)?;
    crate::experiments::distance::run(&p, stdout, stderr).map_err(CliError::Run)?;
    Ok(())
}

fn run_mwem(a: &MwemArgs, stdout: &mut dyn Write, stderr: &mut dyn Write) -> Result<(), CliError> {
    let p = mwem_protocol(a)?;
    if !p.data_dir.exists() {
        return Err(CliError::Run(
            format!(
                "the data directory {} is absent; pass --data-dir DIR holding {}",
                p.data_dir.display(),
                p.datasets
                    .iter()
                    .map(|d| format!("{d}.csv"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
            .into(),
        ));
    }
    super::check_out_dir(&p.out_dir)?;
    writeln!(
        stderr,
        "privq: MWEM protocol: {} runs (small datasets), {} runs (nltcs), eps grid {:?}, seed {}",
        p.runs_small,
        p.runs_nltcs,
        p.epsilons.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
        p.seed
    )?;
    let pb = bar(1, "experiment");
    // Without a terminal the bar is hidden: log a line per panel and per 10% instead.
    let (mut last_what, mut last_tenth) = (String::new(), 0);
    let report = run_protocol(&p, &mut |what, done, total| {
        pb.set_length(total as u64);
        pb.set_message(what.to_string());
        pb.set_position(done as u64);
        let tenth = done * 10 / total.max(1);
        if pb.is_hidden() && (what != last_what || tenth > last_tenth) {
            // A lost progress line loses no result.
            let _ = writeln!(stderr, "privq: {what}: run {done} of {total}");
            last_what = what.to_string();
            last_tenth = tenth;
        }
    })?;
    pb.finish_and_clear();
    report.write_tables(stdout)?;
    Ok(())
}

/// The thesis protocol with the options applied.
fn mwem_protocol(a: &MwemArgs) -> Result<Protocol, CliError> {
    let data_dir = a.data_dir.clone().unwrap_or_else(default_data_dir);
    let mut p = Protocol::thesis(data_dir, a.out_dir.clone());
    if a.quick {
        p.runs_small = 10;
        p.runs_nltcs = 2;
    }
    p.runs_small = a.runs.unwrap_or(p.runs_small);
    p.runs_nltcs = a.runs_nltcs.unwrap_or(p.runs_nltcs);
    for (option, runs) in [("runs", p.runs_small), ("runs-nltcs", p.runs_nltcs)] {
        if runs == 0 {
            return Err(CliError::Usage {
                option,
                message: "must be at least 1 (0 runs would report nothing)".into(),
            });
        }
    }
    p.reiterate_passes = a.passes.unwrap_or(p.reiterate_passes);
    p.seed = a.seed;
    if !a.baselines.is_empty() {
        p.baselines = a.baselines.clone();
    }
    p.max_noise = a.max_noise.unwrap_or(p.max_noise);
    p.barak_fit.max_passes = a.barak_passes.unwrap_or(p.barak_fit.max_passes);
    if !a.datasets.is_empty() {
        p.datasets = a.datasets.clone();
    }
    if !a.epsilons.is_empty() {
        p.epsilons = a
            .epsilons
            .iter()
            .map(|s| {
                s.parse::<Epsilon>().map_err(|source| CliError::Parameter {
                    option: "epsilons",
                    source,
                })
            })
            .collect::<Result<_, _>>()?;
    }
    Ok(p)
}

fn run_dx(a: &DxArgs, stdout: &mut dyn Write, stderr: &mut dyn Write) -> Result<(), CliError> {
    let mut cfg = crate::experiments::dx::Config {
        seed: a.seed,
        optimum: !a.no_optimum,
        out_dir: Some(a.out_dir.clone()),
        ..Default::default()
    };
    if let Some(c) = &a.cities {
        cfg.cities = c.clone();
    }
    // §4.3 needs the US-cities data: asked for (by default or by --cities), so an
    // absent file is an error, not a silent skip.
    if !cfg.cities.exists() {
        return Err(CliError::Run(
            format!(
                "the US-cities data {} is absent (§4.3); pass --cities FILE",
                cfg.cities.display()
            )
            .into(),
        ));
    }
    super::check_out_dir(&a.out_dir)?;
    writeln!(
        stderr,
        "privq: d_X experiment, seed {}, figures in {}",
        cfg.seed,
        a.out_dir.display()
    )?;
    let rep = crate::experiments::dx::run(&cfg).map_err(CliError::Run)?;
    rep.write_tables(stdout)?;
    Ok(())
}

#[cfg(test)]
mod missing_data_tests {
    use super::CliError;

    #[test]
    fn an_absent_dataset_fails_the_experiment() {
        let e = crate::run_with(
            &[
                "experiment",
                "mwem",
                "--data-dir",
                "/nonexistent/privq-data",
            ],
            "",
        )
        .unwrap_err();
        assert!(matches!(e, CliError::Run(_)));
        assert!(e.to_string().contains("is absent"), "{e}");
        let Some(dir) = privq_host::data::shared_data_dir("privq experiment missing dataset")
        else {
            return;
        };
        let e = crate::run_with(
            &[
                "experiment",
                "mwem",
                "--data-dir",
                dir.to_str().unwrap(),
                "--datasets",
                "mildew,no-such-data",
                "--quick",
            ],
            "",
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("dataset no-such-data was asked for"),
            "{e}"
        );
        let e = crate::run_with(
            &["experiment", "dx", "--cities", "/nonexistent/cities.csv"],
            "",
        )
        .unwrap_err();
        assert!(e.to_string().contains("is absent"), "{e}");
        let e = crate::run_with(
            &[
                "experiment",
                "sql-accuracy",
                "--input",
                "/nonexistent/adult.csv",
            ],
            "",
        )
        .unwrap_err();
        assert!(e.to_string().contains("is absent"), "{e}");
    }
}

#[cfg(test)]
mod knorm_tests {
    /// A tiny Fig. 3.1 run through the CLI: the table, the predicted ratio and the
    /// SVG; `--n` is the alias of `--columns`.
    #[test]
    fn knorm_experiment_writes_its_table_and_figure() {
        let dir = std::env::temp_dir().join(format!("privq-knorm-exp-{}", std::process::id()));
        let (out, _) = crate::run_with(
            &[
                "experiment",
                "knorm",
                "--dims",
                "3",
                "--n",
                "16",
                "--runs",
                "4",
                "--steps",
                "12",
                "--out-dir",
                dir.to_str().unwrap(),
            ],
            "",
        )
        .unwrap();
        assert!(out.contains("N = 16") && out.contains("pred."), "{out}");
        let svg = std::fs::read_to_string(dir.join("knorm-fig3-1.svg")).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("NiKM"), "{svg}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

//! `privq synth`: private synthetic data with MWEM.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use privq_core::Epsilon;

use super::domain::DomainArgs;
use super::progress::bar;
use super::synth_report::ReportFile;
use super::synth_report::mwem as mwem_report;
use super::{CliError, ColumnsArgs, InputFile, LedgerArgs, Output};
use privq_host::accountant::{Accountant, Cost};
use privq_host::central::mwem::{EmProfile, MwemConfig, MwemOutput};
use privq_host::contract::Neighbours;
use privq_host::data::{BinOutput, Discovered, Domain, MemoryCap, write_records};
use privq_host::query::Workload;
use privq_host::synth::mwem::{MwemRequest, MwemRun, MwemSynthetic};
use rand_chacha::ChaCha12Rng;

/// Options of `privq synth`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
    privq synth --input ../shared/data/nltcs.csv --domain binary --epsilon 1 > synthetic.csv\n  \
    privq synth --input adult.csv --domain adult-domain.json --epsilon 1 --delta 1e-9\n  \
    privq synth --input adult.csv --domain adult-domain.json --epsilon 1 --report report.html\n  \
    privq synth --mechanism mwem --input people.csv --domain domain.json --epsilon 0.5 \\\n      --workload marginals:2\n  \
    privq synth --mechanism mwem --input people.csv --discover-domain --epsilon 1 \\\n      --discovery-epsilon 0.2 --workload marginals:2\n\n\
    The input is CSV with a header: one record per row, or one cell per row with a\n\
    `count` column. The domain (every value each attribute can take) is public input:\n\
    --domain FILE (JSON spec, or {\"name\": size, ...} for value indices) or --domain\n\
    binary (0/1 columns named by the header). Reading it from the values present would\n\
    reveal which values occur, so without --domain the run is refused (MWEM can\n\
    choose the values privately with --discover-domain, charged to --epsilon).\n\n\
    --mechanism adaptive (default): adaptive marginals with exact discrete Gaussian\n\
    noise and a graphical model, rho-zCDP converted to (epsilon, --delta)-DP; any\n\
    domain size. Neighbours: --neighbours add-remove (default; n private, the number\n\
    of synthetic records is the model's noisy total) or replace (n public).\n\
    --mechanism mwem: pure epsilon-DP over a dense histogram; replace-one neighbours,\n\
    n public (the default --records).")]
pub struct Args {
    /// The private data (CSV with a header); `-` for standard input.
    #[arg(long, value_name = "PATH")]
    pub input: PathBuf,
    /// The domain: --domain FILE|binary, or --discover-domain.
    #[command(flatten)]
    pub domain: DomainArgs,
    /// How the input's columns are read: --count-column, --ignore-columns.
    #[command(flatten)]
    pub columns: ColumnsArgs,
    /// Total privacy budget ε: (ε, --delta)-DP for the adaptive mechanism, pure ε-DP
    /// for MWEM; a decimal or a fraction.
    #[arg(long, value_name = "EPS", allow_hyphen_values = true)]
    pub epsilon: String,
    /// The mechanism: `adaptive` (default; adaptive marginals with exact discrete
    /// Gaussian noise and a graphical model, (ε, δ)-DP via ρ-zCDP, any domain size)
    /// or `mwem` (pure ε-DP MWEM over a dense histogram).
    #[arg(long, value_enum, default_value = "adaptive")]
    pub mechanism: MechanismArg,
    /// δ of the adaptive mechanism's (ε, δ) guarantee (its ρ is the largest whose
    /// conversion meets ε at this δ).
    #[arg(long, value_name = "DELTA", default_value_t = 1e-9)]
    pub delta: f64,
    /// Neighbour relation of the adaptive mechanism: `add-remove` (n private) or
    /// `replace` (n public). MWEM takes only `replace` (its default).
    #[arg(
        long,
        value_enum,
        default_value = "add-remove",
        default_value_if("mechanism", "mwem", "replace")
    )]
    pub neighbours: NeighboursArg,
    /// Cap on the adaptive mechanism's model, in MiB of 8-byte cells. It bounds the
    /// run's time whatever the number of rows (a larger model gets fewer fitting
    /// steps per round); AIM's default is 80.
    #[arg(long, value_name = "MIB", default_value_t = 4)]
    pub max_model_mib: u64,
    /// Seconds the adaptive mechanism's model fitting may take (default: no
    /// limit; adaptive only, from 1e-9 to a year). Fitting is most of a run's time; when the time left holds one
    /// more round, that round spends all the ε left and is the last, and the
    /// final fit stops at the budget after its first 50 steps: fewer rounds and
    /// a looser fit (a less accurate release; below about a second on a table
    /// like Adult, far less accurate), never a different charge.
    /// Reading the input, counting its marginals and drawing the rows come on
    /// top (they grow with the rows). The clock reads no data, but the guarantee
    /// then assumes the machine's speed does not depend on it (the book's
    /// "Privacy arguments"); with --seed the result depends on the machine.
    #[arg(long, value_name = "SECONDS", allow_hyphen_values = true)]
    pub time_budget: Option<f64>,
    /// After the release, print the mean total-variation distance of the model and
    /// of the synthetic records from the input over all 2- and 3-way marginals.
    /// NOT PRIVATE: a diagnostic for a curator who may see the data. With
    /// --report, the page also gets the per-marginal error histogram and true
    /// against synthetic marginals, in a section marked NOT PRIVATE.
    #[arg(long)]
    pub compare: bool,
    /// Rounds T (MWEM default: T* of Thm 5.2.11, clamped to 5..=50; adaptive
    /// default: 16·d planned rounds).
    #[arg(long, value_name = "T")]
    pub rounds: Option<usize>,
    /// Query workload: parity:W (binary domains), conjunctions:W, or marginals:K
    /// (default: marginals:3 for adaptive, parity:3 for MWEM; adaptive takes only
    /// marginals:K).
    #[arg(long)]
    pub workload: Option<String>,
    /// Plain Algorithm 5.1 (no §5.3.2 improvements).
    #[arg(long)]
    pub plain: bool,
    /// Exponential-mechanism profile. `corrected` (default): weights exp(eps0*s/4), so a
    /// round costs exactly eps0. `thesis-literal`: the printed weights exp(eps0*s/2),
    /// whose true cost is 1.5*eps0 per round (the thesis counts eps0, an over-spend
    /// of 50%); to stay within --epsilon, eps0 is sized from 2/3 of it, so each
    /// round gets less noise-budget than with `corrected`.
    #[arg(long, value_parser = crate::choice::<EmProfile>(), default_value = "corrected")]
    pub profile: EmProfile,
    /// Number of synthetic records (default: the model's noisy total under
    /// add/remove neighbours; the input's n when it is public).
    #[arg(long, value_name = "N")]
    pub records: Option<usize>,
    /// Write a binned numeric column's values as bin labels `[lo,hi)` instead of
    /// numbers (by default each value is its bin's midpoint (lo+hi)/2, exact).
    #[arg(long)]
    pub bins_as_labels: bool,
    /// Write the synthetic CSV here (atomically: whole or not at all) instead of
    /// standard output; `-` is standard output. The file is opened before MWEM runs.
    #[arg(long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Also write an HTML report here: the budget per round, the run's parameters and
    /// chosen marginals (public), and with --compare the NOT PRIVATE error
    /// diagnostics. Written atomically; its directory is checked before any budget
    /// is spent.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// Seed for a reproducible run (tests and demos only: it makes the noise removable).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Memory cap, in MiB, for dense histograms (MWEM) and for the records and the
    /// synthetic rows. Adaptive marginals hold besides their model (see
    /// --max-model-mib) and the marginals the rows are refined towards (at most
    /// 32 MiB, 64 MiB while refining).
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    pub memory_mib: u64,
    /// Where to write the ledger as JSON.
    #[command(flatten)]
    pub ledger: LedgerArgs,
}

impl Args {
    /// How binned columns are written: `--bins-as-labels`, else midpoints.
    pub(crate) fn bin_output(&self) -> BinOutput {
        if self.bins_as_labels {
            BinOutput::Label
        } else {
            BinOutput::Midpoint
        }
    }
}

/// `--mechanism`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MechanismArg {
    /// Adaptive marginals (ρ-zCDP, exact discrete Gaussian, graphical model).
    Adaptive,
    /// MWEM (pure ε, dense histogram).
    Mwem,
}

/// `--neighbours`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NeighboursArg {
    /// Add or remove one record; n private.
    AddRemove,
    /// Replace one record; n public.
    Replace,
}

impl From<NeighboursArg> for Neighbours {
    fn from(arg: NeighboursArg) -> Self {
        match arg {
            NeighboursArg::AddRemove => Neighbours::AddRemove,
            NeighboursArg::Replace => Neighbours::Replace,
        }
    }
}

/// Parses `parity:3`, `conjunctions:2` or `marginals:2`.
pub fn parse_workload(spec: &str, domain: &Domain) -> Result<Workload, CliError> {
    let bad = || {
        CliError::Run(
            format!("--workload {spec:?}: expected parity:W, conjunctions:W or marginals:K").into(),
        )
    };
    let (kind, w) = spec.split_once(':').ok_or_else(bad)?;
    let w: usize = w.trim().parse().map_err(|_| bad())?;
    let kind = kind.trim();
    if matches!(kind, "parity" | "conjunctions") && !domain.is_binary() {
        return Err(CliError::Usage {
            option: "workload",
            message: format!(
                "{spec} needs a binary (0/1) domain and this one is not; \
                 use --workload marginals:2 (all 1- and 2-way marginals) or marginals:K"
            ),
        });
    }
    let wl = match kind {
        "parity" => Workload::parities(domain, w),
        "conjunctions" => Workload::conjunctions(domain, w),
        "marginals" => Workload::marginals(domain, w),
        _ => return Err(bad()),
    };
    Ok(wl?)
}

/// Runs `privq synth`.
pub fn run(
    args: &Args,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    let epsilon = super::parse_epsilon(&args.epsilon)?;
    for (path, option) in [
        (args.output.as_deref(), "output"),
        (args.report.as_deref(), "report"),
        (args.ledger.ledger_json.as_deref(), "ledger-json"),
    ] {
        super::refuse_overwriting_input(&args.input, path, option)?;
    }
    if let (Some(ledger), Some(output)) = (&args.ledger.ledger_json, &args.output)
        && ledger == output
    {
        return Err(CliError::Usage {
            option: "ledger-json",
            message: format!("{} is also the --output path", ledger.display()),
        });
    }
    if args.mechanism == MechanismArg::Adaptive {
        return super::synth_adaptive::run(args, epsilon, stdin, stdout, stderr);
    }
    if args.time_budget.is_some() {
        return Err(CliError::Usage {
            option: "time-budget",
            message: "is for --mechanism adaptive (it bounds that mechanism's model fitting); \
                      MWEM's time is set by --rounds and the domain's size: drop --time-budget"
                .into(),
        });
    }
    // MWEM samples one cell index per synthetic record.
    check_records(args, 8)?;
    let started = std::time::Instant::now();
    // Before any privacy is spent: the input exists and the outputs can be created.
    let input = InputFile::open(&args.input, stdin)?;
    let mut output = Output::open(args.output.as_deref())?;
    let report_file = ReportFile::open(args.report.as_deref(), args.output.as_deref())?;
    // MWEM's synthetic data are normalized by n: replace-one neighbours, n public.
    if args.neighbours == NeighboursArg::AddRemove {
        return Err(CliError::Usage {
            option: "neighbours",
            message: "--mechanism mwem is replace-one (n public) and cannot run with \
                      --neighbours add-remove; omit --neighbours, or use --mechanism adaptive"
                .into(),
        });
    }
    // Every release decision is the library's (`MwemRequest`): the accountant, the
    // discovery share, the rounds, the profile's scaling, the rows.
    let request = MwemRequest::new(epsilon)
        .profile(args.profile)
        .optimized(!args.plain)
        .rows(args.records)
        .rounds(args.rounds)
        .map_err(|_| CliError::Usage {
            option: "rounds",
            message: "must be at least 1".into(),
        })?;
    let (request, public) = args.domain.apply(request)?;
    args.ledger
        .reserve(&request.accountant()?, "privq synth (mwem)", stderr)?;
    let mut rng = super::rng(args.seed, stderr)?;
    let cap = MemoryCap(args.memory_mib.saturating_mul(1 << 20));
    let mut run = request.open(input.path(), public, &args.columns.columns(), cap, &mut rng)?;
    if let Some(found) = run.discovered() {
        writeln!(
            stderr,
            "privq: domain discovered privately ({}, threshold {}): values per attribute {:?}, {} cells",
            found.cost,
            found.threshold,
            found.values_per_attribute,
            run.dataset().domain.size()
        )?;
    }
    let workload_spec = args.workload.as_deref().unwrap_or("parity:3");
    let release = match release_mwem(&mut run, &request, workload_spec, &mut rng, stderr) {
        Ok(release) => release,
        Err(e) => {
            // Discovery may have spent budget and released the domain: record it.
            if !run.accountant().ledger().is_empty() {
                args.ledger.write(run.accountant())?;
                writeln!(
                    stderr,
                    "privq: ledger:\n{}",
                    args.ledger.text(run.accountant())
                )?;
            }
            return Err(e);
        }
    };
    let (
        workload,
        MwemSynthetic {
            cells, output: out, ..
        },
    ) = release;
    let accountant = run.accountant();
    let discovered = run.discovered();
    let ds = run.dataset();
    let n = ds.counts.total();
    let records = cells.len();
    // From here on the budget is spent: whatever fails, the ledger is written.
    let finished = (|| {
        write_records(output.writer(stdout), &ds.domain, &cells, args.bin_output())?;
        // NOT PRIVATE, and only on request: the release against the input.
        let diagnostics = if args.compare {
            let d = mwem_report::diagnose(ds, workload_spec, &out, &cells)?;
            Some(d)
        } else {
            None
        };
        if let Some(d) = &diagnostics {
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
            writeln!(
                stderr,
                "privq: compare (NOT PRIVATE, reads the input): mean TV over {} ({} marginals): \
             model {:.5}, synthetic records {:.5}",
                d.workload,
                d.tv_model.len(),
                mean(&d.tv_model),
                mean(&d.tv_sample)
            )?;
        }
        // Rendered before anything is put in place, so a failure leaves neither file.
        let report = match report_file {
            Some(file) => {
                let run = mwem_report::Run {
                    args,
                    epsilon,
                    accountant,
                    out: &out,
                    cells: ds.counts.len(),
                    rows: records,
                    wall: started.elapsed(),
                };
                Some((file, run.render(diagnostics)?))
            }
            None => None,
        };
        output.commit(stdout)?;
        Ok::<_, CliError>(report)
    })();
    let report = args.ledger.after_charge(accountant, stderr, finished)?;
    // The records are out: record the spend before anything else can fail.
    args.ledger.write(accountant)?;
    if let Some((file, html)) = report {
        file.write(&html)?;
        writeln!(
            stderr,
            "privq: report written to {}",
            args.report
                .as_deref()
                .unwrap_or(std::path::Path::new(""))
                .display()
        )?;
    }

    writeln!(
        stderr,
        "privq: MWEM over {} cells, {} queries ({}), {} rounds run; {} synthetic records",
        ds.counts.len(),
        workload.len(),
        workload_spec,
        out.rounds,
        records
    )?;
    let summary = Summary {
        epsilon,
        n,
        neighbours: MwemConfig::NEIGHBOURS,
        discovered,
        profile: args.profile,
    };
    summary.write(accountant, &out, stderr)?;
    writeln!(stderr, "privq: ledger:\n{}", args.ledger.text(accountant))?;
    Ok(())
}

/// The workload over the loaded domain, then MWEM's release (the library decides
/// the rounds, the profile's scaling and the rows).
fn release_mwem(
    run: &mut MwemRun,
    request: &MwemRequest,
    workload_spec: &str,
    rng: &mut ChaCha12Rng,
    stderr: &mut dyn Write,
) -> Result<(Workload, MwemSynthetic), CliError> {
    let workload = parse_workload(workload_spec, &run.dataset().domain)?;
    if request.em_profile() == EmProfile::ThesisLiteral {
        let share = request.mwem_epsilon()?;
        writeln!(
            stderr,
            "privq: note: --profile thesis-literal uses the printed EM weights exp(eps0*s/2), which cost \
             1.5*eps0 per round, not eps0; MWEM is run with {} = 2/3 of epsilon {share} so the \
             true total stays within {share}",
            request.configured_epsilon()?,
        )?;
    }
    let pb = bar(run.rounds(&workload) as u64, "MWEM rounds");
    let release = run.release(&workload, rng, &mut |r, total| {
        pb.set_length(total as u64);
        pb.set_position(r as u64);
    })?;
    pb.finish_and_clear();
    Ok((workload, release))
}

/// Refuses a `--records` whose synthetic rows, at `bytes_per_row`, would not fit
/// under `--memory-mib`: checked before anything is read or spent.
pub(crate) fn check_records(args: &Args, bytes_per_row: u64) -> Result<(), CliError> {
    let Some(rows) = args.records else {
        return Ok(());
    };
    let cap = args.memory_mib.saturating_mul(1 << 20);
    let bytes = (rows as u64).saturating_mul(bytes_per_row);
    if bytes > cap {
        return Err(CliError::Usage {
            option: "records",
            message: format!(
                "{rows} synthetic records need about {} MiB, over --memory-mib {}; \
                 write fewer records or raise --memory-mib",
                bytes >> 20,
                args.memory_mib
            ),
        });
    }
    Ok(())
}

/// What the run's privacy summary needs to know.
struct Summary<'a> {
    epsilon: Epsilon,
    n: u64,
    neighbours: Neighbours,
    discovered: Option<&'a Discovered>,
    profile: EmProfile,
}

impl Summary<'_> {
    /// The `privacy:` and `privacy spent:` lines.
    fn write(
        &self,
        accountant: &Accountant,
        out: &MwemOutput,
        stderr: &mut dyn Write,
    ) -> Result<(), CliError> {
        let spent = accountant.spent_epsilon();
        let total_cost = match self.discovered {
            Some(found) => Cost::Approximate {
                epsilon: spent.unwrap_or(self.epsilon),
                delta: found.cost.delta(),
            },
            None => Cost::Pure(spent.unwrap_or(self.epsilon)),
        };
        writeln!(
            stderr,
            "privq: privacy: {}",
            self.neighbours.summary(&total_cost, self.n)
        )?;
        writeln!(
            stderr,
            "privq: privacy spent: epsilon = {} of {} ({}), in {} charges; MWEM used epsilon = {} of its share in {} steps{}",
            exact_or_zero(spent),
            self.epsilon,
            match self.discovered {
                None => "pure DP".to_string(),
                Some(found) => format!(
                    "(epsilon, delta)-DP with delta = {:e}, domain discovery included",
                    found.cost.delta()
                ),
            },
            accountant.ledger().len(),
            exact_or_zero(out.ledger.spent_epsilon()),
            out.ledger.ledger().len(),
            match self.profile {
                EmProfile::Corrected => "",
                EmProfile::ThesisLiteral =>
                    " (thesis-literal: each round charged its true 1.5*eps0, exponential mechanism eps0 + Laplace eps0/2)",
            }
        )?;
        Ok(())
    }
}

/// An exact ε, or `0` before the first charge.
fn exact_or_zero(e: Option<Epsilon>) -> String {
    e.map(|e| e.to_string()).unwrap_or_else(|| "0".into())
}

#[cfg(test)]
mod tests;

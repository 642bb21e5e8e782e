//! The Chapter 5 protocol: KL(true ‖ synthetic) of MWEM, optimized MWEM and the
//! modified Barak et al. baseline over an ε grid, on the thesis' datasets.

use std::io::Write;
use std::path::{Path, PathBuf};

use privq_core::Epsilon;

use super::svg::{Series, line_chart};
use privq_host::accountant::Accountant;
use privq_host::central::mwem::{
    BaselineFitOptions, Improvements, MwemConfig, MwemError, OutputRule, Reiterate, barak_baseline,
    exact_fit, mwem, optimal_rounds,
};
use privq_host::data::{DataError, Dataset, MemoryCap, kl};
use privq_host::query::Workload;
use privq_host::seeded_rng;
use rayon::prelude::*;

/// The protocol's settings.
#[derive(Debug, Clone)]
pub struct Protocol {
    /// Where `mildew.csv`, `czech.csv`, `rochdale.csv`, `nltcs.csv` live.
    pub data_dir: PathBuf,
    /// Where SVG plots and the CSV of results go.
    pub out_dir: PathBuf,
    /// The ε grid (the thesis' §5.3 figures list none; privq's default is 0.01 … 2).
    pub epsilons: Vec<Epsilon>,
    /// Runs per point on the small datasets (thesis: 100).
    pub runs_small: usize,
    /// Runs per point on NLTCS (thesis: 10).
    pub runs_nltcs: usize,
    /// Which datasets (names without `.csv`).
    pub datasets: Vec<String>,
    /// Base seed; every run's seed is derived from it.
    pub seed: u64,
    /// Re-iteration passes of optimized MWEM per round (the NLTCS curves
    /// `MWEM T=20/30/40` use fixed T, clipped steps, re-iteration and the
    /// average-then-fit output, without the noisy-histogram initialization, which
    /// the informativeness gate would skip on N = 2^16 anyway).
    pub reiterate_passes: usize,
    /// Re-iteration re-uses only measurements whose public Laplace scale
    /// (normalized) is at most this ([`Reiterate::max_noise`]).
    pub max_noise: f64,
    /// Pass cap and tolerance of the Barak baseline's MW fit (and of the
    /// non-private reference fit).
    pub barak_fit: BaselineFitOptions,
    /// Which fits of the Barak baseline to run; each is its own curve and has
    /// its own acceptance checks.
    pub baselines: Vec<Baseline>,
}

/// How the "modified Barak et al." baseline reconstructs a distribution from
/// its noisy measurements. The thesis only says "multiplicative weights".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Baseline {
    /// Fit all measurements until the residuals stop changing (the plain reading of
    /// the baseline of thesis §5.3.1 and §5.3.3). Noise-unaware: it fits the noise too.
    Fit,
    /// Stop once the mean residual is at the noise level (the discrepancy
    /// principle, the stopping rule MWEM's own re-iteration uses).
    Discrepancy,
}

impl privq_host::choice::Named for Baseline {
    const WHAT: &'static str = "baseline fit";
    const ALL: &'static [Self] = &[Baseline::Fit, Baseline::Discrepancy];
    const NAMES: &'static [&'static str] = &["fit", "discrepancy"];

    fn name(self) -> &'static str {
        match self {
            Baseline::Fit => "fit",
            Baseline::Discrepancy => "discrepancy",
        }
    }
}

impl Baseline {
    /// The curve's label in tables and figures.
    pub fn label(self) -> &'static str {
        match self {
            Baseline::Fit => "Barak-MW",
            Baseline::Discrepancy => "Barak-MW disc.",
        }
    }
}

impl Protocol {
    /// The thesis protocol (§5.3) with privq's ε grid (the thesis lists none).
    pub fn thesis(data_dir: PathBuf, out_dir: PathBuf) -> Self {
        let epsilons = ["0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1", "2"]
            .iter()
            .filter_map(|s| s.parse().ok())
            .collect();
        Protocol {
            data_dir,
            out_dir,
            epsilons,
            runs_small: 100,
            runs_nltcs: 10,
            datasets: ["mildew", "czech", "rochdale", "nltcs"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            seed: 2011,
            reiterate_passes: 20,
            max_noise: 0.05,
            // The `Fit` baseline fits to convergence; the pass cap keeps
            // NLTCS (696 measurements × 2^16 cells) affordable.
            barak_fit: BaselineFitOptions {
                max_passes: 200,
                tolerance: 1e-9,
                discrepancy: false,
            },
            baselines: vec![Baseline::Fit, Baseline::Discrepancy],
        }
    }
}

/// Mean ± sd over runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Mean KL in nats.
    pub mean: f64,
    /// Sample standard deviation.
    pub sd: f64,
    /// Number of runs.
    pub runs: usize,
}

impl Summary {
    fn of(v: &[f64]) -> Summary {
        let n = v.len().max(1) as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = if v.len() > 1 {
            v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        Summary {
            mean,
            sd: var.sqrt(),
            runs: v.len(),
        }
    }

    /// Standard error of the mean.
    pub fn se(&self) -> f64 {
        self.sd / (self.runs.max(1) as f64).sqrt()
    }
}

/// One figure panel: a dataset and a workload degree, methods × ε.
#[derive(Debug, Clone)]
pub struct Panel {
    /// Dataset name.
    pub dataset: String,
    /// Parity workload degree w.
    pub degree: usize,
    /// Method names.
    pub methods: Vec<String>,
    /// The ε grid.
    pub epsilons: Vec<f64>,
    /// `results[method][eps]`.
    pub results: Vec<Vec<Summary>>,
    /// KL of the non-private maximum-entropy fit of the exact workload answers
    /// (the reference line).
    pub reference: f64,
}

impl Panel {
    fn get(&self, method: &str, eps_index: usize) -> Option<Summary> {
        let m = self.methods.iter().position(|x| x == method)?;
        self.results.get(m)?.get(eps_index).copied()
    }
}

/// One acceptance check: A1–A4, privq's reading of the thesis' claims in
/// §5.3.3–5.3.4 (listed in `docs/src/synthetic-data.md`).
#[derive(Debug, Clone)]
pub struct Check {
    /// A1 … A4.
    pub id: &'static str,
    /// The baseline the check compares against (`None` for A1 and A4).
    pub baseline: Option<&'static str>,
    /// What was compared.
    pub description: String,
    /// Whether it held.
    pub passed: bool,
}

/// Everything the protocol produced.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The panels, in order.
    pub panels: Vec<Panel>,
    /// Acceptance checks.
    pub checks: Vec<Check>,
    /// Files written.
    pub files: Vec<PathBuf>,
}

/// Why the protocol stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExperimentError {
    /// Loading a dataset failed.
    #[error("{0}")]
    Data(#[from] DataError),
    /// A run failed.
    #[error("{0}")]
    Mwem(#[from] MwemError),
    /// Writing results failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A dataset the protocol asks for is absent (nothing was run).
    #[error("dataset {name} was asked for but {} is absent", .path.display())]
    MissingDataset {
        /// The dataset's name.
        name: String,
        /// Where it was looked for.
        path: PathBuf,
    },
}

/// Progress observer: `(what, done, total)`.
pub type Observer<'a> = &'a mut dyn FnMut(&str, usize, usize);

#[derive(Clone, Copy)]
enum Method {
    Barak(Baseline),
    Plain,
    Optimized,
    FixedT(usize),
}

impl Method {
    fn name(self) -> String {
        match self {
            Method::Barak(b) => b.label().into(),
            Method::Plain => "MWEM".into(),
            Method::Optimized => "MWEM+opt".into(),
            Method::FixedT(t) => format!("MWEM T={t}"),
        }
    }
}

/// Runs the protocol on the public benchmark datasets (binary, named by their
/// headers). A missing dataset is [`ExperimentError::MissingDataset`], before anything runs.
pub fn run(protocol: &Protocol, observe: Observer<'_>) -> Result<Report, ExperimentError> {
    let mut report = Report::default();
    let mut plans: Vec<(Dataset, usize, Vec<Method>, usize)> = Vec::new();
    for name in &protocol.datasets {
        let path = protocol.data_dir.join(format!("{name}.csv"));
        if !path.exists() {
            return Err(ExperimentError::MissingDataset {
                name: name.clone(),
                path,
            });
        }
    }
    for name in &protocol.datasets {
        let path = protocol.data_dir.join(format!("{name}.csv"));
        let ds = Dataset::binary_from_header(
            &path,
            &privq_host::data::shared_table(name),
            MemoryCap::default(),
        )?;
        let mut methods: Vec<Method> = protocol
            .baselines
            .iter()
            .map(|&b| Method::Barak(b))
            .collect();
        if name == "nltcs" {
            methods.extend([Method::FixedT(20), Method::FixedT(30), Method::FixedT(40)]);
            plans.push((ds.clone(), 2, methods.clone(), protocol.runs_nltcs));
            plans.push((ds, 3, methods, protocol.runs_nltcs));
        } else {
            methods.extend([Method::Plain, Method::Optimized]);
            plans.push((ds, 3, methods, protocol.runs_small));
        }
    }
    let total: usize = plans
        .iter()
        .map(|(_, _, m, r)| m.len() * r * protocol.epsilons.len())
        .sum();
    let mut done = 0;
    for (pi, (ds, degree, methods, runs)) in plans.iter().enumerate() {
        let panel = run_panel(
            protocol,
            pi as u64,
            ds,
            *degree,
            methods,
            *runs,
            &mut |label| {
                done += 1;
                observe(label, done, total);
            },
        )?;
        report.panels.push(panel);
    }
    report.checks = acceptance_checks(&report.panels, &protocol.epsilons);
    if !report.panels.is_empty() {
        std::fs::create_dir_all(&protocol.out_dir)?;
        for panel in &report.panels {
            let path = protocol
                .out_dir
                .join(format!("mwem-{}-w{}.svg", panel.dataset, panel.degree));
            std::fs::write(&path, plot(panel))?;
            report.files.push(path);
        }
        let csv_path = protocol.out_dir.join("mwem-results.csv");
        let mut f = std::fs::File::create(&csv_path)?;
        writeln!(f, "dataset,degree,method,epsilon,mean_kl,sd_kl,runs")?;
        for p in &report.panels {
            for (m, row) in p.methods.iter().zip(&p.results) {
                for (e, s) in p.epsilons.iter().zip(row) {
                    writeln!(
                        f,
                        "{},{},{},{},{},{},{}",
                        p.dataset, p.degree, m, e, s.mean, s.sd, s.runs
                    )?;
                }
            }
        }
        report.files.push(csv_path);
    }
    Ok(report)
}

fn run_panel(
    protocol: &Protocol,
    panel_id: u64,
    ds: &Dataset,
    degree: usize,
    methods: &[Method],
    runs: usize,
    tick: &mut dyn FnMut(&str),
) -> Result<Panel, ExperimentError> {
    let workload = Workload::parities(&ds.domain, degree)?;
    let truth = ds.counts.normalized()?;
    let reference = kl(
        truth.probabilities(),
        &exact_fit(&ds.counts, &workload, protocol.barak_fit)?,
    );
    let label = format!("{} w={degree}", ds.name);
    // Every (method, ε, run) is independent and seeded from its coordinates, so
    // the runs go to all cores and the results do not depend on the scheduling.
    let jobs: Vec<(usize, usize, usize)> = (0..methods.len())
        .flat_map(|m| {
            (0..protocol.epsilons.len()).flat_map(move |e| (0..runs).map(move |r| (m, e, r)))
        })
        .collect();
    let one = |&(m, ei, r): &(usize, usize, usize)| -> Result<f64, ExperimentError> {
        let eps = protocol.epsilons[ei];
        // Common random numbers: every method sees the same seed for a given
        // (ε, run), so the comparisons between methods are paired.
        let seed = mix(protocol.seed, panel_id, 0, ei as u64, r as u64);
        let out = run_method(
            protocol,
            ds,
            &workload,
            methods[m],
            eps,
            &mut seeded_rng(seed),
        )?;
        Ok(kl(truth.probabilities(), &out.distribution))
    };
    let kls: Vec<f64> = std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let worker = scope.spawn(move || {
            jobs.par_iter()
                .map_with(tx, |tx, job| {
                    let r = one(job);
                    // The receiver only stops listening when the panel is done.
                    let _ = tx.send(());
                    r
                })
                .collect::<Result<Vec<f64>, ExperimentError>>()
        });
        for () in rx {
            tick(&label);
        }
        worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })?;
    let results = kls
        .chunks(runs.max(1))
        .map(Summary::of)
        .collect::<Vec<_>>()
        .chunks(protocol.epsilons.len().max(1))
        .map(<[Summary]>::to_vec)
        .collect();
    Ok(Panel {
        dataset: ds.name.clone(),
        degree,
        methods: methods.iter().map(|m| m.name()).collect(),
        epsilons: protocol.epsilons.iter().map(|e| e.to_f64()).collect(),
        results,
        reference,
    })
}

/// One run of one method at one ε.
fn run_method(
    protocol: &Protocol,
    ds: &Dataset,
    workload: &Workload,
    method: Method,
    eps: Epsilon,
    rng: &mut rand_chacha::ChaCha12Rng,
) -> Result<privq_host::central::mwem::MwemOutput, MwemError> {
    let n = ds.counts.total() as f64;
    let (t_star, _) = optimal_rounds(
        eps.to_f64(),
        n,
        ds.counts.len() as f64,
        workload.len() as f64,
    );
    let t = t_star.round().clamp(5.0, 50.0) as usize;
    let reiterate = Reiterate {
        passes: protocol.reiterate_passes,
        tolerance: 1e-9,
        max_noise: protocol.max_noise,
        discrepancy: true,
    };
    // Each run is one release with its own budget ε.
    let mut accountant = Accountant::pure(eps);
    match method {
        Method::Barak(b) => {
            let fit = BaselineFitOptions {
                discrepancy: b == Baseline::Discrepancy,
                ..protocol.barak_fit
            };
            barak_baseline(&ds.counts, workload, eps, fit, &mut accountant, rng)
        }
        Method::Plain => mwem(
            &ds.counts,
            workload,
            &MwemConfig::unoptimized(eps, t)?,
            &mut accountant,
            rng,
        ),
        Method::Optimized => {
            let mut c = MwemConfig::optimized(eps, t)?;
            c.improvements.reiterate = Some(reiterate);
            mwem(&ds.counts, workload, &c, &mut accountant, rng)
        }
        Method::FixedT(t) => {
            let c = MwemConfig {
                improvements: Improvements {
                    reiterate: Some(reiterate),
                    noisy_init: None,
                    init_policy: Default::default(),
                    adaptive: false,
                    adaptive_max_noise: 0.2,
                },
                output: OutputRule::AverageThenFit,
                clip: true,
                ..MwemConfig::unoptimized(eps, t)?
            };
            mwem(&ds.counts, workload, &c, &mut accountant, rng)
        }
    }
}

/// SplitMix64-style mixing of the run coordinates into one seed.
fn mix(base: u64, a: u64, b: u64, c: u64, d: u64) -> u64 {
    let mut z = base;
    for v in [a, b, c, d] {
        z = z.wrapping_add(v.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
    }
    z
}

/// The checks A1–A4 (`docs/src/synthetic-data.md`) on the panels that were run. A2 and A3 are checked
/// against every baseline fit in the panels.
pub fn acceptance_checks(panels: &[Panel], epsilons: &[Epsilon]) -> Vec<Check> {
    let eps: Vec<f64> = epsilons.iter().map(|e| e.to_f64()).collect();
    let mut checks = Vec::new();
    for p in panels.iter().filter(|p| p.dataset != "nltcs") {
        monotone_checks(p, &eps, &mut checks);
        ordering_checks(p, &eps, &mut checks);
    }
    for p in panels.iter().filter(|p| p.dataset == "nltcs") {
        nltcs_checks(p, &eps, &mut checks);
    }
    checks
}

/// The baselines' labels, as A2 and A3 name them.
fn baseline_labels() -> [&'static str; 2] {
    [Baseline::Fit, Baseline::Discrepancy].map(Baseline::label)
}

/// A1: every method's mean KL is non-increasing in ε, within 2 standard errors.
fn monotone_checks(p: &Panel, eps: &[f64], checks: &mut Vec<Check>) {
    for (m, row) in p.methods.iter().zip(&p.results) {
        let mut ok = true;
        let mut worst = String::new();
        for (i, w) in row.windows(2).enumerate() {
            let slack = 2.0 * (w[0].se().powi(2) + w[1].se().powi(2)).sqrt();
            if w[1].mean > w[0].mean + slack {
                ok = false;
                worst = format!(" (rises at eps {} -> {})", eps[i], eps[i + 1]);
            }
        }
        checks.push(Check {
            id: "A1",
            baseline: None,
            description: format!(
                "{} {m}: mean KL non-increasing in eps within 2 SE{worst}",
                p.dataset
            ),
            passed: ok,
        });
    }
}

/// A2: at ε ≤ 0.5, optimized MWEM ≤ MWEM ≤ each baseline.
fn ordering_checks(p: &Panel, eps: &[f64], checks: &mut Vec<Check>) {
    for base in baseline_labels() {
        for (i, &e) in eps.iter().enumerate().filter(|&(_, &e)| e <= 0.5) {
            if let (Some(o), Some(u), Some(b)) =
                (p.get("MWEM+opt", i), p.get("MWEM", i), p.get(base, i))
            {
                checks.push(Check {
                    id: "A2",
                    baseline: Some(base),
                    description: format!(
                        "{} w=3 eps {e}: opt {:.4} <= unopt {:.4} <= {base} {:.4}",
                        p.dataset, o.mean, u.mean, b.mean
                    ),
                    passed: o.mean <= u.mean && u.mean <= b.mean,
                });
            }
        }
    }
}

/// A3 (MWEM with T = 20, 30, 40 against each baseline on NLTCS) and, at the
/// largest ε, A4 (more rounds fit better).
fn nltcs_checks(p: &Panel, eps: &[f64], checks: &mut Vec<Check>) {
    for (i, &e) in eps.iter().enumerate() {
        let (Some(t20), Some(t30), Some(t40)) = (
            p.get("MWEM T=20", i),
            p.get("MWEM T=30", i),
            p.get("MWEM T=40", i),
        ) else {
            continue;
        };
        let best = t20.mean.min(t30.mean).min(t40.mean);
        for base in baseline_labels() {
            let Some(b) = p.get(base, i) else { continue };
            if let Some((description, passed)) =
                nltcs_comparison(p.degree, e, t40.mean, best, base, b.mean)
            {
                checks.push(Check {
                    id: "A3",
                    baseline: Some(base),
                    description,
                    passed,
                });
            }
        }
        if i + 1 == eps.len() {
            checks.push(Check {
                id: "A4",
                baseline: None,
                description: format!(
                    "nltcs w={} eps {e}: T=40 {:.4} <= T=30 {:.4} <= T=20 {:.4}",
                    p.degree, t40.mean, t30.mean, t20.mean
                ),
                passed: t40.mean <= t30.mean && t30.mean <= t20.mean,
            });
        }
    }
}

/// A3 at degree `w` and ε `e`, given MWEM's T = 40 and best mean KL and the
/// baseline's: the description and the verdict (`None` where A3 says nothing).
fn nltcs_comparison(
    w: usize,
    e: f64,
    t40: f64,
    best: f64,
    base: &str,
    b: f64,
) -> Option<(String, bool)> {
    if w == 3 && e <= 0.5 {
        Some((
            format!("nltcs w=3 eps {e}: MWEM T=40 {t40:.4} < {base} {b:.4}"),
            t40 < b,
        ))
    } else if w == 2 && e >= 0.1 {
        Some((
            format!("nltcs w=2 eps {e}: {base} {b:.4} within 10% of best MWEM {best:.4}"),
            b <= 1.1 * best,
        ))
    } else if w == 2 && e <= 0.05 {
        Some((
            format!("nltcs w=2 eps {e}: best MWEM {best:.4} < {base} {b:.4}"),
            best < b,
        ))
    } else {
        None
    }
}

/// The SVG figure of a panel (like Figs. 5.2–5.3: red dashed Barak, green
/// dot-dashed MWEM, blue solid optimized MWEM / T = 20, 30, 40).
pub fn plot(panel: &Panel) -> String {
    let style = |m: &str| -> (&'static str, &'static str) {
        match m {
            "Barak-MW" => ("#d62728", "8 4"),
            "Barak-MW disc." => ("#ff7f0e", "3 3"),
            "MWEM" => ("#2ca02c", "8 3 2 3"),
            "MWEM+opt" => ("#1f77b4", ""),
            "MWEM T=20" => ("#9ecae1", ""),
            "MWEM T=30" => ("#4292c6", ""),
            _ => ("#08306b", ""),
        }
    };
    let series: Vec<Series> = panel
        .methods
        .iter()
        .zip(&panel.results)
        .map(|(m, row)| {
            let (color, dash) = style(m);
            Series {
                label: m.clone(),
                color,
                dash,
                points: panel
                    .epsilons
                    .iter()
                    .zip(row)
                    .map(|(&e, s)| (e, s.mean, s.sd))
                    .collect(),
            }
        })
        .chain(std::iter::once(Series {
            label: "non-private fit".into(),
            color: "#000000",
            dash: "",
            points: panel
                .epsilons
                .iter()
                .map(|&e| (e, panel.reference, 0.0))
                .collect(),
        }))
        .collect();
    let runs = panel
        .results
        .first()
        .and_then(|r| r.first())
        .map_or(0, |s| s.runs);
    line_chart(
        &format!(
            "{} (degree-{} parities, {} runs, ±1 sd)",
            panel.dataset, panel.degree, runs
        ),
        "epsilon (pure DP)",
        "KL(true || synthetic), nats",
        &series,
    )
}

impl Report {
    /// Prints the mean ± sd tables and the checks.
    pub fn write_tables(&self, out: &mut dyn Write) -> std::io::Result<()> {
        for p in &self.panels {
            let runs = p
                .results
                .first()
                .and_then(|r| r.first())
                .map_or(0, |s| s.runs);
            writeln!(
                out,
                "\n{} — degree-{} parity workload, KL(true || synthetic) in nats, mean ± sd over {runs} runs",
                p.dataset, p.degree
            )?;
            write!(out, "{:>8}", "eps")?;
            for m in &p.methods {
                write!(out, " {m:>21}")?;
            }
            writeln!(out)?;
            for (i, e) in p.epsilons.iter().enumerate() {
                write!(out, "{e:>8}")?;
                for row in &p.results {
                    let s = row[i];
                    write!(out, " {:>21}", format!("{:.4} ± {:.4}", s.mean, s.sd))?;
                }
                writeln!(out)?;
            }
            writeln!(
                out,
                "  non-private maximum-entropy fit of the exact degree-{} answers: KL {:.4}",
                p.degree, p.reference
            )?;
        }
        if !self.checks.is_empty() {
            writeln!(
                out,
                "\nAcceptance checks (thesis Table 5.1 and the worked values of Ch. 5):"
            )?;
            for c in &self.checks {
                writeln!(
                    out,
                    "  [{}] {} {}",
                    if c.passed { "PASS" } else { "FAIL" },
                    c.id,
                    c.description
                )?;
            }
            let passed = self.checks.iter().filter(|c| c.passed).count();
            writeln!(out, "  {passed} of {} checks hold", self.checks.len())?;
            for base in [Baseline::Fit, Baseline::Discrepancy].map(Baseline::label) {
                let with = |c: &&Check| c.baseline.is_none_or(|b| b == base);
                let total = self.checks.iter().filter(with).count();
                let held = self.checks.iter().filter(with).filter(|c| c.passed).count();
                if self.checks.iter().any(|c| c.baseline == Some(base)) {
                    writeln!(out, "  with baseline {base}: {held} of {total} hold")?;
                }
            }
        }
        for f in &self.files {
            writeln!(out, "wrote {}", f.display())?;
        }
        Ok(())
    }
}

/// The default data directory: `../shared/data` relative to the repository root.
pub fn default_data_dir() -> PathBuf {
    Path::new("..").join("shared").join("data")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(mean: f64) -> Summary {
        Summary {
            mean,
            sd: 0.0,
            runs: 10,
        }
    }

    #[test]
    fn checks_are_made_against_each_baseline() {
        let eps: Vec<Epsilon> = ["0.1", "1"].iter().map(|e| e.parse().unwrap()).collect();
        let panel = Panel {
            dataset: "czech".into(),
            degree: 3,
            methods: ["Barak-MW", "Barak-MW disc.", "MWEM", "MWEM+opt"]
                .map(String::from)
                .to_vec(),
            epsilons: vec![0.1, 1.0],
            results: [[9.0, 8.0], [0.5, 0.4], [0.6, 0.3], [0.2, 0.1]]
                .iter()
                .map(|r| r.iter().map(|&m| summary(m)).collect())
                .collect(),
            reference: 0.01,
        };
        let checks = acceptance_checks(std::slice::from_ref(&panel), &eps);
        let a2: Vec<&Check> = checks.iter().filter(|c| c.id == "A2").collect();
        // Only eps 0.1 is small; one A2 check per baseline.
        assert_eq!(a2.len(), 2);
        assert!(
            a2.iter()
                .any(|c| c.baseline == Some("Barak-MW") && c.passed)
        );
        assert!(
            a2.iter()
                .any(|c| c.baseline == Some("Barak-MW disc.") && !c.passed)
        );
        // A1 per method, all decreasing here.
        assert_eq!(
            checks.iter().filter(|c| c.id == "A1" && c.passed).count(),
            4
        );
        let svg = plot(&Panel {
            methods: vec!["Barak-MW".into()],
            results: vec![vec![summary(2.0), summary(1.0)]],
            ..panel
        });
        assert!(svg.contains("non-private fit"));
    }

    #[test]
    fn tiny_protocol_runs_and_checks() {
        let Some(dir) = privq_host::data::shared_data_dir("experiment smoke test") else {
            return;
        };
        let out = std::env::temp_dir().join(format!("privq-exp-{}", std::process::id()));
        let mut p = Protocol::thesis(dir, out.clone());
        // A dataset that was asked for but is absent fails the run before it starts.
        p.datasets = vec!["mildew".into(), "missing".into()];
        assert!(matches!(
            run(&p, &mut |_, _, _| {}),
            Err(ExperimentError::MissingDataset { name, .. }) if name == "missing"
        ));
        p.datasets = vec!["mildew".into()];
        p.runs_small = 3;
        p.epsilons = vec!["0.1".parse().unwrap(), "1".parse().unwrap()];
        p.reiterate_passes = 5;
        let mut ticks = 0;
        let report = run(&p, &mut |_, _, _| ticks += 1).unwrap();
        assert_eq!(ticks, 4 * 3 * 2);
        assert_eq!(report.panels.len(), 1);
        assert!(report.checks.iter().any(|c| c.id == "A1"));
        let mut text = Vec::new();
        report.write_tables(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("mildew") && text.contains("±"));
        assert!(out.join("mwem-mildew-w3.svg").exists());
        let _ = std::fs::remove_dir_all(out);
    }
}

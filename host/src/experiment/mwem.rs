//! The Chapter 5 protocol: KL(true ‖ synthetic) of MWEM, optimized MWEM and the
//! modified Barak et al. baseline over an ε grid, on the thesis' datasets.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use privq_core::Epsilon;

use super::svg::{Series, line_chart};
use crate::data::{DataError, Dataset, MemoryCap, kl};
use crate::mwem::{
    FitConfig, Improvements, MwemConfig, MwemError, OutputRule, Reiterate, barak_baseline, mwem,
    optimal_rounds,
};
use crate::query::Workload;
use crate::seeded_rng;

/// The small datasets of Fig. 5.2, run `runs_small` times each.
pub const SMALL_DATASETS: [&str; 3] = ["mildew", "czech", "rochdale"];

/// The protocol's settings.
#[derive(Debug, Clone)]
pub struct Protocol {
    /// Where `mildew.csv`, `czech.csv`, `rochdale.csv`, `nltcs.csv` live.
    pub data_dir: PathBuf,
    /// Where SVG plots and the CSV of results go.
    pub out_dir: PathBuf,
    /// The ε grid (spec §4.9 proposes 0.01 … 2).
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
    /// MW fit of the Barak baseline.
    pub barak_fit: FitConfig,
}

impl Protocol {
    /// The thesis protocol with the spec's ε grid.
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
            // The spec's baseline fits to convergence (§4.7); the pass cap keeps
            // NLTCS (696 measurements × 2^16 cells) affordable.
            barak_fit: FitConfig {
                max_passes: 200,
                tolerance: 1e-9,
                discrepancy: false,
            },
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
}

impl Panel {
    fn get(&self, method: &str, eps_index: usize) -> Option<Summary> {
        let m = self.methods.iter().position(|x| x == method)?;
        self.results.get(m)?.get(eps_index).copied()
    }
}

/// One acceptance check of spec §4.10.
#[derive(Debug, Clone)]
pub struct Check {
    /// A1 … A4.
    pub id: &'static str,
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
    /// Datasets skipped, with the reason.
    pub skipped: Vec<String>,
    /// Files written.
    pub files: Vec<PathBuf>,
}

/// Why the protocol stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum ExperimentError {
    /// Loading a dataset failed.
    Data(DataError),
    /// A run failed.
    Mwem(MwemError),
    /// Writing results failed.
    Io(std::io::Error),
}

impl fmt::Display for ExperimentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExperimentError::Data(e) => write!(f, "{e}"),
            ExperimentError::Mwem(e) => write!(f, "{e}"),
            ExperimentError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ExperimentError {}

impl From<DataError> for ExperimentError {
    fn from(e: DataError) -> Self {
        ExperimentError::Data(e)
    }
}

impl From<MwemError> for ExperimentError {
    fn from(e: MwemError) -> Self {
        ExperimentError::Mwem(e)
    }
}

impl From<std::io::Error> for ExperimentError {
    fn from(e: std::io::Error) -> Self {
        ExperimentError::Io(e)
    }
}

/// Progress observer: `(what, done, total)`.
pub type Observer<'a> = &'a mut dyn FnMut(&str, usize, usize);

#[derive(Clone, Copy)]
enum Method {
    Barak,
    Plain,
    Optimized,
    FixedT(usize),
}

impl Method {
    fn name(self) -> String {
        match self {
            Method::Barak => "Barak-MW".into(),
            Method::Plain => "MWEM".into(),
            Method::Optimized => "MWEM+opt".into(),
            Method::FixedT(t) => format!("MWEM T={t}"),
        }
    }
}

/// Runs the protocol. Missing datasets are skipped and listed in the report.
pub fn run(protocol: &Protocol, observe: Observer<'_>) -> Result<Report, ExperimentError> {
    let mut report = Report::default();
    let mut plans: Vec<(Dataset, usize, Vec<Method>, usize)> = Vec::new();
    for name in &protocol.datasets {
        let path = protocol.data_dir.join(format!("{name}.csv"));
        if !path.exists() {
            report
                .skipped
                .push(format!("{name}: {} is absent", path.display()));
            continue;
        }
        let ds = Dataset::from_csv_path(&path, MemoryCap::default())?;
        if name == "nltcs" {
            let methods = vec![
                Method::Barak,
                Method::FixedT(20),
                Method::FixedT(30),
                Method::FixedT(40),
            ];
            plans.push((ds.clone(), 2, methods.clone(), protocol.runs_nltcs));
            plans.push((ds, 3, methods, protocol.runs_nltcs));
        } else {
            let methods = vec![Method::Barak, Method::Plain, Method::Optimized];
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
    let n = ds.counts.total() as f64;
    let mut results = Vec::new();
    let label = format!("{} w={degree}", ds.name);
    for &method in methods {
        let mut row = Vec::new();
        for (ei, &eps) in protocol.epsilons.iter().enumerate() {
            let (t_star, _) = optimal_rounds(
                eps.to_f64(),
                n,
                ds.counts.len() as f64,
                workload.len() as f64,
            );
            let t = t_star.round().clamp(5.0, 50.0) as usize;
            let mut kls = Vec::with_capacity(runs);
            for r in 0..runs {
                // Common random numbers: every method sees the same seed for a given
                // (ε, run), so the comparisons between methods are paired.
                let seed = mix(protocol.seed, panel_id, 0, ei as u64, r as u64);
                let mut rng = seeded_rng(seed);
                let out = match method {
                    Method::Barak => {
                        barak_baseline(&ds.counts, &workload, eps, protocol.barak_fit, &mut rng)?
                    }
                    Method::Plain => mwem(
                        &ds.counts,
                        &workload,
                        &MwemConfig::unoptimized(eps, t)?,
                        &mut rng,
                    )?,
                    Method::Optimized => {
                        let mut c = MwemConfig::optimized(eps, t)?;
                        c.improvements.reiterate = Some(Reiterate {
                            passes: protocol.reiterate_passes,
                            tolerance: 1e-9,
                            max_noise: 0.05,
                            discrepancy: true,
                        });
                        mwem(&ds.counts, &workload, &c, &mut rng)?
                    }
                    Method::FixedT(t) => {
                        let c = MwemConfig {
                            improvements: Improvements {
                                reiterate: Some(Reiterate {
                                    passes: protocol.reiterate_passes,
                                    tolerance: 1e-9,
                                    max_noise: 0.05,
                                    discrepancy: true,
                                }),
                                noisy_init: None,
                                init_policy: Default::default(),
                                adaptive: false,
                                adaptive_max_noise: 0.2,
                            },
                            output: OutputRule::AverageThenFit,
                            clip: true,
                            ..MwemConfig::unoptimized(eps, t)?
                        };
                        mwem(&ds.counts, &workload, &c, &mut rng)?
                    }
                };
                kls.push(kl(truth.probabilities(), &out.distribution));
                tick(&label);
            }
            row.push(Summary::of(&kls));
        }
        results.push(row);
    }
    Ok(Panel {
        dataset: ds.name.clone(),
        degree,
        methods: methods.iter().map(|m| m.name()).collect(),
        epsilons: protocol.epsilons.iter().map(|e| e.to_f64()).collect(),
        results,
    })
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

/// Spec §4.10 A1–A4 on the panels that were run.
pub fn acceptance_checks(panels: &[Panel], epsilons: &[Epsilon]) -> Vec<Check> {
    let eps: Vec<f64> = epsilons.iter().map(|e| e.to_f64()).collect();
    let mut checks = Vec::new();
    for p in panels.iter().filter(|p| p.dataset != "nltcs") {
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
                description: format!(
                    "{} {m}: mean KL non-increasing in eps within 2 SE{worst}",
                    p.dataset
                ),
                passed: ok,
            });
        }
        for (i, &e) in eps.iter().enumerate().filter(|&(_, &e)| e <= 0.5) {
            if let (Some(o), Some(u), Some(b)) =
                (p.get("MWEM+opt", i), p.get("MWEM", i), p.get("Barak-MW", i))
            {
                checks.push(Check {
                    id: "A2",
                    description: format!(
                        "{} w=3 eps {e}: opt {:.4} <= unopt {:.4} <= Barak {:.4}",
                        p.dataset, o.mean, u.mean, b.mean
                    ),
                    passed: o.mean <= u.mean && u.mean <= b.mean,
                });
            }
        }
    }
    for p in panels.iter().filter(|p| p.dataset == "nltcs") {
        for (i, &e) in eps.iter().enumerate() {
            let (Some(b), Some(t20), Some(t30), Some(t40)) = (
                p.get("Barak-MW", i),
                p.get("MWEM T=20", i),
                p.get("MWEM T=30", i),
                p.get("MWEM T=40", i),
            ) else {
                continue;
            };
            let best = t20.mean.min(t30.mean).min(t40.mean);
            if p.degree == 3 && e <= 0.5 {
                checks.push(Check {
                    id: "A3",
                    description: format!(
                        "nltcs w=3 eps {e}: MWEM T=40 {:.4} < Barak {:.4}",
                        t40.mean, b.mean
                    ),
                    passed: t40.mean < b.mean,
                });
            }
            if p.degree == 2 && e >= 0.1 {
                checks.push(Check {
                    id: "A3",
                    description: format!(
                        "nltcs w=2 eps {e}: Barak {:.4} within 10% of best MWEM {:.4}",
                        b.mean, best
                    ),
                    passed: b.mean <= 1.1 * best,
                });
            }
            if p.degree == 2 && e <= 0.05 {
                checks.push(Check {
                    id: "A3",
                    description: format!(
                        "nltcs w=2 eps {e}: best MWEM {:.4} < Barak {:.4}",
                        best, b.mean
                    ),
                    passed: best < b.mean,
                });
            }
            if i + 1 == eps.len() {
                checks.push(Check {
                    id: "A4",
                    description: format!(
                        "nltcs w={} eps {e}: T=40 {:.4} <= T=30 {:.4} <= T=20 {:.4}",
                        p.degree, t40.mean, t30.mean, t20.mean
                    ),
                    passed: t40.mean <= t30.mean && t30.mean <= t20.mean,
                });
            }
        }
    }
    checks
}

/// The SVG figure of a panel (like Figs. 5.2–5.3: red dashed Barak, green
/// dot-dashed MWEM, blue solid optimized MWEM / T = 20, 30, 40).
pub fn plot(panel: &Panel) -> String {
    let style = |m: &str| -> (&'static str, &'static str) {
        match m {
            "Barak-MW" => ("#d62728", "8 4"),
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
    /// Prints the mean ± sd tables, the checks and the skipped datasets.
    pub fn write_tables(&self, out: &mut dyn Write) -> std::io::Result<()> {
        for s in &self.skipped {
            writeln!(out, "SKIPPED {s}")?;
        }
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
        }
        if !self.checks.is_empty() {
            writeln!(out, "\nAcceptance checks (spec §4.10):")?;
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

    #[test]
    fn tiny_protocol_runs_and_checks() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data");
        if !dir.join("mildew.csv").exists() {
            eprintln!(
                "SKIPPED: {} is absent (experiment smoke test)",
                dir.display()
            );
            return;
        }
        let out = std::env::temp_dir().join(format!("privq-exp-{}", std::process::id()));
        let mut p = Protocol::thesis(dir, out.clone());
        p.datasets = vec!["mildew".into(), "missing".into()];
        p.runs_small = 3;
        p.epsilons = vec!["0.1".parse().unwrap(), "1".parse().unwrap()];
        p.reiterate_passes = 5;
        let mut ticks = 0;
        let report = run(&p, &mut |_, _, _| ticks += 1).unwrap();
        assert_eq!(ticks, 3 * 3 * 2);
        assert_eq!(report.skipped.len(), 1);
        assert_eq!(report.panels.len(), 1);
        assert!(report.checks.iter().any(|c| c.id == "A1"));
        let mut text = Vec::new();
        report.write_tables(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("mildew") && text.contains("±") && text.contains("SKIPPED missing"));
        assert!(out.join("mwem-mildew-w3.svg").exists());
        let _ = std::fs::remove_dir_all(out);
    }
}

//! `privq experiment conjunctions`: releasing monotone conjunctions on a binary
//! table (thesis Chapter 6) — Fig. 6.6 with the central and the local SQ oracle
//! against MWEM on the same budget and the same queries, and the SQ barrier
//! measured: queries asked and records needed against d, central vs local.
//!
//! **Accuracy (table 1).** Queries are conjunctions `c_S` with S drawn from a
//! product distribution: every attribute with probability 1/2 ("all
//! conjunctions"), or `w/d` for width about w (Lemma 6.4.3). Each release is
//! tuned to that distribution (the piece means of Fig. 6.6 depend on p) and
//! scored on fresh draws: the fraction within α and the mean absolute error.
//! Fig. 6.6 runs at the smallest ρ its oracle's tolerance supports (`ρ = 12τ`,
//! Lemma 6.3.8; τ from public n, k, ε, β), so with probability `1 − β` its
//! pieces are not noise-driven; at ρ ≥ 3 the decomposition is the single piece
//! ∅ and the release asks one query.
//! MWEM (Hardt–Ligett–McSherry, thesis Chapter 5) gets the same ε and the drawn
//! queries as its workload. "zero" answers 0 everywhere (a data-free baseline:
//! most conjunctions of a sparse table are rare).
//!
//! **The SQ barrier (table 2).** For the first d attributes: Fig. 6.6's budget
//! `k = cap·(d+2)` and the distinct queries its decomposition really asks (exact
//! oracle, theorem ρ), Fig. 6.7's `|C|` for conjunctions of width ≤ 3, and the n
//! each needs for its tolerance under the central oracle (Prop. 2.9.1) and the
//! local one ([`LocalSqOracle::required_devices`], partition strategy).
//!
//! **The local price, measured (table 3).** The root-mean-square error of the k
//! answers of one SQ run, central and local, at the table's n, and the n each
//! would need for an RMS error of 0.01 (central error falls like 1/n, local like
//! 1/√n), beside the ratio the tolerance formulas predict.

use std::error::Error;
use std::io::Write;

use privq_core::Epsilon;
use privq_core::rand_core::Rng;

use privq_host::accountant::Accountant;
use privq_host::central::mwem::{MwemConfig, mwem, optimal_rounds};
use privq_host::central::{SqOracle, VectorLaplace};
use privq_host::conjunctions::{
    CellQuery, Coverage, Decomposition, LocalStat, Memo, ReleaseConfig, ReleaseError, StatOracle,
    device_records, release_by_agnostic_learning, release_by_agnostic_learning_private,
    release_conjunctions, release_conjunctions_local, rho_for,
};
use privq_host::contract::{Mechanism, Neighbours};
use privq_host::data::{CountHistogram, MemoryCap};
use privq_host::ldp::sq::{LocalSqOracle, Strategy};
use privq_host::query::{Query, Workload};
use privq_host::seeded_rng;

type Failure = Box<dyn Error + Send + Sync>;

/// Which conjunctions are asked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum QueryDistribution {
    /// Every attribute in S with probability 1/2 (all conjunctions, uniformly).
    Half,
    /// Every attribute with probability `w/d` (width about w).
    Width(u32),
}

impl QueryDistribution {
    fn p(self, d: u32) -> f64 {
        match self {
            QueryDistribution::Half => 0.5,
            QueryDistribution::Width(w) => (f64::from(w) / f64::from(d)).min(1.0),
        }
    }

    fn label(self) -> String {
        match self {
            QueryDistribution::Half => "p=1/2".into(),
            QueryDistribution::Width(w) => format!("w={w}"),
        }
    }
}

/// The protocol's parameters.
#[derive(Debug, Clone)]
pub struct Config {
    /// Budgets ε (each release spends one ε; local: ε per device).
    pub epsilons: Vec<Epsilon>,
    /// The query distributions.
    pub distributions: Vec<QueryDistribution>,
    /// Conjunctions scored per run (also MWEM's workload).
    pub queries: usize,
    /// Runs per cell of the table.
    pub runs: usize,
    /// The error threshold α of the "within α" column.
    pub alpha: f64,
    /// β: the oracles' failure probability.
    pub beta: f64,
    /// Fig. 6.6's piece caps, one row each (the budget is `cap·(d+2)` queries).
    pub caps: Vec<usize>,
    /// The table replicated m times for each m here (n·m records with the same
    /// distribution): where Fig. 6.6 starts to work.
    pub scales: Vec<u64>,
    /// Attribute counts of the barrier table.
    pub barrier_dims: Vec<u32>,
    /// Base seed.
    pub seed: u64,
}

impl Config {
    /// ε ∈ {0.1, 1}; p = 1/2 and widths 2, 3, 4; 500 queries; 3 runs; α = 0.05;
    /// β = 0.1; caps 8, 64, 512; the table as is and ×100; barrier at d = 4, 8, 12, 16;
    /// seed 7.
    pub fn standard() -> Result<Self, privq_core::Error> {
        Ok(Config {
            epsilons: vec![Epsilon::new(1, 10)?, Epsilon::new(1, 1)?],
            distributions: vec![
                QueryDistribution::Half,
                QueryDistribution::Width(2),
                QueryDistribution::Width(3),
                QueryDistribution::Width(4),
            ],
            queries: 500,
            runs: 3,
            alpha: 0.05,
            beta: 0.1,
            caps: vec![8, 64, 512],
            scales: vec![1, 100],
            barrier_dims: vec![4, 8, 12, 16],
            seed: 7,
        })
    }
}

/// One line of the accuracy table (means over the runs).
#[derive(Debug, Clone, PartialEq)]
pub struct AccuracyRow {
    /// Records (the table replicated).
    pub n: u64,
    /// ε.
    pub epsilon: Epsilon,
    /// The query distribution.
    pub distribution: QueryDistribution,
    /// The method.
    pub method: String,
    /// ρ of the decomposition (Fig. 6.6 rows).
    pub rho: Option<f64>,
    /// Pieces (Fig. 6.6 rows, mean).
    pub pieces: Option<f64>,
    /// Runs whose decomposition stopped at the cap (Fig. 6.6 rows).
    pub truncated: Option<usize>,
    /// Fraction of the drawn conjunctions answered within α.
    pub within_alpha: f64,
    /// Mean absolute error.
    pub mae: f64,
    /// Runs refused before any charge (Fig. 6.7: the oracle's tolerance exceeds
    /// β/4 at this n); the means are over the other runs (NaN if none).
    pub refused: usize,
}

/// One line of the barrier table.
#[derive(Debug, Clone, PartialEq)]
pub struct BarrierRow {
    /// Attributes.
    pub d: u32,
    /// Pieces Fig. 6.6's decomposition needs (exact oracle, theorem ρ); `None`
    /// above 4096.
    pub pieces_66: Option<usize>,
    /// The distinct queries it asks (`None` above 4096 pieces): its budget
    /// `k = pieces·(d+2)` is what the tolerance needs.
    pub asked_66: Option<usize>,
    /// n for Fig. 6.6's tolerance ρ/12: central, local (∞ above 65 536 queries,
    /// the most one local run can ask; lower bounds when the pieces exceed the cap).
    pub n_66: (f64, f64),
    /// Fig. 6.7's `|C|` (conjunctions of width ≤ 3).
    pub class_67: usize,
    /// n for Fig. 6.7's tolerance β/4: central, local.
    pub n_67: (f64, f64),
}

/// What the protocol measured.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Table 1.
    pub accuracy: Vec<AccuracyRow>,
    /// Table 2.
    pub barrier: Vec<BarrierRow>,
}

/// `c_S` for every S at once (the superset sums of a distribution over the cells).
fn conjunction_table(probabilities: &[f64]) -> Vec<f64> {
    privq_host::conjunctions::superset_sums(probabilities)
}

/// `count` attribute sets, each attribute in with probability `p`.
fn draw_sets(d: u32, p: f64, count: usize, rng: &mut impl Rng) -> Vec<u64> {
    let threshold = (p * 4_294_967_296.0) as u64;
    (0..count)
        .map(|_| {
            (0..d).fold(0u64, |s, i| {
                s | (u64::from(u64::from(rng.next_u32()) < threshold) << i)
            })
        })
        .collect()
}

/// The histogram of the first `d` attributes (the low bits of the cell index).
fn low_attributes(data: &CountHistogram, d: u32) -> Result<CountHistogram, Failure> {
    let mask = (1usize << d) - 1;
    let mut out = vec![0u64; 1 << d];
    for (u, &c) in data.counts().iter().enumerate() {
        out[u & mask] += c;
    }
    Ok(CountHistogram::from_counts(out, MemoryCap::default())?)
}

/// Runs the protocol on `data` (a binary universe of at most 2^16 cells), writing
/// the tables to `out` and progress to `progress`.
pub fn run(
    data: &CountHistogram,
    config: &Config,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(&str),
) -> Result<Report, Failure> {
    let cells = data.len();
    if !cells.is_power_of_two() || !(2..=1 << 16).contains(&cells) {
        return Err(
            format!("{cells} cells: a binary table of 1 to 16 attributes is needed").into(),
        );
    }
    if config.runs == 0 || config.queries == 0 || config.caps.is_empty() || config.caps.contains(&0)
    {
        return Err("runs, queries and every cap must be at least 1".into());
    }
    if !(config.alpha > 0.0 && config.beta > 0.0 && config.beta < 1.0) {
        return Err("alpha must be positive and beta in (0, 1)".into());
    }
    if config.scales.is_empty() || config.scales.contains(&0) {
        return Err("every scale must be at least 1".into());
    }
    let d = cells.trailing_zeros();
    let truth = conjunction_table(data.normalized()?.probabilities());
    let mut report = Report::default();
    writeln!(
        out,
        "Releasing conjunctions (thesis Fig. 6.6) on {d} binary attributes, n = {} (and the table \
         replicated: n x {:?}): {} queries per run, {} runs, alpha = {}, beta = {}, caps {:?}, seed {}",
        data.total(),
        config.scales,
        config.queries,
        config.runs,
        config.alpha,
        config.beta,
        config.caps,
        config.seed
    )?;
    writeln!(
        out,
        "(an evaluation, not a release: the errors use the exact data, and every run spends its ε again; \
         6.6 x/c = Fig. 6.6 with the x oracle and piece cap c at rho = 12 x its tolerance; \
         * = some runs stopped at the cap)"
    )?;
    writeln!(
        out,
        "{:>9} {:>5} {:>6} {:<17} {:>8} {:>9} {:>9} {:>8}",
        "n", "eps", "S ~", "method", "rho", "pieces", "within α", "MAE"
    )?;
    for &m in &config.scales {
        let counts = data
            .counts()
            .iter()
            .map(|&c| c.checked_mul(m))
            .collect::<Option<Vec<u64>>>()
            .ok_or("the scaled table overflows")?;
        let scaled = CountHistogram::from_counts(counts, MemoryCap::default())?;
        accuracy(&scaled, &truth, config, out, progress, &mut report)?;
    }
    barrier(data, config, out, &mut report)?;
    local_price(data, config, out, progress)?;
    Ok(report)
}

/// A row's method in table 1.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Method {
    /// Fig. 6.6 with the central oracle, at this piece cap.
    Central(usize),
    /// Fig. 6.6 with the local oracle (partition), at this piece cap.
    Local(usize),
    /// Fig. 6.7 (central oracle) over conjunctions of width ≤ 3.
    Agnostic,
    /// Fig. 6.7 with the local oracle.
    AgnosticLocal,
    Mwem,
    Zero,
}

impl Method {
    fn label(self) -> String {
        match self {
            Method::Central(cap) => format!("6.6 central/{cap}"),
            Method::Local(cap) => format!("6.6 local/{cap}"),
            Method::Agnostic => "6.7 central".into(),
            Method::AgnosticLocal => "6.7 local".into(),
            Method::Mwem => "MWEM".into(),
            Method::Zero => "zero".into(),
        }
    }
}

/// Table 1 on one (scaled) table.
fn accuracy(
    data: &CountHistogram,
    truth: &[f64],
    config: &Config,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(&str),
    report: &mut Report,
) -> Result<(), Failure> {
    let cells = data.len();
    let d = cells.trailing_zeros();
    let n = data.total();
    let mut methods: Vec<Method> = config
        .caps
        .iter()
        .flat_map(|&c| [Method::Central(c), Method::Local(c)])
        .collect();
    methods.extend([
        Method::Agnostic,
        Method::AgnosticLocal,
        Method::Mwem,
        Method::Zero,
    ]);
    for (ei, &epsilon) in config.epsilons.iter().enumerate() {
        for (di, &dist) in config.distributions.iter().enumerate() {
            progress(&format!("n = {n}, eps {epsilon}, {}", dist.label()));
            let p = dist.p(d);
            // Per method: [within, abs, pieces, truncated runs], and ρ.
            let mut sums = vec![[0f64; 4]; methods.len()];
            let mut rhos = vec![None; methods.len()];
            let mut refused = vec![0usize; methods.len()];
            for r in 0..config.runs {
                let seed = config.seed ^ ((ei as u64) << 40) ^ ((di as u64) << 32) ^ (r as u64);
                let sets = draw_sets(d, p, config.queries, &mut seeded_rng(seed));
                for (m, &method) in methods.iter().enumerate() {
                    let Some((answers, pieces, truncated, rho)) =
                        run_method(method, data, &sets, p, epsilon, config, seed)?
                    else {
                        refused[m] += 1;
                        continue;
                    };
                    for (&s, a) in sets.iter().zip(&answers) {
                        let err = (a - truth[s as usize]).abs();
                        sums[m][0] += f64::from(u8::from(err <= config.alpha));
                        sums[m][1] += err;
                    }
                    sums[m][2] += pieces;
                    sums[m][3] += f64::from(u8::from(truncated));
                    rhos[m] = rho;
                }
            }
            for (m, &method) in methods.iter().enumerate() {
                let [within, abs, pieces, truncated] = sums[m];
                let runs = (config.runs - refused[m]) as f64;
                let total = runs * config.queries as f64;
                let fig66 = matches!(method, Method::Central(_) | Method::Local(_));
                let row = AccuracyRow {
                    n,
                    epsilon,
                    distribution: dist,
                    method: method.label(),
                    rho: rhos[m],
                    pieces: fig66.then_some(pieces / runs),
                    truncated: fig66.then_some(truncated as usize),
                    within_alpha: within / total,
                    mae: abs / total,
                    refused: refused[m],
                };
                writeln!(
                    out,
                    "{:>9} {:>5} {:>6} {:<17} {:>8} {:>9} {:>9.3} {:>8.4}",
                    n,
                    epsilon.to_string(),
                    dist.label(),
                    row.method,
                    row.rho.map_or("-".into(), |r| format!("{r:.3}")),
                    match (row.pieces, row.truncated) {
                        (Some(p), Some(t)) if t > 0 => format!("{p:.1}{}", "*"),
                        (Some(p), _) => format!("{p:.1}"),
                        _ => "-".into(),
                    },
                    row.within_alpha,
                    row.mae
                )?;
                if row.refused > 0 {
                    writeln!(
                        out,
                        "{:>9} {:>5} {:>6} {:<17} refused in {} of {} runs: tolerance > beta/4 at this n",
                        "", "", "", row.method, row.refused, config.runs
                    )?;
                }
                report.accuracy.push(row);
            }
        }
    }
    Ok(())
}

/// A release's answers to the drawn sets, its pieces, whether it stopped at the
/// cap, and its ρ (`None` from [`run_method`]: refused before any charge).
type Outcome = (Vec<f64>, f64, bool, Option<f64>);

/// One release by `method` on `data`, tuned to query sets drawn with probability
/// `p`: its answers to `sets`, its pieces, whether it stopped at the cap, and ρ.
fn run_method(
    method: Method,
    data: &CountHistogram,
    sets: &[u64],
    p: f64,
    epsilon: Epsilon,
    config: &Config,
    seed: u64,
) -> Result<Option<Outcome>, Failure> {
    let cells = data.len();
    let d = cells.trailing_zeros();
    let n = data.total();
    let release = |cap: usize| ReleaseConfig {
        alpha: config.alpha,
        beta: config.beta,
        p: vec![p; d as usize],
        cap,
        rho: None,
        require_n: false,
    };
    match method {
        Method::Central(cap) => {
            // The smallest ρ the oracle's tolerance supports (Lemma 6.3.8).
            let mut config = release(cap);
            let rho = 12.0 * config.central_tolerance(cells, n, epsilon)?;
            config.rho = Some(rho);
            let mut budget = Accountant::pure(epsilon);
            let r = release_conjunctions(
                data,
                &config,
                epsilon,
                &mut budget,
                &mut seeded_rng(seed ^ 0x66),
            )?;
            let answers = sets.iter().map(|&s| r.conjunction(s)).collect();
            Ok(Some((
                answers,
                r.decomposition().len() as f64,
                r.truncated(),
                Some(rho),
            )))
        }
        Method::Local(cap) => {
            let mut config = release(cap);
            let k = config.query_budget(cells)?;
            let oracle = LocalSqOracle::new(epsilon, k, config.beta, Strategy::Partition)?;
            let rho = 12.0 * oracle.worst_tau(n);
            config.rho = Some(rho);
            // ρ ≥ 3 makes the decomposition trivial and the budget one query.
            let k = config.query_budget(cells)?;
            let oracle = LocalSqOracle::new(epsilon, k, config.beta, Strategy::Partition)?;
            let r = release_conjunctions_local(data, &config, &oracle, seed ^ 0x10ca1)?;
            let answers = sets.iter().map(|&s| r.conjunction(s)).collect();
            Ok(Some((
                answers,
                r.decomposition().len() as f64,
                r.truncated(),
                Some(rho),
            )))
        }
        Method::Mwem => {
            let workload = Workload::new(
                sets.iter()
                    .map(|&s| Query::BitPattern {
                        mask: s as usize,
                        pattern: s as usize,
                    })
                    .collect(),
                cells,
            )?;
            let (t, _) = optimal_rounds(
                epsilon.to_f64(),
                n as f64,
                cells as f64,
                workload.len() as f64,
            );
            let rounds = t.round().clamp(5.0, 50.0) as usize;
            let mut budget = Accountant::pure(epsilon);
            let mw = mwem(
                data,
                &workload,
                &MwemConfig::optimized(epsilon, rounds)?,
                &mut budget,
                &mut seeded_rng(seed ^ 0x3e3),
            )?;
            let synthetic = conjunction_table(&mw.distribution);
            let answers = sets.iter().map(|&s| synthetic[s as usize]).collect();
            Ok(Some((answers, 0.0, false, None)))
        }
        Method::Agnostic | Method::AgnosticLocal => {
            let class: Vec<Query> = (0..cells)
                .filter(|m| m.count_ones() <= 3)
                .map(|m| Query::BitPattern {
                    mask: m,
                    pattern: m,
                })
                .collect();
            let beta = AGNOSTIC_BETA;
            let released = if method == Method::Agnostic {
                let mut budget = Accountant::pure(epsilon);
                release_by_agnostic_learning_private(
                    data,
                    &class,
                    beta,
                    epsilon,
                    &mut budget,
                    &mut seeded_rng(seed ^ 0x67),
                )
            } else {
                let oracle =
                    LocalSqOracle::new(epsilon, class.len(), config.beta, Strategy::Partition)?;
                let records = device_records(data)?;
                let mut stat = LocalStat::new(&oracle, &records, class.len(), seed ^ 0x67)?;
                if stat.tolerance() > beta / 4.0 {
                    return Ok(None);
                }
                release_by_agnostic_learning(&class, &mut stat, cells, beta)
            };
            match released {
                Ok(r) => {
                    let table = conjunction_table(r.state.probabilities());
                    let answers = sets.iter().map(|&s| table[s as usize]).collect();
                    Ok(Some((answers, 0.0, false, None)))
                }
                Err(ReleaseError::TooFewRecords { .. }) => Ok(None),
                Err(e) => Err(e.into()),
            }
        }
        Method::Zero => Ok(Some((vec![0.0; sets.len()], 0.0, false, None))),
    }
}

/// Table 2: the SQ barrier against d.
fn barrier(
    data: &CountHistogram,
    config: &Config,
    out: &mut dyn Write,
    report: &mut Report,
) -> Result<(), Failure> {
    let full = data.len().trailing_zeros();
    let (alpha, beta, eps) = (0.3, config.beta, 1.0);
    let rho = rho_for(alpha, beta);
    writeln!(out)?;
    writeln!(
        out,
        "The SQ barrier (eps = 1, beta = {beta}): Fig. 6.6 at alpha = {alpha} (rho = {rho:.4}, \
         tolerance rho/12, budget pieces x (d+2)), Fig. 6.7 over conjunctions of width <= 3 (tolerance beta/4); \
         n needed for the tolerance, central (Prop. 2.9.1) and local (partition)"
    )?;
    writeln!(
        out,
        "{:>3} {:>7} {:>7} {:>11} {:>11} {:>8} {:>7} {:>11} {:>11} {:>8}",
        "d",
        "pieces",
        "asked",
        "n central",
        "n local",
        "ratio",
        "6.7 |C|",
        "n central",
        "n local",
        "ratio"
    )?;
    let epsilon = Epsilon::new(1, 1)?;
    for &d in &config.barrier_dims {
        if d == 0 || d > full {
            return Err(format!("barrier d = {d} must be in 1..={full}").into());
        }
        let low = low_attributes(data, d)?;
        // f(S) = 1 − c_S(D) is the coverage function of the negated records.
        let full_mask = (1u64 << d) - 1;
        let records: Vec<(u64, u64)> = low
            .counts()
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c > 0)
            .map(|(u, &c)| (!(u as u64) & full_mask, c))
            .collect();
        let mut f = Memo::new(Coverage::new(d, &records)?);
        let (pieces, asked) = match Decomposition::tolerant(&mut f, rho, BARRIER_CAP) {
            Ok(dec) => (Some(dec.len()), Some(f.calls() + dec.len())),
            Err(_) => (None, None),
        };
        // The budget the uncapped decomposition needs (pieces·(d+2)).
        let k66 = pieces.map_or(BARRIER_CAP, |p| p) * (d as usize + 2);
        let class: usize = (0..=3.min(d)).map(|w| binomial(d, w)).sum();
        let need = |k: usize, tau: f64| -> Result<(f64, f64), Failure> {
            let central = SqOracle::required_n(k, eps, tau, beta);
            // At most 65 536 queries fit the report format's query id.
            let local = LocalSqOracle::new(epsilon, k, beta, Strategy::Partition)
                .ok()
                .and_then(|o| o.required_devices(tau))
                .unwrap_or(f64::INFINITY);
            Ok((central, local))
        };
        let row = BarrierRow {
            d,
            pieces_66: pieces,
            asked_66: asked,
            n_66: need(k66, rho / 12.0)?,
            class_67: class,
            n_67: need(class, beta / 4.0)?,
        };
        writeln!(
            out,
            "{:>3} {:>7} {:>7} {:>11.3e} {:>11.3e} {:>8.1} {:>7} {:>11.3e} {:>11.3e} {:>8.1}",
            d,
            row.pieces_66
                .map_or(format!(">{BARRIER_CAP}"), |p| p.to_string()),
            row.asked_66.map_or("-".into(), |a| a.to_string()),
            row.n_66.0,
            row.n_66.1,
            row.n_66.1 / row.n_66.0,
            row.class_67,
            row.n_67.0,
            row.n_67.1,
            row.n_67.1 / row.n_67.0
        )?;
        report.barrier.push(row);
    }
    Ok(())
}

/// Table 3: one run of k width-≤2 conjunction queries through each oracle at the
/// table's n; RMS error, and the n each needs for RMS 0.01.
fn local_price(
    data: &CountHistogram,
    config: &Config,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(&str),
) -> Result<(), Failure> {
    let cells = data.len();
    let d = cells.trailing_zeros();
    let n = data.total();
    let truth = conjunction_table(data.normalized()?.probabilities());
    let queries: Vec<u64> = (0..d)
        .flat_map(|i| (i..d).map(move |j| (1u64 << i) | (1u64 << j)))
        .collect();
    let k = queries.len();
    let records = device_records(data)?;
    writeln!(out)?;
    writeln!(
        out,
        "The local price, measured: k = {k} conjunctions of width <= 2 asked of each oracle \
         at n = {n}; RMS error over {} runs, and the n for RMS 0.01 (central ~ 1/n, local ~ 1/sqrt(n)); \
         ratio = n local / n central, measured, predicted from the variances, and from the \
         tolerance bounds at tau = 0.01",
        config.runs
    )?;
    writeln!(
        out,
        "{:>5} {:>12} {:>12} {:>14} {:>14} {:>9} {:>10} {:>10}",
        "eps",
        "RMS central",
        "RMS local",
        "n@0.01 central",
        "n@0.01 local",
        "ratio",
        "predicted",
        "tolerance"
    )?;
    for (ei, &epsilon) in config.epsilons.iter().enumerate() {
        progress(&format!("local price, eps {epsilon}"));
        let (mut sq_c, mut sq_l) = (0.0, 0.0);
        for r in 0..config.runs {
            let seed = config.seed ^ 0x9e1 ^ ((ei as u64) << 32) ^ (r as u64);
            let mut budget = Accountant::pure(epsilon);
            let mut session = SqOracle::new(Neighbours::Replace, k, epsilon)?.release(
                data,
                &mut budget,
                &mut seeded_rng(seed),
            )?;
            let oracle = LocalSqOracle::new(epsilon, k, config.beta, Strategy::Partition)?;
            let mut local = oracle.session(&records, seed)?;
            let mut rng = seeded_rng(seed ^ 1);
            for &s in &queries {
                let q = Query::BitPattern {
                    mask: s as usize,
                    pattern: s as usize,
                };
                let t = truth[s as usize];
                sq_c += (session.answer(&q, &mut rng)? - t).powi(2);
                sq_l += (local.answer(&CellQuery(&q))?.estimate - t).powi(2);
            }
        }
        let m = (config.runs * k) as f64;
        let (rms_c, rms_l) = ((sq_c / m).sqrt(), (sq_l / m).sqrt());
        let target = 0.01;
        let n_c = n as f64 * rms_c / target;
        let n_l = n as f64 * (rms_l / target).powi(2);
        // From the variances: central Laplace of scale k/(εn) (RMS √2·scale,
        // falling like 1/n); local, a group of n/k devices answering by
        // randomized response on 0/1 values, p(1−p)/(2p−1)² per device, plus the
        // group's sampling variance a(1−a)(1 − 1/k) (falling like 1/√n).
        let scale = VectorLaplace::fractions(
            Neighbours::Replace,
            n,
            1,
            epsilon.checked_div_int(k as u64)?,
        )?
        .scale();
        let p = 1.0 / (1.0 + (-epsilon.to_f64()).exp());
        let sampling = queries
            .iter()
            .map(|&s| truth[s as usize] * (1.0 - truth[s as usize]))
            .sum::<f64>()
            / k as f64
            * (1.0 - 1.0 / k as f64);
        let per_device = p * (1.0 - p) / (2.0 * p - 1.0).powi(2) + sampling;
        let var_c = n as f64 * 2f64.sqrt() * scale / target;
        let var_l = k as f64 * per_device / target.powi(2);
        // From the high-probability tolerances (all k answers within τ = 0.01).
        let tol_c = SqOracle::required_n(k, epsilon.to_f64(), target, config.beta);
        let tol_l = LocalSqOracle::new(epsilon, k, config.beta, Strategy::Partition)?
            .required_devices(target)
            .unwrap_or(f64::INFINITY);
        writeln!(
            out,
            "{:>5} {:>12.4e} {:>12.4e} {:>14.3e} {:>14.3e} {:>9.1} {:>10.1} {:>10.1}",
            epsilon.to_string(),
            rms_c,
            rms_l,
            n_c,
            n_l,
            n_l / n_c,
            var_l / var_c,
            tol_l / tol_c
        )?;
    }
    Ok(())
}

/// β of the Fig. 6.7 rows (its stopping rule needs the tolerance below β/4).
const AGNOSTIC_BETA: f64 = 0.2;

/// The piece cap of the barrier table's uncapped decompositions.
const BARRIER_CAP: usize = 4096;

fn binomial(n: u32, k: u32) -> usize {
    (0..k).fold(1usize, |acc, i| acc * (n - i) as usize / (i + 1) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_conjunction_table_is_the_superset_sum() {
        let t = conjunction_table(&[0.1, 0.2, 0.3, 0.4]);
        // c_∅ = 1, c_{0} = (2+4)/10, c_{1} = (3+4)/10, c_{0,1} = 4/10.
        for (got, want) in t.iter().zip([1.0, 0.6, 0.7, 0.4]) {
            assert!((got - want).abs() < 1e-12);
        }
        assert_eq!(binomial(16, 3), 560);
    }

    #[test]
    fn a_small_protocol_runs_and_mwem_beats_zero_at_large_epsilon() {
        let mut rng = seeded_rng(3);
        let counts: Vec<u64> = (0..64u64)
            .map(|u| 200 * u64::from(rng.next_u32() % 10 + 1) * (6 - u64::from(u.count_ones())))
            .collect();
        let data = CountHistogram::from_counts(counts, MemoryCap::default()).unwrap();
        let mut config = Config::standard().unwrap();
        config.epsilons = vec![Epsilon::new(4, 1).unwrap()];
        config.distributions = vec![QueryDistribution::Width(2)];
        config.queries = 100;
        config.runs = 1;
        config.barrier_dims = vec![3, 6];
        config.scales = vec![1, 2];
        let mut text = Vec::new();
        let report = run(&data, &config, &mut text, &mut |_| {}).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("6.6 local/8") && text.contains("tolerance"));
        assert_eq!(report.accuracy.len(), 2 * (2 * 3 + 4));
        assert_eq!(report.barrier.len(), 2);
        let mae = |name: &str| {
            report
                .accuracy
                .iter()
                .find(|r| r.method == name)
                .unwrap()
                .mae
        };
        assert!(mae("MWEM") < mae("zero"), "{text}");
        // The local oracle needs more devices than the central one needs records.
        for row in &report.barrier {
            assert!(row.n_66.1 > row.n_66.0 && row.n_67.1 > row.n_67.0);
            let (p, a) = (row.pieces_66.unwrap(), row.asked_66.unwrap());
            assert!(a <= p * (row.d as usize + 2));
        }
    }
}

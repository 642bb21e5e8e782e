//! `privq fairness`: fairness through awareness (thesis Ch. 8).
//!
//! * `solve`: the loss-minimising Lipschitz mapping (the Fairness LP, Fig. 8.1);
//! * `bias`: the earthmover distance and the bias LPs between two groups (§8.3);
//! * `em`: the exponential-mechanism mapping `V → Δ(V)` (§8.5).

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Instant;

use super::{CliError, Output, num, read_text, short};
use privq_host::dx::FiniteMetric;
use privq_host::fairness::release::{
    EmRequest, FairReleaseError, Individuals, Method, Report, SolveRequest, bias_between,
    exponential,
};
use privq_host::fairness::{Divergence, FairnessError, LIPSCHITZ_SCALE, Mapping};

const SOLVE_HELP: &str = "Examples:\n  \
    privq fairness solve --individuals people.csv --losses reject,accept \\\n    \
    --features score:0.1,age:0.02 --groups a,b --divergence tv --out mapping.csv\n  \
    privq fairness solve --individuals people.csv --losses reject,accept --features score:0.1 \\\n    \
    --groups a,b --parity 0.05 --out -\n  \
    privq fairness solve --individuals people.csv --losses reject,accept --distances d.csv --out -\n\n\
    The individuals CSV has a header: an id column, a group column, one loss column per\n\
    outcome and the feature columns the metric uses. The metric is the weighted ℓ1 distance\n\
    over --features, or an n×n matrix (--distances, no header, rows in the individuals'\n\
    order); it must be a metric (the triangle inequality is checked, violations are named)\n\
    and distinct individuals need a positive distance (merge duplicates with --weight-column).";

const BIAS_HELP: &str = "Example:\n  \
    privq fairness bias --individuals people.csv --features score:0.1,age:0.02 --groups a,b\n\n\
    Prints CSV `measure,value`: earthmover (d_EM(S,T), Def 8.3.5), bias_tv and bias_inf\n\
    (Def 8.3.3): the largest parity gap any (D, d)-Lipschitz classifier can open between\n\
    S and T. Thm 8.3.7: bias_tv ≤ d_EM, with equality when every distance is ≤ 1.";

const EM_HELP: &str = "Example:\n  \
    privq fairness em --individuals people.csv --features score:0.1,age:0.02 --out -\n\n\
    E(x)(y) ∝ exp(−d(x,y)/scale) is (D_∞, (2/scale)·d)-Lipschitz: --scale 2 (the default) is\n\
    (D_∞, d)-Lipschitz; --scale 1 is the thesis' Def 8.5.1, which is only (D_∞, 2d)-Lipschitz\n\
    (privq's correction TYPO-27 of Lemma 8.5.2). Through --net EPS only the additive bound\n\
    D_∞ ≤ (2/scale)·(d + 2·EPS) holds.";

/// Options of `privq fairness`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
    privq fairness solve --individuals people.csv --losses reject,accept --features score:0.1 --out -\n  \
    privq fairness bias --individuals people.csv --features score:0.1 --groups a,b\n  \
    privq fairness em --individuals people.csv --features score:0.1 --scale 2 --out -")]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub action: Action,
}

/// The actions.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Action {
    /// The Fairness LP (Fig. 8.1): the least-loss mapping that treats similar individuals similarly.
    #[command(after_help = SOLVE_HELP)]
    Solve(SolveArgs),
    /// Earthmover distance and bias (Def 8.3.3, Thm 8.3.7) between two groups.
    #[command(after_help = BIAS_HELP)]
    Bias(InputArgs),
    /// The exponential-mechanism mapping V → Δ(V) (§8.5).
    #[command(after_help = EM_HELP)]
    Em(EmArgs),
}

/// The individuals, their metric and the groups.
#[derive(Debug, Clone, clap::Args)]
pub struct InputArgs {
    /// CSV of individuals with a header (`-`: standard input).
    #[arg(long, value_name = "FILE")]
    pub individuals: PathBuf,
    /// The column naming each individual.
    #[arg(long, value_name = "COLUMN", default_value = "id")]
    pub id_column: String,
    /// The column holding each individual's group.
    #[arg(long, value_name = "COLUMN", default_value = "group")]
    pub group_column: String,
    /// Optional column of weights (how many people, or how likely, each row is).
    #[arg(long, value_name = "COLUMN")]
    pub weight_column: Option<String>,
    /// The metric: weighted ℓ1 over features, `name:weight,…`.
    #[arg(
        long,
        value_name = "SPEC",
        value_delimiter = ',',
        conflicts_with = "distances",
        required_unless_present = "distances"
    )]
    pub features: Vec<String>,
    /// The metric as an n×n distance-matrix CSV (no header, rows in the individuals' order).
    #[arg(long, value_name = "FILE")]
    pub distances: Option<PathBuf>,
    /// Two group names `S,T`: statistical parity (and, for `bias`, the bias) between them.
    #[arg(long, value_name = "S,T", value_delimiter = ',', num_args = 1)]
    pub groups: Vec<String>,
}

/// Options of `privq fairness solve`.
#[derive(Debug, Clone, clap::Args)]
pub struct SolveArgs {
    /// Individuals, metric and groups.
    #[command(flatten)]
    pub input: InputArgs,
    /// Loss columns, one per outcome (`L(x, a) ≥ 0`); the outcomes take their names.
    #[arg(long, value_name = "COLUMNS", value_delimiter = ',', required = true)]
    pub losses: Vec<String>,
    /// The distance between outcome distributions: `tv` (total variation) or `inf` (D_∞).
    #[arg(long, default_value = "tv", value_parser = ["tv", "inf"])]
    pub divergence: String,
    /// Also impose statistical parity up to BIAS between the two --groups
    /// (`D_tv(μ_S, μ_T) ≤ BIAS`, Def 8.3.1; 0 = exact parity).
    #[arg(long, value_name = "BIAS", requires = "groups")]
    pub parity: Option<f64>,
    /// Instead of one LP, §8.4.1's fair affirmative action between the two
    /// --groups (which must hold every individual): a restricted earthmover map from
    /// S to T with parity up to --parity, then the Fairness LP on T (Props 8.4.1–8.4.2:
    /// parity and Lipschitz inside each group, not across them).
    #[arg(long, requires = "parity")]
    pub preferential: bool,
    /// Refuse LPs estimated to need more memory than this (MiB).
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    pub memory_mib: usize,
    /// The mapping as CSV (`id,<outcome>…`), written atomically; `-`: standard output.
    #[arg(long, value_name = "PATH", default_value = "-")]
    pub out: PathBuf,
}

/// Options of `privq fairness em`.
#[derive(Debug, Clone, clap::Args)]
pub struct EmArgs {
    /// Individuals, metric and groups.
    #[command(flatten)]
    pub input: InputArgs,
    /// Weights `exp(−d/scale)`: 2 is (D_∞, d)-Lipschitz, 1 is the thesis' literal choice.
    #[arg(long, default_value_t = LIPSCHITZ_SCALE)]
    pub scale: f64,
    /// Map through a greedy EPS-net first (Remark 8.5.6, for metrics that are not
    /// well separated): D_∞ ≤ (2/scale)·(d + 2·EPS) (d + 2·EPS at scale 2), each
    /// loss up to EPS more.
    #[arg(long, value_name = "EPS")]
    pub net: Option<f64>,
    /// The mapping as CSV (`id,<id>…`), written atomically; `-`: standard output.
    #[arg(long, value_name = "PATH", default_value = "-")]
    pub out: PathBuf,
}

/// Runs `privq fairness …`.
pub fn run(
    args: &Args,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    match &args.action {
        Action::Solve(a) => solve(a, stdin, stdout, stderr),
        Action::Bias(a) => run_bias(a, stdin, stdout, stderr),
        Action::Em(a) => em(a, stdin, stdout, stderr),
    }
}

/// A refusal of the library's entry point, in the options' words (individuals
/// named by id).
fn release_err(e: FairReleaseError, ids: &[String]) -> CliError {
    let usage = |option: &'static str, message: String| CliError::Usage { option, message };
    match e {
        FairReleaseError::GroupCount(_) => {
            usage("groups", "give exactly two group names, `S,T`".into())
        }
        FairReleaseError::GroupsRequired => usage(
            "groups",
            "`bias` needs two group names, `--groups S,T`".into(),
        ),
        FairReleaseError::EmptyGroup(name) => usage(
            "groups",
            format!("group {name:?} has no individuals (or no weight)"),
        ),
        FairReleaseError::WeightedPreferential => usage(
            "weight-column",
            "--preferential treats every individual alike; drop the weights".into(),
        ),
        FairReleaseError::GroupsNotCovering {
            groups: [s, t],
            covered,
            individuals,
        } => usage(
            "preferential",
            format!(
                "groups {s} and {t} must hold every individual ({covered} of {individuals} do)"
            ),
        ),
        FairReleaseError::Parity(e) => usage("parity", e.to_string()),
        FairReleaseError::Scale(e) => usage("scale", e.to_string()),
        FairReleaseError::Net(e) => usage("net", e.to_string()),
        FairReleaseError::Fairness(e) => named(e, ids),
        other => other.into(),
    }
}

fn read_people(
    args: &InputArgs,
    loss_columns: &[String],
    stdin: &mut dyn BufRead,
) -> Result<Individuals, CliError> {
    let text = read_text(&args.individuals, stdin)?;
    let mut rdr = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = rdr.headers()?.iter().map(str::to_string).collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| CliError::MissingColumn {
                column: name.to_string(),
                available: header.clone(),
            })
    };
    let id = col(&args.id_column)?;
    let group = col(&args.group_column)?;
    let weight = args.weight_column.as_deref().map(col).transpose()?;
    let loss_idx: Vec<usize> = loss_columns
        .iter()
        .map(|c| col(c))
        .collect::<Result<_, _>>()?;
    let mut feature_idx = Vec::new();
    let mut feature_w = Vec::new();
    for spec in &args.features {
        let (name, w) = spec.split_once(':').ok_or_else(|| CliError::Usage {
            option: "features",
            message: format!("{spec:?} is not `name:weight`"),
        })?;
        feature_idx.push(col(name)?);
        feature_w.push(w.trim().parse::<f64>().map_err(|_| CliError::Usage {
            option: "features",
            message: format!("the weight of {name:?} is not a number: {w:?}"),
        })?);
    }
    let (mut ids, mut groups, mut weights, mut losses, mut points) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, rec) in rdr.records().enumerate() {
        let rec = rec?;
        let line = i + 2;
        let num = |c: usize| {
            rec[c].trim().parse::<f64>().map_err(|_| CliError::Value {
                line,
                text: rec[c].to_string(),
                source: privq_core::Error::OutOfRange,
            })
        };
        ids.push(rec[id].to_string());
        groups.push(rec[group].to_string());
        weights.push(weight.map(num).transpose()?.unwrap_or(1.0));
        losses.push(
            loss_idx
                .iter()
                .map(|&c| num(c))
                .collect::<Result<Vec<_>, _>>()?,
        );
        points.push(
            feature_idx
                .iter()
                .map(|&c| num(c))
                .collect::<Result<Vec<_>, _>>()?,
        );
    }
    if ids.is_empty() {
        return Err(CliError::EmptyInput);
    }
    let metric = match &args.distances {
        Some(path) => read_matrix(path, ids.len(), stdin)?,
        None => FiniteMetric::weighted_l1(&points, &feature_w),
    }
    .map_err(|e| named(FairnessError::from(e), &ids))?;
    Ok(Individuals {
        ids,
        groups,
        weights: weight.map(|_| weights),
        losses,
        metric,
    })
}

/// Reads the n×n matrix (an error naming the line on a bad number).
fn read_matrix(
    path: &std::path::Path,
    n: usize,
    stdin: &mut dyn BufRead,
) -> Result<Result<FiniteMetric, privq_host::dx::DxError>, CliError> {
    let text = read_text(path, stdin)?;
    let mut d = Vec::with_capacity(n * n);
    for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let fields = line.split(',').count();
        if fields != n {
            return Err(CliError::Usage {
                option: "distances",
                message: format!(
                    "row {} of {} has {fields} distances; every row needs one per individual ({n})",
                    i + 1,
                    path.display()
                ),
            });
        }
        for t in line.split(',') {
            d.push(t.trim().parse::<f64>().map_err(|_| CliError::Value {
                line: i + 1,
                text: t.to_string(),
                source: privq_core::Error::OutOfRange,
            })?);
        }
    }
    Ok(FiniteMetric::from_matrix(n, d))
}

/// A metric error with individuals named by id.
fn named(e: FairnessError, ids: &[String]) -> CliError {
    let id = |i: usize| ids.get(i).map_or("?", String::as_str).to_string();
    match e {
        FairnessError::NotAMetric { i, j, k, excess } => CliError::Usage {
            option: "features/--distances",
            message: format!(
                "not a metric: d({a},{b}) exceeds d({a},{c}) + d({c},{b}) by {excess}",
                a = id(i),
                b = id(j),
                c = id(k)
            ),
        },
        FairnessError::Metric(privq_host::dx::DxError::ZeroDistance { i, j }) => CliError::Usage {
            option: "features/--distances",
            message: format!(
                "individuals {} and {} are at distance 0: merge them into one row (with \
                 --weight-column) or give features that tell them apart",
                id(i),
                id(j)
            ),
        },
        FairnessError::NegativeLoss {
            individual,
            outcome,
            value,
        } => CliError::Usage {
            option: "losses",
            message: format!(
                "individual {}'s loss in --losses column {} is {value}: losses must be finite and >= 0",
                id(individual),
                outcome + 1
            ),
        },
        other => other.into(),
    }
}

fn write_mapping(
    out: &mut dyn Write,
    ids: &[String],
    columns: &[String],
    mapping: &Mapping,
) -> Result<(), CliError> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(std::iter::once("id").chain(columns.iter().map(String::as_str)))?;
    for (x, id) in ids.iter().enumerate() {
        let row: Vec<String> = mapping.row(x).iter().map(|&p| num(p)).collect();
        w.write_record(std::iter::once(id.as_str()).chain(row.iter().map(String::as_str)))?;
    }
    w.flush()?;
    Ok(())
}

/// The worst Lipschitz pair and, with `--groups`, the parity, on stderr.
fn report(
    stderr: &mut dyn Write,
    ids: &[String],
    report: &Report,
    div: Divergence,
    groups: &[String],
) -> Result<(), CliError> {
    match report.worst {
        Some(v) => writeln!(
            stderr,
            "worst Lipschitz pair: D_{}(μ_{x}, μ_{y}) − d({x}, {y}) = {} ({})",
            div.name(),
            short(if v.excess().abs() < 1e-12 {
                0.0
            } else {
                v.excess()
            }), // round-off prints as 0
            if report.lipschitz {
                "Lipschitz"
            } else {
                "VIOLATED"
            },
            x = ids[v.x],
            y = ids[v.y],
        )?,
        None => writeln!(stderr, "worst Lipschitz pair: none (no finite distances)")?,
    }
    if let Some(parity) = report.parity {
        writeln!(
            stderr,
            "statistical parity between {} and {}: D_tv(μ_S, μ_T) = {}",
            groups[0],
            groups[1],
            short(parity)
        )?;
    }
    Ok(())
}

fn solve(
    args: &SolveArgs,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    super::refuse_overwriting_input(&args.input.individuals, Some(&args.out), "out")?;
    let mut out = Output::open(Some(&args.out))?;
    let people = read_people(&args.input, &args.losses, stdin)?;
    let div = if args.divergence == "inf" {
        Divergence::Inf
    } else {
        Divergence::Tv
    };
    let err = |e| release_err(e, &people.ids);
    let request = SolveRequest::new(div)
        .groups(&args.input.groups)
        .and_then(|r| r.parity(args.parity))
        .and_then(|r| r.preferential(args.preferential))
        .map_err(err)?
        .memory_cap(args.memory_mib.saturating_mul(1 << 20));
    let started = Instant::now();
    let sol = privq_host::fairness::release::solve(&people, &request).map_err(err)?;
    write_mapping(out.writer(stdout), &people.ids, &args.losses, &sol.mapping)?;
    out.commit(stdout)?;
    let names = &args.input.groups;
    match sol.method {
        Method::Lp {
            size,
            constrained_pairs,
            loss,
            unconstrained_loss,
        } => {
            writeln!(
                stderr,
                "fairness LP (D_{}): {} individuals, {} outcomes; {} variables, {} rows, {} constrained pairs; {:.2} s",
                div.name(),
                sol.individuals,
                sol.outcomes,
                size.vars,
                size.rows,
                constrained_pairs,
                started.elapsed().as_secs_f64()
            )?;
            writeln!(
                stderr,
                "expected loss: {} (without the fairness constraint: {})",
                short(loss),
                short(unconstrained_loss)
            )?;
        }
        Method::Preferential {
            em_plus_l,
            bias,
            loss,
        } => {
            writeln!(
                stderr,
                "preferential treatment (§8.4.1, D_{}): d_EM+L({}, {}) = {} at parity ≤ {}; expected loss {}",
                div.name(),
                names[0],
                names[1],
                short(em_plus_l),
                num(bias),
                short(loss)
            )?;
            writeln!(
                stderr,
                "Lipschitz inside each group (Prop 8.4.1); across the groups only Prop 8.4.2's average bound holds"
            )?;
        }
    }
    report(stderr, &people.ids, &sol.report, div, names)
}

fn run_bias(
    args: &InputArgs,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    let people = read_people(args, &[], stdin)?;
    let b = bias_between(&people, &args.groups).map_err(|e| release_err(e, &people.ids))?;
    writeln!(stdout, "measure,value")?;
    writeln!(stdout, "earthmover,{}", num(b.earthmover))?;
    writeln!(stdout, "bias_tv,{}", num(b.bias_tv))?;
    writeln!(stdout, "bias_inf,{}", num(b.bias_inf))?;
    stdout.flush()?;
    writeln!(
        stderr,
        "between {} and {}: d_EM = {}, bias_tv = {}, bias_inf = {} (bias_inf ≤ bias_tv ≤ d_EM; \
         bias_tv = d_EM when every distance is ≤ 1, here max d = {})",
        args.groups[0],
        args.groups[1],
        short(b.earthmover),
        short(b.bias_tv),
        short(b.bias_inf),
        short(b.max_distance)
    )?;
    Ok(())
}

/// A number as printed in a bound: an integer without decimals, else [`short`]'s
/// format rounded **up** (a printed bound never reads as less than the bound).
fn trimmed(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else if x > 0.0 && x < 1e-3 {
        // Scientific, as `short`; nudged up a thousandth so three decimals of the
        // mantissa round up whenever round-to-nearest would round down.
        let shown = format!("{x:.3e}");
        if shown.parse::<f64>().is_ok_and(|s| s >= x) {
            shown
        } else {
            format!("{:.3e}", x * (1.0 + 1e-3))
        }
    } else {
        privq_host::accountant::round_up(x, 4)
    }
}

/// The library's guaranteed bound as text: `d`, `2·d`, `d + 0.4`, `2·(d + 0.4)`.
fn bound_text(g: &privq_host::fairness::release::LipschitzBound) -> String {
    let inner = if g.additive == 0.0 {
        "d".to_string()
    } else {
        format!("d + {}", trimmed(g.additive))
    };
    match (g.factor == 1.0, g.additive == 0.0) {
        (true, _) => inner,
        (false, true) => format!("{}·{inner}", trimmed(g.factor)),
        (false, false) => format!("{}·({inner})", trimmed(g.factor)),
    }
}

fn em(
    args: &EmArgs,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    super::refuse_overwriting_input(&args.input.individuals, Some(&args.out), "out")?;
    let mut out = Output::open(Some(&args.out))?;
    let people = read_people(&args.input, &[], stdin)?;
    let err = |e| release_err(e, &people.ids);
    let request = EmRequest::new(args.scale)
        .net(args.net)
        .groups(&args.input.groups)
        .map_err(err)?;
    let e = exponential(&people, &request).map_err(err)?;
    let bound = bound_text(&e.guarantee);
    if let Some((eps, size)) = e.net {
        writeln!(
            stderr,
            "through a {eps}-net of {size} of the {} individuals (Remark 8.5.6): D_∞ ≤ {bound} \
             for every pair (an additive bound: D_∞/d is not bounded)",
            people.ids.len(),
        )?;
    }
    write_mapping(out.writer(stdout), &people.ids, &people.ids, &e.mapping)?;
    out.commit(stdout)?;
    if let Some(k) = e.doubling {
        writeln!(
            stderr,
            "doubling dimension (greedy estimate, Def 8.5.3): at most {} (a ball of radius {} \
             around {} needs {} half-radius balls); well separated at 1/2: {}",
            k.dimension,
            short(k.ball.1),
            people.ids[k.ball.0],
            k.cover,
            e.well_separated
        )?;
    }
    let tau = privq_host::fairness::release::GUARANTEE_TOLERANCE;
    let guaranteed = match (e.meets_guarantee(), e.guarantee.ratio()) {
        (true, Some(r)) => format!(
            "guaranteed ≤ {}; the computed mapping meets D_∞ ≤ {bound} to within {tau:e}",
            trimmed(r)
        ),
        (true, None) => format!(
            "guaranteed: D_∞ ≤ {bound}, max D_∞/({bound}) = {}; the computed mapping meets \
             it to within {tau:e}",
            short(e.guarantee_ratio)
        ),
        (false, _) => format!(
            "NOT guaranteed: the computed mapping does not meet D_∞ ≤ {bound} + {tau:e} \
             (exceeds it by {}; float rounding or a near-violation of the triangle \
             inequality)",
            short(e.guarantee_excess)
        ),
    };
    writeln!(
        stderr,
        "exponential mapping (scale {}): expected distance E_x E_(y∼E(x)) d(x, y) = {}; \
         D_∞ Lipschitz ratio max D_∞/d = {} ({guaranteed})",
        args.scale,
        short(e.expected_distance),
        short(e.lipschitz_ratio),
    )?;
    report(
        stderr,
        &people.ids,
        &e.report,
        Divergence::Inf,
        &args.input.groups,
    )
}

#[cfg(test)]
mod tests {
    use crate::{CliError, run_with};

    /// Review F1: scores 0 and 1500 at scale 2 underflowed `exp(−d/scale)` and
    /// printed "max D_∞/d = inf (guaranteed ≤ 1)"; now refused.
    #[test]
    fn fairness_em_refuses_an_underflowing_scale() {
        let argv = [
            "fairness",
            "em",
            "--individuals",
            "-",
            "--features",
            "score:1",
        ];
        let r = run_with(&argv, "id,group,score\nann,a,0\nbob,b,1500\n");
        let err = format!("{:?}", r.unwrap_err());
        assert!(err.contains("underflow"), "{err}");
    }

    /// Review F2: for tiny distances rounding makes D_∞/d exceed the bound by a
    /// factor (scores 0, 1.2e-16, 1), but only by ~1e-16 in absolute terms: the
    /// CLI says the computed mapping meets the bound to within the stated τ.
    #[test]
    fn fairness_em_states_the_absolute_tolerance_of_the_check() {
        let argv = [
            "fairness",
            "em",
            "--individuals",
            "-",
            "--features",
            "score:1",
        ];
        let (_, err) =
            run_with(&argv, "id,group,score\nann,a,0\nbob,b,1.2e-16\ncyd,b,1\n").unwrap();
        assert!(
            err.contains("guaranteed ≤ 1; the computed mapping meets D_∞ ≤ d to within 1e-9"),
            "{err}"
        );
    }

    /// Review F4: printed bounds round up, never to nearest.
    #[test]
    fn fairness_bounds_print_rounded_up() {
        assert_eq!(super::trimmed(2.0), "2");
        assert_eq!(super::trimmed(0.123_44), "0.1235");
        assert_eq!(super::trimmed(0.4), "0.4000");
        let t = super::trimmed(1.234_4e-4);
        assert!(t.parse::<f64>().unwrap() >= 1.234_4e-4, "{t}");
    }

    const PEOPLE: &str = "id,group,reject,accept,score\n\
        ann,a,0,1,1\nbob,a,1,0,3\ncyd,b,1,0,4\ndee,b,0,1,9\n";

    fn write(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("privq-fairness-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn fairness_solve_writes_the_mapping_and_a_summary() {
        let argv = [
            "fairness",
            "solve",
            "--individuals",
            "-",
            "--losses",
            "reject,accept",
            "--features",
            "score:0.1",
            "--groups",
            "a,b",
        ];
        let (out, err) = run_with(&argv, PEOPLE).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "id,reject,accept");
        assert_eq!(lines.len(), 5);
        // ann and bob are 0.2 apart: their rows differ by at most 0.2.
        let p = |l: &str| l.split(',').nth(1).unwrap().parse::<f64>().unwrap();
        assert!((p(lines[1]) - p(lines[2])).abs() <= 0.2 + 1e-9);
        assert!(err.contains("expected loss"), "{err}");
        assert!(err.contains("(Lipschitz)"), "{err}");
        assert!(err.contains("statistical parity between a and b"), "{err}");
        let (_, err) = run_with(&[&argv[..], &["--divergence", "inf"]].concat(), PEOPLE).unwrap();
        assert!(err.contains("D_inf"), "{err}");
        let (_, err) = run_with(&[&argv[..], &["--parity", "0"]].concat(), PEOPLE).unwrap();
        assert!(err.contains("D_tv(μ_S, μ_T) = 0.0000"), "{err}");
        let pref = [&argv[..], &["--parity", "0", "--preferential"]].concat();
        let (_, err) = run_with(&pref, PEOPLE).unwrap();
        assert!(err.contains("preferential treatment"), "{err}");
        assert!(err.contains("D_tv(μ_S, μ_T) = 0.0000"), "{err}");
        let weighted = "id,group,reject,accept,score,w\nann,a,0,1,1,3\nbob,a,1,0,2,1\n";
        let argv = [
            "fairness",
            "solve",
            "--individuals",
            "-",
            "--losses",
            "reject,accept",
            "--features",
            "score:0.1",
            "--weight-column",
            "w",
        ];
        let (out, err) = run_with(&argv, weighted).unwrap();
        // The heavier ann gets her outcome; bob follows within d = 0.1 (loss 0.9/4).
        assert!(
            out.contains("ann,1,0\n") && out.contains("bob,0.9,"),
            "{out}"
        );
        assert!(err.contains("expected loss: 0.2250"), "{err}");
    }

    #[test]
    fn fairness_bias_and_em() {
        let argv = [
            "fairness",
            "bias",
            "--individuals",
            "-",
            "--features",
            "score:0.1",
            "--groups",
            "a,b",
        ];
        let (out, _) = run_with(&argv, PEOPLE).unwrap();
        let val = |k: &str| -> f64 {
            out.lines()
                .find_map(|l| l.strip_prefix(&format!("{k},")))
                .unwrap()
                .parse()
                .unwrap()
        };
        // d ≤ 1 here (max 0.8), so bias_tv = d_EM (Thm 8.3.7).
        assert!((val("earthmover") - val("bias_tv")).abs() < 1e-7, "{out}");
        assert!(val("bias_inf") <= val("bias_tv") + 1e-9);
        let argv = [
            "fairness",
            "em",
            "--individuals",
            "-",
            "--features",
            "score:1",
            "--scale",
            "1",
        ];
        let (out, err) = run_with(&argv, PEOPLE).unwrap();
        assert!(out.starts_with("id,ann,bob,cyd,dee\n"), "{out}");
        assert!(err.contains("guaranteed ≤ 2"), "{err}");
        assert!(err.contains("doubling dimension (greedy estimate"), "{err}");
        // Through a net of radius 1.5: ann (1) and bob (3) are 2 apart, cyd (4) joins bob.
        let mut argv = argv.to_vec();
        argv.extend(["--net", "1.5"]);
        let (out, err) = run_with(&argv, PEOPLE).unwrap();
        assert!(err.contains("1.5-net of 3 of the 4 individuals"), "{err}");
        let cyd = out.lines().find(|l| l.starts_with("cyd,")).unwrap();
        assert!(
            cyd.split(',').nth(3) == Some("0"),
            "cyd is off the net: {out}"
        );
    }

    /// The counterexample through a 0.2-net: D_∞/d is 62.5, so the output
    /// must not claim a ratio bound; the additive claim it prints holds, at each
    /// scale, and its own check of it is ≤ 1.
    #[test]
    fn fairness_em_through_a_net_states_the_additive_bound_that_holds() {
        let input = "id,group,score\nw,a,0\nx,a,0.25\ny,b,0.124\nz,b,0.126\n";
        for (scale, claim) in [
            ("2", "d + 0.4000"),
            ("1", "2·(d + 0.4000)"),
            ("4", "0.5000·(d + 0.4000)"),
        ] {
            let argv = [
                "fairness",
                "em",
                "--individuals",
                "-",
                "--features",
                "score:1",
                "--net",
                "0.2",
                "--scale",
                scale,
            ];
            let (out, err) = run_with(&argv, input).unwrap();
            assert!(!err.contains("guaranteed ≤"), "{err}");
            assert!(
                err.contains(&format!("D_∞ ≤ {claim} for every pair")),
                "{err}"
            );
            assert!(
                err.contains(&format!("guaranteed: D_∞ ≤ {claim}, max D_∞/({claim}) = ")),
                "{err}"
            );
            let checked: f64 = err
                .split(&format!("max D_∞/({claim}) = "))
                .nth(1)
                .and_then(|t| t.split(';').next())
                .unwrap()
                .parse()
                .unwrap();
            assert!(checked <= 1.0, "{err}");
            // The claim, checked on the printed mapping: y (0.124) and z (0.126).
            let row = |id: &str| -> Vec<f64> {
                out.lines()
                    .find(|l| l.starts_with(&format!("{id},")))
                    .unwrap()
                    .split(',')
                    .skip(1)
                    .map(|v| v.parse().unwrap())
                    .collect()
            };
            let (y, z) = (row("y"), row("z"));
            let dinf = y
                .iter()
                .zip(&z)
                .filter(|(a, b)| **a > 0.0 || **b > 0.0)
                .map(|(a, b)| (a / b).ln().abs())
                .fold(0.0, f64::max);
            let factor = 2.0 / scale.parse::<f64>().unwrap();
            assert!(
                dinf / 0.002 > 30.0,
                "the ratio is far above any factor: {dinf}"
            );
            assert!(dinf <= factor * (0.002 + 0.4) + 1e-9, "{dinf}");
        }
        // Without a net the ratio bound is stated for each scale: 2/scale.
        for (scale, bound) in [("2", "1"), ("1", "2"), ("4", "0.5000")] {
            let argv = [
                "fairness",
                "em",
                "--individuals",
                "-",
                "--features",
                "score:1",
                "--scale",
                scale,
            ];
            let (_, err) = run_with(&argv, input).unwrap();
            assert!(err.contains(&format!("(guaranteed ≤ {bound}; ")), "{err}");
        }
    }

    #[test]
    fn fairness_bad_inputs_are_named() {
        let base = [
            "fairness",
            "solve",
            "--individuals",
            "-",
            "--losses",
            "reject,accept",
        ];
        let with = |extra: &[&str], input: &str| run_with(&[&base[..], extra].concat(), input);
        assert!(matches!(
            with(&["--features", "height:1"], PEOPLE),
            Err(CliError::MissingColumn { .. })
        ));
        let dup = "id,group,reject,accept,score\nann,a,0,1,1\nbob,a,1,0,1\n";
        let e = with(&["--features", "score:1"], dup)
            .unwrap_err()
            .to_string();
        assert!(e.contains("ann and bob are at distance 0"), "{e}");
        let neg = "id,group,reject,accept,score\nann,a,-1,1,1\nbob,a,1,0,2\n";
        let e = with(&["--features", "score:1"], neg)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("individual ann's loss in --losses column 1 is -1"),
            "{e}"
        );
        let ragged = write("ragged.csv", "0,1,1,1\n1,0,1\n1,1,0,1\n1,1,1,0\n");
        let e = with(&["--distances", ragged.to_str().unwrap()], PEOPLE)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("row 2 of") && e.contains("has 3 distances"),
            "{e}"
        );
        let e = with(&["--features", "score:1", "--groups", "a,z"], PEOPLE)
            .unwrap_err()
            .to_string();
        assert!(e.contains("group \"z\" has no individuals"), "{e}");
        let tri = write("tri.csv", "0,1,5,1\n1,0,1,1\n5,1,0,1\n1,1,1,0\n");
        let e = with(&["--distances", tri.to_str().unwrap()], PEOPLE)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("d(ann,cyd) exceeds d(ann,bob) + d(bob,cyd)"),
            "{e}"
        );
        let e = with(&["--features", "score:1", "--memory-mib", "0"], PEOPLE)
            .unwrap_err()
            .to_string();
        assert!(e.contains("memory cap"), "{e}");
    }
}

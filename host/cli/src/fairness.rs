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
use privq_host::fairness::{
    Divergence, EmForm, FairnessError, FairnessLp, Group, Instance, LIPSCHITZ_SCALE,
    LIPSCHITZ_TOLERANCE, Mapping, bias, doubling_dimension, earthmover, expected_distance,
    exponential_mapping, is_well_separated, net_mapping, preferential_treatment,
};

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
    E(x)(y) ∝ exp(−d(x,y)/scale). --scale 2 (the default) is (D_∞, d)-Lipschitz; --scale 1\n\
    is the thesis' Def 8.5.1, which is only (D_∞, 2d)-Lipschitz (privq's correction TYPO-27 of Lemma 8.5.2).";

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
    /// well separated): Lipschitz up to d + 2·EPS, each loss up to EPS more.
    #[arg(long, value_name = "EPS")]
    pub net: Option<f64>,
    /// The mapping as CSV (`id,<id>…`), written atomically; `-`: standard output.
    #[arg(long, value_name = "PATH", default_value = "-")]
    pub out: PathBuf,
}

fn run_err(e: impl std::error::Error + Send + Sync + 'static) -> CliError {
    CliError::Run(Box::new(e))
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

/// What the individuals CSV holds.
struct People {
    ids: Vec<String>,
    groups: Vec<String>,
    weights: Vec<f64>,
    losses: Vec<Vec<f64>>,
    metric: FiniteMetric,
}

impl People {
    /// The named groups `S, T` (if `--groups` was given).
    fn groups(&self, names: &[String]) -> Result<Option<(Group, Group)>, CliError> {
        match names {
            [] => Ok(None),
            [s, t] => {
                let group = |name: &String| {
                    let members: Vec<usize> = (0..self.ids.len())
                        .filter(|&i| &self.groups[i] == name)
                        .collect();
                    Group::weighted(&self.weights, &members).map_err(|e| match e {
                        FairnessError::EmptyGroup(_) => CliError::Usage {
                            option: "groups",
                            message: format!("group {name:?} has no individuals (or no weight)"),
                        },
                        other => run_err(other),
                    })
                };
                Ok(Some((group(s)?, group(t)?)))
            }
            _ => Err(CliError::Usage {
                option: "groups",
                message: "give exactly two group names, `S,T`".into(),
            }),
        }
    }
}

fn read_people(
    args: &InputArgs,
    loss_columns: &[String],
    stdin: &mut dyn BufRead,
) -> Result<People, CliError> {
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
    Ok(People {
        ids,
        groups,
        weights,
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
        other => run_err(other),
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
    people: &People,
    mapping: &Mapping,
    div: Divergence,
    groups: &[String],
) -> Result<(), CliError> {
    match mapping.worst_violation(&people.metric, div) {
        Some(v) => writeln!(
            stderr,
            "worst Lipschitz pair: D_{}(μ_{x}, μ_{y}) − d({x}, {y}) = {} ({})",
            div.name(),
            short(if v.excess().abs() < 1e-12 {
                0.0
            } else {
                v.excess()
            }), // round-off prints as 0
            if v.excess() <= LIPSCHITZ_TOLERANCE {
                "Lipschitz"
            } else {
                "VIOLATED"
            },
            x = people.ids[v.x],
            y = people.ids[v.y],
        )?,
        None => writeln!(stderr, "worst Lipschitz pair: none (no finite distances)")?,
    }
    if let Some((s, t)) = people.groups(groups)? {
        writeln!(
            stderr,
            "statistical parity between {} and {}: D_tv(μ_S, μ_T) = {}",
            groups[0],
            groups[1],
            short(mapping.parity(&s, &t).map_err(run_err)?)
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
    let mut out = Output::open(Some(&args.out))?;
    let people = read_people(&args.input, &args.losses, stdin)?;
    let groups = people.groups(&args.input.groups)?; // checked before the LP
    let div = if args.divergence == "inf" {
        Divergence::Inf
    } else {
        Divergence::Tv
    };
    let inst = Instance::new(people.metric.clone(), people.losses.clone())
        .and_then(|i| i.with_weights(&people.weights))
        .map_err(|e| named(e, &people.ids))?;
    let started = Instant::now();
    if args.preferential {
        return preferential(args, &people, &inst, div, out, stdout, stderr);
    }
    let mut lp = FairnessLp::new(div).memory_cap(args.memory_mib.saturating_mul(1 << 20));
    if let (Some(bias), Some((s, t))) = (args.parity, groups) {
        lp = lp.parity(s, t, bias).map_err(|e| CliError::Usage {
            option: "parity",
            message: e.to_string(),
        })?;
    }
    let sol = lp.solve(&inst).map_err(run_err)?;
    write_mapping(out.writer(stdout), &people.ids, &args.losses, &sol.mapping)?;
    out.commit(stdout)?;
    writeln!(
        stderr,
        "fairness LP (D_{}): {} individuals, {} outcomes; {} variables, {} rows, {} constrained pairs; {:.2} s",
        div.name(),
        inst.individuals(),
        inst.outcomes(),
        sol.size.vars,
        sol.size.rows,
        sol.constrained_pairs,
        started.elapsed().as_secs_f64()
    )?;
    let unconstrained: f64 = (0..inst.individuals())
        .map(|x| {
            inst.weights()[x]
                * (0..inst.outcomes())
                    .map(|a| inst.loss(x, a))
                    .fold(f64::INFINITY, f64::min)
        })
        .sum();
    writeln!(
        stderr,
        "expected loss: {} (without the fairness constraint: {})",
        short(sol.loss),
        short(unconstrained)
    )?;
    report(stderr, &people, &sol.mapping, div, &args.input.groups)
}

/// `solve --preferential`: §8.4.1.
fn preferential(
    args: &SolveArgs,
    people: &People,
    inst: &Instance,
    div: Divergence,
    mut out: Output,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    if args.input.weight_column.is_some() {
        // §8.4.1's construction (and Prop 8.4.1's parity) is for uniform groups.
        return Err(CliError::Usage {
            option: "weight-column",
            message: "--preferential treats every individual alike; drop the weights".into(),
        });
    }
    let names = &args.input.groups;
    let members = |name: &String| -> Vec<usize> {
        (0..people.ids.len())
            .filter(|&i| &people.groups[i] == name)
            .collect()
    };
    let (s, t) = (members(&names[0]), members(&names[1]));
    if s.len() + t.len() != people.ids.len() {
        return Err(CliError::Usage {
            option: "preferential",
            message: format!(
                "groups {} and {} must hold every individual ({} of {} do)",
                names[0],
                names[1],
                s.len() + t.len(),
                people.ids.len()
            ),
        });
    }
    let bias = args.parity.unwrap_or(0.0);
    let p = preferential_treatment(inst, &s, &t, bias, div).map_err(run_err)?;
    write_mapping(out.writer(stdout), &people.ids, &args.losses, &p.mapping)?;
    out.commit(stdout)?;
    writeln!(
        stderr,
        "preferential treatment (§8.4.1, D_{}): d_EM+L({}, {}) = {} at parity ≤ {}; expected loss {}",
        div.name(),
        names[0],
        names[1],
        short(p.em_plus_l),
        num(bias),
        short(p.mapping.expected_loss(inst).map_err(run_err)?)
    )?;
    writeln!(
        stderr,
        "Lipschitz inside each group (Prop 8.4.1); across the groups only Prop 8.4.2's average bound holds"
    )?;
    report(stderr, people, &p.mapping, div, names)
}

fn run_bias(
    args: &InputArgs,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    let people = read_people(args, &[], stdin)?;
    let Some((s, t)) = people.groups(&args.groups)? else {
        return Err(CliError::Usage {
            option: "groups",
            message: "`bias` needs two group names, `--groups S,T`".into(),
        });
    };
    let d = &people.metric;
    let em = earthmover(d, &s, &t, EmForm::Flow).map_err(run_err)?;
    let tv = bias(d, &s, &t, Divergence::Tv).map_err(run_err)?.value;
    let inf = bias(d, &s, &t, Divergence::Inf).map_err(run_err)?.value;
    writeln!(stdout, "measure,value")?;
    writeln!(stdout, "earthmover,{}", num(em))?;
    writeln!(stdout, "bias_tv,{}", num(tv))?;
    writeln!(stdout, "bias_inf,{}", num(inf))?;
    stdout.flush()?;
    writeln!(
        stderr,
        "between {} and {}: d_EM = {}, bias_tv = {}, bias_inf = {} (bias_inf ≤ bias_tv ≤ d_EM; \
         bias_tv = d_EM when every distance is ≤ 1, here max d = {})",
        args.groups[0],
        args.groups[1],
        short(em),
        short(tv),
        short(inf),
        short(d.max_offdiag())
    )?;
    Ok(())
}

fn em(
    args: &EmArgs,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    let mut out = Output::open(Some(&args.out))?;
    let people = read_people(&args.input, &[], stdin)?;
    people.groups(&args.input.groups)?;
    let usage = |option: &'static str| {
        move |e: FairnessError| CliError::Usage {
            option,
            message: e.to_string(),
        }
    };
    let mapping = match args.net {
        None => exponential_mapping(&people.metric, args.scale).map_err(usage("scale"))?,
        Some(eps) => {
            let (m, net) = net_mapping(&people.metric, eps, args.scale).map_err(usage("net"))?;
            writeln!(
                stderr,
                "through a {eps}-net of {} of the {} individuals (Remark 8.5.6): Lipschitz up to d + {}",
                net.len(),
                people.ids.len(),
                short(2.0 * eps)
            )?;
            m
        }
    };
    write_mapping(out.writer(stdout), &people.ids, &people.ids, &mapping)?;
    out.commit(stdout)?;
    if let Ok(k) = doubling_dimension(&people.metric) {
        writeln!(
            stderr,
            "doubling dimension (greedy estimate, Def 8.5.3): at most {} (a ball of radius {} \
             around {} needs {} half-radius balls); well separated at 1/2: {}",
            k.dimension,
            short(k.ball.1),
            people.ids[k.ball.0],
            k.cover,
            is_well_separated(&people.metric, 0.5)
        )?;
    }
    writeln!(
        stderr,
        "exponential mapping (scale {}): expected distance E_x E_(y∼E(x)) d(x, y) = {}; \
         D_∞ Lipschitz ratio max D_∞/d = {} (guaranteed ≤ {})",
        args.scale,
        short(expected_distance(&people.metric, &mapping).map_err(run_err)?),
        short(mapping.lipschitz_ratio(&people.metric, Divergence::Inf)),
        if args.scale >= LIPSCHITZ_SCALE {
            "1".to_string()
        } else {
            short(2.0 / args.scale)
        }
    )?;
    report(
        stderr,
        &people,
        &mapping,
        Divergence::Inf,
        &args.input.groups,
    )
}

#[cfg(test)]
mod tests {
    use crate::{CliError, run_with};

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

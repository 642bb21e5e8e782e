//! `privq conjunctions`: release every monotone conjunction (or disjunction) of
//! a binary table by submodular decomposition (thesis Fig. 6.6), and answer any
//! of them from the release file.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::results::{Cell, FormatArg, write_rows};
use super::{CliError, ColumnsArgs, LedgerArgs};
use privq_host::conjunctions::{
    ConjunctionRelease, CutConfig, Graph, ReleaseConfig, release_conjunctions_local, rho_for,
};
use privq_host::contract::Neighbours;
use privq_host::data::{CountHistogram, DataError, Dataset, Domain, MemoryCap, binarize};
use privq_host::ldp::fleet::FleetSeed;
use privq_host::ldp::sq::{LocalSqOracle, Strategy};
use privq_host::query::Query;

/// Options of `privq conjunctions`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
    privq conjunctions release --input table.csv --epsilon 1 --out table.conj.json\n  \
    privq conjunctions query --release table.conj.json --set a1,a2 --set a3\n  \
    privq conjunctions cut --edges g.csv --vertices 20 --e-max 100000 --epsilon 1 --set 0,1,2 --out g.cut.json")]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub which: Which,
}

/// The subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Which {
    /// Release all monotone conjunctions (or disjunctions) of a binary table to a file.
    Release(ReleaseArgs),
    /// Answer conjunctions (or disjunctions) from a release file.
    Query(QueryArgs),
    /// Release a graph's cut function (thesis §6.4.1) and answer vertex sets from it.
    Cut(CutArgs),
}

/// Options of `privq conjunctions cut`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Example:\n  \
    privq conjunctions cut --edges g.csv --vertices 20 --e-max 100000 --epsilon 1 --set 0,1,2 --out g.cut.json\n\n\
    The edge list is a CSV with the header u,v (vertex numbers 0..vertices-1), one edge per\n\
    line, each line one individual's record (neighbours differ in one edge). --e-max is a\n\
    PUBLIC bound on the number of edges: the released function is min(cut(S), E_max)/E_max,\n\
    so a graph with more edges is answered with clamped values, never refused.")]
pub struct CutArgs {
    /// The private edge list (CSV, header `u,v`).
    #[arg(long, value_name = "PATH")]
    pub edges: PathBuf,
    /// The number of vertices (public, 1 to 64).
    #[arg(long)]
    pub vertices: u32,
    /// The public bound on the number of edges.
    #[arg(long, value_name = "E_MAX")]
    pub e_max: u64,
    /// Privacy budget ε of the release (add/remove-one-edge neighbours).
    #[arg(long, value_name = "EPS", allow_hyphen_values = true)]
    pub epsilon: String,
    /// Accuracy target α (sets the theorem's rho unless --rho is given).
    #[arg(long, default_value_t = 0.5)]
    pub alpha: f64,
    /// Failure probability β.
    #[arg(long, default_value_t = 0.1)]
    pub beta: f64,
    /// The piece cap c of each level; the query budget is c(c+1)(vertices+1) + c².
    #[arg(long, default_value_t = 8)]
    pub cap: usize,
    /// The decomposition's rho (public).
    #[arg(long)]
    pub rho: Option<f64>,
    /// Vertex sets to answer (comma-separated vertex numbers; repeat for more).
    #[arg(long = "set", value_name = "U,V,...")]
    pub sets: Vec<String>,
    /// Where to write the release (JSON; atomically, only on success).
    #[arg(long, value_name = "PATH")]
    pub out: PathBuf,
    /// Seed for a reproducible run (tests and demos only).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Where to write the ledger as JSON, and --exact.
    #[command(flatten)]
    pub ledger: LedgerArgs,
}

/// Which family a release answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `c_S`: the fraction of records with every attribute of S set.
    Conjunctions,
    /// The fraction with some attribute of S set (conjunctions of the negated records).
    Disjunctions,
}

/// Which SQ oracle answers the algorithm's statistical queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Oracle {
    /// The curator's oracle: ε-DP (replace-one neighbours), Laplace noise of scale k/(εn).
    Central,
    /// Simulated devices, one per record, each answering by randomized response through its
    /// own ledger (ε-LDP per device; query j to the j-th of k random groups).
    Local,
}

/// Options of `privq conjunctions release`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
    privq conjunctions release --input ../shared/data/nltcs.csv --epsilon 1 --out nltcs.conj.json\n  \
    privq conjunctions release --input t.csv --epsilon 1 --width 3 --cap 512 --oracle local --out t.json\n  \
    privq conjunctions query --release nltcs.conj.json --set a1,a2 --set a3\n  \
    privq conjunctions release --input people.csv --domain domain.json --epsilon 1 --out p.json\n\n\
    The CSV's columns (except `count`) are 0/1 attributes named by the header: the schema\n\
    is public, the values are not. With --domain FILE, columns may be categorical or binned:\n\
    each (attribute, value) becomes a 0/1 attribute `attr=value` (d = the number of values). Every data access is one of k = cap·(d+2) statistical\n\
    queries fixed before the first (thesis Fig. 6.6, corrected: Lap(k/(εn)) each), so the\n\
    release costs exactly ε. The decomposition's rho defaults to the smallest value the\n\
    oracle's tolerance supports at this n (12 τ, Lemma 6.3.8) or the theorem's\n\
    alpha²/(6 ln(2/beta)), whichever is larger.")]
pub struct ReleaseArgs {
    /// The private table (CSV with a header; --count-column NAME makes it a count table):
    /// 0/1 columns, or any columns described by --domain.
    #[arg(long, value_name = "PATH")]
    pub input: PathBuf,
    /// How the input's columns are read: --count-column, --ignore-columns.
    #[command(flatten)]
    pub columns: ColumnsArgs,
    /// A public JSON domain spec ({"attributes": [{"name": ..., "values": [...]} or
    /// {"name": ..., "edges": [...]}]}) for a table with categorical or binned columns:
    /// every (attribute, value) becomes one 0/1 attribute named `attr=value`.
    #[arg(long, value_name = "FILE")]
    pub domain: Option<PathBuf>,
    /// Privacy budget ε (central: of the release; local: of each device).
    #[arg(long, value_name = "EPS", allow_hyphen_values = true)]
    pub epsilon: String,
    /// Which family to release.
    #[arg(long, value_enum, default_value = "conjunctions")]
    pub kind: Kind,
    /// Accuracy target α of Thm 6.3.12 (sets the theorem's rho, the smallest the default allows).
    #[arg(long, default_value_t = 0.3)]
    pub alpha: f64,
    /// Failure probability β (fraction of queries allowed a larger error).
    #[arg(long, default_value_t = 0.1)]
    pub beta: f64,
    /// Tune the release to sets of about W attributes (each in with probability W/d;
    /// Lemma 6.4.3). Default: all sets alike (probability 1/2).
    #[arg(long, value_name = "W")]
    pub width: Option<u32>,
    /// The piece cap; the query budget is cap·(d+2). A decomposition that needs more pieces
    /// stops at the cap (reported) rather than fail after the charge.
    #[arg(long, default_value_t = 64)]
    pub cap: usize,
    /// The decomposition's rho (public, fixed in advance); see the notes below.
    #[arg(long)]
    pub rho: Option<f64>,
    /// Which SQ oracle answers the statistical queries.
    #[arg(long, value_enum, default_value = "central")]
    pub oracle: Oracle,
    /// Local oracle: how the devices share the queries.
    #[arg(long, value_enum, default_value = "partition")]
    pub strategy: StrategyArg,
    /// Where to write the release (JSON; atomically, only on success).
    #[arg(long, value_name = "PATH")]
    pub out: PathBuf,
    /// Seed for a reproducible run (tests and demos only).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Where to write the ledger as JSON (central oracle).
    #[command(flatten)]
    pub ledger: LedgerArgs,
}

/// `--strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StrategyArg {
    /// k disjoint random groups, one per query, each at the full ε.
    Partition,
    /// Every device answers every query at ε/k.
    Split,
}

/// Options of `privq conjunctions query`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
    privq conjunctions query --release table.conj.json --set a1,a2 --set a3\n  \
    privq conjunctions query --release table.conj.json --set '' --set a1 --format json\n\n\
    Answers come from the release file alone: no data is read and no budget is spent.")]
pub struct QueryArgs {
    /// A file written by `privq conjunctions release`.
    #[arg(long, value_name = "PATH")]
    pub release: PathBuf,
    /// A set of attributes, comma-separated names (repeat for more; `""` is the empty set).
    #[arg(long = "set", value_name = "A,B,...", required = true)]
    pub sets: Vec<String>,
    /// Output format.
    #[command(flatten)]
    pub format: FormatArg,
}

/// The release file: the released structure and everything public about it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReleaseFile {
    format: String,
    kind: Kind,
    /// Attribute names by bit (bit i of a set is attribute i).
    attributes: Vec<String>,
    records: u64,
    oracle: String,
    epsilon: String,
    privacy: String,
    /// The α Thm 6.3.12 gives at this ρ (`√(6ρ ln(2/β))`), valid when `guarantee`.
    alpha: f64,
    beta: f64,
    /// The probability of each attribute in the sets the release is tuned to.
    p: f64,
    /// The oracle's tolerance τ (with probability 1 − β on all answers).
    tolerance: f64,
    /// Whether Thm 6.3.12 applies: ρ ≥ 12τ and no piece was left out at the cap.
    guarantee: bool,
    release: ConjunctionRelease,
}

const FORMAT: &str = "privq-conjunctions/1";

/// Runs `privq conjunctions`.
pub fn run(
    args: &Args,
    _stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    match &args.which {
        Which::Release(a) => release(a, stderr),
        Which::Query(a) => query(a, stdout),
        Which::Cut(a) => cut(a, stdout, stderr),
    }
}

/// `privq conjunctions cut`: reads the edge list, releases the cut function,
/// writes it and prints the answers of the requested sets.
fn cut(args: &CutArgs, stdout: &mut dyn Write, stderr: &mut dyn Write) -> Result<(), CliError> {
    let epsilon = super::parse_epsilon(&args.epsilon)?;
    super::refuse_overwriting_input(&args.edges, Some(&args.out), "out")?;
    super::refuse_overwriting_input(
        &args.edges,
        args.ledger.ledger_json.as_deref(),
        "ledger-json",
    )?;
    // Sets first: a malformed set is a usage error before anything is charged.
    let sets = args
        .sets
        .iter()
        .map(|text| {
            text.split(',')
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .try_fold(0u64, |m, v| match v.parse::<u32>() {
                    Ok(i) if i < args.vertices && i < 64 => Ok(m | 1 << i),
                    _ => Err(usage(
                        "set",
                        &format!("{v:?} is not a vertex below {}", args.vertices),
                    )),
                })
        })
        .collect::<Result<Vec<u64>, _>>()?;
    let text = super::read_text(&args.edges, &mut std::io::empty())?;
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()?
        .iter()
        .map(|h| h.trim().to_string())
        .collect();
    if header != ["u", "v"] {
        return Err(usage("edges", "needs the CSV header u,v"));
    }
    let mut edges = Vec::new();
    for (line, row) in reader.records().enumerate() {
        let row = row?;
        let vertex = |i: usize| -> Result<u32, CliError> {
            row.get(i)
                .and_then(|x| x.trim().parse().ok())
                .ok_or_else(|| usage("edges", &format!("line {}: not a vertex number", line + 2)))
        };
        edges.push((vertex(0)?, vertex(1)?));
    }
    let graph = Graph::new(args.vertices, &edges)?;
    let config = CutConfig {
        alpha: args.alpha,
        beta: args.beta,
        p: vec![0.5; args.vertices.clamp(1, 64) as usize],
        cap: args.cap,
        rho: args.rho,
        e_max: args.e_max,
        require_tolerance: false,
    };
    let k = config.query_budget(args.vertices)?;
    let tolerance = config.tolerance(args.vertices, epsilon)?;
    let rho = args.rho.unwrap_or_else(|| rho_for(args.alpha, args.beta));
    args.ledger.reserve(
        &CutConfig::accountant(epsilon),
        "privq conjunctions cut",
        stderr,
    )?;
    let mut rng = super::rng(args.seed, stderr)?;
    let (released, budget) = config.release(&graph, epsilon, &mut rng)?;
    let guarantee = rho >= 12.0 * tolerance && !released.truncated();
    writeln!(
        stderr,
        "privq: ε = {epsilon} under add/remove-one-edge neighbours; E_max = {} public; k = {k} \
         queries, discrete Laplace noise of scale k/ε edges each\nprivq: {} pieces (cap {} per \
         level{}), rho = {rho:.4}, tolerance {tolerance:.4}; Cor. 6.4.7 {}",
        args.e_max,
        released.decomposition().len(),
        args.cap,
        if released.truncated() {
            "; STOPPED AT THE CAP"
        } else {
            ""
        },
        if guarantee {
            "applies"
        } else {
            "does NOT apply (rho < 12 x tolerance, or stopped at the cap)"
        }
    )?;
    let bytes = serde_json::to_vec_pretty(&released)?;
    super::write_atomically(&args.out, &bytes)?;
    writeln!(stderr, "privq: ledger:\n{}", args.ledger.text(&budget))?;
    args.ledger.write(&budget)?;
    if !sets.is_empty() {
        writeln!(stdout, "set,cut_fraction,cut_edges")?;
        for (text, s) in args.sets.iter().zip(&sets) {
            writeln!(
                stdout,
                "\"{}\",{},{}",
                text.trim(),
                released.cut(*s),
                released.cut_edges(*s)
            )?;
        }
    }
    Ok(())
}

fn release(args: &ReleaseArgs, stderr: &mut dyn Write) -> Result<(), CliError> {
    let epsilon = super::parse_epsilon(&args.epsilon)?;
    super::refuse_overwriting_input(&args.input, Some(&args.out), "out")?;
    super::refuse_overwriting_input(
        &args.input,
        args.ledger.ledger_json.as_deref(),
        "ledger-json",
    )?;
    std::fs::File::open(&args.input).map_err(|e| CliError::file(&args.input, e))?;
    let columns = args.columns.columns();
    let ds = match &args.domain {
        None => Dataset::binary_from_header(&args.input, &columns, MemoryCap::default()).map_err(
            |e| match e {
                DataError::UnknownValue { .. } => CliError::from(super::InContext {
                    before: String::new(),
                    source: e,
                    after: "; a table with categorical or binned columns needs --domain FILE \
                            (one 0/1 attribute per value, named attr=value)",
                }),
                e => e.into(),
            },
        )?,
        Some(path) => {
            let domain = Domain::from_json(&super::read_text(path, &mut std::io::empty())?)?;
            let ds =
                Dataset::from_csv_with_domain(&args.input, domain, &columns, MemoryCap::default())?;
            binarize(&ds, MemoryCap::default())?
        }
    };
    let d = ds.domain.attributes().len() as u32;
    let names = bit_names(&ds.domain)?;
    let data = match args.kind {
        Kind::Conjunctions => ds.counts,
        Kind::Disjunctions => negate(&ds.counts)?,
    };
    let n = data.total();
    let p = match args.width {
        None => 0.5,
        Some(0) => return Err(usage("width", "must be at least 1")),
        Some(w) if w > d => return Err(usage("width", &format!("exceeds the {d} attributes"))),
        Some(w) => f64::from(w) / f64::from(d),
    };
    if args.ledger.ledger_json.is_some() && args.oracle == Oracle::Local {
        return Err(usage(
            "--ledger-json",
            "records a central release; the local oracle's budget is each device's own ledger",
        ));
    }
    if args.cap == 0 {
        return Err(usage("cap", "must be at least 1"));
    }
    let mut config = ReleaseConfig {
        alpha: args.alpha,
        beta: args.beta,
        p: vec![p; d as usize],
        cap: args.cap,
        rho: None,
        require_n: false,
    };
    let cells = data.len();
    let mut rng = super::rng(args.seed, stderr)?;
    // ρ from public n, k, ε and β only; the budget is then fixed by ρ.
    let (released, tolerance, privacy, budget) = match args.oracle {
        Oracle::Central => {
            let tau = config.central_tolerance(cells, n, epsilon)?;
            config.rho = Some(pick_rho(args, tau)?);
            let k = config.query_budget(cells)?;
            let tau = config.central_tolerance(cells, n, epsilon)?;
            args.ledger.reserve(
                &ReleaseConfig::accountant(epsilon),
                "privq conjunctions release",
                stderr,
            )?;
            let (r, budget) = config.release(&data, epsilon, &mut rng)?;
            let privacy = format!(
                "{}; k = {k} statistical queries, Laplace noise of scale at least k/(εn) on each",
                Neighbours::Replace.summary(&privq_host::accountant::Cost::Pure(epsilon), n)
            );
            (r, tau, privacy, Some(budget))
        }
        Oracle::Local => {
            if args.ledger.budget_file.is_some() {
                return Err(usage(
                    "budget-file",
                    "--oracle local simulates devices that each spend their own ε-local-DP \
                     budget; it has no central charge for a dataset's budget file",
                ));
            }
            let strategy = match args.strategy {
                StrategyArg::Partition => Strategy::Partition,
                StrategyArg::Split => Strategy::Split,
            };
            let local = |k| LocalSqOracle::new(epsilon, k, args.beta, strategy);
            let k = config.query_budget(cells)?;
            config.rho = Some(pick_rho(args, local(k)?.worst_tau(n))?);
            let k = config.query_budget(cells)?;
            let oracle = local(k)?;
            // The fleet's 32-byte ChaCha seed from the run's generator (secure
            // unless --seed made the whole run reproducible).
            let fleet = FleetSeed::random(&mut rng);
            let r = release_conjunctions_local(&data, &config, &oracle, fleet)?;
            let privacy = format!(
                "ε = {epsilon}-local DP per device in this run (simulated: one device per \
                 record, each reporting through its own ledger); k = {k} statistical queries, \
                 {strategy:?}"
            );
            (r, oracle.worst_tau(n), privacy, None)
        }
    };
    let rho = config.rho.unwrap_or_default();
    let guarantee = rho >= 12.0 * tolerance && !released.truncated();
    writeln!(
        stderr,
        "privq: {privacy}\nprivq: {} pieces (cap {}{}), rho = {rho:.4}, the oracle's tolerance \
         {tolerance:.4}; Thm 6.3.12 {}",
        released.decomposition().len(),
        args.cap,
        if released.truncated() {
            "; STOPPED AT THE CAP"
        } else {
            ""
        },
        if guarantee {
            format!(
                "gives (alpha, beta) = ({:.4}, {}) for sets drawn with probability {p}",
                config.effective_alpha(),
                args.beta
            )
        } else {
            "does NOT apply (rho < 12 x tolerance, or stopped at the cap): no accuracy guarantee"
                .into()
        }
    )?;
    if released.decomposition().len() == 1 {
        writeln!(
            stderr,
            "privq: warning: one piece: every set gets the same answer. At n = {n} the oracle's \
             tolerance ({tolerance:.4}) is too coarse for a finer decomposition; a smaller \
             --cap (fewer queries, less noise each), a larger ε or more records would help"
        )?;
    }
    let file = ReleaseFile {
        format: FORMAT.into(),
        kind: args.kind,
        attributes: names,
        records: n,
        oracle: format!("{:?}", args.oracle).to_lowercase(),
        epsilon: epsilon.to_string(),
        privacy,
        alpha: config.effective_alpha(),
        beta: args.beta,
        p,
        tolerance,
        guarantee,
        release: released,
    };
    let mut bytes = serde_json::to_vec_pretty(&file)?;
    bytes.push(b'\n');
    super::write_atomically(&args.out, &bytes)?;
    if let Some(budget) = budget {
        writeln!(stderr, "privq: ledger:\n{}", args.ledger.text(&budget))?;
        args.ledger.write(&budget)?;
    }
    writeln!(stderr, "privq: wrote {}", args.out.display())?;
    Ok(())
}

/// `--rho`, or the larger of the theorem's rho and 12 × the oracle's tolerance.
fn pick_rho(args: &ReleaseArgs, tolerance: f64) -> Result<f64, CliError> {
    match args.rho {
        Some(rho) if rho > 0.0 && rho.is_finite() => Ok(rho),
        Some(_) => Err(usage("rho", "must be positive and finite")),
        None => {
            if !(args.alpha > 0.0 && args.alpha <= 1.0 && args.beta > 0.0 && args.beta < 1.0) {
                return Err(usage("alpha", "must lie in (0, 1] (and --beta in (0, 1))"));
            }
            Ok(rho_for(args.alpha, args.beta).max(12.0 * tolerance))
        }
    }
}

fn usage(option: &'static str, message: &str) -> CliError {
    CliError::Usage {
        option,
        message: message.to_string(),
    }
}

/// Attribute names by bit of the cell index.
fn bit_names(domain: &Domain) -> Result<Vec<String>, CliError> {
    let d = domain.attributes().len();
    let mut names = vec![String::new(); d];
    for (i, a) in domain.attributes().iter().enumerate() {
        let Query::BitPattern { mask, .. } = Query::conjunction(domain, &[i])? else {
            return Err(usage("input", "is not a binary table"));
        };
        let bit = mask.trailing_zeros() as usize;
        if let Some(slot) = names.get_mut(bit) {
            *slot = a.name().to_string();
        }
    }
    Ok(names)
}

/// The histogram of the records with every attribute flipped.
fn negate(counts: &CountHistogram) -> Result<CountHistogram, CliError> {
    let full = counts.len() - 1;
    let mut out = vec![0u64; counts.len()];
    for (u, &c) in counts.counts().iter().enumerate() {
        out[full ^ u] = c;
    }
    Ok(CountHistogram::from_counts(out, MemoryCap::default())?)
}

fn query(args: &QueryArgs, stdout: &mut dyn Write) -> Result<(), CliError> {
    let text = super::read_text(&args.release, &mut std::io::empty())?;
    let file: ReleaseFile = serde_json::from_str(&text).map_err(|e| {
        usage(
            "release",
            &format!(
                "{} is not a privq conjunction release: {e}",
                args.release.display()
            ),
        )
    })?;
    if file.format != FORMAT {
        return Err(usage(
            "release",
            &format!(
                "{} has format {:?}; this privq reads {FORMAT:?}",
                args.release.display(),
                file.format
            ),
        ));
    }
    if file.attributes.len() != file.release.decomposition().ground() as usize {
        return Err(usage(
            "release",
            &format!(
                "{} names {} attributes for a release over {}",
                args.release.display(),
                file.attributes.len(),
                file.release.decomposition().ground()
            ),
        ));
    }
    // Parse every set before printing anything.
    let mut rows = Vec::with_capacity(args.sets.len());
    for text in &args.sets {
        let mut mask = 0u64;
        for name in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let bit = file
                .attributes
                .iter()
                .position(|a| a == name)
                .ok_or_else(|| usage("set", &format!("names an unknown attribute {name:?}")))?;
            mask |= 1 << bit;
        }
        let c = file.release.conjunction(mask);
        let answer = match file.kind {
            Kind::Conjunctions => c,
            // Conjunctions of the negated records: P[all of S unset] = 1 − disjunction.
            Kind::Disjunctions => 1.0 - c,
        };
        rows.push([Cell::Text(text.clone()), Cell::Num(answer)]);
    }
    write_rows(
        args.format.format,
        &["set", "answer"],
        rows.iter().map(|r| &r[..]),
        stdout,
    )
}

#[cfg(test)]
mod tests {
    use crate::ledger_tests::scratch;
    use crate::run_with;

    /// A binary table of 4 attributes: a1 in 3/4 of the records, a2 in half.
    fn table(name: &str) -> std::path::PathBuf {
        let path = scratch(name).join("table.csv");
        let mut text = String::from("a1,a2,a3,a4,count\n");
        for u in 0..16u32 {
            let bits: Vec<String> = (0..4).map(|i| (u >> i & 1).to_string()).collect();
            let count = 1000 + 3000 * (u & 1) + 1000 * (u >> 1 & 1);
            text.push_str(&format!("{},{count}\n", bits.join(",")));
        }
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn release_then_query_round_trips() {
        let input = table("conj-table");
        let out = scratch("conj-release").join("release.json");
        let (_, err) = run_with(
            &[
                "conjunctions",
                "release",
                "--input",
                input.to_str().unwrap(),
                "--count-column",
                "count",
                "--epsilon",
                "4",
                "--cap",
                "4",
                "--seed",
                "3",
                "--out",
                out.to_str().unwrap(),
            ],
            "",
        )
        .unwrap();
        assert!(
            err.contains("pieces") && err.contains("replace-one"),
            "{err}"
        );
        let (text, _) = run_with(
            &[
                "conjunctions",
                "query",
                "--release",
                out.to_str().unwrap(),
                "--set",
                "",
                "--set",
                "a1",
                "--set",
                "a1,a2",
            ],
            "",
        )
        .unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "set,answer");
        assert_eq!(lines.len(), 4, "{text}");
        let empty: f64 = lines[1].split(',').nth(1).unwrap().parse().unwrap();
        assert!((0.0..=1.0).contains(&empty));
        // An unknown attribute, a damaged file: typed errors, nothing printed.
        let e = run_with(
            &[
                "conjunctions",
                "query",
                "--release",
                out.to_str().unwrap(),
                "--set",
                "zz",
            ],
            "",
        )
        .unwrap_err();
        assert!(e.to_string().contains("zz"), "{e}");
        let text = std::fs::read_to_string(&out).unwrap();
        std::fs::write(&out, text.replace("\"answers\": [", "\"answers\": [0.5, ")).unwrap();
        let e = run_with(
            &[
                "conjunctions",
                "query",
                "--release",
                out.to_str().unwrap(),
                "--set",
                "a1",
            ],
            "",
        )
        .unwrap_err();
        assert!(e.to_string().contains("answers"), "{e}");
    }

    /// A table with a categorical and a binned column: refused with a typed
    /// error that names --domain without it, released over the one-hot attributes
    /// `attr=value` with it, and queried by those names.
    #[test]
    fn a_non_binary_table_needs_and_works_with_a_domain_file() {
        let dir = scratch("conj-domain");
        let input = dir.join("people.csv");
        let mut text = String::from("size,age,count\n");
        for (size, age, count) in [
            ("S", 10, 4000),
            ("M", 30, 9000),
            ("L", 70, 3000),
            ("M", 70, 2000),
        ] {
            text.push_str(&format!("{size},{age},{count}\n"));
        }
        std::fs::write(&input, text).unwrap();
        let domain = dir.join("domain.json");
        std::fs::write(
            &domain,
            r#"{"attributes": [{"name": "size", "values": ["S", "M", "L"]},
                               {"name": "age", "edges": [0, 18, 65, 120]}]}"#,
        )
        .unwrap();
        let out = dir.join("release.json");
        let args = |with_domain: bool| {
            let mut a = vec![
                "conjunctions",
                "release",
                "--input",
                input.to_str().unwrap(),
                "--count-column",
                "count",
                "--epsilon",
                "4",
                "--cap",
                "4",
                "--seed",
                "5",
                "--out",
                out.to_str().unwrap(),
            ];
            if with_domain {
                a.extend(["--domain", domain.to_str().unwrap()]);
            }
            a.iter().map(|s| s.to_string()).collect::<Vec<String>>()
        };
        let refused = args(false);
        let refused: Vec<&str> = refused.iter().map(String::as_str).collect();
        let e = run_with(&refused, "").unwrap_err();
        assert!(
            e.to_string().ends_with(
                "; a table with categorical or binned columns needs --domain FILE \
                 (one 0/1 attribute per value, named attr=value)"
            ),
            "{e}"
        );
        // The hint is the program's; the typed error is still the source.
        let typed = std::error::Error::source(&e)
            .and_then(std::error::Error::source)
            .and_then(|s| s.downcast_ref::<privq_host::data::DataError>());
        assert!(
            matches!(
                typed,
                Some(privq_host::data::DataError::UnknownValue { .. })
            ),
            "{e:?}"
        );
        assert!(!out.exists(), "nothing written on refusal");
        let ok = args(true);
        let ok: Vec<&str> = ok.iter().map(String::as_str).collect();
        run_with(&ok, "").unwrap();
        let (text, _) = run_with(
            &[
                "conjunctions",
                "query",
                "--release",
                out.to_str().unwrap(),
                "--set",
                "size=M",
                "--set",
                "size=M,size=L",
                "--set",
                "size=M,age=[18..65)",
            ],
            "",
        )
        .unwrap();
        let answers: Vec<f64> = text
            .lines()
            .skip(1)
            .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(answers.len(), 3, "{text}");
        // 9 000 of 18 000 records are size M aged 18 to 65: about one half.
        assert!((answers[2] - 0.5).abs() < 0.2, "{text}");
        assert!(answers.iter().all(|a| (0.0..=1.0).contains(a)), "{text}");
        let json = std::fs::read_to_string(&out).unwrap();
        assert!(
            json.contains("\"size=M\"") && json.contains("\"age="),
            "{json}"
        );
    }

    /// `privq conjunctions cut`: a star 0 → 1..4 of 2 000 edges, E_max = 2 000;
    /// the file reads back; a bad set is a usage error before any work; a graph
    /// beyond E_max is answered.
    #[test]
    fn cut_releases_and_answers_vertex_sets() {
        let dir = scratch("conj-cut");
        let edges = dir.join("g.csv");
        let mut text = String::from("u,v\n");
        for i in 0..2000 {
            text.push_str(&format!("0,{}\n", 1 + i % 4));
        }
        std::fs::write(&edges, text).unwrap();
        let out = dir.join("g.cut.json");
        let run = |e_max: &str, set: &str| {
            run_with(
                &[
                    "conjunctions",
                    "cut",
                    "--edges",
                    edges.to_str().unwrap(),
                    "--vertices",
                    "5",
                    "--e-max",
                    e_max,
                    "--epsilon",
                    "4",
                    "--cap",
                    "4",
                    "--rho",
                    "0.9",
                    "--seed",
                    "3",
                    "--set",
                    "0",
                    "--set",
                    set,
                    "--out",
                    out.to_str().unwrap(),
                ],
                "",
            )
        };
        let (text, err) = run("2000", "1,2").unwrap();
        assert!(err.contains("add/remove-one-edge"), "{err}");
        let answers: Vec<f64> = text
            .lines()
            .skip(1)
            .map(|l| {
                l.split(',')
                    .nth(l.split(',').count() - 2)
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect();
        assert_eq!(answers.len(), 2, "{text}");
        // {0}'s answer is its piece's mean over the sets drawn with p = 1/2 (about
        // half the edges); {1, 2} lies in a piece with vertex 0 out: no edge cut.
        assert!(answers[0] > answers[1] + 0.2, "{text}");
        let back: privq_host::conjunctions::CutRelease =
            serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        assert_eq!(back.e_max(), 2000);
        assert!(run("2000", "9").is_err());
        // More edges than E_max: clamped, answered.
        assert!(run("100", "1,2").is_ok());
    }

    #[test]
    fn local_oracle_and_disjunctions() {
        let input = table("conj-table-local");
        let out = scratch("conj-release-local").join("release.json");
        let (_, err) = run_with(
            &[
                "conjunctions",
                "release",
                "--input",
                input.to_str().unwrap(),
                "--count-column",
                "count",
                "--epsilon",
                "1",
                "--kind",
                "disjunctions",
                "--oracle",
                "local",
                "--cap",
                "2",
                "--seed",
                "3",
                "--out",
                out.to_str().unwrap(),
            ],
            "",
        )
        .unwrap();
        assert!(err.contains("local DP per device"), "{err}");
        let (text, _) = run_with(
            &[
                "conjunctions",
                "query",
                "--release",
                out.to_str().unwrap(),
                "--set",
                "a1,a2",
                "--format",
                "json",
            ],
            "",
        )
        .unwrap();
        assert!(text.contains("\"answer\""), "{text}");
        // The ledger records central releases only.
        let e = run_with(
            &[
                "conjunctions",
                "release",
                "--input",
                input.to_str().unwrap(),
                "--count-column",
                "count",
                "--epsilon",
                "1",
                "--oracle",
                "local",
                "--out",
                out.to_str().unwrap(),
                "--ledger-json",
                scratch("conj-ledger").join("ledger.json").to_str().unwrap(),
            ],
            "",
        )
        .unwrap_err();
        assert!(e.to_string().contains("ledger"), "{e}");
    }
}

//! `privq pmw`: an interactive private-multiplicative-weights session.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;

use rand_chacha::ChaCha12Rng;

use super::domain::DomainArg;
use super::{CliError, ColumnsArgs, LedgerArgs};
use privq_host::central::pmw::{Answer, PmwConfig, PmwError, PmwSession, PmwUpdate, PmwVariant};
use privq_host::central::pmw_reduce::{DomainReduction, ReducedDomain};
use privq_host::data::{DataError, Dataset, Domain, MemoryCap};
use privq_host::query::Query;

/// Options of `privq pmw`.
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Queries, one per line (values are the attribute's labels):\n  \
    count ATTR=VALUE [ATTR=VALUE ...]   fraction of records in a marginal cell\n  \
    range ATTR LO HI                    fraction with LO <= ATTR <= HI (value order)\n  \
    parity ATTR [ATTR ...]              fraction with an even number of 1s (binary)\n  \
    conj ATTR [ATTR ...]                fraction with all of them 1 (binary)\n\
Each answer is printed as `VALUE<TAB>lazy|update|hypothesis`.\n\n\
Examples:\n  \
    echo 'count smoke=1 family=1' | privq pmw --input ../shared/data/czech.csv --count-column count --domain binary --epsilon 1 --rounds 10\n  \
    privq pmw --input ../shared/data/nltcs.csv --domain binary --epsilon 1 --rounds 1000 --queries q.txt \\\n      \
    --pure --eta 0.5 --sigma 0.01 --threshold 0.05 --max-updates 50 --update project"
)]
pub struct Args {
    /// The private data (CSV with a header; --count-column NAME makes it a count table).
    #[arg(long, value_name = "PATH")]
    pub input: PathBuf,
    /// How the input's columns are read: --count-column, --ignore-columns.
    #[command(flatten)]
    pub columns: ColumnsArgs,
    /// The public domain: a JSON spec FILE, or `binary` for 0/1 columns named by the
    /// CSV header. Required: reading it from the values would reveal which occur.
    #[arg(long, value_name = "FILE|binary")]
    pub domain: Option<DomainArg>,
    /// Privacy budget ε of the whole session.
    #[arg(long, value_name = "EPS", allow_hyphen_values = true)]
    pub epsilon: String,
    /// The constants when no user profile (--eta …) is given: `practical` (pure
    /// ε-DP, threshold --alpha, update budget as large as ε and n allow, projection
    /// updates) or `theory` (the thesis' eq. 4.2 / 4.14, vacuous at realistic n).
    #[arg(long, value_enum, default_value = "practical")]
    pub profile: Profile,
    /// Practical profile: the threshold T (lazy answers are within about alpha).
    #[arg(long, value_name = "ALPHA", default_value_t = 0.08)]
    pub alpha: f64,
    /// δ of the (ε, δ) variant (theory or user profile; default 1e-6).
    #[arg(long, conflicts_with = "pure")]
    pub delta: Option<f64>,
    /// Use the (ε, 0) variant (randomized threshold drawn once). The practical
    /// profile always is.
    #[arg(long)]
    pub pure: bool,
    /// Number of rounds k (queries) the session answers.
    #[arg(long, value_name = "K")]
    pub rounds: usize,
    /// Failure probability β of the theory constants.
    #[arg(long, default_value_t = 0.05)]
    pub beta: f64,
    /// After a failure (more than m update rounds): `hypothesis` answers the rest
    /// from the session's last hypothesis, labelled `hypothesis` (post-processing
    /// of the released transcript: no privacy cost, but no accuracy guarantee);
    /// `stop` prints `failure` and ends, as thesis Fig. 4.2 does.
    #[arg(long, value_enum, default_value = "hypothesis")]
    pub after_failure: AfterFailure,
    /// Read queries from this file instead of standard input (`-`: standard input).
    #[arg(long, value_name = "PATH")]
    pub queries: Option<PathBuf>,
    /// User profile: learning rate η (give --eta, --sigma, --threshold and --max-updates together).
    #[arg(long, requires_all = ["sigma", "threshold", "max_updates"])]
    pub eta: Option<f64>,
    /// User profile: noise scale σ.
    #[arg(long)]
    pub sigma: Option<f64>,
    /// User profile: threshold T.
    #[arg(long)]
    pub threshold: Option<f64>,
    /// User profile: update budget m.
    #[arg(long)]
    pub max_updates: Option<f64>,
    /// How an update round moves the hypothesis: `sign` (thesis Fig. 4.2, a step of
    /// ±eta) or `project` (onto the released answer, at most eta). Post-processing:
    /// privacy is the same either way.
    #[arg(long, value_parser = crate::choice::<PmwUpdate>())]
    pub update: Option<PmwUpdate>,
    /// Domain reduction (thesis Lemma 4.6.4 / Thm 4.1.4): run PMW on a public random
    /// sub-universe V of M = 4·max{xi·N·(ln(1/beta) + ln k)/alpha^2, ln(1/beta)} draws
    /// (with replacement) instead of all N cells, with threshold T' = T + phi + alpha.
    /// V never depends on the data; accuracy assumes the data is (xi, phi)-pseudo-smooth.
    #[arg(long, requires = "smoothness")]
    pub reduce_domain: bool,
    /// Domain reduction: the assumed smoothness xi in [1/N, 1] (every cell of a nearby
    /// smooth database holds at most a fraction xi of the records).
    #[arg(long, value_name = "XI", requires = "reduce_domain")]
    pub smoothness: Option<f64>,
    /// Domain reduction: the assumed distance phi >= 0 of the data to a xi-smooth
    /// database on the queries asked (0 for xi-smooth data). An assumption about the
    /// data, not checked; it only widens the threshold.
    #[arg(
        long,
        value_name = "PHI",
        default_value_t = 0.0,
        requires = "reduce_domain"
    )]
    pub phi: f64,
    /// Domain reduction: alpha of eq. 4.26 (default 1/sqrt(n), as in Thm 4.1.4).
    #[arg(long, value_name = "ALPHA", requires = "reduce_domain")]
    pub reduce_alpha: Option<f64>,
    /// Seed for a reproducible run (tests and demos only).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Where to write the ledger as JSON.
    #[command(flatten)]
    pub ledger: LedgerArgs,
}

/// Where `privq pmw`'s constants come from when no user profile is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Profile {
    /// [`PmwConfig::practical`].
    Practical,
    /// [`PmwConfig::theory`].
    Theory,
}

/// What `privq pmw` does once the session has failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AfterFailure {
    /// Answer from the last hypothesis.
    Hypothesis,
    /// Print `failure` and end.
    Stop,
}

/// Parses one query line against the domain.
pub fn parse_query(line: &str, domain: &Domain) -> Result<Query, String> {
    let mut words = line.split_whitespace();
    let verb = words.next().ok_or("empty query")?;
    let attr = |name: &str| {
        domain
            .position(name)
            .ok_or_else(|| format!("unknown attribute {name:?}"))
    };
    let value = |a: usize, text: &str| {
        domain
            .attribute(a)
            .and_then(|at| at.index_of(text))
            .ok_or_else(|| {
                format!(
                    "attribute {:?} has no value {text:?}",
                    domain.attributes()[a].name()
                )
            })
    };
    let rest: Vec<&str> = words.collect();
    let q = match verb {
        "count" => {
            let mut attrs = Vec::new();
            let mut values = Vec::new();
            for w in &rest {
                let (a, v) = w
                    .split_once('=')
                    .ok_or_else(|| format!("expected ATTR=VALUE, got {w:?}"))?;
                let a = attr(a)?;
                values.push(value(a, v)?);
                attrs.push(a);
            }
            Query::marginal_cell(domain, &attrs, &values)
        }
        "range" => {
            let [a, lo, hi] = rest[..] else {
                return Err("expected: range ATTR LO HI".into());
            };
            let a = attr(a)?;
            Query::range(domain, a, value(a, lo)?, value(a, hi)?)
        }
        "parity" | "conj" => {
            let attrs = rest
                .iter()
                .map(|a| attr(a))
                .collect::<Result<Vec<_>, _>>()?;
            if verb == "parity" {
                Query::parity(domain, &attrs)
            } else {
                Query::conjunction(domain, &attrs)
            }
        }
        other => return Err(format!("unknown query kind {other:?}")),
    };
    q.map_err(|e| e.to_string())
}

/// Runs `privq pmw`.
pub fn run(
    args: &Args,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    let epsilon = super::parse_epsilon(&args.epsilon)?;
    // Opened before any privacy is spent, so a missing file is named and costs nothing.
    let mut query_file = match &args.queries {
        Some(path) if path.as_os_str() != "-" => Some(BufReader::new(
            File::open(path).map_err(|e| CliError::file(path, e))?,
        )),
        _ => None,
    };
    let ds = load(args)?;
    // n is public under replace-one-record neighbours; the session derives it from
    // the counts itself.
    let n = ds.counts.total();
    let user = args.eta.is_some();
    let practical = !user && args.profile == Profile::Practical;
    if let (true, Some(_)) = (practical, args.delta) {
        return Err(CliError::Usage {
            option: "delta",
            message: "the practical profile is pure epsilon-DP; use --profile theory or a user profile (--eta ...) for (epsilon, delta)".into(),
        });
    }
    let variant = if args.pure || practical {
        PmwVariant::Pure
    } else {
        PmwVariant::Approximate {
            delta: args.delta.unwrap_or(1e-6),
        }
    };
    // An empty query stream is refused before the session charges its budget.
    let queries: &mut dyn BufRead = match &mut query_file {
        Some(file) => file,
        None => stdin,
    };
    if queries.fill_buf()?.is_empty() {
        return Err(no_queries());
    }
    let mut rng = super::rng(args.seed, stderr)?;
    let reduced = reduce_domain(args, n, ds.counts.len(), &mut rng, stderr)?;
    let cells = reduced.as_ref().map_or(ds.counts.len(), |v| v.len());
    let params = match (args.eta, args.sigma, args.threshold, args.max_updates) {
        (Some(eta), Some(sigma), Some(t), Some(m)) => {
            PmwConfig::user(eta, sigma, t, m, variant, epsilon, n).map_err(CliError::from)
        }
        _ if practical => PmwConfig::practical(epsilon, n, args.alpha).map_err(|e| match e {
            PmwError::InvalidParameter(_) if args.alpha > 0.0 && args.alpha < 1.0 => {
                let needed = (100.0 / (3.0 * epsilon.to_f64() * args.alpha)).ceil();
                CliError::Usage {
                    option: "alpha",
                    message: format!(
                        "n = {n} records are too few for the practical profile at epsilon = {epsilon} \
                         and alpha = {} (it needs n >= {needed}); raise --alpha, or use --profile theory",
                        args.alpha
                    ),
                }
            }
            e => e.into(),
        }),
        _ => PmwConfig::theory(epsilon, args.beta, n, args.rounds, cells, variant)
            .map_err(CliError::from),
    }?;
    let params = match args.update {
        Some(rule) => params.with_update(rule),
        None => params,
    };
    args.ledger
        .reserve(&params.accountant()?, "privq pmw", stderr)?;
    let (mut session, budget) =
        PmwSession::open(&ds.counts, params, args.rounds, reduced.as_ref(), rng)?;
    warn_about_threshold(&session, &params, reduced.as_ref(), n, stderr)?;
    let answered = answer_all(
        &mut session,
        &ds.domain,
        args.after_failure,
        queries,
        stdout,
        stderr,
    );
    summarize(&session, &params, n, stderr)?;
    writeln!(stderr, "privq: ledger:\n{}", args.ledger.text(&budget))?;
    // The budget is spent either way, so the ledger is written; a run that failed
    // on a query, or answered nothing, still fails.
    args.ledger.write(&budget)?;
    answered?;
    if session.transcript().is_empty() {
        return Err(no_queries());
    }
    Ok(())
}

fn no_queries() -> CliError {
    CliError::Usage {
        option: "queries",
        message:
            "no query to answer: give one query per line on standard input or in --queries FILE"
                .into(),
    }
}

/// The session `privq pmw` runs.
type Session = PmwSession<ChaCha12Rng>;

/// The data under the public domain (there is no default read from the data).
fn load(args: &Args) -> Result<Dataset, CliError> {
    let cap = MemoryCap::default();
    let columns = args.columns.columns();
    std::fs::File::open(&args.input).map_err(|e| CliError::file(&args.input, e))?;
    match &args.domain {
        Some(DomainArg::File(spec)) => {
            let domain = Domain::from_json(&super::read_text(spec, &mut std::io::empty())?)?;
            Ok(Dataset::from_csv_with_domain(
                &args.input,
                domain,
                &columns,
                cap,
            )?)
        }
        Some(DomainArg::Binary) => Ok(Dataset::binary_from_header(&args.input, &columns, cap)?),
        None => Err(DataError::DomainRequired { discovery: false }.into()),
    }
}

/// With `--reduce-domain`, the public random sub-universe V of the `universe`
/// cells (reported on `stderr`); otherwise `None`.
fn reduce_domain(
    args: &Args,
    n: u64,
    universe: usize,
    rng: &mut ChaCha12Rng,
    stderr: &mut dyn Write,
) -> Result<Option<ReducedDomain>, CliError> {
    let (true, Some(xi)) = (args.reduce_domain, args.smoothness) else {
        return Ok(None);
    };
    let rule = match args.reduce_alpha {
        Some(alpha) => DomainReduction::new(xi, alpha, args.beta, args.rounds, args.phi),
        None => DomainReduction::sublinear(xi, n, args.beta, args.rounds, args.phi),
    }?;
    // V depends on N, the parameters and the RNG only: public.
    let v = rule.sample(universe, rng)?;
    if v.is_full() {
        writeln!(
            stderr,
            "privq: domain reduction: M = {:.0} >= N = {} cells, so V = U (no reduction, threshold unchanged)",
            v.draws(),
            v.universe()
        )?;
    } else {
        writeln!(
            stderr,
            "privq: domain reduction: |V| = {} distinct of M = {:.0} draws from N = {} cells \
             (xi = {xi}, alpha = {:.6}, beta = {}, phi = {})",
            v.len(),
            v.draws(),
            v.universe(),
            rule.alpha(),
            args.beta,
            args.phi
        )?;
    }
    Ok(Some(v))
}

/// Reports a shifted threshold (domain reduction) and warns when it is vacuous.
fn warn_about_threshold(
    session: &Session,
    params: &PmwConfig,
    reduced: Option<&ReducedDomain>,
    n: u64,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    let threshold = session.threshold();
    if let Some(v) = reduced.filter(|v| !v.is_full()) {
        writeln!(
            stderr,
            "privq: domain reduction: threshold T' = T + phi + alpha = {:.6} + {:.6} = {threshold:.6}",
            params.threshold(),
            v.threshold_shift(),
        )?;
    }
    if threshold >= 1.0 {
        writeln!(
            stderr,
            "privq: warning: the threshold T = {threshold:.3} is >= 1, so every answer may be off by up to 2T: \
             the thesis constants (eq. 4.2) are vacuous at n = {n} (book: Privacy arguments, PMW); consider a user profile",
        )?;
    }
    Ok(())
}

/// Answers the queries read from `reader`, one per line, until they or the session
/// run out. A line that is not a query is skipped (no round used).
fn answer_all(
    session: &mut Session,
    domain: &Domain,
    after_failure: AfterFailure,
    reader: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    let mut warned = false;
    for (i, line) in reader.lines().enumerate() {
        let line = line?;
        let text = line.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let query = match parse_query(text, domain) {
            Ok(q) => q,
            Err(why) => {
                writeln!(
                    stderr,
                    "privq: line {}: {why} (skipped, no round used)",
                    i + 1
                )?;
                continue;
            }
        };
        let answer = match after_failure {
            AfterFailure::Hypothesis => session.answer_or_hypothesis(&query),
            AfterFailure::Stop => session.answer(&query),
        };
        match answer {
            Ok(Answer::Lazy(v)) => writeln!(stdout, "{v:.6}\tlazy")?,
            Ok(Answer::Update(v)) => writeln!(stdout, "{v:.6}\tupdate")?,
            Ok(Answer::Hypothesis(v)) => {
                if !warned {
                    warned = true;
                    writeln!(
                        stderr,
                        "privq: {}; answering the rest from the last hypothesis (no privacy cost, no accuracy guarantee)",
                        PmwError::Failure
                    )?;
                }
                writeln!(stdout, "{v:.6}\thypothesis")?;
            }
            Err(PmwError::Failure) => {
                writeln!(stdout, "failure")?;
                writeln!(stderr, "privq: {}", PmwError::Failure)?;
                break;
            }
            Err(e @ PmwError::RoundsExhausted { .. }) => {
                writeln!(stderr, "privq: {e}")?;
                break;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The session's parameters, progress and privacy summary.
fn summarize(
    session: &Session,
    params: &PmwConfig,
    n: u64,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    // The public T only: the pure variant's noisy threshold is never shown.
    writeln!(
        stderr,
        "privq: PMW ({}) eta = {:.4}, sigma = {:.4}, T = {:.4}, m = {:.0}; {} answered, {} updates, {} rounds left",
        match params.variant() {
            PmwVariant::Pure => "pure: sparse vector, fresh answers",
            PmwVariant::Approximate { .. } => "approximate",
        },
        params.eta(),
        params.sigma(),
        session.threshold(),
        params.max_updates(),
        session.transcript().len(),
        session.updates(),
        session.rounds_left(),
    )?;
    writeln!(
        stderr,
        "privq: privacy: {}",
        session.neighbours().summary(&session.cost(), n)
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_queries_from_stdin() {
        let dir = std::env::temp_dir().join(format!("privq-pmw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("t.csv");
        std::fs::write(
            &input,
            "a,b,count\n0,0,400000\n0,1,300000\n1,0,200000\n1,1,100000\n",
        )
        .unwrap();
        let args = Args {
            input,
            columns: ColumnsArgs {
                count_column: Some("count".into()),
                ignore_columns: Vec::new(),
            },
            domain: Some(DomainArg::Binary),
            epsilon: "1".into(),
            profile: Profile::Practical,
            after_failure: AfterFailure::Hypothesis,
            alpha: 0.08,
            delta: None,
            pure: true,
            rounds: 3,
            beta: 0.05,
            queries: None,
            eta: None,
            sigma: None,
            threshold: None,
            max_updates: None,
            update: None,
            reduce_domain: false,
            smoothness: None,
            phi: 0.0,
            reduce_alpha: None,
            seed: Some(1),
            ledger: LedgerArgs::default(),
        };
        let stdin = "count a=1\n# a comment\nbogus\nconj a b\nparity a b\nrange a 0 1\n";
        let (mut out, mut err) = (Vec::new(), Vec::new());
        run(&args, &mut stdin.as_bytes(), &mut out, &mut err).unwrap();
        let out = String::from_utf8(out).unwrap();
        let err = String::from_utf8(err).unwrap();
        assert_eq!(out.lines().count(), 3, "{out}");
        assert!(
            out.lines()
                .all(|l| l.ends_with("lazy") || l.ends_with("update"))
        );
        assert!(err.contains("unknown query kind \"bogus\""), "{err}");
        assert!(err.contains("all 3 rounds"), "{err}");
        assert!(
            err.contains(
                "ε = 1 under replace-one-record neighbours; n = 1000000 treated as public"
            ),
            "{err}"
        );
        assert!(err.contains("(ε₁ = ε/10): ε = 1/10"), "{err}");
        assert!(err.contains("total: ε = 1 of 1"), "{err}");
        let _ = std::fs::remove_dir_all(dir);
    }

    fn binary_table(dir: &std::path::Path, shift: u32) -> PathBuf {
        // 12 binary attributes (N = 4096 cells), n = 20 records; `shift` changes
        // which cells hold them.
        std::fs::create_dir_all(dir).unwrap();
        let input = dir.join(format!("wide{shift}.csv"));
        let header: Vec<String> = (0..12).map(|i| format!("a{i}")).collect();
        let mut text = format!("{},count\n", header.join(","));
        for r in 0..10u32 {
            let row: Vec<String> = (0..12)
                .map(|i| ((r * 7 + i + shift) >> 2 & 1).to_string())
                .collect();
            text.push_str(&format!("{},2\n", row.join(",")));
        }
        // Make every attribute take both values so the inferred domain is binary.
        text.push_str(&format!("{},0\n", ["0"; 12].join(",")));
        text.push_str(&format!("{},0\n", ["1"; 12].join(",")));
        std::fs::write(&input, text).unwrap();
        input
    }

    /// `privq pmw` on `input` (binary domain, ε = 1, 3 rounds, seed 5) plus `extra`.
    fn pmw_argv<'a>(input: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        let mut argv = vec![
            "pmw",
            "--input",
            input,
            "--count-column",
            "count",
            "--domain",
            "binary",
            "--epsilon",
            "1",
            "--rounds",
            "3",
            "--seed",
            "5",
        ];
        argv.extend(extra);
        argv
    }

    const QUERIES: &str = "conj a0\nparity a1 a2\ncount a3=1 a4=0\n";

    #[test]
    fn reduce_domain_prints_v_and_the_shifted_threshold() {
        let dir = std::env::temp_dir().join(format!("privq-pmw-reduce-{}", std::process::id()));
        let path = binary_table(&dir, 0);
        let other_path = binary_table(&dir, 3);
        // ξ = 1/4000 (ξN = 1.024), α = 1/√20, k = 3:
        // M = 4·ξN·n·(ln 20 + ln 3) = 335.4 draws of N = 4096 cells.
        let reduce = [
            "--profile",
            "theory",
            "--pure",
            "--reduce-domain",
            "--smoothness",
            "0.00025",
            "--phi",
            "0.01",
        ];
        let argv = pmw_argv(path.to_str().unwrap(), &reduce);
        let (out, err) = crate::run_with(&argv, QUERIES).unwrap();
        assert_eq!(out.lines().count(), 3, "{out}");
        let v_line = err
            .lines()
            .find(|l| l.contains("|V| = "))
            .unwrap_or_else(|| panic!("{err}"));
        let v: usize = v_line
            .split("|V| = ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|w| w.parse().ok())
            .unwrap();
        assert!((300..=336).contains(&v), "{v_line}");
        assert!(
            v_line.contains("M = 335 draws from N = 4096 cells"),
            "{v_line}"
        );
        let t_line = err
            .lines()
            .find(|l| l.contains("threshold T' = T + phi + alpha"))
            .unwrap_or_else(|| panic!("{err}"));
        let shift = 0.01 + 1.0 / 20f64.sqrt();
        assert!(t_line.contains(&format!("+ {shift:.6} = ")), "{t_line}");
        // The same seed gives the same V whatever the data (same N and n).
        let argv2 = pmw_argv(other_path.to_str().unwrap(), &reduce);
        let (_, err2) = crate::run_with(&argv2, "conj a0\n").unwrap();
        assert!(err2.contains(v_line), "{err2}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn reduce_domain_keeps_the_universe_when_m_reaches_n_and_refuses_a_small_xi() {
        let dir = std::env::temp_dir().join(format!("privq-pmw-full-{}", std::process::id()));
        let path = binary_table(&dir, 0);
        let input = path.to_str().unwrap();
        // M ≥ N: the full universe, said so.
        let full = pmw_argv(
            input,
            &[
                "--profile",
                "theory",
                "--reduce-domain",
                "--smoothness",
                "0.5",
            ],
        );
        let (_, err) = crate::run_with(&full, QUERIES).unwrap();
        assert!(err.contains("so V = U (no reduction"), "{err}");
        // ξ below 1/N is refused with a typed error naming it.
        let bad = pmw_argv(
            input,
            &[
                "--profile",
                "theory",
                "--reduce-domain",
                "--smoothness",
                "0.0001",
            ],
        );
        let e = crate::run_with(&bad, QUERIES).unwrap_err();
        assert!(e.to_string().contains("smoothness xi = 0.0001"), "{e}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn reduction_options_need_reduce_domain_and_it_needs_smoothness() {
        use clap::Parser;
        for extra in [&["--phi", "0.1"][..], &["--reduce-domain"][..]] {
            let mut argv = vec!["privq"];
            argv.extend(pmw_argv("data.csv", extra));
            assert!(crate::Cli::try_parse_from(&argv).is_err(), "{argv:?}");
        }
    }

    #[test]
    fn the_practical_profile_names_the_records_it_needs_and_refuses_delta() {
        let dir = crate::ledger_tests::scratch("pmw-practical");
        let path = binary_table(&dir, 0);
        let input = path.to_str().unwrap();
        // n = 20: 100/(3·1·0.08) = 416.7, so 417 records are needed.
        let e = crate::run_with(&pmw_argv(input, &[]), QUERIES).unwrap_err();
        assert!(e.to_string().starts_with("--alpha: n = 20 records"), "{e}");
        assert!(e.to_string().contains("it needs n >= 417"), "{e}");
        let e = crate::run_with(&pmw_argv(input, &["--delta", "1e-6"]), QUERIES).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--delta: the practical profile is pure"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn after_a_failure_the_rest_is_answered_from_the_hypothesis_or_not_at_all() {
        let dir = crate::ledger_tests::scratch("pmw-after-failure");
        let path = binary_table(&dir, 0);
        let input = path.to_str().unwrap();
        // m = 1 and a tiny threshold: the second update round is a failure.
        let user = [
            "--pure",
            "--eta",
            "0.5",
            "--sigma",
            "0.4",
            "--threshold",
            "0.001",
            "--max-updates",
            "1",
        ];
        let queries = "conj a0\nconj a1\nconj a2\nconj a3\nconj a4\n";
        let mut argv = pmw_argv(input, &user);
        argv[8] = "10"; // --rounds
        let (out, err) = crate::run_with(&argv, queries).unwrap();
        let kinds: Vec<&str> = out.lines().filter_map(|l| l.split('\t').nth(1)).collect();
        assert_eq!(kinds.len(), 5, "{out}");
        let first = kinds
            .iter()
            .position(|k| *k == "hypothesis")
            .expect("a failure");
        assert!(kinds[first..].iter().all(|k| *k == "hypothesis"), "{out}");
        assert!(
            err.contains("answering the rest from the last hypothesis"),
            "{err}"
        );
        argv.extend(["--after-failure", "stop"]);
        let (out, _) = crate::run_with(&argv, queries).unwrap();
        assert_eq!(out.lines().last(), Some("failure"), "{out}");
        assert_eq!(out.lines().count(), first + 1, "{out}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn ledger_json_totals_the_epsilon_of_the_session() {
        let dir = crate::ledger_tests::scratch("pmw");
        let path = binary_table(&dir, 0);
        let ledger = dir.join("ledger.json");
        let ledger_s = ledger.to_str().unwrap();
        for variant in [
            &["--profile", "theory", "--pure"][..],
            &["--profile", "theory", "--delta", "1e-6"][..],
        ] {
            let mut extra = variant.to_vec();
            extra.extend(["--ledger-json", ledger_s]);
            let argv = pmw_argv(path.to_str().unwrap(), &extra);
            let (out, err) = crate::run_with(&argv, QUERIES).unwrap();
            assert_eq!(out.lines().count(), 3, "{out}");
            let (json, total) = crate::ledger_tests::read(&ledger);
            assert_eq!(
                total,
                crate::ledger_tests::stated(&err, "privq: privacy: ε = ")
            );
            assert!(!json["charges"].as_array().unwrap().is_empty(), "{json}");
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_failed_pmw_writes_no_ledger() {
        let dir = crate::ledger_tests::scratch("pmw-fail");
        let path = binary_table(&dir, 0);
        let ledger = dir.join("ledger.json");
        // The session is opened (and charged), then the query file is missing.
        let missing = dir.join("missing.txt");
        let argv = pmw_argv(
            path.to_str().unwrap(),
            &[
                "--pure",
                "--queries",
                missing.to_str().unwrap(),
                "--ledger-json",
                ledger.to_str().unwrap(),
            ],
        );
        assert!(crate::run_with(&argv, "").is_err());
        assert!(!ledger.exists());
        std::fs::remove_dir_all(&dir).ok();
    }
}

//! `privq sql`: private counts, sums, means and quantiles by group, from a SQL
//! query over a CSV table ([`privq_host::aggregate`]).

use std::io::{BufRead, Write};
use std::path::PathBuf;

use privq_host::aggregate::{
    AggregateError, Bounds, MAX_CONTRIBUTION, Plan, Release, SqlRequest, Table,
};
use privq_host::contract::Neighbours;

use super::results::{Cell, Format, FormatArg, write_rows};
use super::synth::NeighboursArg;
use super::{CliError, LedgerArgs};

/// Options of `privq sql`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
    privq sql \"SELECT region, COUNT(*), AVG(temp), MEDIAN(temp) FROM readings GROUP BY region\" \\\n    \
    --table readings=readings.csv --privacy-unit device --max-groups 1 --max-rows 10 \\\n    \
    --bounds temp=-20:50 --keys region=north,south,east,west --epsilon 1\n  \
    privq sql \"SELECT region, COUNT(*) FROM readings GROUP BY region\" --table readings=readings.csv \\\n    \
    --privacy-unit device --epsilon 1 --delta 1e-6\n  \
    privq sql \"SELECT region, BIN(temp, -20, 0, 20, 50) AS band, COUNT(*) FROM readings GROUP BY region, band\" \\\n    \
    --table readings=readings.csv --privacy-unit device --max-groups 3 --keys region=north,south --epsilon 1\n\n\
    Supported: one table; SELECT group-by columns and COUNT(*), SUM(x), AVG(x), VARIANCE(x), \
    STDDEV(x), MEDIAN(x), QUANTILE(x, q); WHERE comparing columns with literals (=, <>, <, <=, \
    >, >=, BETWEEN, IN, IS NULL; AND, OR, NOT; numbers unquoted, text 'quoted'; an empty \
    field is NULL and, as in SQL, a comparison with NULL or of a non-number with a number \
    keeps no row, nor does its NOT); GROUP BY \
    plain columns and histogram bins BIN(x, e0, e1, ...) (literal edges, strictly increasing; \
    bins [e0, e1), ..., [e(k-1), ek], values outside clamped into the end bins; every bin is \
    released, so --keys lists the other group-by columns only). Names and keys are \
    case-sensitive. The output lists the group-by columns, \
    then each aggregate with the bounds of its interval (NAME_lo, NAME_hi; none for \
    quantiles).\n\n\
    The guarantee is per privacy unit (--privacy-unit; without it, per row): each unit \
    contributes at most --max-rows rows to each of at most --max-groups groups (each of a \
    histogram's bins with each key is a group), chosen at random; every value is clamped into its --bounds. Groups are the public --keys, or are \
    selected privately with --delta (a group held by few units is dropped). epsilon is split \
    evenly over the measurements: a count, each SUM, each AVG's sum (AVG shares the count), \
    each quantile, and the group selection.")]
pub struct Args {
    /// The query (see below for the supported subset).
    #[arg(value_name = "QUERY")]
    pub query: String,
    /// The table the query reads: NAME=PATH (a CSV file with a header; PATH `-`:
    /// standard input; a file ending in `.parquet`: a Parquet file, with feature
    /// `analytics`, its text, integer, float and boolean columns read as the text a
    /// CSV field would hold).
    #[arg(long, value_name = "NAME=PATH")]
    pub table: String,
    /// The column naming the person or device each row belongs to: the unit the
    /// guarantee protects. Without it every row is its own unit.
    #[arg(long, value_name = "COLUMN")]
    pub privacy_unit: Option<String>,
    /// The most groups one unit contributes to (needs --privacy-unit; 1 to 1000000).
    /// The noise grows in proportion: choose the smallest limit most units keep to.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = contribution_limit())]
    pub max_groups: u32,
    /// The most rows one unit contributes to one group (needs --privacy-unit; 1 to
    /// 1000000). The noise grows in proportion: choose the smallest limit most units
    /// keep to.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = contribution_limit())]
    pub max_rows: u32,
    /// The public range of a numeric column, COLUMN=LO:HI (repeat for each column an
    /// aggregate reads). Values outside are clamped into it.
    #[arg(long, value_name = "COLUMN=LO:HI")]
    pub bounds: Vec<String>,
    /// The public groups of a group-by column, COLUMN=A,B,... (repeat per column;
    /// the groups are every combination; a value holding a comma in double quotes,
    /// as in CSV, the whole option quoted for the shell: 'region="north, upper",south').
    /// A listed group the data lacks is released as noisy zeros; rows of unlisted
    /// groups are left out.
    #[arg(long, value_name = "COLUMN=A,B,...")]
    pub keys: Vec<String>,
    /// Select the groups privately instead of --keys, with this δ: a group is
    /// released when its noisy number of units clears a threshold.
    #[arg(long, value_name = "DELTA")]
    pub delta: Option<f64>,
    /// Privacy budget ε for the whole query: a decimal (`0.5`) or a fraction (`1/2`).
    #[arg(long, value_name = "EPS", allow_hyphen_values = true)]
    pub epsilon: String,
    /// The neighbour relation, over privacy units: add/remove one unit, or replace one.
    #[arg(long, value_enum, default_value = "add-remove")]
    pub neighbours: NeighboursArg,
    /// The confidence level of the intervals.
    #[arg(long, value_name = "LEVEL", default_value_t = 0.95)]
    pub confidence: f64,
    /// Steps between a quantile's candidate values (spread evenly over the bounds).
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub quantile_candidates: u32,
    /// Drop rows whose privacy unit is empty or whose aggregated or binned values
    /// are not finite numbers (blank, text, NaN), instead of stopping at the first one. A
    /// per-row rule: it costs nothing, and how many rows it drops is not shown.
    #[arg(long)]
    pub drop_invalid: bool,
    /// The most rows read from the table (a larger table is refused before anything
    /// is spent).
    #[arg(long, value_name = "N", default_value_t = 100_000_000)]
    pub max_table_rows: usize,
    /// Seed for a reproducible run (tests and demos only: it makes the noise removable).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Output format.
    #[command(flatten)]
    pub format: FormatArg,
    /// Write the results to PATH instead of standard output, atomically: the file
    /// appears whole once the release is made, or not at all (a refused run leaves
    /// it as it was). A path ending in `.parquet` is written as Parquet whatever
    /// --format says (feature `analytics`; not with --format json): group-by columns
    /// as text, counts as 64-bit integers, the other estimates and the interval
    /// bounds as doubles. A name ending in `.json` or `.csv` needs that --format. Never
    /// the table, the ledger or the budget file; a link at PATH is replaced by the
    /// file, not followed. `-`: standard output.
    #[arg(long, short = 'o', value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Where the exact bounded aggregates are computed: in this process, by
    /// DataFusion in this process (feature `analytics`), or on an Apache Ballista
    /// cluster started in this process (feature `ballista`: a scheduler and an
    /// executor on loopback ports, unauthenticated, which receive the plan and the
    /// secret bounding key; use it on a machine whose users you trust). Both read a
    /// CSV or Parquet file, not standard input. The noise is added once, here, by the
    /// same code: the same seed releases the same bytes on every engine.
    #[arg(long, value_enum, default_value = "in-process")]
    pub engine: SqlEngine,
    /// Target partitions (and threads; Ballista: the executor's task slots), with
    /// `--engine datafusion` or `--engine ballista`.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub partitions: usize,
    /// The ledger.
    #[command(flatten)]
    pub ledger: LedgerArgs,
}

/// The engine of `privq sql` (`--engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum SqlEngine {
    /// The table read and bounded in this process.
    #[default]
    InProcess,
    /// DataFusion in this process (feature `analytics`).
    Datafusion,
    /// Apache Ballista in standalone mode, started in this process (feature
    /// `ballista`).
    Ballista,
}

impl SqlEngine {
    /// The engine's name on the command line.
    fn name(self) -> &'static str {
        match self {
            SqlEngine::InProcess => "in-process",
            SqlEngine::Datafusion => "datafusion",
            SqlEngine::Ballista => "ballista",
        }
    }
}

fn usage(option: &'static str, message: impl Into<String>) -> CliError {
    CliError::Usage {
        option,
        message: message.into(),
    }
}

/// The parser of `--max-groups` and `--max-rows`: 1 to [`MAX_CONTRIBUTION`].
fn contribution_limit() -> clap::builder::RangedI64ValueParser<u32> {
    clap::value_parser!(u32).range(1..=i64::from(MAX_CONTRIBUTION))
}

/// Charges the run's cost to the budget file, if one is given, before anything
/// is released; the charge is recorded with the query and the table, so that
/// `privq budget show` tells the charges apart.
fn reserve(
    args: &Args,
    plan: &Plan,
    accountant: &privq_host::accountant::Accountant,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    let label = format!("privq sql {:?} --table {}", args.query, args.table);
    args.ledger
        .reserve_for(accountant, &label, plan.privacy_unit(), stderr)
}

/// An error reading the table, a table over `--max-table-rows` named as that
/// option's (on every engine).
fn table_error(e: AggregateError) -> CliError {
    match e {
        AggregateError::TooManyRows { .. } => usage("max-table-rows", e.to_string()),
        e => e.into(),
    }
}

/// Splits `NAME=VALUE`.
fn pair<'a>(option: &'static str, text: &'a str) -> Result<(&'a str, &'a str), CliError> {
    text.split_once('=')
        .map(|(a, b)| (a.trim(), b.trim()))
        .filter(|(a, _)| !a.is_empty())
        .ok_or_else(|| usage(option, format!("{text:?} is not NAME=VALUE")))
}

/// The values of `--keys COLUMN=A,B,...`, each trimmed (as the data's fields are);
/// a value holding a comma is written in double quotes, a quote in it doubled
/// (`north,"north, upper"`).
fn key_list(text: &str) -> Result<Vec<String>, CliError> {
    let bad = |why: &str| {
        usage(
            "keys",
            format!("{text:?}: {why} (a value holding a comma is quoted: \"a, b\")"),
        )
    };
    let mut values = Vec::new();
    let mut rest = text;
    loop {
        let field = rest.trim_start();
        let (value, after) = match field.strip_prefix('"') {
            Some(quoted) => {
                let mut value = String::new();
                let mut tail = quoted;
                loop {
                    let Some(q) = tail.find('"') else {
                        return Err(bad("a quote is not closed"));
                    };
                    value.push_str(&tail[..q]);
                    tail = &tail[q + 1..];
                    match tail.strip_prefix('"') {
                        Some(t) => {
                            value.push('"');
                            tail = t;
                        }
                        None => break,
                    }
                }
                let after = tail.trim_start();
                if !(after.is_empty() || after.starts_with(',')) {
                    return Err(bad("text after a closing quote"));
                }
                (value, after)
            }
            None => {
                let end = field.find(',').unwrap_or(field.len());
                (field[..end].trim().to_string(), &field[end..])
            }
        };
        values.push(value.trim().to_string());
        match after.strip_prefix(',') {
            Some(next) => rest = next,
            None => return Ok(values),
        }
    }
}

/// The plan the options describe for `sql`: the library's [`SqlRequest`] checks
/// how they fit the query; a refusal names the option as the program spells it.
pub fn plan(args: &Args) -> Result<(Plan, String, PathBuf), CliError> {
    let (name, path) = pair("table", &args.table)?;
    let refused = |e: AggregateError| match e.option() {
        Some(option) => usage(option, e.to_string()),
        None => CliError::from(e),
    };
    let mut request = SqlRequest::new(&args.query)?
        .tables([name])
        .limits(args.max_groups, args.max_rows)
        .neighbours(Neighbours::from(args.neighbours))
        .confidence(args.confidence)
        .quantile_candidates(args.quantile_candidates)
        .drop_invalid(args.drop_invalid);
    let epsilon = super::parse_epsilon(&args.epsilon)?;
    if let Some(unit) = &args.privacy_unit {
        request = request.privacy_unit(unit, args.max_groups, args.max_rows);
    }
    for b in &args.bounds {
        let (column, range) = pair("bounds", b)?;
        let bounds: Bounds = range.parse()?;
        request = request.bounds(column, bounds);
    }
    for k in &args.keys {
        let (column, values) = pair("keys", k)?;
        request = request.keys(column, key_list(values)?.iter().map(|v| v.trim()));
    }
    if let Some(delta) = args.delta {
        request = request.delta(delta);
    }
    let plan = request.build(epsilon).map_err(refused)?;
    Ok((plan, name.to_string(), PathBuf::from(path)))
}

/// Runs `privq sql`.
pub fn run(
    args: &Args,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    let (plan, _, path) = plan(args)?;
    table_not_directory(&path)?;
    let (mut output, parquet) = open_output(args, &path)?;
    for warning in plan.warnings() {
        writeln!(stderr, "privq: warning: {warning}")?;
    }
    let release = match args.engine {
        SqlEngine::InProcess => {
            let csv = |input: &mut dyn BufRead| {
                Table::from_csv(input, &plan.columns(), args.max_table_rows).map_err(table_error)
            };
            let table = if path.as_os_str() == "-" {
                csv(stdin)?
            } else if is_parquet(&path) {
                parquet_table(&path, &plan, args.max_table_rows)?
            } else {
                let file = std::fs::File::open(&path).map_err(|e| CliError::file(&path, e))?;
                csv(&mut std::io::BufReader::new(file))?
            };
            let mut rng = super::rng(args.seed, stderr)?;
            plan.check_table(&table)?;
            let mut accountant = plan.accountant()?;
            reserve(args, &plan, &accountant, stderr)?;
            let release = plan.release_charged(&table, &mut accountant, &mut rng)?;
            (release, accountant)
        }
        SqlEngine::Datafusion | SqlEngine::Ballista => engine_release(args, &plan, &path, stderr)?,
    };
    let (release, accountant) = release;
    // Budget is spent from here: a failure still writes the ledger and says so.
    let encoded = if parquet {
        release_parquet(&release)
    } else {
        let mut out = Vec::new();
        write_release(&release, args.format.format, &mut out).map(|()| out)
    };
    let bytes = args.ledger.after_charge(&accountant, stderr, encoded)?;
    let to_file = matches!(output, super::Output::File(..));
    let place = output.describe();
    let written = match output.writer(stdout).write_all(&bytes) {
        Ok(()) => output.commit(stdout),
        Err(e) => Err(e.into()),
    };
    if let Err(e) = written {
        // The release is paid for: rather than lose it, CSV or JSON goes to
        // standard output (not Parquet's binary), and the run still fails.
        let failure = if to_file && !parquet && stdout.write_all(&bytes).is_ok() {
            CliError::Run(
                format!("{e}; the results were written to standard output instead of {place}")
                    .into(),
            )
        } else {
            e
        };
        return args.ledger.after_charge(&accountant, stderr, Err(failure));
    }
    let limits = plan.contribution();
    let unit = match &args.privacy_unit {
        Some(u) => format!(
            "privacy unit {u:?}: at most {} group(s) and {} row(s) per group each",
            limits.max_groups(),
            limits.max_rows()
        ),
        None => "privacy unit: one row".into(),
    };
    let groups = match release.threshold() {
        Some(t) => format!("groups selected privately (threshold {t} units)"),
        None => "public groups".into(),
    };
    writeln!(
        stderr,
        "privq: {} group(s) released; {unit}; {groups}; ε = {} per measurement; \
         intervals at {} confidence cover the clamped, bounded data's value; privacy: {} under {}",
        release.rows().len(),
        {
            let share = plan.epsilon_share();
            privq_host::accountant::short_ratio(share.num(), share.den(), true)
        },
        args.confidence,
        plan.cost(),
        plan.neighbours().phrase().replace("record", "unit")
    )?;
    quantile_notes(&plan, &release, args.confidence, stderr)?;
    writeln!(stderr, "privq: ledger:\n{}", args.ledger.text(&accountant))?;
    args.ledger.write(&accountant)
}

/// `--output`, checked and opened before the table is read or anything is charged
/// (see its help): the output, and whether it is written as Parquet.
fn open_output(args: &Args, table: &std::path::Path) -> Result<(super::Output, bool), CliError> {
    let Some(path) = args.output.as_deref() else {
        return Ok((super::Output::Stdout, false));
    };
    let format = args.format.format;
    let named = |ext: &str| {
        path.extension()
            .is_some_and(|e| e.eq_ignore_ascii_case(ext))
    };
    let parquet = named("parquet");
    if parquet && format != Format::Csv {
        return Err(usage(
            "format",
            "a --output ending in .parquet is written as Parquet; --format json writes JSON \
             (name the file .json)",
        ));
    }
    // A name that says JSON or CSV holds what it says.
    let (json, csv) = (named("json"), named("csv"));
    if (json && format != Format::Json) || (csv && format != Format::Csv) {
        let (holds, give) = if json {
            ("CSV", "json")
        } else {
            ("JSON", "csv")
        };
        return Err(usage(
            "format",
            format!(
                "--output {} would hold {holds}: give --format {give} (or name the file for \
                 its format)",
                path.display()
            ),
        ));
    }
    if parquet && !cfg!(feature = "analytics") {
        return Err(usage(
            "output",
            "writing a Parquet file needs privq built with feature `analytics` (or write CSV)",
        ));
    }
    super::refuse_overwriting_input(table, Some(path), "output")?;
    for (other, option) in [
        (&args.ledger.ledger_json, "--ledger-json"),
        (&args.ledger.budget_file, "--budget-file"),
    ] {
        if other.as_deref().is_some_and(|o| super::same_file(o, path)) {
            return Err(usage(
                "output",
                format!("{} is also the {option} file", path.display()),
            ));
        }
    }
    Ok((super::Output::open(Some(path))?, parquet))
}

/// What a released quantile's rank is guaranteed to be ([`Plan::quantile_rank_errors`]),
/// and, when the query counts rows, in how many groups that bound reaches half the
/// group's noisy count (there the value may lie anywhere between the bounds).
fn quantile_notes(
    plan: &Plan,
    release: &Release,
    confidence: f64,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    for note in plan.quantile_notes(release) {
        let (name, ranks) = (&note.name, note.ranks);
        let mut text = format!(
            "privq: {name}: its rank among a group's bounded values is within ±{ranks:.0} of \
             the best candidate's (at {confidence} confidence; values that tie, or fall \
             between candidates, can widen that to the whole gap between candidates)"
        );
        if let Some(loose) = note.loose_groups.filter(|&n| n > 0) {
            text.push_str(&format!(
                "; in {loose} of {} group(s) that is over half the noisy count (rows), so \
                 {name} there may lie anywhere between the bounds: do not publish it there \
                 (fewer aggregates in the query, each of which takes a share of ε, a larger \
                 ε, or more units per group narrow it)",
                release.rows().len()
            ));
        } else if note.loose_groups.is_none() {
            text.push_str(
                "; add COUNT(*) to the query to see the groups where that is over half the \
                 group",
            );
        }
        writeln!(stderr, "{text}")?;
    }
    Ok(())
}

/// The release with the exact totals computed by DataFusion: the bounding key is
/// drawn first, as [`Plan::release_charged`] draws it, so the same seed keeps the
/// same rows and draws the same noise; bad input is refused before any charge.
#[cfg(feature = "analytics")]
fn engine_release(
    args: &Args,
    plan: &Plan,
    path: &std::path::Path,
    stderr: &mut dyn Write,
) -> Result<(Release, privq_host::accountant::Accountant), CliError> {
    use privq_analytics::private_sql::{totals_csv, totals_parquet};
    let name = args.engine.name();
    if path.as_os_str() == "-" {
        return Err(usage(
            "engine",
            format!("--engine {name} reads a CSV or Parquet file, not standard input"),
        ));
    }
    #[cfg(not(feature = "ballista"))]
    if args.engine == SqlEngine::Ballista {
        return Err(usage(
            "engine",
            "--engine ballista needs privq built with feature `ballista`",
        ));
    }
    let mut rng = super::rng(args.seed, stderr)?;
    let key = privq_host::aggregate::BoundingKey::draw(&mut rng);
    let (rows, n) = (args.max_table_rows, args.partitions);
    let totals = match (args.engine, is_parquet(path)) {
        #[cfg(feature = "ballista")]
        (SqlEngine::Ballista, true) => {
            privq_analytics::private_sql::totals_parquet_ballista(path, plan, key, rows, n)
        }
        #[cfg(feature = "ballista")]
        (SqlEngine::Ballista, false) => {
            privq_analytics::private_sql::totals_csv_ballista(path, plan, key, rows, n)
        }
        (_, true) => totals_parquet(path, plan, key, rows, n),
        (_, false) => totals_csv(path, plan, key, rows, n),
    }
    .map_err(|e| engine_error(path, e))?;
    let mut accountant = plan.accountant()?;
    // The totals' shape checked before the budget file is charged.
    plan.check_totals(&totals)?;
    reserve(args, plan, &accountant, stderr)?;
    let release = plan.release_totals(totals, &mut accountant, &mut rng)?;
    Ok((release, accountant))
}

/// Refuses a directory as a table (named `*.parquet` or not), before either engine
/// reads it and with the same error: the DataFusion engine would read every file
/// under it (it refuses any path that is not a regular file the same way).
fn table_not_directory(path: &std::path::Path) -> Result<(), CliError> {
    if path.as_os_str() != "-" && std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(CliError::file(
            path,
            privq_host::aggregate::not_a_regular_file(),
        ));
    }
    Ok(())
}

/// The release as the bytes of a Parquet file.
#[cfg(feature = "analytics")]
fn release_parquet(release: &Release) -> Result<Vec<u8>, CliError> {
    privq_analytics::release_parquet::to_parquet(release)
        .map_err(|e| CliError::at("writing the results as Parquet", e))
}

/// Refused before the release (see [`run`]); here for the types only.
#[cfg(not(feature = "analytics"))]
fn release_parquet(_: &Release) -> Result<Vec<u8>, CliError> {
    Err(usage(
        "output",
        "writing a Parquet file needs privq built with feature `analytics`",
    ))
}

/// True for a table path ending in `.parquet` (any case).
fn is_parquet(path: &std::path::Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("parquet"))
}

#[cfg(feature = "analytics")]
fn engine_error(path: &std::path::Path, e: privq_analytics::private_sql::EngineError) -> CliError {
    match e {
        privq_analytics::private_sql::EngineError::Aggregate(e) => table_error(e),
        e => CliError::at(path.display(), e),
    }
}

/// A Parquet table read in process, as the DataFusion engine reads it.
#[cfg(feature = "analytics")]
fn parquet_table(
    path: &std::path::Path,
    plan: &Plan,
    max_rows: usize,
) -> Result<privq_host::aggregate::Table, CliError> {
    privq_analytics::private_sql::table_parquet(path, &plan.columns(), max_rows)
        .map_err(|e| engine_error(path, e))
}

#[cfg(not(feature = "analytics"))]
fn parquet_table(
    _: &std::path::Path,
    _: &Plan,
    _: usize,
) -> Result<privq_host::aggregate::Table, CliError> {
    Err(usage(
        "table",
        "reading a Parquet table needs privq built with feature `analytics` (or convert it to CSV)",
    ))
}

#[cfg(not(feature = "analytics"))]
fn engine_release(
    args: &Args,
    _: &Plan,
    _: &std::path::Path,
    _: &mut dyn Write,
) -> Result<(Release, privq_host::accountant::Accountant), CliError> {
    let name = args.engine.name();
    Err(usage(
        "engine",
        format!("--engine {name} needs privq built with feature `analytics`"),
    ))
}

/// The release as a table: group-by columns, then each aggregate and its interval.
fn write_release(
    release: &Release,
    format: super::results::Format,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let with_interval = release.has_interval();
    let mut columns: Vec<String> = release.group_by().to_vec();
    for (i, name) in release.names().iter().enumerate() {
        columns.push(name.clone());
        if with_interval.get(i).copied().unwrap_or(false) {
            columns.push(format!("{name}_lo"));
            columns.push(format!("{name}_hi"));
        }
    }
    let rows: Vec<Vec<Cell>> = release
        .rows()
        .iter()
        .map(|row| {
            let mut cells: Vec<Cell> = row.key().iter().map(|k| Cell::Text(k.clone())).collect();
            for e in row.estimates() {
                cells.push(number(e.value()));
                if let Some((lo, hi)) = e.interval() {
                    cells.push(number(lo));
                    cells.push(number(hi));
                }
            }
            cells
        })
        .collect();
    let names: Vec<&str> = columns.iter().map(String::as_str).collect();
    write_rows(format, &names, rows.iter().map(|r| &r[..]), out)
}

/// A whole number (a count, a sum on a coarse grid) as an integer in both formats.
fn number(x: f64) -> Cell {
    privq_host::aggregate::whole_number(x).map_or(Cell::Num(x), |i| Cell::Exact(i.to_string()))
}

#[cfg(test)]
mod tests {
    use super::key_list;
    use privq_host::aggregate::Table;

    fn csv() -> String {
        let mut s = String::from("device,region,temp\n");
        for d in 0..300 {
            for r in 0..4 {
                let region = if d % 3 == 0 { "north" } else { "south" };
                s.push_str(&format!("d{d},{region},{}\n", (d + r) % 40));
            }
        }
        s
    }

    const QUERY: &str = "SELECT region, COUNT(*) AS n, AVG(temp), QUANTILE(temp, 0.25) \
                         FROM t GROUP BY region";

    #[test]
    fn key_lists_read_quoted_values() {
        let list = |t: &str| key_list(t).unwrap();
        assert_eq!(list("north,south"), ["north", "south"]);
        assert_eq!(list(" north , south "), ["north", "south"]);
        assert_eq!(
            list(r#"north, "north, upper" ,"say ""hi""",x"#),
            ["north", "north, upper", r#"say "hi""#, "x"]
        );
        assert_eq!(list(""), [""]);
        assert_eq!(list("a,,b"), ["a", "", "b"]);
        assert_eq!(list(r#""a","#), ["a", ""]);
        for bad in [r#""a"#, r#""a" b"#, r#"a,"b""c"#] {
            assert!(key_list(bad).is_err(), "{bad}");
        }
    }

    #[cfg(feature = "analytics")]
    #[test]
    fn datafusion_prints_the_same_bytes_and_refuses_the_same_input() {
        let dir = std::env::temp_dir().join(format!("privq-sql-engine-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.csv");
        let mut text = csv();
        text.push_str(&"heavy,north,39\n".repeat(10_000));
        std::fs::write(&path, &text).unwrap();
        let table = format!("t={}", path.display());
        let run = |engine: &str, query: &str, groups: &[&str]| {
            let mut argv = vec![
                "sql",
                query,
                "--table",
                &table,
                "--privacy-unit",
                "device",
                "--max-rows",
                "3",
                "--bounds",
                "temp=0:40",
                "--epsilon",
                "1",
                "--seed",
                "9",
                "--engine",
                engine,
            ];
            argv.extend(groups);
            crate::run_with(&argv, "").map_err(|e| e.to_string())
        };
        for (query, groups) in [
            (QUERY, &["--keys", "region=north,south,west"][..]),
            (
                "SELECT region, COUNT(*), VARIANCE(temp), MEDIAN(temp) FROM t WHERE temp > 3 \
                 GROUP BY region",
                &["--delta", "1e-6"][..],
            ),
        ] {
            let a = run("in-process", query, groups).unwrap();
            let b = run("datafusion", query, groups).unwrap();
            assert_eq!(a, b);
            #[cfg(feature = "ballista")]
            assert_eq!(run("ballista", query, groups).unwrap(), a);
        }
        std::fs::write(&path, "device,region,temp\nd,north,1\ne,south,NaN\n").unwrap();
        let q = (QUERY, &["--keys", "region=north"][..]);
        let a = run("in-process", q.0, q.1).unwrap_err();
        assert!(a.contains("line 3"), "{a}");
        assert_eq!(run("datafusion", q.0, q.1).unwrap_err(), a);
        #[cfg(feature = "ballista")]
        assert_eq!(run("ballista", q.0, q.1).unwrap_err(), a);
        // A row with the wrong number of fields: the in-process reader's error.
        std::fs::write(&path, "device,region,temp\nd,north,1\ne,south\n").unwrap();
        let a = run("in-process", q.0, q.1).unwrap_err();
        assert_eq!(run("datafusion", q.0, q.1).unwrap_err(), a);
        #[cfg(feature = "ballista")]
        assert_eq!(run("ballista", q.0, q.1).unwrap_err(), a);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A directory as a table (named `*.parquet` or `*.csv`): refused alike by both
    /// engines (DataFusion would read every file under it).
    #[cfg(feature = "analytics")]
    #[test]
    fn a_directory_is_refused_by_both_engines() {
        let dir = std::env::temp_dir().join(format!("privq-sql-dir-{}", std::process::id()));
        for name in ["d.parquet", "d.csv"] {
            let d = dir.join(name);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("a.csv"), csv()).unwrap();
            let table = format!("t={}", d.display());
            let run = |engine: &str| {
                let engine: &[&str] = &["--engine", engine];
                let argv = [&small_query(&table, "9")[..], engine].concat();
                crate::run_with(&argv, "").map_err(|e| e.to_string())
            };
            let a = run("in-process").unwrap_err();
            assert!(a.contains("not a regular file"), "{a}");
            assert_eq!(run("datafusion").unwrap_err(), a);
            #[cfg(feature = "ballista")]
            assert_eq!(run("ballista").unwrap_err(), a);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn prints_what_the_library_releases() {
        let argv = [
            "sql",
            QUERY,
            "--table",
            "t=-",
            "--privacy-unit",
            "device",
            "--max-rows",
            "3",
            "--bounds",
            "temp=0:40",
            "--keys",
            "region=north,south,west",
            "--epsilon",
            "1",
            "--seed",
            "5",
        ];
        let (out, err) = crate::run_with(&argv, &csv()).unwrap();
        use clap::Parser;
        let Ok(crate::Cli {
            command: crate::Command::Sql(cli),
        }) = crate::Cli::try_parse_from(std::iter::once("privq").chain(argv))
        else {
            panic!("not a sql command line")
        };
        let (plan, _, _) = super::plan(&cli).unwrap();
        assert_eq!(
            plan.accountant().unwrap().neighbours(),
            Some(super::Neighbours::AddRemove)
        );
        let table = Table::from_csv(csv().as_bytes(), &plan.columns(), 1 << 20).unwrap();
        let (release, _) = plan
            .release(&table, &mut privq_host::seeded_rng(5))
            .unwrap();
        let mut expected = Vec::new();
        super::write_release(&release, super::super::results::Format::Csv, &mut expected).unwrap();
        assert_eq!(out, String::from_utf8(expected).unwrap());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "region,n,n_lo,n_hi,AVG(temp),AVG(temp)_lo,AVG(temp)_hi,\"QUANTILE(temp, 0.25)\""
        );
        assert_eq!(lines.len(), 4);
        assert!(lines[3].starts_with("west,"));
        assert!(err.contains("ε = 1/3 per measurement"), "{err}");
        assert!(err.contains("total: ε = 1 of 1"), "{err}");
        // The library's note on the quantile: a handful of rows per group is far
        // below its rank bound.
        let [note] = &plan.quantile_notes(&release)[..] else {
            panic!("one quantile")
        };
        assert_eq!(note.loose_groups, Some(3));
        assert!(
            err.contains(&format!(
                "{}: its rank among a group's bounded values is within ±{:.0}",
                note.name, note.ranks
            )) && err.contains("in 3 of 3 group(s) that is over half the noisy count"),
            "{err}"
        );
    }

    /// `QUERY` over `table` (`NAME=PATH`) by device, with public keys north and
    /// south, at ε = 1 and `seed`.
    fn small_query<'a>(table: &'a str, seed: &'a str) -> Vec<&'a str> {
        vec![
            "sql",
            QUERY,
            "--table",
            table,
            "--privacy-unit",
            "device",
            "--bounds",
            "temp=0:40",
            "--keys",
            "region=north,south",
            "--epsilon",
            "1",
            "--seed",
            seed,
        ]
    }

    #[test]
    fn output_files_appear_whole_or_not_at_all() {
        let dir = std::env::temp_dir().join(format!("privq-sql-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let table = dir.join("t.csv");
        std::fs::write(&table, csv()).unwrap();
        let table_arg = format!("t={}", table.display());
        let run = |extra: &[&str]| {
            let argv = [&small_query(&table_arg, "3")[..], extra].concat();
            crate::run_with(&argv, "").map_err(|e| e.to_string())
        };
        // The bytes standard output would carry, in the file; nothing on stdout.
        let (printed, _) = run(&[]).unwrap();
        let out = dir.join("r.csv");
        let (stdout, _) = run(&["--output", out.to_str().unwrap()]).unwrap();
        assert_eq!(stdout, "");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), printed);
        // A refused run (its budget file over the cap) leaves the old file as it was
        // and no temporary file beside it.
        let budget = dir.join("b.json");
        let over = [
            "--output",
            out.to_str().unwrap(),
            "--budget-file",
            budget.to_str().unwrap(),
            "--budget-cap",
            "1/2",
        ];
        let err = run(&over).unwrap_err();
        assert!(err.contains("exceed"), "{err}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), printed);
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with("b.json"))
            .collect();
        names.sort();
        assert_eq!(names, ["r.csv", "t.csv"]);
        // Never over the table, the ledger or the budget file.
        let err = run(&["--output", table.to_str().unwrap()]).unwrap_err();
        assert!(err.contains("would replace the private data"), "{err}");
        let ledger = dir.join("l.json");
        let l = ledger.to_str().unwrap();
        // A file named for one format holds that format; a directory path is refused.
        let err = run(&["--output", l]).unwrap_err();
        assert!(err.contains("would hold CSV: give --format json"), "{err}");
        let slash = format!("{}/", dir.join("none").display());
        let err = run(&["--output", &slash]).unwrap_err();
        assert!(err.contains("is a directory"), "{err}");
        let err = run(&["--output", l, "--ledger-json", l, "--format", "json"]).unwrap_err();
        assert!(err.contains("is also the --ledger-json file"), "{err}");
        assert!(!ledger.exists());
        // Parquet: JSON is not written into a .parquet file; without feature
        // `analytics` Parquet is refused, with it the file is Parquet.
        let pq = dir.join("r.parquet");
        let p = pq.to_str().unwrap();
        let err = run(&["--output", p, "--format", "json"]).unwrap_err();
        assert!(err.contains("name the file .json"), "{err}");
        #[cfg(not(feature = "analytics"))]
        assert!(
            run(&["--output", p])
                .unwrap_err()
                .contains("feature `analytics`")
        );
        #[cfg(feature = "analytics")]
        {
            run(&["--output", p]).unwrap();
            assert_eq!(&std::fs::read(&pq).unwrap()[..4], b"PAR1");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_options_are_refused_before_anything_is_spent() {
        let base = [
            "sql",
            QUERY,
            "--table",
            "t=-",
            "--epsilon",
            "1",
            "--bounds",
            "temp=0:40",
        ];
        let bad: [(&[&str], &str); 10] = [
            (&["--keys", "region=a"], ""),
            (&["--delta", "1e-6", "--keys", "region=a"], "not both"),
            (&["--keys", "region=a,,b"], "empty value"),
            (&["--keys", "region=a,\"b"], "a quote is not closed"),
            (&["--keys", "region=\"a\"b"], "text after a closing quote"),
            (&["--keys", "city=a"], "does not group by"),
            (&["--max-rows", "5"], "--privacy-unit"),
            (
                &["--privacy-unit", "nobody", "--delta", "1e-6"],
                "no column \"nobody\"",
            ),
            (&["--delta", "1e-6", "--confidence", "1"], "confidence"),
            (&["--delta", "2"], "δ"),
        ];
        for (extra, needle) in bad {
            let mut argv = base.to_vec();
            argv.extend_from_slice(extra);
            if needle.is_empty() {
                // A well-formed run: the groups need not hold data.
                assert!(crate::run_with(&argv, &csv()).is_ok(), "{extra:?}");
                continue;
            }
            let e = crate::run_with(&argv, &csv()).unwrap_err().to_string();
            assert!(e.contains(needle), "{extra:?}: {e}");
        }
        let e = crate::run_with(&base, &csv()).unwrap_err().to_string();
        assert!(e.contains("needs its groups"), "{e}");
        // Contribution limits outside 1..=10⁶ are refused as the options are read.
        for (option, value) in [("--max-rows", "0"), ("--max-groups", "1000001")] {
            let argv = [&base[..], &["--privacy-unit", "device", option, value]].concat();
            let e =
                <crate::Cli as clap::Parser>::try_parse_from(std::iter::once("privq").chain(argv))
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default();
            assert!(e.contains("1..=1000000"), "{option} {value}: {e}");
        }
        let argv = [
            "sql",
            "SELECT COUNT(*) FROM t",
            "--table",
            "t=-",
            "--epsilon",
            "1",
        ];
        let e = crate::run_with(&argv, "a,b\n").unwrap_err().to_string();
        assert!(e.contains("no row"), "{e}");
    }

    #[test]
    fn a_budget_file_is_charged_before_the_release_and_refuses_past_its_cap() {
        let dir = crate::ledger_tests::scratch("sql-budget");
        let budget = dir.join("budget.json");
        let _ = std::fs::remove_file(&budget);
        let budget = budget.to_str().unwrap();
        let argv = [
            "sql",
            "SELECT COUNT(*) FROM t",
            "--table",
            "t=-",
            "--epsilon",
            "1",
            "--budget-file",
            budget,
            "--budget-cap",
            "3/2",
        ];
        let (out, err) = crate::run_with(&argv, &csv()).unwrap();
        assert!(out.starts_with("COUNT(*),"), "{out}");
        assert!(err.contains("budget file"), "{err}");
        // The second run would take the file to ε = 2 > 3/2: refused, nothing printed.
        let e = crate::run_with(&argv, &csv()).unwrap_err().to_string();
        assert!(e.contains("nothing was released"), "{e}");
        // An empty table is refused before the charge, so the file is unchanged.
        let e = crate::run_with(&argv, "a\n").unwrap_err().to_string();
        assert!(e.contains("no row"), "{e}");
    }
}

//! `privq knorm`: d linear queries over a histogram released with the K-norm
//! mechanism (thesis Def 3.3.1, Fig. 3.2), its recursive version NiKM (Fig. 3.3) or,
//! for comparison, the Laplace mechanism.

use std::fs;
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use privq_core::rand_core::Rng;
use privq_host::contract::Neighbours;
use privq_host::knorm::bounds::{
    VolLbOptions, coordinate_second_moment, km_squared_error, vol_lb, volume_lower_bound,
    volume_radius,
};
use privq_host::knorm::release::{Deployed, KnormMechanism, KnormRequest, release};
use privq_host::knorm::{Body, NikmOptions, Sampler, Shape};

use super::progress::bar;

use super::results::{Cell, FormatArg, write_rows};
use super::{CliError, LedgerArgs};

/// Options of `privq knorm`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:\n  \
    printf '40\\n2\\n7\\n' | privq knorm --body identity:3 --epsilon 1 --seed 7\n  \
    privq knorm --body hypercube:3 --counts counts.txt --epsilon 1/2 --mechanism laplace\n  \
    privq knorm --body random:4,64 --matrix-seed 1 --counts counts.txt --epsilon 1 --steps 200\n  \
    privq knorm --body identity:8 --counts counts.txt --epsilon 1 --mechanism nikm\n\n\
    Privacy status: on the cross-polytope and cube bodies the noise is drawn exactly, in\n\
    integers, from the discrete K-norm law on a data-independent grid: exactly ε-DP, with\n\
    no floating point. Any other body needs --steps (hit-and-run, sampled in floating\n\
    point), whose privacy is APPROXIMATE (unproven).")]
pub struct Args {
    /// The query matrix: `identity:D` (K = B₁ᴰ), `hypercube:D` (all of {−1,1}ᴰ as
    /// columns, K = B∞ᴰ), or `random:D,N` (random ±1 entries from --matrix-seed).
    #[arg(long, value_name = "SPEC", conflicts_with = "queries")]
    pub body: Option<String>,
    /// CSV of the query matrix, one row of N coefficients in [−1, 1] per query, no header.
    #[arg(long, value_name = "FILE", required_unless_present = "body")]
    pub queries: Option<PathBuf>,
    /// Seed of the public random matrix of `--body random:D,N`.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub matrix_seed: u64,
    /// The histogram: N non-negative integer counts, one per line or comma-separated
    /// (`-`, the default, for standard input).
    #[arg(long, value_name = "FILE")]
    pub counts: Option<PathBuf>,
    /// Privacy parameter ε of the release: a decimal or a fraction, read exactly.
    #[arg(long, value_name = "EPS", allow_hyphen_values = true)]
    pub epsilon: String,
    /// `km` (the K-norm mechanism), `nikm` (the recursive K-norm mechanism, thesis
    /// Fig. 3.3: ⌊log₂ d⌋ + 1 levels at ε/L each) or `laplace` (vector Laplace at the
    /// ℓ1 sensitivity).
    #[arg(long, default_value = "km", value_parser = ["km", "nikm", "laplace"])]
    pub mechanism: String,
    /// Hit-and-run steps for a body (or NiKM level) without an exact sampler
    /// (APPROXIMATE privacy).
    #[arg(long, value_name = "K")]
    pub steps: Option<usize>,
    /// NiKM: hit-and-run points estimating the covariance of a general level body.
    #[arg(long, value_name = "K", default_value_t = 2000)]
    pub covariance_samples: usize,
    /// NiKM: seed of the (public, data-independent) covariance chain.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub covariance_seed: u64,
    /// Neighbours: `add-remove` (one record added or removed, n private) or `replace`.
    #[arg(long, default_value = "add-remove", value_parser = ["add-remove", "replace"])]
    pub neighbours: String,
    /// Seed for a reproducible run. Anyone who knows the seed can remove the noise:
    /// tests and demos only.
    #[arg(long)]
    pub seed: Option<u64>,
    /// CSV or JSON answers.
    #[command(flatten)]
    pub format: FormatArg,
    /// Where to write the ledger as JSON, and --exact.
    #[command(flatten)]
    pub ledger: LedgerArgs,
}

fn bad(option: &'static str) -> CliError {
    CliError::Parameter {
        option,
        source: privq_core::Error::OutOfRange,
    }
}

/// Parses `identity:D`, `hypercube:D` or `random:D,N`.
fn parse_body(spec: &str, matrix_seed: u64) -> Result<Body, CliError> {
    let unknown = || CliError::Usage {
        option: "body",
        message: format!("unknown body `{spec}`; expected identity:D, hypercube:D or random:D,N"),
    };
    let (kind, rest) = spec.split_once(':').ok_or_else(unknown)?;
    let nums: Vec<usize> = rest
        .split(',')
        .map(|t| t.trim().parse().map_err(|_| unknown()))
        .collect::<Result<_, _>>()?;
    match (kind, &nums[..]) {
        ("identity", [d]) => Ok(Body::identity(*d)?),
        ("hypercube", [d]) => Ok(Body::hypercube(*d)?),
        ("random", [d, n]) => {
            let mut rng = privq_host::seeded_rng(matrix_seed);
            let rows: Vec<Vec<f64>> = (0..*d)
                .map(|_| {
                    (0..*n)
                        .map(|_| if rng.next_u32() & 1 == 1 { 1.0 } else { -1.0 })
                        .collect()
                })
                .collect();
            Ok(Body::from_rows(&rows)?)
        }
        _ => Err(unknown()),
    }
}

fn parse_matrix(text: &str) -> Result<Body, CliError> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let row = line
            .split(',')
            .enumerate()
            .map(|(k, t)| {
                super::finite(t, || format!("--queries line {}, column {}", i + 1, k + 1))
            })
            .collect::<Result<Vec<f64>, _>>()?;
        rows.push(row);
    }
    Ok(Body::from_rows(&rows)?)
}

fn parse_counts(text: &str) -> Result<Vec<u64>, CliError> {
    let mut counts = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for t in line.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let count = match t.parse() {
                Ok(c) => c,
                Err(_) => {
                    super::finite(t, || format!("counts line {}", i + 1))?;
                    return Err(CliError::Usage {
                        option: "counts",
                        message: format!(
                            "line {}: {t:?} is not a non-negative whole number of records",
                            i + 1
                        ),
                    });
                }
            };
            counts.push(count);
        }
    }
    if counts.is_empty() {
        return Err(CliError::EmptyInput);
    }
    Ok(counts)
}

/// Thm 3.2.3's `d·vr(K)/(16ε)` when `vr(K)` is exact (cross-polytope, cube). A
/// general body's volume radius would be a Monte Carlo point estimate, not a
/// bound, so none is printed for it (VolLB prints confidence limits instead).
fn lower_bound(body: &Body, epsilon: f64) -> Option<f64> {
    let d = body.dim();
    if body.shape() == Shape::General {
        return None;
    }
    let vr = volume_radius(body, 2000, &mut privq_host::seeded_rng(0)).ok()?;
    volume_lower_bound(d, vr, epsilon)
}

/// VolLB (Cor. 3.2.4) as a sentence for standard error: the largest
/// `k·vr_k(PK)/(16ε)` over coordinate, principal and inscribed projections (Monte
/// Carlo volumes with a fixed public seed, at 95 % confidence); skipped above
/// N = 4096, where the Monte Carlo LPs get slow.
fn vol_lb_note(body: &Body, epsilon: f64) -> String {
    if body.columns() > 4096 {
        return String::new();
    }
    let options = VolLbOptions {
        samples: 2000,
        ..VolLbOptions::default()
    };
    match vol_lb(body, epsilon, &options, &mut privq_host::seeded_rng(0)) {
        Ok(all) => all.first().map_or_else(String::new, |best| {
            format!(
                "; VolLB over {} projections (Cor. 3.2.4, 95 %): > {:.4} ({best})",
                all.len(),
                best.bound
            )
        }),
        Err(_) => String::new(),
    }
}

/// Runs `privq knorm`: prints `query,answer` for each of the d queries; the
/// mechanism, its privacy status and the ledger go to standard error.
pub fn run(
    args: &Args,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    let epsilon = super::parse_epsilon(&args.epsilon)?;
    let neighbours = match args.neighbours.as_str() {
        "replace" => Neighbours::Replace,
        _ => Neighbours::AddRemove,
    };
    let body = match (&args.body, &args.queries) {
        (Some(spec), _) => parse_body(spec, args.matrix_seed)?,
        (None, Some(path)) => {
            parse_matrix(&fs::read_to_string(path).map_err(|e| CliError::file(path, e))?)?
        }
        (None, None) => return Err(bad("queries")),
    };
    let mut text = String::new();
    match &args.counts {
        Some(path) if path.as_os_str() != "-" => {
            text = fs::read_to_string(path).map_err(|e| CliError::file(path, e))?
        }
        _ => {
            stdin.read_to_string(&mut text)?;
        }
    }
    let counts = parse_counts(&text)?;
    let d = body.dim();
    let mut rng = super::rng(args.seed, stderr)?;
    let mechanism = match args.mechanism.as_str() {
        "laplace" => KnormMechanism::Laplace,
        "nikm" => KnormMechanism::Nikm(NikmOptions {
            steps: args.steps,
            covariance_samples: args.covariance_samples,
            covariance_seed: args.covariance_seed,
        }),
        _ => KnormMechanism::KNorm { steps: args.steps },
    };
    let request = KnormRequest::new(epsilon, neighbours, mechanism);
    // What the release would refuse on the public inputs alone is refused here too,
    // before the run is charged to a budget file.
    if let KnormMechanism::KNorm { steps: None } = mechanism
        && body.shape() == Shape::General
    {
        return Err(privq_host::knorm::KnormError::NoExactSampler.into());
    }
    if counts.len() != body.columns() {
        return Err(privq_host::central::MechanismError::DimensionMismatch {
            expected: body.columns(),
            got: counts.len(),
        }
        .into());
    }
    // The run's budget: the request's accountant; with --steps a hit-and-run sampler
    // may be used, whose ε is booked as uncertified (the release decides per level).
    let mut budget = request.accountant();
    if args.steps.is_some() && mechanism != KnormMechanism::Laplace {
        budget.allow_uncertified();
    }
    args.ledger.reserve(&budget, "privq knorm", stderr)?;
    // The error bounds are public (F and ε only): computed before F goes to the
    // mechanism.
    let bounds = (mechanism != KnormMechanism::Laplace).then(|| {
        let lower = lower_bound(&body, epsilon.to_f64())
            .map(|lb| format!("; every ε-DP mechanism: ℓ2 error > {lb:.4} (Thm 3.2.3)"))
            .unwrap_or_default();
        (lower, vol_lb_note(&body, epsilon.to_f64()))
    });
    // NiKM's levels as they are built: a progress bar on a terminal, else one line
    // per level (the first failed write is kept in `lost`).
    let levels = privq_host::knorm::level_count(d) as u64;
    let nikm = matches!(mechanism, KnormMechanism::Nikm(_));
    let pb = (nikm && std::io::stderr().is_terminal()).then(|| bar(levels, "NiKM levels"));
    let mut lost = Ok(());
    let out = release(body, &counts, &request, &mut rng, &mut |l, n| match &pb {
        Some(pb) => pb.set_position(l as u64),
        None if lost.is_ok() => {
            lost = writeln!(stderr, "privq: NiKM: building level {} of {n}", l + 1);
        }
        None => {}
    });
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    let out = out?;
    lost?;
    let (lower, vol) = bounds.unwrap_or_default();
    match &out.mechanism {
        Deployed::Laplace(_) => {}
        Deployed::Nikm(mech) => {
            let levels: Vec<String> = mech
                .levels()
                .iter()
                .map(|l| {
                    let how = match l.km().sampler() {
                        Sampler::Exact => "exact".to_string(),
                        Sampler::HitAndRun { steps } => format!("hit-and-run {steps}"),
                    };
                    format!("{}/{} ({how})", l.subspace().len(), l.dim())
                })
                .collect();
            writeln!(
                stderr,
                "privq: NiKM levels (kept/dim): {}\nprivq: expected squared ℓ2 error of the ideal \
                 sampler (Thm 3.3.3 per level): {:.4} (rms {:.4}){lower}{vol}",
                levels.join(", "),
                mech.expected_squared_error(),
                mech.expected_squared_error().sqrt(),
            )?;
        }
        Deployed::KNorm(mech) => {
            if let Some(m) = coordinate_second_moment(mech.body()) {
                let e2 = km_squared_error(d, mech.scale(), d as f64 * m);
                writeln!(
                    stderr,
                    "privq: expected squared ℓ2 error (Thm 3.3.3, p = 2): {e2:.4} (rms {:.4}){lower}{vol}",
                    e2.sqrt(),
                )?;
            } else if !vol.is_empty() || !lower.is_empty() {
                writeln!(
                    stderr,
                    "privq: lower bounds:{}",
                    format!("{lower}{vol}").trim_start_matches(';')
                )?;
            }
        }
    }
    writeln!(
        stderr,
        "privq: {}\nprivq: privacy: {}\nprivq: ledger:\n{}",
        out.summary,
        out.status(),
        args.ledger.text(&out.accountant)
    )?;
    args.ledger.write(&out.accountant)?;
    let rows: Vec<[Cell; 2]> = out
        .answers
        .iter()
        .enumerate()
        .map(|(i, &a)| [Cell::Int(i as u64), Cell::Num(a)])
        .collect();
    write_rows(
        args.format.format,
        &["query", "answer"],
        rows.iter().map(|r| &r[..]),
        stdout,
    )
}

#[cfg(test)]
mod tests {
    use crate::run_with;

    #[test]
    fn km_on_the_identity_prints_d_grid_answers() {
        let (out, err) = run_with(
            &[
                "knorm",
                "--body",
                "identity:3",
                "--epsilon",
                "1",
                "--seed",
                "7",
            ],
            "40\n2\n7\n",
        )
        .unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4, "{out}");
        assert_eq!(lines[0], "query,answer");
        assert!(
            err.contains("K-norm") && err.contains("floating point"),
            "{err}"
        );
        // F = I₃: VolLB is the whole cross-polytope, 3·vr(B₁³)/16 = 0.1280.
        assert!(
            err.contains("VolLB over 5 projections (Cor. 3.2.4, 95 %): > 0.1280"),
            "{err}"
        );
    }

    #[test]
    fn nikm_prints_its_levels_and_one_charge() {
        let (out, err) = run_with(
            &[
                "knorm",
                "--body",
                "identity:4",
                "--epsilon",
                "1",
                "--seed",
                "7",
                "--mechanism",
                "nikm",
            ],
            "40\n2\n7\n1\n",
        )
        .unwrap();
        assert_eq!(out.lines().count(), 5, "{out}");
        assert!(
            err.contains("2/4 (exact), 1/2 (exact), 1/1 (exact)"),
            "{err}"
        );
        assert!(err.contains("1. NiKM") && !err.contains("2. "), "{err}");
        let (out, err) = run_with(
            &[
                "knorm",
                "--body",
                "random:3,6",
                "--epsilon",
                "1",
                "--seed",
                "1",
                "--mechanism",
                "nikm",
                "--steps",
                "12",
                "--covariance-samples",
                "100",
            ],
            "1,2,3,4,5,6",
        )
        .unwrap();
        assert_eq!(out.lines().count(), 4, "{out}");
        assert!(
            err.contains("APPROXIMATE") && err.contains("UNCERTIFIED"),
            "{err}"
        );
        // A general body without --steps.
        let argv = [
            "knorm",
            "--body",
            "random:3,6",
            "--epsilon",
            "1",
            "--mechanism",
            "nikm",
        ];
        assert!(run_with(&argv, "1,2,3,4,5,6").is_err());
    }

    #[test]
    fn laplace_and_hit_and_run_and_errors() {
        let (out, _) = run_with(
            &[
                "knorm",
                "--body",
                "hypercube:2",
                "--epsilon",
                "1/2",
                "--seed",
                "1",
                "--mechanism",
                "laplace",
            ],
            "1,2,3,4",
        )
        .unwrap();
        assert_eq!(out.lines().count(), 3);
        let (out, err) = run_with(
            &[
                "knorm",
                "--body",
                "random:5,8",
                "--epsilon",
                "1",
                "--seed",
                "1",
                "--steps",
                "20",
            ],
            "1,2,3,4,5,6,7,8",
        )
        .unwrap();
        assert_eq!(out.lines().count(), 6);
        assert!(err.contains("APPROXIMATE"), "{err}");
        // A general body without --steps, a wrong-length histogram, a bad spec.
        for (argv, input) in [
            (
                vec!["knorm", "--body", "random:5,8", "--epsilon", "1"],
                "1,2,3,4,5,6,7,8",
            ),
            (
                vec!["knorm", "--body", "identity:3", "--epsilon", "1"],
                "1,2",
            ),
            (vec!["knorm", "--body", "cube:3", "--epsilon", "1"], "1,2,3"),
            (
                vec!["knorm", "--body", "identity:3", "--epsilon", "1"],
                "1,x,3",
            ),
        ] {
            assert!(run_with(&argv, input).is_err(), "{argv:?}");
        }
    }
}

//! `privq audit`: run the privacy auditor's registered cases and print the table.

use std::io::{BufRead, IsTerminal, Write};

use clap::Args as ClapArgs;

use super::CliError;
use super::progress::bar;
use privq_host::audit::{AuditCase, AuditReport, audit, cases};

/// Arguments of `privq audit`.
#[derive(Debug, ClapArgs)]
#[command(after_help = "Example:\n    privq audit all --runs 20000 --seed 1\n\n\
    Runs each mechanism on a neighbouring pair of datasets many times and bounds the \
    privacy loss from below (95% Clopper-Pearson, Bonferroni over the events). Exits \
    non-zero if any empirical epsilon exceeds the claimed epsilon.")]
pub struct Args {
    /// A registered case (see `privq audit list`), `all`, or `list`.
    #[arg(default_value = "all")]
    pub mechanism: String,
    /// Runs per side (default: each case's own full-size budget).
    #[arg(long, value_name = "N")]
    pub runs: Option<u64>,
    /// Seed of the audit (every run's generator is derived from it).
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,
    /// Print the reports as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Use the small problem sizes of the test suite.
    #[arg(long)]
    pub quick: bool,
}

/// Runs `privq audit`.
pub fn run(
    args: &Args,
    _stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    if args.mechanism == "list" {
        for name in cases::names() {
            writeln!(stdout, "{name}")?;
        }
        return Ok(());
    }
    let selected = select(&args.mechanism, args.quick)?;
    let mut reports = Vec::with_capacity(selected.len());
    for case in &selected {
        let runs = args.runs.unwrap_or(case.default_runs());
        reports.push(run_case(case, runs, args.seed, stderr)?);
    }
    if args.json {
        let json = serde_json::to_string_pretty(&reports)?;
        writeln!(stdout, "{json}")?;
    } else {
        write_table(&reports, stdout)?;
    }
    let violated = reports.iter().filter(|r| !r.passed()).count();
    if violated > 0 {
        return Err(CliError::Run(
            format!(
                "{violated} of {} audited mechanisms exceed their claimed epsilon",
                reports.len()
            )
            .into(),
        ));
    }
    Ok(())
}

/// The cases named by `which` (`all` or one name).
fn select(which: &str, quick: bool) -> Result<Vec<AuditCase>, CliError> {
    if which == "all" {
        return Ok(cases::REGISTRY
            .iter()
            .map(|r| (r.make)(quick))
            .collect::<Result<_, _>>()?);
    }
    match cases::by_name(which, quick) {
        Some(case) => Ok(vec![case?]),
        None => Err(CliError::Run(
            format!(
                "no audit case named {which:?}; the cases are: all, {}",
                cases::names().join(", ")
            )
            .into(),
        )),
    }
}

/// Audits one case with progress: a bar on a terminal, plain lines otherwise.
fn run_case(
    case: &AuditCase,
    runs: u64,
    seed: u64,
    stderr: &mut dyn Write,
) -> Result<AuditReport, CliError> {
    let report = if std::io::stderr().is_terminal() {
        let pb = bar(2 * runs, case.name());
        let report = audit(case, runs, seed, &|k| pb.inc(k));
        pb.finish_and_clear();
        report
    } else {
        writeln!(
            stderr,
            "privq: audit {}: {runs} runs on D and on D'",
            case.name()
        )?;
        audit(case, runs, seed, &|_| {})
    }?;
    writeln!(
        stderr,
        "privq: audit {}: empirical epsilon {:.3} (claimed {:.3}) {}",
        report.name,
        report.empirical_epsilon,
        report.claimed_epsilon,
        report.witness.as_deref().unwrap_or("no separating event")
    )?;
    Ok(report)
}

/// The audit table.
fn write_table(reports: &[AuditReport], out: &mut dyn Write) -> Result<(), CliError> {
    let width = reports
        .iter()
        .map(|r| r.neighbours.chars().count())
        .max()
        .unwrap_or(0)
        .max(14);
    writeln!(
        out,
        "{:<30} {:<width$} {:>7} {:>12} {:>9}  verdict",
        "mechanism", "neighbour pair", "runs", "empirical ε", "claimed ε"
    )?;
    for r in reports {
        let claimed = if r.claimed_delta > 0.0 {
            format!("{:.3}*", r.claimed_epsilon)
        } else {
            format!("{:.3}", r.claimed_epsilon)
        };
        writeln!(
            out,
            "{:<30} {:<width$} {:>7} {:>12.3} {:>9}  {}",
            r.mechanism,
            r.neighbours,
            r.runs,
            r.empirical_epsilon,
            claimed,
            r.verdict()
        )?;
    }
    if reports.iter().any(|r| r.claimed_delta > 0.0) {
        writeln!(
            out,
            "* (ε, δ) claim: the bound is δ-adjusted, ln((p − δ)/q)"
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::{CliError, run_with};

    #[test]
    fn audits_one_case_and_prints_a_table() {
        let (out, err) = run_with(
            &["audit", "geometric-histogram", "--runs", "300", "--quick"],
            "",
        )
        .unwrap();
        assert!(
            out.contains("Geometric (Δ = 2)") && out.contains("ok"),
            "{out}"
        );
        assert!(
            err.contains("privq: audit geometric-histogram: empirical epsilon"),
            "{err}"
        );
    }

    #[test]
    fn json_and_list_and_unknown_names() {
        let (out, _) = run_with(
            &["audit", "exponential", "--runs", "200", "--quick", "--json"],
            "",
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v[0]["runs"], 200);
        assert_eq!(v[0]["claimed_epsilon"], 1.0);
        let (list, _) = run_with(&["audit", "list"], "").unwrap();
        assert!(list.lines().any(|l| l == "pmw-pure"));
        let err = run_with(&["audit", "nope"], "").unwrap_err();
        assert!(matches!(err, CliError::Run(_)) && err.to_string().contains("dx-laplace"));
    }

    #[test]
    fn a_violation_exits_with_an_error() {
        // The synthetic-data case separates deterministically while the domain is
        // inferred from the data; once fixed, it passes and this test checks nothing.
        match run_with(
            &["audit", "synth-rare-value", "--runs", "100", "--quick"],
            "",
        ) {
            Ok((out, _)) => assert!(out.contains(" ok")),
            Err(e) => assert!(
                e.to_string().contains("exceed their claimed epsilon"),
                "{e}"
            ),
        }
    }
}

//! `privq synth --mechanism adaptive` (the default): adaptive marginals measured
//! with the exact discrete Gaussian and fitted with a junction-tree model, so
//! domains far too large for a dense histogram (Adult) work.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::Path;
use std::time::Duration;

use privq_core::Epsilon;
use privq_host::accountant::{Accountant, round_up};
use privq_host::contract::Neighbours;
use privq_host::data::{DataError, Domain, Records, attribute_names, write_rows};
use privq_host::synth::Model;
use privq_host::synth::adaptive::{AdaptiveError, AdaptiveOutput, MarginalWorkload, RoundLog};
use privq_host::synth::release::{SynthRequest, Synthetic, synthesize};

use super::domain::DomainArg;
use super::progress::bar;
use super::synth::Args;
use super::synth_report::{self, Budget, Diagnostics, ReportFile, RoundSpend, normalised};
use super::{CliError, InputFile, Output};

/// The public domain: `--domain FILE|binary`; discovery is not offered here (it is
/// an (ε, δ) mechanism with no ρ-zCDP guarantee to compose with).
fn domain(args: &Args, input: &InputFile) -> Result<Domain, CliError> {
    match (&args.domain.domain, args.domain.discover_domain) {
        (Some(DomainArg::Binary), _) => {
            let file =
                std::fs::File::open(input.path()).map_err(|e| CliError::file(input.path(), e))?;
            let names = attribute_names(file, &args.columns.columns())?;
            Ok(Domain::binary(names)?)
        }
        (Some(DomainArg::File(path)), _) => Ok(Domain::from_json(&super::read_text(
            path,
            &mut std::io::empty(),
        )?)?),
        (None, true) => Err(CliError::Usage {
            option: "discover-domain",
            message: "the adaptive mechanism needs a public domain (--domain FILE|binary); \
                      private discovery is (ε, δ)-DP and composes only with --mechanism mwem"
                .into(),
        }),
        (None, false) => Err(CliError::Usage {
            option: "domain",
            message: format!(
                "{}; or let MWEM choose the values privately with --mechanism mwem \
                 --discover-domain",
                privq_host::data::DataError::DomainRequired { discovery: false }
            ),
        }),
    }
}

/// `marginals:K` (default 3, at most the number of attributes).
fn workload(args: &Args, domain: &Domain) -> Result<MarginalWorkload, CliError> {
    let spec = args.workload.as_deref().unwrap_or("marginals:3");
    let k = spec
        .strip_prefix("marginals:")
        .and_then(|k| k.trim().parse::<usize>().ok())
        .filter(|&k| k >= 1)
        .ok_or_else(|| CliError::Usage {
            option: "workload",
            message: format!(
                "{spec:?}: the adaptive mechanism answers marginal workloads, marginals:K \
                 (parity and conjunction workloads need --mechanism mwem)"
            ),
        })?;
    if args.workload.is_some() && k > domain.dims() {
        return Err(CliError::Usage {
            option: "workload",
            message: format!(
                "{spec} but the domain has {} attributes; use marginals:K with K ≤ {}",
                domain.dims(),
                domain.dims()
            ),
        });
    }
    Ok(MarginalWorkload::all_k_way(domain, k.min(domain.dims()))?)
}

/// Runs the adaptive mechanism for `privq synth`.
pub fn run(
    args: &Args,
    epsilon: Epsilon,
    stdin: &mut dyn BufRead,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    // Every release decision is the library's (`synthesize`); parameters are
    // validated before any file is touched.
    let neighbours = Neighbours::from(args.neighbours);
    let usage = |option| {
        move |e: AdaptiveError| CliError::Usage {
            option,
            message: e.to_string(),
        }
    };
    let request = SynthRequest::new(epsilon, args.delta, neighbours)
        .map_err(usage("delta"))?
        .max_model_mib(args.max_model_mib)
        .map_err(usage("max-model-mib"))?
        .time_budget(args.time_budget)
        .map_err(usage("time-budget"))?
        .rounds(args.rounds)
        .rows(args.records);
    let delta = request.delta();
    // Before any privacy is spent: the input exists and the output can be created.
    let started = std::time::Instant::now();
    let input = InputFile::open(&args.input, stdin)?;
    let mut output = Output::open(args.output.as_deref())?;
    let report_file = ReportFile::open(args.report.as_deref(), args.output.as_deref())?;
    let domain = domain(args, &input)?;
    let workload = workload(args, &domain)?;
    // Each synthetic row is a vector of value indices.
    super::synth::check_records(args, 24 + 8 * domain.dims() as u64)?;
    // Streamed: the records are the only copy of the data held.
    let file = std::fs::File::open(input.path()).map_err(|e| CliError::file(input.path(), e))?;
    // Each record: a value index per attribute, a cell index while marginals are
    // counted, and about one synthetic row (24 + 8·d bytes) in the release.
    let per_record = 4 * domain.dims() as u64 + 8 + 24 + 8 * domain.dims() as u64;
    let max = args.memory_mib.saturating_mul(1 << 20) / per_record;
    // Reading the records can refuse the input for what it holds: more records
    // than the memory cap (or 2³²) allows — with a count column a one-line file
    // can declare any total — or a count out of range. Under add/remove-one
    // neighbours the number of records is private, and the cap cannot be checked
    // from public parameters (the total is the private n), so the run is charged
    // first: the dataset's budget file holds this run's whole cost before a byte
    // of data is read, and a refusal then releases nothing and is no free probe of
    // n — each one is paid for like a release. (Under replace-one neighbours n is
    // public and the input is read first, so a refused input costs nothing.)
    let label = "privq synth (adaptive)";
    let charge_first = !neighbours.n_is_public();
    if charge_first {
        // What public parameters alone refuse (too few rounds, a budget too small
        // to split) is refused before the charge: under add/remove the plan reads
        // nothing from the records, so this is the whole plan.
        request.plan_public(&domain, &workload)?;
        args.ledger.reserve(&request.accountant()?, label, stderr)?;
    }
    let records = Records::from_csv_within(
        std::io::BufReader::new(file),
        &domain,
        &args.columns.columns(),
        usize::try_from(max).unwrap_or(usize::MAX),
    )
    .map_err(|e| match e {
        DataError::TooManyRecords { line, max } => CliError::Usage {
            option: "memory-mib",
            message: format!(
                "line {line}: the input holds more than {max} records (count-column weights \
                 included), about {} bytes each with the synthetic rows, over --memory-mib {}; \
                 raise --memory-mib{}",
                per_record,
                args.memory_mib,
                if charge_first && args.ledger.budget_file.is_some() {
                    "; nothing was released, and the budget file's charge for this run stands \
                     (under add/remove-one neighbours n is private: the run is charged before \
                     the input is read)"
                } else {
                    ""
                }
            ),
        },
        e => e.into(),
    })?;
    // Everything the run checks before it samples, before the ledger is charged
    // (under add/remove the budget file holds the charge already, see above).
    let planned_rounds = request.plan(&records, &domain, &workload)?.rounds;
    if !charge_first {
        args.ledger.reserve(&request.accountant()?, label, stderr)?;
    }
    let mut rng = super::rng(args.seed, stderr)?;
    if args.seed.is_some() && args.time_budget.is_some() {
        writeln!(
            stderr,
            "privq: warning: under --time-budget, --seed does not reproduce the release: which \
             round is the last depends on the machine's speed"
        )?;
    }
    // The run ends when the budget is spent: progress is the share of ρ spent (‰).
    let budget = request
        .accountant()
        .ok()
        .and_then(|a| a.rho_budget())
        .map_or(0.0, |r| r.to_f64());
    let pb = bar(1000, "adaptive (ρ ‰)");
    let release = synthesize(
        &records,
        &domain,
        &workload,
        &request,
        &mut rng,
        &mut |r: &RoundLog| {
            if budget > 0.0 {
                pb.set_position((r.spent.to_f64() / budget * 1000.0).min(1000.0) as u64);
            }
        },
    )?;
    pb.finish_and_clear();
    let Synthetic {
        rows: sample,
        domain: released,
        binning_rho,
        spread,
        output: out,
        targets: _,
        refinement,
        accountant,
        guarantee,
    } = release;
    // Attributes declared by their bounds only were binned privately: the rows are
    // over the released bins (`released`), and the input is compared on them; the
    // rows written are `spread` over the grids (unless bins are written as labels).
    let (grid_records, grid_domain) = (&records, &domain);
    let binned_input;
    let (records, domain) = if released == domain {
        (&records, &domain)
    } else {
        binned_input = privq_host::synth::bins::rebin(&records, &domain, &released)?;
        (&binned_input, &released)
    };
    let (n, rows) = (records.len(), sample.len());
    // From here on the budget is spent: whatever fails, the ledger is written.
    let rho = accountant.spent_rho().map_or(0.0, |r| r.to_f64());
    let eps = guarantee.epsilon;
    let finished = (|| {
        match (&spread, args.bins_as_labels) {
            (Some(spread), false) => write_rows(
                output.writer(stdout),
                grid_domain,
                spread,
                args.bin_output(),
            )?,
            _ => write_rows(output.writer(stdout), domain, &sample, args.bin_output())?,
        }
        // The release's own time, reported once (on stderr and in the report): the
        // NOT PRIVATE diagnostics below are not part of it.
        let release_time = started.elapsed();
        // NOT PRIVATE (`--compare`): every compared marginal is computed once, for the
        // report and for standard error.
        let compared = if args.compare {
            Some(Compared::new(
                records, domain, &out.model, &sample, &workload,
            )?)
        } else {
            None
        };
        // Rendered before anything is put in place, so a failure leaves neither file
        // (with --output FILE; on standard output the records are already streamed).
        let report = match report_file {
            Some(file) => {
                let facts = Facts {
                    epsilon,
                    delta,
                    rho,
                    eps,
                    neighbours,
                    rows,
                    wall: release_time,
                };
                let diagnostics = match &compared {
                    Some(c) => Some(c.diagnose(&workload)?),
                    None => None,
                };
                let html = report(
                    args,
                    &facts,
                    domain,
                    &accountant,
                    &out,
                    binning_rho.map(|r| r.to_f64()),
                    diagnostics,
                )?;
                Some((file, html))
            }
            None => None,
        };
        output.commit(stdout)?;
        Ok::<_, CliError>((release_time, compared, report))
    })();
    let (release_time, compared, report) =
        args.ledger.after_charge(&accountant, stderr, finished)?;
    // The records are out: record the spend before anything else can fail.
    args.ledger.write(&accountant)?;
    if let Some((file, html)) = report {
        file.write(&html)?;
        writeln!(
            stderr,
            "privq: report written to {}",
            args.report.as_deref().unwrap_or(Path::new("")).display()
        )?;
    }

    let annealed = out.rounds.iter().filter(|r| r.annealed).count();
    writeln!(
        stderr,
        "privq: adaptive marginals over {} attributes ({} cells in the model, {} universe cells \
         never materialised): {} one-way + {} selected marginals, {} rounds ({} annealed{}); \
         {rows} synthetic records, refined towards the model on {} of the workload's {} \
         marginals ({} values moved)",
        domain.dims(),
        out.model.cells(),
        if domain.cells() < 1e15 {
            format!("{}", domain.cells())
        } else {
            format!("{:.3e}", domain.cells())
        },
        domain.dims(),
        out.rounds.len(),
        out.rounds.len(),
        annealed,
        if out.rounds_from_uniform {
            "; noise large against the data: round models fitted from the uniform one where small enough"
        } else {
            ""
        },
        refinement.targets,
        workload.cliques().len(),
        refinement.changes,
    )?;
    writeln!(
        stderr,
        "privq: privacy: rho = {} zCDP under {}, i.e. (epsilon = {}, delta = {delta:e})-DP \
         (budget epsilon = {epsilon}){}",
        round_up(rho, 6),
        neighbours.phrase(),
        round_up(eps, 4),
        if neighbours.n_is_public() {
            format!("; n = {n} treated as public")
        } else {
            "; n is private (the model's total is estimated)".to_string()
        }
    )?;
    if let Some(rho) = binning_rho {
        let bins: Vec<String> = domain
            .attributes()
            .iter()
            .filter(|a| a.bounds().is_some())
            .map(|a| format!("{} {}", a.name(), a.size()))
            .collect();
        writeln!(
            stderr,
            "privq: private binning: rho = {} of the budget (bins chosen: {})",
            round_up(rho.to_f64(), 6),
            bins.join(", ")
        )?;
    }
    if let Some(budget) = args.time_budget {
        writeln!(
            stderr,
            "privq: time budget {budget} s: {}; the (epsilon, delta) above holds if the \
             machine's speed does not depend on the data (the book: Privacy arguments, A time \
             budget)",
            if out.ended_by_time {
                format!(
                    "the budget made round {} the last (of about {planned_rounds} planned), \
                     spending the rest of epsilon on it",
                    out.rounds.len()
                )
            } else {
                "the rounds spent epsilon as planned, within the time".to_string()
            }
        )?;
        if args.compare {
            // The fitting time reads the machine's speed; shown only with the
            // other NOT PRIVATE diagnostics.
            writeln!(
                stderr,
                "privq: compare (NOT PRIVATE, the machine's timing): the model fitting took {:.3} s",
                out.fitting_time.as_secs_f64()
            )?;
        }
    }
    if args.compare {
        writeln!(
            stderr,
            "privq: compare (NOT PRIVATE, depends on the input's size): the release took {:.3} s \
             (reading the input to writing the records)",
            release_time.as_secs_f64()
        )?;
    }
    if let Some(c) = &compared {
        c.print(stderr)?;
        if let Some(spread) = &spread {
            print_grid_tv(grid_records, grid_domain, spread, stderr)?;
        }
    }
    writeln!(stderr, "privq: ledger:\n{}", args.ledger.text(&accountant))?;
    Ok(())
}

/// `--compare` (not private: a diagnostic for a curator who may see the data): the
/// total-variation distance of the model and of the synthetic rows from the input
/// on every 2-way and 3-way marginal and every workload marginal, each computed once.
struct Compared<'a> {
    records: &'a Records,
    domain: &'a Domain,
    model: &'a Model,
    synthetic: Records,
    /// Per marginal (attribute list): TV of the model and of the synthetic rows.
    tv: BTreeMap<Vec<usize>, (f64, f64)>,
}

impl<'a> Compared<'a> {
    fn new(
        records: &'a Records,
        domain: &'a Domain,
        model: &'a Model,
        sample: &[Vec<usize>],
        workload: &MarginalWorkload,
    ) -> Result<Self, CliError> {
        let columns: Vec<Vec<u32>> = (0..domain.dims())
            .map(|a| sample.iter().map(|r| r[a] as u32).collect())
            .collect();
        let synthetic = Records::from_columns(columns, domain)?;
        let mut c = Compared {
            records,
            domain,
            model,
            synthetic,
            tv: BTreeMap::new(),
        };
        let mut sets: Vec<Vec<usize>> = Vec::new();
        for k in [2usize, 3] {
            if let Ok(w) = MarginalWorkload::all_k_way(domain, k) {
                sets.extend(w.cliques().iter().map(|(q, _)| q.attributes().to_vec()));
            }
        }
        sets.extend(
            workload
                .cliques()
                .iter()
                .map(|(q, _)| q.attributes().to_vec()),
        );
        for attrs in sets {
            if !c.tv.contains_key(&attrs) {
                // The input and the synthetic rows as their non-zero cells (at most
                // one per row), the model's marginal dense: one dense table at a time.
                let truth = c.sparse(c.records, &attrs)?;
                let tv_model = tv_against_dense(&truth, &c.fitted(&attrs)?);
                let tv = (
                    tv_model,
                    tv_sparse(&truth, &c.sparse(&c.synthetic, &attrs)?),
                );
                c.tv.insert(attrs, tv);
            }
        }
        Ok(c)
    }

    /// The non-zero cells of `r`'s marginal on `attrs` (cell index, last attribute
    /// fastest; share of the rows), in cell order.
    fn sparse(&self, r: &Records, attrs: &[usize]) -> Result<Vec<(usize, f64)>, CliError> {
        let n = r.len();
        let mut index = vec![0usize; n];
        let mut stride = 1usize;
        for &a in attrs.iter().rev() {
            let (Some(column), Some(attr)) = (r.column(a), self.domain.attribute(a)) else {
                return Err(CliError::Run(format!("no attribute number {a}").into()));
            };
            for (i, &v) in index.iter_mut().zip(column) {
                *i += v as usize * stride;
            }
            stride = stride.saturating_mul(attr.size());
        }
        index.sort_unstable();
        Ok(index
            .chunk_by(|x, y| x == y)
            .map(|run| (run[0], run.len() as f64 / n as f64))
            .collect())
    }

    fn counts(&self, r: &Records, attrs: &[usize]) -> Result<Vec<f64>, CliError> {
        let c = r.marginal(attrs, self.domain)?;
        Ok(normalised(c.into_iter().map(|v| v as f64).collect()))
    }

    /// The input's marginal (NOT PRIVATE).
    fn truth(&self, attrs: &[usize]) -> Result<Vec<f64>, CliError> {
        self.counts(self.records, attrs)
    }

    fn synth(&self, attrs: &[usize]) -> Result<Vec<f64>, CliError> {
        self.counts(&self.synthetic, attrs)
    }

    fn fitted(&self, attrs: &[usize]) -> Result<Vec<f64>, CliError> {
        let clique = privq_host::synth::Clique::new(attrs.iter().copied())?;
        Ok(normalised(self.model.marginal(&clique)?))
    }

    /// The mean 2-way and 3-way TV, on standard error.
    fn print(&self, stderr: &mut dyn Write) -> Result<(), CliError> {
        for k in [2usize, 3] {
            let Ok(w) = MarginalWorkload::all_k_way(self.domain, k) else {
                continue;
            };
            let (mut tv_model, mut tv_sample) = (0.0, 0.0);
            for (clique, _) in w.cliques() {
                let (m, s) = self.tv[clique.attributes()];
                tv_model += m;
                tv_sample += s;
            }
            let m = w.cliques().len() as f64;
            writeln!(
                stderr,
                "privq: compare (NOT PRIVATE, reads the input): mean {k}-way TV over {} \
                 marginals: model {:.5}, synthetic records {:.5}",
                w.cliques().len(),
                tv_model / m,
                tv_sample / m
            )?;
        }
        Ok(())
    }

    /// The report's diagnostics on every workload marginal.
    fn diagnose(&self, workload: &MarginalWorkload) -> Result<Diagnostics, CliError> {
        let sets: Vec<Vec<usize>> = workload
            .cliques()
            .iter()
            .map(|(c, _)| c.attributes().to_vec())
            .collect();
        synth_report::diagnose(
            self.domain,
            &sets,
            format!(
                "the workload, all {}-way marginals",
                workload.cliques().first().map_or(0, |(c, _)| c.len())
            ),
            &|attrs| Ok(self.tv[attrs]),
            &|attrs| self.truth(attrs),
            &|attrs| self.fitted(attrs),
            &|attrs| self.synth(attrs),
        )
    }
}

/// `--compare` with private binning (NOT PRIVATE): the mean 2-way and 3-way TV
/// of the synthetic rows as written (spread over the public grids) from the input
/// on those grids, where the model's TV above is on the chosen bins.
fn print_grid_tv(
    input: &Records,
    grid: &Domain,
    spread: &[Vec<usize>],
    stderr: &mut dyn Write,
) -> Result<(), CliError> {
    let columns: Vec<Vec<u32>> = (0..grid.dims())
        .map(|a| spread.iter().map(|r| r[a] as u32).collect())
        .collect();
    let synthetic = Records::from_columns(columns, grid)?;
    let sparse = |r: &Records, attrs: &[usize]| -> Vec<(usize, f64)> {
        let n = r.len();
        let mut index = vec![0usize; n];
        let mut stride = 1usize;
        for &a in attrs.iter().rev() {
            if let (Some(column), Some(attr)) = (r.column(a), grid.attribute(a)) {
                for (i, &v) in index.iter_mut().zip(column) {
                    *i += v as usize * stride;
                }
                stride = stride.saturating_mul(attr.size());
            }
        }
        index.sort_unstable();
        index
            .chunk_by(|x, y| x == y)
            .map(|run| (run[0], run.len() as f64 / n as f64))
            .collect()
    };
    for k in [2usize, 3] {
        let Ok(w) = MarginalWorkload::all_k_way(grid, k) else {
            continue;
        };
        let total: f64 = w
            .cliques()
            .iter()
            .map(|(c, _)| {
                tv_sparse(
                    &sparse(input, c.attributes()),
                    &sparse(&synthetic, c.attributes()),
                )
            })
            .sum();
        writeln!(
            stderr,
            "privq: compare (NOT PRIVATE, reads the input): mean {k}-way TV over {} marginals on \
             the public grids (bounded columns as written): synthetic records {:.5}",
            w.cliques().len(),
            total / w.cliques().len() as f64
        )?;
    }
    Ok(())
}

/// TV between a sparse distribution (non-zero cells in order) and a dense one:
/// ½(Σ q + Σ_{p_i > 0} (|p_i − q_i| − q_i)).
fn tv_against_dense(p: &[(usize, f64)], q: &[f64]) -> f64 {
    let inside: f64 = p
        .iter()
        .map(|&(i, pi)| {
            let qi = q.get(i).copied().unwrap_or(0.0);
            (pi - qi).abs() - qi
        })
        .sum();
    0.5 * (q.iter().sum::<f64>() + inside)
}

/// TV between two sparse distributions (non-zero cells in order).
fn tv_sparse(p: &[(usize, f64)], q: &[(usize, f64)]) -> f64 {
    let (mut i, mut j, mut sum) = (0, 0, 0.0);
    while i < p.len() || j < q.len() {
        match (p.get(i), q.get(j)) {
            (Some(&(a, x)), Some(&(b, y))) if a == b => {
                sum += (x - y).abs();
                i += 1;
                j += 1;
            }
            (Some(&(a, x)), Some(&(b, _))) if a < b => {
                sum += x;
                i += 1;
            }
            (Some(&(_, x)), None) => {
                sum += x;
                i += 1;
            }
            (_, Some(&(_, y))) => {
                sum += y;
                j += 1;
            }
            (None, None) => break,
        }
    }
    0.5 * sum
}

/// Public facts of the run for the report.
struct Facts {
    epsilon: Epsilon,
    delta: f64,
    rho: f64,
    eps: f64,
    neighbours: Neighbours,
    rows: usize,
    wall: Duration,
}

/// The `--report` page: header and budget from public quantities only (the
/// parameters, the accountant, the round log, the model's size); `diagnostics`
/// (NOT PRIVATE) only with `--compare`.
fn report(
    args: &Args,
    facts: &Facts,
    domain: &Domain,
    accountant: &Accountant,
    out: &AdaptiveOutput<Model>,
    binning_rho: Option<f64>,
    diagnostics: Option<Diagnostics>,
) -> Result<String, CliError> {
    let names = |c: &privq_host::synth::Clique| {
        c.attributes()
            .iter()
            .map(|&a| domain.attribute(a).map_or("?", |x| x.name()))
            .collect::<Vec<_>>()
            .join(" × ")
    };
    let mut rounds = Vec::with_capacity(out.rounds.len() + 2);
    let binning = binning_rho.unwrap_or(0.0);
    if let Some(rho) = binning_rho {
        let bounded: Vec<&str> = domain
            .attributes()
            .iter()
            .filter(|a| a.bounds().is_some())
            .map(|a| a.name())
            .collect();
        rounds.push(RoundSpend {
            label: "bins".into(),
            selection: 0.0,
            measurement: rho,
            chose: format!("bins of {}", bounded.join(", ")),
            note: "private binning (discrete Gaussian on the public grids)".into(),
        });
    }
    let in_rounds: f64 = out.rounds.iter().map(|r| r.rho.to_f64()).sum::<f64>() + binning;
    // Round 0 measures every one-way marginal: what the ledger holds beyond the rounds.
    rounds.push(RoundSpend {
        label: "0".into(),
        selection: 0.0,
        measurement: (facts.rho - in_rounds).max(0.0),
        chose: format!("all {} one-way marginals", domain.dims()),
        note: String::new(),
    });
    for r in &out.rounds {
        let selection = match r.epsilon {
            Some(e) => privq_core::Rho::from_bounded_range(e)
                .map_err(|source| CliError::Parameter {
                    option: "epsilon",
                    source,
                })?
                .to_f64(),
            None => 0.0,
        };
        rounds.push(RoundSpend {
            label: r.round.to_string(),
            selection,
            measurement: (r.rho.to_f64() - selection).max(0.0),
            chose: names(&r.clique),
            note: format!(
                "σ = {:.3}, {} candidates{}{}",
                r.sigma,
                r.candidates,
                r.coarsened
                    .map(|n| format!(", coarsened to {n} cells"))
                    .unwrap_or_default(),
                if r.annealed { ", annealed" } else { "" }
            ),
        });
    }
    let guarantee = format!(
        "ρ = {}-zCDP, i.e. (ε = {}, δ = {:e})-DP",
        round_up(facts.rho, 6),
        round_up(facts.eps, 4),
        facts.delta
    );
    let total = accountant.rho_budget().map_or(facts.rho, |r| r.to_f64());
    let header = vec![
        (
            "mechanism".into(),
            "adaptive marginals (AIM-style, exact discrete Gaussian, graphical model)".into(),
        ),
        ("ε (budget)".into(), facts.epsilon.to_string()),
        ("δ".into(), format!("{:e}", facts.delta)),
        (
            "ρ spent / budget".into(),
            format!("{} / {total:.6}", round_up(facts.rho, 6)),
        ),
        ("guarantee".into(), guarantee.clone()),
        (
            "neighbour relation".into(),
            facts.neighbours.phrase().to_string(),
        ),
        (
            "rounds".into(),
            format!("{} after the one-way round", out.rounds.len()),
        ),
        ("model size".into(), format!("{} cells", out.model.cells())),
        ("rows released".into(), facts.rows.to_string()),
        (
            "workload".into(),
            args.workload
                .clone()
                .unwrap_or_else(|| "marginals:3".into()),
        ),
        ("wall time".into(), wall_time(facts.wall, args.compare)),
        ("seed".into(), seed_text(args.seed)),
    ];
    synth_report::Report {
        mechanism: "adaptive marginals".into(),
        header,
        budget: Budget {
            unit: "ρ",
            rounds,
            other: Vec::new(),
            total,
            guarantee,
            note: "Round 0 measures every one-way marginal (discrete Gaussian); each later \
                   round selects a marginal with the exponential mechanism (ε-bounded range, \
                   ρ = ε²/8) and measures it (discrete Gaussian)."
                .into(),
        },
        diagnostics,
    }
    .render()
}

/// The wall time, shown only beside the `--compare` diagnostics: it depends on the
/// input's size and is not covered by the guarantee.
pub(crate) fn wall_time(wall: Duration, compare: bool) -> String {
    if compare {
        format!(
            "{:.2} s (NOT PRIVATE: depends on the input's size)",
            wall.as_secs_f64()
        )
    } else {
        "not shown: it depends on the input's size (shown with --compare)".into()
    }
}

/// The seed, flagged when fixed.
pub(crate) fn seed_text(seed: Option<u64>) -> String {
    match seed {
        Some(s) => format!("{s} (fixed: tests and demos only, the noise is removable)"),
        None => "none (operating-system entropy)".into(),
    }
}

//! The `--report` page of `privq synth --mechanism mwem`: the budget in ε from
//! MWEM's itemised ledger, and (NOT PRIVATE, `--compare`) the dense release
//! against the input's histogram.

use std::time::Duration;

use privq_core::Epsilon;
use privq_host::accountant::Accountant;
use privq_host::central::mwem::MwemOutput;
use privq_host::choice::Named;
use privq_host::data::{Dataset, Domain};
use privq_host::synth::adaptive::MarginalWorkload;

use super::{Budget, Diagnostics, Report, RoundSpend, normalised};
use crate::CliError;
use crate::synth::Args;
use crate::synth_adaptive::{seed_text, wall_time};

/// The public facts of an MWEM run.
pub(crate) struct Run<'a> {
    /// The command's options.
    pub args: &'a Args,
    /// The total budget.
    pub epsilon: Epsilon,
    /// The run's accountant (discovery and MWEM's charge).
    pub accountant: &'a Accountant,
    /// MWEM's release and itemised ledger.
    pub out: &'a MwemOutput,
    /// Cells of the dense histogram (the universe).
    pub cells: usize,
    /// Synthetic rows written.
    pub rows: usize,
    /// Wall time so far.
    pub wall: Duration,
}

impl Run<'_> {
    /// The page. Reads only the parameters, the ledgers and the chosen queries;
    /// `diagnostics` only with `--compare`.
    pub(crate) fn render(&self, diagnostics: Option<Diagnostics>) -> Result<String, CliError> {
        let eps = |c: &privq_host::accountant::Cost| c.epsilon().map_or(0.0, |e| e.to_f64());
        // Spending outside MWEM's own charge (private domain discovery).
        let other: Vec<(String, f64)> = self
            .accountant
            .ledger()
            .iter()
            .filter(|c| !c.label.starts_with("MWEM"))
            .map(|c| (c.label.clone(), eps(&c.cost)))
            .collect();
        let mut rounds: Vec<RoundSpend> = Vec::new();
        for charge in self.out.ledger.ledger() {
            let cost = eps(&charge.cost);
            let Some(rest) = charge.label.strip_prefix("round ") else {
                rounds.push(RoundSpend {
                    label: "0".into(),
                    selection: 0.0,
                    measurement: cost,
                    chose: charge.label.clone(),
                    note: String::new(),
                });
                continue;
            };
            let (number, what) = rest.split_once(':').unwrap_or((rest, ""));
            if rounds.last().is_none_or(|r| r.label != number) {
                let chose = number
                    .parse::<usize>()
                    .ok()
                    .and_then(|r| self.out.measurements.get(r.checked_sub(1)?))
                    .map(|m| (format!("query #{}", m.query), m.noise_scale));
                rounds.push(RoundSpend {
                    label: number.to_string(),
                    selection: 0.0,
                    measurement: 0.0,
                    chose: chose.as_ref().map_or(String::new(), |(q, _)| q.clone()),
                    note: chose.map_or(String::new(), |(_, s)| {
                        format!("Laplace scale {s:.3e} (of n)")
                    }),
                });
            }
            if let Some(r) = rounds.last_mut() {
                if what.contains("exponential") {
                    r.selection += cost;
                } else {
                    r.measurement += cost;
                }
            }
        }
        let steps = self
            .out
            .ledger
            .spent_epsilon()
            .map_or("0".into(), |e| e.to_string());
        let spent = self.accountant.spent_epsilon();
        let delta = self.accountant.spent_delta();
        let spent_text = spent.map_or("0".into(), |e| e.to_string());
        let guarantee = if delta > 0.0 {
            format!("(ε = {spent_text}, δ = {delta:e})-DP")
        } else {
            format!("ε = {spent_text} pure DP")
        };
        let a = self.args;
        let header = vec![
            (
                "mechanism".into(),
                format!(
                    "MWEM (dense histogram, {} profile{})",
                    a.profile.name(),
                    if a.plain { ", plain" } else { "" }
                ),
            ),
            ("ε (budget)".into(), self.epsilon.to_string()),
            (
                "ε spent".into(),
                format!("{spent_text} (MWEM's steps used {steps})"),
            ),
            ("δ".into(), format!("{delta:e}")),
            (
                "ρ".into(),
                "— (pure ε-DP; the ledger is in ε, not zCDP)".into(),
            ),
            (
                "neighbour relation".into(),
                privq_host::contract::Neighbours::Replace
                    .phrase()
                    .to_string(),
            ),
            ("guarantee".into(), guarantee.clone()),
            ("rounds".into(), self.out.rounds.to_string()),
            ("model size".into(), format!("{} cells", self.cells)),
            ("rows released".into(), self.rows.to_string()),
            (
                "workload".into(),
                a.workload.clone().unwrap_or_else(|| "parity:3".into()),
            ),
            ("wall time".into(), wall_time(self.wall, a.compare)),
            ("seed".into(), seed_text(a.seed)),
        ];
        Report {
            mechanism: "MWEM".into(),
            header,
            budget: Budget {
                unit: "ε",
                rounds,
                other,
                total: self.epsilon.to_f64(),
                guarantee,
                note: format!(
                    "MWEM charges its whole share to the run's accountant before it starts; its \
                     itemised steps below used ε = {steps} of it (adaptive rounds may stop \
                     early; the guarantee is what was charged). Each round selects a query \
                     with the exponential mechanism and measures it with Laplace noise."
                ),
            },
            diagnostics,
        }
        .render()
    }
}

/// The marginal over `attrs` of `weights` over the universe (cells of the marginal
/// with the last attribute fastest), normalised.
fn dense_marginal(domain: &Domain, weights: &[f64], attrs: &[usize]) -> Vec<f64> {
    let sizes: Vec<usize> = attrs
        .iter()
        .map(|&a| domain.attribute(a).map_or(1, |x| x.size()))
        .collect();
    let mut out = vec![0.0; sizes.iter().product()];
    for (u, &w) in weights.iter().enumerate() {
        let mut j = 0;
        for (&a, &s) in attrs.iter().zip(&sizes) {
            j = j * s + domain.value_of(u, a).unwrap_or(0);
        }
        if let Some(o) = out.get_mut(j) {
            *o += w;
        }
    }
    normalised(out)
}

/// NOT PRIVATE (`--compare`): MWEM's distribution and the synthetic rows against
/// the input's histogram on all k-way marginals, k the workload's width.
pub(crate) fn diagnose(
    ds: &Dataset,
    workload_spec: &str,
    out: &MwemOutput,
    cells: &[usize],
) -> Result<Diagnostics, CliError> {
    let domain = &ds.domain;
    let k = workload_spec
        .split_once(':')
        .and_then(|(_, w)| w.trim().parse::<usize>().ok())
        .unwrap_or(2)
        .clamp(1, domain.dims().clamp(1, 3));
    let sets: Vec<Vec<usize>> = MarginalWorkload::all_k_way(domain, k)?
        .cliques()
        .iter()
        .map(|(c, _)| c.attributes().to_vec())
        .collect();
    let truth: Vec<f64> = ds.counts.counts().iter().map(|&c| c as f64).collect();
    let mut sample = vec![0.0; ds.counts.len()];
    for &c in cells {
        if let Some(s) = sample.get_mut(c) {
            *s += 1.0;
        }
    }
    let truth = |a: &[usize]| Ok(dense_marginal(domain, &truth, a));
    let model = |a: &[usize]| Ok(dense_marginal(domain, &out.distribution, a));
    let sample = |a: &[usize]| Ok(dense_marginal(domain, &sample, a));
    let tvs = |a: &[usize]| -> Result<(f64, f64), CliError> {
        let t = truth(a)?;
        Ok((super::tv(&t, &model(a)?), super::tv(&t, &sample(a)?)))
    };
    super::diagnose(
        domain,
        &sets,
        format!("all {k}-way marginals"),
        &tvs,
        &truth,
        &model,
        &sample,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_marginals_put_the_last_attribute_fastest() {
        let d = Domain::binary(["a", "b"]).unwrap();
        // Universe cells: the first attribute fastest (Domain::decode).
        let mut w = vec![0.0; 4];
        w[d.encode(&[1, 0]).unwrap()] = 3.0;
        w[d.encode(&[0, 1]).unwrap()] = 1.0;
        assert_eq!(dense_marginal(&d, &w, &[0, 1]), [0.0, 0.25, 0.75, 0.0]);
        assert_eq!(dense_marginal(&d, &w, &[1]), [0.75, 0.25]);
    }
}

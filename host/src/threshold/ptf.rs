//! A threshold learner for small d: a low-degree polynomial threshold function
//! (PTF) over the multilinear monomials of q, found by one LP (thesis §7.4, made
//! concrete: Thm 7.4.10's learners fit such a PTF to labelled examples).

use super::privlearn::{PrivLearnError, ThresholdLearner};
use super::query::CountingQuery;
use crate::lp::{LinearProgram, LpOutcome, Relation};

/// Every monomial `∏_{i∈S} q_i` with `|S| ≤ degree` over `d` variables, as the
/// bit mask of S (the empty set first). `Σ_{j ≤ degree} C(d, j)` of them.
///
/// ```
/// use privq_host::threshold::monomials;
/// assert_eq!(monomials(3, 1), vec![0b000, 0b001, 0b010, 0b100]);
/// assert_eq!(monomials(4, 2).len(), 1 + 4 + 6);
/// ```
pub fn monomials(d: u32, degree: u32) -> Vec<u64> {
    let mut out: Vec<u64> = (0..1u64 << d)
        .filter(|s| s.count_ones() <= degree)
        .collect();
    out.sort_by_key(|s| (s.count_ones(), *s));
    out
}

/// Fits `sign(Σ_S W_S·∏_{i∈S} q_i)` to labelled queries: minimise the total slack
/// `Σ ξ_j` subject to `⟨W, φ(q_j)⟩ + ξ_j ≥ 1` (label 1) and `⟨W, φ(q_j)⟩ − ξ_j ≤ −1`
/// (label 0), `ξ ≥ 0`, W free — the LP-feasibility learner of §7.4 with slack, so a
/// few wrong labels near the threshold do not make it infeasible. Sampling only: it
/// never asks for the weight of a query (Thm 7.3.10 applies).
#[derive(Debug, Clone)]
pub struct PtfLearner {
    d: u32,
    monomials: Vec<u64>,
}

impl PtfLearner {
    /// A learner over `d ≤ 20` variables with monomials of degree ≤ `degree`, for
    /// at most `max_features` monomials (an LP size cap, typed error beyond it).
    pub fn new(d: u32, degree: u32, max_features: usize) -> Result<Self, PrivLearnError> {
        if d == 0 || d > 20 {
            return Err(PrivLearnError::InvalidParameter(format!(
                "the PTF learner takes 1 ≤ d ≤ 20 variables, not {d}"
            )));
        }
        let count: u64 = (0..=degree.min(d)).map(|j| binomial(d, j)).sum();
        if count > max_features as u64 {
            return Err(PrivLearnError::InvalidParameter(format!(
                "degree {degree} over d = {d} has {count} monomials, over the cap of {max_features}"
            )));
        }
        Ok(PtfLearner {
            d,
            monomials: monomials(d, degree),
        })
    }

    /// The number of features (monomials).
    pub fn features(&self) -> usize {
        self.monomials.len()
    }

    /// The sample size `⌈(D·ln(1/γ) + ln(1/β))/γ⌉` that suffices for a
    /// (γ, β)-learner with D features (the usual sample bound for a class of VC
    /// dimension about D, with constant 1).
    pub fn sample_size(&self, gamma: f64, beta: f64) -> f64 {
        let d = self.monomials.len() as f64;
        ((d * (1.0 / gamma).ln() + (1.0 / beta).ln()) / gamma).ceil()
    }
}

fn binomial(n: u32, k: u32) -> u64 {
    (0..k).fold(1u64, |acc, i| acc * u64::from(n - i) / u64::from(i + 1))
}

/// A learned PTF: `h(q) = 1` iff `Σ_S W_S·∏_{i∈S} q_i ≥ 0`.
#[derive(Debug, Clone, PartialEq)]
pub struct PtfHypothesis {
    monomials: Vec<u64>,
    weights: Vec<f64>,
}

impl PtfHypothesis {
    /// `h(q)`.
    pub fn predict(&self, q: &CountingQuery) -> bool {
        let m = q.mask();
        let z: f64 = self
            .monomials
            .iter()
            .zip(&self.weights)
            .filter(|&(&s, _)| m & s == s)
            .map(|(_, w)| w)
            .sum();
        z >= 0.0
    }
}

impl ThresholdLearner for PtfLearner {
    type Hypothesis = PtfHypothesis;

    /// Queries over the learner's d variables only.
    fn accepts(&self, q: &CountingQuery) -> Result<(), PrivLearnError> {
        if q.mask() >> self.d != 0 {
            return Err(PrivLearnError::InvalidParameter(format!(
                "query {:#b} has bits beyond d = {}",
                q.mask(),
                self.d
            )));
        }
        Ok(())
    }

    fn learn(
        &self,
        _t: f64,
        examples: &[(CountingQuery, bool)],
    ) -> Result<PtfHypothesis, PrivLearnError> {
        let (f, m) = (self.monomials.len(), examples.len());
        for (q, _) in examples {
            self.accepts(q)?;
        }
        let mut objective = vec![0.0; f];
        objective.extend(std::iter::repeat_n(1.0, m));
        let mut lp = LinearProgram::new(objective);
        for v in 0..f {
            lp.set_bounds(v, f64::NEG_INFINITY, f64::INFINITY)?;
        }
        for (j, (q, label)) in examples.iter().enumerate() {
            let mask = q.mask();
            let mut row: Vec<(usize, f64)> = self
                .monomials
                .iter()
                .enumerate()
                .filter(|&(_, &s)| mask & s == s)
                .map(|(v, _)| (v, 1.0))
                .collect();
            if *label {
                row.push((f + j, 1.0));
                lp.add_row(&row, Relation::Ge, 1.0)?;
            } else {
                row.push((f + j, -1.0));
                lp.add_row(&row, Relation::Le, -1.0)?;
            }
        }
        match lp.solve()? {
            LpOutcome::Optimal { x, .. } => Ok(PtfHypothesis {
                monomials: self.monomials.clone(),
                weights: x[..f].to_vec(),
            }),
            other => Err(PrivLearnError::InvalidParameter(format!(
                "the PTF LP has no optimum ({other:?})"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_a_separable_rule_exactly() {
        // Label: q contains attribute 0 or both 1 and 2 — a degree-2 PTF.
        let learner = PtfLearner::new(4, 2, 100).unwrap();
        assert_eq!(learner.features(), 11);
        let rule = |m: u64| m & 1 == 1 || m & 0b110 == 0b110;
        let examples: Vec<_> = (0..16u64)
            .map(|m| (CountingQuery::conjunction(m), rule(m)))
            .collect();
        let h = learner.learn(0.5, &examples).unwrap();
        for m in 0..16u64 {
            assert_eq!(h.predict(&CountingQuery::conjunction(m)), rule(m), "{m:#b}");
        }
    }

    #[test]
    fn caps_and_bad_queries_are_typed_errors() {
        assert!(PtfLearner::new(0, 1, 10).is_err());
        assert!(PtfLearner::new(10, 3, 100).is_err()); // 176 monomials
        let learner = PtfLearner::new(3, 1, 10).unwrap();
        let bad = [(CountingQuery::conjunction(0b1000), true)];
        assert!(learner.learn(0.5, &bad).is_err());
        assert_eq!(binomial(10, 3), 120);
    }
}

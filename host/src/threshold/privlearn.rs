//! PRIVLEARN (thesis Fig. 7.2): data release from a threshold learner.

use privq_core::Epsilon;
use privq_core::rand_core::{CryptoRng, Rng};

use super::oracle::ThresholdOracle;
use super::query::CountingQuery;
use crate::accountant::Accountant;
use crate::central::MechanismError;
use crate::contract::Mechanism;
use crate::data::CountHistogram;
use crate::lp::LpError;

/// A learner for threshold functions `1[f^D(q) ≥ t]` from labelled queries
/// (thesis Def. 7.2.4). Sampling only: PRIVLEARN hands it the oracle's non-⊥
/// labels and never answers evaluation queries, so Thm 7.3.10's bound applies.
pub trait ThresholdLearner {
    /// What it learns.
    type Hypothesis;

    /// Whether the learner can take query q at all (checked on the whole sample
    /// before anything is charged). Every query by default.
    fn accepts(&self, _q: &CountingQuery) -> Result<(), PrivLearnError> {
        Ok(())
    }

    /// A hypothesis for threshold `t` from `(q, label)` examples.
    fn learn(
        &self,
        t: f64,
        examples: &[(CountingQuery, bool)],
    ) -> Result<Self::Hypothesis, PrivLearnError>;
}

/// Why PRIVLEARN did not release.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PrivLearnError {
    /// A parameter is out of range; the message says which.
    #[error("invalid parameter: {0}")]
    InvalidParameter(String),
    /// The oracle (budget, data, sampler) failed.
    #[error(transparent)]
    Mechanism(#[from] MechanismError),
    /// The learner's LP failed.
    #[error(transparent)]
    Lp(#[from] LpError),
}

/// PRIVLEARN's release: the hypotheses `h_1 … h_k` combined by the count rule, or
/// the constant `t_i` when the oracle found most queries close to `t_i` (step 3c).
#[derive(Debug, Clone)]
pub struct ReleasedThresholds<H> {
    k: usize,
    hypotheses: Vec<H>,
    constant: Option<f64>,
}

impl<H> ReleasedThresholds<H> {
    /// The number of thresholds k.
    pub fn thresholds(&self) -> usize {
        self.k
    }

    /// The learned hypotheses (fewer than k when step 3c stopped early).
    pub fn hypotheses(&self) -> &[H] {
        &self.hypotheses
    }

    /// `Some(t_i)` when the release is that constant (step 3c).
    pub fn constant(&self) -> Option<f64> {
        self.constant
    }

    /// The released answer to q: `|{i : h_i(q) = 1}|/(k + 1)` (TYPO-23's count rule,
    /// which tolerates one wrong `h_i`), or the constant.
    pub fn answer(&self, q: &CountingQuery, predict: impl Fn(&H, &CountingQuery) -> bool) -> f64 {
        match self.constant {
            Some(t) => t,
            None => {
                let ones = self.hypotheses.iter().filter(|h| predict(h, q)).count();
                ones as f64 / (self.k + 1) as f64
            }
        }
    }
}

/// PRIVLEARN (Fig. 7.2) on `data` with the sampled queries `sample` (`q_1 … q_{b_iter}`
/// drawn from G by the caller, independently of the data), accuracy `alpha ∈ (0, 1/4]`
/// (Claim 7.3.9 needs it), `gamma ∈ (0, 1)`, total budget ε charged to `budget` before
/// anything is answered.
///
/// The oracle is TO(D, α/7, b) with b the number of *distinct* sampled queries: every
/// threshold asks about the same queries, whose noisy counts are reused, so the
/// sampling-only learner needs no other oracle queries. Iteration i (for
/// `t_i = i/(k+1)`, `k = ⌈3/α⌉`, TYPO-22) labels the sample, stops with the constant
/// `t_i` if fewer than `γ/2` of the labels are non-⊥, and otherwise learns `h_i` from
/// the non-⊥ ones.
///
/// ```
/// use privq_host::accountant::Accountant;
/// use privq_host::data::{CountHistogram, MemoryCap};
/// use privq_host::threshold::{CountingQuery, PtfLearner, privlearn};
/// use privq_host::{Epsilon, seeded_rng};
/// // d = 3, n = 80 000 records spread over the 8 cells.
/// let data = CountHistogram::from_counts((1..=8).map(|c| c * 2_000 + 1_000).collect(), MemoryCap::default())?;
/// let sample: Vec<_> = (0..8u64).map(CountingQuery::conjunction).collect();
/// let learner = PtfLearner::new(3, 3, 64)?;
/// let eps = Epsilon::new(1, 1)?;
/// let mut budget = Accountant::pure(eps);
/// let release = privlearn(&data, &sample, 0.25, 0.1, eps, &learner, &mut budget, &mut seeded_rng(1))?;
/// let q = CountingQuery::conjunction(0b011);
/// let truth = privq_host::threshold::fraction(&data, &q);
/// assert!((release.answer(&q, |h, q| h.predict(q)) - truth).abs() <= 0.25);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn privlearn<L: ThresholdLearner, R: Rng + CryptoRng + ?Sized>(
    data: &CountHistogram,
    sample: &[CountingQuery],
    alpha: f64,
    gamma: f64,
    epsilon: Epsilon,
    learner: &L,
    budget: &mut Accountant,
    rng: &mut R,
) -> Result<ReleasedThresholds<L::Hypothesis>, PrivLearnError> {
    if !(1e-4..=0.25).contains(&alpha) {
        return Err(PrivLearnError::InvalidParameter(format!(
            "alpha = {alpha} must be in [1e-4, 1/4] (Claim 7.3.9: thresholds 1/(k+1) apart must exceed \
             2·alpha/7; below 1e-4 the k = ⌈3/alpha⌉ hypotheses do not fit)"
        )));
    }
    if !(gamma > 0.0 && gamma < 1.0) {
        return Err(PrivLearnError::InvalidParameter(format!(
            "gamma = {gamma} must be in (0, 1)"
        )));
    }
    if sample.is_empty() {
        return Err(PrivLearnError::InvalidParameter(
            "the query sample is empty".into(),
        ));
    }
    for q in sample {
        learner.accepts(q)?;
    }
    let mut distinct = sample.to_vec();
    distinct.sort_by_key(|q| (q.predicate() as u8, q.mask()));
    distinct.dedup();
    let oracle = ThresholdOracle::new(distinct.len(), epsilon, alpha / 7.0)?;
    let mut session = oracle.release(data, budget, rng)?;
    let k = (3.0 / alpha).ceil() as usize;
    let mut hypotheses = Vec::with_capacity(k);
    for i in 1..=k {
        let t = i as f64 / (k + 1) as f64;
        let mut examples = Vec::with_capacity(sample.len());
        for q in sample {
            if let Some(bit) = session.ask(q, t, rng)?.bit() {
                examples.push((*q, bit));
            }
        }
        if (examples.len() as f64) < gamma / 2.0 * sample.len() as f64 {
            return Ok(ReleasedThresholds {
                k,
                hypotheses,
                constant: Some(t),
            });
        }
        hypotheses.push(learner.learn(t, &examples)?);
    }
    Ok(ReleasedThresholds {
        k,
        hypotheses,
        constant: None,
    })
}

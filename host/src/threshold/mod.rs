//! Private data release by learning thresholds (Hardt's thesis, Chapter 7).
//!
//! A release for a counting-query class (monotone conjunctions or parities over
//! `{0,1}^d`, [`CountingQuery`]) is built from a learner for *threshold functions*
//! `f_t(q) = 1[f^D(q) ≥ t]`: the private **threshold oracle** TO (Fig. 7.1,
//! [`ThresholdOracle`]) labels sampled queries against thresholds, and
//! **PRIVLEARN** (Fig. 7.2, [`privlearn`]) runs a [`ThresholdLearner`] once per
//! threshold `t_i = i/(k+1)` (TYPO-22) and combines the hypotheses by the count rule
//! `h(q) = |{i : h_i(q) = 1}|/(k+1)` (TYPO-23).
//!
//! Privacy comes from the oracle alone: it charges ε once, before it answers, for
//! at most `b` distinct queries, each answered from one noisy count (Lemma 7.3.1);
//! the learner, the thresholds and the combination only post-process its answers.
//! The concrete learner is a low-degree polynomial threshold function found by LP
//! ([`PtfLearner`], §7.4 made concrete); [`chebyshev_step`] is Claim 7.4.4's
//! polynomial. [`Requirements`] evaluates the exact parameters (7.6)–(7.8) — with the
//! thesis constants they ask for astronomically many records, which
//! `privq experiment privlearn` prints beside the `n` it actually uses.

mod chebyshev;
mod oracle;
mod params;
mod privlearn;
mod ptf;
mod query;

pub use chebyshev::{chebyshev, chebyshev_step};
pub use oracle::{Label, ThresholdOracle, ThresholdSession};
pub use params::Requirements;
pub use privlearn::{PrivLearnError, ReleasedThresholds, ThresholdLearner, privlearn};
pub use ptf::{PtfHypothesis, PtfLearner, monomials};
pub use query::{CountingQuery, Predicate, binary_dimension, count, fraction};

#[cfg(test)]
mod tests;

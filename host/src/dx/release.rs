//! d_X-private answers to linear queries, released end to end: the entry point that
//! owns every release decision of `privq dx` — the parameter selection, the ε
//! accountant (capped at the caller's budget, or at the implied ε-DP cost of the
//! release) and the neighbour relation it is bound to, and that the implied ε-DP
//! cost is charged before any noise is drawn. Front ends (`privq dx`, bindings)
//! parse, call [`DxRequest::prepare`] and [`DxPlan::release`] (or [`release`]) and
//! print what they return.
//!
//! ```
//! use privq_host::contract::Neighbours;
//! use privq_host::dx::release::{DxRequest, Strategy, release};
//! use privq_host::dx::{FiniteMetric, Queries};
//! use privq_host::{Epsilon, seeded_rng};
//!
//! let metric = FiniteMetric::euclidean(&[[0.0], [1.0], [3.0]], 1.0)?;
//! let queries = Queries::new(vec![vec![0.0, 1.0, 3.0]])?;
//! let request = DxRequest::new(Strategy::Psa);
//! let out = release(&metric, queries, &[10, 5, 7], &request, &mut seeded_rng(1))?;
//! assert_eq!(out.answers.len(), 1);
//! assert_eq!(out.accountant.neighbours(), Some(Neighbours::Replace));
//! assert_eq!(out.accountant.spent_epsilon(), Some(Epsilon::new(3, 1)?)); // max d = 3
//! # Ok::<(), privq_host::dx::DxError>(())
//! ```

use privq_core::Epsilon;
use privq_core::rand_core::{CryptoRng, Rng};

use super::optimum::{Objective, relaxed_optimum};
use super::psa::{PairTable, psa_table, strategy1, strategy2};
use super::{DxError, DxLaplace, FiniteMetric, Queries, baseline_scale};
use crate::accountant::Accountant;
use crate::contract::Neighbours;

/// The relation a d_X release is charged under: it moves one record from element
/// i to element j, so replace-one (n is public). [`super::DxSpend::charge`] states
/// its charges under it; the accountant of [`DxRequest::prepare`] is bound to it.
pub const NEIGHBOURS: Neighbours = Neighbours::Replace;

/// Above this implied ε-DP cost, with no budget given, the ε-DP reading of a
/// release says little ([`DxPlan::implied_epsilon_warning`]).
pub const IMPLIED_EPSILON_WARNING: f64 = 10.0;

/// The parameter selection for several queries (the paper's §3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Strategy 3 with PSA.
    Psa,
    /// Strategy 1.
    S1,
    /// Strategy 2.
    S2,
    /// The exact relaxed optimum (sum of squared scales).
    Optimum,
}

/// What to release: the parameter selection and an optional ε-DP budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DxRequest {
    strategy: Strategy,
    budget: Option<Epsilon>,
}

impl DxRequest {
    /// A release with `strategy`'s noise scales and no cap: the accountant's budget
    /// is the release's implied ε-DP cost.
    pub fn new(strategy: Strategy) -> Self {
        DxRequest {
            strategy,
            budget: None,
        }
    }

    /// Caps the release: refused, before anything is drawn, unless its implied ε-DP
    /// cost fits in `budget`.
    pub fn budget(mut self, budget: Option<Epsilon>) -> Self {
        self.budget = budget;
        self
    }

    /// The parameter selection.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// Builds the mechanism for `queries` over the universe of `metric` (both
    /// public) with the request's scales, and its accountant: a pure-ε budget (the
    /// request's, or the implied ε-DP cost rounded up as it is charged) bound to
    /// [`NEIGHBOURS`]. Nothing is charged or drawn yet.
    pub fn prepare(&self, metric: &FiniteMetric, queries: Queries) -> Result<DxPlan, DxError> {
        let table = PairTable::new(metric, &queries)?;
        let scales = match self.strategy {
            Strategy::Psa => psa_table(&table)?.scales,
            Strategy::S1 => strategy1(&table)?.scales,
            Strategy::S2 => strategy2(&table)?.scales,
            Strategy::Optimum => relaxed_optimum(&table, Objective::SumOfSquares)?.scales,
        };
        let baseline = baseline_scale(metric, &queries)?;
        let mechanism = DxLaplace::new(metric, queries, scales)?;
        let budget = match self.budget {
            Some(budget) => budget,
            None => mechanism.spend().charged_epsilon()?,
        };
        let mut accountant = Accountant::pure(budget);
        accountant.bind(NEIGHBOURS);
        Ok(DxPlan {
            mechanism,
            baseline,
            accountant,
            capped: self.budget.is_some(),
        })
    }
}

/// A prepared release: the mechanism and its accountant, nothing spent yet.
#[derive(Debug, Clone)]
pub struct DxPlan {
    mechanism: DxLaplace,
    baseline: f64,
    accountant: Accountant,
    capped: bool,
}

impl DxPlan {
    /// The mechanism (public: its scales and spend depend on the metric and the
    /// queries only).
    pub fn mechanism(&self) -> &DxLaplace {
        &self.mechanism
    }

    /// The noise scale the ε-DP baseline needs for every query.
    pub fn baseline_scale(&self) -> f64 {
        self.baseline
    }

    /// The release's implied ε-DP cost: the largest per-pair budget.
    pub fn implied_epsilon(&self) -> f64 {
        self.mechanism.spend().dp_epsilon()
    }

    /// The implied ε-DP cost when no budget caps it and it exceeds
    /// [`IMPLIED_EPSILON_WARNING`]: the guarantee that matters is then d_X-privacy,
    /// pair by pair.
    pub fn implied_epsilon_warning(&self) -> Option<f64> {
        let implied = self.implied_epsilon();
        (!self.capped && implied > IMPLIED_EPSILON_WARNING).then_some(implied)
    }

    /// The accountant the release will be charged to (bound to [`NEIGHBOURS`]).
    pub fn accountant(&self) -> &Accountant {
        &self.accountant
    }

    /// Releases `Q̃x + Y` for the histogram `counts` (the universe's private
    /// counts): charges the implied ε-DP cost first (a histogram of the wrong length
    /// or a cost above the budget draws nothing), then draws the noise. Requires a
    /// secure RNG.
    pub fn release<R: Rng + CryptoRng + ?Sized>(
        self,
        counts: &[u64],
        rng: &mut R,
    ) -> Result<DxRelease, DxError> {
        let DxPlan {
            mechanism,
            baseline,
            mut accountant,
            ..
        } = self;
        let answers = mechanism.release(counts, &mut accountant, rng)?;
        Ok(DxRelease {
            answers,
            mechanism,
            baseline_scale: baseline,
            accountant,
        })
    }
}

/// A release: the answers, the mechanism that produced them, and what it cost.
#[derive(Debug)]
pub struct DxRelease {
    /// One noisy answer per query.
    pub answers: Vec<f64>,
    /// The mechanism: its per-query scales ([`DxLaplace::scale`]), spend and
    /// grid privacy-loss ratio.
    pub mechanism: DxLaplace,
    /// The noise scale the ε-DP baseline needs for every query.
    pub baseline_scale: f64,
    /// The accountant that paid for the release, bound to [`NEIGHBOURS`]; its
    /// ledger is the release's.
    pub accountant: Accountant,
}

/// [`DxRequest::prepare`] then [`DxPlan::release`]: the d_X-private answers to
/// `queries` on the histogram `counts` over the universe of `metric`.
///
/// ```
/// use privq_host::dx::release::{DxRequest, Strategy, release};
/// use privq_host::dx::{DxError, FiniteMetric, Queries};
/// use privq_host::{Epsilon, seeded_rng};
///
/// let metric = FiniteMetric::euclidean(&[[0.0], [1.0], [3.0]], 1.0)?;
/// let queries = || Queries::new(vec![vec![1.0, 0.0, 0.0], vec![0.0, 0.0, 1.0]]);
/// // The implied ε-DP cost is 3: a budget of 2 refuses before anything is drawn.
/// let capped = DxRequest::new(Strategy::S1).budget(Some(Epsilon::new(2, 1)?));
/// let refused = release(&metric, queries()?, &[10, 5, 7], &capped, &mut seeded_rng(1));
/// assert!(matches!(refused, Err(DxError::Budget(_))));
/// let out = release(&metric, queries()?, &[10, 5, 7], &DxRequest::new(Strategy::S1), &mut seeded_rng(1))?;
/// assert_eq!(out.answers.len(), 2);
/// # Ok::<(), DxError>(())
/// ```
pub fn release<R: Rng + CryptoRng + ?Sized>(
    metric: &FiniteMetric,
    queries: Queries,
    counts: &[u64],
    request: &DxRequest,
    rng: &mut R,
) -> Result<DxRelease, DxError> {
    request.prepare(metric, queries)?.release(counts, rng)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded_rng;

    fn line() -> FiniteMetric {
        FiniteMetric::euclidean(&[[0.0], [1.0], [3.0]], 1.0).unwrap()
    }

    fn queries() -> Queries {
        Queries::new(vec![vec![0.0, 1.0, 3.0]]).unwrap()
    }

    #[test]
    fn invalid_parameters_are_refused_with_typed_errors_before_any_charge() {
        let request = DxRequest::new(Strategy::Psa);
        // Queries over another number of elements than the universe.
        let short = Queries::new(vec![vec![1.0, 0.0]]).unwrap();
        assert!(matches!(
            request.prepare(&line(), short),
            Err(DxError::Dimension(_))
        ));
        // A histogram of the wrong length: refused, nothing charged.
        let plan = request.prepare(&line(), queries()).unwrap();
        let err = plan
            .clone()
            .release(&[1, 2], &mut seeded_rng(1))
            .unwrap_err();
        assert!(matches!(err, DxError::Dimension(_)), "{err:?}");
        assert_eq!(plan.accountant().spent_epsilon(), None);
        // A budget below the implied cost.
        let capped = request.budget(Some(Epsilon::new(5, 2).unwrap()));
        let err = release(&line(), queries(), &[1, 2, 3], &capped, &mut seeded_rng(1));
        assert!(matches!(err, Err(DxError::Budget(_))), "{err:?}");
    }

    #[test]
    fn the_accountant_is_bound_to_the_relation_dx_charges_under() {
        let plan = DxRequest::new(Strategy::Optimum)
            .prepare(&line(), queries())
            .unwrap();
        assert_eq!(plan.accountant().neighbours(), Some(NEIGHBOURS));
        assert_eq!(plan.implied_epsilon(), 3.0);
        assert_eq!(plan.implied_epsilon_warning(), None);
        let out = plan.release(&[10, 5, 7], &mut seeded_rng(2)).unwrap();
        // A bound accountant refuses charges under another relation: the one charge
        // went through, so DxSpend states it under NEIGHBOURS.
        assert_eq!(out.accountant.ledger().len(), 1);
        assert_eq!(out.accountant.neighbours(), Some(NEIGHBOURS));
        // Ten times the distances: the implied cost 30 is warned of, unless capped.
        let far = line().scaled(10.0).unwrap();
        let plan = DxRequest::new(Strategy::Psa)
            .prepare(&far, queries())
            .unwrap();
        assert_eq!(plan.implied_epsilon_warning(), Some(30.0));
        let capped = DxRequest::new(Strategy::Psa)
            .budget(Some(Epsilon::new(30, 1).unwrap()))
            .prepare(&far, queries())
            .unwrap();
        assert_eq!(capped.implied_epsilon_warning(), None);
    }
}

//! What a d_X release spends, so that it can be stated and charged before anything
//! is sampled, as every central mechanism's cost is (`docs/src/privacy-model.md`).
//!
//! Design decision: a d_X-private release does not spend one ε but a whole metric,
//! so its receipt is a [`DxSpend`] holding the metric it is certified for. d_X
//! spends compose by adding metrics (Fact 1.2, [`DxSpend::compose`]). To charge the
//! ordinary ε accountant ([`crate::accountant::Accountant`]) we use the standard
//! guarantee a d_X-private mechanism implies: it is ε-DP with
//! `ε = max_{i≠j} d_X(i, j)` (the loosest pair; `+∞` when some pair is unprotected,
//! which then cannot be charged). Note this is the **max**, not the min: `min d_X`
//! is the ε a baseline ε-DP mechanism must use to be d_X-private, the converse
//! direction. Per-pair budgets stay available in [`DxSpend::metric`] for a
//! metric-aware accountant; none exists yet.

use privq_core::Epsilon;

use super::{DxError, FiniteMetric};
use crate::accountant::Accountant;

/// The privacy spent by one d_X release (or a composition of several).
#[derive(Debug, Clone, PartialEq)]
pub struct DxSpend {
    metric: FiniteMetric,
}

impl DxSpend {
    /// The spend of a release certified d_X-private for `metric`.
    pub fn new(metric: FiniteMetric) -> Self {
        DxSpend { metric }
    }

    /// The per-pair budgets spent.
    pub fn metric(&self) -> &FiniteMetric {
        &self.metric
    }

    /// The implied standard ε-DP guarantee `max_{i≠j} d_X(i, j)` (may be `+∞`).
    pub fn dp_epsilon(&self) -> f64 {
        self.metric.max_offdiag()
    }

    /// Sequential composition (Fact 1.2): the per-pair budgets add.
    pub fn compose(&self, other: &DxSpend) -> Result<DxSpend, DxError> {
        Ok(DxSpend {
            metric: self.metric.sum(&other.metric)?,
        })
    }

    /// [`DxSpend::dp_epsilon`] as an exact rational, rounded **up** to a multiple of
    /// 2⁻²⁰: what [`DxSpend::charge`] charges. Errors if ε is infinite.
    pub fn charged_epsilon(&self) -> Result<Epsilon, DxError> {
        let eps = self.dp_epsilon();
        if !eps.is_finite() {
            return Err(DxError::InvalidValue(
                "the release leaves a pair unprotected (ε = ∞): not chargeable as ε-DP".into(),
            ));
        }
        let den = 1u64 << 20;
        let num = (eps * den as f64).ceil().max(1.0) as u64;
        Ok(Epsilon::new(num, den)?)
    }

    /// Charges [`DxSpend::dp_epsilon`], rounded **up** to a multiple of 2⁻²⁰, to an
    /// ε accountant. Errors if ε is infinite or the filter refuses.
    pub fn charge(&self, filter: &mut Accountant, label: &str) -> Result<(), DxError> {
        let e = self.charged_epsilon()?;
        // A d_X release moves one record from element i to j: replace-one.
        filter.charge_as(crate::contract::Neighbours::Replace, label, e.into())?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spend_composes_and_charges_max_pair() {
        let d = FiniteMetric::euclidean(&[[0.0], [1.0], [3.0]], 0.25).unwrap();
        let s = DxSpend::new(d.clone());
        assert_eq!(s.dp_epsilon(), 0.75);
        let two = s.compose(&s).unwrap();
        assert_eq!(two.metric().get(0, 2), 1.5);
        let mut f = Accountant::pure(Epsilon::new(2, 1).unwrap());
        two.charge(&mut f, "two releases").unwrap();
        assert_eq!(f.spent_epsilon().unwrap().to_f64(), 1.5);
        assert!(two.charge(&mut f, "too much").is_err());
        let open = DxSpend::new(FiniteMetric::graph(3, &[(0, 1, 1.0)]).unwrap());
        assert!(open.dp_epsilon().is_infinite());
        assert!(open.charge(&mut f, "inf").is_err());
    }
}

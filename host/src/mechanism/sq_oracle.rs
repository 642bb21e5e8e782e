//! The statistical-query oracle of Prop. 2.9.1: `k` queries, ε-DP in total.

use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::{Epsilon, Fixed, GridLaplace};

use super::error::MechanismError;
use super::laplace::fixed_ceil;
use crate::data::Distribution;
use crate::query::Query;

/// An SQ oracle over a dataset of public size `n` with a budget of `k` queries and
/// total privacy ε (Prop. 2.9.1): each answer is `q(D) + Lap(k/(nε))`, realised on
/// the core's fixed-point grid. Query number `k + 1` is refused.
///
/// ```
/// use privq_host::data::{CountHistogram, MemoryCap};
/// use privq_host::mechanism::SqOracle;
/// use privq_host::query::Query;
/// use privq_host::{Epsilon, seeded_rng};
/// let counts = CountHistogram::from_counts(vec![600, 400], MemoryCap::default())?;
/// let x = counts.normalized()?;
/// let mut oracle = SqOracle::new(&x, counts.total(), 2, Epsilon::new(1, 1)?)?;
/// let mut rng = seeded_rng(4);
/// let q = Query::dense(vec![1.0, 0.0])?;
/// let a = oracle.answer(&q, &mut rng)?;
/// assert!((a - 0.6).abs() < 0.1);
/// oracle.answer(&q, &mut rng)?;
/// assert!(oracle.answer(&q, &mut rng).is_err()); // the third query is refused
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct SqOracle<'a> {
    data: &'a Distribution,
    mech: GridLaplace,
    limit: usize,
    used: usize,
}

impl<'a> SqOracle<'a> {
    /// An oracle for the normalized histogram `data` of `n` records (n public),
    /// answering at most `k` queries with total budget ε.
    pub fn new(
        data: &'a Distribution,
        n: u64,
        k: usize,
        epsilon: Epsilon,
    ) -> Result<Self, MechanismError> {
        if n == 0 {
            return Err(MechanismError::Data(crate::data::DataError::EmptyData));
        }
        if k == 0 {
            return Err(MechanismError::InvalidParameter(
                "the query budget k must be at least 1".into(),
            ));
        }
        let per_query = epsilon.checked_div_int(k as u64)?;
        let mech = GridLaplace::new(fixed_ceil(1.0 / n as f64)?, per_query)?;
        Ok(SqOracle {
            data,
            mech,
            limit: k,
            used: 0,
        })
    }

    /// Answers `q(D)` with noise, or refuses once `k` queries were answered.
    pub fn answer<R: Rng + CryptoRng + ?Sized>(
        &mut self,
        query: &Query,
        rng: &mut R,
    ) -> Result<f64, MechanismError> {
        if self.used >= self.limit {
            return Err(MechanismError::QueryBudgetExhausted { limit: self.limit });
        }
        query.check_universe(self.data.len())?;
        let truth = query.evaluate(self.data.probabilities());
        let released = self.mech.release(Fixed::from_f64(truth)?, rng)?;
        self.used += 1;
        Ok(released.to_f64())
    }

    /// Queries still allowed.
    pub fn remaining(&self) -> usize {
        self.limit - self.used
    }

    /// The smallest `n` for which all `k` answers are within tolerance τ with
    /// probability ≥ 1 − β (eq. 2.8): `n ≥ k(ln k + ln(1/β))/(ετ)`.
    pub fn required_n(k: usize, epsilon: f64, tau: f64, beta: f64) -> f64 {
        let k = k as f64;
        k * (k.ln() + (1.0 / beta).ln()) / (epsilon * tau)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::MemoryCap;
    use crate::seeded_rng;

    #[test]
    fn tolerance_holds_at_the_required_n() {
        // k = 10, ε = 1, τ = 0.05, β = 0.05 → n ≈ 1060; every answer within τ w.p. ≥ 0.95.
        let n_req = SqOracle::required_n(10, 1.0, 0.05, 0.05).ceil() as u64;
        let data = crate::data::CountHistogram::from_counts(
            vec![n_req / 2, n_req - n_req / 2],
            MemoryCap::default(),
        )
        .unwrap()
        .normalized()
        .unwrap();
        let q = Query::dense(vec![1.0, 0.0]).unwrap();
        let truth = q.evaluate(data.probabilities());
        let mut rng = seeded_rng(21);
        let mut failures = 0;
        for _ in 0..200 {
            let mut o = SqOracle::new(&data, n_req, 10, Epsilon::new(1, 1).unwrap()).unwrap();
            let worst = (0..10)
                .map(|_| (o.answer(&q, &mut rng).unwrap() - truth).abs())
                .fold(0.0, f64::max);
            failures += usize::from(worst > 0.05);
        }
        assert!(
            failures <= 25,
            "{failures} of 200 runs missed the tolerance"
        );
        assert!(SqOracle::new(&data, 0, 10, Epsilon::new(1, 1).unwrap()).is_err());
        assert!(SqOracle::new(&data, 10, 0, Epsilon::new(1, 1).unwrap()).is_err());
    }
}

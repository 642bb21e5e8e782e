//! The statistical-query oracle of Prop. 2.9.1: `k` queries, ε-DP in total.

use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::{Epsilon, Fixed};

use super::error::MechanismError;
use super::laplace::VectorLaplace;
use crate::accountant::{Cost, Receipt};
use crate::contract::{Mechanism, Neighbours};
use crate::data::{CountHistogram, DataError};
use crate::query::Query;

/// The SQ oracle of Prop. 2.9.1 (thesis §2.9): up to `k` adaptively chosen
/// statistical queries `q(D) = (1/n)Σ f(x)`, `f ∈ [0, 1]`, each answered as
/// `q(D) + Lap(k/(nε))`, ε-DP in total.
///
/// The oracle is a [`Mechanism`] whose input is the dataset (a histogram of counts)
/// and whose output is an [`SqSession`]: [`Mechanism::release`] charges the whole
/// budget ε for the fixed query budget `k` **before** any answer, and the session then
/// answers at most `k` queries. `n` is the dataset's own number of records, so
/// `neighbours()` must be replace-one ([`Neighbours::Replace`], n public): under
/// add/remove the divisor n is private and construction fails. `cost()` is pure ε.
///
/// ```
/// use privq_host::accountant::Accountant;
/// use privq_host::contract::{Mechanism, Neighbours};
/// use privq_host::data::{CountHistogram, MemoryCap};
/// use privq_host::central::SqOracle;
/// use privq_host::query::Query;
/// use privq_host::{Epsilon, seeded_rng};
/// let counts = CountHistogram::from_counts(vec![600, 400], MemoryCap::default())?;
/// let oracle = SqOracle::new(Neighbours::Replace, 2, Epsilon::new(1, 1)?)?;
/// let mut acct = Accountant::pure(Epsilon::new(1, 1)?);
/// let mut rng = seeded_rng(4); // fixed seed: tests only
/// let mut session = oracle.release(&counts, &mut acct, &mut rng)?; // charges ε = 1
/// let q = Query::dense(vec![1.0, 0.0])?;
/// let a = session.answer(&q, &mut rng)?;
/// assert!((a - 0.6).abs() < 0.1);
/// session.answer(&q, &mut rng)?;
/// assert!(session.answer(&q, &mut rng).is_err()); // the third query is refused
/// assert!(oracle.release(&counts, &mut acct, &mut rng).is_err()); // budget spent
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct SqOracle {
    neighbours: Neighbours,
    k: usize,
    epsilon: Epsilon,
    per_query: Epsilon,
}

impl SqOracle {
    /// An oracle answering at most `k ≥ 1` queries with total budget ε (ε/k each).
    /// `neighbours` must be [`Neighbours::Replace`] (fraction queries need n public).
    pub fn new(neighbours: Neighbours, k: usize, epsilon: Epsilon) -> Result<Self, MechanismError> {
        if k == 0 {
            return Err(MechanismError::InvalidParameter(
                "the query budget k must be at least 1".into(),
            ));
        }
        // Fraction queries have sensitivity 1/n only when n is public.
        neighbours.fraction_l1(1)?;
        Ok(SqOracle {
            neighbours,
            k,
            epsilon,
            per_query: epsilon.checked_div_int(k as u64)?,
        })
    }

    /// The query budget k.
    pub fn query_budget(&self) -> usize {
        self.k
    }

    /// The smallest `n` for which all `k` answers are within tolerance τ with
    /// probability ≥ 1 − β (eq. 2.8): `n ≥ k(ln k + ln(1/β))/(ετ)`.
    pub fn required_n(k: usize, epsilon: f64, tau: f64, beta: f64) -> f64 {
        let k = k as f64;
        k * (k.ln() + (1.0 / beta).ln()) / (epsilon * tau)
    }
}

impl Mechanism for SqOracle {
    type Input = CountHistogram;
    type Output = SqSession;

    fn neighbours(&self) -> Neighbours {
        self.neighbours
    }

    fn cost(&self) -> Cost {
        Cost::Pure(self.epsilon)
    }

    fn label(&self) -> String {
        format!("SQ oracle (k = {} queries)", self.k)
    }

    /// An empty dataset is refused before the charge (n is public under the
    /// replace-one relation the oracle requires).
    fn check_input(&self, data: &CountHistogram) -> Result<(), MechanismError> {
        if data.total() == 0 {
            return Err(MechanismError::Data(DataError::EmptyData));
        }
        Ok(())
    }

    fn release_paid<R: Rng + CryptoRng + ?Sized>(
        &self,
        data: &CountHistogram,
        receipt: Receipt,
        _rng: &mut R,
    ) -> Result<SqSession, MechanismError> {
        receipt.check_covers(&self.cost(), self.neighbours())?;
        let n = data.total();
        if n == 0 {
            return Err(MechanismError::Data(DataError::EmptyData));
        }
        // One fraction query per answer: sensitivity exactly 1/n (n public).
        let noise = VectorLaplace::fractions(self.neighbours, n, 1, self.per_query)?;
        Ok(SqSession {
            counts: data.counts().to_vec(),
            n,
            noise,
            limit: self.k,
            used: 0,
        })
    }
}

/// A paid-for SQ session (see [`SqOracle`]): answers at most `k` queries. Not
/// `Clone`: a copy would answer another `k` queries on the same receipt. Its
/// `Debug` output shows the budget, never the data.
pub struct SqSession {
    counts: Vec<u64>,
    n: u64,
    noise: VectorLaplace,
    limit: usize,
    used: usize,
}

impl std::fmt::Debug for SqSession {
    // By hand, so that the private counts are never formatted.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqSession")
            .field("limit", &self.limit)
            .field("used", &self.used)
            .finish_non_exhaustive()
    }
}

impl SqSession {
    /// Answers `q(D)` with noise, or refuses once `k` queries were answered.
    ///
    /// A 0/1 query's answer `c/n` is rounded to the fixed-point grid exactly from the
    /// integer count; a fractional query's values are put on the 2⁻³² grid and its
    /// answer is computed exactly in integers too.
    pub fn answer<R: Rng + CryptoRng + ?Sized>(
        &mut self,
        query: &Query,
        rng: &mut R,
    ) -> Result<f64, MechanismError> {
        if self.used >= self.limit {
            return Err(MechanismError::QueryBudgetExhausted { limit: self.limit });
        }
        query.check_universe(self.counts.len())?;
        let truth = match query.count(&self.counts) {
            Some(c) => exact_fraction(c, self.n)?,
            None => exact_weighted_fraction(query, &self.counts, self.n)?,
        };
        let released = self.noise.grid_mechanism().release(truth, rng)?;
        self.used += 1;
        Ok(released.to_f64())
    }

    /// Queries still allowed.
    pub fn remaining(&self) -> usize {
        self.limit - self.used
    }

    /// The number of records n (public under replace-one neighbours).
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The noise scale of each answer, `m·γ/(ε/k)` ≥ `k/(nε)`.
    pub fn scale(&self) -> f64 {
        self.noise.scale()
    }
}

/// `(1/n)·Σ_u q̃(u)·c_u` rounded to the nearest 2⁻³² (half up), exactly: the query's
/// values are first put on the public 2⁻³² grid (`q̃ = round(q·2³²)/2³²`, a
/// data-independent change of the query), then the sum is an integer. A record
/// moving between cells changes it by at most 2³² units, so the answer moves by at
/// most `Δ = 1/n` before its final rounding, as for counting queries; no float sum
/// (whose error grows with the number of cells) reaches the noise.
fn exact_weighted_fraction(query: &Query, counts: &[u64], n: u64) -> Result<Fixed, MechanismError> {
    let sum: u128 = counts
        .iter()
        .enumerate()
        .filter(|&(_, &c)| c > 0)
        .map(|(u, &c)| {
            // Clamped into [0, 1] (a `Query::Dense` built without its checked
            // constructor could hold anything): the grid value is at most 2³².
            let v = query.value(u);
            let v = if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) };
            let q = (v * 4_294_967_296.0).round() as u128;
            q * u128::from(c)
        })
        .sum();
    let bits = (2 * sum + u128::from(n)) / (2 * u128::from(n));
    let bits = i64::try_from(bits).map_err(|_| privq_core::Error::OutOfRange)?;
    Ok(Fixed::from_bits(bits))
}

/// `c/n` rounded to the nearest Fixed (ties up), exactly: `⌊(c·2³² + n/2)/n⌋`
/// (for odd n, `⌊(2c·2³² + n)/(2n)⌋`).
fn exact_fraction(c: u64, n: u64) -> Result<Fixed, MechanismError> {
    let num = (u128::from(c) << 33) + u128::from(n);
    let bits = num / (u128::from(n) << 1);
    let bits = i64::try_from(bits).map_err(|_| privq_core::Error::OutOfRange)?;
    Ok(Fixed::from_bits(bits))
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
        let counts = crate::data::CountHistogram::from_counts(
            vec![n_req / 2, n_req - n_req / 2],
            MemoryCap::default(),
        )
        .unwrap();
        let data = counts.normalized().unwrap();
        let q = Query::dense(vec![1.0, 0.0]).unwrap();
        let truth = q.evaluate(data.probabilities());
        let mut rng = seeded_rng(21);
        let mut failures = 0;
        let eps = Epsilon::new(1, 1).unwrap();
        let oracle = SqOracle::new(Neighbours::Replace, 10, eps).unwrap();
        for _ in 0..200 {
            let mut acct = crate::accountant::Accountant::pure(eps);
            let mut o = oracle.release(&counts, &mut acct, &mut rng).unwrap();
            assert_eq!(o.n(), n_req);
            assert!(o.scale() >= 10.0 / n_req as f64);
            let worst = (0..10)
                .map(|_| (o.answer(&q, &mut rng).unwrap() - truth).abs())
                .fold(0.0, f64::max);
            failures += usize::from(worst > 0.05);
            assert!(matches!(
                o.answer(&q, &mut rng),
                Err(MechanismError::QueryBudgetExhausted { limit: 10 })
            ));
            assert!(oracle.release(&counts, &mut acct, &mut rng).is_err());
        }
        assert!(
            failures <= 25,
            "{failures} of 200 runs missed the tolerance"
        );
        assert!(SqOracle::new(Neighbours::AddRemove, 10, eps).is_err());
        assert!(SqOracle::new(Neighbours::Replace, 0, eps).is_err());
        let empty =
            crate::data::CountHistogram::from_counts(vec![0, 0], MemoryCap::default()).unwrap();
        let mut acct = crate::accountant::Accountant::pure(eps);
        assert!(oracle.release(&empty, &mut acct, &mut rng).is_err());
    }

    #[test]
    fn empty_data_costs_nothing_and_debug_hides_the_counts() {
        use crate::accountant::Accountant;
        use crate::contract::{Mechanism, Neighbours};
        let oracle = SqOracle::new(
            Neighbours::Replace,
            2,
            privq_core::Epsilon::new(1, 1).unwrap(),
        )
        .unwrap();
        let mut acct = Accountant::pure(privq_core::Epsilon::new(1, 1).unwrap());
        let empty =
            crate::data::CountHistogram::from_counts(vec![0, 0], MemoryCap::default()).unwrap();
        assert!(
            oracle
                .release(&empty, &mut acct, &mut seeded_rng(1))
                .is_err()
        );
        assert_eq!(acct.spent_epsilon(), None, "refused before the charge");
        let data = crate::data::CountHistogram::from_counts(vec![123_457, 7], MemoryCap::default())
            .unwrap();
        let session = oracle
            .release(&data, &mut acct, &mut seeded_rng(1))
            .unwrap();
        let shown = format!("{session:?}");
        assert!(!shown.contains("123457"), "{shown}");
    }

    #[test]
    fn fractional_queries_are_answered_exactly() {
        // (0.25·3 + 0.5·1)/4 = 0.3125 exactly; a float sum over many cells agrees.
        let q = Query::dense(vec![0.25, 0.5]).unwrap();
        assert_eq!(
            exact_weighted_fraction(&q, &[3, 1], 4).unwrap(),
            Fixed::from_bits(1_342_177_280)
        );
        // A third rounds half up on the grid: 1/3 of 2³² = 1431655765.33 → …765.
        let third = Query::dense(vec![1.0, 0.0, 0.0]).unwrap();
        assert_eq!(
            exact_weighted_fraction(&third, &[1, 1, 1], 3).unwrap(),
            Fixed::from_bits(1_431_655_765)
        );
    }

    #[test]
    fn a_dense_query_built_unchecked_is_clamped_into_0_1() {
        let wild = Query::Dense(std::sync::Arc::from(vec![1e9, f64::NAN, -3.0]));
        let one = Query::dense(vec![1.0, 0.0, 0.0]).unwrap();
        assert_eq!(
            exact_weighted_fraction(&wild, &[2, 1, 1], 4).unwrap(),
            exact_weighted_fraction(&one, &[2, 1, 1], 4).unwrap()
        );
    }

    #[test]
    fn exact_fractions_round_half_up() {
        assert_eq!(exact_fraction(1, 2).unwrap(), Fixed::from_bits(1 << 31));
        assert_eq!(
            exact_fraction(1, 3).unwrap(),
            Fixed::from_f64(1.0 / 3.0).unwrap()
        );
        assert_eq!(exact_fraction(7, 7).unwrap(), Fixed::ONE);
        // 1/2^33 is half a unit: rounds up.
        assert_eq!(exact_fraction(1, 1 << 33).unwrap(), Fixed::from_bits(1));
        assert_eq!(exact_fraction(1, (1 << 33) + 1).unwrap(), Fixed::ZERO);
    }
}

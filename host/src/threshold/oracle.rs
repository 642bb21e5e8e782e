//! The threshold oracle TO(D, α, b) (thesis Fig. 7.1, Lemmas 7.3.1 and 7.3.3).

use std::collections::HashMap;

use privq_core::Epsilon;
use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::sample::DiscreteLaplace;

use super::query::{CountingQuery, binary_dimension, count};
use crate::accountant::{Cost, Receipt};
use crate::central::MechanismError;
use crate::contract::{Mechanism, Neighbours};
use crate::data::{CountHistogram, DataError};

/// One answer of the threshold oracle to `(q, t)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Label {
    /// `0`: the noisy answer is at most `t − 2α/3`, so `f^D(q) < t` (w.h.p.).
    Below,
    /// `1`: the noisy answer is at least `t + 2α/3`, so `f^D(q) ≥ t` (w.h.p.).
    Above,
    /// `⊥`: within `2α/3` of `t`; then `|f^D(q) − t| < α` (w.h.p., Lemma 7.3.3).
    Close,
}

impl Label {
    /// The 0/1 label, `None` for `⊥`.
    pub fn bit(self) -> Option<bool> {
        match self {
            Label::Below => Some(false),
            Label::Above => Some(true),
            Label::Close => None,
        }
    }
}

/// TO(D, α, b): answers `(q, t)` about `f^D(q) = (1/n)·Σ P(q, u)` with a ternary
/// label, ε-DP for at most `b` **distinct** queries q (Lemma 7.3.1).
///
/// The first time q is asked, its count gets exact discrete Laplace noise of scale
/// `b/ε` (in counts: `Lap(b/(εn))` on the fraction); later thresholds for the same
/// q reuse that noisy count, so they cost nothing. A new query beyond the `b`-th is
/// refused ([`MechanismError::QueryBudgetExhausted`]; Fig. 7.1's "output ⊥ and
/// terminate"). Neighbours are replace-one (a count moves by at most 1; n is public
/// and sets the thresholds' scale). The whole ε is charged when the session opens.
///
/// ```
/// use privq_host::accountant::Accountant;
/// use privq_host::contract::Mechanism;
/// use privq_host::data::{CountHistogram, MemoryCap};
/// use privq_host::threshold::{CountingQuery, Label, ThresholdOracle};
/// use privq_host::{Epsilon, seeded_rng};
/// // d = 2, n = 10 000: 70 % of the records have attribute 0.
/// let data = CountHistogram::from_counts(vec![1_500, 3_500, 1_500, 3_500], MemoryCap::default())?;
/// let eps = Epsilon::new(1, 1)?;
/// let to = ThresholdOracle::new(4, eps, 0.1)?;
/// let mut budget = Accountant::pure(eps);
/// let mut rng = seeded_rng(1); // tests only
/// let mut s = to.release(&data, &mut budget, &mut rng)?;
/// let a0 = CountingQuery::conjunction(0b01);
/// assert_eq!(s.ask(&a0, 0.5, &mut rng)?, Label::Above);
/// assert_eq!(s.ask(&a0, 0.9, &mut rng)?, Label::Below);
/// assert_eq!(s.ask(&a0, 0.7, &mut rng)?, Label::Close);
/// assert_eq!(s.distinct_queries(), 1); // one noisy count, reused
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ThresholdOracle {
    b: usize,
    epsilon: Epsilon,
    alpha: f64,
    noise: DiscreteLaplace,
}

impl ThresholdOracle {
    /// An oracle for at most `b ≥ 1` distinct queries, total budget ε, band α ∈ (0, 1).
    pub fn new(b: usize, epsilon: Epsilon, alpha: f64) -> Result<Self, MechanismError> {
        if b == 0 {
            return Err(MechanismError::InvalidParameter(
                "the threshold oracle's query budget b must be at least 1".into(),
            ));
        }
        if !(alpha > 0.0 && alpha < 1.0) {
            return Err(MechanismError::InvalidParameter(format!(
                "the threshold oracle's alpha = {alpha} must be in (0, 1)"
            )));
        }
        let per_query = epsilon.checked_div_int(b as u64)?;
        let noise = DiscreteLaplace::for_sensitivity(Neighbours::Replace.count_l1(), per_query)?;
        Ok(ThresholdOracle {
            b,
            epsilon,
            alpha,
            noise,
        })
    }

    /// The distinct-query budget b.
    pub fn query_budget(&self) -> usize {
        self.b
    }

    /// The band α.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Lemma 7.3.3's sufficient size for agreement with probability ≥ 1 − β:
    /// `n ≥ 30·b·log(b/β)/(εα)` (natural log).
    pub fn agreement_n(&self, beta: f64) -> f64 {
        let b = self.b as f64;
        30.0 * b * (b / beta).ln() / (self.epsilon.to_f64() * self.alpha)
    }
}

impl Mechanism for ThresholdOracle {
    type Input = CountHistogram;
    type Output = ThresholdSession;

    fn neighbours(&self) -> Neighbours {
        Neighbours::Replace
    }

    fn cost(&self) -> Cost {
        Cost::Pure(self.epsilon)
    }

    fn label(&self) -> String {
        format!("threshold oracle TO (b = {} distinct queries)", self.b)
    }

    /// A non-binary universe, an empty dataset or more than 2⁶² records is refused
    /// before the charge (n is public under replace-one neighbours).
    fn check_input(&self, data: &CountHistogram) -> Result<(), MechanismError> {
        binary_dimension(data)?;
        match data.total() {
            0 => Err(MechanismError::Data(DataError::EmptyData)),
            n if n > 1 << 62 => Err(MechanismError::InvalidParameter(format!(
                "n = {n} records: the threshold oracle takes at most 2^62"
            ))),
            _ => Ok(()),
        }
    }

    fn release_paid<R: Rng + CryptoRng + ?Sized>(
        &self,
        data: &CountHistogram,
        receipt: Receipt,
        _rng: &mut R,
    ) -> Result<ThresholdSession, MechanismError> {
        receipt.check_covers(&self.cost(), self.neighbours())?;
        self.check_input(data)?;
        Ok(ThresholdSession {
            counts: data.counts().to_vec(),
            n: data.total(),
            oracle: *self,
            noisy: HashMap::new(),
        })
    }
}

/// A paid-for TO session: at most `b` distinct queries. Not `Clone` (a copy would
/// draw fresh noise for the same queries on the same receipt), and its `Debug`
/// shows neither the counts nor the noisy answers.
pub struct ThresholdSession {
    counts: Vec<u64>,
    n: u64,
    oracle: ThresholdOracle,
    /// `A_q·n`: the noisy count of every query asked so far.
    noisy: HashMap<CountingQuery, i128>,
}

impl std::fmt::Debug for ThresholdSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThresholdSession")
            .field("query_budget", &self.oracle.b)
            .field("distinct_queries", &self.noisy.len())
            .finish_non_exhaustive()
    }
}

impl ThresholdSession {
    /// The label of `(q, t)`, `t ∈ [0, 1)`.
    pub fn ask<R: Rng + CryptoRng + ?Sized>(
        &mut self,
        q: &CountingQuery,
        t: f64,
        rng: &mut R,
    ) -> Result<Label, MechanismError> {
        if !(0.0..1.0).contains(&t) {
            return Err(MechanismError::InvalidParameter(format!(
                "threshold t = {t} must be in [0, 1)"
            )));
        }
        let a = match self.noisy.get(q) {
            Some(&a) => a,
            None => {
                if self.noisy.len() >= self.oracle.b {
                    return Err(MechanismError::QueryBudgetExhausted {
                        limit: self.oracle.b,
                    });
                }
                // n ≤ 2^62 (check_input): count + noise cannot overflow i128,
                // and nothing can fail between the draw and storing it.
                let noise = self.oracle.noise.sample(rng)?;
                let a = i128::from(count(&self.counts, q)) + i128::from(noise);
                self.noisy.insert(*q, a);
                a
            }
        };
        // Compared in counts: A_q·n against n·(t ∓ 2α/3), public numbers.
        let (n, band) = (self.n as f64, 2.0 * self.oracle.alpha / 3.0);
        let a = a as f64;
        Ok(if a <= n * (t - band) {
            Label::Below
        } else if a >= n * (t + band) {
            Label::Above
        } else {
            Label::Close
        })
    }

    /// Distinct queries answered so far.
    pub fn distinct_queries(&self) -> usize {
        self.noisy.len()
    }

    /// Distinct queries left.
    pub fn queries_left(&self) -> usize {
        self.oracle.b - self.noisy.len()
    }

    /// n (public under replace-one neighbours).
    pub fn n(&self) -> u64 {
        self.n
    }
}

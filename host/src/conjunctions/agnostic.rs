//! Release by agnostic learning and multiplicative weights (thesis §6.5, Fig. 6.7),
//! on privq's one MW engine, with an exhaustive-search weak agnostic learner over a
//! finite class C and `STAT_τ` simulated by a statistical-query oracle.

use privq_core::Epsilon;
use privq_core::rand_core::{CryptoRng, Rng};

use super::release::ReleaseError;
use crate::accountant::Accountant;
use crate::central::mw::MwState;
use crate::central::{MechanismError, SqOracle, SqSession, VectorLaplace};
use crate::contract::{Mechanism, Neighbours};
use crate::data::{CountHistogram, MemoryCap};
use crate::query::Query;

/// `STAT_τ`: the answer to the statistical query `E_{x∼D} q(x)` within tolerance τ.
/// The learner asks about class members by index, so an oracle may answer each
/// member once and repeat it (repeated statistical queries may get the same answer).
pub trait StatOracle {
    /// `E_D q` (within [`StatOracle::tolerance`]) for the class member `index`.
    fn stat(&mut self, index: usize, q: &Query) -> Result<f64, ReleaseError>;
    /// τ: how far an answer may be from the truth (with the oracle's confidence).
    fn tolerance(&self) -> f64;
}

/// The exact oracle (tests and baselines: not private).
#[derive(Debug, Clone)]
pub struct ExactStat {
    p: Vec<f64>,
}

impl ExactStat {
    /// The oracle of the normalized histogram of `counts`.
    pub fn new(counts: &CountHistogram) -> Result<Self, ReleaseError> {
        let d = counts
            .normalized()
            .map_err(|e| ReleaseError::Mechanism(MechanismError::Data(e)))?;
        Ok(ExactStat {
            p: d.probabilities().to_vec(),
        })
    }
}

impl StatOracle for ExactStat {
    fn stat(&mut self, _index: usize, q: &Query) -> Result<f64, ReleaseError> {
        Ok(q.evaluate(&self.p))
    }

    fn tolerance(&self) -> f64 {
        0.0
    }
}

/// The central oracle: an ε-DP [`SqSession`] for exactly |C| queries (Prop. 2.9.1),
/// each class member asked once and its noisy answer reused. No `Debug`: it holds
/// the generator whose draws are the noise.
pub(crate) struct CentralStat<'r, R: ?Sized> {
    session: SqSession,
    rng: &'r mut R,
    answers: Vec<Option<f64>>,
    tolerance: f64,
}

impl<R: Rng + CryptoRng + ?Sized> StatOracle for CentralStat<'_, R> {
    fn stat(&mut self, index: usize, q: &Query) -> Result<f64, ReleaseError> {
        let (session, rng) = (&mut self.session, &mut *self.rng);
        answer_once(&mut self.answers, index, || Ok(session.answer(q, rng)?))
    }

    fn tolerance(&self) -> f64 {
        self.tolerance
    }
}

/// Class member `index`'s answer from `answers`, or `ask`ed once and kept: an
/// oracle that answers each member once and repeats it.
pub(super) fn answer_once(
    answers: &mut [Option<f64>],
    index: usize,
    ask: impl FnOnce() -> Result<f64, ReleaseError>,
) -> Result<f64, ReleaseError> {
    let slot = answers.get_mut(index).ok_or_else(|| {
        ReleaseError::InvalidParameter(format!("class member {index} is out of range"))
    })?;
    if let Some(a) = *slot {
        return Ok(a);
    }
    let a = ask()?;
    *slot = Some(a);
    Ok(a)
}

/// What Fig. 6.7 released, and how it got there.
#[derive(Debug, Clone)]
pub struct AgnosticRelease {
    /// The final distribution over the universe (`D` current at stopping).
    pub state: MwState,
    /// `a_c = E_{x∼state} c(x)` for every c in the class, in order.
    pub answers: Vec<f64>,
    /// MW updates made.
    pub rounds: usize,
    /// The bound `T = ⌈16 ln|X|/β²⌉ + 1` (TYPO-21).
    pub bound: usize,
    /// Whether the stopping rule (eq. 6.13) fired before T.
    pub stopped: bool,
}

/// Fig. 6.7 with the corrections TYPO-20 and TYPO-21: MW over the universe of
/// `cells` cells from uniform, `η = β/4`, at most `T = ⌈16 ln|X|/β²⌉ + 1` rounds. Each
/// round the exhaustive learner picks the member q of `class` and the sign s that
/// maximise `v = ½·s·(STAT(q) − E_{D_{t−1}} q)` (Lemma 6.5.3 for `A_t^±`); it stops when
/// `v ≤ β/2 − τ/2` (eq. 6.13 with the oracle's tolerance τ on `E_D q`, which is τ/2 on
/// the probability), and otherwise updates `D_t ∝ D_{t−1}·exp(s·η·q)`. The oracle's τ
/// must be at most β/4, or a round may make no progress (a typed error).
///
/// ```
/// use privq_host::conjunctions::{ExactStat, release_by_agnostic_learning};
/// use privq_host::data::{CountHistogram, MemoryCap};
/// use privq_host::query::Query;
/// let data = CountHistogram::from_counts(vec![10, 20, 30, 40], MemoryCap::default())?;
/// let class: Vec<Query> = (0..4).map(|m| Query::BitPattern { mask: m, pattern: m }).collect();
/// let r = release_by_agnostic_learning(&class, &mut ExactStat::new(&data)?, 4, 0.05)?;
/// // Every member within β (the stopping rule with τ = 0) after at most T rounds.
/// assert!(r.stopped && r.rounds <= r.bound);
/// assert!((r.answers[3] - 0.4).abs() <= 0.05);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn release_by_agnostic_learning(
    class: &[Query],
    oracle: &mut dyn StatOracle,
    cells: usize,
    beta: f64,
) -> Result<AgnosticRelease, ReleaseError> {
    if !(beta > 0.0 && beta <= 0.5) {
        return Err(ReleaseError::InvalidParameter(format!(
            "beta = {beta} must be in (0, 1/2]"
        )));
    }
    if class.is_empty() {
        return Err(ReleaseError::InvalidParameter("the class is empty".into()));
    }
    for q in class {
        q.check_universe(cells)
            .map_err(|e| ReleaseError::Mechanism(MechanismError::Data(e)))?;
    }
    let mut state = MwState::uniform(cells, MemoryCap::default())
        .map_err(|e| ReleaseError::Mechanism(MechanismError::Data(e)))?;
    let eta = beta / 4.0;
    let bound = round_bound(cells, beta)?;
    let tau = oracle.tolerance();
    if tau.is_nan() || tau > beta / 4.0 {
        return Err(ReleaseError::InvalidParameter(format!(
            "the oracle's tolerance {tau:.3e} exceeds beta/4 = {}: rounds could make no progress",
            beta / 4.0
        )));
    }
    let (mut rounds, mut stopped) = (0, false);
    while rounds < bound {
        let mut best = (f64::NEG_INFINITY, 0usize, 1.0);
        let current = class_answers(class, &state);
        for ((i, q), now) in class.iter().enumerate().zip(current) {
            let gap = oracle.stat(i, q)? - now;
            let (v, s) = if gap >= 0.0 {
                (gap / 2.0, 1.0)
            } else {
                (-gap / 2.0, -1.0)
            };
            if v > best.0 {
                best = (v, i, s);
            }
        }
        let (v, i, s) = best;
        if v <= beta / 2.0 - tau / 2.0 {
            stopped = true;
            break;
        }
        state.update(&class[i], s * eta);
        rounds += 1;
    }
    let answers = class_answers(class, &state);
    Ok(AgnosticRelease {
        state,
        answers,
        rounds,
        bound,
        stopped,
    })
}

/// `E_{D} q` for every member of the class under the state D. When every member
/// is a monotone conjunction (`BitPattern` with pattern = mask) over a dense
/// binary universe, all of them come from one superset-sum (zeta) transform,
/// `O(d·2^d)` instead of `O(|C|·2^d)`: `c_S(D) = Σ_{u ⊇ S} D(u)`.
fn class_answers(class: &[Query], state: &MwState) -> Vec<f64> {
    let cells = state.len();
    let conjunctions = state.support().is_none()
        && cells.is_power_of_two()
        && class.len() > 2 * cells.trailing_zeros() as usize
        && class
            .iter()
            .all(|q| matches!(q, Query::BitPattern { mask, pattern } if mask == pattern && *mask < cells));
    if !conjunctions {
        return class.iter().map(|q| state.evaluate(q)).collect();
    }
    let t = superset_sums(state.probabilities());
    class
        .iter()
        .map(|q| match q {
            Query::BitPattern { mask, .. } => t[*mask],
            _ => state.evaluate(q),
        })
        .collect()
}

/// Every monotone conjunction's value under a distribution over a binary
/// universe of `2^d` cells at once: `c_S = Σ_{u ⊇ S} p(u)`, indexed by S (the
/// zeta transform, `O(d·2^d)`).
///
/// # Panics
/// If `p.len()` is not a power of two (the cells of `d` binary attributes).
pub fn superset_sums(p: &[f64]) -> Vec<f64> {
    let mut t = p.to_vec();
    let cells = t.len();
    assert!(
        cells.is_power_of_two(),
        "superset_sums: {cells} cells is not 2^d"
    );
    let mut bit = 1;
    while bit < cells {
        for u in 0..cells {
            if u & bit == 0 {
                t[u] += t[u | bit];
            }
        }
        bit <<= 1;
    }
    t
}

/// `T = ⌈16 ln|X|/β²⌉ + 1`, refused above 10⁹ rounds.
fn round_bound(cells: usize, beta: f64) -> Result<usize, ReleaseError> {
    let t = (16.0 * (cells as f64).ln() / (beta * beta)).ceil() + 1.0;
    if t.is_finite() && t <= 1e9 {
        Ok(t as usize)
    } else {
        Err(ReleaseError::InvalidParameter(format!(
            "beta = {beta} needs about {t:.3e} rounds over {cells} cells; raise beta"
        )))
    }
}

/// Fig. 6.7 made private: the class's answers come from one central SQ oracle for
/// exactly |C| queries (each member asked once, noise `Lap(|C|/(εn))`), charged to
/// `budget` before the first; everything else is post-processing. Replace-one
/// neighbours (n public).
pub fn release_by_agnostic_learning_private<R: Rng + CryptoRng + ?Sized>(
    data: &CountHistogram,
    class: &[Query],
    beta: f64,
    epsilon: Epsilon,
    budget: &mut Accountant,
    rng: &mut R,
) -> Result<AgnosticRelease, ReleaseError> {
    if class.is_empty() {
        return Err(ReleaseError::InvalidParameter("the class is empty".into()));
    }
    for q in class {
        q.check_universe(data.len())
            .map_err(|e| ReleaseError::Mechanism(MechanismError::Data(e)))?;
    }
    if !(beta > 0.0 && beta <= 0.5) {
        return Err(ReleaseError::InvalidParameter(format!(
            "beta = {beta} must be in (0, 1/2]"
        )));
    }
    round_bound(data.len(), beta)?;
    MwState::uniform(data.len(), MemoryCap::default())
        .map_err(|e| ReleaseError::Mechanism(MechanismError::Data(e)))?;
    let k = class.len();
    let n = data.total();
    let oracle = SqOracle::new(Neighbours::Replace, k, epsilon)?;
    // τ with confidence 1 − β over all k answers: scale·ln(k/β) plus one grid step
    // of snapping; the scale is the session's own (n is public under replace-one),
    // computed before the charge so a hopeless n is refused for free.
    let per_query = epsilon
        .checked_div_int(k as u64)
        .map_err(MechanismError::Core)?;
    let noise = VectorLaplace::fractions(Neighbours::Replace, n, 1, per_query)?;
    let tolerance = noise.scale() * ((k as f64 / beta).ln() + 1.0);
    if tolerance > beta / 4.0 {
        return Err(ReleaseError::TooFewRecords {
            n,
            needed: n as f64 * tolerance / (beta / 4.0),
        });
    }
    let session = oracle.release(data, budget, rng)?;
    let mut oracle = CentralStat {
        session,
        rng,
        answers: vec![None; k],
        tolerance,
    };
    release_by_agnostic_learning(class, &mut oracle, data.len(), beta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded_rng;

    fn conjunctions(d: u32, width: u32) -> Vec<Query> {
        (0..1usize << d)
            .filter(|m| m.count_ones() <= width)
            .map(|m| Query::BitPattern {
                mask: m,
                pattern: m,
            })
            .collect()
    }

    #[test]
    fn the_zeta_transform_answers_every_conjunction_as_evaluate_does() {
        let data = random_data(7, 4);
        let state = MwState::from_weights(data.normalized().unwrap().probabilities()).unwrap();
        let class = conjunctions(7, 3);
        let fast = class_answers(&class, &state);
        for (q, a) in class.iter().zip(&fast) {
            assert!((state.evaluate(q) - a).abs() < 1e-12);
        }
        // A class with another kind of query takes the general path.
        let mut mixed = class.clone();
        mixed.push(Query::Parity { mask: 3 });
        let slow = class_answers(&mixed, &state);
        assert!((slow[0] - fast[0]).abs() < 1e-12);
        assert!((slow[class.len()] - state.evaluate(&mixed[class.len()])).abs() < 1e-15);
    }

    fn random_data(d: u32, seed: u64) -> CountHistogram {
        let mut rng = seeded_rng(seed);
        let counts = (0..1u64 << d)
            .map(|u| u64::from(rng.next_u32() % 20) * (1 + u64::from(u.count_ones())).pow(2))
            .collect();
        CountHistogram::from_counts(counts, MemoryCap::default()).unwrap()
    }

    /// Thm 6.5.2 with TYPO-21: at most T rounds, each lowering the potential
    /// RE(D‖D_t) by at least β²/16, and every member of C within β at the end
    /// (exact oracle, τ = 0).
    #[test]
    fn rounds_potential_and_final_error_with_the_exact_oracle() {
        for seed in 0..4 {
            let data = random_data(8, seed);
            let target = data.normalized().unwrap().probabilities().to_vec();
            let class = conjunctions(8, 3);
            let beta = 0.05;
            // Re-run round by round to watch the potential.
            let mut oracle = ExactStat::new(&data).unwrap();
            let r = release_by_agnostic_learning(&class, &mut oracle, 256, beta).unwrap();
            assert!(
                r.stopped && r.rounds <= r.bound,
                "{} of {}",
                r.rounds,
                r.bound
            );
            let mut exact = ExactStat::new(&data).unwrap();
            for (i, q) in class.iter().enumerate() {
                let truth = exact.stat(i, q).unwrap();
                assert!((r.answers[i] - truth).abs() <= beta + 1e-12, "seed {seed}");
            }
            let mut state = MwState::uniform(256, MemoryCap::default()).unwrap();
            let mut last = state.potential(&target);
            for _ in 0..r.rounds {
                let (mut best, mut pick) = (f64::NEG_INFINITY, (0, 1.0));
                for (i, q) in class.iter().enumerate() {
                    let gap = exact.stat(i, q).unwrap() - state.evaluate(q);
                    if gap.abs() > best {
                        best = gap.abs();
                        pick = (i, gap.signum());
                    }
                }
                state.update(&class[pick.0], pick.1 * beta / 4.0);
                let now = state.potential(&target);
                assert!(
                    last - now >= beta * beta / 16.0 - 1e-12,
                    "drop {}",
                    last - now
                );
                last = now;
            }
        }
    }

    #[test]
    fn the_private_release_charges_once_and_answers_every_member() {
        let data = random_data(6, 9);
        let class = conjunctions(6, 2);
        let eps = Epsilon::new(1, 1).unwrap();
        let mut budget = Accountant::pure(eps);
        let r = release_by_agnostic_learning_private(
            &data,
            &class,
            0.1,
            eps,
            &mut budget,
            &mut seeded_rng(3),
        )
        .unwrap();
        assert_eq!(budget.ledger().len(), 1);
        assert_eq!(r.answers.len(), class.len());
        assert!(r.rounds <= r.bound);
        // Bad input is refused before the charge.
        let mut fresh = Accountant::pure(eps);
        assert!(
            release_by_agnostic_learning_private(
                &data,
                &[],
                0.1,
                eps,
                &mut fresh,
                &mut seeded_rng(1)
            )
            .is_err()
        );
        let wide = [Query::BitPattern {
            mask: 1 << 7,
            pattern: 1 << 7,
        }];
        assert!(
            release_by_agnostic_learning_private(
                &data,
                &wide,
                0.1,
                eps,
                &mut fresh,
                &mut seeded_rng(1)
            )
            .is_err()
        );
        // β out of range, or too few records for a tolerance under β/4: refused
        // before the charge too.
        assert!(
            release_by_agnostic_learning_private(
                &data,
                &class,
                0.7,
                eps,
                &mut fresh,
                &mut seeded_rng(1)
            )
            .is_err()
        );
        let tiny = CountHistogram::from_counts(vec![3; 64], MemoryCap::default()).unwrap();
        assert!(matches!(
            release_by_agnostic_learning_private(
                &tiny,
                &class,
                0.1,
                eps,
                &mut fresh,
                &mut seeded_rng(1)
            ),
            Err(ReleaseError::TooFewRecords { n: 192, .. })
        ));
        assert!(fresh.ledger().is_empty());
        assert!(
            release_by_agnostic_learning(&class, &mut ExactStat::new(&data).unwrap(), 64, 0.7)
                .is_err()
        );
    }
}

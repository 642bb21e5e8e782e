//! Private release of monotone conjunctions (thesis Fig. 6.6, corrected): the
//! tolerant decomposition and the piece means, all answered by one central SQ
//! oracle whose query budget k is fixed before anything is asked.

use privq_core::Epsilon;
use privq_core::rand_core::{CryptoRng, Rng};

use super::decompose::{DecomposeError, Decomposition, Memo, Piece, SetFunction};
use super::learn::rho_for;
use super::local::{CellQuery, device_records};
use crate::accountant::Accountant;
use crate::central::{MechanismError, SqOracle, VectorLaplace};
use crate::contract::{Mechanism, Neighbours};
use crate::data::CountHistogram;
use crate::ldp::fleet::FleetSeed;
use crate::ldp::sq::{LocalSqOracle, SqError};
use crate::query::Query;

/// What a conjunction release needs besides the data and ε.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseConfig {
    /// α ∈ (0, 1]: the error allowed on most conjunctions.
    pub alpha: f64,
    /// β ∈ (0, 1]: the fraction of conjunctions (under `p`) allowed a larger error.
    pub beta: f64,
    /// The product distribution of the query sets: attribute i is in S with
    /// probability `p[i]` (1/2 for "all conjunctions"; `w/d` for width about w,
    /// Lemma 6.4.3).
    pub p: Vec<f64>,
    /// The cap on pieces |I|; the oracle's budget is `k = cap·(d + 2)`. A
    /// decomposition that would need more pieces stops growing at the cap
    /// ([`ConjunctionRelease::truncated`]) rather than fail after the charge.
    pub cap: usize,
    /// The decomposition's ρ, public and fixed in advance. `None`: the theorem's
    /// `ρ = α²/(6 ln(2/β))` (Fig. 6.3, TYPO-15). A larger ρ gives fewer, coarser
    /// pieces; the oracle's tolerance must still be at most `ρ/12` for Lemma 6.3.8
    /// ([`ReleaseConfig::central_tolerance`], [`LocalSqOracle::worst_tau`]).
    pub rho: Option<f64>,
    /// Refuse (before any charge) when n is below what tolerance `ρ/12` needs.
    pub require_n: bool,
}

/// Why a release failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReleaseError {
    /// n is below `k(ln k + ln(1/β))/(ετ)` for `τ = ρ/12` (Prop. 2.9.1 with the
    /// tolerance Lemma 6.3.8 needs): the release would not be (α, β)-accurate.
    #[error(
        "n = {n} records are too few for this alpha and beta: the oracle's tolerance needs n >= \
         {needed:.3e}"
    )]
    TooFewRecords {
        /// Records given.
        n: u64,
        /// Records needed.
        needed: f64,
    },
    /// The public bound `E_max` of a cut release is too small for the oracle's
    /// tolerance `ρ/12` at this k and ε.
    #[error(
        "E_max = {e_max} is too small for this alpha, beta and piece cap: the oracle's tolerance \
         needs E_max >= {needed:.3e}"
    )]
    EMaxTooSmall {
        /// The bound given.
        e_max: u64,
        /// The bound needed.
        needed: f64,
    },
    /// A parameter or the data is unusable.
    #[error("invalid parameter: {0}")]
    InvalidParameter(String),
    /// The decomposition failed (e.g. a non-finite oracle answer).
    #[error(transparent)]
    Decompose(#[from] DecomposeError),
    /// The SQ oracle failed (budget, data).
    #[error(transparent)]
    Mechanism(#[from] MechanismError),
    /// The local SQ oracle failed (too few devices, budget, a device's ledger).
    #[error("local SQ oracle: {0}")]
    Local(#[from] SqError),
}

/// The released structure: the decomposition of the disjunction function on the
/// negated records and one noisy mean per piece. Answers any monotone conjunction.
/// It serializes (serde) to its parts and is checked when read back, so a
/// damaged or hostile file is an error, never a panic.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "ReleaseParts", into = "ReleaseParts")]
pub struct ConjunctionRelease {
    decomposition: Decomposition,
    /// `E_x q_B(x)` per piece, noisy: the conjunction answer of the piece.
    answers: Vec<f64>,
    queries: usize,
}

impl ConjunctionRelease {
    /// The released `c_S(D)` for the attribute set S (a bit mask): the noisy
    /// mean of the piece `F(S)`, clamped into `[0, 1]` (post-processing: a
    /// fraction lies there).
    pub fn conjunction(&self, s: u64) -> f64 {
        self.answers[self.decomposition.position_for(s)].clamp(0.0, 1.0)
    }

    /// The decomposition (public: a function of the oracle's noisy answers).
    pub fn decomposition(&self) -> &Decomposition {
        &self.decomposition
    }

    /// Whether the decomposition stopped at the piece cap: some conjunctions are
    /// then answered outside the (α, β) guarantee of Thm 6.3.12.
    pub fn truncated(&self) -> bool {
        self.decomposition.truncated()
    }

    /// The oracle's fixed query budget k.
    pub fn query_budget(&self) -> usize {
        self.queries
    }
}

/// [`ConjunctionRelease`] as stored: every field public data.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ReleaseParts {
    attributes: u32,
    rho: f64,
    truncated: bool,
    query_budget: usize,
    pieces: Vec<Piece>,
    answers: Vec<f64>,
}

impl From<ConjunctionRelease> for ReleaseParts {
    fn from(r: ConjunctionRelease) -> Self {
        ReleaseParts {
            attributes: r.decomposition.ground(),
            rho: r.decomposition.rho(),
            truncated: r.decomposition.truncated(),
            query_budget: r.queries,
            pieces: r.decomposition.pieces().to_vec(),
            answers: r.answers,
        }
    }
}

impl TryFrom<ReleaseParts> for ConjunctionRelease {
    type Error = DecomposeError;

    fn try_from(p: ReleaseParts) -> Result<Self, Self::Error> {
        if p.answers.len() != p.pieces.len() || p.answers.iter().any(|a| !a.is_finite()) {
            return Err(DecomposeError::InvalidParameter(format!(
                "{} answers for {} pieces, or an answer that is not a finite number",
                p.answers.len(),
                p.pieces.len()
            )));
        }
        Ok(ConjunctionRelease {
            decomposition: Decomposition::from_parts(p.attributes, p.rho, p.pieces, p.truncated)?,
            answers: p.answers,
            queries: p.query_budget,
        })
    }
}

/// The oracle `f(S) = 1 − c_S(D)`, the disjunction on the negated records: one
/// `BitPattern` statistical query per distinct set (memoize it), asked of
/// whichever SQ oracle `ask` reaches.
struct NegatedDisjunction<'a> {
    ask: &'a mut dyn FnMut(&Query) -> Result<f64, ReleaseError>,
    d: u32,
}

impl SetFunction for NegatedDisjunction<'_> {
    fn ground(&self) -> u32 {
        self.d
    }

    fn value(&mut self, set: u64) -> Result<f64, DecomposeError> {
        let mask = set as usize;
        let all_ones = Query::BitPattern {
            mask,
            pattern: mask,
        };
        let c = (self.ask)(&all_ones).map_err(|e| DecomposeError::Oracle(Box::new(e)))?;
        Ok(1.0 - c)
    }
}

/// The ρ from which the decomposition is the single piece ∅ (see `plan`).
const TRIVIAL_RHO: f64 = 3.0;

/// The checked shape of a release: `d` attributes, ρ and the query budget k.
struct Plan {
    d: u32,
    rho: f64,
    k: usize,
}

impl ReleaseConfig {
    /// The accountant a central release at `epsilon` runs under: a pure budget of
    /// exactly `epsilon`, bound to replace-one neighbours (n public). A front end
    /// that charges elsewhere first (a budget file) charges this budget.
    pub fn accountant(epsilon: Epsilon) -> Accountant {
        let mut budget = Accountant::pure(epsilon);
        budget.bind(Neighbours::Replace);
        budget
    }

    /// The library entry point of `privq conjunctions release --oracle central`:
    /// [`release_conjunctions`] charged to a fresh pure-ε accountant bound to its
    /// relation (replace one record, n public), returned beside the release.
    ///
    /// ```
    /// use privq_host::conjunctions::ReleaseConfig;
    /// use privq_host::contract::Neighbours;
    /// use privq_host::data::{CountHistogram, MemoryCap};
    /// use privq_host::{Epsilon, seeded_rng};
    /// let counts = vec![1, 2, 3, 4, 5, 6, 7, 8].into_iter().map(|c: u64| c * 10u64.pow(8) / 36).collect();
    /// let data = CountHistogram::from_counts(counts, MemoryCap::default())?;
    /// let config = ReleaseConfig { alpha: 0.3, beta: 0.1, p: vec![0.5; 3], cap: 8, rho: None, require_n: true };
    /// let eps = Epsilon::new(1, 1)?;
    /// let (r, accountant) = config.release(&data, eps, &mut seeded_rng(1))?;
    /// assert!(r.conjunction(0b001) > 0.5);
    /// assert_eq!(accountant.neighbours(), Some(Neighbours::Replace));
    /// assert_eq!(accountant.spent_epsilon(), Some(eps));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release<R: Rng + CryptoRng + ?Sized>(
        &self,
        data: &CountHistogram,
        epsilon: Epsilon,
        rng: &mut R,
    ) -> Result<(ConjunctionRelease, Accountant), ReleaseError> {
        let mut budget = Self::accountant(epsilon);
        let released = release_conjunctions(data, self, epsilon, &mut budget, rng)?;
        Ok((released, budget))
    }

    /// Checks the configuration against a universe of `cells` cells (it must be
    /// binary: `2^d` cells, `1 ≤ d ≤ 24`) and derives ρ and the budget
    /// `k = cap·(d + 2)` (1 when ρ ≥ 3 makes the decomposition trivial).
    fn plan(&self, cells: usize) -> Result<Plan, ReleaseError> {
        if !cells.is_power_of_two() || !(2..=1 << 24).contains(&cells) {
            return Err(ReleaseError::InvalidParameter(format!(
                "{cells} cells: conjunctions need a binary universe of 2 to 2^24 cells"
            )));
        }
        let d = cells.trailing_zeros();
        if !(self.alpha > 0.0 && self.alpha <= 1.0) {
            return Err(ReleaseError::InvalidParameter(format!(
                "alpha = {} must be in (0, 1]",
                self.alpha
            )));
        }
        if !(self.beta > 0.0 && self.beta < 1.0) {
            return Err(ReleaseError::InvalidParameter(format!(
                "beta = {} must be in (0, 1)",
                self.beta
            )));
        }
        if self.p.len() != d as usize || self.p.iter().any(|p| !(0.0..=1.0).contains(p)) {
            return Err(ReleaseError::InvalidParameter(format!(
                "p needs {d} probabilities in [0, 1]"
            )));
        }
        if self.cap == 0 {
            return Err(ReleaseError::InvalidParameter(
                "the piece cap must be at least 1".into(),
            ));
        }
        let k = self
            .cap
            .checked_mul(d as usize + 2)
            .ok_or_else(|| ReleaseError::InvalidParameter("the piece cap is too large".into()))?;
        let rho = match self.rho {
            None => rho_for(self.alpha, self.beta),
            Some(rho) if rho > 0.0 && rho.is_finite() => rho,
            Some(rho) => {
                return Err(ReleaseError::InvalidParameter(format!(
                    "rho = {rho} must be positive and finite"
                )));
            }
        };
        // At ρ ≥ 3 no marginal (at most 1) reaches the include threshold ρ/3 and
        // every element is in V(∅) and V′(∅): the decomposition is the single piece
        // ∅, known in advance, and the release needs one query, not k.
        let k = if rho >= TRIVIAL_RHO { 1 } else { k };
        Ok(Plan { d, rho, k })
    }

    /// The central oracle's tolerance for this release on `n` records of a
    /// universe of `cells` cells: `scale·(ln(k/β) + 1)`, with the noise scale the SQ
    /// session will really use for `Lap(k/(εn))` (its grid can make it larger at
    /// huge n). Depends only on public n, k, ε and β; a ρ of at least 12 times it
    /// meets Lemma 6.3.8's condition.
    pub fn central_tolerance(
        &self,
        cells: usize,
        n: u64,
        epsilon: Epsilon,
    ) -> Result<f64, ReleaseError> {
        let k = self.plan(cells)?.k;
        let per_query = epsilon
            .checked_div_int(k as u64)
            .map_err(MechanismError::Core)?;
        let scale = VectorLaplace::fractions(Neighbours::Replace, n.max(1), 1, per_query)?.scale();
        // One more scale unit covers the grid snap and the discrete tail (as
        // Fig. 6.7's private variant does).
        Ok(scale * ((k as f64 / self.beta).ln() + 1.0))
    }

    /// The oracle's query budget for a universe of `cells` cells: `k = cap·(d + 2)`,
    /// or 1 when ρ ≥ 3 (the decomposition is then the single piece ∅).
    pub fn query_budget(&self, cells: usize) -> Result<usize, ReleaseError> {
        Ok(self.plan(cells)?.k)
    }

    /// The accuracy Thm 6.3.12 gives at this ρ: `α = √(6ρ ln(2/β))` (the
    /// configured α when ρ is the theorem's), provided the oracle's tolerance is
    /// at most ρ/12.
    pub fn effective_alpha(&self) -> f64 {
        let rho = self.rho.unwrap_or_else(|| rho_for(self.alpha, self.beta));
        (6.0 * rho * (2.0 / self.beta).ln()).sqrt()
    }
}

/// The SQ algorithm of Fig. 6.6 itself: the tolerant decomposition of the negated
/// disjunction, then one statistical query per piece for its mean. Every data
/// access goes through `ask`.
fn decompose_and_measure(
    plan: &Plan,
    config: &ReleaseConfig,
    ask: &mut dyn FnMut(&Query) -> Result<f64, ReleaseError>,
) -> Result<ConjunctionRelease, ReleaseError> {
    let d = plan.d;
    let full = (1u64 << d) - 1;
    let decomposition = if plan.rho >= TRIVIAL_RHO {
        let root = Piece {
            b: 0,
            v: full,
            v_path: full,
            t: 0,
        };
        Decomposition::from_parts(d, plan.rho, vec![root], false)?
    } else {
        let mut oracle = Memo::new(NegatedDisjunction { ask: &mut *ask, d });
        Decomposition::tolerant_truncated(&mut oracle, plan.rho, config.cap)?
    };
    let cells = 1u64 << d;
    let answers = decomposition
        .pieces()
        .iter()
        .map(|piece| {
            // Given F(S) = B: B in, T(B) out, every other attribute free.
            let free = !(piece.t | piece.b) & full;
            let q: Vec<f64> = (0..cells)
                .map(|u| {
                    if u & piece.b != piece.b {
                        return 0.0;
                    }
                    (0..d)
                        .filter(|&i| free >> i & 1 == 1 && u >> i & 1 == 0)
                        .map(|i| 1.0 - config.p[i as usize])
                        .product()
                })
                .collect();
            let q = Query::dense(q).map_err(MechanismError::Data)?;
            ask(&q)
        })
        .collect::<Result<Vec<f64>, ReleaseError>>()?;
    Ok(ConjunctionRelease {
        decomposition,
        answers,
        queries: plan.k,
    })
}

/// Fig. 6.6 for monotone conjunctions, corrected: ε-DP under replace-one neighbours
/// (n public) for the whole release, because every data access is one of the
/// `k = cap·(d + 2)` queries of one SQ oracle (Prop. 2.9.1, `Lap(k/(εn))` each,
/// TYPO-18) charged before the first. The decomposition is the tolerant Algorithm
/// 6.2 (TYPO-17) at `ρ = α²/(6 ln(2/β))` (or the configured ρ; it stops at the
/// piece cap, and at ρ ≥ 3 it is the single piece ∅); the mean of piece B is one statistical
/// query, `q_B(x) = 1[B ⊆ x]·Π_{i ∈ Φ, x_i = 0}(1 − p_i)` with Φ the piece's free
/// attributes, and it is the piece's conjunction answer.
///
/// ```
/// use privq_host::accountant::Accountant;
/// use privq_host::conjunctions::{ReleaseConfig, release_conjunctions};
/// use privq_host::data::{CountHistogram, MemoryCap};
/// use privq_host::{Epsilon, seeded_rng};
/// // d = 3: 10^9 records, attribute 0 almost always set.
/// let counts = vec![1, 2, 3, 4, 5, 6, 7, 8].into_iter().map(|c: u64| c * 10u64.pow(8) / 36).collect();
/// let data = CountHistogram::from_counts(counts, MemoryCap::default())?;
/// let config = ReleaseConfig { alpha: 0.3, beta: 0.1, p: vec![0.5; 3], cap: 8, rho: None, require_n: true };
/// let eps = Epsilon::new(1, 1)?;
/// let mut budget = Accountant::pure(eps);
/// let r = release_conjunctions(&data, &config, eps, &mut budget, &mut seeded_rng(1))?;
/// assert!(r.conjunction(0b001) > 0.5);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn release_conjunctions<R: Rng + CryptoRng + ?Sized>(
    data: &CountHistogram,
    config: &ReleaseConfig,
    epsilon: Epsilon,
    budget: &mut Accountant,
    rng: &mut R,
) -> Result<ConjunctionRelease, ReleaseError> {
    let plan = config.plan(data.len())?;
    let (rho, k) = (plan.rho, plan.k);
    let n = data.total();
    let oracle = SqOracle::new(Neighbours::Replace, k, epsilon)?;
    // The tolerance against ρ/12, the condition behind Prop. 2.9.1's n (n is
    // public under replace-one).
    if config.require_n && n > 0 && config.central_tolerance(data.len(), n, epsilon)? > rho / 12.0 {
        let needed = SqOracle::required_n(k, epsilon.to_f64(), rho / 12.0, config.beta);
        return Err(ReleaseError::TooFewRecords {
            n,
            needed: needed.max(n as f64 + 1.0),
        });
    }
    let mut session = oracle.release(data, budget, rng)?;
    // Everything below reads the data only through the session's noisy answers.
    decompose_and_measure(&plan, config, &mut |q| Ok(session.answer(q, rng)?))
}

/// Fig. 6.6 in the local model: the same SQ algorithm as [`release_conjunctions`],
/// its `k = cap·(d + 2)` statistical queries answered by a simulated fleet through
/// the local SQ oracle (one device per record of `data`; under
/// [`Strategy::Partition`](crate::ldp::sq::Strategy::Partition) query j goes to
/// the j-th of k random groups). Every device sends at most ε worth of
/// randomized-response reports, enforced by its own ledger, so the release is
/// ε-LDP per device; the host's work is post-processing of the reports. With
/// `require_n`, refuses (before any device reports) a fleet smaller than the
/// tolerance `ρ/12` needs ([`LocalSqOracle::required_devices`]). The fleet's
/// seed: a 32-byte [`FleetSeed`] drawn from a cryptographic generator for a real
/// run, a `u64` for reproducible tests and demos.
pub fn release_conjunctions_local(
    data: &CountHistogram,
    config: &ReleaseConfig,
    oracle: &LocalSqOracle,
    seed: impl Into<FleetSeed>,
) -> Result<ConjunctionRelease, ReleaseError> {
    let plan = config.plan(data.len())?;
    if oracle.k() != plan.k {
        return Err(ReleaseError::InvalidParameter(format!(
            "the local oracle answers {} queries; this release asks k = cap·(d + 2) = {}",
            oracle.k(),
            plan.k
        )));
    }
    let n = data.total();
    if config.require_n && oracle.worst_tau(n) > plan.rho / 12.0 {
        let needed = oracle
            .required_devices(plan.rho / 12.0)
            .unwrap_or(f64::INFINITY);
        return Err(ReleaseError::TooFewRecords {
            n,
            needed: needed.max(n as f64 + 1.0),
        });
    }
    let records = device_records(data)?;
    let mut session = oracle.session(&records, seed)?;
    decompose_and_measure(&plan, config, &mut |q| {
        Ok(session.answer(&CellQuery(q))?.estimate)
    })
}

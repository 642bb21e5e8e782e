//! Private release of monotone conjunctions (thesis Fig. 6.6, corrected): the
//! tolerant decomposition and the piece means, all answered by one central SQ
//! oracle whose query budget k is fixed before anything is asked.

use std::fmt;

use privq_core::Epsilon;
use privq_core::rand_core::{CryptoRng, Rng};

use super::decompose::{DecomposeError, Decomposition, Memo, SetFunction};
use super::learn::rho_for;
use crate::accountant::Accountant;
use crate::central::{MechanismError, SqOracle, SqSession, VectorLaplace};
use crate::contract::{Mechanism, Neighbours};
use crate::data::CountHistogram;
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
    /// The cap on pieces |I|; the oracle's budget is `k = cap·(d + 2)`.
    pub cap: usize,
    /// Refuse (before any charge) when n is below what tolerance `ρ/12` needs.
    pub require_n: bool,
}

/// Why a release failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReleaseError {
    /// n is below `k(ln k + ln(1/β))/(ετ)` for `τ = ρ/12` (Prop. 2.9.1 with the
    /// tolerance Lemma 6.3.8 needs): the release would not be (α, β)-accurate.
    TooFewRecords {
        /// Records given.
        n: u64,
        /// Records needed.
        needed: f64,
    },
    /// A parameter or the data is unusable.
    InvalidParameter(String),
    /// The decomposition failed (e.g. more pieces than the cap).
    Decompose(DecomposeError),
    /// The SQ oracle failed (budget, data).
    Mechanism(MechanismError),
}

impl fmt::Display for ReleaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReleaseError::TooFewRecords { n, needed } => write!(
                f,
                "n = {n} records are too few for this alpha and beta: the oracle's tolerance needs n >= {needed:.3e}"
            ),
            ReleaseError::InvalidParameter(why) => write!(f, "invalid parameter: {why}"),
            ReleaseError::Decompose(e) => write!(f, "{e}"),
            ReleaseError::Mechanism(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ReleaseError {}

impl From<DecomposeError> for ReleaseError {
    fn from(e: DecomposeError) -> Self {
        ReleaseError::Decompose(e)
    }
}

impl From<MechanismError> for ReleaseError {
    fn from(e: MechanismError) -> Self {
        ReleaseError::Mechanism(e)
    }
}

/// The released structure: the decomposition of the disjunction function on the
/// negated records and one noisy mean per piece. Answers any monotone conjunction.
#[derive(Debug, Clone)]
pub struct ConjunctionRelease {
    decomposition: Decomposition,
    /// `E_x q_B(x)` per piece, noisy: the conjunction answer of the piece.
    answers: Vec<f64>,
    queries: usize,
}

impl ConjunctionRelease {
    /// The released `c_S(D)` for the attribute set S (a bit mask): `1 − μ_{F(S)}`.
    pub fn conjunction(&self, s: u64) -> f64 {
        self.answers[self.decomposition.position_for(s)]
    }

    /// The decomposition (public: a function of the oracle's noisy answers).
    pub fn decomposition(&self) -> &Decomposition {
        &self.decomposition
    }

    /// The oracle's fixed query budget k.
    pub fn query_budget(&self) -> usize {
        self.queries
    }
}

/// The oracle `f(S) = 1 − c_S(D)`, the disjunction on the negated records, answered
/// by the SQ session (one `BitPattern` count per distinct set; memoize it).
struct NegatedDisjunction<'a, R: ?Sized> {
    session: &'a mut SqSession,
    rng: &'a mut R,
    d: u32,
}

impl<R: Rng + CryptoRng + ?Sized> SetFunction for NegatedDisjunction<'_, R> {
    fn ground(&self) -> u32 {
        self.d
    }

    fn value(&mut self, set: u64) -> Result<f64, DecomposeError> {
        let mask = set as usize;
        let all_ones = Query::BitPattern {
            mask,
            pattern: mask,
        };
        let c = self
            .session
            .answer(&all_ones, self.rng)
            .map_err(|e| DecomposeError::Oracle(e.to_string()))?;
        Ok(1.0 - c)
    }
}

/// Fig. 6.6 for monotone conjunctions, corrected: ε-DP under replace-one neighbours
/// (n public) for the whole release, because every data access is one of the
/// `k = cap·(d + 2)` queries of one SQ oracle (Prop. 2.9.1, `Lap(k/(εn))` each,
/// TYPO-18) charged before the first. The decomposition is the tolerant Algorithm
/// 6.2 (TYPO-17) at `ρ = α²/(6 ln(2/β))`; the mean of piece B is one statistical
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
/// let config = ReleaseConfig { alpha: 0.3, beta: 0.1, p: vec![0.5; 3], cap: 8, require_n: true };
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
    let cells = data.len();
    if !cells.is_power_of_two() || !(2..=1 << 24).contains(&cells) {
        return Err(ReleaseError::InvalidParameter(format!(
            "{cells} cells: conjunctions need a binary universe of 2 to 2^24 cells"
        )));
    }
    let d = cells.trailing_zeros();
    for (name, v) in [("alpha", config.alpha), ("beta", config.beta)] {
        if !(v > 0.0 && v <= 1.0) {
            return Err(ReleaseError::InvalidParameter(format!(
                "{name} = {v} must be in (0, 1]"
            )));
        }
    }
    if config.p.len() != d as usize || config.p.iter().any(|p| !(0.0..=1.0).contains(p)) {
        return Err(ReleaseError::InvalidParameter(format!(
            "p needs {d} probabilities in [0, 1]"
        )));
    }
    if config.cap == 0 {
        return Err(ReleaseError::InvalidParameter(
            "the piece cap must be at least 1".into(),
        ));
    }
    let rho = rho_for(config.alpha, config.beta);
    let k = config
        .cap
        .checked_mul(d as usize + 2)
        .ok_or_else(|| ReleaseError::InvalidParameter("the piece cap is too large".into()))?;
    let n = data.total();
    let oracle = SqOracle::new(Neighbours::Replace, k, epsilon)?;
    if config.require_n && n > 0 {
        // The noise the session will really add (its grid can make it larger than
        // k/(εn) at huge n), against the tolerance: scale·ln(k/β) ≤ ρ/12, the
        // condition behind Prop. 2.9.1's n (n is public under replace-one).
        let per_query = epsilon
            .checked_div_int(k as u64)
            .map_err(MechanismError::Core)?;
        let scale = VectorLaplace::fractions(Neighbours::Replace, n, 1, per_query)?.scale();
        if scale * (k as f64 / config.beta).ln() > rho / 12.0 {
            let needed = SqOracle::required_n(k, epsilon.to_f64(), rho / 12.0, config.beta);
            return Err(ReleaseError::TooFewRecords {
                n,
                needed: needed.max(n as f64 + 1.0),
            });
        }
    }
    let mut session = oracle.release(data, budget, rng)?;
    // Everything below reads the data only through the session's noisy answers.
    let decomposition = {
        let mut oracle = Memo::new(NegatedDisjunction {
            session: &mut session,
            rng: &mut *rng,
            d,
        });
        Decomposition::tolerant(&mut oracle, rho, config.cap)?
    };
    let full = if d == 64 { u64::MAX } else { (1u64 << d) - 1 };
    let answers = decomposition
        .pieces()
        .iter()
        .map(|piece| {
            // Given F(S) = B: B in, T(B) out, every other attribute free.
            let free = !(piece.t | piece.b) & full;
            let q: Vec<f64> = (0..cells as u64)
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
            Ok(session.answer(&q, rng)?)
        })
        .collect::<Result<Vec<f64>, ReleaseError>>()?;
    Ok(ConjunctionRelease {
        decomposition,
        answers,
        queries: k,
    })
}

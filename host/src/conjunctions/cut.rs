//! Private release of a graph's cut function (thesis §6.4.1, Lemma 6.4.6,
//! Cor. 6.4.7), with the normalisation of TYPO-19.
//!
//! Every individual owns one edge; neighbouring graphs differ in one edge (add or
//! remove one, [`Neighbours::AddRemove`]): the number of edges is private. The
//! function released is `f(S) = min(cut(S), E_max)/E_max` for a **public** bound
//! `E_max`: clamping at `E_max` keeps the sensitivity `1/E_max` on every graph, so a
//! graph with more than `E_max` edges is answered (with clamped values), never
//! refused — a refusal would reveal `|E| > E_max`. On graphs with `|E| ≤ E_max` (the
//! regime of Cor. 6.4.7) the clamp never acts.
//!
//! The release is Algorithm 6.4 (tolerant, truncated at a public piece cap c at
//! both levels) plus one mean per final piece, with every data access one query of
//! a [`CutOracle`] session whose budget `k = c(c + 1)(|V| + 1) + c²` is fixed from
//! public parameters and charged once, before the first answer. Each answer is an
//! exact integer plus discrete Laplace noise of scale `k/ε` in edge units.

use std::collections::BTreeMap;

use privq_core::Epsilon;
use privq_core::rand_core::{CryptoRng, Rng};

use super::decompose::{DecomposeError, Decomposition, Memo, Piece, SetFunction};
use super::learn::rho_for;
use super::nonmonotone::TwoLevel;
use super::release::ReleaseError;
use crate::accountant::{Accountant, Cost, Receipt};
use crate::central::{Geometric, MechanismError};
use crate::contract::{Mechanism, Neighbours};

/// Bits of the public grid on which a mean query's per-edge weights lie: an edge
/// contributes an integer in `[0, 2^16]`.
const MEAN_GRID_BITS: u32 = 16;

/// The largest `E_max` accepted: `E_max·2^16` and the noise stay inside `i64`.
const E_MAX_LIMIT: u64 = 1 << 40;

/// A directed multigraph on `|V| ≤ 64` vertices: the private input of
/// [`release_cut_function`]. Each edge (each copy of a repeated edge) is one
/// individual's record. Self-loops are accepted and never cut.
#[derive(Clone, PartialEq, Eq)]
pub struct Graph {
    vertices: u32,
    /// `(u, v, multiplicity)`, sorted, multiplicities positive.
    edges: Vec<(u32, u32, u64)>,
}

impl std::fmt::Debug for Graph {
    // By hand, so that the private edges are never formatted.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("vertices", &self.vertices)
            .finish_non_exhaustive()
    }
}

impl Graph {
    /// A graph on `vertices` vertices (1 to 64, public) with one record per listed
    /// edge `(u, v)`.
    pub fn new(vertices: u32, edges: &[(u32, u32)]) -> Result<Self, DecomposeError> {
        let counted: Vec<(u32, u32, u64)> = edges.iter().map(|&(u, v)| (u, v, 1)).collect();
        Self::with_multiplicities(vertices, &counted)
    }

    /// A graph from `(u, v, m)` triples: m records of the edge `(u, v)`.
    pub fn with_multiplicities(
        vertices: u32,
        edges: &[(u32, u32, u64)],
    ) -> Result<Self, DecomposeError> {
        if vertices == 0 || vertices > 64 {
            return Err(DecomposeError::InvalidParameter(format!(
                "{vertices} vertices: 1 to 64 are supported"
            )));
        }
        let mut merged: BTreeMap<(u32, u32), u64> = BTreeMap::new();
        for &(u, v, m) in edges {
            if u >= vertices || v >= vertices {
                return Err(DecomposeError::InvalidParameter(format!(
                    "edge ({u}, {v}) names a vertex beyond the {vertices} of the graph"
                )));
            }
            let slot = merged.entry((u, v)).or_insert(0);
            *slot = slot.checked_add(m).ok_or_else(|| {
                DecomposeError::InvalidParameter("more than 2^64 edge records".into())
            })?;
        }
        Ok(Graph {
            vertices,
            edges: merged
                .into_iter()
                .filter(|&(_, m)| m > 0)
                .map(|((u, v), m)| (u, v, m))
                .collect(),
        })
    }

    /// `|V|` (public).
    pub fn vertices(&self) -> u32 {
        self.vertices
    }

    /// The exact number of edges `(u, v)` with `u ∈ S`, `v ∉ S` (private data).
    pub fn cut_count(&self, s: u64) -> u64 {
        self.edges
            .iter()
            .filter(|&&(u, v, _)| s >> u & 1 == 1 && s >> v & 1 == 0)
            .map(|&(_, _, m)| m)
            .fold(0u64, u64::saturating_add)
    }

    /// `Σ_e m_e·round(2^16·P[u ∈ S]·P[v ∉ S])` for S = `forced` plus each `free`
    /// vertex i independently with probability `p[i]`: the expected cut on the
    /// public 2⁻¹⁶ grid, every edge's weight an integer in `[0, 2^16]` that depends
    /// on the edge alone.
    fn weighted_mean_units(&self, forced: u64, free: u64, p: &[f64]) -> u64 {
        let inside = |x: u32| -> f64 {
            if forced >> x & 1 == 1 {
                1.0
            } else if free >> x & 1 == 1 {
                p[x as usize]
            } else {
                0.0
            }
        };
        let one = 1u64 << MEAN_GRID_BITS;
        self.edges
            .iter()
            .map(|&(u, v, m)| {
                // A self-loop is never cut (as in the exact count).
                let w = if u == v {
                    0.0
                } else {
                    inside(u) * (1.0 - inside(v))
                };
                // The weight is a function of the edge and public parameters only.
                let units = (w * one as f64).round().clamp(0.0, one as f64) as u64;
                units.saturating_mul(m)
            })
            .fold(0u64, u64::saturating_add)
    }
}

/// The oracle of the cut release: at most `k` queries on one graph, each a cut
/// count `min(cut(S), E_max)` or a piece's expected cut (on the 2⁻¹⁶ grid, clamped
/// at `E_max`), each plus discrete Laplace noise of scale `k/ε` in edge units. ε-DP
/// in total under add/remove-one-edge neighbours (each answer moves by at most one
/// edge; basic composition of k answers at ε/k). [`Mechanism::release`] charges ε
/// before the session answers anything.
#[derive(Debug, Clone, Copy)]
pub struct CutOracle {
    k: usize,
    epsilon: Epsilon,
    e_max: u64,
    counts: Geometric,
    means: Geometric,
}

impl CutOracle {
    /// An oracle for `k ≥ 1` queries with total budget ε and the public bound
    /// `1 ≤ E_max ≤ 2^40`.
    pub fn new(k: usize, epsilon: Epsilon, e_max: u64) -> Result<Self, MechanismError> {
        if k == 0 {
            return Err(MechanismError::InvalidParameter(
                "the query budget k must be at least 1".into(),
            ));
        }
        if !(1..=E_MAX_LIMIT).contains(&e_max) {
            return Err(MechanismError::InvalidParameter(format!(
                "E_max = {e_max} must be in 1..=2^40"
            )));
        }
        let per_query = epsilon.checked_div_int(k as u64)?;
        Ok(CutOracle {
            k,
            epsilon,
            e_max,
            counts: Geometric::new(1, per_query)?,
            means: Geometric::new(1 << MEAN_GRID_BITS, per_query)?,
        })
    }

    /// The noise scale of every answer in edge units, `k/ε`.
    pub fn scale(&self) -> f64 {
        self.counts.scale()
    }
}

impl Mechanism for CutOracle {
    type Input = Graph;
    type Output = CutSession;

    fn neighbours(&self) -> Neighbours {
        Neighbours::AddRemove
    }

    fn cost(&self) -> Cost {
        Cost::Pure(self.epsilon)
    }

    fn label(&self) -> String {
        format!(
            "cut-function oracle (k = {} queries, E_max = {})",
            self.k, self.e_max
        )
    }

    fn release_paid<R: Rng + CryptoRng + ?Sized>(
        &self,
        graph: &Graph,
        receipt: Receipt,
        _rng: &mut R,
    ) -> Result<CutSession, MechanismError> {
        receipt.check_covers(&self.cost(), self.neighbours())?;
        Ok(CutSession {
            graph: graph.clone(),
            oracle: *self,
            used: 0,
        })
    }
}

/// A paid-for session of a [`CutOracle`]: answers at most `k` queries. Not
/// `Clone`; its `Debug` output never shows the graph.
pub struct CutSession {
    graph: Graph,
    oracle: CutOracle,
    used: usize,
}

impl std::fmt::Debug for CutSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CutSession")
            .field("limit", &self.oracle.k)
            .field("used", &self.used)
            .finish_non_exhaustive()
    }
}

impl CutSession {
    fn spend(&mut self) -> Result<(), MechanismError> {
        if self.used >= self.oracle.k {
            return Err(MechanismError::QueryBudgetExhausted {
                limit: self.oracle.k,
            });
        }
        self.used += 1;
        Ok(())
    }

    /// `(min(cut(S), E_max) + Z)/E_max`, Z discrete Laplace of scale `k/ε`.
    pub fn cut<R: Rng + CryptoRng + ?Sized>(
        &mut self,
        s: u64,
        rng: &mut R,
    ) -> Result<f64, MechanismError> {
        self.spend()?;
        let count = self.graph.cut_count(s).min(self.oracle.e_max);
        let noisy = self.oracle.counts.release_one(count, rng)?;
        Ok(noisy as f64 / self.oracle.e_max as f64)
    }

    /// The expected cut of S = `forced` plus each `free` vertex i with probability
    /// `p[i]`, on the 2⁻¹⁶ grid and clamped at `E_max`, plus discrete Laplace noise
    /// of scale `2^16·k/ε` grid units (`k/ε` edges), over `E_max`.
    pub fn mean<R: Rng + CryptoRng + ?Sized>(
        &mut self,
        forced: u64,
        free: u64,
        p: &[f64],
        rng: &mut R,
    ) -> Result<f64, MechanismError> {
        if p.len() != self.graph.vertices as usize {
            return Err(MechanismError::InvalidParameter(format!(
                "{} probabilities for {} vertices",
                p.len(),
                self.graph.vertices
            )));
        }
        self.spend()?;
        let top = self.oracle.e_max << MEAN_GRID_BITS;
        let units = self.graph.weighted_mean_units(forced, free, p).min(top);
        let noisy = self.oracle.means.release_one(units, rng)?;
        Ok(noisy as f64 / top as f64)
    }

    /// Queries answered so far.
    pub fn used(&self) -> usize {
        self.used
    }
}

/// What a cut-function release needs besides the graph and ε (all public).
#[derive(Debug, Clone, PartialEq)]
pub struct CutConfig {
    /// α ∈ (0, 1]: the error allowed on most sets.
    pub alpha: f64,
    /// β ∈ (0, 1): the fraction of sets (under `p`) allowed a larger error.
    pub beta: f64,
    /// The product distribution of the query sets: vertex i is in S with
    /// probability `p[i]`.
    pub p: Vec<f64>,
    /// The piece cap c of each decomposition (both levels of Algorithm 6.4); the
    /// oracle's budget is `k = c(c + 1)(|V| + 1) + c²`.
    pub cap: usize,
    /// The decomposition's ρ; `None`: `α²/(6 ln(2/β))` (Fig. 6.5, TYPO-15).
    pub rho: Option<f64>,
    /// The public bound on the number of edges (TYPO-19): `f = min(cut, E_max)/E_max`.
    pub e_max: u64,
    /// Refuse (before any charge) when `E_max` is too small for the oracle's
    /// tolerance to reach `ρ/12` (a decision on public parameters only).
    pub require_tolerance: bool,
}

/// The checked shape of a cut release.
struct CutPlan {
    d: u32,
    rho: f64,
    k: usize,
}

impl CutConfig {
    /// The accountant a release at `epsilon` runs under: a pure budget of exactly
    /// `epsilon`, bound to add/remove-one-edge neighbours. A front end that charges
    /// elsewhere first (a budget file) charges this budget.
    pub fn accountant(epsilon: Epsilon) -> Accountant {
        let mut budget = Accountant::pure(epsilon);
        budget.bind(Neighbours::AddRemove);
        budget
    }

    /// The library entry point of `privq conjunctions cut`: [`release_cut_function`]
    /// charged to a fresh pure-ε accountant bound to its relation (add or remove one
    /// edge, the number of edges private), returned beside the release.
    ///
    /// ```
    /// use privq_host::conjunctions::{CutConfig, Graph};
    /// use privq_host::contract::Neighbours;
    /// use privq_host::{Epsilon, seeded_rng};
    /// let graph = Graph::with_multiplicities(3, &[(0, 1, 1_000_000_000)])?;
    /// let config = CutConfig {
    ///     alpha: 0.5, beta: 0.1, p: vec![0.5; 3], cap: 4, rho: None,
    ///     e_max: 1_000_000_000, require_tolerance: true,
    /// };
    /// let (r, accountant) = config.release(&graph, Epsilon::new(1, 1)?, &mut seeded_rng(1))?;
    /// assert!((r.cut(0b001) - 1.0).abs() < 0.01);
    /// assert_eq!(accountant.neighbours(), Some(Neighbours::AddRemove));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn release<R: Rng + CryptoRng + ?Sized>(
        &self,
        graph: &Graph,
        epsilon: Epsilon,
        rng: &mut R,
    ) -> Result<(CutRelease, Accountant), ReleaseError> {
        let mut budget = Self::accountant(epsilon);
        let released = release_cut_function(graph, self, epsilon, &mut budget, rng)?;
        Ok((released, budget))
    }

    fn plan(&self, vertices: u32) -> Result<CutPlan, ReleaseError> {
        let bad = |why: String| Err(ReleaseError::InvalidParameter(why));
        if vertices == 0 || vertices > 64 {
            return bad(format!("{vertices} vertices: 1 to 64 are supported"));
        }
        if !(self.alpha > 0.0 && self.alpha <= 1.0) {
            return bad(format!("alpha = {} must be in (0, 1]", self.alpha));
        }
        if !(self.beta > 0.0 && self.beta < 1.0) {
            return bad(format!("beta = {} must be in (0, 1)", self.beta));
        }
        if self.p.len() != vertices as usize || self.p.iter().any(|p| !(0.0..=1.0).contains(p)) {
            return bad(format!("p needs {vertices} probabilities in [0, 1]"));
        }
        if self.cap == 0 {
            return bad("the piece cap must be at least 1".into());
        }
        if !(1..=E_MAX_LIMIT).contains(&self.e_max) {
            return bad(format!("E_max = {} must be in 1..=2^40", self.e_max));
        }
        let c = self.cap;
        let k = c
            .checked_add(1)
            .and_then(|c1| c.checked_mul(c1))
            .and_then(|x| x.checked_mul(vertices as usize + 1))
            .and_then(|x| c.checked_mul(c).and_then(|c2| x.checked_add(c2)))
            .ok_or_else(|| ReleaseError::InvalidParameter("the piece cap is too large".into()))?;
        let rho = match self.rho {
            None => rho_for(self.alpha, self.beta),
            Some(rho) if rho > 0.0 && rho.is_finite() => rho,
            Some(rho) => return bad(format!("rho = {rho} must be positive and finite")),
        };
        Ok(CutPlan {
            d: vertices,
            rho,
            k,
        })
    }

    /// The oracle's query budget on `vertices` vertices:
    /// `k = c(c + 1)(|V| + 1) + c²` — at most `c(c + 1)(|V| + 1)` distinct sets for
    /// the two levels of Algorithm 6.4 ([`TwoLevel::tolerant_truncated`]) and one
    /// mean per final piece, of which there are at most c².
    pub fn query_budget(&self, vertices: u32) -> Result<usize, ReleaseError> {
        Ok(self.plan(vertices)?.k)
    }

    /// The oracle's tolerance with probability `1 − β` over all k answers:
    /// `(k/ε)(ln(k/β) + 1)/E_max` (a discrete Laplace tail bound with one more scale
    /// unit for the 2⁻¹⁶ grid). Public: a function of k, ε, β and `E_max`.
    pub fn tolerance(&self, vertices: u32, epsilon: Epsilon) -> Result<f64, ReleaseError> {
        let k = self.plan(vertices)?.k;
        let scale = k as f64 / epsilon.to_f64();
        Ok(scale * ((k as f64 / self.beta).ln() + 1.0) / self.e_max as f64)
    }

    /// The accuracy Thm 6.3.15 gives at this ρ, `√(6ρ ln(2/β))`, provided the
    /// tolerance is at most `ρ/12` and nothing was truncated.
    pub fn effective_alpha(&self) -> f64 {
        let rho = self.rho.unwrap_or_else(|| rho_for(self.alpha, self.beta));
        (6.0 * rho * (2.0 / self.beta).ln()).sqrt()
    }
}

/// The released cut function: Algorithm 6.4's two-level decomposition of the noisy
/// oracle and one noisy mean per final piece. Every field is a function of the
/// oracle's noisy answers and public parameters. Serializes (serde) and is checked
/// when read back.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "CutParts", into = "CutParts")]
pub struct CutRelease {
    two: TwoLevel,
    means: Vec<Vec<f64>>,
    e_max: u64,
    queries: usize,
    epsilon: Epsilon,
}

impl CutRelease {
    /// The released `f(S) = cut(S)/E_max` for the vertex set S (a bit mask): the
    /// noisy mean of the piece `F(S)`, clamped into `[0, 1]` (post-processing).
    pub fn cut(&self, s: u64) -> f64 {
        let (i, j) = self.two.position_for(s);
        self.means[i][j].clamp(0.0, 1.0)
    }

    /// The released cut in edges, `E_max·f(S)`.
    pub fn cut_edges(&self, s: u64) -> f64 {
        self.cut(s) * self.e_max as f64
    }

    /// The two-level decomposition.
    pub fn decomposition(&self) -> &TwoLevel {
        &self.two
    }

    /// Whether a decomposition stopped at the piece cap (some sets are then
    /// answered outside the guarantee of Cor. 6.4.7).
    pub fn truncated(&self) -> bool {
        self.two.truncated()
    }

    /// The fixed query budget k.
    pub fn query_budget(&self) -> usize {
        self.queries
    }

    /// The public bound `E_max`.
    pub fn e_max(&self) -> u64 {
        self.e_max
    }

    /// What the release cost: pure ε under add/remove-one-edge neighbours.
    pub fn cost(&self) -> Cost {
        Cost::Pure(self.epsilon)
    }
}

/// One decomposition as stored.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LevelParts {
    truncated: bool,
    pieces: Vec<Piece>,
}

/// [`CutRelease`] as stored: every field public data.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CutParts {
    vertices: u32,
    rho: f64,
    e_max: u64,
    query_budget: usize,
    epsilon: (u64, u64),
    first: LevelParts,
    second: Vec<LevelParts>,
    means: Vec<Vec<f64>>,
}

impl From<CutRelease> for CutParts {
    fn from(r: CutRelease) -> Self {
        let level = |d: &Decomposition| LevelParts {
            truncated: d.truncated(),
            pieces: d.pieces().to_vec(),
        };
        let first = r.two.first();
        CutParts {
            vertices: first.ground(),
            rho: first.rho(),
            e_max: r.e_max,
            query_budget: r.queries,
            epsilon: (r.epsilon.num(), r.epsilon.den()),
            first: level(first),
            second: r.two.second().iter().map(level).collect(),
            means: r.means,
        }
    }
}

impl TryFrom<CutParts> for CutRelease {
    type Error = DecomposeError;

    fn try_from(p: CutParts) -> Result<Self, Self::Error> {
        let level =
            |l: LevelParts| Decomposition::from_parts(p.vertices, p.rho, l.pieces, l.truncated);
        let first = level(p.first)?;
        let second = p
            .second
            .into_iter()
            .map(level)
            .collect::<Result<Vec<_>, _>>()?;
        let two = TwoLevel::from_parts(first, second)?;
        let shape_ok = p.means.len() == two.second().len()
            && p.means
                .iter()
                .zip(two.second())
                .all(|(m, d)| m.len() == d.len() && m.iter().all(|a| a.is_finite()));
        if !shape_ok || !(1..=E_MAX_LIMIT).contains(&p.e_max) {
            return Err(DecomposeError::InvalidParameter(
                "the means do not match the pieces, one is not finite, or E_max is out of range"
                    .into(),
            ));
        }
        let epsilon = Epsilon::new(p.epsilon.0, p.epsilon.1).map_err(DecomposeError::Epsilon)?;
        Ok(CutRelease {
            two,
            means: p.means,
            e_max: p.e_max,
            queries: p.query_budget,
            epsilon,
        })
    }
}

/// The noisy cut function the decomposition sees: one session query per distinct
/// set (memoize it).
struct NoisyCut<'a, R: ?Sized> {
    session: &'a mut CutSession,
    rng: &'a mut R,
}

impl<R: Rng + CryptoRng + ?Sized> SetFunction for NoisyCut<'_, R> {
    fn ground(&self) -> u32 {
        self.session.graph.vertices
    }

    fn value(&mut self, set: u64) -> Result<f64, DecomposeError> {
        self.session
            .cut(set, self.rng)
            .map_err(|e| DecomposeError::Oracle(Box::new(e)))
    }
}

/// The private release of a graph's cut function (thesis §6.4.1, Cor. 6.4.7, with
/// TYPO-19's public `E_max`): ε-DP under add/remove-one-edge neighbours. One
/// [`CutOracle`] with the budget `k = c(c + 1)(|V| + 1) + c²` (c = `config.cap`) is
/// charged ε before anything is sampled; Algorithm 6.4 (tolerant, each level
/// truncated at c pieces, so it never asks more than its share of k) decomposes
/// the noisy `f(S) = min(cut(S), E_max)/E_max` (memoized, so a repeated set gets its
/// first answer) at `ρ = α²/(6 ln(2/β))` (or the configured ρ), and every final
/// piece's mean under `p` given `F(S) = (B, C)` is one more query. A graph with more
/// than `E_max` edges is answered with clamped values, never refused.
///
/// With `require_tolerance`, refuses before the charge when the tolerance
/// ([`CutConfig::tolerance`], public) exceeds `ρ/12`.
///
/// ```
/// use privq_host::accountant::Accountant;
/// use privq_host::conjunctions::{CutConfig, Graph, release_cut_function};
/// use privq_host::{Epsilon, seeded_rng};
/// // Vertex 0 sends 10^9 edges to vertex 1: the cut of {0} is everything.
/// let graph = Graph::with_multiplicities(3, &[(0, 1, 1_000_000_000)])?;
/// let config = CutConfig {
///     alpha: 0.5, beta: 0.1, p: vec![0.5; 3], cap: 4, rho: None,
///     e_max: 1_000_000_000, require_tolerance: true,
/// };
/// let eps = Epsilon::new(1, 1)?;
/// let mut budget = Accountant::pure(eps);
/// let r = release_cut_function(&graph, &config, eps, &mut budget, &mut seeded_rng(1))?;
/// assert!((r.cut(0b001) - 1.0).abs() < 0.01);
/// assert!(r.cut(0b011) < 0.01);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn release_cut_function<R: Rng + CryptoRng + ?Sized>(
    graph: &Graph,
    config: &CutConfig,
    epsilon: Epsilon,
    budget: &mut Accountant,
    rng: &mut R,
) -> Result<CutRelease, ReleaseError> {
    let plan = config.plan(graph.vertices)?;
    if config.require_tolerance {
        let tau = config.tolerance(graph.vertices, epsilon)?;
        if tau > plan.rho / 12.0 {
            // E_max (public) needed for tolerance ρ/12.
            let needed = config.e_max as f64 * tau / (plan.rho / 12.0);
            return Err(ReleaseError::EMaxTooSmall {
                e_max: config.e_max,
                needed,
            });
        }
    }
    let oracle = CutOracle::new(plan.k, epsilon, config.e_max)?;
    let mut session = oracle.release(graph, budget, rng)?;
    // Everything below reads the graph only through the session's noisy answers.
    let two = {
        let mut f = Memo::new(NoisyCut {
            session: &mut session,
            rng: &mut *rng,
        });
        TwoLevel::tolerant_truncated(&mut f, plan.rho, config.cap)?
    };
    let full = if plan.d == 64 {
        u64::MAX
    } else {
        (1u64 << plan.d) - 1
    };
    let means = (0..two.second().len())
        .map(|i| {
            (0..two.second()[i].len())
                .map(|j| {
                    let (inn, out) = two.fixed((i, j));
                    session.mean(inn & full, !(inn | out) & full, &config.p, rng)
                })
                .collect::<Result<Vec<f64>, _>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(CutRelease {
        two,
        means,
        e_max: config.e_max,
        queries: plan.k,
        epsilon,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded_rng;
    use privq_core::rand_core::Rng;
    use proptest::prelude::*;

    fn eps(num: u64, den: u64) -> Epsilon {
        Epsilon::new(num, den).unwrap()
    }

    fn config(vertices: u32, cap: usize, rho: Option<f64>, e_max: u64) -> CutConfig {
        CutConfig {
            alpha: 0.5,
            beta: 0.1,
            p: vec![0.5; vertices as usize],
            cap,
            rho,
            e_max,
            require_tolerance: false,
        }
    }

    /// A paid session at ε = 10⁹: the noise of scale k/ε is 0 with probability
    /// about `1 − 2e^{−10⁹/k}`, so the answers are the exact clamped values.
    fn exact_session(graph: &Graph, k: usize, e_max: u64) -> CutSession {
        let e = eps(1_000_000_000, 1);
        let oracle = CutOracle::new(k, e, e_max).unwrap();
        oracle
            .release(graph, &mut Accountant::pure(e), &mut seeded_rng(0))
            .unwrap()
    }

    #[test]
    fn graph_merges_repeated_edges_and_counts_cuts_by_hand() {
        // Triangle 0 → 1 → 2 → 0, the edge 0 → 1 three times, plus a self-loop.
        let g = Graph::new(3, &[(0, 1), (1, 2), (2, 0), (0, 1), (0, 1), (2, 2)]).unwrap();
        assert_eq!(g.edges, vec![(0, 1, 3), (1, 2, 1), (2, 0, 1), (2, 2, 1)]);
        assert_eq!(g.cut_count(0b000), 0);
        assert_eq!(g.cut_count(0b001), 3); // 0 → 1 three times
        assert_eq!(g.cut_count(0b011), 1); // 1 → 2
        assert_eq!(g.cut_count(0b100), 1); // 2 → 0; the self-loop is never cut
        assert_eq!(g.cut_count(0b111), 0);
        assert!(Graph::new(3, &[(0, 3)]).is_err());
        assert!(Graph::new(0, &[]).is_err());
        assert!(Graph::new(65, &[]).is_err());
        assert!(
            format!("{g:?}").find("(0, 1").is_none(),
            "Debug shows no edges"
        );
    }

    #[test]
    fn query_budget_by_hand() {
        // k = c(c + 1)(|V| + 1) + c².
        assert_eq!(
            config(3, 2, None, 10).query_budget(3).unwrap(),
            2 * 3 * 4 + 4
        );
        assert_eq!(config(1, 1, None, 10).query_budget(1).unwrap(), 5);
        assert_eq!(
            config(64, 10, None, 10).query_budget(64).unwrap(),
            10 * 11 * 65 + 100
        );
        assert!(config(3, usize::MAX, None, 10).query_budget(3).is_err());
        assert!(config(3, 2, None, 0).query_budget(3).is_err());
        assert!(config(3, 2, None, E_MAX_LIMIT + 1).query_budget(3).is_err());
        assert!(config(3, 2, Some(-1.0), 10).query_budget(3).is_err());
        assert!(
            config(3, 2, None, 10).query_budget(4).is_err(),
            "p has 3 entries"
        );
    }

    /// Hand-checked answers: a star 0 → 1 (5 edges), 0 → 2 (1 edge).
    #[test]
    fn session_answers_clamped_cuts_and_grid_means_by_hand() {
        let g = Graph::with_multiplicities(3, &[(0, 1, 5), (0, 2, 1)]).unwrap();
        // E_max = 3 < |E| = 6: cut({0}) = 6 is clamped to 3, never refused.
        let mut s = exact_session(&g, 8, 3);
        assert_eq!(s.cut(0b001, &mut seeded_rng(1)).unwrap(), 1.0);
        assert_eq!(s.cut(0b011, &mut seeded_rng(2)).unwrap(), 1.0 / 3.0);
        assert_eq!(s.cut(0b110, &mut seeded_rng(3)).unwrap(), 0.0);
        // E_max = 10: with 0 forced in and 1, 2 free at p = ½ every edge has weight
        // ½, so the expected cut is 3 edges: 3/10.
        let mut s = exact_session(&g, 8, 10);
        let p = [0.5; 3];
        assert_eq!(s.mean(0b001, 0b110, &p, &mut seeded_rng(4)).unwrap(), 0.3);
        // 1 forced in as well: only 0 → 2 can be cut, weight ½: 0.05.
        assert_eq!(s.mean(0b011, 0b100, &p, &mut seeded_rng(5)).unwrap(), 0.05);
        // Everything free at p = (1, 0, 0.25): 5·1 + 1·0.75 = 5.75 edges.
        let q = [1.0, 0.0, 0.25];
        assert_eq!(s.mean(0, 0b111, &q, &mut seeded_rng(6)).unwrap(), 0.575);
        assert!(s.mean(0, 0b111, &[0.5; 2], &mut seeded_rng(6)).is_err());
        assert_eq!(s.used(), 3);
    }

    #[test]
    fn session_refuses_past_k() {
        let g = Graph::new(2, &[(0, 1)]).unwrap();
        let mut s = exact_session(&g, 2, 1);
        let mut rng = seeded_rng(7);
        s.cut(1, &mut rng).unwrap();
        s.mean(0, 3, &[0.5; 2], &mut rng).unwrap();
        assert!(matches!(
            s.cut(1, &mut rng),
            Err(MechanismError::QueryBudgetExhausted { limit: 2 })
        ));
        assert!(format!("{s:?}").contains("used: 2"));
    }

    /// The noise is discrete Laplace of scale k/ε in edges: at ε = 1 and k = 4 the
    /// answers spread over several edges, with mean absolute deviation near the
    /// exact `2r/(1 − r²)`, r = e^{−1/4}.
    #[test]
    fn noise_scale_is_k_over_epsilon_edges() {
        let g = Graph::with_multiplicities(2, &[(0, 1, 100)]).unwrap();
        let oracle = CutOracle::new(4, eps(1, 1), 1000).unwrap();
        assert_eq!(oracle.scale(), 4.0);
        let mut rng = seeded_rng(8);
        let draws = 20_000;
        let mut dev = 0.0;
        for _ in 0..draws / 4 {
            let mut s = oracle
                .release(&g, &mut Accountant::pure(eps(1, 1)), &mut rng)
                .unwrap();
            for _ in 0..4 {
                dev += (s.cut(1, &mut rng).unwrap() * 1000.0 - 100.0).abs();
            }
        }
        let r = (-0.25f64).exp();
        let expected = 2.0 * r / (1.0 - r * r);
        let mean = dev / draws as f64;
        assert!(
            (mean - expected).abs() < 0.1 * expected,
            "{mean} vs {expected}"
        );
    }

    #[test]
    fn charges_once_before_sampling_and_refuses_past_the_budget() {
        let g = Graph::new(4, &[(0, 1), (1, 2), (2, 3)]).unwrap();
        let c = config(4, 2, Some(0.6), 100);
        let e = eps(1, 2);
        let mut budget = Accountant::pure(eps(1, 1));
        let r = release_cut_function(&g, &c, e, &mut budget, &mut seeded_rng(9)).unwrap();
        assert_eq!(budget.spent_epsilon(), Some(e));
        assert_eq!(r.cost(), Cost::Pure(e));
        assert_eq!(r.query_budget(), 2 * 3 * 5 + 4);
        release_cut_function(&g, &c, e, &mut budget, &mut seeded_rng(9)).unwrap();
        let refused = release_cut_function(&g, &c, e, &mut budget, &mut seeded_rng(9));
        assert!(matches!(
            refused,
            Err(ReleaseError::Mechanism(MechanismError::Budget(_)))
        ));
        // The tolerance check uses public parameters only and refuses before the charge.
        let strict = CutConfig {
            require_tolerance: true,
            ..c.clone()
        };
        let mut fresh = Accountant::pure(eps(1, 1));
        let r = release_cut_function(&g, &strict, e, &mut fresh, &mut seeded_rng(9));
        assert!(matches!(
            r,
            Err(ReleaseError::EMaxTooSmall { e_max: 100, .. })
        ));
        assert_eq!(fresh.spent_epsilon(), None);
    }

    #[test]
    fn a_graph_beyond_e_max_is_answered_not_refused() {
        let g = Graph::with_multiplicities(3, &[(0, 1, 50), (1, 2, 50)]).unwrap();
        let c = config(3, 4, Some(0.3), 10);
        let e = eps(1_000_000, 1);
        let r =
            release_cut_function(&g, &c, e, &mut Accountant::pure(e), &mut seeded_rng(10)).unwrap();
        for s in 0..8u64 {
            assert!((0.0..=1.0).contains(&r.cut(s)));
        }
    }

    #[test]
    fn the_release_round_trips_through_json_and_a_damaged_file_is_an_error() {
        let g = Graph::new(4, &[(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)]).unwrap();
        let c = config(4, 4, Some(0.3), 5);
        let e = eps(1000, 1);
        let r =
            release_cut_function(&g, &c, e, &mut Accountant::pure(e), &mut seeded_rng(11)).unwrap();
        let json = serde_json::to_string(&r).unwrap();
        let back: CutRelease = serde_json::from_str(&json).unwrap();
        for s in 0..16u64 {
            assert_eq!(back.cut(s), r.cut(s));
        }
        assert_eq!(back.cost(), r.cost());
        let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
        v["means"] = serde_json::json!([]);
        assert!(serde_json::from_value::<CutRelease>(v.clone()).is_err());
        v = serde_json::from_str(&json).unwrap();
        v["second"] = serde_json::json!([]);
        assert!(serde_json::from_value::<CutRelease>(v).is_err());
    }

    /// Cor. 6.4.7 on random graphs with three hubs: 40 vertices; hub–hub edges
    /// carry most of the weight, every other vertex has degree below ρ/3 of E_max.
    /// At α = 0.5, β = 0.1 (ρ ≈ 0.014), ε = 1, c = 16 (k = 11 408) and E_max = 2·10⁹
    /// the tolerance is about 7·10⁻⁵ ≤ ρ/12: on 2 000 sets drawn from p = ½ at most
    /// a β fraction may be off by more than α (measured: none off by more than 0.01).
    #[test]
    fn cut_release_meets_cor_6_4_7_on_hub_graphs() {
        let (alpha, beta) = (0.5, 0.1);
        let e = eps(1, 1);
        for seed in 0..2u64 {
            let mut rng = seeded_rng(100 + seed);
            let mut edges = vec![
                (0, 1, 300_000_000),
                (1, 2, 250_000_000),
                (2, 0, 200_000_000),
            ];
            for light in 3..40u32 {
                edges.push((light % 3, light, 1_000_000));
            }
            for _ in 0..150 {
                let (u, v) = (3 + rng.next_u32() % 37, 3 + rng.next_u32() % 37);
                edges.push((u, v, 200_000));
            }
            let g = Graph::with_multiplicities(40, &edges).unwrap();
            let c = CutConfig {
                alpha,
                beta,
                p: vec![0.5; 40],
                cap: 16,
                rho: None,
                e_max: 2_000_000_000,
                require_tolerance: true,
            };
            let r = release_cut_function(&g, &c, e, &mut Accountant::pure(e), &mut rng).unwrap();
            assert!(!r.truncated(), "seed {seed}: truncated");
            let sets = 2_000;
            let (mut bad, mut worst) = (0, 0.0f64);
            for _ in 0..sets {
                let s = rng.next_u64() & ((1 << 40) - 1);
                let truth = g.cut_count(s) as f64 / c.e_max as f64;
                let err = (r.cut(s) - truth).abs();
                worst = worst.max(err);
                bad += usize::from(err > alpha);
            }
            assert!(
                bad as f64 <= beta * sets as f64,
                "seed {seed}: {bad} sets off by more than alpha"
            );
            assert!(worst < 0.01, "seed {seed}: worst error {worst}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// On any graph (also with more edges than E_max) and any public
        /// parameters: the release succeeds, asks at most k queries and answers in
        /// [0, 1]. With the noise switched off (ε = 10⁹) and `E_max ≥ |E|`, when
        /// nothing was truncated every set satisfies the coordinates its piece's
        /// conditioning fixes (Lemma 6.3.8 needs the tolerance ρ/12; wider noise
        /// may break the conditioning, never the privacy).
        #[test]
        fn any_graph_is_released_within_k_queries(
            vertices in 2u32..7,
            raw in proptest::collection::vec((0u32..7, 0u32..7, 1u64..20), 0..20),
            cap in 1usize..5,
            rho in 0.05f64..1.5,
            e_max in 1u64..60,
            exact in any::<bool>(),
            seed in 0u64..1000,
        ) {
            let edges: Vec<_> = raw.iter().map(|&(u, v, m)| (u % vertices, v % vertices, m)).collect();
            let g = Graph::with_multiplicities(vertices, &edges).unwrap();
            let total: u64 = edges.iter().map(|e| e.2).sum();
            let e_max = if exact { e_max + total } else { e_max };
            let c = config(vertices, cap, Some(rho), e_max);
            let k = c.query_budget(vertices).unwrap();
            let e = if exact { eps(1_000_000_000, 1) } else { eps(2, 1) };
            let plan = c.plan(vertices).unwrap();
            let oracle = CutOracle::new(k, e, e_max).unwrap();
            let mut rng = seeded_rng(seed);
            let mut session = oracle.release(&g, &mut Accountant::pure(e), &mut rng).unwrap();
            let two = {
                let mut f = Memo::new(NoisyCut { session: &mut session, rng: &mut rng });
                TwoLevel::tolerant_truncated(&mut f, plan.rho, cap).unwrap()
            };
            prop_assert!(session.used() + two.len() <= k);
            let r = release_cut_function(&g, &c, e, &mut Accountant::pure(e), &mut rng).unwrap();
            for s in 0..(1u64 << vertices) {
                prop_assert!((0.0..=1.0).contains(&r.cut(s)));
                if exact && !two.truncated() {
                    let (inn, out) = two.fixed(two.position_for(s));
                    prop_assert_eq!(s & inn, inn);
                    prop_assert_eq!(s & out, 0);
                }
            }
        }
    }
}

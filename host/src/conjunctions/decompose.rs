//! Algorithms 6.1 and 6.2 (thesis Figs. 6.1–6.2, Lemmas 6.3.1 and 6.3.8).

use std::collections::HashMap;

/// Query access to a set function `f: 2^U → [0, 1]`, `|U| ≤ 64`, sets as bit masks.
pub trait SetFunction {
    /// `|U|`.
    fn ground(&self) -> u32;
    /// `f(S)` (or an oracle's answer for it; may change the oracle's state).
    fn value(&mut self, set: u64) -> Result<f64, DecomposeError>;
}

/// An oracle that answers every set once and repeats that answer (Lemma 6.3.8
/// needs repeated queries to agree, and it saves oracle calls).
#[derive(Debug)]
pub struct Memo<F> {
    inner: F,
    answers: HashMap<u64, f64>,
}

impl<F: SetFunction> Memo<F> {
    /// Wraps `inner`.
    pub fn new(inner: F) -> Self {
        Memo {
            inner,
            answers: HashMap::new(),
        }
    }

    /// Distinct sets asked so far.
    pub fn calls(&self) -> usize {
        self.answers.len()
    }

    /// The wrapped oracle.
    pub fn into_inner(self) -> F {
        self.inner
    }
}

impl<F: SetFunction> SetFunction for Memo<F> {
    fn ground(&self) -> u32 {
        self.inner.ground()
    }

    fn value(&mut self, set: u64) -> Result<f64, DecomposeError> {
        if let Some(&v) = self.answers.get(&set) {
            return Ok(v);
        }
        let v = self.inner.value(set)?;
        self.answers.insert(set, v);
        Ok(v)
    }
}

/// Why a decomposition failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecomposeError {
    /// More pieces than the cap (Claim 6.3.9 bounds `|I|` by `|U|^{6/ρ}`, which is
    /// rarely affordable): raise ρ or the cap.
    #[error(
        "the decomposition needs more than {cap} pieces; raise rho (or alpha) or the piece cap"
    )]
    TooManyPieces {
        /// The cap.
        cap: usize,
    },
    /// A parameter is out of range; the message says which.
    #[error("invalid parameter: {0}")]
    InvalidParameter(String),
    /// ε is not a value privq can hold exactly.
    #[error("invalid parameter: epsilon: {0}")]
    Epsilon(#[source] privq_core::Error),
    /// The oracle failed (its own error is the source).
    #[error("the oracle failed: {0}")]
    Oracle(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The oracle's answers at `set` and `with` are not both finite.
    #[error("the oracle failed: the oracle's answers at {set:#b} and {with:#b} are not finite")]
    NotFinite {
        /// The first set.
        set: u64,
        /// The second set.
        with: u64,
    },
}

/// One piece `g^B(S) = f(S ∪ B)` on `S ⊆ V(B)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Piece {
    /// B.
    pub b: u64,
    /// `V(B)`: elements whose marginal at B is at most ρ (2ρ/3 tolerant), up to
    /// 10⁻⁹ of float rounding: the piece's ground set, on which it is ρ-Lipschitz.
    pub v: u64,
    /// `V′(B)` (tolerant; `V(B)` for the exact algorithm): the elements the paths of
    /// `F` and `T` do not branch on.
    pub v_path: u64,
    /// `T(B)`: elements rejected on the way to B (a set answered by this piece
    /// avoids them).
    pub t: u64,
}

/// The output of Algorithm 6.1 or 6.2: the pieces, indexed by B.
#[derive(Debug, Clone)]
pub struct Decomposition {
    ground: u32,
    rho: f64,
    pieces: Vec<Piece>,
    index: HashMap<u64, usize>,
    truncated: bool,
}

impl Decomposition {
    /// Algorithm 6.1 (exact oracle): include `B ∪ {x}` when `∂_x f(B) > ρ`;
    /// `V(B) = {x : ∂_x f(B) ≤ ρ}`. At most `cap` pieces.
    pub fn exact<F: SetFunction>(f: &mut F, rho: f64, cap: usize) -> Result<Self, DecomposeError> {
        Self::build(f, rho, cap, [rho, rho, rho], false)
    }

    /// Algorithm 6.2 for an oracle within `ρ/12` of f (memoize it with [`Memo`]):
    /// include when `∂_x f̃(B) > ρ/3`, `V(B) = {x : ∂_x f̃(B) ≤ 2ρ/3}`, and the paths
    /// use `V′(B) = {x : ∂_x f̃(B) ≤ ρ/3}`. At most `cap` pieces.
    ///
    /// ```
    /// use privq_host::conjunctions::{Coverage, Decomposition, Memo};
    /// // Records over 3 attributes: f(S) = fraction of records with some attribute of S.
    /// let mut f = Memo::new(Coverage::new(3, &[(0b001, 6), (0b010, 2), (0b100, 2)])?);
    /// let d = Decomposition::tolerant(&mut f, 0.9, 100)?;
    /// // Only attribute 0 has a marginal (0.6) above ρ/3 = 0.3 at ∅: pieces ∅ and {0}.
    /// assert_eq!(d.len(), 2);
    /// assert_eq!(d.piece_for(0b011).b, 0b001);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tolerant<F: SetFunction>(
        f: &mut F,
        rho: f64,
        cap: usize,
    ) -> Result<Self, DecomposeError> {
        Self::build(f, rho, cap, [rho / 3.0, 2.0 * rho / 3.0, rho / 3.0], false)
    }

    /// [`Decomposition::tolerant`] that stops growing at `cap` pieces instead of
    /// failing: a set whose path would need a piece beyond the cap is answered by
    /// the last piece on its path, outside the guarantee of Lemma 6.3.8
    /// ([`Decomposition::truncated`] says whether that happened). It asks at most
    /// `cap·(d + 1)` distinct sets, so a private release that fixed its query
    /// budget in advance never wastes it on a refusal.
    pub fn tolerant_truncated<F: SetFunction>(
        f: &mut F,
        rho: f64,
        cap: usize,
    ) -> Result<Self, DecomposeError> {
        Self::build(f, rho, cap, [rho / 3.0, 2.0 * rho / 3.0, rho / 3.0], true)
    }

    /// Whether [`Decomposition::tolerant_truncated`] left out pieces at the cap.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// `[include, v, v_path]` thresholds on the marginals.
    fn build<F: SetFunction>(
        f: &mut F,
        rho: f64,
        cap: usize,
        [include, v_at, path_at]: [f64; 3],
        truncate: bool,
    ) -> Result<Self, DecomposeError> {
        let ground = f.ground();
        if ground == 0 || ground > 64 {
            return Err(DecomposeError::InvalidParameter(format!(
                "the ground set has {ground} elements; 1 to 64 are supported"
            )));
        }
        if !(rho > 0.0 && rho.is_finite()) {
            return Err(DecomposeError::InvalidParameter(format!(
                "rho = {rho} must be positive"
            )));
        }
        if cap == 0 {
            return Err(DecomposeError::TooManyPieces { cap });
        }
        // I, in insertion order; the x-loop extends it as in Fig. 6.1.
        let mut sets: Vec<u64> = vec![0];
        let mut truncated = false;
        for x in 0..ground {
            let bit = 1u64 << x;
            let before = sets.len();
            for i in 0..before {
                let b = sets[i];
                if b & bit == 0 && marginal(f, b, bit)? > include {
                    if sets.len() >= cap {
                        if !truncate {
                            return Err(DecomposeError::TooManyPieces { cap });
                        }
                        truncated = true;
                        continue;
                    }
                    sets.push(b | bit);
                }
            }
        }
        let index: HashMap<u64, usize> = sets.iter().enumerate().map(|(i, &b)| (b, i)).collect();
        let mut pieces = Vec::with_capacity(sets.len());
        for &b in &sets {
            let (mut v, mut v_path) = (0u64, 0u64);
            for x in 0..ground {
                let bit = 1u64 << x;
                let m = if b & bit != 0 {
                    0.0
                } else {
                    marginal(f, b, bit)?
                };
                // The slack absorbs float rounding between marginals that are equal
                // in exact arithmetic (submodularity is checked to within it).
                if m <= v_at + V_SLACK {
                    v |= bit;
                }
                if m <= path_at {
                    v_path |= bit;
                }
            }
            pieces.push(Piece { b, v, v_path, t: 0 });
        }
        let mut d = Decomposition {
            ground,
            rho,
            pieces,
            index,
            truncated,
        };
        for i in 0..d.pieces.len() {
            let t = d.rejected(d.pieces[i].b);
            d.pieces[i].t = t;
        }
        Ok(d)
    }

    /// A decomposition from its parts (e.g. read back from a release file),
    /// checked so that every lookup stays in range: at least one piece, ∅ first,
    /// no two pieces with the same B, every set inside the ground set of 1 to 64
    /// elements, ρ positive.
    pub fn from_parts(
        ground: u32,
        rho: f64,
        pieces: Vec<Piece>,
        truncated: bool,
    ) -> Result<Self, DecomposeError> {
        let bad = |why: String| Err(DecomposeError::InvalidParameter(why));
        if ground == 0 || ground > 64 {
            return bad(format!("a ground set of {ground} elements (1 to 64)"));
        }
        if !(rho > 0.0 && rho.is_finite()) {
            return bad(format!("rho = {rho} must be positive and finite"));
        }
        if pieces.first().map(|p| p.b) != Some(0) {
            return bad("the first piece must be B = {} (the empty set)".into());
        }
        let full = if ground == 64 {
            u64::MAX
        } else {
            (1u64 << ground) - 1
        };
        let mut index = HashMap::with_capacity(pieces.len());
        for (i, p) in pieces.iter().enumerate() {
            if [p.b, p.v, p.v_path, p.t].iter().any(|&m| m & !full != 0) {
                return bad(format!("piece {i} names an element outside the ground set"));
            }
            if index.insert(p.b, i).is_some() {
                return bad(format!("two pieces have B = {:#b}", p.b));
            }
        }
        Ok(Decomposition {
            ground,
            rho,
            pieces,
            index,
            truncated,
        })
    }

    /// The number of pieces `|I|`.
    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    /// Whether there are no pieces (never: ∅ is always one).
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// ρ.
    pub fn rho(&self) -> f64 {
        self.rho
    }

    /// `|U|`.
    pub fn ground(&self) -> u32 {
        self.ground
    }

    /// Every piece, ∅ first.
    pub fn pieces(&self) -> &[Piece] {
        &self.pieces
    }

    /// The piece of B, if B ∈ I.
    pub fn piece(&self, b: u64) -> Option<&Piece> {
        self.index.get(&b).map(|&i| &self.pieces[i])
    }

    /// The piece `F(S)` that answers S: walk U in order, adding x to the path's B
    /// when `x ∈ S` and x lies outside `V′(B)`.
    pub fn piece_for(&self, s: u64) -> &Piece {
        &self.pieces[self.position_for(s)]
    }

    /// The index of `F(S)` in [`Decomposition::pieces`] (bits of S at or above
    /// the ground set's size are ignored).
    pub fn position_for(&self, s: u64) -> usize {
        let mut at = 0usize;
        for x in 0..self.ground {
            let bit = 1u64 << x;
            let p = &self.pieces[at];
            if s & bit != 0 && p.v_path & bit == 0 {
                // B ∪ {x} ∈ I by construction (same memoized marginal), unless a
                // truncated decomposition left it out: then B answers.
                match self.index.get(&(p.b | bit)) {
                    Some(&next) => at = next,
                    None => break,
                }
            }
        }
        at
    }

    /// `T(B)`: along the path to B, the elements outside `V′(B_j)` that B skips.
    fn rejected(&self, b: u64) -> u64 {
        let (mut at, mut r) = (0usize, 0u64);
        for x in 0..self.ground {
            let bit = 1u64 << x;
            let p = &self.pieces[at];
            if p.v_path & bit == 0 {
                if b & bit == 0 {
                    r |= bit;
                } else if let Some(&next) = self.index.get(&(p.b | bit)) {
                    at = next;
                }
            }
        }
        r
    }
}

/// Float slack of the `V(B)` test (a piece is ρ-Lipschitz to within it).
const V_SLACK: f64 = 1e-9;

/// `∂_x f(B) = f(B ∪ {x}) − f(B)`.
fn marginal<F: SetFunction>(f: &mut F, b: u64, bit: u64) -> Result<f64, DecomposeError> {
    let m = f.value(b | bit)? - f.value(b)?;
    if !m.is_finite() {
        // A NaN would be neither a child nor in V′, and F's walk would stop early.
        return Err(DecomposeError::NotFinite {
            set: b,
            with: b | bit,
        });
    }
    Ok(m)
}

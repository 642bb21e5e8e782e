//! Non-monotone submodular functions: Algorithm 6.4 (thesis Fig. 6.4, Thm 6.3.13)
//! with the complement fix of TYPO-16, and Learn (Fig. 6.5, Thm 6.3.15).

use super::decompose::{DecomposeError, Decomposition, SetFunction};
use super::learn::rho_for;

/// `ḡ^B(S′) = g^B(V_f(B) ∖ S′) = f((V_f(B) ∖ S′) ∪ B)`: the complement of a first-level
/// piece, on the ground set `V_f(B)` (elements outside it have no effect).
struct Complement<'f, F> {
    f: &'f mut F,
    b: u64,
    v: u64,
}

impl<F: SetFunction> SetFunction for Complement<'_, F> {
    fn ground(&self) -> u32 {
        self.f.ground()
    }

    fn value(&mut self, set: u64) -> Result<f64, DecomposeError> {
        self.f.value((self.v & !set) | self.b)
    }
}

/// Algorithm 6.4: decompose f, complement each piece on its ground set, decompose
/// again. The pieces `(ḡ^B)^C` have `|∂| ≤ ρ` on their ground sets: `∂ ≤ ρ` from the
/// second decomposition, `∂ ≥ −ρ` from the first through the complement.
#[derive(Debug, Clone)]
pub struct TwoLevel {
    first: Decomposition,
    second: Vec<Decomposition>,
}

impl TwoLevel {
    /// Algorithm 6.4 with the tolerant Algorithm 6.2 at both levels (f may be an
    /// oracle within ρ/12; memoize it), at most `cap` pieces per decomposition.
    pub fn tolerant<F: SetFunction>(
        f: &mut F,
        rho: f64,
        cap: usize,
    ) -> Result<Self, DecomposeError> {
        let first = Decomposition::tolerant(f, rho, cap)?;
        let second = first
            .pieces()
            .iter()
            .map(|p| {
                let mut g = Complement { f, b: p.b, v: p.v };
                Decomposition::tolerant(&mut g, rho, cap)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(TwoLevel { first, second })
    }

    /// [`TwoLevel::tolerant`] that stops growing each decomposition at `cap`
    /// pieces instead of failing ([`Decomposition::tolerant_truncated`]). With a
    /// memoized f it asks at most `cap·(cap + 1)·(|U| + 1)` distinct sets: at most
    /// `cap·(|U| + 1)` for the first level and as many for each of its (at most
    /// `cap`) pieces' complements. A private release fixes its query budget from
    /// that bound.
    pub fn tolerant_truncated<F: SetFunction>(
        f: &mut F,
        rho: f64,
        cap: usize,
    ) -> Result<Self, DecomposeError> {
        let first = Decomposition::tolerant_truncated(f, rho, cap)?;
        let second = first
            .pieces()
            .iter()
            .map(|p| {
                let mut g = Complement { f, b: p.b, v: p.v };
                Decomposition::tolerant_truncated(&mut g, rho, cap)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(TwoLevel { first, second })
    }

    /// From its parts (e.g. read back from a release file): one second-level
    /// decomposition per first-level piece, all over the same ground set.
    pub fn from_parts(
        first: Decomposition,
        second: Vec<Decomposition>,
    ) -> Result<Self, DecomposeError> {
        if second.len() != first.len() || second.iter().any(|d| d.ground() != first.ground()) {
            return Err(DecomposeError::InvalidParameter(format!(
                "{} second-level decompositions for {} first-level pieces, or a ground set that differs",
                second.len(),
                first.len()
            )));
        }
        Ok(TwoLevel { first, second })
    }

    /// Whether a decomposition at either level stopped at the piece cap.
    pub fn truncated(&self) -> bool {
        self.first.truncated() || self.second.iter().any(Decomposition::truncated)
    }

    /// The first-level decomposition (of f).
    pub fn first(&self) -> &Decomposition {
        &self.first
    }

    /// The second-level decompositions (of each first-level piece's complement),
    /// indexed like [`TwoLevel::first`]'s pieces.
    pub fn second(&self) -> &[Decomposition] {
        &self.second
    }

    /// The number of final pieces `(B, C)`.
    pub fn len(&self) -> usize {
        self.second.iter().map(Decomposition::len).sum()
    }

    /// Whether there are no pieces (never).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `F(S) = (B, C)` as indices (TYPO-16's corrected map): `B = F_f(S)`,
    /// `S′ = V_f(B) ∖ S`, `C = F_B(S′)`.
    pub fn position_for(&self, s: u64) -> (usize, usize) {
        let i = self.first.position_for(s);
        let v = self.first.pieces()[i].v;
        (i, self.second[i].position_for(v & !s))
    }

    /// The coordinates the conditioning `F(S) = (B, C)` fixes, as
    /// `(forced in, forced out)`: B and `T_B(C) ∩ V_f(B)` are in S; `T_f(B)`, C and
    /// everything outside `V_f(B)` are out (S′ = V_f(B) ∖ S holds C and avoids
    /// `T_B(C)`). The rest is free.
    pub fn fixed(&self, (i, j): (usize, usize)) -> (u64, u64) {
        let p = &self.first.pieces()[i];
        let q = &self.second[i].pieces()[j];
        let inside = p.v | p.b;
        (p.b | (q.t & inside), p.t | q.b | !inside)
    }
}

/// Learn for any submodular `f: 2^U → [0, 1]` (Fig. 6.5, Thm 6.3.15): Algorithm 6.4
/// at `ρ = α²/(6 ln(2/β))`, then the mean of every final piece under the product
/// distribution conditioned on `F(S) = (B, C)`, from `mean(f, forced_in, free)`.
/// Returns the structure and the means (indexed like [`TwoLevel::position_for`]).
pub fn learn_nonmonotone<F: SetFunction>(
    f: &mut F,
    alpha: f64,
    beta: f64,
    cap: usize,
    mut mean: impl FnMut(&mut F, u64, u64) -> Result<f64, DecomposeError>,
) -> Result<(TwoLevel, Vec<Vec<f64>>), DecomposeError> {
    for (name, v) in [("alpha", alpha), ("beta", beta)] {
        if !(v > 0.0 && v <= 1.0) {
            return Err(DecomposeError::InvalidParameter(format!(
                "{name} = {v} must be in (0, 1]"
            )));
        }
    }
    let ground = f.ground();
    let full = if ground == 64 {
        u64::MAX
    } else {
        (1u64 << ground) - 1
    };
    let two = TwoLevel::tolerant(f, rho_for(alpha, beta), cap)?;
    let means = (0..two.second.len())
        .map(|i| {
            (0..two.second[i].len())
                .map(|j| {
                    let (inn, out) = two.fixed((i, j));
                    mean(f, inn & full, !(inn | out) & full)
                })
                .collect::<Result<Vec<f64>, _>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((two, means))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conjunctions::Memo;
    use crate::conjunctions::tests::{random_cut, subsets};

    /// Thm 6.3.13: every final piece has `|∂| ≤ ρ` on its ground set, and the map F
    /// conditions consistently (S satisfies its own piece's fixed coordinates).
    #[test]
    fn final_pieces_are_two_sided_lipschitz_on_cut_functions() {
        for seed in 0..4 {
            let rho = 0.3;
            let mut f = Memo::new(random_cut(8, 16, seed));
            let two = TwoLevel::tolerant(&mut f, rho, 1 << 16).unwrap();
            for s in 0..256u64 {
                let (i, j) = two.position_for(s);
                let (inn, out) = two.fixed((i, j));
                assert_eq!(s & inn, inn, "S = {s:#b} misses its forced elements");
                assert_eq!(s & out, 0, "S = {s:#b} holds a forced-out element");
            }
            for (i, p) in two.first.pieces().iter().enumerate() {
                for q in two.second[i].pieces() {
                    // The piece as a function of S′ ⊆ V_B(C) ∩ V_f(B).
                    let ground = q.v & p.v & !q.b;
                    for sp in subsets(ground) {
                        let mut at = |x: u64| f.value((p.v & !(x | q.b)) | p.b).unwrap();
                        let base = at(sp);
                        for x in (0..8)
                            .map(|x| 1u64 << x)
                            .filter(|b| ground & b != 0 && sp & b == 0)
                        {
                            let m = at(sp | x) - base;
                            assert!(m.abs() <= rho + 2e-9, "seed {seed}: ∂ = {m}");
                        }
                    }
                }
            }
        }
    }

    /// Thm 6.3.15 on directed cut functions over 10 vertices, p = 1/2 (all 1 024
    /// sets), with exactly enumerated piece means: at most β of the sets off by more
    /// than α. (At α = 0.3 the theory's ρ = 0.005 is far below a cut's marginals, so
    /// the pieces — 2 400 to 4 800 — outnumber the sets: this checks the two-level map
    /// and its conditioning end to end more than it exercises concentration.)
    #[test]
    fn learn_nonmonotone_is_alpha_beta_accurate_on_cut_functions() {
        let (alpha, beta) = (0.3, 0.1);
        for seed in 0..3 {
            let mut f = Memo::new(random_cut(10, 30, seed));
            let (two, means) = learn_nonmonotone(&mut f, alpha, beta, 1 << 16, |f, inn, free| {
                let count = 1u64 << free.count_ones();
                let total: f64 = subsets(free).map(|s| f.value(s | inn).unwrap()).sum();
                Ok(total / count as f64)
            })
            .unwrap();
            let bad = (0..1024u64)
                .filter(|&s| {
                    let (i, j) = two.position_for(s);
                    (f.value(s).unwrap() - means[i][j]).abs() > alpha
                })
                .count();
            assert!(
                bad as f64 <= beta * 1024.0,
                "seed {seed}: {bad} of 1024 sets off by more than alpha ({} pieces)",
                two.len()
            );
        }
    }
}

//! Releasing conjunctions through submodular decomposition (Hardt's thesis,
//! Chapter 6, §6.3): set functions `f: 2^U → [0, 1]` given by an oracle are split
//! into few pieces, each of which is `ρ`-Lipschitz and therefore concentrated under
//! any product distribution (Cor. 6.2.6), so one number per piece approximates `f`
//! on most sets.
//!
//! * [`Decomposition`]: Algorithm 6.1 (exact oracle) and Algorithm 6.2 (an oracle with
//!   tolerance `ρ/12`, memoized), with the maps `F` (which piece answers S), `V` (a
//!   piece's ground set) and `T` (its rejected elements), and a hard cap on the number
//!   of pieces `|I|` (a typed error, never an unbounded allocation).
//! * [`learn`]: Fig. 6.3 — a decomposition at `ρ = α²/(6 ln(2/β))` (TYPO-15) plus the
//!   mean `μ_B` of every piece under the product distribution.
//! * [`TwoLevel`] and [`learn_nonmonotone`]: Algorithm 6.4 with the complement fix
//!   (TYPO-16) and Learn for any submodular f (Fig. 6.5), e.g. graph cuts.
//! * [`release_conjunctions`]: Fig. 6.6 corrected — the private release of monotone
//!   conjunctions, ε-DP through one central SQ oracle with a budget fixed in
//!   advance (TYPO-18), the tolerant decomposition (TYPO-17), and one statistical
//!   query per piece for its mean.
//! * [`release_by_agnostic_learning`]: Fig. 6.7 on the MW engine with an
//!   exhaustive weak agnostic learner over a finite class and `STAT_τ` from a
//!   [`StatOracle`] (exact, or the central SQ oracle for
//!   [`release_by_agnostic_learning_private`]), with η = β/4 and
//!   `T = ⌈16 ln|X|/β²⌉ + 1` (TYPO-21) and the signed update (TYPO-20).
//! * [`release_cut_function`]: the private release of a graph's cut function
//!   (§6.4.1, Cor. 6.4.7) normalised by a public `E_max` (TYPO-19), ε-DP under
//!   add/remove-one-edge neighbours through one [`CutOracle`] charged up front.
//! * [`SetFunction`] implementations for tests and experiments: coverage functions
//!   (disjunctions over a dataset, Lemma 6.4.1) and graph cut functions (§6.4.1).
//!
//! Sets are bit masks over a ground set of at most 64 elements.

mod agnostic;
mod cut;
mod decompose;
mod functions;
mod learn;
mod local;
mod nonmonotone;
mod release;

pub use agnostic::{
    AgnosticRelease, ExactStat, StatOracle, release_by_agnostic_learning,
    release_by_agnostic_learning_private, superset_sums,
};
pub use cut::{CutConfig, CutOracle, CutRelease, CutSession, Graph, release_cut_function};
pub use decompose::{DecomposeError, Decomposition, Memo, Piece, SetFunction};
pub use functions::{Coverage, Cut};
pub use learn::{Learned, learn, rho_for};
pub use local::{CellQuery, LocalStat, device_records};
pub use nonmonotone::{TwoLevel, learn_nonmonotone};
pub use release::{
    ConjunctionRelease, ReleaseConfig, ReleaseError, release_conjunctions,
    release_conjunctions_local,
};

#[cfg(test)]
mod tests;

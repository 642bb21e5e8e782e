//! Domain reduction for PMW on (pseudo-)smooth databases (Hardt's thesis §4.6,
//! Definitions 4.6.1–4.6.2, Lemma 4.6.4 and Thm 4.1.4).
//!
//! A normalized database `x` is ξ-smooth if `x_u ≤ ξ` for every cell, and
//! (ξ, φ)-pseudo-smooth for a query class Q if some ξ-smooth `x*` answers every
//! query of Q within φ of `x`. For such data, PMW need not keep weights on the
//! whole universe `U` (`|U| = N`): a uniformly random multiset of
//!
//! ```text
//! M = 4 · max{ ξN (ln(1/β) + ln|Q|) / α², ln(1/β) }        (eq. 4.26)
//! ```
//!
//! cells, drawn **with replacement** (distinct cells kept), carries with
//! probability ≥ 1 − β a distribution answering every query of Q within `φ + α`
//! of `x`. Thm 4.1.4 takes `α = 1/√n`. PMW then runs on `V` with the threshold
//! raised by that gap (Lemma 4.3.7): `T' = T + φ + α`
//! ([`PmwSession::on_reduced_domain`](crate::central::pmw::PmwSession::on_reduced_domain)).
//!
//! `V` is drawn from `N`, the parameters and the RNG only — never from the data —
//! so it is public and costs no privacy. The draws use the core's exact integer
//! uniform sampler. Smoothness ξ and the pseudo-smoothness gap φ are
//! **assumptions about the data** that the user supplies; the privacy of PMW does
//! not depend on them (the session is (ε, δ)- or ε-DP for every database), only
//! its accuracy does.

use std::fmt;

use privq_core::rand_core::Rng;
use privq_core::sample::uniform_below;

/// Why a domain reduction was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ReduceError {
    /// The smoothness ξ is not in `[1/N, 1]` (no distribution on N cells is
    /// ξ-smooth for ξ < 1/N), or is NaN; `universe` is 0 when N was not yet
    /// known (then the check was ξ ∈ (0, 1]).
    #[error(fmt = smoothness_message)]
    Smoothness {
        /// ξ as given.
        xi: f64,
        /// The universe size N.
        universe: usize,
    },
    /// α is not in (0, 1) (or NaN).
    #[error("alpha = {0} must lie in (0, 1)")]
    Alpha(f64),
    /// β is not in (0, 1) (or NaN).
    #[error("beta = {0} must lie in (0, 1)")]
    Beta(f64),
    /// The pseudo-smoothness gap φ is negative, infinite or NaN.
    #[error("the pseudo-smoothness gap phi = {0} must be finite and non-negative")]
    Phi(f64),
    /// The query class is empty (`|Q| = 0`).
    #[error("the query class is empty (|Q| = 0)")]
    NoQueries,
    /// The universe is empty (`N = 0`).
    #[error("the universe is empty (N = 0)")]
    EmptyUniverse,
    /// The database size n is 0 (so `α = 1/√n` is undefined).
    #[error("the database size n is 0, so alpha = 1/sqrt(n) is undefined")]
    EmptyDatabase,
    /// The exact uniform sampler failed.
    #[error("uniform sampler: {0}")]
    Sampler(#[from] privq_core::Error),
}

/// [`ReduceError::Smoothness`]'s message: the interval ξ must lie in, `(0, 1]` when N
/// was not yet known (`universe` 0), else `[1/N, 1]`.
fn smoothness_message(xi: &f64, universe: &usize, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match universe {
        0 => write!(f, "smoothness xi = {xi} must lie in (0, 1]"),
        n => write!(
            f,
            "smoothness xi = {xi} must lie in [1/N, 1] with N = {n} cells"
        ),
    }
}

/// The parameters of Lemma 4.6.4: smoothness ξ, accuracy α, failure probability β,
/// the size of the query class `|Q|` and the pseudo-smoothness gap φ.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DomainReduction {
    xi: f64,
    alpha: f64,
    beta: f64,
    queries: usize,
    phi: f64,
}

impl DomainReduction {
    /// Lemma 4.6.4 with an explicit α. `queries` is `|Q|` (for PMW: the number of
    /// rounds k of a non-adaptive sequence); `phi` is the assumed distance of the
    /// data to a ξ-smooth database on Q (0 for ξ-smooth data). ξ is checked
    /// against N in [`DomainReduction::sample`].
    pub fn new(
        xi: f64,
        alpha: f64,
        beta: f64,
        queries: usize,
        phi: f64,
    ) -> Result<Self, ReduceError> {
        if !(xi > 0.0 && xi <= 1.0) {
            return Err(ReduceError::Smoothness { xi, universe: 0 });
        }
        if !(alpha > 0.0 && alpha < 1.0) {
            return Err(ReduceError::Alpha(alpha));
        }
        if !(beta > 0.0 && beta < 1.0) {
            return Err(ReduceError::Beta(beta));
        }
        if queries == 0 {
            return Err(ReduceError::NoQueries);
        }
        if !(phi >= 0.0 && phi.is_finite()) {
            return Err(ReduceError::Phi(phi));
        }
        Ok(DomainReduction {
            xi,
            alpha,
            beta,
            queries,
            phi,
        })
    }

    /// Thm 4.1.4: α = 1/√n for a database of `n` records (n ≥ 2, so α < 1).
    pub fn sublinear(
        xi: f64,
        n: u64,
        beta: f64,
        queries: usize,
        phi: f64,
    ) -> Result<Self, ReduceError> {
        if n == 0 {
            return Err(ReduceError::EmptyDatabase);
        }
        Self::new(xi, 1.0 / (n as f64).sqrt(), beta, queries, phi)
    }

    /// α.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// φ.
    pub fn phi(&self) -> f64 {
        self.phi
    }

    /// The number of draws `M` of eq. 4.26 for a universe of `universe` cells
    /// (natural logarithms; not rounded, not capped at N).
    pub fn draws(&self, universe: usize) -> Result<f64, ReduceError> {
        self.check_universe(universe)?;
        let ln_b = (1.0 / self.beta).ln();
        let ln_q = (self.queries as f64).ln();
        let main = self.xi * universe as f64 * (ln_b + ln_q) / (self.alpha * self.alpha);
        Ok(4.0 * main.max(ln_b))
    }

    fn check_universe(&self, universe: usize) -> Result<(), ReduceError> {
        if universe == 0 {
            return Err(ReduceError::EmptyUniverse);
        }
        if self.xi * (universe as f64) < 1.0 {
            return Err(ReduceError::Smoothness {
                xi: self.xi,
                universe,
            });
        }
        Ok(())
    }

    /// Draws `V ⊆ [0, N)`: `⌈M⌉` cells uniformly **with replacement** by the exact
    /// integer sampler, keeping the distinct ones in increasing order. When
    /// `M ≥ N` nothing is drawn and `V = U` (reported by
    /// [`ReducedDomain::is_full`]); oversampling would only waste time.
    ///
    /// `V` depends on `universe`, the parameters and `rng` only, never on the
    /// data, so it is public.
    ///
    /// ```
    /// use privq_host::central::pmw_reduce::DomainReduction;
    /// use privq_host::seeded_rng;
    ///
    /// // ξ = 2/N (each cell holds at most twice the uniform mass), α = 0.1,
    /// // β = 0.05, 100 queries, ξ-smooth data (φ = 0), N = 2^20.
    /// let n_cells = 1 << 20;
    /// let r = DomainReduction::new(2.0 / n_cells as f64, 0.1, 0.05, 100, 0.0)?;
    /// assert!((r.draws(n_cells)? - 6_080.72).abs() < 0.01); // eq. 4.26
    /// let v = r.sample(n_cells, &mut seeded_rng(1))?;
    /// assert!(!v.is_full() && v.len() <= 6_081);
    /// assert!(v.cells().windows(2).all(|w| w[0] < w[1]));
    /// // PMW on V raises its threshold by φ + α.
    /// assert_eq!(v.threshold_shift(), 0.1);
    /// # Ok::<(), privq_host::central::pmw_reduce::ReduceError>(())
    /// ```
    pub fn sample<R: Rng + ?Sized>(
        &self,
        universe: usize,
        rng: &mut R,
    ) -> Result<ReducedDomain, ReduceError> {
        let m = self.draws(universe)?;
        if m >= universe as f64 {
            return Ok(ReducedDomain {
                cells: (0..universe).collect(),
                universe,
                draws: m,
                full: true,
                shift: 0.0,
            });
        }
        // m < N ≤ usize::MAX, so the cast is exact enough and never saturates.
        let count = m.ceil() as usize;
        let n = universe as u64;
        let mut cells = Vec::with_capacity(count);
        for _ in 0..count {
            let u = uniform_below(n, rng)?;
            // u < N = universe, so it fits in usize.
            cells.push(u as usize);
        }
        cells.sort_unstable();
        cells.dedup();
        Ok(ReducedDomain {
            cells,
            universe,
            draws: m,
            full: false,
            shift: self.phi + self.alpha,
        })
    }
}

/// A public sub-universe `V` from [`DomainReduction::sample`].
#[derive(Debug, Clone, PartialEq)]
pub struct ReducedDomain {
    cells: Vec<usize>,
    universe: usize,
    draws: f64,
    full: bool,
    shift: f64,
}

impl ReducedDomain {
    /// The distinct cells of `V`, increasing.
    pub fn cells(&self) -> &[usize] {
        &self.cells
    }

    /// `|V|`.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Never true (`V` holds at least one cell).
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// The universe size N.
    pub fn universe(&self) -> usize {
        self.universe
    }

    /// `M` of eq. 4.26 (before rounding up).
    pub fn draws(&self) -> f64 {
        self.draws
    }

    /// True when `M ≥ N`, so that `V = U` and no reduction took place.
    pub fn is_full(&self) -> bool {
        self.full
    }

    /// γ of Lemma 4.3.7: the threshold increase `φ + α` PMW needs on `V` (0 when
    /// `V = U`, since then `x` itself lives on `V`).
    pub fn threshold_shift(&self) -> f64 {
        self.shift
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_match_a_hand_computation() {
        // ξN = 4 (N = 1000, ξ = 0.004), α = 0.1, β = 0.01, |Q| = 50:
        // 4 · 4 · (ln 100 + ln 50)/0.01 = 1600 · 8.517193191416238 = 13627.509…
        let r = DomainReduction::new(0.004, 0.1, 0.01, 50, 0.0).unwrap();
        let m = r.draws(1000).unwrap();
        assert!((m - 13_627.509_106_265_98).abs() < 1e-6, "{m}");
        // With ξN ≥ 1 and α < 1 the first term exceeds ln(1/β), so the max's
        // second branch is only a floor; it never undercuts 4·ln(1/β).
        let r = DomainReduction::new(1.0 / 64.0, 0.99, 1e-6, 1, 0.0).unwrap();
        let m = r.draws(64).unwrap();
        assert!((m - 4.0 * 1e6f64.ln() / (0.99 * 0.99)).abs() < 1e-9, "{m}");
        assert!(m >= 4.0 * 1e6f64.ln());
        // Thm 4.1.4: α = 1/√n gives M = 4 ξN n (ln(1/β) + ln k).
        let s = DomainReduction::sublinear(0.001, 100, 0.05, 20, 0.0).unwrap();
        let want = 4.0 * 0.001 * 4096.0 * 100.0 * (20f64.ln() + 20f64.ln());
        assert!((s.draws(4096).unwrap() - want).abs() < 1e-6 * want);
        assert!((s.alpha() - 0.1).abs() < 1e-15);
    }
}

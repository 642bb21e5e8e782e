//! Randomised classifiers `M = {μ_x}` (thesis §8.2), the distances `D_tv` and `D_∞`
//! between outcome distributions (eqs. 8.5, 8.6), the Lipschitz check of Def 8.2.1
//! and statistical parity (Def 8.3.1).

use super::{FairnessError, Group, Instance};
use crate::dx::FiniteMetric;

/// The Lipschitz excess `D(μ_x, μ_y) − d(x, y)` a solver's floating-point result
/// may show and still count as Lipschitz (the LP solver's tolerance).
pub const LIPSCHITZ_TOLERANCE: f64 = 1e-7;

/// A distance between distributions on A.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Divergence {
    /// Total variation `½ Σ_a |P(a) − Q(a)|` (eq. 8.5).
    Tv,
    /// `sup_a |ln P(a)/Q(a)|` (eq. 8.6); `+∞` when only one of them is 0.
    Inf,
}

impl Divergence {
    /// `D(p, q)`.
    ///
    /// ```
    /// use privq_host::fairness::Divergence;
    /// assert_eq!(Divergence::Tv.between(&[1.0, 0.0], &[0.5, 0.5]), 0.5);
    /// assert_eq!(Divergence::Inf.between(&[0.5, 0.5], &[0.25, 0.75]), 2f64.ln());
    /// ```
    pub fn between(self, p: &[f64], q: &[f64]) -> f64 {
        match self {
            Divergence::Tv => 0.5 * p.iter().zip(q).map(|(a, b)| (a - b).abs()).sum::<f64>(),
            Divergence::Inf => p.iter().zip(q).fold(0.0, |m, (&a, &b)| {
                if a == b {
                    m
                } else if a <= 0.0 || b <= 0.0 {
                    f64::INFINITY
                } else {
                    m.max((a / b).ln().abs())
                }
            }),
        }
    }

    /// The name used on the command line (`tv`, `inf`).
    pub fn name(self) -> &'static str {
        match self {
            Divergence::Tv => "tv",
            Divergence::Inf => "inf",
        }
    }
}

/// The pair of individuals where a mapping is least Lipschitz.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Violation {
    /// First individual.
    pub x: usize,
    /// Second individual.
    pub y: usize,
    /// `D(μ_x, μ_y)`.
    pub divergence: f64,
    /// `d(x, y)`.
    pub distance: f64,
}

impl Violation {
    /// `D(μ_x, μ_y) − d(x, y)`: positive when the mapping breaks Def 8.2.1.
    pub fn excess(&self) -> f64 {
        self.divergence - self.distance
    }
}

/// A randomised classifier `V → Δ(A)`: one probability row per individual.
///
/// ```
/// use privq_host::dx::FiniteMetric;
/// use privq_host::fairness::{Divergence, Group, Mapping};
/// let m = Mapping::new(vec![vec![1.0, 0.0], vec![0.5, 0.5]])?;
/// let d = FiniteMetric::euclidean(&[[0.0], [0.25]], 1.0)?;
/// let worst = m.worst_violation(&d, Divergence::Tv).unwrap();
/// assert!((worst.excess() - 0.25).abs() < 1e-12); // D_tv = ½ > d = ¼
/// let (s, t) = (Group::uniform(2, &[0])?, Group::uniform(2, &[1])?);
/// assert_eq!(m.parity(&s, &t)?, 0.5);
/// # Ok::<(), privq_host::fairness::FairnessError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Mapping {
    outcomes: usize,
    probs: Vec<f64>,
}

/// Tolerance on a row sum.
const ROW_TOL: f64 = 1e-9;

impl Mapping {
    /// Validates the rows: equal lengths ≥ 1, entries in `[0, 1]`, sums 1 (±1e-9).
    pub fn new(rows: Vec<Vec<f64>>) -> Result<Self, FairnessError> {
        let outcomes = rows.first().map_or(0, Vec::len);
        if rows.is_empty() || outcomes == 0 {
            return Err(FairnessError::Dimension(
                "a mapping needs rows and outcomes".into(),
            ));
        }
        let mut probs = Vec::with_capacity(rows.len() * outcomes);
        for (x, row) in rows.iter().enumerate() {
            if row.len() != outcomes {
                return Err(FairnessError::Dimension(format!(
                    "row {x} has {} outcomes, row 0 has {outcomes}",
                    row.len()
                )));
            }
            let sum: f64 = row.iter().sum();
            if row.iter().any(|p| !(0.0..=1.0).contains(p)) || (sum - 1.0).abs() > ROW_TOL {
                return Err(FairnessError::InvalidParameter(format!(
                    "row {x} is not a probability distribution (sum {sum})"
                )));
            }
            probs.extend_from_slice(row);
        }
        Ok(Mapping { outcomes, probs })
    }

    /// Rows from an LP solution: tiny negative round-off clamped to 0, each row
    /// rescaled to sum exactly 1.
    pub(crate) fn from_solution(n: usize, outcomes: usize, x: &[f64]) -> Self {
        let mut probs: Vec<f64> = x[..n * outcomes].iter().map(|v| v.max(0.0)).collect();
        for row in probs.chunks_mut(outcomes) {
            let s: f64 = row.iter().sum();
            if s > 0.0 {
                row.iter_mut().for_each(|v| *v /= s);
            }
        }
        Mapping { outcomes, probs }
    }

    /// Makes an LP's approximately `(D_∞, d)`-Lipschitz rows exactly so, up to the
    /// mass the solver's round-off moved: `g_x(a) = min_y e^{d(x,y)} μ_y(a)` obeys
    /// `g_x(a) ≤ e^{d(x,y)} g_y(a)` by the triangle inequality (so a zero stays a
    /// zero on every finite-distance neighbour), and `g_x ≤ μ_x`. Each row is then
    /// rescaled to sum 1, which moves a log-ratio by at most `ln(1/(1 − η))`, η
    /// the largest mass removed (≈ the solver's tolerance).
    pub(crate) fn repair_inf(&self, metric: &FiniteMetric) -> Self {
        let (n, k) = (self.individuals(), self.outcomes);
        let mut probs = self.probs.clone();
        for x in 0..n {
            for y in 0..n {
                let e = metric.get(x, y).exp();
                if y == x || !e.is_finite() {
                    continue;
                }
                for a in 0..k {
                    let bound = e * self.probs[y * k + a];
                    let v = &mut probs[x * k + a];
                    if bound < *v {
                        *v = bound;
                    }
                }
            }
        }
        Mapping::from_solution(n, k, &probs)
    }

    /// |V|.
    pub fn individuals(&self) -> usize {
        self.probs.len() / self.outcomes
    }

    /// |A|.
    pub fn outcomes(&self) -> usize {
        self.outcomes
    }

    /// `μ_x`. Panics when out of range.
    pub fn row(&self, x: usize) -> &[f64] {
        &self.probs[x * self.outcomes..(x + 1) * self.outcomes]
    }

    /// `E_{x∼V} Σ_a μ_x(a) L(x, a)` with the instance's weights.
    pub fn expected_loss(&self, instance: &Instance) -> Result<f64, FairnessError> {
        self.check_size(instance.individuals(), "the instance")?;
        if instance.outcomes() != self.outcomes {
            return Err(FairnessError::Dimension(format!(
                "the mapping has {} outcomes, the instance {}",
                self.outcomes,
                instance.outcomes()
            )));
        }
        Ok((0..self.individuals())
            .map(|x| {
                instance.weights()[x]
                    * self
                        .row(x)
                        .iter()
                        .enumerate()
                        .map(|(a, p)| p * instance.loss(x, a))
                        .sum::<f64>()
            })
            .sum())
    }

    /// `μ_S(a) = E_{x∼S} μ_x(a)`.
    pub fn on_group(&self, group: &Group) -> Result<Vec<f64>, FairnessError> {
        self.check_size(group.probs().len(), "the group")?;
        let mut out = vec![0.0; self.outcomes];
        for (x, &s) in group.probs().iter().enumerate() {
            for (o, p) in out.iter_mut().zip(self.row(x)) {
                *o += s * p;
            }
        }
        Ok(out)
    }

    /// The bias of Def 8.3.1: `D_tv(μ_S, μ_T)`.
    pub fn parity(&self, s: &Group, t: &Group) -> Result<f64, FairnessError> {
        Ok(Divergence::Tv.between(&self.on_group(s)?, &self.on_group(t)?))
    }

    /// Checks that every row is a distribution (finite, non-negative, summing to 1
    /// within 10⁻⁹) and, given a metric and a divergence, that no pair exceeds
    /// `d(x, y)` by more than [`LIPSCHITZ_TOLERANCE`]. Solvers call it before they
    /// return a mapping.
    pub fn verify(
        &self,
        lipschitz: Option<(&FiniteMetric, Divergence)>,
    ) -> Result<(), FairnessError> {
        for x in 0..self.individuals() {
            let row = self.row(x);
            let sum: f64 = row.iter().sum();
            if row.iter().any(|p| !(p.is_finite() && *p >= 0.0)) || (sum - 1.0).abs() > 1e-9 {
                return Err(FairnessError::Unverified(format!(
                    "row {x} is not a distribution (sum {sum})"
                )));
            }
        }
        if let Some((metric, div)) = lipschitz
            && let Some(v) = self.worst_violation(metric, div)
            && v.excess() > LIPSCHITZ_TOLERANCE
        {
            return Err(FairnessError::Unverified(format!(
                "D_{}(μ_{}, μ_{}) = {} exceeds d = {} by {:e}",
                div.name(),
                v.x,
                v.y,
                v.divergence,
                v.distance,
                v.excess()
            )));
        }
        Ok(())
    }

    /// The pair maximising `D(μ_x, μ_y) − d(x, y)` (`None` when no pair has a finite distance); the
    /// mapping is (D, d)-Lipschitz iff its excess is `≤ 0`.
    pub fn worst_violation(&self, metric: &FiniteMetric, div: Divergence) -> Option<Violation> {
        let n = self.individuals().min(metric.len());
        let mut worst: Option<Violation> = None;
        for x in 0..n {
            for y in x + 1..n {
                let distance = metric.get(x, y);
                if distance.is_infinite() {
                    continue; // no constraint
                }
                let v = Violation {
                    x,
                    y,
                    divergence: div.between(self.row(x), self.row(y)),
                    distance,
                };
                if worst.is_none_or(|w| v.excess() > w.excess()) {
                    worst = Some(v);
                }
            }
        }
        worst
    }

    /// The largest Lipschitz ratio `D(μ_x, μ_y) / d(x, y)` over pairs with finite
    /// `d` (0 for |V| = 1): the mapping is (D, c·d)-Lipschitz for every `c` above it.
    pub fn lipschitz_ratio(&self, metric: &FiniteMetric, div: Divergence) -> f64 {
        metric
            .finite_pairs()
            .filter(|&(x, y, _)| x < self.individuals() && y < self.individuals())
            .map(|(x, y, d)| div.between(self.row(x), self.row(y)) / d)
            .fold(0.0, f64::max)
    }

    fn check_size(&self, n: usize, what: &str) -> Result<(), FairnessError> {
        if n == self.individuals() {
            Ok(())
        } else {
            Err(FairnessError::Dimension(format!(
                "the mapping has {} individuals, {what} {n}",
                self.individuals()
            )))
        }
    }
}

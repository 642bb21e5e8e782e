//! The Fairness LP of thesis Fig. 8.1: the loss-minimising (D, d)-Lipschitz
//! mapping (Lemmas 8.2.2, 8.2.4).

use super::pairs::constrained_pairs;
use super::{Divergence, FairnessError, Group, Instance, Mapping};
use crate::lp::{LinearProgram, LpOutcome, Relation};

/// The most individuals the Fairness LP accepts (its row pruning is O(n³)).
pub const MAX_INDIVIDUALS: usize = 2000;

/// The default memory cap of an LP: 1 GiB.
pub const DEFAULT_MEMORY_CAP: usize = 1 << 30;

/// The size of an LP before it is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LpSize {
    /// Variables.
    pub vars: usize,
    /// Rows.
    pub rows: usize,
    /// Non-zero coefficients.
    pub nonzeros: usize,
}

impl LpSize {
    /// A rough estimate of the solver's memory: 48 bytes per non-zero (the model,
    /// the sparse basis factors) and 64 per row and variable.
    pub fn bytes(&self) -> usize {
        self.nonzeros
            .saturating_mul(48)
            .saturating_add((self.rows.saturating_add(self.vars)).saturating_mul(64))
    }

    /// `Err(TooLarge)` above `cap` bytes.
    pub(crate) fn check(&self, cap: usize) -> Result<(), FairnessError> {
        let bytes = self.bytes();
        if bytes > cap {
            Err(FairnessError::TooLarge {
                vars: self.vars,
                rows: self.rows,
                bytes,
                cap,
            })
        } else {
            Ok(())
        }
    }
}

/// The Fairness LP (Fig. 8.1) for one distance `D` between outcome distributions.
///
/// ```
/// use privq_host::dx::FiniteMetric;
/// use privq_host::fairness::{Divergence, FairnessLp, Instance};
/// // Two close individuals who would each prefer a different outcome.
/// let d = FiniteMetric::euclidean(&[[0.0], [0.2]], 1.0)?;
/// let inst = Instance::new(d.clone(), vec![vec![0.0, 1.0], vec![1.0, 0.0]])?;
/// let sol = FairnessLp::new(Divergence::Tv).solve(&inst)?;
/// // |μ_x(0) − μ_y(0)| ≤ 0.2, so the best expected loss is (1 − 0.2)/2 = 0.4.
/// assert!((sol.loss - 0.4).abs() < 1e-9);
/// assert!(sol.mapping.worst_violation(&d, Divergence::Tv).unwrap().excess() < 1e-9);
/// # Ok::<(), privq_host::fairness::FairnessError>(())
/// ```
#[derive(Debug, Clone)]
pub struct FairnessLp {
    divergence: Divergence,
    memory_cap: usize,
    /// `D_tv(Σ_x c_x μ_x, ν) ≤ bias` as `(c, ν, bias)`.
    parity: Option<(Vec<f64>, Vec<f64>, f64)>,
}

/// What the Fairness LP found.
#[derive(Debug, Clone)]
pub struct FairSolution {
    /// The optimal mapping `{μ_x}`.
    pub mapping: Mapping,
    /// Its expected loss `E_{x∼V} Σ_a μ_x(a) L(x, a)` (`opt(I)`).
    pub loss: f64,
    /// Unordered pairs that got Lipschitz rows (the rest are vacuous or implied).
    pub constrained_pairs: usize,
    /// The LP's size.
    pub size: LpSize,
}

impl FairnessLp {
    /// The LP for `divergence`, with the [`DEFAULT_MEMORY_CAP`].
    pub fn new(divergence: Divergence) -> Self {
        FairnessLp {
            divergence,
            memory_cap: DEFAULT_MEMORY_CAP,
            parity: None,
        }
    }

    /// Also imposes statistical parity up to `bias` between S and T (Def 8.3.1):
    /// `D_tv(μ_S, μ_T) ≤ bias`, linearised with one auxiliary per outcome. With
    /// `bias = 0` this is the constraint whose cost §8.4's Fig. 8.2 illustrates.
    ///
    /// ```
    /// use privq_host::dx::FiniteMetric;
    /// use privq_host::fairness::{Divergence, FairnessLp, Group, Instance};
    /// // Two far-apart individuals with opposite preferences, in different groups.
    /// let d = FiniteMetric::euclidean(&[[0.0], [5.0]], 1.0)?;
    /// let inst = Instance::new(d, vec![vec![0.0, 1.0], vec![1.0, 0.0]])?;
    /// let (s, t) = (Group::uniform(2, &[0])?, Group::uniform(2, &[1])?);
    /// let free = FairnessLp::new(Divergence::Tv).solve(&inst)?;
    /// let fair = FairnessLp::new(Divergence::Tv).parity(s, t, 0.0)?.solve(&inst)?;
    /// assert!(free.loss < 1e-9 && (fair.loss - 0.5).abs() < 1e-9);
    /// # Ok::<(), privq_host::fairness::FairnessError>(())
    /// ```
    pub fn parity(mut self, s: Group, t: Group, bias: f64) -> Result<Self, FairnessError> {
        if !(bias.is_finite() && bias >= 0.0) {
            return Err(FairnessError::InvalidParameter(format!(
                "the parity bias must be finite and ≥ 0, got {bias}"
            )));
        }
        if s.probs().len() != t.probs().len() {
            return Err(FairnessError::Dimension(
                "groups S and T are on different numbers of individuals".into(),
            ));
        }
        let coef = s
            .probs()
            .iter()
            .zip(t.probs())
            .map(|(a, b)| a - b)
            .collect();
        self.parity = Some((coef, Vec::new(), bias));
        Ok(self)
    }

    /// Imposes `D_tv(μ_S, ν) ≤ bias` for a fixed distribution ν on the outcomes
    /// (the constraint `D_tv(μ_S, U_T) ≤ ε` of the restricted earthmover problem,
    /// eq. 8.15). Replaces any [`FairnessLp::parity`] constraint.
    pub fn target(mut self, s: &Group, nu: &[f64], bias: f64) -> Result<Self, FairnessError> {
        if !(bias.is_finite() && bias >= 0.0) {
            return Err(FairnessError::InvalidParameter(format!(
                "the parity bias must be finite and ≥ 0, got {bias}"
            )));
        }
        let nu = super::instance::normalise(nu, nu.len())?;
        self.parity = Some((s.probs().to_vec(), nu, bias));
        Ok(self)
    }

    /// Refuses (with [`FairnessError::TooLarge`]) LPs estimated above `bytes`.
    pub fn memory_cap(mut self, bytes: usize) -> Self {
        self.memory_cap = bytes;
        self
    }

    /// Solves the LP for `instance`.
    ///
    /// Rows: `Σ_a μ_x(a) = 1` per x; for `D_∞`, `μ_x(a) ≤ e^{d(x,y)} μ_y(a)` both ways
    /// for every pair and outcome; for `D_tv`, `|μ_x(0) − μ_y(0)| ≤ d` when |A| = 2,
    /// else auxiliaries `τ_{xya} ≥ ±(μ_x(a) − μ_y(a))` with `½ Σ_a τ_{xya} ≤ d(x, y)`.
    /// Pairs at `d ≥ 1` (for `D_tv`), at `d = ∞`, or on a geodesic are skipped.
    pub fn solve(&self, instance: &Instance) -> Result<FairSolution, FairnessError> {
        let n = instance.individuals();
        let k = instance.outcomes();
        let vacuous = match self.divergence {
            Divergence::Tv => Some(1.0),
            Divergence::Inf => None,
        };
        // The pair pruning is O(n³): refuse sizes it cannot finish (the LP itself
        // is capped below, once its size is known).
        let n_people = instance.metric().len();
        if n_people > MAX_INDIVIDUALS {
            return Err(FairnessError::InvalidParameter(format!(
                "{n_people} individuals: the Fairness LP takes at most {MAX_INDIVIDUALS}"
            )));
        }
        let pairs = constrained_pairs(instance.metric(), vacuous);
        let p = pairs.len();
        let size = match (self.divergence, k) {
            (Divergence::Inf, _) => LpSize {
                vars: n * k,
                rows: n + 2 * p * k,
                nonzeros: n * k + 4 * p * k,
            },
            (Divergence::Tv, 2) => LpSize {
                vars: n * k,
                rows: n + 2 * p,
                nonzeros: n * k + 4 * p,
            },
            (Divergence::Tv, _) => LpSize {
                vars: n * k + p * k,
                rows: n + 2 * p * k + p,
                nonzeros: n * k + 6 * p * k + p * k,
            },
        };
        let mut size = size;
        if let Some((coef, nu, _)) = &self.parity {
            if coef.len() != n || !(nu.is_empty() || nu.len() == k) {
                return Err(FairnessError::Dimension(format!(
                    "the parity constraint is on {} individuals and {} outcomes, the instance \
                     on {n} and {k}",
                    coef.len(),
                    nu.len()
                )));
            }
            size.vars += k;
            size.rows += 2 * k + 1;
            size.nonzeros += 2 * k * (n + 1) + k;
        }
        size.check(self.memory_cap)?;

        let mut objective = vec![0.0; size.vars];
        for x in 0..n {
            for a in 0..k {
                objective[x * k + a] = instance.weights()[x] * instance.loss(x, a);
            }
        }
        let mut lp = LinearProgram::new(objective);
        let mu = |x: usize, a: usize| x * k + a;
        for x in 0..n {
            let row: Vec<(usize, f64)> = (0..k).map(|a| (mu(x, a), 1.0)).collect();
            lp.add_row(&row, Relation::Eq, 1.0)?;
        }
        for (idx, &(x, y, d)) in pairs.iter().enumerate() {
            match (self.divergence, k) {
                (Divergence::Inf, _) => {
                    let e = d.exp();
                    if !e.is_finite() {
                        return Err(FairnessError::InvalidParameter(format!(
                            "d({x}, {y}) = {d}: e^d overflows in the D_∞ row; use an \
                             infinite distance for an unconstrained pair"
                        )));
                    }
                    for a in 0..k {
                        lp.add_row(&[(mu(x, a), 1.0), (mu(y, a), -e)], Relation::Le, 0.0)?;
                        lp.add_row(&[(mu(y, a), 1.0), (mu(x, a), -e)], Relation::Le, 0.0)?;
                    }
                }
                (Divergence::Tv, 2) => {
                    lp.add_row(&[(mu(x, 0), 1.0), (mu(y, 0), -1.0)], Relation::Le, d)?;
                    lp.add_row(&[(mu(x, 0), 1.0), (mu(y, 0), -1.0)], Relation::Ge, -d)?;
                }
                (Divergence::Tv, _) => {
                    let tau = |a: usize| n * k + idx * k + a;
                    for a in 0..k {
                        let t = tau(a);
                        lp.add_row(
                            &[(t, 1.0), (mu(x, a), -1.0), (mu(y, a), 1.0)],
                            Relation::Ge,
                            0.0,
                        )?;
                        lp.add_row(
                            &[(t, 1.0), (mu(x, a), 1.0), (mu(y, a), -1.0)],
                            Relation::Ge,
                            0.0,
                        )?;
                    }
                    let sum: Vec<(usize, f64)> = (0..k).map(|a| (tau(a), 0.5)).collect();
                    lp.add_row(&sum, Relation::Le, d)?;
                }
            }
        }
        if let Some((coef, nu, bias)) = &self.parity {
            // σ_a ≥ ±(Σ_x c_x μ_x(a) − ν_a), ½ Σ_a σ_a ≤ bias.
            let sigma = size.vars - k;
            for a in 0..k {
                let diff: Vec<(usize, f64)> = (0..n)
                    .map(|x| (mu(x, a), coef[x]))
                    .filter(|&(_, c)| c != 0.0)
                    .collect();
                let target = nu.get(a).copied().unwrap_or(0.0);
                for sign in [1.0, -1.0] {
                    let mut row = vec![(sigma + a, 1.0)];
                    row.extend(diff.iter().map(|&(v, c)| (v, -sign * c)));
                    lp.add_row(&row, Relation::Ge, -sign * target)?;
                }
            }
            let sum: Vec<(usize, f64)> = (0..k).map(|a| (sigma + a, 0.5)).collect();
            lp.add_row(&sum, Relation::Le, *bias)?;
        }
        match lp.solve()? {
            LpOutcome::Optimal { x, .. } => {
                let mut mapping = Mapping::from_solution(n, k, &x);
                if self.divergence == Divergence::Inf {
                    mapping = mapping.repair_inf(instance.metric());
                }
                mapping.verify(Some((instance.metric(), self.divergence)))?;
                let loss = mapping.expected_loss(instance)?;
                Ok(FairSolution {
                    mapping,
                    loss,
                    constrained_pairs: p,
                    size,
                })
            }
            // The constant mapping is feasible and losses are ≥ 0: neither can happen.
            LpOutcome::Infeasible | LpOutcome::Unbounded => {
                Err(FairnessError::Infeasible("Fairness LP"))
            }
        }
    }
}

//! Linear programs: minimise `cᵀx` subject to linear rows and variable bounds.
//!
//! One small, general layer over the pure-Rust simplex solver [`microlp`], shared by
//! every privq component that needs an LP (the K-norm gauge of
//! [`crate::knorm`], thesis §3.3/§3.7; the fairness LPs of thesis Fig. 8.1 later).
//! It owns the validation (indices in range, no NaN, bounds ordered) so that the
//! solver is never handed a model it would panic on, and it turns the solver's
//! outcome into a typed [`LpOutcome`] or [`LpError`].
//!
//! Why a simplex solver: a simplex method ends on a vertex, so degenerate LPs (a
//! gauge attained on a whole face, zero right-hand sides) come back exactly (the
//! gauge of `(½, −½, ½, ½, −½, ¼)` on the cube body is `0.5`, not `0.4999999954`);
//! and on the K-norm gauge LP at d × 2N = 64 × 2048 it measured about four times
//! faster than the interior-point alternative (see the README, "K-norm mechanism").
//! Floats are fine here: LPs choose grids and sample chords, they never decide the
//! noise a released value gets on their own (see [`crate::knorm`]).
//!
//! ```
//! use privq_host::lp::{LinearProgram, LpOutcome, Relation};
//!
//! // min x + y  s.t.  x + 2y ≥ 2,  x, y ≥ 0: the optimum is y = 1, value 1.
//! let mut lp = LinearProgram::new(vec![1.0, 1.0]);
//! lp.add_row(&[(0, 1.0), (1, 2.0)], Relation::Ge, 2.0)?;
//! match lp.solve()? {
//!     LpOutcome::Optimal { x, value } => {
//!         assert!((value - 1.0).abs() < 1e-9);
//!         assert!((x[1] - 1.0).abs() < 1e-9);
//!     }
//!     other => panic!("expected an optimum, got {other:?}"),
//! }
//! # Ok::<(), privq_host::lp::LpError>(())
//! ```

use microlp::{ComparisonOp, OptimizationDirection, Problem};

/// The sense of one row `aᵀx ⋈ b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    /// `aᵀx ≤ b`.
    Le,
    /// `aᵀx ≥ b`.
    Ge,
    /// `aᵀx = b`.
    Eq,
}

/// What an LP solve found.
#[derive(Debug, Clone, PartialEq)]
pub enum LpOutcome {
    /// An optimal vertex `x` and its objective value `cᵀx`.
    Optimal {
        /// The minimiser, one value per variable.
        x: Vec<f64>,
        /// `cᵀx` at the minimiser.
        value: f64,
    },
    /// No point satisfies the rows and bounds.
    Infeasible,
    /// The objective decreases without bound over the feasible set.
    Unbounded,
}

/// Why an LP could not be set up or solved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LpError {
    /// The model is malformed (a variable index out of range, a NaN, a lower bound
    /// above its upper bound); the message says which.
    #[error("invalid linear program: {0}")]
    InvalidModel(String),
    /// The solve gave no answer (it stopped at a limit, or an LP that cannot be
    /// unbounded was reported so); the message says which.
    #[error("the LP solver failed: {0}")]
    Solver(String),
    /// The solver failed numerically (it returns this rather than an answer it
    /// could not verify).
    #[error("the LP solver failed: {0}")]
    Microlp(#[source] microlp::Error),
}

/// A linear program in the form `min cᵀx` s.t. rows `aᵀx ⋈ b` and bounds
/// `lᵢ ≤ xᵢ ≤ uᵢ` (default `0 ≤ xᵢ < ∞`; use infinities for free sides).
#[derive(Debug, Clone)]
pub struct LinearProgram {
    objective: Vec<f64>,
    bounds: Vec<(f64, f64)>,
    rows: Vec<Row>,
}

/// One row `Σ coef·x_var ⋈ rhs`.
#[derive(Debug, Clone)]
struct Row {
    coeffs: Vec<(usize, f64)>,
    relation: Relation,
    rhs: f64,
}

impl LinearProgram {
    /// A program over `objective.len()` variables minimising `objective · x`, every
    /// variable bounded by `0 ≤ xᵢ < ∞` until [`LinearProgram::set_bounds`] says
    /// otherwise. (To maximise, negate the objective and the value.)
    pub fn new(objective: Vec<f64>) -> Self {
        let n = objective.len();
        LinearProgram {
            objective,
            bounds: vec![(0.0, f64::INFINITY); n],
            rows: Vec::new(),
        }
    }

    /// The number of variables.
    pub fn num_vars(&self) -> usize {
        self.objective.len()
    }

    /// The number of rows added so far.
    pub fn num_rows(&self) -> usize {
        self.rows.len()
    }

    /// Sets `lower ≤ x_var ≤ upper` (either side may be infinite, e.g.
    /// `(-∞, ∞)` for a free variable).
    pub fn set_bounds(&mut self, var: usize, lower: f64, upper: f64) -> Result<(), LpError> {
        if var >= self.objective.len() {
            return Err(LpError::InvalidModel(format!(
                "variable {var} is out of range (the program has {} variables)",
                self.objective.len()
            )));
        }
        if lower.is_nan() || upper.is_nan() || lower > upper || lower == f64::INFINITY {
            return Err(LpError::InvalidModel(format!(
                "bounds [{lower}, {upper}] of variable {var} are empty or NaN"
            )));
        }
        if let Some(b) = self.bounds.get_mut(var) {
            *b = (lower, upper);
        }
        Ok(())
    }

    /// Adds the row `Σ coef·x_var ⋈ rhs`. Coefficients must be finite; indices in
    /// range and not repeated; `rhs` must not be NaN.
    pub fn add_row(
        &mut self,
        coeffs: &[(usize, f64)],
        relation: Relation,
        rhs: f64,
    ) -> Result<(), LpError> {
        let n = self.objective.len();
        let mut seen = vec![false; n];
        for &(var, coef) in coeffs {
            match seen.get_mut(var) {
                None => {
                    return Err(LpError::InvalidModel(format!(
                        "row {} names variable {var}, but the program has {n} variables",
                        self.rows.len()
                    )));
                }
                Some(true) => {
                    return Err(LpError::InvalidModel(format!(
                        "row {} names variable {var} twice",
                        self.rows.len()
                    )));
                }
                Some(s) => *s = true,
            }
            if !coef.is_finite() {
                return Err(LpError::InvalidModel(format!(
                    "row {} has a non-finite coefficient {coef} for variable {var}",
                    self.rows.len()
                )));
            }
        }
        if rhs.is_nan() {
            return Err(LpError::InvalidModel(format!(
                "row {} has a NaN right-hand side",
                self.rows.len()
            )));
        }
        self.rows.push(Row {
            coeffs: coeffs.to_vec(),
            relation,
            rhs,
        });
        Ok(())
    }

    /// Solves the program.
    pub fn solve(&self) -> Result<LpOutcome, LpError> {
        if let Some((i, c)) = self
            .objective
            .iter()
            .enumerate()
            .find(|(_, c)| !c.is_finite())
        {
            return Err(LpError::InvalidModel(format!(
                "objective coefficient {i} is not finite ({c})"
            )));
        }
        let mut problem = Problem::new(OptimizationDirection::Minimize);
        let vars: Vec<_> = self
            .objective
            .iter()
            .zip(&self.bounds)
            .map(|(&c, &b)| problem.add_var(c, b))
            .collect();
        for Row {
            coeffs,
            relation,
            rhs,
        } in &self.rows
        {
            // Indices were checked in `add_row`; `get` keeps this panic-free.
            let expr: Vec<_> = coeffs
                .iter()
                .filter_map(|&(var, coef)| vars.get(var).map(|&v| (v, coef)))
                .collect();
            let op = match relation {
                Relation::Le => ComparisonOp::Le,
                Relation::Ge => ComparisonOp::Ge,
                Relation::Eq => ComparisonOp::Eq,
            };
            problem.add_constraint(&expr[..], op, *rhs);
        }
        match problem.solve() {
            Ok(outcome) => match outcome.into_solution() {
                Ok(solution) => Ok(LpOutcome::Optimal {
                    x: vars.iter().map(|&v| solution.var_value(v)).collect(),
                    value: solution.objective(),
                }),
                Err(_) => Err(LpError::Solver(
                    "the solve stopped at a limit before an answer".into(),
                )),
            },
            Err(microlp::Error::Infeasible) => Ok(LpOutcome::Infeasible),
            Err(microlp::Error::Unbounded) => Ok(LpOutcome::Unbounded),
            Err(e) => Err(LpError::Microlp(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn optimum(lp: &LinearProgram) -> (Vec<f64>, f64) {
        match lp.solve().unwrap() {
            LpOutcome::Optimal { x, value } => (x, value),
            other => panic!("expected an optimum, got {other:?}"),
        }
    }

    #[test]
    fn small_program_with_free_variable_and_upper_bounds() {
        // min −x − y  s.t.  x + y ≤ 3, x − y = 1, x ≤ 5, y free.
        let mut lp = LinearProgram::new(vec![-1.0, -1.0]);
        lp.set_bounds(1, f64::NEG_INFINITY, f64::INFINITY).unwrap();
        lp.set_bounds(0, 0.0, 5.0).unwrap();
        lp.add_row(&[(0, 1.0), (1, 1.0)], Relation::Le, 3.0)
            .unwrap();
        lp.add_row(&[(0, 1.0), (1, -1.0)], Relation::Eq, 1.0)
            .unwrap();
        let (x, value) = optimum(&lp);
        assert!((value + 3.0).abs() < 1e-9);
        assert!((x[0] - 2.0).abs() < 1e-9 && (x[1] - 1.0).abs() < 1e-9);
    }

    #[test]
    fn infeasible_and_unbounded_are_outcomes() {
        let mut lp = LinearProgram::new(vec![1.0]);
        lp.add_row(&[(0, 1.0)], Relation::Le, -1.0).unwrap();
        assert_eq!(lp.solve().unwrap(), LpOutcome::Infeasible);
        let mut lp = LinearProgram::new(vec![-1.0]);
        lp.add_row(&[(0, 1.0)], Relation::Ge, 1.0).unwrap();
        assert_eq!(lp.solve().unwrap(), LpOutcome::Unbounded);
    }

    #[test]
    fn degenerate_program_is_solved_exactly() {
        // min Σ x  s.t.  x₀ + x₁ = 0, x₁ + x₂ = 0 (every row degenerate at 0).
        let mut lp = LinearProgram::new(vec![1.0; 3]);
        lp.add_row(&[(0, 1.0), (1, 1.0)], Relation::Eq, 0.0)
            .unwrap();
        lp.add_row(&[(1, 1.0), (2, 1.0)], Relation::Eq, 0.0)
            .unwrap();
        assert_eq!(optimum(&lp), (vec![0.0; 3], 0.0));
    }

    #[test]
    fn malformed_models_are_typed_errors() {
        let mut lp = LinearProgram::new(vec![1.0, 1.0]);
        assert!(matches!(
            lp.add_row(&[(2, 1.0)], Relation::Eq, 0.0),
            Err(LpError::InvalidModel(_))
        ));
        assert!(
            lp.add_row(&[(0, 1.0), (0, 1.0)], Relation::Eq, 0.0)
                .is_err()
        );
        assert!(lp.add_row(&[(0, f64::NAN)], Relation::Eq, 0.0).is_err());
        assert!(lp.add_row(&[(0, 1.0)], Relation::Eq, f64::NAN).is_err());
        assert!(lp.set_bounds(0, 1.0, 0.0).is_err());
        assert!(lp.set_bounds(5, 0.0, 1.0).is_err());
        let lp = LinearProgram::new(vec![f64::INFINITY]);
        assert!(lp.solve().is_err());
    }
}

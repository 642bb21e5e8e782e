//! The earthmover distance `d_EM(S, T)` (thesis Def 8.3.5, Lemma 8.3.6).

use super::pairs::constrained_pairs;
use super::program::{DEFAULT_MEMORY_CAP, LpSize};
use super::{FairnessError, Group};
use crate::dx::FiniteMetric;
use crate::lp::{LinearProgram, LpOutcome, Relation};

/// Which of the two equivalent LPs to solve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmForm {
    /// Def 8.3.5: a transport plan `h(x, y) ≥ 0` with marginals S and T
    /// (|V|² variables, 2|V| rows).
    Transport,
    /// Lemma 8.3.6: a flow `Σ_y h(x, y) = Σ_y h(y, x) + S(x) − T(x)`, on the
    /// pairs no geodesic makes redundant (|V| rows; far fewer variables).
    Flow,
}

/// `d_EM(S, T) = min Σ h(x, y) d(x, y)` over plans moving S onto T; `+∞` when some
/// mass of S cannot reach T at finite distance.
///
/// ```
/// use privq_host::dx::FiniteMetric;
/// use privq_host::fairness::{EmForm, Group, earthmover};
/// let d = FiniteMetric::euclidean(&[[0.0], [0.3], [1.0]], 1.0)?;
/// let (s, t) = (Group::uniform(3, &[0])?, Group::uniform(3, &[1, 2])?);
/// // Half the mass moves 0.3, half moves 1.0.
/// for form in [EmForm::Transport, EmForm::Flow] {
///     assert!((earthmover(&d, &s, &t, form)? - 0.65).abs() < 1e-9);
/// }
/// # Ok::<(), privq_host::fairness::FairnessError>(())
/// ```
pub fn earthmover(
    metric: &FiniteMetric,
    s: &Group,
    t: &Group,
    form: EmForm,
) -> Result<f64, FairnessError> {
    let n = metric.len();
    check_groups(n, s, t)?;
    let (edges, size) = match form {
        EmForm::Transport => {
            let edges: Vec<(usize, usize, f64)> = (0..n)
                .flat_map(|x| (0..n).map(move |y| (x, y)))
                .map(|(x, y)| (x, y, metric.get(x, y)))
                .filter(|e| e.2.is_finite())
                .collect();
            let m = edges.len();
            (
                edges,
                LpSize {
                    vars: m,
                    rows: 2 * n,
                    nonzeros: 2 * m,
                },
            )
        }
        EmForm::Flow => {
            let edges: Vec<(usize, usize, f64)> = constrained_pairs(metric, None)
                .into_iter()
                .flat_map(|(x, y, d)| [(x, y, d), (y, x, d)])
                .collect();
            let m = edges.len();
            (
                edges,
                LpSize {
                    vars: m,
                    rows: n,
                    nonzeros: 2 * m,
                },
            )
        }
    };
    size.check(DEFAULT_MEMORY_CAP)?;
    let mut lp = LinearProgram::new(edges.iter().map(|e| e.2).collect());
    let (sp, tp) = (s.probs(), t.probs());
    match form {
        EmForm::Transport => {
            let mut out = vec![Vec::new(); n];
            let mut inn = vec![Vec::new(); n];
            for (v, &(x, y, _)) in edges.iter().enumerate() {
                out[x].push((v, 1.0));
                inn[y].push((v, 1.0));
            }
            for x in 0..n {
                lp.add_row(&out[x], Relation::Eq, sp[x])?;
                lp.add_row(&inn[x], Relation::Eq, tp[x])?;
            }
        }
        EmForm::Flow => {
            let mut net = vec![Vec::new(); n];
            for (v, &(x, y, _)) in edges.iter().enumerate() {
                net[x].push((v, 1.0));
                net[y].push((v, -1.0));
            }
            for x in 0..n {
                lp.add_row(&net[x], Relation::Eq, sp[x] - tp[x])?;
            }
        }
    }
    match lp.solve()? {
        LpOutcome::Optimal { value, .. } => Ok(value.max(0.0)),
        LpOutcome::Infeasible => Ok(f64::INFINITY),
        LpOutcome::Unbounded => Err(FairnessError::Infeasible("earthmover LP (unbounded)")),
    }
}

/// Both groups live on the metric's individuals.
pub(crate) fn check_groups(n: usize, s: &Group, t: &Group) -> Result<(), FairnessError> {
    for (name, g) in [("S", s), ("T", t)] {
        if g.probs().len() != n {
            return Err(FairnessError::Dimension(format!(
                "group {name} is on {} individuals, the metric on {n}",
                g.probs().len()
            )));
        }
    }
    Ok(())
}

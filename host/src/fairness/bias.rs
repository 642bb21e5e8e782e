//! The bias LPs of thesis §8.3 (Def 8.3.3, proof of Thm 8.3.7, Lemma 8.3.9): the
//! largest statistical-parity gap `μ_S(0) − μ_T(0)` any (D, d)-Lipschitz map
//! `V → Δ({0, 1})` can open between S and T.

use super::earthmover::check_groups;
use super::pairs::constrained_pairs;
use super::program::{DEFAULT_MEMORY_CAP, LpSize};
use super::{Divergence, FairnessError, Group, Mapping};
use crate::dx::FiniteMetric;
use crate::lp::{LinearProgram, LpOutcome, Relation};

/// The bias and a map attaining it.
#[derive(Debug, Clone)]
pub struct Bias {
    /// `bias_{D,d}(S, T) ∈ [0, 1]`.
    pub value: f64,
    /// A (D, d)-Lipschitz map into `{0, 1}` with `μ_S(0) − μ_T(0) = value`.
    pub mapping: Mapping,
}

/// `bias_{D,d}(S, T)` by LP over `u_x = μ_x(0) ∈ [0, 1]`, maximising
/// `Σ_x (S(x) − T(x)) u_x`. For `D_tv`: `|u_x − u_y| ≤ d(x, y)`; for `D_∞`:
/// `u_x ≤ e^d u_y` and `1 − u_x ≤ e^d (1 − u_y)`, both ways.
///
/// Thm 8.3.7: `bias_tv ≤ d_EM`, with equality when `d ≤ 1`; Cor 8.3.10:
/// `bias_∞ ≤ bias_tv`.
///
/// ```
/// use privq_host::dx::FiniteMetric;
/// use privq_host::fairness::{Divergence, Group, bias};
/// let d = FiniteMetric::euclidean(&[[0.0], [0.3]], 1.0)?;
/// let (s, t) = (Group::uniform(2, &[0])?, Group::uniform(2, &[1])?);
/// assert!((bias(&d, &s, &t, Divergence::Tv)?.value - 0.3).abs() < 1e-9);
/// // D_∞: u ≤ e^0.3 (1 − … ) gives (e^0.3 − 1)/(e^0.3 + 1) = tanh(0.15).
/// assert!((bias(&d, &s, &t, Divergence::Inf)?.value - 0.15f64.tanh()).abs() < 1e-9);
/// # Ok::<(), privq_host::fairness::FairnessError>(())
/// ```
pub fn bias(
    metric: &FiniteMetric,
    s: &Group,
    t: &Group,
    divergence: Divergence,
) -> Result<Bias, FairnessError> {
    let n = metric.len();
    check_groups(n, s, t)?;
    let vacuous = match divergence {
        Divergence::Tv => Some(1.0),
        Divergence::Inf => None,
    };
    let pairs = constrained_pairs(metric, vacuous);
    let per_pair = match divergence {
        Divergence::Tv => 2,
        Divergence::Inf => 4,
    };
    LpSize {
        vars: n,
        rows: per_pair * pairs.len(),
        nonzeros: 2 * per_pair * pairs.len(),
    }
    .check(DEFAULT_MEMORY_CAP)?;
    let objective: Vec<f64> = s
        .probs()
        .iter()
        .zip(t.probs())
        .map(|(a, b)| b - a)
        .collect();
    let mut lp = LinearProgram::new(objective);
    for x in 0..n {
        lp.set_bounds(x, 0.0, 1.0)?;
    }
    for &(x, y, d) in &pairs {
        match divergence {
            Divergence::Tv => {
                lp.add_row(&[(x, 1.0), (y, -1.0)], Relation::Le, d)?;
                lp.add_row(&[(y, 1.0), (x, -1.0)], Relation::Le, d)?;
            }
            Divergence::Inf => {
                let e = d.exp();
                if !e.is_finite() {
                    return Err(FairnessError::InvalidParameter(format!(
                        "d({x}, {y}) = {d}: e^d overflows in the D_∞ row"
                    )));
                }
                for (p, q) in [(x, y), (y, x)] {
                    lp.add_row(&[(p, 1.0), (q, -e)], Relation::Le, 0.0)?;
                    // 1 − u_p ≤ e (1 − u_q)  ⇔  −u_p + e·u_q ≤ e − 1.
                    lp.add_row(&[(p, -1.0), (q, e)], Relation::Le, e - 1.0)?;
                }
            }
        }
    }
    match lp.solve()? {
        LpOutcome::Optimal { x, value } => {
            let rows = x
                .iter()
                .map(|u| u.clamp(0.0, 1.0))
                .flat_map(|u| [u, 1.0 - u]);
            let mut mapping = Mapping::from_solution(n, 2, &rows.collect::<Vec<_>>());
            if divergence == Divergence::Inf {
                mapping = mapping.repair_inf(metric);
            }
            mapping.verify(Some((metric, divergence)))?;
            Ok(Bias {
                value: (-value).clamp(0.0, 1.0),
                mapping,
            })
        }
        LpOutcome::Infeasible | LpOutcome::Unbounded => Err(FairnessError::Infeasible("bias LP")),
    }
}

//! Fair affirmative action (thesis §8.4.1): statistical parity between S and T
//! while staying Lipschitz inside each group.

use super::{Divergence, FairnessError, FairnessLp, Group, Instance, Mapping};
use crate::dx::FiniteMetric;

/// The result of [`preferential_treatment`].
#[derive(Debug, Clone)]
pub struct Preferential {
    /// The composed classifier M on V (eq. 8.16).
    pub mapping: Mapping,
    /// The restricted earthmover map `S → Δ(T)` (rows in the order of S).
    pub transport: Mapping,
    /// `d_EM+L(S, T)`, the restricted earthmover LP's value (eq. 8.15).
    pub em_plus_l: f64,
}

/// The metric restricted to `members`.
fn restrict(metric: &FiniteMetric, members: &[usize]) -> Result<FiniteMetric, FairnessError> {
    let m = members.len();
    let mut d = Vec::with_capacity(m * m);
    for &x in members {
        for &y in members {
            d.push(metric.get(x, y));
        }
    }
    Ok(FiniteMetric::from_matrix(m, d)?)
}

/// §8.4.1 for the partition V = S ∪ T: (a) the restricted earthmover problem
/// (eq. 8.15), a Fairness LP over `μ_x ∈ Δ(T)` for `x ∈ S` with loss `d(x, y)` and
/// `D_tv(avg_S μ_x, U_T) ≤ bias`; (b) the loss `L'(y, a) = Σ_{x∈S} μ_x(y) L(x, a) +
/// L(y, a)` on T; (c) the Fairness LP on T alone; composed as `M(y) = ν_y` on T
/// and `M(x) = Σ_y μ_x(y) ν_y` on S (eq. 8.16).
///
/// Prop 8.4.1: M has parity up to `bias` between S and T (uniform on each), and
/// is (D, d)-Lipschitz on S×S and on T×T. Prop 8.4.2 (D_tv):
/// `E_{x∈S} max_{y∈T} [D_tv(M(x), M(y)) − d(x, y)] ≤ d_EM+L(S, T)`.
///
/// ```
/// use privq_host::dx::FiniteMetric;
/// use privq_host::fairness::{Divergence, Group, Instance, preferential_treatment};
/// let d = FiniteMetric::euclidean(&[[0.0], [3.0], [3.2], [6.0]], 1.0)?;
/// let inst = Instance::new(d, vec![vec![1.0, 0.0], vec![0.0, 1.0], vec![0.0, 1.0], vec![1.0, 0.0]])?;
/// let (s, t) = ([0], [1, 2, 3]);
/// let p = preferential_treatment(&inst, &s, &t, 0.0, Divergence::Tv)?;
/// let (gs, gt) = (Group::uniform(4, &s)?, Group::uniform(4, &t)?);
/// assert!(p.mapping.parity(&gs, &gt)? < 1e-9); // Prop 8.4.1
/// # Ok::<(), privq_host::fairness::FairnessError>(())
/// ```
pub fn preferential_treatment(
    instance: &Instance,
    s: &[usize],
    t: &[usize],
    bias: f64,
    divergence: Divergence,
) -> Result<Preferential, FairnessError> {
    let n = instance.individuals();
    let mut side = vec![0u8; n];
    for (mark, members) in [(1u8, s), (2u8, t)] {
        if members.is_empty() {
            return Err(FairnessError::EmptyGroup(format!(
                "group {} has no members",
                if mark == 1 { "S" } else { "T" }
            )));
        }
        for &x in members {
            match side.get_mut(x) {
                Some(v) if *v == 0 => *v = mark,
                Some(_) => {
                    return Err(FairnessError::InvalidParameter(format!(
                        "individual {x} is listed twice in S and T"
                    )));
                }
                None => {
                    return Err(FairnessError::Dimension(format!(
                        "individual {x} is not one of the {n}"
                    )));
                }
            }
        }
    }
    if let Some(x) = side.iter().position(|&v| v == 0) {
        return Err(FairnessError::InvalidParameter(format!(
            "individual {x} is in neither S nor T (they must partition V)"
        )));
    }
    let metric = instance.metric();
    // (a) The restricted earthmover problem.
    let em_loss: Vec<Vec<f64>> = s
        .iter()
        .map(|&x| t.iter().map(|&y| metric.get(x, y)).collect())
        .collect();
    let em_instance = Instance::new(restrict(metric, s)?, em_loss)?;
    let all_s = Group::uniform(s.len(), &(0..s.len()).collect::<Vec<_>>())?;
    let em = FairnessLp::new(divergence)
        .target(&all_s, &vec![1.0; t.len()], bias)?
        .solve(&em_instance)?;
    let transport = em.mapping;
    // (b) The new loss on T.
    let k = instance.outcomes();
    let loss_t: Vec<Vec<f64>> = t
        .iter()
        .enumerate()
        .map(|(j, &y)| {
            (0..k)
                .map(|a| {
                    s.iter()
                        .enumerate()
                        .map(|(i, &x)| transport.row(i)[j] * instance.loss(x, a))
                        .sum::<f64>()
                        + instance.loss(y, a)
                })
                .collect()
        })
        .collect();
    // (c) The Fairness LP on T.
    let t_instance = Instance::new(restrict(metric, t)?, loss_t)?;
    let nu = FairnessLp::new(divergence).solve(&t_instance)?.mapping;
    // Composition (eq. 8.16).
    let mut rows = vec![Vec::new(); n];
    for (j, &y) in t.iter().enumerate() {
        rows[y] = nu.row(j).to_vec();
    }
    for (i, &x) in s.iter().enumerate() {
        let mut row = vec![0.0; k];
        for (j, p) in transport.row(i).iter().enumerate() {
            for (r, q) in row.iter_mut().zip(nu.row(j)) {
                *r += p * q;
            }
        }
        rows[x] = row;
    }
    let flat: Vec<f64> = rows.into_iter().flatten().collect();
    let mapping = Mapping::from_solution(n, k, &flat);
    mapping.verify(None)?;
    Ok(Preferential {
        mapping,
        transport,
        em_plus_l: em.loss,
    })
}

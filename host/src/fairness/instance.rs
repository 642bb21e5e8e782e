//! The objects of thesis §8.2: individuals V with a metric, outcomes A, a loss
//! `L: V × A → ℝ_{≥0}` and optional weights on V (the expectation `E_{x∼V}`).

use super::FairnessError;
use crate::dx::FiniteMetric;

/// A fairness instance: |V| individuals, the metric `d` on them (privq's
/// [`FiniteMetric`], validated: symmetric, zero diagonal, positive off-diagonal,
/// triangle inequality), |A| outcomes, a non-negative loss per individual and
/// outcome, and weights on V (uniform unless given).
///
/// Individuals with identical features would be at distance 0, which
/// [`FiniteMetric`] refuses: merge them into one individual and add their weights.
///
/// ```
/// use privq_host::dx::FiniteMetric;
/// use privq_host::fairness::Instance;
/// let d = FiniteMetric::euclidean(&[[0.0], [0.5]], 1.0)?;
/// let inst = Instance::new(d, vec![vec![0.0, 1.0], vec![1.0, 0.0]])?;
/// assert_eq!((inst.individuals(), inst.outcomes()), (2, 2));
/// # Ok::<(), privq_host::fairness::FairnessError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Instance {
    metric: FiniteMetric,
    outcomes: usize,
    loss: Vec<f64>,
    weights: Vec<f64>,
}

impl Instance {
    /// An instance with uniform weights; `loss[x][a] = L(x, a)`, every row of the
    /// same length ≥ 1, every entry finite and `≥ 0`.
    pub fn new(metric: FiniteMetric, loss: Vec<Vec<f64>>) -> Result<Self, FairnessError> {
        let n = metric.len();
        if loss.len() != n {
            return Err(FairnessError::Dimension(format!(
                "the metric has {n} individuals but the loss has {} rows",
                loss.len()
            )));
        }
        let outcomes = loss.first().map_or(0, Vec::len);
        if outcomes == 0 {
            return Err(FairnessError::Dimension("there are no outcomes".into()));
        }
        let mut flat = Vec::with_capacity(n * outcomes);
        for (x, row) in loss.iter().enumerate() {
            if row.len() != outcomes {
                return Err(FairnessError::Dimension(format!(
                    "individual {x} has {} losses, individual 0 has {outcomes}",
                    row.len()
                )));
            }
            for (a, &v) in row.iter().enumerate() {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(FairnessError::NegativeLoss {
                        individual: x,
                        outcome: a,
                        value: v,
                    });
                }
                flat.push(v);
            }
        }
        Ok(Instance {
            metric,
            outcomes,
            loss: flat,
            weights: vec![1.0 / n as f64; n],
        })
    }

    /// The same instance with weights `w_x ≥ 0` (normalised to sum 1).
    pub fn with_weights(mut self, weights: &[f64]) -> Result<Self, FairnessError> {
        self.weights = normalise(weights, self.individuals())?;
        Ok(self)
    }

    /// |V|.
    pub fn individuals(&self) -> usize {
        self.metric.len()
    }

    /// |A|.
    pub fn outcomes(&self) -> usize {
        self.outcomes
    }

    /// The metric on V.
    pub fn metric(&self) -> &FiniteMetric {
        &self.metric
    }

    /// `L(x, a)`. Panics when out of range.
    pub fn loss(&self, x: usize, a: usize) -> f64 {
        self.loss[x * self.outcomes + a]
    }

    /// The normalised weights (the distribution `x ∼ V`).
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }
}

/// Weights checked (finite, `≥ 0`, positive total) and scaled to sum 1.
pub(crate) fn normalise(weights: &[f64], n: usize) -> Result<Vec<f64>, FairnessError> {
    if weights.len() != n {
        return Err(FairnessError::Dimension(format!(
            "{} weights for {n} individuals",
            weights.len()
        )));
    }
    if let Some((i, &w)) = weights
        .iter()
        .enumerate()
        .find(|(_, w)| !(w.is_finite() && **w >= 0.0))
    {
        return Err(FairnessError::InvalidWeight {
            individual: Some(i),
            value: w,
        });
    }
    let total: f64 = weights.iter().sum();
    if !(total > 0.0 && total.is_finite()) {
        return Err(FairnessError::InvalidWeight {
            individual: None,
            value: total,
        });
    }
    Ok(weights.iter().map(|w| w / total).collect())
}

/// A distribution on V, e.g. a protected group S or its complement T (thesis §8.3).
///
/// ```
/// use privq_host::fairness::Group;
/// let s = Group::uniform(4, &[0, 2])?;
/// assert_eq!(s.probs(), &[0.5, 0.0, 0.5, 0.0]);
/// assert!(Group::uniform(4, &[]).is_err());
/// # Ok::<(), privq_host::fairness::FairnessError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    probs: Vec<f64>,
}

impl Group {
    /// Uniform on `members` (distinct indices below `n`).
    pub fn uniform(n: usize, members: &[usize]) -> Result<Self, FairnessError> {
        Self::weighted(&vec![1.0; n], members)
    }

    /// Proportional to `weights` on `members` (e.g. the instance's weights).
    pub fn weighted(weights: &[f64], members: &[usize]) -> Result<Self, FairnessError> {
        let n = weights.len();
        let mut w = vec![0.0; n];
        let mut seen = vec![false; n];
        for &m in members {
            match seen.get_mut(m) {
                None => {
                    return Err(FairnessError::Dimension(format!(
                        "group member {m} is not one of the {n} individuals"
                    )));
                }
                Some(true) => {
                    return Err(FairnessError::InvalidParameter(format!(
                        "group member {m} is listed twice"
                    )));
                }
                Some(s) => {
                    *s = true;
                    w[m] = weights[m];
                }
            }
        }
        if members.is_empty() {
            return Err(FairnessError::EmptyGroup("the group has no members".into()));
        }
        match normalise(&w, n) {
            Ok(probs) => Ok(Group { probs }),
            Err(FairnessError::InvalidWeight {
                individual: None, ..
            }) => Err(FairnessError::EmptyGroup(
                "the group's members have zero total weight".into(),
            )),
            Err(e) => Err(e),
        }
    }

    /// Any distribution on V (`probs ≥ 0`, normalised to sum 1).
    pub fn from_weights(weights: &[f64]) -> Result<Self, FairnessError> {
        Ok(Group {
            probs: normalise(weights, weights.len())?,
        })
    }

    /// `S(x)` for every individual x.
    pub fn probs(&self) -> &[f64] {
        &self.probs
    }
}

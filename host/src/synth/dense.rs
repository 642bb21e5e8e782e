//! The dense estimator: the same loss minimised by the same mirror descent over
//! the full histogram (multiplicative weights over every cell), for small
//! domains and as a reference for the junction-tree estimator.

use super::estimate::{FitOptions, Measurement, Total, validate};
use super::factor::{Projection, logsumexp};
use super::optimise::{Oracle, mirror_descent};
use super::{Clique, MarginalModel, SynthError};

/// A distribution over the full universe (cells in [`Clique`] order of all
/// attributes), scaled to a total.
#[derive(Debug, Clone)]
pub struct DenseModel {
    sizes: Vec<usize>,
    full: Clique,
    probabilities: Vec<f64>,
    total: f64,
    iterations: usize,
    loss: f64,
}

impl DenseModel {
    /// The probabilities of every cell.
    pub fn probabilities(&self) -> &[f64] {
        &self.probabilities
    }

    /// Mirror-descent steps taken.
    pub fn iterations(&self) -> usize {
        self.iterations
    }

    /// The final loss.
    pub fn loss(&self) -> f64 {
        self.loss
    }
}

impl MarginalModel for DenseModel {
    fn marginal(&self, clique: &Clique) -> Result<Vec<f64>, SynthError> {
        clique.check(&self.sizes)?;
        let p = Projection::new(&self.sizes, &self.full, clique)?;
        let mut out = vec![0.0; p.sub_len()];
        p.sum_into(&self.probabilities, &mut out);
        out.iter_mut().for_each(|x| *x *= self.total);
        Ok(out)
    }
    fn total(&self) -> f64 {
        self.total
    }
}

struct DenseOracle {
    projections: Vec<Projection>,
    p: Vec<f64>,
}

impl DenseOracle {
    fn probabilities(&mut self, theta: &[f64]) {
        let z = logsumexp(theta);
        self.p.clear();
        self.p.extend(theta.iter().map(|t| (t - z).exp()));
    }
}

impl Oracle for DenseOracle {
    fn evaluate(&mut self, theta: &[Vec<f64>], marginals: &mut [Vec<f64>]) {
        self.probabilities(&theta[0]);
        for (proj, m) in self.projections.iter().zip(marginals.iter_mut()) {
            m.iter_mut().for_each(|x| *x = 0.0);
            proj.sum_into(&self.p, m);
        }
    }
    fn gradient(&mut self, grads: &[Vec<f64>], out: &mut [Vec<f64>]) {
        out[0].iter_mut().for_each(|x| *x = 0.0);
        for (proj, g) in self.projections.iter().zip(grads) {
            proj.broadcast_add(&mut out[0], g, 1.0);
        }
    }
    fn min_value(&mut self, g: &[Vec<f64>]) -> f64 {
        g[0].iter().copied().fold(f64::INFINITY, f64::min)
    }
}

/// Fits the full histogram by the mirror descent of [`fit`](super::fit) (the warm
/// start option is ignored; `max_cells` caps the universe).
pub fn fit_dense(
    sizes: &[usize],
    measurements: &[Measurement],
    total: Total,
    options: &FitOptions<'_>,
) -> Result<DenseModel, SynthError> {
    let opts = FitOptions {
        warm_start: None,
        ..*options
    };
    let n = validate(sizes, measurements, total, &opts)?;
    if let Some(index) = measurements.iter().position(|m| m.groups.is_some()) {
        // The dense fit matches whole marginals only.
        return Err(SynthError::InvalidGroups { index });
    }
    let full = Clique::from_sorted((0..sizes.len()).collect());
    let cells = full.cells(sizes)?;
    if cells as u128 > options.max_cells {
        return Err(SynthError::ModelTooLarge {
            cells: cells as u128,
            cap: options.max_cells,
        });
    }
    let projections = measurements
        .iter()
        .map(|m| Projection::new(sizes, &full, &m.clique))
        .collect::<Result<Vec<_>, _>>()?;
    let mut oracle = DenseOracle {
        projections,
        p: Vec::new(),
    };
    let mut theta = vec![vec![0.0; cells]];
    let out = mirror_descent(
        &mut oracle,
        &mut theta,
        measurements,
        n,
        options.stop(),
        None,
    );
    oracle.probabilities(&theta[0]);
    Ok(DenseModel {
        sizes: sizes.to_vec(),
        full,
        probabilities: oracle.p,
        total: n,
        iterations: out.iterations,
        loss: out.loss,
    })
}

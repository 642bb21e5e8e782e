//! Estimating a junction-tree model from noisy marginals (Private-PGM).

use privq_core::rand_core::Rng;

use std::borrow::Cow;
use std::sync::OnceLock;
use std::time::Instant;

use super::infer::{BeliefPropagation, MarginalPlan, PARALLEL_CELLS, marginal_from};
use super::optimise::{Oracle, Stop, mirror_descent};
use super::{Clique, JunctionTree, MarginalModel, SynthError, sample};
use crate::parallel;
use crate::synth::factor::Projection;

/// A noisy measurement of a marginal: `values[j] = (count of cell j) + noise` with
/// noise of standard deviation `sigma` (times `√cell_variance[j]` when given),
/// cells in [`Clique`] order (row-major, the first attribute most significant;
/// [`Clique::cell_of_record`] indexes them).
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// The measured clique.
    pub clique: Clique,
    /// Noisy counts, one per cell of the clique.
    pub values: Vec<f64>,
    /// The noise's standard deviation (a cell's weight in the loss is `1/σ²`, or
    /// `1/(k_j·σ²)` with `cell_variance`).
    pub sigma: f64,
    /// Per cell, its noise variance as a multiple `k_j` of σ² (None: every
    /// `k_j = 1`). A cell that is the sum of `k` independent noisy counts of
    /// standard deviation σ (a merged value of a compressed attribute,
    /// [`Compression::one_way`](super::Compression::one_way)) has `k_j = k`; MST
    /// weights such a cell by `1/√k` in its least-squares rows (McKenna, Miklau,
    /// Sheldon, "Winning the NIST Contest", JPC 2021, Section 4.1), which is this
    /// loss weight `1/(k·σ²)`.
    pub cell_variance: Option<Vec<f64>>,
    /// A measurement of a public coarsening of the clique's marginal: cell `j` of
    /// the clique is counted in value `groups[j]` (None: value `j`, the marginal
    /// itself). The values are then `G·x + noise` for the 0/1 matrix `G` of the
    /// map, a linear query of the clique's cells, which the fit matches as
    /// Private-PGM does any linear measurement of a clique (McKenna, Sheldon,
    /// Miklau 2019, Section 3).
    pub groups: Option<Vec<u32>>,
}

impl Measurement {
    /// A measurement; σ must be finite and positive and the values finite (the
    /// length is checked against the attribute sizes by [`fit`]).
    pub fn new(clique: Clique, values: Vec<f64>, sigma: f64) -> Result<Self, SynthError> {
        Measurement {
            clique,
            values,
            sigma,
            cell_variance: None,
            groups: None,
        }
        .checked()
    }

    /// A measurement of the clique's cells summed by `groups` (cell `j` into value
    /// `groups[j]`; every group below `values.len()`).
    pub fn grouped(
        clique: Clique,
        values: Vec<f64>,
        sigma: f64,
        groups: Vec<u32>,
    ) -> Result<Self, SynthError> {
        Measurement {
            clique,
            values,
            sigma,
            cell_variance: None,
            groups: Some(groups),
        }
        .checked()
    }

    /// A measurement whose cell `j` has noise variance `cell_variance[j]·σ²`; every
    /// multiple must be finite and at least 1, one per value.
    pub fn with_cell_variance(
        clique: Clique,
        values: Vec<f64>,
        sigma: f64,
        cell_variance: Vec<f64>,
    ) -> Result<Self, SynthError> {
        Measurement {
            clique,
            values,
            sigma,
            cell_variance: Some(cell_variance),
            groups: None,
        }
        .checked()
    }

    /// The measurement once [`Measurement::validate`] accepts it.
    fn checked(self) -> Result<Self, SynthError> {
        self.validate(0, None)?;
        Ok(self)
    }

    /// Cell `j`'s noise variance as a multiple of σ² (1 without `cell_variance`).
    pub fn variance_multiple(&self, j: usize) -> f64 {
        self.cell_variance.as_ref().map_or(1.0, |k| k[j])
    }

    /// The noise variance of the sum of all cells, `σ²·Σ_j k_j`.
    pub(crate) fn sum_variance(&self) -> f64 {
        let k = match &self.cell_variance {
            None => self.values.len() as f64,
            Some(k) => k.iter().sum(),
        };
        k * self.sigma * self.sigma
    }

    pub(crate) fn validate(&self, index: usize, sizes: Option<&[usize]>) -> Result<(), SynthError> {
        if !(self.sigma.is_finite() && self.sigma > 0.0) {
            return Err(SynthError::InvalidSigma {
                index,
                sigma: self.sigma,
            });
        }
        if self.values.iter().any(|v| !v.is_finite()) {
            return Err(SynthError::NonFiniteValue { index });
        }
        if let Some(k) = &self.cell_variance
            && (k.len() != self.values.len() || !k.iter().all(|&k| k.is_finite() && k >= 1.0))
        {
            return Err(SynthError::InvalidCellVariance { index });
        }
        if let Some(g) = &self.groups
            && g.iter().any(|&j| j as usize >= self.values.len())
        {
            return Err(SynthError::InvalidGroups { index });
        }
        if let Some(sizes) = sizes {
            let expected = self.clique.cells(sizes)?;
            if let Some(g) = &self.groups {
                if g.len() != expected {
                    return Err(SynthError::InvalidGroups { index });
                }
            } else if expected != self.values.len() {
                return Err(SynthError::MeasurementLength {
                    index,
                    expected,
                    got: self.values.len(),
                });
            }
        }
        Ok(())
    }
}

/// The number of records N the model is scaled to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Total {
    /// N is public (replace-one-record neighbours).
    Known(f64),
    /// N is private (add/remove-one-record neighbours): estimated from the
    /// measurements as the inverse-variance weighted mean of their sums (the sum
    /// of measurement `i` has variance `σ_i²·Σ_j k_ij`, `cells_i·σ_i²` without
    /// per-cell variances), floored at 1.
    Estimated,
}

/// Options of [`fit`] and [`fit_dense`](super::fit_dense).
#[derive(Debug, Clone, Copy)]
pub struct FitOptions<'m> {
    /// At most this many mirror-descent steps.
    pub iterations: usize,
    /// Stop when the Frank–Wolfe gap (an upper bound on the loss's distance to its
    /// minimum) is at most `tolerance × Σ_i cells(C_i)`.
    pub tolerance: f64,
    /// Also stop once three steps in a row each lowered the loss by less than
    /// `stall × Σ_i cells(C_i)` (0: never). A heuristic for noisy measurements:
    /// the loss at the true distribution is about `Σ_i cells(C_i)` and at the fit
    /// at most about that, so a small `stall` (10⁻⁴–10⁻³) stops steps that move
    /// the fit far less than the noise it fits.
    pub stall: f64,
    /// Start from this model's potentials (its cliques join the junction tree, so
    /// the start is exactly that model's distribution).
    pub warm_start: Option<&'m Model>,
    /// Start from the uniform distribution (all potentials zero) even with a
    /// `warm_start`, which then lends only its cliques and its step size.
    pub from_uniform: bool,
    /// Refuse models whose junction-tree tables have more cells in total.
    pub max_cells: u128,
    /// Triangulate the junction tree as for attributes of these sizes (None: the
    /// fit's own; see [`JunctionTree::ordered_by`]).
    pub order_sizes: Option<&'m [usize]>,
    /// Stop after the first step that ends past this instant, once this many
    /// steps are done (None: no clock). The fit's result then depends on the
    /// machine's speed, never on the data beyond the measurements.
    pub deadline: Option<(Instant, usize)>,
}

impl FitOptions<'_> {
    /// When mirror descent stops under these options.
    pub(crate) fn stop(&self) -> Stop {
        Stop {
            iterations: self.iterations,
            tolerance: self.tolerance,
            stall: self.stall,
            deadline: self.deadline,
        }
    }
}

impl Default for FitOptions<'_> {
    /// 1000 steps, tolerance 10⁻⁶, no stall rule, no warm start, at most 2²⁵ cells,
    /// no deadline.
    fn default() -> Self {
        FitOptions {
            iterations: 1000,
            tolerance: 1e-6,
            stall: 0.0,
            warm_start: None,
            from_uniform: false,
            max_cells: 1 << 25,
            order_sizes: None,
            deadline: None,
        }
    }
}

pub(crate) fn validate(
    sizes: &[usize],
    measurements: &[Measurement],
    total: Total,
    options: &FitOptions<'_>,
) -> Result<f64, SynthError> {
    if sizes.is_empty() {
        return Err(SynthError::InvalidDomain("no attributes".into()));
    }
    if let Some(a) = sizes.iter().position(|&s| s == 0) {
        return Err(SynthError::InvalidDomain(format!(
            "attribute {a} has no values"
        )));
    }
    if options.tolerance.is_nan() || options.tolerance < 0.0 {
        return Err(SynthError::InvalidOption("tolerance must be ≥ 0".into()));
    }
    if !options.stall.is_finite() || options.stall < 0.0 {
        return Err(SynthError::InvalidOption(
            "stall must be finite and ≥ 0".into(),
        ));
    }
    for (i, m) in measurements.iter().enumerate() {
        m.validate(i, Some(sizes))?;
    }
    if let Some(w) = options.warm_start
        && w.sizes() != sizes
    {
        return Err(SynthError::WarmStartMismatch);
    }
    match total {
        Total::Known(n) if n.is_finite() && n > 0.0 => Ok(n),
        Total::Known(n) => Err(SynthError::InvalidTotal(n)),
        Total::Estimated => {
            if measurements.is_empty() {
                return Err(SynthError::NoMeasurements);
            }
            let (mut num, mut den) = (0.0, 0.0);
            for m in measurements {
                let w = 1.0 / m.sum_variance();
                num += w * m.values.iter().sum::<f64>();
                den += w;
            }
            Ok((num / den).max(1.0))
        }
    }
}

/// A graphical model `p(x) ∝ exp Σ_C θ_C(x_C)` over the cliques of a junction
/// tree, scaled to a total N, as fitted by [`fit`].
#[derive(Debug, Clone)]
pub struct Model {
    tree: JunctionTree,
    theta: Vec<Vec<f64>>,
    log_beliefs: Vec<Vec<f64>>,
    /// Each clique's probability table `exp(log_beliefs)`, made on the first
    /// marginal query that reads it (a round queries hundreds of marginals of
    /// one model).
    linear: Vec<OnceLock<Vec<f64>>>,
    total: f64,
    iterations: usize,
    evaluations: usize,
    loss: f64,
    gap: f64,
    converged: bool,
    step: f64,
}

impl Model {
    /// The model's number of records N.
    pub fn total(&self) -> f64 {
        self.total
    }

    /// The junction-tree cliques.
    pub fn cliques(&self) -> &[Clique] {
        self.tree.cliques()
    }

    /// The junction tree.
    pub fn tree(&self) -> &JunctionTree {
        &self.tree
    }

    /// The attribute sizes.
    pub fn sizes(&self) -> &[usize] {
        self.tree.sizes()
    }

    /// Σ of the junction-tree tables' cells.
    pub fn cells(&self) -> u128 {
        self.tree.cells()
    }

    /// The log-potentials θ_C, one table per junction-tree clique.
    pub fn potentials(&self) -> &[Vec<f64>] {
        &self.theta
    }

    /// The calibrated, normalised log-marginals of the junction-tree cliques.
    pub fn log_marginals(&self) -> &[Vec<f64>] {
        &self.log_beliefs
    }

    /// Mirror-descent steps taken by the fit.
    pub fn iterations(&self) -> usize {
        self.iterations
    }

    /// Belief-propagation passes the fit made (steps plus line-search trials).
    pub fn evaluations(&self) -> usize {
        self.evaluations
    }

    /// The fit's final loss `Σ_i Σ_j (N·μ_{C_i}(j) − y_i(j))²/(k_ij·σ_i²)`.
    pub fn loss(&self) -> f64 {
        self.loss
    }

    /// The final Frank–Wolfe gap (≥ loss − minimal loss).
    pub fn gap(&self) -> f64 {
        self.gap
    }

    /// True when the fit stopped on the tolerance rather than the step limit.
    pub fn converged(&self) -> bool {
        self.converged
    }

    /// The marginal counts of any clique (exact; cells in [`Clique`] order).
    pub fn marginal(&self, clique: &Clique) -> Result<Vec<f64>, SynthError> {
        let linear = |c: usize| Cow::Borrowed(self.table(c));
        let mut m = marginal_from(&self.tree, &self.log_beliefs, &linear, clique)?;
        m.iter_mut().for_each(|x| *x *= self.total);
        Ok(m)
    }

    /// The marginal counts of many cliques, each as [`Model::marginal`] gives it up
    /// to rounding: the queries one clique of the model holds share a
    /// `MarginalPlan` over its table (a few passes over it, not one a query), and
    /// the cliques' plans and the queries spanning cliques run in parallel.
    pub fn marginals(&self, queries: &[&Clique]) -> Result<Vec<Vec<f64>>, SynthError> {
        enum Job {
            Held(usize, Vec<usize>),
            Spanning(usize),
        }
        let sizes = self.tree.sizes();
        let mut held = vec![Vec::new(); self.tree.cliques().len()];
        let mut jobs = Vec::new();
        for (i, q) in queries.iter().enumerate() {
            q.check(sizes)?;
            match self.tree.containing(q) {
                Some(c) => held[c].push(i),
                None => jobs.push(Job::Spanning(i)),
            }
        }
        jobs.extend(
            held.into_iter()
                .enumerate()
                .filter(|(_, ids)| !ids.is_empty())
                .map(|(c, ids)| Job::Held(c, ids)),
        );
        let done = parallel::try_map(&jobs, |job| match job {
            Job::Held(c, ids) => {
                let targets: Vec<Clique> = ids.iter().map(|&i| queries[i].clone()).collect();
                let mut plan = MarginalPlan::new(sizes, &self.tree.cliques()[*c], &targets)?;
                plan.marginalize(self.table(*c));
                Ok(ids
                    .iter()
                    .enumerate()
                    .map(|(t, &i)| (i, plan.target(t).iter().map(|x| x * self.total).collect()))
                    .collect())
            }
            Job::Spanning(i) => Ok(vec![(*i, self.marginal(queries[*i])?)]),
        })?;
        let mut out = vec![Vec::new(); queries.len()];
        for (i, m) in done.into_iter().flatten() {
            out[i] = m;
        }
        Ok(out)
    }

    /// Clique `c`'s probability table, exponentiated on first use and kept.
    fn table(&self, c: usize) -> &[f64] {
        // Sequential on purpose: a rayon worker waiting inside `get_or_init` could
        // steal a job that waits on the same slot, which would deadlock.
        self.linear[c].get_or_init(|| self.log_beliefs[c].iter().map(|x| x.exp()).collect())
    }

    /// `n` synthetic rows by forward sampling along the junction tree (i.i.d.).
    pub fn sample_rows<R: Rng + ?Sized>(
        &self,
        n: usize,
        rng: &mut R,
    ) -> Result<Vec<Vec<usize>>, SynthError> {
        sample::forward(&self.tree, &self.log_beliefs, n, rng)
    }

    /// `n` synthetic rows by randomized rounding of the model's counts along the
    /// junction tree (see [`sample::rounded`]).
    pub fn sample_rows_rounded<R: Rng + ?Sized>(
        &self,
        n: usize,
        rng: &mut R,
    ) -> Result<Vec<Vec<usize>>, SynthError> {
        sample::rounded(&self.tree, &self.log_beliefs, n, rng)
    }
}

/// How one attribute of a compressed model is expanded ([`Model::expand`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Expansion<'a> {
    /// Original value → compressed value.
    pub(crate) to: &'a [u32],
    /// Per original value, the log of its share of its compressed value.
    pub(crate) log_share: &'a [f64],
}

impl Model {
    /// The model over original attribute sizes `sizes`, where attribute `a`'s
    /// values were compressed by `maps[a]` (None: kept): an original value has its
    /// compressed value's probability times its share, independently of every
    /// other attribute. Every clique's log-marginal gets each of its attributes'
    /// log shares (they stay calibrated and normalised); the log-potentials get
    /// them once, in the first clique holding the attribute.
    pub(crate) fn expand(
        &self,
        sizes: &[usize],
        maps: &[Option<Expansion<'_>>],
    ) -> Result<Model, SynthError> {
        let old = self.tree.sizes();
        if sizes.len() != old.len() || maps.len() != old.len() {
            return Err(SynthError::InvalidDomain(
                "an expansion names other attributes than the model".into(),
            ));
        }
        for (a, m) in maps.iter().enumerate() {
            let ok = match m {
                None => sizes[a] == old[a],
                Some(m) => {
                    m.to.len() == sizes[a]
                        && m.log_share.len() == sizes[a]
                        && m.to.iter().all(|&v| (v as usize) < old[a])
                }
            };
            if !ok {
                return Err(SynthError::InvalidDomain(format!(
                    "attribute {a}'s expansion does not map {} values onto {}",
                    sizes[a], old[a]
                )));
            }
        }
        let tree = self.tree.resized(sizes)?;
        let mut first = vec![None; sizes.len()];
        for (c, clique) in tree.cliques().iter().enumerate() {
            for &a in clique.attributes() {
                first[a].get_or_insert(c);
            }
        }
        let expand_table = |c: usize, table: &[f64], shares: &dyn Fn(usize) -> bool| {
            let attrs = tree.cliques()[c].attributes();
            let len: usize = attrs.iter().map(|&a| sizes[a]).product();
            let mut values = vec![0usize; attrs.len()];
            let mut out = Vec::with_capacity(len);
            for _ in 0..len {
                let (mut index, mut add) = (0usize, 0.0);
                for (i, &a) in attrs.iter().enumerate() {
                    let (v, s) = match &maps[a] {
                        None => (values[i], 0.0),
                        Some(m) => (
                            m.to[values[i]] as usize,
                            if shares(a) {
                                m.log_share[values[i]]
                            } else {
                                0.0
                            },
                        ),
                    };
                    index = index * old[a] + v;
                    add += s;
                }
                out.push(table[index] + add);
                for i in (0..attrs.len()).rev() {
                    values[i] += 1;
                    if values[i] < sizes[attrs[i]] {
                        break;
                    }
                    values[i] = 0;
                }
            }
            out
        };
        let log_beliefs: Vec<Vec<f64>> = (0..tree.cliques().len())
            .map(|c| expand_table(c, &self.log_beliefs[c], &|_| true))
            .collect();
        let theta = (0..tree.cliques().len())
            .map(|c| expand_table(c, &self.theta[c], &|a| first[a] == Some(c)))
            .collect();
        Ok(Model {
            linear: unmade(&log_beliefs),
            tree,
            theta,
            log_beliefs,
            total: self.total,
            iterations: self.iterations,
            evaluations: self.evaluations,
            loss: self.loss,
            gap: self.gap,
            converged: self.converged,
            step: self.step,
        })
    }
}

/// One empty probability-table slot per clique.
fn unmade(log_beliefs: &[Vec<f64>]) -> Vec<OnceLock<Vec<f64>>> {
    log_beliefs.iter().map(|_| OnceLock::new()).collect()
}

impl MarginalModel for Model {
    fn marginal(&self, clique: &Clique) -> Result<Vec<f64>, SynthError> {
        Model::marginal(self, clique)
    }
    fn total(&self) -> f64 {
        self.total
    }
}

/// The junction-tree marginal oracle.
struct TreeOracle<'t> {
    tree: &'t JunctionTree,
    bp: BeliefPropagation,
    beliefs: Vec<Vec<f64>>,
    lin: Vec<Vec<f64>>,
    /// Per junction-tree clique: its plan and the measurements it serves.
    plans: Vec<Option<(MarginalPlan, Vec<usize>)>>,
    /// Per measurement, its group map when it measures a coarsening of its clique
    /// ([`Measurement::groups`]).
    groups: Vec<Option<&'t [u32]>>,
    work: Vec<f64>,
    /// Whether the model is large enough to work on its cliques in parallel.
    parallel: bool,
}

impl Oracle for TreeOracle<'_> {
    fn evaluate(&mut self, theta: &[Vec<f64>], marginals: &mut [Vec<f64>]) {
        self.bp
            .calibrate(self.tree, theta, &mut self.beliefs, &mut self.lin, false);
        let lin = &self.lin;
        let mut jobs: Vec<(&mut MarginalPlan, &[f64])> = self
            .plans
            .iter_mut()
            .zip(lin)
            .filter_map(|(p, l)| p.as_mut().map(|(plan, _)| (plan, l.as_slice())))
            .collect();
        parallel::each_mut(&mut jobs, self.parallel, |(plan, l)| plan.marginalize(l));
        for (plan, ids) in self.plans.iter().flatten() {
            for (t, &i) in ids.iter().enumerate() {
                match self.groups[i] {
                    None => marginals[i].copy_from_slice(plan.target(t)),
                    Some(g) => {
                        let out = &mut marginals[i];
                        out.iter_mut().for_each(|x| *x = 0.0);
                        for (&j, &p) in g.iter().zip(plan.target(t)) {
                            out[j as usize] += p;
                        }
                    }
                }
            }
        }
    }

    fn gradient(&mut self, grads: &[Vec<f64>], out: &mut [Vec<f64>]) {
        let groups = &self.groups;
        let mut jobs: Vec<_> = self.plans.iter_mut().zip(out.iter_mut()).collect();
        parallel::each_mut(&mut jobs, self.parallel, |(plan, out)| {
            out.iter_mut().for_each(|x| *x = 0.0);
            let Some((plan, ids)) = plan else { return };
            // A grouped measurement's gradient, per group, is every member cell's.
            let spread: Vec<Option<Vec<f64>>> = ids
                .iter()
                .map(|&i| groups[i].map(|g| g.iter().map(|&j| grads[i][j as usize]).collect()))
                .collect();
            let tables: Vec<&[f64]> = ids
                .iter()
                .zip(&spread)
                .map(|(&i, s)| s.as_deref().unwrap_or(grads[i].as_slice()))
                .collect();
            plan.broadcast_add(out, &tables, 1.0);
        });
    }

    fn min_value(&mut self, g: &[Vec<f64>]) -> f64 {
        self.bp.min_sum(self.tree, g, &mut self.work)
    }
}

/// Fits a junction-tree model to noisy marginals by mirror descent (Private-PGM).
///
/// Minimises `Σ_i Σ_j (N·μ_{C_i}(j) − y_i(j))² / (k_ij·σ_i²)` over distributions,
/// where `μ_C` is the model's probability marginal on `C`, N the [`Total`] and
/// `k_ij` cell j's [`Measurement::variance_multiple`] (1 unless given). The model's
/// cliques are the junction tree of the measured cliques (plus the warm start's);
/// the optimum is the same as over the full histogram
/// ([`fit_dense`](super::fit_dense)), since the loss only sees measured marginals.
///
/// ```
/// use privq_host::synth::{Clique, FitOptions, Measurement, Total, fit};
/// let sizes = [2, 2];
/// let y = Measurement::new(Clique::new([0, 1])?, vec![30.0, 20.0, 10.0, 40.0], 2.0)?;
/// let model = fit(&sizes, &[y], Total::Known(100.0), &FitOptions::default())?;
/// let m0 = model.marginal(&Clique::new([0])?)?;
/// assert!((m0[0] - 50.0).abs() < 1e-3);
/// # Ok::<(), privq_host::synth::SynthError>(())
/// ```
pub fn fit(
    sizes: &[usize],
    measurements: &[Measurement],
    total: Total,
    options: &FitOptions<'_>,
) -> Result<Model, SynthError> {
    let n = validate(sizes, measurements, total, options)?;
    let mut cliques: Vec<Clique> = measurements.iter().map(|m| m.clique.clone()).collect();
    if let Some(w) = options.warm_start {
        cliques.extend(w.cliques().iter().cloned());
    }
    cliques.sort();
    cliques.dedup();
    let mut tree = JunctionTree::ordered_by(options.order_sizes.unwrap_or(sizes), sizes, &cliques)?;
    // A warm start that already holds every measured clique is never outgrown:
    // the greedy triangulation may add fill to its (chordal) graph, and a model
    // refitted on what it covers (a round measuring a covered marginal, the final
    // fit) must keep the cells its selection was priced at.
    if let Some(w) = options.warm_start
        && tree.cells() > w.tree().cells()
        && measurements
            .iter()
            .all(|m| w.tree().containing(&m.clique).is_some())
    {
        tree = w.tree().clone();
    }
    let cells = tree.cells();
    if cells > options.max_cells {
        return Err(SynthError::ModelTooLarge {
            cells,
            cap: options.max_cells,
        });
    }
    let m = tree.cliques().len();
    let mut assigned: Vec<Vec<usize>> = vec![Vec::new(); m];
    for (i, meas) in measurements.iter().enumerate() {
        let c = tree
            .containing(&meas.clique)
            .ok_or(SynthError::NotASubset)?;
        assigned[c].push(i);
    }
    let mut plans = Vec::with_capacity(m);
    for (c, ids) in assigned.into_iter().enumerate() {
        if ids.is_empty() {
            plans.push(None);
        } else {
            let targets: Vec<Clique> = ids
                .iter()
                .map(|&i| measurements[i].clique.clone())
                .collect();
            plans.push(Some((
                MarginalPlan::new(sizes, &tree.cliques()[c], &targets)?,
                ids,
            )));
        }
    }
    let mut theta: Vec<Vec<f64>> = tree
        .cliques()
        .iter()
        .map(|c| c.cells(sizes).map(|k| vec![0.0; k]))
        .collect::<Result<_, _>>()?;
    if let Some(w) = options.warm_start.filter(|_| !options.from_uniform) {
        for (old, th) in w.cliques().iter().zip(w.potentials()) {
            let c = tree.containing(old).ok_or(SynthError::NotASubset)?;
            Projection::new(sizes, &tree.cliques()[c], old)?.broadcast_add(&mut theta[c], th, 1.0);
        }
    }
    let beliefs: Vec<Vec<f64>> = theta.iter().map(|t| Vec::with_capacity(t.len())).collect();
    let mut oracle = TreeOracle {
        tree: &tree,
        bp: BeliefPropagation::new(&tree)?,
        beliefs,
        lin: vec![Vec::new(); m],
        plans,
        groups: measurements.iter().map(|m| m.groups.as_deref()).collect(),
        work: Vec::new(),
        parallel: cells >= PARALLEL_CELLS as u128,
    };
    // The previous step, rescaled: the loss's curvature grows as N².
    let start = options.warm_start.map(|w| w.step * (w.total / n).powi(2));
    let out = mirror_descent(
        &mut oracle,
        &mut theta,
        measurements,
        n,
        options.stop(),
        start,
    );
    let mut log_beliefs = std::mem::take(&mut oracle.beliefs);
    let mut lin = std::mem::take(&mut oracle.lin);
    oracle
        .bp
        .calibrate(&tree, &theta, &mut log_beliefs, &mut lin, true);
    Ok(Model {
        linear: unmade(&log_beliefs),
        tree,
        theta,
        log_beliefs,
        total: n,
        iterations: out.iterations,
        evaluations: out.evaluations,
        loss: out.loss,
        gap: out.gap,
        converged: out.converged,
        step: out.step,
    })
}

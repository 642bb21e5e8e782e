//! Baselines measured side by side with the Huang–Roth mechanisms. The paper has no
//! experiments; these are privq's choice (`docs/src/distance.md`).
//!
//! * [`LaplacePerQuery`]: each of `k` queries answered with exact Laplace noise of
//!   sensitivity `1/n`, the budget composed over the k queries.
//! * [`TreeCdf`]: a per-coordinate private CDF (binary-tree / hierarchical counts
//!   with the core's exact discrete Laplace), from which
//!   `F^{(i)}(t) = ∫₀^{w}(1 − C) + ∫₀ᵗ (2C − 1)` answers **every** ℓ1 query.
//!
//! * [`GridMwem`]: MWEM (thesis Ch. 5, through the one MW engine [`crate::central::mw`] via
//!   [`crate::central::mwem::mwem`]) on a discretised grid of `g^ℓ` cells, for small ℓ only:
//!   a grid over the memory cap is refused with [`DistanceError::GridTooLarge`].

use privq_core::Epsilon;
use privq_core::rand_core::{CryptoRng, Rng};

use super::DistanceError;
use super::columns::{BoxDomain, Columns};
use super::privacy::{Noise, Plan, Privacy};
use crate::central::Geometric;
use crate::central::mwem::{
    Improvements, InitPolicy, MwemConfig, OutputRule, mwem, optimal_rounds,
};
use crate::data::{CountHistogram, DataError, MemoryCap};
use crate::query::{Query, Workload};

/// The Laplace mechanism per query with composition over `k` queries.
///
/// ```
/// use privq_host::accountant::Accountant;
/// use privq_host::distance::{Columns, BoxDomain, baselines::LaplacePerQuery, privacy::Privacy};
/// use privq_host::{Epsilon, seeded_rng};
/// let cols = Columns::new(&BoxDomain::unit_cube(1)?, &[vec![0.2], vec![0.4]])?;
/// let mut accountant = Accountant::pure(Epsilon::new(1, 1)?);
/// let privacy = Privacy::pure(Epsilon::new(1, 1)?);
/// let mut lap = LaplacePerQuery::new(&cols, 10, privacy, &mut accountant)?;
/// let a = lap.answer(&cols, &[0.3], &mut seeded_rng(1))?;
/// assert!(a.is_finite());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct LaplacePerQuery {
    noise: Noise,
    left: usize,
    plan: Plan,
}

impl LaplacePerQuery {
    /// For the points of `cols` (n public) and at most `k` queries; the whole
    /// budget is charged to `accountant` here, before any answer.
    pub fn new(
        cols: &Columns,
        k: usize,
        privacy: Privacy,
        accountant: &mut crate::accountant::Accountant,
    ) -> Result<Self, DistanceError> {
        let n = cols.len();
        if n == 0 {
            return Err(DistanceError::EmptyData);
        }
        let plan = Plan::new(privacy, k)?;
        super::privacy::charge_release(accountant, "Laplace per distance query", privacy)?;
        Ok(LaplacePerQuery {
            noise: Noise::new(1.0 / n as f64, 1, plan.per_step(), true)?,
            left: k,
            plan,
        })
    }

    /// The noise scale per answer.
    pub fn scale(&self) -> f64 {
        self.noise.scale()
    }

    /// The plan (per-query ε₀ and composition).
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Answers a query in the domain's units (scaled answer); refuses after k.
    pub fn answer<R: Rng + CryptoRng + ?Sized>(
        &mut self,
        cols: &Columns,
        y: &[f64],
        rng: &mut R,
    ) -> Result<f64, DistanceError> {
        if self.left == 0 {
            return Err(DistanceError::Exhausted(super::Exhausted {
                rounds: self.plan.steps(),
                answered: self.plan.steps(),
            }));
        }
        let exact = cols.answer(y)?;
        self.left -= 1;
        self.noise.release(exact, rng)
    }
}

/// The per-coordinate private CDF: `2^depth` bins per coordinate, hierarchical
/// counts at every dyadic level with exact discrete Laplace noise. A point (replaced
/// by another) changes one count per level and coordinate twice; the root count is
/// n, public under replace-one neighbours, and is used exactly, so the ℓ1
/// sensitivity of the noisy counts is `2·ℓ·depth`; pure ε-DP.
///
/// ```
/// use privq_host::accountant::Accountant;
/// use privq_host::distance::{Columns, BoxDomain, baselines::TreeCdf};
/// use privq_host::{Epsilon, seeded_rng};
/// let pts: Vec<Vec<f64>> = (0..10_000).map(|i| vec![(i % 100) as f64 / 100.0]).collect();
/// let cols = Columns::new(&BoxDomain::unit_cube(1)?, &pts)?;
/// let mut accountant = Accountant::pure(Epsilon::new(1, 1)?);
/// let tree = TreeCdf::release(&cols, Epsilon::new(1, 1)?, 10, &mut accountant, &mut seeded_rng(1))?;
/// assert!((tree.answer_scaled(&[0.5]) - cols.answer(&[0.5])?).abs() < 0.01);
/// # Ok::<(), privq_host::distance::DistanceError>(())
/// ```
#[derive(Debug, Clone)]
pub struct TreeCdf {
    widths: Vec<f64>,
    /// Per coordinate: `∫₀^{edge_b} C(s) ds` at the `2^depth + 1` bin edges.
    integrals: Vec<Vec<f64>>,
    domain: super::BoxDomain,
}

impl TreeCdf {
    /// Releases the noisy CDFs with budget ε and `2^depth` bins per coordinate,
    /// charging ε to `accountant` before any noise is drawn.
    pub fn release<R: Rng + CryptoRng + ?Sized>(
        cols: &Columns,
        epsilon: privq_core::Epsilon,
        depth: u32,
        accountant: &mut crate::accountant::Accountant,
        rng: &mut R,
    ) -> Result<Self, DistanceError> {
        if !(1..=20).contains(&depth) {
            return Err(DistanceError::InvalidParameter(format!(
                "depth must lie in 1..=20, got {depth}"
            )));
        }
        let bins = 1usize << depth;
        // One histogram per level and coordinate, each of ℓ1 sensitivity 2 under
        // replace-one-record neighbours.
        let per_histogram = crate::contract::Neighbours::Replace.histogram_l1();
        // The root (level `depth`) is n, public under replace-one: not noised.
        let sens = per_histogram * cols.dim() as u64 * u64::from(depth);
        let geo = Geometric::new(sens, epsilon)?;
        accountant.charge_as(
            crate::contract::Neighbours::Replace,
            "tree CDF (every level of every coordinate)",
            crate::accountant::Cost::Pure(epsilon),
        )?;
        let n = cols.len() as f64;
        let mut integrals = Vec::with_capacity(cols.dim());
        for (i, &w) in cols.widths().iter().enumerate() {
            let h = w / bins as f64;
            let mut leaf = vec![0u64; bins];
            for &z in cols.sorted_column(i) {
                let b = ((z / h) as usize).min(bins - 1);
                leaf[b] += 1;
            }
            // Noisy dyadic counts, level by level (level 0 = leaves).
            let mut levels: Vec<Vec<i64>> = Vec::with_capacity(depth as usize + 1);
            let mut exact = leaf;
            for _ in 0..depth {
                levels.push(geo.release_raw(&exact, rng)?);
                exact = exact.chunks(2).map(|c| c.iter().sum()).collect();
            }
            // The root: n itself.
            levels.push(
                exact
                    .iter()
                    .map(|&c| i64::try_from(c).unwrap_or(i64::MAX))
                    .collect(),
            );
            // CDF at each bin's right edge: the dyadic decomposition of [0, b+1).
            let mut cdf = Vec::with_capacity(bins);
            let mut running_max = 0.0f64;
            for b in 0..bins {
                let mut count = 0i64;
                let mut end = b + 1;
                let mut level = 0usize;
                while end > 0 {
                    if end & 1 == 1 {
                        count += levels
                            .get(level)
                            .and_then(|l| l.get(end - 1))
                            .copied()
                            .unwrap_or(0);
                    }
                    end >>= 1;
                    level += 1;
                }
                // Post-processing: clamp to [0, 1] and make monotone.
                running_max = running_max.max((count as f64 / n).clamp(0.0, 1.0));
                cdf.push(running_max);
            }
            let mut integral = Vec::with_capacity(bins + 1);
            integral.push(0.0);
            let mut acc = 0.0;
            let mut left = 0.0;
            for &c in &cdf {
                acc += 0.5 * (left + c) * h; // trapezoid within the bin
                integral.push(acc);
                left = c;
            }
            integrals.push(integral);
        }
        Ok(TreeCdf {
            widths: cols.widths().to_vec(),
            integrals,
            domain: cols.domain().clone(),
        })
    }

    /// The answer for a scaled query.
    pub fn answer_scaled(&self, y: &[f64]) -> f64 {
        let mut total = 0.0;
        for ((&t, &w), integral) in y.iter().zip(&self.widths).zip(&self.integrals) {
            let bins = integral.len() - 1;
            let h = w / bins as f64;
            let pos = (t / h).clamp(0.0, bins as f64);
            let b = (pos.floor() as usize).min(bins - 1);
            let frac = pos - b as f64;
            let it = integral[b] + frac * (integral[b + 1] - integral[b]);
            let total_int = integral[bins];
            total += (w - total_int) + 2.0 * it - t;
        }
        total.clamp(0.0, 1.0)
    }

    /// The answer for a query in the domain's units.
    pub fn answer(&self, y: &[f64]) -> Result<f64, DistanceError> {
        Ok(self.answer_scaled(&self.domain.scale(y)?))
    }
}

/// Options of the [`GridMwem`] baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GridMwemConfig {
    /// Total budget ε (pure ε-DP; MWEM's own exact ledger).
    pub epsilon: Epsilon,
    /// Bins per coordinate g ≥ 2 (the grid has `g^ℓ` cells).
    pub bins: usize,
    /// Public workload: this many query points drawn uniformly from the box
    /// (data-independent), whose distance queries MWEM selects from.
    pub workload: usize,
    /// MWEM rounds T; `None` uses Theorem 5.2.11's `T*` clamped to `[1, max_rounds]`.
    pub rounds: Option<usize>,
    /// Upper clamp for the automatic T.
    pub max_rounds: usize,
    /// Memory cap for the grid's dense state and workload.
    pub cap: MemoryCap,
    /// Thesis §5.3.2 improvement 2: spend ε/10 on a noisy histogram to initialise
    /// the weights when it is informative (`N/ε_init ≤ n`, public), otherwise start
    /// uniform and spend nothing on it.
    pub noisy_init: bool,
    /// What MWEM releases (the last iterate by default: with smooth distance
    /// queries the average of the iterates is dragged towards the uniform start).
    pub output: OutputRule,
}

impl GridMwemConfig {
    /// `g` bins per coordinate, 256 workload points, automatic T ≤ 200, 256 MiB cap.
    pub fn new(epsilon: Epsilon, bins: usize) -> Self {
        GridMwemConfig {
            epsilon,
            bins,
            workload: 256,
            rounds: None,
            max_rounds: 200,
            cap: MemoryCap(256 << 20),
            noisy_init: true,
            output: OutputRule::Last,
        }
    }

    /// The grid's cell count `g^ℓ` (saturating) and the bytes MWEM would need: per
    /// cell 8 bytes per workload query plus 32 bytes of state (saturating).
    pub fn footprint(&self, dim: usize) -> (u64, u64) {
        let cells = u32::try_from(dim)
            .ok()
            .and_then(|d| (self.bins as u64).checked_pow(d))
            .unwrap_or(u64::MAX);
        let per_cell = 8u64.saturating_mul(self.workload as u64).saturating_add(32);
        (cells, cells.saturating_mul(per_cell))
    }
}

/// MWEM on a discretised grid (a baseline for small ℓ; `docs/src/distance.md`):
/// every point is snapped to its cell of a data-independent grid with `g` bins per
/// coordinate, MWEM runs over the cell counts with the ℓ1 distance queries of `W`
/// public query points (values measured from the cell centres), and the released distribution answers **every** ℓ1
/// query by post-processing (through its per-coordinate marginals, `O(ℓg)` per
/// query). By default MWEM starts from a noisy histogram when that is informative
/// and releases its last iterate (see [`GridMwemConfig`]). The discretisation alone
/// costs up to `1/(2g)` (scaled units); the grid
/// is exponential in ℓ, so this baseline is for small ℓ only.
///
/// ```
/// use privq_host::accountant::Accountant;
/// use privq_host::distance::{BoxDomain, baselines::{GridMwem, GridMwemConfig}};
/// use privq_host::{Epsilon, seeded_rng};
/// let domain = BoxDomain::unit_cube(1)?;
/// let pts: Vec<Vec<f64>> = (0..5000).map(|i| vec![(i % 100) as f64 / 100.0]).collect();
/// let config = GridMwemConfig::new(Epsilon::new(1, 1)?, 32);
/// let mut accountant = Accountant::pure(Epsilon::new(1, 1)?);
/// let m = GridMwem::release(&domain, &pts, &config, &mut accountant, &mut seeded_rng(1))?;
/// assert_eq!(m.spent(), Epsilon::new(1, 1)?); // MWEM's exact ledger
/// assert!((m.answer(&[0.5])? - 0.25).abs() < 0.05);
/// # Ok::<(), privq_host::distance::DistanceError>(())
/// ```
#[derive(Debug, Clone)]
pub struct GridMwem {
    domain: BoxDomain,
    widths: Vec<f64>,
    /// Per coordinate: the released mass of each bin.
    marginals: Vec<Vec<f64>>,
    rounds: usize,
    spent: Epsilon,
}

impl GridMwem {
    /// Runs MWEM on the grid of `points` (a point outside `domain` is clamped into it,
    /// like every private point: refusing it would reveal it).
    pub fn release<P: AsRef<[f64]>, R: Rng + CryptoRng + ?Sized>(
        domain: &BoxDomain,
        points: &[P],
        config: &GridMwemConfig,
        accountant: &mut crate::accountant::Accountant,
        rng: &mut R,
    ) -> Result<Self, DistanceError> {
        let g = config.bins;
        if g < 2 || config.workload == 0 || config.max_rounds == 0 {
            return Err(DistanceError::InvalidParameter(format!(
                "the MWEM grid needs at least 2 bins ({g}), 1 workload query ({}) and 1 round ({})",
                config.workload, config.max_rounds
            )));
        }
        if points.is_empty() {
            return Err(DistanceError::EmptyData);
        }
        let dim = domain.dim();
        let (cells, bytes) = config.footprint(dim);
        let cap = config.cap.0;
        let cells_usize = usize::try_from(cells).ok().filter(|_| bytes <= cap);
        let Some(cells_n) = cells_usize else {
            return Err(DistanceError::GridTooLarge { cells, bytes, cap });
        };
        let widths = domain.widths();
        let bin_of = |i: usize, t: f64| -> usize {
            let w = widths.get(i).copied().unwrap_or(1.0);
            ((t / w * g as f64) as usize).min(g - 1)
        };
        let centre = |i: usize, b: usize| -> f64 {
            widths.get(i).copied().unwrap_or(1.0) * (b as f64 + 0.5) / g as f64
        };
        // The public workload first (data-independent draws).
        let workload_points: Vec<Vec<f64>> = (0..config.workload)
            .map(|_| {
                widths
                    .iter()
                    .map(|&w| w * (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
                    .collect()
            })
            .collect();
        let mut counts = vec![0u64; cells_n];
        for p in points {
            let y = domain.clamp_scale(p.as_ref())?;
            let mut index = 0usize;
            for (i, &t) in y.iter().enumerate().rev() {
                index = index * g + bin_of(i, t);
            }
            if let Some(c) = counts.get_mut(index) {
                *c += 1;
            }
        }
        let mw_err = |e: DataError| match e {
            DataError::UniverseTooLarge { cells, bytes, cap } => {
                DistanceError::GridTooLarge { cells, bytes, cap }
            }
            other => DistanceError::Mwem(other.into()),
        };
        let hist = CountHistogram::from_counts(counts, config.cap).map_err(mw_err)?;
        let mut queries = Vec::with_capacity(config.workload);
        for y in &workload_points {
            let mut f = vec![0.0f64; cells_n];
            let mut stride = 1usize;
            for (i, &t) in y.iter().enumerate() {
                let table: Vec<f64> = (0..g).map(|b| (centre(i, b) - t).abs()).collect();
                for (u, v) in f.iter_mut().enumerate() {
                    *v += table.get((u / stride) % g).copied().unwrap_or(0.0);
                }
                stride = stride.saturating_mul(g);
            }
            f.iter_mut().for_each(|v| *v = v.clamp(0.0, 1.0));
            queries.push(Query::dense(f).map_err(mw_err)?);
        }
        let workload = Workload::new(queries, cells_n).map_err(mw_err)?;
        let rounds = match config.rounds {
            Some(t) if t >= 1 => t,
            Some(_) => {
                return Err(DistanceError::InvalidParameter(
                    "MWEM needs at least one round".into(),
                ));
            }
            None => {
                let (t, _) = optimal_rounds(
                    config.epsilon.to_f64(),
                    points.len() as f64,
                    cells as f64,
                    (config.workload as f64).max(2.0),
                );
                (t.round() as usize).clamp(1, config.max_rounds)
            }
        };
        let mut mw_config =
            MwemConfig::unoptimized(config.epsilon, rounds).map_err(DistanceError::Mwem)?;
        mw_config.clip = true;
        mw_config.output = config.output;
        if config.noisy_init {
            mw_config.improvements = Improvements {
                noisy_init: Some((1, 10)),
                init_policy: InitPolicy::Auto,
                ..Improvements::default()
            };
        }
        // The whole budget of this baseline goes to its one MWEM run, which charges
        // the caller's accountant before it samples.
        let out = mwem(&hist, &workload, &mw_config, accountant, rng).map_err(|e| match e {
            crate::central::mwem::MwemError::Data(d) => mw_err(d),
            other => DistanceError::Mwem(other),
        })?;
        let mut marginals = vec![vec![0.0f64; g]; dim];
        for (u, &p) in out.distribution.iter().enumerate() {
            let mut rest = u;
            for m in marginals.iter_mut() {
                if let Some(v) = m.get_mut(rest % g) {
                    *v += p;
                }
                rest /= g;
            }
        }
        Ok(GridMwem {
            domain: domain.clone(),
            widths,
            marginals,
            rounds: out.rounds,
            spent: out.ledger.spent_epsilon().unwrap_or(config.epsilon),
        })
    }

    /// The answer for a scaled query (post-processing of the released distribution).
    pub fn answer_scaled(&self, y: &[f64]) -> f64 {
        let mut total = 0.0;
        for ((&t, &w), m) in y.iter().zip(&self.widths).zip(&self.marginals) {
            let g = m.len() as f64;
            total += m
                .iter()
                .enumerate()
                .map(|(b, &p)| p * (w * (b as f64 + 0.5) / g - t).abs())
                .sum::<f64>();
        }
        total.clamp(0.0, 1.0)
    }

    /// The scaled answer for a query in the domain's units.
    pub fn answer(&self, y: &[f64]) -> Result<f64, DistanceError> {
        Ok(self.answer_scaled(&self.domain.scale(y)?))
    }

    /// MWEM rounds run.
    pub fn rounds(&self) -> usize {
        self.rounds
    }

    /// The exact ε charged by MWEM's ledger.
    pub fn spent(&self) -> Epsilon {
        self.spent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accountant::Accountant;
    use crate::distance::BoxDomain;
    use crate::seeded_rng;
    use privq_core::Epsilon;

    #[test]
    fn tree_cdf_is_accurate_with_large_epsilon_and_laplace_refuses_after_k() {
        let mut rng = seeded_rng(3);
        let pts: Vec<Vec<f64>> = (0..5000)
            .map(|i| {
                vec![
                    ((i * 37) % 1000) as f64 / 1000.0,
                    ((i * 11) % 997) as f64 / 997.0,
                ]
            })
            .collect();
        let cols = Columns::new(&BoxDomain::unit_cube(2).unwrap(), &pts).unwrap();
        let tree = TreeCdf::release(
            &cols,
            Epsilon::new(1000, 1).unwrap(),
            10,
            &mut Accountant::pure(Epsilon::new(1000, 1).unwrap()),
            &mut rng,
        )
        .unwrap();
        for q in [[0.1, 0.9], [0.5, 0.5], [0.0, 1.0]] {
            assert!((tree.answer(&q).unwrap() - cols.answer(&q).unwrap()).abs() < 2e-3);
        }
        assert!(
            TreeCdf::release(
                &cols,
                Epsilon::new(1, 1).unwrap(),
                0,
                &mut Accountant::pure(Epsilon::new(1, 1).unwrap()),
                &mut rng
            )
            .is_err()
        );
        let one = Epsilon::new(1, 1).unwrap();
        // Charged before any noise: a budget below ε refuses and spends nothing.
        let mut small = Accountant::pure(Epsilon::new(1, 2).unwrap());
        assert!(matches!(
            TreeCdf::release(&cols, one, 10, &mut small, &mut rng),
            Err(DistanceError::Budget(_))
        ));
        assert_eq!(small.spent_epsilon(), None);
        let mut acct = crate::accountant::Accountant::pure(one);
        let mut lap = LaplacePerQuery::new(&cols, 2, Privacy::pure(one), &mut acct).unwrap();
        assert!(acct.remaining().is_none(), "charged up front");
        assert!((lap.scale() - 2.0 / 5000.0).abs() < 1e-6);
        lap.answer(&cols, &[0.5, 0.5], &mut rng).unwrap();
        lap.answer(&cols, &[0.5, 0.5], &mut rng).unwrap();
        assert!(matches!(
            lap.answer(&cols, &[0.5, 0.5], &mut rng),
            Err(DistanceError::Exhausted(_))
        ));
    }

    fn skewed(n: usize, dim: usize, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = seeded_rng(seed);
        (0..n)
            .map(|_| {
                (0..dim)
                    .map(|_| ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64).powi(2))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn grid_mwem_is_accurate_with_large_epsilon_and_spends_exactly_epsilon() {
        for (dim, bins) in [(1usize, 64usize), (2, 16)] {
            let domain = BoxDomain::unit_cube(dim).unwrap();
            let pts = skewed(20_000, dim, 5 + dim as u64);
            let cols = Columns::new(&domain, &pts).unwrap();
            let eps = Epsilon::new(100, 1).unwrap();
            let mut config = GridMwemConfig::new(eps, bins);
            config.rounds = Some(60);
            config.workload = 64;
            let m = GridMwem::release(
                &domain,
                &pts,
                &config,
                &mut Accountant::pure(eps),
                &mut seeded_rng(7),
            )
            .unwrap();
            assert_eq!(m.spent(), eps);
            assert_eq!(m.rounds(), 60);
            let worst = skewed(300, dim, 99)
                .iter()
                .map(|q| (m.answer(q).unwrap() - cols.answer(q).unwrap()).abs())
                .fold(0.0, f64::max);
            // Discretisation (≤ 1/(2g)) plus the MW fit after 60 rounds.
            assert!(worst < 0.03, "dim {dim}: max error {worst}");
        }
    }

    #[test]
    fn grid_mwem_refuses_large_grids_and_bad_input() {
        let eps = Epsilon::new(1, 1).unwrap();
        let domain = BoxDomain::unit_cube(16).unwrap();
        let pts = skewed(10, 16, 1);
        match GridMwem::release(
            &domain,
            &pts,
            &GridMwemConfig::new(eps, 8),
            &mut Accountant::pure(eps),
            &mut seeded_rng(1),
        ) {
            Err(DistanceError::GridTooLarge { cells, bytes, cap }) => {
                assert_eq!(cells, 1u64 << 48);
                assert!(bytes > cap);
            }
            other => panic!("{other:?}"),
        }
        // Just over the cap at a small dimension too.
        let mut tight = GridMwemConfig::new(eps, 16);
        tight.cap = MemoryCap(tight.footprint(4).1 - 1);
        let d4 = BoxDomain::unit_cube(4).unwrap();
        assert!(matches!(
            GridMwem::release(
                &d4,
                &skewed(10, 4, 2),
                &tight,
                &mut Accountant::pure(eps),
                &mut seeded_rng(1)
            ),
            Err(DistanceError::GridTooLarge { .. })
        ));
        let d1 = BoxDomain::unit_cube(1).unwrap();
        let empty: Vec<Vec<f64>> = Vec::new();
        assert!(matches!(
            GridMwem::release(
                &d1,
                &empty,
                &GridMwemConfig::new(eps, 8),
                &mut Accountant::pure(eps),
                &mut seeded_rng(1)
            )
            .unwrap_err(),
            DistanceError::EmptyData
        ));
        assert!(matches!(
            GridMwem::release(
                &d1,
                &[vec![0.5]],
                &GridMwemConfig::new(eps, 1),
                &mut Accountant::pure(eps),
                &mut seeded_rng(1)
            ),
            Err(DistanceError::InvalidParameter(_))
        ));
        // A private point outside the box is clamped into it, not refused.
        assert!(
            GridMwem::release(
                &d1,
                &[vec![1.5]],
                &GridMwemConfig::new(eps, 8),
                &mut Accountant::pure(eps),
                &mut seeded_rng(1)
            )
            .is_ok()
        );
    }
}

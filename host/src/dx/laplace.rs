//! The d_X-private Laplace mechanism (eq. 5) and the ε-DP baseline (Definition 4),
//! released exactly on power-of-two grids with the core's discrete Laplace sampler.

use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::sample::DiscreteLaplace;

use super::check::check_laplace;
use super::{DxError, DxSpend, FiniteMetric, Queries};
use crate::accountant::Accountant;

/// Grid steps per unit of noise scale before calibration (γ ≤ c/2¹⁰).
const GRID_BITS: i32 = 10;

/// One query's exact release: coefficients in Q31.32, grid `2^exp`, noise of
/// `steps` grid steps (0 = noiseless).
#[derive(Debug, Clone)]
struct Row {
    coef: Vec<i64>,
    exp: i32,
    noise: Option<DiscreteLaplace>,
    steps: u64,
}

/// The d_X-private Laplace mechanism `Z = Q̃x + Y`, `Y_k ~ Lap(c_k)` (eq. 5), for
/// effective queries `Q̃ = c ⊙ Q'` satisfying Theorem 1.
///
/// Exactness: every coefficient is rounded to Q31.32, so `Q̃_k x` is computed exactly
/// in integers and neighbours `x' = x − e_i + e_j` differ by exactly the rounded
/// coefficient difference. The answer is snapped to the grid `γ_k = 2^e` (e from
/// `c_k` alone) and released as `γ_k(s + Z)` with `Z` exact discrete Laplace of scale
/// `m_k` steps. Construction computes the grid-level privacy loss
/// `L(p) = Σ_k ⌈|ΔQ̃_k(p)|/γ_k⌉ / m_k` of every pair and raises the `m_k` until
/// `L(p) ≤ d(p)` everywhere, so the released noise is never below `c_k`.
///
/// ```
/// use privq_host::accountant::Accountant;
/// use privq_host::dx::{DxLaplace, FiniteMetric, Queries};
/// use privq_host::{Epsilon, seeded_rng};
/// let d = FiniteMetric::euclidean(&[[0.0], [1.0], [3.0]], 1.0)?;
/// let q = Queries::new(vec![vec![0.0, 1.0, 3.0]])?;
/// // Single-query closed form: c = max |q_i − q_j| / d(i, j) = 1.
/// let mech = DxLaplace::new(&d, q, vec![1.0])?;
/// assert!((mech.scale(0) - 1.0).abs() < 0.01);
/// let mut accountant = Accountant::pure(Epsilon::new(3, 1)?);
/// let z = mech.release(&[5, 2, 3], &mut accountant, &mut seeded_rng(1))?; // fixed seed: tests only
/// assert_eq!(z.len(), 1);
/// assert_eq!(accountant.spent_epsilon(), Some(Epsilon::new(3, 1)?)); // max d = 3
/// # Ok::<(), privq_host::dx::DxError>(())
/// ```
#[derive(Debug, Clone)]
pub struct DxLaplace {
    rows: Vec<Row>,
    n: usize,
    loss: f64,
    spend: DxSpend,
}

impl DxLaplace {
    /// Checks Theorem 1 for `(Q̃, c)` on `metric` and calibrates the exact grids.
    pub fn new(metric: &FiniteMetric, q_eff: Queries, c: Vec<f64>) -> Result<Self, DxError> {
        for (k, &ck) in c.iter().enumerate() {
            if !ck.is_finite() {
                return Err(DxError::InfiniteNoise { query: k });
            }
        }
        check_laplace(metric, &q_eff, &c)?.require()?;
        let mut rows = Vec::with_capacity(q_eff.rows());
        for (k, &ck) in c.iter().enumerate() {
            let coef = q_eff
                .row(k)
                .iter()
                .map(|&v| {
                    let b = (v * 4_294_967_296.0).round();
                    if b.abs() < 9.0e18 {
                        Ok(b as i64)
                    } else {
                        Err(DxError::InvalidValue(format!(
                            "coefficient {v} exceeds the Q31.32 range"
                        )))
                    }
                })
                .collect::<Result<Vec<_>, _>>()?;
            let (exp, steps) = if ck > 0.0 {
                let e = (ck.log2().floor() as i32 - GRID_BITS).clamp(-32, 30);
                (e, (ck / f64::from(e).exp2()).ceil() as u64)
            } else {
                (-32, 0)
            };
            rows.push(Row {
                coef,
                exp,
                noise: None,
                steps,
            });
        }
        let mut mech = DxLaplace {
            rows,
            n: q_eff.cols(),
            loss: 0.0,
            spend: DxSpend::new(metric.clone()),
        };
        for _ in 0..8 {
            let rho = mech.grid_ratio(metric);
            mech.loss = rho;
            if rho <= 1.0 {
                break;
            }
            for r in mech.rows.iter_mut().filter(|r| r.steps > 0) {
                r.steps = (r.steps as f64 * rho * (1.0 + 1e-9)).ceil() as u64;
            }
        }
        if mech.loss > 1.0 {
            return Err(DxError::ConstraintViolated {
                ratio: mech.loss,
                pair: (0, 0),
            });
        }
        for r in &mut mech.rows {
            if r.steps > 0 {
                r.noise = Some(DiscreteLaplace::new(r.steps, 1)?);
            }
        }
        Ok(mech)
    }

    /// The ε-DP baseline `Qx + Lap(Δ^Q_1/ε)^K` with `ε = min_{i≠j} d(i, j)`
    /// (Definition 4, §2.5),
    /// on the same exact grid machinery.
    pub fn baseline(metric: &FiniteMetric, q: Queries) -> Result<Self, DxError> {
        let c = baseline_scale(metric, &q)?;
        let k = q.rows();
        DxLaplace::new(metric, q, vec![c; k])
    }

    fn grid_ratio(&self, metric: &FiniteMetric) -> f64 {
        let mut worst: f64 = 0.0;
        for (i, j, d) in metric.finite_pairs() {
            let mut loss = 0.0;
            for r in &self.rows {
                let diff = (r.coef[i] - r.coef[j]).unsigned_abs();
                if diff == 0 {
                    continue;
                }
                if r.steps == 0 {
                    return f64::INFINITY;
                }
                let unit = 1u64 << (r.exp + 32);
                loss += diff.div_ceil(unit) as f64 / r.steps as f64;
            }
            worst = worst.max(loss / d);
        }
        worst
    }

    /// The noise scale actually used for query `k` (`m_k·γ_k ≥ c_k`; 0 if noiseless).
    pub fn scale(&self, k: usize) -> f64 {
        let r = &self.rows[k];
        r.steps as f64 * f64::from(r.exp).exp2()
    }

    /// What each release spends: the metric it was certified for (every release
    /// is d_X-private for it; charge it with [`DxSpend::charge`]).
    pub fn spend(&self) -> &DxSpend {
        &self.spend
    }

    /// All noise scales.
    pub fn scales(&self) -> Vec<f64> {
        (0..self.rows.len()).map(|k| self.scale(k)).collect()
    }

    /// The grid-level worst privacy-loss ratio `max_p L(p)/d(p)` (≤ 1).
    pub fn loss_ratio(&self) -> f64 {
        self.loss
    }

    /// The exact (noise-free, Q31.32-rounded) answers `Q̃x`.
    pub fn exact_answers(&self, counts: &[u64]) -> Result<Vec<f64>, DxError> {
        self.check_counts(counts)?;
        Ok(self
            .rows
            .iter()
            .map(|r| dot(&r.coef, counts) as f64 / 4_294_967_296.0)
            .collect())
    }

    fn check_counts(&self, counts: &[u64]) -> Result<(), DxError> {
        if counts.len() != self.n {
            return Err(DxError::Dimension(format!(
                "histogram of {} cells for {} elements",
                counts.len(),
                self.n
            )));
        }
        // With |coefficient| < 2⁶³ (checked in `new`) and at most 2⁶⁴ − 1 records,
        // every exact answer is below 2¹²⁷ in magnitude, so `dot` cannot overflow.
        // (No real table reaches 2⁶⁴ records; the bound is what makes the sum safe.)
        if counts
            .iter()
            .try_fold(0u64, |t, &c| t.checked_add(c))
            .is_none()
        {
            return Err(DxError::InvalidValue(
                "a histogram of 2^64 or more records".into(),
            ));
        }
        Ok(())
    }

    /// Releases `Q̃x + Y` for the histogram `counts`, after charging `accountant`
    /// the ε-DP guarantee the d_X spend implies ([`DxSpend::charged_epsilon`]).
    /// A malformed histogram or a refused charge samples nothing. Requires a
    /// secure RNG.
    pub fn release<R: Rng + CryptoRng + ?Sized>(
        &self,
        counts: &[u64],
        accountant: &mut Accountant,
        rng: &mut R,
    ) -> Result<Vec<f64>, DxError> {
        self.check_counts(counts)?;
        self.spend.charge(accountant, "d_X Laplace release")?;
        self.sample(counts, rng)
    }

    /// Samples a release whose spend the caller has charged (composite
    /// mechanisms charge their whole spend first).
    pub(crate) fn sample<R: Rng + CryptoRng + ?Sized>(
        &self,
        counts: &[u64],
        rng: &mut R,
    ) -> Result<Vec<f64>, DxError> {
        self.check_counts(counts)?;
        let mut out = Vec::with_capacity(self.rows.len());
        for r in &self.rows {
            let exact = dot(&r.coef, counts);
            match &r.noise {
                None => out.push(exact as f64 / 4_294_967_296.0),
                Some(noise) => {
                    let steps = snap(exact, r.exp);
                    let z = i128::from(noise.sample(rng)?);
                    out.push((steps + z) as f64 * f64::from(r.exp).exp2());
                }
            }
        }
        Ok(out)
    }

    /// The lattice point (in grid steps) the answer to query `k` snaps to, and the
    /// noise scale in steps (for exact pmf checks).
    pub fn snapped(&self, k: usize, counts: &[u64]) -> Result<(i128, u64), DxError> {
        self.check_counts(counts)?;
        let r = &self.rows[k];
        Ok((snap(dot(&r.coef, counts), r.exp), r.steps))
    }
}

/// Rounds a Q31.32 value to the nearest multiple of `2^exp` (half up), in steps.
fn snap(exact: i128, exp: i32) -> i128 {
    let shift = (exp + 32) as u32;
    if shift == 0 {
        exact
    } else {
        (exact + (1i128 << (shift - 1))) >> shift
    }
}

/// `Σ coef·counts` in Q31.32; exact, since `check_counts` bounds the total records
/// below 2⁶⁴ and `new` every coefficient below 2⁶³.
fn dot(coef: &[i64], counts: &[u64]) -> i128 {
    coef.iter()
        .zip(counts)
        .map(|(&a, &b)| i128::from(a) * i128::from(b))
        .sum()
}

/// The baseline scale `Δ^Q_1 / min_{i≠j} d(i, j)` (0 if every pair is unprotected).
pub fn baseline_scale(metric: &FiniteMetric, q: &Queries) -> Result<f64, DxError> {
    q.check_universe(metric)?;
    let eps = metric.min_offdiag();
    Ok(if eps.is_infinite() {
        0.0
    } else {
        q.sensitivity_l1() / eps
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded_rng;

    #[test]
    fn a_histogram_of_2_64_records_is_refused_before_the_charge() {
        let q = Queries::new(vec![vec![1.0, 1.0, 1.0]]).unwrap();
        let m = DxLaplace::new(&line(), q, vec![4.0]).unwrap();
        let mut acct = Accountant::pure(privq_core::Epsilon::new(100, 1).unwrap());
        let err = m
            .release(&[u64::MAX, 1, 0], &mut acct, &mut seeded_rng(1))
            .unwrap_err();
        assert!(matches!(err, DxError::InvalidValue(_)), "{err}");
        assert!(acct.ledger().is_empty());
        assert!(m.snapped(0, &[u64::MAX, 0, 0]).is_ok());
    }

    fn line() -> FiniteMetric {
        FiniteMetric::euclidean(&[[0.0], [1.0], [3.0]], 1.0).unwrap()
    }

    #[test]
    fn release_charges_before_sampling_and_refuses_past_the_budget() {
        let q = Queries::new(vec![vec![0.0, 1.0, 3.0]]).unwrap();
        let m = DxLaplace::new(&line(), q, vec![1.0]).unwrap();
        // The implied ε-DP charge is max d = 3; a budget of 2 refuses, spends nothing.
        let mut small = Accountant::pure(privq_core::Epsilon::new(2, 1).unwrap());
        let refused = m.release(&[5, 2, 3], &mut small, &mut seeded_rng(0));
        assert!(matches!(refused, Err(DxError::Budget(_))), "{refused:?}");
        assert_eq!(small.spent_epsilon(), None);
        // A malformed histogram is refused before the charge.
        let mut acct = Accountant::pure(privq_core::Epsilon::new(3, 1).unwrap());
        assert!(m.release(&[5, 2], &mut acct, &mut seeded_rng(0)).is_err());
        assert_eq!(acct.spent_epsilon(), None);
        m.release(&[5, 2, 3], &mut acct, &mut seeded_rng(0))
            .unwrap();
        assert_eq!(
            acct.spent_epsilon(),
            Some(privq_core::Epsilon::new(3, 1).unwrap())
        );
        assert!(
            m.release(&[5, 2, 3], &mut acct, &mut seeded_rng(0))
                .is_err()
        );
    }

    #[test]
    fn calibrated_scale_is_never_below_c() {
        let q = Queries::new(vec![vec![1.0, 0.0, 0.0], vec![0.0, 0.0, 1.0]]).unwrap();
        let m = DxLaplace::new(&line(), q, vec![1.0, 0.5]).unwrap();
        assert!(m.scale(0) >= 1.0 && m.scale(0) < 1.01);
        assert!(m.scale(1) >= 0.5 && m.scale(1) < 0.51);
        assert!(m.loss_ratio() <= 1.0);
    }

    #[test]
    fn rejects_unprivate_and_infinite() {
        let q = Queries::new(vec![vec![0.0, 1.0, 3.0]]).unwrap();
        assert!(matches!(
            DxLaplace::new(&line(), q.clone(), vec![0.9]),
            Err(DxError::ConstraintViolated { .. })
        ));
        assert!(matches!(
            DxLaplace::new(&line(), q.clone(), vec![f64::INFINITY]).err(),
            Some(DxError::InfiniteNoise { query: 0 })
        ));
        let m = DxLaplace::new(&line(), q, vec![1.0]).unwrap();
        assert!(matches!(
            m.sample(&[1, 2], &mut seeded_rng(0)),
            Err(DxError::Dimension(_))
        ));
    }

    #[test]
    fn noiseless_when_metric_leaves_pairs_unprotected() {
        let d = FiniteMetric::graph(3, &[(0, 1, 1.0)]).unwrap();
        // Separates {0,1} from 2 only: d = ∞ there, so no noise is needed.
        let q = Queries::new(vec![vec![0.0, 0.0, 1.0]]).unwrap();
        let m = DxLaplace::new(&d, q, vec![0.0]).unwrap();
        assert_eq!(m.sample(&[3, 4, 5], &mut seeded_rng(0)).unwrap(), vec![5.0]);
    }

    #[test]
    fn sample_moments_match_laplace() {
        let q = Queries::new(vec![vec![0.0, 1.0, 3.0]]).unwrap();
        let m = DxLaplace::new(&line(), q, vec![1.0]).unwrap();
        let b = m.scale(0);
        let mut rng = seeded_rng(7);
        let (mut abs, mut sq) = (0.0, 0.0);
        let draws = 100_000;
        for _ in 0..draws {
            let z = m.sample(&[0, 0, 0], &mut rng).unwrap()[0];
            abs += z.abs();
            sq += z * z;
        }
        let (abs, sq) = (abs / draws as f64, sq / draws as f64);
        assert!((abs / b - 1.0).abs() < 0.02, "E|Y| = {abs}");
        assert!((sq / (2.0 * b * b) - 1.0).abs() < 0.04, "E[Y²] = {sq}");
    }

    /// Privacy on neighbours `x' = x − e_i + e_j`: the exact lattice pmf ratio is
    /// ≤ e^{d(i,j)}, and so is the empirical ratio of binned releases (up to
    /// sampling error).
    #[test]
    fn neighbour_ratio_within_metric_budget() {
        let d = line();
        let q = Queries::new(vec![vec![0.0, 1.0, 3.0]]).unwrap();
        let m = DxLaplace::new(&d, q, vec![1.0]).unwrap();
        let x = [10u64, 5, 5];
        for (i, j) in [(0usize, 1usize), (0, 2), (1, 2)] {
            let mut y = x;
            y[i] -= 1;
            y[j] += 1;
            let (s, steps) = m.snapped(0, &x).unwrap();
            let (t, _) = m.snapped(0, &y).unwrap();
            // Exact: max_z exp((|z − t| − |z − s|)/m) = exp(|s − t|/m).
            let exact = (s - t).unsigned_abs() as f64 / steps as f64;
            assert!(
                exact <= d.get(i, j) * (1.0 + 1e-12),
                "pair ({i},{j}): {exact}"
            );
            // Empirical, unit bins with enough mass.
            let draws = 200_000;
            let mut rng = seeded_rng(100 + i as u64 * 3 + j as u64);
            let mut hx = std::collections::HashMap::new();
            let mut hy = std::collections::HashMap::new();
            for _ in 0..draws {
                *hx.entry(m.sample(&x, &mut rng).unwrap()[0].floor() as i64)
                    .or_insert(0u64) += 1;
                *hy.entry(m.sample(&y, &mut rng).unwrap()[0].floor() as i64)
                    .or_insert(0u64) += 1;
            }
            let bound = d.get(i, j).exp();
            for (b, &cx) in &hx {
                let cy = hy.get(b).copied().unwrap_or(0);
                if cx >= 2000 && cy >= 2000 {
                    let r = cx as f64 / cy as f64;
                    assert!(
                        r.max(1.0 / r) <= bound * 1.1,
                        "bin {b}: ratio {r} > e^{}",
                        d.get(i, j)
                    );
                }
            }
        }
    }
}

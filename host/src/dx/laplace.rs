//! The d_X-private Laplace mechanism (eq. 5) and the ε-DP baseline (Definition 4),
//! released exactly on power-of-two grids with the core's discrete Laplace sampler.

use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::sample::DiscreteLaplace;

use super::check::check_laplace;
use super::{DxError, DxSpend, FiniteMetric, Queries};
use crate::accountant::Accountant;

/// Grid steps per unit of noise scale before calibration: `γ_k ≤ c_k·min(1, d_min)/(K′·2¹⁰)`.
const GRID_BITS: i32 = 10;

/// The bound on coefficient magnitudes, in Q31.32 units (`|q| < 2³⁰`): with fewer
/// than 2⁶⁴ records every partial sum of `Q̃x` is below `2⁶²·2⁶⁴ = 2¹²⁶` in
/// magnitude, so the exact answer, its snapping (`+ 2⁶¹` at most) and the noisy
/// lattice point all stay inside `i128` (bounded as the K-norm mechanism bounds
/// its matrix entries).
const MAX_COEF: i64 = 1 << 62;

/// Q31.32: coefficients are stored in units of 2⁻³².
const FRAC: f64 = 4_294_967_296.0;

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
/// effective queries `Q̃ = c ⊙ Q'` satisfying Theorem 1
/// (`Σ_k |Q̃_ki − Q̃_kj|/c_k ≤ d_X(i, j)` for every pair).
///
/// Exactness: every coefficient is rounded to Q31.32 (`|q| < 2³⁰`), so `Q̃_k x` is
/// computed exactly in integers and neighbours `x' = x − e_i + e_j` differ by exactly
/// the rounded coefficient difference `Δ_k`. The answer is snapped to the grid
/// `γ_k = 2^e` (half up) and released as `γ_k(s + Z)` with `Z` exact discrete
/// Laplace of scale `m_k` steps. Snapping moves two answers `Δ_k` apart by at most
/// `⌈|Δ_k|/γ_k⌉` steps, and shifting a discrete Laplace of scale `m_k` by `s` steps
/// changes every probability by at most `e^{s/m_k}`, so the release is d_X-private
/// as soon as the grid-level loss
/// `L(p) = Σ_k ⌈|Δ_k(p)|/γ_k⌉ / m_k ≤ d(p)` for every pair `p` with finite `d(p)`.
/// Construction computes `L(p)/d(p)` for every pair (an upper bound: the float sum
/// carries a margin for its own rounding, see `grid_ratio`) and raises the `m_k`
/// until it is ≤ 1; the privacy proof rests on this check alone, never on how `γ_k`
/// was chosen.
///
/// Calibration to `d_min` (how close `m_k γ_k` gets to `c_k`): the ceiling costs a
/// pair at most one step per query that separates it, `L(p) < Σ_k |Δ_k|/(m_kγ_k) +
/// Σ_{k: Δ_k ≠ 0} 1/m_k`. With `m_k γ_k ≥ c_k` the first sum is Theorem 1's loss,
/// `≤ d(p)`; the grid is chosen so that the second is at most `2⁻¹⁰·d_min ≤ 2⁻¹⁰·d(p)`:
/// `γ_k = 2^e ≤ c_k·min(1, d_min)·2⁻¹⁰/K′` with `K′` the number of noisy queries
/// (each `1/m_k ≤ γ_k/c_k`), where `d_min` is the smallest finite budget of the
/// metric. A pair with `0 < |ΔQ̃| ≪ γ` therefore costs a negligible fraction of its
/// budget, and the deployed scale is within a factor `(1 + 2⁻¹⁰)²` of `c_k` (plus
/// the Q31.32 rounding of the coefficients, which matters only when `c_k·d_min` is
/// near 2⁻³²). The grid is data-independent (`c`, the metric and `K′` are public).
/// A scale needing more than 2⁵² grid steps is refused (`DxError::InvalidValue`)
/// rather than saturated, so `m_k·γ_k ≥ c_k` always holds.
/// On the finest grid, `γ = 2⁻³²`, the ceiling is exact (`Δ_k` is an integer number
/// of steps).
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
        // Each noisy query may add one grid step to a pair's loss: spread 2⁻¹⁰·d_min
        // over them (see the type's docs).
        let noisy = c.iter().filter(|&&ck| ck > 0.0).count().max(1);
        let d_min = metric.min_offdiag().min(1.0);
        let mut rows = Vec::with_capacity(q_eff.rows());
        for (k, &ck) in c.iter().enumerate() {
            let coef = q_eff
                .row(k)
                .iter()
                .map(|&v| {
                    let b = (v * FRAC).round();
                    // 2⁶² is exact in f64, so the comparison is exact; |b| < 2⁶² also
                    // keeps coefficient differences inside i64 (`grid_ratio`).
                    if b.abs() < MAX_COEF as f64 {
                        Ok(b as i64)
                    } else {
                        Err(DxError::InvalidValue(format!(
                            "coefficient {v} exceeds 2^30 in magnitude (the exact answers \
                             are computed in Q31.32)"
                        )))
                    }
                })
                .collect::<Result<Vec<_>, _>>()?;
            let (exp, steps) = if ck > 0.0 {
                // Clamped in f64 before the conversion: `target` can underflow to 0
                // (`c_k·d_min` below the smallest subnormal), whose log2 is −∞.
                let target = ck * d_min / noisy as f64;
                let e = if target > 0.0 {
                    (target.log2().floor() - f64::from(GRID_BITS)).clamp(-32.0, 30.0) as i32
                } else {
                    -32
                };
                (e, grid_steps(ck / f64::from(e).exp2(), k)?)
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
            for (k, r) in mech
                .rows
                .iter_mut()
                .enumerate()
                .filter(|(_, r)| r.steps > 0)
            {
                r.steps = grid_steps(r.steps as f64 * rho * (1.0 + 1e-9), k)?;
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

    /// An upper bound on `max_p L(p)/d(p)`, the grid-level privacy loss of the
    /// worst pair per unit of its budget (∞ if a pair is separated by a noiseless
    /// query). Every term `⌈|Δ_k|/γ_k⌉/m_k` and the sum are positive, so the float
    /// evaluation is within a relative `(K + 3)·2⁻⁵³` of the exact value; the
    /// result is raised by `(K + 4)·2⁻⁵²` to cover that, so a result ≤ 1 certifies
    /// `L(p) ≤ d(p)` exactly.
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
        worst * (1.0 + (self.rows.len() as f64 + 4.0) * f64::EPSILON)
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
        self.rows
            .iter()
            .map(|r| Ok(dot(&r.coef, counts)? as f64 / FRAC))
            .collect()
    }

    fn check_counts(&self, counts: &[u64]) -> Result<(), DxError> {
        if counts.len() != self.n {
            return Err(DxError::Dimension(format!(
                "histogram of {} cells for {} elements",
                counts.len(),
                self.n
            )));
        }
        // With |coefficient| < 2⁶² (checked in `new`) and at most 2⁶⁴ − 1 records,
        // every partial sum of an exact answer is below 2¹²⁶ in magnitude, so `dot`
        // cannot overflow. (No real table reaches 2⁶⁴ records; the bound is what
        // makes the sum safe.)
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
            let exact = dot(&r.coef, counts)?;
            match &r.noise {
                None => out.push(exact as f64 / FRAC),
                Some(noise) => {
                    let steps = snap(exact, r.exp);
                    let z = i128::from(noise.sample(rng)?);
                    let noisy = steps.checked_add(z).ok_or_else(overflow)?;
                    out.push(noisy as f64 * f64::from(r.exp).exp2());
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
        Ok((snap(dot(&r.coef, counts)?, r.exp), r.steps))
    }
}

/// The largest noise scale in grid steps: `2⁵²`, so that `⌈c/γ⌉` is computed
/// exactly in f64 and never saturates the `u64` conversion.
const MAX_STEPS: f64 = 4_503_599_627_370_496.0;

/// `⌈steps⌉` as a grid-step count, at least 1 (a noisy query always gets noise),
/// refused with a typed error above [`MAX_STEPS`] (the `as u64` conversion would
/// otherwise saturate and deploy less noise than `c_k`).
fn grid_steps(steps: f64, query: usize) -> Result<u64, DxError> {
    let s = steps.ceil();
    // NaN is refused too.
    if s.is_nan() || s > MAX_STEPS {
        return Err(DxError::InvalidValue(format!(
            "query {query}: the noise scale needs {steps:e} grid steps, more than 2^52 \
             (the noise scale is too large relative to the metric's smallest distance \
             for the exact grid)"
        )));
    }
    Ok((s as u64).max(1))
}

/// Rounds a Q31.32 value to the nearest multiple of `2^exp` (half up), in steps.
/// `|exact| < 2¹²⁶` ([`dot`]), so adding half a step (`≤ 2⁶¹`) cannot overflow.
fn snap(exact: i128, exp: i32) -> i128 {
    let shift = (exp + 32) as u32;
    if shift == 0 {
        exact
    } else {
        (exact + (1i128 << (shift - 1))) >> shift
    }
}

/// `Σ coef·counts` in Q31.32, exactly. `new` bounds every coefficient below 2⁶²
/// and `check_counts` the total below 2⁶⁴, so every partial sum is below 2¹²⁶ in
/// magnitude and the checked arithmetic never fails for a mechanism built by
/// `new`; it is checked all the same, and an overflow is a typed error.
fn dot(coef: &[i64], counts: &[u64]) -> Result<i128, DxError> {
    coef.iter()
        .zip(counts)
        .try_fold(0i128, |acc, (&a, &b)| {
            i128::from(a)
                .checked_mul(i128::from(b))
                .and_then(|t| acc.checked_add(t))
        })
        .ok_or_else(overflow)
}

fn overflow() -> DxError {
    DxError::InvalidValue("the exact answer overflowed the fixed-point range".into())
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

    /// The issue's examples of a pair with `0 < |ΔQ̃| ≪ γ` under the old grid
    /// (`γ ≈ c/2¹⁰` regardless of `d_min`): points 0, 10⁻⁵, 1 with q = (0, 10⁻⁶, 1)
    /// deployed 97.66 for c ≈ 1.00, and the elevation query on the 741 US cities at
    /// ε = 1 deployed 4 648 for c ≈ 4 354. Calibrated to `d_min`, both are within 1 %.
    #[test]
    fn the_deployed_scale_is_within_one_percent_of_c_when_d_min_is_small() {
        let d = FiniteMetric::euclidean(&[[0.0], [1e-5], [1.0]], 1.0).unwrap();
        let q = vec![0.0, 1e-6, 1.0];
        let c = crate::dx::psa::single_query_scale(&d, &q).unwrap();
        assert!((c - 1.0).abs() < 1e-4, "{c}");
        let m = DxLaplace::new(&d, Queries::new(vec![q]).unwrap(), vec![c]).unwrap();
        let ratio = m.scale(0) / c;
        eprintln!("points 0, 1e-5, 1: deployed {} vs analytic {c}", m.scale(0));
        assert!(
            (1.0..=1.01).contains(&ratio),
            "deployed {} vs {c}",
            m.scale(0)
        );
        assert!(m.loss_ratio() <= 1.0);

        let Some(dir) = crate::data::shared_data_dir("the US-cities d_X grid example") else {
            return;
        };
        let cities = crate::dx::universe::load_cities(&dir.join("us_cities.csv"), 741).unwrap();
        let d = FiniteMetric::euclidean(&cities.points, 1.0).unwrap();
        let c = crate::dx::psa::single_query_scale(&d, &cities.elevation).unwrap();
        let q = Queries::new(vec![cities.elevation]).unwrap();
        let m = DxLaplace::new(&d, q, vec![c]).unwrap();
        let ratio = m.scale(0) / c;
        eprintln!(
            "US cities, elevation: deployed {} vs analytic {c}",
            m.scale(0)
        );
        assert!(
            (1.0..=1.01).contains(&ratio),
            "deployed {} vs analytic {c}",
            m.scale(0)
        );
        assert!(m.loss_ratio() <= 1.0);
    }

    /// The ceiling in `grid_ratio` is what keeps the lattice loss within the budget:
    /// two points at d = 1/2, q = (0, a) with `a·2¹⁰ = 1 365.1…`, c = 2a. The grid is
    /// γ = 2⁻¹⁰ and `⌈c/γ⌉ = 2 731` steps, but a pair gap of a (1 365.1 steps) can
    /// snap to 1 366 steps, a loss of 1 366/2 731 > 1/2. Counting the gap by its
    /// floor would accept 2 731 steps; the ceiling raises them, and the exact lattice
    /// loss of neighbours whose snapped answers are 1 366 steps apart stays ≤ 1/2.
    #[test]
    fn the_ceiling_in_the_grid_ratio_raises_the_noise_where_the_floor_would_not() {
        let a = 1365.1 / 1024.0;
        let d = FiniteMetric::euclidean(&[[0.0], [0.5]], 1.0).unwrap();
        let c = 2.0 * a * (1.0 + 1e-12);
        let m = DxLaplace::new(&d, Queries::new(vec![vec![0.0, a]]).unwrap(), vec![c]).unwrap();
        let (_, steps) = m.snapped(0, &[0, 0]).unwrap();
        assert_eq!(m.scale(0) / steps as f64, 2f64.powi(-10));
        let floor_steps = (c * 1024.0).ceil() as u64;
        assert_eq!(floor_steps, 2731);
        assert!(steps > floor_steps, "the ceiling must raise the steps");
        // Within the calibration's (1 + 2⁻¹⁰)² of c.
        assert!(steps as f64 <= c * 1024.0 * 1.002, "{steps}");
        // Neighbours (one record moves from point 0 to point 1) whose snapped
        // answers are a whole 1 366 steps apart.
        let (x, gap) = (1..5000u64)
            .find_map(|n| {
                let (s, _) = m.snapped(0, &[1, n - 1]).unwrap();
                let (t, _) = m.snapped(0, &[0, n]).unwrap();
                let gap = (t - s).unsigned_abs();
                (gap == 1366).then_some((n, gap))
            })
            .expect("some neighbours realise the ceiling");
        assert!(x > 0);
        assert!(
            gap as f64 / floor_steps as f64 > 0.5,
            "the floor would break the claim"
        );
        assert!(
            gap as f64 / steps as f64 <= 0.5,
            "the real mechanism holds it"
        );
    }

    /// Review D1: `c_k·d_min` underflows to 0 (d_min = 5e−324), whose log2 is −∞;
    /// the grid exponent is clamped in f64 and the construction neither panics nor
    /// wraps.
    #[test]
    fn an_underflowing_grid_target_neither_panics_nor_wraps() {
        let t = 5e-324;
        let d =
            FiniteMetric::from_matrix(3, vec![0.0, t, 1.0, t, 0.0, 1.0, 1.0, 1.0, 0.0]).unwrap();
        let q = Queries::new(vec![vec![0.0, 0.0, 0.4]]).unwrap();
        match DxLaplace::new(&d, q, vec![0.4]) {
            Ok(m) => {
                assert!(m.loss_ratio() <= 1.0);
                assert!(m.scale(0) >= 0.4 && m.scale(0) < 0.41, "{}", m.scale(0));
                let (_, steps) = m.snapped(0, &[0, 0, 0]).unwrap();
                assert!(steps >= 1);
            }
            Err(e) => assert!(matches!(e, DxError::InvalidValue(_)), "{e}"),
        }
        // A noisy query always gets at least one step, even when c_k/γ_k underflows.
        assert_eq!(grid_steps(0.0, 0).unwrap(), 1);
    }

    /// Review D2: points 0, 2⁻⁶⁰, 1 with q = (0, 0, 2²⁹) and c = 2³³ need
    /// `c/γ ≈ 2⁶⁵` steps; `as u64` saturated and deployed ≈ c/2. Now refused.
    #[test]
    fn a_step_count_beyond_2_52_is_refused_not_saturated() {
        let d = FiniteMetric::euclidean(&[[0.0], [2f64.powi(-60)], [1.0]], 1.0).unwrap();
        let q = Queries::new(vec![vec![0.0, 0.0, 2f64.powi(29)]]).unwrap();
        let r = DxLaplace::new(&d, q, vec![2f64.powi(33)]);
        assert!(matches!(r, Err(DxError::InvalidValue(_))), "{r:?}");
        assert!(grid_steps(2f64.powi(52), 0).is_ok());
        assert!(grid_steps(2f64.powi(52) + 1.0, 0).is_err());
        assert!(grid_steps(f64::NAN, 0).is_err());
    }

    /// Review D3: the `(K + 4)·ε` margin in `grid_ratio` matters. d = 1/3 (not exact
    /// in f64), q = (0, 2⁻³²), c = 2⁻³²/(1/3): on γ = 2⁻³² the loss 1/3 steps over
    /// d = 1/3 evaluates to 1 in f64, within rounding of the true ratio; the margin
    /// pushes it above 1 and the steps from 3 to 4. Without it they stay at 3.
    #[test]
    fn the_float_margin_in_the_grid_ratio_raises_the_steps() {
        let third = 1.0 / 3.0;
        let d = FiniteMetric::from_matrix(2, vec![0.0, third, third, 0.0]).unwrap();
        let a = 2f64.powi(-32);
        let m = DxLaplace::new(
            &d,
            Queries::new(vec![vec![0.0, a]]).unwrap(),
            vec![a / third],
        )
        .unwrap();
        assert_eq!(m.snapped(0, &[0, 0]).unwrap().1, 4);
        assert!(m.loss_ratio() <= 1.0);
    }

    #[test]
    fn coefficients_are_bounded_so_the_exact_answer_cannot_overflow() {
        let d = FiniteMetric::euclidean(&[[0.0], [1.0]], 1.0).unwrap();
        let big = 2f64.powi(30);
        let refused = DxLaplace::new(&d, Queries::new(vec![vec![0.0, big]]).unwrap(), vec![big]);
        assert!(
            matches!(refused, Err(DxError::InvalidValue(_))),
            "{refused:?}"
        );
        let below = big - 1.0;
        let m = DxLaplace::new(
            &d,
            Queries::new(vec![vec![-below, below]]).unwrap(),
            vec![2.0 * big],
        )
        .unwrap();
        // The largest histogram allowed, on the largest coefficients: no overflow.
        let mut acct = Accountant::pure(privq_core::Epsilon::new(1, 1).unwrap());
        let z = m
            .release(&[0, u64::MAX], &mut acct, &mut seeded_rng(3))
            .unwrap();
        assert!(z[0] > 1.9e28, "{z:?}");
        assert!(m.exact_answers(&[u64::MAX, 0]).unwrap()[0] < -1.9e28);
        // `dot` itself reports an overflow as a typed error.
        assert!(matches!(
            dot(&[i64::MAX, i64::MAX], &[u64::MAX, u64::MAX]),
            Err(DxError::InvalidValue(_))
        ));
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

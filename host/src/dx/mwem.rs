//! The d_X-private MWEM (Algorithm 2, Theorem 7) on the shared MW engine.

use privq_core::rand_core::{CryptoRng, Rng};

use super::check::check_lipschitz;
use super::exact::{ExactQueries, bound_refusal, floor_div_pow2, public_rounded, rescale, total};
use super::{DxError, DxExponential, DxLaplace, DxSpend, FiniteMetric, Queries};
use crate::accountant::Accountant;
use crate::central::mw::MwState;
use crate::data::MemoryCap;
use crate::query::Query;

/// Which iterates Algorithm 2's "avg_{t<T} y^t" averages (ambiguous in the paper;
/// `docs/src/dx.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Averaging {
    /// `y¹ … y^T` (the MWEM literature's practice; default).
    #[default]
    OneToT,
    /// `y⁰ … y^{T−1}` (the literal reading).
    ZeroToTMinusOne,
}

/// `MWEM(x, Q', c, T)`: T rounds of (exponential-mechanism query choice with scale
/// `2cT`, Laplace measurement with scale `2cT`, multiplicative-weights update);
/// each round is `d_X/(2T)`-private per step, so the whole run is d_X-private when
/// `|q'_i − q'_j| ≤ d_X(i, j)` (Theorem 7).
///
/// privq's reading of Algorithm 2's step 3 (`docs/src/dx.md`): by default the
/// update uses the effective query `q̃ = c·q'` on both sides
/// (`y_i ← y_i·exp(q̃_i (m_t − q̃(y))/(2n))`); `literal` keeps the paper's mixed
/// scales. Noise is drawn exactly ([`DxExponential`], [`DxLaplace`]).
///
/// ```
/// use privq_host::accountant::Accountant;
/// use privq_host::dx::{DxMwem, FiniteMetric, Queries};
/// use privq_host::{Epsilon, seeded_rng};
/// let d = FiniteMetric::euclidean(&[[0.0], [1.0], [2.0], [3.0]], 1.0)?;
/// let q_prime = Queries::new(vec![vec![0.0, 0.0, 1.0, 1.0], vec![0.0, 1.0, 2.0, 3.0]])?;
/// let mwem = DxMwem::new(q_prime, 0.01, 5)?;
/// let mut accountant = Accountant::pure(Epsilon::new(3, 1)?); // ε-DP charge: max d = 3
/// let out = mwem.run(&d, &[100, 0, 0, 300], &mut accountant, &mut seeded_rng(9))?; // fixed seed: tests only
/// assert!((out.synthetic.iter().sum::<f64>() - 400.0).abs() < 1e-6);
/// # Ok::<(), privq_host::dx::DxError>(())
/// ```
#[derive(Debug, Clone)]
pub struct DxMwem {
    q_prime: Queries,
    c: f64,
    rounds: usize,
    /// Which iterates are averaged.
    pub averaging: Averaging,
    /// Keep the paper's literal step-3 scales (Algorithm 2 as printed).
    pub literal: bool,
}

/// An MWEM result.
#[derive(Debug, Clone, PartialEq)]
pub struct DxMwemOutput {
    /// The averaged synthetic histogram (real-valued, `‖y‖₁ = n`).
    pub synthetic: Vec<f64>,
    /// `c·q'(y)` for every query.
    pub answers: Vec<f64>,
    /// The query index chosen in each round.
    pub chosen: Vec<usize>,
    /// What the run spent: 2T steps of `d_X/(2T)` compose to `d_X` (Theorem 7).
    pub spend: DxSpend,
}

impl DxMwem {
    /// For `Q'`, `c > 0` and `T ≥ 1` rounds.
    pub fn new(q_prime: Queries, c: f64, rounds: usize) -> Result<Self, DxError> {
        if !(c > 0.0 && c.is_finite()) || rounds == 0 {
            return Err(DxError::InvalidValue(format!(
                "MWEM needs c > 0 and T ≥ 1, got c = {c}, T = {rounds}"
            )));
        }
        Ok(DxMwem {
            q_prime,
            c,
            rounds,
            averaging: Averaging::default(),
            literal: false,
        })
    }

    /// The iteration count `T* = (n·√ln N / (5c·ln|Q|))^{2/3}` of Theorem 8 (≥ 1).
    pub fn optimal_rounds(n: f64, universe: usize, queries: usize, c: f64) -> usize {
        let lq = (queries.max(2) as f64).ln();
        let t = (n * (universe as f64).ln().sqrt() / (5.0 * c * lq)).powf(2.0 / 3.0);
        t.round().max(1.0) as usize
    }

    /// Each step's noise scale `2cT` and its share `1/(2T)` of the metric: the 2T
    /// steps of a run compose to d_X (Theorem 7).
    fn round_noise(&self) -> (f64, f64) {
        let t2 = 2.0 * self.rounds as f64;
        (t2 * self.c, 1.0 / t2)
    }

    /// Runs Algorithm 2 after checking Theorem 7 on `metric`, charging
    /// `accountant` the ε-DP guarantee its d_X spend implies before any sampling.
    pub fn run<R: Rng + CryptoRng + ?Sized>(
        &self,
        metric: &FiniteMetric,
        counts: &[u64],
        accountant: &mut Accountant,
        rng: &mut R,
    ) -> Result<DxMwemOutput, DxError> {
        check_lipschitz(metric, &self.q_prime)?.require()?;
        let n_el = self.q_prime.cols();
        if counts.len() != n_el {
            return Err(DxError::Dimension(format!(
                "histogram of {} cells for {n_el} elements",
                counts.len()
            )));
        }
        // n = Σx is public (the d_X relation moves records, n stays).
        let n_int = total(counts)?;
        let n = n_int as f64;
        if n == 0.0 {
            return Err(DxError::InvalidValue(
                "MWEM needs a non-empty histogram".into(),
            ));
        }
        let (scale, share) = self.round_noise();
        let round_metric = metric.scaled(share)?;
        // M_{Exp,2Tc} on the error |q̃(y) − q̃(x)| (q̃ = c·q′) is, in exact
        // arithmetic, M_{Exp,2T} on |q̃(y)/c − q′(x)|: the selection runs at scale
        // 2T on scores whose data part, q′(x), is summed exactly ([`ExactQueries`]).
        // Not the identical sampled distribution (the sampler's grid and effective
        // scale differ unless c is a power of two; ~10⁻⁷ in probability for c = 3),
        // but the same guarantee: the sampler at scale 2T keeps its scale ≥ 2T.
        let em = DxExponential::new(2.0 * self.rounds as f64, round_metric.min_offdiag())?;
        let q_eff = self
            .q_prime
            .scale_rows(&vec![self.c; self.q_prime.rows()])?;
        // Every round's measurement mechanism is built (and its grid-level check
        // passed) before the charge: they depend on the public queries only.
        let measure = (0..q_eff.rows())
            .map(|k| {
                let row = Queries::new(vec![q_eff.row(k).to_vec()])?;
                DxLaplace::new(&round_metric, row, vec![scale])
            })
            .collect::<Result<Vec<_>, _>>()?;
        // The exact scores, checked on public inputs before the charge: the data's
        // answers live on the queries' grid 2^−f; the model's (public) answers are
        // rounded to the fixed grid 2^−F, F = max(f, 2 − g) (γ = 2^g the selection
        // grid, so the rounding is at most γ/8 and the floor below needs no
        // multiplication). With A = max|a_kj| (units of 2^−f):
        // |q′(x)|·2^(F−f) ≤ A·n·2^(F−f) and |model| ≤ n·max_k(|lo_k| + span_k)/c
        // (a convex combination of row entries, floating-point slack included).
        let exact = ExactQueries::new(&self.q_prime)?;
        let f_bits = exact.frac_bits();
        let grid = em.grid_exp();
        let big_f = (f_bits as i32).max(2 - grid) as u32;
        let prepared = prepare(&q_eff)?;
        let model_bound = prepared
            .iter()
            .map(|(_, lo, span)| lo.abs() + span)
            .fold(0.0, f64::max)
            * n
            / self.c
            * (1.0 + 1e-9)
            + 1.0;
        let limit = 2f64.powi(124);
        let data_bound = (big_f - f_bits < 127)
            .then(|| exact.max_abs().checked_mul(u128::from(n_int)))
            .flatten()
            .and_then(|v| v.checked_mul(1u128 << (big_f - f_bits)))
            .filter(|&v| v < 1u128 << 124);
        let model_units = model_bound * (big_f as f64).exp2();
        let (Some(data_bound), true) = (data_bound, model_units < limit) else {
            return Err(bound_refusal("d_X MWEM"));
        };
        // |gap| ≤ data + model < 2¹²⁵; its floor on the selection grid is below:
        let gap_bound = data_bound + model_units.ceil() as u128;
        if gap_bound
            .checked_shr((big_f as i32 + grid) as u32)
            .unwrap_or(0)
            >= 10u128.pow(38)
        {
            return Err(bound_refusal("d_X MWEM"));
        }
        // 2T steps of d_X/(2T) compose to d_X (Theorem 7): charged before sampling.
        let spend = DxSpend::new(metric.clone());
        spend.charge(accountant, "d_X MWEM")?;
        // Cannot fail after the public bound (kept checked).
        let true_x = (0..self.q_prime.rows())
            .map(|k| rescale(exact.answer(k, counts)?, f_bits, big_f))
            .collect::<Result<Vec<_>, _>>()?;
        let mut state = MwState::uniform(n_el, MemoryCap::default())?;
        let mut sum = vec![0.0; n_el];
        let mut chosen = Vec::with_capacity(self.rounds);
        let eff_answer = |s: &MwState, k: usize| {
            let (q, lo, span) = &prepared[k];
            n * (lo + span * s.evaluate(q))
        };
        for _ in 0..self.rounds {
            if self.averaging == Averaging::ZeroToTMinusOne {
                add(&mut sum, state.probabilities());
            }
            // The model's answer is public (post-processing of released
            // measurements), rounded to 2^−F; the data's answer is exact; their gap
            // is floored to the selection grid exactly. None of these can fail
            // after the public bound above.
            let units = (0..q_eff.rows())
                .map(|k| {
                    let model = public_rounded(eff_answer(&state, k) / self.c, big_f)?;
                    let gap = model
                        .checked_sub(true_x[k])
                        .ok_or_else(|| {
                            debug_assert!(false, "unreachable after the public bound");
                            DxError::InvalidValue("a score does not fit 128 bits".into())
                        })?
                        .unsigned_abs();
                    let units = floor_div_pow2(gap, 1, big_f as i32 + grid)?;
                    i128::try_from(units)
                        .map_err(|_| DxError::InvalidValue("a score does not fit 128 bits".into()))
                })
                .collect::<Result<Vec<_>, DxError>>()?;
            let k = em.select_units(&units, rng)?;
            chosen.push(k);
            let m_t = measure[k].sample(counts, rng)?[0];
            let (q, lo, span) = &prepared[k];
            let before = eff_answer(&state, k);
            // Step 3: exponent q̃_i (m_t − q̃(y))/(2n) = f_i · span (m_t − q̃(y))/(2n) + const.
            let gap = if self.literal {
                m_t - before / self.c
            } else {
                m_t - before
            };
            let coef = if self.literal { span / self.c } else { *span };
            state.update_known(
                q,
                coef * gap / (2.0 * n),
                (before / n - lo) / span.max(f64::MIN_POSITIVE),
            );
            if self.averaging == Averaging::OneToT {
                add(&mut sum, state.probabilities());
            }
        }
        let synthetic: Vec<f64> = sum.iter().map(|p| p * n / self.rounds as f64).collect();
        let answers = q_eff.answers(&synthetic);
        Ok(DxMwemOutput {
            synthetic,
            answers,
            chosen,
            spend,
        })
    }
}

/// The MW engine takes [0,1] queries: q = lo + span·f, and shifts of f do not
/// change a normalised update.
fn prepare(q_eff: &Queries) -> Result<Vec<(Query, f64, f64)>, DxError> {
    let mut prepared = Vec::with_capacity(q_eff.rows());
    for k in 0..q_eff.rows() {
        let r = q_eff.row(k);
        let lo = r.iter().copied().fold(f64::INFINITY, f64::min);
        let span = r.iter().copied().fold(f64::NEG_INFINITY, f64::max) - lo;
        let f = r
            .iter()
            .map(|v| if span > 0.0 { (v - lo) / span } else { 0.0 })
            .collect();
        prepared.push((Query::dense(f)?, lo, span));
    }
    Ok(prepared)
}

fn add(sum: &mut [f64], p: &[f64]) {
    for (s, v) in sum.iter_mut().zip(p) {
        *s += v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An accountant that affords every release of these tests.
    fn generous() -> Accountant {
        Accountant::pure(privq_core::Epsilon::new(1_000_000, 1).unwrap())
    }

    #[test]
    fn a_failure_that_does_not_depend_on_the_data_costs_nothing() {
        // Exactly Lipschitz queries: the per-round grid check can fail by one
        // floating-point step. It runs before the charge, so a failure spends nothing.
        let d = FiniteMetric::euclidean(&[[0.2], [0.9]], 1.0).unwrap();
        let q = Queries::new(vec![vec![0.2, 0.9]]).unwrap();
        let mwem = DxMwem::new(q, 0.1, 7).unwrap();
        let mut acct = generous();
        match mwem.run(&d, &[3, 4], &mut acct, &mut seeded_rng(1)) {
            Ok(_) => assert!(acct.spent_epsilon().is_some()),
            Err(e) => assert_eq!(acct.spent_epsilon(), None, "charged, then failed: {e}"),
        }
    }
    use crate::seeded_rng;

    /// The review's pair (rev2) for MWEM: x = (n−3, 3, 0…), x′ = (n−4, 4, 0…), one
    /// record moved distance 1, c = 2⁻¹⁰, T = 1, 10 zero-coefficient far cells.
    /// Before, MWEM released on x and failed after the charge on x′. Now both
    /// refuse before any charge with the same message; with n = 2⁴ both release.
    #[test]
    fn refusals_depend_on_public_inputs_only() {
        let p2 = |k: i32| 2f64.powi(k);
        let far = 10;
        let mut pts: Vec<[f64; 1]> = vec![[0.0], [1.0]];
        pts.extend((0..far).map(|i| [p2(36) + i as f64]));
        let d = FiniteMetric::euclidean(&pts, 1.0).unwrap();
        let mut r1 = vec![p2(34) - p2(-19), p2(34) + 0.5];
        r1.extend(vec![0.0; far]);
        let mut r2 = vec![p2(-73), 0.0];
        r2.extend(vec![0.0; far]);
        let mwem = DxMwem::new(Queries::new(vec![r1, r2]).unwrap(), p2(-10), 1).unwrap();
        let run = |n: u64, k: u64| {
            let mut counts = vec![n - k, k];
            counts.extend(vec![0; far]);
            let mut acct = Accountant::pure(privq_core::Epsilon::new(1u64 << 50, 1).unwrap());
            let r = mwem.run(&d, &counts, &mut acct, &mut seeded_rng(1));
            (
                r.map(|_| ()).map_err(|e| e.to_string()),
                acct.spent_epsilon().is_some(),
            )
        };
        let (a, charged_a) = run(1 << 20, 3);
        let (b, charged_b) = run(1 << 20, 4);
        assert!(a.is_err(), "{a:?}");
        assert_eq!(a, b);
        assert!(!charged_a && !charged_b, "refused after a charge");
        // Small coefficients cannot rescue a large n·max|a|: still refused; small
        // queries on the same metric release on both sides.
        let mut r1 = vec![0.0, 0.5];
        r1.extend(vec![0.0; far]);
        let mut r2 = vec![p2(-73), 0.0];
        r2.extend(vec![0.0; far]);
        let mwem = DxMwem::new(Queries::new(vec![r1, r2]).unwrap(), p2(-10), 1).unwrap();
        for k in [3, 4] {
            let mut counts = vec![16 - k, k];
            counts.extend(vec![0; far]);
            let mut acct = Accountant::pure(privq_core::Epsilon::new(1u64 << 50, 1).unwrap());
            mwem.run(&d, &counts, &mut acct, &mut seeded_rng(1))
                .unwrap();
            assert!(acct.spent_epsilon().is_some());
        }
    }

    #[test]
    fn each_step_gets_one_2t_th_of_the_metric() {
        // Exact: a split that forgot T (or the two steps per round) would read 2c
        // or cT here; the audit case runs T = 1, where such a split is invisible.
        let q = Queries::new(vec![vec![0.0, 1.0]]).unwrap();
        for (c, t, scale, share) in [
            (1.0, 1, 2.0, 0.5),
            (0.5, 3, 3.0, 1.0 / 6.0),
            (2.0, 10, 40.0, 0.05),
        ] {
            let mwem = DxMwem::new(q.clone(), c, t).unwrap();
            assert_eq!(mwem.round_noise(), (scale, share), "c = {c}, T = {t}");
        }
    }

    #[test]
    fn fits_a_smooth_instance_and_checks_theorem7() {
        let pts: Vec<[f64; 1]> = (0..8).map(|i| [i as f64]).collect();
        let d = FiniteMetric::euclidean(&pts, 1.0).unwrap();
        let q = Queries::new(
            (0..8)
                .map(|t| (0..8).map(|i| if i <= t { 1.0 } else { 0.0 }).collect())
                .collect(),
        )
        .unwrap();
        let counts = [500, 0, 0, 0, 0, 0, 0, 1500];
        // c·q' = q with c = 1: q' is 1-Lipschitz on the unit-spaced line.
        let mwem = DxMwem::new(q.clone(), 1.0, 10).unwrap();
        let out = mwem
            .run(&d, &counts, &mut generous(), &mut seeded_rng(3))
            .unwrap();
        let truth = q.answers(&counts.map(|v| v as f64));
        let err = out
            .answers
            .iter()
            .zip(&truth)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        // Theorem 8's bound with c q' = q: 2n√(ln N/T) + 10Tc ln|Q|.
        let bound = 2.0 * 2000.0 * (8f64.ln() / 10.0).sqrt() + 10.0 * 10.0 * 1.0 * 8f64.ln();
        assert!(err < bound, "max error {err} vs bound {bound}");
        let initial = truth
            .iter()
            .zip(1..)
            .map(|(t, k)| (t - 2000.0 * k as f64 / 8.0).abs())
            .fold(0.0, f64::max);
        assert!(
            err < initial,
            "MWEM did not improve on uniform: {err} vs {initial}"
        );
        // A query steeper than d is refused.
        let steep = Queries::new(vec![vec![0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]).unwrap();
        assert!(matches!(
            DxMwem::new(steep, 1.0, 2).unwrap().run(
                &d,
                &counts,
                &mut generous(),
                &mut seeded_rng(0)
            ),
            Err(DxError::ConstraintViolated { .. })
        ));
    }
}

//! The d_X-private Small Database mechanism (Algorithm 1, Theorem 5), with exact
//! enumeration of the candidate range under a size cap.

use privq_core::rand_core::{CryptoRng, Rng};

use super::check::check_lipschitz;
use super::exact::{ExactQueries, bound_refusal, ceil_div_pow2, total};
use super::{DxError, DxExponential, DxSpend, FiniteMetric, Queries};
use crate::accountant::Accountant;

/// `SmallDB(x, Q', c, α)`: samples a synthetic histogram `y` with `‖y‖₁ = m =
/// ⌈ln|Q'|/α²⌉` from `M_{Exp,c}` with utility (7)
/// `u'(x, y) = −c·max_{q'} |q'(x) − q'(y)|`, and answers `q ∈ Q` by `c·q'(y)`.
///
/// privq's reading of Algorithm 1 (`docs/src/dx.md`): by default `q'(y)` is
/// normalised as `(n/‖y‖₁)⟨q', y⟩` (n is public in the bounded model); `literal`
/// reproduces the paper's un-normalised text.
///
/// ```
/// use privq_host::accountant::Accountant;
/// use privq_host::dx::{FiniteMetric, Queries, SmallDb};
/// use privq_host::{Epsilon, seeded_rng};
/// let d = FiniteMetric::euclidean(&[[0.0], [1.0], [2.0]], 1.0)?;
/// let q_prime = Queries::new(vec![vec![0.0, 0.5, 1.0]])?; // 0.5-Lipschitz ≤ d
/// let db = SmallDb::new(q_prime, 2.0, 1.0)?;
/// let mut accountant = Accountant::pure(Epsilon::new(2, 1)?); // ε-DP charge: max d = 2
/// let out = db.run(&d, &[6, 3, 1], &mut accountant, &mut seeded_rng(4))?; // fixed seed: tests only
/// assert_eq!(out.synthetic.iter().sum::<u64>(), 1);
/// # Ok::<(), privq_host::dx::DxError>(())
/// ```
#[derive(Debug, Clone)]
pub struct SmallDb {
    q_prime: Queries,
    c: f64,
    m: usize,
    /// Largest candidate count that is enumerated (default 10⁶).
    pub cap: u64,
    /// Use the paper's un-normalised `q'(y)` (Algorithm 1 as printed).
    pub literal: bool,
}

/// A SmallDB result.
#[derive(Debug, Clone, PartialEq)]
pub struct SmallDbOutput {
    /// The synthetic histogram `y`, `‖y‖₁ = m`.
    pub synthetic: Vec<u64>,
    /// `c·q'(y)` for every query.
    pub answers: Vec<f64>,
    /// The number of candidates enumerated.
    pub candidates: usize,
    /// What the release spent (Theorem 5: the metric it was checked against).
    pub spend: DxSpend,
}

impl SmallDb {
    /// For `Q'`, scalar `c > 0` and accuracy `α > 0` (`m = max(1, ⌈ln|Q'|/α²⌉)`).
    pub fn new(q_prime: Queries, c: f64, alpha: f64) -> Result<Self, DxError> {
        if !(alpha > 0.0 && alpha.is_finite()) {
            return Err(DxError::InvalidValue(format!(
                "alpha must be positive, got {alpha}"
            )));
        }
        let m = ((q_prime.rows() as f64).ln() / (alpha * alpha))
            .ceil()
            .max(1.0);
        if m > 1e6 {
            return Err(DxError::TooLarge {
                size: m,
                cap: 1_000_000,
            });
        }
        Ok(SmallDb {
            q_prime,
            c,
            m: m as usize,
            cap: 1_000_000,
            literal: false,
        })
    }

    /// The synthetic database size `m`.
    pub fn size(&self) -> usize {
        self.m
    }

    /// `|R| = C(m+N−1, N−1)` as a float.
    pub fn range_size(&self) -> f64 {
        let (m, n) = (self.m as f64, self.q_prime.cols() as f64);
        (1..=self.m)
            .map(|t| (n - 1.0 + t as f64) / t as f64)
            .product::<f64>()
            .max(if m == 0.0 { 1.0 } else { 0.0 })
    }

    /// The candidates' utilities `u'(x, y)` in enumeration order, with the candidates
    /// (floating point, for reports: the selection uses the exact integer
    /// scores).
    pub fn utilities(&self, counts: &[u64]) -> Result<(Vec<Vec<u64>>, Vec<f64>), DxError> {
        let scores = self.scores(counts)?;
        let unit = (-(scores.frac_bits as f64)).exp2() / scores.den as f64;
        let utils = scores
            .worst
            .iter()
            .map(|&w| -self.c * w as f64 * unit)
            .collect();
        Ok((scores.candidates, utils))
    }

    /// The candidates and, exactly, `max_{q′} |norm·q′(y) − q′(x)|` for each: the
    /// sums over the data are integer sums on the queries' dyadic grid
    /// ([`ExactQueries`]), never rounded.
    fn scores(&self, counts: &[u64]) -> Result<Scores, DxError> {
        let size = self.range_size();
        if size > self.cap as f64 {
            return Err(DxError::TooLarge {
                size,
                cap: self.cap,
            });
        }
        let n_el = self.q_prime.cols();
        if counts.len() != n_el {
            return Err(DxError::Dimension(format!(
                "histogram of {} cells for {n_el} elements",
                counts.len()
            )));
        }
        let exact = ExactQueries::new(&self.q_prime)?;
        let n = total(counts)?;
        let m = self.m as u64;
        // norm·q′(y) − q′(x) = (num_y·q′(y) − num_x·q′(x))/den.
        let (num_y, num_x, den) = if self.literal { (1, 1, 1) } else { (n, m, m) };
        // Public: refused (the same way for every histogram of total n) unless every
        // intermediate below fits; after this the checked operations cannot fail.
        self.worst_bound(&exact, n)?;
        let too_large = || {
            debug_assert!(false, "unreachable after the public bound");
            DxError::InvalidValue("a score does not fit 128 bits".into())
        };
        let qx = (0..self.q_prime.rows())
            .map(|k| {
                exact
                    .answer(k, counts)?
                    .checked_mul(i128::from(num_x))
                    .ok_or_else(too_large)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut candidates = Vec::new();
        let mut worst = Vec::new();
        let mut failed = None;
        let mut y = vec![0u64; n_el];
        enumerate(&mut y, 0, m, &mut |y| {
            if failed.is_some() {
                return;
            }
            let w = qx.iter().enumerate().try_fold(0u128, |w, (k, &ax)| {
                let ay = exact
                    .answer(k, y)?
                    .checked_mul(i128::from(num_y))
                    .ok_or_else(too_large)?;
                let gap = ay.checked_sub(ax).ok_or_else(too_large)?;
                Ok::<_, DxError>(w.max(gap.unsigned_abs()))
            });
            match w {
                Ok(w) => {
                    candidates.push(y.to_vec());
                    worst.push(w);
                }
                Err(e) => failed = Some(e),
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(Scores {
            candidates,
            worst,
            frac_bits: exact.frac_bits(),
            den: u128::from(den),
        })
    }

    /// A public bound `W` on every `worst` and on every intermediate of
    /// [`SmallDb::scores`], from `A = max|a_kj|` (grid units), `n` and `m` only:
    /// `|q′(x)| ≤ A·n`, `|q′(y)| ≤ A·m`, so the gap is at most `A·(n + m)` (literal)
    /// or `2·A·n·m` (normalised, both sides scaled to `n·m`). Refused unless
    /// `W < 2¹²⁶`.
    fn worst_bound(&self, exact: &ExactQueries, n: u64) -> Result<u128, DxError> {
        let a = exact.max_abs();
        let m = self.m as u128;
        let n = u128::from(n);
        let w = if self.literal {
            n.checked_add(m).and_then(|s| a.checked_mul(s))
        } else {
            a.checked_mul(n)
                .and_then(|v| v.checked_mul(m))
                .and_then(|v| v.checked_mul(2))
        };
        w.filter(|&w| w < 1u128 << 126)
            .ok_or_else(|| bound_refusal("d_X SmallDB"))
    }

    /// The public check of [`SmallDb::run`]: `W` fits, and `⌈W/γ⌉` (the largest
    /// score [`SmallDb::units`] can produce: the division is monotone) stays below
    /// the selection's limit 10³⁸.
    fn check_public(&self, n: u64, em: &DxExponential) -> Result<(), DxError> {
        let exact = ExactQueries::new(&self.q_prime)?;
        let w = self.worst_bound(&exact, n)?;
        let den = if self.literal { 1 } else { self.m as u128 };
        let shift = exact.frac_bits() as i32 + em.grid_exp();
        ceil_div_pow2(w, den, shift)
            .ok()
            .filter(|&u| u < 10u128.pow(38))
            .map(|_| ())
            .ok_or_else(|| bound_refusal("d_X SmallDB"))
    }

    /// The selection scores on the grid of `em` (scale 1): `⌊−worst/γ⌋`, exactly.
    fn units(scores: &Scores, em: &DxExponential) -> Result<Vec<i128>, DxError> {
        let shift = scores.frac_bits as i32 + em.grid_exp();
        scores
            .worst
            .iter()
            .map(|&w| {
                let up = ceil_div_pow2(w, scores.den, shift)?;
                i128::try_from(up)
                    .map(|v| -v)
                    .map_err(|_| DxError::InvalidValue("a score does not fit 128 bits".into()))
            })
            .collect()
    }

    /// Runs Algorithm 1 after checking Theorem 5 on `metric`, charging
    /// `accountant` the ε-DP guarantee its d_X spend implies before sampling.
    ///
    /// `M_{Exp,c}` with utility `−c·worst` is, in exact arithmetic, `M_{Exp,1}`
    /// with utility `−worst` (`∝ exp(−worst/2)` either way), so the selection runs
    /// at scale 1 on the exact `worst`, and `c` only scales the answers. The
    /// sampled distributions are not identical: the sampler's grid γ and its
    /// effective scale differ unless c is a power of two, so the probabilities
    /// move slightly (about 10⁻⁷ for c = 3). The privacy guarantee is unchanged:
    /// the quantised mechanism at scale 1 is itself d_X-private (effective scale
    /// ≥ 1).
    pub fn run<R: Rng + CryptoRng + ?Sized>(
        &self,
        metric: &FiniteMetric,
        counts: &[u64],
        accountant: &mut Accountant,
        rng: &mut R,
    ) -> Result<SmallDbOutput, DxError> {
        check_lipschitz(metric, &self.q_prime)?.require()?;
        if !(self.c.is_finite() && self.c > 0.0) {
            return Err(DxError::InvalidValue(format!(
                "the exponential scale c must be positive, got {}",
                self.c
            )));
        }
        let em = DxExponential::new(1.0, metric.min_offdiag())?;
        if counts.len() != self.q_prime.cols() {
            return Err(DxError::Dimension(format!(
                "histogram of {} cells for {} elements",
                counts.len(),
                self.q_prime.cols()
            )));
        }
        // Every refusal from here on is a function of public inputs (the queries,
        // the metric, m, and n = Σx, fixed by the d_X relation): checked before
        // the data is read beyond n and before the charge.
        let n = total(counts)?;
        let size = self.range_size();
        if size > self.cap as f64 {
            return Err(DxError::TooLarge {
                size,
                cap: self.cap,
            });
        }
        self.check_public(n, &em)?;
        // Cannot fail after `check_public` (kept checked).
        let scores = self.scores(counts)?;
        let units = Self::units(&scores, &em)?;
        let spend = DxSpend::new(metric.clone());
        spend.charge(accountant, "d_X SmallDB")?;
        let pick = em.select_units(&units, rng)?;
        let y = scores.candidates[pick].clone();
        let norm = if self.literal {
            1.0
        } else {
            n as f64 / self.m as f64
        };
        let yf: Vec<f64> = y.iter().map(|&v| v as f64 * norm).collect();
        let answers = self
            .q_prime
            .answers(&yf)
            .iter()
            .map(|a| a * self.c)
            .collect();
        Ok(SmallDbOutput {
            synthetic: y,
            answers,
            candidates: scores.candidates.len(),
            spend,
        })
    }
}

/// The candidates and their exact worst errors `worst·2^−frac_bits/den`.
struct Scores {
    candidates: Vec<Vec<u64>>,
    worst: Vec<u128>,
    frac_bits: u32,
    den: u128,
}

/// Calls `f` on every `y ∈ ℕ^N` with `Σ y = total` (from index `at` on).
fn enumerate(y: &mut [u64], at: usize, total: u64, f: &mut impl FnMut(&[u64])) {
    if at + 1 == y.len() {
        y[at] = total;
        f(y);
        y[at] = 0;
        return;
    }
    for v in (0..=total).rev() {
        y[at] = v;
        enumerate(y, at + 1, total - v, f);
    }
    y[at] = 0;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scores are exact: `q′ = (10¹⁶, 1, −10¹⁶)` on `x = (1, 1, 1)` sums to 1,
    /// which an f64 sum in row order loses (10¹⁶ + 1 rounds to 10¹⁶). With m = 1 the
    /// candidates are the unit vectors and `worst(e_j) = |3·q′_j − 1|`.
    #[test]
    fn scores_are_exact_sums_over_the_data() {
        let q = Queries::new(vec![vec![1e16, 1.0, -1e16]]).unwrap();
        assert_eq!(q.answers(&[1.0, 1.0, 1.0]), vec![0.0]);
        let db = SmallDb::new(q, 1.0, 1.0).unwrap();
        assert_eq!(db.size(), 1);
        let s = db.scores(&[1, 1, 1]).unwrap();
        assert_eq!(
            s.candidates,
            vec![vec![1, 0, 0], vec![0, 1, 0], vec![0, 0, 1]]
        );
        let unit = 1u128 << s.frac_bits;
        assert_eq!(s.den, 1);
        assert_eq!(
            s.worst,
            vec![
                (30_000_000_000_000_000 - 1) * unit,
                2 * unit,
                (30_000_000_000_000_000 + 1) * unit
            ]
        );
        // The f64 reading would have said 3 for the middle candidate.
        let (_, utils) = db.utilities(&[1, 1, 1]).unwrap();
        assert_eq!(utils[1], -2.0);
        // On the selection grid (γ = 2^g): ⌊−2/γ⌋ exactly.
        let em = DxExponential::new(1.0, 1.0).unwrap();
        let units = SmallDb::units(&s, &em).unwrap();
        assert_eq!(units[1], -(2i128 << -em.grid_exp()));
    }

    /// An accountant that affords every release of these tests.
    fn generous() -> Accountant {
        Accountant::pure(privq_core::Epsilon::new(1_000_000, 1).unwrap())
    }
    use crate::seeded_rng;
    use crate::stats;

    /// The outcome of a run as a comparable value: the release, or the refusal's
    /// message; and what the accountant spent.
    fn outcome(db: &SmallDb, d: &FiniteMetric, counts: &[u64]) -> (Result<Vec<u64>, String>, bool) {
        let mut acct = Accountant::pure(privq_core::Epsilon::new(1u64 << 50, 1).unwrap());
        let r = db.run(d, counts, &mut acct, &mut seeded_rng(1));
        let charged = acct.spent_epsilon().is_some();
        (r.map(|o| o.synthetic).map_err(|e| e.to_string()), charged)
    }

    /// The review's pair (rev2): coefficients 2³⁴ ± … next to 2⁻⁷³ put q′(x) on a
    /// grid of 2⁻⁷³, and x = (n−3, 3), x′ = (n−4, 4) (one record moved distance 1).
    /// Before, literal SmallDB released on x and refused on x′, and the normalised
    /// reading refused both with different messages: the refusal read the data.
    /// Now both refuse, before any charge, with the same message (n = 2²⁰), and
    /// both release when the public bound allows (n = 2¹⁰, coarser coefficients).
    #[test]
    fn refusals_depend_on_public_inputs_only() {
        let p2 = |k: i32| 2f64.powi(k);
        let d = FiniteMetric::euclidean(&[[0.0], [1.0]], 1.0).unwrap();
        let q = Queries::new(vec![
            vec![p2(34) - p2(-19), p2(34) + 0.5],
            vec![p2(-73), 0.0],
        ])
        .unwrap();
        for literal in [true, false] {
            let mut db = SmallDb::new(q.clone(), 1.0, 1.0).unwrap();
            db.literal = literal;
            assert_eq!(db.size(), 1);
            let n: u64 = 1 << 20;
            let (a, charged_a) = outcome(&db, &d, &[n - 3, 3]);
            let (b, charged_b) = outcome(&db, &d, &[n - 4, 4]);
            assert!(a.is_err(), "literal = {literal}: {a:?}");
            assert_eq!(a, b, "literal = {literal}");
            assert!(!charged_a && !charged_b, "refused after a charge");
            assert!(a.unwrap_err().contains("public bound"));
        }
        // Coarser coefficients: the same pair releases on both sides.
        let q = Queries::new(vec![vec![0.0, 0.5], vec![p2(-73), 0.0]]).unwrap();
        for literal in [true, false] {
            let mut db = SmallDb::new(q.clone(), 1.0, 1.0).unwrap();
            db.literal = literal;
            let n: u64 = 1 << 10;
            let (a, charged_a) = outcome(&db, &d, &[n - 3, 3]);
            let (b, charged_b) = outcome(&db, &d, &[n - 4, 4]);
            assert!(a.is_ok() && b.is_ok(), "literal = {literal}: {a:?} {b:?}");
            assert!(charged_a && charged_b);
        }
    }

    #[test]
    fn oversized_instance_is_a_typed_error() {
        let d =
            FiniteMetric::euclidean(&(0..30).map(|i| [i as f64]).collect::<Vec<_>>(), 1.0).unwrap();
        let q = Queries::new(vec![vec![0.0; 30], vec![1.0; 30]]).unwrap();
        let db = SmallDb::new(q, 1.0, 0.1).unwrap(); // m = 70
        assert!(matches!(
            db.run(&d, &[1; 30], &mut generous(), &mut seeded_rng(0)),
            Err(DxError::TooLarge { .. })
        ));
    }

    #[test]
    fn rejects_non_lipschitz_queries() {
        let d = FiniteMetric::euclidean(&[[0.0], [1.0]], 1.0).unwrap();
        let q = Queries::new(vec![vec![0.0, 2.0]]).unwrap();
        let db = SmallDb::new(q, 1.0, 1.0).unwrap();
        assert!(matches!(
            db.run(&d, &[1, 1], &mut generous(), &mut seeded_rng(0)),
            Err(DxError::ConstraintViolated { .. })
        ));
    }

    #[test]
    fn output_frequencies_match_exponential_weights() {
        // N = 4, |Q| = 4, α = 0.6 → m = ⌈ln 4/0.36⌉ = 4, |R| = 35.
        let pts: Vec<[f64; 1]> = (0..4).map(|i| [i as f64]).collect();
        let d = FiniteMetric::euclidean(&pts, 1.0).unwrap();
        let q = Queries::new(vec![
            vec![0.0, 1.0, 2.0, 3.0],
            vec![3.0, 2.0, 1.0, 0.0],
            vec![0.0, 0.0, 1.0, 1.0],
            vec![1.0, 0.0, 0.0, 1.0],
        ])
        .unwrap();
        let db = SmallDb::new(q, 0.05, 0.6).unwrap();
        assert_eq!(db.size(), 4);
        let counts = [2, 1, 1, 4];
        let (cands, utils) = db.utilities(&counts).unwrap();
        assert_eq!(cands.len(), 35);
        let probs = DxExponential::new(0.05, 1.0)
            .unwrap()
            .probabilities(&utils)
            .unwrap();
        let mut hits = vec![0u64; cands.len()];
        let mut rng = seeded_rng(11);
        for _ in 0..20_000 {
            let y = db
                .run(&d, &counts, &mut generous(), &mut rng)
                .unwrap()
                .synthetic;
            hits[cands.iter().position(|c| *c == y).unwrap()] += 1;
        }
        let fit = stats::chi_square_gof(&hits, &probs).unwrap();
        assert!(fit.p_value > 1e-4, "{fit}");
    }
}

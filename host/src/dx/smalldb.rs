//! The d_X-private Small Database mechanism (Algorithm 1, Theorem 5), with exact
//! enumeration of the candidate range under a size cap.

use privq_core::rand_core::{CryptoRng, Rng};

use super::check::check_lipschitz;
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

    /// The candidates' utilities `u'(x, y)` in enumeration order, with the candidates.
    pub fn utilities(&self, counts: &[u64]) -> Result<(Vec<Vec<u64>>, Vec<f64>), DxError> {
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
        let n: u64 = counts.iter().sum();
        let xf: Vec<f64> = counts.iter().map(|&v| v as f64).collect();
        let qx = self.q_prime.answers(&xf);
        let norm = if self.literal {
            1.0
        } else {
            n as f64 / self.m as f64
        };
        let mut cands = Vec::new();
        let mut utils = Vec::new();
        let mut y = vec![0u64; n_el];
        enumerate(&mut y, 0, self.m as u64, &mut |y| {
            let yf: Vec<f64> = y.iter().map(|&v| v as f64).collect();
            let worst = self
                .q_prime
                .answers(&yf)
                .iter()
                .zip(&qx)
                .map(|(a, b)| (a * norm - b).abs())
                .fold(0.0, f64::max);
            cands.push(y.to_vec());
            utils.push(-self.c * worst);
        });
        Ok((cands, utils))
    }

    /// Runs Algorithm 1 after checking Theorem 5 on `metric`, charging
    /// `accountant` the ε-DP guarantee its d_X spend implies before sampling.
    pub fn run<R: Rng + CryptoRng + ?Sized>(
        &self,
        metric: &FiniteMetric,
        counts: &[u64],
        accountant: &mut Accountant,
        rng: &mut R,
    ) -> Result<SmallDbOutput, DxError> {
        check_lipschitz(metric, &self.q_prime)?.require()?;
        let (cands, utils) = self.utilities(counts)?;
        let em = DxExponential::new(self.c, metric.min_offdiag())?;
        let spend = DxSpend::new(metric.clone());
        spend.charge(accountant, "d_X SmallDB")?;
        let pick = em.select(&utils, rng)?;
        let y = cands[pick].clone();
        let n: u64 = counts.iter().sum();
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
            candidates: cands.len(),
            spend,
        })
    }
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

    /// An accountant that affords every release of these tests.
    fn generous() -> Accountant {
        Accountant::pure(privq_core::Epsilon::new(1_000_000, 1).unwrap())
    }
    use crate::seeded_rng;
    use crate::stats;

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

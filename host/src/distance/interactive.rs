//! Theorem 3.1: the interactive ℓ1 mechanism. The decomposed learner (Lemma 3.4)
//! runs inside a sparse-vector loop: each query is compared (AboveThreshold, exact
//! noise) with the hypothesis; below → the hypothesis answers; above → an update
//! round releases noisy values and slopes of every coordinate (vector Laplace,
//! exact), the wrong coordinates are updated and the updated hypothesis answers.
//! After `m` update rounds the session refuses ([`Exhausted`]).
//!
//! Sensitivities (scaled domain, `Σ w_i = 1`): the query `|F_D(y) − F̂(y)|` is
//! `1/n`; the vector of the ℓ values `(F^{(i)}(y_i))_i` has ℓ1 sensitivity `1/n`; the
//! vector of slopes `2ℓ/n`. An update round spends ε₀ split 1/3 (values) : 2/3
//! (slopes), an AboveThreshold instance ε₀.

use privq_core::rand_core::{CryptoRng, Rng};

use super::columns::Columns;
use super::learner::{DecomposedLearner, Learner1d};
use super::privacy::{AboveThreshold, Noise, Plan, Privacy, fraction, smallest_feasible};
use super::{DistanceError, Exhausted, check_range};
use crate::accountant::{Accountant, PrivacyLoss};

/// How the parameters are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// The smallest α whose noise (exact accounting, union bound with β) fits the
    /// learner's tolerances; the default.
    Calibrated,
    /// The paper's Lemma 3.1 / Theorem 3.1 constants (3000, `m = ℓ^{3/2}/√α`), to
    /// reproduce the theorem's parameters; privacy is still accounted exactly.
    Paper,
}

/// Options of an interactive session.
#[derive(Debug, Clone, PartialEq)]
pub struct InteractiveConfig {
    /// The privacy target.
    pub privacy: Privacy,
    /// Parameter profile.
    pub profile: Profile,
    /// Target accuracy α; `None` calibrates it from n.
    pub alpha: Option<f64>,
    /// Expected number of queries k (enters only the calibration's union bound).
    pub queries: usize,
    /// Failure probability β.
    pub beta: f64,
    noise: bool,
}

impl InteractiveConfig {
    /// Calibrated profile, k = 10⁴, β = 0.05.
    pub fn new(privacy: Privacy) -> Self {
        InteractiveConfig {
            privacy,
            profile: Profile::Calibrated,
            alpha: None,
            queries: 10_000,
            beta: 0.05,
            noise: true,
        }
    }

    /// A fixed target α.
    pub fn with_alpha(mut self, alpha: f64) -> Self {
        self.alpha = Some(alpha);
        self
    }

    /// Another profile.
    pub fn with_profile(mut self, profile: Profile) -> Self {
        self.profile = profile;
        self
    }

    /// Test-only profile: no noise (not private!).
    #[cfg(test)]
    pub(crate) fn without_noise(mut self) -> Self {
        self.noise = false;
        self
    }

    /// The session parameters for `n` points with scaled widths `widths`.
    pub fn calibrate(&self, n: usize, widths: &[f64]) -> Result<SessionParams, DistanceError> {
        if n == 0 {
            return Err(DistanceError::EmptyData);
        }
        check_range("beta", self.beta, 0.5)?;
        let dim = widths.len() as f64;
        let nf = n as f64;
        let alpha = match (self.alpha, self.profile) {
            (Some(a), _) => check_range("alpha", a, 1.0)?,
            (None, Profile::Calibrated) => smallest_feasible(1e-6, |a| {
                SessionParams::at(a, widths, self.privacy).is_ok_and(|p| {
                    let eps0 = p.plan.per_step().to_f64();
                    let draws = (self.queries + 2 * widths.len() * p.rounds) as f64;
                    let l = (draws / self.beta).ln();
                    let wmax = widths.iter().copied().fold(0.0, f64::max);
                    let a1 = a / dim;
                    6.0 * l / (nf * eps0) <= a / 4.0
                        && 3.0 * l / (nf * eps0) <= a1 / 8.0
                        && wmax * 3.0 * dim * l / (nf * eps0) <= a1 / 8.0
                })
            })
            .unwrap_or(1.0),
            (None, Profile::Paper) => {
                let eps = self.privacy.epsilon().to_f64();
                let lk = ((self.queries as f64) / self.beta).ln();
                let rhs = |a: f64| {
                    let m = dim.powf(1.5) / a.sqrt();
                    match self.privacy {
                        Privacy::Pure(_) => 3000.0 * dim * m * lk / (nf * eps),
                        Privacy::Approx { delta, .. } => {
                            3000.0 * (dim * m).sqrt() * (4.0 / delta).ln() * lk / (nf * eps)
                        }
                    }
                };
                smallest_feasible(1e-9, |a| a / dim >= rhs(a)).unwrap_or(1.0)
            }
        };
        SessionParams::at(alpha, widths, self.privacy).map(|mut p| {
            if self.profile == Profile::Paper {
                p.rounds = (dim.powf(1.5) / alpha.sqrt()).ceil().max(1.0) as usize;
                p.plan = Plan::new(self.privacy, 2 * p.rounds).unwrap_or(p.plan);
            }
            p
        })
    }
}

/// The derived parameters of a session.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionParams {
    /// Target accuracy α.
    pub alpha: f64,
    /// Update rounds allowed, `m`.
    pub rounds: usize,
    /// The budget split over the `2m` sub-mechanisms.
    pub plan: Plan,
}

impl SessionParams {
    fn at(alpha: f64, widths: &[f64], privacy: Privacy) -> Result<Self, DistanceError> {
        let a1 = alpha / widths.len() as f64;
        let rounds = widths
            .iter()
            .map(|&w| Learner1d::mistake_bound_on(w, a1 / 16.0).ceil() as usize)
            .sum::<usize>()
            .max(1);
        Ok(SessionParams {
            alpha,
            rounds,
            plan: Plan::new(privacy, 2 * rounds)?,
        })
    }
}

/// A query mapped into the scaled domain (validated by [`Session::prepare`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Scaled(Vec<f64>);

impl Scaled {
    /// The scaled coordinates.
    pub fn coordinates(&self) -> &[f64] {
        &self.0
    }
}

/// What a transcript entry did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Answered from the hypothesis (below the threshold).
    Hypothesis,
    /// Triggered an update round.
    Update,
}

/// One exchange of the session.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    /// The scaled query.
    pub query: Vec<f64>,
    /// The released answer.
    pub answer: f64,
    /// What happened.
    pub step: Step,
}

/// An interactive session over private ℓ1 data.
///
/// ```
/// use privq_host::accountant::Accountant;
/// use privq_host::distance::{Columns, BoxDomain, interactive::{InteractiveConfig, Session}, privacy::Privacy};
/// use privq_host::{Epsilon, seeded_rng};
/// let domain = BoxDomain::unit_cube(2)?;
/// let pts: Vec<Vec<f64>> = (0..50_000).map(|i| vec![(i % 7) as f64 / 7.0, 0.25]).collect();
/// let cols = Columns::new(&domain, &pts)?;
/// let config = InteractiveConfig::new(Privacy::approx(Epsilon::new(1, 1)?, 1e-6)?);
/// let mut rng = seeded_rng(4); // fixed seed: tests only
/// let mut accountant = Accountant::exactly(config.privacy.cost())?;
/// let mut session = Session::new(&cols, &config, &mut accountant, &mut rng)?;
/// let y = session.prepare(&[0.5, 0.5])?;
/// match session.answer(&y, &mut rng) {
///     Ok(a) => assert!((0.0..=1.0).contains(&a)),
///     Err(exhausted) => println!("{exhausted}"),
/// }
/// assert!(session.spent()?.epsilon <= 1.0);
/// assert!(accountant.remaining().is_none()); // the session holds the whole budget
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// `Debug` shows the parameters and the budget used, never the data or the
/// secret threshold.
pub struct Session<'a> {
    cols: &'a Columns,
    params: SessionParams,
    learner: DecomposedLearner,
    filter: Accountant,
    at: Option<AboveThreshold>,
    values: Noise,
    slopes: Noise,
    used: usize,
    closed: bool,
    transcript: Vec<Exchange>,
    noise: bool,
}

impl std::fmt::Debug for Session<'_> {
    // By hand: the data and the noisy threshold must never be formatted.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("params", &self.params)
            .field("used", &self.used)
            .field("closed", &self.closed)
            .field("transcript", &self.transcript)
            .finish_non_exhaustive()
    }
}

impl<'a> Session<'a> {
    /// Opens a session (the first AboveThreshold instance starts lazily).
    /// The session's whole budget is charged to `accountant` here, before any
    /// noise is drawn; [`Session::ledger`] itemises its use.
    pub fn new<R: Rng + CryptoRng + ?Sized>(
        cols: &'a Columns,
        config: &InteractiveConfig,
        accountant: &mut Accountant,
        _rng: &mut R,
    ) -> Result<Self, DistanceError> {
        let params = config.calibrate(cols.len(), cols.widths())?;
        super::privacy::charge_release(
            accountant,
            "interactive distance-query session",
            params.plan.privacy(),
        )?;
        let n = cols.len() as f64;
        let eps0 = params.plan.per_step();
        let dim = cols.dim() as f64;
        Ok(Session {
            cols,
            learner: DecomposedLearner::new(cols.widths()),
            filter: params.plan.filter()?,
            at: None,
            // All ℓ coordinates of an update round form one vector release each.
            values: Noise::new(1.0 / n, cols.dim(), fraction(eps0, 1, 3)?, config.noise)?,
            slopes: Noise::new(
                2.0 * dim / n,
                cols.dim(),
                fraction(eps0, 2, 3)?,
                config.noise,
            )?,
            used: 0,
            closed: false,
            transcript: Vec::new(),
            noise: config.noise,
            params,
        })
    }

    /// Validates a query against the domain and scales it.
    pub fn prepare(&self, y: &[f64]) -> Result<Scaled, DistanceError> {
        Ok(Scaled(self.cols.domain().scale(y)?))
    }

    fn exhausted(&self) -> Exhausted {
        Exhausted {
            rounds: self.params.rounds,
            answered: self.transcript.len(),
        }
    }

    /// Answers a query (scaled units). Refuses with [`Exhausted`] once all `m` update
    /// rounds are spent. A failure of the exact sampler (an arithmetic overflow, not
    /// reachable with validated parameters) closes the session fail-closed and is
    /// reported the same way.
    pub fn answer<R: Rng + CryptoRng + ?Sized>(
        &mut self,
        y: &Scaled,
        rng: &mut R,
    ) -> Result<f64, Exhausted> {
        if self.closed {
            return Err(self.exhausted());
        }
        match self.step(&y.0, rng) {
            Ok(Some(a)) => Ok(a),
            Ok(None) | Err(_) => {
                self.closed = true;
                Err(self.exhausted())
            }
        }
    }

    fn step<R: Rng + CryptoRng + ?Sized>(
        &mut self,
        y: &[f64],
        rng: &mut R,
    ) -> Result<Option<f64>, DistanceError> {
        let eps0 = self.params.plan.per_step();
        let n = self.cols.len() as f64;
        let at = match self.at.take() {
            Some(at) => at,
            None => {
                if self.used == self.params.rounds {
                    return Ok(None);
                }
                let label = format!("sparse vector instance {}", self.used + 1);
                self.filter.charge(&label, eps0.into())?;
                AboveThreshold::start(self.params.alpha / 2.0, 1.0 / n, eps0, self.noise, rng)?
            }
        };
        let err = (self.cols.answer_scaled(y) - self.learner.predict(y)).abs();
        if !at.above(err, rng)? {
            self.at = Some(at);
            let answer = self.learner.predict(y);
            self.record(y, answer, Step::Hypothesis);
            return Ok(Some(answer));
        }
        self.filter
            .charge(&format!("update round {}", self.used + 1), eps0.into())?;
        let a1 = self.params.alpha / self.cols.dim() as f64;
        for (i, &t) in y.iter().enumerate() {
            let v = self.values.release(self.cols.value(i, t), rng)?;
            let s = self.slopes.release(self.cols.slope(i, t), rng)?;
            if (v - self.learner.predict_coordinate(i, t)).abs() > a1 / 4.0 {
                self.learner.update_coordinate(i, t, v, s);
            }
        }
        self.used += 1;
        let answer = self.learner.predict(y);
        self.record(y, answer, Step::Update);
        Ok(Some(answer))
    }

    fn record(&mut self, y: &[f64], answer: f64, step: Step) {
        self.transcript.push(Exchange {
            query: y.to_vec(),
            answer,
            step,
        });
    }

    /// The hypothesis' answer without touching the data (post-processing; no
    /// accuracy guarantee once the session is exhausted).
    pub fn hypothesis_answer(&self, y: &Scaled) -> f64 {
        self.learner.predict(&y.0)
    }

    /// The parameters in use.
    pub fn params(&self) -> &SessionParams {
        &self.params
    }

    /// Update rounds left.
    pub fn remaining_rounds(&self) -> usize {
        self.params.rounds - self.used
    }

    /// ε of the per-step ledger still unspent (exact), `None` when all spent.
    pub fn remaining_ledger(&self) -> Option<privq_core::Epsilon> {
        self.filter.remaining()
    }

    /// The composed guarantee of everything charged so far.
    pub fn spent(&self) -> Result<PrivacyLoss, DistanceError> {
        self.params.plan.guarantee(self.filter.ledger().len())
    }

    /// The exact ledger of ε₀ charges.
    pub fn ledger(&self) -> &Accountant {
        &self.filter
    }

    /// Every exchange so far.
    pub fn transcript(&self) -> &[Exchange] {
        &self.transcript
    }

    /// True once the session refuses.
    pub fn is_exhausted(&self) -> bool {
        self.closed || (self.used == self.params.rounds && self.at.is_none())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accountant::Accountant;
    use crate::distance::BoxDomain;
    use crate::seeded_rng;
    use privq_core::Epsilon;

    fn uniform(rng: &mut impl Rng) -> f64 {
        (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn points(n: usize, dim: usize, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = seeded_rng(seed);
        (0..n)
            .map(|_| (0..dim).map(|_| uniform(&mut rng).powi(2)).collect())
            .collect()
    }

    #[test]
    fn noise_off_session_is_accurate_and_within_the_mistake_bound() {
        let domain = BoxDomain::unit_cube(4).unwrap();
        let cols = Columns::new(&domain, &points(1000, 4, 1)).unwrap();
        let config = InteractiveConfig::new(Privacy::pure(Epsilon::new(1, 1).unwrap()))
            .with_alpha(0.05)
            .without_noise();
        let mut rng = seeded_rng(2);
        let mut s = Session::new(
            &cols,
            &config,
            &mut Accountant::exactly(config.privacy.cost()).unwrap(),
            &mut rng,
        )
        .unwrap();
        for q in points(3000, 4, 3) {
            let y = s.prepare(&q).unwrap();
            let a = s.answer(&y, &mut rng).unwrap();
            assert!((a - cols.answer(&q).unwrap()).abs() <= 0.05 + 1e-12);
        }
        assert!(
            s.params().rounds
                >= s.transcript()
                    .iter()
                    .filter(|e| e.step == Step::Update)
                    .count()
        );
    }

    #[test]
    fn ledger_is_exact_and_the_session_refuses_after_its_budget() {
        let domain = BoxDomain::unit_cube(2).unwrap();
        let cols = Columns::new(&domain, &points(200, 2, 4)).unwrap();
        for privacy in [
            Privacy::pure(Epsilon::new(1, 2).unwrap()),
            Privacy::approx(Epsilon::new(1, 2).unwrap(), 1e-6).unwrap(),
        ] {
            // Tiny n and α: almost every query triggers an update.
            let config = InteractiveConfig::new(privacy).with_alpha(0.01);
            let mut rng = seeded_rng(5);
            let mut s = Session::new(
                &cols,
                &config,
                &mut Accountant::exactly(config.privacy.cost()).unwrap(),
                &mut rng,
            )
            .unwrap();
            let m = s.params().rounds;
            let mut refused = None;
            for (k, q) in points(100_000, 2, 6).iter().enumerate() {
                let y = s.prepare(q).unwrap();
                if let Err(e) = s.answer(&y, &mut rng) {
                    refused = Some((k, e));
                    break;
                }
            }
            let (k, e) = refused.expect("the budget runs out");
            assert_eq!(e.rounds, m);
            assert_eq!(e.answered, k);
            // Exactly 2m charges of ε₀; the exact ledger total is m·2·ε₀ and nothing remains.
            assert_eq!(s.ledger().ledger().len(), 2 * m);
            assert_eq!(s.remaining_ledger(), None);
            let g = s.spent().unwrap();
            assert!(g.epsilon <= 0.5 + 1e-12, "{g:?}");
            assert_eq!(g.delta, privacy.delta());
            // Refuses again, and stays closed.
            let y = s.prepare(&[0.1, 0.1]).unwrap();
            assert!(s.answer(&y, &mut rng).is_err());
            assert!(s.is_exhausted());
        }
    }

    #[test]
    fn paper_profile_reproduces_the_theorem_parameters() {
        let widths = [0.25; 4];
        let eps = Epsilon::new(1, 1).unwrap();
        let p = InteractiveConfig::new(Privacy::approx(eps, 1e-6).unwrap())
            .with_profile(Profile::Paper)
            .calibrate(1_000_000_000_000, &widths)
            .unwrap();
        // α/ℓ = 3000·√(ℓ·m)·ln(4/δ)·ln(k/β)/(nε), m = ℓ^{3/2}/√α.
        let m = 8.0 / p.alpha.sqrt();
        let rhs = 3000.0 * (4.0 * m).sqrt() * (4e6f64).ln() * (1e4f64 / 0.05).ln() / 1e12;
        assert!(
            (p.alpha / 4.0 - rhs).abs() / rhs < 1e-6,
            "{} vs {}",
            p.alpha / 4.0,
            rhs
        );
        assert_eq!(p.rounds, m.ceil() as usize);
        let cal = InteractiveConfig::new(Privacy::pure(eps))
            .calibrate(1000, &widths)
            .unwrap();
        assert!(cal.alpha <= 1.0);
    }
}

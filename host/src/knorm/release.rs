//! d linear queries over a histogram, released end to end: the entry point that
//! owns every release decision of `privq knorm` — the pure-ε accountant and the
//! neighbour relation it is bound to (given once, for the accountant and the
//! mechanism), which mechanism runs and at what sensitivity, whether an
//! APPROXIMATE (hit-and-run) sampler may be booked as uncertified, and that the
//! charge is made before any noise is drawn. Front ends (`privq knorm`, bindings)
//! parse, call [`release`] and print what it returns.
//!
//! ```
//! use privq_host::contract::Neighbours;
//! use privq_host::knorm::Body;
//! use privq_host::knorm::release::{KnormMechanism, KnormRequest, release};
//! use privq_host::{Epsilon, seeded_rng};
//!
//! let request = KnormRequest::new(
//!     Epsilon::new(1, 1)?,
//!     Neighbours::AddRemove,
//!     KnormMechanism::KNorm { steps: None },
//! );
//! let body = Body::identity(3)?;
//! let out = release(body, &[40, 2, 7], &request, &mut seeded_rng(7), &mut |_, _| {})?;
//! assert_eq!(out.answers.len(), 3);
//! assert_eq!(out.accountant.neighbours(), Some(Neighbours::AddRemove));
//! assert_eq!(out.accountant.spent_epsilon(), Some(Epsilon::new(1, 1)?));
//! assert!(out.status().starts_with("exactly ε-DP"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use privq_core::Epsilon;
use privq_core::rand_core::{CryptoRng, Rng};

use super::{Body, KNorm, KnormError, Nikm, NikmOptions, Sampler, Shape};
use crate::accountant::{Accountant, Cost};
use crate::central::{MechanismError, VectorLaplace};
use crate::contract::{Mechanism, Neighbours};

/// Which mechanism answers the queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KnormMechanism {
    /// The K-norm mechanism KM (thesis Def 3.3.1): exact on the cross-polytope and
    /// the cube. `steps` opts any other body into a hit-and-run sampler of that
    /// many steps, whose privacy is APPROXIMATE (booked as uncertified); without
    /// it such a body is refused ([`KnormError::NoExactSampler`]).
    KNorm {
        /// Hit-and-run steps for a body without an exact sampler.
        steps: Option<usize>,
    },
    /// The recursive K-norm mechanism NiKM (thesis Fig. 3.3): ⌊log₂ d⌋ + 1 levels
    /// at ε/L each; `options.steps` opts general level bodies into hit-and-run.
    Nikm(NikmOptions),
    /// The vector Laplace mechanism at the ℓ1 sensitivity of `F·x`, for comparison.
    Laplace,
}

/// What to release: ε, the neighbour relation (stated once: the accountant and
/// the mechanism both take it from here) and the mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnormRequest {
    epsilon: Epsilon,
    neighbours: Neighbours,
    mechanism: KnormMechanism,
}

impl KnormRequest {
    /// A pure ε-DP release under `neighbours` by `mechanism`.
    pub fn new(epsilon: Epsilon, neighbours: Neighbours, mechanism: KnormMechanism) -> Self {
        KnormRequest {
            epsilon,
            neighbours,
            mechanism,
        }
    }

    /// The budget ε.
    pub fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    /// The neighbour relation of the guarantee.
    pub fn neighbours(&self) -> Neighbours {
        self.neighbours
    }

    /// The mechanism.
    pub fn mechanism(&self) -> KnormMechanism {
        self.mechanism
    }

    /// The accountant the release runs under: a fresh pure-ε budget bound to the
    /// request's relation.
    pub fn accountant(&self) -> Accountant {
        let mut accountant = Accountant::pure(self.epsilon);
        accountant.bind(self.neighbours);
        accountant
    }
}

/// The mechanism a release deployed (public: built from F, ε and the relation
/// only).
#[derive(Debug, Clone)]
pub enum Deployed {
    /// [`KnormMechanism::KNorm`].
    KNorm(KNorm),
    /// [`KnormMechanism::Nikm`].
    Nikm(Nikm),
    /// [`KnormMechanism::Laplace`].
    Laplace(VectorLaplace),
}

/// A release: the answers, the mechanism that produced them, and what it cost.
#[derive(Debug)]
pub struct KnormRelease {
    /// The d noisy answers `F·x + noise`.
    pub answers: Vec<f64>,
    /// The mechanism deployed.
    pub mechanism: Deployed,
    /// The accountant that paid for the release, bound to the request's relation;
    /// its ledger is the release's.
    pub accountant: Accountant,
    /// The guarantee in one sentence: the cost charged under the relation, and
    /// whether n is public (replace-one) or private (add/remove).
    pub summary: String,
}

impl Deployed {
    /// Whether its privacy is APPROXIMATE (a hit-and-run sampler runs, and the
    /// ledger books its ε as uncertified).
    pub fn is_approximate(&self) -> bool {
        match self {
            Deployed::KNorm(m) => matches!(m.sampler(), Sampler::HitAndRun { .. }),
            Deployed::Nikm(m) => m.is_approximate(),
            Deployed::Laplace(_) => false,
        }
    }
}

impl KnormRelease {
    /// The sampler's privacy status in one sentence.
    pub fn status(&self) -> String {
        match &self.mechanism {
            Deployed::Laplace(_) => "exact (integer noise on the fixed-point grid)".to_string(),
            Deployed::Nikm(m) if m.is_approximate() => {
                "APPROXIMATE: some levels draw z from hit-and-run walks, not exactly uniform; \
                 each level rounds to its own data-independent grid"
                    .to_string()
            }
            Deployed::Nikm(_) => "exactly ε-DP (ε/L per level): integer noise from the \
                 discrete K-norm law on each level's data-independent grid, no floating point"
                .to_string(),
            Deployed::KNorm(m) => match m.sampler() {
                Sampler::Exact => format!(
                    "exactly ε-DP: integer noise from the discrete K-norm law on the \
                     data-independent grid γ = {}, no floating point",
                    m.grid()
                ),
                Sampler::HitAndRun { steps } => format!(
                    "APPROXIMATE: z from {steps} hit-and-run steps, not exactly uniform; \
                     grid γ = {}",
                    m.grid()
                ),
            },
        }
    }
}

/// Why a release was refused; nothing was drawn.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KnormReleaseError {
    /// The body, the parameters or the NiKM levels were refused.
    #[error(transparent)]
    Knorm(#[from] KnormError),
    /// The histogram or the charge was refused, or the Laplace mechanism failed.
    #[error(transparent)]
    Mechanism(#[from] MechanismError),
}

/// The ℓ1 sensitivity of `F·x` for the Laplace comparison: Δ times the largest
/// column ℓ1 norm, plus d·2⁻²⁰ for F's grid and the rounding of the exact answer to
/// f64 ([`Body::answer_for_release`]).
fn laplace_l1(body: &Body, neighbours: Neighbours) -> f64 {
    let d = body.dim();
    let col_l1 = (0..body.columns())
        .map(|j| {
            (0..d)
                .filter_map(|i| body.entry(i, j))
                .map(f64::abs)
                .sum::<f64>()
        })
        .fold(0.0, f64::max);
    neighbours.histogram_l1() as f64 * col_l1 + d as f64 * (-20f64).exp2()
}

/// Releases the d answers `F·x` of the query matrix `body` (F, public) on the
/// histogram `counts` (x, private: N counts), as `request` says: refuses a body
/// without an exact sampler unless hit-and-run steps are given, and a histogram of
/// another length than N; builds the mechanism (`progress(level, L)` sees NiKM's
/// levels as they are built) and a fresh pure-ε accountant bound to the request's
/// relation (accepting an uncertified charge only when a hit-and-run sampler was
/// opted into); charges it, then draws the noise. Requires a secure RNG.
///
/// ```
/// use privq_host::contract::Neighbours;
/// use privq_host::knorm::Body;
/// use privq_host::knorm::release::{KnormMechanism, KnormRequest, release};
/// use privq_host::{Epsilon, seeded_rng};
///
/// let request = KnormRequest::new(Epsilon::new(1, 2)?, Neighbours::Replace, KnormMechanism::Laplace);
/// let out = release(Body::hypercube(2)?, &[1, 2, 3, 4], &request, &mut seeded_rng(1), &mut |_, _| {})?;
/// assert_eq!(out.answers.len(), 2);
/// assert_eq!(out.accountant.neighbours(), Some(Neighbours::Replace));
/// assert!(out.summary.contains("n = 10 treated as public"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn release<R: Rng + CryptoRng + ?Sized>(
    body: Body,
    counts: &[u64],
    request: &KnormRequest,
    rng: &mut R,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<KnormRelease, KnormReleaseError> {
    let (epsilon, neighbours) = (request.epsilon, request.neighbours);
    if let KnormMechanism::KNorm { steps: None } = request.mechanism
        && body.shape() == Shape::General
    {
        return Err(KnormError::NoExactSampler.into());
    }
    if counts.len() != body.columns() {
        return Err(MechanismError::DimensionMismatch {
            expected: body.columns(),
            got: counts.len(),
        }
        .into());
    }
    // The Laplace comparison answers F·x exactly, rounded to f64; the K-norm
    // mechanisms take the histogram itself.
    let mut truth = None;
    let mechanism = match request.mechanism {
        KnormMechanism::Laplace => {
            let l1 = laplace_l1(&body, neighbours);
            let mech = VectorLaplace::with_sensitivity(neighbours, body.dim(), l1, epsilon)?;
            truth = Some(body.answer_for_release(counts)?);
            Deployed::Laplace(mech)
        }
        KnormMechanism::Nikm(options) => Deployed::Nikm(Nikm::with_progress(
            body, neighbours, epsilon, options, progress,
        )?),
        KnormMechanism::KNorm { steps } => Deployed::KNorm(match (body.shape(), steps) {
            (Shape::General, Some(steps)) => {
                KNorm::hit_and_run_approximate(body, neighbours, epsilon, steps)?
            }
            _ => KNorm::new(body, neighbours, epsilon)?,
        }),
    };
    let mut accountant = request.accountant();
    if mechanism.is_approximate() {
        // The steps were the opt-in: the ledger books the ε as UNCERTIFIED.
        accountant.allow_uncertified();
    }
    // Each mechanism's release charges the accountant before it draws.
    let answers = match &mechanism {
        // `truth` is set with the Laplace mechanism (an empty one would be refused).
        Deployed::Laplace(mech) => {
            mech.release(truth.as_deref().unwrap_or(&[]), &mut accountant, rng)?
        }
        Deployed::Nikm(mech) => mech.release(counts, &mut accountant, rng)?,
        Deployed::KNorm(mech) => mech.release(counts, &mut accountant, rng)?,
    };
    let summary = neighbours.summary(
        &accountant
            .ledger()
            .first()
            .map_or(Cost::Pure(epsilon), |c| c.cost),
        counts.iter().fold(0u64, |n, &c| n.saturating_add(c)),
    );
    Ok(KnormRelease {
        answers,
        mechanism,
        accountant,
        summary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded_rng;

    fn request(neighbours: Neighbours, mechanism: KnormMechanism) -> KnormRequest {
        KnormRequest::new(Epsilon::new(1, 1).unwrap(), neighbours, mechanism)
    }

    fn random_body() -> Body {
        // Columns (1, 0), (0, 1), (1, 1): K is a hexagon, no exact sampler.
        let body = Body::from_rows(&[vec![1.0, 0.0, 1.0, 0.0], vec![0.0, 1.0, 1.0, 0.0]]).unwrap();
        assert_eq!(body.shape(), Shape::General);
        body
    }

    #[test]
    fn invalid_parameters_are_refused_with_typed_errors_before_any_charge() {
        let km = |steps| request(Neighbours::AddRemove, KnormMechanism::KNorm { steps });
        let go = |body: Body, counts: &[u64], req: &KnormRequest| {
            release(body, counts, req, &mut seeded_rng(1), &mut |_, _| {})
        };
        // A general body without hit-and-run steps.
        assert!(matches!(
            go(random_body(), &[1, 2, 3, 4], &km(None)),
            Err(KnormReleaseError::Knorm(KnormError::NoExactSampler))
        ));
        // Too few steps (below 4·d).
        assert!(matches!(
            go(random_body(), &[1, 2, 3, 4], &km(Some(3))),
            Err(KnormReleaseError::Knorm(KnormError::InvalidParameter(_)))
        ));
        // A histogram of another length than N, for every mechanism.
        for mechanism in [
            KnormMechanism::KNorm { steps: None },
            KnormMechanism::Nikm(NikmOptions::default()),
            KnormMechanism::Laplace,
        ] {
            let req = request(Neighbours::Replace, mechanism);
            assert!(matches!(
                go(Body::identity(3).unwrap(), &[1, 2], &req),
                Err(KnormReleaseError::Mechanism(
                    MechanismError::DimensionMismatch {
                        expected: 3,
                        got: 2
                    }
                ))
            ));
        }
        // A general NiKM level without steps.
        assert!(matches!(
            go(
                random_body(),
                &[1, 2, 3, 4],
                &request(
                    Neighbours::AddRemove,
                    KnormMechanism::Nikm(NikmOptions::default())
                )
            ),
            Err(KnormReleaseError::Knorm(KnormError::NoExactSampler))
        ));
    }

    #[test]
    fn the_accountant_is_bound_and_hit_and_run_is_booked_uncertified() {
        let req = request(
            Neighbours::Replace,
            KnormMechanism::KNorm { steps: Some(20) },
        );
        let out = release(
            random_body(),
            &[1, 2, 3, 4],
            &req,
            &mut seeded_rng(2),
            &mut |_, _| {},
        )
        .unwrap();
        assert_eq!(out.accountant.neighbours(), Some(Neighbours::Replace));
        assert!(out.mechanism.is_approximate() && out.status().starts_with("APPROXIMATE"));
        assert!(matches!(
            out.accountant.ledger()[0].cost,
            Cost::Uncertified(_)
        ));
        assert!(
            out.summary.contains("n = 10 treated as public"),
            "{}",
            out.summary
        );
        // NiKM reports its levels as they are built.
        let mut seen = Vec::new();
        let req = request(
            Neighbours::AddRemove,
            KnormMechanism::Nikm(NikmOptions::default()),
        );
        let out = release(
            Body::identity(4).unwrap(),
            &[40, 2, 7, 1],
            &req,
            &mut seeded_rng(3),
            &mut |l, n| seen.push((l, n)),
        )
        .unwrap();
        assert_eq!(seen, [(0, 3), (1, 3), (2, 3)]);
        assert_eq!(out.accountant.ledger().len(), 1);
        assert!(out.summary.ends_with("n is private"), "{}", out.summary);
    }
}

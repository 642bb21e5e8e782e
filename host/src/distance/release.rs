//! Private ℓ1 distance queries, end to end: the entry points that own every
//! release decision — the accountant (exactly the budget asked for) and its
//! neighbour relation (the mechanisms' replace-one [`NEIGHBOURS`], fixed by the
//! type: a request cannot declare another), the calibration of α, the cap on the
//! work an explicit α implies, and the charge made before any noise is drawn.
//! Front ends (`privq distance release`, `privq distance interactive`) parse, call
//! and print what these return.
//!
//! A release runs in two steps so that a front end can prepare its output between
//! them: [`DistanceRequest::plan_synopsis`] (or [`DistanceRequest::plan_session`])
//! validates the request against the data and spends nothing; the plan's `release`
//! (or `open`) builds the bound accountant, charges it and draws the noise.
//! [`release_synopsis`] does both.
//!
//! ```
//! use privq_host::contract::Neighbours;
//! use privq_host::distance::BoxDomain;
//! use privq_host::distance::privacy::Privacy;
//! use privq_host::distance::release::{DistanceRequest, release_synopsis};
//! use privq_host::{Epsilon, seeded_rng};
//!
//! let domain = BoxDomain::unit_cube(2)?;
//! let points: Vec<Vec<f64>> = (0..500).map(|i| vec![(i % 10) as f64 / 10.0, 0.5]).collect();
//! let request = DistanceRequest::new(domain, Privacy::pure(Epsilon::new(1, 1)?));
//! let out = release_synopsis(&points, &request, &mut seeded_rng(7))?;
//! assert_eq!(out.accountant.neighbours(), Some(Neighbours::Replace));
//! assert!(out.accountant.remaining().is_none()); // the release holds the whole budget
//! assert!((0.0..=1.0).contains(&out.synopsis.answer(&[0.3, 0.5])?));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use privq_core::rand_core::{CryptoRng, Rng};

use super::interactive::{InteractiveConfig, Session, SessionParams};
use super::offline::{OfflineConfig, OfflineParams, Synopsis};
use super::privacy::{NEIGHBOURS, Privacy};
use super::{BoxDomain, Columns, DistanceError};
use crate::accountant::Accountant;
use crate::contract::Neighbours;

/// Bytes of work each grid point or update round an explicit α implies, charged
/// against the memory cap (values, tangents and their JSON text).
pub const BYTES_PER_UNIT: u64 = 64;

/// The default memory cap for the work an explicit α implies, in MiB.
pub const DEFAULT_MEMORY_MIB: u64 = 1024;

/// What to release: the public domain, the privacy target, and the public knobs.
/// The neighbour relation is not a field: it is the mechanisms' [`NEIGHBOURS`].
#[derive(Debug, Clone, PartialEq)]
pub struct DistanceRequest {
    domain: BoxDomain,
    privacy: Privacy,
    alpha: Option<f64>,
    memory_mib: u64,
}

impl DistanceRequest {
    /// A release over `domain` at `privacy`, α calibrated from n, under the
    /// default memory cap.
    pub fn new(domain: BoxDomain, privacy: Privacy) -> Self {
        DistanceRequest {
            domain,
            privacy,
            alpha: None,
            memory_mib: DEFAULT_MEMORY_MIB,
        }
    }

    /// An explicit target accuracy α in scaled units (`None`: calibrated from n).
    pub fn alpha(mut self, alpha: Option<f64>) -> Self {
        self.alpha = alpha;
        self
    }

    /// The cap in MiB on the work an explicit α implies.
    pub fn memory_mib(mut self, mib: u64) -> Self {
        self.memory_mib = mib;
        self
    }

    /// The public domain.
    pub fn domain(&self) -> &BoxDomain {
        &self.domain
    }

    /// The privacy target.
    pub fn privacy(&self) -> Privacy {
        self.privacy
    }

    /// The neighbour relation of the guarantee: replace one point (n is public).
    pub fn neighbours(&self) -> Neighbours {
        NEIGHBOURS
    }

    /// The accountant a release runs under: exactly the budget asked for, bound
    /// to [`DistanceRequest::neighbours`].
    pub fn accountant(&self) -> Result<Accountant, DistanceError> {
        Ok(Accountant::exactly_for(self.privacy.cost(), NEIGHBOURS)?)
    }

    /// What the guarantee means for `n` points (the relation, what is public).
    pub fn summary(&self, n: usize) -> String {
        NEIGHBOURS.summary(&self.privacy.cost(), n as u64)
    }

    /// Refuses an explicit α whose `units` of work exceed the memory cap.
    fn check_work(&self, units: usize, what: &'static str) -> Result<(), DistanceError> {
        let Some(alpha) = self.alpha else {
            return Ok(());
        };
        let bytes = (units as u64).saturating_mul(BYTES_PER_UNIT);
        if bytes <= self.memory_mib.saturating_mul(1 << 20) {
            return Ok(());
        }
        Err(DistanceError::WorkTooLarge {
            alpha,
            units,
            what,
            bytes,
            cap_mib: self.memory_mib,
        })
    }

    /// Validates the request on `points` for an offline synopsis (Theorem 3.2):
    /// the points' dimension, α, and the grid an explicit α implies. Spends nothing.
    pub fn plan_synopsis<P: AsRef<[f64]>>(
        &self,
        points: &[P],
    ) -> Result<SynopsisPlan, DistanceError> {
        let mut config = OfflineConfig::new(self.privacy);
        config.alpha = self.alpha;
        let cols = Columns::new(&self.domain, points)?;
        let params = config.calibrate(cols.len(), cols.widths())?;
        self.check_work(params.grid_points, "grid points")?;
        Ok(SynopsisPlan {
            request: self.clone(),
            config,
            cols,
            params,
        })
    }

    /// Validates the request on `points` for an interactive session (Theorem
    /// 3.1): the points' dimension, α, and the update rounds an explicit α
    /// implies. Spends nothing.
    pub fn plan_session<P: AsRef<[f64]>>(
        &self,
        points: &[P],
    ) -> Result<SessionPlan, DistanceError> {
        let mut config = InteractiveConfig::new(self.privacy);
        config.alpha = self.alpha;
        let cols = Columns::new(&self.domain, points)?;
        let params = config.calibrate(cols.len(), cols.widths())?;
        self.check_work(params.rounds, "update rounds")?;
        Ok(SessionPlan {
            request: self.clone(),
            config,
            cols,
            params,
        })
    }
}

/// A validated offline release, not yet charged.
#[derive(Debug)]
pub struct SynopsisPlan {
    request: DistanceRequest,
    config: OfflineConfig,
    cols: Columns,
    params: OfflineParams,
}

/// A released synopsis and what it cost.
#[derive(Debug)]
pub struct SynopsisRelease {
    /// The synopsis (public: it answers every ℓ1 distance query).
    pub synopsis: Synopsis,
    /// The accountant that paid for it, bound to replace-one neighbours; its
    /// ledger is the release's.
    pub accountant: Accountant,
    /// What the guarantee means (relation, cost, whether n is public).
    pub privacy: String,
}

impl SynopsisPlan {
    /// The calibrated parameters (public).
    pub fn params(&self) -> &OfflineParams {
        &self.params
    }

    /// Releases the synopsis: a fresh accountant holding exactly the request's
    /// budget, bound to its relation, is charged before any noise is drawn.
    pub fn release<R: Rng + CryptoRng + ?Sized>(
        self,
        rng: &mut R,
    ) -> Result<SynopsisRelease, DistanceError> {
        let mut accountant = self.request.accountant()?;
        let synopsis = Synopsis::release_columns(&self.cols, &self.config, &mut accountant, rng)?;
        Ok(SynopsisRelease {
            privacy: self.request.summary(synopsis.n()),
            synopsis,
            accountant,
        })
    }
}

/// Releases an offline synopsis of `points` (Theorem 3.2): validates the request
/// ([`DistanceRequest::plan_synopsis`]), then charges a fresh bound accountant and
/// draws the noise ([`SynopsisPlan::release`]).
///
/// ```
/// use privq_host::distance::{BoxDomain, DistanceError};
/// use privq_host::distance::privacy::Privacy;
/// use privq_host::distance::release::{DistanceRequest, release_synopsis};
/// use privq_host::{Epsilon, seeded_rng};
///
/// let request = DistanceRequest::new(BoxDomain::unit_cube(1)?, Privacy::pure(Epsilon::new(1, 2)?))
///     .alpha(Some(0.2));
/// let points = [[0.1], [0.4], [0.9]];
/// let out = release_synopsis(&points, &request, &mut seeded_rng(1))?;
/// assert_eq!(out.synopsis.alpha(), 0.2);
/// // Points of another dimension are refused before anything is charged.
/// let bad = release_synopsis(&[[0.1, 0.2]], &request, &mut seeded_rng(1));
/// assert!(matches!(bad, Err(DistanceError::DimensionMismatch { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn release_synopsis<P: AsRef<[f64]>, R: Rng + CryptoRng + ?Sized>(
    points: &[P],
    request: &DistanceRequest,
    rng: &mut R,
) -> Result<SynopsisRelease, DistanceError> {
    request.plan_synopsis(points)?.release(rng)
}

/// A validated interactive session, not yet charged.
#[derive(Debug)]
pub struct SessionPlan {
    request: DistanceRequest,
    config: InteractiveConfig,
    cols: Columns,
    params: SessionParams,
}

/// An open session and the accountant charged for it.
#[derive(Debug)]
pub struct OpenSession<'a> {
    /// The session: answers queries until its update rounds run out.
    pub session: Session<'a>,
    /// The accountant charged the session's whole budget, bound to replace-one
    /// neighbours.
    pub accountant: Accountant,
    /// What the guarantee means (relation, cost, whether n is public).
    pub privacy: String,
}

impl SessionPlan {
    /// The calibrated parameters (public).
    pub fn params(&self) -> &SessionParams {
        &self.params
    }

    /// Opens the session (Theorem 3.1): a fresh accountant holding exactly the
    /// request's budget, bound to its relation, is charged the whole session
    /// before any noise is drawn.
    ///
    /// ```
    /// use privq_host::contract::Neighbours;
    /// use privq_host::distance::BoxDomain;
    /// use privq_host::distance::privacy::Privacy;
    /// use privq_host::distance::release::DistanceRequest;
    /// use privq_host::{Epsilon, seeded_rng};
    ///
    /// let points: Vec<Vec<f64>> = (0..1000).map(|i| vec![(i % 7) as f64 / 7.0]).collect();
    /// let request = DistanceRequest::new(BoxDomain::unit_cube(1)?, Privacy::pure(Epsilon::new(1, 1)?));
    /// let plan = request.plan_session(&points)?;
    /// let mut rng = seeded_rng(2);
    /// let mut open = plan.open(&mut rng)?;
    /// assert_eq!(open.accountant.neighbours(), Some(Neighbours::Replace));
    /// let q = open.session.prepare(&[0.5])?;
    /// assert!((0.0..=1.0).contains(&open.session.answer(&q, &mut rng)?));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open<R: Rng + CryptoRng + ?Sized>(
        &self,
        rng: &mut R,
    ) -> Result<OpenSession<'_>, DistanceError> {
        let mut accountant = self.request.accountant()?;
        let session = Session::new(&self.cols, &self.config, &mut accountant, rng)?;
        Ok(OpenSession {
            session,
            accountant,
            privacy: self.request.summary(self.cols.len()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded_rng;
    use privq_core::Epsilon;

    fn request(alpha: Option<f64>) -> DistanceRequest {
        let privacy = Privacy::pure(Epsilon::new(1, 1).unwrap());
        DistanceRequest::new(BoxDomain::unit_cube(2).unwrap(), privacy).alpha(alpha)
    }

    fn points() -> Vec<Vec<f64>> {
        (0..200)
            .map(|i| vec![(i % 10) as f64 / 10.0, 0.5])
            .collect()
    }

    #[test]
    fn invalid_parameters_are_refused_with_typed_errors_before_any_charge() {
        let pts = points();
        for alpha in [0.0, -1.0, 1.5, f64::NAN] {
            assert!(
                matches!(
                    request(Some(alpha)).plan_synopsis(&pts),
                    Err(DistanceError::InvalidParameter(_))
                ),
                "alpha {alpha}"
            );
        }
        assert!(matches!(
            request(None).plan_synopsis(&Vec::<Vec<f64>>::new()),
            Err(DistanceError::EmptyData)
        ));
        assert!(matches!(
            request(None).plan_session(&[[0.5]]),
            Err(DistanceError::DimensionMismatch { .. })
        ));
        // An explicit α whose grid exceeds the cap: typed, with what it implies.
        match request(Some(1e-6)).memory_mib(1).plan_synopsis(&pts) {
            Err(DistanceError::WorkTooLarge {
                what,
                units,
                cap_mib,
                ..
            }) => {
                assert_eq!((what, cap_mib), ("grid points", 1));
                assert!(units as u64 * BYTES_PER_UNIT > 1 << 20);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            request(Some(1e-6)).memory_mib(0).plan_session(&pts),
            Err(DistanceError::WorkTooLarge {
                what: "update rounds",
                ..
            })
        ));
    }

    #[test]
    fn the_accountant_is_bound_and_charged_exactly_the_request() {
        let out = release_synopsis(&points(), &request(Some(0.5)), &mut seeded_rng(3)).unwrap();
        assert_eq!(out.accountant.neighbours(), Some(NEIGHBOURS));
        assert_eq!(out.accountant.remaining(), None);
        assert!(
            out.privacy.ends_with("n = 200 treated as public"),
            "{}",
            out.privacy
        );
        let plan = request(None).plan_session(&points()).unwrap();
        let open = plan.open(&mut seeded_rng(3)).unwrap();
        assert_eq!(open.accountant.neighbours(), Some(NEIGHBOURS));
        assert_eq!(open.accountant.remaining(), None);
    }
}

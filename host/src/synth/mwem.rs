//! Synthetic data by MWEM (thesis Ch. 5, Algorithm 5.1), end to end: the entry
//! point that owns every release decision — the accountant (pure ε, or (ε, δ) with
//! private domain discovery) bound to MWEM's replace-one relation, the discovery
//! share of the budget, the rounds T, the exponential mechanism's profile and its
//! 2/3 scaling under the thesis' literal weights, and the number of rows.
//!
//! Two steps, because the workload is written against the domain, which private
//! discovery only fixes once the data are read: [`MwemRequest::open`] loads the
//! data (charging discovery, if asked for), then [`MwemRun::release`] runs MWEM and
//! samples the rows.
//!
//! ```
//! use privq_host::data::{CsvColumns, DomainSource, MemoryCap};
//! use privq_host::query::Workload;
//! use privq_host::synth::mwem::MwemRequest;
//! use privq_host::{Epsilon, seeded_rng};
//!
//! let path = std::env::temp_dir().join(format!("privq-doc-mwem-{}.csv", std::process::id()));
//! std::fs::write(&path, "a,b\n1,1\n0,0\n1,1\n0,1\n1,1\n0,0\n")?;
//! let request = MwemRequest::new(Epsilon::new(1, 1)?).rounds(Some(5))?;
//! let mut rng = seeded_rng(3);
//! let mut run = request.open(&path, Some(DomainSource::BinaryHeader), &CsvColumns::new(),
//!                            MemoryCap::default(), &mut rng)?;
//! let workload = Workload::marginals(&run.dataset().domain, 2)?;
//! let out = run.release(&workload, &mut rng, &mut |_, _| {})?;
//! assert_eq!(out.cells.len(), 6); // n is public: as many rows as records
//! assert_eq!(run.accountant().spent_epsilon(), Some(Epsilon::new(1, 1)?));
//! std::fs::remove_file(&path)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::Path;

use privq_core::rand_core::{CryptoRng, Rng};
use privq_core::{Epsilon, Error as CoreError};

use crate::accountant::{Accountant, Cost};
use crate::central::mwem::{
    Control, EmProfile, MwemConfig, MwemError, MwemOutput, Progress, mwem_controlled,
    optimal_rounds,
};
use crate::data::{
    CsvColumns, Dataset, Discovered, DiscoveryError, Domain, DomainSource, MemoryCap, Records,
};
use crate::query::Workload;

/// What to release: the budget, how the domain is found, and MWEM's knobs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MwemRequest {
    epsilon: Epsilon,
    discovery: Option<(Epsilon, f64)>,
    profile: EmProfile,
    optimized: bool,
    rounds: Option<usize>,
    rows: Option<usize>,
}

/// Why an MWEM release could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MwemSynthError {
    /// The discovery share leaves nothing of the budget for MWEM.
    #[error("a discovery share of {share} leaves nothing of epsilon {total} for the release")]
    DiscoveryShare {
        /// ε of discovery.
        share: Epsilon,
        /// The whole budget.
        total: Epsilon,
    },
    /// An exact split of the budget overflowed (ε's denominator is too large).
    #[error("splitting the budget: {0}")]
    Split(#[source] CoreError),
    /// Loading the data, or private domain discovery.
    #[error(transparent)]
    Data(#[from] DiscoveryError),
    /// MWEM refused (rounds, workload, budget).
    #[error(transparent)]
    Mwem(#[from] MwemError),
    /// Private domain discovery was asked of a table already read over a domain
    /// ([`MwemRequest::open_records`]).
    #[error("private domain discovery reads the data itself: give a public domain")]
    DiscoveryNeedsFile,
}

impl MwemRequest {
    /// A pure ε-DP release over a public domain: the corrected exponential
    /// mechanism, the §5.3.2 optimizations, T* rounds (Thm 5.2.11, clamped to
    /// 5..=50) and as many rows as records.
    pub fn new(epsilon: Epsilon) -> Self {
        MwemRequest {
            epsilon,
            discovery: None,
            profile: EmProfile::Corrected,
            optimized: true,
            rounds: None,
            rows: None,
        }
    }

    /// Discovers the domain privately (DP partition selection) with `share` of the
    /// budget (default: a quarter of it) at `delta`; the release becomes (ε, δ)-DP.
    pub fn discover(mut self, share: Option<Epsilon>, delta: f64) -> Result<Self, MwemSynthError> {
        let total = self.epsilon;
        let share = match share {
            Some(s) => s,
            None => total.checked_div_int(4).map_err(MwemSynthError::Split)?,
        };
        total
            .checked_sub(share)
            .map_err(MwemSynthError::Split)?
            .ok_or(MwemSynthError::DiscoveryShare { share, total })?;
        if !(delta > 0.0 && delta < 1.0) {
            return Err(MwemSynthError::Data(DiscoveryError::InvalidDelta(delta)));
        }
        self.discovery = Some((share, delta));
        Ok(self)
    }

    /// The exponential mechanism's parameterization.
    pub fn profile(mut self, profile: EmProfile) -> Self {
        self.profile = profile;
        self
    }

    /// With (`true`, the default) or without the §5.3.2 improvements.
    pub fn optimized(mut self, optimized: bool) -> Self {
        self.optimized = optimized;
        self
    }

    /// The rounds T (at least 1); `None`: T* of Thm 5.2.11, clamped to 5..=50.
    pub fn rounds(mut self, rounds: Option<usize>) -> Result<Self, MwemSynthError> {
        if rounds == Some(0) {
            return Err(MwemSynthError::Mwem(MwemError::InvalidParameter(
                "the number of rounds T must be at least 1",
            )));
        }
        self.rounds = rounds;
        Ok(self)
    }

    /// How many synthetic rows to release (public; default: the number of records).
    pub fn rows(mut self, rows: Option<usize>) -> Self {
        self.rows = rows;
        self
    }

    /// The whole budget ε.
    pub fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    /// The discovery share and δ, if the domain is discovered.
    pub fn discovery(&self) -> Option<(Epsilon, f64)> {
        self.discovery
    }

    /// The exponential mechanism's profile.
    pub fn em_profile(&self) -> EmProfile {
        self.profile
    }

    /// The ε MWEM itself spends: the budget less the discovery share.
    pub fn mwem_epsilon(&self) -> Result<Epsilon, MwemSynthError> {
        match self.discovery {
            None => Ok(self.epsilon),
            Some((share, _)) => self
                .epsilon
                .checked_sub(share)
                .map_err(MwemSynthError::Split)?
                .ok_or(MwemSynthError::DiscoveryShare {
                    share,
                    total: self.epsilon,
                }),
        }
    }

    /// The ε MWEM is configured with: its share, or 2/3 of it under the thesis'
    /// literal weights, whose rounds cost 1.5·ε₀ — so the total never exceeds the
    /// share.
    pub fn configured_epsilon(&self) -> Result<Epsilon, MwemSynthError> {
        let share = self.mwem_epsilon()?;
        match self.profile {
            EmProfile::Corrected => Ok(share),
            EmProfile::ThesisLiteral => share
                .checked_mul_int(2)
                .and_then(|e| e.checked_div_int(3))
                .map_err(MwemSynthError::Split),
        }
    }

    /// The accountant the whole run (discovery, if asked for, and MWEM) is charged
    /// to: exactly the budget ε — with discovery's δ when the domain is discovered —
    /// bound to replace-one neighbours. [`MwemRequest::open`] uses it; a front end
    /// that charges elsewhere first (a budget file) charges this budget.
    pub fn accountant(&self) -> Result<Accountant, MwemSynthError> {
        let mut accountant = match self.discovery {
            Some((_, delta)) => Accountant::approximate(self.epsilon, delta)
                .map_err(|e| MwemSynthError::Data(DiscoveryError::Budget(e)))?,
            None => Accountant::pure(self.epsilon),
        };
        accountant.bind(MwemConfig::NEIGHBOURS);
        Ok(accountant)
    }

    /// Loads the data at `path` over the public domain `public`, or — when
    /// [`MwemRequest::discover`] was asked for — over a privately discovered
    /// domain, charged to the run's accountant. `public` is ignored with discovery.
    pub fn open<R: Rng + CryptoRng + ?Sized>(
        &self,
        path: &Path,
        public: Option<DomainSource>,
        columns: &CsvColumns,
        cap: MemoryCap,
        rng: &mut R,
    ) -> Result<MwemRun, MwemSynthError> {
        let neighbours = MwemConfig::NEIGHBOURS;
        let mut accountant = self.accountant()?;
        let source = match self.discovery {
            Some((epsilon, delta)) => Some(DomainSource::Discover {
                neighbours,
                epsilon,
                delta,
            }),
            None => public,
        };
        let opened =
            crate::data::open_dataset(path, source.as_ref(), columns, &mut accountant, rng, cap)?;
        Ok(MwemRun {
            request: *self,
            dataset: opened.dataset,
            discovered: opened.discovered,
            accountant,
        })
    }
}

impl MwemRequest {
    /// Charges a front end's session accountant this release's whole budget
    /// before it runs, as [`SynthRequest::charge_to`](super::release::SynthRequest::charge_to)
    /// does for the adaptive mechanism: pure ε under replace-one neighbours (a
    /// zCDP session is charged its ρ = ε²/2), through
    /// [`Accountant::charge_binding`]: an unbound session with no charges is bound
    /// to replace-one; one bound to another relation, or unbound but holding
    /// charges, refuses.
    pub fn charge_to(
        &self,
        session: &mut Accountant,
        label: &str,
    ) -> Result<crate::accountant::Receipt, MwemSynthError> {
        let budget = |e| MwemSynthError::Data(DiscoveryError::Budget(e));
        let neighbours = MwemConfig::NEIGHBOURS;
        let cost = match self.discovery {
            Some((_, delta)) => Cost::Approximate {
                epsilon: self.epsilon,
                delta,
            },
            None => Cost::Pure(self.epsilon),
        };
        session
            .charge_binding(neighbours, label, cost)
            .map_err(budget)
    }

    /// [`MwemRequest::open`] for a table already read over the public `domain`
    /// (a front end's DataFrame, [`Records::from_dictionary_columns`]): the same
    /// run, the same accountant, and for the same seed the same release as from
    /// the CSV file holding those rows. Private domain discovery reads a file;
    /// a request that asks for it is refused here.
    pub fn open_records(
        &self,
        records: &Records,
        domain: &Domain,
        cap: MemoryCap,
    ) -> Result<MwemRun, MwemSynthError> {
        if self.discovery.is_some() {
            return Err(MwemSynthError::DiscoveryNeedsFile);
        }
        let accountant = self.accountant()?;
        let dataset = Dataset::from_records("table", records, domain.clone(), cap)
            .map_err(DiscoveryError::Data)?;
        Ok(MwemRun {
            request: *self,
            dataset,
            discovered: None,
            accountant,
        })
    }
}

/// The data loaded for a release, with the accountant that pays for it (discovery
/// included); the accountant stays here after [`MwemRun::release`], failed or not,
/// so its ledger can always be recorded.
#[derive(Debug)]
pub struct MwemRun {
    request: MwemRequest,
    dataset: Dataset,
    discovered: Option<Discovered>,
    accountant: Accountant,
}

/// An MWEM release.
#[derive(Debug)]
pub struct MwemSynthetic {
    /// The synthetic rows as universe cells (one per row; decode with the domain).
    pub cells: Vec<usize>,
    /// MWEM's released distribution, measurements and step ledger.
    pub output: MwemOutput,
    /// The configuration MWEM ran with.
    pub config: MwemConfig,
}

impl MwemRun {
    /// The data as loaded: the domain is public (or privately discovered); the
    /// counts are private.
    pub fn dataset(&self) -> &Dataset {
        &self.dataset
    }

    /// What discovery released, if the domain was discovered.
    pub fn discovered(&self) -> Option<&Discovered> {
        self.discovered.as_ref()
    }

    /// The accountant: discovery's charge after [`MwemRequest::open`], MWEM's after
    /// [`MwemRun::release`].
    pub fn accountant(&self) -> &Accountant {
        &self.accountant
    }

    /// The rounds the release will run: the request's, or T* (Thm 5.2.11) for the
    /// whole budget, n, the universe and the workload, clamped to 5..=50.
    pub fn rounds(&self, workload: &Workload) -> usize {
        self.request.rounds.unwrap_or_else(|| {
            let (t, _) = optimal_rounds(
                self.request.epsilon.to_f64(),
                self.dataset.counts.total() as f64,
                self.dataset.counts.len() as f64,
                workload.len() as f64,
            );
            t.round().clamp(5.0, 50.0) as usize
        })
    }

    /// Runs MWEM on `workload` and samples the rows from its distribution
    /// (post-processing). `progress` sees every round.
    pub fn release<R: Rng + CryptoRng + ?Sized>(
        &mut self,
        workload: &Workload,
        rng: &mut R,
        progress: Progress<'_>,
    ) -> Result<MwemSynthetic, MwemSynthError> {
        self.release_controlled(workload, rng, &mut |r, t| {
            progress(r, t);
            std::ops::ControlFlow::Continue(())
        })
    }

    /// [`MwemRun::release`], asking `control` before every round whether to go
    /// on (a front end's Ctrl-C): a break ends the run with
    /// [`MwemError::Cancelled`] inside [`MwemSynthError::Mwem`] and releases
    /// nothing; the run's charge stays spent.
    pub fn release_controlled<R: Rng + CryptoRng + ?Sized>(
        &mut self,
        workload: &Workload,
        rng: &mut R,
        control: Control<'_>,
    ) -> Result<MwemSynthetic, MwemSynthError> {
        let rounds = self.rounds(workload);
        let given = self.request.configured_epsilon()?;
        let base = if self.request.optimized {
            MwemConfig::optimized(given, rounds)
        } else {
            MwemConfig::unoptimized(given, rounds)
        }?;
        let config = MwemConfig {
            profile: self.request.profile,
            ..base
        };
        let output = mwem_controlled(
            &self.dataset.counts,
            workload,
            &config,
            &mut self.accountant,
            rng,
            control,
        )?;
        let rows = self
            .request
            .rows
            .unwrap_or(self.dataset.counts.total() as usize);
        let cells = sample_cells(&output.distribution, rows, rng);
        Ok(MwemSynthetic {
            cells,
            output,
            config,
        })
    }
}

impl MwemSynthetic {
    /// `n` more synthetic rows (universe cells) from the released distribution,
    /// drawn as the release's own rows were: post-processing (no data is read,
    /// nothing is charged). A front end's `fit`/`sample` split calls this.
    pub fn sample<R: Rng + ?Sized>(&self, n: usize, rng: &mut R) -> Vec<usize> {
        sample_cells(&self.output.distribution, n, rng)
    }
}

/// `rows` cells drawn from `distribution` by inverse CDF (post-processing of the
/// release: the distribution is public).
fn sample_cells<R: Rng + ?Sized>(distribution: &[f64], rows: usize, rng: &mut R) -> Vec<usize> {
    let cdf: Vec<f64> = distribution
        .iter()
        .scan(0.0, |s, &p| {
            *s += p;
            Some(*s)
        })
        .collect();
    let last = cdf.last().copied().unwrap_or(1.0);
    (0..rows)
        .map(|_| {
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * last;
            cdf.partition_point(|&c| c <= u).min(cdf.len() - 1)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::Neighbours;
    use crate::seeded_rng;

    fn eps(n: u64, d: u64) -> Epsilon {
        Epsilon::new(n, d).unwrap()
    }

    /// Review rev1: a session holding a charge stated under no relation is
    /// refused, not charged and left unbound (so replace-one and add/remove
    /// charges would add up).
    #[test]
    fn charge_to_refuses_an_unbound_session_with_charges() {
        let mut session = Accountant::approximate(eps(3, 1), 1e-5).unwrap();
        session
            .charge("relation-less", Cost::Pure(eps(1, 2)))
            .unwrap();
        assert_eq!(session.neighbours(), None);
        let refused = MwemRequest::new(eps(1, 2)).charge_to(&mut session, "mwem");
        assert!(matches!(
            refused,
            Err(MwemSynthError::Data(DiscoveryError::Budget(
                crate::accountant::AccountantError::UnboundCharges { .. }
            )))
        ));
        assert_eq!(session.ledger().len(), 1);
        assert_eq!(session.neighbours(), None);
        // A bound session of the other relation refuses; an empty one is bound.
        let mut bound = Accountant::approximate(eps(3, 1), 1e-5).unwrap();
        bound.bind(Neighbours::AddRemove);
        assert!(
            MwemRequest::new(eps(1, 2))
                .charge_to(&mut bound, "mwem")
                .is_err()
        );
        let mut empty = Accountant::pure(eps(1, 1));
        MwemRequest::new(eps(1, 2))
            .charge_to(&mut empty, "mwem")
            .unwrap();
        assert_eq!(empty.neighbours(), Some(Neighbours::Replace));
    }

    fn table(name: &str, n: usize) -> std::path::PathBuf {
        let path =
            std::env::temp_dir().join(format!("privq-mwem-{name}-{}.csv", std::process::id()));
        let mut text = String::from("a,b,c\n");
        for i in 0..n {
            text.push_str(&format!("{},{},{}\n", i % 2, (i % 3 == 0) as u8, i % 2));
        }
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn the_accountant_is_bound_to_replace_one_and_spends_exactly_epsilon() {
        let path = table("bound", 60);
        let mut rng = seeded_rng(1);
        let mut run = MwemRequest::new(eps(1, 1))
            .rounds(Some(4))
            .unwrap()
            .open(
                &path,
                Some(DomainSource::BinaryHeader),
                &CsvColumns::new(),
                MemoryCap::default(),
                &mut rng,
            )
            .unwrap();
        let w = Workload::marginals(&run.dataset().domain, 2).unwrap();
        let out = run.release(&w, &mut rng, &mut |_, _| {}).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(run.accountant().neighbours(), Some(Neighbours::Replace));
        assert_eq!(run.accountant().spent_epsilon(), Some(eps(1, 1)));
        assert_eq!(out.cells.len(), 60);
        assert_eq!(out.config.rounds, 4);
    }

    /// A table already read over the domain releases what its CSV file does for
    /// the same seed; a session is charged ε under replace-one first, and more
    /// rows from the release are post-processing.
    #[test]
    fn records_release_what_their_csv_releases() {
        let path = table("records", 90);
        let request = MwemRequest::new(eps(1, 2)).rounds(Some(5)).unwrap();
        let mut rng = seeded_rng(7);
        let mut from_file = request
            .open(
                &path,
                Some(DomainSource::BinaryHeader),
                &CsvColumns::new(),
                MemoryCap::default(),
                &mut rng,
            )
            .unwrap();
        let domain = from_file.dataset().domain.clone();
        let w = Workload::marginals(&domain, 2).unwrap();
        let a = from_file.release(&w, &mut rng, &mut |_, _| {}).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let records = Records::from_csv(text.as_bytes(), &domain, &CsvColumns::new()).unwrap();
        let mut session = Accountant::pure(eps(1, 1));
        request.charge_to(&mut session, "mwem").unwrap();
        assert_eq!(session.neighbours(), Some(Neighbours::Replace));
        assert_eq!(session.spent_epsilon(), Some(eps(1, 2)));
        let mut from_records = request
            .open_records(&records, &domain, MemoryCap::default())
            .unwrap();
        assert_eq!(from_records.dataset().counts, from_file.dataset().counts);
        let mut rng = seeded_rng(7);
        let b = from_records.release(&w, &mut rng, &mut |_, _| {}).unwrap();
        assert_eq!(a.cells, b.cells);
        let more = b.sample(500, &mut seeded_rng(1));
        assert_eq!(more, b.sample(500, &mut seeded_rng(1)));
        assert_eq!(more.len(), 500);
        assert!(more.iter().all(|&c| c < domain.size()));
        // The session is spent: a second charge is refused.
        assert!(request.charge_to(&mut session, "again").is_ok());
        assert!(request.charge_to(&mut session, "past").is_err());
        // Discovery reads a file: refused for a table already read.
        let discovering = MwemRequest::new(eps(1, 1)).discover(None, 1e-6).unwrap();
        assert!(matches!(
            discovering.open_records(&records, &domain, MemoryCap::default()),
            Err(MwemSynthError::DiscoveryNeedsFile)
        ));
    }

    #[test]
    fn discovery_takes_its_share_and_makes_the_run_approximate() {
        let path = table("discover", 2000);
        let mut rng = seeded_rng(2);
        let request = MwemRequest::new(eps(4, 1)).discover(None, 1e-6).unwrap();
        assert_eq!(request.discovery(), Some((eps(1, 1), 1e-6)));
        assert_eq!(request.mwem_epsilon().unwrap(), eps(3, 1));
        let mut run = request
            .open(
                &path,
                None,
                &CsvColumns::new(),
                MemoryCap::default(),
                &mut rng,
            )
            .unwrap();
        assert!(run.discovered().is_some());
        let w = Workload::marginals(&run.dataset().domain, 1).unwrap();
        let out = run.release(&w, &mut rng, &mut |_, _| {}).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(out.cells.len(), 2000);
        assert_eq!(run.accountant().spent_epsilon(), Some(eps(4, 1)));
        assert!(run.accountant().spent_delta() > 0.0);
    }

    #[test]
    fn bad_requests_are_refused_before_the_data_are_read() {
        assert!(matches!(
            MwemRequest::new(eps(1, 1)).discover(Some(eps(1, 1)), 1e-6),
            Err(MwemSynthError::DiscoveryShare { .. })
        ));
        assert!(MwemRequest::new(eps(1, 1)).discover(None, 0.0).is_err());
        assert!(MwemRequest::new(eps(1, 1)).rounds(Some(0)).is_err());
        // The literal profile is configured with 2/3 of MWEM's share.
        let literal = MwemRequest::new(eps(3, 4)).profile(EmProfile::ThesisLiteral);
        assert_eq!(literal.configured_epsilon().unwrap(), eps(1, 2));
    }
}

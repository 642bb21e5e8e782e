//! Private synthetic data by adaptive marginals, end to end: the entry point that
//! owns every release decision — the zCDP accountant and its budget, the neighbour
//! relation (given once, for the accountant, the mechanism and the estimator),
//! whether the number of records is public, whether empty data may run, and how
//! many rows are released. Front ends (`privq synth`, bindings) parse, call
//! [`synthesize`] and print what it returns.
//!
//! ```
//! use privq_host::contract::Neighbours;
//! use privq_host::data::{Domain, Records};
//! use privq_host::synth::adaptive::MarginalWorkload;
//! use privq_host::synth::release::{SynthRequest, synthesize};
//! use privq_host::{Epsilon, seeded_rng};
//!
//! let domain = Domain::binary(["smoker", "cough"])?;
//! let csv = "smoker,cough\n1,1\n0,0\n0,1\n1,1\n0,0\n";
//! let records = Records::from_csv(csv.as_bytes(), &domain, &Default::default())?;
//! let workload = MarginalWorkload::all_k_way(&domain, 2)?;
//! let request = SynthRequest::new(Epsilon::new(1, 1)?, 1e-9, Neighbours::Replace)?;
//! let out = synthesize(&records, &domain, &workload, &request, &mut seeded_rng(7), &mut |_| {})?;
//! assert_eq!(out.rows.len(), 5); // n is public under replace-one neighbours
//! assert!(out.guarantee.epsilon <= 1.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::ops::ControlFlow;
use std::time::Duration;

use privq_core::rand_core::{CryptoRng, Rng};

use privq_core::{Epsilon, Rho};

use super::adaptive::{
    AdaptiveConfig, AdaptiveError, AdaptiveOutput, MarginalWorkload, PgmEstimator, RoundLog,
    Schedule, adaptive_marginals_controlled,
};
use super::refine::{Refinement, refine, refine_targets};
use super::{Clique, Model};
use crate::accountant::{Accountant, Cost, PrivacyLoss, Receipt, RunCost};
use crate::contract::Neighbours;
use crate::data::{DataError, Domain, Records};

impl From<super::bins::BinningError> for AdaptiveError {
    fn from(e: super::bins::BinningError) -> Self {
        use super::bins::BinningError as B;
        match e {
            B::Data(d) => AdaptiveError::Data(d),
            B::Mechanism(m) => AdaptiveError::Mechanism(m),
            other => AdaptiveError::InvalidParameter(other.to_string()),
        }
    }
}

/// The ρ the private binning of `domain`'s bounded attributes takes from a run
/// with budget `budget` ([`BINNING_SHARE`](super::bins::BINNING_SHARE)), or
/// `None` when no attribute needs bins.
fn binning_rho(domain: &Domain, budget: Rho) -> Result<Option<Rho>, AdaptiveError> {
    if !domain.attributes().iter().any(|a| a.needs_bins()) {
        return Ok(None);
    }
    Ok(Some(super::bins::PrivateBinning::share_of(budget)?))
}

/// What to release: the privacy parameters and the public knobs, validated when
/// set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SynthRequest {
    epsilon: Epsilon,
    delta: f64,
    neighbours: Neighbours,
    rounds: Option<usize>,
    max_model_cells: u128,
    rows: Option<usize>,
    time_budget: Option<Duration>,
}

impl SynthRequest {
    /// An (ε, δ) release under `neighbours`, with the mechanism's defaults (16·d
    /// rounds, a 4 MiB model, as many rows as the data has — or, under
    /// add/remove, as the model estimates). δ must lie in (0, 1).
    pub fn new(
        epsilon: Epsilon,
        delta: f64,
        neighbours: Neighbours,
    ) -> Result<Self, AdaptiveError> {
        if !(delta > 0.0 && delta < 1.0) {
            return Err(AdaptiveError::InvalidParameter(format!(
                "δ = {delta} is not in (0, 1)"
            )));
        }
        Ok(SynthRequest {
            epsilon,
            delta,
            neighbours,
            rounds: None,
            max_model_cells: AdaptiveConfig::new(neighbours).max_model_cells,
            rows: None,
            time_budget: None,
        })
    }

    /// Planned rounds T (default 16·d); the one-way marginals use d of them.
    pub fn rounds(mut self, rounds: Option<usize>) -> Self {
        self.rounds = rounds;
        self
    }

    /// The cap on the model's size in MiB of `f64` cells (at least 1).
    pub fn max_model_mib(mut self, mib: u64) -> Result<Self, AdaptiveError> {
        if mib == 0 {
            return Err(AdaptiveError::InvalidParameter(
                "the model's size cap must be at least 1 MiB".into(),
            ));
        }
        self.max_model_cells = u128::from(mib) << 17;
        Ok(self)
    }

    /// The seconds the model fitting may take (default: no limit): fewer rounds,
    /// the last one larger, and a shorter final fit, never a different charge;
    /// the guarantee then assumes the machine's speed independent of the data
    /// ([`AdaptiveConfig::time_budget`] says more). Refuses a number that is not
    /// a positive, finite count of seconds from 10⁻⁹ to a year.
    ///
    /// ```
    /// use privq_host::contract::Neighbours;
    /// use privq_host::synth::release::SynthRequest;
    /// use privq_host::Epsilon;
    /// let request = SynthRequest::new(Epsilon::new(1, 1)?, 1e-9, Neighbours::AddRemove)?;
    /// let quick = request.time_budget(Some(2.5))?;
    /// assert!(request.time_budget(Some(0.0)).is_err());
    /// assert!(request.time_budget(Some(f64::NAN)).is_err());
    /// assert!(request.time_budget(Some(1e300)).is_err()); // over a year
    /// assert!(request.time_budget(Some(1e-10)).is_err()); // below the clock's grain
    /// # let _ = quick;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn time_budget(mut self, seconds: Option<f64>) -> Result<Self, AdaptiveError> {
        self.time_budget = match seconds {
            None => None,
            Some(s) => {
                // A year is far beyond any release; a nanosecond is the clock's grain.
                const MAX: f64 = 365.0 * 24.0 * 3600.0;
                if !(s.is_finite() && s > 0.0) {
                    return Err(AdaptiveError::InvalidParameter(format!(
                        "the time budget must be a positive number of seconds, not {s:?}"
                    )));
                }
                if !(1e-9..=MAX).contains(&s) {
                    return Err(AdaptiveError::InvalidParameter(format!(
                        "the time budget must be a positive number of seconds from 1e-9 (the \
                         clock's nanosecond) to {MAX} (a year), not {s:?}"
                    )));
                }
                Some(Duration::from_secs_f64(s))
            }
        };
        Ok(self)
    }

    /// How many synthetic rows to release (public; default: see [`SynthRequest::new`]).
    pub fn rows(mut self, rows: Option<usize>) -> Self {
        self.rows = rows;
        self
    }

    /// The budget ε.
    pub fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    /// The budget δ.
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// The neighbour relation of the guarantee.
    pub fn neighbours(&self) -> Neighbours {
        self.neighbours
    }

    /// The accountant the release runs under: a fresh ρ-zCDP budget, the largest ρ
    /// whose conversion meets (ε, δ), bound to the request's relation.
    pub fn accountant(&self) -> Result<Accountant, AdaptiveError> {
        let mut accountant = Accountant::zcdp_for(self.epsilon, self.delta)?;
        accountant.bind(self.neighbours);
        Ok(accountant)
    }

    /// Refuses `records` that this request cannot release, before anything is
    /// charged: empty data when n is public (replace-one neighbours). Under
    /// add/remove the empty dataset is a valid input like any other.
    pub fn admits(&self, records: &Records) -> Result<(), AdaptiveError> {
        if records.is_empty() && self.neighbours.n_is_public() {
            return Err(AdaptiveError::Data(DataError::EmptyData));
        }
        Ok(())
    }

    /// A dry run: validates the request against `records`, the public `domain`
    /// and `workload` — everything [`synthesize`] checks before it samples — and
    /// states what the release will cost and do, without charging anything or
    /// drawing any randomness. The cost is the one [`charge_to`](Self::charge_to)
    /// charges a session and a budget file is charged ([`RunCost::of`] of the
    /// run's accountant). The number of records is read only under replace-one
    /// neighbours (n public); under add/remove, with no number of rows requested,
    /// the rows are [`PlannedRows::Hidden`].
    ///
    /// ```
    /// use privq_host::contract::Neighbours;
    /// use privq_host::data::{Domain, Records};
    /// use privq_host::synth::adaptive::MarginalWorkload;
    /// use privq_host::synth::release::{PlannedRows, SynthRequest};
    /// use privq_host::Epsilon;
    ///
    /// let domain = Domain::binary(["smoker", "cough"])?;
    /// let records = Records::from_csv("smoker,cough\n1,1\n0,0\n".as_bytes(), &domain, &Default::default())?;
    /// let workload = MarginalWorkload::all_k_way(&domain, 2)?;
    /// let request = SynthRequest::new(Epsilon::new(1, 1)?, 1e-9, Neighbours::AddRemove)?;
    /// let plan = request.plan(&records, &domain, &workload)?;
    /// assert_eq!(plan.cost.epsilon(), Epsilon::new(1, 1)?);
    /// assert_eq!((plan.rounds, plan.one_way_rounds), (32, 2));
    /// assert_eq!(plan.rows, PlannedRows::Hidden); // n is private under add/remove
    /// let replace = SynthRequest::new(Epsilon::new(1, 1)?, 1e-9, Neighbours::Replace)?;
    /// assert_eq!(replace.plan(&records, &domain, &workload)?.rows, PlannedRows::Exactly(2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn plan(
        &self,
        records: &Records,
        domain: &Domain,
        workload: &MarginalWorkload,
    ) -> Result<SynthPlan, AdaptiveError> {
        self.admits(records)?;
        // The records are read only where n is public; under add/remove the plan
        // is the public one, the same for every dataset.
        let n = self.neighbours.n_is_public().then(|| records.len());
        self.plan_from(n, domain, workload)
    }

    /// The plan from public parameters alone: the request, the public `domain`
    /// and `workload`, with no records. Under add/remove neighbours this is the
    /// whole plan ([`plan`](Self::plan) reads nothing from the records there and
    /// returns this for every dataset), so a front end can refuse what the
    /// public parameters refuse (too few rounds, a budget too small to split)
    /// before it charges a budget file, and before the input is read. Under
    /// replace-one neighbours n is public and part of the plan: with no number of
    /// rows requested this refuses (the rows are n; call `plan`), and it does not
    /// check the records' [`admits`](Self::admits).
    ///
    /// ```
    /// use privq_host::contract::Neighbours;
    /// use privq_host::data::{Domain, Records};
    /// use privq_host::synth::adaptive::MarginalWorkload;
    /// use privq_host::synth::release::SynthRequest;
    /// use privq_host::Epsilon;
    ///
    /// let domain = Domain::binary(["smoker", "cough"])?;
    /// let records = Records::from_csv("smoker,cough\n1,1\n".as_bytes(), &domain, &Default::default())?;
    /// let workload = MarginalWorkload::all_k_way(&domain, 2)?;
    /// let request = SynthRequest::new(Epsilon::new(1, 1)?, 1e-9, Neighbours::AddRemove)?;
    /// assert_eq!(request.plan_public(&domain, &workload)?, request.plan(&records, &domain, &workload)?);
    /// assert!(request.rounds(Some(1)).plan_public(&domain, &workload).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn plan_public(
        &self,
        domain: &Domain,
        workload: &MarginalWorkload,
    ) -> Result<SynthPlan, AdaptiveError> {
        self.plan_from(None, domain, workload)
    }

    /// The plan given n where it is public (`None`: not read).
    fn plan_from(
        &self,
        n: Option<usize>,
        domain: &Domain,
        workload: &MarginalWorkload,
    ) -> Result<SynthPlan, AdaptiveError> {
        let accountant = self.accountant()?;
        let cost = RunCost::of(&accountant)?;
        let available = accountant.remaining_rho().ok_or_else(|| {
            AdaptiveError::InvalidParameter("the request's budget rounds to no ρ".into())
        })?;
        // Bounded attributes are binned first, with a public share of the budget;
        // the adaptive mechanism spends the rest.
        let binning_rho = binning_rho(domain, available)?;
        let available = match binning_rho {
            None => available,
            Some(b) => available.checked_sub(b)?.ok_or_else(|| {
                AdaptiveError::InvalidParameter("the binning share leaves no ρ".into())
            })?,
        };
        let d = domain.dims();
        let schedule = Schedule::new(available, self.rounds, d)?;
        // Round 0's ρ's, by the run's own function; a bounded attribute's size is
        // known only after its private binning, so then they are not stated.
        let one_way_rhos = if binning_rho.is_none() {
            let sizes: Vec<usize> = domain.attributes().iter().map(|a| a.size()).collect();
            Some(schedule.one_way_rhos(&sizes)?)
        } else {
            None
        };
        let rows = match (self.rows, self.neighbours, n) {
            (Some(r), _, _) => PlannedRows::Exactly(r),
            (None, Neighbours::Replace, Some(n)) => PlannedRows::Exactly(n),
            (None, Neighbours::Replace, None) => {
                return Err(AdaptiveError::InvalidParameter(
                    "under replace-one neighbours the rows released are n, which a plan \
                     from public parameters alone does not read: plan with the records"
                        .into(),
                ));
            }
            (None, Neighbours::AddRemove, _) => PlannedRows::Hidden,
        };
        Ok(SynthPlan {
            cost,
            neighbours: self.neighbours,
            rounds: schedule.rounds,
            one_way_rounds: d,
            one_way_rhos,
            max_rounds: 4 * schedule.rounds,
            measure_rho: schedule.measure_rho(),
            select_epsilon: schedule.select_epsilon(),
            candidates: workload.candidates().len(),
            max_model_cells: self.max_model_cells,
            time_budget: self.time_budget,
            rows,
            binning_rho,
        })
    }

    /// Charges this release's whole budget, as `label`, to `session`: an accountant
    /// that spans several releases (a notebook's, a curator's), charged before the
    /// release runs, as a budget file is ([`BudgetFile::charge_accountant`]). A
    /// zCDP session is charged the run's ρ (ρ's add exactly); a basic one the
    /// (ε, δ) of its guarantee ([`RunCost::of`]: the request's ε, which its ρ meets
    /// at its δ). The charge is stated under the request's relation; a session not
    /// yet bound to one is bound to it by its first charge, so later releases under
    /// the other relation are refused (their costs would not add up). On refusal
    /// nothing is charged.
    ///
    /// [`BudgetFile::charge_accountant`]: crate::accountant::BudgetFile::charge_accountant
    ///
    /// ```
    /// use privq_host::accountant::Accountant;
    /// use privq_host::contract::Neighbours;
    /// use privq_host::synth::release::SynthRequest;
    /// use privq_host::Epsilon;
    /// let mut session = Accountant::approximate(Epsilon::new(3, 2)?, 1e-6)?;
    /// let request = SynthRequest::new(Epsilon::new(1, 1)?, 1e-9, Neighbours::AddRemove)?;
    /// request.charge_to(&mut session, "first release")?;
    /// assert!(request.charge_to(&mut session, "second release").is_err());
    /// assert_eq!(session.ledger().len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn charge_to(
        &self,
        session: &mut Accountant,
        label: &str,
    ) -> Result<Receipt, AdaptiveError> {
        let run = RunCost::of(&self.accountant()?)?;
        let cost = session_cost(&run, session);
        Ok(session.charge_binding(self.neighbours, label, cost)?)
    }
}

/// The cost a session accountant is charged for a run: its ρ for a zCDP session,
/// the (ε, δ) of its guarantee for a basic one.
fn session_cost(run: &RunCost, session: &Accountant) -> Cost {
    if session.is_zcdp() {
        run.cost()
    } else {
        Cost::Approximate {
            epsilon: run.epsilon(),
            delta: run.delta(),
        }
    }
}

/// How many rows a release holds, as known before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlannedRows {
    /// Exactly this many: the requested number, or n under replace-one neighbours
    /// (where n is public).
    Exactly(usize),
    /// Decided by the run and not known before it: the model's noisy total, under
    /// add/remove neighbours (where n is private) with no number requested.
    Hidden,
}

/// What a release will cost and do, stated before it runs ([`SynthRequest::plan`]).
/// Everything in it is public: it is read from the request, the public domain and
/// workload, and the number of records only where the relation makes it public.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SynthPlan {
    /// The run's cost: ρ as stated ([`RunCost::cost`]), and the (ε, δ) a basic
    /// accountant or a budget file is charged for it.
    pub cost: RunCost,
    /// The neighbour relation the cost is stated under.
    pub neighbours: Neighbours,
    /// Planned rounds T; the run takes at most about T (annealing only makes
    /// rounds costlier).
    pub rounds: usize,
    /// The one-way marginals measured in round 0 (d, one per attribute); their
    /// ρ's are `one_way_rhos`, not `measure_rho` each.
    pub one_way_rounds: usize,
    /// Round 0's measurement ρ per attribute (a larger attribute's is larger, all
    /// of them together at most `max(d, ⌊T/4⌋)`·`measure_rho`), computed by the
    /// function the run uses; `None` when an attribute is binned first (its size
    /// is known only after the binning).
    pub one_way_rhos: Option<Vec<Rho>>,
    /// The round loop's bound (4·T, a backstop: the run ends when the budget is
    /// spent, after about T rounds at most).
    pub max_rounds: usize,
    /// The ρ of each measurement in rounds 1, 2, … (annealing raises it; round
    /// 0's are `one_way_rhos`).
    pub measure_rho: Rho,
    /// The ε of each selection in the first rounds (annealing raises it).
    pub select_epsilon: Epsilon,
    /// How many marginals the workload offers for selection.
    pub candidates: usize,
    /// The cap on the model's size, in `f64` cells.
    pub max_model_cells: u128,
    /// The time the model fitting may take ([`SynthRequest::time_budget`]).
    pub time_budget: Option<Duration>,
    /// How many synthetic rows the release holds.
    pub rows: PlannedRows,
    /// The ρ of the private binning of the attributes declared by their bounds
    /// only ([`crate::synth::bins`]), charged first; `None` when there are none.
    pub binning_rho: Option<Rho>,
}

impl SynthPlan {
    /// The cost `session` would be charged for this run by
    /// [`SynthRequest::charge_to`]: its ρ for a zCDP session, its (ε, δ) for a
    /// basic one.
    pub fn session_cost(&self, session: &Accountant) -> Cost {
        session_cost(&self.cost, session)
    }
}

/// A release: the rows, what produced them, and what it cost.
#[derive(Debug)]
pub struct Synthetic {
    /// The synthetic rows: one value index per attribute of [`Synthetic::domain`].
    pub rows: Vec<Vec<usize>>,
    /// The domain of the rows: the request's, with the bins chosen privately for
    /// every attribute declared by its bounds only (write the rows with it).
    pub domain: Domain,
    /// The ρ spent on private binning (charged first), `None` when no attribute
    /// was declared by its bounds only.
    pub binning_rho: Option<Rho>,
    /// With private binning: the rows to write, over the request's domain, each
    /// privately binned attribute's value a grid cell drawn uniformly within its
    /// row's bin ([`spread`](super::bins::spread), post-processing). `None`
    /// without private binning: write [`Synthetic::rows`].
    pub spread: Option<Vec<Vec<usize>>>,
    /// The fitted model, the noisy measurements and the round log (all public).
    pub output: AdaptiveOutput<Model>,
    /// The model's marginals on the workload's small cliques
    /// ([`refine_targets`] for any number of rows):
    /// what the rows, and every later [`Synthetic::sample`], are refined towards
    /// (computed once: post-processing of the model).
    pub targets: Vec<(Clique, Vec<f64>)>,
    /// What the refinement of [`Synthetic::rows`] did.
    pub refinement: Refinement,
    /// The accountant that paid for the release, bound to the request's relation;
    /// its ledger is the release's.
    pub accountant: Accountant,
    /// The guarantee of what was spent: ρ converted to (ε, δ) at the request's δ.
    pub guarantee: PrivacyLoss,
}

impl Synthetic {
    /// `n` more synthetic rows from the released model: post-processing of the
    /// release (no data is read, nothing is charged), drawn as the release's own
    /// rows were (randomized rounding, refined towards the model's workload
    /// marginals, then, with private binning, spread over `request_domain`'s
    /// grid). `request_domain` is the domain the release was requested over;
    /// the rows are over it with private binning, else over
    /// [`Synthetic::domain`] (the same two domains the release's rows are written
    /// with). A front end's `fit`/`sample` split (`privq.Synthesizer`) calls this.
    pub fn sample<R: Rng + ?Sized>(
        &self,
        n: usize,
        request_domain: &Domain,
        rng: &mut R,
    ) -> Result<Vec<Vec<usize>>, AdaptiveError> {
        let (rows, _) = draw_rows(&self.output.model, &self.targets, &self.domain, n, rng)?;
        match &self.spread {
            Some(_) => Ok(super::bins::spread(
                &rows,
                &self.domain,
                request_domain,
                rng,
            )?),
            None => Ok(rows),
        }
    }
}

/// The model's marginals on `workload`'s cliques that [`refine_targets`] keeps
/// for any number of rows.
fn model_targets(
    model: &Model,
    workload: &MarginalWorkload,
    domain: &Domain,
) -> Result<Vec<(Clique, Vec<f64>)>, AdaptiveError> {
    let sizes: Vec<usize> = domain.attributes().iter().map(|a| a.size()).collect();
    let cliques = refine_targets(
        workload.cliques().iter().map(|(c, _)| c),
        &sizes,
        usize::MAX,
    );
    let marginals = crate::parallel::try_map(&cliques, |c| model.marginal(c))?;
    Ok(cliques.into_iter().cloned().zip(marginals).collect())
}

/// `n` rows from `model` (over `domain`) by randomized rounding, refined towards
/// those of `targets` ([`model_targets`]) with no more cells than rows — the same
/// [`refine_targets`] would choose for `n` rows, since both take the smallest
/// first ([`super::refine`]): post-processing of the model, no data read.
fn draw_rows<R: Rng + ?Sized>(
    model: &Model,
    targets: &[(Clique, Vec<f64>)],
    domain: &Domain,
    n: usize,
    rng: &mut R,
) -> Result<(Vec<Vec<usize>>, Refinement), AdaptiveError> {
    let mut rows = model.sample_rows_rounded(n, rng)?;
    let sizes: Vec<usize> = domain.attributes().iter().map(|a| a.size()).collect();
    let within: Vec<(Clique, Vec<f64>)> = targets
        .iter()
        .filter(|(c, _)| c.cells_u128(&sizes) <= n as u128)
        .cloned()
        .collect();
    let done = refine(&mut rows, &sizes, within, rng)?;
    Ok((rows, done))
}

/// Releases synthetic rows of `records` over the public `domain`, answering the
/// marginals of `workload` well: the adaptive-marginals mechanism under a fresh
/// ρ-zCDP accountant for the request's (ε, δ), then rows sampled from the model by
/// randomized rounding and refined towards its workload marginals
/// (post-processing, [`super::refine`]). Under replace-one neighbours n is public:
/// the model's total is the exact n and empty data is refused; under add/remove the
/// total is estimated from the noisy marginals and empty data runs like any other.
/// `progress` sees every round. The fresh accountant is returned with the release;
/// if the run fails after its first charge (the private binning's, or a round's),
/// the record of what was spent goes with it: a caller who must keep that record
/// charges the whole run to its own ledger first ([`SynthRequest::charge_to`]).
pub fn synthesize<R: Rng + CryptoRng + ?Sized>(
    records: &Records,
    domain: &Domain,
    workload: &MarginalWorkload,
    request: &SynthRequest,
    rng: &mut R,
    progress: &mut dyn FnMut(&RoundLog),
) -> Result<Synthetic, AdaptiveError> {
    synthesize_controlled(records, domain, workload, request, rng, &mut |r| {
        progress(r);
        ControlFlow::Continue(())
    })
}

/// [`synthesize`], stopped when `control` breaks after a round (a front end's
/// Ctrl-C): the run ends with [`AdaptiveError::Cancelled`] and nothing is
/// released. A session charged for the release beforehand
/// ([`SynthRequest::charge_to`]) keeps the charge: the rounds already run
/// measured the data.
pub fn synthesize_controlled<R: Rng + CryptoRng + ?Sized>(
    records: &Records,
    domain: &Domain,
    workload: &MarginalWorkload,
    request: &SynthRequest,
    rng: &mut R,
    control: &mut dyn FnMut(&RoundLog) -> ControlFlow<()>,
) -> Result<Synthetic, AdaptiveError> {
    let neighbours = request.neighbours;
    request.admits(records)?;
    let mut accountant = request.accountant()?;
    // Attributes declared by their bounds only are binned first, charged to the
    // same accountant (a public share of its ρ); everything after runs on the
    // chosen bins.
    let budget = accountant.rho_budget().ok_or_else(|| {
        AdaptiveError::InvalidParameter("the request's budget rounds to no ρ".into())
    })?;
    let binning_rho = binning_rho(domain, budget)?;
    let binned = match binning_rho {
        None => None,
        Some(rho) => {
            let binning = super::bins::PrivateBinning::new(domain, neighbours, rho)?;
            Some(binning.release(records, domain, &mut accountant, rng)?)
        }
    };
    let input_domain = domain;
    let (records, domain) = match &binned {
        Some(b) => (&b.records, &b.domain),
        None => (records, domain),
    };
    let config = AdaptiveConfig {
        rounds: request.rounds,
        max_model_cells: request.max_model_cells,
        time_budget: request.time_budget,
        ..AdaptiveConfig::new(neighbours)
    };
    let n = records.len();
    let estimator = PgmEstimator::new(domain, neighbours, n);
    let output = adaptive_marginals_controlled(
        records,
        domain,
        workload,
        &config,
        &estimator,
        &mut accountant,
        rng,
        control,
    )?;
    let rows = match (request.rows, neighbours) {
        (Some(r), _) => r,
        (None, Neighbours::Replace) => n,
        // The model's total is fitted to the noisy marginals (post-processing).
        (None, Neighbours::AddRemove) => {
            let total = output.model.total();
            if !total.is_finite() {
                return Err(AdaptiveError::InvalidParameter(format!(
                    "the model's estimated total is {total}; give the number of rows"
                )));
            }
            total.round().max(1.0) as usize
        }
    };
    let targets = model_targets(&output.model, workload, domain)?;
    let (rows, refinement) = draw_rows(&output.model, &targets, domain, rows, rng)?;
    let spread = match &binned {
        Some(_) => Some(super::bins::spread(&rows, domain, input_domain, rng)?),
        None => None,
    };
    let guarantee = accountant.spent_guarantee()?;
    Ok(Synthetic {
        spread,
        rows,
        targets,
        refinement,
        domain: domain.clone(),
        binning_rho,
        output,
        accountant,
        guarantee,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accountant::AccountantError;
    use crate::seeded_rng;
    use crate::synth::adaptive::adaptive_marginals;

    fn table(n: usize) -> (Domain, Records, MarginalWorkload) {
        let domain = Domain::binary(["a", "b", "c"]).unwrap();
        let a: Vec<u32> = (0..n).map(|i| (i % 2) as u32).collect();
        let b: Vec<u32> = (0..n).map(|i| (i % 3 == 0) as u32).collect();
        let c: Vec<u32> = a.clone();
        let records = Records::from_columns(vec![a, b, c], &domain).unwrap();
        let workload = MarginalWorkload::all_k_way(&domain, 2).unwrap();
        (domain, records, workload)
    }

    fn request(neighbours: Neighbours) -> SynthRequest {
        SynthRequest::new(Epsilon::new(1, 1).unwrap(), 1e-9, neighbours).unwrap()
    }

    /// Σ over the workload of the L1 distance between the rows' marginals and the
    /// model's, scaled to the rows.
    fn distance_to_model(rows: &[Vec<usize>], out: &Synthetic, w: &MarginalWorkload) -> f64 {
        let sizes: Vec<usize> = out.domain.attributes().iter().map(|a| a.size()).collect();
        let targets: Vec<_> = w
            .cliques()
            .iter()
            .map(|(c, _)| (c.clone(), out.output.model.marginal(c).unwrap()))
            .collect();
        crate::synth::refine::distance(rows, &sizes, &targets)
    }

    #[test]
    fn released_rows_are_refined_towards_the_models_workload_marginals() {
        // Five binary attributes, pairs correlated; all 3-way marginals (rounding
        // the model's rows to whole records leaves them off the model's).
        let n = 3000;
        let domain = Domain::binary(["a", "b", "c", "d", "e"]).unwrap();
        let cols: Vec<Vec<u32>> = (0..5u32)
            .map(|j| {
                (0..n as u32)
                    .map(|i| (i * (j + 3) / 7 + i / (j + 2)) % 2)
                    .collect()
            })
            .collect();
        let records = Records::from_columns(cols, &domain).unwrap();
        let workload = MarginalWorkload::all_k_way(&domain, 3).unwrap();
        let out = synthesize(
            &records,
            &domain,
            &workload,
            &request(Neighbours::Replace),
            &mut seeded_rng(4),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!((out.refinement.targets, out.targets.len()), (10, 10));
        assert!(out.refinement.changes > 0);
        // The same draw, refined and not: the rounding's rows are the refinement's
        // starting point.
        let rounded = out
            .output
            .model
            .sample_rows_rounded(n, &mut seeded_rng(9))
            .unwrap();
        let (refined, done) = draw_rows(
            &out.output.model,
            &out.targets,
            &domain,
            n,
            &mut seeded_rng(9),
        )
        .unwrap();
        let (before, after) = (
            distance_to_model(&rounded, &out, &workload),
            distance_to_model(&refined, &out, &workload),
        );
        // (0.46 of it at this seed with AIM's annealing by 4; the model changed
        // with annealing by 2, and the ratio rose to 0.57.)
        assert!(
            done.changes > 0 && after < 0.7 * before,
            "{before} -> {after}"
        );
        // More rows from the release are refined the same way.
        let more = out.sample(n, &domain, &mut seeded_rng(9)).unwrap();
        assert_eq!(more, refined);
        // Seven rows: no target has as few cells (8), so the draw is the rounding's.
        let few = out.sample(7, &domain, &mut seeded_rng(5)).unwrap();
        let rounded = out
            .output
            .model
            .sample_rows_rounded(7, &mut seeded_rng(5))
            .unwrap();
        assert_eq!(few, rounded);
    }

    #[test]
    fn the_accountant_is_bound_to_the_requested_relation_and_spends_the_budget() {
        let (domain, records, workload) = table(200);
        for neighbours in [Neighbours::Replace, Neighbours::AddRemove] {
            let out = synthesize(
                &records,
                &domain,
                &workload,
                &request(neighbours),
                &mut seeded_rng(1),
                &mut |_| {},
            )
            .unwrap();
            assert_eq!(out.accountant.neighbours(), Some(neighbours));
            assert!(out.guarantee.epsilon <= 1.0 && out.guarantee.epsilon > 0.99);
            assert_eq!(out.guarantee.delta, 1e-9);
            if neighbours.n_is_public() {
                assert_eq!(out.rows.len(), 200);
            }
            assert!(
                out.rows
                    .iter()
                    .all(|r| r.len() == 3 && r.iter().all(|&v| v < 2))
            );
        }
    }

    #[test]
    fn empty_data_is_refused_only_when_n_is_public() {
        let (domain, _, workload) = table(0);
        let empty = Records::from_columns(vec![vec![], vec![], vec![]], &domain).unwrap();
        let run = |n: Neighbours| {
            synthesize(
                &empty,
                &domain,
                &workload,
                &request(n),
                &mut seeded_rng(2),
                &mut |_| {},
            )
        };
        assert!(matches!(
            run(Neighbours::Replace),
            Err(AdaptiveError::Data(DataError::EmptyData))
        ));
        assert!(!run(Neighbours::AddRemove).unwrap().rows.is_empty());
    }

    #[test]
    fn bad_parameters_are_refused_before_anything_runs() {
        let e = Epsilon::new(1, 1).unwrap();
        for delta in [0.0, 1.0, -1e-9, f64::NAN] {
            assert!(SynthRequest::new(e, delta, Neighbours::Replace).is_err());
        }
        assert!(request(Neighbours::Replace).max_model_mib(0).is_err());
    }

    /// A session accountant pays for each release's whole budget before it runs:
    /// ρ to a zCDP session, the stated (ε, δ) to a basic one; past its cap nothing
    /// is charged, and it stays with the relation of its first charge.
    #[test]
    fn a_session_accountant_is_charged_the_whole_release() {
        let one = Epsilon::new(1, 1).unwrap();
        let add_remove = request(Neighbours::AddRemove);
        let mut basic = Accountant::approximate(Epsilon::new(5, 2).unwrap(), 1e-6).unwrap();
        for _ in 0..2 {
            add_remove.charge_to(&mut basic, "release").unwrap();
        }
        assert_eq!(basic.spent_epsilon(), Some(Epsilon::new(2, 1).unwrap()));
        assert_eq!(basic.spent_delta(), 2e-9);
        assert!(add_remove.charge_to(&mut basic, "third").is_err());
        assert_eq!(basic.ledger().len(), 2);
        assert_eq!(basic.neighbours(), Some(Neighbours::AddRemove));
        let replace = request(Neighbours::Replace);
        let mut fresh = Accountant::approximate(Epsilon::new(5, 1).unwrap(), 1e-6).unwrap();
        replace.charge_to(&mut fresh, "replace").unwrap();
        assert!(matches!(
            add_remove.charge_to(&mut fresh, "other relation"),
            Err(AdaptiveError::Budget(
                AccountantError::RelationMismatch { .. }
            ))
        ));
        let run_rho = add_remove.accountant().unwrap().rho_budget().unwrap();
        let mut zcdp = Accountant::zcdp(run_rho.checked_add(run_rho).unwrap(), 1e-6).unwrap();
        add_remove.charge_to(&mut zcdp, "a").unwrap();
        add_remove.charge_to(&mut zcdp, "b").unwrap();
        assert_eq!(zcdp.remaining_rho(), None, "two runs spend exactly 2ρ");
        assert!(add_remove.charge_to(&mut zcdp, "c").is_err());
        // An unbound session holding charges stated under no relation refuses.
        let mut unbound = Accountant::approximate(Epsilon::new(5, 1).unwrap(), 1e-6).unwrap();
        unbound
            .charge("by hand", crate::accountant::Cost::Pure(one))
            .unwrap();
        assert!(matches!(
            replace.charge_to(&mut unbound, "replace"),
            Err(AdaptiveError::Budget(
                AccountantError::UnboundCharges { .. }
            ))
        ));
        assert_eq!(unbound.ledger().len(), 1);
        // A pure session has no δ for an (ε, δ) release.
        assert!(
            add_remove
                .charge_to(&mut Accountant::pure(one), "pure")
                .is_err()
        );
        // Empty data with n public is refused before any charge.
        let (domain, _, _) = table(0);
        let empty = Records::from_columns(vec![vec![], vec![], vec![]], &domain).unwrap();
        assert!(replace.admits(&empty).is_err());
        assert!(add_remove.admits(&empty).is_ok());
    }

    /// A plan states the cost `charge_to` charges and the run spends, and the
    /// rounds the run plans, without charging or sampling; n shows only where it
    /// is public.
    #[test]
    fn a_plan_states_the_cost_and_the_schedule_without_charging() {
        let (domain, records, workload) = table(120);
        for neighbours in [Neighbours::Replace, Neighbours::AddRemove] {
            let request = request(neighbours);
            let plan = request.plan(&records, &domain, &workload).unwrap();
            assert_eq!(plan.neighbours, neighbours);
            assert_eq!(
                (plan.rounds, plan.one_way_rounds, plan.max_rounds),
                (48, 3, 192)
            );
            let sizes: Vec<usize> = domain.attributes().iter().map(|a| a.size()).collect();
            let round0 = plan.one_way_rhos.as_ref().expect("no binned attribute");
            assert_eq!(round0.len(), 3);
            assert_eq!(
                round0,
                &crate::synth::adaptive::one_way_rhos(plan.measure_rho, &sizes, 48).unwrap()
            );
            assert_eq!(plan.candidates, workload.candidates().len());
            let expected_rows = match neighbours {
                Neighbours::Replace => PlannedRows::Exactly(120),
                Neighbours::AddRemove => PlannedRows::Hidden,
            };
            assert_eq!(plan.rows, expected_rows);
            assert_eq!(
                request
                    .rows(Some(7))
                    .plan(&records, &domain, &workload)
                    .unwrap()
                    .rows,
                PlannedRows::Exactly(7)
            );
            // The cost is what a session is charged, in its own terms.
            let mut basic = Accountant::approximate(Epsilon::new(2, 1).unwrap(), 1e-6).unwrap();
            let mut zcdp = Accountant::zcdp(plan.cost.cost().rho().unwrap(), 1e-6).unwrap();
            for session in [&mut basic, &mut zcdp] {
                let before = session.clone();
                let expected = plan.session_cost(session);
                assert!(session.ledger().is_empty(), "planning charged nothing");
                request.charge_to(session, "run").unwrap();
                assert_eq!(session.ledger()[0].cost, expected);
                assert!(before.can_afford(&expected));
            }
            assert_eq!(basic.spent_epsilon(), Some(plan.cost.epsilon()));
            assert_eq!(
                zcdp.remaining_rho(),
                None,
                "the plan's ρ is the run's whole ρ"
            );
            // The run spends what the plan states.
            let out = synthesize(
                &records,
                &domain,
                &workload,
                &request,
                &mut seeded_rng(4),
                &mut |_| {},
            )
            .unwrap();
            // Never more, compared exactly. The shortfall: the schedule plans on
            // the stated ρ rounded down to a dyadic m/2^K (K ≤ 56, so short by
            // under 2⁻⁵⁶), and the last round's selection ε is the largest m/2²⁴
            // ≤ √(8b) for the selection budget b left to it, so its cost ε²/8 falls
            // short of b by under 2⁻²⁴·√(8b)/4; with b < 1/8 here, under 2⁻²⁴ in all.
            let (spent, stated) = (
                out.accountant.spent_rho().unwrap(),
                plan.cost.cost().rho().unwrap(),
            );
            assert!(spent <= stated, "{spent:?} vs {stated:?}");
            if let Some(gap) = stated.checked_sub(spent).unwrap() {
                assert!(gap < Rho::new(1, 1 << 24).unwrap(), "{gap:?}");
            }
            let last = out.output.rounds.last().unwrap();
            let select = last.epsilon.expect("the last round selects");
            assert_eq!(
                (1u64 << 24) % select.den(),
                0,
                "{select:?} on the 2⁻²⁴ grid"
            );
            assert!(out.output.rounds.len() <= plan.max_rounds);
        }
    }

    /// What would make the run fail before sampling makes the plan fail, so a
    /// front end that plans before charging a session charges nothing for it.
    #[test]
    fn a_plan_refuses_what_the_run_would_refuse() {
        let (domain, records, workload) = table(50);
        let few = request(Neighbours::AddRemove).rounds(Some(3));
        assert!(matches!(
            few.plan(&records, &domain, &workload),
            Err(AdaptiveError::InvalidParameter(_))
        ));
        let run = synthesize(
            &records,
            &domain,
            &workload,
            &few,
            &mut seeded_rng(5),
            &mut |_| {},
        );
        assert!(matches!(run, Err(AdaptiveError::InvalidParameter(_))));
        let empty = Records::from_columns(vec![vec![], vec![], vec![]], &domain).unwrap();
        assert!(matches!(
            request(Neighbours::Replace).plan(&empty, &domain, &workload),
            Err(AdaptiveError::Data(DataError::EmptyData))
        ));
        assert_eq!(
            request(Neighbours::AddRemove)
                .plan(&empty, &domain, &workload)
                .unwrap()
                .rows,
            PlannedRows::Hidden
        );
    }

    /// Under add/remove neighbours the plan reads nothing from the records: it is
    /// the public plan, the same for neighbouring datasets (one row fewer) and for
    /// the empty table. Under replace-one the public plan states the rows only
    /// when they are requested.
    #[test]
    fn under_add_remove_the_plan_is_the_same_for_neighbouring_datasets() {
        for request in [
            request(Neighbours::AddRemove),
            request(Neighbours::AddRemove).rows(Some(9)),
            request(Neighbours::AddRemove).rounds(Some(10)),
        ] {
            for n in [0, 1, 2, 17, 120] {
                let (domain, records, workload) = table(n);
                let public = request.plan_public(&domain, &workload).unwrap();
                assert_eq!(request.plan(&records, &domain, &workload).unwrap(), public);
                let fewer = Records::from_columns(
                    (0..domain.dims())
                        .map(|a| records.column(a).unwrap()[..n.saturating_sub(1)].to_vec())
                        .collect(),
                    &domain,
                )
                .unwrap();
                assert_eq!(fewer.len(), n.saturating_sub(1));
                assert_eq!(request.plan(&fewer, &domain, &workload).unwrap(), public);
                let empty = Records::from_columns(vec![vec![]; domain.dims()], &domain).unwrap();
                assert_eq!(request.plan(&empty, &domain, &workload).unwrap(), public);
            }
        }
        let (domain, records, workload) = table(30);
        let replace = request(Neighbours::Replace);
        assert!(matches!(
            replace.plan_public(&domain, &workload),
            Err(AdaptiveError::InvalidParameter(_))
        ));
        assert_eq!(
            replace
                .rows(Some(4))
                .plan_public(&domain, &workload)
                .unwrap(),
            replace
                .rows(Some(4))
                .plan(&records, &domain, &workload)
                .unwrap()
        );
        // A public-parameter refusal is the public plan's too.
        assert!(matches!(
            request(Neighbours::AddRemove)
                .rounds(Some(3))
                .plan_public(&domain, &workload),
            Err(AdaptiveError::InvalidParameter(_))
        ));
    }

    /// A run stopped by its caller after a round releases nothing.
    #[test]
    fn a_cancelled_run_releases_nothing() {
        let (domain, records, workload) = table(80);
        let mut seen = 0;
        let out = synthesize_controlled(
            &records,
            &domain,
            &workload,
            &request(Neighbours::AddRemove),
            &mut seeded_rng(6),
            &mut |r| {
                seen += 1;
                if r.round == 2 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        );
        assert!(matches!(out, Err(AdaptiveError::Cancelled { round: 2 })));
        assert_eq!(seen, 2);
    }

    /// The lower-level entry point refuses an estimator that would publish the
    /// exact n under a relation that keeps n private.
    #[test]
    fn an_exact_total_estimator_is_refused_under_add_remove() {
        let (domain, records, workload) = table(50);
        let estimator = PgmEstimator::new(&domain, Neighbours::Replace, records.len());
        let mut acct = Accountant::zcdp_for(Epsilon::new(1, 1).unwrap(), 1e-9).unwrap();
        let err = adaptive_marginals(
            &records,
            &domain,
            &workload,
            &AdaptiveConfig::new(Neighbours::AddRemove),
            &estimator,
            &mut acct,
            &mut seeded_rng(3),
            &mut |_| {},
        )
        .unwrap_err();
        assert!(matches!(err, AdaptiveError::InvalidParameter(_)), "{err}");
        assert!(acct.ledger().is_empty(), "nothing was charged");
    }
    /// More rows from a release are post-processing: the same ledger, rows over
    /// the release's domain, and the same rows for the same seed.
    #[test]
    fn sampling_a_release_again_charges_nothing() {
        let (domain, records, workload) = table(200);
        let out = synthesize(
            &records,
            &domain,
            &workload,
            &request(Neighbours::AddRemove),
            &mut seeded_rng(4),
            &mut |_| {},
        )
        .unwrap();
        let charges = out.accountant.ledger().len();
        let a = out.sample(500, &domain, &mut seeded_rng(9)).unwrap();
        let b = out.sample(500, &domain, &mut seeded_rng(9)).unwrap();
        assert_eq!(a.len(), 500);
        assert_eq!(a, b);
        assert!(a.iter().all(|r| r.len() == 3 && r.iter().all(|&v| v < 2)));
        assert_eq!(out.accountant.ledger().len(), charges);
    }
}

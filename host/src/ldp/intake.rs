//! Report intake for untrusted inputs: campaign-checked, resynchronising,
//! bounded, and accounting for every frame and byte.
//!
//! An [`Intake`] aggregates report files for one [`CampaignPlan`]. Reports are
//! checked against the campaign (never the other way round), so what a report
//! says about its own mechanism, ε, domain or query can only get it rejected;
//! the aggregation state is at most [`CampaignPlan::memory_bytes`], and the work
//! per report is bounded by the campaign's domain. Inputs are streamed in
//! windows of about 1 MiB, may be several report files back to back, and damaged
//! framing is reported and resynchronised (see [`super::frames::Scanner`]).
//!
//! Accounting: [`IntakeStats::frames`] `=` accepted `+` [`RejectCounts::total`],
//! and [`FILE_HEADER_LEN`] `×` [`IntakeStats::files`] `+`
//! [`IntakeStats::frame_bytes`] `+` [`IntakeStats::skipped_bytes`] `=`
//! [`IntakeStats::bytes`]. The first [`MAX_PROBLEMS`] problems are kept with their
//! input name and byte offset. [`Intake::outcome`] summarises the run as an
//! [`Outcome`], whose [`exit_code`](Outcome::exit_code) the `privq` program uses.
//!
//! ```
//! use privq_host::ldp::campaign::{Campaign, Limits};
//! use privq_host::ldp::fleet::{Fleet, MechanismSpec};
//! use privq_host::ldp::frames::{write_file_header, write_frame};
//! use privq_host::ldp::intake::{Intake, Outcome};
//! use privq_host::Epsilon;
//!
//! let spec = MechanismSpec::parse("grr", Epsilon::new(1, 1)?, 8)?;
//! let reports = Fleet::from_weights(&[1.0; 8], 100)?.privatize(&spec, 1)?;
//! let mut file = Vec::new();
//! write_file_header(&mut file)?;
//! for r in reports.iter() {
//!     write_frame(&mut file, r)?;
//! }
//! let plan = Campaign::for_spec(&spec).validate(&Limits::default())?;
//! let mut intake = Intake::new(plan);
//! intake.ingest_slice("a.pqr", &file);
//! assert_eq!((intake.stats().accepted, intake.outcome()), (100, Outcome::Complete));
//! file.truncate(file.len() - 1); // a damaged copy: 99 accepted, 1 rejected
//! intake.ingest_slice("b.pqr", &file);
//! assert_eq!(intake.stats().accepted, 199);
//! assert_eq!(intake.outcome(), Outcome::Rejected);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Read};

use serde::{Deserialize, Serialize};

use super::aggregate::{AggregateError, Aggregator, FrequencyEstimates, MeanEstimate, ReportKind};
use super::campaign::{Campaign, CampaignError, CampaignPlan, Limits};
use super::decode::{RejectCounts, RejectReason};
use super::frames::{Event, FILE_HEADER, FrameSync, LOOKAHEAD, Scanner};
use super::postprocess::PostProcess;

/// Problems kept with their offsets (the rest are only counted).
pub const MAX_PROBLEMS: usize = 20;
/// Bytes read per window (plus [`LOOKAHEAD`]).
const WINDOW: usize = 1 << 20;
/// The `format` tag of saved states.
pub const STATE_FORMAT: &str = "privq-ldp-state";
/// The saved-state version this crate reads and writes.
pub const STATE_VERSION: u32 = 1;

/// What went wrong at one place of an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Issue {
    /// A frame was rejected.
    Rejected(RejectReason),
    /// The input does not start with a report-file header.
    MissingFileHeader,
    /// The input is empty.
    EmptyInput,
    /// Bytes skipped to resynchronise.
    Skipped(u64),
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Issue::Rejected(r) => write!(f, "frame rejected: {r}"),
            Issue::MissingFileHeader => f.write_str("no PQRS report-file header here"),
            Issue::EmptyInput => f.write_str("the input is empty"),
            Issue::Skipped(n) => write!(f, "skipped {n} bytes to the next frame or file header"),
        }
    }
}

/// One problem with its place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// The input's name (a path, or `-` for standard input).
    pub input: String,
    /// Byte offset in that input.
    pub offset: u64,
    /// What.
    pub issue: Issue,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: byte {}: {}", self.input, self.offset, self.issue)
    }
}

/// Counts of everything read; mergeable.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntakeStats {
    /// Inputs read.
    pub inputs: u64,
    /// Report-file headers found (several per input for concatenated files).
    pub files: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Frames delimited (complete, bad-length and truncated).
    pub frames: u64,
    /// Bytes of complete frames (length prefixes included).
    pub frame_bytes: u64,
    /// Reports aggregated.
    pub accepted: u64,
    /// Rejected frames by reason.
    pub rejected: RejectCounts,
    /// Inputs (or resynchronised regions) that did not start with a file header.
    pub missing_file_headers: u64,
    /// Inputs with no bytes.
    pub empty_inputs: u64,
    /// Bytes in no file header and no complete frame.
    pub skipped_bytes: u64,
    /// The first [`MAX_PROBLEMS`] problems.
    pub problems: Vec<Problem>,
    /// Problems beyond those listed.
    pub unlisted_problems: u64,
}

impl IntakeStats {
    fn problem(&mut self, input: &str, offset: u64, issue: Issue) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(Problem {
                input: input.to_string(),
                offset,
                issue,
            });
        } else {
            self.unlisted_problems = self.unlisted_problems.saturating_add(1);
        }
    }

    /// Whether anything was rejected, skipped, missing or empty.
    pub fn has_problems(&self) -> bool {
        self.rejected.total() > 0
            || self.skipped_bytes > 0
            || self.missing_file_headers > 0
            || self.empty_inputs > 0
    }

    /// Adds another run's counts (problem lists are concatenated up to the cap).
    pub fn merge(&mut self, o: &IntakeStats) {
        let add = |a: &mut u64, b: u64| *a = a.saturating_add(b);
        add(&mut self.inputs, o.inputs);
        add(&mut self.files, o.files);
        add(&mut self.bytes, o.bytes);
        add(&mut self.frames, o.frames);
        add(&mut self.frame_bytes, o.frame_bytes);
        add(&mut self.accepted, o.accepted);
        self.rejected.merge(&o.rejected);
        add(&mut self.missing_file_headers, o.missing_file_headers);
        add(&mut self.empty_inputs, o.empty_inputs);
        add(&mut self.skipped_bytes, o.skipped_bytes);
        for p in &o.problems {
            self.problem(&p.input, p.offset, p.issue);
        }
        add(&mut self.unlisted_problems, o.unlisted_problems);
    }
}

/// How a run ended, and the `privq` exit code for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every frame accepted: exit code 0.
    Complete,
    /// Results from the accepted reports, but frames were rejected or bytes
    /// skipped (or an input was empty): exit code 3.
    Rejected,
    /// No report accepted at all (empty, truncated or foreign inputs): exit code 4.
    NothingUsable,
    /// Results printed, but some estimates are undefined (not finite): exit code 5.
    Undefined,
}

impl Outcome {
    /// The documented exit code.
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Complete => 0,
            Outcome::Rejected => 3,
            Outcome::NothingUsable => 4,
            Outcome::Undefined => 5,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Outcome::Complete => "every frame was accepted",
            Outcome::Rejected => "some frames were rejected or bytes skipped",
            Outcome::NothingUsable => "no usable report was read",
            Outcome::Undefined => "some estimates are undefined",
        })
    }
}

/// Errors of saved states and merging.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// Not valid state JSON.
    #[error("not a valid saved state: {0}")]
    Json(#[source] serde_json::Error),
    /// Not a `privq-ldp-state` of a supported version.
    #[error("not a {STATE_FORMAT} file of version {STATE_VERSION}")]
    Format,
    /// The state's campaign is invalid (or over the limits).
    #[error("campaign {field}: {0}", field = .0.field())]
    Campaign(#[source] CampaignError),
    /// States of different campaigns.
    #[error("the states are of different campaigns")]
    CampaignMismatch,
    /// A group that the campaign does not allow, or with inconsistent counts.
    #[error("a group does not fit the campaign: {0}")]
    Group(#[source] AggregateError),
    /// The counters disagree with the groups or with each other.
    #[error("inconsistent counters: {0}")]
    Stats(&'static str),
}

/// A saved aggregator state (`privq ldp aggregate --save-state`), versioned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntakeState {
    /// Always `"privq-ldp-state"`.
    pub format: String,
    /// 1.
    pub version: u32,
    /// The campaign (canonical form).
    pub campaign: Campaign,
    /// What was read.
    pub stats: IntakeStats,
    /// One aggregator per query that received reports.
    pub groups: Vec<Aggregator>,
}

/// Estimates of one query group.
#[derive(Debug, Clone, Serialize)]
pub struct GroupEstimates {
    /// Readable label.
    pub label: String,
    /// The report kind.
    pub kind: ReportKind,
    /// Reports.
    pub n: u64,
    /// Frequency estimates (frequency mechanisms).
    pub frequencies: Option<FrequencyEstimates>,
    /// Post-processed frequencies.
    pub post_processed: Option<Vec<f64>>,
    /// Mean estimate (mean mechanisms).
    pub mean: Option<MeanEstimate>,
    /// Some value is not finite (printed as `undefined`, never as a number).
    pub undefined: bool,
}

/// The invariants every intake keeps between its counters and its groups
/// (a saved state comes from outside: from a file, or from another process
/// through a query engine).
fn check_stats(stats: &IntakeStats, intake: &Intake) -> Result<(), StateError> {
    let reports = intake
        .groups()
        .try_fold(0u64, |n, g| n.checked_add(g.n()))
        .ok_or(StateError::Stats("the groups' reports overflow"))?;
    if stats.accepted != reports {
        return Err(StateError::Stats(
            "accepted is not the groups' number of reports",
        ));
    }
    if stats.accepted.checked_add(stats.rejected.total()) != Some(stats.frames) {
        return Err(StateError::Stats("frames is not accepted plus rejected"));
    }
    if stats.problems.len() > MAX_PROBLEMS {
        return Err(StateError::Stats(
            "more problems listed than an intake keeps",
        ));
    }
    Ok(())
}

/// Campaign-checked aggregation of report inputs.
#[derive(Debug, Clone)]
pub struct Intake {
    plan: CampaignPlan,
    sync: Option<FrameSync>,
    groups: BTreeMap<u16, Aggregator>,
    stats: IntakeStats,
}

impl Intake {
    /// An empty intake for `plan`.
    pub fn new(plan: CampaignPlan) -> Intake {
        let sync = FrameSync::new(plan.report_len(), plan.header());
        Intake {
            plan,
            sync,
            groups: BTreeMap::new(),
            stats: IntakeStats::default(),
        }
    }

    /// The campaign.
    pub fn plan(&self) -> &CampaignPlan {
        &self.plan
    }

    /// Counts so far.
    pub fn stats(&self) -> &IntakeStats {
        &self.stats
    }

    /// The aggregators, by query id.
    pub fn groups(&self) -> impl Iterator<Item = &Aggregator> {
        self.groups.values()
    }

    /// The outcome so far (without looking at estimates; see
    /// [`outcome_with`](Intake::outcome_with)).
    pub fn outcome(&self) -> Outcome {
        if self.stats.accepted == 0 {
            Outcome::NothingUsable
        } else if self.stats.has_problems() {
            Outcome::Rejected
        } else {
            Outcome::Complete
        }
    }

    /// The outcome given the estimates that will be printed: undefined
    /// estimates take precedence over rejected frames.
    pub fn outcome_with(&self, estimates: &[GroupEstimates]) -> Outcome {
        match self.outcome() {
            Outcome::NothingUsable => Outcome::NothingUsable,
            _ if estimates.iter().any(|g| g.undefined) => Outcome::Undefined,
            o => o,
        }
    }

    /// Reads one input to its end. I/O errors end the read (what was read so
    /// far stays counted) and are returned.
    pub fn ingest_reader(&mut self, input: &str, r: &mut dyn Read) -> io::Result<()> {
        self.stats.inputs += 1;
        let Some(sync) = self.sync else {
            return Ok(());
        };
        let mut scanner = Scanner::new(sync);
        let mut buf: Vec<u8> = Vec::new();
        let (mut base, mut eof) = (0u64, false);
        let mut skip: Option<(u64, u64)> = None;
        loop {
            let before = buf.len();
            eof = eof || fill(r, &mut buf, WINDOW + LOOKAHEAD)?;
            self.stats.bytes += (buf.len() - before) as u64;
            let mut pos = 0;
            let mut batch: BTreeMap<u16, Vec<&[u8]>> = BTreeMap::new();
            while eof || buf.len() - pos >= LOOKAHEAD {
                let Some((event, used)) = scanner.step(&buf[pos..], eof) else {
                    break;
                };
                let offset = base + pos as u64;
                self.event(input, offset, event, used, &mut skip, &mut batch);
                pos += used;
            }
            self.flush(batch);
            buf.drain(..pos);
            base += pos as u64;
            if eof && buf.is_empty() {
                break;
            }
        }
        if let Some((at, n)) = skip {
            self.stats.problem(input, at, Issue::Skipped(n));
        }
        if base == 0 {
            self.stats.empty_inputs += 1;
            self.stats.problem(input, 0, Issue::EmptyInput);
        }
        Ok(())
    }

    /// Reads one in-memory input.
    pub fn ingest_slice(&mut self, input: &str, bytes: &[u8]) {
        let mut r = bytes;
        // Reading from a slice cannot fail.
        let _ = self.ingest_reader(input, &mut r);
    }

    /// Checks and aggregates reports that arrive one by one rather than framed in a
    /// report file (rows of a Parquet table, say): each counts as one complete
    /// frame of its length, is [classified](CampaignPlan::classify) against the
    /// campaign exactly like a frame of a report file, and is accepted or counted
    /// under its [`RejectReason`]. No input, file or problem is recorded (the
    /// caller knows where the reports came from); `bytes` and `frame_bytes` both
    /// grow by the reports' lengths.
    ///
    /// For reports of the campaign's length this gives the groups and rejection
    /// counts of reading the same reports framed in a report file.
    pub fn ingest_reports<'r>(&mut self, reports: impl IntoIterator<Item = &'r [u8]>) {
        let mut batch: BTreeMap<u16, Vec<&[u8]>> = BTreeMap::new();
        for report in reports {
            let len = report.len() as u64;
            self.stats.frames += 1;
            self.stats.bytes += len;
            self.stats.frame_bytes += len;
            match self.plan.classify(report) {
                Ok(r) => batch.entry(r.header.query.0).or_default().push(report),
                Err(reason) => self.stats.rejected.record(reason),
            }
        }
        self.flush(batch);
    }

    /// Handles one scanner event at `offset`.
    fn event<'a>(
        &mut self,
        input: &str,
        offset: u64,
        event: Event<'a>,
        used: usize,
        skip: &mut Option<(u64, u64)>,
        batch: &mut BTreeMap<u16, Vec<&'a [u8]>>,
    ) {
        let is_skip = matches!(
            event,
            Event::Skipped | Event::BadFrame(_) | Event::MissingFileHeader
        );
        if !is_skip && let Some((at, n)) = skip.take() {
            self.stats.problem(input, at, Issue::Skipped(n));
        }
        match event {
            Event::FileHeader => self.stats.files += 1,
            Event::Frame(report) => {
                self.stats.frames += 1;
                self.stats.frame_bytes += used as u64;
                match self.plan.classify(report) {
                    Ok(r) => batch.entry(r.header.query.0).or_default().push(report),
                    Err(reason) => self.reject(input, offset, reason),
                }
            }
            Event::BadFrame(reason) => {
                self.stats.frames += 1;
                self.reject(input, offset, reason);
            }
            Event::MissingFileHeader => {
                self.stats.missing_file_headers += 1;
                self.stats.problem(input, offset, Issue::MissingFileHeader);
            }
            Event::Skipped => {}
        }
        if is_skip && used > 0 {
            self.stats.skipped_bytes += used as u64;
            let region = skip.get_or_insert((offset, 0));
            region.1 += used as u64;
        }
    }

    fn reject(&mut self, input: &str, offset: u64, reason: RejectReason) {
        self.stats.rejected.record(reason);
        self.stats.problem(input, offset, Issue::Rejected(reason));
    }

    /// Aggregates the campaign-checked reports of one window.
    fn flush(&mut self, batch: BTreeMap<u16, Vec<&[u8]>>) {
        for (query, reports) in batch {
            let mut rejected = RejectCounts::default();
            let count = reports.len() as u64;
            let agg = match self.groups.entry(query) {
                std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::btree_map::Entry::Vacant(v) => {
                    match Aggregator::new(self.plan.kind(query)) {
                        Ok(a) => v.insert(a),
                        Err(_) => {
                            // Unreachable for a validated plan; counted anyway.
                            for _ in 0..count {
                                self.stats.rejected.record(RejectReason::Parameter);
                            }
                            continue;
                        }
                    }
                }
            };
            self.stats.accepted += agg.ingest_batch(reports, &mut rejected);
            self.stats.rejected.merge(&rejected);
        }
    }

    /// Estimates of every group at two-sided `confidence`, post-processed.
    pub fn estimates(&self, confidence: f64, post: PostProcess) -> Vec<GroupEstimates> {
        self.groups
            .values()
            .map(|agg| {
                let frequencies = agg.frequencies(confidence).ok();
                let post_processed = frequencies.as_ref().map(|f| post.apply(&f.values()));
                let mean = agg.mean(confidence).ok();
                let finite = |e: &super::estimate::Estimate| {
                    e.value.is_finite()
                        && e.variance.is_finite()
                        && e.ci_low.is_finite()
                        && e.ci_high.is_finite()
                };
                let undefined = frequencies
                    .as_ref()
                    .is_some_and(|f| !f.items.iter().all(finite))
                    || post_processed
                        .as_ref()
                        .is_some_and(|p| !p.iter().all(|x| x.is_finite()))
                    || mean.as_ref().is_some_and(|m| !finite(&m.estimate));
                GroupEstimates {
                    label: agg.kind().to_string(),
                    kind: *agg.kind(),
                    n: agg.n(),
                    frequencies,
                    post_processed,
                    mean,
                    undefined,
                }
            })
            .collect()
    }

    /// The state to save.
    pub fn to_state(&self) -> IntakeState {
        IntakeState {
            format: STATE_FORMAT.to_string(),
            version: STATE_VERSION,
            campaign: self.plan.campaign().clone(),
            stats: self.stats.clone(),
            groups: self.groups.values().cloned().collect(),
        }
    }

    /// Restores a saved state, re-validating its campaign against `limits` and
    /// every group against the campaign.
    pub fn from_state(state: IntakeState, limits: &Limits) -> Result<Intake, StateError> {
        if state.format != STATE_FORMAT || state.version != STATE_VERSION {
            return Err(StateError::Format);
        }
        let plan = state
            .campaign
            .validate(limits)
            .map_err(StateError::Campaign)?;
        let mut intake = Intake::new(plan);
        for g in &state.groups {
            let query = g.kind().query;
            if !intake.plan.collects(query) || *g.kind() != intake.plan.kind(query) {
                return Err(StateError::Group(AggregateError::KindMismatch));
            }
            let mut fresh = Aggregator::new(*g.kind()).map_err(StateError::Group)?;
            fresh.merge(g).map_err(StateError::Group)?;
            match intake.groups.get_mut(&query) {
                Some(a) => a.merge(&fresh).map_err(StateError::Group)?,
                None => {
                    intake.groups.insert(query, fresh);
                }
            }
        }
        check_stats(&state.stats, &intake)?;
        intake.stats = state.stats;
        Ok(intake)
    }

    /// Reads a saved state from JSON (see [`from_state`](Intake::from_state)).
    /// The counters must agree with the groups: `accepted` is the groups'
    /// reports, every frame is accepted or rejected, and at most
    /// [`MAX_PROBLEMS`] problems are listed.
    pub fn from_json(text: &str, limits: &Limits) -> Result<Intake, StateError> {
        let state: IntakeState = serde_json::from_str(text).map_err(StateError::Json)?;
        Intake::from_state(state, limits)
    }

    /// Adds another intake of the same campaign: the result equals reading both
    /// runs' inputs into one intake.
    pub fn merge(&mut self, other: &Intake) -> Result<(), StateError> {
        if other.plan != self.plan {
            return Err(StateError::CampaignMismatch);
        }
        for (q, g) in &other.groups {
            match self.groups.get_mut(q) {
                Some(a) => a.merge(g).map_err(StateError::Group)?,
                None => {
                    self.groups.insert(*q, g.clone());
                }
            }
        }
        self.stats.merge(&other.stats);
        Ok(())
    }
}

/// Reads until `buf` holds `target` bytes or the input ends; true at the end.
fn fill(r: &mut dyn Read, buf: &mut Vec<u8>, target: usize) -> io::Result<bool> {
    let want = target.saturating_sub(buf.len());
    if want == 0 {
        return Ok(false);
    }
    let got = (&mut *r).take(want as u64).read_to_end(buf)?;
    Ok(got < want)
}

/// Bytes of one file header (for accounting checks).
pub const FILE_HEADER_LEN: usize = FILE_HEADER.len();

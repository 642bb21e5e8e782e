//! Campaign configurations: the public description of what a collection
//! accepts, so that the aggregator never takes a report's word for its own
//! mechanism, ε, domain or query.
//!
//! A campaign names one mechanism, one ε, its parameter (domain size, 1BitMean
//! bound or SQ grid exponent) and the set of query ids collected. It is written
//! as JSON (`privq ldp simulate --campaign FILE` writes the campaign of the
//! reports it simulates):
//!
//! ```json
//! { "format": "privq-ldp-campaign", "version": 1,
//!   "mechanism": "oue", "epsilon": "1", "domain": 64, "queries": [0, "10-20"] }
//! ```
//!
//! [`Campaign::validate`] checks it against [`Limits`] and returns a
//! [`CampaignPlan`]: the exact report kind and length every accepted report must
//! have, and the memory the aggregation can need at most (one counter per item
//! per query, known before any report is read). Reports that disagree are
//! rejected by [`CampaignPlan::classify`] with their reason.
//!
//! ```
//! use privq_host::ldp::campaign::{Campaign, Limits};
//!
//! let c: Campaign = serde_json::from_str(
//!     r#"{"mechanism": "grr", "epsilon": "1/2", "domain": 100, "queries": [0]}"#,
//! )?;
//! let plan = c.validate(&Limits::default())?;
//! assert_eq!(plan.report_len(), 13);
//! // A hostile domain is refused before anything is allocated.
//! let big: Campaign = serde_json::from_str(
//!     r#"{"mechanism": "olh", "epsilon": "1", "domain": 2147483646}"#,
//! )?;
//! assert!(big.validate(&Limits::default()).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use privq_core::Epsilon;
use privq_core::local::QueryId;
use privq_core::report::{
    HEADER_LEN, Header, MechanismId, Report, check_encodable, decode, encode_header,
    hadamard_order, payload_len,
};
use serde::{Deserialize, Serialize};

use super::aggregate::ReportKind;
use super::decode::RejectReason;
use super::fleet::MechanismSpec;

/// The `format` tag of campaign files.
pub const CAMPAIGN_FORMAT: &str = "privq-ldp-campaign";
/// The campaign file version this crate reads and writes.
pub const CAMPAIGN_VERSION: u32 = 1;
/// The largest report a frame can hold.
pub const MAX_FRAME_LEN: usize = u16::MAX as usize;

/// One entry of a campaign's query set: an id or an inclusive range `"a-b"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum QuerySpec {
    /// One query id.
    One(u16),
    /// An inclusive range written `"a-b"` (or a single id as a string).
    Range(String),
}

/// A campaign configuration as written in its JSON file (unvalidated).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Campaign {
    /// Always `"privq-ldp-campaign"` (optional when reading).
    #[serde(default = "default_format")]
    pub format: String,
    /// File version (1; optional when reading).
    #[serde(default = "default_version")]
    pub version: u32,
    /// Mechanism name: rr, grr, sue, oue, olh, hr, 1bitmean, sq-bit, sq-laplace.
    pub mechanism: String,
    /// ε per report, exactly: `"1"`, `"0.5"` or `"1/2"`.
    pub epsilon: String,
    /// Domain size d (rr, grr, sue, oue, olh, hr; rr's is 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<u32>,
    /// 1BitMean's bound m (values in [0, m]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<u32>,
    /// SQ Laplace grid exponent k ∈ [−32, 0].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid_exponent: Option<i32>,
    /// OLH bucket count g (default: the one the device's `Olh::new(ε, d)` picks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub g: Option<u16>,
    /// Query ids collected (default `[0]`).
    #[serde(default = "default_queries")]
    pub queries: Vec<QuerySpec>,
}

fn default_format() -> String {
    CAMPAIGN_FORMAT.to_string()
}

fn default_version() -> u32 {
    CAMPAIGN_VERSION
}

fn default_queries() -> Vec<QuerySpec> {
    vec![QuerySpec::One(0)]
}

/// Resource caps a campaign is validated against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most bytes of aggregation state (counters over all queries).
    pub memory_bytes: u64,
}

impl Limits {
    /// A cap of `mib` MiB.
    pub fn from_mib(mib: u64) -> Limits {
        Limits {
            memory_bytes: mib.saturating_mul(1 << 20),
        }
    }
}

impl Default for Limits {
    /// 256 MiB.
    fn default() -> Limits {
        Limits::from_mib(256)
    }
}

/// Why a campaign is not usable. [`field`](CampaignError::field) names the
/// campaign field (and command-line flag) at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CampaignError {
    /// The file is not valid campaign JSON.
    #[error("not a valid campaign file: {0}")]
    Json(#[source] serde_json::Error),
    /// `format` is not `privq-ldp-campaign`.
    #[error("format must be {CAMPAIGN_FORMAT:?}")]
    Format,
    /// A campaign file version this crate does not read.
    #[error("campaign version {0} is not supported (this privq reads version {CAMPAIGN_VERSION})")]
    Version(u32),
    /// Not a mechanism name.
    #[error(
        "unknown mechanism {0:?} (one of rr, grr, sue, oue, olh, hr, 1bitmean, sq-bit, \
         sq-laplace)"
    )]
    UnknownMechanism(String),
    /// ε could not be read, is not encodable in a report header, or the
    /// mechanism refuses it.
    #[error("epsilon: {0}")]
    Epsilon(#[source] privq_core::Error),
    /// ε is so large that the estimator is numerically meaningless
    /// (e^ε overflows a double, so the estimates would be NaN).
    #[error(
        "epsilon = {0} is too large: e^epsilon overflows, so the estimates would be undefined \
         (NaN)"
    )]
    EpsilonUnusable(Epsilon),
    /// A parameter the mechanism needs is missing.
    #[error("this mechanism needs {0}")]
    Missing(&'static str),
    /// A parameter this mechanism does not take was given.
    #[error("this mechanism takes no {0}")]
    Unexpected(&'static str),
    /// A parameter is out of the mechanism's range.
    #[error("{0}: {1}")]
    Parameter(&'static str, #[source] privq_core::Error),
    /// The reports would not fit a frame (longer than 65535 bytes).
    #[error(
        "reports would be {0} bytes, more than a frame holds ({MAX_FRAME_LEN}); use a smaller \
         domain"
    )]
    ReportTooLong(usize),
    /// A query entry is not an id or an `a-b` range with a ≤ b.
    #[error("query {0:?} is not an id or an a-b range (0 ≤ a ≤ b ≤ 65535)")]
    Query(String),
    /// The query set is empty.
    #[error("the query set is empty")]
    NoQueries,
    /// The aggregation state could exceed the memory cap.
    #[error(
        "aggregating this campaign can need {} MiB, above the {} MiB limit (raise --memory-mib \
         or shrink the domain or query set)", needed.div_ceil(1 << 20), limit / (1 << 20)
    )]
    Memory {
        /// Bytes needed at most.
        needed: u64,
        /// The cap.
        limit: u64,
    },
}

impl CampaignError {
    /// The campaign field (and `--flag`) the error is about.
    pub fn field(&self) -> &'static str {
        match self {
            CampaignError::Json(_) => "campaign",
            CampaignError::Format => "format",
            CampaignError::Version(_) => "version",
            CampaignError::UnknownMechanism(_) => "mechanism",
            CampaignError::Epsilon(_) | CampaignError::EpsilonUnusable(_) => "epsilon",
            CampaignError::Missing(f)
            | CampaignError::Unexpected(f)
            | CampaignError::Parameter(f, _) => f,
            CampaignError::ReportTooLong(_) => "domain",
            CampaignError::Query(_) | CampaignError::NoQueries => "queries",
            CampaignError::Memory { .. } => "memory-mib",
        }
    }
}

/// Bytes of bookkeeping per query group on top of its counters.
const GROUP_OVERHEAD: u64 = 256;

impl Campaign {
    /// Reads a campaign from JSON.
    pub fn from_json(text: &str) -> Result<Campaign, CampaignError> {
        serde_json::from_str(text).map_err(CampaignError::Json)
    }

    /// The campaign of a simulated fleet (`privq ldp simulate`, query 0).
    pub fn for_spec(spec: &MechanismSpec) -> Campaign {
        let kind = spec.kind(QueryId(0));
        let epsilon = kind.epsilon().map_or_else(
            || format!("{}/{}", kind.epsilon_num, kind.epsilon_den),
            |e| e.to_string(),
        );
        Campaign {
            format: default_format(),
            version: CAMPAIGN_VERSION,
            mechanism: kind.mechanism().map_or("?", MechanismId::name).to_string(),
            epsilon,
            domain: Some(spec.domain()),
            bound: None,
            grid_exponent: None,
            g: (kind.g != 0).then_some(kind.g),
            queries: default_queries(),
        }
    }

    /// Validates the campaign against `limits`.
    pub fn validate(&self, limits: &Limits) -> Result<CampaignPlan, CampaignError> {
        if self.format != CAMPAIGN_FORMAT {
            return Err(CampaignError::Format);
        }
        if self.version != CAMPAIGN_VERSION {
            return Err(CampaignError::Version(self.version));
        }
        let mechanism = parse_mechanism(&self.mechanism)?;
        let epsilon: Epsilon = self
            .epsilon
            .trim()
            .parse()
            .map_err(CampaignError::Epsilon)?;
        check_encodable(epsilon).map_err(CampaignError::Epsilon)?;
        let (param, g) = self.param_and_g(mechanism, epsilon)?;
        let kind = ReportKind {
            mechanism: mechanism as u8,
            epsilon_num: epsilon.num(),
            epsilon_den: epsilon.den(),
            param,
            query: 0,
            g,
        };
        check_numerics(&kind, epsilon)?;
        let header = Header {
            mechanism,
            query: QueryId(0),
            epsilon,
            param,
        };
        let olh_g = (mechanism == MechanismId::Olh).then_some(g);
        let payload =
            payload_len(&header, olh_g).map_err(|e| CampaignError::Parameter("domain", e))?;
        let report_len = HEADER_LEN + payload;
        if report_len > MAX_FRAME_LEN {
            return Err(CampaignError::ReportTooLong(report_len));
        }
        let mut header_bytes = [0u8; HEADER_LEN];
        encode_header(&header, &mut header_bytes).map_err(CampaignError::Epsilon)?;
        let queries = parse_queries(&self.queries)?;
        let query_count: u64 = queries.iter().map(|&(a, b)| u64::from(b - a) + 1).sum();
        let slots = slots(mechanism, param);
        let needed =
            query_count.saturating_mul(slots.saturating_mul(8).saturating_add(GROUP_OVERHEAD));
        if needed > limits.memory_bytes {
            return Err(CampaignError::Memory {
                needed,
                limit: limits.memory_bytes,
            });
        }
        Ok(CampaignPlan {
            campaign: self.normalized(&queries),
            kind,
            report_len,
            header: header_bytes,
            queries,
            memory_bytes: needed,
        })
    }

    /// The parameter and OLH `g` of a campaign for `mechanism` at `epsilon`.
    fn param_and_g(
        &self,
        mechanism: MechanismId,
        epsilon: Epsilon,
    ) -> Result<(u32, u16), CampaignError> {
        let frequency = !matches!(
            mechanism,
            MechanismId::OneBitMean | MechanismId::SqBit | MechanismId::SqLaplace
        );
        if !frequency && self.domain.is_some() {
            return Err(CampaignError::Unexpected("domain"));
        }
        if mechanism != MechanismId::OneBitMean && self.bound.is_some() {
            return Err(CampaignError::Unexpected("bound"));
        }
        if mechanism != MechanismId::SqLaplace && self.grid_exponent.is_some() {
            return Err(CampaignError::Unexpected("grid_exponent"));
        }
        if mechanism != MechanismId::Olh && self.g.is_some() {
            return Err(CampaignError::Unexpected("g"));
        }
        match mechanism {
            MechanismId::OneBitMean => Ok((self.bound.ok_or(CampaignError::Missing("bound"))?, 0)),
            MechanismId::SqBit => Ok((0, 0)),
            MechanismId::SqLaplace => {
                let k = self
                    .grid_exponent
                    .ok_or(CampaignError::Missing("grid_exponent"))?;
                Ok((k as u32, 0))
            }
            _ => {
                let domain = match (mechanism, self.domain) {
                    (MechanismId::BinaryRr, None) => 2,
                    (_, Some(d)) => d,
                    (_, None) => return Err(CampaignError::Missing("domain")),
                };
                let spec = MechanismSpec::parse(mechanism.name(), epsilon, domain)
                    .map_err(|e| CampaignError::Parameter("domain", e))?;
                let derived = spec.kind(QueryId(0)).g;
                Ok((domain, self.g.unwrap_or(derived)))
            }
        }
    }

    /// The same campaign in canonical form (merged, sorted query ranges).
    fn normalized(&self, queries: &[(u16, u16)]) -> Campaign {
        let mut c = self.clone();
        c.epsilon = c.epsilon.trim().to_string();
        c.queries = queries
            .iter()
            .map(|&(a, b)| {
                if a == b {
                    QuerySpec::One(a)
                } else {
                    QuerySpec::Range(format!("{a}-{b}"))
                }
            })
            .collect();
        c
    }
}

fn parse_mechanism(name: &str) -> Result<MechanismId, CampaignError> {
    let name = name.trim().to_ascii_lowercase();
    let name = if name == "hadamard" { "hr" } else { &name };
    MechanismId::ALL
        .into_iter()
        .find(|m| m.name() == name)
        .ok_or_else(|| CampaignError::UnknownMechanism(name.to_string()))
}

/// Counters per query group.
fn slots(mechanism: MechanismId, param: u32) -> u64 {
    match mechanism {
        MechanismId::Grr | MechanismId::Sue | MechanismId::Oue | MechanismId::Olh => {
            u64::from(param)
        }
        MechanismId::Hadamard => hadamard_order(param),
        MechanismId::SqLaplace => 0,
        _ => 2,
    }
}

/// Refuses ε for which the estimator's arithmetic overflows.
fn check_numerics(kind: &ReportKind, epsilon: Epsilon) -> Result<(), CampaignError> {
    let e = kind.epsilon_f64().exp();
    let ok = match kind.protocol() {
        Some(p) => p.p.is_finite() && p.q.is_finite() && p.p - p.q > 0.0,
        None => e.is_finite() && ((e + 1.0) / (e - 1.0)).is_finite(),
    };
    if ok && e.is_finite() {
        Ok(())
    } else {
        Err(CampaignError::EpsilonUnusable(epsilon))
    }
}

/// Parses, sorts and merges the query set into disjoint inclusive ranges.
fn parse_queries(specs: &[QuerySpec]) -> Result<Vec<(u16, u16)>, CampaignError> {
    let mut ranges = Vec::with_capacity(specs.len());
    for s in specs {
        ranges.push(match s {
            QuerySpec::One(q) => (*q, *q),
            QuerySpec::Range(text) => parse_range(text)?,
        });
    }
    if ranges.is_empty() {
        return Err(CampaignError::NoQueries);
    }
    ranges.sort_unstable();
    let mut merged: Vec<(u16, u16)> = Vec::with_capacity(ranges.len());
    for (a, b) in ranges {
        match merged.last_mut() {
            Some(last) if u32::from(a) <= u32::from(last.1) + 1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    Ok(merged)
}

/// `"a-b"` or `"a"`.
pub fn parse_range(text: &str) -> Result<(u16, u16), CampaignError> {
    let bad = || CampaignError::Query(text.to_string());
    let (a, b) = match text.split_once('-') {
        Some((a, b)) => (a, b),
        None => (text, text),
    };
    let a: u16 = a.trim().parse().map_err(|_| bad())?;
    let b: u16 = b.trim().parse().map_err(|_| bad())?;
    if a > b {
        return Err(bad());
    }
    Ok((a, b))
}

/// A validated campaign: what every accepted report is, exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CampaignPlan {
    campaign: Campaign,
    kind: ReportKind,
    report_len: usize,
    header: [u8; HEADER_LEN],
    queries: Vec<(u16, u16)>,
    memory_bytes: u64,
}

impl CampaignPlan {
    /// The campaign, in canonical form (what `--save-state` records).
    pub fn campaign(&self) -> &Campaign {
        &self.campaign
    }

    /// The report kind of query `query` (for query 0 when not collected).
    pub fn kind(&self, query: u16) -> ReportKind {
        ReportKind { query, ..self.kind }
    }

    /// The exact length of every accepted report.
    pub fn report_len(&self) -> usize {
        self.report_len
    }

    /// The canonical 12-byte header of query 0 (bytes 2–3, the query id, vary).
    pub fn header(&self) -> [u8; HEADER_LEN] {
        self.header
    }

    /// Most bytes of aggregation state.
    pub fn memory_bytes(&self) -> u64 {
        self.memory_bytes
    }

    /// Number of query ids the campaign collects (each is a report kind of its own).
    pub fn query_count(&self) -> u64 {
        self.queries
            .iter()
            .map(|&(a, b)| u64::from(b.saturating_sub(a)) + 1)
            .sum()
    }

    /// Whether the campaign collects `query`.
    pub fn collects(&self, query: u16) -> bool {
        self.queries.iter().any(|&(a, b)| (a..=b).contains(&query))
    }

    /// Checks one report against the campaign — its header first (mechanism,
    /// ε, parameter), then a full decode, OLH's `g` and the query id — and
    /// returns the decoded report, or why it is rejected. Constant work per
    /// byte; no allocation.
    pub fn classify<'a>(&self, bytes: &'a [u8]) -> Result<Report<'a>, RejectReason> {
        if let Some(h) = bytes.first_chunk::<HEADER_LEN>()
            && h[0] == self.header[0]
        {
            if h[1] != self.header[1] {
                return Err(RejectReason::MechanismMismatch);
            }
            let num = u64::from(u16::from_le_bytes([h[4], h[5]]));
            let den = u64::from(u16::from_le_bytes([h[6], h[7]]));
            match Epsilon::new(num, den) {
                Err(_) => return Err(RejectReason::Parameter),
                Ok(e) if (e.num(), e.den()) != (self.kind.epsilon_num, self.kind.epsilon_den) => {
                    return Err(RejectReason::EpsilonMismatch);
                }
                Ok(_) => {}
            }
            if h[8..] != self.header[8..] {
                return Err(RejectReason::ParameterMismatch);
            }
        }
        let r = decode(bytes).map_err(RejectReason::from_core)?;
        let k = ReportKind::of(&r);
        if k.mechanism != self.kind.mechanism {
            Err(RejectReason::MechanismMismatch)
        } else if (k.epsilon_num, k.epsilon_den) != (self.kind.epsilon_num, self.kind.epsilon_den) {
            Err(RejectReason::EpsilonMismatch)
        } else if k.param != self.kind.param || k.g != self.kind.g {
            Err(RejectReason::ParameterMismatch)
        } else if !self.collects(k.query) {
            Err(RejectReason::QueryMismatch)
        } else {
            Ok(r)
        }
    }
}

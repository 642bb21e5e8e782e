//! Report validation with one typed error and one counter per rejection class.

use privq_core::Error;
use privq_core::report::{self, Report};
use serde::{Deserialize, Serialize};

/// Why a report was rejected. Every class of malformed report has its own variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RejectReason {
    /// Shorter than the 12-byte header.
    #[error("report shorter than its 12-byte header")]
    Truncated,
    /// Unsupported format version.
    #[error("report has an unsupported format version")]
    Version,
    /// Unknown mechanism id.
    #[error("report names an unknown mechanism")]
    UnknownMechanism,
    /// Invalid header parameters (ε zero, impossible domain/bucket count/bound/grid).
    #[error("report header has invalid parameters")]
    Parameter,
    /// Length differs from what the header implies.
    #[error("report length does not match its header")]
    Length,
    /// A payload value out of range.
    #[error("report payload value out of range")]
    ValueOutOfRange,
    /// A valid report for a different mechanism, ε, domain or query than the
    /// aggregator's.
    #[error("report is for another mechanism, epsilon, domain or query")]
    Mismatch,
    /// A valid report of another mechanism than the campaign's.
    #[error("report is for another mechanism than the campaign")]
    MechanismMismatch,
    /// A valid report at another ε than the campaign's.
    #[error("report has another epsilon than the campaign")]
    EpsilonMismatch,
    /// A valid report with another domain size / parameter (or OLH bucket count
    /// `g`) than the campaign's.
    #[error("report has another domain size or parameter than the campaign")]
    ParameterMismatch,
    /// A valid report for a query id the campaign does not collect.
    #[error("report's query id is not in the campaign")]
    QueryMismatch,
    /// A frame whose length prefix differs from the campaign's report length
    /// (a corrupted length: the reader resynchronises after it).
    #[error("frame length differs from the campaign's report length (corrupted length prefix)")]
    FrameLength,
    /// The input ends inside a frame.
    #[error("the input ends inside a frame")]
    FrameTruncated,
}

impl RejectReason {
    /// The class of a decoding error from [`privq_core::report::decode`].
    pub fn from_core(e: Error) -> RejectReason {
        match e {
            Error::ReportTruncated => RejectReason::Truncated,
            Error::ReportVersion => RejectReason::Version,
            Error::UnknownMechanism => RejectReason::UnknownMechanism,
            Error::ReportLength => RejectReason::Length,
            Error::ReportValueOutOfRange => RejectReason::ValueOutOfRange,
            _ => RejectReason::Parameter,
        }
    }

    /// Every class, in a fixed order.
    pub const ALL: [RejectReason; 13] = [
        RejectReason::Truncated,
        RejectReason::Version,
        RejectReason::UnknownMechanism,
        RejectReason::Parameter,
        RejectReason::Length,
        RejectReason::ValueOutOfRange,
        RejectReason::Mismatch,
        RejectReason::MechanismMismatch,
        RejectReason::EpsilonMismatch,
        RejectReason::ParameterMismatch,
        RejectReason::QueryMismatch,
        RejectReason::FrameLength,
        RejectReason::FrameTruncated,
    ];

    /// A short snake_case name for reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            RejectReason::Truncated => "truncated",
            RejectReason::Version => "wrong_version",
            RejectReason::UnknownMechanism => "unknown_mechanism",
            RejectReason::Parameter => "bad_parameter",
            RejectReason::Length => "wrong_length",
            RejectReason::ValueOutOfRange => "value_out_of_range",
            RejectReason::Mismatch => "mismatched_parameters",
            RejectReason::MechanismMismatch => "wrong_mechanism",
            RejectReason::EpsilonMismatch => "wrong_epsilon",
            RejectReason::ParameterMismatch => "wrong_domain_or_parameter",
            RejectReason::QueryMismatch => "query_not_in_campaign",
            RejectReason::FrameLength => "bad_frame_length",
            RejectReason::FrameTruncated => "truncated_frame",
        }
    }
}

/// Decodes and validates one report (see [`privq_core::report::decode`]).
pub fn decode_report(bytes: &[u8]) -> Result<Report<'_>, RejectReason> {
    report::decode(bytes).map_err(RejectReason::from_core)
}

/// Counts of rejected reports, one per [`RejectReason`]; mergeable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RejectCounts {
    /// [`RejectReason::Truncated`].
    pub truncated: u64,
    /// [`RejectReason::Version`].
    pub wrong_version: u64,
    /// [`RejectReason::UnknownMechanism`].
    pub unknown_mechanism: u64,
    /// [`RejectReason::Parameter`].
    pub bad_parameter: u64,
    /// [`RejectReason::Length`].
    pub wrong_length: u64,
    /// [`RejectReason::ValueOutOfRange`].
    pub value_out_of_range: u64,
    /// [`RejectReason::Mismatch`].
    pub mismatched_parameters: u64,
    /// [`RejectReason::MechanismMismatch`].
    #[serde(default)]
    pub wrong_mechanism: u64,
    /// [`RejectReason::EpsilonMismatch`].
    #[serde(default)]
    pub wrong_epsilon: u64,
    /// [`RejectReason::ParameterMismatch`].
    #[serde(default)]
    pub wrong_domain_or_parameter: u64,
    /// [`RejectReason::QueryMismatch`].
    #[serde(default)]
    pub query_not_in_campaign: u64,
    /// [`RejectReason::FrameLength`].
    #[serde(default)]
    pub bad_frame_length: u64,
    /// [`RejectReason::FrameTruncated`].
    #[serde(default)]
    pub truncated_frame: u64,
}

impl RejectCounts {
    fn slot(&mut self, r: RejectReason) -> &mut u64 {
        match r {
            RejectReason::Truncated => &mut self.truncated,
            RejectReason::Version => &mut self.wrong_version,
            RejectReason::UnknownMechanism => &mut self.unknown_mechanism,
            RejectReason::Parameter => &mut self.bad_parameter,
            RejectReason::Length => &mut self.wrong_length,
            RejectReason::ValueOutOfRange => &mut self.value_out_of_range,
            RejectReason::Mismatch => &mut self.mismatched_parameters,
            RejectReason::MechanismMismatch => &mut self.wrong_mechanism,
            RejectReason::EpsilonMismatch => &mut self.wrong_epsilon,
            RejectReason::ParameterMismatch => &mut self.wrong_domain_or_parameter,
            RejectReason::QueryMismatch => &mut self.query_not_in_campaign,
            RejectReason::FrameLength => &mut self.bad_frame_length,
            RejectReason::FrameTruncated => &mut self.truncated_frame,
        }
    }

    /// Counts one rejection (saturating).
    pub fn record(&mut self, r: RejectReason) {
        let s = self.slot(r);
        *s = s.saturating_add(1);
    }

    /// The count for one class.
    pub fn get(&self, r: RejectReason) -> u64 {
        let mut copy = *self;
        *copy.slot(r)
    }

    /// All rejections.
    pub fn total(&self) -> u64 {
        RejectReason::ALL
            .iter()
            .fold(0u64, |acc, &r| acc.saturating_add(self.get(r)))
    }

    /// Adds another set of counts.
    pub fn merge(&mut self, other: &RejectCounts) {
        for r in RejectReason::ALL {
            let add = other.get(r);
            let s = self.slot(r);
            *s = s.saturating_add(add);
        }
    }
}

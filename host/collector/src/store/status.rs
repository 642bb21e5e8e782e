//! What the collector answers for each frame: [`Rejection`], [`FrameStatus`] and
//! their JSON wire form [`StatusJson`] (`docs/src/collector.md`).

use std::fmt;

use privq_core::upload::{Delivery, TAG_LEN, Verdict};
use serde::Serialize;

use privq_host::ldp::upload::FrameReject;

/// Why the collector refused a frame (besides [`FrameReject`]'s authentication
/// and format classes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rejection {
    /// The frame failed verification (format, unknown device, MAC, body, report).
    Frame(FrameReject),
    /// The replay key `(device, epoch, sequence)` was accepted before with another
    /// tag: a reused counter or a forgery attempt by a key holder. Not acknowledged.
    Conflict,
    /// The frame's reports would take the device past its lifetime ε cap. Nothing
    /// of the frame is counted.
    BudgetExceeded,
    /// The exact sum of the device's spent ε and the frame's ε does not fit
    /// [`Epsilon`](privq_core::Epsilon)'s 64-bit numerator and denominator (many coprime denominators).
    /// Fail-closed: nothing is counted, and no later frame with such ε can be
    /// accepted for this device either. Logged.
    EpsilonOverflow,
    /// Report `index` is of a kind (mechanism, ε, parameter, query, g) the device
    /// has reported before, or repeats a kind earlier in the frame: each device
    /// contributes at most one report to each aggregation group. Not charged.
    AlreadyReported {
        /// Position of the report in the frame.
        index: u16,
    },
    /// Report `index` declares a domain above the collector's `max_domain`
    /// (its aggregator would be too large to allocate).
    DomainTooLarge {
        /// Position of the report in the frame.
        index: u16,
    },
    /// Report `index` has an ε below the collector's `min_epsilon` (each distinct
    /// ε is an aggregation group of its own).
    EpsilonTooSmall {
        /// Position of the report in the frame.
        index: u16,
    },
    /// Report `index` would open an aggregation group (mechanism, ε, parameter,
    /// query, g) beyond the collector's `max_groups`. Groups already open keep
    /// accepting reports.
    GroupLimit {
        /// Position of the report in the frame.
        index: u16,
    },
    /// Report `index` would open an aggregation group, and the device has already
    /// opened the collector's `max_groups_per_device` groups (it was the first to
    /// report their kinds). Its reports of open groups are accepted; the frame is
    /// accepted once another device has opened the group.
    DeviceGroupLimit {
        /// Position of the report in the frame.
        index: u16,
    },
    /// Report `index` would open an aggregation group whose items (its domain; 1
    /// for a mean) would take the open groups' total past the collector's
    /// `max_items`, which bounds its counters and the size of its estimates.
    ItemLimit {
        /// Position of the report in the frame.
        index: u16,
    },
    /// Report `index` would open an aggregation group, and the items of the groups
    /// its device opened would pass the collector's `max_items_per_device`: one
    /// key cannot take the whole item budget with a few large domains. Accepted
    /// once another device has opened the group.
    DeviceItemLimit {
        /// Position of the report in the frame.
        index: u16,
    },
    /// The device's key is a documented test-only key (`docs/src/upload-frame.md`) and
    /// the collector was not started with test keys allowed.
    TestKey,
    /// Report `index` is of a kind none of the collector's campaigns collects (only
    /// when it was started with campaigns, [`Policy::campaigns`](super::Policy::campaigns)).
    NotInCampaign {
        /// Position of the report in the frame.
        index: u16,
    },
}

impl Rejection {
    /// The snake_case name used in responses and logs.
    pub fn name(self) -> &'static str {
        match self {
            Rejection::Frame(f) => f.name(),
            Rejection::Conflict => "replay_conflict",
            Rejection::BudgetExceeded => "budget_exceeded",
            Rejection::EpsilonOverflow => "epsilon_accounting_overflow",
            Rejection::AlreadyReported { .. } => "already_reported",
            Rejection::DomainTooLarge { .. } => "domain_too_large",
            Rejection::EpsilonTooSmall { .. } => "epsilon_too_small",
            Rejection::GroupLimit { .. } => "group_limit",
            Rejection::DeviceGroupLimit { .. } => "device_group_limit",
            Rejection::ItemLimit { .. } => "item_limit",
            Rejection::DeviceItemLimit { .. } => "device_item_limit",
            Rejection::TestKey => "test_key_refused",
            Rejection::NotInCampaign { .. } => "not_in_campaign",
        }
    }
}

impl Rejection {
    /// The reason sent to the client: [`name`](Self::name), except that an unknown
    /// device and a tag that does not verify are both `unauthenticated`, so a client
    /// cannot tell provisioned device ids apart (the logs keep the distinction).
    pub fn wire_name(self) -> &'static str {
        match self {
            Rejection::Frame(FrameReject::UnknownDevice | FrameReject::Mac) => "unauthenticated",
            r => r.name(),
        }
    }

    /// The rejection in words, as sent to the client (one text for both
    /// `unauthenticated` causes).
    pub fn wire_detail(self) -> String {
        match self {
            Rejection::Frame(FrameReject::UnknownDevice | FrameReject::Mac) => {
                "the frame does not verify under a provisioned device key".into()
            }
            r => r.to_string(),
        }
    }

    /// Whether resending the same frame can never succeed, so the device drops it
    /// from its outbox and counts the drop (wire status `rejected`,
    /// `docs/src/collector.md`). Rejections that depend on the collector's
    /// configuration — its limits, its key store (`unauthenticated`: a device may
    /// upload before its provisioning is committed, or after a restore from an
    /// older backup) and the test-key switch — are not: the operator can change
    /// them, so the frame is `refused` and the device keeps it and resends it
    /// later, rather than losing reports to a setting. Nor is any framing fault
    /// found before the tag is verified (truncated, magic, version, length,
    /// trailing bytes): those bytes are not authenticated, so they may be line
    /// noise on an intact frame the device still holds, exactly like a failed tag.
    pub fn permanent(self) -> bool {
        !matches!(
            self,
            Rejection::Frame(
                FrameReject::Truncated
                    | FrameReject::Magic
                    | FrameReject::Version
                    | FrameReject::Length
                    | FrameReject::TrailingBytes
                    | FrameReject::UnknownDevice
                    | FrameReject::Mac
            ) | Rejection::DomainTooLarge { .. }
                | Rejection::EpsilonTooSmall { .. }
                | Rejection::GroupLimit { .. }
                | Rejection::DeviceGroupLimit { .. }
                | Rejection::ItemLimit { .. }
                | Rejection::DeviceItemLimit { .. }
                | Rejection::NotInCampaign { .. }
                | Rejection::TestKey
        )
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::Frame(r) => write!(f, "{r}"),
            Rejection::Conflict => f.write_str(
                "another frame with the same device, epoch and sequence number was accepted",
            ),
            Rejection::BudgetExceeded => {
                f.write_str("the frame's reports would exceed the device's lifetime epsilon cap")
            }
            Rejection::EpsilonOverflow => f.write_str(
                "the exact sum of the device's epsilon does not fit 64-bit numerator and denominator",
            ),
            Rejection::AlreadyReported { index } => write!(
                f,
                "report {index} is of a kind the device has already reported"
            ),
            Rejection::DomainTooLarge { index } => {
                write!(
                    f,
                    "report {index} declares a domain above the collector's limit"
                )
            }
            Rejection::EpsilonTooSmall { index } => {
                write!(
                    f,
                    "report {index} has an epsilon below the collector's minimum"
                )
            }
            Rejection::GroupLimit { index } => write!(
                f,
                "report {index} would open an aggregation group beyond the collector's limit"
            ),
            Rejection::DeviceGroupLimit { index } => write!(
                f,
                "report {index} would open an aggregation group, and the device has opened \
                 as many as the collector allows one device"
            ),
            Rejection::ItemLimit { index } => write!(
                f,
                "report {index} would open an aggregation group beyond the collector's limit \
                 on estimated items"
            ),
            Rejection::DeviceItemLimit { index } => write!(
                f,
                "report {index} would open an aggregation group, and the groups the device \
                 has opened hold as many items as the collector allows one device"
            ),
            Rejection::TestKey => f.write_str("the device holds a test-only key"),
            Rejection::NotInCampaign { index } => write!(
                f,
                "report {index} is of a kind none of the collector's campaigns collects"
            ),
        }
    }
}

/// The outcome for one frame of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameStatus {
    /// New: its reports are stored and counted.
    Accepted {
        /// Replay key: device.
        device: u64,
        /// Replay key: epoch.
        epoch: u32,
        /// Replay key: sequence number.
        sequence: u32,
        /// Reports stored.
        reports: usize,
    },
    /// A byte-identical retry of an accepted frame: acknowledged, nothing counted.
    Duplicate {
        /// Replay key: device.
        device: u64,
        /// Replay key: epoch.
        epoch: u32,
        /// Replay key: sequence number.
        sequence: u32,
    },
    /// Refused: nothing of it is stored; not acknowledged.
    Rejected(Rejection),
}

impl FrameStatus {
    /// Whether the device may drop the frame (accepted or duplicate).
    pub fn acknowledged(&self) -> bool {
        !matches!(self, FrameStatus::Rejected(_))
    }

    /// The verdict a device acts on, which the collector tags
    /// ([`Store::verdict_tags`](super::Store::verdict_tags)): `accepted`,
    /// `duplicate`, or a [permanent](Rejection::permanent) rejection; `None` for a
    /// refusal (the device keeps the frame).
    pub fn verdict(&self) -> Option<Verdict> {
        match self {
            FrameStatus::Accepted { .. } => Some(Verdict::Accepted),
            FrameStatus::Duplicate { .. } => Some(Verdict::Duplicate),
            FrameStatus::Rejected(r) if r.permanent() => Some(Verdict::Rejected),
            FrameStatus::Rejected(_) => None,
        }
    }

    /// What the device does with the frame: remove it (acknowledged), or drop and
    /// count it (a [permanent](Rejection::permanent) rejection).
    pub fn delivery(&self) -> Delivery {
        match self {
            FrameStatus::Accepted { .. } | FrameStatus::Duplicate { .. } => Delivery::Acknowledged,
            FrameStatus::Rejected(r) if r.permanent() => Delivery::Rejected,
            FrameStatus::Rejected(_) => Delivery::NotDelivered,
        }
    }
}

/// The JSON form of a [`FrameStatus`] (`docs/src/collector.md`).
#[derive(Debug, Clone, Serialize)]
pub struct StatusJson {
    /// `accepted`, `duplicate`, `rejected` (permanent) or `refused` (by the
    /// collector's configuration: keep the frame and resend it later).
    pub status: &'static str,
    /// The replay key's device (absent when rejected).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<u64>,
    /// The replay key's epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epoch: Option<u32>,
    /// The replay key's sequence number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence: Option<u32>,
    /// Reports stored (accepted frames).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reports: Option<usize>,
    /// The rejection class.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    /// The rejection in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The verdict's tag under the device key, lowercase hex (`accepted`,
    /// `duplicate`, `rejected`; [`StatusJson::with_tag`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

impl StatusJson {
    /// This status with its verdict tag ([`Store::verdict_tags`](super::Store::verdict_tags)).
    pub fn with_tag(mut self, tag: Option<[u8; TAG_LEN]>) -> StatusJson {
        self.tag = tag.map(|t| t.iter().map(|b| format!("{b:02x}")).collect());
        self
    }
}

impl From<&FrameStatus> for StatusJson {
    fn from(s: &FrameStatus) -> StatusJson {
        let mut j = StatusJson {
            status: "rejected",
            device: None,
            epoch: None,
            sequence: None,
            reports: None,
            reason: None,
            detail: None,
            tag: None,
        };
        match *s {
            FrameStatus::Accepted {
                device,
                epoch,
                sequence,
                reports,
            } => {
                j.status = "accepted";
                (j.device, j.epoch, j.sequence) = (Some(device), Some(epoch), Some(sequence));
                j.reports = Some(reports);
            }
            FrameStatus::Duplicate {
                device,
                epoch,
                sequence,
            } => {
                j.status = "duplicate";
                (j.device, j.epoch, j.sequence) = (Some(device), Some(epoch), Some(sequence));
            }
            FrameStatus::Rejected(r) => {
                if !r.permanent() {
                    j.status = "refused";
                }
                j.reason = Some(r.wire_name());
                j.detail = Some(r.wire_detail());
            }
        }
        j
    }
}

//! What the collector admits beyond a valid frame: its [`Policy`], the
//! [`OpenGroups`] reports are counted against, and the charge of one frame.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use privq_core::Epsilon;
use privq_core::upload::DeviceKey;

use privq_host::ldp::aggregate::ReportKind;
use privq_host::ldp::campaign::CampaignPlan;
use privq_host::ldp::decode::decode_report;
use privq_host::ldp::upload::FrameReject;

use super::Rejection;

/// What the collector accepts beyond a valid frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// The largest domain (items, or Hadamard's header parameter) a report may declare.
    pub max_domain: u32,
    /// The most aggregation groups (distinct [`ReportKind`]s) the collector keeps;
    /// each allocates up to about `2 * max_domain` counters.
    pub max_groups: usize,
    /// The most groups one device may open (be the first to report a kind of):
    /// a single key holder cannot take all `max_groups`.
    pub max_groups_per_device: usize,
    /// The most estimated items over all open groups (the sum of their domains,
    /// counting a mean as 1): bounds the collector's counters and the size of
    /// `GET /v1/estimates` (about 110 bytes of JSON per item).
    pub max_items: u64,
    /// The most estimated items in the groups one device opened: one key cannot
    /// take all `max_items` with a few groups of large domains.
    pub max_items_per_device: u64,
    /// The smallest ε a report may have (`None`: any).
    pub min_epsilon: Option<Epsilon>,
    /// Accept devices whose key is a documented test-only key.
    pub allow_test_keys: bool,
    /// The campaigns whose reports are accepted (`None`: any kind, within the
    /// group limits). With campaigns, no key holder can open a group outside them.
    pub campaigns: Option<Arc<[CampaignPlan]>>,
}

impl Policy {
    /// Whether the campaigns (if any) collect reports of `kind`.
    pub fn collects(&self, kind: &ReportKind) -> bool {
        self.campaigns.as_ref().is_none_or(|plans| {
            plans
                .iter()
                .any(|p| p.collects(kind.query) && p.kind(kind.query) == *kind)
        })
    }
}

impl Default for Policy {
    /// Domains up to 2^16, 1024 groups, 256 opened per device, 2^20 items in all
    /// and 2^18 in the groups one device opened, ε at least 1/1024, no test keys.
    fn default() -> Policy {
        Policy {
            max_domain: 1 << 16,
            max_groups: 1024,
            max_groups_per_device: 256,
            max_items: 1 << 20,
            max_items_per_device: 1 << 18,
            min_epsilon: Epsilon::new(1, 1024).ok(),
            allow_test_keys: false,
            campaigns: None,
        }
    }
}

/// Whether `key` is a documented test-only key (`fleet ‖ device ‖ "NOT-A-REAL-KEY!!"`).
pub fn is_test_key(key: &DeviceKey) -> bool {
    key.as_bytes().get(16..) == Some(b"NOT-A-REAL-KEY!!".as_slice())
}

/// The open aggregation groups, each with the device that opened it (the first
/// to report its kind). [`Store::submit`](super::Store::submit) admits reports against it; the
/// collector rebuilds it at startup from the stored reports in acceptance order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenGroups {
    pub(super) opener: BTreeMap<ReportKind, u64>,
    opened: HashMap<u64, (usize, u64)>,
    items: u64,
}

impl OpenGroups {
    /// Records that `device` opened the group of `kind`; `false` (and no change)
    /// if it was open already.
    pub fn open(&mut self, kind: ReportKind, device: u64) -> bool {
        if self.opener.contains_key(&kind) {
            return false;
        }
        self.opener.insert(kind, device);
        let (groups, items) = self.opened.entry(device).or_insert((0, 0));
        *groups += 1;
        *items = items.saturating_add(kind.items());
        self.items = self.items.saturating_add(kind.items());
        true
    }

    /// Estimated items in the groups `device` opened.
    pub fn items_opened_by(&self, device: u64) -> u64 {
        self.opened.get(&device).map_or(0, |o| o.1)
    }

    /// Estimated items over the open groups ([`Policy::max_items`]).
    pub fn items(&self) -> u64 {
        self.items
    }

    /// Whether the group of `kind` is open.
    pub fn contains(&self, kind: &ReportKind) -> bool {
        self.opener.contains_key(kind)
    }

    /// The device that opened the group of `kind`.
    pub fn opener(&self, kind: &ReportKind) -> Option<u64> {
        self.opener.get(kind).copied()
    }

    /// Groups opened by `device`.
    pub fn opened_by(&self, device: u64) -> usize {
        self.opened.get(&device).map_or(0, |o| o.0)
    }

    /// Open groups.
    pub fn len(&self) -> usize {
        self.opener.len()
    }

    /// Whether no group is open.
    pub fn is_empty(&self) -> bool {
        self.opener.is_empty()
    }
}

/// What a frame's reports are admitted against besides the device's cap.
pub(super) struct Admission<'a> {
    pub(super) policy: &'a Policy,
    /// The frame's device.
    pub(super) device: u64,
    /// Groups open before the batch.
    pub(super) open: &'a OpenGroups,
    /// Groups opened by earlier frames of the batch.
    pub(super) opened: &'a OpenGroups,
}

/// A frame's admission: the device's spent ε after it, the groups it opens and
/// the kinds it reports.
pub(super) type Charge = (Epsilon, BTreeSet<ReportKind>, Vec<ReportKind>);

/// Kinds of a frame checked for repeats by a linear scan before a set takes over.
const SCAN: usize = 8;

/// The device's spent ε after `reports`, exactly, with the groups they open and
/// their kinds, or why they are refused: a domain above the policy's, an ε below
/// its minimum, a kind the device has reported (`reported`) or repeats in the frame,
/// a group beyond its limit, a total above the cap, or an exact sum that overflows.
pub(super) fn charge<'r>(
    cap: Epsilon,
    spent: Option<Epsilon>,
    reports: impl Iterator<Item = &'r [u8]>,
    adm: &Admission<'_>,
    reported: impl Fn(&ReportKind) -> bool,
) -> Result<Charge, Rejection> {
    let policy = adm.policy;
    let mut new = BTreeSet::new();
    let mut new_items = 0u64;
    let mut kinds: Vec<ReportKind> = Vec::new();
    let mut seen = BTreeSet::new();
    let mut total = spent;
    for (i, bytes) in reports.enumerate() {
        let index = u16::try_from(i).unwrap_or(u16::MAX);
        // The frame's verification decoded every report already; this cannot fail.
        let r = match decode_report(bytes) {
            Ok(r) => r,
            Err(reason) => {
                return Err(Rejection::Frame(FrameReject::Report { index, reason }));
            }
        };
        let kind = ReportKind::of(&r);
        if kind.domain().is_some_and(|d| d > policy.max_domain) {
            return Err(Rejection::DomainTooLarge { index });
        }
        let eps = r.header.epsilon;
        if policy.min_epsilon.is_some_and(|m| eps < m) {
            return Err(Rejection::EpsilonTooSmall { index });
        }
        if !policy.collects(&kind) {
            return Err(Rejection::NotInCampaign { index });
        }
        // A repeat within the frame: a scan of the few kinds before it, a set past them.
        if kinds.len() == SCAN {
            seen.extend(kinds.iter().copied());
        }
        let repeat = if kinds.len() < SCAN {
            kinds.contains(&kind)
        } else {
            !seen.insert(kind)
        };
        if repeat || reported(&kind) {
            return Err(Rejection::AlreadyReported { index });
        }
        kinds.push(kind);
        if !adm.open.contains(&kind) && !adm.opened.contains(&kind) && !new.contains(&kind) {
            let groups = adm.open.len() + adm.opened.len() + new.len();
            if groups >= policy.max_groups {
                return Err(Rejection::GroupLimit { index });
            }
            let mine =
                adm.open.opened_by(adm.device) + adm.opened.opened_by(adm.device) + new.len();
            if mine >= policy.max_groups_per_device {
                return Err(Rejection::DeviceGroupLimit { index });
            }
            new_items = new_items.saturating_add(kind.items());
            let items = adm.open.items().saturating_add(adm.opened.items());
            if items.saturating_add(new_items) > policy.max_items {
                return Err(Rejection::ItemLimit { index });
            }
            let mine = adm
                .open
                .items_opened_by(adm.device)
                .saturating_add(adm.opened.items_opened_by(adm.device));
            if mine.saturating_add(new_items) > policy.max_items_per_device {
                return Err(Rejection::DeviceItemLimit { index });
            }
            new.insert(kind);
        }
        total = Some(match total {
            None => eps,
            Some(t) => match t.checked_add(eps) {
                Ok(t) => t,
                Err(_) => return Err(Rejection::EpsilonOverflow),
            },
        });
    }
    match total {
        Some(t) if t > cap => Err(Rejection::BudgetExceeded),
        Some(t) => Ok((t, new, kinds)),
        // A verified frame holds at least one report.
        None => Err(Rejection::Frame(FrameReject::Count)),
    }
}

//! Runtime pool policy records held in the replicated state.
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How many negotiation cycle records the state keeps.
pub const MAX_CYCLE_RECORDS: usize = 100;

/// A group quota: an absolute number of slots (weighted), or a fraction of the parent's quota,
/// as `GROUP_QUOTA_<g>` and `GROUP_QUOTA_DYNAMIC_<g>` express them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Quota {
    /// `GROUP_QUOTA_<g>`: weighted slots.
    Static(f64),
    /// `GROUP_QUOTA_DYNAMIC_<g>`: a fraction (0 to 1) of the parent's quota.
    Dynamic(f64),
}

impl Quota {
    /// Refuses negative, infinite and NaN quotas, and fractions above 1.
    pub fn validate(&self) -> Result<(), String> {
        match *self {
            Quota::Static(v) if !v.is_finite() || v < 0.0 => {
                Err(format!("bad quota {v}: must be a number >= 0"))
            }
            Quota::Dynamic(v) if !v.is_finite() || !(0.0..=1.0).contains(&v) => {
                Err(format!("bad quota fraction {v}: must be between 0 and 1"))
            }
            _ => Ok(()),
        }
    }
}

/// Runtime overrides for one accounting group; `None` means "as the config files say".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupPolicy {
    /// The quota, overriding `GROUP_QUOTA_<g>` / `GROUP_QUOTA_DYNAMIC_<g>`.
    #[serde(default)]
    pub quota: Option<Quota>,
    /// `GROUP_ACCEPT_SURPLUS_<g>`.
    #[serde(default)]
    pub accept_surplus: Option<bool>,
}

impl GroupPolicy {
    /// Whether it overrides nothing (then it is dropped from the state).
    pub fn is_empty(&self) -> bool {
        self.quota.is_none() && self.accept_surplus.is_none()
    }
}

/// An admin's request to drain a machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DrainRequest {
    /// The machine (`Machine` of its slot ads).
    pub machine: String,
    /// "graceful", "quick" or "fast", as condor_drain -how.
    pub how: String,
    /// Why, as `condor_drain -reason` gives it.
    #[serde(default)]
    pub reason: String,
    /// Leader time when requested (Unix seconds).
    pub time: i64,
    /// The request's id, which the machine's slots advertise as `DrainingRequestId` while
    /// they carry it out (empty in requests from before feature version 3).
    #[serde(default)]
    pub request_id: String,
    /// `condor_drain -start`: the machine's START expression while it drains (empty: false).
    #[serde(default)]
    pub start_expr: String,
    /// `condor_drain -check`: the machine refuses the drain unless every slot satisfies it.
    #[serde(default)]
    pub check_expr: String,
    /// `condor_drain -resume-on-completion`: accept jobs again once drained.
    #[serde(default)]
    pub resume_on_completion: bool,
}

impl DrainRequest {
    /// Whether it uses the fields of feature version 3 (older replicas would drop them).
    pub fn has_v3_fields(&self) -> bool {
        !self.request_id.is_empty()
            || !self.start_expr.is_empty()
            || !self.check_expr.is_empty()
            || self.resume_on_completion
    }
}

/// One absent or offline ad.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdRecord {
    /// The ad in ClassAd (new) syntax.
    pub text: String,
    /// Leader time when it was stored (Unix seconds).
    pub time: i64,
}

/// The summary of one negotiation cycle, committed by the leader that ran it.
///
/// Fields after `rejections` were added with the leader-run negotiation; they default when an
/// older log entry or snapshot lacks them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CycleRecord {
    /// The Raft term of the leader that ran it.
    pub term: u64,
    /// Its number in that term (from 1).
    pub cycle: u64,
    /// Leader time when it started (the time of its accountant tick), Unix seconds.
    pub start_time: i64,
    /// Leader time when it ended, Unix seconds.
    pub end_time: i64,
    /// Live slot ads negotiated over.
    pub slots: u64,
    /// Submitters that negotiated.
    pub submitters: u64,
    /// Matches made.
    pub matches: u64,
    /// Requests rejected (HTCondor's `LastNegotiationCycleRejections0`).
    pub rejections: u64,
    /// Raft id of the leader that negotiated.
    #[serde(default)]
    pub leader_id: u64,
    /// Wall-clock length of the cycle, seconds (fractional).
    #[serde(default)]
    pub duration_seconds: f64,
    /// Idle jobs the access points offered.
    #[serde(default)]
    pub idle_jobs: u64,
    /// Access points asked for jobs.
    #[serde(default)]
    pub access_points: u64,
    /// Access points that did not answer.
    #[serde(default)]
    pub access_points_failed: u64,
    /// Grants the access points took.
    #[serde(default)]
    pub grants_accepted: u64,
    /// Grants refused or undeliverable.
    #[serde(default)]
    pub grants_refused: u64,
    /// Matches per submitter.
    #[serde(default)]
    pub matched_by_submitter: BTreeMap<String, u64>,
    /// The `cycle-now` request counter the leader had seen when the cycle started (a cycle
    /// with `requested >= n` served the n-th request).
    #[serde(default)]
    pub requested: u64,
    /// The version of the replicated negotiation policy the cycle used (0: none was
    /// replicated yet, the leader's own file).
    #[serde(default)]
    pub policy_version: u64,
    /// Each accounting group's quota as the cycle computed it (what `condor_userprio -quotas`
    /// shows); kept in the last record only, empty in records of leaders that predate it and
    /// in pools without groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupQuotaRecord>,
}

/// One accounting group's quota as a negotiation cycle computed it: HTCondor's negotiator
/// publishes the same figures in its Accountant ads (`ConfigQuota`, `EffectiveQuota`,
/// `SubtreeQuota`, `SurplusPolicy`, `Requested`; `matchmaker.cpp` and `Accountant.cpp`,
/// `ReportState`). Every number is finite (see [`GroupQuotaRecord::finite`]): a NaN would
/// not survive the JSON of the Raft log.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupQuotaRecord {
    /// The group's name (`<none>` is the root).
    pub name: String,
    /// The configured quota: weighted slots when static, a fraction of the parent when
    /// dynamic (`GROUP_QUOTA_<g>` / `GROUP_QUOTA_DYNAMIC_<g>`, or a runtime override).
    pub config_quota: f64,
    /// The quota is static rather than dynamic.
    pub is_static: bool,
    /// The quota in weighted slots after scaling to the pool (`EffectiveQuota`).
    pub effective_quota: f64,
    /// The quota of the group and its subgroups together (`SubtreeQuota`).
    pub subtree_quota: f64,
    /// Weighted slots the surplus sharing added to the group's quota.
    pub surplus: f64,
    /// The group accepts surplus (`GROUP_ACCEPT_SURPLUS_<g>`).
    pub accept_surplus: bool,
    /// Weighted slots its submitters asked for: running plus idle (`Requested`).
    pub requested: f64,
    /// Weighted slots its submitters used when the cycle started.
    pub usage: f64,
}

impl GroupQuotaRecord {
    /// The record with every non-finite number replaced by 0.
    pub fn finite(mut self) -> Self {
        for v in [
            &mut self.config_quota,
            &mut self.effective_quota,
            &mut self.subtree_quota,
            &mut self.surplus,
            &mut self.requested,
            &mut self.usage,
        ] {
            if !v.is_finite() {
                *v = 0.0;
            }
        }
        self
    }
}

/// The operator's controls of the leader-run negotiation (`cmctl negotiator ...`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NegotiatorControl {
    /// No cycle runs while set.
    #[serde(default)]
    pub paused: bool,
    /// Bumped by every `cycle-now`; the leader's loop runs a cycle when it sees it grow.
    #[serde(default)]
    pub cycle_requests: u64,
}

/// Group names as `condor_userprio`/config use them: `group_x` or `group_x.sub`, or `<none>`.
pub fn check_group_name(group: &str) -> Result<(), String> {
    if group.is_empty() {
        return Err("empty group name".into());
    }
    if group == "<none>" {
        return Ok(());
    }
    if let Some(bad) = group
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '.' || *c == '-'))
    {
        return Err(format!(
            "bad group name {group:?}: character {bad:?} is not allowed"
        ));
    }
    Ok(())
}

/// Concurrency limit names are case-insensitive in HTCondor; store them lower case.
pub fn limit_key(name: &str) -> Result<String, String> {
    if name.is_empty() {
        return Err("empty concurrency limit name".into());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '.'))
    {
        return Err(format!(
            "bad concurrency limit name {name:?}: character {bad:?} is not allowed"
        ));
    }
    Ok(name.to_ascii_lowercase())
}

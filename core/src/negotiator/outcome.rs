//! What one negotiation cycle decided, and why.
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Why a slot was chosen for a job (HTCondor's PreemptState, best first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchReason {
    /// The slot preempts a running job because this job's user has a better priority
    /// (and `PREEMPTION_REQUIREMENTS` allowed it).
    Priority = 0,
    /// The slot's `RANK` prefers this job to the one it runs.
    Rank = 1,
    /// The slot was not running a job.
    NoPreemption = 2,
}

/// One match.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Match {
    /// `CLUSTER.PROC`.
    pub job: String,
    /// Index of the job in the input.
    pub job_index: usize,
    /// Autocluster id (per cycle).
    pub autocluster: usize,
    /// The submitter (accounting name) the match is charged to.
    pub submitter: String,
    /// The group the job negotiated under (`<none>` outside groups).
    pub negotiating_group: String,
    /// Slot name; for a partitionable slot, the partitionable slot's name.
    pub slot: String,
    /// Index of the slot ad in the input.
    pub slot_index: usize,
    /// Why the slot was chosen: idle, or the preemption it causes.
    pub reason: MatchReason,
    /// The submitter whose job is preempted, if any.
    pub preempts: Option<String>,
    /// Slot weight charged for the match: the slot's SlotWeight (all of it for a partitionable
    /// slot), or with a consumption policy the SlotWeight the job's consumption removes.
    pub weight: f64,
    /// For a partitionable slot, what the startd will carve for the job (cpus, memory MB,
    /// disk KB): with a consumption policy the consumption, otherwise the job's requests as
    /// the startd's `MODIFY_REQUEST_EXPR_REQUEST*` modify them.
    pub carved: Option<(f64, f64, f64)>,
}

/// Why a submitter stopped getting slots.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitedBy {
    /// Every idle job was matched.
    Nothing,
    /// Its share of the pie (submitter limit) was used up.
    Share,
    /// Its ceiling.
    Ceiling,
    /// Its group's quota.
    GroupQuota,
    /// Jobs left that match no available slot.
    NoMatch,
    /// Jobs left blocked by a concurrency limit.
    ConcurrencyLimit(String),
    /// It had no idle jobs.
    NoIdleJobs,
}

/// Per-submitter figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubmitterFigures {
    /// Accounting name (`user@domain` or `group.user@domain`).
    pub name: String,
    /// Its accounting group (`<none>` outside groups).
    pub group: String,
    /// Effective user priority (real priority times factor) at the start of the cycle.
    pub effective_priority: f64,
    /// Real user priority.
    pub real_priority: f64,
    /// Priority factor.
    pub priority_factor: f64,
    /// Weighted slots in use at the start of the cycle.
    pub usage_before: f64,
    /// Fair share of the pie (first spin of its group), in slot weight.
    pub pie_slice: f64,
    /// Its floor (slot weight it is served first up to), 0 without one.
    pub floor: f64,
    /// Its ceiling (slot weight it may not go over), if any.
    pub ceiling: Option<f64>,
    /// Idle jobs it had at the start of the cycle.
    pub idle_jobs: usize,
    /// Jobs matched in this cycle.
    pub matched: usize,
    /// Slot weight matched in this cycle.
    pub matched_weight: f64,
    /// Slots it lost to preemption in this cycle.
    pub preempted: usize,
    /// Why it stopped getting slots.
    pub limited_by: LimitedBy,
}

/// Per-group figures (the `condor_userprio -quotas` columns and more).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupFigures {
    /// Group name (`<none>` is the root).
    pub name: String,
    /// Configured quota: slot weight for static, a fraction for dynamic.
    pub config_quota: f64,
    /// The quota is static (`GROUP_QUOTA_<g>`) rather than dynamic.
    pub is_static: bool,
    /// Quota after scaling (the "Effective Quota" column).
    pub quota: f64,
    /// Quota of the group and its subtree.
    pub subtree_quota: f64,
    /// Allocation including surplus, from the last allocation round.
    pub allocated: f64,
    /// What the allocation adds to the quota (surplus taken from other groups).
    pub surplus: f64,
    /// `GROUP_ACCEPT_SURPLUS_<g>`.
    pub accept_surplus: bool,
    /// Demand (weighted running + idle), the "Requested Resources" column.
    pub requested: f64,
    /// Weighted slots its submitters used at the start of the cycle.
    pub usage_before: f64,
    /// Jobs matched negotiating under it.
    pub matched: usize,
    /// Slot weight matched negotiating under it.
    pub matched_weight: f64,
    /// GROUP_SORT_EXPR value; groups negotiate in ascending order.
    pub sort_key: f64,
}

impl GroupFigures {
    /// The figures a cycle record keeps for `condor_userprio -quotas` (finite numbers only).
    pub fn quota_record(&self) -> crate::state::GroupQuotaRecord {
        crate::state::GroupQuotaRecord {
            name: self.name.clone(),
            config_quota: self.config_quota,
            is_static: self.is_static,
            effective_quota: self.quota,
            subtree_quota: self.subtree_quota,
            surplus: self.surplus,
            accept_surplus: self.accept_surplus,
            requested: self.requested,
            usage: self.usage_before,
        }
        .finite()
    }
}

/// Everything a cycle decided.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The matches, in the order they were made.
    pub matches: Vec<Match>,
    /// Per submitter with idle jobs or matches, in effective priority order.
    pub submitters: Vec<SubmitterFigures>,
    /// Per group, in tree order (empty without group quotas).
    pub groups: Vec<GroupFigures>,
    /// Jobs that could not be matched, with the reason (`CLUSTER.PROC` -> reason).
    pub rejections: Vec<(String, String)>,
    /// Configuration problems noticed during the cycle (e.g. a group whose parent is missing).
    pub warnings: Vec<String>,
    /// `LastNegotiationCycle*` statistics (names as the HTCondor negotiator ad has them).
    pub stats: BTreeMap<String, f64>,
}

impl Outcome {
    /// Matches per submitter.
    pub fn matches_by_submitter(&self) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for x in &self.matches {
            *m.entry(x.submitter.clone()).or_insert(0) += 1;
        }
        m
    }
    /// Matched weight per negotiating group.
    pub fn weight_by_group(&self) -> BTreeMap<String, f64> {
        let mut m = BTreeMap::new();
        for x in &self.matches {
            *m.entry(x.negotiating_group.clone()).or_insert(0.0) += x.weight;
        }
        m
    }
    /// The figures of submitter `name`.
    pub fn submitter(&self, name: &str) -> Option<&SubmitterFigures> {
        self.submitters.iter().find(|s| s.name == name)
    }
    /// The figures of group `name` (any case).
    pub fn group(&self, name: &str) -> Option<&GroupFigures> {
        self.groups
            .iter()
            .find(|g| g.name.eq_ignore_ascii_case(name))
    }
}

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
    pub submitter: String,
    /// The group the job negotiated under (`<none>` outside groups).
    pub negotiating_group: String,
    /// Slot name; for a partitionable slot, the partitionable slot's name.
    pub slot: String,
    /// Index of the slot ad in the input.
    pub slot_index: usize,
    pub reason: MatchReason,
    /// The submitter whose job is preempted, if any.
    pub preempts: Option<String>,
    /// Slot weight charged for the match (the carved size for a partitionable slot).
    pub weight: f64,
    /// Resources carved from a partitionable slot (cpus, memory MB, disk KB).
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
    pub name: String,
    pub group: String,
    pub effective_priority: f64,
    pub real_priority: f64,
    pub priority_factor: f64,
    /// Weighted slots in use at the start of the cycle.
    pub usage_before: f64,
    /// Fair share of the pie (first spin of its group), in slot weight.
    pub pie_slice: f64,
    pub floor: f64,
    pub ceiling: Option<f64>,
    pub idle_jobs: usize,
    pub matched: usize,
    pub matched_weight: f64,
    /// Slots it lost to preemption in this cycle.
    pub preempted: usize,
    pub limited_by: LimitedBy,
}

/// Per-group figures (the `condor_userprio -quotas` columns and more).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupFigures {
    pub name: String,
    /// Configured quota: slot weight for static, a fraction for dynamic.
    pub config_quota: f64,
    pub is_static: bool,
    /// Quota after scaling (the "Effective Quota" column).
    pub quota: f64,
    /// Quota of the group and its subtree.
    pub subtree_quota: f64,
    /// Allocation including surplus, from the last allocation round.
    pub allocated: f64,
    pub surplus: f64,
    pub accept_surplus: bool,
    /// Demand (weighted running + idle), the "Requested Resources" column.
    pub requested: f64,
    pub usage_before: f64,
    pub matched: usize,
    pub matched_weight: f64,
    /// GROUP_SORT_EXPR value; groups negotiate in ascending order.
    pub sort_key: f64,
}

/// Everything a cycle decided.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub matches: Vec<Match>,
    pub submitters: Vec<SubmitterFigures>,
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
    pub fn submitter(&self, name: &str) -> Option<&SubmitterFigures> {
        self.submitters.iter().find(|s| s.name == name)
    }
    pub fn group(&self, name: &str) -> Option<&GroupFigures> {
        self.groups
            .iter()
            .find(|g| g.name.eq_ignore_ascii_case(name))
    }
}

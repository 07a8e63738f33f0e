//! The cycle's immutable tables: what preparation ([`super::prep`]) builds from the input and
//! nothing changes afterwards.
//!
//! HTCondor's negotiationTime gathers the same facts once per cycle before it negotiates: the
//! startd ads it kept after trimStartdAds (with what addRemoteUserPrios learned of their
//! users), the pie's size from sumSlotWeights, each submitter's priority, factor, floor and
//! ceiling as the accountant had them, and the idle jobs grouped into autoclusters. What the
//! cycle changes as it matches (a slot taken or carved, a submitter's usage) lives in
//! [`super::state::State`] instead, so that anything read from here is known to be the same
//! at the end of the cycle as at its start.
use super::config::NegotiatorConfig;
use super::matchmaking::RankConds;
use super::NegotiationInput;
use classad::Expr;
use std::rc::Rc;

/// Everything preparation decided, read-only for the rest of the cycle.
pub(super) struct Tables<'a> {
    pub cfg: &'a NegotiatorConfig,
    pub input: &'a NegotiationInput,
    pub now: i64,
    /// The slots left after trimming, in input order.
    pub slots: Vec<SlotInfo>,
    /// Claimed slots (candidates only for preemption), in input order; idle slots are listed
    /// per class in [`super::state::State::class_members`].
    pub busy: Vec<u32>,
    /// The idle jobs, in input order.
    pub jobs: Vec<Job>,
    pub acs: Vec<AutoCluster>,
    pub subs: Vec<Submitter>,
    /// The significant attribute names (lower case, with their case-insensitive hash): slot
    /// classes and autoclusters are keyed on them.
    pub names: Vec<(String, u64)>,
    /// Some slot has a consumption policy ([`SlotInfo::cp`]): slots then change as they are
    /// matched, and candidates are walked as HTCondor's match list is (see
    /// [`super::candidates`]).
    pub has_cp: bool,
    /// Hierarchical group quotas are configured (more groups than the root `<none>`).
    pub hgq: bool,
    /// The first autocluster of each job class ([`AutoCluster::class`]), in class order.
    pub job_classes: Vec<usize>,
    /// Some expression can read a `Submitter*` attribute of the job as matched: each
    /// autocluster is then a job class of its own, evaluated as its own submitter's request.
    pub per_submitter: bool,
    /// Some expression reads a `*ResourcesInUse` attribute the negotiator inserts: those change
    /// with every match, so evaluations cannot be cached across matches.
    pub volatile: bool,
    /// The pie: the SlotWeight of every slot the negotiator owns, busy ones included.
    pub total_weight: f64,
    /// The smallest positive SlotWeight (1 when there is none).
    pub min_weight: f64,
    pub rank_conds: RankConds,
}

/// What a slot is (as opposed to [`super::state::SlotState`], what has happened to it).
#[derive(Clone, Debug)]
pub(super) struct SlotInfo {
    /// Index of the slot ad in the input.
    pub input: usize,
    pub name: String,
    pub pslot: bool,
    /// A partitionable slot with a consumption policy (cp_supports_policy): the assets of its
    /// `MachineResources` (swap left out), each with a `Consumption<Asset>`. The negotiator
    /// splits such a slot within the cycle; any other slot is taken by one match.
    pub cp: Option<Rc<[String]>>,
    pub weight: f64,
    /// The submitter running on it (claimed static slots only).
    pub remote: Option<usize>,
    /// `CurrentRank` (set from `PreemptingRank` when there is one, as HTCondor's
    /// addRemoteUserPrios does) when it is a number; `None` makes the rank conditions
    /// evaluate in full (an undefined CurrentRank never lets the startd prefer a job).
    pub current_rank: Option<f64>,
    /// Concurrency limits its running job holds.
    pub running_limits: Vec<(String, f64)>,
}

/// A submitter as the cycle found it: identity, priorities and its idle jobs.
#[derive(Clone, Debug)]
pub(super) struct Submitter {
    pub name: String,
    /// Its accounting group (index into the group tree; 0 is `<none>`).
    pub group: usize,
    /// Effective user priority (real priority times factor).
    pub eup: f64,
    pub rup: f64,
    pub factor: f64,
    pub floor: f64,
    pub ceiling: Option<f64>,
    /// Weighted slots it was using at the start of the cycle.
    pub usage_before: f64,
    /// Its idle jobs (indices into [`Tables::jobs`]) in negotiation order.
    pub jobs: Vec<usize>,
    pub idle: usize,
}

/// How a job's concurrency limits are declared.
#[derive(Clone, Debug)]
pub(super) enum JobLimits {
    None,
    Fixed(Vec<(String, f64)>),
    /// `ConcurrencyLimitsExpr`, evaluated against each candidate slot.
    Expr(Expr),
    /// Unusable (bad name, or both forms set); the job is never matched.
    Invalid(String),
}

/// One idle job.
#[derive(Clone, Debug)]
pub(super) struct Job {
    /// Index of the job ad in the input.
    pub index: usize,
    pub cluster: i64,
    pub proc: i64,
    pub submitter: usize,
    /// Its autocluster (index into [`Tables::acs`]).
    pub ac: usize,
    /// Sort key within the submitter (see [`super::prep::job_order`]).
    pub order: JobOrder,
    pub limits: JobLimits,
    /// `RequestCpus` (1 without slot weights): what it asks of its group's quota.
    pub request_weight: f64,
}

/// A job's place among its submitter's jobs, ascending (see [`super::prep::job_order`]).
pub(super) type JobOrder = (i64, i64, i64, i64, i64, i64, i64, i64);

/// One autocluster: jobs of one submitter that look the same to matchmaking.
#[derive(Clone, Debug)]
pub(super) struct AutoCluster {
    /// Index into the input job list of the representative job.
    pub rep: usize,
    pub submitter: usize,
    /// Its job class: autoclusters (of any submitter) whose representatives agree on every
    /// significant name and every non-literal attribute, so that they match, rank and cost
    /// alike against any slot and share pair evaluations and candidate orders (see
    /// [`super::candidates`]). Each autocluster is a class of its own when some expression
    /// reads the `Submitter*` attributes of the job as matched.
    pub class: usize,
    /// Per slot-side expression ([`super::matchmaking::SlotSide`]: `NEGOTIATOR_PRE_JOB_RANK`,
    /// `NEGOTIATOR_POST_JOB_RANK`, the slot's `Rank`), which autoclusters share its value
    /// against a slot class: those whose representatives agree on every name the expression
    /// can read, its references closed through every ad (usually all autoclusters for the
    /// negotiator's ranks, which read only the slot). The job class when some name it can
    /// read is not significant.
    pub slot_side: [usize; 3],
}

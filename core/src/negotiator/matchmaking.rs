//! Matchmaking of one job with one slot: whether they match, how the slot ranks for the job,
//! whether taking it preempts someone (and may), and what the match costs.
//!
//! Follows HTCondor 23.9.6's matchmaker.cpp and consumption_policy.cpp:
//! * matchmakingAlgorithm's test of a candidate: IsAMatch (both `Requirements`), then, for a
//!   claimed slot, the preemption rules: startd rank preemption when `rankCondStd`
//!   (`MY.Rank > MY.CurrentRank`) holds, otherwise priority preemption of another user's job
//!   when `PREEMPTION_REQUIREMENTS` allows it and `rankCondPrioPreempt`
//!   (`MY.Rank >= MY.CurrentRank`) holds; a user never preempts itself on priority;
//! * a partitionable slot without a consumption policy is tested like any other slot (its
//!   `Requirements` hold the startd's WithinResourceLimits; the negotiator quantizes nothing);
//! * a partitionable slot with a consumption policy (cp_supports_policy: a `MachineResources`
//!   list and a `Consumption<Asset>` for each of its assets but swap, as a startd with
//!   `CONSUMPTION_POLICY = True` advertises) first gets the job's consumption of each asset
//!   (cp_compute_consumption: `Consumption<Asset>` evaluated with the slot as MY and the job as
//!   TARGET, a missing `Request<Asset>` counting as 0), which must fit what the slot has, with
//!   something consumed (cp_sufficient_assets); the match is then tested with the job's
//!   `Request<Asset>` replaced by its consumption and the original kept as
//!   `_cp_orig_Request<Asset>` (cp_override_requested), as the startd's WithinResourceLimits
//!   expects;
//! * calculateRanks: the sort keys `NEGOTIATOR_PRE_JOB_RANK`, the job's `Rank`,
//!   `NEGOTIATOR_POST_JOB_RANK`, the preemption state (no preemption, then rank, then
//!   priority) and `PREEMPTION_RANK`; the negotiator's expressions are evaluated with the slot
//!   as MY and rounded to `float` as HTCondor's EvalNegotiatorMatchRank does, and an undefined
//!   one sorts as `-FLT_MAX`;
//! * SubmitterLimitPermits' match cost: the slot's SlotWeight (a partitionable slot without a
//!   consumption policy costs all of it), or with a consumption policy the SlotWeight the
//!   consumption removes (cp_deduct_assets);
//! * what the startd will carve for a match with a partitionable slot: with a consumption
//!   policy the consumption; without one the job's requests as the startd's create_dslot
//!   modifies them (`MODIFY_REQUEST_EXPR_REQUEST*` on the job ad, TARGET the slot, an integer
//!   result replacing the request, the job's own requests kept if the slot no longer matches
//!   the modified ones unless `MUST_MODIFY_REQUEST_EXPRS`).
//!
//! A pair's evaluation depends only on the job's autocluster and the slot's class (see
//! [`super::keys`]), so [`super::candidates`] caches it per (job class, slot class), and each
//! slot-side expression per (the autoclusters agreeing on what it reads, slot class); the
//! preemption rules read the slot's own `CurrentRank` and user, so they are evaluated per slot.
use super::config::NegotiatorConfig;
use super::outcome::MatchReason;
use super::scan::{eval_num, HName};
use super::state::State;
use super::tables::Tables;
use crate::accountant::bounded_slot_weight;
use classad::{ClassAd, Expr, Value};
use std::rc::Rc;

/// What a match with a partitionable slot under a consumption policy takes from it
/// (cp_compute_consumption and cp_deduct_assets).
#[derive(Debug)]
pub(super) struct Consumption {
    /// Each asset of the slot's `MachineResources` (swap left out), as the slot names it, with
    /// the amount its `Consumption<Asset>` says the job consumes.
    pub assets: Vec<(String, f64)>,
    /// The SlotWeight the deduction removes: the match's cost.
    pub cost: f64,
}

impl Consumption {
    /// The consumed amount of `asset` (any case), 0 when the slot has no such asset.
    pub fn of(&self, asset: &str) -> f64 {
        self.assets
            .iter()
            .find(|(a, _)| a.eq_ignore_ascii_case(asset))
            .map_or(0.0, |(_, v)| *v)
    }

    /// What the match carves: (cpus, memory MB, disk KB).
    pub fn carved(&self) -> (f64, f64, f64) {
        (self.of("Cpus"), self.of("Memory"), self.of("Disk"))
    }
}

/// Class-level evaluation of an (autocluster, slot class) pair that matches.
#[derive(Clone, Debug)]
pub(super) struct PairEval {
    /// The job's `Rank` of the slot.
    pub job_rank: f64,
    /// `NEGOTIATOR_PRE_JOB_RANK`.
    pub pre: f64,
    /// `NEGOTIATOR_POST_JOB_RANK`.
    pub post: f64,
    /// The slot's Rank of the job when it evaluates to a number (`MY.Rank` in the rank
    /// conditions); `None` when it is undefined or not a number.
    pub slot_rank: Option<f64>,
    /// With a consumption policy, what the match consumes (`None` for any other slot).
    pub consumption: Option<Rc<Consumption>>,
}

/// HTCondor's two rank conditions, parsed once per cycle (the Matchmaker constructor's
/// `rankCondStd` and `rankCondPrioPreempt`).
pub(super) struct RankConds {
    /// `MY.Rank > MY.CurrentRank`.
    gt: Expr,
    /// `MY.Rank >= MY.CurrentRank`.
    ge: Expr,
}

impl RankConds {
    pub fn new() -> Self {
        let parse = |s: &str| classad::parse_expr(s).expect("constant expression parses");
        RankConds {
            gt: parse("MY.Rank > MY.CurrentRank"),
            ge: parse("MY.Rank >= MY.CurrentRank"),
        }
    }
}

/// Does `job` match slot `si`, and how does the job rank it? `None` if they do not match;
/// with a consumption policy, also what the match consumes. The rest of a pair's evaluation,
/// the expressions evaluated with the slot as MY ([`SlotSide`]), is [`eval_slot_side`]'s.
pub(super) fn eval_match(
    t: &Tables,
    st: &State,
    job: &ClassAd,
    si: usize,
) -> Option<(f64, Option<Rc<Consumption>>)> {
    let slot = &st.slots[si].ad;
    let consumption = match &t.slots[si].cp {
        Some(assets) => {
            let c = consume(job, slot, assets)?;
            if !classad::symmetric_match(&with_consumption(job, &c), slot) {
                return None;
            }
            Some(Rc::new(c))
        }
        None => {
            if !classad::symmetric_match(job, slot) {
                return None;
            }
            None
        }
    };
    Some((classad::rank(job, slot), consumption))
}

/// The expressions of a pair's evaluation that are evaluated with the slot as MY and the job
/// as TARGET. Each can read only the names its references reach (in either ad), so its value
/// is shared by the autoclusters that agree on those names (see
/// [`super::tables::AutoCluster::slot_side`]); for the negotiator's ranks that is usually all
/// of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum SlotSide {
    /// `NEGOTIATOR_PRE_JOB_RANK`.
    Pre = 0,
    /// `NEGOTIATOR_POST_JOB_RANK`.
    Post = 1,
    /// The slot's own `Rank` of the job (the startd's rank).
    Startd = 2,
}

impl SlotSide {
    /// All of them, in [`SlotSide`] order.
    pub const ALL: [SlotSide; 3] = [SlotSide::Pre, SlotSide::Post, SlotSide::Startd];
}

/// A slot-side expression of a matching pair: the negotiator's ranks rounded to `float` as
/// HTCondor's EvalNegotiatorMatchRank does (an undefined or missing one is `-FLT_MAX`, always
/// `Some`); the slot's Rank when it is a number (`MY.Rank` in the rank conditions), `None`
/// when it is undefined or not a number.
pub(super) fn eval_slot_side(
    cfg: &NegotiatorConfig,
    slot: &ClassAd,
    job: &ClassAd,
    which: SlotSide,
) -> Option<f64> {
    let admin = |e: &Option<Expr>| match e {
        Some(e) => match slot.eval_expr_with(e, Some(job)).as_number() {
            Some(v) => v as f32 as f64,
            None => -f64::MAX,
        },
        None => -f64::MAX,
    };
    match which {
        SlotSide::Pre => Some(admin(&cfg.pre_job_rank)),
        SlotSide::Post => Some(admin(&cfg.post_job_rank)),
        SlotSide::Startd => match slot
            .lookup("Rank")
            .map(|e| slot.eval_expr_with(e, Some(job)))
        {
            Some(Value::Int(i)) => Some(i as f64),
            Some(Value::Real(r)) => Some(r),
            _ => None,
        },
    }
}

/// HTCondor's rank conditions on a claimed slot, evaluated with the slot as MY and the job as
/// TARGET: `MY.Rank > MY.CurrentRank` (rankCondStd: the startd strictly prefers the job,
/// "rank" preemption) or, with `or_equal`, `MY.Rank >= MY.CurrentRank` (rankCondPrioPreempt,
/// required of priority preemption). Only true counts: an undefined Rank or CurrentRank makes
/// both false. Numbers compare directly; anything else is evaluated as the expression itself.
fn rank_cond(
    t: &Tables,
    st: &State,
    job: &ClassAd,
    si: usize,
    pe: &PairEval,
    or_equal: bool,
) -> bool {
    match (pe.slot_rank, t.slots[si].current_rank) {
        (Some(r), Some(c)) => {
            if or_equal {
                r >= c
            } else {
                r > c
            }
        }
        _ => {
            let e = if or_equal {
                &t.rank_conds.ge
            } else {
                &t.rank_conds.gt
            };
            st.slots[si].ad.eval_expr_with(e, Some(job)).is_true()
        }
    }
}

/// Whether `PREEMPTION_REQUIREMENTS` rules out priority preemption for every pair: a literal
/// that is not true (HTCondor's default, `False`), so [`preempt_state`] never reaches it.
pub(super) fn priority_preemption_ruled_out(cfg: &NegotiatorConfig) -> bool {
    match &cfg.preemption_requirements {
        Some(e @ Expr::Lit(_)) => !ClassAd::new().eval_expr_with(e, None).is_true(),
        _ => false,
    }
}

/// Whether claimed slot `ad` fails [`rank_cond`]'s strict test (`MY.Rank > MY.CurrentRank`)
/// for every job: its `Rank` and `CurrentRank` are each a literal number or missing (a
/// missing one makes the test undefined, so false), so no job changes the answer. Most
/// startds advertise `Rank = 0` and `CurrentRank = 0.0`.
pub(super) fn rank_preemption_ruled_out(ad: &ClassAd) -> bool {
    // Ok(None): missing; Err: something a job could change.
    let literal = |name: &str| match ad.lookup(name) {
        None => Ok(None),
        Some(Expr::Lit(Value::Int(i))) => Ok(Some(*i as f64)),
        Some(Expr::Lit(Value::Real(r))) => Ok(Some(*r)),
        Some(_) => Err(()),
    };
    match (literal("Rank"), literal("CurrentRank")) {
        // rank_cond's numeric test is `r > c`; NaN on either side fails it too.
        (Ok(Some(r)), Ok(Some(c))) => r.partial_cmp(&c) != Some(std::cmp::Ordering::Greater),
        (Ok(_), Ok(_)) => true,
        _ => false,
    }
}

/// Why `sub`'s job may take matching slot `si` and its `PREEMPTION_RANK`, or `None` if it
/// may not (a claimed slot the rules do not let it preempt).
pub(super) fn preempt_state(
    t: &Tables,
    st: &State,
    job: &ClassAd,
    sub: usize,
    si: usize,
    pe: &PairEval,
) -> Option<(MatchReason, f64)> {
    let cfg = t.cfg;
    let ad = &st.slots[si].ad;
    let Some(r) = t.slots[si].remote else {
        return Some((MatchReason::NoPreemption, -(f32::MAX as f64)));
    };
    let reason = if rank_cond(t, st, job, si, pe, false) {
        MatchReason::Rank
    } else if r != sub {
        if let Some(pr) = &cfg.preemption_requirements {
            if !ad.eval_expr_with(pr, Some(job)).is_true() {
                return None;
            }
        }
        if !rank_cond(t, st, job, si, pe, true) {
            return None;
        }
        MatchReason::Priority
    } else {
        return None;
    };
    let prank = match &cfg.preemption_rank {
        Some(e) => ad
            .eval_expr_with(e, Some(job))
            .as_number()
            .map(|v| v as f32 as f64)
            .unwrap_or(-f64::MAX),
        None => -f64::MAX,
    };
    Some((reason, prank))
}

/// Weight a match with slot `si` would cost (SubmitterLimitPermits' match_cost): its SlotWeight,
/// or with a consumption policy the SlotWeight the consumption removes.
pub(super) fn match_cost(t: &Tables, si: usize, pe: &PairEval) -> f64 {
    match &pe.consumption {
        Some(c) => c.cost,
        None => t.slots[si].weight,
    }
}

/// The job's consumption of each of `assets` on `slot` and the SlotWeight it removes, or
/// `None` when the slot cannot serve it (cp_compute_consumption, cp_sufficient_assets,
/// cp_deduct_assets in test mode).
fn consume(job: &ClassAd, slot: &ClassAd, assets: &[String]) -> Option<Consumption> {
    // A missing Request<Asset> counts as 0 while the policy is evaluated.
    let missing: Vec<String> = assets
        .iter()
        .map(|a| format!("Request{a}"))
        .filter(|r| job.lookup(r).is_none())
        .collect();
    let padded;
    let job = if missing.is_empty() {
        job
    } else {
        let mut j = job.clone();
        for r in &missing {
            j.insert_value(r, Value::Int(0));
        }
        padded = j;
        &padded
    };
    let mut out = Vec::with_capacity(assets.len());
    let mut positive = false;
    for a in assets {
        // EvalFloat: a boolean counts as 0 or 1; anything else fails the policy.
        let used = match slot.eval_attr_with(&format!("Consumption{a}"), Some(job)) {
            Value::Int(i) => i as f64,
            Value::Real(r) => r,
            Value::Bool(b) => b as i64 as f64,
            _ => return None,
        };
        let have = eval_num(slot, a)?;
        if used.is_nan() || used < 0.0 || have < used {
            return None;
        }
        positive |= used > 0.0;
        out.push((a.clone(), used));
    }
    if !positive {
        return None;
    }
    let mut after = slot.clone();
    deduct(&mut after, &out);
    let cost = slot_weight_of(slot) - slot_weight_of(&after);
    Some(Consumption {
        assets: out,
        cost: bounded_slot_weight(cost),
    })
}

/// The SlotWeight of `ad` as cp_deduct_assets reads it (HTCondor gives an ad without one the
/// `SLOT_WEIGHT` default, `Cpus`); NaN when it is not a number.
fn slot_weight_of(ad: &ClassAd) -> f64 {
    static NAMES: std::sync::OnceLock<(HName, HName)> = std::sync::OnceLock::new();
    let (w, c) = NAMES.get_or_init(|| (HName::new("SlotWeight"), HName::new("Cpus")));
    let n = if ad.lookup_by_name(w).is_some() { w } else { c };
    match ad.eval_attr(n.as_str()) {
        Value::Int(i) => i as f64,
        Value::Real(r) => r,
        _ => f64::NAN,
    }
}

/// Takes `consumed` off the assets of `ad`, keeping integers integers (cp_deduct_assets,
/// assign_preserve_integers).
pub(super) fn deduct(ad: &mut ClassAd, consumed: &[(String, f64)]) {
    for (a, used) in consumed {
        let have = eval_num(ad, a).unwrap_or(0.0);
        ad.insert_value(a, num_value(have - used));
    }
}

/// The job as the match test sees it under a consumption policy: each `Request<Asset>` it has
/// replaced by its consumption, the original kept as `_cp_orig_Request<Asset>`
/// (cp_override_requested).
fn with_consumption(job: &ClassAd, c: &Consumption) -> ClassAd {
    let mut v = job.clone();
    for (a, used) in &c.assets {
        let r = format!("Request{a}");
        if let Some(e) = job.lookup(&r) {
            v.insert(&format!("_cp_orig_{r}"), e.clone());
            v.insert_value(&r, num_value(*used));
        }
    }
    v
}

/// A number as HTCondor assigns it (assign_preserve_integers): an integer when it is one.
pub(super) fn num_value(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9e15 {
        Value::Int(v as i64)
    } else {
        Value::Real(v)
    }
}

/// What the startd will carve for `job` from partitionable slot `slot` without a consumption
/// policy: (cpus, memory MB, disk KB) as create_dslot takes them from the job's requests after
/// `MODIFY_REQUEST_EXPR_REQUEST*` (evaluated on the job ad with the slot as TARGET; only an
/// integer result replaces the request). When the slot's `Requirements` no longer hold for the
/// modified requests the job's own are used, unless `MUST_MODIFY_REQUEST_EXPRS`. Cpus default
/// to 1; cpus and memory are at least 1.
pub(super) fn startd_carve(t: &Tables, job: &ClassAd, slot: &ClassAd) -> (f64, f64, f64) {
    const REQUESTS: [&str; 3] = ["RequestCpus", "RequestMemory", "RequestDisk"];
    let cfg = t.cfg;
    let mut modified = job.clone();
    for (name, e) in REQUESTS.iter().zip(&cfg.modify_request_exprs) {
        if let Some(e) = e {
            if let Value::Int(v) = job.eval_expr_with(e, Some(slot)) {
                modified.insert_value(name, Value::Int(v));
            }
        }
    }
    let keep = cfg.must_modify_request_exprs
        || slot
            .eval_attr_with("Requirements", Some(&modified))
            .is_true();
    let ad = if keep { &modified } else { job };
    let int = |name: &str| match ad.eval_attr_with(name, Some(slot)) {
        Value::Int(i) => Some(i as f64),
        Value::Real(r) if r.is_finite() => Some(r.trunc()),
        Value::Bool(b) => Some(b as i64 as f64),
        _ => None,
    };
    (
        int(REQUESTS[0]).unwrap_or(1.0).max(1.0),
        int(REQUESTS[1]).unwrap_or(0.0).max(1.0),
        int(REQUESTS[2]).unwrap_or(0.0),
    )
}

/// A turn's submitter limits at one request: negotiate()'s limitUsed and submitterLimit, and
/// the same pair counting only unclaimed slots.
#[derive(Clone, Copy, Debug)]
pub(super) struct Budget {
    pub used: f64,
    pub limit: f64,
    pub used_unclaimed: f64,
    pub limit_unclaimed: f64,
}

impl Budget {
    /// Does the budget admit a candidate taken for `reason` at `cost`? SubmitterLimitPermits
    /// (`used + cost <= allowed`, or nothing used yet and something allowed: the "round up
    /// once" rule that leaves no crumbs) applied as matchmakingAlgorithm applies it: an
    /// unclaimed slot on the unclaimed pair; on a fresh scan, priority preemption on the
    /// submitter pair and rank preemption not at all; from the cached MatchList (`cached`),
    /// any preemption on the submitter pair or, failing that, the unclaimed pair.
    #[inline]
    pub fn admits(&self, reason: MatchReason, cost: f64, cached: bool) -> bool {
        let permits = |u: f64, allowed: f64| u + cost <= allowed || (u <= 0.0 && allowed > 0.0);
        match reason {
            MatchReason::NoPreemption => permits(self.used_unclaimed, self.limit_unclaimed),
            MatchReason::Priority if !cached => permits(self.used, self.limit),
            MatchReason::Rank if !cached => true,
            MatchReason::Priority | MatchReason::Rank => {
                permits(self.used, self.limit) || permits(self.used_unclaimed, self.limit_unclaimed)
            }
        }
    }
}

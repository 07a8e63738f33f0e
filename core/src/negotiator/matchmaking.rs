//! Matchmaking of one job with one slot: whether they match, how the slot ranks for the job,
//! whether taking it preempts someone (and may), and what the match costs.
//!
//! Follows HTCondor 23.9.6's matchmaker.cpp:
//! * matchmakingAlgorithm's test of a candidate: IsAMatch (both `Requirements`, with a
//!   partitionable slot also holding the job's quantized requests), then, for a claimed slot,
//!   the preemption rules: startd rank preemption when `rankCondStd`
//!   (`MY.Rank > MY.CurrentRank`) holds, otherwise priority preemption of another user's job
//!   when `PREEMPTION_REQUIREMENTS` allows it and `rankCondPrioPreempt`
//!   (`MY.Rank >= MY.CurrentRank`) holds; a user never preempts itself on priority;
//! * calculateRanks: the sort keys `NEGOTIATOR_PRE_JOB_RANK`, the job's `Rank`,
//!   `NEGOTIATOR_POST_JOB_RANK`, the preemption state (no preemption, then rank, then
//!   priority) and `PREEMPTION_RANK`; the negotiator's expressions are evaluated with the slot
//!   as MY and rounded to `float` as HTCondor's EvalNegotiatorMatchRank does, and an undefined
//!   one sorts as `-FLT_MAX`;
//! * SubmitterLimitPermits' match cost: the slot's SlotWeight, or for a partitionable slot the
//!   SlotWeight of what a match would carve (the consumption policy's cp_deduct_assets).
//!
//! A pair's evaluation depends only on the job's autocluster and the slot's class (see
//! [`super::keys`]), so [`super::candidates`] caches it per (autocluster, class); the
//! preemption rules read the slot's own `CurrentRank` and user, so they are evaluated per slot.
use super::outcome::MatchReason;
use super::scan::{eval_num, HName};
use super::state::State;
use super::tables::Tables;
use crate::accountant::bounded_slot_weight;
use classad::{ClassAd, Expr, Value};

/// Resources a job requests of a slot: (cpus, memory MB, disk KB), quantized as the startd
/// does when it carves a dynamic slot.
pub(super) type Request = (f64, f64, f64);

/// Class-level evaluation of an (autocluster, slot class) pair that matches.
#[derive(Clone, Copy, Debug)]
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
    pub req: Request,
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

/// The job's requests of `slot` (`RequestCpus`, `RequestMemory`, `RequestDisk` evaluated
/// against it), quantized.
fn request(t: &Tables, job: &ClassAd, slot: &ClassAd) -> Request {
    let cfg = t.cfg;
    let q = |v: f64, step: f64| {
        if step > 0.0 {
            (v / step).ceil() * step
        } else {
            v
        }
    };
    let get = |n: &str, d: f64| job.eval_attr_with(n, Some(slot)).as_number().unwrap_or(d);
    (
        q(get("RequestCpus", 1.0), cfg.quantize_cpus),
        q(get("RequestMemory", 0.0), cfg.quantize_memory),
        q(get("RequestDisk", 0.0), cfg.quantize_disk),
    )
}

/// Does `job` match slot `si`, and how do they rank each other? `None` if they do not match.
pub(super) fn eval_pair(t: &Tables, st: &State, job: &ClassAd, si: usize) -> Option<PairEval> {
    let cfg = t.cfg;
    let slot = &st.slots[si].ad;
    if !classad::symmetric_match(job, slot) {
        return None;
    }
    let req = request(t, job, slot);
    if t.slots[si].pslot {
        let have = |n: &str| eval_num(slot, n).unwrap_or(0.0);
        if req.0 > have("Cpus") || req.1 > have("Memory") || req.2 > have("Disk") {
            return None;
        }
    }
    let admin = |e: &Option<Expr>| match e {
        Some(e) => match slot.eval_expr_with(e, Some(job)).as_number() {
            Some(v) => v as f32 as f64,
            None => -f64::MAX,
        },
        None => -f64::MAX,
    };
    Some(PairEval {
        job_rank: classad::rank(job, slot),
        pre: admin(&cfg.pre_job_rank),
        post: admin(&cfg.post_job_rank),
        slot_rank: match slot
            .lookup("Rank")
            .map(|e| slot.eval_expr_with(e, Some(job)))
        {
            Some(Value::Int(i)) => Some(i as f64),
            Some(Value::Real(r)) => Some(r),
            _ => None,
        },
        req,
    })
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

/// Weight a match with slot `si` would cost: its SlotWeight, or for a partitionable slot the
/// SlotWeight of the dynamic slot `req` would carve (its `Cpus` without a SlotWeight).
pub(super) fn match_cost(t: &Tables, st: &State, si: usize, req: Request) -> f64 {
    let s = &t.slots[si];
    if !s.pslot {
        return s.weight;
    }
    if !t.cfg.use_slot_weights {
        return 1.0;
    }
    static SLOT_WEIGHT: std::sync::OnceLock<HName> = std::sync::OnceLock::new();
    let ad = &st.slots[si].ad;
    match ad.lookup_by_name(SLOT_WEIGHT.get_or_init(|| HName::new("SlotWeight"))) {
        Some(e) => {
            let mut d = ad.clone();
            d.insert_value("Cpus", Value::Real(req.0));
            d.insert_value("Memory", Value::Real(req.1));
            d.insert_value("Disk", Value::Real(req.2));
            bounded_slot_weight(d.eval_expr(&e.clone()).as_number().unwrap_or(req.0))
        }
        None => bounded_slot_weight(req.0),
    }
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

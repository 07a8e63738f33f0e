//! The negotiation cycle.
//!
//! Steps (HTCondor 23.9.6 matchmaker.cpp):
//! 1. slots: drop absent and offline ads, ads outside `NEGOTIATOR_SLOT_CONSTRAINT`,
//!    Claimed/Idle slots, slots still retiring, and (without `NEGOTIATOR_CONSIDER_PREEMPTION`)
//!    every claimed slot; the pie is the total SlotWeight of what is left (busy slots included);
//! 2. submitters from the idle jobs, usage from the claimed slots, priorities from the ledger;
//! 3. without groups: a floor round for submitters below their floor, then the pie spins;
//!    with groups: quotas, fair share and surplus, then each group in `GROUP_SORT_EXPR` order
//!    gets its own floor round and pie spins limited to its allocation (up to
//!    `GROUP_QUOTA_MAX_ALLOCATION_ROUNDS` rounds);
//! 4. a pie spin: submitters in EUP order; each submitter's limit is
//!    `share * pie - usage` with `share = (1/EUP) / sum(1/EUP)`; a submitter offers its idle
//!    jobs in job-priority order; each job takes the best candidate slot (PRE_JOB_RANK, job
//!    Rank, POST_JOB_RANK, reason, PREEMPTION_RANK), as long as the submitter limit (or, for
//!    the first match of a spin, "anything left") allows; spins repeat while they make progress.
//!
//! Choices where the manual is silent, as HTCondor does them:
//! * fractional slices: a submitter may exceed its slice once per spin if it has matched
//!   nothing yet in that spin (HTCondor's "round up once" rule), so no crumbs are left;
//! * a job larger than the remaining slice is skipped in favour of smaller candidate slots;
//! * startd-rank preemption (HTCondor 23.9.6 negotiateWithGroup / negotiate /
//!   matchmakingAlgorithm): in the first spin with `NEGOTIATOR_CONSIDER_PREEMPTION` a
//!   submitter over its limit keeps negotiating with only_consider_startd_rank, offered only
//!   claimed slots where `MY.Rank > MY.CurrentRank` is true (undefined is not true;
//!   `PreemptingRank` stands in for `CurrentRank`); the first request of an autocluster (a
//!   fresh scan) is never held to the submitter limit for such a slot, but further requests of
//!   the same autocluster are answered from HTCondor's cached MatchList, whose pop holds every
//!   preempting candidate to the submitter limit or, failing that, the unclaimed limit (see
//!   `turn`); priority preemption also needs `MY.Rank >= MY.CurrentRank`;
//! * priority preemption does not itself compare EUPs: `PREEMPTION_REQUIREMENTS` decides
//!   (HTCondor's default is False, so there is none unless configured);
//! * a partitionable slot can be matched several times per cycle: each match carves a
//!   dynamic slot (requests quantized) and the slot stays with what is left.
use super::config::NegotiatorConfig;
use super::figures::Figures;
use super::keys::*;
use super::limits::parse_limits;
use super::outcome::*;
use super::prep::prepare;
use super::scan::*;
use super::state::State;
use super::tables::*;
use super::NegotiationInput;
use crate::accountant::Accountant;
use classad::{ClassAd, Expr, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

/// Runs one negotiation cycle. Pure and deterministic.
pub fn negotiate(
    input: &NegotiationInput,
    acct: &Accountant,
    cfg: &NegotiatorConfig,
    now: i64,
) -> Outcome {
    let mut c = Cycle::new(input, acct, cfg, now);
    c.run();
    c.finish()
}

/// Class-level evaluation of an (autocluster, slot class) pair.
#[derive(Clone, Copy, Debug)]
struct PairEval {
    job_rank: f64,
    pre: f64,
    post: f64,
    /// The slot's Rank of the job when it evaluates to a number (`MY.Rank` in the rank
    /// conditions); `None` when it is undefined or not a number.
    slot_rank: Option<f64>,
    req: (f64, f64, f64),
}

/// Candidate slots of one autocluster with identical sort keys: a whole slot class (idle
/// slots of a class all sort alike) or a single slot (busy slots, carved partitionable slots).
#[derive(Clone, Debug)]
struct Bucket {
    keys: [f64; 5],
    class: usize,
    /// A class of static slots shares the class's member list (it never changes, slots are
    /// only taken), so that listing candidates costs nothing per slot; partitionable classes
    /// and single slots get their own list.
    slots: Rc<Vec<u32>>,
    /// Entries before this index are known to be taken.
    cursor: usize,
}

fn keys_cmp(a: &[f64; 5], b: &[f64; 5]) -> std::cmp::Ordering {
    for i in 0..5 {
        match a[i].partial_cmp(&b[i]).unwrap_or(std::cmp::Ordering::Equal) {
            std::cmp::Ordering::Equal => continue,
            o => return o,
        }
    }
    std::cmp::Ordering::Equal
}

enum TurnResult {
    Done,
    Resume,
}

/// What the cycle remembers only to go faster.
#[derive(Default)]
struct Caches {
    pair_cache: HashMap<(usize, usize), Option<PairEval>, FxBuild>,
    cand_lists: HashMap<usize, Vec<Bucket>, FxBuild>,
    job_views: HashMap<usize, ClassAd, FxBuild>,
    /// Per class of static slots: members before this index are taken.
    class_first: Vec<usize>,
}

struct Cycle<'a> {
    tables: Tables<'a>,
    state: State,
    caches: Caches,
    figures: Figures,
}

impl<'a> Cycle<'a> {
    fn new(
        input: &'a NegotiationInput,
        acct: &'a Accountant,
        cfg: &'a NegotiatorConfig,
        now: i64,
    ) -> Self {
        let (tables, state, figures) = prepare(input, acct, cfg, now);
        Cycle {
            tables,
            state,
            caches: Caches::default(),
            figures,
        }
    }

    /// The job ad as matchmaking sees it for submitter `s`: the representative plus the
    /// `Submitter*` ephemeral attributes.
    fn job_view(&mut self, ac: usize, negotiating_group: usize) -> ClassAd {
        if let Some(v) = self.caches.job_views.get(&ac) {
            return v.clone();
        }
        let t = &self.tables;
        let rep = t.acs[ac].rep;
        let sub = t.acs[ac].submitter;
        let s = &t.subs[sub];
        let usage = self.state.subs[sub].usage;
        let mut ad = t.input.jobs[rep].clone();
        ad.insert_value("SubmitterUserPrio", Value::Real(s.eup));
        ad.insert_value("SubmitterUserResourcesInUse", Value::Real(usage));
        let g = &self.state.groups.nodes[s.group];
        if s.group != 0 {
            ad.insert_value("SubmitterGroup", Value::str(&g.name));
            ad.insert_value("SubmitterGroupQuota", Value::Real(g.quota));
            ad.insert_value("SubmitterGroupResourcesInUse", Value::Real(g.usage));
        }
        let ng = &self.state.groups.nodes[negotiating_group];
        ad.insert_value("SubmitterNegotiatingGroup", Value::str(&ng.name));
        ad.insert_value(
            "SubmitterAutoregroup",
            Value::Bool(self.state.autoregroup_round),
        );
        self.caches.job_views.insert(ac, ad.clone());
        ad
    }

    /// Enters or leaves the autoregroup round: job views (and what was evaluated on them)
    /// change with `SubmitterAutoregroup` and `SubmitterNegotiatingGroup`.
    ///
    /// In that round the real HTCondor 23.9.6 does not charge a regrouped submitter's pie
    /// slice with what it matched earlier in the cycle under its own group
    /// (tests/reference/negotiator/autoregroup.sh: quota 5 of 20 slots, the regrouped user
    /// ends with 18 next to a `<none>` user's 2), so that usage is set aside for the round.
    fn set_autoregroup_round(&mut self, on: bool) {
        self.state.autoregroup_round = on;
        let regrouped: Vec<usize> = self
            .state
            .groups
            .nodes
            .iter()
            .skip(1)
            .filter(|n| n.autoregroup)
            .flat_map(|n| n.submitters.iter().copied())
            .collect();
        for s in regrouped {
            let before = self.tables.subs[s].usage_before;
            let sb = &mut self.state.subs[s];
            sb.uncounted = if on { sb.usage - before } else { 0.0 };
        }
        self.caches.job_views.clear();
        self.caches.pair_cache.clear();
        self.caches.cand_lists.clear();
    }

    fn request(&self, job: &ClassAd, slot: &ClassAd) -> (f64, f64, f64) {
        let cfg = self.tables.cfg;
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

    fn eval_pair(&self, job: &ClassAd, si: usize) -> Option<PairEval> {
        let cfg = self.tables.cfg;
        let pslot = self.tables.slots[si].pslot;
        let slot = &self.state.slots[si].ad;
        if !classad::symmetric_match(job, slot) {
            return None;
        }
        let req = self.request(job, slot);
        if pslot {
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

    fn pair(&mut self, ac: usize, job: &ClassAd, si: usize) -> Option<PairEval> {
        let key = (ac, self.state.slots[si].class);
        if let Some(v) = self.caches.pair_cache.get(&key) {
            return *v;
        }
        let v = self.eval_pair(job, si);
        self.caches.pair_cache.insert(key, v);
        v
    }

    /// HTCondor's rank conditions on a claimed slot, evaluated with the slot as MY and the
    /// job as TARGET: `MY.Rank > MY.CurrentRank` (rankCondStd: the startd strictly prefers the
    /// job, "rank" preemption) or, with `or_equal`, `MY.Rank >= MY.CurrentRank`
    /// (rankCondPrioPreempt, required of priority preemption). Only true counts: an undefined
    /// Rank or CurrentRank makes both false. Numbers compare directly; anything else is
    /// evaluated as the expression itself.
    fn rank_cond(&self, job: &ClassAd, si: usize, pe: &PairEval, or_equal: bool) -> bool {
        match (pe.slot_rank, self.tables.slots[si].current_rank) {
            (Some(r), Some(c)) => {
                if or_equal {
                    r >= c
                } else {
                    r > c
                }
            }
            _ => {
                let e = if or_equal {
                    &self.tables.rank_cond_ge
                } else {
                    &self.tables.rank_cond_gt
                };
                self.state.slots[si]
                    .ad
                    .eval_expr_with(e, Some(job))
                    .is_true()
            }
        }
    }

    /// Reason and PREEMPTION_RANK for a matching slot, or None if it may not be taken.
    fn preempt_state(
        &self,
        job: &ClassAd,
        sub: usize,
        si: usize,
        pe: &PairEval,
    ) -> Option<(MatchReason, f64)> {
        let cfg = self.tables.cfg;
        let ad = &self.state.slots[si].ad;
        let Some(r) = self.tables.slots[si].remote else {
            return Some((MatchReason::NoPreemption, -(f32::MAX as f64)));
        };
        let reason = if self.rank_cond(job, si, pe, false) {
            MatchReason::Rank
        } else if r != sub {
            if let Some(pr) = &cfg.preemption_requirements {
                if !ad.eval_expr_with(pr, Some(job)).is_true() {
                    return None;
                }
            }
            if !self.rank_cond(job, si, pe, true) {
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

    fn build_candidates(&mut self, ac: usize, job: &ClassAd, sub: usize) -> Vec<Bucket> {
        let mut out = Vec::new();
        let n_classes = self.state.class_members.len();
        if self.caches.class_first.len() < n_classes {
            self.caches.class_first.resize(n_classes, 0);
        }
        for class in 0..n_classes {
            let list = &self.state.class_members[class];
            let Some(&first) = list.first() else {
                continue;
            };
            let (members, cursor) = if self.tables.slots[first as usize].pslot {
                let own: Vec<u32> = list
                    .iter()
                    .copied()
                    .filter(|&x| !self.state.slots[x as usize].taken)
                    .collect();
                (Rc::new(own), 0)
            } else {
                let mut c = self.caches.class_first[class];
                while c < list.len() && self.state.slots[list[c] as usize].taken {
                    c += 1;
                }
                self.caches.class_first[class] = c;
                (Rc::clone(list), c)
            };
            let Some(&rep) = members.get(cursor) else {
                continue;
            };
            if let Some(pe) = self.pair(ac, job, rep as usize) {
                let keys = [
                    pe.pre,
                    pe.job_rank,
                    pe.post,
                    MatchReason::NoPreemption as u8 as f64,
                    -(f32::MAX as f64),
                ];
                out.push(Bucket {
                    keys,
                    class,
                    slots: members,
                    cursor,
                });
            }
        }
        for i in 0..self.tables.busy.len() {
            let si = self.tables.busy[i] as usize;
            if self.state.slots[si].taken {
                continue;
            }
            if let Some(b) = self.candidate(ac, job, sub, si) {
                out.push(b);
            }
        }
        // Best keys first; equal keys in input order of their first slot (HTCondor keeps the
        // first best slot it sees in collector order).
        out.sort_by(|a, b| {
            keys_cmp(&b.keys, &a.keys).then(a.slots[a.cursor].cmp(&b.slots[b.cursor]))
        });
        out
    }

    fn candidate(&mut self, ac: usize, job: &ClassAd, sub: usize, si: usize) -> Option<Bucket> {
        let pe = self.pair(ac, job, si)?;
        let (reason, prank) = self.preempt_state(job, sub, si, &pe)?;
        Some(Bucket {
            keys: [pe.pre, pe.job_rank, pe.post, reason as u8 as f64, prank],
            class: self.state.slots[si].class,
            slots: Rc::new(vec![si as u32]),
            cursor: 0,
        })
    }

    /// Weight a match with slot `si` would cost (carved size for a partitionable slot).
    fn match_cost(&self, si: usize, req: (f64, f64, f64)) -> f64 {
        let s = &self.tables.slots[si];
        if !s.pslot {
            return s.weight;
        }
        if !self.tables.cfg.use_slot_weights {
            return 1.0;
        }
        let ad = &self.state.slots[si].ad;
        match ad.lookup("SlotWeight") {
            Some(e) => {
                let mut d = ad.clone();
                d.insert_value("Cpus", Value::Real(req.0));
                d.insert_value("Memory", Value::Real(req.1));
                d.insert_value("Disk", Value::Real(req.2));
                d.eval_expr(&e.clone()).as_number().unwrap_or(req.0)
            }
            None => req.0,
        }
    }

    /// One submitter's turn in a spin (HTCondor's `negotiate` with one schedd).
    #[allow(clippy::too_many_arguments)]
    fn turn(
        &mut self,
        sub: usize,
        neg_group: usize,
        limit: f64,
        limit_unclaimed: f64,
        ceiling_left: f64,
        ignore_limit: bool,
        pie_left: &mut f64,
    ) -> TurnResult {
        let cfg = self.tables.cfg;
        let mut used = 0.0;
        let mut used_unclaimed = 0.0;
        let mut failed_acs: HashSet<usize> = HashSet::new();
        let mut failed_clusters: HashSet<i64> = HashSet::new();
        let mut limited = false;
        let mut only_rank = false;
        // HTCondor's MatchList cache: the autocluster (and only-rank flag) of the previous
        // request that reached matchmaking in this turn. See `cached` below.
        let mut match_list: Option<(usize, bool)> = None;
        let job_ids = self.tables.subs[sub].jobs.clone();
        if self.tables.volatile {
            self.caches.pair_cache.clear();
            self.caches.cand_lists.clear();
            self.caches.job_views.clear();
        }
        for k in job_ids {
            if self.state.job_done[k] {
                continue;
            }
            // HTCondor 23.9.6 negotiate(): over the submitter limit, the first spin with
            // NEGOTIATOR_CONSIDER_PREEMPTION (negotiateWithGroup's ignore_submitter_limit)
            // keeps going with only_consider_startd_rank; later spins stop. limitUsed only
            // grows, so once set the flag stays for the rest of the turn.
            if used >= limit {
                if ignore_limit {
                    only_rank = true;
                } else {
                    self.figures.subs[sub].limited_by = LimitedBy::Share;
                    return TurnResult::Resume;
                }
            }
            if used >= ceiling_left {
                self.figures.subs[sub].limited_by = LimitedBy::Ceiling;
                return TurnResult::Resume;
            }
            let (ac, cluster) = (self.tables.jobs[k].ac, self.tables.jobs[k].cluster);
            if failed_acs.contains(&ac) {
                continue;
            }
            if !cfg.negotiate_all_jobs_in_cluster && failed_clusters.contains(&cluster) {
                continue;
            }
            self.figures.jobs_considered += 1;
            let fixed_limits = match &self.tables.jobs[k].limits {
                JobLimits::Invalid(e) => {
                    self.reject(k, e.clone());
                    failed_acs.insert(ac);
                    continue;
                }
                JobLimits::Fixed(v) => {
                    if let Some(n) = self.state.limit_usage.rejects(v, cfg) {
                        self.reject(k, format!("concurrency limit {n} reached"));
                        self.figures.subs[sub].limits_rejected = Some(n);
                        failed_acs.insert(ac);
                        continue;
                    }
                    Some(v.clone())
                }
                _ => None,
            };
            let job = self.job_view(ac, neg_group);
            // matchmakingAlgorithm answers a request of the same autocluster (same submitter,
            // same only_for_startdrank) from the sorted MatchList it built for the previous
            // one, and that cached path checks the submitter limit differently: any
            // preempting candidate (rank included) needs SubmitterLimitPermits on
            // (limitUsed, submitterLimit) or, failing that, on the unclaimed pair. The first
            // request of an autocluster (a fresh scan) never limits rank preemption.
            let cached = match_list == Some((ac, only_rank));
            match_list = Some((ac, only_rank));
            if !self.caches.cand_lists.contains_key(&ac) {
                let l = self.build_candidates(ac, &job, sub);
                self.caches.cand_lists.insert(ac, l);
            }
            // Walk the candidate buckets, best first.
            let mut chosen: Option<(usize, MatchReason, f64, (f64, f64, f64), Vec<(String, f64)>)> =
                None;
            let mut rej_limit = false;
            let mut rej_conc: Option<String> = None;
            let mut list = self.caches.cand_lists.remove(&ac).unwrap_or_default();
            let mut bi = 0;
            'buckets: while bi < list.len() {
                let reason = match list[bi].keys[3] as u8 {
                    2 => MatchReason::NoPreemption,
                    1 => MatchReason::Rank,
                    _ => MatchReason::Priority,
                };
                // only_for_startdrank (matchmakingAlgorithm): an unclaimed slot is skipped, a
                // claimed one only counts if rankCondStd holds (reason "rank"), and no
                // priority preemption is considered.
                if only_rank && reason != MatchReason::Rank {
                    bi += 1;
                    continue;
                }
                let mut idx = list[bi].cursor;
                while idx < list[bi].slots.len() {
                    let si = list[bi].slots[idx] as usize;
                    if self.state.slots[si].taken {
                        if idx == list[bi].cursor {
                            list[bi].cursor += 1;
                        }
                        idx += 1;
                        continue;
                    }
                    if self.state.slots[si].class != list[bi].class {
                        // A partitionable slot was carved since the list was built: take it
                        // out and put it back where its new keys sort.
                        Rc::make_mut(&mut list[bi].slots).remove(idx);
                        if let Some(fresh) = self.candidate(ac, &job, sub, si) {
                            let at = list[bi + 1..]
                                .iter()
                                .position(|x| {
                                    keys_cmp(&x.keys, &fresh.keys) == std::cmp::Ordering::Less
                                })
                                .map(|p| p + bi + 1)
                                .unwrap_or(list.len());
                            list.insert(at, fresh);
                        }
                        continue;
                    }
                    let Some(pe) = self.pair(ac, &job, si) else {
                        idx += 1;
                        continue;
                    };
                    let cost = self.match_cost(si, pe.req);
                    let permits =
                        |u: f64, allowed: f64| u + cost <= allowed || (u <= 0.0 && allowed > 0.0);
                    let ok = match reason {
                        MatchReason::NoPreemption => permits(used_unclaimed, limit_unclaimed),
                        MatchReason::Priority if !cached => permits(used, limit),
                        MatchReason::Rank if !cached => true,
                        MatchReason::Priority | MatchReason::Rank => {
                            permits(used, limit) || permits(used_unclaimed, limit_unclaimed)
                        }
                    };
                    if !ok {
                        rej_limit = true;
                        // Every slot of this bucket costs the same unless partitionable.
                        if self.tables.slots[si].pslot {
                            idx += 1;
                            continue;
                        }
                        break;
                    }
                    let limits = match &self.tables.jobs[k].limits {
                        JobLimits::Expr(e) => {
                            match job.eval_expr_with(e, Some(&self.state.slots[si].ad)) {
                                Value::Str(s) => match parse_limits(&s) {
                                    Ok(v) => v,
                                    Err(_) => {
                                        idx += 1;
                                        continue;
                                    }
                                },
                                _ => Vec::new(),
                            }
                        }
                        _ => fixed_limits.clone().unwrap_or_default(),
                    };
                    if matches!(self.tables.jobs[k].limits, JobLimits::Expr(_)) {
                        if let Some(n) = self.state.limit_usage.rejects(&limits, cfg) {
                            rej_conc = Some(n);
                            idx += 1;
                            continue;
                        }
                    }
                    chosen = Some((si, reason, cost, pe.req, limits));
                    break 'buckets;
                }
                bi += 1;
            }
            self.caches.cand_lists.insert(ac, list);
            let Some((si, reason, cost, req, limits)) = chosen else {
                let why = if rej_limit {
                    "submitter limit exceeded".to_string()
                } else if let Some(n) = &rej_conc {
                    format!("concurrency limit {n} reached")
                } else {
                    "no match found".to_string()
                };
                self.reject(k, why);
                if rej_limit {
                    limited = true;
                }
                if let Some(n) = rej_conc {
                    self.figures.subs[sub].limits_rejected = Some(n);
                }
                failed_acs.insert(ac);
                failed_clusters.insert(cluster);
                continue;
            };
            self.make_match(k, sub, neg_group, si, reason, cost, req, limits);
            used += cost;
            if reason == MatchReason::NoPreemption {
                used_unclaimed += cost;
            }
            *pie_left -= cost;
        }
        if limited || used >= limit {
            self.figures.subs[sub].limited_by = LimitedBy::Share;
            TurnResult::Resume
        } else {
            TurnResult::Done
        }
    }

    fn reject(&mut self, k: usize, why: String) {
        let j = &self.tables.jobs[k];
        self.figures.rejections_count += 1;
        self.figures.rejections.insert((j.cluster, j.proc), why);
    }

    #[allow(clippy::too_many_arguments)]
    fn make_match(
        &mut self,
        k: usize,
        sub: usize,
        neg_group: usize,
        si: usize,
        reason: MatchReason,
        cost: f64,
        req: (f64, f64, f64),
        limits: Vec<(String, f64)>,
    ) {
        let t = &self.tables;
        let st = &mut self.state;
        let fig = &mut self.figures;
        let job = &t.jobs[k];
        st.job_done[k] = true;
        let jobid = format!("{}.{}", job.cluster, job.proc);
        fig.rejections.remove(&(job.cluster, job.proc));
        let mut preempts = None;
        let carved;
        let info = &t.slots[si];
        if info.pslot {
            let s = &mut st.slots[si];
            let left =
                |n: &str, used: f64, ad: &ClassAd| (eval_num(ad, n).unwrap_or(0.0) - used).max(0.0);
            let (c, m, d) = (
                left("Cpus", req.0, &s.ad),
                left("Memory", req.1, &s.ad),
                left("Disk", req.2, &s.ad),
            );
            s.ad.insert_value("Cpus", num_value(c));
            s.ad.insert_value("Memory", num_value(m));
            s.ad.insert_value("Disk", num_value(d));
            carved = Some(req);
            let old = s.class;
            let class = st.classes.intern(&s.ad, &t.names, 1);
            s.class = class;
            if class != old {
                Rc::make_mut(&mut st.class_members[old]).retain(|&x| x as usize != si);
                if st.class_members.len() <= class {
                    st.class_members.resize(class + 1, Rc::default());
                }
                Rc::make_mut(&mut st.class_members[class]).push(si as u32);
            }
            if c <= 0.0 {
                st.slots[si].taken = true;
            }
        } else {
            carved = None;
            st.slots[si].taken = true;
            if let Some(r) = info.remote {
                preempts = Some(t.subs[r].name.clone());
                let w = info.weight;
                st.subs[r].usage = (st.subs[r].usage - w).max(0.0);
                let g = t.subs[r].group;
                st.groups.nodes[g].usage = (st.groups.nodes[g].usage - w).max(0.0);
                fig.subs[r].preempted += 1;
                st.limit_usage.remove(&info.running_limits);
            }
        }
        st.limit_usage.add(&limits);
        st.subs[sub].usage += cost;
        let f = &mut fig.subs[sub];
        f.matched += 1;
        f.matched_weight += cost;
        let g = t.subs[sub].group;
        st.groups.nodes[g].usage += cost;
        fig.matches.push(Match {
            job: jobid,
            job_index: job.index,
            autocluster: job.ac,
            submitter: t.subs[sub].name.clone(),
            negotiating_group: st.groups.nodes[neg_group].name.clone(),
            slot: info.name.clone(),
            slot_index: info.input,
            reason,
            preempts,
            weight: cost,
            carved,
        });
        if t.volatile {
            self.caches.job_views.clear();
        }
    }

    /// HTCondor's `negotiateWithGroup`: pie spins over `subs`, limited to `group_quota`.
    fn negotiate_with_group(
        &mut self,
        floor_round: bool,
        mut subs: Vec<usize>,
        group_quota: f64,
        group: Option<usize>,
    ) {
        let cfg = self.tables.cfg;
        self.figures.pies += 1;
        let neg_group = group.unwrap_or(0);
        let mut spin = 0;
        // Sort once, by EUP then starvation, then name for determinism.
        loop {
            spin += 1;
            self.figures.pie_spins += 1;
            let ignore_limit = spin == 1 && cfg.consider_preemption;
            let group_usage =
                |c: &Self| group.map(|g| c.state.groups.nodes[g].usage).unwrap_or(0.0);
            if !ignore_limit && group.is_some() && group_usage(self) >= group_quota {
                break;
            }
            if !cfg.consider_preemption {
                subs.retain(|&s| self.state.has_idle(&self.tables, s));
            }
            if subs.is_empty() {
                break;
            }
            // Normalization over distinct submitters.
            let max_prio = subs
                .iter()
                .map(|&s| self.tables.subs[s].eup)
                .fold(f64::MIN_POSITIVE, f64::max);
            let normal: f64 = subs
                .iter()
                .map(|&s| max_prio / self.tables.subs[s].eup)
                .sum();
            let slot_weight_total = self.tables.total_weight.min(group_quota);
            let gu = group_usage(self);
            let limits_for = |c: &Self, s: usize| -> (f64, f64, f64) {
                let sb = &c.tables.subs[s];
                let u = &c.state.subs[s];
                let share = max_prio / (sb.eup * normal);
                let mut limit = (share * slot_weight_total - (u.usage - u.uncounted)).max(0.0);
                let mut unclaimed = limit;
                if group.is_some() {
                    let max_allowed = (group_quota - gu).max(0.0);
                    unclaimed = unclaimed.min(max_allowed);
                }
                if !cfg.consider_preemption {
                    limit = unclaimed;
                }
                if floor_round {
                    limit = limit.min(sb.floor);
                }
                (limit, unclaimed, share)
            };
            let mut pie_left = 0.0;
            let mut starvation: HashMap<usize, f64> = HashMap::new();
            for &s in &subs {
                let (l, _, _) = limits_for(self, s);
                let u = self.state.subs[s].usage;
                starvation.insert(s, if u + l > 0.0 { u / (u + l) } else { f64::MAX });
                pie_left += l;
            }
            if !cfg.consider_preemption && pie_left <= 0.0 {
                break;
            }
            if spin == 1 {
                subs.sort_by(|&a, &b| {
                    let (x, y) = (&self.tables.subs[a], &self.tables.subs[b]);
                    x.eup
                        .partial_cmp(&y.eup)
                        .unwrap_or(std::cmp::Ordering::Equal)
                        .then(
                            starvation[&a]
                                .partial_cmp(&starvation[&b])
                                .unwrap_or(std::cmp::Ordering::Equal),
                        )
                        .then(x.name.cmp(&y.name))
                });
            }
            let pie_left_orig = pie_left;
            let count_orig = subs.len();
            let mut i = 0;
            while i < subs.len() {
                let s = subs[i];
                if !ignore_limit && group.is_some() && group_usage(self) >= group_quota {
                    break;
                }
                let (mut limit, unclaimed, share) = limits_for(self, s);
                if spin == 1 && self.figures.subs[s].pie_slice.is_none() && !floor_round {
                    self.figures.subs[s].pie_slice = Some(share * slot_weight_total);
                }
                if limit > pie_left {
                    limit = pie_left;
                }
                let ceiling_left = match self.tables.subs[s].ceiling {
                    Some(c) => (c - self.state.subs[s].usage).max(0.0),
                    None => f64::MAX,
                };
                let idle = self.state.has_idle(&self.tables, s);
                let min_weight = self.tables.min_weight;
                let result = if !idle {
                    if self.figures.subs[s].matched > 0 || self.tables.subs[s].idle > 0 {
                        self.figures.subs[s].limited_by = LimitedBy::Nothing;
                    }
                    TurnResult::Done
                } else if (limit < min_weight || pie_left < min_weight) && spin > 1 {
                    TurnResult::Resume
                } else if ceiling_left == 0.0 || ceiling_left < min_weight {
                    self.figures.subs[s].limited_by = LimitedBy::Ceiling;
                    TurnResult::Done
                } else {
                    let r = self.turn(
                        s,
                        neg_group,
                        limit,
                        unclaimed,
                        ceiling_left,
                        ignore_limit,
                        &mut pie_left,
                    );
                    let f = &mut self.figures.subs[s];
                    if matches!(r, TurnResult::Done) && !self.state.has_idle(&self.tables, s) {
                        f.limited_by = LimitedBy::Nothing;
                    } else if matches!(r, TurnResult::Done) && f.limited_by != LimitedBy::Ceiling {
                        f.limited_by = match f.limits_rejected.clone() {
                            Some(n) => LimitedBy::ConcurrencyLimit(n),
                            None => LimitedBy::NoMatch,
                        };
                    }
                    r
                };
                match result {
                    TurnResult::Done => {
                        subs.remove(i);
                    }
                    TurnResult::Resume => i += 1,
                }
            }
            let progress = pie_left < pie_left_orig || subs.len() < count_orig;
            if !progress || subs.is_empty() || !self.state.any_slot_left() || floor_round {
                break;
            }
        }
        if let Some(g) = group {
            if self.state.groups.nodes[g].usage >= group_quota - 1e-9 {
                for &s in &subs {
                    if self.state.has_idle(&self.tables, s)
                        && self.figures.subs[s].limited_by == LimitedBy::Share
                    {
                        self.figures.subs[s].limited_by = LimitedBy::GroupQuota;
                    }
                }
            }
        }
    }

    fn below_floor(&self, subs: &[usize]) -> Vec<usize> {
        subs.iter()
            .copied()
            .filter(|&s| {
                let floor = self.tables.subs[s].floor;
                floor > 0.0 && self.state.subs[s].usage < floor
            })
            .collect()
    }

    fn run(&mut self) {
        let all: Vec<usize> = (0..self.tables.subs.len())
            .filter(|&s| self.tables.subs[s].idle > 0)
            .collect();
        if !self.tables.hgq {
            let floor = self.below_floor(&all);
            if !floor.is_empty() {
                self.negotiate_with_group(true, floor, f64::MAX, None);
            }
            self.negotiate_with_group(false, all, f64::MAX, None);
            return;
        }
        self.run_groups();
    }

    /// Group requested resources (running + idle, weighted).
    fn run_groups(&mut self) {
        let cfg = self.tables.cfg;
        let total = self.tables.total_weight;
        for g in 0..self.state.groups.nodes.len() {
            let mut req = 0.0;
            for &s in &self.state.groups.nodes[g].submitters {
                req += self.state.subs[s].usage;
                req += self.tables.subs[s]
                    .jobs
                    .iter()
                    .map(|&k| self.tables.jobs[k].request_weight)
                    .sum::<f64>();
            }
            // Submitters with running jobs but no idle ones still request what they run.
            for (i, sb) in self.tables.subs.iter().enumerate() {
                if sb.group == g
                    && sb.idle == 0
                    && !self.state.groups.nodes[g].submitters.contains(&i)
                {
                    req += self.state.subs[i].usage;
                }
            }
            self.state.groups.nodes[g].requested = req;
            self.state.groups.nodes[g].requested_at_start = req;
        }
        self.state
            .groups
            .assign_quotas(0, total, cfg.allow_quota_oversubscription);
        let any_accept = cfg.accept_surplus || cfg.groups.iter().any(|g| g.accept_surplus);
        let mut round = 0;
        while round < cfg.max_allocation_rounds {
            round += 1;
            for n in &mut self.state.groups.nodes {
                n.allocated = 0.0;
                n.subtree_requested = 0.0;
            }
            self.state.groups.fairshare(0);
            let mut allocated_total = 0.0;
            for n in &self.state.groups.nodes {
                allocated_total += n.allocated;
            }
            // Sort keys.
            for g in 0..self.state.groups.nodes.len() {
                let n = &self.state.groups.nodes[g];
                let mut ad = ClassAd::new();
                ad.insert_value("AccountingGroup", Value::str(&n.name));
                ad.insert_value("GroupQuota", Value::Real(n.quota));
                ad.insert_value("GroupResourcesAllocated", Value::Real(n.allocated));
                ad.insert_value("GroupResourcesInUse", Value::Real(n.usage));
                let v = match &cfg.group_sort_expr {
                    Some(e) => ad.eval_expr(e).as_number(),
                    None => None,
                };
                // Undefined or non-numeric sorts last (HTCondor uses FLT_MAX).
                self.state.groups.nodes[g].sort_key = v.unwrap_or(f32::MAX as f64);
            }
            let mut order: Vec<usize> = (0..self.state.groups.nodes.len()).collect();
            order.sort_by(|&a, &b| {
                let (x, y) = (&self.state.groups.nodes[a], &self.state.groups.nodes[b]);
                x.sort_key
                    .partial_cmp(&y.sort_key)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(a.cmp(&b))
            });
            for g in order {
                // GROUP_AUTOREGROUP: the root group's round also takes the submitters of every
                // group that has it, negotiating under `<none>` without a group limit of their
                // own (HTCondor 23.9's hgq_prepare_for_matchmaking appends them to the root's
                // submitter list, and its callback passes no group name for the root).
                let nodes = &self.state.groups.nodes;
                let regroup = g == 0 && nodes[0].autoregroup;
                let mut subs = nodes[g].submitters.clone();
                if regroup {
                    for n in nodes.iter().skip(1).filter(|n| n.autoregroup) {
                        subs.extend(n.submitters.iter().copied());
                    }
                }
                let n = &nodes[g];
                if n.allocated <= 0.0 || subs.is_empty() {
                    continue;
                }
                if n.usage >= n.allocated && !cfg.consider_preemption {
                    continue;
                }
                let target = n.allocated.max(n.quota);
                let mut slots = target;
                if !cfg.use_slot_weights {
                    slots = slots.floor();
                }
                if cfg.strict_enforce_quota {
                    slots = self.state.groups.strict_enforce(g, slots);
                }
                let floor = self.below_floor(&subs);
                let group = if regroup { None } else { Some(g) };
                if regroup {
                    self.set_autoregroup_round(true);
                }
                if !floor.is_empty() {
                    self.negotiate_with_group(true, floor, slots, group);
                }
                self.negotiate_with_group(false, subs, slots, group);
                if regroup {
                    self.set_autoregroup_round(false);
                }
            }
            let mut usage_total = 0.0;
            for n in &mut self.state.groups.nodes {
                usage_total += n.usage.min(n.allocated);
                if n.usage < n.allocated {
                    n.requested = n.usage;
                } else {
                    n.requested += n.allocated;
                }
            }
            if usage_total >= allocated_total
                || !any_accept && round >= 1 && !self.state.any_slot_left()
            {
                break;
            }
        }
    }

    fn finish(self) -> Outcome {
        let Cycle {
            tables: t,
            state: st,
            figures: mut fig,
            ..
        } = self;
        let mut out = Outcome::default();
        out.matches = std::mem::take(&mut fig.matches);
        for (s, f) in t.subs.iter().zip(&fig.subs) {
            if s.idle == 0 && f.matched == 0 {
                continue;
            }
            out.submitters.push(SubmitterFigures {
                name: s.name.clone(),
                group: st.groups.nodes[s.group].name.clone(),
                effective_priority: s.eup,
                real_priority: s.rup,
                priority_factor: s.factor,
                usage_before: s.usage_before,
                pie_slice: f.pie_slice.unwrap_or(0.0),
                floor: s.floor,
                ceiling: s.ceiling,
                idle_jobs: s.idle,
                matched: f.matched,
                matched_weight: f.matched_weight,
                preempted: f.preempted,
                limited_by: if s.idle == 0 {
                    LimitedBy::NoIdleJobs
                } else {
                    f.limited_by.clone()
                },
            });
        }
        out.submitters.sort_by(|a, b| {
            a.effective_priority
                .partial_cmp(&b.effective_priority)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.name.cmp(&b.name))
        });
        if t.hgq {
            let by_group = {
                let mut m: BTreeMap<usize, (usize, f64)> = BTreeMap::new();
                for x in &out.matches {
                    if let Some(g) = st.groups.find(&x.negotiating_group) {
                        let e = m.entry(g).or_insert((0, 0.0));
                        e.0 += 1;
                        e.1 += x.weight;
                    }
                }
                m
            };
            for (i, n) in st.groups.nodes.iter().enumerate() {
                let (matched, matched_weight) = by_group.get(&i).copied().unwrap_or((0, 0.0));
                out.groups.push(GroupFigures {
                    name: n.name.clone(),
                    config_quota: n.config_quota,
                    is_static: n.is_static,
                    quota: n.quota,
                    subtree_quota: n.subtree_quota,
                    allocated: n.allocated,
                    surplus: (n.allocated - n.quota).max(0.0),
                    accept_surplus: n.accept_surplus,
                    requested: n.requested_at_start,
                    usage_before: t
                        .subs
                        .iter()
                        .filter(|s| s.group == i)
                        .map(|s| s.usage_before)
                        .sum(),
                    matched,
                    matched_weight,
                    sort_key: n.sort_key,
                });
            }
        }
        out.rejections = std::mem::take(&mut fig.rejections)
            .into_iter()
            .map(|((c, p), why)| (format!("{c}.{p}"), why))
            .collect();
        out.warnings = st.groups.warnings.clone();
        let st_ = &mut out.stats;
        let idle: usize = t.subs.iter().map(|s| s.idle).sum();
        let active = t.subs.iter().filter(|s| s.idle > 0).count();
        let n_matches = out.matches.len() as f64;
        for (name, value) in [
            ("Matches", n_matches),
            ("Rejections", fig.rejections_count as f64),
            ("NumIdleJobs", idle as f64),
            ("NumJobsConsidered", fig.jobs_considered as f64),
            ("ActiveSubmitterCount", active as f64),
            ("TotalSlots", fig.total_slot_ads as f64),
            ("TrimmedSlots", (fig.total_slot_ads - fig.trimmed) as f64),
            ("CandidateSlots", t.slots.len() as f64),
            ("SlotShareIter", fig.pie_spins as f64),
            ("PieSpins", fig.pie_spins as f64),
            ("Pies", fig.pies as f64),
            ("NumSchedulers", active as f64),
            ("Time", t.now as f64),
            ("End", t.now as f64),
            (
                "SubmittersShareLimit",
                fig.subs
                    .iter()
                    .filter(|f| f.limited_by == LimitedBy::Share)
                    .count() as f64,
            ),
            ("Autoclusters", t.acs.len() as f64),
            ("SlotClasses", st.classes.count as f64),
            ("MatchRate", n_matches),
        ] {
            st_.insert(format!("LastNegotiationCycle{name}0"), value);
        }
        out
    }
}

fn num_value(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9e15 {
        Value::Int(v as i64)
    } else {
        Value::Real(v)
    }
}

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
use super::candidates::Caches;
use super::config::NegotiatorConfig;
use super::figures::Figures;
use super::outcome::*;
use super::prep::prepare;
use super::state::State;
use super::tables::*;
use super::turn::{TurnLimits, TurnResult};
use super::NegotiationInput;
use crate::accountant::Accountant;
use classad::{ClassAd, Value};
use std::collections::{BTreeMap, HashMap};

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

pub(super) struct Cycle<'a> {
    pub tables: Tables<'a>,
    pub state: State,
    pub caches: Caches,
    pub figures: Figures,
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
        self.caches.clear();
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
                    let lim = TurnLimits {
                        limit,
                        limit_unclaimed: unclaimed,
                        ceiling_left,
                        ignore_limit,
                    };
                    let r = self.turn(s, neg_group, lim, &mut pie_left);
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

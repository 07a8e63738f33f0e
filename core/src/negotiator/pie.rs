//! The pie: who negotiates, in what order and for how much. Floors, pie spins, submitter
//! limits, ceilings and, with hierarchical group quotas, the allocation rounds that give each
//! group its pie.
//!
//! Follows HTCondor 23.9.6 (matchmaker.cpp, GroupEntry.cpp):
//! * negotiateWithGroup ([`Cycle::negotiate_with_group`]): spins of the pie over a list of
//!   submitters while a spin makes progress (pie handed out or a submitter done), slots are
//!   left and it is not a floor round; the first spin sorts the submitters by effective
//!   priority, then starvation (usage over usage plus limit), then name; with a group, a spin
//!   stops once the group's usage reaches its quota (except the first spin with preemption);
//! * calculateNormalizationFactor and calculateSubmitterLimit ([`Spin`]): a submitter's share
//!   is `(1/EUP) / sum(1/EUP)` of the pie (the pool's SlotWeight, no more than the group's
//!   quota), its limit that share less its usage, its unclaimed limit also capped by what the
//!   group's quota leaves; without preemption both are the unclaimed one, in a floor round no
//!   more than the floor; calculatePieLeft sums the limits and the starvation ratios from
//!   them without the floor cap, even in a floor round (it passes `isFloorRound = false`;
//!   tests/reference/negotiator/floor_pie.sh);
//! * in a spin, each submitter with idle jobs gets a turn ([`super::turn`]) unless its limit
//!   or the pie left is below the smallest slot weight after the first spin ("resume"), or its
//!   ceiling leaves less than that ("done"); the ceiling and the usage it is charged with are
//!   whole numbers there (tests/reference/negotiator/ceiling_left.sh);
//! * findBelowFloorSubmitters ([`Cycle::below_floor`]): a floor round first serves the
//!   submitters below their floor, each up to it;
//! * hgq_prepare_for_matchmaking and hgq_negotiate_with_all_groups
//!   ([`Cycle::negotiate_groups`]): each group's demand (usage plus idle requests), quotas down
//!   the tree, then up to `GROUP_QUOTA_MAX_ALLOCATION_ROUNDS` rounds of fair-share allocation
//!   with surplus ([`super::groups`]), negotiating group by group in `GROUP_SORT_EXPR` order
//!   (a floor round, then the pie) for its allocation (capped by
//!   `NEGOTIATOR_STRICT_ENFORCE_QUOTA`) in whole slots, as its callback takes the limit as an
//!   `int`; a round that leaves allocations unused lets the next one hand them to others;
//! * `GROUP_AUTOREGROUP`: the root's round also takes the submitters of every group that has
//!   it, without a group limit of their own ([`Cycle::set_autoregroup_round`]); in every
//!   allocation round the root's quota and allocation are the whole pool, and it negotiates
//!   last whatever `GROUP_SORT_EXPR` says (group_order;
//!   tests/reference/negotiator/autoregroup_pie.sh).
use super::cycle::Cycle;
use super::outcome::LimitedBy;
use super::state::State;
use super::tables::Tables;
use super::turn::{TurnLimits, TurnResult};
use std::collections::HashMap;

/// One spin's division of the pie (calculateNormalizationFactor, calculateSubmitterLimit).
struct Spin {
    /// The largest EUP among the spin's submitters (at least `f64::MIN_POSITIVE`).
    max_prio: f64,
    /// `sum(max_prio / EUP)`.
    normal: f64,
    /// The pie: the pool's SlotWeight, no more than the group's quota.
    slot_weight_total: f64,
    /// What the group's quota leaves at the spin's start (negotiating in a group).
    group_left: Option<f64>,
    consider_preemption: bool,
}

/// A submitter's limits in a spin.
struct SubmitterLimit {
    limit: f64,
    unclaimed: f64,
    share: f64,
}

impl Spin {
    /// calculateSubmitterLimit for submitter `s`, held to its floor in a floor round.
    fn limit(&self, t: &Tables, st: &State, s: usize, floor_round: bool) -> SubmitterLimit {
        let sb = &t.subs[s];
        let u = &st.subs[s];
        let share = self.max_prio / (sb.eup * self.normal);
        let mut limit = (share * self.slot_weight_total - u.usage).max(0.0);
        let mut unclaimed = limit;
        if let Some(left) = self.group_left {
            unclaimed = unclaimed.min(left);
        }
        if !self.consider_preemption {
            limit = unclaimed;
        }
        if floor_round {
            limit = limit.min(sb.floor);
        }
        SubmitterLimit {
            limit,
            unclaimed,
            share,
        }
    }
}

/// A group's limit as hgq_negotiate_with_all_groups hands it to the negotiation: its callback
/// takes the limit as an `int`, so the fraction is dropped (toward zero), with or without slot
/// weights, and a limit that the surplus arithmetic left at 0.9999999 is 0
/// (tests/reference/negotiator/quota_scale_down.sh).
fn whole_slots(slots: f64) -> f64 {
    slots.clamp(0.0, i32::MAX as f64).trunc()
}

/// What the group's quota leaves for a submitter (calculateSubmitterLimit's `maxAllowed`):
/// quota and usage arrive there as `float`s and are subtracted as `float`s.
fn group_left(group_quota: f64, usage: f64) -> f64 {
    ((group_quota as f32) - (usage as f32)).max(0.0) as f64
}

/// The usage of `group` (0 when negotiating outside groups).
fn group_usage(st: &State, group: Option<usize>) -> f64 {
    group.map(|g| st.groups.nodes[g].usage).unwrap_or(0.0)
}

impl Cycle<'_> {
    /// HTCondor's negotiateWithGroup: pie spins over `subs`, limited to `group_quota`.
    pub(super) fn negotiate_with_group(
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
        loop {
            spin += 1;
            self.figures.pie_spins += 1;
            let ignore_limit = spin == 1 && cfg.consider_preemption;
            if !ignore_limit && group.is_some() && group_usage(&self.state, group) >= group_quota {
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
            let pie = Spin {
                max_prio,
                normal,
                slot_weight_total: self.tables.total_weight.min(group_quota),
                group_left: group.map(|_| group_left(group_quota, group_usage(&self.state, group))),
                consider_preemption: cfg.consider_preemption,
            };
            let mut pie_left = 0.0;
            let mut starvation: HashMap<usize, f64> = HashMap::new();
            for &s in &subs {
                // calculatePieLeft: never the floor round's limits.
                let l = pie.limit(&self.tables, &self.state, s, false).limit;
                let u = self.state.subs[s].usage;
                starvation.insert(s, if u + l > 0.0 { u / (u + l) } else { f64::MAX });
                pie_left += l;
            }
            if !cfg.consider_preemption && pie_left <= 0.0 {
                break;
            }
            if spin == 1 {
                // Once, by EUP then starvation, then name for determinism.
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
                if !ignore_limit
                    && group.is_some()
                    && group_usage(&self.state, group) >= group_quota
                {
                    break;
                }
                let SubmitterLimit {
                    mut limit,
                    unclaimed,
                    share,
                } = pie.limit(&self.tables, &self.state, s, floor_round);
                if spin == 1 && self.figures.subs[s].pie_slice.is_none() && !floor_round {
                    self.figures.subs[s].pie_slice = Some(share * pie.slot_weight_total);
                }
                if limit > pie_left {
                    limit = pie_left;
                }
                // The ceiling and the usage charged against it are ints there
                // (`submitterCeiling -= (int) usage`).
                let ceiling_left = match self.tables.subs[s].ceiling {
                    Some(c) => (c.trunc() - self.state.subs[s].usage.trunc()).max(0.0),
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

    /// The submitters of `subs` below their floor (findBelowFloorSubmitters).
    pub(super) fn below_floor(&self, subs: &[usize]) -> Vec<usize> {
        subs.iter()
            .copied()
            .filter(|&s| {
                let floor = self.tables.subs[s].floor;
                floor > 0.0 && self.state.subs[s].usage < floor
            })
            .collect()
    }

    /// A floor round for the submitters of `subs` below their floor, then the pie.
    fn floor_then_pie(&mut self, subs: Vec<usize>, group_quota: f64, group: Option<usize>) {
        let floor = self.below_floor(&subs);
        if !floor.is_empty() {
            self.negotiate_with_group(true, floor, group_quota, group);
        }
        self.negotiate_with_group(false, subs, group_quota, group);
    }

    /// Without groups: every submitter with idle jobs, under `<none>`, for the whole pool.
    pub(super) fn negotiate_pool(&mut self) {
        let all: Vec<usize> = (0..self.tables.subs.len())
            .filter(|&s| self.tables.subs[s].idle > 0)
            .collect();
        self.floor_then_pie(all, f64::MAX, None);
    }

    /// With groups: demand, quotas, then allocation rounds, each negotiating group by group.
    pub(super) fn negotiate_groups(&mut self) {
        let cfg = self.tables.cfg;
        self.set_group_demand();
        self.state.groups.assign_quotas(
            0,
            self.tables.total_weight,
            cfg.allow_quota_oversubscription,
        );
        let any_accept = cfg.accept_surplus || cfg.groups.iter().any(|g| g.accept_surplus);
        let autoregroup = self.state.groups.nodes[0].autoregroup;
        for _ in 0..cfg.max_allocation_rounds {
            let mut allocated_total = self.state.groups.allocate(!cfg.use_slot_weights);
            if autoregroup {
                // The root negotiates for the whole pool in every round (and keeps that quota
                // for the next round's fair share).
                let root = &mut self.state.groups.nodes[0];
                allocated_total += self.tables.total_weight - root.allocated;
                root.quota = self.tables.total_weight;
                root.allocated = self.tables.total_weight;
            }
            for g in self
                .state
                .groups
                .negotiation_order(cfg.group_sort_expr.as_ref(), autoregroup)
            {
                self.negotiate_group(g);
            }
            let usage_total = self.state.groups.end_round();
            if usage_total >= allocated_total || !any_accept && !self.state.any_slot_left() {
                break;
            }
        }
    }

    /// Each group's demand (hgq_prepare_for_matchmaking's `requested`): the usage of its
    /// submitters plus the requests of their idle jobs (weighted), and the usage of its
    /// submitters that have no idle job.
    fn set_group_demand(&mut self) {
        let (t, st) = (&self.tables, &mut self.state);
        for g in 0..st.groups.nodes.len() {
            let mut req = 0.0;
            for &s in &st.groups.nodes[g].submitters {
                req += st.subs[s].usage;
                req += t.subs[s]
                    .jobs
                    .iter()
                    .map(|&k| t.jobs[k].request_weight)
                    .sum::<f64>();
            }
            // Submitters with running jobs but no idle ones still request what they run.
            for (i, sb) in t.subs.iter().enumerate() {
                if sb.group == g && sb.idle == 0 && !st.groups.nodes[g].submitters.contains(&i) {
                    req += st.subs[i].usage;
                }
            }
            st.groups.nodes[g].requested = req;
            st.groups.nodes[g].requested_at_start = req;
        }
    }

    /// Group `g`'s part of an allocation round (hgq_negotiate_with_all_groups' callback):
    /// a floor round and the pie for its allocation.
    fn negotiate_group(&mut self, g: usize) {
        let cfg = self.tables.cfg;
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
            return;
        }
        if n.usage >= n.allocated && !cfg.consider_preemption {
            return;
        }
        let mut slots = n.allocated.max(n.quota);
        if !cfg.use_slot_weights {
            slots = slots.floor();
        }
        if cfg.strict_enforce_quota {
            slots = self.state.groups.strict_enforce(g, slots);
        }
        let slots = whole_slots(slots);
        if regroup {
            self.set_autoregroup_round(true);
            self.floor_then_pie(subs, slots, None);
            self.set_autoregroup_round(false);
        } else {
            self.floor_then_pie(subs, slots, Some(g));
        }
    }

    /// Enters or leaves the autoregroup round: job views (and what was evaluated on them)
    /// change with `SubmitterAutoregroup` and `SubmitterNegotiatingGroup`.
    fn set_autoregroup_round(&mut self, on: bool) {
        self.state.autoregroup_round = on;
        self.caches.clear();
    }
}

//! What matching changes as the cycle runs: slots taken or carved, jobs matched, usage of
//! submitters and groups, concurrency limits in use.
//!
//! HTCondor keeps this in several places: a matched slot leaves the startd ad list (negotiate()
//! removes the offer, a partitionable slot without a consumption policy included), a slot with
//! a consumption policy stays and its ad shrinks (matchmakingProtocol's cp_deduct_assets), and
//! the accountant's usage of the submitter,
//! its group and the preempted user moves with each match (so that calculateSubmitterLimit,
//! the group quota checks of negotiateWithGroup and the `*ResourcesInUse` attributes see it).
//! Here it is one value, changed only by [`State::take`] (a match) and the autoregroup round's
//! bookkeeping; [`super::tables::Tables`] holds what never changes.
use super::candidates::Choice;
use super::groups::GroupTree;
use super::keys::Interner;
use super::limits::LimitUsage;
use super::matchmaking::deduct;
use super::tables::Tables;
use classad::ClassAd;
use std::rc::Rc;

/// The changing part of the cycle.
pub(super) struct State {
    /// Per slot of [`Tables::slots`].
    pub slots: Vec<SlotState>,
    /// Per job of [`Tables::jobs`]: matched in this cycle.
    pub job_done: Vec<bool>,
    /// Per submitter of [`Tables::subs`].
    pub subs: Vec<SubmitterUse>,
    pub groups: GroupTree,
    /// Slot classes: slots that agree on every significant attribute. A slot with a
    /// consumption policy changes class when it is split, so classes are added as the cycle
    /// runs.
    pub classes: Interner,
    /// Idle (unclaimed or partitionable) slots per class, in input order; busy slots are
    /// listed in [`Tables::busy`].
    pub class_members: Vec<Rc<Vec<u32>>>,
    pub limit_usage: LimitUsage,
    /// Set while the `<none>` round runs with the submitters of `GROUP_AUTOREGROUP` groups
    /// added: their jobs then see `SubmitterAutoregroup = true`.
    pub autoregroup_round: bool,
}

/// What has happened to a slot in this cycle.
#[derive(Clone, Debug)]
pub(super) struct SlotState {
    /// The slot ad as matchmaking sees it: the input ad with the `Remote*` attributes the
    /// negotiator inserts and, for a slot with a consumption policy, what its matches left.
    pub ad: ClassAd,
    /// Its slot class (index into [`State::classes`]).
    pub class: usize,
    /// Matched (a slot with a consumption policy is never taken: it matches while what is
    /// left serves a job).
    pub taken: bool,
}

/// A submitter's usage, as the accountant would count it during the cycle.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SubmitterUse {
    /// Weighted slots in use: claimed at the start, plus matches, minus preempted slots.
    pub usage: f64,
}

impl State {
    /// Does any slot remain to be matched?
    pub fn any_slot_left(&self) -> bool {
        self.slots.iter().any(|s| !s.taken)
    }

    /// Has submitter `sub` an idle job not matched yet?
    pub fn has_idle(&self, t: &Tables, sub: usize) -> bool {
        t.subs[sub].jobs.iter().any(|&k| !self.job_done[k])
    }

    /// Job `k` of submitter `sub` takes the chosen slot. A slot with a consumption policy is
    /// split: the consumption comes off its assets (cp_deduct_assets) and it stays, in the
    /// class it now belongs to, for other requests (HTCondor removes no such offer from the
    /// cycle). Any other slot, partitionable or not, is taken (the negotiator removes the
    /// offer; the schedd may carve more dynamic slots from a partitionable slot's claim); a
    /// preempted user loses its weight of usage (as does its group) and the concurrency limits
    /// its job held. The match's cost counts as the submitter's and its group's usage, its
    /// limits as in use. Returns the preempted user.
    pub fn take(&mut self, t: &Tables, k: usize, sub: usize, choice: &Choice) -> Option<usize> {
        let (si, cost) = (choice.si, choice.cost);
        self.job_done[k] = true;
        let info = &t.slots[si];
        let mut preempted = None;
        if let Some(c) = &choice.consumption {
            let s = &mut self.slots[si];
            deduct(&mut s.ad, &c.assets);
            let old = s.class;
            let class = self.classes.intern(&s.ad, &t.names, 1);
            s.class = class;
            if class != old {
                Rc::make_mut(&mut self.class_members[old]).retain(|&x| x as usize != si);
                if self.class_members.len() <= class {
                    self.class_members.resize(class + 1, Rc::default());
                }
                // Members stay in input order (ties between equal candidates go to the first).
                let members = Rc::make_mut(&mut self.class_members[class]);
                let at = members.partition_point(|&x| (x as usize) < si);
                members.insert(at, si as u32);
            }
        } else {
            self.slots[si].taken = true;
            if let Some(r) = info.remote {
                preempted = Some(r);
                let w = info.weight;
                self.subs[r].usage = (self.subs[r].usage - w).max(0.0);
                let g = t.subs[r].group;
                self.groups.nodes[g].usage = (self.groups.nodes[g].usage - w).max(0.0);
                self.limit_usage.remove(&info.running_limits);
            }
        }
        self.limit_usage.add(&choice.limits);
        self.subs[sub].usage += cost;
        let g = t.subs[sub].group;
        self.groups.nodes[g].usage += cost;
        preempted
    }
}

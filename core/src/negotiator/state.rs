//! What matching changes as the cycle runs: slots taken or carved, jobs matched, usage of
//! submitters and groups, concurrency limits in use.
//!
//! HTCondor keeps this in several places: matched static slots leave the startd ad list
//! (negotiate() erases the offer), a partitionable slot's ad shrinks (matchmakingProtocol and
//! the consumption policy's cp_deduct_assets), and the accountant's usage of the submitter,
//! its group and the preempted user moves with each match (so that calculateSubmitterLimit,
//! the group quota checks of negotiateWithGroup and the `*ResourcesInUse` attributes see it).
//! Here it is one value, changed only by [`State::take`] (a match) and the autoregroup round's
//! bookkeeping; [`super::tables::Tables`] holds what never changes.
use super::groups::GroupTree;
use super::keys::Interner;
use super::limits::LimitUsage;
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
    /// Slot classes: slots that agree on every significant attribute. A partitionable slot
    /// changes class when it is carved, so classes are added as the cycle runs.
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
    /// negotiator inserts and, for a partitionable slot, what is left after carving.
    pub ad: ClassAd,
    /// Its slot class (index into [`State::classes`]).
    pub class: usize,
    /// Matched (a static slot) or used up (a partitionable slot).
    pub taken: bool,
}

/// A submitter's usage, as the accountant would count it during the cycle.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SubmitterUse {
    /// Weighted slots in use: claimed at the start, plus matches, minus preempted slots.
    pub usage: f64,
    /// Usage not counted against the submitter's pie slice in the current round: in the
    /// autoregroup round, what it matched earlier in this cycle under its own group.
    pub uncounted: f64,
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
}

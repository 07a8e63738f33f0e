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
use super::NegotiationInput;
use crate::accountant::Accountant;

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

    /// Phase 4 of negotiationTime: without groups, a floor round and the pie over every
    /// submitter; with groups, the allocation rounds.
    fn run(&mut self) {
        if self.tables.hgq {
            self.negotiate_groups();
        } else {
            self.negotiate_pool();
        }
    }

    /// The outcome: what was matched, the figures and the statistics.
    fn finish(self) -> Outcome {
        self.figures.into_outcome(&self.tables, &self.state)
    }
}

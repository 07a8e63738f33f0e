//! The negotiation cycle: [`negotiate`] and the [`Cycle`] its parts work on.
//!
//! One cycle is HTCondor 23.9.6's Matchmaker::negotiationTime (matchmaker.cpp) without its
//! I/O. Its steps, and where each lives:
//! 1. preparation ([`super::prep`], phases 1 and 2: obtainAdsFromCollector, trimStartdAds,
//!    sumSlotWeights, compute_significant_attrs, addRemoteUserPrios): slots kept, the pie's
//!    size, usage from claimed slots, submitters and their idle jobs, slot classes and
//!    autoclusters;
//! 2. the pie ([`super::pie`], phase 4): without groups a floor round for the submitters below
//!    their floor, then the pie spins (negotiateWithGroup); with groups, quotas, fair share and
//!    surplus ([`super::groups`]), then in each allocation round each group in
//!    `GROUP_SORT_EXPR` order gets its own floor round and pie spins, limited to its
//!    allocation (hgq_negotiate_with_all_groups);
//! 3. a spin gives each submitter, in effective-priority order, a turn ([`super::turn`],
//!    negotiate()) with its limit: `share * pie - usage`, `share = (1/EUP) / sum(1/EUP)`; the
//!    turn offers its idle jobs in job-priority order;
//! 4. each request takes the best candidate slot the limits admit ([`super::candidates`],
//!    matchmakingAlgorithm; sort keys `NEGOTIATOR_PRE_JOB_RANK`, the job's `Rank`,
//!    `NEGOTIATOR_POST_JOB_RANK`, preemption state, `PREEMPTION_RANK`), the pair's match,
//!    ranks and preemption rules being [`super::matchmaking`]'s;
//! 5. the outcome ([`super::figures`], publishNegotiationCycleStats): matches, per-submitter
//!    and per-group figures, `LastNegotiationCycle*` statistics.
//!
//! The cycle's data is split by how it changes, so that each part says what it may touch:
//! * [`Tables`]: what preparation builds and nothing changes (slots as found, jobs,
//!   autoclusters, submitters' priorities, the pie's size);
//! * [`State`]: what matches change (slots taken or carved, usage of submitters and groups,
//!   concurrency limits in use, group allocations);
//! * [`Caches`]: what is remembered only to go faster (pair evaluations per job class and
//!   slot class, candidate lists and orders, job views); dropping them changes nothing but
//!   speed;
//! * [`Figures`]: what is counted for the outcome (matches, rejections, why each submitter
//!   stopped, the statistics' counters).
//!
//! Choices where the manual is silent, as HTCondor does them:
//! * fractional slices: a submitter may exceed its slice once per spin if it has matched
//!   nothing yet in that spin (HTCondor's "round up once" rule in SubmitterLimitPermits), so
//!   no crumbs are left;
//! * a job larger than the remaining slice is skipped in favour of smaller candidate slots;
//! * startd-rank preemption (negotiateWithGroup, negotiate, matchmakingAlgorithm): in the
//!   first spin with `NEGOTIATOR_CONSIDER_PREEMPTION` a submitter over its limit keeps
//!   negotiating with only_consider_startd_rank, offered only claimed slots where
//!   `MY.Rank > MY.CurrentRank` is true (undefined is not true; `PreemptingRank` stands in for
//!   `CurrentRank`); the first request of an autocluster (a fresh scan) is never held to the
//!   submitter limit for such a slot, but further requests of the same autocluster are
//!   answered from HTCondor's cached MatchList, whose pop holds every preempting candidate to
//!   the submitter limit or, failing that, the unclaimed limit (see
//!   [`super::matchmaking::Budget::admits`]); priority preemption also needs
//!   `MY.Rank >= MY.CurrentRank`;
//! * priority preemption does not itself compare EUPs: `PREEMPTION_REQUIREMENTS` decides
//!   (HTCondor's default is False, so there is none unless configured);
//! * a partitionable slot is matched at most once per cycle and costs its whole SlotWeight
//!   (the schedd, not the negotiator, carves further dynamic slots from the claim), unless it
//!   has a consumption policy (`MachineResources` with a `Consumption<Asset>` for each asset):
//!   then each match takes what the job consumes off the slot, costs the SlotWeight that
//!   removes, and the slot stays for other requests ([`super::state::State::take`]); its
//!   split slot goes back into the match list where HTCondor's insert_candidate puts it
//!   ([`super::candidates`]).
use super::candidates::Caches;
use super::config::NegotiatorConfig;
use super::figures::Figures;
use super::outcome::Outcome;
use super::prep::prepare;
use super::state::State;
use super::tables::Tables;
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

/// One cycle's data; the steps are `impl Cycle` blocks in [`super::pie`] and
/// [`super::turn`].
pub(super) struct Cycle<'a> {
    pub tables: Tables<'a>,
    pub state: State,
    pub caches: Caches,
    pub figures: Figures,
}

impl<'a> Cycle<'a> {
    /// Prepares a cycle (see [`super::prep`]).
    pub(super) fn new(
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
    pub(super) fn run(&mut self) {
        if self.tables.hgq {
            self.negotiate_groups();
        } else {
            self.negotiate_pool();
        }
    }

    /// The outcome: what was matched, the figures and the statistics.
    pub(super) fn finish(self) -> Outcome {
        self.figures.into_outcome(&self.tables, &self.state)
    }
}

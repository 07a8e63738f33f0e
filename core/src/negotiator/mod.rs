//! The negotiator: one pure, deterministic negotiation cycle.
//!
//! [`negotiate`] takes the slot ads, the idle job ads, the accountant's ledger, the
//! configuration and the time, and returns an [`Outcome`]: the matches (with the reason
//! and whom they preempt), per-submitter and per-group figures and `LastNegotiationCycle*`
//! statistics. Nothing here reads a clock, a file or a random number: the same input always
//! gives the same outcome, so the Raft leader and `cmctl what-if` agree.
//!
//! The cycle follows HTCondor 23.9.6's matchmaker (matchmaker.cpp, GroupEntry.cpp: read, not
//! copied). Its parts, by concern (`cycle.rs` gives the steps and the choices where the
//! manual is silent; each file says which HTCondor functions it follows):
//!
//! | file | what | HTCondor |
//! |---|---|---|
//! | `cycle.rs` | [`negotiate`], the cycle's data split into tables, state, caches, figures | negotiationTime |
//! | `prep.rs` | preparation: slots kept and weighed, usage, submitters, jobs, classes, consumption policies | obtainAdsFromCollector, trimStartdAds, sumSlotWeights, compute_significant_attrs, addRemoteUserPrios, cp_supports_policy |
//! | `scan.rs`, `keys.rs` | reading each ad once; slot classes and autoclusters | (the schedd's autoclusters) |
//! | `tables.rs` | what preparation builds and nothing changes | |
//! | `state.rs` | what matches change: slots taken or split, usage, limits in use | negotiate()'s removal of offers, cp_deduct_assets, the accountant's usage |
//! | `pie.rs` | pie spins, submitter limits, floors, ceilings, group allocation rounds | negotiateWithGroup, calculateSubmitterLimit, calculatePieLeft, findBelowFloorSubmitters, hgq_negotiate_with_all_groups |
//! | `groups.rs` | the group tree: quotas, fair share, surplus, remainders, strict quotas | GroupEntry.cpp: hgq_construct_tree, hgq_assign_quotas, hgq_fairshare, hgq_allocate_surplus, hgq_recover_remainders, hgq_round_robin, strict_enforce_quota |
//! | `turn.rs` | one submitter's turn: its jobs' requests in order | negotiate (and the schedd's ScheddNegotiate) |
//! | `candidates.rs` | a request's candidate slots, best first, and the choice | matchmakingAlgorithm, MatchListType, returnPslotToMatchList |
//! | `spread.rs` | pair evaluations spread over every core, slot by slot | (matchmakingAlgorithm's scan) |
//! | `matchmaking.rs` | one job and one slot: match, ranks, preemption rules, consumption, cost | IsAMatch, calculateRanks, SubmitterLimitPermits, cp_compute_consumption, cp_sufficient_assets, cp_override_requested, the startd's create_dslot |
//! | `figures.rs` | counters and figures, and the outcome built from them | NegotiationCycleStats, publishNegotiationCycleStats |
//! | `requests.rs` | an access point's idle jobs as resource requests (one ad per group the cycle cannot tell apart, with the jobs' ids) and back | the schedd's resource request list (autocluster.cpp, schedd_negotiate.cpp) |
//! | `config.rs`, `limits.rs`, `outcome.rs` | the knobs, concurrency limits, the outcome's types | |
#![warn(missing_docs)]
mod candidates;
pub mod config;
mod cycle;
mod figures;
mod groups;
#[cfg(test)]
mod job_class_tests;
mod keys;
pub mod limits;
mod matchmaking;
pub mod outcome;
mod pie;
mod prep;
pub mod requests;
mod scan;
mod spread;
mod state;
mod tables;
mod turn;

pub use config::{ConfigError, GroupConfig, GroupQuota, NegotiatorConfig};
pub use cycle::negotiate;
pub use outcome::{GroupFigures, LimitedBy, Match, MatchReason, Outcome, SubmitterFigures};

use classad::ClassAd;

/// What one cycle works on: the slot ads (as `condor_status -long` shows them) and the idle
/// job ads (as `condor_q -long` shows them).
#[derive(Clone, Debug, Default)]
pub struct NegotiationInput {
    /// Slot ads (startd ads), in collector order: ties between equally good slots go to the
    /// first.
    pub slots: Vec<ClassAd>,
    /// Job ads; only idle ones (`JobStatus == 1`) negotiate.
    pub jobs: Vec<ClassAd>,
}

//! What the cycle counts and records as it runs: the matches, the rejected jobs, why each
//! submitter stopped, and the counters behind the `LastNegotiationCycle*` statistics.
//!
//! HTCondor keeps these in NegotiationCycleStats (matches, rejections, pies, pie spins, jobs
//! considered, slot counts) and in the submitter ads' accounting attributes (SubmitterShare,
//! SubmitterLimit); publishNegotiationCycleStats turns them into the negotiator ad's
//! attributes. Nothing here is read back by matchmaking except where a submitter's figures
//! decide what it is reported as limited by.
use super::outcome::{LimitedBy, Match};
use std::collections::BTreeMap;

/// The cycle's figures.
#[derive(Default)]
pub(super) struct Figures {
    pub matches: Vec<Match>,
    /// Jobs not matched, by `(cluster, proc)`, with the last reason (a job matched later in
    /// the cycle is taken out).
    pub rejections: BTreeMap<(i64, i64), String>,
    /// Per submitter of [`super::tables::Tables::subs`].
    pub subs: Vec<Tally>,
    /// Slot ads in the input.
    pub total_slot_ads: usize,
    /// Slot ads dropped by preparation (absent, offline, outside the slot constraint, claimed
    /// and not preemptable).
    pub trimmed: usize,
    /// negotiateWithGroup calls.
    pub pies: u64,
    pub pie_spins: u64,
    /// Requests a turn took to matchmaking (HTCondor's num_jobs_considered).
    pub jobs_considered: u64,
    /// Requests that found no slot, counted each time (a job may be rejected in several
    /// spins).
    pub rejections_count: u64,
}

/// One submitter's figures.
#[derive(Clone, Debug)]
pub(super) struct Tally {
    pub matched: usize,
    pub matched_weight: f64,
    /// Its slots taken by other jobs' preemption in this cycle.
    pub preempted: usize,
    /// Its fair share of the pie (first spin of its first non-floor pie).
    pub pie_slice: Option<f64>,
    pub limited_by: LimitedBy,
    /// The last concurrency limit that turned one of its jobs away.
    pub limits_rejected: Option<String>,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            matched: 0,
            matched_weight: 0.0,
            preempted: 0,
            pie_slice: None,
            limited_by: LimitedBy::NoIdleJobs,
            limits_rejected: None,
        }
    }
}

//! What the cycle counts and records as it runs: the matches, the rejected jobs, why each
//! submitter stopped, and the counters behind the `LastNegotiationCycle*` statistics.
//!
//! HTCondor keeps these in NegotiationCycleStats (matches, rejections, pies, pie spins, jobs
//! considered, slot counts) and in the submitter ads' accounting attributes (SubmitterShare,
//! SubmitterLimit); publishNegotiationCycleStats turns them into the negotiator ad's
//! attributes. Nothing here is read back by matchmaking except where a submitter's figures
//! decide what it is reported as limited by.
use super::candidates::Choice;
use super::outcome::{LimitedBy, Match};
use super::tables::Tables;
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

impl Figures {
    /// Counts a request of job `k` that found no slot, and why.
    pub fn reject(&mut self, t: &Tables, k: usize, why: String) {
        let j = &t.jobs[k];
        self.rejections_count += 1;
        self.rejections.insert((j.cluster, j.proc), why);
    }

    /// Records the match of job `k` of submitter `sub`, negotiating under
    /// `negotiating_group`, with the chosen slot (which preempted submitter `preempted`).
    pub fn record_match(
        &mut self,
        t: &Tables,
        k: usize,
        sub: usize,
        negotiating_group: &str,
        choice: Choice,
        preempted: Option<usize>,
    ) {
        let job = &t.jobs[k];
        let info = &t.slots[choice.si];
        self.rejections.remove(&(job.cluster, job.proc));
        if let Some(r) = preempted {
            self.subs[r].preempted += 1;
        }
        let f = &mut self.subs[sub];
        f.matched += 1;
        f.matched_weight += choice.cost;
        self.matches.push(Match {
            job: format!("{}.{}", job.cluster, job.proc),
            job_index: job.index,
            autocluster: job.ac,
            submitter: t.subs[sub].name.clone(),
            negotiating_group: negotiating_group.to_string(),
            slot: info.name.clone(),
            slot_index: info.input,
            reason: choice.reason,
            preempts: preempted.map(|r| t.subs[r].name.clone()),
            weight: choice.cost,
            carved: info.pslot.then_some(choice.req),
        });
    }
}

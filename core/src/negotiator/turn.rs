//! One submitter's turn in a pie spin: its idle jobs, in negotiation order, each asking for a
//! slot until its limit, its ceiling or its jobs run out.
//!
//! Follows HTCondor 23.9.6's Matchmaker::negotiate (matchmaker.cpp), the conversation with one
//! submitter of a schedd, where each request is a job (the schedd sends one per autocluster
//! member until the negotiator rejects the autocluster):
//! * over the submitter limit, the first spin with `NEGOTIATOR_CONSIDER_PREEMPTION`
//!   (negotiateWithGroup's `ignore_submitter_limit`) keeps going with
//!   `only_consider_startd_rank`; any other spin ends the turn ("resume" in the next spin);
//! * at the ceiling the turn ends;
//! * a request is answered by matchmakingAlgorithm ([`super::candidates`]); a request of the
//!   same autocluster as the previous one is answered from its MatchList, which applies the
//!   submitter limit differently (see [`super::matchmaking::Budget::admits`]);
//! * a rejected request rejects its autocluster for the rest of the turn (the schedd offers its
//!   jobs autocluster by autocluster and skips a rejected one, ScheddNegotiate; not the rest
//!   of the job's cluster, whatever the manual's older text says:
//!   tests/reference/negotiator/cluster_skip.sh); with `NEGOTIATE_ALL_JOBS_IN_CLUSTER` the
//!   schedd gives every job an autocluster of its own, so a rejection takes only that job and
//!   no request is answered from a cached MatchList; without
//!   `NEGOTIATOR_CONSIDER_PREEMPTION` and slot weights, a request the submitter limit turned
//!   away ends the turn ("resume"), the other autoclusters unasked; a job whose
//!   `ConcurrencyLimits` are exhausted or unusable is rejected before matchmaking
//!   (rejectForConcurrencyLimits);
//! * each match costs its weight from the submitter's limits and from the pie; the turn ends
//!   "resume" if a request was turned away by the submitter limit or the limit is used up,
//!   "done" otherwise.
//!
//! A match changes the state ([`super::state::State::take`]) and is recorded in the figures
//! ([`super::figures::Figures::record_match`]).
use super::candidates::{Ask, Choice};
use super::cycle::Cycle;
use super::matchmaking::Budget;
use super::outcome::{LimitedBy, MatchReason};
use super::tables::JobLimits;
use std::collections::HashSet;

/// How a turn ended (negotiate()'s MM_DONE and MM_RESUME).
pub(super) enum TurnResult {
    /// The submitter got what it could: it leaves the pie.
    Done,
    /// Stopped by its limit: it negotiates again in the next spin.
    Resume,
}

/// What negotiateWithGroup grants a submitter for one turn.
#[derive(Clone, Copy, Debug)]
pub(super) struct TurnLimits {
    /// The submitter limit (calculateSubmitterLimit, capped by what is left of the pie).
    pub limit: f64,
    /// The same counting only unclaimed slots (also capped by what is left of the group's
    /// quota).
    pub limit_unclaimed: f64,
    /// What its ceiling leaves (`f64::MAX` without one).
    pub ceiling_left: f64,
    /// Go on past the limit for startd-rank preemption (the first spin with preemption).
    pub ignore_limit: bool,
}

impl Cycle<'_> {
    /// Submitter `sub`'s turn, negotiating under group `neg_group`; each match takes its cost
    /// off `pie_left`.
    pub(super) fn turn(
        &mut self,
        sub: usize,
        neg_group: usize,
        lim: TurnLimits,
        pie_left: &mut f64,
    ) -> TurnResult {
        let cfg = self.tables.cfg;
        let mut used = 0.0;
        let mut used_unclaimed = 0.0;
        // Rejected autoclusters as the schedd sees them (jobs, with NEGOTIATE_ALL_JOBS_IN_CLUSTER).
        let mut failed_acs: HashSet<usize> = HashSet::new();
        let own_ac = cfg.negotiate_all_jobs_in_cluster;
        let mut limited = false;
        let mut only_rank = false;
        // HTCondor's MatchList cache: the autocluster (and only-rank flag) of the previous
        // request that reached matchmaking in this turn. See `cached` below.
        let mut match_list: Option<(usize, bool)> = None;
        let job_ids = self.tables.subs[sub].jobs.clone();
        if self.tables.volatile {
            self.caches.clear();
        }
        for k in job_ids {
            if self.state.job_done[k] {
                continue;
            }
            // HTCondor 23.9.6 negotiate(): over the submitter limit, the first spin with
            // NEGOTIATOR_CONSIDER_PREEMPTION (negotiateWithGroup's ignore_submitter_limit)
            // keeps going with only_consider_startd_rank; later spins stop. limitUsed only
            // grows, so once set the flag stays for the rest of the turn.
            if used >= lim.limit {
                if lim.ignore_limit {
                    only_rank = true;
                } else {
                    self.figures.subs[sub].limited_by = LimitedBy::Share;
                    return TurnResult::Resume;
                }
            }
            if used >= lim.ceiling_left {
                self.figures.subs[sub].limited_by = LimitedBy::Ceiling;
                return TurnResult::Resume;
            }
            let ac = self.tables.jobs[k].ac;
            let schedd_ac = if own_ac { k } else { ac };
            if failed_acs.contains(&schedd_ac) {
                continue;
            }
            self.figures.jobs_considered += 1;
            let refused = match &self.tables.jobs[k].limits {
                JobLimits::Invalid(e) => Some((e.clone(), None)),
                JobLimits::Fixed(v) => self
                    .state
                    .limit_usage
                    .rejects(v, cfg)
                    .map(|n| (format!("concurrency limit {n} reached"), Some(n))),
                JobLimits::None | JobLimits::Expr(_) => None,
            };
            if let Some((why, limit)) = refused {
                self.figures.reject(&self.tables, k, why);
                if limit.is_some() {
                    self.figures.subs[sub].limits_rejected = limit;
                }
                failed_acs.insert(schedd_ac);
                continue;
            }
            let job = self
                .caches
                .job_view(&self.tables, &self.state, ac, neg_group);
            // matchmakingAlgorithm answers a request of the same autocluster (same submitter,
            // same only_for_startdrank) from the sorted MatchList it built for the previous
            // one, and that cached path checks the submitter limit differently: any
            // preempting candidate (rank included) needs SubmitterLimitPermits on
            // (limitUsed, submitterLimit) or, failing that, on the unclaimed pair. The first
            // request of an autocluster (a fresh scan) never limits rank preemption.
            let cached = !own_ac && match_list == Some((ac, only_rank));
            match_list = Some((ac, only_rank));
            let ask = Ask {
                k,
                ac,
                sub,
                job: &job,
                budget: Budget {
                    used,
                    limit: lim.limit,
                    used_unclaimed,
                    limit_unclaimed: lim.limit_unclaimed,
                },
                only_rank,
                cached,
            };
            let choice = match self.caches.pick(&self.tables, &self.state, &ask) {
                Ok(choice) => choice,
                Err(miss) => {
                    let why = if miss.limit {
                        "submitter limit exceeded".to_string()
                    } else if let Some(n) = &miss.concurrency {
                        format!("concurrency limit {n} reached")
                    } else {
                        "no match found".to_string()
                    };
                    self.figures.reject(&self.tables, k, why);
                    if miss.limit {
                        limited = true;
                    }
                    if let Some(n) = miss.concurrency {
                        self.figures.subs[sub].limits_rejected = Some(n);
                    }
                    failed_acs.insert(schedd_ac);
                    // Without preemption and slot weights every slot costs one, so negotiate()
                    // ends the turn at the first request the submitter limit turned away
                    // (tests/reference/negotiator/limit_stop.sh).
                    if miss.limit && !cfg.consider_preemption && !cfg.use_slot_weights {
                        break;
                    }
                    continue;
                }
            };
            used += choice.cost;
            if choice.reason == MatchReason::NoPreemption {
                used_unclaimed += choice.cost;
            }
            *pie_left -= choice.cost;
            self.make_match(k, sub, neg_group, choice);
        }
        if limited || used >= lim.limit {
            self.figures.subs[sub].limited_by = LimitedBy::Share;
            TurnResult::Resume
        } else {
            TurnResult::Done
        }
    }

    /// Job `k` of `sub` takes the chosen slot: the state changes, the figures record it.
    fn make_match(&mut self, k: usize, sub: usize, neg_group: usize, choice: Choice) {
        let preempted = self.state.take(&self.tables, k, sub, &choice);
        let group = &self.state.groups.nodes[neg_group].name;
        self.figures
            .record_match(&self.tables, k, sub, group, choice, preempted);
        if self.tables.volatile {
            self.caches.clear_job_views();
        }
    }
}

//! The events: match notification, claim requests (with the RANK comparison of a preempting
//! claim, HTCondor's `request_claim` in `src/condor_startd.V6/command.cpp`), activation, the
//! starter's exit, keep-alives, releases, `condor_vacate`, drains and shutdown.
use super::Run;
use crate::policy::claim::{lease_duration, Claim, Job};
use crate::policy::drain::{DrainRequest, DrainSchedule};
use crate::policy::event::{Action, Cause, Event, Shutdown, Transition};
use crate::policy::state::{Activity, State};
use classad::ClassAd;
use std::sync::Arc;

impl Run<'_> {
    pub(super) fn handle(&mut self, event: &Event) {
        match event {
            Event::Tick => {}
            Event::MatchNotified { claim_id } => self.match_notified(claim_id),
            Event::ClaimRequest {
                claim_id,
                request,
                alive_interval,
            } => self.claim_request(claim_id, request, *alive_interval),
            Event::Activate { claim_id, job } => self.activate(claim_id, job),
            Event::StarterExited {
                claim_id,
                completed,
            } => self.starter_exited(claim_id, *completed),
            Event::KeepAlive { claim_id } => {
                let now = self.now();
                if let Some(c) = self.slot.claim.as_mut().filter(|c| &c.id == claim_id) {
                    c.renew(now);
                }
            }
            Event::ReleaseClaim { claim_id } => self.release_request(claim_id),
            Event::Vacate { fast } => {
                if *fast {
                    self.kill_claim(Cause::Vacate);
                } else {
                    self.retire_claim(false, Cause::Vacate);
                }
            }
            Event::Drain(req) => self.drain(req),
            Event::CancelDrain { request_id } => self.cancel_drain(request_id.as_deref()),
            Event::Shutdown(kind) => self.shutdown(*kind),
        }
    }

    pub(super) fn match_notified(&mut self, claim_id: &str) {
        let number = match self.slot.state {
            State::Unclaimed => Some(6),
            State::Owner => None,
            _ => {
                tracing::debug!(state = %self.slot.state, "match notification ignored");
                return;
            }
        };
        self.slot.matched = Some(claim_id.to_string());
        self.change(State::Matched, Activity::Idle, number);
    }

    pub(super) fn refuse(&mut self, claim_id: &str, reason: String) {
        tracing::info!(claim_id, %reason, "claim request refused");
        self.actions.push(Action::ClaimRefused {
            claim_id: claim_id.to_string(),
            reason,
        });
    }

    pub(super) fn claim_request(
        &mut self,
        claim_id: &str,
        request: &Arc<ClassAd>,
        alive: Option<i64>,
    ) {
        let state = self.slot.state;
        match state {
            State::Preempting => {
                return self.refuse(claim_id, "the slot is preempting its claim".into())
            }
            // A drained slot takes a job only under the drain's START expression.
            State::Drained if self.backfill_start().is_none() => {
                return self.refuse(claim_id, "the machine is draining".into())
            }
            State::Claimed if self.slot.drain.is_some() => {
                return self.refuse(claim_id, "the machine is draining".into())
            }
            State::Matched if self.slot.matched.as_deref() != Some(claim_id) => {
                return self.refuse(claim_id, "the slot is matched to another claim".into())
            }
            State::Claimed if self.claim_id() == claim_id => {
                return self.refuse(claim_id, "the slot is already claimed by this claim".into())
            }
            _ => {}
        }
        let view = self.view();
        if view.bool("START", Some(request)) != Some(true) {
            return self.refuse(claim_id, "START is not true for this job".into());
        }
        let rank = view.real("Rank", Some(request)).unwrap_or(0.0);
        let policy = self.inputs.policy;
        let lease = lease_duration(
            request,
            alive.unwrap_or(policy.alive_interval),
            policy.max_claim_alives_missed,
        );
        let mut claim = Claim::new(claim_id, request.clone(), rank, lease, self.now());
        claim.accepted_while_draining = state == State::Drained;
        if state != State::Claimed {
            self.slot.claim = Some(claim);
            self.slot.matched = None;
            self.actions.push(Action::ClaimAccepted {
                claim_id: claim_id.to_string(),
            });
            let number = match state {
                State::Unclaimed => Some(5),
                State::Matched => Some(9),
                _ => None,
            };
            return self.change(State::Claimed, Activity::Idle, number);
        }
        let current = self.slot.claim.as_ref().map_or(0.0, |c| c.rank);
        if rank < current {
            return self.refuse(
                claim_id,
                format!("its rank {rank} is below the current claim's {current}"),
            );
        }
        if let Some(pre) = &self.slot.preempting {
            if rank < pre.rank {
                let r = format!(
                    "its rank {rank} is below the preempting claim's {}",
                    pre.rank
                );
                return self.refuse(claim_id, r);
            }
            let old = pre.id.clone();
            self.refuse(&old, "replaced by a better preempting claim".into());
        }
        let cause = if rank > current {
            Cause::RankPreemption
        } else {
            Cause::PriorityPreemption
        };
        self.slot.cause.get_or_insert(cause);
        self.slot.preempting = Some(claim);
        self.dirty = true;
    }

    pub(super) fn refuse_activation(&mut self, claim_id: &str, reason: &str) {
        self.actions.push(Action::ActivationRefused {
            claim_id: claim_id.to_string(),
            reason: reason.to_string(),
        });
    }

    pub(super) fn activate(&mut self, claim_id: &str, job_ad: &Arc<ClassAd>) {
        let ours = self.claim_id() == claim_id;
        if !ours || (self.slot.state, self.slot.activity) != (State::Claimed, Activity::Idle) {
            return self.refuse_activation(claim_id, "the claim is not Claimed/Idle");
        }
        let view = self.view();
        // A claim accepted while draining runs one job; any other claim closes on a drain.
        let backfill = self
            .slot
            .claim
            .as_ref()
            .is_some_and(|c| c.accepted_while_draining && c.activations == 0);
        let draining = self.slot.drain.is_some() && !backfill;
        if self.slot.preempting.is_some() || draining || self.worklife_over() {
            return self.refuse_activation(claim_id, "the claim is closing");
        }
        // HTCondor's activate_claim: the slot must still match the job ("Slot does not match
        // job"), and the claim's rank becomes the job's.
        if view.bool("START", Some(job_ad)) != Some(true) {
            return self.refuse_activation(claim_id, "the slot does not match the job (START)");
        }
        let rank = view.real("Rank", Some(job_ad)).unwrap_or(0.0);
        let now = self.now();
        let pledged = view.int("MachineMaxVacateTime", Some(job_ad)).unwrap_or(0);
        if let Some(c) = self.slot.claim.as_mut() {
            c.activations += 1;
            c.rank = rank;
            if let Some(d) = job_ad.eval_attr("JobLeaseDuration").as_int() {
                if d > 0 {
                    c.lease_duration = d;
                    c.renew(now);
                }
            }
            c.job = Some(Job {
                ad: job_ad.clone(),
                started_at: now,
                suspended_total: 0,
                suspended_since: None,
                pledged_max_vacate_time: pledged,
            });
        }
        self.actions.push(Action::StartJob {
            claim_id: claim_id.to_string(),
        });
        self.change(State::Claimed, Activity::Busy, Some(11));
    }

    pub(super) fn starter_exited(&mut self, claim_id: &str, completed: bool) {
        if self.claim_id() != claim_id || !self.has_job() {
            tracing::debug!(claim_id, "starter exit for no running job ignored");
            return;
        }
        if let Some(c) = self.slot.claim.as_mut() {
            c.job = None;
        }
        match (self.slot.state, self.slot.activity) {
            (State::Claimed, Activity::Retiring) => {
                self.enter_preempting(Activity::Vacating, Some(18))
            }
            (State::Claimed, Activity::Suspended) => {
                // No process to continue: leave Suspended without a ContinueJob.
                self.slot.activity = Activity::Idle;
                self.slot.entered_activity = self.now();
                self.transitions.push(Transition {
                    number: None,
                    from: (State::Claimed, Activity::Suspended),
                    to: (State::Claimed, Activity::Idle),
                });
                self.dirty = true;
            }
            (State::Claimed, a) => {
                let n = (a == Activity::Busy).then_some(12);
                self.change(State::Claimed, Activity::Idle, n);
            }
            (State::Preempting, _) => {
                if !completed {
                    let cause = self.slot.cause.unwrap_or(Cause::Released);
                    self.actions.push(Action::EvictJob {
                        claim_id: claim_id.to_string(),
                        cause,
                    });
                }
                self.leave_preempting();
            }
            _ => {}
        }
    }

    pub(super) fn release_request(&mut self, claim_id: &str) {
        if self
            .slot
            .preempting
            .as_ref()
            .is_some_and(|p| p.id == claim_id)
        {
            self.slot.preempting = None;
            if self.slot.cause.is_some_and(Cause::is_better_match) {
                self.slot.cause = None;
            }
            self.dirty = true;
        } else if self.claim_id() == claim_id && self.slot.state == State::Claimed {
            self.release_claim(Cause::Released);
        } else if self.slot.state == State::Matched
            && self.slot.matched.as_deref() == Some(claim_id)
        {
            self.become_owner(Some(8));
        }
    }

    pub(super) fn drain(&mut self, req: &DrainRequest) {
        if let Some(d) = &self.slot.drain {
            let reason = format!("draining request {} is already in progress", d.id);
            self.actions.push(Action::DrainRefused {
                request_id: req.id.clone(),
                reason,
            });
            return;
        }
        self.slot.drain = Some(req.clone());
        self.dirty = true;
        if let Some(pre) = self.slot.preempting.take() {
            self.refuse(&pre.id, "the machine is draining".into());
            if self.slot.cause.is_some_and(Cause::is_better_match) {
                self.slot.cause = None;
            }
        }
        match req.schedule {
            DrainSchedule::Graceful => self.retire_claim(true, Cause::Drain),
            DrainSchedule::Quick => self.release_claim(Cause::Drain),
            DrainSchedule::Fast => self.kill_claim(Cause::Drain),
        }
    }

    pub(super) fn cancel_drain(&mut self, request_id: Option<&str>) {
        let Some(d) = &self.slot.drain else {
            return;
        };
        if let Some(id) = request_id.filter(|id| *id != d.id) {
            self.actions.push(Action::DrainRefused {
                request_id: id.to_string(),
                reason: format!("no matching draining request id {id}"),
            });
            return;
        }
        self.slot.drain = None;
        self.dirty = true;
    }

    pub(super) fn shutdown(&mut self, kind: Shutdown) {
        match kind {
            Shutdown::Fast => self.kill_claim(Cause::Shutdown),
            Shutdown::Graceful | Shutdown::Peaceful => {
                if let Some(c) = self.slot.claim.as_mut() {
                    c.retire_peacefully = kind == Shutdown::Peaceful;
                }
                self.retire_claim(false, Cause::Shutdown);
            }
        }
    }
}

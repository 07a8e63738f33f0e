//! The periodic evaluation of the policy, state by state, in the order of HTCondor's
//! `ResState::eval_policy` (`src/condor_startd.V6/ResState.cpp`), with the timers the startd
//! keeps beside it (MATCH_TIMEOUT, the claim lease, the vacate time, KILLING_TIMEOUT).
use super::{into_preempting, Run};
use crate::policy::claim::Claim;
use crate::policy::drain::DrainSchedule;
use crate::policy::eval::View;
use crate::policy::event::{Action, Cause};
use crate::policy::retirement::{max_vacate_time, retirement_expired, retirement_remaining};
use crate::policy::state::{Activity, State};

impl Run<'_> {
    pub(super) fn worklife_over(&self) -> bool {
        let (Some(c), Some(life)) = (&self.slot.claim, self.inputs.policy.claim_worklife) else {
            return false;
        };
        c.activations > 0 && self.now() - c.claimed_at > life
    }

    /// One round of HTCondor's `ResState::eval_policy` plus the timers; whether anything
    /// changed.
    pub(super) fn eval_once(&mut self) -> bool {
        self.end_backfill_when_originals_are_done();
        let view = self.view();
        let now = self.now();
        match self.slot.state {
            State::Owner => {
                if self.slot.drain.is_some() {
                    self.change(State::Drained, Activity::Retiring, Some(36));
                } else if !self.is_owner(&view) {
                    self.change(State::Unclaimed, Activity::Idle, Some(1));
                } else {
                    return false;
                }
                true
            }
            State::Unclaimed => {
                if self.slot.drain.is_some() {
                    self.change(State::Drained, Activity::Retiring, Some(37));
                } else if self.is_owner(&view) {
                    self.become_owner(Some(2));
                } else {
                    return false;
                }
                true
            }
            State::Matched => {
                // HTCondor checks neither START nor IS_OWNER in Matched (ResState.cpp: "If
                // we're matched, we only want to leave if the match timer goes off"), so the
                // seed's "START locally false" half of transition 8 does not happen.
                if now - self.slot.entered_state >= self.inputs.policy.match_timeout {
                    self.become_owner(Some(8));
                    return true;
                }
                false
            }
            State::Claimed => self.eval_claimed(&view),
            State::Preempting => self.eval_preempting(&view),
            State::Drained => {
                let Some(d) = &self.slot.drain else {
                    self.become_owner(Some(34));
                    return true;
                };
                match self.slot.activity {
                    Activity::Retiring if self.inputs.other_slots_drained => {
                        self.change(State::Drained, Activity::Idle, Some(33));
                        true
                    }
                    Activity::Idle if d.resume_on_completion => {
                        self.slot.drain = None;
                        self.become_owner(Some(35));
                        true
                    }
                    _ => false,
                }
            }
        }
    }

    /// HTCondor's `ResMgr::checkForDrainCompletion`: once no job from before the drain is
    /// left, the drain's START expression goes (START is false until the drain ends) and the
    /// jobs accepted while draining lose what retirement they had ([`Self::retirement_over`]).
    fn end_backfill_when_originals_are_done(&mut self) {
        if self.inputs.drain.originals_running {
            return;
        }
        if let Some(d) = self.slot.drain.as_mut().filter(|d| d.start.is_some()) {
            d.start = None;
            self.dirty = true;
            tracing::info!(request = %d.id, "final draining: every original job is done, START is false until the drain ends");
        }
    }

    /// Whether the claim's retirement is over: HTCondor's `Resource::retirementExpired`. While
    /// a graceful drain is in force, an idle claim, a job the drained slot's START still takes
    /// and a job accepted while draining all retire together, when the original job with the
    /// most retirement left must go ([`crate::policy::MachineDrain`]); other jobs keep their own.
    fn retirement_over(&self, claim: &Claim, view: &View) -> bool {
        let now = self.now();
        let Some(d) = &self.slot.drain else {
            return retirement_expired(claim, view, now);
        };
        let machine = match d.schedule {
            DrainSchedule::Graceful => self.inputs.drain.retirement_remaining,
            DrainSchedule::Quick | DrainSchedule::Fast => 0,
        };
        let own = retirement_remaining(claim, view, now);
        let coordinated = self.slot.activity == Activity::Idle
            || (own > 0
                && (claim.accepted_while_draining
                    || view.bool("START", Some(claim.target())) == Some(true)));
        let remaining = if coordinated { machine } else { own };
        remaining <= 0 || max_vacate_time(claim, view, now) >= remaining
    }

    pub(super) fn eval_claimed(&mut self, view: &View) -> bool {
        let now = self.now();
        let Some(claim) = self.slot.claim.clone() else {
            tracing::warn!("Claimed with no claim; back to Owner");
            self.become_owner(None);
            return true;
        };
        if now >= claim.lease_expires_at {
            tracing::warn!(claim_id = %claim.id, "claim lease expired (access point gone?), evicting claim");
            self.kill_claim(Cause::LeaseExpired);
            return true;
        }
        let act = self.slot.activity;
        let has_pre = self.slot.preempting.is_some();
        let may_unretire = self.slot.drain.is_none() && claim.may_unretire && !has_pre;
        let in_retirement = has_pre || !may_unretire;
        if in_retirement && self.retirement_over(&claim, view) {
            if self.slot.cause.is_none() && self.slot.drain.is_some() {
                self.slot.cause = Some(Cause::Drain);
            }
            if act == Activity::Busy {
                self.change(State::Claimed, Activity::Retiring, Some(13));
            }
            let n = into_preempting(self.slot.activity);
            self.preempt(n);
            return true;
        }
        let target = claim.target();
        let job = claim.job.as_ref().map(|j| &*j.ad);
        let want_suspend = job.is_some() && view.policy("WANT_SUSPEND", job) == Some(true);
        let pwt = claim.preempt_was_true;
        let consider_preempt = match act {
            Activity::Busy => !want_suspend,
            Activity::Retiring => !pwt && !want_suspend,
            Activity::Suspended => !pwt,
            _ => false,
        };
        if consider_preempt && view.policy("PREEMPT", job) == Some(true) {
            if let Some(c) = self.slot.claim.as_mut() {
                c.preempt_was_true = true;
            }
            self.retire_claim(false, Cause::Preempt);
            return true;
        }
        if act == Activity::Retiring && may_unretire {
            self.slot.cause = None;
            self.change(State::Claimed, Activity::Busy, Some(19));
            return true;
        }
        let busy = matches!(act, Activity::Busy | Activity::Retiring);
        if busy && want_suspend && view.policy("SUSPEND", job) == Some(true) {
            let n = if act == Activity::Busy { 14 } else { 20 };
            self.change(State::Claimed, Activity::Suspended, Some(n));
            return true;
        }
        if act == Activity::Suspended && view.policy("CONTINUE", job) == Some(true) {
            if in_retirement {
                self.change(State::Claimed, Activity::Retiring, Some(16));
            } else {
                self.change(State::Claimed, Activity::Busy, Some(15));
            }
            return true;
        }
        if act == Activity::Busy && has_pre {
            self.change(State::Claimed, Activity::Retiring, Some(13));
            return true;
        }
        if act != Activity::Idle {
            return false;
        }
        let cause = if has_pre {
            None
        } else if view.bool("START", Some(target)) == Some(false) {
            Some(Cause::StartFalse)
        } else if self.worklife_over() {
            Some(Cause::ClaimWorklife)
        } else if self.slot.drain.is_some()
            && !(claim.accepted_while_draining && claim.activations == 0)
        {
            // HTCondor spares a claim still waiting for its activation
            // (`Claim::waitingForActivation`); here only one accepted while draining.
            Some(Cause::Drain)
        } else {
            return false;
        };
        if let Some(c) = cause {
            self.slot.cause = Some(c);
        }
        self.preempt(Some(10));
        true
    }

    pub(super) fn eval_preempting(&mut self, view: &View) -> bool {
        let now = self.now();
        let in_activity = now - self.slot.entered_activity;
        match self.slot.activity {
            Activity::Vacating => {
                let expired = self
                    .slot
                    .claim
                    .as_ref()
                    .is_some_and(|c| now >= c.lease_expires_at);
                if expired {
                    self.kill_claim(Cause::LeaseExpired);
                    return true;
                }
                let job = self
                    .slot
                    .claim
                    .as_ref()
                    .and_then(|c| c.job.as_ref())
                    .map(|j| j.ad.clone());
                if view.policy("KILL", job.as_deref()) == Some(true)
                    || in_activity >= self.slot.vacate_time
                {
                    self.enter_preempting(Activity::Killing, Some(21));
                    return true;
                }
                false
            }
            _ => {
                if !self.slot.tree_killed && in_activity >= self.inputs.policy.killing_timeout {
                    self.slot.tree_killed = true;
                    self.actions.push(Action::KillProcessTree {
                        claim_id: self.claim_id(),
                    });
                }
                false
            }
        }
    }
}

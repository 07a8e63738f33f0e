//! Breaking a claim: retirement, vacating, killing, and what follows once the starter is
//! gone (HTCondor's `Resource::retire_claim`, `release_claim`, `kill_claim` and
//! `leave_preempting_state` in `src/condor_startd.V6/Resource.cpp`; `ResState::change(State)`
//! for the choice between Vacating and Killing).
use super::{into_preempting, Run};
use crate::policy::event::{Action, Cause};
use crate::policy::retirement::max_vacate_time;
use crate::policy::state::{Activity, State};

impl Run<'_> {
    pub(super) fn become_owner(&mut self, number: Option<u8>) {
        self.change(State::Owner, Activity::Idle, number);
    }

    /// Into Preempting, Vacating or Killing as WANT_VACATE says: Killing only when PREEMPT
    /// caused it and WANT_VACATE is false (HTCondor's `ResState::change(State)`).
    pub(super) fn preempt(&mut self, number: Option<u8>) {
        let pwt = self.slot.claim.as_ref().is_some_and(|c| c.preempt_was_true);
        let activity = if !pwt || self.wants_vacate() {
            Activity::Vacating
        } else {
            Activity::Killing
        };
        self.enter_preempting(activity, number);
    }

    pub(super) fn wants_vacate(&self) -> bool {
        let Some(job) = self.slot.claim.as_ref().and_then(|c| c.job.as_ref()) else {
            return true;
        };
        let view = self.view();
        view.policy("WANT_VACATE", Some(&job.ad))
            .unwrap_or_else(|| {
                tracing::warn!("WANT_VACATE is undefined for the job; vacating gracefully");
                true
            })
    }

    /// Enters Preempting/`activity` and signals the job; with no job, the preemption is
    /// over at once.
    pub(super) fn enter_preempting(&mut self, activity: Activity, number: Option<u8>) {
        self.change(State::Preempting, activity, number);
        let now = self.now();
        let id = self.claim_id();
        let Some(claim) = self.slot.claim.as_ref() else {
            self.leave_preempting();
            return;
        };
        let Some(job) = &claim.job else {
            self.leave_preempting();
            return;
        };
        match activity {
            Activity::Vacating => {
                let view = self.view();
                let t = max_vacate_time(claim, &view, now);
                let signal = job.kill_sig();
                self.slot.vacate_time = t;
                self.actions.push(Action::SoftKill {
                    claim_id: id,
                    signal,
                    max_vacate_time: t,
                });
            }
            _ => {
                self.slot.tree_killed = false;
                self.actions.push(Action::HardKill { claim_id: id });
            }
        }
    }

    /// The starter is gone: tell the access point the claim is broken, then go to the
    /// preempting claim (23, 24) or back to the owner (22, 25).
    pub(super) fn leave_preempting(&mut self) {
        let vacating = self.slot.activity == Activity::Vacating;
        let cause = self.slot.cause.unwrap_or(Cause::Released);
        if let Some(c) = self.slot.claim.take() {
            self.actions.push(Action::ReleaseClaim {
                claim_id: c.id,
                cause,
            });
        }
        self.slot.cause = None;
        if let Some(mut pre) = self.slot.preempting.take() {
            let view = self.view();
            if view.bool("START", Some(&pre.request)) != Some(false) {
                pre.renew(self.now());
                self.actions.push(Action::ClaimAccepted {
                    claim_id: pre.id.clone(),
                });
                self.slot.claim = Some(pre);
                let n = if vacating { 23 } else { 24 };
                self.change(State::Claimed, Activity::Idle, Some(n));
                return;
            }
            self.actions.push(Action::ClaimRefused {
                claim_id: pre.id,
                reason: "START is false for the preempting claim".into(),
            });
        }
        self.become_owner(Some(if vacating { 22 } else { 25 }));
    }

    /// Retirement (HTCondor's `Resource::retire_claim`): irreversible unless `reversible`.
    pub(super) fn retire_claim(&mut self, reversible: bool, cause: Cause) {
        match self.slot.state {
            State::Claimed => {
                if let Some(c) = self.slot.claim.as_mut() {
                    if !reversible {
                        c.may_unretire = false;
                    }
                }
                self.slot.cause = Some(cause);
                match self.slot.activity {
                    Activity::Busy => self.change(State::Claimed, Activity::Retiring, Some(13)),
                    Activity::Suspended => {
                        self.change(State::Claimed, Activity::Retiring, Some(16))
                    }
                    Activity::Idle => self.preempt(Some(10)),
                    _ => {}
                }
            }
            State::Matched => self.become_owner(Some(8)),
            _ => {}
        }
    }

    /// Vacate without retirement (HTCondor's `Resource::release_claim`).
    pub(super) fn release_claim(&mut self, cause: Cause) {
        match self.slot.state {
            State::Claimed => {
                self.slot.cause = Some(cause);
                let n = into_preempting(self.slot.activity);
                self.enter_preempting(Activity::Vacating, n);
            }
            State::Matched => self.become_owner(Some(8)),
            _ => {}
        }
    }

    /// Kill without retirement or vacate time (HTCondor's `Resource::kill_claim`).
    pub(super) fn kill_claim(&mut self, cause: Cause) {
        match (self.slot.state, self.slot.activity) {
            (State::Claimed, a) => {
                self.slot.cause = Some(cause);
                self.enter_preempting(Activity::Killing, into_preempting(a));
            }
            (State::Preempting, Activity::Vacating) => {
                self.slot.cause.get_or_insert(cause);
                self.enter_preempting(Activity::Killing, Some(21));
            }
            (State::Matched, _) => self.become_owner(Some(8)),
            _ => {}
        }
    }
}

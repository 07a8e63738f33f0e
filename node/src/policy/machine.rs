//! The state machine: [`Slot::step`] takes the slot, the machine ad, the policy, `now` and one
//! [`Event`], and gives the new slot, the [`Action`]s to carry out and the [`Transition`]s
//! taken. After the event it evaluates the policy again until nothing changes, as HTCondor's
//! `ResState::change` re-evaluates on entering Idle or Retiring, so one step may take several
//! transitions (a job finishing in retirement: 18 then 22).
//!
//! The order of the checks in each state is HTCondor's `ResState::eval_policy`
//! (`src/condor_startd.V6/ResState.cpp`); breaking a claim follows `Resource::retire_claim`,
//! `release_claim`, `kill_claim` and `leave_preempting_state` (`Resource.cpp`); claim requests
//! follow `request_claim` (`command.cpp`): START must be true for the request, and on a claimed
//! slot the request preempts when its RANK is at least the current claim's (higher: a rank
//! preemption; equal: the negotiator preempted for user priority), otherwise it is refused.
use super::attrs::own_attrs;
use super::claim::{lease_duration, Claim, Job};
use super::drain::{DrainRequest, DrainSchedule};
use super::eval::View;
use super::event::{Action, Cause, Event, Shutdown, Transition};
use super::knobs::Policy;
use super::retirement::{max_vacate_time, retirement_expired};
use super::state::{Activity, State};
use classad::ClassAd;
use std::sync::Arc;

/// Most transitions one step may take before it stops (a policy that flips back and forth at
/// the same instant, such as IS_OWNER and START disagreeing, must not loop for ever).
const MAX_TRANSITIONS_PER_STEP: usize = 16;

/// One slot's policy state.
#[derive(Clone, Debug)]
pub struct Slot {
    /// `State`.
    pub state: State,
    /// `Activity`.
    pub activity: Activity,
    /// `EnteredCurrentState`.
    pub entered_state: i64,
    /// `EnteredCurrentActivity`.
    pub entered_activity: i64,
    /// The current claim (Claimed, Preempting).
    pub claim: Option<Claim>,
    /// A preempting claim waiting for the current one to go (HTCondor's `r_pre` with a request).
    pub preempting: Option<Claim>,
    /// The claim id the slot was matched with (Matched).
    pub matched: Option<String>,
    /// The drain in force on the machine.
    pub drain: Option<DrainRequest>,
    /// Why the current claim is being broken.
    pub cause: Option<Cause>,
    /// The vacate time granted when the job was soft-killed.
    pub vacate_time: i64,
    /// KILLING_TIMEOUT's SIGKILL of the starter's process tree has been asked for.
    pub tree_killed: bool,
}

/// What a step reads besides the slot and the event.
#[derive(Clone, Copy)]
pub struct Inputs<'a> {
    /// The policy.
    pub policy: &'a Policy,
    /// The slot's machine ad as the node measures it (`Cpus`, `Memory`, `KeyboardIdle`,
    /// `LoadAvg`, `SlotID`, ...); the state machine lays its own attributes over it.
    pub machine: &'a ClassAd,
    /// Now, in seconds since the Unix epoch.
    pub now: i64,
    /// Every other slot of the machine is Drained (transition 33; true on a one-slot machine).
    pub other_slots_drained: bool,
}

/// The result of a step.
#[derive(Clone, Debug)]
pub struct Step {
    /// The slot afterwards.
    pub slot: Slot,
    /// What to do, in order.
    pub actions: Vec<Action>,
    /// The transitions taken, in order.
    pub transitions: Vec<Transition>,
}

impl Step {
    /// The seed's numbers of the transitions taken (unnumbered ones left out).
    pub fn numbers(&self) -> Vec<u8> {
        self.transitions.iter().filter_map(|t| t.number).collect()
    }
}

impl Slot {
    /// A slot as the startd starts it: Owner/Idle at `now`.
    pub fn new(now: i64) -> Slot {
        Slot {
            state: State::Owner,
            activity: Activity::Idle,
            entered_state: now,
            entered_activity: now,
            claim: None,
            preempting: None,
            matched: None,
            drain: None,
            cause: None,
            vacate_time: 0,
            tree_killed: false,
        }
    }

    /// Applies `event` at `inputs.now`, then evaluates the policy until it settles.
    pub fn step(&self, inputs: &Inputs<'_>, event: &Event) -> Step {
        let mut run = Run {
            slot: self.clone(),
            inputs,
            actions: Vec::new(),
            transitions: Vec::new(),
            dirty: false,
        };
        run.handle(event);
        // A keep-alive only renews the lease (HTCondor's `Resource::got_alive`).
        if !matches!(event, Event::KeepAlive { .. }) {
            run.settle();
        }
        if run.dirty {
            run.actions.push(Action::SendAd);
        }
        Step {
            slot: run.slot,
            actions: run.actions,
            transitions: run.transitions,
        }
    }

    /// The attributes the state machine owns in the slot ad (see [`super::attrs`]).
    pub fn attributes(&self) -> ClassAd {
        own_attrs(self)
    }
}

struct Run<'a> {
    slot: Slot,
    inputs: &'a Inputs<'a>,
    actions: Vec<Action>,
    transitions: Vec<Transition>,
    dirty: bool,
}

/// The number of a transition from Claimed into Preempting, by the activity it leaves.
fn into_preempting(from: Activity) -> Option<u8> {
    match from {
        Activity::Idle => Some(10),
        Activity::Suspended => Some(17),
        Activity::Retiring => Some(18),
        _ => None,
    }
}

impl Run<'_> {
    fn now(&self) -> i64 {
        self.inputs.now
    }

    fn view(&self) -> View {
        View::new(
            self.inputs.machine,
            self.inputs.policy,
            &own_attrs(&self.slot),
            self.now(),
        )
    }

    fn claim_id(&self) -> String {
        self.slot
            .claim
            .as_ref()
            .map(|c| c.id.clone())
            .unwrap_or_default()
    }

    fn has_job(&self) -> bool {
        self.slot.claim.as_ref().is_some_and(|c| c.job.is_some())
    }

    /// IS_OWNER, evaluated locally. HTCondor stops on an undefined IS_OWNER
    /// (`Resource::eval_is_owner` is fatal); here the slot stays unavailable and says why.
    fn is_owner(&self, view: &View) -> bool {
        view.bool("IS_OWNER", None).unwrap_or_else(|| {
            tracing::warn!("IS_OWNER is undefined or not a boolean; the slot stays in Owner");
            true
        })
    }

    // ---- changing state ----

    fn change(&mut self, state: State, activity: Activity, number: Option<u8>) {
        let from = (self.slot.state, self.slot.activity);
        if from == (state, activity) {
            return;
        }
        let now = self.now();
        if from.1 == Activity::Suspended {
            let id = self.claim_id();
            if let Some(job) = self.slot.claim.as_mut().and_then(|c| c.job.as_mut()) {
                if let Some(since) = job.suspended_since.take() {
                    job.suspended_total += now.saturating_sub(since);
                }
                self.actions.push(Action::ContinueJob { claim_id: id });
            }
        }
        if state != from.0 {
            self.slot.entered_state = now;
            if state == State::Claimed {
                if let Some(c) = self.slot.claim.as_mut() {
                    c.claimed_at = now;
                }
            }
        }
        self.slot.entered_activity = now;
        self.slot.state = state;
        self.slot.activity = activity;
        if activity == Activity::Suspended {
            let id = self.claim_id();
            if let Some(job) = self.slot.claim.as_mut().and_then(|c| c.job.as_mut()) {
                job.suspended_since = Some(now);
                self.actions.push(Action::SuspendJob { claim_id: id });
            }
        }
        if state == State::Owner {
            self.slot.claim = None;
            self.slot.preempting = None;
            self.slot.matched = None;
            self.slot.cause = None;
        }
        tracing::debug!(
            from = %format!("{}/{}", from.0, from.1),
            to = %format!("{state}/{activity}"),
            number,
            "slot state change"
        );
        self.transitions.push(Transition {
            number,
            from,
            to: (state, activity),
        });
        self.dirty = true;
    }

    fn become_owner(&mut self, number: Option<u8>) {
        self.change(State::Owner, Activity::Idle, number);
    }

    /// Into Preempting, Vacating or Killing as WANT_VACATE says: Killing only when PREEMPT
    /// caused it and WANT_VACATE is false (HTCondor's `ResState::change(State)`).
    fn preempt(&mut self, number: Option<u8>) {
        let pwt = self.slot.claim.as_ref().is_some_and(|c| c.preempt_was_true);
        let activity = if !pwt || self.wants_vacate() {
            Activity::Vacating
        } else {
            Activity::Killing
        };
        self.enter_preempting(activity, number);
    }

    fn wants_vacate(&self) -> bool {
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
    fn enter_preempting(&mut self, activity: Activity, number: Option<u8>) {
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
    fn leave_preempting(&mut self) {
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
    fn retire_claim(&mut self, reversible: bool, cause: Cause) {
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
    fn release_claim(&mut self, cause: Cause) {
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
    fn kill_claim(&mut self, cause: Cause) {
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

    // ---- events ----

    fn handle(&mut self, event: &Event) {
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

    fn match_notified(&mut self, claim_id: &str) {
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

    fn refuse(&mut self, claim_id: &str, reason: String) {
        tracing::info!(claim_id, %reason, "claim request refused");
        self.actions.push(Action::ClaimRefused {
            claim_id: claim_id.to_string(),
            reason,
        });
    }

    fn claim_request(&mut self, claim_id: &str, request: &Arc<ClassAd>, alive: Option<i64>) {
        let state = self.slot.state;
        match state {
            State::Preempting => {
                return self.refuse(claim_id, "the slot is preempting its claim".into())
            }
            State::Drained => return self.refuse(claim_id, "the machine is draining".into()),
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
        let claim = Claim::new(claim_id, request.clone(), rank, lease, self.now());
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

    fn refuse_activation(&mut self, claim_id: &str, reason: &str) {
        self.actions.push(Action::ActivationRefused {
            claim_id: claim_id.to_string(),
            reason: reason.to_string(),
        });
    }

    fn activate(&mut self, claim_id: &str, job_ad: &Arc<ClassAd>) {
        let ours = self.claim_id() == claim_id;
        if !ours || (self.slot.state, self.slot.activity) != (State::Claimed, Activity::Idle) {
            return self.refuse_activation(claim_id, "the claim is not Claimed/Idle");
        }
        let view = self.view();
        if self.slot.preempting.is_some() || self.slot.drain.is_some() || self.worklife_over() {
            return self.refuse_activation(claim_id, "the claim is closing");
        }
        let now = self.now();
        let pledged = view.int("MachineMaxVacateTime", Some(job_ad)).unwrap_or(0);
        if let Some(c) = self.slot.claim.as_mut() {
            c.activations += 1;
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

    fn starter_exited(&mut self, claim_id: &str, completed: bool) {
        if self.claim_id() != claim_id || !self.has_job() {
            tracing::debug!(claim_id, "starter exit for no running job ignored");
            return;
        }
        if let Some(c) = self.slot.claim.as_mut() {
            if let Some(job) = c.job.take() {
                if let Some(since) = job.suspended_since {
                    tracing::debug!(since, "starter exited while suspended");
                }
            }
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

    fn release_request(&mut self, claim_id: &str) {
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

    fn drain(&mut self, req: &DrainRequest) {
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

    fn cancel_drain(&mut self, request_id: Option<&str>) {
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

    fn shutdown(&mut self, kind: Shutdown) {
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

    // ---- evaluation ----

    /// Evaluates the policy once, and again after every change that enters an Idle or
    /// Retiring activity, as HTCondor's `ResState::change` does ("When we enter retirement
    /// or idleness, check right away to see if we should be preempting instead"); any other
    /// change waits for the next tick, so SUSPEND and CONTINUE both true alternate tick by
    /// tick rather than looping.
    fn settle(&mut self) {
        for _ in 0..MAX_TRANSITIONS_PER_STEP {
            if !self.eval_once()
                || !matches!(self.slot.activity, Activity::Idle | Activity::Retiring)
            {
                return;
            }
        }
        tracing::warn!(
            state = %self.slot.state,
            "the startd policy did not settle; evaluation stops for this step"
        );
    }

    fn worklife_over(&self) -> bool {
        let (Some(c), Some(life)) = (&self.slot.claim, self.inputs.policy.claim_worklife) else {
            return false;
        };
        c.activations > 0 && self.now() - c.claimed_at > life
    }

    /// One round of HTCondor's `ResState::eval_policy` plus the timers; whether anything
    /// changed.
    fn eval_once(&mut self) -> bool {
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

    fn eval_claimed(&mut self, view: &View) -> bool {
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
        if in_retirement && retirement_expired(&claim, view, now) {
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
        } else if self.slot.drain.is_some() {
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

    fn eval_preempting(&mut self, view: &View) -> bool {
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

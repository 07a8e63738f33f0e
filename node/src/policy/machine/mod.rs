//! The state machine: [`Slot::step`] takes the slot, the machine ad, the policy, `now` and one
//! [`Event`], and gives the new slot, the [`Action`]s to carry out and the [`Transition`]s
//! taken. After the event it evaluates the policy once, and again after each change into an
//! Idle or Retiring activity, as HTCondor's `ResState::change` does, so one step may take
//! several transitions (a job finishing in retirement: 18, 22, then 1).
//!
//! The work is split by kind: `events` applies one event, `evaluate` is the periodic
//! evaluation, `preempt` breaks claims; this file holds the slot and the one way its state
//! changes (`Run::change`: entry times, suspend/continue signals, the transition record).
//!
//! The order of the checks in each state is HTCondor's `ResState::eval_policy`
//! (`src/condor_startd.V6/ResState.cpp`); breaking a claim follows `Resource::retire_claim`,
//! `release_claim`, `kill_claim` and `leave_preempting_state` (`Resource.cpp`); claim requests
//! follow `request_claim` (`command.cpp`): START must be true for the request, and on a claimed
//! slot the request preempts when its RANK is at least the current claim's (higher: a rank
//! preemption; equal: the negotiator preempted for user priority), otherwise it is refused.
mod evaluate;
mod events;
mod preempt;

use super::attrs::own_attrs;
use super::claim::Claim;
use super::drain::{DrainRequest, MachineDrain};
use super::eval::View;
use super::event::{Action, Cause, Event, Transition};
use super::knobs::Policy;
use super::state::{Activity, State};
use classad::ClassAd;

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
    /// A graceful drain across the machine's slots ([`MachineDrain::of`]).
    pub drain: MachineDrain,
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
    pub(super) fn now(&self) -> i64 {
        self.inputs.now
    }

    pub(super) fn view(&self) -> View {
        View::new(
            self.inputs.machine,
            self.inputs.policy,
            &own_attrs(&self.slot),
            self.now(),
        )
    }

    pub(super) fn claim_id(&self) -> String {
        self.slot
            .claim
            .as_ref()
            .map(|c| c.id.clone())
            .unwrap_or_default()
    }

    /// The drain's START expression, while a drained slot may take jobs under it.
    pub(super) fn backfill_start(&self) -> Option<&super::drain::DrainStart> {
        self.slot.drain.as_ref().and_then(|d| d.backfill_start())
    }

    pub(super) fn has_job(&self) -> bool {
        self.slot.claim.as_ref().is_some_and(|c| c.job.is_some())
    }

    /// IS_OWNER, evaluated locally. HTCondor stops on an undefined IS_OWNER
    /// (`Resource::eval_is_owner` is fatal); here the slot stays unavailable and says why.
    pub(super) fn is_owner(&self, view: &View) -> bool {
        view.bool("IS_OWNER", None).unwrap_or_else(|| {
            tracing::warn!("IS_OWNER is undefined or not a boolean; the slot stays in Owner");
            true
        })
    }

    pub(super) fn change(&mut self, state: State, activity: Activity, number: Option<u8>) {
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

    /// Evaluates the policy once, and again after every change that enters an Idle or
    /// Retiring activity, as HTCondor's `ResState::change` does ("When we enter retirement
    /// or idleness, check right away to see if we should be preempting instead"); any other
    /// change waits for the next tick, so SUSPEND and CONTINUE both true alternate tick by
    /// tick rather than looping.
    pub(super) fn settle(&mut self) {
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
}

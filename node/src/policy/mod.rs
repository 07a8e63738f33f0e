//! The startd policy state machine (seed 001, HTCondor manual §3.5 "Policy Configuration for
//! the condor_startd"; INVENTORY §10), as a pure function:
//! [`Slot::step`]`(slot, `[`Inputs`]` { policy, machine ad, now, .. }, `[`Event`]`)` gives the new
//! slot, the [`Action`]s for the node to carry out (start, suspend, continue, soft-kill and
//! hard-kill the job, evict it back to its access point, accept, refuse or release claims,
//! send the ad) and the numbered [`Transition`]s taken. No clock is read: `time()` in the
//! policy is pinned to `now` ([`clock`]).
//!
//! States Owner, Unclaimed, Matched, Claimed (Idle, Busy, Suspended, Retiring), Preempting
//! (Vacating, Killing) and Drained (Retiring, Idle), and the seed's transitions 1, 2, 5, 6,
//! 8-25 and 33-37, driven by START, IS_OWNER, SUSPEND, CONTINUE, PREEMPT, KILL, WANT_SUSPEND,
//! WANT_VACATE (and their `_VANILLA` forms), MaxJobRetirementTime (machine and job),
//! MachineMaxVacateTime/JobMaxVacateTime, KILLING_TIMEOUT, MATCH_TIMEOUT, CLAIM_WORKLIFE, RANK
//! (`CurrentRank`, `PreemptingRank`), claim leases and drain requests ([`knobs`] reads them
//! from an `aerie_config::Config` with HTCondor 23.9.6's defaults).
//!
//! Left out: benchmarking (transitions 3 and 4: Aerie runs no benchmarks, `Unclaimed/Benchmarking`
//! never happens) and backfill (transitions 7 and 26-32: no backfill manager), COD claims,
//! periodic checkpoints (no standard universe), hibernation, job hooks and `WANT_HOLD`.
//!
//! Using it: read a [`Policy`] once from the configuration (`Policy::from_config`), keep one
//! [`Slot`] per slot (`Slot::new(now)`), and on every tick (`POLLING_INTERVAL`) and every
//! protocol event call `slot.step(&Inputs { policy, machine, now, other_slots_drained, drain },
//! &event)`, keep `step.slot`, carry out `step.actions` in order, and lay
//! `slot.attributes()` over the machine ad before advertising it. The caller owns what spans
//! slots: `other_slots_drained`, a drain's `-check` expression, and the [`MachineDrain`] that
//! coordinates a graceful drain's retirement across slots.
//!
//! Where the seed's prose and HTCondor disagree, HTCondor's source wins and the code says so:
//! the order of checks is `ResState::eval_policy` (`src/condor_startd.V6/ResState.cpp`), the
//! retirement arithmetic `Resource::evalRetirementRemaining`/`retirementExpired`/
//! `evalMaxVacateTime` (`Resource.cpp`), claiming `request_claim` (`command.cpp`), draining
//! `ResMgr::startDraining` (`ResMgr.cpp`).
pub mod attrs;
pub mod claim;
pub mod clock;
pub mod drain;
pub mod eval;
pub mod event;
pub mod knobs;
pub mod machine;
pub mod retirement;
pub mod state;

pub use claim::{Claim, Job};
pub use drain::{DrainRequest, DrainSchedule, DrainStart, MachineDrain};
pub use event::{Action, Cause, Event, Shutdown, Transition};
pub use knobs::{Policy, PolicyError};
pub use machine::{Inputs, Slot, Step};
pub use state::{Activity, State};

#[cfg(test)]
mod tests;

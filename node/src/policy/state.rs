//! The slot states and activities, named and spelled as HTCondor's startd advertises them in
//! `State` and `Activity` (`state_to_string` / `activity_to_string` in HTCondor's
//! `src/condor_includes/condor_state.h` and `src/condor_startd.V6/ResState.cpp`).
use std::fmt;

/// A slot's state (seed 001 §3.5.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// In use by its owner, or otherwise unavailable to HTCondor jobs; every slot starts here.
    Owner,
    /// Available for jobs, running none.
    Unclaimed,
    /// Matched by the negotiator to an access point that has not claimed it yet.
    Matched,
    /// Claimed by an access point.
    Claimed,
    /// Breaking a claim: getting rid of its job, then telling the access point.
    Preempting,
    /// Not running jobs because the machine is being drained.
    Drained,
}

/// A slot's activity within its state (seed 001 §3.5.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Activity {
    /// Doing nothing (Owner, Unclaimed, Matched, Claimed, Drained).
    Idle,
    /// Running a job (Claimed).
    Busy,
    /// The job is suspended (Claimed).
    Suspended,
    /// Waiting for the job to finish before the claim is preempted (Claimed), or for the
    /// other slots to drain (Drained).
    Retiring,
    /// The job was asked to leave gracefully, with its soft-kill signal (Preempting).
    Vacating,
    /// The job is being hard-killed (Preempting).
    Killing,
}

impl State {
    /// The name HTCondor advertises in `State`.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Owner => "Owner",
            State::Unclaimed => "Unclaimed",
            State::Matched => "Matched",
            State::Claimed => "Claimed",
            State::Preempting => "Preempting",
            State::Drained => "Drained",
        }
    }
}

impl Activity {
    /// The name HTCondor advertises in `Activity`.
    pub fn as_str(self) -> &'static str {
        match self {
            Activity::Idle => "Idle",
            Activity::Busy => "Busy",
            Activity::Suspended => "Suspended",
            Activity::Retiring => "Retiring",
            Activity::Vacating => "Vacating",
            Activity::Killing => "Killing",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Activity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

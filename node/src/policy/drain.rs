//! A drain request as `condor_drain` makes it (HTCondor's `ResMgr::startDraining` and
//! `ResMgr::cancelDraining`, `src/condor_startd.V6/ResMgr.cpp`): how fast, why, and whether the
//! machine resumes by itself once drained.
//!
//! What spans the machine's slots is the caller's to work out and pass in as a
//! [`MachineDrain`]: the request's `-check` expression, how long the longest retirement of the
//! jobs that were running when the drain began has left (`ResMgr::gracefulDrainingTimeRemaining`:
//! jobs with less retirement left are kept until the longest must go), and whether any of
//! those original jobs is still there (`ResMgr::checkForDrainCompletion`).
//!
//! A graceful drain may carry a START expression (`condor_drain -start`, or the
//! `DEFAULT_DRAINING_START_EXPR` knob): while original jobs still run, a drained slot takes new
//! jobs that it matches ("backfill while draining", HTCondor 8.9.5), advertising it as its
//! `Start`. Those jobs are accepted while draining (`AcceptedWhileDraining`): they get no
//! retirement of their own, only until the last original job is done, and are then vacated;
//! from then on START is false until the drain ends (seed 000, "Defragmenting Dynamic Slots").
//! A quick or fast drain keeps no START expression, as `ResMgr::startDraining` does not.
use super::eval::View;
use super::machine::Slot;
use super::retirement::retirement_remaining;
use classad::Expr;
use std::sync::Arc;

/// How a drain treats running jobs (`condor_drain -graceful | -quick | -fast`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DrainSchedule {
    /// Retirement time and vacate time are honoured (the default).
    Graceful,
    /// Retirement time is not honoured, vacate time is.
    Quick,
    /// Neither: jobs are hard-killed.
    Fast,
}

impl DrainSchedule {
    /// Parses `graceful`, `quick` or `fast` (any case), as `DEFRAG_DRAINING_SCHEDULE` spells it.
    pub fn parse(s: &str) -> Option<DrainSchedule> {
        match s.to_ascii_lowercase().as_str() {
            "graceful" => Some(DrainSchedule::Graceful),
            "quick" => Some(DrainSchedule::Quick),
            "fast" => Some(DrainSchedule::Fast),
            _ => None,
        }
    }
}

/// A drain in force on the machine.
#[derive(Clone, Debug, PartialEq)]
pub struct DrainRequest {
    /// `DrainingRequestId`: what `condor_drain -cancel -request-id` names.
    pub id: String,
    /// How fast.
    pub schedule: DrainSchedule,
    /// `DrainReason`.
    pub reason: String,
    /// `-resume-on-completion`: once every slot is drained, cancel the drain and go back to
    /// Owner (transition 35).
    pub resume_on_completion: bool,
    /// The START expression while draining (graceful drains only); cleared when the last
    /// original job is done.
    pub start: Option<DrainStart>,
}

impl DrainRequest {
    /// The START expression a drained slot advertises now, if it takes new jobs.
    pub fn backfill_start(&self) -> Option<&DrainStart> {
        self.start
            .as_ref()
            .filter(|_| self.schedule == DrainSchedule::Graceful)
    }
}

/// A drain's START expression, with the text it was given as.
#[derive(Clone, Debug)]
pub struct DrainStart {
    /// As the request spelled it.
    pub text: String,
    /// Parsed, with `time()` pinned to the policy clock.
    pub expr: Arc<Expr>,
}

impl PartialEq for DrainStart {
    fn eq(&self, other: &DrainStart) -> bool {
        self.text == other.text
    }
}

impl DrainStart {
    /// Parses `text`; the error names the expression.
    pub fn parse(text: &str) -> Result<DrainStart, String> {
        let e = classad::parse_expr(text)
            .map_err(|e| format!("-start {text:?} does not parse: {e}"))?;
        Ok(DrainStart {
            text: text.to_string(),
            expr: Arc::new(super::clock::pin_clock(&e)),
        })
    }
}

/// What a graceful drain looks like across the machine's slots, worked out by the caller
/// before each step (the default: no original job left).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MachineDrain {
    /// The most retirement any original job (one not accepted while draining) has left
    /// (HTCondor's `ResMgr::gracefulDrainingTimeRemaining`).
    pub retirement_remaining: i64,
    /// Some slot still holds a claim made before the drain began (partitionable slots
    /// aside): until none does, a drain's START expression stays in force.
    pub originals_running: bool,
}

impl MachineDrain {
    /// Works it out from every slot of the machine, each with its view (HTCondor walks the
    /// same slots in `gracefulDrainingTimeRemaining` and `checkForDrainCompletion`).
    pub fn of<'a>(slots: impl IntoIterator<Item = (&'a Slot, View)>, now: i64) -> MachineDrain {
        let mut out = MachineDrain::default();
        for (slot, view) in slots {
            let Some(claim) = &slot.claim else { continue };
            if claim.accepted_while_draining {
                continue;
            }
            out.originals_running = true;
            out.retirement_remaining = out
                .retirement_remaining
                .max(retirement_remaining(claim, &view, now));
        }
        out
    }
}

//! A drain request as `condor_drain` makes it (HTCondor's `ResMgr::startDraining` and
//! `ResMgr::cancelDraining`, `src/condor_startd.V6/ResMgr.cpp`): how fast, why, and whether the
//! machine resumes by itself once drained.
//!
//! The request's `-check` expression and the coordination of retirement across the machine's
//! slots (jobs with less retirement left are kept until the longest must go) span every slot,
//! so they belong to the caller; here each slot honours its own job's retirement.

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
}

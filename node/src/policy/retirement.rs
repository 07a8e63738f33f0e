//! Retirement and vacate times, as HTCondor's startd computes them
//! (`Resource::evalRetirementRemaining`, `Resource::retirementExpired` and
//! `Resource::evalMaxVacateTime` in `src/condor_startd.V6/Resource.cpp`):
//!
//! - the machine's `MaxJobRetirementTime` is evaluated with the slot as MY and the job as
//!   TARGET, the job's own `MaxJobRetirementTime` with the job as MY; the smaller wins (a job
//!   may ask for less, never more), re-evaluated every time it is asked;
//! - the retirement clock is the job's run time since it started, minus suspended time;
//! - a peaceful shutdown makes retirement unlimited, unless the machine's value is -1;
//! - the job's `JobMaxVacateTime` (or the older `KillSigTimeout`) applies when smaller than
//!   the `MachineMaxVacateTime` pledged when the job started; when larger, unused retirement
//!   time is turned into vacate time up to it;
//! - retirement counts as over when what is left is no more than the vacate time, so that a
//!   job that uses all of its vacate time is killed exactly when retirement ends.
use super::claim::Claim;
use super::eval::{job_int, View};

/// Seconds of retirement the claim's job has left at `now` (0 with no job).
pub fn retirement_remaining(claim: &Claim, view: &View, now: i64) -> i64 {
    let Some(job) = &claim.job else {
        return 0;
    };
    let mut max = view.int("MaxJobRetirementTime", Some(&job.ad)).unwrap_or(0);
    if claim.retire_peacefully && max != -1 {
        max = i64::MAX;
    }
    if let Some(Some(own)) = job_int(&job.ad, "MaxJobRetirementTime", view) {
        max = max.min(own);
    }
    max.saturating_sub(job.run_time(now)).max(0)
}

/// Seconds the job gets between its soft kill and the hard kill.
pub fn max_vacate_time(claim: &Claim, view: &View, now: i64) -> i64 {
    let Some(job) = &claim.job else {
        return 0;
    };
    let machine = job.pledged_max_vacate_time;
    let wanted = match job_int(&job.ad, "JobMaxVacateTime", view) {
        Some(v) => v.unwrap_or(0),
        None => match job_int(&job.ad, "KillSigTimeout", view) {
            Some(v) => v.unwrap_or(0),
            None => machine,
        },
    };
    if wanted <= machine {
        return wanted;
    }
    let remaining = retirement_remaining(claim, view, now);
    if remaining >= wanted {
        wanted
    } else {
        remaining.max(machine)
    }
}

/// Whether the claim's retirement is over at `now`: nothing left, or no more than the vacate
/// time left.
pub fn retirement_expired(claim: &Claim, view: &View, now: i64) -> bool {
    let remaining = retirement_remaining(claim, view, now);
    remaining <= 0 || max_vacate_time(claim, view, now) >= remaining
}

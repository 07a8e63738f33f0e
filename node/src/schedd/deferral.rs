//! Job deferral, pure: a job with a `DeferralTime` (set by `deferral_time`, or by the access
//! point from a crontab schedule, see [`super::crontab`]) is not offered as demand before
//! `DeferralTime - DeferralPrepTime`, does not start before `DeferralTime`, and is held
//! ("Job missed deferred execution time", `HoldReasonCode` 20) when it could not start within
//! `DeferralWindow` seconds after it.
//!
//! HTCondor splits this between the job's `Requirements` (condor_submit adds
//! `(time() + ScheddInterval) >= (DeferralTime - DeferralPrepTime)` and
//! `time() < (DeferralTime + DeferralWindow)`), the starter, which waits for the time or
//! aborts a late job (src/condor_starter.V6.1/starter.cpp, `Starter::jobWaitUntilExecuteTime`),
//! and the schedd, which holds the job that aborted that way (src/condor_schedd.V6/schedd.cpp,
//! `JOB_MISSED_DEFERRAL_TIME`).
//!
//! Aerie enforces it all at the access point, for three reasons: the access point already
//! owns each claim's life as a task with its keep-alives, so waiting from the grant to
//! `DeferralTime` is one timer before `ActivateClaim`, where a waiting starter would need a
//! new state, its own timer and its cancellation on deactivation at every execute node; one
//! clock (the access point's) decides both when the job is offered and when it starts, so no
//! clock offset (`DeferralOffset`) between the two machines is needed; and the access point
//! can hold an idle job whose window has passed, which in HTCondor stays idle forever
//! (its `Requirements` can never match again). What differs from HTCondor: the job is
//! offered from exactly `DeferralTime - DeferralPrepTime` (the leader asks for demand every
//! cycle, so no `ScheddInterval` of slack is needed), and while it waits on its claim its
//! `JobStatus` stays idle (HTCondor shows it running); it becomes running when it starts.
use super::crontab;
use super::job::JobId;
use classad::ClassAd;

/// `CONDOR_HOLD_CODE::MissedDeferredExecutionTime` (src/condor_utils/condor_holdcodes.h).
pub const MISSED_DEFERRED_EXECUTION_TIME: i64 = 20;

/// The `HoldReason` of a job that missed its time (schedd.cpp, `JOB_MISSED_DEFERRAL_TIME`).
pub const MISSED_REASON: &str = "Job missed deferred execution time";

/// A job's deferral, from its ad.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deferral {
    /// `DeferralTime`: when the job is to start (Unix seconds).
    pub time: i64,
    /// `DeferralWindow`: how late it may still start (seconds; 0 when not set).
    pub window: i64,
    /// `DeferralPrepTime`: how early it may be matched (seconds; 0 when not set).
    pub prep: i64,
}

/// The job's deferral: `None` when it has no `DeferralTime`, `Some(Err)` when the time does
/// not evaluate to a positive number (the starter's "Invalid deferred execution time").
pub fn of(ad: &ClassAd) -> Option<Result<Deferral, String>> {
    ad.lookup("DeferralTime")?;
    let secs = |attr: &str| ad.eval_attr(attr).as_number().map(|n| n as i64);
    let d = match secs("DeferralTime") {
        Some(t) if t > 0 => Deferral {
            time: t,
            window: secs("DeferralWindow").unwrap_or(0).max(0),
            prep: secs("DeferralPrepTime").unwrap_or(0).max(0),
        },
        Some(t) => return Some(Err(format!("Invalid execution time '{t}'"))),
        None => return Some(Err("Invalid deferred execution time".into())),
    };
    Some(Ok(d))
}

/// Whether the job may be offered as demand (and taken by a claim) at `now`: it has no
/// deferral, or its time is within its preparation time and its window has not passed.
/// A crontab job still waiting for its first `DeferralTime` is not offered.
pub fn offered(ad: &ClassAd, now: i64) -> bool {
    match of(ad) {
        None => !crontab::needs_crontab(ad),
        Some(Ok(d)) => now >= d.time - d.prep && now - d.time <= d.window,
        Some(Err(_)) => false,
    }
}

/// What the access point does with a bound job it is about to activate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Start {
    /// Start it now.
    Now,
    /// Wait this many seconds first (its `DeferralTime` has not come).
    Wait(u64),
    /// It missed its time: hold it with [`MISSED_REASON`]; the detail is for the log.
    Missed(String),
}

/// Whether job `id` starts at `now` (the starter's `jobWaitUntilExecuteTime`): before its
/// `DeferralTime` it waits; more than `DeferralWindow` seconds after, it missed it.
pub fn at_start(id: JobId, ad: &ClassAd, now: i64) -> Start {
    match of(ad) {
        None => Start::Now,
        Some(Err(e)) => Start::Missed(format!("{e} for Job {id}.")),
        Some(Ok(d)) if now < d.time => Start::Wait((d.time - now) as u64),
        Some(Ok(d)) if now - d.time > d.window => {
            Start::Missed(format!("Job {id} missed its execution time."))
        }
        Some(Ok(_)) => Start::Now,
    }
}

/// Whether an idle job that is not a crontab job has missed its window at `now` and is to be
/// held (a crontab job gets its next time instead, see [`crontab::plan`]).
pub fn missed_while_idle(ad: &ClassAd, now: i64) -> bool {
    if crontab::needs_crontab(ad) {
        return false;
    }
    match of(ad) {
        None => false,
        Some(Ok(d)) => now - d.time > d.window,
        Some(Err(_)) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad(text: &str) -> ClassAd {
        classad::parse_ad(text).unwrap()
    }

    const ID: JobId = JobId {
        cluster: 3,
        proc: 1,
    };

    #[test]
    fn a_job_without_deferral_is_always_offered_and_starts_at_once() {
        let j = ad("JobStatus = 1");
        assert!(offered(&j, 0));
        assert_eq!(at_start(ID, &j, 0), Start::Now);
        assert!(!missed_while_idle(&j, i64::MAX));
    }

    #[test]
    fn a_deferred_job_is_offered_from_its_prep_time_to_the_end_of_its_window() {
        let j = ad("DeferralTime = 1000\nDeferralWindow = 120\nDeferralPrepTime = 60");
        assert!(!offered(&j, 939));
        assert!(offered(&j, 940));
        assert!(offered(&j, 1120));
        assert!(!offered(&j, 1121));
        assert!(!missed_while_idle(&j, 1120));
        assert!(missed_while_idle(&j, 1121));
        // The seed's `deferral_time = (QDate + 60)`.
        let q = ad("QDate = 500\nDeferralTime = (QDate + 60)\nDeferralPrepTime = 0");
        assert_eq!(
            of(&q),
            Some(Ok(Deferral {
                time: 560,
                window: 0,
                prep: 0
            }))
        );
        assert!(!offered(&q, 559) && offered(&q, 560) && !offered(&q, 561));
    }

    #[test]
    fn a_bound_job_waits_for_its_time_and_is_held_when_late() {
        let j = ad("DeferralTime = 1000\nDeferralWindow = 120");
        assert_eq!(at_start(ID, &j, 940), Start::Wait(60));
        assert_eq!(at_start(ID, &j, 1000), Start::Now);
        // The seed: 45 seconds late with a 120 second window still starts.
        assert_eq!(at_start(ID, &j, 1045), Start::Now);
        assert_eq!(at_start(ID, &j, 1120), Start::Now);
        assert_eq!(
            at_start(ID, &j, 1121),
            Start::Missed("Job 3.1 missed its execution time.".into())
        );
        let no_window = ad("DeferralTime = 1000");
        assert!(matches!(at_start(ID, &no_window, 1001), Start::Missed(_)));
    }

    #[test]
    fn a_bad_deferral_time_is_never_started() {
        for text in [
            "DeferralTime = \"soon\"",
            "DeferralTime = -5",
            "DeferralTime = Nope",
        ] {
            let j = ad(text);
            assert!(!offered(&j, 0), "{text}");
            assert!(matches!(at_start(ID, &j, 0), Start::Missed(_)), "{text}");
            assert!(missed_while_idle(&j, 0), "{text}");
        }
    }

    #[test]
    fn a_crontab_job_waits_for_its_first_time_and_is_rescheduled_not_held() {
        let j = ad("CronMinute = \"0\"");
        assert!(!offered(&j, 0));
        assert!(!missed_while_idle(&j, 0));
        let j = ad("CronMinute = \"0\"\nDeferralTime = 3600");
        assert!(offered(&j, 3600));
        assert!(!missed_while_idle(&j, 9999));
    }
}

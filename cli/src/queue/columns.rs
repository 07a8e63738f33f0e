//! The cells condor_q and condor_history print for one job, each a pure function of the job
//! ad and [`Clock`]: HTCondor's print-format renderers (`src/condor_utils/print_format_tables.cpp`:
//! `QDATE`, `JOB_STATUS`, `JOB_DESCRIPTION`, `MEMORY_USAGE`; `src/condor_q.V6/queue.cpp`:
//! `CPU_TIME` through `job_time`, `OWNER`, `REMOTE_HOST`), checked against condor_q 23.9.6's
//! output on the same ads (`cli/tests/fixtures/queue/`).
use chrono::{DateTime, Local, TimeZone, Utc};
use classad::{ClassAd, Value};

/// What the renderers need besides the ad: the time to count run times to when an ad has no
/// `ServerTime` (the access point's clock at the query), and whether dates print in local time
/// (as HTCondor does) or in UTC (the tests, so that they do not depend on the machine's zone).
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// Seconds since the epoch.
    pub now: i64,
    /// Print dates in the local time zone (else UTC).
    pub local: bool,
}

impl Clock {
    /// Formats `t` (seconds since the epoch) with a strftime pattern in the clock's zone.
    pub fn format(&self, t: i64, pattern: &str) -> String {
        let Some(utc) = DateTime::<Utc>::from_timestamp(t, 0) else {
            return "??".into();
        };
        if self.local {
            Local
                .from_utc_datetime(&utc.naive_utc())
                .format(pattern)
                .to_string()
        } else {
            utc.format(pattern).to_string()
        }
    }
}

/// An integer attribute (a real is truncated, as `LookupInteger` does).
pub fn int(ad: &ClassAd, attr: &str) -> Option<i64> {
    match ad.eval_attr(attr) {
        Value::Int(i) => Some(i),
        Value::Real(r) => Some(r as i64),
        Value::Bool(b) => Some(b as i64),
        _ => None,
    }
}

/// A number attribute, as `LookupFloat` reads it.
pub fn float(ad: &ClassAd, attr: &str) -> Option<f64> {
    match ad.eval_attr(attr) {
        Value::Int(i) => Some(i as f64),
        Value::Real(r) => Some(r),
        _ => None,
    }
}

/// A string attribute.
pub fn string(ad: &ClassAd, attr: &str) -> Option<String> {
    match ad.eval_attr(attr) {
        Value::Str(s) => Some(s.to_string()),
        _ => None,
    }
}

/// `JobStatus` values (HTCondor's `condor_job_status`).
pub mod status {
    /// Waiting for a slot.
    pub const IDLE: i64 = 1;
    /// Running on a slot.
    pub const RUNNING: i64 = 2;
    /// Removed, on its way out of the queue.
    pub const REMOVED: i64 = 3;
    /// Completed, on its way out of the queue.
    pub const COMPLETED: i64 = 4;
    /// On hold.
    pub const HELD: i64 = 5;
    /// Running, its output coming back.
    pub const TRANSFERRING_OUTPUT: i64 = 6;
    /// Running but suspended.
    pub const SUSPENDED: i64 = 7;
}

/// The cluster.proc id of a job, `-1` for a missing proc (a cluster ad).
pub fn job_id(ad: &ClassAd) -> (i64, i64) {
    (
        int(ad, "ClusterId").unwrap_or(0),
        int(ad, "ProcId").unwrap_or(-1),
    )
}

/// `QDATE`: `mm/dd HH:MM`; `None` without the attribute.
pub fn qdate(ad: &ClassAd, attr: &str, clock: &Clock) -> Option<String> {
    int(ad, attr).map(|t| clock.format(t, "%m/%d %H:%M"))
}

/// `%T`: a duration as `d+hh:mm:ss`, as condor_status prints it too.
pub use crate::status::duration;

/// `CPU_TIME` in condor_q's default and `-run` views: the wall time of the current run
/// (`job_time` with `current_run`): `ServerTime - ShadowBday` for a running, suspended or
/// transferring job, `LastRemoteWallClockTime` for an idle or held one, else 0. `None` (an
/// empty cell) when the ad has no `RemoteUserCpu`, as condor_q does.
pub fn run_time(ad: &ClassAd, clock: &Clock) -> Option<String> {
    float(ad, "RemoteUserCpu")?;
    let st = int(ad, "JobStatus").unwrap_or(0);
    let now = int(ad, "ServerTime").unwrap_or(clock.now);
    let bday = int(ad, "ShadowBday").unwrap_or(0);
    let secs = match st {
        status::RUNNING | status::TRANSFERRING_OUTPUT | status::SUSPENDED if bday != 0 => {
            now - bday
        }
        status::IDLE | status::HELD => float(ad, "LastRemoteWallClockTime").unwrap_or(0.0) as i64,
        _ => 0,
    };
    Some(duration(secs))
}

/// `JOB_STATUS`: the status letter and a second character: `<` while input transfers, ` >`
/// while output does (`q` when queued for transfer).
pub fn status_char(ad: &ClassAd) -> String {
    let st = int(ad, "JobStatus").unwrap_or(0);
    let mut c = [
        match st {
            status::IDLE => 'I',
            status::RUNNING => 'R',
            status::REMOVED => 'X',
            status::COMPLETED => 'C',
            status::HELD => 'H',
            status::TRANSFERRING_OUTPUT => '>',
            status::SUSPENDED => 'S',
            _ => '?',
        },
        ' ',
    ];
    let flag = |a: &str| matches!(ad.eval_attr(a), Value::Bool(true));
    let queued = flag("TransferQueued");
    if flag("TransferringInput") {
        c = ['<', if queued { 'q' } else { ' ' }];
    }
    if flag("TransferringOutput") || st == status::TRANSFERRING_OUTPUT {
        c = [if queued { 'q' } else { ' ' }, '>'];
    }
    c.iter().collect()
}

/// The job's arguments for display: `Args` (old syntax) or `Arguments` (new syntax).
fn args(ad: &ClassAd) -> Option<String> {
    string(ad, "Args")
        .or_else(|| string(ad, "Arguments"))
        .filter(|a| !a.is_empty())
}

/// `JOB_DESCRIPTION` in condor_q: `(JobDescription)` when there is one, else the base name
/// of `Cmd` and the arguments.
pub fn description(ad: &ClassAd) -> Option<String> {
    let cmd = string(ad, "Cmd")?;
    if let Some(d) = string(ad, "MATCH_EXP_JobDescription")
        .or_else(|| string(ad, "JobDescription"))
        .filter(|d| !d.is_empty())
    {
        return Some(format!("({d})"));
    }
    let base = cmd.rsplit('/').next().unwrap_or(&cmd).to_string();
    Some(match args(ad) {
        Some(a) => format!("{base} {a}"),
        None => base,
    })
}

/// The command as condor_history 23.9 prints it: the full `Cmd` and the arguments.
pub fn command_line(ad: &ClassAd) -> Option<String> {
    let cmd = string(ad, "Cmd")?;
    Some(match args(ad) {
        Some(a) => format!("{cmd} {a}"),
        None => cmd,
    })
}

/// `MEMORY_USAGE`: `MemoryUsage` (MB), else `ImageSize` (KB) in MB, with one decimal.
pub fn memory_usage(ad: &ClassAd) -> Option<String> {
    let mb = match int(ad, "MemoryUsage") {
        Some(m) => m as f64,
        None => int(ad, "ImageSize")? as f64 / 1024.0,
    };
    Some(format!("{mb:.1}"))
}

/// `REMOTE_HOST`: where the job runs (`RemoteHost`).
pub fn remote_host(ad: &ClassAd) -> Option<String> {
    string(ad, "RemoteHost")
}

/// `s` cut to at most `w` characters.
pub fn truncate(s: &str, w: usize) -> String {
    s.chars().take(w).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad(text: &str) -> ClassAd {
        classad::parse_old_ads(text).unwrap().remove(0)
    }

    const UTC: Clock = Clock {
        now: 1_795_677_713,
        local: false,
    };

    #[test]
    fn run_time_counts_the_current_run_from_the_server_time() {
        let running = ad("JobStatus = 2\nRemoteUserCpu = 3.0\nShadowBday = 1000\nServerTime = 4725\nRemoteWallClockTime = 500.0\n");
        assert_eq!(run_time(&running, &UTC).as_deref(), Some("0+01:02:05"));
        let idle = ad("JobStatus = 1\nRemoteUserCpu = 0.0\nRemoteWallClockTime = 500.0\n");
        assert_eq!(run_time(&idle, &UTC).as_deref(), Some("0+00:00:00"));
        assert_eq!(run_time(&ad("JobStatus = 1\n"), &UTC), None);
    }

    #[test]
    fn status_letters_and_transfer_marks() {
        assert_eq!(status_char(&ad("JobStatus = 5\n")), "H ");
        assert_eq!(status_char(&ad("JobStatus = 6\n")), " >");
        assert_eq!(
            status_char(&ad("JobStatus = 2\nTransferringInput = true\n")),
            "< "
        );
    }

    #[test]
    fn description_is_the_base_name_and_arguments() {
        let a = ad("Cmd = \"/usr/bin/python3\"\nArguments = \"x.py -v\"\n");
        assert_eq!(description(&a).as_deref(), Some("python3 x.py -v"));
        assert_eq!(
            command_line(&a).as_deref(),
            Some("/usr/bin/python3 x.py -v")
        );
        let d = ad("Cmd = \"/bin/true\"\nJobDescription = \"nightly\"\n");
        assert_eq!(description(&d).as_deref(), Some("(nightly)"));
    }

    #[test]
    fn memory_prefers_memory_usage_over_image_size() {
        assert_eq!(
            memory_usage(&ad("ImageSize = 45\n")).as_deref(),
            Some("0.0")
        );
        assert_eq!(
            memory_usage(&ad("ImageSize = 45\nMemoryUsage = 1500\n")).as_deref(),
            Some("1500.0")
        );
    }
}

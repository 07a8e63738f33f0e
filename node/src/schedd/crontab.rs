//! A job's crontab schedule, pure: the `Cron*` attributes condor_submit copies from the
//! `cron_*` commands, parsed as HTCondor's schedd parses them, and the next time the schedule
//! names after a given moment, which becomes the job's `DeferralTime`
//! (src/condor_utils/condor_crontab.cpp, `CronTab::expandParameter` and `CronTab::nextRunTime`).
//!
//! Each field is a comma-separated list of `*`, `N`, `A-B`, each optionally `/STEP`. As in
//! HTCondor: a step keeps the values divisible by it (`10-30/5` is 10,15,..,30; `*/3` of
//! hours is 0,3,..,21), a range is clipped to the field's bounds, Sunday is 0 or 7, a field
//! left out is `*`, and the time is rounded up to the next whole minute first (a run at
//! the current minute would already be late). The day is the day of the month or the day of
//! the week when both are restricted; when one is `*`, only the other counts. Times are the
//! access point's local time, as the schedd's (`localtime`/`mktime`).
//!
//! Where HTCondor's code is accidental Aerie refuses instead: a single value outside the
//! field's bounds (HTCondor silently takes the whole range, so `cron_minute = 75` would run
//! every minute) and a schedule that names no date at all (`cron_month = 2` with
//! `cron_day_of_month = 30`: HTCondor's search never ends) are invalid; with the day of the
//! month `*` and the day of the week restricted, HTCondor's candidate days start with 31
//! zeros (its source says "this isn't quite right"), which can pick the last day of a month
//! that is not one of the named weekdays; Aerie takes only the named weekdays.
use chrono::{Datelike, Duration, LocalResult, NaiveDate, NaiveDateTime, TimeZone, Timelike};
use classad::{ClassAd, Value};

/// The job attributes of a crontab schedule, in HTCondor's field order (minutes first).
pub const ATTRS: [&str; 5] = [
    "CronMinute",
    "CronHour",
    "CronDayOfMonth",
    "CronMonth",
    "CronDayOfWeek",
];

/// The bounds of each field, in [`ATTRS`] order.
const BOUNDS: [(u32, u32); 5] = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)];

/// `CONDOR_HOLD_CODE::InvalidCronSettings` (src/condor_utils/condor_holdcodes.h).
pub const INVALID_CRON_SETTINGS: i64 = 25;

/// How many days ahead a schedule is searched: enough for a 29th of February that must also
/// be a given weekday (28 years).
const SEARCH_DAYS: i64 = 366 * 29;

/// The job has a crontab schedule: one of [`ATTRS`] is set (`CronTab::needsCronTab`).
pub fn needs_crontab(ad: &ClassAd) -> bool {
    ATTRS.iter().any(|a| ad.contains(a))
}

/// A parsed schedule: the values each field allows, ascending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CronTab {
    minutes: Vec<u32>,
    hours: Vec<u32>,
    days_of_month: Vec<u32>,
    months: Vec<u32>,
    /// Empty when `*` (see the module doc).
    days_of_week: Vec<u32>,
}

impl CronTab {
    /// The schedule of a job ad; a field not set is `*`. Errors read as HTCondor's
    /// ("Invalid parameter value '...' for CronMinute"), every bad field named.
    pub fn from_ad(ad: &ClassAd) -> Result<CronTab, String> {
        let fields = ATTRS.map(|a| match ad.eval_attr(a) {
            Value::Str(s) => Some(s.to_string()),
            Value::Int(i) => Some(i.to_string()),
            Value::Undefined => None,
            other => Some(other.to_string()),
        });
        CronTab::parse(fields.each_ref().map(|f| f.as_deref()))
    }

    /// The schedule of the five fields (minute, hour, day of month, month, day of week);
    /// `None` is `*`.
    pub fn parse(fields: [Option<&str>; 5]) -> Result<CronTab, String> {
        let mut errors = Vec::new();
        let mut lists: [Vec<u32>; 5] = Default::default();
        for (i, f) in fields.iter().enumerate() {
            match expand(f.unwrap_or("*"), ATTRS[i], BOUNDS[i], i == 4) {
                Ok(v) => lists[i] = v,
                Err(e) => errors.push(e),
            }
        }
        if !errors.is_empty() {
            return Err(errors.join("; "));
        }
        let [minutes, hours, days_of_month, months, days_of_week] = lists;
        Ok(CronTab {
            minutes,
            hours,
            days_of_month,
            months,
            days_of_week,
        })
    }

    /// Whether the schedule runs on `date`.
    fn runs_on(&self, date: NaiveDate) -> bool {
        if !self.months.contains(&date.month()) {
            return false;
        }
        let dom = self.days_of_month.contains(&date.day());
        let dow = self
            .days_of_week
            .contains(&date.weekday().num_days_from_sunday());
        let dom_wild = self.days_of_month.len() == 31;
        let dow_wild = self.days_of_week.is_empty() || self.days_of_week.len() == 7;
        match (dom_wild, dow_wild) {
            (true, true) => true,
            (true, false) => dow,
            (false, _) => dom || dow,
        }
    }

    /// The first run time strictly after the minute of `now` (Unix seconds), in the time zone
    /// `tz`; `None` when the schedule names no date in the next 28 years. A result before
    /// the rounded time (a clock turned back) is `now + 120`, as HTCondor's.
    pub fn next_run_time<Tz: TimeZone>(&self, now: i64, tz: &Tz) -> Option<i64> {
        let from = now + (60 - now.rem_euclid(60));
        let start = tz.timestamp_opt(from, 0).single()?.naive_local();
        let mut date = start.date();
        for day in 0..SEARCH_DAYS {
            if self.runs_on(date) {
                for &h in &self.hours {
                    for &m in &self.minutes {
                        if day == 0 && (h, m) < (start.hour(), start.minute()) {
                            continue;
                        }
                        let at =
                            NaiveDateTime::new(date, chrono::NaiveTime::from_hms_opt(h, m, 0)?);
                        let t = match tz.from_local_datetime(&at) {
                            LocalResult::Single(t) => t.timestamp(),
                            LocalResult::Ambiguous(a, _) => a.timestamp(),
                            // Skipped by a daylight-saving change: the next candidate.
                            LocalResult::None => continue,
                        };
                        return Some(if t < from { now + 120 } else { t });
                    }
                }
            }
            date = date.checked_add_signed(Duration::days(1))?;
        }
        None
    }
}

/// One field's allowed values, ascending (`CronTab::expandParameter`).
fn expand(param: &str, attr: &str, (min, max): (u32, u32), dow: bool) -> Result<Vec<u32>, String> {
    let bad = || format!("Invalid parameter value '{param}' for {attr}");
    if param
        .chars()
        .any(|c| !(c.is_ascii_digit() || matches!(c, ',' | '-' | '/' | '*' | ' ')))
    {
        return Err(bad());
    }
    let text: String = param.chars().filter(|c| *c != ' ').collect();
    let mut out = Vec::new();
    for token in text.split(',').filter(|t| !t.is_empty()) {
        let (body, step) = match token.split_once('/') {
            Some((b, s)) => match s.parse::<u32>() {
                Ok(s) if s > 0 => (b, s),
                _ => return Err(bad()),
            },
            None => (token, 1),
        };
        let (lo, hi) = if let Some((a, b)) = body.split_once('-') {
            let num = |s: &str| s.parse::<u32>().map_err(|_| bad());
            (num(a)?.max(min), num(b)?.min(max))
        } else if body == "*" {
            if dow {
                // `*` of the day of the week adds nothing (see the module doc).
                continue;
            }
            (min, max)
        } else {
            match body.parse::<u32>() {
                Ok(v) if (min..=max).contains(&v) => (v, v),
                _ => return Err(format!("{}: {body} is outside {min}-{max}", bad())),
            }
        };
        for v in lo..=hi {
            let v = if dow && v == 7 { 0 } else { v };
            if v % step == 0 && !out.contains(&v) {
                out.push(v);
            }
        }
    }
    out.sort_unstable();
    if out.is_empty() && !dow {
        return Err(format!("Invalid cron attribute: {param}"));
    }
    Ok(out)
}

/// What the access point does with an idle job's schedule (`Scheduler::calculateCronTabSchedule`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Not a crontab job, or its `DeferralTime` still stands.
    Keep,
    /// Its next run: the new `DeferralTime`.
    Defer(i64),
    /// The schedule is invalid: hold the job with this `HoldReason` (code
    /// [`INVALID_CRON_SETTINGS`]); a job that cannot say when to run must never run.
    Invalid(String),
}

/// The plan for idle job `ad` at `now`: a new `DeferralTime` when it has none, when `force`
/// (it was just queued, re-queued after a run, or released), or when the current one's
/// window (`DeferralWindow`) has passed.
pub fn plan<Tz: TimeZone>(ad: &ClassAd, force: bool, now: i64, tz: &Tz) -> Plan {
    if !needs_crontab(ad) {
        return Plan::Keep;
    }
    let tab = match CronTab::from_ad(ad) {
        Ok(t) => t,
        Err(e) => return Plan::Invalid(format!("Invalid cron schedule parameters: {e}")),
    };
    let due = match ad.eval_attr("DeferralTime").as_int() {
        Some(t) if !force => {
            let window = ad.eval_attr("DeferralWindow").as_int().unwrap_or(0);
            now > t + window
        }
        _ => true,
    };
    if !due {
        return Plan::Keep;
    }
    match tab.next_run_time(now, tz) {
        Some(t) => Plan::Defer(t),
        None => Plan::Invalid(
            "Invalid cron schedule parameters: the schedule names no date in the next 28 years"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{FixedOffset, Utc};

    fn tab(f: [Option<&str>; 5]) -> CronTab {
        CronTab::parse(f).unwrap()
    }

    fn at(s: &str) -> i64 {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S")
            .unwrap()
            .and_utc()
            .timestamp()
    }

    fn next(t: &CronTab, now: &str) -> String {
        let n = t.next_run_time(at(now), &Utc).unwrap();
        chrono::DateTime::from_timestamp(n, 0)
            .unwrap()
            .format("%Y-%m-%d %H:%M:%S %a")
            .to_string()
    }

    #[test]
    fn fields_expand_as_the_seed_says() {
        let t = tab([Some("15,20,25,30"), Some("0-3,9-12,15"), None, None, None]);
        assert_eq!(t.minutes, [15, 20, 25, 30]);
        assert_eq!(t.hours, [0, 1, 2, 3, 9, 10, 11, 12, 15]);
        assert_eq!(t.days_of_month.len(), 31);
        assert_eq!(t.months, (1..=12).collect::<Vec<_>>());
        let t = tab([Some("10-30/5"), Some("*/3"), None, None, Some("7,1")]);
        assert_eq!(t.minutes, [10, 15, 20, 25, 30]);
        assert_eq!(t.hours, [0, 3, 6, 9, 12, 15, 18, 21]);
        // Sunday is 0 or 7.
        assert_eq!(t.days_of_week, [0, 1]);
        let t = tab([Some("*/10,*/6"), Some("0 - 4"), None, None, Some("*")]);
        assert_eq!(
            t.minutes,
            [0, 6, 10, 12, 18, 20, 24, 30, 36, 40, 42, 48, 50, 54]
        );
        assert_eq!(t.hours, [0, 1, 2, 3, 4]);
        assert!(t.days_of_week.is_empty());
    }

    #[test]
    fn bad_fields_are_named_as_htcondor_names_them() {
        let e = CronTab::parse([Some("1;2"), None, None, Some("13"), None]).unwrap_err();
        assert!(
            e.contains("Invalid parameter value '1;2' for CronMinute"),
            "{e}"
        );
        assert!(e.contains("for CronMonth"), "{e}");
        let e = CronTab::parse([Some("*/0"), None, None, None, None]).unwrap_err();
        assert!(e.contains("'*/0' for CronMinute"), "{e}");
        let e = CronTab::parse([None, Some("30-40"), None, None, None]).unwrap_err();
        assert_eq!(e, "Invalid cron attribute: 30-40");
    }

    #[test]
    fn the_seed_examples_run_when_it_says() {
        // "Run 23 minutes after every two hours, every day of the week."
        let t = tab([Some("23"), Some("0-23/2"), Some("*"), Some("*"), Some("*")]);
        assert_eq!(next(&t, "2026-11-26 15:50:00"), "2026-11-26 16:23:00 Thu");
        assert_eq!(next(&t, "2026-11-26 16:23:00"), "2026-11-26 18:23:00 Thu");
        assert_eq!(next(&t, "2026-11-26 22:23:00"), "2026-11-27 00:23:00 Fri");
        // "10:30pm [20:30] on each of May 10th to May 20th, as well as every remaining
        // Monday [day 2: Tuesday] within the month of May": the day of the month or of
        // the week.
        let t = tab([Some("30"), Some("20"), Some("10-20"), Some("5"), Some("2")]);
        assert_eq!(next(&t, "2026-01-01 00:00:00"), "2026-05-05 20:30:00 Tue");
        assert_eq!(next(&t, "2026-05-05 20:30:00"), "2026-05-10 20:30:00 Sun");
        assert_eq!(next(&t, "2026-05-20 20:30:00"), "2026-05-26 20:30:00 Tue");
        assert_eq!(next(&t, "2026-05-26 20:30:00"), "2027-05-04 20:30:00 Tue");
        // "Every 10 minutes and every 6 minutes before noon on January 18th."
        let t = tab([
            Some("*/10,*/6"),
            Some("0-11"),
            Some("18"),
            Some("1"),
            Some("*"),
        ]);
        assert_eq!(next(&t, "2026-11-26 15:50:00"), "2027-01-18 00:00:00 Mon");
        assert_eq!(next(&t, "2027-01-18 00:00:00"), "2027-01-18 00:06:00 Mon");
        assert_eq!(next(&t, "2027-01-18 11:54:00"), "2028-01-18 00:00:00 Tue");
        // "The top of every hour": submitted at 9:30, the next is 10:00.
        let t = tab([Some("0"), Some("*"), None, None, None]);
        assert_eq!(next(&t, "2026-11-26 09:30:00"), "2026-11-26 10:00:00 Thu");
    }

    #[test]
    fn the_time_is_rounded_up_to_the_next_minute_first() {
        let every = tab([None; 5]);
        assert_eq!(
            next(&every, "2026-11-26 09:30:00"),
            "2026-11-26 09:31:00 Thu"
        );
        assert_eq!(
            next(&every, "2026-11-26 09:30:59"),
            "2026-11-26 09:31:00 Thu"
        );
        // Only weekdays, the day of the month left out.
        let t = tab([Some("0"), Some("8"), None, None, Some("1-5")]);
        assert_eq!(next(&t, "2026-11-27 09:00:00"), "2026-11-30 08:00:00 Mon");
        // The 31st only in months that have one; the 29th of February of a leap year.
        let t = tab([Some("0"), Some("0"), Some("31"), None, None]);
        assert_eq!(next(&t, "2026-04-01 00:00:00"), "2026-05-31 00:00:00 Sun");
        let t = tab([Some("0"), Some("0"), Some("29"), Some("2"), None]);
        assert_eq!(next(&t, "2026-04-01 00:00:00"), "2028-02-29 00:00:00 Tue");
        let never = tab([None, None, Some("30"), Some("2"), None]);
        assert_eq!(never.next_run_time(at("2026-01-01 00:00:00"), &Utc), None);
    }

    #[test]
    fn the_schedule_is_in_the_access_points_local_time() {
        let t = tab([Some("0"), Some("10"), None, None, None]);
        let plus2 = FixedOffset::east_opt(2 * 3600).unwrap();
        // 09:30 UTC is 11:30 at +02:00: the next 10:00 there is tomorrow, 08:00 UTC.
        let n = t.next_run_time(at("2026-11-26 09:30:00"), &plus2).unwrap();
        assert_eq!(n, at("2026-11-27 08:00:00"));
    }

    fn ad(text: &str) -> ClassAd {
        classad::parse_ad(text).unwrap()
    }

    #[test]
    fn plans_follow_the_schedds_rules() {
        let now = at("2026-11-26 09:30:00");
        assert_eq!(plan(&ad("JobStatus = 1"), true, now, &Utc), Plan::Keep);
        let job = ad("CronMinute = \"0\"\nDeferralWindow = 60");
        let ten = at("2026-11-26 10:00:00");
        // No DeferralTime yet: computed.
        assert_eq!(plan(&job, false, now, &Utc), Plan::Defer(ten));
        let mut set = job.clone();
        set.insert_int("DeferralTime", ten);
        // Still to come, or within its window: kept, unless forced.
        assert_eq!(plan(&set, false, now, &Utc), Plan::Keep);
        assert_eq!(plan(&set, false, ten + 60, &Utc), Plan::Keep);
        assert_eq!(
            plan(&set, true, ten + 5, &Utc),
            Plan::Defer(at("2026-11-26 11:00:00"))
        );
        // Its window passed: the next one.
        assert_eq!(
            plan(&set, false, ten + 61, &Utc),
            Plan::Defer(at("2026-11-26 11:00:00"))
        );
        let bad = ad("CronHour = \"25\"");
        match plan(&bad, false, now, &Utc) {
            Plan::Invalid(r) => assert!(
                r.starts_with(
                    "Invalid cron schedule parameters: Invalid parameter value '25' for CronHour"
                ),
                "{r}"
            ),
            p => panic!("{p:?}"),
        }
    }
}

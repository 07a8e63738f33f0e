//! Time functions: `time`, `currentTime`, `timeZoneOffset`, `dayTime`, the `getXxx` field
//! readers, `splitTime`, `formatTime` (libclassad's `epochTime`, `currentTime`,
//! `timeZoneOffset`, `dayTime`, `getField`, `splitTime` and `formatTime` in
//! src/classad/fnCall.cpp), and `interval`, which fnCall.cpp lists with the old-ClassAd
//! compatibility functions but which formats a duration. The calendar arithmetic, time-string
//! parsing and strftime they rest on are in [`calendar`].
pub mod calendar;

pub use calendar::*;

use super::c_number::c_double_to_i32;
use super::conversion::to_int_value;
use super::{Args, Builtin as B};
use crate::value::Value;
use std::sync::Arc;

/// `time()`: seconds since the epoch.
pub(super) fn epoch_time(a: &Args) -> Value {
    if !a.is_empty() {
        return Value::Error;
    }
    Value::Int(now_secs())
}

/// `currentTime()`: now, as an absolute time in the local zone.
pub(super) fn current_time(a: &Args) -> Value {
    if !a.is_empty() {
        return Value::Error;
    }
    let s = now_secs();
    Value::AbsTime {
        secs: s,
        offset_secs: local_offset(s),
    }
}

/// `timeZoneOffset()`: the local zone's offset from UTC, as a relative time.
pub(super) fn time_zone_offset(a: &Args) -> Value {
    if !a.is_empty() {
        return Value::Error;
    }
    Value::RelTime(local_offset(now_secs()) as f64)
}

/// `dayTime()`: seconds since local midnight, as a relative time.
pub(super) fn day_time(a: &Args) -> Value {
    if !a.is_empty() {
        return Value::Error;
    }
    let s = now_secs() + local_offset(0) as i64;
    Value::RelTime(s.rem_euclid(86_400) as f64)
}

/// `getYear(t)` ... `getSeconds(t)`: a calendar field of an absolute time, or days, hours,
/// minutes, seconds of a relative one.
pub(super) fn get_field(f: B, a: &Args) -> Value {
    if a.len() != 1 {
        return Value::Error;
    }
    match a.eval(0) {
        Value::AbsTime { secs, .. } => {
            let tm = gmtime(secs + local_offset(secs) as i64);
            Value::Int(match f {
                B::GetYear => tm.year,
                B::GetMonth => tm.mon,
                B::GetDayOfYear => tm.yday,
                B::GetDayOfMonth => tm.mday,
                B::GetDayOfWeek => tm.wday,
                B::GetHours => tm.hour,
                B::GetMinutes => tm.min,
                B::GetSeconds => tm.sec,
                _ => return Value::Error,
            })
        }
        Value::RelTime(r) => {
            // libclassad reads the seconds through a C int.
            let r = c_double_to_i32(r) as i64;
            Value::Int(match f {
                B::GetDays => r / 86_400,
                B::GetHours => (r % 86_400) / 3600,
                B::GetMinutes => (r % 3600) / 60,
                B::GetSeconds => r % 60,
                _ => return Value::Error,
            })
        }
        _ => Value::Error,
    }
}

/// `splitTime(t)`: an ad of the fields of an absolute or relative time.
pub(super) fn split_time(a: &Args) -> Value {
    if a.len() != 1 {
        return Value::Error;
    }
    match a.eval(0) {
        Value::Undefined => Value::Undefined,
        Value::Ad(_) => Value::Error,
        v => split_time_ad(&v)
            .map(|ad| Value::Ad(Arc::new(ad)))
            .unwrap_or(Value::Error),
    }
}

/// libclassad's doSplitTime: ints and reals are read as C ints (32 bits).
fn split_time_ad(v: &Value) -> Option<crate::ClassAd> {
    let mut ad = crate::ClassAd::new();
    match v {
        Value::Int(i) => {
            let secs = *i as i32 as i64;
            return split_time_ad(&Value::AbsTime {
                secs,
                offset_secs: local_offset(secs),
            });
        }
        Value::Real(r) => {
            let secs = c_double_to_i32(*r) as i64;
            return split_time_ad(&Value::AbsTime {
                secs,
                offset_secs: local_offset(secs),
            });
        }
        Value::AbsTime { secs, offset_secs } => {
            let tm = gmtime(secs + *offset_secs as i64);
            ad.insert_str("Type", "AbsoluteTime");
            ad.insert_int("Year", tm.year);
            ad.insert_int("Month", tm.mon);
            ad.insert_int("Day", tm.mday);
            ad.insert_int("Hours", tm.hour);
            ad.insert_int("Minutes", tm.min);
            ad.insert_int("Seconds", tm.sec);
            ad.insert_int("Offset", *offset_secs as i64);
        }
        Value::RelTime(r) => {
            let mut r = *r;
            let neg = r < 0.0;
            if neg {
                r = -r;
            }
            let total = c_double_to_i32(r) as i64;
            let mut days = total / 86_400;
            let mut hrs = (total % 86_400) / 3600;
            let mut mins = (total % 3600) / 60;
            let mut secs = (total % 60) as f64 + (r - r.floor());
            if neg {
                if days > 0 {
                    days = -days;
                } else if hrs > 0 {
                    hrs = -hrs;
                } else if mins > 0 {
                    mins = -mins;
                } else {
                    secs = -secs;
                }
            }
            ad.insert_str("Type", "RelativeTime");
            ad.insert_int("Days", days);
            ad.insert_int("Hours", hrs);
            ad.insert_int("Minutes", mins);
            ad.insert_real("Seconds", secs);
        }
        Value::Ad(a) => return Some((**a).clone()),
        _ => return None,
    }
    Some(ad)
}

/// `formatTime([t[, format]])`: strftime of an absolute time (now by default; `%c` by default).
pub(super) fn format_time(a: &Args) -> Value {
    match a.len() {
        0 => {
            let now = now_secs();
            Value::string(strftime(&gmtime(now + local_offset(now) as i64), "%c"))
        }
        1 | 2 => {
            let t = a.eval(0);
            if matches!(t, Value::RelTime(_)) {
                return Value::Error;
            }
            let Some(split) = split_time_ad(&t) else {
                return Value::Error;
            };
            let field = |name: &str| -> Option<i64> {
                match split.eval_attr(name) {
                    Value::Int(i) => Some(i as i32 as i64),
                    _ => None,
                }
            };
            let mut tm = Tm {
                sec: field("Seconds").unwrap_or(0),
                min: field("Minutes").unwrap_or(0),
                hour: field("Hours").unwrap_or(0),
                mday: field("Day").unwrap_or(0),
                mon: field("Month").unwrap_or(1),
                year: field("Year").unwrap_or(1900),
                wday: 0,
                yday: 0,
            };
            let (wd, yd) = day_numbers(tm.year, tm.mon, tm.mday);
            tm.wday = wd;
            tm.yday = yd;
            let fmt = if a.len() == 2 {
                match a.eval(1) {
                    Value::Str(s) => s.to_string(),
                    _ => return Value::Error,
                }
            } else {
                "%c".to_string()
            };
            Value::string(strftime(&tm, &fmt))
        }
        _ => Value::Error,
    }
}

/// `interval(secs)`: `[days+]hh:mm:ss` with leading zero fields dropped.
pub(super) fn interval(a: &Args) -> Value {
    if a.len() != 1 {
        return Value::Error;
    }
    let Value::Int(t) = to_int_value(&a.eval(0)) else {
        return Value::Error;
    };
    let t = t as i32 as i64;
    let days = t / 86_400;
    let rem = t % 86_400;
    let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    let out = if days != 0 {
        format!("{}+{:02}:{:02}:{:02}", days, h.abs(), m.abs(), s.abs())
    } else if h != 0 {
        format!("{}:{:02}:{:02}", h, m.abs(), s.abs())
    } else if m != 0 {
        format!("{}:{:02}", m, s.abs())
    } else {
        format!("{}", s)
    };
    Value::string(out)
}

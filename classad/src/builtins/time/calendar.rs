//! Time helpers: parsing `absTime("...")`/`relTime("...")` strings, current time, calendar
//! splitting and strftime-style formatting (UTC is the local zone, as on the reference hosts).
use crate::format::civil_from_days;
use crate::value::Value;

/// Seconds since the Unix epoch, now (0 if the clock is before it).
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// The local timezone offset in seconds (the reference machines and ours run in UTC).
pub fn local_offset(_secs: i64) -> i32 {
    0
}

/// Days since 1970-01-01 of a proleptic Gregorian date (month 1-12, day 1-31).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 } as i64;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Broken-down time like C's struct tm (month 1-based here; any field may be out of range
/// when it comes from a user-supplied split-time ad).
pub struct Tm {
    /// The year itself (C's tm_year counts from 1900).
    pub year: i64,
    /// Month, 1-12 (C's tm_mon is 0-11).
    pub mon: i64,
    /// Day of the month, 1-31.
    pub mday: i64,
    /// Hours, 0-23.
    pub hour: i64,
    /// Minutes, 0-59.
    pub min: i64,
    /// Seconds, 0-60.
    pub sec: i64,
    /// Day of the week, 0 for Sunday.
    pub wday: i64,
    /// Day of the year, 0 for January 1st.
    pub yday: i64,
}

/// The UTC calendar fields of `t` seconds since the epoch, as C's gmtime.
pub fn gmtime(t: i64) -> Tm {
    let days = t.div_euclid(86_400);
    let rem = t.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let yday = days - days_from_civil(y, 1, 1);
    Tm {
        year: y,
        mon: m as i64,
        mday: d as i64,
        hour: rem / 3600,
        min: (rem / 60) % 60,
        sec: rem % 60,
        wday: (days + 4).rem_euclid(7),
        yday,
    }
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// libclassad's day_numbers(): weekday and day of year from a calendar date.
pub fn day_numbers(year: i64, month: i64, day: i64) -> (i64, i64) {
    let fixed = |y: i64, m: i64, d: i64| -> i64 {
        let adj = if m <= 2 {
            0
        } else if is_leap(y) {
            -1
        } else {
            -2
        };
        365 * (y - 1) + (y - 1) / 4 - (y - 1) / 100 + (y - 1) / 400 + (367 * m - 362) / 12 + adj + d
    };
    let f = fixed(year, month, day);
    (f % 7, f - fixed(year, 1, 1))
}

fn atoi(b: &[u8]) -> i64 {
    let mut v = 0i64;
    for &c in b {
        if !c.is_ascii_digit() {
            break;
        }
        v = v * 10 + (c - b'0') as i64;
    }
    v
}

/// mktime() in UTC: out-of-range fields are normalized (month 13 is January next year...).
pub fn timegm(year: i64, mon0: i64, mday: i64, hour: i64, min: i64, sec: i64) -> i64 {
    let y = year + mon0.div_euclid(12);
    let m = mon0.rem_euclid(12) as u32 + 1;
    (days_from_civil(y, m, 1) + mday - 1) * 86_400 + hour * 3600 + min * 60 + sec
}

/// The text `absTime("...")` accepts, with libclassad's lenient scan: a four-digit year, then
/// up to five two-digit fields separated by anything, then an optional zone `Z`, `+hhmm`,
/// `+hh:mm`. `None` when the text cannot be read (a parse error for a literal).
pub fn make_abs_time(text: &str) -> Option<Value> {
    let mut t: Vec<u8> = text.as_bytes().to_vec();
    let (mut tzhr, mut tzmin) = (0i64, 0i64);
    let mut has_offset = false;
    let len = t.len();
    let mut i = len as i64 - 1;
    while i >= 0 && t[i as usize].is_ascii_whitespace() {
        i -= 1;
    }
    let extract = |t: &mut Vec<u8>, hr: &mut i64, mn: &mut i64| -> bool {
        let l = t.len();
        if l < 5 {
            return false;
        }
        let o = &t[l - 5..];
        if (o[0] == b'+' || o[0] == b'-') && o[1..].iter().all(|c| c.is_ascii_digit()) {
            let h = atoi(&o[1..3]);
            let m = atoi(&o[3..5]);
            let neg = o[0] == b'-';
            *hr = if neg { -h } else { h };
            *mn = if neg { -m } else { m };
            t.truncate(l - 5);
            true
        } else {
            false
        }
    };
    if i > 0 && (t[i as usize] == b'z' || t[i as usize] == b'Z') {
        has_offset = true;
        t.remove(i as usize);
    } else if len > 5 && (t[len - 5] == b'+' || t[len - 5] == b'-') {
        has_offset = extract(&mut t, &mut tzhr, &mut tzmin);
    } else if len > 6 && (t[len - 6] == b'+' || t[len - 6] == b'-') && t[len - 3] == b':' {
        t.remove(len - 3);
        has_offset = extract(&mut t, &mut tzhr, &mut tzmin);
    }
    let len = t.len();
    let mut i = 0usize;
    let next_digit = |t: &[u8], i: &mut usize| {
        while *i < t.len() && !t[*i].is_ascii_digit() {
            *i += 1;
        }
    };
    next_digit(&t, &mut i);
    if i + 4 > len {
        return None;
    }
    let year = atoi(&t[i..i + 4]);
    i += 4;
    // month (1-based; absent = January as the zeroed struct tm has), mday (absent = 0), h, m, s
    let mut fields = [1i64, 0, 0, 0, 0];
    for f in fields.iter_mut() {
        next_digit(&t, &mut i);
        if i + 2 <= len {
            *f = atoi(&t[i..i + 2]);
            i += 2;
        }
    }
    next_digit(&t, &mut i);
    if i < len && t[i].is_ascii_digit() {
        return None;
    }
    let mon0 = fields[0] - 1;
    let local = timegm(year, mon0, fields[1], fields[2], fields[3], fields[4]);
    let offset = if has_offset {
        tzhr * 3600 + tzmin * 60
    } else {
        local_offset(local) as i64
    };
    Some(Value::AbsTime {
        secs: local - offset,
        offset_secs: offset as i32,
    })
}

/// The text `relTime("...")` accepts: `[-][D+|Dd][HH:|HHh][MM:|MMm]SS[.fff][s]`, read from
/// the right as libclassad does. `None` when other characters remain.
pub fn make_rel_time(text: &str) -> Option<f64> {
    let t = text.as_bytes();
    let mut i = t.len() as i64 - 1;
    let at = |i: i64| -> u8 { t[i as usize] };
    let skip_space = |i: &mut i64| {
        while *i >= 0 && t[*i as usize].is_ascii_whitespace() {
            *i -= 1;
        }
    };
    let read_int = |i: &mut i64| -> i64 {
        let end = *i;
        while *i >= 0 && t[*i as usize].is_ascii_digit() {
            *i -= 1;
        }
        let s = &text[(*i + 1) as usize..(end + 1) as usize];
        s.parse::<i32>().unwrap_or(0) as i64
    };
    let (mut secs, mut mins, mut hrs, mut days) = (0f64, 0i64, 0i64, 0i64);
    let mut negative = false;
    skip_space(&mut i);
    if i >= 0 && (at(i) == b's' || at(i) == b'S' || at(i).is_ascii_digit()) {
        if at(i) == b's' || at(i) == b'S' {
            i -= 1;
        }
        skip_space(&mut i);
        let end = i;
        while i >= 0 && at(i).is_ascii_digit() {
            i -= 1;
        }
        if i >= 0 && at(i) == b'.' {
            i -= 1;
            while i >= 0 && at(i).is_ascii_digit() {
                i -= 1;
            }
        }
        let s = &text[(i + 1) as usize..(end + 1) as usize];
        secs = crate::builtins::strtod(s).0;
    }
    skip_space(&mut i);
    if i >= 0 && matches!(at(i), b'm' | b'M' | b':') {
        i -= 1;
        skip_space(&mut i);
        mins = read_int(&mut i);
    }
    skip_space(&mut i);
    if i >= 0 && matches!(at(i), b'h' | b'H' | b':') {
        i -= 1;
        skip_space(&mut i);
        hrs = read_int(&mut i);
    }
    skip_space(&mut i);
    if i >= 0 && matches!(at(i), b'd' | b'D' | b'+') {
        i -= 1;
        skip_space(&mut i);
        days = read_int(&mut i);
    }
    skip_space(&mut i);
    if i >= 0 && at(i) == b'-' {
        negative = true;
        i -= 1;
    }
    skip_space(&mut i);
    if i >= 0 && !at(i).is_ascii_whitespace() {
        return None;
    }
    let total = (days * 86_400 + hrs * 3600 + mins * 60) as f64 + secs;
    Some(if negative { -total } else { total })
}

/// `absTime("...")` text as a value (`error` when unreadable).
pub fn parse_abs_time(s: &str) -> Value {
    make_abs_time(s).unwrap_or(Value::Error)
}

/// `relTime("...")` text as a value (`error` when unreadable).
pub fn parse_rel_time(s: &str) -> Value {
    make_rel_time(s).map(Value::RelTime).unwrap_or(Value::Error)
}

const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// strftime in the C locale for the common conversions.
pub fn strftime(tm: &Tm, fmt: &str) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let mut it = fmt.chars();
    let wd = |full: bool| -> String {
        if (0..7).contains(&tm.wday) {
            let d = DAYS[tm.wday as usize];
            if full {
                d.to_string()
            } else {
                d[..3].to_string()
            }
        } else {
            "?".to_string()
        }
    };
    let mn = |full: bool| -> String {
        if (1..=12).contains(&tm.mon) {
            let m = MONTHS[(tm.mon - 1) as usize];
            if full {
                m.to_string()
            } else {
                m[..3].to_string()
            }
        } else {
            "?".to_string()
        }
    };
    let h12 = if tm.hour % 12 == 0 { 12 } else { tm.hour % 12 };
    let ampm = if tm.hour < 12 { "AM" } else { "PM" };
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(f) = it.next() else {
            out.push('%');
            break;
        };
        let _ = match f {
            'a' => write!(out, "{}", wd(false)),
            'A' => write!(out, "{}", wd(true)),
            'b' | 'h' => write!(out, "{}", mn(false)),
            'B' => write!(out, "{}", mn(true)),
            'c' => write!(
                out,
                "{} {} {:2} {:02}:{:02}:{:02} {}",
                wd(false),
                mn(false),
                tm.mday,
                tm.hour,
                tm.min,
                tm.sec,
                tm.year
            ),
            'C' => write!(out, "{:02}", tm.year.div_euclid(100)),
            'd' => write!(out, "{:02}", tm.mday),
            'D' | 'x' => write!(
                out,
                "{:02}/{:02}/{:02}",
                tm.mon,
                tm.mday,
                tm.year.rem_euclid(100)
            ),
            'e' => write!(out, "{:2}", tm.mday),
            'F' => write!(out, "{}-{:02}-{:02}", tm.year, tm.mon, tm.mday),
            'H' => write!(out, "{:02}", tm.hour),
            'I' => write!(out, "{:02}", h12),
            'j' => write!(out, "{:03}", tm.yday + 1),
            'k' => write!(out, "{:2}", tm.hour),
            'l' => write!(out, "{:2}", h12),
            'm' => write!(out, "{:02}", tm.mon),
            'M' => write!(out, "{:02}", tm.min),
            'n' => writeln!(out),
            'p' => write!(out, "{}", ampm),
            'P' => write!(out, "{}", ampm.to_lowercase()),
            'r' => write!(out, "{:02}:{:02}:{:02} {}", h12, tm.min, tm.sec, ampm),
            'R' => write!(out, "{:02}:{:02}", tm.hour, tm.min),
            's' => write!(
                out,
                "{}",
                timegm(tm.year, tm.mon - 1, tm.mday, tm.hour, tm.min, tm.sec)
            ),
            'S' => write!(out, "{:02}", tm.sec),
            't' => write!(out, "\t"),
            'T' | 'X' => write!(out, "{:02}:{:02}:{:02}", tm.hour, tm.min, tm.sec),
            'u' => write!(out, "{}", if tm.wday == 0 { 7 } else { tm.wday }),
            'U' => write!(out, "{:02}", (tm.yday + 7 - tm.wday) / 7),
            'W' => write!(
                out,
                "{:02}",
                (tm.yday + 7 - (tm.wday + 6).rem_euclid(7)) / 7
            ),
            'w' => write!(out, "{}", tm.wday),
            'y' => write!(out, "{:02}", tm.year.rem_euclid(100)),
            'Y' => write!(out, "{}", tm.year),
            'z' => write!(out, "+0000"),
            'Z' => write!(out, "UTC"),
            '%' => write!(out, "%"),
            other => write!(out, "%{}", other),
        };
    }
    out
}

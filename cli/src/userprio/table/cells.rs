//! Formatting of one cell: text padded to its column, numbers with `%g` when too wide, dates
//! and times since, as `condor_userprio` prints them.
use super::format_g;

/// Pads/truncates `s` to exactly `w` characters, left-aligned.
pub(super) fn left(s: &str, w: usize) -> String {
    let t: String = s.chars().take(w).collect();
    format!("{t:<w$}")
}

/// Right-aligned in `w` (truncated on the right when too long).
pub(super) fn right(s: &str, w: usize) -> String {
    let t: String = s.chars().take(w).collect();
    format!("{t:>w$}")
}

pub(super) fn center(s: &str, w: usize) -> String {
    let n = s.chars().count();
    let pad = w.saturating_sub(n) / 2;
    left(&format!("{}{s}", " ".repeat(pad)), w)
}

/// A number in a column `w` wide with `d` decimals, `%g` when it does not fit.
pub(super) fn num(v: f64, w: usize, d: usize) -> String {
    let mut s = format!("{v:w$.d$}");
    if s.len() > w {
        s = format_g(v, w.saturating_sub(6));
    }
    right(&s, w)
}

/// `format_date`: "%2d/%-2d %02d:%02d" in local time.
pub(super) fn format_date(t: i64) -> String {
    if t < 0 {
        return "    ???    ".into();
    }
    match local(t) {
        Some((_, mo, d, h, mi)) => format!("{mo:>2}/{d:<2} {h:02}:{mi:02}"),
        None => "    ???    ".into(),
    }
}

/// `format_date_year`: "%2d/%02d/%-4d %02d:%02d" in local time.
fn format_date_year(t: i64) -> String {
    if t < 0 {
        return "    ???    ".into();
    }
    match local(t) {
        Some((y, mo, d, h, mi)) => format!("{mo:>2}/{d:02}/{y:<4} {h:02}:{mi:02}"),
        None => "    ???    ".into(),
    }
}

fn local(t: i64) -> Option<(i32, u32, u32, u32, u32)> {
    use chrono::{Datelike, TimeZone, Timelike};
    let dt = chrono::Local.timestamp_opt(t, 0).single()?;
    Some((dt.year(), dt.month(), dt.day(), dt.hour(), dt.minute()))
}

/// `format_time_nosecs`: "%3d+%02d:%02d" (days+hours:minutes).
fn format_delta(secs: i64) -> String {
    let secs = secs as i32 as i64; // HTCondor passes an int
    if secs < 0 {
        return "[?????]".into();
    }
    format!(
        "{:3}+{:02}:{:02}",
        secs / 86400,
        (secs % 86400) / 3600,
        (secs % 3600) / 60
    )
}

pub(super) fn date_cell(t: i64, w: usize) -> String {
    if t <= 0 {
        " ".repeat(w)
    } else {
        right(&format_date_year(t), w)
    }
}

pub(super) fn delta_cell(d: i64, w: usize) -> String {
    if d <= 0 {
        right("<now>", w)
    } else {
        right(&format_delta(d), w)
    }
}

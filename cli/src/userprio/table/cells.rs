//! Formatting of one cell: text padded to its column, numbers with `%g` when too wide, dates
//! and times since, as `condor_userprio` prints them.
use classad::printf::{Conversion, Spec};

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

/// Centred in `w` (the odd space on the right), as the headings are.
pub(super) fn center(s: &str, w: usize) -> String {
    let n = s.chars().count();
    let pad = w.saturating_sub(n) / 2;
    left(&format!("{}{s}", " ".repeat(pad)), w)
}

/// An empty cell `w` wide.
pub(super) fn blank(w: usize) -> String {
    " ".repeat(w)
}

/// A number in a column `w` wide with `d` decimals (`%*.*f`), `%.*g` when it does not fit, as
/// condor_userprio's `format_number` prints it (C's printf: `-0.00` for -0.0, `nan`, `inf`).
pub(super) fn num(v: f64, w: usize, d: usize) -> String {
    let mut s = Spec::new(Conversion::Fixed, d).format(v);
    if s.len() > w {
        s = Spec::new(Conversion::General, w.saturating_sub(6).max(1)).format(v);
    }
    right(&s, w)
}

/// `format_date`: "%2d/%-2d %02d:%02d" in local time.
pub(super) fn format_date(t: i64) -> String {
    local_date(t, |_, mo, d, h, mi| {
        format!("{mo:>2}/{d:<2} {h:02}:{mi:02}")
    })
}

/// `format_date_year`: "%2d/%02d/%-4d %02d:%02d" in local time.
fn format_date_year(t: i64) -> String {
    local_date(t, |y, mo, d, h, mi| {
        format!("{mo:>2}/{d:02}/{y:<4} {h:02}:{mi:02}")
    })
}

/// `t` in local time laid out by `layout(year, month, day, hour, minute)`; `    ???    ` for a
/// negative time or one the local zone does not have.
fn local_date(t: i64, layout: impl Fn(i32, u32, u32, u32, u32) -> String) -> String {
    use chrono::{Datelike, TimeZone, Timelike};
    match chrono::Local.timestamp_opt(t, 0).single() {
        Some(dt) if t >= 0 => layout(dt.year(), dt.month(), dt.day(), dt.hour(), dt.minute()),
        _ => "    ???    ".into(),
    }
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

/// A time with its year, right-aligned in `w`; blank for none (0 or less).
pub(super) fn date_cell(t: i64, w: usize) -> String {
    if t <= 0 {
        blank(w)
    } else {
        right(&format_date_year(t), w)
    }
}

/// A time since (`d` seconds), right-aligned in `w`; `<now>` for none or less.
pub(super) fn delta_cell(d: i64, w: usize) -> String {
    if d <= 0 {
        right("<now>", w)
    } else {
        right(&format_delta(d), w)
    }
}

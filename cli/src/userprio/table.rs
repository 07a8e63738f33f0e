//! The `condor_userprio` table, laid out exactly as HTCondor 23.9.6 prints it.
//!
//! The input is the accountant's records as a negotiator reports them (one
//! [`AccountingRecord`](aerie_core::accountant::AccountingRecord) per submitter or group, the
//! fields of the accounting ad). The rules were worked out from the HTCondor manual and
//! checked against the real `condor_userprio -inputfile` (see `tests.rs` beside this module):
//! which columns show, the hierarchical group layout, the sort orders, fixed column widths
//! with centred two-line headings, `%g` fallback for numbers too wide for their column, and
//! the footer with the user count and totals.
//!
//! `columns` holds the column table and the detail flags, `render` the layout (which rows,
//! groups, sort, headings, footer) and `cells` the formatting of one cell.
mod cells;
mod columns;
mod render;

pub use columns::*;
pub use render::{render, Opts};

/// C's `%.<p>g`.
pub fn format_g(v: f64, p: usize) -> String {
    let p = p.max(1);
    if v == 0.0 {
        return "0".into();
    }
    if !v.is_finite() {
        return if v.is_nan() {
            "nan".into()
        } else if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    let e = format!("{:.*e}", p - 1, v);
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let x: i32 = exp.parse().unwrap_or(0);
    let strip = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if x < -4 || x >= p as i32 {
        let sign = if x < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip(mant), x.abs())
    } else {
        let decimals = (p as i32 - 1 - x).max(0) as usize;
        strip(&format!("{v:.decimals$}"))
    }
}

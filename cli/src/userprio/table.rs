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

//! condor_q's tables, pure (ads in, text out), as condor_q 23.9.6 prints them
//! (`src/condor_q.V6/queue.cpp`: `jobProgress_PrintFormat` and `reduce_results` for the batch
//! view, `jobDefault_PrintFormat` for `-nobatch`, `jobHold_PrintFormat`, `jobRuntime_PrintFormat`
//! for `-run`, `standard_summary2` for the totals). The header line above the table
//! (`-- Schedd: ...`) is the caller's.
use super::columns::{self as col, status, Clock};
use classad::ClassAd;
use std::collections::HashMap;

/// Jobs per state, for the summary lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Every job counted.
    pub jobs: u64,
    /// `JobStatus` 4.
    pub completed: u64,
    /// `JobStatus` 3.
    pub removed: u64,
    /// `JobStatus` 1.
    pub idle: u64,
    /// `JobStatus` 2 and 6 (transferring output).
    pub running: u64,
    /// `JobStatus` 5.
    pub held: u64,
    /// `JobStatus` 7.
    pub suspended: u64,
}

impl Totals {
    /// Counts the jobs of `ads` by `JobStatus`.
    pub fn of<'a>(ads: impl IntoIterator<Item = &'a ClassAd>) -> Totals {
        let mut t = Totals::default();
        for a in ads {
            t.jobs += 1;
            match col::int(a, "JobStatus").unwrap_or(0) {
                status::COMPLETED => t.completed += 1,
                status::REMOVED => t.removed += 1,
                status::IDLE => t.idle += 1,
                status::RUNNING | status::TRANSFERRING_OUTPUT => t.running += 1,
                status::HELD => t.held += 1,
                status::SUSPENDED => t.suspended += 1,
                _ => {}
            }
        }
        t
    }

    /// Totals from jobs per status code (`counts[s]`: jobs with `JobStatus` s), as the
    /// access point keeps them.
    pub fn of_counts(counts: &[u64]) -> Totals {
        let n = |s: i64| counts.get(s as usize).copied().unwrap_or(0);
        Totals {
            jobs: counts.iter().sum(),
            completed: n(status::COMPLETED),
            removed: n(status::REMOVED),
            idle: n(status::IDLE),
            running: n(status::RUNNING) + n(status::TRANSFERRING_OUTPUT),
            held: n(status::HELD),
            suspended: n(status::SUSPENDED),
        }
    }

    fn line(&self, what: &str) -> String {
        format!(
            "Total for {what}: {} jobs; {} completed, {} removed, {} idle, {} running, {} held, {} suspended",
            self.jobs, self.completed, self.removed, self.idle, self.running, self.held, self.suspended
        )
    }
}

/// The summary under a table: a blank line, `Total for query: ...` and, when the whole queue
/// was counted too, `Total for all users: ...` (condor_q pads the first line with a space
/// then), and a blank line.
pub fn summary(query: &Totals, all_users: Option<&Totals>) -> String {
    match all_users {
        Some(all) => format!("\n{} \n{}\n\n", query.line("query"), all.line("all users")),
        None => format!("\n{}\n\n", query.line("query")),
    }
}

/// The ads sorted by job id, as condor_q lists them.
fn by_id(ads: &[ClassAd]) -> Vec<&ClassAd> {
    let mut v: Vec<&ClassAd> = ads.iter().collect();
    // Each key is evaluated once, not at every comparison.
    v.sort_by_cached_key(|a| col::job_id(a));
    v
}

/// ` ID` (`%4d.`, width 5) and the proc (`%-3d`): the first two columns of the job views.
pub(crate) fn id_cells(ad: &ClassAd) -> String {
    let (c, p) = col::job_id(ad);
    format!("{:>5}{:<3}", format!("{c:>4}."), p)
}

/// `-nobatch`: ID OWNER SUBMITTED RUN_TIME ST PRI SIZE CMD, one row per job. `PRI` and `SIZE`
/// widen to their widest value; `OWNER` is cut at 14 characters.
pub fn nobatch(ads: &[ClassAd], clock: &Clock) -> String {
    let ads = by_id(ads);
    let pri: Vec<String> = ads
        .iter()
        .map(|a| {
            col::int(a, "JobPrio")
                .map(|p| p.to_string())
                .unwrap_or_default()
        })
        .collect();
    let size: Vec<String> = ads
        .iter()
        .map(|a| col::memory_usage(a).unwrap_or_default())
        .collect();
    let pw = pri.iter().map(String::len).max().unwrap_or(0).max(3);
    let sw = size.iter().map(String::len).max().unwrap_or(0).max(4);
    let mut out = format!(
        " ID      OWNER            SUBMITTED     RUN_TIME ST {:<pw$} {:<sw$} CMD\n",
        "PRI", "SIZE"
    );
    for (i, a) in ads.iter().enumerate() {
        out.push_str(&format!(
            "{} {:<14} {:>11} {:>12} {} {:<pw$} {:>sw$} {}\n",
            id_cells(a),
            col::truncate(&col::string(a, "Owner").unwrap_or_default(), 14),
            col::qdate(a, "QDate", clock).unwrap_or_default(),
            col::run_time(a, clock).unwrap_or_default(),
            col::status_char(a),
            pri[i],
            size[i],
            col::description(a).unwrap_or_default()
        ));
    }
    out
}

/// `-run`: ID OWNER SUBMITTED RUN_TIME HOST(S) for the running jobs the caller asked for
/// (the caller's constraint picks them); no summary.
pub fn run(ads: &[ClassAd], clock: &Clock) -> String {
    let mut out = String::from(" ID      OWNER            SUBMITTED     RUN_TIME HOST(S)\n");
    for a in by_id(ads) {
        out.push_str(&format!(
            "{} {:<14} {:>11} {:>12} {}\n",
            id_cells(a),
            col::truncate(&col::string(a, "Owner").unwrap_or("??".into()), 14),
            col::qdate(a, "QDate", clock).unwrap_or("??".into()),
            col::run_time(a, clock).unwrap_or("??".into()),
            col::remote_host(a).unwrap_or("??".into())
        ));
    }
    out
}

/// `-hold`: ID OWNER HELD_SINCE HOLD_REASON for the held jobs the caller asked for.
pub fn hold(ads: &[ClassAd], clock: &Clock) -> String {
    let mut out = String::from(" ID      OWNER          HELD_SINCE  HOLD_REASON\n");
    for a in by_id(ads) {
        out.push_str(&format!(
            "{} {:<14} {:>11} {}\n",
            id_cells(a),
            col::truncate(&col::string(a, "Owner").unwrap_or("??".into()), 14),
            col::qdate(a, "EnteredCurrentStatus", clock).unwrap_or("??".into()),
            col::string(a, "HoldReason").unwrap_or_default()
        ));
    }
    out
}

/// One row of the batch view: the jobs of one cluster, or of every cluster of one owner that
/// shares a `JobBatchName`.
#[derive(Debug, Default)]
struct Batch<'a> {
    first: Option<&'a ClassAd>,
    name: String,
    done: i64,
    running: i64,
    idle: i64,
    held: i64,
    total: i64,
    unknown_total: bool,
    min: (i64, i64),
    max: (i64, i64),
}

/// `0` prints as `_` in the counter columns.
fn count(n: i64, w: usize) -> String {
    if n > 0 {
        format!("{n:>w$}")
    } else {
        format!("{:>w$}", "_")
    }
}

/// The default batch view: OWNER BATCH_NAME SUBMITTED DONE RUN IDLE HOLD TOTAL JOB_IDS, one row
/// per cluster, clusters of one owner with the same `JobBatchName` folded into one row (in
/// the order of their first job). `DONE` is what `TotalSubmitProcs` says was queued less what
/// is still in the queue, unless the query picked only part of the clusters (`partial`: job
/// ids or a constraint). The `HOLD` column shows only when a job is held (or no row at all).
pub fn batch(ads: &[ClassAd], partial: bool, clock: &Clock) -> String {
    let ads = by_id(ads);
    let mut rows: Vec<Batch> = Vec::new();
    let mut by_name: HashMap<(String, String), usize> = HashMap::new();
    let mut by_cluster: HashMap<i64, usize> = HashMap::new();
    let mut procs_of: HashMap<i64, i64> = HashMap::new();
    for a in &ads {
        let (c, _) = col::job_id(a);
        *procs_of.entry(c).or_default() += 1;
    }
    for a in &ads {
        let (c, p) = col::job_id(a);
        let idx = match by_cluster.get(&c) {
            Some(&i) => i,
            None => {
                let owner = col::string(a, "Owner").unwrap_or_default();
                let named = col::string(a, "JobBatchName");
                let existing = named
                    .as_ref()
                    .and_then(|n| by_name.get(&(n.clone(), owner.clone())).copied());
                let i = match existing {
                    Some(i) => i,
                    None => {
                        rows.push(Batch {
                            first: Some(a),
                            name: named.clone().unwrap_or_else(|| format!("ID: {c}")),
                            min: (c, p),
                            max: (c, p),
                            ..Batch::default()
                        });
                        if let Some(n) = named {
                            by_name.insert((n, owner), rows.len() - 1);
                        }
                        rows.len() - 1
                    }
                };
                by_cluster.insert(c, i);
                let row = &mut rows[i];
                match col::int(a, "TotalSubmitProcs") {
                    Some(total) if total > 0 => {
                        row.total += total;
                        if !partial {
                            row.done += total - procs_of[&c];
                        }
                    }
                    _ => row.unknown_total = true,
                }
                i
            }
        };
        let row = &mut rows[idx];
        row.min = row.min.min((c, p));
        row.max = row.max.max((c, p));
        match col::int(a, "JobStatus").unwrap_or(0) {
            status::IDLE | status::SUSPENDED => row.idle += 1,
            status::RUNNING | status::TRANSFERRING_OUTPUT => row.running += 1,
            status::HELD => row.held += 1,
            _ => {}
        }
    }
    let ids = |r: &Batch| {
        if r.min == r.max {
            format!("{}.{}", r.min.0, r.min.1)
        } else if r.min.0 == r.max.0 {
            format!("{}.{}-{}", r.min.0, r.min.1, r.max.1)
        } else {
            format!("{}.{} ... {}.{}", r.min.0, r.min.1, r.max.0, r.max.1)
        }
    };
    let owner = |r: &Batch| {
        r.first
            .and_then(|a| col::string(a, "Owner"))
            .unwrap_or("??".into())
    };
    let longest = rows
        .iter()
        .map(|r| owner(r).chars().count())
        .max()
        .unwrap_or(0);
    // condor_q: a column narrower than its title takes 8 characters, one wider its longest value.
    let ow = if rows.is_empty() {
        5
    } else if longest < 5 {
        8
    } else {
        longest
    };
    // Without rows the columns keep the print format's widths (BATCH_NAME: 12).
    let bw = if rows.is_empty() {
        12
    } else {
        rows.iter()
            .map(|r| r.name.chars().count())
            .max()
            .unwrap_or(0)
            .max(10)
    };
    let width = |f: fn(&Batch) -> i64| {
        rows.iter()
            .map(|r| f(r).max(0).to_string().len())
            .max()
            .unwrap_or(0)
            .max(6)
    };
    let (dw, rw, iw, hw, tw) = (
        width(|r| if r.unknown_total { 0 } else { r.done }),
        width(|r| r.running),
        width(|r| r.idle),
        width(|r| r.held),
        width(|r| if r.unknown_total { 0 } else { r.total }),
    );
    let show_hold = rows.is_empty() || rows.iter().any(|r| r.held > 0);
    let mut out = format!(
        "{:<ow$} {:<bw$} {:>12} {:>dw$} {:<rw$} {:>iw$} ",
        "OWNER", "BATCH_NAME", "   SUBMITTED", "DONE", "  RUN ", "IDLE"
    );
    if show_hold {
        out.push_str(&format!("{:>hw$} ", "HOLD"));
    }
    out.push_str(&format!("{:>tw$} JOB_IDS\n", "TOTAL"));
    for r in &rows {
        let (done, total) = if r.unknown_total {
            (0, 0)
        } else {
            (r.done, r.total)
        };
        let submitted = r
            .first
            .and_then(|a| col::qdate(a, "QDate", clock))
            .unwrap_or_default();
        out.push_str(&format!(
            "{:<ow$} {:<bw$} {:>12} {} {} {} ",
            owner(r),
            r.name,
            submitted,
            count(done, dw),
            count(r.running, rw),
            count(r.idle, iw)
        ));
        if show_hold {
            out.push_str(&count(r.held, hw));
            out.push(' ');
        }
        out.push_str(&format!("{} {}\n", count(total, tw), ids(r)));
    }
    out
}

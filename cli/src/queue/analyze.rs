//! `cmctl q -better-analyze JOB`: why a job does or does not match the pool's slots, in the
//! shape of condor_q's analysis (`src/condor_q.V6/jobmatch.cpp`: `doJobRunAnalysis`,
//! `appendJobMatchTotalsToBuffer`; `src/condor_utils/analysis.cpp`). The job comes from the
//! access point, the slots from any CM's collector (`--cms`/`$AERIE_CMS`, as `cmctl status`).
//!
//! Kept honest and simple: each slot is counted once, in the first of "rejected by the job's
//! Requirements", "rejects the job by its own Requirements (START)", "matches and already runs
//! your job", "matches but serves another user", "able to run your job"; then each top-level
//! `&&` clause of the job's Requirements with the number of slots it alone accepts. User priority and preemption are not
//! considered (condor_q's "ignoring user priority").
use super::columns::{self as col, Clock};
use super::Target;
use crate::schedd::Schedd;
use aerie_proto::collector as cpb;
use aerie_proto::schedd as pb;
use classad::{BinOp, ClassAd, Expr, Value};
use std::collections::BTreeSet;

/// The counts of one analysis.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Analysis {
    /// Slots looked at (condor_q 23.9 calls them machines).
    pub slots: usize,
    /// Slots the job's Requirements reject.
    pub rejected_by_job: usize,
    /// Slots whose own Requirements reject the job.
    pub rejected_by_slot: usize,
    /// Slots that match and are claimed by the job's user already.
    pub running_yours: usize,
    /// Slots that match but are claimed by someone else.
    pub serving_others: usize,
    /// Slots that match and are not claimed.
    pub available: usize,
    /// Each top-level clause of the job's Requirements and how many slots it accepts.
    pub clauses: Vec<(String, usize)>,
}

/// The top-level `&&` clauses of an expression, parentheses around the whole taken off.
pub fn clauses(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::Binary(BinOp::And, l, r) => {
            let mut v = clauses(l);
            v.extend(clauses(r));
            v
        }
        Expr::Paren(inner) if matches!(**inner, Expr::Binary(BinOp::And, ..)) => clauses(inner),
        other => vec![other],
    }
}

/// A clause as condor prints it: without its outer parentheses.
fn clause_text(e: &Expr) -> String {
    match e {
        Expr::Paren(inner) => inner.to_string(),
        other => other.to_string(),
    }
}

fn is_true(v: Value) -> bool {
    matches!(v, Value::Bool(true))
}

/// Analyses `job` against `slots`.
pub fn analyse(job: &ClassAd, slots: &[ClassAd]) -> Analysis {
    let mut a = Analysis {
        slots: slots.len(),
        ..Analysis::default()
    };
    let user = col::string(job, "User");
    for s in slots {
        if !is_true(job.eval_attr_with("Requirements", Some(s))) {
            a.rejected_by_job += 1;
        } else if !is_true(s.eval_attr_with("Requirements", Some(job))) {
            a.rejected_by_slot += 1;
        } else if col::string(s, "State").as_deref() == Some("Claimed") {
            if user.is_some() && col::string(s, "RemoteUser") == user {
                a.running_yours += 1;
            } else {
                a.serving_others += 1;
            }
        } else {
            a.available += 1;
        }
    }
    if let Some(req) = job.lookup("Requirements") {
        for c in clauses(req) {
            let n = slots
                .iter()
                .filter(|s| is_true(job.eval_expr_with(c, Some(s))))
                .count();
            a.clauses.push((clause_text(c), n));
        }
    }
    a
}

/// The job's own attributes its Requirements refer to, directly or through one another, as
/// written, with condor's units for the requests (`RequestDisk` in KiB, `RequestMemory` in
/// MiB), sorted by name.
fn referenced(job: &ClassAd) -> Vec<String> {
    let Some(req) = job.lookup("Requirements") else {
        return Vec::new();
    };
    let mut names: BTreeSet<String> = BTreeSet::new();
    let mut todo: Vec<String> = req.references().internal.into_iter().collect();
    while let Some(n) = todo.pop() {
        if let Some(e) = job.lookup(&n) {
            if names.insert(n.clone()) {
                todo.extend(e.references().internal);
            }
        }
    }
    let mut out: Vec<String> = job
        .iter()
        .filter(|(name, _)| names.contains(&name.to_ascii_lowercase()))
        .map(|(name, e)| {
            let unit = match name.to_ascii_lowercase().as_str() {
                "requestdisk" => " (kb)",
                "requestmemory" => " (mb)",
                _ => "",
            };
            format!("{name} = {e}{unit}")
        })
        .collect();
    out.sort_by_key(|l| l.to_ascii_lowercase());
    out
}

/// The analysis as text, in condor_q 23.9.6's words (its clause table is condor's before
/// it prunes and merges clauses: one row per top-level clause, the slots it alone accepts).
pub fn render(job: &ClassAd, a: &Analysis) -> String {
    let (c, p) = col::job_id(job);
    let id = format!("{c}.{p:03}");
    let mut out = String::new();
    let req = job
        .lookup("Requirements")
        .map(|e| e.to_string())
        .unwrap_or_else(|| "undefined".into());
    out.push_str(&format!(
        "The Requirements expression for job {id} is\n\n    {req}\n\n"
    ));
    let defs = referenced(job);
    if !defs.is_empty() {
        out.push_str(&format!("Job {id} defines the following attributes:\n\n"));
        for d in defs {
            out.push_str(&format!("    {d}\n"));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "The Requirements expression for job {id} reduces to these conditions:\n\n"
    ));
    out.push_str("         Slots\nStep    Matched  Condition\n-----  --------  ---------\n");
    for (i, (text, n)) in a.clauses.iter().enumerate() {
        out.push_str(&format!("{:<5}  {:>8}  {}\n", format!("[{i}]"), n, text));
    }
    if col::int(job, "JobStatus") == Some(col::status::HELD) {
        out.push_str(&format!(
            "\nJob {c}.{p} is held.\n\nHold reason: {}\n",
            col::string(job, "HoldReason").unwrap_or_default()
        ));
    }
    out.push_str(&format!(
        "\n{c:03}.{p:03}:  Run analysis summary ignoring user priority.  Of {} machines,\n",
        a.slots
    ));
    for (n, what) in [
        (a.rejected_by_job, "are rejected by your job's requirements"),
        (
            a.rejected_by_slot,
            "reject your job because of their own requirements",
        ),
        (a.running_yours, "match and are already running your jobs"),
        (a.serving_others, "match but are serving other users"),
        (a.available, "are able to run your job"),
    ] {
        out.push_str(&format!("  {n:5} {what}\n"));
    }
    out
}

/// Fetches the job from the access point and the slots from a CM, and renders the analysis
/// under condor_q's header line.
pub fn run(
    schedd: &mut Schedd,
    conn: &crate::client::ConnectArgs,
    job: &str,
    path: &str,
) -> anyhow::Result<String> {
    let target = Target::parse(job);
    let ads = schedd.query(pb::QueryRequest {
        constraint: target.constraint(),
        projection: Vec::new(),
        history: false,
        limit: 1,
        rows: false,
        count_queue: false,
    })?;
    let clock = Clock {
        now: super::now(),
        local: true,
    };
    let mut out = super::schedd_header(path, &clock);
    let Some(job_ad) = ads.first() else {
        out.push_str(&format!("Job {job} is not in the queue.\n"));
        return Ok(out);
    };
    let slots = crate::status::fetch(
        &mut crate::client::Client::new(conn)?,
        cpb::QueryRequest {
            ad_type: "Machine".into(),
            constraint: String::new(),
            projection: Vec::new(),
            absent: false,
            limit: 0,
        },
    )?;
    out.push_str(&render(job_ad, &analyse(job_ad, &slots)));
    Ok(out)
}

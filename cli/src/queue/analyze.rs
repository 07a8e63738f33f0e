//! `cmctl q -better-analyze JOB`: why a job does or does not match the pool's slots, in the
//! shape of condor_q's analysis (`src/condor_q.V6/jobmatch.cpp`: `doJobRunAnalysis`,
//! `appendJobMatchTotalsToBuffer`; `src/condor_utils/analysis.cpp`). The job comes from the
//! access point, the slots from any CM's collector (`--cms`/`$AERIE_CMS`, as `cmctl status`).
//!
//! Kept honest and simple: each slot is counted once, in the first of "rejected by the job's
//! Requirements", "rejects the job by its own Requirements (START)", "matches but is claimed",
//! "matches and is available"; then each top-level `&&` clause of the job's Requirements with
//! the number of slots it alone accepts and rejects. User priority and preemption are not
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
    /// Slots looked at.
    pub slots: usize,
    /// Distinct `Machine`s among them.
    pub machines: usize,
    /// Slots the job's Requirements reject.
    pub rejected_by_job: usize,
    /// Slots whose own Requirements reject the job.
    pub rejected_by_slot: usize,
    /// Slots that match but are claimed (serving someone).
    pub matched_claimed: usize,
    /// Slots that match and are not claimed.
    pub matched_available: usize,
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
        machines: slots
            .iter()
            .map(|s| {
                col::string(s, "Machine")
                    .unwrap_or_else(|| col::string(s, "Name").unwrap_or_default())
            })
            .collect::<BTreeSet<_>>()
            .len(),
        ..Analysis::default()
    };
    for s in slots {
        if !is_true(job.eval_attr_with("Requirements", Some(s))) {
            a.rejected_by_job += 1;
        } else if !is_true(s.eval_attr_with("Requirements", Some(job))) {
            a.rejected_by_slot += 1;
        } else if col::string(s, "State").as_deref() == Some("Claimed") {
            a.matched_claimed += 1;
        } else {
            a.matched_available += 1;
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

/// The job's own attributes its Requirements refer to, with their values.
fn referenced(job: &ClassAd) -> Vec<String> {
    let Some(req) = job.lookup("Requirements") else {
        return Vec::new();
    };
    let names = req.references().internal;
    let mut out = Vec::new();
    for (name, e) in job.iter() {
        if names.contains(&name.to_ascii_lowercase()) {
            let v = job.eval_expr(e);
            let shown = match v {
                Value::Undefined | Value::Error => e.to_string(),
                v => match &v {
                    Value::Real(r) => crate::status::real(*r),
                    _ => v.to_string(),
                },
            };
            out.push(format!("{name} = {shown}"));
        }
    }
    out.sort_by_key(|l| l.to_ascii_lowercase());
    out
}

/// The analysis as text.
pub fn render(job: &ClassAd, a: &Analysis) -> String {
    let (c, p) = col::job_id(job);
    let id = format!("{c}.{p}");
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
    let status = match col::int(job, "JobStatus").unwrap_or(0) {
        col::status::RUNNING => format!("Job {id} is running."),
        col::status::HELD => format!(
            "Job {id} is held.\n\nHold reason: {}",
            col::string(job, "HoldReason").unwrap_or_default()
        ),
        col::status::COMPLETED => format!("Job {id} is completed."),
        col::status::REMOVED => format!("Job {id} is removed."),
        _ => format!("Job {id} is idle."),
    };
    out.push_str(&format!("\n{c:03}.{p:03}:  {status}\n"));
    out.push_str(&format!(
        "\n{c:03}.{p:03}:  Run analysis summary ignoring user priority.  Of {} slots on {} machines,\n",
        a.slots, a.machines
    ));
    out.push_str(&format!(
        "  {:5} slots are rejected by your job's requirements\n",
        a.rejected_by_job
    ));
    out.push_str(&format!(
        "  {:5} slots reject your job because of their own requirements\n",
        a.rejected_by_slot
    ));
    out.push_str(&format!(
        "  {:5} slots match but are serving other users\n",
        a.matched_claimed
    ));
    out.push_str(&format!(
        "  {:5} slots are able to run your job\n",
        a.matched_available
    ));
    if a.slots > 0 && a.matched_claimed + a.matched_available == 0 {
        out.push_str("\nWARNING:  Be advised:\n   No slots matched the job's constraints\n");
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

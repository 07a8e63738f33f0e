//! Turning input ads into the cycle's tables: slots (filtered, weighted, classed) and idle
//! jobs (submitter, order keys, autoclusters).
use super::limits::parse_limits;
use super::scan::{field, JobScan};
use classad::{Expr, Value};

/// How a job's concurrency limits are declared.
#[derive(Clone, Debug)]
pub(crate) enum JobLimits {
    None,
    Fixed(Vec<(String, f64)>),
    /// `ConcurrencyLimitsExpr`, evaluated against each candidate slot.
    Expr(Expr),
    /// Unusable (bad name, or both forms set); the job is never matched.
    Invalid(String),
}

/// One idle job.
#[derive(Clone, Debug)]
pub(crate) struct Job {
    pub index: usize,
    pub cluster: i64,
    pub proc: i64,
    pub submitter: usize,
    pub ac: usize,
    /// Sort key within the submitter (see [`job_order`]).
    pub order: JobOrder,
    pub limits: JobLimits,
    pub request_weight: f64,
}

/// One autocluster: jobs of one submitter that look the same to matchmaking.
#[derive(Clone, Debug)]
pub(crate) struct AutoCluster {
    /// Index into the input job list of the representative job.
    pub rep: usize,
    pub submitter: usize,
}

/// The submitter a job is charged to: `AccountingGroup@domain` if the job has an
/// accounting group (`group.user`), else `Owner@domain`; `nice-user.` prefixed for nice jobs.
/// Written into `out` (cleared first), so that the common case allocates nothing.
pub(crate) fn job_submitter(j: &JobScan, out: &mut String) -> Result<(), String> {
    out.clear();
    let user = j.str(field::USER);
    let domain_of_user = user
        .as_deref()
        .and_then(|u| u.rsplit_once('@').map(|(_, d)| d));
    let uid_domain;
    let domain: &str = match domain_of_user {
        Some(d) => d,
        None => {
            uid_domain = j.str(field::UID_DOMAIN);
            uid_domain.as_deref().unwrap_or("")
        }
    };
    let owner_attr = j.str(field::OWNER);
    let owner: &str = match (&owner_attr, user.as_deref()) {
        (Some(o), _) => o,
        (None, Some(u)) => u.split('@').next().unwrap_or(u),
        (None, None) => return Err("job has neither Owner nor User".to_string()),
    };
    let group = j.str(field::ACCOUNTING_GROUP);
    let base: &str = match group.as_deref() {
        Some(g) if !g.is_empty() => g.split('@').next().unwrap_or(g),
        _ => owner,
    };
    if j.bool(field::NICE_USER) == Some(true) && !base.starts_with("nice-user.") {
        out.push_str("nice-user.");
    }
    out.push_str(base);
    if !domain.is_empty() {
        out.push('@');
        out.push_str(domain);
    }
    Ok(())
}

pub(crate) fn job_limits(j: &JobScan) -> JobLimits {
    let fixed = j.fields[field::LIMITS].is_some();
    let expr = j.fields[field::LIMITS_EXPR];
    match (fixed, expr) {
        (false, None) => JobLimits::None,
        (true, Some(_)) => JobLimits::Invalid(
            "job sets both ConcurrencyLimits and ConcurrencyLimitsExpr".to_string(),
        ),
        (false, Some(e)) => JobLimits::Expr(e.clone()),
        (true, None) => match j.ad.eval_attr(field::NAMES[field::LIMITS]) {
            Value::Str(s) => match parse_limits(&s) {
                Ok(v) if v.is_empty() => JobLimits::None,
                Ok(v) => JobLimits::Fixed(v),
                Err(e) => JobLimits::Invalid(e),
            },
            Value::Undefined => JobLimits::None,
            _ => JobLimits::Invalid("ConcurrencyLimits is not a string".to_string()),
        },
    }
}

/// A job's place among its submitter's jobs, ascending (see [`job_order`]).
pub(crate) type JobOrder = (i64, i64, i64, i64, i64, i64, i64, i64);

/// Job order keys (HTCondor: PreJobPrio1, PreJobPrio2, JobPrio, PostJobPrio1, PostJobPrio2
/// descending; then QDate, ClusterId, ProcId ascending). Stored so that ascending sort works.
pub(crate) fn job_order(j: &JobScan, cluster: i64, proc: i64) -> JobOrder {
    let v = |f: usize| j.num(f).map(|v| v as i64);
    (
        -v(field::PRE1).unwrap_or(i64::MIN + 1),
        -v(field::PRE2).unwrap_or(i64::MIN + 1),
        -v(field::PRIO).unwrap_or(0),
        -v(field::POST1).unwrap_or(i64::MIN + 1),
        -v(field::POST2).unwrap_or(i64::MIN + 1),
        v(field::QDATE).unwrap_or(0),
        cluster,
        proc,
    )
}

//! The job's `Requirements`, as condor_submit 23.9.6 completes them for a vanilla job
//! (submit_utils.cpp `SetRequirements`): the user's expression in parentheses, then the
//! clauses the user did not already write about the machine:
//!
//! - `(TARGET.Arch == "<arch>")` and `(TARGET.OpSys == "<opsys>")` unless the expression
//!   refers to the machine's `Arch` (resp. `OpSys`, `OpSysAndVer`, ...);
//! - `(TARGET.Disk >= RequestDisk)` when the job requests disk (a literal request of 0 or
//!   less asks nothing), unless it refers to `Disk`;
//! - `(TARGET.Memory >= RequestMemory)` when the request is not a literal of at most 1;
//! - `(TARGET.Cpus >= RequestCpus)` when the request is not a literal of at most 1, unless it
//!   refers to `Cpus`; `(TARGET.<Tag> >= Request<Tag>)` for custom resources;
//! - the file system clause: `(TARGET.FileSystemDomain == MY.FileSystemDomain)` without file
//!   transfer, `(TARGET.HasFileTransfer)` with it, both or-ed when transfer is `IF_NEEDED`;
//! - for cron and deferral jobs `TARGET.HasJobDeferral` and the window clause.
//!
//! "Refers to the machine's X" is what libclassad's `GetExprReferences` calls an external
//! reference: `TARGET.X`, or a bare `X` that is not a job attribute condor_submit knows
//! (`RequestMemory`).
use crate::error::At;
use crate::job::{needs_deferral, Facts, ShouldTransfer};
use crate::settings::Settings;
use classad::{ClassAd, Expr, Value};
use std::collections::BTreeSet;

fn literal_number(e: &Expr) -> Option<f64> {
    match e {
        Expr::Lit(Value::Int(i)) => Some(*i as f64),
        Expr::Lit(Value::Real(r)) => Some(*r),
        _ => None,
    }
}

/// A request clause is added unless the request is a literal number not above `floor`.
fn asks_for(ad: &ClassAd, attr: &str, floor: f64) -> bool {
    match ad.lookup(attr) {
        None => false,
        Some(e) => literal_number(e).is_none_or(|v| v > floor),
    }
}

/// The completed Requirements expression's text, or the error with the place of the
/// user's `requirements` command.
pub(crate) fn build(
    ad: &ClassAd,
    facts: &Facts,
    settings: &Settings,
) -> Result<String, (At, String)> {
    let mut answer = String::new();
    let mut machine_refs: BTreeSet<String> = BTreeSet::new();
    if let Some((text, at)) = &facts.user_requirements {
        let e = classad::parse_expr(text).map_err(|e| {
            (
                at.clone(),
                format!("parse error in expression: Requirements = ({text}) ({e})"),
            )
        })?;
        let refs = e.references();
        machine_refs.extend(refs.external);
        machine_refs.extend(
            refs.internal
                .into_iter()
                .filter(|n| n != "requestmemory" && n != "vm_ckptmac"),
        );
        answer = format!("({text})");
    }
    if let Some(append) = &settings.append_requirements {
        if let Ok(e) = classad::parse_expr(append) {
            let refs = e.references();
            machine_refs.extend(refs.external);
            machine_refs.extend(refs.internal);
        }
        if answer.is_empty() {
            answer = format!("({append})");
        } else {
            answer.push_str(&format!(" && ({append})"));
        }
    }
    let refers = |n: &str| machine_refs.contains(n);
    let checks_arch = refers("arch");
    let checks_opsys = [
        "opsys",
        "opsysandver",
        "opsyslongname",
        "opsysshortname",
        "opsysname",
        "opsyslegacy",
    ]
    .iter()
    .any(|n| refers(n));
    if !checks_arch {
        if !answer.is_empty() {
            answer.push_str(" && ");
        }
        answer.push_str(&format!("(TARGET.Arch == \"{}\")", settings.arch));
    }
    if !checks_opsys {
        answer.push_str(&format!(" && (TARGET.OpSys == \"{}\")", settings.opsys));
    }
    if !refers("disk") {
        if ad.contains("RequestDisk") {
            if asks_for(ad, "RequestDisk", 0.0) {
                answer.push_str(" && (TARGET.Disk >= RequestDisk)");
            }
        } else {
            answer.push_str(" && (TARGET.Disk >= DiskUsage)");
        }
    } else if ad.contains("RequestDisk") {
        answer.push_str(" && (TARGET.Disk >= RequestDisk)");
    }
    if asks_for(ad, "RequestMemory", 1.0) {
        answer.push_str(" && (TARGET.Memory >= RequestMemory)");
    }
    if !refers("cpus") && asks_for(ad, "RequestCpus", 1.0) {
        answer.push_str(" && (TARGET.Cpus >= RequestCpus)");
    }
    let mut tags: Vec<String> = ad
        .iter()
        .map(|(n, _)| n.to_string())
        .filter(|n| {
            n.len() >= 9 && n[..7].eq_ignore_ascii_case("request") && !n[7..].starts_with('_')
        })
        .filter(|n| {
            !["requestcpus", "requestdisk", "requestmemory"]
                .contains(&n.to_ascii_lowercase().as_str())
        })
        .collect();
    tags.sort();
    for attr in tags {
        let tag = &attr[7..];
        if refers(&tag.to_ascii_lowercase()) {
            continue;
        }
        match ad.lookup(&attr).map(|e| (e, ad.eval_attr(&attr))) {
            Some((_, Value::Str(s))) if !s.is_empty() => {
                answer.push_str(&format!(" && regexp({attr}, TARGET.{tag})"));
            }
            Some((_, v))
                if matches!(v, Value::Int(_) | Value::Real(_) | Value::Undefined)
                    && v.as_number().is_none_or(|x| x > 0.0) =>
            {
                answer.push_str(&format!(" && (TARGET.{tag} >= {attr})"));
            }
            _ => {}
        }
    }
    let checks_fsdomain = refers("filesystemdomain");
    let checks_transfer = refers("hasfiletransfer") || refers("hasjobtransferplugins");
    let domain = "(TARGET.FileSystemDomain == MY.FileSystemDomain)";
    match facts.should_transfer {
        ShouldTransfer::No if !checks_fsdomain => {
            answer.push_str(&format!(" && {domain}"));
        }
        ShouldTransfer::No => {}
        _ if !checks_transfer => {
            let (join, close) =
                if facts.should_transfer == ShouldTransfer::IfNeeded && !checks_fsdomain {
                    answer.push_str(&format!(" && ({domain}"));
                    (" || (", "))")
                } else {
                    (" && (", ")")
                };
            answer.push_str(join);
            answer.push_str("TARGET.HasFileTransfer");
            let when = match ad.lookup("WhenToTransferOutput") {
                Some(Expr::Lit(Value::Str(s))) => s.to_string(),
                _ => String::new(),
            };
            if when.eq_ignore_ascii_case("ON_SUCCESS") {
                answer.push_str(" && versioncmp( split(TARGET.CondorVersion)[1], \"8.9.7\" ) >= 0");
            }
            answer.push_str(close);
        }
        _ => {}
    }
    if needs_deferral(ad) {
        answer.push_str(" && TARGET.HasJobDeferral");
        answer.push_str(
            " && (((time() + ScheddInterval) >= (DeferralTime - DeferralPrepTime)) && (time() < (DeferralTime + DeferralWindow)))",
        );
    }
    Ok(answer)
}

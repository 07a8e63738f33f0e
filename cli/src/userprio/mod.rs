//! `cmctl userprio`: `condor_userprio` against the replicated accountant.
//!
//! Takes HTCondor's single-dash options (`-allusers`, `-most`, `-l`, `-quotas`, `-setprio U V`,
//! ...) so admins' muscle memory and scripts keep working. Edits are committed through Raft
//! (they are durable on a quorum when the command returns); displays are linearizable reads
//! unless `-stale`.
pub mod table;

use crate::client::{Client, ConnectArgs};
use aerie_core::accountant::{AccountantCommand, AccountingAd, AccountingRecord, UserprioRow};
use aerie_core::admin::UserprioQuery;
use aerie_core::state::{Command, GroupPolicy, GroupQuotaRecord, Quota};
use anyhow::{bail, Context};
use serde_json::json;
use std::collections::BTreeMap;
use table::Opts;

#[derive(Debug, clap::Args)]
#[command(disable_help_flag = true)]
pub struct Args {
    #[command(flatten)]
    pub conn: ConnectArgs,
    /// condor_userprio options: -allusers -most -all -l -quotas -usage -priority -flat
    /// -hierarchical -grouporder -json -stale -inputfile FILE -setprio U V -setfactor U V
    /// -setfloor U V -setceil U V -resetusage U -resetall -delete U -setaccum U V
    /// -setbegin U T -setlast U T [names...]
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// One edit, as parsed from the command line.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    SetPrio(String, f64),
    SetFactor(String, f64),
    SetFloor(String, f64),
    SetCeiling(String, f64),
    ResetUsage(String),
    ResetAll,
    Delete(String),
    SetAccum(String, f64),
    SetBegin(String, i64),
    SetLast(String, i64),
}

/// Everything the command line asked for.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    pub edit: Option<Edit>,
    pub opts: Opts,
    pub all_users: bool,
    pub long: bool,
    pub json: bool,
    pub stale: bool,
    pub input_file: Option<String>,
    pub names: Vec<String>,
    pub active_from: Option<i64>,
}

use crate::args::is_arg;

fn need_full_name(flag: &str, name: &str) -> anyhow::Result<()> {
    if !name.contains('@') && name != "<none>" && !name.starts_with("group_") {
        bail!(
            "{flag}: you must give the full name of the submitter (user@uid.domain), \
             or a group name; {name:?} is neither"
        );
    }
    Ok(())
}

fn num(flag: &str, v: &str) -> anyhow::Result<f64> {
    let x: f64 = v
        .trim()
        .parse()
        .with_context(|| format!("bad value {v:?} for {flag}: expected a number"))?;
    if !x.is_finite() {
        bail!("bad value {v:?} for {flag}: expected a finite number");
    }
    Ok(x)
}

fn int(flag: &str, v: &str) -> anyhow::Result<i64> {
    v.trim()
        .parse()
        .with_context(|| format!("bad value {v:?} for {flag}: expected a whole number"))
}

/// Parses condor_userprio's arguments. `now` is the caller's clock (for the one-day default).
pub fn parse(args: &[String], now: i64) -> anyhow::Result<Parsed> {
    let mut p = Parsed {
        opts: Opts {
            min_last_usage: now - 86400,
            ..Opts::default()
        },
        ..Default::default()
    };
    let mut i = 0;
    let take = |i: usize, k: usize, flag: &str| -> anyhow::Result<Vec<String>> {
        if args.len() < i + 1 + k {
            bail!("{flag} needs {k} argument(s)");
        }
        Ok(args[i + 1..i + 1 + k].to_vec())
    };
    let set_edit = |p: &mut Parsed, e: Edit| -> anyhow::Result<()> {
        if p.edit.is_some() {
            bail!("only one edit option per command");
        }
        p.edit = Some(e);
        Ok(())
    };
    while i < args.len() {
        let a = args[i].as_str();
        if is_arg(a, "setprio", 7) {
            let v = take(i, 2, a)?;
            need_full_name(a, &v[0])?;
            let x = num(a, &v[1])?;
            set_edit(&mut p, Edit::SetPrio(v[0].clone(), x))?;
            i += 3;
        } else if is_arg(a, "setfactor", 9) {
            let v = take(i, 2, a)?;
            need_full_name(a, &v[0])?;
            let x = num(a, &v[1])?;
            if x < 1.0 {
                bail!("bad value {} for -setfactor: priority factors must be greater than or equal to 1", v[1]);
            }
            set_edit(&mut p, Edit::SetFactor(v[0].clone(), x))?;
            i += 3;
        } else if is_arg(a, "setfloor", 8) {
            let v = take(i, 2, a)?;
            need_full_name(a, &v[0])?;
            let x = num(a, &v[1])?;
            if x < 0.0 {
                bail!(
                    "bad value {} for -setfloor: floor must be greater than or equal to 0",
                    v[1]
                );
            }
            set_edit(&mut p, Edit::SetFloor(v[0].clone(), x))?;
            i += 3;
        } else if is_arg(a, "setceiling", 7) {
            let v = take(i, 2, a)?;
            need_full_name(a, &v[0])?;
            let x = num(a, &v[1])?;
            if x < -1.0 {
                bail!(
                    "bad value {} for -setceil: ceiling must be greater than or equal to -1",
                    v[1]
                );
            }
            set_edit(&mut p, Edit::SetCeiling(v[0].clone(), x))?;
            i += 3;
        } else if is_arg(a, "setaccum", 8) {
            let v = take(i, 2, a)?;
            need_full_name(a, &v[0])?;
            let x = num(a, &v[1])?;
            if x < 0.0 {
                bail!(
                    "bad value {} for -setaccum: usage must be at least 0 seconds",
                    v[1]
                );
            }
            set_edit(&mut p, Edit::SetAccum(v[0].clone(), x))?;
            i += 3;
        } else if is_arg(a, "setbegin", 8) || is_arg(a, "setlast", 7) {
            let v = take(i, 2, a)?;
            need_full_name(a, &v[0])?;
            let t = int(a, &v[1])?;
            if t < 0 {
                bail!(
                    "bad value {} for {a}: time must be at least 0 seconds",
                    v[1]
                );
            }
            let e = if is_arg(a, "setbegin", 8) {
                Edit::SetBegin(v[0].clone(), t)
            } else {
                Edit::SetLast(v[0].clone(), t)
            };
            set_edit(&mut p, e)?;
            i += 3;
        } else if is_arg(a, "resetusage", 6) {
            let v = take(i, 1, a)?;
            need_full_name(a, &v[0])?;
            set_edit(&mut p, Edit::ResetUsage(v[0].clone()))?;
            i += 2;
        } else if is_arg(a, "delete", 3) {
            let v = take(i, 1, a)?;
            need_full_name(a, &v[0])?;
            set_edit(&mut p, Edit::Delete(v[0].clone()))?;
            i += 2;
        } else if is_arg(a, "resetall", 8) {
            set_edit(&mut p, Edit::ResetAll)?;
            i += 1;
        } else {
            match parse_display_flag(&mut p, args, i)? {
                Some(next) => i = next,
                None => {
                    bail!("unknown option {a:?} (cmctl userprio takes condor_userprio's options)")
                }
            }
        }
    }
    if !p.names.is_empty() {
        p.opts.min_last_usage = -1;
    }
    Ok(p)
}

fn parse_display_flag(p: &mut Parsed, args: &[String], i: usize) -> anyhow::Result<Option<usize>> {
    let a = args[i].as_str();
    let o = &mut p.opts;
    if is_arg(a, "allusers", 8) {
        p.all_users = true;
        o.min_last_usage = -1;
    } else if is_arg(a, "long", 1) {
        p.long = true;
    } else if is_arg(a, "json", 4) {
        p.json = true;
    } else if is_arg(a, "stale", 5) {
        p.stale = true;
    } else if is_arg(a, "hierarchical", 2) || a == "-heir" {
        o.hier = true;
        o.dash_hier = true;
    } else if is_arg(a, "flat", 2) {
        o.hier = false;
        o.dash_hier = true;
    } else if is_arg(a, "grouporder", 10) {
        o.group_order = true;
        o.hier = false;
        o.dash_hier = true;
    } else if is_arg(a, "quotas", 1) {
        o.detail |= table::QUOTAS;
        o.dash_quota = true;
    } else if is_arg(a, "surplus", 7) {
        o.detail |= table::SURPLUS;
        o.dash_quota = true;
    } else if is_arg(a, "sortkey", 2) {
        o.detail |= table::SORT_KEY;
    } else if is_arg(a, "all", 3) {
        o.detail |= table::ALL;
    } else if is_arg(a, "most", 2) {
        o.detail |= table::MOST;
    } else if is_arg(a, "groupid", 7) {
        o.detail |= table::GROUP_ID;
    } else if is_arg(a, "order", 5) {
        o.detail |= table::ORDER;
    } else if is_arg(a, "usage", 2) {
        o.detail |= table::USAGE | table::USE_TIME1 | table::USE_TIME2;
    } else if is_arg(a, "priority", 4) {
        o.detail |= table::PRIOS;
    } else if is_arg(a, "inputfile", 2) {
        let f = args
            .get(i + 1)
            .with_context(|| format!("{a} needs a file name"))?;
        p.input_file = Some(f.clone());
        return Ok(Some(i + 2));
    } else if is_arg(a, "activefrom", 10) {
        if args.len() < i + 4 {
            bail!("{a} needs <month> <day> <year>");
        }
        let m = int(a, &args[i + 1])?;
        let d = int(a, &args[i + 2])?;
        let mut y = int(a, &args[i + 3])?;
        if y < 50 {
            y += 2000;
        } else if y < 1900 {
            y += 1900;
        }
        use chrono::TimeZone;
        let t = chrono::Local
            .with_ymd_and_hms(y as i32, m as u32, d as u32, 0, 0, 0)
            .earliest()
            .with_context(|| format!("bad date {m}/{d}/{y} for {a}"))?;
        p.active_from = Some(t.timestamp());
        o.min_last_usage = t.timestamp();
        return Ok(Some(i + 4));
    } else if !a.starts_with('-') {
        p.names.push(a.to_string());
    } else {
        return Ok(None);
    }
    Ok(Some(i + 1))
}

/// The Raft command for an edit, and the line condor_userprio prints when it succeeds.
pub fn edit_command(e: &Edit) -> (Command, String) {
    use AccountantCommand as A;
    let (cmd, msg) = match e {
        Edit::SetPrio(n, v) => (
            A::SetPriority {
                name: n.clone(),
                value: *v,
            },
            format!("The priority of {n} was set to {v:.6}"),
        ),
        Edit::SetFactor(n, v) => (
            A::SetFactor {
                name: n.clone(),
                value: *v,
            },
            format!("The priority factor of {n} was set to {v:.6}"),
        ),
        Edit::SetFloor(n, v) => (
            A::SetFloor {
                name: n.clone(),
                value: *v,
            },
            format!("The floor of {n} was set to {}", *v as i64),
        ),
        Edit::SetCeiling(n, v) => (
            A::SetCeiling {
                name: n.clone(),
                value: *v,
            },
            format!("The ceiling of {n} was set to {}", *v as i64),
        ),
        Edit::ResetUsage(n) => (
            A::ResetUsage { name: n.clone() },
            format!("The accumulated usage of {n} was reset"),
        ),
        Edit::ResetAll => (
            A::ResetAll,
            "The accumulated usage was reset for all users".to_string(),
        ),
        Edit::Delete(n) => (
            A::Delete { name: n.clone() },
            format!("The accountant record named {n} was deleted"),
        ),
        Edit::SetAccum(n, v) => (
            A::SetAccumulatedUsage {
                name: n.clone(),
                value: *v,
            },
            format!("The Accumulated Usage of {n} was set to {v:.6}"),
        ),
        Edit::SetBegin(n, t) => (
            A::SetBeginUsageTime {
                name: n.clone(),
                time: *t,
            },
            format!("The Begin Usage Time of {n} was set to {t}"),
        ),
        Edit::SetLast(n, t) => (
            A::SetLastUsageTime {
                name: n.clone(),
                time: *t,
            },
            format!("The Last Usage Time of {n} was set to {t}"),
        ),
    };
    (Command::Accountant(cmd), msg)
}

/// Turns the CM's rows into accounting-ad records, as a negotiator would publish them.
///
/// A group's quota columns are what the last committed cycle computed (`quotas`, from its
/// record), as HTCondor's negotiator publishes them in its Accountant ads after each cycle:
/// the configured quota (a runtime override included), the effective and subtree quotas, the
/// requested resources. A group the ledger has no row for yet (nothing charged) still gets a
/// record, as HTCondor reports every configured group. Without a cycle record for a group
/// (before the first cycle, or from a CM that predates the record), the runtime override
/// stands in for all three quotas.
pub fn rows_to_records(
    rows: &[UserprioRow],
    groups: &BTreeMap<String, GroupPolicy>,
    quotas: &[GroupQuotaRecord],
) -> Vec<AccountingRecord> {
    let mut out: Vec<AccountingRecord> = rows
        .iter()
        .map(|r| {
            let mut a = AccountingRecord {
                name: r.name.clone(),
                priority: Some(r.effective_priority),
                priority_factor: Some(r.priority_factor),
                resources_used: Some(r.resources_used.round() as i64),
                weighted_resources_used: Some(r.resources_used),
                accumulated_usage: Some(r.accumulated_usage),
                weighted_accumulated_usage: Some(r.accumulated_usage),
                begin_usage_time: Some(r.begin_usage_time),
                last_usage_time: Some(r.last_usage_time),
                accounting_group: Some(if r.accounting_group.is_empty() {
                    "<none>".into()
                } else {
                    r.accounting_group.clone()
                }),
                is_accounting_group: Some(r.is_group),
                ceiling: Some(r.ceiling),
                floor: Some(r.floor),
                ..Default::default()
            };
            if r.is_group {
                match quotas.iter().find(|q| q.name == r.name) {
                    Some(q) => set_cycle_quota(&mut a, q),
                    None => set_override_quota(&mut a, groups.get(&r.name)),
                }
            }
            a
        })
        .collect();
    for q in quotas {
        if !rows.iter().any(|r| r.is_group && r.name == q.name) {
            let mut a = AccountingRecord {
                name: q.name.clone(),
                accounting_group: Some(q.name.clone()),
                is_accounting_group: Some(true),
                ..Default::default()
            };
            set_cycle_quota(&mut a, q);
            out.push(a);
        }
    }
    out
}

/// The quota columns from the last cycle's record.
fn set_cycle_quota(a: &mut AccountingRecord, q: &GroupQuotaRecord) {
    a.config_quota = Some(q.config_quota);
    a.effective_quota = Some(q.effective_quota);
    a.subtree_quota = Some(q.subtree_quota);
    a.requested = Some(q.requested);
    a.surplus_policy = Some(surplus_policy(q.accept_surplus).into());
}

/// The quota columns from the runtime override alone (no cycle computed them yet).
fn set_override_quota(a: &mut AccountingRecord, pol: Option<&GroupPolicy>) {
    let pol = pol.cloned().unwrap_or_default();
    let q = match pol.quota {
        Some(Quota::Static(v) | Quota::Dynamic(v)) => v,
        None => 0.0,
    };
    a.config_quota = Some(q);
    a.effective_quota = Some(q);
    a.subtree_quota = Some(q);
    a.surplus_policy = Some(surplus_policy(pol.accept_surplus == Some(true)).into());
}

/// `SurplusPolicy` as HTCondor's accountant writes it.
fn surplus_policy(accept: bool) -> &'static str {
    if accept {
        "byquota"
    } else {
        "no"
    }
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let now = chrono::Utc::now().timestamp();
    if args
        .args
        .iter()
        .any(|a| a == "-h" || a == "-help" || a == "--help")
    {
        println!(
            "usage: cmctl userprio [--cms host:port,...] [condor_userprio options] [names...]"
        );
        println!("  display: -allusers -most -all -l -quotas -usage -priority -flat -hierarchical");
        println!("           -grouporder -json -stale -activefrom M D Y -inputfile FILE");
        println!("  edit:    -setprio U V -setfactor U V -setfloor U V -setceil U V -resetusage U");
        println!("           -resetall -delete U -setaccum U V -setbegin U T -setlast U T");
        return Ok(0);
    }
    let p = parse(&args.args, now)?;
    if let Some(e) = &p.edit {
        let mut client = Client::new(&args.conn)?;
        let (cmd, msg) = edit_command(e);
        client.write_ok(cmd)?;
        println!("{msg}");
        return Ok(0);
    }
    let mut ad = if let Some(f) = &p.input_file {
        let text = std::fs::read_to_string(f).with_context(|| format!("cannot read {f}"))?;
        AccountingAd::parse(&text, f)?
    } else {
        let mut client = Client::new(&args.conn)?;
        let reply = client.query(UserprioQuery { now: Some(now) }, p.stale)?;
        AccountingAd {
            last_update: Some(reply.last_tick.unwrap_or(reply.now)),
            records: rows_to_records(&reply.rows, &reply.groups, &reply.last_cycle_groups),
        }
    };
    let last_update = ad.last_update.unwrap_or(0);
    if !p.names.is_empty() {
        ad.records.retain(|r| {
            p.names.iter().any(|n| {
                if n.contains('@') || n == "<none>" {
                    r.name == *n
                } else {
                    r.name
                        .split('@')
                        .next()
                        .is_some_and(|u| u.rsplit('.').next() == Some(n.as_str()))
                        || r.name == *n
                }
            })
        });
    }
    if p.json {
        let v: Vec<serde_json::Value> = ad
            .records
            .iter()
            .map(|r| {
                json!({
                    "Name": r.name, "Priority": r.priority.unwrap_or(0.0),
                    "PriorityFactor": r.priority_factor, "ResourcesUsed": r.resources_used,
                    "WeightedResourcesUsed": r.weighted_resources_used,
                    "AccumulatedUsage": r.accumulated_usage,
                    "WeightedAccumulatedUsage": r.weighted_accumulated_usage,
                    "BeginUsageTime": r.begin_usage_time, "LastUsageTime": r.last_usage_time,
                    "AccountingGroup": r.accounting_group,
                    "IsAccountingGroup": r.is_accounting_group.unwrap_or(false),
                    "Ceiling": r.ceiling, "Floor": r.floor, "ConfigQuota": r.config_quota,
                    "EffectiveQuota": r.effective_quota, "SubtreeQuota": r.subtree_quota,
                    "SurplusPolicy": r.surplus_policy, "Requested": r.requested,
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"LastUpdate": last_update, "records": v}))?
        );
        return Ok(0);
    }
    if p.long {
        print!("{}", ad.to_long());
        return Ok(0);
    }
    print!("{}", table::render(&ad.records, &p.opts, last_update));
    Ok(0)
}

#[cfg(test)]
mod tests;

//! `cmctl quota set|surplus|unset` and `cmctl limit set|unset`: runtime pool policy, replicated
//! through Raft so every CM (and the next leader) negotiates with it.
use crate::client::{Client, ConnectArgs};
use aerie_core::admin::{PolicyQuery, StateQuery};
use aerie_core::state::{Command, PoolState, Quota};
use anyhow::{bail, Context};
use std::collections::BTreeMap;

#[derive(Debug, clap::Args)]
pub struct QuotaArgs {
    #[command(flatten)]
    pub conn: ConnectArgs,
    #[command(subcommand)]
    pub cmd: QuotaCmd,
}

#[derive(Debug, clap::Subcommand)]
pub enum QuotaCmd {
    /// Set a group's quota: a number of (weighted) slots, e.g. 40, or a fraction of the
    /// parent's quota written with a decimal point, e.g. 0.25 (as GROUP_QUOTA_DYNAMIC_<g>).
    Set { group: String, value: String },
    /// Allow (on) or forbid (off) a group to use surplus (GROUP_ACCEPT_SURPLUS_<g>).
    Surplus { group: String, on_off: String },
    /// Drop the runtime quota and surplus overrides of a group (back to the config files).
    Unset { group: String },
    /// Show the runtime overrides.
    Show {
        #[arg(long)]
        stale: bool,
    },
    /// The group tree: each group's configured quota and surplus (from the replicated
    /// negotiation policy, naming the knob), its runtime override, and what is in force.
    List {
        /// Answer from this CM's copy without asking the leader.
        #[arg(long)]
        stale: bool,
        /// One JSON object per group instead of the table.
        #[arg(long)]
        json: bool,
    },
}

/// One group as `cmctl quota list` shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GroupRow {
    /// The group (`group_a.sub`).
    pub group: String,
    /// The configured quota and the knob that sets it, if any.
    pub configured: Option<(Quota, String)>,
    /// The runtime override (`cmctl quota set`), if any.
    pub overridden: Option<Quota>,
    /// What the negotiator uses: the override, else the configured quota.
    pub in_force: Option<Quota>,
    /// Whether the group accepts surplus, and where that comes from (a knob, the runtime
    /// override, or HTCondor's default `false`).
    pub surplus: (bool, String),
}

fn knob<'a>(knobs: &'a BTreeMap<String, String>, name: &str) -> Option<(&'a str, &'a str)> {
    knobs
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .filter(|(_, v)| !v.trim().is_empty())
}

fn truthy(v: &str) -> bool {
    matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "true" | "1" | "yes" | "on"
    )
}

/// The group tree from the replicated state: the groups `GROUP_NAMES` lists in the
/// replicated negotiation policy and those with a runtime override, in name order (a
/// subgroup after its parent).
pub fn group_rows(state: &PoolState) -> Vec<GroupRow> {
    let empty = BTreeMap::new();
    let knobs = state.policy.as_ref().map(|p| &p.knobs).unwrap_or(&empty);
    let mut names: Vec<String> = knob(knobs, "GROUP_NAMES")
        .map(|(_, v)| {
            v.split(|c: char| c == ',' || c.is_whitespace())
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    for g in state.groups.keys() {
        if !names.iter().any(|n| n.eq_ignore_ascii_case(g)) {
            names.push(g.clone());
        }
    }
    names.sort_by_key(|n| n.to_ascii_lowercase());
    names
        .into_iter()
        .map(|group| {
            let over = state
                .groups
                .iter()
                .find(|(g, _)| g.eq_ignore_ascii_case(&group))
                .map(|(_, p)| p.clone())
                .unwrap_or_default();
            // GROUP_QUOTA_<g> (static) wins over GROUP_QUOTA_DYNAMIC_<g>, as in HTCondor.
            let configured = knob(knobs, &format!("GROUP_QUOTA_{group}"))
                .and_then(|(k, v)| {
                    v.trim()
                        .parse()
                        .ok()
                        .map(|x| (Quota::Static(x), k.to_string()))
                })
                .or_else(|| {
                    knob(knobs, &format!("GROUP_QUOTA_DYNAMIC_{group}")).and_then(|(k, v)| {
                        v.trim()
                            .parse()
                            .ok()
                            .map(|x| (Quota::Dynamic(x), k.to_string()))
                    })
                });
            let surplus = match over.accept_surplus {
                Some(b) => (b, "runtime override".to_string()),
                None => knob(knobs, &format!("GROUP_ACCEPT_SURPLUS_{group}"))
                    .or_else(|| knob(knobs, "GROUP_ACCEPT_SURPLUS"))
                    .map(|(k, v)| (truthy(v), k.to_string()))
                    .unwrap_or((false, "default".to_string())),
            };
            GroupRow {
                in_force: over.quota.or(configured.as_ref().map(|c| c.0)),
                configured,
                overridden: over.quota,
                group,
                surplus,
            }
        })
        .collect()
}

fn quota_text(q: &Option<Quota>) -> String {
    match q {
        Some(Quota::Static(v)) => format!("{v}"),
        Some(Quota::Dynamic(f)) => format!("{f} of parent"),
        None => "-".into(),
    }
}

/// `cmctl quota list`'s table.
pub fn render_groups(rows: &[GroupRow], policy_version: u64) -> String {
    let mut out = format!(
        "{:<24} {:<18} {:<34} {:<14} {:<14} {}\n",
        "GROUP", "CONFIGURED", "FROM", "OVERRIDE", "IN FORCE", "SURPLUS (FROM)"
    );
    for r in rows {
        let (cfg, from) = match &r.configured {
            Some((q, k)) => (
                quota_text(&Some(*q)),
                format!("{k} (policy v{policy_version})"),
            ),
            None => ("-".into(), "-".into()),
        };
        out.push_str(&format!(
            "{:<24} {:<18} {:<34} {:<14} {:<14} {} ({})\n",
            r.group,
            cfg,
            from,
            quota_text(&r.overridden),
            quota_text(&r.in_force),
            if r.surplus.0 { "yes" } else { "no" },
            r.surplus.1
        ));
    }
    if rows.is_empty() {
        out.push_str("(no groups: GROUP_NAMES is empty and no runtime quota is set)\n");
    }
    out
}

#[derive(Debug, clap::Args)]
pub struct LimitArgs {
    #[command(flatten)]
    pub conn: ConnectArgs,
    #[command(subcommand)]
    pub cmd: LimitCmd,
}

#[derive(Debug, clap::Subcommand)]
pub enum LimitCmd {
    /// Set concurrency limit NAME to N (NAME_LIMIT).
    Set { name: String, value: String },
    /// Drop the runtime override (back to the config files).
    Unset { name: String },
}

/// `N` -> static quota; `F` with a decimal point and 0 <= F <= 1 -> dynamic fraction.
pub fn parse_quota(value: &str) -> anyhow::Result<Quota> {
    let v: f64 = value.trim().parse().with_context(|| {
        format!(
            "bad value {value:?} for a quota: expected a number of slots (40) or a fraction (0.25)"
        )
    })?;
    if !v.is_finite() || v < 0.0 {
        bail!("bad value {value:?} for a quota: must be a number >= 0");
    }
    if value.contains('.') && v <= 1.0 {
        Ok(Quota::Dynamic(v))
    } else {
        Ok(Quota::Static(v))
    }
}

fn parse_on_off(v: &str) -> anyhow::Result<bool> {
    match v.to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        _ => bail!("bad value {v:?} for surplus: expected on or off"),
    }
}

fn write(client: &mut Client, cmd: Command) -> anyhow::Result<i32> {
    let r = client.write_ok(cmd)?;
    println!("committed at log index {}", r.log_index);
    Ok(0)
}

pub fn run_quota(args: QuotaArgs) -> anyhow::Result<i32> {
    let mut client = Client::new(&args.conn)?;
    match args.cmd {
        QuotaCmd::Set { group, value } => {
            let q = parse_quota(&value)?;
            write(
                &mut client,
                Command::SetQuota {
                    group,
                    quota: Some(q),
                },
            )
        }
        QuotaCmd::Surplus { group, on_off } => {
            let allow = parse_on_off(&on_off)?;
            write(
                &mut client,
                Command::SetSurplus {
                    group,
                    allow: Some(allow),
                },
            )
        }
        QuotaCmd::Unset { group } => {
            write(
                &mut client,
                Command::SetQuota {
                    group: group.clone(),
                    quota: None,
                },
            )?;
            write(&mut client, Command::SetSurplus { group, allow: None })
        }
        QuotaCmd::List { stale, json } => {
            let state = client.query(StateQuery, stale)?;
            let rows = group_rows(&state);
            if json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                let v = state.policy.as_ref().map(|p| p.version).unwrap_or(0);
                print!("{}", render_groups(&rows, v));
            }
            Ok(0)
        }
        QuotaCmd::Show { stale } => {
            let r = client.query(PolicyQuery, stale)?;
            println!("{}", serde_json::to_string_pretty(&r)?);
            Ok(0)
        }
    }
}

pub fn run_limit(args: LimitArgs) -> anyhow::Result<i32> {
    let mut client = Client::new(&args.conn)?;
    match args.cmd {
        LimitCmd::Set { name, value } => {
            let v: f64 = value.trim().parse().with_context(|| {
                format!("bad value {value:?} for limit {name}: expected a number")
            })?;
            write(
                &mut client,
                Command::SetLimit {
                    name,
                    limit: Some(v),
                },
            )
        }
        LimitCmd::Unset { name } => write(&mut client, Command::SetLimit { name, limit: None }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_group_tree_says_where_each_value_comes_from() {
        let mut st = PoolState::default();
        let knobs: BTreeMap<String, String> = [
            ("GROUP_NAMES", "group_a, group_b, group_a.sub"),
            ("GROUP_QUOTA_group_a", "20"),
            ("GROUP_QUOTA_DYNAMIC_group_b", "0.25"),
            ("GROUP_QUOTA_DYNAMIC_group_a", "0.5"),
            ("GROUP_ACCEPT_SURPLUS", "true"),
            ("GROUP_ACCEPT_SURPLUS_group_b", "false"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        st.policy = Some(aerie_core::state::NegotiationPolicy {
            version: 3,
            knobs,
            source: "test".into(),
            time: 0,
        });
        st.groups.insert(
            "group_a.sub".into(),
            aerie_core::state::GroupPolicy {
                quota: Some(Quota::Static(5.0)),
                accept_surplus: Some(false),
            },
        );
        st.groups.insert(
            "group_c".into(),
            aerie_core::state::GroupPolicy {
                quota: Some(Quota::Dynamic(0.1)),
                accept_surplus: None,
            },
        );
        let rows = group_rows(&st);
        let names: Vec<&str> = rows.iter().map(|r| r.group.as_str()).collect();
        assert_eq!(names, ["group_a", "group_a.sub", "group_b", "group_c"]);
        // Static wins over dynamic; the knob is named.
        assert_eq!(
            rows[0].configured,
            Some((Quota::Static(20.0), "GROUP_QUOTA_group_a".into()))
        );
        assert_eq!(rows[0].in_force, Some(Quota::Static(20.0)));
        assert_eq!(rows[0].surplus, (true, "GROUP_ACCEPT_SURPLUS".into()));
        // The runtime override is in force and named as such.
        assert_eq!(rows[1].configured, None);
        assert_eq!(rows[1].in_force, Some(Quota::Static(5.0)));
        assert_eq!(rows[1].surplus, (false, "runtime override".into()));
        assert_eq!(
            rows[2].surplus,
            (false, "GROUP_ACCEPT_SURPLUS_group_b".into())
        );
        assert_eq!(rows[2].in_force, Some(Quota::Dynamic(0.25)));
        // A group known only by its override.
        assert_eq!(rows[3].overridden, Some(Quota::Dynamic(0.1)));
        let table = render_groups(&rows, 3);
        assert!(table.contains("GROUP_QUOTA_group_a (policy v3)"), "{table}");
        assert!(table.contains("0.1 of parent"), "{table}");
    }

    #[test]
    fn quota_values() {
        assert_eq!(parse_quota("40").unwrap(), Quota::Static(40.0));
        assert_eq!(parse_quota("0.25").unwrap(), Quota::Dynamic(0.25));
        assert_eq!(parse_quota("2.5").unwrap(), Quota::Static(2.5));
        assert!(parse_quota("-1").is_err());
        assert!(parse_quota("lots")
            .unwrap_err()
            .to_string()
            .contains("bad value"));
    }
}

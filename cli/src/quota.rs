//! `cmctl quota set|surplus|unset` and `cmctl limit set|unset`: runtime pool policy, replicated
//! through Raft so every CM (and the next leader) negotiates with it.
use crate::client::{Client, ConnectArgs};
use aerie_core::admin::PolicyQuery;
use aerie_core::state::{Command, Quota};
use anyhow::{bail, Context};

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

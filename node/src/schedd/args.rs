//! The arguments of `aerie-node access-point`, and the knobs it reads from the HTCondor
//! configuration (`--config`): `UID_DOMAIN`, `QUEUE_SUPER_USERS`, `GROUP_NAMES`,
//! `NICE_USER_ACCOUNTING_GROUP_NAME`, `CLAIM_WORKLIFE`, `ALIVE_INTERVAL`,
//! `PERIODIC_EXPR_INTERVAL` (HTCondor's defaults when unset), and what
//! `use FEATURE : AssignAccountingGroup(MAP_FILE)` sets (see [`super::assign_group`]).
use super::assign_group::AssignAccountingGroup;
use super::daemon::Settings;
use super::queue::SubmitPolicy;
use super::usermap::UserMap;
use aerie_config::{Config, Context, LoadOptions};
use anyhow::Context as _;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The arguments of `aerie-node access-point`.
#[derive(Args, Debug, Clone)]
pub struct AccessPointArgs {
    /// The central managers' collector addresses (host:port,...) to advertise to; none: the
    /// access point does not advertise (tests).
    #[arg(long, value_delimiter = ',')]
    pub cms: Vec<String>,
    /// The directory of the durable job queue (RocksDB) and history.
    #[arg(long)]
    pub spool: PathBuf,
    /// The Unix socket users' tools (cmctl submit, q, rm...) connect to (mode 0666; the
    /// caller is the socket peer's Unix account).
    #[arg(long)]
    pub socket: PathBuf,
    /// Where the AccessPoint (leader) and Shadow (execute nodes) gRPC services listen.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// The host:port to advertise for --listen (default: its bound address).
    #[arg(long)]
    pub address: Option<String>,
    /// The access point's name (the Scheduler ad's Name; default: this host's name).
    #[arg(long)]
    pub name: Option<String>,
    /// An HTCondor configuration file to read the knobs from.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// UID_DOMAIN, overriding the configuration.
    #[arg(long)]
    pub domain: Option<String>,
    /// Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long)]
    pub metrics_listen: Option<SocketAddr>,
    /// Seconds between full re-advertisements of the access point's ads.
    #[arg(long, default_value_t = 20)]
    pub update_interval: u64,
}

fn host_name() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "localhost".into())
}

fn secs(cfg: &Config, knob: &str, default: u64) -> anyhow::Result<Duration> {
    Ok(cfg
        .duration(knob)
        .with_context(|| format!("knob {knob}"))?
        .unwrap_or(Duration::from_secs(default)))
}

impl AccessPointArgs {
    /// The settings from the arguments and the configuration; `my_address` is the bound
    /// TCP address unless --address names one.
    pub fn settings(&self, bound: SocketAddr) -> anyhow::Result<Settings> {
        let cfg = match &self.config {
            Some(p) => Config::load(p, &LoadOptions::for_subsystem("SCHEDD"))
                .with_context(|| format!("reading {}", p.display()))?,
            None => Config::empty(Context::subsystem("SCHEDD")),
        };
        let domain = match &self.domain {
            Some(d) => d.clone(),
            None => cfg
                .string("UID_DOMAIN")
                .context("knob UID_DOMAIN")?
                .filter(|d| !d.is_empty())
                .unwrap_or_else(host_name),
        };
        let mut super_users = cfg
            .list("QUEUE_SUPER_USERS")
            .context("knob QUEUE_SUPER_USERS")?;
        if cfg.lookup("QUEUE_SUPER_USERS").is_none() {
            super_users = vec!["root".into(), "condor".into()];
        }
        let group_names = cfg.list("GROUP_NAMES").context("knob GROUP_NAMES")?;
        let nice_user_group = cfg
            .string("NICE_USER_ACCOUNTING_GROUP_NAME")
            .context("knob NICE_USER_ACCOUNTING_GROUP_NAME")?
            .filter(|g| !g.is_empty())
            .unwrap_or_else(|| "nice-user".into());
        let assign_group = assign_group(&cfg)?;
        let claim_worklife = cfg
            .int("CLAIM_WORKLIFE")
            .context("knob CLAIM_WORKLIFE")?
            .unwrap_or(1200);
        let me = nix::unistd::geteuid();
        let only_user = if me.is_root() {
            None
        } else {
            Some(
                nix::unistd::User::from_uid(me)
                    .ok()
                    .flatten()
                    .map(|u| u.name)
                    .ok_or_else(|| anyhow::anyhow!("uid {me} has no user name"))?,
            )
        };
        let my_address = match &self.address {
            Some(a) => format!("<{}>", crate::sim::bare_addr(a)),
            None => format!("<{bound}>"),
        };
        Ok(Settings {
            name: self.name.clone().unwrap_or_else(host_name),
            policy: SubmitPolicy {
                domain: domain.clone(),
                group_names,
                nice_user_group,
                only_user,
                assign_group,
            },
            domain,
            super_users,
            claim_worklife,
            alive_interval: secs(&cfg, "ALIVE_INTERVAL", 300)?.max(Duration::from_secs(1)),
            periodic_interval: secs(&cfg, "PERIODIC_EXPR_INTERVAL", 60)?
                .max(Duration::from_secs(1)),
            my_address,
        })
    }
}

/// `use FEATURE : AssignAccountingGroup(MAP_FILE [, CHECK_REQUEST])`, as the metaknob leaves
/// it in the configuration: `AssignAccountingGroup` in `JOB_TRANSFORM_NAMES`, the map in
/// `CLASSAD_USER_MAPFILE_AssignAccountingGroup`, and `CheckRequestedGroup` in
/// `SUBMIT_REQUIREMENT_NAMES` unless CHECK_REQUEST is false.
fn assign_group(cfg: &Config) -> anyhow::Result<Option<AssignAccountingGroup>> {
    const NAME: &str = "AssignAccountingGroup";
    let has = |knob: &str, item: &str| -> anyhow::Result<bool> {
        Ok(cfg
            .list(knob)
            .with_context(|| format!("knob {knob}"))?
            .iter()
            .any(|n| n.eq_ignore_ascii_case(item)))
    };
    if !has("JOB_TRANSFORM_NAMES", NAME)? {
        return Ok(None);
    }
    let knob = format!("CLASSAD_USER_MAPFILE_{NAME}");
    let path = cfg
        .string(&knob)
        .with_context(|| format!("knob {knob}"))?
        .filter(|p| !p.is_empty())
        .ok_or_else(|| anyhow::anyhow!("JOB_TRANSFORM_NAMES names {NAME} but {knob} is not set"))?;
    let map =
        UserMap::load(std::path::Path::new(&path)).map_err(|e| anyhow::anyhow!("{knob}: {e}"))?;
    Ok(Some(AssignAccountingGroup {
        map,
        check_request: has("SUBMIT_REQUIREMENT_NAMES", "CheckRequestedGroup")?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str, dir: &std::path::Path) -> Config {
        let p = dir.join("ap.conf");
        std::fs::write(&p, text).unwrap();
        Config::load(&p, &LoadOptions::for_subsystem("SCHEDD")).unwrap()
    }

    #[test]
    fn the_assign_accounting_group_metaknob_names_the_map_and_the_check() {
        let dir = tempfile::tempdir().unwrap();
        let map = dir.path().join("groups.map");
        std::fs::write(
            &map,
            "* Alice group_physics\n* /^student_.*/ group_students\n",
        )
        .unwrap();
        let cfg = config(
            &format!("use FEATURE : AssignAccountingGroup({})\n", map.display()),
            dir.path(),
        );
        let a = assign_group(&cfg).unwrap().unwrap();
        assert!(a.check_request);
        assert_eq!(a.map.lookup("student_1").as_deref(), Some("group_students"));
        let cfg = config(
            &format!(
                "use FEATURE : AssignAccountingGroup({}, false)\n",
                map.display()
            ),
            dir.path(),
        );
        assert!(!assign_group(&cfg).unwrap().unwrap().check_request);
        assert!(assign_group(&config("", dir.path())).unwrap().is_none());
        std::fs::write(&map, "* Alice\n").unwrap();
        let cfg = config(
            &format!("use FEATURE : AssignAccountingGroup({})\n", map.display()),
            dir.path(),
        );
        let e = format!("{:#}", assign_group(&cfg).unwrap_err());
        assert!(e.contains("groups.map, line 1"), "{e}");
    }
}

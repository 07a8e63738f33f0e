//! The arguments of `aerie-node execute`: the HTCondor configuration to read, where the
//! node keeps its state and its jobs' sandboxes, the CMs to advertise to, and where it listens.
use aerie_config::{Config, Origin};
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// How often the policy is evaluated unless the configuration sets `POLLING_INTERVAL`:
/// HTCondor's default is 5 s, but a second keeps lease, retirement and vacate times within a
/// second of what they say, for the cost of a few evaluations of a handful of slots.
pub const DEFAULT_POLLING_INTERVAL: Duration = Duration::from_secs(1);

/// Whether the admin set `knob` (a file, the environment or the program), not a default.
fn set_by_admin(cfg: &Config, knob: &str) -> bool {
    matches!(
        cfg.lookup(knob).map(|f| f.origin),
        Some(Origin::File(_) | Origin::Environment | Origin::Override)
    )
}

/// The arguments of `aerie-node execute`.
#[derive(Args, Debug, Clone)]
pub struct ExecuteArgs {
    /// The HTCondor configuration file (read for the STARTD subsystem: `NUM_CPUS`,
    /// `SLOT_TYPE_<N>`, `START`, `PREEMPT`, `UPDATE_INTERVAL`, `EXECUTE`...); without it,
    /// HTCondor 23.9.6's defaults.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Where the node keeps its state (the execute directory by default).
    #[arg(long, default_value = "aerie-execute")]
    pub state_dir: PathBuf,
    /// HTCondor's `EXECUTE`: where the jobs' sandboxes are made. Default: the configuration's
    /// `EXECUTE` when the admin's file sets it, else `STATE_DIR/execute` (HTCondor's built-in
    /// default, `$(LOCAL_DIR)/execute`, names HTCondor's own directory, not ours).
    #[arg(long)]
    pub execute_dir: Option<PathBuf>,
    /// The central managers' collector addresses (host:port,...); none: the slots are not
    /// advertised (a node tried out alone, or tests).
    #[arg(long, value_delimiter = ',')]
    pub cms: Vec<String>,
    /// Where the `Startd` and `Execute` gRPC services listen; the bound address is printed.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Where `/metrics` (Prometheus) is served; none: no metrics endpoint.
    #[arg(long)]
    pub metrics_listen: Option<SocketAddr>,
    /// The machine's name in its slot ads (`Machine`, `slotN@NAME`); default: the host name.
    #[arg(long)]
    pub name: Option<String>,
    /// Test-only: keep FILE holding every slot ad as the collector would receive it (private
    /// `ClaimId` included), as a JSON list of old-syntax ads.
    #[arg(long, hide = true)]
    pub dump_ads: Option<PathBuf>,
}

impl ExecuteArgs {
    /// Checks the values clap cannot: no empty CM address, a plain machine name.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.cms.iter().any(|c| c.trim().is_empty()) {
            anyhow::bail!("--cms has an empty address in {:?}", self.cms.join(","));
        }
        if let Some(n) = &self.name {
            let ok = !n.is_empty()
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
            if !ok {
                anyhow::bail!("--name: {n:?} is not a host name (letters, digits, '_', '-', '.')");
            }
        }
        Ok(())
    }
}

impl ExecuteArgs {
    /// Where the sandboxes go: `--execute-dir`, else the configuration's `EXECUTE` when the
    /// admin set it, else `STATE_DIR/execute`.
    pub fn execute_dir(&self, cfg: &Config) -> anyhow::Result<PathBuf> {
        if let Some(d) = &self.execute_dir {
            return Ok(d.clone());
        }
        if set_by_admin(cfg, "EXECUTE") {
            if let Some(d) = cfg
                .expanded("EXECUTE")
                .map_err(|e| anyhow::anyhow!("{e}"))?
            {
                return Ok(PathBuf::from(d.trim()));
            }
        }
        Ok(self.state_dir.join("execute"))
    }
}

/// The policy evaluation period: `POLLING_INTERVAL` (seconds, at least 1) when the admin set
/// it, else [`DEFAULT_POLLING_INTERVAL`] (src/condor_startd.V6/ResMgr.cpp's `polling_interval`).
pub fn polling_interval(cfg: &Config) -> anyhow::Result<Duration> {
    if !set_by_admin(cfg, "POLLING_INTERVAL") {
        return Ok(DEFAULT_POLLING_INTERVAL);
    }
    let s = cfg
        .int("POLLING_INTERVAL")
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .unwrap_or(1);
    Ok(Duration::from_secs(s.max(1) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aerie_config::LoadOptions;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ExecuteArgs,
    }

    fn args(extra: &[&str]) -> ExecuteArgs {
        let mut argv = vec!["x", "--state-dir", "/var/lib/aerie"];
        argv.extend_from_slice(extra);
        Cli::parse_from(argv).args
    }

    fn cfg(text: &str) -> Config {
        Config::parse_str(text, "test.conf", &LoadOptions::for_subsystem("STARTD")).unwrap()
    }

    #[test]
    fn the_execute_directory_is_the_flag_then_the_admins_execute_then_the_state_dir() {
        let set = cfg("LOCAL_DIR = /srv/condor\nEXECUTE = $(LOCAL_DIR)/scratch\n");
        assert_eq!(
            args(&["--execute-dir", "/tmp/x"])
                .execute_dir(&set)
                .unwrap(),
            PathBuf::from("/tmp/x")
        );
        assert_eq!(
            args(&[]).execute_dir(&set).unwrap(),
            PathBuf::from("/srv/condor/scratch")
        );
        // HTCondor's default EXECUTE names its own directory: not ours.
        assert_eq!(
            args(&[]).execute_dir(&cfg("")).unwrap(),
            PathBuf::from("/var/lib/aerie/execute")
        );
    }

    #[test]
    fn the_polling_interval_is_the_admins_else_one_second() {
        assert_eq!(
            polling_interval(&cfg("")).unwrap(),
            DEFAULT_POLLING_INTERVAL
        );
        assert_eq!(
            polling_interval(&cfg("POLLING_INTERVAL = 5\n")).unwrap(),
            Duration::from_secs(5)
        );
        assert_eq!(
            polling_interval(&cfg("POLLING_INTERVAL = 0\n")).unwrap(),
            Duration::from_secs(1)
        );
        assert!(polling_interval(&cfg("POLLING_INTERVAL = soon\n")).is_err());
    }
}

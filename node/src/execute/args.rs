//! The arguments of `aerie-node execute`: the HTCondor configuration to read, where the
//! node keeps its state and its jobs' sandboxes, the CMs to advertise to, and where it listens.
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;

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
    /// HTCondor's `EXECUTE`: where the jobs' sandboxes are made (default `STATE_DIR/execute`;
    /// the configuration's `EXECUTE` is not read, its default names HTCondor's own directory).
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

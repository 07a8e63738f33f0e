//! `aerie-cm serve`: one central-manager node.

/// Command-line arguments of `aerie-cm serve`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs the daemon until it is told to stop; returns the process exit code.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("serve is not implemented yet")
}

//! `aerie-cm config-val`: print configuration values as `condor_config_val` does.

/// Command-line arguments of `aerie-cm config-val`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs the command; returns the process exit code.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("config-val is not implemented yet")
}

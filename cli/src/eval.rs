//! `cmctl eval`: evaluate ClassAd expressions.

/// Command-line arguments of `cmctl eval`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs the command; returns the process exit code.
pub fn run(_args: Args) -> anyhow::Result<i32> {
    anyhow::bail!("eval is not implemented yet")
}

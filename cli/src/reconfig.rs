//! `cmctl reconfig` (condor_reconfig): one CM re-reads its configuration file and proposes
//! the negotiation policy in it to the cluster. The policy every leader negotiates with is
//! replicated, so this is how a change to group quotas, priority factors, limits or the
//! `NEGOTIATOR_*` knobs takes effect: edit the file on one CM, reconfig that CM, and the next
//! cycle on whichever CM leads uses it (`cmctl negotiator status` shows the version).
use crate::client::{Client, ConnectArgs};
use anyhow::bail;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub conn: ConnectArgs,
    /// The CM whose file is read (host:port; default: the first of --cms).
    #[arg(long)]
    pub name: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let client = Client::new(&args.conn)?;
    let addr = match args.name {
        Some(n) => n,
        None => client.addrs()[0].clone(),
    };
    let r = client.reconfig(&addr)?;
    if !r.ok {
        bail!("{addr}: policy from {} refused: {}", r.file, r.error);
    }
    if r.changed.is_empty() {
        println!(
            "{addr}: {} agrees with the policy in force (version {})",
            r.file, r.version
        );
    } else {
        println!(
            "{addr}: policy from {} committed as version {}; changed: {}",
            r.file,
            r.version,
            r.changed.join(", ")
        );
    }
    Ok(0)
}

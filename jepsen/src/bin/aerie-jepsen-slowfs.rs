//! `aerie-jepsen-slowfs`: mounts a FUSE mirror of a backing directory whose syncs are delayed
//! by the milliseconds in a control file (see `aerie_jepsen::slowfs`), and serves it until it
//! is unmounted. Needs root (it mounts with mount(2)) and /dev/fuse.
use clap::Parser;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "aerie-jepsen-slowfs",
    about = "a passthrough file system with slow fsync, for the jepsen disk-stall tests"
)]
struct Cli {
    /// The directory whose files the mount shows.
    #[arg(long)]
    backing: PathBuf,
    /// Where to mount it.
    #[arg(long)]
    mount: PathBuf,
    /// The file holding the sync delay in milliseconds, re-read on every sync.
    #[arg(long)]
    control: PathBuf,
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = aerie_jepsen::slowfs::serve(cli.backing, &cli.mount, cli.control) {
        eprintln!("aerie-jepsen-slowfs: mounting {}: {e}", cli.mount.display());
        std::process::exit(2);
    }
}

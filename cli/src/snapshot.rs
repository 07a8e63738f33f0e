//! `cmctl snapshot save FILE` and `cmctl snapshot restore FILE`: the pool's replicated state
//! (ledger, negotiation policy, runtime overrides, drain requests, absent ads) out of the
//! cluster and back, for disaster recovery when every CM lost its data. HTCondor's
//! equivalent is keeping the negotiator's `Accountantnew.log`
//! (`condor_accountant.V6/Accountant.cpp`); the file format is in
//! `aerie_core::state::backup`.
use crate::client::{Client, ConnectArgs};
use aerie_core::admin::{StateQuery, SummaryQuery};
use aerie_core::state::backup::{decode, encode, Backup};
use aerie_core::state::{Command, CommandResult};
use anyhow::{bail, Context};
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub conn: ConnectArgs,
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Debug, clap::Subcommand)]
pub enum Cmd {
    /// Write the replicated state (a linearizable read) to FILE.
    Save {
        /// The snapshot file to write (replaced atomically).
        file: PathBuf,
    },
    /// Put a saved state back into a running cluster, as one replicated command.
    Restore {
        /// The snapshot file to read.
        file: PathBuf,
        /// Replace a ledger that already has submitters (otherwise refused, so a restore
        /// into the wrong cluster loses nothing).
        #[arg(long)]
        force: bool,
    },
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let mut client = Client::new(&args.conn)?;
    match args.cmd {
        Cmd::Save { file } => {
            let state = client.query(StateQuery, false)?;
            let backup = Backup::of(&state);
            let bytes = encode(&backup).map_err(anyhow::Error::msg)?;
            write_atomically(&file, &bytes)?;
            println!(
                "saved {} ledger records, policy version {}, {} group overrides, {} limits, \
                 {} drain requests and {} absent/offline ads to {} ({} bytes)",
                backup.accountant.records().count(),
                backup.policy.as_ref().map_or(0, |p| p.version),
                backup.groups.len(),
                backup.limits.len(),
                backup.drains.len(),
                backup.ads.values().map(|m| m.len()).sum::<usize>(),
                file.display(),
                bytes.len()
            );
            Ok(0)
        }
        Cmd::Restore { file, force } => {
            let bytes =
                std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            let backup = decode(&bytes).with_context(|| format!("{}", file.display()))?;
            let held = client.query(SummaryQuery, false)?.submitters;
            if held > 0 && !force {
                bail!(
                    "the cluster's ledger already holds {held} records; restoring {} would \
                     replace them (use --force if that is meant)",
                    file.display()
                );
            }
            let w = client
                .write_ok(Command::Restore(Box::new(backup)))
                .with_context(|| format!("restoring {}", file.display()))?;
            match w.result {
                Some(CommandResult::Restored {
                    submitters,
                    policy_version,
                }) => println!(
                    "restored {} ({submitters} ledger records, policy version \
                     {policy_version}) at log index {}",
                    file.display(),
                    w.log_index
                ),
                _ => println!("restored {} at log index {}", file.display(), w.log_index),
            }
            Ok(0)
        }
    }
}

/// Writes `bytes` to `path` through a temporary file beside it, so an interrupted save never
/// leaves half a snapshot under the name.
fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".part");
    let tmp = PathBuf::from(tmp);
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        bail!("writing {}: {e}", path.display());
    }
    Ok(())
}

//! A disk nemesis: each CM's data directory on a small file system of its own (a size-limited
//! tmpfs), which the nemesis fills with a ballast file so every further allocation fails with
//! `ENOSPC`, then frees.
//!
//! A full disk is the fault a real pool meets most (HTCondor's own daemons stop writing their
//! logs and the HA replication copies, src/condor_had/ReplicatorStateMachine.cpp, fail
//! silently). What must hold is that a CM never acknowledges a write it did not persist: after
//! the disk fills, the CM is killed with `-9` and restarted on the same files, and every write
//! acknowledged at any time must still be there (checked by `no-lost-write`). A tmpfs is used
//! because it is the one size-limited file system root can make with nothing but `mount`; it
//! does not lose data on a crash of the CM process (only of the machine), which is the crash
//! this harness makes.

use anyhow::{bail, Context};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The size of each CM's file system. Smaller than the write-ahead log RocksDB tries to
/// preallocate (1.1 times its 64 MB write buffer), so that preallocation fails (RocksDB goes on
/// without it) and the log grows page by page: once the disk is filled, the next synced
/// append fails with `ENOSPC`. With room for the preallocation, a full disk would go unnoticed
/// for 70 MB of log.
pub const SIZE: &str = "48m";

/// The name of the ballast file [`fill`] creates.
const BALLAST: &str = "jepsen-ballast";

/// Size-limited file systems mounted for a run; unmounted (and their mount points removed)
/// on drop, after the CMs using them are gone.
pub struct Disks {
    dir: tempfile::TempDir,
    mounted: Vec<PathBuf>,
    /// Slow file systems instead of tmpfs ([`Disks::slow`]).
    slow: Option<crate::stall::SlowDisks>,
}

impl Disks {
    /// An empty set under a fresh directory.
    pub fn new() -> anyhow::Result<Disks> {
        Ok(Disks {
            dir: tempfile::Builder::new()
                .prefix("aerie-jepsen-disks-")
                .tempdir()?,
            mounted: Vec::new(),
            slow: None,
        })
    }

    /// A set whose mounts are [`crate::stall`]'s slow file systems (served by `bin`,
    /// `aerie-jepsen-slowfs`) instead of tmpfs: not size-limited, their syncs delayed on
    /// demand.
    pub fn slow(bin: PathBuf) -> anyhow::Result<Disks> {
        let mut d = Disks::new()?;
        d.slow = Some(crate::stall::SlowDisks::new(bin)?);
        Ok(d)
    }

    /// What the slow file system of CM `id` logged (none for tmpfs).
    pub fn log(&self, id: u64) -> String {
        self.slow.as_ref().map(|s| s.log(id)).unwrap_or_default()
    }

    /// Mounts a tmpfs of [`SIZE`] at `<dir>/node<id>` and returns that path.
    /// ([`Disks::slow`]: a slow file system there instead.)
    pub fn mount(&mut self, id: u64) -> anyhow::Result<PathBuf> {
        if let Some(slow) = &mut self.slow {
            return slow.mount(id);
        }
        let at = self.dir.path().join(format!("node{id}"));
        std::fs::create_dir_all(&at)?;
        run(Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={SIZE}"), "tmpfs"])
            .arg(&at))?;
        self.mounted.push(at.clone());
        Ok(at)
    }
}

impl Drop for Disks {
    fn drop(&mut self) {
        for at in &self.mounted {
            // Lazily: a CM that outlived its cluster (it should not) must not block the rest.
            if let Err(e) = run(Command::new("umount").arg("-l").arg(at)) {
                eprintln!("jepsen: cannot unmount {}: {e:#}", at.display());
            }
        }
    }
}

fn run(cmd: &mut Command) -> anyhow::Result<()> {
    let out = cmd.output().with_context(|| format!("running {cmd:?}"))?;
    if !out.status.success() {
        bail!("{cmd:?}: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}

/// Fills the file system holding `dir` with a ballast file inside it, so that no block is
/// left; returns the ballast's path (delete it to free the space).
pub fn fill(dir: &Path) -> anyhow::Result<PathBuf> {
    use std::os::fd::AsRawFd;
    let path = dir.join(BALLAST);
    let f = std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
    // Allocate in shrinking chunks until nothing more fits: statvfs's free count is only a
    // hint on a file system others are writing to.
    let mut chunk: i64 = 64 << 20;
    let mut at: i64 = 0;
    while chunk >= 4096 {
        // SAFETY: `f` is an open file for the whole call; fallocate only allocates blocks.
        if unsafe { libc::fallocate(f.as_raw_fd(), 0, at, chunk) } == 0 {
            at += chunk;
        } else {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::ENOSPC) {
                bail!("filling {}: {e}", path.display());
            }
            chunk /= 2;
        }
    }
    tracing::info!(path = %path.display(), bytes = at, "disk filled");
    Ok(path)
}

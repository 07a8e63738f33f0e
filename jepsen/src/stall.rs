//! The disk-stall nemesis: each CM's data directory on a [`crate::slowfs`] mount of its own
//! (`aerie-jepsen-slowfs`, one process per CM), whose syncs the nemesis delays by writing a
//! delay into that mount's control file, `<data dir>.delay`, and undoes by writing `0`.
//!
//! [`SlowDisks`] unmounts every file system it mounted and stops its processes on drop (after
//! the CMs using them are gone). A harness killed with `-9` leaves its mounts behind, under
//! `/tmp/aerie-jepsen-slowfs-<pid>-*`; the next [`SlowDisks::new`] lazily unmounts every such
//! mount whose process is gone, as [`crate::net::Net::create`] deletes stale namespaces.

use crate::workload::{Step, Target};
use anyhow::{bail, Context};
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The prefix of every directory [`SlowDisks`] mounts under (`<prefix><pid>-<random>`).
const PREFIX: &str = "aerie-jepsen-slowfs-";

/// How long a mount may take to show up.
const MOUNT_TIMEOUT: Duration = Duration::from_secs(10);

/// The control file of the slow file system mounted at `data_dir`.
pub fn control(data_dir: &Path) -> PathBuf {
    data_dir.with_extension("delay")
}

/// Sets the sync delay of the slow file system mounted at `data_dir` (a new file renamed over
/// the control file, so the file system never reads half a number).
pub fn set_delay(data_dir: &Path, delay: Duration) -> anyhow::Result<()> {
    let to = control(data_dir);
    let tmp = to.with_extension("delay.new");
    std::fs::write(&tmp, delay.as_millis().to_string())
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &to).with_context(|| format!("renaming to {}", to.display()))?;
    tracing::info!(control = %to.display(), ?delay, "disk sync delay set");
    Ok(())
}

/// The `disk-stall-leader` schedule over `total`, replayable from `seed`: every sync of the
/// leader's disk delayed 2-5 s for 4-6 s (long enough for an election to happen if one will),
/// then fast again for 3-5 s, again.
pub fn leader_stalls(seed: u64, total: Duration) -> Vec<Step> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut steps = Vec::new();
    let mut t = Duration::ZERO;
    while t < total {
        let delay = Duration::from_millis(rng.gen_range(2000..=5000));
        let on = Duration::from_millis(rng.gen_range(4000..=6000));
        let off = Duration::from_millis(rng.gen_range(3000..=5000));
        steps.extend([
            Step::StallDisk(Target::Leader, delay),
            Step::Sleep(on),
            Step::UnstallDisk,
            Step::Sleep(off),
        ]);
        t += on + off;
    }
    steps
}

/// The mount points of `mounts` (`/proc/mounts`' text) that a dead harness left: under a
/// `PREFIX<pid>-` directory whose `pid` is not running (`alive` says which are).
pub fn stale_mounts(mounts: &str, alive: impl Fn(u32) -> bool) -> Vec<String> {
    mounts
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter(|at| {
            let Some((_, rest)) = at.split_once(PREFIX) else {
                return false;
            };
            let pid = rest.split_once('-').and_then(|(p, _)| p.parse().ok());
            pid.is_some_and(|p| !alive(p))
        })
        .map(str::to_string)
        .collect()
}

/// Slow file systems mounted for a run, each served by its own process.
pub struct SlowDisks {
    bin: PathBuf,
    dir: tempfile::TempDir,
    mounts: Vec<(u64, PathBuf, Child)>,
}

impl SlowDisks {
    /// An empty set under a fresh directory, its mounts served by `bin`
    /// (`aerie-jepsen-slowfs`); first unmounts what dead harnesses left.
    pub fn new(bin: PathBuf) -> anyhow::Result<SlowDisks> {
        if !Path::new("/dev/fuse").exists() {
            bail!("the disk-stall scenarios need /dev/fuse (modprobe fuse)");
        }
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
        for at in stale_mounts(&mounts, |pid| Path::new(&format!("/proc/{pid}")).exists()) {
            tracing::warn!(at, "unmounting a slow disk left by a dead test run");
            let _ = Command::new("umount").arg("-l").arg(&at).status();
        }
        Ok(SlowDisks {
            bin,
            dir: tempfile::Builder::new()
                .prefix(&format!("{PREFIX}{}-", std::process::id()))
                .tempdir()?,
            mounts: Vec::new(),
        })
    }

    /// Mounts a slow file system at `<dir>/node<id>` over the backing directory
    /// `<dir>/backing<id>`, its delay 0, and returns the mount point once it is mounted.
    pub fn mount(&mut self, id: u64) -> anyhow::Result<PathBuf> {
        let at = self.dir.path().join(format!("node{id}"));
        let backing = self.dir.path().join(format!("backing{id}"));
        std::fs::create_dir_all(&at)?;
        std::fs::create_dir_all(&backing)?;
        set_delay(&at, Duration::ZERO)?;
        let log = std::fs::File::create(self.log_path(id))?;
        let child = Command::new(&self.bin)
            .arg("--backing")
            .arg(&backing)
            .arg("--mount")
            .arg(&at)
            .arg("--control")
            .arg(control(&at))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {}", self.bin.display()))?;
        self.mounts.push((id, at.clone(), child));
        let deadline = Instant::now() + MOUNT_TIMEOUT;
        while !is_mounted(&at) {
            if Instant::now() > deadline {
                bail!(
                    "{} did not mount {} within {MOUNT_TIMEOUT:?}: {}",
                    self.bin.display(),
                    at.display(),
                    self.log(id)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(at)
    }

    fn log_path(&self, id: u64) -> PathBuf {
        self.dir.path().join(format!("slowfs{id}.log"))
    }

    /// What the file system of CM `id` logged (every delayed sync, with its file).
    pub fn log(&self, id: u64) -> String {
        std::fs::read_to_string(self.log_path(id)).unwrap_or_default()
    }
}

/// Whether a file system is mounted exactly at `at`.
fn is_mounted(at: &Path) -> bool {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let at = at.display().to_string();
    mounts
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(at.as_str()))
}

impl Drop for SlowDisks {
    fn drop(&mut self) {
        for (id, at, child) in &mut self.mounts {
            // Lazily: a CM that outlived its cluster (it should not) must not block the rest.
            // The unmount ends the file system's session and so its process.
            let _ = Command::new("umount").arg("-l").arg(&*at).status();
            let deadline = Instant::now() + Duration::from_secs(3);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if matches!(child.try_wait(), Ok(None)) {
                eprintln!("jepsen: slow disk {id} did not stop on unmount; killing it");
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_schedule_is_replayed_from_its_seed_and_undoes_every_stall() {
        let a = leader_stalls(5, Duration::from_secs(20));
        assert_eq!(a, leader_stalls(5, Duration::from_secs(20)));
        assert_ne!(a, leader_stalls(6, Duration::from_secs(20)));
        let stalls: Vec<Duration> = a
            .iter()
            .filter_map(|s| match s {
                Step::StallDisk(Target::Leader, d) => Some(*d),
                _ => None,
            })
            .collect();
        assert!(stalls.len() >= 2, "{a:?}");
        assert!(stalls
            .iter()
            .all(|d| (Duration::from_secs(2)..=Duration::from_secs(5)).contains(d)));
        let undos = a.iter().filter(|s| matches!(s, Step::UnstallDisk)).count();
        assert_eq!(undos, stalls.len());
    }

    #[test]
    fn only_mounts_of_dead_harnesses_are_stale() {
        let mounts = "\
aerie-jepsen-slowfs /tmp/aerie-jepsen-slowfs-111-abc/node1 fuse rw 0 0
aerie-jepsen-slowfs /tmp/aerie-jepsen-slowfs-222-def/node2 fuse rw 0 0
tmpfs /tmp/aerie-jepsen-disks-xyz/node1 tmpfs rw 0 0
proc /proc proc rw 0 0
";
        let stale = stale_mounts(mounts, |pid| pid == 222);
        assert_eq!(stale, vec!["/tmp/aerie-jepsen-slowfs-111-abc/node1"]);
    }

    #[test]
    fn the_control_file_sits_beside_the_data_directory() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("node3");
        assert_eq!(control(&data), dir.path().join("node3.delay"));
        set_delay(&data, Duration::from_millis(2500)).unwrap();
        assert_eq!(
            crate::slowfs::delay(&control(&data)),
            Duration::from_millis(2500)
        );
        set_delay(&data, Duration::ZERO).unwrap();
        assert_eq!(crate::slowfs::delay(&control(&data)), Duration::ZERO);
    }
}

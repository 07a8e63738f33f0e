//! How a job's resources are limited: cgroup v2 where the host delegates a writable subtree,
//! rlimits otherwise (`condor_starter.V6.1/cgroup_limits.cpp`, `vanilla_proc.cpp`).
//!
//! With cgroup v2 each job gets its own cgroup under the delegated one (HTCondor's
//! `BASE_CGROUP`): `memory.max` from `RequestMemory`, `cpu.weight` from `RequestCpus` (100 per
//! core, the kernel's default weight being 100 for one), the job's processes placed in it
//! before they exec, its peak from `memory.peak`, and its every process killed through
//! `cgroup.kill` when the job ends. Without a delegated cgroup (a cgroup v1 host, a container,
//! a personal pool) the job's processes get `RLIMIT_AS` = `RequestMemory` (Aerie's choice,
//! rather than `RLIMIT_DATA`, so that mapped files count too): each process is held to its
//! address space, which a job of many processes can exceed in total, and CPU is not weighted.
//! Which one a node uses is decided once, logged, and shown in the slot ad
//! ([`LimitMethod::name`]).

use super::job::JobDescription;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The kernel's `cpu.weight` range.
const CPU_WEIGHT_MAX: u64 = 10_000;

/// How this node limits jobs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitMethod {
    /// Per-job cgroups under this delegated cgroup v2 directory.
    CgroupV2 {
        /// The delegated directory (e.g. `/sys/fs/cgroup/aerie`).
        base: PathBuf,
    },
    /// Per-process rlimits.
    Rlimit,
}

impl LimitMethod {
    /// The method's name, for the log and the slot ad: `cgroup-v2` or `rlimit`.
    pub fn name(&self) -> &'static str {
        match self {
            LimitMethod::CgroupV2 { .. } => "cgroup-v2",
            LimitMethod::Rlimit => "rlimit",
        }
    }

    /// Chooses the method: cgroup v2 under `base` when `base` is a cgroup v2 directory this
    /// process can write whose children can have the memory and cpu controllers (enabling them
    /// if need be); rlimits otherwise. The reason for the choice is logged.
    pub fn detect(base: Option<&Path>) -> LimitMethod {
        let Some(base) = base else {
            tracing::info!(
                method = "rlimit",
                "no cgroup configured; limiting jobs with rlimits"
            );
            return LimitMethod::Rlimit;
        };
        match check_delegated(base) {
            Ok(()) => {
                let cgroup = base.display();
                tracing::info!(method = "cgroup-v2", %cgroup, "limiting jobs with cgroup v2");
                LimitMethod::CgroupV2 {
                    base: base.to_path_buf(),
                }
            }
            Err(why) => {
                let cgroup = base.display();
                let note = "no usable cgroup v2; limiting jobs with rlimits";
                tracing::info!(method = "rlimit", %cgroup, reason = %why, "{note}");
                LimitMethod::Rlimit
            }
        }
    }
}

/// Whether a controller list (`cgroup.controllers`, `cgroup.subtree_control`) has memory and cpu.
fn has_controllers(list: &str) -> bool {
    let has = |c: &str| list.split_whitespace().any(|w| w == c);
    has("memory") && has("cpu")
}

/// Why `base` cannot hold job cgroups, if it cannot.
fn check_delegated(base: &Path) -> Result<(), String> {
    let read = |f: &str| {
        fs::read_to_string(base.join(f)).map_err(|e| format!("{}: {e}", base.join(f).display()))
    };
    let controllers = read("cgroup.controllers")?;
    if !has_controllers(&controllers) {
        return Err(format!(
            "memory and cpu controllers not available (have: {})",
            controllers.trim()
        ));
    }
    if !has_controllers(&read("cgroup.subtree_control")?) {
        fs::write(base.join("cgroup.subtree_control"), "+memory +cpu")
            .map_err(|e| format!("cannot enable memory and cpu for children: {e}"))?;
    }
    nix::unistd::access(base, nix::unistd::AccessFlags::W_OK)
        .map_err(|e| format!("not writable: {e}"))?;
    Ok(())
}

/// The limits one job gets, from its request (pure).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobLimits {
    /// The memory limit in bytes, from `RequestMemory` (MiB); none when not requested.
    pub memory_bytes: Option<u64>,
    /// The cgroup `cpu.weight`: 100 per requested core, within the kernel's 1..=10000.
    pub cpu_weight: u64,
}

impl JobLimits {
    /// The limits of `job`.
    pub fn of(job: &JobDescription) -> JobLimits {
        JobLimits {
            memory_bytes: job
                .request_memory_mb
                .filter(|&m| m > 0)
                .map(|m| m.saturating_mul(1024 * 1024)),
            cpu_weight: (u64::from(job.request_cpus) * 100).clamp(1, CPU_WEIGHT_MAX),
        }
    }
}

/// One job's cgroup.
#[derive(Debug)]
pub struct JobCgroup {
    dir: PathBuf,
    procs: fs::File,
}

impl JobCgroup {
    /// Makes `base/<name>` with the job's limits (an empty one left by an earlier run of the
    /// node is reused) and opens its `cgroup.procs`.
    pub fn create(base: &Path, name: &str, limits: &JobLimits) -> io::Result<JobCgroup> {
        let dir = base.join(name);
        match fs::create_dir(&dir) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            other => other?,
        }
        let procs = fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))?;
        let cgroup = JobCgroup { dir, procs };
        if let Some(bytes) = limits.memory_bytes {
            fs::write(cgroup.dir.join("memory.max"), bytes.to_string())?;
            // No swap beyond the limit, where the kernel has swap accounting.
            let _ = fs::write(cgroup.dir.join("memory.swap.max"), "0");
        }
        fs::write(cgroup.dir.join("cpu.weight"), limits.cpu_weight.to_string())?;
        Ok(cgroup)
    }

    /// The open `cgroup.procs`: a process writes `0` to it to join the cgroup (it is
    /// close-on-exec, so the job never holds it).
    pub fn procs(&self) -> &fs::File {
        &self.procs
    }

    /// The peak memory of the job's processes, in bytes (`memory.peak`, Linux 5.19+).
    pub fn peak_memory_bytes(&self) -> Option<u64> {
        fs::read_to_string(self.dir.join("memory.peak"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Kills every process left in the cgroup (`cgroup.kill`, Linux 5.14+).
    pub fn kill_all(&self) -> io::Result<()> {
        fs::write(self.dir.join("cgroup.kill"), "1")
    }

    /// Removes the cgroup once its processes are gone, retrying while they die.
    pub fn remove(self) -> io::Result<()> {
        let _ = self.kill_all();
        let mut last = Ok(());
        for _ in 0..100 {
            last = fs::remove_dir(&self.dir);
            match &last {
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                _ => break,
            }
        }
        last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_from_the_request() {
        let mut job = JobDescription::new("/bin/true", &[], "alice");
        assert_eq!(
            JobLimits::of(&job),
            JobLimits {
                memory_bytes: None,
                cpu_weight: 100
            }
        );
        job.request_memory_mb = Some(512);
        job.request_cpus = 4;
        let l = JobLimits::of(&job);
        assert_eq!(l.memory_bytes, Some(512 << 20));
        assert_eq!(l.cpu_weight, 400);
        job.request_cpus = 1000;
        assert_eq!(JobLimits::of(&job).cpu_weight, CPU_WEIGHT_MAX);
    }

    #[test]
    fn detection_falls_back_to_rlimits_saying_why() {
        assert_eq!(LimitMethod::detect(None), LimitMethod::Rlimit);
        let dir = tempfile::tempdir().unwrap();
        // Not a cgroup v2 directory (as on a cgroup v1 host).
        assert!(check_delegated(dir.path())
            .unwrap_err()
            .contains("cgroup.controllers"));
        assert_eq!(LimitMethod::detect(Some(dir.path())), LimitMethod::Rlimit);
        // A v2 directory without the memory controller.
        fs::write(dir.path().join("cgroup.controllers"), "cpu io pids\n").unwrap();
        assert!(check_delegated(dir.path())
            .unwrap_err()
            .contains("have: cpu io pids"));
        // A delegated one, controllers already enabled for children.
        fs::write(
            dir.path().join("cgroup.controllers"),
            "cpuset cpu io memory pids\n",
        )
        .unwrap();
        fs::write(dir.path().join("cgroup.subtree_control"), "cpu memory\n").unwrap();
        assert_eq!(
            LimitMethod::detect(Some(dir.path())),
            LimitMethod::CgroupV2 {
                base: dir.path().to_path_buf()
            }
        );
        assert_eq!(LimitMethod::Rlimit.name(), "rlimit");
    }
}

//! How a job's resources are limited: cgroup v2 where the host delegates a writable subtree,
//! rlimits otherwise (`condor_starter.V6.1/cgroup_limits.cpp`, `vanilla_proc.cpp`).
//!
//! What a job's memory is held to is its slot's provisioned `Memory`, not its
//! `RequestMemory`: HTCondor's starter takes the limit from the machine ad under
//! `CGROUP_MEMORY_LIMIT_POLICY = hard` (its default since 23.0; `none` sets no limit). The
//! two differ: a job that requests nothing has `RequestMemory` = its `ImageSize` in MiB (about
//! 1), while its slot has what the admin provisioned, at least the negotiator's quantum (128
//! MiB by default) for a dynamic slot. A limit of the request would kill such a job before its
//! C library is loaded.
//!
//! With cgroup v2 each job gets its own cgroup under the delegated one (HTCondor's
//! `BASE_CGROUP`): `memory.max` from the slot's memory, `cpu.weight` from `RequestCpus` (100
//! per core, the kernel's default weight being 100 for one), the job's processes placed in it
//! before they exec, its peak from `memory.peak`, and its every process killed through
//! `cgroup.kill` when the job ends. Without a delegated cgroup (a cgroup v1 host, a container,
//! a personal pool) the job's processes get `RLIMIT_AS` = the slot's memory (Aerie's
//! stand-in for the cgroup: HTCondor sets no memory limit there), so that mapped files count
//! too: each process is held to its address space, which a job of many processes can exceed
//! in total, and CPU is not weighted. `STARTER_RLIMIT_AS` (an expression in MiB, the slot ad
//! as `MY` and the job ad as `TARGET`, as in HTCondor) sets `RLIMIT_AS` instead, with or
//! without a cgroup: for programs that reserve much more address space than they use.
//! Which method a node uses is decided once, logged, and shown in the slot ad
//! ([`LimitMethod::name`]).

use super::job::JobDescription;
use classad::{ClassAd, Expr, Value};
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

/// The node's memory knobs: `CGROUP_MEMORY_LIMIT_POLICY` and `STARTER_RLIMIT_AS`.
#[derive(Clone, Debug, Default)]
pub struct MemoryKnobs {
    /// `CGROUP_MEMORY_LIMIT_POLICY = none`: the slot's memory limits nothing.
    pub no_slot_limit: bool,
    /// `STARTER_RLIMIT_AS`, parsed.
    pub rlimit_as: Option<Expr>,
}

impl MemoryKnobs {
    /// Reads the knobs; an error names the knob and what is wrong with it. HTCondor's `soft`
    /// and `custom` policies (cgroup soft limits and admin expressions) are refused rather than
    /// silently treated as another.
    pub fn from_knobs(knob: impl Fn(&str) -> Option<String>) -> Result<MemoryKnobs, String> {
        let no_slot_limit = match knob("CGROUP_MEMORY_LIMIT_POLICY") {
            None => false,
            Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                "" | "hard" => false,
                "none" => true,
                _ => {
                    return Err(format!(
                        "CGROUP_MEMORY_LIMIT_POLICY = {v}: Aerie supports hard and none"
                    ))
                }
            },
        };
        let rlimit_as = match knob("STARTER_RLIMIT_AS").filter(|v| !v.trim().is_empty()) {
            None => None,
            Some(v) => Some(
                classad::parse_expr(&v)
                    .map_err(|e| format!("STARTER_RLIMIT_AS = {v}: not an expression: {e}"))?,
            ),
        };
        Ok(MemoryKnobs {
            no_slot_limit,
            rlimit_as,
        })
    }

    /// What the job of `job_ad` on the slot of `slot_ad` is held to (pure).
    pub fn for_job(&self, slot_ad: &ClassAd, job_ad: &ClassAd) -> MemoryLimits {
        let mib = |v: Value| match v {
            Value::Int(n) if n > 0 => Some(n as u64),
            Value::Real(r) if r.is_finite() && r >= 1.0 => Some(r as u64),
            _ => None,
        };
        MemoryLimits {
            slot_mib: if self.no_slot_limit {
                None
            } else {
                mib(slot_ad.eval_attr("Memory"))
            },
            // HTCondor takes only an integer result; anything else sets no limit.
            address_space_mib: self.rlimit_as.as_ref().and_then(|e| {
                match slot_ad.eval_expr_with(e, Some(job_ad)) {
                    v @ Value::Int(_) => mib(v),
                    _ => None,
                }
            }),
        }
    }
}

/// What one job's memory is held to, in MiB, before the limit method is known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryLimits {
    /// The slot's provisioned `Memory` (none under `CGROUP_MEMORY_LIMIT_POLICY = none`).
    pub slot_mib: Option<u64>,
    /// `STARTER_RLIMIT_AS` for this job, when set.
    pub address_space_mib: Option<u64>,
}

/// The limits one job gets (pure).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobLimits {
    /// The cgroup's `memory.max` in bytes: the slot's memory.
    pub memory_bytes: Option<u64>,
    /// `STARTER_RLIMIT_AS` in bytes, when set.
    pub address_space_bytes: Option<u64>,
    /// The cgroup `cpu.weight`: 100 per requested core, within the kernel's 1..=10000.
    pub cpu_weight: u64,
}

impl JobLimits {
    /// The limits of `job` held to `memory`.
    pub fn of(job: &JobDescription, memory: MemoryLimits) -> JobLimits {
        let bytes = |mib: u64| mib.saturating_mul(1024 * 1024);
        JobLimits {
            memory_bytes: memory.slot_mib.map(bytes),
            address_space_bytes: memory.address_space_mib.map(bytes),
            cpu_weight: (u64::from(job.request_cpus) * 100).clamp(1, CPU_WEIGHT_MAX),
        }
    }

    /// The `RLIMIT_AS` of each of the job's processes: `STARTER_RLIMIT_AS` when set, else,
    /// only where no cgroup holds the job, the slot's memory.
    pub fn rlimit_as(&self, in_cgroup: bool) -> Option<u64> {
        match (self.address_space_bytes, in_cgroup) {
            (Some(b), _) => Some(b),
            (None, true) => None,
            (None, false) => self.memory_bytes,
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

    fn ad(text: &str) -> ClassAd {
        classad::parse_ad(text).unwrap()
    }

    fn knobs(text: &str) -> Result<MemoryKnobs, String> {
        let map: std::collections::HashMap<String, String> = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        MemoryKnobs::from_knobs(|k| map.get(k).cloned())
    }

    /// The defect this replaced: a job that requests no memory has `RequestMemory` 1 and was
    /// held to 1 MiB, so its C library could not load. The slot's memory holds it instead.
    #[test]
    fn a_job_is_held_to_its_slots_memory_not_its_request() {
        let slot = ad("[ Memory = 128; Cpus = 1 ]");
        let job_ad = ad("[ RequestMemory = 1; ImageSize = 10 ]");
        let mut job = JobDescription::new("/bin/true", &[], "alice");
        let limits = JobLimits::of(&job, MemoryKnobs::default().for_job(&slot, &job_ad));
        assert_eq!(limits.memory_bytes, Some(128 << 20));
        assert_eq!(limits.address_space_bytes, None);
        assert_eq!(limits.cpu_weight, 100);
        // Without a cgroup the address space stands in for it; with one, nothing.
        assert_eq!(limits.rlimit_as(false), Some(128 << 20));
        assert_eq!(limits.rlimit_as(true), None);
        job.request_cpus = 4;
        assert_eq!(JobLimits::of(&job, MemoryLimits::default()).cpu_weight, 400);
        job.request_cpus = 1000;
        let l = JobLimits::of(&job, MemoryLimits::default());
        assert_eq!(l.cpu_weight, CPU_WEIGHT_MAX);
        assert_eq!((l.memory_bytes, l.rlimit_as(false)), (None, None));
    }

    #[test]
    fn the_memory_knobs() {
        let slot = ad("[ Memory = 2048 ]");
        let job = ad("[ RequestMemory = 100; ImageSize_RAW = 1 ]");
        let none = knobs("CGROUP_MEMORY_LIMIT_POLICY = None").unwrap();
        assert_eq!(none.for_job(&slot, &job), MemoryLimits::default());
        let hard = knobs("CGROUP_MEMORY_LIMIT_POLICY = hard").unwrap();
        assert_eq!(hard.for_job(&slot, &job).slot_mib, Some(2048));
        // STARTER_RLIMIT_AS: MiB, the slot as MY, the job as TARGET.
        let k = knobs("STARTER_RLIMIT_AS = MY.Memory * 4 + TARGET.RequestMemory").unwrap();
        let m = k.for_job(&slot, &job);
        assert_eq!(m.address_space_mib, Some(8292));
        let l = JobLimits::of(&JobDescription::new("/bin/true", &[], "a"), m);
        assert_eq!(l.rlimit_as(true), Some(8292 << 20));
        assert_eq!(l.rlimit_as(false), Some(8292 << 20));
        // Not an integer: no limit, as in HTCondor.
        let k = knobs("STARTER_RLIMIT_AS = TARGET.NoSuchAttr").unwrap();
        assert_eq!(k.for_job(&slot, &job).address_space_mib, None);
        let k = knobs("STARTER_RLIMIT_AS = 1.5 * MY.Memory").unwrap();
        assert_eq!(k.for_job(&slot, &job).address_space_mib, None);
        // Bad values name the knob.
        let e = knobs("CGROUP_MEMORY_LIMIT_POLICY = soft").unwrap_err();
        assert!(e.contains("CGROUP_MEMORY_LIMIT_POLICY = soft"), "{e}");
        let e = knobs("STARTER_RLIMIT_AS = Memory *").unwrap_err();
        assert!(
            e.starts_with("STARTER_RLIMIT_AS = Memory *: not an expression"),
            "{e}"
        );
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

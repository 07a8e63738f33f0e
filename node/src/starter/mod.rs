//! The starter: runs one job as a real child process on an execute node
//! (`condor_starter.V6.1`: `baseStarter.cpp`, `jic_shadow.cpp`, `os_proc.cpp`,
//! `vanilla_proc.cpp`).
//!
//! A job goes through three stages, each a type:
//! 1. [`Starter::prepare`] chooses the Unix account ([`account`]), makes the sandbox
//!    `EXECUTE/dir_<id>` ([`sandbox`]) and gives a [`PreparedJob`], into which the node
//!    writes the files the access point sends ([`PreparedJob::put_executable`],
//!    [`PreparedJob::put_input`]).
//! 2. [`PreparedJob::start`] checks the executable and the standard files, sets up the limits
//!    ([`limits`]) and starts the process ([`os_proc`]), under a [`guard`] that kills it
//!    when the node is gone, giving a [`RunningJob`]: suspend, continue, soft and hard kill
//!    (the caller decides when, from the policy and its clock), heartbeats to the guard, and
//!    wait for the [`ExitReport`].
//! 3. After the exit, [`RunningJob::collect_outputs`] gives the output files to send back, and
//!    [`RunningJob::remove_sandbox`] cleans up.
//!
//! Start failures are [`StartError`]s whose text is the job's `HoldReason`. The argument and
//! environment syntaxes of the job ad are in [`arglist`] and [`environ`], the job ad itself in
//! [`job`].

pub mod account;
pub mod arglist;
pub mod cpu_load;
pub mod environ;
pub mod error;
pub mod guard;
pub mod job;
pub mod limits;
pub mod os_proc;
pub mod sandbox;

pub use account::{Account, RunAs, RunAsPolicy};
pub use error::{OutputError, StartError};
pub use guard::JobGuard;
pub use job::JobDescription;
pub use limits::{JobLimits, LimitMethod, MemoryKnobs, MemoryLimits};
pub use os_proc::{ExitOutcome, ExitReport, JobProcess};
pub use sandbox::{OutputFile, Sandbox};

use limits::JobCgroup;
use os_proc::Launch;
use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The name a transferred executable has in the sandbox, as in HTCondor (`CONDOR_EXEC`).
pub const CONDOR_EXEC: &str = "condor_exec.exe";

/// How this node runs jobs.
#[derive(Clone, Debug)]
pub struct StarterConfig {
    /// `EXECUTE`: the directory the sandboxes are made in.
    pub execute_dir: PathBuf,
    /// Whose account runs a job (`STARTER_ALLOW_RUNAS_OWNER`, `SLOT<N>_USER`).
    pub run_as: RunAsPolicy,
    /// cgroup v2 or rlimits ([`LimitMethod::detect`]).
    pub limits: LimitMethod,
    /// Run each job under a [`guard`] that kills it when the node is gone; `None` starts the
    /// job itself (nothing then ends it if the node dies without a cgroup).
    pub job_guard: Option<JobGuard>,
}

/// Starts jobs on this node.
#[derive(Clone, Debug)]
pub struct Starter {
    config: StarterConfig,
    node_is_root: bool,
}

/// A job whose sandbox is made and whose input files are being written.
#[derive(Debug)]
pub struct PreparedJob {
    id: String,
    job: JobDescription,
    memory: MemoryLimits,
    run_as: RunAs,
    limits: LimitMethod,
    job_guard: Option<JobGuard>,
    sandbox: Sandbox,
}

/// A started job.
pub struct RunningJob {
    process: JobProcess,
    sandbox: Sandbox,
    transfer_output: Option<Vec<String>>,
    /// The job's standard output and error files in the sandbox, always sent back.
    std_files: Vec<String>,
}

impl Starter {
    /// A starter with this configuration; it switches accounts only if this process is root.
    pub fn new(config: StarterConfig) -> Starter {
        Starter {
            config,
            node_is_root: nix::unistd::geteuid().is_root(),
        }
    }

    /// How this node limits jobs, for the slot ad.
    pub fn limit_method(&self) -> &LimitMethod {
        &self.config.limits
    }

    /// Chooses the job's account and makes its sandbox `EXECUTE/dir_<id>`; `id` must be unique
    /// among this node's running jobs (e.g. the slot name and claim sequence). `memory` is
    /// what its slot holds it to ([`MemoryKnobs::for_job`]).
    pub fn prepare(
        &self,
        id: &str,
        job: JobDescription,
        memory: MemoryLimits,
    ) -> Result<PreparedJob, StartError> {
        let run_as = account::choose_account(
            &job.owner,
            &self.config.run_as,
            self.node_is_root,
            Account::lookup,
        )?;
        let owner = match &run_as {
            RunAs::User(a) => Some(a),
            RunAs::NodeAccount => None,
        };
        let sandbox = Sandbox::create(&self.config.execute_dir, id, owner)?;
        Ok(PreparedJob {
            id: id.to_string(),
            job,
            memory,
            run_as,
            limits: self.config.limits.clone(),
            job_guard: self.config.job_guard.clone(),
            sandbox,
        })
    }
}

/// The job's standard output and error files in the sandbox (one name when they are the
/// same file).
fn std_files(job: &JobDescription) -> Vec<String> {
    let mut names: Vec<String> = job.stdout.iter().cloned().collect();
    if let Some(err) = job
        .stderr
        .as_ref()
        .filter(|e| job.stdout.as_ref() != Some(*e))
    {
        names.push(err.clone());
    }
    names
}

/// Opens a standard output file in the sandbox, owned by the job's account.
fn create_std_file(dir: &Path, name: &str, run_as: &RunAs) -> Result<File, StartError> {
    let fail = |source: io::Error| StartError::Spawn {
        what: "create the job's standard output files",
        source,
    };
    let path = dir.join(name);
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(fail)?;
    if let RunAs::User(a) = run_as {
        std::os::unix::fs::fchown(&file, Some(a.uid), Some(a.gid)).map_err(fail)?;
    }
    Ok(file)
}

/// Checks that `exe` is a regular file with an execute bit.
fn check_executable(exe: &Path) -> Result<(), StartError> {
    let not_executable = |reason: &str, errno| StartError::NotExecutable {
        path: exe.to_path_buf(),
        reason: reason.to_string(),
        errno,
    };
    match fs::metadata(exe) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(StartError::MissingExecutable {
            path: exe.to_path_buf(),
        }),
        Err(e) => Err(not_executable(
            &e.to_string(),
            e.raw_os_error().unwrap_or(0),
        )),
        Ok(m) if !m.is_file() => Err(not_executable("not a regular file", libc::EACCES)),
        Ok(m) if m.permissions().mode() & 0o111 == 0 => {
            Err(not_executable("no execute permission", libc::EACCES))
        }
        Ok(_) => Ok(()),
    }
}

impl PreparedJob {
    /// The sandbox directory.
    pub fn sandbox_dir(&self) -> &Path {
        self.sandbox.path()
    }

    /// The job as it will run.
    pub fn job(&self) -> &JobDescription {
        &self.job
    }

    /// Whose account will run it.
    pub fn run_as(&self) -> &RunAs {
        &self.run_as
    }

    /// Writes an input file the access point sent (a path in the sandbox: see
    /// [`Sandbox::put_input`]).
    pub fn put_input(&mut self, name: &str, bytes: &[u8]) -> Result<(), StartError> {
        self.sandbox.put_input(name, bytes, false)
    }

    /// Makes a directory of a transferred directory tree in the sandbox.
    pub fn put_directory(&mut self, name: &str) -> Result<(), StartError> {
        self.sandbox.put_directory(name)
    }

    /// Writes the executable the access point sent (as `condor_exec.exe`, mode 0755).
    pub fn put_executable(&mut self, bytes: &[u8]) -> Result<(), StartError> {
        self.sandbox.put_input(CONDOR_EXEC, bytes, true)
    }

    /// The path the job's executable runs from.
    pub fn executable(&self) -> PathBuf {
        if self.job.transfer_executable {
            self.sandbox.path().join(CONDOR_EXEC)
        } else {
            self.sandbox.path().join(&self.job.cmd) // an absolute Cmd replaces the base
        }
    }

    /// The environment: the job's own, plus `_CONDOR_SCRATCH_DIR` and the temporary
    /// directory variables pointing at the sandbox unless the job sets them.
    fn environment(&self) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = self
            .job
            .env
            .iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        let dir = self.sandbox.path().as_os_str();
        for name in ["_CONDOR_SCRATCH_DIR", "TMPDIR", "TMP", "TEMP"] {
            if !self.job.env.contains_key(name) {
                env.push((name.into(), dir.into()));
            }
        }
        env
    }

    /// Starts the job. The sandbox is removed if it cannot start.
    pub fn start(mut self) -> Result<RunningJob, StartError> {
        let exe = self.executable();
        check_executable(&exe)?;
        let dir = self.sandbox.path().to_path_buf();
        let stdin = match &self.job.stdin {
            None => None,
            Some(name) => Some(
                OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(dir.join(name))
                    .map_err(|source| StartError::UnreadableInput {
                        name: name.clone(),
                        source,
                    })?,
            ),
        };
        let stdout = match &self.job.stdout {
            None => None,
            Some(name) => Some(create_std_file(&dir, name, &self.run_as)?),
        };
        let stderr = match (&self.job.stderr, &stdout) {
            (None, _) => None,
            (Some(err), Some(out)) if Some(err) == self.job.stdout.as_ref() => {
                Some(out.try_clone().map_err(|source| StartError::Spawn {
                    what: "share stdout with stderr",
                    source,
                })?)
            }
            (Some(name), _) => Some(create_std_file(&dir, name, &self.run_as)?),
        };
        self.sandbox
            .take_catalog()
            .map_err(|source| StartError::Spawn {
                what: "list the sandbox",
                source,
            })?;
        let job_limits = JobLimits::of(&self.job, self.memory);
        let cgroup = match &self.limits {
            LimitMethod::CgroupV2 { base } => {
                match JobCgroup::create(base, &format!("job_{}", self.id), &job_limits) {
                    Ok(c) => Some(c),
                    Err(e) => {
                        let cgroup = base.display();
                        tracing::warn!(%cgroup, error = %e, "no cgroup for the job; using rlimits");
                        None
                    }
                }
            }
            LimitMethod::Rlimit => None,
        };
        let limit_method = match &cgroup {
            Some(_) => self.limits.clone(),
            None => LimitMethod::Rlimit,
        };
        let launch = Launch {
            exe,
            args: self.job.args.clone(),
            env: self.environment(),
            cwd: dir,
            stdin,
            stdout,
            stderr,
            run_as: self.run_as.clone(),
            rlimit_as: job_limits.rlimit_as(cgroup.is_some()),
            cgroup,
            limit_method,
            guard: self.job_guard.clone(),
        };
        let process = os_proc::spawn(launch, self.job.kill_sig)?;
        Ok(RunningJob {
            process,
            sandbox: self.sandbox,
            std_files: std_files(&self.job),
            transfer_output: self.job.transfer_output,
        })
    }
}

impl RunningJob {
    /// The job's process: suspend, continue, kills, wait.
    pub fn process(&self) -> &JobProcess {
        &self.process
    }

    /// The sandbox directory.
    pub fn sandbox_dir(&self) -> &Path {
        self.sandbox.path()
    }

    /// The output files to send back, once the job has exited (see [`Sandbox::collect_outputs`]).
    pub fn collect_outputs(&self) -> Result<Vec<OutputFile>, OutputError> {
        if self.process.try_exit().is_none() {
            return Err(OutputError::Unreadable {
                name: ".".to_string(),
                source: io::Error::other("the job is still running"),
            });
        }
        self.sandbox
            .collect_outputs(self.transfer_output.as_deref(), &self.std_files)
    }

    /// Kills the job if it still runs and removes its sandbox.
    pub fn remove_sandbox(self) -> io::Result<()> {
        let RunningJob {
            process, sandbox, ..
        } = self;
        drop(process);
        sandbox.remove()
    }
}

#[cfg(test)]
mod tests;

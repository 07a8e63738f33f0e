//! The job's process: started in its own session as its account with its limits, signalled as a
//! group, and waited for (`condor_starter.V6.1/os_proc.cpp` `OsProc::StartJob`,
//! `user_proc.cpp`, `vanilla_proc.cpp`; `condor_daemon_core.V6/daemon_core.cpp`
//! `Create_Process`).
//!
//! The child, between fork and exec, makes itself a session and process group leader
//! (`setsid`), joins the job's cgroup or sets its `RLIMIT_AS`, and, when the node is root,
//! drops to the job's account (supplementary groups, then gid, then uid) so nothing of root
//! survives the exec. Suspend, continue and both kills signal the whole process group, so a
//! job's children go too. A thread waits for the job with `waitid(WNOWAIT)`, kills what is left
//! of its group (and cgroup) as HTCondor's starter kills the job's process family, then reaps
//! it with `wait4` to get its CPU times and peak resident size; it reaps under the lock the
//! signalling methods take, so no signal can reach a recycled process id.

use super::account::{Account, RunAs};
use super::error::StartError;
use super::limits::{JobCgroup, LimitMethod};
use nix::sys::resource::{setrlimit, Resource};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::{setgid, setgroups, setsid, setuid, Gid, Pid, Uid};
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How the job's process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitOutcome {
    /// It exited with this code (HTCondor's `ExitCode`, `ExitBySignal = false`).
    Exited(i32),
    /// A signal killed it (`ExitSignal`, `ExitBySignal = true`).
    Signaled {
        /// The signal number.
        signal: i32,
        /// Whether it dumped core.
        core_dumped: bool,
    },
}

/// What the starter reports when a job's process ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExitReport {
    /// Exit code or signal.
    pub outcome: ExitOutcome,
    /// From the start to the exit.
    pub wall_time: Duration,
    /// User CPU time of the job and the children it waited for.
    pub user_cpu: Duration,
    /// System CPU time of the job and the children it waited for.
    pub system_cpu: Duration,
    /// Peak memory in bytes: the cgroup's `memory.peak`, else the largest resident size of
    /// the job's processes (`ru_maxrss`).
    pub peak_memory_bytes: Option<u64>,
}

/// Everything [`spawn`] needs, already checked and opened.
pub(crate) struct Launch {
    pub exe: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(OsString, OsString)>,
    pub cwd: PathBuf,
    pub stdin: Option<File>,
    pub stdout: Option<File>,
    pub stderr: Option<File>,
    pub run_as: RunAs,
    pub cgroup: Option<JobCgroup>,
    pub limit_method: LimitMethod,
    pub rlimit_as: Option<u64>,
}

/// Whether the job's process has been reaped (its pid may then be reused).
struct ProcState {
    reaped: bool,
    suspended: bool,
}

/// A running job's process group.
pub struct JobProcess {
    pid: Pid,
    kill_sig: Signal,
    limit_method: LimitMethod,
    state: Arc<Mutex<ProcState>>,
    exit: watch::Receiver<Option<ExitReport>>,
}

fn rusage_time(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
}

/// What a failed `spawn` means: the exec's errors name the executable.
fn spawn_error(exe: &Path, e: io::Error) -> StartError {
    match e.raw_os_error() {
        Some(libc::ENOENT) => StartError::MissingExecutable {
            path: exe.to_path_buf(),
        },
        Some(errno @ (libc::EACCES | libc::ENOEXEC | libc::ETXTBSY)) => StartError::NotExecutable {
            path: exe.to_path_buf(),
            reason: e.to_string(),
            errno,
        },
        // The steps before exec (session, cgroup, rlimit, account) fail otherwise, and std
        // reports only the errno, not which step gave it.
        _ => StartError::Spawn {
            what: "set up the job's session, cgroup, limits and account, and exec it",
            source: e,
        },
    }
}

/// Starts the job's process. `kill_sig` is the job's `KillSig`.
pub(crate) fn spawn(launch: Launch, kill_sig: Signal) -> Result<JobProcess, StartError> {
    let Launch {
        exe,
        args,
        env,
        cwd,
        stdin,
        stdout,
        stderr,
        run_as,
        cgroup,
        limit_method,
        rlimit_as,
    } = launch;
    let procs_fd = cgroup.as_ref().map(|c| c.procs().as_raw_fd());
    let ids: Option<(Uid, Gid, Vec<Gid>)> = match &run_as {
        RunAs::User(Account {
            uid, gid, groups, ..
        }) => Some((
            Uid::from_raw(*uid),
            Gid::from_raw(*gid),
            groups.iter().map(|g| Gid::from_raw(*g)).collect(),
        )),
        RunAs::NodeAccount => None,
    };
    let io = |f: Option<File>| f.map(Stdio::from).unwrap_or_else(Stdio::null);
    let mut cmd = Command::new(&exe);
    cmd.args(&args)
        .env_clear()
        .envs(env)
        .current_dir(&cwd)
        .stdin(io(stdin))
        .stdout(io(stdout))
        .stderr(io(stderr));
    // SAFETY: the closure runs in the forked child before exec and only makes system calls
    // (setsid, write, setrlimit, setgroups, setgid, setuid) on values prepared before the
    // fork; it allocates nothing and takes no lock.
    unsafe {
        cmd.pre_exec(move || {
            setsid()?;
            if let Some(fd) = procs_fd {
                if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(io::Error::last_os_error());
                }
            }
            if let Some(bytes) = rlimit_as {
                setrlimit(Resource::RLIMIT_AS, bytes, bytes)?;
            }
            if let Some((uid, gid, groups)) = &ids {
                setgroups(groups)?;
                setgid(*gid)?;
                setuid(*uid)?;
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|e| spawn_error(&exe, e))?;
    let started = Instant::now();
    let pid = Pid::from_raw(child.id() as i32);
    // The waiting thread reaps the child; std's handle is only dropped (it never waits).
    drop(child);
    let state = Arc::new(Mutex::new(ProcState {
        reaped: false,
        suspended: false,
    }));
    let (tx, rx) = watch::channel(None);
    let waiter_state = state.clone();
    std::thread::Builder::new()
        .name(format!("starter-wait-{pid}"))
        .spawn(move || {
            let report = wait_for_exit(pid, started, &waiter_state, cgroup);
            let _ = tx.send(Some(report));
        })
        .map_err(|source| {
            let _ = killpg(pid, Signal::SIGKILL);
            StartError::Spawn {
                what: "start the waiting thread",
                source,
            }
        })?;
    let (exe_shown, limits) = (exe.display(), limit_method.name());
    tracing::info!(pid = pid.as_raw(), exe = %exe_shown, limits, "job started");
    Ok(JobProcess {
        pid,
        kill_sig,
        limit_method,
        state,
        exit: rx,
    })
}

/// Waits for the job's process to end, cleans up its group, reaps it and reports.
fn wait_for_exit(
    pid: Pid,
    started: Instant,
    state: &Mutex<ProcState>,
    cgroup: Option<JobCgroup>,
) -> ExitReport {
    // SAFETY: plain system calls on stack values.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        while libc::waitid(
            libc::P_PID,
            pid.as_raw() as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOWAIT,
        ) != 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
    }
    let wall_time = started.elapsed();
    // The job's leader is a zombie, so its group id cannot be reused yet.
    let _ = killpg(pid, Signal::SIGKILL);
    if let Some(c) = &cgroup {
        let _ = c.kill_all();
    }
    let mut status = 0;
    // SAFETY: as above.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    {
        let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            // SAFETY: as above.
            let r = unsafe { libc::wait4(pid.as_raw(), &mut status, 0, &mut usage) };
            if r >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break;
            }
        }
        st.reaped = true;
    }
    let outcome = if libc::WIFSIGNALED(status) {
        ExitOutcome::Signaled {
            signal: libc::WTERMSIG(status),
            core_dumped: libc::WCOREDUMP(status),
        }
    } else {
        ExitOutcome::Exited(libc::WEXITSTATUS(status))
    };
    let peak_memory_bytes = cgroup
        .as_ref()
        .and_then(JobCgroup::peak_memory_bytes)
        .or_else(|| u64::try_from(usage.ru_maxrss).ok().map(|kb| kb * 1024));
    if let Some(c) = cgroup {
        if let Err(e) = c.remove() {
            tracing::warn!(error = %e, "cannot remove the job's cgroup");
        }
    }
    let report = ExitReport {
        outcome,
        wall_time,
        user_cpu: rusage_time(usage.ru_utime),
        system_cpu: rusage_time(usage.ru_stime),
        peak_memory_bytes,
    };
    tracing::info!(pid = pid.as_raw(), ?report.outcome, "job exited");
    report
}

impl JobProcess {
    /// The job's process id, also its process group and session id.
    pub fn pid(&self) -> u32 {
        self.pid.as_raw() as u32
    }

    /// How this job is limited.
    pub fn limit_method(&self) -> &LimitMethod {
        &self.limit_method
    }

    /// Sends `sig` to the job's process group; `Ok(false)` when the job is already gone.
    fn signal(&self, sig: Signal, suspended: Option<bool>) -> io::Result<bool> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if st.reaped {
            return Ok(false);
        }
        match killpg(self.pid, sig) {
            Ok(()) => {
                if let Some(s) = suspended {
                    st.suspended = s;
                }
                Ok(true)
            }
            Err(nix::errno::Errno::ESRCH) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Suspends the job (SIGSTOP to its group).
    pub fn suspend(&self) -> io::Result<bool> {
        self.signal(Signal::SIGSTOP, Some(true))
    }

    /// Continues a suspended job (SIGCONT to its group).
    pub fn resume(&self) -> io::Result<bool> {
        self.signal(Signal::SIGCONT, Some(false))
    }

    /// Asks the job to leave: its `KillSig` to its group, then SIGCONT if it was suspended so
    /// that it can act on it. The caller sends [`JobProcess::hard_kill`] when the vacate time
    /// has passed.
    pub fn soft_kill(&self) -> io::Result<bool> {
        let sent = self.signal(self.kill_sig, None)?;
        let suspended = self.state.lock().map(|s| s.suspended).unwrap_or(false);
        if sent && suspended {
            self.resume()?;
        }
        Ok(sent)
    }

    /// Kills the job's process group (SIGKILL).
    pub fn hard_kill(&self) -> io::Result<bool> {
        self.signal(Signal::SIGKILL, Some(false))
    }

    /// The report, if the job has exited.
    pub fn try_exit(&self) -> Option<ExitReport> {
        self.exit.borrow().clone()
    }

    /// Waits for the job to exit; any number of callers may wait.
    pub async fn wait(&self) -> ExitReport {
        let mut rx = self.exit.clone();
        loop {
            if let Some(report) = rx.borrow_and_update().clone() {
                return report;
            }
            if rx.changed().await.is_err() {
                if let Some(report) = rx.borrow().clone() {
                    return report;
                }
                // The waiting thread sends before it ends; if it died, the job is lost to us.
                tracing::error!(pid = self.pid.as_raw(), "the job's waiting thread is gone");
                std::future::pending::<()>().await;
            }
        }
    }
}

impl Drop for JobProcess {
    fn drop(&mut self) {
        // A job is never left running without its handle.
        let _ = self.hard_kill();
    }
}

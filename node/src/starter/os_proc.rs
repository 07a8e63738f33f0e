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
//!
//! Under a [`super::guard`] the process exec'd after those steps is the guard (as the job's
//! account, leader of the job's session and group), which starts the job in the same group:
//! the signals to the group reach the job, the guard's exit is the job's, and `wait4`'s usage
//! of the guard includes the job it waited for (the peak resident size is the larger of the
//! two). The node keeps the heartbeat pipe's write end ([`JobProcess::heartbeat`]); the guard
//! reports a job it could not exec on a status pipe, read before `spawn` returns, so such a
//! job fails to start with its `errno` as before.

use super::account::{Account, RunAs};
use super::error::StartError;
use super::guard::{GuardArgs, JobGuard};
use super::limits::{JobCgroup, LimitMethod};
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::sys::resource::{setrlimit, Resource};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::{pipe2, setgid, setgroups, setsid, setuid, Gid, Pid, Uid};
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
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
    /// Started under a [`super::guard`] (the process is then the guard's).
    pub guard: Option<JobGuard>,
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
    /// The write end of the guard's heartbeat pipe (non-blocking); closing it tells the
    /// guard the node is gone.
    heartbeat: Option<OwnedFd>,
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

/// The pipes between the node and a job's guard, all close-on-exec in the node: the
/// heartbeat pipe (the guard reads) and the status pipe (the guard writes the `errno` of a job
/// that could not be started). The guard's ends are made inheritable only in its own child
/// between fork and exec, so no other child of the node holds the heartbeat's write end and
/// the guard sees end of file when the node dies.
struct GuardPipes {
    heartbeat_read: OwnedFd,
    heartbeat_write: OwnedFd,
    status_read: OwnedFd,
    status_write: OwnedFd,
}

impl GuardPipes {
    fn new() -> Result<GuardPipes, StartError> {
        let fail = |e: nix::errno::Errno| StartError::Spawn {
            what: "make the job guard's pipes",
            source: e.into(),
        };
        let (heartbeat_read, heartbeat_write) = pipe2(OFlag::O_CLOEXEC).map_err(fail)?;
        let (status_read, status_write) = pipe2(OFlag::O_CLOEXEC).map_err(fail)?;
        fcntl(&heartbeat_write, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).map_err(fail)?;
        Ok(GuardPipes {
            heartbeat_read,
            heartbeat_write,
            status_read,
            status_write,
        })
    }

    /// Closes the guard's ends in the node and waits until the guard has started the job:
    /// `Some(errno)` when it could not.
    fn job_start_error(self) -> (OwnedFd, Option<i32>) {
        let GuardPipes {
            heartbeat_read,
            heartbeat_write,
            status_read,
            status_write,
        } = self;
        drop((heartbeat_read, status_write));
        let mut bytes = Vec::new();
        let _ = File::from(status_read).read_to_end(&mut bytes);
        let errno = <[u8; 4]>::try_from(bytes.as_slice())
            .ok()
            .map(i32::from_ne_bytes);
        (heartbeat_write, errno)
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
        guard,
    } = launch;
    let pipes = guard.as_ref().map(|_| GuardPipes::new()).transpose()?;
    // Under a guard the job's address-space limit is set by the guard on the job alone.
    let (program, argv, rlimit_as) = match (&guard, &pipes) {
        (Some(g), Some(p)) => {
            let a = GuardArgs {
                heartbeat_fd: p.heartbeat_read.as_raw_fd(),
                status_fd: p.status_write.as_raw_fd(),
                lease: g.lease,
                rlimit_as,
                exe: exe.clone().into_os_string(),
                args: args.iter().map(OsString::from).collect(),
            };
            (g.program.clone(), a.to_args(), None)
        }
        _ => (
            exe.clone(),
            args.iter().map(OsString::from).collect(),
            rlimit_as,
        ),
    };
    let inherited: Vec<i32> = pipes
        .as_ref()
        .map(|p| vec![p.heartbeat_read.as_raw_fd(), p.status_write.as_raw_fd()])
        .unwrap_or_default();
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
    let mut cmd = Command::new(&program);
    cmd.args(&argv)
        .env_clear()
        .envs(env)
        .current_dir(&cwd)
        .stdin(io(stdin))
        .stdout(io(stdout))
        .stderr(io(stderr));
    // SAFETY: the closure runs in the forked child before exec and only makes system calls
    // (setsid, write, setrlimit, setgroups, setgid, setuid, fcntl) on values prepared before
    // the fork; it allocates nothing and takes no lock.
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
            for fd in &inherited {
                if libc::fcntl(*fd, libc::F_SETFD, 0) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|e| match &guard {
        None => spawn_error(&exe, e),
        Some(_) => StartError::Spawn {
            what: "set up the job's session, cgroup, limits and account, and exec its guard",
            source: e,
        },
    })?;
    let started = Instant::now();
    let pid = Pid::from_raw(child.id() as i32);
    // The waiting thread reaps the child; std's handle is only dropped (it never waits).
    drop(child);
    let heartbeat = match pipes.map(GuardPipes::job_start_error) {
        Some((_, Some(errno))) => {
            let _ = nix::sys::wait::waitpid(pid, None);
            return Err(spawn_error(&exe, io::Error::from_raw_os_error(errno)));
        }
        Some((fd, None)) => Some(fd),
        None => None,
    };
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
    let guarded = heartbeat.is_some();
    tracing::info!(pid = pid.as_raw(), exe = %exe_shown, limits, guarded, "job started");
    Ok(JobProcess {
        pid,
        kill_sig,
        limit_method,
        state,
        exit: rx,
        heartbeat,
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

    /// Suspends the job (SIGSTOP to its group). A guard, stopped with the group, is continued
    /// at once: stopped, it could not kill the job if the node died while the job is
    /// suspended, and the job would stay stopped, an orphan, for good.
    pub fn suspend(&self) -> io::Result<bool> {
        let stopped = self.signal(Signal::SIGSTOP, Some(true))?;
        if stopped && self.heartbeat.is_some() {
            match nix::sys::signal::kill(self.pid, Signal::SIGCONT) {
                Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(stopped)
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

    /// Tells the job's guard the node is alive and that `lease_left` of its job lease is
    /// left (a no-op for a job without a guard, or whose guard is gone). Never blocks: a full
    /// pipe (the guard is stopped with the job) already holds heartbeats it reads when it
    /// continues.
    pub fn heartbeat(&self, lease_left: Duration) {
        if let Some(fd) = &self.heartbeat {
            let _ = nix::unistd::write(fd.as_fd(), &super::guard::heartbeat_record(lease_left));
        }
    }

    /// Whether the job runs under a guard.
    pub fn guarded(&self) -> bool {
        self.heartbeat.is_some()
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

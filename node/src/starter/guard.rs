//! The job guard: a small process between the execute node and the job that kills the job
//! when the node is gone, as HTCondor's starter does when its job lease passes without word
//! from the shadow (`condor_starter.V6.1/jic_shadow.cpp`, "job lease";
//! `condor_starter.V6.1/baseStarter.cpp`), here without a starter process of its own.
//!
//! Why: a job runs in a session of its own (`setsid`), so nothing ends it when the node dies
//! (`kill -9`, a crash) and no cgroup holds it. The access point waits the job lease
//! (`JobLeaseDuration`) after it last heard from the node before it runs the job elsewhere;
//! the guard makes sure that by then the first run is gone.
//!
//! How: the node execs the guard (`aerie-node job-guard ...`, [`GuardArgs`]) in place of the
//! job, after `setsid`, the limits and the account switch, so the guard is the leader of the
//! job's session and process group and runs as the job's user. The guard starts the job in
//! the same process group, waits for it, and reads heartbeats the node writes on a pipe, each
//! saying how much of the claim's lease is left since the access point's last keep-alive
//! ([`heartbeat_record`]). When the pipe reaches end of file (every copy of its write end
//! closed: the node died) or that much time passed without another heartbeat (the node is
//! stopped or wedged, or the access point silent), the guard SIGKILLs the whole process group,
//! itself included ([`decide`]). So the job is gone by the time the access point, which counts
//! the lease from the keep-alive's answer, gives the claim up. When the job ends first, the guard
//! ends the same way (the same exit code, or the same signal raised on itself), so the
//! node's `wait4` on the guard sees the job's outcome and its resource usage (the guard's
//! usage includes the job it waited for).
//!
//! The node signals the whole group (suspend, `KillSig`, SIGKILL): the guard ignores every
//! catchable signal but the ones it needs, so `KillSig` reaches only the job, while SIGSTOP
//! and SIGKILL take the guard with it as before.

use nix::sys::signal::{self, SigHandler};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

/// How the node guards its jobs: the guard's program and the job lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobGuard {
    /// The `aerie-node` binary (`/proc/self/exe` in the node: the same binary, even when the
    /// file was replaced since; a process may follow its own `/proc/self` links after
    /// dropping to the job's account).
    pub program: std::path::PathBuf,
    /// The job lease: the claim's lease (`JobLeaseDuration`, else the keep-alive interval
    /// times the keep-alives that may be missed).
    pub lease: Duration,
}

/// The hidden subcommand of `aerie-node` that runs a guard.
pub const SUBCOMMAND: &str = "job-guard";

/// The exit code of a guard whose job could not be started (as a shell's 127).
const CANNOT_START: i32 = 127;

/// Without a pidfd (old kernels) the guard looks for the job's exit this often.
const REAP_POLL: Duration = Duration::from_millis(100);

/// Why the guard kills the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillReason {
    /// The heartbeat pipe reached end of file: the node is gone.
    NodeGone,
    /// No heartbeat for the job lease: the node is stopped or wedged.
    LeaseExpired,
}

/// What the guard does now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The job keeps running; look again at the latest after this long.
    Keep {
        /// Until the lease passes without a heartbeat.
        recheck_in: Duration,
    },
    /// Kill the job's process group.
    Kill(KillReason),
}

/// One heartbeat on the pipe: the job lease left, in milliseconds (4 bytes, native order;
/// at most `PIPE_BUF` bytes, so a write is never split).
pub fn heartbeat_record(lease_left: Duration) -> [u8; 4] {
    u32::try_from(lease_left.as_millis())
        .unwrap_or(u32::MAX)
        .to_ne_bytes()
}

/// The guard's decision: kill at end of file, or once `lease` (the lease left that the last
/// heartbeat gave, or the whole lease before the first) has passed since the last heartbeat;
/// keep the job otherwise.
pub fn decide(last_heartbeat: Instant, now: Instant, eof: bool, lease: Duration) -> Verdict {
    if eof {
        return Verdict::Kill(KillReason::NodeGone);
    }
    let expires = last_heartbeat + lease;
    match expires.checked_duration_since(now) {
        Some(left) if !left.is_zero() => Verdict::Keep { recheck_in: left },
        _ => Verdict::Kill(KillReason::LeaseExpired),
    }
}

/// The guard's command line after [`SUBCOMMAND`]:
/// `HEARTBEAT_FD STATUS_FD LEASE_MS RLIMIT_AS EXE [ARG...]` (`RLIMIT_AS` 0 for none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuardArgs {
    /// The read end of the node's heartbeat pipe.
    pub heartbeat_fd: RawFd,
    /// Where the guard writes the `errno` of a job that could not be started (4 bytes, native
    /// order), then closes it; closed without a word when the job started.
    pub status_fd: RawFd,
    /// The job lease.
    pub lease: Duration,
    /// The job's `RLIMIT_AS` in bytes (set on the job, not on the guard).
    pub rlimit_as: Option<u64>,
    /// The job's executable.
    pub exe: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
}

impl GuardArgs {
    /// The arguments, [`SUBCOMMAND`] first.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut v: Vec<OsString> = vec![
            SUBCOMMAND.into(),
            self.heartbeat_fd.to_string().into(),
            self.status_fd.to_string().into(),
            self.lease.as_millis().to_string().into(),
            self.rlimit_as.unwrap_or(0).to_string().into(),
            self.exe.clone(),
        ];
        v.extend(self.args.iter().cloned());
        v
    }

    /// Parses the arguments after [`SUBCOMMAND`]; the error names the bad one.
    pub fn parse(args: &[OsString]) -> Result<GuardArgs, String> {
        let num = |i: usize, what: &str| -> Result<u64, String> {
            let a = args
                .get(i)
                .ok_or_else(|| format!("job-guard: missing argument {} ({what})", i + 1))?;
            a.to_str().and_then(|s| s.parse().ok()).ok_or_else(|| {
                format!(
                    "job-guard: argument {} ({what}) is not a number: {a:?}",
                    i + 1
                )
            })
        };
        let fd = |i: usize, what: &str| -> Result<RawFd, String> {
            RawFd::try_from(num(i, what)?)
                .map_err(|_| format!("job-guard: argument {} ({what}) is out of range", i + 1))
        };
        let (heartbeat_fd, status_fd) = (fd(0, "heartbeat fd")?, fd(1, "status fd")?);
        let lease = Duration::from_millis(num(2, "lease in ms")?);
        let rlimit_as = Some(num(3, "RLIMIT_AS")?).filter(|b| *b > 0);
        let exe = args
            .get(4)
            .cloned()
            .ok_or("job-guard: missing argument 5 (the job's executable)")?;
        Ok(GuardArgs {
            heartbeat_fd,
            status_fd,
            lease,
            rlimit_as,
            exe,
            args: args[5..].to_vec(),
        })
    }
}

/// The signals the guard must not ignore: the ones that cannot be caught, the child's exit,
/// continuing, and the faults of its own code.
fn guard_keeps(sig: libc::c_int) -> bool {
    matches!(
        sig,
        libc::SIGKILL
            | libc::SIGSTOP
            | libc::SIGCHLD
            | libc::SIGCONT
            | libc::SIGSEGV
            | libc::SIGBUS
            | libc::SIGFPE
            | libc::SIGILL
            | libc::SIGTRAP
            | libc::SIGSYS
            | libc::SIGABRT
    )
}

/// Sets every signal the guard does not keep to `handler` (errors, for the signals the C
/// library reserves, are ignored). Only `sigaction`: safe between fork and exec.
fn set_other_signals(handler: libc::sighandler_t) {
    for sig in 1..=libc::SIGRTMAX() {
        if !guard_keeps(sig) {
            // SAFETY: plain system call; the handler is SIG_IGN or SIG_DFL.
            unsafe { libc::signal(sig, handler) };
        }
    }
}

fn set_cloexec(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain system call on a descriptor number.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A pidfd for the child, readable once it exits (Linux 5.3 and later).
fn pidfd_open(pid: Pid) -> Option<OwnedFd> {
    // SAFETY: plain system call; the result is a new descriptor we own.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid.as_raw(), 0) };
    // SAFETY: a non-negative result is a fresh descriptor.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// The heartbeats read so far: the bytes of a record not complete yet.
#[derive(Debug, Default)]
struct Heartbeats {
    partial: Vec<u8>,
}

impl Heartbeats {
    /// Takes `bytes` read from the pipe; the lease left that the newest whole record gives.
    fn take(&mut self, bytes: &[u8]) -> Option<Duration> {
        self.partial.extend_from_slice(bytes);
        let whole = self.partial.len() / 4 * 4;
        let newest = self.partial[..whole]
            .chunks_exact(4)
            .last()
            .map(|r| Duration::from_millis(u32::from_ne_bytes([r[0], r[1], r[2], r[3]]).into()));
        self.partial.drain(..whole);
        newest
    }

    /// Reads every heartbeat waiting on the non-blocking pipe: the newest one's lease left,
    /// and whether the pipe is at end of file.
    fn drain(&mut self, fd: &OwnedFd) -> (Option<Duration>, bool) {
        let mut buf = [0u8; 256];
        let mut newest = None;
        loop {
            match nix::unistd::read(fd, &mut buf) {
                Ok(0) => return (newest, true),
                Ok(n) => newest = self.take(&buf[..n]).or(newest),
                Err(nix::errno::Errno::EINTR) => continue,
                Err(nix::errno::Errno::EAGAIN) => return (newest, false),
                Err(_) => return (newest, true),
            }
        }
    }
}

/// Ends the guard as the job ended: the same exit code, or the same signal (no core file of
/// the guard's own: it would overwrite the job's).
fn relay(status: WaitStatus) -> i32 {
    match status {
        WaitStatus::Exited(_, code) => code,
        WaitStatus::Signaled(_, sig, _) => {
            let _ = nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CORE, 0, 0);
            // SAFETY: restoring the default action of a signal.
            let _ = unsafe { signal::signal(sig, SigHandler::SigDfl) };
            let mut set = signal::SigSet::empty();
            set.add(sig);
            let _ = set.thread_unblock();
            let _ = signal::raise(sig);
            128 + sig as i32
        }
        _ => CANNOT_START,
    }
}

/// Runs the guard ([`SUBCOMMAND`]); returns its exit code (the job's, relayed).
pub fn main(args: &[OsString]) -> i32 {
    let a = match GuardArgs::parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("aerie-node {e}");
            return CANNOT_START;
        }
    };
    // SAFETY: the descriptors were passed to this process for it alone; nothing else owns them.
    let (heartbeat, status) = unsafe {
        (
            OwnedFd::from_raw_fd(a.heartbeat_fd),
            OwnedFd::from_raw_fd(a.status_fd),
        )
    };
    set_other_signals(libc::SIG_IGN);
    // The job inherits neither descriptor.
    for fd in [&heartbeat, &status] {
        if let Err(e) = set_cloexec(fd.as_raw_fd()) {
            eprintln!(
                "aerie-node job-guard: cannot mark fd {} close-on-exec: {e}",
                fd.as_raw_fd()
            );
            return CANNOT_START;
        }
    }
    let mut cmd = Command::new(&a.exe);
    cmd.args(&a.args);
    let rlimit_as = a.rlimit_as;
    // SAFETY: only sigaction and setrlimit between fork and exec, on values prepared before.
    unsafe {
        cmd.pre_exec(move || {
            set_other_signals(libc::SIG_DFL);
            if let Some(bytes) = rlimit_as {
                nix::sys::resource::setrlimit(
                    nix::sys::resource::Resource::RLIMIT_AS,
                    bytes,
                    bytes,
                )?;
            }
            Ok(())
        });
    }
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let errno = e.raw_os_error().unwrap_or(libc::EIO);
            let _ = nix::unistd::write(status.as_fd(), &errno.to_ne_bytes());
            return CANNOT_START;
        }
    };
    drop(status);
    let pid = Pid::from_raw(child.id() as i32);
    // Reaped below with waitpid; std's handle is only dropped.
    drop(child);
    if let Err(e) = nix::fcntl::fcntl(
        &heartbeat,
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
    ) {
        eprintln!("aerie-node job-guard: cannot make the heartbeat pipe non-blocking: {e}");
    }
    let exited = pidfd_open(pid);
    let (mut last, mut lease) = (Instant::now(), a.lease);
    let mut beats = Heartbeats::default();
    loop {
        match waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(nix::errno::Errno::EINTR) => {}
            Ok(s @ (WaitStatus::Exited(..) | WaitStatus::Signaled(..))) => return relay(s),
            Ok(_) => {}
            Err(_) => return CANNOT_START,
        }
        let (beat, eof) = beats.drain(&heartbeat);
        let now = Instant::now();
        if let Some(left) = beat {
            (last, lease) = (now, left);
        }
        let wait = match decide(last, now, eof, lease) {
            Verdict::Kill(_) => {
                // The job's whole process group, this guard with it.
                // SAFETY: plain system call.
                unsafe { libc::kill(0, libc::SIGKILL) };
                return CANNOT_START;
            }
            Verdict::Keep { recheck_in } if exited.is_some() => recheck_in,
            Verdict::Keep { recheck_in } => recheck_in.min(REAP_POLL),
        };
        let mut fds = vec![libc::pollfd {
            fd: heartbeat.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        if let Some(p) = &exited {
            fds.push(libc::pollfd {
                fd: p.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        let ms = wait.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
        // SAFETY: fds is a live array of fds.len() pollfds.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEASE: Duration = Duration::from_secs(6);

    #[test]
    fn the_job_is_kept_while_heartbeats_come_within_the_lease() {
        let t0 = Instant::now();
        assert_eq!(
            decide(t0, t0, false, LEASE),
            Verdict::Keep { recheck_in: LEASE }
        );
        assert_eq!(
            decide(t0, t0 + Duration::from_secs(5), false, LEASE),
            Verdict::Keep {
                recheck_in: Duration::from_secs(1)
            }
        );
    }

    #[test]
    fn the_job_is_killed_once_the_lease_passes_without_a_heartbeat() {
        let t0 = Instant::now();
        let kill = Verdict::Kill(KillReason::LeaseExpired);
        assert_eq!(decide(t0, t0 + LEASE, false, LEASE), kill);
        assert_eq!(decide(t0, t0 + LEASE * 10, false, LEASE), kill);
        // A heartbeat after a long pause (the guard was stopped) renews the lease.
        let late = t0 + LEASE * 10;
        assert!(matches!(
            decide(late, late, false, LEASE),
            Verdict::Keep { .. }
        ));
    }

    #[test]
    fn the_job_is_killed_at_once_when_the_node_is_gone() {
        let t0 = Instant::now();
        assert_eq!(
            decide(t0, t0, true, LEASE),
            Verdict::Kill(KillReason::NodeGone)
        );
    }

    #[test]
    fn heartbeats_are_read_whole_and_the_newest_counts() {
        let mut h = Heartbeats::default();
        let a = heartbeat_record(Duration::from_millis(5000));
        let b = heartbeat_record(Duration::from_millis(4000));
        assert_eq!(h.take(&[]), None);
        // A record split across two reads counts once whole.
        assert_eq!(h.take(&a[..3]), None);
        let mut rest = a[3..].to_vec();
        rest.extend_from_slice(&b);
        assert_eq!(h.take(&rest), Some(Duration::from_millis(4000)));
        assert!(h.partial.is_empty());
        // A lease left beyond u32 milliseconds is the most the record holds.
        let huge = heartbeat_record(Duration::from_secs(u64::MAX / 2));
        assert_eq!(u32::from_ne_bytes(huge), u32::MAX);
    }

    #[test]
    fn the_arguments_round_trip_and_bad_ones_are_named() {
        let a = GuardArgs {
            heartbeat_fd: 7,
            status_fd: 9,
            lease: Duration::from_millis(6500),
            rlimit_as: Some(64 << 20),
            exe: "/bin/sh".into(),
            args: vec!["-c".into(), "exit 3".into()],
        };
        let v = a.to_args();
        assert_eq!(v[0], SUBCOMMAND);
        assert_eq!(GuardArgs::parse(&v[1..]), Ok(a.clone()));
        let none = GuardArgs {
            rlimit_as: None,
            args: vec![],
            ..a
        };
        assert_eq!(GuardArgs::parse(&none.to_args()[1..]), Ok(none));
        let e = GuardArgs::parse(&["7".into(), "x".into()]).unwrap_err();
        assert!(e.contains("argument 2 (status fd)"), "{e}");
        let e = GuardArgs::parse(&["7".into(), "9".into(), "1".into(), "0".into()]).unwrap_err();
        assert!(e.contains("executable"), "{e}");
    }

    #[test]
    fn the_guard_ignores_the_vacate_signals_but_not_its_own_faults() {
        assert!(!guard_keeps(libc::SIGTERM));
        assert!(!guard_keeps(libc::SIGQUIT));
        assert!(!guard_keeps(libc::SIGUSR1));
        assert!(!guard_keeps(libc::SIGHUP));
        assert!(guard_keeps(libc::SIGCHLD));
        assert!(guard_keeps(libc::SIGSEGV));
    }
}

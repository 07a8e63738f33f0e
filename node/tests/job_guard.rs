//! `aerie-node job-guard` as a real process between a stand-in node (this test, which holds
//! the heartbeat pipe's write end) and a job that leaves a child of its own in the background:
//! the whole process group dies when the pipe closes (the node died) or when the heartbeats
//! stop for the lease (the node is stopped), and lives while they come. Every wait polls for
//! the awaited state with a generous deadline.
use std::fs;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

const NODE: &str = env!("CARGO_BIN_EXE_aerie-node");
const DEADLINE: Duration = Duration::from_secs(60);

/// The guard and its job, in a session of their own as the node starts them.
struct Guarded {
    guard: Child,
    heartbeat: Option<OwnedFd>,
    /// The job's background child (a grandchild of the guard).
    background: i32,
    _dir: tempfile::TempDir,
}

fn pipe() -> (OwnedFd, OwnedFd) {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap()
}

fn alive(pid: i32) -> bool {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit(')').next().unwrap_or("").trim_start();
    !(state.is_empty() || state.starts_with('Z') || state.starts_with('X'))
}

fn poll_until(what: &str, mut done: impl FnMut() -> bool) {
    let give_up = Instant::now() + DEADLINE;
    while !done() {
        assert!(Instant::now() < give_up, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `aerie-node job-guard` with a job `args` in `dir`, in a session of its own; gives
/// it, the heartbeat pipe's write end and the status pipe's read end.
fn spawn_guard(lease_ms: u64, dir: &Path, args: &[&str]) -> (Child, OwnedFd, OwnedFd) {
    let (hb_read, hb_write) = pipe();
    let (st_read, st_write) = pipe();
    let inherit = [hb_read.as_raw_fd(), st_write.as_raw_fd()];
    let mut cmd = Command::new(NODE);
    cmd.args([
        "job-guard",
        &inherit[0].to_string(),
        &inherit[1].to_string(),
    ])
    .args([&lease_ms.to_string(), "0"])
    .args(args)
    .current_dir(dir);
    // SAFETY: only setsid and fcntl between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            nix::unistd::setsid()?;
            for fd in inherit {
                if libc::fcntl(fd, libc::F_SETFD, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let guard = cmd.spawn().unwrap();
    (guard, hb_write, st_read)
}

/// What the guard wrote on the status pipe by the time it closed it.
fn status_of(st_read: OwnedFd) -> Vec<u8> {
    let mut status = Vec::new();
    std::io::Read::read_to_end(&mut fs::File::from(st_read), &mut status).unwrap();
    status
}

impl Guarded {
    fn start(lease_ms: u64) -> Guarded {
        let dir = tempfile::tempdir().unwrap();
        let script = "sleep 300 & echo $! > bg; wait";
        let (guard, heartbeat, st_read) =
            spawn_guard(lease_ms, dir.path(), &["/bin/sh", "-c", script]);
        // The guard closes the status pipe without a word once the job has started.
        assert_eq!(status_of(st_read), b"", "the job did not start");
        let bg = dir.path().join("bg");
        poll_until("the job's background child", || {
            fs::read_to_string(&bg).is_ok_and(|t| t.ends_with('\n'))
        });
        let background = fs::read_to_string(&bg).unwrap().trim().parse().unwrap();
        Guarded {
            guard,
            heartbeat: Some(heartbeat),
            background,
            _dir: dir,
        }
    }

    /// A heartbeat saying `left_ms` of the job lease is left (4 bytes, native order).
    fn beat(&self, left_ms: u32) {
        nix::unistd::write(self.heartbeat.as_ref().unwrap(), &left_ms.to_ne_bytes()).unwrap();
    }

    /// Waits for the guard to end; its wait status.
    fn ended(&mut self) -> std::process::ExitStatus {
        let give_up = Instant::now() + DEADLINE;
        loop {
            if let Some(s) = self.guard.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < give_up, "the guard never ended");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.guard.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.guard.wait();
    }
}

#[test]
fn the_job_group_dies_when_the_heartbeat_pipe_closes() {
    let mut g = Guarded::start(600_000);
    assert!(alive(g.background));
    // The node dies: its end of the pipe closes.
    g.heartbeat = None;
    let status = g.ended();
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    poll_until("the job's background child to die", || !alive(g.background));
}

#[test]
fn the_job_group_lives_while_heartbeats_come_and_dies_when_they_stop_for_the_lease() {
    // A ten-minute lease, but each heartbeat says one second of it is left.
    let mut g = Guarded::start(600_000);
    // Four such seconds with a heartbeat every fifth of one.
    let until = Instant::now() + Duration::from_secs(4);
    while Instant::now() < until {
        g.beat(1_000);
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            g.guard.try_wait().unwrap().is_none(),
            "killed under heartbeats"
        );
    }
    assert!(alive(g.background));
    // The node stops (its end stays open): the second left passes.
    let status = g.ended();
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    poll_until("the job's background child to die", || !alive(g.background));
    assert!(g.heartbeat.is_some());
}

#[test]
fn the_guard_outlives_the_vacate_signal_and_relays_the_job_s_exit() {
    let dir = tempfile::tempdir().unwrap();
    let sh = |script: &str| spawn_guard(600_000, dir.path(), &["/bin/sh", "-c", script]);
    // SIGTERM to the whole group: the job, trapping it, exits 7; the guard stays to say so.
    let (mut child, _hb, st) = sh("trap 'exit 7' TERM; touch ready; while :; do sleep 0.05; done");
    assert_eq!(status_of(st), b"");
    poll_until("the job to be ready", || dir.path().join("ready").exists());
    let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(7), "{status:?}");
    // A job killed by a signal: the guard ends by the same signal.
    let (mut child, _hb, _st) = sh("kill -USR1 $$");
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGUSR1), "{status:?}");
    // A job that cannot be executed: its errno on the status pipe.
    let (mut child, _hb, st) = spawn_guard(600_000, dir.path(), &["/no/such/program"]);
    assert_eq!(status_of(st), libc::ENOENT.to_ne_bytes());
    assert_eq!(child.wait().unwrap().code(), Some(127));
}

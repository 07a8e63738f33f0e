//! The starter with real processes. The machine's tests run as root, so jobs run as `nobody`;
//! the tests that need root say so and return early without it. Nothing here sleeps and then
//! asserts: every wait polls for the awaited state with a generous deadline.

use super::*;
use nix::sys::signal::Signal;
use std::future::Future;
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(60);

fn signaled(signal: Signal) -> ExitOutcome {
    ExitOutcome::Signaled {
        signal: signal as i32,
        core_dumped: false,
    }
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// An execute directory the job's account can pass through, as HTCondor's `EXECUTE` is.
fn execute_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// The guard every job here runs under: the `aerie-node` binary cargo built beside this test
/// binary (`target/debug/deps/..`), as the node runs its jobs.
fn job_guard() -> Option<JobGuard> {
    let exe = std::env::current_exe().unwrap();
    let program = exe.parent().unwrap().parent().unwrap().join("aerie-node");
    assert!(
        program.exists(),
        "{} is not built (cargo builds it for the integration tests)",
        program.display()
    );
    Some(JobGuard {
        program,
        lease: Duration::from_secs(600),
    })
}

fn starter_with(execute: &Path, run_as: RunAsPolicy) -> Starter {
    Starter::new(StarterConfig {
        execute_dir: execute.to_path_buf(),
        run_as,
        limits: LimitMethod::Rlimit,
        job_guard: job_guard(),
    })
}

fn starter(execute: &Path) -> Starter {
    starter_with(execute, RunAsPolicy::default())
}

/// A job running a shell script as `nobody`.
fn sh(script: &str) -> JobDescription {
    JobDescription::new("/bin/sh", &["-c", script], "nobody")
}

fn job_from_ad(text: &str) -> JobDescription {
    JobDescription::from_ad(&classad::parse_ad(text).unwrap()).unwrap()
}

async fn poll_until(what: &str, mut done: impl FnMut() -> bool) {
    let give_up = tokio::time::Instant::now() + DEADLINE;
    while !done() {
        assert!(
            tokio::time::Instant::now() < give_up,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(DEADLINE, f)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

async fn run(starter: &Starter, id: &str, job: JobDescription) -> (RunningJob, ExitReport) {
    run_in(starter, id, job, MemoryLimits::default()).await
}

/// Runs `job` held to `memory`, as its slot would hold it.
async fn run_in(
    starter: &Starter,
    id: &str,
    job: JobDescription,
    memory: MemoryLimits,
) -> (RunningJob, ExitReport) {
    let running = starter.prepare(id, job, memory).unwrap().start().unwrap();
    let report = within("the job's exit", running.process().wait()).await;
    (running, report)
}

fn read(job: &RunningJob, name: &str) -> String {
    fs::read_to_string(job.sandbox_dir().join(name)).unwrap_or_default()
}

/// The first line the job writes to `name` in its sandbox, once it has written one.
async fn file_written(job: &RunningJob, name: &str) -> String {
    poll_until(name, || read(job, name).ends_with('\n')).await;
    read(job, name).trim().to_string()
}

/// The state letter of /proc/PID/stat (R, S, T, Z...), none when the process is gone.
fn proc_state(pid: u32) -> Option<char> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')').next()?.trim_start().chars().next()
}

fn is_gone(pid: u32) -> bool {
    matches!(proc_state(pid), None | Some('Z') | Some('X'))
}

#[tokio::test]
async fn exit_codes_are_reported() {
    let exec = execute_dir();
    let s = starter(exec.path());
    let (_, ok) = run(&s, "ok", sh("exit 0")).await;
    assert_eq!(ok.outcome, ExitOutcome::Exited(0));
    let (_, three) = run(&s, "three", sh("exit 3")).await;
    assert_eq!(three.outcome, ExitOutcome::Exited(3));
    assert!(three.peak_memory_bytes.unwrap_or(0) > 0);
}

#[tokio::test]
async fn a_signal_death_is_reported_as_a_signal() {
    let exec = execute_dir();
    let (_, report) = run(&starter(exec.path()), "sig", sh("kill -USR1 $$")).await;
    assert_eq!(report.outcome, signaled(Signal::SIGUSR1));
}

#[tokio::test]
async fn arguments_environment_and_standard_files() {
    let exec = execute_dir();
    let job = job_from_ad(
        r#"[ Cmd = "/bin/sh"; TransferExecutable = false; Owner = "nobody";
             Arguments = "-c 'echo \"$GREETING\" \"$0\" \"$1\"; echo oops >&2; echo \"$TMPDIR\"' first 'second arg'";
             Environment = "GREETING='hello world'";
             Out = "/submit/dir/out.txt"; Err = "err.txt" ]"#,
    );
    let (running, report) = run(&starter(exec.path()), "std", job).await;
    assert_eq!(report.outcome, ExitOutcome::Exited(0));
    let dir = running.sandbox_dir().display().to_string();
    assert_eq!(
        read(&running, "out.txt"),
        format!("hello world first second arg\n{dir}\n")
    );
    assert_eq!(read(&running, "err.txt"), "oops\n");
    // Both standard files are new in the sandbox, so they are outputs.
    let names: Vec<String> = running
        .collect_outputs()
        .unwrap()
        .into_iter()
        .map(|f| f.name)
        .collect();
    assert_eq!(names, ["err.txt", "out.txt"]);
}

#[tokio::test]
async fn old_syntax_and_stdout_shared_with_stderr() {
    let exec = execute_dir();
    let job = job_from_ad(
        r#"[ Cmd = "/bin/sh"; TransferExecutable = false; Owner = "nobody";
             Args = "-c env"; Env = "A=1;B=two words"; Out = "both"; Err = "both" ]"#,
    );
    let (running, _) = run(&starter(exec.path()), "old", job).await;
    let out = read(&running, "both");
    assert!(out.lines().any(|l| l == "A=1"), "{out}");
    assert!(out.lines().any(|l| l == "B=two words"), "{out}");
    // The node's own environment does not leak into the job.
    assert!(!out.contains("CARGO"), "{out}");
}

/// The standard output and error come back even when the job wrote nothing to them, and
/// beside a `TransferOutput` that does not name them, as HTCondor's starter sends them: a
/// user's `error = job.err` is there, empty, after a clean run.
#[tokio::test]
async fn standard_files_always_come_back() {
    let exec = execute_dir();
    let s = starter(exec.path());
    let mut job = job_from_ad(
        r#"[ Cmd = "/bin/sh"; TransferExecutable = false; Owner = "nobody";
             Arguments = "-c 'echo made > made.txt'"; Out = "out"; Err = "err" ]"#,
    );
    for (id, transfer_output) in [("all", None), ("named", Some(vec!["made.txt".into()]))] {
        job.transfer_output = transfer_output;
        let (running, report) = run(&s, id, job.clone()).await;
        assert_eq!(report.outcome, ExitOutcome::Exited(0));
        let outputs = running.collect_outputs().unwrap();
        let names: Vec<(&str, usize)> = outputs
            .iter()
            .map(|f| (f.name.as_str(), f.bytes.len()))
            .collect();
        assert_eq!(names, [("made.txt", 5), ("out", 0), ("err", 0)], "{id}");
    }
}

#[tokio::test]
async fn inputs_in_outputs_back() {
    let exec = execute_dir();
    let s = starter(exec.path());
    let mut job = sh("tr a-z A-Z < in.txt > upper.txt; echo log > log.txt");
    job.stdin = Some("in.txt".into());
    let mut prepared = s
        .prepare("io", job.clone(), MemoryLimits::default())
        .unwrap();
    prepared.put_input("in.txt", b"shout\n").unwrap();
    let running = prepared.start().unwrap();
    within("exit", running.process().wait()).await;
    // All new or changed files: not the unchanged input.
    let all = running.collect_outputs().unwrap();
    let names: Vec<&str> = all.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["log.txt", "upper.txt"]);
    assert_eq!(all[1].bytes, b"SHOUT\n");
    let dir = running.sandbox_dir().to_path_buf();
    running.remove_sandbox().unwrap();
    assert!(!dir.exists());

    // Only the named ones, and a missing one is named.
    job.transfer_output = Some(vec!["upper.txt".into(), "never.txt".into()]);
    let mut prepared = s.prepare("named", job, MemoryLimits::default()).unwrap();
    prepared.put_input("in.txt", b"x\n").unwrap();
    let running = prepared.start().unwrap();
    within("exit", running.process().wait()).await;
    let err = running.collect_outputs().unwrap_err();
    assert!(
        matches!(&err, OutputError::Missing { name } if name == "never.txt"),
        "{err}"
    );
    assert_eq!(err.hold_reason_code(), error::HOLD_TRANSFER_OUTPUT_ERROR);
}

#[tokio::test]
async fn a_transferred_executable_runs_from_the_sandbox() {
    let exec = execute_dir();
    let mut job = JobDescription::new("/submit/home/alice/analyze", &["x"], "nobody");
    job.transfer_executable = true;
    job.stdout = Some("out".into());
    let mut prepared = starter(exec.path())
        .prepare("exe", job, MemoryLimits::default())
        .unwrap();
    prepared
        .put_executable(b"#!/bin/sh\necho \"from $0 with $1\"\n")
        .unwrap();
    let running = prepared.start().unwrap();
    let report = within("exit", running.process().wait()).await;
    assert_eq!(report.outcome, ExitOutcome::Exited(0));
    let dir = running.sandbox_dir().display().to_string();
    assert_eq!(
        read(&running, "out"),
        format!("from {dir}/{CONDOR_EXEC} with x\n")
    );
}

#[tokio::test]
async fn start_failures_are_typed_and_name_the_cause() {
    let exec = execute_dir();
    let s = starter(exec.path());
    let err = |job: JobDescription, put: &[(&str, &[u8])]| {
        let mut prepared = s.prepare("fail", job, MemoryLimits::default()).unwrap();
        for (name, bytes) in put {
            prepared.put_input(name, bytes).unwrap();
        }
        prepared.start().err().expect("the job must not start")
    };
    let missing = err(JobDescription::new("/no/such/program", &[], "nobody"), &[]);
    assert!(matches!(missing, StartError::MissingExecutable { .. }));
    assert_eq!(
        missing.hold_reason(),
        "Failed to execute '/no/such/program': (errno=2: 'No such file or directory')"
    );
    assert_eq!(
        missing.hold_reason_code(),
        error::HOLD_FAILED_TO_CREATE_PROCESS
    );
    // The sandbox of a job that did not start is gone.
    assert!(!exec.path().join("dir_fail").exists());

    let plain = err(
        JobDescription::new("data.txt", &[], "nobody"),
        &[("data.txt", b"x")],
    );
    assert!(matches!(plain, StartError::NotExecutable { .. }), "{plain}");
    assert!(plain.hold_reason().contains("data.txt"));

    let transferred = JobDescription {
        transfer_executable: true,
        ..JobDescription::new("prog", &[], "nobody")
    };
    assert!(matches!(
        err(transferred, &[]),
        StartError::MissingExecutable { .. }
    ));

    let mut no_input = sh("cat");
    no_input.stdin = Some("absent.txt".into());
    let unreadable = err(no_input, &[]);
    assert!(matches!(unreadable, StartError::UnreadableInput { .. }));
    assert!(unreadable.hold_reason().contains("absent.txt"));
    assert_eq!(
        unreadable.hold_reason_code(),
        error::HOLD_TRANSFER_INPUT_ERROR
    );
}

#[tokio::test]
async fn kill_sig_then_sigkill_for_a_job_that_ignores_it() {
    let exec = execute_dir();
    let s = starter(exec.path());
    // KillSig is caught and ignored: the job logs it and runs on.
    let job = sh("trap 'echo got-term >> log' TERM; echo ready > ready; while :; do sleep 1; done");
    let running = s
        .prepare("stubborn", job, MemoryLimits::default())
        .unwrap()
        .start()
        .unwrap();
    file_written(&running, "ready").await;
    assert!(running.process().soft_kill().unwrap());
    poll_until("the job to see its KillSig", || {
        read(&running, "log").contains("got-term")
    })
    .await;
    assert_eq!(
        running.process().try_exit(),
        None,
        "the job ignored KillSig"
    );
    assert!(running.process().hard_kill().unwrap());
    let report = within("exit", running.process().wait()).await;
    assert_eq!(report.outcome, signaled(Signal::SIGKILL));
    // Signalling a finished job is harmless.
    assert!(!running.process().hard_kill().unwrap());

    // A job's own KillSig is the one sent.
    let mut job = sh("trap 'exit 7' USR1; echo ready > ready; while :; do sleep 1; done");
    job.kill_sig = Signal::SIGUSR1;
    let running = s
        .prepare("polite", job, MemoryLimits::default())
        .unwrap()
        .start()
        .unwrap();
    file_written(&running, "ready").await;
    running.process().soft_kill().unwrap();
    let report = within("exit", running.process().wait()).await;
    assert_eq!(report.outcome, ExitOutcome::Exited(7));
}

#[tokio::test]
async fn the_whole_process_group_dies() {
    let exec = execute_dir();
    let s = starter(exec.path());
    let job = sh("sleep 1000 & echo $! > grandchild; wait");
    let running = s
        .prepare("family", job, MemoryLimits::default())
        .unwrap()
        .start()
        .unwrap();
    let grandchild: u32 = file_written(&running, "grandchild").await.parse().unwrap();
    assert!(!is_gone(grandchild));
    running.process().hard_kill().unwrap();
    within("exit", running.process().wait()).await;
    poll_until("the grandchild to die", || is_gone(grandchild)).await;

    // A job that exits leaving a child behind: the child is killed too.
    let job = sh("sleep 1000 & echo $! > grandchild; exit 0");
    let (running, report) = run(&s, "orphan", job).await;
    assert_eq!(report.outcome, ExitOutcome::Exited(0));
    let grandchild: u32 = read(&running, "grandchild").trim().parse().unwrap();
    poll_until("the left-behind child to die", || is_gone(grandchild)).await;
}

#[tokio::test]
async fn suspend_and_continue_the_group() {
    let exec = execute_dir();
    let job = sh("echo $$ > shell; sleep 1000 & echo $! > grandchild; wait");
    let running = starter(exec.path())
        .prepare("pause", job, MemoryLimits::default())
        .unwrap()
        .start()
        .unwrap();
    let grandchild: u32 = file_written(&running, "grandchild").await.parse().unwrap();
    let shell: u32 = file_written(&running, "shell").await.parse().unwrap();
    let guard = running.process().pid();
    assert_ne!(guard, shell, "the job runs under its guard");
    assert!(running.process().suspend().unwrap());
    poll_until("the job's processes stopped", || {
        proc_state(shell) == Some('T') && proc_state(grandchild) == Some('T')
    })
    .await;
    // The guard is not left stopped: it must still kill the job if the node dies.
    poll_until("the guard running", || proc_state(guard) != Some('T')).await;
    assert!(running.process().resume().unwrap());
    poll_until("both running again", || {
        proc_state(shell) != Some('T') && proc_state(grandchild) != Some('T')
    })
    .await;
    // A suspended job still leaves on its KillSig: it is continued after the signal.
    running.process().suspend().unwrap();
    poll_until("stopped", || proc_state(shell) == Some('T')).await;
    running.process().soft_kill().unwrap();
    let report = within("exit", running.process().wait()).await;
    assert_eq!(report.outcome, signaled(Signal::SIGTERM));
}

#[tokio::test]
async fn runs_as_the_owner_never_as_root() {
    if !is_root() {
        eprintln!("skipped: switching accounts needs root");
        return;
    }
    let exec = execute_dir();
    let s = starter(exec.path());
    let nobody = Account::lookup("nobody").unwrap();
    let (running, _) = run(&s, "who", sh("id -u > uid; id -g > gid; id -G > groups")).await;
    assert_eq!(read(&running, "uid").trim(), nobody.uid.to_string());
    assert_eq!(read(&running, "gid").trim(), nobody.gid.to_string());
    let groups: Vec<u32> = read(&running, "groups")
        .split_whitespace()
        .map(|g| g.parse().unwrap())
        .collect();
    assert!(
        !groups.contains(&0),
        "root's groups must not survive: {groups:?}"
    );
    // The sandbox and its files belong to the job's account.
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        fs::metadata(running.sandbox_dir()).unwrap().uid(),
        nobody.uid
    );

    // Root-owned and unknown owners are refused before anything is made.
    let root = s
        .prepare(
            "root",
            JobDescription::new("/bin/true", &[], "root"),
            MemoryLimits::default(),
        )
        .unwrap_err();
    assert!(matches!(root, StartError::RootOwner { .. }), "{root}");
    assert_eq!(
        root.hold_reason_code(),
        error::HOLD_FAILED_TO_ACCESS_USER_ACCOUNT
    );
    assert!(!exec.path().join("dir_root").exists());
    let ghost = s.prepare(
        "ghost",
        JobDescription::new("/bin/true", &[], "no-such-user-aerie"),
        MemoryLimits::default(),
    );
    assert!(matches!(ghost, Err(StartError::UnknownOwner { .. })));

    // Unless the knob maps them to an unprivileged account.
    let mapped = starter_with(
        exec.path(),
        RunAsPolicy {
            allow_runas_owner: false,
            slot_user: None,
        },
    );
    let mut job = sh("id -u > uid");
    job.owner = "root".into();
    let (running, _) = run(&mapped, "mapped", job).await;
    assert_eq!(read(&running, "uid").trim(), nobody.uid.to_string());
}

/// A slot of `mib` MiB, as the node's [`MemoryKnobs::for_job`] gives it by default.
fn slot_of(mib: u64) -> MemoryLimits {
    MemoryLimits {
        slot_mib: Some(mib),
        address_space_mib: None,
    }
}

#[tokio::test]
async fn rlimit_holds_the_job_to_its_slots_memory() {
    let python = Path::new("/usr/bin/python3");
    if !python.exists() {
        eprintln!("skipped: needs /usr/bin/python3 to allocate memory");
        return;
    }
    let exec = execute_dir();
    let s = starter(exec.path());
    assert_eq!(s.limit_method(), &LimitMethod::Rlimit);
    let allocate = || {
        let mut job = JobDescription::new(
            "/usr/bin/python3",
            &["-c", "b = bytearray(256 * 1024 * 1024); b[-1] = 1"],
            "nobody",
        );
        job.stderr = Some("err".into());
        job
    };
    let (running, over) = run_in(&s, "over", allocate(), slot_of(96)).await;
    assert_eq!(running.process().limit_method(), &LimitMethod::Rlimit);
    assert_eq!(over.outcome, ExitOutcome::Exited(1));
    assert!(
        read(&running, "err").contains("MemoryError"),
        "{}",
        read(&running, "err")
    );
    // The same job in a slot with room for its allocation succeeds, and its peak shows it.
    let (_, under) = run_in(&s, "under", allocate(), slot_of(1024)).await;
    assert_eq!(under.outcome, ExitOutcome::Exited(0));
    assert!(under.peak_memory_bytes.unwrap() >= 256 << 20, "{under:?}");
    // STARTER_RLIMIT_AS, when set, is the limit instead of the slot's memory.
    let tight = MemoryLimits {
        slot_mib: Some(1024),
        address_space_mib: Some(96),
    };
    let (_, over) = run_in(&s, "knob", allocate(), tight).await;
    assert_eq!(over.outcome, ExitOutcome::Exited(1));
}

/// The defect this test guards against: a job that requests no memory (`RequestMemory` 1
/// MiB) was held to its request and died before its C library loaded (exit 127, no output).
/// In the smallest slot the negotiator carves by default (128 MiB) a dynamically linked
/// program runs.
#[tokio::test]
async fn a_job_that_requests_no_memory_runs_in_the_smallest_slot() {
    let exec = execute_dir();
    let s = starter(exec.path());
    let job = job_from_ad(
        r#"[ Cmd = "/bin/sh"; Arguments = "-c 'echo hello; ulimit -v'"; Owner = "nobody";
            Out = "out"; RequestMemory = 1; ImageSize = 10; TransferExecutable = false ]"#,
    );
    let slot = classad::parse_ad("[ Memory = 128 ]").unwrap();
    let job_ad = classad::parse_ad("[ RequestMemory = 1 ]").unwrap();
    let memory = MemoryKnobs::default().for_job(&slot, &job_ad);
    let (running, report) = run_in(&s, "tiny", job, memory).await;
    assert_eq!(report.outcome, ExitOutcome::Exited(0));
    assert_eq!(read(&running, "out"), format!("hello\n{}\n", 128 * 1024));
}

#[tokio::test]
async fn cpu_time_is_reported() {
    let exec = execute_dir();
    let job = sh("i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done");
    let (_, report) = run(&starter(exec.path()), "cpu", job).await;
    assert_eq!(report.outcome, ExitOutcome::Exited(0));
    assert!(
        report.user_cpu + report.system_cpu > Duration::ZERO,
        "{report:?}"
    );
}

/// Unmounts a test's file system when the test ends, however it ends.
struct Unmount(std::path::PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[tokio::test]
async fn a_full_sandbox_is_named() {
    let exec = execute_dir();
    let mounted = is_root()
        && std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs"])
            .arg(exec.path())
            .status()
            .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: needs root and a small tmpfs");
        return;
    }
    let _unmount = Unmount(exec.path().to_path_buf());
    let mut prepared = starter(exec.path())
        .prepare("full", sh("true"), MemoryLimits::default())
        .unwrap();
    let err = prepared
        .put_input("big.dat", &vec![7u8; 256 * 1024])
        .unwrap_err();
    assert!(matches!(err, StartError::SandboxFull { .. }), "{err}");
    assert_eq!(err.hold_reason_subcode(), libc::ENOSPC);
    assert_eq!(err.hold_reason_code(), error::HOLD_TRANSFER_INPUT_ERROR);
    assert!(err.hold_reason().contains("dir_full"), "{err}");
}

/// This host has no delegated cgroup v2, so the cgroup path runs against a plain directory
/// standing in for one (with the `cgroup.procs` the kernel would make): the job's cgroup gets
/// its limits, the job's process joins it (writes `0` to `cgroup.procs`) before it execs, no
/// rlimit is set, and `cgroup.kill` is written when the job ends. The kernel's enforcement
/// itself is not tested here.
#[tokio::test]
async fn cgroup_setup_on_a_stand_in_directory() {
    let exec = execute_dir();
    let base = tempfile::tempdir().unwrap();
    let s = Starter::new(StarterConfig {
        execute_dir: exec.path().to_path_buf(),
        run_as: RunAsPolicy::default(),
        limits: LimitMethod::CgroupV2 {
            base: base.path().to_path_buf(),
        },
        job_guard: job_guard(),
    });
    let cg = base.path().join("job_cg");
    fs::create_dir(&cg).unwrap();
    fs::write(cg.join("cgroup.procs"), "").unwrap();
    let mut job = sh("ulimit -v > vlimit");
    job.request_cpus = 3;
    let (running, report) = run_in(&s, "cg", job, slot_of(64)).await;
    assert_eq!(report.outcome, ExitOutcome::Exited(0));
    assert_eq!(running.process().limit_method().name(), "cgroup-v2");
    assert_eq!(read(&running, "vlimit").trim(), "unlimited");
    let file = |name: &str| fs::read_to_string(cg.join(name)).unwrap();
    assert_eq!(file("memory.max"), (64u64 << 20).to_string());
    assert_eq!(file("cpu.weight"), "300");
    assert_eq!(file("cgroup.procs"), "0");
    assert_eq!(file("cgroup.kill"), "1");

    // A cgroup that cannot be made: the job still runs, with rlimits instead.
    fs::remove_dir_all(base.path()).unwrap();
    let job = sh("ulimit -v > vlimit");
    let (running, report) = run_in(&s, "nocg", job, slot_of(64)).await;
    assert_eq!(report.outcome, ExitOutcome::Exited(0));
    assert_eq!(running.process().limit_method(), &LimitMethod::Rlimit);
    assert_eq!(read(&running, "vlimit").trim(), (64 * 1024).to_string());
}

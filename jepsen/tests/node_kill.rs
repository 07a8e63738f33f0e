//! A real execute node killed with `kill -9` while it runs a job (found while building
//! `pool-real`; run with `cargo nextest run -p aerie-jepsen --run-ignored all node_kill`).
//!
//! The node runs its jobs in sessions of their own (`setsid`, src/starter/os_proc.rs) with no
//! parent-death signal, and without a delegated cgroup (`limits="rlimit"`) nothing else ends
//! them: a `kill -9` of `aerie-node execute` leaves the job running, orphaned. The access
//! point gives the claim up after three missed keep-alives (3 s with `ALIVE_INTERVAL = 1`,
//! before the job's 6 s `job_lease_duration`), puts the job back to idle, and the next cycle
//! starts it on another node: the job runs twice at once. HTCondor avoids this because its
//! starter (src/condor_starter.V6.1) is a process of its own that outlives the startd and
//! keeps the shadow's connection, and a starter that loses its shadow kills the job when the
//! job lease passes.
//!
//! Loopback only (no namespaces); security on (the test pool's certificates).

use aerie_tests::pool::{open_tempdir, AccessPoint, ExecuteNode};
use aerie_tests::*;
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

const CM: &str = env!("CARGO_BIN_EXE_aerie-jepsen-cm");
const NODE: &str = env!("CARGO_BIN_EXE_aerie-jepsen-node");
const CMCTL: &str = env!("CARGO_BIN_EXE_aerie-jepsen-cmctl");
const EXEC: &str = "NUM_CPUS = 1\nMEMORY = 1024\nDISK = 1000000\n\
    SLOT_TYPE_0_PARTITIONABLE = false\nUPDATE_INTERVAL = 2\nUID_DOMAIN = pool.test\n\
    STARTER_ALLOW_RUNAS_OWNER = False\n";

fn alive(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

fn kill9(pid: &str) {
    let _ = std::process::Command::new("kill")
        .args(["-9", pid])
        .status();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "bug: a job outlives its kill -9'd execute node and is started again elsewhere"]
async fn a_job_of_an_execute_node_killed_with_sigkill_never_runs_twice_at_once() {
    let env = [
        ("AERIE_NEGOTIATOR_INTERVAL", "1"),
        ("AERIE_NEGOTIATOR_CYCLE_DELAY", "1"),
    ];
    let cm = Cluster::start(daemon_bin(CM), 1, &env).expect("start the CM");
    wait_leader(&cm.running(), Duration::from_secs(60))
        .await
        .expect("a leader");
    let cms = vec![cm.addr(1)];
    let dir = open_tempdir("aerie-jepsen-node-kill-").expect("tempdir");
    let mut exec1 = ExecuteNode::start(NODE, dir.path(), "exec1", &cms, EXEC).expect("exec1");
    let ap = AccessPoint::start(
        NODE,
        dir.path(),
        "ap",
        "pool.test",
        &cms,
        "ALIVE_INTERVAL = 1\n",
    )
    .expect("the access point");
    // Every run of the job appends its pid where the job (run as nobody) may write.
    let drop = dir.path().join("drop");
    std::fs::create_dir(&drop).expect("mkdir");
    std::fs::set_permissions(&drop, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let script = dir.path().join("job.sh");
    let text = format!(
        "#!/bin/sh\necho $$ >> {}/pids\nexec sleep 300\n",
        drop.display()
    );
    std::fs::write(&script, text).expect("write job.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let desc = format!(
        "executable = job.sh\ninitialdir = {}\noutput = job.out\nrequest_memory = 64\n\
         job_lease_duration = 6\nqueue\n",
        dir.path().display()
    );
    ap.submit(CMCTL, &cms, dir.path(), "job", &desc)
        .unwrap_or_else(|e| panic!("{e:#}"));
    let pids = || std::fs::read_to_string(drop.join("pids")).unwrap_or_default();
    let started = Instant::now();
    while pids().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the job never ran"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let first: i32 = pids().trim().parse().expect("a pid");
    exec1.daemon.kill();
    // Another node the job could go to.
    let _exec2 = ExecuteNode::start(NODE, dir.path(), "exec2", &cms, EXEC).expect("exec2");
    let watch = Instant::now();
    let mut twice = None;
    while watch.elapsed() < Duration::from_secs(20) && twice.is_none() {
        let all: Vec<String> = pids().split_whitespace().map(str::to_string).collect();
        if all.len() > 1 && alive(first) {
            twice = Some(all);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    for p in pids().split_whitespace() {
        kill9(p);
    }
    assert!(
        twice.is_none(),
        "the job runs twice at once: its first run (pid {first}) outlived exec1's kill -9 and \
         it was started again: pids {twice:?}\n--- ap ---\n{}",
        ap.daemon.log_text()
    );
}

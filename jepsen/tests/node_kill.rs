//! A real execute node killed with `kill -9` while it runs a job (found while building
//! `pool-real`): the job never runs twice at once, and it does run again elsewhere once its
//! lease has passed.
//!
//! The node runs its jobs in sessions of their own (`setsid`, node/src/starter/os_proc.rs),
//! and without a delegated cgroup (`limits="rlimit"`) nothing but the node ends them. The bug
//! was: a `kill -9` of `aerie-node execute` left the job running, orphaned; the access point
//! gave the claim up after three missed keep-alives (3 s with `ALIVE_INTERVAL = 1`, before the
//! job's 6 s `job_lease_duration`), and the next cycle started the job on another node while
//! the orphan still ran. HTCondor avoids this because its starter (src/condor_starter.V6.1)
//! outlives the startd and kills the job when the job lease passes without word from the
//! shadow, and the shadow waits the job lease out before the job is given up. Here the job
//! runs under a job guard (node/src/starter/guard.rs) that kills the job's process group when
//! the node's heartbeat pipe closes, and the access point gives a claim up only once the job
//! lease has passed since it last heard the node (node/src/schedd/claims.rs).
//!
//! Loopback only (no namespaces); security on (the test pool's certificates).

use aerie_tests::pool::{open_tempdir, AccessPoint, ExecuteNode};
use aerie_tests::*;
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

const CM: &str = env!("CARGO_BIN_EXE_aerie-jepsen-cm");
const NODE: &str = env!("CARGO_BIN_EXE_aerie-jepsen-node");
const CMCTL: &str = env!("CARGO_BIN_EXE_aerie-jepsen-cmctl");
/// The slot ads live 5 s (`ClassAdLifetime`, re-advertised every 2 s), less than the job's
/// 6 s lease, as the collector's 900 s `CLASSAD_LIFETIME` is less than the 2400 s default
/// lease: once the lease has passed, the dead node's slot is no longer matched.
const EXEC: &str = "NUM_CPUS = 1\nMEMORY = 1024\nDISK = 1000000\n\
    SLOT_TYPE_0_PARTITIONABLE = false\nUPDATE_INTERVAL = 2\nUID_DOMAIN = pool.test\n\
    STARTER_ALLOW_RUNAS_OWNER = False\nClassAdLifetime = 5\nSTARTD_ATTRS = ClassAdLifetime\n";

fn alive(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

fn kill9(pid: &str) {
    let _ = std::process::Command::new("kill")
        .args(["-9", pid])
        .status();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
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
    let killed = Instant::now();
    // Another node the job could go to.
    let exec2 = ExecuteNode::start(NODE, dir.path(), "exec2", &cms, EXEC).expect("exec2");
    let mut twice = None;
    let mut first_gone = None;
    let mut again = None;
    while killed.elapsed() < Duration::from_secs(25) && twice.is_none() && again.is_none() {
        let all: Vec<String> = pids().split_whitespace().map(str::to_string).collect();
        let first_alive = alive(first);
        if !first_alive && first_gone.is_none() {
            first_gone = Some(killed.elapsed());
        }
        if all.len() > 1 {
            if first_alive {
                twice = Some(all);
            } else {
                again = Some(killed.elapsed());
            }
        }
        std::thread::sleep(Duration::from_millis(100));
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
    // The guard ends the orphan as soon as the node is gone, not at the lease.
    let gone = first_gone.expect("the first run outlived its node's kill -9 by 25 s");
    assert!(
        gone < Duration::from_secs(3),
        "the first run ended {gone:?} after the kill"
    );
    // The access point waits out the 6 s job lease, then runs the job elsewhere.
    let again = again.unwrap_or_else(|| {
        panic!(
            "the job never ran again after its node's kill -9\n--- ap ---\n{}\n--- exec2 ---\n{}\n--- cm ---\n{}",
            ap.daemon.log_text(),
            exec2.daemon.log_text(),
            cm.log(1)
        )
    });
    assert!(
        again >= Duration::from_secs(5),
        "the job ran again {again:?} after the kill, before its 6 s lease passed"
    );
}

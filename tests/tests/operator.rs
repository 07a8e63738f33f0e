//! What an operator meets: `cmctl` through an election, and the CMs' logs (issue 13.16).
use aerie_tests::*;
use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_aerie-cm-node");
const CMCTL: &str = env!("CARGO_BIN_EXE_aerie-cmctl");

fn cmctl(cms: &[String], args: &[&str]) -> (i32, String, String) {
    aerie_security::testing::test_pool();
    let out = Command::new(CMCTL)
        .args(args)
        .env("AERIE_CMS", cms.join(","))
        .output()
        .expect("run cmctl");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A write right after the leader dies waits out the election instead of failing with
/// "forwarding to the leader failed", and lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cmctl_writes_and_reads_go_through_an_election() {
    let mut c = Cluster::start(daemon_bin(BIN), 3, &[]).expect("start cluster");
    // Kill the leader only once all three CMs vote: killed while the third is still joining,
    // it would leave one voter of two, no quorum, and rightly no election (seen: a quarter of
    // runs on a busy machine).
    let leader = wait_formed(&c.running(), Duration::from_secs(20))
        .await
        .expect("leader");
    let cms: Vec<String> = c.running().into_iter().map(|(_, a)| a).collect();
    let (code, _, err) = cmctl(&cms, &["userprio", "-setfactor", "alice@pool", "250"]);
    assert_eq!(code, 0, "{err}");
    c.kill(leader);
    let t = Instant::now();
    // A generous deadline: two cores running every test at once can make an election slow;
    // what matters is that cmctl waits it out instead of failing at once.
    let (code, out, err) = cmctl(
        &cms,
        &[
            "userprio",
            "--timeout",
            "30",
            "-setfactor",
            "alice@pool",
            "500",
        ],
    );
    assert_eq!(
        code,
        0,
        "write through the election failed after {:?}: {err}",
        t.elapsed()
    );
    assert!(out.contains("was set to 500"), "{out}");
    let (code, out, err) = cmctl(&cms, &["userprio", "-allusers"]);
    assert_eq!(code, 0, "{err}");
    let row = out
        .lines()
        .find(|l| l.starts_with("alice@pool"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(row.contains("500.00"), "{row}");
}

/// Logs for operators: with `AERIE_LOG_FORMAT=json` every line is a JSON object (and text
/// logs written to a file carry no colour codes); with a peer down, the leader does not log
/// an error for every read and every heartbeat, only now and then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_are_json_on_request_and_a_dead_peer_is_not_logged_per_read() {
    let mut c =
        Cluster::start(daemon_bin(BIN), 3, &[("AERIE_LOG_FORMAT", "json")]).expect("start cluster");
    let leader = wait_leader(&c.running(), Duration::from_secs(20))
        .await
        .expect("leader");
    let dead = c
        .ids()
        .into_iter()
        .find(|i| *i != leader)
        .expect("a follower");
    c.kill(dead);
    let la = c.addr(leader);
    for _ in 0..30 {
        limits(&la, false).await.expect("linearizable read");
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let log = c.log(leader);
    assert!(!log.contains('\u{1b}'), "colour codes in a log file");
    for line in log.lines().filter(|l| !l.trim().is_empty()) {
        serde_json::from_str::<serde_json::Value>(line)
            .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
    }
    let dead_addr = c.addr(dead);
    let about_dead = log
        .lines()
        .filter(|l| l.contains(&dead_addr) && (l.contains("ERROR") || l.contains("WARN")))
        .count();
    assert!(
        about_dead <= 6,
        "{about_dead} warnings about the dead peer in ~3 s:\n{log}"
    );
}

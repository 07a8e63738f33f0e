//! `aerie-node execute` against three real CMs: its slot ads, laid out from an HTCondor
//! configuration, reach the collectors with the policy state (`State`, `Activity`,
//! `EnteredCurrentActivity`) and the load (`LoadAvg`), never the private `ClaimId`, and
//! `cmctl status` shows them with sane activity times and load (not `[????]`).
use aerie_tests::*;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const CM: &str = env!("CARGO_BIN_EXE_aerie-cm-node");
const NODE: &str = env!("CARGO_BIN_EXE_aerie-node-sim");
const CMCTL: &str = env!("CARGO_BIN_EXE_aerie-cmctl");
const WAIT: Duration = Duration::from_secs(30);

/// The execute node; killed when dropped.
struct Exec(Child);

impl Drop for Exec {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_execute(dir: &std::path::Path, cms: &[String]) -> Exec {
    let cfg = dir.join("condor_config");
    std::fs::write(
        &cfg,
        "NUM_CPUS = 2\nMEMORY = 2048\nDISK = 1000000\nSLOT_TYPE_0_PARTITIONABLE = false\n\
         UPDATE_INTERVAL = 2\n",
    )
    .expect("write the configuration");
    aerie_security::testing::test_pool();
    let mut child = Command::new(NODE)
        .args(["execute", "--name", "exec1.test", "--cms", &cms.join(",")])
        .arg("--config")
        .arg(&cfg)
        .arg("--state-dir")
        .arg(dir.join("state"))
        .env("AERIE_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start aerie-node execute");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read the listen line");
    assert!(line.contains("listening on"), "{line:?}");
    Exec(child)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_execute_nodes_slots_reach_every_collector_and_cmctl_status() {
    let cm = Cluster::start(daemon_bin(CM), 3, &[]).expect("start 3 CMs");
    if let Err(e) = wait_leader(&cm.running(), WAIT).await {
        panic!("no leader: {e}");
    }
    let cms: Vec<String> = cm.ids().iter().map(|&id| cm.addr(id)).collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let _exec = start_execute(dir.path(), &cms);
    let now = unix_now();
    for addr in &cms {
        let ads = eventually("both slots in the collector", WAIT, || async {
            let ads = collector_ads(addr, "Machine", "Machine == \"exec1.test\"", &[]).await?;
            let ready = ads.len() == 2
                && ads
                    .iter()
                    .all(|a| a.eval_attr("State").as_str() == Some("Unclaimed"));
            Ok(ready.then_some(ads))
        })
        .await
        .unwrap_or_else(|e| panic!("{addr}: {e}"));
        for ad in &ads {
            let name = ad.eval_attr("Name");
            assert_eq!(ad.eval_attr("Activity").as_str(), Some("Idle"), "{name:?}");
            let entered = ad
                .eval_attr("EnteredCurrentActivity")
                .as_int()
                .expect("EnteredCurrentActivity");
            assert!(
                (now - 120..=now + 120).contains(&entered),
                "{entered} vs {now}"
            );
            assert!(ad.eval_attr("LoadAvg").as_number().is_some(), "{name:?}");
            assert_eq!(ad.eval_attr("Cpus").as_int(), Some(1), "{name:?}");
            assert!(
                !ad.contains("ClaimId"),
                "the private ClaimId leaked: {name:?}"
            );
        }
    }
    let (code, out, err) = run_cmctl(CMCTL, &cms, &["status"], None);
    assert_eq!(code, 0, "{err}");
    for slot in ["slot1@exec1.test", "slot2@exec1.test"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(slot))
            .unwrap_or_else(|| panic!("{slot} not in:\n{out}"));
        assert!(
            line.contains("Unclaimed") && line.contains("Idle"),
            "{line}"
        );
        assert!(!line.contains("[????]"), "no load shown: {line}");
        // Idle for seconds, not since the epoch.
        let time = line.split_whitespace().last().unwrap_or_default();
        assert!(time.starts_with("0+00:0"), "activity time {time}: {line}");
    }
}

//! `aerie-node simulate` against a real single-node `aerie-cm serve`: its slot, submitter and
//! scheduler ads reach the collector (never the private ClaimId) and go away on SIGTERM; and,
//! with the test acting as the leader, grants are checked, slots are claimed through the
//! startd rules, show up Claimed in the collector, run and are released, and the claims log
//! the startds wrote passes `check-claims`.
use aerie_proto::collector::{self as cpb, collector_client::CollectorClient};
use aerie_proto::negotiation::{self as npb, access_point_client::AccessPointClient};
use aerie_tests::{eventually, free_port, wait_leader, write_retry};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tonic::transport::{Channel, Endpoint};

const NODE: &str = env!("CARGO_BIN_EXE_aerie-node");
const WAIT: Duration = Duration::from_secs(20);

/// The CM binary: AERIE_CM_BIN, else `aerie-cm` (or the tests crate's `aerie-cm-node`) in
/// this build's target directory, else built there with cargo.
fn cm_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("AERIE_CM_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("current exe");
    // target/debug/deps/simulate-HASH -> target/debug
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target dir")
        .to_path_buf();
    for name in ["aerie-cm", "aerie-cm-node"] {
        if dir.join(name).exists() {
            return dir.join(name);
        }
    }
    let status = Command::new(env!("CARGO"))
        .args(["build", "-p", "aerie-cm", "--bin", "aerie-cm"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .status()
        .expect("run cargo build -p aerie-cm");
    assert!(
        status.success(),
        "cargo build -p aerie-cm failed; set AERIE_CM_BIN"
    );
    dir.join("aerie-cm")
}

/// A running simulator; killed when dropped.
struct SimProc {
    child: Child,
    addr: String,
    log: PathBuf,
    stderr: PathBuf,
}

impl SimProc {
    fn start(dir: &Path, cm: &str, extra: &[&str]) -> SimProc {
        let addr = format!("127.0.0.1:{}", free_port());
        let log = dir.join("claims.log");
        let stderr = dir.join("sim.stderr");
        let child = Command::new(NODE)
            .args(["simulate", "--cms", cm, "--listen", &addr])
            .arg("--claims-log")
            .arg(&log)
            .args(["--update-interval", "2", "--status-interval", "1"])
            .args(extra)
            .env("AERIE_LOG", "info,aerie_node=debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::File::create(&stderr).expect("stderr file"),
            ))
            .spawn()
            .expect("start aerie-node simulate");
        SimProc {
            child,
            addr,
            log,
            stderr,
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// SIGTERM, then the exit code.
    fn terminate(&mut self) -> Option<i32> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        for _ in 0..200 {
            if let Ok(Some(s)) = self.child.try_wait() {
                return s.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for SimProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn channel(addr: &str) -> Channel {
    Endpoint::from_shared(format!("http://{addr}"))
        .expect("endpoint")
        .connect_timeout(Duration::from_secs(1))
        .timeout(Duration::from_secs(10))
        .connect_lazy()
}

async fn query(
    addr: &str,
    ad_type: &str,
    constraint: &str,
) -> anyhow::Result<Vec<classad::ClassAd>> {
    let r = CollectorClient::new(channel(addr))
        .query(cpb::QueryRequest {
            ad_type: ad_type.into(),
            constraint: constraint.into(),
            ..Default::default()
        })
        .await?
        .into_inner();
    r.ads
        .iter()
        .map(|t| classad::parse_ad(t).map_err(|e| anyhow::anyhow!("{e}")))
        .collect()
}

fn s(ad: &classad::ClassAd, attr: &str) -> String {
    ad.eval_attr(attr).as_str().unwrap_or_default().to_string()
}

/// One `aerie-cm serve` process (a single-node cluster); killed when dropped.
struct Cm {
    child: Child,
    addr: String,
    dir: tempfile::TempDir,
}

impl Cm {
    fn addr(&self, _id: u64) -> String {
        self.addr.clone()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("cm.log")).unwrap_or_default()
    }
}

impl Drop for Cm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn start_cm() -> Cm {
    let dir = tempfile::tempdir().expect("tempdir");
    let addr = format!("127.0.0.1:{}", free_port());
    let log = std::fs::File::create(dir.path().join("cm.log")).expect("cm log");
    let child = Command::new(cm_bin())
        .args(["serve", "--id", "1", "--listen", &addr, "--peers"])
        .arg(format!("1={addr}"))
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .expect("start aerie-cm serve");
    let cm = Cm { child, addr, dir };
    if let Err(e) = wait_leader(&[(1, cm.addr.clone())], WAIT).await {
        panic!("CM leader: {e}\n{}", cm.log());
    }
    // These tests play the leader themselves: the CM's own negotiator must not send grants
    // of its own (they would show up as extra refusals in the claims log).
    let pause = aerie_core::state::Command::SetNegotiatorPaused { paused: true };
    if let Err(e) = write_retry(&[cm.addr.clone()], &pause, WAIT).await {
        panic!("pause the CM's negotiator: {e}\n{}", cm.log());
    }
    cm
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_is_advertised_and_invalidated_on_sigterm() {
    let cm = start_cm().await;
    let cm_addr = cm.addr(1);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut sim = SimProc::start(
        dir.path(),
        &cm_addr,
        &[
            "--slots",
            "6",
            "--machines",
            "4",
            "--jobs",
            "10",
            "--submitters",
            "2",
            "--groups",
            "group_a",
        ],
    );
    let slots = eventually("6 slot ads", WAIT, || async {
        let ads = query(&cm_addr, "Machine", "").await?;
        anyhow::ensure!(ads.len() == 6, "{} slot ads", ads.len());
        Ok(Some(ads))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", sim.stderr()));
    let my = format!("<{}>", sim.addr);
    for ad in &slots {
        assert_eq!(s(ad, "MyAddress"), my);
        assert_eq!(s(ad, "StartdIpAddr"), my);
        assert_eq!(s(ad, "State"), "Unclaimed");
        assert_eq!(s(ad, "OpSys"), "LINUX");
        assert!(ad.lookup("ClaimId").is_none(), "private attribute leaked");
    }
    let names: Vec<String> = slots.iter().map(|a| s(a, "Name")).collect();
    assert!(
        names.contains(&"slot4@sim0.pool.example".to_string()),
        "{names:?}"
    );
    assert!(
        names.contains(&"slot2@sim1.pool.example".to_string()),
        "{names:?}"
    );

    let subs = query(&cm_addr, "Submitter", "").await.expect("submitters");
    let mut by_name: BTreeMap<String, i64> = BTreeMap::new();
    for a in &subs {
        assert_eq!(s(a, "ScheddIpAddr"), my);
        by_name.insert(s(a, "Name"), a.eval_attr("IdleJobs").as_int().unwrap_or(-1));
    }
    assert_eq!(
        by_name,
        BTreeMap::from([
            ("group_a.user1@pool.example".to_string(), 5),
            ("group_a.user2@pool.example".to_string(), 5)
        ])
    );
    let schedds = query(&cm_addr, "Scheduler", "").await.expect("schedds");
    assert_eq!(schedds.len(), 1);
    assert_eq!(schedds[0].eval_attr("TotalIdleJobs").as_int(), Some(10));

    assert_eq!(sim.terminate(), Some(0), "{}", sim.stderr());
    let left = query(&cm_addr, "Any", "").await.expect("query");
    let ours: Vec<String> = left
        .iter()
        .filter(|a| s(a, "MyAddress") == my)
        .map(|a| s(a, "Name"))
        .collect();
    assert!(ours.is_empty(), "still advertised after SIGTERM: {ours:?}");
}

async fn read_claim_ids(path: &Path) -> BTreeMap<String, String> {
    eventually("claim ids", WAIT, || async {
        let t = std::fs::read_to_string(path)?;
        Ok(Some(serde_json::from_str::<BTreeMap<String, String>>(&t)?))
    })
    .await
    .expect("claim ids file")
}

fn grant(job: &str, sub: &str, slot: &str, addr: &str, claim_id: &str) -> npb::Grant {
    npb::Grant {
        job: job.into(),
        submitter: sub.into(),
        slot: slot.into(),
        startd_addr: format!("<{addr}>"),
        claim_id: claim_id.into(),
        weight: 1.0,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grants_from_a_leader_claim_slots_run_and_release() {
    let cm = start_cm().await;
    let cm_addr = cm.addr(1);
    let dir = tempfile::tempdir().expect("tempdir");
    let ids_file = dir.path().join("ids.json");
    let ids_arg = ids_file.display().to_string();
    let sim = SimProc::start(
        dir.path(),
        &cm_addr,
        &[
            "--slots",
            "4",
            "--jobs",
            "4",
            "--users",
            "alice,bob",
            "--runtime",
            "fixed:8",
            "--dump-claim-ids",
            &ids_arg,
        ],
    );
    let ids = read_claim_ids(&ids_file).await;
    let mut ap = AccessPointClient::new(channel(&sim.addr));
    let jobs = eventually("requests", WAIT, || {
        let mut ap = ap.clone();
        async move {
            Ok(Some(
                ap.get_requests(npb::RequestsRequest {
                    term: 3,
                    cycle: 1,
                    negotiator: "test".into(),
                })
                .await?
                .into_inner()
                .jobs,
            ))
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", sim.stderr()));
    assert_eq!(jobs.len(), 4);
    let first = classad::parse_ad(&jobs[0]).expect("job ad parses");
    assert_eq!(s(&first, "User"), "alice@pool.example");
    assert_eq!(first.eval_attr("JobStatus").as_int(), Some(1));

    let s1 = "slot1@sim0.pool.example";
    let s2 = "slot2@sim0.pool.example";
    let a = &sim.addr;
    let reply = ap
        .deliver_grants(npb::GrantBatch {
            term: 3,
            cycle: 1,
            leader_id: 1,
            grants: vec![
                grant("1.0", "alice@pool.example", s1, a, &ids[s1]),
                grant("2.0", "bob@pool.example", s2, a, &ids[s2]),
                // The same job again: no longer idle.
                grant("1.0", "alice@pool.example", s2, a, &ids[s2]),
                // A forged capability.
                grant(
                    "3.0",
                    "alice@pool.example",
                    "slot3@sim0.pool.example",
                    a,
                    "forged",
                ),
            ],
        })
        .await
        .expect("deliver grants")
        .into_inner();
    let accepted: Vec<bool> = reply.results.iter().map(|r| r.accepted).collect();
    assert_eq!(accepted, [true, true, false, false], "{reply:?}");
    assert!(reply.results[2].error.contains("not idle"), "{reply:?}");
    assert!(reply.results[3].error.contains("bad claim id"), "{reply:?}");

    // A grant from an older term than one acted on is refused by the access point.
    let stale = ap
        .deliver_grants(npb::GrantBatch {
            term: 2,
            cycle: 9,
            leader_id: 2,
            grants: vec![grant(
                "3.0",
                "alice@pool.example",
                "slot3@sim0.pool.example",
                a,
                &ids["slot3@sim0.pool.example"],
            )],
        })
        .await
        .expect("deliver stale grants")
        .into_inner();
    assert!(!stale.results[0].accepted);
    assert!(stale.results[0].error.contains("stale term"), "{stale:?}");

    // The claimed slots show up Claimed, with the job and the term.
    let claimed = eventually("claimed slot ads", WAIT, || async {
        let ads = query(&cm_addr, "Machine", "State == \"Claimed\"").await?;
        anyhow::ensure!(ads.len() == 2, "{} claimed", ads.len());
        Ok(Some(ads))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", sim.stderr()));
    let mut seen: Vec<(String, String, String)> = claimed
        .iter()
        .map(|ad| (s(ad, "Name"), s(ad, "JobId"), s(ad, "RemoteUser")))
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            (
                s1.to_string(),
                "1.0".to_string(),
                "alice@pool.example".to_string()
            ),
            (
                s2.to_string(),
                "2.0".to_string(),
                "bob@pool.example".to_string()
            ),
        ]
    );
    assert!(claimed
        .iter()
        .all(|ad| s(ad, "Activity") == "Busy" && ad.eval_attr("ClaimTerm").as_int() == Some(3)));

    // The jobs run their 8 s and release the slots.
    eventually("slots released", WAIT, || async {
        let ads = query(&cm_addr, "Machine", "State == \"Claimed\"").await?;
        anyhow::ensure!(ads.is_empty(), "{} still claimed", ads.len());
        Ok(Some(()))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", sim.stderr()));
    // The finished jobs left the queue.
    let left = ap
        .get_requests(npb::RequestsRequest::default())
        .await
        .expect("requests")
        .into_inner()
        .jobs;
    assert_eq!(left.len(), 2);
    // The released slots have fresh capabilities: the old grant no longer works.
    let again = ap
        .deliver_grants(npb::GrantBatch {
            term: 3,
            cycle: 2,
            leader_id: 1,
            grants: vec![grant("3.0", "alice@pool.example", s1, a, &ids[s1])],
        })
        .await
        .expect("deliver")
        .into_inner();
    assert!(again.results[0].error.contains("bad claim id"), "{again:?}");

    // The startds' own log: two claims, two releases, no violation.
    let out = Command::new(NODE)
        .args(["check-claims", "--json"])
        .arg(&sim.log)
        .output()
        .expect("check-claims");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["summary"]["claims"], 2, "{v}");
    assert_eq!(v["summary"]["releases"], 2, "{v}");
    assert_eq!(v["summary"]["refusals"]["stale term"], 1, "{v}");
    assert_eq!(v["summary"]["refusals"]["bad claim id"], 2, "{v}");
    assert_eq!(
        v["summary"]["submitters"]["alice@pool.example"]["claims"],
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_startd_service_claims_and_partitionable_slots_carve() {
    use npb::startd_client::StartdClient;
    let cm = start_cm().await;
    let cm_addr = cm.addr(1);
    let dir = tempfile::tempdir().expect("tempdir");
    let ids_file = dir.path().join("ids.json");
    let ids_arg = ids_file.display().to_string();
    let sim = SimProc::start(
        dir.path(),
        &cm_addr,
        &[
            "--slots",
            "4",
            "--partitionable",
            "--jobs",
            "2",
            "--groups",
            "group_a",
            "--users",
            "alice",
            "--runtime",
            "fixed:600",
            "--dump-claim-ids",
            &ids_arg,
        ],
    );
    let ids = read_claim_ids(&ids_file).await;
    let p = "slot1@sim0.pool.example";
    assert_eq!(ids.len(), 1, "{ids:?}");
    let job_ad = "MyType = \"Job\"\nClusterId = 50\nProcId = 0\nOwner = \"zed\"\n\
                  User = \"zed@pool.example\"\nRequestCpus = 1\nRequestMemory = 1024\n\
                  RequestDisk = 100\n";
    let req = |term: u64, claim_id: &str| npb::ClaimRequest {
        slot: p.into(),
        claim_id: claim_id.into(),
        term,
        cycle: 1,
        job: "50.0".into(),
        submitter: "zed@pool.example".into(),
        job_ad: job_ad.into(),
        ..Default::default()
    };
    let mut sd = StartdClient::new(channel(&sim.addr));
    let bad = sd
        .request_claim(req(5, "forged"))
        .await
        .expect("claim")
        .into_inner();
    assert!(!bad.ok && bad.error.contains("bad claim id"), "{bad:?}");
    let ok = sd
        .request_claim(req(5, &ids[p]))
        .await
        .expect("claim")
        .into_inner();
    assert!(ok.ok, "{ok:?}");
    assert_eq!(ok.claimed_slot, "slot1_1@sim0.pool.example");
    let stale = sd
        .request_claim(req(4, &ids[p]))
        .await
        .expect("claim")
        .into_inner();
    assert!(stale.error.contains("stale term 4 < 5"), "{stale:?}");

    // A grant through the access point carves a second dynamic slot from the same machine.
    let mut ap = AccessPointClient::new(channel(&sim.addr));
    let r = ap
        .deliver_grants(npb::GrantBatch {
            term: 5,
            cycle: 2,
            leader_id: 1,
            grants: vec![grant(
                "1.0",
                "group_a.alice@pool.example",
                p,
                &sim.addr,
                &ids[p],
            )],
        })
        .await
        .expect("grants")
        .into_inner();
    assert!(r.results[0].accepted, "{r:?}");
    let ads = eventually("dynamic slots", WAIT, || async {
        let ads = query(&cm_addr, "Machine", "DynamicSlot == true").await?;
        anyhow::ensure!(ads.len() == 2, "{} dynamic slots", ads.len());
        Ok(Some(ads))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", sim.stderr()));
    let grouped = ads
        .iter()
        .find(|a| s(a, "JobId") == "1.0")
        .expect("the granted job's slot");
    assert_eq!(s(grouped, "AccountingGroup"), "group_a.alice@pool.example");
    assert_eq!(s(grouped, "State"), "Claimed");
    let pslot = eventually("partitionable slot shrinks", WAIT, || async {
        let ads = query(&cm_addr, "Machine", "PartitionableSlot == true").await?;
        anyhow::ensure!(ads.len() == 1);
        anyhow::ensure!(ads[0].eval_attr("Cpus").as_int() == Some(2));
        Ok(Some(ads))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", sim.stderr()));
    assert_eq!(s(&pslot[0], "State"), "Unclaimed");

    // Releasing through the service with the dynamic slot's own capability removes it.
    let rel = sd
        .release_claim(npb::ReleaseRequest {
            slot: ok.claimed_slot.clone(),
            claim_id: ok.claim_id.clone(),
        })
        .await
        .expect("release")
        .into_inner();
    assert!(rel.ok, "{rel:?}");
    eventually("dynamic slot invalidated", WAIT, || async {
        let ads = query(&cm_addr, "Machine", "DynamicSlot == true").await?;
        anyhow::ensure!(ads.len() == 1, "{} dynamic slots", ads.len());
        Ok(Some(()))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", sim.stderr()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ad_stream_moves_to_the_next_cm_when_its_cm_dies() {
    // Two independent CMs (no relay between them), and a dead address first in the list.
    let mut first = start_cm().await;
    let second = start_cm().await;
    let dead = format!("127.0.0.1:{}", free_port());
    let cms = format!("{dead},{},{}", first.addr(1), second.addr(1));
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = SimProc::start(dir.path(), &cms, &["--slots", "5", "--jobs", "3"]);
    let count = |addr: String| async move {
        let ads = query(&addr, "Machine", "").await?;
        anyhow::ensure!(ads.len() == 5, "{} slot ads at {addr}", ads.len());
        Ok(Some(()))
    };
    eventually("ads at the first live CM", WAIT, || count(first.addr(1)))
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", sim.stderr()));
    assert!(query(&second.addr(1), "Machine", "")
        .await
        .expect("query")
        .is_empty());
    let _ = first.child.kill();
    let _ = first.child.wait();
    // The whole pool reaches the next CM of the list.
    eventually("ads at the next CM", WAIT, || count(second.addr(1)))
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", sim.stderr()));
    let subs = query(&second.addr(1), "Submitter", "")
        .await
        .expect("query");
    assert_eq!(subs.len(), 1);
    assert_eq!(subs[0].eval_attr("IdleJobs").as_int(), Some(3));
}

//! `aerie-node simulate` against a real single-node CM (`aerie-cm serve`): its slot,
//! submitter and scheduler ads reach the collector (never the private ClaimId) and go away on
//! SIGTERM; and, with the test acting as the leader, grants are checked, slots are claimed
//! through the startd rules, show up Claimed in the collector, run and are released, and the
//! claims log the startds wrote passes `check-claims`.
use aerie_proto::negotiation as npb;
use aerie_security::grant::{GrantSigner, GrantText};
use aerie_tests::sim::{Sim, SimOptions};
use aerie_tests::{
    collector_ads, daemon_bin, eventually, free_port, wait_leader, write_retry, Cluster,
};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

const CM: &str = env!("CARGO_BIN_EXE_aerie-cm-node");
const NODE: &str = env!("CARGO_BIN_EXE_aerie-node-sim");
const WAIT: Duration = Duration::from_secs(20);

/// Starts the simulator against `cms`, listening where the test knows, refreshing its ads
/// every 2 s, logging at debug level and, with `claim_ids`, keeping its slots' claim ids
/// where [`Sim::claim_ids`] reads them.
fn start_sim(dir: &Path, cms: &[String], extra: &[&str], claim_ids: bool) -> Sim {
    let mut args = vec!["--update-interval", "2", "--status-interval", "1"];
    args.extend_from_slice(extra);
    let opts = SimOptions {
        listen: true,
        claim_ids,
        env: &[("AERIE_LOG", "info,aerie_node=debug")],
    };
    Sim::start_with(NODE, dir, cms, &args, opts).expect("start aerie-node simulate")
}

fn s(ad: &classad::ClassAd, attr: &str) -> String {
    ad.eval_attr(attr).as_str().unwrap_or_default().to_string()
}

/// One CM (a single-node cluster) whose own negotiator is paused.
async fn start_cm() -> Cluster {
    let cm = Cluster::start(daemon_bin(CM), 1, &[]).expect("start aerie-cm");
    if let Err(e) = wait_leader(&cm.running(), WAIT).await {
        panic!("CM leader: {e}\n{}", cm.log(1));
    }
    // These tests play the leader themselves: the CM's own negotiator must not send grants
    // of its own (they would show up as extra refusals in the claims log).
    let pause = aerie_core::state::Command::SetNegotiatorPaused { paused: true };
    if let Err(e) = write_retry(&[cm.addr(1)], &pause, WAIT).await {
        panic!("pause the CM's negotiator: {e}\n{}", cm.log(1));
    }
    cm
}

/// A simulator advertising to a single-node CM whose own negotiator is paused; dropping it
/// stops both.
struct Pool {
    sim: Sim,
    cm_addr: String,
    _dir: tempfile::TempDir,
    _cm: Cluster,
}

/// Starts a [`Pool`]: `extra` and `claim_ids` as for [`start_sim`].
async fn start_pool(extra: &[&str], claim_ids: bool) -> Pool {
    let cm = start_cm().await;
    let cm_addr = cm.addr(1);
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = start_sim(dir.path(), std::slice::from_ref(&cm_addr), extra, claim_ids);
    Pool {
        sim,
        cm_addr,
        _dir: dir,
        _cm: cm,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_is_advertised_and_invalidated_on_sigterm() {
    let mut pool = start_pool(
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
        false,
    )
    .await;
    let (sim, cm_addr) = (&mut pool.sim, pool.cm_addr.as_str());
    let slots = eventually("6 slot ads", WAIT, || async {
        let ads = collector_ads(cm_addr, "Machine", "", &[]).await?;
        anyhow::ensure!(ads.len() == 6, "{} slot ads", ads.len());
        Ok(Some(ads))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", sim.log()));
    let my = format!("<{}>", sim.grpc_addr());
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

    let subs = collector_ads(cm_addr, "Submitter", "", &[])
        .await
        .expect("submitters");
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
    let schedds = collector_ads(cm_addr, "Scheduler", "", &[])
        .await
        .expect("schedds");
    assert_eq!(schedds.len(), 1);
    assert_eq!(schedds[0].eval_attr("TotalIdleJobs").as_int(), Some(10));

    assert_eq!(sim.terminate(), Some(0), "{}", sim.log());
    let left = collector_ads(cm_addr, "Any", "", &[]).await.expect("query");
    let ours: Vec<String> = left
        .iter()
        .filter(|a| s(a, "MyAddress") == my)
        .map(|a| s(a, "Name"))
        .collect();
    assert!(ours.is_empty(), "still advertised after SIGTERM: {ours:?}");
}

/// The test plays the leader of `batch.term`: signs the batch's grants as the leader's CM key
/// would (the simulator runs with the pool's credentials, so it takes signed grants only).
fn signed(mut batch: npb::GrantBatch) -> npb::GrantBatch {
    let (cert, signature, each) = sign(batch.term, &batch.grants);
    batch.leader_cert = cert;
    batch.signature = signature;
    for (g, s) in batch.grants.iter_mut().zip(each) {
        g.signed = Some(s);
    }
    batch
}

/// Signs `grants` for `term` with the test pool's CM key: the certificate, the one signature
/// and each grant's signed text and proof (certificate and signature left out, as a
/// `GrantBatch` carries them once).
fn sign(term: u64, grants: &[npb::Grant]) -> (Vec<u8>, Vec<u8>, Vec<npb::SignedGrant>) {
    let dir = aerie_tests::test_pool();
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).expect("test pool credential");
    let signer = GrantSigner::from_pem(&read("cm1.crt"), &read("cm1.key")).expect("CM signer");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let texts: Vec<GrantText> = grants
        .iter()
        .map(|g| GrantText {
            slot: &g.slot,
            claim_id: &g.claim_id,
            term,
            access_point: &g.startd_addr,
            submitter: &g.submitter,
            issued: now,
        })
        .collect();
    let cycle = signer.sign_cycle(&texts).expect("sign the cycle");
    let each = cycle
        .grants
        .into_iter()
        .map(|(payload, proof)| npb::SignedGrant {
            payload,
            proof,
            ..Default::default()
        })
        .collect();
    (signer.cert_der().to_vec(), cycle.signature, each)
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
    let pool = start_pool(
        &[
            "--slots",
            "4",
            "--jobs",
            "4",
            "--users",
            "alice,bob",
            "--runtime",
            "fixed:8",
        ],
        true,
    )
    .await;
    let (sim, cm_addr) = (&pool.sim, pool.cm_addr.as_str());
    let ids = sim.claim_ids(WAIT).await.expect("claim ids file");
    let mut ap = sim.access_point();
    let jobs = eventually("requests", WAIT, || {
        let mut ap = ap.clone();
        async move {
            Ok(Some(
                ap.get_requests(npb::RequestsRequest {
                    term: 3,
                    cycle: 1,
                    negotiator: "test".into(),
                    ..Default::default()
                })
                .await?
                .into_inner()
                .jobs,
            ))
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", sim.log()));
    assert_eq!(jobs.len(), 4);
    let first = classad::parse_ad(&jobs[0]).expect("job ad parses");
    assert_eq!(s(&first, "User"), "alice@pool.example");
    assert_eq!(first.eval_attr("JobStatus").as_int(), Some(1));

    let s1 = "slot1@sim0.pool.example";
    let s2 = "slot2@sim0.pool.example";
    let a = sim.grpc_addr();
    let reply = ap
        .deliver_grants(signed(npb::GrantBatch {
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
            ..Default::default()
        }))
        .await
        .expect("deliver grants")
        .into_inner();
    // The access point takes every grant for an idle job at once and claims afterwards
    // (the leader's deadline cannot cut a claim in half); the startd refuses the forged
    // capability and the job is idle again.
    let accepted: Vec<bool> = reply.results.iter().map(|r| r.accepted).collect();
    assert_eq!(accepted, [true, true, false, true], "{reply:?}");
    assert!(reply.results[2].error.contains("not idle"), "{reply:?}");
    eventually(
        "the forged claim refused and job 3.0 idle again",
        WAIT,
        || {
            let mut ap = ap.clone();
            async move {
                let idle = ap
                    .get_requests(npb::RequestsRequest {
                        term: 3,
                        cycle: 2,
                        negotiator: "test".into(),
                        ..Default::default()
                    })
                    .await?
                    .into_inner()
                    .jobs;
                let back = idle.iter().any(|j| {
                    classad::parse_ad(j)
                        .is_ok_and(|ad| ad.eval_attr("ClusterId").as_int() == Some(3))
                });
                Ok(back.then_some(()))
            }
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", sim.log()));
    assert!(sim.log().contains("bad claim id"), "{}", sim.log());

    // A grant from an older term than one acted on is refused by the access point.
    let stale = ap
        .deliver_grants(signed(npb::GrantBatch {
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
            ..Default::default()
        }))
        .await
        .expect("deliver stale grants")
        .into_inner();
    assert!(!stale.results[0].accepted);
    assert!(stale.results[0].error.contains("stale term"), "{stale:?}");

    // The claimed slots show up Claimed, with the job and the term.
    let claimed = eventually("claimed slot ads", WAIT, || async {
        let ads = collector_ads(cm_addr, "Machine", "State == \"Claimed\"", &[]).await?;
        anyhow::ensure!(ads.len() == 2, "{} claimed", ads.len());
        Ok(Some(ads))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", sim.log()));
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
        let ads = collector_ads(cm_addr, "Machine", "State == \"Claimed\"", &[]).await?;
        anyhow::ensure!(ads.is_empty(), "{} still claimed", ads.len());
        Ok(Some(()))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", sim.log()));
    // The finished jobs left the queue.
    let left = ap
        .get_requests(npb::RequestsRequest::default())
        .await
        .expect("requests")
        .into_inner()
        .jobs;
    assert_eq!(left.len(), 2);
    // The released slots have fresh capabilities: the old grant no longer works.
    let refused_before = sim.log().matches("bad claim id").count();
    let again = ap
        .deliver_grants(signed(npb::GrantBatch {
            term: 3,
            cycle: 2,
            leader_id: 1,
            grants: vec![grant("3.0", "alice@pool.example", s1, a, &ids[s1])],
            ..Default::default()
        }))
        .await
        .expect("deliver")
        .into_inner();
    assert!(again.results[0].accepted, "{again:?}");
    eventually("the old capability refused by the startd", WAIT, || async {
        Ok((sim.log().matches("bad claim id").count() > refused_before).then_some(()))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", sim.log()));

    // The startds' own log: two claims, two releases, no violation.
    let v = sim.check_claims().expect("check-claims");
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
    let pool = start_pool(
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
        ],
        true,
    )
    .await;
    let (sim, cm_addr) = (&pool.sim, pool.cm_addr.as_str());
    let ids = sim.claim_ids(WAIT).await.expect("claim ids file");
    let p = "slot1@sim0.pool.example";
    assert_eq!(ids.len(), 1, "{ids:?}");
    let job_ad = "MyType = \"Job\"\nClusterId = 50\nProcId = 0\nOwner = \"zed\"\n\
                  User = \"zed@pool.example\"\nRequestCpus = 1\nRequestMemory = 1024\n\
                  RequestDisk = 100\n";
    // Each claim carries the leader's signature of its grant, whole (as an access point
    // sends it).
    let req = |term: u64, claim_id: &str| {
        let g = npb::Grant {
            slot: p.into(),
            claim_id: claim_id.into(),
            submitter: "zed@pool.example".into(),
            startd_addr: format!("<{}>", sim.grpc_addr()),
            ..Default::default()
        };
        let (cert, signature, mut each) = sign(term, std::slice::from_ref(&g));
        let signed = each.pop().map(|s| npb::SignedGrant {
            signature,
            leader_cert: cert,
            ..s
        });
        npb::ClaimRequest {
            slot: p.into(),
            claim_id: claim_id.into(),
            term,
            cycle: 1,
            job: "50.0".into(),
            submitter: "zed@pool.example".into(),
            job_ad: job_ad.into(),
            signed,
            ..Default::default()
        }
    };
    let mut sd = sim.startd();
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
    let mut ap = sim.access_point();
    let r = ap
        .deliver_grants(signed(npb::GrantBatch {
            term: 5,
            cycle: 2,
            leader_id: 1,
            grants: vec![grant(
                "1.0",
                "group_a.alice@pool.example",
                p,
                sim.grpc_addr(),
                &ids[p],
            )],
            ..Default::default()
        }))
        .await
        .expect("grants")
        .into_inner();
    assert!(r.results[0].accepted, "{r:?}");
    let ads = eventually("dynamic slots", WAIT, || async {
        let ads = collector_ads(cm_addr, "Machine", "DynamicSlot == true", &[]).await?;
        anyhow::ensure!(ads.len() == 2, "{} dynamic slots", ads.len());
        Ok(Some(ads))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", sim.log()));
    let grouped = ads
        .iter()
        .find(|a| s(a, "JobId") == "1.0")
        .expect("the granted job's slot");
    assert_eq!(s(grouped, "AccountingGroup"), "group_a.alice@pool.example");
    assert_eq!(s(grouped, "State"), "Claimed");
    let pslot = eventually("partitionable slot shrinks", WAIT, || async {
        let ads = collector_ads(cm_addr, "Machine", "PartitionableSlot == true", &[]).await?;
        anyhow::ensure!(ads.len() == 1);
        anyhow::ensure!(ads[0].eval_attr("Cpus").as_int() == Some(2));
        Ok(Some(ads))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", sim.log()));
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
        let ads = collector_ads(cm_addr, "Machine", "DynamicSlot == true", &[]).await?;
        anyhow::ensure!(ads.len() == 1, "{} dynamic slots", ads.len());
        Ok(Some(()))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", sim.log()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ad_stream_moves_to_the_next_cm_when_its_cm_dies() {
    // Two independent CMs (no relay between them), and a dead address first in the list.
    let mut first = start_cm().await;
    let second = start_cm().await;
    let dead = format!("127.0.0.1:{}", free_port());
    let cms = [dead, first.addr(1), second.addr(1)];
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = start_sim(dir.path(), &cms, &["--slots", "5", "--jobs", "3"], false);
    let count = |addr: String| async move {
        let ads = collector_ads(&addr, "Machine", "", &[]).await?;
        anyhow::ensure!(ads.len() == 5, "{} slot ads at {addr}", ads.len());
        Ok(Some(()))
    };
    eventually("ads at the first live CM", WAIT, || count(first.addr(1)))
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", sim.log()));
    assert!(collector_ads(&second.addr(1), "Machine", "", &[])
        .await
        .expect("query")
        .is_empty());
    first.kill(1);
    // The whole pool reaches the next CM of the list.
    eventually("ads at the next CM", WAIT, || count(second.addr(1)))
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", sim.log()));
    let subs = collector_ads(&second.addr(1), "Submitter", "", &[])
        .await
        .expect("query");
    assert_eq!(subs.len(), 1);
    assert_eq!(subs[0].eval_attr("IdleJobs").as_int(), Some(3));
}

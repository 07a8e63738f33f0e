//! Three real CMs relay the ads each accepts to the others: ads advertised to CM 1 are
//! answered by CMs 2 and 3, invalidations follow, a CM that was down converges through the
//! digest exchange after its restart, a stream over its rate limit gets reasons and stays
//! open, and absent and offline ads (committed through Raft) survive a full-cluster restart
//! and are replaced by the machine's next live update.
use aerie_core::admin::AdsQuery;
use aerie_proto::collector::{self as pb, collector_client::CollectorClient};
use aerie_tests::*;
use std::time::Duration;
use tonic::transport::Channel;

const BIN: &str = env!("CARGO_BIN_EXE_aerie-cm-node");

const CONFIG: &str = "\
ABSENT_REQUIREMENTS = Absentable =?= true
ABSENT_EXPIRE_ADS_AFTER = 0
AERIE_COLLECTOR_RELAY_INTERVAL = 50ms
AERIE_COLLECTOR_DIGEST_INTERVAL = 1s
AERIE_COLLECTOR_MAX_UPDATE_RATE = 100
";

fn client(addr: &str) -> CollectorClient<Channel> {
    collector_client(addr)
}

fn slot(name: &str, addr: &str, extra: &str) -> pb::Ad {
    pb::Ad {
        text: format!(
            "MyType = \"Machine\"\nName = \"{name}\"\nMachine = \"{}\"\n\
             MyAddress = \"<{addr}:9618?sock=startd>\"\nState = \"Unclaimed\"\n\
             Activity = \"Idle\"\nMemory = 1024\nClassAdLifetime = 3600\n{extra}",
            name.split('@').nth(1).unwrap_or("host")
        ),
    }
}

async fn names(addr: &str, absent: bool) -> anyhow::Result<Vec<String>> {
    let r = client(addr)
        .query(pb::QueryRequest {
            ad_type: "Machine".into(),
            projection: vec!["Name".into(), "MyAddress".into()],
            absent,
            ..Default::default()
        })
        .await?
        .into_inner();
    Ok(r.ads)
}

/// Advertises `ads` to the CM at `addr`, retrying while it is not up yet (a leader being
/// elected does not mean every CM already listens, on a loaded machine).
async fn advertise(addr: &str, ads: Vec<pb::Ad>) -> pb::AdvertiseSummary {
    eventually("advertise", Duration::from_secs(20), || {
        let ads = ads.clone();
        async move {
            match client(addr).advertise(pb::AdBatch { ads }).await {
                Ok(r) => Ok(Some(r.into_inner())),
                Err(s) if s.code() == tonic::Code::Unavailable => Ok(None),
                Err(s) => Err(anyhow::anyhow!("advertise: {s}")),
            }
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Waits until `addr` holds exactly `n` live slot ads.
async fn wait_count(addr: &str, n: usize, what: &str) {
    eventually(what, Duration::from_secs(20), || async move {
        let got = names(addr, false).await?;
        Ok((got.len() == n).then_some(()))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ads_reach_every_cm_and_a_restarted_cm_converges_by_digest() {
    let mut c = Cluster::start_with_config(daemon_bin(BIN), 3, &[], CONFIG).expect("start");
    wait_leader(&c.running(), Duration::from_secs(20))
        .await
        .expect("leader");
    let (a1, a2, a3) = (c.addr(1), c.addr(2), c.addr(3));

    // 40 slots on distinct hosts, plus two machines that both call their slot
    // slot1@localhost: HTCondor keys ads by name and address, so both are kept.
    let mut ads: Vec<pb::Ad> = (0..40)
        .map(|i| slot(&format!("slot1@n{i}"), &format!("10.0.0.{i}"), ""))
        .collect();
    ads.push(slot("slot1@localhost", "10.0.1.1", ""));
    ads.push(slot("slot1@localhost", "10.0.1.2", ""));
    let s = advertise(&a1, ads).await;
    assert_eq!((s.accepted, s.rejected), (42, 0), "{s:?}");
    wait_count(&a2, 42, "CM 2 holds the 42 slots advertised to CM 1").await;
    wait_count(&a3, 42, "CM 3 holds the 42 slots advertised to CM 1").await;

    // An invalidation on CM 2 removes the ad everywhere.
    let r = client(&a2)
        .invalidate(pb::InvalidateRequest {
            ad_type: "Machine".into(),
            name: "slot1@n0".into(),
            ..Default::default()
        })
        .await
        .expect("invalidate")
        .into_inner();
    assert!(r.found);
    wait_count(&a1, 41, "CM 1 saw the invalidation made on CM 2").await;
    wait_count(&a3, 41, "CM 3 saw the invalidation made on CM 2").await;

    // CM 3 dies; updates go on without it; it restarts with an empty table and catches up.
    c.kill(3);
    let more: Vec<pb::Ad> = (100..110)
        .map(|i| slot(&format!("slot1@n{i}"), &format!("10.0.2.{i}"), ""))
        .collect();
    advertise(&a1, more).await;
    advertise(&a2, vec![slot("slot1@n5", "10.0.0.5", "Memory = 4096\n")]).await;
    wait_count(&a2, 51, "CM 2 got the updates made while CM 3 was down").await;
    c.restart(3).expect("restart CM 3");
    wait_count(&a3, 51, "restarted CM 3 converged").await;
    let big = client(&a3)
        .query(pb::QueryRequest {
            ad_type: "Machine".into(),
            constraint: "Memory == 4096".into(),
            projection: vec!["Name".into()],
            ..Default::default()
        })
        .await
        .expect("query")
        .into_inner()
        .ads;
    assert_eq!(big, vec!["Name = \"slot1@n5\"\n".to_string()]);

    // Every CM answers the same query with the same pool.
    let mut views = Vec::new();
    for a in [&a1, &a2, &a3] {
        let mut v = names(a, false).await.expect("query");
        v.sort();
        views.push(v);
    }
    assert_eq!(views[0], views[1]);
    assert_eq!(views[0], views[2]);

    // A stream over AERIE_COLLECTOR_MAX_UPDATE_RATE (100/s) gets reasons and stays open.
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let mut out = client(&a1)
        .advertise_stream(tonic::codegen::tokio_stream::wrappers::ReceiverStream::new(
            rx,
        ))
        .await
        .expect("stream")
        .into_inner();
    let burst: Vec<pb::Ad> = (0..500)
        .map(|i| slot(&format!("slot2@n{i}"), "10.0.3.1", ""))
        .collect();
    tx.send(pb::AdBatch { ads: burst }).await.expect("send");
    let s = out.message().await.expect("summary").expect("one summary");
    // About 400 are refused; only "some" is asserted, as a slow machine refills the bucket.
    assert!(s.rejected > 0 && s.accepted > 0, "{s:?}");
    let refused = s.results.iter().find(|r| !r.ok).expect("a refused ad");
    assert!(
        refused.error.contains("AERIE_COLLECTOR_MAX_UPDATE_RATE"),
        "{}",
        refused.error
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    tx.send(pb::AdBatch {
        ads: vec![slot("slot3@n1", "10.0.3.2", "")],
    })
    .await
    .expect("send");
    let s = out
        .message()
        .await
        .expect("summary")
        .expect("stream still open");
    assert_eq!(s.accepted, 1, "{s:?}");
}

/// The replicated absent/offline ads (admin query `ads`): bucket -> record names.
async fn replicated(addr: &str) -> anyhow::Result<Vec<(String, String)>> {
    let v = query(addr, AdsQuery, true).await?;
    Ok(v.iter()
        .flat_map(|(bucket, recs)| recs.keys().map(move |n| (bucket.clone(), n.clone())))
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn absent_and_offline_ads_survive_a_full_cluster_restart() {
    let mut c = Cluster::start_with_config(daemon_bin(BIN), 3, &[], CONFIG).expect("start");
    wait_leader(&c.running(), Duration::from_secs(20))
        .await
        .expect("leader");
    let (a1, a2, a3) = (c.addr(1), c.addr(2), c.addr(3));

    // A slot that ABSENT_REQUIREMENTS keeps, with a 2 s lifetime, sent to CM 2; an
    // offline ad sent to CM 3.
    let gone = slot(
        "slot1@gone",
        "10.9.0.1",
        "Absentable = true\nClassAdLifetime = 2\n",
    );
    advertise(&a2, vec![gone]).await;
    let off = slot("slot1@off", "10.9.0.2", "Offline = true\n");
    advertise(&a3, vec![off]).await;
    let want = vec![
        ("Machine".to_string(), "slot1@gone 10.9.0.1".to_string()),
        ("Offline".to_string(), "slot1@off 10.9.0.2".to_string()),
    ];
    let w = want.clone();
    eventually(
        "the leader committed the absent and offline ads",
        Duration::from_secs(20),
        || {
            let (a, w) = (a1.clone(), w.clone());
            async move {
                let mut r = replicated(&a).await?;
                r.sort();
                Ok((r == w).then_some(()))
            }
        },
    )
    .await
    .unwrap_or_else(|e| {
        let logs: Vec<String> = c
            .ids()
            .into_iter()
            .map(|id| format!("--- node {id}\n{}", c.log(id)))
            .collect();
        panic!("{e}\n{}", logs.join("\n"))
    });

    // Hidden from plain queries on every CM, shown by -absent.
    for a in [&a1, &a2, &a3] {
        let a = a.clone();
        // A CM that received the slot's last live update after the leader committed it as
        // absent shows it live until its own sweep expires it (2 s lifetime).
        eventually(
            "every CM shows both with -absent and neither without",
            Duration::from_secs(20),
            || {
                let a = a.clone();
                async move {
                    let shown = names(&a, true).await?.len() == 2;
                    Ok((shown && names(&a, false).await?.is_empty()).then_some(()))
                }
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    }

    // Stop every CM, start them again: the ads come back from the Raft log.
    for id in [1, 2, 3] {
        c.stop(id);
    }
    for id in [1, 2, 3] {
        c.restart(id).expect("restart");
    }
    wait_leader(&c.running(), Duration::from_secs(30))
        .await
        .expect("leader after restart");
    for a in [&a1, &a2, &a3] {
        let a = a.clone();
        eventually(
            "the absent and offline ads are back after a full restart",
            Duration::from_secs(20),
            || {
                let a = a.clone();
                async move {
                    let got = names(&a, true).await?;
                    let both = got.iter().any(|t| t.contains("slot1@gone"))
                        && got.iter().any(|t| t.contains("slot1@off"));
                    Ok(both.then_some(()))
                }
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    }

    // The machine comes back (through CM 3): its live ad replaces the absent one.
    advertise(&a3, vec![slot("slot1@gone", "10.9.0.1", "")]).await;
    let w = vec![want[1].clone()];
    eventually(
        "the leader removed the absent ad",
        Duration::from_secs(20),
        || {
            let (a, w) = (a2.clone(), w.clone());
            async move { Ok((replicated(&a).await? == w).then_some(())) }
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    wait_count(&a1, 1, "CM 1 shows the machine live again").await;
}

/// A restarted CM compares its (empty) table with its peers' at once, not one digest
/// interval later (an hour here): until it has, a leader would see a fraction of the pool
/// and charge usage for it alone (the leader waits for that comparison, `AdTable::peer_synced`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_cm_pulls_its_peers_ads_at_once() {
    let config = CONFIG.replace(
        "AERIE_COLLECTOR_DIGEST_INTERVAL = 1s",
        "AERIE_COLLECTOR_DIGEST_INTERVAL = 3600s",
    );
    let mut c = Cluster::start_with_config(daemon_bin(BIN), 3, &[], &config).expect("start");
    wait_leader(&c.running(), Duration::from_secs(20))
        .await
        .expect("leader");
    let (a1, a3) = (c.addr(1), c.addr(3));
    let ads: Vec<pb::Ad> = (0..20)
        .map(|i| slot(&format!("slot1@n{i}"), &format!("10.0.4.{i}"), ""))
        .collect();
    advertise(&a1, ads).await;
    wait_count(&a3, 20, "CM 3 holds the slots relayed from CM 1").await;
    c.kill(3);
    c.restart(3).expect("restart CM 3");
    // Nothing is advertised again: only a digest exchange can refill CM 3's table.
    wait_count(&a3, 20, "restarted CM 3 pulled the slots from a peer").await;
}

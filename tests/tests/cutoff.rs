//! A CM cut off from the majority lets its nodes go (issue 13.11): nodes stream their ads to
//! one CM and move only when that stream fails, so a CM on the minority side of a partition
//! that kept its streams open would keep its nodes' ads from the majority's leader, which
//! would then take those live slots for absent. A CM out of touch with a leader holding a
//! quorum for `AERIE_COLLECTOR_CUTOFF_TIMEOUT` ends its ad streams and refuses new ones.
//!
//! Three real CMs and a simulated node. The partition is made by stopping (SIGSTOP) the two
//! followers: the leader keeps running, its peers hold their connections and answer nothing,
//! as across a partition.
use aerie_tests::sim::Sim;
use aerie_tests::*;
use std::time::Duration;

const CM: &str = env!("CARGO_BIN_EXE_aerie-cm-node");
const NODE: &str = env!("CARGO_BIN_EXE_aerie-node-sim");
const CUT_OFF_BY_CM: &str = "closing the ad streams";
const CUT_OFF_AT_NODE: &str = "out of touch with a leader holding a quorum";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cm_cut_off_from_the_majority_closes_its_ad_streams_and_takes_them_again_after() {
    let c = Cluster::start(
        daemon_bin(CM),
        3,
        &[("AERIE_COLLECTOR_CUTOFF_TIMEOUT", "3")],
    )
    .expect("start cluster");
    let leader = wait_leader(&c.running(), Duration::from_secs(30))
        .await
        .expect("leader");
    let followers: Vec<u64> = c.ids().into_iter().filter(|i| *i != leader).collect();
    // The node streams to the leader first (the CM that will be cut off).
    let mut order = vec![c.addr(leader)];
    order.extend(followers.iter().map(|f| c.addr(*f)));
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = Sim::start(NODE, dir.path(), &order, &["--slots", "4", "--jobs", "0"])
        .expect("start the simulated node");
    eventually("the node's slots at the leader", Duration::from_secs(30), || {
        let a = c.addr(leader);
        async move { Ok((collector_ads(&a, "Machine", "", &[]).await?.len() == 4).then_some(())) }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n--- node\n{}", sim.log()));

    // A healthy cluster keeps every CM in touch, leader and followers alike, for longer than
    // the bound: no stream is closed.
    tokio::time::sleep(Duration::from_secs(7)).await;
    for id in c.ids() {
        assert!(
            !c.log(id).contains(CUT_OFF_BY_CM),
            "CM {id} of a healthy cluster took itself for cut off:\n{}",
            c.log(id)
        );
    }
    assert!(!sim.log().contains(CUT_OFF_AT_NODE), "{}", sim.log());

    // The partition: the leader is alone. It still believes it leads, but no quorum
    // acknowledges it; within the bound (and a probe) it ends the node's stream.
    for f in &followers {
        c.pause(*f);
    }
    let ended = eventually(
        "the leader alone ends the node's stream",
        Duration::from_secs(30),
        || {
            let log = sim.log();
            async move { Ok(log.contains(CUT_OFF_AT_NODE).then_some(())) }
        },
    )
    .await;
    for f in &followers {
        c.resume(*f);
    }
    ended.unwrap_or_else(|e| {
        panic!(
            "{e}\n--- node\n{}\n--- CM {leader}\n{}",
            sim.log(),
            c.log(leader)
        )
    });
    assert!(c.log(leader).contains(CUT_OFF_BY_CM), "{}", c.log(leader));

    // The partition heals: the CM is in touch again and takes streams again.
    eventually("the CM in touch again", Duration::from_secs(30), || {
        let log = c.log(leader);
        async move { Ok(log.contains("in touch with a leader again").then_some(())) }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n--- CM {leader}\n{}", c.log(leader)));
}

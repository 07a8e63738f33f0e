//! A whole central manager with a simulated pool, all real processes: three `aerie-cm`
//! nodes and one `aerie-node simulate` that plays the startds and the access point, streaming
//! its ads to the CMs and claiming the slots the leader grants.
//!
//! - three submitters with priority factors 1000, 2000 and 4000 and unlimited demand hold
//!   slots about 4:2:1;
//! - static group quotas hold (no surplus);
//! - `kill -9` of the leader mid-run: a new leader completes a cycle, no committed priority
//!   factor is lost, and the startds' own claims log shows no slot claimed twice.
//!
//! Every wait has a generous timeout; speed belongs to the benchmarks.
use aerie_core::accountant::{AccountantCommand, UserprioRow};
use aerie_core::admin::{NegotiatorQuery, UserprioQuery};
use aerie_core::state::Command;
use aerie_tests::sim::{claimed_by, Sim};
use aerie_tests::*;
use std::collections::BTreeMap;
use std::time::Duration;

const CM: &str = env!("CARGO_BIN_EXE_aerie-cm-node");
const NODE: &str = env!("CARGO_BIN_EXE_aerie-node-sim");

/// Fast cycles for tests: HTCondor's 60 s / 20 s would make every test minutes long.
const FAST: &[(&str, &str)] = &[
    ("AERIE_NEGOTIATOR_INTERVAL", "1"),
    ("AERIE_NEGOTIATOR_CYCLE_DELAY", "1"),
];

fn cms(c: &Cluster) -> Vec<String> {
    c.running().into_iter().map(|(_, a)| a).collect()
}

async fn set_factor(c: &Cluster, user: &str, factor: f64) {
    let cmd = Command::Accountant(AccountantCommand::SetFactor {
        name: user.into(),
        value: factor,
    });
    write_retry(&cms(c), &cmd, Duration::from_secs(20))
        .await
        .unwrap_or_else(|e| panic!("set factor of {user}: {e}"));
}

/// Claimed slots per `attr`, averaged over `samples` looks half a second apart.
async fn average_claimed(addr: &str, attr: &str, samples: usize) -> BTreeMap<String, f64> {
    let mut sum: BTreeMap<String, f64> = BTreeMap::new();
    for _ in 0..samples {
        if let Ok(by) = claimed_by(addr, attr).await {
            for (k, v) in by {
                *sum.entry(k).or_insert(0.0) += v as f64 / samples as f64;
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    sum
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_submitters_with_factors_1000_2000_4000_hold_slots_4_2_1() {
    let c = Cluster::start(daemon_bin(CM), 3, FAST).expect("start cluster");
    wait_leader(&c.running(), Duration::from_secs(30))
        .await
        .expect("leader");
    for (u, f) in [("alice", 1000.0), ("bob", 2000.0), ("carol", 4000.0)] {
        set_factor(&c, &format!("{u}@pool.example"), f).await;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    // 70 slots: a 4:2:1 split is 40:20:10. Jobs run 2-4 s and are replaced at once, so the
    // negotiator keeps refilling freed slots against each submitter's pie slice.
    let sim = Sim::start(
        NODE,
        dir.path(),
        &cms(&c),
        &[
            "--slots",
            "70",
            "--jobs",
            "600",
            "--users",
            "alice,bob,carol",
            "--jobs-forever",
            "--runtime",
            "uniform:2:4",
            "--seed",
            "7",
        ],
    )
    .expect("start the simulated pool");
    let addr = c.addr(1);
    eventually("the pool to fill up", Duration::from_secs(60), || async {
        let by = claimed_by(&addr, "RemoteUser").await?;
        Ok((by.values().sum::<usize>() >= 60).then_some(()))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n--- simulator\n{}", sim.log()));
    let avg = average_claimed(&addr, "RemoteUser", 16).await;
    let get = |u: &str| {
        avg.get(&format!("{u}@pool.example"))
            .copied()
            .unwrap_or(0.0)
    };
    let (a, b, k) = (get("alice"), get("bob"), get("carol"));
    eprintln!("slots held on average: {avg:?}");
    assert!(k > 0.0, "carol holds no slot: {avg:?}");
    assert!(
        (3.0..=5.2).contains(&(a / k)) && (1.5..=2.6).contains(&(b / k)),
        "slots held {avg:?}: alice/carol {:.2} (want ~4), bob/carol {:.2} (want ~2)",
        a / k,
        b / k
    );
    let check = sim.check_claims().expect("check-claims");
    assert_eq!(check["ok"], true, "claims log: {check}");
}

/// A user's row of the replicated ledger as `addr` holds it.
async fn userprio_row(addr: &str, user: &str) -> anyhow::Result<UserprioRow> {
    let v = query(addr, UserprioQuery::default(), true).await?;
    v.rows
        .iter()
        .find(|r| r.name == user)
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("no userprio row for {user} on {addr}: {v:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_killed_mid_run_a_new_leader_negotiates_and_no_slot_is_claimed_twice() {
    let mut c = Cluster::start(daemon_bin(CM), 3, FAST).expect("start cluster");
    let old = wait_leader(&c.running(), Duration::from_secs(30))
        .await
        .expect("leader");
    set_factor(&c, "alice@pool.example", 1000.0).await;
    set_factor(&c, "bob@pool.example", 3000.0).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = Sim::start(
        NODE,
        dir.path(),
        &cms(&c),
        &[
            "--slots",
            "40",
            "--jobs",
            "400",
            "--users",
            "alice,bob",
            "--jobs-forever",
            "--runtime",
            "uniform:1:3",
            "--seed",
            "11",
        ],
    )
    .expect("start the simulated pool");
    let follower = c.ids().into_iter().find(|i| *i != old).expect("follower");
    let faddr = c.addr(follower);
    eventually(
        "claims before the kill",
        Duration::from_secs(60),
        || async {
            let by = claimed_by(&faddr, "RemoteUser").await?;
            Ok((by.values().sum::<usize>() >= 30).then_some(()))
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n--- simulator\n{}", sim.log()));
    let old_term = status(&c.addr(old)).await.expect("status").term;
    let usage_before = userprio_row(&faddr, "alice@pool.example")
        .await
        .expect("alice's row")
        .accumulated_usage;

    // Mid-run: jobs keep finishing and asking for slots while the leader dies.
    c.kill(old);
    let new = wait_leader(&c.running(), Duration::from_secs(30))
        .await
        .expect("a new leader");
    assert_ne!(new, old);
    let naddr = c.addr(new);
    let cycle = eventually(
        "a cycle of the new leader that granted slots",
        Duration::from_secs(60),
        || async {
            let v = query(&naddr, NegotiatorQuery, true).await?;
            Ok(v.cycles
                .into_iter()
                .find(|r| r.term > old_term && r.grants_accepted > 0))
        },
    )
    .await
    .unwrap_or_else(|e| {
        panic!(
            "{e}\n--- new leader\n{}\n--- simulator\n{}",
            c.log(new),
            sim.log()
        )
    });
    assert_eq!(cycle.leader_id, new, "{cycle:?}");

    // Nothing committed before the kill is lost: factors and the usage charged so far.
    for (u, f) in [("alice@pool.example", 1000.0), ("bob@pool.example", 3000.0)] {
        let row = userprio_row(&naddr, u).await.expect("row");
        assert_eq!(row.priority_factor, f, "{u}: {row:?}");
    }
    let usage_after = userprio_row(&naddr, "alice@pool.example")
        .await
        .expect("row")
        .accumulated_usage;
    assert!(
        usage_after >= usage_before,
        "alice's accumulated usage went back from {usage_before} to {usage_after}"
    );

    // The old leader comes back as a follower and the pool keeps running; the startds' own
    // records show no slot ever held two claims and no claim from an older term accepted
    // after a newer one.
    c.restart(old).expect("restart the old leader");
    tokio::time::sleep(Duration::from_secs(4)).await;
    let check = sim.check_claims().expect("check-claims");
    assert_eq!(check["ok"], true, "claims log: {check}\n{}", sim.log());
    let claims = check["summary"]["claims"].as_u64().unwrap_or(0);
    assert!(
        claims > 40,
        "the pool kept claiming after the kill: {check}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_group_quotas_hold_without_surplus() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Two groups with static quotas that add up to less than the pool and no surplus sharing:
    // each group gets exactly its quota however much it asks for (the seeds' group quota
    // rules; HTCondor 23.9 gives 30 and 10 here).
    let c = Cluster::start_with_config(
        daemon_bin(CM),
        3,
        FAST,
        "GROUP_NAMES = group_a, group_b\nGROUP_QUOTA_group_a = 30\nGROUP_QUOTA_group_b = 10\n\
         GROUP_ACCEPT_SURPLUS = false\n",
    )
    .expect("start cluster");
    wait_leader(&c.running(), Duration::from_secs(30))
        .await
        .expect("leader");
    let sim = Sim::start(
        NODE,
        dir.path(),
        &cms(&c),
        &[
            "--slots",
            "60",
            "--jobs",
            "400",
            "--users",
            "ann,ben",
            "--groups",
            "group_a,group_b",
            "--jobs-forever",
            "--runtime",
            "uniform:20:40",
            "--seed",
            "3",
        ],
    )
    .expect("start the simulated pool");
    let addr = c.addr(2);
    let by = eventually(
        "both groups at their quota",
        Duration::from_secs(60),
        || async {
            let by = claimed_by(&addr, "AccountingGroup").await?;
            let a = by.get("group_a.ann@pool.example").copied().unwrap_or(0);
            let b = by.get("group_b.ben@pool.example").copied().unwrap_or(0);
            Ok((a >= 30 && b >= 10).then_some(by))
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n--- simulator\n{}", sim.log()));
    // A few more cycles must not push either group past its quota.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let later = claimed_by(&addr, "AccountingGroup").await.expect("query");
    assert_eq!(
        later.get("group_a.ann@pool.example"),
        Some(&30),
        "{by:?} then {later:?}"
    );
    assert_eq!(
        later.get("group_b.ben@pool.example"),
        Some(&10),
        "{by:?} then {later:?}"
    );
}

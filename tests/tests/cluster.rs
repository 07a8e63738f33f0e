//! The replicated core between real `aerie-cm` processes on loopback.
//!
//! Each test starts its own cluster (random ports, temp data dirs); the harness kills every
//! process on drop, failure included. Timeouts are generous: these tests assert what happens;
//! how fast it happens is measured by `tests/benches/raft.rs`.
use aerie_core::accountant::{AccountantCommand, Usage};
use aerie_core::admin::{StateQuery, UserprioQuery};
use aerie_core::state::{Command, Quota};
use aerie_tests::*;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_aerie-cm-node");

fn start(n: u64, env: &[(&str, &str)]) -> Cluster {
    Cluster::start(daemon_bin(BIN), n, env).expect("start cluster")
}

fn addrs(c: &Cluster) -> Vec<String> {
    c.running().into_iter().map(|(_, a)| a).collect()
}

const LEADER_WAIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_through_any_node_apply_everywhere_and_reads_are_linearizable() {
    let c = start(3, &[]);
    wait_leader(&c.running(), LEADER_WAIT)
        .await
        .expect("leader");
    // One write through each node (two of them are followers and forward).
    for (id, a) in c.running() {
        let r = write(&a, &set_limit(&format!("via_{id}"), id as f64))
            .await
            .expect("write");
        assert!(r.ok, "{}", r.error);
        assert!(r.log_index > 0);
    }
    // Every node applies all of them.
    for (_, a) in c.running() {
        let a2 = a.clone();
        eventually("all writes applied", Duration::from_secs(10), || {
            let a = a2.clone();
            async move {
                let l = limits(&a, true).await?;
                Ok((l.len() == 3).then_some(()))
            }
        })
        .await
        .expect("replicated");
    }
    // Linearizable: a read through any node right after an acknowledged write sees it.
    let nodes = c.running();
    for i in 0..12u64 {
        let (_, w) = &nodes[(i % 3) as usize];
        let (_, r) = &nodes[((i + 1) % 3) as usize];
        let r1 = write(w, &set_limit("counter", i as f64))
            .await
            .expect("write");
        assert!(r1.ok);
        let l = limits(r, false).await.expect("linearizable read");
        assert_eq!(
            l.get("counter"),
            Some(&(i as f64)),
            "read through {r} after write through {w}"
        );
    }
    // A refused command is committed but changes nothing, and says why.
    let r = write(&nodes[1].1, &set_limit("bad", -3.0))
        .await
        .expect("write");
    assert!(!r.ok);
    assert!(r.error.contains("bad value"), "{}", r.error);
    let r = write(
        &nodes[2].1,
        &Command::Accountant(AccountantCommand::ResetUsage {
            name: "nobody@nowhere".into(),
        }),
    )
    .await
    .expect("write");
    assert!(!r.ok && r.error.contains("nobody@nowhere"), "{}", r.error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_leader_elects_another_and_loses_no_acknowledged_write() {
    let mut c = start(3, &[]);
    let leader = wait_formed(&c.running(), LEADER_WAIT)
        .await
        .expect("leader");
    let all = addrs(&c);
    let mut acked = BTreeMap::new();
    for i in 0..30u64 {
        let name = format!("w{i}");
        write_retry(&all, &set_limit(&name, i as f64), Duration::from_secs(10))
            .await
            .expect("write");
        acked.insert(name, i as f64);
    }
    c.kill(leader);
    let survivors = c.running();
    let new_leader = wait_leader(&survivors, LEADER_WAIT)
        .await
        .unwrap_or_else(|e| {
            let logs: Vec<String> = survivors
                .iter()
                .map(|(id, _)| format!("--- node {id}\n{}", c.log(*id)))
                .collect();
            panic!("new leader: {e:#}\n{}", logs.join("\n"))
        });
    assert_ne!(new_leader, leader);
    let live = addrs(&c);
    for (name, v) in &acked {
        let l = limits(&live[0], false).await.expect("read");
        assert_eq!(
            l.get(name),
            Some(v),
            "acknowledged write {name} lost after leader kill"
        );
    }
    for i in 30..40u64 {
        let name = format!("w{i}");
        write_retry(&live, &set_limit(&name, i as f64), Duration::from_secs(10))
            .await
            .expect("write after failover");
        acked.insert(name, i as f64);
    }
    // The old leader rejoins from its own disk and catches up.
    c.restart(leader).expect("restart");
    let old = c.addr(leader);
    let want = acked.clone();
    eventually("old leader caught up", Duration::from_secs(20), || {
        let (a, want) = (old.clone(), want.clone());
        async move {
            let l = limits(&a, true).await?;
            Ok(want.iter().all(|(k, v)| l.get(k) == Some(v)).then_some(()))
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\nlog:\n{}", c.log(leader)));
    let st = status(&old).await.expect("status");
    assert_eq!(st.leader.map(|l| l.id), Some(new_leader));
}

/// What `raft::quick_election` logs when a follower stands early.
const QUICK_ELECTION: &str = "the leader's port refuses connections";

/// A leader that is only stopped (`SIGSTOP`: its port still accepts connections) is replaced
/// on openraft's own timers, and no follower takes it for dead. A leader whose process is
/// gone (`kill -9`: its port refuses connections) is replaced by a quick election: the
/// lowest-numbered other voter stands as soon as the voters' lease is over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_leaders_successor_stands_at_once_a_stopped_leaders_does_not() {
    let mut c = start(3, &[]);
    let first = wait_formed(&c.running(), LEADER_WAIT)
        .await
        .expect("leader");
    let others = |c: &Cluster, but: u64| -> Vec<(u64, String)> {
        c.running()
            .into_iter()
            .filter(|(id, _)| *id != but)
            .collect()
    };
    let logs = |c: &Cluster| -> String {
        c.ids()
            .iter()
            .map(|id| format!("--- node {id}\n{}", c.log(*id)))
            .collect::<Vec<_>>()
            .join("\n")
    };
    c.pause(first);
    let second = wait_leader(&others(&c, first), LEADER_WAIT)
        .await
        .unwrap_or_else(|e| panic!("a leader after SIGSTOP: {e:#}\n{}", logs(&c)));
    assert_ne!(second, first);
    for id in c.ids() {
        assert!(
            !c.log(id).contains(QUICK_ELECTION),
            "node {id} took a stopped leader for dead\n{}",
            logs(&c)
        );
    }
    c.resume(first);
    // The resumed CM follows the new leader before that one is killed.
    let back = c.addr(first);
    eventually("the resumed CM follows", LEADER_WAIT, || {
        let a = back.clone();
        async move {
            let st = status(&a).await?;
            Ok((st.leader.map(|l| l.id) == Some(second)).then_some(()))
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", logs(&c)));

    c.kill(second);
    let successor = *[1u64, 2, 3]
        .iter()
        .filter(|id| **id != second)
        .min()
        .unwrap();
    let third = wait_leader(&c.running(), LEADER_WAIT)
        .await
        .unwrap_or_else(|e| panic!("a leader after kill -9: {e:#}\n{}", logs(&c)));
    assert_ne!(third, second);
    assert!(
        c.log(successor).contains(QUICK_ELECTION),
        "node {successor} did not stand early\n{}",
        logs(&c)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_quorum_writes_fail_clearly_and_resume_after_restart() {
    let mut c = start(3, &[]);
    let leader = wait_leader(&c.running(), LEADER_WAIT)
        .await
        .expect("leader");
    let all = addrs(&c);
    write_retry(&all, &set_limit("before", 1.0), Duration::from_secs(10))
        .await
        .expect("write");
    let followers: Vec<u64> = c.ids().into_iter().filter(|i| *i != leader).collect();
    for f in &followers {
        c.kill(*f);
    }
    let la = c.addr(leader);
    let t = Instant::now();
    let err = match write(&la, &set_limit("during", 2.0)).await {
        Ok(r) => panic!("write without quorum answered {r:?}"),
        Err(e) => format!("{e:#}"),
    };
    let took = t.elapsed();
    assert!(
        took < Duration::from_secs(10),
        "no-quorum error took {took:?}"
    );
    assert!(err.contains("no quorum"), "{err}");
    assert!(err.contains("2 of 3 CMs unreachable"), "{err}");
    for f in &followers {
        assert!(
            err.contains(&format!("node {f} (")),
            "{err} should name node {f}"
        );
    }
    // Restart them: writes resume, nothing acknowledged is lost.
    for f in &followers {
        c.restart(*f).expect("restart");
    }
    let all = addrs(&c);
    write_retry(&all, &set_limit("after", 3.0), Duration::from_secs(20))
        .await
        .expect("write after restart");
    let l = limits(&all[0], false).await.expect("read");
    assert_eq!(l.get("before"), Some(&1.0));
    assert_eq!(l.get("after"), Some(&3.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_cluster_restart_keeps_ledger_and_policy() {
    let mut c = start(3, &[]);
    wait_leader(&c.running(), LEADER_WAIT)
        .await
        .expect("leader");
    let all = addrs(&c);
    let usage = |u: &[(&str, f64)]| {
        u.iter()
            .map(|(s, w)| Usage {
                submitter: s.to_string(),
                weighted_slots: *w,
            })
            .collect()
    };
    let cmds = vec![
        Command::Accountant(AccountantCommand::Tick {
            now: 1_700_000_000,
            usage: usage(&[("alice@pool", 4.0), ("group_a.bob@pool", 2.0)]),
        }),
        Command::Accountant(AccountantCommand::Tick {
            now: 1_700_003_600,
            usage: usage(&[("alice@pool", 4.0)]),
        }),
        Command::Accountant(AccountantCommand::SetFactor {
            name: "alice@pool".into(),
            value: 250.0,
        }),
        Command::SetQuota {
            group: "group_a".into(),
            quota: Some(Quota::Static(40.0)),
        },
        Command::SetSurplus {
            group: "group_a".into(),
            allow: Some(true),
        },
        // A recent absent ad: the leader expires absent ads older than ABSENT_EXPIRE_ADS_AFTER
        // (30 days), which would change the state under the test.
        Command::PutAd {
            ad_type: "Machine".into(),
            name: "slot1@n1".into(),
            text: "[ MyType = \"Machine\"; Name = \"slot1@n1\"; Absent = true ]".into(),
            time: unix_now(),
        },
        set_limit("sw_license", 4.0),
    ];
    for cmd in &cmds {
        let r = write_retry(&all, cmd, Duration::from_secs(10))
            .await
            .expect("write");
        assert!(r.ok, "{}", r.error);
    }
    let before = query_retry(&all[0], StateQuery, Duration::from_secs(20))
        .await
        .expect("state");
    assert_eq!(before.limits["sw_license"], 4.0);
    for id in c.ids() {
        c.stop(id);
    }
    for id in c.ids() {
        c.restart(id).expect("restart");
    }
    wait_leader(&c.running(), LEADER_WAIT)
        .await
        .expect("leader after restart");
    for (_, a) in c.running() {
        let a2 = a.clone();
        let want = before.applied_commands;
        let after = eventually("state restored", Duration::from_secs(15), || {
            let a = a2.clone();
            async move {
                let s = query(&a, StateQuery, true).await?;
                Ok((s.applied_commands == want).then_some(s))
            }
        })
        .await
        .expect("restored");
        assert_eq!(after, before, "state on {a} differs after a full restart");
    }
    let rows = query_retry(&all[1], UserprioQuery::default(), Duration::from_secs(20))
        .await
        .expect("userprio");
    let alice = rows
        .rows
        .iter()
        .find(|x| x.name == "alice@pool")
        .cloned()
        .expect("alice in the ledger");
    assert_eq!(alice.priority_factor, 250.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_purge_the_log_and_a_fresh_node_catches_up_from_one() {
    let mut c = start(
        3,
        &[
            ("AERIE_SNAPSHOT_LOGS", "40"),
            ("AERIE_SNAPSHOT_KEEP_LOGS", "5"),
        ],
    );
    let leader = wait_leader(&c.running(), LEADER_WAIT)
        .await
        .expect("leader");
    let all = addrs(&c);
    // Load: 4 concurrent writers, 60 writes each.
    let mut tasks = Vec::new();
    for w in 0..4 {
        let all = all.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..60 {
                write_retry(
                    &all,
                    &set_limit(&format!("l{w}_{i}"), i as f64),
                    Duration::from_secs(10),
                )
                .await?;
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await.expect("join").expect("writes");
    }
    let la = c.addr(leader);
    let st = eventually(
        "leader snapshotted and purged",
        Duration::from_secs(15),
        || {
            let la = la.clone();
            async move {
                let s = status(&la).await?;
                Ok((s.snapshot_index > 0 && s.purged_index > 0).then_some(s))
            }
        },
    )
    .await
    .expect("snapshot + purge");
    assert!(st.purged_index < st.snapshot_index + 1);
    // A fresh node joins; the log it needs is purged, so it must install a snapshot.
    let addr4 = c.spawn_joiner(4).expect("spawn joiner");
    let mut admin = admin(&all[0]).await.expect("client");
    let mut req = tonic::Request::new(aerie_proto::admin::AddMemberRequest {
        addr: addr4.clone(),
        id: 4,
        forwarded: false,
        learner_only: true,
    });
    req.set_timeout(Duration::from_secs(60));
    let r = admin
        .add_member(req)
        .await
        .expect("add learner")
        .into_inner();
    assert!(r.ok, "{}", r.error);
    let want = limits(&all[0], false).await.expect("read");
    assert_eq!(want.len(), 240);
    eventually(
        "fresh node has the whole state",
        Duration::from_secs(20),
        || {
            let (a, want) = (addr4.clone(), want.clone());
            async move { Ok((limits(&a, true).await? == want).then_some(())) }
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\nlog:\n{}", c.log(4)));
    let s4 = status(&addr4).await.expect("status");
    assert!(
        s4.snapshot_index > 0,
        "node 4 should have installed a snapshot: {s4:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_are_added_and_removed_while_writes_go_on() {
    let mut c = start(3, &[]);
    wait_leader(&c.running(), LEADER_WAIT)
        .await
        .expect("leader");
    let addr4 = c.spawn_joiner(4).expect("joiner");
    let mut targets = addrs(&c);
    targets.retain(|a| *a != addr4);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (targets, stop) = (targets.clone(), stop.clone());
        tokio::spawn(async move {
            let mut acked = Vec::new();
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let name = format!("m{i}");
                // Through nodes 2 and 3 (node 1 is removed meanwhile).
                if write_retry(
                    &targets[1..],
                    &set_limit(&name, i as f64),
                    Duration::from_secs(10),
                )
                .await
                .is_ok()
                {
                    acked.push(name);
                }
                i += 1;
            }
            acked
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut a = admin(&targets[1]).await.expect("client");
    let mut req = tonic::Request::new(aerie_proto::admin::AddMemberRequest {
        addr: addr4.clone(),
        id: 4,
        forwarded: false,
        learner_only: false,
    });
    req.set_timeout(Duration::from_secs(60));
    let r = a.add_member(req).await.expect("add").into_inner();
    assert!(r.ok, "{}", r.error);
    let mut req = tonic::Request::new(aerie_proto::admin::RemoveMemberRequest {
        id: 1,
        forwarded: false,
    });
    req.set_timeout(Duration::from_secs(30));
    let r = a.remove_member(req).await.expect("remove").into_inner();
    assert!(r.ok, "{}", r.error);
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let acked = writer.await.expect("writer");
    assert!(
        acked.len() > 5,
        "too few writes went through: {}",
        acked.len()
    );
    c.kill(1);
    let rest: Vec<(u64, String)> = c.running();
    wait_leader(&rest, LEADER_WAIT)
        .await
        .expect("leader of 2,3,4");
    let st = status(&addr4).await.expect("status");
    let mut members: Vec<(u64, bool)> = st.members.iter().map(|m| (m.id, m.voter)).collect();
    members.sort();
    assert_eq!(members, vec![(2, true), (3, true), (4, true)]);
    let l = limits(&addr4, false)
        .await
        .expect("read through the new member");
    for n in &acked {
        assert!(l.contains_key(n), "acknowledged write {n} missing");
    }
}

/// Issue 13.12: a CM restarted with an empty data directory and the same `--bootstrap
/// --peers` forms no second cluster and takes no part in the old one (it lost its vote, so it
/// could vote twice in a term): it stays out, refusing every peer message, and the cluster
/// goes on without it (the leader does not fall over its lost log). Removed and added again,
/// it catches up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cm_that_lost_its_data_stays_out_until_removed_and_added_again() {
    let mut c = start(3, &[]);
    let leader = wait_leader(&c.running(), LEADER_WAIT)
        .await
        .expect("leader");
    let all = addrs(&c);
    write_retry(&all, &set_limit("before", 1.0), Duration::from_secs(10))
        .await
        .expect("write");
    let lost = c
        .ids()
        .into_iter()
        .find(|i| *i != leader)
        .expect("a follower");
    // The leader has replicated the write to it.
    let addr = c.addr(lost);
    eventually(
        "the follower has the write",
        Duration::from_secs(10),
        || {
            let a = addr.clone();
            async move { Ok(limits(&a, true).await?.contains_key("before").then_some(())) }
        },
    )
    .await
    .expect("replicated");
    c.kill(lost);
    std::fs::remove_dir_all(c.data_dir(lost)).expect("wipe its data");
    let _ = std::fs::remove_file(c.data_dir(lost).with_extension("log"));
    c.restart(lost).expect("restart");
    eventually(
        "the wiped CM says why it stays out",
        Duration::from_secs(20),
        || {
            let log = c.log(lost);
            async move { Ok(log.contains("this CM's data is gone").then_some(())) }
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", c.log(lost)));
    let log = c.log(lost);
    assert!(!log.contains("bootstrapped a new cluster"), "{log}");
    // The other two go on: writes commit, and the wiped CM holds none of them.
    write_retry(&all, &set_limit("without", 2.0), Duration::from_secs(10))
        .await
        .expect("the cluster still takes writes");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(limits(&addr, true).await.expect("stale read").is_empty());
    assert!(!c.log(leader).contains("panicked"), "{}", c.log(leader));
    // Removed and added again, it is admitted and catches up.
    let others: Vec<String> = c
        .running()
        .into_iter()
        .filter(|(i, _)| *i != lost)
        .map(|(_, a)| a)
        .collect();
    let mut a = admin(&others[0]).await.expect("client");
    let mut req = tonic::Request::new(aerie_proto::admin::RemoveMemberRequest {
        id: lost,
        forwarded: false,
    });
    req.set_timeout(Duration::from_secs(30));
    let r = a.remove_member(req).await.expect("remove").into_inner();
    assert!(r.ok, "{}", r.error);
    let mut req = tonic::Request::new(aerie_proto::admin::AddMemberRequest {
        addr: addr.clone(),
        id: lost,
        forwarded: false,
        learner_only: false,
    });
    req.set_timeout(Duration::from_secs(60));
    let r = a.add_member(req).await.expect("add").into_inner();
    assert!(r.ok, "{}", r.error);
    eventually(
        "the re-added CM is caught up",
        Duration::from_secs(20),
        || {
            let a = addr.clone();
            async move {
                let l = limits(&a, true).await?;
                Ok((l.contains_key("before") && l.contains_key("without")).then_some(()))
            }
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", c.log(lost)));
}

/// Issue 13.12: every peer message carries the cluster id, and a CM refuses one that names
/// another cluster (or none) before it even decodes the request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peer_messages_of_another_cluster_are_refused() {
    use aerie_proto::raft::{raft_client::RaftClient, RaftRequest};
    let c = start(3, &[("AERIE_CLUSTER_ID", "prod-a")]);
    wait_leader(&c.running(), LEADER_WAIT)
        .await
        .expect("leader");
    // Node 1 may still be joining the cluster as it forms: wait until it belongs to it.
    let a1 = c.addr(1);
    eventually("node 1 is admitted", Duration::from_secs(20), || {
        let a = a1.clone();
        async move { Ok((status(&a).await?.cluster_id == "prod-a").then_some(())) }
    })
    .await
    .expect("admitted");
    let mut client = RaftClient::new(channel(&a1));
    let send = |cluster_id: &str| RaftRequest {
        version: 1,
        data: b"{}".to_vec(),
        cluster_id: cluster_id.into(),
    };
    for (id, want) in [
        ("test-b", "cluster id mismatch"),
        // (The CM belongs to prod-a; a request naming none is refused too.)
        ("", "names no cluster"),
        ("prod-a", "cannot decode"),
    ] {
        for reply in [
            client.vote(send(id)).await.expect("vote").into_inner(),
            client
                .append_entries(send(id))
                .await
                .expect("append")
                .into_inner(),
            client
                .install_snapshot(send(id))
                .await
                .expect("snapshot")
                .into_inner(),
        ] {
            assert!(reply.error.contains(want), "{id:?}: {}", reply.error);
        }
    }
}

/// Issue 13.14: a rolling upgrade. The CMs start as "old" binaries (feature version 1, which
/// `AERIE_MAX_FEATURE_VERSION` stands in for) and are upgraded one at a time; while any of them
/// is old the cluster keeps feature version 1 and refuses the new commands (the same way on
/// every replica), and once the last runs the new binary the leader raises the version by
/// itself and the new commands apply. Writes go on throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_upgrade_turns_new_commands_on_once_every_cm_supports_them() {
    use aerie_core::admin::StateQuery;
    use aerie_core::state::AdPut;
    let mut c = start(3, &[("AERIE_MAX_FEATURE_VERSION", "1")]);
    wait_leader(&c.running(), LEADER_WAIT)
        .await
        .expect("leader");
    let all = addrs(&c);
    let batch = Command::PutAds {
        ads: vec![AdPut {
            ad_type: "Machine".into(),
            name: "slot1@r1".into(),
            text: "[ MyType = \"Machine\"; Name = \"slot1@r1\"; Absent = true ]".into(),
            time: unix_now(),
        }],
    };
    let feature = |a: String| async move {
        query(&a, StateQuery, false)
            .await
            .map(|s| s.feature_version)
    };
    for (i, id) in c.ids().into_iter().enumerate() {
        let r = write_retry(&all, &batch, Duration::from_secs(10)).await;
        assert!(
            r.as_ref()
                .is_err_and(|e| e.to_string().contains("feature version 2")),
            "before upgrading node {id}: {r:?}"
        );
        assert_eq!(feature(all[0].clone()).await.expect("state"), 1);
        c.set_node_env(id, "AERIE_MAX_FEATURE_VERSION", None);
        c.stop(id);
        c.restart(id).expect("restart");
        wait_leader(&c.running(), LEADER_WAIT)
            .await
            .expect("leader");
        write_retry(
            &all,
            &set_limit(&format!("up{i}"), 1.0),
            Duration::from_secs(20),
        )
        .await
        .expect("writes go on");
    }
    eventually(
        "feature version 2 or newer",
        Duration::from_secs(30),
        || {
            let a = all[0].clone();
            async move { Ok((feature(a).await? >= 2).then_some(())) }
        },
    )
    .await
    .expect("raised");
    let r = write_retry(&all, &batch, Duration::from_secs(10))
        .await
        .expect("the batch applies");
    assert!(r.ok, "{}", r.error);
}

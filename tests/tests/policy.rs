//! Issue 18, items 5 and 7, between real `aerie-cm` processes and the real `cmctl`:
//! * the negotiation policy is replicated: the first leader seeds it from its file, `cmctl
//!   reconfig` on one CM proposes that CM's file, every CM holds the new version, the cycles
//!   record it, and after a failover to a CM whose own file still says otherwise the cycles
//!   keep using it (that CM warns, naming the knob);
//! * `cmctl snapshot save` / `restore`: a pool saved, every CM's data wiped, a fresh cluster
//!   started, the snapshot restored: the ledger and the policy are back; a file that is not a
//!   snapshot, has another format or a bad checksum is refused and changes nothing.
use aerie_core::accountant::{AccountantCommand, Usage};
use aerie_core::admin::{NegotiatorQuery, StateQuery};
use aerie_core::state::{Command, PoolState};
use aerie_proto::collector as cpb;
use aerie_tests::*;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_aerie-cm-node");
const CMCTL: &str = env!("CARGO_BIN_EXE_aerie-cmctl");

fn conf(quota: u32) -> String {
    format!(
        "GROUP_NAMES = group_a\nGROUP_QUOTA_group_a = {quota}\nPRIORITY_HALFLIFE = 600\n\
         DEFAULT_PRIO_FACTOR = 1000\n"
    )
}

fn cms(c: &Cluster) -> Vec<String> {
    c.running().into_iter().map(|(_, a)| a).collect()
}

fn cmctl(c: &Cluster, args: &[&str]) -> (i32, String, String) {
    run_cmctl(CMCTL, &cms(c), args, None)
}

/// The replicated state as CM `id` holds it (a stale read: no forwarding to the leader).
async fn state_of(c: &Cluster, id: u64) -> anyhow::Result<PoolState> {
    query(&c.addr(id), StateQuery, true).await
}

/// Waits until every running CM holds a policy of `version` whose group_a quota is `quota`.
async fn policy_everywhere(c: &Cluster, version: u64, quota: &str) {
    for (id, _) in c.running() {
        eventually(
            &format!("node {id} holds policy version {version} (quota {quota})"),
            Duration::from_secs(30),
            || async move {
                let s = state_of(c, id).await?;
                Ok(s.policy
                    .filter(|p| {
                        p.version == version
                            && p.knobs.get("GROUP_QUOTA_group_a").map(String::as_str) == Some(quota)
                    })
                    .map(|_| ()))
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", c.log(id)));
    }
}

/// alice@pool's ledger record.
fn alice_of(s: &PoolState) -> Option<aerie_core::accountant::Record> {
    s.accountant
        .records()
        .find(|(n, _)| *n == "alice@pool")
        .map(|(_, r)| r.clone())
}

/// A submitter ad whose access point does not answer: enough demand for the leader to run
/// (and record) complete cycles.
async fn advertise_demand(c: &Cluster) {
    let ad = cpb::Ad {
        text: "MyType = \"Submitter\"\nName = \"alice@pool\"\n\
               ScheddIpAddr = \"<127.0.0.1:9?addrs=x>\"\nIdleJobs = 1\n"
            .into(),
    };
    for (id, addr) in c.running() {
        eventually(
            &format!("node {id} takes the submitter ad"),
            Duration::from_secs(15),
            || {
                let (addr, ad) = (addr.clone(), ad.clone());
                async move {
                    let r = collector_client(&addr)
                        .advertise(cpb::AdBatch { ads: vec![ad] })
                        .await?
                        .into_inner();
                    Ok((r.rejected == 0).then_some(()))
                }
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", c.log(id)));
    }
}

/// Waits for a cycle of a term after `after_term` recorded with policy `version`, as CM `id`
/// shows it in `cmctl negotiator status` (stale: its own state).
async fn cycle_with_policy(c: &Cluster, id: u64, after_term: u64, version: u64) {
    eventually(
        &format!("node {id} shows a cycle after term {after_term} with policy {version}"),
        Duration::from_secs(40),
        || async move {
            let r = query(&c.addr(id), NegotiatorQuery, true).await?;
            Ok(r.cycles
                .iter()
                .any(|x| x.term > after_term && x.policy_version == version)
                .then_some(()))
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}\n{}", c.log(id)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconfig_on_one_cm_changes_the_policy_every_leader_negotiates_with() {
    let mut c = Cluster::start_with_configs(
        daemon_bin(BIN),
        3,
        &[
            ("AERIE_NEGOTIATOR_INTERVAL", "1"),
            ("AERIE_NEGOTIATOR_CYCLE_DELAY", "0"),
            ("AERIE_NEGOTIATOR_AP_TIMEOUT", "1"),
        ],
        |_| conf(10),
    )
    .expect("start cluster");
    let leader = wait_leader(&c.running(), Duration::from_secs(30))
        .await
        .expect("leader");
    // Seeded from the first leader's file.
    policy_everywhere(&c, 1, "10").await;
    advertise_demand(&c).await;
    cycle_with_policy(&c, leader, 0, 1).await;

    // One follower's file gets a new quota; reconfig that CM.
    let changed = c.ids().into_iter().find(|i| *i != leader).unwrap();
    std::fs::write(c.config_path(changed), conf(25)).unwrap();
    let (code, out, err) = cmctl(&c, &["reconfig", "--name", &c.addr(changed)]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("committed as version 2") && out.contains("changed: GROUP_QUOTA_group_a"),
        "{out}"
    );
    policy_everywhere(&c, 2, "25").await;
    // The ledger's parameters come with the policy, and the leader's next cycle uses it.
    let term0 = status(&c.addr(leader)).await.expect("status").term;
    cycle_with_policy(&c, leader, term0 - 1, 2).await;

    // Reconfig again with nothing changed: the version stays.
    let (code, out, _) = cmctl(&c, &["reconfig", "--name", &c.addr(changed)]);
    assert_eq!(code, 0);
    assert!(
        out.contains("agrees with the policy in force (version 2)"),
        "{out}"
    );

    // The others' files still say 10: they warn, naming the knob, and do not override.
    let cr = &c;
    for id in c.ids().into_iter().filter(|i| *i != changed) {
        eventually(
            &format!("node {id} warns that its file disagrees"),
            Duration::from_secs(20),
            || async move {
                let log = cr.log(id);
                Ok(log
                    .lines()
                    .any(|l| {
                        l.contains("disagrees with the replicated negotiation policy version 2")
                            && l.contains("GROUP_QUOTA_group_a")
                    })
                    .then_some(()))
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", c.log(id)));
    }

    // A file the negotiator refuses is refused by name, and nothing changes.
    std::fs::write(
        c.config_path(changed),
        "GROUP_NAMES = group_a\nGROUP_ACCEPT_SURPLUS = perhaps\n",
    )
    .unwrap();
    let (code, out, err) = cmctl(&c, &["reconfig", "--name", &c.addr(changed)]);
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("GROUP_ACCEPT_SURPLUS"), "{err}");
    assert_eq!(
        state_of(&c, leader).await.unwrap().policy.unwrap().version,
        2
    );

    // Fail over to a CM whose own file still says 10: kill the leader, and should `changed`
    // win the election, bring the old leader back and kill `changed` instead.
    c.kill(leader);
    let mut new_leader = wait_leader(&c.running(), Duration::from_secs(30))
        .await
        .expect("new leader");
    if new_leader == changed {
        c.restart(leader).expect("restart old leader");
        c.kill(changed);
        new_leader = wait_leader(&c.running(), Duration::from_secs(30))
            .await
            .expect("a leader with the old file");
    }
    assert_ne!(new_leader, changed);
    let term = status(&c.addr(new_leader)).await.expect("status").term;
    let follower = c
        .running()
        .into_iter()
        .map(|(i, _)| i)
        .find(|i| *i != new_leader)
        .expect("a follower");
    // A follower shows the new leader's cycles negotiated with version 2, not its own file's.
    cycle_with_policy(&c, follower, term - 1, 2).await;
    let (code, out, err) = run_cmctl(
        CMCTL,
        &[c.addr(follower)],
        &["negotiator", "status", "--stale"],
        None,
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Policy:      version 2 from"), "{out}");
    let s = state_of(&c, follower).await.unwrap();
    let p = s.policy.unwrap();
    assert_eq!(
        (p.version, p.knobs["GROUP_QUOTA_group_a"].as_str()),
        (2, "25")
    );
    let last = s.cycles.back().unwrap();
    assert_eq!((last.leader_id, last.policy_version), (new_leader, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_pool_comes_back_after_every_cm_lost_its_data() {
    let mut c =
        Cluster::start_with_configs(daemon_bin(BIN), 3, &[], |_| conf(10)).expect("start cluster");
    let leader = wait_leader(&c.running(), Duration::from_secs(30))
        .await
        .expect("leader");
    policy_everywhere(&c, 1, "10").await;
    let addr = c.addr(leader);
    let all = cms(&c);
    // A ledger with usage and a factor, and runtime overrides.
    let now = unix_now();
    for (t, cmd) in [
        (
            0,
            AccountantCommand::Tick {
                now: now - 600,
                usage: vec![],
            },
        ),
        (
            1,
            AccountantCommand::Tick {
                now: now - 300,
                usage: vec![Usage {
                    submitter: "alice@pool".into(),
                    weighted_slots: 4.0,
                }],
            },
        ),
        (
            2,
            AccountantCommand::SetFactor {
                name: "alice@pool".into(),
                value: 42.0,
            },
        ),
    ] {
        let r = write_retry(&all, &Command::Accountant(cmd), Duration::from_secs(10))
            .await
            .unwrap_or_else(|e| panic!("write {t}: {e:#}"));
        assert!(r.ok, "write {t}: {r:?}");
    }
    write_retry(&all, &set_limit("license", 3.0), Duration::from_secs(10))
        .await
        .unwrap();
    let saved = query_retry(&addr, StateQuery, Duration::from_secs(10))
        .await
        .unwrap();
    let alice = alice_of(&saved).expect("alice in the ledger");
    assert_eq!(alice.priority_factor, 42.0);
    assert!(alice.accumulated_usage > 0.0, "{alice:?}");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pool.snapshot");
    let file_s = file.display().to_string();
    let (code, out, err) = cmctl(&c, &["snapshot", "save", &file_s]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("policy version 1"), "{out}");

    // Every CM loses its data; the files now say something else (so what comes back is the
    // snapshot's policy, not a file's).
    for id in c.ids() {
        c.stop(id);
        std::fs::remove_dir_all(c.data_dir(id)).unwrap();
        std::fs::write(c.config_path(id), conf(99)).unwrap();
    }
    for id in c.ids() {
        c.restart(id).unwrap();
    }
    wait_leader(&c.running(), Duration::from_secs(30))
        .await
        .expect("fresh leader");
    policy_everywhere(&c, 1, "99").await;
    let fresh = state_of(&c, 1).await.unwrap();
    assert_eq!(fresh.accountant.records().count(), 0);

    // Bad files: refused with the reason, nothing changes.
    let bytes = std::fs::read(&file).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    let not = dir.path().join("not");
    std::fs::write(&not, "GROUP_NAMES = group_a\n").unwrap();
    let v9 = dir.path().join("v9");
    std::fs::write(&v9, text.replacen("SNAPSHOT 1", "SNAPSHOT 9", 1)).unwrap();
    let edited = dir.path().join("edited");
    std::fs::write(&edited, text.replacen("42.0", "43.0", 1)).unwrap();
    for (path, why) in [
        (&not, "not an Aerie pool snapshot"),
        (&v9, "snapshot format 9 is not supported"),
        (&edited, "checksum mismatch"),
    ] {
        let p = path.display().to_string();
        let (code, out, err) = cmctl(&c, &["snapshot", "restore", &p]);
        assert_ne!(code, 0, "{p}: {out}");
        assert!(err.contains(why) && err.contains(&p), "{p}: {err}");
    }
    let after = query_retry(&c.addr(1), StateQuery, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(after.accountant, fresh.accountant);
    assert_eq!(after.policy.as_ref().map(|p| p.version), Some(1));

    // The real one.
    let (code, out, err) = cmctl(&c, &["snapshot", "restore", &file_s]);
    let cr = &c;
    assert_eq!(code, 0, "{out}{err}");
    let records = saved.accountant.records().count();
    assert!(out.contains(&format!("({records} ledger records")), "{out}");
    for (id, _) in c.running() {
        let s = eventually(
            &format!("node {id} holds the restored pool"),
            Duration::from_secs(20),
            || async move {
                let s = state_of(cr, id).await?;
                Ok((s.accountant.records().count() == records).then_some(s))
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{}", c.log(id)));
        let back = alice_of(&s).expect("alice is back");
        assert_eq!(back, alice, "node {id}");
        assert_eq!(s.accountant, saved.accountant, "node {id}");
        assert_eq!(
            s.accountant.params(),
            saved.accountant.params(),
            "node {id}"
        );
        let p = s.policy.expect("a policy");
        assert_eq!(p.knobs, saved.policy.as_ref().unwrap().knobs, "node {id}");
        assert!(p.version > 1, "restored policy gets a newer version: {p:?}");
        assert_eq!(s.limits.get("license"), Some(&3.0), "node {id}");
    }
    // A second restore over a ledger that now holds records needs --force.
    let (code, _, err) = cmctl(&c, &["snapshot", "restore", &file_s]);
    assert_ne!(code, 0);
    assert!(err.contains("--force"), "{err}");
}

//! `cmctl quota list` on a live cluster: the group tree from the replicated negotiation policy
//! (seeded from the CMs' files), a runtime override shown beside the configured value and in
//! force, and where each value comes from; and `cmctl userprio -quotas`, which shows the
//! quotas as the leader's last cycle computed them (its cycle record), as `condor_userprio
//! -quotas` shows the negotiator's.
use aerie_core::admin::NegotiatorQuery;
use aerie_core::state::CycleRecord;
use aerie_tests::sim::Sim;
use aerie_tests::*;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_aerie-cm-node");
const CMCTL: &str = env!("CARGO_BIN_EXE_aerie-cmctl");
const NODE: &str = env!("CARGO_BIN_EXE_aerie-node-sim");

/// Three CMs on `config` with a leader, and the runtime override `cmctl quota set group_b 7`.
async fn cluster_with_group_b_at_7(config: &str, env: &[(&str, &str)]) -> (Cluster, Vec<String>) {
    let c = Cluster::start_with_config(daemon_bin(BIN), 3, env, config).expect("start");
    wait_leader(&c.running(), Duration::from_secs(20))
        .await
        .expect("leader");
    let cms: Vec<String> = c.running().into_iter().map(|(_, a)| a).collect();
    let (code, _, err) = run_cmctl(CMCTL, &cms, &["quota", "set", "group_b", "7"], None);
    assert_eq!(code, 0, "{err}");
    (c, cms)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quota_list_shows_configured_overridden_and_in_force_values_with_their_source() {
    let config = "GROUP_NAMES = group_a, group_b\nGROUP_QUOTA_group_a = 20\n\
                  GROUP_QUOTA_DYNAMIC_group_b = 0.25\nGROUP_ACCEPT_SURPLUS = true\n";
    let (_c, cms) = cluster_with_group_b_at_7(config, &[]).await;
    // The policy is seeded by the first leader shortly after it is elected.
    let out = eventually("the seeded policy", Duration::from_secs(20), || {
        let cms = cms.clone();
        async move {
            let (code, out, err) = run_cmctl(CMCTL, &cms, &["quota", "list"], None);
            anyhow::ensure!(code == 0, "cmctl quota list: {err}");
            Ok(out.contains("GROUP_QUOTA_group_a").then_some(out))
        }
    })
    .await
    .expect("quota list");
    let line = |g: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{g} ")))
            .unwrap_or_else(|| panic!("no {g} in\n{out}"))
            .to_string()
    };
    let a = line("group_a");
    assert!(
        a.contains("20") && a.contains("yes (GROUP_ACCEPT_SURPLUS)"),
        "{a}"
    );
    let b = line("group_b");
    assert!(
        b.contains("0.25 of parent")
            && b.contains("GROUP_QUOTA_DYNAMIC_group_b")
            && b.contains(" 7 "),
        "the override is shown beside the configured value and in force: {b}"
    );
}

/// The latest committed cycle record, as any CM answers it.
async fn last_cycle(cms: &[String]) -> anyhow::Result<Option<CycleRecord>> {
    let report = query_retry(&cms[0], NegotiatorQuery, Duration::from_secs(10)).await?;
    Ok(report.cycles.last().cloned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn userprio_quotas_shows_the_quotas_the_last_cycle_computed() {
    let config = "GROUP_NAMES = group_a, group_b\nGROUP_QUOTA_group_a = 20\n\
                  GROUP_QUOTA_group_b = 10\nGROUP_ACCEPT_SURPLUS = true\n";
    let fast = [
        ("AERIE_NEGOTIATOR_INTERVAL", "1"),
        ("AERIE_NEGOTIATOR_CYCLE_DELAY", "1"),
    ];
    // A runtime override, which the negotiator must use as group_b's configured quota.
    let (_c, cms) = cluster_with_group_b_at_7(config, &fast).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let shape = [
        "--slots",
        "40",
        "--jobs",
        "400",
        "--users",
        "alice,bob",
        "--groups",
        "group_a,group_b",
        "--jobs-forever",
        "--runtime",
        "uniform:2:5",
        "--seed",
        "7",
    ];
    let sim = Sim::start(NODE, dir.path(), &cms, &shape).expect("simulated pool");
    // Until a cycle has negotiated both groups under the override.
    eventually("a cycle with group quotas", Duration::from_secs(40), || {
        let cms = cms.clone();
        async move {
            let Some(r) = last_cycle(&cms).await? else {
                return Ok(None);
            };
            let b = r.groups.iter().find(|g| g.name == "group_b");
            Ok(
                b.is_some_and(|b| b.config_quota == 7.0 && b.requested > 0.0)
                    .then_some(()),
            )
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", sim.log()));
    // Cycles keep coming every second: compare cmctl's table with a record that was the last
    // one both before and after cmctl ran.
    let (record, out) = eventually(
        "both groups shown between two cycles",
        Duration::from_secs(40),
        || {
            let cms = cms.clone();
            async move {
                let before = last_cycle(&cms).await?;
                let (code, out, err) = run_cmctl(CMCTL, &cms, &["userprio", "-quotas"], None);
                anyhow::ensure!(code == 0, "cmctl userprio -quotas: {err}");
                let after = last_cycle(&cms).await?;
                // Groups show once the accountant has charged them (condor_userprio hides
                // records unused for a day unless -allusers).
                let shown = ["group_a ", "group_b "]
                    .iter()
                    .all(|g| out.lines().any(|l| l.starts_with(g)));
                Ok((before == after && shown).then_some((after, out)))
            }
        },
    )
    .await
    .expect("cmctl userprio -quotas");
    let record = record.expect("a cycle record");
    for name in ["group_a", "group_b"] {
        let g = record
            .groups
            .iter()
            .find(|g| g.name == name)
            .expect("group in the record");
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in\n{out}"));
        let cells: Vec<&str> = line.split_whitespace().collect();
        let want = [
            name.to_string(),
            format!("{:.2}", g.effective_quota),
            format!("{:.2}", g.config_quota),
            "ByQuota".to_string(),
            format!("{:.2}", g.subtree_quota),
            format!("{:.0}", g.requested),
        ];
        assert_eq!(cells[..6], want, "{name}: {line}\nrecord: {g:?}\n{out}");
    }
    let b = record
        .groups
        .iter()
        .find(|g| g.name == "group_b")
        .expect("group_b");
    assert_eq!(
        b.config_quota, 7.0,
        "the runtime override is the configured quota"
    );
    let a = record
        .groups
        .iter()
        .find(|g| g.name == "group_a")
        .expect("group_a");
    assert_eq!(a.config_quota, 20.0);
}

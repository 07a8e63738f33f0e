//! `cmctl quota list` on a live cluster: the group tree from the replicated negotiation policy
//! (seeded from the CMs' files), a runtime override shown beside the configured value and in
//! force, and where each value comes from.
use aerie_tests::*;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_aerie-cm-node");
const CMCTL: &str = env!("CARGO_BIN_EXE_aerie-cmctl");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quota_list_shows_configured_overridden_and_in_force_values_with_their_source() {
    let config = "GROUP_NAMES = group_a, group_b\nGROUP_QUOTA_group_a = 20\n\
                  GROUP_QUOTA_DYNAMIC_group_b = 0.25\nGROUP_ACCEPT_SURPLUS = true\n";
    let c = Cluster::start_with_config(daemon_bin(BIN), 3, &[], config).expect("start");
    wait_leader(&c.running(), Duration::from_secs(20))
        .await
        .expect("leader");
    let cms: Vec<String> = c.running().into_iter().map(|(_, a)| a).collect();
    let (code, _, err) = run_cmctl(CMCTL, &cms, &["quota", "set", "group_b", "7"], None);
    assert_eq!(code, 0, "{err}");
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

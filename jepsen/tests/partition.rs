//! Partitions of a three-CM cluster under a write/read workload, judged by the checkers of
//! `aerie_jepsen::checker`: the leader cut off from both followers (a minority leader), a
//! follower cut off, and a flapping partition. Each needs root and `ip`: without them it fails
//! saying so (it is not silently skipped).

use aerie_jepsen::checker::Report;
use aerie_jepsen::history::{OpKind, Outcome};
use aerie_jepsen::net::Net;
use aerie_jepsen::start_cluster;
use aerie_jepsen::workload::{flapping, Run, Step, Target};
use aerie_tests::{eventually, limits, wait_leader};
use std::path::PathBuf;
use std::time::Duration;

const CMS: u64 = 3;

/// What a run recorded, for the scenario-specific assertions.
struct Outcomes {
    history: aerie_jepsen::history::History,
}

/// Starts three CMs in namespaces, runs the workload under `steps` (then `tail` of healed
/// running), reads every CM's final state and asserts every checker passes.
fn run(steps: &[Step], tail: Duration) -> Outcomes {
    let net =
        Net::create(CMS).unwrap_or_else(|e| panic!("jepsen: cannot build the network: {e:#}"));
    let daemon = PathBuf::from(env!("CARGO_BIN_EXE_aerie-jepsen-cm"));
    let cluster = start_cluster(&net, daemon, CMS).expect("start three CMs in namespaces");
    let cms: Vec<(u64, String)> = (1..=CMS).map(|id| (id, Net::cm_addr(id))).collect();
    let result = net.run_client(|| async {
        wait_leader(&cms, Duration::from_secs(30)).await?;
        let run = Run::new(cms.clone());
        let (nemesis, _, _) = tokio::join!(
            async {
                // Let the sampler see a leader before the first fault.
                tokio::time::sleep(Duration::from_secs(2)).await;
                run.nemesis(&net, steps, tail).await
            },
            run.sampler(),
            async { tokio::join!(run.client(0), run.client(1), run.client(2)) },
        );
        nemesis?;
        wait_leader(&cms, Duration::from_secs(30)).await?;
        let mut finals = Vec::new();
        for (id, addr) in &cms {
            let m = eventually(
                &format!("a linearizable read via CM {id}"),
                Duration::from_secs(30),
                || async { limits(addr, false).await.map(Some) },
            )
            .await?;
            finals.push((*id, m));
        }
        let history = run
            .history
            .into_inner()
            .map_err(|_| anyhow::anyhow!("history poisoned"))?;
        Ok((history, finals))
    });
    let (history, finals) = match result {
        Ok(r) => r,
        Err(e) => panic!(
            "jepsen run failed: {e:#}\n{}",
            cms.iter()
                .map(|(id, _)| format!("--- CM {id} log ---\n{}", cluster.log(*id)))
                .collect::<String>()
        ),
    };
    let report = Report::check(&history, &finals);
    let (ok, fail, unknown) = history.counts();
    eprintln!(
        "jepsen: {} partitions, {} status samples, operations ok {ok} fail {fail} unknown {unknown}\n{}",
        history.partitions.len(),
        history.samples.len(),
        report.render()
    );
    assert!(report.valid(), "checkers failed:\n{}", report.render());
    assert!(ok > 0, "no operation was acknowledged at all");
    drop(cluster);
    drop(net);
    Outcomes { history }
}

/// Writes inside a partition, through the isolated CM (`through_isolated`) or through the
/// others, with outcome matching `ok`.
fn writes_in_partitions(o: &Outcomes, through_isolated: bool, ok: bool) -> usize {
    o.history
        .partitions
        .iter()
        .map(|p| {
            o.history
                .ops
                .iter()
                .filter(|op| {
                    (op.node == p.isolated) == through_isolated
                        && op.invoke >= p.start
                        && op.complete <= p.end
                        && matches!(op.kind, OpKind::Write { .. })
                        && matches!(op.outcome, Outcome::Ok(_)) == ok
                })
                .count()
        })
        .sum()
}

#[test]
fn a_leader_cut_off_from_both_followers_commits_nothing_and_the_majority_goes_on() {
    let o = run(
        &[
            Step::Isolate(Target::Leader),
            Step::Sleep(Duration::from_secs(10)),
            Step::Heal,
        ],
        Duration::from_secs(5),
    );
    assert_eq!(o.history.partitions.len(), 1);
    assert!(
        writes_in_partitions(&o, false, true) > 0,
        "the two connected CMs acknowledged no write while the old leader was cut off"
    );
    assert!(
        writes_in_partitions(&o, true, false) > 0,
        "no write was tried through the cut-off leader: minority-never-commits checked nothing"
    );
}

#[test]
fn a_follower_cut_off_commits_nothing_and_the_rest_goes_on() {
    let o = run(
        &[
            Step::Isolate(Target::Follower),
            Step::Sleep(Duration::from_secs(8)),
            Step::Heal,
        ],
        Duration::from_secs(5),
    );
    assert_eq!(o.history.partitions.len(), 1);
    assert!(
        writes_in_partitions(&o, false, true) > 0,
        "no write acknowledged while a follower was cut off"
    );
    assert!(
        writes_in_partitions(&o, true, false) > 0,
        "no write was tried through the cut-off follower: minority-never-commits checked nothing"
    );
}

#[test]
fn a_flapping_partition_keeps_every_invariant() {
    let seed = std::env::var("AERIE_JEPSEN_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| aerie_tests::unix_now() as u64);
    eprintln!("jepsen: flapping with seed {seed} (replay: AERIE_JEPSEN_SEED={seed})");
    let o = run(
        &flapping(seed, CMS, Duration::from_secs(30)),
        Duration::from_secs(5),
    );
    assert!(o.history.partitions.len() >= 6, "seed {seed}");
}

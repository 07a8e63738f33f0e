//! Partitions of a three-CM cluster under a write/read workload, judged by the checkers of
//! `aerie_jepsen::checker`: the leader cut off from both followers (a minority leader), a
//! follower cut off, and a flapping partition. Each needs root and `ip`: without them it fails
//! saying so (it is not silently skipped).

mod common;

use aerie_jepsen::scenario::Outcome;
use std::time::Duration;

/// Writes inside the partitions, through a minority CM (`through_minority`) or not, with
/// outcome matching `ok`.
fn writes_in_partitions(o: &Outcome, through_minority: bool, ok: bool) -> usize {
    let h = &o.history;
    h.partitions
        .iter()
        .map(|p| {
            h.writes_within(
                p.start,
                p.end,
                |n| p.minority.contains(&n) == through_minority,
                ok,
            )
        })
        .sum()
}

#[test]
fn a_leader_cut_off_from_both_followers_commits_nothing_and_the_majority_goes_on() {
    let o = common::play("isolate-leader", 0, Duration::from_secs(10));
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
    let o = common::play("isolate-follower", 0, Duration::from_secs(8));
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
    let seed = common::seed();
    eprintln!("jepsen: flapping with seed {seed} (replay: AERIE_JEPSEN_SEED={seed})");
    let o = common::play("flapping", seed, Duration::from_secs(30));
    assert!(o.history.partitions.len() >= 6, "seed {seed}");
}

#[test]
fn five_cms_split_two_three_with_the_leader_in_the_two_commit_only_on_the_three() {
    let o = common::play("halves", 0, Duration::from_secs(10));
    let p = &o.history.partitions[0];
    assert_eq!(p.minority.len(), 2, "{}", p.shape);
    assert!(
        writes_in_partitions(&o, false, true) > 0,
        "the three-CM majority acknowledged no write while split from the old leader"
    );
    assert!(
        writes_in_partitions(&o, true, false) > 0,
        "no write was tried through the two-CM minority: minority-never-commits checked nothing"
    );
}

#[test]
fn a_bridge_between_two_pairs_keeps_one_leader_per_term_and_every_write() {
    let o = common::play("bridge", 0, Duration::from_secs(10));
    let p = &o.history.partitions[0];
    assert!(p.shape.starts_with("bridge"), "{}", p.shape);
    // Both sides plus the middle are majorities: the cluster must keep committing through
    // the bridge rather than fight over leadership.
    let acked = o.history.writes_within(p.start, p.end, |_| true, true);
    assert!(
        acked > 0,
        "no write acknowledged across the bridge {}",
        p.shape
    );
}

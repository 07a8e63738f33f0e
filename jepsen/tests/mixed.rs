//! The `mixed` scenario: random isolations, kills and pauses of random members or the leader,
//! with CMs added, removed and replaced during them, all drawn from a seed (replay a failure
//! with `AERIE_JEPSEN_SEED`). Needs root and `ip`: without them it fails saying so (it is not
//! silently skipped).

mod common;

use aerie_jepsen::history::{Change, FaultKind};
use std::time::Duration;

#[test]
fn mixed_faults_with_membership_changes_keep_every_invariant() {
    let seed = common::seed();
    eprintln!("jepsen: mixed with seed {seed} (replay: AERIE_JEPSEN_SEED={seed})");
    let o = common::play("mixed", seed, Duration::from_secs(15));
    let h = &o.history;
    let changes = |c: Change| {
        h.faults
            .iter()
            .filter(|f| f.kind == FaultKind::Membership(c) && f.end != Duration::MAX)
            .count()
    };
    let plan = aerie_jepsen::scenario::plan("mixed", seed, Duration::from_secs(15)).unwrap();
    // Every add of the schedule committed; the final reads went through the members left.
    assert_eq!(changes(Change::Add) as u64, plan.spares, "seed {seed}");
    assert_eq!(
        o.finals.len(),
        3 + changes(Change::Add) - changes(Change::Remove),
        "seed {seed}"
    );
    let faults = h.partitions.len()
        + h.faults
            .iter()
            .filter(|f| matches!(f.kind, FaultKind::Kill | FaultKind::Pause))
            .count();
    assert!(faults >= 2, "seed {seed}: {faults} faults");
}

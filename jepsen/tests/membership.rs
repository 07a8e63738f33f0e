//! Membership changes under other faults (see src/membership.rs): a fourth CM added while a
//! follower is dead, a CM replaced (removed, a fresh one added) while it is cut off, a CM
//! removed while it is paused; the checkers hold and the final reads go through the members
//! at the end. Needs root and `ip`: without them it fails saying so.

mod common;

use aerie_jepsen::history::{Change, FaultKind};
use std::time::Duration;

#[test]
fn members_added_removed_and_replaced_during_faults_lose_nothing() {
    let o = common::play("membership", common::seed(), Duration::from_secs(6));
    let changes: Vec<(Change, u64)> = o
        .history
        .faults
        .iter()
        .filter_map(|f| match f.kind {
            FaultKind::Membership(c) => Some((c, f.node)),
            _ => None,
        })
        .collect();
    let added: Vec<u64> = changes
        .iter()
        .filter(|c| c.0 == Change::Add)
        .map(|c| c.1)
        .collect();
    let removed: Vec<u64> = changes
        .iter()
        .filter(|c| c.0 == Change::Remove)
        .map(|c| c.1)
        .collect();
    assert_eq!(added, vec![4, 5], "{changes:?}");
    assert_eq!(removed.len(), 2, "{changes:?}");
    // The final reads went through exactly the members at the end: the new CMs, not the
    // removed ones; no-lost-write checked every acknowledged write on each.
    let read: Vec<u64> = o.finals.iter().map(|(id, _)| *id).collect();
    assert_eq!(read.len(), 3, "{read:?}");
    assert!(added.iter().all(|id| read.contains(id)), "{read:?}");
    assert!(removed.iter().all(|id| !read.contains(id)), "{read:?}");
    // Each change was made while another fault was in place.
    let h = &o.history;
    for f in h
        .faults
        .iter()
        .filter(|f| matches!(f.kind, FaultKind::Membership(_)))
    {
        let during = h
            .partitions
            .iter()
            .any(|p| p.start <= f.start && f.start <= p.end)
            || h.faults.iter().any(|g| {
                matches!(g.kind, FaultKind::Kill | FaultKind::Pause)
                    && g.start <= f.start
                    && f.start <= g.end
            });
        assert!(during, "{f:?} was made with no other fault in place");
    }
    // The new CMs served writes once added.
    assert!(
        h.writes_within(Duration::ZERO, Duration::MAX, |n| n == 5, true) > 0,
        "no write through the replacement CM 5 was acknowledged"
    );
}

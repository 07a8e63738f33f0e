//! A random ring partition of five CMs (Jepsen's `partition-majorities-ring`): each CM sees
//! itself and its two ring neighbours only, a different majority each. Needs root and `ip`:
//! without them it fails saying so (it is not silently skipped).

mod common;

use std::time::Duration;

#[test]
fn five_cms_on_a_random_ring_keep_one_leader_per_term_and_every_write() {
    let seed = common::seed();
    eprintln!("jepsen: ring with seed {seed} (replay: AERIE_JEPSEN_SEED={seed})");
    let o = common::play("ring", seed, Duration::from_secs(10));
    let h = &o.history;
    assert_eq!(h.partitions.len(), 1, "seed {seed}");
    let p = &h.partitions[0];
    assert!(p.shape.starts_with("ring"), "{}", p.shape);
    // Some CM still sees a majority that includes the leader's: writes go on through the ring.
    assert!(
        h.writes_within(p.start, p.end, |_| true, true) > 0,
        "seed {seed}: no write acknowledged on the ring ({})",
        p.shape
    );
}

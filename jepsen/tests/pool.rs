//! A simulated pool (execute nodes and an access point, `aerie-jepsen-node simulate`, in a
//! namespace of their own) negotiating with three CMs while the leader is cut off, killed and
//! paused, judged by every checker, the pool's among them (claims, one negotiator per term,
//! no grant after a leader was deposed, agreeing ledgers, converging collectors, a cycle soon
//! after each leader loss). Needs root and `ip`: without them it fails saying so.

mod common;

use std::time::Duration;

#[test]
fn a_pool_negotiating_through_leader_faults_keeps_every_invariant() {
    let seed = common::seed();
    eprintln!("jepsen: pool-mixed with seed {seed} (replay: AERIE_JEPSEN_SEED={seed})");
    let o = common::play("pool-mixed", seed, Duration::from_secs(20));
    let pool = o.pool.as_ref().expect("a pool scenario records the pool");
    let summary = aerie_jepsen::pool::summary(&o.history, pool);
    eprintln!("jepsen: pool {summary}");
    // The checkers judged something: slots were claimed, cycles committed in more than one
    // term (the leader was lost at least once), and some loss was followed by calm long
    // enough to judge the failover.
    assert!(
        summary["claims"].as_u64().unwrap_or(0) > 10,
        "seed {seed}: the pool hardly claimed anything: {summary}"
    );
    assert!(
        summary["terms"].as_u64().unwrap_or(0) >= 2,
        "seed {seed}: no leader change with cycles: {summary}"
    );
    let judged = summary["failovers"]
        .as_array()
        .map(|f| f.iter().filter(|x| !x["next_cycle_ms"].is_null()).count())
        .unwrap_or(0);
    assert!(judged >= 1, "seed {seed}: no failover measured: {summary}");
    assert!(
        !pool.views.is_empty() && pool.ledgers.len() == 3,
        "seed {seed}: the collectors and ledgers were not read"
    );
}

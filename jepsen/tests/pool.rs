//! A simulated pool (execute nodes and an access point, `aerie-jepsen-node simulate`, in a
//! namespace of their own) negotiating with three CMs while the leader is cut off, killed and
//! paused, judged by every checker, the pool's among them (claims, one negotiator per term,
//! no grant after a leader was deposed, agreeing ledgers, the ledgers replayed from the
//! committed log, converging collectors, a cycle soon
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
    // Every CM's committed log was read and replayed (the checker passed, so each replay
    // gave every ledger); say what the replay started from.
    let replayed = aerie_jepsen::replay::summary(&pool.logs);
    eprintln!("jepsen: replayed {replayed}");
    assert_eq!(pool.logs.len(), 3, "seed {seed}: {replayed}");
    assert!(
        replayed["formula_checked"]["charges"].as_u64().unwrap_or(0) > 10,
        "seed {seed}: the formula was hardly checked: {replayed}"
    );
}

/// The accountant under clock jumps, end to end: the leader's wall clock jumps forward and
/// back (1 min-1 h) while the pool's jobs hold slots; `priorities-replayed` then holds the
/// committed ticks to the time that really passed (a tick by the jumped clock would charge
/// usage nobody had), besides replaying them into every CM's ledger.
#[test]
fn a_pool_whose_leaders_clock_jumps_is_charged_only_the_time_that_passed() {
    let seed = common::seed();
    eprintln!("jepsen: pool-clock-jump-leader with seed {seed} (replay: AERIE_JEPSEN_SEED={seed})");
    let o = common::play("pool-clock-jump-leader", seed, Duration::from_secs(12));
    let jumps = o
        .history
        .faults
        .iter()
        .filter(|f| matches!(f.kind, aerie_jepsen::history::FaultKind::Clock(_)))
        .count();
    assert!(jumps >= 2, "seed {seed}: {jumps} clock jumps");
    let pool = o.pool.as_ref().expect("a pool scenario records the pool");
    let replayed = aerie_jepsen::replay::summary(&pool.logs);
    eprintln!("jepsen: replayed {replayed}");
    assert!(
        replayed["formula_checked"]["charges"].as_u64().unwrap_or(0) > 10,
        "seed {seed}: the formula was hardly checked: {replayed}"
    );
}

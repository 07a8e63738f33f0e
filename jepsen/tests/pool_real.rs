//! A real pool (two `aerie-node execute` nodes with three static slots each and one
//! `aerie-node access-point`, security on) running real jobs of three owners, submitted with
//! `cmctl submit` before and during the faults, while the leader of three CMs is cut off,
//! killed and paused. Every checker must hold: the pool's (claims, one negotiator per term,
//! no grant after a leader was deposed, agreeing ledgers, converging collectors, a cycle soon
//! after each leader loss) and the jobs' (no job running twice at once, no slot running two
//! jobs at once; every job completed once, exit code 0, its output back). Needs root and
//! `ip`: without them it fails saying so.

mod common;

use std::time::Duration;

#[test]
fn a_real_pool_runs_every_job_to_completion_once_through_leader_faults() {
    let seed = common::seed();
    eprintln!("jepsen: pool-real with seed {seed} (replay: AERIE_JEPSEN_SEED={seed})");
    let o = common::play("pool-real", seed, Duration::from_secs(15));
    let pool = o.pool.as_ref().expect("a pool scenario records the pool");
    let summary = aerie_jepsen::pool::summary(&o.history, pool);
    eprintln!("jepsen: pool {summary}");
    let jobs = &summary["jobs"];
    // The checkers judged something: jobs of every owner were submitted (also during the
    // faults) and all completed; cycles committed in more than one term.
    assert!(
        jobs["submitted"].as_u64().unwrap_or(0) >= 12 && jobs["owners"].as_u64() == Some(3),
        "seed {seed}: too few jobs: {summary}"
    );
    assert_eq!(
        jobs["completed"], jobs["submitted"],
        "seed {seed}: {summary}"
    );
    assert!(
        summary["terms"].as_u64().unwrap_or(0) >= 2,
        "seed {seed}: no leader change with cycles: {summary}"
    );
    let record = pool.jobs.as_ref().expect("the real pool records its jobs");
    let first_fault = o
        .history
        .faults
        .iter()
        .map(|f| f.start)
        .chain(o.history.partitions.iter().map(|p| p.start))
        .min()
        .expect("faults");
    let started_during_faults = aerie_jepsen::checker_jobs::runs(&record.events)
        .iter()
        .filter(|r| r.start_ms > pool.origin_ms + first_fault.as_millis() as u64)
        .count();
    assert!(
        started_during_faults > 0,
        "seed {seed}: no job started after the first fault"
    );
}

//! End-to-end figures of a whole central manager with a simulated pool, real processes:
//! - negotiation cycle time at a given pool size (the leader's cycle records: snapshot, tick,
//!   requests from the access point, negotiation, grants, record);
//! - failover: from `kill -9` of the leader to the first completed cycle of the next leader
//!   (the cycle record with a newer term, as seen by polling a surviving CM every 20 ms); the
//!   killed CM is restarted, and the next kill waits until it has caught up with the log.
//!
//! Run: `cargo bench -p aerie-tests --bench pool [-- SLOTS JOBS KILLS SUBMITTERS CLUSTER]`
//! (defaults 10000 20000 5 10 100: each submitter's jobs come in clusters of CLUSTER procs).
//! `AERIE_BENCH_POLICY="KNOB=VALUE,..."` sets the pool's runtime policy first (as `cmctl
//! reconfig` does), e.g. `NEGOTIATOR_CONSIDER_PREEMPTION=False`. Use release daemons for figures: `AERIE_CM_BIN=target/release/aerie-cm-node`.
use aerie_core::admin::NegotiatorQuery;
use aerie_core::state::CycleRecord;
use aerie_tests::sim::{claimed_by, Sim};
use aerie_tests::*;
use std::time::{Duration, Instant};

const CM: &str = env!("CARGO_BIN_EXE_aerie-cm-node");
const NODE: &str = env!("CARGO_BIN_EXE_aerie-node-sim");

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    v[(((v.len() - 1) as f64) * p).round() as usize]
}

/// Seconds since midnight UTC of a log line's timestamp ("2026-11-26T21:00:00.775985Z ...").
fn seconds_of_day(line: &str) -> Option<f64> {
    let time = line.split('T').nth(1)?.split('Z').next()?;
    let mut parts = time.split(':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some(h * 3600.0 + m * 60.0 + s)
}

async fn cycles(addr: &str) -> Vec<CycleRecord> {
    query(addr, NegotiatorQuery, true)
        .await
        .map(|v| v.cycles)
        .unwrap_or_default()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().filter(|a| !a.starts_with("--")).collect();
    let slots: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let jobs: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let kills: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(5);
    let submitters: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(10);
    let cluster: usize = args.get(5).and_then(|s| s.parse().ok()).unwrap_or(100);
    let mut c = Cluster::start(
        daemon_bin(CM),
        3,
        &[
            ("AERIE_NEGOTIATOR_INTERVAL", "2"),
            ("AERIE_NEGOTIATOR_CYCLE_DELAY", "1"),
            ("AERIE_NEGOTIATOR_AP_TIMEOUT", "30"),
            ("AERIE_ELECTION_TIMEOUT", PRODUCTION_ELECTION_TIMEOUT),
            (
                "AERIE_LOG",
                "warn,aerie_cm=info,aerie_cm::leader::requests=debug",
            ),
        ],
    )
    .expect("start cluster");
    wait_leader(&c.running(), Duration::from_secs(30))
        .await
        .expect("leader");
    let dir = tempfile::tempdir().expect("tempdir");
    let cms: Vec<String> = c.running().into_iter().map(|(_, a)| a).collect();
    if let Ok(policy) = std::env::var("AERIE_BENCH_POLICY") {
        let knobs = policy
            .split(',')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        let cmd = aerie_core::state::Command::SetPolicy(
            aerie_core::state::negotiation_policy::PolicyProposal {
                knobs,
                source: "pool bench".into(),
                time,
            },
        );
        write_retry(&cms, &cmd, Duration::from_secs(20))
            .await
            .expect("set the policy");
        println!("| policy | {policy} |");
    }
    let users = (1..=submitters)
        .map(|i| format!("u{i}"))
        .collect::<Vec<_>>()
        .join(",");
    let (s, j, cs) = (slots.to_string(), jobs.to_string(), cluster.to_string());
    let node_bin = std::env::var("AERIE_NODE_BIN").unwrap_or_else(|_| NODE.to_string());
    let sim = Sim::start(
        &node_bin,
        dir.path(),
        &cms,
        &[
            "--slots",
            &s,
            "--jobs",
            &j,
            "--users",
            &users,
            "--cluster-size",
            &cs,
            "--jobs-forever",
            "--runtime",
            "uniform:30:90",
            "--seed",
            "1",
            "--update-interval",
            "30",
        ],
    )
    .expect("simulator");
    let addr = cms[0].clone();
    let t = Instant::now();
    eventually("the pool to fill", Duration::from_secs(300), || async {
        let by = claimed_by(&addr, "RemoteUser").await?;
        Ok((by.values().sum::<usize>() * 10 >= slots * 9).then_some(()))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", sim.log()));
    println!(
        "| pool of {slots} slots, {jobs} jobs ({cluster} per cluster), {submitters} submitters: 90 % claimed after | {:.1} s |",
        t.elapsed().as_secs_f64()
    );
    // Cycle figures from the records: the first cycles matched most of the pool, the later
    // ones are the live cycle of a full pool with jobs finishing and demand left.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let recs = cycles(&addr).await;
    let later = recs.len().saturating_sub(4);
    for r in recs.iter().take(2).chain(recs.iter().skip(later.max(2))) {
        println!(
            "| cycle {} (term {}) | {} slots, {} idle jobs | {} matches | {:.3} s |",
            r.cycle, r.term, r.slots, r.idle_jobs, r.matches, r.duration_seconds
        );
    }
    // Where the leader's cycles spent their time (its log's per-phase milliseconds).
    if let Ok(leader) = wait_leader(&c.running(), Duration::from_secs(5)).await {
        for line in c
            .log(leader)
            .lines()
            .filter(|l| l.contains("negotiation cycle done"))
            .skip(2)
        {
            let phases = line.split("phases_ms=").nth(1).unwrap_or(line);
            println!("| leader {leader} cycle phases (ms) | {phases} |");
        }
    }

    let mut failover = Vec::new();
    for k in 0..kills {
        let leader = wait_leader(&c.running(), Duration::from_secs(30))
            .await
            .expect("leader");
        let term = status(&c.addr(leader)).await.expect("status").term;
        let watch = c
            .running()
            .into_iter()
            .find(|(i, _)| *i != leader)
            .map(|(_, a)| a)
            .expect("a survivor");
        let t = Instant::now();
        let killed_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
            .rem_euclid(86_400.0);
        c.kill(leader);
        loop {
            let done = cycles(&watch).await.iter().any(|r| r.term > term);
            if done {
                break;
            }
            if t.elapsed() > Duration::from_secs(60) {
                panic!("no cycle within 60 s of killing leader {leader}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let s = t.elapsed().as_secs_f64();
        println!("| failover {k}: kill -9 leader {leader} (term {term}) to first completed cycle | {s:.2} s |");
        // Where the time went: the election (the new leader's "negotiation starts", seconds
        // after the kill) and its first cycle's phases.
        // (The leader logs the cycle just after committing its record.)
        tokio::time::sleep(Duration::from_millis(300)).await;
        for (id, _) in c.running() {
            let log = c.log(id);
            let newer = |l: &&str| {
                l.split("term=").nth(1).and_then(|r| {
                    r.split(|c: char| !c.is_ascii_digit())
                        .next()?
                        .parse::<u64>()
                        .ok()
                }) > Some(term)
            };
            let Some(start) = log
                .lines()
                .filter(|l| l.contains("leader: negotiation starts"))
                .find(newer)
            else {
                continue;
            };
            let done = log
                .lines()
                .filter(|l| l.contains("negotiation cycle done"))
                .find(newer);
            let cycle = done
                .and_then(|l| l.split("phases_ms=").nth(1))
                .unwrap_or("-");
            let done_at = done
                .and_then(seconds_of_day)
                .map_or(f64::NAN, |at| (at - killed_at).rem_euclid(86_400.0));
            // What else the leader said on the way (a failed or skipped cycle, a warning).
            if std::env::var_os("AERIE_BENCH_FAILOVER_LOG").is_some() {
                for l in log
                    .lines()
                    .skip_while(|l| !std::ptr::eq(*l, start))
                    .take_while(|l| done.is_none_or(|d| !std::ptr::eq(*l, d)))
                    .filter(|l| !l.contains("openraft"))
                    .take(20)
                {
                    println!("    {l}");
                }
            }
            let elected =
                seconds_of_day(start).map_or(f64::NAN, |at| (at - killed_at).rem_euclid(86_400.0));
            println!("| failover {k}: CM {id} leads {elected:.2} s after the kill, its first cycle ends at {done_at:.2} s (ms) | {cycle} |");
        }
        failover.push(s);
        c.restart(leader).expect("restart");
        // The next kill is of a healthy cluster: the restarted CM has caught up with the
        // leader's log (within the few entries a cycle adds), as after a real crash and
        // repair; killing the leader while it still replicates the backlog measured the
        // backlog too.
        let t = Instant::now();
        eventually(
            "the restarted CM caught up",
            Duration::from_secs(120),
            || {
                let running = c.running();
                async move {
                    let id = wait_leader(&running, Duration::from_secs(5)).await?;
                    let addr = &running.iter().find(|(i, _)| *i == id).expect("leader").1;
                    let s = status(addr).await?;
                    let behind = s
                        .members
                        .iter()
                        .filter(|m| m.id != s.id)
                        .filter(|m| !m.has_matched || m.matched_index + 5 < s.last_log_index)
                        .count();
                    Ok((behind == 0).then_some(()))
                }
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        println!(
            "| restart {k}: CM {leader} caught up with the leader's log after | {:.1} s |",
            t.elapsed().as_secs_f64()
        );
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    println!(
        "| failover over {kills} kills | median {:.2} s | max {:.2} s |",
        pct(&mut failover, 0.5),
        pct(&mut failover, 1.0)
    );
    let check = sim.check_claims().expect("check-claims");
    println!("claims log check: ok = {}", check["ok"]);
}

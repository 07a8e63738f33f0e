//! A pool in the jepsen network: simulated execute nodes and a simulated access point
//! (`aerie-node simulate`, as `aerie-jepsen-node`) in a namespace of their own
//! ([`Net::add_pool`]), streaming slot, submitter and scheduler ads to every CM and claiming
//! the slots the leader grants, so that negotiation cycles with claims (and the ad churn of
//! claims and releases) run through the nemesis. The jobs are simulated: each "runs" for 1-3
//! s on its slot and is replaced by a fresh one (`--jobs-forever`), as HTCondor's startd
//! (src/condor_startd.V6) and schedd (src/condor_schedd.V6) would claim and release slots.
//!
//! `pool-real` puts real execute nodes and a real access point in the same place instead
//! ([`crate::pool_real`]); the rest of this shell serves both.
//!
//! This is the async shell: it starts the pool, watches the committed cycles during the run,
//! and after the run stops negotiation, lets the jobs drain and gathers what the pure checkers
//! of [`crate::checker_pool`] judge (the claims log, the cycles, every collector's slots,
//! every CM's ledger).

use crate::checker_pool::{AdView, Bounds, Cycle, Ledger, PoolRecord};
use crate::net::Net;
use crate::workload::{Run, Step, Target};
use aerie_core::admin::{CyclesQuery, NegotiatorQuery, UserprioQuery};
use aerie_core::state::{Command, CycleRecord};
use aerie_tests::{collector_ads, query, write_retry};
use anyhow::{anyhow, Context};
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The port the pool's Startd and AccessPoint services listen on.
pub const POOL_PORT: u16 = 7100;

/// CM environment for a pool run: a cycle every second, one second apart, as the
/// integration tests run them (HTCondor's 60 s / 20 s would leave a run with no cycle).
pub const CM_ENV: &[(&str, &str)] = &[
    ("AERIE_NEGOTIATOR_INTERVAL", "1"),
    ("AERIE_NEGOTIATOR_CYCLE_DELAY", "1"),
];

/// The negotiator interval plus the cycle delay of [`CM_ENV`].
const CYCLE_GAP: Duration = Duration::from_secs(2);

/// The pool's shape: 12 slots on 3 machines, 3 submitters with unlimited demand.
const SHAPE: &[&str] = &[
    "--slots",
    "12",
    "--machines",
    "3",
    "--jobs",
    "300",
    "--users",
    "alice,bob,carol",
    "--jobs-forever",
    "--runtime",
    "uniform:1:3",
    "--update-interval",
    "1",
    "--status-interval",
    "5",
];

/// The longest a simulated job runs ([`SHAPE`]'s `--runtime`).
const MAX_RUNTIME: Duration = Duration::from_secs(3);

/// The `pool-mixed` schedule over `total`, replayable from `seed`: one fault at a time on
/// whichever CM leads when it starts (cut off from the other CMs, `kill -9` or `SIGSTOP`) for
/// 2-5 s, undone, then 4-6 s of calm, long enough for the failover checker to judge the next
/// cycle (election timeout plus one cycle) before the next fault.
pub fn leader_faults(seed: u64, total: Duration) -> Vec<Step> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut steps = Vec::new();
    let mut t = Duration::ZERO;
    while t < total {
        let (fault, undo) = match rng.gen_range(0..3) {
            0 => (Step::Isolate(Target::Leader), Step::Heal),
            1 => (Step::Kill(Target::Leader), Step::Restart),
            _ => (Step::Pause(Target::Leader), Step::Resume),
        };
        let on = Duration::from_millis(rng.gen_range(2000..5000));
        let off = Duration::from_millis(rng.gen_range(4000..6000));
        steps.extend([fault, Step::Sleep(on), undo, Step::Sleep(off)]);
        t += on + off;
    }
    steps
}

/// The pool in the pool namespace: the `aerie-jepsen-node simulate` process, or the real
/// execute nodes and access point of [`crate::pool_real`] (`pool-real`); killed when dropped.
pub struct Pool {
    child: Option<Child>,
    real: Option<crate::pool_real::RealPool>,
    dir: tempfile::TempDir,
}

impl Drop for Pool {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Pool {
    /// Starts the pool in `net`'s pool namespace (added with [`Net::add_pool`]) with the node
    /// binary `bin`, advertising to CMs `1..=cms`, its random choices drawn from `seed`.
    pub fn start(net: &Net, bin: &Path, cms: u64, seed: u64) -> anyhow::Result<Pool> {
        aerie_tests::test_pool();
        let dir = tempfile::Builder::new()
            .prefix("aerie-jepsen-pool-")
            .tempdir()?;
        let log = std::fs::File::create(dir.path().join("simulate.log"))?;
        let addrs: Vec<String> = (1..=cms).map(Net::cm_addr).collect();
        let child = std::process::Command::new("ip")
            .args(["netns", "exec", &net.pool_ns()])
            .arg(bin)
            .arg("simulate")
            .args(["--cms", &addrs.join(",")])
            .args(["--listen", &format!("{}:{POOL_PORT}", Net::pool_ip())])
            .arg("--claims-log")
            .arg(dir.path().join("claims.log"))
            .arg("--dump-claim-ids")
            .arg(dir.path().join("claim_ids.json"))
            .args(["--domain", "pool.example", "--seed", &seed.to_string()])
            .args(SHAPE)
            .env("AERIE_LOG", "warn,aerie_node=info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .with_context(|| format!("cannot start {} simulate", bin.display()))?;
        Ok(Pool {
            child: Some(child),
            real: None,
            dir,
        })
    }

    /// Starts the real pool of [`crate::pool_real`] instead, with the node binary `bin`.
    pub fn start_real(net: &Net, bin: &Path, cms: u64, seed: u64) -> anyhow::Result<Pool> {
        Ok(Pool {
            child: None,
            real: Some(crate::pool_real::RealPool::start(net, bin, cms, seed)?),
            dir: tempfile::Builder::new()
                .prefix("aerie-jepsen-pool-")
                .tempdir()?,
        })
    }

    /// What the pool logged so far.
    pub fn log(&self) -> String {
        match &self.real {
            Some(r) => r.logs(),
            None => {
                std::fs::read_to_string(self.dir.path().join("simulate.log")).unwrap_or_default()
            }
        }
    }

    /// The nodes' claims log so far (the real nodes': made from their records).
    pub fn claims_log(&self) -> String {
        match &self.real {
            Some(r) => r.claims_log(),
            None => std::fs::read_to_string(self.dir.path().join("claims.log")).unwrap_or_default(),
        }
    }

    /// The real pool's job submissions, until `run` stops; nothing for a simulated pool
    /// (its access point makes its own jobs).
    pub async fn workload(&self, run: &Run) {
        if let Some(r) = &self.real {
            r.workload(run).await
        }
    }

    /// The pool's slot names (the keys of its claim id dump).
    fn slots(&self) -> anyhow::Result<BTreeSet<String>> {
        if let Some(r) = &self.real {
            return Ok(r.slots()?.into_iter().collect());
        }
        let path: PathBuf = self.dir.path().join("claim_ids.json");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading the pool's slots from {}", path.display()))?;
        let ids: BTreeMap<String, String> = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a JSON map", path.display()))?;
        Ok(ids.into_keys().collect())
    }
}

/// The committed cycles seen so far, by (term, cycle).
#[derive(Default)]
pub struct Cycles(Mutex<BTreeMap<(u64, u64), Cycle>>);

impl Cycles {
    /// Adds `records`, first seen at `seen` (`None`: only in the final read).
    fn add(&self, records: &[CycleRecord], seen: Option<Duration>) {
        let Ok(mut m) = self.0.lock() else { return };
        for r in records {
            m.entry((r.term, r.cycle)).or_insert(Cycle {
                term: r.term,
                cycle: r.cycle,
                leader_id: r.leader_id,
                start_time: r.start_time,
                end_time: r.end_time,
                duration_seconds: r.duration_seconds,
                seen,
            });
        }
    }

    fn all(&self) -> Vec<Cycle> {
        self.0
            .lock()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }
}

/// Until `run` stops, asks every CM for its latest committed cycles (a stale read of the
/// negotiator status, answered from the CM's own state) every second and records when each
/// cycle was first seen: the state keeps only the last 100 cycle records, fewer than a long
/// run commits.
pub async fn watch_cycles(run: &Run, cycles: &Cycles) {
    while !run.stopped() {
        for (_, addr) in &run.cms {
            if let Ok(Ok(r)) = tokio::time::timeout(
                Duration::from_millis(700),
                query(addr, NegotiatorQuery, true),
            )
            .await
            {
                cycles.add(&r.cycles, Some(run.start.elapsed()));
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Unix milliseconds now.
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The slots the claims log says are claimed now, and the time of its last event (Unix ms).
fn claimed_now(log: &str) -> (BTreeSet<String>, u64) {
    let mut claimed = BTreeSet::new();
    let mut last = 0;
    for e in log
        .lines()
        .filter_map(|l| serde_json::from_str::<aerie_node::claims_log::Event>(l).ok())
    {
        last = last.max(e.time_ms);
        let slot = e.slot.unwrap_or_default();
        match e.event.as_str() {
            "start" => claimed.clear(),
            "claim" => {
                claimed.insert(slot);
            }
            "release" => {
                claimed.remove(&slot);
            }
            _ => {}
        }
    }
    (claimed, last)
}

/// How long the harness waits for the collectors to converge before giving up looking
/// (beyond the bound, so that a late convergence is reported as late, not as never).
const CONVERGENCE: Duration = Duration::from_secs(10);

/// After the run, with every fault undone: pauses negotiation, waits until every job has
/// left its slot and the claims log has been quiet for a second, then watches every CM's
/// collector until it shows the nodes' slots (at most [`CONVERGENCE`] plus 5 s), reads every
/// CM's ledger at one time (until they agree, at most 10 s) and every CM's committed cycles.
pub async fn settle(
    run: &Run,
    pool: &Pool,
    cycles: &Cycles,
    origin_ms: u64,
) -> anyhow::Result<PoolRecord> {
    let jobs = match &pool.real {
        Some(r) => Some(r.finish(origin_ms + healed(run).as_millis() as u64).await?),
        None => None,
    };
    let addrs: Vec<String> = run.cms.iter().map(|(_, a)| a.clone()).collect();
    let pause = Command::SetNegotiatorPaused { paused: true };
    write_retry(&addrs, &pause, Duration::from_secs(20))
        .await
        .context("pausing negotiation after the run")?;
    let drained = Instant::now() + Duration::from_secs(10) + MAX_RUNTIME;
    let since_ms = loop {
        let (claimed, last) = claimed_now(&pool.claims_log());
        if claimed.is_empty() && unix_ms() >= last + 1000 {
            break last;
        }
        if Instant::now() > drained {
            return Err(anyhow!(
                "slots {claimed:?} still claimed 10 s after negotiation was paused"
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let expected: BTreeMap<String, String> = pool
        .slots()?
        .into_iter()
        .map(|s| (s, "Unclaimed".to_string()))
        .collect();
    let expected_since = Duration::from_millis(since_ms.saturating_sub(origin_ms));

    let mut views = Vec::new();
    let give_up = Instant::now() + CONVERGENCE + Duration::from_secs(5);
    let mut done: BTreeSet<u64> = BTreeSet::new();
    while done.len() < run.cms.len() && Instant::now() < give_up {
        for (cm, addr) in &run.cms {
            if done.contains(cm) {
                continue;
            }
            let ads = tokio::time::timeout(
                Duration::from_secs(2),
                collector_ads(addr, "Machine", "", &["Name", "State"]),
            )
            .await;
            if let Ok(Ok(ads)) = ads {
                let slots: BTreeMap<String, String> = ads
                    .iter()
                    .map(|ad| {
                        let s = |a: &str| ad.eval_attr(a).as_str().unwrap_or_default().to_string();
                        (s("Name"), s("State"))
                    })
                    .collect();
                if slots == expected {
                    done.insert(*cm);
                }
                views.push(AdView {
                    at: run.start.elapsed(),
                    cm: *cm,
                    slots,
                });
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    let read_ms = unix_ms();
    let now = (read_ms / 1000) as i64;
    let mut ledgers = Vec::new();
    let agree_by = Instant::now() + Duration::from_secs(10);
    loop {
        ledgers.clear();
        for (cm, addr) in &run.cms {
            let q = UserprioQuery { now: Some(now) };
            let r = query(addr, q, true)
                .await
                .with_context(|| format!("the ledger of CM {cm}"))?;
            ledgers.push(Ledger {
                cm: *cm,
                last_tick: r.last_tick,
                rows: r.rows,
            });
        }
        let agree = ledgers
            .iter()
            .all(|l| l.last_tick == ledgers[0].last_tick && l.rows == ledgers[0].rows);
        if agree || Instant::now() > agree_by {
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    for (cm, addr) in &run.cms {
        let r = query(addr, CyclesQuery, true)
            .await
            .with_context(|| format!("the cycles of CM {cm}"))?;
        cycles.add(&r.into_iter().collect::<Vec<_>>(), None);
    }
    Ok(PoolRecord {
        origin_ms,
        claims_log: pool.claims_log(),
        cycles: cycles.all(),
        expected,
        expected_since,
        views,
        ledgers,
        read_ms,
        node_log: pool.log(),
        logs: Vec::new(),
        jobs,
    })
}

/// Stops (`kill -9`) every CM of `ids` in `cluster` and reads its committed Raft log from its
/// data directory with the CM's own storage code, read-only, for [`crate::replay`]. Called
/// after [`settle`] read the ledgers, with negotiation paused: the logs hold every tick the
/// ledgers reflect and no later one.
pub fn read_logs(cluster: &mut aerie_tests::Cluster, ids: &[u64]) -> Vec<crate::replay::LogRead> {
    ids.iter()
        .map(|&cm| {
            cluster.kill(cm);
            let dir = cluster.data_dir(cm).to_path_buf();
            let log = aerie_cm::raft::store::read_committed(&dir).map_err(|e| format!("{e:#}"));
            if let Ok(l) = &log {
                tracing::info!(
                    cm,
                    entries = l.entries.len(),
                    committed = ?l.committed,
                    purged = ?l.last_purged,
                    "read the committed log"
                );
            }
            crate::replay::LogRead { cm, log }
        })
        .collect()
}

/// When the last fault of `run` was undone (offset from its start).
fn healed(run: &Run) -> Duration {
    run.history
        .lock()
        .map(|h| {
            h.partitions
                .iter()
                .map(|p| p.end)
                .chain(h.faults.iter().map(|f| f.end))
                .filter(|e| *e != Duration::MAX)
                .max()
                .unwrap_or_default()
        })
        .unwrap_or_default()
}

/// The bounds a pool run is held to: the longest election, twice the test election
/// timeout's maximum (followers refuse votes for a lease of the maximum after the last
/// heartbeat, then wait their own timeout: cm/src/raft/config.rs); one cycle (the interval and
/// delay of [`CM_ENV`] plus the longest committed cycle); the leader's lease (80% of the
/// shortest election timeout) plus a second for the access point's claims; and
/// [`CONVERGENCE`] for the collectors.
pub fn bounds(record: &PoolRecord) -> Bounds {
    let longest = record
        .cycles
        .iter()
        .map(|c| c.duration_seconds)
        .filter(|s| s.is_finite() && *s >= 0.0)
        .fold(0.0, f64::max);
    let (min, max) = aerie_tests::TEST_ELECTION_TIMEOUT
        .split_once('-')
        .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
        .unwrap_or((800, 1600));
    Bounds {
        election: Duration::from_millis(2 * max),
        cycle: CYCLE_GAP + Duration::from_secs_f64(longest.min(600.0)),
        grant_slack: Duration::from_millis(min * 8 / 10) + Duration::from_secs(1),
        convergence: CONVERGENCE,
    }
}

/// What the pool did, for `results.json`: claims, releases and refusals from the claims log,
/// the committed cycles, the longest window without a completed cycle from the first fault
/// on, and how long after each leader loss the next cycle completed.
pub fn summary(h: &crate::history::History, record: &PoolRecord) -> serde_json::Value {
    let mut audit = aerie_node::check::Summary::default();
    aerie_node::check::check_text(Path::new("claims.log"), &record.claims_log, &mut audit);
    let first_fault = h
        .partitions
        .iter()
        .map(|p| p.start)
        .chain(h.faults.iter().map(|f| f.start))
        .min()
        .unwrap_or_default();
    let until = h.ops.iter().map(|op| op.complete).max().unwrap_or_default();
    let (gap, gap_from) = crate::checker_pool::longest_without_cycle(
        &record.cycles,
        record.origin_ms,
        first_fault,
        until,
    );
    let failovers: Vec<serde_json::Value> =
        crate::checker_pool::failover_times(h, &record.cycles, record.origin_ms)
            .into_iter()
            .map(|(loss, after)| {
                serde_json::json!({
                    "at_ms": loss.at.as_millis() as u64, "leader": loss.leader,
                    "term": loss.term, "fault": loss.what,
                    "next_cycle_ms": after.map(|d| d.as_millis() as u64),
                })
            })
            .collect();
    let jobs = record
        .jobs
        .as_ref()
        .map(|j| crate::checker_jobs::summary(j, &crate::checker_jobs::runs(&j.events)));
    serde_json::json!({
        "jobs": jobs,
        "claims": audit.claims,
        "releases": audit.releases,
        "refusals": audit.refusals,
        "cycles": record.cycles.len(),
        "terms": record.cycles.iter().map(|c| c.term).collect::<BTreeSet<_>>().len(),
        "longest_without_cycle_ms": gap.as_millis() as u64,
        "longest_without_cycle_from_ms": gap_from.as_millis() as u64,
        "failovers": failovers,
    })
}

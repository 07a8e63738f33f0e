//! Named scenarios and the run that plays one: the network, the CMs, the workload under the
//! scenario's nemesis schedule, the final reads through every CM, and the checkers' verdict.
//! The tests and `jepsen/run` both go through [`execute`].

use crate::checker::{unavailability, Report};
use crate::clock::Clocks;
use crate::disk::Disks;
use crate::history::History;
use crate::net::Net;
use crate::workload::{flapping, Run, Step, Target};
use aerie_tests::{eventually, limits, wait_leader};
use anyhow::{anyhow, bail};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

/// The scenarios [`plan`] knows, with what each does.
pub const SCENARIOS: &[(&str, &str)] = &[
    (
        "isolate-leader",
        "3 CMs: the leader cut off from both followers",
    ),
    ("isolate-follower", "3 CMs: one follower cut off"),
    (
        "flapping",
        "3 CMs: a random CM isolated 2-4 s, healed 1-2 s, again",
    ),
    ("kill-leader", "3 CMs: kill -9 the leader, restart it"),
    ("kill-follower", "3 CMs: kill -9 a follower, restart it"),
    ("pause-leader", "3 CMs: SIGSTOP the leader, SIGCONT it"),
    (
        "disk-full-leader",
        "3 CMs on tmpfs: fill the leader's disk, kill -9 it, free, restart",
    ),
    (
        "halves",
        "5 CMs: the leader and one more cut from the other three",
    ),
    (
        "bridge",
        "5 CMs: the leader and one more cut from two others, a fifth seeing both sides",
    ),
    (
        "ring",
        "5 CMs on a random ring: each sees itself and its two neighbours, a different majority",
    ),
    (
        "mixed",
        "3 CMs: random isolations, kills and pauses of random CMs, CMs added, removed and \
         replaced during them",
    ),
    (
        "disk-stall-leader",
        "3 CMs on slow-fsync FUSE mounts: every sync of the leader's disk delayed 2-5 s, then \
         fast, again",
    ),
    (
        "clock-jump-leader",
        "3 CMs under libfaketime: the leader's wall clock jumps 1 min-1 h forward, back, again",
    ),
    (
        "clock-skew",
        "3 CMs under libfaketime: one CM's wall clock 1 min-1 h off for the whole run",
    ),
    (
        "membership",
        "3 CMs: add a 4th while one is killed, replace one while it is cut off, remove one \
         while it is paused",
    ),
    (
        "pool-mixed",
        "3 CMs and a simulated pool negotiating: isolations, kills and pauses of the leader",
    ),
    (
        "pool-clock-jump-leader",
        "3 CMs under libfaketime and a simulated pool negotiating: the leader's wall clock \
         jumps 1 min-1 h forward, back, again (the accountant under clock jumps)",
    ),
    (
        "pool-real",
        "3 CMs, 2 real execute nodes and a real access point running real jobs of 3 owners: \
         isolations, kills and pauses of the leader",
    ),
];

/// What to run: how many CMs, the nemesis schedule, how long to run healed after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The scenario's name.
    pub name: String,
    /// How many CMs.
    pub cms: u64,
    /// The nemesis schedule.
    pub steps: Vec<Step>,
    /// Workload time after every fault is undone.
    pub tail: Duration,
    /// Whether each CM's data directory is a file system of its own ([`crate::disk`]).
    pub disks: bool,
    /// CMs the schedule may add ([`Step::AddMember`]), ids `cms+1..=cms+spares`: each gets
    /// a namespace and a client from the start (answering nothing until started).
    pub spares: u64,
    /// Whether each CM's data directory is a slow-fsync file system ([`crate::stall`]).
    pub stalls: bool,
    /// Whether the CMs run under libfaketime ([`crate::clock`]), and each one's clock
    /// offset from its start in seconds (absent: 0).
    pub clocks: Option<BTreeMap<u64, i64>>,
    /// Whether a simulated pool negotiates through the run ([`crate::pool`]).
    pub pool: bool,
}

/// The schedule of scenario `name`, its faults lasting about `time`, random choices drawn
/// from `seed`.
pub fn plan(name: &str, seed: u64, time: Duration) -> anyhow::Result<Plan> {
    let hold = |fault: Step, undo: Step| vec![fault, Step::Sleep(time), undo];
    let (mut spares, mut clocks, mut stalls) = (0, None, false);
    let (cms, steps, disks) = match name {
        "clock-jump-leader" | "pool-clock-jump-leader" => {
            clocks = Some(BTreeMap::new());
            (3, crate::clock::jumps(seed, time), false)
        }
        "clock-skew" => {
            clocks = Some(crate::clock::skew(seed, 3));
            // The skew is there from the start; the schedule just lets it run.
            (3, vec![Step::Sleep(time)], false)
        }
        "disk-stall-leader" => {
            stalls = true;
            (3, crate::stall::leader_stalls(seed, time), false)
        }
        "membership" => {
            spares = 2;
            (3, membership(3, time), false)
        }
        "isolate-leader" => (3, hold(Step::Isolate(Target::Leader), Step::Heal), false),
        "isolate-follower" => (3, hold(Step::Isolate(Target::Follower), Step::Heal), false),
        "flapping" => (3, flapping(seed, 3, time), false),
        "kill-leader" => (3, hold(Step::Kill(Target::Leader), Step::Restart), false),
        "kill-follower" => (3, hold(Step::Kill(Target::Follower), Step::Restart), false),
        "pause-leader" => (3, hold(Step::Pause(Target::Leader), Step::Resume), false),
        "disk-full-leader" => (
            3,
            hold(Step::FillDisk(Target::Leader), Step::FreeDisk),
            true,
        ),
        "halves" => (5, hold(Step::Halves(Target::Leader), Step::Heal), false),
        "bridge" => (5, hold(Step::Bridge(Target::Leader), Step::Heal), false),
        "ring" => (5, hold(Step::Ring(seed), Step::Heal), false),
        "mixed" => {
            let steps = mixed(seed, 3, time);
            spares = steps
                .iter()
                .filter(|s| matches!(s, Step::AddMember(_)))
                .count() as u64;
            (3, steps, false)
        }
        "pool-mixed" | "pool-real" => (3, crate::pool::leader_faults(seed, time), false),
        _ => bail!(
            "no scenario {name:?}; the scenarios are: {}",
            SCENARIOS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Ok(Plan {
        name: name.into(),
        cms,
        steps,
        tail: Duration::from_secs(5),
        disks,
        stalls,
        spares,
        clocks,
        pool: name.starts_with("pool-"),
    })
}

/// The membership schedule of `n` CMs (adding CMs `n+1` and `n+2`), each change made while
/// another fault is in place, the faults held about `time / 3` each: a follower killed, CM
/// `n+1` added, the follower restarted; a follower cut off and replaced by CM `n+2` (removed,
/// a fresh CM added), healed; a follower paused and removed. The cluster ends with `n`
/// members.
pub fn membership(n: u64, time: Duration) -> Vec<Step> {
    let hold = (time / 3).max(Duration::from_secs(1));
    let settle = Duration::from_secs(1);
    vec![
        Step::Kill(Target::Follower),
        Step::Sleep(settle),
        Step::AddMember(n + 1),
        Step::Sleep(hold),
        Step::Restart,
        Step::Sleep(settle),
        Step::Isolate(Target::Follower),
        Step::Sleep(settle),
        Step::RemoveMember(Target::Follower),
        Step::AddMember(n + 2),
        Step::Sleep(hold),
        Step::Heal,
        Step::Sleep(settle),
        Step::Pause(Target::Follower),
        Step::Sleep(settle),
        Step::RemoveMember(Target::Follower),
        Step::Sleep(hold),
        Step::Resume,
    ]
}

/// A mixed schedule over `total`, replayable from `seed`: one fault at a time (isolate, kill
/// or pause a random member, or the leader) for 2-5 s, undone, 1-3 s of calm; during half
/// the faults, 1 s in, a membership change as [`membership`] makes them: a CM added (new ids
/// from `n+1`, while fewer than 5 are members), one removed (a follower, preferably the one
/// that is down, while more than 3 are members) or replaced (removed, a new one added: also
/// while more than 3). Removals keep at least 3 members, so a fault on one of them still
/// leaves a quorum for the joint configuration (with 3 members, one down, removing a healthy
/// follower would need the down one).
pub fn mixed(seed: u64, n: u64, total: Duration) -> Vec<Step> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut steps = Vec::new();
    let mut t = Duration::ZERO;
    let (mut members, mut next) = (n, n + 1);
    while t < total {
        let target = if rng.gen_bool(0.5) {
            Target::Leader
        } else {
            Target::Member(rng.gen_range(0..5))
        };
        let (fault, undo) = match rng.gen_range(0..3) {
            0 => (Step::Isolate(target), Step::Heal),
            1 => (Step::Kill(target), Step::Restart),
            _ => (Step::Pause(target), Step::Resume),
        };
        let on = Duration::from_millis(rng.gen_range(2000..5000));
        let off = Duration::from_millis(rng.gen_range(1000..3000));
        steps.push(fault);
        if rng.gen_bool(0.5) {
            let settle = Duration::from_secs(1);
            let add = Step::AddMember(next);
            let remove = Step::RemoveMember(Target::Follower);
            let change = match rng.gen_range(0..3) {
                0 if members < 5 => vec![add],
                1 if members > 3 => vec![remove],
                2 if members > 3 => vec![remove, add],
                _ if members < 5 => vec![add],
                _ => vec![remove],
            };
            for s in &change {
                match s {
                    Step::AddMember(_) => (members, next) = (members + 1, next + 1),
                    _ => members -= 1,
                }
            }
            steps.push(Step::Sleep(settle));
            steps.extend(change);
            t += settle;
        }
        steps.extend([Step::Sleep(on), undo, Step::Sleep(off)]);
        t += on + off;
    }
    steps
}

/// What a run recorded and what the checkers made of it.
pub struct Outcome {
    /// The history.
    pub history: History,
    /// Each CM's limits, read linearizably through it after every fault was undone.
    pub finals: Vec<(u64, BTreeMap<String, f64>)>,
    /// The checkers' verdict.
    pub report: Report,
    /// The longest window with no acknowledged write from the first fault on, and its start.
    pub unavailable: (Duration, Duration),
    /// Every CM's log, by id.
    pub logs: BTreeMap<u64, String>,
    /// What the pool recorded, in a pool scenario.
    pub pool: Option<crate::checker_pool::PoolRecord>,
    /// What each CM's slow file system logged (every delayed sync), in a disk-stall scenario.
    pub disk_logs: BTreeMap<u64, String>,
}

impl Outcome {
    /// A few lines for people: faults, samples, operation counts, unavailability and every
    /// checker's verdict.
    pub fn summary(&self) -> String {
        let (ok, fail, unknown) = self.history.counts();
        format!(
            "{} partitions, {} process/disk/clock/membership faults, {} status samples, \
             operations ok {ok} \
             fail {fail} unknown {unknown}, longest window without an acknowledged write \
             {:?} (from {:?})\n{}",
            self.history.partitions.len(),
            self.history.faults.len(),
            self.history.samples.len(),
            self.unavailable.0,
            self.unavailable.1,
            self.report.render()
        )
    }
}

/// Plays `plan` with the CM binary `daemon`: builds the network and the CMs, waits for a
/// leader, runs one client per CM and the sampler for 2 s, then the nemesis, then `tail` more;
/// reads every CM's final state and checks the history. An error (the harness could not run
/// the scenario) carries every CM's log.
///
/// With [`Plan::pool`], a simulated pool (`aerie-jepsen-node` beside `daemon`) negotiates
/// through the run and the checkers of [`crate::checker_pool`] judge it too.
pub fn execute(plan: &Plan, daemon: PathBuf) -> anyhow::Result<Outcome> {
    let mut net = Net::create(plan.cms + plan.spares)?;
    if plan.pool {
        net.add_pool()?;
    }
    let clocks = match &plan.clocks {
        Some(skews) => Some(Clocks::new(1..=plan.cms, skews)?),
        None => None,
    };
    let mut disks = if plan.disks {
        Some(Disks::new()?)
    } else if plan.stalls {
        Some(Disks::slow(daemon.with_file_name("aerie-jepsen-slowfs"))?)
    } else {
        None
    };
    let node_bin = daemon.with_file_name("aerie-jepsen-node");
    let env: &[(&str, &str)] = if plan.pool { crate::pool::CM_ENV } else { &[] };
    let cluster =
        crate::start_cluster_with(&net, daemon, plan.cms, disks.as_mut(), clocks.as_ref(), env)?;
    let pool = if plan.pool {
        let start = match plan.name.as_str() {
            "pool-real" => crate::pool::Pool::start_real,
            _ => crate::pool::Pool::start,
        };
        Some(start(&net, &node_bin, plan.cms, 7)?)
    } else {
        None
    };
    let cycles = crate::pool::Cycles::default();
    let cluster = Mutex::new(cluster);
    let cms: Vec<(u64, String)> = (1..=plan.cms + plan.spares)
        .map(|id| (id, Net::cm_addr(id)))
        .collect();
    let result = net.run_client(|| async {
        wait_leader(&cms[..plan.cms as usize], Duration::from_secs(30)).await?;
        let run = Run::new(cms.clone());
        if let Some(skews) = &plan.clocks {
            crate::clock::record_skews(&run, skews);
        }
        // The history's time zero in Unix ms, for the pool's Unix-time records.
        let origin_ms =
            crate::pool::unix_ms().saturating_sub(run.start.elapsed().as_millis() as u64);
        let clients = futures_join_all((0..cms.len()).map(|p| run.client(p)).collect());
        let (nemesis, _, _, _, _) = tokio::join!(
            async {
                // Let the sampler see a leader before the first fault.
                tokio::time::sleep(Duration::from_secs(2)).await;
                run.nemesis(&net, &cluster, &plan.steps, plan.tail).await
            },
            run.sampler(),
            clients,
            async {
                if pool.is_some() {
                    crate::pool::watch_cycles(&run, &cycles).await
                }
            },
            async {
                if let Some(p) = &pool {
                    p.workload(&run).await
                }
            },
        );
        nemesis?;
        // The final reads go through every CM that is a member at the end.
        let members: Vec<(u64, String)> = run
            .current_members(&cluster)?
            .into_iter()
            .map(|id| (id, Net::cm_addr(id)))
            .collect();
        wait_leader(&members, Duration::from_secs(30)).await?;
        let mut finals = Vec::new();
        for (id, addr) in &members {
            let m = eventually(
                &format!("a linearizable read via CM {id}"),
                Duration::from_secs(30),
                || async { limits(addr, false).await.map(Some) },
            )
            .await?;
            finals.push((*id, m));
        }
        let record = match &pool {
            Some(p) => Some(crate::pool::settle(&run, p, &cycles, origin_ms).await?),
            None => None,
        };
        let history = run
            .history
            .into_inner()
            .map_err(|_| anyhow!("history poisoned"))?;
        Ok((history, finals, record))
    });
    let mut cluster = cluster
        .into_inner()
        .map_err(|_| anyhow!("the cluster is poisoned"))?;
    let logs: BTreeMap<u64, String> = cluster
        .ids()
        .into_iter()
        .map(|id| (id, cluster.log(id)))
        .collect();
    let (history, finals, record) = result.map_err(|e| {
        anyhow!(
            "jepsen run {} failed: {e:#}\n{}{}",
            plan.name,
            logs.iter()
                .map(|(id, log)| format!("--- CM {id} log ---\n{log}"))
                .collect::<String>(),
            pool.as_ref()
                .map(|p| format!("--- pool log ---\n{}", p.log()))
                .unwrap_or_default()
        )
    })?;
    let mut record = record;
    if let Some(r) = record.as_mut() {
        let ids: Vec<u64> = finals.iter().map(|(id, _)| *id).collect();
        r.logs = crate::pool::read_logs(&mut cluster, &ids);
    }
    drop(pool);
    drop(cluster);
    let disk_logs = match &disks {
        Some(d) if plan.stalls => (1..=plan.cms).map(|id| (id, d.log(id))).collect(),
        _ => BTreeMap::new(),
    };
    drop(disks);
    drop(clocks);
    drop(net);
    let mut report = Report::check(&history, &finals);
    if let Some(r) = &record {
        let until = history.ops.iter().map(|op| op.complete).max();
        let until = until.unwrap_or_default();
        let bounds = crate::pool::bounds(r);
        crate::checker_pool::check(&history, r, bounds, until, &mut report.checks);
    }
    let first_fault = history
        .partitions
        .iter()
        .map(|p| p.start)
        .chain(history.faults.iter().map(|f| f.start))
        .min()
        .unwrap_or_default();
    let unavailable = unavailability(&history, first_fault);
    Ok(Outcome {
        history,
        finals,
        report,
        unavailable,
        logs,
        pool: record,
        disk_logs,
    })
}

/// Awaits every future of `futs` concurrently on the current task.
async fn futures_join_all<F: std::future::Future<Output = ()>>(futs: Vec<F>) {
    let mut futs: Vec<std::pin::Pin<Box<F>>> = futs.into_iter().map(Box::pin).collect();
    std::future::poll_fn(|cx| {
        futs.retain_mut(|f| f.as_mut().poll(cx).is_pending());
        if futs.is_empty() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_scenario_has_a_plan_and_unknown_names_are_refused() {
        for (name, _) in SCENARIOS {
            let p = plan(name, 1, Duration::from_secs(10)).unwrap();
            assert!(!p.steps.is_empty(), "{name}");
            assert!(p.cms == 3 || p.cms == 5, "{name}");
            assert_eq!(
                p.spares,
                p.steps
                    .iter()
                    .filter(|s| matches!(s, Step::AddMember(_)))
                    .count() as u64,
                "{name}"
            );
        }
        let e = plan("nope", 1, Duration::from_secs(1)).unwrap_err();
        assert!(format!("{e}").contains("kill-leader"), "{e}");
    }

    #[test]
    fn a_mixed_schedule_keeps_three_to_five_members_and_adds_fresh_ids_in_order() {
        for seed in 0..200 {
            let (mut members, mut next) = (3, 4);
            for s in mixed(seed, 3, Duration::from_secs(60)) {
                match s {
                    Step::AddMember(id) => {
                        assert_eq!(id, next, "seed {seed}");
                        (members, next) = (members + 1, next + 1);
                    }
                    Step::RemoveMember(t) => {
                        assert_eq!(t, Target::Follower, "seed {seed}");
                        members -= 1;
                    }
                    _ => {}
                }
                assert!((3..=5).contains(&members), "seed {seed}: {members} members");
            }
        }
    }

    #[test]
    fn a_mixed_schedule_is_replayed_from_its_seed_and_undoes_every_fault() {
        let a = mixed(3, 3, Duration::from_secs(60));
        assert_eq!(a, mixed(3, 3, Duration::from_secs(60)));
        assert_ne!(a, mixed(4, 3, Duration::from_secs(60)));
        let count = |f: fn(&Step) -> bool| a.iter().filter(|s| f(s)).count();
        assert_eq!(
            count(|s| matches!(s, Step::Kill(_))),
            count(|s| matches!(s, Step::Restart))
        );
        assert_eq!(
            count(|s| matches!(s, Step::Pause(_))),
            count(|s| matches!(s, Step::Resume))
        );
        assert_eq!(
            count(|s| matches!(s, Step::Isolate(_))),
            count(|s| matches!(s, Step::Heal))
        );
        // Every kind shows up in a minute of faults.
        assert!(count(|s| matches!(s, Step::AddMember(_))) > 0);
        assert!(count(|s| matches!(s, Step::RemoveMember(_))) > 0);
        assert!(count(|s| matches!(s, Step::Kill(_))) > 0);
        assert!(count(|s| matches!(s, Step::Pause(_))) > 0);
        assert!(count(|s| matches!(s, Step::Isolate(_))) > 0);
    }
}

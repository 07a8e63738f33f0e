//! The workload and the nemesis of a run: clients that write fresh limits and read them back
//! linearizably through every CM, a sampler of every CM's role, and a nemesis that plays a
//! schedule of partitions (one CM isolated, halves, bridges), `kill -9` and restarts,
//! `SIGSTOP`/`SIGCONT` pauses and full disks; each records into one [`History`].
//!
//! The async shell here reads the clock (it is the thing being timed); what it records is
//! plain data for the pure checkers in [`crate::checker`].

use crate::history::{Fault, FaultKind, History, Op, OpKind, Outcome, Partition, Sample};
use crate::net::Net;
use aerie_tests::{limits, set_limit, status, write, Cluster};
use anyhow::{anyhow, bail, Context};
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a client waits for one operation before recording it as unknown.
pub const OP_TIMEOUT: Duration = Duration::from_secs(3);

/// Which CM a nemesis step acts on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// The CM that is leader when the step runs.
    Leader,
    /// A CM that is not leader when the step runs.
    Follower,
    /// This CM.
    Node(u64),
    /// The member at this index (modulo their count) among the CMs that are members when the
    /// step runs (sampled at least once, so started, and not removed): a random CM for
    /// schedules that also change the membership ([`crate::scenario::mixed`]).
    Member(usize),
}

/// One step of a nemesis schedule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// Cut one CM off from every other CM.
    Isolate(Target),
    /// Cut the CMs in two: the target and the next CM (by id) on the minority side, the rest
    /// on the other (2|3 with five CMs, 2|1 with three).
    Halves(Target),
    /// A bridge: the target and the next CM on one side, the CM after them in the middle, the
    /// rest on the other side; the middle sees both sides, the sides do not see each other.
    Bridge(Target),
    /// A random ring ([`crate::ring`], the shuffle drawn from this seed): every CM sees only
    /// itself and its ring neighbours, a different majority each.
    Ring(u64),
    /// Remove every cut.
    Heal,
    /// `kill -9` one CM.
    Kill(Target),
    /// Start every killed CM again on its data directory.
    Restart,
    /// `SIGSTOP` one CM.
    Pause(Target),
    /// `SIGCONT` every paused CM.
    Resume,
    /// Fill the file system of one CM's data directory (see [`crate::disk`]).
    FillDisk(Target),
    /// `kill -9` every CM whose disk was filled, free the space, and start it again on its
    /// files.
    FreeDisk,
    /// Delay every sync of one CM's data directory by this long (its data directory on a
    /// [`crate::stall`] file system).
    StallDisk(Target, Duration),
    /// Make the syncs of every stalled disk fast again.
    UnstallDisk,
    /// Let the workload run.
    Sleep(Duration),
    /// Set one CM's wall clock this many seconds off the true time (see [`crate::clock`]).
    Clock(Target, i64),
    /// Set right every clock a [`Step::Clock`] moved.
    ResetClocks,
    /// Start a new CM with this id on a fresh data directory and add it as a voter (see
    /// [`crate::membership`]).
    AddMember(u64),
    /// Remove a member (a follower: preferably one that is down) and stop it.
    RemoveMember(Target),
}

/// A flapping schedule over `total`, replayable from `seed`: isolate a random CM of `1..=n`
/// for 2-4 s, heal for 1-2 s, again, then heal.
pub fn flapping(seed: u64, n: u64, total: Duration) -> Vec<Step> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut steps = Vec::new();
    let mut t = Duration::ZERO;
    while t < total {
        let cut = Duration::from_millis(rng.gen_range(2000..4000));
        let whole = Duration::from_millis(rng.gen_range(1000..2000));
        steps.push(Step::Isolate(Target::Node(rng.gen_range(1..=n))));
        steps.push(Step::Sleep(cut));
        steps.push(Step::Heal);
        steps.push(Step::Sleep(whole));
        t += cut + whole;
    }
    steps
}

/// A run in progress: the CMs' addresses, the history and the clock's origin.
pub struct Run {
    /// CM id to gRPC address.
    pub cms: Vec<(u64, String)>,
    /// What was recorded so far.
    pub history: Mutex<History>,
    /// Time zero of the history.
    pub start: Instant,
    stop: AtomicBool,
}

impl Run {
    /// A run against `cms`, its clock starting now.
    pub fn new(cms: Vec<(u64, String)>) -> Run {
        Run {
            cms,
            history: Mutex::new(History::default()),
            start: Instant::now(),
            stop: AtomicBool::new(false),
        }
    }

    pub(crate) fn now(&self) -> Duration {
        self.start.elapsed()
    }

    /// Whether the run has stopped (the nemesis is done and its tail has passed).
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    pub(crate) fn record<F: FnOnce(&mut History)>(&self, f: F) {
        if let Ok(mut h) = self.history.lock() {
            f(&mut h);
        }
    }

    /// Client `process`: until the run stops, alternately writes a fresh limit and reads every
    /// limit, each time through the next CM in turn, one operation at a time.
    pub async fn client(&self, process: usize) {
        let mut seq = 0u64;
        while !self.stopped() {
            let (node, addr) = self.cms[(seq as usize + process) % self.cms.len()].clone();
            let invoke = self.now();
            let (kind, outcome) = if seq.is_multiple_of(2) {
                let name = format!("jepsen_p{process}_n{seq}");
                let value = (seq + 1) as f64;
                let outcome =
                    match tokio::time::timeout(OP_TIMEOUT, write(&addr, &set_limit(&name, value)))
                        .await
                    {
                        Ok(Ok(r)) if r.ok => Outcome::Ok(None),
                        Ok(Ok(r)) => Outcome::Fail(r.error),
                        Ok(Err(e)) => Outcome::Unknown(format!("{e:#}")),
                        Err(_) => Outcome::Unknown("timeout".into()),
                    };
                (OpKind::Write { name, value }, outcome)
            } else {
                let outcome = match tokio::time::timeout(OP_TIMEOUT, limits(&addr, false)).await {
                    Ok(Ok(m)) => Outcome::Ok(Some(m)),
                    // A read changes nothing: a failed one is simply a failure.
                    Ok(Err(e)) => Outcome::Fail(format!("{e:#}")),
                    Err(_) => Outcome::Fail("timeout".into()),
                };
                (OpKind::Read, outcome)
            };
            let failed = !matches!(outcome, Outcome::Ok(_));
            let complete = self.now();
            self.record(|h| {
                h.ops.push(Op {
                    process,
                    node,
                    kind,
                    invoke,
                    complete,
                    outcome,
                })
            });
            seq += 1;
            if failed {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }

    /// Samples every CM's term and role every 100 ms until the run stops.
    pub async fn sampler(&self) {
        while !self.stopped() {
            for (node, addr) in &self.cms {
                if let Ok(Ok(s)) =
                    tokio::time::timeout(Duration::from_millis(500), status(addr)).await
                {
                    let at = self.now();
                    self.record(|h| {
                        h.samples.push(Sample {
                            at,
                            node: *node,
                            term: s.term,
                            state: s.state,
                        })
                    });
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The CM the latest samples call leader in the highest term seen, if any.
    pub(crate) fn leader(&self) -> Option<u64> {
        let h = self.history.lock().ok()?;
        h.samples
            .iter()
            .filter(|s| s.state == "Leader")
            .max_by_key(|s| (s.term, s.at))
            .map(|s| s.node)
    }

    /// Plays `steps` on `net` and `cluster`, recording every fault, then undoes every fault
    /// still in place (heal, resume, restart, free) and stops the run after `tail` more of
    /// workload.
    pub async fn nemesis(
        &self,
        net: &Net,
        cluster: &Mutex<Cluster>,
        steps: &[Step],
        tail: Duration,
    ) -> anyhow::Result<()> {
        let mut undo = Undo::default();
        let mut result = Ok(());
        for step in steps {
            result = self.step(net, cluster, *step, &mut undo).await;
            if result.is_err() {
                break;
            }
        }
        let mut cleanup = Ok(());
        for step in [
            Step::Heal,
            Step::Resume,
            Step::FreeDisk,
            Step::UnstallDisk,
            Step::Restart,
            Step::ResetClocks,
        ] {
            let r = self.step(net, cluster, step, &mut undo).await;
            cleanup = cleanup.and(r);
        }
        if result.is_ok() && cleanup.is_ok() {
            tokio::time::sleep(tail).await;
        }
        self.stop.store(true, Ordering::SeqCst);
        result.and(cleanup)
    }

    /// The CM `target` names now.
    pub(crate) fn resolve(&self, target: Target) -> anyhow::Result<u64> {
        let leader = self.leader();
        Ok(match target {
            Target::Node(id) => id,
            Target::Member(k) => {
                let h = self
                    .history
                    .lock()
                    .map_err(|_| anyhow!("history poisoned"))?;
                let sampled: Vec<u64> = self
                    .cms
                    .iter()
                    .map(|(id, _)| *id)
                    .filter(|id| h.samples.iter().any(|s| s.node == *id))
                    .collect();
                let members = crate::membership::members(&sampled, &h.faults);
                if members.is_empty() {
                    bail!("no member sampled yet");
                }
                members[k % members.len()]
            }
            Target::Leader => leader.ok_or_else(|| anyhow!("no leader sampled yet"))?,
            Target::Follower => {
                // Not a CM removed from the cluster ([`crate::membership`]).
                let removed = |id: u64| {
                    self.history
                        .lock()
                        .is_ok_and(|h| crate::membership::members(&[id], &h.faults).is_empty())
                };
                self.cms
                    .iter()
                    .map(|(id, _)| *id)
                    .find(|id| Some(*id) != leader && !removed(*id))
                    .ok_or_else(|| anyhow!("no follower"))?
            }
        })
    }

    /// Every CM id, starting with `first` and going round by id.
    fn ring_from(&self, first: u64) -> Vec<u64> {
        let ids: Vec<u64> = self.cms.iter().map(|(id, _)| *id).collect();
        let at = ids.iter().position(|id| *id == first).unwrap_or(0);
        ids[at..].iter().chain(&ids[..at]).copied().collect()
    }

    fn cut(&self, shape: String, minority: Vec<u64>) {
        let start = self.now();
        tracing::info!(shape, ?start, "partitioned");
        self.record(|h| {
            h.partitions.push(Partition {
                shape,
                minority,
                start,
                end: Duration::MAX,
            })
        });
    }

    pub(crate) fn fault(&self, kind: FaultKind, node: u64) {
        let start = self.now();
        tracing::info!(?kind, node, ?start, "fault");
        self.record(|h| {
            h.faults.push(Fault {
                kind,
                node,
                start,
                end: Duration::MAX,
            })
        });
    }

    /// Ends the open faults of `kind` (every partition when `kind` is `None`) now.
    fn close(&self, kind: Option<FaultKind>) {
        let end = self.now();
        self.record(|h| match kind {
            None => {
                for p in h.partitions.iter_mut().filter(|p| p.end == Duration::MAX) {
                    p.end = end;
                }
            }
            Some(k) => {
                for f in h.faults.iter_mut().filter(|f| {
                    // Of the same kind, whatever its parameter (a stall's delay).
                    std::mem::discriminant(&f.kind) == std::mem::discriminant(&k)
                        && f.end == Duration::MAX
                }) {
                    f.end = end;
                }
            }
        });
    }

    async fn step(
        &self,
        net: &Net,
        cluster: &Mutex<Cluster>,
        step: Step,
        undo: &mut Undo,
    ) -> anyhow::Result<()> {
        let lock = || {
            cluster
                .lock()
                .map_err(|_| anyhow!("the cluster is poisoned"))
        };
        match step {
            Step::Sleep(d) => tokio::time::sleep(d).await,
            Step::Heal => {
                // The heal begins now: a write acknowledged after this may be legitimate.
                self.close(None);
                net.heal()?;
            }
            Step::Isolate(target) => {
                let id = self.resolve(target)?;
                net.isolate(id)?;
                self.cut(format!("isolate {id}"), vec![id]);
            }
            Step::Halves(target) => {
                let ring = self.ring_from(self.resolve(target)?);
                let (minority, majority) = ring.split_at(2.min(ring.len() / 2).max(1));
                net.split(minority, majority)?;
                self.cut(
                    format!("halves {minority:?} | {majority:?}"),
                    minority.to_vec(),
                );
            }
            Step::Bridge(target) => {
                let ring = self.ring_from(self.resolve(target)?);
                if ring.len() < 5 {
                    bail!("a bridge needs five CMs, not {}", ring.len());
                }
                let (a, middle, b) = (&ring[..2], ring[2], &ring[3..]);
                net.split(a, b)?;
                self.cut(format!("bridge {a:?} - {middle} - {b:?}"), Vec::new());
            }
            Step::Ring(seed) => {
                let ids: Vec<u64> = self.cms.iter().map(|(id, _)| *id).collect();
                let (order, cuts) = crate::ring::ring(seed, &ids);
                for (a, b) in &cuts {
                    net.cut(*a, *b)?;
                }
                self.cut(format!("ring {order:?}"), Vec::new());
            }
            Step::Kill(target) => {
                let id = self.resolve(target)?;
                lock()?.kill(id);
                undo.killed.push(id);
                self.fault(FaultKind::Kill, id);
            }
            Step::Restart => {
                for id in std::mem::take(&mut undo.killed) {
                    // Not a CM removed while it was down: an operator does not restart it.
                    if self.current_members(cluster)?.contains(&id) {
                        lock()?.restart(id)?;
                    }
                }
                self.close(Some(FaultKind::Kill));
            }
            Step::Pause(target) => {
                let id = self.resolve(target)?;
                lock()?.pause(id);
                undo.paused.push(id);
                self.fault(FaultKind::Pause, id);
            }
            Step::Resume => {
                for id in std::mem::take(&mut undo.paused) {
                    lock()?.resume(id);
                }
                self.close(Some(FaultKind::Pause));
            }
            Step::FillDisk(target) => {
                let id = self.resolve(target)?;
                let dir = lock()?.data_dir(id).to_path_buf();
                undo.filled.push((id, crate::disk::fill(&dir)?));
                self.fault(FaultKind::DiskFull, id);
            }
            Step::FreeDisk => {
                // A crash on a full disk, then a restart on the same files: what the CM
                // acknowledged must have been persisted.
                for (id, ballast) in std::mem::take(&mut undo.filled) {
                    lock()?.kill(id);
                    std::fs::remove_file(&ballast)
                        .with_context(|| format!("freeing {}", ballast.display()))?;
                    lock()?.restart(id)?;
                }
                self.close(Some(FaultKind::DiskFull));
            }
            Step::StallDisk(target, delay) => {
                let id = self.resolve(target)?;
                crate::stall::set_delay(lock()?.data_dir(id), delay)?;
                undo.stalled.push(id);
                self.fault(FaultKind::DiskStall(delay.as_millis() as u64), id);
            }
            Step::UnstallDisk => {
                for id in std::mem::take(&mut undo.stalled) {
                    crate::stall::set_delay(lock()?.data_dir(id), Duration::ZERO)?;
                }
                self.close(Some(FaultKind::DiskStall(0)));
            }
            Step::Clock(target, offset) => {
                self.jump_clock(cluster, target, offset, &mut undo.clocks)?
            }
            Step::ResetClocks => self.reset_clocks(cluster, &mut undo.clocks)?,
            Step::AddMember(id) => self.add_member(net, cluster, id).await?,
            Step::RemoveMember(target) => self.remove_member(cluster, target).await?,
        }
        Ok(())
    }
}

/// What the nemesis must undo at the end of a run.
#[derive(Default)]
struct Undo {
    killed: Vec<u64>,
    paused: Vec<u64>,
    filled: Vec<(u64, std::path::PathBuf)>,
    /// CMs whose disk a [`Step::StallDisk`] slowed.
    stalled: Vec<u64>,
    /// CMs whose clock a [`Step::Clock`] moved.
    clocks: Vec<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flapping_schedule_is_replayed_from_its_seed_and_always_heals() {
        let a = flapping(7, 3, Duration::from_secs(30));
        assert_eq!(a, flapping(7, 3, Duration::from_secs(30)));
        assert_ne!(a, flapping(8, 3, Duration::from_secs(30)));
        assert!(a.iter().all(|s| match s {
            Step::Isolate(Target::Node(id)) => (1..=3).contains(id),
            _ => true,
        }));
        let isolates = a.iter().filter(|s| matches!(s, Step::Isolate(_))).count();
        let heals = a.iter().filter(|s| matches!(s, Step::Heal)).count();
        assert_eq!(isolates, heals);
        assert!(isolates >= 6, "{isolates} partitions in 30 s");
    }
}

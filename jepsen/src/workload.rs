//! The workload and the nemesis of a run: clients that write fresh limits and read them back
//! linearizably through every CM, a sampler of every CM's role, and a nemesis that plays a
//! schedule of partitions; each records into one [`History`].
//!
//! The async shell here reads the clock (it is the thing being timed); what it records is
//! plain data for the pure checkers in [`crate::checker`].

use crate::history::{History, Op, OpKind, Outcome, Partition, Sample};
use crate::net::Net;
use aerie_tests::{limits, set_limit, status, write};
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a client waits for one operation before recording it as unknown.
pub const OP_TIMEOUT: Duration = Duration::from_secs(3);

/// Which CM a nemesis step isolates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// The CM that is leader when the step runs.
    Leader,
    /// A CM that is not leader when the step runs.
    Follower,
    /// This CM.
    Node(u64),
}

/// One step of a nemesis schedule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// Cut one CM off from every other CM.
    Isolate(Target),
    /// Remove every cut.
    Heal,
    /// Let the workload run.
    Sleep(Duration),
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

    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    fn record<F: FnOnce(&mut History)>(&self, f: F) {
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
    fn leader(&self) -> Option<u64> {
        let h = self.history.lock().ok()?;
        h.samples
            .iter()
            .filter(|s| s.state == "Leader")
            .max_by_key(|s| (s.term, s.at))
            .map(|s| s.node)
    }

    /// Plays `steps` on `net`, recording every partition, then heals and stops the run after
    /// `tail` more of workload.
    pub async fn nemesis(&self, net: &Net, steps: &[Step], tail: Duration) -> anyhow::Result<()> {
        let result = self.play(net, steps).await;
        let healed = net.heal();
        self.close_partition();
        if result.is_ok() && healed.is_ok() {
            tokio::time::sleep(tail).await;
        }
        self.stop.store(true, Ordering::SeqCst);
        result.and(healed)
    }

    async fn play(&self, net: &Net, steps: &[Step]) -> anyhow::Result<()> {
        for step in steps {
            match *step {
                Step::Sleep(d) => tokio::time::sleep(d).await,
                Step::Heal => {
                    self.close_partition();
                    net.heal()?;
                }
                Step::Isolate(target) => {
                    let leader = self.leader();
                    let id = match target {
                        Target::Node(id) => id,
                        Target::Leader => {
                            leader.ok_or_else(|| anyhow::anyhow!("no leader sampled yet"))?
                        }
                        Target::Follower => self
                            .cms
                            .iter()
                            .map(|(id, _)| *id)
                            .find(|id| Some(*id) != leader)
                            .ok_or_else(|| anyhow::anyhow!("no follower"))?,
                    };
                    net.isolate(id)?;
                    let start = self.now();
                    tracing::info!(id, ?start, "isolated");
                    self.record(|h| {
                        h.partitions.push(Partition {
                            isolated: id,
                            start,
                            end: Duration::MAX,
                        })
                    });
                }
            }
        }
        Ok(())
    }

    /// Ends the open partition (if any) now, before its cuts are removed.
    fn close_partition(&self) {
        let end = self.now();
        self.record(|h| {
            if let Some(p) = h.partitions.last_mut().filter(|p| p.end == Duration::MAX) {
                p.end = end;
            }
        });
    }
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

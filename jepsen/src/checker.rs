//! Checkers over a [`History`]: each returns the violations it found (empty: the property
//! holds), naming the operations or samples at fault.
//!
//! They check the DESIGN invariants a partition puts at risk: no acknowledged write is lost,
//! at most one leader per term (HTCondor's HAD, src/condor_had/HADStateMachine.cpp, can run two
//! negotiators on a partition: this is the property it lacks), linearizable reads never miss a
//! write acknowledged before they began nor go back behind an earlier read, and a minority
//! never commits. Every write names a fresh limit, so "saw write W" is "the read's map holds
//! W's name with W's value", and no search over orders is needed.

use crate::history::{History, Op, OpKind, Outcome};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// The acknowledged writes: name to value.
fn acked_writes(h: &History) -> Vec<(&Op, &str, f64)> {
    h.ops
        .iter()
        .filter(|op| op.is_ok())
        .filter_map(|op| match &op.kind {
            OpKind::Write { name, value } => Some((op, name.as_str(), *value)),
            OpKind::Read => None,
        })
        .collect()
}

/// No lost write: every acknowledged write is in every final state (one map per CM, read
/// linearizably after healing).
pub fn lost_writes(h: &History, finals: &[(u64, BTreeMap<String, f64>)]) -> Vec<String> {
    let mut v = Vec::new();
    for (op, name, value) in acked_writes(h) {
        for (node, state) in finals {
            if state.get(name) != Some(&value) {
                v.push(format!(
                    "write {name}={value} acknowledged by CM {} at {:?} is {:?} on CM {node} after healing",
                    op.node,
                    op.complete,
                    state.get(name)
                ));
            }
        }
    }
    v
}

/// At most one leader per term: no two CMs ever reported `Leader` in the same term.
pub fn two_leaders(h: &History) -> Vec<String> {
    let mut leaders: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for s in h.samples.iter().filter(|s| s.state == "Leader") {
        leaders.entry(s.term).or_default().insert(s.node);
    }
    leaders
        .into_iter()
        .filter(|(_, ids)| ids.len() > 1)
        .map(|(term, ids)| format!("term {term} had leaders {ids:?}"))
        .collect()
}

/// When a name must be visible to every read sent later, the value it must have if known, and
/// what set that time.
type Due = (Duration, Option<f64>, String);

/// Reads never go backwards: an acknowledged read sees every write acknowledged before it was
/// sent, and everything an earlier acknowledged read (completed before it was sent) saw.
///
/// Each name gets a deadline, the earliest of its write's acknowledgement and the completion of
/// the first read that saw it; a read sent after a name's deadline must hold that name (with
/// the acknowledged value, when the write was acknowledged). Linear in reads times names.
pub fn stale_reads(h: &History) -> Vec<String> {
    let reads: Vec<(&Op, &BTreeMap<String, f64>)> = h
        .ops
        .iter()
        .filter_map(|op| match (&op.kind, &op.outcome) {
            (OpKind::Read, Outcome::Ok(Some(m))) => Some((op, m)),
            _ => None,
        })
        .collect();
    let mut due: BTreeMap<&str, Due> = BTreeMap::new();
    for (w, name, value) in acked_writes(h) {
        due.insert(
            name,
            (
                w.complete,
                Some(value),
                format!("acknowledged at {:?}", w.complete),
            ),
        );
    }
    for (r, seen) in &reads {
        for k in seen.keys() {
            let why = format!("seen by a read via CM {} done at {:?}", r.node, r.complete);
            let e = due
                .entry(k.as_str())
                .or_insert((r.complete, None, why.clone()));
            if r.complete < e.0 {
                e.0 = r.complete;
                e.2 = why;
            }
        }
    }
    let mut order: Vec<(&str, &Due)> = due.iter().map(|(k, v)| (*k, v)).collect();
    order.sort_by_key(|(_, (t, _, _))| *t);
    let mut v = Vec::new();
    for (r, seen) in &reads {
        let n = order.partition_point(|(_, (t, _, _))| *t < r.invoke);
        for (name, (_, value, why)) in &order[..n] {
            let ok = match value {
                Some(x) => seen.get(*name) == Some(x),
                None => seen.contains_key(*name),
            };
            if !ok {
                v.push(format!(
                    "read via CM {} sent at {:?} misses {name} ({why}): it saw {:?}",
                    r.node,
                    r.invoke,
                    seen.get(*name)
                ));
            }
        }
    }
    v
}

/// A minority never commits: no write sent to a CM on the minority side of a partition while
/// it was cut off was acknowledged before the partition healed.
pub fn minority_commits(h: &History) -> Vec<String> {
    let mut v = Vec::new();
    for p in &h.partitions {
        for (op, name, value) in acked_writes(h) {
            if p.minority.contains(&op.node) && op.invoke >= p.start && op.complete <= p.end {
                v.push(format!(
                    "write {name}={value} via minority CM {} acknowledged at {:?}, inside the partition {} {:?}..{:?}",
                    op.node, op.complete, p.shape, p.start, p.end
                ));
            }
        }
    }
    v
}

/// The longest window of the run with no acknowledged write: from `from` (the run's first
/// fault, or its start) to the end of the history, the largest gap between consecutive write
/// acknowledgements (the gaps before the first and after the last included). Returns the gap
/// and where it began.
pub fn unavailability(h: &History, from: Duration) -> (Duration, Duration) {
    let end = h.ops.iter().map(|op| op.complete).max().unwrap_or(from);
    let mut acks: Vec<Duration> = acked_writes(h)
        .into_iter()
        .map(|(op, _, _)| op.complete)
        .filter(|t| *t >= from)
        .collect();
    acks.sort();
    let mut best = (Duration::ZERO, from);
    let mut last = from;
    for t in acks.into_iter().chain(std::iter::once(end.max(from))) {
        if t - last > best.0 {
            best = (t - last, last);
        }
        last = t;
    }
    best
}

/// Every checker's verdict on a run.
#[derive(Debug, Default)]
pub struct Report {
    /// Checker name to its violations.
    pub checks: BTreeMap<&'static str, Vec<String>>,
}

impl Report {
    /// Runs every checker over `h` and the post-heal states `finals`.
    pub fn check(h: &History, finals: &[(u64, BTreeMap<String, f64>)]) -> Report {
        let mut checks = BTreeMap::new();
        checks.insert("no-lost-write", lost_writes(h, finals));
        checks.insert("one-leader-per-term", two_leaders(h));
        checks.insert("linearizable-reads", stale_reads(h));
        checks.insert("linearizable-wgl", crate::linear::nonlinearizable(h));
        checks.insert("minority-never-commits", minority_commits(h));
        Report { checks }
    }

    /// Whether every checker passed.
    pub fn valid(&self) -> bool {
        self.checks.values().all(Vec::is_empty)
    }

    /// One line per checker, then its violations (at most 20 each).
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (name, v) in &self.checks {
            let verdict = if v.is_empty() { "ok" } else { "VIOLATED" };
            out.push_str(&format!("{name}: {verdict} ({} violations)\n", v.len()));
            for line in v.iter().take(20) {
                out.push_str(&format!("  {line}\n"));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Partition, Sample};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn write(node: u64, name: &str, value: f64, t: (u64, u64), outcome: Outcome) -> Op {
        Op {
            process: 0,
            node,
            kind: OpKind::Write {
                name: name.into(),
                value,
            },
            invoke: ms(t.0),
            complete: ms(t.1),
            outcome,
        }
    }

    fn read(node: u64, seen: &[(&str, f64)], t: (u64, u64)) -> Op {
        let m = seen.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        Op {
            process: 1,
            node,
            kind: OpKind::Read,
            invoke: ms(t.0),
            complete: ms(t.1),
            outcome: Outcome::Ok(Some(m)),
        }
    }

    fn state(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn an_acknowledged_write_missing_after_healing_is_lost() {
        let h = History {
            ops: vec![
                write(1, "a", 1.0, (0, 10), Outcome::Ok(None)),
                write(1, "b", 2.0, (0, 10), Outcome::Unknown("timeout".into())),
            ],
            ..Default::default()
        };
        assert!(lost_writes(&h, &[(1, state(&[("a", 1.0)]))]).is_empty());
        let v = lost_writes(&h, &[(1, state(&[("a", 1.0)])), (2, state(&[]))]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("CM 2"), "{v:?}");
        // A different value is as lost as no value.
        assert_eq!(lost_writes(&h, &[(1, state(&[("a", 9.0)]))]).len(), 1);
    }

    #[test]
    fn unavailability_is_the_longest_gap_between_acknowledged_writes() {
        let h = History {
            ops: vec![
                write(1, "a", 1.0, (0, 10), Outcome::Ok(None)),
                write(1, "b", 1.0, (10, 20), Outcome::Ok(None)),
                // Unacknowledged writes do not close a gap.
                write(1, "c", 1.0, (20, 900), Outcome::Unknown("timeout".into())),
                write(1, "d", 1.0, (20, 700), Outcome::Fail("no leader".into())),
                write(2, "e", 1.0, (600, 1000), Outcome::Ok(None)),
                write(2, "f", 1.0, (1000, 1100), Outcome::Ok(None)),
            ],
            ..Default::default()
        };
        assert_eq!(unavailability(&h, ms(0)), (ms(980), ms(20)));
        // Counted from the first fault: a gap ending in the history's end counts too.
        assert_eq!(unavailability(&h, ms(1050)), (ms(50), ms(1050)));
        let none = History {
            ops: vec![write(1, "a", 1.0, (0, 500), Outcome::Unknown("x".into()))],
            ..Default::default()
        };
        assert_eq!(unavailability(&none, ms(100)), (ms(400), ms(100)));
    }

    #[test]
    fn two_leaders_in_one_term_are_reported_and_successive_terms_are_not() {
        let s = |node, term, state: &str| Sample {
            at: ms(0),
            node,
            term,
            state: state.into(),
        };
        let mut h = History {
            samples: vec![s(1, 2, "Leader"), s(2, 2, "Follower"), s(2, 3, "Leader")],
            ..Default::default()
        };
        assert!(two_leaders(&h).is_empty());
        h.samples.push(s(3, 3, "Leader"));
        assert_eq!(
            two_leaders(&h),
            vec!["term 3 had leaders {2, 3}".to_string()]
        );
    }

    #[test]
    fn a_read_missing_an_earlier_acknowledged_write_is_stale() {
        let ok = History {
            ops: vec![
                write(1, "a", 1.0, (0, 10), Outcome::Ok(None)),
                // Concurrent with the write: may or may not see it.
                read(2, &[], (5, 20)),
                read(3, &[("a", 1.0)], (11, 30)),
            ],
            ..Default::default()
        };
        assert!(stale_reads(&ok).is_empty(), "{:?}", stale_reads(&ok));
        let bad = History {
            ops: vec![
                write(1, "a", 1.0, (0, 10), Outcome::Ok(None)),
                read(3, &[], (11, 30)),
            ],
            ..Default::default()
        };
        assert_eq!(stale_reads(&bad).len(), 1);
    }

    #[test]
    fn a_read_going_back_behind_an_earlier_read_is_stale() {
        // The write never got an answer, but a read saw it: a later read must see it too.
        let h = History {
            ops: vec![
                write(1, "a", 1.0, (0, 100), Outcome::Unknown("timeout".into())),
                read(2, &[("a", 1.0)], (10, 20)),
                read(3, &[], (30, 40)),
            ],
            ..Default::default()
        };
        let v = stale_reads(&h);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("misses a"), "{v:?}");
    }

    #[test]
    fn a_write_acknowledged_by_the_isolated_cm_inside_its_partition_is_a_minority_commit() {
        let mut h = History {
            ops: vec![
                // Before the cut, and through the majority during it: fine.
                write(1, "a", 1.0, (0, 10), Outcome::Ok(None)),
                write(2, "b", 2.0, (150, 160), Outcome::Ok(None)),
                // Through the isolated CM, refused or unanswered: fine.
                write(1, "c", 3.0, (150, 400), Outcome::Unknown("timeout".into())),
            ],
            partitions: vec![Partition {
                shape: "isolate 1".into(),
                minority: vec![1],
                start: ms(100),
                end: ms(300),
            }],
            ..Default::default()
        };
        assert!(minority_commits(&h).is_empty());
        h.ops
            .push(write(1, "d", 4.0, (150, 200), Outcome::Ok(None)));
        assert_eq!(minority_commits(&h).len(), 1);
        // A two-CM minority: a write through either of them counts.
        h.partitions[0].minority = vec![1, 3];
        h.ops
            .push(write(3, "e", 5.0, (150, 200), Outcome::Ok(None)));
        assert_eq!(minority_commits(&h).len(), 2);
        let r = Report::check(&h, &[]);
        assert!(!r.valid());
        assert!(r.render().contains("minority-never-commits: VIOLATED"));
    }
}

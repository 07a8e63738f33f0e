//! A general linearizability checker for the limits map, in the manner of Knossos and of
//! Wing & Gong's search as improved by Lowe (WGL; the algorithm Porcupine implements): for
//! each key, is there an order of the operations on it, each placed somewhere between its
//! invocation and its completion, in which every read returns the value of the write before
//! it?
//!
//! Linearizability is local (Herlihy & Wing): a history of a map of independent registers is
//! linearizable iff the sub-history of every key is, so each key is searched alone. A read of
//! the whole map is a read of every key that existed at some point in the run (absent: the
//! key's initial, empty value). A write that got no answer may have happened at any time after
//! it was sent, or never: its completion is at infinity and the search may leave it out. A
//! write refused for sure, and a read that got no answer, change nothing and are dropped.
//!
//! Unlike [`crate::checker::stale_reads`], which relies on every name being written once, this
//! search holds for registers written any number of times with any values.
//!
//! HTCondor's HA (src/condor_had/ReplicatorStateMachine.cpp) replicates the accountant's file
//! by copying it, with no such guarantee; DESIGN invariant 4 is that Aerie's admin reads and
//! writes are linearizable, and this is where that is checked.

use crate::history::{History, OpKind, Outcome};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::Duration;

/// A register's value: `None` before the first write, else the bits of the value written.
type Value = Option<u64>;

/// One operation on one register, as the search sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RegOp {
    /// Set the register to the value.
    Write(f64),
    /// Read the register and got this (`None`: absent).
    Read(Option<f64>),
}

/// One operation on one register with its interval; `complete` is `None` when it may take
/// effect at any time after `invoke` (a write that got no answer).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timed {
    /// What it did.
    pub op: RegOp,
    /// When it was sent.
    pub invoke: Duration,
    /// When it was acknowledged, if it was.
    pub complete: Option<Duration>,
}

/// Whether `ops` on one register starting empty have a linearization (WGL search with a cache
/// of the (linearized set, value) pairs already explored).
pub fn register_linearizable(ops: &[Timed]) -> bool {
    // Entries 0..n are calls, n..2n returns; a sentinel head at 2n.
    let n = ops.len();
    let head = 2 * n;
    let mut events: Vec<(Duration, bool, usize)> = Vec::with_capacity(2 * n);
    for (i, o) in ops.iter().enumerate() {
        events.push((o.invoke, false, i));
        events.push((o.complete.unwrap_or(Duration::MAX), true, n + i));
    }
    // By time; at equal times calls first (an operation sent at the instant another completed
    // is treated as concurrent with it: the lenient reading).
    events.sort_by_key(|&(t, is_return, _)| (t, is_return));
    let mut next = vec![usize::MAX; 2 * n + 1];
    let mut prev = vec![usize::MAX; 2 * n + 1];
    let mut last = head;
    for &(_, _, e) in &events {
        next[last] = e;
        prev[e] = last;
        last = e;
    }
    let words = n.div_ceil(64);
    let mut linearized = vec![0u64; words];
    let mut state: Value = None;
    let mut cache: HashSet<(Vec<u64>, Value)> = HashSet::new();
    let mut stack: Vec<(usize, Value)> = Vec::new();
    let unlink = |next: &mut Vec<usize>, prev: &mut Vec<usize>, e: usize| {
        let (p, q) = (prev[e], next[e]);
        next[p] = q;
        if q != usize::MAX {
            prev[q] = p;
        }
    };
    let relink = |next: &mut Vec<usize>, prev: &mut Vec<usize>, e: usize| {
        let (p, q) = (prev[e], next[e]);
        next[p] = e;
        if q != usize::MAX {
            prev[q] = e;
        }
    };
    let mut entry = next[head];
    while next[head] != usize::MAX {
        if entry == usize::MAX {
            // Only pending calls of unanswered writes remain past the last return: leaving
            // them out is a linearization.
            return true;
        }
        if entry < n {
            let after = match ops[entry].op {
                RegOp::Write(v) => Some(Some(v.to_bits())),
                RegOp::Read(r) => (r.map(f64::to_bits) == state).then_some(state),
            };
            if let Some(after) = after {
                let mut lin = linearized.clone();
                lin[entry / 64] |= 1 << (entry % 64);
                if cache.insert((lin.clone(), after)) {
                    stack.push((entry, state));
                    state = after;
                    linearized = lin;
                    unlink(&mut next, &mut prev, entry);
                    unlink(&mut next, &mut prev, n + entry);
                    entry = next[head];
                    continue;
                }
            }
            entry = next[entry];
        } else if ops[entry - n].complete.is_none() {
            // Every remaining return is an unanswered write's: none must be linearized.
            return true;
        } else {
            // A return whose call could not be placed: undo the last choice.
            let Some((e, s)) = stack.pop() else {
                return false;
            };
            state = s;
            linearized[e / 64] &= !(1 << (e % 64));
            relink(&mut next, &mut prev, n + e);
            relink(&mut next, &mut prev, e);
            entry = next[e];
        }
    }
    true
}

/// The operations of `h` on each key of the limits map.
pub fn per_key(h: &History) -> BTreeMap<String, Vec<Timed>> {
    let mut keys: BTreeSet<&str> = BTreeSet::new();
    for op in &h.ops {
        match (&op.kind, &op.outcome) {
            (OpKind::Write { name, .. }, _) => {
                keys.insert(name);
            }
            (OpKind::Read, Outcome::Ok(Some(m))) => keys.extend(m.keys().map(String::as_str)),
            _ => {}
        }
    }
    let mut out: BTreeMap<String, Vec<Timed>> =
        keys.iter().map(|k| (k.to_string(), Vec::new())).collect();
    for op in &h.ops {
        match (&op.kind, &op.outcome) {
            (OpKind::Write { name, value }, Outcome::Ok(_) | Outcome::Unknown(_)) => {
                if let Some(v) = out.get_mut(name) {
                    v.push(Timed {
                        op: RegOp::Write(*value),
                        invoke: op.invoke,
                        complete: op.is_ok().then_some(op.complete),
                    });
                }
            }
            (OpKind::Read, Outcome::Ok(Some(m))) => {
                for (k, v) in out.iter_mut() {
                    v.push(Timed {
                        op: RegOp::Read(m.get(k).copied()),
                        invoke: op.invoke,
                        complete: Some(op.complete),
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// The keys of the limits map whose operations in `h` have no linearization, each with what
/// was done to it.
pub fn nonlinearizable(h: &History) -> Vec<String> {
    per_key(h)
        .into_iter()
        .filter(|(_, ops)| !register_linearizable(ops))
        .map(|(k, ops)| {
            let writes: Vec<String> = ops
                .iter()
                .filter_map(|t| match t.op {
                    RegOp::Write(v) => Some(format!(
                        "{v} sent at {:?} ({})",
                        t.invoke,
                        t.complete
                            .map(|c| format!("acknowledged at {c:?}"))
                            .unwrap_or_else(|| "unanswered".into())
                    )),
                    RegOp::Read(_) => None,
                })
                .collect();
            format!(
                "key {k}: no linearization of its {} operations (writes: {})",
                ops.len(),
                writes.join("; ")
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn w(v: f64, a: u64, b: Option<u64>) -> Timed {
        Timed {
            op: RegOp::Write(v),
            invoke: ms(a),
            complete: b.map(ms),
        }
    }

    fn r(v: Option<f64>, a: u64, b: u64) -> Timed {
        Timed {
            op: RegOp::Read(v),
            invoke: ms(a),
            complete: Some(ms(b)),
        }
    }

    #[test]
    fn sequential_and_concurrent_histories_that_have_an_order_pass() {
        assert!(register_linearizable(&[]));
        assert!(register_linearizable(&[
            r(None, 0, 5),
            w(1.0, 10, Some(20)),
            r(Some(1.0), 30, 40),
            w(2.0, 50, Some(60)),
            r(Some(2.0), 70, 80),
        ]));
        // Reads concurrent with a write may see either value, in an order consistent with
        // one point for the write.
        assert!(register_linearizable(&[
            w(1.0, 10, Some(50)),
            r(None, 5, 20),
            r(Some(1.0), 15, 25),
            r(Some(1.0), 30, 40),
        ]));
        // Two concurrent writes: reads after both may see the one that went second.
        assert!(register_linearizable(&[
            w(1.0, 0, Some(100)),
            w(2.0, 0, Some(100)),
            r(Some(1.0), 110, 120),
            r(Some(1.0), 130, 140),
        ]));
    }

    #[test]
    fn an_unanswered_write_may_land_late_or_never() {
        assert!(register_linearizable(&[
            w(1.0, 0, None),
            r(None, 10, 20),
            r(Some(1.0), 500, 510),
            r(Some(1.0), 600, 610),
        ]));
        assert!(register_linearizable(&[w(1.0, 0, None), r(None, 10, 20)]));
        // But once seen it cannot be unseen.
        assert!(!register_linearizable(&[
            w(1.0, 0, None),
            r(Some(1.0), 10, 20),
            r(None, 30, 40),
        ]));
    }

    #[test]
    fn known_bad_register_histories_fail() {
        // A read that misses a write acknowledged before it was sent.
        assert!(!register_linearizable(&[
            w(1.0, 0, Some(10)),
            r(None, 20, 30)
        ]));
        // A read that sees a value before its write was sent.
        assert!(!register_linearizable(&[
            r(Some(1.0), 0, 10),
            w(1.0, 20, Some(30))
        ]));
        // A value nobody wrote.
        assert!(!register_linearizable(&[
            w(1.0, 0, Some(10)),
            r(Some(7.0), 20, 30)
        ]));
        // Sequential writes read back in the wrong order.
        assert!(!register_linearizable(&[
            w(1.0, 0, Some(10)),
            w(2.0, 20, Some(30)),
            r(Some(1.0), 40, 50),
        ]));
        // Two concurrent reads may each see either value of a concurrent write, but reads in
        // sequence may not flip back.
        assert!(!register_linearizable(&[
            w(1.0, 0, Some(100)),
            r(Some(1.0), 10, 20),
            r(None, 30, 40),
        ]));
        // Concurrent writes, then sequential reads that disagree on which came last.
        assert!(!register_linearizable(&[
            w(1.0, 0, Some(100)),
            w(2.0, 0, Some(100)),
            r(Some(1.0), 110, 120),
            r(Some(2.0), 130, 140),
        ]));
    }

    #[test]
    fn a_history_of_the_limits_map_is_checked_key_by_key() {
        use crate::history::{Op, OpKind, Outcome};
        let op = |kind, t: (u64, u64), outcome| Op {
            process: 0,
            node: 1,
            kind,
            invoke: ms(t.0),
            complete: ms(t.1),
            outcome,
        };
        let wr = |name: &str, value| OpKind::Write {
            name: name.into(),
            value,
        };
        let seen = |pairs: &[(&str, f64)]| {
            Outcome::Ok(Some(
                pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ))
        };
        let mut h = History {
            ops: vec![
                op(wr("a", 1.0), (0, 10), Outcome::Ok(None)),
                op(wr("b", 2.0), (0, 500), Outcome::Unknown("timeout".into())),
                op(wr("c", 3.0), (0, 5), Outcome::Fail("not leader".into())),
                op(OpKind::Read, (20, 30), seen(&[("a", 1.0)])),
                op(OpKind::Read, (40, 50), seen(&[("a", 1.0), ("b", 2.0)])),
                // A read that got no answer changes nothing.
                op(OpKind::Read, (40, 50), Outcome::Fail("timeout".into())),
            ],
            ..Default::default()
        };
        assert!(nonlinearizable(&h).is_empty(), "{:?}", nonlinearizable(&h));
        // b, once seen, goes missing; c, refused, shows up.
        h.ops.push(op(OpKind::Read, (60, 70), seen(&[("a", 1.0)])));
        h.ops
            .push(op(OpKind::Read, (80, 90), seen(&[("a", 1.0), ("c", 3.0)])));
        let v = nonlinearizable(&h);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].starts_with("key b:"), "{v:?}");
        assert!(v[1].starts_with("key c:"), "{v:?}");
    }
}

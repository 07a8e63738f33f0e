//! What `jepsen/run` writes for a run: the history as JSON lines (one operation, partition,
//! fault or status sample a line, times in milliseconds from the run's start) and
//! `results.json`, the checkers' verdicts, counts and the measured unavailability, in the
//! shape issue 17 asks for (`{"valid", "seed", "invariants": {name: {"valid", ...}},
//! "faults": {kind: n}, "operations": {"ok", "fail", "unknown"}}`).

use crate::history::{FaultKind, History, OpKind, Outcome as OpOutcome};
use crate::scenario::{Outcome, Plan};
use serde_json::{json, Value};
use std::time::Duration;

fn ms(d: Duration) -> Value {
    if d == Duration::MAX {
        Value::Null
    } else {
        json!(d.as_secs_f64() * 1000.0)
    }
}

/// One JSON value per event of `h`, in the order operations, partitions, faults, samples.
pub fn history_lines(h: &History) -> Vec<Value> {
    let mut out = Vec::new();
    for op in &h.ops {
        let (f, name, value) = match &op.kind {
            OpKind::Write { name, value } => ("write", Some(name.clone()), Some(*value)),
            OpKind::Read => ("read", None, None),
        };
        let (kind, detail) = match &op.outcome {
            OpOutcome::Ok(Some(m)) => ("ok", json!(m)),
            OpOutcome::Ok(None) => ("ok", Value::Null),
            OpOutcome::Fail(e) => ("fail", json!(e)),
            OpOutcome::Unknown(e) => ("unknown", json!(e)),
        };
        out.push(json!({
            "type": kind, "f": f, "process": op.process, "node": op.node,
            "name": name, "value": value, "invoke": ms(op.invoke),
            "complete": ms(op.complete), "result": detail,
        }));
    }
    for p in &h.partitions {
        out.push(json!({
            "type": "partition", "shape": p.shape, "minority": p.minority,
            "start": ms(p.start), "end": ms(p.end),
        }));
    }
    for f in &h.faults {
        let mut line = json!({
            "type": fault_name(f.kind), "node": f.node, "start": ms(f.start), "end": ms(f.end),
        });
        match f.kind {
            FaultKind::Clock(offset) => line["offset_s"] = json!(offset),
            FaultKind::Membership(c) => line["change"] = json!(crate::membership::change_name(c)),
            _ => {}
        }
        out.push(line);
    }
    for s in &h.samples {
        out.push(json!({
            "type": "status", "node": s.node, "at": ms(s.at), "term": s.term, "state": s.state,
        }));
    }
    out
}

fn fault_name(k: FaultKind) -> &'static str {
    match k {
        FaultKind::Kill => "kill",
        FaultKind::Pause => "pause",
        FaultKind::DiskFull | FaultKind::DiskStall(_) => "disk",
        FaultKind::Clock(_) => "clock",
        FaultKind::Membership(_) => "membership",
    }
}

/// `results.json` for `o`, the run of `plan` with `seed`.
pub fn results(plan: &Plan, seed: u64, o: &Outcome) -> Value {
    let h = &o.history;
    let (ok, fail, unknown) = h.counts();
    let invariants: serde_json::Map<String, Value> = o
        .report
        .checks
        .iter()
        .map(|(name, v)| {
            (
                name.to_string(),
                json!({"valid": v.is_empty(), "violations": v.iter().take(100).collect::<Vec<_>>()}),
            )
        })
        .collect();
    let count = |k: &str| h.faults.iter().filter(|f| fault_name(f.kind) == k).count();
    let mut r = json!({
        "valid": o.report.valid(),
        "scenario": plan.name,
        "seed": seed,
        "cms": plan.cms,
        "invariants": invariants,
        "faults": {
            "partition": h.partitions.len(),
            "kill": count("kill"),
            "pause": count("pause"),
            "disk": count("disk"),
            "clock": count("clock"),
            "membership": count("membership"),
        },
        "operations": {"ok": ok, "fail": fail, "unknown": unknown},
        "duration_ms": ms(h.ops.iter().map(|op| op.complete).max().unwrap_or_default()),
        "unavailability": {
            "longest_without_acknowledged_write_ms": ms(o.unavailable.0),
            "from_ms": ms(o.unavailable.1),
        },
    });
    if let Some(p) = &o.pool {
        r["pool"] = crate::pool::summary(h, p);
        if let Some(inv) = r["invariants"].get_mut("priorities-replayed") {
            inv["replayed"] = crate::replay::summary(&p.logs);
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::Report;
    use crate::history::{Fault, Op};

    #[test]
    fn results_count_operations_and_faults_and_carry_the_verdicts() {
        let h = History {
            ops: vec![
                Op {
                    process: 0,
                    node: 1,
                    kind: OpKind::Write {
                        name: "a".into(),
                        value: 1.0,
                    },
                    invoke: Duration::from_millis(1),
                    complete: Duration::from_millis(2),
                    outcome: OpOutcome::Ok(None),
                },
                Op {
                    process: 0,
                    node: 1,
                    kind: OpKind::Read,
                    invoke: Duration::from_millis(3),
                    complete: Duration::from_millis(4),
                    outcome: OpOutcome::Unknown("timeout".into()),
                },
            ],
            faults: vec![Fault {
                kind: FaultKind::Kill,
                node: 2,
                start: Duration::ZERO,
                end: Duration::MAX,
            }],
            ..Default::default()
        };
        // CM 2 lost the write: one invariant fails, so the run does.
        let report = Report::check(&h, &[(2, Default::default())]);
        let o = Outcome {
            history: h,
            finals: Vec::new(),
            report,
            unavailable: (Duration::from_millis(2), Duration::ZERO),
            logs: Default::default(),
            pool: None,
            disk_logs: Default::default(),
        };
        let plan = crate::scenario::plan("kill-leader", 9, Duration::from_secs(1)).unwrap();
        let r = results(&plan, 9, &o);
        assert_eq!(r["valid"], json!(false));
        assert_eq!(r["seed"], json!(9));
        assert_eq!(r["invariants"]["no-lost-write"]["valid"], json!(false));
        assert_eq!(r["invariants"]["one-leader-per-term"]["valid"], json!(true));
        assert_eq!(r["faults"]["kill"], json!(1));
        assert_eq!(r["operations"], json!({"ok": 1, "fail": 0, "unknown": 1}));
        let lines = history_lines(&o.history);
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[2]["type"], json!("kill"));
        assert_eq!(lines[2]["end"], Value::Null);
    }

    #[test]
    fn clock_and_membership_faults_are_counted_and_written_with_their_detail() {
        use crate::history::Change;
        let fault = |kind, node| Fault {
            kind,
            node,
            start: Duration::ZERO,
            end: Duration::from_secs(1),
        };
        let h = History {
            faults: vec![
                fault(FaultKind::Clock(-3600), 1),
                fault(FaultKind::Clock(60), 2),
                fault(FaultKind::Membership(Change::Add), 4),
                fault(FaultKind::Membership(Change::Remove), 1),
                fault(FaultKind::Membership(Change::Add), 5),
            ],
            ..Default::default()
        };
        let o = Outcome {
            report: Report::check(&h, &[]),
            history: h,
            finals: Vec::new(),
            unavailable: (Duration::ZERO, Duration::ZERO),
            logs: Default::default(),
            pool: None,
            disk_logs: Default::default(),
        };
        let plan = crate::scenario::plan("membership", 1, Duration::from_secs(1)).unwrap();
        let r = results(&plan, 1, &o);
        assert_eq!(
            r["faults"],
            json!({"partition": 0, "kill": 0, "pause": 0, "disk": 0, "clock": 2, "membership": 3})
        );
        let lines = history_lines(&o.history);
        assert_eq!(lines[0]["type"], json!("clock"));
        assert_eq!(lines[0]["offset_s"], json!(-3600));
        assert_eq!(lines[3]["type"], json!("membership"));
        assert_eq!(lines[3]["change"], json!("remove"));
    }
}

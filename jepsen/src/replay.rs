//! Invariant 5 in full: every priority equals the accountant's formula replayed over the
//! committed ticks (checker `priorities-replayed`).
//!
//! After a pool run every CM is stopped and its committed Raft log read from its data
//! directory ([`aerie_cm::raft::store::read_committed`], the store's own code, read-only).
//! [`replay`] applies the committed entries in order to a fresh state with the very apply
//! function the CMs use (`aerie_core::state::PoolState::apply`), starting from the empty
//! state, or from the stored snapshot when the log's beginning was purged (the result says
//! which). Two judgements follow, either of which fails the run:
//!
//! * [`ledger_mismatches`]: the replayed ledger must be what every CM reported through
//!   `userprio` after the run (negotiation paused, so no tick came after the read): the same
//!   submitters, the same last tick, and for each its real priority, factor, effective
//!   priority, usage in use and accumulated usage, begin and last usage times. A CM that
//!   dropped a tick, charged one twice, or holds another factor disagrees with its log.
//! * [`decay_violations`]: each committed tick's effect on every submitter, as the shared
//!   apply function produced it, recomputed from first principles, HTCondor's
//!   `Accountant::UpdatePriorities` / `UpdateOnePriority` (src/condor_negotiator.V6/
//!   Accountant.cpp): with `dt` the time since the last tick and
//!   `beta = 0.5^(dt / PRIORITY_HALFLIFE)`, `real' = max(0.5, max(real, 0.5) x beta +
//!   (1 - beta) x slots_in_use)` and `accumulated' = accumulated + slots_in_use x dt`
//!   (nothing changes when `dt` is 0), where `slots_in_use` is the weighted slots the tick
//!   carries for the submitter (charged at the interval's end, as HTCondor recounts the
//!   claims just before it updates priorities). A bug in the shared apply function, which
//!   the comparison alone would replay faithfully, is caught here.
//! * [`phantom_time`]: the committed ticks span no more time than really passed (the run,
//!   from its start to the ledger read, by the harness's clock, plus [`SLACK`]). Time charged
//!   is usage charged: a leader whose wall clock jumps an hour forward and ticks by it charges
//!   an hour nobody used (the bug `cm/src/leader/tick.rs`'s `Anchor` fixed), a charge both
//!   judgements above would accept as the formula applied to what the log says.
//!
//! Everything here is pure: the shell that stops the CMs and reads their logs is
//! [`crate::pool::read_logs`].

use crate::checker_pool::Ledger;
use aerie_cm::raft::store::CommittedLog;
use aerie_core::accountant::{Accountant, AccountantCommand, UserprioRow, MIN_PRIORITY};
use aerie_core::state::{Command, PoolState};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// How much more time the committed ticks may span than the harness measured: the ticks a
/// cycle commits before the run's time zero (the pool negotiates from the first leader on),
/// and whole-second tick times.
pub const SLACK: Duration = Duration::from_secs(10);

/// One CM's committed log as the harness read it (or why it could not).
#[derive(Debug, Clone, PartialEq)]
pub struct LogRead {
    /// The CM whose data directory was read.
    pub cm: u64,
    /// Its committed log, or the error reading it.
    pub log: Result<CommittedLog, String>,
}

/// What a submitter's record held just before or just after a tick.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Charge {
    /// Real priority.
    pub real: f64,
    /// Weighted slot-seconds charged so far.
    pub accumulated: f64,
}

/// One committed tick and its effect on every submitter (names with `@`).
#[derive(Debug, Clone, PartialEq)]
pub struct TickStep {
    /// The log index of the tick.
    pub index: u64,
    /// The tick's time (Unix seconds).
    pub now: i64,
    /// The ledger's last tick before it.
    pub last: Option<i64>,
    /// `PRIORITY_HALFLIFE` in force (seconds).
    pub halflife: f64,
    /// Weighted slots in use per submitter, as the tick carries them (summed).
    pub usage: BTreeMap<String, f64>,
    /// Every submitter's record before the tick.
    pub before: BTreeMap<String, Charge>,
    /// Every submitter's record after it.
    pub after: BTreeMap<String, Charge>,
    /// Whether the state machine accepted it (a refused tick must change nothing).
    pub ok: bool,
}

/// Where a replay started.
#[derive(Debug, Clone, PartialEq)]
pub enum Start {
    /// The empty state, before the log's first entry.
    Empty,
    /// A stored snapshot, because the log before it was purged.
    Snapshot {
        /// The last index the snapshot covers.
        index: u64,
        /// The last index purged from the log.
        purged: u64,
    },
}

/// A replayed log: where it started, what it applied, every tick's effect and the ledger
/// at its end.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// The CM whose log it is.
    pub cm: u64,
    /// Where it started.
    pub start: Start,
    /// The first and last index applied (`None`: no entry after the start).
    pub span: Option<(u64, u64)>,
    /// The committed index the CM recorded.
    pub committed: Option<u64>,
    /// Every committed tick, in log order.
    pub ticks: Vec<TickStep>,
    /// The ledger after the last committed entry.
    pub accountant: Accountant,
}

fn submitters(a: &Accountant) -> BTreeMap<String, Charge> {
    a.records()
        .filter(|(name, r)| name.contains('@') && !r.is_group)
        .map(|(name, r)| {
            (
                name.to_string(),
                Charge {
                    real: r.real_priority,
                    accumulated: r.accumulated_usage,
                },
            )
        })
        .collect()
}

/// Applies `log`'s committed entries (of CM `cm`) in order to a fresh state with the CMs'
/// own apply function, from the empty state or, when the log's beginning was purged, from
/// the stored snapshot. Errors say why the log cannot be replayed (a purge no snapshot
/// covers, a gap in the indexes).
pub fn replay(cm: u64, log: &CommittedLog) -> Result<Replay, String> {
    let (mut state, start, mut next) = match log.last_purged {
        None => (PoolState::default(), Start::Empty, None),
        Some(purged) => {
            let snap = log.snapshot.as_ref().ok_or_else(|| {
                format!("CM {cm}'s log is purged through index {purged} and no snapshot is stored")
            })?;
            let index = snap.index.unwrap_or(0);
            if index < purged {
                return Err(format!(
                    "CM {cm}'s log is purged through index {purged} but its snapshot only \
                     covers index {index}"
                ));
            }
            (
                snap.state.clone(),
                Start::Snapshot { index, purged },
                Some(index + 1),
            )
        }
    };
    let skip = match start {
        Start::Snapshot { index, .. } => index,
        Start::Empty => 0,
    };
    let mut ticks = Vec::new();
    let mut span: Option<(u64, u64)> = None;
    for e in log.entries.iter().filter(|e| e.index > skip) {
        if let Some(want) = next {
            if e.index != want {
                return Err(format!(
                    "CM {cm}'s committed log jumps from index {} to {}",
                    want - 1,
                    e.index
                ));
            }
        }
        next = Some(e.index + 1);
        span = Some((span.map_or(e.index, |s| s.0), e.index));
        let Some(req) = &e.request else { continue };
        match &req.cmd {
            Command::Accountant(AccountantCommand::Tick { now, usage }) => {
                let before = submitters(&state.accountant);
                let last = state.accountant.last_tick();
                let halflife = state.accountant.params().priority_halflife;
                let ok = state.apply(req).ok;
                let mut summed: BTreeMap<String, f64> = BTreeMap::new();
                for u in usage {
                    *summed.entry(u.submitter.clone()).or_insert(0.0) += u.weighted_slots;
                }
                ticks.push(TickStep {
                    index: e.index,
                    now: *now,
                    last,
                    halflife,
                    usage: summed,
                    before,
                    after: submitters(&state.accountant),
                    ok,
                });
            }
            _ => {
                state.apply(req);
            }
        }
    }
    Ok(Replay {
        cm,
        start,
        span,
        committed: log.committed,
        ticks,
        accountant: state.accountant,
    })
}

/// Whether `a` is `b` within a relative tolerance of 1e-9 (absolute below 1).
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// Every difference between the ledger `replayed` (from CM `from`'s log) and each CM's
/// reported ledger: the last tick, the submitters, and per row the real priority, factor,
/// effective priority, usage in use and accumulated (within a small float tolerance), and
/// the begin and last usage times.
pub fn ledger_mismatches(from: u64, replayed: &Accountant, ledgers: &[Ledger]) -> Vec<String> {
    let mut v = Vec::new();
    let rows: BTreeMap<String, UserprioRow> = replayed
        .userprio_rows(replayed.last_tick().unwrap_or(0))
        .into_iter()
        .map(|r| (r.name.clone(), r))
        .collect();
    for l in ledgers {
        let who = format!("CM {}'s ledger vs CM {from}'s replayed log", l.cm);
        if l.last_tick != replayed.last_tick() {
            v.push(format!(
                "{who}: last tick {:?}, replayed {:?}",
                l.last_tick,
                replayed.last_tick()
            ));
        }
        let reported: BTreeMap<&str, &UserprioRow> =
            l.rows.iter().map(|r| (r.name.as_str(), r)).collect();
        let names: BTreeSet<&str> = reported
            .keys()
            .copied()
            .chain(rows.keys().map(String::as_str))
            .collect();
        for name in names {
            let (a, b) = match (reported.get(name), rows.get(name)) {
                (Some(a), Some(b)) => (*a, b),
                (Some(_), None) => {
                    v.push(format!("{who}: {name} is reported but not in the replay"));
                    continue;
                }
                (None, _) => {
                    v.push(format!("{who}: {name} is replayed but not reported"));
                    continue;
                }
            };
            let floats = [
                ("real priority", a.real_priority, b.real_priority),
                ("priority factor", a.priority_factor, b.priority_factor),
                (
                    "effective priority",
                    a.effective_priority,
                    b.effective_priority,
                ),
                ("resources used", a.resources_used, b.resources_used),
                (
                    "accumulated usage",
                    a.accumulated_usage,
                    b.accumulated_usage,
                ),
            ];
            for (what, got, want) in floats {
                if !close(got, want) {
                    v.push(format!("{who}: {name}'s {what} is {got}, replayed {want}"));
                }
            }
            let times = [
                ("begin usage time", a.begin_usage_time, b.begin_usage_time),
                ("last usage time", a.last_usage_time, b.last_usage_time),
            ];
            for (what, got, want) in times {
                if got != want {
                    v.push(format!("{who}: {name}'s {what} is {got}, replayed {want}"));
                }
            }
        }
    }
    v
}

/// Each tick's effect on every submitter recomputed from HTCondor's formula (module docs):
/// every deviation of the apply function's result, a submitter charged by a tick but
/// absent after it, or a submitter lost by a tick. Returns the violations and how many
/// (tick, submitter) charges with time passing were checked.
pub fn decay_violations(ticks: &[TickStep]) -> (Vec<String>, usize) {
    let mut v = Vec::new();
    let mut checked = 0;
    for t in ticks {
        let at = format!("tick at index {} (now {})", t.index, t.now);
        for name in t.before.keys() {
            if !t.after.contains_key(name) {
                v.push(format!(
                    "{at}: {name} was in the ledger before the tick, not after"
                ));
            }
        }
        if !t.ok {
            if t.before != t.after {
                v.push(format!("{at}: refused, but it changed the ledger"));
            }
            continue;
        }
        let dt = t.last.map_or(0, |l| t.now - l);
        for (name, u) in &t.usage {
            if *u > 0.0 && !t.after.contains_key(name) {
                v.push(format!(
                    "{at}: {name} charged {u} slots but has no record after"
                ));
            }
        }
        for (name, after) in &t.after {
            let before = t.before.get(name).copied().unwrap_or(Charge {
                real: MIN_PRIORITY,
                accumulated: 0.0,
            });
            let u = t.usage.get(name).copied().unwrap_or(0.0);
            let (real, accumulated) = if dt <= 0 {
                (before.real, before.accumulated)
            } else {
                checked += 1;
                let beta = 0.5f64.powf(dt as f64 / t.halflife);
                (
                    (before.real.max(MIN_PRIORITY) * beta + u * (1.0 - beta)).max(MIN_PRIORITY),
                    before.accumulated + u * dt as f64,
                )
            };
            if !close(after.real, real) {
                v.push(format!(
                    "{at}: {name}'s real priority went {} -> {} over {dt} s with {u} slots in \
                     use; the formula gives {real}",
                    before.real, after.real
                ));
            }
            if !close(after.accumulated, accumulated) {
                v.push(format!(
                    "{at}: {name}'s accumulated usage went {} -> {} over {dt} s with {u} slots \
                     in use; the formula gives {accumulated}",
                    before.accumulated, after.accumulated
                ));
            }
        }
    }
    (v, checked)
}

/// Whether the accepted ticks of `ticks` span more than `real` plus [`SLACK`]: the time
/// from the first to the last is the time charged (each tick charges the time since the
/// one before), and cannot exceed the time that passed.
pub fn phantom_time(ticks: &[TickStep], real: Duration) -> Option<String> {
    let mut ok = ticks.iter().filter(|t| t.ok);
    let first = ok.next()?;
    let last = ok.next_back().unwrap_or(first);
    let span = last.now.saturating_sub(first.now);
    let bound = (real + SLACK).as_secs();
    (u64::try_from(span).unwrap_or(0) > bound).then(|| {
        format!(
            "the committed ticks span {span} s (index {} at {} to index {} at {}), more than \
             the {real:?} that passed plus {SLACK:?}: time was charged that never passed (a \
             leader ticking by a clock that jumped ahead?)",
            first.index, first.now, last.index, last.now
        )
    })
}

/// The checker `priorities-replayed` over every CM's log read and every CM's reported
/// ledger, `real` the time the run lasted (its start to the ledger read): an unreadable or
/// unreplayable log, a replayed ledger that differs from a reported one, a tick off the
/// formula or ticks spanning more than `real` ([`phantom_time`]; both checked on the first
/// replay: the logs are the same) is a violation; so is a run whose ticks charged nothing
/// (the check would be vacuous).
pub fn check(logs: &[LogRead], ledgers: &[Ledger], real: Duration) -> Vec<String> {
    let mut v = Vec::new();
    if logs.is_empty() {
        v.push("no CM's committed log was read".to_string());
    }
    let mut judged_decay = false;
    for read in logs {
        let log = match &read.log {
            Ok(l) => l,
            Err(e) => {
                v.push(format!(
                    "CM {}'s committed log could not be read: {e}",
                    read.cm
                ));
                continue;
            }
        };
        let r = match replay(read.cm, log) {
            Ok(r) => r,
            Err(e) => {
                v.push(e);
                continue;
            }
        };
        v.extend(ledger_mismatches(r.cm, &r.accountant, ledgers));
        if !judged_decay {
            judged_decay = true;
            let (d, checked) = decay_violations(&r.ticks);
            v.extend(d.into_iter().map(|d| format!("CM {}'s log: {d}", r.cm)));
            v.extend(phantom_time(&r.ticks, real).map(|d| format!("CM {}'s log: {d}", r.cm)));
            let charged = r
                .ticks
                .iter()
                .any(|t| t.ok && t.usage.values().any(|u| *u > 0.0) && t.last < Some(t.now));
            if checked == 0 || !charged {
                v.push(format!(
                    "CM {}'s committed log has no tick charging usage over time: nothing to \
                     replay",
                    r.cm
                ));
            }
        }
    }
    v
}

/// For `results.json`: per CM, where its replay started (the empty state, or the snapshot
/// and the purge that made it necessary), the indexes applied, the committed index, the
/// ticks (all, and those charging usage) and the last tick; and how many (tick, submitter)
/// charges the formula was checked on.
pub fn summary(logs: &[LogRead]) -> Value {
    let mut per_cm = Vec::new();
    let mut decay_checked = None;
    for read in logs {
        let r = match read
            .log
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|l| replay(read.cm, l))
        {
            Ok(r) => r,
            Err(e) => {
                per_cm.push(json!({"cm": read.cm, "error": e}));
                continue;
            }
        };
        let start = match r.start {
            Start::Empty => "the empty state (no purge: the whole log)".to_string(),
            Start::Snapshot { index, purged } => {
                format!("the stored snapshot at index {index} (the log is purged through {purged})")
            }
        };
        if decay_checked.is_none() {
            decay_checked = Some(json!({"cm": r.cm, "charges": decay_violations(&r.ticks).1}));
        }
        per_cm.push(json!({
            "cm": r.cm,
            "from": start,
            "first_index": r.span.map(|s| s.0),
            "last_index": r.span.map(|s| s.1),
            "committed": r.committed,
            "ticks": r.ticks.len(),
            "charging_ticks": r.ticks.iter().filter(|t| t.usage.values().any(|u| *u > 0.0)).count(),
            "last_tick": r.accountant.last_tick(),
        }));
    }
    json!({"logs": per_cm, "formula_checked": decay_checked})
}

#[cfg(test)]
mod tests;

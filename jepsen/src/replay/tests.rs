use super::*;
use aerie_cm::raft::store::{CommittedEntry, SnapshotState};
use aerie_core::accountant::{AccountantParams, Usage};
use aerie_core::state::Request;

const HOUR: Duration = Duration::from_secs(3600);

fn tick(now: i64, usage: &[(&str, f64)]) -> Command {
    Command::Accountant(AccountantCommand::Tick {
        now,
        usage: usage
            .iter()
            .map(|(s, w)| Usage {
                submitter: s.to_string(),
                weighted_slots: *w,
            })
            .collect(),
    })
}

/// A run's commands: a half-life of 100 s (so every tick visibly decays), bob's factor set,
/// a limit write between ticks, ticks 10 s apart with changing usage.
fn commands() -> Vec<Command> {
    let params = AccountantParams {
        priority_halflife: 100.0,
        ..Default::default()
    };
    vec![
        Command::Accountant(AccountantCommand::SetParams(params)),
        Command::Accountant(AccountantCommand::SetFactor {
            name: "bob@p".into(),
            value: 2000.0,
        }),
        tick(1000, &[("alice@p", 2.0)]),
        tick(1010, &[("alice@p", 3.0), ("bob@p", 1.0)]),
        Command::SetLimit {
            name: "l".into(),
            limit: Some(1.0),
        },
        tick(1020, &[("bob@p", 4.0)]),
        tick(1020, &[("bob@p", 4.0)]),
        tick(1035, &[("alice@p", 1.0), ("bob@p", 2.0), ("carol@p", 5.0)]),
        tick(1050, &[]),
    ]
}

/// The committed log of `cmds`: a leader's blank entry at index 1, then one entry each.
fn log(cmds: &[Command]) -> CommittedLog {
    let mut entries = vec![CommittedEntry {
        index: 1,
        term: 1,
        request: None,
    }];
    entries.extend(cmds.iter().enumerate().map(|(i, c)| CommittedEntry {
        index: i as u64 + 2,
        term: 1,
        request: Some(Request::new(c.clone())),
    }));
    CommittedLog {
        committed: entries.last().map(|e| e.index),
        last_purged: None,
        snapshot: None,
        entries,
    }
}

/// What CM `cm` reports after applying `cmds`.
fn ledger(cm: u64, cmds: &[Command]) -> Ledger {
    let mut s = PoolState::default();
    for c in cmds {
        s.apply(&Request::new(c.clone()));
    }
    Ledger {
        cm,
        last_tick: s.accountant.last_tick(),
        rows: s.accountant.userprio_rows(0),
    }
}

fn read(cm: u64, log: CommittedLog) -> LogRead {
    LogRead { cm, log: Ok(log) }
}

#[test]
fn a_ledger_that_is_its_replayed_log_passes_and_the_formula_holds_on_every_tick() {
    let cmds = commands();
    let ledgers = [ledger(1, &cmds), ledger(2, &cmds), ledger(3, &cmds)];
    let logs = [read(1, log(&cmds)), read(2, log(&cmds))];
    assert_eq!(check(&logs, &ledgers, HOUR), Vec::<String>::new());
    let r = replay(1, &log(&cmds)).unwrap();
    assert_eq!(r.start, Start::Empty);
    assert_eq!(r.span, Some((1, cmds.len() as u64 + 1)));
    assert_eq!(r.ticks.len(), 6);
    let (v, checked) = decay_violations(&r.ticks);
    assert!(v.is_empty(), "{v:?}");
    // alice and bob (whose record the factor created) at 1010 and 1020, the three at 1035
    // (carol new: 0.5 before) and 1050; the repeated tick at 1020 has no time passing, the
    // first one no last tick.
    assert_eq!(checked, 2 + 2 + 3 + 3, "{checked}");
    let s = summary(&logs);
    assert_eq!(s["logs"][0]["ticks"], 6);
    assert_eq!(s["logs"][0]["last_tick"], 1050);
    assert!(
        s["logs"][0]["from"].as_str().unwrap().contains("empty"),
        "{s}"
    );
}

#[test]
fn a_dropped_tick_makes_the_ledger_disagree_with_its_log() {
    let cmds = commands();
    let mut dropped = cmds.clone();
    dropped.remove(3); // the tick at 1010
                       // The CMs missed a tick the log holds...
    let v = check(&[read(1, log(&cmds))], &[ledger(1, &dropped)], HOUR);
    assert!(
        v.iter().any(|m| m.contains("alice@p's real priority")),
        "{v:?}"
    );
    // ... or applied one the log does not hold.
    let v = check(&[read(1, log(&dropped))], &[ledger(1, &cmds)], HOUR);
    assert!(v.iter().any(|m| m.contains("accumulated usage")), "{v:?}");
    // The last tick dropped shows in the last tick too.
    let v = check(
        &[read(1, log(&cmds))],
        &[ledger(2, &cmds[..cmds.len() - 1])],
        HOUR,
    );
    assert!(
        v.iter().any(|m| m.contains("last tick Some(1035)")),
        "{v:?}"
    );
}

#[test]
fn a_doubled_tick_makes_the_ledger_disagree_with_its_log() {
    let cmds = commands();
    // CM 2 charged the tick at 1035 twice (its usage counted twice).
    let mut doubled = cmds.clone();
    doubled[7] = tick(
        1035,
        &[
            ("alice@p", 1.0),
            ("alice@p", 1.0),
            ("bob@p", 2.0),
            ("bob@p", 2.0),
            ("carol@p", 5.0),
            ("carol@p", 5.0),
        ],
    );
    let v = check(
        &[read(1, log(&cmds))],
        &[ledger(1, &cmds), ledger(2, &doubled)],
        HOUR,
    );
    assert!(!v.is_empty());
    assert!(v.iter().all(|m| m.starts_with("CM 2's ledger")), "{v:?}");
    assert!(
        v.iter().any(|m| m.contains("carol@p's real priority")),
        "{v:?}"
    );
    assert!(
        v.iter().any(|m| m.contains("<none>'s accumulated usage")),
        "{v:?}"
    );
}

#[test]
fn a_wrong_factor_makes_the_ledger_disagree_with_its_log() {
    let cmds = commands();
    let mut l = ledger(3, &cmds);
    let bob = l.rows.iter_mut().find(|r| r.name == "bob@p").unwrap();
    bob.priority_factor = 1000.0;
    bob.effective_priority = bob.real_priority * 1000.0;
    let v = check(&[read(1, log(&cmds))], &[l], HOUR);
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(
        v[0].contains("bob@p's priority factor is 1000, replayed 2000"),
        "{v:?}"
    );
    assert!(v[1].contains("effective priority"), "{v:?}");
    // A submitter the replay does not know, or one missing.
    let mut l = ledger(3, &cmds);
    l.rows[1].name = "mallory@p".into();
    assert_eq!(check(&[read(1, log(&cmds))], &[l], HOUR).len(), 2);
}

/// The independent check catches what a faulty shared apply function would replay
/// faithfully: each tick's effect is recomputed from HTCondor's formula.
#[test]
fn a_tick_whose_effect_is_off_the_formula_is_caught_even_when_the_ledgers_agree() {
    let r = replay(1, &log(&commands())).unwrap();
    let t = r.ticks.iter().position(|t| t.now == 1035).unwrap();
    let good = r.ticks[t].clone();
    let (dt, beta) = (15.0, 0.5f64.powf(15.0 / 100.0));
    let step = |p: f64, u: f64| (p.max(0.5) * beta + u * (1.0 - beta)).max(0.5);
    // The hand computation agrees with the replay (bob: 4 slots before, 2 now).
    let bob = good.before["bob@p"];
    assert!((good.after["bob@p"].real - step(bob.real, 2.0)).abs() < 1e-12);
    assert_eq!(good.after["bob@p"].accumulated, bob.accumulated + 2.0 * dt);
    // Applied twice (an interval decayed and charged twice).
    let mut doubled = good.clone();
    doubled.after.get_mut("bob@p").unwrap().real = step(step(bob.real, 2.0), 2.0);
    doubled.after.get_mut("bob@p").unwrap().accumulated += 2.0 * dt;
    let (v, _) = decay_violations(&[doubled]);
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v[0].contains("bob@p's real priority"), "{v:?}");
    // Dropped: the tick changed nothing although time passed with slots in use.
    let mut dropped = good.clone();
    dropped.after = dropped.before.clone();
    dropped.after.insert(
        "carol@p".into(),
        Charge {
            real: 0.5,
            accumulated: 0.0,
        },
    );
    let (v, _) = decay_violations(&[dropped]);
    assert!(v.len() >= 3, "{v:?}");
    // Charged without decaying (beta taken as 0: the old priority forgotten).
    let mut undecayed = good.clone();
    undecayed.after.get_mut("alice@p").unwrap().real = 1.0;
    assert_eq!(decay_violations(&[undecayed]).0.len(), 1);
    // A submitter lost by a tick, and a refused tick that changed something.
    let mut lost = good.clone();
    lost.after.remove("alice@p");
    assert!(decay_violations(&[lost]).0[0].contains("not after"));
    let mut refused = good;
    refused.ok = false;
    assert!(decay_violations(&[refused]).0[0].contains("refused"));
}

#[test]
fn a_tick_older_than_the_last_is_refused_by_the_replay_and_changes_nothing() {
    let mut cmds = commands();
    cmds.push(tick(1040, &[("alice@p", 9.0)]));
    let logs = [read(1, log(&cmds))];
    assert_eq!(
        check(&logs, &[ledger(1, &cmds)], HOUR),
        Vec::<String>::new()
    );
    let r = replay(1, &log(&cmds)).unwrap();
    assert!(!r.ticks.last().unwrap().ok);
}

#[test]
fn a_purged_log_is_replayed_from_its_snapshot_and_a_gap_or_missing_snapshot_is_refused() {
    let cmds = commands();
    let full = log(&cmds);
    // Purged through index 4, snapshot at index 5 (entries 1..=5 applied).
    let mut state = PoolState::default();
    for e in &full.entries[..5] {
        if let Some(r) = &e.request {
            state.apply(r);
        }
    }
    let mut purged = full.clone();
    purged.entries.drain(..4);
    purged.last_purged = Some(4);
    purged.snapshot = Some(SnapshotState {
        index: Some(5),
        term: Some(1),
        state,
    });
    let r = replay(2, &purged).unwrap();
    assert_eq!(
        r.start,
        Start::Snapshot {
            index: 5,
            purged: 4
        }
    );
    assert_eq!(r.span, Some((6, cmds.len() as u64 + 1)));
    assert_eq!(r.accountant, replay(1, &full).unwrap().accountant);
    assert!(check(&[read(2, purged.clone())], &[ledger(1, &cmds)], HOUR).is_empty());
    let s = summary(&[read(2, purged.clone())]);
    assert!(
        s["logs"][0]["from"]
            .as_str()
            .unwrap()
            .contains("snapshot at index 5"),
        "{s}"
    );
    // No snapshot behind the purge; a snapshot short of it; a gap in the log.
    let mut none = purged.clone();
    none.snapshot = None;
    assert!(replay(2, &none).unwrap_err().contains("no snapshot"));
    let mut short = purged.clone();
    short.last_purged = Some(7);
    assert!(replay(2, &short)
        .unwrap_err()
        .contains("only covers index 5"));
    let mut gap = full;
    gap.entries.remove(6);
    assert!(replay(1, &gap)
        .unwrap_err()
        .contains("jumps from index 6 to 8"));
    let v = check(&[read(1, gap)], &[ledger(1, &cmds)], HOUR);
    assert_eq!(v.len(), 1, "{v:?}");
}

#[test]
fn no_log_an_unreadable_log_or_a_log_charging_nothing_is_invalid() {
    let cmds = commands();
    assert_eq!(check(&[], &[ledger(1, &cmds)], HOUR).len(), 1);
    let bad = LogRead {
        cm: 3,
        log: Err("cannot open RocksDB store".into()),
    };
    assert!(check(&[bad], &[], HOUR)[0].contains("CM 3's committed log could not be read"));
    let idle = vec![tick(1000, &[]), tick(1010, &[])];
    let v = check(&[read(1, log(&idle))], &[ledger(1, &idle)], HOUR);
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].contains("nothing to replay"), "{v:?}");
}

/// A leader whose clock jumped an hour ahead ticked by it: the formula holds and the ledger
/// is its log, but an hour was charged that never passed.
#[test]
fn ticks_spanning_more_time_than_passed_charge_phantom_usage() {
    let cmds = commands(); // ticks from 1000 to 1050
    let r = replay(1, &log(&cmds)).unwrap();
    assert_eq!(phantom_time(&r.ticks, Duration::from_secs(40)), None);
    let v = phantom_time(&r.ticks, Duration::from_secs(30)).unwrap();
    assert!(v.contains("span 50 s"), "{v}");
    let mut jumped = cmds.clone();
    jumped.push(tick(4650, &[("alice@p", 1.0)]));
    let v = check(
        &[read(1, log(&jumped))],
        &[ledger(1, &jumped)],
        Duration::from_secs(60),
    );
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].contains("never passed"), "{v:?}");
    // Refused ticks charge nothing and do not count.
    assert_eq!(phantom_time(&[], Duration::ZERO), None);
}

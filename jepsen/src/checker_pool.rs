//! Checkers of the invariants that need a pool: the startds' claims logs, the committed
//! negotiation cycles, the collectors' slot views after healing and the accountant on every
//! CM, judged together with the run's [`History`] (faults and status samples).
//!
//! HTCondor's HA (src/condor_had/HADStateMachine.cpp) can run two negotiators after a
//! partition, and each would hand out the same slots (src/condor_negotiator.V6/matchmaker.cpp
//! sends its matches to the schedds, which claim them from the startds,
//! src/condor_startd.V6/command.cpp `request_claim`); these checkers judge what Aerie's pool
//! actually did under the nemesis:
//!
//! * `no-double-claim` (invariant 3): the nodes' claims logs replayed by the project's own
//!   audit (`aerie_node::check`): no slot claimed for a second job before its release, no
//!   claim from a term older than one the slot had accepted;
//! * `one-negotiator-per-term` (invariant 2): every committed cycle of a term names one
//!   leader;
//! * `no-grant-after-deposed` (invariant 2): no claim made on a grant of term T was
//!   accepted later than a leader of a newer term was seen, beyond the lease the leader's
//!   quorum confirmation gives plus slack;
//! * `priorities-agree` (invariant 5, across CMs): after healing, every CM
//!   holds the same ledger (rows and last tick, compared at one time) and every row's effective
//!   priority is the formula's `max(real, 0.5) x factor`;
//! * `priorities-replayed` (invariant 5 in full): the committed ticks replayed from a stopped
//!   CM's Raft log give every CM's ledger, and each tick follows HTCondor's formula
//!   ([`crate::replay`]);
//! * `ads-converge` (invariant 6): once the nodes' ads stopped changing, every CM's collector
//!   shows exactly the nodes' slots with their states within a bound;
//! * `failover-cycle` (invariant 7): after the leader was lost (killed, paused or cut off), a
//!   cycle completed within the election (the followers' vote lease plus their election
//!   timeout) plus one cycle.
//!
//! Everything here is plain data and pure functions; the shell that gathers it is
//! [`crate::pool`].

use crate::history::{FaultKind, History};
use aerie_core::accountant::UserprioRow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

/// A committed negotiation cycle as a CM reported it.
#[derive(Debug, Clone, PartialEq)]
pub struct Cycle {
    /// The term of the leader that ran it.
    pub term: u64,
    /// Its number within the term.
    pub cycle: u64,
    /// The Raft id of the leader that ran it.
    pub leader_id: u64,
    /// When it started, leader time, Unix seconds.
    pub start_time: i64,
    /// When it ended, leader time, Unix seconds.
    pub end_time: i64,
    /// How long it took, seconds.
    pub duration_seconds: f64,
    /// When the harness first saw it committed (offset from the run's start), if it saw it
    /// during the run rather than only in the final read.
    pub seen: Option<Duration>,
}

/// One look at one CM's collector: its slots' states by name, at a time.
#[derive(Debug, Clone, PartialEq)]
pub struct AdView {
    /// When the answer came.
    pub at: Duration,
    /// The CM asked.
    pub cm: u64,
    /// Slot name to `State`.
    pub slots: BTreeMap<String, String>,
}

/// One CM's ledger, read at a fixed time after healing.
#[derive(Debug, Clone, PartialEq)]
pub struct Ledger {
    /// The CM.
    pub cm: u64,
    /// Its last accountant tick.
    pub last_tick: Option<i64>,
    /// Its userprio rows.
    pub rows: Vec<UserprioRow>,
}

/// The bounds the liveness checkers hold the run to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// The longest election: the followers' vote lease (the longest election timeout after
    /// the last heartbeat) plus their own election timeout; 3.2 s with the test clusters'
    /// `800-1600`.
    pub election: Duration,
    /// One cycle: the negotiator interval plus the time a cycle takes.
    pub cycle: Duration,
    /// How long after a newer leader was seen a claim on an older term's grant may still be
    /// accepted: the leader's lease after its last quorum confirmation plus the time the
    /// access point takes to claim.
    pub grant_slack: Duration,
    /// How long after the nodes' ads stopped changing every CM must show them.
    pub convergence: Duration,
}

/// What the pool recorded in a run, beside the [`History`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PoolRecord {
    /// Unix milliseconds at the history's time zero (the claims log and cycle records carry
    /// Unix times).
    pub origin_ms: u64,
    /// The nodes' claims log (`aerie-node simulate --claims-log`).
    pub claims_log: String,
    /// Every committed cycle seen, once per (term, cycle).
    pub cycles: Vec<Cycle>,
    /// The slots the nodes advertise at the end (name to `State`), and since when they have
    /// not changed.
    pub expected: BTreeMap<String, String>,
    /// When the nodes' ads last changed (offset from the run's start).
    pub expected_since: Duration,
    /// The looks at every CM's collector after healing.
    pub views: Vec<AdView>,
    /// Every CM's ledger after healing, read at one time.
    pub ledgers: Vec<Ledger>,
    /// When the ledgers were read (Unix ms, the harness's clock).
    pub read_ms: u64,
    /// The pool's own log (its standard error), for people.
    pub node_log: String,
    /// Every CM's committed Raft log, read from its data directory once it was stopped
    /// after the run ([`crate::pool::read_logs`]).
    pub logs: Vec<crate::replay::LogRead>,
    /// The real pool's jobs (`pool-real`; `None` for a simulated pool).
    pub jobs: Option<crate::checker_jobs::JobsRecord>,
}

/// Invariant 3: the claims log replayed by `aerie-node check-claims`' own audit.
pub fn double_claims(claims_log: &str) -> Vec<String> {
    let mut s = aerie_node::check::Summary::default();
    aerie_node::check::check_text(Path::new("claims.log"), claims_log, &mut s);
    s.violations
        .iter()
        .map(|v| format!("claims.log:{}: slot {}: {}", v.line, v.slot, v.message))
        .chain(s.malformed.iter().cloned())
        .collect()
}

/// Invariant 2, first half: every committed cycle of a term was run by one leader.
pub fn two_negotiators(cycles: &[Cycle]) -> Vec<String> {
    let mut by_term: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for c in cycles {
        by_term.entry(c.term).or_default().insert(c.leader_id);
    }
    by_term
        .into_iter()
        .filter(|(_, ids)| ids.len() > 1)
        .map(|(term, ids)| format!("term {term} has committed cycles of leaders {ids:?}"))
        .collect()
}

/// The accepted claims of a claims log: (term, cycle, slot, job, Unix ms).
fn accepted_claims(claims_log: &str) -> Vec<(u64, u64, String, String, u64)> {
    claims_log
        .lines()
        .filter_map(|l| serde_json::from_str::<aerie_node::claims_log::Event>(l).ok())
        .filter(|e| e.event == "claim")
        .map(|e| {
            (
                e.term.unwrap_or(0),
                e.cycle.unwrap_or(0),
                e.slot.unwrap_or_default(),
                e.job.unwrap_or_default(),
                e.time_ms,
            )
        })
        .collect()
}

/// Unix milliseconds to an offset from the run's start (0 for times before it).
fn offset(origin_ms: u64, unix_ms: u64) -> Duration {
    Duration::from_millis(unix_ms.saturating_sub(origin_ms))
}

/// Invariant 2, second half: no claim on a grant of term T was accepted more than `slack`
/// after some CM was first sampled as leader of a term above T. A leader sends grants only
/// within the lease of a fresh quorum confirmation, and a newer leader can only be elected
/// after that confirmation, so a later claim means grants from a leader that had lost its
/// quorum.
pub fn grants_after_deposed(
    h: &History,
    claims_log: &str,
    origin_ms: u64,
    slack: Duration,
) -> Vec<String> {
    // term -> the first time a leader of that term was sampled.
    let mut first_leader: BTreeMap<u64, (Duration, u64)> = BTreeMap::new();
    for s in h.samples.iter().filter(|s| s.state == "Leader") {
        let e = first_leader.entry(s.term).or_insert((s.at, s.node));
        if s.at < e.0 {
            *e = (s.at, s.node);
        }
    }
    // term -> the earliest time a leader of a higher term was seen.
    let deposed = |term: u64| {
        first_leader
            .range(term + 1..)
            .map(|(t, (at, node))| (*at, *t, *node))
            .min()
    };
    let mut v = Vec::new();
    for (term, cycle, slot, job, ms) in accepted_claims(claims_log) {
        let at = offset(origin_ms, ms);
        if let Some((when, newer, node)) = deposed(term) {
            if at > when + slack {
                v.push(format!(
                    "slot {slot} claimed for job {job} at {at:?} on a grant of term {term} \
                     cycle {cycle}, but CM {node} led term {newer} from {when:?}"
                ));
            }
        }
    }
    v
}

/// Invariant 5 as far as the harness sees it: every CM's ledger equals the first one's (same
/// last tick, same rows), and every row's effective priority is `max(real, 0.5) x factor`.
pub fn priorities_disagree(ledgers: &[Ledger]) -> Vec<String> {
    let mut v = Vec::new();
    let Some(first) = ledgers.first() else {
        return v;
    };
    for l in ledgers {
        if l.last_tick != first.last_tick {
            v.push(format!(
                "CM {} last ticked at {:?}, CM {} at {:?}",
                l.cm, l.last_tick, first.cm, first.last_tick
            ));
        }
        let mine: BTreeMap<&str, &UserprioRow> =
            l.rows.iter().map(|r| (r.name.as_str(), r)).collect();
        let theirs: BTreeMap<&str, &UserprioRow> =
            first.rows.iter().map(|r| (r.name.as_str(), r)).collect();
        for name in mine.keys().chain(theirs.keys()).collect::<BTreeSet<_>>() {
            match (mine.get(name), theirs.get(name)) {
                (Some(a), Some(b)) if a != b => v.push(format!(
                    "{name}: CM {} has priority {} (real {}, factor {}, usage {}), CM {} has \
                     {} (real {}, factor {}, usage {})",
                    l.cm,
                    a.effective_priority,
                    a.real_priority,
                    a.priority_factor,
                    a.accumulated_usage,
                    first.cm,
                    b.effective_priority,
                    b.real_priority,
                    b.priority_factor,
                    b.accumulated_usage
                )),
                (Some(_), Some(_)) => {}
                (a, _) => v.push(format!(
                    "{name} is in the ledger of CM {} but not of CM {}",
                    if a.is_some() { l.cm } else { first.cm },
                    if a.is_some() { first.cm } else { l.cm }
                )),
            }
        }
        for r in &l.rows {
            let want = r.real_priority.max(0.5) * r.priority_factor;
            if (r.effective_priority - want).abs() > 1e-9 * want.abs().max(1.0) {
                v.push(format!(
                    "{}: CM {} has effective priority {} but max(real {}, 0.5) x factor {} \
                     is {want}",
                    r.name, l.cm, r.effective_priority, r.real_priority, r.priority_factor
                ));
            }
        }
    }
    v
}

/// Invariant 6: for every CM asked, some look at its collector at most `bound` after
/// `since` (when the nodes' ads last changed) shows exactly `expected`, and its last look
/// still does.
pub fn ads_diverge(
    expected: &BTreeMap<String, String>,
    since: Duration,
    views: &[AdView],
    bound: Duration,
) -> Vec<String> {
    let mut by_cm: BTreeMap<u64, Vec<&AdView>> = BTreeMap::new();
    for view in views {
        by_cm.entry(view.cm).or_default().push(view);
    }
    let mut v = Vec::new();
    for (cm, mut looks) in by_cm {
        looks.sort_by_key(|l| l.at);
        let first_match = looks.iter().find(|l| &l.slots == expected);
        let last = looks.last().map(|l| &l.slots);
        match first_match {
            Some(l) if l.at.saturating_sub(since) <= bound && last == Some(expected) => {}
            Some(l) if last != Some(expected) => v.push(format!(
                "CM {cm} showed the nodes' slots at {:?} but not at its last look: {}",
                l.at,
                diff(expected, last.unwrap_or(&BTreeMap::new()))
            )),
            Some(l) => v.push(format!(
                "CM {cm} showed the nodes' slots only at {:?}, {:?} after they last changed \
                 (bound {bound:?})",
                l.at,
                l.at.saturating_sub(since)
            )),
            None => v.push(format!(
                "CM {cm} never showed the nodes' slots; at its last look: {}",
                diff(expected, last.unwrap_or(&BTreeMap::new()))
            )),
        }
    }
    v
}

/// What a view gets wrong, for people (at most 5 slots).
fn diff(expected: &BTreeMap<String, String>, seen: &BTreeMap<String, String>) -> String {
    let mut out = Vec::new();
    for (slot, state) in expected {
        match seen.get(slot) {
            None => out.push(format!("{slot} missing")),
            Some(s) if s != state => out.push(format!("{slot} {s} (nodes: {state})")),
            _ => {}
        }
    }
    for slot in seen.keys().filter(|s| !expected.contains_key(*s)) {
        out.push(format!("{slot} not on any node"));
    }
    let n = out.len();
    out.truncate(5);
    format!("{} differences: {}", n, out.join(", "))
}

/// The CM the samples call leader at `t` (the highest term sampled as leader by then), with
/// its term.
fn leader_at(h: &History, t: Duration) -> Option<(u64, u64)> {
    h.samples
        .iter()
        .filter(|s| s.state == "Leader" && s.at <= t)
        .max_by_key(|s| (s.term, s.at))
        .map(|s| (s.node, s.term))
}

/// A leader loss: when, which CM, its term, and what happened to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Loss {
    /// When the fault began.
    pub at: Duration,
    /// The leader lost.
    pub leader: u64,
    /// Its term.
    pub term: u64,
    /// `kill`, `pause`, `disk` or the partition's shape.
    pub what: String,
}

/// Every fault that took the then leader away: a kill, pause or full disk of it, or a
/// partition with it on the minority side.
pub fn leader_losses(h: &History) -> Vec<Loss> {
    let mut out = Vec::new();
    for f in &h.faults {
        if let Some((leader, term)) = leader_at(h, f.start) {
            if leader == f.node {
                let what = match f.kind {
                    FaultKind::Kill => "kill",
                    FaultKind::Pause => "pause",
                    FaultKind::DiskFull => "disk",
                    // A clock step does not take a leader away, and membership changes
                    // remove followers only.
                    // A stalled disk slows the leader's commits; whether it is deposed
                    // is what the disk-stall scenario measures, not a loss by itself.
                    FaultKind::Clock(_) | FaultKind::Membership(_) | FaultKind::DiskStall(_) => {
                        continue
                    }
                };
                out.push(Loss {
                    at: f.start,
                    leader,
                    term,
                    what: what.into(),
                });
            }
        }
    }
    for p in &h.partitions {
        if let Some((leader, term)) = leader_at(h, p.start) {
            if p.minority.contains(&leader) {
                out.push(Loss {
                    at: p.start,
                    leader,
                    term,
                    what: p.shape.clone(),
                });
            }
        }
    }
    out.sort_by_key(|l| l.at);
    out
}

/// The latest moment a cycle could have completed: the end of its `end_time` second
/// (cycle records carry whole Unix seconds), as an offset from the run's start.
fn completed(origin_ms: u64, c: &Cycle) -> Duration {
    offset(origin_ms, (c.end_time.max(0) as u64 + 1) * 1000)
}

/// For every leader loss, how long after it a cycle had completed (`None`: none did): the
/// first cycle of a later term, or of any term begun after the loss, counts.
pub fn failover_times(
    h: &History,
    cycles: &[Cycle],
    origin_ms: u64,
) -> Vec<(Loss, Option<Duration>)> {
    leader_losses(h)
        .into_iter()
        .map(|loss| {
            let done = cycles
                .iter()
                .filter(|c| {
                    c.term > loss.term
                        || offset(origin_ms, c.start_time.max(0) as u64 * 1000) > loss.at
                })
                .map(|c| completed(origin_ms, c))
                .filter(|end| *end > loss.at)
                .min();
            let after = done.map(|end| end - loss.at);
            (loss, after)
        })
        .collect()
}

/// The longest window within `[from, until]` in which no cycle completed, and its start.
pub fn longest_without_cycle(
    cycles: &[Cycle],
    origin_ms: u64,
    from: Duration,
    until: Duration,
) -> (Duration, Duration) {
    let mut ends: Vec<Duration> = cycles
        .iter()
        .map(|c| completed(origin_ms, c))
        .filter(|t| *t >= from && *t <= until)
        .collect();
    ends.sort();
    let mut best = (Duration::ZERO, from);
    let mut last = from;
    for t in ends.into_iter().chain(std::iter::once(until.max(from))) {
        if t - last > best.0 {
            best = (t - last, last);
        }
        last = t;
    }
    best
}

/// Invariant 7: after every leader loss, a cycle that began after it (or ran in a later term)
/// completed within `bounds.election + bounds.cycle`, judged against the latest the cycle
/// could have ended. A loss followed by another fault (or the run's end, `until`) within the
/// bound is not judged: the next fault may legitimately delay the cycle. Returns the
/// violations and how many losses were judged.
pub fn slow_failovers(
    h: &History,
    cycles: &[Cycle],
    origin_ms: u64,
    bounds: Bounds,
    until: Duration,
) -> (Vec<String>, usize) {
    let bound = bounds.election + bounds.cycle;
    let starts: Vec<Duration> = h
        .faults
        .iter()
        .map(|f| f.start)
        .chain(h.partitions.iter().map(|p| p.start))
        .collect();
    let mut v = Vec::new();
    let mut judged = 0;
    for (loss, after) in failover_times(h, cycles, origin_ms) {
        let deadline = loss.at + bound;
        if deadline > until || starts.iter().any(|s| *s > loss.at && *s <= deadline) {
            continue;
        }
        judged += 1;
        match after {
            Some(d) if d <= bound => {}
            Some(d) => v.push(format!(
                "leader CM {} of term {} lost at {:?} ({}): the next cycle completed by {:?}, \
                 {d:?} later (bound {bound:?})",
                loss.leader,
                loss.term,
                loss.at,
                loss.what,
                loss.at + d
            )),
            None => v.push(format!(
                "leader CM {} of term {} lost at {:?} ({}): no cycle completed after it \
                 (bound {bound:?})",
                loss.leader, loss.term, loss.at, loss.what
            )),
        }
    }
    (v, judged)
}

/// Runs every pool checker over `h` and `pool`, adding their verdicts to `checks` under the
/// names `results.json` uses. `until` is the end of the run's workload (offset).
pub fn check(
    h: &History,
    pool: &PoolRecord,
    bounds: Bounds,
    until: Duration,
    checks: &mut BTreeMap<&'static str, Vec<String>>,
) {
    checks.insert("no-double-claim", double_claims(&pool.claims_log));
    checks.insert("one-negotiator-per-term", two_negotiators(&pool.cycles));
    checks.insert(
        "no-grant-after-deposed",
        grants_after_deposed(h, &pool.claims_log, pool.origin_ms, bounds.grant_slack),
    );
    checks.insert("priorities-agree", priorities_disagree(&pool.ledgers));
    checks.insert(
        "priorities-replayed",
        crate::replay::check(
            &pool.logs,
            &pool.ledgers,
            Duration::from_millis(pool.read_ms.saturating_sub(pool.origin_ms)),
        ),
    );
    checks.insert(
        "ads-converge",
        ads_diverge(
            &pool.expected,
            pool.expected_since,
            &pool.views,
            bounds.convergence,
        ),
    );
    checks.insert(
        "failover-cycle",
        slow_failovers(h, &pool.cycles, pool.origin_ms, bounds, until).0,
    );
    if let Some(jobs) = &pool.jobs {
        crate::checker_jobs::check(jobs, checks);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Fault, Partition, Sample};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn leader(at: u64, node: u64, term: u64) -> Sample {
        Sample {
            at: ms(at),
            node,
            term,
            state: "Leader".into(),
        }
    }

    const BOUNDS: Bounds = Bounds {
        election: Duration::from_millis(3200),
        cycle: Duration::from_millis(2000),
        grant_slack: Duration::from_millis(1000),
        convergence: Duration::from_secs(10),
    };

    #[test]
    fn a_slot_claimed_for_a_second_job_before_its_release_is_a_double_claim() {
        let good = r#"{"event":"start","time_ms":1}
{"event":"claim","slot":"slot1@m","job":"1.0","term":2,"cycle":1,"time_ms":2}
{"event":"release","slot":"slot1@m","job":"1.0","time_ms":3}
{"event":"claim","slot":"slot1@m","job":"2.0","term":2,"cycle":2,"time_ms":4}
"#;
        assert!(double_claims(good).is_empty(), "{:?}", double_claims(good));
        let bad = format!(
            "{good}{}",
            r#"{"event":"claim","slot":"slot1@m","job":"3.0","term":3,"cycle":1,"time_ms":5}
"#
        );
        let v = double_claims(&bad);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].contains("claims.log:5") && v[0].contains("3.0"),
            "{v:?}"
        );
        // An older term accepted after a newer one on the same slot is refused too.
        let fence = r#"{"event":"claim","slot":"s","job":"1.0","term":5,"time_ms":1}
{"event":"release","slot":"s","job":"1.0","time_ms":2}
{"event":"claim","slot":"s","job":"2.0","term":4,"time_ms":3}
"#;
        assert_eq!(double_claims(fence).len(), 1);
    }

    fn cycle(term: u64, n: u64, leader_id: u64, start: i64, end: i64) -> Cycle {
        Cycle {
            term,
            cycle: n,
            leader_id,
            start_time: start,
            end_time: end,
            duration_seconds: 0.5,
            seen: None,
        }
    }

    #[test]
    fn two_leaders_committing_cycles_in_one_term_are_two_negotiators() {
        let mut cycles = vec![
            cycle(2, 1, 1, 0, 1),
            cycle(2, 2, 1, 1, 2),
            cycle(3, 1, 2, 3, 4),
        ];
        assert!(two_negotiators(&cycles).is_empty());
        cycles.push(cycle(3, 2, 3, 4, 5));
        assert_eq!(
            two_negotiators(&cycles),
            vec!["term 3 has committed cycles of leaders {2, 3}".to_string()]
        );
    }

    #[test]
    fn a_claim_on_an_old_terms_grant_long_after_a_new_leader_is_a_deposed_grant() {
        let origin = 1_000_000;
        let h = History {
            samples: vec![leader(0, 1, 2), leader(5000, 2, 3)],
            ..Default::default()
        };
        let log = |term: u64, at: u64| {
            format!(
                "{{\"event\":\"claim\",\"slot\":\"s\",\"job\":\"1.0\",\"term\":{term},\"cycle\":4,\"time_ms\":{}}}\n",
                origin + at
            )
        };
        // Before the new leader, within the slack after it, or of the new term: fine.
        let ok = [log(2, 4000), log(2, 5900), log(3, 9000)].concat();
        assert!(grants_after_deposed(&h, &ok, origin, BOUNDS.grant_slack).is_empty());
        let v = grants_after_deposed(&h, &log(2, 7000), origin, BOUNDS.grant_slack);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].contains("term 2") && v[0].contains("CM 2 led term 3"),
            "{v:?}"
        );
    }

    fn row(name: &str, real: f64, factor: f64) -> UserprioRow {
        UserprioRow {
            name: name.into(),
            effective_priority: real.max(0.5) * factor,
            real_priority: real,
            priority_factor: factor,
            resources_used: 0.0,
            accumulated_usage: 10.0,
            begin_usage_time: 1,
            last_usage_time: 2,
            floor: 0.0,
            ceiling: -1.0,
            is_group: false,
            accounting_group: "<none>".into(),
        }
    }

    fn ledger(cm: u64, rows: Vec<UserprioRow>) -> Ledger {
        Ledger {
            cm,
            last_tick: Some(100),
            rows,
        }
    }

    #[test]
    fn ledgers_that_differ_between_cms_or_break_the_formula_disagree() {
        let rows = vec![row("a@d", 3.0, 1000.0), row("b@d", 0.5, 2000.0)];
        let same = [ledger(1, rows.clone()), ledger(2, rows.clone())];
        assert!(priorities_disagree(&same).is_empty());
        // A different real priority on CM 2.
        let mut other = rows.clone();
        other[0] = row("a@d", 3.5, 1000.0);
        let v = priorities_disagree(&[ledger(1, rows.clone()), ledger(2, other)]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].starts_with("a@d: CM 2"), "{v:?}");
        // A submitter missing on CM 3, and a tick CM 3 did not apply.
        let mut behind = ledger(3, rows[..1].to_vec());
        behind.last_tick = Some(90);
        let v = priorities_disagree(&[ledger(1, rows.clone()), behind]);
        assert_eq!(v.len(), 2, "{v:?}");
        // An effective priority off the formula, even on one CM alone.
        let mut broken = rows;
        broken[1].effective_priority = 999.0;
        assert_eq!(priorities_disagree(&[ledger(1, broken)]).len(), 1);
    }

    fn view(at: u64, cm: u64, slots: &[(&str, &str)]) -> AdView {
        AdView {
            at: ms(at),
            cm,
            slots: slots
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
        }
    }

    #[test]
    fn a_cm_whose_collector_misses_a_slot_or_shows_it_late_does_not_converge() {
        let want = view(0, 0, &[("s1", "Unclaimed"), ("s2", "Unclaimed")]).slots;
        let good = [
            view(1000, 1, &[("s1", "Claimed"), ("s2", "Unclaimed")]),
            view(2000, 1, &[("s1", "Unclaimed"), ("s2", "Unclaimed")]),
            view(1500, 2, &[("s1", "Unclaimed"), ("s2", "Unclaimed")]),
        ];
        assert!(ads_diverge(&want, ms(1000), &good, BOUNDS.convergence).is_empty());
        // CM 3 never shows s2; CM 4 shows a slot no node has.
        let bad = [
            view(2000, 3, &[("s1", "Unclaimed")]),
            view(
                2000,
                4,
                &[("s1", "Unclaimed"), ("s2", "Unclaimed"), ("s9", "Claimed")],
            ),
        ];
        let v = ads_diverge(&want, ms(1000), &bad, BOUNDS.convergence);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(
            v[0].contains("CM 3") && v[0].contains("s2 missing"),
            "{v:?}"
        );
        assert!(v[1].contains("s9 not on any node"), "{v:?}");
        // Right only after the bound.
        let late = [view(12_000, 5, &[("s1", "Unclaimed"), ("s2", "Unclaimed")])];
        assert_eq!(
            ads_diverge(&want, ms(1000), &late, BOUNDS.convergence).len(),
            1
        );
        // Right once, then wrong again.
        let flip = [
            view(2000, 6, &[("s1", "Unclaimed"), ("s2", "Unclaimed")]),
            view(3000, 6, &[("s1", "Claimed"), ("s2", "Unclaimed")]),
        ];
        assert_eq!(
            ads_diverge(&want, ms(1000), &flip, BOUNDS.convergence).len(),
            1
        );
    }

    #[test]
    fn no_cycle_within_the_bound_after_the_leader_is_killed_is_a_slow_failover() {
        let origin = 1_000_000_000; // Unix ms at the run's start: 1_000_000 s.
        let s = |secs: u64| 1_000_000 + secs as i64;
        let h = History {
            samples: vec![leader(500, 1, 2), leader(12_000, 2, 3)],
            faults: vec![Fault {
                kind: FaultKind::Kill,
                node: 1,
                start: ms(10_000),
                end: ms(20_000),
            }],
            ..Default::default()
        };
        let until = ms(60_000);
        // A cycle of the new term ending in second 12 (by 13 s): within 10 s + 5.2 s.
        let fast = [cycle(2, 9, 1, s(9), s(9)), cycle(3, 1, 2, s(12), s(12))];
        assert_eq!(
            slow_failovers(&h, &fast, origin, BOUNDS, until),
            (vec![], 1)
        );
        // Only the dead leader's last cycle, then one at 16 s: too late.
        let slow = [cycle(2, 9, 1, s(9), s(9)), cycle(3, 1, 2, s(16), s(16))];
        let (v, judged) = slow_failovers(&h, &slow, origin, BOUNDS, until);
        assert_eq!(judged, 1);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].contains("leader CM 1 of term 2") && v[0].contains("kill"),
            "{v:?}"
        );
        // No cycle at all after the loss.
        let (v, _) = slow_failovers(&h, &slow[..1], origin, BOUNDS, until);
        assert!(v[0].contains("no cycle completed"), "{v:?}");
        // A follower's kill is no leader loss; a second fault within the bound, or the end
        // of the run, leaves the loss unjudged.
        let mut follower = h.clone();
        follower.faults[0].node = 3;
        assert_eq!(slow_failovers(&follower, &slow, origin, BOUNDS, until).1, 0);
        let mut busy = h.clone();
        busy.partitions.push(Partition {
            shape: "isolate 2".into(),
            minority: vec![2],
            start: ms(11_000),
            end: ms(13_000),
        });
        assert_eq!(slow_failovers(&busy, &slow, origin, BOUNDS, until).1, 0);
        assert_eq!(slow_failovers(&h, &slow, origin, BOUNDS, ms(12_000)).1, 0);
    }

    #[test]
    fn the_longest_window_without_a_cycle_counts_from_each_cycles_last_possible_end() {
        let origin = 1_000_000_000;
        let s = |secs: u64| 1_000_000 + secs as i64;
        let c = [
            cycle(2, 1, 1, s(1), s(1)),
            cycle(2, 2, 1, s(3), s(3)),
            cycle(3, 1, 2, s(9), s(9)),
        ];
        // Ends by 2 s, 4 s and 10 s: the gap 4..10 s is the longest in 0..12 s.
        assert_eq!(
            longest_without_cycle(&c, origin, ms(0), ms(12_000)),
            (ms(6000), ms(4000))
        );
        assert_eq!(
            longest_without_cycle(&[], origin, ms(1000), ms(3000)),
            (ms(2000), ms(1000))
        );
    }

    #[test]
    fn a_partition_with_the_leader_in_the_minority_is_a_leader_loss() {
        let h = History {
            samples: vec![leader(0, 2, 4)],
            partitions: vec![
                Partition {
                    shape: "isolate 1".into(),
                    minority: vec![1],
                    start: ms(100),
                    end: ms(200),
                },
                Partition {
                    shape: "isolate 2".into(),
                    minority: vec![2],
                    start: ms(300),
                    end: ms(400),
                },
            ],
            ..Default::default()
        };
        let l = leader_losses(&h);
        assert_eq!(l.len(), 1, "{l:?}");
        assert_eq!((l[0].leader, l[0].term, l[0].at), (2, 4, ms(300)));
    }
}

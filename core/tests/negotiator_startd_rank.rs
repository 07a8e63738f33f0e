// Startd-rank preemption as HTCondor 23.9.6's matchmaker.cpp decides it:
// * negotiateWithGroup passes ignore_submitter_limit on the first pie spin when
//   NEGOTIATOR_CONSIDER_PREEMPTION is true; negotiate() then keeps a submitter that is over its
//   limit going with only_consider_startd_rank, and matchmakingAlgorithm offers it nothing but
//   claimed slots whose startd strictly prefers the job (`MY.Rank > MY.CurrentRank`);
// * the first request of an autocluster is answered by a fresh scan, where rank preemption is
//   never held to the submitter limit; further requests of the same autocluster come from the
//   cached MatchList, whose pop checks every preempting candidate against the limit (or the
//   unclaimed limit);
// * an undefined Rank or CurrentRank makes the rank conditions false (no rank preemption, and
//   no priority preemption either: `MY.Rank >= MY.CurrentRank` must hold for that).
mod negotiation_common;

use aerie_core::accountant::Accountant;
use aerie_core::negotiator::{GroupQuota, MatchReason, NegotiatorConfig, Outcome};
use classad::ClassAd;
use negotiation_common::{ad, job, ledger, run};

/// The startd prefers a's jobs (Rank 10) to anyone else's (0).
const PREFERS_A: &str = "10 * (TARGET.Owner == \"a\")";

/// A claimed, busy slot running `user`'s job at `current_rank` (None: no CurrentRank).
fn busy(name: &str, user: &str, current_rank: Option<&str>) -> ClassAd {
    let q = format!("\"{name}\"");
    let u = format!("\"{user}\"");
    let mut a = ad(&[
        ("MyType", "\"Machine\""),
        ("Name", &q),
        ("Machine", &q),
        ("State", "\"Claimed\""),
        ("Activity", "\"Busy\""),
        ("RemoteUser", &u),
        ("RemoteOwner", &u),
        ("Cpus", "1"),
        ("Memory", "1024"),
        ("Disk", "100000"),
        ("SlotID", "1"),
        ("Requirements", "true"),
        ("Rank", PREFERS_A),
    ]);
    if let Some(r) = current_rank {
        a.insert_expr_str("CurrentRank", r).unwrap();
    }
    a
}

fn rejection<'a>(o: &'a Outcome, job: &str) -> Option<&'a str> {
    o.rejections
        .iter()
        .find(|(j, _)| j == job)
        .map(|(_, why)| why.as_str())
}

/// Group `group_a` (static quota 2, one allocation round) already runs 2 jobs of user a on
/// a1, a2 at CurrentRank 10 (the startd does not prefer a's next job to them); b runs 2 jobs
/// on b1, b2 at CurrentRank 0 (the startd prefers any job of a's: Rank 10). a is at its
/// group's quota, so its submitter limit is 0: it negotiates only for startd rank in the
/// first spin, and the second spin stops at once (group usage >= quota).
///
/// HTCondor 23.9.6: a's first job (a fresh MatchList scan) rank-preempts b1 regardless of the
/// limit; its second job, same autocluster, is served from the cached MatchList, whose pop
/// applies SubmitterLimitPermits to rank candidates too (limitUsed 1 > limit 0, unclaimed
/// 0 + 1 > 0): "submitter limit exceeded". One rank preemption, not two (the approximation
/// this replaces let every over-limit job rank-preempt).
fn group_pool() -> (Vec<ClassAd>, Vec<ClassAd>, Accountant) {
    let acct = ledger(&[("group_a.a@d", 1.0), ("b@d", 1.0)]);
    let pool = vec![
        busy("a1", "group_a.a@d", Some("10")),
        busy("a2", "group_a.a@d", Some("10")),
        busy("b1", "b@d", Some("0")),
        busy("b2", "b@d", Some("0")),
    ];
    let jobs = (0..3)
        .map(|p| {
            let mut j = job("a", 1, p, &[]);
            j.insert_expr_str("AccountingGroup", "\"group_a.a\"")
                .unwrap();
            j
        })
        .collect();
    (pool, jobs, acct)
}

fn group_cfg() -> NegotiatorConfig {
    let mut cfg = NegotiatorConfig::plain()
        .with_preemption_requirements("False")
        .unwrap()
        .with_group("group_a", GroupQuota::Static(2.0), false);
    cfg.max_allocation_rounds = 1;
    cfg
}

#[test]
fn over_limit_first_spin_rank_preempts_once_per_autocluster() {
    let (pool, jobs, acct) = group_pool();
    let o = run(pool, jobs, &acct, &group_cfg());
    let got: Vec<(&str, &str, MatchReason, Option<&str>)> = o
        .matches
        .iter()
        .map(|m| {
            (
                m.job.as_str(),
                m.slot.as_str(),
                m.reason,
                m.preempts.as_deref(),
            )
        })
        .collect();
    assert_eq!(got, [("1.0", "b1", MatchReason::Rank, Some("b@d"))]);
    assert_eq!(rejection(&o, "1.1"), Some("submitter limit exceeded"));
    // The rest of the autocluster is not tried once a job of it was rejected.
    assert_eq!(rejection(&o, "1.2"), None);
}

/// The same jobs in two autoclusters (the second asks for more memory): each autocluster's
/// first request is a fresh scan, so each gets its rank preemption.
#[test]
fn over_limit_first_spin_fresh_scan_per_autocluster() {
    let (pool, mut jobs, acct) = group_pool();
    jobs[1].insert_expr_str("RequestMemory", "2").unwrap();
    let o = run(pool, jobs, &acct, &group_cfg());
    let got: Vec<(&str, &str)> = o
        .matches
        .iter()
        .map(|m| (m.job.as_str(), m.slot.as_str()))
        .collect();
    assert_eq!(got, [("1.0", "b1"), ("1.1", "b2")]);
    assert!(o.matches.iter().all(|m| m.reason == MatchReason::Rank));
}

/// Under NEGOTIATOR_CONSIDER_PREEMPTION = False there is no first-spin exception: a submitter
/// at its limit gets nothing, startd rank or not (busy slots are not even candidates).
#[test]
fn without_preemption_no_startd_rank_exception() {
    let (pool, jobs, acct) = group_pool();
    let o = run(
        pool,
        jobs,
        &acct,
        &group_cfg().with_consider_preemption(false),
    );
    assert!(o.matches.is_empty(), "{:?}", o.matches);
}

/// Under NEGOTIATOR_CONSIDER_PREEMPTION = False a claimed slot is never a candidate, not
/// even for a job its startd RANK prefers (HTCondor trims claimed slots before matchmaking,
/// trimStartdAds_PreemptionLogic): the slot taken for rank with preemption on is left alone.
#[test]
fn without_preemption_a_claimed_slot_is_not_taken_even_for_startd_rank() {
    let (acct, cfg) = a_may_preempt_b();
    let pool = || vec![busy("b1", "b@d", Some("0"))];
    let o = run(pool(), vec![job("a", 1, 0, &[])], &acct, &cfg);
    assert_eq!(o.matches.len(), 1, "with preemption: {:?}", o.matches);
    let o = run(
        pool(),
        vec![job("a", 1, 0, &[])],
        &acct,
        &cfg.with_consider_preemption(false),
    );
    assert!(o.matches.is_empty(), "{:?}", o.matches);
}

/// a (priority 0.5) and b (500), with PREEMPTION_REQUIREMENTS True: priority preemption of b
/// is allowed, so only the rank conditions can stop it.
fn a_may_preempt_b() -> (Accountant, NegotiatorConfig) {
    let cfg = NegotiatorConfig::plain()
        .with_preemption_requirements("True")
        .unwrap();
    (ledger(&[("a@d", 0.5), ("b@d", 500.0)]), cfg)
}

/// A claimed slot without CurrentRank: `MY.Rank > MY.CurrentRank` is undefined, so the
/// startd does not "prefer" the job, and `MY.Rank >= MY.CurrentRank` is undefined too, so
/// priority preemption is refused even though PREEMPTION_REQUIREMENTS allows it. With
/// CurrentRank 0 the same slot is taken for rank.
#[test]
fn undefined_current_rank_allows_no_preemption() {
    let (acct, cfg) = a_may_preempt_b();
    let o = run(
        vec![busy("b1", "b@d", None)],
        vec![job("a", 1, 0, &[])],
        &acct,
        &cfg,
    );
    assert!(o.matches.is_empty(), "{:?}", o.matches);
    let o = run(
        vec![busy("b1", "b@d", Some("0"))],
        vec![job("a", 1, 0, &[])],
        &acct,
        &cfg,
    );
    assert_eq!(o.matches.len(), 1);
    assert_eq!(o.matches[0].reason, MatchReason::Rank);
}

/// PreemptingRank stands in for CurrentRank (a preempting claim must be beaten):
/// Rank 10 against PreemptingRank 20 is neither rank nor priority preemption.
#[test]
fn preempting_rank_is_the_rank_to_beat() {
    let (acct, cfg) = a_may_preempt_b();
    let mut slot = busy("b1", "b@d", Some("0"));
    slot.insert_expr_str("PreemptingRank", "20").unwrap();
    let o = run(vec![slot], vec![job("a", 1, 0, &[])], &acct, &cfg);
    assert!(o.matches.is_empty(), "{:?}", o.matches);
}

/// A busy slot whose job still has retirement time left is no preemption candidate unless
/// NEGOTIATOR_CONSIDER_EARLY_PREEMPTION is true (`trimStartdAds_PreemptionLogic`).
#[test]
fn a_slot_in_retirement_is_preempted_only_with_early_preemption() {
    let acct = ledger(&[("a@d", 1.0), ("b@d", 1.0)]);
    let mut slot = busy("b1", "b@d", Some("0"));
    slot.insert_expr_str("RetirementTimeRemaining", "300")
        .unwrap();
    let jobs = || vec![job("a", 1, 0, &[])];
    let o = run(
        vec![slot.clone()],
        jobs(),
        &acct,
        &NegotiatorConfig::default(),
    );
    assert!(o.matches.is_empty(), "{:?}", o.matches);
    let lookup =
        |k: &str| (k == "NEGOTIATOR_CONSIDER_EARLY_PREEMPTION").then(|| "True".to_string());
    let cfg = NegotiatorConfig::from_lookup(&lookup, &[]).unwrap();
    assert!(cfg.consider_early_preemption);
    let o = run(vec![slot], jobs(), &acct, &cfg);
    let got: Vec<(&str, MatchReason)> = o
        .matches
        .iter()
        .map(|m| (m.slot.as_str(), m.reason))
        .collect();
    assert_eq!(got, [("b1", MatchReason::Rank)]);
}

/// With HTCondor's default PREEMPTION_REQUIREMENTS (False) only rank preemption is left, and
/// the negotiator leaves out, before matchmaking, claimed slots whose literal Rank cannot beat
/// their CurrentRank for any job (most startds: `Rank = 0`, `CurrentRank = 0.0`). The edges
/// of that shortcut: a literal Rank above CurrentRank is still taken for rank, an equal one
/// or a missing CurrentRank is not, and a Rank that reads the job is still evaluated per job.
#[test]
fn under_the_default_preemption_requirements_literal_ranks_decide_rank_preemption() {
    let acct = ledger(&[("a@d", 0.5), ("b@d", 500.0)]);
    let cfg = NegotiatorConfig::plain()
        .with_preemption_requirements("False")
        .unwrap();
    let taken = |rank: &str, current: Option<&str>| {
        let mut slot = busy("b1", "b@d", current);
        slot.insert_expr_str("Rank", rank).unwrap();
        let o = run(vec![slot], vec![job("a", 1, 0, &[])], &acct, &cfg);
        o.matches.iter().map(|m| m.reason).collect::<Vec<_>>()
    };
    assert_eq!(taken("10", Some("0")), [MatchReason::Rank]);
    assert_eq!(taken("0.5", Some("0.25")), [MatchReason::Rank]);
    assert_eq!(taken("0", Some("0.0")), []);
    assert_eq!(taken("5", Some("5")), []);
    assert_eq!(taken("10", None), []);
    assert_eq!(taken(PREFERS_A, Some("0")), [MatchReason::Rank]);
    assert_eq!(taken(PREFERS_A, Some("10")), []);
    // PREEMPTION_REQUIREMENTS True: priority preemption takes the slot Rank 0 left alone.
    let cfg = cfg.with_preemption_requirements("True").unwrap();
    let mut slot = busy("b1", "b@d", Some("0"));
    slot.insert_expr_str("Rank", "0").unwrap();
    let o = run(vec![slot], vec![job("a", 1, 0, &[])], &acct, &cfg);
    let got: Vec<MatchReason> = o.matches.iter().map(|m| m.reason).collect();
    assert_eq!(got, [MatchReason::Priority]);
}

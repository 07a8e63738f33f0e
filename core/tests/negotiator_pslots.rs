// Partitionable slots as HTCondor 23.9.6's negotiator matches them (matchmaker.cpp,
// consumption_policy.cpp), each test the Aerie side of a reference scenario run against the
// real negotiator (tests/reference/negotiator/pslot_*.sh), with the same ads:
// * without a consumption policy a partitionable slot is an ordinary candidate: it matches
//   through its Requirements (the startd's WithinResourceLimits; the negotiator quantizes
//   nothing), costs its whole SlotWeight and leaves the cycle once matched (the schedd, not the
//   negotiator, carves more dynamic slots from the claim);
// * with one (`MachineResources` and a `Consumption<Asset>` for each of its assets, as a startd
//   with `CONSUMPTION_POLICY = True` advertises) the negotiator splits the slot within the
//   cycle: each match deducts what the slot's `Consumption*` expressions say the job consumes
//   and costs the SlotWeight it removes; the split slot goes back into the match list by
//   MatchListType::insert_candidate, which moves it past the entries it outranks.
mod negotiation_common;

use aerie_core::accountant::Accountant;
use aerie_core::negotiator::{LimitedBy, NegotiatorConfig, Outcome};
use classad::ClassAd;
use negotiation_common::{ad, ledger, run};

/// A slot ad as pool.sh's `slot_ad` writes it (one unclaimed one-core slot `slot1@<node>`),
/// with `extra` attributes added or replaced.
fn slot(node: &str, extra: &[(&str, &str)]) -> ClassAd {
    let name = format!("\"slot1@{node}.ref.test\"");
    let machine = format!("\"{node}.ref.test\"");
    let addr = format!("\"<127.0.0.1:40000?sock={node}>\"");
    let mut a = ad(&[
        ("MyType", "\"Machine\""),
        ("Name", &name),
        ("Machine", &machine),
        ("MyAddress", &addr),
        ("StartdIpAddr", &addr),
        ("State", "\"Unclaimed\""),
        ("Activity", "\"Idle\""),
        ("Arch", "\"X86_64\""),
        ("OpSys", "\"LINUX\""),
        ("Cpus", "1"),
        ("Memory", "1024"),
        ("Disk", "1000000"),
        ("SlotID", "1"),
        ("SlotWeight", "Cpus"),
        ("Requirements", "true"),
        ("Rank", "0"),
        ("WantClaiming", "false"),
        ("UidDomain", "\"ref.test\""),
        ("FileSystemDomain", "\"ref.test\""),
    ]);
    for (k, v) in extra {
        a.insert_expr_str(k, v).unwrap();
    }
    a
}

/// The startd's WithinResourceLimits without a consumption policy (Reqexp.cpp, climit_simple).
const LIMITS: &str = "(MY.Cpus > 0 && TARGET.RequestCpus <= MY.Cpus && MY.Memory > 0 && \
    TARGET.RequestMemory <= MY.Memory && MY.Disk > 0 && TARGET.RequestDisk <= MY.Disk)";

/// The startd's WithinResourceLimits with a consumption policy, as a 23.9.6 startd advertises it.
const CP_LIMITS: &str = "(ifThenElse(TARGET._cp_orig_RequestCpus =!= undefined,\
    TARGET.RequestCpus <= MY.Cpus,MY.ConsumptionCpus <= MY.Cpus) && \
    ifThenElse(TARGET._cp_orig_RequestDisk =!= undefined,TARGET.RequestDisk <= MY.Disk,\
    MY.ConsumptionDisk <= MY.Disk) && ifThenElse(TARGET._cp_orig_RequestMemory =!= undefined,\
    TARGET.RequestMemory <= MY.Memory,MY.ConsumptionMemory <= MY.Memory))";

/// A partitionable slot `slot1@<node>` without a consumption policy.
fn pslot(node: &str, cpus: i64, memory: i64) -> ClassAd {
    let (c, m) = (cpus.to_string(), memory.to_string());
    slot(
        node,
        &[
            ("PartitionableSlot", "true"),
            ("SlotType", "\"Partitionable\""),
            ("Cpus", &c),
            ("Memory", &m),
            ("TotalSlotCpus", &c),
            ("TotalSlotMemory", &m),
            ("Start", "true"),
            ("WithinResourceLimits", LIMITS),
            ("Requirements", "START && (WithinResourceLimits)"),
        ],
    )
}

/// A partitionable slot `slot1@<node>` with a consumption policy whose memory is consumed in
/// steps of `step` MB (the startd's default is 128).
fn cp_pslot(node: &str, cpus: i64, memory: i64, step: i64) -> ClassAd {
    let mut a = pslot(node, cpus, memory);
    for (k, v) in [
        ("MachineResources", "\"Cpus Memory Disk Swap\"".to_string()),
        (
            "ConsumptionCpus",
            "quantize(target.RequestCpus,{ 1 })".into(),
        ),
        (
            "ConsumptionMemory",
            format!("quantize(target.RequestMemory,{{ {step} }})"),
        ),
        (
            "ConsumptionDisk",
            "quantize(target.RequestDisk,{ 1024 })".into(),
        ),
        ("WithinResourceLimits", CP_LIMITS.into()),
    ] {
        a.insert_expr_str(k, &v).unwrap();
    }
    a
}

/// `n` idle jobs of `user` in cluster `cluster` as condor_submit writes them (request_cpus 1,
/// request_memory `memory`, request_disk 1, `accounting_group_user = user`).
fn jobs(user: &str, cluster: i64, n: i64, memory: i64) -> Vec<ClassAd> {
    jobs_of(user, cluster, n, 1, memory)
}

/// The same with request_cpus `cpus`.
fn jobs_of(user: &str, cluster: i64, n: i64, cpus: i64, memory: i64) -> Vec<ClassAd> {
    (0..n)
        .map(|p| {
            ad(&[
                ("MyType", "\"Job\""),
                ("Owner", "\"ref\""),
                ("User", "\"ref@ref.test\""),
                ("AccountingGroup", &format!("\"{user}\"")),
                ("ClusterId", &cluster.to_string()),
                ("ProcId", &p.to_string()),
                ("JobStatus", "1"),
                ("QDate", &(1_700_000_000 + cluster).to_string()),
                ("JobPrio", "0"),
                ("RequestCpus", &cpus.to_string()),
                ("RequestMemory", &memory.to_string()),
                ("RequestDisk", "1"),
                ("FileSystemDomain", "\"ref.test\""),
                (
                    "Requirements",
                    "(TARGET.Arch == \"X86_64\") && (TARGET.OpSys == \"LINUX\") && \
                     (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && \
                     ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))",
                ),
            ])
        })
        .collect()
}

/// The same jobs with `Rank = TARGET.Memory` (condor_submit's `rank = TARGET.Memory`).
fn ranked_jobs(user: &str, cluster: i64, n: i64, memory: i64) -> Vec<ClassAd> {
    let mut js = jobs(user, cluster, n, memory);
    for j in &mut js {
        j.insert_expr_str("Rank", "TARGET.Memory").unwrap();
    }
    js
}

/// alice (real priority 1) and bob (real priority 2), factor 1, as the scenarios set them.
fn alice_and_bob() -> Accountant {
    ledger(&[("alice@ref.test", 1.0), ("bob@ref.test", 2.0)])
}

/// The matches in order, as `(submitter, slot)` without the domains.
fn order(o: &Outcome) -> Vec<(String, String)> {
    o.matches
        .iter()
        .map(|m| {
            let user = m.submitter.trim_end_matches("@ref.test").to_string();
            let slot = m.slot.trim_end_matches(".ref.test").to_string();
            (user, slot)
        })
        .collect()
}

fn expect(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(u, s)| (u.to_string(), s.to_string()))
        .collect()
}

// tests/reference/negotiator/pslot_whole.sh: the real negotiator matched, in order,
// alice: node1 node2 node3 node4 mid; bob: big (MATCHES alice 5, bob 1).
#[test]
fn whole_pslot_once_per_cycle() {
    let mut slots: Vec<ClassAd> = (0..4)
        .map(|i| {
            slot(
                &format!("node{}", i + 1),
                &[("Memory", &(1024 + 16 * i).to_string())],
            )
        })
        .collect();
    slots.push(pslot("mid", 4, 1000));
    slots.push(pslot("big", 12, 12288));
    let mut js = jobs("alice", 1, 10, 1000);
    js.extend(jobs("bob", 2, 10, 1000));
    let o = run(slots, js, &alice_and_bob(), &NegotiatorConfig::default());
    assert_eq!(
        order(&o),
        expect(&[
            ("alice", "slot1@node1"),
            ("alice", "slot1@node2"),
            ("alice", "slot1@node3"),
            ("alice", "slot1@node4"),
            ("alice", "slot1@mid"),
            ("bob", "slot1@big"),
        ])
    );
    // Each partitionable slot costs its whole SlotWeight: bob's one match (12) is more than
    // his limit (6.7), which a submitter that has used nothing may go over once.
    let weights: Vec<f64> = o.matches.iter().map(|m| m.weight).collect();
    assert_eq!(weights, vec![1.0, 1.0, 1.0, 1.0, 4.0, 12.0]);
    let bob = o.submitter("bob@ref.test").unwrap();
    assert!(bob.pie_slice < 12.0, "{bob:?}");
    assert_eq!(
        o.submitter("alice@ref.test").unwrap().limited_by,
        LimitedBy::Share
    );
    // What the startd will carve for the claim (MODIFY_REQUEST_EXPR_*: memory in steps of 128
    // MB, unless the slot no longer matches the quantized request: 1024 > 1000 on mid).
    assert_eq!(o.matches[4].carved, Some((1.0, 1000.0, 1.0)));
    assert_eq!(o.matches[5].carved, Some((1.0, 1024.0, 1024.0)));
}

// tests/reference/negotiator/pslot_consumption.sh: the real negotiator matched, in order,
// alice: pc pb pa pa pb pa; bob: pc pa pb (MATCHES alice 6, bob 3).
#[test]
fn consumption_policy_splits_in_list_order() {
    let slots = vec![
        cp_pslot("pa", 4, 4096, 128),
        cp_pslot("pb", 4, 3072, 1024),
        cp_pslot("pc", 2, 2048, 128),
    ];
    let mut js = jobs("alice", 1, 10, 600);
    js.extend(jobs("bob", 2, 10, 100));
    // The scenario's negotiator configuration sets this startd knob; the negotiator never
    // reads it (the consumption is the slot's).
    let lookup = |k: &str| {
        (k == "MODIFY_REQUEST_EXPR_REQUESTMEMORY").then(|| "quantize(RequestMemory,{4096})".into())
    };
    let cfg = NegotiatorConfig::from_lookup(&lookup, &[]).unwrap();
    let o = run(slots, js, &alice_and_bob(), &cfg);
    assert_eq!(
        order(&o),
        expect(&[
            ("alice", "slot1@pc"),
            ("alice", "slot1@pb"),
            ("alice", "slot1@pa"),
            ("alice", "slot1@pa"),
            ("alice", "slot1@pb"),
            ("alice", "slot1@pa"),
            ("bob", "slot1@pc"),
            ("bob", "slot1@pa"),
            ("bob", "slot1@pb"),
        ])
    );
    // One cpu consumed, one charged, each time; the memory consumed is the slot's step.
    assert!(o.matches.iter().all(|m| m.weight == 1.0));
    assert_eq!(o.matches[0].carved, Some((1.0, 640.0, 1024.0)));
    assert_eq!(o.matches[1].carved, Some((1.0, 1024.0, 1024.0)));
    assert_eq!(o.matches[8].carved, Some((1.0, 1024.0, 1024.0)));
    // The real log: alice's 7th request is "submitter limit exceeded" in the first spin; in
    // the second nothing left fits her jobs ("no match found").
    assert_eq!(
        o.submitter("alice@ref.test").unwrap().limited_by,
        LimitedBy::NoMatch
    );
}

// tests/reference/negotiator/pslot_consumption_rank.sh: the real negotiator matched, in order,
// carol: pc node1 pa pa pa pa pb pb; dave: pc pb (MATCHES carol 8, dave 2).
#[test]
fn split_slot_stays_at_the_head_unless_it_outranks_the_next() {
    let slots = vec![
        slot("node1", &[("Memory", "5000")]),
        cp_pslot("pa", 4, 4096, 128),
        cp_pslot("pb", 4, 3072, 128),
        cp_pslot("pc", 2, 8192, 128),
    ];
    let mut js = ranked_jobs("carol", 1, 10, 1000);
    js.extend(ranked_jobs("dave", 2, 5, 100));
    let acct = ledger(&[("carol@ref.test", 1.0), ("dave@ref.test", 4.0)]);
    let cfg = NegotiatorConfig::default()
        .with_pre_job_rank("0")
        .unwrap()
        .with_post_job_rank("0")
        .unwrap();
    let o = run(slots, js, &acct, &cfg);
    // pc (8192 MB) sorts first; split (7168) it still outranks every other entry and goes to
    // the tail. pa split (3072) ties with pb and stays at the head; split again it ranks below
    // pb but stays at the head all the same, until it no longer fits a job.
    assert_eq!(
        order(&o),
        expect(&[
            ("carol", "slot1@pc"),
            ("carol", "slot1@node1"),
            ("carol", "slot1@pa"),
            ("carol", "slot1@pa"),
            ("carol", "slot1@pa"),
            ("carol", "slot1@pa"),
            ("carol", "slot1@pb"),
            ("carol", "slot1@pb"),
            ("dave", "slot1@pc"),
            ("dave", "slot1@pb"),
        ])
    );
}

// tests/reference/negotiator/pslot_random.sh, seed 7: the real negotiator matched, in order,
// bob: cp2 pp2 cp1; alice: cp1 cp1 cp1, then (second spin) pp1. alice's fresh scan admits pp1
// (7 cpus) by the round-up rule, having used nothing; her second request pops and discards it
// over her limit (3.4); when the list runs out her request is rejected for the submitter limit
// (the list's diagnostics keep that discard), so she resumes in the second spin, where pp1 fits
// her limit.
#[test]
fn a_discard_for_the_limit_is_remembered_by_the_match_list() {
    let slots = vec![
        cp_pslot("cp1", 5, 2561, 128),
        cp_pslot("cp2", 2, 12034, 1024),
        pslot("pp1", 7, 11264),
        pslot("pp2", 3, 9216),
    ];
    let mut js = jobs("alice", 1, 6, 302);
    js.extend(jobs_of("bob", 2, 3, 2, 555));
    let acct = ledger(&[("alice@ref.test", 4.0), ("bob@ref.test", 1.0)]);
    let o = run(slots, js, &acct, &NegotiatorConfig::default());
    assert_eq!(
        order(&o),
        expect(&[
            ("bob", "slot1@cp2"),
            ("bob", "slot1@pp2"),
            ("bob", "slot1@cp1"),
            ("alice", "slot1@cp1"),
            ("alice", "slot1@cp1"),
            ("alice", "slot1@cp1"),
            ("alice", "slot1@pp1"),
        ])
    );
    assert_eq!(o.stats["LastNegotiationCyclePieSpins0"], 2.0);
}

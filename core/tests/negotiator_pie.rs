// The pie and the group allocation rounds against the real HTCondor 23.9.6 negotiator: each
// test gives the per-submitter matches that a reference scenario of tests/reference/negotiator/
// printed for the same pool (the scenario's header lists the runs).
mod negotiation_common;

use aerie_core::accountant::{Accountant, AccountantCommand, AccountantParams};
use aerie_core::negotiator::{GroupQuota, NegotiatorConfig, Outcome};
use classad::ClassAd;
use negotiation_common::{ad, job, run};

/// A static unclaimed slot of `cpus` cores, `slot1@<node>`, weighing its `Cpus`, as
/// tests/reference/negotiator/pool.sh's `slot_ad` advertises it.
fn slot(node: &str, cpus: u32) -> ClassAd {
    let name = format!("\"slot1@{node}.ref.test\"");
    let machine = format!("\"{node}.ref.test\"");
    ad(&[
        ("MyType", "\"Machine\""),
        ("Name", &name),
        ("Machine", &machine),
        ("State", "\"Unclaimed\""),
        ("Activity", "\"Idle\""),
        ("Cpus", &cpus.to_string()),
        ("Memory", "1024"),
        ("Disk", "1000000"),
        ("SlotID", "1"),
        ("SlotWeight", "Cpus"),
        ("Requirements", "true"),
        ("Rank", "0"),
    ])
}

/// Matches of submitter `name` (`<name>@d`).
fn got(o: &Outcome, name: &str) -> usize {
    o.matches_by_submitter()
        .get(&format!("{name}@d"))
        .copied()
        .unwrap_or(0)
}

/// A priority factor as the negotiator receives it from `condor_userprio -setfactor`: CEDAR
/// sends a double as its frexp mantissa times 2^31-1, truncated to an int, and its exponent
/// (Stream::put(double)), so 5000 arrives as 4999.9999985 and 1000 as 999.99999999.
fn cedar(x: f64) -> f64 {
    const FRAC: f64 = 2147483647.0;
    if x == 0.0 {
        return 0.0;
    }
    let exp = x.abs().log2().floor() as i32 + 1;
    let mantissa = x / 2f64.powi(exp);
    let frac = (mantissa * FRAC) as i32;
    frac as f64 / FRAC * 2f64.powi(exp)
}

// tests/reference/negotiator/factors.sh: fresh submitters (real priority 0.5) with unequal
// factors, pools that are not a multiple of the shares. In every spin the real negotiator gives
// a submitter only whole slots within its limit (one slot more only if it has matched nothing
// yet in that spin, SubmitterLimitPermits' "round up once"), and a later spin skips every
// submitter whose limit is below the smallest slot weight, so slots stay unmatched.
#[test]
fn factor_shares_hand_out_whole_slots() {
    // (submitters as name:factor[:jobs], pool, slot sizes in turn, the real matches in the
    // order of the submitters, the real unmatched slots)
    type Run = (&'static str, usize, &'static [u32], &'static [usize], usize);
    let runs: &[Run] = &[
        ("a:1000 b:2000 c:5000", 5, &[1], &[2, 1, 1], 1),
        ("a:1000 b:2000 c:5000", 7, &[1], &[4, 2, 1], 0),
        ("a:1000 b:2000 c:5000", 10, &[1], &[5, 2, 1], 2),
        ("a:1000 b:2000 c:5000", 11, &[1], &[6, 3, 1], 1),
        ("a:1000 b:2000 c:5000", 13, &[1], &[7, 3, 1], 2),
        // 17 x 10/17 is 10, but the factors as received make a's limit 9.99999999.
        ("a:1000 b:2000 c:5000", 17, &[1], &[9, 4, 2], 2),
        ("a:1000 b:2000 c:5000", 23, &[1], &[13, 6, 2], 2),
        ("a:1000 b:2000 c:5000", 29, &[1], &[17, 8, 3], 1),
        ("a:1000 b:2000 c:5000", 31, &[1], &[18, 9, 3], 1),
        ("a:1000 b:2000 c:5000", 37, &[1], &[21, 10, 4], 2),
        ("a:1000 b:3000 c:7000", 5, &[1], &[3, 1, 1], 0),
        ("a:1000 b:3000 c:7000", 7, &[1], &[4, 1, 1], 1),
        ("a:1000 b:3000 c:7000", 10, &[1], &[6, 2, 1], 1),
        ("a:1000 b:3000 c:7000", 11, &[1], &[7, 2, 1], 1),
        ("a:1000 b:3000 c:7000", 13, &[1], &[8, 2, 1], 2),
        ("a:1000 b:3000 c:7000", 17, &[1], &[11, 3, 1], 2),
        ("a:1000 b:3000 c:7000", 23, &[1], &[15, 5, 2], 1),
        ("a:1000 b:3000 c:7000", 29, &[1], &[19, 6, 2], 2),
        ("a:1000 b:3000 c:7000", 31, &[1], &[20, 7, 3], 1),
        ("a:1000 b:3000 c:7000", 37, &[1], &[25, 8, 3], 1),
        ("a:1000 b:1500 c:4000 d:10000", 5, &[1], &[2, 1, 1, 1], 0),
        ("a:1000 b:1500 c:4000 d:10000", 7, &[1], &[3, 2, 1, 1], 0),
        ("a:1000 b:1500 c:4000 d:10000", 10, &[1], &[4, 3, 1, 1], 1),
        ("a:1000 b:1500 c:4000 d:10000", 11, &[1], &[5, 3, 1, 1], 1),
        ("a:1000 b:1500 c:4000 d:10000", 13, &[1], &[6, 4, 1, 1], 1),
        ("a:1000 b:1500 c:4000 d:10000", 17, &[1], &[8, 5, 2, 1], 1),
        ("a:1000 b:1500 c:4000 d:10000", 23, &[1], &[11, 7, 2, 1], 2),
        ("a:1000 b:1500 c:4000 d:10000", 29, &[1], &[14, 9, 3, 1], 2),
        ("a:1000 b:1500 c:4000 d:10000", 31, &[1], &[15, 10, 3, 1], 2),
        ("a:1000 b:1500 c:4000 d:10000", 37, &[1], &[18, 12, 4, 1], 2),
        // A submitter that runs out of jobs leaves; the next spin shares the pool among the
        // others.
        ("a:1000:3 b:2000 c:5000", 20, &[1], &[3, 14, 3], 0),
        ("a:1000:2 b:3000:4 c:7000", 23, &[1], &[2, 4, 17], 0),
        (
            "a:1000:4 b:1500:3 c:4000 d:10000",
            19,
            &[1],
            &[4, 3, 11, 1],
            0,
        ),
        // One- and two-core slots (SlotWeight = Cpus; the admin ranks take one-core slots
        // first): a two-core slot costs 2.
        ("a:1000 b:2000 c:5000", 10, &[1, 2], &[7, 2, 1], 0),
        ("a:1000 b:2000 c:5000", 13, &[1, 2], &[9, 3, 1], 0),
        ("a:1000 b:3000 c:7000", 12, &[2, 1, 1], &[9, 2, 1], 0),
        ("a:1000:2 b:2000 c:5000", 11, &[1, 2], &[2, 7, 2], 0),
    ];
    for &(spec, n, sizes, want, idle) in runs {
        let mut acct = Accountant::new(AccountantParams::default());
        let mut js = Vec::new();
        let mut names = Vec::new();
        for (i, s) in spec.split_whitespace().enumerate() {
            let f: Vec<&str> = s.split(':').collect();
            let jobs: usize = f.get(2).map_or(100, |j| j.parse().unwrap());
            acct.apply(&AccountantCommand::SetFactor {
                name: format!("{}@d", f[0]),
                value: cedar(f[1].parse().unwrap()),
            })
            .unwrap();
            js.extend((0..jobs).map(|p| job(f[0], 1, (100 * i + p) as i64, &[])));
            names.push(f[0]);
        }
        let pool = (1..=n)
            .map(|i| slot(&format!("node{i}"), sizes[(i - 1) % sizes.len()]))
            .collect();
        let o = run(pool, js, &acct, &NegotiatorConfig::default());
        let have: Vec<usize> = names.iter().map(|s| got(&o, s)).collect();
        assert_eq!(have, want, "{spec}, {n} slots of {sizes:?} cores");
        assert_eq!(
            n - o.matches.len(),
            idle,
            "{spec}, {n} slots of {sizes:?} cores"
        );
    }
}

/// `n` one-core slots `node1..noden`.
fn slots(n: usize) -> Vec<ClassAd> {
    (1..=n).map(|i| slot(&format!("node{i}"), 1)).collect()
}

/// `n` idle jobs of `user` in `group` (submitter `<group>.<user>@d`), procs from `first`.
fn group_jobs(group: &str, user: &str, first: usize, n: usize) -> Vec<ClassAd> {
    let acct = format!("\"{group}.{user}\"");
    (first..first + n)
        .map(|p| job(user, 1, p as i64, &[("AccountingGroup", &acct)]))
        .collect()
}

/// As tests/reference/negotiator/pool.sh's `submit_groups` submits them: `none` idle jobs of
/// nobody (no group), then 30 of a user `u<g>` in each group `group_<g>` (a, b, ...) with
/// the given quotas, added to `cfg` (accepting surplus or not). Returns the configuration,
/// the jobs and the submitters (the groups' users, then nobody).
fn group_pool(
    mut cfg: NegotiatorConfig,
    quotas: &[GroupQuota],
    surplus: bool,
    none: usize,
) -> (NegotiatorConfig, Vec<ClassAd>, Vec<String>) {
    let mut js: Vec<ClassAd> = (0..none).map(|p| job("nobody", 1, p as i64, &[])).collect();
    let mut users = Vec::new();
    for (i, q) in quotas.iter().enumerate() {
        let g = format!("group_{}", (b'a' + i as u8) as char);
        let u = format!("u{}", (b'a' + i as u8) as char);
        cfg = cfg.with_group(&g, *q, surplus);
        js.extend(group_jobs(&g, &u, 10 + 30 * i, 30));
        users.push(format!("{g}.{u}"));
    }
    users.push("nobody".into());
    (cfg, js, users)
}

// tests/reference/negotiator/quota_scale_down.sh: static quotas adding up to more than the
// pool, NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION = False, no surplus. The quotas are scaled
// down (20 and 10 of 16 slots: 10.67 and 5.33), and each group negotiates for the whole slots
// of its allocation only: hgq_negotiate_with_all_groups hands the limit to its callback as an
// int. The next allocation round gives the remainders to `<none>` (negotiated last), again as
// an int: 0.67 + 0.33 adds up to 0.9999999, so nobody gets nothing of 16 or 17 slots, but 1 of
// 9 (quotas 4.5 + 4.5) and 2 of 20 (10.81 + 5.41 + 3.78).
#[test]
fn scaled_static_quotas_leave_leftovers_to_none() {
    // (pool, static quotas of group_a, group_b, ..., idle jobs of nobody, the real matches of
    // the groups' users, then nobody's, the real unmatched slots)
    type Run = (usize, &'static [f64], usize, &'static [usize], usize);
    let runs: &[Run] = &[
        (16, &[20.0, 10.0], 10, &[10, 5, 0], 1),
        (17, &[20.0, 10.0], 10, &[11, 5, 0], 1),
        (9, &[6.0, 6.0], 10, &[4, 4, 1], 0),
        (9, &[6.0, 6.0], 0, &[4, 4, 0], 1),
        (20, &[20.0, 10.0, 7.0], 10, &[10, 5, 3, 2], 0),
    ];
    let acct = Accountant::new(AccountantParams::default());
    for &(n, quotas, none, want, idle) in runs {
        let quotas: Vec<GroupQuota> = quotas.iter().map(|&q| GroupQuota::Static(q)).collect();
        let cfg = NegotiatorConfig::default().with_oversubscription(false);
        let (cfg, js, users) = group_pool(cfg, &quotas, false, none);
        let o = run(slots(n), js, &acct, &cfg);
        let have: Vec<usize> = users.iter().map(|u| got(&o, u)).collect();
        assert_eq!(have, want, "{n} slots, quotas {quotas:?}, nobody {none}");
        assert_eq!(n - o.matches.len(), idle, "{n} slots, quotas {quotas:?}");
    }
}

/// Slot `slot1@<node>` claimed and busy with `user`'s job (CurrentRank 0).
fn busy(node: &str, user: &str) -> ClassAd {
    let mut a = slot(node, 1);
    for (k, v) in [
        ("State", "\"Claimed\"".to_string()),
        ("Activity", "\"Busy\"".to_string()),
        ("RemoteUser", format!("\"{user}@d\"")),
        ("RemoteOwner", format!("\"{user}@d\"")),
        ("CurrentRank", "0".to_string()),
    ] {
        a.insert_expr_str(k, &v).unwrap();
    }
    a
}

// tests/reference/negotiator/floor_pie.sh: a floor round's pie left is the sum of the
// submitters' limits without the floor cap (calculatePieLeft passes isFloorRound = false). a
// and b (priority 1, 8 busy slots each, floor 9) have limits of 0.4 in the floor round and
// round up to one slot each; c (priority 2, floor 1) still finds pie left for its slot, and d
// (priority 0.5, no floor) gets the last two in the main round. Summing the floor-capped
// limits (0.4 + 0.4 + 1) left c nothing after a and b, and d took three.
#[test]
fn floor_round_pie_left_ignores_the_floor() {
    let mut acct = Accountant::new(AccountantParams::default());
    let mut js = Vec::new();
    for (i, (u, prio, floor)) in [
        ("a", 1.0, 9.0),
        ("b", 1.0, 9.0),
        ("c", 2.0, 1.0),
        ("d", 0.5, 0.0),
    ]
    .into_iter()
    .enumerate()
    {
        let name = format!("{u}@d");
        for c in [
            AccountantCommand::SetFactor {
                name: name.clone(),
                value: 1.0,
            },
            AccountantCommand::SetPriority {
                name: name.clone(),
                value: prio,
            },
            AccountantCommand::SetFloor { name, value: floor },
        ] {
            acct.apply(&c).unwrap();
        }
        js.extend((0..10).map(|p| job(u, 1, (10 * i + p) as i64, &[])));
    }
    let mut pool: Vec<ClassAd> = (1..=16)
        .map(|i| busy(&format!("busy{i}"), if i <= 8 { "a" } else { "b" }))
        .collect();
    pool.extend((1..=5).map(|i| slot(&format!("idle{i}"), 1)));
    let o = run(pool, js, &acct, &NegotiatorConfig::default());
    let have: Vec<usize> = ["a", "b", "c", "d"].iter().map(|u| got(&o, u)).collect();
    assert_eq!(have, [1, 1, 1, 2]);
}

// tests/reference/negotiator/autoregroup_pie.sh: with GROUP_AUTOREGROUP the root group's quota
// and allocation are the whole pool in every allocation round, and it negotiates last whatever
// GROUP_SORT_EXPR says. ann (group_a, quota 5) gets 5 in her group's round, then shares the 20
// slots with nobody in the `<none>` round: her limit there is 10 less the 5 she has.
#[test]
fn autoregroup_none_round_shares_the_whole_pool() {
    let acct = Accountant::new(AccountantParams::default());
    let mut cfg = NegotiatorConfig::default()
        .with_oversubscription(false)
        .with_group("group_a", GroupQuota::Static(5.0), false);
    cfg.groups[0].autoregroup = true;
    let none_first = cfg
        .clone()
        .with_group_sort_expr(r#"ifThenElse(AccountingGroup =?= "<none>", 0, 1)"#)
        .unwrap();
    // (configuration, nobody's jobs, the real matches of ann and nobody)
    for (cfg, nobody, want) in [
        (&cfg, 30, [10, 10]),
        (&none_first, 30, [10, 10]),
        (&cfg, 4, [16, 4]),
    ] {
        let mut js: Vec<ClassAd> = (0..nobody).map(|p| job("nobody", 1, p, &[])).collect();
        js.extend(group_jobs("group_a", "ann", 100, 30));
        let o = run(slots(20), js, &acct, cfg);
        let have = [got(&o, "group_a.ann"), got(&o, "nobody")];
        assert_eq!(have, want, "nobody {nobody}, {:?}", cfg.group_sort_expr);
    }
}

// tests/reference/negotiator/group_order.sh: groups whose GROUP_SORT_EXPR values tie negotiate
// in the order of HTCondor's group tree, which hgq_construct_tree builds from GROUP_NAMES
// sorted case-insensitively: group_a (quota 20, oversubscription allowed) goes first and takes
// the whole pool of 20 whether GROUP_NAMES lists it first or not. group_c, listed without a
// quota, is a dynamic group of quota 0.
#[test]
fn tied_groups_negotiate_in_name_order() {
    let acct = Accountant::new(AccountantParams::default());
    for names in ["group_b, group_a, group_c", "group_a, group_b, group_c"] {
        let knobs = [
            ("GROUP_NAMES", names),
            ("GROUP_QUOTA_group_a", "20"),
            ("GROUP_QUOTA_group_b", "20"),
            ("GROUP_ACCEPT_SURPLUS", "False"),
        ];
        let keys: Vec<String> = knobs.iter().map(|(k, _)| k.to_string()).collect();
        let lookup = |k: &str| {
            knobs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        };
        let cfg = NegotiatorConfig::from_lookup(&lookup, &keys).unwrap();
        let mut js = group_jobs("group_b", "ub", 0, 30);
        js.extend(group_jobs("group_a", "ua", 30, 30));
        let o = run(slots(20), js, &acct, &cfg);
        let have = [got(&o, "group_a.ua"), got(&o, "group_b.ub")];
        assert_eq!(have, [20, 0], "GROUP_NAMES = {names}");
        // group_c has no quota: hgq_construct_tree makes it dynamic with 0 (the log's table
        // shows "static N").
        let c = o.group("group_c").unwrap();
        assert!(!c.is_static && c.config_quota == 0.0 && c.quota == 0.0);
    }
}

// tests/reference/negotiator/remainders.sh: without slot weights, hgq_recover_remainders takes
// the fraction off every group's allocation and hands the fractions out again as whole slots,
// round robin (larger subtree quota first when, as in a pool's first cycle, no group has had a
// round robin yet) to the groups that accept surplus, or to `<none>`'s demand.
#[test]
fn remainders_are_handed_out_round_robin() {
    // (dynamic quotas, GROUP_ACCEPT_SURPLUS, nobody's jobs, the real matches of the groups'
    // users then nobody's, the real unmatched slots)
    type Run = (&'static [f64], bool, usize, &'static [usize], usize);
    let runs: &[Run] = &[
        (&[0.45, 0.35, 0.2], true, 0, &[5, 3, 2, 0], 0),
        (&[0.25, 0.25, 0.25, 0.25], true, 0, &[3, 3, 2, 2, 0], 0),
        (&[0.45, 0.35, 0.2], false, 10, &[4, 3, 2, 1], 0),
        (&[0.45, 0.35, 0.2], false, 0, &[4, 3, 2, 0], 1),
    ];
    let acct = Accountant::new(AccountantParams::default());
    for &(quotas, surplus, none, want, idle) in runs {
        let quotas: Vec<GroupQuota> = quotas.iter().map(|&q| GroupQuota::Dynamic(q)).collect();
        let cfg = NegotiatorConfig {
            use_slot_weights: false,
            ..Default::default()
        };
        let (cfg, js, users) = group_pool(cfg, &quotas, surplus, none);
        let o = run(slots(10), js, &acct, &cfg);
        let have: Vec<usize> = users.iter().map(|u| got(&o, u)).collect();
        assert_eq!(
            have, want,
            "quotas {quotas:?}, surplus {surplus}, nobody {none}"
        );
        assert_eq!(
            10 - o.matches.len(),
            idle,
            "quotas {quotas:?}, surplus {surplus}"
        );
    }
}

// tests/reference/negotiator/limit_stop.sh: without preemption and slot weights negotiate()
// ends a submitter's turn at the first request its limit turns away, so the other autoclusters
// are not offered. a and b (limit 2.5 each of 5 slots, jobs in three autoclusters, one cluster
// each) each match two, send a third request, are turned away and stop: 3 requests and 1
// rejection each.
#[test]
fn limit_rejection_ends_the_turn_without_weights() {
    let acct = Accountant::new(AccountantParams::default());
    let cfg = NegotiatorConfig {
        use_slot_weights: false,
        consider_preemption: false,
        ..Default::default()
    };
    // A cluster per autocluster, as the scenario submits them.
    let mut js = Vec::new();
    for (i, u) in ["a", "b"].into_iter().enumerate() {
        for m in 1..=3 {
            let cluster = (3 * i + m) as i64;
            js.extend((0..5).map(|p| job(u, cluster, p, &[("RequestMemory", &m.to_string())])));
        }
    }
    let o = run(slots(5), js, &acct, &cfg);
    assert_eq!([got(&o, "a"), got(&o, "b")], [2, 2]);
    let stat = |n: &str| o.stats[&format!("LastNegotiationCycle{n}0")];
    assert_eq!(stat("NumJobsConsidered"), 6.0);
    assert_eq!(stat("Rejections"), 2.0);
    assert_eq!(o.rejections.len(), 2, "{:?}", o.rejections);
}

// tests/reference/negotiator/cluster_skip.sh: a rejected job takes its autocluster with it for
// the rest of the turn, not the rest of its cluster (the 23.9.6 schedd offers its jobs
// autocluster by autocluster); NEGOTIATE_ALL_JOBS_IN_CLUSTER gives each job an autocluster of
// its own. Proc 0 of the only cluster asks for more memory than any slot has; the other four
// match either way.
#[test]
fn rejection_skips_the_autocluster_not_the_cluster() {
    let acct = Accountant::new(AccountantParams::default());
    let req = [("Requirements", "TARGET.Memory >= RequestMemory")];
    for all in [false, true] {
        let mut js = vec![job("solo", 1, 0, &[req[0], ("RequestMemory", "4096")])];
        js.extend((1..5).map(|p| job("solo", 1, p, &req)));
        let cfg = NegotiatorConfig::default().with_negotiate_all_jobs_in_cluster(all);
        let o = run(slots(5), js, &acct, &cfg);
        assert_eq!(got(&o, "solo"), 4, "NEGOTIATE_ALL_JOBS_IN_CLUSTER = {all}");
        let rejected: Vec<&str> = o.rejections.iter().map(|(j, _)| j.as_str()).collect();
        assert_eq!(rejected, ["1.0"]);
    }
}

// tests/reference/negotiator/ceiling_left.sh: negotiateWithGroup takes a ceiling and the usage
// it is charged with as ints (`submitterCeiling -= (int) usage`). Slots weigh 0.5 and a runs
// one already (usage 0.5) under a ceiling of 3: her room is 3, not 2.5, so she matches six.
#[test]
fn ceiling_room_is_whole() {
    let mut acct = Accountant::new(AccountantParams::default());
    acct.apply(&AccountantCommand::SetCeiling {
        name: "a@d".into(),
        value: 3.0,
    })
    .unwrap();
    let half = |mut s: ClassAd| {
        s.insert_expr_str("SlotWeight", "0.5").unwrap();
        s
    };
    let mut pool = vec![half(busy("busy1", "a"))];
    pool.extend((2..=20).map(|i| half(slot(&format!("node{i}"), 1))));
    let js = (0..20).map(|p| job("a", 1, p, &[])).collect();
    let o = run(pool, js, &acct, &NegotiatorConfig::default());
    assert_eq!(got(&o, "a"), 6);
}

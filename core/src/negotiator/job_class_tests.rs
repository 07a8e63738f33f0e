//! Job classes and shared candidate orders change nothing but speed: on random heterogeneous
//! pools (every slot with its own `Disk`, `KFlops`, `Mips`, `LoadAvg`, `KeyboardIdle`, as real
//! startds advertise them; jobs ranking by `TARGET.KFlops` and comparing `Memory` and `Disk`)
//! the cycle's outcome is the same, match for match and in the same order, as when every
//! autocluster builds and sorts its own candidates ([`negotiate_per_autocluster`]).
use super::config::{GroupQuota, NegotiatorConfig};
use super::cycle::{negotiate, Cycle};
use super::outcome::Outcome;
use super::prep::prepare;
use super::NegotiationInput;
use crate::accountant::{Accountant, AccountantCommand};
use classad::{ClassAd, Value};

/// The cycle's time.
pub(super) const NOW: i64 = 1_700_100_000;

/// [`negotiate`] the straightforward way: every autocluster is a job class of its own, evaluates
/// every expression of a pair itself and builds and sorts its candidates itself, as the cycle
/// did before job classes.
fn negotiate_per_autocluster(
    input: &NegotiationInput,
    a: &Accountant,
    c: &NegotiatorConfig,
) -> Outcome {
    let mut c = Cycle::new(input, a, c, NOW);
    for (i, ac) in c.tables.acs.iter_mut().enumerate() {
        ac.class = i;
        ac.slot_side = [i; 3];
    }
    c.caches.per_autocluster = true;
    c.run();
    c.finish()
}

/// A fixed pseudo-random sequence (splitmix64), so that every run tests the same pools.
struct Seq(u64);

impl Seq {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len() as u64) as usize]
    }
}

/// What varies between the random pools besides the ads.
#[derive(Clone, Copy)]
pub(super) struct Shape {
    /// Disk, benchmarks, load and idle time drawn from a few values: classes of several
    /// slots, and classes that tie on the sort keys (a walk orders those by their first live
    /// slot, which changes as slots are taken).
    pub(super) ties: bool,
    /// One slot in five claimed by a submitter, with PREEMPTION_REQUIREMENTS on priority.
    pub(super) preemption: bool,
    /// Submitters in two groups with static quotas.
    pub(super) groups: bool,
}

fn user(s: u64, groups: bool) -> String {
    if groups {
        format!("group_g{}.u{s}@example.org", s % 2)
    } else {
        format!("u{s}@example.org")
    }
}

fn slot(r: &mut Seq, i: usize, shape: Shape, n_subs: u64) -> ClassAd {
    let mut a = ClassAd::new();
    let machine = format!("node{:03}.example.org", i / 4);
    let sid = (i % 4) as i64 + 1;
    a.insert_str("MyType", "Machine");
    a.insert_str("Name", &format!("slot{sid}@{machine}"));
    a.insert_str("Machine", &machine);
    a.insert_str("Arch", "X86_64");
    a.insert_str("OpSys", r.pick(&["LINUX", "LINUX", "LINUX", "WINDOWS"]));
    a.insert_int("SlotID", sid);
    a.insert_int("Cpus", [1, 1, 1, 2, 4][r.below(5) as usize]);
    a.insert_int("Memory", [1024, 2048, 4096, 8192][r.below(4) as usize]);
    let spread = |r: &mut Seq, base: i64, n: u64, step: i64| {
        if shape.ties {
            base + r.below(3) as i64 * step
        } else {
            base + r.below(n) as i64
        }
    };
    a.insert_int("Disk", spread(r, 50_000, 200_000, 60_000));
    a.insert_int("KFlops", spread(r, 900_000, 400_000, 100_000));
    a.insert_int("Mips", spread(r, 10_000, 20_000, 5_000));
    a.insert_value("LoadAvg", Value::Real(spread(r, 0, 100, 40) as f64 / 100.0));
    a.insert_int("KeyboardIdle", spread(r, 0, 3_600, 1_000));
    a.insert_bool("HasFileTransfer", r.below(8) != 0);
    let start = r.pick(&["true", "true", "KeyboardIdle > 300", "LoadAvg < 0.8"]);
    a.insert_expr_str("Start", start).unwrap();
    a.insert_expr_str(
        "Requirements",
        "START && (TARGET.RequestMemory <= MY.Memory)",
    )
    .unwrap();
    let rank = r.pick(&["0", "0", "TARGET.RequestMemory / 1024"]);
    a.insert_expr_str("Rank", rank).unwrap();
    if shape.preemption && r.below(5) == 0 {
        let s = r.below(n_subs);
        a.insert_str("State", "Claimed");
        a.insert_str("Activity", "Busy");
        a.insert_str("RemoteUser", &user(s, shape.groups));
        a.insert_str("RemoteOwner", &user(s, shape.groups));
        a.insert_value("CurrentRank", Value::Real(0.0));
    } else {
        a.insert_str("State", "Unclaimed");
        a.insert_str("Activity", "Idle");
    }
    a
}

fn job(r: &mut Seq, j: usize, shape: Shape, n_subs: u64) -> ClassAd {
    let s = r.below(n_subs);
    let mut a = ClassAd::new();
    a.insert_str("MyType", "Job");
    a.insert_int("ClusterId", 100 + (j / 10) as i64);
    a.insert_int("ProcId", (j % 10) as i64);
    a.insert_str("Owner", &format!("u{s}"));
    a.insert_str("User", &format!("u{s}@example.org"));
    if shape.groups {
        let u = user(s, true);
        a.insert_str("AccountingGroup", u.split('@').next().unwrap());
    }
    a.insert_int("JobStatus", 1);
    a.insert_int("QDate", 1_700_000_000 + r.below(50) as i64);
    a.insert_int("JobPrio", r.below(3) as i64);
    a.insert_int("RequestCpus", 1);
    a.insert_int(
        "RequestMemory",
        [512, 1024, 2048, 4096][r.below(4) as usize],
    );
    a.insert_int(
        "RequestDisk",
        [10_000, 100_000, 150_000][r.below(3) as usize],
    );
    let req = r.pick(&[
        "(TARGET.Arch == \"X86_64\") && (TARGET.OpSys == \"LINUX\") && (TARGET.Memory >= RequestMemory) && (TARGET.Disk >= RequestDisk) && TARGET.HasFileTransfer",
        "(TARGET.OpSys == \"LINUX\") && (TARGET.Memory >= RequestMemory) && (TARGET.KFlops >= 1000000)",
        "(TARGET.Memory >= RequestMemory) && (TARGET.Mips > 15000 || TARGET.LoadAvg < 0.3)",
        "TARGET.Disk >= RequestDisk",
    ]);
    a.insert_expr_str("Requirements", req).unwrap();
    let rank = r.pick(&[
        "TARGET.KFlops",
        "TARGET.KFlops",
        "0",
        "TARGET.Mips",
        "-TARGET.LoadAvg",
        "TARGET.Memory",
    ]);
    a.insert_expr_str("Rank", rank).unwrap();
    a
}

/// A random heterogeneous pool, its ledger and configuration.
pub(super) fn pool(seed: u64, shape: Shape) -> (NegotiationInput, Accountant, NegotiatorConfig) {
    let mut r = Seq(seed);
    let n_subs = 2 + r.below(5);
    let n_slots = 20 + r.below(120) as usize;
    let n_jobs = 10 + r.below(400) as usize;
    let slots = (0..n_slots)
        .map(|i| slot(&mut r, i, shape, n_subs))
        .collect();
    let jobs = (0..n_jobs).map(|j| job(&mut r, j, shape, n_subs)).collect();
    let mut cfg = NegotiatorConfig::default();
    if shape.preemption {
        cfg = cfg
            .with_preemption_requirements("RemoteUserPrio > SubmitterUserPrio * 1.2")
            .unwrap();
    }
    if shape.groups {
        for g in 0..2 {
            let quota = (n_slots / 3) as f64;
            cfg = cfg.with_group(&format!("group_g{g}"), GroupQuota::Static(quota), g == 0);
        }
    }
    let mut acct = Accountant::new(cfg.accountant.clone());
    for s in 0..n_subs {
        acct.apply(&AccountantCommand::SetPriority {
            name: user(s, shape.groups),
            value: 1.0 + (s % 3) as f64 * 4.0,
        })
        .unwrap();
    }
    (NegotiationInput { slots, jobs }, acct, cfg)
}

fn same_outcome_on_random_pools(shape: Shape, salt: u64) {
    for seed in 0..16 {
        let (input, acct, cfg) = pool(seed * 7919 + salt, shape);
        let shared = negotiate(&input, &acct, &cfg, NOW);
        let reference = negotiate_per_autocluster(&input, &acct, &cfg);
        assert!(
            !reference.matches.is_empty(),
            "seed {seed}: the pool matches something"
        );
        assert_eq!(shared, reference, "seed {seed}");
    }
}

#[test]
fn heterogeneous_pools_match_as_per_autocluster() {
    let shape = Shape {
        ties: false,
        preemption: false,
        groups: false,
    };
    same_outcome_on_random_pools(shape, 1);
}

#[test]
fn heterogeneous_pools_with_tied_keys_match_as_per_autocluster() {
    let shape = Shape {
        ties: true,
        preemption: false,
        groups: false,
    };
    same_outcome_on_random_pools(shape, 2);
}

#[test]
fn heterogeneous_pools_with_preemption_match_as_per_autocluster() {
    let shape = Shape {
        ties: true,
        preemption: true,
        groups: false,
    };
    same_outcome_on_random_pools(shape, 3);
}

#[test]
fn heterogeneous_pools_with_groups_match_as_per_autocluster() {
    let shape = Shape {
        ties: true,
        preemption: false,
        groups: true,
    };
    same_outcome_on_random_pools(shape, 4);
}

/// The pools above do share: autoclusters of different submitters with the same
/// significant attributes fall into one job class, so the comparison tests the shared path.
#[test]
fn autoclusters_of_different_submitters_share_a_job_class() {
    let shape = Shape {
        ties: true,
        preemption: false,
        groups: false,
    };
    let (input, acct, cfg) = pool(11, shape);
    let (tables, _, _) = prepare(&input, &acct, &cfg, NOW);
    let mut classes: Vec<usize> = tables.acs.iter().map(|a| a.class).collect();
    classes.sort_unstable();
    classes.dedup();
    assert!(
        classes.len() < tables.acs.len(),
        "{} job classes for {} autoclusters",
        classes.len(),
        tables.acs.len()
    );
}

/// An expression reading a `Submitter*` attribute makes each autocluster its own job class:
/// the job as matched differs between submitters.
#[test]
fn submitter_attributes_keep_autoclusters_apart() {
    let shape = Shape {
        ties: true,
        preemption: false,
        groups: false,
    };
    let (mut input, acct, cfg) = pool(11, shape);
    for s in &mut input.slots {
        s.insert_expr_str(
            "Requirements",
            "START && (TARGET.RequestMemory <= MY.Memory) && TARGET.SubmitterUserPrio < 5",
        )
        .unwrap();
    }
    let (tables, _, _) = prepare(&input, &acct, &cfg, NOW);
    for (i, a) in tables.acs.iter().enumerate() {
        assert_eq!(a.class, i);
    }
    assert_eq!(
        negotiate(&input, &acct, &cfg, NOW),
        negotiate_per_autocluster(&input, &acct, &cfg)
    );
}

/// Two autoclusters of one job class, of submitters u1 then u2, and three slots that tie on
/// every sort key: a and c alike (one class), b with other Disk (a class of its own). u1 takes
/// a; for u2 the first best slot left in collector order is b, although a's class came first
/// when the job class's order was built.
#[test]
fn tied_classes_are_walked_by_their_first_slot_left() {
    let slot = |name: &str, disk: i64| {
        let mut a = ClassAd::new();
        a.insert_str("MyType", "Machine");
        a.insert_str("Name", name);
        a.insert_str("State", "Unclaimed");
        a.insert_str("Activity", "Idle");
        a.insert_int("SlotID", 1);
        a.insert_int("Cpus", 1);
        a.insert_int("Memory", 1024);
        a.insert_int("KFlops", 1000);
        a.insert_int("Disk", disk);
        a.insert_expr_str("Requirements", "true").unwrap();
        a
    };
    let job = |s: u64| {
        let mut a = ClassAd::new();
        a.insert_str("MyType", "Job");
        a.insert_int("ClusterId", 10 + s as i64);
        a.insert_int("ProcId", 0);
        a.insert_str("Owner", &format!("u{s}"));
        a.insert_str("User", &format!("u{s}@example.org"));
        a.insert_int("JobStatus", 1);
        a.insert_int("RequestMemory", 512);
        a.insert_int("RequestDisk", 50);
        a.insert_expr_str("Requirements", "TARGET.Disk >= RequestDisk")
            .unwrap();
        a
    };
    let input = NegotiationInput {
        slots: vec![slot("a", 100), slot("b", 200), slot("c", 100)],
        jobs: vec![job(1), job(2)],
    };
    let cfg = NegotiatorConfig::default();
    let mut acct = Accountant::new(cfg.accountant.clone());
    for (s, value) in [(1, 1.0), (2, 2.0)] {
        acct.apply(&AccountantCommand::SetPriority {
            name: format!("u{s}@example.org"),
            value,
        })
        .unwrap();
    }
    let o = negotiate(&input, &acct, &cfg, NOW);
    let got: Vec<(&str, &str)> = o
        .matches
        .iter()
        .map(|m| (m.submitter.as_str(), m.slot.as_str()))
        .collect();
    assert_eq!(
        got,
        [("u1@example.org", "a"), ("u2@example.org", "b")],
        "{:?}",
        o.rejections
    );
    assert_eq!(o, negotiate_per_autocluster(&input, &acct, &cfg));
}

/// A pool large enough that a job class's pairs are evaluated on several threads
/// ([`super::spread`]) gives the same outcome as the single-threaded per-autocluster path.
#[test]
fn large_heterogeneous_pool_spread_over_threads_matches_as_per_autocluster() {
    let shape = Shape {
        ties: false,
        preemption: false,
        groups: false,
    };
    let mut r = Seq(2026);
    let n_subs = 4;
    let slots = (0..2100).map(|i| slot(&mut r, i, shape, n_subs)).collect();
    let jobs = (0..40).map(|j| job(&mut r, j, shape, n_subs)).collect();
    let input = NegotiationInput { slots, jobs };
    let cfg = NegotiatorConfig::default();
    let acct = Accountant::new(cfg.accountant.clone());
    let reference = negotiate_per_autocluster(&input, &acct, &cfg);
    assert!(reference.matches.len() > 20);
    assert_eq!(negotiate(&input, &acct, &cfg, NOW), reference);
}

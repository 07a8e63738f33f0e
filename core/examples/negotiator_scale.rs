// Synthetic-pool benchmark of one negotiation cycle.
//
//   cargo run --release -p aerie-core --example negotiator_scale -- \
//       --slots 10000 --jobs 50000 --submitters 50 [--groups] [--preemption] [--pslots [--cp]] \
//       [--heterogeneous] [--busy PERCENT] [--runs 3]
//
// Pool: machines of 8 static 1-core slots (SlotID 1..8), four machine types (memory, KFlops),
// 10% of slots busy when --preemption is given (with PREEMPTION_REQUIREMENTS comparing
// priorities). --busy PERCENT claims that share of the static slots instead (with --busy 100
// and no --preemption: a full pool under HTCondor's default PREEMPTION_REQUIREMENTS, False,
// where only rank preemption is left). --pslots makes each machine one 8-core partitionable slot (matched once a cycle);
// --cp gives those slots the startd's default consumption policy (split within the cycle). Jobs: each submitter has 6 kinds of job (request memory x requirements), so
// about 6 x submitters autoclusters. --groups puts submitters in 5 groups with static quotas
// and surplus. --heterogeneous makes every slot advertise its own Disk, KFlops, Mips, LoadAvg
// and KeyboardIdle, as real startds do (machine types stay: memory and the KFlops band), so
// slots no longer collapse into a few classes. The configuration is HTCondor 23.9.6's default
// (admin ranks included).
use aerie_core::accountant::{Accountant, AccountantCommand, AccountantParams};
use aerie_core::negotiator::{negotiate, GroupQuota, NegotiationInput, NegotiatorConfig};
use classad::{ClassAd, Value};
use std::time::Instant;

fn arg(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// CPU time (user + system) of this process in seconds, from /proc (10 ms resolution): the
/// benchmark machine is shared, so wall time alone says little.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// A fixed pseudo-random sequence (splitmix64), so that every run builds the same pool.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n_slots = arg(&args, "--slots", 10_000);
    let n_jobs = arg(&args, "--jobs", 50_000);
    let n_subs = arg(&args, "--submitters", 50);
    let runs = arg(&args, "--runs", 3);
    let groups = args.iter().any(|a| a == "--groups");
    let preemption = args.iter().any(|a| a == "--preemption");
    let pslots = args.iter().any(|a| a == "--pslots");
    let cp = pslots && args.iter().any(|a| a == "--cp");
    let hetero = args.iter().any(|a| a == "--heterogeneous");
    let busy_pct = arg(&args, "--busy", if preemption { 10 } else { 0 });
    let n_groups = 5;
    let group_of = |s: usize| format!("group_g{}", s % n_groups);
    let user = |s: usize| {
        if groups {
            format!("{}.u{s}@example.org", group_of(s))
        } else {
            format!("u{s}@example.org")
        }
    };

    let t0 = Instant::now();
    let mut slots = Vec::with_capacity(n_slots);
    let per_machine = if pslots { 1 } else { 8 };
    for i in 0..n_slots {
        let m = i / per_machine;
        let kind = m % 4;
        let mut a = ClassAd::new();
        let machine = format!("node{m:05}.example.org");
        let sid = (i % per_machine) + 1;
        a.insert_str("MyType", "Machine");
        a.insert_str("Name", &format!("slot{sid}@{machine}"));
        a.insert_str("Machine", &machine);
        a.insert_str("Arch", "X86_64");
        a.insert_str("OpSys", "LINUX");
        a.insert_int("SlotID", sid as i64);
        a.insert_int("Cpus", if pslots { 8 } else { 1 });
        a.insert_int(
            "Memory",
            [2048, 4096, 2048, 8192][kind] * if pslots { 8 } else { 1 },
        );
        let kflops = [900_000, 1_100_000, 1_300_000, 1_500_000][kind];
        if hetero {
            // What a real startd measures for itself: free disk, benchmarks, load and idle
            // time, different on every slot (a fixed pseudo-random sequence).
            let r = |salt: u64| splitmix(i as u64 * 8 + salt);
            a.insert_int("Disk", 5_000_000 + (r(1) % 10_000_000) as i64);
            a.insert_int("KFlops", kflops - 50_000 + (r(2) % 100_000) as i64);
            a.insert_int("Mips", 20_000 + (r(3) % 20_000) as i64);
            a.insert_value("LoadAvg", Value::Real((r(4) % 1000) as f64 / 1000.0));
            a.insert_int("KeyboardIdle", (r(5) % 1_000_000) as i64);
        } else {
            a.insert_int("Disk", 10_000_000);
            a.insert_int("KFlops", kflops);
        }
        a.insert_bool("HasFileTransfer", true);
        a.insert_int("TotalJobRuntime", 0);
        if pslots {
            a.insert_bool("PartitionableSlot", true);
        }
        if cp {
            a.insert_str("MachineResources", "Cpus Memory Disk Swap");
            for (asset, step) in [("Cpus", 1), ("Memory", 128), ("Disk", 1024)] {
                let e = format!("quantize(target.Request{asset},{{{step}}})");
                a.insert_expr_str(&format!("Consumption{asset}"), &e)
                    .unwrap();
            }
        }
        a.insert_expr_str("Start", "true").unwrap();
        a.insert_expr_str(
            "Requirements",
            "START && (TARGET.RequestMemory <= MY.Memory)",
        )
        .unwrap();
        a.insert_expr_str("Rank", "0").unwrap();
        // Spread evenly: with 10 % every tenth slot (as before this option), with 100 % all.
        let busy = (i * busy_pct) % 100 < busy_pct && !pslots;
        if busy {
            let s = (i / 10) % n_subs;
            a.insert_str("State", "Claimed");
            a.insert_str("Activity", "Busy");
            a.insert_str("RemoteUser", &user(s));
            a.insert_str("RemoteOwner", &user(s));
            a.insert_value("CurrentRank", Value::Real(0.0));
            a.insert_int("TotalJobRuntime", (i % 7200) as i64);
        } else {
            a.insert_str("State", "Unclaimed");
            a.insert_str("Activity", "Idle");
        }
        slots.push(a);
    }
    let mut jobs = Vec::with_capacity(n_jobs);
    for j in 0..n_jobs {
        let s = j % n_subs;
        let kind = (j / n_subs) % 6;
        let cluster = 1000 + (j / 100) as i64;
        let mut a = ClassAd::new();
        a.insert_str("MyType", "Job");
        a.insert_int("ClusterId", cluster);
        a.insert_int("ProcId", (j % 100) as i64);
        let u = user(s);
        a.insert_str("Owner", &format!("u{s}"));
        a.insert_str("User", &format!("u{s}@example.org"));
        if groups {
            a.insert_str("AccountingGroup", u.split('@').next().unwrap_or(""));
        }
        a.insert_int("JobStatus", 1);
        a.insert_int("QDate", 1_700_000_000 + j as i64);
        a.insert_int("JobPrio", 0);
        a.insert_int("RequestCpus", 1);
        a.insert_int("RequestMemory", [1024, 2048, 4096][kind % 3]);
        a.insert_int("RequestDisk", 100_000);
        a.insert_int("ImageSize", 50_000);
        a.insert_str("Cmd", &format!("/home/u{s}/run_{kind}.sh"));
        a.insert_str("Iwd", &format!("/home/u{s}/work/{cluster}"));
        let req = if kind < 3 {
            "(TARGET.Arch == \"X86_64\") && (TARGET.OpSys == \"LINUX\") && (TARGET.Memory >= RequestMemory) && (TARGET.Disk >= RequestDisk) && TARGET.HasFileTransfer"
        } else {
            "(TARGET.Arch == \"X86_64\") && (TARGET.OpSys == \"LINUX\") && (TARGET.Memory >= RequestMemory) && (TARGET.KFlops >= 1000000)"
        };
        a.insert_expr_str("Requirements", req).unwrap();
        a.insert_expr_str(
            "Rank",
            if kind.is_multiple_of(2) {
                "TARGET.KFlops"
            } else {
                "0"
            },
        )
        .unwrap();
        jobs.push(a);
    }
    let mut cfg = NegotiatorConfig::default();
    if preemption {
        cfg = cfg
            .with_preemption_requirements("RemoteUserPrio > SubmitterUserPrio * 1.2")
            .unwrap();
    }
    if groups {
        for g in 0..n_groups {
            cfg = cfg.with_group(
                &format!("group_g{g}"),
                GroupQuota::Static((n_slots / n_groups) as f64 * 0.9),
                true,
            );
        }
    }
    let mut acct = Accountant::new(cfg.accountant.clone());
    let _ = AccountantParams::default();
    for s in 0..n_subs {
        acct.apply(&AccountantCommand::SetPriority {
            name: user(s),
            value: 1.0 + (s % 17) as f64 * 3.0,
        })
        .unwrap();
    }
    let input = NegotiationInput { slots, jobs };
    let build = t0.elapsed();
    let mut times = Vec::new();
    let mut cpu = Vec::new();
    let mut last = None;
    for _ in 0..runs.max(1) {
        let c = cpu_seconds();
        let t = Instant::now();
        let o = negotiate(&input, &acct, &cfg, 1_700_100_000);
        times.push(t.elapsed().as_secs_f64());
        cpu.push(cpu_seconds() - c);
        last = Some(o);
    }
    cpu.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let o = last.expect("at least one run");
    times.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    // Outcome digest (every match: job, slot, reason, preempted submitter), so that a speed
    // change can be checked to leave the outcome exactly as it was.
    let digest = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for m in &o.matches {
            (&m.job, &m.slot, m.reason as u8, &m.preempts, &m.submitter).hash(&mut h);
        }
        h.finish()
    };
    println!(
        "slots={n_slots} jobs={n_jobs} submitters={n_subs} groups={groups} preemption={preemption} busy={busy_pct}% pslots={pslots} cp={cp} heterogeneous={hetero}: \
         matches={} preemptions={} autoclusters={} slot_classes={} pie_spins={} \
         cycle wall min={:.3}s median={:.3}s, cpu min={:.2}s median={:.2}s (build {:.2}s) digest={digest:016x}",
        o.matches.len(),
        o.matches.iter().filter(|m| m.preempts.is_some()).count(),
        o.stats.get("LastNegotiationCycleAutoclusters0").copied().unwrap_or(0.0),
        o.stats.get("LastNegotiationCycleSlotClasses0").copied().unwrap_or(0.0),
        o.stats.get("LastNegotiationCyclePieSpins0").copied().unwrap_or(0.0),
        times[0],
        times[times.len() / 2],
        cpu[0],
        cpu[cpu.len() / 2],
        build.as_secs_f64()
    );
}

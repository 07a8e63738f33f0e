//! The startd's layout, machine detection, load sharing and slot ads against the real
//! HTCondor 23.9.6 startd: for each configuration in `tests/fixtures/startd/*.conf`, the ads the
//! real startd advertised for it (`*.ads`, recorded by `tests/fixtures/startd/record.sh` in
//! the reference chroot, a Debian 13 machine with 2 cores and 24105 MiB) must agree with ours
//! on every attribute below. The readings that vary from run to run (the load average, the
//! idle times, the start time) are taken from the recorded ads and given to our pure code.
use aerie_config::{Config, LoadOptions};
use aerie_node::startd::ad::{slot_ad, MachineFacts, MachineNow, PolicyState};
use aerie_node::startd::layout::layout;
use aerie_node::startd::load::{assign_load_and_idle, Connected, SlotActivity};
use aerie_node::startd::machine::{Idle, Machine, Readings, Utsname};
use aerie_node::startd::Startd;
use classad::ClassAd;
use std::path::PathBuf;

/// The attributes compared, besides each configuration's `STARTD_ATTRS`.
const COMPARED: &[&str] = &[
    "MyType",
    "Name",
    "Machine",
    "MyAddress",
    "StartdIpAddr",
    "UidDomain",
    "FileSystemDomain",
    "HasJobDeferral",
    "SlotID",
    "SlotTypeID",
    "SlotType",
    "PartitionableSlot",
    "DynamicSlot",
    "Cpus",
    "Memory",
    "Disk",
    "TotalSlotCpus",
    "TotalSlotMemory",
    "TotalSlotDisk",
    "TotalCpus",
    "TotalMemory",
    "TotalDisk",
    "TotalSlots",
    "DetectedCpus",
    "DetectedMemory",
    "Arch",
    "OpSys",
    "OpSysAndVer",
    "OpSysLegacy",
    "OpSysName",
    "OpSysShortName",
    "OpSysLongName",
    "OpSysMajorVer",
    "OpSysVer",
    "LoadAvg",
    "CondorLoadAvg",
    "TotalLoadAvg",
    "TotalCondorLoadAvg",
    "KeyboardIdle",
    "ConsoleIdle",
    "State",
    "Activity",
    "EnteredCurrentState",
    "EnteredCurrentActivity",
    "Start",
    "Rank",
    "CurrentRank",
    "SlotWeight",
    "Requirements",
    "WithinResourceLimits",
    "ConsumptionCpus",
    "ConsumptionMemory",
    "ConsumptionDisk",
];

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/startd")
}

/// The reference chroot's machine, as our detection reads it.
fn reference_machine() -> Machine {
    Machine::from_readings(&Readings {
        utsname: Utsname {
            sysname: "Linux".into(),
            nodename: "vm".into(),
            release: "6.18.44-fc-v669".into(),
            version: "#1 SMP PREEMPT_DYNAMIC @0".into(),
            machine: "x86_64".into(),
        },
        issue_lines: vec![Some("Debian GNU/Linux 13 \\n \\l".into()), None, None, None],
        os_release: None,
        cpus: 2,
        meminfo: "MemTotal:       24684084 kB\n".into(),
        cgroup_memory_limit: None,
        execute_free_kib: Some(123_456_789),
    })
    .expect("the reference machine reads")
}

fn unparse(ad: &ClassAd, name: &str) -> Option<String> {
    ad.lookup(name).map(|e| {
        let mut s = String::new();
        classad::format::unparse_expr(&mut s, e);
        s
    })
}

fn int(ad: &ClassAd, name: &str) -> i64 {
    ad.eval_attr(name)
        .as_int()
        .unwrap_or_else(|| panic!("the recorded ad has no integer {name}"))
}

/// Our ads for configuration `name`, beside the recorded ones, by slot id.
fn compare(name: &str) {
    let dir = fixtures();
    let conf = std::fs::read_to_string(dir.join(format!("{name}.conf"))).unwrap();
    let recorded = std::fs::read_to_string(dir.join(format!("{name}.ads"))).unwrap();
    let mut theirs = classad::parse_old_ads(&recorded).unwrap();
    theirs.sort_by_key(|a| int(a, "SlotID"));
    let opts = LoadOptions {
        local_config: false,
        env_overrides: false,
        ..LoadOptions::for_subsystem("STARTD")
    };
    let cfg = Config::parse_str(&conf, &format!("{name}.conf"), &opts).unwrap();
    let machine = reference_machine();
    let l = layout(&cfg, &machine).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(l.slots.len(), theirs.len(), "{name}: number of slots");

    let first = &theirs[0];
    let host = first.eval_attr("Machine").as_str().unwrap().to_string();
    let started = int(first, "DaemonStartTime");
    let now = int(first, "MyCurrentTime");
    let total_load = first.eval_attr("TotalLoadAvg").as_number().unwrap();
    // The machine's idle time is what a slot connected to it shows: the partitionable slot
    // when there is one (it is visited first); without one every slot is disconnected.
    let k = int(first, "KeyboardIdle");
    let idle = Idle {
        keyboard: k,
        console: Some(int(first, "ConsoleIdle")),
    };
    let connected = Connected {
        console_slots: 0,
        keyboard_slots: 0,
        disconnected_idle: now - started + 1200,
    };

    let mut sd = Startd::new(1, "t", started);
    for s in &l.slots {
        sd.add_slot(&host, s);
    }
    let slots: Vec<_> = sd.slots().cloned().collect();
    let activities: Vec<SlotActivity> = slots
        .iter()
        .map(|s| SlotActivity {
            id: s.id,
            sub_id: 0,
            state: "Unclaimed".into(),
            rank: 0.0,
            partitionable: s.is_partitionable(),
            condor_load: 0.0,
        })
        .collect();
    let loads = assign_load_and_idle(&activities, total_load, Some(idle), connected);
    let facts = MachineFacts {
        machine: host.clone(),
        my_address: first.eval_attr("MyAddress").as_str().unwrap().to_string(),
        uid_domain: "ref.test".into(),
        filesystem_domain: "ref.test".into(),
        platform: machine.platform.clone(),
        total: l.total,
        detected: Some((machine.cpus, machine.memory_mib)),
    };
    let machine_now = MachineNow {
        total_slots: slots.len(),
        total_load,
        total_condor_load: 0.0,
    };
    let mut wrong = Vec::new();
    for (i, theirs) in theirs.iter().enumerate() {
        let slot = slots
            .iter()
            .position(|s| s.id as i64 == int(theirs, "SlotID"))
            .unwrap_or_else(|| panic!("{name}: we have no slot {}", int(theirs, "SlotID")));
        let spec = l.slots.iter().find(|s| s.id == slots[slot].id).unwrap();
        let policy = PolicyState::of_claim(&slots[slot]);
        let ours = slot_ad(
            &slots[slot],
            spec,
            &facts,
            &machine_now,
            &policy,
            &loads[slot],
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let attrs = spec.startd_attrs.iter().map(|(n, _)| n.as_str());
        for attr in COMPARED.iter().copied().chain(attrs) {
            let (a, b) = (unparse(&ours, attr), unparse(theirs, attr));
            if a != b {
                wrong.push(format!(
                    "slot {}: {attr}: ours {a:?}, HTCondor's {b:?}",
                    i + 1
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{name}:\n{}", wrong.join("\n"));
}

#[test]
fn the_default_layout_is_one_partitionable_slot_of_everything() {
    compare("default");
}

#[test]
fn static_slot_types_share_the_machine_as_htcondor_does() {
    compare("static");
}

#[test]
fn num_slots_divides_the_machine_evenly() {
    compare("numslots");
}

#[test]
fn a_partitionable_slot_with_a_consumption_policy_beside_an_auto_slot() {
    compare("pslot");
}

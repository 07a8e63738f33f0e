//! A slot's `Machine` ad, as HTCondor's startd publishes it (`Resource::publish_static`,
//! `publish_dynamic`, `CpuAttributes::publish_*`, `MachAttributes::publish_*` in
//! `src/condor_startd.V6/Resource.cpp` and `ResAttributes.cpp`): identity, resources, platform,
//! load and idle times, the policy state, the claim, the configured expressions and
//! `STARTD_ATTRS`, and the private `ClaimId`.
//!
//! The state and activity come from outside ([`PolicyState`]): the startd policy state machine
//! decides them; the claim core alone only knows claimed or not ([`PolicyState::of_claim`],
//! which the simulator uses). The numbers are typed as the real startd types them (checked
//! against `node/tests/fixtures/startd/`): `Cpus` and `TotalSlotCpus` are integers
//! (`(int)(cpus + 0.1)`), `TotalCpus` and `TotalSlotDisk` reals, loads rounded to hundredths.
use super::layout::SlotSpec;
use super::load::SlotLoad;
use super::machine::Platform;
use super::{Resources, Slot, SlotKind};
use classad::ClassAd;

/// What the policy state machine says of a slot.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyState {
    /// `State`: `Owner`, `Unclaimed`, `Matched`, `Claimed`, `Preempting`, `Drained`...
    pub state: String,
    /// `Activity`: `Idle`, `Busy`, `Retiring`, `Suspended`, `Vacating`, `Killing`...
    pub activity: String,
    /// `EnteredCurrentState`, Unix seconds.
    pub entered_state: i64,
    /// `EnteredCurrentActivity`, Unix seconds.
    pub entered_activity: i64,
    /// `CurrentRank`: the slot's `Rank` evaluated against the running job (0 when none).
    pub current_rank: f64,
}

impl PolicyState {
    /// What the claim core alone knows: `Claimed`/`Busy` while a job runs (the simulated
    /// startd's claim starts its job), else `Unclaimed`/`Idle`, since [`Slot::entered`].
    pub fn of_claim(slot: &Slot) -> PolicyState {
        let (state, activity) = match &slot.running {
            Some(_) if !slot.is_partitionable() => ("Claimed", "Busy"),
            _ => ("Unclaimed", "Idle"),
        };
        PolicyState {
            state: state.into(),
            activity: activity.into(),
            entered_state: slot.entered,
            entered_activity: slot.entered,
            current_rank: 0.0,
        }
    }
}

/// What every slot ad of one machine shares.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineFacts {
    /// `Machine`: the host name.
    pub machine: String,
    /// `MyAddress` and `StartdIpAddr`: where the startd takes claims, `<host:port>`.
    pub my_address: String,
    /// `UidDomain`.
    pub uid_domain: String,
    /// `FileSystemDomain`.
    pub filesystem_domain: String,
    /// `Arch`, `OpSys`...
    pub platform: Platform,
    /// `TotalCpus`, `TotalMemory`, `TotalDisk`.
    pub total: Resources,
    /// `DetectedCpus` and `DetectedMemory`, when known.
    pub detected: Option<(u32, i64)>,
}

/// What changes on the machine as a whole between updates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MachineNow {
    /// `TotalSlots`: every slot, dynamic ones included.
    pub total_slots: usize,
    /// `TotalLoadAvg`: the machine's 1-minute load average.
    pub total_load: f64,
    /// `TotalCondorLoadAvg`: the part of it the jobs cause.
    pub total_condor_load: f64,
}

fn hundredths(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// `WithinResourceLimits` of a partitionable slot (HTCondor 23's default).
const WITHIN_RESOURCE_LIMITS: &str = "(MY.Cpus > 0 && TARGET.RequestCpus <= MY.Cpus && \
     MY.Memory > 0 && TARGET.RequestMemory <= MY.Memory && MY.Disk > 0 && \
     TARGET.RequestDisk <= MY.Disk)";

/// `WithinResourceLimits` of a partitionable slot with a consumption policy: a request the
/// negotiator already rewrote to the consumption (`_cp_orig_Request*` set) must fit as is,
/// otherwise the slot's `Consumption*` must.
const WITHIN_RESOURCE_LIMITS_CP: &str = "(ifThenElse(TARGET._cp_orig_RequestCpus isnt \
     undefined,TARGET.RequestCpus <= MY.Cpus,MY.ConsumptionCpus <= MY.Cpus) && \
     ifThenElse(TARGET._cp_orig_RequestDisk isnt undefined,TARGET.RequestDisk <= MY.Disk,\
     MY.ConsumptionDisk <= MY.Disk) && ifThenElse(TARGET._cp_orig_RequestMemory isnt \
     undefined,TARGET.RequestMemory <= MY.Memory,MY.ConsumptionMemory <= MY.Memory))";

/// The k of a dynamic slot's name `slot<N>_<k>@<machine>` (HTCondor's `DSlotId`).
fn dynamic_id(name: &str) -> Option<i64> {
    let local = name.split('@').next()?;
    local.rsplit_once('_')?.1.parse().ok()
}

fn insert_expr(ad: &mut ClassAd, name: &str, text: &str) -> Result<(), String> {
    ad.insert_expr_str(name, text)
        .map_err(|e| format!("slot attribute {name} = {text}: {e}"))
}

/// The slot's ad. `spec` is the slot's configured policy (a dynamic slot's is its parent's),
/// `load` its share of the machine's load and idle times ([`super::load`]). Fails only on an
/// expression that does not parse, naming the attribute (the layout checks the configured
/// ones, so this does not happen for a slot from [`super::layout::layout`]).
pub fn slot_ad(
    slot: &Slot,
    spec: &SlotSpec,
    machine: &MachineFacts,
    now: &MachineNow,
    policy: &PolicyState,
    load: &SlotLoad,
) -> Result<ClassAd, String> {
    let mut ad = ClassAd::with_capacity(64);
    let r = slot.advertised();
    let p = &machine.platform;
    ad.insert_str("MyType", "Machine");
    ad.insert_str("TargetType", "Job");
    ad.insert_str("Name", &slot.name);
    ad.insert_str("Machine", &machine.machine);
    ad.insert_str("MyAddress", &machine.my_address);
    ad.insert_str("StartdIpAddr", &machine.my_address);
    ad.insert_str("UidDomain", &machine.uid_domain);
    ad.insert_str("FileSystemDomain", &machine.filesystem_domain);
    // The access point honours a job's DeferralTime before it activates the claim
    // (node/src/schedd/deferral.rs), so a slot takes deferred and crontab jobs, whose
    // Requirements condor_submit makes ask for `TARGET.HasJobDeferral`.
    ad.insert_bool("HasJobDeferral", true);
    ad.insert_int("SlotID", slot.id as i64);
    ad.insert_int("SlotTypeID", spec.type_id as i64);
    // Platform.
    ad.insert_str("Arch", &p.arch);
    ad.insert_str("OpSys", &p.opsys);
    ad.insert_str("OpSysAndVer", &p.opsys_and_ver);
    ad.insert_str("OpSysLegacy", &p.opsys_legacy);
    ad.insert_str("OpSysName", &p.opsys_name);
    ad.insert_str("OpSysShortName", &p.opsys_name);
    ad.insert_str("OpSysLongName", &p.opsys_long_name);
    ad.insert_int("OpSysMajorVer", p.opsys_major_ver);
    ad.insert_int("OpSysVer", p.opsys_ver);
    // Resources: what the slot has now, its share, the machine's.
    ad.insert_int("Cpus", (r.cpus + 0.1) as i64);
    ad.insert_int("Memory", r.memory as i64);
    ad.insert_int("Disk", r.disk as i64);
    ad.insert_int("TotalSlotCpus", (slot.total.cpus + 0.1) as i64);
    ad.insert_int("TotalSlotMemory", slot.total.memory as i64);
    ad.insert_real("TotalSlotDisk", slot.total.disk.trunc());
    ad.insert_real("TotalCpus", machine.total.cpus);
    ad.insert_int("TotalMemory", machine.total.memory as i64);
    ad.insert_int("TotalDisk", machine.total.disk as i64);
    ad.insert_int("TotalSlots", now.total_slots as i64);
    if let Some((cpus, mem)) = machine.detected {
        ad.insert_int("DetectedCpus", cpus as i64);
        ad.insert_int("DetectedMemory", mem);
    }
    // Load and idle times.
    ad.insert_real("CondorLoadAvg", hundredths(load.condor));
    ad.insert_real("LoadAvg", hundredths(load.owner + load.condor));
    ad.insert_real("TotalLoadAvg", hundredths(now.total_load));
    ad.insert_real("TotalCondorLoadAvg", hundredths(now.total_condor_load));
    if let Some(k) = load.keyboard_idle {
        ad.insert_int("KeyboardIdle", k);
    }
    if let Some(c) = load.console_idle {
        ad.insert_int("ConsoleIdle", c);
    }
    // The policy state.
    ad.insert_str("State", &policy.state);
    ad.insert_str("Activity", &policy.activity);
    ad.insert_int("EnteredCurrentState", policy.entered_state);
    ad.insert_int("EnteredCurrentActivity", policy.entered_activity);
    ad.insert_real("CurrentRank", policy.current_rank);
    insert_expr(&mut ad, "Start", &spec.start)?;
    insert_expr(&mut ad, "Rank", &spec.rank)?;
    insert_expr(&mut ad, "SlotWeight", &spec.slot_weight)?;
    // Kind of slot.
    match &slot.kind {
        SlotKind::Static => {
            ad.insert_str("SlotType", "Static");
            insert_expr(&mut ad, "Requirements", "START")?;
        }
        SlotKind::Partitionable { .. } => {
            ad.insert_str("SlotType", "Partitionable");
            ad.insert_bool("PartitionableSlot", true);
            let limits = match &spec.consumption {
                Some(c) => {
                    insert_expr(&mut ad, "ConsumptionCpus", &c.cpus)?;
                    insert_expr(&mut ad, "ConsumptionMemory", &c.memory)?;
                    insert_expr(&mut ad, "ConsumptionDisk", &c.disk)?;
                    WITHIN_RESOURCE_LIMITS_CP
                }
                None => WITHIN_RESOURCE_LIMITS,
            };
            insert_expr(&mut ad, "WithinResourceLimits", limits)?;
            insert_expr(&mut ad, "Requirements", "START && (WithinResourceLimits)")?;
        }
        SlotKind::Dynamic { parent } => {
            ad.insert_str("SlotType", "Dynamic");
            ad.insert_bool("DynamicSlot", true);
            ad.insert_str("ParentSlotName", parent);
            ad.insert_int("ParentSlotId", slot.id as i64);
            if let Some(k) = dynamic_id(&slot.name) {
                ad.insert_int("DSlotId", k);
            }
            insert_expr(&mut ad, "Requirements", "START")?;
        }
    }
    // The job, while claimed.
    if let Some(j) = slot.running.as_ref().filter(|_| !slot.is_partitionable()) {
        ad.insert_str("RemoteUser", &j.user);
        ad.insert_str("RemoteOwner", &j.user);
        if j.grouped {
            ad.insert_str("AccountingGroup", &j.submitter);
        }
        ad.insert_str("JobId", &j.job);
        ad.insert_int("JobStart", j.start);
        if let Some(l) = &j.concurrency_limits {
            ad.insert_str("ConcurrencyLimits", l);
        }
        ad.insert_int("ClaimTerm", j.term as i64);
    }
    for (name, value) in &spec.startd_attrs {
        insert_expr(&mut ad, name, value)?;
    }
    ad.insert_str("ClaimId", &slot.claim_id);
    Ok(ad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::startd::machine::Utsname;
    use crate::startd::{ClaimSpec, RunningJob, Startd};

    fn facts() -> MachineFacts {
        MachineFacts {
            machine: "node1.example".into(),
            my_address: "<10.0.0.1:9618>".into(),
            uid_domain: "example".into(),
            filesystem_domain: "example".into(),
            platform: Platform {
                arch: "X86_64".into(),
                opsys: "LINUX".into(),
                opsys_and_ver: "RedHat9".into(),
                opsys_legacy: "LINUX".into(),
                opsys_name: "RedHat".into(),
                opsys_long_name: "Red Hat Enterprise Linux 9.4".into(),
                opsys_major_ver: 9,
                opsys_ver: 904,
                utsname: Utsname::default(),
            },
            total: Resources {
                cpus: 4.0,
                memory: 8192.0,
                disk: 1e6,
            },
            detected: None,
        }
    }

    const NOW: MachineNow = MachineNow {
        total_slots: 1,
        total_load: 1.234,
        total_condor_load: 1.0,
    };

    #[test]
    fn the_policy_state_and_the_claim_are_advertised_as_given() {
        let mut sd = Startd::new(1, "t", 100);
        let spec = SlotSpec {
            rank: "Owner == \"alice\"".into(),
            startd_attrs: vec![("Site".into(), "\"lab\"".into())],
            ..SlotSpec::plain(1, false, facts().total)
        };
        sd.add_slot("node1.example", &spec);
        let cid = sd.slot("slot1@node1.example").unwrap().claim_id.clone();
        let job = RunningJob {
            job: "12.3".into(),
            submitter: "alice@example".into(),
            user: "alice@example".into(),
            grouped: false,
            concurrency_limits: None,
            term: 2,
            cycle: 7,
            start: 150,
        };
        sd.request_claim(ClaimSpec {
            slot: "slot1@node1.example".into(),
            claim_id: cid.clone(),
            term: 2,
            job,
            carve: Resources::default(),
        })
        .unwrap();
        let slot = sd.slot("slot1@node1.example").unwrap();
        let policy = PolicyState {
            state: "Claimed".into(),
            activity: "Retiring".into(),
            entered_state: 150,
            entered_activity: 170,
            current_rank: 1.0,
        };
        let load = SlotLoad {
            owner: 0.234,
            condor: 1.0,
            keyboard_idle: Some(60),
            console_idle: None,
        };
        let ad = slot_ad(slot, &spec, &facts(), &NOW, &policy, &load).unwrap();
        let s = |a: &str| ad.eval_attr(a).as_str().map(str::to_string);
        let n = |a: &str| ad.eval_attr(a).as_number();
        assert_eq!(s("Activity").as_deref(), Some("Retiring"));
        assert_eq!(ad.eval_attr("EnteredCurrentActivity").as_int(), Some(170));
        assert_eq!(n("CurrentRank"), Some(1.0));
        assert_eq!(
            (n("LoadAvg"), n("CondorLoadAvg"), n("TotalLoadAvg")),
            (Some(1.23), Some(1.0), Some(1.23))
        );
        assert_eq!(ad.eval_attr("KeyboardIdle").as_int(), Some(60));
        assert!(!ad.contains("ConsoleIdle"));
        assert_eq!(s("RemoteUser").as_deref(), Some("alice@example"));
        assert_eq!(s("JobId").as_deref(), Some("12.3"));
        assert_eq!(ad.eval_attr("JobStart").as_int(), Some(150));
        assert_eq!(s("Site").as_deref(), Some("lab"));
        assert_eq!(s("OpSysAndVer").as_deref(), Some("RedHat9"));
        assert_eq!(s("ClaimId"), Some(cid));
        // The configured Rank is an expression, evaluated against a job by the negotiator.
        let mut text = String::new();
        classad::format::unparse_expr(&mut text, ad.lookup("Rank").unwrap());
        assert_eq!(text, "Owner == \"alice\"");
    }

    #[test]
    fn an_expression_that_does_not_parse_is_an_error_naming_the_attribute() {
        let mut sd = Startd::new(1, "t", 0);
        let spec = SlotSpec {
            startd_attrs: vec![("Broken".into(), "((".into())],
            ..SlotSpec::plain(1, false, facts().total)
        };
        sd.add_slot("node1.example", &spec);
        let slot = sd.slot("slot1@node1.example").unwrap();
        let load = SlotLoad {
            owner: 0.0,
            condor: 0.0,
            keyboard_idle: None,
            console_idle: None,
        };
        let e = slot_ad(
            slot,
            &spec,
            &facts(),
            &NOW,
            &PolicyState::of_claim(slot),
            &load,
        )
        .unwrap_err();
        assert!(e.contains("Broken"), "{e}");
    }
}

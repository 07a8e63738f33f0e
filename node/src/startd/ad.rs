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

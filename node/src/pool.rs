//! The simulated pool's shape (machines, slots, submitters) and the ads it advertises:
//! slot ads (`Machine`), one `Submitter` ad per submitter and one `Scheduler` ad.
//!
//! Ads carry no attribute that changes with the clock alone (no `CurrentTime`, no idle
//! times), so an unchanged slot re-advertised every update interval is recognised by the
//! collector as unchanged.
use crate::access_point::AccessPoint;
use crate::startd::ad::{self, MachineFacts, MachineNow, PolicyState};
use crate::startd::layout::SlotSpec;
use crate::startd::load::SlotLoad;
use crate::startd::machine::{Platform, Utsname};
use crate::startd::{MachineSlots, Resources, Slot, Startd};
use classad::ClassAd;

/// Memory per core of a simulated machine, in MiB (a static slot's `Memory`): 2 GiB.
pub const MEMORY_PER_CORE: f64 = 2048.0;
/// Disk per core of a simulated machine, in KiB (a static slot's `Disk`): about 9.5 GiB.
pub const DISK_PER_CORE: f64 = 10_000_000.0;

/// Which ad: the collector keys ads by type and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AdRef {
    /// A slot's `Machine` ad, by the slot's `Name`.
    Slot(String),
    /// A `Submitter` ad, by the submitter's index into the access point's submitters.
    Submitter(usize),
    /// The access point's one `Scheduler` ad.
    Scheduler,
}

/// What every ad says about where it comes from.
#[derive(Clone, Debug)]
pub struct AdContext {
    /// "<host:port>" of this process's gRPC server: every ad's `MyAddress` (and the slots'
    /// `StartdIpAddr`, the submitters' and scheduler's `ScheddIpAddr`), where the leader
    /// sends requests, grants and claims.
    pub my_address: String,
    /// The slots' `UidDomain` and `FileSystemDomain` (`--domain`).
    pub domain: String,
    /// The access point's (schedd's) name, `<prefix>-ap.<domain>`: the Scheduler ad's `Name`,
    /// the Submitter ads' `ScheddName`, and both ads' `Machine`.
    pub schedd_name: String,
}

/// The host name of simulated machine `m` (numbered from 0): `<prefix><m>.<domain>`, its
/// slots' `Machine`.
pub fn machine_name(prefix: &str, m: u32, domain: &str) -> String {
    format!("{prefix}{m}.{domain}")
}

/// Fills `startd` with `slots` slots (static mode) or cores (partitionable mode),
/// `per_machine` to a machine; the last machine takes what is left over. A static slot is
/// one core with [`MEMORY_PER_CORE`] and [`DISK_PER_CORE`], named `slot1`..`slotN` per
/// machine; in partitionable mode each machine has one partitionable `slot1` holding all its
/// cores.
pub fn build_slots(
    startd: &mut Startd,
    slots: u32,
    per_machine: u32,
    partitionable: bool,
    prefix: &str,
    domain: &str,
) {
    let per = per_machine.max(1);
    let machines = slots.div_ceil(per);
    for m in 0..machines {
        let machine = machine_name(prefix, m, domain);
        let here = per.min(slots - m * per);
        if partitionable {
            let cores = here as f64;
            startd.add_partitionable(
                &machine,
                1,
                Resources {
                    cpus: cores,
                    memory: cores * MEMORY_PER_CORE,
                    disk: cores * DISK_PER_CORE,
                },
            );
        } else {
            for k in 1..=here {
                startd.add_static(
                    &machine,
                    k,
                    Resources {
                        cpus: 1.0,
                        memory: MEMORY_PER_CORE,
                        disk: DISK_PER_CORE,
                    },
                );
            }
        }
    }
}

/// The platform every simulated machine claims: `X86_64` `LINUX`, distribution unknown.
pub fn simulated_platform() -> Platform {
    Platform {
        arch: "X86_64".into(),
        opsys: "LINUX".into(),
        opsys_and_ver: "LINUX0".into(),
        opsys_legacy: "LINUX".into(),
        opsys_name: "LINUX".into(),
        opsys_long_name: "Unknown".into(),
        opsys_major_ver: 0,
        opsys_ver: 0,
        utsname: Utsname::default(),
    }
}

/// The slot's `Machine` ad in old ClassAd syntax, built by the startd's ad builder
/// ([`crate::startd::ad::slot_ad`]) for a simulated machine: HTCondor's default policy
/// (`Start` true, `Rank` 0, `SlotWeight` = `Cpus`), the platform of
/// [`simulated_platform`], the state the claim core knows (`Unclaimed`/`Idle`, or
/// `Claimed`/`Busy` with `RemoteUser`, `JobId`, `JobStart`... and Aerie's `ClaimTerm`) since
/// the slot's last claim or release, and a load of 1.0 per running job (`LoadAvg`,
/// `CondorLoadAvg`; the machine's `TotalLoadAvg` is its running jobs). A simulated machine has
/// no keyboard: its ads carry no `KeyboardIdle` or `ConsoleIdle`. Nothing in the ad changes
/// with the clock alone, so an unchanged slot re-advertised every update interval is
/// recognised by the collector as unchanged. It carries the private `ClaimId`, which the
/// collector keeps apart from what queries return.
pub fn slot_ad(slot: &Slot, machine: &MachineSlots, ctx: &AdContext) -> String {
    let spec = SlotSpec::plain(slot.id, slot.is_partitionable(), slot.total);
    let facts = MachineFacts {
        machine: slot.machine.clone(),
        my_address: ctx.my_address.clone(),
        uid_domain: ctx.domain.clone(),
        filesystem_domain: ctx.domain.clone(),
        platform: simulated_platform(),
        total: machine.total,
        detected: None,
    };
    let now = MachineNow {
        total_slots: machine.slots,
        total_load: machine.busy as f64,
        total_condor_load: machine.busy as f64,
    };
    let policy = PolicyState::of_claim(slot);
    let busy = policy.activity == "Busy";
    let load = SlotLoad {
        owner: 0.0,
        condor: if busy { 1.0 } else { 0.0 },
        keyboard_idle: None,
        console_idle: None,
    };
    match ad::slot_ad(slot, &spec, &facts, &now, &policy, &load) {
        Ok(ad) => ad.to_old_syntax(),
        Err(e) => {
            tracing::error!(slot = %slot.name, error = %e, "cannot build the slot ad");
            String::new()
        }
    }
}

/// The `Submitter` ad of submitter `i` (`None` when there is no such submitter): `Name`
/// (the submitter name the negotiator allocates to), `ScheddName`, `ScheddIpAddr` (where
/// the leader asks for requests), `IdleJobs`, `RunningJobs` and `HeldJobs` (always 0).
/// Jobs being claimed count as idle.
pub fn submitter_ad(ap: &AccessPoint, i: usize, ctx: &AdContext) -> Option<String> {
    let s = ap.submitters().get(i)?;
    let (idle, running) = ap.counts().get(i).copied().unwrap_or((0, 0));
    let mut ad = ClassAd::new();
    ad.insert_str("MyType", "Submitter");
    ad.insert_str("TargetType", "");
    ad.insert_str("Name", &s.name);
    ad.insert_str("ScheddName", &ctx.schedd_name);
    ad.insert_str("ScheddIpAddr", &ctx.my_address);
    ad.insert_str("MyAddress", &ctx.my_address);
    ad.insert_str("Machine", &ctx.schedd_name);
    ad.insert_int("IdleJobs", idle as i64);
    ad.insert_int("RunningJobs", running as i64);
    ad.insert_int("HeldJobs", 0);
    Some(ad.to_old_syntax())
}

/// The access point's `Scheduler` ad: `Name`, `ScheddIpAddr`, `TotalIdleJobs`,
/// `TotalRunningJobs`, `TotalHeldJobs` (always 0) and `NumUsers` (its submitters), as
/// `condor_status -schedd` shows them.
pub fn scheduler_ad(ap: &AccessPoint, ctx: &AdContext) -> String {
    let (idle, running) = ap
        .counts()
        .iter()
        .fold((0, 0), |(i, r), (a, b)| (i + a, r + b));
    let mut ad = ClassAd::new();
    ad.insert_str("MyType", "Scheduler");
    ad.insert_str("TargetType", "");
    ad.insert_str("Name", &ctx.schedd_name);
    ad.insert_str("Machine", &ctx.schedd_name);
    ad.insert_str("ScheddIpAddr", &ctx.my_address);
    ad.insert_str("MyAddress", &ctx.my_address);
    ad.insert_int("TotalIdleJobs", idle as i64);
    ad.insert_int("TotalRunningJobs", running as i64);
    ad.insert_int("TotalHeldJobs", 0);
    ad.insert_int("NumUsers", ap.submitters().len() as i64);
    ad.to_old_syntax()
}

/// The (MyType, Name) the collector keys `r` by; `None` when it no longer exists.
pub fn ad_key(r: &AdRef, ap: &AccessPoint, ctx: &AdContext) -> Option<(&'static str, String)> {
    match r {
        AdRef::Slot(n) => Some(("Machine", n.clone())),
        AdRef::Submitter(i) => ap
            .submitters()
            .get(*i)
            .map(|s| ("Submitter", s.name.clone())),
        AdRef::Scheduler => Some(("Scheduler", ctx.schedd_name.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::startd::{ClaimSpec, RunningJob};

    fn ctx() -> AdContext {
        AdContext {
            my_address: "<127.0.0.1:9>".into(),
            domain: "pool.example".into(),
            schedd_name: "sim-ap.pool.example".into(),
        }
    }

    #[test]
    fn static_pool_shape_and_claimed_slot_ad() {
        let mut sd = Startd::new(1, "t", 500);
        build_slots(&mut sd, 6, 4, false, "sim", "pool.example");
        assert_eq!(sd.len(), 6);
        assert!(sd.slot("slot4@sim0.pool.example").is_some());
        assert!(sd.slot("slot2@sim1.pool.example").is_some());
        assert!(sd.slot("slot3@sim1.pool.example").is_none());
        let cid = sd.slot("slot1@sim0.pool.example").unwrap().claim_id.clone();
        sd.request_claim(ClaimSpec {
            slot: "slot1@sim0.pool.example".into(),
            claim_id: cid.clone(),
            term: 4,
            job: RunningJob {
                job: "7.0".into(),
                submitter: "group_a.alice@pool.example".into(),
                user: "alice@pool.example".into(),
                grouped: true,
                concurrency_limits: Some("licA".into()),
                term: 4,
                cycle: 2,
                start: 1000,
            },
            carve: Resources::default(),
        })
        .unwrap();
        let m = *sd.machine("sim0.pool.example").unwrap();
        let text = slot_ad(sd.slot("slot1@sim0.pool.example").unwrap(), &m, &ctx());
        let ad = classad::parse_ad(&text).expect("slot ad parses");
        let s = |a: &str| ad.eval_attr(a).as_str().map(str::to_string);
        assert_eq!(s("State").as_deref(), Some("Claimed"));
        assert_eq!(s("Activity").as_deref(), Some("Busy"));
        assert_eq!(
            s("AccountingGroup").as_deref(),
            Some("group_a.alice@pool.example")
        );
        assert_eq!(s("JobId").as_deref(), Some("7.0"));
        assert_eq!(s("ClaimId"), Some(cid));
        assert_eq!(ad.eval_attr("ClaimTerm").as_int(), Some(4));
        assert_eq!(ad.eval_attr("SlotWeight").as_int(), Some(1));
        assert_eq!(s("MyAddress").as_deref(), Some("<127.0.0.1:9>"));
        // What cmctl status shows: the activity's start and the load.
        assert_eq!(ad.eval_attr("EnteredCurrentActivity").as_int(), Some(1000));
        assert_eq!(ad.eval_attr("LoadAvg").as_number(), Some(1.0));
        assert_eq!(ad.eval_attr("TotalLoadAvg").as_number(), Some(1.0));
        assert_eq!(ad.eval_attr("TotalCpus").as_number(), Some(4.0));
        assert_eq!(ad.eval_attr("TotalSlots").as_int(), Some(4));
        // An unclaimed slot entered its state when the startd started.
        let text = slot_ad(sd.slot("slot2@sim0.pool.example").unwrap(), &m, &ctx());
        let ad = classad::parse_ad(&text).unwrap();
        assert_eq!(ad.eval_attr("EnteredCurrentState").as_int(), Some(500));
        assert_eq!(ad.eval_attr("LoadAvg").as_number(), Some(0.0));
        assert_eq!(ad.eval_attr("State").as_str(), Some("Unclaimed"));
    }

    #[test]
    fn partitionable_pool_has_one_slot_per_machine() {
        let mut sd = Startd::new(1, "t", 500);
        build_slots(&mut sd, 10, 4, true, "sim", "d");
        assert_eq!(sd.len(), 3);
        let last = sd.slot("slot1@sim2.d").unwrap();
        assert_eq!(last.total.cpus, 2.0);
        let m = *sd.machine("sim2.d").unwrap();
        let ad = classad::parse_ad(&slot_ad(last, &m, &ctx())).unwrap();
        assert_eq!(ad.eval_attr("PartitionableSlot").as_bool(), Some(true));
        assert_eq!(ad.eval_attr("State").as_str(), Some("Unclaimed"));
    }

    #[test]
    fn simulated_jobs_match_simulated_slots_until_a_partitionable_slot_is_full() {
        // The slot ads now carry HTCondor's Requirements (START, and WithinResourceLimits on
        // a partitionable slot): the simulator's own jobs must still match them both ways.
        let users = vec!["alice".to_string()];
        let mut ap = AccessPoint::new(&users, &[], "pool.example", vec![], 1);
        ap.add_job(0);
        let job = classad::parse_ad(&ap.idle_job_ads()[0]).unwrap();
        let mut sd = Startd::new(1, "t", 0);
        build_slots(&mut sd, 1, 1, false, "s", "d");
        build_slots(&mut sd, 1, 1, true, "p", "d");
        for (slot, machine) in [("slot1@s0.d", "s0.d"), ("slot1@p0.d", "p0.d")] {
            let m = *sd.machine(machine).unwrap();
            let ad = classad::parse_ad(&slot_ad(sd.slot(slot).unwrap(), &m, &ctx())).unwrap();
            assert!(classad::symmetric_match(&ad, &job), "{slot} does not match");
        }
        // The partitionable slot's one core carved: nothing left to match.
        let cid = sd.slot("slot1@p0.d").unwrap().claim_id.clone();
        sd.request_claim(ClaimSpec {
            slot: "slot1@p0.d".into(),
            claim_id: cid,
            term: 1,
            job: RunningJob {
                job: "1.0".into(),
                submitter: "alice@pool.example".into(),
                user: "alice@pool.example".into(),
                grouped: false,
                concurrency_limits: None,
                term: 1,
                cycle: 1,
                start: 5,
            },
            carve: Resources {
                cpus: 1.0,
                memory: 512.0,
                disk: 1024.0,
            },
        })
        .unwrap();
        let m = *sd.machine("p0.d").unwrap();
        assert_eq!((m.slots, m.busy), (2, 1));
        let ad = classad::parse_ad(&slot_ad(sd.slot("slot1@p0.d").unwrap(), &m, &ctx())).unwrap();
        assert!(!classad::symmetric_match(&ad, &job));
        assert_eq!(ad.eval_attr("TotalSlots").as_int(), Some(2));
        let d = classad::parse_ad(&slot_ad(sd.slot("slot1_1@p0.d").unwrap(), &m, &ctx())).unwrap();
        assert_eq!(d.eval_attr("EnteredCurrentActivity").as_int(), Some(5));
        assert_eq!(d.eval_attr("ParentSlotName").as_str(), Some("slot1@p0.d"));
        assert_eq!(d.eval_attr("DSlotId").as_int(), Some(1));
        assert_eq!(d.eval_attr("SlotType").as_str(), Some("Dynamic"));
    }

    #[test]
    fn submitter_and_scheduler_ads_count_jobs() {
        let users = vec!["alice".to_string(), "bob".to_string()];
        let mut ap = AccessPoint::new(&users, &[], "pool.example", vec![], 1);
        for _ in 0..3 {
            ap.add_job(0);
        }
        let a = classad::parse_ad(&submitter_ad(&ap, 0, &ctx()).unwrap()).unwrap();
        assert_eq!(a.eval_attr("Name").as_str(), Some("alice@pool.example"));
        assert_eq!(a.eval_attr("IdleJobs").as_int(), Some(2));
        assert_eq!(a.eval_attr("ScheddIpAddr").as_str(), Some("<127.0.0.1:9>"));
        let s = classad::parse_ad(&scheduler_ad(&ap, &ctx())).unwrap();
        assert_eq!(s.eval_attr("TotalIdleJobs").as_int(), Some(3));
    }
}

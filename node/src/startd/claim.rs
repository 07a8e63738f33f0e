//! The claim core: which slots exist, which are claimed by whom, and the rules a claim must
//! pass (HTCondor's `src/condor_startd.V6/claim.cpp` and `command.cpp`, plus Aerie's term
//! fence). Pure (no I/O, no clock: time is passed in; claim ids come from a seeded
//! generator), so the rules are unit-tested directly and the gRPC `Startd` service and the
//! in-process access point share them.
//!
//! The rules:
//! * a claim must present the slot's current `ClaimId` (the capability the collector hands
//!   only to the winner of a match); the id is renewed after every release, so a grant for
//!   an earlier idle period of the slot is useless;
//! * a static slot (and each dynamic slot) holds one claim at a time;
//! * a claim whose Raft term is older than the newest term the slot has seen is refused, so a
//!   deposed leader's late grants lose to a newer leader's. A partitionable slot keeps the
//!   newest term for itself and all the dynamic slots carved from it;
//! * a partitionable slot's capability is rotated after every carve (issue 16, item 6), as
//!   HTCondor's startd does when it answers a claim with the leftover slot's new claim id
//!   (`REQUEST_CLAIM_LEFTOVERS` in `src/condor_startd.V6/command.cpp`, read by
//!   `src/condor_daemon_client/dc_startd.cpp`): an access point that once held the
//!   partitionable slot's capability cannot come back later and carve more of the machine.
//!
//! The rotated-out capability stays good for [`PSLOT_CLAIM_GRACE`] seconds. The negotiator
//! matches from a snapshot of the slot ads, and with a consumption policy it hands the same
//! partitionable slot to several jobs in one cycle, every grant carrying the capability the
//! snapshot held (`core/src/negotiator`); those claims arrive one after the other, each after
//! the previous one rotated the capability. Until the node's re-advertised ad (with the new
//! `ClaimId`) reaches the collector, the next cycle's snapshot also still holds the old one.
//! Why a bounded time and not "until the collector has the new ad": the node does not learn
//! when a snapshot was taken, and a deadline it keeps itself is pure and checkable. The
//! length is HTCondor's `MATCH_TIMEOUT` default (120 s), the time its startd holds a match
//! for the schedd to claim: far longer than a cycle's delivery and than the moment it takes
//! the node to stream the changed ad to its collectors (`node/src/advertise.rs` sends a change
//! within about 100 ms), short enough that an old capability is useless soon after. A grant
//! made from a snapshot older than that is refused as `bad claim id`, and its job is matched
//! again in a later cycle.
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::fmt;

/// How long (seconds) a partitionable slot still honours a capability rotated out by a carve
/// (HTCondor's `MATCH_TIMEOUT` default); see the module doc.
pub const PSLOT_CLAIM_GRACE: i64 = 120;

/// An amount of the three resources HTCondor's startd divides a machine by: what a slot has
/// (`Cpus`, `Memory`, `Disk`), what a job asks for (`RequestCpus`, `RequestMemory`,
/// `RequestDisk`) and what a claim carves out of a partitionable slot. Kept as `f64` as the
/// ClassAd numbers they come from; slot ads print them truncated to integers.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Resources {
    /// Cores (HTCondor's `Cpus` / `RequestCpus`).
    pub cpus: f64,
    /// Memory in MiB (HTCondor's `Memory` / `RequestMemory`).
    pub memory: f64,
    /// Disk in KiB (HTCondor's `Disk` / `RequestDisk`).
    pub disk: f64,
}

impl Resources {
    fn fits_in(&self, other: &Resources) -> bool {
        self.cpus <= other.cpus && self.memory <= other.memory && self.disk <= other.disk
    }
    fn minus(&self, o: &Resources) -> Resources {
        Resources {
            cpus: self.cpus - o.cpus,
            memory: self.memory - o.memory,
            disk: self.disk - o.disk,
        }
    }
    fn plus(&self, o: &Resources) -> Resources {
        Resources {
            cpus: self.cpus + o.cpus,
            memory: self.memory + o.memory,
            disk: self.disk + o.disk,
        }
    }
}

/// What kind of slot, as HTCondor's `SlotType` attribute says (`"Static"`, `"Partitionable"`,
/// `"Dynamic"`).
#[derive(Clone, Debug, PartialEq)]
pub enum SlotKind {
    /// A fixed share of the machine that runs one job at a time (HTCondor's default
    /// `SLOT_TYPE_n` slots).
    Static,
    /// A partitionable slot (`PartitionableSlot = True`): it is never claimed as a whole;
    /// each claim carves a dynamic slot of the requested size out of what is left.
    Partitionable {
        /// What is not yet carved out; also what the slot ad advertises as its `Cpus`,
        /// `Memory` and `Disk`.
        free: Resources,
        /// The number the next dynamic slot gets (`slot<id>_<next_dynamic>@<machine>`);
        /// starts at 1 and only grows, so a name is never reused within a run.
        next_dynamic: u32,
    },
    /// A dynamic slot (`DynamicSlot = True`) carved from the partitionable slot named
    /// `parent`; it exists only while its claim lasts and is removed when released.
    Dynamic {
        /// The partitionable slot's name (the ad's `ParentSlotName`).
        parent: String,
    },
}

/// The job a claimed slot runs: what the slot ad shows about it while the slot is
/// `Claimed`/`Busy`, and what the accountant charges the slot to.
///
/// The simulated startd has no separate activation: the claim that a grant makes also
/// starts the job, so a claimed slot is always `Busy` (HTCondor's startd would be
/// `Claimed`/`Idle` between `REQUEST_CLAIM` and `ACTIVATE_CLAIM`).
#[derive(Clone, Debug, PartialEq)]
pub struct RunningJob {
    /// The job's id, "CLUSTER.PROC" (the slot ad's `JobId`).
    pub job: String,
    /// The submitter the job negotiated as (user@domain or group.user@domain); the slot ad's
    /// `AccountingGroup` when [`grouped`](Self::grouped).
    pub submitter: String,
    /// The job's `User` (user@domain); the slot ad's `RemoteUser` and `RemoteOwner`.
    pub user: String,
    /// The job had an accounting group; only then does the slot advertise `AccountingGroup`,
    /// which the accountant charges instead of `RemoteUser`.
    pub grouped: bool,
    /// The job's `ConcurrencyLimits` (comma-separated limit names), copied to the slot ad so
    /// the negotiator counts the limits the running job holds.
    pub concurrency_limits: Option<String>,
    /// Raft term of the leader whose grant made the claim (the slot ad's `ClaimTerm`, an
    /// Aerie attribute with no HTCondor counterpart).
    pub term: u64,
    /// Negotiation cycle (within [`term`](Self::term)) that made the match; kept for the
    /// record, not advertised.
    pub cycle: u64,
    /// When the claim started the job, in Unix seconds (the slot ad's `JobStart`).
    pub start: i64,
}

/// One slot of a startd: the unit HTCondor's negotiator matches a job to, advertised as one
/// `Machine` ad.
#[derive(Clone, Debug)]
pub struct Slot {
    /// The slot's `Name`: `slot<id>@<machine>`, or `slot<id>_<k>@<machine>` for the k-th
    /// dynamic slot carved from partitionable slot `id`; the collector keys the ad by it.
    pub name: String,
    /// The machine's host name (the ad's `Machine`), shared by all its slots.
    pub machine: String,
    /// The slot's `SlotID` (the N of slotN@...); a dynamic slot keeps its parent's.
    pub id: u32,
    /// The slot's `SlotTypeID` (the N of `SLOT_TYPE_<N>`); a dynamic slot keeps its parent's.
    pub type_id: u32,
    /// Static, partitionable or dynamic.
    pub kind: SlotKind,
    /// What the slot holds (`TotalSlotCpus`, `TotalSlotMemory`, `TotalSlotDisk`): for a
    /// partitionable slot its whole share of the machine, carved or not; for a dynamic slot
    /// what was carved for it.
    pub total: Resources,
    /// The slot's current claim capability, HTCondor's private `ClaimId` attribute: the
    /// collector hands it only to the negotiator, which passes it to the match's access
    /// point. A static slot gets a fresh one after every release; a partitionable slot gets
    /// a fresh one after every carve; a dynamic slot gets its own when carved.
    pub claim_id: String,
    /// A partitionable slot's rotated-out capabilities and until when (Unix seconds) each is
    /// still honoured ([`PSLOT_CLAIM_GRACE`]); empty on other slots.
    pub retired_claim_ids: Vec<(String, i64)>,
    /// The newest Raft term this slot has seen in a claim request that presented the right
    /// [`claim_id`](Self::claim_id), whether the claim was then accepted or refused as busy;
    /// a request with an older term is refused (the term fence).
    pub newest_term: u64,
    /// The job the slot runs, when claimed. Always `None` on a partitionable slot (its jobs
    /// run in its dynamic slots).
    pub running: Option<RunningJob>,
    /// When the slot was last claimed or released (created, for a slot never claimed), Unix
    /// seconds: what the claim core alone knows of `EnteredCurrentState`.
    pub entered: i64,
}

impl Slot {
    /// Whether `claim_id` claims this slot at `now`: the current capability, or a
    /// partitionable slot's capability rotated out less than [`PSLOT_CLAIM_GRACE`] ago.
    pub fn accepts(&self, claim_id: &str, now: i64) -> bool {
        self.claim_id == claim_id
            || self
                .retired_claim_ids
                .iter()
                .any(|(id, until)| id == claim_id && now < *until)
    }

    /// Gives the slot a `fresh` capability at `now`, honouring the current one for
    /// [`PSLOT_CLAIM_GRACE`] more seconds (and forgetting those whose grace is over).
    fn rotate_claim_id(&mut self, fresh: String, now: i64) {
        self.retired_claim_ids.retain(|(_, until)| now < *until);
        let old = std::mem::replace(&mut self.claim_id, fresh);
        self.retired_claim_ids.push((old, now + PSLOT_CLAIM_GRACE));
    }

    /// The slot is partitionable (claims carve dynamic slots from it).
    pub fn is_partitionable(&self) -> bool {
        matches!(self.kind, SlotKind::Partitionable { .. })
    }
    /// Resources the slot advertises (a partitionable slot advertises what is left).
    pub fn advertised(&self) -> Resources {
        match &self.kind {
            SlotKind::Partitionable { free, .. } => *free,
            _ => self.total,
        }
    }
}

/// One claim request (HTCondor's `REQUEST_CLAIM`), whichever way it arrived: over the
/// `Startd.RequestClaim` RPC or straight from this process's own access point.
#[derive(Clone, Debug)]
pub struct ClaimSpec {
    /// The slot to claim: a static or partitionable slot's `Name` (dynamic slots cannot be
    /// claimed directly).
    pub slot: String,
    /// The capability the negotiator handed the access point; must be the slot's current
    /// `ClaimId` (or a partitionable slot's previous one, within its grace).
    pub claim_id: String,
    /// Raft term of the leader that granted the match, checked against the slot's fence.
    pub term: u64,
    /// The job the claim will run; its `start` is the claim's time (Unix seconds), which the
    /// grace of a rotated capability is measured against.
    pub job: RunningJob,
    /// What to carve from a partitionable slot (ignored for static slots).
    pub carve: Resources,
}

/// Why the startd refused a claim request; [`kind`](Self::kind) is the short reason the
/// claims log and `check-claims` summaries count.
#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    /// This startd has no slot of that name (e.g. a released dynamic slot, or a stale ad).
    NoSuchSlot,
    /// The capability is not the slot's current `ClaimId`: forged, or from an earlier
    /// unclaimed period of the slot. The slot's term fence is left untouched.
    BadClaimId,
    /// The grant comes from an older Raft term than one the slot has already seen: a deposed
    /// leader's late grant.
    StaleTerm {
        /// The request's term.
        term: u64,
        /// The newest term the slot has seen (a partitionable slot's covers all its dynamic
        /// slots).
        newest: u64,
    },
    /// The static slot already runs a job; it holds one claim at a time.
    AlreadyClaimed {
        /// The running job's id, CLUSTER.PROC.
        by: String,
    },
    /// A dynamic slot is claimed through its partitionable slot, never directly.
    NotClaimable,
    /// The partitionable slot has too little left to carve the request, or the request asks
    /// for no cpus.
    Insufficient {
        /// What the claim asked to carve.
        want: Resources,
        /// What the partitionable slot has left.
        free: Resources,
    },
}

impl Refusal {
    /// A short, stable reason for logs and summaries ("stale term", "already claimed"...).
    pub fn kind(&self) -> &'static str {
        match self {
            Refusal::NoSuchSlot => "no such slot",
            Refusal::BadClaimId => "bad claim id",
            Refusal::StaleTerm { .. } => "stale term",
            Refusal::AlreadyClaimed { .. } => "already claimed",
            Refusal::NotClaimable => "not claimable",
            Refusal::Insufficient { .. } => "insufficient resources",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::StaleTerm { term, newest } => write!(f, "stale term {term} < {newest}"),
            Refusal::AlreadyClaimed { by } => write!(f, "already claimed (by job {by})"),
            Refusal::Insufficient { want, free } => write!(
                f,
                "insufficient resources: want {} cpus {} MB {} KB, free {} cpus {} MB {} KB",
                want.cpus, want.memory, want.disk, free.cpus, free.memory, free.disk
            ),
            other => f.write_str(other.kind()),
        }
    }
}

/// A claim the startd accepted: where the job now runs and how to release it.
#[derive(Clone, Debug, PartialEq)]
pub struct Claimed {
    /// The slot that runs the job (a new dynamic slot when carved).
    pub slot: String,
    /// The capability to release it with.
    pub claim_id: String,
    /// The partitionable slot carved from, if any.
    pub parent: Option<String>,
}

/// A release that happened (HTCondor's `RELEASE_CLAIM`).
#[derive(Clone, Debug, PartialEq)]
pub struct Released {
    /// The job the claim was running.
    pub job: RunningJob,
    /// The slot no longer exists (a dynamic slot); its ad should be invalidated.
    pub removed: bool,
    /// For a dynamic slot, the partitionable slot its resources went back to (whose ad
    /// changed).
    pub parent: Option<String>,
}

/// The startd: every slot of this process (for the simulator, every machine it plays), the
/// claims on them and the generator of their claim ids.
pub struct Startd {
    slots: BTreeMap<String, Slot>,
    machines: BTreeMap<String, MachineSlots>,
    rng: StdRng,
    /// Put into claim ids, so ids from different simulators never collide.
    tag: String,
    /// When the startd started (Unix seconds): when its slots entered their first state.
    started: i64,
}

/// What the slots of one machine add up to, kept as claims come and go so an ad can show
/// `TotalSlots` and the load without walking every slot.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MachineSlots {
    /// The static and partitionable slots' shares added up (`TotalCpus`...).
    pub total: Resources,
    /// Slots now, dynamic ones included (`TotalSlots`).
    pub slots: usize,
    /// Slots running a job now.
    pub busy: usize,
}

impl Startd {
    /// An empty startd started at `now` (Unix seconds); `tag` (e.g. the listen address) is
    /// part of every claim id.
    pub fn new(seed: u64, tag: &str, now: i64) -> Startd {
        Startd::with_rng(StdRng::seed_from_u64(seed ^ 0x5eed_c1a1), tag, now)
    }

    /// A startd whose claim ids are unguessable: its generator (ChaCha, a CSPRNG) is seeded
    /// from the operating system's random source, so ids never repeat across restarts.
    pub fn new_secure(tag: &str, now: i64) -> Startd {
        Startd::with_rng(StdRng::from_entropy(), tag, now)
    }

    fn with_rng(rng: StdRng, tag: &str, now: i64) -> Startd {
        Startd {
            slots: BTreeMap::new(),
            machines: BTreeMap::new(),
            rng,
            tag: tag.to_string(),
            started: now,
        }
    }

    /// A claim id: the startd's address and a 128-bit capability (whoever holds it may use
    /// the claim, so it must not be guessable).
    fn new_claim_id(&mut self) -> String {
        format!("<{}>#{:032x}", self.tag, self.rng.gen::<u128>())
    }

    /// Adds a static slot `slot<id>@<machine>` of slot type 0.
    pub fn add_static(&mut self, machine: &str, id: u32, total: Resources) {
        self.add(machine, id, 0, SlotKind::Static, total)
    }

    /// Adds a partitionable slot `slot<id>@<machine>` of slot type 0 holding `total`.
    pub fn add_partitionable(&mut self, machine: &str, id: u32, total: Resources) {
        let kind = SlotKind::Partitionable {
            free: total,
            next_dynamic: 1,
        };
        self.add(machine, id, 0, kind, total)
    }

    /// Adds the slot a layout describes (`super::layout::layout`).
    pub fn add_slot(&mut self, machine: &str, spec: &super::layout::SlotSpec) {
        let kind = if spec.partitionable {
            SlotKind::Partitionable {
                free: spec.resources,
                next_dynamic: 1,
            }
        } else {
            SlotKind::Static
        };
        self.add(machine, spec.id, spec.type_id, kind, spec.resources)
    }

    fn add(&mut self, machine: &str, id: u32, type_id: u32, kind: SlotKind, total: Resources) {
        let name = format!("slot{id}@{machine}");
        let claim_id = self.new_claim_id();
        let m = self.machines.entry(machine.to_string()).or_default();
        m.total = m.total.plus(&total);
        m.slots += 1;
        self.slots.insert(
            name.clone(),
            Slot {
                name,
                machine: machine.to_string(),
                id,
                type_id,
                kind,
                total,
                claim_id,
                retired_claim_ids: Vec::new(),
                newest_term: 0,
                running: None,
                entered: self.started,
            },
        );
    }

    /// What the slots of `machine` add up to now.
    pub fn machine(&self, machine: &str) -> Option<&MachineSlots> {
        self.machines.get(machine)
    }

    fn machine_mut(&mut self, machine: &str) -> &mut MachineSlots {
        self.machines.entry(machine.to_string()).or_default()
    }

    /// The slot named `name` (its `Name`), if it exists.
    pub fn slot(&self, name: &str) -> Option<&Slot> {
        self.slots.get(name)
    }

    /// Raises every slot's term fence to at least `term` (the newest term the node saw
    /// before a restart, [`super::term`]).
    pub fn fence_all(&mut self, term: u64) {
        for s in self.slots.values_mut() {
            s.newest_term = s.newest_term.max(term);
        }
    }

    /// Every slot, dynamic ones included, in name order.
    pub fn slots(&self) -> impl Iterator<Item = &Slot> {
        self.slots.values()
    }

    /// How many slots exist now (dynamic slots included, so it changes as claims come and
    /// go in partitionable mode).
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// There are no slots at all.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Claims a slot (or carves a dynamic slot from a partitionable one).
    ///
    /// The capability is checked first and a wrong one teaches the slot nothing (anyone can
    /// send a term); with the right capability the term is fenced and recorded, then the
    /// slot must be free (or have room to carve).
    pub fn request_claim(&mut self, req: ClaimSpec) -> Result<Claimed, Refusal> {
        let slot = self.slots.get_mut(&req.slot).ok_or(Refusal::NoSuchSlot)?;
        let now = req.job.start;
        if !slot.accepts(&req.claim_id, now) {
            return Err(Refusal::BadClaimId);
        }
        if req.term < slot.newest_term {
            return Err(Refusal::StaleTerm {
                term: req.term,
                newest: slot.newest_term,
            });
        }
        slot.newest_term = req.term;
        match &mut slot.kind {
            // A dynamic slot is claimed only by the preempting claim it was handed over to
            // ([`Startd::hand_over`]); while it runs a job, a claim on it is a preemption.
            SlotKind::Static | SlotKind::Dynamic { .. } => {
                if let Some(r) = &slot.running {
                    return Err(Refusal::AlreadyClaimed { by: r.job.clone() });
                }
                slot.entered = req.job.start;
                slot.running = Some(req.job);
                let claimed = Claimed {
                    slot: slot.name.clone(),
                    claim_id: slot.claim_id.clone(),
                    parent: None,
                };
                let machine = slot.machine.clone();
                self.machine_mut(&machine).busy += 1;
                Ok(claimed)
            }
            SlotKind::Partitionable { free, next_dynamic } => {
                let want = req.carve;
                if want.cpus <= 0.0 || !want.fits_in(free) {
                    return Err(Refusal::Insufficient { want, free: *free });
                }
                *free = free.minus(&want);
                let k = *next_dynamic;
                *next_dynamic += 1;
                let parent = slot.name.clone();
                let machine = slot.machine.clone();
                let (id, type_id) = (slot.id, slot.type_id);
                let term = slot.newest_term;
                let name = format!("slot{id}_{k}@{machine}");
                let claim_id = self.new_claim_id();
                let m = self.machine_mut(&machine);
                m.slots += 1;
                m.busy += 1;
                self.slots.insert(
                    name.clone(),
                    Slot {
                        name: name.clone(),
                        machine,
                        id,
                        type_id,
                        kind: SlotKind::Dynamic {
                            parent: parent.clone(),
                        },
                        total: want,
                        claim_id: claim_id.clone(),
                        retired_claim_ids: Vec::new(),
                        newest_term: term,
                        entered: req.job.start,
                        running: Some(req.job),
                    },
                );
                // Whoever held the partitionable slot's capability has had its carve.
                let fresh = self.new_claim_id();
                if let Some(p) = self.slots.get_mut(&parent) {
                    p.rotate_claim_id(fresh, now);
                }
                Ok(Claimed {
                    slot: name,
                    claim_id,
                    parent: Some(parent),
                })
            }
        }
    }

    /// Ends the claim `claim_id` holds on a dynamic slot `slot` at `now` but keeps the slot,
    /// with a fresh capability, for the preempting claim waiting for it (HTCondor's
    /// `r_pre` becoming `r_cur` on the same dynamic slot). Gives the job that ran.
    pub fn hand_over(
        &mut self,
        slot: &str,
        claim_id: &str,
        now: i64,
    ) -> Result<RunningJob, String> {
        let fresh = self.new_claim_id();
        let s = self
            .slots
            .get_mut(slot)
            .ok_or_else(|| format!("no slot {slot:?}"))?;
        if s.claim_id != claim_id {
            return Err(format!("bad claim id for slot {slot:?}"));
        }
        let job = s
            .running
            .take()
            .ok_or_else(|| format!("slot {slot:?} is not claimed"))?;
        s.claim_id = fresh;
        s.entered = now;
        let machine = s.machine.clone();
        self.machine_mut(&machine).busy -= 1;
        Ok(job)
    }

    /// Removes dynamic slot `slot` if it holds no claim (one handed over to a preempting claim
    /// that was then refused), giving its resources back to its partitionable slot; the
    /// parent's name, or `None` when there was nothing to remove.
    pub fn drop_free_dynamic(&mut self, slot: &str) -> Option<String> {
        let s = self.slots.get(slot)?;
        let SlotKind::Dynamic { parent } = s.kind.clone() else {
            return None;
        };
        if s.running.is_some() {
            return None;
        }
        let d = self.slots.remove(slot)?;
        if let Some(p) = self.slots.get_mut(&parent) {
            if let SlotKind::Partitionable { free, .. } = &mut p.kind {
                *free = free.plus(&d.total);
            }
        }
        self.machine_mut(&d.machine).slots -= 1;
        Some(parent)
    }

    /// Releases the claim `claim_id` holds on `slot` at `now` (Unix seconds): a static slot
    /// gets a fresh capability and is free again; a dynamic slot disappears and its resources
    /// return to its parent.
    pub fn release(&mut self, slot: &str, claim_id: &str, now: i64) -> Result<Released, String> {
        let s = self
            .slots
            .get(slot)
            .ok_or_else(|| format!("no slot {slot:?}"))?;
        if s.claim_id != claim_id {
            return Err(format!("bad claim id for slot {slot:?}"));
        }
        if s.running.is_none() {
            return Err(format!("slot {slot:?} is not claimed"));
        }
        match s.kind.clone() {
            SlotKind::Static => {
                let fresh = self.new_claim_id();
                let s = self
                    .slots
                    .get_mut(slot)
                    .ok_or_else(|| format!("no slot {slot:?}"))?;
                let job = s.running.take().ok_or("not claimed")?;
                s.claim_id = fresh;
                s.entered = now;
                let machine = s.machine.clone();
                self.machine_mut(&machine).busy -= 1;
                Ok(Released {
                    job,
                    removed: false,
                    parent: None,
                })
            }
            SlotKind::Dynamic { parent } => {
                let d = self
                    .slots
                    .remove(slot)
                    .ok_or_else(|| format!("no slot {slot:?}"))?;
                if let Some(p) = self.slots.get_mut(&parent) {
                    if let SlotKind::Partitionable { free, .. } = &mut p.kind {
                        *free = free.plus(&d.total);
                    }
                }
                let m = self.machine_mut(&d.machine);
                m.slots -= 1;
                m.busy -= 1;
                Ok(Released {
                    job: d.running.ok_or("not claimed")?,
                    removed: true,
                    parent: Some(parent),
                })
            }
            SlotKind::Partitionable { .. } => Err(format!(
                "slot {slot:?} is partitionable; release its dynamic slots"
            )),
        }
    }

    /// The current claim ids by slot name, for every static and partitionable slot: the
    /// capabilities a leader could put in a grant. Dynamic slots are left out (they cannot
    /// be claimed directly); a claimed static slot is included, with the id its claim holds.
    pub fn claim_ids(&self) -> BTreeMap<String, String> {
        self.slots
            .values()
            .filter(|s| !matches!(s.kind, SlotKind::Dynamic { .. }))
            .map(|s| (s.name.clone(), s.claim_id.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(cpus: f64, memory: f64) -> Resources {
        Resources {
            cpus,
            memory,
            disk: 1000.0,
        }
    }

    fn job(id: &str) -> RunningJob {
        RunningJob {
            job: id.into(),
            submitter: "alice@pool.example".into(),
            user: "alice@pool.example".into(),
            grouped: false,
            concurrency_limits: None,
            term: 0,
            cycle: 1,
            start: 0,
        }
    }

    fn spec(sd: &Startd, slot: &str, term: u64, j: &str) -> ClaimSpec {
        ClaimSpec {
            slot: slot.into(),
            claim_id: sd.slot(slot).unwrap().claim_id.clone(),
            term,
            job: job(j),
            carve: res(1.0, 1024.0),
        }
    }

    fn one_static() -> Startd {
        let mut sd = Startd::new(1, "127.0.0.1:1", 0);
        sd.add_static("m1", 1, res(1.0, 2048.0));
        sd
    }

    #[test]
    fn a_slot_holds_one_claim_at_a_time() {
        let mut sd = one_static();
        let first = sd.request_claim(spec(&sd, "slot1@m1", 1, "1.0")).unwrap();
        assert_eq!(first.slot, "slot1@m1");
        let again = sd.request_claim(spec(&sd, "slot1@m1", 1, "2.0"));
        assert_eq!(
            again,
            Err(Refusal::AlreadyClaimed {
                by: "1.0".to_string()
            })
        );
        sd.release("slot1@m1", &first.claim_id, 10).unwrap();
        // Free again, under a new capability.
        assert_ne!(sd.slot("slot1@m1").unwrap().claim_id, first.claim_id);
        assert!(sd.request_claim(spec(&sd, "slot1@m1", 1, "2.0")).is_ok());
    }

    #[test]
    fn a_wrong_or_old_claim_id_is_refused() {
        let mut sd = one_static();
        let mut s = spec(&sd, "slot1@m1", 1, "1.0");
        s.claim_id = "forged".into();
        assert_eq!(sd.request_claim(s), Err(Refusal::BadClaimId));
        let c = sd.request_claim(spec(&sd, "slot1@m1", 1, "1.0")).unwrap();
        sd.release("slot1@m1", &c.claim_id, 10).unwrap();
        // The capability of the finished claim no longer works.
        let mut old = spec(&sd, "slot1@m1", 1, "2.0");
        old.claim_id = c.claim_id.clone();
        assert_eq!(sd.request_claim(old), Err(Refusal::BadClaimId));
        assert!(sd.release("slot1@m1", &c.claim_id, 10).is_err());
        let mut other = spec(&sd, "slot1@m1", 1, "2.0");
        other.slot = "nope@m1".into();
        assert_eq!(sd.request_claim(other), Err(Refusal::NoSuchSlot));
    }

    #[test]
    fn an_older_term_than_one_seen_is_refused() {
        let mut sd = one_static();
        let c = sd.request_claim(spec(&sd, "slot1@m1", 5, "1.0")).unwrap();
        sd.release("slot1@m1", &c.claim_id, 10).unwrap();
        assert_eq!(
            sd.request_claim(spec(&sd, "slot1@m1", 4, "2.0")),
            Err(Refusal::StaleTerm { term: 4, newest: 5 })
        );
        assert!(sd.request_claim(spec(&sd, "slot1@m1", 5, "2.0")).is_ok());
        assert_eq!(sd.slot("slot1@m1").unwrap().newest_term, 5);
    }

    #[test]
    fn a_newer_term_is_recorded_even_when_the_slot_is_busy() {
        let mut sd = one_static();
        let c = sd.request_claim(spec(&sd, "slot1@m1", 2, "1.0")).unwrap();
        // A newer leader's grant for the busy slot is refused but fences the old term.
        assert!(matches!(
            sd.request_claim(spec(&sd, "slot1@m1", 7, "2.0")),
            Err(Refusal::AlreadyClaimed { .. })
        ));
        sd.release("slot1@m1", &c.claim_id, 10).unwrap();
        assert_eq!(
            sd.request_claim(spec(&sd, "slot1@m1", 2, "3.0")),
            Err(Refusal::StaleTerm { term: 2, newest: 7 })
        );
    }

    #[test]
    fn a_forged_claim_does_not_move_the_term() {
        let mut sd = one_static();
        let mut s = spec(&sd, "slot1@m1", 99, "1.0");
        s.claim_id = "forged".into();
        assert_eq!(sd.request_claim(s), Err(Refusal::BadClaimId));
        assert!(sd.request_claim(spec(&sd, "slot1@m1", 1, "1.0")).is_ok());
    }

    #[test]
    fn partitionable_slots_carve_dynamic_slots_until_full() {
        let mut sd = Startd::new(1, "t", 0);
        sd.add_partitionable(
            "m1",
            1,
            Resources {
                cpus: 2.0,
                memory: 4096.0,
                disk: 10_000.0,
            },
        );
        let a = sd.request_claim(spec(&sd, "slot1@m1", 1, "1.0")).unwrap();
        let b = sd.request_claim(spec(&sd, "slot1@m1", 1, "2.0")).unwrap();
        assert_eq!(a.slot, "slot1_1@m1");
        assert_eq!(b.slot, "slot1_2@m1");
        assert_eq!(a.parent.as_deref(), Some("slot1@m1"));
        assert_eq!(sd.slot("slot1@m1").unwrap().advertised().cpus, 0.0);
        assert!(matches!(
            sd.request_claim(spec(&sd, "slot1@m1", 1, "3.0")),
            Err(Refusal::Insufficient { .. })
        ));
        // A claim on a busy dynamic slot is refused as busy (the preemption path); handed
        // over, the slot keeps its resources and takes the preempting job.
        assert!(matches!(
            sd.request_claim(spec(&sd, "slot1_1@m1", 1, "3.0")),
            Err(Refusal::AlreadyClaimed { .. })
        ));
        let d = sd.slot("slot1_1@m1").unwrap().clone();
        let before = sd.machine("m1").map(|m| m.busy);
        assert_eq!(sd.hand_over(&d.name, &a.claim_id, 5).unwrap().job, "1.0");
        assert_eq!(sd.machine("m1").map(|m| m.busy), before.map(|b| b - 1));
        assert!(sd.slot(&d.name).is_some(), "kept for the preempting claim");
        assert_ne!(
            sd.slot(&d.name).unwrap().claim_id,
            a.claim_id,
            "fresh capability"
        );
        let a = sd.request_claim(spec(&sd, "slot1_1@m1", 1, "3.0")).unwrap();
        assert_eq!((a.slot.as_str(), a.parent.as_deref()), ("slot1_1@m1", None));
        assert_eq!(sd.slot(&a.slot).unwrap().total, d.total);
        // Handed over and then not taken: the dynamic slot goes back to its parent.
        let free_before = sd.slot("slot1@m1").unwrap().advertised().cpus;
        sd.hand_over(&a.slot, &a.claim_id, 6).unwrap();
        assert_eq!(sd.drop_free_dynamic(&a.slot).as_deref(), Some("slot1@m1"));
        assert!(sd.slot(&a.slot).is_none());
        assert_eq!(
            sd.slot("slot1@m1").unwrap().advertised().cpus,
            free_before + 1.0
        );
        assert_eq!(sd.drop_free_dynamic("slot1_2@m1"), None, "busy: kept");
        assert_eq!(sd.slot("slot1@m1").unwrap().advertised().cpus, 1.0);
        let c = sd.request_claim(spec(&sd, "slot1@m1", 1, "3.0")).unwrap();
        assert_eq!(c.slot, "slot1_3@m1");
        // The partitionable slot fences terms for all its children.
        let r = sd.release(&b.slot, &b.claim_id, 10).unwrap();
        assert!(r.removed, "a released dynamic slot goes back to its parent");
        assert!(sd.slot(&b.slot).is_none());
        assert!(sd.request_claim(spec(&sd, "slot1@m1", 3, "4.0")).is_ok());
        assert!(matches!(
            sd.request_claim(spec(&sd, "slot1@m1", 2, "5.0")),
            Err(Refusal::StaleTerm { .. })
        ));
    }

    fn one_partitionable() -> Startd {
        let mut sd = Startd::new(1, "t", 0);
        let total = Resources {
            cpus: 4.0,
            memory: 8192.0,
            disk: 10_000.0,
        };
        sd.add_partitionable("m1", 1, total);
        sd
    }

    fn carve_at(sd: &mut Startd, claim_id: &str, j: &str, now: i64) -> Result<Claimed, Refusal> {
        let mut s = spec(sd, "slot1@m1", 1, j);
        s.claim_id = claim_id.to_string();
        s.job.start = now;
        sd.request_claim(s)
    }

    #[test]
    fn a_partitionable_slot_gets_a_fresh_capability_after_each_carve() {
        let mut sd = one_partitionable();
        let first = sd.slot("slot1@m1").unwrap().claim_id.clone();
        carve_at(&mut sd, &first, "1.0", 100).unwrap();
        let second = sd.slot("slot1@m1").unwrap().claim_id.clone();
        assert_ne!(first, second, "the carve rotated the capability");
        assert_eq!(sd.claim_ids()["slot1@m1"], second, "advertised");
        // Within the grace, the capability of the negotiator's snapshot still carves (a
        // consumption policy handing the slot out twice in one cycle) ...
        let g = carve_at(&mut sd, &first, "2.0", 100 + PSLOT_CLAIM_GRACE - 1).unwrap();
        assert_eq!(g.slot, "slot1_2@m1");
        // ... and so does the one rotated out by that second carve.
        let t = 100 + PSLOT_CLAIM_GRACE - 1;
        assert!(carve_at(&mut sd, &second, "3.0", t).is_ok());
        // After the grace the first capability is refused; the current one works.
        let late = 100 + PSLOT_CLAIM_GRACE;
        assert_eq!(
            carve_at(&mut sd, &first, "4.0", late),
            Err(Refusal::BadClaimId)
        );
        let current = sd.slot("slot1@m1").unwrap().claim_id.clone();
        assert!(carve_at(&mut sd, &current, "4.0", late).is_ok());
    }

    #[test]
    fn an_old_partitionable_capability_cannot_carve_later() {
        let mut sd = one_partitionable();
        let held = sd.slot("slot1@m1").unwrap().claim_id.clone();
        let c = carve_at(&mut sd, &held, "1.0", 0).unwrap();
        sd.release(&c.slot, &c.claim_id, 10).unwrap();
        // The access point kept the partitionable slot's capability: long after its grant it
        // is worthless, though the machine has room again.
        let later = PSLOT_CLAIM_GRACE + 1000;
        assert_eq!(
            carve_at(&mut sd, &held, "2.0", later),
            Err(Refusal::BadClaimId)
        );
        // A refused carve leaves the capability and the term fence alone.
        let mut forged = spec(&sd, "slot1@m1", 50, "2.0");
        forged.claim_id = held;
        forged.job.start = later;
        assert_eq!(sd.request_claim(forged), Err(Refusal::BadClaimId));
        assert_eq!(sd.slot("slot1@m1").unwrap().newest_term, 1);
        // Expired capabilities are forgotten at the next rotation.
        let cur = sd.slot("slot1@m1").unwrap().claim_id.clone();
        carve_at(&mut sd, &cur, "3.0", later).unwrap();
        assert_eq!(sd.slot("slot1@m1").unwrap().retired_claim_ids.len(), 1);
    }

    #[test]
    fn claim_ids_are_deterministic_per_seed_and_distinct() {
        let mk = || {
            let mut sd = Startd::new(9, "t", 0);
            for i in 1..=4 {
                sd.add_static("m", i, res(1.0, 1.0));
            }
            sd.claim_ids()
        };
        let a = mk();
        assert_eq!(a, mk());
        let distinct: std::collections::BTreeSet<_> = a.values().collect();
        assert_eq!(distinct.len(), 4);
    }
}

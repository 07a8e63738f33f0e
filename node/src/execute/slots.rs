//! The slot manager: an execute node's slots, each with its claim (the claim core,
//! [`crate::startd::Startd`]) and its policy state ([`crate::policy::Slot`]), kept in step.
//! Pure: time is passed in, nothing is spawned or signalled here; what the node must do to its
//! jobs comes out as [`Effect`]s for the shell to carry out ([`SlotManager::take_effects`]).
//!
//! The split is HTCondor's startd's (`src/condor_startd.V6/`): `command.cpp` (`request_claim`,
//! `activate_claim`, `deactivate_claim`, `release_claim`) checks the capability and the term
//! here first, through the claim core; `ResState.cpp`/`Resource.cpp` (the policy state
//! machine) then decides, and its actions are carried out in order: a broken claim is released
//! in the claim core (a static slot gets a fresh capability, a dynamic slot goes back to its
//! partitionable parent: `Resource::leave_preempting_state`, `ResMgr::removeResource`).
//!
//! Preemption: a claim request with `preempts` on a busy static slot becomes the policy's
//! preempting claim (`r_pre`, ranked by `RANK`); the slot retires and vacates its job, and the
//! request is answered ([`Effect::ClaimDecided`]) once the old claim is gone and the new one
//! is made with the slot's fresh capability. Dynamic slots are not preempted by claim
//! requests here (the negotiator's grant names the partitionable slot).
//!
//! Drains (`ResMgr::startDraining`, `cancelDraining`) are one policy event per slot; a drain's
//! `-check` expression is evaluated here against every slot ad first. Its `-start` expression
//! is not supported (a draining slot takes no claim).
use crate::policy::{
    self, attrs::own_attrs, eval::View, retirement, Action, Cause, DrainRequest, DrainSchedule,
    DrainStart, Event, Inputs, MachineDrain, Policy, Shutdown, State,
};
use crate::startd::ad::{self, MachineFacts, MachineNow, PolicyState};
use crate::startd::layout::SlotSpec;
use crate::startd::load::{self, Connected, SlotActivity, SlotLoad};
use crate::startd::machine::Idle;
use crate::startd::{ClaimSpec, Refusal, Resources, RunningJob, SlotKind, Startd};
use aerie_proto::execute as xpb;
use aerie_proto::negotiation as npb;
use aerie_security::grant::{GrantError, GrantVerifier, Presented, SignedGrant};
use aerie_security::identity::Peer;
use classad::ClassAd;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// What the shell must do after a call into the manager.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// SIGSTOP the claim's job.
    Suspend {
        /// The claim.
        claim_id: String,
    },
    /// SIGCONT the claim's job.
    Continue {
        /// The claim.
        claim_id: String,
    },
    /// Send the job its `KillSig`, and SIGKILL after `vacate_seconds` if it is still there.
    SoftKill {
        /// The claim.
        claim_id: String,
        /// The vacate time.
        vacate_seconds: i64,
    },
    /// SIGKILL the job now.
    HardKill {
        /// The claim.
        claim_id: String,
    },
    /// A claim request that waited for a preemption is answered.
    ClaimDecided {
        /// The waiting request's token ([`ClaimAnswer::Pending`]).
        pending: String,
        /// The answer.
        reply: npb::ClaimReply,
    },
    /// A claim ended (for the log and the metrics).
    ClaimEnded {
        /// The slot it was on.
        slot: String,
        /// The claim.
        claim_id: String,
        /// Why.
        cause: Cause,
    },
}

/// The answer to a claim request.
#[derive(Clone, Debug, PartialEq)]
pub enum ClaimAnswer {
    /// Answered now.
    Now(npb::ClaimReply),
    /// A preemption is under way; the answer comes as [`Effect::ClaimDecided`] with this token.
    Pending(String),
}

/// How a job's process ended, as the access point must hear it.
#[derive(Clone, Debug, PartialEq)]
pub enum JobEnd {
    /// It exited by itself.
    Completed,
    /// It was stopped (vacated or killed) before it ended, for this reason.
    Evicted(String),
}

/// A preempting claim request waiting for the slot.
#[derive(Clone, Debug)]
struct PendingClaim {
    slot: String,
    term: u64,
    job: RunningJob,
}

/// Every slot of the node, their claims and policy states, and their ads.
pub struct SlotManager {
    startd: Startd,
    specs: BTreeMap<u32, SlotSpec>,
    policy: Policy,
    facts: MachineFacts,
    connected: Connected,
    states: BTreeMap<String, policy::Slot>,
    loads: BTreeMap<String, SlotLoad>,
    machine_load: f64,
    /// The measured CPU load of each running job, by claim id (`set_job_loads`).
    job_loads: BTreeMap<String, f64>,
    idle: Option<Idle>,
    pending: BTreeMap<String, PendingClaim>,
    next_pending: u64,
    next_drain: u64,
    deactivating: BTreeMap<String, bool>,
    evictions: BTreeMap<String, Cause>,
    drain_refusals: Vec<String>,
    dirty: BTreeSet<String>,
    removed: Vec<(String, String)>,
    effects: Vec<Effect>,
    job_limits: Option<&'static str>,
    terms: crate::startd::term::TermBound,
    /// Set by [`SlotManager::shutdown`]: no new claim is taken (HTCondor's
    /// `ResMgr::markShutdown`).
    shutting_down: bool,
    grants: Option<GrantVerifier>,
}

fn refused(error: String) -> npb::ClaimReply {
    npb::ClaimReply {
        ok: false,
        error,
        ..Default::default()
    }
}

/// Why a job was evicted, as its access point's log shows it.
pub fn eviction_reason(cause: Cause) -> &'static str {
    match cause {
        Cause::Preempt => "PREEMPT became true (the machine's owner is back)",
        Cause::StartFalse => "START became false for the job",
        Cause::ClaimWorklife => "CLAIM_WORKLIFE expired",
        Cause::RankPreemption => "preempted by a better ranked job",
        Cause::PriorityPreemption => "preempted by a user with better priority",
        Cause::Vacate => "vacated by the administrator",
        Cause::Drain => "drained",
        Cause::LeaseExpired => "claim lease expired",
        Cause::Released => "the claim was released",
        Cause::Shutdown => "the execute node is shutting down",
    }
}

impl SlotManager {
    /// The slots `specs` lays out on `facts.machine`, all Owner/Idle at `now` and at once
    /// evaluated (so Unclaimed unless `IS_OWNER` says otherwise). `tag` goes into the claim
    /// ids (the listen address); `seed` seeds them in tests, `None` (a real node) draws them
    /// from the operating system's random source.
    pub fn new(
        specs: &[SlotSpec],
        policy: Policy,
        facts: MachineFacts,
        connected: Connected,
        tag: &str,
        seed: Option<u64>,
        now: i64,
    ) -> SlotManager {
        let mut startd = match seed {
            Some(s) => Startd::new(s, tag, now),
            None => Startd::new_secure(tag, now),
        };
        let mut states = BTreeMap::new();
        for spec in specs {
            startd.add_slot(&facts.machine, spec);
            states.insert(
                format!("slot{}@{}", spec.id, facts.machine),
                policy::Slot::new(now),
            );
        }
        let mut m = SlotManager {
            startd,
            specs: specs.iter().map(|s| (s.id, s.clone())).collect(),
            policy,
            facts,
            connected,
            states,
            loads: BTreeMap::new(),
            machine_load: 0.0,
            job_loads: BTreeMap::new(),
            idle: None,
            pending: BTreeMap::new(),
            next_pending: 1,
            next_drain: 1,
            deactivating: BTreeMap::new(),
            evictions: BTreeMap::new(),
            drain_refusals: Vec::new(),
            dirty: BTreeSet::new(),
            removed: Vec::new(),
            effects: Vec::new(),
            job_limits: None,
            terms: Default::default(),
            shutting_down: false,
            grants: None,
        };
        m.tick(now, 0.0, None);
        m
    }

    /// How the node limits its jobs (`cgroup-v2` or `rlimit`), advertised as `AerieJobLimits`.
    pub fn set_job_limits(&mut self, method: &'static str) {
        self.job_limits = Some(method);
    }

    /// What the shell must do now; empties the list.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// The policy state of slot `name`.
    pub fn state(&self, name: &str) -> Option<&policy::Slot> {
        self.states.get(name)
    }

    /// The slot names, dynamic slots included.
    pub fn slot_names(&self) -> Vec<String> {
        self.states.keys().cloned().collect()
    }

    /// The slot ad of `name` at its current state, or an error naming the attribute that
    /// does not parse.
    pub fn slot_ad(&self, name: &str) -> Result<ClassAd, String> {
        let slot = self
            .startd
            .slot(name)
            .ok_or_else(|| format!("no slot {name:?}"))?;
        let spec = self
            .specs
            .get(&slot.id)
            .ok_or_else(|| format!("slot {name:?} has no configured slot type"))?;
        let m = self
            .startd
            .machine(&slot.machine)
            .copied()
            .unwrap_or_default();
        let zero = SlotLoad {
            owner: 0.0,
            condor: 0.0,
            keyboard_idle: None,
            console_idle: None,
        };
        let load = self.loads.get(name).copied().unwrap_or(zero);
        let now = MachineNow {
            total_slots: m.slots,
            total_load: self.machine_load,
            total_condor_load: self.loads.values().map(|l| l.condor).sum(),
        };
        let pol = self.states.get(name);
        let ps = match pol {
            Some(p) => PolicyState {
                state: p.state.as_str().into(),
                activity: p.activity.as_str().into(),
                entered_state: p.entered_state,
                entered_activity: p.entered_activity,
                current_rank: p.claim.as_ref().map_or(0.0, |c| c.rank),
            },
            None => PolicyState::of_claim(slot),
        };
        let mut ad = ad::slot_ad(slot, spec, &self.facts, &now, &ps, &load)?;
        if let Some(p) = pol {
            ad.update(&p.attributes());
        }
        if let Some(l) = self.job_limits {
            ad.insert_str("AerieJobLimits", l);
        }
        Ok(ad)
    }

    fn ad_text(&self, name: &str) -> Option<String> {
        match self.slot_ad(name) {
            Ok(ad) => Some(ad.to_old_syntax()),
            Err(e) => {
                tracing::error!(slot = %name, error = %e, "cannot build the slot ad");
                None
            }
        }
    }

    /// Every slot ad in old syntax.
    pub fn ads(&self) -> Vec<String> {
        self.states.keys().filter_map(|n| self.ad_text(n)).collect()
    }

    /// Every slot ad in old syntax (what was changed is thereby sent).
    pub fn all_ads(&mut self) -> Vec<String> {
        self.dirty.clear();
        self.ads()
    }

    /// The ads changed since last taken, and the (MyType, Name) of slots gone since.
    pub fn take_changes(&mut self) -> (Vec<String>, Vec<(String, String)>) {
        let dirty = std::mem::take(&mut self.dirty);
        let ads = dirty
            .iter()
            .filter(|n| self.states.contains_key(*n))
            .filter_map(|n| self.ad_text(n))
            .collect();
        (ads, std::mem::take(&mut self.removed))
    }

    /// Puts back invalidations that could not be sent.
    pub fn requeue_removed(&mut self, removed: Vec<(String, String)>) {
        self.removed.extend(removed);
    }

    /// Whether any ad changed since last taken.
    pub fn has_changes(&self) -> bool {
        !self.dirty.is_empty() || !self.removed.is_empty()
    }

    /// A graceful drain across every slot of the machine, for the policy (partitionable slots
    /// hold no claim of their own, so only their dynamic slots count).
    /// Worked out only while a drain is in force or about to be (it builds every slot's view).
    fn machine_drain(&self, event: &Event, now: i64) -> MachineDrain {
        let draining =
            matches!(event, Event::Drain(_)) || self.states.values().any(|s| s.drain.is_some());
        if !draining {
            return MachineDrain::default();
        }
        let slots = self.states.iter().map(|(name, pol)| {
            let machine = self.slot_ad(name).unwrap_or_default();
            (pol, View::new(&machine, &self.policy, &own_attrs(pol), now))
        });
        MachineDrain::of(slots, now)
    }

    /// Steps slot `name` with `event` at `now` and carries out what the policy asks of the
    /// claim core; returns the policy's actions (for the caller's own answers).
    fn step(&mut self, name: &str, event: &Event, now: i64) -> Vec<Action> {
        let drain = self.machine_drain(event, now);
        self.step_with(name, event, now, drain)
    }

    /// Steps every slot with `event` at `now`, the machine's drain worked out once for all
    /// of them (it builds every slot's view: once per slot would be quadratic per tick).
    fn step_all(&mut self, event: &Event, now: i64) {
        let drain = self.machine_drain(event, now);
        for name in self.slot_names() {
            self.step_with(&name, event, now, drain);
        }
    }

    /// [`Self::step`] with the machine's drain as given.
    fn step_with(
        &mut self,
        name: &str,
        event: &Event,
        now: i64,
        drain: MachineDrain,
    ) -> Vec<Action> {
        let Some(pol) = self.states.get(name) else {
            return Vec::new();
        };
        let machine = self.slot_ad(name).unwrap_or_default();
        let others_drained = self
            .states
            .iter()
            .filter(|(n, _)| n.as_str() != name)
            .all(|(_, s)| s.state == State::Drained);
        let inputs = Inputs {
            policy: &self.policy,
            machine: &machine,
            now,
            other_slots_drained: others_drained,
            drain,
        };
        let step = pol.step(&inputs, event);
        for t in &step.transitions {
            tracing::info!(
                slot = %name,
                from = %format!("{}/{}", t.from.0, t.from.1),
                to = %format!("{}/{}", t.to.0, t.to.1),
                number = t.number,
                "slot state change"
            );
        }
        self.states.insert(name.to_string(), step.slot);
        self.apply(name, &step.actions, now);
        step.actions
    }

    fn apply(&mut self, name: &str, actions: &[Action], now: i64) {
        for a in actions {
            match a {
                Action::SuspendJob { claim_id } => self.effects.push(Effect::Suspend {
                    claim_id: claim_id.clone(),
                }),
                Action::ContinueJob { claim_id } => self.effects.push(Effect::Continue {
                    claim_id: claim_id.clone(),
                }),
                Action::SoftKill {
                    claim_id,
                    max_vacate_time,
                    ..
                } => self.effects.push(Effect::SoftKill {
                    claim_id: claim_id.clone(),
                    vacate_seconds: *max_vacate_time,
                }),
                Action::HardKill { claim_id } | Action::KillProcessTree { claim_id } => {
                    self.effects.push(Effect::HardKill {
                        claim_id: claim_id.clone(),
                    })
                }
                Action::EvictJob { claim_id, cause } => {
                    self.evictions.insert(claim_id.clone(), *cause);
                }
                Action::ReleaseClaim { claim_id, cause } => {
                    self.release_in_core(name, claim_id, *cause, now)
                }
                Action::ClaimAccepted { claim_id } => {
                    if let Some(p) = self.pending.remove(claim_id) {
                        self.finish_preemption(claim_id, p, now);
                    }
                }
                Action::ClaimRefused { claim_id, reason } => {
                    if let Some(p) = self.pending.remove(claim_id) {
                        self.effects.push(Effect::ClaimDecided {
                            pending: claim_id.clone(),
                            reply: refused(reason.clone()),
                        });
                        // A dynamic slot handed over to this claim goes back to its parent.
                        if let Some(parent) = self.startd.drop_free_dynamic(&p.slot) {
                            self.states.remove(&p.slot);
                            self.loads.remove(&p.slot);
                            self.dirty.remove(&p.slot);
                            self.removed.push(("Machine".into(), p.slot.clone()));
                            self.dirty.insert(parent);
                            tracing::info!(slot = %p.slot, "dynamic slot returned: its preempting claim was refused");
                        }
                    }
                }
                Action::DrainRefused { reason, .. } => self.drain_refusals.push(reason.clone()),
                Action::SendAd => {
                    self.dirty.insert(name.to_string());
                }
                Action::StartJob { .. } | Action::ActivationRefused { .. } => {}
            }
        }
    }

    /// The policy broke claim `claim_id` on `name`: release it in the claim core.
    fn release_in_core(&mut self, name: &str, claim_id: &str, cause: Cause, now: i64) {
        self.deactivating.remove(claim_id);
        let dynamic = self
            .startd
            .slot(name)
            .is_some_and(|s| matches!(s.kind, SlotKind::Dynamic { .. }));
        if dynamic && self.pending.values().any(|p| p.slot == name) {
            // A preempting claim waits for this dynamic slot: it keeps the slot as it is.
            match self.startd.hand_over(name, claim_id, now) {
                Ok(job) => {
                    self.dirty.insert(name.to_string());
                    tracing::info!(slot = %name, claim = %claim_id, job = %job.job, ?cause, "claim released to a preempting claim");
                }
                Err(e) => {
                    tracing::warn!(slot = %name, claim = %claim_id, error = %e, "handing the slot over")
                }
            }
            self.effects.push(Effect::ClaimEnded {
                slot: name.to_string(),
                claim_id: claim_id.to_string(),
                cause,
            });
            return;
        }
        match self.startd.release(name, claim_id, now) {
            Ok(r) => {
                if r.removed {
                    self.states.remove(name);
                    self.loads.remove(name);
                    self.dirty.remove(name);
                    self.removed.push(("Machine".into(), name.to_string()));
                } else {
                    self.dirty.insert(name.to_string());
                }
                if let Some(p) = r.parent {
                    self.dirty.insert(p);
                }
                tracing::info!(slot = %name, claim = %claim_id, job = %r.job.job, ?cause, "claim released");
            }
            Err(e) => {
                tracing::warn!(slot = %name, claim = %claim_id, error = %e, "releasing the claim")
            }
        }
        self.effects.push(Effect::ClaimEnded {
            slot: name.to_string(),
            claim_id: claim_id.to_string(),
            cause,
        });
    }

    /// The preemption is over and the policy took the preempting claim: make it in the claim
    /// core with the slot's fresh capability and answer the waiting request.
    fn finish_preemption(&mut self, token: &str, p: PendingClaim, now: i64) {
        let Some(cid) = self.startd.slot(&p.slot).map(|s| s.claim_id.clone()) else {
            return;
        };
        let spec = ClaimSpec {
            slot: p.slot.clone(),
            claim_id: cid,
            term: p.term,
            job: RunningJob {
                start: now,
                ..p.job
            },
            carve: Resources::default(),
        };
        let reply = match self.startd.request_claim(spec) {
            Ok(c) => {
                if let Some(claim) = self.states.get_mut(&p.slot).and_then(|s| s.claim.as_mut()) {
                    claim.id = c.claim_id.clone();
                }
                self.dirty.insert(p.slot.clone());
                tracing::info!(slot = %p.slot, claim = %c.claim_id, "preempting claim accepted");
                npb::ClaimReply {
                    ok: true,
                    error: String::new(),
                    claimed_slot: c.slot,
                    claim_id: c.claim_id,
                }
            }
            Err(e) => {
                // Cannot happen (the slot was just released); undo the policy's claim.
                let id = token.to_string();
                self.step(&p.slot, &Event::ReleaseClaim { claim_id: id }, now);
                refused(format!("the preempted slot could not be claimed: {e}"))
            }
        };
        self.effects.push(Effect::ClaimDecided {
            pending: token.to_string(),
            reply,
        });
    }

    /// Starts from the newest term seen before a restart ([`crate::startd::term`]): every
    /// slot's fence is raised to it.
    pub fn restore_term(&mut self, persisted: u64) {
        self.terms = crate::startd::term::TermBound::new(persisted);
        self.startd.fence_all(persisted);
    }

    /// From now on a claim must carry a grant the leader signed ([`aerie_security::grant`]),
    /// checked against the pool CA before its term is believed. Not called in `--insecure`
    /// mode, where unsigned grants pass the capability and term checks alone.
    pub fn require_signed_grants(&mut self, verifier: GrantVerifier) {
        self.grants = Some(verifier);
    }

    /// Checks the leader's signature of the grant a claim carries, and that `presenter` is
    /// the access point it was signed for, when this node requires signed grants.
    fn check_grant(
        &self,
        req: &npb::ClaimRequest,
        presenter: &Peer,
        now: i64,
    ) -> Result<(), String> {
        let Some(v) = &self.grants else {
            return Ok(());
        };
        verify_claim_grant(v, req, presenter, now).map_err(|e| e.to_string())
    }

    /// A central manager reported its current term (in an advertise summary). True when the
    /// newest term grew, for the shell to persist [`SlotManager::newest_term`].
    pub fn cm_reported_term(&mut self, term: u64) -> bool {
        self.terms.reported(term)
    }

    /// The newest term this node has seen (claims and CM reports).
    pub fn newest_term(&self) -> u64 {
        self.terms.newest()
    }

    /// A claim request (`Startd.RequestClaim`): the capability and term are checked first,
    /// then the slot's policy (`START` for the request; a busy slot only with `preempts`).
    pub fn request_claim(&mut self, req: &npb::ClaimRequest, now: i64) -> ClaimAnswer {
        let nobody = Peer {
            caller: aerie_security::Caller::Anonymous,
            addr: None,
        };
        self.request_claim_from(req, &nobody, now)
    }

    /// [`SlotManager::request_claim`] from `presenter`, the authenticated caller of
    /// `Startd.RequestClaim`: with signed grants required, it must be the access point the
    /// grant was delivered to ([`aerie_security::grant::check_presenter`]).
    pub fn request_claim_from(
        &mut self,
        req: &npb::ClaimRequest,
        presenter: &Peer,
        now: i64,
    ) -> ClaimAnswer {
        let answer = self.claim_inner(req, presenter, now);
        if let ClaimAnswer::Now(r) = &answer {
            if r.ok {
                tracing::info!(slot = %r.claimed_slot, claim = %r.claim_id, job = %req.job, term = req.term, "claim accepted");
            } else {
                tracing::info!(slot = %req.slot, job = %req.job, term = req.term, error = %r.error, "claim refused");
            }
        }
        answer
    }

    fn claim_inner(&mut self, req: &npb::ClaimRequest, presenter: &Peer, now: i64) -> ClaimAnswer {
        let no = |e: String| ClaimAnswer::Now(refused(e));
        if self.shutting_down {
            return no("the execute node is shutting down".into());
        }
        let job_ad = match classad::parse_ad(&req.job_ad) {
            Ok(a) => Arc::new(a),
            Err(e) => return no(format!("the job ad does not parse: {e}")),
        };
        let Some(slot) = self.startd.slot(&req.slot) else {
            return no(Refusal::NoSuchSlot.to_string());
        };
        // A dynamic slot is claimed only to preempt its job (the negotiator matched its ad).
        if matches!(slot.kind, SlotKind::Dynamic { .. }) && !req.preempts {
            return no(Refusal::NotClaimable.to_string());
        }
        if !slot.accepts(&req.claim_id, now) {
            return no(Refusal::BadClaimId.to_string());
        }
        if let Err(e) = self.check_grant(req, presenter, now) {
            return no(e);
        }
        if let Err(e) = self.terms.check(req.term) {
            return no(e);
        }
        if req.term < slot.newest_term {
            let r = Refusal::StaleTerm {
                term: req.term,
                newest: slot.newest_term,
            };
            return no(r.to_string());
        }
        self.terms.saw(req.term);
        let user = ["User", "Owner"]
            .iter()
            .find_map(|a| job_ad.eval_attr(a).as_str().map(str::to_string))
            .unwrap_or_else(|| req.submitter.clone());
        let group = job_ad.eval_attr("AccountingGroup");
        let limits = job_ad.eval_attr("ConcurrencyLimits");
        let job = RunningJob {
            job: req.job.clone(),
            submitter: req.submitter.clone(),
            user,
            grouped: group.as_str().is_some(),
            concurrency_limits: limits.as_str().map(str::to_string),
            term: req.term,
            cycle: req.cycle,
            start: now,
        };
        let spec = ClaimSpec {
            slot: req.slot.clone(),
            claim_id: req.claim_id.clone(),
            term: req.term,
            job: job.clone(),
            carve: Resources {
                cpus: req.carve_cpus,
                memory: req.carve_memory,
                disk: req.carve_disk,
            },
        };
        let name = req.slot.clone();
        if slot.is_partitionable() {
            return ClaimAnswer::Now(self.claim_partitionable(&name, spec, job_ad, now));
        }
        if slot.running.is_some() {
            // Fences the term (the capability is right), then refuses as busy.
            let busy = self.startd.request_claim(spec).err();
            if !req.preempts {
                let e = busy.map_or("already claimed".into(), |r| r.to_string());
                return no(e);
            }
            return self.preempting_claim(&name, req.term, job, job_ad, now);
        }
        let event = Event::ClaimRequest {
            claim_id: req.claim_id.clone(),
            request: job_ad,
            alive_interval: None,
        };
        // The policy decides on a copy; the step is kept only if the claim core agrees.
        let Some((after, actions)) = self.step_trial(&name, &event, now) else {
            return no(Refusal::NoSuchSlot.to_string());
        };
        if let Some(reason) = refusal(&actions, &req.claim_id) {
            return no(reason);
        }
        match self.startd.request_claim(spec) {
            Ok(c) => {
                self.states.insert(name.clone(), after);
                self.apply(&name, &actions, now);
                ClaimAnswer::Now(npb::ClaimReply {
                    ok: true,
                    error: String::new(),
                    claimed_slot: c.slot,
                    claim_id: c.claim_id,
                })
            }
            Err(r) => no(r.to_string()),
        }
    }

    /// What a step would give, without keeping it.
    fn step_trial(
        &self,
        name: &str,
        event: &Event,
        now: i64,
    ) -> Option<(policy::Slot, Vec<Action>)> {
        let pol = self.states.get(name)?;
        let machine = self.slot_ad(name).unwrap_or_default();
        let inputs = Inputs {
            policy: &self.policy,
            machine: &machine,
            now,
            other_slots_drained: false,
            drain: self.machine_drain(event, now),
        };
        let step = pol.step(&inputs, event);
        Some((step.slot, step.actions))
    }

    fn claim_partitionable(
        &mut self,
        pslot: &str,
        spec: ClaimSpec,
        job_ad: Arc<ClassAd>,
        now: i64,
    ) -> npb::ClaimReply {
        // A draining partitionable slot carves only under the drain's START expression; the
        // dynamic slot inherits the drain, so its policy judges the job by that START.
        let Some(p) = self.states.get(pslot) else {
            return refused(Refusal::NoSuchSlot.to_string());
        };
        let drain = p.drain.clone();
        match (p.state, &drain) {
            (State::Unclaimed, None) => {}
            (State::Drained, Some(d)) if d.backfill_start().is_some() => {}
            (_, Some(_)) => return refused("the machine is draining".into()),
            (s, None) => return refused(format!("the slot is {s}")),
        }
        let claimed = match self.startd.request_claim(spec) {
            Ok(c) => c,
            Err(r) => return refused(r.to_string()),
        };
        let dslot = claimed.slot.clone();
        let mut fresh = policy::Slot::new(now);
        fresh.drain = drain;
        self.states.insert(dslot.clone(), fresh);
        self.step(&dslot, &Event::Tick, now);
        let event = Event::ClaimRequest {
            claim_id: claimed.claim_id.clone(),
            request: job_ad,
            alive_interval: None,
        };
        let actions = self.step(&dslot, &event, now);
        if let Some(reason) = refusal(&actions, &claimed.claim_id) {
            self.states.remove(&dslot);
            self.dirty.remove(&dslot);
            if let Err(e) = self.startd.release(&dslot, &claimed.claim_id, now) {
                tracing::warn!(slot = %dslot, error = %e, "returning a refused dynamic slot");
            }
            return refused(reason);
        }
        self.dirty.insert(pslot.to_string());
        self.dirty.insert(dslot.clone());
        npb::ClaimReply {
            ok: true,
            error: String::new(),
            claimed_slot: dslot,
            claim_id: claimed.claim_id,
        }
    }

    fn preempting_claim(
        &mut self,
        name: &str,
        term: u64,
        job: RunningJob,
        job_ad: Arc<ClassAd>,
        now: i64,
    ) -> ClaimAnswer {
        let token = format!("preempting#{}", self.next_pending);
        self.next_pending += 1;
        self.pending.insert(
            token.clone(),
            PendingClaim {
                slot: name.to_string(),
                term,
                job,
            },
        );
        let event = Event::ClaimRequest {
            claim_id: token.clone(),
            request: job_ad,
            alive_interval: None,
        };
        let actions = self.step(name, &event, now);
        if let Some(reason) = refusal(&actions, &token) {
            self.pending.remove(&token);
            self.effects.retain(
                |e| !matches!(e, Effect::ClaimDecided { pending, .. } if *pending == token),
            );
            return ClaimAnswer::Now(refused(reason));
        }
        // Accepted at once (the slot had no job left): the answer is among the effects.
        if let Some(i) = self
            .effects
            .iter()
            .position(|e| matches!(e, Effect::ClaimDecided { pending, .. } if *pending == token))
        {
            if let Effect::ClaimDecided { reply, .. } = self.effects.remove(i) {
                return ClaimAnswer::Now(reply);
            }
        }
        tracing::info!(slot = %name, token = %token, "preempting claim waits for the slot");
        ClaimAnswer::Pending(token)
    }

    /// Checks that `claim_id` is the current claim of slot `name`.
    fn check_claim(&self, name: &str, claim_id: &str) -> Result<(), String> {
        let slot = self
            .startd
            .slot(name)
            .ok_or_else(|| format!("no such slot {name:?}"))?;
        if slot.claim_id != claim_id || slot.running.is_none() {
            return Err(format!("no such claim on slot {name:?}"));
        }
        Ok(())
    }

    /// A release (`Startd.ReleaseClaim`): the claim's job, if any, is vacated first.
    pub fn release_claim(&mut self, name: &str, claim_id: &str, now: i64) -> Result<(), String> {
        self.check_claim(name, claim_id)?;
        let event = Event::ReleaseClaim {
            claim_id: claim_id.to_string(),
        };
        self.step(name, &event, now);
        Ok(())
    }

    /// An activation (`Execute.ActivateClaim`): the policy must take the job (Claimed/Idle,
    /// `START` true for it); the shell then starts it.
    pub fn activate(
        &mut self,
        name: &str,
        claim_id: &str,
        job: Arc<ClassAd>,
        now: i64,
    ) -> Result<(), String> {
        self.check_claim(name, claim_id)?;
        let event = Event::Activate {
            claim_id: claim_id.to_string(),
            job,
        };
        let actions = self.step(name, &event, now);
        for a in actions {
            if let Action::ActivationRefused { reason, .. } = a {
                return Err(reason);
            }
        }
        Ok(())
    }

    /// The job of an activation could not start: the claim is idle again.
    pub fn start_failed(&mut self, name: &str, claim_id: &str, now: i64) {
        let event = Event::StarterExited {
            claim_id: claim_id.to_string(),
            completed: true,
        };
        self.step(name, &event, now);
    }

    /// The job of `claim_id` on `name` exited: whether it ended by itself or was evicted.
    pub fn job_exited(&mut self, name: &str, claim_id: &str, now: i64) -> JobEnd {
        let completed = self
            .states
            .get(name)
            .is_some_and(|s| s.state == State::Claimed);
        let event = Event::StarterExited {
            claim_id: claim_id.to_string(),
            completed,
        };
        self.step(name, &event, now);
        let deactivated = self.deactivating.remove(claim_id);
        match (self.evictions.remove(claim_id), deactivated) {
            (Some(cause), _) => JobEnd::Evicted(eviction_reason(cause).into()),
            (None, Some(fast)) => JobEnd::Evicted(
                if fast {
                    "deactivated forcibly by the access point"
                } else {
                    "deactivated by the access point"
                }
                .into(),
            ),
            (None, None) => JobEnd::Completed,
        }
    }

    /// The claim's lease on `name`: its length and when it passes (Unix seconds); `None`
    /// when the slot has no such claim.
    pub fn claim_lease(&self, name: &str, claim_id: &str) -> Option<(i64, i64)> {
        self.states
            .get(name)
            .and_then(|s| s.claim.as_ref())
            .filter(|c| c.id == claim_id)
            .map(|c| (c.lease_duration, c.lease_expires_at))
    }

    /// A keep-alive (`Execute.KeepAlive`): renews the claim's lease; gives its length.
    pub fn keep_alive(&mut self, name: &str, claim_id: &str, now: i64) -> Result<i64, String> {
        self.check_claim(name, claim_id)?;
        let event = Event::KeepAlive {
            claim_id: claim_id.to_string(),
        };
        self.step(name, &event, now);
        self.states
            .get(name)
            .and_then(|s| s.claim.as_ref())
            .filter(|c| c.id == claim_id)
            .map(|c| c.lease_duration)
            .ok_or_else(|| format!("no such claim on slot {name:?}"))
    }

    /// A deactivation (`Execute.DeactivateClaim`): the job gets its `KillSig` and its vacate
    /// time (or SIGKILL at once when `fast`); the claim stays.
    pub fn deactivate(
        &mut self,
        name: &str,
        claim_id: &str,
        fast: bool,
        now: i64,
    ) -> Result<(), String> {
        self.check_claim(name, claim_id)?;
        let Some(pol) = self.states.get(name) else {
            return Err(format!("no such slot {name:?}"));
        };
        let Some(claim) = pol.claim.as_ref().filter(|c| c.job.is_some()) else {
            return Err(format!("no job runs on the claim of slot {name:?}"));
        };
        if pol.state == State::Preempting {
            return Ok(()); // already being stopped; an Evicted event follows
        }
        let id = claim_id.to_string();
        if fast {
            self.effects.push(Effect::HardKill { claim_id: id });
        } else {
            let machine = self.slot_ad(name).unwrap_or_default();
            let view = View::new(&machine, &self.policy, &own_attrs(pol), now);
            let vacate = retirement::max_vacate_time(claim, &view, now);
            self.effects.push(Effect::SoftKill {
                claim_id: id,
                vacate_seconds: vacate,
            });
        }
        self.deactivating.insert(claim_id.to_string(), fast);
        Ok(())
    }

    /// A drain of the whole machine (`Execute.Drain`); gives its request id.
    pub fn drain(&mut self, req: &xpb::DrainRequest, now: i64) -> Result<String, String> {
        if let Some(d) = self.states.values().find_map(|s| s.drain.as_ref()) {
            return Err(format!("draining request {} is already in progress", d.id));
        }
        if !req.check_expr.trim().is_empty() {
            let check = classad::parse_expr(&req.check_expr)
                .map_err(|e| format!("-check {:?} does not parse: {e}", req.check_expr))?;
            for name in self.slot_names() {
                let ad = self.slot_ad(&name)?;
                if ad.eval_expr(&check).as_bool() != Some(true) {
                    return Err(format!("-check {} is not true for {name}", req.check_expr));
                }
            }
        }
        let schedule = match xpb::DrainHow::try_from(req.how) {
            Ok(xpb::DrainHow::Graceful) => DrainSchedule::Graceful,
            Ok(xpb::DrainHow::Quick) => DrainSchedule::Quick,
            Ok(xpb::DrainHow::Fast) => DrainSchedule::Fast,
            Err(_) => return Err(format!("unknown drain schedule {}", req.how)),
        };
        // `ResMgr::startDraining` keeps a START expression for graceful drains only: the
        // request's, else DEFAULT_DRAINING_START_EXPR.
        let start = match (schedule, req.start_expr.trim()) {
            (DrainSchedule::Graceful, "") => self.policy.default_draining_start.clone(),
            (DrainSchedule::Graceful, text) => Some(DrainStart::parse(text)?),
            (_, "") => None,
            (_, text) => {
                tracing::info!(start = %text, ?schedule, "a drain's -start applies to graceful drains only; ignored");
                None
            }
        };
        let id = if req.request_id.is_empty() {
            let id = format!("{}#{}", self.facts.machine, self.next_drain);
            self.next_drain += 1;
            id
        } else {
            req.request_id.clone()
        };
        let drain = DrainRequest {
            id: id.clone(),
            schedule,
            reason: if req.reason.is_empty() {
                "by command".into()
            } else {
                req.reason.clone()
            },
            resume_on_completion: req.resume_on_completion,
            start,
        };
        tracing::info!(request = %id, ?schedule, reason = %drain.reason, "draining");
        self.drain_refusals.clear();
        self.step_all(&Event::Drain(drain), now);
        match self.drain_refusals.pop() {
            Some(r) => Err(r),
            None => Ok(id),
        }
    }

    /// Stops a drain (`Execute.CancelDrain`): `request_id` empty cancels whichever is in force.
    pub fn cancel_drain(&mut self, request_id: &str, now: i64) -> Result<(), String> {
        if !self.states.values().any(|s| s.drain.is_some()) {
            return Err("no drain is in progress".into());
        }
        let rid = (!request_id.is_empty()).then(|| request_id.to_string());
        self.drain_refusals.clear();
        self.step_all(&Event::CancelDrain { request_id: rid }, now);
        match self.drain_refusals.pop() {
            Some(r) => Err(r),
            None => {
                tracing::info!(request = %request_id, "drain cancelled");
                Ok(())
            }
        }
    }

    /// The node is shutting down (HTCondor's `main_shutdown_graceful` and
    /// `main_shutdown_fast`, src/condor_startd.V6/startd_main.cpp): every claim is retired and
    /// vacated ([`Shutdown::Graceful`]) or killed ([`Shutdown::Fast`]); the jobs' ends reach
    /// their access points as evictions ("the execute node is shutting down"), and no new
    /// claim is taken.
    pub fn shutdown(&mut self, kind: Shutdown, now: i64) {
        self.shutting_down = true;
        self.step_all(&Event::Shutdown(kind), now);
    }

    /// The periodic evaluation at `now`, with the machine's load average and idle times.
    pub fn tick(&mut self, now: i64, machine_load: f64, idle: Option<Idle>) {
        self.machine_load = machine_load;
        self.idle = idle;
        self.share_load();
        self.step_all(&Event::Tick, now);
    }

    /// The measured CPU load of each running job, by claim id, for the next [`Self::tick`]
    /// (`crate::starter::cpu_load`); a busy slot whose job has none counts as a load of 1.0.
    pub fn set_job_loads(&mut self, loads: BTreeMap<String, f64>) {
        self.job_loads = loads;
    }

    /// Shares the machine's load and idle times among the slots (`ResMgr::assign_load_and_idle`);
    /// a busy slot's `CondorLoadAvg` is its job's measured CPU load ([`Self::set_job_loads`],
    /// as HTCondor measures its job's process family), 1.0 when not measured.
    fn share_load(&mut self) {
        let mut names = Vec::new();
        let mut acts = Vec::new();
        for (name, st) in &self.states {
            let Some(slot) = self.startd.slot(name) else {
                continue;
            };
            let sub_id = name
                .split('@')
                .next()
                .and_then(|l| l.rsplit_once('_'))
                .and_then(|(_, k)| k.parse().ok())
                .unwrap_or(0);
            let busy = matches!(
                st.activity,
                policy::Activity::Busy | policy::Activity::Retiring | policy::Activity::Vacating
            ) && st.claim.as_ref().is_some_and(|c| c.job.is_some());
            names.push(name.clone());
            acts.push(SlotActivity {
                id: slot.id,
                sub_id,
                state: st.state.as_str().into(),
                rank: st.claim.as_ref().map_or(0.0, |c| c.rank),
                partitionable: slot.is_partitionable(),
                condor_load: match st.claim.as_ref().filter(|_| busy) {
                    Some(c) => self.job_loads.get(&c.id).copied().unwrap_or(1.0),
                    None => 0.0,
                },
            });
        }
        let shared =
            load::assign_load_and_idle(&acts, self.machine_load, self.idle, self.connected);
        self.loads = names.into_iter().zip(shared).collect();
    }

    /// The number of slots in each (`State`, `Activity`).
    pub fn counts(&self) -> BTreeMap<(&'static str, &'static str), usize> {
        let mut m = BTreeMap::new();
        for s in self.states.values() {
            *m.entry((s.state.as_str(), s.activity.as_str()))
                .or_insert(0) += 1;
        }
        m
    }
}

/// The reason the policy refused `claim_id`, if it did.
fn refusal(actions: &[Action], claim_id: &str) -> Option<String> {
    actions.iter().find_map(|a| match a {
        Action::ClaimRefused {
            claim_id: c,
            reason,
        } if c == claim_id => Some(reason.clone()),
        _ => None,
    })
}

/// Believes the signed grant `req` carries, presented by `presenter`, at `now`: the leader's
/// signature over the claim's slot, capability and term ([`GrantVerifier::verify`]), and the
/// presenter the access point it was signed for ([`aerie_security::grant::check_presenter`]).
/// The real execute node and the simulator's startd both check claims with it.
pub fn verify_claim_grant(
    v: &GrantVerifier,
    req: &npb::ClaimRequest,
    presenter: &Peer,
    now: i64,
) -> Result<(), GrantError> {
    let Some(sg) = &req.signed else {
        return Err(GrantError::Unsigned);
    };
    let grant = SignedGrant {
        payload: sg.payload.clone(),
        signature: sg.signature.clone(),
        leader_cert: sg.leader_cert.clone(),
        proof: sg.proof.clone(),
    };
    let presented = Presented {
        slot: &req.slot,
        claim_id: &req.claim_id,
        term: req.term,
    };
    let claims = v.verify(&grant, presented, now)?;
    aerie_security::grant::check_presenter(&claims.access_point, &presenter.caller, presenter.addr)
}

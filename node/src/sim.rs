//! The simulated pool at run time: the startd and access point cores behind one lock, the
//! claim/release/grant paths both gRPC services and the in-process access point use, the
//! job completion timers, and the bookkeeping of which ads changed.
//!
//! One code path per action: `claim` is what `Startd.RequestClaim` runs, and what the access
//! point calls directly when the granted slot is one of this process's own; a slot on another
//! process is claimed through its `Startd` gRPC service.
use crate::access_point::{job_id_string, AccessPoint, GrantTicket, JobId};
use crate::args::RuntimeDist;
use crate::claims_log::{now_ms, ClaimsLog, Event};
use crate::execute::slots::verify_claim_grant;
use crate::pool::{self, AdContext, AdRef};
use crate::startd::{ClaimSpec, Resources, RunningJob, Startd};
use aerie_proto::negotiation as pb;
use aerie_security::grant::GrantVerifier;
use aerie_security::identity::Peer;
use rand::rngs::StdRng;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;
use tokio::sync::Notify;

/// Counters since the simulator started, for the periodic "pool status" line.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stats {
    /// Claims this process's startd accepted.
    pub claims: u64,
    /// Claims this process's startd released.
    pub releases: u64,
    /// Claim requests this startd refused plus grants this access point refused (the
    /// claims log's `refused` events).
    pub refusals: u64,
    /// Jobs of this access point whose runtime ended (released or not).
    pub completed: u64,
}

/// Everything behind the lock.
pub struct State {
    /// The simulated startd with every slot of the pool.
    pub startd: Startd,
    /// The simulated access point (schedd) with every submitter's jobs.
    pub ap: AccessPoint,
    /// Ads changed since they were last sent.
    pub dirty: BTreeSet<AdRef>,
    /// Ads that no longer exist (released dynamic slots), to invalidate: (MyType, Name).
    pub removed: Vec<(String, String)>,
    /// Draws job runtimes.
    pub rng: StdRng,
    /// The status line's counters.
    pub stats: Stats,
}

/// Fixed settings of a run.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// How long each job runs once its slot is claimed (`--runtime`).
    pub runtime: RuntimeDist,
    /// A finished job is replaced by a fresh idle one of the same submitter
    /// (`--jobs-forever`).
    pub jobs_forever: bool,
    /// Test-only: where to keep the slots' current claim ids as JSON (`--dump-claim-ids`).
    pub dump_claim_ids: Option<PathBuf>,
}

/// The running simulator: the startd and access point state behind one lock, the claims log
/// and what the advertiser needs. Shared (`Arc`) by the gRPC services, the advertiser, the
/// job completion timers and the status line.
pub struct Sim {
    state: Mutex<State>,
    /// What every ad says about where it comes from.
    pub ctx: AdContext,
    /// "host:port" this process serves on (the ads' MyAddress without the brackets).
    pub listen: String,
    /// Where claim, release and refusal events go (`--claims-log`, or nowhere).
    pub log: ClaimsLog,
    /// The run's fixed settings.
    pub cfg: SimConfig,
    /// Woken when an ad changes, so the advertiser sends it promptly.
    pub changed: Notify,
    /// With pool credentials, the checker of the signed grants claims carry: the simulated
    /// startd believes a claim's term only as the real one does
    /// ([`crate::execute::slots::verify_claim_grant`]).
    grants: OnceLock<GrantVerifier>,
    /// The idle jobs' resource-request keys between cycles.
    request_cache: Mutex<aerie_core::negotiator::requests::RequestCache>,
}

/// Unix seconds.
fn now_secs() -> i64 {
    (now_ms() / 1000) as i64
}

/// "<host:port>" or "host:port" to "host:port".
pub fn bare_addr(a: &str) -> &str {
    a.trim().trim_start_matches('<').trim_end_matches('>')
}

fn refused_event(
    by: &str,
    reason: &str,
    error: &str,
    slot: &str,
    job: &str,
    term: u64,
    cycle: u64,
) -> Event {
    Event {
        event: "refused".into(),
        slot: Some(slot.to_string()),
        job: Some(job.to_string()),
        term: Some(term),
        cycle: Some(cycle),
        reason: Some(reason.to_string()),
        error: Some(error.to_string()),
        by: Some(by.to_string()),
        time_ms: now_ms(),
        ..Default::default()
    }
}

/// A short reason for an access point refusal (for summaries), from its message.
fn ap_reason(msg: &str) -> &'static str {
    if msg.starts_with("stale term") {
        "stale term"
    } else if msg.contains("not idle") {
        "job not idle"
    } else if msg.contains("not in the queue") {
        "no such job"
    } else {
        "bad grant"
    }
}

impl Sim {
    /// Wraps a built pool for sharing.
    pub fn new(
        state: State,
        ctx: AdContext,
        listen: String,
        log: ClaimsLog,
        cfg: SimConfig,
    ) -> Arc<Sim> {
        Arc::new(Sim {
            state: Mutex::new(state),
            ctx,
            listen,
            log,
            cfg,
            changed: Notify::new(),
            grants: OnceLock::new(),
            request_cache: Default::default(),
        })
    }

    /// The state, even if a thread panicked holding it (the data stays usable).
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn mark(&self, st: &mut State, refs: impl IntoIterator<Item = AdRef>) {
        st.dirty.extend(refs);
        self.changed.notify_one();
    }

    /// From now on a claim must carry a grant the leader signed, presented by the access
    /// point it was delivered to, as at a real execute node
    /// (`SlotManager::require_signed_grants`); once, later calls are ignored.
    pub fn require_signed_grants(&self, verifier: GrantVerifier) {
        let _ = self.grants.set(verifier);
    }

    /// Startd.RequestClaim from this process's own access point (no connection: the
    /// presenter is this process's certificate).
    pub fn claim(&self, req: &pb::ClaimRequest) -> pb::ClaimReply {
        let me = Peer {
            caller: aerie_security::transport::own_caller(),
            addr: None,
        };
        self.claim_from(req, &me)
    }

    /// Startd.RequestClaim from `presenter`: checks the signed grant (when required), the
    /// capability, the term and the slot's availability, records the claim and marks the
    /// slot ad changed.
    pub fn claim_from(&self, req: &pb::ClaimRequest, presenter: &Peer) -> pb::ClaimReply {
        let refuse = |reason: &str, error: String| {
            self.log.write(&refused_event(
                "startd", reason, &error, &req.slot, &req.job, req.term, req.cycle,
            ));
            self.lock().stats.refusals += 1;
            tracing::info!(slot = %req.slot, job = %req.job, term = req.term, %error, "claim refused");
            pb::ClaimReply {
                ok: false,
                error,
                ..Default::default()
            }
        };
        let job_ad = match classad::parse_ad(&req.job_ad) {
            Ok(a) => a,
            Err(e) => {
                return refuse(
                    "bad job ad",
                    format!("job ad of {} does not parse: {e}", req.job),
                )
            }
        };
        if let Some(v) = self.grants.get() {
            if let Err(e) = verify_claim_grant(v, req, presenter, now_secs()) {
                return refuse("bad grant", e.to_string());
            }
        }
        let num = |a: &str, d: f64| job_ad.eval_attr(a).as_number().unwrap_or(d);
        let user = job_ad
            .eval_attr("User")
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| req.submitter.clone());
        let grouped = job_ad
            .eval_attr("AccountingGroup")
            .as_str()
            .is_some_and(|g| !g.is_empty());
        let limits = job_ad
            .eval_attr("ConcurrencyLimits")
            .as_str()
            .filter(|l| !l.is_empty())
            .map(str::to_string);
        let or = |v: f64, d: f64| if v > 0.0 { v } else { d };
        let spec = ClaimSpec {
            slot: req.slot.clone(),
            claim_id: req.claim_id.clone(),
            term: req.term,
            job: RunningJob {
                job: req.job.clone(),
                submitter: req.submitter.clone(),
                user,
                grouped,
                concurrency_limits: limits,
                term: req.term,
                cycle: req.cycle,
                start: now_secs(),
            },
            carve: Resources {
                cpus: or(req.carve_cpus, num("RequestCpus", 1.0)),
                memory: or(req.carve_memory, num("RequestMemory", 1.0)),
                disk: or(req.carve_disk, num("RequestDisk", 1.0)),
            },
        };
        let mut st = self.lock();
        match st.startd.request_claim(spec) {
            Ok(c) => {
                st.stats.claims += 1;
                let mut refs = vec![AdRef::Slot(c.slot.clone())];
                if let Some(p) = &c.parent {
                    refs.push(AdRef::Slot(p.clone()));
                }
                self.mark(&mut st, refs);
                self.log.write(&Event {
                    event: "claim".into(),
                    slot: Some(c.slot.clone()),
                    parent: c.parent.clone(),
                    job: Some(req.job.clone()),
                    submitter: Some(req.submitter.clone()),
                    term: Some(req.term),
                    cycle: Some(req.cycle),
                    time_ms: now_ms(),
                    ..Default::default()
                });
                self.dump_claim_ids(&st);
                drop(st);
                tracing::debug!(slot = %c.slot, job = %req.job, term = req.term, "claimed");
                pb::ClaimReply {
                    ok: true,
                    error: String::new(),
                    claimed_slot: c.slot,
                    claim_id: c.claim_id,
                }
            }
            Err(r) => {
                drop(st);
                refuse(r.kind(), r.to_string())
            }
        }
    }

    /// Startd.ReleaseClaim: frees the slot (a fresh capability; a dynamic slot disappears).
    pub fn release(&self, req: &pb::ReleaseRequest) -> pb::ReleaseReply {
        let mut st = self.lock();
        match st.startd.release(&req.slot, &req.claim_id, now_secs()) {
            Ok(r) => {
                st.stats.releases += 1;
                let mut refs = Vec::new();
                if r.removed {
                    st.removed.push(("Machine".into(), req.slot.clone()));
                    st.dirty.remove(&AdRef::Slot(req.slot.clone()));
                } else {
                    refs.push(AdRef::Slot(req.slot.clone()));
                }
                if let Some(p) = &r.parent {
                    refs.push(AdRef::Slot(p.clone()));
                }
                self.mark(&mut st, refs);
                self.log.write(&Event {
                    event: "release".into(),
                    slot: Some(req.slot.clone()),
                    parent: r.parent.clone(),
                    job: Some(r.job.job.clone()),
                    submitter: Some(r.job.submitter.clone()),
                    term: Some(r.job.term),
                    time_ms: now_ms(),
                    ..Default::default()
                });
                self.dump_claim_ids(&st);
                pb::ReleaseReply {
                    ok: true,
                    error: String::new(),
                }
            }
            Err(e) => {
                drop(st);
                tracing::warn!(slot = %req.slot, error = %e, "release refused");
                pb::ReleaseReply {
                    ok: false,
                    error: e,
                }
            }
        }
    }

    /// AccessPoint.GetRequests: the idle jobs, always whole (the simulated access point
    /// answers as one from before resource requests; the leader reads both).
    pub fn requests(&self, req: &pb::RequestsRequest) -> pb::RequestsReply {
        if req.resource_requests {
            // As the real access point answers (crate::requests), from the same job ads.
            let ads = self.lock().ap.idle_job_classads();
            let idle: Vec<&classad::ClassAd> = ads.iter().map(|a| &**a).collect();
            // The simulated jobs never change, so a key once made holds while they queue.
            let mut cache = self.request_cache.lock().unwrap_or_else(|p| p.into_inner());
            let requests =
                crate::requests::resource_requests(&mut cache, &idle, &req.significant_attributes);
            tracing::debug!(term = req.term, cycle = req.cycle, negotiator = %req.negotiator, idle = idle.len(), requests = requests.len(), "resource requests");
            return pb::RequestsReply {
                jobs: Vec::new(),
                requests,
            };
        }
        let jobs = self.lock().ap.idle_job_ads();
        tracing::debug!(term = req.term, cycle = req.cycle, negotiator = %req.negotiator, idle = jobs.len(), "requests");
        pb::RequestsReply {
            jobs,
            requests: Vec::new(),
        }
    }

    /// AccessPoint.DeliverGrants: checks each grant at once and answers; the claims run in a
    /// task of their own, in the batch's order.
    ///
    /// Why a task: the leader bounds delivery by a deadline and drops this handler when it
    /// passes. Were the claims made here, a drop between marking a job `Claiming` and the
    /// startd's answer would leave the job claiming forever, or a slot claimed that no job
    /// owns. A spawned task always runs to its end, and every claim in it ends in
    /// `confirm_grant` or `abort_grant` (the startd call itself is bounded), so no path leaks
    /// a job or a claim (issue 13.4). HTCondor's schedd likewise answers the negotiator at
    /// once and queues the claim (`Scheduler::contactStartd`, src/condor_schedd.V6/schedd.cpp).
    pub async fn deliver(self: &Arc<Self>, mut batch: pb::GrantBatch) -> pb::GrantReply {
        let seal = crate::schedd::shadow::BatchSeal::take(&mut batch);
        let mut results = Vec::with_capacity(batch.grants.len());
        let mut taken = Vec::new();
        for g in batch.grants {
            match self.take_grant(batch.term, batch.cycle, &g) {
                Ok(ticket) => {
                    results.push(pb::GrantResult {
                        accepted: true,
                        error: String::new(),
                    });
                    taken.push((g, ticket));
                }
                Err(e) => results.push(pb::GrantResult {
                    accepted: false,
                    error: e,
                }),
            }
        }
        if !taken.is_empty() {
            let me = self.clone();
            let (term, cycle) = (batch.term, batch.cycle);
            tokio::spawn(async move {
                for (g, ticket) in taken {
                    me.claim_for(term, cycle, &g, ticket, &seal).await;
                }
            });
        }
        pb::GrantReply { results }
    }

    /// Checks one grant against the queue and marks its job `Claiming`, or says why not.
    fn take_grant(&self, term: u64, cycle: u64, g: &pb::Grant) -> Result<GrantTicket, String> {
        let mut st = self.lock();
        let ticket = st.ap.begin_grant(term, &g.job).inspect_err(|e| {
            st.stats.refusals += 1;
            self.log.write(&refused_event(
                "access_point",
                ap_reason(e),
                e,
                &g.slot,
                &g.job,
                term,
                cycle,
            ));
            tracing::info!(job = %g.job, slot = %g.slot, term, error = %e, "grant refused");
        })?;
        if !g.submitter.is_empty() && g.submitter != ticket.submitter {
            tracing::warn!(job = %g.job, grant = %g.submitter, job_submitter = %ticket.submitter,
                "grant names another submitter than the job's; using the job's");
        }
        Ok(ticket)
    }

    /// Claims the granted slot for a taken grant and starts the job's timer, or puts the job
    /// back to idle when the startd refuses or cannot be reached.
    async fn claim_for(
        self: &Arc<Self>,
        term: u64,
        cycle: u64,
        g: &pb::Grant,
        ticket: GrantTicket,
        seal: &crate::schedd::shadow::BatchSeal,
    ) {
        let or = |v: f64, d: f64| if v > 0.0 { v } else { d };
        let req = pb::ClaimRequest {
            slot: g.slot.clone(),
            claim_id: g.claim_id.clone(),
            term,
            cycle,
            job: g.job.clone(),
            submitter: ticket.submitter.clone(),
            job_ad: ticket.job_ad.clone(),
            carve_cpus: or(g.carve_cpus, ticket.request.cpus),
            carve_memory: or(g.carve_memory, ticket.request.memory),
            carve_disk: or(g.carve_disk, ticket.request.disk),
            preempts: g.preempts,
            signed: seal.complete(g.signed.clone()),
        };
        let reply = self.claim_at(&g.startd_addr, req).await;
        let mut st = self.lock();
        if !reply.ok {
            st.ap.abort_grant(ticket.job);
            tracing::info!(job = %g.job, slot = %g.slot, term, error = %reply.error, "claim refused; the job is idle again");
            return;
        }
        st.ap.confirm_grant(
            ticket.job,
            term,
            &reply.claimed_slot,
            &reply.claim_id,
            &g.startd_addr,
        );
        let runtime = self.cfg.runtime.sample(&mut st.rng);
        let sub = st
            .ap
            .job(ticket.job)
            .map(|j| j.submitter)
            .unwrap_or_default();
        self.mark(&mut st, [AdRef::Submitter(sub), AdRef::Scheduler]);
        drop(st);
        let me = self.clone();
        let (slot, claim_id, addr, job) = (
            reply.claimed_slot,
            reply.claim_id,
            g.startd_addr.clone(),
            ticket.job,
        );
        tokio::spawn(async move {
            tokio::time::sleep(runtime).await;
            me.complete(job, &addr, slot, claim_id).await;
        });
    }

    /// A job's runtime is over: release its slot and take it off the queue.
    async fn complete(self: &Arc<Self>, job: JobId, addr: &str, slot: String, claim_id: String) {
        let r = self
            .release_at(
                addr,
                pb::ReleaseRequest {
                    slot: slot.clone(),
                    claim_id,
                },
            )
            .await;
        if !r.ok {
            tracing::warn!(job = %job_id_string(job), %slot, error = %r.error, "release failed; the job is done anyway");
        }
        let mut st = self.lock();
        st.stats.completed += 1;
        if let Some(sub) = st.ap.finish(job, self.cfg.jobs_forever, now_secs()) {
            self.mark(&mut st, [AdRef::Submitter(sub), AdRef::Scheduler]);
        }
    }

    fn is_local(&self, startd_addr: &str) -> bool {
        startd_addr.is_empty() || bare_addr(startd_addr) == self.listen
    }

    /// Claims at this process's startd directly, or at another's over gRPC.
    async fn claim_at(&self, startd_addr: &str, req: pb::ClaimRequest) -> pb::ClaimReply {
        if self.is_local(startd_addr) {
            return self.claim(&req);
        }
        match remote_startd(startd_addr).await {
            Ok(mut c) => match c.request_claim(req).await {
                Ok(r) => r.into_inner(),
                Err(s) => pb::ClaimReply {
                    ok: false,
                    error: format!("startd {startd_addr}: {}", s.message()),
                    ..Default::default()
                },
            },
            Err(e) => pb::ClaimReply {
                ok: false,
                error: e,
                ..Default::default()
            },
        }
    }

    async fn release_at(&self, startd_addr: &str, req: pb::ReleaseRequest) -> pb::ReleaseReply {
        if self.is_local(startd_addr) {
            return self.release(&req);
        }
        match remote_startd(startd_addr).await {
            Ok(mut c) => match c.release_claim(req).await {
                Ok(r) => r.into_inner(),
                Err(s) => pb::ReleaseReply {
                    ok: false,
                    error: format!("startd {startd_addr}: {}", s.message()),
                },
            },
            Err(e) => pb::ReleaseReply {
                ok: false,
                error: e,
            },
        }
    }

    /// Every ad, rendered now; what was dirty is thereby sent. The slots are copied under
    /// the lock and rendered after it, so a large pool's resend does not hold up claims.
    pub fn all_ads(&self) -> Vec<String> {
        let (slots, mut ads) = {
            let mut st = self.lock();
            st.dirty.clear();
            let slots: Vec<(crate::startd::Slot, crate::startd::MachineSlots)> = st
                .startd
                .slots()
                .map(|s| {
                    let m = st.startd.machine(&s.machine).copied().unwrap_or_default();
                    (s.clone(), m)
                })
                .collect();
            let mut ads = Vec::with_capacity(slots.len() + st.ap.submitters().len() + 1);
            for i in 0..st.ap.submitters().len() {
                if let Some(a) = pool::submitter_ad(&st.ap, i, &self.ctx) {
                    ads.push(a);
                }
            }
            ads.push(pool::scheduler_ad(&st.ap, &self.ctx));
            (slots, ads)
        };
        ads.extend(slots.iter().map(|(s, m)| pool::slot_ad(s, m, &self.ctx)));
        ads
    }

    /// The ads changed since last sent, and the ads to invalidate.
    pub fn take_changes(&self) -> (Vec<String>, Vec<(String, String)>) {
        let mut st = self.lock();
        let dirty = std::mem::take(&mut st.dirty);
        let removed = std::mem::take(&mut st.removed);
        let ads = dirty
            .iter()
            .filter_map(|r| match r {
                AdRef::Slot(n) => st.startd.slot(n).map(|s| {
                    let m = st.startd.machine(&s.machine).copied().unwrap_or_default();
                    pool::slot_ad(s, &m, &self.ctx)
                }),
                AdRef::Submitter(i) => pool::submitter_ad(&st.ap, *i, &self.ctx),
                AdRef::Scheduler => Some(pool::scheduler_ad(&st.ap, &self.ctx)),
            })
            .collect();
        (ads, removed)
    }

    /// Puts invalidations back after a failed attempt.
    pub fn requeue_removed(&self, removed: Vec<(String, String)>) {
        self.lock().removed.extend(removed);
    }

    /// (MyType, Name) of every ad this process advertises (for invalidation at exit).
    pub fn ad_keys(&self) -> Vec<(String, String)> {
        let st = self.lock();
        let mut keys: Vec<(String, String)> = st
            .startd
            .slots()
            .map(|s| ("Machine".to_string(), s.name.clone()))
            .collect();
        for i in 0..st.ap.submitters().len() {
            if let Some((t, n)) = pool::ad_key(&AdRef::Submitter(i), &st.ap, &self.ctx) {
                keys.push((t.to_string(), n));
            }
        }
        keys.push(("Scheduler".into(), self.ctx.schedd_name.clone()));
        keys
    }

    /// (idle, running) over all submitters, and the counters.
    pub fn status(&self) -> (u64, u64, Stats) {
        let st = self.lock();
        let (i, r) = st
            .ap
            .counts()
            .iter()
            .fold((0, 0), |(i, r), (a, b)| (i + a, r + b));
        (i, r, st.stats)
    }

    /// Test-only: writes the current claim ids (atomically) where --dump-claim-ids says.
    fn dump_claim_ids(&self, st: &State) {
        let Some(path) = &self.cfg.dump_claim_ids else {
            return;
        };
        let text = match serde_json::to_string_pretty(&st.startd.claim_ids()) {
            Ok(t) => t,
            Err(_) => return,
        };
        let tmp = path.with_extension("tmp");
        if let Err(e) = std::fs::write(&tmp, text).and_then(|_| std::fs::rename(&tmp, path)) {
            tracing::warn!(path = %path.display(), error = %e, "cannot write claim ids");
        }
    }

    /// Writes the claim ids once at start (when asked).
    pub fn dump_claim_ids_now(&self) {
        let st = self.lock();
        self.dump_claim_ids(&st);
    }
}

/// A client for the startd at "<host:port>".
async fn remote_startd(
    addr: &str,
) -> Result<pb::startd_client::StartdClient<tonic::transport::Channel>, String> {
    let ep = aerie_security::transport::endpoint(bare_addr(addr), aerie_security::Role::Execute)
        .map_err(|e| format!("startd {addr}: {e}"))?
        .connect_timeout(Duration::from_secs(2))
        .timeout(Duration::from_secs(10));
    let ch = ep
        .connect()
        .await
        .map_err(|e| format!("cannot reach startd {addr}: {e}"))?;
    Ok(pb::startd_client::StartdClient::new(ch))
}

impl crate::advertise::AdSource for Sim {
    fn all_ads(&self) -> Vec<String> {
        Sim::all_ads(self)
    }
    fn take_changes(&self) -> (Vec<String>, Vec<(String, String)>) {
        Sim::take_changes(self)
    }
    fn requeue_removed(&self, removed: Vec<(String, String)>) {
        Sim::requeue_removed(self, removed)
    }
    fn ad_keys(&self) -> Vec<(String, String)> {
        Sim::ad_keys(self)
    }
    fn changed(&self) -> &Notify {
        &self.changed
    }
}

//! A claim's life at the access point, HTCondor's schedd and shadow in one: take the
//! leader's grants at once (each grant's claim runs in a spawned task of its own, so a grant
//! is never left half-done when the leader's deadline drops the call: issue 13.4, and the
//! claims of a cycle are in flight together), claim the slot
//! (`Startd.RequestClaim` with the job ad), activate it with the job and its input files
//! (`Execute.ActivateClaim`), renew it every `ALIVE_INTERVAL` (`Execute.KeepAlive`), record
//! the job's events (`Shadow.JobEvent`: started, exited with its outputs, evicted, failed to
//! start), stop jobs for rm/hold/vacate (`Execute.DeactivateClaim`), reuse the claim for the
//! next job of its autocluster, and release it (`Startd.ReleaseClaim`) when there is none or
//! `CLAIM_WORKLIFE` has passed. HTCondor: src/condor_schedd.V6/schedd.cpp (`contactStartd`,
//! `Scheduler::StartJob`, `sendAlives`), src/condor_shadow.V6.1/.
use super::claims::Claim;
use super::daemon::{now_secs, Schedd};
use super::deferral::{self, Start};
use super::files::{self, FileError};
use super::job::{self, hold_code, JobId, Status};
use super::metrics;
use super::queue::{self, Change, Exit, RunningOn};
use aerie_proto::execute as ex;
use aerie_proto::negotiation as pb;
use std::sync::Arc;
use std::time::Duration;
use tonic::transport::Channel;

/// Keep-alives in a row that may fail to reach a startd before its claim is given up (its
/// job idle again); a claim with a job also waits out the job's lease
/// ([`super::claims::Claims::may_give_up`]), by when the startd's lease has passed too.
pub const MAX_MISSED_ALIVES: u32 = 3;

/// How often a restarted access point asks whether a run it gave up is over.
const ORPHAN_POLL: Duration = Duration::from_secs(1);

/// Deadline of an ordinary call to an execute node.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a call to an execute node may wait for its answer.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Wait {
    /// At most [`CALL_TIMEOUT`].
    Bounded,
    /// Until answered: a preempting claim is answered only once the slot's job has retired
    /// and vacated, which `MaxJobRetirementTime` may make hours (HTCondor's schedd likewise
    /// waits on its claim socket). HTTP/2 keep-alives end the wait when the node or the path
    /// to it is gone.
    UntilAnswered,
}

/// "<host:port>" or "host:port" to a channel to it.
async fn channel(addr: &str, wait: Wait) -> Result<Channel, String> {
    let bare = crate::sim::bare_addr(addr);
    let endpoint = aerie_security::transport::endpoint(bare, aerie_security::Role::Execute)
        .map_err(|e| format!("{addr}: {e}"))?
        .connect_timeout(Duration::from_secs(3));
    let endpoint = match wait {
        Wait::Bounded => endpoint.timeout(CALL_TIMEOUT),
        Wait::UntilAnswered => endpoint
            .http2_keep_alive_interval(Duration::from_secs(10))
            .keep_alive_timeout(Duration::from_secs(20))
            .keep_alive_while_idle(true),
    };
    endpoint
        .connect()
        .await
        .map_err(|e| format!("cannot reach {addr}: {e}"))
}

type StartdClient = pb::startd_client::StartdClient<Channel>;
type ExecuteClient = ex::execute_client::ExecuteClient<Channel>;

/// One call to the Startd service at `addr`; the error names the address.
async fn startd_call<R, F>(addr: &str, call: impl FnOnce(StartdClient) -> F) -> Result<R, String>
where
    F: std::future::Future<Output = Result<tonic::Response<R>, tonic::Status>>,
{
    startd_call_waiting(addr, Wait::Bounded, call).await
}

/// [`startd_call`], waiting as `wait` says.
async fn startd_call_waiting<R, F>(
    addr: &str,
    wait: Wait,
    call: impl FnOnce(StartdClient) -> F,
) -> Result<R, String>
where
    F: std::future::Future<Output = Result<tonic::Response<R>, tonic::Status>>,
{
    let c = StartdClient::new(channel(addr, wait).await?);
    call(c)
        .await
        .map(|r| r.into_inner())
        .map_err(|s| format!("startd {addr}: {}", s.message()))
}

/// Releases the claim `claim_id` on `slot` at the startd at `addr` (HTCondor's
/// RELEASE_CLAIM).
async fn release_at(addr: &str, slot: &str, claim_id: &str) -> Result<pb::ReleaseReply, String> {
    let req = pb::ReleaseRequest {
        slot: slot.to_string(),
        claim_id: claim_id.to_string(),
    };
    startd_call(addr, |mut c| async move { c.release_claim(req).await }).await
}

/// Renews the claim `claim_id` on `slot` at the execute node at `addr` (HTCondor's
/// ALIVE); the reply says whether the node still knows the claim.
async fn keep_alive_at(
    addr: &str,
    slot: &str,
    claim_id: &str,
) -> Result<ex::KeepAliveReply, String> {
    let req = ex::KeepAliveRequest {
        slot: slot.to_string(),
        claim_id: claim_id.to_string(),
    };
    execute_call(addr, |mut c| async move { c.keep_alive(req).await }).await
}

/// One call to the Execute service at `addr`; the error names the address.
async fn execute_call<R, F>(addr: &str, call: impl FnOnce(ExecuteClient) -> F) -> Result<R, String>
where
    F: std::future::Future<Output = Result<tonic::Response<R>, tonic::Status>>,
{
    let c = ExecuteClient::new(channel(addr, Wait::Bounded).await?)
        .max_encoding_message_size((files::MAX_INPUT_BYTES as usize) + (1 << 20));
    call(c)
        .await
        .map(|r| r.into_inner())
        .map_err(|s| format!("execute node {addr}: {}", s.message()))
}

/// Commits, logging a failure (the in-memory queue then stays as it was).
fn commit_or_log(s: &Schedd, st: &mut super::daemon::Inner, changes: &[Change], what: &str) {
    if let Err(e) = s.commit(st, changes) {
        tracing::error!(error = %format!("{e:#}"), what, "cannot write the job queue");
    }
}

impl Schedd {
    /// AccessPoint.GetRequests: the idle jobs not bound to a claim, whole.
    pub fn requests(&self) -> Vec<String> {
        let st = self.lock();
        st.claims
            .idle_ads(&st.queue, now_secs())
            .map(|a| a.to_old_syntax())
            .collect()
    }

    /// AccessPoint.GetRequests with resource requests: the same idle jobs as [`Self::requests`],
    /// grouped by `significant` (the leader's names) into one representative ad per group
    /// the negotiator cannot tell apart, with the jobs' ids and their autocluster (see
    /// [`aerie_core::negotiator::requests`]).
    pub fn resource_requests(&self, significant: &[String]) -> Vec<pb::ResourceRequest> {
        let mut st = self.lock();
        let inner = &mut *st;
        let idle: Vec<&classad::ClassAd> =
            inner.claims.idle_ads(&inner.queue, now_secs()).collect();
        crate::requests::resource_requests(&mut inner.request_cache, &idle, significant)
    }

    /// AccessPoint.DeliverGrants: checks every grant at once and answers; the claims run in
    /// a task of their own.
    pub fn deliver(self: &Arc<Self>, mut batch: pb::GrantBatch) -> pb::GrantReply {
        let seal = BatchSeal::take(&mut batch);
        let mut results = Vec::with_capacity(batch.grants.len());
        let mut taken = Vec::new();
        let now = now_secs();
        {
            let mut st = self.lock();
            for g in batch.grants {
                let inner = &mut *st;
                match inner.claims.begin_grant_in(
                    batch.term,
                    &g.job,
                    &g.autocluster,
                    &inner.queue,
                    now,
                ) {
                    Ok(id) => {
                        if id.to_string() != g.job {
                            tracing::info!(granted = %g.job, job = %id, autocluster = %g.autocluster, slot = %g.slot, "grant taken by another job of its autocluster");
                        }
                        results.push(pb::GrantResult {
                            accepted: true,
                            error: String::new(),
                        });
                        taken.push((g, id));
                    }
                    Err(e) => {
                        tracing::info!(job = %g.job, slot = %g.slot, term = batch.term, error = %e, "grant refused");
                        results.push(pb::GrantResult {
                            accepted: false,
                            error: e,
                        });
                    }
                }
            }
        }
        // Each claim in a task of its own, all at once: one after the other, a cycle's
        // claims took a round trip (and a connection) each before the next began, and a
        // preempting claim, answered only once the slot's job has retired, held up every
        // claim behind it. HTCondor's schedd likewise has its startd contacts in flight
        // together (`MAX_PENDING_STARTD_CONTACTS`, unlimited by default;
        // src/condor_schedd.V6/schedd.cpp `contactStartd`).
        for (g, id) in taken {
            let me = self.clone();
            let (term, cycle) = (batch.term, batch.cycle);
            let seal = seal.clone();
            tokio::spawn(async move { me.claim_for(term, cycle, g, id, &seal).await });
        }
        pb::GrantReply { results }
    }

    /// Claims the granted slot for job `id`; on success activates it, else the job may be
    /// matched again.
    async fn claim_for(
        self: &Arc<Self>,
        term: u64,
        cycle: u64,
        mut g: pb::Grant,
        id: JobId,
        seal: &BatchSeal,
    ) {
        let Some(ad) = self.job_ad(id) else {
            self.lock().claims.abort_grant(id);
            return;
        };
        let num = |a: &str| ad.eval_attr(a).as_number().unwrap_or(0.0);
        let or = |v: f64, d: f64| if v > 0.0 { v } else { d };
        let submitter = job::submitter_name(&ad, &self.settings.domain);
        let req = pb::ClaimRequest {
            slot: g.slot.clone(),
            claim_id: g.claim_id.clone(),
            term,
            cycle,
            job: id.to_string(),
            submitter: submitter.clone(),
            job_ad: ad.to_old_syntax(),
            carve_cpus: or(g.carve_cpus, num("RequestCpus")),
            carve_memory: or(g.carve_memory, num("RequestMemory")),
            carve_disk: or(g.carve_disk, num("RequestDisk")),
            // A preempting claim: the startd retires and vacates the slot's job first.
            preempts: g.preempts,
            // The leader's signature, forwarded untouched: the startd checks it.
            signed: seal.complete(g.signed.take()),
        };
        let wait = if g.preempts {
            Wait::UntilAnswered
        } else {
            Wait::Bounded
        };
        let reply = startd_call_waiting(&g.startd_addr, wait, |mut c| async move {
            c.request_claim(req).await
        })
        .await;
        let reply = match reply {
            Ok(r) if r.ok => r,
            Ok(r) => {
                self.lock().claims.abort_grant(id);
                tracing::info!(job = %id, slot = %g.slot, error = %r.error, "claim refused; the job is idle again");
                return;
            }
            Err(e) => {
                self.lock().claims.abort_grant(id);
                tracing::warn!(job = %id, slot = %g.slot, error = %e, "claim failed; the job is idle again");
                return;
            }
        };
        let claim = Claim {
            slot: if reply.claimed_slot.is_empty() {
                g.slot.clone()
            } else {
                reply.claimed_slot
            },
            claim_id: if reply.claim_id.is_empty() {
                g.claim_id.clone()
            } else {
                reply.claim_id
            },
            startd_addr: g.startd_addr.clone(),
            signature: job::signature(&ad),
            submitter,
            since: now_secs(),
            job: Some(id),
            missed_alives: 0,
            last_heard: now_secs(),
        };
        let claim_id = claim.claim_id.clone();
        {
            let mut st = self.lock();
            st.claims.add(claim);
            metrics::set_claims(st.claims.len());
        }
        tracing::info!(job = %id, slot = %g.slot, "slot claimed");
        self.activate(&claim_id, id).await;
    }

    /// Activates the claim with its bound job `id`: reads the inputs as the owner and sends
    /// them. A job that cannot start anywhere is held; a refusal of this slot only puts the
    /// job back to idle and releases the claim.
    async fn activate(self: &Arc<Self>, claim_id: &str, id: JobId) {
        let (ad, claim) = loop {
            let (ad, claim) = {
                let st = self.lock();
                let ad = st
                    .queue
                    .get(id)
                    .filter(|a| Status::of(a) == Status::Idle)
                    .cloned();
                (ad, st.claims.get(claim_id).cloned())
            };
            // The claim was lost, or the job let go of it, while it waited.
            let Some(claim) = claim.filter(|c| c.job == Some(id)) else {
                return;
            };
            let Some(ad) = ad else {
                // Removed or held while it was being claimed.
                self.job_done(claim_id);
                return;
            };
            match deferral::at_start(id, &ad, now_secs()) {
                Start::Now => break (ad, claim),
                Start::Wait(secs) => {
                    tracing::info!(job = %id, slot = %claim.slot, secs, "job deferred: the claim waits for its DeferralTime");
                    tokio::time::sleep(Duration::from_secs(secs)).await;
                }
                Start::Missed(detail) => {
                    tracing::info!(job = %id, slot = %claim.slot, %detail, "job missed its deferred execution time");
                    self.hold_bound(
                        claim_id,
                        id,
                        deferral::MISSED_REASON,
                        deferral::MISSED_DEFERRED_EXECUTION_TIME,
                        0,
                    );
                    self.job_done(claim_id);
                    return;
                }
            }
        };
        let owner = job::owner(&ad);
        let read_ad = ad.clone();
        let inputs = tokio::task::spawn_blocking(move || {
            let acct = files::account(&owner).map_err(|m| FileError {
                message: m,
                errno: 0,
            })?;
            files::read_inputs(&read_ad, &acct)
        })
        .await
        .unwrap_or_else(|e| {
            Err(FileError {
                message: format!("input task failed: {e}"),
                errno: 0,
            })
        });
        let inputs = match inputs {
            Ok(i) => i,
            Err(e) => {
                let why = format!("Error transferring input files: {}", e.message);
                self.hold_bound(
                    claim_id,
                    id,
                    &why,
                    hold_code::TRANSFER_INPUT_ERROR,
                    e.errno as i64,
                );
                self.job_done(claim_id);
                return;
            }
        };
        let req = ex::ActivateRequest {
            slot: claim.slot.clone(),
            claim_id: claim.claim_id.clone(),
            job_ad: ad.to_old_syntax(),
            inputs,
            shadow_addr: crate::sim::bare_addr(&self.settings.my_address).to_string(),
            job: id.to_string(),
        };
        let reply = execute_call(&claim.startd_addr, |mut c| async move {
            c.activate_claim(req).await
        })
        .await;
        match reply {
            Ok(r) if r.ok => {
                tracing::info!(job = %id, slot = %claim.slot, "job activated");
            }
            Ok(r) if !r.hold_reason.is_empty() => {
                self.hold_bound(
                    claim_id,
                    id,
                    &r.hold_reason,
                    r.hold_reason_code as i64,
                    r.hold_reason_subcode as i64,
                );
                self.job_done(claim_id);
            }
            Ok(r) => {
                tracing::info!(job = %id, slot = %claim.slot, error = %r.error, "activation refused; the job is idle again");
                self.drop_claim(claim_id).await;
            }
            Err(e) => {
                tracing::warn!(job = %id, slot = %claim.slot, error = %e, "activation failed; the job is idle again");
                self.drop_claim(claim_id).await;
            }
        }
    }

    /// Holds job `id` (bound to `claim_id`) with the reason.
    fn hold_bound(&self, claim_id: &str, id: JobId, why: &str, code: i64, subcode: i64) {
        let mut st = self.lock();
        let ch = st.queue.hold(id, why, code, subcode, now_secs());
        commit_or_log(self, &mut st, &ch, "hold");
        metrics::job_held();
        tracing::info!(job = %id, claim = %claim_id, reason = %why, "job held");
    }

    /// The claim's job is done with it: the claim takes its next job, or is released.
    fn job_done(self: &Arc<Self>, claim_id: &str) {
        let next = {
            let mut st = self.lock();
            st.claims.unbind(claim_id);
            let inner = &mut *st;
            let next = inner.claims.next_job(
                claim_id,
                &inner.queue,
                now_secs(),
                self.settings.claim_worklife,
            );
            if let Some(j) = next {
                inner.claims.bind(claim_id, j);
            }
            next
        };
        let me = self.clone();
        let claim_id = claim_id.to_string();
        tokio::spawn(async move {
            match next {
                Some(j) => {
                    metrics::claim_reused();
                    tracing::info!(job = %j, claim = %claim_id, "claim reused for the next job");
                    me.activate(&claim_id, j).await;
                }
                None => me.drop_claim(&claim_id).await,
            }
        });
    }

    /// Forgets the claim and releases it at its startd (best effort); a job still bound to
    /// it goes back to idle (or to the history, when removed).
    async fn drop_claim(self: &Arc<Self>, claim_id: &str) {
        let claim = {
            let mut st = self.lock();
            let c = st.claims.remove(claim_id);
            if let Some(j) = c.as_ref().and_then(|c| c.job) {
                let ch = st.queue.evicted(j, 0.0, now_secs());
                commit_or_log(self, &mut st, &ch, "release");
            }
            metrics::set_claims(st.claims.len());
            c
        };
        let Some(claim) = claim else { return };
        metrics::claim_released();
        match release_at(&claim.startd_addr, &claim.slot, &claim.claim_id).await {
            Ok(r) if r.ok => tracing::info!(slot = %claim.slot, "claim released"),
            Ok(r) => {
                tracing::info!(slot = %claim.slot, error = %r.error, "release refused (the claim is gone already)")
            }
            Err(e) => tracing::warn!(slot = %claim.slot, error = %e, "cannot release the claim"),
        }
    }

    /// Shadow.JobEvent: records one event of a job of a claim this access point holds;
    /// events of other claims are acknowledged and ignored.
    pub async fn job_event(self: &Arc<Self>, req: ex::JobEventRequest) -> ex::JobEventReply {
        let ok = ex::JobEventReply {
            ok: true,
            error: String::new(),
        };
        let Some(id) = JobId::parse(&req.job) else {
            return ex::JobEventReply {
                ok: false,
                error: format!("job {:?} is not CLUSTER.PROC", req.job),
            };
        };
        let bound = self
            .lock()
            .claims
            .get(&req.claim_id)
            .is_some_and(|c| c.job == Some(id));
        if !bound {
            tracing::debug!(job = %id, slot = %req.slot, "event of a claim not held; ignored");
            return ok;
        }
        let now = now_secs();
        match req.event {
            Some(ex::job_event_request::Event::Started(_)) => {
                let mut st = self.lock();
                let mut ch = st.queue.started(id, &req.slot, now);
                if let Some(c) = st.claims.get(&req.claim_id).filter(|_| !ch.is_empty()) {
                    let on = RunningOn {
                        slot: req.slot.clone(),
                        claim_id: c.claim_id.clone(),
                        startd_addr: c.startd_addr.clone(),
                    };
                    ch.push(Change::RunsOn(id, on));
                }
                if let Err(e) = self.commit(&mut st, &ch) {
                    return ex::JobEventReply {
                        ok: false,
                        error: format!("{e:#}"),
                    };
                }
                metrics::job_started();
                tracing::info!(job = %id, slot = %req.slot, "job started");
            }
            Some(ex::job_event_request::Event::Exited(x)) => {
                let Some(ad) = self.job_ad(id) else { return ok };
                let owner = job::owner(&ad);
                let outputs = x.outputs;
                let write_ad = ad.clone();
                let written = tokio::task::spawn_blocking(move || {
                    let acct = files::account(&owner).map_err(|m| FileError {
                        message: m,
                        errno: 0,
                    })?;
                    files::write_outputs(&write_ad, &acct, &outputs)
                })
                .await
                .unwrap_or_else(|e| {
                    Err(FileError {
                        message: format!("output task failed: {e}"),
                        errno: 0,
                    })
                });
                let mut output_error = (!x.output_error.is_empty()).then(|| x.output_error.clone());
                if let Err(e) = written {
                    output_error = Some(format!("Error writing output files: {}", e.message));
                }
                let exit = Exit {
                    code: x.exit_code,
                    signal: x.exit_signal,
                    wall: x.usage.as_ref().map(|u| u.wall_seconds).unwrap_or(0.0),
                    output_error,
                };
                {
                    let mut st = self.lock();
                    let mut ch = st.queue.exited(id, &exit, now);
                    // A crontab job re-queued by its OnExitRemove gets its next run.
                    queue::schedule_crontabs(&mut ch, now, &chrono::Local);
                    if let Err(e) = self.commit(&mut st, &ch) {
                        return ex::JobEventReply {
                            ok: false,
                            error: format!("{e:#}"),
                        };
                    }
                    match ch.first() {
                        Some(Change::Finish(_, a)) if Status::of(a) == Status::Completed => {
                            metrics::job_completed()
                        }
                        Some(Change::Put(_, a)) if Status::of(a) == Status::Held => {
                            metrics::job_held()
                        }
                        _ => {}
                    }
                }
                tracing::info!(job = %id, code = ?exit.code, signal = ?exit.signal, "job exited");
                self.job_done(&req.claim_id);
            }
            Some(ex::job_event_request::Event::Evicted(v)) => {
                {
                    let mut st = self.lock();
                    let wall = v.usage.as_ref().map(|u| u.wall_seconds).unwrap_or(0.0);
                    let ch = st.queue.evicted(id, wall, now);
                    if let Err(e) = self.commit(&mut st, &ch) {
                        return ex::JobEventReply {
                            ok: false,
                            error: format!("{e:#}"),
                        };
                    }
                    st.claims.unbind(&req.claim_id);
                }
                tracing::info!(job = %id, reason = %v.reason, "job evicted");
                self.drop_claim(&req.claim_id).await;
            }
            Some(ex::job_event_request::Event::StartFailed(f)) => {
                self.hold_bound(
                    &req.claim_id,
                    id,
                    &f.hold_reason,
                    f.hold_reason_code as i64,
                    f.hold_reason_subcode as i64,
                );
                self.job_done(&req.claim_id);
            }
            None => {
                return ex::JobEventReply {
                    ok: false,
                    error: "the event names nothing that happened".into(),
                };
            }
        }
        ok
    }

    /// Stops the processes of `jobs` (rm, hold, vacate, periodic policy): deactivates their
    /// claims; the Evicted event that follows finishes the change. A job whose claim cannot be
    /// reached, or that has no claim yet, is treated as evicted at once.
    pub async fn stop(self: &Arc<Self>, jobs: Vec<JobId>, fast: bool) {
        for id in jobs {
            let claim = self.lock().claims.of_job(id).cloned();
            let Some(c) = claim else {
                // Still being claimed: the activation will find it no longer idle.
                let mut st = self.lock();
                let ch = st.queue.evicted(id, 0.0, now_secs());
                commit_or_log(self, &mut st, &ch, "stop");
                continue;
            };
            let req = ex::DeactivateRequest {
                slot: c.slot.clone(),
                claim_id: c.claim_id.clone(),
                fast,
            };
            let r = execute_call(&c.startd_addr, |mut c| async move {
                c.deactivate_claim(req).await
            })
            .await;
            match r {
                Ok(r) if r.ok => tracing::info!(job = %id, slot = %c.slot, "stopping the job"),
                other => {
                    let why = match other {
                        Ok(r) => r.error,
                        Err(e) => e,
                    };
                    tracing::info!(job = %id, slot = %c.slot, error = %why, "cannot deactivate; the job is taken as stopped");
                    self.drop_claim(&c.claim_id).await;
                }
            }
        }
    }

    /// Ends the runs this access point started before it restarted. It cannot follow them
    /// (their events went to the process that is gone, and it has no claim for them), so, as
    /// HTCondor's schedd does with a job it cannot reconnect to, it gives them up: each
    /// claim is released at its startd (the job gets its `KillSig` and vacate time), and once
    /// the startd no longer knows the claim the job may run again at once rather than after
    /// its lease. A startd that cannot be reached leaves the job waiting out its lease, so a
    /// job never runs twice at once.
    pub async fn end_orphaned_runs(self: &Arc<Self>) {
        for (id, on) in self.take_orphans() {
            let me = self.clone();
            tokio::spawn(async move { me.end_orphaned_run(id, on).await });
        }
    }

    async fn end_orphaned_run(self: &Arc<Self>, id: JobId, on: RunningOn) {
        let unreachable = |e: String| {
            tracing::warn!(job = %id, slot = %on.slot, error = %e, "run from before the restart: startd unreachable; the job waits out its lease");
        };
        match release_at(&on.startd_addr, &on.slot, &on.claim_id).await {
            Ok(r) if r.ok => {
                tracing::info!(job = %id, slot = %on.slot, "run from before the restart released at its startd")
            }
            Ok(r) => {
                tracing::info!(job = %id, slot = %on.slot, error = %r.error, "run from before the restart: the claim is gone already")
            }
            Err(e) => return unreachable(e),
        }
        // Until the startd no longer knows the claim: the old run is over.
        let lease = self.job_ad(id).map_or(self.alive_lease(), |ad| {
            super::claims::job_lease(&ad, self.alive_lease())
        });
        let give_up = now_secs().saturating_add(lease);
        loop {
            match keep_alive_at(&on.startd_addr, &on.slot, &on.claim_id).await {
                Ok(r) if !r.ok => break,
                // This keep-alive renewed the old claim's lease at the node: the job waits
                // at least that long again, should the run outlast this loop.
                Ok(_) => {
                    let until = now_secs().saturating_add(lease);
                    self.lock().claims.hold_back([id], until);
                }
                Err(e) => return unreachable(e),
            }
            if now_secs() >= give_up {
                return;
            }
            tokio::time::sleep(ORPHAN_POLL).await;
        }
        self.lock().claims.stop_holding_back(id);
        self.changed.notify_one();
        tracing::info!(job = %id, slot = %on.slot, "run from before the restart is over; the job may run again");
    }

    /// The lease of a claim whose job has no `JobLeaseDuration`: [`MAX_MISSED_ALIVES`]
    /// keep-alive intervals, in seconds.
    pub fn alive_lease(&self) -> i64 {
        (self.settings.alive_interval * MAX_MISSED_ALIVES).as_secs() as i64
    }

    /// Renews every claim once; a claim its startd no longer knows is dropped (its job idle
    /// again), and so is one that [`MAX_MISSED_ALIVES`] keep-alives in a row did not reach
    /// once its job's lease has passed since the startd was last heard
    /// ([`super::claims::Claims::may_give_up`]).
    pub async fn keep_alive_once(self: &Arc<Self>) {
        let claims: Vec<Claim> = self.lock().claims.all().cloned().collect();
        for c in claims {
            match keep_alive_at(&c.startd_addr, &c.slot, &c.claim_id).await {
                Ok(r) if r.ok => {
                    self.lock().claims.alive(&c.claim_id, true, now_secs());
                }
                Ok(r) => {
                    tracing::warn!(slot = %c.slot, error = %r.error, "claim lost");
                    self.drop_claim(&c.claim_id).await;
                }
                Err(e) => {
                    let (give_up, missed) = {
                        let mut st = self.lock();
                        let now = now_secs();
                        let missed = st.claims.alive(&c.claim_id, false, now);
                        let give_up = st.claims.may_give_up(
                            &c.claim_id,
                            &st.queue,
                            now,
                            MAX_MISSED_ALIVES,
                            self.alive_lease(),
                        );
                        (give_up, missed)
                    };
                    if give_up {
                        tracing::warn!(slot = %c.slot, error = %e, missed, "startd unreachable and the job lease passed; the claim is given up");
                        self.drop_claim(&c.claim_id).await;
                    } else {
                        tracing::warn!(slot = %c.slot, error = %e, missed, "keep-alive failed; trying again next interval");
                    }
                }
            }
        }
    }

    /// Runs the periodic policy once and stops the jobs it holds or removes; then the
    /// deferral and crontab pass ([`queue::Queue::deferrals`]).
    pub async fn periodic_once(self: &Arc<Self>) {
        let stop = {
            let mut st = self.lock();
            let now = now_secs();
            let (changes, stop) = {
                let claims = &st.claims;
                st.queue.periodic(&|id| claims.busy(id), now)
            };
            commit_or_log(self, &mut st, &changes, "periodic policy");
            let deferrals = {
                let claims = &st.claims;
                st.queue
                    .deferrals(&|id| claims.busy(id), false, now, &chrono::Local)
            };
            commit_or_log(self, &mut st, &deferrals, "deferral and crontab schedules");
            stop
        };
        if !stop.is_empty() {
            self.stop(stop, false).await;
        }
    }
}

/// The leader's certificate and signature of one grant batch (sent once per
/// [`pb::GrantBatch`], not in each grant), taken out of the batch without a copy and shared
/// by the batch's claims: each claim's [`pb::SignedGrant`] gets them back only when it is sent
/// ([`BatchSeal::complete`]), so the `DeliverGrants` answer the leader waits for copies
/// nothing per grant.
#[derive(Debug, Default)]
pub struct BatchSeal {
    leader_cert: Vec<u8>,
    signature: Vec<u8>,
}

impl BatchSeal {
    /// Takes the certificate and signature out of `batch`.
    pub fn take(batch: &mut pb::GrantBatch) -> Arc<BatchSeal> {
        Arc::new(BatchSeal {
            leader_cert: std::mem::take(&mut batch.leader_cert),
            signature: std::mem::take(&mut batch.signature),
        })
    }

    /// A grant's signed part as the execute node verifies it: the batch's certificate and
    /// signature put back where the grant left them out (a grant that carries its own keeps
    /// them). `None` stays `None`: an unsigned grant.
    pub fn complete(&self, signed: Option<pb::SignedGrant>) -> Option<pb::SignedGrant> {
        signed.map(|mut s| {
            if s.leader_cert.is_empty() {
                s.leader_cert = self.leader_cert.clone();
            }
            if s.signature.is_empty() {
                s.signature = self.signature.clone();
            }
            s
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_seal_puts_the_certificate_and_signature_back_into_each_claim() {
        let mut batch = pb::GrantBatch {
            leader_cert: b"cert".to_vec(),
            signature: b"sig".to_vec(),
            ..Default::default()
        };
        let seal = BatchSeal::take(&mut batch);
        // Taken, not copied.
        assert!(batch.leader_cert.is_empty() && batch.signature.is_empty());
        let bare = pb::SignedGrant {
            payload: b"p".to_vec(),
            proof: vec![vec![1; 33]],
            ..Default::default()
        };
        let done = seal.complete(Some(bare.clone())).unwrap();
        assert_eq!(
            (done.leader_cert, done.signature),
            (b"cert".to_vec(), b"sig".to_vec())
        );
        assert_eq!((&done.payload, &done.proof), (&bare.payload, &bare.proof));
        // A grant carrying its own keeps them; an unsigned grant stays unsigned.
        let own = pb::SignedGrant {
            leader_cert: b"own".to_vec(),
            signature: b"mine".to_vec(),
            ..bare
        };
        assert_eq!(seal.complete(Some(own.clone())), Some(own));
        assert_eq!(seal.complete(None), None);
    }
}

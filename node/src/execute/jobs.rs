//! Running the jobs of activated claims: the starter's side of HTCondor's
//! `ACTIVATE_CLAIM` (`src/condor_startd.V6/command.cpp` `activate_claim`, then
//! `src/condor_starter.V6.1/jic_shadow.cpp`): the sandbox and the input files, the process,
//! its exit, and the job's events to its access point's `Shadow` service (started, exited with
//! its outputs and usage, evicted, failed to start), each sent in order and retried until the
//! access point acknowledges it, as the starter retries its shadow.
use super::metrics::{self, JobCount};
use super::run::{unix_now, Node};
use super::slots::JobEnd;
use crate::starter::cpu_load::LoadMeter;
use crate::starter::{
    self, ExitOutcome, ExitReport, JobDescription, JobGuard, JobProcess, MemoryLimits, StartError,
    Starter, StarterConfig,
};
use aerie_proto::execute::{self as xpb, job_event_request::Event as Ev};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How often the node renews the job lease of its jobs' guards
/// ([`crate::starter::guard`]).
pub const GUARD_HEARTBEAT: Duration = Duration::from_secs(1);

/// How long a job event is retried before it is given up (the access point is gone).
const EVENT_RETRY_FOR: Duration = Duration::from_secs(3600);
/// The longest pause between two tries of a job event.
const EVENT_BACKOFF_MAX: Duration = Duration::from_secs(10);

/// One running job.
pub struct JobEntry {
    /// The slot it runs on.
    pub slot: String,
    /// The claim it runs under.
    pub claim_id: String,
    /// CLUSTER.PROC.
    pub job: String,
    running: starter::RunningJob,
    /// The claim's lease, which the job's guard keeps too.
    lease: Duration,
    /// When the access point last renewed the claim (activation or keep-alive).
    last_alive: Mutex<Instant>,
    hard_kill_at: Mutex<Option<Instant>>,
    hard_killed: AtomicBool,
    events: JobEvents,
    load: Mutex<LoadMeter>,
}

impl JobEntry {
    /// Tells the job's guard how much of the claim's lease is left at `now`: the guard kills
    /// the job when that much time passes without another heartbeat, so no later than the
    /// access point, which counts its lease from a later instant (the keep-alive's answer),
    /// gives the claim up.
    pub fn heartbeat(&self, now: Instant) {
        let last = *self.last_alive.lock().unwrap_or_else(|p| p.into_inner());
        let left = (last + self.lease).saturating_duration_since(now);
        self.running.process().heartbeat(left);
    }

    /// Whether the job's guard killed it because the claim's lease passed (the node killed
    /// it not, it died of SIGKILL, and at `now` no lease is left): an eviction, not an exit.
    fn killed_by_its_guard(&self, report: &ExitReport, now: Instant) -> bool {
        let last = *self.last_alive.lock().unwrap_or_else(|p| p.into_inner());
        self.running.process().guarded()
            && !self.hard_killed.load(Ordering::SeqCst)
            && lease_kill(report.outcome, last + self.lease, now)
    }

    /// The access point renewed the claim at `at`.
    pub fn renewed(&self, at: Instant) {
        let mut last = self.last_alive.lock().unwrap_or_else(|p| p.into_inner());
        *last = (*last).max(at);
    }

    /// The job's CPU load now (its process group's CPU time in `cpu_by_group`, averaged over
    /// a minute: [`LoadMeter`]), sampled at `at` seconds since the node started; `None` once
    /// no process of the job is left.
    pub fn cpu_load(&self, at: f64, cpu_by_group: &HashMap<u32, f64>) -> Option<f64> {
        let cpu = *cpu_by_group.get(&self.running.process().pid())?;
        let mut m = self.load.lock().unwrap_or_else(|p| p.into_inner());
        Some(m.sample(at, cpu))
    }

    /// Signals the job with `f` (suspend, resume), logging a failure.
    pub fn signal(&self, what: &str, f: impl FnOnce(&JobProcess) -> std::io::Result<bool>) {
        if let Err(e) = f(self.running.process()) {
            tracing::warn!(slot = %self.slot, job = %self.job, error = %e, "cannot {what} the job");
            metrics::starter_error("signal");
        }
    }

    /// Sends the job its `KillSig`; SIGKILL follows `vacate_seconds` after `now`.
    pub fn soft_kill(&self, now: Instant, vacate_seconds: i64) {
        tracing::info!(slot = %self.slot, job = %self.job, claim = %self.claim_id, vacate_seconds, "vacating the job");
        self.signal("soft-kill", |p| p.soft_kill());
        let mut at = self.hard_kill_at.lock().unwrap_or_else(|p| p.into_inner());
        let t = now + Duration::from_secs(vacate_seconds.max(0) as u64);
        *at = Some(at.map_or(t, |a| a.min(t)));
    }

    /// SIGKILLs the job.
    pub fn hard_kill(&self) {
        if !self.hard_killed.swap(true, Ordering::SeqCst) {
            tracing::info!(slot = %self.slot, job = %self.job, claim = %self.claim_id, "killing the job");
        }
        self.signal("kill", |p| p.hard_kill());
    }

    /// Whether the vacate time has passed and the job was not yet killed.
    pub fn hard_kill_due(&self, now: Instant) -> bool {
        let at = *self.hard_kill_at.lock().unwrap_or_else(|p| p.into_inner());
        !self.hard_killed.load(Ordering::SeqCst)
            && at.is_some_and(|t| now >= t)
            && self.running.process().try_exit().is_none()
    }
}

/// Whether a guarded job that the node did not kill ended as its guard ends it when the
/// claim's lease passes (at `lease_end`): by SIGKILL, at or after `lease_end`.
fn lease_kill(outcome: ExitOutcome, lease_end: Instant, now: Instant) -> bool {
    matches!(outcome, ExitOutcome::Signaled { signal, .. } if signal == libc::SIGKILL)
        && now >= lease_end
}

fn event(req: &xpb::ActivateRequest, ev: Ev) -> xpb::JobEventRequest {
    xpb::JobEventRequest {
        job: req.job.clone(),
        slot: req.slot.clone(),
        claim_id: req.claim_id.clone(),
        time: unix_now(),
        event: Some(ev),
    }
}

fn failed(error: String) -> xpb::ActivateReply {
    xpb::ActivateReply {
        ok: false,
        error,
        ..Default::default()
    }
}

fn usage(r: &ExitReport) -> xpb::Usage {
    xpb::Usage {
        wall_seconds: r.wall_time.as_secs_f64(),
        user_cpu_seconds: r.user_cpu.as_secs_f64(),
        sys_cpu_seconds: r.system_cpu.as_secs_f64(),
        peak_memory_mb: r.peak_memory_bytes.unwrap_or(0) as f64 / (1024.0 * 1024.0),
    }
}

impl Node {
    /// Sends every running job's guard the claim lease left at `now` ([`JobEntry::heartbeat`]).
    pub fn heartbeat_jobs(&self, now: Instant) {
        let jobs: Vec<Arc<JobEntry>> = self
            .jobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        for j in jobs {
            j.heartbeat(now);
        }
    }

    /// A keep-alive renewed claim `claim_id` at `at`: its job's guard hears of it with the
    /// next heartbeat.
    pub fn claim_renewed(&self, claim_id: &str, at: Instant) {
        let job = self
            .jobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(claim_id)
            .cloned();
        if let Some(j) = job {
            j.renewed(at);
        }
    }

    /// `Execute.ActivateClaim`: the policy takes the job, then the starter runs it. A job that
    /// cannot start is answered with its hold reason and reported as `StartFailed`.
    pub async fn activate(self: &Arc<Self>, req: xpb::ActivateRequest) -> xpb::ActivateReply {
        if req.shadow_addr.trim().is_empty() {
            return failed("the activation names no shadow_addr for the job's events".into());
        }
        let ad = match classad::parse_ad(&req.job_ad) {
            Ok(a) => Arc::new(a),
            Err(e) => {
                let reason = format!("Error from {}: the job ad does not parse: {e}", req.slot);
                return xpb::ActivateReply {
                    ok: false,
                    error: reason.clone(),
                    hold_reason: reason,
                    hold_reason_code: starter::error::HOLD_FAILED_TO_CREATE_PROCESS as i32,
                    hold_reason_subcode: 0,
                };
            }
        };
        let now = unix_now();
        if let Err(e) = self.with_mgr(|m| m.activate(&req.slot, &req.claim_id, ad.clone(), now)) {
            tracing::info!(slot = %req.slot, job = %req.job, claim = %req.claim_id, error = %e, "activation refused");
            return failed(e);
        }
        let events = JobEvents::start(
            req.shadow_addr.clone(),
            req.job.clone(),
            self.events_in_flight.clone(),
        );
        let activated = Instant::now();
        // The guard's job lease is the claim's: past it without a keep-alive the node
        // evicts the job itself, and the access point runs it elsewhere.
        let lease = self
            .with_mgr(|m| m.claim_lease(&req.slot, &req.claim_id))
            .map_or(1, |(length, _)| length.max(1));
        let lease = Duration::from_secs(lease as u64);
        match self.start(&req, &ad, lease) {
            Ok(running) => {
                let pid = running.process().pid();
                tracing::info!(slot = %req.slot, job = %req.job, claim = %req.claim_id, pid, "job started");
                metrics::job(JobCount::Started);
                events.send(event(&req, Ev::Started(true)));
                let entry = Arc::new(JobEntry {
                    slot: req.slot.clone(),
                    claim_id: req.claim_id.clone(),
                    job: req.job.clone(),
                    running,
                    lease,
                    last_alive: Mutex::new(activated),
                    hard_kill_at: Mutex::new(None),
                    hard_killed: AtomicBool::new(false),
                    load: Mutex::new(LoadMeter::default()),
                    events,
                });
                self.jobs
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(req.claim_id.clone(), entry.clone());
                tokio::spawn(self.clone().watch(entry));
                xpb::ActivateReply {
                    ok: true,
                    ..Default::default()
                }
            }
            Err(e) => {
                let hold = format!("Error from {}: {e}", req.slot);
                tracing::warn!(slot = %req.slot, job = %req.job, claim = %req.claim_id, reason = %hold, "job could not start");
                metrics::job(JobCount::Failed);
                metrics::starter_error("start");
                self.with_mgr(|m| m.start_failed(&req.slot, &req.claim_id, unix_now()));
                let (code, sub) = (e.hold_reason_code() as i32, e.hold_reason_subcode());
                events.send(event(
                    &req,
                    Ev::StartFailed(xpb::StartFailed {
                        hold_reason: hold.clone(),
                        hold_reason_code: code,
                        hold_reason_subcode: sub,
                    }),
                ));
                xpb::ActivateReply {
                    ok: false,
                    error: hold.clone(),
                    hold_reason: hold,
                    hold_reason_code: code,
                    hold_reason_subcode: sub,
                }
            }
        }
    }

    /// Makes the sandbox, writes the input files and starts the process.
    fn start(
        &self,
        req: &xpb::ActivateRequest,
        ad: &classad::ClassAd,
        lease: Duration,
    ) -> Result<starter::RunningJob, StartError> {
        let desc = JobDescription::from_ad(ad)?;
        let starter = Starter::new(StarterConfig {
            execute_dir: self.starter.execute_dir.clone(),
            run_as: self.starter.run_as(&req.slot),
            limits: self.starter.limits.clone(),
            job_guard: self
                .starter
                .job_guard
                .clone()
                .map(|program| JobGuard { program, lease }),
        });
        let local = req.slot.split('@').next().unwrap_or("slot");
        let n = self.seq.fetch_add(1, Ordering::SeqCst);
        // The slot's memory as it is now: a dynamic slot has just been carved for this job.
        let memory = match self.with_mgr(|m| m.slot_ad(&req.slot)) {
            Ok(slot) => self.starter.memory.for_job(&slot, ad),
            Err(e) => {
                tracing::warn!(slot = %req.slot, error = %e, "no slot ad; the job's memory is not limited");
                MemoryLimits::default()
            }
        };
        let mut prepared = starter.prepare(&format!("{local}_{n}"), desc, memory)?;
        for f in &req.inputs {
            if f.executable {
                prepared.put_executable(&f.data)?;
            } else if f.directory {
                prepared.put_directory(&f.name)?;
            } else {
                prepared.put_input(&f.name, &f.data)?;
            }
        }
        prepared.start()
    }

    /// Waits for the job's exit, tells the policy, reports the job's end to its access point
    /// and removes its sandbox.
    async fn watch(self: Arc<Self>, entry: Arc<JobEntry>) {
        let report = entry.running.process().wait().await;
        let mut end = self.with_mgr(|m| m.job_exited(&entry.slot, &entry.claim_id, unix_now()));
        if entry.killed_by_its_guard(&report, Instant::now()) {
            // The policy evicts the claim at its next evaluation; the job is gone already.
            end = JobEnd::Evicted(
                super::slots::eviction_reason(crate::policy::Cause::LeaseExpired).into(),
            );
        }
        self.jobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&entry.claim_id);
        let ev = match end {
            JobEnd::Completed => {
                metrics::job(JobCount::Completed);
                let (exit_code, exit_signal) = match report.outcome {
                    ExitOutcome::Exited(c) => (Some(c), None),
                    ExitOutcome::Signaled { signal, .. } => (None, Some(signal)),
                };
                let (outputs, output_error) = match entry.running.collect_outputs() {
                    Ok(files) => (
                        files
                            .into_iter()
                            .map(|f| xpb::File {
                                name: f.name,
                                data: f.bytes,
                                executable: false,
                                directory: f.directory,
                            })
                            .collect(),
                        String::new(),
                    ),
                    Err(e) => {
                        metrics::starter_error("output");
                        (Vec::new(), format!("Error from {}: {e}", entry.slot))
                    }
                };
                tracing::info!(slot = %entry.slot, job = %entry.job, claim = %entry.claim_id, ?exit_code, ?exit_signal, outputs = outputs.len(), "job exited");
                Ev::Exited(xpb::Exited {
                    exit_code,
                    exit_signal,
                    usage: Some(usage(&report)),
                    outputs,
                    output_error,
                })
            }
            JobEnd::Evicted(reason) => {
                let killed = entry.hard_killed.load(Ordering::SeqCst);
                metrics::job(if killed {
                    JobCount::Killed
                } else {
                    JobCount::Vacated
                });
                tracing::info!(slot = %entry.slot, job = %entry.job, claim = %entry.claim_id, reason = %reason, killed, "job evicted");
                Ev::Evicted(xpb::Evicted {
                    reason,
                    usage: Some(usage(&report)),
                })
            }
        };
        entry.events.send(xpb::JobEventRequest {
            job: entry.job.clone(),
            slot: entry.slot.clone(),
            claim_id: entry.claim_id.clone(),
            time: unix_now(),
            event: Some(ev),
        });
        match Arc::try_unwrap(entry) {
            Ok(e) => {
                let slot = e.slot.clone();
                if let Err(err) = e.running.remove_sandbox() {
                    tracing::warn!(slot = %slot, error = %err, "cannot remove the job's sandbox");
                    metrics::starter_error("sandbox");
                }
            }
            Err(e) => {
                tracing::warn!(slot = %e.slot, job = %e.job, "job still referenced; its sandbox is left")
            }
        }
    }
}

/// A queue of one job's events to the `Shadow` at its access point, sent in order, each
/// retried until acknowledged (or for [`EVENT_RETRY_FOR`]); `in_flight` counts the node's
/// events queued and not yet settled, so a node shutting down can wait for them.
struct JobEvents {
    tx: mpsc::UnboundedSender<xpb::JobEventRequest>,
    in_flight: Arc<AtomicUsize>,
}

impl JobEvents {
    /// The queue to the `Shadow` at `addr` for `job`, and its sending task.
    fn start(addr: String, job: String, in_flight: Arc<AtomicUsize>) -> JobEvents {
        let (tx, mut rx) = mpsc::unbounded_channel::<xpb::JobEventRequest>();
        let count = in_flight.clone();
        tokio::spawn(async move {
            while let Some(ev) = rx.recv().await {
                deliver(&addr, &job, ev).await;
                count.fetch_sub(1, Ordering::SeqCst);
            }
        });
        JobEvents { tx, in_flight }
    }

    /// Queues `ev`.
    fn send(&self, ev: xpb::JobEventRequest) {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        if self.tx.send(ev).is_err() {
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

async fn deliver(addr: &str, job: &str, ev: xpb::JobEventRequest) {
    let began = Instant::now();
    let mut pause = Duration::from_millis(250);
    loop {
        match send_once(addr, ev.clone()).await {
            Ok(()) => {
                metrics::job_event("delivered");
                return;
            }
            Err(e) => {
                metrics::job_event("retried");
                if began.elapsed() > EVENT_RETRY_FOR {
                    tracing::error!(shadow = %addr, job = %job, error = %e, "job event given up");
                    return;
                }
                tracing::warn!(shadow = %addr, job = %job, error = %e, "job event not acknowledged; retrying");
            }
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(EVENT_BACKOFF_MAX);
    }
}

async fn send_once(addr: &str, ev: xpb::JobEventRequest) -> Result<(), String> {
    let ep = aerie_security::transport::endpoint(
        crate::sim::bare_addr(addr),
        aerie_security::Role::AccessPoint,
    )
    .map_err(|e| format!("shadow {addr}: {e}"))?
    .connect_timeout(Duration::from_secs(2))
    .timeout(Duration::from_secs(10));
    let ch = ep
        .connect()
        .await
        .map_err(|e| format!("cannot reach {addr}: {e}"))?;
    let reply = xpb::shadow_client::ShadowClient::new(ch)
        .max_encoding_message_size(super::service::MAX_TRANSFER_MESSAGE)
        .job_event(ev)
        .await
        .map_err(|s| s.message().to_string())?
        .into_inner();
    if reply.ok {
        Ok(())
    } else {
        Err(format!(
            "the access point refused the event: {}",
            reply.error
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sigkill_once_the_claim_lease_passed_is_the_guard_s_eviction() {
        let t0 = Instant::now();
        let end = t0 + Duration::from_secs(6);
        let kill = ExitOutcome::Signaled {
            signal: libc::SIGKILL,
            core_dumped: false,
        };
        assert!(lease_kill(kill, end, end));
        assert!(lease_kill(kill, end, end + Duration::from_secs(1)));
        // Before the lease passed, a SIGKILL came from elsewhere (the job's own, the OOM
        // killer): the job's exit.
        assert!(!lease_kill(kill, end, t0));
        // Any other end is the job's own.
        let term = ExitOutcome::Signaled {
            signal: libc::SIGTERM,
            core_dumped: false,
        };
        assert!(!lease_kill(term, end, end));
        assert!(!lease_kill(ExitOutcome::Exited(0), end, end));
    }
}

//! A claim on a slot and the job running under it, with the clocks the policy reads: when the
//! claim began (`CLAIM_WORKLIFE`), its lease, when the job started and how long it has been
//! suspended (the retirement clock runs on the job's run time minus suspended time: HTCondor's
//! `Claim::getJobTotalRunTime` in `src/condor_startd.V6/claim.cpp`).
use classad::ClassAd;
use std::sync::Arc;

/// A claim: the current one, or a preempting one waiting for the current one to go.
#[derive(Clone, Debug)]
pub struct Claim {
    /// The claim id the access point presents (opaque here; the node checks capabilities).
    pub id: String,
    /// The request ad the claim was made with (TARGET for START and RANK while no job runs).
    pub request: Arc<ClassAd>,
    /// The slot's RANK of the request when it claimed (`CurrentRank`, or `PreemptingRank` for
    /// a preempting claim).
    pub rank: f64,
    /// When the slot entered Claimed with this claim (the claim's age for CLAIM_WORKLIFE).
    pub claimed_at: i64,
    /// How long the lease lasts after each keep-alive.
    pub lease_duration: i64,
    /// When the lease runs out unless a keep-alive arrives.
    pub lease_expires_at: i64,
    /// Jobs started on the claim.
    pub activations: u32,
    /// The running job, if any.
    pub job: Option<Job>,
    /// PREEMPT became true for this claim (irreversible retirement; WANT_VACATE is consulted).
    pub preempt_was_true: bool,
    /// The claim may leave retirement if what caused it goes away (false after PREEMPT,
    /// condor_vacate or shutdown: HTCondor's `Claim::disallowUnretire`).
    pub may_unretire: bool,
    /// A peaceful shutdown: retirement is unlimited (unless MaxJobRetirementTime is -1).
    pub retire_peacefully: bool,
    /// Taken by a drained slot under a drain's START expression (`AcceptedWhileDraining`):
    /// it lasts only as long as the jobs that were there before the drain.
    pub accepted_while_draining: bool,
}

impl Claim {
    /// A claim requested at `now` with `request`, ranked `rank`, holding a lease of
    /// `lease_duration` seconds.
    pub fn new(id: &str, request: Arc<ClassAd>, rank: f64, lease_duration: i64, now: i64) -> Claim {
        Claim {
            id: id.to_string(),
            request,
            rank,
            claimed_at: now,
            lease_duration,
            lease_expires_at: now.saturating_add(lease_duration),
            activations: 0,
            job: None,
            preempt_was_true: false,
            may_unretire: true,
            retire_peacefully: false,
            accepted_while_draining: false,
        }
    }

    /// The ad policy expressions see as TARGET: the job's while one runs, else the request's.
    pub fn target(&self) -> &ClassAd {
        match &self.job {
            Some(j) => &j.ad,
            None => &self.request,
        }
    }

    /// Renews the lease at `now` (a keep-alive).
    pub fn renew(&mut self, now: i64) {
        self.lease_expires_at = now.saturating_add(self.lease_duration);
    }
}

/// The job of an active claim.
#[derive(Clone, Debug)]
pub struct Job {
    /// The job ad the access point activated the claim with.
    pub ad: Arc<ClassAd>,
    /// When the job started (`JobStart`).
    pub started_at: i64,
    /// Seconds spent suspended in suspensions that have ended.
    pub suspended_total: i64,
    /// When the current suspension began.
    pub suspended_since: Option<i64>,
    /// `MachineMaxVacateTime` as evaluated when the job started (HTCondor pledges it at
    /// activation: `Claim::beginActivation`).
    pub pledged_max_vacate_time: i64,
}

impl Job {
    /// Seconds the job has run by `now`, suspensions not counted.
    pub fn run_time(&self, now: i64) -> i64 {
        let suspended_now = self.suspended_since.map_or(0, |s| now.saturating_sub(s));
        (now - self.started_at - self.suspended_total - suspended_now).max(0)
    }

    /// The job's soft-kill signal (`KillSig`, SIGTERM when unset).
    pub fn kill_sig(&self) -> String {
        match self.ad.eval_attr("KillSig") {
            classad::Value::Str(s) => s.to_string(),
            classad::Value::Int(n) => n.to_string(),
            _ => "SIGTERM".to_string(),
        }
    }
}

/// The lease a claim request gets: the request's `JobLeaseDuration` when positive, otherwise
/// `MAX_CLAIM_ALIVES_MISSED` keep-alive intervals (seed 001 §3.5.7, HTCondor's
/// `Claim::loadRequestInfo`).
pub fn lease_duration(request: &ClassAd, alive_interval: i64, alives_missed: i64) -> i64 {
    match request.eval_attr("JobLeaseDuration").as_int() {
        Some(d) if d > 0 => d,
        _ => alives_missed.saturating_mul(alive_interval.max(1)),
    }
}

//! Prometheus metrics of an execute node (`metrics` facade, exported over HTTP at `/metrics`
//! when `--metrics-listen` is given, as `aerie-cm` does it).
//!
//! Names (all prefixed `aerie_node_`): `slots{state,activity}` (a gauge per HTCondor state and
//! activity, zero included), `jobs_started_total`, `jobs_completed_total` (exited by
//! themselves, whatever their exit code), `jobs_failed_total` (could not start),
//! `jobs_vacated_total` (left after their `KillSig`), `jobs_killed_total` (SIGKILLed),
//! `claim_leases_expired_total`, `starter_errors_total{kind}` (a start failure's hold code or
//! an output transfer failure), `claims_total{outcome}` (claim requests accepted or refused),
//! `job_events_total{outcome}` (events to access points delivered or retried).
use crate::policy::{Activity, State};
use anyhow::Context;
use std::collections::BTreeMap;
use std::net::SocketAddr;

/// Starts the HTTP exporter on `addr`.
pub fn install(addr: SocketAddr) -> anyhow::Result<()> {
    metrics_exporter_prometheus::PrometheusBuilder::new()
        .with_http_listener(addr)
        .install()
        .with_context(|| format!("cannot start the metrics listener on {addr} (--metrics-listen)"))
}

const STATES: [State; 6] = [
    State::Owner,
    State::Unclaimed,
    State::Matched,
    State::Claimed,
    State::Preempting,
    State::Drained,
];

const ACTIVITIES: [Activity; 6] = [
    Activity::Idle,
    Activity::Busy,
    Activity::Suspended,
    Activity::Retiring,
    Activity::Vacating,
    Activity::Killing,
];

/// Sets the slot gauges from the counts by (`State`, `Activity`); absent pairs are 0.
pub fn set_slots(counts: &BTreeMap<(&'static str, &'static str), usize>) {
    for s in STATES {
        for a in ACTIVITIES {
            let n = counts.get(&(s.as_str(), a.as_str())).copied().unwrap_or(0);
            metrics::gauge!("aerie_node_slots", "state" => s.as_str(), "activity" => a.as_str())
                .set(n as f64);
        }
    }
}

/// What happened to a job, for the job counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobCount {
    /// Its process started.
    Started,
    /// It exited by itself.
    Completed,
    /// It could not start.
    Failed,
    /// It left after its soft-kill signal.
    Vacated,
    /// It was hard-killed.
    Killed,
}

/// Counts one job event.
pub fn job(what: JobCount) {
    // One macro call a name, so ops/check/check.py reads every metric's name and labels here.
    let counter = match what {
        JobCount::Started => metrics::counter!("aerie_node_jobs_started_total"),
        JobCount::Completed => metrics::counter!("aerie_node_jobs_completed_total"),
        JobCount::Failed => metrics::counter!("aerie_node_jobs_failed_total"),
        JobCount::Vacated => metrics::counter!("aerie_node_jobs_vacated_total"),
        JobCount::Killed => metrics::counter!("aerie_node_jobs_killed_total"),
    };
    counter.increment(1);
}

/// A claim's lease passed.
pub fn lease_expired() {
    metrics::counter!("aerie_node_claim_leases_expired_total").increment(1);
}

/// The starter failed (`kind`: what failed, e.g. `start`, `output`, `sandbox`).
pub fn starter_error(kind: &'static str) {
    metrics::counter!("aerie_node_starter_errors_total", "kind" => kind).increment(1);
}

/// A claim request was answered.
pub fn claim(ok: bool) {
    let outcome = if ok { "accepted" } else { "refused" };
    metrics::counter!("aerie_node_claims_total", "outcome" => outcome).increment(1);
}

/// A job event was sent to its access point (`delivered`), or must be sent again (`retried`).
pub fn job_event(outcome: &'static str) {
    metrics::counter!("aerie_node_job_events_total", "outcome" => outcome).increment(1);
}

//! The access point's Prometheus metrics (`--metrics-listen`, `/metrics`), all prefixed
//! `aerie_ap_`: `jobs{status}` (queued jobs by status), `submits_total` (jobs queued),
//! `job_starts_total`, `job_completions_total`, `job_holds_total`, `claims` (claims held),
//! `claims_reused_total` (a claim taking another job), `claims_released_total`.
use super::job::Status;
use anyhow::Context;
use std::collections::BTreeMap;
use std::net::SocketAddr;

/// Starts the HTTP exporter on `addr`.
pub fn install(addr: SocketAddr) -> anyhow::Result<()> {
    metrics_exporter_prometheus::PrometheusBuilder::new()
        .with_http_listener(addr)
        .install()
        .with_context(|| format!("cannot start the metrics listener on {addr}"))
}

/// Jobs queued by status.
pub fn set_jobs(counts: &BTreeMap<Status, u64>) {
    for s in Status::ALL {
        let n = counts.get(&s).copied().unwrap_or(0);
        metrics::gauge!("aerie_ap_jobs", "status" => s.name()).set(n as f64);
    }
}

/// `n` jobs were queued.
pub fn submitted(n: usize) {
    metrics::counter!("aerie_ap_submits_total").increment(n as u64);
}

/// A job's process started.
pub fn job_started() {
    metrics::counter!("aerie_ap_job_starts_total").increment(1);
}

/// A job completed.
pub fn job_completed() {
    metrics::counter!("aerie_ap_job_completions_total").increment(1);
}

/// A job was held.
pub fn job_held() {
    metrics::counter!("aerie_ap_job_holds_total").increment(1);
}

/// Claims held now.
pub fn set_claims(n: usize) {
    metrics::gauge!("aerie_ap_claims").set(n as f64);
}

/// A claim took another job.
pub fn claim_reused() {
    metrics::counter!("aerie_ap_claims_reused_total").increment(1);
}

/// A claim was released (given back or lost).
pub fn claim_released() {
    metrics::counter!("aerie_ap_claims_released_total").increment(1);
}

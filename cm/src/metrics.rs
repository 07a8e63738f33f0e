//! Prometheus metrics of a CM (`metrics` facade, exported over HTTP at `/metrics`).
//!
//! Names (all prefixed `aerie_`): `raft_has_leader`, `raft_term`, `raft_leader_changes_total`,
//! `raft_last_log_index`, `raft_commit_index`, `raft_applied_index`, `raft_is_leader`,
//! `raft_append_seconds` / `raft_fsync_seconds` (histograms), `raft_appended_entries_total`,
//! `raft_snapshots_built_total`, `raft_snapshots_installed_total`, `raft_snapshot_bytes`,
//! `raft_purged_index`, `raft_follower_lag_entries{follower}`, `admin_requests_total{method,outcome}`,
//! `admin_request_seconds{method}`. The collector adds `collector_ads`, `collector_absent_ads`,
//! `collector_updates_total{outcome}`, `collector_expired_total{to}`,
//! `collector_throttled_total`, `collector_absent_commits_total{command}` and the relay's
//! `collector_relay_sent_total{peer}`, `collector_relay_batches_total{peer}`,
//! `collector_relay_errors_total{peer}`, `collector_relay_dropped_total{peer}`,
//! `collector_relay_received_total{outcome}`, `collector_relay_digests_total{peer}`,
//! `collector_relay_repaired_total{direction}`.
use anyhow::Context;
use std::net::SocketAddr;
use std::time::Duration;

/// Starts the HTTP exporter on `addr`. Histograms get buckets suited to fsync-bound latencies.
pub fn install(addr: SocketAddr) -> anyhow::Result<()> {
    let buckets = [
        0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    ];
    metrics_exporter_prometheus::PrometheusBuilder::new()
        .with_http_listener(addr)
        .set_buckets(&buckets)
        .context("bad histogram buckets")?
        .install()
        .with_context(|| format!("cannot start the metrics listener on {addr}"))?;
    Ok(())
}

/// One synced append of `entries` log entries took `d`.
pub fn record_append(d: Duration, entries: u64) {
    metrics::histogram!("aerie_raft_append_seconds").record(d.as_secs_f64());
    metrics::counter!("aerie_raft_appended_entries_total").increment(entries);
}

/// One fsync took `d`.
pub fn record_fsync(d: Duration) {
    metrics::histogram!("aerie_raft_fsync_seconds").record(d.as_secs_f64());
}

/// The log was purged up to `index`.
pub fn record_purge(index: u64) {
    metrics::gauge!("aerie_raft_purged_index").set(index as f64);
}

/// The state machine applied up to `index`.
pub fn set_applied(index: u64) {
    metrics::gauge!("aerie_raft_applied_index").set(index as f64);
}

/// This CM built a snapshot of `bytes`.
pub fn record_snapshot_built(bytes: usize) {
    metrics::counter!("aerie_raft_snapshots_built_total").increment(1);
    metrics::gauge!("aerie_raft_snapshot_bytes").set(bytes as f64);
}

/// This CM installed a leader's snapshot of `bytes`.
pub fn record_snapshot_installed(bytes: usize) {
    metrics::counter!("aerie_raft_snapshots_installed_total").increment(1);
    metrics::gauge!("aerie_raft_snapshot_bytes").set(bytes as f64);
}

/// One admin request (`write`, `query`...) ended, well or not, after `d`.
pub fn record_admin(method: &'static str, ok: bool, d: Duration) {
    let outcome = if ok { "ok" } else { "error" };
    metrics::counter!("aerie_admin_requests_total", "method" => method, "outcome" => outcome)
        .increment(1);
    metrics::histogram!("aerie_admin_request_seconds", "method" => method).record(d.as_secs_f64());
}

/// Updates the Raft gauges from openraft's metrics; `prev_leader` tracks leader changes.
pub fn observe_raft(m: &crate::raft::Metrics, prev_leader: &mut Option<Option<u64>>) {
    metrics::gauge!("aerie_raft_has_leader").set(if m.current_leader.is_some() {
        1.0
    } else {
        0.0
    });
    metrics::gauge!("aerie_raft_is_leader").set(if m.current_leader == Some(m.id) {
        1.0
    } else {
        0.0
    });
    metrics::gauge!("aerie_raft_term").set(m.current_term as f64);
    metrics::gauge!("aerie_raft_last_log_index").set(m.last_log_index.unwrap_or(0) as f64);
    if let Some(a) = m.last_applied {
        metrics::gauge!("aerie_raft_applied_index").set(a.index as f64);
        // openraft 0.9 does not expose the commit index directly; on every node the applied
        // index trails it by at most one apply batch.
        metrics::gauge!("aerie_raft_commit_index").set(a.index as f64);
    }
    if let Some(p) = m.purged {
        metrics::gauge!("aerie_raft_purged_index").set(p.index as f64);
    }
    if prev_leader.as_ref() != Some(&m.current_leader) {
        if prev_leader.is_some() && m.current_leader.is_some() {
            metrics::counter!("aerie_raft_leader_changes_total").increment(1);
        }
        *prev_leader = Some(m.current_leader);
    }
    if let Some(rep) = &m.replication {
        let last = m.last_log_index.unwrap_or(0);
        for (id, matched) in rep.iter() {
            if *id == m.id {
                continue;
            }
            let lag = last.saturating_sub(matched.map(|l| l.index).unwrap_or(0));
            metrics::gauge!("aerie_raft_follower_lag_entries", "follower" => id.to_string())
                .set(lag as f64);
        }
    }
}

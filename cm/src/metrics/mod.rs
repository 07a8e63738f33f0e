//! Prometheus metrics of a CM (`metrics` facade, exported over HTTP at `/metrics` by
//! `aerie-cm serve --metrics-listen ADDR`).
//!
//! [`catalogue`] names every metric with its type, labels and HELP text (`ops/README.md`
//! shows the same table); this module installs the exporter and records the Raft, proposal,
//! snapshot and admin metrics; [`census`] recomputes the gauges that describe what a CM
//! holds (the replicated ledger and last cycle, the collector's pool) every few seconds;
//! the collector (`crate::collector`) and the leader (`crate::leader::stats`) record their
//! own events.
pub mod catalogue;
pub mod census;

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
    catalogue::describe_all();
    metrics::gauge!("aerie_build_info", "version" => env!("CARGO_PKG_VERSION")).set(1.0);
    Ok(())
}

/// One synced append of `entries` log entries took `d`.
pub fn record_append(d: Duration, entries: u64) {
    metrics::histogram!("aerie_raft_append_seconds").record(d.as_secs_f64());
    metrics::counter!("aerie_raft_appended_entries_total").increment(entries);
}

/// A proposal ended with `outcome` (`ok`, `not_leader`, `timeout`, `fatal`) after `d`.
pub fn record_proposal(outcome: &'static str, d: Duration) {
    metrics::histogram!("aerie_raft_proposal_duration_seconds", "outcome" => outcome)
        .record(d.as_secs_f64());
}

/// A snapshot was built or installed now.
fn record_snapshot_time() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    metrics::gauge!("aerie_raft_last_snapshot_timestamp_seconds").set(now);
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
    record_snapshot_time();
}

/// This CM stood for election early: its leader's port refused connections
/// ([`crate::raft::quick_election`]).
pub fn record_quick_election() {
    metrics::counter!("aerie_raft_quick_elections_total").increment(1);
}

/// This CM installed a leader's snapshot of `bytes`.
pub fn record_snapshot_installed(bytes: usize) {
    metrics::counter!("aerie_raft_snapshots_installed_total").increment(1);
    metrics::gauge!("aerie_raft_snapshot_bytes").set(bytes as f64);
    record_snapshot_time();
}

/// One admin request (`write`, `query`...) ended, well or not, after `d`.
pub fn record_admin(method: &'static str, ok: bool, d: Duration) {
    let outcome = if ok { "ok" } else { "error" };
    metrics::counter!("aerie_admin_requests_total", "method" => method, "outcome" => outcome)
        .increment(1);
    metrics::histogram!("aerie_admin_request_seconds", "method" => method).record(d.as_secs_f64());
}

/// What [`observe_raft`] remembers between two looks: the leader and the term it last saw.
#[derive(Debug, Default)]
pub struct RaftSeen {
    leader: Option<Option<u64>>,
    term: Option<u64>,
}

/// The Raft roles, as `aerie_raft_state{state}` names them.
const ROLES: [(crate::raft::ServerState, &str); 5] = [
    (crate::raft::ServerState::Leader, "leader"),
    (crate::raft::ServerState::Follower, "follower"),
    (crate::raft::ServerState::Candidate, "candidate"),
    (crate::raft::ServerState::Learner, "learner"),
    (crate::raft::ServerState::Shutdown, "shutdown"),
];

/// Updates the Raft gauges from openraft's metrics; `seen` tracks leader and term changes.
pub fn observe_raft(m: &crate::raft::Metrics, seen: &mut RaftSeen) {
    for (role, name) in ROLES {
        metrics::gauge!("aerie_raft_state", "state" => name).set(if m.state == role {
            1.0
        } else {
            0.0
        });
    }
    metrics::gauge!("aerie_raft_leader_id").set(m.current_leader.unwrap_or(0) as f64);
    metrics::gauge!("aerie_raft_voters")
        .set(m.membership_config.membership().voter_ids().count() as f64);
    if seen.term != Some(m.current_term) {
        if seen.term.is_some() {
            metrics::counter!("aerie_raft_term_changes_total").increment(1);
        }
        seen.term = Some(m.current_term);
    }
    let prev_leader = &mut seen.leader;
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

/// Recomputes the [`census`] gauges from the replicated `state` and the collector `table`
/// every `every`, until the returned task is aborted.
pub fn spawn_census(
    state: crate::raft::store::SharedState,
    table: crate::collector::service::SharedTable,
    every: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut publisher = census::Publisher::default();
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let mut samples = {
                let a = state.read().unwrap_or_else(|p| p.into_inner());
                census::of_state(&a.state)
            };
            samples.extend({
                let t = table.read().unwrap_or_else(|p| p.into_inner());
                census::of_table(&t)
            });
            publisher.publish(&samples);
        }
    })
}

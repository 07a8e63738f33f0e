//! Every metric a CM exports, in one table: name, type, labels and the HELP text, so the
//! exporter describes them all in one place ([`describe_all`]), `ops/README.md` documents the
//! same table and a test checks that a live CM's `/metrics` agrees with it.
//!
//! Naming follows Prometheus's conventions: base units in the name (`_seconds`, `_bytes`,
//! `_megabytes` as HTCondor counts memory), `_total` on counters, and labels whose values are
//! bounded by the pool's shape (ad types, slot states, CM ids, submitters), never by traffic.
//! What they show maps to what an HTCondor admin reads elsewhere: `condor_userprio` (the
//! `aerie_accountant_*` family), `condor_status -total` (`aerie_pool_*`), the NegotiatorLog
//! and the Negotiator ad's `LastNegotiationCycle*` attributes (`aerie_negotiation_*`; HTCondor's
//! `src/condor_negotiator.V6/matchmaker.cpp` publishes those), and the collector's own
//! statistics (`aerie_collector_*`; `src/condor_collector.V6/collector_stats.cpp`).

/// A Prometheus metric type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up (restarts at 0 when the CM restarts).
    Counter,
    /// Goes up and down.
    Gauge,
    /// Observations in buckets (`_bucket`, `_sum`, `_count`).
    Histogram,
}

impl Kind {
    /// The word `# TYPE` lines use.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// One metric's description.
#[derive(Clone, Copy, Debug)]
pub struct Desc {
    /// Its full name.
    pub name: &'static str,
    /// Its type.
    pub kind: Kind,
    /// Its labels (bounded sets; see the module doc).
    pub labels: &'static [&'static str],
    /// Where it is exported: `all` (every CM), `leader` (only the CM that negotiates) or
    /// `event` (once the event it counts first happens).
    pub scope: &'static str,
    /// The HELP text.
    pub help: &'static str,
}

const fn d(
    name: &'static str,
    kind: Kind,
    labels: &'static [&'static str],
    scope: &'static str,
    help: &'static str,
) -> Desc {
    Desc {
        name,
        kind,
        labels,
        scope,
        help,
    }
}

use Kind::{Counter as C, Gauge as G, Histogram as H};

/// Every metric, grouped by family.
#[rustfmt::skip]
pub const CATALOGUE: &[Desc] = &[
    d("aerie_build_info", G, &["version"], "all", "Always 1; the version label is this aerie-cm's version."),
    d("aerie_tls_certificate_expiry_timestamp_seconds", G, &[], "all", "When this CM's TLS certificate expires (Unix seconds; absent when started --insecure)."),
    // Raft.
    d("aerie_raft_has_leader", G, &[], "all", "1 while this CM knows a leader of the current term."),
    d("aerie_raft_is_leader", G, &[], "all", "1 while this CM is the Raft leader."),
    d("aerie_raft_leader_id", G, &[], "all", "Node id of the leader this CM knows (0: none)."),
    d("aerie_raft_state", G, &["state"], "all", "1 for this CM's Raft role (leader, follower, candidate, learner, shutdown), 0 for the others."),
    d("aerie_raft_term", G, &[], "all", "The current Raft term."),
    d("aerie_raft_term_changes_total", C, &[], "event", "Raft terms this CM has seen begin (each is one election)."),
    d("aerie_raft_leader_changes_total", C, &[], "event", "Times this CM saw the leader change to another known leader."),
    d("aerie_raft_voters", G, &[], "all", "Voting members in the cluster configuration this CM holds."),
    d("aerie_raft_last_log_index", G, &[], "all", "Index of the last entry in this CM's Raft log."),
    d("aerie_raft_commit_index", G, &[], "all", "Highest log index known committed (openraft 0.9: the applied index)."),
    d("aerie_raft_applied_index", G, &[], "all", "Highest log index applied to this CM's state machine."),
    d("aerie_raft_purged_index", G, &[], "event", "Highest log index purged after a snapshot."),
    d("aerie_raft_follower_lag_entries", G, &["follower"], "leader", "On the leader: log entries each follower lacks."),
    d("aerie_raft_append_seconds", H, &[], "all", "Time of one synced append of log entries to RocksDB."),
    d("aerie_raft_fsync_seconds", H, &[], "all", "Time of one fsync of the Raft log."),
    d("aerie_raft_appended_entries_total", C, &[], "all", "Log entries appended to this CM's log."),
    d("aerie_raft_proposal_duration_seconds", H, &["outcome"], "event", "Time from proposing a command to its commit and apply (outcome: ok, not_leader, timeout, fatal)."),
    d("aerie_raft_snapshots_built_total", C, &[], "event", "State-machine snapshots this CM built."),
    d("aerie_raft_snapshots_installed_total", C, &[], "event", "Leader snapshots this CM installed."),
    d("aerie_raft_quick_elections_total", C, &[], "event", "Elections this CM stood in as soon as the voters' lease was over, its leader's port refusing connections (the leader's process gone)."),
    d("aerie_raft_snapshot_bytes", G, &[], "event", "Size of the last snapshot built or installed."),
    d("aerie_raft_last_snapshot_timestamp_seconds", G, &[], "event", "Unix time of the last snapshot built or installed."),
    // Admin API.
    d("aerie_admin_requests_total", C, &["method", "outcome"], "event", "Admin gRPC requests by method and outcome (ok, error)."),
    d("aerie_admin_request_seconds", H, &["method"], "event", "Admin gRPC request latency by method."),
    // Collector.
    d("aerie_collector_ads", G, &["type"], "all", "Ads in this CM's collector by MyType (absent ads included; other types as Other)."),
    d("aerie_collector_absent_ads", G, &[], "all", "Absent and offline ads in this CM's collector."),
    d("aerie_collector_updates_total", C, &["outcome"], "event", "Ad updates received from nodes and tools (accepted, rejected)."),
    d("aerie_collector_throttled_total", C, &[], "event", "Ad updates delayed by COLLECTOR_MAX_UPDATE_RATE."),
    d("aerie_collector_expired_total", C, &["to"], "all", "Ads past their ClassAdLifetime (to: absent, removed)."),
    d("aerie_collector_absent_commits_total", C, &["command"], "event", "Absent and offline ads the leader committed or removed through Raft."),
    d("aerie_collector_cut_off", G, &[], "all", "1 while no leader with a quorum is in touch with this CM (its ad streams are closed)."),
    d("aerie_collector_relay_sent_total", C, &["peer"], "event", "Ad changes relayed to each peer CM."),
    d("aerie_collector_relay_batches_total", C, &["peer"], "event", "Relay batches sent to each peer CM."),
    d("aerie_collector_relay_errors_total", C, &["peer"], "event", "Relay batches that failed to reach each peer CM."),
    d("aerie_collector_relay_dropped_total", C, &["peer"], "event", "Ad changes dropped from a full relay queue (digests repair them)."),
    d("aerie_collector_relay_lag_seconds", G, &["peer"], "event", "Seconds between this CM hearing the oldest ad change of the last batch a peer acknowledged and the acknowledgement (relay lag)."),
    d("aerie_collector_relay_queue_ads", G, &["peer"], "event", "Ad changes waiting to be relayed to each peer CM."),
    d("aerie_collector_relay_received_total", C, &["outcome"], "event", "Relayed ad changes received from peers by outcome."),
    d("aerie_collector_relay_digests_total", C, &["peer"], "event", "Anti-entropy digest exchanges with each peer CM."),
    d("aerie_collector_relay_repaired_total", C, &["direction"], "event", "Ads repaired by digest exchange (pulled, pushed)."),
    // The pool as this CM's collector sees it (condor_status -total).
    d("aerie_pool_slots", G, &["state", "activity"], "all", "Live slot ads by State and Activity (absent slots as Absent)."),
    d("aerie_pool_cpus", G, &["state"], "all", "Cpus of live slot ads by State."),
    d("aerie_pool_memory_megabytes", G, &["state"], "all", "Memory (MB) of live slot ads by State."),
    d("aerie_pool_submitter_jobs", G, &["submitter", "status"], "all", "Jobs per submitter from its Submitter ads (status: idle, running, held)."),
    // Negotiation, on the leader as it runs.
    d("aerie_negotiation_leader", G, &[], "all", "1 while this CM runs the negotiation loop (it leads)."),
    d("aerie_negotiation_cycles_total", C, &["outcome"], "leader", "Negotiation cycles by outcome (completed, paused, no_demand, syncing, deposed, failed)."),
    d("aerie_negotiation_cycle_duration_seconds", H, &[], "leader", "Duration of completed negotiation cycles."),
    d("aerie_negotiation_phase_duration_seconds", H, &["phase"], "leader", "Duration of each cycle phase (confirm, snapshot, tick, requests, matchmaking, grants, record)."),
    d("aerie_negotiation_matches_total", C, &[], "leader", "Matches made by completed cycles."),
    d("aerie_negotiation_grants_refused_total", C, &[], "leader", "Grants the access points refused or that could not be delivered."),
    d("aerie_negotiation_clock_offset_seconds", G, &[], "leader", "Leader's clock minus the replicated time at the last tick (negative: the clock ran backwards)."),
    // Negotiation, from the replicated state (the same on every CM).
    d("aerie_negotiation_paused", G, &[], "all", "1 while negotiation is paused (cmctl negotiator pause)."),
    d("aerie_negotiation_last_cycle_end_timestamp_seconds", G, &[], "all", "Unix time the last committed cycle ended (0: none yet)."),
    d("aerie_negotiation_last_cycle_duration_seconds", G, &[], "all", "Duration of the last committed cycle."),
    d("aerie_negotiation_last_cycle_matches", G, &[], "all", "Matches in the last committed cycle."),
    d("aerie_negotiation_last_cycle_rejections", G, &[], "all", "Rejections in the last committed cycle."),
    d("aerie_negotiation_last_cycle_idle_jobs", G, &[], "all", "Idle jobs the access points offered to the last committed cycle."),
    d("aerie_negotiation_last_cycle_access_points_failed", G, &[], "all", "Access points that did not answer the last committed cycle."),
    d("aerie_negotiation_last_cycle_submitter_matches", G, &["submitter"], "all", "Matches per submitter in the last committed cycle."),
    d("aerie_negotiation_last_cycle_policy_version", G, &[], "all", "Version of the replicated negotiation policy the last committed cycle used (0: none replicated)."),
    d("aerie_negotiation_last_cycle_group_config_quota", G, &["group"], "all", "A group's configured quota in the last committed cycle (weighted slots; a fraction of the parent when dynamic)."),
    d("aerie_negotiation_last_cycle_group_effective_quota", G, &["group"], "all", "A group's quota in weighted slots as the last committed cycle computed it (condor_userprio -quotas Effective Quota)."),
    d("aerie_negotiation_last_cycle_group_subtree_quota", G, &["group"], "all", "The quota of a group and its subgroups in the last committed cycle (weighted slots)."),
    d("aerie_negotiation_last_cycle_group_surplus", G, &["group"], "all", "Weighted slots of surplus a group received on top of its quota in the last committed cycle."),
    d("aerie_negotiation_last_cycle_group_requested", G, &["group"], "all", "Weighted slots a group's submitters asked for (running plus idle) in the last committed cycle."),
    d("aerie_negotiation_last_cycle_group_usage", G, &["group"], "all", "Weighted slots a group's submitters used when the last committed cycle started."),
    d("aerie_negotiation_policy_version", G, &[], "all", "Version of the replicated negotiation policy in force (0: none yet; cmctl reconfig raises it)."),
    // The accountant, from the replicated state (condor_userprio).
    d("aerie_accountant_priority", G, &["submitter"], "all", "Real user priority (decayed usage, at least 0.5)."),
    d("aerie_accountant_effective_priority", G, &["submitter"], "all", "Effective user priority: real priority times the factor (lower gets more)."),
    d("aerie_accountant_priority_factor", G, &["submitter"], "all", "Priority factor."),
    d("aerie_accountant_resources_in_use", G, &["submitter"], "all", "Weighted slots in use at the last tick."),
    d("aerie_accountant_accumulated_usage_seconds", G, &["submitter"], "all", "Weighted slot-seconds charged so far."),
    d("aerie_accountant_group_resources_in_use", G, &["group"], "all", "Weighted slots in use by an accounting group's subtree at the last tick."),
    d("aerie_accountant_group_accumulated_usage_seconds", G, &["group"], "all", "Weighted slot-seconds charged to an accounting group's subtree."),
];

/// The description of `name`, if it is in the catalogue.
pub fn find(name: &str) -> Option<&'static Desc> {
    CATALOGUE.iter().find(|d| d.name == name)
}

/// Registers the HELP text of every metric with the installed recorder.
pub fn describe_all() {
    for m in CATALOGUE {
        match m.kind {
            Kind::Counter => metrics::describe_counter!(m.name, m.help),
            Kind::Gauge => metrics::describe_gauge!(m.name, m.help),
            Kind::Histogram => metrics::describe_histogram!(m.name, m.help),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn names_are_unique_prefixed_and_counters_end_in_total() {
        let mut seen = BTreeSet::new();
        for m in CATALOGUE {
            assert!(seen.insert(m.name), "{} twice", m.name);
            assert!(m.name.starts_with("aerie_"), "{}", m.name);
            assert_eq!(
                m.kind == Kind::Counter,
                m.name.ends_with("_total"),
                "{}",
                m.name
            );
            assert!(["all", "leader", "event"].contains(&m.scope), "{}", m.name);
            assert!(!m.help.is_empty() && m.help.ends_with('.'), "{}", m.name);
        }
    }
}

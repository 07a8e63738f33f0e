#!/usr/bin/env python3
"""Generates Aerie's Grafana dashboards (ops/grafana/dashboards/*.json) from one description,
so every dashboard shares its variables, data source, units and layout.

    python3 ops/grafana/generate.py          # rewrites the JSON files
    python3 ops/grafana/generate.py --check  # exits 1 if a JSON file differs from what it generates

Each dashboard has two variables: `datasource` (any Prometheus) and `pool` (the `pool` label
ops/prometheus/targets/*.json gives every target). Every CM holds the same replicated state,
so per-submitter figures take `max by (submitter)` over the CMs of a pool; collector figures
are per CM (`instance`), since each CM's collector holds its own copy of the pool's ads.
Standard library only (the CI machine needs nothing but python3)."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "dashboards")

CM = 'job="aerie-cm",pool=~"$pool"'
NODE = 'job="aerie-node",pool=~"$pool"'
AP = 'job="aerie-ap",pool=~"$pool"'
DS = {"type": "prometheus", "uid": "${datasource}"}


def target(expr, legend="", ref="A"):
    return {"datasource": DS, "expr": expr, "legendFormat": legend, "refId": ref}


def panel(kind, title, targets, unit="short", desc="", stack=False, w=12, h=8):
    """One panel; `targets` is a list of (expr, legend)."""
    p = {
        "type": kind,
        "title": title,
        "description": desc,
        "datasource": DS,
        "targets": [target(e, l, chr(ord("A") + i)) for i, (e, l) in enumerate(targets)],
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {},
        "_size": (w, h),
    }
    if kind == "timeseries":
        p["fieldConfig"]["defaults"]["custom"] = {
            "drawStyle": "line",
            "fillOpacity": 30 if stack else 10,
            "stacking": {"mode": "normal" if stack else "none", "group": "A"},
        }
        p["options"] = {"legend": {"displayMode": "list", "placement": "bottom"},
                        "tooltip": {"mode": "multi"}}
    elif kind == "bargauge":
        p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                        "orientation": "horizontal", "displayMode": "gradient"}
    elif kind == "stat":
        p["options"] = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                        "colorMode": "value", "graphMode": "area"}
    return p


def ts(title, targets, **kw):
    return panel("timeseries", title, targets, **kw)


def stat(title, expr, unit="short", desc=""):
    return panel("stat", title, [(expr, "")], unit=unit, desc=desc, w=6, h=4)


def row(title):
    return {"type": "row", "title": title, "collapsed": False, "panels": [], "_size": (24, 1)}


def layout(panels):
    """Flows panels left to right, top to bottom, on Grafana's 24-column grid."""
    x = y = line_h = 0
    out = []
    for i, p in enumerate(panels, start=1):
        w, h = p.pop("_size")
        if x + w > 24 or p["type"] == "row":
            x, y, line_h = 0, y + line_h, 0
        p["id"] = i
        p["gridPos"] = {"x": x, "y": y, "w": w, "h": h}
        x += w
        line_h = max(line_h, h)
        if p["type"] == "row":
            x, y, line_h = 0, y + h, 0
        out.append(p)
    return out


def dashboard(uid, title, desc, panels):
    return {
        "uid": uid,
        "title": title,
        "description": desc,
        "tags": ["aerie", "htcondor"],
        "timezone": "browser",
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": [
            {"name": "datasource", "label": "Data source", "type": "datasource",
             "query": "prometheus", "hide": 0},
            {"name": "pool", "label": "Pool", "type": "query", "datasource": DS,
             "query": {"query": 'label_values(aerie_raft_term{job="aerie-cm"}, pool)',
                       "refId": "pool"},
             "refresh": 2, "includeAll": True, "multi": False, "allValue": ".*",
             "hide": 0},
        ]},
        "annotations": {"list": []},
        "links": [{"title": "Aerie dashboards", "type": "dashboards", "tags": ["aerie"],
                   "asDropdown": True, "icon": "external link", "includeVars": True,
                   "keepTime": True, "targetBlank": False, "tooltip": ""}],
        "panels": layout(panels),
    }


def q99(metric, by, extra=""):
    sel = CM + (("," + extra) if extra else "")
    return f"histogram_quantile(0.99, sum by ({by}, le) (rate({metric}_bucket{{{sel}}}[$__rate_interval])))"


def q50(metric, by, extra=""):
    return q99(metric, by, extra).replace("0.99", "0.5", 1)


CLUSTER = dashboard(
    "aerie-cluster", "Aerie / Raft cluster",
    "The CMs' Raft group: who leads, elections, replication lag, commit and disk latency.",
    [
        row("Health"),
        stat("Leaders", f"sum(aerie_raft_is_leader{{{CM}}})",
             desc="Exactly 1 when healthy; 0: no negotiation and no admin writes (AerieNoLeader)."),
        stat("CMs up", f'count(up{{{CM}}} == 1)', desc="CMs answering their metrics scrape."),
        stat("Quorum size", f"floor(max(aerie_raft_voters{{{CM}}}) / 2) + 1",
             desc="Voters needed to commit; CMs up with a leader must stay above it."),
        stat("Term", f"max(aerie_raft_term{{{CM}}})", desc="Raft term: grows by one per election."),
        ts("Leader seen by each CM", [(f"aerie_raft_leader_id{{{CM}}}", "{{instance}}")],
           desc="Node id of the leader each CM follows (0: none). All lines agree when healthy."),
        ts("Raft role", [(f"aerie_raft_state{{{CM}}} == 1", "{{instance}} {{state}}")],
           desc="Each CM's role: leader, follower, candidate, learner."),
        ts("Elections (term changes per 15 min)",
           [(f"max(max_over_time(aerie_raft_term{{{CM}}}[15m]) - min_over_time(aerie_raft_term{{{CM}}}[15m]))", "elections")],
           desc="More than 3 fires AerieLeaderFlapping."),
        ts("Follower lag (entries)", [(f"aerie_raft_follower_lag_entries{{{CM}}}", "follower {{follower}} (leader {{instance}})")],
           desc="On the leader: entries each follower still lacks."),
        row("Log and commits"),
        ts("Log indexes", [(f"aerie_raft_last_log_index{{{CM}}}", "{{instance}} last"),
                           (f"aerie_raft_applied_index{{{CM}}}", "{{instance}} applied")]),
        ts("Commits per second", [(f"rate(aerie_raft_applied_index{{{CM}}}[$__rate_interval])", "{{instance}}")],
           unit="ops"),
        ts("Proposal latency (commit and apply)",
           [(q50("aerie_raft_proposal_duration_seconds", "instance", 'outcome="ok"'), "p50 {{instance}}"),
            (q99("aerie_raft_proposal_duration_seconds", "instance", 'outcome="ok"'), "p99 {{instance}}")],
           unit="s"),
        ts("Proposals by outcome",
           [(f"sum by (outcome) (rate(aerie_raft_proposal_duration_seconds_count{{{CM}}}[$__rate_interval]))", "{{outcome}}")],
           unit="ops"),
        ts("fsync latency p99", [(q99("aerie_raft_fsync_seconds", "instance"), "{{instance}}")], unit="s",
           desc="Over 0.1 s for 10 min fires AerieFsyncSlow."),
        ts("Append latency p99", [(q99("aerie_raft_append_seconds", "instance"), "{{instance}}")], unit="s"),
        ts("Entries appended per second",
           [(f"rate(aerie_raft_appended_entries_total{{{CM}}}[$__rate_interval])", "{{instance}}")], unit="ops"),
        ts("Snapshot size", [(f"aerie_raft_snapshot_bytes{{{CM}}}", "{{instance}}")], unit="bytes"),
        row("Admin API"),
        ts("Admin requests", [(f"sum by (method, outcome) (rate(aerie_admin_requests_total{{{CM}}}[$__rate_interval]))", "{{method}} {{outcome}}")],
           unit="reqps"),
        ts("Admin latency p99", [(q99("aerie_admin_request_seconds", "method"), "{{method}}")], unit="s"),
    ])

NEGOTIATION = dashboard(
    "aerie-negotiation", "Aerie / Negotiation",
    "The leader's negotiation cycles: how often, how long, what they matched (the NegotiatorLog and the Negotiator ad).",
    [
        row("Last cycle"),
        stat("Since the last cycle", f"time() - max(aerie_negotiation_last_cycle_end_timestamp_seconds{{{CM}}})", unit="s",
             desc="Over 600 s with submitters waiting fires AerieNegotiationStalled."),
        stat("Paused", f"max(aerie_negotiation_paused{{{CM}}})", desc="1: cmctl negotiator pause is in force."),
        stat("Matches", f"max(aerie_negotiation_last_cycle_matches{{{CM}}})"),
        stat("Idle jobs offered", f"max(aerie_negotiation_last_cycle_idle_jobs{{{CM}}})"),
        row("Cycles"),
        ts("Cycles by outcome", [(f"sum by (outcome) (rate(aerie_negotiation_cycles_total{{{CM}}}[$__rate_interval]))", "{{outcome}}")],
           unit="ops", desc="completed, paused, no_demand, syncing (a restarted leader waits for its collector to compare with a peer), deposed (leadership lost mid-cycle), failed."),
        ts("Cycle duration", [(f"max(aerie_negotiation_last_cycle_duration_seconds{{{CM}}})", "last committed"),
                              (q99("aerie_negotiation_cycle_duration_seconds", "instance"), "p99 {{instance}}")],
           unit="s", desc="Over 120 s fires AerieNegotiationCycleSlow."),
        ts("Cycle phases p99", [(q99("aerie_negotiation_phase_duration_seconds", "phase"), "{{phase}}")], unit="s",
           desc="confirm, snapshot, tick, requests (access points), matchmaking, grants, record."),
        ts("Matches and rejections per cycle", [(f"max(aerie_negotiation_last_cycle_matches{{{CM}}})", "matches"),
                                                (f"max(aerie_negotiation_last_cycle_rejections{{{CM}}})", "rejections")]),
        ts("Matches per submitter (last cycle)",
           [(f"max by (submitter) (aerie_negotiation_last_cycle_submitter_matches{{{CM}}})", "{{submitter}}")], stack=True),
        ts("Matches and refused grants per second",
           [(f"sum(rate(aerie_negotiation_matches_total{{{CM}}}[$__rate_interval]))", "matches"),
            (f"sum(rate(aerie_negotiation_grants_refused_total{{{CM}}}[$__rate_interval]))", "refused grants")],
           unit="ops"),
        ts("Access points not answering", [(f"max(aerie_negotiation_last_cycle_access_points_failed{{{CM}}})", "failed")]),
        ts("Leader clock offset", [(f"aerie_negotiation_clock_offset_seconds{{{CM}}} and on (instance) aerie_negotiation_leader{{{CM}}} == 1", "{{instance}}")],
           unit="s", desc="The leader's clock minus the replicated time; over 10 s fires AerieClockOffset."),
    ])

POOL = dashboard(
    "aerie-pool", "Aerie / Pool",
    "The pool as each CM's collector sees it (condor_status -total), and the execute nodes' and access points' own figures.",
    [
        row("Slots"),
        stat("Slots", f'max(sum by (instance) (aerie_pool_slots{{{CM},state!="Absent"}}))'),
        stat("Claimed slots", f'max(sum by (instance) (aerie_pool_slots{{{CM},state="Claimed"}}))'),
        stat("Absent slots", f'max(sum by (instance) (aerie_pool_slots{{{CM},state="Absent"}}))'),
        stat("Submitters", f'max(aerie_collector_ads{{{CM},type="Submitter"}})'),
        ts("Slots by state", [(f"max by (state) (aerie_pool_slots{{{CM}}})", "{{state}}")], stack=True),
        ts("Slots by activity", [(f'max by (activity) (aerie_pool_slots{{{CM},state!="Absent"}})', "{{activity}}")], stack=True),
        ts("Cpus: claimed and total", [(f'max(sum by (instance) (aerie_pool_cpus{{{CM}}}))', "total"),
                                       (f'max(aerie_pool_cpus{{{CM},state="Claimed"}})', "claimed")]),
        ts("Memory: claimed and total", [(f'max(sum by (instance) (aerie_pool_memory_megabytes{{{CM}}}))', "total"),
                                         (f'max(aerie_pool_memory_megabytes{{{CM},state="Claimed"}})', "claimed")],
           unit="decmbytes"),
        row("Execute nodes"),
        ts("Slots by state (nodes' own view)",
           [(f"sum by (state) (aerie_node_slots{{{NODE}}})", "{{state}}")], stack=True,
           desc="What the startds report about themselves; compare with the collectors' view above."),
        ts("Slots by activity (nodes' own view)",
           [(f"sum by (activity) (aerie_node_slots{{{NODE}}})", "{{activity}}")], stack=True),
        ts("Jobs started and completed per second",
           [(f"sum(rate(aerie_node_jobs_started_total{{{NODE}}}[$__rate_interval]))", "started"),
            (f"sum(rate(aerie_node_jobs_completed_total{{{NODE}}}[$__rate_interval]))", "completed")],
           unit="ops"),
        ts("Jobs failed, vacated and killed per second",
           [(f"sum(rate(aerie_node_jobs_failed_total{{{NODE}}}[$__rate_interval]))", "failed to start"),
            (f"sum(rate(aerie_node_jobs_vacated_total{{{NODE}}}[$__rate_interval]))", "vacated"),
            (f"sum(rate(aerie_node_jobs_killed_total{{{NODE}}}[$__rate_interval]))", "killed")],
           unit="ops", desc="Jobs that could not start, left after their KillSig, or were hard-killed."),
        ts("Claims per second by outcome",
           [(f"sum by (outcome) (rate(aerie_node_claims_total{{{NODE}}}[$__rate_interval]))", "{{outcome}}")],
           unit="ops", desc="Claim requests the startds accepted or refused."),
        ts("Claim leases expired and starter errors per second",
           [(f"sum(rate(aerie_node_claim_leases_expired_total{{{NODE}}}[$__rate_interval]))", "leases expired"),
            (f"sum by (kind) (rate(aerie_node_starter_errors_total{{{NODE}}}[$__rate_interval]))", "starter error: {{kind}}")],
           unit="ops", desc="A claim whose access point stopped renewing it; a starter that failed (start, output, sandbox, signal)."),
        ts("Job events to access points per second",
           [(f"sum by (outcome) (rate(aerie_node_job_events_total{{{NODE}}}[$__rate_interval]))", "{{outcome}}")],
           unit="ops", desc="Job events (started, exited) delivered to the access points, or retried."),
        row("Access points"),
        ts("Queued jobs by status", [(f"sum by (status) (aerie_ap_jobs{{{AP}}})", "{{status}}")], stack=True,
           desc="condor_q's totals: idle, running, held... summed over the access points."),
        ts("Queue per access point", [(f"sum by (instance) (aerie_ap_jobs{{{AP}}})", "{{instance}}")]),
        ts("Submits, starts, completions and holds per second",
           [(f"sum(rate(aerie_ap_submits_total{{{AP}}}[$__rate_interval]))", "submitted"),
            (f"sum(rate(aerie_ap_job_starts_total{{{AP}}}[$__rate_interval]))", "started"),
            (f"sum(rate(aerie_ap_job_completions_total{{{AP}}}[$__rate_interval]))", "completed"),
            (f"sum(rate(aerie_ap_job_holds_total{{{AP}}}[$__rate_interval]))", "held")],
           unit="ops"),
        ts("Claims held", [(f"sum by (instance) (aerie_ap_claims{{{AP}}})", "{{instance}}")],
           desc="Claims the access points hold on execute slots (the schedd's shadows)."),
        ts("Claims reused and released per second",
           [(f"sum(rate(aerie_ap_claims_reused_total{{{AP}}}[$__rate_interval]))", "reused"),
            (f"sum(rate(aerie_ap_claims_released_total{{{AP}}}[$__rate_interval]))", "released")],
           unit="ops", desc="A claim taking another job of its autocluster, or given back."),
        row("Daemons"),
        ts("Targets answering", [('sum by (job) (up{job=~"aerie-.*",pool=~"$pool"})', "{{job}}")],
           desc="CMs, execute nodes and access points whose metrics endpoint answers (AerieCMDown, AerieNodeNotReporting)."),
        ts("Each target (1: answering, 0: down)", [('up{job=~"aerie-.*",pool=~"$pool"}', "{{job}} {{instance}}")],
           desc="Which CM, execute node or access point stopped answering its metrics scrape."),
    ])

COLLECTOR = dashboard(
    "aerie-collector", "Aerie / Collector",
    "Each CM's collector: the ads it holds by type, the updates it takes, absent and offline ads, and the relay between CMs.",
    [
        row("Ads"),
        stat("Ads (largest collector)", f"max(sum by (instance) (aerie_collector_ads{{{CM}}}))"),
        stat("Absent and offline ads", f"max(aerie_collector_absent_ads{{{CM}}})"),
        stat("Updates per second", f"sum(rate(aerie_collector_updates_total{{{CM}}}[$__rate_interval]))", unit="ops"),
        stat("CMs cut off", f"sum(aerie_collector_cut_off{{{CM}}})",
             desc="CMs out of touch with a leader holding a quorum (AerieCollectorCutOff)."),
        ts("Ads by type (each CM)", [(f"aerie_collector_ads{{{CM}}} > 0", "{{instance}} {{type}}")],
           desc="Every CM holds a copy; they converge within a relay interval (AerieCollectorsDiverged)."),
        ts("Absent and offline ads", [(f"aerie_collector_absent_ads{{{CM}}}", "{{instance}}")],
           desc="Slots that stopped reporting (ABSENT_REQUIREMENTS) and offline ads (AerieAbsentSlotsSpike)."),
        ts("Absent and offline ads committed per second",
           [(f"sum by (command) (rate(aerie_collector_absent_commits_total{{{CM}}}[$__rate_interval]))", "{{command}}")],
           unit="ops", desc="The leader commits absent ads through Raft so every CM keeps them alike."),
        ts("Ads expired per second", [(f"sum by (instance, to) (rate(aerie_collector_expired_total{{{CM}}}[$__rate_interval]))", "{{instance}} to {{to}}")],
           unit="ops", desc="Ads past their ClassAdLifetime, made absent or removed."),
        row("Updates"),
        ts("Ad updates per second by outcome", [(f"sum by (instance, outcome) (rate(aerie_collector_updates_total{{{CM}}}[$__rate_interval]))", "{{instance}} {{outcome}}")],
           unit="ops", desc="Rejected over 5% fires AerieCollectorRejections."),
        ts("Rejected share of updates",
           [(f'(sum by (instance) (rate(aerie_collector_updates_total{{{CM},outcome="rejected"}}[$__rate_interval]))'
             f" or 0 * sum by (instance) (rate(aerie_collector_updates_total{{{CM}}}[$__rate_interval])))"
             f" / sum by (instance) (rate(aerie_collector_updates_total{{{CM}}}[$__rate_interval]))", "{{instance}}")],
           unit="percentunit", desc="Over 5% for 10 minutes fires AerieCollectorRejections; the CM logs each reason with the sender."),
        ts("Updates throttled per second", [(f"sum by (instance) (rate(aerie_collector_throttled_total{{{CM}}}[$__rate_interval]))", "{{instance}}")],
           unit="ops", desc="Updates delayed by COLLECTOR_MAX_UPDATE_RATE."),
        ts("Cut off from the quorum", [(f"aerie_collector_cut_off{{{CM}}}", "{{instance}}")],
           desc="1: this CM closes its nodes' streams so they move to a CM of the majority."),
        row("Relay between CMs"),
        ts("Relay lag", [(f"aerie_collector_relay_lag_seconds{{{CM}}}", "{{instance}} to {{peer}}")], unit="s",
           desc="Seconds between a CM hearing the oldest change of the last batch a peer acknowledged and the acknowledgement."),
        ts("Relay queue", [(f"aerie_collector_relay_queue_ads{{{CM}}}", "{{instance}} to {{peer}}")],
           desc="Ad changes waiting to be relayed to each peer; a growing queue means the peer cannot keep up."),
        ts("Relay: changes sent per second", [(f"sum by (instance, peer) (rate(aerie_collector_relay_sent_total{{{CM}}}[$__rate_interval]))", "{{instance}} to {{peer}}")],
           unit="ops"),
        ts("Relay: received per second", [(f"sum by (instance, outcome) (rate(aerie_collector_relay_received_total{{{CM}}}[$__rate_interval]))", "{{instance}} {{outcome}}")],
           unit="ops"),
        ts("Relay: failed batches and dropped changes per second",
           [(f"sum by (instance, peer) (rate(aerie_collector_relay_errors_total{{{CM}}}[$__rate_interval]))", "{{instance}} to {{peer}} failed"),
            (f"sum by (instance, peer) (rate(aerie_collector_relay_dropped_total{{{CM}}}[$__rate_interval]))", "{{instance}} to {{peer}} dropped")],
           unit="ops", desc="Failing for 10 minutes fires AerieRelayFailing; dropped changes are repaired by digests."),
        ts("Relay: digest exchanges and repairs per second",
           [(f"sum by (instance, peer) (rate(aerie_collector_relay_digests_total{{{CM}}}[$__rate_interval]))", "{{instance}} with {{peer}}"),
            (f"sum by (direction) (rate(aerie_collector_relay_repaired_total{{{CM}}}[$__rate_interval]))", "repaired ({{direction}})")],
           unit="ops"),
    ])

GROUPS = dashboard(
    "aerie-groups", "Aerie / Groups and quotas",
    "condor_userprio -quotas over time: each accounting group's configured and effective quota, surplus, demand and usage as the leader's last cycle computed them.",
    [
        row("Quotas (last cycle)"),
        ts("Effective quota", [(f"max by (group) (aerie_negotiation_last_cycle_group_effective_quota{{{CM}}})", "{{group}}")],
           desc="Weighted slots after scaling the configured quotas to the pool (condor_userprio -quotas Effective Quota)."),
        ts("Configured quota", [(f"max by (group) (aerie_negotiation_last_cycle_group_config_quota{{{CM}}})", "{{group}}")],
           desc="GROUP_QUOTA_<g> in weighted slots, or GROUP_QUOTA_DYNAMIC_<g> as a fraction; a runtime override (cmctl quota set) included."),
        ts("Subtree quota", [(f"max by (group) (aerie_negotiation_last_cycle_group_subtree_quota{{{CM}}})", "{{group}}")],
           desc="A group's quota with its subgroups'."),
        ts("Surplus received", [(f"max by (group) (aerie_negotiation_last_cycle_group_surplus{{{CM}}})", "{{group}}")],
           stack=True, desc="Weighted slots the surplus sharing added on top of a group's quota (GROUP_ACCEPT_SURPLUS)."),
        panel("bargauge", "Effective quota now",
              [(f"max by (group) (aerie_negotiation_last_cycle_group_effective_quota{{{CM}}})", "{{group}}")], w=12, h=8),
        panel("bargauge", "Requested now",
              [(f"max by (group) (aerie_negotiation_last_cycle_group_requested{{{CM}}})", "{{group}}")], w=12, h=8),
        row("Demand and usage"),
        ts("Requested", [(f"max by (group) (aerie_negotiation_last_cycle_group_requested{{{CM}}})", "{{group}}")],
           desc="Weighted slots the group's submitters asked for, running plus idle (Weighted Requested)."),
        ts("Usage and effective quota",
           [(f"max by (group) (aerie_negotiation_last_cycle_group_usage{{{CM}}})", "{{group}} usage"),
            (f"max by (group) (aerie_negotiation_last_cycle_group_effective_quota{{{CM}}})", "{{group}} quota")],
           desc="Usage when the last cycle started beside the quota it computed."),
        ts("Usage as a share of the effective quota",
           [(f"max by (group) (aerie_negotiation_last_cycle_group_usage{{{CM}}}) / (max by (group) (aerie_negotiation_last_cycle_group_effective_quota{{{CM}}}) > 0)", "{{group}}")],
           unit="percentunit", desc="Over 100%: the group runs on surplus; groups with no quota are left out."),
        ts("Group resources in use (ledger)", [(f"max by (group) (aerie_accountant_group_resources_in_use{{{CM}}})", "{{group}}")],
           stack=True, desc="Weighted slots the accountant charged to each group's subtree at its last tick."),
    ])

FAIRSHARE = dashboard(
    "aerie-fairshare", "Aerie / Fair share",
    "condor_userprio over time: priorities, factors and usage per submitter and accounting group.",
    [
        row("Submitters"),
        ts("Effective priority", [(f"max by (submitter) (aerie_accountant_effective_priority{{{CM}}})", "{{submitter}}")],
           desc="Real priority times the factor; the lower, the larger the share."),
        ts("Real priority", [(f"max by (submitter) (aerie_accountant_priority{{{CM}}})", "{{submitter}}")]),
        ts("Resources in use", [(f"max by (submitter) (aerie_accountant_resources_in_use{{{CM}}})", "{{submitter}}")],
           stack=True, desc="Weighted slots each submitter held at the last accountant tick."),
        ts("Priority factor", [(f"max by (submitter) (aerie_accountant_priority_factor{{{CM}}})", "{{submitter}}")]),
        ts("Usage charged per second",
           [(f"max by (submitter) (rate(aerie_accountant_accumulated_usage_seconds{{{CM}}}[$__rate_interval]))", "{{submitter}}")],
           stack=True, desc="Weighted slot-seconds per second: the slots each submitter was charged for."),
        ts("Idle and running jobs", [(f'max by (submitter, status) (aerie_pool_submitter_jobs{{{CM},status=~"idle|running"}})', "{{submitter}} {{status}}")]),
        row("Accounting groups"),
        ts("Group resources in use", [(f"max by (group) (aerie_accountant_group_resources_in_use{{{CM}}})", "{{group}}")], stack=True),
        ts("Group usage charged per second",
           [(f"max by (group) (rate(aerie_accountant_group_accumulated_usage_seconds{{{CM}}}[$__rate_interval]))", "{{group}}")],
           stack=True),
    ])

DASHBOARDS = {
    "aerie-cluster.json": CLUSTER,
    "aerie-negotiation.json": NEGOTIATION,
    "aerie-pool.json": POOL,
    "aerie-collector.json": COLLECTOR,
    "aerie-fairshare.json": FAIRSHARE,
    "aerie-groups.json": GROUPS,
}


def main():
    check = "--check" in sys.argv[1:]
    os.makedirs(OUT, exist_ok=True)
    stale = []
    for name, d in DASHBOARDS.items():
        text = json.dumps(d, indent=2, sort_keys=True) + "\n"
        path = os.path.join(OUT, name)
        if check:
            try:
                with open(path) as f:
                    if f.read() != text:
                        stale.append(path)
            except FileNotFoundError:
                stale.append(path)
        else:
            with open(path, "w") as f:
                f.write(text)
    if stale:
        print("out of date (run python3 ops/grafana/generate.py): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

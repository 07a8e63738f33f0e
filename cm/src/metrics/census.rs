//! The gauges a CM recomputes every few seconds from what it holds rather than from events:
//! the replicated state (the accountant as `condor_userprio` shows it, the last committed
//! negotiation cycle, the pause flag) and its collector's table (the pool as
//! `condor_status -total` counts it). Pure: a state or a table in, samples out;
//! [`Publisher`] hands them to the exporter.
//!
//! HTCondor publishes the same figures as ad attributes: the accountant's in the Accountant
//! ads (`src/condor_negotiator.V6/Accountant.cpp`), the last cycle's as the Negotiator ad's
//! `LastNegotiationCycle*` (`matchmaker.cpp`), and the slot totals are what `condor_status
//! -total` sums (`src/condor_status.V6/totals.cpp`).
use crate::collector::{AdTable, AdType};
use aerie_core::state::PoolState;
use classad::ClassAd;
use std::collections::{BTreeMap, BTreeSet};

/// One gauge value.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// The metric (a name of [`super::catalogue::CATALOGUE`]).
    pub name: &'static str,
    /// Its labels, in the catalogue's order.
    pub labels: Vec<(&'static str, String)>,
    /// Its value.
    pub value: f64,
}

fn s(name: &'static str, labels: Vec<(&'static str, String)>, value: f64) -> Sample {
    Sample {
        name,
        labels,
        value,
    }
}

/// The replicated state's gauges.
pub fn of_state(state: &PoolState) -> Vec<Sample> {
    let mut out = vec![
        s(
            "aerie_negotiation_paused",
            vec![],
            if state.negotiator.paused { 1.0 } else { 0.0 },
        ),
        s(
            "aerie_negotiation_policy_version",
            vec![],
            state.policy.as_ref().map_or(0.0, |p| p.version as f64),
        ),
    ];
    let last = state.cycles.back();
    let fig = |f: fn(&aerie_core::state::CycleRecord) -> f64| last.map(f).unwrap_or(0.0);
    for (name, value) in [
        (
            "aerie_negotiation_last_cycle_end_timestamp_seconds",
            fig(|r| r.end_time as f64),
        ),
        (
            "aerie_negotiation_last_cycle_duration_seconds",
            fig(|r| r.duration_seconds),
        ),
        (
            "aerie_negotiation_last_cycle_matches",
            fig(|r| r.matches as f64),
        ),
        (
            "aerie_negotiation_last_cycle_rejections",
            fig(|r| r.rejections as f64),
        ),
        (
            "aerie_negotiation_last_cycle_idle_jobs",
            fig(|r| r.idle_jobs as f64),
        ),
        (
            "aerie_negotiation_last_cycle_access_points_failed",
            fig(|r| r.access_points_failed as f64),
        ),
        (
            "aerie_negotiation_last_cycle_policy_version",
            fig(|r| r.policy_version as f64),
        ),
    ] {
        out.push(s(name, vec![], value));
    }
    if let Some(r) = last {
        for (who, n) in &r.matched_by_submitter {
            out.push(s(
                "aerie_negotiation_last_cycle_submitter_matches",
                vec![("submitter", who.clone())],
                *n as f64,
            ));
        }
        for g in &r.groups {
            for (name, value) in [
                (
                    "aerie_negotiation_last_cycle_group_config_quota",
                    g.config_quota,
                ),
                (
                    "aerie_negotiation_last_cycle_group_effective_quota",
                    g.effective_quota,
                ),
                (
                    "aerie_negotiation_last_cycle_group_subtree_quota",
                    g.subtree_quota,
                ),
                ("aerie_negotiation_last_cycle_group_surplus", g.surplus),
                ("aerie_negotiation_last_cycle_group_requested", g.requested),
                ("aerie_negotiation_last_cycle_group_usage", g.usage),
            ] {
                out.push(s(name, vec![("group", g.name.clone())], value));
            }
        }
    }
    for row in state.accountant.userprio_rows(state.now) {
        if row.is_group {
            let l = || vec![("group", row.name.clone())];
            out.push(s(
                "aerie_accountant_group_resources_in_use",
                l(),
                row.resources_used,
            ));
            out.push(s(
                "aerie_accountant_group_accumulated_usage_seconds",
                l(),
                row.accumulated_usage,
            ));
            continue;
        }
        let l = || vec![("submitter", row.name.clone())];
        out.push(s("aerie_accountant_priority", l(), row.real_priority));
        out.push(s(
            "aerie_accountant_effective_priority",
            l(),
            row.effective_priority,
        ));
        out.push(s(
            "aerie_accountant_priority_factor",
            l(),
            row.priority_factor,
        ));
        out.push(s(
            "aerie_accountant_resources_in_use",
            l(),
            row.resources_used,
        ));
        out.push(s(
            "aerie_accountant_accumulated_usage_seconds",
            l(),
            row.accumulated_usage,
        ));
    }
    out
}

/// The ad types counted by name; any other is counted as `Other` (bounded labels).
const AD_TYPES: &[AdType] = &[
    AdType::Machine,
    AdType::Submitter,
    AdType::Scheduler,
    AdType::Negotiator,
    AdType::Master,
    AdType::Collector,
    AdType::Defrag,
];

/// Slot states and activities as HTCondor names them (`src/condor_startd.V6/ResState.cpp`,
/// `Activity` in the same file); anything else is `Other`.
const STATES: &[&str] = &[
    "Owner",
    "Unclaimed",
    "Matched",
    "Claimed",
    "Preempting",
    "Backfill",
    "Drained",
];
const ACTIVITIES: &[&str] = &[
    "Idle",
    "Benchmarking",
    "Busy",
    "Suspended",
    "Retiring",
    "Vacating",
    "Killing",
];

fn bounded(v: Option<&str>, known: &[&str]) -> String {
    match v {
        Some(v) => known
            .iter()
            .find(|k| k.eq_ignore_ascii_case(v))
            .map(|k| k.to_string())
            .unwrap_or_else(|| "Other".into()),
        None => "Other".into(),
    }
}

fn str_attr(ad: &ClassAd, name: &str) -> Option<String> {
    ad.eval_attr(name).as_str().map(str::to_string)
}

fn num_attr(ad: &ClassAd, name: &str) -> f64 {
    ad.eval_attr(name).as_number().unwrap_or(0.0)
}

/// The collector table's gauges: ads by type, slots by state and activity, cores and memory
/// by state, and jobs per submitter.
pub fn of_table(table: &AdTable) -> Vec<Sample> {
    let mut by_type: BTreeMap<String, f64> = AD_TYPES
        .iter()
        .map(|t| (t.as_str().to_string(), 0.0))
        .collect();
    // The states an admin's queries name always have a series, 0 when no slot is in them, so
    // "claimed" and "absent" read 0 rather than "no data".
    let mut slots: BTreeMap<(String, String), f64> = [
        ("Claimed", "Busy"),
        ("Unclaimed", "Idle"),
        ("Absent", "Absent"),
    ]
    .into_iter()
    .map(|(s, a)| ((s.to_string(), a.to_string()), 0.0))
    .collect();
    let zeros = || -> BTreeMap<String, f64> {
        ["Claimed", "Unclaimed"]
            .into_iter()
            .map(|s| (s.to_string(), 0.0))
            .collect()
    };
    let mut cpus = zeros();
    let mut memory = zeros();
    let mut jobs: BTreeMap<(String, &'static str), f64> = BTreeMap::new();
    let mut absent = 0.0;
    for (key, ad, is_absent) in table.iter() {
        let t = if AD_TYPES.contains(&key.ad_type) {
            key.ad_type.as_str().to_string()
        } else {
            "Other".into()
        };
        *by_type.entry(t).or_default() += 1.0;
        if is_absent {
            absent += 1.0;
        }
        match key.ad_type {
            AdType::Machine if is_absent => {
                *slots.entry(("Absent".into(), "Absent".into())).or_default() += 1.0;
            }
            AdType::Machine => {
                let state = bounded(str_attr(ad, "State").as_deref(), STATES);
                let activity = bounded(str_attr(ad, "Activity").as_deref(), ACTIVITIES);
                *cpus.entry(state.clone()).or_default() += num_attr(ad, "Cpus");
                *memory.entry(state.clone()).or_default() += num_attr(ad, "Memory");
                *slots.entry((state, activity)).or_default() += 1.0;
            }
            AdType::Submitter if !is_absent => {
                let who = str_attr(ad, "Name").unwrap_or_else(|| key.name.clone());
                for (status, attr) in [
                    ("idle", "IdleJobs"),
                    ("running", "RunningJobs"),
                    ("held", "HeldJobs"),
                ] {
                    *jobs.entry((who.clone(), status)).or_default() += num_attr(ad, attr);
                }
            }
            _ => {}
        }
    }
    let mut out: Vec<Sample> = by_type
        .into_iter()
        .map(|(t, n)| s("aerie_collector_ads", vec![("type", t)], n))
        .collect();
    out.push(s("aerie_collector_absent_ads", vec![], absent));
    out.extend(slots.into_iter().map(|((st, act), n)| {
        s(
            "aerie_pool_slots",
            vec![("state", st), ("activity", act)],
            n,
        )
    }));
    out.extend(
        cpus.into_iter()
            .map(|(st, n)| s("aerie_pool_cpus", vec![("state", st)], n)),
    );
    out.extend(
        memory
            .into_iter()
            .map(|(st, n)| s("aerie_pool_memory_megabytes", vec![("state", st)], n)),
    );
    out.extend(jobs.into_iter().map(|((who, status), n)| {
        s(
            "aerie_pool_submitter_jobs",
            vec![("submitter", who), ("status", status.to_string())],
            n,
        )
    }));
    out
}

/// Sets gauges from samples; a series published before and missing now is set to 0 (the
/// exporter cannot remove a series, and a stale value would lie: a submitter that left the
/// ledger or a slot state no slot is in any more holds nothing).
#[derive(Debug, Default)]
pub struct Publisher {
    last: BTreeSet<(&'static str, Vec<(&'static str, String)>)>,
}

impl Publisher {
    /// Publishes `samples` (one whole census: every family it covers).
    pub fn publish(&mut self, samples: &[Sample]) {
        let mut now = BTreeSet::new();
        for x in samples {
            set(x.name, &x.labels, x.value);
            now.insert((x.name, x.labels.clone()));
        }
        for (name, labels) in self.last.difference(&now) {
            set(name, labels, 0.0);
        }
        self.last = now;
    }
}

fn set(name: &'static str, labels: &[(&'static str, String)], value: f64) {
    let labels: Vec<metrics::Label> = labels
        .iter()
        .map(|(k, v)| metrics::Label::new(*k, v.clone()))
        .collect();
    metrics::gauge!(name, labels).set(value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collector::CollectorParams;

    fn value(out: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        out.iter()
            .find(|x| {
                x.name == name
                    && x.labels.len() == labels.len()
                    && x.labels
                        .iter()
                        .zip(labels)
                        .all(|(a, b)| a.0 == b.0 && a.1 == b.1)
            })
            .map(|x| x.value)
    }

    fn slot(name: &str, state: &str, activity: &str, cpus: i64, mem: i64) -> String {
        format!(
            "MyType = \"Machine\"\nName = \"{name}\"\nMachine = \"m\"\nMyAddress = \"<10.0.0.1:9618>\"\n\
             State = \"{state}\"\nActivity = \"{activity}\"\nCpus = {cpus}\nMemory = {mem}\n"
        )
    }

    #[test]
    fn the_table_census_counts_slots_by_state_and_bounds_unknown_values() {
        let mut t = AdTable::new(CollectorParams::default());
        t.advertise_text(&slot("s1@m", "Claimed", "Busy", 2, 1024), 100)
            .unwrap();
        t.advertise_text(&slot("s2@m", "Claimed", "Busy", 1, 512), 100)
            .unwrap();
        t.advertise_text(&slot("s3@m", "Unclaimed", "Idle", 4, 2048), 100)
            .unwrap();
        t.advertise_text(&slot("s4@m", "Weird", "Dancing", 1, 1), 100)
            .unwrap();
        t.advertise_text(
            "MyType = \"Submitter\"\nName = \"alice@pool\"\nScheddIpAddr = \"<10.0.0.2:9618>\"\nIdleJobs = 7\nRunningJobs = 3\n",
            100,
        )
        .unwrap();
        t.advertise_text("MyType = \"Strange\"\nName = \"x\"\n", 100)
            .unwrap();
        let out = of_table(&t);
        let v = |n, l: &[(&str, &str)]| value(&out, n, l);
        assert_eq!(
            v(
                "aerie_pool_slots",
                &[("state", "Claimed"), ("activity", "Busy")]
            ),
            Some(2.0)
        );
        assert_eq!(
            v(
                "aerie_pool_slots",
                &[("state", "Other"), ("activity", "Other")]
            ),
            Some(1.0)
        );
        assert_eq!(v("aerie_pool_cpus", &[("state", "Claimed")]), Some(3.0));
        assert_eq!(
            v("aerie_pool_memory_megabytes", &[("state", "Unclaimed")]),
            Some(2048.0)
        );
        assert_eq!(v("aerie_collector_ads", &[("type", "Machine")]), Some(4.0));
        assert_eq!(v("aerie_collector_ads", &[("type", "Other")]), Some(1.0));
        assert_eq!(
            v("aerie_collector_ads", &[("type", "Negotiator")]),
            Some(0.0)
        );
        assert_eq!(
            v(
                "aerie_pool_slots",
                &[("state", "Absent"), ("activity", "Absent")]
            ),
            Some(0.0)
        );
        let idle = [("submitter", "alice@pool"), ("status", "idle")];
        assert_eq!(v("aerie_pool_submitter_jobs", &idle), Some(7.0));
        assert_eq!(
            v(
                "aerie_pool_submitter_jobs",
                &[("submitter", "alice@pool"), ("status", "held")]
            ),
            Some(0.0)
        );
    }

    #[test]
    fn the_state_census_shows_the_ledger_and_the_last_cycle() {
        use aerie_core::accountant::AccountantCommand;
        use aerie_core::state::{Command, CycleRecord, Request};
        const END: &str = "aerie_negotiation_last_cycle_end_timestamp_seconds";
        let alice = [("submitter", "alice@pool")];
        let mut st = PoolState::default();
        let factor = AccountantCommand::SetFactor {
            name: "alice@pool".into(),
            value: 1000.0,
        };
        st.apply(&Request::new(Command::Accountant(factor)));
        let out = of_state(&st);
        assert_eq!(value(&out, END, &[]), Some(0.0), "no cycle yet");
        let factor = value(&out, "aerie_accountant_priority_factor", &alice);
        assert_eq!(factor, Some(1000.0));
        let mut rec = CycleRecord {
            term: 1,
            cycle: 1,
            start_time: 1_000,
            end_time: 1_002,
            matches: 5,
            policy_version: 3,
            ..Default::default()
        };
        rec.matched_by_submitter.insert("alice@pool".into(), 5);
        rec.groups.push(aerie_core::state::GroupQuotaRecord {
            name: "group_a".into(),
            config_quota: 20.0,
            effective_quota: 16.0,
            surplus: 4.0,
            ..Default::default()
        });
        st.apply(&Request::new(Command::RecordCycle(rec)));
        let out = of_state(&st);
        assert_eq!(value(&out, END, &[]), Some(1002.0));
        assert_eq!(
            value(&out, "aerie_negotiation_last_cycle_matches", &[]),
            Some(5.0)
        );
        let by_submitter = "aerie_negotiation_last_cycle_submitter_matches";
        assert_eq!(value(&out, by_submitter, &alice), Some(5.0));
        let group_a = [("group", "group_a")];
        let quota = |m| value(&out, m, &group_a);
        assert_eq!(
            quota("aerie_negotiation_last_cycle_group_config_quota"),
            Some(20.0)
        );
        assert_eq!(
            quota("aerie_negotiation_last_cycle_group_effective_quota"),
            Some(16.0)
        );
        assert_eq!(
            quota("aerie_negotiation_last_cycle_group_surplus"),
            Some(4.0)
        );
        let used = "aerie_negotiation_last_cycle_policy_version";
        assert_eq!(value(&out, used, &[]), Some(3.0));
        assert_eq!(
            value(&out, "aerie_negotiation_policy_version", &[]),
            Some(0.0),
            "none replicated"
        );
    }
}

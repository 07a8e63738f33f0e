//! Checkers of the real pool's jobs (`pool-real`): what the execute nodes did with the jobs
//! the access point ran on them, and what became of every job submitted, judged from the
//! nodes' own record (their JSON log lines, read as HTCondor's startd and starter would be
//! audited from their logs: src/condor_startd.V6/Claim.cpp logs each claim and release,
//! src/condor_starter.V6.1/vanilla_proc.cpp each job's start and exit) and the access point's
//! job history (`cmctl history`, HTCondor's condor_history).
//!
//! * `job-runs-once-at-a-time`: a job never runs on two slots at once: each job's run
//!   intervals (from its `job started` to its `job exited` or `job evicted`, or the end of the
//!   record) do not overlap, on one node or across nodes;
//! * `slot-runs-one-job`: a slot never runs two jobs at once (the runs on each slot do not
//!   overlap; an access point runs the jobs of a reused claim one after the other);
//! * `jobs-complete`: after healing, every submitted job left the queue completed (`JobStatus`
//!   4, `ExitCode` 0) within a bound, with its output file back in its `initialdir` holding
//!   what the job wrote; none lost; none ran to completion twice, and a job ran again only
//!   after its earlier run was evicted (which the record must show);
//! * the startds' claims (`claim accepted`, `claim released`) are turned into a claims log
//!   ([`claims_log`]) for `no-double-claim` and `no-grant-after-deposed` of
//!   [`crate::checker_pool`].
//!
//! Everything here is plain data and pure functions; the shell that gathers it is
//! [`crate::pool_real`].

use aerie_node::claims_log::Event;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// What an execute node logged about a claim or a job.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// `claim accepted`: the slot was claimed for a job on a grant of `term`.
    ClaimAccepted {
        /// The grant's Raft term.
        term: u64,
    },
    /// `claim released`: the slot's claim ended.
    ClaimReleased,
    /// `job started`: the starter started the job's process.
    JobStarted,
    /// `job exited`: the job's process exited on its own, with `exit_code` (`None`: killed by
    /// a signal).
    JobExited {
        /// The exit code.
        exit_code: Option<i64>,
    },
    /// `job evicted`: the job was vacated or killed, to be run again elsewhere.
    JobEvicted,
}

/// One line of an execute node's record.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeEvent {
    /// The execute node (its `--name`).
    pub node: String,
    /// When it was logged, Unix milliseconds.
    pub time_ms: u64,
    /// What happened.
    pub kind: Kind,
    /// The slot.
    pub slot: String,
    /// The job (CLUSTER.PROC); on a release, the claim's first job.
    pub job: String,
    /// The claim id.
    pub claim: String,
}

/// Reads the events of node `node` from its JSON log (`aerie-node --log-format json`):
/// claims accepted and released, jobs started, exited and evicted. Other lines are skipped;
/// a line that is one of these but lacks a field is reported by line number.
pub fn parse_node_log(node: &str, text: &str) -> (Vec<NodeEvent>, Vec<String>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        // The starter logs its own "job started" (pid, executable): only the execute
        // node's lines name the slot, job and claim.
        if !v["target"]
            .as_str()
            .is_some_and(|t| t.starts_with("aerie_node::execute::"))
        {
            continue;
        }
        let f = &v["fields"];
        let s = |k: &str| f[k].as_str().map(str::to_string);
        let kind = match f["message"].as_str().unwrap_or_default() {
            "claim accepted" => Kind::ClaimAccepted {
                term: f["term"].as_u64().unwrap_or(0),
            },
            "claim released" => Kind::ClaimReleased,
            "job started" => Kind::JobStarted,
            "job exited" => Kind::JobExited {
                // Logged with `?`: "Some(0)" or "None".
                exit_code: s("exit_code")
                    .and_then(|c| c.strip_prefix("Some(")?.strip_suffix(')')?.parse().ok()),
            },
            "job evicted" => Kind::JobEvicted,
            _ => continue,
        };
        let time = v["timestamp"]
            .as_str()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.timestamp_millis().max(0) as u64);
        let (Some(time_ms), Some(slot), Some(claim)) = (time, s("slot"), s("claim")) else {
            errors.push(format!(
                "{node}.log:{}: {} without a timestamp, slot or claim: {}",
                i + 1,
                f["message"],
                line.chars().take(300).collect::<String>()
            ));
            continue;
        };
        out.push(NodeEvent {
            node: node.into(),
            time_ms,
            kind,
            slot,
            job: s("job").unwrap_or_default(),
            claim,
        });
    }
    (out, errors)
}

/// The startds' claims as a claims log (`aerie_node::claims_log` lines, one node after the
/// other, each in its own order: slot names carry their node's name), for the audit of
/// `aerie-node check-claims`. The claim's job stands for the claim (a claim the access point
/// reuses for its next job stays one claim).
pub fn claims_log(events: &[NodeEvent]) -> String {
    let mut out = String::new();
    for e in events {
        let (event, term) = match e.kind {
            Kind::ClaimAccepted { term } => ("claim", Some(term)),
            Kind::ClaimReleased => ("release", None),
            _ => continue,
        };
        let line = Event {
            event: event.into(),
            slot: Some(e.slot.clone()),
            job: Some(e.job.clone()),
            term,
            time_ms: e.time_ms,
            ..Default::default()
        };
        if let Ok(l) = serde_json::to_string(&line) {
            out.push_str(&l);
            out.push('\n');
        }
    }
    out
}

/// How a run of a job ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum End {
    /// The process exited with this code (`None`: a signal).
    Exited(Option<i64>),
    /// It was evicted.
    Evicted,
    /// The record ends with it running.
    Running,
}

/// One run of a job on a slot: from its start to its end, Unix ms (`None`: still running
/// when the record ends).
#[derive(Debug, Clone, PartialEq)]
pub struct JobRun {
    /// The job.
    pub job: String,
    /// The node and slot.
    pub node: String,
    /// The slot.
    pub slot: String,
    /// When it started.
    pub start_ms: u64,
    /// When it ended.
    pub end_ms: Option<u64>,
    /// How.
    pub end: End,
}

/// Every run of every job in the nodes' events: a `job started` paired with the next
/// `job exited` or `job evicted` of the same node, claim and job.
pub fn runs(events: &[NodeEvent]) -> Vec<JobRun> {
    let mut open: BTreeMap<(String, String, String), usize> = BTreeMap::new();
    let mut out: Vec<JobRun> = Vec::new();
    for e in events {
        let key = (e.node.clone(), e.claim.clone(), e.job.clone());
        let end = match e.kind {
            Kind::JobStarted => {
                open.insert(key, out.len());
                out.push(JobRun {
                    job: e.job.clone(),
                    node: e.node.clone(),
                    slot: e.slot.clone(),
                    start_ms: e.time_ms,
                    end_ms: None,
                    end: End::Running,
                });
                continue;
            }
            Kind::JobExited { exit_code } => End::Exited(exit_code),
            Kind::JobEvicted => End::Evicted,
            _ => continue,
        };
        if let Some(i) = open.remove(&key) {
            out[i].end_ms = Some(e.time_ms);
            out[i].end = end;
        }
    }
    out
}

/// Every pair of runs with the same `key` that overlap in time (a run still going at the end
/// of the record lasts to its end), the earlier first.
fn overlapping(runs: &[JobRun], key: impl Fn(&JobRun) -> &str) -> Vec<(&JobRun, &JobRun)> {
    let mut by_key: BTreeMap<&str, Vec<&JobRun>> = BTreeMap::new();
    for r in runs {
        by_key.entry(key(r)).or_default().push(r);
    }
    let mut out = Vec::new();
    for mut rs in by_key.into_values() {
        rs.sort_by_key(|r| r.start_ms);
        for (i, a) in rs.iter().enumerate() {
            for b in &rs[i + 1..] {
                if b.start_ms < a.end_ms.unwrap_or(u64::MAX) {
                    out.push((*a, *b));
                }
            }
        }
    }
    out
}

/// `job-runs-once-at-a-time`: no two runs of one job overlap in time.
pub fn jobs_run_twice_at_once(runs: &[JobRun]) -> Vec<String> {
    overlapping(runs, |r| &r.job)
        .into_iter()
        .map(|(a, b)| {
            format!(
                "job {} ran on {} from {} ms while still running on {} (started {} ms, {})",
                a.job,
                b.slot,
                b.start_ms,
                a.slot,
                a.start_ms,
                match a.end_ms {
                    Some(e) => format!("ended {e} ms"),
                    None => "never ended".into(),
                }
            )
        })
        .collect()
}

/// `slot-runs-one-job`: no slot runs two jobs at once (a claim the access point reuses runs
/// its jobs one after the other): the runs on each slot do not overlap.
pub fn slots_running_two_jobs(runs: &[JobRun]) -> Vec<String> {
    overlapping(runs, |r| &r.slot)
        .into_iter()
        .map(|(a, b)| {
            format!(
                "slot {} started job {} at {} ms while job {} (started {} ms) still ran",
                a.slot, b.job, b.start_ms, a.job, a.start_ms
            )
        })
        .collect()
}

/// A job the harness submitted.
#[derive(Debug, Clone, PartialEq)]
pub struct Submitted {
    /// CLUSTER.PROC.
    pub job: String,
    /// The owner it was submitted for (its accounting group user).
    pub owner: String,
    /// What its output file must hold.
    pub output: String,
}

/// A job as its access point's history shows it after the run, with its output file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Finished {
    /// `JobStatus`.
    pub status: Option<i64>,
    /// `ExitCode`.
    pub exit_code: Option<i64>,
    /// `CompletionDate`, Unix seconds.
    pub completion: Option<i64>,
    /// `NumJobStarts`.
    pub starts: Option<i64>,
    /// The output file in its `initialdir`, if it is there.
    pub output: Option<String>,
}

/// Everything the real pool recorded about jobs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobsRecord {
    /// Every job submitted, in order.
    pub submitted: Vec<Submitted>,
    /// Submissions `cmctl submit` refused or failed, with its message.
    pub submit_errors: Vec<String>,
    /// The execute nodes' events, node after node, each in its log's order.
    pub events: Vec<NodeEvent>,
    /// Lines of the nodes' logs that could not be read as events.
    pub malformed: Vec<String>,
    /// The finished jobs at the end, by CLUSTER.PROC (the history's jobs, and jobs still
    /// queued with their status).
    pub finished: BTreeMap<String, Finished>,
    /// Every job must have completed by this time, Unix ms.
    pub deadline_ms: u64,
}

/// `JobStatus` of a completed job.
const COMPLETED: i64 = 4;

/// `jobs-complete`: every submitted job completed by the deadline with exit code 0 and its
/// output back; none ran to completion twice, or again after completing; a job ran again only
/// after its earlier run was evicted; the nodes ran no job nobody submitted; every
/// completion is in the nodes' record.
pub fn jobs_incomplete(rec: &JobsRecord, runs: &[JobRun]) -> Vec<String> {
    let mut v: Vec<String> = rec.submit_errors.clone();
    v.extend(rec.malformed.iter().cloned());
    let mut by_job: BTreeMap<&str, Vec<&JobRun>> = BTreeMap::new();
    for r in runs {
        by_job.entry(&r.job).or_default().push(r);
    }
    for s in &rec.submitted {
        let job = s.job.as_str();
        let Some(f) = rec.finished.get(job) else {
            v.push(format!(
                "job {job} of {} was lost: in neither queue nor history",
                s.owner
            ));
            continue;
        };
        if f.status != Some(COMPLETED) {
            v.push(format!(
                "job {job} of {} has JobStatus {:?}, not completed",
                s.owner, f.status
            ));
            continue;
        }
        if f.exit_code != Some(0) {
            v.push(format!(
                "job {job} completed with ExitCode {:?}",
                f.exit_code
            ));
        }
        match f.completion {
            Some(c) if (c.max(0) as u64) * 1000 <= rec.deadline_ms => {}
            c => v.push(format!(
                "job {job} completed at {c:?} s, after the deadline {} ms",
                rec.deadline_ms
            )),
        }
        if f.output.as_deref() != Some(s.output.as_str()) {
            v.push(format!(
                "job {job}: its output file holds {:?}, not {:?}",
                f.output, s.output
            ));
        }
        let mut rs = by_job.get(job).cloned().unwrap_or_default();
        rs.sort_by_key(|r| r.start_ms);
        let completed = rs
            .iter()
            .filter(|r| matches!(r.end, End::Exited(_)))
            .count();
        if completed == 0 {
            v.push(format!(
                "job {job} completed at its access point, but no node's record shows it exit"
            ));
        }
        if completed > 1 {
            v.push(format!(
                "job {job} ran to completion {completed} times: {}",
                rs.iter()
                    .map(|r| format!("{} {}..{:?} {:?}", r.slot, r.start_ms, r.end_ms, r.end))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        for pair in rs.windows(2) {
            if pair[0].end != End::Evicted {
                v.push(format!(
                    "job {job} ran again on {} at {} ms after its run on {} ended {:?}, not \
                     evicted",
                    pair[1].slot, pair[1].start_ms, pair[0].slot, pair[0].end
                ));
            }
        }
    }
    let submitted: BTreeSet<&str> = rec.submitted.iter().map(|s| s.job.as_str()).collect();
    for job in by_job.keys().filter(|j| !submitted.contains(*j)) {
        v.push(format!(
            "the nodes ran job {job}, which the harness did not submit"
        ));
    }
    v
}

/// What the jobs did, for `results.json`: submitted, completed, runs, evictions and jobs
/// run more than once (restarts), and how long after the later of the healing and the last
/// submission the last job completed (whole seconds: `CompletionDate`).
pub fn summary(rec: &JobsRecord, runs: &[JobRun]) -> serde_json::Value {
    let completed = rec
        .finished
        .values()
        .filter(|f| f.status == Some(COMPLETED))
        .count();
    let mut per_job: BTreeMap<&str, usize> = BTreeMap::new();
    for r in runs {
        *per_job.entry(&r.job).or_default() += 1;
    }
    let owners: BTreeSet<&str> = rec.submitted.iter().map(|s| s.owner.as_str()).collect();
    // The deadline is the bound after the later of the healing and the last submission.
    let from_ms = rec
        .deadline_ms
        .saturating_sub(COMPLETION_BOUND.as_millis() as u64);
    let last_completion = rec
        .finished
        .values()
        .filter_map(|f| f.completion)
        .max()
        .map(|c| (c.max(0) as u64 * 1000).saturating_sub(from_ms));
    serde_json::json!({
        "submitted": rec.submitted.len(),
        "owners": owners.len(),
        "completed": completed,
        "runs": runs.len(),
        "evicted": runs.iter().filter(|r| r.end == End::Evicted).count(),
        "restarted_jobs": per_job.values().filter(|n| **n > 1).count(),
        "claims": rec.events.iter().filter(|e| matches!(e.kind, Kind::ClaimAccepted { .. })).count(),
        "submit_errors": rec.submit_errors.len(),
        "last_completion_after_healing_ms": last_completion,
    })
}

/// Runs the job checkers over `rec`, adding their verdicts to `checks`.
pub fn check(rec: &JobsRecord, checks: &mut BTreeMap<&'static str, Vec<String>>) {
    let runs = runs(&rec.events);
    checks.insert("job-runs-once-at-a-time", jobs_run_twice_at_once(&runs));
    checks.insert("slot-runs-one-job", slots_running_two_jobs(&runs));
    checks.insert("jobs-complete", jobs_incomplete(rec, &runs));
}

/// How long after the run's faults were healed (and the last job submitted) every job must
/// have completed: a backlog of a few dozen 1-3 s jobs on six slots, negotiated every two
/// seconds, takes well under this.
pub const COMPLETION_BOUND: Duration = Duration::from_secs(40);

#[cfg(test)]
mod tests {
    use super::*;

    /// A `job exited` with code 0.
    fn exit0(node: &str, t: u64, slot: &str, job: &str, claim: &str) -> NodeEvent {
        ev(
            node,
            t,
            Kind::JobExited { exit_code: Some(0) },
            slot,
            job,
            claim,
        )
    }

    fn ev(node: &str, t: u64, kind: Kind, slot: &str, job: &str, claim: &str) -> NodeEvent {
        NodeEvent {
            node: node.into(),
            time_ms: t,
            kind,
            slot: slot.into(),
            job: job.into(),
            claim: claim.into(),
        }
    }

    #[test]
    fn the_nodes_json_log_lines_are_read_as_events() {
        let log = r#"aerie-node execute: listening on 10.199.0.200:7101
{"timestamp":"2026-11-26T18:00:00.250Z","level":"INFO","fields":{"message":"claim accepted","slot":"slot1@exec1","claim":"c1","job":"3.0","term":4},"target":"aerie_node::execute::slots"}
{"timestamp":"2026-11-26T18:00:00.400Z","level":"INFO","fields":{"message":"job started","pid":77,"exe":"/bin/sh"},"target":"aerie_node::starter::os_proc"}
{"timestamp":"2026-11-26T18:00:00.500Z","level":"INFO","fields":{"message":"job started","slot":"slot1@exec1","job":"3.0","claim":"c1","pid":77},"target":"aerie_node::execute::jobs"}
{"timestamp":"2026-11-26T18:00:02.500Z","level":"INFO","fields":{"message":"job exited","slot":"slot1@exec1","job":"3.0","claim":"c1","exit_code":"Some(0)","exit_signal":"None","outputs":1},"target":"aerie_node::execute::jobs"}
{"timestamp":"2026-11-26T18:00:03Z","level":"INFO","fields":{"message":"slot state change","slot":"slot1@exec1"},"target":"aerie_node::execute::jobs"}
{"timestamp":"2026-11-26T18:00:03.100Z","level":"INFO","fields":{"message":"job evicted","job":"4.0","claim":"c2"},"target":"aerie_node::execute::jobs"}
"#;
        let (events, errors) = parse_node_log("exec1", log);
        let base = 1_795_716_000_000; // 2026-11-26T18:00:00Z
        assert_eq!(
            events,
            vec![
                ev(
                    "exec1",
                    base + 250,
                    Kind::ClaimAccepted { term: 4 },
                    "slot1@exec1",
                    "3.0",
                    "c1"
                ),
                ev(
                    "exec1",
                    base + 500,
                    Kind::JobStarted,
                    "slot1@exec1",
                    "3.0",
                    "c1"
                ),
                ev(
                    "exec1",
                    base + 2500,
                    Kind::JobExited { exit_code: Some(0) },
                    "slot1@exec1",
                    "3.0",
                    "c1"
                ),
            ]
        );
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].starts_with("exec1.log:7:"), "{errors:?}");
    }

    #[test]
    fn a_job_started_on_a_second_slot_before_its_first_run_ended_ran_twice_at_once() {
        let good = [
            ev("exec1", 100, Kind::JobStarted, "slot1@exec1", "1.0", "a"),
            ev("exec1", 900, Kind::JobEvicted, "slot1@exec1", "1.0", "a"),
            ev("exec2", 1000, Kind::JobStarted, "slot2@exec2", "1.0", "b"),
            exit0("exec2", 2000, "slot2@exec2", "1.0", "b"),
            ev("exec2", 1500, Kind::JobStarted, "slot1@exec2", "2.0", "c"),
        ];
        let r = runs(&good);
        assert_eq!(r.len(), 3);
        assert_eq!(r[2].end, End::Running);
        assert!(jobs_run_twice_at_once(&r).is_empty());
        // Job 1.0 starts on exec2 while its exec1 run is still going.
        let mut bad = good.to_vec();
        bad[1].time_ms = 1200;
        let v = jobs_run_twice_at_once(&runs(&bad));
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("job 1.0 ran on slot2@exec2"), "{v:?}");
        // A run that never ended overlaps everything after it.
        let v = jobs_run_twice_at_once(&runs(&[good[0].clone(), good[2].clone()]));
        assert!(v[0].contains("never ended"), "{v:?}");
    }

    #[test]
    fn claims_become_a_claims_log_that_the_audit_judges() {
        let events = [
            ev(
                "exec1",
                1,
                Kind::ClaimAccepted { term: 3 },
                "s1@e",
                "1.0",
                "a",
            ),
            ev("exec1", 2, Kind::JobStarted, "s1@e", "1.0", "a"),
            ev(
                "exec1",
                5,
                Kind::ClaimAccepted { term: 3 },
                "s1@e",
                "2.0",
                "b",
            ),
        ];
        let log = claims_log(&events);
        assert_eq!(log.lines().count(), 2, "{log}");
        let v = crate::checker_pool::double_claims(&log);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("2.0") && v[0].contains("1.0"), "{v:?}");
        let mut ok = events.to_vec();
        ok.insert(2, ev("exec1", 4, Kind::ClaimReleased, "s1@e", "1.0", "a"));
        assert!(crate::checker_pool::double_claims(&claims_log(&ok)).is_empty());
    }

    #[test]
    fn a_slot_starting_a_job_before_its_last_one_ended_runs_two_jobs() {
        let good = [
            ev("e1", 100, Kind::JobStarted, "s1@e1", "1.0", "a"),
            exit0("e1", 900, "s1@e1", "1.0", "a"),
            // The claim reused for the next job, and another slot at the same time.
            ev("e1", 950, Kind::JobStarted, "s1@e1", "2.0", "a"),
            ev("e1", 500, Kind::JobStarted, "s2@e1", "3.0", "b"),
        ];
        assert!(slots_running_two_jobs(&runs(&good)).is_empty());
        let mut bad = good.to_vec();
        bad[2].time_ms = 800;
        let v = slots_running_two_jobs(&runs(&bad));
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("slot s1@e1 started job 2.0"), "{v:?}");
    }

    fn finished(output: &str) -> Finished {
        Finished {
            status: Some(COMPLETED),
            exit_code: Some(0),
            completion: Some(10),
            starts: Some(1),
            output: Some(output.into()),
        }
    }

    fn record() -> JobsRecord {
        let sub = |job: &str, owner: &str| Submitted {
            job: job.into(),
            owner: owner.into(),
            output: format!("job {job} of {owner}\n"),
        };
        JobsRecord {
            submitted: vec![sub("1.0", "alice"), sub("2.0", "bob")],
            events: vec![
                ev("e1", 1000, Kind::JobStarted, "s1@e1", "1.0", "a"),
                ev("e1", 2000, Kind::JobEvicted, "s1@e1", "1.0", "a"),
                ev("e2", 3000, Kind::JobStarted, "s1@e2", "1.0", "b"),
                exit0("e2", 4000, "s1@e2", "1.0", "b"),
                ev("e2", 5000, Kind::JobStarted, "s1@e2", "2.0", "b"),
                exit0("e2", 6000, "s1@e2", "2.0", "b"),
            ],
            finished: BTreeMap::from([
                ("1.0".into(), finished("job 1.0 of alice\n")),
                ("2.0".into(), finished("job 2.0 of bob\n")),
            ]),
            deadline_ms: 10_000,
            ..Default::default()
        }
    }

    fn verdict(rec: &JobsRecord) -> Vec<String> {
        jobs_incomplete(rec, &runs(&rec.events))
    }

    #[test]
    fn a_lost_failed_late_or_outputless_job_is_incomplete() {
        let good = record();
        assert!(verdict(&good).is_empty(), "{:?}", verdict(&good));
        let mut lost = good.clone();
        lost.finished.remove("2.0");
        assert!(verdict(&lost)[0].contains("job 2.0 of bob was lost"));
        let mut idle = good.clone();
        idle.finished.get_mut("2.0").unwrap().status = Some(1);
        assert!(verdict(&idle)[0].contains("JobStatus Some(1)"));
        let mut failed = good.clone();
        failed.finished.get_mut("2.0").unwrap().exit_code = Some(1);
        assert!(verdict(&failed)[0].contains("ExitCode Some(1)"));
        let mut late = good.clone();
        late.deadline_ms = 9_000;
        assert_eq!(verdict(&late).len(), 2);
        let mut no_output = good.clone();
        no_output.finished.get_mut("1.0").unwrap().output = None;
        assert!(verdict(&no_output)[0].contains("output file holds None"));
        let mut refused = good;
        refused.submit_errors.push("cmctl submit: exit 1".into());
        assert_eq!(verdict(&refused), vec!["cmctl submit: exit 1".to_string()]);
    }

    #[test]
    fn a_job_run_to_completion_twice_or_again_without_an_eviction_is_incomplete() {
        // Job 2.0 completes on e2, then runs and completes again on e1.
        let mut twice = record();
        twice.events.extend([
            ev("e1", 7000, Kind::JobStarted, "s1@e1", "2.0", "c"),
            exit0("e1", 8000, "s1@e1", "2.0", "c"),
        ]);
        let v = verdict(&twice);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].contains("job 2.0 ran to completion 2 times"), "{v:?}");
        assert!(v[1].contains("not evicted"), "{v:?}");
        // Job 1.0's first run ends with no eviction in the record, and it runs again.
        let mut unrecorded = record();
        unrecorded.events.remove(1);
        let v = verdict(&unrecorded);
        assert!(v.iter().any(|m| m.contains("job 1.0 ran again")), "{v:?}");
        // A completion the nodes never recorded, and a job nobody submitted.
        let mut ghost = record();
        ghost.events.retain(|e| e.job != "2.0");
        ghost
            .events
            .push(ev("e1", 9000, Kind::JobStarted, "s2@e1", "9.0", "z"));
        let v = verdict(&ghost);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].contains("no node's record shows it exit"), "{v:?}");
        assert!(
            v[1].contains("job 9.0, which the harness did not submit"),
            "{v:?}"
        );
    }
}

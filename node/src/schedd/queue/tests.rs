use super::*;

fn alice() -> Who {
    Who {
        name: "alice".into(),
        is_super: false,
    }
}

fn bob() -> Who {
    Who {
        name: "bob".into(),
        is_super: false,
    }
}

fn root() -> Who {
    Who {
        name: "root".into(),
        is_super: true,
    }
}

fn policy() -> SubmitPolicy {
    SubmitPolicy {
        domain: "pool.example".into(),
        group_names: vec![],
        nice_user_group: "nice-user".into(),
        only_user: None,
        assign_group: None,
    }
}

fn ad(cluster: i64, proc: i64, extra: &str) -> String {
    format!(
        "ClusterId = {cluster}\nProcId = {proc}\nCmd = \"/bin/true\"\nIwd = \"/tmp\"\n\
         RequestCpus = 1\nOwner = \"mallory\"\nJobStatus = 2\nQDate = 1\n{extra}"
    )
}

/// Submits `n` jobs as `who` at time 100 and applies the changes.
fn submitted(q: &mut Queue, who: &Who, n: i64, extra: &str) -> i64 {
    let (c, ch) = q.reserve_cluster(who);
    q.apply(&[ch]);
    let ads: Vec<String> = (0..n).map(|p| ad(c, p, extra)).collect();
    let changes = q.submit(c, &ads, who, &policy(), 100).unwrap();
    q.apply(&changes);
    q.end_reservation(c);
    c
}

fn status(q: &Queue, c: i64, p: i64) -> Status {
    Status::of(q.get(JobId::new(c, p)).unwrap())
}

fn spec(action: Action, targets: &[&str]) -> ActSpec {
    ActSpec {
        action,
        targets: targets.iter().map(|s| s.to_string()).collect(),
        constraint: None,
        reason: String::new(),
        attribute: String::new(),
        value: String::new(),
    }
}

const NOT_BUSY: &dyn Fn(JobId) -> bool = &|_| false;

#[test]
fn submit_sets_what_the_access_point_owns() {
    let mut q = Queue::new([], 1);
    let c = submitted(&mut q, &alice(), 2, "");
    assert_eq!(c, 1);
    let a = q.get(JobId::new(1, 1)).unwrap();
    assert_eq!(a.eval_attr("Owner").as_str(), Some("alice"));
    assert_eq!(a.eval_attr("User").as_str(), Some("alice@pool.example"));
    assert_eq!(a.eval_attr("JobStatus").as_int(), Some(1));
    assert_eq!(a.eval_attr("QDate").as_int(), Some(100));
    assert_eq!(a.eval_attr("EnteredCurrentStatus").as_int(), Some(100));
    assert_eq!(a.eval_attr("NumJobStarts").as_int(), Some(0));
    assert_eq!(a.eval_attr("TotalSubmitProcs").as_int(), Some(2));
    assert_eq!(q.next_cluster(), 2);
}

#[test]
fn submit_is_refused_whole_on_a_bad_ad() {
    let mut q = Queue::new([], 7);
    let (c, ch) = q.reserve_cluster(&alice());
    q.apply(&[ch]);
    assert_eq!(c, 7);
    let bad = [ad(c, 0, ""), ad(c, 0, "")];
    assert!(q
        .submit(c, &bad, &alice(), &policy(), 1)
        .unwrap_err()
        .contains("twice"));
    let bad = [ad(c, 0, ""), ad(c + 1, 1, "")];
    assert!(q
        .submit(c, &bad, &alice(), &policy(), 1)
        .unwrap_err()
        .contains("reserved cluster"));
    let bad = [ad(c, 5, "")];
    assert!(q
        .submit(c, &bad, &alice(), &policy(), 1)
        .unwrap_err()
        .contains("not in 0..1"));
    let bad = ["ClusterId = 7\nProcId = 0\nIwd = \"/tmp\"".to_string()];
    assert!(q
        .submit(c, &bad, &alice(), &policy(), 1)
        .unwrap_err()
        .contains("Cmd"));
    let bad = [ad(c, 0, "Iwd = \"rel\"")];
    assert!(q
        .submit(c, &bad, &alice(), &policy(), 1)
        .unwrap_err()
        .contains("absolute"));
    // Someone else's reservation, or none.
    assert!(q
        .submit(c, &[ad(c, 0, "")], &bob(), &policy(), 1)
        .unwrap_err()
        .contains("reserved by alice"));
    assert!(q
        .submit(99, &[ad(99, 0, "")], &alice(), &policy(), 1)
        .unwrap_err()
        .contains("not reserved"));
    assert!(q.is_empty());
}

#[test]
fn accounting_groups_are_checked_and_nice_users_get_theirs() {
    let mut q = Queue::new([], 1);
    let (c, ch) = q.reserve_cluster(&alice());
    q.apply(&[ch]);
    let mut p = policy();
    p.group_names = vec!["group_physics".into()];
    let ok = ad(c, 0, "AccountingGroup = \"group_physics.alice\"");
    assert!(q.submit(c, &[ok], &alice(), &p, 1).is_ok());
    let bad = ad(c, 0, "AccountingGroup = \"group_chem.alice\"");
    let e = q.submit(c, &[bad], &alice(), &p, 1).unwrap_err();
    assert!(e.contains("group_chem") && e.contains("GROUP_NAMES"), "{e}");
    let nice = ad(c, 0, "NiceUser = true");
    let ch = q.submit(c, &[nice], &alice(), &p, 1).unwrap();
    let Change::Put(_, a) = &ch[0] else { panic!() };
    assert_eq!(
        a.eval_attr("AccountingGroup").as_str(),
        Some("nice-user.alice")
    );
    assert_eq!(job::submitter_name(a, "d"), "nice-user.alice@d");
}

#[test]
fn a_non_root_access_point_runs_only_its_own_users_jobs() {
    let mut q = Queue::new([], 1);
    let (c, ch) = q.reserve_cluster(&bob());
    q.apply(&[ch]);
    let mut p = policy();
    p.only_user = Some("alice".into());
    let e = q.submit(c, &[ad(c, 0, "")], &bob(), &p, 1).unwrap_err();
    assert!(e.contains("only alice's jobs"), "{e}");
}

#[test]
fn only_owners_and_super_users_act_on_jobs() {
    let mut q = Queue::new([], 1);
    let c = submitted(&mut q, &alice(), 1, "");
    let out = q.act(&spec(Action::Hold, &["1.0"]), &bob(), NOT_BUSY, 200);
    assert_eq!((out.matched, out.changed), (1, 0));
    assert_eq!(out.errors, ["Job 1.0 belongs to alice"]);
    assert!(out.changes.is_empty());
    let out = q.act(&spec(Action::Hold, &["alice"]), &root(), NOT_BUSY, 200);
    assert_eq!(out.changed, 1);
    q.apply(&out.changes);
    let a = q.get(JobId::new(c, 0)).unwrap();
    assert_eq!(Status::of(a), Status::Held);
    assert_eq!(
        a.eval_attr("HoldReason").as_str(),
        Some("via condor_hold (by user root)")
    );
    assert_eq!(a.eval_attr("HoldReasonCode").as_int(), Some(1));
    assert_eq!(a.eval_attr("LastJobStatus").as_int(), Some(1));
}

#[test]
fn hold_release_remove_and_their_refusals() {
    let mut q = Queue::new([], 1);
    submitted(&mut q, &alice(), 2, "");
    let out = q.act(&spec(Action::Release, &["1.0"]), &alice(), NOT_BUSY, 1);
    assert_eq!(out.errors, ["Job 1.0 is not held"]);
    let out = q.act(&spec(Action::Hold, &["1"]), &alice(), NOT_BUSY, 2);
    assert_eq!(out.changed, 2);
    q.apply(&out.changes);
    let out = q.act(&spec(Action::Release, &["1.1"]), &alice(), NOT_BUSY, 3);
    q.apply(&out.changes);
    assert_eq!(status(&q, 1, 1), Status::Idle);
    assert!(q
        .get(JobId::new(1, 1))
        .unwrap()
        .lookup("HoldReason")
        .is_none());
    // An idle (unbound) job removed goes straight to the history.
    let out = q.act(&spec(Action::Remove, &["1.1"]), &alice(), NOT_BUSY, 4);
    assert!(matches!(out.changes[..], [Change::Finish(..)]));
    assert!(out.stop.is_empty());
    q.apply(&out.changes);
    assert!(q.get(JobId::new(1, 1)).is_none());
    assert_eq!(q.len(), 1);
}

#[test]
fn a_bound_job_is_stopped_first_and_leaves_when_its_process_is_gone() {
    let mut q = Queue::new([], 1);
    submitted(&mut q, &alice(), 1, "");
    let id = JobId::new(1, 0);
    q.apply(&q.started(id, "slot1@m", 150));
    let busy: &dyn Fn(JobId) -> bool = &|j| j == id;
    let out = q.act(&spec(Action::Remove, &["1.0"]), &alice(), busy, 160);
    assert_eq!(out.stop, [id]);
    q.apply(&out.changes);
    assert_eq!(status(&q, 1, 0), Status::Removed);
    let ch = q.evicted(id, 10.0, 170);
    assert!(matches!(&ch[..], [Change::Finish(..)]));
    q.apply(&ch);
    assert!(q.is_empty());
    // Vacate needs a bound job.
    submitted(&mut q, &alice(), 1, "");
    let out = q.act(&spec(Action::Vacate, &["2.0"]), &alice(), NOT_BUSY, 1);
    assert_eq!(out.errors, ["Job 2.0 is not running"]);
}

#[test]
fn a_job_runs_exits_and_is_recorded() {
    let mut q = Queue::new([], 1);
    submitted(&mut q, &alice(), 1, "");
    let id = JobId::new(1, 0);
    q.apply(&q.started(id, "slot1@m", 150));
    let a = q.get(id).unwrap();
    assert_eq!(Status::of(a), Status::Running);
    assert_eq!(a.eval_attr("NumJobStarts").as_int(), Some(1));
    assert_eq!(a.eval_attr("JobStartDate").as_int(), Some(150));
    assert_eq!(a.eval_attr("RemoteHost").as_str(), Some("slot1@m"));
    // Evicted: idle again, wall time kept, start counted.
    q.apply(&q.evicted(id, 5.0, 155));
    assert_eq!(status(&q, 1, 0), Status::Idle);
    let a = q.get(id).unwrap();
    assert_eq!(a.eval_attr("LastVacateTime").as_int(), Some(155));
    assert_eq!(a.eval_attr("LastRemoteHost").as_str(), Some("slot1@m"));
    q.apply(&q.started(id, "slot2@m", 160));
    let a = q.get(id).unwrap();
    assert_eq!(a.eval_attr("NumJobStarts").as_int(), Some(2));
    assert_eq!(a.eval_attr("JobStartDate").as_int(), Some(150));
    assert_eq!(a.eval_attr("JobCurrentStartDate").as_int(), Some(160));
    let ch = q.exited(
        id,
        &Exit {
            code: Some(3),
            wall: 7.0,
            ..Default::default()
        },
        167,
    );
    let [Change::Finish(_, done)] = &ch[..] else {
        panic!("{ch:?}")
    };
    assert_eq!(done.eval_attr("JobStatus").as_int(), Some(4));
    assert_eq!(done.eval_attr("ExitCode").as_int(), Some(3));
    assert_eq!(done.eval_attr("ExitBySignal").as_bool(), Some(false));
    assert_eq!(done.eval_attr("CompletionDate").as_int(), Some(167));
    assert_eq!(
        done.eval_attr("RemoteWallClockTime").as_number(),
        Some(12.0)
    );
    assert_eq!(done.eval_attr("LastRemoteHost").as_str(), Some("slot2@m"));
    assert!(done.lookup("RemoteHost").is_none());
}

#[test]
fn on_exit_policy_retries_and_holds() {
    let mut q = Queue::new([], 1);
    // What condor_submit makes of max_retries = 1.
    submitted(
        &mut q,
        &alice(),
        1,
        "OnExitRemove = (ExitBySignal == false && ExitCode == 0) || NumJobCompletions > 1",
    );
    let id = JobId::new(1, 0);
    let fail = Exit {
        code: Some(1),
        ..Default::default()
    };
    q.apply(&q.exited(id, &fail, 10));
    assert_eq!(status(&q, 1, 0), Status::Idle);
    let ch = q.exited(id, &fail, 20);
    assert!(matches!(&ch[..], [Change::Finish(..)]));
    submitted(&mut q, &alice(), 1, "OnExitHold = ExitCode != 0");
    q.apply(&q.exited(JobId::new(2, 0), &fail, 30));
    let a = q.get(JobId::new(2, 0)).unwrap();
    assert_eq!(Status::of(a), Status::Held);
    assert_eq!(a.eval_attr("HoldReasonCode").as_int(), Some(3));
    // Output files that could not be written: held, code 12.
    submitted(&mut q, &alice(), 1, "");
    let e = Exit {
        code: Some(0),
        output_error: Some("no space".into()),
        ..Default::default()
    };
    q.apply(&q.exited(JobId::new(3, 0), &e, 40));
    let a = q.get(JobId::new(3, 0)).unwrap();
    assert_eq!(a.eval_attr("HoldReasonCode").as_int(), Some(12));
}

#[test]
fn periodic_expressions_hold_release_and_remove() {
    let mut q = Queue::new([], 1);
    submitted(&mut q, &alice(), 1, "PeriodicHold = NumJobStarts >= 1");
    submitted(&mut q, &alice(), 1, "PeriodicRemove = true");
    submitted(&mut q, &alice(), 1, "PeriodicRelease = true");
    let (a, b, c) = (JobId::new(1, 0), JobId::new(2, 0), JobId::new(3, 0));
    q.apply(&q.started(a, "s", 1));
    // A user hold is not released by PeriodicRelease; a system hold is.
    q.apply(
        &q.act(&spec(Action::Hold, &["3.0"]), &alice(), NOT_BUSY, 1)
            .changes,
    );
    let busy: &dyn Fn(JobId) -> bool = &|j| j == a;
    let (ch, stop) = q.periodic(busy, 60);
    assert_eq!(stop, [a]);
    q.apply(&ch);
    assert_eq!(status(&q, 1, 0), Status::Held);
    assert!(q.get(b).is_none());
    assert_eq!(status(&q, 3, 0), Status::Held);
    q.apply(&q.hold(c, "start failed", hold_code::STARTER_ERROR, 2, 70));
    let (ch, _) = q.periodic(NOT_BUSY, 120);
    q.apply(&ch);
    assert_eq!(status(&q, 3, 0), Status::Idle);
}

#[test]
fn prio_edit_and_forget() {
    let mut q = Queue::new([], 1);
    submitted(&mut q, &alice(), 1, "");
    let mut s = spec(Action::SetPrio, &["1.0"]);
    s.value = "5".into();
    q.apply(&q.act(&s, &alice(), NOT_BUSY, 1).changes);
    assert_eq!(
        q.get(JobId::new(1, 0))
            .unwrap()
            .eval_attr("JobPrio")
            .as_int(),
        Some(5)
    );
    let mut s = spec(Action::Edit, &["1.0"]);
    s.attribute = "Foo".into();
    s.value = "1 + 2".into();
    q.apply(&q.act(&s, &alice(), NOT_BUSY, 1).changes);
    assert_eq!(
        q.get(JobId::new(1, 0)).unwrap().eval_attr("Foo").as_int(),
        Some(3)
    );
    s.attribute = "Owner".into();
    let out = q.act(&s, &alice(), NOT_BUSY, 1);
    assert!(out.errors[0].contains("may not be changed"));
    let out = q.act(&spec(Action::Forget, &["1.0"]), &alice(), NOT_BUSY, 1);
    assert_eq!(out.errors, ["Job 1.0 is not removed"]);
    // No target, no constraint: nothing.
    let out = q.act(&spec(Action::Remove, &[]), &root(), NOT_BUSY, 1);
    assert_eq!(out.matched, 0);
    assert_eq!(out.errors.len(), 1);
}

#[test]
fn constraints_pick_jobs_and_a_restart_requeues_running_ones() {
    let mut q = Queue::new([], 1);
    submitted(&mut q, &alice(), 3, "");
    q.apply(&q.started(JobId::new(1, 1), "s", 5));
    let mut s = spec(Action::Hold, &[]);
    s.constraint = Some(classad::parse_expr("ProcId >= 1").unwrap());
    let out = q.act(&s, &alice(), NOT_BUSY, 6);
    assert_eq!(out.matched, 2);
    let q2 = Queue::new(q.jobs().map(|(_, a)| a.clone()), 1);
    assert_eq!(q2.next_cluster(), 2);
    let ch = q2.requeue_after_restart(9);
    assert_eq!(ch.len(), 1);
    let Change::Put(id, a) = &ch[0] else { panic!() };
    assert_eq!(*id, JobId::new(1, 1));
    assert_eq!(Status::of(a), Status::Idle);
    assert_eq!(q.counts("d")["alice@d"], (2, 1, 0));
    let sel = select(
        q.jobs().map(|(_, a)| a),
        Some(&classad::parse_expr("JobStatus == 2").unwrap()),
        &["ProcId".into()],
        0,
    );
    assert_eq!(sel, ["ProcId = 1\n"]);
}

#[test]
fn the_idle_index_follows_every_change() {
    let mut q = Queue::new([], 1);
    submitted(&mut q, &alice(), 2, "");
    submitted(&mut q, &alice(), 1, "RequestCpus = 4");
    let sig = job::signature(q.get(JobId::new(1, 0)).unwrap());
    let idle = |q: &Queue| q.idle_of_signature(&sig).collect::<Vec<_>>();
    assert_eq!(idle(&q), [JobId::new(1, 0), JobId::new(1, 1)]);
    q.apply(&q.started(JobId::new(1, 0), "s", 1));
    assert_eq!(idle(&q), [JobId::new(1, 1)]);
    q.apply(
        &q.act(&spec(Action::Remove, &["1.1"]), &alice(), NOT_BUSY, 2)
            .changes,
    );
    assert!(idle(&q).is_empty());
    q.apply(&q.evicted(JobId::new(1, 0), 1.0, 3));
    assert_eq!(idle(&q), [JobId::new(1, 0)]);
    // Rebuilt from the store, the index is the same.
    let again = Queue::new(q.jobs().map(|(_, a)| a.clone()), 1);
    assert_eq!(idle(&again), [JobId::new(1, 0)]);
}

#[test]
fn status_counts_follow_every_change_without_a_scan() {
    let rescan = |q: &Queue| {
        let mut m = BTreeMap::new();
        for (_, a) in q.jobs() {
            *m.entry(Status::of(a)).or_insert(0u64) += 1;
        }
        m
    };
    let mut q = Queue::new([], 1);
    submitted(&mut q, &alice(), 3, "");
    let mut steps: Vec<Vec<Change>> = vec![
        q.started(JobId::new(1, 0), "s", 1),
        q.hold(JobId::new(1, 1), "why", 1, 0, 2),
    ];
    for ch in steps.drain(..) {
        q.apply(&ch);
        assert_eq!(q.status_counts(), rescan(&q));
    }
    let exit = Exit {
        code: Some(0),
        ..Exit::default()
    };
    q.apply(&q.exited(JobId::new(1, 0), &exit, 3));
    assert_eq!(q.status_counts(), rescan(&q));
    q.apply(
        &q.act(&spec(Action::Remove, &["1"]), &alice(), NOT_BUSY, 4)
            .changes,
    );
    assert_eq!(q.status_counts(), rescan(&q));
    let again = Queue::new(q.jobs().map(|(_, a)| a.clone()), 1);
    assert_eq!(again.status_counts(), rescan(&q));
    assert_eq!(q.status_counts().values().sum::<u64>(), q.len() as u64);
}

fn held(q: &Queue, c: i64) -> (Status, String, i64) {
    let a = q.get(JobId::new(c, 0)).unwrap();
    (
        Status::of(a),
        get_str(a, "HoldReason").unwrap_or_default(),
        get_int(a, "HoldReasonCode", 0),
    )
}

fn deferral_time(q: &Queue, c: i64) -> Option<i64> {
    q.get(JobId::new(c, 0))
        .unwrap()
        .eval_attr("DeferralTime")
        .as_int()
}

/// Submits one job as alice at `now`, the crontab schedules applied as the daemon does.
fn submitted_at(q: &mut Queue, extra: &str, now: i64) -> i64 {
    let (c, ch) = q.reserve_cluster(&alice());
    q.apply(&[ch]);
    let mut changes = q
        .submit(c, &[ad(c, 0, extra)], &alice(), &policy(), now)
        .unwrap();
    schedule_crontabs(&mut changes, now, &chrono::Utc);
    q.apply(&changes);
    q.end_reservation(c);
    c
}

#[test]
fn an_idle_job_that_missed_its_deferral_window_is_held_with_htcondors_reason() {
    let mut q = Queue::new([], 1);
    let c = submitted_at(&mut q, "DeferralTime = 1000\nDeferralWindow = 60", 100);
    assert!(q.deferrals(NOT_BUSY, false, 1060, &chrono::Utc).is_empty());
    // Bound to a claim (waiting for its time there): left to the claim.
    assert!(q.deferrals(&|_| true, false, 1061, &chrono::Utc).is_empty());
    let ch = q.deferrals(NOT_BUSY, false, 1061, &chrono::Utc);
    q.apply(&ch);
    assert_eq!(
        held(&q, c),
        (
            Status::Held,
            "Job missed deferred execution time".into(),
            20
        )
    );
    // Held: the pass leaves it alone.
    assert!(q.deferrals(NOT_BUSY, false, 5000, &chrono::Utc).is_empty());
}

#[test]
fn a_crontab_job_gets_its_deferral_time_at_submit_and_again_after_each_run() {
    // 2026-11-26 09:30:00 UTC; the schedule is the top of every hour.
    let now = 1_795_685_400;
    let (ten, eleven) = (now + 1800, now + 5400);
    let mut q = Queue::new([], 1);
    let c = submitted_at(
        &mut q,
        "CronMinute = \"0\"\nOnExitRemove = false\nDeferralWindow = 60",
        now,
    );
    assert_eq!(deferral_time(&q, c), Some(ten));
    let id = JobId::new(c, 0);
    q.apply(&q.started(id, "slot1@m", ten));
    let mut ch = q.exited(
        id,
        &Exit {
            code: Some(0),
            wall: 5.0,
            ..Default::default()
        },
        ten + 5,
    );
    schedule_crontabs(&mut ch, ten + 5, &chrono::Utc);
    q.apply(&ch);
    // Re-queued with the same id, for the next hour.
    assert_eq!(status(&q, c, 0), Status::Idle);
    assert_eq!(deferral_time(&q, c), Some(eleven));
    assert_eq!(get_int(q.get(id).unwrap(), "NumJobCompletions", 0), 1);
    // Never matched in its window: the pass moves it to the next run, never holds it.
    let ch = q.deferrals(NOT_BUSY, false, eleven + 61, &chrono::Utc);
    q.apply(&ch);
    assert_eq!(status(&q, c, 0), Status::Idle);
    assert_eq!(deferral_time(&q, c), Some(eleven + 3600));
    // A restart recomputes it (forced) even within its window.
    let ch = q.deferrals(NOT_BUSY, true, eleven + 3600 + 10, &chrono::Utc);
    q.apply(&ch);
    assert_eq!(deferral_time(&q, c), Some(eleven + 7200));
}

#[test]
fn a_crontab_job_with_an_invalid_schedule_is_held_and_never_runs() {
    let mut q = Queue::new([], 1);
    let c = submitted_at(&mut q, "CronMinute = \"61\"", 100);
    let (s, why, code) = held(&q, c);
    assert_eq!((s, code), (Status::Held, 25));
    assert!(
        why.starts_with(
            "Invalid cron schedule parameters: Invalid parameter value '61' for CronMinute"
        ),
        "{why}"
    );
    assert_eq!(deferral_time(&q, c), None);
}

#[test]
fn a_submit_takes_its_accounting_group_from_the_map_or_is_refused_whole() {
    let map =
        super::super::usermap::UserMap::parse("* alice group_physics\n", "groups.map").unwrap();
    let p = SubmitPolicy {
        assign_group: Some(AssignAccountingGroup {
            map,
            check_request: true,
        }),
        ..policy()
    };
    let mut q = Queue::new([], 1);
    let (c, ch) = q.reserve_cluster(&alice());
    q.apply(&[ch]);
    let changes = q.submit(c, &[ad(c, 0, "")], &alice(), &p, 100).unwrap();
    q.apply(&changes);
    let a = q.get(JobId::new(c, 0)).unwrap();
    assert_eq!(
        get_str(a, "AccountingGroup").as_deref(),
        Some("group_physics.alice")
    );
    assert_eq!(job::submitter_name(a, "d"), "group_physics.alice@d");
    let (c, ch) = q.reserve_cluster(&bob());
    q.apply(&[ch]);
    let ads = [ad(c, 0, ""), ad(c, 1, "")];
    let e = q.submit(c, &ads, &bob(), &p, 100).unwrap_err();
    assert_eq!(
        e,
        format!("job {c}.0: Submit requirement AssignAccountingGroup not met.")
    );
}

#[test]
fn a_projection_keeps_what_its_expressions_refer_to() {
    let ad = classad::parse_ad(
        "ClusterId = 3\nProcId = 1\nResidentSetSize = 5000\n\
         MemoryUsage = ((ResidentSetSize + 1023) / 1024)\nLoop = Loop + 1\nCmd = \"/bin/true\"",
    )
    .unwrap();
    let text = project(&ad, &["MemoryUsage".into(), "ProcId".into(), "Gone".into()]);
    let cut = classad::parse_ad(&text).unwrap();
    // MemoryUsage evaluates where it is read, as it does on the whole ad; Cmd is not sent.
    assert_eq!(cut.eval_attr("MemoryUsage"), ad.eval_attr("MemoryUsage"));
    assert_eq!(cut.eval_attr("ProcId").as_int(), Some(1));
    assert!(!cut.contains("Cmd") && !cut.contains("ClusterId"), "{text}");
    assert_eq!(cut.len(), 3, "{text}");
    // A self-referring attribute is kept once.
    assert_eq!(
        classad::parse_ad(&project(&ad, &["Loop".into()]))
            .unwrap()
            .len(),
        1
    );
    // No projection: the whole ad.
    assert_eq!(project(&ad, &[]), ad.to_old_syntax());
}

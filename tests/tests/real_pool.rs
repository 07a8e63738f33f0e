//! A whole pool of real processes (issue 14's end-to-end tests): one CM negotiating every
//! second, a real `aerie-node execute` with one static slot, a real `aerie-node access-point`,
//! and real jobs (`/bin/sleep`, shell scripts) submitted with `cmctl submit`. Each test checks
//! what an admin and a user would see: the slot's `State`/`Activity` in the collector, and the
//! job's `JobStatus`, `NumJobStarts` and exit in `cmctl q`/`cmctl history`.
//!
//! * preemption carried out: by a job the slot's `RANK` prefers (on a static slot and on a
//!   partitionable slot's dynamic slot, which the preempting job takes over), and by a
//!   submitter with a better user priority (`PREEMPTION_REQUIREMENTS`); the preempted job is
//!   idle again at its access point and the preempting one runs on the slot; a preemption
//!   waits out a retirement longer than the access point's ordinary call deadline;
//! * `cmctl drain`: `-graceful` lets the running job finish within its retirement time and
//!   leaves the slot Drained, `-fast` kills the job (idle again), `-cancel` undoes both;
//! * a lost access point (`kill -9`): the node drops the claim once its lease passes, kills
//!   the job and the slot is Unclaimed again;
//! * a job that requests no memory runs, held to its dynamic slot's memory;
//! * a job suspended by the policy dies with its killed execute node;
//! * an access point killed and started again ends the runs it cannot follow, and its jobs
//!   run again at once rather than after their leases.
//!
//! Jobs are submitted as root, so the node (run as root by the tests) runs them as `nobody`
//! (`STARTER_ALLOW_RUNAS_OWNER = False`, as scripts/run.sh configures it); the test's
//! directory is world-readable for that.
use aerie_tests::pool::{open_tempdir, AccessPoint, ExecuteNode};
use aerie_tests::*;
use classad::ClassAd;
use std::future::Future;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

const CM: &str = env!("CARGO_BIN_EXE_aerie-cm-node");
const NODE: &str = env!("CARGO_BIN_EXE_aerie-node-sim");
const CMCTL: &str = env!("CARGO_BIN_EXE_aerie-cmctl");
/// Every wait is bounded by this; the conditions normally hold within seconds (the longest,
/// a 38 s retirement, within 45).
const WAIT: Duration = Duration::from_secs(60);
const DOMAIN: &str = "pool.test";
const SLOT: &str = "slot1@exec1";

/// JobStatus values.
const IDLE: i64 = 1;
const RUNNING: i64 = 2;
const COMPLETED: i64 = 4;

/// The execute node's configuration: one static slot, ads sent on every change and every
/// 2 s; jobs run as `nobody`.
const EXEC_BASE: &str = "NUM_CPUS = 1\nMEMORY = 1024\nDISK = 1000000\n\
    SLOT_TYPE_0_PARTITIONABLE = false\nUPDATE_INTERVAL = 2\nUID_DOMAIN = pool.test\n\
    STARTER_ALLOW_RUNAS_OWNER = False\n";

/// One CM, one execute node (`exec1`), one access point (`ap`), in one directory.
struct Pool {
    cm: Cluster,
    cms: Vec<String>,
    exec: ExecuteNode,
    ap: AccessPoint,
    dir: tempfile::TempDir,
    /// The slot the test watches ([`SLOT`] unless the test moves to a dynamic slot).
    watched: String,
}

impl Pool {
    async fn start(cm_config: &str, exec_config: &str, ap_config: &str) -> Pool {
        let cm = Cluster::start_with_config(
            daemon_bin(CM),
            1,
            &[
                ("AERIE_NEGOTIATOR_INTERVAL", "1"),
                ("AERIE_NEGOTIATOR_CYCLE_DELAY", "1"),
            ],
            cm_config,
        )
        .expect("start aerie-cm");
        wait_leader(&cm.running(), WAIT)
            .await
            .unwrap_or_else(|e| panic!("leader: {e}\n{}", cm.log(1)));
        let cms = vec![cm.addr(1)];
        let dir = open_tempdir("aerie-real-pool-").expect("tempdir");
        let exec_config = format!("{EXEC_BASE}{exec_config}");
        let exec = ExecuteNode::start(NODE, dir.path(), "exec1", &cms, &exec_config)
            .expect("start the execute node");
        let ap = AccessPoint::start(NODE, dir.path(), "ap", DOMAIN, &cms, ap_config)
            .expect("start the access point");
        let pool = Pool {
            cm,
            cms,
            exec,
            ap,
            dir,
            watched: SLOT.to_string(),
        };
        pool.wait_slot("the slot advertised Unclaimed", |s, _| s == "Unclaimed")
            .await;
        pool
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Everything the daemons logged, for failure messages.
    fn logs(&self) -> String {
        format!(
            "--- exec1\n{}\n--- ap\n{}\n--- cm\n{}",
            tail(&self.exec.daemon.log_text()),
            tail(&self.ap.daemon.log_text()),
            tail(&self.cm.log(1)),
        )
    }

    /// Submits a job running `executable` with `arguments` and the extra submit commands
    /// `extra`; its cluster id.
    fn submit(&self, name: &str, executable: &str, arguments: &str, extra: &str) -> i64 {
        self.submit_without_memory(
            name,
            executable,
            arguments,
            &format!("request_memory = 64\n{extra}"),
        )
    }

    /// [`Pool::submit`] without a `request_memory`: the job gets condor_submit's default.
    fn submit_without_memory(
        &self,
        name: &str,
        executable: &str,
        arguments: &str,
        extra: &str,
    ) -> i64 {
        let desc = format!(
            "executable = {executable}\ntransfer_executable = false\narguments = {arguments}\n\
             initialdir = {}\noutput = {name}.out\nerror = {name}.err\n{extra}\nqueue\n",
            self.path().display()
        );
        self.ap
            .submit(CMCTL, &self.cms, self.path(), name, &desc)
            .unwrap_or_else(|e| panic!("{e:#}"))
    }

    /// The job `cluster`.0 at the access point (queue or history).
    fn job(&self, cluster: i64) -> Option<ClassAd> {
        self.ap.job(CMCTL, &self.cms, cluster)
    }

    /// Waits until job `cluster`.0 satisfies `ok`; its ad then.
    async fn wait_job(&self, cluster: i64, what: &str, ok: impl Fn(&ClassAd) -> bool) -> ClassAd {
        let r = poll(what, || async { Ok(self.job(cluster).filter(|a| ok(a))) }).await;
        r.unwrap_or_else(|e| {
            panic!(
                "job {cluster}: {e}\nnow: {:?}\n{}",
                self.job(cluster).map(|a| a.to_old_syntax()),
                self.logs()
            )
        })
    }

    /// The slot's ad in the collector.
    async fn slot(&self) -> anyhow::Result<Option<ClassAd>> {
        let c = format!("Name == \"{}\"", self.watched);
        Ok(collector_ads(&self.cms[0], "Machine", &c, &[])
            .await?
            .into_iter()
            .next())
    }

    /// Waits until the slot's (State, Activity) satisfy `ok`; its ad then.
    async fn wait_slot(&self, what: &str, ok: impl Fn(&str, &str) -> bool) -> ClassAd {
        let r = poll(what, || async {
            Ok(self.slot().await?.filter(|a| {
                let s = a.eval_attr("State");
                let act = a.eval_attr("Activity");
                ok(s.as_str().unwrap_or(""), act.as_str().unwrap_or(""))
            }))
        })
        .await;
        match r {
            Ok(ad) => ad,
            Err(e) => {
                let now = self.slot().await.ok().flatten();
                let show = |a: &str| now.as_ref().map(|ad| format!("{:?}", ad.eval_attr(a)));
                panic!(
                    "{}: {e}\nnow State {:?} Activity {:?}\n{}",
                    self.watched,
                    show("State"),
                    show("Activity"),
                    self.logs()
                )
            }
        }
    }

    /// Waits until job `cluster`.0 runs at its access point and the slot advertises it
    /// Claimed/Busy; the slot's ad then.
    async fn running(&self, cluster: i64, name: &str) -> ClassAd {
        self.wait_job(
            cluster,
            &format!("the {name} job running"),
            status_is(RUNNING),
        )
        .await;
        let what = format!("the slot busy with the {name} job");
        let busy = |s: &str, a: &str| s == "Claimed" && a == "Busy";
        let r = poll(&what, || async {
            Ok(self.slot().await?.filter(|a| {
                let st = a.eval_attr("State");
                let act = a.eval_attr("Activity");
                busy(st.as_str().unwrap_or(""), act.as_str().unwrap_or("")) && runs(a, cluster)
            }))
        })
        .await;
        r.unwrap_or_else(|e| panic!("{}: {e}\n{}", self.watched, self.logs()))
    }

    /// Submits a job (`NAME.sh`, run as nobody) that writes its pid where it may and sleeps,
    /// with the extra submit commands `extra`; once it runs: its cluster id and its pid.
    async fn pid_job(&self, name: &str, extra: &str) -> (i64, i32) {
        let dropbox = self.path().join("dropbox");
        std::fs::create_dir_all(&dropbox).expect("mkdir");
        std::fs::set_permissions(&dropbox, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let pid_file = dropbox.join(format!("{name}.pid"));
        let script = self.path().join(format!("{name}.sh"));
        let text = format!(
            "#!/bin/sh\necho $$ > {}\nexec sleep 300\n",
            pid_file.display()
        );
        std::fs::write(&script, text).expect("write the job's script");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let desc = format!(
            "executable = {name}.sh\ninitialdir = {}\noutput = {name}.out\nrequest_memory = 64\n\
             {extra}\nqueue\n",
            self.path().display()
        );
        let job = self
            .ap
            .submit(CMCTL, &self.cms, self.path(), name, &desc)
            .unwrap_or_else(|e| panic!("{e:#}"));
        self.running(job, name).await;
        let pid: i32 = poll("the job's pid file", || async {
            Ok(std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|t| t.trim().parse().ok()))
        })
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", self.logs()));
        assert!(Path::new(&format!("/proc/{pid}")).exists());
        (job, pid)
    }

    /// `cmctl ARGS` against the CM; fails the test unless it exits 0.
    fn cmctl(&self, args: &[&str]) -> String {
        let (code, out, err) = run_cmctl(CMCTL, &self.cms, args, None);
        assert_eq!(code, 0, "cmctl {args:?}: {out}{err}");
        out
    }
}

/// The last lines of a log.
fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// Polls `f` every 250 ms (each poll may start a `cmctl`) until it gives a value or [`WAIT`]
/// passes.
async fn poll<T, F, Fut>(what: &str, f: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Option<T>>>,
{
    eventually_every(what, WAIT, Duration::from_millis(250), f).await
}

fn int(ad: &ClassAd, attr: &str) -> Option<i64> {
    ad.eval_attr(attr).as_int()
}

fn status_is(want: i64) -> impl Fn(&ClassAd) -> bool {
    move |a| int(a, "JobStatus") == Some(want)
}

/// Whether the slot's ad says it runs job `cluster`.0.
fn runs(slot: &ClassAd, cluster: i64) -> bool {
    slot.eval_attr("JobId").as_str() == Some(&format!("{cluster}.0"))
}

/// The preempted job: idle again at its access point, started once, no longer on a host.
fn assert_back_to_idle(job: &ClassAd, cluster: i64) {
    assert_back_to_idle_from(job, cluster, SLOT)
}

/// [`assert_back_to_idle`] for a job that ran on `slot`.
fn assert_back_to_idle_from(job: &ClassAd, cluster: i64, slot: &str) {
    assert_eq!(int(job, "JobStatus"), Some(IDLE), "job {cluster}");
    assert_eq!(int(job, "NumJobStarts"), Some(1), "job {cluster}");
    assert!(
        !job.contains("RemoteHost"),
        "job {cluster} still has a RemoteHost"
    );
    assert_eq!(
        job.eval_attr("LastRemoteHost").as_str(),
        Some(slot),
        "job {cluster}"
    );
    assert!(
        job.contains("LastVacateTime"),
        "job {cluster}: no LastVacateTime"
    );
}

/// A job that requests no memory has condor_submit's default `RequestMemory`, its
/// executable's size in MiB (about 1). A node that held it to that died with exit code 127
/// before its C library loaded, with no output. It is held to its slot's memory instead: the
/// negotiator's default quantum, 128 MiB, for a dynamic slot (without cgroup v2, as here,
/// as its address-space limit, which `ulimit -v` shows in KiB).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_requests_no_memory_runs_held_to_its_slots_memory() {
    let p = Pool::start("", "SLOT_TYPE_0_PARTITIONABLE = true\n", "").await;
    let job = p.submit_without_memory("nomem", "/bin/sh", "\"-c 'ulimit -v'\"", "");
    let ad = p
        .wait_job(job, "the job completed", status_is(COMPLETED))
        .await;
    assert_eq!(int(&ad, "ExitCode"), Some(0), "{}", p.logs());
    assert!(int(&ad, "RequestMemory").is_some_and(|m| m < 128), "{ad:?}");
    let out = std::fs::read_to_string(p.path().join("nomem.out")).unwrap();
    assert_eq!(out.trim(), (128 * 1024).to_string(), "{}", p.logs());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_the_slot_ranks_higher_preempts_the_running_one_which_goes_back_to_idle() {
    let p = Pool::start("", "RANK = ifThenElse(TARGET.Urgent =?= true, 10, 0)\n", "").await;
    let plain = p.submit("plain", "/bin/sleep", "300", "");
    p.running(plain, "plain").await;

    let urgent = p.submit("urgent", "/bin/sleep", "300", "+Urgent = true");
    let slot = p.running(urgent, "urgent").await;
    assert_eq!(slot.eval_attr("CurrentRank").as_number(), Some(10.0));
    let plain_ad = p
        .wait_job(plain, "the plain job idle again", status_is(IDLE))
        .await;
    assert_back_to_idle(&plain_ad, plain);
    let urgent_ad = p.job(urgent).expect("the urgent job");
    assert_eq!(int(&urgent_ad, "NumJobStarts"), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preempting_claim_waits_out_a_retirement_longer_than_an_ordinary_calls_deadline() {
    // The access point's calls to a node time out after 30 s; a preempting claim is answered
    // only once the running job has retired (38 s here), so it must wait longer.
    // Early preemption: the negotiator preempts a job that still has retirement time left.
    // (Retirement counts as over once no more than the vacate time is left: 40 - 2 s.)
    let exec = "RANK = ifThenElse(TARGET.Urgent =?= true, 10, 0)\nMAXJOBRETIREMENTTIME = 40\n\
        MachineMaxVacateTime = 2\n";
    let p = Pool::start("NEGOTIATOR_CONSIDER_EARLY_PREEMPTION = True\n", exec, "").await;
    let plain = p.submit("plain", "/bin/sleep", "300", "");
    p.running(plain, "plain").await;
    let asked = Instant::now();
    let urgent = p.submit("urgent", "/bin/sleep", "300", "+Urgent = true");
    p.wait_slot("the plain job retiring", |s, a| {
        s == "Claimed" && a == "Retiring"
    })
    .await;
    p.running(urgent, "urgent").await;
    assert!(
        asked.elapsed() >= Duration::from_secs(32),
        "the plain job kept its retirement ({:?})",
        asked.elapsed()
    );
    // The one claim call waited: it neither timed out nor was it matched again.
    let ap_log = p.ap.daemon.log_text();
    assert!(!ap_log.contains("claim failed"), "{}", p.logs());
    assert_eq!(
        ap_log.matches("slot claimed job=2.0").count(),
        1,
        "{}",
        p.logs()
    );
    let plain_ad = p
        .wait_job(plain, "the plain job idle again", status_is(IDLE))
        .await;
    assert_back_to_idle(&plain_ad, plain);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_partitionable_slot_a_better_ranked_job_takes_over_the_dynamic_slot() {
    let exec =
        "SLOT_TYPE_0_PARTITIONABLE = true\nRANK = ifThenElse(TARGET.Urgent =?= true, 10, 0)\n";
    let mut p = Pool::start("", exec, "").await;
    // The one core goes to the plain job's dynamic slot; the urgent job can only preempt it.
    p.watched = "slot1_1@exec1".into();
    let plain = p.submit("plain", "/bin/sleep", "300", "request_cpus = 1");
    p.running(plain, "plain").await;
    let urgent = p.submit(
        "urgent",
        "/bin/sleep",
        "300",
        "request_cpus = 1\n+Urgent = true",
    );
    let slot = p.running(urgent, "urgent").await;
    assert_eq!(slot.eval_attr("CurrentRank").as_number(), Some(10.0));
    assert_eq!(slot.eval_attr("Cpus").as_int(), Some(1));
    let plain_ad = p
        .wait_job(plain, "the plain job idle again", status_is(IDLE))
        .await;
    assert_back_to_idle_from(&plain_ad, plain, &p.watched);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submitter_with_a_better_priority_preempts_a_nice_users_job() {
    let p = Pool::start(
        "PREEMPTION_REQUIREMENTS = RemoteUserPrio > SubmitterUserPrio * 1.2\n",
        "",
        "",
    )
    .await;
    let nice = p.submit("nice", "/bin/sleep", "300", "nice_user = true");
    let slot = p.running(nice, "nice user's").await;
    // Charged to the nice-user group (the negotiator reads AccountingGroup before RemoteUser).
    assert_eq!(
        slot.eval_attr("AccountingGroup").as_str(),
        Some(format!("nice-user.root@{DOMAIN}").as_str()),
        "{}",
        slot.to_old_syntax()
    );

    let normal = p.submit("normal", "/bin/sleep", "300", "");
    let slot = p.running(normal, "normal user's").await;
    assert_eq!(
        slot.eval_attr("RemoteUser").as_str(),
        Some(format!("root@{DOMAIN}").as_str())
    );
    assert!(
        !slot
            .eval_attr("AccountingGroup")
            .as_str()
            .is_some_and(|g| g.starts_with("nice-user.")),
        "{}",
        slot.to_old_syntax()
    );
    let nice_ad = p
        .wait_job(nice, "the nice job idle again", status_is(IDLE))
        .await;
    assert_back_to_idle(&nice_ad, nice);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_drain_lets_the_job_finish_a_fast_one_kills_it_and_cancel_undoes_both() {
    // Jobs may retire for up to a minute: a graceful drain waits for them. Retirement counts
    // as over once no more than the vacate time is left (Resource::retirementExpired), so the
    // vacate time must be shorter than that (its default is 10 minutes).
    let p = Pool::start(
        "",
        "MAXJOBRETIREMENTTIME = 60\nMachineMaxVacateTime = 2\n",
        "",
    )
    .await;
    let short = p.submit("short", "/bin/sh", "\"-c 'sleep 4; echo done'\"", "");
    p.running(short, "short").await;
    let out = p.cmctl(&["drain", "-graceful", "-reason", "test drain", "exec1"]);
    assert!(out.contains("Sent request to drain exec1"), "{out}");
    p.wait_slot("the slot retiring", |s, a| {
        s == "Claimed" && a == "Retiring"
    })
    .await;
    let done = p
        .wait_job(short, "the short job completed", status_is(COMPLETED))
        .await;
    assert_eq!(int(&done, "ExitCode"), Some(0));
    assert_eq!(int(&done, "NumJobStarts"), Some(1));
    assert_eq!(
        std::fs::read_to_string(p.path().join("short.out")).unwrap_or_default(),
        "done\n"
    );
    let drained = p.wait_slot("the slot drained", |s, _| s == "Drained").await;
    assert_eq!(
        drained.eval_attr("DrainReason").as_str(),
        Some("test drain")
    );

    p.cmctl(&["drain", "-cancel", "exec1"]);
    p.wait_slot("the slot unclaimed after the cancel", |s, a| {
        s == "Unclaimed" && a == "Idle"
    })
    .await;

    // A fast drain does not wait: the job is killed and idle again.
    let long = p.submit("long", "/bin/sleep", "300", "");
    p.running(long, "long").await;
    p.cmctl(&["drain", "-fast", "exec1"]);
    p.wait_slot("the slot drained", |s, _| s == "Drained").await;
    let idle = p
        .wait_job(long, "the long job idle again", status_is(IDLE))
        .await;
    assert_back_to_idle(&idle, long);

    // Cancelled, the slot is Unclaimed again and runs the job again.
    p.cmctl(&["drain", "-cancel", "exec1"]);
    let again = p
        .wait_job(long, "the long job running again", |a| {
            status_is(RUNNING)(a) && int(a, "NumJobStarts") == Some(2)
        })
        .await;
    assert_eq!(int(&again, "NumJobStarts"), Some(2));
}

/// An access point killed (`kill -9`) and started again on its spool cannot follow the runs
/// it had started (their events went to the process that is gone). It releases their claims
/// at the startd, and once the startd no longer knows the claim (the old run is over) the
/// job is matched again at once: well before its lease (`JobLeaseDuration`, 2400 s by
/// default) would have let it, and never while the old run still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_access_point_ends_its_old_runs_and_runs_the_jobs_again_at_once() {
    let mut p = Pool::start("", "", "").await;
    let job = p.submit("again", "/bin/sleep", "300", "");
    p.running(job, "first").await;
    p.ap.daemon.kill();
    std::fs::remove_file(&p.ap.socket).expect("remove the old socket");
    p.ap = AccessPoint::start(NODE, p.path(), "ap", DOMAIN, &p.cms, "")
        .expect("restart the access point");
    let again = p
        .wait_job(job, "the job running a second time", |a| {
            status_is(RUNNING)(a) && int(a, "NumJobStarts") == Some(2)
        })
        .await;
    assert!(!again.contains("ClaimId"), "a capability in the job ad");
    p.running(job, "second").await;
    let log = p.ap.daemon.log_text();
    let released = log.find("run from before the restart released at its startd");
    let over = log.find("run from before the restart is over");
    assert!(
        released.is_some() && released < over,
        "the old run was not ended first\n{}",
        p.logs()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_access_points_claim_is_released_when_its_lease_passes_and_its_job_killed() {
    // The access point renews every second; the job's lease is 6 s.
    let mut p = Pool::start("", "", "ALIVE_INTERVAL = 1\n").await;
    let (_, pid) = p.pid_job("lost", "job_lease_duration = 6").await;

    p.ap.daemon.kill();
    let killed_at = Instant::now();
    p.wait_slot("the slot unclaimed after the lease", |s, a| {
        s == "Unclaimed" && a == "Idle"
    })
    .await;
    // Not before the lease passed (the node heard nothing else from the access point).
    assert!(
        killed_at.elapsed() >= Duration::from_secs(4),
        "released after {:?}, before the 6 s lease",
        killed_at.elapsed()
    );
    poll("the job's process gone", || async {
        Ok((!Path::new(&format!("/proc/{pid}")).exists()).then_some(()))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", p.logs()));
    let log = p.exec.daemon.log_text();
    assert!(
        log.contains("claim lease expired"),
        "no lease expiry logged:\n{}",
        tail(&log)
    );
}

/// A job suspended by the startd policy (`SUSPEND`) when its execute node is killed
/// (`kill -9`) dies with the node. Its guard, stopped with the job's process group, could not
/// kill it, and the stopped job stayed behind for good; the guard is now continued at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_job_dies_with_its_killed_execute_node() {
    let exec = "WANT_SUSPEND = True\nSUSPEND = (time() - JobStart) > 1\nCONTINUE = False\n\
                PREEMPT = False\nKILL = False\n";
    let mut p = Pool::start("", exec, "").await;
    let (_, pid) = p.pid_job("stopped", "").await;
    p.wait_slot("the slot suspending the job", |s, a| {
        s == "Claimed" && a == "Suspended"
    })
    .await;
    let state = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|t| {
                t.rsplit(')')
                    .next()?
                    .split_whitespace()
                    .next()
                    .map(str::to_string)
            })
    };
    poll("the job stopped", || async {
        Ok((state().as_deref() == Some("T")).then_some(()))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", p.logs()));
    p.exec.daemon.kill();
    poll("the suspended job gone with its node", || async {
        Ok(matches!(state().as_deref(), None | Some("Z") | Some("X")).then_some(()))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: state {:?}\n{}", state(), p.logs()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_execute_node_stopped_with_sigterm_evicts_its_job_back_to_idle_at_once() {
    // Keep-alives every 5 minutes: only the node's Evicted event can make the job idle soon.
    let mut p = Pool::start("", "", "ALIVE_INTERVAL = 300\n").await;
    let job = p.submit("job", "/bin/sleep", "300", "");
    p.running(job, "only").await;
    let status = p.exec.daemon.terminate(Duration::from_secs(20));
    assert!(
        status.is_some_and(|s| s.success()),
        "the node did not stop cleanly within 20 s of SIGTERM ({status:?})\n{}",
        tail(&p.exec.daemon.log_text())
    );
    let idle = p.wait_job(job, "the job idle again", status_is(IDLE)).await;
    assert_back_to_idle(&idle, job);
    let log = p.exec.daemon.log_text();
    assert!(
        log.contains("the execute node is shutting down"),
        "{}",
        tail(&log)
    );
}

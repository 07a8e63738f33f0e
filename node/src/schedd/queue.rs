//! The job queue's rules, pure: what a submit queues, what each user command does to which
//! jobs and who may do it, and how a job's life (started, exited, evicted, held) changes its
//! ad. Every operation reads the queue and returns the [`Change`]s to make; the shell writes
//! them durably ([`super::store`]) and only then [`Queue::apply`]s them, so what is in memory
//! is always what is on disk. Time is passed in.
//!
//! HTCondor's equivalents: src/condor_schedd.V6/qmgmt.cpp (submit, the attributes the schedd
//! owns, `SetAttribute` protections), schedd.cpp (`abort_job`, `holdJob`, `releaseJob`), and
//! src/condor_utils/user_job_policy.cpp (periodic and on-exit policy expressions).
use super::assign_group::AssignAccountingGroup;
use super::job::{self, get_int, get_str, hold_code, JobId, Status};
use super::{crontab, deferral};
use classad::{ClassAd, Expr};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One durable change to the queue.
#[derive(Clone, Debug)]
pub enum Change {
    /// Put (insert or replace) the job's ad.
    Put(JobId, ClassAd),
    /// The job finished (completed or removed): it leaves the queue for the history, with
    /// this final ad.
    Finish(JobId, ClassAd),
    /// The next cluster id to hand out.
    NextCluster(i64),
    /// The job's process runs under this claim: kept on disk while the job runs, so that an
    /// access point restarted meanwhile can end that run ([`super::daemon::Schedd::open`]).
    RunsOn(JobId, RunningOn),
}

/// Where a job's process runs: its claim, as the access point holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunningOn {
    /// The claimed slot's name.
    pub slot: String,
    /// The claim's capability.
    pub claim_id: String,
    /// Where the slot's startd listens ("<host:port>").
    pub startd_addr: String,
}

/// Who is asking: the caller's Unix account, from the connection.
#[derive(Clone, Debug, PartialEq)]
pub struct Who {
    /// The Unix user name (the job ads' `Owner`).
    pub name: String,
    /// root or one of `QUEUE_SUPER_USERS`: may act on any job.
    pub is_super: bool,
}

/// What a submit is checked against.
#[derive(Clone, Debug, Default)]
pub struct SubmitPolicy {
    /// `UID_DOMAIN`: `User` is Owner@domain.
    pub domain: String,
    /// `GROUP_NAMES`; when not empty, a job's accounting group must be one of them.
    pub group_names: Vec<String>,
    /// `NICE_USER_ACCOUNTING_GROUP_NAME` ("nice-user"): the group nice_user jobs run in.
    pub nice_user_group: String,
    /// When the access point does not run as root it can run only its own user's jobs: that
    /// user's name.
    pub only_user: Option<String>,
    /// `use FEATURE : AssignAccountingGroup(MAP_FILE)`: every job's accounting group from
    /// the map, by its owner.
    pub assign_group: Option<AssignAccountingGroup>,
}

/// The user commands of [`Queue::act`] (schedd.proto's `Action`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// condor_rm.
    Remove,
    /// condor_hold.
    Hold,
    /// condor_release.
    Release,
    /// condor_vacate_job.
    Vacate,
    /// condor_prio.
    SetPrio,
    /// condor_qedit.
    Edit,
    /// condor_rm -forcex.
    Forget,
}

/// An action on jobs picked by targets and a constraint.
#[derive(Clone, Debug)]
pub struct ActSpec {
    /// What to do.
    pub action: Action,
    /// "CLUSTER", "CLUSTER.PROC" or a user name.
    pub targets: Vec<String>,
    /// A constraint the jobs must satisfy too.
    pub constraint: Option<Expr>,
    /// HoldReason / RemoveReason.
    pub reason: String,
    /// The attribute condor_qedit sets.
    pub attribute: String,
    /// JobPrio for SetPrio, an expression for Edit.
    pub value: String,
}

/// What [`Queue::act`] decided.
#[derive(Clone, Debug, Default)]
pub struct ActOutcome {
    /// Jobs picked.
    pub matched: u32,
    /// Jobs changed.
    pub changed: u32,
    /// Why some picked jobs were not changed, one line each.
    pub errors: Vec<String>,
    /// The changes to commit.
    pub changes: Vec<Change>,
    /// Jobs bound to a claim whose process must be stopped (their claim deactivated).
    pub stop: Vec<JobId>,
}

/// How a job's process ended (an `Exited` event).
#[derive(Clone, Debug, Default)]
pub struct Exit {
    /// Its exit code, when it exited normally.
    pub code: Option<i32>,
    /// The signal that killed it.
    pub signal: Option<i32>,
    /// Wall-clock seconds it ran.
    pub wall: f64,
    /// Output files could not be written back: the job is held with this reason.
    pub output_error: Option<String>,
}

/// The job queue in memory: every job not yet finished, and the next cluster id.
#[derive(Clone, Debug, Default)]
pub struct Queue {
    jobs: BTreeMap<JobId, ClassAd>,
    next_cluster: i64,
    /// Clusters handed out by NewCluster and not yet submitted, by the user who asked.
    reserved: HashMap<i64, String>,
    /// The idle jobs by autocluster signature, so a claim finds its next job without a scan.
    idle_by_signature: HashMap<String, BTreeSet<JobId>>,
    /// Each idle job's signature (its key in `idle_by_signature`).
    signature_of: HashMap<JobId, String>,
    /// Jobs per status, kept as changes apply: the metrics read it on every commit, and a
    /// scan of the queue there made each job event cost O(queue).
    by_status: BTreeMap<Status, u64>,
}

fn set_status(ad: &mut ClassAd, to: Status, now: i64) {
    let from = Status::of(ad);
    ad.insert_int("LastJobStatus", from as i64);
    ad.insert_int("JobStatus", to as i64);
    ad.insert_int("EnteredCurrentStatus", now);
}

fn add_wall(ad: &mut ClassAd, wall: f64) {
    let before = ad
        .eval_attr("RemoteWallClockTime")
        .as_number()
        .unwrap_or(0.0);
    ad.insert_real("RemoteWallClockTime", before + wall.max(0.0));
}

/// Moves `RemoteHost` to `LastRemoteHost` (the job no longer runs anywhere).
fn left_host(ad: &mut ClassAd) {
    if let Some(h) = ad.remove("RemoteHost") {
        ad.insert("LastRemoteHost", h);
    }
}

fn hold_ad(ad: &mut ClassAd, reason: &str, code: i64, subcode: i64, now: i64) {
    set_status(ad, Status::Held, now);
    ad.insert_str("HoldReason", reason);
    ad.insert_int("HoldReasonCode", code);
    ad.insert_int("HoldReasonSubCode", subcode);
    ad.insert_int("NumHolds", get_int(ad, "NumHolds", 0) + 1);
}

/// A policy expression of the job that evaluates to true, as its unparsed text.
fn policy_true(ad: &ClassAd, attr: &str) -> Option<String> {
    let e = ad.lookup(attr)?;
    ad.eval_expr(e).is_true().then(|| e.to_string())
}

impl Queue {
    /// A queue holding `jobs` (as read back from the store), handing out clusters from
    /// `next_cluster` on (at least 1, and above every queued cluster).
    pub fn new(jobs: impl IntoIterator<Item = ClassAd>, next_cluster: i64) -> Queue {
        let mut q = Queue {
            next_cluster: next_cluster.max(1),
            ..Default::default()
        };
        for ad in jobs {
            if let Some(id) = JobId::of(&ad) {
                q.next_cluster = q.next_cluster.max(id.cluster + 1);
                q.index(id, &ad);
                q.count(Status::of(&ad), 1);
                q.jobs.insert(id, ad);
            }
        }
        q
    }

    /// Makes committed changes visible.
    pub fn apply(&mut self, changes: &[Change]) {
        for c in changes {
            match c {
                Change::Put(id, ad) => {
                    self.unindex(*id);
                    self.index(*id, ad);
                    self.count(Status::of(ad), 1);
                    if let Some(old) = self.jobs.insert(*id, ad.clone()) {
                        self.count(Status::of(&old), -1);
                    }
                }
                Change::Finish(id, _) => {
                    self.unindex(*id);
                    if let Some(old) = self.jobs.remove(id) {
                        self.count(Status::of(&old), -1);
                    }
                }
                Change::NextCluster(n) => self.next_cluster = self.next_cluster.max(*n),
                Change::RunsOn(..) => {}
            }
        }
    }

    /// Adds `by` to the jobs counted in `status`.
    fn count(&mut self, status: Status, by: i64) {
        let n = self.by_status.entry(status).or_default();
        *n = n.saturating_add_signed(by);
        if *n == 0 {
            self.by_status.remove(&status);
        }
    }

    fn index(&mut self, id: JobId, ad: &ClassAd) {
        if Status::of(ad) == Status::Idle {
            let sig = job::signature(ad);
            self.idle_by_signature
                .entry(sig.clone())
                .or_default()
                .insert(id);
            self.signature_of.insert(id, sig);
        }
    }

    fn unindex(&mut self, id: JobId) {
        if let Some(sig) = self.signature_of.remove(&id) {
            if let Some(set) = self.idle_by_signature.get_mut(&sig) {
                set.remove(&id);
                if set.is_empty() {
                    self.idle_by_signature.remove(&sig);
                }
            }
        }
    }

    /// The idle jobs of autocluster `signature` (see [`job::signature`]), in id order.
    pub fn idle_of_signature(&self, signature: &str) -> impl Iterator<Item = JobId> + '_ {
        self.idle_by_signature
            .get(signature)
            .into_iter()
            .flat_map(|s| s.iter().copied())
    }

    /// The signatures that have idle jobs.
    pub fn idle_signatures(&self) -> impl Iterator<Item = &str> {
        self.idle_by_signature.keys().map(String::as_str)
    }

    /// The job's ad.
    pub fn get(&self, id: JobId) -> Option<&ClassAd> {
        self.jobs.get(&id)
    }

    /// Every queued job, in id order.
    pub fn jobs(&self) -> impl Iterator<Item = (JobId, &ClassAd)> {
        self.jobs.iter().map(|(k, v)| (*k, v))
    }

    /// Number of queued jobs.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// The queue is empty.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// The next cluster id NewCluster will hand out.
    pub fn next_cluster(&self) -> i64 {
        self.next_cluster
    }

    /// NewCluster: reserves the next cluster id for `who`; the change keeps the counter
    /// durable so no id is handed out twice, even across restarts.
    pub fn reserve_cluster(&mut self, who: &Who) -> (i64, Change) {
        let c = self.next_cluster;
        self.reserved.insert(c, who.name.clone());
        (c, Change::NextCluster(c + 1))
    }

    /// Submit: the changes that queue `ads` as cluster `cluster` for `who`, all or none.
    /// The access point sets what it owns (`Owner`, `User`, `QDate`, `JobStatus`,
    /// `EnteredCurrentStatus`, the counters) whatever the ads say.
    pub fn submit(
        &self,
        cluster: i64,
        ads: &[String],
        who: &Who,
        policy: &SubmitPolicy,
        now: i64,
    ) -> Result<Vec<Change>, String> {
        if let Some(me) = &policy.only_user {
            if &who.name != me && !who.is_super {
                return Err(format!(
                    "this access point runs as {me} and can run only {me}'s jobs, not {}'s",
                    who.name
                ));
            }
        }
        match self.reserved.get(&cluster) {
            Some(u) if *u == who.name => {}
            Some(u) => return Err(format!("cluster {cluster} was reserved by {u}")),
            None => {
                return Err(format!(
                    "cluster {cluster} was not reserved (ask NewCluster first; reservations \
                     do not survive an access point restart)"
                ))
            }
        }
        if self
            .jobs
            .range(JobId::new(cluster, 0)..JobId::new(cluster + 1, 0))
            .next()
            .is_some()
        {
            return Err(format!("cluster {cluster} already has jobs"));
        }
        if ads.is_empty() {
            return Err(format!("cluster {cluster}: no job ads"));
        }
        let mut procs = vec![false; ads.len()];
        let mut changes = Vec::with_capacity(ads.len());
        for (i, text) in ads.iter().enumerate() {
            let mut ad =
                job::parse_ad(text).map_err(|e| format!("job ad {i} of cluster {cluster}: {e}"))?;
            let id = JobId::of(&ad).ok_or_else(|| {
                format!("job ad {i} of cluster {cluster}: ClusterId and ProcId must be integers")
            })?;
            if id.cluster != cluster {
                return Err(format!(
                    "job ad {i}: ClusterId {} is not the reserved cluster {cluster}",
                    id.cluster
                ));
            }
            match usize::try_from(id.proc).ok().and_then(|p| procs.get_mut(p)) {
                Some(seen) if !*seen => *seen = true,
                Some(_) => return Err(format!("job ad {i}: ProcId {} appears twice", id.proc)),
                None => {
                    return Err(format!(
                        "job ad {i}: ProcId {} is not in 0..{}",
                        id.proc,
                        ads.len()
                    ))
                }
            }
            self.prepare(&mut ad, id, who, policy, now)?;
            // condor_submit sets it on the cluster when it commits: condor_q's DONE and TOTAL
            // columns read it.
            ad.insert_int("TotalSubmitProcs", ads.len() as i64);
            changes.push(Change::Put(id, ad));
        }
        Ok(changes)
    }

    /// A submitted job ad made the access point's: checked, and the owned attributes set.
    fn prepare(
        &self,
        ad: &mut ClassAd,
        id: JobId,
        who: &Who,
        policy: &SubmitPolicy,
        now: i64,
    ) -> Result<(), String> {
        if get_str(ad, "Cmd").is_none_or(|c| c.is_empty()) {
            return Err(format!("job {id}: no Cmd (executable)"));
        }
        match get_str(ad, "Iwd") {
            Some(d) if d.starts_with('/') => {}
            Some(d) => return Err(format!("job {id}: Iwd {d:?} is not an absolute path")),
            None => return Err(format!("job {id}: no Iwd (initialdir)")),
        }
        for a in job::SCHEDD_OWNED {
            if !matches!(*a, "ClusterId" | "ProcId") {
                ad.remove(a);
            }
        }
        ad.insert_str("MyType", "Job");
        ad.insert_str("TargetType", "Machine");
        ad.insert_str("Owner", &who.name);
        ad.insert_str("User", &format!("{}@{}", who.name, policy.domain));
        if let Some(assign) = &policy.assign_group {
            assign
                .apply(ad, &who.name)
                .map_err(|e| format!("job {id}: {e}"))?;
        }
        let nice = ad.eval_attr("NiceUser").as_bool() == Some(true);
        let mut group = get_str(ad, "AccountingGroup").filter(|g| !g.is_empty());
        if nice && group.is_none() {
            // condor_submit 23.9.6 puts nice_user jobs in NICE_USER_ACCOUNTING_GROUP_NAME;
            // an ad built elsewhere gets the same.
            let g = format!("{}.{}", policy.nice_user_group, who.name);
            ad.insert_str("AccountingGroup", &g);
            group = Some(g);
        }
        if let Some(g) = &group {
            let name = get_str(ad, "AcctGroup")
                .unwrap_or_else(|| g.rsplit_once('.').map_or(g.clone(), |(a, _)| a.into()));
            let known = name.eq_ignore_ascii_case(&policy.nice_user_group)
                || policy
                    .group_names
                    .iter()
                    .any(|n| n.eq_ignore_ascii_case(&name));
            if !policy.group_names.is_empty() && !known {
                return Err(format!(
                    "job {id}: accounting group {name:?} is not one of GROUP_NAMES ({})",
                    policy.group_names.join(", ")
                ));
            }
        }
        if ad.lookup("JobPrio").is_none() {
            ad.insert_int("JobPrio", 0);
        }
        ad.insert_int("QDate", now);
        ad.insert_int("JobStatus", Status::Idle as i64);
        ad.insert_int("EnteredCurrentStatus", now);
        ad.insert_int("NumJobStarts", 0);
        ad.insert_int("NumJobCompletions", 0);
        ad.insert_int("NumShadowStarts", 0);
        ad.insert_int("JobRunCount", 0);
        ad.insert_int("CompletionDate", 0);
        ad.insert_real("RemoteWallClockTime", 0.0);
        Ok(())
    }

    /// The cluster was submitted: its reservation is used up.
    pub fn end_reservation(&mut self, cluster: i64) {
        self.reserved.remove(&cluster);
    }

    fn picked(&self, spec: &ActSpec) -> Vec<JobId> {
        let wants = |id: JobId, ad: &ClassAd| {
            let by_target = spec.targets.is_empty()
                || spec.targets.iter().any(|t| {
                    if let Some(j) = JobId::parse(t) {
                        j == id
                    } else if let Ok(c) = t.trim().parse::<i64>() {
                        c == id.cluster
                    } else {
                        job::owner(ad) == t.trim()
                    }
                });
            let by_constraint = spec
                .constraint
                .as_ref()
                .is_none_or(|e| ad.eval_expr(e).is_true());
            by_target && by_constraint
        };
        if spec.targets.is_empty() && spec.constraint.is_none() {
            return Vec::new();
        }
        self.jobs
            .iter()
            .filter(|(id, ad)| wants(**id, ad))
            .map(|(id, _)| *id)
            .collect()
    }

    /// A user command on the jobs `spec` picks. `busy` says which jobs are bound to a claim
    /// (being started or running): those are stopped first (`ActOutcome::stop`), and a
    /// removed one stays in the queue as Removed until its process is gone.
    pub fn act(
        &self,
        spec: &ActSpec,
        who: &Who,
        busy: &dyn Fn(JobId) -> bool,
        now: i64,
    ) -> ActOutcome {
        let mut out = ActOutcome::default();
        if spec.targets.is_empty() && spec.constraint.is_none() {
            out.errors
                .push("no jobs named: give job ids, a user or a constraint".into());
            return out;
        }
        let edit = match spec.action {
            Action::Edit => {
                if job::SCHEDD_OWNED
                    .iter()
                    .any(|a| a.eq_ignore_ascii_case(&spec.attribute))
                    || spec.attribute.is_empty()
                {
                    out.errors
                        .push(format!("attribute {:?} may not be changed", spec.attribute));
                    return out;
                }
                match classad::parse_expr(&spec.value) {
                    Ok(e) => Some(e),
                    Err(e) => {
                        out.errors
                            .push(format!("value {:?} of {}: {e}", spec.value, spec.attribute));
                        return out;
                    }
                }
            }
            _ => None,
        };
        let prio = match spec.action {
            Action::SetPrio => match spec.value.trim().parse::<i64>() {
                Ok(p) => Some(p),
                Err(_) => {
                    out.errors
                        .push(format!("priority {:?} is not an integer", spec.value));
                    return out;
                }
            },
            _ => None,
        };
        for id in self.picked(spec) {
            out.matched += 1;
            let Some(old) = self.jobs.get(&id) else {
                continue;
            };
            let owner = job::owner(old);
            if !who.is_super && owner != who.name {
                out.errors.push(format!("Job {id} belongs to {owner}"));
                continue;
            }
            let status = Status::of(old);
            let bound = busy(id);
            let mut ad = old.clone();
            let result: Result<(), String> = match spec.action {
                Action::Remove => {
                    if status == Status::Removed {
                        Err(format!("Job {id} is already removed"))
                    } else {
                        set_status(&mut ad, Status::Removed, now);
                        let why = if spec.reason.is_empty() {
                            format!("via condor_rm (by user {})", who.name)
                        } else {
                            spec.reason.clone()
                        };
                        ad.insert_str("RemoveReason", &why);
                        Ok(())
                    }
                }
                Action::Hold => {
                    if matches!(status, Status::Held | Status::Removed | Status::Completed) {
                        Err(format!("Job {id} is {}", status.name()))
                    } else {
                        let why = if spec.reason.is_empty() {
                            format!("via condor_hold (by user {})", who.name)
                        } else {
                            spec.reason.clone()
                        };
                        hold_ad(&mut ad, &why, hold_code::USER_REQUEST, 0, now);
                        Ok(())
                    }
                }
                Action::Release => {
                    if status != Status::Held {
                        Err(format!("Job {id} is not held"))
                    } else {
                        release_ad(
                            &mut ad,
                            &format!("via condor_release (by user {})", who.name),
                            now,
                        );
                        Ok(())
                    }
                }
                Action::Vacate => {
                    if bound {
                        out.stop.push(id);
                        out.changed += 1;
                        continue;
                    }
                    Err(format!("Job {id} is not running"))
                }
                Action::SetPrio => {
                    ad.insert_int("JobPrio", prio.unwrap_or(0));
                    Ok(())
                }
                Action::Edit => {
                    if let Some(e) = &edit {
                        ad.insert(&spec.attribute, e.clone());
                    }
                    Ok(())
                }
                Action::Forget => {
                    if status != Status::Removed {
                        Err(format!("Job {id} is not removed"))
                    } else {
                        out.changes.push(Change::Finish(id, ad));
                        out.changed += 1;
                        continue;
                    }
                }
            };
            if let Err(e) = result {
                out.errors.push(e);
                continue;
            }
            out.changed += 1;
            let stops = matches!(spec.action, Action::Remove | Action::Hold) && bound;
            if stops {
                out.stop.push(id);
            }
            if spec.action == Action::Remove && !bound {
                left_host(&mut ad);
                out.changes.push(Change::Finish(id, ad));
            } else {
                out.changes.push(Change::Put(id, ad));
            }
        }
        out
    }

    fn with_job(&self, id: JobId, f: impl FnOnce(&mut ClassAd) -> Change) -> Vec<Change> {
        match self.jobs.get(&id) {
            Some(ad) => {
                let mut ad = ad.clone();
                vec![f(&mut ad)]
            }
            None => Vec::new(),
        }
    }

    /// The job's process started on `remote_host`: Running, `JobCurrentStartDate`,
    /// `JobStartDate` (the first time), `NumJobStarts` + 1, `RemoteHost`. A job no longer
    /// idle or running (held or removed meanwhile) is left as it is.
    pub fn started(&self, id: JobId, remote_host: &str, now: i64) -> Vec<Change> {
        let Some(ad) = self.jobs.get(&id) else {
            return Vec::new();
        };
        if !matches!(Status::of(ad), Status::Idle | Status::Running) {
            return Vec::new();
        }
        self.with_job(id, |ad| {
            set_status(ad, Status::Running, now);
            ad.insert_int("JobCurrentStartDate", now);
            if get_int(ad, "JobStartDate", 0) == 0 {
                ad.insert_int("JobStartDate", now);
            }
            ad.insert_int("NumJobStarts", get_int(ad, "NumJobStarts", 0) + 1);
            ad.insert_int("NumShadowStarts", get_int(ad, "NumShadowStarts", 0) + 1);
            ad.insert_int("JobRunCount", get_int(ad, "JobRunCount", 0) + 1);
            ad.insert_str("RemoteHost", remote_host);
            Change::Put(id, ad.clone())
        })
    }

    /// The job's process exited. A removed job leaves for the history; a held one stays
    /// held; otherwise `ExitCode`/`ExitBySignal`/`ExitSignal`, `RemoteWallClockTime`,
    /// `NumJobCompletions` are recorded and the job's policy decides (HTCondor's order:
    /// `OnExitHold`, then `OnExitRemove`, true when missing): held, completed (to the
    /// history with `CompletionDate`), or idle again to be retried (max_retries).
    pub fn exited(&self, id: JobId, exit: &Exit, now: i64) -> Vec<Change> {
        self.with_job(id, |ad| {
            add_wall(ad, exit.wall);
            left_host(ad);
            match Status::of(ad) {
                Status::Removed => return Change::Finish(id, ad.clone()),
                Status::Held => return Change::Put(id, ad.clone()),
                _ => {}
            }
            match (exit.code, exit.signal) {
                (_, Some(s)) => {
                    ad.insert_bool("ExitBySignal", true);
                    ad.insert_int("ExitSignal", s as i64);
                    ad.remove("ExitCode");
                }
                (c, None) => {
                    ad.insert_bool("ExitBySignal", false);
                    ad.insert_int("ExitCode", c.unwrap_or(0) as i64);
                    ad.remove("ExitSignal");
                }
            }
            ad.insert_int("NumJobCompletions", get_int(ad, "NumJobCompletions", 0) + 1);
            if let Some(e) = &exit.output_error {
                hold_ad(ad, e, hold_code::TRANSFER_OUTPUT_ERROR, 0, now);
                return Change::Put(id, ad.clone());
            }
            if let Some(e) = policy_true(ad, "OnExitHold") {
                let why =
                    format!("The job attribute OnExitHold expression '{e}' evaluated to TRUE");
                hold_ad(ad, &why, hold_code::JOB_POLICY, 0, now);
                return Change::Put(id, ad.clone());
            }
            let remove = match ad.lookup("OnExitRemove") {
                Some(e) => ad.eval_expr(e).as_bool().unwrap_or(true),
                None => true,
            };
            if remove {
                set_status(ad, Status::Completed, now);
                ad.insert_int("CompletionDate", now);
                Change::Finish(id, ad.clone())
            } else {
                set_status(ad, Status::Idle, now);
                Change::Put(id, ad.clone())
            }
        })
    }

    /// The job's process was stopped before it ended (vacated, claim lost, or stopped for
    /// rm/hold): a removed job leaves for the history, a held one stays held, a running or
    /// starting one is idle again, with `LastVacateTime` (the job-ad attribute HTCondor's
    /// shadow sets when a job is evicted from its execute machine).
    pub fn evicted(&self, id: JobId, wall: f64, now: i64) -> Vec<Change> {
        self.with_job(id, |ad| {
            add_wall(ad, wall);
            left_host(ad);
            match Status::of(ad) {
                Status::Removed => Change::Finish(id, ad.clone()),
                Status::Running => {
                    ad.insert_int("LastVacateTime", now);
                    set_status(ad, Status::Idle, now);
                    Change::Put(id, ad.clone())
                }
                _ => Change::Put(id, ad.clone()),
            }
        })
    }

    /// The access point or the execute node cannot start the job: it is held with the reason
    /// (a removed job leaves for the history instead).
    pub fn hold(&self, id: JobId, reason: &str, code: i64, subcode: i64, now: i64) -> Vec<Change> {
        self.with_job(id, |ad| {
            left_host(ad);
            if Status::of(ad) == Status::Removed {
                return Change::Finish(id, ad.clone());
            }
            hold_ad(ad, reason, code, subcode, now);
            Change::Put(id, ad.clone())
        })
    }

    /// After a restart the claims are gone: every job that was running is idle again.
    pub fn requeue_after_restart(&self, now: i64) -> Vec<Change> {
        let mut out = Vec::new();
        for (id, ad) in &self.jobs {
            let mut ad = ad.clone();
            match Status::of(&ad) {
                s if s.has_process() => {
                    left_host(&mut ad);
                    set_status(&mut ad, Status::Idle, now);
                    out.push(Change::Put(*id, ad));
                }
                Status::Removed => {
                    left_host(&mut ad);
                    out.push(Change::Finish(*id, ad));
                }
                _ => {}
            }
        }
        out
    }

    /// The periodic policy (`PeriodicHold` on idle and running jobs, `PeriodicRelease` on
    /// jobs held by the system, not by condor_hold; `PeriodicRemove` on any job not yet
    /// removed): the changes, and the bound jobs to stop.
    pub fn periodic(&self, busy: &dyn Fn(JobId) -> bool, now: i64) -> (Vec<Change>, Vec<JobId>) {
        let (mut changes, mut stop) = (Vec::new(), Vec::new());
        for (id, ad) in &self.jobs {
            let status = Status::of(ad);
            let mut ad = ad.clone();
            if status != Status::Removed {
                if let Some(e) = policy_true(&ad, "PeriodicRemove") {
                    set_status(&mut ad, Status::Removed, now);
                    ad.insert_str(
                        "RemoveReason",
                        &format!(
                            "The job attribute PeriodicRemove expression '{e}' evaluated to TRUE"
                        ),
                    );
                    if busy(*id) {
                        stop.push(*id);
                        changes.push(Change::Put(*id, ad));
                    } else {
                        changes.push(Change::Finish(*id, ad));
                    }
                    continue;
                }
            }
            match status {
                Status::Idle | Status::Running => {
                    if let Some(e) = policy_true(&ad, "PeriodicHold") {
                        let why = format!(
                            "The job attribute PeriodicHold expression '{e}' evaluated to TRUE"
                        );
                        hold_ad(&mut ad, &why, hold_code::JOB_POLICY, 0, now);
                        if busy(*id) {
                            stop.push(*id);
                        }
                        changes.push(Change::Put(*id, ad));
                    }
                }
                Status::Held if get_int(&ad, "HoldReasonCode", 0) != hold_code::USER_REQUEST => {
                    if let Some(e) = policy_true(&ad, "PeriodicRelease") {
                        let why = format!(
                            "The job attribute PeriodicRelease expression '{e}' evaluated to TRUE"
                        );
                        release_ad(&mut ad, &why, now);
                        changes.push(Change::Put(*id, ad));
                    }
                }
                _ => {}
            }
        }
        (changes, stop)
    }

    /// The deferral and crontab pass over the idle jobs not bound to a claim (`busy`), run
    /// with the periodic policy (HTCondor's schedd recomputes crontab schedules on its
    /// timer, `Scheduler::calculateCronTabSchedules`): a crontab job without a
    /// `DeferralTime`, or whose window has passed, gets its next run; one whose schedule is
    /// invalid is held; any other job whose deferral window has passed is held with
    /// HTCondor's "Job missed deferred execution time" (see [`super::deferral`]). `force`
    /// recomputes every crontab job's next run (on a restart).
    pub fn deferrals<Tz: chrono::TimeZone>(
        &self,
        busy: &dyn Fn(JobId) -> bool,
        force: bool,
        now: i64,
        tz: &Tz,
    ) -> Vec<Change> {
        let mut out = Vec::new();
        for (id, ad) in &self.jobs {
            if Status::of(ad) != Status::Idle || busy(*id) {
                continue;
            }
            let mut ad = ad.clone();
            if schedule_crontab(&mut ad, force, now, tz) {
                out.push(Change::Put(*id, ad));
            } else if deferral::missed_while_idle(&ad, now) {
                hold_missed_deferral(&mut ad, now);
                out.push(Change::Put(*id, ad));
            }
        }
        out
    }

    /// (idle, running, held) jobs per submitter name (see [`job::submitter_name`]).
    pub fn counts(&self, domain: &str) -> BTreeMap<String, (u64, u64, u64)> {
        let mut m: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
        for ad in self.jobs.values() {
            let c = m.entry(job::submitter_name(ad, domain)).or_default();
            match Status::of(ad) {
                Status::Idle => c.0 += 1,
                Status::Running => c.1 += 1,
                Status::Held => c.2 += 1,
                _ => {}
            }
        }
        m
    }

    /// Jobs per status (kept up to date by [`Queue::apply`], no scan).
    pub fn status_counts(&self) -> BTreeMap<Status, u64> {
        self.by_status.clone()
    }
}

/// Gives idle crontab job `ad` its next `DeferralTime` when [`crontab::plan`] says so
/// (`force`: it was just queued, re-queued after a run, or released), or holds it when its
/// schedule is invalid; true when the ad changed.
pub fn schedule_crontab<Tz: chrono::TimeZone>(
    ad: &mut ClassAd,
    force: bool,
    now: i64,
    tz: &Tz,
) -> bool {
    if Status::of(ad) != Status::Idle {
        return false;
    }
    match crontab::plan(ad, force, now, tz) {
        crontab::Plan::Keep => false,
        crontab::Plan::Defer(t) => {
            let changed = ad.eval_attr("DeferralTime").as_int() != Some(t);
            ad.insert_int("DeferralTime", t);
            changed
        }
        crontab::Plan::Invalid(why) => {
            hold_ad(ad, &why, crontab::INVALID_CRON_SETTINGS, 0, now);
            true
        }
    }
}

/// [`schedule_crontab`], forced, on the idle jobs `changes` put (a submit, a run's end, a
/// release).
pub fn schedule_crontabs<Tz: chrono::TimeZone>(changes: &mut [Change], now: i64, tz: &Tz) {
    for c in changes {
        if let Change::Put(_, ad) = c {
            schedule_crontab(ad, true, now, tz);
        }
    }
}

/// Holds a job that missed its deferral time, as HTCondor's schedd does when its starter
/// reports `JOB_MISSED_DEFERRAL_TIME`.
pub fn hold_missed_deferral(ad: &mut ClassAd, now: i64) {
    hold_ad(
        ad,
        deferral::MISSED_REASON,
        deferral::MISSED_DEFERRED_EXECUTION_TIME,
        0,
        now,
    );
}

fn release_ad(ad: &mut ClassAd, why: &str, now: i64) {
    set_status(ad, Status::Idle, now);
    ad.insert_str("ReleaseReason", why);
    ad.remove("HoldReason");
    ad.remove("HoldReasonCode");
    ad.remove("HoldReasonSubCode");
}

/// The ads that satisfy `constraint`, cut to `projection` (all attributes when empty).
pub fn select<'a>(
    ads: impl Iterator<Item = &'a ClassAd>,
    constraint: Option<&Expr>,
    projection: &[String],
    limit: usize,
) -> Vec<String> {
    ads.filter(|ad| constraint.is_none_or(|e| ad.eval_expr(e).is_true()))
        .take(if limit == 0 { usize::MAX } else { limit })
        .map(|ad| project(ad, projection))
        .collect()
}

/// The ad cut to `projection` (whole when empty), in old syntax. An attribute kept whose
/// value is an expression brings along the attributes of the ad it refers to (transitively),
/// so it evaluates at the caller as it would here (`MemoryUsage` is an expression of
/// `ResidentSetSize` in HTCondor's job ads). condor_q asks for the few attributes its view
/// prints (src/condor_q.V6/queue.cpp builds its projection from the print format), so a
/// query over a large queue sends a few attributes per job, not the whole ads.
pub fn project(ad: &ClassAd, projection: &[String]) -> String {
    if projection.is_empty() {
        return ad.to_old_syntax();
    }
    let mut out = ClassAd::with_capacity(projection.len());
    let mut wanted: Vec<String> = projection.to_vec();
    while let Some(a) = wanted.pop() {
        if out.contains(&a) {
            continue;
        }
        if let Some(e) = ad.lookup(&a) {
            if !matches!(e, Expr::Lit(_)) {
                let refs = e.references().internal;
                wanted.extend(refs.into_iter().filter(|r| !out.contains(r)));
            }
            out.insert(&a, e.clone());
        }
    }
    out.to_old_syntax()
}

#[cfg(test)]
mod tests;

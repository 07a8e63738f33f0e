//! The access point at run time: the queue, its store and the claims behind one lock, and
//! the user commands on them (NewCluster, Submit, Query, Act) with the changes committed
//! durably before they are answered. The claim's life (grants, claiming, activating, job
//! events, keep-alives) is in [`super::shadow`]; the gRPC services in [`super::service`].
use super::assign_group;
use super::claims::Claims;
use super::job::{JobId, Status};
use super::metrics;
use super::query;
use super::queue::{self, ActOutcome, ActSpec, Change, Queue, RunningOn, SubmitPolicy, Who};
use super::store::Store;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;

/// The access point's fixed settings, from its arguments and configuration.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The access point's name (the Scheduler ad's `Name`).
    pub name: String,
    /// `UID_DOMAIN`.
    pub domain: String,
    /// `QUEUE_SUPER_USERS`: may act on any job (root always may).
    pub super_users: Vec<String>,
    /// What submits are checked against.
    pub policy: SubmitPolicy,
    /// `CLAIM_WORKLIFE`, seconds (negative: forever).
    pub claim_worklife: i64,
    /// `ALIVE_INTERVAL`: how often claims are renewed.
    pub alive_interval: Duration,
    /// `PERIODIC_EXPR_INTERVAL`: how often the periodic policy runs.
    pub periodic_interval: Duration,
    /// "<host:port>" of the TCP services (the ads' `MyAddress`, `ScheddIpAddr`).
    pub my_address: String,
}

/// Everything behind the lock.
pub struct Inner {
    /// The queue in memory.
    pub queue: Queue,
    /// The queue on disk.
    pub store: Store,
    /// Claims and grants in flight.
    pub claims: Claims,
    /// Submitter names advertised last (to invalidate the ones that are gone).
    pub advertised: BTreeSet<String>,
    /// Idle jobs' resource-request keys between cycles (a job changed is forgotten).
    pub request_cache: aerie_core::negotiator::requests::RequestCache,
}

impl Inner {
    /// Writes `changes` synced, then applies them in memory.
    pub fn commit(&mut self, changes: &[Change]) -> anyhow::Result<()> {
        self.store.commit(changes)?;
        for c in changes {
            if let Change::Put(id, _) | Change::Finish(id, _) = c {
                self.request_cache.forget(id.cluster, id.proc);
            }
        }
        self.queue.apply(changes);
        metrics::set_jobs(&self.queue.status_counts());
        Ok(())
    }
}

/// The running access point, shared by its services and tasks.
pub struct Schedd {
    inner: Mutex<Inner>,
    /// The fixed settings.
    pub settings: Settings,
    /// Woken when the ads change.
    pub changed: Notify,
    /// The runs the access point had started before it restarted, still to be ended at their
    /// startds ([`Schedd::end_orphaned_runs`]).
    orphans: Mutex<Vec<(JobId, RunningOn)>>,
}

/// Unix seconds now.
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// The caller with uid `uid`: its user name, and whether it may act on any job (root, or
/// named in `super_users`).
pub fn who_is(uid: u32, super_users: &[String]) -> Result<Who, String> {
    let name = match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(u)) => u.name,
        Ok(None) => return Err(format!("uid {uid} has no user name on the access point")),
        Err(e) => return Err(format!("looking up uid {uid}: {e}")),
    };
    Ok(Who {
        is_super: uid == 0 || super_users.contains(&name),
        name,
    })
}

impl Schedd {
    /// Opens the queue in `spool`; jobs that were running go back to idle (their claims did
    /// not survive the restart: [`Schedd::end_orphaned_runs`] ends their runs).
    pub fn open(spool: &Path, settings: Settings) -> anyhow::Result<Arc<Schedd>> {
        let (store, loaded) = Store::open(spool)?;
        let orphans = loaded.runs;
        let queue = Queue::new(loaded.jobs, loaded.next_cluster);
        let mut inner = Inner {
            queue,
            store,
            claims: Claims::default(),
            advertised: BTreeSet::new(),
            request_cache: Default::default(),
        };
        let now = now_secs();
        let requeue = inner.queue.requeue_after_restart(now);
        if !requeue.is_empty() {
            // Their old claims may still run them until the jobs' leases pass (no more
            // keep-alives come): they are matched again only after that.
            let lease = settings.alive_interval * super::shadow::MAX_MISSED_ALIVES;
            let default_lease = lease.as_secs() as i64;
            for c in &requeue {
                if let Change::Put(id, ad) = c {
                    let until = now.saturating_add(super::claims::job_lease(ad, default_lease));
                    inner.claims.hold_back([*id], until);
                }
            }
            tracing::info!(jobs = requeue.len(), default_lease_s = default_lease, "jobs that were running are idle again after the restart, matched once their old runs are ended or their leases (JobLeaseDuration) pass");
        }
        inner.commit(&requeue)?;
        // Every crontab schedule is recomputed on a restart, as HTCondor's schedd does.
        let schedules = inner.queue.deferrals(&|_| false, true, now, &chrono::Local);
        inner.commit(&schedules)?;
        tracing::info!(jobs = inner.queue.len(), next_cluster = inner.queue.next_cluster(), spool = %spool.display(), "job queue open");
        Ok(Arc::new(Schedd {
            inner: Mutex::new(inner),
            settings,
            changed: Notify::new(),
            orphans: Mutex::new(orphans),
        }))
    }

    /// The runs started before the restart, to be ended (taken once).
    pub fn take_orphans(&self) -> Vec<(JobId, RunningOn)> {
        std::mem::take(&mut *self.orphans.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The state, even if a thread panicked holding it.
    pub fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Commits under the lock and tells the advertiser.
    pub fn commit(&self, st: &mut Inner, changes: &[Change]) -> anyhow::Result<()> {
        st.commit(changes)?;
        if !changes.is_empty() {
            self.changed.notify_one();
        }
        Ok(())
    }

    /// NewCluster: a fresh cluster id, durable before it is handed out.
    pub fn new_cluster(&self, who: &Who) -> anyhow::Result<i64> {
        let mut st = self.lock();
        let (c, ch) = st.queue.reserve_cluster(who);
        self.commit(&mut st, &[ch])?;
        Ok(c)
    }

    /// Submit: queues the cluster's jobs, all or none, synced before it returns.
    pub fn submit(&self, who: &Who, cluster: i64, ads: &[String]) -> Result<u32, SubmitError> {
        let mut st = self.lock();
        let now = now_secs();
        let mut changes = st
            .queue
            .submit(cluster, ads, who, &self.settings.policy, now)
            .map_err(SubmitError::Refused)?;
        queue::schedule_crontabs(&mut changes, now, &chrono::Local);
        self.commit(&mut st, &changes)
            .map_err(SubmitError::Storage)?;
        st.queue.end_reservation(cluster);
        metrics::submitted(changes.len());
        tracing::info!(cluster, jobs = changes.len(), owner = %who.name, "submitted");
        Ok(changes.len() as u32)
    }

    /// Query: the queue's or the history's jobs, as ads or (`rows`, with a projection) as
    /// rows ([`super::query::answer`]), with the queue's jobs per status when asked.
    pub fn query(
        &self,
        r: &aerie_proto::schedd::QueryRequest,
    ) -> Result<aerie_proto::schedd::QueryReply, String> {
        let (constraint, projection, history, limit, rows) =
            (&r.constraint, &r.projection, r.history, r.limit, r.rows);
        let constraint = if constraint.trim().is_empty() {
            None
        } else {
            Some(
                classad::parse_expr(constraint)
                    .map_err(|e| format!("constraint {constraint:?}: {e}"))?,
            )
        };
        let st = self.lock();
        if history {
            let ads = st
                .store
                .history(constraint.as_ref(), limit as usize)
                .map_err(|e| format!("{e:#}"))?;
            drop(st);
            Ok(query::answer(ads.iter(), None, projection, 0, rows))
        } else {
            let mut reply = query::answer(
                st.queue.jobs().map(|(_, a)| a),
                constraint.as_ref(),
                projection,
                limit as usize,
                rows,
            );
            if r.count_queue {
                reply.queue_counts = Some(query::status_counts(&st.queue.status_counts()));
            }
            Ok(reply)
        }
    }

    /// Act: changes the jobs, committed; the bound jobs to stop are returned for the caller
    /// to deactivate (see [`super::shadow`]).
    pub fn act(&self, who: &Who, spec: &ActSpec) -> anyhow::Result<ActOutcome> {
        if spec.action == queue::Action::Edit && self.settings.policy.assign_group.is_some() {
            if let Some(a) = assign_group::IMMUTABLE
                .iter()
                .find(|a| a.eq_ignore_ascii_case(&spec.attribute))
            {
                // IMMUTABLE_JOB_ATTRS of the AssignAccountingGroup feature.
                return Ok(ActOutcome {
                    errors: vec![format!("attribute {a:?} may not be changed")],
                    ..Default::default()
                });
            }
        }
        let mut st = self.lock();
        let now = now_secs();
        let mut out = {
            let claims = &st.claims;
            st.queue.act(spec, who, &|id| claims.busy(id), now)
        };
        if spec.action == queue::Action::Release {
            // A released crontab job gets its next run (HTCondor recomputes it on release).
            queue::schedule_crontabs(&mut out.changes, now, &chrono::Local);
        }
        self.commit(&mut st, &out.changes)?;
        let held = out
            .changes
            .iter()
            .filter(|c| matches!(c, Change::Put(_, a) if Status::of(a) == Status::Held))
            .count();
        for _ in 0..held {
            metrics::job_held();
        }
        Ok(out)
    }

    /// The ad of job `id`, if queued.
    pub fn job_ad(&self, id: JobId) -> Option<classad::ClassAd> {
        self.lock().queue.get(id).cloned()
    }
}

/// Why a submit failed.
#[derive(Debug)]
pub enum SubmitError {
    /// The ads or the caller were refused (nothing queued).
    Refused(String),
    /// The queue could not be written (nothing queued).
    Storage(anyhow::Error),
}

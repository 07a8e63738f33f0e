//! The access point core (the schedd's part): the job queue, the submitters its jobs run as,
//! and the checks a grant must pass before the access point claims a slot for it. Pure (time
//! is passed in, random choices come from a seeded generator) so it is unit-tested directly;
//! [`crate::sim`] drives it from gRPC.
use crate::args::LimitShare;
use crate::startd::Resources;
use classad::ClassAd;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

/// A submitter: the identity HTCondor's negotiator allocates to and the accountant charges,
/// one user, in an accounting group or not. The access point advertises one `Submitter` ad
/// for each.
#[derive(Clone, Debug, PartialEq)]
pub struct Submitter {
    /// The user's name without domain: the job ad's `Owner` (and `AcctGroupUser`).
    pub user: String,
    /// The accounting group the user's jobs carry (the job ad's `AcctGroup`), if any.
    pub group: Option<String>,
    /// The name the negotiator uses: user@domain or group.user@domain.
    pub name: String,
}

/// A job's id in the queue: (`ClusterId`, `ProcId`), printed CLUSTER.PROC.
pub type JobId = (u64, u64);

/// Formats a job id as HTCondor does ("12.0").
pub fn job_id_string(id: JobId) -> String {
    format!("{}.{}", id.0, id.1)
}

/// Parses "CLUSTER.PROC".
pub fn parse_job_id(s: &str) -> Option<JobId> {
    let (c, p) = s.trim().split_once('.')?;
    Some((c.parse().ok()?, p.parse().ok()?))
}

/// Where a job is in its life at this access point. Finished jobs leave the queue, so there
/// is no completed state.
#[derive(Clone, Debug, PartialEq)]
pub enum JobState {
    /// Waiting for a match (`JobStatus = 1`); offered to the negotiator by `GetRequests`.
    Idle,
    /// A grant for it is being acted on (the claim is in flight).
    Claiming,
    /// Claimed `slot` with `claim_id` at the startd at `startd_addr`.
    Running {
        /// The slot the job runs in (a dynamic slot's name when carved).
        slot: String,
        /// The claim's capability, which releases the slot when the job is done.
        claim_id: String,
        /// The startd's address as the grant gave it (the slot ad's `MyAddress`,
        /// "<host:port>"; empty means this process).
        startd_addr: String,
    },
}

/// One job in the access point's queue (one proc of HTCondor's job queue; a cluster's procs
/// share their queue time, memory request and limits, as one `queue N` does).
#[derive(Clone, Debug)]
pub struct Job {
    /// (`ClusterId`, `ProcId`).
    pub id: JobId,
    /// The submitter the job runs as: an index into [`AccessPoint::submitters`].
    pub submitter: usize,
    /// `RequestCpus` (always 1), `RequestMemory` (MiB: 512, 1024, 1536 or 2048, drawn at
    /// submit) and `RequestDisk` (KiB, always 1024).
    pub request: Resources,
    /// The job's `ConcurrencyLimits`: comma-separated names of the `--limits` it drew, or
    /// `None` for none.
    pub limits: Option<String>,
    /// When the job was queued, in Unix seconds (the job ad's `QDate`).
    pub qdate: i64,
    /// Idle, being claimed or running.
    pub state: JobState,
    /// The job's ad ([`AccessPoint::job_classad`]), made once at submit: its fields never
    /// change.
    pub ad: std::sync::Arc<ClassAd>,
}

/// What the access point needs to claim a slot for an accepted grant: taken from the job and
/// its submitter when the grant is begun, so the claim itself runs without the lock.
#[derive(Clone, Debug)]
pub struct GrantTicket {
    /// The granted job.
    pub job: JobId,
    /// The job's submitter name (user@domain or group.user@domain), as its Submitter ad
    /// says; sent in the claim request as the submitter the job negotiated as.
    pub submitter: String,
    /// The job's `User` (user@domain).
    pub user: String,
    /// The job has an accounting group.
    pub grouped: bool,
    /// The job's `ConcurrencyLimits`, if any.
    pub limits: Option<String>,
    /// What the job requests; the default carve from a partitionable slot when the grant
    /// names none.
    pub request: Resources,
    /// The job ad (old syntax), sent to the startd with the claim.
    pub job_ad: String,
}

/// The access point: HTCondor's schedd reduced to what negotiation needs. It holds the job
/// queue of its submitters, answers the leader's requests with the idle job ads, and checks
/// each grant (the job is still idle, the grant's term is not older than one acted on)
/// before the slot is claimed for it.
pub struct AccessPoint {
    domain: String,
    submitters: Vec<Submitter>,
    jobs: BTreeMap<JobId, Job>,
    next_cluster: u64,
    next_submitter: usize,
    /// Newest term this access point accepted a grant from.
    newest_term: u64,
    /// (idle, running) per submitter, kept up to date as jobs change state (jobs being
    /// claimed count as idle), so ads do not rescan the queue.
    counts: Vec<(u64, u64)>,
    limits: Vec<LimitShare>,
    rng: StdRng,
    /// Procs per cluster ([`AccessPoint::with_cluster_size`]).
    cluster_size: u64,
    /// Each submitter's cluster still taking procs.
    open: Vec<Option<OpenCluster>>,
}

/// A submitter's cluster that new jobs join until it holds `cluster_size` procs.
#[derive(Clone, Debug)]
struct OpenCluster {
    id: u64,
    next_proc: u64,
    qdate: i64,
    memory: f64,
    limits: Option<String>,
}

impl AccessPoint {
    /// Submitters for `users`; with `groups`, user i is in group i mod len.
    pub fn new(
        users: &[String],
        groups: &[String],
        domain: &str,
        limits: Vec<LimitShare>,
        seed: u64,
    ) -> AccessPoint {
        let submitters = users
            .iter()
            .enumerate()
            .map(|(i, u)| {
                let group = (!groups.is_empty()).then(|| groups[i % groups.len()].clone());
                let name = match &group {
                    Some(g) => format!("{g}.{u}@{domain}"),
                    None => format!("{u}@{domain}"),
                };
                Submitter {
                    user: u.clone(),
                    group,
                    name,
                }
            })
            .collect();
        AccessPoint {
            domain: domain.to_string(),
            counts: vec![(0, 0); users.len()],
            submitters,
            jobs: BTreeMap::new(),
            next_cluster: 1,
            next_submitter: 0,
            newest_term: 0,
            limits,
            rng: StdRng::seed_from_u64(seed ^ 0xacce55),
            cluster_size: 1,
            open: vec![None; users.len()],
        }
    }

    /// Jobs join their submitter's open cluster until it holds `n` procs (at least 1), as
    /// users submit `queue N`: a real queue is a few large clusters, not one cluster per job,
    /// and the access point's resource requests group jobs by cluster.
    pub fn with_cluster_size(mut self, n: u64) -> Self {
        self.cluster_size = n.max(1);
        self
    }

    /// The submitters, in the order of the `users` given to [`AccessPoint::new`]; a
    /// submitter's index here is its index in [`counts`](Self::counts) and [`Job::submitter`].
    pub fn submitters(&self) -> &[Submitter] {
        &self.submitters
    }

    /// Every job in the queue (idle, being claimed or running), in job id order.
    pub fn jobs(&self) -> impl Iterator<Item = &Job> {
        self.jobs.values()
    }

    /// The queued job `id`, if it is still in the queue.
    pub fn job(&self, id: JobId) -> Option<&Job> {
        self.jobs.get(&id)
    }

    /// The newest Raft term of a grant this access point has acted on (claimed a slot for);
    /// grants from older terms are refused. 0 before the first.
    pub fn newest_term(&self) -> u64 {
        self.newest_term
    }

    /// Queues one idle job for the next submitter (round robin); returns its id.
    pub fn add_job(&mut self, now: i64) -> JobId {
        let submitter = self.next_submitter % self.submitters.len().max(1);
        self.next_submitter += 1;
        self.add_job_for(submitter, now)
    }

    /// Queues one idle job for submitter `submitter` (an index into
    /// [`submitters`](Self::submitters)), queued at `now` (Unix seconds), in the submitter's
    /// open cluster or a new one. A new cluster draws its memory request and concurrency
    /// limits from the seeded generator; its procs share them and its queue time.
    pub fn add_job_for(&mut self, submitter: usize, now: i64) -> JobId {
        let open = match self.open[submitter].take() {
            Some(c) if c.next_proc < self.cluster_size => c,
            _ => {
                let id = self.next_cluster;
                self.next_cluster += 1;
                let memory = [512.0, 1024.0, 1536.0, 2048.0][self.rng.gen_range(0..4)];
                let mut limits = Vec::new();
                for l in &self.limits {
                    if self.rng.gen_bool(l.fraction) {
                        limits.push(l.name.clone());
                    }
                }
                OpenCluster {
                    id,
                    next_proc: 0,
                    qdate: now,
                    memory,
                    limits: (!limits.is_empty()).then(|| limits.join(",")),
                }
            }
        };
        let id = (open.id, open.next_proc);
        let (memory, limits, qdate) = (open.memory, open.limits.clone(), open.qdate);
        self.open[submitter] = Some(OpenCluster {
            next_proc: open.next_proc + 1,
            ..open
        });
        let mut job = Job {
            id,
            submitter,
            request: Resources {
                cpus: 1.0,
                memory,
                disk: 1024.0,
            },
            limits,
            qdate,
            state: JobState::Idle,
            ad: Default::default(),
        };
        job.ad = std::sync::Arc::new(self.job_classad(&job));
        self.jobs.insert(id, job);
        if let Some(c) = self.counts.get_mut(submitter) {
            c.0 += 1;
        }
        id
    }

    /// The job's ad, in old ClassAd syntax, as the negotiator sees it: `ClusterId`, `ProcId`,
    /// `Owner`, `User`, the accounting group attributes when grouped, `JobStatus = 1` (Idle,
    /// whatever the job's state), `JobUniverse = 5` (vanilla), `QDate`, `JobPrio`, the
    /// `Request*` attributes, `ConcurrencyLimits`, `Requirements` (Linux, and enough cpus,
    /// memory and disk) and `Rank = 0`.
    pub fn job_ad(&self, job: &Job) -> String {
        job.ad.to_old_syntax()
    }

    /// The job's ad as [`job_ad`](Self::job_ad) prints it, made from its fields.
    fn job_classad(&self, job: &Job) -> ClassAd {
        let s = &self.submitters[job.submitter];
        let mut ad = ClassAd::new();
        ad.insert_str("MyType", "Job");
        ad.insert_str("TargetType", "Machine");
        ad.insert_int("ClusterId", job.id.0 as i64);
        ad.insert_int("ProcId", job.id.1 as i64);
        ad.insert_str("Owner", &s.user);
        ad.insert_str("User", &format!("{}@{}", s.user, self.domain));
        if let Some(g) = &s.group {
            ad.insert_str("AccountingGroup", &format!("{g}.{}", s.user));
            ad.insert_str("AcctGroup", g);
            ad.insert_str("AcctGroupUser", &s.user);
        }
        ad.insert_int("JobStatus", 1);
        ad.insert_int("JobUniverse", 5);
        ad.insert_int("QDate", job.qdate);
        ad.insert_int("JobPrio", 0);
        ad.insert_int("RequestCpus", job.request.cpus as i64);
        ad.insert_int("RequestMemory", job.request.memory as i64);
        ad.insert_int("RequestDisk", job.request.disk as i64);
        if let Some(l) = &job.limits {
            ad.insert_str("ConcurrencyLimits", l);
        }
        // The expression is a constant, so this cannot fail; fall back to True if it did.
        if ad
            .insert_expr_str(
                "Requirements",
                "(TARGET.OpSys == \"LINUX\") && (TARGET.Cpus >= MY.RequestCpus) && \
                 (TARGET.Memory >= MY.RequestMemory) && (TARGET.Disk >= MY.RequestDisk)",
            )
            .is_err()
        {
            ad.insert_bool("Requirements", true);
        }
        ad.insert_int("Rank", 0);
        ad
    }

    /// The ads of every idle job, parsed (what resource requests group).
    pub fn idle_job_classads(&self) -> Vec<std::sync::Arc<ClassAd>> {
        self.jobs
            .values()
            .filter(|j| j.state == JobState::Idle)
            .map(|j| j.ad.clone())
            .collect()
    }

    /// The ads of every idle job (what GetRequests returns).
    pub fn idle_job_ads(&self) -> Vec<String> {
        self.jobs
            .values()
            .filter(|j| j.state == JobState::Idle)
            .map(|j| self.job_ad(j))
            .collect()
    }

    /// Checks a grant for `job` from `term` and, when it passes, marks the job as being
    /// claimed (so a second grant for it is refused while the claim is in flight).
    pub fn begin_grant(&mut self, term: u64, job: &str) -> Result<GrantTicket, String> {
        if term < self.newest_term {
            return Err(format!(
                "stale term {term} < {} (this access point took a newer grant)",
                self.newest_term
            ));
        }
        let id = parse_job_id(job).ok_or_else(|| format!("job {job:?} is not CLUSTER.PROC"))?;
        let j = self
            .jobs
            .get(&id)
            .ok_or_else(|| format!("job {job} is not in the queue"))?;
        if j.state != JobState::Idle {
            return Err(format!("job {job} is not idle"));
        }
        let s = &self.submitters[j.submitter];
        let ticket = GrantTicket {
            job: id,
            submitter: s.name.clone(),
            user: format!("{}@{}", s.user, self.domain),
            grouped: s.group.is_some(),
            limits: j.limits.clone(),
            request: j.request,
            job_ad: self.job_ad(j),
        };
        if let Some(j) = self.jobs.get_mut(&id) {
            j.state = JobState::Claiming;
        }
        // Taking a grant of this term fences out older terms at once, whether or not its
        // claim succeeds: a leader of this term exists, so older ones are deposed.
        self.newest_term = self.newest_term.max(term);
        Ok(ticket)
    }

    /// The claim for a begun grant failed: the job is idle again.
    pub fn abort_grant(&mut self, job: JobId) {
        if let Some(j) = self.jobs.get_mut(&job) {
            if j.state == JobState::Claiming {
                j.state = JobState::Idle;
            }
        }
    }

    /// The claim succeeded: the job runs, and the grant's term is the newest acted on.
    pub fn confirm_grant(
        &mut self,
        job: JobId,
        term: u64,
        slot: &str,
        claim_id: &str,
        startd_addr: &str,
    ) {
        self.newest_term = self.newest_term.max(term);
        if let Some(j) = self.jobs.get_mut(&job) {
            if !matches!(j.state, JobState::Running { .. }) {
                if let Some(c) = self.counts.get_mut(j.submitter) {
                    c.0 = c.0.saturating_sub(1);
                    c.1 += 1;
                }
            }
            j.state = JobState::Running {
                slot: slot.to_string(),
                claim_id: claim_id.to_string(),
                startd_addr: startd_addr.to_string(),
            };
        }
    }

    /// The job finished: it leaves the queue; with `replace`, a fresh idle job of the same
    /// submitter takes its place (unlimited demand). Returns the submitter index.
    pub fn finish(&mut self, job: JobId, replace: bool, now: i64) -> Option<usize> {
        let j = self.jobs.remove(&job)?;
        if let Some(c) = self.counts.get_mut(j.submitter) {
            match j.state {
                JobState::Running { .. } => c.1 = c.1.saturating_sub(1),
                _ => c.0 = c.0.saturating_sub(1),
            }
        }
        if replace {
            self.add_job_for(j.submitter, now);
        }
        Some(j.submitter)
    }

    /// (idle, running) jobs per submitter, in submitter order. Jobs being claimed count idle.
    pub fn counts(&self) -> &[(u64, u64)] {
        &self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ap(groups: &[&str]) -> AccessPoint {
        let users: Vec<String> = ["alice", "bob", "carol"].map(String::from).to_vec();
        let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        AccessPoint::new(&users, &groups, "pool.example", vec![], 1)
    }

    #[test]
    fn jobs_fill_their_submitters_clusters_with_one_qdate_and_request() {
        let users = vec!["a".to_string(), "b".to_string()];
        let mut ap = AccessPoint::new(&users, &[], "pool.example", vec![], 1).with_cluster_size(3);
        let ids: Vec<JobId> = (0..8).map(|k| ap.add_job(100 + k)).collect();
        // Round robin: a gets cluster 1 (procs 0-2) then 3; b gets cluster 2 then 4.
        assert_eq!(
            ids,
            vec![
                (1, 0),
                (2, 0),
                (1, 1),
                (2, 1),
                (1, 2),
                (2, 2),
                (3, 0),
                (4, 0)
            ]
        );
        let (p0, p2) = (ap.job((1, 0)).unwrap(), ap.job((1, 2)).unwrap());
        assert_eq!((p0.qdate, p2.qdate), (100, 100));
        assert_eq!(p0.request.memory, p2.request.memory);
        assert_eq!(ap.job((3, 0)).unwrap().qdate, 106);
        assert_eq!(ap.job((1, 1)).unwrap().submitter, 0);
    }

    #[test]
    fn submitters_get_groups_round_robin() {
        let a = ap(&["group_a", "group_b"]);
        let names: Vec<&str> = a.submitters().iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "group_a.alice@pool.example",
                "group_b.bob@pool.example",
                "group_a.carol@pool.example"
            ]
        );
    }

    #[test]
    fn job_ads_parse_and_name_their_submitter() {
        let mut a = ap(&["group_a"]);
        a.add_job(100);
        let ads = a.idle_job_ads();
        assert_eq!(ads.len(), 1);
        let ad = classad::parse_ad(&ads[0]).expect("job ad parses");
        assert_eq!(ad.eval_attr("User").as_str(), Some("alice@pool.example"));
        assert_eq!(
            ad.eval_attr("AccountingGroup").as_str(),
            Some("group_a.alice")
        );
        assert_eq!(ad.eval_attr("JobStatus").as_int(), Some(1));
        assert!(ad.lookup("Requirements").is_some());
    }

    #[test]
    fn a_grant_needs_an_idle_job_and_a_current_term() {
        let mut a = ap(&[]);
        let id = a.add_job(0);
        let t = a.begin_grant(3, "1.0").unwrap();
        assert_eq!(t.job, id);
        assert_eq!(t.submitter, "alice@pool.example");
        // In flight: a second grant for the same job is refused.
        assert!(a.begin_grant(3, "1.0").unwrap_err().contains("not idle"));
        a.confirm_grant(id, 3, "slot1@m", "cid", "<127.0.0.1:1>");
        assert_eq!(a.counts()[0], (0, 1));
        a.add_job(0);
        assert!(a.begin_grant(2, "2.0").unwrap_err().contains("stale term"));
        assert!(a
            .begin_grant(3, "9.0")
            .unwrap_err()
            .contains("not in the queue"));
        assert!(a.begin_grant(3, "x").unwrap_err().contains("CLUSTER.PROC"));
        let t = a.begin_grant(4, "2.0").unwrap();
        a.abort_grant(t.job);
        assert_eq!(a.idle_job_ads().len(), 1);
    }

    #[test]
    fn counts_follow_every_transition() {
        let mut a = ap(&[]);
        for _ in 0..6 {
            a.add_job(0);
        }
        let t = a.begin_grant(1, "1.0").unwrap();
        a.confirm_grant(t.job, 1, "s", "c", "a");
        let t = a.begin_grant(1, "2.0").unwrap();
        a.abort_grant(t.job);
        a.finish((1, 0), true, 0);
        a.finish((3, 0), false, 0);
        let mut rescan = vec![(0u64, 0u64); 3];
        for j in a.jobs() {
            match j.state {
                JobState::Running { .. } => rescan[j.submitter].1 += 1,
                _ => rescan[j.submitter].0 += 1,
            }
        }
        assert_eq!(a.counts(), rescan.as_slice());
    }

    #[test]
    fn finished_jobs_leave_or_are_replaced() {
        let mut a = ap(&[]);
        let id = a.add_job(0);
        assert_eq!(a.finish(id, true, 5), Some(0));
        assert_eq!(a.jobs().count(), 1);
        let next = a.jobs().next().unwrap().id;
        assert_ne!(next, id);
        assert_eq!(a.finish(next, false, 5), Some(0));
        assert_eq!(a.jobs().count(), 0);
    }
}

//! The access point's claims, pure: which slots it holds, which job each runs, the grants in
//! flight, and which job a claim takes next. A job is bound to at most one claim from the
//! moment its grant is taken until its process is gone, so it never runs twice; a claim
//! takes the next idle job of its autocluster (the same signature, see
//! [`super::job::signature`]) until `CLAIM_WORKLIFE` has passed since it was claimed, as
//! HTCondor's schedd reuses a match (src/condor_schedd.V6/schedd.cpp, `Scheduler::FindRunnableJob`
//! and `claimWorklife`).
//!
//! A claim whose keep-alives stop reaching its startd is given up only once its job's lease
//! (`JobLeaseDuration`) has passed since the startd was last heard ([`Claims::may_give_up`]):
//! until then the job may still run there (the startd evicts it when the lease passes, and
//! the node's job guard kills it if the node is gone), so running it elsewhere earlier would
//! run it twice at once. This is HTCondor's job lease: the shadow tries to reconnect to the
//! starter for the lease's length before the schedd gives the job up and claims another
//! resource (src/condor_shadow.V6.1/remoteresource.cpp, `RemoteResource::reconnect`;
//! src/condor_schedd.V6/schedd.cpp; the manual's "Job Leases").
use super::deferral;
use super::job::{self, JobId, Status};
use super::queue::Queue;
use std::collections::{HashMap, HashSet};

/// The job's lease in seconds: its `JobLeaseDuration` when positive, else `default_lease`.
pub fn job_lease(ad: &classad::ClassAd, default_lease: i64) -> i64 {
    match job::get_int(ad, "JobLeaseDuration", 0) {
        d if d > 0 => d,
        _ => default_lease,
    }
}

/// One claimed slot.
#[derive(Clone, Debug, PartialEq)]
pub struct Claim {
    /// The claimed slot's name (a dynamic slot's when carved).
    pub slot: String,
    /// The claim's capability.
    pub claim_id: String,
    /// Where its startd listens ("<host:port>").
    pub startd_addr: String,
    /// The autocluster signature of the jobs it may run.
    pub signature: String,
    /// The submitter the claim was granted to.
    pub submitter: String,
    /// When it was claimed (Unix seconds).
    pub since: i64,
    /// The job bound to it, if any.
    pub job: Option<JobId>,
    /// Keep-alives in a row that did not reach its startd.
    pub missed_alives: u32,
    /// When its startd was last heard (claimed, or a keep-alive answered; Unix seconds).
    pub last_heard: i64,
}

/// Every claim and grant in flight.
#[derive(Clone, Debug, Default)]
pub struct Claims {
    claims: HashMap<String, Claim>,
    bound: HashMap<JobId, String>,
    claiming: HashSet<JobId>,
    newest_term: u64,
    /// Jobs that were running when the access point restarted, kept from matching until
    /// this time (Unix seconds): their old claims' leases must pass first, or a job might
    /// run twice.
    held_back: HashMap<JobId, i64>,
}

impl Claims {
    /// Checks a grant of `term` for `job` against the queue and, when it passes, marks the
    /// job as being claimed. Refused: an older term than one already taken, a job that is
    /// not in the queue, not idle, or already bound or being claimed.
    pub fn begin_grant(
        &mut self,
        term: u64,
        job: &str,
        queue: &Queue,
        now: i64,
    ) -> Result<JobId, String> {
        if term < self.newest_term {
            return Err(format!(
                "stale term {term} < {} (this access point took a newer grant)",
                self.newest_term
            ));
        }
        let id = JobId::parse(job).ok_or_else(|| format!("job {job:?} is not CLUSTER.PROC"))?;
        let ad = queue
            .get(id)
            .ok_or_else(|| format!("job {job} is not in the queue"))?;
        if Status::of(ad) != Status::Idle || self.busy(id) {
            return Err(format!("job {job} is not idle"));
        }
        if self.is_held_back(id, now) {
            return Err(format!(
                "job {job} was running before the access point restarted; its old claim's \
                 lease has not passed yet"
            ));
        }
        if !deferral::offered(ad, now) {
            return Err(format!("job {job} is deferred: not offered at {now}"));
        }
        self.claiming.insert(id);
        self.newest_term = self.newest_term.max(term);
        Ok(id)
    }

    /// [`Self::begin_grant`] for a grant that names the job's autocluster
    /// ([`job::autocluster_id`]; empty for a grant made on the full job ad): when the named
    /// job cannot take it (gone, running, being claimed, held back), another idle job of that
    /// autocluster does, as HTCondor's schedd picks the job for a match of a resource request.
    /// A stale term is refused whatever the autocluster.
    pub fn begin_grant_in(
        &mut self,
        term: u64,
        job: &str,
        autocluster: &str,
        queue: &Queue,
        now: i64,
    ) -> Result<JobId, String> {
        let named = self.begin_grant(term, job, queue, now);
        if named.is_ok() || autocluster.is_empty() || term < self.newest_term {
            return named;
        }
        let signature = queue
            .idle_signatures()
            .find(|s| job::autocluster_id(s) == autocluster)
            .map(str::to_string);
        match signature.and_then(|s| self.pick(&s, queue, now)) {
            Some(id) => {
                self.claiming.insert(id);
                self.newest_term = self.newest_term.max(term);
                Ok(id)
            }
            None => Err(format!(
                "{}; autocluster {autocluster} has no other idle job",
                named.unwrap_err()
            )),
        }
    }

    /// The claim for a begun grant failed: the job may be matched again.
    pub fn abort_grant(&mut self, id: JobId) {
        self.claiming.remove(&id);
    }

    /// The slot is claimed: records the claim, its job bound to it.
    pub fn add(&mut self, claim: Claim) {
        if let Some(j) = claim.job {
            self.claiming.remove(&j);
            self.bound.insert(j, claim.claim_id.clone());
        }
        self.claims.insert(claim.claim_id.clone(), claim);
    }

    /// Keeps `jobs` from matching until `until` (jobs that were running before a restart).
    pub fn hold_back(&mut self, jobs: impl IntoIterator<Item = JobId>, until: i64) {
        self.held_back.extend(jobs.into_iter().map(|j| (j, until)));
    }

    /// The job may match again at once.
    pub fn stop_holding_back(&mut self, id: JobId) {
        self.held_back.remove(&id);
    }

    /// The job is kept from matching at `now`.
    pub fn is_held_back(&self, id: JobId, now: i64) -> bool {
        self.held_back.get(&id).is_some_and(|t| now < *t)
    }

    /// The job is bound to a claim or being claimed.
    pub fn busy(&self, id: JobId) -> bool {
        self.claiming.contains(&id) || self.bound.contains_key(&id)
    }

    /// The claim `claim_id`.
    pub fn get(&self, claim_id: &str) -> Option<&Claim> {
        self.claims.get(claim_id)
    }

    /// The claim the job is bound to.
    pub fn of_job(&self, id: JobId) -> Option<&Claim> {
        self.claims.get(self.bound.get(&id)?)
    }

    /// Every claim.
    pub fn all(&self) -> impl Iterator<Item = &Claim> {
        self.claims.values()
    }

    /// Number of claims held.
    pub fn len(&self) -> usize {
        self.claims.len()
    }

    /// No claim is held.
    pub fn is_empty(&self) -> bool {
        self.claims.is_empty()
    }

    /// The claim's job is done with it: unbinds and returns it.
    pub fn unbind(&mut self, claim_id: &str) -> Option<JobId> {
        let c = self.claims.get_mut(claim_id)?;
        let j = c.job.take()?;
        self.bound.remove(&j);
        Some(j)
    }

    /// Binds `job` to the claim (the claim must have none).
    pub fn bind(&mut self, claim_id: &str, job: JobId) -> bool {
        match self.claims.get_mut(claim_id) {
            Some(c) if c.job.is_none() && !self.bound.contains_key(&job) => {
                c.job = Some(job);
                self.bound.insert(job, claim_id.to_string());
                true
            }
            _ => false,
        }
    }

    /// A keep-alive did (`reached`) or did not reach the claim's startd at `now`; returns how
    /// many in a row did not.
    pub fn alive(&mut self, claim_id: &str, reached: bool, now: i64) -> u32 {
        match self.claims.get_mut(claim_id) {
            Some(c) if reached => {
                c.missed_alives = 0;
                c.last_heard = c.last_heard.max(now);
                0
            }
            Some(c) => {
                c.missed_alives += 1;
                c.missed_alives
            }
            None => 0,
        }
    }

    /// Whether the claim, whose startd no longer answers, may be given up at `now` (its job
    /// idle again): once `max_missed` keep-alives in a row failed, and, when a job is bound to
    /// it, once the job's lease has passed since the startd was last heard. The lease is the
    /// job's `JobLeaseDuration` when positive, else `default_lease` (the startd's own lease
    /// for a claim without one). Times are whole seconds, `last_heard` rounded down, so the
    /// lease counts as passed only a second later: the node's job guard, which counts it
    /// from when the node got the keep-alive, has killed the job by then.
    pub fn may_give_up(
        &self,
        claim_id: &str,
        queue: &Queue,
        now: i64,
        max_missed: u32,
        default_lease: i64,
    ) -> bool {
        let Some(c) = self.claims.get(claim_id) else {
            return true;
        };
        if c.missed_alives < max_missed {
            return false;
        }
        let Some(ad) = c.job.and_then(|j| queue.get(j)) else {
            return true;
        };
        now > c.last_heard.saturating_add(job_lease(ad, default_lease))
    }

    /// Forgets the claim (released or lost); returns it, its job unbound.
    pub fn remove(&mut self, claim_id: &str) -> Option<Claim> {
        let c = self.claims.remove(claim_id)?;
        if let Some(j) = c.job {
            self.bound.remove(&j);
        }
        Some(c)
    }

    /// The job the idle claim runs next: an idle, unbound job of its signature (highest
    /// `JobPrio`, then oldest id), or `None` when there is none or the claim has lived
    /// `worklife` seconds (HTCondor's `CLAIM_WORKLIFE`; negative: forever).
    pub fn next_job(
        &self,
        claim_id: &str,
        queue: &Queue,
        now: i64,
        worklife: i64,
    ) -> Option<JobId> {
        let c = self.claims.get(claim_id)?;
        if c.job.is_some() || (worklife >= 0 && now - c.since >= worklife) {
            return None;
        }
        self.pick(&c.signature, queue, now)
    }

    /// The idle job of autocluster `signature` a claim or a grant takes: not bound or being
    /// claimed, not held back, not deferred to later; the highest `JobPrio`, then the oldest id.
    fn pick(&self, signature: &str, queue: &Queue, now: i64) -> Option<JobId> {
        let mut best: Option<(i64, JobId)> = None;
        for id in queue.idle_of_signature(signature) {
            if self.busy(id) || self.is_held_back(id, now) {
                continue;
            }
            let Some(ad) = queue.get(id) else { continue };
            if !deferral::offered(ad, now) {
                continue;
            }
            let prio = job::get_int(ad, "JobPrio", 0);
            if best.is_none_or(|(p, _)| prio > p) {
                best = Some((prio, id));
            }
        }
        best.map(|(_, id)| id)
    }

    /// The idle jobs the negotiator may match at `now`: idle, not bound or being claimed,
    /// not held back, not deferred to later ([`deferral::offered`]).
    pub fn idle_ads<'q>(
        &'q self,
        queue: &'q Queue,
        now: i64,
    ) -> impl Iterator<Item = &'q classad::ClassAd> {
        queue
            .jobs()
            .filter(move |(id, ad)| {
                Status::of(ad) == Status::Idle
                    && !self.busy(*id)
                    && !self.is_held_back(*id, now)
                    && deferral::offered(ad, now)
            })
            .map(|(_, ad)| ad)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedd::queue::{Change, SubmitPolicy, Who};

    fn queue(jobs: &[(i64, &str)]) -> Queue {
        let mut q = Queue::new([], 1);
        let who = Who {
            name: "alice".into(),
            is_super: false,
        };
        let policy = SubmitPolicy {
            domain: "d".into(),
            ..Default::default()
        };
        for (cpus, extra) in jobs {
            let (c, ch) = q.reserve_cluster(&who);
            q.apply(&[ch]);
            let ad = format!("ClusterId = {c}\nProcId = 0\nCmd = \"x\"\nIwd = \"/\"\nRequestCpus = {cpus}\n{extra}");
            let ch = q.submit(c, &[ad], &who, &policy, 0).unwrap();
            q.apply(&ch);
        }
        q
    }

    fn claim(q: &Queue, job: JobId, since: i64) -> Claim {
        Claim {
            slot: "slot1@m".into(),
            claim_id: "c1".into(),
            startd_addr: "<127.0.0.1:1>".into(),
            signature: job::signature(q.get(job).unwrap()),
            submitter: "alice@d".into(),
            since,
            job: Some(job),
            missed_alives: 0,
            last_heard: since,
        }
    }

    #[test]
    fn a_job_is_granted_once_until_its_claim_lets_it_go() {
        let q = queue(&[(1, "")]);
        let mut c = Claims::default();
        let id = c.begin_grant(5, "1.0", &q, 0).unwrap();
        assert!(c
            .begin_grant(5, "1.0", &q, 0)
            .unwrap_err()
            .contains("not idle"));
        assert_eq!(c.idle_ads(&q, 0).count(), 0);
        c.add(claim(&q, id, 0));
        assert!(c
            .begin_grant(5, "1.0", &q, 0)
            .unwrap_err()
            .contains("not idle"));
        assert!(c
            .begin_grant(4, "1.0", &q, 0)
            .unwrap_err()
            .contains("stale term"));
        assert!(c
            .begin_grant(5, "9.0", &q, 0)
            .unwrap_err()
            .contains("not in the queue"));
        assert_eq!(c.unbind("c1"), Some(id));
        assert!(!c.busy(id));
        assert_eq!(c.idle_ads(&q, 0).count(), 1);
        let id = c.begin_grant(6, "1.0", &q, 0).unwrap();
        c.abort_grant(id);
        assert!(!c.busy(id));
        // Running before a restart: not matched until its old claim's lease has passed.
        c.hold_back([id], 100);
        assert!(c
            .begin_grant(6, "1.0", &q, 99)
            .unwrap_err()
            .contains("restarted"));
        assert_eq!(c.idle_ads(&q, 99).count(), 0);
        assert_eq!(c.idle_ads(&q, 100).count(), 1);
        assert!(c.begin_grant(6, "1.0", &q, 100).is_ok());
    }

    #[test]
    fn a_grant_naming_an_autocluster_falls_to_another_of_its_idle_jobs() {
        let q = queue(&[(1, ""), (1, "JobPrio = 2"), (2, "")]);
        let ac = job::autocluster_id(&job::signature(q.get(JobId::new(1, 0)).unwrap()));
        let mut c = Claims::default();
        // The named job is free: it takes the grant.
        assert_eq!(c.begin_grant_in(3, "1.0", &ac, &q, 0), Ok(JobId::new(1, 0)));
        // Named again while being claimed: the other job of its autocluster takes it.
        assert_eq!(c.begin_grant_in(3, "1.0", &ac, &q, 0), Ok(JobId::new(2, 0)));
        // None left in it (3.0 asks for 2 cpus: another autocluster).
        let e = c.begin_grant_in(3, "1.0", &ac, &q, 0).unwrap_err();
        assert!(e.contains("no other idle job"), "{e}");
        // A grant made on a whole ad names no autocluster: the named job or nothing.
        assert!(c.begin_grant_in(3, "9.0", "", &q, 0).is_err());
        // A stale term is refused whatever the autocluster.
        c.abort_grant(JobId::new(2, 0));
        let e = c.begin_grant_in(2, "1.0", &ac, &q, 0).unwrap_err();
        assert!(e.contains("stale term"), "{e}");
        // A gone job's grant goes to an idle one of its autocluster.
        assert_eq!(c.begin_grant_in(3, "1.7", &ac, &q, 0), Ok(JobId::new(2, 0)));
    }

    #[test]
    fn a_deferred_job_is_offered_and_taken_only_from_its_prep_time_to_its_window() {
        let deferred = "DeferralTime = 1000\nDeferralPrepTime = 100\nDeferralWindow = 50";
        let mut q = queue(&[(1, deferred), (1, "")]);
        let mut c = Claims::default();
        assert_eq!(c.idle_ads(&q, 899).count(), 1);
        assert_eq!(c.idle_ads(&q, 900).count(), 2);
        assert_eq!(c.idle_ads(&q, 1051).count(), 1);
        let e = c.begin_grant(1, "1.0", &q, 899).unwrap_err();
        assert!(e.contains("deferred"), "{e}");
        // A claim of their autocluster does not take it early either.
        let other = c.begin_grant(1, "2.0", &q, 0).unwrap();
        c.add(claim(&q, other, 0));
        c.unbind("c1");
        let done = q.get(other).unwrap().clone();
        q.apply(&[Change::Finish(other, done)]);
        assert_eq!(c.next_job("c1", &q, 899, -1), None);
        assert_eq!(c.next_job("c1", &q, 900, -1), Some(JobId::new(1, 0)));
        assert_eq!(c.next_job("c1", &q, 1051, -1), None);
        assert_eq!(c.begin_grant(2, "1.0", &q, 1000), Ok(JobId::new(1, 0)));
    }

    #[test]
    fn an_unreachable_claim_is_given_up_only_once_its_job_lease_has_passed() {
        let q = queue(&[(1, "JobLeaseDuration = 60"), (1, "")]);
        let mut c = Claims::default();
        let leased = c.begin_grant(1, "1.0", &q, 100).unwrap();
        c.add(claim(&q, leased, 100));
        // Heard at 110; then three keep-alives fail at 111, 112, 113.
        assert_eq!(c.alive("c1", true, 110), 0);
        for t in 111..=113 {
            c.alive("c1", false, t);
        }
        // The startd (or the job's guard) may still run the job until 110 + 60 (and a
        // second for the rounding).
        assert!(!c.may_give_up("c1", &q, 113, 3, 3));
        assert!(!c.may_give_up("c1", &q, 170, 3, 3));
        assert!(c.may_give_up("c1", &q, 171, 3, 3));
        // A keep-alive that gets through renews it all.
        c.alive("c1", true, 170);
        assert!(!c.may_give_up("c1", &q, 500, 3, 3));

        // No JobLeaseDuration: the default lease, counted from the last time heard.
        let mut c = Claims::default();
        let plain = c.begin_grant(1, "2.0", &q, 100).unwrap();
        c.add(claim(&q, plain, 100));
        for t in 101..=103 {
            c.alive("c1", false, t);
        }
        assert!(!c.may_give_up("c1", &q, 105, 3, 5));
        assert!(c.may_give_up("c1", &q, 106, 3, 5));
        // Too few missed keep-alives: kept, whatever the time.
        let mut c = Claims::default();
        c.add(claim(&q, plain, 100));
        c.alive("c1", false, 101);
        assert!(!c.may_give_up("c1", &q, 10_000, 3, 5));
        // A claim without a job has no job to run twice.
        c.unbind("c1");
        c.alive("c1", false, 102);
        c.alive("c1", false, 103);
        assert!(c.may_give_up("c1", &q, 103, 3, 5));
    }

    #[test]
    fn a_claim_takes_the_next_job_of_its_autocluster_within_its_worklife() {
        let mut q = queue(&[(1, ""), (2, ""), (1, "JobPrio = 3"), (1, "")]);
        let mut c = Claims::default();
        let first = c.begin_grant(1, "1.0", &q, 0).unwrap();
        c.add(claim(&q, first, 100));
        // Bound: no next job yet.
        assert_eq!(c.next_job("c1", &q, 100, 1200), None);
        c.unbind("c1");
        // The job finished and left the queue.
        let done = q.get(first).unwrap().clone();
        q.apply(&[Change::Finish(first, done)]);
        // 2.0 asks for 2 cpus: another autocluster. 3.0 has the higher priority.
        assert_eq!(c.next_job("c1", &q, 200, 1200), Some(JobId::new(3, 0)));
        assert!(c.bind("c1", JobId::new(3, 0)));
        assert!(!c.bind("c1", JobId::new(4, 0)));
        c.unbind("c1");
        // Past CLAIM_WORKLIFE: released instead.
        assert_eq!(c.next_job("c1", &q, 1300, 1200), None);
        assert_eq!(c.next_job("c1", &q, 1300, -1), Some(JobId::new(3, 0)));
        assert_eq!((c.alive("c1", false, 0), c.alive("c1", false, 0)), (1, 2));
        assert_eq!((c.alive("c1", true, 0), c.alive("c1", false, 0)), (0, 1));
        assert!(c.remove("c1").is_some());
        assert!(c.is_empty());
    }
}

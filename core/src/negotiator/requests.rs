//! Resource requests: an access point's idle jobs as one representative ad per group of jobs
//! the negotiator cannot tell apart, with the jobs' ids, instead of every job ad.
//!
//! HTCondor's schedd sends the negotiator one request per autocluster with a count
//! (src/condor_schedd.V6/autocluster.cpp groups jobs by the significant attributes the
//! negotiator sent it; schedd_negotiate.cpp's resource request list carries one job ad per
//! autocluster and `ResourceRequestCount`). Aerie keeps the negotiator's outcome exactly
//! what it is with full job ads, so a group here is finer than an autocluster by what the
//! negotiator reads besides the significant attributes:
//! * the significant names: the leader's [`significant_names`] (the cycle's fixed roots, the
//!   negotiator's own expressions, `SIGNIFICANT_ATTRIBUTES` and every name any slot ad's
//!   expressions reference), closed by the access point through its own job ads;
//! * the attributes the negotiator reads by name from every job (status, submitter, job
//!   priorities, `QDate`, concurrency limits);
//! * the `ClusterId`; the group lists its jobs' `ProcId`s as ranges.
//!
//! [`expand`] gives the negotiator one ad per job back, each the representative with its own
//! `ClusterId` and `ProcId`: every job agrees with its representative on every attribute the
//! cycle reads, so the matches (jobs, slots, order) are the same as with the full ads.
use super::config::NegotiatorConfig;
use super::keys::{hash_expr, FxBuild, FxHasher};
use super::prep::{reach, significant_roots};
use super::scan::field;
use classad::{ClassAd, Expr, Value};
use std::collections::HashMap;
use std::hash::Hasher;

/// Consecutive `ProcId`s `first`, `first + 1`, ... (`count` of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcRange {
    /// The first ProcId.
    pub first: i64,
    /// How many.
    pub count: u32,
}

/// One resource request: jobs of one cluster that the negotiator cannot tell apart.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestGroup {
    /// Index (in the jobs given to [`group`]) of the representative job: the first of the
    /// group in input order.
    pub rep: usize,
    /// The jobs' ClusterId; `None` when the representative has no integer ClusterId and
    /// ProcId (then the group is that one job, sent as it is).
    pub cluster: Option<i64>,
    /// The jobs' ProcIds, ascending.
    pub procs: Vec<ProcRange>,
}

impl RequestGroup {
    /// How many jobs the request stands for.
    pub fn count(&self) -> u64 {
        match self.cluster {
            None => 1,
            Some(_) => self.procs.iter().map(|r| u64::from(r.count)).sum(),
        }
    }
}

/// The significant names that come from the configuration alone: the cycle's fixed roots,
/// what the negotiator's expressions reference and `SIGNIFICANT_ATTRIBUTES`, lowercased.
fn configured_names(cfg: &NegotiatorConfig) -> std::collections::BTreeSet<String> {
    let mut names = significant_roots(cfg);
    names.extend(
        cfg.significant_attributes
            .iter()
            .map(|a| a.to_ascii_lowercase()),
    );
    names
}

/// The names the leader asks access points to group their jobs by: the cycle's fixed roots,
/// what the negotiator's expressions reference, `SIGNIFICANT_ATTRIBUTES`, and every name an
/// expression of a slot ad references (a superset of what the cycle reaches through them,
/// consumption policies included), lowercased and sorted.
pub fn significant_names(cfg: &NegotiatorConfig, slots: &[ClassAd]) -> Vec<String> {
    let mut names = configured_names(cfg);
    // Slots of a pool mostly share their expressions (Requirements, Start, Rank...), each
    // parsed on its own: one walk for references per distinct expression, found by its
    // structural hash and confirmed with `same_as` (listing the references of every
    // expression of 50,000 slots allocated millions of strings, a tenth of a cycle).
    let mut seen: HashMap<u64, Vec<&Expr>, FxBuild> = HashMap::default();
    for ad in slots {
        for (_, e) in ad.iter() {
            if matches!(e, Expr::Lit(_)) {
                continue;
            }
            let mut h = FxHasher::default();
            hash_expr(e, &mut h);
            let same = seen.entry(h.finish()).or_default();
            if same.iter().any(|x| x.same_as(e)) {
                continue;
            }
            same.push(e);
            let r = e.references();
            names.extend(r.internal);
            names.extend(r.external);
        }
    }
    names.into_iter().collect()
}

/// [`significant_names`] the straightforward way, every expression's references listed:
/// what the shortcut must agree with.
#[cfg(test)]
fn significant_names_unshared(cfg: &NegotiatorConfig, slots: &[ClassAd]) -> Vec<String> {
    let mut names = configured_names(cfg);
    for ad in slots {
        for (_, e) in ad.iter() {
            let r = e.references();
            names.extend(r.internal);
            names.extend(r.external);
        }
    }
    names.into_iter().collect()
}

/// Groups idle job ads into resource requests by `significant` (the leader's
/// [`significant_names`]) closed through each job's own expressions, the attributes the
/// cycle reads from every job, and the ClusterId. Groups come in order of their first job.
/// One-off: an access point keeps a [`RequestCache`] so that it does not redo every job's
/// key every cycle.
pub fn group(jobs: &[&ClassAd], significant: &[String]) -> Vec<RequestGroup> {
    RequestCache::default().group(jobs, significant)
}

/// Each queued job's group key, remembered between cycles, as HTCondor's schedd keeps a
/// job's autocluster id until the job or the significant attributes change
/// (src/condor_schedd.V6/autocluster.cpp, `AutoCluster::getAutoClusterid`). Without it a
/// cycle at 100,000 idle jobs spent a second printing every job's significant attributes.
///
/// A job's key is its ClusterId and the value of every name in its own closure: the roots
/// (`significant` and what the cycle reads from every job) and, transitively, the names its
/// own expressions reference there. Nothing else of a job's ad is read when the negotiator
/// matches it (slots read only the significant names, other jobs never read it), so two
/// jobs with one key are matched alike; and the key spells the names out, so jobs with
/// different closures never share one. The cache holds only jobs with integer ClusterId and
/// ProcId; the owner calls [`RequestCache::forget`] when a job's ad changes.
#[derive(Debug, Default)]
pub struct RequestCache {
    /// The significant names the keys were made for; other names empty the cache.
    significant: Vec<String>,
    /// (ClusterId, ProcId) -> interned key.
    keys: HashMap<(i64, i64), u32>,
    /// Key text -> its number.
    interned: HashMap<String, u32>,
}

impl RequestCache {
    /// Drops what is remembered of job `cluster.proc` (its ad changed).
    pub fn forget(&mut self, cluster: i64, proc: i64) {
        self.keys.remove(&(cluster, proc));
    }

    /// How many jobs' keys are remembered.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no job's key is remembered.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// [`group`], reusing the keys of jobs seen before; jobs not in `jobs` are forgotten.
    pub fn group(&mut self, jobs: &[&ClassAd], significant: &[String]) -> Vec<RequestGroup> {
        let mut roots: Vec<String> = significant.iter().map(|n| n.to_ascii_lowercase()).collect();
        roots.sort();
        roots.dedup();
        if roots != self.significant {
            *self = RequestCache {
                significant: roots.clone(),
                ..Default::default()
            };
        }
        // Interned keys of jobs gone pile up; start over when they far outnumber the jobs.
        if self.interned.len() > 4 * jobs.len() + 1024 {
            self.keys.clear();
            self.interned.clear();
        }
        roots.extend(
            field::NAMES
                .iter()
                .filter(|n| !matches!(**n, "ClusterId" | "ProcId"))
                .map(|n| n.to_ascii_lowercase()),
        );
        let mut groups: Vec<RequestGroup> = Vec::new();
        let mut procs: Vec<Vec<i64>> = Vec::new();
        let mut index: HashMap<u32, usize> = HashMap::new();
        let mut seen: HashMap<(i64, i64), u32> = HashMap::with_capacity(jobs.len());
        for (i, ad) in jobs.iter().enumerate() {
            let id = |a: &str| match ad.eval_attr(a) {
                Value::Int(v) => Some(v),
                _ => None,
            };
            let (Some(cluster), Some(proc)) = (id("ClusterId"), id("ProcId")) else {
                groups.push(RequestGroup {
                    rep: i,
                    cluster: None,
                    procs: Vec::new(),
                });
                procs.push(Vec::new());
                continue;
            };
            let key = match self.keys.get(&(cluster, proc)) {
                Some(&k) => k,
                None => {
                    let text = job_key(ad, cluster, &roots);
                    let next = self.interned.len() as u32;
                    *self.interned.entry(text).or_insert(next)
                }
            };
            seen.insert((cluster, proc), key);
            match index.get(&key) {
                Some(&g) => procs[g].push(proc),
                None => {
                    index.insert(key, groups.len());
                    groups.push(RequestGroup {
                        rep: i,
                        cluster: Some(cluster),
                        procs: Vec::new(),
                    });
                    procs.push(vec![proc]);
                }
            }
        }
        self.keys = seen;
        for (g, mut p) in groups.iter_mut().zip(procs) {
            p.sort_unstable();
            p.dedup();
            g.procs = ranges(&p);
        }
        groups
    }
}

/// A job's group key: its cluster, then `name=value` for every name of its closure from
/// `roots` (an absent attribute as NUL).
fn job_key(ad: &ClassAd, cluster: i64, roots: &[String]) -> String {
    let mut key = cluster.to_string();
    for n in reach(roots.to_vec(), &[ad]) {
        key.push('\n');
        key.push_str(&n);
        key.push('=');
        match ad.lookup(&n) {
            Some(e) => key.push_str(&e.to_string()),
            None => key.push('\u{0}'),
        }
    }
    key
}

/// Ascending, distinct ids as ranges of consecutive ones.
fn ranges(ids: &[i64]) -> Vec<ProcRange> {
    let mut out: Vec<ProcRange> = Vec::new();
    for &id in ids {
        match out.last_mut() {
            Some(r) if r.first + i64::from(r.count) == id && r.count < u32::MAX => r.count += 1,
            _ => out.push(ProcRange {
                first: id,
                count: 1,
            }),
        }
    }
    out
}

/// One job ad per job of a request: the representative `rep`, each with its own `ClusterId`
/// and `ProcId` (just `rep` when `cluster` is `None`), appended to `out`.
pub fn expand(rep: &ClassAd, cluster: Option<i64>, procs: &[ProcRange], out: &mut Vec<ClassAd>) {
    let Some(cluster) = cluster else {
        out.push(rep.clone());
        return;
    };
    for r in procs {
        for k in 0..i64::from(r.count) {
            let mut ad = rep.clone();
            ad.insert_int("ClusterId", cluster);
            ad.insert_int("ProcId", r.first + k);
            out.push(ad);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad(s: &str) -> ClassAd {
        classad::parse_ad(s).unwrap()
    }

    #[test]
    fn significant_names_walk_each_distinct_expression_once_and_miss_nothing() {
        // Shared expressions spelled in other cases, ones that differ only in a literal or
        // a scope, and one slot's own: the shortcut must list what every walk would.
        let slots = [
            ad("Requirements = START && TARGET.RequestMemory <= MY.Memory\nStart = KeyboardIdle > 900\nMemory = 1024"),
            ad("requirements = start && target.requestmemory <= my.memory\nStart = KeyboardIdle > 900\nMemory = 2048"),
            ad("Requirements = START && TARGET.RequestMemory <= MY.Memory\nStart = KeyboardIdle > 60\nRank = TARGET.Dept == \"x\""),
            ad("Requirements = START && MY.RequestDisk <= TARGET.Disk\nStart = LoadAvg < 0.3\nWantsGpu = TARGET.RequestGpus > 0"),
            ad("Start = { Foo, Bar }[0]\nIsX = [ A = Baz ].A"),
        ];
        let cfg = NegotiatorConfig::default();
        let got = significant_names(&cfg, &slots);
        assert_eq!(got, significant_names_unshared(&cfg, &slots));
        for n in [
            "dept",
            "requestdisk",
            "disk",
            "loadavg",
            "requestgpus",
            "keyboardidle",
        ] {
            assert!(got.iter().any(|g| g == n), "{n} missing from {got:?}");
        }
    }

    #[test]
    fn the_cache_keeps_keys_until_a_job_changes_or_the_significant_names_do() {
        let mut jobs = [
            ad("ClusterId = 3\nProcId = 0\nOwner = \"a\"\nRequestCpus = 1\nDept = \"x\""),
            ad("ClusterId = 3\nProcId = 1\nOwner = \"a\"\nRequestCpus = 1\nDept = \"y\""),
            ad("ClusterId = 3\nProcId = 2\nOwner = \"a\"\nRequestCpus = 1\nDept = \"x\""),
        ];
        let counts = |g: &[RequestGroup]| g.iter().map(|g| g.count()).collect::<Vec<_>>();
        let mut cache = RequestCache::default();
        let refs: Vec<&ClassAd> = jobs.iter().collect();
        // Dept is read by nobody: one request.
        assert_eq!(counts(&cache.group(&refs, &[])), [3]);
        assert_eq!(cache.len(), 3);
        // A slot now reads Dept: the keys are made again.
        let dept = ["dept".to_string()];
        assert_eq!(counts(&cache.group(&refs, &dept)), [2, 1]);
        // Job 3.1 changes: forgotten, it is keyed again and joins the others.
        jobs[1] = ad("ClusterId = 3\nProcId = 1\nOwner = \"a\"\nRequestCpus = 1\nDept = \"x\"");
        cache.forget(3, 1);
        let refs: Vec<&ClassAd> = jobs.iter().collect();
        assert_eq!(counts(&cache.group(&refs, &dept)), [3]);
        // Jobs no longer idle are dropped from the cache.
        assert_eq!(counts(&cache.group(&refs[..1], &dept)), [1]);
        assert_eq!(cache.len(), 1);
        // The cached answer is the one-off answer.
        assert_eq!(cache.group(&refs, &dept), group(&refs, &dept));
    }

    #[test]
    fn jobs_that_differ_only_in_what_the_cycle_never_reads_share_a_request() {
        let jobs = [
            ad("ClusterId = 1\nProcId = 0\nOwner = \"a\"\nArgs = \"0\"\nRequestCpus = 1"),
            ad("ClusterId = 1\nProcId = 1\nOwner = \"a\"\nArgs = \"1\"\nRequestCpus = 1"),
            ad("ClusterId = 1\nProcId = 3\nOwner = \"a\"\nArgs = \"3\"\nRequestCpus = 1"),
            // Other cpus, other priority, other cluster: each its own request.
            ad("ClusterId = 1\nProcId = 2\nOwner = \"a\"\nArgs = \"2\"\nRequestCpus = 2"),
            ad("ClusterId = 1\nProcId = 4\nOwner = \"a\"\nJobPrio = 5\nRequestCpus = 1"),
            ad("ClusterId = 2\nProcId = 0\nOwner = \"a\"\nRequestCpus = 1"),
            // Read by a slot (Department) or through the job's own Requirements (Site).
            ad("ClusterId = 1\nProcId = 5\nOwner = \"a\"\nRequestCpus = 1\nDepartment = \"x\""),
            ad("ClusterId = 1\nProcId = 6\nOwner = \"a\"\nRequestCpus = 1\nRequirements = MY.Site == 1\nSite = 1"),
            ad("ClusterId = 1\nProcId = 7\nOwner = \"a\"\nRequestCpus = 1\nRequirements = MY.Site == 1\nSite = 2"),
            ad("Owner = \"a\""),
        ];
        let refs: Vec<&ClassAd> = jobs.iter().collect();
        let slot = ad("Requirements = TARGET.Department =!= \"y\"");
        let names = significant_names(&NegotiatorConfig::default(), &[slot]);
        assert!(names.contains(&"department".to_string()), "{names:?}");
        let g = group(&refs, &names);
        type Shape = (usize, Option<i64>, Vec<(i64, u32)>);
        let shape: Vec<Shape> = g
            .iter()
            .map(|g| {
                let p = g.procs.iter().map(|r| (r.first, r.count)).collect();
                (g.rep, g.cluster, p)
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                (0, Some(1), vec![(0, 2), (3, 1)]),
                (3, Some(1), vec![(2, 1)]),
                (4, Some(1), vec![(4, 1)]),
                (5, Some(2), vec![(0, 1)]),
                (6, Some(1), vec![(5, 1)]),
                (7, Some(1), vec![(6, 1)]),
                (8, Some(1), vec![(7, 1)]),
                (9, None, vec![]),
            ]
        );
        assert_eq!(g.iter().map(RequestGroup::count).sum::<u64>(), 10);
        let mut out = Vec::new();
        expand(&jobs[0], g[0].cluster, &g[0].procs, &mut out);
        let ids: Vec<(i64, i64)> = out
            .iter()
            .map(|a| {
                let v = |n| match a.eval_attr(n) {
                    Value::Int(v) => v,
                    _ => -1,
                };
                (v("ClusterId"), v("ProcId"))
            })
            .collect();
        assert_eq!(ids, vec![(1, 0), (1, 1), (1, 3)]);
    }
}

/// The negotiator's outcome with resource requests is the one with full job ads.
#[cfg(test)]
mod same_outcome {
    use super::super::job_class_tests::{pool, Shape, NOW};
    use super::super::{negotiate, NegotiationInput, Outcome};
    use super::*;

    /// What must not change: every match (job, submitter, slot, why, whom it preempts,
    /// weight, carve) in order, and the per-submitter figures.
    fn essence(o: &Outcome) -> (Vec<String>, String) {
        let m = o
            .matches
            .iter()
            .map(|m| {
                format!(
                    "{} {} {} {:?} {:?} {} {:?}",
                    m.job, m.submitter, m.slot, m.reason, m.preempts, m.weight, m.carved
                )
            })
            .collect();
        (m, format!("{:?}", o.submitters))
    }

    /// Clusters as `queue N` makes them: every proc of a cluster a copy of its first but for
    /// `ProcId` and `Args`.
    fn batched(input: &NegotiationInput) -> NegotiationInput {
        let mut jobs = input.jobs.clone();
        for i in 0..jobs.len() {
            let first = i - i % 10;
            let mut ad = jobs[first].clone();
            ad.insert_int("ProcId", (i % 10) as i64);
            ad.insert_str("Args", &format!("run {i}"));
            jobs[i] = ad;
        }
        NegotiationInput {
            slots: input.slots.clone(),
            jobs,
        }
    }

    /// The jobs split over two access points (odd and even positions), each grouped into
    /// requests, and the leader's expansion of both answers.
    fn through_requests(input: &NegotiationInput, names: &[String]) -> (NegotiationInput, usize) {
        let mut jobs = Vec::new();
        let mut requests = 0;
        for side in 0..2 {
            let ap: Vec<&ClassAd> = input.jobs.iter().skip(side).step_by(2).collect();
            let groups = group(&ap, names);
            requests += groups.len();
            for g in &groups {
                expand(ap[g.rep], g.cluster, &g.procs, &mut jobs);
            }
        }
        let input = NegotiationInput {
            slots: input.slots.clone(),
            jobs,
        };
        (input, requests)
    }

    fn check(shape: Shape, salt: u64) {
        for seed in 0..8 {
            let (input, acct, cfg) = pool(seed * 104_729 + salt, shape);
            for input in [batched(&input), input] {
                let names = significant_names(&cfg, &input.slots);
                let (expanded, requests) = through_requests(&input, &names);
                assert_eq!(expanded.jobs.len(), input.jobs.len());
                let full = negotiate(&input, &acct, &cfg, NOW);
                assert!(!full.matches.is_empty(), "seed {seed}: nothing matched");
                let via = negotiate(&expanded, &acct, &cfg, NOW);
                assert_eq!(essence(&via), essence(&full), "seed {seed}");
                assert!(requests <= input.jobs.len());
            }
        }
    }

    #[test]
    fn plain_pools_match_alike() {
        let shape = Shape {
            ties: true,
            preemption: false,
            groups: false,
        };
        check(shape, 11);
    }

    #[test]
    fn pools_with_preemption_match_alike() {
        let shape = Shape {
            ties: true,
            preemption: true,
            groups: false,
        };
        check(shape, 12);
    }

    #[test]
    fn pools_with_group_quotas_match_alike() {
        let shape = Shape {
            ties: false,
            preemption: false,
            groups: true,
        };
        check(shape, 13);
    }

    /// Batched clusters do compress: far fewer requests than jobs.
    #[test]
    fn queue_n_clusters_become_few_requests() {
        let shape = Shape {
            ties: true,
            preemption: false,
            groups: false,
        };
        let (input, _, cfg) = pool(5, shape);
        let input = batched(&input);
        let names = significant_names(&cfg, &input.slots);
        let (_, requests) = through_requests(&input, &names);
        assert!(
            requests * 4 <= input.jobs.len(),
            "{requests} requests for {} jobs",
            input.jobs.len()
        );
    }
}

//! The negotiation cycle.
//!
//! Steps (HTCondor 23.9.6 matchmaker.cpp):
//! 1. slots: drop absent and offline ads, ads outside `NEGOTIATOR_SLOT_CONSTRAINT`,
//!    Claimed/Idle slots, slots still retiring, and (without `NEGOTIATOR_CONSIDER_PREEMPTION`)
//!    every claimed slot; the pie is the total SlotWeight of what is left (busy slots included);
//! 2. submitters from the idle jobs, usage from the claimed slots, priorities from the ledger;
//! 3. without groups: a floor round for submitters below their floor, then the pie spins;
//!    with groups: quotas, fair share and surplus, then each group in `GROUP_SORT_EXPR` order
//!    gets its own floor round and pie spins limited to its allocation (up to
//!    `GROUP_QUOTA_MAX_ALLOCATION_ROUNDS` rounds);
//! 4. a pie spin: submitters in EUP order; each submitter's limit is
//!    `share * pie - usage` with `share = (1/EUP) / sum(1/EUP)`; a submitter offers its idle
//!    jobs in job-priority order; each job takes the best candidate slot (PRE_JOB_RANK, job
//!    Rank, POST_JOB_RANK, reason, PREEMPTION_RANK), as long as the submitter limit (or, for
//!    the first match of a spin, "anything left") allows; spins repeat while they make progress.
//!
//! Choices where the manual is silent, as HTCondor does them:
//! * fractional slices: a submitter may exceed its slice once per spin if it has matched
//!   nothing yet in that spin (HTCondor's "round up once" rule), so no crumbs are left;
//! * a job larger than the remaining slice is skipped in favour of smaller candidate slots;
//! * startd-rank preemption (HTCondor 23.9.6 negotiateWithGroup / negotiate /
//!   matchmakingAlgorithm): in the first spin with `NEGOTIATOR_CONSIDER_PREEMPTION` a
//!   submitter over its limit keeps negotiating with only_consider_startd_rank, offered only
//!   claimed slots where `MY.Rank > MY.CurrentRank` is true (undefined is not true;
//!   `PreemptingRank` stands in for `CurrentRank`); the first request of an autocluster (a
//!   fresh scan) is never held to the submitter limit for such a slot, but further requests of
//!   the same autocluster are answered from HTCondor's cached MatchList, whose pop holds every
//!   preempting candidate to the submitter limit or, failing that, the unclaimed limit (see
//!   `turn`); priority preemption also needs `MY.Rank >= MY.CurrentRank`;
//! * priority preemption does not itself compare EUPs: `PREEMPTION_REQUIREMENTS` decides
//!   (HTCondor's default is False, so there is none unless configured);
//! * a partitionable slot can be matched several times per cycle: each match carves a
//!   dynamic slot (requests quantized) and the slot stays with what is left.
use super::config::NegotiatorConfig;
use super::groups::GroupTree;
use super::keys::*;
use super::limits::{parse_limits, LimitUsage};
use super::outcome::*;
use super::prep::*;
use super::scan::*;
use super::NegotiationInput;
use crate::accountant::{assign_group, Accountant};
use classad::{ClassAd, Expr, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::Hasher;
use std::rc::Rc;

/// Runs one negotiation cycle. Pure and deterministic.
pub fn negotiate(
    input: &NegotiationInput,
    acct: &Accountant,
    cfg: &NegotiatorConfig,
    now: i64,
) -> Outcome {
    let mut c = Cycle::new(input, acct, cfg, now);
    c.run();
    c.finish()
}

#[derive(Clone, Debug)]
struct Slot {
    input: usize,
    ad: ClassAd,
    name: String,
    pslot: bool,
    weight: f64,
    remote: Option<usize>,
    /// `CurrentRank` (set from `PreemptingRank` when there is one, as HTCondor's
    /// addRemoteUserPrios does) when it is a number; `None` makes the rank conditions
    /// evaluate in full (an undefined CurrentRank never lets the startd prefer a job).
    current_rank: Option<f64>,
    running_limits: Vec<(String, f64)>,
    class: usize,
    taken: bool,
    version: u32,
}

#[derive(Clone, Debug)]
struct Sub {
    name: String,
    group: usize,
    eup: f64,
    rup: f64,
    factor: f64,
    floor: f64,
    ceiling: Option<f64>,
    usage: f64,
    usage_before: f64,
    /// Usage not counted against the submitter's pie slice in the current round: in the
    /// autoregroup round, what it matched earlier in this cycle under its own group.
    uncounted: f64,
    jobs: Vec<usize>,
    idle: usize,
    matched: usize,
    matched_weight: f64,
    preempted: usize,
    pie_slice: Option<f64>,
    limited_by: LimitedBy,
    limits_rejected: Option<String>,
}

/// Class-level evaluation of an (autocluster, slot class) pair.
#[derive(Clone, Copy, Debug)]
struct PairEval {
    job_rank: f64,
    pre: f64,
    post: f64,
    /// The slot's Rank of the job when it evaluates to a number (`MY.Rank` in the rank
    /// conditions); `None` when it is undefined or not a number.
    slot_rank: Option<f64>,
    req: (f64, f64, f64),
}

/// Candidate slots of one autocluster with identical sort keys: a whole slot class (idle
/// slots of a class all sort alike) or a single slot (busy slots, carved partitionable slots).
#[derive(Clone, Debug)]
struct Bucket {
    keys: [f64; 5],
    class: usize,
    /// A class of static slots shares the class's member list (it never changes, slots are
    /// only taken), so that listing candidates costs nothing per slot; partitionable classes
    /// and single slots get their own list.
    slots: Rc<Vec<u32>>,
    /// Entries before this index are known to be taken.
    cursor: usize,
}

fn keys_cmp(a: &[f64; 5], b: &[f64; 5]) -> std::cmp::Ordering {
    for i in 0..5 {
        match a[i].partial_cmp(&b[i]).unwrap_or(std::cmp::Ordering::Equal) {
            std::cmp::Ordering::Equal => continue,
            o => return o,
        }
    }
    std::cmp::Ordering::Equal
}

enum TurnResult {
    Done,
    Resume,
}

struct Cycle<'a> {
    cfg: &'a NegotiatorConfig,
    acct: &'a Accountant,
    input: &'a NegotiationInput,
    slots: Vec<Slot>,
    jobs: Vec<Job>,
    job_done: Vec<bool>,
    acs: Vec<AutoCluster>,
    subs: Vec<Sub>,
    sub_index: HashMap<String, usize>,
    groups: GroupTree,
    hgq: bool,
    names: Vec<(String, u64)>,
    slot_classes: Interner,
    pair_cache: HashMap<(usize, usize), Option<PairEval>, FxBuild>,
    cand_lists: HashMap<usize, Vec<Bucket>, FxBuild>,
    /// Idle (unclaimed or partitionable) slots per class; busy slots are listed in `busy`.
    class_members: Vec<Rc<Vec<u32>>>,
    /// Per class of static slots: members before this index are taken.
    class_first: Vec<usize>,
    busy: Vec<u32>,
    job_views: HashMap<usize, ClassAd, FxBuild>,
    /// Set while the `<none>` round runs with the submitters of `GROUP_AUTOREGROUP` groups
    /// added: their jobs then see `SubmitterAutoregroup = true`.
    autoregroup_round: bool,
    volatile: bool,
    limit_usage: LimitUsage,
    /// `MY.Rank > MY.CurrentRank` and `MY.Rank >= MY.CurrentRank` (see `rank_cond`).
    rank_cond_gt: Expr,
    rank_cond_ge: Expr,
    matches: Vec<Match>,
    rejections: BTreeMap<(i64, i64), String>,
    total_weight: f64,
    min_weight: f64,
    pie_spins: u64,
    pies: u64,
    jobs_considered: u64,
    rejections_count: u64,
    trimmed: usize,
    total_slot_ads: usize,
    now: i64,
}

impl<'a> Cycle<'a> {
    fn new(
        input: &'a NegotiationInput,
        acct: &'a Accountant,
        cfg: &'a NegotiatorConfig,
        now: i64,
    ) -> Self {
        let groups = GroupTree::build(cfg);
        let hgq = groups.nodes.len() > 1;
        let mut c = Cycle {
            cfg,
            acct,
            input,
            slots: Vec::new(),
            jobs: Vec::new(),
            job_done: Vec::new(),
            acs: Vec::new(),
            subs: Vec::new(),
            sub_index: HashMap::new(),
            groups,
            hgq,
            names: Vec::new(),
            slot_classes: Interner::default(),
            pair_cache: HashMap::default(),
            cand_lists: HashMap::default(),
            class_members: Vec::new(),
            class_first: Vec::new(),
            busy: Vec::new(),
            job_views: HashMap::default(),
            autoregroup_round: false,
            volatile: false,
            limit_usage: LimitUsage::default(),
            rank_cond_gt: classad::parse_expr("MY.Rank > MY.CurrentRank")
                .expect("constant expression parses"),
            rank_cond_ge: classad::parse_expr("MY.Rank >= MY.CurrentRank")
                .expect("constant expression parses"),
            matches: Vec::new(),
            rejections: BTreeMap::new(),
            total_weight: 0.0,
            min_weight: f64::MAX,
            pie_spins: 0,
            pies: 0,
            jobs_considered: 0,
            rejections_count: 0,
            trimmed: 0,
            total_slot_ads: input.slots.len(),
            now,
        };
        c.prepare();
        c
    }

    fn group_names(&self) -> Vec<String> {
        self.cfg.groups.iter().map(|g| g.name.clone()).collect()
    }

    fn sub_for(&mut self, name: &str) -> usize {
        if let Some(&i) = self.sub_index.get(name) {
            return i;
        }
        let gname = assign_group(&self.group_names(), name);
        let group = self.groups.find(&gname).unwrap_or(0);
        let rec = self.acct.record(name);
        let factor = rec
            .map(|r| r.priority_factor)
            .unwrap_or_else(|| self.acct.default_factor(name));
        let rup = self.acct.real_priority(name);
        let i = self.subs.len();
        self.subs.push(Sub {
            name: name.to_string(),
            group,
            eup: rup * factor,
            rup,
            factor,
            floor: rec.map(|r| r.floor).unwrap_or(0.0),
            ceiling: rec.and_then(|r| r.ceiling()),
            usage: 0.0,
            usage_before: 0.0,
            uncounted: 0.0,
            jobs: Vec::new(),
            idle: 0,
            matched: 0,
            matched_weight: 0.0,
            preempted: 0,
            pie_slice: None,
            limited_by: LimitedBy::NoIdleJobs,
            limits_rejected: None,
        });
        self.sub_index.insert(name.to_string(), i);
        i
    }

    fn slot_weight(&self, ad: &ClassAd) -> f64 {
        if !self.cfg.use_slot_weights {
            return 1.0;
        }
        static NAMES: std::sync::OnceLock<(HName, HName)> = std::sync::OnceLock::new();
        let (w, c) = NAMES.get_or_init(|| (HName::new("SlotWeight"), HName::new("Cpus")));
        match ad.lookup_by_name(w) {
            Some(_) => num_h(ad, w).unwrap_or(1.0),
            None => num_h(ad, c).unwrap_or(1.0),
        }
    }

    /// Steps 1 and 2: slots, submitters, jobs, autoclusters, classes.
    fn prepare(&mut self) {
        let cfg = self.cfg;
        let sn = SlotNames::new();
        // --- significant names (for slot classes and autoclusters)
        let mut names: BTreeSet<String> = BTreeSet::new();
        for root in [
            "requirements",
            "rank",
            "slotweight",
            "requestcpus",
            "requestmemory",
            "requestdisk",
            "concurrencylimits",
            "concurrencylimitsexpr",
            "cpus",
            "memory",
            "disk",
        ] {
            names.insert(root.to_string());
        }
        for e in [
            &cfg.pre_job_rank,
            &cfg.post_job_rank,
            &cfg.preemption_requirements,
            &cfg.preemption_rank,
        ]
        .into_iter()
        .flatten()
        {
            let r = e.references();
            names.extend(r.internal);
            names.extend(r.external);
        }
        // Closure of the referenced names through each ad. Only non-literal attributes carry
        // references, so ads whose non-literal attributes are identical have the same closure:
        // visit one ad per such fingerprint.
        let mut memo: HashMap<u64, std::rc::Rc<(Vec<String>, Vec<String>)>> = HashMap::new();
        let mut fingerprints: HashSet<u64> = HashSet::new();
        let roots: Vec<String> = names.iter().cloned().collect();
        let mut visit = |ad: &ClassAd, fp: u64, names: &mut BTreeSet<String>| {
            if !fingerprints.insert(fp) {
                return;
            }
            let mut todo: Vec<String> = roots.clone();
            let mut seen: HashSet<String> = HashSet::new();
            while let Some(n) = todo.pop() {
                if !seen.insert(n.clone()) {
                    continue;
                }
                names.insert(n.clone());
                if let Some(e) = ad.lookup(&n) {
                    let mut h = FxHasher::default();
                    hash_expr(e, &mut h);
                    let k = h.finish();
                    let refs = memo
                        .entry(k)
                        .or_insert_with(|| {
                            let r = e.references();
                            std::rc::Rc::new((
                                r.internal.into_iter().collect(),
                                r.external.into_iter().collect(),
                            ))
                        })
                        .clone();
                    for m in refs.0.iter().chain(refs.1.iter()) {
                        if !seen.contains(m) {
                            todo.push(m.clone());
                        }
                    }
                }
            }
        };
        // --- slots: one pass over each slot ad (they are read again only for classes)
        let mut slots = Vec::new();
        for (i, ad) in self.input.slots.iter().enumerate() {
            if bool_h(ad, &sn.absent) == Some(true) || bool_h(ad, &sn.offline) == Some(true) {
                self.trimmed += 1;
                continue;
            }
            if let Some(c) = &cfg.slot_constraint {
                if !ad.eval_expr_with(c, None).is_true() {
                    self.trimmed += 1;
                    continue;
                }
            }
            // Pie size: everything the negotiator owns, busy or not (HTCondor sums SlotWeight
            // before trimming claimed slots).
            let weight = self.slot_weight(ad);
            self.total_weight += weight;
            if weight > 0.0 {
                self.min_weight = self.min_weight.min(weight);
            }
            // Usage from claimed slots and running concurrency limits.
            let state = str_h(ad, &sn.state).unwrap_or_default();
            let activity = str_h(ad, &sn.activity).unwrap_or_default();
            let pslot = bool_h(ad, &sn.partitionable) == Some(true);
            let claimed = state == "Claimed" || state == "Preempting";
            let remote_name = if claimed && !pslot {
                str_h(ad, &sn.preempting_group)
                    .or_else(|| str_h(ad, &sn.preempting_user))
                    .or_else(|| str_h(ad, &sn.accounting_group))
                    .or_else(|| str_h(ad, &sn.remote_user))
                    .map(|n| n.into_owned())
            } else {
                None
            };
            let remote = remote_name.map(|n| self.sub_for(&n));
            let running_limits = if claimed {
                str_h(ad, &sn.limits)
                    .and_then(|s| parse_limits(&s).ok())
                    .unwrap_or_default()
            } else {
                Vec::new()
            };
            if let Some(r) = remote {
                self.subs[r].usage += weight;
            }
            self.limit_usage.add(&running_limits);
            // Trimming (after counting usage).
            if claimed && !pslot {
                if !cfg.consider_preemption || activity == "Idle" || state == "Preempting" {
                    self.trimmed += 1;
                    continue;
                }
                if num_h(ad, &sn.retirement).unwrap_or(0.0) > 0.0 {
                    self.trimmed += 1;
                    continue;
                }
            } else if !pslot && state != "Unclaimed" && !state.is_empty() {
                // Owner, Matched, Drained, Backfill...: their Requirements are False anyway.
                if state != "Backfill" {
                    self.trimmed += 1;
                    continue;
                }
            }
            let name = str_h(ad, &sn.name)
                .map(|n| n.into_owned())
                .unwrap_or_else(|| format!("slot#{i}"));
            let number = |v: &Value| match v {
                Value::Int(i) => Some(*i as f64),
                Value::Real(r) => Some(*r),
                _ => None,
            };
            // matchmaker.cpp addRemoteUserPrios: a slot with a preempting claim competes
            // with its preempting rank (`CurrentRank = PreemptingRank`).
            let mut ad = ad.clone();
            let preempting_rank = number(&value_h(&ad, &sn.preempting_rank));
            if let Some(p) = preempting_rank {
                ad.insert_value("CurrentRank", Value::Real(p));
            }
            let current_rank = number(&value_h(&ad, &sn.current_rank));
            visit(&ad, nonliteral_fingerprint(&ad), &mut names);
            slots.push(Slot {
                input: i,
                ad,
                name,
                pslot,
                weight,
                remote,
                current_rank,
                running_limits,
                class: 0,
                taken: false,
                version: 0,
            });
        }
        if self.min_weight == f64::MAX {
            self.min_weight = 1.0;
        }
        for s in &mut self.subs {
            s.usage_before = s.usage;
        }
        // Names the negotiator inserts itself are never part of a key.
        let ephemeral = |n: &str| {
            (n.starts_with("submitter") && n != "submitter")
                || n.starts_with("remoteuserprio")
                || n.starts_with("remoteuserresourcesinuse")
                || n.starts_with("remotegroup")
                || n == "remotenegotiatinggroup"
                || n == "remoteautoregroup"
                || (n.starts_with("slot") && n.ends_with("_remoteuserprio"))
        };
        let significant = |names: &BTreeSet<String>| -> Vec<(String, u64)> {
            let mut v: Vec<String> = names.iter().filter(|n| !ephemeral(n)).cloned().collect();
            for a in &cfg.significant_attributes {
                v.push(a.to_ascii_lowercase());
            }
            v.sort();
            v.dedup();
            v.into_iter()
                .map(|n| {
                    let h = classad::name::ci_hash(&n);
                    (n, h)
                })
                .collect()
        };
        let mut sig = significant(&names);
        // --- jobs: one read of each job ad gives its fields, its fingerprint (and, for a new
        // fingerprint, the names its expressions reference) and its autocluster. A job that
        // brings new significant names (rare: only a new fingerprint can) re-keys the jobs
        // before it, so every key is over the final names.
        let input = self.input;
        let mut roles = RoleTable::new(&sig);
        let mut jobs: Vec<Job> = Vec::with_capacity(input.jobs.len());
        let mut fps: Vec<u64> = Vec::with_capacity(input.jobs.len());
        let mut acs = AcTable::new(sig.len());
        let mut view: Vec<Option<&Expr>> = Vec::new();
        let mut sname = String::new();
        for (i, ad) in input.jobs.iter().enumerate() {
            let mut scan = scan_job(ad, &roles, &mut view);
            let cluster = scan
                .num(field::CLUSTER)
                .map(|v| v as i64)
                .unwrap_or(i as i64);
            let proc = scan.num(field::PROC).map(|v| v as i64).unwrap_or(0);
            let status = scan.num(field::STATUS).unwrap_or(1.0) as i64;
            if status != 1 {
                continue; // only idle jobs negotiate
            }
            if let Err(e) = job_submitter(&scan, &mut sname) {
                self.rejections.insert((cluster, proc), e);
                continue;
            }
            let s = match self.sub_index.get(sname.as_str()) {
                Some(&s) => s,
                None => self.sub_for(&sname),
            };
            let request_weight = scan.num(field::REQUEST_CPUS).unwrap_or(1.0).max(0.0);
            let fp = scan.fingerprint;
            let known = names.len();
            visit(ad, fp, &mut names);
            if names.len() != known {
                sig = significant(&names);
                roles = RoleTable::new(&sig);
                acs = AcTable::new(sig.len());
                for (j, &f) in jobs.iter_mut().zip(&fps) {
                    scan_job(&input.jobs[j.index], &roles, &mut view);
                    j.ac = acs.assign(&view, j.submitter, f).0;
                }
                scan = scan_job(ad, &roles, &mut view);
            }
            let (ac, _) = acs.assign(&view, s, fp);
            jobs.push(Job {
                index: i,
                cluster,
                proc,
                submitter: s,
                ac,
                order: job_order(&scan, cluster, proc),
                limits: job_limits(&scan),
                request_weight: if cfg.use_slot_weights {
                    request_weight
                } else {
                    1.0
                },
            });
            fps.push(fp);
        }
        // Representatives: the first job of each autocluster, in input order.
        let mut reps = vec![usize::MAX; acs.len()];
        for j in &jobs {
            if reps[j.ac] == usize::MAX {
                reps[j.ac] = j.index;
                self.acs.push(AutoCluster {
                    rep: j.index,
                    submitter: j.submitter,
                });
            }
        }
        self.volatile = names
            .iter()
            .any(|n| n.ends_with("resourcesinuse") && ephemeral(n));
        self.names = sig;
        // --- remote ephemeral attributes in slot ads
        if self.cfg.cross_slot_prios {
            self.add_cross_slot_prios(&mut slots);
        }
        for s in &mut slots {
            if let Some(r) = s.remote {
                let sub = &self.subs[r];
                s.ad.insert_value("RemoteUserPrio", Value::Real(sub.eup));
                s.ad.insert_value("RemoteUserResourcesInUse", Value::Real(sub.usage));
                let g = &self.groups.nodes[sub.group];
                if sub.group != 0 {
                    s.ad.insert_value("RemoteGroup", Value::str(&g.name));
                    s.ad.insert_value("RemoteGroupQuota", Value::Real(g.quota));
                }
                s.ad.insert_value("RemoteNegotiatingGroup", Value::str(&g.name));
                s.ad.insert_value("RemoteAutoregroup", Value::Bool(false));
                let floor = sub.floor;
                s.ad.insert_value("RemoteUserFloor", Value::Real(floor));
            }
        }
        // --- slot classes
        let mut slot_view: Vec<Option<&Expr>> = Vec::new();
        for s in slots.iter_mut() {
            scan_sig(&s.ad, &roles, &mut slot_view);
            s.class = self.slot_classes.intern_view(&slot_view, s.pslot as u64);
        }
        for (i, s) in slots.iter().enumerate() {
            if s.remote.is_some() {
                self.busy.push(i as u32);
            } else {
                if self.class_members.len() <= s.class {
                    self.class_members.resize(s.class + 1, Rc::default());
                }
                Rc::make_mut(&mut self.class_members[s.class]).push(i as u32);
            }
        }
        self.slots = slots;
        // --- autoclusters and submitter job lists
        // Submitter, then job order; ties in input order (the sort moves small keys, not jobs).
        let mut keys: Vec<(usize, JobOrder, u32)> = jobs
            .iter()
            .enumerate()
            .map(|(k, j)| (j.submitter, j.order, k as u32))
            .collect();
        keys.sort_unstable();
        // Jobs stay in input order; each submitter lists its own in negotiation order.
        for &(s, _, k) in &keys {
            self.subs[s].jobs.push(k as usize);
            self.subs[s].idle += 1;
        }
        self.job_done = vec![false; jobs.len()];
        self.jobs = jobs;
        // --- group membership and usage
        for (i, s) in self.subs.iter().enumerate() {
            self.groups.nodes[s.group].usage += s.usage;
            if s.idle > 0 {
                self.groups.nodes[s.group].submitters.push(i);
            }
        }
    }

    /// The job ad as matchmaking sees it for submitter `s`: the representative plus the
    /// `Submitter*` ephemeral attributes.
    fn job_view(&mut self, ac: usize, negotiating_group: usize) -> ClassAd {
        if let Some(v) = self.job_views.get(&ac) {
            return v.clone();
        }
        let rep = self.acs[ac].rep;
        let s = &self.subs[self.acs[ac].submitter];
        let mut ad = self.input.jobs[rep].clone();
        ad.insert_value("SubmitterUserPrio", Value::Real(s.eup));
        ad.insert_value("SubmitterUserResourcesInUse", Value::Real(s.usage));
        let g = &self.groups.nodes[s.group];
        if s.group != 0 {
            ad.insert_value("SubmitterGroup", Value::str(&g.name));
            ad.insert_value("SubmitterGroupQuota", Value::Real(g.quota));
            ad.insert_value("SubmitterGroupResourcesInUse", Value::Real(g.usage));
        }
        let ng = &self.groups.nodes[negotiating_group];
        ad.insert_value("SubmitterNegotiatingGroup", Value::str(&ng.name));
        ad.insert_value("SubmitterAutoregroup", Value::Bool(self.autoregroup_round));
        self.job_views.insert(ac, ad.clone());
        ad
    }

    /// `NEGOTIATOR_CROSS_SLOT_PRIOS`: every slot ad gets, for each slot N of its machine
    /// (`1..=TotalSlots`) whose user it advertises (`slot<N>_PreemptingAccountingGroup`,
    /// `_PreemptingUser`, `_AccountingGroup` or `_RemoteUser`, first found), that user's
    /// `slot<N>_RemoteUserPrio`, `_RemoteUserResourcesInUse` and, for a group,
    /// `_RemoteGroup` and `_RemoteGroupQuota` (matchmaker.cpp's addRemoteUserPrios).
    fn add_cross_slot_prios(&mut self, slots: &mut [Slot]) {
        /// Bounds the loop on a hostile or broken `TotalSlots`.
        const MAX_SLOTS: i64 = 4096;
        for slot in slots.iter_mut() {
            let total = eval_num(&slot.ad, "TotalSlots").unwrap_or(0.0);
            let total = if total.is_finite() { total as i64 } else { 0 };
            for n in 1..=total.clamp(0, MAX_SLOTS) {
                let p = format!("slot{n}_");
                let user = [
                    "PreemptingAccountingGroup",
                    "PreemptingUser",
                    "AccountingGroup",
                    "RemoteUser",
                ]
                .iter()
                .find_map(|a| eval_str(&slot.ad, &format!("{p}{a}")));
                let Some(user) = user else { continue };
                let r = self.sub_for(&user);
                let sub = &self.subs[r];
                slot.ad
                    .insert_value(&format!("{p}RemoteUserPrio"), Value::Real(sub.eup));
                slot.ad.insert_value(
                    &format!("{p}RemoteUserResourcesInUse"),
                    Value::Real(sub.usage),
                );
                if sub.group != 0 {
                    let g = &self.groups.nodes[sub.group];
                    slot.ad
                        .insert_value(&format!("{p}RemoteGroup"), Value::str(&g.name));
                    slot.ad
                        .insert_value(&format!("{p}RemoteGroupQuota"), Value::Real(g.quota));
                }
            }
        }
    }

    /// Enters or leaves the autoregroup round: job views (and what was evaluated on them)
    /// change with `SubmitterAutoregroup` and `SubmitterNegotiatingGroup`.
    ///
    /// In that round the real HTCondor 23.9.6 does not charge a regrouped submitter's pie
    /// slice with what it matched earlier in the cycle under its own group
    /// (tests/reference/negotiator/autoregroup.sh: quota 5 of 20 slots, the regrouped user
    /// ends with 18 next to a `<none>` user's 2), so that usage is set aside for the round.
    fn set_autoregroup_round(&mut self, on: bool) {
        self.autoregroup_round = on;
        let regrouped: Vec<usize> = self
            .groups
            .nodes
            .iter()
            .skip(1)
            .filter(|n| n.autoregroup)
            .flat_map(|n| n.submitters.iter().copied())
            .collect();
        for s in regrouped {
            let sb = &mut self.subs[s];
            sb.uncounted = if on { sb.usage - sb.usage_before } else { 0.0 };
        }
        self.job_views.clear();
        self.pair_cache.clear();
        self.cand_lists.clear();
    }

    fn request(&self, job: &ClassAd, slot: &ClassAd) -> (f64, f64, f64) {
        let q = |v: f64, step: f64| {
            if step > 0.0 {
                (v / step).ceil() * step
            } else {
                v
            }
        };
        let get = |n: &str, d: f64| job.eval_attr_with(n, Some(slot)).as_number().unwrap_or(d);
        (
            q(get("RequestCpus", 1.0), self.cfg.quantize_cpus),
            q(get("RequestMemory", 0.0), self.cfg.quantize_memory),
            q(get("RequestDisk", 0.0), self.cfg.quantize_disk),
        )
    }

    fn eval_pair(&self, job: &ClassAd, slot: &Slot) -> Option<PairEval> {
        if !classad::symmetric_match(job, &slot.ad) {
            return None;
        }
        let req = self.request(job, &slot.ad);
        if slot.pslot {
            let have = |n: &str| eval_num(&slot.ad, n).unwrap_or(0.0);
            if req.0 > have("Cpus") || req.1 > have("Memory") || req.2 > have("Disk") {
                return None;
            }
        }
        let admin = |e: &Option<Expr>| match e {
            Some(e) => match slot.ad.eval_expr_with(e, Some(job)).as_number() {
                Some(v) => v as f32 as f64,
                None => -f64::MAX,
            },
            None => -f64::MAX,
        };
        Some(PairEval {
            job_rank: classad::rank(job, &slot.ad),
            pre: admin(&self.cfg.pre_job_rank),
            post: admin(&self.cfg.post_job_rank),
            slot_rank: match slot
                .ad
                .lookup("Rank")
                .map(|e| slot.ad.eval_expr_with(e, Some(job)))
            {
                Some(Value::Int(i)) => Some(i as f64),
                Some(Value::Real(r)) => Some(r),
                _ => None,
            },
            req,
        })
    }

    fn pair(&mut self, ac: usize, job: &ClassAd, si: usize) -> Option<PairEval> {
        let key = (ac, self.slots[si].class);
        if let Some(v) = self.pair_cache.get(&key) {
            return *v;
        }
        let v = self.eval_pair(job, &self.slots[si]);
        self.pair_cache.insert(key, v);
        v
    }

    /// HTCondor's rank conditions on a claimed slot, evaluated with the slot as MY and the
    /// job as TARGET: `MY.Rank > MY.CurrentRank` (rankCondStd: the startd strictly prefers the
    /// job, "rank" preemption) or, with `or_equal`, `MY.Rank >= MY.CurrentRank`
    /// (rankCondPrioPreempt, required of priority preemption). Only true counts: an undefined
    /// Rank or CurrentRank makes both false. Numbers compare directly; anything else is
    /// evaluated as the expression itself.
    fn rank_cond(&self, job: &ClassAd, s: &Slot, pe: &PairEval, or_equal: bool) -> bool {
        match (pe.slot_rank, s.current_rank) {
            (Some(r), Some(c)) => {
                if or_equal {
                    r >= c
                } else {
                    r > c
                }
            }
            _ => {
                let e = if or_equal {
                    &self.rank_cond_ge
                } else {
                    &self.rank_cond_gt
                };
                s.ad.eval_expr_with(e, Some(job)).is_true()
            }
        }
    }

    /// Reason and PREEMPTION_RANK for a matching slot, or None if it may not be taken.
    fn preempt_state(
        &self,
        job: &ClassAd,
        sub: usize,
        si: usize,
        pe: &PairEval,
    ) -> Option<(MatchReason, f64)> {
        let s = &self.slots[si];
        let Some(r) = s.remote else {
            return Some((MatchReason::NoPreemption, -(f32::MAX as f64)));
        };
        let reason = if self.rank_cond(job, s, pe, false) {
            MatchReason::Rank
        } else if r != sub {
            if let Some(pr) = &self.cfg.preemption_requirements {
                if !s.ad.eval_expr_with(pr, Some(job)).is_true() {
                    return None;
                }
            }
            if !self.rank_cond(job, s, pe, true) {
                return None;
            }
            MatchReason::Priority
        } else {
            return None;
        };
        let prank = match &self.cfg.preemption_rank {
            Some(e) => {
                s.ad.eval_expr_with(e, Some(job))
                    .as_number()
                    .map(|v| v as f32 as f64)
                    .unwrap_or(-f64::MAX)
            }
            None => -f64::MAX,
        };
        Some((reason, prank))
    }

    fn build_candidates(&mut self, ac: usize, job: &ClassAd, sub: usize) -> Vec<Bucket> {
        let mut out = Vec::new();
        if self.class_first.len() < self.class_members.len() {
            self.class_first.resize(self.class_members.len(), 0);
        }
        for class in 0..self.class_members.len() {
            let list = &self.class_members[class];
            let Some(&first) = list.first() else {
                continue;
            };
            let (members, cursor) = if self.slots[first as usize].pslot {
                let own: Vec<u32> = list
                    .iter()
                    .copied()
                    .filter(|&x| !self.slots[x as usize].taken)
                    .collect();
                (Rc::new(own), 0)
            } else {
                let mut c = self.class_first[class];
                while c < list.len() && self.slots[list[c] as usize].taken {
                    c += 1;
                }
                self.class_first[class] = c;
                (Rc::clone(list), c)
            };
            let Some(&rep) = members.get(cursor) else {
                continue;
            };
            if let Some(pe) = self.pair(ac, job, rep as usize) {
                let keys = [
                    pe.pre,
                    pe.job_rank,
                    pe.post,
                    MatchReason::NoPreemption as u8 as f64,
                    -(f32::MAX as f64),
                ];
                out.push(Bucket {
                    keys,
                    class,
                    slots: members,
                    cursor,
                });
            }
        }
        for i in 0..self.busy.len() {
            let si = self.busy[i] as usize;
            if self.slots[si].taken {
                continue;
            }
            if let Some(b) = self.candidate(ac, job, sub, si) {
                out.push(b);
            }
        }
        // Best keys first; equal keys in input order of their first slot (HTCondor keeps the
        // first best slot it sees in collector order).
        out.sort_by(|a, b| {
            keys_cmp(&b.keys, &a.keys).then(a.slots[a.cursor].cmp(&b.slots[b.cursor]))
        });
        out
    }

    fn candidate(&mut self, ac: usize, job: &ClassAd, sub: usize, si: usize) -> Option<Bucket> {
        let pe = self.pair(ac, job, si)?;
        let (reason, prank) = self.preempt_state(job, sub, si, &pe)?;
        Some(Bucket {
            keys: [pe.pre, pe.job_rank, pe.post, reason as u8 as f64, prank],
            class: self.slots[si].class,
            slots: Rc::new(vec![si as u32]),
            cursor: 0,
        })
    }

    /// Weight a match with slot `si` would cost (carved size for a partitionable slot).
    fn match_cost(&self, si: usize, req: (f64, f64, f64)) -> f64 {
        let s = &self.slots[si];
        if !s.pslot {
            return s.weight;
        }
        if !self.cfg.use_slot_weights {
            return 1.0;
        }
        match s.ad.lookup("SlotWeight") {
            Some(e) => {
                let mut d = s.ad.clone();
                d.insert_value("Cpus", Value::Real(req.0));
                d.insert_value("Memory", Value::Real(req.1));
                d.insert_value("Disk", Value::Real(req.2));
                d.eval_expr(&e.clone()).as_number().unwrap_or(req.0)
            }
            None => req.0,
        }
    }

    /// One submitter's turn in a spin (HTCondor's `negotiate` with one schedd).
    #[allow(clippy::too_many_arguments)]
    fn turn(
        &mut self,
        sub: usize,
        neg_group: usize,
        limit: f64,
        limit_unclaimed: f64,
        ceiling_left: f64,
        ignore_limit: bool,
        pie_left: &mut f64,
    ) -> TurnResult {
        let mut used = 0.0;
        let mut used_unclaimed = 0.0;
        let mut failed_acs: HashSet<usize> = HashSet::new();
        let mut failed_clusters: HashSet<i64> = HashSet::new();
        let mut limited = false;
        let mut only_rank = false;
        // HTCondor's MatchList cache: the autocluster (and only-rank flag) of the previous
        // request that reached matchmaking in this turn. See `cached` below.
        let mut match_list: Option<(usize, bool)> = None;
        let job_ids = self.subs[sub].jobs.clone();
        if self.volatile {
            self.pair_cache.clear();
            self.cand_lists.clear();
            self.job_views.clear();
        }
        for k in job_ids {
            if self.job_done[k] {
                continue;
            }
            // HTCondor 23.9.6 negotiate(): over the submitter limit, the first spin with
            // NEGOTIATOR_CONSIDER_PREEMPTION (negotiateWithGroup's ignore_submitter_limit)
            // keeps going with only_consider_startd_rank; later spins stop. limitUsed only
            // grows, so once set the flag stays for the rest of the turn.
            if used >= limit {
                if ignore_limit {
                    only_rank = true;
                } else {
                    self.subs[sub].limited_by = LimitedBy::Share;
                    return TurnResult::Resume;
                }
            }
            if used >= ceiling_left {
                self.subs[sub].limited_by = LimitedBy::Ceiling;
                return TurnResult::Resume;
            }
            let (ac, cluster) = (self.jobs[k].ac, self.jobs[k].cluster);
            if failed_acs.contains(&ac) {
                continue;
            }
            if !self.cfg.negotiate_all_jobs_in_cluster && failed_clusters.contains(&cluster) {
                continue;
            }
            self.jobs_considered += 1;
            let fixed_limits = match &self.jobs[k].limits {
                JobLimits::Invalid(e) => {
                    self.reject(k, e.clone());
                    failed_acs.insert(ac);
                    continue;
                }
                JobLimits::Fixed(v) => {
                    if let Some(n) = self.limit_usage.rejects(v, self.cfg) {
                        self.reject(k, format!("concurrency limit {n} reached"));
                        self.subs[sub].limits_rejected = Some(n);
                        failed_acs.insert(ac);
                        continue;
                    }
                    Some(v.clone())
                }
                _ => None,
            };
            let job = self.job_view(ac, neg_group);
            // matchmakingAlgorithm answers a request of the same autocluster (same submitter,
            // same only_for_startdrank) from the sorted MatchList it built for the previous
            // one, and that cached path checks the submitter limit differently: any
            // preempting candidate (rank included) needs SubmitterLimitPermits on
            // (limitUsed, submitterLimit) or, failing that, on the unclaimed pair. The first
            // request of an autocluster (a fresh scan) never limits rank preemption.
            let cached = match_list == Some((ac, only_rank));
            match_list = Some((ac, only_rank));
            if !self.cand_lists.contains_key(&ac) {
                let l = self.build_candidates(ac, &job, sub);
                self.cand_lists.insert(ac, l);
            }
            // Walk the candidate buckets, best first.
            let mut chosen: Option<(usize, MatchReason, f64, (f64, f64, f64), Vec<(String, f64)>)> =
                None;
            let mut rej_limit = false;
            let mut rej_conc: Option<String> = None;
            let mut list = self.cand_lists.remove(&ac).unwrap_or_default();
            let mut bi = 0;
            'buckets: while bi < list.len() {
                let reason = match list[bi].keys[3] as u8 {
                    2 => MatchReason::NoPreemption,
                    1 => MatchReason::Rank,
                    _ => MatchReason::Priority,
                };
                // only_for_startdrank (matchmakingAlgorithm): an unclaimed slot is skipped, a
                // claimed one only counts if rankCondStd holds (reason "rank"), and no
                // priority preemption is considered.
                if only_rank && reason != MatchReason::Rank {
                    bi += 1;
                    continue;
                }
                let mut idx = list[bi].cursor;
                while idx < list[bi].slots.len() {
                    let si = list[bi].slots[idx] as usize;
                    if self.slots[si].taken {
                        if idx == list[bi].cursor {
                            list[bi].cursor += 1;
                        }
                        idx += 1;
                        continue;
                    }
                    if self.slots[si].class != list[bi].class {
                        // A partitionable slot was carved since the list was built: take it
                        // out and put it back where its new keys sort.
                        Rc::make_mut(&mut list[bi].slots).remove(idx);
                        if let Some(fresh) = self.candidate(ac, &job, sub, si) {
                            let at = list[bi + 1..]
                                .iter()
                                .position(|x| {
                                    keys_cmp(&x.keys, &fresh.keys) == std::cmp::Ordering::Less
                                })
                                .map(|p| p + bi + 1)
                                .unwrap_or(list.len());
                            list.insert(at, fresh);
                        }
                        continue;
                    }
                    let Some(pe) = self.pair(ac, &job, si) else {
                        idx += 1;
                        continue;
                    };
                    let cost = self.match_cost(si, pe.req);
                    let permits =
                        |u: f64, allowed: f64| u + cost <= allowed || (u <= 0.0 && allowed > 0.0);
                    let ok = match reason {
                        MatchReason::NoPreemption => permits(used_unclaimed, limit_unclaimed),
                        MatchReason::Priority if !cached => permits(used, limit),
                        MatchReason::Rank if !cached => true,
                        MatchReason::Priority | MatchReason::Rank => {
                            permits(used, limit) || permits(used_unclaimed, limit_unclaimed)
                        }
                    };
                    if !ok {
                        rej_limit = true;
                        // Every slot of this bucket costs the same unless partitionable.
                        if self.slots[si].pslot {
                            idx += 1;
                            continue;
                        }
                        break;
                    }
                    let limits = match &self.jobs[k].limits {
                        JobLimits::Expr(e) => match job.eval_expr_with(e, Some(&self.slots[si].ad))
                        {
                            Value::Str(s) => match parse_limits(&s) {
                                Ok(v) => v,
                                Err(_) => {
                                    idx += 1;
                                    continue;
                                }
                            },
                            _ => Vec::new(),
                        },
                        _ => fixed_limits.clone().unwrap_or_default(),
                    };
                    if matches!(self.jobs[k].limits, JobLimits::Expr(_)) {
                        if let Some(n) = self.limit_usage.rejects(&limits, self.cfg) {
                            rej_conc = Some(n);
                            idx += 1;
                            continue;
                        }
                    }
                    chosen = Some((si, reason, cost, pe.req, limits));
                    break 'buckets;
                }
                bi += 1;
            }
            self.cand_lists.insert(ac, list);
            let Some((si, reason, cost, req, limits)) = chosen else {
                let why = if rej_limit {
                    "submitter limit exceeded".to_string()
                } else if let Some(n) = &rej_conc {
                    format!("concurrency limit {n} reached")
                } else {
                    "no match found".to_string()
                };
                self.reject(k, why);
                if rej_limit {
                    limited = true;
                }
                if let Some(n) = rej_conc {
                    self.subs[sub].limits_rejected = Some(n);
                }
                failed_acs.insert(ac);
                failed_clusters.insert(cluster);
                continue;
            };
            self.make_match(k, sub, neg_group, si, reason, cost, req, limits);
            used += cost;
            if reason == MatchReason::NoPreemption {
                used_unclaimed += cost;
            }
            *pie_left -= cost;
        }
        if limited || used >= limit {
            self.subs[sub].limited_by = LimitedBy::Share;
            TurnResult::Resume
        } else {
            TurnResult::Done
        }
    }

    fn reject(&mut self, k: usize, why: String) {
        self.rejections_count += 1;
        self.rejections
            .insert((self.jobs[k].cluster, self.jobs[k].proc), why);
    }

    #[allow(clippy::too_many_arguments)]
    fn make_match(
        &mut self,
        k: usize,
        sub: usize,
        neg_group: usize,
        si: usize,
        reason: MatchReason,
        cost: f64,
        req: (f64, f64, f64),
        limits: Vec<(String, f64)>,
    ) {
        self.job_done[k] = true;
        let jobid = format!("{}.{}", self.jobs[k].cluster, self.jobs[k].proc);
        self.rejections
            .remove(&(self.jobs[k].cluster, self.jobs[k].proc));
        let mut preempts = None;
        let carved;
        if self.slots[si].pslot {
            let s = &mut self.slots[si];
            let left =
                |n: &str, used: f64, ad: &ClassAd| (eval_num(ad, n).unwrap_or(0.0) - used).max(0.0);
            let (c, m, d) = (
                left("Cpus", req.0, &s.ad),
                left("Memory", req.1, &s.ad),
                left("Disk", req.2, &s.ad),
            );
            s.ad.insert_value("Cpus", num_value(c));
            s.ad.insert_value("Memory", num_value(m));
            s.ad.insert_value("Disk", num_value(d));
            s.version += 1;
            carved = Some(req);
            let old = self.slots[si].class;
            let class = self.slot_classes.intern(&self.slots[si].ad, &self.names, 1);
            self.slots[si].class = class;
            if class != old {
                Rc::make_mut(&mut self.class_members[old]).retain(|&x| x as usize != si);
                if self.class_members.len() <= class {
                    self.class_members.resize(class + 1, Rc::default());
                }
                Rc::make_mut(&mut self.class_members[class]).push(si as u32);
            }
            if c <= 0.0 {
                self.slots[si].taken = true;
            }
        } else {
            carved = None;
            self.slots[si].taken = true;
            if let Some(r) = self.slots[si].remote {
                preempts = Some(self.subs[r].name.clone());
                let w = self.slots[si].weight;
                self.subs[r].usage = (self.subs[r].usage - w).max(0.0);
                let g = self.subs[r].group;
                self.groups.nodes[g].usage = (self.groups.nodes[g].usage - w).max(0.0);
                self.subs[r].preempted += 1;
                let old = self.slots[si].running_limits.clone();
                self.limit_usage.remove(&old);
            }
        }
        self.limit_usage.add(&limits);
        let s = &mut self.subs[sub];
        s.usage += cost;
        s.matched += 1;
        s.matched_weight += cost;
        let g = s.group;
        self.groups.nodes[g].usage += cost;
        let slot = &self.slots[si];
        self.matches.push(Match {
            job: jobid,
            job_index: self.jobs[k].index,
            autocluster: self.jobs[k].ac,
            submitter: self.subs[sub].name.clone(),
            negotiating_group: self.groups.nodes[neg_group].name.clone(),
            slot: slot.name.clone(),
            slot_index: slot.input,
            reason,
            preempts,
            weight: cost,
            carved,
        });
        if self.volatile {
            self.job_views.clear();
        }
    }

    fn any_slot_left(&self) -> bool {
        self.slots.iter().any(|s| !s.taken)
    }

    fn has_idle(&self, sub: usize) -> bool {
        self.subs[sub].jobs.iter().any(|&k| !self.job_done[k])
    }

    /// HTCondor's `negotiateWithGroup`: pie spins over `subs`, limited to `group_quota`.
    fn negotiate_with_group(
        &mut self,
        floor_round: bool,
        mut subs: Vec<usize>,
        group_quota: f64,
        group: Option<usize>,
    ) {
        self.pies += 1;
        let neg_group = group.unwrap_or(0);
        let mut spin = 0;
        // Sort once, by EUP then starvation, then name for determinism.
        loop {
            spin += 1;
            self.pie_spins += 1;
            let ignore_limit = spin == 1 && self.cfg.consider_preemption;
            let group_usage = |c: &Self| group.map(|g| c.groups.nodes[g].usage).unwrap_or(0.0);
            if !ignore_limit && group.is_some() && group_usage(self) >= group_quota {
                break;
            }
            if !self.cfg.consider_preemption {
                subs.retain(|&s| self.has_idle(s));
            }
            if subs.is_empty() {
                break;
            }
            // Normalization over distinct submitters.
            let max_prio = subs
                .iter()
                .map(|&s| self.subs[s].eup)
                .fold(f64::MIN_POSITIVE, f64::max);
            let normal: f64 = subs.iter().map(|&s| max_prio / self.subs[s].eup).sum();
            let slot_weight_total = self.total_weight.min(group_quota);
            let gu = group_usage(self);
            let limits_for = |c: &Self, s: usize| -> (f64, f64, f64) {
                let sb = &c.subs[s];
                let share = max_prio / (sb.eup * normal);
                let mut limit = (share * slot_weight_total - (sb.usage - sb.uncounted)).max(0.0);
                let mut unclaimed = limit;
                if group.is_some() {
                    let max_allowed = (group_quota - gu).max(0.0);
                    unclaimed = unclaimed.min(max_allowed);
                }
                if !c.cfg.consider_preemption {
                    limit = unclaimed;
                }
                if floor_round {
                    limit = limit.min(sb.floor);
                }
                (limit, unclaimed, share)
            };
            let mut pie_left = 0.0;
            let mut starvation: HashMap<usize, f64> = HashMap::new();
            for &s in &subs {
                let (l, _, _) = limits_for(self, s);
                let u = self.subs[s].usage;
                starvation.insert(s, if u + l > 0.0 { u / (u + l) } else { f64::MAX });
                pie_left += l;
            }
            if !self.cfg.consider_preemption && pie_left <= 0.0 {
                break;
            }
            if spin == 1 {
                subs.sort_by(|&a, &b| {
                    let (x, y) = (&self.subs[a], &self.subs[b]);
                    x.eup
                        .partial_cmp(&y.eup)
                        .unwrap_or(std::cmp::Ordering::Equal)
                        .then(
                            starvation[&a]
                                .partial_cmp(&starvation[&b])
                                .unwrap_or(std::cmp::Ordering::Equal),
                        )
                        .then(x.name.cmp(&y.name))
                });
            }
            let pie_left_orig = pie_left;
            let count_orig = subs.len();
            let mut i = 0;
            while i < subs.len() {
                let s = subs[i];
                if !ignore_limit && group.is_some() && group_usage(self) >= group_quota {
                    break;
                }
                let (mut limit, unclaimed, share) = limits_for(self, s);
                if spin == 1 && self.subs[s].pie_slice.is_none() && !floor_round {
                    self.subs[s].pie_slice = Some(share * slot_weight_total);
                }
                if limit > pie_left {
                    limit = pie_left;
                }
                let ceiling_left = match self.subs[s].ceiling {
                    Some(c) => (c - self.subs[s].usage).max(0.0),
                    None => f64::MAX,
                };
                let idle = self.has_idle(s);
                let result = if !idle {
                    if self.subs[s].matched > 0 || self.subs[s].idle > 0 {
                        self.subs[s].limited_by = LimitedBy::Nothing;
                    }
                    TurnResult::Done
                } else if (limit < self.min_weight || pie_left < self.min_weight) && spin > 1 {
                    TurnResult::Resume
                } else if ceiling_left == 0.0 || ceiling_left < self.min_weight {
                    self.subs[s].limited_by = LimitedBy::Ceiling;
                    TurnResult::Done
                } else {
                    let r = self.turn(
                        s,
                        neg_group,
                        limit,
                        unclaimed,
                        ceiling_left,
                        ignore_limit,
                        &mut pie_left,
                    );
                    if matches!(r, TurnResult::Done) && !self.has_idle(s) {
                        self.subs[s].limited_by = LimitedBy::Nothing;
                    } else if matches!(r, TurnResult::Done)
                        && self.subs[s].limited_by != LimitedBy::Ceiling
                    {
                        self.subs[s].limited_by = match self.subs[s].limits_rejected.clone() {
                            Some(n) => LimitedBy::ConcurrencyLimit(n),
                            None => LimitedBy::NoMatch,
                        };
                    }
                    r
                };
                match result {
                    TurnResult::Done => {
                        subs.remove(i);
                    }
                    TurnResult::Resume => i += 1,
                }
            }
            let progress = pie_left < pie_left_orig || subs.len() < count_orig;
            if !(progress && !subs.is_empty() && self.any_slot_left() && !floor_round) {
                break;
            }
        }
        if let Some(g) = group {
            if self.groups.nodes[g].usage >= group_quota - 1e-9 {
                for &s in &subs {
                    if self.has_idle(s) && self.subs[s].limited_by == LimitedBy::Share {
                        self.subs[s].limited_by = LimitedBy::GroupQuota;
                    }
                }
            }
        }
    }

    fn below_floor(&self, subs: &[usize]) -> Vec<usize> {
        subs.iter()
            .copied()
            .filter(|&s| self.subs[s].floor > 0.0 && self.subs[s].usage < self.subs[s].floor)
            .collect()
    }

    fn run(&mut self) {
        let all: Vec<usize> = (0..self.subs.len())
            .filter(|&s| self.subs[s].idle > 0)
            .collect();
        if !self.hgq {
            let floor = self.below_floor(&all);
            if !floor.is_empty() {
                self.negotiate_with_group(true, floor, f64::MAX, None);
            }
            self.negotiate_with_group(false, all, f64::MAX, None);
            return;
        }
        self.run_groups();
    }

    /// Group requested resources (running + idle, weighted).
    fn run_groups(&mut self) {
        let total = self.total_weight;
        for g in 0..self.groups.nodes.len() {
            let mut req = 0.0;
            for &s in &self.groups.nodes[g].submitters {
                let sb = &self.subs[s];
                req += sb.usage;
                req += sb
                    .jobs
                    .iter()
                    .map(|&k| self.jobs[k].request_weight)
                    .sum::<f64>();
            }
            // Submitters with running jobs but no idle ones still request what they run.
            for (i, sb) in self.subs.iter().enumerate() {
                if sb.group == g && sb.idle == 0 && !self.groups.nodes[g].submitters.contains(&i) {
                    req += sb.usage;
                }
            }
            self.groups.nodes[g].requested = req;
            self.groups.nodes[g].requested_at_start = req;
        }
        self.groups
            .assign_quotas(0, total, self.cfg.allow_quota_oversubscription);
        let any_accept =
            self.cfg.accept_surplus || self.cfg.groups.iter().any(|g| g.accept_surplus);
        let mut round = 0;
        while round < self.cfg.max_allocation_rounds {
            round += 1;
            for n in &mut self.groups.nodes {
                n.allocated = 0.0;
                n.subtree_requested = 0.0;
            }
            self.groups.fairshare(0);
            let mut allocated_total = 0.0;
            for n in &self.groups.nodes {
                allocated_total += n.allocated;
            }
            // Sort keys.
            for g in 0..self.groups.nodes.len() {
                let n = &self.groups.nodes[g];
                let mut ad = ClassAd::new();
                ad.insert_value("AccountingGroup", Value::str(&n.name));
                ad.insert_value("GroupQuota", Value::Real(n.quota));
                ad.insert_value("GroupResourcesAllocated", Value::Real(n.allocated));
                ad.insert_value("GroupResourcesInUse", Value::Real(n.usage));
                let v = match &self.cfg.group_sort_expr {
                    Some(e) => ad.eval_expr(e).as_number(),
                    None => None,
                };
                // Undefined or non-numeric sorts last (HTCondor uses FLT_MAX).
                self.groups.nodes[g].sort_key = v.unwrap_or(f32::MAX as f64);
            }
            let mut order: Vec<usize> = (0..self.groups.nodes.len()).collect();
            order.sort_by(|&a, &b| {
                let (x, y) = (&self.groups.nodes[a], &self.groups.nodes[b]);
                x.sort_key
                    .partial_cmp(&y.sort_key)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(a.cmp(&b))
            });
            for g in order {
                // GROUP_AUTOREGROUP: the root group's round also takes the submitters of every
                // group that has it, negotiating under `<none>` without a group limit of their
                // own (HTCondor 23.9's hgq_prepare_for_matchmaking appends them to the root's
                // submitter list, and its callback passes no group name for the root).
                let regroup = g == 0 && self.groups.nodes[0].autoregroup;
                let mut subs = self.groups.nodes[g].submitters.clone();
                if regroup {
                    for n in self.groups.nodes.iter().skip(1).filter(|n| n.autoregroup) {
                        subs.extend(n.submitters.iter().copied());
                    }
                }
                let n = &self.groups.nodes[g];
                if n.allocated <= 0.0 || subs.is_empty() {
                    continue;
                }
                if n.usage >= n.allocated && !self.cfg.consider_preemption {
                    continue;
                }
                let target = n.allocated.max(n.quota);
                let mut slots = target;
                if !self.cfg.use_slot_weights {
                    slots = slots.floor();
                }
                if self.cfg.strict_enforce_quota {
                    slots = self.groups.strict_enforce(g, slots);
                }
                let floor = self.below_floor(&subs);
                let group = if regroup { None } else { Some(g) };
                if regroup {
                    self.set_autoregroup_round(true);
                }
                if !floor.is_empty() {
                    self.negotiate_with_group(true, floor, slots, group);
                }
                self.negotiate_with_group(false, subs, slots, group);
                if regroup {
                    self.set_autoregroup_round(false);
                }
            }
            let mut usage_total = 0.0;
            for n in &mut self.groups.nodes {
                usage_total += n.usage.min(n.allocated);
                if n.usage < n.allocated {
                    n.requested = n.usage;
                } else {
                    n.requested += n.allocated;
                }
            }
            if usage_total >= allocated_total || !any_accept && round >= 1 && !self.any_slot_left()
            {
                break;
            }
        }
    }

    fn finish(mut self) -> Outcome {
        let mut out = Outcome::default();
        out.matches = std::mem::take(&mut self.matches);
        for s in &self.subs {
            if s.idle == 0 && s.matched == 0 {
                continue;
            }
            out.submitters.push(SubmitterFigures {
                name: s.name.clone(),
                group: self.groups.nodes[s.group].name.clone(),
                effective_priority: s.eup,
                real_priority: s.rup,
                priority_factor: s.factor,
                usage_before: s.usage_before,
                pie_slice: s.pie_slice.unwrap_or(0.0),
                floor: s.floor,
                ceiling: s.ceiling,
                idle_jobs: s.idle,
                matched: s.matched,
                matched_weight: s.matched_weight,
                preempted: s.preempted,
                limited_by: if s.idle == 0 {
                    LimitedBy::NoIdleJobs
                } else {
                    s.limited_by.clone()
                },
            });
        }
        out.submitters.sort_by(|a, b| {
            a.effective_priority
                .partial_cmp(&b.effective_priority)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.name.cmp(&b.name))
        });
        if self.hgq {
            let by_group = {
                let mut m: BTreeMap<usize, (usize, f64)> = BTreeMap::new();
                for x in &out.matches {
                    if let Some(g) = self.groups.find(&x.negotiating_group) {
                        let e = m.entry(g).or_insert((0, 0.0));
                        e.0 += 1;
                        e.1 += x.weight;
                    }
                }
                m
            };
            for (i, n) in self.groups.nodes.iter().enumerate() {
                let (matched, matched_weight) = by_group.get(&i).copied().unwrap_or((0, 0.0));
                out.groups.push(GroupFigures {
                    name: n.name.clone(),
                    config_quota: n.config_quota,
                    is_static: n.is_static,
                    quota: n.quota,
                    subtree_quota: n.subtree_quota,
                    allocated: n.allocated,
                    surplus: (n.allocated - n.quota).max(0.0),
                    accept_surplus: n.accept_surplus,
                    requested: n.requested_at_start,
                    usage_before: self
                        .subs
                        .iter()
                        .filter(|s| s.group == i)
                        .map(|s| s.usage_before)
                        .sum(),
                    matched,
                    matched_weight,
                    sort_key: n.sort_key,
                });
            }
        }
        out.rejections = std::mem::take(&mut self.rejections)
            .into_iter()
            .map(|((c, p), why)| (format!("{c}.{p}"), why))
            .collect();
        out.warnings = self.groups.warnings.clone();
        let st = &mut out.stats;
        let idle: usize = self.subs.iter().map(|s| s.idle).sum();
        let active = self.subs.iter().filter(|s| s.idle > 0).count();
        st.insert(
            "LastNegotiationCycleMatches0".into(),
            out.matches.len() as f64,
        );
        st.insert(
            "LastNegotiationCycleRejections0".into(),
            self.rejections_count as f64,
        );
        st.insert("LastNegotiationCycleNumIdleJobs0".into(), idle as f64);
        st.insert(
            "LastNegotiationCycleNumJobsConsidered0".into(),
            self.jobs_considered as f64,
        );
        st.insert(
            "LastNegotiationCycleActiveSubmitterCount0".into(),
            active as f64,
        );
        st.insert(
            "LastNegotiationCycleTotalSlots0".into(),
            self.total_slot_ads as f64,
        );
        st.insert(
            "LastNegotiationCycleTrimmedSlots0".into(),
            (self.total_slot_ads - self.trimmed) as f64,
        );
        st.insert(
            "LastNegotiationCycleCandidateSlots0".into(),
            self.slots.len() as f64,
        );
        st.insert(
            "LastNegotiationCycleSlotShareIter0".into(),
            self.pie_spins as f64,
        );
        st.insert(
            "LastNegotiationCyclePieSpins0".into(),
            self.pie_spins as f64,
        );
        st.insert("LastNegotiationCyclePies0".into(), self.pies as f64);
        st.insert("LastNegotiationCycleNumSchedulers0".into(), active as f64);
        st.insert("LastNegotiationCycleTime0".into(), self.now as f64);
        st.insert("LastNegotiationCycleEnd0".into(), self.now as f64);
        st.insert(
            "LastNegotiationCycleSubmittersShareLimit0".into(),
            self.subs
                .iter()
                .filter(|s| s.limited_by == LimitedBy::Share)
                .count() as f64,
        );
        st.insert(
            "LastNegotiationCycleAutoclusters0".into(),
            self.acs.len() as f64,
        );
        st.insert(
            "LastNegotiationCycleSlotClasses0".into(),
            self.slot_classes.count as f64,
        );
        st.insert(
            "LastNegotiationCycleMatchRate0".into(),
            out.matches.len() as f64,
        );
        out
    }
}

fn num_value(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9e15 {
        Value::Int(v as i64)
    } else {
        Value::Real(v)
    }
}

//! Preparation: turning the input ads into the cycle's [`Tables`] and its starting [`State`].
//!
//! Follows the first phases of HTCondor 23.9.6's Matchmaker::negotiationTime (matchmaker.cpp):
//! * slots (obtainAdsFromCollector, trimStartdAds, sumSlotWeights): absent and offline ads
//!   and ads outside `NEGOTIATOR_SLOT_CONSTRAINT` are dropped; the pie is the SlotWeight of
//!   everything left, busy slots included, summed before trimming Claimed/Idle slots, slots
//!   still retiring, and (without `NEGOTIATOR_CONSIDER_PREEMPTION`) every claimed slot;
//! * usage: each claimed slot's weight is charged to the user it advertises (preempting
//!   accounting group, preempting user, accounting group, remote user: the first found), and
//!   its concurrency limits count as in use;
//! * consumption policies (cp_supports_policy): a partitionable slot with a `MachineResources`
//!   list whose every asset but swap has a `Consumption<Asset>` is split within the cycle;
//!   the names its consumption reads become significant;
//! * `Remote*` attributes (addRemoteUserPrios, and with `NEGOTIATOR_CROSS_SLOT_PRIOS` the
//!   `slot<N>_*` ones): a claimed slot's ad gets its user's priority, usage and group;
//! * significant attributes (compute_significant_attrs): the names the job and slot
//!   `Requirements`/`Rank`, the request attributes and the negotiator's own expressions
//!   reference, closed through each ad; the slot classes and autoclusters are keyed on them;
//! * submitters: one per accounting name the idle jobs carry (the schedd's submitter ads),
//!   with priority, factor, floor and ceiling from the accountant's ledger, and their jobs in
//!   negotiation order (job priorities, then QDate, cluster, proc).
//!
//! Everything is read once per ad (see [`super::scan`]); slots that agree on every significant
//! attribute share a class and jobs that do share an autocluster (see [`super::keys`]), so that
//! matchmaking evaluates a pair once per (autocluster, class).
use super::config::NegotiatorConfig;
use super::figures::{Figures, Tally};
use super::groups::GroupTree;
use super::keys::{hash_expr, nonliteral_fingerprint, AcTable, FxHasher, Interner};
use super::limits::{parse_limits, LimitUsage};
use super::matchmaking::{priority_preemption_ruled_out, rank_preemption_ruled_out, RankConds};
use super::scan::*;
use super::state::{SlotState, State, SubmitterUse};
use super::tables::*;
use super::NegotiationInput;
use crate::accountant::{assign_group, bounded_slot_weight, Accountant};
use classad::{ClassAd, Expr, Value};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::Hasher;
use std::rc::Rc;

/// Builds the cycle's tables, its starting state and its first figures (slot counts, jobs
/// whose submitter cannot be told).
pub(super) fn prepare<'a>(
    input: &'a NegotiationInput,
    acct: &Accountant,
    cfg: &'a NegotiatorConfig,
    now: i64,
) -> (Tables<'a>, State, Figures) {
    let mut groups = GroupTree::build(cfg);
    let hgq = groups.nodes.len() > 1;
    let mut figures = Figures {
        total_slot_ads: input.slots.len(),
        ..Figures::default()
    };
    let mut subs = Submitters {
        acct,
        group_names: cfg.groups.iter().map(|g| g.name.clone()).collect(),
        index: HashMap::new(),
        list: Vec::new(),
        usage: Vec::new(),
    };
    let mut limit_usage = LimitUsage::default();
    let mut total_weight = 0.0;
    let mut min_weight = f64::MAX;
    let sn = SlotNames::new();
    // --- significant names (for slot classes and autoclusters)
    let mut names = significant_roots(cfg);
    // Closure of the referenced names through each ad. Only non-literal attributes carry
    // references, so ads whose non-literal attributes are identical have the same closure:
    // visit one ad per such fingerprint.
    let mut memo: HashMap<u64, Rc<Refs>> = HashMap::new();
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
                        Rc::new((
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
    // One slot and one job per fingerprint of non-literal attributes: between them they hold
    // every expression of every ad (see `slot_side_classes`).
    let (mut slot_fps, mut slot_fp_reps) = (HashSet::new(), Vec::new());
    let (mut job_fps, mut job_fp_reps) = (HashSet::new(), Vec::new());
    let mut slots: Vec<SlotInfo> = Vec::new();
    let mut slot_ads: Vec<ClassAd> = Vec::new();
    for (i, ad) in input.slots.iter().enumerate() {
        if bool_h(ad, &sn.absent) == Some(true) || bool_h(ad, &sn.offline) == Some(true) {
            figures.trimmed += 1;
            continue;
        }
        if let Some(c) = &cfg.slot_constraint {
            if !ad.eval_expr_with(c, None).is_true() {
                figures.trimmed += 1;
                continue;
            }
        }
        // Pie size: everything the negotiator owns, busy or not (HTCondor sums SlotWeight
        // before trimming claimed slots).
        let weight = slot_weight(cfg, ad);
        total_weight += weight;
        if weight > 0.0 {
            min_weight = f64::min(min_weight, weight);
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
        let remote = remote_name.map(|n| subs.get(&n, &groups));
        let running_limits = if claimed {
            str_h(ad, &sn.limits)
                .and_then(|s| parse_limits(&s).ok())
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        if let Some(r) = remote {
            subs.usage[r] += weight;
        }
        limit_usage.add(&running_limits);
        // Trimming (after counting usage).
        if claimed && !pslot {
            if !cfg.consider_preemption || activity == "Idle" || state == "Preempting" {
                figures.trimmed += 1;
                continue;
            }
            if !cfg.consider_early_preemption && num_h(ad, &sn.retirement).unwrap_or(0.0) > 0.0 {
                figures.trimmed += 1;
                continue;
            }
        } else if !pslot && !matches!(&*state, "Unclaimed" | "Backfill" | "Drained" | "") {
            // Owner, Matched...: their Requirements are False anyway (HTCondor does not trim
            // them, it fails to match them). A Drained slot stays: under a drain's START
            // expression (`condor_drain -start`) it takes jobs.
            figures.trimmed += 1;
            continue;
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
        let cp = if pslot {
            consumption_policy(&ad, &mut names)
        } else {
            None
        };
        let fp = nonliteral_fingerprint(&ad);
        if slot_fps.insert(fp) {
            slot_fp_reps.push(slot_ads.len());
        }
        visit(&ad, fp, &mut names);
        slots.push(SlotInfo {
            input: i,
            name,
            pslot,
            cp,
            weight,
            remote,
            current_rank,
            running_limits,
        });
        slot_ads.push(ad);
    }
    if min_weight == f64::MAX {
        min_weight = 1.0;
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
            figures.rejections.insert((cluster, proc), e);
            continue;
        }
        let s = subs.get(&sname, &groups);
        let request_weight = scan.num(field::REQUEST_CPUS).unwrap_or(1.0).max(0.0);
        let fp = scan.fingerprint;
        if job_fps.insert(fp) {
            job_fp_reps.push(i);
        }
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
    // Representatives: the first job of each autocluster, in input order (the order the
    // autocluster table numbered them in).
    let mut reps = vec![usize::MAX; acs.len()];
    let mut autoclusters = Vec::new();
    // Job classes: autoclusters of any submitter that agree on every significant name and on
    // their non-literal attributes match and rank alike, unless an expression reads the
    // `Submitter*` attributes negotiate() gives each submitter's requests.
    // What any expression can read, closed through every ad (the significant names are closed
    // through each ad from fixed roots, which a chain across a slot and a job can escape).
    let every_expression: Vec<&ClassAd> = slot_fp_reps
        .iter()
        .map(|&i| &slot_ads[i])
        .chain(job_fp_reps.iter().map(|&i| &input.jobs[i]))
        .collect();
    let per_submitter = reach(names.iter().cloned().collect(), &every_expression)
        .iter()
        .any(|n| n.starts_with("submitter") && n != "submitter");
    let mut job_classes = Interner::default();
    for j in &jobs {
        if reps[j.ac] == usize::MAX {
            reps[j.ac] = j.index;
            debug_assert_eq!(
                autoclusters.len(),
                j.ac,
                "autoclusters are numbered in job order"
            );
            let class = if per_submitter {
                j.ac
            } else {
                job_classes.intern_view(acs.view(j.ac), acs.fingerprint(j.ac))
            };
            autoclusters.push(AutoCluster {
                rep: j.index,
                submitter: j.submitter,
                class,
                slot_side: [class; 3],
            });
        }
    }
    slot_side_classes(cfg, &sig, &acs, &every_expression, &mut autoclusters);
    let mut job_classes = Vec::new();
    for (id, ac) in autoclusters.iter().enumerate() {
        if ac.class == job_classes.len() {
            job_classes.push(id);
        }
    }
    let has_cp = slots.iter().any(|s| s.cp.is_some());
    let volatile = names
        .iter()
        .any(|n| n.ends_with("resourcesinuse") && ephemeral(n));
    // --- remote ephemeral attributes in slot ads
    if cfg.cross_slot_prios {
        add_cross_slot_prios(&mut slot_ads, &mut subs, &groups);
    }
    for (s, ad) in slots.iter().zip(slot_ads.iter_mut()) {
        if let Some(r) = s.remote {
            let sub = &subs.list[r];
            ad.insert_value("RemoteUserPrio", Value::Real(sub.eup));
            ad.insert_value("RemoteUserResourcesInUse", Value::Real(subs.usage[r]));
            let g = &groups.nodes[sub.group];
            if sub.group != 0 {
                ad.insert_value("RemoteGroup", Value::str(&g.name));
                ad.insert_value("RemoteGroupQuota", Value::Real(g.quota));
            }
            ad.insert_value("RemoteNegotiatingGroup", Value::str(&g.name));
            ad.insert_value("RemoteAutoregroup", Value::Bool(false));
            ad.insert_value("RemoteUserFloor", Value::Real(sub.floor));
        }
    }
    // --- slot classes
    let mut classes = Interner::default();
    let mut slot_view: Vec<Option<&Expr>> = Vec::new();
    let slot_classes: Vec<usize> = slots
        .iter()
        .zip(&slot_ads)
        .map(|(s, ad)| {
            scan_sig(ad, &roles, &mut slot_view);
            classes.intern_view(&slot_view, s.pslot as u64)
        })
        .collect();
    let slot_states: Vec<SlotState> = slot_ads
        .into_iter()
        .zip(slot_classes)
        .map(|(ad, class)| SlotState {
            ad,
            class,
            taken: false,
        })
        .collect();
    let mut busy = Vec::new();
    let mut class_members: Vec<Rc<Vec<u32>>> = Vec::new();
    let no_priority_preemption = priority_preemption_ruled_out(cfg);
    for (i, (s, st)) in slots.iter().zip(&slot_states).enumerate() {
        if s.remote.is_some() {
            // Without NEGOTIATOR_CONSIDER_PREEMPTION a claimed slot is no candidate at all:
            // HTCondor trims it before matchmaking (trimStartdAds_PreemptionLogic,
            // matchmaker.cpp) and it still counts in the pie. Walking 50,000 claimed slots
            // for every autocluster was most of a full pool's cycle. With the default
            // PREEMPTION_REQUIREMENTS (False) only rank preemption is left, and a slot whose
            // literal Rank is not above its CurrentRank is no candidate for any job either:
            // left out the same way, the outcome is the one every autocluster's walk of it
            // would have found (preempt_state's None), without the walks.
            let never = no_priority_preemption && rank_preemption_ruled_out(&st.ad);
            if cfg.consider_preemption && !never {
                busy.push(i as u32);
            }
        } else {
            if class_members.len() <= st.class {
                class_members.resize(st.class + 1, Rc::default());
            }
            Rc::make_mut(&mut class_members[st.class]).push(i as u32);
        }
    }
    // --- submitter job lists: submitter, then job order; ties in input order (the sort
    // moves small keys, not jobs). Jobs stay in input order; each submitter lists its own in
    // negotiation order.
    let mut keys: Vec<(usize, JobOrder, u32)> = jobs
        .iter()
        .enumerate()
        .map(|(k, j)| (j.submitter, j.order, k as u32))
        .collect();
    keys.sort_unstable();
    let Submitters {
        list: mut sub_list,
        usage,
        ..
    } = subs;
    for &(s, _, k) in &keys {
        sub_list[s].jobs.push(k as usize);
        sub_list[s].idle += 1;
    }
    // --- group membership and usage
    for (i, (s, &u)) in sub_list.iter_mut().zip(&usage).enumerate() {
        s.usage_before = u;
        groups.nodes[s.group].usage += u;
        if s.idle > 0 {
            groups.nodes[s.group].submitters.push(i);
        }
    }
    figures.subs = vec![Tally::default(); sub_list.len()];
    let state = State {
        slots: slot_states,
        job_done: vec![false; jobs.len()],
        subs: usage.iter().map(|&usage| SubmitterUse { usage }).collect(),
        groups,
        classes,
        class_members,
        limit_usage,
        autoregroup_round: false,
    };
    let tables = Tables {
        cfg,
        input,
        now,
        slots,
        busy,
        jobs,
        acs: autoclusters,
        subs: sub_list,
        names: sig,
        job_classes,
        per_submitter,
        has_cp,
        hgq,
        volatile,
        total_weight,
        min_weight,
        rank_conds: RankConds::new(),
    };
    (tables, state, figures)
}

/// The names every cycle treats as significant before reading any ad: the attributes the
/// matchmaker reads by name and everything the negotiator's own expressions reference
/// (compute_significant_attrs' starting set).
pub(super) fn significant_roots(cfg: &NegotiatorConfig) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = [
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
    ]
    .into_iter()
    .map(String::from)
    .collect();
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
    names
}

/// The names an expression references: internal (`MY.` or bare) and external (`TARGET.`).
type Refs = (Vec<String>, Vec<String>);

/// The names reachable from `roots` through the expressions of `ads` (one ad per fingerprint
/// of non-literal attributes holds every expression there is), in either ad.
pub(super) fn reach(roots: Vec<String>, ads: &[&ClassAd]) -> BTreeSet<String> {
    let mut read: BTreeSet<String> = BTreeSet::new();
    let mut todo = roots;
    while let Some(n) = todo.pop() {
        if read.contains(&n) {
            continue;
        }
        for ad in ads {
            if let Some(e) = ad.lookup(&n) {
                let r = e.references();
                todo.extend(r.internal.into_iter().chain(r.external));
            }
        }
        read.insert(n);
    }
    read
}

/// [`AutoCluster::slot_side`]: for each slot-side expression, the names it can read in either
/// ad (its references, closed through every expression of `ads`, one ad per fingerprint of
/// non-literal attributes); autoclusters whose representatives agree on all of them share a
/// class. When one of them is not significant (autoclusters and slot classes do not tell ads
/// apart on it) the expression keeps the job classes.
fn slot_side_classes(
    cfg: &NegotiatorConfig,
    sig: &[(String, u64)],
    acs: &AcTable,
    ads: &[&ClassAd],
    autoclusters: &mut [AutoCluster],
) {
    let refs = |e: &Option<Expr>| -> Vec<String> {
        e.as_ref().map_or_else(Vec::new, |e| {
            let r = e.references();
            r.internal.into_iter().chain(r.external).collect()
        })
    };
    let roots = [
        refs(&cfg.pre_job_rank),
        refs(&cfg.post_job_rank),
        vec!["rank".to_string()],
    ];
    for (w, roots) in roots.into_iter().enumerate() {
        let read = reach(roots, ads);
        let at: Option<Vec<usize>> = read
            .iter()
            .map(|n| sig.binary_search_by(|(s, _)| s.as_str().cmp(n)).ok())
            .collect();
        let Some(at) = at else { continue };
        let mut classes = Interner::default();
        for (id, ac) in autoclusters.iter_mut().enumerate() {
            let view: Vec<Option<&Expr>> = at.iter().map(|&i| acs.view(id)[i]).collect();
            ac.slot_side[w] = classes.intern_view(&view, 0);
        }
    }
}

/// The submitters met during preparation, in the order met (claimed slots' users, then the
/// idle jobs' submitters, then users only named in `slot<N>_*` attributes).
struct Submitters<'a> {
    acct: &'a Accountant,
    group_names: Vec<String>,
    index: HashMap<String, usize>,
    list: Vec<Submitter>,
    /// Usage per submitter, from the claimed slots.
    usage: Vec<f64>,
}

impl Submitters<'_> {
    /// The submitter called `name`, added with its ledger record if new.
    fn get(&mut self, name: &str, groups: &GroupTree) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let gname = assign_group(&self.group_names, name);
        let group = groups.find(&gname).unwrap_or(0);
        let rec = self.acct.record(name);
        let factor = rec
            .map(|r| r.priority_factor)
            .unwrap_or_else(|| self.acct.default_factor(name));
        let rup = self.acct.real_priority(name);
        let i = self.list.len();
        self.list.push(Submitter {
            name: name.to_string(),
            group,
            eup: rup * factor,
            rup,
            factor,
            floor: rec.map(|r| r.floor).unwrap_or(0.0),
            ceiling: rec.and_then(|r| r.ceiling()),
            usage_before: 0.0,
            jobs: Vec::new(),
            idle: 0,
        });
        self.usage.push(0.0);
        self.index.insert(name.to_string(), i);
        i
    }
}

/// The assets of a partitionable slot with a consumption policy, as cp_supports_policy tells
/// one: a `MachineResources` string whose every asset but swap has a `Consumption<Asset>`.
/// The names a consumption reads (the asset, its `Consumption<Asset>` and what that references,
/// `Request<Asset>`) become significant, so that slot classes and autoclusters tell them apart.
fn consumption_policy(ad: &ClassAd, names: &mut BTreeSet<String>) -> Option<Rc<[String]>> {
    let Value::Str(list) = attr_value(ad, "MachineResources") else {
        return None;
    };
    let assets: Vec<String> = list
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|a| !a.is_empty() && !a.eq_ignore_ascii_case("swap"))
        .map(str::to_string)
        .collect();
    let mut exprs = Vec::with_capacity(assets.len());
    for a in &assets {
        exprs.push(ad.lookup(&format!("Consumption{a}"))?);
    }
    names.insert("machineresources".to_string());
    for (a, e) in assets.iter().zip(exprs) {
        let lower = a.to_ascii_lowercase();
        names.insert(format!("consumption{lower}"));
        names.insert(format!("request{lower}"));
        let r = e.references();
        names.extend(r.internal);
        names.extend(r.external);
        names.insert(lower);
    }
    Some(assets.into())
}

/// A slot's weight: `SlotWeight` (else `Cpus`) with `NEGOTIATOR_USE_SLOT_WEIGHTS`, else 1;
/// bounded as the ledger bounds it.
fn slot_weight(cfg: &NegotiatorConfig, ad: &ClassAd) -> f64 {
    if !cfg.use_slot_weights {
        return 1.0;
    }
    static NAMES: std::sync::OnceLock<(HName, HName)> = std::sync::OnceLock::new();
    let (w, c) = NAMES.get_or_init(|| (HName::new("SlotWeight"), HName::new("Cpus")));
    bounded_slot_weight(match ad.lookup_by_name(w) {
        Some(_) => num_h(ad, w).unwrap_or(1.0),
        None => num_h(ad, c).unwrap_or(1.0),
    })
}

/// `NEGOTIATOR_CROSS_SLOT_PRIOS`: every slot ad gets, for each slot N of its machine
/// (`1..=TotalSlots`) whose user it advertises (`slot<N>_PreemptingAccountingGroup`,
/// `_PreemptingUser`, `_AccountingGroup` or `_RemoteUser`, first found), that user's
/// `slot<N>_RemoteUserPrio`, `_RemoteUserResourcesInUse` and, for a group,
/// `_RemoteGroup` and `_RemoteGroupQuota` (matchmaker.cpp's addRemoteUserPrios).
fn add_cross_slot_prios(slot_ads: &mut [ClassAd], subs: &mut Submitters, groups: &GroupTree) {
    /// Bounds the loop on a hostile or broken `TotalSlots`.
    const MAX_SLOTS: i64 = 4096;
    for ad in slot_ads.iter_mut() {
        let total = eval_num(ad, "TotalSlots").unwrap_or(0.0);
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
            .find_map(|a| eval_str(ad, &format!("{p}{a}")));
            let Some(user) = user else { continue };
            let r = subs.get(&user, groups);
            let sub = &subs.list[r];
            ad.insert_value(&format!("{p}RemoteUserPrio"), Value::Real(sub.eup));
            ad.insert_value(
                &format!("{p}RemoteUserResourcesInUse"),
                Value::Real(subs.usage[r]),
            );
            if sub.group != 0 {
                let g = &groups.nodes[sub.group];
                ad.insert_value(&format!("{p}RemoteGroup"), Value::str(&g.name));
                ad.insert_value(&format!("{p}RemoteGroupQuota"), Value::Real(g.quota));
            }
        }
    }
}

/// The submitter a job is charged to: `AccountingGroup@domain` if the job has an
/// accounting group (`group.user`), else `Owner@domain`; `nice-user.` prefixed for nice jobs.
/// Written into `out` (cleared first), so that the common case allocates nothing.
fn job_submitter(j: &JobScan, out: &mut String) -> Result<(), String> {
    out.clear();
    let user = j.str(field::USER);
    let domain_of_user = user
        .as_deref()
        .and_then(|u| u.rsplit_once('@').map(|(_, d)| d));
    let uid_domain;
    let domain: &str = match domain_of_user {
        Some(d) => d,
        None => {
            uid_domain = j.str(field::UID_DOMAIN);
            uid_domain.as_deref().unwrap_or("")
        }
    };
    let owner_attr = j.str(field::OWNER);
    let owner: &str = match (&owner_attr, user.as_deref()) {
        (Some(o), _) => o,
        (None, Some(u)) => u.split('@').next().unwrap_or(u),
        (None, None) => return Err("job has neither Owner nor User".to_string()),
    };
    let group = j.str(field::ACCOUNTING_GROUP);
    let base: &str = match group.as_deref() {
        Some(g) if !g.is_empty() => g.split('@').next().unwrap_or(g),
        _ => owner,
    };
    if j.bool(field::NICE_USER) == Some(true) && !base.starts_with("nice-user.") {
        out.push_str("nice-user.");
    }
    out.push_str(base);
    if !domain.is_empty() {
        out.push('@');
        out.push_str(domain);
    }
    Ok(())
}

fn job_limits(j: &JobScan) -> JobLimits {
    let fixed = j.fields[field::LIMITS].is_some();
    let expr = j.fields[field::LIMITS_EXPR];
    match (fixed, expr) {
        (false, None) => JobLimits::None,
        (true, Some(_)) => JobLimits::Invalid(
            "job sets both ConcurrencyLimits and ConcurrencyLimitsExpr".to_string(),
        ),
        (false, Some(e)) => JobLimits::Expr(e.clone()),
        (true, None) => match j.ad.eval_attr(field::NAMES[field::LIMITS]) {
            Value::Str(s) => match parse_limits(&s) {
                Ok(v) if v.is_empty() => JobLimits::None,
                Ok(v) => JobLimits::Fixed(v),
                Err(e) => JobLimits::Invalid(e),
            },
            Value::Undefined => JobLimits::None,
            _ => JobLimits::Invalid("ConcurrencyLimits is not a string".to_string()),
        },
    }
}

/// Job order keys (HTCondor: PreJobPrio1, PreJobPrio2, JobPrio, PostJobPrio1, PostJobPrio2
/// descending; then QDate, ClusterId, ProcId ascending). Stored so that ascending sort works.
pub(super) fn job_order(j: &JobScan, cluster: i64, proc: i64) -> JobOrder {
    let v = |f: usize| j.num(f).map(|v| v as i64);
    (
        -v(field::PRE1).unwrap_or(i64::MIN + 1),
        -v(field::PRE2).unwrap_or(i64::MIN + 1),
        -v(field::PRIO).unwrap_or(0),
        -v(field::POST1).unwrap_or(i64::MIN + 1),
        -v(field::POST2).unwrap_or(i64::MIN + 1),
        v(field::QDATE).unwrap_or(0),
        cluster,
        proc,
    )
}

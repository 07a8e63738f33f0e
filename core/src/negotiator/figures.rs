//! What the cycle counts and records as it runs: the matches, the rejected jobs, why each
//! submitter stopped, and the counters behind the `LastNegotiationCycle*` statistics.
//!
//! HTCondor keeps these in NegotiationCycleStats (matches, rejections, pies, pie spins, jobs
//! considered, slot counts) and in the submitter ads' accounting attributes (SubmitterShare,
//! SubmitterLimit); publishNegotiationCycleStats turns them into the negotiator ad's
//! attributes. Nothing here is read back by matchmaking except where a submitter's figures
//! decide what it is reported as limited by.
use super::candidates::Choice;
use super::outcome::*;
use super::state::State;
use super::tables::Tables;
use std::collections::BTreeMap;

/// The cycle's figures.
#[derive(Default)]
pub(super) struct Figures {
    pub matches: Vec<Match>,
    /// Jobs not matched, by `(cluster, proc)`, with the last reason (a job matched later in
    /// the cycle is taken out).
    pub rejections: BTreeMap<(i64, i64), String>,
    /// Per submitter of [`super::tables::Tables::subs`].
    pub subs: Vec<Tally>,
    /// Slot ads in the input.
    pub total_slot_ads: usize,
    /// Slot ads dropped by preparation (absent, offline, outside the slot constraint, claimed
    /// and not preemptable).
    pub trimmed: usize,
    /// negotiateWithGroup calls.
    pub pies: u64,
    pub pie_spins: u64,
    /// Requests a turn took to matchmaking (HTCondor's num_jobs_considered).
    pub jobs_considered: u64,
    /// Requests that found no slot, counted each time (a job may be rejected in several
    /// spins).
    pub rejections_count: u64,
}

/// One submitter's figures.
#[derive(Clone, Debug)]
pub(super) struct Tally {
    pub matched: usize,
    pub matched_weight: f64,
    /// Its slots taken by other jobs' preemption in this cycle.
    pub preempted: usize,
    /// Its fair share of the pie (first spin of its first non-floor pie).
    pub pie_slice: Option<f64>,
    pub limited_by: LimitedBy,
    /// The last concurrency limit that turned one of its jobs away.
    pub limits_rejected: Option<String>,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            matched: 0,
            matched_weight: 0.0,
            preempted: 0,
            pie_slice: None,
            limited_by: LimitedBy::NoIdleJobs,
            limits_rejected: None,
        }
    }
}

impl Figures {
    /// Counts a request of job `k` that found no slot, and why.
    pub fn reject(&mut self, t: &Tables, k: usize, why: String) {
        let j = &t.jobs[k];
        self.rejections_count += 1;
        self.rejections.insert((j.cluster, j.proc), why);
    }

    /// Records the match of job `k` of submitter `sub`, negotiating under
    /// `negotiating_group`, with the chosen slot (which preempted submitter `preempted`).
    pub fn record_match(
        &mut self,
        t: &Tables,
        k: usize,
        sub: usize,
        negotiating_group: &str,
        choice: Choice,
        preempted: Option<usize>,
    ) {
        let job = &t.jobs[k];
        let info = &t.slots[choice.si];
        self.rejections.remove(&(job.cluster, job.proc));
        if let Some(r) = preempted {
            self.subs[r].preempted += 1;
        }
        let f = &mut self.subs[sub];
        f.matched += 1;
        f.matched_weight += choice.cost;
        self.matches.push(Match {
            job: format!("{}.{}", job.cluster, job.proc),
            job_index: job.index,
            autocluster: job.ac,
            submitter: t.subs[sub].name.clone(),
            negotiating_group: negotiating_group.to_string(),
            slot: info.name.clone(),
            slot_index: info.input,
            reason: choice.reason,
            preempts: preempted.map(|r| t.subs[r].name.clone()),
            weight: choice.cost,
            carved: choice.carved,
        });
    }

    /// The cycle's [`Outcome`], from its figures and its final tables and state.
    pub fn into_outcome(self, t: &Tables, st: &State) -> Outcome {
        let stats = self.stats(t, st);
        let submitters = self.submitter_figures(t, st);
        let groups = if t.hgq {
            group_figures(t, st, &self.matches)
        } else {
            Vec::new()
        };
        Outcome {
            matches: self.matches,
            submitters,
            groups,
            rejections: self
                .rejections
                .into_iter()
                .map(|((c, p), why)| (format!("{c}.{p}"), why))
                .collect(),
            warnings: st.groups.warnings.clone(),
            stats,
        }
    }

    /// Per submitter that had idle jobs or got matches, in EUP order (then name).
    fn submitter_figures(&self, t: &Tables, st: &State) -> Vec<SubmitterFigures> {
        let mut out = Vec::new();
        for (s, f) in t.subs.iter().zip(&self.subs) {
            if s.idle == 0 && f.matched == 0 {
                continue;
            }
            out.push(SubmitterFigures {
                name: s.name.clone(),
                group: st.groups.nodes[s.group].name.clone(),
                effective_priority: s.eup,
                real_priority: s.rup,
                priority_factor: s.factor,
                usage_before: s.usage_before,
                pie_slice: f.pie_slice.unwrap_or(0.0),
                floor: s.floor,
                ceiling: s.ceiling,
                idle_jobs: s.idle,
                matched: f.matched,
                matched_weight: f.matched_weight,
                preempted: f.preempted,
                limited_by: if s.idle == 0 {
                    LimitedBy::NoIdleJobs
                } else {
                    f.limited_by.clone()
                },
            });
        }
        out.sort_by(|a, b| {
            a.effective_priority
                .partial_cmp(&b.effective_priority)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.name.cmp(&b.name))
        });
        out
    }

    /// The `LastNegotiationCycle*0` statistics (publishNegotiationCycleStats' names).
    fn stats(&self, t: &Tables, st: &State) -> BTreeMap<String, f64> {
        let idle: usize = t.subs.iter().map(|s| s.idle).sum();
        let active = t.subs.iter().filter(|s| s.idle > 0).count();
        let matches = self.matches.len() as f64;
        let share_limited = self
            .subs
            .iter()
            .filter(|f| f.limited_by == LimitedBy::Share)
            .count();
        [
            ("Matches", matches),
            ("Rejections", self.rejections_count as f64),
            ("NumIdleJobs", idle as f64),
            ("NumJobsConsidered", self.jobs_considered as f64),
            ("ActiveSubmitterCount", active as f64),
            ("TotalSlots", self.total_slot_ads as f64),
            ("TrimmedSlots", (self.total_slot_ads - self.trimmed) as f64),
            ("CandidateSlots", t.slots.len() as f64),
            ("SlotShareIter", self.pie_spins as f64),
            ("PieSpins", self.pie_spins as f64),
            ("Pies", self.pies as f64),
            ("NumSchedulers", active as f64),
            ("Time", t.now as f64),
            ("End", t.now as f64),
            ("SubmittersShareLimit", share_limited as f64),
            ("Autoclusters", t.acs.len() as f64),
            ("SlotClasses", st.classes.count as f64),
            ("MatchRate", matches),
        ]
        .into_iter()
        .map(|(name, value)| (format!("LastNegotiationCycle{name}0"), value))
        .collect()
    }
}

/// Per group, in tree order: quotas and allocation from the last round, demand and usage at
/// the start, and what was matched under it.
fn group_figures(t: &Tables, st: &State, matches: &[Match]) -> Vec<GroupFigures> {
    let mut by_group: BTreeMap<usize, (usize, f64)> = BTreeMap::new();
    for x in matches {
        if let Some(g) = st.groups.find(&x.negotiating_group) {
            let e = by_group.entry(g).or_insert((0, 0.0));
            e.0 += 1;
            e.1 += x.weight;
        }
    }
    let mut out = Vec::new();
    for (i, n) in st.groups.nodes.iter().enumerate() {
        let (matched, matched_weight) = by_group.get(&i).copied().unwrap_or((0, 0.0));
        out.push(GroupFigures {
            name: n.name.clone(),
            config_quota: n.config_quota,
            is_static: n.is_static,
            quota: n.quota,
            subtree_quota: n.subtree_quota,
            allocated: n.allocated,
            surplus: (n.allocated - n.quota).max(0.0),
            accept_surplus: n.accept_surplus,
            requested: n.requested_at_start,
            usage_before: t
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
    out
}

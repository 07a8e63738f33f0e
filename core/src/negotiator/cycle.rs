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
use super::candidates::Caches;
use super::config::NegotiatorConfig;
use super::figures::Figures;
use super::outcome::*;
use super::prep::prepare;
use super::state::State;
use super::tables::*;
use super::NegotiationInput;
use crate::accountant::Accountant;
use std::collections::BTreeMap;

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

pub(super) struct Cycle<'a> {
    pub tables: Tables<'a>,
    pub state: State,
    pub caches: Caches,
    pub figures: Figures,
}

impl<'a> Cycle<'a> {
    fn new(
        input: &'a NegotiationInput,
        acct: &'a Accountant,
        cfg: &'a NegotiatorConfig,
        now: i64,
    ) -> Self {
        let (tables, state, figures) = prepare(input, acct, cfg, now);
        Cycle {
            tables,
            state,
            caches: Caches::default(),
            figures,
        }
    }

    /// Phase 4 of negotiationTime: without groups, a floor round and the pie over every
    /// submitter; with groups, the allocation rounds.
    fn run(&mut self) {
        if self.tables.hgq {
            self.negotiate_groups();
        } else {
            self.negotiate_pool();
        }
    }

    fn finish(self) -> Outcome {
        let Cycle {
            tables: t,
            state: st,
            figures: mut fig,
            ..
        } = self;
        let mut out = Outcome::default();
        out.matches = std::mem::take(&mut fig.matches);
        for (s, f) in t.subs.iter().zip(&fig.subs) {
            if s.idle == 0 && f.matched == 0 {
                continue;
            }
            out.submitters.push(SubmitterFigures {
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
        out.submitters.sort_by(|a, b| {
            a.effective_priority
                .partial_cmp(&b.effective_priority)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.name.cmp(&b.name))
        });
        if t.hgq {
            let by_group = {
                let mut m: BTreeMap<usize, (usize, f64)> = BTreeMap::new();
                for x in &out.matches {
                    if let Some(g) = st.groups.find(&x.negotiating_group) {
                        let e = m.entry(g).or_insert((0, 0.0));
                        e.0 += 1;
                        e.1 += x.weight;
                    }
                }
                m
            };
            for (i, n) in st.groups.nodes.iter().enumerate() {
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
        }
        out.rejections = std::mem::take(&mut fig.rejections)
            .into_iter()
            .map(|((c, p), why)| (format!("{c}.{p}"), why))
            .collect();
        out.warnings = st.groups.warnings.clone();
        let st_ = &mut out.stats;
        let idle: usize = t.subs.iter().map(|s| s.idle).sum();
        let active = t.subs.iter().filter(|s| s.idle > 0).count();
        let n_matches = out.matches.len() as f64;
        for (name, value) in [
            ("Matches", n_matches),
            ("Rejections", fig.rejections_count as f64),
            ("NumIdleJobs", idle as f64),
            ("NumJobsConsidered", fig.jobs_considered as f64),
            ("ActiveSubmitterCount", active as f64),
            ("TotalSlots", fig.total_slot_ads as f64),
            ("TrimmedSlots", (fig.total_slot_ads - fig.trimmed) as f64),
            ("CandidateSlots", t.slots.len() as f64),
            ("SlotShareIter", fig.pie_spins as f64),
            ("PieSpins", fig.pie_spins as f64),
            ("Pies", fig.pies as f64),
            ("NumSchedulers", active as f64),
            ("Time", t.now as f64),
            ("End", t.now as f64),
            (
                "SubmittersShareLimit",
                fig.subs
                    .iter()
                    .filter(|f| f.limited_by == LimitedBy::Share)
                    .count() as f64,
            ),
            ("Autoclusters", t.acs.len() as f64),
            ("SlotClasses", st.classes.count as f64),
            ("MatchRate", n_matches),
        ] {
            st_.insert(format!("LastNegotiationCycle{name}0"), value);
        }
        out
    }
}

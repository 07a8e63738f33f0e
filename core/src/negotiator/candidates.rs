//! Candidate slots: for each request, the matching slots best first, and the choice of the
//! first one the turn's limits admit. Everything here is a cache of what
//! [`super::matchmaking`] would compute again from the tables and the state.
//!
//! HTCondor 23.9.6's matchmakingAlgorithm scans every startd ad for each request, keeps the
//! best by calculateRanks' keys and, with matchlist caching, sorts all the admissible
//! candidates into a MatchList (MatchListType::add_candidate, sort_compare) from which later
//! requests of the same autocluster, submitter and `only_for_startdrank` pop
//! (pop_candidate); negotiateWithGroup drops the list at each pie spin (DeleteMatchList). Here:
//! * a pair is evaluated once per (autocluster, slot class) ([`Caches::pair`]): slots of a
//!   class are identical for every significant attribute, so they match and rank alike;
//! * an autocluster's candidates are built once ([`Caches::lists`]) as buckets of slots with
//!   identical sort keys (a whole class of idle slots, or one claimed slot), best first and,
//!   for equal keys, in input order (HTCondor keeps the first best slot in collector order);
//!   the list survives the spins because a taken slot is skipped and a carved partitionable
//!   slot is re-sorted under its new class as the walk meets it;
//! * the job ad a request is matched as (with the `Submitter*` attributes negotiate() assigns)
//!   is built once per autocluster ([`Caches::job_view`]).
//!
//! When an expression reads a `*ResourcesInUse` attribute (which every match changes) the
//! turn drops these caches ([`Caches::clear`]); so does the autoregroup round, whose jobs see
//! other `Submitter*` values. Whether a request is answered "from the MatchList" (the cached
//! path's different limit rule, see [`super::matchmaking::Budget::admits`]) is decided by the
//! turn, not by whether a list is cached here.
use super::keys::FxBuild;
use super::limits::parse_limits;
use super::matchmaking::{eval_pair, match_cost, preempt_state, Budget, PairEval, Request};
use super::outcome::MatchReason;
use super::state::State;
use super::tables::{JobLimits, Tables};
use classad::{ClassAd, Value};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::rc::Rc;

/// Candidate slots of one autocluster with identical sort keys: a whole slot class (idle
/// slots of a class all sort alike) or a single slot (busy slots, carved partitionable slots).
#[derive(Clone, Debug)]
pub(super) struct Bucket {
    /// calculateRanks' keys: pre-job rank, job rank, post-job rank, preemption state
    /// ([`MatchReason`] as a number) and preemption rank.
    keys: [f64; 5],
    class: usize,
    /// A class of static slots shares the class's member list (it never changes, slots are
    /// only taken), so that listing candidates costs nothing per slot; partitionable classes
    /// and single slots get their own list.
    slots: Rc<Vec<u32>>,
    /// Entries before this index are known to be taken.
    cursor: usize,
}

fn keys_cmp(a: &[f64; 5], b: &[f64; 5]) -> Ordering {
    for i in 0..5 {
        match a[i].partial_cmp(&b[i]).unwrap_or(Ordering::Equal) {
            Ordering::Equal => continue,
            o => return o,
        }
    }
    Ordering::Equal
}

/// One request as the candidate walk sees it.
pub(super) struct Ask<'j> {
    /// The job (index into [`Tables::jobs`]) and its autocluster.
    pub k: usize,
    pub ac: usize,
    /// Its submitter.
    pub sub: usize,
    /// The job ad as matched (see [`Caches::job_view`]).
    pub job: &'j ClassAd,
    pub budget: Budget,
    /// Over its submitter limit in the first spin: only startd-rank preemption may match.
    pub only_rank: bool,
    /// Answered from the MatchList of the previous request (see [`Budget::admits`]).
    pub cached: bool,
}

/// The slot a request takes.
pub(super) struct Choice {
    pub si: usize,
    pub reason: MatchReason,
    pub cost: f64,
    pub req: Request,
    /// Concurrency limits the match takes.
    pub limits: Vec<(String, f64)>,
}

/// Why a request found no slot.
pub(super) struct Miss {
    /// A matching slot was turned away by the submitter limit.
    pub limit: bool,
    /// A matching slot was turned away by this concurrency limit (`ConcurrencyLimitsExpr`).
    pub concurrency: Option<String>,
}

/// What the cycle remembers only to go faster.
#[derive(Default)]
pub(super) struct Caches {
    /// Per (autocluster, slot class): the pair's evaluation, `None` if they do not match.
    pairs: HashMap<(usize, usize), Option<PairEval>, FxBuild>,
    /// Per autocluster: its candidate buckets, best first.
    lists: HashMap<usize, Vec<Bucket>, FxBuild>,
    /// Per autocluster: the job ad as matched.
    job_views: HashMap<usize, ClassAd, FxBuild>,
    /// Per class of static slots: members before this index are taken.
    class_first: Vec<usize>,
}

impl Caches {
    /// Forgets every evaluation (pairs, candidate lists, job views).
    pub fn clear(&mut self) {
        self.job_views.clear();
        self.pairs.clear();
        self.lists.clear();
    }

    /// Forgets the job views (their `*ResourcesInUse` changed).
    pub fn clear_job_views(&mut self) {
        self.job_views.clear();
    }

    /// The job ad as matchmaking sees it for autocluster `ac`: the representative plus the
    /// `Submitter*` attributes HTCondor's negotiate() assigns to each request.
    pub fn job_view(
        &mut self,
        t: &Tables,
        st: &State,
        ac: usize,
        negotiating_group: usize,
    ) -> ClassAd {
        if let Some(v) = self.job_views.get(&ac) {
            return v.clone();
        }
        let rep = t.acs[ac].rep;
        let sub = t.acs[ac].submitter;
        let s = &t.subs[sub];
        let mut ad = t.input.jobs[rep].clone();
        ad.insert_value("SubmitterUserPrio", Value::Real(s.eup));
        ad.insert_value(
            "SubmitterUserResourcesInUse",
            Value::Real(st.subs[sub].usage),
        );
        let g = &st.groups.nodes[s.group];
        if s.group != 0 {
            ad.insert_value("SubmitterGroup", Value::str(&g.name));
            ad.insert_value("SubmitterGroupQuota", Value::Real(g.quota));
            ad.insert_value("SubmitterGroupResourcesInUse", Value::Real(g.usage));
        }
        let ng = &st.groups.nodes[negotiating_group];
        ad.insert_value("SubmitterNegotiatingGroup", Value::str(&ng.name));
        ad.insert_value("SubmitterAutoregroup", Value::Bool(st.autoregroup_round));
        self.job_views.insert(ac, ad.clone());
        ad
    }

    /// The evaluation of the request's autocluster with slot `si`'s class.
    fn pair(&mut self, t: &Tables, st: &State, ask: &Ask, si: usize) -> Option<PairEval> {
        let key = (ask.ac, st.slots[si].class);
        if let Some(v) = self.pairs.get(&key) {
            return *v;
        }
        let v = eval_pair(t, st, ask.job, si);
        self.pairs.insert(key, v);
        v
    }

    /// Slot `si` as a one-slot bucket for the request, if it matches and may be taken.
    fn candidate(&mut self, t: &Tables, st: &State, ask: &Ask, si: usize) -> Option<Bucket> {
        let pe = self.pair(t, st, ask, si)?;
        let (reason, prank) = preempt_state(t, st, ask.job, ask.sub, si, &pe)?;
        Some(Bucket {
            keys: [pe.pre, pe.job_rank, pe.post, reason as u8 as f64, prank],
            class: st.slots[si].class,
            slots: Rc::new(vec![si as u32]),
            cursor: 0,
        })
    }

    /// Every slot the request's autocluster may take, in buckets, best first.
    fn build(&mut self, t: &Tables, st: &State, ask: &Ask) -> Vec<Bucket> {
        let mut out = Vec::new();
        let n_classes = st.class_members.len();
        if self.class_first.len() < n_classes {
            self.class_first.resize(n_classes, 0);
        }
        for class in 0..n_classes {
            let list = &st.class_members[class];
            let Some(&first) = list.first() else {
                continue;
            };
            let (members, cursor) = if t.slots[first as usize].pslot {
                let own: Vec<u32> = list
                    .iter()
                    .copied()
                    .filter(|&x| !st.slots[x as usize].taken)
                    .collect();
                (Rc::new(own), 0)
            } else {
                let mut c = self.class_first[class];
                while c < list.len() && st.slots[list[c] as usize].taken {
                    c += 1;
                }
                self.class_first[class] = c;
                (Rc::clone(list), c)
            };
            let Some(&rep) = members.get(cursor) else {
                continue;
            };
            if let Some(pe) = self.pair(t, st, ask, rep as usize) {
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
        for &si in &t.busy {
            let si = si as usize;
            if st.slots[si].taken {
                continue;
            }
            if let Some(b) = self.candidate(t, st, ask, si) {
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

    /// The best slot the request may take: its autocluster's candidates walked best first,
    /// skipping slots taken since, re-sorting carved partitionable slots, and passing over
    /// candidates the budget or a concurrency limit turns away.
    pub fn pick(&mut self, t: &Tables, st: &State, ask: &Ask) -> Result<Choice, Miss> {
        let (ac, job) = (ask.ac, ask.job);
        if !self.lists.contains_key(&ac) {
            let l = self.build(t, st, ask);
            self.lists.insert(ac, l);
        }
        let mut miss = Miss {
            limit: false,
            concurrency: None,
        };
        let mut chosen = None;
        let mut list = self.lists.remove(&ac).unwrap_or_default();
        let mut bi = 0;
        'buckets: while bi < list.len() {
            let reason = match list[bi].keys[3] as u8 {
                2 => MatchReason::NoPreemption,
                1 => MatchReason::Rank,
                _ => MatchReason::Priority,
            };
            // only_for_startdrank (matchmakingAlgorithm): an unclaimed slot is skipped, a
            // claimed one only counts if rankCondStd holds (reason "rank"), and no priority
            // preemption is considered.
            if ask.only_rank && reason != MatchReason::Rank {
                bi += 1;
                continue;
            }
            let mut idx = list[bi].cursor;
            while idx < list[bi].slots.len() {
                let si = list[bi].slots[idx] as usize;
                if st.slots[si].taken {
                    if idx == list[bi].cursor {
                        list[bi].cursor += 1;
                    }
                    idx += 1;
                    continue;
                }
                if st.slots[si].class != list[bi].class {
                    // A partitionable slot was carved since the list was built: take it out
                    // and put it back where its new keys sort.
                    Rc::make_mut(&mut list[bi].slots).remove(idx);
                    if let Some(fresh) = self.candidate(t, st, ask, si) {
                        let at = list[bi + 1..]
                            .iter()
                            .position(|x| keys_cmp(&x.keys, &fresh.keys) == Ordering::Less)
                            .map(|p| p + bi + 1)
                            .unwrap_or(list.len());
                        list.insert(at, fresh);
                    }
                    continue;
                }
                let Some(pe) = self.pair(t, st, ask, si) else {
                    idx += 1;
                    continue;
                };
                let cost = match_cost(t, st, si, pe.req);
                if !ask.budget.admits(reason, cost, ask.cached) {
                    miss.limit = true;
                    // Every slot of this bucket costs the same unless partitionable.
                    if t.slots[si].pslot {
                        idx += 1;
                        continue;
                    }
                    break;
                }
                let limits = match &t.jobs[ask.k].limits {
                    JobLimits::Expr(e) => {
                        let limits = match job.eval_expr_with(e, Some(&st.slots[si].ad)) {
                            Value::Str(s) => match parse_limits(&s) {
                                Ok(v) => v,
                                Err(_) => {
                                    idx += 1;
                                    continue;
                                }
                            },
                            _ => Vec::new(),
                        };
                        if let Some(n) = st.limit_usage.rejects(&limits, t.cfg) {
                            miss.concurrency = Some(n);
                            idx += 1;
                            continue;
                        }
                        limits
                    }
                    // Fixed limits were checked before matchmaking.
                    JobLimits::Fixed(v) => v.clone(),
                    JobLimits::None | JobLimits::Invalid(_) => Vec::new(),
                };
                chosen = Some(Choice {
                    si,
                    reason,
                    cost,
                    req: pe.req,
                    limits,
                });
                break 'buckets;
            }
            bi += 1;
        }
        self.lists.insert(ac, list);
        chosen.ok_or(miss)
    }
}

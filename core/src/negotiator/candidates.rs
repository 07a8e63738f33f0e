//! Candidate slots: for each request, the matching slots best first, and the choice of the
//! first one the turn's limits admit. Everything here is a cache of what
//! [`super::matchmaking`] would compute again from the tables and the state, except the order
//! of a match list that split slots went back into (below).
//!
//! HTCondor 23.9.6's matchmakingAlgorithm scans every startd ad for each request, keeps the
//! best by calculateRanks' keys and, with matchlist caching, sorts all the admissible
//! candidates into a MatchList (MatchListType::add_candidate, sort_compare) from which later
//! requests of the same autocluster, submitter and `only_for_startdrank` pop
//! (pop_candidate); negotiateWithGroup drops the list at each pie spin (DeleteMatchList). Here:
//! * a pair is evaluated once per (job class, slot class) ([`Caches::pair`]): slots of a
//!   class are identical for every significant attribute, so they match, rank and cost alike,
//!   and so do the autoclusters of a job class ([`super::tables::AutoCluster::class`]: the
//!   submitters' autoclusters that agree on every significant attribute), which matters when
//!   slots are all different (real startds advertise their own `Disk`, `KFlops`, `Mips`...)
//!   and classes of slots no longer collapse;
//! * without claimed slots or a consumption policy, the candidates of a job class are sorted
//!   once ([`Order`]), and each of its autoclusters walks that order ([`Walk`]) from the first
//!   class with a slot left, classes with equal keys put in the order of their first slot left
//!   when the autocluster first asks, as sorting its own list then would (`build` is then run
//!   once per job class instead of once per autocluster: sorting every class of a
//!   heterogeneous pool for each autocluster was most of such a cycle);
//! * an autocluster's candidates are built as buckets of slots with identical sort keys (a
//!   whole class of idle slots, or one claimed slot), best first and, for equal keys, in input
//!   order (HTCondor keeps the first best slot in collector order);
//! * the job ad a request is matched as (with the `Submitter*` attributes negotiate() assigns)
//!   is built once per autocluster ([`Caches::job_view`]).
//!
//! Without a slot with a consumption policy no slot changes during the cycle, it is only taken
//! (a partitionable slot too: negotiate() removes every matched offer but a split one), so an
//! autocluster's candidates are built once ([`Caches::lists`]) and survive the spins: walking
//! them from the start, skipping taken slots, is a fresh scan, and popping them is the cached
//! MatchList. With one ([`Tables::has_cp`]) a match splits the slot (cp_deduct_assets) and it
//! stays, so each fresh scan builds the list anew from the slots as they are, keeping only the
//! candidates the scan admits, and later requests pop it ([`MatchList`]). After such a match
//! HTCondor re-tests the split slot against the same request and, if it still matches, puts
//! it back (returnPslotToMatchList, MatchListType::insert_candidate) at the head, then moves it
//! toward the tail past every entry it outranks: a split slot that now sorts better than the
//! next entry (the default `NEGOTIATOR_PRE_JOB_RANK` prefers smaller slots) goes behind the
//! entries worse than it, and one that does not stays at the head. The next fresh scan sorts
//! it where it belongs.
//!
//! When an expression reads a `*ResourcesInUse` attribute (which every match changes) the
//! turn drops these caches ([`Caches::clear`]); so does the autoregroup round, whose jobs see
//! other `Submitter*` values. Whether a request is answered "from the MatchList" (the cached
//! path's different limit rule, see [`super::matchmaking::Budget::admits`]) is decided by the
//! turn, not by whether a list is cached here.
use super::keys::FxBuild;
use super::limits::parse_limits;
use super::matchmaking::{
    eval_match, eval_slot_side, match_cost, preempt_state, startd_carve, Budget, Consumption,
    PairEval, SlotSide,
};
use super::outcome::MatchReason;
use super::spread;
use super::state::State;
use super::tables::{JobLimits, Tables};
use classad::{ClassAd, Value};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::rc::Rc;

/// Candidate slots of one autocluster with identical sort keys: a whole slot class (idle
/// slots of a class all sort alike) or a single slot (busy slots, split slots going back
/// into a match list).
#[derive(Clone, Debug)]
pub(super) struct Bucket {
    /// calculateRanks' keys: pre-job rank, job rank, post-job rank, preemption state
    /// ([`MatchReason`] as a number) and preemption rank.
    keys: [f64; 5],
    class: usize,
    /// A class of slots that are only ever taken shares the class's member list (it never
    /// changes), so that listing candidates costs nothing per slot; classes of slots with a
    /// consumption policy and single slots get their own list.
    slots: Rc<Vec<u32>>,
    /// Entries before this index are known to be taken (or, in a [`MatchList`], popped).
    cursor: usize,
}

impl Bucket {
    /// Why a slot of this bucket would be taken.
    fn reason(&self) -> MatchReason {
        match self.keys[3] as u8 {
            2 => MatchReason::NoPreemption,
            1 => MatchReason::Rank,
            _ => MatchReason::Priority,
        }
    }

    /// The first slot not taken, the cursor moved up to it; `None` when none is left.
    fn first_live(&mut self, st: &State) -> Option<usize> {
        while let Some(&si) = self.slots.get(self.cursor) {
            if !st.slots[si as usize].taken {
                return Some(si as usize);
            }
            self.cursor += 1;
        }
        None
    }
}

/// calculateRanks' keys of an unclaimed candidate (no preemption, so no `PREEMPTION_RANK`).
fn unclaimed_keys(pe: &PairEval) -> [f64; 5] {
    [
        pe.pre,
        pe.job_rank,
        pe.post,
        MatchReason::NoPreemption as u8 as f64,
        -(f32::MAX as f64),
    ]
}

/// The first position from `i` on that may have a slot left (see [`Caches::open`]),
/// shortening the path on the way.
fn next_open(open: &mut [u32], mut i: usize) -> usize {
    while open[i] as usize != i {
        let next = open[open[i] as usize];
        open[i] = next;
        i = next as usize;
    }
    i
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
    /// With a consumption policy, what the match takes from the slot.
    pub consumption: Option<Rc<Consumption>>,
    /// For a partitionable slot, what the startd will carve: (cpus, memory MB, disk KB).
    pub carved: Option<(f64, f64, f64)>,
    /// Concurrency limits the match takes.
    pub limits: Vec<(String, f64)>,
}

/// Why a request found no slot.
#[derive(Clone, Debug, Default)]
pub(super) struct Miss {
    /// A matching slot was turned away by the submitter limit.
    pub limit: bool,
    /// A matching slot was turned away by this concurrency limit (`ConcurrencyLimitsExpr`).
    pub concurrency: Option<String>,
}

/// What the admission checks of one candidate found.
enum Admit {
    Take(Choice),
    /// Turned away by the submitter limit (every slot of its bucket would be: they cost the
    /// same).
    Limit,
    /// Turned away on its own (no match, a concurrency limit).
    Skip,
}

/// HTCondor's MatchList while a pool has slots with a consumption policy: the candidates of
/// the last fresh scan of one turn, best first, with what has been popped (entries before
/// `head`, slots before a bucket's cursor) gone and split slots put back as
/// insert_candidate puts them.
struct MatchList {
    ac: usize,
    only_rank: bool,
    entries: Vec<Bucket>,
    head: usize,
    /// A slot with a consumption policy the last pop matched: it goes back in (if it still
    /// matches) before the next pop, once the match has split it.
    returned: Option<usize>,
    /// Why candidates were turned away since the fresh scan, the scan included: a request the
    /// list cannot answer is rejected for all of them (MatchListType's diagnostics, which
    /// pops only add to: a candidate a pop discarded for the submitter limit still makes a
    /// later empty list "submitter limit exceeded", and its submitter resume in the next spin).
    turned_away: Miss,
}

/// The idle candidates of one job class, best first: each class of idle slots that matches,
/// with its sort keys, as [`Caches::build`] sorted them for the job class's first request.
/// Without claimed slots or a consumption policy slots are only ever taken, so the list any
/// later request of the job class would build is this one without the classes left with no
/// slot and, among classes with equal keys, the first live slot first (see [`Walk`]): the
/// autoclusters of a job class share one evaluation of the pool.
struct Order {
    /// (keys, slot class), best keys first.
    entries: Vec<([f64; 5], u32)>,
    /// The runs of entries with equal keys (more than one entry each): start and end.
    runs: Vec<(usize, usize)>,
    /// Per entry, whether it is in such a run: entries that are not stand at the same place
    /// in every walk of the order.
    tied: Vec<bool>,
    /// Per entry, the smallest SlotWeight of any slot of the classes from the start of its
    /// run of equal keys to the end: a request the submitter limit turns away at that weight
    /// is turned away by every class left, whatever order its walk has them in.
    floor: Vec<f64>,
}

/// One autocluster's walk of its job class's [`Order`].
struct Walk {
    order: Rc<Order>,
    /// With runs of equal keys, its own sequence of the order's entries: each run sorted by
    /// first live slot as of the autocluster's first request, as the list [`Caches::build`]
    /// would have built then has them. `None`: the order's own sequence.
    seq: Option<Vec<u32>>,
    /// Entries before this one have no slot left.
    head: usize,
}

/// What the cycle remembers only to go faster (and the turn's match list).
#[derive(Default)]
pub(super) struct Caches {
    /// Per (job class, slot class): the pair's evaluation, `None` if they do not match.
    pairs: HashMap<(usize, usize), Option<PairEval>, FxBuild>,
    /// Per (slot-side expression, autoclusters agreeing on what it reads), per slot class:
    /// its value, once evaluated (see [`super::tables::AutoCluster::slot_side`]).
    slot_sides: HashMap<(SlotSide, usize), Vec<Option<Option<f64>>>, FxBuild>,
    /// Per job class: its idle candidate classes, best first (pools without claimed slots or
    /// a consumption policy); `None` when its keys cannot be ordered (NaN).
    orders: HashMap<usize, Option<Rc<Order>>, FxBuild>,
    /// Per autocluster: its walk of its job class's order.
    walks: HashMap<usize, Walk, FxBuild>,
    /// Per job class, per position of its order (and one past the end): itself while the
    /// entry there may have a slot left, else a later position to look at instead
    /// ([`next_open`]). Only entries outside runs of equal keys are closed, as they stand at
    /// the same position in every walk: the autoclusters of a job class pass over a class
    /// taken by others once between them, not once each.
    open: HashMap<usize, Vec<u32>, FxBuild>,
    /// Per autocluster: its candidate buckets, best first (other pools without a consumption
    /// policy).
    lists: HashMap<usize, Vec<Bucket>, FxBuild>,
    /// Per autocluster: the job ad as matched.
    job_views: HashMap<usize, ClassAd, FxBuild>,
    /// Per class of slots only ever taken: members before this index are taken.
    class_first: Vec<usize>,
    /// Per class of slots only ever taken: every member is taken.
    class_gone: Vec<bool>,
    /// Every job class's pairs with the slots then left were evaluated at once ([`Caches::prefetch`]).
    spread_all: bool,
    /// The match list of the current turn (pools with a consumption policy). Not a cache:
    /// it keeps the order split slots went back in.
    match_list: Option<MatchList>,
    /// Build and sort each autocluster's candidates on its own, sharing no [`Order`] (the
    /// straightforward path the tests compare the shared one with).
    #[cfg(test)]
    pub per_autocluster: bool,
}

impl Caches {
    /// Forgets every evaluation (pairs, candidate lists, job views).
    pub fn clear(&mut self) {
        self.job_views.clear();
        self.pairs.clear();
        self.slot_sides.clear();
        self.spread_all = false;
        self.orders.clear();
        self.walks.clear();
        self.open.clear();
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
        let key = (t.acs[ask.ac].class, st.slots[si].class);
        if let Some(v) = self.pairs.get(&key) {
            return v.clone();
        }
        let class = key.1;
        let v = eval_match(t, st, ask.job, si).map(|(job_rank, consumption)| {
            let [pre, post, slot_rank] = SlotSide::ALL.map(|which| {
                let by = t.acs[ask.ac].slot_side[which as usize];
                let known = self.slot_sides.entry((which, by)).or_default();
                if known.len() <= class {
                    known.resize(st.class_members.len().max(class + 1), None);
                }
                *known[class]
                    .get_or_insert_with(|| eval_slot_side(t.cfg, &st.slots[si].ad, ask.job, which))
            });
            PairEval {
                job_rank,
                pre: pre.unwrap_or(-f64::MAX),
                post: post.unwrap_or(-f64::MAX),
                slot_rank,
                consumption,
            }
        });
        self.pairs.insert(key, v.clone());
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

    /// The index in its member list of the first slot of class `class` (of slots only ever
    /// taken) not taken yet, the class's cursor moved up to it; `None` when none is left.
    fn class_live(&mut self, st: &State, class: usize) -> Option<usize> {
        if self.class_first.len() <= class {
            let n = st.class_members.len().max(class + 1);
            self.class_first.resize(n, 0);
            self.class_gone.resize(n, false);
        }
        // Walks pass over classes taken by other autoclusters again and again: a dense flag
        // answers them without reaching for the slots.
        if self.class_gone[class] {
            return None;
        }
        let list = &st.class_members[class];
        let mut c = self.class_first[class];
        while c < list.len() && st.slots[list[c] as usize].taken {
            c += 1;
        }
        self.class_first[class] = c;
        self.class_gone[class] = c == list.len();
        (c < list.len()).then_some(c)
    }

    /// Every slot the request's autocluster may take, in buckets, best first.
    fn build(&mut self, t: &Tables, st: &State, ask: &Ask) -> Vec<Bucket> {
        let mut out = Vec::new();
        let n_classes = st.class_members.len();
        for class in 0..n_classes {
            let list = &st.class_members[class];
            let Some(&first) = list.first() else {
                continue;
            };
            let (members, cursor) = if t.slots[first as usize].cp.is_some() {
                // Never taken, but the class's list changes as slots are split.
                (Rc::new(list.to_vec()), 0)
            } else {
                let c = self.class_live(st, class).unwrap_or(list.len());
                (Rc::clone(list), c)
            };
            let Some(&rep) = members.get(cursor) else {
                continue;
            };
            if let Some(pe) = self.pair(t, st, ask, rep as usize) {
                out.push(Bucket {
                    keys: unclaimed_keys(&pe),
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
            keys_cmp(&b.keys, &a.keys).then_with(|| a.slots[a.cursor].cmp(&b.slots[b.cursor]))
        });
        out
    }

    /// The checks matchmakingAlgorithm makes of a matching candidate `si` taken for `reason`:
    /// the submitter limit (as a fresh scan or, for a request answered from the MatchList, as
    /// a pop applies it) and the concurrency limits of `ConcurrencyLimitsExpr` evaluated
    /// against the slot.
    fn admit(
        &mut self,
        t: &Tables,
        st: &State,
        ask: &Ask,
        si: usize,
        reason: MatchReason,
        miss: &mut Miss,
    ) -> Admit {
        let Some(pe) = self.pair(t, st, ask, si) else {
            return Admit::Skip;
        };
        let cost = match_cost(t, si, &pe);
        if !ask.budget.admits(reason, cost, ask.cached) {
            miss.limit = true;
            return Admit::Limit;
        }
        let limits = match &t.jobs[ask.k].limits {
            JobLimits::Expr(e) => {
                let limits = match ask.job.eval_expr_with(e, Some(&st.slots[si].ad)) {
                    Value::Str(s) => match parse_limits(&s) {
                        Ok(v) => v,
                        Err(_) => return Admit::Skip,
                    },
                    _ => Vec::new(),
                };
                if let Some(n) = st.limit_usage.rejects(&limits, t.cfg) {
                    miss.concurrency = Some(n);
                    return Admit::Skip;
                }
                limits
            }
            // Fixed limits were checked before matchmaking.
            JobLimits::Fixed(v) => v.clone(),
            JobLimits::None | JobLimits::Invalid(_) => Vec::new(),
        };
        Admit::Take(Choice {
            si,
            reason,
            cost,
            consumption: pe.consumption,
            carved: None,
            limits,
        })
    }

    /// The chosen slot, with what the startd will carve if it is partitionable.
    fn chosen(t: &Tables, st: &State, ask: &Ask, mut c: Choice) -> Choice {
        c.carved = match &c.consumption {
            Some(used) => Some(used.carved()),
            None if t.slots[c.si].pslot => Some(startd_carve(t, ask.job, &st.slots[c.si].ad)),
            None => None,
        };
        c
    }

    /// The best slot the request may take: without a slot with a consumption policy, its
    /// autocluster's candidates walked best first, skipping slots taken since and passing over
    /// candidates the budget or a concurrency limit turns away; with one, from the turn's
    /// match list.
    pub fn pick(&mut self, t: &Tables, st: &State, ask: &Ask) -> Result<Choice, Miss> {
        if t.has_cp {
            return self.pick_from_match_list(t, st, ask);
        }
        #[cfg(test)]
        let shared = !self.per_autocluster;
        #[cfg(not(test))]
        let shared = true;
        if shared && t.busy.is_empty() {
            if let Some(picked) = self.pick_from_order(t, st, ask) {
                return picked;
            }
        }
        let ac = ask.ac;
        if !self.lists.contains_key(&ac) {
            let l = self.build(t, st, ask);
            self.lists.insert(ac, l);
        }
        let mut miss = Miss::default();
        let mut chosen = None;
        let mut list = self.lists.remove(&ac).unwrap_or_default();
        'buckets: for bucket in list.iter_mut() {
            let reason = bucket.reason();
            // only_for_startdrank (matchmakingAlgorithm): an unclaimed slot is skipped, a
            // claimed one only counts if rankCondStd holds (reason "rank"), and no priority
            // preemption is considered.
            if ask.only_rank && reason != MatchReason::Rank {
                continue;
            }
            bucket.first_live(st);
            for idx in bucket.cursor..bucket.slots.len() {
                let si = bucket.slots[idx] as usize;
                if st.slots[si].taken {
                    continue;
                }
                debug_assert_eq!(st.slots[si].class, bucket.class, "only split slots move");
                match self.admit(t, st, ask, si, reason, &mut miss) {
                    Admit::Take(c) => {
                        chosen = Some(c);
                        break 'buckets;
                    }
                    // Every slot of this bucket costs the same.
                    Admit::Limit => break,
                    Admit::Skip => {}
                }
            }
        }
        self.lists.insert(ac, list);
        chosen.map(|c| Self::chosen(t, st, ask, c)).ok_or(miss)
    }

    /// The pairs [`Caches::build`] is about to evaluate for the request's job class (the first
    /// live slot of each class of idle slots without a consumption policy, not evaluated yet),
    /// evaluated on every core ([`spread`]) and cached, when there are enough of them. Unless
    /// requests are their own submitter's (a `Submitter*` attribute is read) or evaluations
    /// are dropped at each turn (a `*ResourcesInUse` one is), the first request does this for
    /// every job class at once, slot by slot: a slot's scattered attributes are then read from
    /// memory once for all of them, which is most of a heterogeneous pool's cost.
    fn prefetch(&mut self, t: &Tables, st: &State, ask: &Ask) {
        #[cfg(test)]
        if self.per_autocluster {
            return;
        }
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        if self.spread_all
            || threads < 2
            || st.class_members.len() < 2 * spread::MIN_PAIRS_PER_THREAD
        {
            return;
        }
        // (job class, its autocluster, the job ad as matched)
        let jobs: Vec<(usize, usize, &ClassAd)> = if t.per_submitter || t.volatile {
            vec![(t.acs[ask.ac].class, ask.ac, ask.job)]
        } else {
            // Nothing reads the `Submitter*` attributes: any representative of a job class
            // is evaluated as the requests of all of them would be.
            t.job_classes
                .iter()
                .enumerate()
                .map(|(jc, &ac)| (jc, ac, &t.input.jobs[t.acs[ac].rep]))
                .collect()
        };
        let mut classes = Vec::new();
        let mut asks = Vec::new();
        for class in 0..st.class_members.len() {
            let list = &st.class_members[class];
            let Some(&first) = list.first() else {
                continue;
            };
            if t.slots[first as usize].cp.is_some() {
                continue;
            }
            let needs: Vec<spread::Need> = jobs
                .iter()
                .map(|&(jc, ac, _)| {
                    (!self.pairs.contains_key(&(jc, class))).then(|| {
                        SlotSide::ALL.map(|w| {
                            self.slot_sides
                                .get(&(w, t.acs[ac].slot_side[w as usize]))
                                .and_then(|known| known.get(class))
                                .is_none_or(|v| v.is_none())
                        })
                    })
                })
                .collect();
            if needs.iter().all(|n| n.is_none()) {
                continue;
            }
            let Some(c) = self.class_live(st, class) else {
                continue;
            };
            classes.push(class);
            asks.push((list[c] as usize, needs));
        }
        let spread_jobs: Vec<spread::Job> = jobs
            .iter()
            .map(|&(_, ac, job)| (job, t.acs[ac].slot_side))
            .collect();
        let Some(answers) = spread::eval_pairs(t.cfg, &spread_jobs, &st.slots, &asks, threads)
        else {
            return;
        };
        self.spread_all = jobs.len() == t.job_classes.len() && !(t.per_submitter || t.volatile);
        for (class, per_job) in classes.into_iter().zip(answers) {
            for (&(jc, ac, _), answer) in jobs.iter().zip(per_job) {
                let Some(answer) = answer else { continue };
                let by = t.acs[ac].slot_side;
                let pe = answer.map(|(job_rank, sides)| {
                    let [pre, post, slot_rank] = SlotSide::ALL.map(|w| {
                        let known = self.slot_sides.entry((w, by[w as usize])).or_default();
                        if known.len() <= class {
                            known.resize(st.class_members.len().max(class + 1), None);
                        }
                        if let Some(v) = sides[w as usize] {
                            known[class] = Some(v);
                        }
                        known[class].flatten()
                    });
                    PairEval {
                        job_rank,
                        pre: pre.unwrap_or(-f64::MAX),
                        post: post.unwrap_or(-f64::MAX),
                        slot_rank,
                        consumption: None,
                    }
                });
                self.pairs.insert((jc, class), pe);
            }
        }
    }

    /// The job class's [`Order`], built by the first request of the class that asks; `None`
    /// when some key is NaN (the order is then not a total one, and each autocluster's list is
    /// built and sorted on its own as before).
    fn order(&mut self, t: &Tables, st: &State, ask: &Ask) -> Option<Rc<Order>> {
        let jc = t.acs[ask.ac].class;
        if let Some(o) = self.orders.get(&jc) {
            return o.clone();
        }
        self.prefetch(t, st, ask);
        let buckets = self.build(t, st, ask);
        let entries: Vec<([f64; 5], u32)> =
            buckets.iter().map(|b| (b.keys, b.class as u32)).collect();
        let order = if entries.iter().any(|(k, _)| k.iter().any(|x| x.is_nan())) {
            None
        } else {
            let mut runs = Vec::new();
            let mut tied = vec![false; entries.len()];
            let mut start = 0;
            while start < entries.len() {
                let mut end = start + 1;
                while end < entries.len()
                    && keys_cmp(&entries[start].0, &entries[end].0) == Ordering::Equal
                {
                    end += 1;
                }
                if end - start > 1 {
                    runs.push((start, end));
                    tied[start..end].fill(true);
                }
                start = end;
            }
            let mut floor = vec![f64::INFINITY; entries.len()];
            let mut below = f64::INFINITY;
            let mut run_end = entries.len();
            for i in (0..entries.len()).rev() {
                let class = entries[i].1 as usize;
                for &si in st.class_members[class].iter() {
                    below = below.min(t.slots[si as usize].weight);
                }
                let run_starts =
                    i == 0 || keys_cmp(&entries[i - 1].0, &entries[i].0) != Ordering::Equal;
                if run_starts {
                    floor[i..run_end].fill(below);
                    run_end = i;
                }
            }
            Some(Rc::new(Order {
                entries,
                runs,
                tied,
                floor,
            }))
        };
        self.orders.insert(jc, order.clone());
        order
    }

    /// The autocluster's walk of its job class's order, begun at its first request: where
    /// entries have equal keys, they are put in the order of their first live slot now (an
    /// entry with none left goes last among them).
    fn walk(&mut self, t: &Tables, st: &State, ask: &Ask) -> Option<Walk> {
        if let Some(w) = self.walks.remove(&ask.ac) {
            return Some(w);
        }
        let order = self.order(t, st, ask)?;
        let seq = if order.runs.is_empty() {
            None
        } else {
            let mut seq: Vec<u32> = (0..order.entries.len() as u32).collect();
            for &(start, end) in &order.runs {
                let first = |c: &mut Self, e: u32| {
                    let class = order.entries[e as usize].1 as usize;
                    c.class_live(st, class)
                        .map_or(u32::MAX, |i| st.class_members[class][i])
                };
                let mut run: Vec<(u32, u32)> = seq[start..end]
                    .iter()
                    .map(|&e| (first(self, e), e))
                    .collect();
                run.sort_unstable();
                for (slot, (_, e)) in seq[start..end].iter_mut().zip(run) {
                    *slot = e;
                }
            }
            Some(seq)
        };
        Some(Walk {
            order,
            seq,
            head: 0,
        })
    }

    /// [`Caches::pick`] for a pool whose slots are all idle and only ever taken: the request's
    /// autocluster walks its job class's order from the first entry with a slot left, passing
    /// over candidates the budget or a concurrency limit turns away. `None` when the job
    /// class has no shared order.
    fn pick_from_order(
        &mut self,
        t: &Tables,
        st: &State,
        ask: &Ask,
    ) -> Option<Result<Choice, Miss>> {
        let mut miss = Miss::default();
        // only_for_startdrank skips every unclaimed slot.
        if ask.only_rank {
            return Some(Err(miss));
        }
        let mut walk = self.walk(t, st, ask)?;
        let mut chosen = None;
        let n = walk.order.entries.len();
        let jc = t.acs[ask.ac].class;
        let mut open = self
            .open
            .remove(&jc)
            .unwrap_or_else(|| (0..=n as u32).collect());
        let mut pos = next_open(&mut open, walk.head);
        walk.head = pos;
        'entries: while pos < n {
            let at = pos;
            pos = next_open(&mut open, at + 1);
            let e = walk.seq.as_ref().map_or(at, |s| s[at] as usize);
            let class = walk.order.entries[e].1 as usize;
            let Some(first) = self.class_live(st, class) else {
                if !walk.order.tied[at] {
                    open[at] = at as u32 + 1;
                }
                if at == walk.head {
                    walk.head = at + 1;
                }
                continue;
            };
            // Turned away here at the smallest weight left, every class left turns the
            // request away for the submitter limit (admits() only gets stricter as the
            // weight grows), as walking them would find.
            if !ask
                .budget
                .admits(MatchReason::NoPreemption, walk.order.floor[at], ask.cached)
            {
                miss.limit = true;
                break;
            }
            let members = &st.class_members[class];
            // The submitter limit first, as admit() checks it: a slot taken whole costs its
            // SlotWeight, the same for the whole class. A request over its limit passes over
            // every class, so this saves a pair lookup per class.
            let weight = t.slots[members[first] as usize].weight;
            if !ask
                .budget
                .admits(MatchReason::NoPreemption, weight, ask.cached)
            {
                miss.limit = true;
                continue;
            }
            for &si in &members[first..] {
                let si = si as usize;
                if st.slots[si].taken {
                    continue;
                }
                match self.admit(t, st, ask, si, MatchReason::NoPreemption, &mut miss) {
                    Admit::Take(c) => {
                        chosen = Some(c);
                        break 'entries;
                    }
                    // Every slot of this class costs the same.
                    Admit::Limit => break,
                    Admit::Skip => {}
                }
            }
        }
        self.walks.insert(ask.ac, walk);
        self.open.insert(jc, open);
        Some(chosen.map(|c| Self::chosen(t, st, ask, c)).ok_or(miss))
    }

    /// matchmakingAlgorithm with slots that change during the cycle: a fresh scan (the first
    /// request of an autocluster in a turn) builds the match list from the slots as they are,
    /// keeping the candidates it admits; every request then pops it, discarding what the checks
    /// turn away (pop_candidate); a split slot the previous pop matched goes back in first.
    fn pick_from_match_list(&mut self, t: &Tables, st: &State, ask: &Ask) -> Result<Choice, Miss> {
        let same = |m: &MatchList| m.ac == ask.ac && m.only_rank == ask.only_rank;
        let mut m = match self.match_list.take() {
            Some(mut m) if ask.cached && same(&m) => {
                if let Some(si) = m.returned.take() {
                    self.return_split_slot(t, st, ask, &mut m, si);
                }
                m
            }
            _ => {
                let mut miss = Miss::default();
                let mut entries = self.build(t, st, ask);
                entries.retain_mut(|b| {
                    let reason = b.reason();
                    if ask.only_rank && reason != MatchReason::Rank {
                        return false;
                    }
                    let Some(si) = b.first_live(st) else {
                        return false;
                    };
                    matches!(
                        self.admit(t, st, ask, si, reason, &mut miss),
                        Admit::Take(_)
                    )
                });
                MatchList {
                    ac: ask.ac,
                    only_rank: ask.only_rank,
                    entries,
                    head: 0,
                    returned: None,
                    turned_away: miss,
                }
            }
        };
        let mut chosen = None;
        while m.head < m.entries.len() {
            let b = &mut m.entries[m.head];
            let Some(si) = b.first_live(st) else {
                m.head += 1;
                continue;
            };
            let reason = b.reason();
            b.cursor += 1;
            match self.admit(t, st, ask, si, reason, &mut m.turned_away) {
                Admit::Take(c) => {
                    if c.consumption.is_some() {
                        m.returned = Some(si);
                    }
                    chosen = Some(c);
                    break;
                }
                // The rest of the bucket costs the same: HTCondor would pop and discard each.
                Admit::Limit => {
                    let b = &mut m.entries[m.head];
                    b.cursor = b.slots.len();
                }
                Admit::Skip => {}
            }
        }
        let miss = m.turned_away.clone();
        self.match_list = Some(m);
        chosen.map(|c| Self::chosen(t, st, ask, c)).ok_or(miss)
    }

    /// returnPslotToMatchList: split slot `si` is tested again against the request (its
    /// autocluster's); if it still matches it goes back in at the head of the match list with
    /// its new keys (no preemption), then moves toward the tail past every entry it outranks
    /// (MatchListType::insert_candidate), stopping before the first entry at least as good.
    fn return_split_slot(
        &mut self,
        t: &Tables,
        st: &State,
        ask: &Ask,
        m: &mut MatchList,
        si: usize,
    ) {
        let Some(pe) = self.pair(t, st, ask, si) else {
            return;
        };
        let keys = unclaimed_keys(&pe);
        let mut at = m.head;
        while at < m.entries.len() {
            // Entries with nothing left are not in HTCondor's list.
            let live = m.entries[at].first_live(st).is_some();
            if live && keys_cmp(&keys, &m.entries[at].keys) != Ordering::Greater {
                break;
            }
            at += 1;
        }
        m.entries.insert(
            at,
            Bucket {
                keys,
                class: st.slots[si].class,
                slots: Rc::new(vec![si as u32]),
                cursor: 0,
            },
        );
    }
}

//! Hierarchical group quotas: the tree, quota assignment (static, dynamic, scale-down),
//! fair-share allocation with bottom-up surplus, and the strict hard-cap check.
//!
//! Follows HTCondor 23.9.6's GroupEntry.cpp (read, not copied; hgq_construct_tree,
//! hgq_assign_quotas, hgq_fairshare, hgq_allocate_surplus, hgq_recover_remainders,
//! hgq_round_robin, strict_enforce_quota, and the allocation round of
//! hgq_negotiate_with_all_groups whose negotiating part is in [`super::pie`]):
//! * the tree: `GROUP_NAMES` sorted case-insensitively, so each group's children are in name
//!   order, and the groups breadth first (the order ties in `GROUP_SORT_EXPR` keep);
//! * quotas: a parent's quota is split between its static children (scaled down in
//!   proportion when they add up to more than the parent and oversubscription is off) and
//!   its dynamic children (fractions of what the static children leave, normalised when they
//!   add up to more than 1); a group with no quota configured is dynamic with 0
//!   (hgq_construct_tree; [`NegotiatorConfig::from_lookup`]);
//! * allocation: each group first gets `min(requested, quota)`; unused quota (surplus) flows
//!   up and is handed to siblings that accept surplus, first in proportion to their subtree
//!   quotas, then evenly; the root always redistributes;
//! * without slot weights, the fraction of every allocation becomes surplus again and is
//!   handed out as whole slots, round robin among the groups that accept surplus and still
//!   request some (hgq_recover_remainders; the order is HTCondor's as in its first cycle, see
//!   [`RR_TIME`]);
//! * a group that does not accept surplus caps the usage of its whole subtree at its quota.
use super::config::{GroupQuota, NegotiatorConfig};
use crate::accountant::ROOT_GROUP;
use classad::{ClassAd, Expr, Value};

/// When every group last had a round robin of remainders. HTCondor remembers it per group
/// across cycles (`rr_time`: the time of the group's last round robin, or of the last cycle in
/// which it requested nothing) so that the oldest goes first; a cycle here keeps nothing from
/// the one before, so every group counts as equally old (as in HTCondor's first cycle, or when
/// every group was served or idle in the last one) and ties go to the larger subtree quota,
/// then the larger request, then tree order.
const RR_TIME: f64 = 0.0;

/// One accounting group (HTCondor's GroupEntry).
#[derive(Clone, Debug)]
pub(crate) struct GroupNode {
    pub name: String,
    pub parent: Option<usize>,
    pub children: Vec<usize>,
    /// The configured quota is static (slot weight) rather than dynamic (a fraction).
    pub is_static: bool,
    pub config_quota: f64,
    pub accept_surplus: bool,
    pub autoregroup: bool,
    /// The quota assigned down the tree, in slot weight.
    pub quota: f64,
    pub subtree_quota: f64,
    /// Demand not yet allocated: running plus idle requests at the start, what is left of it
    /// between allocation rounds.
    pub requested: f64,
    /// Demand at the start of the cycle (the outcome's "requested").
    pub requested_at_start: f64,
    /// This round's allocation, surplus included.
    pub allocated: f64,
    pub subtree_requested: f64,
    /// Weighted slots its submitters use, moved by every match and preemption.
    pub usage: f64,
    pub subtree_usage: f64,
    /// `GROUP_SORT_EXPR` in the last round.
    pub sort_key: f64,
    /// When the subtree last had a round robin of remainders, if it requests anything
    /// ([`RR_TIME`]), else `f64::MAX` (hgq_recover_remainders' `subtree_rr_time`).
    pub subtree_rr_time: f64,
    /// Its submitters with idle jobs (indices into the cycle's submitters).
    pub submitters: Vec<usize>,
}

impl GroupNode {
    fn new(name: &str, parent: Option<usize>) -> Self {
        GroupNode {
            name: name.to_string(),
            parent,
            children: Vec::new(),
            is_static: false,
            config_quota: 0.0,
            accept_surplus: true,
            autoregroup: false,
            quota: 0.0,
            subtree_quota: 0.0,
            requested: 0.0,
            requested_at_start: 0.0,
            allocated: 0.0,
            subtree_requested: 0.0,
            usage: 0.0,
            subtree_usage: 0.0,
            sort_key: 0.0,
            subtree_rr_time: f64::MAX,
            submitters: Vec::new(),
        }
    }
}

/// The group tree; index 0 is the root `<none>`.
#[derive(Clone, Debug)]
pub(crate) struct GroupTree {
    pub nodes: Vec<GroupNode>,
    /// Configuration problems met building it.
    pub warnings: Vec<String>,
}

/// The tree's nodes in breadth-first order, children in the order they were added (HTCondor's
/// `hgq_groups`, the order ties in `GROUP_SORT_EXPR` keep), indices renumbered.
fn breadth_first(nodes: Vec<GroupNode>) -> Vec<GroupNode> {
    let mut order = vec![0];
    let mut i = 0;
    while i < order.len() {
        order.extend(nodes[order[i]].children.iter().copied());
        i += 1;
    }
    let mut new_index = vec![0; nodes.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }
    let mut slots: Vec<Option<GroupNode>> = nodes.into_iter().map(Some).collect();
    order
        .iter()
        .map(|&old| {
            let mut n = slots[old].take().expect("each node once");
            n.parent = n.parent.map(|p| new_index[p]);
            for c in &mut n.children {
                *c = new_index[*c];
            }
            n
        })
        .collect()
}

impl GroupTree {
    /// The tree of `GROUP_NAMES` (hgq_construct_tree): groups in breadth-first order, each
    /// group's children in case-insensitive name order, a group whose parent is not
    /// configured left out with a warning.
    pub fn build(cfg: &NegotiatorConfig) -> Self {
        let mut nodes = vec![GroupNode::new(ROOT_GROUP, None)];
        let mut warnings = Vec::new();
        // HTCondor sorts GROUP_NAMES case-insensitively (strcasecmp) before it builds the
        // tree, which puts parents before children and each group's children in name order,
        // whatever order GROUP_NAMES gives (tests/reference/negotiator/group_order.sh).
        let mut groups: Vec<_> = cfg.groups.iter().collect();
        groups.sort_by_cached_key(|g| g.name.to_ascii_lowercase());
        for g in groups {
            if g.name == ROOT_GROUP {
                continue;
            }
            if nodes.iter().any(|n| n.name.eq_ignore_ascii_case(&g.name)) {
                warnings.push(format!("group {} is listed twice in GROUP_NAMES", g.name));
                continue;
            }
            let parent = match g.name.rfind('.') {
                None => Some(0),
                Some(p) => nodes
                    .iter()
                    .position(|n| n.name.eq_ignore_ascii_case(&g.name[..p])),
            };
            let Some(parent) = parent else {
                warnings.push(format!(
                    "group {} ignored: its parent {} is not in GROUP_NAMES",
                    g.name,
                    &g.name[..g.name.rfind('.').unwrap_or(0)]
                ));
                continue;
            };
            let mut n = GroupNode::new(&g.name, Some(parent));
            match g.quota {
                GroupQuota::Static(q) => {
                    n.is_static = true;
                    n.config_quota = q.max(0.0);
                }
                GroupQuota::Dynamic(q) => {
                    n.is_static = false;
                    n.config_quota = q.max(0.0);
                }
            }
            n.accept_surplus = g.accept_surplus;
            n.autoregroup = g.autoregroup;
            let idx = nodes.len();
            nodes.push(n);
            nodes[parent].children.push(idx);
        }
        // The root autoregroups when any group does (HTCondor sets the root's flag to the
        // effective global value).
        let any = nodes.iter().skip(1).any(|n| n.autoregroup);
        if let Some(root) = nodes.first_mut() {
            root.autoregroup = any;
        }
        GroupTree {
            nodes: breadth_first(nodes),
            warnings,
        }
    }

    /// Index of a group by (case-insensitive) name.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.nodes
            .iter()
            .position(|n| n.name.eq_ignore_ascii_case(name))
    }

    /// Assigns `quota` to group `g` and its subtree.
    pub fn assign_quotas(&mut self, g: usize, quota: f64, oversub: bool) {
        if quota <= 0.0 && g != 0 {
            return;
        }
        self.nodes[g].subtree_quota = quota;
        let children = self.nodes[g].children.clone();
        let (mut sqsum, mut dqsum) = (0.0, 0.0);
        for &c in &children {
            if self.nodes[c].is_static {
                sqsum += self.nodes[c].config_quota;
            } else {
                dqsum += self.nodes[c].config_quota;
            }
        }
        let sqa = if oversub { sqsum } else { sqsum.min(quota) };
        let dqa = (quota - sqa).max(0.0);
        let zs = if sqsum > 0.0 { sqsum } else { 1.0 };
        let zd = dqsum.max(1.0);
        let mut chq = 0.0;
        for &c in &children {
            let n = &self.nodes[c];
            let q = if n.is_static {
                n.config_quota * (sqa / zs)
            } else {
                n.config_quota * (dqa / zd)
            };
            let q = q.max(0.0);
            self.assign_quotas(c, q, oversub);
            chq += q;
        }
        let own = if oversub && g != 0 {
            quota
        } else {
            quota - chq
        };
        self.nodes[g].quota = own.max(0.0);
    }

    /// One fair-share pass: allocation up to quota, then surplus bottom-up. Returns the
    /// surplus left over at the root.
    pub fn fairshare(&mut self, g: usize) -> f64 {
        let n = &mut self.nodes[g];
        n.allocated = n.requested.min(n.quota);
        n.requested -= n.allocated;
        n.subtree_requested = n.requested;
        let mut surplus = n.quota - n.allocated;
        let children = n.children.clone();
        if children.is_empty() {
            return surplus;
        }
        for &c in &children {
            surplus += self.fairshare(c);
            if self.nodes[c].accept_surplus {
                let r = self.nodes[c].subtree_requested;
                self.nodes[g].subtree_requested += r;
            }
        }
        self.allocate_surplus(g, surplus)
    }

    fn allocate_surplus(&mut self, g: usize, mut surplus: f64) -> f64 {
        if surplus <= 0.0 {
            return 0.0;
        }
        if self.nodes[g].subtree_requested <= 0.0 {
            return surplus;
        }
        let mut groups = self.nodes[g].children.clone();
        groups.push(g);
        let mut allocated = vec![0.0; groups.len()];
        let save_accept = self.nodes[g].accept_surplus;
        let save_subtree_quota = self.nodes[g].subtree_quota;
        self.nodes[g].accept_surplus = true;
        self.nodes[g].subtree_quota = self.nodes[g].quota;
        let mut requested = self.nodes[g].subtree_requested;
        self.nodes[g].subtree_requested = self.nodes[g].requested;
        if surplus >= requested {
            for (j, &x) in groups.iter().enumerate() {
                let n = &self.nodes[x];
                if n.accept_surplus && n.subtree_requested > 0.0 {
                    allocated[j] = n.subtree_requested;
                }
            }
            surplus -= requested;
        } else {
            let mut subreq: Vec<f64> = groups
                .iter()
                .map(|&x| {
                    let n = &self.nodes[x];
                    if n.accept_surplus && n.subtree_requested > 0.0 {
                        n.subtree_requested
                    } else {
                        0.0
                    }
                })
                .collect();
            self.surplus_loop(
                true,
                &groups,
                &mut allocated,
                &mut subreq,
                &mut surplus,
                &mut requested,
            );
            self.surplus_loop(
                false,
                &groups,
                &mut allocated,
                &mut subreq,
                &mut surplus,
                &mut requested,
            );
        }
        for j in 0..groups.len() - 1 {
            if allocated[j] > 0.0 {
                self.allocate_surplus(groups[j], allocated[j]);
            }
        }
        let last = allocated[groups.len() - 1];
        let n = &mut self.nodes[g];
        n.allocated += last;
        n.requested -= last;
        n.subtree_requested = requested;
        n.accept_surplus = save_accept;
        n.subtree_quota = save_subtree_quota;
        surplus
    }

    /// hgq_recover_remainders: the fraction of every allocation in the subtree of `g` becomes
    /// surplus again (allocation and request rounded to whole slots), handed out round robin
    /// at each level. Returns what is left.
    fn recover_remainders(&mut self, g: usize) -> f64 {
        let n = &mut self.nodes[g];
        let mut surplus = n.allocated - n.allocated.floor();
        n.allocated -= surplus;
        n.requested += surplus;
        n.allocated = (0.5 + n.allocated).floor();
        n.requested = (0.5 + n.requested).floor();
        n.subtree_requested = n.requested;
        n.subtree_rr_time = if n.requested > 0.0 { RR_TIME } else { f64::MAX };
        let children = n.children.clone();
        if children.is_empty() {
            return surplus;
        }
        for &c in &children {
            surplus += self.recover_remainders(c);
            let (accept, req, rr) = {
                let c = &self.nodes[c];
                (c.accept_surplus, c.subtree_requested, c.subtree_rr_time)
            };
            if accept {
                let n = &mut self.nodes[g];
                n.subtree_requested += req;
                if req > 0.0 {
                    n.subtree_rr_time = n.subtree_rr_time.min(rr);
                }
            }
        }
        self.round_robin(g, surplus)
    }

    /// hgq_round_robin: whole slots of `surplus` to `g` and its children that accept surplus
    /// and still request some, at most an equal part each per pass, in the order of
    /// [`GroupTree::rr_order`]; then down each child's subtree. Returns what is left.
    fn round_robin(&mut self, g: usize, mut surplus: f64) -> f64 {
        let n = &mut self.nodes[g];
        n.subtree_requested = n.subtree_requested.floor();
        if n.subtree_requested <= 0.0 || surplus < 1.0 {
            return surplus;
        }
        let mut groups = n.children.clone();
        groups.push(g);
        let mut allocated = vec![0.0; groups.len()];
        // The group itself takes part as a child that accepts surplus.
        let saved = (n.accept_surplus, n.subtree_quota, n.subtree_rr_time);
        n.accept_surplus = true;
        n.subtree_quota = n.quota;
        n.subtree_rr_time = RR_TIME;
        let mut requested = n.subtree_requested;
        n.subtree_requested = n.requested;
        let mut outstanding = 0.0;
        let mut subreq: Vec<f64> = groups
            .iter()
            .map(|&x| {
                let n = &self.nodes[x];
                if n.accept_surplus && n.subtree_requested > 0.0 {
                    outstanding += 1.0;
                    n.subtree_requested
                } else {
                    0.0
                }
            })
            .collect();
        let order = self.rr_order(&groups);
        while surplus >= 1.0 && requested > 0.0 {
            let amax = f64::max(1.0, (surplus / outstanding).floor());
            outstanding = 0.0;
            let mut sumalloc = 0.0;
            for &j in &order {
                if subreq[j] > 0.0 {
                    let a = subreq[j].min(amax);
                    allocated[j] += a;
                    subreq[j] -= a;
                    sumalloc += a;
                    surplus -= a;
                    requested -= a;
                    if subreq[j] > 0.0 {
                        outstanding += 1.0;
                    }
                    if surplus < amax {
                        break;
                    }
                }
            }
            if sumalloc < 1.0 {
                break;
            }
        }
        for j in 0..groups.len() - 1 {
            if allocated[j] > 0.0 {
                self.round_robin(groups[j], allocated[j]);
            }
        }
        let last = allocated[groups.len() - 1];
        let n = &mut self.nodes[g];
        n.allocated += last;
        n.requested -= last;
        n.subtree_requested = requested;
        (n.accept_surplus, n.subtree_quota, n.subtree_rr_time) = saved;
        surplus
    }

    /// Who gets the first cut in a round robin over `groups` (ord_by_rr_time): the oldest
    /// last round robin of the subtree, then the larger subtree quota, then the larger
    /// request; ties keep their order. Returns positions in `groups`.
    fn rr_order(&self, groups: &[usize]) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..groups.len()).collect();
        idx.sort_by(|&a, &b| {
            let (x, y) = (&self.nodes[groups[a]], &self.nodes[groups[b]]);
            x.subtree_rr_time
                .partial_cmp(&y.subtree_rr_time)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(
                    y.subtree_quota
                        .partial_cmp(&x.subtree_quota)
                        .unwrap_or(std::cmp::Ordering::Equal),
                )
                .then(
                    y.subtree_requested
                        .partial_cmp(&x.subtree_requested)
                        .unwrap_or(std::cmp::Ordering::Equal),
                )
        });
        idx
    }

    fn surplus_loop(
        &self,
        by_quota: bool,
        groups: &[usize],
        allocated: &mut [f64],
        subreq: &mut [f64],
        surplus: &mut f64,
        requested: &mut f64,
    ) {
        let mut iterations = 0;
        while *surplus > 0.0 && iterations < 1000 {
            iterations += 1;
            let z: f64 = groups
                .iter()
                .enumerate()
                .filter(|(j, _)| subreq[*j] > 0.0)
                .map(|(_, &x)| {
                    if by_quota {
                        self.nodes[x].subtree_quota
                    } else {
                        1.0
                    }
                })
                .sum();
            if z <= 0.0 {
                break;
            }
            let mut never_gt = true;
            let mut sumalloc = 0.0;
            for (j, &x) in groups.iter().enumerate() {
                if subreq[j] > 0.0 {
                    let n = if by_quota {
                        self.nodes[x].subtree_quota
                    } else {
                        1.0
                    };
                    let mut a = *surplus * (n / z);
                    if a > subreq[j] {
                        a = subreq[j];
                        never_gt = false;
                    }
                    allocated[j] += a;
                    subreq[j] -= a;
                    sumalloc += a;
                }
            }
            *surplus -= sumalloc;
            *requested -= sumalloc;
            if never_gt || *surplus < 0.0 {
                *surplus = 0.0;
            }
        }
    }

    /// One allocation (hgq_negotiate_with_all_groups' round): allocations recomputed from the
    /// demand left, fair share then surplus, then, without slot weights
    /// (`recover_remainders`), the fractions handed out again as whole slots. Returns the total
    /// allocated.
    pub fn allocate(&mut self, recover_remainders: bool) -> f64 {
        for n in &mut self.nodes {
            n.allocated = 0.0;
            n.subtree_requested = 0.0;
        }
        self.fairshare(0);
        if recover_remainders {
            self.recover_remainders(0);
        }
        let mut allocated_total = 0.0;
        for n in &self.nodes {
            allocated_total += n.allocated;
        }
        allocated_total
    }

    /// The order groups negotiate in: ascending `GROUP_SORT_EXPR`, evaluated against an ad
    /// of the group's `AccountingGroup`, `GroupQuota`, `GroupResourcesAllocated` and
    /// `GroupResourcesInUse` (undefined or not a number sorts last, as HTCondor's FLT_MAX
    /// does); ties in tree order; with `root_last` (autoregroup) the root after every other
    /// group (group_order). Each group keeps its key for the outcome.
    pub fn negotiation_order(&mut self, sort_expr: Option<&Expr>, root_last: bool) -> Vec<usize> {
        for n in &mut self.nodes {
            let mut ad = ClassAd::new();
            ad.insert_value("AccountingGroup", Value::str(&n.name));
            ad.insert_value("GroupQuota", Value::Real(n.quota));
            ad.insert_value("GroupResourcesAllocated", Value::Real(n.allocated));
            ad.insert_value("GroupResourcesInUse", Value::Real(n.usage));
            let v = sort_expr.and_then(|e| ad.eval_expr(e).as_number());
            n.sort_key = v.unwrap_or(f32::MAX as f64);
        }
        let mut order: Vec<usize> = (0..self.nodes.len()).collect();
        order.sort_by(|&a, &b| {
            let (x, y) = (&self.nodes[a], &self.nodes[b]);
            let root = |g: usize| root_last && g == 0;
            root(a)
                .cmp(&root(b))
                .then(
                    x.sort_key
                        .partial_cmp(&y.sort_key)
                        .unwrap_or(std::cmp::Ordering::Equal),
                )
                .then(a.cmp(&b))
        });
        order
    }

    /// The end of an allocation round: a group that used less than its allocation asks for
    /// no more than it uses (the rest goes to others in the next round), one that used it all
    /// gets its allocation back as demand. Returns the usage counted against allocations.
    pub fn end_round(&mut self) -> f64 {
        let mut usage_total = 0.0;
        for n in &mut self.nodes {
            usage_total += n.usage.min(n.allocated);
            if n.usage < n.allocated {
                n.requested = n.usage;
            } else {
                n.requested += n.allocated;
            }
        }
        usage_total
    }

    /// Recomputes every group's subtree usage from the direct usages.
    pub fn compute_subtree_usage(&mut self, g: usize) -> f64 {
        let children = self.nodes[g].children.clone();
        let mut total = self.nodes[g].usage;
        for c in children {
            total += self.compute_subtree_usage(c);
        }
        self.nodes[g].subtree_usage = total;
        total
    }

    /// Caps `slots` (an absolute allocation for group `g`) so that no ancestor that refuses
    /// surplus goes over its quota (NEGOTIATOR_STRICT_ENFORCE_QUOTA).
    pub fn strict_enforce(&mut self, g: usize, slots: f64) -> f64 {
        self.compute_subtree_usage(0);
        let mut new_alloc = slots - self.nodes[g].usage;
        let mut cur = Some(g);
        while let Some(x) = cur {
            let n = &self.nodes[x];
            if !n.accept_surplus {
                let avail = if n.is_static {
                    n.config_quota - n.subtree_usage
                } else {
                    n.subtree_quota - n.subtree_usage
                };
                let avail = avail.max(0.0);
                if new_alloc > avail {
                    new_alloc = avail;
                }
            }
            cur = n.parent;
        }
        new_alloc + self.nodes[g].usage
    }
}

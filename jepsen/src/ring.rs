//! Random ring partitions, Jepsen's `partition-majorities-ring`: every CM still sees a majority
//! that includes itself, but no two CMs see the same majority, so no CM can tell from its own
//! view which side "won".
//!
//! The construction (Jepsen's, `jepsen.nemesis/majorities-ring`, read for its idea): the CMs
//! are shuffled (seeded) onto a ring and each one keeps the links to the `r` CMs on either side
//! of it, `r` the smallest radius whose view (itself and `2r` neighbours) is a majority; every
//! other link is cut. With five CMs that is `r = 1`: CM at ring position `p` reaches `p-1` and
//! `p+1` only, five links of the ten are cut, and every view is a different set of three.
//! Ring adjacency is symmetric, so the cuts are too (a pair is cut both ways with
//! [`crate::net::Net::cut`]): unlike Jepsen's, whose views may be one-way, this harness cuts
//! whole links.
//!
//! HTCondor's HA (src/condor_had/HADStateMachine.cpp) elects by the highest-priority HAD it can
//! hear; under a ring, each HAD hears a different set and more than one can decide to lead.
//! Raft must keep one leader per term and lose no acknowledged write.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::collections::BTreeSet;

/// The shuffled ring of `ids` drawn from `seed` and the pairs `(a, b)`, `a < b`, to cut so that
/// each CM reaches only its ring neighbours within the majority radius. No cut at all when
/// every view would be the whole cluster (three CMs or fewer).
pub fn ring(seed: u64, ids: &[u64]) -> (Vec<u64>, Vec<(u64, u64)>) {
    let mut order = ids.to_vec();
    order.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed));
    let n = order.len();
    let majority = n / 2 + 1;
    // The view is 2r + 1 CMs; the smallest r making it a majority.
    let r = majority / 2;
    let mut cuts = BTreeSet::new();
    for i in 0..n {
        for j in i + 1..n {
            let d = (j - i).min(n - (j - i));
            if d > r {
                let (a, b) = (order[i], order[j]);
                cuts.insert((a.min(b), a.max(b)));
            }
        }
    }
    (order, cuts.into_iter().collect())
}

/// What CM `id` reaches (itself included) among `ids` once `cuts` are in place.
pub fn view(id: u64, ids: &[u64], cuts: &[(u64, u64)]) -> BTreeSet<u64> {
    ids.iter()
        .copied()
        .filter(|&o| !cuts.contains(&(id.min(o), id.max(o))) || o == id)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: u64) -> Vec<u64> {
        (1..=n).collect()
    }

    #[test]
    fn five_cms_each_see_a_different_majority_including_themselves() {
        for seed in 0..50 {
            let ids = ids(5);
            let (order, cuts) = ring(seed, &ids);
            assert_eq!(cuts.len(), 5, "seed {seed}: {cuts:?}");
            let views: Vec<BTreeSet<u64>> = ids.iter().map(|&i| view(i, &ids, &cuts)).collect();
            for (i, v) in ids.iter().zip(&views) {
                assert!(v.contains(i), "seed {seed}");
                assert_eq!(v.len(), 3, "seed {seed}: CM {i} sees {v:?}");
            }
            let distinct: BTreeSet<&BTreeSet<u64>> = views.iter().collect();
            assert_eq!(distinct.len(), 5, "seed {seed}: {views:?}");
            // Each CM's view is itself and its two ring neighbours.
            for p in 0..5 {
                let want: BTreeSet<u64> = [order[(p + 4) % 5], order[p], order[(p + 1) % 5]]
                    .into_iter()
                    .collect();
                assert_eq!(view(order[p], &ids, &cuts), want, "seed {seed}");
            }
        }
    }

    #[test]
    fn reachability_is_symmetric_and_no_pair_is_cut_twice_or_with_itself() {
        for n in [5, 6, 7, 9] {
            let ids = ids(n);
            let (_, cuts) = ring(3, &ids);
            assert!(cuts.iter().all(|&(a, b)| a < b), "{cuts:?}");
            let unique: BTreeSet<_> = cuts.iter().collect();
            assert_eq!(unique.len(), cuts.len());
            for &a in &ids {
                for &b in &ids {
                    assert_eq!(
                        view(a, &ids, &cuts).contains(&b),
                        view(b, &ids, &cuts).contains(&a),
                        "{n} CMs: {a} and {b}"
                    );
                }
                let v = view(a, &ids, &cuts);
                assert!(v.len() > ids.len() / 2, "{n} CMs: {a} sees {v:?}");
                assert!(v.len() < ids.len(), "{n} CMs: {a} sees everything");
            }
        }
    }

    #[test]
    fn the_ring_is_replayed_from_its_seed_and_differs_between_seeds() {
        let ids = ids(5);
        assert_eq!(ring(7, &ids), ring(7, &ids));
        let rings: BTreeSet<Vec<(u64, u64)>> = (0..20).map(|s| ring(s, &ids).1).collect();
        assert!(rings.len() > 1, "every seed cut the same links");
    }

    #[test]
    fn three_cms_are_not_cut_at_all() {
        assert!(ring(1, &ids(3)).1.is_empty());
    }
}

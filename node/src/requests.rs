//! The resource-request list an access point answers `GetRequests` with (HTCondor's
//! schedd_negotiate.cpp sends one request per autocluster, with a count): the idle job ads
//! grouped by the leader's significant names ([`aerie_core::negotiator::requests::group`]),
//! each group as its representative ad, its cluster's ProcId ranges and its autocluster.
//! One function, so the real access point ([`crate::schedd`]) and the simulated one
//! ([`crate::sim`]) send the leader the same thing.
use crate::schedd::job;
use aerie_core::negotiator::requests::RequestCache;
use aerie_proto::negotiation as pb;
use classad::ClassAd;

/// The resource requests of `idle` (the idle jobs, in the order the negotiator should see
/// them) grouped by `significant`, reusing the keys `cache` remembers from the last cycle.
pub fn resource_requests(
    cache: &mut RequestCache,
    idle: &[&ClassAd],
    significant: &[String],
) -> Vec<pb::ResourceRequest> {
    cache
        .group(idle, significant)
        .into_iter()
        .map(|g| {
            let rep = idle[g.rep];
            pb::ResourceRequest {
                ad: rep.to_old_syntax(),
                cluster: g.cluster.unwrap_or(0),
                count: g.count(),
                has_ids: g.cluster.is_some(),
                procs: g
                    .procs
                    .iter()
                    .map(|r| pb::ProcRange {
                        first: r.first,
                        count: r.count,
                    })
                    .collect(),
                autocluster: job::autocluster_id(&job::signature(rep)),
            }
        })
        .collect()
}

//! Forming a new cluster, exactly once.
//!
//! A CM forms a cluster only when told to (`serve --bootstrap --peers ...`), only if its own
//! store has never held Raft state, and only once every other initial member has answered
//! and none of them holds a cluster yet. When every initial member starts at once, each one
//! proposes the same membership, which openraft accepts once.
//!
//! When a peer answers that the cluster exists, this CM asks the leader what it knows of it:
//! an initial member the leader has never reached (it started late) is admitted and caught
//! up; a CM the leader has replicated to before has lost its data (its vote with it: if it
//! took part again it could vote twice in a term) and stays out, refusing every peer message,
//! until an operator removes it (`cmctl cluster remove ID`) and adds it again.
use super::store::ClusterId;
use super::{Node, NodeId, Raft};
use aerie_proto::admin::{admin_client::AdminClient, StatusReply, StatusRequest};
use std::collections::BTreeMap;
use std::time::Duration;

/// How often the peers are asked while waiting for all of them.
const PROBE_EVERY: Duration = Duration::from_millis(500);

/// The cluster id a bootstrap without `--cluster-id` uses: named after its initial members, so
/// every member started with the same `--peers` agrees without being told, and another
/// cluster (other addresses) gets another id.
pub fn default_cluster_id(peers: &BTreeMap<NodeId, Node>) -> String {
    // FNV-1a over "id=addr," in id order: stable across builds and platforms.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (id, n) in peers {
        for b in format!("{id}={},", n.addr).bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("aerie-{h:016x}")
}

/// What a peer said about itself.
enum PeerState {
    /// It holds Raft state or knows a leader: the cluster exists.
    Member(StatusReply),
    /// It has never been part of a cluster.
    Fresh,
}

async fn status(addr: &str) -> Result<StatusReply, String> {
    let ch = super::network::lazy_channel(addr, aerie_security::Role::Cm, Duration::from_secs(1))?;
    let mut c = AdminClient::new(ch);
    let mut req = tonic::Request::new(StatusRequest {});
    req.set_timeout(Duration::from_secs(1));
    match tokio::time::timeout(Duration::from_secs(2), c.status(req)).await {
        Err(_) => Err("no answer".into()),
        Ok(Err(s)) => Err(s.message().to_string()),
        Ok(Ok(r)) => Ok(r.into_inner()),
    }
}

async fn probe(addr: &str) -> Result<PeerState, String> {
    let r = status(addr).await?;
    Ok(if r.last_log_index > 0 || r.has_leader || r.term > 0 {
        PeerState::Member(r)
    } else {
        PeerState::Fresh
    })
}

/// What the cluster's leader knows of node `id`.
enum Known {
    /// A member the leader has not replicated anything to yet: an initial member that
    /// started late. Admitted to the cluster with this id.
    NeverReached(String),
    /// A member the leader has replicated to up to this index: this CM lost its data.
    Replicated(u64),
    /// Not a member.
    Stranger,
}

/// Asks the leader (through `peer`, which may be it) what it knows of node `id`.
async fn known_by_leader(peer: StatusReply, id: NodeId) -> Result<Known, String> {
    let leader = if peer.has_leader && peer.leader.as_ref().map(|l| l.id) == Some(peer.id) {
        peer
    } else {
        let addr = peer
            .leader
            .as_ref()
            .map(|l| l.addr.clone())
            .filter(|a| !a.is_empty())
            .ok_or("the peer knows no leader yet")?;
        status(&addr).await?
    };
    if leader.cluster_id.is_empty() || !leader.members.iter().any(|m| m.has_matched) {
        return Err("the leader has no cluster id or replication view yet".into());
    }
    Ok(match leader.members.iter().find(|m| m.id == id) {
        None => Known::Stranger,
        Some(m) if m.matched_index == 0 => Known::NeverReached(leader.cluster_id),
        Some(m) => Known::Replicated(m.matched_index),
    })
}

/// Bootstraps the cluster `peers` named `cluster_id` from node `id` when it is safe (see the
/// module doc); returns once this CM is part of a cluster, whether it formed it or not.
pub async fn bootstrap(
    raft: &Raft,
    cluster: &ClusterId,
    id: NodeId,
    peers: BTreeMap<NodeId, Node>,
    cluster_id: &str,
) -> anyhow::Result<()> {
    let initialized = || async {
        raft.is_initialized()
            .await
            .map_err(|e| anyhow::anyhow!("Raft stopped: {e}"))
    };
    if initialized().await? {
        return Ok(());
    }
    if let Some(own) = cluster.get() {
        if own != cluster_id {
            anyhow::bail!("--cluster-id {cluster_id:?}: this CM belongs to cluster {own:?}");
        }
    }
    let mut reported = String::new();
    loop {
        if initialized().await? {
            tracing::info!("joined the cluster another initial member formed");
            return Ok(());
        }
        let mut fresh = 0;
        let mut member = None;
        let mut silent = Vec::new();
        for (pid, node) in peers.iter().filter(|(pid, _)| **pid != id) {
            match probe(&node.addr).await {
                Ok(PeerState::Fresh) => fresh += 1,
                Ok(PeerState::Member(r)) => member = Some((*pid, r)),
                Err(e) => silent.push(format!("node {pid} ({}): {e}", node.addr)),
            }
        }
        if let Some((pid, reply)) = member {
            // Another initial member formed the cluster a moment ago and is electing its
            // first leader (nothing beyond the initial membership in its log): take part, or
            // it cannot win without this CM's vote.
            let forming =
                reply.last_log_index == 0 && !reply.has_leader && reply.cluster_id == cluster_id;
            if forming {
                cluster
                    .adopt(cluster_id)
                    .map_err(|e| anyhow::anyhow!("--cluster-id {cluster_id:?}: {e}"))?;
                if let Err(e) = raft.initialize(peers.clone()).await {
                    tracing::debug!("initialize while the cluster forms: {e}");
                }
                tracing::info!(
                    peer = pid,
                    cluster = cluster_id,
                    "joined the cluster as it forms"
                );
                return Ok(());
            }
            match known_by_leader(reply, id).await {
                Ok(Known::NeverReached(cid)) => {
                    cluster
                        .adopt(&cid)
                        .map_err(|e| anyhow::anyhow!("joining cluster {cid:?}: {e}"))?;
                    tracing::info!(
                        peer = pid,
                        "a cluster already exists: not forming another; joining it as the \
                         initial member it has not reached yet"
                    );
                    return Ok(());
                }
                Ok(Known::Replicated(index)) => {
                    tracing::error!(
                        node = id,
                        index,
                        "a cluster already exists and its leader replicated to this CM up to \
                         index {index}, but this CM's data is gone: it stays out (it could vote \
                         twice in a term). Remove it (`cmctl cluster remove {id}`) and add it \
                         again (`cmctl cluster add ADDR --id {id}`)"
                    );
                    return Ok(());
                }
                Ok(Known::Stranger) => {
                    tracing::warn!(
                        node = id,
                        "a cluster already exists and this CM is not a member: add it with \
                         `cmctl cluster add`"
                    );
                    return Ok(());
                }
                Err(e) => {
                    tracing::debug!(error = %e, "the cluster exists; asking its leader again");
                    tokio::time::sleep(PROBE_EVERY).await;
                    continue;
                }
            }
        }
        if silent.is_empty() && fresh + 1 == peers.len() {
            cluster
                .adopt(cluster_id)
                .map_err(|e| anyhow::anyhow!("--cluster-id {cluster_id:?}: {e}"))?;
            return match raft.initialize(peers.clone()).await {
                Ok(()) => {
                    tracing::info!(members = ?peers.keys().collect::<Vec<_>>(), cluster = cluster_id, "bootstrapped a new cluster");
                    Ok(())
                }
                Err(e) => {
                    tracing::info!("bootstrap skipped: {e}");
                    Ok(())
                }
            };
        }
        let now = silent.join("; ");
        if now != reported {
            tracing::info!(waiting_for = %now, "bootstrap waits until every initial member answers");
            reported = now;
        }
        tokio::time::sleep(PROBE_EVERY).await;
    }
}

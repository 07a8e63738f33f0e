//! Cluster membership and status for the admin service.
use super::error::AdminError;
use super::forward::{Local, Route};
use super::{hint, AdminService};
use crate::raft::leadership::node_addr;
use crate::raft::{Node, NodeId};
use aerie_core::admin::LeaderInfo;
use aerie_proto::admin as pb;
use openraft::ChangeMembers;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// How long adding a member may take (the learner catches up from a snapshot or the log).
const ADD_MEMBER_TIMEOUT: Duration = Duration::from_secs(60);

/// This CM's view of the cluster (no quorum needed: `cmctl cluster status` asks every CM).
pub fn status(s: &AdminService) -> pb::StatusReply {
    let m = s.leadership.metrics();
    let membership = m.membership_config.membership();
    let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
    let mut members = Vec::new();
    for (id, node) in membership.nodes() {
        let matched = m
            .replication
            .as_ref()
            .and_then(|r| r.get(id).cloned())
            .flatten();
        members.push(pb::Member {
            id: *id,
            addr: node.addr.clone(),
            voter: voters.contains(id),
            matched_index: matched.map(|l| l.index).unwrap_or(0),
            has_matched: m.replication.is_some(),
        });
    }
    let applied = m.last_applied.map(|l| l.index).unwrap_or(0);
    pb::StatusReply {
        id: s.id,
        addr: s.addr.clone(),
        term: m.current_term,
        leader: m.current_leader.map(|id| pb::LeaderHint {
            id,
            addr: node_addr(&m, id),
        }),
        state: format!("{:?}", m.state),
        last_log_index: m.last_log_index.unwrap_or(0),
        // openraft 0.9 reports the applied index; the commit index is at least that.
        committed_index: applied,
        applied_index: applied,
        snapshot_index: m.snapshot.map(|l| l.index).unwrap_or(0),
        purged_index: m.purged.map(|l| l.index).unwrap_or(0),
        members,
        has_leader: m.current_leader.is_some(),
        cluster_id: s.cluster.get().unwrap_or_default(),
        feature_version: crate::leader::features::supported(),
        cluster_feature_version: s
            .state
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .state
            .feature_version,
    }
}

/// The answer to a membership change that was forwarded to a CM that no longer leads.
fn redirect(leader: LeaderInfo) -> Result<pb::MemberReply, AdminError> {
    Ok(pb::MemberReply {
        ok: false,
        error: format!(
            "not leader: node {} at {} is; send membership changes there",
            leader.id, leader.addr
        ),
        leader: Some(hint(leader)),
        redirect: true,
        ..Default::default()
    })
}

/// `cmctl cluster add`: the new CM joins as a learner, catches up, then becomes a voter.
pub async fn add_member(
    s: &AdminService,
    req: pb::AddMemberRequest,
) -> Result<pb::MemberReply, AdminError> {
    if req.addr.trim().is_empty() {
        return Err(AdminError::BadRequest(
            "bad value: cluster add needs the new CM's address (host:port)".into(),
        ));
    }
    let route = Route {
        what: "cluster add",
        forwarded: req.forwarded,
        deadline: Instant::now() + s.timeout,
        forward_timeout: ADD_MEMBER_TIMEOUT + Duration::from_secs(5),
    };
    let forward = pb::AddMemberRequest {
        forwarded: true,
        ..req.clone()
    };
    s.on_leader(
        route,
        || async { add_here(s, &req).await.map(Local::Done) },
        |mut c, timeout| async move {
            let mut fwd = tonic::Request::new(forward);
            fwd.set_timeout(timeout);
            c.add_member(fwd).await
        },
        redirect,
    )
    .await
}

async fn add_here(
    s: &AdminService,
    req: &pb::AddMemberRequest,
) -> Result<pb::MemberReply, AdminError> {
    let m = s.leadership.metrics();
    let membership = m.membership_config.membership().clone();
    if let Some((id, _)) = membership.nodes().find(|(_, n)| n.addr == req.addr) {
        return Err(AdminError::BadRequest(format!(
            "bad value: {} is already member node {id}",
            req.addr
        )));
    }
    let id = if req.id != 0 {
        if membership.get_node(&req.id).is_some() {
            return Err(AdminError::BadRequest(format!(
                "bad value: node id {} is already in use",
                req.id
            )));
        }
        req.id
    } else {
        membership.nodes().map(|(id, _)| *id).max().unwrap_or(0) + 1
    };
    // The new CM takes part in no cluster until admitted to this one, and only if it can
    // apply every command the cluster may carry.
    admit_remote(s, &req.addr, id).await?;
    let cluster_version = s
        .state
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .state
        .feature_version;
    let theirs = crate::leader::features::supported_by(&req.addr)
        .await
        .map_err(|e| {
            AdminError::Failed(format!("asking the CM at {} its version: {e}", req.addr))
        })?;
    if theirs < cluster_version {
        return Err(AdminError::BadRequest(format!(
            "bad value: the CM at {} supports feature version {theirs}, the cluster runs \
             {cluster_version}: upgrade it first",
            req.addr
        )));
    }
    let node = Node {
        addr: req.addr.clone(),
    };
    let raft = s.leadership.raft();
    // Blocking add: returns when the learner has caught up with the leader's log.
    match tokio::time::timeout(ADD_MEMBER_TIMEOUT, raft.add_learner(id, node, true)).await {
        Err(_) => {
            return Err(AdminError::Failed(format!(
                "node {id} at {} was added as a learner but did not catch up within {} s; \
                 is aerie-cm running there with an empty data directory?",
                req.addr,
                ADD_MEMBER_TIMEOUT.as_secs()
            )))
        }
        Ok(Err(e)) => {
            return Err(AdminError::Failed(format!(
                "adding learner {id} at {} failed: {e}",
                req.addr
            )))
        }
        Ok(Ok(_)) => {}
    }
    if req.learner_only {
        return Ok(pb::MemberReply {
            ok: true,
            id,
            detail: format!("node {id} at {} added as a learner", req.addr),
            ..Default::default()
        });
    }
    let change = ChangeMembers::AddVoterIds(BTreeSet::from([id]));
    match tokio::time::timeout(ADD_MEMBER_TIMEOUT, raft.change_membership(change, false)).await {
        Err(_) => Err(s.no_quorum("promotion to voter not committed")),
        Ok(Err(e)) => Err(AdminError::Failed(format!(
            "promoting node {id} to voter failed: {e}"
        ))),
        Ok(Ok(r)) => Ok(pb::MemberReply {
            ok: true,
            id,
            detail: format!(
                "node {id} at {} added and promoted to voter (log index {})",
                req.addr, r.log_id.index
            ),
            ..Default::default()
        }),
    }
}

/// Asks the CM at `addr` to join this cluster as node `id` (`Admit`).
async fn admit_remote(s: &AdminService, addr: &str, id: NodeId) -> Result<(), AdminError> {
    let Some(cluster_id) = s.cluster.get() else {
        return Err(AdminError::Failed(
            "this CM has no cluster id; it cannot admit another".into(),
        ));
    };
    let ch =
        crate::raft::network::lazy_channel(addr, aerie_security::Role::Cm, Duration::from_secs(2))
            .map_err(|e| AdminError::BadRequest(format!("bad value: {e}")))?;
    let mut c = pb::admin_client::AdminClient::new(ch);
    // The new CM may be starting still: wait for it to listen, as long as adding may take.
    let deadline = Instant::now() + ADD_MEMBER_TIMEOUT / 2;
    loop {
        let mut r = tonic::Request::new(pb::AdmitRequest {
            cluster_id: cluster_id.clone(),
            node_id: id,
        });
        r.set_timeout(Duration::from_secs(5));
        match c.admit(r).await {
            Ok(_) => return Ok(()),
            Err(e) if e.code() == tonic::Code::Unavailable && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => {
                return Err(AdminError::Failed(format!(
                    "the CM at {addr} did not join this cluster as node {id}: {}",
                    e.message()
                )))
            }
        }
    }
}

/// `Admit`: a fresh CM joins the cluster that adds it. A CM that already belongs to a cluster
/// accepts only its own (adding it again is harmless), and a CM with Raft state but no id
/// is refused: it was never admitted, so it holds another history.
pub async fn admit(s: &AdminService, req: pb::AdmitRequest) -> Result<pb::AdmitReply, AdminError> {
    if req.cluster_id.is_empty() {
        return Err(AdminError::BadRequest("bad value: empty cluster id".into()));
    }
    if s.cluster.get().is_none() {
        let initialized = s
            .leadership
            .raft()
            .is_initialized()
            .await
            .map_err(|e| AdminError::Failed(format!("Raft stopped: {e}")))?;
        if initialized {
            return Err(AdminError::Failed(
                "this CM holds Raft state of no known cluster; start it with an empty data \
                 directory to add it"
                    .into(),
            ));
        }
    }
    if req.node_id != s.id {
        return Err(AdminError::BadRequest(format!(
            "bad value: this CM is node {}, not node {}",
            s.id, req.node_id
        )));
    }
    s.cluster
        .adopt(&req.cluster_id)
        .map_err(AdminError::Failed)?;
    Ok(pb::AdmitReply {})
}

/// `cmctl cluster remove`: a voter is removed from the voters (never the last one), a
/// learner from the nodes.
pub async fn remove_member(
    s: &AdminService,
    req: pb::RemoveMemberRequest,
) -> Result<pb::MemberReply, AdminError> {
    let route = Route {
        what: "cluster remove",
        forwarded: req.forwarded,
        deadline: Instant::now() + s.timeout,
        forward_timeout: s.timeout * 2,
    };
    let forward = pb::RemoveMemberRequest {
        forwarded: true,
        ..req
    };
    s.on_leader(
        route,
        || async { remove_here(s, req.id).await.map(Local::Done) },
        |mut c, timeout| async move {
            let mut fwd = tonic::Request::new(forward);
            fwd.set_timeout(timeout);
            c.remove_member(fwd).await
        },
        redirect,
    )
    .await
}

async fn remove_here(s: &AdminService, id: NodeId) -> Result<pb::MemberReply, AdminError> {
    let m = s.leadership.metrics();
    let membership = m.membership_config.membership().clone();
    let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
    let addr = node_addr(&m, id);
    if membership.get_node(&id).is_none() {
        let known: Vec<String> = membership
            .nodes()
            .map(|(id, n)| format!("{id} ({n})"))
            .collect();
        return Err(AdminError::BadRequest(format!(
            "bad value: no member with id {id}; members are {}",
            known.join(", ")
        )));
    }
    let change = if voters.contains(&id) {
        if voters.len() == 1 {
            return Err(AdminError::BadRequest(
                "bad value: cannot remove the last voter".into(),
            ));
        }
        ChangeMembers::RemoveVoters(BTreeSet::from([id]))
    } else {
        ChangeMembers::RemoveNodes(BTreeSet::from([id]))
    };
    let raft = s.leadership.raft();
    match tokio::time::timeout(s.timeout * 2, raft.change_membership(change, false)).await {
        Err(_) => Err(s.no_quorum("membership change not committed")),
        Ok(Err(e)) => Err(AdminError::Failed(format!(
            "removing node {id} failed: {e}"
        ))),
        Ok(Ok(r)) => Ok(pb::MemberReply {
            ok: true,
            id,
            detail: format!("node {id} ({addr}) removed (log index {})", r.log_id.index),
            ..Default::default()
        }),
    }
}

/// Builds a snapshot now and waits (10 s at most) until it covers what was applied.
pub async fn snapshot_now(s: &AdminService) -> Result<pb::SnapshotReply, AdminError> {
    let target = s
        .leadership
        .metrics()
        .last_applied
        .map(|l| l.index)
        .unwrap_or(0);
    let raft = s.leadership.raft();
    raft.trigger()
        .snapshot()
        .await
        .map_err(|e| AdminError::Failed(format!("cannot trigger a snapshot: {e}")))?;
    let mut rx = raft.metrics();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let idx = rx.borrow().snapshot.map(|l| l.index).unwrap_or(0);
        if idx >= target {
            return Ok(pb::SnapshotReply { index: idx });
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(AdminError::Failed(format!(
                "snapshot did not reach index {target} within 10 s (at {idx})"
            )));
        }
        let _ = tokio::time::timeout(left, rx.changed()).await;
    }
}

//! Cluster membership and status for the admin service.
use super::{node_addr, status_leader, AdminService};
use crate::raft::{Node, NodeId};
use aerie_proto::admin as pb;
use openraft::ChangeMembers;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// How long adding a member may take (the learner catches up from a snapshot or the log).
const ADD_MEMBER_TIMEOUT: Duration = Duration::from_secs(60);

pub fn status(s: &AdminService) -> pb::StatusReply {
    let m = s.metrics();
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
        leader: status_leader(&m),
        state: format!("{:?}", m.state),
        last_log_index: m.last_log_index.unwrap_or(0),
        // openraft 0.9 reports the applied index; the commit index is at least that.
        committed_index: applied,
        applied_index: applied,
        snapshot_index: m.snapshot.map(|l| l.index).unwrap_or(0),
        purged_index: m.purged.map(|l| l.index).unwrap_or(0),
        members,
        has_leader: m.current_leader.is_some(),
    }
}

fn not_leader_reply(s: &AdminService, leader: Option<pb::LeaderHint>) -> pb::MemberReply {
    let error = match &leader {
        Some(l) => format!(
            "not leader: node {} at {} is; send membership changes there",
            l.id, l.addr
        ),
        None => s.no_quorum_message("no leader"),
    };
    pb::MemberReply {
        ok: false,
        error,
        leader,
        ..Default::default()
    }
}

pub async fn add_member(
    s: &AdminService,
    req: pb::AddMemberRequest,
) -> Result<pb::MemberReply, String> {
    if req.addr.trim().is_empty() {
        return Err("bad value: cluster add needs the new CM's address (host:port)".into());
    }
    let deadline = Instant::now() + s.timeout;
    if let Some(leader) = s.wait_leader(deadline).await? {
        if req.forwarded {
            return Ok(not_leader_reply(s, Some(leader)));
        }
        let mut c = s.admin_client(&leader.addr).await?;
        let mut fwd = tonic::Request::new(pb::AddMemberRequest {
            forwarded: true,
            ..req
        });
        fwd.set_timeout(ADD_MEMBER_TIMEOUT + Duration::from_secs(5));
        return c
            .add_member(fwd)
            .await
            .map(|r| r.into_inner())
            .map_err(|e| s.forward_err(&leader, e.message()));
    }
    let m = s.metrics();
    let membership = m.membership_config.membership().clone();
    if let Some((id, _)) = membership.nodes().find(|(_, n)| n.addr == req.addr) {
        return Err(format!(
            "bad value: {} is already member node {id}",
            req.addr
        ));
    }
    let id = if req.id != 0 {
        if membership.get_node(&req.id).is_some() {
            return Err(format!("bad value: node id {} is already in use", req.id));
        }
        req.id
    } else {
        membership.nodes().map(|(id, _)| *id).max().unwrap_or(0) + 1
    };
    let node = Node {
        addr: req.addr.clone(),
    };
    // Blocking add: returns when the learner has caught up with the leader's log.
    match tokio::time::timeout(ADD_MEMBER_TIMEOUT, s.raft.add_learner(id, node, true)).await {
        Err(_) => {
            return Err(format!(
                "node {id} at {} was added as a learner but did not catch up within {} s; \
                 is aerie-cm running there with an empty data directory?",
                req.addr,
                ADD_MEMBER_TIMEOUT.as_secs()
            ))
        }
        Ok(Err(e)) => return Err(format!("adding learner {id} at {} failed: {e}", req.addr)),
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
    match tokio::time::timeout(ADD_MEMBER_TIMEOUT, s.raft.change_membership(change, false)).await {
        Err(_) => Err(s.no_quorum_message("promotion to voter not committed")),
        Ok(Err(e)) => Err(format!("promoting node {id} to voter failed: {e}")),
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

pub async fn remove_member(
    s: &AdminService,
    req: pb::RemoveMemberRequest,
) -> Result<pb::MemberReply, String> {
    let deadline = Instant::now() + s.timeout;
    if let Some(leader) = s.wait_leader(deadline).await? {
        if req.forwarded {
            return Ok(not_leader_reply(s, Some(leader)));
        }
        let mut c = s.admin_client(&leader.addr).await?;
        let mut fwd = tonic::Request::new(pb::RemoveMemberRequest {
            forwarded: true,
            ..req
        });
        fwd.set_timeout(s.timeout * 2);
        return c
            .remove_member(fwd)
            .await
            .map(|r| r.into_inner())
            .map_err(|e| s.forward_err(&leader, e.message()));
    }
    let m = s.metrics();
    let membership = m.membership_config.membership().clone();
    let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
    let addr = node_addr(&m, req.id);
    if membership.get_node(&req.id).is_none() {
        let known: Vec<String> = membership
            .nodes()
            .map(|(id, n)| format!("{id} ({n})"))
            .collect();
        return Err(format!(
            "bad value: no member with id {}; members are {}",
            req.id,
            known.join(", ")
        ));
    }
    let change = if voters.contains(&req.id) {
        if voters.len() == 1 {
            return Err("bad value: cannot remove the last voter".into());
        }
        ChangeMembers::RemoveVoters(BTreeSet::from([req.id]))
    } else {
        ChangeMembers::RemoveNodes(BTreeSet::from([req.id]))
    };
    match tokio::time::timeout(s.timeout * 2, s.raft.change_membership(change, false)).await {
        Err(_) => Err(s.no_quorum_message("membership change not committed")),
        Ok(Err(e)) => Err(format!("removing node {} failed: {e}", req.id)),
        Ok(Ok(r)) => Ok(pb::MemberReply {
            ok: true,
            id: req.id,
            detail: format!(
                "node {} ({addr}) removed (log index {})",
                req.id, r.log_id.index
            ),
            ..Default::default()
        }),
    }
}

/// Builds a snapshot now and waits (10 s at most) until it covers what was applied.
pub async fn snapshot_now(s: &AdminService) -> Result<pb::SnapshotReply, String> {
    let target = s.metrics().last_applied.map(|l| l.index).unwrap_or(0);
    s.raft
        .trigger()
        .snapshot()
        .await
        .map_err(|e| format!("cannot trigger a snapshot: {e}"))?;
    let mut rx = s.raft.metrics();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let idx = rx.borrow().snapshot.map(|l| l.index).unwrap_or(0);
        if idx >= target {
            return Ok(pb::SnapshotReply { index: idx });
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!(
                "snapshot did not reach index {target} within 10 s (at {idx})"
            ));
        }
        let _ = tokio::time::timeout(left, rx.changed()).await;
    }
}

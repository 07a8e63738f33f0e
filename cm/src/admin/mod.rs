//! The `Admin` gRPC service every CM serves.
//!
//! * Writes go through Raft. A follower forwards them to the leader it knows (one hop: a
//!   forwarded request is never forwarded again); when it cannot, it answers with the leader's
//!   address, which `cmctl` follows.
//! * Reads are linearizable: the leader confirms its leadership with a quorum
//!   (`ensure_linearizable`) and waits until it has applied that far; a follower forwards the
//!   read to the leader. `stale` reads answer from the local state at once.
//! * Every wait has a deadline; when it passes without a quorum the caller gets
//!   "no quorum: 2 of 3 CMs unreachable: ..." naming the peers and the last error seen.
mod cluster;
mod query;

use crate::raft::network::{lazy_channel, PeerHealth};
use crate::raft::{ClientWriteError, Node, NodeId, Raft, RaftError};
use aerie_core::state::{Command, Request};
use crate::store::SharedState;
use aerie_proto::admin::{self as pb, admin_client::AdminClient, admin_server};
use openraft::error::ForwardToLeader;
use std::time::{Duration, Instant};
use tonic::{Response, Status};

/// Everything the admin service needs from its node.
#[derive(Clone)]
pub struct AdminService {
    pub id: NodeId,
    pub addr: String,
    pub raft: Raft,
    pub state: SharedState,
    pub health: PeerHealth,
    /// How long a write or linearizable read waits for a leader and a quorum.
    pub timeout: Duration,
}

impl AdminService {
    pub fn into_server(self) -> admin_server::AdminServer<Self> {
        admin_server::AdminServer::new(self)
            .max_decoding_message_size(64 << 20)
            .max_encoding_message_size(256 << 20)
    }

    fn metrics(&self) -> crate::raft::Metrics {
        self.raft.metrics().borrow().clone()
    }

    fn leader_hint(&self) -> Option<pb::LeaderHint> {
        let m = self.metrics();
        let id = m.current_leader?;
        let addr = m
            .membership_config
            .membership()
            .get_node(&id)
            .map(|n| n.addr.clone())
            .unwrap_or_default();
        Some(pb::LeaderHint { id, addr })
    }

    /// Waits (until `deadline`) for some leader to be known; `Ok(None)` means "I am it".
    async fn wait_leader(&self, deadline: Instant) -> Result<Option<pb::LeaderHint>, String> {
        let mut rx = self.raft.metrics();
        loop {
            let leader = rx.borrow().current_leader;
            if let Some(l) = leader {
                if l == self.id {
                    return Ok(None);
                }
                if let Some(h) = self.leader_hint() {
                    return Ok(Some(h));
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.no_quorum_message("no leader elected"));
            }
            let _ = tokio::time::timeout(left, rx.changed()).await;
        }
    }

    /// "no quorum: 2 of 3 CMs unreachable: node 2 (addr): error; ..." from what the Raft
    /// network layer last saw.
    pub fn no_quorum_message(&self, what: &str) -> String {
        let m = self.metrics();
        let membership = m.membership_config.membership().clone();
        let voters: Vec<NodeId> = membership.voter_ids().collect();
        let mut down = Vec::new();
        for id in &voters {
            if *id == self.id {
                continue;
            }
            let addr = membership
                .get_node(id)
                .map(|n| n.addr.clone())
                .unwrap_or_default();
            match self.health.get(*id) {
                Some(s) => {
                    if let Some(e) = s.unreachable() {
                        down.push(format!("node {id} ({addr}): {e}"));
                    }
                }
                None => down.push(format!("node {id} ({addr}): never answered")),
            }
        }
        if down.is_empty() {
            format!(
                "no quorum: {what} within {:.1} s (term {}, {} voters); peers answer but no \
                 majority agreed in time",
                self.timeout.as_secs_f64(),
                m.current_term,
                voters.len()
            )
        } else {
            format!(
                "no quorum: {} of {} CMs unreachable: {} ({what} within {:.1} s)",
                down.len(),
                voters.len(),
                down.join("; "),
                self.timeout.as_secs_f64()
            )
        }
    }

    async fn admin_client(
        &self,
        addr: &str,
    ) -> Result<AdminClient<tonic::transport::Channel>, String> {
        let ch = lazy_channel(addr, Duration::from_secs(1))?;
        Ok(AdminClient::new(ch).max_decoding_message_size(256 << 20))
    }

    fn forward_err(&self, leader: &pb::LeaderHint, e: impl std::fmt::Display) -> String {
        format!(
            "this CM (node {}) is not the leader; forwarding to the leader, node {} at {}, failed: {e}",
            self.id, leader.id, leader.addr
        )
    }

    async fn do_write(&self, req: pb::WriteRequest) -> Result<pb::WriteReply, String> {
        let cmd = parse_request(&req.command_json)?;
        let deadline = Instant::now() + self.timeout;
        loop {
            match self.wait_leader(deadline).await? {
                Some(leader) => {
                    if req.forwarded {
                        return Ok(pb::WriteReply {
                            error: format!(
                                "not leader: node {} is; send writes to {}",
                                leader.id, leader.addr
                            ),
                            leader: Some(leader),
                            ..Default::default()
                        });
                    }
                    let mut c = self.admin_client(&leader.addr).await?;
                    let mut fwd = tonic::Request::new(pb::WriteRequest {
                        command_json: req.command_json.clone(),
                        forwarded: true,
                    });
                    fwd.set_timeout(deadline.saturating_duration_since(Instant::now()));
                    return match c.write(fwd).await {
                        Ok(r) => Ok(r.into_inner()),
                        Err(s) => Err(self.forward_err(&leader, s.message())),
                    };
                }
                None => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    let res = tokio::time::timeout(left, self.raft.client_write(cmd.clone())).await;
                    match res {
                        Err(_) => return Err(self.no_quorum_message("write not committed")
                            + "; it is applied later if the quorum comes back before another leader takes over"),
                        Ok(Ok(r)) => {
                            return Ok(pb::WriteReply {
                                ok: r.data.ok,
                                error: r.data.error.clone(),
                                log_index: r.log_id.index,
                                leader: Some(pb::LeaderHint {
                                    id: self.id,
                                    addr: self.addr.clone(),
                                }),
                                result_json: r
                                    .data
                                    .result
                                    .as_ref()
                                    .map(|v| v.to_string())
                                    .unwrap_or_default(),
                            })
                        }
                        Ok(Err(RaftError::APIError(ClientWriteError::ForwardToLeader(
                            ForwardToLeader { .. },
                        )))) => {
                            // Lost leadership meanwhile: go round again and follow the new one.
                            if Instant::now() >= deadline {
                                return Err(self.no_quorum_message("no leader"));
                            }
                            tokio::time::sleep(Duration::from_millis(20)).await;
                            continue;
                        }
                        Ok(Err(e)) => return Err(format!("write failed: {e}")),
                    }
                }
            }
        }
    }

    async fn do_query(&self, req: pb::QueryRequest) -> Result<pb::QueryReply, String> {
        if !req.stale {
            let deadline = Instant::now() + self.timeout;
            match self.wait_leader(deadline).await? {
                Some(leader) => {
                    if req.forwarded {
                        return Err(format!(
                            "not leader: node {} at {} is (stale reads can be answered by any CM)",
                            leader.id, leader.addr
                        ));
                    }
                    let mut c = self.admin_client(&leader.addr).await?;
                    let mut fwd = tonic::Request::new(pb::QueryRequest {
                        forwarded: true,
                        ..req.clone()
                    });
                    fwd.set_timeout(deadline.saturating_duration_since(Instant::now()));
                    return match c.query(fwd).await {
                        Ok(r) => Ok(r.into_inner()),
                        Err(s) => Err(self.forward_err(&leader, s.message())),
                    };
                }
                None => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    match tokio::time::timeout(left, self.raft.ensure_linearizable()).await {
                        Err(_) => return Err(self.no_quorum_message("leadership not confirmed")),
                        Ok(Err(e)) => return Err(format!("linearizable read failed: {e}")),
                        Ok(Ok(_)) => {}
                    }
                }
            }
        }
        let (mut json, applied) = {
            let a = self.state.read().unwrap_or_else(|p| p.into_inner());
            let json = query::run(&a.state, &req.kind, &req.args_json)?;
            (json, a.last_applied.map(|l| l.index).unwrap_or(0))
        };
        if req.kind == "negotiator" {
            json = with_leader(&json, self.leader_hint());
        }
        Ok(pb::QueryReply {
            result_json: json,
            applied_index: applied,
            leader: self.leader_hint(),
        })
    }
}

/// Adds `"leader": {"id", "addr"}` (or null) to a JSON object answer.
fn with_leader(json: &str, leader: Option<pb::LeaderHint>) -> String {
    let Ok(serde_json::Value::Object(mut o)) = serde_json::from_str::<serde_json::Value>(json)
    else {
        return json.to_string();
    };
    o.insert(
        "leader".into(),
        leader.map_or(
            serde_json::Value::Null,
            |l| serde_json::json!({"id": l.id, "addr": l.addr}),
        ),
    );
    serde_json::Value::Object(o).to_string()
}

/// Accepts `{"v":1,"cmd":...}` or a bare command (`{"SetLimit":{...}}`, `"Noop"`).
pub fn parse_request(json: &str) -> Result<Request, String> {
    if let Ok(r) = serde_json::from_str::<Request>(json) {
        return Ok(r);
    }
    serde_json::from_str::<Command>(json)
        .map(Request::new)
        .map_err(|e| format!("bad command {json:?}: {e}"))
}

fn status(e: String) -> Status {
    if e.starts_with("no quorum") {
        Status::unavailable(e)
    } else if e.starts_with("bad command") {
        Status::invalid_argument(e)
    } else {
        Status::failed_precondition(e)
    }
}

#[tonic::async_trait]
impl admin_server::Admin for AdminService {
    async fn write(
        &self,
        request: tonic::Request<pb::WriteRequest>,
    ) -> Result<Response<pb::WriteReply>, Status> {
        let t = Instant::now();
        let r = self.do_write(request.into_inner()).await;
        crate::metrics::record_admin("write", r.as_ref().is_ok_and(|r| r.ok), t.elapsed());
        r.map(Response::new).map_err(status)
    }

    async fn query(
        &self,
        request: tonic::Request<pb::QueryRequest>,
    ) -> Result<Response<pb::QueryReply>, Status> {
        let t = Instant::now();
        let r = self.do_query(request.into_inner()).await;
        crate::metrics::record_admin("query", r.is_ok(), t.elapsed());
        r.map(Response::new).map_err(status)
    }

    async fn status(
        &self,
        _request: tonic::Request<pb::StatusRequest>,
    ) -> Result<Response<pb::StatusReply>, Status> {
        let t = Instant::now();
        let r = cluster::status(self);
        crate::metrics::record_admin("status", true, t.elapsed());
        Ok(Response::new(r))
    }

    async fn add_member(
        &self,
        request: tonic::Request<pb::AddMemberRequest>,
    ) -> Result<Response<pb::MemberReply>, Status> {
        let t = Instant::now();
        let r = cluster::add_member(self, request.into_inner()).await;
        crate::metrics::record_admin("add_member", r.as_ref().is_ok_and(|r| r.ok), t.elapsed());
        r.map(Response::new).map_err(status)
    }

    async fn remove_member(
        &self,
        request: tonic::Request<pb::RemoveMemberRequest>,
    ) -> Result<Response<pb::MemberReply>, Status> {
        let t = Instant::now();
        let r = cluster::remove_member(self, request.into_inner()).await;
        crate::metrics::record_admin("remove_member", r.as_ref().is_ok_and(|r| r.ok), t.elapsed());
        r.map(Response::new).map_err(status)
    }

    async fn trigger_snapshot(
        &self,
        _request: tonic::Request<pb::SnapshotRequest>,
    ) -> Result<Response<pb::SnapshotReply>, Status> {
        let r = cluster::snapshot_now(self).await;
        r.map(Response::new).map_err(status)
    }
}

impl std::fmt::Debug for AdminService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AdminService(node {} at {})", self.id, self.addr)
    }
}

/// The leader as the status reply shows it.
pub(crate) fn status_leader(m: &crate::raft::Metrics) -> Option<pb::LeaderHint> {
    m.current_leader.map(|id| pb::LeaderHint {
        id,
        addr: node_addr(m, id),
    })
}

/// The membership's node address for an id.
pub(crate) fn node_addr(m: &crate::raft::Metrics, id: NodeId) -> String {
    m.membership_config
        .membership()
        .get_node(&id)
        .map(|n: &Node| n.addr.clone())
        .unwrap_or_default()
}

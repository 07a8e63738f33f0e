//! The `Admin` gRPC service every CM serves (`cmctl`, the test kit).
//!
//! * Writes go through Raft ([`crate::raft::propose`]); reads are linearizable (the leader
//!   confirms its leadership with a quorum and has applied that far) unless `stale`, which
//!   answers from the local state at once. A follower forwards both to the leader
//!   ([`forward`]).
//! * Requests and answers are the typed values of `aerie_core::state` and
//!   `aerie_core::admin`, carried as JSON.
//! * Every wait has a deadline; when it passes without a quorum the caller gets "no quorum: 2
//!   of 3 CMs unreachable: ..." naming the peers and the last error seen ([`error`]), and
//!   every failure becomes a gRPC status in one place.
mod cluster;
pub mod error;
mod forward;
mod reconfig;
pub mod tokens;

use crate::raft::leadership::Leadership;
use crate::raft::network::PeerHealth;
use crate::raft::propose::{propose_request, ProposeError};
use crate::raft::store::{ClusterId, SharedState};
use crate::raft::NodeId;
use aerie_core::admin::{LeaderInfo, Query};
use aerie_core::state::Request;
use aerie_proto::admin::{self as pb, admin_server};
use error::AdminError;
use forward::{Local, Route};
use std::time::{Duration, Instant};
use tonic::{Response, Status};

/// Everything the admin service needs from its node.
#[derive(Clone)]
pub struct AdminService {
    /// This CM's Raft node id.
    pub id: NodeId,
    /// This CM's advertised gRPC address.
    pub addr: String,
    /// Who leads, and the Raft handle.
    pub leadership: Leadership,
    /// The applied replicated state.
    pub state: SharedState,
    /// What the Raft network last saw of each peer (for "no quorum" messages).
    pub health: PeerHealth,
    /// The cluster this CM belongs to (none until it is admitted to one).
    pub cluster: ClusterId,
    /// How long a write or linearizable read waits for a leader and a quorum.
    pub timeout: Duration,
    /// This CM's configuration file as a negotiation policy (`cmctl reconfig`).
    pub file_policy: std::sync::Arc<crate::policy::FilePolicy>,
    /// The pool's token signing key (`token-signing.key`), when this CM has one: it signs
    /// the tokens `cmctl token create` asks for.
    pub signing_key: Option<std::sync::Arc<aerie_security::token::SigningKey>>,
    /// Admin writes per second per identity ([`crate::limits`]); CMs forwarding are exempt.
    pub write_limit: std::sync::Arc<aerie_security::rate::Limiter>,
}

fn hint(l: LeaderInfo) -> pb::LeaderHint {
    pb::LeaderHint {
        id: l.id,
        addr: l.addr,
    }
}

impl AdminService {
    /// The tonic server for this service.
    pub fn into_server(self) -> admin_server::AdminServer<Self> {
        admin_server::AdminServer::new(self)
            .max_decoding_message_size(aerie_security::transport::MAX_MESSAGE)
            .max_encoding_message_size(aerie_security::transport::MAX_POOL_REPLY)
    }

    fn leader_hint(&self) -> Option<pb::LeaderHint> {
        self.leadership.leader().map(hint)
    }

    fn route<'a>(&self, what: &'a str, forwarded: bool) -> Route<'a> {
        let deadline = Instant::now() + self.timeout;
        Route {
            what,
            forwarded,
            deadline,
            forward_timeout: self.timeout,
        }
    }

    async fn do_write(
        &self,
        req: pb::WriteRequest,
        peer: &aerie_security::identity::Peer,
    ) -> Result<pb::WriteReply, AdminError> {
        let caller = &peer.caller;
        let mut request: Request = serde_json::from_str(&req.command_json).map_err(|e| {
            AdminError::BadRequest(format!("bad command {:?}: {e}", req.command_json))
        })?;
        // The leader writes the ledger's ticks, cycle records, absent ads and its own
        // parameters itself; from outside the CMs they would rewrite history (a Tick far in
        // the future ages every submitter's usage away). Insecure mode authenticates nobody.
        if request.cmd.is_internal()
            && !caller.is(aerie_security::Role::Cm)
            && *caller != aerie_security::Caller::Anonymous
        {
            return Err(AdminError::Denied(format!(
                "{caller} may not write {}: only the leader writes it",
                request.cmd.name()
            )));
        }
        // Who asked, from where: stamped by the CM the caller reached, whatever its view of
        // the feature version (a follower that has not yet applied version 5 would otherwise
        // forward it unstamped and the leader stamp itself as the author); the leader drops
        // the stamp while some CM could not record it (below).
        tokens::stamp(&mut request, caller, peer.addr);
        // A token request from its caller: this CM assigns the id and times and signs it.
        let mut signed = None;
        if let Some(asked) = tokens::token_request(&request) {
            if !tokens::trusted_forward(caller, req.forwarded) {
                let key = self.signing_key.as_ref().ok_or_else(|| {
                    AdminError::Failed(format!(
                        "this CM (node {}) has no {} to sign tokens with; copy it from the \
                         credentials directory `aerie-cm security init` made",
                        self.id,
                        aerie_security::token::SIGNING_KEY
                    ))
                })?;
                let (record, token) = tokens::complete(asked, key, unix_now(), tokens::new_jti())?;
                request.cmd = aerie_core::state::Command::IssueToken(record);
                signed = Some(token);
            }
        }
        let command_json = serde_json::to_string(&request)
            .map_err(|e| AdminError::Failed(format!("encoding the command: {e}")))?;
        let route = self.route("write", req.forwarded);
        let deadline = route.deadline;
        let forward = pb::WriteRequest {
            forwarded: true,
            command_json,
        };
        self.on_leader(
            route,
            || async {
                let left = deadline.saturating_duration_since(Instant::now());
                // The audit record's time is the leader's; before feature version 5 older
                // CMs would not record it, so none is written.
                let mut request = request.clone();
                let feature = self
                    .state
                    .read()
                    .unwrap_or_else(|p| p.into_inner())
                    .state
                    .feature_version;
                if feature < 5 {
                    request.audit = None;
                }
                if let Some(a) = request.audit.as_mut() {
                    a.time = unix_now();
                }
                match propose_request(self.leadership.raft(), request, left).await {
                    Ok(c) => Ok(Local::Done(pb::WriteReply {
                        ok: c.response.ok,
                        error: c.response.error.clone(),
                        log_index: c.log_index,
                        leader: Some(pb::LeaderHint {
                            id: self.id,
                            addr: self.addr.clone(),
                        }),
                        result_json: match &c.response.result {
                            Some(r) => serde_json::to_string(r).map_err(|e| {
                                AdminError::Failed(format!("encoding the command's result: {e}"))
                            })?,
                            None => String::new(),
                        },
                        redirect: false,
                    })),
                    Err(ProposeError::NotLeader { .. }) => Ok(Local::Deposed),
                    Err(ProposeError::Timeout(_)) => Err(match self.no_quorum("write not committed") {
                        AdminError::NoQuorum(m) => AdminError::NoQuorum(
                            m + "; it is applied later if the quorum comes back before another leader takes over",
                        ),
                        other => other,
                    }),
                    Err(ProposeError::Fatal(e)) => Err(AdminError::Failed(format!("write failed: {e}"))),
                }
            },
            |mut c, timeout| async move {
                let mut fwd = tonic::Request::new(forward);
                fwd.set_timeout(timeout);
                c.write(fwd).await
            },
            |leader| {
                Ok(pb::WriteReply {
                    error: format!(
                        "not leader: node {} is; send writes to {}",
                        leader.id, leader.addr
                    ),
                    leader: Some(hint(leader)),
                    redirect: true,
                    ..Default::default()
                })
            },
        )
        .await
        .and_then(|reply| with_token(reply, signed))
    }

    async fn do_query(&self, req: pb::QueryRequest) -> Result<pb::QueryReply, AdminError> {
        let query: Query = serde_json::from_str(&req.query_json)
            .map_err(|e| AdminError::BadRequest(format!("bad query {:?}: {e}", req.query_json)))?;
        if req.stale {
            return self.answer(&query);
        }
        let route = self.route("linearizable read", req.forwarded);
        let deadline = route.deadline;
        let forward = pb::QueryRequest {
            forwarded: true,
            ..req
        };
        self.on_leader(
            route,
            || async {
                let left = deadline.saturating_duration_since(Instant::now());
                match self.leadership.confirm(left).await {
                    Ok(()) => self.answer(&query).map(Local::Done),
                    Err(crate::raft::leadership::ConfirmError::NotLeader) => Ok(Local::Deposed),
                    Err(crate::raft::leadership::ConfirmError::Timeout(_)) => {
                        Err(self.no_quorum("leadership not confirmed"))
                    }
                }
            },
            |mut c, timeout| async move {
                let mut fwd = tonic::Request::new(forward);
                fwd.set_timeout(timeout);
                c.query(fwd).await
            },
            |leader| {
                Err(AdminError::Failed(format!(
                    "not leader: node {} at {} is (stale reads can be answered by any CM)",
                    leader.id, leader.addr
                )))
            },
        )
        .await
    }

    /// Answers `query` from the local applied state.
    fn answer(&self, query: &Query) -> Result<pb::QueryReply, AdminError> {
        let a = self.state.read().unwrap_or_else(|p| p.into_inner());
        let answer_json = query
            .answer(&a.state, self.leadership.leader())
            .map_err(|e| AdminError::Failed(e.to_string()))?;
        Ok(pb::QueryReply {
            answer_json,
            applied_index: a.last_applied.map(|l| l.index).unwrap_or(0),
            leader: self.leader_hint(),
        })
    }
}

/// The leader's clock for audit records and token times (the shell's one clock read).
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// A committed token record's reply, with the signed token put in for the caller (it is
/// never in the log).
fn with_token(
    mut reply: pb::WriteReply,
    signed: Option<String>,
) -> Result<pb::WriteReply, AdminError> {
    let Some(token) = signed else {
        return Ok(reply);
    };
    if !reply.ok || reply.result_json.is_empty() {
        return Ok(reply);
    }
    let mut result: aerie_core::state::CommandResult = serde_json::from_str(&reply.result_json)
        .map_err(|e| AdminError::Failed(format!("reading the token record's result: {e}")))?;
    if let aerie_core::state::CommandResult::TokenIssued { token: t, .. } = &mut result {
        *t = token;
    }
    reply.result_json = serde_json::to_string(&result)
        .map_err(|e| AdminError::Failed(format!("encoding the token: {e}")))?;
    Ok(reply)
}

/// Times a request and counts its outcome (`aerie_admin_requests_total`).
async fn timed<T>(
    method: &'static str,
    ok: impl Fn(&T) -> bool,
    f: impl std::future::Future<Output = Result<T, AdminError>>,
) -> Result<Response<T>, Status> {
    let t = Instant::now();
    let r = f.await;
    crate::metrics::record_admin(method, r.as_ref().is_ok_and(ok), t.elapsed());
    r.map(Response::new).map_err(Status::from)
}

#[tonic::async_trait]
impl admin_server::Admin for AdminService {
    async fn write(
        &self,
        request: tonic::Request<pb::WriteRequest>,
    ) -> Result<Response<pb::WriteReply>, Status> {
        let peer = aerie_security::layer::peer_of(&request);
        if !peer.caller.is(aerie_security::Role::Cm) {
            let now = Instant::now();
            let who = peer.caller.to_string();
            self.write_limit.take(&who, now).map_err(|e| e.status())?;
        }
        timed("write", |r: &pb::WriteReply| r.ok, async {
            self.do_write(request.into_inner(), &peer).await
        })
        .await
    }

    async fn query(
        &self,
        request: tonic::Request<pb::QueryRequest>,
    ) -> Result<Response<pb::QueryReply>, Status> {
        timed("query", |_| true, self.do_query(request.into_inner())).await
    }

    async fn status(
        &self,
        _request: tonic::Request<pb::StatusRequest>,
    ) -> Result<Response<pb::StatusReply>, Status> {
        timed("status", |_| true, async { Ok(cluster::status(self)) }).await
    }

    async fn add_member(
        &self,
        request: tonic::Request<pb::AddMemberRequest>,
    ) -> Result<Response<pb::MemberReply>, Status> {
        timed(
            "add_member",
            |r: &pb::MemberReply| r.ok,
            cluster::add_member(self, request.into_inner()),
        )
        .await
    }

    async fn remove_member(
        &self,
        request: tonic::Request<pb::RemoveMemberRequest>,
    ) -> Result<Response<pb::MemberReply>, Status> {
        timed(
            "remove_member",
            |r: &pb::MemberReply| r.ok,
            cluster::remove_member(self, request.into_inner()),
        )
        .await
    }

    async fn admit(
        &self,
        request: tonic::Request<pb::AdmitRequest>,
    ) -> Result<Response<pb::AdmitReply>, Status> {
        timed(
            "admit",
            |_| true,
            cluster::admit(self, request.into_inner()),
        )
        .await
    }

    async fn reconfig(
        &self,
        request: tonic::Request<pb::ReconfigRequest>,
    ) -> Result<Response<pb::ReconfigReply>, Status> {
        let peer = aerie_security::layer::peer_of(&request);
        timed(
            "reconfig",
            |r: &pb::ReconfigReply| r.ok,
            reconfig::reconfig(self, &peer),
        )
        .await
    }

    async fn trigger_snapshot(
        &self,
        _request: tonic::Request<pb::SnapshotRequest>,
    ) -> Result<Response<pb::SnapshotReply>, Status> {
        cluster::snapshot_now(self)
            .await
            .map(Response::new)
            .map_err(Status::from)
    }
}

impl std::fmt::Debug for AdminService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AdminService(node {} at {})", self.id, self.addr)
    }
}

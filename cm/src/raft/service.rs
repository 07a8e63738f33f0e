//! Server side of the peer Raft RPCs: decode, hand to the local Raft, encode the `Result`.
use super::quick_election::Heard;
use super::store::ClusterId;
use super::{Raft, TypeConfig};
use aerie_proto::raft::{raft_server, RaftReply, RaftRequest};
use openraft::raft::{AppendEntriesRequest, InstallSnapshotRequest, VoteRequest};
use tonic::{Request, Response, Status};

/// The `Raft` gRPC service: peers' Raft RPCs handed to the local openraft.
pub struct RaftService {
    raft: Raft,
    cluster: ClusterId,
    /// When the last append-entries arrived, for [`super::quick_election`].
    heard: Heard,
    /// When a refusal was last logged (Unix seconds): a stranger's heartbeats arrive ten
    /// times a second, the log gets one line every ten seconds.
    last_refusal_logged: std::sync::Arc<std::sync::atomic::AtomicI64>,
}

impl RaftService {
    /// The service for `raft`, admitting only peers of `cluster`; it notes each
    /// append-entries in `heard`.
    pub fn new(raft: Raft, cluster: ClusterId, heard: Heard) -> Self {
        RaftService {
            raft,
            cluster,
            heard,
            last_refusal_logged: Default::default(),
        }
    }

    /// Decodes a request from a peer of this cluster; the refusal to send back otherwise.
    fn admit<T: serde::de::DeserializeOwned>(&self, req: &RaftRequest) -> Result<T, RaftReply> {
        if let Err(e) = self.cluster.check(&req.cluster_id) {
            use std::sync::atomic::Ordering;
            let now = crate::collector::service::unix_now();
            let last = self.last_refusal_logged.load(Ordering::Relaxed);
            if now - last >= 10
                && self
                    .last_refusal_logged
                    .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
            {
                tracing::warn!(error = %e, "Raft request from another cluster refused");
            }
            return Err(RaftReply {
                data: Vec::new(),
                error: e,
            });
        }
        decode(req)
    }

    /// The tonic server for this service.
    pub fn into_server(self) -> raft_server::RaftServer<Self> {
        raft_server::RaftServer::new(self)
            .max_decoding_message_size(aerie_security::transport::MAX_POOL_REPLY)
            .max_encoding_message_size(aerie_security::transport::MAX_POOL_REPLY)
    }
}

fn decode<T: serde::de::DeserializeOwned>(req: &RaftRequest) -> Result<T, RaftReply> {
    if req.version != super::network::PAYLOAD_VERSION {
        return Err(RaftReply {
            data: Vec::new(),
            error: format!(
                "unsupported Raft payload version {} (this CM speaks {})",
                req.version,
                super::network::PAYLOAD_VERSION
            ),
        });
    }
    serde_json::from_slice(&req.data).map_err(|e| RaftReply {
        data: Vec::new(),
        error: format!("cannot decode request: {e}"),
    })
}

fn encode<T: serde::Serialize>(v: &T) -> RaftReply {
    match serde_json::to_vec(v) {
        Ok(data) => RaftReply {
            data,
            error: String::new(),
        },
        Err(e) => RaftReply {
            data: Vec::new(),
            error: format!("cannot encode reply: {e}"),
        },
    }
}

#[tonic::async_trait]
impl raft_server::Raft for RaftService {
    async fn append_entries(
        &self,
        request: Request<RaftRequest>,
    ) -> Result<Response<RaftReply>, Status> {
        let arrived = std::time::Instant::now();
        let req: AppendEntriesRequest<TypeConfig> = match self.admit(request.get_ref()) {
            Ok(r) => r,
            Err(reply) => return Ok(Response::new(reply)),
        };
        let leader = req.vote.leader_id().voted_for();
        let res = self.raft.append_entries(req).await;
        // Only a leader this CM follows counts: a deposed one (a resumed CM still sending
        // its old term's heartbeats) is answered with the higher vote and is not heard.
        if let (Some(leader), Ok(r)) = (leader, &res) {
            if !matches!(r, openraft::raft::AppendEntriesResponse::HigherVote(_)) {
                self.heard.append_entries(leader, arrived);
            }
        }
        Ok(Response::new(encode(&res)))
    }

    async fn vote(&self, request: Request<RaftRequest>) -> Result<Response<RaftReply>, Status> {
        let req: VoteRequest<u64> = match self.admit(request.get_ref()) {
            Ok(r) => r,
            Err(reply) => return Ok(Response::new(reply)),
        };
        let res = self.raft.vote(req).await;
        Ok(Response::new(encode(&res)))
    }

    async fn install_snapshot(
        &self,
        request: Request<RaftRequest>,
    ) -> Result<Response<RaftReply>, Status> {
        let req: InstallSnapshotRequest<TypeConfig> = match self.admit(request.get_ref()) {
            Ok(r) => r,
            Err(reply) => return Ok(Response::new(reply)),
        };
        let res = self.raft.install_snapshot(req).await;
        Ok(Response::new(encode(&res)))
    }

    async fn contact(&self, request: Request<RaftRequest>) -> Result<Response<RaftReply>, Status> {
        if let Err(reply) = self.admit::<serde_json::Value>(request.get_ref()) {
            return Ok(Response::new(reply));
        }
        let m = self.raft.metrics().borrow().clone();
        Ok(Response::new(encode(
            &super::contact::ContactReply::from_metrics(&m),
        )))
    }
}

//! Client side of the peer Raft RPCs over gRPC, with a deadline on every call.
//!
//! Payloads are openraft's request and response types as JSON inside `aerie.raft` messages.
//! The factory also records, per peer, when the last RPC succeeded or why it failed
//! ([`PeerHealth`]), so the admin API can say "2 of 3 CMs unreachable: ..." instead of
//! just timing out.
use super::store::ClusterId;
use super::{Node, NodeId, TypeConfig};
use aerie_proto::raft::{raft_client::RaftClient, RaftReply, RaftRequest};
use aerie_security::Role;
use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tonic::transport::Channel;

/// Payload encoding version carried in `RaftRequest.version`.
pub const PAYLOAD_VERSION: u32 = 1;

/// The last thing we know about reaching one peer.
#[derive(Debug, Clone, Default)]
pub struct PeerStatus {
    /// The peer's address.
    pub addr: String,
    /// When an RPC to it last succeeded.
    pub last_ok: Option<Instant>,
    /// When one last failed, and why.
    pub last_err: Option<(Instant, String)>,
}

impl PeerStatus {
    /// Unreachable if the latest RPC outcome is an error.
    pub fn unreachable(&self) -> Option<&str> {
        match (&self.last_ok, &self.last_err) {
            (_, None) => None,
            (None, Some((_, e))) => Some(e),
            (Some(ok), Some((t, e))) if t > ok => Some(e),
            _ => None,
        }
    }
}

/// Shared per-peer reachability.
#[derive(Debug, Clone, Default)]
pub struct PeerHealth(Arc<Mutex<BTreeMap<NodeId, PeerStatus>>>);

impl PeerHealth {
    fn update(&self, id: NodeId, addr: &str, outcome: Result<(), String>) {
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let s = m.entry(id).or_default();
        s.addr = addr.to_string();
        match outcome {
            Ok(()) => s.last_ok = Some(Instant::now()),
            Err(e) => s.last_err = Some((Instant::now(), e)),
        }
    }

    /// What is known of peer `id`.
    pub fn get(&self, id: NodeId) -> Option<PeerStatus> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned()
    }
}

/// Creates one [`Connection`] per target; openraft calls it for each replication stream.
#[derive(Clone)]
pub struct Network {
    /// Where every RPC's outcome is recorded.
    pub health: PeerHealth,
    /// This CM's cluster id, sent with every request.
    pub cluster: ClusterId,
    /// Deadline of one append-entries or vote RPC.
    pub rpc_deadline: Duration,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Connection;

    async fn new_client(&mut self, target: NodeId, node: &Node) -> Connection {
        Connection {
            target,
            addr: node.addr.clone(),
            client: None,
            health: self.health.clone(),
            rpc_deadline: self.rpc_deadline,
            cluster: self.cluster.clone(),
        }
    }
}

/// A lazily connected gRPC client to one peer.
pub struct Connection {
    target: NodeId,
    addr: String,
    client: Option<RaftClient<Channel>>,
    health: PeerHealth,
    rpc_deadline: Duration,
    cluster: ClusterId,
}

/// Builds a channel to a server of `role` (mutual TLS with this CM's certificate, the
/// server's checked to hold `role`) that connects on first use and reconnects after failures.
pub fn lazy_channel(addr: &str, role: Role, connect_timeout: Duration) -> Result<Channel, String> {
    Ok(aerie_security::transport::endpoint(addr, role)
        .map_err(|e| e.to_string())?
        .connect_timeout(connect_timeout)
        .tcp_nodelay(true)
        .connect_lazy())
}

#[derive(Debug)]
struct Msg(String);
impl std::fmt::Display for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Msg {}

enum CallError {
    Unreachable(String),
    Network(String),
}

impl Connection {
    fn client(&mut self) -> Result<RaftClient<Channel>, CallError> {
        if self.client.is_none() {
            let ch = lazy_channel(&self.addr, Role::Cm, self.rpc_deadline)
                .map_err(CallError::Network)?;
            self.client = Some(
                RaftClient::new(ch)
                    .max_decoding_message_size(aerie_security::transport::MAX_POOL_REPLY),
            );
        }
        Ok(self.client.clone().expect("set above"))
    }

    /// One RPC: encode, call with a deadline, decode the peer's `Result`.
    async fn call<Req, Resp, E>(
        &mut self,
        what: &'static str,
        req: &Req,
        deadline: Duration,
    ) -> Result<Resp, RPCError<NodeId, Node, RaftError<NodeId, E>>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let res = self.call_raw::<Req, Resp, E>(what, req, deadline).await;
        let outcome = match &res {
            Ok(_) => Ok(()),
            Err(CallError::Unreachable(e)) | Err(CallError::Network(e)) => Err(e.clone()),
        };
        self.health.update(self.target, &self.addr, outcome);
        match res {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(remote)) => Err(RPCError::RemoteError(RemoteError::new(self.target, remote))),
            Err(CallError::Unreachable(e)) => {
                // Drop the channel so the next call reconnects from scratch.
                self.client = None;
                Err(RPCError::Unreachable(Unreachable::new(&Msg(e))))
            }
            Err(CallError::Network(e)) => Err(RPCError::Network(NetworkError::new(&Msg(e)))),
        }
    }

    async fn call_raw<Req, Resp, E>(
        &mut self,
        what: &'static str,
        req: &Req,
        deadline: Duration,
    ) -> Result<Result<Resp, RaftError<NodeId, E>>, CallError>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let data = serde_json::to_vec(req)
            .map_err(|e| CallError::Network(format!("encoding {what}: {e}")))?;
        let mut client = self.client()?;
        let mut request = tonic::Request::new(RaftRequest {
            version: PAYLOAD_VERSION,
            data,
            cluster_id: self.cluster.get().unwrap_or_default(),
        });
        request.set_timeout(deadline);
        let fut = async move {
            match what {
                "append" => client.append_entries(request).await,
                "vote" => client.vote(request).await,
                _ => client.install_snapshot(request).await,
            }
        };
        let reply: RaftReply = match tokio::time::timeout(deadline, fut).await {
            Err(_) => {
                return Err(CallError::Network(format!(
                    "{what} to {} timed out after {} ms",
                    self.addr,
                    deadline.as_millis()
                )))
            }
            Ok(Err(status)) => {
                let msg = format!("{what} to {}: {}", self.addr, status.message());
                return Err(match status.code() {
                    tonic::Code::Unavailable | tonic::Code::Unknown => CallError::Unreachable(msg),
                    _ => CallError::Network(msg),
                });
            }
            Ok(Ok(r)) => r.into_inner(),
        };
        if !reply.error.is_empty() {
            return Err(CallError::Network(format!(
                "{what} refused by {}: {}",
                self.addr, reply.error
            )));
        }
        serde_json::from_slice(&reply.data).map_err(|e| {
            CallError::Network(format!("decoding {what} reply from {}: {e}", self.addr))
        })
    }
}

impl RaftNetwork<TypeConfig> for Connection {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, Node, RaftError<NodeId>>> {
        let d = option
            .hard_ttl()
            .min(self.rpc_deadline.max(Duration::from_secs(1)));
        self.call("append", &rpc, d).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, Node, RaftError<NodeId, InstallSnapshotError>>,
    > {
        self.call("snapshot", &rpc, option.hard_ttl()).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, Node, RaftError<NodeId>>> {
        let d = option.hard_ttl().min(self.rpc_deadline);
        self.call("vote", &rpc, d).await
    }
}

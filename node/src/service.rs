//! The gRPC face of the simulator: `negotiation.AccessPoint` (the leader's requests and
//! grants) and `negotiation.Startd` (claims and releases), both on one server and both
//! thin wrappers over [`Sim`], so the in-process and remote paths are the same code.
use crate::sim::Sim;
use aerie_proto::negotiation::{self as pb, access_point_server, startd_server};
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// The gRPC handler for both services; cheap to clone (one `Arc`).
#[derive(Clone)]
pub struct NodeService {
    /// The simulator the calls act on.
    pub sim: Arc<Sim>,
}

impl NodeService {
    /// The `negotiation.AccessPoint` service, taking and sending whole-pool messages (a large
    /// pool's `GetRequests` reply carries every idle job ad, a cycle's grants every match).
    /// Only central managers may call it (the authorization layer refuses anyone else before
    /// a message is read), so the large limit is not a client's to exploit.
    pub fn access_point(&self) -> access_point_server::AccessPointServer<Self> {
        access_point_server::AccessPointServer::new(self.clone())
            .max_decoding_message_size(aerie_security::transport::MAX_POOL_REPLY)
            .max_encoding_message_size(aerie_security::transport::MAX_POOL_REPLY)
    }

    /// The `negotiation.Startd` service, with tonic's default limit of 4 MiB on a received
    /// message (a claim request carries one job ad).
    pub fn startd(&self) -> startd_server::StartdServer<Self> {
        startd_server::StartdServer::new(self.clone())
    }
}

#[tonic::async_trait]
impl access_point_server::AccessPoint for NodeService {
    async fn get_requests(
        &self,
        request: Request<pb::RequestsRequest>,
    ) -> Result<Response<pb::RequestsReply>, Status> {
        // Off the async threads: grouping 100,000 idle jobs takes a while.
        let sim = self.sim.clone();
        let req = request.into_inner();
        tokio::task::spawn_blocking(move || sim.requests(&req))
            .await
            .map(Response::new)
            .map_err(|e| Status::internal(e.to_string()))
    }

    async fn deliver_grants(
        &self,
        request: Request<pb::GrantBatch>,
    ) -> Result<Response<pb::GrantReply>, Status> {
        let batch = request.into_inner();
        tracing::debug!(
            term = batch.term,
            cycle = batch.cycle,
            leader = batch.leader_id,
            grants = batch.grants.len(),
            "grants delivered"
        );
        Ok(Response::new(self.sim.deliver(batch).await))
    }
}

#[tonic::async_trait]
impl startd_server::Startd for NodeService {
    async fn request_claim(
        &self,
        request: Request<pb::ClaimRequest>,
    ) -> Result<Response<pb::ClaimReply>, Status> {
        let presenter = aerie_security::layer::peer_of(&request);
        Ok(Response::new(
            self.sim.claim_from(&request.into_inner(), &presenter),
        ))
    }

    async fn release_claim(
        &self,
        request: Request<pb::ReleaseRequest>,
    ) -> Result<Response<pb::ReleaseReply>, Status> {
        Ok(Response::new(self.sim.release(&request.into_inner())))
    }
}

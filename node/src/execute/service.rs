//! The gRPC face of an execute node: `negotiation.Startd` (claims and releases, as the
//! simulator serves it) and `execute.Execute` (activation, keep-alives, deactivation, drains),
//! both thin wrappers over [`Node`] and its slot manager.
use super::metrics;
use super::run::{unix_now, Node};
use super::slots::ClaimAnswer;
use aerie_proto::execute::{self as xpb, execute_server};
use aerie_proto::negotiation::{self as npb, startd_server};
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// The gRPC handler for both services; cheap to clone (one `Arc`).
#[derive(Clone)]
pub struct ExecuteService {
    /// The node the calls act on.
    pub node: Arc<Node>,
}

impl ExecuteService {
    /// The `negotiation.Startd` service.
    pub fn startd(&self) -> startd_server::StartdServer<Self> {
        startd_server::StartdServer::new(self.clone())
    }

    /// The `execute.Execute` service, taking messages up to [`MAX_TRANSFER_MESSAGE`] (an
    /// activation carries the job's input files).
    pub fn execute(&self) -> execute_server::ExecuteServer<Self> {
        execute_server::ExecuteServer::new(self.clone())
            .max_decoding_message_size(MAX_TRANSFER_MESSAGE)
            .max_encoding_message_size(MAX_TRANSFER_MESSAGE)
    }
}

#[tonic::async_trait]
impl startd_server::Startd for ExecuteService {
    async fn request_claim(
        &self,
        request: Request<npb::ClaimRequest>,
    ) -> Result<Response<npb::ClaimReply>, Status> {
        let presenter = aerie_security::layer::peer_of(&request);
        let req = request.into_inner();
        let node = &self.node;
        let answer = node.with_mgr(
            |m| match m.request_claim_from(&req, &presenter, unix_now()) {
                ClaimAnswer::Now(r) => Ok(r),
                ClaimAnswer::Pending(token) => Err(node.wait_for_claim(&token)),
            },
        );
        let reply = match answer {
            Ok(r) => {
                metrics::claim(r.ok);
                r
            }
            Err(rx) => rx.await.unwrap_or_else(|_| npb::ClaimReply {
                ok: false,
                error: "the execute node stopped before the preemption ended".into(),
                ..Default::default()
            }),
        };
        Ok(Response::new(reply))
    }

    async fn release_claim(
        &self,
        request: Request<npb::ReleaseRequest>,
    ) -> Result<Response<npb::ReleaseReply>, Status> {
        let req = request.into_inner();
        let r = self
            .node
            .with_mgr(|m| m.release_claim(&req.slot, &req.claim_id, unix_now()));
        Ok(Response::new(npb::ReleaseReply {
            ok: r.is_ok(),
            error: r.err().unwrap_or_default(),
        }))
    }
}

#[tonic::async_trait]
impl execute_server::Execute for ExecuteService {
    async fn activate_claim(
        &self,
        request: Request<xpb::ActivateRequest>,
    ) -> Result<Response<xpb::ActivateReply>, Status> {
        Ok(Response::new(
            self.node.activate(request.into_inner()).await,
        ))
    }

    async fn keep_alive(
        &self,
        request: Request<xpb::KeepAliveRequest>,
    ) -> Result<Response<xpb::KeepAliveReply>, Status> {
        let req = request.into_inner();
        let at = std::time::Instant::now();
        let r = self
            .node
            .with_mgr(|m| m.keep_alive(&req.slot, &req.claim_id, unix_now()));
        if r.is_ok() {
            self.node.claim_renewed(&req.claim_id, at);
        }
        Ok(Response::new(match r {
            Ok(lease) => xpb::KeepAliveReply {
                ok: true,
                error: String::new(),
                lease_seconds: lease.clamp(0, u32::MAX as i64) as u32,
            },
            Err(error) => xpb::KeepAliveReply {
                ok: false,
                error,
                lease_seconds: 0,
            },
        }))
    }

    async fn deactivate_claim(
        &self,
        request: Request<xpb::DeactivateRequest>,
    ) -> Result<Response<xpb::DeactivateReply>, Status> {
        let req = request.into_inner();
        let r = self
            .node
            .with_mgr(|m| m.deactivate(&req.slot, &req.claim_id, req.fast, unix_now()));
        Ok(Response::new(xpb::DeactivateReply {
            ok: r.is_ok(),
            error: r.err().unwrap_or_default(),
        }))
    }

    async fn drain(
        &self,
        request: Request<xpb::DrainRequest>,
    ) -> Result<Response<xpb::DrainReply>, Status> {
        let req = request.into_inner();
        let r = self.node.with_mgr(|m| m.drain(&req, unix_now()));
        Ok(Response::new(match r {
            Ok(id) => xpb::DrainReply {
                ok: true,
                error: String::new(),
                request_id: id,
            },
            Err(error) => xpb::DrainReply {
                ok: false,
                error,
                request_id: String::new(),
            },
        }))
    }

    async fn cancel_drain(
        &self,
        request: Request<xpb::CancelDrainRequest>,
    ) -> Result<Response<xpb::CancelDrainReply>, Status> {
        let req = request.into_inner();
        let r = self
            .node
            .with_mgr(|m| m.cancel_drain(&req.request_id, unix_now()));
        Ok(Response::new(xpb::CancelDrainReply {
            ok: r.is_ok(),
            error: r.err().unwrap_or_default(),
        }))
    }
}

/// The largest message carrying a job's files in one piece (an activation's input files, a
/// job event's output files): 64 MiB. File transfer is not streamed yet, so this is above
/// the [`aerie_security::transport::MAX_MESSAGE`] of every other service; sandboxes larger
/// than this are refused with tonic's "message length too large" naming both sizes.
pub const MAX_TRANSFER_MESSAGE: usize = 64 << 20;

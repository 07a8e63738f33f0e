//! The access point's gRPC services, thin: `Schedd` for users on the Unix socket (the caller
//! is the socket peer's Unix account, from SO_PEERCRED, never anything in the request) and on
//! TCP with mutual TLS (the caller is the token or certificate the authorization layer
//! checked, [`super::who`]), `AccessPoint` for the leader and `Shadow` for the execute nodes
//! on TCP.
use super::daemon::{who_is, Schedd, SubmitError};
use super::queue::{ActSpec, Action, Who};
use super::who::who_of;
use aerie_proto::execute as ex;
use aerie_proto::negotiation as pb;
use aerie_proto::schedd as sc;
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// The `Schedd` service (users' queue commands).
pub struct ScheddService(pub Arc<Schedd>);

/// The `AccessPoint` service (the leader's requests and grants).
pub struct AccessPointService(pub Arc<Schedd>);

/// The `Shadow` service (execute nodes' job events).
pub struct ShadowService(pub Arc<Schedd>);

impl ScheddService {
    /// Who is calling: on the Unix socket the peer's account (SO_PEERCRED); over TCP the
    /// caller the authorization layer authenticated (a token or a certificate), as a job
    /// owner ([`who_of`]).
    // The handlers answer with a tonic Status; boxing it here would only move the unboxing.
    #[allow(clippy::result_large_err)]
    fn caller<T>(&self, req: &Request<T>) -> Result<Who, Status> {
        if let Some(info) = req
            .extensions()
            .get::<tonic::transport::server::UdsConnectInfo>()
        {
            let uid = info.peer_cred.map(|c| c.uid()).ok_or_else(|| {
                Status::unauthenticated("the local socket did not give the caller's credentials")
            })?;
            return who_is(uid, &self.0.settings.super_users).map_err(Status::permission_denied);
        }
        let peer = aerie_security::layer::peer_of(req);
        who_of(&peer.caller, &self.0.settings.super_users).map_err(Status::permission_denied)
    }

    /// A reader of the queue: on the Unix socket a known account; over TCP whoever the layer
    /// let through at `READ` (the queue is readable by the pool, as HTCondor's `condor_q`).
    #[allow(clippy::result_large_err)]
    fn reader<T>(&self, req: &Request<T>) -> Result<(), Status> {
        match req
            .extensions()
            .get::<tonic::transport::server::UdsConnectInfo>()
        {
            Some(_) => self.caller(req).map(|_| ()),
            None => Ok(()),
        }
    }
}

/// schedd.proto's action as the queue's.
pub fn action(a: sc::Action) -> Action {
    match a {
        sc::Action::Remove => Action::Remove,
        sc::Action::Hold => Action::Hold,
        sc::Action::Release => Action::Release,
        sc::Action::Vacate => Action::Vacate,
        sc::Action::SetPrio => Action::SetPrio,
        sc::Action::Edit => Action::Edit,
        sc::Action::Forget => Action::Forget,
    }
}

#[tonic::async_trait]
impl sc::schedd_server::Schedd for ScheddService {
    async fn new_cluster(
        &self,
        req: Request<sc::NewClusterRequest>,
    ) -> Result<Response<sc::NewClusterReply>, Status> {
        let who = self.caller(&req)?;
        let s = self.0.clone();
        let cluster = tokio::task::spawn_blocking(move || s.new_cluster(&who))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(|e| Status::unavailable(format!("{e:#}")))?;
        Ok(Response::new(sc::NewClusterReply { cluster }))
    }

    async fn submit(
        &self,
        req: Request<sc::SubmitRequest>,
    ) -> Result<Response<sc::SubmitReply>, Status> {
        let who = self.caller(&req)?;
        let r = req.into_inner();
        let s = self.0.clone();
        let cluster = r.cluster;
        let count = tokio::task::spawn_blocking(move || s.submit(&who, r.cluster, &r.ads))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(|e| match e {
                SubmitError::Refused(m) => Status::invalid_argument(m),
                SubmitError::Storage(e) => Status::unavailable(format!("{e:#}")),
            })?;
        Ok(Response::new(sc::SubmitReply { cluster, count }))
    }

    async fn query(
        &self,
        req: Request<sc::QueryRequest>,
    ) -> Result<Response<sc::QueryReply>, Status> {
        self.reader(&req)?;
        let r = req.into_inner();
        let s = self.0.clone();
        let reply = tokio::task::spawn_blocking(move || s.query(&r))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(Status::invalid_argument)?;
        Ok(Response::new(reply))
    }

    async fn act(&self, req: Request<sc::ActRequest>) -> Result<Response<sc::ActReply>, Status> {
        let who = self.caller(&req)?;
        let r = req.into_inner();
        let constraint = if r.constraint.trim().is_empty() {
            None
        } else {
            Some(classad::parse_expr(&r.constraint).map_err(|e| {
                Status::invalid_argument(format!("constraint {:?}: {e}", r.constraint))
            })?)
        };
        let spec = ActSpec {
            action: action(r.action()),
            targets: r.targets,
            constraint,
            reason: r.reason,
            attribute: r.attribute,
            value: r.value,
        };
        let s = self.0.clone();
        let out = tokio::task::spawn_blocking(move || s.act(&who, &spec))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(|e| Status::unavailable(format!("{e:#}")))?;
        if !out.stop.is_empty() {
            let s = self.0.clone();
            let (stop, fast) = (out.stop.clone(), r.fast);
            tokio::spawn(async move { s.stop(stop, fast).await });
        }
        Ok(Response::new(sc::ActReply {
            matched: out.matched,
            changed: out.changed,
            errors: out.errors,
        }))
    }
}

#[tonic::async_trait]
impl pb::access_point_server::AccessPoint for AccessPointService {
    async fn get_requests(
        &self,
        req: Request<pb::RequestsRequest>,
    ) -> Result<Response<pb::RequestsReply>, Status> {
        let r = req.into_inner();
        if r.resource_requests {
            let s = self.0.clone();
            let names = r.significant_attributes;
            let requests = tokio::task::spawn_blocking(move || s.resource_requests(&names))
                .await
                .map_err(|e| Status::internal(e.to_string()))?;
            tracing::debug!(term = r.term, cycle = r.cycle, negotiator = %r.negotiator, requests = requests.len(), idle = requests.iter().map(|q| q.count).sum::<u64>(), "resource requests");
            return Ok(Response::new(pb::RequestsReply {
                jobs: Vec::new(),
                requests,
            }));
        }
        let jobs = self.0.requests();
        tracing::debug!(term = r.term, cycle = r.cycle, negotiator = %r.negotiator, idle = jobs.len(), "requests");
        Ok(Response::new(pb::RequestsReply {
            jobs,
            requests: Vec::new(),
        }))
    }

    async fn deliver_grants(
        &self,
        req: Request<pb::GrantBatch>,
    ) -> Result<Response<pb::GrantReply>, Status> {
        Ok(Response::new(self.0.deliver(req.into_inner())))
    }
}

#[tonic::async_trait]
impl ex::shadow_server::Shadow for ShadowService {
    async fn job_event(
        &self,
        req: Request<ex::JobEventRequest>,
    ) -> Result<Response<ex::JobEventReply>, Status> {
        let s = self.0.clone();
        // Its own task: a dropped call never leaves an event half-recorded.
        let reply = tokio::spawn(async move { s.job_event(req.into_inner()).await })
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(reply))
    }
}

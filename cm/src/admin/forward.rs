//! The one path by which an admin request reaches the leader: writes, linearizable reads and
//! membership changes all run on the leader, and a follower that receives one forwards it.
//!
//! A request is forwarded at most once (it carries `forwarded = true` on the way): a forwarded
//! request that reaches a CM which is not the leader (leadership moved meanwhile) is answered
//! with a redirect naming the leader, which `cmctl` follows, instead of bouncing between CMs.
//! When this CM leads but is deposed while running the request (openraft's
//! `ForwardToLeader`), the request goes round again and follows the new leader, until the
//! request's deadline. A forwarded call is abandoned as soon as this CM sees its leader
//! replaced (found by the jepsen `mixed` scenario, seed 8: an add forwarded to a paused leader
//! waited out its 65 s deadline although a new leader was elected 2 s later).
use super::error::AdminError;
use super::AdminService;
use crate::raft::leadership::Leader;
use aerie_core::admin::{ErrorKind, LeaderInfo, ERROR_KIND_METADATA};
use aerie_proto::admin::admin_client::AdminClient;
use std::future::Future;
use std::time::{Duration, Instant};
use tonic::transport::Channel;

/// How a request ran on this CM, when this CM led.
pub enum Local<T> {
    /// It ran: the answer.
    Done(T),
    /// This CM stopped leading while it ran: route it again.
    Deposed,
}

/// How to route one kind of request.
pub struct Route<'a> {
    /// What the request is, for messages ("write", "linearizable read", "cluster add").
    pub what: &'a str,
    /// Whether it was already forwarded once.
    pub forwarded: bool,
    /// When to give up waiting for a leader or a quorum.
    pub deadline: Instant,
    /// The deadline of the forwarded call (membership changes take longer than writes).
    pub forward_timeout: Duration,
}

impl AdminService {
    /// Runs a request on the leader: `local` here if this CM leads, else `remote` on the leader
    /// through a client connected to it, or `redirect` when the request was already forwarded.
    pub(super) async fn on_leader<T, L, LF, R, RF>(
        &self,
        route: Route<'_>,
        local: L,
        remote: R,
        redirect: impl Fn(LeaderInfo) -> Result<T, AdminError>,
    ) -> Result<T, AdminError>
    where
        L: Fn() -> LF,
        LF: Future<Output = Result<Local<T>, AdminError>>,
        R: FnOnce(AdminClient<Channel>, Duration) -> RF,
        RF: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        loop {
            match self.leadership.wait_leader_known(route.deadline).await {
                None => return Err(self.no_quorum("no leader elected")),
                Some(Leader::Other(leader)) => {
                    if route.forwarded {
                        return redirect(leader);
                    }
                    let ch = crate::raft::network::lazy_channel(
                        &leader.addr,
                        aerie_security::Role::Cm,
                        Duration::from_secs(1),
                    )
                    .map_err(AdminError::Failed)?;
                    let client = AdminClient::new(ch)
                        .max_decoding_message_size(aerie_security::transport::MAX_POOL_REPLY);
                    // A leader replaced while the call waits (paused, cut off) will not answer
                    // before the call's own deadline (a minute for membership changes): give
                    // up when this CM sees it replaced. Its outcome is unknown (it may have
                    // reached a quorum before), so the client hears that, not a refusal.
                    let answer = tokio::select! {
                        r = remote(client, route.forward_timeout) => r,
                        () = self.leadership.until_leader_is_not(leader.id) => {
                            return Err(AdminError::LeaderUnavailable(format!(
                                "this CM (node {}) forwarded the {} to the leader, node {} at {}, \
                                 which was replaced before it answered; the {} may or may not \
                                 have been applied: check, then retry",
                                self.id, route.what, leader.id, leader.addr, route.what
                            )));
                        }
                    };
                    return match answer {
                        Ok(r) => Ok(r.into_inner()),
                        // The leader answered: its answer stands, whatever its kind.
                        Err(s) if s.metadata().contains_key(ERROR_KIND_METADATA) => {
                            Err(from_status(s))
                        }
                        Err(s) => Err(AdminError::LeaderUnavailable(format!(
                            "this CM (node {}) is not the leader; forwarding the {} to the leader, \
                             node {} at {}, failed: {}",
                            self.id,
                            route.what,
                            leader.id,
                            leader.addr,
                            s.message()
                        ))),
                    };
                }
                Some(Leader::Me) => match local().await? {
                    Local::Done(v) => return Ok(v),
                    Local::Deposed => {
                        if Instant::now() >= route.deadline {
                            return Err(self.no_quorum("no leader"));
                        }
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                },
            }
        }
    }
}

/// The error a leader answered a forwarded request with, passed on unchanged.
fn from_status(s: tonic::Status) -> AdminError {
    let kind = s
        .metadata()
        .get(ERROR_KIND_METADATA)
        .and_then(|v| v.to_str().ok())
        .and_then(ErrorKind::parse);
    let m = s.message().to_string();
    match kind {
        Some(ErrorKind::NoQuorum) => AdminError::NoQuorum(m),
        Some(ErrorKind::BadRequest) => AdminError::BadRequest(m),
        Some(ErrorKind::LeaderUnavailable) => AdminError::LeaderUnavailable(m),
        Some(ErrorKind::Failed) | None => AdminError::Failed(m),
    }
}

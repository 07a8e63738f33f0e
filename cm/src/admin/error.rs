//! What can go wrong with an admin request, and the one place it becomes a gRPC status.
//!
//! The status code says what a generic gRPC client needs to know; the [`ErrorKind`] in the
//! `aerie-error-kind` metadata says what `cmctl` needs: "no quorum" means the cluster has
//! spoken (asking another CM gives the same answer), whereas a transport failure means "try
//! the next CM". Neither side reads the other's message text to decide.
use super::AdminService;
use crate::raft::NodeId;
use aerie_core::admin::{ErrorKind, ERROR_KIND_METADATA};
use tonic::Status;

/// Why an admin request failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AdminError {
    /// No leader, or no quorum within the deadline; the message names the unreachable peers.
    #[error("{0}")]
    NoQuorum(String),
    /// The request is wrong (bad command encoding, unknown member, bad address).
    #[error("{0}")]
    BadRequest(String),
    /// Forwarding to the leader failed (it is down, or an election is under way).
    #[error("{0}")]
    LeaderUnavailable(String),
    /// Anything else (forwarding to the leader failed, Raft failed).
    #[error("{0}")]
    Failed(String),
    /// The caller may not send this command (an internal one, from outside the CMs).
    #[error("{0}")]
    Denied(String),
}

impl AdminError {
    /// The kind a client acts on.
    pub fn kind(&self) -> ErrorKind {
        match self {
            AdminError::NoQuorum(_) => ErrorKind::NoQuorum,
            AdminError::BadRequest(_) | AdminError::Denied(_) => ErrorKind::BadRequest,
            AdminError::LeaderUnavailable(_) => ErrorKind::LeaderUnavailable,
            AdminError::Failed(_) => ErrorKind::Failed,
        }
    }
}

impl From<AdminError> for Status {
    fn from(e: AdminError) -> Status {
        let kind = e.kind();
        let mut s = match &e {
            AdminError::NoQuorum(m) => Status::unavailable(m.clone()),
            AdminError::BadRequest(m) => Status::invalid_argument(m.clone()),
            AdminError::LeaderUnavailable(m) => Status::unavailable(m.clone()),
            AdminError::Failed(m) => Status::failed_precondition(m.clone()),
            AdminError::Denied(m) => Status::permission_denied(m.clone()),
        };
        s.metadata_mut().insert(
            ERROR_KIND_METADATA,
            tonic::metadata::MetadataValue::from_static(kind.as_str()),
        );
        s
    }
}

impl AdminService {
    /// "no quorum: 2 of 3 CMs unreachable: node 2 (addr): error; ..." from what the Raft
    /// network layer last saw of each voter, or, when every peer answers, that no majority
    /// agreed within the deadline.
    pub fn no_quorum(&self, what: &str) -> AdminError {
        let m = self.leadership.metrics();
        let membership = m.membership_config.membership().clone();
        let voters: Vec<NodeId> = membership.voter_ids().collect();
        let mut down = Vec::new();
        for id in voters.iter().filter(|id| **id != self.id) {
            let addr = crate::raft::leadership::node_addr(&m, *id);
            match self.health.get(*id) {
                Some(s) => {
                    if let Some(e) = s.unreachable() {
                        down.push(format!("node {id} ({addr}): {e}"));
                    }
                }
                None => down.push(format!("node {id} ({addr}): never answered")),
            }
        }
        AdminError::NoQuorum(if down.is_empty() {
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
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_carries_its_kind_and_code() {
        for (e, code, kind) in [
            (
                AdminError::NoQuorum("no quorum: x".into()),
                tonic::Code::Unavailable,
                ErrorKind::NoQuorum,
            ),
            (
                AdminError::BadRequest("bad command".into()),
                tonic::Code::InvalidArgument,
                ErrorKind::BadRequest,
            ),
            (
                AdminError::LeaderUnavailable("leader gone".into()),
                tonic::Code::Unavailable,
                ErrorKind::LeaderUnavailable,
            ),
            (
                AdminError::Failed("forward failed".into()),
                tonic::Code::FailedPrecondition,
                ErrorKind::Failed,
            ),
        ] {
            let s = Status::from(e.clone());
            assert_eq!(s.code(), code);
            assert_eq!(s.message(), e.to_string());
            let got = s
                .metadata()
                .get(ERROR_KIND_METADATA)
                .and_then(|v| v.to_str().ok())
                .and_then(ErrorKind::parse);
            assert_eq!(got, Some(kind));
        }
    }
}

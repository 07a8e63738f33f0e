//! The one way anything in a CM writes to the replicated state: [`propose`] a command, with a
//! deadline, and get a typed answer.
//!
//! openraft's `client_write` waits for ever when there is no quorum, and its error type names
//! openraft's generics; every caller (the admin API, the leader's tick and cycle record, the
//! absent-ad commits, the accountant parameters) needs the same three cases instead: it was
//! committed (and applied: here is what the state machine answered), this CM is not the
//! leader (here is who is, if known), or nothing was learnt in time.
use super::{ClientWriteError, NodeId, Raft, RaftError};
use aerie_core::state::{Command, CommandResponse, Request};
use openraft::error::ForwardToLeader;
use std::time::Duration;

/// A committed and applied command.
#[derive(Debug, Clone)]
pub struct Committed {
    /// What the state machine answered (a refused command is committed too, `ok = false`).
    pub response: CommandResponse,
    /// The log index it was committed at.
    pub log_index: u64,
}

/// Why a proposal did not commit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProposeError {
    /// This CM is not (or no longer) the leader; `leader` is the one it knows of.
    #[error("not the leader")]
    NotLeader {
        /// The leader this CM knows, if any.
        leader: Option<NodeId>,
    },
    /// No commit within the deadline: no quorum, most likely. The entry may still commit
    /// later if the quorum comes back before another leader takes over.
    #[error("not committed within {0:?} (no quorum?)")]
    Timeout(Duration),
    /// Raft itself failed (shut down, storage error).
    #[error("Raft failed: {0}")]
    Fatal(String),
}

/// Proposes `cmd` and waits at most `deadline` for it to be committed and applied.
pub async fn propose(
    raft: &Raft,
    cmd: Command,
    deadline: Duration,
) -> Result<Committed, ProposeError> {
    propose_request(raft, Request::new(cmd), deadline).await
}

/// Like [`propose`], for a request that already carries its version (the admin API passes
/// on what the client encoded).
pub async fn propose_request(
    raft: &Raft,
    request: Request,
    deadline: Duration,
) -> Result<Committed, ProposeError> {
    let started = std::time::Instant::now();
    let result = match tokio::time::timeout(deadline, raft.client_write(request)).await {
        Err(_) => Err(ProposeError::Timeout(deadline)),
        Ok(Ok(r)) => Ok(Committed {
            log_index: r.log_id.index,
            response: r.data,
        }),
        Ok(Err(RaftError::APIError(ClientWriteError::ForwardToLeader(ForwardToLeader {
            leader_id,
            ..
        })))) => Err(ProposeError::NotLeader { leader: leader_id }),
        Ok(Err(e)) => Err(ProposeError::Fatal(e.to_string())),
    };
    let outcome = match &result {
        Ok(_) => "ok",
        Err(ProposeError::NotLeader { .. }) => "not_leader",
        Err(ProposeError::Timeout(_)) => "timeout",
        Err(ProposeError::Fatal(_)) => "fatal",
    };
    crate::metrics::record_proposal(outcome, started.elapsed());
    result
}

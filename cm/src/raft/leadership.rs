//! The one way a CM asks "who leads?": whether it leads a term, waiting until it does,
//! confirming it with a quorum, and where the leader is when it does not.
//!
//! Everything reads openraft's metrics channel, which the Raft core updates on every change
//! of term, leader or membership, so waiting costs nothing until something changes. Leading
//! is always judged per term: a CM that lost and regained leadership is a new leader (its
//! earlier cycle numbers, timers and counters do not carry over), and a task started for term
//! `t` stops once [`Leadership::leads`]`(t)` turns false.
use super::{Metrics, NodeId, Raft};
use aerie_core::admin::LeaderInfo;
use std::time::{Duration, Instant};

/// The pause between two rounds of a leadership confirmation a quorum did not answer.
const CONFIRM_RETRY: Duration = Duration::from_millis(10);

/// This CM's view of the Raft leadership.
#[derive(Clone)]
pub struct Leadership {
    raft: Raft,
    id: NodeId,
}

/// Who leads, as far as this CM knows.
#[derive(Debug, Clone, PartialEq)]
pub enum Leader {
    /// This CM.
    Me,
    /// Another CM, at this address.
    Other(LeaderInfo),
}

/// Why leadership could not be confirmed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfirmError {
    /// Another CM leads (or an election is under way).
    #[error("not the leader")]
    NotLeader,
    /// No quorum answered within the deadline.
    #[error("leadership not confirmed by a quorum within {0:?}")]
    Timeout(Duration),
}

impl Leadership {
    /// The leadership view of node `id` of `raft`.
    pub fn new(raft: Raft, id: NodeId) -> Self {
        Leadership { raft, id }
    }

    /// This CM's Raft node id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The Raft handle (for proposals).
    pub fn raft(&self) -> &Raft {
        &self.raft
    }

    /// openraft's latest metrics.
    pub fn metrics(&self) -> Metrics {
        self.raft.metrics().borrow().clone()
    }

    /// The term this CM leads, if it believes it leads one.
    pub fn led_term(&self) -> Option<u64> {
        let rx = self.raft.metrics();
        let m = rx.borrow();
        (m.current_leader == Some(self.id)).then_some(m.current_term)
    }

    /// Whether this CM still leads `term`.
    pub fn leads(&self, term: u64) -> bool {
        self.led_term() == Some(term)
    }

    /// Waits until this CM leads a term and returns it; `None` once Raft has shut down.
    pub async fn wait_to_lead(&self) -> Option<u64> {
        let mut rx = self.raft.metrics();
        loop {
            if let Some(term) = {
                let m = rx.borrow_and_update();
                (m.current_leader == Some(self.id)).then_some(m.current_term)
            } {
                return Some(term);
            }
            rx.changed().await.ok()?;
        }
    }

    /// Waits until this CM no longer leads `term` (or Raft has shut down).
    pub async fn wait_deposed(&self, term: u64) {
        let mut rx = self.raft.metrics();
        loop {
            {
                let m = rx.borrow_and_update();
                if m.current_leader != Some(self.id) || m.current_term != term {
                    return;
                }
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    /// Confirms with a quorum that this CM leads, and waits until it has applied everything
    /// committed before (openraft's `ensure_linearizable`): after this, reads of the local
    /// state are linearizable and a new leader's state holds every earlier term's commits.
    ///
    /// openraft gives each voter one heartbeat interval to answer the confirmation; a round
    /// in which too few did (a follower busy for a tenth of a second, as one is while a dead
    /// CM's nodes move their ad streams to it) is tried again until `deadline`, rather than
    /// taken for a lost leadership: that cost a new leader its first cycle (the failover
    /// bench, 2026-11-27).
    pub async fn confirm(&self, deadline: Duration) -> Result<(), ConfirmError> {
        let give_up = Instant::now() + deadline;
        loop {
            let left = give_up.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.raft.ensure_linearizable()).await {
                Err(_) => return Err(ConfirmError::Timeout(deadline)),
                Ok(Ok(_)) => return Ok(()),
                Ok(Err(openraft::error::RaftError::APIError(
                    openraft::error::CheckIsLeaderError::QuorumNotEnough(q),
                ))) => {
                    tracing::debug!(error = %q, "leadership not confirmed by a quorum in this round; trying again");
                    if Instant::now() + CONFIRM_RETRY >= give_up {
                        return Err(ConfirmError::Timeout(deadline));
                    }
                    tokio::time::sleep(CONFIRM_RETRY).await;
                }
                Ok(Err(_)) => return Err(ConfirmError::NotLeader),
            }
        }
    }

    /// [`Leadership::confirm`], and the end of the lease it gives: a quorum answered a
    /// heartbeat sent after `start`, and those voters elect nobody else for at least the
    /// shortest election timeout after hearing it, so no other CM leads before
    /// `start + lease`. Work that must not be done by a deposed leader (delivering grants) is
    /// bounded by the returned instant.
    pub async fn confirm_lease(
        &self,
        deadline: Duration,
        lease: Duration,
    ) -> Result<Instant, ConfirmError> {
        let start = Instant::now();
        self.confirm(deadline).await?;
        Ok(start + lease)
    }

    /// The leader this CM knows of, with its address from the membership.
    pub fn leader(&self) -> Option<LeaderInfo> {
        let m = self.metrics();
        let id = m.current_leader?;
        Some(LeaderInfo {
            id,
            addr: node_addr(&m, id),
        })
    }

    /// Returns once this CM no longer takes node `id` for the leader (an election began, or
    /// another leader is known). Never returns while `id` stays the leader.
    pub async fn until_leader_is_not(&self, id: u64) {
        let mut rx = self.raft.metrics();
        loop {
            if rx.borrow_and_update().current_leader != Some(id) {
                return;
            }
            if rx.changed().await.is_err() {
                // The Raft core is gone: nothing will change any more.
                return std::future::pending().await;
            }
        }
    }

    /// Waits until some leader is known, at most until `deadline`; `None` when none is.
    pub async fn wait_leader_known(&self, deadline: Instant) -> Option<Leader> {
        let mut rx = self.raft.metrics();
        loop {
            let leader = rx.borrow_and_update().current_leader;
            match leader {
                Some(l) if l == self.id => return Some(Leader::Me),
                Some(_) => {
                    if let Some(info) = self.leader() {
                        return Some(Leader::Other(info));
                    }
                }
                None => {}
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            if let Ok(Err(_)) = tokio::time::timeout(left, rx.changed()).await {
                return None;
            }
        }
    }
}

/// The membership's address of node `id` (empty when the membership does not list it).
pub fn node_addr(m: &Metrics, id: NodeId) -> String {
    m.membership_config
        .membership()
        .get_node(&id)
        .map(|n| n.addr.clone())
        .unwrap_or_default()
}

//! Whether this CM is in touch with a leader that holds a quorum, and for how long it has not
//! been: what a CM's collector needs to know to let its nodes go when it is cut off.
//!
//! Why: execute nodes and access points stream their ads to one CM and move to another only
//! when that stream fails. A CM cut off on the minority side of a partition keeps its streams
//! open, so its nodes' ads never reach the majority, whose leader then marks those live
//! slots absent. HTCondor has the same weakness with a standby collector that lost its
//! network to the rest; Aerie's collector closes its streams once it has been out of touch
//! for a bound, and the nodes fail over to a CM of the majority (issue 13.11).
//!
//! "In touch" is judged the same way on every CM:
//! * a leader is in touch while a quorum acknowledged it recently (openraft's
//!   `millis_since_quorum_ack`, which heartbeats keep fresh);
//! * a follower asks the leader it knows (the `Raft.Contact` RPC, which carries the cluster
//!   id as every peer message does) and is in touch while that leader answers and is itself
//!   in touch: a follower on the minority side with a deposed leader is cut off too.
//!
//! The judgement ([`in_touch`]) is pure; the task around it only reads metrics, asks the
//! leader and publishes the result on a watch channel.
use super::leadership::Leadership;
use super::network::{lazy_channel, PAYLOAD_VERSION};
use super::store::ClusterId;
use super::Metrics;
use aerie_proto::raft::{raft_client::RaftClient, RaftRequest};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How often a CM checks its contact.
pub const PROBE_INTERVAL: Duration = Duration::from_millis(500);

/// A leader's answer to `Raft.Contact`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ContactReply {
    /// The answering CM leads.
    pub leads: bool,
    /// Its current term.
    pub term: u64,
    /// Milliseconds since a quorum last acknowledged it (leaders only).
    pub quorum_ack_ms: Option<u64>,
}

impl ContactReply {
    /// What this CM answers, from its own metrics.
    pub fn from_metrics(m: &Metrics) -> ContactReply {
        let leads = m.current_leader == Some(m.id);
        ContactReply {
            leads,
            term: m.current_term,
            quorum_ack_ms: if leads {
                m.millis_since_quorum_ack
            } else {
                None
            },
        }
    }
}

/// What one probe saw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reading {
    /// This CM leads; a quorum acknowledged it this long ago (None: never).
    Leading(Option<u64>),
    /// The leader this CM knows answered.
    Follower(ContactReply),
    /// No leader is known, or the known one did not answer.
    NoLeader,
}

/// Whether a reading shows a leader that a quorum acknowledged within `fresh`.
pub fn in_touch(r: Reading, fresh: Duration) -> bool {
    let fresh_ms = u64::try_from(fresh.as_millis()).unwrap_or(u64::MAX);
    match r {
        Reading::Leading(ack) => ack.is_some_and(|ms| ms <= fresh_ms),
        Reading::Follower(reply) => {
            reply.leads && reply.quorum_ack_ms.is_some_and(|ms| ms <= fresh_ms)
        }
        Reading::NoLeader => false,
    }
}

/// The published contact: `true` once this CM has been out of touch for longer than its bound.
pub type CutOff = watch::Receiver<bool>;

/// Checks this CM's contact every [`PROBE_INTERVAL`] and publishes whether it has been out of
/// touch for longer than `bound` (counted from the start, so a CM that never finds a leader
/// is cut off after `bound` too). `fresh` is how old a quorum's acknowledgement may be.
pub fn spawn(
    leadership: Leadership,
    cluster: ClusterId,
    fresh: Duration,
    bound: Duration,
) -> (CutOff, tokio::task::JoinHandle<()>) {
    let (tx, rx) = watch::channel(false);
    let task = tokio::spawn(async move {
        let mut last_ok = Instant::now();
        let mut prober = Prober::default();
        let mut tick = tokio::time::interval(PROBE_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let reading = prober.read(&leadership, &cluster).await;
            if in_touch(reading, fresh) {
                last_ok = Instant::now();
            }
            let out = last_ok.elapsed();
            let cut = out > bound;
            metrics::gauge!("aerie_collector_cut_off").set(if cut { 1.0 } else { 0.0 });
            tx.send_if_modified(|was| {
                if *was == cut {
                    return false;
                }
                if cut {
                    tracing::warn!(out_of_touch_s = out.as_secs(), bound_s = bound.as_secs(), reading = ?reading,
                        "no leader with a quorum in touch with this CM; closing the ad streams so nodes move to a CM of the majority");
                } else {
                    tracing::info!(reading = ?reading, "in touch with a leader again; taking ad streams");
                }
                *was = cut;
                true
            });
        }
    });
    (rx, task)
}

/// Asks the leader; keeps a client to it while it stays the same.
#[derive(Default)]
struct Prober {
    client: Option<(String, RaftClient<tonic::transport::Channel>)>,
}

impl Prober {
    async fn read(&mut self, leadership: &Leadership, cluster: &ClusterId) -> Reading {
        let m = leadership.metrics();
        if m.current_leader == Some(m.id) {
            return Reading::Leading(m.millis_since_quorum_ack);
        }
        let Some(leader) = leadership.leader() else {
            return Reading::NoLeader;
        };
        match self.ask(&leader.addr, cluster).await {
            Ok(reply) => Reading::Follower(reply),
            Err(e) => {
                tracing::debug!(leader = leader.id, addr = %leader.addr, error = %e, "leader did not answer a contact probe");
                self.client = None;
                Reading::NoLeader
            }
        }
    }

    async fn ask(&mut self, addr: &str, cluster: &ClusterId) -> Result<ContactReply, String> {
        if self.client.as_ref().is_none_or(|(a, _)| a != addr) {
            let ch = lazy_channel(addr, aerie_security::Role::Cm, PROBE_INTERVAL)?;
            self.client = Some((addr.to_string(), RaftClient::new(ch)));
        }
        let (_, client) = self.client.as_mut().expect("set above");
        let mut req = tonic::Request::new(RaftRequest {
            version: PAYLOAD_VERSION,
            data: b"{}".to_vec(),
            cluster_id: cluster.get().unwrap_or_default(),
        });
        req.set_timeout(PROBE_INTERVAL);
        let reply = tokio::time::timeout(PROBE_INTERVAL, client.contact(req))
            .await
            .map_err(|_| "timed out".to_string())?
            .map_err(|s| s.message().to_string())?
            .into_inner();
        if !reply.error.is_empty() {
            return Err(reply.error);
        }
        serde_json::from_slice(&reply.data).map_err(|e| format!("cannot decode the answer: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRESH: Duration = Duration::from_secs(2);

    fn leader(ack: Option<u64>) -> Reading {
        Reading::Follower(ContactReply {
            leads: true,
            term: 4,
            quorum_ack_ms: ack,
        })
    }

    #[test]
    fn a_leader_is_in_touch_while_a_quorum_acknowledges_it() {
        assert!(in_touch(Reading::Leading(Some(150)), FRESH));
        assert!(in_touch(Reading::Leading(Some(2000)), FRESH));
        assert!(!in_touch(Reading::Leading(Some(2001)), FRESH));
        assert!(!in_touch(Reading::Leading(None), FRESH));
    }

    #[test]
    fn a_follower_is_in_touch_only_through_a_leader_in_touch() {
        assert!(in_touch(leader(Some(90)), FRESH));
        // The minority side of a partition: its old leader answers but lost its quorum.
        assert!(!in_touch(leader(Some(30_000)), FRESH));
        assert!(!in_touch(leader(None), FRESH));
        // What it took for the leader was deposed meanwhile.
        let deposed = Reading::Follower(ContactReply {
            leads: false,
            term: 5,
            quorum_ack_ms: None,
        });
        assert!(!in_touch(deposed, FRESH));
        assert!(!in_touch(Reading::NoLeader, FRESH));
    }
}

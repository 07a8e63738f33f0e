//! A quicker election when the leader's process is gone.
//!
//! Why: openraft's followers refuse votes for a leader lease (`election_timeout_max`) after
//! the leader's last heartbeat, and a follower stands for election only after that lease plus
//! its own randomized election timeout: 1.2-1.6 s with the default 400-800 ms, most of a
//! failover (BENCHMARKS.md). The election timeout on top of the lease is there for a leader
//! that may still be alive (slow, stopped, cut off). When the leader's *process* has died
//! (`kill -9`, a crash, the OOM killer) on a host that is still up, its port refuses
//! connections at once, and a follower can tell that apart from a leader that is slow,
//! stopped (`SIGSTOP`: the kernel still accepts connections on its listening socket) or
//! behind a partition (connections hang). Then the timeout buys nothing, and the follower
//! stands as soon as the voters' lease is over. (HTCondor's HAD, by contrast, waits a fixed
//! multiple of `HAD_CONNECTION_TIMEOUT` whatever happened to the active CM.)
//!
//! How: the Raft service notes when each append-entries (heartbeats included) that the local
//! Raft accepted arrived, and from which leader ([`Heard`]; a deposed leader's, answered with
//! the higher vote, is not heard: a resumed old leader sends them for a while). A task on each CM looks every [`CHECK_EVERY`]: a follower
//! that is the designated successor ([`designated`]: the lowest-numbered voter other than the
//! leader, so that two followers do not split the vote), and that has heard nothing from its
//! leader for more than two heartbeat intervals ([`should_probe`]), tries to connect to the
//! leader's address. If the connection is refused, it calls openraft's `trigger().elect()`
//! once the lease since the last heartbeat it heard is over, plus one heartbeat interval for
//! a voter that heard the leader a little later ([`elect_at`]).
//!
//! Safety is Raft's: an election is always safe, only its timing changes. A vote refused
//! (a voter whose lease is not over yet, or whose log is longer) costs one election timeout,
//! after which openraft's own timer carries on as before. If the designated successor is
//! itself gone, the others elect on openraft's timers, as before.
use super::leadership::{node_addr, Leadership};
use super::{Metrics, NodeId, ServerState};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often the task looks at the leader's heartbeats.
pub const CHECK_EVERY: Duration = Duration::from_millis(50);

/// How long a connection attempt to the leader may take: a refusal from a live host comes
/// back within a round trip; anything slower is a slow or unreachable leader, not a dead one.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(200);

/// When this CM last received an append-entries, and from which leader.
#[derive(Clone, Debug, Default)]
pub struct Heard(Arc<Mutex<Option<(NodeId, Instant)>>>);

impl Heard {
    /// An append-entries from `leader` arrived at `at`.
    pub fn append_entries(&self, leader: NodeId, at: Instant) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some((leader, at));
    }

    /// When this CM last heard from `leader`, if it did since it started.
    pub fn last_from(&self, leader: NodeId) -> Option<Instant> {
        let heard = *self.0.lock().unwrap_or_else(|p| p.into_inner());
        heard.and_then(|(l, at)| (l == leader).then_some(at))
    }
}

/// Whether `me` is the follower that stands first when `leader` is gone: the lowest-numbered
/// voter other than the leader.
pub fn designated(me: NodeId, leader: NodeId, voters: impl IntoIterator<Item = NodeId>) -> bool {
    voters.into_iter().filter(|v| *v != leader).min() == Some(me)
}

/// Whether a follower that last heard its leader at `heard` should check, at `now`, whether
/// the leader's process is gone: after more than two heartbeat intervals of silence.
pub fn should_probe(heard: Instant, now: Instant, heartbeat: Duration) -> bool {
    now.saturating_duration_since(heard) > heartbeat * 2
}

/// When to stand: once every voter's lease (`lease` after the heartbeat it heard last) is
/// over, allowing the other voters one heartbeat interval more than this CM's last one.
pub fn elect_at(heard: Instant, lease: Duration, heartbeat: Duration) -> Instant {
    heard + lease + heartbeat
}

/// The leader this CM follows and the voters, when it is a follower of another CM.
fn following(m: &Metrics) -> Option<(NodeId, Vec<NodeId>)> {
    if m.state != ServerState::Follower {
        return None;
    }
    let leader = m.current_leader.filter(|l| *l != m.id)?;
    let voters = m.membership_config.membership().voter_ids().collect();
    Some((leader, voters))
}

/// Whether a connection to `addr` is refused: the leader's host is up and nothing listens
/// on its port. A timeout, an accepted connection or any other error is not a refusal.
async fn refused(addr: &str) -> bool {
    match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(addr)).await {
        Ok(Err(e)) => e.kind() == std::io::ErrorKind::ConnectionRefused,
        _ => false,
    }
}

/// Runs the quick election on this CM until its Raft shuts down. `heartbeat` and `lease`
/// are openraft's heartbeat interval and leader lease (`election_timeout_max`).
pub fn spawn(
    leadership: Leadership,
    heard: Heard,
    heartbeat: Duration,
    lease: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        // The term already stood for: one quick election per term at most.
        let mut stood_in: Option<u64> = None;
        let mut tick = tokio::time::interval(CHECK_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let m = leadership.metrics();
            let Some((leader, voters)) = following(&m) else {
                continue;
            };
            if stood_in == Some(m.current_term) || !designated(m.id, leader, voters) {
                continue;
            }
            let Some(last) = heard.last_from(leader) else {
                continue;
            };
            if !should_probe(last, Instant::now(), heartbeat) {
                continue;
            }
            let addr = node_addr(&m, leader);
            if addr.is_empty() || !refused(&addr).await {
                continue;
            }
            let at = elect_at(last, lease, heartbeat);
            tracing::info!(
                leader,
                %addr,
                term = m.current_term,
                silent_ms = last.elapsed().as_millis() as u64,
                wait_ms = at.saturating_duration_since(Instant::now()).as_millis() as u64,
                "the leader's port refuses connections: its process is gone; standing for election when the voters' lease is over"
            );
            tokio::time::sleep_until(at.into()).await;
            // Still the same leader, term and silence: openraft has not moved on by itself.
            let now = leadership.metrics();
            let same = following(&now).is_some_and(|(l, _)| l == leader)
                && now.current_term == m.current_term
                && heard.last_from(leader) == Some(last);
            stood_in = Some(m.current_term);
            if same {
                crate::metrics::record_quick_election();
                if let Err(e) = leadership.raft().trigger().elect().await {
                    tracing::warn!(error = %e, "could not stand for election");
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lowest_voter_but_the_leader_stands_first() {
        assert!(designated(2, 1, [1, 2, 3]));
        assert!(!designated(3, 1, [1, 2, 3]));
        assert!(designated(1, 2, [1, 2, 3]));
        assert!(designated(3, 1, [5, 1, 4, 3]));
        // A CM that is not a voter (a learner) never is.
        assert!(!designated(9, 1, [1, 2, 3]));
    }

    #[test]
    fn a_follower_probes_after_two_heartbeats_of_silence_and_stands_after_the_lease() {
        let t0 = Instant::now();
        let hb = Duration::from_millis(100);
        assert!(!should_probe(t0, t0 + Duration::from_millis(200), hb));
        assert!(should_probe(t0, t0 + Duration::from_millis(201), hb));
        // A clock that reads earlier than the heartbeat (a heartbeat that just arrived).
        assert!(!should_probe(t0 + hb, t0, hb));
        let lease = Duration::from_millis(800);
        assert_eq!(elect_at(t0, lease, hb), t0 + Duration::from_millis(900));
    }

    #[test]
    fn heard_is_per_leader() {
        let h = Heard::default();
        let t0 = Instant::now();
        assert_eq!(h.last_from(1), None);
        h.append_entries(1, t0);
        assert_eq!(h.last_from(1), Some(t0));
        h.append_entries(2, t0 + CHECK_EVERY);
        assert_eq!(h.last_from(1), None);
        assert_eq!(h.last_from(2), Some(t0 + CHECK_EVERY));
    }

    #[tokio::test]
    async fn only_a_refused_connection_counts_as_a_dead_leader() {
        // A port nobody listens on (bound, then closed): refused.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let closed = l.local_addr().unwrap().to_string();
        drop(l);
        assert!(refused(&closed).await);
        // A listening port (a live, stopped or slow leader): not refused.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        assert!(!refused(&l.local_addr().unwrap().to_string()).await);
        // An address that does not resolve: not refused.
        assert!(!refused("no-such-host.invalid:1").await);
    }
}

//! Raft timing and snapshot knobs.
//!
//! Defaults are for CMs on one LAN (round trips well under 1 ms, fsync 1-5 ms):
//! * heartbeat 100 ms: a follower hears from the leader ten times per election timeout, so a
//!   few lost packets never trigger an election;
//! * election timeout 400-800 ms (randomized): at least 4 heartbeats, so a missed heartbeat
//!   or a slow fsync does not depose a healthy leader. openraft also makes followers refuse
//!   votes for a leader lease of `election_timeout_max` after the last heartbeat, so a dead
//!   leader is replaced after roughly 0.8-1.6 s (measured: see the raft benchmark); with
//!   500-1000 ms it was 1.6-2.0 s. The failover target is under 3 s to the next cycle;
//! * a snapshot every 5000 log entries, keeping 1000 entries behind it so a briefly lagging
//!   follower catches up from the log instead of a snapshot.
//!
//! * when the leader's process is gone (its port refuses connections) a follower stands as
//!   soon as that lease is over ([`super::quick_election`]): 0.8-0.9 s.
//!
//! Environment knobs (milliseconds): `AERIE_HEARTBEAT_INTERVAL`, `AERIE_ELECTION_TIMEOUT`
//! (`MIN` or `MIN-MAX`), `AERIE_SNAPSHOT_LOGS` (entries between snapshots),
//! `AERIE_SNAPSHOT_KEEP_LOGS` (entries kept behind a snapshot); `AERIE_QUICK_ELECTION` (1,
//! the default, or 0 to wait for openraft's timers whatever happened to the leader).
use crate::knob::Knobs;
use anyhow::{bail, Context};
use std::time::Duration;

/// The knobs of one CM's Raft instance.
#[derive(Debug, Clone, PartialEq)]
pub struct RaftKnobs {
    /// `AERIE_HEARTBEAT_INTERVAL`: leader heartbeat period, ms.
    pub heartbeat_ms: u64,
    /// `AERIE_ELECTION_TIMEOUT` low end, ms.
    pub election_min_ms: u64,
    /// `AERIE_ELECTION_TIMEOUT` high end, ms.
    pub election_max_ms: u64,
    /// `AERIE_SNAPSHOT_LOGS`: build a snapshot every this many applied entries.
    pub snapshot_logs: u64,
    /// `AERIE_SNAPSHOT_KEEP_LOGS`: entries kept behind a snapshot for lagging followers.
    pub keep_logs: u64,
    /// `AERIE_QUICK_ELECTION`: stand early when the leader's process is gone.
    pub quick_election: bool,
}

impl Default for RaftKnobs {
    fn default() -> Self {
        RaftKnobs {
            heartbeat_ms: 100,
            election_min_ms: 400,
            election_max_ms: 800,
            snapshot_logs: 5000,
            keep_logs: 1000,
            quick_election: true,
        }
    }
}

impl RaftKnobs {
    /// Defaults overridden by the configuration file, overridden in turn by the `AERIE_*`
    /// environment variables of the same names; each bounded (see [`crate::knob`]).
    pub fn read(knobs: &Knobs) -> anyhow::Result<Self> {
        let d = RaftKnobs::default();
        let ms = Duration::from_millis(1);
        let minute = Duration::from_secs(60);
        let millis = |d: Duration| d.as_millis() as u64;
        let heartbeat = knobs.duration(
            "AERIE_HEARTBEAT_INTERVAL",
            Some("AERIE_HEARTBEAT_INTERVAL"),
            ms,
            Duration::from_millis(d.heartbeat_ms),
            ms,
            minute,
        )?;
        let (lo, hi) = knobs.duration_range(
            "AERIE_ELECTION_TIMEOUT",
            Some("AERIE_ELECTION_TIMEOUT"),
            ms,
            (
                Duration::from_millis(d.election_min_ms),
                Duration::from_millis(d.election_max_ms),
            ),
            ms,
            10 * minute,
        )?;
        let k = RaftKnobs {
            heartbeat_ms: millis(heartbeat),
            election_min_ms: millis(lo),
            election_max_ms: millis(hi),
            snapshot_logs: knobs.count(
                "AERIE_SNAPSHOT_LOGS",
                Some("AERIE_SNAPSHOT_LOGS"),
                d.snapshot_logs,
                1,
                1_000_000_000,
            )?,
            keep_logs: knobs.count(
                "AERIE_SNAPSHOT_KEEP_LOGS",
                Some("AERIE_SNAPSHOT_KEEP_LOGS"),
                d.keep_logs,
                0,
                1_000_000_000,
            )?,
            quick_election: knobs.count(
                "AERIE_QUICK_ELECTION",
                Some("AERIE_QUICK_ELECTION"),
                u64::from(d.quick_election),
                0,
                1,
            )? == 1,
        };
        k.validate()?;
        Ok(k)
    }

    /// Refuses timings that would make elections spurious: an empty election timeout range,
    /// or a heartbeat longer than half the shortest election timeout.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.election_max_ms <= self.election_min_ms {
            bail!(
                "election timeout range {}-{} ms is empty (max must be above min)",
                self.election_min_ms,
                self.election_max_ms
            );
        }
        if self.heartbeat_ms.saturating_mul(2) > self.election_min_ms {
            bail!(
                "heartbeat interval {} ms must be at most half the minimum election timeout {} ms",
                self.heartbeat_ms,
                self.election_min_ms
            );
        }
        Ok(())
    }

    /// The deadline of one append-entries or vote RPC: a heartbeat that takes longer than
    /// the minimum election timeout is useless anyway.
    pub fn rpc_deadline(&self) -> Duration {
        Duration::from_millis(self.election_min_ms.max(200))
    }

    /// The openraft configuration.
    pub fn openraft_config(&self) -> anyhow::Result<openraft::Config> {
        let c = openraft::Config {
            cluster_name: "aerie".into(),
            heartbeat_interval: self.heartbeat_ms,
            election_timeout_min: self.election_min_ms,
            election_timeout_max: self.election_max_ms,
            install_snapshot_timeout: 5000,
            snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(self.snapshot_logs),
            max_in_snapshot_log_to_keep: self.keep_logs,
            snapshot_max_chunk_size: 1 << 20,
            ..Default::default()
        };
        c.validate().context("invalid Raft configuration")
    }
}

//! The replicated core of a CM, and everything that names openraft: moving to a newer
//! openraft touches this folder only.
//!
//! * [`TypeConfig`]: the application types openraft is instantiated with (the commands and
//!   responses of `aerie_core::state`);
//! * [`store`]: the RocksDB log and the state machine, synced before anything is acknowledged,
//!   and the cluster id every peer message carries;
//! * [`bootstrap`]: forming a new cluster, exactly once;
//! * [`network`]: the gRPC client side of the peer Raft RPCs (with deadlines);
//! * [`service`]: the gRPC server side, handing requests to the local [`Raft`];
//! * [`config`]: timing knobs (election timeout, heartbeat) and snapshot policy;
//! * [`propose`]: the one way to write a command, with a deadline and a typed error;
//! * [`leadership`]: the one way to ask who leads, wait to lead, or confirm leadership;
//! * [`contact`]: whether this CM is in touch with a leader holding a quorum;
//! * [`quick_election`]: a follower stands as soon as the leader's lease is over when the
//!   leader's process is gone (its port refuses connections).
pub mod bootstrap;
pub mod config;
pub mod contact;
pub mod leadership;
pub mod network;
pub mod propose;
pub mod quick_election;
pub mod service;
pub mod store;

use aerie_core::state::{CommandResponse, Request};
use serde::{Deserialize, Serialize};
use std::io::Cursor;

/// Raft node ids (1, 2, 3... as the operator assigns them).
pub type NodeId = u64;

/// What the membership records for each CM: the address of its gRPC listener (Raft and Admin).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    /// host:port.
    pub addr: String,
}

impl std::fmt::Display for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.addr)
    }
}

openraft::declare_raft_types!(
    /// openraft instantiated with Aerie's command and response types.
    pub TypeConfig:
        D = Request,
        R = CommandResponse,
        NodeId = NodeId,
        Node = Node,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

/// The Raft handle of one CM.
pub type Raft = openraft::Raft<TypeConfig>;
/// One log entry.
pub type Entry = openraft::Entry<TypeConfig>;
/// A log position (term of the leader that wrote it, index).
pub type LogId = openraft::LogId<NodeId>;
/// A vote (term, candidate, committed).
pub type Vote = openraft::Vote<NodeId>;
/// openraft's view of this CM (term, leader, indexes, membership, replication).
pub type Metrics = openraft::RaftMetrics<NodeId, Node>;
/// A storage failure as openraft reports it.
pub type StorageError = openraft::StorageError<NodeId>;
/// A snapshot: its metadata and the serialized state.
pub type Snapshot = openraft::storage::Snapshot<TypeConfig>;
/// What a snapshot covers (last log id, membership).
pub type SnapshotMeta = openraft::SnapshotMeta<NodeId, Node>;
/// The membership with the log id that set it.
pub type StoredMembership = openraft::StoredMembership<NodeId, Node>;
/// Why a proposal failed (see [`propose::ProposeError`] for what callers get).
pub type ClientWriteError = openraft::error::ClientWriteError<NodeId, Node>;
/// Why leadership could not be confirmed.
pub type CheckIsLeaderError = openraft::error::CheckIsLeaderError<NodeId, Node>;
/// An openraft API error.
pub type RaftError<E = openraft::error::Infallible> = openraft::error::RaftError<NodeId, E>;
pub use openraft::{EntryPayload, ServerState};

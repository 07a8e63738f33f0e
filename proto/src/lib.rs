//! aerie-proto: the gRPC services between Aerie daemons, generated from `proto/*.proto` at
//! build time (vendored protoc; no system protobuf compiler needed).
//!
//! One module per `.proto` file: `raft` (peer Raft RPCs between CMs), `admin` (the admin API
//! cmctl uses), `collector` (ad updates, invalidations and queries), `negotiation` (requests, grants and
//! claims between the leader, access points and execute nodes), `execute` (activating claims,
//! keep-alives, job events and drains between access points and execute nodes), `schedd` (the
//! access point's job queue for users). [`rows`] writes and reads a `schedd` query answered in
//! rows of typed values.
#![warn(missing_docs)]

/// Peer Raft RPCs (append, vote, snapshot) between central managers.
pub mod raft {
    tonic::include_proto!("aerie.raft");
}

/// The admin API served by every central manager.
pub mod admin {
    tonic::include_proto!("aerie.admin");
}

/// The collector every central manager serves: advertise, invalidate, query.
pub mod collector {
    tonic::include_proto!("aerie.collector");
}

/// Idle-job requests, grants and claims between the leader, access points and startds.
pub mod negotiation {
    tonic::include_proto!("aerie.negotiation");
}

/// Activating claims, keep-alives, vacating, drains and job events between access points and
/// execute nodes.
pub mod execute {
    tonic::include_proto!("aerie.execute");
}

/// The access point's job queue: submit, query, remove, hold, release, edit.
pub mod schedd {
    tonic::include_proto!("aerie.schedd");
}

pub mod rows;

//! The admin protocol between `cmctl` (or the test kit) and a CM, as typed values.
//!
//! * writes are [`crate::state::Request`]s (a versioned [`crate::state::Command`]) answered by
//!   a [`crate::state::CommandResponse`];
//! * reads are the query types of [`query`], each with its typed answer;
//! * errors carry an [`ErrorKind`] beside their message, so a client tells "no quorum" (the
//!   cluster has spoken: do not try another CM) from "this CM is unreachable" (try the next
//!   one) without reading the message.
//!
//! The gRPC service (`proto/proto/admin.proto`) carries these as JSON strings: the log stores
//! commands as JSON anyway, and one encoding keeps `cmctl -json` output and the log readable.
pub mod query;

pub use query::{
    AdminQuery, AdsQuery, AuditQuery, CyclesQuery, LeaderInfo, NegotiatorQuery, NegotiatorReport,
    PolicyQuery, PolicyReport, Query, QueryError, StateQuery, StateSummary, SummaryQuery,
    TokensQuery, UserprioQuery, UserprioReport, NEGOTIATOR_STATUS_CYCLES,
};

/// The gRPC metadata key a CM puts its [`ErrorKind`] under.
pub const ERROR_KIND_METADATA: &str = "aerie-error-kind";

/// What kind of failure an admin request met, as the CM classifies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// No leader, or the leader could not reach a quorum in time. Another CM would say the
    /// same: the client stops there.
    NoQuorum,
    /// The request itself is wrong (bad command, unknown member): retrying cannot help.
    BadRequest,
    /// The leader could not be reached, or changed while the request was forwarded (an
    /// election): the same request a moment later, through any CM, will likely go through.
    LeaderUnavailable,
    /// Anything else the CM answered (a forward that failed, a Raft failure).
    Failed,
}

impl ErrorKind {
    /// The metadata value.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NoQuorum => "no_quorum",
            ErrorKind::BadRequest => "bad_request",
            ErrorKind::LeaderUnavailable => "leader_unavailable",
            ErrorKind::Failed => "failed",
        }
    }

    /// Reads a metadata value back.
    pub fn parse(s: &str) -> Option<ErrorKind> {
        [
            ErrorKind::NoQuorum,
            ErrorKind::BadRequest,
            ErrorKind::LeaderUnavailable,
            ErrorKind::Failed,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

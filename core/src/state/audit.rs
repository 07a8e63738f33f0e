//! The audit log: who changed the pool, how, when and from where (issue 16, item 7).
//!
//! HTCondor logs each administrative command with the authenticated user and the peer's
//! address in the daemon's log (`src/condor_daemon_core.V6/daemon_core.cpp`,
//! `D_AUDIT`/`AUDIT_LOG`), one log per daemon. Aerie's admin writes all go through Raft, so
//! the record travels with the command: the CM that first received the request from the
//! authenticated caller puts an [`AuditStamp`] beside it in the [`super::Request`] (a CM
//! never takes one from a non-CM caller; forwarded requests keep theirs), the leader sets its
//! time, and applying the entry appends an [`AuditRecord`] to the replicated, bounded log
//! every CM holds (`cmctl audit`).
use serde::{Deserialize, Serialize};

/// How many audit records the state keeps (the newest).
pub const MAX_AUDIT_RECORDS: usize = 10_000;

/// How many characters of a command's JSON a record's summary keeps.
pub const SUMMARY_CHARS: usize = 200;

/// Who asked for a write and from where, carried beside the command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditStamp {
    /// The caller's principal (`admin@admin`, `alice@pool.example`).
    pub who: String,
    /// The caller's address, or `local`/`unknown`.
    pub from: String,
    /// When the leader proposed it (Unix seconds).
    pub time: i64,
}

/// One audited admin write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// When (leader time, Unix seconds).
    pub time: i64,
    /// Who (the caller's principal).
    pub who: String,
    /// From where (the caller's address).
    pub from: String,
    /// The command's name (`accountant`, `set_quota`, `issue_token`).
    pub command: String,
    /// The command, shortened (its JSON, at most [`SUMMARY_CHARS`] characters).
    pub summary: String,
    /// Whether it was applied (a refused write is recorded too, with why).
    pub ok: bool,
    /// Why it was refused (empty when applied).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
}

/// The first [`SUMMARY_CHARS`] characters of `text`, with `...` when cut.
pub fn shorten(text: &str) -> String {
    match text.char_indices().nth(SUMMARY_CHARS) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_string(),
    }
}

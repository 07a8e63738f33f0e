//! The startds' own record of what they did: one JSON object per line, written and flushed
//! as each event happens, so a run killed at any moment leaves a log `check-claims` can
//! audit (no slot claimed twice at once, no claim from an older term than one accepted).
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

/// One event. `event` is "start" (a simulator started: every slot it has is free),
/// "claim", "release" or "refused".
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Event {
    /// What happened: "start", "claim", "release" or "refused".
    pub event: String,
    /// The slot claimed or released (a dynamic slot's own name when carved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<String>,
    /// The partitionable slot a dynamic slot was carved from (the slot the term fence is on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The job claimed for, released from, or refused: CLUSTER.PROC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// The submitter the job negotiated as (user@domain or group.user@domain), on claims and
    /// releases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitter: Option<String>,
    /// Raft term of the grant: the grant being claimed or refused, or, on a release, the
    /// grant that made the claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub term: Option<u64>,
    /// Negotiation cycle of the grant within its term (claims and refusals only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycle: Option<u64>,
    /// Why a claim or grant was refused ("stale term", "already claimed", ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The full refusal message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Who refused: "startd" or "access_point".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Unix milliseconds.
    pub time_ms: u64,
}

/// Where events go: a file, or nowhere when no log was asked for.
pub struct ClaimsLog {
    file: Option<Mutex<File>>,
}

impl ClaimsLog {
    /// No log.
    pub fn none() -> ClaimsLog {
        ClaimsLog { file: None }
    }

    /// Appends to `path` (created if missing).
    pub fn open(path: &Path) -> anyhow::Result<ClaimsLog> {
        let f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| anyhow::anyhow!("cannot open claims log {}: {e}", path.display()))?;
        Ok(ClaimsLog {
            file: Some(Mutex::new(f)),
        })
    }

    /// Writes one event as a line; a write error is logged, never fatal (the pool keeps
    /// running; the audit will show the gap).
    pub fn write(&self, e: &Event) {
        let Some(f) = &self.file else { return };
        let mut line = match serde_json::to_string(e) {
            Ok(l) => l,
            Err(err) => {
                tracing::warn!(error = %err, "cannot encode a claims log event");
                return;
            }
        };
        line.push('\n');
        let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(err) = f.write_all(line.as_bytes()).and_then(|_| f.flush()) {
            tracing::warn!(error = %err, "cannot write the claims log");
        }
    }
}

/// Now, in Unix milliseconds.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

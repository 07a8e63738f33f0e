//! Pool snapshots for disaster recovery (`cmctl snapshot save|restore`).
//!
//! HTCondor keeps the accountant's ledger in the negotiator's `Accountantnew.log`
//! (`condor_accountant.V6/Accountant.cpp`), and recovering a pool means keeping that file.
//! Aerie's ledger and policy live in the Raft log of every CM; a snapshot file carries them
//! out of the cluster so that a pool whose every CM lost its data can be brought back: the
//! file holds what must survive (the ledger, the negotiation policy, the runtime overrides,
//! drain requests, absent and offline ads) and is restored into a fresh cluster as one
//! command ([`super::Command::Restore`]).
//!
//! The file is text: a header line `AERIE-POOL-SNAPSHOT <format>`, a line `sha256 <hex>` with
//! the checksum of everything after it, and the JSON of a [`Backup`]. [`decode`] checks all
//! three before anything is proposed, so a wrong or damaged file changes nothing.
use super::policy::{check_group_name, limit_key};
use super::{AdRecord, CommandResult, DrainRequest, GroupPolicy, NegotiationPolicy, PoolState};
use crate::accountant::Accountant;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The first word of a snapshot file.
pub const SNAPSHOT_MAGIC: &str = "AERIE-POOL-SNAPSHOT";
/// The snapshot file format this binary writes and reads.
pub const SNAPSHOT_FORMAT: u32 = 1;

/// What a snapshot holds: the replicated state that must survive the loss of every CM.
/// Negotiation records, the pause flag and the feature version are the running cluster's own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Backup {
    /// The fair-share ledger.
    pub accountant: Accountant,
    /// The negotiation policy, if the cluster had one.
    #[serde(default)]
    pub policy: Option<NegotiationPolicy>,
    /// Runtime group quota and surplus overrides.
    #[serde(default)]
    pub groups: BTreeMap<String, GroupPolicy>,
    /// Runtime concurrency limits.
    #[serde(default)]
    pub limits: BTreeMap<String, f64>,
    /// Pending drain requests.
    #[serde(default)]
    pub drains: BTreeMap<String, DrainRequest>,
    /// Absent and offline ads.
    #[serde(default)]
    pub ads: BTreeMap<String, BTreeMap<String, AdRecord>>,
    /// The state's time when saved (a restored cluster's time never runs back before it).
    #[serde(default)]
    pub now: i64,
}

impl Backup {
    /// The parts of `state` a snapshot keeps.
    pub fn of(state: &PoolState) -> Self {
        Backup {
            accountant: state.accountant.clone(),
            policy: state.policy.clone(),
            groups: state.groups.clone(),
            limits: state.limits.clone(),
            drains: state.drains.clone(),
            ads: state.ads.clone(),
            now: state.now,
        }
    }
}

impl PoolState {
    /// Applies [`super::Command::Restore`]: every part is checked before anything is
    /// replaced, so a refused restore changes nothing. The restored policy gets a version
    /// above both the saved one and the one in force, so versions never go back.
    pub(super) fn restore(&mut self, b: &Backup) -> Result<CommandResult, String> {
        b.accountant
            .params()
            .validate()
            .map_err(|e| format!("snapshot's ledger parameters: {e}"))?;
        for (g, p) in &b.groups {
            check_group_name(g)?;
            if let Some(q) = p.quota {
                q.validate()
                    .map_err(|e| format!("snapshot's quota of {g}: {e}"))?;
            }
        }
        for (name, v) in &b.limits {
            limit_key(name)?;
            if !v.is_finite() || *v < 0.0 {
                return Err(format!(
                    "snapshot's concurrency limit {name}: bad value {v}"
                ));
            }
        }
        if b.drains.keys().any(|m| m.is_empty())
            || b.ads.values().flat_map(|m| m.keys()).any(|n| n.is_empty())
        {
            return Err("snapshot has a drain request or an ad without a name".into());
        }
        let policy = match &b.policy {
            Some(p) => Some((super::negotiation_policy::check(&p.knobs)?, p)),
            None => None,
        };
        let old = (self.accountant.clone(), self.policy.clone());
        self.accountant = b.accountant.clone();
        if let Some((cfg, p)) = policy {
            let version = self
                .policy
                .as_ref()
                .map_or(0, |c| c.version)
                .max(p.version)
                .saturating_add(1);
            if let Err(e) = self.install_policy(cfg, p.knobs.clone(), &p.source, p.time, version) {
                (self.accountant, self.policy) = old;
                return Err(e);
            }
        }
        self.groups = b.groups.clone();
        self.limits = b.limits.clone();
        self.drains = b.drains.clone();
        self.ads = b.ads.clone();
        self.now = self.now.max(b.now);
        Ok(CommandResult::Restored {
            submitters: self.accountant.records().count(),
            policy_version: self.policy.as_ref().map_or(0, |p| p.version),
        })
    }
}

/// Why a file is not a snapshot this binary can restore.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SnapshotError {
    /// The first line is not the snapshot header.
    #[error("not an Aerie pool snapshot (line 1 should start with {SNAPSHOT_MAGIC})")]
    NotASnapshot,
    /// Written in a format this binary does not read.
    #[error(
        "snapshot format {found} is not supported (this cmctl reads format {SNAPSHOT_FORMAT})"
    )]
    WrongVersion {
        /// The format the file names.
        found: String,
    },
    /// The checksum line is missing or malformed.
    #[error("line 2: expected `sha256 <64 hex digits>`, found {0:?}")]
    BadChecksumLine(String),
    /// The content does not match its checksum (truncated or edited).
    #[error("checksum mismatch: the header says sha256 {expected}, the content has {found} (truncated or edited?)")]
    ChecksumMismatch {
        /// The checksum in the header.
        expected: String,
        /// The checksum of the content.
        found: String,
    },
    /// The checksum matches but the content is not a snapshot's JSON.
    #[error("content line {line}, column {column}: {message}")]
    Content {
        /// 1-based line within the file.
        line: usize,
        /// 1-based column.
        column: usize,
        /// serde_json's message.
        message: String,
    },
}

/// Serializes `backup` as a snapshot file.
pub fn encode(backup: &Backup) -> Result<Vec<u8>, String> {
    let body =
        serde_json::to_vec_pretty(backup).map_err(|e| format!("encoding the snapshot: {e}"))?;
    let mut out = format!(
        "{SNAPSHOT_MAGIC} {SNAPSHOT_FORMAT}\nsha256 {}\n",
        hex(&Sha256::digest(&body))
    )
    .into_bytes();
    out.extend_from_slice(&body);
    Ok(out)
}

/// Reads a snapshot file, checking its header, format and checksum first.
pub fn decode(bytes: &[u8]) -> Result<Backup, SnapshotError> {
    let (first, rest) = split_line(bytes).ok_or(SnapshotError::NotASnapshot)?;
    let first = std::str::from_utf8(first).map_err(|_| SnapshotError::NotASnapshot)?;
    let mut words = first.split_whitespace();
    if words.next() != Some(SNAPSHOT_MAGIC) {
        return Err(SnapshotError::NotASnapshot);
    }
    let format = words.next().unwrap_or("").to_string();
    if format != SNAPSHOT_FORMAT.to_string() {
        return Err(SnapshotError::WrongVersion { found: format });
    }
    let (second, body) = split_line(rest)
        .ok_or_else(|| SnapshotError::BadChecksumLine(String::from_utf8_lossy(rest).into()))?;
    let second = String::from_utf8_lossy(second);
    let expected = match second.strip_prefix("sha256 ") {
        Some(h) if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) => {
            h.to_ascii_lowercase()
        }
        _ => {
            return Err(SnapshotError::BadChecksumLine(
                second.chars().take(80).collect(),
            ))
        }
    };
    let found = hex(&Sha256::digest(body));
    if found != expected {
        return Err(SnapshotError::ChecksumMismatch { expected, found });
    }
    serde_json::from_slice(body).map_err(|e| SnapshotError::Content {
        line: e.line() + 2,
        column: e.column(),
        message: e.to_string(),
    })
}

fn split_line(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let i = b.iter().position(|c| *c == b'\n')?;
    Some((&b[..i], &b[i + 1..]))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accountant::{AccountantCommand, AccountantParams};

    fn sample() -> Backup {
        let mut s = PoolState::new(AccountantParams::default());
        s.accountant
            .apply(&AccountantCommand::SetFactor {
                name: "alice@x".into(),
                value: 7.0,
            })
            .unwrap();
        s.limits.insert("license".into(), 4.0);
        s.now = 1000;
        Backup::of(&s)
    }

    #[test]
    fn a_snapshot_reads_back_as_written() {
        let b = sample();
        let bytes = encode(&b).unwrap();
        assert!(bytes.starts_with(b"AERIE-POOL-SNAPSHOT 1\nsha256 "));
        assert_eq!(decode(&bytes).unwrap(), b);
    }

    #[test]
    fn wrong_files_are_refused_with_the_reason() {
        let bytes = encode(&sample()).unwrap();
        assert_eq!(
            decode(b"{\"accountant\":1}"),
            Err(SnapshotError::NotASnapshot)
        );
        assert_eq!(decode(b""), Err(SnapshotError::NotASnapshot));
        let v2 = String::from_utf8(bytes.clone())
            .unwrap()
            .replacen("SNAPSHOT 1", "SNAPSHOT 2", 1);
        assert_eq!(
            decode(v2.as_bytes()),
            Err(SnapshotError::WrongVersion { found: "2".into() })
        );
        // One byte changed in the content.
        let mut edited = bytes.clone();
        let at = edited.len() - 5;
        edited[at] ^= 1;
        assert!(matches!(
            decode(&edited),
            Err(SnapshotError::ChecksumMismatch { .. })
        ));
        // Truncated.
        assert!(matches!(
            decode(&bytes[..bytes.len() - 10]),
            Err(SnapshotError::ChecksumMismatch { .. })
        ));
        let e = decode(b"AERIE-POOL-SNAPSHOT 1\nmd5 abc\n{}").unwrap_err();
        assert!(matches!(e, SnapshotError::BadChecksumLine(_)), "{e}");
        // A correct checksum over content that is not a snapshot.
        let body = b"{\"x\": 1}";
        let mut f = format!(
            "AERIE-POOL-SNAPSHOT 1\nsha256 {}\n",
            hex(&Sha256::digest(body))
        )
        .into_bytes();
        f.extend_from_slice(body);
        let e = decode(&f).unwrap_err();
        assert!(matches!(e, SnapshotError::Content { line: 3, .. }), "{e}");
    }
}

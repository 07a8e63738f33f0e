//! Reading a stopped CM's committed log from its data directory, for audits that replay it
//! (the jepsen checker `priorities-replayed` replays the accountant's ticks).
//!
//! The store is opened read-only (RocksDB's `open_cf_for_read_only`: no lock taken, nothing
//! written, the write-ahead log replayed in memory), so a CM killed with `-9` is read as it
//! would restart. Only entries up to the committed index the CM recorded are returned:
//! openraft saves the committed index before it applies (raft_core's `Command::Commit`), so
//! everything the CM applied is included, and no entry a later leader might still truncate.
//! The beginning of the log may have been purged behind a snapshot; then the snapshot's state
//! is returned as the replay's starting point (HTCondor has no such log: its accountant
//! persists the ledger itself, `Accountant.cpp`'s `AcctLog`).
use super::log::{KEY_COMMITTED, KEY_PURGED};
use super::sm::{SnapshotBody, KEY_SNAP_DATA, KEY_SNAP_META};
use super::{CF_LOGS, CF_META};
use crate::raft::{Entry, EntryPayload, LogId, SnapshotMeta};
use aerie_core::state::{PoolState, Request};
use anyhow::{anyhow, Context};
use rocksdb::{IteratorMode, Options, DB};
use std::path::Path;

/// One committed log entry.
#[derive(Debug, Clone, PartialEq)]
pub struct CommittedEntry {
    /// Its index in the log.
    pub index: u64,
    /// The term of the leader that wrote it.
    pub term: u64,
    /// The command it carries; `None` for a leader's blank entry or a membership change.
    pub request: Option<Request>,
}

/// The state a snapshot holds and the last entry it covers.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotState {
    /// The index of the last entry the snapshot covers (`None`: none).
    pub index: Option<u64>,
    /// The term of that entry.
    pub term: Option<u64>,
    /// The state after applying every entry up to `index`.
    pub state: PoolState,
}

/// What [`read_committed`] found in a data directory.
#[derive(Debug, Clone, PartialEq)]
pub struct CommittedLog {
    /// The committed index the CM recorded (`None`: nothing committed yet).
    pub committed: Option<u64>,
    /// The last index purged from the log (`None`: the log starts at its first entry).
    pub last_purged: Option<u64>,
    /// The stored snapshot, if one was built or installed.
    pub snapshot: Option<SnapshotState>,
    /// Every stored entry up to `committed`, in index order (those after `last_purged`).
    pub entries: Vec<CommittedEntry>,
}

fn meta<T: serde::de::DeserializeOwned>(
    db: &DB,
    key: &[u8],
    path: &Path,
) -> anyhow::Result<Option<T>> {
    let cf = db
        .cf_handle(CF_META)
        .ok_or_else(|| anyhow!("{}: no column family {CF_META}", path.display()))?;
    match db.get_cf(cf, key)? {
        None => Ok(None),
        Some(v) => serde_json::from_slice(&v).map(Some).with_context(|| {
            format!(
                "{}: decoding meta key {}",
                path.display(),
                String::from_utf8_lossy(key)
            )
        }),
    }
}

/// Reads the committed log and the snapshot of the CM whose data directory is `dir` (the
/// `--data-dir` of `aerie-cm serve`), best stopped first: a read-only open of a running CM's
/// store sees it as of the moment it is opened. Errors name the file and what in it could not
/// be read.
pub fn read_committed(dir: &Path) -> anyhow::Result<CommittedLog> {
    let path = dir.join("raft.db");
    let db = DB::open_cf_for_read_only(&Options::default(), &path, [CF_LOGS, CF_META], false)
        .with_context(|| format!("cannot open RocksDB store {} read-only", path.display()))?;
    let committed: Option<LogId> = meta::<Option<LogId>>(&db, KEY_COMMITTED, &path)?.flatten();
    let purged: Option<LogId> = meta(&db, KEY_PURGED, &path)?;
    let snap_meta: Option<SnapshotMeta> = meta(&db, KEY_SNAP_META, &path)?;
    let snapshot = match snap_meta {
        None => None,
        Some(m) => {
            let cf = db
                .cf_handle(CF_META)
                .ok_or_else(|| anyhow!("{}: no column family {CF_META}", path.display()))?;
            let data = db.get_cf(cf, KEY_SNAP_DATA)?.ok_or_else(|| {
                anyhow!(
                    "{}: snapshot meta {} without its data",
                    path.display(),
                    m.snapshot_id
                )
            })?;
            let body: SnapshotBody = serde_json::from_slice(&data).with_context(|| {
                format!("{}: decoding snapshot {}", path.display(), m.snapshot_id)
            })?;
            Some(SnapshotState {
                index: m.last_log_id.map(|l| l.index),
                term: m.last_log_id.map(|l| l.leader_id.term),
                state: body.state,
            })
        }
    };
    let upto = committed.map(|l| l.index);
    let cf = db
        .cf_handle(CF_LOGS)
        .ok_or_else(|| anyhow!("{}: no column family {CF_LOGS}", path.display()))?;
    let mut entries = Vec::new();
    if let Some(upto) = upto {
        for r in db.iterator_cf(cf, IteratorMode::Start) {
            let (k, v) = r.with_context(|| format!("{}: reading the log", path.display()))?;
            let e: Entry = serde_json::from_slice(&v).with_context(|| {
                let index = <[u8; 8]>::try_from(&k[..]).map(u64::from_be_bytes);
                format!("{}: decoding log entry {index:?}", path.display())
            })?;
            if e.log_id.index > upto {
                break;
            }
            entries.push(CommittedEntry {
                index: e.log_id.index,
                term: e.log_id.leader_id.term,
                request: match e.payload {
                    EntryPayload::Normal(req) => Some(req),
                    EntryPayload::Blank | EntryPayload::Membership(_) => None,
                },
            });
        }
    }
    Ok(CommittedLog {
        committed: upto,
        last_purged: purged.map(|l| l.index),
        snapshot,
        entries,
    })
}

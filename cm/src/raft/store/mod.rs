//! Durable Raft storage in RocksDB: the log, the vote and the state machine's snapshots.
//!
//! Durability rules (the point of replicating the accountant):
//! * every `append` is ONE `WriteBatch` written with `sync = true` before openraft is told the
//!   entries are flushed (openraft's own RocksDB example skips the sync; we do not);
//! * the vote, the committed index, truncations and purges are synced writes too;
//! * the state machine lives in memory and is persisted as snapshots (synced). On restart the
//!   latest snapshot is loaded and openraft re-applies the committed log after it; purges only
//!   ever drop entries a snapshot already covers.
//!
//! Column families: `logs` (big-endian index -> JSON entry), `meta` (vote, committed, last
//! purged id, snapshot meta and data). JSON keeps the log readable across upgrades
//! (`state::Request` carries a version tag).
// openraft's storage traits return its `StorageError` (224 bytes) by value; the helpers here
// return what the traits return rather than box it only to unbox it again.
#![allow(clippy::result_large_err)]

mod cluster_id;
mod log;
mod read;
mod sm;

pub use cluster_id::ClusterId;
pub use log::LogStore;
pub use read::{read_committed, CommittedEntry, CommittedLog, SnapshotState};
pub use sm::{SharedState, StateMachineStore};

use anyhow::Context;
use rocksdb::{ColumnFamilyDescriptor, Options, WriteBatch, DB};
use std::path::Path;
use std::sync::Arc;

pub(crate) const CF_LOGS: &str = "logs";
pub(crate) const CF_META: &str = "meta";

/// Opens (creating if needed) the store under `dir` and returns its two halves and the
/// cluster id kept beside them.
pub fn open(dir: &Path) -> anyhow::Result<(LogStore, StateMachineStore, ClusterId)> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create data directory {}", dir.display()))?;
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    let cfs = vec![
        ColumnFamilyDescriptor::new(CF_LOGS, Options::default()),
        ColumnFamilyDescriptor::new(CF_META, Options::default()),
    ];
    let path = dir.join("raft.db");
    let db = DB::open_cf_descriptors(&opts, &path, cfs)
        .with_context(|| format!("cannot open RocksDB store {}", path.display()))?;
    let db = Arc::new(db);
    let log = LogStore::new(db.clone());
    let cluster = ClusterId::open(db.clone())?;
    let sm = StateMachineStore::open(db)?;
    Ok((log, sm, cluster))
}

/// Writes `batch` to `db` synced, on a blocking thread, and waits for it without holding an
/// async worker: an fsync takes milliseconds (seconds on a busy disk), and done on one of the
/// runtime's few workers it would hold up the heartbeats, votes and ad ingest those workers
/// also carry, and cause needless elections (issue 13.7). The caller still awaits the write,
/// so Raft's storage calls stay in order.
pub(crate) async fn write_synced(db: &Arc<DB>, batch: WriteBatch) -> Result<(), std::io::Error> {
    let db = db.clone();
    match tokio::task::spawn_blocking(move || db.write_opt(batch, &write_opts_sync())).await {
        Ok(r) => r.map_err(|e| std::io::Error::other(e.to_string())),
        Err(e) => Err(std::io::Error::other(format!(
            "the synced write did not finish: {e}"
        ))),
    }
}

pub(crate) fn write_opts_sync() -> rocksdb::WriteOptions {
    let mut w = rocksdb::WriteOptions::default();
    w.set_sync(true);
    w
}

#[cfg(test)]
mod tests;

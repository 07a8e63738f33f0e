//! The Raft log and vote in RocksDB (openraft storage v2 `RaftLogStorage`).
use super::{write_synced, CF_LOGS, CF_META};
use crate::raft::{Entry, LogId, NodeId, TypeConfig, Vote};
use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{OptionalSend, RaftLogReader, StorageError, StorageIOError};
use rocksdb::{Direction, IteratorMode, WriteBatch, DB};
use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;
use std::time::Instant;

const KEY_VOTE: &[u8] = b"vote";
pub(super) const KEY_COMMITTED: &[u8] = b"committed";
pub(super) const KEY_PURGED: &[u8] = b"last_purged";

type SResult<T> = Result<T, StorageError<NodeId>>;

/// The log half of the store. Cheap to clone (shares the DB).
#[derive(Clone)]
pub struct LogStore {
    db: Arc<DB>,
}

fn key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

fn index_of(k: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(k.try_into().ok()?))
}

macro_rules! storage_err {
    ($name:ident, $ctor:ident) => {
        fn $name<E: std::error::Error + 'static>(e: E) -> StorageError<NodeId> {
            StorageError::IO {
                source: StorageIOError::$ctor(&e),
            }
        }
    };
}
storage_err!(err_read, read);
storage_err!(err_write, write);
storage_err!(err_read_logs, read_logs);
storage_err!(err_write_logs, write_logs);
storage_err!(err_write_vote, write_vote);

impl LogStore {
    pub(crate) fn new(db: Arc<DB>) -> Self {
        LogStore { db }
    }

    fn cf_logs(&self) -> &rocksdb::ColumnFamily {
        self.db
            .cf_handle(CF_LOGS)
            .expect("logs column family is created at open")
    }

    fn cf_meta(&self) -> &rocksdb::ColumnFamily {
        self.db
            .cf_handle(CF_META)
            .expect("meta column family is created at open")
    }

    fn get_meta<T: serde::de::DeserializeOwned>(&self, k: &[u8]) -> SResult<Option<T>> {
        match self.db.get_cf(self.cf_meta(), k).map_err(err_read)? {
            None => Ok(None),
            Some(v) => serde_json::from_slice(&v).map(Some).map_err(err_read),
        }
    }

    async fn put_meta_synced<T: serde::Serialize>(
        &self,
        k: &[u8],
        v: &T,
        err: fn(std::io::Error) -> StorageError<NodeId>,
    ) -> SResult<()> {
        let bytes = serde_json::to_vec(v).map_err(err_write)?;
        let mut b = WriteBatch::default();
        b.put_cf(self.cf_meta(), k, bytes);
        write_synced(&self.db, b).await.map_err(err)
    }

    fn last_entry_id(&self) -> SResult<Option<LogId>> {
        let mut it = self.db.iterator_cf(self.cf_logs(), IteratorMode::End);
        match it.next() {
            None => Ok(None),
            Some(r) => {
                let (_, v) = r.map_err(err_read_logs)?;
                let e: Entry = serde_json::from_slice(&v).map_err(err_read_logs)?;
                Ok(Some(e.log_id))
            }
        }
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> SResult<Vec<Entry>> {
        let start = match range.start_bound() {
            Bound::Included(x) => *x,
            Bound::Excluded(x) => x.saturating_add(1),
            Bound::Unbounded => 0,
        };
        let start_key = key(start);
        let mut out = Vec::new();
        for r in self.db.iterator_cf(
            self.cf_logs(),
            IteratorMode::From(&start_key, Direction::Forward),
        ) {
            let (k, v) = r.map_err(err_read_logs)?;
            let Some(idx) = index_of(&k) else { continue };
            if !range.contains(&idx) {
                break;
            }
            let e: Entry = serde_json::from_slice(&v).map_err(err_read_logs)?;
            out.push(e);
        }
        Ok(out)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> SResult<LogState<TypeConfig>> {
        let last_purged: Option<LogId> = self.get_meta(KEY_PURGED)?;
        let last = self.last_entry_id()?.or(last_purged);
        Ok(LogState {
            last_purged_log_id: last_purged,
            last_log_id: last,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> SResult<()> {
        let t = Instant::now();
        self.put_meta_synced(KEY_VOTE, vote, err_write_vote).await?;
        crate::metrics::record_fsync(t.elapsed());
        Ok(())
    }

    async fn read_vote(&mut self) -> SResult<Option<Vote>> {
        self.get_meta(KEY_VOTE)
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> SResult<()> {
        // Not synced: losing it only means re-applying a few committed entries at restart,
        // and it can never point past what is durable in the log.
        let bytes = serde_json::to_vec(&committed).map_err(err_write)?;
        self.db
            .put_cf(self.cf_meta(), KEY_COMMITTED, bytes)
            .map_err(err_write)
    }

    async fn read_committed(&mut self) -> SResult<Option<LogId>> {
        Ok(self.get_meta::<Option<LogId>>(KEY_COMMITTED)?.flatten())
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> SResult<()>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let t = Instant::now();
        let mut batch = WriteBatch::default();
        let mut n = 0u64;
        for e in entries {
            let v = serde_json::to_vec(&e).map_err(err_write_logs)?;
            batch.put_cf(self.cf_logs(), key(e.log_id.index), v);
            n += 1;
        }
        let ts = Instant::now();
        // One synced batch: the entries are on disk before openraft hears they are flushed.
        let res = write_synced(&self.db, batch).await;
        crate::metrics::record_fsync(ts.elapsed());
        match res {
            Ok(()) => {
                crate::metrics::record_append(t.elapsed(), n);
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                let msg = format!("RocksDB append failed: {e}");
                callback.log_io_completed(Err(std::io::Error::other(msg)));
                Err(err_write_logs(e))
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> SResult<()> {
        let mut b = WriteBatch::default();
        b.delete_range_cf(self.cf_logs(), key(log_id.index), key(u64::MAX));
        write_synced(&self.db, b).await.map_err(err_write_logs)
    }

    async fn purge(&mut self, log_id: LogId) -> SResult<()> {
        // Record the purge point first (in the same batch as the deletion).
        let mut b = WriteBatch::default();
        let bytes = serde_json::to_vec(&log_id).map_err(err_write)?;
        b.put_cf(self.cf_meta(), KEY_PURGED, bytes);
        b.delete_range_cf(self.cf_logs(), key(0), key(log_id.index.saturating_add(1)));
        write_synced(&self.db, b).await.map_err(err_write_logs)?;
        crate::metrics::record_purge(log_id.index);
        Ok(())
    }
}

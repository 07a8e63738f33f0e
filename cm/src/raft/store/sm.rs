//! The state machine half of the store (openraft storage v2 `RaftStateMachine`).
//!
//! The state is held in memory behind [`SharedState`] (the admin service reads it there) and
//! persisted as snapshots in RocksDB; see the module docs of `store` for the recovery story.
use super::{write_opts_sync, CF_META};
use crate::raft::{Entry, LogId, NodeId, Snapshot, SnapshotMeta, StoredMembership, TypeConfig};
use aerie_core::state::{CommandResponse, PoolState};
use anyhow::Context;
use openraft::storage::RaftStateMachine;
use openraft::{EntryPayload, OptionalSend, RaftSnapshotBuilder, StorageError, StorageIOError};
use rocksdb::{WriteBatch, DB};
use serde::{Deserialize, Serialize};
use std::io::Cursor;
use std::sync::{Arc, Mutex, RwLock};

pub(super) const KEY_SNAP_META: &[u8] = b"snapshot_meta";
pub(super) const KEY_SNAP_DATA: &[u8] = b"snapshot_data";

type SResult<T> = Result<T, StorageError<NodeId>>;

/// The applied state as the rest of the CM sees it.
#[derive(Debug, Default)]
pub struct Applied {
    pub last_applied: Option<LogId>,
    pub membership: StoredMembership,
    pub state: PoolState,
}

/// Shared, read-mostly handle on the applied state.
pub type SharedState = Arc<RwLock<Applied>>;

/// What a snapshot's bytes hold.
#[derive(Serialize, Deserialize)]
pub(super) struct SnapshotBody {
    /// Snapshot format version.
    pub(super) v: u32,
    pub(super) state: PoolState,
}

/// openraft's state machine: the applied `PoolState` in memory, shared with readers, and its
/// snapshots in RocksDB.
#[derive(Clone)]
pub struct StateMachineStore {
    db: Arc<DB>,
    shared: SharedState,
    /// Distinguishes snapshots built at the same log id.
    snapshot_seq: u64,
    /// Held while a snapshot is compared with the stored one and saved: a snapshot built
    /// from older state (by a builder, a clone of this store) must never replace a newer one
    /// installed meanwhile, or a restart after the log is purged finds entries missing.
    saving: Arc<Mutex<()>>,
}

fn read_err<E: std::error::Error + 'static>(e: E) -> StorageError<NodeId> {
    StorageError::IO {
        source: StorageIOError::read_state_machine(&e),
    }
}

impl StateMachineStore {
    /// Loads the latest snapshot, if any.
    pub(crate) fn open(db: Arc<DB>) -> anyhow::Result<Self> {
        let s = StateMachineStore {
            db,
            shared: Arc::new(RwLock::new(Applied::default())),
            snapshot_seq: 0,
            saving: Arc::new(Mutex::new(())),
        };
        if let Some((meta, data)) = s.load_snapshot().context("reading the stored snapshot")? {
            let body: SnapshotBody =
                serde_json::from_slice(&data).context("decoding the stored snapshot")?;
            let mut a = s.shared.write().unwrap_or_else(|p| p.into_inner());
            a.last_applied = meta.last_log_id;
            a.membership = meta.last_membership.clone();
            a.state = body.state;
        }
        Ok(s)
    }

    /// The handle the admin service and metrics read.
    pub fn shared(&self) -> SharedState {
        self.shared.clone()
    }

    fn cf_meta(&self) -> &rocksdb::ColumnFamily {
        self.db
            .cf_handle(CF_META)
            .expect("meta column family is created at open")
    }

    pub(super) fn load_snapshot(&self) -> anyhow::Result<Option<(SnapshotMeta, Vec<u8>)>> {
        let meta = self.db.get_cf(self.cf_meta(), KEY_SNAP_META)?;
        let data = self.db.get_cf(self.cf_meta(), KEY_SNAP_DATA)?;
        match (meta, data) {
            (Some(m), Some(d)) => Ok(Some((serde_json::from_slice(&m)?, d))),
            _ => Ok(None),
        }
    }

    /// Stores a snapshot (meta and data in one synced batch), unless the stored one already
    /// covers more of the log; returns whether it was stored.
    pub(super) fn save_snapshot(&self, meta: &SnapshotMeta, data: &[u8]) -> SResult<bool> {
        let _saving = self.saving.lock().unwrap_or_else(|p| p.into_inner());
        let write_err = |e: &dyn std::error::Error| StorageError::IO {
            source: StorageIOError::write_snapshot(
                Some(meta.signature()),
                openraft::AnyError::error(e.to_string()),
            ),
        };
        let stored: Option<SnapshotMeta> = self
            .db
            .get_cf(self.cf_meta(), KEY_SNAP_META)
            .map_err(|e| write_err(&e))?
            .and_then(|m| serde_json::from_slice(&m).ok());
        if let Some(stored) = stored {
            if stored.last_log_id > meta.last_log_id {
                tracing::info!(
                    stored = ?stored.last_log_id,
                    built = ?meta.last_log_id,
                    "a newer snapshot is already stored; this one is not saved"
                );
                return Ok(false);
            }
        }
        let m = serde_json::to_vec(meta).map_err(|e| StorageError::IO {
            source: StorageIOError::write_snapshot(Some(meta.signature()), &e),
        })?;
        let mut b = WriteBatch::default();
        b.put_cf(self.cf_meta(), KEY_SNAP_META, m);
        b.put_cf(self.cf_meta(), KEY_SNAP_DATA, data);
        self.db
            .write_opt(b, &write_opts_sync())
            .map_err(|e| StorageError::IO {
                source: StorageIOError::write_snapshot(Some(meta.signature()), &e),
            })?;
        Ok(true)
    }

    fn lock(&self) -> std::sync::RwLockWriteGuard<'_, Applied> {
        self.shared.write().unwrap_or_else(|p| p.into_inner())
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachineStore {
    async fn build_snapshot(&mut self) -> SResult<Snapshot> {
        let (data, last, membership) = {
            let a = self.shared.read().unwrap_or_else(|p| p.into_inner());
            let body = serde_json::to_vec(&SnapshotBodyRef {
                v: 1,
                state: &a.state,
            })
            .map_err(read_err)?;
            (body, a.last_applied, a.membership.clone())
        };
        // A snapshot that cannot be read back would make this CM unable to restart once the
        // log before it is purged: read it back once before it replaces the stored one.
        if let Err(e) = serde_json::from_slice::<SnapshotBody>(&data) {
            tracing::error!(error = %e, "the state does not read back from its snapshot; snapshot not saved");
            return Err(read_err(e));
        }
        let snapshot_id = match last {
            Some(l) => format!("{}-{}-{}", l.leader_id, l.index, self.snapshot_seq),
            None => format!("--{}", self.snapshot_seq),
        };
        let meta = SnapshotMeta {
            last_log_id: last,
            last_membership: membership,
            snapshot_id,
        };
        if self.save_snapshot(&meta, &data)? {
            crate::metrics::record_snapshot_built(data.len());
        }
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

/// Borrowing twin of [`SnapshotBody`] (serializes without cloning the state).
#[derive(Serialize)]
struct SnapshotBodyRef<'a> {
    v: u32,
    state: &'a PoolState,
}

impl RaftStateMachine<TypeConfig> for StateMachineStore {
    type SnapshotBuilder = Self;

    async fn applied_state(&mut self) -> SResult<(Option<LogId>, StoredMembership)> {
        let a = self.shared.read().unwrap_or_else(|p| p.into_inner());
        Ok((a.last_applied, a.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> SResult<Vec<CommandResponse>>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut a = self.lock();
        let mut out = Vec::new();
        for e in entries {
            a.last_applied = Some(e.log_id);
            match e.payload {
                EntryPayload::Blank => out.push(CommandResponse {
                    ok: true,
                    ..Default::default()
                }),
                EntryPayload::Normal(req) => out.push(a.state.apply(&req)),
                EntryPayload::Membership(m) => {
                    a.membership = StoredMembership::new(Some(e.log_id), m);
                    out.push(CommandResponse {
                        ok: true,
                        ..Default::default()
                    })
                }
            }
        }
        if let Some(l) = a.last_applied {
            crate::metrics::set_applied(l.index);
        }
        Ok(out)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.snapshot_seq += 1;
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> SResult<Box<Cursor<Vec<u8>>>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> SResult<()> {
        let data = snapshot.into_inner();
        let body: SnapshotBody = serde_json::from_slice(&data).map_err(|e| StorageError::IO {
            source: StorageIOError::read_snapshot(Some(meta.signature()), &e),
        })?;
        // Persist first: if we crash after, the restart loads this snapshot.
        self.save_snapshot(meta, &data)?;
        let mut a = self.lock();
        a.last_applied = meta.last_log_id;
        a.membership = meta.last_membership.clone();
        a.state = body.state;
        crate::metrics::record_snapshot_installed(data.len());
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> SResult<Option<Snapshot>> {
        let s = self.load_snapshot().map_err(|e| StorageError::IO {
            source: StorageIOError::read_snapshot(
                None,
                openraft::AnyError::error(format!("{e:#}")),
            ),
        })?;
        Ok(s.map(|(meta, data)| Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        }))
    }
}

//! openraft's storage conformance suite run against the RocksDB store, plus a restart check.
use crate::raft::store::{LogStore, StateMachineStore};
use crate::raft::TypeConfig;
use openraft::testing::{StoreBuilder, Suite};
use openraft::StorageError;
use tempfile::TempDir;

struct Builder;

impl StoreBuilder<TypeConfig, LogStore, StateMachineStore, TempDir> for Builder {
    async fn build(&self) -> Result<(TempDir, LogStore, StateMachineStore), StorageError<u64>> {
        let td = TempDir::new().expect("temp dir");
        let (log, sm, _) = super::open(td.path()).expect("open store");
        Ok((td, log, sm))
    }
}

#[test]
fn openraft_storage_suite() -> Result<(), StorageError<u64>> {
    Suite::test_all(Builder)?;
    Ok(())
}

/// A snapshot built from older state (a builder read the state, then a newer snapshot was
/// installed before the builder saved) must not replace the newer one: once the log before
/// the newer one is purged, a restart from the older snapshot would miss entries.
#[test]
fn an_older_snapshot_never_replaces_a_newer_one() {
    use crate::raft::{LogId, SnapshotMeta};
    let td = TempDir::new().expect("temp dir");
    let (_log, sm, _) = super::open(td.path()).expect("open store");
    let meta = |index: u64| SnapshotMeta {
        last_log_id: Some(LogId::new(openraft::CommittedLeaderId::new(1, 1), index)),
        last_membership: Default::default(),
        snapshot_id: format!("1-{index}"),
    };
    assert!(sm.save_snapshot(&meta(20), b"newer").expect("save"));
    assert!(!sm.save_snapshot(&meta(10), b"older").expect("save"));
    let (stored, data) = sm.load_snapshot().expect("load").expect("a snapshot");
    assert_eq!(stored.last_log_id.map(|l| l.index), Some(20));
    assert_eq!(data, b"newer");
    assert!(sm.save_snapshot(&meta(30), b"newest").expect("save"));
}

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

/// Issue 13.7: a synced write must not hold the async worker it was called on (the same
/// workers carry heartbeats and ad ingest). On a one-thread runtime, another task runs while
/// the vote is being synced; were the fsync done in place, it could run only afterwards.
#[test]
fn a_synced_write_lets_other_tasks_run_meanwhile() {
    use openraft::storage::RaftLogStorage;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let td = TempDir::new().expect("temp dir");
        let (mut log, _, _) = super::open(td.path()).expect("open store");
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        tokio::spawn(async move { r.store(true, Ordering::SeqCst) });
        let vote = openraft::Vote::new(3, 1);
        log.save_vote(&vote).await.expect("save vote");
        assert!(
            ran.load(Ordering::SeqCst),
            "the worker was held for the whole synced write"
        );
        assert_eq!(log.read_vote().await.expect("read"), Some(vote));
    });
}

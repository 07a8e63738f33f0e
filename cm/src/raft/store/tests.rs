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

/// The read-only audit view of a store: only committed entries, from after the purged
/// prefix, with the snapshot that covers the purge and each entry's term.
#[test]
fn the_committed_log_is_read_back_read_only_after_the_purge_with_its_snapshot() {
    use crate::raft::{Entry, EntryPayload, LogId, SnapshotMeta};
    use aerie_core::state::{Command, PoolState, Request};
    use openraft::storage::{RaftLogStorage, RaftLogStorageExt};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let td = TempDir::new().expect("temp dir");
    let id = |term: u64, index: u64| LogId::new(openraft::CommittedLeaderId::new(term, 1), index);
    let limit = |v: f64| {
        Request::new(Command::SetLimit {
            name: "l".into(),
            limit: Some(v),
        })
    };
    rt.block_on(async {
        let (mut log, sm, _) = super::open(td.path()).expect("open store");
        let mut entries = vec![Entry {
            log_id: id(1, 1),
            payload: EntryPayload::Blank,
        }];
        entries.extend((2..=5).map(|i| Entry {
            log_id: id(if i < 4 { 1 } else { 2 }, i),
            payload: EntryPayload::Normal(limit(i as f64)),
        }));
        log.blocking_append(entries).await.expect("append");
        log.save_committed(Some(id(2, 4))).await.expect("committed");
        let mut state = PoolState::default();
        state.apply(&limit(2.0));
        state.apply(&limit(3.0));
        let meta = SnapshotMeta {
            last_log_id: Some(id(1, 3)),
            last_membership: Default::default(),
            snapshot_id: "1-3".into(),
        };
        let body = serde_json::to_vec(&super::sm::SnapshotBody {
            v: 1,
            state: state.clone(),
        })
        .expect("encode");
        assert!(sm.save_snapshot(&meta, &body).expect("save"));
        log.purge(id(1, 2)).await.expect("purge");
        // Read while the store is still open, as of now; then again once it is closed.
        let open = super::read_committed(td.path()).expect("read while open");
        drop((log, sm));
        let read = super::read_committed(td.path()).expect("read");
        assert_eq!(open, read);
        assert_eq!(read.committed, Some(4));
        assert_eq!(read.last_purged, Some(2));
        let snap = read.snapshot.expect("the snapshot");
        assert_eq!((snap.index, snap.term), (Some(3), Some(1)));
        assert_eq!(snap.state, state);
        let got: Vec<(u64, u64, Option<Request>)> = read
            .entries
            .into_iter()
            .map(|e| (e.index, e.term, e.request))
            .collect();
        // Entry 5 is not committed; 1 and 2 were purged.
        assert_eq!(
            got,
            vec![(3, 1, Some(limit(3.0))), (4, 2, Some(limit(4.0)))]
        );
    });
    let e = super::read_committed(&td.path().join("nope")).unwrap_err();
    assert!(format!("{e:#}").contains("nope"), "{e:#}");
}

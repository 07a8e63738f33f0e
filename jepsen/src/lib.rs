//! aerie-jepsen: fault-injection tests of the whole cluster, in Jepsen's spirit.
//!
//! Real `aerie-cm` processes each run in their own Linux network namespace on a bridge
//! ([`net`]); a nemesis cuts and heals real links while clients write and read through every
//! CM ([`workload`]); everything is recorded in a [`history`] that pure [`checker`]s judge.
//! Aerie exists because HTCondor's HA (src/condor_had/HADStateMachine.cpp with
//! src/condor_had/ReplicatorStateMachine.cpp) can lose accounting and run two negotiators on a
//! partition; these tests are where that promise is held to account. See jepsen/README.md.
#![warn(missing_docs)]

pub mod checker;
pub mod checker_jobs;
pub mod checker_pool;
pub mod clock;
pub mod disk;
pub mod history;
pub mod linear;
pub mod membership;
pub mod net;
pub mod pool;
pub mod pool_real;
pub mod replay;
pub mod results;
pub mod ring;
pub mod scenario;
pub mod slowfs;
pub mod stall;
pub mod summary;
pub mod timeline;
pub mod workload;

use aerie_tests::{Cluster, Node, TEST_ELECTION_TIMEOUT};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Starts `n` CMs (ids 1..=n) that bootstrap one cluster, CM `i` inside `net`'s namespace
/// `cm<i>` at [`net::Net::cm_addr`]`(i)`, through `ip netns exec`. The returned [`Cluster`]
/// kills, pauses and restarts them as it does loopback CMs; dropping it kills them all.
/// With `disks`, each CM's data directory is a file system of its own mounted there (drop
/// the cluster before them). With `clocks`, each CM runs under libfaketime with its own
/// timestamp file ([`clock::Clocks`]).
pub fn start_cluster(
    net: &net::Net,
    daemon: PathBuf,
    n: u64,
    disks: Option<&mut disk::Disks>,
    clocks: Option<&clock::Clocks>,
) -> anyhow::Result<Cluster> {
    start_cluster_with(net, daemon, n, disks, clocks, &[])
}

/// Like [`start_cluster`], every CM started with the extra environment `env` too (e.g.
/// [`pool::CM_ENV`]'s fast negotiation cycles).
pub fn start_cluster_with(
    net: &net::Net,
    daemon: PathBuf,
    n: u64,
    mut disks: Option<&mut disk::Disks>,
    clocks: Option<&clock::Clocks>,
    env: &[(&str, &str)],
) -> anyhow::Result<Cluster> {
    aerie_tests::test_pool();
    let dir = tempfile::Builder::new().prefix("aerie-jepsen-").tempdir()?;
    let peers = (1..=n)
        .map(|id| format!("{id}={}", net::Net::cm_addr(id)))
        .collect::<Vec<_>>()
        .join(",");
    let mut nodes = BTreeMap::new();
    for id in 1..=n {
        let data_dir = match disks.as_deref_mut() {
            // Its log, `<data_dir>.log`, stays outside the small file system.
            Some(d) => d.mount(id)?,
            None => dir.path().join(format!("node{id}")),
        };
        let args = vec![
            "netns".into(),
            "exec".into(),
            net.cm_ns(id),
            daemon.display().to_string(),
            "--id".into(),
            id.to_string(),
            "--listen".into(),
            net::Net::cm_addr(id),
            "--bootstrap".into(),
            "--peers".into(),
            peers.clone(),
            "--data-dir".into(),
            data_dir.display().to_string(),
        ];
        nodes.insert(
            id,
            Node {
                id,
                addr: net::Net::cm_addr(id),
                data_dir,
                args,
                child: None,
                env: Vec::new(),
            },
        );
    }
    let mut cluster = Cluster {
        // `ip netns exec` execs the daemon: the child's pid is the daemon's, so kill -9,
        // SIGSTOP and SIGCONT reach it.
        bin: PathBuf::from("ip"),
        dir,
        nodes,
        env: vec![
            (
                "AERIE_ELECTION_TIMEOUT".into(),
                TEST_ELECTION_TIMEOUT.into(),
            ),
            ("AERIE_LOG".into(), "warn,aerie_cm=info".into()),
        ],
    };
    cluster
        .env
        .extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    for id in 1..=n {
        for (k, v) in clocks.map(|c| c.env(id)).unwrap_or_default() {
            cluster.set_node_env(id, &k, Some(&v));
        }
        cluster.restart(id)?;
    }
    Ok(cluster)
}

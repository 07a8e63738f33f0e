//! aerie-tests: a harness that runs real `aerie-cm` processes on loopback.
//!
//! [`Cluster`] starts N CMs on random free ports with their own data directories, can kill
//! (`SIGKILL`), stop (`SIGTERM`) and restart them, add fresh `--join` nodes, and always kills
//! every child it started when dropped (also when a test panics). The admin helpers talk gRPC
//! directly, with a deadline on every call. [`pool`] adds real execute nodes and access points
//! (`aerie-node execute`, `aerie-node access-point`) beside them, for jobs end to end.
#![warn(missing_docs)]
pub mod pool;
pub mod sim;
pub mod synthetic;

/// The test process's pool credentials (see `aerie_security::testing`).
pub use aerie_security::testing::test_pool;

use aerie_core::admin::{AdminQuery, PolicyQuery, Query};
use aerie_core::state::{Command, Request};
use aerie_proto::admin::{self as pb, admin_client::AdminClient};
use anyhow::{anyhow, bail, Context};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{self, Child, Stdio};
use std::time::{Duration, Instant};
use tonic::transport::Channel;

/// Where the daemon binary is: `AERIE_CM_BIN`, else the test wrapper built by cargo.
pub fn daemon_bin(default: &str) -> PathBuf {
    std::env::var_os("AERIE_CM_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(default))
}

/// The election timeout clusters in tests use unless they set one (ms, `MIN-MAX`).
pub const TEST_ELECTION_TIMEOUT: &str = "800-1600";

/// The production default (see `cm/src/raft/config.rs`), for benchmarks.
pub const PRODUCTION_ELECTION_TIMEOUT: &str = "400-800";

/// A free TCP port on 127.0.0.1 (bound and released; good enough for tests).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    l.local_addr().expect("local addr").port()
}

/// `n` distinct free TCP ports on 127.0.0.1: every listener is held until all are bound, so
/// the kernel cannot hand the same port out twice (two CMs of one cluster on one port would
/// leave one of them unreachable).
pub fn free_ports(n: usize) -> Vec<u16> {
    let held: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port"))
        .collect();
    held.iter()
        .map(|l| l.local_addr().expect("local addr").port())
        .collect()
}

/// One CM process and how to restart it.
pub struct Node {
    /// Its Raft node id.
    pub id: u64,
    /// Its gRPC address (127.0.0.1:port).
    pub addr: String,
    /// Its RocksDB directory (its log sits beside it, `nodeN.log`).
    pub data_dir: PathBuf,
    /// The `serve` arguments it is (re)started with.
    pub args: Vec<String>,
    /// The running process, `None` while stopped.
    pub child: Option<Child>,
    /// Environment of this node only, over the cluster's (`None` unsets a variable).
    pub env: Vec<(String, Option<String>)>,
}

/// A set of CM processes; dropping it kills them all.
pub struct Cluster {
    /// The daemon binary.
    pub bin: PathBuf,
    /// The directory holding every node's data (removed on drop).
    pub dir: tempfile::TempDir,
    /// The nodes by id.
    pub nodes: BTreeMap<u64, Node>,
    /// Environment every node is started with (knobs).
    pub env: Vec<(String, String)>,
}

impl Cluster {
    /// Starts `n` CMs (ids 1..=n) that bootstrap one cluster. `env` adds knobs
    /// (e.g. `AERIE_SNAPSHOT_LOGS`).
    pub fn start(bin: PathBuf, n: u64, env: &[(&str, &str)]) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("aerie-cluster-")
            .tempdir()?;
        Self::start_in(dir, bin, n, env, &|_| Vec::new())
    }

    /// Like [`Cluster::start`], every CM reading the HTCondor-syntax configuration `config`
    /// (`--config`; e.g. short `CLASSAD_LIFETIME` or relay intervals for tests).
    pub fn start_with_config(
        bin: PathBuf,
        n: u64,
        env: &[(&str, &str)],
        config: &str,
    ) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("aerie-cluster-")
            .tempdir()?;
        let path = dir.path().join("aerie.conf");
        std::fs::write(&path, config)?;
        let args = vec!["--config".into(), path.display().to_string()];
        Self::start_in(dir, bin, n, env, &|_| args.clone())
    }

    /// Like [`Cluster::start_with_config`], each CM reading a file of its own,
    /// `config(id)`, written to [`Cluster::config_path`] (to be edited for `cmctl reconfig`).
    pub fn start_with_configs(
        bin: PathBuf,
        n: u64,
        env: &[(&str, &str)],
        config: impl Fn(u64) -> String,
    ) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("aerie-cluster-")
            .tempdir()?;
        let mut paths = Vec::new();
        for id in 1..=n {
            let path = dir.path().join(format!("node{id}.conf"));
            std::fs::write(&path, config(id))?;
            paths.push(vec!["--config".into(), path.display().to_string()]);
        }
        Self::start_in(dir, bin, n, env, &|id| paths[id as usize - 1].clone())
    }

    /// The configuration file of node `id` started by [`Cluster::start_with_configs`].
    pub fn config_path(&self, id: u64) -> PathBuf {
        self.dir.path().join(format!("node{id}.conf"))
    }

    fn start_in(
        dir: tempfile::TempDir,
        bin: PathBuf,
        n: u64,
        env: &[(&str, &str)],
        extra_args: &dyn Fn(u64) -> Vec<String>,
    ) -> anyhow::Result<Self> {
        // The pool's credentials, inherited by every CM (AERIE_CREDENTIALS; each CM uses
        // its own cmN certificate).
        aerie_security::testing::test_pool();
        let mut c = Cluster {
            bin,
            dir,
            nodes: BTreeMap::new(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        // Tests run several clusters at once on two cores, where a CM can stall for hundreds
        // of milliseconds; twice the production election timeout keeps spurious elections
        // (which tests would misread as failures) rare. Benchmarks pass the production value.
        if !c.env.iter().any(|(k, _)| k == "AERIE_ELECTION_TIMEOUT") {
            c.env.push((
                "AERIE_ELECTION_TIMEOUT".into(),
                TEST_ELECTION_TIMEOUT.into(),
            ));
        }
        // How a cluster formed is logged at debug level; a test that fails on a missing
        // leader then shows each CM's view of the bootstrap.
        if !c.env.iter().any(|(k, _)| k == "AERIE_LOG") {
            c.env.push((
                "AERIE_LOG".into(),
                "warn,aerie_cm=info,aerie_cm::raft::bootstrap=debug".into(),
            ));
        }
        let addrs: BTreeMap<u64, String> = (1..=n)
            .zip(free_ports(n as usize))
            .map(|(id, port)| (id, format!("127.0.0.1:{port}")))
            .collect();
        let peers = addrs
            .iter()
            .map(|(id, a)| format!("{id}={a}"))
            .collect::<Vec<_>>()
            .join(",");
        for (id, addr) in &addrs {
            let data_dir = c.dir.path().join(format!("node{id}"));
            let mut args = vec![
                "--id".into(),
                id.to_string(),
                "--listen".into(),
                addr.clone(),
                "--bootstrap".into(),
                "--peers".into(),
                peers.clone(),
                "--data-dir".into(),
                data_dir.display().to_string(),
            ];
            args.extend(extra_args(*id));
            c.nodes.insert(
                *id,
                Node {
                    id: *id,
                    addr: addr.clone(),
                    data_dir,
                    args,
                    child: None,
                    env: Vec::new(),
                },
            );
            c.spawn(*id)?;
        }
        Ok(c)
    }

    /// Starts a fresh node with `--join` (no bootstrap); returns its id and address.
    pub fn spawn_joiner(&mut self, id: u64) -> anyhow::Result<String> {
        let addr = format!("127.0.0.1:{}", free_port());
        let data_dir = self.dir.path().join(format!("node{id}"));
        let args = vec![
            "--id".into(),
            id.to_string(),
            "--listen".into(),
            addr.clone(),
            "--join".into(),
            "--data-dir".into(),
            data_dir.display().to_string(),
        ];
        self.nodes.insert(
            id,
            Node {
                id,
                addr: addr.clone(),
                data_dir,
                args,
                child: None,
                env: Vec::new(),
            },
        );
        self.spawn(id)?;
        Ok(addr)
    }

    fn spawn(&mut self, id: u64) -> anyhow::Result<()> {
        let bin = self.bin.clone();
        let env = self.env.clone();
        let node = self
            .nodes
            .get_mut(&id)
            .ok_or_else(|| anyhow!("no node {id}"))?;
        std::fs::create_dir_all(&node.data_dir)?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(node.data_dir.with_extension("log"))?;
        let mut cmd = process::Command::new(&bin);
        cmd.args(&node.args)
            .env("AERIE_ADMIN_TIMEOUT", "3000")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log));
        for (k, v) in env {
            cmd.env(k, v);
        }
        for (k, v) in &node.env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        let child = cmd.spawn().with_context(|| {
            format!(
                "cannot start {} (build it: cargo build -p aerie-tests)",
                bin.display()
            )
        })?;
        node.child = Some(child);
        Ok(())
    }

    /// The address of node `id` (empty if there is none).
    pub fn addr(&self, id: u64) -> String {
        self.nodes
            .get(&id)
            .map(|n| n.addr.clone())
            .unwrap_or_default()
    }

    /// Every node id, running or not.
    pub fn ids(&self) -> Vec<u64> {
        self.nodes.keys().copied().collect()
    }

    /// Addresses of the nodes currently running.
    pub fn running(&self) -> Vec<(u64, String)> {
        self.nodes
            .values()
            .filter(|n| n.child.is_some())
            .map(|n| (n.id, n.addr.clone()))
            .collect()
    }

    /// Sets (or with `None` unsets) an environment variable of node `id` for its next start.
    pub fn set_node_env(&mut self, id: u64, key: &str, value: Option<&str>) {
        if let Some(n) = self.nodes.get_mut(&id) {
            n.env.retain(|(k, _)| k != key);
            n.env.push((key.to_string(), value.map(str::to_string)));
        }
    }

    /// `SIGSTOP`: the node freezes (no heartbeats, no answers) until [`Cluster::resume`].
    pub fn pause(&self, id: u64) {
        self.signal(id, "-STOP");
    }

    /// `SIGCONT` after [`Cluster::pause`].
    pub fn resume(&self, id: u64) {
        self.signal(id, "-CONT");
    }

    fn signal(&self, id: u64, sig: &str) {
        if let Some(c) = self.nodes.get(&id).and_then(|n| n.child.as_ref()) {
            let _ = process::Command::new("kill")
                .arg(sig)
                .arg(c.id().to_string())
                .status();
        }
    }

    /// `kill -9`.
    pub fn kill(&mut self, id: u64) {
        if let Some(n) = self.nodes.get_mut(&id) {
            if let Some(mut c) = n.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }

    /// SIGTERM and wait (up to 10 s, then SIGKILL).
    pub fn stop(&mut self, id: u64) {
        if let Some(n) = self.nodes.get_mut(&id) {
            if let Some(mut c) = n.child.take() {
                if sigterm(&mut c, Duration::from_secs(10)).is_none() {
                    let _ = c.kill();
                    let _ = c.wait();
                }
            }
        }
    }

    /// Starts a stopped node again with the same arguments and data directory.
    pub fn restart(&mut self, id: u64) -> anyhow::Result<()> {
        self.kill(id);
        self.spawn(id)
    }

    /// The daemon log of a node (for failure messages).
    pub fn log(&self, id: u64) -> String {
        self.nodes
            .get(&id)
            .and_then(|n| std::fs::read_to_string(n.data_dir.with_extension("log")).ok())
            .unwrap_or_default()
    }

    /// The data directory of node `id`.
    pub fn data_dir(&self, id: u64) -> &Path {
        &self.nodes[&id].data_dir
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let ids: Vec<u64> = self.nodes.keys().copied().collect();
        for id in ids {
            self.kill(id);
        }
    }
}

/// Sends SIGTERM to `child` and waits up to `within` for it to exit; its exit status, or
/// `None` if it is still running (the caller decides whether to SIGKILL it).
pub(crate) fn sigterm(child: &mut Child, within: Duration) -> Option<process::ExitStatus> {
    let _ = process::Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let deadline = Instant::now() + within;
    loop {
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A lazily connected gRPC channel to the CM at `addr` (`host:port`; mutual TLS with the test
/// pool's credentials): 1 s to connect, 10 s per call.
pub fn channel(addr: &str) -> Channel {
    aerie_security::testing::endpoint(addr, aerie_security::Role::Cm)
        .connect_timeout(Duration::from_secs(1))
        .timeout(Duration::from_secs(10))
        .connect_lazy()
}

/// A client for one CM's collector (1 s to connect, 10 s per call).
pub fn collector_client(
    addr: &str,
) -> aerie_proto::collector::collector_client::CollectorClient<Channel> {
    aerie_proto::collector::collector_client::CollectorClient::new(channel(addr))
        .max_decoding_message_size(aerie_security::transport::MAX_POOL_REPLY)
}

/// The ads of `ad_type` (`Machine`, `Submitter`, `Any`...) matching `constraint` (empty: all)
/// that the collector of the CM at `addr` holds, parsed; `projection` names the attributes
/// to return (empty: all).
pub async fn collector_ads(
    addr: &str,
    ad_type: &str,
    constraint: &str,
    projection: &[&str],
) -> anyhow::Result<Vec<classad::ClassAd>> {
    let ads = collector_client(addr)
        .query(aerie_proto::collector::QueryRequest {
            ad_type: ad_type.into(),
            constraint: constraint.into(),
            projection: projection.iter().map(|a| a.to_string()).collect(),
            absent: false,
            limit: 0,
        })
        .await?
        .into_inner()
        .ads;
    ads.iter()
        .map(|t| classad::parse_ad(t).map_err(|e| anyhow!("an ad from {addr} does not parse: {e}")))
        .collect()
}

/// A client for one CM's admin API.
pub async fn admin(addr: &str) -> anyhow::Result<AdminClient<Channel>> {
    let ch = aerie_security::testing::endpoint(addr, aerie_security::Role::Cm)
        .connect_timeout(Duration::from_secs(1))
        .connect_lazy();
    Ok(AdminClient::new(ch).max_decoding_message_size(aerie_security::transport::MAX_POOL_REPLY))
}

/// Submits a command through `addr`; the CM forwards to the leader.
pub async fn write(addr: &str, cmd: &Command) -> anyhow::Result<pb::WriteReply> {
    let mut c = admin(addr).await?;
    let mut req = tonic::Request::new(pb::WriteRequest {
        command_json: serde_json::to_string(&Request::new(cmd.clone()))?,
        forwarded: false,
    });
    req.set_timeout(Duration::from_secs(10));
    let r = tokio::time::timeout(Duration::from_secs(12), c.write(req))
        .await
        .map_err(|_| anyhow!("write via {addr}: no answer in 12 s"))?
        .map_err(|s| anyhow!("write via {addr}: {}", s.message()))?;
    Ok(r.into_inner())
}

/// Retries a write through the given CMs until it is acknowledged or `within` passes.
pub async fn write_retry(
    addrs: &[String],
    cmd: &Command,
    within: Duration,
) -> anyhow::Result<pb::WriteReply> {
    let deadline = Instant::now() + within;
    let mut last = String::new();
    let mut i = 0usize;
    while Instant::now() < deadline {
        let a = &addrs[i % addrs.len()];
        i += 1;
        match write(a, cmd).await {
            Ok(r) if r.ok => return Ok(r),
            Ok(r) => bail!("refused: {}", r.error),
            Err(e) => last = format!("{e:#}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("write not acknowledged within {within:?}: {last}")
}

/// A linearizable query (`stale` false) through `addr`, retried for up to `within`: on a
/// loaded machine the leader may change under it.
pub async fn query_retry<Q: AdminQuery + Clone>(
    addr: &str,
    q: Q,
    within: Duration,
) -> anyhow::Result<Q::Answer> {
    let kind: Query = q.clone().into();
    let what = format!("a linearizable {} read", kind.name());
    eventually(&what, within, || {
        let q = q.clone();
        async move { query(addr, q, false).await.map(Some) }
    })
    .await
}

/// A query through `addr`, decoded as its typed answer.
pub async fn query<Q: AdminQuery>(addr: &str, q: Q, stale: bool) -> anyhow::Result<Q::Answer> {
    let mut c = admin(addr).await?;
    let query: Query = q.into();
    let mut req = tonic::Request::new(pb::QueryRequest {
        query_json: serde_json::to_string(&query)?,
        stale,
        forwarded: false,
    });
    req.set_timeout(Duration::from_secs(10));
    let r = tokio::time::timeout(Duration::from_secs(12), c.query(req))
        .await
        .map_err(|_| anyhow!("query via {addr}: no answer in 12 s"))?
        .map_err(|s| anyhow!("query via {addr}: {}", s.message()))?;
    serde_json::from_str(&r.into_inner().answer_json)
        .with_context(|| format!("decoding the {} answer via {addr}", query.name()))
}

/// The cluster status as the CM at `addr` sees it (2 s deadline).
pub async fn status(addr: &str) -> anyhow::Result<pb::StatusReply> {
    let mut c = admin(addr).await?;
    let mut req = tonic::Request::new(pb::StatusRequest {});
    req.set_timeout(Duration::from_secs(2));
    let r = tokio::time::timeout(Duration::from_secs(3), c.status(req))
        .await
        .map_err(|_| anyhow!("status of {addr}: no answer"))?
        .map_err(|s| anyhow!("status of {addr}: {}", s.message()))?;
    Ok(r.into_inner())
}

/// Waits until some running node reports itself leader (and a majority agree); returns its id.
pub async fn wait_leader(addrs: &[(u64, String)], within: Duration) -> anyhow::Result<u64> {
    let deadline = Instant::now() + within;
    loop {
        let mut votes: BTreeMap<u64, usize> = BTreeMap::new();
        let mut self_leader = None;
        for (id, a) in addrs {
            if let Ok(s) = status(a).await {
                if let Some(l) = s.leader {
                    *votes.entry(l.id).or_default() += 1;
                    if l.id == *id {
                        self_leader = Some(*id);
                    }
                }
            }
        }
        if let Some(l) = self_leader {
            if votes.get(&l).copied().unwrap_or(0) * 2 > addrs.len() {
                return Ok(l);
            }
        }
        if Instant::now() > deadline {
            bail!("no leader within {within:?} (views: {votes:?})");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// [`wait_leader`], then until every node of `addrs` sees a leader and all of them as
/// voters: a freshly started cluster has a leader before its last CM has joined, and a test
/// that kills the leader in between leaves one voter of two, with no quorum to elect another.
pub async fn wait_formed(addrs: &[(u64, String)], within: Duration) -> anyhow::Result<u64> {
    let leader = wait_leader(addrs, within).await?;
    for (_, a) in addrs {
        let n = addrs.len();
        eventually("every CM a voter", within, || async move {
            let s = status(a).await?;
            let voters = s.members.iter().filter(|m| m.voter).count();
            Ok((s.leader.is_some() && voters == n).then_some(()))
        })
        .await?;
    }
    wait_leader(addrs, within).await.or(Ok(leader))
}

/// Polls `f` until it returns `Ok(Some(v))` or `within` passes.
pub async fn eventually<T, F, Fut>(what: &str, within: Duration, f: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
{
    eventually_every(what, within, Duration::from_millis(50), f).await
}

/// Like [`eventually`], polling every `every` (for checks that start a process, such as a
/// `cmctl` run).
pub async fn eventually_every<T, F, Fut>(
    what: &str,
    within: Duration,
    every: Duration,
    mut f: F,
) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
{
    let deadline = Instant::now() + within;
    let mut last = String::from("condition false");
    loop {
        match f().await {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => {}
            Err(e) => last = format!("{e:#}"),
        }
        if Instant::now() > deadline {
            bail!("{what}: not true within {within:?} ({last})");
        }
        tokio::time::sleep(every).await;
    }
}

/// `SetLimit name = value`, a cheap, checkable write.
pub fn set_limit(name: &str, v: f64) -> Command {
    Command::SetLimit {
        name: name.into(),
        limit: Some(v),
    }
}

/// The limits map of a node's state (stale or linearizable).
pub async fn limits(addr: &str, stale: bool) -> anyhow::Result<BTreeMap<String, f64>> {
    Ok(query(addr, PolicyQuery, stale).await?.limits)
}

/// Now, in Unix seconds (times in commands the CMs compare with their clocks).
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Runs the `cmctl` binary `bin` (`env!("CARGO_BIN_EXE_aerie-cmctl")`) with `args` against the
/// CMs `cms` (`AERIE_CMS`), feeding it `stdin` when given; returns its exit code, standard
/// output and standard error.
pub fn run_cmctl(
    bin: &str,
    cms: &[String],
    args: &[&str],
    stdin: Option<&str>,
) -> (i32, String, String) {
    use std::io::Write;
    aerie_security::testing::test_pool();
    let mut child = process::Command::new(bin)
        .args(args)
        .env("AERIE_CMS", cms.join(","))
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run cmctl");
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes())
            .expect("write cmctl's stdin");
    }
    let out = child.wait_with_output().expect("wait for cmctl");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

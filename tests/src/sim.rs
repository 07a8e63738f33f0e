//! A simulated pool (`aerie-node simulate`) as a child process of a test or benchmark, and
//! collector queries over what it advertised.
use aerie_proto::negotiation::{
    access_point_client::AccessPointClient, startd_client::StartdClient,
};
use anyhow::Context;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tonic::transport::Channel;

/// The simulator process; killed when dropped (also when a test panics).
pub struct Sim {
    /// The `aerie-node simulate` process.
    pub child: Child,
    /// The `aerie-node` binary it runs (also used for `check-claims`).
    pub bin: PathBuf,
    /// The startds' claims log (`--claims-log`).
    pub claims_log: PathBuf,
    /// Its stderr (the log lines and status lines).
    pub log: PathBuf,
    /// Where its AccessPoint and Startd gRPC services listen (`host:port`), when it was
    /// started with [`SimOptions::listen`]; otherwise it picked an ephemeral port itself.
    pub addr: Option<String>,
    /// Where it keeps its slots' current claim ids, when started with
    /// [`SimOptions::claim_ids`].
    pub claim_ids_file: Option<PathBuf>,
}

/// How to start a simulator beyond the shape of its pool.
#[derive(Debug, Default, Clone, Copy)]
pub struct SimOptions<'a> {
    /// Listen on a free loopback port chosen here (`--listen`), so that the test knows the
    /// address of the simulator's own gRPC services ([`Sim::addr`]).
    pub listen: bool,
    /// Keep the slots' current claim ids in a file (`--dump-claim-ids`, read with
    /// [`Sim::claim_ids`]), so that a test can act as the leader.
    pub claim_ids: bool,
    /// Extra environment, e.g. `("AERIE_LOG", "info,aerie_node=debug")`.
    pub env: &'a [(&'a str, &'a str)],
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sim {
    /// Starts `bin simulate` against `cms`, with its claims log and stderr in `dir`; `extra`
    /// gives the pool's shape (`--slots`, `--jobs`, `--users`...).
    pub fn start(bin: &str, dir: &Path, cms: &[String], extra: &[&str]) -> anyhow::Result<Sim> {
        Self::start_with(bin, dir, cms, extra, SimOptions::default())
    }

    /// Like [`Sim::start`], with a known listen address, its claim ids in a file or extra
    /// environment.
    pub fn start_with(
        bin: &str,
        dir: &Path,
        cms: &[String],
        extra: &[&str],
        opts: SimOptions,
    ) -> anyhow::Result<Sim> {
        let claims_log = dir.join("claims.log");
        let log = dir.join("simulate.log");
        let out = std::fs::File::create(&log).context("simulator log")?;
        let addr = opts
            .listen
            .then(|| format!("127.0.0.1:{}", crate::free_port()));
        let claim_ids_file = opts.claim_ids.then(|| dir.join("claim_ids.json"));
        aerie_security::testing::test_pool();
        let mut cmd = Command::new(bin);
        cmd.arg("simulate")
            .arg("--cms")
            .arg(cms.join(","))
            .arg("--claims-log")
            .arg(&claims_log)
            .args(["--domain", "pool.example"])
            // Frequent full refreshes unless the caller picks its own interval.
            .args(if extra.contains(&"--update-interval") {
                &[][..]
            } else {
                &["--update-interval", "1"][..]
            });
        if let Some(a) = &addr {
            cmd.args(["--listen", a]);
        }
        if let Some(f) = &claim_ids_file {
            cmd.arg("--dump-claim-ids").arg(f);
        }
        let child = cmd
            .args(extra)
            .envs(opts.env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(out))
            .spawn()
            .with_context(|| format!("cannot start {bin} simulate"))?;
        Ok(Sim {
            child,
            bin: PathBuf::from(bin),
            claims_log,
            log,
            addr,
            claim_ids_file,
        })
    }

    /// What the simulator logged on stderr so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// A channel to the simulator's services, checking it holds `role` (it holds both the
    /// execute and the access-point role).
    fn channel(&self, role: aerie_security::Role) -> Channel {
        aerie_security::testing::endpoint(self.grpc_addr(), role)
            .connect_timeout(Duration::from_secs(1))
            .timeout(Duration::from_secs(10))
            .connect_lazy()
    }

    /// The address of its gRPC services; panics unless started with [`SimOptions::listen`].
    pub fn grpc_addr(&self) -> &str {
        self.addr
            .as_deref()
            .expect("the simulator was started without SimOptions::listen")
    }

    /// A client for the simulator's access point (idle jobs, grants).
    pub fn access_point(&self) -> AccessPointClient<Channel> {
        AccessPointClient::new(self.channel(aerie_security::Role::AccessPoint))
    }

    /// A client for the simulator's startds (claim and release requests).
    pub fn startd(&self) -> StartdClient<Channel> {
        StartdClient::new(self.channel(aerie_security::Role::Execute))
    }

    /// The slots' current claim ids (`{slot name: claim id}`, the capabilities a leader's
    /// grants carry and the collector never returns), once the simulator has written them
    /// (within `within`); only when started with [`SimOptions::claim_ids`].
    pub async fn claim_ids(&self, within: Duration) -> anyhow::Result<BTreeMap<String, String>> {
        let path = self
            .claim_ids_file
            .as_deref()
            .context("the simulator was started without SimOptions::claim_ids")?;
        crate::eventually("the simulator's claim ids", within, || async {
            let text = std::fs::read_to_string(path)?;
            Ok(Some(serde_json::from_str(&text)?))
        })
        .await
    }

    /// SIGTERM (the simulator invalidates its ads), then its exit code; `None` if it did not
    /// exit within 10 s or died of a signal.
    pub fn terminate(&mut self) -> Option<i32> {
        crate::sigterm(&mut self.child, Duration::from_secs(10)).and_then(|s| s.code())
    }

    /// `aerie-node check-claims --json` on the simulator's claims log.
    pub fn check_claims(&self) -> anyhow::Result<serde_json::Value> {
        let out = Command::new(&self.bin)
            .arg("check-claims")
            .arg("--json")
            .arg(&self.claims_log)
            .output()
            .context("run check-claims")?;
        serde_json::from_slice(&out.stdout).with_context(|| {
            format!(
                "check-claims output is not JSON: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }
}

/// Claimed slots per value of `attr` (RemoteUser or AccountingGroup), as the collector of
/// the CM at `addr` sees them.
pub async fn claimed_by(addr: &str, attr: &str) -> anyhow::Result<BTreeMap<String, usize>> {
    let ads = crate::collector_ads(addr, "Machine", "State == \"Claimed\"", &[attr]).await?;
    let mut by = BTreeMap::new();
    for ad in ads {
        let v = ad.eval_attr(attr).as_str().unwrap_or_default().to_string();
        *by.entry(v).or_insert(0) += 1;
    }
    Ok(by)
}

//! A private network of Linux network namespaces on one bridge, and the partitions cut in it.
//!
//! Every CM runs in its own namespace (`ip netns exec NS aerie-cm serve ...`) with one veth
//! whose other end hangs on a bridge that lives in a hub namespace; the test's clients run in a
//! namespace of their own on the same bridge. Nothing is added to the host's namespace: no
//! address, no link, no route. A partition between two members is a pair of `blackhole` routes
//! (one in each namespace), so packets are really dropped, as Jepsen's `iptables -j DROP`
//! nemesis does, with nothing but iproute2.
//!
//! HTCondor's HA daemons (src/condor_had/HADStateMachine.cpp, src/condor_had/ReplicatorStateMachine.cpp)
//! are what Aerie replaces; their failure under a partition (two negotiators) is what these
//! tests exist to rule out.
//!
//! [`Net`] deletes every namespace it created when dropped, also when a test panics; a net left
//! behind by a process that died without unwinding (`kill -9`) is deleted by the next
//! [`Net::create`], which removes every `aj<pid>x...` namespace whose process is gone.

use anyhow::{anyhow, bail, Context};
use std::collections::BTreeSet;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// The prefix of every namespace this harness creates (`aj<pid>x<seq>-<role>`).
const PREFIX: &str = "aj";

/// The port every CM listens on inside its namespace.
pub const CM_PORT: u16 = 7000;

static SEQ: AtomicU32 = AtomicU32::new(0);

/// Fails with a message saying what is missing when this machine cannot run the tests:
/// they need root (to create namespaces) and iproute2's `ip`.
pub fn preflight() -> anyhow::Result<()> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        bail!(
            "the jepsen tests create network namespaces and need root: run them as root \
             (sudo -E cargo nextest run -p aerie-jepsen), or leave the package out"
        );
    }
    let ip = Command::new("ip").arg("-V").output();
    if !ip.map(|o| o.status.success()).unwrap_or(false) {
        bail!("the jepsen tests need iproute2's `ip` on PATH (apt-get install iproute2)");
    }
    Ok(())
}

/// Runs `ip ARGS`, failing with its standard error.
fn ip(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .with_context(|| format!("running ip {}", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// The namespaces that exist, by name.
fn namespaces() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output();
    let text = out
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    text.lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// The pid a namespace name of this harness carries (`aj<pid>x...`), if it is one.
fn owner_pid(ns: &str) -> Option<u32> {
    let rest = ns.strip_prefix(PREFIX)?;
    let (pid, _) = rest.split_once('x')?;
    pid.parse().ok()
}

/// Deletes the namespaces left by harness processes that no longer run.
fn remove_stale() {
    for ns in namespaces() {
        if let Some(pid) = owner_pid(&ns) {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                tracing::warn!(ns, "deleting a namespace left by a dead test run");
                let _ = ip(&["netns", "del", &ns]);
            }
        }
    }
}

/// One test's network: a hub namespace with the bridge, one namespace per CM, one for clients.
pub struct Net {
    /// `aj<pid>x<seq>`: every namespace name of this net starts with it.
    tag: String,
    /// The CM ids, 1..=n.
    ids: Vec<u64>,
    /// Every namespace created (deleted on drop).
    created: Vec<String>,
    /// The cuts in place, as ordered pairs (a, b) with a < b.
    cuts: Mutex<BTreeSet<(u64, u64)>>,
}

impl Net {
    /// Creates the hub, `n` CM namespaces (CM `i` at 10.199.0.`i`) and the client namespace
    /// (10.199.0.100), all on one bridge.
    pub fn create(n: u64) -> anyhow::Result<Net> {
        preflight()?;
        remove_stale();
        let tag = format!(
            "{PREFIX}{}x{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::SeqCst)
        );
        let mut net = Net {
            tag,
            ids: (1..=n).collect(),
            created: Vec::new(),
            cuts: Mutex::new(BTreeSet::new()),
        };
        let hub = net.ns_named("hub");
        net.add_ns(&hub)?;
        ip(&["-n", &hub, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &hub, "link", "set", "br0", "up"])?;
        for id in net.ids.clone() {
            net.add_member(&format!("cm{id}"), &Self::cm_ip(id))?;
        }
        net.add_member("cli", &Self::client_ip())?;
        Ok(net)
    }

    fn ns_named(&self, role: &str) -> String {
        format!("{}-{role}", self.tag)
    }

    fn add_ns(&mut self, ns: &str) -> anyhow::Result<()> {
        ip(&["netns", "add", ns])?;
        self.created.push(ns.to_string());
        ip(&["-n", ns, "link", "set", "lo", "up"])
    }

    /// A namespace `role` with `eth0` at `addr`/24, its peer `v<role>` on the hub's bridge.
    fn add_member(&mut self, role: &str, addr: &str) -> anyhow::Result<()> {
        let ns = self.ns_named(role);
        let hub = self.ns_named("hub");
        self.add_ns(&ns)?;
        let peer = format!("v{role}");
        ip(&[
            "link", "add", "eth0", "netns", &ns, "type", "veth", "peer", "name", &peer, "netns",
            &hub,
        ])?;
        ip(&["-n", &hub, "link", "set", &peer, "master", "br0", "up"])?;
        ip(&[
            "-n",
            &ns,
            "addr",
            "add",
            &format!("{addr}/24"),
            "dev",
            "eth0",
        ])?;
        ip(&["-n", &ns, "link", "set", "eth0", "up"])
    }

    /// The address of CM `id` inside the net.
    pub fn cm_ip(id: u64) -> String {
        format!("10.199.0.{id}")
    }

    /// The gRPC address (`ip:port`) of CM `id`.
    pub fn cm_addr(id: u64) -> String {
        format!("{}:{CM_PORT}", Self::cm_ip(id))
    }

    /// The clients' address.
    pub fn client_ip() -> String {
        "10.199.0.100".into()
    }

    /// The namespace CM `id` runs in.
    pub fn cm_ns(&self, id: u64) -> String {
        self.ns_named(&format!("cm{id}"))
    }

    /// The namespace the clients run in.
    pub fn client_ns(&self) -> String {
        self.ns_named("cli")
    }

    /// Adds the pool's namespace (10.199.0.200, see [`Net::pool_ip`]) on the bridge, where
    /// the simulated execute nodes and access point of [`crate::pool`] run. Partitions cut
    /// CMs from CMs only: the pool reaches every CM, as execute nodes on a site network would
    /// reach a cut-off CM.
    pub fn add_pool(&mut self) -> anyhow::Result<()> {
        self.add_member("pool", &Self::pool_ip())
    }

    /// The pool's address.
    pub fn pool_ip() -> String {
        "10.199.0.200".into()
    }

    /// The namespace the pool runs in (after [`Net::add_pool`]).
    pub fn pool_ns(&self) -> String {
        self.ns_named("pool")
    }

    /// Drops every packet between CMs `a` and `b` (both directions); the clients still reach
    /// both. Cutting a pair already cut does nothing.
    pub fn cut(&self, a: u64, b: u64) -> anyhow::Result<()> {
        let pair = (a.min(b), a.max(b));
        let mut cuts = self
            .cuts
            .lock()
            .map_err(|_| anyhow!("the cut set is poisoned"))?;
        if a == b || cuts.contains(&pair) {
            return Ok(());
        }
        ip(&[
            "-n",
            &self.cm_ns(a),
            "route",
            "add",
            "blackhole",
            &format!("{}/32", Self::cm_ip(b)),
        ])?;
        ip(&[
            "-n",
            &self.cm_ns(b),
            "route",
            "add",
            "blackhole",
            &format!("{}/32", Self::cm_ip(a)),
        ])?;
        cuts.insert(pair);
        Ok(())
    }

    /// Cuts CM `id` off from every other CM (clients still reach it): a minority of one.
    pub fn isolate(&self, id: u64) -> anyhow::Result<()> {
        for &other in &self.ids {
            self.cut(id, other)?;
        }
        Ok(())
    }

    /// Cuts every link between CMs of `a` and CMs of `b` (links inside a side, and to CMs in
    /// neither, stay): two halves when `a` and `b` cover every CM, a bridge when one CM is in
    /// neither and so sees both sides.
    pub fn split(&self, a: &[u64], b: &[u64]) -> anyhow::Result<()> {
        for &x in a {
            for &y in b {
                self.cut(x, y)?;
            }
        }
        Ok(())
    }

    /// Removes every cut: the net is whole again.
    pub fn heal(&self) -> anyhow::Result<()> {
        let mut cuts = self
            .cuts
            .lock()
            .map_err(|_| anyhow!("the cut set is poisoned"))?;
        for (a, b) in cuts.clone() {
            for (x, y) in [(a, b), (b, a)] {
                let dst = format!("{}/32", Self::cm_ip(y));
                ip(&["-n", &self.cm_ns(x), "route", "del", "blackhole", &dst])
                    .map_err(|e| anyhow!("healing {a}-{b}: {e}"))?;
            }
            cuts.remove(&(a, b));
        }
        Ok(())
    }

    /// Whether any cut is in place.
    pub fn is_partitioned(&self) -> bool {
        self.cuts.lock().map(|c| !c.is_empty()).unwrap_or(true)
    }

    /// Runs `f` on a new thread that has entered the client namespace, on a single-threaded
    /// tokio runtime (every socket it opens belongs to that namespace), and returns its result.
    pub fn run_client<T, Fut, F>(&self, f: F) -> anyhow::Result<T>
    where
        F: FnOnce() -> Fut + Send,
        Fut: std::future::Future<Output = anyhow::Result<T>>,
        T: Send,
    {
        let path = format!("/var/run/netns/{}", self.client_ns());
        std::thread::scope(|s| {
            s.spawn(move || {
                enter(&path)?;
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?
                    .block_on(f())
            })
            .join()
            .map_err(|_| anyhow!("the client thread panicked"))?
        })
    }
}

/// Moves the calling thread into the network namespace bound at `path`.
fn enter(path: &str) -> anyhow::Result<()> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).with_context(|| format!("opening {path}"))?;
    // SAFETY: `f` is an open namespace file for the whole call; setns only changes the
    // calling thread's network namespace.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        bail!("setns {path}: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

impl Drop for Net {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth ends and routes inside it.
        for ns in self.created.iter().rev() {
            if let Err(e) = ip(&["netns", "del", ns]) {
                eprintln!("jepsen: cannot delete namespace {ns}: {e:#}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_pid_reads_only_harness_names() {
        assert_eq!(owner_pid("aj1234x0-cm1"), Some(1234));
        assert_eq!(owner_pid("aj1234x12-hub"), Some(1234));
        assert_eq!(owner_pid("ajax-cm1"), None);
        assert_eq!(owner_pid("docker-ns"), None);
    }
}

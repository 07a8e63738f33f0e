//! A simulated pool (`aerie-node simulate`) as a child process of a test or benchmark, and
//! collector queries over what it advertised.
use aerie_proto::collector as cpb;
use anyhow::Context;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The simulator process; killed when dropped (also when a test panics).
pub struct Sim {
    pub child: Child,
    pub bin: PathBuf,
    pub claims_log: PathBuf,
    pub log: PathBuf,
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
        let claims_log = dir.join("claims.log");
        let log = dir.join("simulate.log");
        let out = std::fs::File::create(&log).context("simulator log")?;
        let child = Command::new(bin)
            .arg("simulate")
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
            })
            .args(extra)
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
        })
    }

    /// What the simulator logged so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
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
    let ads = crate::collector_client(addr)
        .query(cpb::QueryRequest {
            ad_type: "Machine".into(),
            constraint: "State == \"Claimed\"".into(),
            projection: vec![attr.into()],
            absent: false,
            limit: 0,
        })
        .await?
        .into_inner()
        .ads;
    let mut by = BTreeMap::new();
    for ad in ads {
        let v = ad
            .lines()
            .find_map(|l| {
                let (n, v) = l.split_once('=')?;
                n.trim()
                    .eq_ignore_ascii_case(attr)
                    .then(|| v.trim().trim_matches('"').to_string())
            })
            .unwrap_or_default();
        *by.entry(v).or_insert(0) += 1;
    }
    Ok(by)
}

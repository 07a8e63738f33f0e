//! This CM's configuration file as a negotiation policy, and its agreement with the
//! replicated one.
//!
//! HTCondor's negotiator re-reads its configuration on `condor_reconfig`
//! (`condor_daemon_core.V6/daemon_core_main.cpp`, `dc_reconfig`; the negotiator's
//! `Matchmaker::reinitialize` in `condor_negotiator.V6/matchmaker.cpp`). Here the policy a
//! leader negotiates with is replicated (`aerie_core::state::negotiation_policy`), so a file
//! only proposes: the first leader seeds the policy from its file (`leader/policy.rs`), and
//! `cmctl reconfig` makes one CM re-read its file and propose it ([`FilePolicy::reread`],
//! `admin/`). A CM whose file disagrees with the policy in force never overrides it silently:
//! [`watch`] logs a warning naming the knobs that differ, once per policy version and file.
use crate::raft::store::SharedState;
use aerie_core::state::negotiation_policy::{config_knobs, differing};
use aerie_core::state::NegotiationPolicy;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Policy knobs by name, as [`config_knobs`] reads them.
pub type Knobs = BTreeMap<String, String>;

/// How often [`watch`] looks at the replicated policy.
const WATCH_EVERY: Duration = Duration::from_secs(2);

/// At most this many knob names in one warning.
const NAMED: usize = 12;

/// This CM's configuration file and the policy knobs it last read from it.
#[derive(Debug)]
pub struct FilePolicy {
    path: Option<PathBuf>,
    current: Mutex<Option<(u64, Knobs)>>,
}

impl FilePolicy {
    /// The policy of `cfg`, the file at `path` as the daemon loaded it (`None`: the CM runs
    /// without a file, and neither seeds nor proposes a policy). A knob the negotiator
    /// refuses is an error naming it.
    pub fn new(
        path: Option<PathBuf>,
        cfg: Option<&aerie_config::Config>,
    ) -> anyhow::Result<Arc<Self>> {
        let current = match cfg {
            Some(c) => Some((
                1,
                config_knobs(c).map_err(|e| anyhow::anyhow!("negotiation policy: {e}"))?,
            )),
            None => None,
        };
        Ok(Arc::new(FilePolicy {
            path,
            current: Mutex::new(current),
        }))
    }

    /// The file, if the CM has one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The knobs last read, and how many times the file was read (changes on each
    /// [`FilePolicy::reread`]).
    pub fn knobs(&self) -> Option<(u64, Knobs)> {
        self.current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Reads the file again (`cmctl reconfig`); on success its knobs become the current ones.
    /// The error names the file and, for a bad knob, the knob.
    pub fn reread(&self) -> Result<Knobs, String> {
        let Some(path) = &self.path else {
            return Err("this CM runs without a configuration file (--config)".into());
        };
        let cfg = aerie_config::Config::load(
            path,
            &aerie_config::LoadOptions::for_subsystem("NEGOTIATOR"),
        )
        .map_err(|e| format!("reading {}: {e}", path.display()))?;
        let knobs = config_knobs(&cfg).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut cur = self.current.lock().unwrap_or_else(|p| p.into_inner());
        let reads = cur.as_ref().map_or(0, |(n, _)| *n) + 1;
        *cur = Some((reads, knobs.clone()));
        Ok(knobs)
    }

    /// Who proposes: this CM's address and its file.
    pub fn source(&self, addr: &str) -> String {
        match &self.path {
            Some(p) => format!("{addr}:{}", p.display()),
            None => addr.to_string(),
        }
    }
}

/// The warning for a file whose knobs differ from the policy in force, or `None` when they
/// agree.
pub fn disagreement(file: &Path, knobs: &Knobs, policy: &NegotiationPolicy) -> Option<String> {
    let diff = differing(&policy.knobs, knobs);
    if diff.is_empty() {
        return None;
    }
    let mut named = diff
        .iter()
        .take(NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if diff.len() > NAMED {
        named.push_str(&format!(" and {} more", diff.len() - NAMED));
    }
    Some(format!(
        "configuration file {} disagrees with the replicated negotiation policy version {} \
         (from {}) on {named}; the replicated policy is the one negotiated with: run \
         `cmctl reconfig` against this CM to propose this file's",
        file.display(),
        policy.version,
        if policy.source.is_empty() {
            "unknown"
        } else {
            &policy.source
        },
    ))
}

/// On every CM: warns, once per replicated policy version and read of the file, when this
/// CM's file disagrees with the policy in force. Never ends (a CM without a file has nothing
/// to check and just waits).
pub async fn watch(state: SharedState, file: Arc<FilePolicy>) {
    let Some(path) = file.path().map(Path::to_path_buf) else {
        return std::future::pending().await;
    };
    let mut seen: Option<(u64, u64)> = None;
    loop {
        let policy = state
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .state
            .policy
            .clone();
        if let (Some(p), Some((reads, knobs))) = (policy, file.knobs()) {
            if seen != Some((p.version, reads)) {
                seen = Some((p.version, reads));
                if let Some(w) = disagreement(&path, &knobs, &p) {
                    tracing::warn!(policy_version = p.version, "{w}");
                }
            }
        }
        tokio::time::sleep(WATCH_EVERY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disagreeing_file_is_named_with_its_knobs() {
        let policy = NegotiationPolicy {
            version: 3,
            knobs: [("GROUP_QUOTA_group_a", "10"), ("PRIORITY_HALFLIFE", "600")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            source: "127.0.0.1:9000:/etc/aerie.conf".into(),
            time: 0,
        };
        let file = Path::new("/etc/other.conf");
        assert_eq!(disagreement(file, &policy.knobs, &policy), None);
        let mut mine = policy.knobs.clone();
        mine.insert("GROUP_QUOTA_group_a".into(), "20".into());
        let w = disagreement(file, &mine, &policy).unwrap();
        assert!(
            w.contains("/etc/other.conf") && w.contains("version 3"),
            "{w}"
        );
        assert!(w.contains("on GROUP_QUOTA_group_a;"), "{w}");
        assert!(!w.contains("PRIORITY_HALFLIFE"), "{w}");
        let many: Knobs = (0..20)
            .map(|i| (format!("K{i:02}_LIMIT"), "1".into()))
            .collect();
        let w = disagreement(file, &many, &policy).unwrap();
        assert!(w.contains("and 10 more"), "{w}");
    }

    #[test]
    fn reread_takes_the_file_as_it_is_now_and_names_a_bad_knob() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("aerie.conf");
        std::fs::write(&path, "GROUP_NAMES = group_a\nGROUP_QUOTA_group_a = 10\n").unwrap();
        let opts = aerie_config::LoadOptions::for_subsystem("NEGOTIATOR");
        let cfg = aerie_config::Config::load(&path, &opts).unwrap();
        let f = FilePolicy::new(Some(path.clone()), Some(&cfg)).unwrap();
        let (reads, knobs) = f.knobs().unwrap();
        assert_eq!((reads, knobs["GROUP_QUOTA_group_a"].as_str()), (1, "10"));
        std::fs::write(&path, "GROUP_NAMES = group_a\nGROUP_QUOTA_group_a = 25\n").unwrap();
        assert_eq!(f.reread().unwrap()["GROUP_QUOTA_group_a"], "25");
        assert_eq!(f.knobs().unwrap().0, 2);
        std::fs::write(&path, "GROUP_ACCEPT_SURPLUS = perhaps\n").unwrap();
        let e = f.reread().unwrap_err();
        assert!(
            e.contains("GROUP_ACCEPT_SURPLUS") && e.contains("aerie.conf"),
            "{e}"
        );
        // A failed read keeps what was read before.
        assert_eq!(f.knobs().unwrap().1["GROUP_QUOTA_group_a"], "25");
        let none = FilePolicy::new(None, None).unwrap();
        assert!(none.knobs().is_none() && none.reread().is_err());
    }
}

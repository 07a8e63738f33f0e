//! The negotiation policy every leader negotiates with, held in the replicated state.
//!
//! HTCondor has one negotiator reading one configuration (`condor_negotiator.V6/matchmaker.cpp`,
//! `Matchmaker::reinitialize`, re-run by `condor_reconfig`). Aerie has a CM per machine, each
//! with its own file, and whichever leads negotiates: if the policy came from the leader's own
//! file, two CMs whose files differ would negotiate differently after a failover. So the policy
//! is replicated: the knobs the negotiation cycle reads (group definitions and quotas,
//! surplus, priority factors, concurrency limits, the `NEGOTIATOR_*` expressions and timing),
//! as the configuration file gave them, travel in one [`Command::SetPolicy`] and every leader
//! rebuilds its [`NegotiatorConfig`] from them. A file only seeds the policy (the first leader
//! proposes its own when the state has none) or replaces it on `cmctl reconfig`.
//!
//! Which knobs are policy is not a hand-kept list: [`read_knobs`] records every knob
//! [`NegotiatorConfig::from_lookup`] asks for (plus the cycle timing, [`CYCLE_KNOBS`]), so a
//! knob the negotiator learns to read later is replicated without anyone remembering to.
//!
//! [`Command::SetPolicy`]: super::Command::SetPolicy
use super::{CommandResult, PoolState};
use crate::accountant::AccountantCommand;
use crate::negotiator::{ConfigError, NegotiatorConfig};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;

/// The cycle timing knobs the leader's loop reads (`cm/src/leader/knobs.rs`), replicated with
/// the rest of the policy although the pure negotiator does not read them.
pub const CYCLE_KNOBS: [&str; 3] = [
    "NEGOTIATOR_INTERVAL",
    "NEGOTIATOR_CYCLE_DELAY",
    "NEGOTIATOR_MAX_TIME_PER_CYCLE",
];

/// At most this many knobs in a policy (a bound on what enters the replicated state).
pub const MAX_POLICY_KNOBS: usize = 4096;
/// The longest knob name accepted.
pub const MAX_KNOB_NAME: usize = 256;
/// The longest knob value accepted.
pub const MAX_KNOB_VALUE: usize = 16 * 1024;

/// The replicated negotiation policy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NegotiationPolicy {
    /// Bumped by every change (1 for the first); each cycle record names the version it used.
    pub version: u64,
    /// Knob name -> macro-expanded value, as the configuration file gave them.
    pub knobs: BTreeMap<String, String>,
    /// Who proposed it (CM address and file), for operators.
    #[serde(default)]
    pub source: String,
    /// When it was proposed (the proposer's clock, Unix seconds; informational only).
    #[serde(default)]
    pub time: i64,
}

/// A proposed policy ([`super::Command::SetPolicy`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PolicyProposal {
    /// Knob name -> expanded value ([`read_knobs`]).
    pub knobs: BTreeMap<String, String>,
    /// Who proposes it (CM address and file).
    #[serde(default)]
    pub source: String,
    /// The proposer's clock (Unix seconds); informational, never the state's time.
    #[serde(default)]
    pub time: i64,
}

/// The policy knobs a configuration defines: every knob the negotiator reads that `lookup`
/// answers, and the [`CYCLE_KNOBS`]. `names` are the knobs the configuration defines (the
/// negotiator scans them for `<NAME>_LIMIT` and `CONCURRENCY_LIMIT_DEFAULT_<SET>`). A value
/// the negotiator refuses is an error naming the knob.
pub fn read_knobs(
    lookup: &dyn Fn(&str) -> Option<String>,
    names: &[String],
) -> Result<BTreeMap<String, String>, ConfigError> {
    let seen = RefCell::new(BTreeMap::new());
    let recording = |k: &str| {
        let v = lookup(k);
        if let Some(v) = &v {
            seen.borrow_mut().insert(k.to_string(), v.clone());
        }
        v
    };
    NegotiatorConfig::from_lookup(&recording, names)?;
    let mut knobs = seen.into_inner();
    for k in CYCLE_KNOBS {
        if let Some(v) = lookup(k) {
            knobs.insert(k.to_string(), v);
        }
    }
    Ok(knobs)
}

/// The policy knobs of a loaded configuration ([`read_knobs`] over its files).
pub fn config_knobs(cfg: &aerie_config::Config) -> Result<BTreeMap<String, String>, ConfigError> {
    use crate::negotiator::config::{config_lookup, config_names};
    read_knobs(&config_lookup(cfg), &config_names(cfg))
}

/// The negotiator configuration `knobs` describe (the inverse of [`read_knobs`]).
pub fn negotiator_config(
    knobs: &BTreeMap<String, String>,
) -> Result<NegotiatorConfig, ConfigError> {
    let names: Vec<String> = knobs.keys().cloned().collect();
    NegotiatorConfig::from_lookup(&|k: &str| knobs.get(k).cloned(), &names)
}

/// The knobs whose values differ between `a` and `b` (set in one only included), sorted.
pub fn differing(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    let mut out: Vec<String> = a
        .iter()
        .filter(|(k, v)| b.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
        .chain(b.keys().filter(|k| !a.contains_key(*k)).cloned())
        .collect();
    out.sort();
    out
}

/// Checks a proposed policy before it enters the state: bounded sizes, and knobs the
/// negotiator accepts (the error names the knob). Returns the configuration it describes.
pub fn check(knobs: &BTreeMap<String, String>) -> Result<NegotiatorConfig, String> {
    if knobs.len() > MAX_POLICY_KNOBS {
        return Err(format!(
            "policy has {} knobs; at most {MAX_POLICY_KNOBS} are accepted",
            knobs.len()
        ));
    }
    for (k, v) in knobs {
        if k.is_empty() || k.len() > MAX_KNOB_NAME {
            return Err(format!(
                "policy knob name {k:?} is empty or longer than {MAX_KNOB_NAME} bytes"
            ));
        }
        if v.len() > MAX_KNOB_VALUE {
            return Err(format!(
                "policy knob {k}: value of {} bytes is longer than {MAX_KNOB_VALUE}",
                v.len()
            ));
        }
    }
    negotiator_config(knobs).map_err(|e| format!("policy refused: {e}"))
}

impl PoolState {
    /// Applies [`super::Command::SetPolicy`]: checks the knobs, makes the ledger's parameters
    /// the policy's, and bumps the version when anything changed.
    pub(super) fn set_policy(&mut self, p: &PolicyProposal) -> Result<CommandResult, String> {
        let cfg = check(&p.knobs)?;
        let empty = BTreeMap::new();
        let current = self.policy.as_ref();
        let changed = differing(current.map_or(&empty, |c| &c.knobs), &p.knobs);
        if let Some(c) = current.filter(|_| changed.is_empty()) {
            return Ok(CommandResult::PolicySet {
                version: c.version,
                changed,
            });
        }
        let version = current.map_or(0, |c| c.version).saturating_add(1);
        self.install_policy(cfg, p.knobs.clone(), &p.source, p.time, version)?;
        Ok(CommandResult::PolicySet { version, changed })
    }

    /// Makes `knobs` (whose configuration is `cfg`) the policy in force at `version`, with the
    /// ledger's parameters from it; nothing changes when the ledger refuses them.
    pub(super) fn install_policy(
        &mut self,
        cfg: NegotiatorConfig,
        knobs: BTreeMap<String, String>,
        source: &str,
        time: i64,
        version: u64,
    ) -> Result<(), String> {
        if self.accountant.params() != &cfg.accountant {
            self.accountant
                .apply(&AccountantCommand::SetParams(cfg.accountant))
                .map_err(|e| format!("policy refused: {e}"))?;
        }
        self.policy = Some(NegotiationPolicy {
            version,
            knobs,
            source: source.to_string(),
            time,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::negotiator::GroupQuota;

    fn map(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn knobs_read_from_a_file_rebuild_the_same_negotiator_configuration() {
        let file = map(&[
            ("GROUP_NAMES", "group_a, group_b"),
            ("GROUP_QUOTA_group_a", "10"),
            ("GROUP_QUOTA_DYNAMIC_group_b", "0.5"),
            ("GROUP_ACCEPT_SURPLUS_group_b", "true"),
            ("GROUP_PRIO_FACTOR_group_a", "4"),
            ("XSW_LIMIT", "3"),
            ("CONCURRENCY_LIMIT_DEFAULT_BIG", "9"),
            ("PRIORITY_HALFLIFE", "600"),
            ("NEGOTIATOR_INTERVAL", "30"),
            // Not a knob the negotiator reads: not policy.
            ("COLLECTOR_HOST", "cm.example.org"),
        ]);
        let names: Vec<String> = file.keys().cloned().collect();
        let knobs = read_knobs(&|k: &str| file.get(k).cloned(), &names).unwrap();
        assert!(!knobs.contains_key("COLLECTOR_HOST"), "{knobs:?}");
        assert_eq!(knobs["NEGOTIATOR_INTERVAL"], "30");
        assert_eq!(knobs["GROUP_PRIO_FACTOR_group_a"], "4");
        let direct =
            NegotiatorConfig::from_lookup(&|k: &str| file.get(k).cloned(), &names).unwrap();
        let rebuilt = negotiator_config(&knobs).unwrap();
        assert_eq!(rebuilt.groups, direct.groups);
        assert_eq!(rebuilt.groups[0].quota, GroupQuota::Static(10.0));
        assert!(rebuilt.groups[1].accept_surplus);
        assert_eq!(rebuilt.accountant, direct.accountant);
        assert_eq!(rebuilt.concurrency_limits, direct.concurrency_limits);
        assert_eq!(rebuilt.limit_capacity("big.thing"), 9.0);
    }

    #[test]
    fn differing_names_changed_added_and_removed_knobs() {
        let a = map(&[("A", "1"), ("B", "2"), ("C", "3")]);
        let b = map(&[("A", "1"), ("B", "20"), ("D", "4")]);
        assert_eq!(differing(&a, &b), vec!["B", "C", "D"]);
        assert!(differing(&a, &a).is_empty());
    }

    #[test]
    fn check_refuses_bad_values_naming_the_knob_and_oversized_policies() {
        let e = check(&map(&[("GROUP_ACCEPT_SURPLUS", "maybe")])).unwrap_err();
        assert!(e.contains("GROUP_ACCEPT_SURPLUS"), "{e}");
        let e = check(&map(&[(
            "PRIORITY_HALFLIFE",
            &"9".repeat(MAX_KNOB_VALUE + 1),
        )]))
        .unwrap_err();
        assert!(e.contains("PRIORITY_HALFLIFE"), "{e}");
        let many: BTreeMap<String, String> = (0..=MAX_POLICY_KNOBS)
            .map(|i| (format!("K{i}_LIMIT"), "1".to_string()))
            .collect();
        assert!(check(&many).unwrap_err().contains("at most"));
        assert!(check(&map(&[("GROUP_NAMES", "g")])).is_ok());
    }
}

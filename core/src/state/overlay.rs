//! The configuration a leader negotiates with: the replicated negotiation policy (or, before
//! one is seeded, its configuration file's `NegotiatorConfig`) with the replicated runtime
//! overrides (`cmctl quota`, `cmctl limit`) laid over it, so every leader negotiates with the
//! same policy whatever its own file says.
use super::{GroupPolicy, PoolState, Quota};
use crate::accountant::AccountantParams;
use crate::negotiator::{GroupQuota, NegotiatorConfig};
use std::collections::BTreeMap;

impl PoolState {
    /// The configuration to negotiate with: the replicated policy's when there is one (else
    /// `file`, the leader's own), with the runtime overrides laid over it; the policy version
    /// used (0: the file's); one warning per override that could not apply.
    pub fn policy_config(&self, file: &NegotiatorConfig) -> (NegotiatorConfig, u64, Vec<String>) {
        let mut early = Vec::new();
        let (base, version) = match &self.policy {
            Some(p) => match super::negotiation_policy::negotiator_config(&p.knobs) {
                Ok(c) => (c, p.version),
                // Checked when committed, so only a state from a binary that read the knobs
                // differently gets here: negotiate with the file's, loudly.
                Err(e) => {
                    early.push(format!(
                        "replicated policy version {} unusable ({e}); using this CM's file",
                        p.version
                    ));
                    (file.clone(), 0)
                }
            },
            None => (file.clone(), 0),
        };
        let (cfg, mut warnings) = self.negotiator_config(base);
        early.append(&mut warnings);
        (cfg, version, early)
    }

    /// `base` with this state's ledger parameters, group policy and limits laid over it (see
    /// [`overlay_policy`]), and one warning per override that could not apply.
    pub fn negotiator_config(&self, base: NegotiatorConfig) -> (NegotiatorConfig, Vec<String>) {
        overlay_policy(base, self.accountant.params(), &self.groups, &self.limits)
    }
}

/// Lays the replicated policy over `base`:
/// * the accountant parameters become the replicated ledger's (the ledger is authoritative);
/// * a runtime quota or surplus flag replaces a configured group's (group names compare
///   case-insensitively, as HTCondor's do); a runtime override for a group that
///   `GROUP_NAMES` does not declare is ignored and reported, since the ledger would not
///   charge anyone to it;
/// * runtime concurrency limits replace or add `<NAME>_LIMIT` values.
///
/// Returns the configuration and one warning per ignored override.
pub fn overlay_policy(
    mut base: NegotiatorConfig,
    params: &AccountantParams,
    groups: &BTreeMap<String, GroupPolicy>,
    limits: &BTreeMap<String, f64>,
) -> (NegotiatorConfig, Vec<String>) {
    let mut warnings = Vec::new();
    base.accountant = params.clone();
    for (name, pol) in groups {
        let Some(g) = base
            .groups
            .iter_mut()
            .find(|g| g.name.eq_ignore_ascii_case(name))
        else {
            warnings.push(format!(
                "runtime policy for group {name} ignored: GROUP_NAMES does not declare it"
            ));
            continue;
        };
        if let Some(q) = pol.quota {
            g.quota = match q {
                Quota::Static(v) => GroupQuota::Static(v),
                Quota::Dynamic(v) => GroupQuota::Dynamic(v),
            };
        }
        if let Some(s) = pol.accept_surplus {
            g.accept_surplus = s;
        }
    }
    for (name, v) in limits {
        base.concurrency_limits
            .insert(name.to_ascii_lowercase(), *v);
    }
    (base, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_quota_surplus_and_limits_override_the_file() {
        let base = NegotiatorConfig::plain()
            .with_group("group_a", GroupQuota::Static(10.0), false)
            .with_group("group_b", GroupQuota::Dynamic(0.5), true)
            .with_limit("license", 3.0);
        let params = AccountantParams {
            priority_halflife: 600.0,
            ..Default::default()
        };
        let mut groups = BTreeMap::new();
        groups.insert(
            "GROUP_A".to_string(),
            GroupPolicy {
                quota: Some(Quota::Dynamic(0.25)),
                accept_surplus: Some(true),
            },
        );
        groups.insert(
            "group_b".to_string(),
            GroupPolicy {
                quota: None,
                accept_surplus: Some(false),
            },
        );
        groups.insert(
            "group_zz".to_string(),
            GroupPolicy {
                quota: Some(Quota::Static(5.0)),
                accept_surplus: None,
            },
        );
        let mut limits = BTreeMap::new();
        limits.insert("license".to_string(), 7.0);
        limits.insert("db".to_string(), 1.0);
        let (c, warnings) = overlay_policy(base, &params, &groups, &limits);
        assert_eq!(c.accountant.priority_halflife, 600.0);
        let a = &c.groups[0];
        assert_eq!(
            (a.quota, a.accept_surplus),
            (GroupQuota::Dynamic(0.25), true)
        );
        let b = &c.groups[1];
        // Quota as configured, surplus overridden.
        assert_eq!(
            (b.quota, b.accept_surplus),
            (GroupQuota::Dynamic(0.5), false)
        );
        assert_eq!(c.groups.len(), 2);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("group_zz"), "{warnings:?}");
        assert_eq!(c.limit_capacity("LICENSE"), 7.0);
        assert_eq!(c.limit_capacity("db"), 1.0);
    }

    #[test]
    fn no_runtime_policy_leaves_the_file_alone() {
        let base = NegotiatorConfig::plain().with_group("g", GroupQuota::Static(1.0), false);
        let (c, w) = overlay_policy(
            base.clone(),
            &base.accountant,
            &BTreeMap::new(),
            &BTreeMap::new(),
        );
        assert!(w.is_empty());
        assert_eq!(c.groups, base.groups);
        assert_eq!(c.concurrency_limits, base.concurrency_limits);
    }
}

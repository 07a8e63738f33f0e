//! Knobs whose names are built from user names (accounting groups, concurrency limits), and
//! where the configuration file is looked for.
use crate::config::Config;
use crate::error::ConfigError;
use std::path::PathBuf;

impl Config {
    /// `GROUP_NAMES`: every group and subgroup, in the order written.
    pub fn group_names(&self) -> Result<Vec<String>, ConfigError> {
        self.list("GROUP_NAMES")
    }

    /// `GROUP_QUOTA_<group>` (group names keep their dots: `group_physics.hep`).
    pub fn group_quota(&self, group: &str) -> Result<Option<f64>, ConfigError> {
        self.real(&format!("GROUP_QUOTA_{group}"))
    }

    /// `GROUP_QUOTA_DYNAMIC_<group>`: a fraction of the parent's quota.
    pub fn group_quota_dynamic(&self, group: &str) -> Result<Option<f64>, ConfigError> {
        self.real(&format!("GROUP_QUOTA_DYNAMIC_{group}"))
    }

    /// `GROUP_ACCEPT_SURPLUS_<group>`, else `GROUP_ACCEPT_SURPLUS` (false by default).
    pub fn group_accept_surplus(&self, group: &str) -> Result<bool, ConfigError> {
        match self.bool(&format!("GROUP_ACCEPT_SURPLUS_{group}"))? {
            Some(b) => Ok(b),
            None => self.bool_or("GROUP_ACCEPT_SURPLUS", false),
        }
    }

    /// `GROUP_AUTOREGROUP_<group>`, else `GROUP_AUTOREGROUP` (false by default).
    pub fn group_autoregroup(&self, group: &str) -> Result<bool, ConfigError> {
        match self.bool(&format!("GROUP_AUTOREGROUP_{group}"))? {
            Some(b) => Ok(b),
            None => self.bool_or("GROUP_AUTOREGROUP", false),
        }
    }

    /// `GROUP_PRIO_FACTOR_<group>`: the priority factor of new submitters in the group.
    pub fn group_prio_factor(&self, group: &str) -> Result<Option<f64>, ConfigError> {
        self.real(&format!("GROUP_PRIO_FACTOR_{group}"))
    }

    /// The capacity of a concurrency limit name (case-insensitive): `<NAME>_LIMIT`, else for
    /// `SET.member` names `CONCURRENCY_LIMIT_DEFAULT_<SET>`, else `CONCURRENCY_LIMIT_DEFAULT`
    /// (HTCondor's default 2308032, in effect unlimited).
    pub fn concurrency_limit(&self, name: &str) -> Result<Option<f64>, ConfigError> {
        if let Some(v) = self.real(&format!("{name}_LIMIT"))? {
            return Ok(Some(v));
        }
        if let Some((set, _)) = name.split_once('.') {
            if let Some(v) = self.real(&format!("CONCURRENCY_LIMIT_DEFAULT_{set}"))? {
                return Ok(Some(v));
            }
        }
        self.real("CONCURRENCY_LIMIT_DEFAULT")
    }

    /// Names that have a `<NAME>_LIMIT` knob in the configuration files, without the suffix.
    pub fn concurrency_limit_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .entries()
            .map(|e| self.short_name(&e.name).unwrap_or(&e.name).to_string())
            .filter(|n| n.len() > 6 && n.to_ascii_uppercase().ends_with("_LIMIT"))
            .map(|n| n[..n.len() - 6].to_string())
            .filter(|n| {
                concurrency_limit_name_is_valid(n) && !n.contains('.') || n.split('.').count() == 2
            })
            .collect();
        v.sort_by_key(|n| n.to_ascii_uppercase());
        v.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
        v
    }
}

impl Config {
    /// `SLOT<N>_<NAME>` when it is set, else `<NAME>`: the per-slot override of a startd knob
    /// (`SLOT2_favorite_color`, `SLOT1_STARTD_ATTRS`).
    pub fn slot_value(&self, slot: u32, name: &str) -> Result<Option<String>, ConfigError> {
        match self.expanded(&format!("SLOT{slot}_{name}"))? {
            Some(v) => Ok(Some(v)),
            None => self.string(name),
        }
    }

    /// `<NAME>_VANILLA` when it is set, else `<NAME>`: the old startd policy forms for vanilla
    /// universe jobs (`WANT_SUSPEND_VANILLA`, `SUSPEND_VANILLA`).
    pub fn vanilla_value(&self, name: &str) -> Result<Option<String>, ConfigError> {
        match self.expanded(&format!("{name}_VANILLA"))? {
            Some(v) => Ok(Some(v)),
            None => self.string(name),
        }
    }

    /// Checks every knob of the catalogue that is set against its type (a daemon calls this at
    /// start-up and on reload); returns every problem, each naming knob, file and line.
    pub fn check_catalogue_types(&self) -> Vec<ConfigError> {
        let mut errs = Vec::new();
        for e in self.entries() {
            let name = self.short_name(&e.name).unwrap_or(&e.name);
            if crate::catalogue::find(name).is_some() {
                if let Err(err) = self.check_type(name) {
                    if !errs.iter().any(|x: &ConfigError| x.knob == err.knob) {
                        errs.push(err);
                    }
                }
            }
        }
        errs.sort_by(|a, b| a.knob.cmp(&b.knob));
        errs
    }
}

/// A concurrency limit name: letters, digits and `_`, at most one `.`, not starting with a digit.
pub fn concurrency_limit_name_is_valid(name: &str) -> bool {
    !name.is_empty()
        && !name.as_bytes()[0].is_ascii_digit()
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
        && name.bytes().filter(|&c| c == b'.').count() <= 1
        && !name.starts_with('.')
        && !name.ends_with('.')
}

/// The configuration file to read when none is given: `$AERIE_CONFIG`, else `$CONDOR_CONFIG`,
/// else the first of `/etc/aerie/aerie.conf`, `/etc/condor/condor_config` that exists.
pub fn default_config_path() -> Result<PathBuf, ConfigError> {
    for var in ["AERIE_CONFIG", "CONDOR_CONFIG"] {
        if let Ok(v) = std::env::var(var) {
            if !v.is_empty() {
                return Ok(PathBuf::from(v));
            }
        }
    }
    let candidates = ["/etc/aerie/aerie.conf", "/etc/condor/condor_config"];
    for c in candidates {
        if std::path::Path::new(c).exists() {
            return Ok(PathBuf::from(c));
        }
    }
    Err(ConfigError::new(format!(
        "no configuration file: give --config FILE, or set AERIE_CONFIG (tried $AERIE_CONFIG, $CONDOR_CONFIG, {})",
        candidates.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_names() {
        assert!(concurrency_limit_name_is_valid("XSW"));
        assert!(concurrency_limit_name_is_valid("LARGE.SWLICENSE"));
        assert!(concurrency_limit_name_is_valid("_x1"));
        assert!(!concurrency_limit_name_is_valid("1ABC"));
        assert!(!concurrency_limit_name_is_valid("A.B.C"));
        assert!(!concurrency_limit_name_is_valid("A-B"));
        assert!(!concurrency_limit_name_is_valid(""));
    }
}

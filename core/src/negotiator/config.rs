//! Negotiator configuration: every knob the cycle reads, with HTCondor 23.9.6's defaults.
//!
//! Built with [`NegotiatorConfig::default`] plus the `with_*` builders (tests, benches), or
//! from HTCondor-syntax configuration through [`NegotiatorConfig::from_lookup`] (any source
//! that can answer "what is knob X" and "which knobs are defined") and
//! [`NegotiatorConfig::from_config`] (the `aerie-config` crate).
use crate::accountant::AccountantParams;
use classad::{parse_expr, Expr};
use std::collections::BTreeMap;

/// HTCondor 23.9.6 `NEGOTIATOR_PRE_JOB_RANK` default.
pub const DEFAULT_PRE_JOB_RANK: &str =
    "(10000000 * My.Rank) + (1000000 * (RemoteOwner =?= UNDEFINED)) - (100000 * Cpus) - Memory";
/// HTCondor 23.9.6 `NEGOTIATOR_POST_JOB_RANK` default.
pub const DEFAULT_POST_JOB_RANK: &str = "(RemoteOwner =?= UNDEFINED) * (ifthenElse(isUndefined(KFlops), 1000, Kflops) - SlotID - 1.0e10*(Offline=?=True))";
/// HTCondor 23.9.6 `PREEMPTION_RANK` default.
pub const DEFAULT_PREEMPTION_RANK: &str =
    "(RemoteUserPrio * 1000000) - ifThenElse(isUndefined(TotalJobRuntime), 0, TotalJobRuntime)";
/// HTCondor 23.9.6 `GROUP_SORT_EXPR` default.
pub const DEFAULT_GROUP_SORT_EXPR: &str = "ifThenElse(AccountingGroup=?=\"<none>\",3.4e+38,ifThenElse(GroupQuota>0,GroupResourcesInUse/GroupQuota,3.3e+38))";
/// HTCondor 23.9.6 defaults of `MODIFY_REQUEST_EXPR_REQUESTCPUS`, `_REQUESTMEMORY` and
/// `_REQUESTDISK` (param_info.in): cpus in steps of 1, memory of 128 MB, disk of 1024 KB.
pub const DEFAULT_MODIFY_REQUEST_EXPRS: [&str; 3] = [
    "quantize(RequestCpus,{1})",
    "quantize(RequestMemory,{128})",
    "quantize(RequestDisk,{1024})",
];
/// The knobs of [`NegotiatorConfig::modify_request_exprs`], in its order.
pub const MODIFY_REQUEST_EXPR_KNOBS: [&str; 3] = [
    "MODIFY_REQUEST_EXPR_REQUESTCPUS",
    "MODIFY_REQUEST_EXPR_REQUESTMEMORY",
    "MODIFY_REQUEST_EXPR_REQUESTDISK",
];
/// HTCondor 23.9.6 `CONCURRENCY_LIMIT_DEFAULT`.
pub const DEFAULT_CONCURRENCY_LIMIT: f64 = 2308032.0;

/// One configured accounting group.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupConfig {
    /// Name as written in `GROUP_NAMES`.
    pub name: String,
    /// `GROUP_QUOTA_<g>` (static, in slot weight) or `GROUP_QUOTA_DYNAMIC_<g>` (fraction).
    pub quota: GroupQuota,
    /// `GROUP_ACCEPT_SURPLUS_<g>` or the global `GROUP_ACCEPT_SURPLUS`.
    pub accept_surplus: bool,
    /// `GROUP_AUTOREGROUP_<g>` or the global `GROUP_AUTOREGROUP`.
    pub autoregroup: bool,
}

/// A group's configured quota.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GroupQuota {
    /// `GROUP_QUOTA_<g>`: an amount of slot weight.
    Static(f64),
    /// `GROUP_QUOTA_DYNAMIC_<g>`: a fraction of the parent's quota.
    Dynamic(f64),
}

/// Configuration error with the knob it came from.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("configuration knob {knob}: {message}")]
pub struct ConfigError {
    /// The knob whose value is wrong.
    pub knob: String,
    /// What is wrong with it.
    pub message: String,
}

/// Every knob the negotiation cycle reads.
#[derive(Clone, Debug)]
pub struct NegotiatorConfig {
    /// The accountant's knobs (`PRIORITY_HALFLIFE`, priority factors, group names...).
    pub accountant: AccountantParams,
    /// `NEGOTIATOR_SLOT_CONSTRAINT`: slots outside it are not negotiated (none by default).
    pub slot_constraint: Option<Expr>,
    /// `NEGOTIATOR_CONSIDER_PREEMPTION` (true): claimed slots are candidates.
    pub consider_preemption: bool,
    /// `NEGOTIATOR_CONSIDER_EARLY_PREEMPTION` (false): claimed slots whose job still has
    /// retirement time left (`RetirementTimeRemaining > 0`) are candidates too; the preempting
    /// job then waits out that retirement (`Matchmaker::trimStartdAds_PreemptionLogic`).
    pub consider_early_preemption: bool,
    /// `NEGOTIATOR_PRE_JOB_RANK` (see [`DEFAULT_PRE_JOB_RANK`]); `None` sorts as `-FLT_MAX`.
    pub pre_job_rank: Option<Expr>,
    /// `NEGOTIATOR_POST_JOB_RANK` (see [`DEFAULT_POST_JOB_RANK`]).
    pub post_job_rank: Option<Expr>,
    /// `PREEMPTION_REQUIREMENTS` (False): must hold for priority preemption.
    pub preemption_requirements: Option<Expr>,
    /// `PREEMPTION_RANK` (see [`DEFAULT_PREEMPTION_RANK`]): orders preemption candidates.
    pub preemption_rank: Option<Expr>,
    /// `PREEMPTION_REQUIREMENTS_STABLE` (true). Read, not used by the cycle yet.
    pub preemption_requirements_stable: bool,
    /// `PREEMPTION_RANK_STABLE` (true). Read, not used by the cycle yet.
    pub preemption_rank_stable: bool,
    /// `NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION`: static quotas that add up to more than
    /// their parent are not scaled down.
    pub allow_quota_oversubscription: bool,
    /// `NEGOTIATE_ALL_JOBS_IN_CLUSTER` (false): every job is an autocluster of its own, so a
    /// rejection skips only that job (not the rest of its autocluster).
    pub negotiate_all_jobs_in_cluster: bool,
    /// `NEGOTIATOR_USE_SLOT_WEIGHTS` (true): slots count by `SlotWeight` (else `Cpus`), not 1.
    pub use_slot_weights: bool,
    /// `GROUP_NAMES` with each group's quota and flags, in configured order.
    pub groups: Vec<GroupConfig>,
    /// `GROUP_SORT_EXPR` (see [`DEFAULT_GROUP_SORT_EXPR`]): groups negotiate in ascending order.
    pub group_sort_expr: Option<Expr>,
    /// `GROUP_ACCEPT_SURPLUS` (false): the default of every group's `GROUP_ACCEPT_SURPLUS_<g>`.
    pub accept_surplus: bool,
    /// `GROUP_AUTOREGROUP` (false): the default of every group's `GROUP_AUTOREGROUP_<g>`.
    pub autoregroup: bool,
    /// `NEGOTIATOR_CROSS_SLOT_PRIOS` (false): publish `slot<N>_RemoteUserPrio` and its
    /// companions for every slot N of a machine's ads (`TotalSlots`), as HTCondor does.
    pub cross_slot_prios: bool,
    /// `GROUP_QUOTA_MAX_ALLOCATION_ROUNDS` (3).
    pub max_allocation_rounds: u32,
    /// `NEGOTIATOR_STRICT_ENFORCE_QUOTA` (true).
    pub strict_enforce_quota: bool,
    /// `<NAME>_LIMIT`, keyed by lower-case name.
    pub concurrency_limits: BTreeMap<String, f64>,
    /// `CONCURRENCY_LIMIT_DEFAULT`.
    pub concurrency_limit_default: f64,
    /// `CONCURRENCY_LIMIT_DEFAULT_<SET>`, keyed by lower-case set name.
    pub concurrency_limit_set_defaults: BTreeMap<String, f64>,
    /// `SIGNIFICANT_ATTRIBUTES` (empty: computed from the expressions).
    pub significant_attributes: Vec<String>,
    /// `MODIFY_REQUEST_EXPR_REQUESTCPUS`, `_REQUESTMEMORY` and `_REQUESTDISK` (see
    /// [`DEFAULT_MODIFY_REQUEST_EXPRS`]; `None` when set empty): startd knobs, never read by
    /// HTCondor's negotiator. Aerie evaluates them as the startd's create_dslot does (on the
    /// job ad, TARGET the slot; only an integer result replaces the request) for what a match
    /// with a partitionable slot without a consumption policy will carve
    /// ([`super::Match::carved`], the size its grant asks the startd for).
    pub modify_request_exprs: [Option<Expr>; 3],
    /// `MUST_MODIFY_REQUEST_EXPRS` (false): keep the modified requests even when the slot no
    /// longer matches them (otherwise the startd falls back to the job's own requests).
    pub must_modify_request_exprs: bool,
    /// `NEGOTIATOR_NAME`-style label for statistics (optional; not used by the cycle yet).
    pub name: Option<String>,
}

fn must(text: &str) -> Expr {
    // The constants above are valid ClassAd expressions; a failure is a programming error
    // caught by the unit test `default_exprs_parse`.
    parse_expr(text).unwrap_or_else(|_| Expr::boolean(false))
}

impl Default for NegotiatorConfig {
    fn default() -> Self {
        NegotiatorConfig {
            accountant: AccountantParams::default(),
            slot_constraint: None,
            consider_preemption: true,
            consider_early_preemption: false,
            pre_job_rank: Some(must(DEFAULT_PRE_JOB_RANK)),
            post_job_rank: Some(must(DEFAULT_POST_JOB_RANK)),
            preemption_requirements: Some(Expr::boolean(false)),
            preemption_rank: Some(must(DEFAULT_PREEMPTION_RANK)),
            preemption_requirements_stable: true,
            preemption_rank_stable: true,
            allow_quota_oversubscription: true,
            negotiate_all_jobs_in_cluster: false,
            use_slot_weights: true,
            groups: Vec::new(),
            group_sort_expr: Some(must(DEFAULT_GROUP_SORT_EXPR)),
            accept_surplus: false,
            autoregroup: false,
            cross_slot_prios: false,
            max_allocation_rounds: 3,
            strict_enforce_quota: true,
            concurrency_limits: BTreeMap::new(),
            concurrency_limit_default: DEFAULT_CONCURRENCY_LIMIT,
            concurrency_limit_set_defaults: BTreeMap::new(),
            significant_attributes: Vec::new(),
            modify_request_exprs: DEFAULT_MODIFY_REQUEST_EXPRS.map(|e| Some(must(e))),
            must_modify_request_exprs: false,
            name: None,
        }
    }
}

fn parse_knob(knob: &str, text: &str) -> Result<Expr, ConfigError> {
    parse_expr(text).map_err(|e| ConfigError {
        knob: knob.to_string(),
        message: e.to_string(),
    })
}

fn parse_bool(knob: &str, text: &str) -> Result<bool, ConfigError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "t" | "yes" | "1" => Ok(true),
        "false" | "f" | "no" | "0" => Ok(false),
        other => Err(ConfigError {
            knob: knob.into(),
            message: format!("{other:?} is not a boolean"),
        }),
    }
}

fn parse_num(knob: &str, text: &str) -> Result<f64, ConfigError> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| ConfigError {
            knob: knob.into(),
            message: format!("{:?} is not a number", text.trim()),
        })
}

impl NegotiatorConfig {
    /// Plain idle-slot matching: no admin ranks, no preemption (handy for tests).
    pub fn plain() -> Self {
        NegotiatorConfig {
            pre_job_rank: None,
            post_job_rank: None,
            preemption_rank: None,
            ..Default::default()
        }
    }
    /// With `NEGOTIATOR_PRE_JOB_RANK = e`.
    pub fn with_pre_job_rank(mut self, e: &str) -> Result<Self, ConfigError> {
        self.pre_job_rank = Some(parse_knob("NEGOTIATOR_PRE_JOB_RANK", e)?);
        Ok(self)
    }
    /// With `NEGOTIATOR_POST_JOB_RANK = e`.
    pub fn with_post_job_rank(mut self, e: &str) -> Result<Self, ConfigError> {
        self.post_job_rank = Some(parse_knob("NEGOTIATOR_POST_JOB_RANK", e)?);
        Ok(self)
    }
    /// With `PREEMPTION_REQUIREMENTS = e`.
    pub fn with_preemption_requirements(mut self, e: &str) -> Result<Self, ConfigError> {
        self.preemption_requirements = Some(parse_knob("PREEMPTION_REQUIREMENTS", e)?);
        Ok(self)
    }
    /// With `PREEMPTION_RANK = e`.
    pub fn with_preemption_rank(mut self, e: &str) -> Result<Self, ConfigError> {
        self.preemption_rank = Some(parse_knob("PREEMPTION_RANK", e)?);
        Ok(self)
    }
    /// With `NEGOTIATOR_SLOT_CONSTRAINT = e`.
    pub fn with_slot_constraint(mut self, e: &str) -> Result<Self, ConfigError> {
        self.slot_constraint = Some(parse_knob("NEGOTIATOR_SLOT_CONSTRAINT", e)?);
        Ok(self)
    }
    /// With `GROUP_SORT_EXPR = e`.
    pub fn with_group_sort_expr(mut self, e: &str) -> Result<Self, ConfigError> {
        self.group_sort_expr = Some(parse_knob("GROUP_SORT_EXPR", e)?);
        Ok(self)
    }
    /// With `NEGOTIATOR_CONSIDER_PREEMPTION = on`.
    pub fn with_consider_preemption(mut self, on: bool) -> Self {
        self.consider_preemption = on;
        self
    }
    /// With `NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION = on`.
    pub fn with_oversubscription(mut self, on: bool) -> Self {
        self.allow_quota_oversubscription = on;
        self
    }
    /// With `NEGOTIATE_ALL_JOBS_IN_CLUSTER = on`.
    pub fn with_negotiate_all_jobs_in_cluster(mut self, on: bool) -> Self {
        self.negotiate_all_jobs_in_cluster = on;
        self
    }
    /// With `GROUP_ACCEPT_SURPLUS = on`, for the groups already added too.
    pub fn with_accept_surplus(mut self, on: bool) -> Self {
        self.accept_surplus = on;
        for g in &mut self.groups {
            g.accept_surplus = on;
        }
        self
    }
    /// Adds a group (keeps `accountant.group_names` in step).
    pub fn with_group(mut self, name: &str, quota: GroupQuota, accept_surplus: bool) -> Self {
        self.groups.push(GroupConfig {
            name: name.into(),
            quota,
            accept_surplus,
            autoregroup: false,
        });
        self.accountant.group_names.push(name.into());
        self
    }
    /// `<NAME>_LIMIT = value`.
    pub fn with_limit(mut self, name: &str, value: f64) -> Self {
        self.concurrency_limits
            .insert(name.to_ascii_lowercase(), value);
        self
    }
    /// With `CONCURRENCY_LIMIT_DEFAULT = value`.
    pub fn with_limit_default(mut self, value: f64) -> Self {
        self.concurrency_limit_default = value;
        self
    }
    /// With `CONCURRENCY_LIMIT_DEFAULT_<set> = value`.
    pub fn with_set_default(mut self, set: &str, value: f64) -> Self {
        self.concurrency_limit_set_defaults
            .insert(set.to_ascii_lowercase(), value);
        self
    }

    /// The capacity of a concurrency limit name (already validated, any case): explicit
    /// `<NAME>_LIMIT`, then `CONCURRENCY_LIMIT_DEFAULT_<SET>` for `SET.member`, then
    /// `CONCURRENCY_LIMIT_DEFAULT`.
    pub fn limit_capacity(&self, name: &str) -> f64 {
        let lower = name.to_ascii_lowercase();
        if let Some(v) = self.concurrency_limits.get(&lower) {
            return *v;
        }
        if let Some((set, _)) = lower.split_once('.') {
            if let Some(v) = self.concurrency_limit_set_defaults.get(set) {
                return *v;
            }
        }
        self.concurrency_limit_default
    }

    /// Reads every knob from a configuration source. `lookup` returns the expanded value of
    /// a knob (or `None` if it is not defined); `names` lists every defined knob (used for
    /// the user-built `<NAME>_LIMIT` and `CONCURRENCY_LIMIT_DEFAULT_<SET>` names).
    pub fn from_lookup(
        lookup: &dyn Fn(&str) -> Option<String>,
        names: &[String],
    ) -> Result<Self, ConfigError> {
        let mut c = NegotiatorConfig::default();
        let get = |k: &str| lookup(k).filter(|v| !v.trim().is_empty());
        let a = &mut c.accountant;
        if let Some(v) = get("PRIORITY_HALFLIFE") {
            a.priority_halflife = parse_num("PRIORITY_HALFLIFE", &v)?;
        }
        if let Some(v) = get("DEFAULT_PRIO_FACTOR") {
            a.default_prio_factor = parse_num("DEFAULT_PRIO_FACTOR", &v)?;
        }
        if let Some(v) = get("NICE_USER_PRIO_FACTOR") {
            a.nice_user_prio_factor = parse_num("NICE_USER_PRIO_FACTOR", &v)?;
        }
        if let Some(v) = get("REMOTE_PRIO_FACTOR") {
            a.remote_prio_factor = parse_num("REMOTE_PRIO_FACTOR", &v)?;
        }
        a.local_domain = get("ACCOUNTANT_LOCAL_DOMAIN").map(|s| s.trim().to_string());
        let exprs: [(&str, &mut Option<Expr>); 6] = [
            ("NEGOTIATOR_SLOT_CONSTRAINT", &mut c.slot_constraint),
            ("NEGOTIATOR_PRE_JOB_RANK", &mut c.pre_job_rank),
            ("NEGOTIATOR_POST_JOB_RANK", &mut c.post_job_rank),
            ("PREEMPTION_REQUIREMENTS", &mut c.preemption_requirements),
            ("PREEMPTION_RANK", &mut c.preemption_rank),
            ("GROUP_SORT_EXPR", &mut c.group_sort_expr),
        ];
        for (knob, slot) in exprs {
            if let Some(v) = lookup(knob) {
                *slot = if v.trim().is_empty() {
                    None
                } else {
                    Some(parse_knob(knob, &v)?)
                };
            }
        }
        for (knob, slot) in MODIFY_REQUEST_EXPR_KNOBS
            .iter()
            .zip(c.modify_request_exprs.iter_mut())
        {
            if let Some(v) = lookup(knob) {
                *slot = if v.trim().is_empty() {
                    None
                } else {
                    Some(parse_knob(knob, &v)?)
                };
            }
        }
        let bools: [(&str, &mut bool); 12] = [
            ("NEGOTIATOR_CONSIDER_PREEMPTION", &mut c.consider_preemption),
            (
                "NEGOTIATOR_CONSIDER_EARLY_PREEMPTION",
                &mut c.consider_early_preemption,
            ),
            (
                "PREEMPTION_REQUIREMENTS_STABLE",
                &mut c.preemption_requirements_stable,
            ),
            ("PREEMPTION_RANK_STABLE", &mut c.preemption_rank_stable),
            (
                "NEGOTIATOR_ALLOW_QUOTA_OVERSUBSCRIPTION",
                &mut c.allow_quota_oversubscription,
            ),
            (
                "NEGOTIATE_ALL_JOBS_IN_CLUSTER",
                &mut c.negotiate_all_jobs_in_cluster,
            ),
            ("NEGOTIATOR_USE_SLOT_WEIGHTS", &mut c.use_slot_weights),
            ("GROUP_ACCEPT_SURPLUS", &mut c.accept_surplus),
            ("GROUP_AUTOREGROUP", &mut c.autoregroup),
            ("NEGOTIATOR_CROSS_SLOT_PRIOS", &mut c.cross_slot_prios),
            (
                "NEGOTIATOR_STRICT_ENFORCE_QUOTA",
                &mut c.strict_enforce_quota,
            ),
            (
                "MUST_MODIFY_REQUEST_EXPRS",
                &mut c.must_modify_request_exprs,
            ),
        ];
        for (knob, slot) in bools {
            if let Some(v) = get(knob) {
                *slot = parse_bool(knob, &v)?;
            }
        }
        if let Some(v) = get("GROUP_QUOTA_MAX_ALLOCATION_ROUNDS") {
            c.max_allocation_rounds =
                parse_num("GROUP_QUOTA_MAX_ALLOCATION_ROUNDS", &v)?.max(1.0) as u32;
        }
        if let Some(v) = get("CONCURRENCY_LIMIT_DEFAULT") {
            c.concurrency_limit_default = parse_num("CONCURRENCY_LIMIT_DEFAULT", &v)?;
        }
        if let Some(v) = get("SIGNIFICANT_ATTRIBUTES") {
            c.significant_attributes = split_list(&v);
        }
        if let Some(v) = get("GROUP_NAMES") {
            for g in split_list(&v) {
                let quota = if let Some(q) = get(&format!("GROUP_QUOTA_{g}")) {
                    GroupQuota::Static(parse_num(&format!("GROUP_QUOTA_{g}"), &q)?)
                } else if let Some(q) = get(&format!("GROUP_QUOTA_DYNAMIC_{g}")) {
                    GroupQuota::Dynamic(parse_num(&format!("GROUP_QUOTA_DYNAMIC_{g}"), &q)?)
                } else {
                    // HTCondor 23.9.6's hgq_construct_tree: a group with no quota configured
                    // is dynamic with 0 (tests/reference/negotiator/group_order.sh: "static N"
                    // in the negotiator log's quota table).
                    GroupQuota::Dynamic(0.0)
                };
                let accept_surplus = match get(&format!("GROUP_ACCEPT_SURPLUS_{g}")) {
                    Some(v) => parse_bool(&format!("GROUP_ACCEPT_SURPLUS_{g}"), &v)?,
                    None => c.accept_surplus,
                };
                let autoregroup = match get(&format!("GROUP_AUTOREGROUP_{g}")) {
                    Some(v) => parse_bool(&format!("GROUP_AUTOREGROUP_{g}"), &v)?,
                    None => c.autoregroup,
                };
                if let Some(f) = get(&format!("GROUP_PRIO_FACTOR_{g}")) {
                    let f = parse_num(&format!("GROUP_PRIO_FACTOR_{g}"), &f)?;
                    c.accountant.group_prio_factors.insert(g.clone(), f);
                }
                c.accountant.group_names.push(g.clone());
                c.groups.push(GroupConfig {
                    name: g,
                    quota,
                    accept_surplus,
                    autoregroup,
                });
            }
        }
        for n in names {
            let upper = n.to_ascii_uppercase();
            if let Some(set) = upper.strip_prefix("CONCURRENCY_LIMIT_DEFAULT_") {
                if let Some(v) = get(n) {
                    c.concurrency_limit_set_defaults
                        .insert(set.to_ascii_lowercase(), parse_num(n, &v)?);
                }
            } else if let Some(base) = upper.strip_suffix("_LIMIT") {
                // Only names that are valid limit names; skip knobs like `SCHEDD_..._LIMIT`
                // which HTCondor would also read as limits but no job can name.
                if super::limits::valid_limit_name(base) && !base.is_empty() {
                    if let Some(v) = get(n) {
                        if let Ok(x) = parse_num(n, &v) {
                            c.concurrency_limits.insert(base.to_ascii_lowercase(), x);
                        }
                    }
                }
            }
        }
        c.accountant.validate().map_err(|e| ConfigError {
            knob: "accountant".into(),
            message: e.to_string(),
        })?;
        Ok(c)
    }

    /// Reads the configuration from the `aerie-config` crate. A knob set to nothing is found
    /// empty (an expression knob then has no expression, as HTCondor's param() gives none).
    pub fn from_config(cfg: &aerie_config::Config) -> Result<Self, ConfigError> {
        Self::from_lookup(&config_lookup(cfg), &config_names(cfg))
    }
}

/// How the negotiator reads a knob of `cfg`: macro-expanded, a knob set to nothing found
/// empty, an unexpandable one not found.
pub fn config_lookup(cfg: &aerie_config::Config) -> impl Fn(&str) -> Option<String> + '_ {
    |k: &str| match cfg.expanded(k) {
        Ok(Some(v)) => Some(v),
        Ok(None) => cfg.lookup(k).map(|_| String::new()),
        Err(_) => None,
    }
}

/// The knobs `cfg`'s files (and overrides) define.
pub fn config_names(cfg: &aerie_config::Config) -> Vec<String> {
    cfg.entries().map(|e| e.name.clone()).collect()
}

/// Comma- or space-separated list.
pub fn split_list(v: &str) -> Vec<String> {
    v.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(|s| s.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_exprs_parse() {
        for e in [
            DEFAULT_PRE_JOB_RANK,
            DEFAULT_POST_JOB_RANK,
            DEFAULT_PREEMPTION_RANK,
            DEFAULT_GROUP_SORT_EXPR,
        ]
        .iter()
        .chain(DEFAULT_MODIFY_REQUEST_EXPRS.iter())
        {
            assert!(parse_expr(e).is_ok(), "{e}");
        }
    }

    #[test]
    fn from_lookup_reads_groups_limits_and_knobs() {
        let kv: BTreeMap<&str, &str> = [
            (
                "GROUP_NAMES",
                "group_physics, group_physics.hep, group_chemistry",
            ),
            ("GROUP_QUOTA_group_physics", "20"),
            ("GROUP_QUOTA_DYNAMIC_group_physics.hep", "0.75"),
            ("GROUP_ACCEPT_SURPLUS", "true"),
            ("GROUP_ACCEPT_SURPLUS_group_chemistry", "false"),
            ("XSW_LIMIT", "3"),
            ("CONCURRENCY_LIMIT_DEFAULT", "5"),
            ("CONCURRENCY_LIMIT_DEFAULT_LARGE", "100"),
            ("NEGOTIATOR_CONSIDER_PREEMPTION", "false"),
            (
                "PREEMPTION_REQUIREMENTS",
                "RemoteUserPrio > SubmitterUserPrio * 1.2",
            ),
            ("PRIORITY_HALFLIFE", "3600"),
            ("ACCOUNTANT_LOCAL_DOMAIN", "cs.wisc.edu"),
        ]
        .into_iter()
        .collect();
        let names: Vec<String> = kv.keys().map(|k| k.to_string()).collect();
        let c = NegotiatorConfig::from_lookup(&|k: &str| kv.get(k).map(|v| v.to_string()), &names)
            .unwrap();
        assert_eq!(c.groups.len(), 3);
        assert_eq!(c.groups[0].quota, GroupQuota::Static(20.0));
        assert_eq!(c.groups[1].quota, GroupQuota::Dynamic(0.75));
        assert_eq!(c.groups[2].quota, GroupQuota::Dynamic(0.0));
        assert!(c.groups[0].accept_surplus && !c.groups[2].accept_surplus);
        assert_eq!(c.limit_capacity("xsw"), 3.0);
        assert_eq!(c.limit_capacity("LARGE.SWLICENSE"), 100.0);
        assert_eq!(c.limit_capacity("OTHER.LICENSE"), 5.0);
        assert!(!c.consider_preemption);
        assert_eq!(c.accountant.priority_halflife, 3600.0);
        assert_eq!(c.accountant.local_domain.as_deref(), Some("cs.wisc.edu"));
        assert_eq!(c.accountant.group_names.len(), 3);
        let bad = NegotiatorConfig::from_lookup(
            &|k: &str| (k == "PREEMPTION_RANK").then(|| "(1 +".to_string()),
            &[],
        );
        assert!(bad.unwrap_err().to_string().contains("PREEMPTION_RANK"));
        let bad = NegotiatorConfig::from_lookup(
            &|k: &str| (k == "GROUP_ACCEPT_SURPLUS").then(|| "maybe".to_string()),
            &[],
        );
        assert!(bad
            .unwrap_err()
            .to_string()
            .contains("GROUP_ACCEPT_SURPLUS"));
    }

    #[test]
    fn modify_request_exprs_come_from_the_configuration() {
        let opts = aerie_config::LoadOptions::for_subsystem("NEGOTIATOR");
        let parse = |text: &str| {
            let c = aerie_config::Config::parse_str(text, "site", &opts).expect("config");
            NegotiatorConfig::from_config(&c).expect("negotiator config")
        };
        let text = |e: &Option<Expr>| e.as_ref().map(|e| e.to_string());
        // HTCondor's defaults, from the defaults table.
        let c = parse("");
        let d = NegotiatorConfig::default();
        for i in 0..3 {
            assert_eq!(
                text(&c.modify_request_exprs[i]),
                text(&d.modify_request_exprs[i])
            );
        }
        assert!(!c.must_modify_request_exprs);
        // Set, macro-expanded, or set empty (no modification, as the startd's param() gives).
        let c = parse(
            "STEP = 4096\nMODIFY_REQUEST_EXPR_REQUESTMEMORY = quantize(RequestMemory,{$(STEP)})\n\
             MODIFY_REQUEST_EXPR_REQUESTDISK =\nMUST_MODIFY_REQUEST_EXPRS = True\n",
        );
        assert_eq!(
            text(&c.modify_request_exprs[1]),
            text(&Some(parse_expr("quantize(RequestMemory,{4096})").unwrap()))
        );
        assert!(c.modify_request_exprs[2].is_none());
        assert!(c.must_modify_request_exprs);
        assert!(c.modify_request_exprs[0].is_some());
    }
}

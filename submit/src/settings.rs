//! What a submit depends on besides the file: who submits, from where and when
//! ([`Submitter`]), and the machine and configuration facts condor_submit reads
//! ([`Settings`]: submit_utils.cpp `param(...)` calls and the `ARCH`/`OPSYS` macro defaults).
use std::path::PathBuf;

/// Who submits, from where, and when: the inputs that make two submits of one file differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitter {
    /// The submitting user (`AcctGroupUser` when `accounting_group_user` is not given).
    pub user: String,
    /// The directory the submit runs in: the default `Iwd`, and where relative executables,
    /// `queue ... from FILE` and `queue ... matching` are looked up.
    pub cwd: PathBuf,
    /// The submit file as named on the command line (`JobSubmitFile`, `$(SUBMIT_FILE)`).
    pub submit_file: String,
    /// The submit time, seconds since the epoch (`QDate`, `EnteredCurrentStatus`).
    pub now: i64,
    /// The cluster id the jobs get.
    pub cluster: i64,
}

/// The machine and configuration facts a submit uses; [`Settings::default`] is what
/// condor_submit 23.9.6 uses on a 64-bit Linux machine with an empty configuration, except
/// what only the machine knows: the OS version macros are empty and so is the file system
/// domain (HTCondor defaults it to the host name), which leaves `FileSystemDomain` out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `$(ARCH)` and the default `TARGET.Arch` clause.
    pub arch: String,
    /// `$(OPSYS)` and the default `TARGET.OpSys` clause.
    pub opsys: String,
    /// `$(OPSYSANDVER)`.
    pub opsys_and_ver: String,
    /// `$(OPSYSVER)`.
    pub opsys_ver: String,
    /// `$(OPSYSMAJORVER)`.
    pub opsys_major_ver: String,
    /// `FILESYSTEM_DOMAIN`: the job's `FileSystemDomain` unless files are always transferred.
    pub filesystem_domain: String,
    /// `$(SPOOL)`.
    pub spool: String,
    /// `JOB_DEFAULT_REQUESTMEMORY`.
    pub default_request_memory: String,
    /// `JOB_DEFAULT_REQUESTDISK`.
    pub default_request_disk: String,
    /// `JOB_DEFAULT_REQUESTCPUS`.
    pub default_request_cpus: String,
    /// `JOB_DEFAULT_LEASE_DURATION`.
    pub default_lease_duration: Option<String>,
    /// `JOB_DEFAULT_NOTIFICATION`.
    pub default_notification: Option<String>,
    /// `NICE_USER_ACCOUNTING_GROUP_NAME`.
    pub nice_user_group: String,
    /// `SCHEDD_INTERVAL`, for the deferral clause (300 when unset).
    pub schedd_interval: Option<String>,
    /// `APPEND_REQ_VANILLA` or else `APPEND_REQUIREMENTS`.
    pub append_requirements: Option<String>,
    /// `DEFAULT_RANK_VANILLA` or else `DEFAULT_RANK`.
    pub default_rank: Option<String>,
    /// `APPEND_RANK_VANILLA` or else `APPEND_RANK`.
    pub append_rank: Option<String>,
    /// `CondorVersion` of the ads.
    pub condor_version: String,
    /// `CondorPlatform` of the ads.
    pub condor_platform: String,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            arch: "X86_64".into(),
            opsys: "LINUX".into(),
            opsys_and_ver: String::new(),
            opsys_ver: String::new(),
            opsys_major_ver: String::new(),
            filesystem_domain: String::new(),
            spool: String::new(),
            default_request_memory:
                "ifthenelse(MemoryUsage =!= undefined,MemoryUsage,(ImageSize + 1023) / 1024)".into(),
            default_request_disk: "DiskUsage".into(),
            default_request_cpus: "1".into(),
            default_lease_duration: Some("2400".into()),
            default_notification: None,
            nice_user_group: "nice-user".into(),
            schedd_interval: None,
            append_requirements: None,
            default_rank: None,
            append_rank: None,
            condor_version: {
                let (a, b, c) = aerie_config::HTCONDOR_VERSION;
                format!(
                    "$CondorVersion: {a}.{b}.{c} Aerie {} $",
                    env!("CARGO_PKG_VERSION")
                )
            },
            condor_platform: "$CondorPlatform: X86_64-Aerie $".into(),
        }
    }
}

impl Settings {
    /// The settings a configuration gives: the knobs above where set, the defaults
    /// elsewhere. A knob that cannot be expanded is an error naming it.
    pub fn from_config(cfg: &aerie_config::Config) -> Result<Settings, aerie_config::ConfigError> {
        let mut s = Settings::default();
        let get = |k: &str| cfg.expanded(k);
        if let Some(v) = get("FILESYSTEM_DOMAIN")? {
            s.filesystem_domain = v;
        }
        if let Some(v) = get("SPOOL")? {
            s.spool = v;
        }
        if let Some(v) = get("JOB_DEFAULT_REQUESTMEMORY")? {
            s.default_request_memory = v;
        }
        if let Some(v) = get("JOB_DEFAULT_REQUESTDISK")? {
            s.default_request_disk = v;
        }
        if let Some(v) = get("JOB_DEFAULT_REQUESTCPUS")? {
            s.default_request_cpus = v;
        }
        if let Some(v) = get("JOB_DEFAULT_LEASE_DURATION")? {
            s.default_lease_duration = Some(v);
        }
        s.default_notification = get("JOB_DEFAULT_NOTIFICATION")?;
        if let Some(v) = get("NICE_USER_ACCOUNTING_GROUP_NAME")? {
            s.nice_user_group = v;
        }
        s.schedd_interval = get("SCHEDD_INTERVAL")?;
        s.append_requirements = match get("APPEND_REQ_VANILLA")? {
            Some(v) => Some(v),
            None => get("APPEND_REQUIREMENTS")?,
        };
        s.default_rank = match get("DEFAULT_RANK_VANILLA")? {
            Some(v) => Some(v),
            None => get("DEFAULT_RANK")?,
        };
        s.append_rank = match get("APPEND_RANK_VANILLA")? {
            Some(v) => Some(v),
            None => get("APPEND_RANK")?,
        };
        Ok(s)
    }
}

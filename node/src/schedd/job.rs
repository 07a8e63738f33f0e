//! A job in the access point's queue: its id, its status codes and the attributes of its ad
//! that the access point reads and owns, under HTCondor's names and with HTCondor's meanings
//! (src/condor_includes/condor_attributes.h, src/condor_utils/proc.h for `JobStatus`).
use classad::ClassAd;
use std::fmt;

/// A job's id: (`ClusterId`, `ProcId`), printed CLUSTER.PROC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId {
    /// `ClusterId`.
    pub cluster: i64,
    /// `ProcId`.
    pub proc: i64,
}

impl JobId {
    /// The job `cluster`.`proc`.
    pub fn new(cluster: i64, proc: i64) -> JobId {
        JobId { cluster, proc }
    }

    /// Parses "CLUSTER.PROC" (both non-negative integers).
    pub fn parse(s: &str) -> Option<JobId> {
        let (c, p) = s.trim().split_once('.')?;
        let (cluster, proc) = (c.parse().ok()?, p.parse().ok()?);
        (cluster >= 0 && proc >= 0).then_some(JobId { cluster, proc })
    }

    /// The id a job ad carries (`ClusterId`, `ProcId`), if both are integers.
    pub fn of(ad: &ClassAd) -> Option<JobId> {
        Some(JobId {
            cluster: ad.eval_attr("ClusterId").as_int()?,
            proc: ad.eval_attr("ProcId").as_int()?,
        })
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.cluster, self.proc)
    }
}

/// HTCondor's `JobStatus` values (src/condor_utils/proc.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// 1: waiting for a match.
    Idle = 1,
    /// 2: running on a claimed slot.
    Running = 2,
    /// 3: removed; leaves the queue once its process is gone.
    Removed = 3,
    /// 4: completed; leaves the queue at once.
    Completed = 4,
    /// 5: held until released.
    Held = 5,
    /// 6: transferring output (not used by Aerie: outputs arrive with the exit event).
    TransferringOutput = 6,
    /// 7: suspended (not used by Aerie yet).
    Suspended = 7,
}

impl Status {
    /// Every status, in code order.
    pub const ALL: [Status; 7] = [
        Status::Idle,
        Status::Running,
        Status::Removed,
        Status::Completed,
        Status::Held,
        Status::TransferringOutput,
        Status::Suspended,
    ];

    /// The status of code `n`.
    pub fn from_code(n: i64) -> Option<Status> {
        Status::ALL.into_iter().find(|s| *s as i64 == n)
    }

    /// The job's `JobStatus`; a job ad without a valid one reads as idle.
    pub fn of(ad: &ClassAd) -> Status {
        ad.eval_attr("JobStatus")
            .as_int()
            .and_then(Status::from_code)
            .unwrap_or(Status::Idle)
    }

    /// Whether a job in this status has a process on a claim (running, sending its output
    /// back, or suspended).
    pub fn has_process(self) -> bool {
        matches!(
            self,
            Status::Running | Status::TransferringOutput | Status::Suspended
        )
    }

    /// HTCondor's name of the status as condor_q's totals line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Status::Idle => "idle",
            Status::Running => "running",
            Status::Removed => "removed",
            Status::Completed => "completed",
            Status::Held => "held",
            Status::TransferringOutput => "transferring_output",
            Status::Suspended => "suspended",
        }
    }
}

/// HTCondor's `HoldReasonCode` values the access point sets (src/condor_utils/condor_holdcodes.h).
pub mod hold_code {
    /// condor_hold by a user.
    pub const USER_REQUEST: i64 = 1;
    /// A job policy expression (periodic_hold, on_exit_hold).
    pub const JOB_POLICY: i64 = 3;
    /// The job could not start (executable missing, unusable account...).
    pub const STARTER_ERROR: i64 = 6;
    /// Output files could not be transferred back.
    pub const TRANSFER_OUTPUT_ERROR: i64 = 12;
    /// Input files could not be transferred.
    pub const TRANSFER_INPUT_ERROR: i64 = 13;
}

/// Attributes the access point owns: set or cleared by it, never taken from a submitter and
/// never changed by condor_qedit.
pub const SCHEDD_OWNED: &[&str] = &[
    "ClusterId",
    "ProcId",
    "Owner",
    "User",
    "QDate",
    "JobStatus",
    "LastJobStatus",
    "EnteredCurrentStatus",
    "NumJobStarts",
    "NumJobCompletions",
    "NumShadowStarts",
    "JobRunCount",
    "JobStartDate",
    "JobCurrentStartDate",
    "CompletionDate",
    "RemoteWallClockTime",
    "RemoteHost",
    "LastRemoteHost",
    "ExitCode",
    "ExitBySignal",
    "ExitSignal",
    "HoldReason",
    "HoldReasonCode",
    "HoldReasonSubCode",
    "NumHolds",
    "ReleaseReason",
    "RemoveReason",
    "MyType",
    "TargetType",
];

/// Parses one job ad in old ClassAd syntax, strictly: a line that does not parse is an
/// error (naming the line), never the silent end of the ad.
pub fn parse_ad(text: &str) -> Result<ClassAd, String> {
    if text.trim_start().starts_with('[') {
        return classad::parse_ad(text).map_err(|e| e.to_string());
    }
    match classad::parse_old_ads_strict(text) {
        Ok(mut v) if v.len() == 1 => Ok(v.remove(0)),
        Ok(v) if v.is_empty() => Err("empty ad".into()),
        Ok(v) => Err(format!("{} ads where one was expected", v.len())),
        Err(e) => Err(e.to_string()),
    }
}

/// A string attribute, if set and a string.
pub fn get_str(ad: &ClassAd, attr: &str) -> Option<String> {
    ad.eval_attr(attr).as_str().map(str::to_string)
}

/// An integer attribute, or `default`.
pub fn get_int(ad: &ClassAd, attr: &str, default: i64) -> i64 {
    ad.eval_attr(attr).as_int().unwrap_or(default)
}

/// The job's owner (`Owner`), empty when missing.
pub fn owner(ad: &ClassAd) -> String {
    get_str(ad, "Owner").unwrap_or_default()
}

/// The submitter the job negotiates as: `AccountingGroup`@domain when it has an accounting
/// group, else `Owner`@domain (HTCondor's schedd: `SubmitterName`, src/condor_schedd.V6/qmgmt.cpp).
pub fn submitter_name(ad: &ClassAd, domain: &str) -> String {
    match get_str(ad, "AccountingGroup").filter(|g| !g.is_empty()) {
        Some(g) => format!("{g}@{domain}"),
        None => format!("{}@{domain}", owner(ad)),
    }
}

/// The attributes that make jobs interchangeable for a claim (HTCondor's autocluster
/// significant attributes, reduced to the ones that matter for matching and charging).
pub const SIGNIFICANT: &[&str] = &[
    "Owner",
    "AccountingGroup",
    "NiceUser",
    "Requirements",
    "Rank",
    "RequestCpus",
    "RequestMemory",
    "RequestDisk",
    "RequestGpus",
    "ConcurrencyLimits",
];

/// The job's autocluster signature: the unparsed significant attributes. Two jobs with the
/// same signature can run one after the other on one claim.
pub fn signature(ad: &ClassAd) -> String {
    let mut s = String::new();
    for a in SIGNIFICANT {
        s.push_str(a);
        s.push('=');
        if let Some(e) = ad.lookup(a) {
            s.push_str(&e.to_string());
        }
        s.push('\n');
    }
    s
}

/// The autocluster's name in resource requests and grants: the first 8 bytes of the
/// signature's SHA-256, in hex (stable across restarts, short on the wire).
pub fn autocluster_id(signature: &str) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(signature.as_bytes());
    d[..8].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ads_parse_strictly() {
        assert!(parse_ad("A = 1\nB = \"x\"").is_ok());
        assert!(parse_ad("A = 1\nB = (1 +").is_err());
        assert!(parse_ad("").is_err());
    }

    #[test]
    fn job_ids_parse_and_print() {
        assert_eq!(JobId::parse("12.3"), Some(JobId::new(12, 3)));
        assert_eq!(JobId::new(12, 3).to_string(), "12.3");
        for bad in ["12", "a.b", "-1.0", "1.-2", ""] {
            assert_eq!(JobId::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn submitter_names_follow_the_accounting_group() {
        let ad = classad::parse_ad("Owner = \"alice\"\nAccountingGroup = \"grp.alice\"").unwrap();
        assert_eq!(submitter_name(&ad, "d"), "grp.alice@d");
        let ad = classad::parse_ad("Owner = \"alice\"").unwrap();
        assert_eq!(submitter_name(&ad, "d"), "alice@d");
    }

    #[test]
    fn signatures_differ_by_significant_attributes_only() {
        let a = classad::parse_ad("Owner = \"a\"\nRequestCpus = 1\nCmd = \"x\"").unwrap();
        let b = classad::parse_ad("Owner = \"a\"\nRequestCpus = 1\nCmd = \"y\"").unwrap();
        let c = classad::parse_ad("Owner = \"a\"\nRequestCpus = 2\nCmd = \"x\"").unwrap();
        assert_eq!(signature(&a), signature(&b));
        assert_ne!(signature(&a), signature(&c));
    }
}

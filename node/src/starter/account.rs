//! Which Unix account runs a job (`condor_starter.V6.1/jic_shadow.cpp`,
//! `JICShadow::initUserPriv`; `condor_utils/uids.cpp`).
//!
//! A starter running as root switches to an unprivileged account before it runs the job:
//! - with `STARTER_ALLOW_RUNAS_OWNER` true (the Unix default), the job's `Owner`; an owner with
//!   no account here is refused ("Uid for ... not found in passwd file", as with
//!   `SOFT_UID_DOMAIN = False`);
//! - otherwise the slot's `SLOT<N>_USER` (`SLOT1_USER`, or `SLOT1_1_USER` for a dynamic slot),
//!   `nobody` when that is not set, and `nobody` again when it is set to `root`.
//!
//! Whatever the choice, an account with uid 0 or gid 0 is refused (`set_user_ids` rejects
//! root). A starter that is not root (a personal pool) cannot switch and runs the job as its
//! own account. The choice is a pure function of the owner, the knobs and an account lookup,
//! so it is tested without touching the system's user database.

use super::error::StartError;
use nix::unistd::{getgrouplist, Gid, Uid, User};
use std::ffi::CString;

/// A Unix account a job can run as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    /// The login name.
    pub name: String,
    /// The user id.
    pub uid: u32,
    /// The primary group id.
    pub gid: u32,
    /// The supplementary groups, the primary one included (`initgroups`).
    pub groups: Vec<u32>,
}

impl Account {
    /// The account of that name in the system's user database, with its groups.
    pub fn lookup(name: &str) -> Option<Account> {
        let user = User::from_name(name).ok()??;
        let groups = CString::new(name)
            .ok()
            .and_then(|c| getgrouplist(&c, user.gid).ok())
            .map(|g| g.into_iter().map(Gid::as_raw).collect())
            .unwrap_or_else(|| vec![user.gid.as_raw()]);
        Some(Account {
            name: user.name,
            uid: user.uid.as_raw(),
            gid: user.gid.as_raw(),
            groups,
        })
    }

    /// The account this process runs as.
    pub fn current() -> Account {
        let uid = Uid::current();
        let gid = Gid::current();
        let name = User::from_uid(uid)
            .ok()
            .flatten()
            .map(|u| u.name)
            .unwrap_or_else(|| uid.to_string());
        Account {
            name,
            uid: uid.as_raw(),
            gid: gid.as_raw(),
            groups: vec![gid.as_raw()],
        }
    }
}

/// The knobs that decide whose account runs a job on this slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunAsPolicy {
    /// `STARTER_ALLOW_RUNAS_OWNER`: run as the job's owner (default true).
    pub allow_runas_owner: bool,
    /// `SLOT<N>_USER`: the account for this slot's jobs when not running as the owner.
    pub slot_user: Option<String>,
}

impl Default for RunAsPolicy {
    fn default() -> Self {
        RunAsPolicy {
            allow_runas_owner: true,
            slot_user: None,
        }
    }
}

/// The knob naming the account of a slot's jobs: `SLOT1_USER` for `slot1`, `SLOT1_1_USER` for
/// the dynamic slot `slot1_1`; a slot name that is not `slotX...` counts as `slot1`, as in
/// `JICShadow::initUserPriv`.
pub fn slot_user_knob(slot_name: &str) -> String {
    let name = if slot_name.len() > 4 && slot_name[..4].eq_ignore_ascii_case("slot") {
        slot_name
    } else {
        "slot1"
    };
    format!("{}_USER", name.to_ascii_uppercase())
}

impl RunAsPolicy {
    /// Reads the policy of the slot `slot_name` through `knob` (a configuration lookup);
    /// a `STARTER_ALLOW_RUNAS_OWNER` that is not a boolean is an error naming it.
    pub fn from_knobs(
        slot_name: &str,
        knob: impl Fn(&str) -> Option<String>,
    ) -> Result<RunAsPolicy, String> {
        let allow_runas_owner = match knob("STARTER_ALLOW_RUNAS_OWNER") {
            None => true,
            Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                "true" | "t" | "yes" | "1" => true,
                "false" | "f" | "no" | "0" => false,
                _ => return Err(format!("STARTER_ALLOW_RUNAS_OWNER = {v} is not a boolean")),
            },
        };
        let slot_user = knob(&slot_user_knob(slot_name))
            .map(|u| u.trim().to_string())
            .filter(|u| !u.is_empty());
        Ok(RunAsPolicy {
            allow_runas_owner,
            slot_user,
        })
    }
}

/// The account a job runs as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunAs {
    /// The node is not root: the job runs as the node's own account (a personal pool).
    NodeAccount,
    /// The node is root and switches to this account before running the job.
    User(Account),
}

/// Chooses the account for a job of `owner`: see the module documentation.
pub fn choose_account(
    owner: &str,
    policy: &RunAsPolicy,
    node_is_root: bool,
    lookup: impl Fn(&str) -> Option<Account>,
) -> Result<RunAs, StartError> {
    if !node_is_root {
        return Ok(RunAs::NodeAccount);
    }
    let name = if policy.allow_runas_owner {
        owner.to_string()
    } else {
        match policy.slot_user.as_deref() {
            Some("root") => {
                tracing::warn!("SLOT<N>_USER set to root, which is not allowed; using nobody");
                "nobody".to_string()
            }
            Some(user) => user.to_string(),
            None => "nobody".to_string(),
        }
    };
    let account = lookup(&name).ok_or(StartError::UnknownOwner { owner: name })?;
    if account.uid == 0 || account.gid == 0 {
        return Err(StartError::RootOwner {
            owner: account.name,
            uid: account.uid,
            gid: account.gid,
        });
    }
    Ok(RunAs::User(account))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users(name: &str) -> Option<Account> {
        let (uid, gid) = match name {
            "root" => (0, 0),
            "alice" => (1000, 1000),
            "wheelie" => (1001, 0),
            "nobody" => (65534, 65534),
            "slotuser" => (2001, 2001),
            _ => return None,
        };
        Some(Account {
            name: name.into(),
            uid,
            gid,
            groups: vec![gid],
        })
    }

    fn chosen(owner: &str, policy: &RunAsPolicy) -> Result<String, String> {
        match choose_account(owner, policy, true, users) {
            Ok(RunAs::User(a)) => Ok(a.name),
            Ok(RunAs::NodeAccount) => Ok("<node>".into()),
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn as_owner_by_default_refusing_root_and_unknown() {
        let p = RunAsPolicy::default();
        assert_eq!(chosen("alice", &p), Ok("alice".into()));
        assert_eq!(
            chosen("root", &p),
            Err("Attempt to run job of \"root\" as root (uid 0, gid 0) rejected".into())
        );
        assert!(chosen("wheelie", &p).unwrap_err().contains("rejected"));
        assert_eq!(
            chosen("mallory", &p),
            Err("Uid for \"mallory\" not found in passwd file".into())
        );
    }

    #[test]
    fn not_as_owner_maps_to_slot_user_or_nobody() {
        let nobody = RunAsPolicy {
            allow_runas_owner: false,
            slot_user: None,
        };
        assert_eq!(chosen("root", &nobody), Ok("nobody".into()));
        assert_eq!(chosen("mallory", &nobody), Ok("nobody".into()));
        let slot = RunAsPolicy {
            allow_runas_owner: false,
            slot_user: Some("slotuser".into()),
        };
        assert_eq!(chosen("alice", &slot), Ok("slotuser".into()));
        let root = RunAsPolicy {
            allow_runas_owner: false,
            slot_user: Some("root".into()),
        };
        assert_eq!(chosen("alice", &root), Ok("nobody".into()));
        let missing = RunAsPolicy {
            allow_runas_owner: false,
            slot_user: Some("ghost".into()),
        };
        assert!(chosen("alice", &missing).unwrap_err().contains("\"ghost\""));
    }

    #[test]
    fn a_personal_pool_runs_as_itself() {
        let r = choose_account("root", &RunAsPolicy::default(), false, users).unwrap();
        assert_eq!(r, RunAs::NodeAccount);
    }

    #[test]
    fn knobs_as_the_starter_reads_them() {
        assert_eq!(slot_user_knob("slot1"), "SLOT1_USER");
        assert_eq!(slot_user_knob("slot2_3"), "SLOT2_3_USER");
        assert_eq!(slot_user_knob("x"), "SLOT1_USER");
        let knobs = |k: &str| match k {
            "STARTER_ALLOW_RUNAS_OWNER" => Some("False".to_string()),
            "SLOT2_USER" => Some("slotuser".to_string()),
            _ => None,
        };
        let p = RunAsPolicy::from_knobs("slot2", knobs).unwrap();
        assert!(!p.allow_runas_owner);
        assert_eq!(p.slot_user.as_deref(), Some("slotuser"));
        assert_eq!(
            RunAsPolicy::from_knobs("slot1", |_| None).unwrap(),
            RunAsPolicy::default()
        );
        assert!(RunAsPolicy::from_knobs("slot1", |_| Some("maybe".into())).is_err());
    }

    #[test]
    fn looks_up_real_accounts() {
        let nobody = Account::lookup("nobody").expect("nobody exists");
        assert_ne!(nobody.uid, 0);
        assert!(nobody.groups.contains(&nobody.gid));
        assert_eq!(Account::lookup("no-such-user-aerie"), None);
        assert_eq!(Account::current().uid, Uid::current().as_raw());
    }
}

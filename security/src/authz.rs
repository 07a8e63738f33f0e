//! HTCondor's authorization levels and the `ALLOW_<LEVEL>`/`DENY_<LEVEL>` policy.
//!
//! As in HTCondor (`condor_perms.cpp`, `condor_ipverify.cpp`): a caller may run a command of
//! level L when one of its principals (or, for host-qualified patterns, its address) matches
//! an `ALLOW_` list of L or of a level that implies L, and L's own `DENY_` list does not.
//! Implications: `WRITE` implies `READ`; `ADMINISTRATOR` and `DAEMON` imply
//! `WRITE`; `NEGOTIATOR`, `ADVERTISE_STARTD` and `ADVERTISE_SCHEDD` imply `READ`.
//!
//! Patterns are HTCondor's `user@domain/host`: `*` matches any run of characters, the
//! `/host` part (an address or `*`) is optional. A principal is `name@role` for a certificate
//! (`cm1@cm`, `exec3@execute`), `user@local` for a Unix-socket caller.
//!
//! The defaults (each knob unset) give every role what it needs and nothing else:
//! `ALLOW_READ = *`, `ALLOW_WRITE = *`, `ALLOW_ADMINISTRATOR = *@admin`,
//! `ALLOW_DAEMON = *@cm, *@execute, *@access-point`, `ALLOW_NEGOTIATOR = *@cm`,
//! `ALLOW_ADVERTISE_STARTD = *@execute, *@admin`,
//! `ALLOW_ADVERTISE_SCHEDD = *@access-point, *@admin` (`cmctl advertise` is condor_advertise).
use crate::identity::Caller;
use std::fmt;
use std::net::IpAddr;

/// An authorization level (HTCondor's `DCpermission`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Read-only queries (`condor_status`, `condor_userprio` without changes).
    Read,
    /// Changing one's own things (submitting, removing one's own jobs).
    Write,
    /// Changing the pool: priorities, quotas, limits, drains, membership.
    Administrator,
    /// Daemon-to-daemon commands (claims, job events, forwarded admin requests).
    Daemon,
    /// What the negotiator sends: requests for demand, grants, matches.
    Negotiator,
    /// Advertising execute-node (slot, startd) ads to the collector.
    AdvertiseStartd,
    /// Advertising access-point (Submitter, Scheduler) ads to the collector.
    AdvertiseSchedd,
}

impl Level {
    /// Every level.
    pub const ALL: [Level; 7] = [
        Level::Read,
        Level::Write,
        Level::Administrator,
        Level::Daemon,
        Level::Negotiator,
        Level::AdvertiseStartd,
        Level::AdvertiseSchedd,
    ];

    /// HTCondor's name of the level (`ADVERTISE_STARTD`).
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Read => "READ",
            Level::Write => "WRITE",
            Level::Administrator => "ADMINISTRATOR",
            Level::Daemon => "DAEMON",
            Level::Negotiator => "NEGOTIATOR",
            Level::AdvertiseStartd => "ADVERTISE_STARTD",
            Level::AdvertiseSchedd => "ADVERTISE_SCHEDD",
        }
    }

    /// The levels whose holders may also run commands of this level (itself first).
    pub fn granted_by(self) -> &'static [Level] {
        use Level::*;
        match self {
            Read => &[
                Read,
                Write,
                Administrator,
                Daemon,
                Negotiator,
                AdvertiseStartd,
                AdvertiseSchedd,
            ],
            Write => &[Write, Administrator, Daemon],
            Administrator => &[Administrator],
            Daemon => &[Daemon],
            Negotiator => &[Negotiator],
            AdvertiseStartd => &[AdvertiseStartd],
            AdvertiseSchedd => &[AdvertiseSchedd],
        }
    }

    fn default_allow(self) -> &'static str {
        match self {
            Level::Read | Level::Write => "*",
            Level::Administrator => "*@admin",
            Level::Daemon => "*@cm, *@execute, *@access-point",
            Level::Negotiator => "*@cm",
            // Admins too: `cmctl advertise` is condor_advertise, an administrator's tool.
            Level::AdvertiseStartd => "*@execute, *@admin",
            Level::AdvertiseSchedd => "*@access-point, *@admin",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `user@domain/host` entry of an `ALLOW_`/`DENY_` list.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    principal: String,
    host: Option<String>,
}

impl Pattern {
    fn parse(s: &str) -> Pattern {
        match s.split_once('/') {
            Some((p, h)) => Pattern {
                principal: p.to_string(),
                host: Some(h.to_string()),
            },
            None => Pattern {
                principal: s.to_string(),
                host: None,
            },
        }
    }

    fn matches(&self, principals: &[String], addr: Option<IpAddr>) -> bool {
        if let Some(h) = &self.host {
            let ok = match addr {
                Some(a) => glob(h, &a.to_string()),
                None => h == "*",
            };
            if !ok {
                return false;
            }
        }
        principals.iter().any(|p| glob(&self.principal, p))
    }
}

/// Case-insensitive glob with `*` (any run), as HTCondor matches principals.
fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.to_ascii_lowercase().chars().collect();
    let t: Vec<char> = text.to_ascii_lowercase().chars().collect();
    // Iterative wildcard match with backtracking to the last star.
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < t.len() {
        if i < p.len() && p[i] != '*' && p[i] == t[j] {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

/// The lists of one level and where they came from (for error messages).
#[derive(Debug, Clone)]
struct Lists {
    allow: Vec<Pattern>,
    allow_text: String,
    deny: Vec<Pattern>,
}

/// The pool's authorization policy: an allow and a deny list per level.
#[derive(Debug, Clone)]
pub struct Policy {
    levels: Vec<(Level, Lists)>,
}

/// Why a caller was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{caller}{from} is not authorized at {level} ({why})")]
pub struct Denied {
    /// The caller, as principals print.
    pub caller: String,
    /// ` from ADDR` when known.
    pub from: String,
    /// The level the command needs.
    pub level: Level,
    /// Which list decided.
    pub why: String,
}

fn split_list(text: &str) -> Vec<Pattern> {
    text.split(|c: char| c == ',' || c.is_whitespace())
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(Pattern::parse)
        .collect()
}

impl Policy {
    /// The policy from knob values: `lookup("ALLOW_READ")` gives the list's text if set.
    pub fn from_lookup(mut lookup: impl FnMut(&str) -> Option<String>) -> Policy {
        let levels = Level::ALL
            .into_iter()
            .map(|l| {
                let allow_text = lookup(&format!("ALLOW_{}", l.as_str()))
                    .unwrap_or_else(|| l.default_allow().to_string());
                let deny_text = lookup(&format!("DENY_{}", l.as_str())).unwrap_or_default();
                (
                    l,
                    Lists {
                        allow: split_list(&allow_text),
                        allow_text,
                        deny: split_list(&deny_text),
                    },
                )
            })
            .collect();
        Policy { levels }
    }

    /// The policy from a configuration's `ALLOW_<LEVEL>`/`DENY_<LEVEL>` knobs (defaults for
    /// those unset, and with no configuration).
    pub fn from_config(cfg: Option<&aerie_config::Config>) -> Result<Policy, String> {
        let mut errors = Vec::new();
        let p = Policy::from_lookup(|k| match cfg.map(|c| c.expanded(k)) {
            Some(Ok(v)) => v,
            Some(Err(e)) => {
                errors.push(e.to_string());
                None
            }
            None => None,
        });
        match errors.is_empty() {
            true => Ok(p),
            false => Err(errors.join("; ")),
        }
    }

    /// The default policy (no knob set).
    pub fn defaults() -> Policy {
        Policy::from_lookup(|_| None)
    }

    fn lists(&self, l: Level) -> &Lists {
        &self
            .levels
            .iter()
            .find(|(x, _)| *x == l)
            .expect("every level has lists")
            .1
    }

    /// Whether `caller` (from `addr`) may run a command of `level`.
    pub fn check(&self, caller: &Caller, addr: Option<IpAddr>, level: Level) -> Result<(), Denied> {
        let principals = caller.principals();
        let denied = |why: String| Denied {
            caller: caller.to_string(),
            from: addr.map(|a| format!(" from {a}")).unwrap_or_default(),
            level,
            why,
        };
        // An insecure listener authenticates nobody; it is for development only and says so
        // at every start, so it allows everything rather than pretend to check.
        if *caller == Caller::Anonymous {
            return Ok(());
        }
        // A token is limited to its scopes whatever the lists say (HTCondor's token
        // `scope` claim, `condor:/READ`).
        if let Caller::User { scopes, .. } = caller {
            if !level.granted_by().iter().any(|l| scopes.contains(l)) {
                return Err(denied(format!(
                    "the token's scope ({}) does not include {SCOPE}{level}",
                    crate::token::scope_claim(scopes),
                    SCOPE = crate::token::SCOPE_PREFIX
                )));
            }
        }
        if self
            .lists(level)
            .deny
            .iter()
            .any(|p| p.matches(&principals, addr))
        {
            return Err(denied(format!("matched DENY_{level}")));
        }
        if level.granted_by().iter().any(|l| {
            self.lists(*l)
                .allow
                .iter()
                .any(|p| p.matches(&principals, addr))
        }) {
            return Ok(());
        }
        Err(denied(format!(
            "no ALLOW_{level} entry matches; ALLOW_{level} = {}",
            self.lists(level).allow_text
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::{Identity, Role};

    fn daemon(name: &str, role: Role) -> Caller {
        Caller::Daemon(Identity {
            name: name.into(),
            roles: vec![role],
        })
    }

    #[test]
    fn globs_match_like_htcondor_patterns() {
        assert!(glob("*", "cm1@cm"));
        assert!(glob("*@cm", "CM1@cm"));
        assert!(glob("cm*@c*", "cm12@cm"));
        assert!(!glob("*@cm", "exec1@execute"));
        assert!(!glob("cm1@cm", "cm11@cm"));
        assert!(glob("a*b*c", "axxbyyc"));
        assert!(!glob("a*b*c", "axxbyy"));
    }

    #[test]
    fn defaults_give_each_role_its_levels_only() {
        let p = Policy::defaults();
        let cm = daemon("cm1", Role::Cm);
        let ex = daemon("exec1", Role::Execute);
        let ap = daemon("ap", Role::AccessPoint);
        let admin = daemon("alice", Role::Admin);
        let ok = |c: &Caller, l| p.check(c, None, l).is_ok();
        assert!(ok(&admin, Level::Administrator) && ok(&admin, Level::Write));
        assert!(!ok(&admin, Level::Daemon) && !ok(&admin, Level::Negotiator));
        assert!(ok(&cm, Level::Negotiator) && ok(&cm, Level::Daemon));
        assert!(!ok(&cm, Level::Administrator) && !ok(&cm, Level::AdvertiseStartd));
        assert!(ok(&ex, Level::AdvertiseStartd) && !ok(&ex, Level::AdvertiseSchedd));
        assert!(ok(&ap, Level::AdvertiseSchedd) && !ok(&ap, Level::Negotiator));
        assert!(ok(&ex, Level::Read) && ok(&ap, Level::Write));
        assert!(!ok(&Caller::LocalUser("bob".into()), Level::Administrator));
    }

    #[test]
    fn deny_wins_and_hosts_qualify() {
        let p = Policy::from_lookup(|k| match k {
            "ALLOW_ADMINISTRATOR" => Some("*@admin/10.0.0.*".into()),
            "DENY_WRITE" => Some("mallory@admin".into()),
            _ => None,
        });
        let alice = daemon("alice", Role::Admin);
        let mallory = daemon("mallory", Role::Admin);
        let inside = Some("10.0.0.7".parse().unwrap());
        let outside = Some("10.0.1.7".parse().unwrap());
        assert!(p.check(&alice, inside, Level::Administrator).is_ok());
        let e = p.check(&alice, outside, Level::Administrator).unwrap_err();
        assert!(
            e.to_string()
                .contains("ALLOW_ADMINISTRATOR = *@admin/10.0.0.*"),
            "{e}"
        );
        // A deny list refuses its own level's commands, whatever grants them.
        let e = p.check(&mallory, inside, Level::Write).unwrap_err();
        assert!(e.to_string().contains("DENY_WRITE"), "{e}");
    }

    #[test]
    fn a_token_is_limited_to_its_scopes_and_matched_by_its_identity() {
        let p = Policy::from_lookup(|k| {
            (k == "ALLOW_ADMINISTRATOR").then(|| "*@admin, alice@pool.example".to_string())
        });
        let user = |who: &str, scopes: &[Level]| Caller::User {
            identity: who.into(),
            scopes: scopes.to_vec(),
        };
        let reader = user("alice@pool.example", &[Level::Read]);
        assert!(p.check(&reader, None, Level::Read).is_ok());
        let e = p
            .check(&reader, None, Level::Write)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("condor:/READ") && e.contains("does not include condor:/WRITE"),
            "{e}"
        );
        let admin = user("alice@pool.example", &[Level::Administrator]);
        assert!(p.check(&admin, None, Level::Administrator).is_ok());
        // WRITE is implied by an ADMINISTRATOR scope, as ALLOW_ lists imply it.
        assert!(p.check(&admin, None, Level::Write).is_ok());
        // The scope is necessary, not sufficient: bob is in no ALLOW_ADMINISTRATOR.
        let bob = user("bob@pool.example", &[Level::Administrator]);
        let e = p
            .check(&bob, None, Level::Administrator)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("bob@pool.example") && e.contains("no ALLOW_ADMINISTRATOR"),
            "{e}"
        );
    }
}

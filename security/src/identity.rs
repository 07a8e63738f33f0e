//! Who is calling: identities carried in pool certificates, and the caller of one RPC.
//!
//! A pool certificate names one daemon (or admin) and the roles it plays. Its subject
//! alternative names hold, per role, a DNS name `<role>.aerie` (what a client checks when it
//! connects to a daemon of that role, so a node cannot pose as a CM) and a URI
//! `aerie://<role>/<name>` (what a server reads to learn who called). The principal names an
//! `ALLOW_<LEVEL>` pattern is matched against are `<name>@<role>`, shaped like HTCondor's
//! `user@domain`.
use std::fmt;
use std::net::IpAddr;

/// The DNS suffix of role names in pool certificates.
pub const ROLE_DOMAIN: &str = "aerie";

/// What a certificate's holder is to the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// A central manager: Raft member, collector, negotiator when leader.
    Cm,
    /// An execute node (startd and starters).
    Execute,
    /// An access point (schedd and shadows).
    AccessPoint,
    /// A person or script administering the pool (`cmctl`).
    Admin,
}

impl Role {
    /// Every role, in a fixed order.
    pub const ALL: [Role; 4] = [Role::Cm, Role::Execute, Role::AccessPoint, Role::Admin];

    /// The role's name in certificates and principals.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Cm => "cm",
            Role::Execute => "execute",
            Role::AccessPoint => "access-point",
            Role::Admin => "admin",
        }
    }

    /// Parses a role name (`cm`, `execute`, `access-point`, `admin`).
    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// The DNS name a server of this role carries and a client verifies (`cm.aerie`).
    pub fn server_name(self) -> String {
        format!("{}.{ROLE_DOMAIN}", self.as_str())
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The holder of a pool certificate: its name and roles.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Identity {
    /// The daemon's or admin's name (`cm1`, `exec3`, `alice`).
    pub name: String,
    /// What it may act as.
    pub roles: Vec<Role>,
}

impl Identity {
    /// Whether the holder plays `role`.
    pub fn is(&self, role: Role) -> bool {
        self.roles.contains(&role)
    }

    /// Reads the identity from a DER certificate (the `aerie://role/name` URIs).
    pub fn from_der(der: &[u8]) -> Result<Identity, String> {
        let (_, cert) = x509_parser::parse_x509_certificate(der)
            .map_err(|e| format!("unreadable peer certificate: {e}"))?;
        let mut name: Option<String> = None;
        let mut roles = Vec::new();
        if let Ok(Some(san)) = cert.subject_alternative_name() {
            for g in &san.value.general_names {
                if let x509_parser::extensions::GeneralName::URI(uri) = g {
                    let Some(rest) = uri.strip_prefix("aerie://") else {
                        continue;
                    };
                    let Some((role, n)) = rest.split_once('/') else {
                        continue;
                    };
                    let Some(role) = Role::parse(role) else {
                        continue;
                    };
                    match &name {
                        Some(prev) if prev != n => {
                            return Err(format!(
                                "peer certificate names two holders, {prev:?} and {n:?}"
                            ))
                        }
                        _ => name = Some(n.to_string()),
                    }
                    if !roles.contains(&role) {
                        roles.push(role);
                    }
                }
            }
        }
        match name {
            Some(name) => Ok(Identity { name, roles }),
            None => Err(
                "peer certificate carries no aerie:// identity (not a pool certificate \
                         made by `aerie-cm security init`/`issue`)"
                    .into(),
            ),
        }
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let roles: Vec<&str> = self.roles.iter().map(|r| r.as_str()).collect();
        write!(f, "{}@{}", self.name, roles.join("+"))
    }
}

/// The authenticated caller of one RPC, as the authorization layer found it (handlers read it
/// from the request's extensions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// A peer that presented a pool certificate.
    Daemon(Identity),
    /// A Unix user on a local socket (HTCondor's FS authentication).
    LocalUser(String),
    /// A person or script that presented a valid token (no certificate): its principal is
    /// the token's identity, and it may use only the levels of the token's scopes.
    User {
        /// The token's `sub` (`alice@pool.example`).
        identity: String,
        /// The levels the token's `scope` allows.
        scopes: Vec<crate::authz::Level>,
    },
    /// Nobody: an insecure (development) listener.
    Anonymous,
}

impl Caller {
    /// The principal names `ALLOW_<LEVEL>` patterns are matched against.
    pub fn principals(&self) -> Vec<String> {
        match self {
            Caller::Daemon(id) => id
                .roles
                .iter()
                .map(|r| format!("{}@{}", id.name, r))
                .collect(),
            Caller::LocalUser(u) => vec![format!("{u}@local")],
            Caller::User { identity, .. } => vec![identity.clone()],
            Caller::Anonymous => vec!["anonymous@unauthenticated".into()],
        }
    }

    /// Whether the caller holds a certificate with `role`.
    pub fn is(&self, role: Role) -> bool {
        matches!(self, Caller::Daemon(id) if id.is(role))
    }

    /// The certificate's holder name, if the caller has one.
    pub fn daemon_name(&self) -> Option<&str> {
        match self {
            Caller::Daemon(id) => Some(&id.name),
            _ => None,
        }
    }
}

impl fmt::Display for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Caller::Daemon(id) => id.fmt(f),
            Caller::LocalUser(u) => write!(f, "{u}@local"),
            Caller::User { identity, .. } => write!(f, "{identity} (token)"),
            Caller::Anonymous => f.write_str("anonymous"),
        }
    }
}

/// The caller and where it called from, for authorization and audit.
#[derive(Debug, Clone)]
pub struct Peer {
    /// Who.
    pub caller: Caller,
    /// From where, when known (TCP peers).
    pub addr: Option<IpAddr>,
}

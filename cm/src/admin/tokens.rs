//! What the admin service adds to a write before it enters the log: the audit stamp (who,
//! from where, when) and, for `cmctl token create`, the token's id, times and signature.
//!
//! HTCondor's `condor_token_create` asks a collector or schedd to sign a token with the pool
//! key (`src/condor_tools/token_create.cpp`, the `TOKEN_REQUEST` path in
//! `src/condor_io/condor_auth_passwd.cpp`). Here the CM that receives the request from the
//! authenticated caller signs it and proposes the record; a forwarded request arrives already
//! complete and stamped from another CM, whose stamp is kept (a CM never takes a stamp or a
//! completed token record from a non-CM caller). The pure parts take the time as an argument.
use super::error::AdminError;
use crate::raft::store::SharedState;
use aerie_core::state::{AuditStamp, Command, Request, TokenRecord};
use aerie_security::token::{self, Claims, SigningKey, TokenError, TokenVerifier};
use aerie_security::{Caller, Role};
use std::net::IpAddr;

/// The principal an audit record names for `caller`.
pub fn principal(caller: &Caller) -> String {
    match caller {
        Caller::User { identity, .. } => identity.clone(),
        other => other.to_string(),
    }
}

/// Whether `caller` is another CM forwarding a request it already stamped.
pub fn trusted_forward(caller: &Caller, forwarded: bool) -> bool {
    forwarded && caller.is(Role::Cm)
}

/// The stamp of a request from `caller` at `addr` (time set later, by the leader).
pub fn stamp_of(caller: &Caller, addr: Option<IpAddr>) -> AuditStamp {
    let from = match (addr, caller) {
        (Some(a), _) => a.to_string(),
        (None, Caller::LocalUser(_)) => "local".into(),
        (None, _) => "unknown".into(),
    };
    AuditStamp {
        who: principal(caller),
        from,
        time: 0,
    }
}

/// Stamps `req` with `caller` from `addr`, unless a CM sends it stamped already (a forward,
/// or `cmctl reconfig`'s policy, stamped with whoever asked for it): CMs are trusted, anyone
/// else's stamp is replaced. Internal commands the leader makes itself are not audited.
pub fn stamp(req: &mut Request, caller: &Caller, addr: Option<IpAddr>) {
    if caller.is(Role::Cm) && req.audit.is_some() {
        return;
    }
    req.audit = match req.cmd.is_internal() {
        true => None,
        false => Some(stamp_of(caller, addr)),
    };
}

/// Completes a token request as cmctl sends it (`expires` holding the lifetime in seconds)
/// at `now` with id `jti`, and signs it: the record to propose and the token for the caller.
pub fn complete(
    asked: &TokenRecord,
    key: &SigningKey,
    now: i64,
    jti: String,
) -> Result<(TokenRecord, String), AdminError> {
    let lifetime = asked.expires;
    if lifetime <= 0 {
        return Err(AdminError::BadRequest(format!(
            "token lifetime {lifetime} s: must be above 0"
        )));
    }
    let levels = token::parse_scopes(&asked.scopes.join(","))
        .map_err(|e| AdminError::BadRequest(e.to_string()))?;
    let record = TokenRecord {
        jti,
        identity: asked.identity.trim().to_string(),
        scopes: levels.iter().map(|l| l.as_str().to_string()).collect(),
        issued: now,
        expires: now.saturating_add(lifetime),
        revoked: false,
    };
    record.check().map_err(AdminError::BadRequest)?;
    let signed = key.sign(&Claims {
        sub: record.identity.clone(),
        iss: key.issuer.clone(),
        iat: record.issued,
        exp: record.expires,
        jti: record.jti.clone(),
        scope: Some(token::scope_claim(&levels)),
    });
    Ok((record, signed))
}

/// A new token id: 128 bits from the OS random source, in hex.
pub fn new_jti() -> String {
    let b: [u8; 16] = rand::random();
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Whether a write is a token request cmctl sent (not yet completed by a CM).
pub fn token_request(req: &Request) -> Option<&TokenRecord> {
    match &req.cmd {
        Command::IssueToken(t) => Some(t),
        _ => None,
    }
}

/// The CM's token check: the pool key's, then the replicated revocation list.
pub struct StateVerifier {
    /// The pool key.
    pub key: SigningKey,
    /// The applied state, whose `tokens` say which are revoked.
    pub state: SharedState,
}

impl TokenVerifier for StateVerifier {
    fn verify(&self, token: &str, now: i64) -> Result<Claims, TokenError> {
        let claims = self.key.verify(token, now)?;
        let a = self.state.read().unwrap_or_else(|p| p.into_inner());
        match a.state.tokens.get(&claims.jti) {
            Some(r) if r.revoked => Err(TokenError::Revoked {
                jti: claims.jti,
                sub: claims.sub,
            }),
            _ => Ok(claims),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aerie_security::{Identity, Level};

    fn cm() -> Caller {
        Caller::Daemon(Identity {
            name: "cm2".into(),
            roles: vec![Role::Cm],
        })
    }

    #[test]
    fn stamps_come_from_the_caller_unless_a_cm_forwarded_them() {
        let alice = Caller::User {
            identity: "alice@pool.example".into(),
            scopes: vec![Level::Administrator],
        };
        let forged = AuditStamp {
            who: "someone-else".into(),
            from: "1.2.3.4".into(),
            time: 9,
        };
        let mut r = Request::new(Command::RequestCycle);
        r.audit = Some(forged.clone());
        // A non-CM caller's stamp is replaced.
        stamp(&mut r, &alice, Some("10.0.0.7".parse().unwrap()));
        let s = r.audit.clone().unwrap();
        assert_eq!(
            (s.who.as_str(), s.from.as_str()),
            ("alice@pool.example", "10.0.0.7")
        );
        // A CM's forward keeps the stamp of the CM that received it first.
        r.audit = Some(forged.clone());
        stamp(&mut r, &cm(), Some("10.0.0.2".parse().unwrap()));
        assert_eq!(r.audit, Some(forged.clone()));
        // Unstamped from a CM: the CM is the caller.
        r.audit = None;
        stamp(&mut r, &cm(), None);
        assert_eq!(r.audit.unwrap().who, "cm2@cm");
        let mut internal = Request::new(Command::SetFeatureVersion { version: 5 });
        stamp(&mut internal, &cm(), None);
        assert_eq!(internal.audit, None);
        internal.audit = Some(forged.clone());
        stamp(&mut internal, &alice, None);
        assert_eq!(internal.audit, None);
        assert_eq!(
            stamp_of(&Caller::LocalUser("bob".into()), None).from,
            "local"
        );
    }

    #[test]
    fn a_token_request_is_completed_and_signed_at_the_given_time() {
        let key = SigningKey::new(vec![3; 32], "pool");
        let asked = TokenRecord {
            jti: String::new(),
            identity: "alice@pool.example".into(),
            scopes: vec!["read".into(), "WRITE".into()],
            issued: 0,
            expires: 3600,
            revoked: false,
        };
        let (rec, signed) = complete(&asked, &key, 1000, "abc".into()).unwrap();
        assert_eq!(
            (rec.issued, rec.expires, rec.jti.as_str()),
            (1000, 4600, "abc")
        );
        assert_eq!(rec.scopes, ["READ", "WRITE"]);
        let c = key.verify(&signed, 1001).unwrap();
        assert_eq!(c.scope.as_deref(), Some("condor:/READ condor:/WRITE"));
        assert_eq!(
            (c.sub.as_str(), c.jti.as_str()),
            ("alice@pool.example", "abc")
        );
        let bad = TokenRecord {
            scopes: vec!["ROOT".into()],
            ..asked.clone()
        };
        assert!(complete(&bad, &key, 1000, "x".into()).is_err());
        let bad = TokenRecord {
            expires: 0,
            ..asked
        };
        assert!(complete(&bad, &key, 1000, "x".into()).is_err());
        assert_eq!(new_jti().len(), 32);
    }
}

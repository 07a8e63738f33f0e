//! Tokens for people and scripts, shaped like HTCondor's IDTOKENS.
//!
//! HTCondor's `condor_token_create` (`src/condor_tools/token_create.cpp`, signing in
//! `src/condor_io/condor_auth_passwd.cpp`) issues a JWT signed HS256 with the pool's signing
//! key, whose claims are `sub` (the identity, `alice@pool.example`), `iss` (the trust domain),
//! `iat`, `exp`, `jti` (the id revocations name) and `scope` (space-separated
//! `condor:/READ condor:/WRITE ...`: the authorization levels the token may use, all when
//! absent). Aerie's tokens are the same: a CM signs them with `token-signing.key` (made by
//! `aerie-cm security init`), a client without a certificate presents one as
//! `authorization: Bearer <token>`, and the authorization layer ([`crate::layer`]) checks it
//! with a [`TokenVerifier`] (the CM's also checks the replicated revocation list).
//!
//! Everything here is pure: time is passed in.
use crate::authz::Level;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The signing key's file name in a credentials directory (HTCondor's `POOL` key).
pub const SIGNING_KEY: &str = "token-signing.key";

/// The prefix HTCondor gives authorization scopes (`condor:/READ`).
pub const SCOPE_PREFIX: &str = "condor:/";

/// The key id tokens name in their header, as HTCondor's pool key (`kid: POOL`).
pub const KEY_ID: &str = "POOL";

/// Why a token was refused, or could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not three base64url parts of JSON, or claims missing.
    #[error("malformed token: {0}")]
    Malformed(String),
    /// The signature does not match this pool's key.
    #[error("bad token signature (not signed with this pool's token-signing.key)")]
    BadSignature,
    /// Past its `exp`.
    #[error("token {jti} of {sub} expired {ago} s ago")]
    Expired {
        /// The token's id.
        jti: String,
        /// Its identity.
        sub: String,
        /// Seconds since it expired.
        ago: i64,
    },
    /// Revoked with `cmctl token revoke`.
    #[error("token {jti} of {sub} was revoked")]
    Revoked {
        /// The token's id.
        jti: String,
        /// Its identity.
        sub: String,
    },
    /// Issued for another pool.
    #[error("token issued by {got:?}, not by this pool ({want:?})")]
    WrongIssuer {
        /// The token's `iss`.
        got: String,
        /// This pool's name.
        want: String,
    },
    /// This daemon has no key to check tokens with.
    #[error("this daemon cannot check tokens: {0}")]
    NoKey(String),
    /// A bad scope or identity given to `token create`.
    #[error("{0}")]
    Invalid(String),
}

/// A token's claims.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The identity (`alice@pool.example`): the principal `ALLOW_<LEVEL>` lists match.
    pub sub: String,
    /// The pool that issued it.
    pub iss: String,
    /// Issued at (Unix seconds).
    pub iat: i64,
    /// Expires at (Unix seconds).
    pub exp: i64,
    /// The token's id (what `cmctl token revoke` names).
    pub jti: String,
    /// Space-separated `condor:/LEVEL` scopes; absent: every level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl Claims {
    /// The levels the token may use (every level when it has no `scope`); unknown
    /// `condor:/` scopes are an error, other scopes (not HTCondor's: `openid`) are ignored.
    pub fn levels(&self) -> Result<Vec<Level>, TokenError> {
        match &self.scope {
            None => Ok(Level::ALL.to_vec()),
            Some(s) => parse_scopes(
                &s.split_whitespace()
                    .filter(|w| w.starts_with(SCOPE_PREFIX))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
        }
    }
}

/// Parses `condor:/READ condor:/WRITE` (or `READ,WRITE`, as `cmctl token create --scope`
/// takes them) into levels; any other word is an error naming it.
pub fn parse_scopes(text: &str) -> Result<Vec<Level>, TokenError> {
    let mut out = Vec::new();
    for word in text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|w| !w.is_empty())
    {
        let name = word.strip_prefix(SCOPE_PREFIX).unwrap_or(word);
        let level = Level::ALL
            .into_iter()
            .find(|l| l.as_str().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                TokenError::Invalid(format!(
                    "unknown scope {word:?} (scopes: {})",
                    Level::ALL.map(|l| l.as_str()).join(", ")
                ))
            })?;
        if !out.contains(&level) {
            out.push(level);
        }
    }
    Ok(out)
}

/// Levels as a `scope` claim: `condor:/READ condor:/WRITE`.
pub fn scope_claim(levels: &[Level]) -> String {
    levels
        .iter()
        .map(|l| format!("{SCOPE_PREFIX}{l}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The pool's token signing key.
#[derive(Clone)]
pub struct SigningKey {
    secret: Vec<u8>,
    /// The pool's name (`iss` of the tokens it signs and accepts).
    pub issuer: String,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey(issuer {:?})", self.issuer)
    }
}

#[derive(Serialize, Deserialize)]
struct Header {
    alg: String,
    typ: String,
    kid: String,
}

#[derive(Serialize, Deserialize)]
struct KeyFile {
    issuer: String,
    secret: String,
}

fn mac(secret: &[u8], signed: &str) -> Hmac<Sha256> {
    let mut m = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any length");
    m.update(signed.as_bytes());
    m
}

impl SigningKey {
    /// A key from its secret bytes and the pool's name.
    pub fn new(secret: Vec<u8>, issuer: impl Into<String>) -> SigningKey {
        SigningKey {
            secret,
            issuer: issuer.into(),
        }
    }

    /// Writes a new random key for pool `issuer` to `DIR/token-signing.key` (mode 0600);
    /// an existing key is kept (tokens it signed stay valid).
    pub fn create(dir: &Path, issuer: &str) -> Result<(), String> {
        let path = dir.join(SIGNING_KEY);
        if path.exists() {
            return Ok(());
        }
        let secret: [u8; 32] = rand::random();
        let text = serde_json::to_string(&KeyFile {
            issuer: issuer.to_string(),
            secret: B64.encode(secret),
        })
        .map_err(|e| format!("{}: {e}", path.display()))?;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Reads `DIR/token-signing.key`.
    pub fn load(dir: &Path) -> Result<SigningKey, String> {
        let path = dir.join(SIGNING_KEY);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            format!(
                "{}: {e} (made by `aerie-cm security init`; copy it to every CM)",
                path.display()
            )
        })?;
        let f: KeyFile = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a token signing key: {e}", path.display()))?;
        let secret = B64
            .decode(f.secret.trim())
            .map_err(|e| format!("{}: secret is not base64url: {e}", path.display()))?;
        if secret.len() < 16 {
            return Err(format!(
                "{}: secret of {} bytes is too short",
                path.display(),
                secret.len()
            ));
        }
        Ok(SigningKey::new(secret, f.issuer))
    }

    /// Signs `claims` into a token.
    pub fn sign(&self, claims: &Claims) -> String {
        let header = Header {
            alg: "HS256".into(),
            typ: "JWT".into(),
            kid: KEY_ID.into(),
        };
        let signed = format!("{}.{}", encode(&header), encode(claims));
        let sig = mac(&self.secret, &signed).finalize().into_bytes();
        format!("{signed}.{}", B64.encode(sig))
    }

    /// Checks a token's signature, issuer and expiry at `now` (Unix seconds) and returns
    /// its claims. Revocation is the caller's to check (the CM holds the list).
    pub fn verify(&self, token: &str, now: i64) -> Result<Claims, TokenError> {
        let token = token.trim();
        let mut parts = token.split('.');
        let (Some(h), Some(c), Some(s), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenError::Malformed(
                "not header.claims.signature (a JWT)".into(),
            ));
        };
        let header: Header = decode(h, "header")?;
        if header.alg != "HS256" {
            return Err(TokenError::Malformed(format!(
                "algorithm {:?} (only HS256 is accepted)",
                header.alg
            )));
        }
        let sig = B64
            .decode(s)
            .map_err(|e| TokenError::Malformed(format!("signature is not base64url: {e}")))?;
        mac(&self.secret, &format!("{h}.{c}"))
            .verify_slice(&sig)
            .map_err(|_| TokenError::BadSignature)?;
        let claims: Claims = decode(c, "claims")?;
        if claims.iss != self.issuer {
            return Err(TokenError::WrongIssuer {
                got: claims.iss,
                want: self.issuer.clone(),
            });
        }
        if claims.exp <= now {
            return Err(TokenError::Expired {
                ago: now - claims.exp,
                jti: claims.jti,
                sub: claims.sub,
            });
        }
        claims.levels()?;
        Ok(claims)
    }
}

/// The identity (`sub`) a token names, read without checking its signature: what a client
/// takes as "me" (the jobs `cmctl q` shows by default). The server checks the token.
pub fn unverified_subject(token: &str) -> Option<String> {
    let claims = token.trim().split('.').nth(1)?;
    decode::<Claims>(claims, "claims").ok().map(|c| c.sub)
}

fn decode<T: serde::de::DeserializeOwned>(part: &str, what: &str) -> Result<T, TokenError> {
    let bytes = B64
        .decode(part)
        .map_err(|e| TokenError::Malformed(format!("{what} is not base64url: {e}")))?;
    serde_json::from_slice(&bytes).map_err(|e| TokenError::Malformed(format!("{what}: {e}")))
}

/// Base64url of a value's JSON (plain structs of strings and integers always serialize).
fn encode<T: Serialize>(v: &T) -> String {
    B64.encode(serde_json::to_vec(v).unwrap_or_default())
}

/// Checks the bearer tokens of callers without a certificate: the signature and expiry with
/// the pool key, and (on a CM) the replicated revocation list.
pub trait TokenVerifier: Send + Sync {
    /// The token's claims if it is valid at `now` (Unix seconds).
    fn verify(&self, token: &str, now: i64) -> Result<Claims, TokenError>;
}

impl TokenVerifier for SigningKey {
    fn verify(&self, token: &str, now: i64) -> Result<Claims, TokenError> {
        SigningKey::verify(self, token, now)
    }
}

/// The token check of a daemon that is not a CM (an access point): the pool key, then the
/// ids of revoked tokens as last fetched from a CM ([`KeyAndRevocations::set_revoked`]).
/// A CM checks its replicated list directly; this copy lags it by the refresh period.
pub struct KeyAndRevocations {
    key: SigningKey,
    revoked: std::sync::RwLock<std::collections::HashSet<String>>,
}

impl KeyAndRevocations {
    /// A check with `key` and no revocations known yet.
    pub fn new(key: SigningKey) -> KeyAndRevocations {
        KeyAndRevocations {
            key,
            revoked: Default::default(),
        }
    }

    /// Replaces the revoked token ids (`jti`s) with `ids`.
    pub fn set_revoked(&self, ids: impl IntoIterator<Item = String>) {
        let ids = ids.into_iter().collect();
        *self.revoked.write().unwrap_or_else(|p| p.into_inner()) = ids;
    }
}

impl TokenVerifier for KeyAndRevocations {
    fn verify(&self, token: &str, now: i64) -> Result<Claims, TokenError> {
        let claims = self.key.verify(token, now)?;
        let revoked = self.revoked.read().unwrap_or_else(|p| p.into_inner());
        if revoked.contains(&claims.jti) {
            return Err(TokenError::Revoked {
                jti: claims.jti,
                sub: claims.sub,
            });
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SigningKey {
        SigningKey::new(b"0123456789abcdef0123456789abcdef".to_vec(), "pool.example")
    }

    fn claims(scope: Option<&str>) -> Claims {
        Claims {
            sub: "alice@pool.example".into(),
            iss: "pool.example".into(),
            iat: 1000,
            exp: 2000,
            jti: "j1".into(),
            scope: scope.map(String::from),
        }
    }

    #[test]
    fn a_signed_token_verifies_until_it_expires() {
        let c = claims(Some("condor:/READ condor:/WRITE"));
        let t = key().sign(&c);
        assert_eq!(t.split('.').count(), 3);
        assert_eq!(key().verify(&t, 1999).unwrap(), c);
        assert_eq!(c.levels().unwrap(), vec![Level::Read, Level::Write]);
        let e = key().verify(&t, 2005).unwrap_err();
        assert_eq!(
            e,
            TokenError::Expired {
                jti: "j1".into(),
                sub: "alice@pool.example".into(),
                ago: 5
            }
        );
        assert!(e.to_string().contains("expired 5 s ago"), "{e}");
    }

    #[test]
    fn a_daemon_refuses_the_tokens_a_cm_listed_as_revoked() {
        let v = KeyAndRevocations::new(key());
        let t = key().sign(&claims(None));
        assert!(v.verify(&t, 1500).is_ok());
        v.set_revoked(["j1".to_string()]);
        assert_eq!(
            v.verify(&t, 1500),
            Err(TokenError::Revoked {
                jti: "j1".into(),
                sub: "alice@pool.example".into()
            })
        );
        v.set_revoked(Vec::new());
        assert!(v.verify(&t, 1500).is_ok());
        // The key's own checks still come first.
        assert!(matches!(
            v.verify(&t, 2500),
            Err(TokenError::Expired { .. })
        ));
    }

    #[test]
    fn a_client_reads_its_tokens_subject() {
        let t = key().sign(&claims(None));
        assert_eq!(
            unverified_subject(&t).as_deref(),
            Some("alice@pool.example")
        );
        assert_eq!(unverified_subject("not a token"), None);
    }

    #[test]
    fn forged_and_foreign_tokens_are_refused() {
        let t = key().sign(&claims(None));
        let other = SigningKey::new(b"another key, same pool, 32 bytes".to_vec(), "pool.example");
        assert_eq!(other.verify(&t, 1500), Err(TokenError::BadSignature));
        // Claims edited after signing (a wider scope) break the signature.
        let (h, rest) = t.split_once('.').unwrap();
        let sig = rest.rsplit_once('.').unwrap().1;
        let forged = format!(
            "{h}.{}.{sig}",
            B64.encode(serde_json::to_vec(&claims(Some("condor:/ADMINISTRATOR"))).unwrap())
        );
        assert_eq!(key().verify(&forged, 1500), Err(TokenError::BadSignature));
        let foreign = SigningKey::new(key().secret, "elsewhere");
        assert!(matches!(
            foreign.verify(&t, 1500),
            Err(TokenError::WrongIssuer { .. })
        ));
        assert!(matches!(
            key().verify("abc", 1500),
            Err(TokenError::Malformed(_))
        ));
    }

    #[test]
    fn scopes_parse_from_claims_and_from_the_command_line() {
        assert_eq!(
            parse_scopes("READ,write").unwrap(),
            vec![Level::Read, Level::Write]
        );
        let mut c = claims(Some("condor:/ADVERTISE_STARTD openid"));
        assert_eq!(c.levels().unwrap(), vec![Level::AdvertiseStartd]);
        c.scope = Some("condor:/ROOT".into());
        assert!(c.levels().is_err());
        assert!(parse_scopes("openid").is_err());
        assert_eq!(
            scope_claim(&[Level::Read, Level::Administrator]),
            "condor:/READ condor:/ADMINISTRATOR"
        );
        let e = parse_scopes("condor:/ROOT").unwrap_err().to_string();
        assert!(e.contains("ROOT") && e.contains("ADMINISTRATOR"), "{e}");
        assert_eq!(claims(None).levels().unwrap(), Level::ALL.to_vec());
    }

    #[test]
    fn the_key_file_is_private_and_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        SigningKey::create(dir.path(), "p").unwrap();
        let k = SigningKey::load(dir.path()).unwrap();
        SigningKey::create(dir.path(), "q").unwrap();
        let again = SigningKey::load(dir.path()).unwrap();
        assert_eq!((k.secret.clone(), k.issuer.as_str()), (again.secret, "p"));
        let mode = std::fs::metadata(dir.path().join(SIGNING_KEY))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let e = SigningKey::load(&dir.path().join("none")).unwrap_err();
        assert!(e.contains("security init"), "{e}");
    }
}

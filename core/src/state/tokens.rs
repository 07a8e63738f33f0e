//! The tokens a pool issued, as the CMs agree on them (`cmctl token create/list/revoke`).
//!
//! The token itself never enters the log: the leader signs it and hands it to the caller
//! once; the log keeps what identifies it (HTCondor's `jti`), whom it names, its scopes and
//! expiry, and whether it was revoked. Every CM checks the bearer tokens it is shown against
//! this list, so a revocation takes effect on the whole pool once committed. Records of
//! tokens expired for a day are dropped when a new one is issued (an expired token is refused
//! anyway), which bounds the list.
use serde::{Deserialize, Serialize};

/// How long after expiring a token's record is kept (seconds), so `cmctl token list` still
/// shows a recently expired token.
pub const KEEP_EXPIRED: i64 = 86_400;

/// One issued token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    /// Its id (the JWT `jti`), assigned by the leader.
    pub jti: String,
    /// The identity it names (`alice@pool.example`).
    pub identity: String,
    /// The levels it may use (`READ`, `WRITE`, ...).
    pub scopes: Vec<String>,
    /// When it was issued (leader time, Unix seconds).
    pub issued: i64,
    /// When it expires (Unix seconds).
    pub expires: i64,
    /// Whether `cmctl token revoke` revoked it.
    #[serde(default)]
    pub revoked: bool,
}

impl TokenRecord {
    /// Why the record cannot be stored, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.jti.is_empty() {
            return Err("a token record needs an id (jti); the leader assigns it".into());
        }
        if self.identity.trim().is_empty() || self.identity.chars().any(char::is_whitespace) {
            return Err(format!(
                "bad token identity {:?} (user@domain, no spaces)",
                self.identity
            ));
        }
        if self.scopes.is_empty() {
            return Err("a token needs at least one scope".into());
        }
        if self.expires <= self.issued {
            return Err(format!(
                "token {} expires ({}) before it is issued ({})",
                self.jti, self.expires, self.issued
            ));
        }
        Ok(())
    }
}

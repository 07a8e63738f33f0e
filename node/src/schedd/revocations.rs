//! The revoked tokens, as the CMs list them, for an access point that takes tokens.
//!
//! A CM checks every bearer token against the replicated token records (`cmctl token
//! revoke` marks one revoked through Raft). An access point checks tokens itself with the
//! pool key ([`super::who`]), so it asks a CM for the records (`Admin.Query`, the `Tokens`
//! query `cmctl token list` makes, answered from that CM's applied state) every
//! [`REFRESH`] and refuses the revoked ones from then on. HTCondor's daemons likewise
//! apply revocations locally (`SEC_TOKEN_REVOCATION_EXPR`, read by each daemon). While no
//! CM answers, the last list stays in force.
use aerie_core::admin::{Query, TokensQuery};
use aerie_core::state::TokenRecord;
use aerie_proto::admin::{admin_client::AdminClient, QueryRequest};
use aerie_security::token::KeyAndRevocations;
use std::sync::Arc;
use std::time::Duration;

/// How often the access point fetches the revoked tokens.
pub const REFRESH: Duration = Duration::from_secs(30);

/// How long one CM may take to answer.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// The ids of the revoked tokens among `records`.
pub fn revoked_ids(records: &[TokenRecord]) -> Vec<String> {
    records
        .iter()
        .filter(|r| r.revoked)
        .map(|r| r.jti.clone())
        .collect()
}

/// The token records one CM holds.
async fn fetch(cm: &str) -> Result<Vec<TokenRecord>, String> {
    let ch = aerie_security::transport::endpoint(cm, aerie_security::Role::Cm)
        .map_err(|e| e.to_string())?
        .connect_timeout(CALL_TIMEOUT)
        .connect()
        .await
        .map_err(|e| e.to_string())?;
    let query_json =
        serde_json::to_string(&Query::Tokens(TokensQuery)).map_err(|e| e.to_string())?;
    let mut req = tonic::Request::new(QueryRequest {
        query_json,
        // This CM's applied state: a revocation reaches every CM within a heartbeat.
        stale: true,
        forwarded: false,
    });
    req.set_timeout(CALL_TIMEOUT);
    let reply = AdminClient::new(ch)
        .query(req)
        .await
        .map_err(|s| format!("{}: {}", s.code(), s.message()))?;
    serde_json::from_str(&reply.into_inner().answer_json).map_err(|e| format!("token records: {e}"))
}

/// Fetches the revoked tokens from the first of `cms` that answers, every [`REFRESH`],
/// into `verifier`; runs until aborted.
pub async fn run(verifier: Arc<KeyAndRevocations>, cms: Vec<String>) {
    let mut tick = tokio::time::interval(REFRESH);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let mut errors = Vec::new();
        for cm in &cms {
            match fetch(cm).await {
                Ok(records) => {
                    verifier.set_revoked(revoked_ids(&records));
                    errors.clear();
                    break;
                }
                Err(e) => errors.push(format!("{cm}: {e}")),
            }
        }
        if !errors.is_empty() {
            tracing::warn!(errors = %errors.join("; "), "cannot fetch the revoked tokens; the last list stays in force");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_revoked_records_are_listed() {
        let rec = |jti: &str, revoked| TokenRecord {
            jti: jti.into(),
            identity: "alice@pool".into(),
            scopes: vec!["READ".into()],
            issued: 1,
            expires: 2,
            revoked,
        };
        assert_eq!(
            revoked_ids(&[rec("a", false), rec("b", true), rec("c", true)]),
            vec!["b".to_string(), "c".to_string()]
        );
    }
}

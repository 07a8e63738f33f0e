//! The cluster's feature version (see `aerie_core::state::FEATURE_VERSION`): while the
//! cluster runs an older version than this CM supports, the leader asks every member which
//! version it supports and commits the lowest, once it is above the cluster's. A rolling
//! upgrade therefore needs nothing from the operator: upgrade the CMs one by one, and the
//! new kinds of commands come into use once the last one runs the new binary.
use super::Leader;
use crate::raft::propose::propose;
use aerie_core::state::{Command, FEATURE_VERSION};
use aerie_proto::admin::{admin_client::AdminClient, StatusRequest};
use std::time::Duration;

/// How often the leader looks again while the cluster is behind.
const EVERY: Duration = Duration::from_secs(5);

/// The feature version this CM supports: this binary's, or lower when
/// `AERIE_MAX_FEATURE_VERSION` says so (to stand in for an older binary in tests and
/// rehearsals of an upgrade).
pub fn supported() -> u32 {
    std::env::var("AERIE_MAX_FEATURE_VERSION")
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .map_or(FEATURE_VERSION, |v| v.clamp(1, FEATURE_VERSION))
}

/// The feature version the CM at `addr` supports (a CM from before feature versions: 1).
pub async fn supported_by(addr: &str) -> Result<u32, String> {
    let ch =
        crate::raft::network::lazy_channel(addr, aerie_security::Role::Cm, Duration::from_secs(1))?;
    let mut c = AdminClient::new(ch);
    let mut req = tonic::Request::new(StatusRequest {});
    req.set_timeout(Duration::from_secs(2));
    match tokio::time::timeout(Duration::from_secs(3), c.status(req)).await {
        Err(_) => Err("no answer".into()),
        Ok(Err(s)) => Err(s.message().to_string()),
        Ok(Ok(r)) => Ok(r.into_inner().feature_version.max(1)),
    }
}

/// Raises the cluster's feature version during `term` as far as every member allows.
pub(super) async fn raise(l: &Leader, term: u64) {
    loop {
        let cluster = l
            .state
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .state
            .feature_version;
        if cluster >= supported() {
            return;
        }
        if let Some(lowest) = lowest_supported(l).await {
            if lowest > cluster {
                let cmd = Command::SetFeatureVersion { version: lowest };
                match propose(l.leadership.raft(), cmd, l.knobs.ap_timeout * 2).await {
                    Ok(c) if c.response.ok => {
                        tracing::info!(term, version = lowest, "cluster feature version raised");
                        continue;
                    }
                    Ok(c) => {
                        tracing::warn!(term, error = %c.response.error, "feature version refused")
                    }
                    Err(e) => tracing::warn!(term, error = %e, "cannot commit the feature version"),
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(EVERY) => {}
            _ = l.leadership.wait_deposed(term) => return,
        }
    }
}

/// The lowest version every member supports; `None` while one of them does not answer.
async fn lowest_supported(l: &Leader) -> Option<u32> {
    let m = l.leadership.metrics();
    let mut lowest = supported();
    for (id, node) in m.membership_config.membership().nodes() {
        if *id == l.id {
            continue;
        }
        match supported_by(&node.addr).await {
            Ok(v) => lowest = lowest.min(v),
            Err(e) => {
                tracing::debug!(node = id, error = %e, "member's feature version unknown yet");
                return None;
            }
        }
    }
    Some(lowest)
}

//! Seeding the replicated negotiation policy: once per term, when the replicated state has no
//! policy yet, the leader proposes its own file's (`crate::policy::FilePolicy`). After that a
//! file changes the policy only through `cmctl reconfig`, so a CM that leads next with a
//! different file negotiates as its predecessor did (and warns about its file).
//!
//! A cluster that does not support the policy yet (feature version below 4, during a rolling
//! upgrade) keeps the older behaviour meanwhile: the leader's file's accountant parameters
//! ([`super::params`]); the seed follows as soon as the feature version is raised.
use super::{params, Leader};
use crate::collector::service::unix_now;
use crate::raft::propose::propose;
use aerie_core::state::{Command, CommandResult, PolicyProposal};
use std::time::Duration;

/// The feature version that carries `SetPolicy`.
const POLICY_FEATURE: u32 = 4;

/// How long to wait before looking again (feature version not raised, failed commit).
const RETRY: Duration = Duration::from_secs(1);

/// Seeds the policy during `term` if the state has none and this CM has a file.
pub(super) async fn seed(l: &Leader, term: u64) {
    params::sync(l, term).await;
    let Some((_, knobs)) = l.file_policy.knobs() else {
        return;
    };
    while l.leadership.leads(term) {
        // Apply what earlier terms committed before deciding that there is no policy.
        if l.leadership.confirm(l.knobs.ap_timeout).await.is_ok() {
            let (feature, has) = {
                let a = l.state.read().unwrap_or_else(|p| p.into_inner());
                (a.state.feature_version, a.state.policy.is_some())
            };
            if has {
                return;
            }
            if feature >= POLICY_FEATURE {
                let cmd = Command::SetPolicy(PolicyProposal {
                    knobs: knobs.clone(),
                    source: l.file_policy.source(&l.addr),
                    time: unix_now(),
                });
                match propose(l.leadership.raft(), cmd, l.knobs.ap_timeout * 2).await {
                    Ok(c) if c.response.ok => {
                        if let Some(CommandResult::PolicySet { version, .. }) = c.response.result {
                            tracing::info!(
                                term,
                                version,
                                "negotiation policy seeded from this CM's configuration file"
                            );
                        }
                        return;
                    }
                    Ok(c) => {
                        tracing::warn!(term, error = %c.response.error, "negotiation policy refused");
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(term, error = %e, "could not commit the negotiation policy")
                    }
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(RETRY) => {}
            _ = l.leadership.wait_deposed(term) => return,
        }
    }
}

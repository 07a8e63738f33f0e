//! The accountant's parameters (`PRIORITY_HALFLIFE`, `DEFAULT_PRIO_FACTOR`, group factors...)
//! come from configuration files, but every replica must decay and charge with the same
//! ones, so they live in the replicated ledger. Until the replicated negotiation policy exists
//! (which carries them, see `policy.rs`), once per term the leader compares the ledger's with
//! its own file's and commits `SetParams` when they differ: the file of the CM that leads
//! wins, as HTCondor's negotiator's own file does. Once there is a policy, this does nothing.
use super::Leader;
use crate::raft::propose::propose;
use aerie_core::accountant::AccountantCommand;
use aerie_core::state::Command;
use std::time::Duration;

/// How long to wait before trying again after a failed commit.
const RETRY: Duration = Duration::from_secs(1);

/// Commits the configured parameters for `term` if the ledger's differ; retries failed
/// commits while this CM leads the term.
pub(super) async fn sync(l: &Leader, term: u64) {
    let Some(params) = &l.accountant_params else {
        return;
    };
    while l.leadership.leads(term) {
        // Let the leader apply what the previous terms committed first.
        if l.leadership.confirm(l.knobs.ap_timeout).await.is_err() {
            tokio::time::sleep(RETRY).await;
            continue;
        }
        let differs = {
            let a = l.state.read().unwrap_or_else(|p| p.into_inner());
            a.state.policy.is_none() && a.state.accountant.params() != params
        };
        if !differs {
            return;
        }
        let cmd = Command::Accountant(AccountantCommand::SetParams(params.clone()));
        match propose(l.leadership.raft(), cmd, l.knobs.ap_timeout * 2).await {
            Ok(c) if c.response.ok => {
                tracing::info!(
                    term,
                    "committed accountant parameters from the configuration"
                );
                return;
            }
            Ok(c) => {
                tracing::warn!(term, error = %c.response.error, "accountant parameters refused");
                return;
            }
            Err(e) => {
                tracing::warn!(term, error = %e, "could not commit accountant parameters");
                tokio::time::sleep(RETRY).await;
            }
        }
    }
}

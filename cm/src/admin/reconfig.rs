//! `cmctl reconfig` (condor_reconfig): this CM re-reads its configuration file and proposes
//! the negotiation policy in it as one replicated command, through the leader like any write.
//! The file is this CM's, so the request is never forwarded: the CM that is asked reads.
use super::error::AdminError;
use super::AdminService;
use crate::collector::service::unix_now;
use aerie_core::state::{Command, CommandResult, PolicyProposal, Request};
use aerie_proto::admin as pb;

/// Re-reads the file and commits its policy; a file that does not read, or a knob the
/// negotiator refuses, is a bad request naming it, and nothing is proposed.
/// The audit log names `asker` (who ran `cmctl reconfig`), though the CM proposes.
pub(super) async fn reconfig(
    svc: &AdminService,
    asker: &aerie_security::identity::Peer,
) -> Result<pb::ReconfigReply, AdminError> {
    let file = svc
        .file_policy
        .path()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let knobs = svc.file_policy.reread().map_err(AdminError::BadRequest)?;
    let cmd = Command::SetPolicy(PolicyProposal {
        knobs,
        source: svc.file_policy.source(&svc.addr),
        time: unix_now(),
    });
    let mut request = Request::new(cmd);
    request.audit = Some(super::tokens::stamp_of(&asker.caller, asker.addr));
    let command_json = serde_json::to_string(&request)
        .map_err(|e| AdminError::Failed(format!("encoding the policy: {e}")))?;
    // The CM proposes the policy itself (only CMs may write one), whoever asked it to.
    let w = svc
        .do_write(
            pb::WriteRequest {
                command_json,
                forwarded: false,
            },
            &aerie_security::identity::Peer {
                caller: aerie_security::transport::own_caller(),
                addr: None,
            },
        )
        .await?;
    if w.redirect {
        return Err(AdminError::LeaderUnavailable(w.error));
    }
    let (version, changed) = match serde_json::from_str(&w.result_json) {
        Ok(CommandResult::PolicySet { version, changed }) => (version, changed),
        _ => (0, Vec::new()),
    };
    if w.ok {
        tracing::info!(
            file,
            version,
            changed = changed.len(),
            "reconfig: negotiation policy proposed"
        );
    } else {
        tracing::warn!(file, error = %w.error, "reconfig: negotiation policy refused");
    }
    Ok(pb::ReconfigReply {
        ok: w.ok,
        error: w.error,
        version,
        changed,
        file,
    })
}

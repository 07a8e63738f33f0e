//! The leader's half of absent and offline ads: every sweep, commit what
//! `crate::collector::absent::plan` finds (the hidden ads to store, the stored ones whose
//! machine is back or that expired). Every CM's collector mirrors the committed ads back
//! into its table.
use super::Leader;
use crate::collector::absent::{plan, Replicated};
use crate::collector::service::unix_now;
use crate::raft::propose::propose;
use aerie_core::state::Command;

/// Runs the sweeps of `term` until this CM no longer leads it.
pub(super) async fn commit_while_leading(l: &Leader, term: u64) {
    let mut tick = tokio::time::interval(l.absent_sweep);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = l.leadership.wait_deposed(term) => return,
        }
        let replicated: Replicated = l
            .state
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .state
            .ads
            .clone();
        let cmds = {
            let t = l.table.read().unwrap_or_else(|p| p.into_inner());
            plan(&t, &replicated, unix_now())
        };
        for cmd in cmds {
            if !l.leadership.leads(term) {
                return;
            }
            let what = cmd.name();
            let (bucket, name) = match &cmd {
                Command::PutAd { ad_type, name, .. } | Command::RemoveAd { ad_type, name } => {
                    (ad_type.clone(), name.clone())
                }
                _ => (String::new(), String::new()),
            };
            match propose(l.leadership.raft(), cmd, l.knobs.ap_timeout * 2).await {
                Ok(c) if c.response.ok => {
                    metrics::counter!("aerie_collector_absent_commits_total", "command" => what)
                        .increment(1);
                    tracing::info!(command = what, bucket = %bucket, name = %name, "committed absent/offline ad change");
                }
                Ok(c) => {
                    tracing::warn!(command = what, bucket = %bucket, name = %name, error = %c.response.error, "absent/offline ad change refused")
                }
                Err(e) => {
                    tracing::warn!(command = what, error = %e, "cannot commit absent/offline ad change");
                    break;
                }
            }
        }
    }
}

//! The leader's half of absent and offline ads: every sweep, commit what
//! `crate::collector::absent::plan` finds (the hidden ads to store, the stored ones whose
//! machine is back or that expired). Every CM's collector mirrors the committed ads back
//! into its table.
use super::Leader;
use crate::collector::absent::{plan, Replicated};
use crate::collector::service::unix_now;
use crate::raft::propose::propose;
use aerie_core::state::{AdPut, AdRef, Command};

/// The most records in one batched command: a few megabytes of log entry at most.
const BATCH: usize = 1000;

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
        let batched = l
            .state
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .state
            .feature_version
            >= Command::PutAds { ads: Vec::new() }.required_feature();
        let cmds = if batched { batch(cmds) } else { cmds };
        for cmd in cmds {
            if !l.leadership.leads(term) {
                return;
            }
            let what = cmd.name();
            let (bucket, name) = match &cmd {
                Command::PutAd { ad_type, name, .. } | Command::RemoveAd { ad_type, name } => {
                    (ad_type.clone(), name.clone())
                }
                Command::PutAds { ads } => (String::new(), format!("{} ads", ads.len())),
                Command::RemoveAds { ads } => (String::new(), format!("{} ads", ads.len())),
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

/// The single `PutAd`/`RemoveAd` commands as a few `PutAds`/`RemoveAds` (cluster feature
/// version 2): a rack of slots going absent is one commit.
fn batch(cmds: Vec<Command>) -> Vec<Command> {
    let (mut puts, mut removes) = (Vec::new(), Vec::new());
    for c in cmds {
        match c {
            Command::PutAd {
                ad_type,
                name,
                text,
                time,
            } => puts.push(AdPut {
                ad_type,
                name,
                text,
                time,
            }),
            Command::RemoveAd { ad_type, name } => removes.push(AdRef { ad_type, name }),
            _ => {}
        }
    }
    let mut out: Vec<Command> = puts
        .chunks(BATCH)
        .map(|c| Command::PutAds { ads: c.to_vec() })
        .collect();
    out.extend(
        removes
            .chunks(BATCH)
            .map(|c| Command::RemoveAds { ads: c.to_vec() }),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_commands_become_batches_of_at_most_a_thousand() {
        let puts = (0..2500).map(|i| Command::PutAd {
            ad_type: "Machine".into(),
            name: format!("slot{i}@rack7"),
            text: String::new(),
            time: 1,
        });
        let removes = (0..3).map(|i| Command::RemoveAd {
            ad_type: "Machine".into(),
            name: format!("old{i}"),
        });
        let out = batch(puts.chain(removes).collect());
        let sizes: Vec<(&str, usize)> = out
            .iter()
            .map(|c| match c {
                Command::PutAds { ads } => ("put", ads.len()),
                Command::RemoveAds { ads } => ("remove", ads.len()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            sizes,
            vec![("put", 1000), ("put", 1000), ("put", 500), ("remove", 3)]
        );
    }
}

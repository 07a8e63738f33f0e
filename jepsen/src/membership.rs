//! The membership nemesis: add a CM, remove one, replace one (remove it, add a new one on a
//! fresh data directory) through the admin API, as `cmctl cluster add|remove` does
//! (cli/src/cluster.rs), while other faults are in place.
//!
//! HTCondor's HA has no membership to change: `HAD_LIST` is static configuration read by
//! every HAD (src/condor_had/HADStateMachine.cpp), and changing it means restarting them
//! all. Aerie changes Raft's voter set online (a learner catches up, then a joint
//! configuration), and these faults check that no acknowledged write is lost and one leader
//! per term holds through it, with a CM cut off or dead at the time.
//!
//! A joining CM is started in its own namespace with `--join` on an empty data directory,
//! then added through any member (followers forward to the leader); a removed CM is stopped
//! once the removal committed, as an operator would, and is never restarted. The CMs that
//! are members at the end are the ones the final reads go through ([`members`]).

use crate::history::{Change, Fault, FaultKind, Partition};
use crate::net::Net;
use crate::workload::{Run, Target};
use aerie_proto::admin as pb;
use aerie_tests::{admin, status, Cluster, Node};
use anyhow::{anyhow, bail};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long one membership change may take, retries included (`cmctl cluster add` gives the
/// leader 70 s to let a learner catch up).
pub const CHANGE_TIMEOUT: Duration = Duration::from_secs(90);

/// How long one attempt of a change may take before the next member is tried. Shorter than
/// the CM's own 65 s: a follower forwards the change to the leader it knows and waits for it
/// that long, even when that leader is paused and another was elected meanwhile (`mixed`
/// seed 8: an add took 61 s). A learner of these short runs catches up in a second or two.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(20);

/// The cluster behind its lock, or an error if a thread panicked holding it.
pub(crate) fn locked(
    cluster: &Mutex<Cluster>,
) -> anyhow::Result<std::sync::MutexGuard<'_, Cluster>> {
    cluster
        .lock()
        .map_err(|_| anyhow!("the cluster is poisoned"))
}

/// The name of a change in `history.jsonl`.
pub fn change_name(c: Change) -> &'static str {
    match c {
        Change::Add => "add",
        Change::Remove => "remove",
    }
}

/// The CMs of `started` (every CM started in the run, in order) that are members after the
/// membership changes among `faults`: those not removed by a change that committed.
pub fn members(started: &[u64], faults: &[Fault]) -> Vec<u64> {
    started
        .iter()
        .copied()
        .filter(|id| {
            !faults.iter().any(|f| {
                f.node == *id
                    && f.kind == FaultKind::Membership(Change::Remove)
                    && f.end != Duration::MAX
            })
        })
        .collect()
}

/// Whether CM `id` is down now: on the minority side of an open partition, or killed or paused.
pub fn is_down(id: u64, partitions: &[Partition], faults: &[Fault]) -> bool {
    partitions
        .iter()
        .any(|p| p.end == Duration::MAX && p.minority.contains(&id))
        || faults.iter().any(|f| {
            f.node == id
                && f.end == Duration::MAX
                && matches!(f.kind, FaultKind::Kill | FaultKind::Pause)
        })
}

/// The members a change is sent through: those of `via` that are up ([`is_down`]), all of
/// them when none is. A paused CM accepts the connection and never answers, and a cut-off
/// leader cannot commit: either would hold the change for the whole request timeout (60 s,
/// seen with `mixed` seed 4, an add sent first to a paused follower).
pub fn change_via(via: &[u64], partitions: &[Partition], faults: &[Fault]) -> Vec<u64> {
    let up: Vec<u64> = via
        .iter()
        .copied()
        .filter(|id| !is_down(*id, partitions, faults))
        .collect();
    if up.is_empty() {
        via.to_vec()
    } else {
        up
    }
}

/// Which member `Target::Follower` names for a removal: a member that is not `leader`,
/// preferring one that is down now (on the minority side of an open partition, or killed or
/// paused), the CM an operator would replace.
pub fn removal_candidate(
    members: &[u64],
    leader: Option<u64>,
    partitions: &[Partition],
    faults: &[Fault],
) -> Option<u64> {
    let down = |id: u64| is_down(id, partitions, faults);
    let followers: Vec<u64> = members
        .iter()
        .copied()
        .filter(|id| Some(*id) != leader)
        .collect();
    followers
        .iter()
        .copied()
        .find(|id| down(*id))
        .or(followers.first().copied())
}

/// A reply's error, `None` when the change committed.
fn refusal(r: &pb::MemberReply) -> Option<String> {
    (!r.ok).then(|| {
        if r.redirect {
            format!("not the leader (redirect to {:?})", r.leader)
        } else {
            r.error.clone()
        }
    })
}

impl Run {
    /// The members now: every CM the cluster started, less those removed.
    pub(crate) fn current_members(&self, cluster: &Mutex<Cluster>) -> anyhow::Result<Vec<u64>> {
        let started = crate::membership::locked(cluster)?.ids();
        let h = self
            .history
            .lock()
            .map_err(|_| anyhow!("history poisoned"))?;
        Ok(members(&started, &h.faults))
    }

    /// Whether the membership change is visible in a member's status: `id` a voter (`add`)
    /// or gone (`remove`), as some member other than `id` reports.
    async fn committed(&self, via: &[u64], id: u64, add: bool) -> bool {
        for m in via.iter().filter(|m| **m != id) {
            if let Ok(Ok(s)) =
                tokio::time::timeout(Duration::from_secs(2), status(&Net::cm_addr(*m))).await
            {
                if s.leader.as_ref().is_some_and(|l| l.id == *m) {
                    let voter = s.members.iter().any(|x| x.id == id && x.voter);
                    let present = s.members.iter().any(|x| x.id == id);
                    return if add { voter } else { !present };
                }
            }
        }
        false
    }

    /// Sends one membership change through each member in turn until one commits it (or the
    /// leader reports it done), for up to [`CHANGE_TIMEOUT`].
    async fn change(&self, via: &[u64], id: u64, add: bool) -> anyhow::Result<()> {
        let deadline = Instant::now() + CHANGE_TIMEOUT;
        let mut last: String;
        loop {
            let via_now = {
                let h = self
                    .history
                    .lock()
                    .map_err(|_| anyhow!("history poisoned"))?;
                change_via(via, &h.partitions, &h.faults)
            };
            for m in via_now.iter().filter(|m| **m != id || add) {
                let addr = Net::cm_addr(*m);
                let attempt = async {
                    let mut c = admin(&addr).await?;
                    let r = if add {
                        let mut req = tonic::Request::new(pb::AddMemberRequest {
                            addr: Net::cm_addr(id),
                            id,
                            forwarded: false,
                            learner_only: false,
                        });
                        req.set_timeout(ATTEMPT_TIMEOUT);
                        c.add_member(req).await
                    } else {
                        let mut req = tonic::Request::new(pb::RemoveMemberRequest {
                            id,
                            forwarded: false,
                        });
                        req.set_timeout(Duration::from_secs(20));
                        c.remove_member(req).await
                    };
                    anyhow::Ok(r.map_err(|s| anyhow!("{}", s.message()))?.into_inner())
                };
                let limit = ATTEMPT_TIMEOUT + Duration::from_secs(5);
                match tokio::time::timeout(limit, attempt).await {
                    Ok(Ok(r)) => match refusal(&r) {
                        None => return Ok(()),
                        Some(e) => last = format!("via CM {m}: {e}"),
                    },
                    Ok(Err(e)) => last = format!("via CM {m}: {e:#}"),
                    Err(_) => last = format!("via CM {m}: no answer in {limit:?}"),
                }
                // An answer lost on the way may hide a change that committed.
                if self.committed(via, id, add).await {
                    return Ok(());
                }
                if Instant::now() > deadline {
                    bail!(
                        "{} CM {id} not committed within {CHANGE_TIMEOUT:?}: {last}",
                        if add { "adding" } else { "removing" }
                    );
                }
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// Starts CM `id` with `--join` on a fresh data directory in its namespace of `net` and
    /// adds it as a voter through the members; recorded as a membership fault over the time
    /// the change took.
    pub(crate) async fn add_member(
        &self,
        net: &Net,
        cluster: &Mutex<Cluster>,
        id: u64,
    ) -> anyhow::Result<()> {
        let via = self.current_members(cluster)?;
        {
            let mut c = crate::membership::locked(cluster)?;
            if c.nodes.contains_key(&id) {
                bail!("CM {id} was already started in this run: a new CM needs a new id");
            }
            // The daemon is the argument after `ip netns exec NS` of any CM.
            let daemon = c
                .nodes
                .values()
                .find_map(|n| n.args.get(3).cloned())
                .ok_or_else(|| anyhow!("no CM to copy the daemon's path from"))?;
            let data_dir = c.dir.path().join(format!("node{id}"));
            let args = vec![
                "netns".into(),
                "exec".into(),
                net.cm_ns(id),
                daemon,
                "--id".into(),
                id.to_string(),
                "--listen".into(),
                Net::cm_addr(id),
                "--join".into(),
                "--data-dir".into(),
                data_dir.display().to_string(),
            ];
            c.nodes.insert(
                id,
                Node {
                    id,
                    addr: Net::cm_addr(id),
                    data_dir,
                    args,
                    child: None,
                    env: Vec::new(),
                },
            );
            c.restart(id)?;
        }
        let start = self.now();
        tracing::info!(id, ?via, "adding a CM");
        self.change(&via, id, true).await?;
        let end = self.now();
        self.record(|h| {
            h.faults.push(Fault {
                kind: FaultKind::Membership(Change::Add),
                node: id,
                start,
                end,
            })
        });
        Ok(())
    }

    /// Removes the member `target` names (for `Follower`, preferably one that is down, see
    /// [`removal_candidate`]) through the others, then stops it; recorded as a membership
    /// fault over the time the change took.
    pub(crate) async fn remove_member(
        &self,
        cluster: &Mutex<Cluster>,
        target: Target,
    ) -> anyhow::Result<()> {
        let via = self.current_members(cluster)?;
        let id = match target {
            Target::Follower => {
                let leader = self.leader();
                let h = self
                    .history
                    .lock()
                    .map_err(|_| anyhow!("history poisoned"))?;
                removal_candidate(&via, leader, &h.partitions, &h.faults)
                    .ok_or_else(|| anyhow!("no follower to remove among {via:?}"))?
            }
            t => self.resolve(t)?,
        };
        if !via.contains(&id) {
            bail!("CM {id} is not a member (members: {via:?})");
        }
        let start = self.now();
        tracing::info!(id, ?via, "removing a CM");
        self.change(&via, id, false).await?;
        let end = self.now();
        crate::membership::locked(cluster)?.kill(id);
        self.record(|h| {
            h.faults.push(Fault {
                kind: FaultKind::Membership(Change::Remove),
                node: id,
                start,
                end,
            })
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(kind: FaultKind, node: u64, end: Duration) -> Fault {
        Fault {
            kind,
            node,
            start: Duration::ZERO,
            end,
        }
    }

    /// CM 3 cut off from the others from the start until `end`.
    fn cm3_cut_off(end: Duration) -> Partition {
        Partition {
            shape: "isolate 3".into(),
            minority: vec![3],
            start: Duration::ZERO,
            end,
        }
    }

    #[test]
    fn members_are_the_started_cms_less_the_committed_removals() {
        let s = Duration::from_secs(1);
        let faults = vec![
            fault(FaultKind::Membership(Change::Add), 4, s),
            fault(FaultKind::Membership(Change::Remove), 2, s),
            fault(FaultKind::Kill, 3, s),
            // Not committed: still a member.
            fault(FaultKind::Membership(Change::Remove), 1, Duration::MAX),
        ];
        assert_eq!(members(&[1, 2, 3, 4, 5], &faults), vec![1, 3, 4, 5]);
        assert_eq!(members(&[1, 2, 3], &[]), vec![1, 2, 3]);
    }

    #[test]
    fn a_change_goes_through_members_that_are_up_or_through_all_when_none_is() {
        let open = Duration::MAX;
        let paused = fault(FaultKind::Pause, 1, open);
        let cut = cm3_cut_off(open);
        assert_eq!(
            change_via(
                &[1, 2, 3],
                std::slice::from_ref(&cut),
                std::slice::from_ref(&paused)
            ),
            vec![2]
        );
        let resumed = fault(FaultKind::Pause, 1, Duration::from_secs(1));
        assert_eq!(change_via(&[1, 2], &[], &[resumed]), vec![1, 2]);
        assert_eq!(change_via(&[1], &[], &[paused]), vec![1]);
    }

    #[test]
    fn a_removal_picks_a_follower_that_is_down_before_a_healthy_one() {
        let members = [1, 2, 3, 4];
        let open = Duration::MAX;
        let cut = cm3_cut_off(open);
        assert_eq!(
            removal_candidate(&members, Some(1), std::slice::from_ref(&cut), &[]),
            Some(3)
        );
        let killed = fault(FaultKind::Kill, 4, open);
        assert_eq!(
            removal_candidate(&members, Some(1), &[], &[killed]),
            Some(4)
        );
        // A healed cut or an undone kill does not count; the leader is never picked.
        let healed = Partition {
            end: Duration::from_secs(1),
            ..cut
        };
        let restarted = fault(FaultKind::Kill, 4, Duration::from_secs(1));
        assert_eq!(
            removal_candidate(&members, Some(1), &[healed], &[restarted]),
            Some(2)
        );
        assert_eq!(
            removal_candidate(&[1, 2], Some(2), &[], &[fault(FaultKind::Kill, 2, open)]),
            Some(1)
        );
        assert_eq!(removal_candidate(&[1], Some(1), &[], &[]), None);
    }
}

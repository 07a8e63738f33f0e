//! Every RPC of every Aerie service and what it takes to call it: the one table the
//! authorization layer enforces ([`crate::layer`]) and the tests walk.
//!
//! HTCondor gives each command an authorization level in its command table
//! (`src/condor_includes/condor_commands.h` and each daemon's `daemonCore->Register_Command`
//! calls): `QUERY_STARTD_ADS` is `READ`, `UPDATE_STARTD_AD` is `ADVERTISE_STARTD`,
//! `SET_PRIORITY` is `ADMINISTRATOR`, `REQUEST_CLAIM` and `ACTIVATE_CLAIM` are `DAEMON`,
//! `MATCH_INFO` is `NEGOTIATOR`. Aerie's RPCs map the same way. Raft, relay and digest are
//! further restricted to CM certificates whatever `ALLOW_DAEMON` says: a pool's safety rests
//! on only CMs voting and replicating.
use crate::authz::Level;

/// What calling a method takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A caller authorized at this level.
    Level(Level),
    /// A caller authorized at `ADVERTISE_STARTD` or `ADVERTISE_SCHEDD` (which ads it may
    /// send is then checked ad by ad against its identity).
    Advertise,
    /// Another CM (a CM certificate, and `DAEMON`): Raft, relay, digest.
    Peer,
    /// A caller at this level, or another CM forwarding a request it already authorized.
    LevelOrPeer(Level),
}

/// One RPC and its access rule.
#[derive(Debug, Clone, Copy)]
pub struct Method {
    /// The gRPC path, `/package.Service/Method`.
    pub path: &'static str,
    /// What calling it takes.
    pub access: Access,
}

const fn m(path: &'static str, access: Access) -> Method {
    Method { path, access }
}

use Access::*;
use Level::*;

/// Every RPC Aerie serves.
pub const METHODS: &[Method] = &[
    // CM to CM only.
    m("/aerie.raft.Raft/AppendEntries", Peer),
    m("/aerie.raft.Raft/Vote", Peer),
    m("/aerie.raft.Raft/InstallSnapshot", Peer),
    m("/aerie.raft.Raft/Contact", Peer),
    m("/aerie.collector.Collector/Relay", Peer),
    m("/aerie.collector.Collector/Digest", Peer),
    // The admin API (cmctl); a follower forwards writes and linearizable reads to the leader.
    m("/aerie.admin.Admin/Write", LevelOrPeer(Administrator)),
    m("/aerie.admin.Admin/Query", LevelOrPeer(Read)),
    m("/aerie.admin.Admin/Status", Level(Read)),
    m("/aerie.admin.Admin/AddMember", LevelOrPeer(Administrator)),
    m(
        "/aerie.admin.Admin/RemoveMember",
        LevelOrPeer(Administrator),
    ),
    m("/aerie.admin.Admin/Admit", LevelOrPeer(Administrator)),
    m(
        "/aerie.admin.Admin/TriggerSnapshot",
        LevelOrPeer(Administrator),
    ),
    m("/aerie.admin.Admin/Reconfig", LevelOrPeer(Administrator)),
    // The collector.
    m("/aerie.collector.Collector/Advertise", Advertise),
    m("/aerie.collector.Collector/AdvertiseStream", Advertise),
    m("/aerie.collector.Collector/Invalidate", Advertise),
    m("/aerie.collector.Collector/Query", Level(Read)),
    m("/aerie.collector.Collector/Totals", Level(Read)),
    m("/aerie.collector.Collector/QueryStream", Level(Read)),
    m("/aerie.collector.Collector/QueryText", Level(Read)),
    // The negotiator's calls on access points.
    m(
        "/aerie.negotiation.AccessPoint/GetRequests",
        Level(Negotiator),
    ),
    m(
        "/aerie.negotiation.AccessPoint/DeliverGrants",
        Level(Negotiator),
    ),
    // Access points claiming and running on execute nodes; the leader's drain requests.
    m("/aerie.negotiation.Startd/RequestClaim", Level(Daemon)),
    m("/aerie.negotiation.Startd/ReleaseClaim", Level(Daemon)),
    m("/aerie.execute.Execute/ActivateClaim", Level(Daemon)),
    m("/aerie.execute.Execute/KeepAlive", Level(Daemon)),
    m("/aerie.execute.Execute/DeactivateClaim", Level(Daemon)),
    m("/aerie.execute.Execute/Drain", Level(Daemon)),
    m("/aerie.execute.Execute/CancelDrain", Level(Daemon)),
    // Execute nodes reporting job events to the access point.
    m("/aerie.execute.Shadow/JobEvent", Level(Daemon)),
    // Users and their jobs (condor_submit, condor_q, condor_rm...).
    m("/aerie.schedd.Schedd/NewCluster", Level(Write)),
    m("/aerie.schedd.Schedd/Submit", Level(Write)),
    m("/aerie.schedd.Schedd/Query", Level(Read)),
    m("/aerie.schedd.Schedd/Act", Level(Write)),
];

/// The access rule of `path`, or `None` for a method Aerie does not know (refused).
pub fn access(path: &str) -> Option<Access> {
    METHODS.iter().find(|m| m.path == path).map(|m| m.access)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `rpc` in proto/proto/*.proto has exactly one row: a new RPC without an access
    /// rule fails here (and would be refused at run time).
    #[test]
    fn every_rpc_in_the_protos_has_an_access_rule() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../proto/proto");
        let mut seen = Vec::new();
        for entry in std::fs::read_dir(&dir).expect("proto directory") {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let package = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("package "))
                .map(|p| p.trim_end_matches(';').trim().to_string())
                .expect("package line");
            let mut service = None;
            for line in text.lines().map(str::trim) {
                if let Some(s) = line.strip_prefix("service ") {
                    service = Some(s.split_whitespace().next().unwrap().to_string());
                }
                if let Some(r) = line.strip_prefix("rpc ") {
                    let name = r.split('(').next().unwrap().trim();
                    let svc = service.as_ref().expect("rpc inside a service");
                    seen.push(format!("/{package}.{svc}/{name}"));
                }
            }
        }
        assert!(seen.len() >= 30, "found only {seen:?}");
        for p in &seen {
            assert_eq!(
                METHODS.iter().filter(|m| m.path == *p).count(),
                1,
                "{p} needs exactly one access rule in security/src/methods.rs"
            );
        }
        for m in METHODS {
            assert!(
                seen.contains(&m.path.to_string()),
                "{} is in no proto",
                m.path
            );
        }
    }
}

//! `cmctl cluster status|add|remove|snapshot`: Raft membership of the CMs.
use crate::client::{Client, ConnectArgs};
use anyhow::bail;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub conn: ConnectArgs,
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Debug, clap::Subcommand)]
pub enum Cmd {
    /// Members, leader, term, commit/applied index and each follower's lag, as every
    /// reachable CM reports them.
    Status {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Add a CM (started with `aerie-cm serve --join`): learner first, promoted to voter once
    /// it has caught up.
    Add {
        /// The new CM's gRPC address (host:port).
        addr: String,
        /// Node id to give it (default: the next free id).
        #[arg(long, default_value_t = 0)]
        id: u64,
        /// Leave it a learner (non-voting).
        #[arg(long)]
        learner: bool,
    },
    /// Remove a CM from the cluster by node id.
    Remove { id: u64 },
    /// Make one CM build a snapshot now (and purge its log behind it).
    Snapshot {
        /// The CM to snapshot (default: every reachable CM).
        addr: Option<String>,
    },
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let mut client = Client::new(&args.conn)?;
    match args.cmd {
        Cmd::Status { json } => status(&client, json),
        Cmd::Add { addr, id, learner } => {
            let r = client.add_member(&addr, id, learner)?;
            if !r.ok {
                bail!("{}", r.error);
            }
            println!("{}", r.detail);
            Ok(0)
        }
        Cmd::Remove { id } => {
            let r = client.remove_member(id)?;
            if !r.ok {
                bail!("{}", r.error);
            }
            println!("{}", r.detail);
            Ok(0)
        }
        Cmd::Snapshot { addr } => {
            let addrs = match addr {
                Some(a) => vec![a],
                None => client.addrs().to_vec(),
            };
            let mut failed = 0;
            for a in addrs {
                match client.snapshot(&a) {
                    Ok(idx) => println!("{a}: snapshot at log index {idx}"),
                    Err(e) => {
                        eprintln!("cmctl: {e:#}");
                        failed += 1;
                    }
                }
            }
            Ok(if failed > 0 { 1 } else { 0 })
        }
    }
}

fn status(client: &Client, json: bool) -> anyhow::Result<i32> {
    let mut replies = Vec::new();
    let mut errors = Vec::new();
    for a in client.addrs() {
        match client.status_of(a) {
            Ok(r) => replies.push((a.clone(), r)),
            Err(e) => errors.push(format!("{a}: {e:#}")),
        }
    }
    if json {
        let v: Vec<serde_json::Value> = replies
            .iter()
            .map(|(a, r)| {
                serde_json::json!({
                    "queried": a, "id": r.id, "addr": r.addr, "state": r.state, "term": r.term,
                    "leader": r.leader.as_ref().map(|l| serde_json::json!({"id": l.id, "addr": l.addr})),
                    "last_log_index": r.last_log_index, "committed_index": r.committed_index,
                    "applied_index": r.applied_index, "snapshot_index": r.snapshot_index,
                    "purged_index": r.purged_index,
                    "members": r.members.iter().map(|m| serde_json::json!({
                        "id": m.id, "addr": m.addr, "voter": m.voter,
                        "matched_index": if m.has_matched { Some(m.matched_index) } else { None },
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"nodes": v, "unreachable": errors}))?
        );
        return Ok(if replies.is_empty() { 1 } else { 0 });
    }
    if replies.is_empty() {
        bail!(
            "{} of {} CMs unreachable: {}",
            errors.len(),
            client.addrs().len(),
            errors.join("; ")
        );
    }
    // Prefer the leader's view: it knows every follower's replication progress.
    let view = replies
        .iter()
        .find(|(_, r)| r.leader.as_ref().is_some_and(|l| l.id == r.id))
        .or(replies.first())
        .map(|(_, r)| r.clone())
        .expect("not empty");
    match &view.leader {
        Some(l) => println!("Leader: node {} at {} (term {})", l.id, l.addr, view.term),
        None => println!(
            "Leader: none (term {}): no quorum or election in progress",
            view.term
        ),
    }
    println!(
        "{:>4}  {:<22} {:<8} {:<10} {:>6} {:>10} {:>10} {:>10} {:>9}",
        "ID", "Address", "Role", "State", "Term", "LastLog", "Applied", "Snapshot", "Lag"
    );
    for m in &view.members {
        let node = replies.iter().find(|(_, r)| r.id == m.id).map(|(_, r)| r);
        let role = if m.voter { "voter" } else { "learner" };
        let lag = if m.has_matched && view.leader.as_ref().is_some_and(|l| l.id == view.id) {
            if m.id == view.id {
                "-".to_string()
            } else {
                view.last_log_index
                    .saturating_sub(m.matched_index)
                    .to_string()
            }
        } else {
            "?".to_string()
        };
        match node {
            Some(n) => println!(
                "{:>4}  {:<22} {:<8} {:<10} {:>6} {:>10} {:>10} {:>10} {:>9}",
                m.id,
                m.addr,
                role,
                n.state,
                n.term,
                n.last_log_index,
                n.applied_index,
                n.snapshot_index,
                lag
            ),
            None => println!(
                "{:>4}  {:<22} {:<8} {:<10} {:>6} {:>10} {:>10} {:>10} {:>9}",
                m.id, m.addr, role, "unreachable", "-", "-", "-", "-", lag
            ),
        }
    }
    for e in &errors {
        println!("unreachable: {e}");
    }
    Ok(0)
}

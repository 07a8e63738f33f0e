//! `cmctl negotiator pause|resume|cycle-now|status`: the operator's controls of the
//! leader-run negotiation. The flags are replicated through Raft, so they work through any CM
//! and hold across leader changes.
use crate::client::{Client, ConnectArgs};
use aerie_core::admin::{NegotiatorQuery, NegotiatorReport};
use aerie_core::state::{Command, CommandResult};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub conn: ConnectArgs,
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Debug, clap::Subcommand)]
pub enum Cmd {
    /// Stop negotiation cycles (running claims are not touched).
    Pause,
    /// Start negotiation cycles again.
    Resume,
    /// Ask the leader for a cycle now (still at most one per NEGOTIATOR_CYCLE_DELAY).
    CycleNow,
    /// Show the leader, whether negotiation is paused, and the latest cycles.
    Status {
        /// Answer from the first reachable CM without a quorum check.
        #[arg(long)]
        stale: bool,
        /// Print the JSON answer.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let mut client = Client::new(&args.conn)?;
    match args.cmd {
        Cmd::Pause | Cmd::Resume => {
            let paused = matches!(args.cmd, Cmd::Pause);
            let r = client.write_ok(Command::SetNegotiatorPaused { paused })?;
            println!(
                "negotiation {} (committed at log index {})",
                if paused { "paused" } else { "resumed" },
                r.log_index
            );
            Ok(0)
        }
        Cmd::CycleNow => {
            let r = client.write_ok(Command::RequestCycle)?;
            let paused = matches!(
                r.result,
                Some(CommandResult::CycleRequested { paused: true, .. })
            );
            println!("cycle requested (committed at log index {})", r.log_index);
            if paused {
                println!(
                    "note: negotiation is paused; no cycle runs until `cmctl negotiator resume`"
                );
            }
            Ok(0)
        }
        Cmd::Status { stale, json } => {
            let r = client.query(NegotiatorQuery, stale)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                print!("{}", render_status(&r));
            }
            Ok(0)
        }
    }
}

/// The human-readable status.
pub fn render_status(v: &NegotiatorReport) -> String {
    let mut out = String::new();
    match &v.leader {
        Some(l) => out.push_str(&format!("Leader:      node {} at {}\n", l.id, l.addr)),
        None => out.push_str("Leader:      none known\n"),
    }
    let paused = v.paused;
    out.push_str(&format!(
        "Negotiation: {}\n",
        if paused { "PAUSED" } else { "running" }
    ));
    if v.policy_version == 0 {
        out.push_str("Policy:      none replicated yet (the leader's own file)\n");
    } else {
        out.push_str(&format!(
            "Policy:      version {} from {}\n",
            v.policy_version,
            if v.policy_source.is_empty() {
                "unknown"
            } else {
                &v.policy_source
            }
        ));
    }
    let cycles = &v.cycles;
    if cycles.is_empty() {
        out.push_str("No negotiation cycle recorded yet.\n");
        return out;
    }
    out.push_str(&format!(
        "\n{:>5} {:>6} {:>6} {:>6} {:>20} {:>8} {:>6} {:>6} {:>7} {:>8} {:>7}\n",
        "Term",
        "Cycle",
        "Leader",
        "Policy",
        "Ended (UTC)",
        "Seconds",
        "Slots",
        "Jobs",
        "Matches",
        "Accepted",
        "Refused"
    ));
    for c in cycles {
        out.push_str(&format!(
            "{:>5} {:>6} {:>6} {:>6} {:>20} {:>8.2} {:>6} {:>6} {:>7} {:>8} {:>7}\n",
            c.term,
            c.cycle,
            c.leader_id,
            c.policy_version,
            utc(c.end_time),
            c.duration_seconds,
            c.slots,
            c.idle_jobs,
            c.matches,
            c.grants_accepted,
            c.grants_refused,
        ));
    }
    out
}

/// `YYYY-MM-DD HH:MM:SS` for Unix seconds (civil-from-days, no time zone database).
pub(crate) fn utc(t: i64) -> String {
    let days = t.div_euclid(86400);
    let secs = t.rem_euclid(86400);
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use aerie_core::admin::LeaderInfo;
    use aerie_core::state::CycleRecord;

    #[test]
    fn status_shows_leader_pause_and_cycles() {
        let v = NegotiatorReport {
            leader: Some(LeaderInfo {
                id: 2,
                addr: "127.0.0.1:9000".into(),
            }),
            paused: true,
            cycle_requests: 1,
            cycles: vec![CycleRecord {
                term: 3,
                cycle: 1,
                leader_id: 2,
                end_time: 86400,
                duration_seconds: 0.25,
                slots: 4,
                idle_jobs: 3,
                matches: 3,
                grants_accepted: 3,
                grants_refused: 0,
                policy_version: 7,
                ..Default::default()
            }],
            policy_version: 8,
            policy_source: "127.0.0.1:9000:/etc/aerie.conf".into(),
        };
        let s = render_status(&v);
        assert!(s.contains("node 2 at 127.0.0.1:9000"), "{s}");
        assert!(s.contains("PAUSED"));
        assert!(s.contains("1970-01-02 00:00:00"), "{s}");
        assert!(
            s.contains("Policy:      version 8 from 127.0.0.1:9000:/etc/aerie.conf"),
            "{s}"
        );
        let row = s.lines().last().unwrap();
        assert!(row.split_whitespace().nth(3) == Some("7"), "{row}");
        let none = render_status(&NegotiatorReport::default());
        assert!(none.contains("none known") && none.contains("No negotiation cycle"));
    }
}

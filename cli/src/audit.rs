//! `cmctl audit [-since T] [-json]`: the pool's audit log, every admin write with who asked
//! (the caller's principal), from where, when (the leader's clock) and what, as the CMs
//! committed it (HTCondor writes the like to each daemon's `AUDIT` log,
//! `src/condor_daemon_core.V6/daemon_core.cpp`).
use crate::args::is_arg;
use crate::client::{Client, ConnectArgs};
use aerie_core::admin::AuditQuery;
use aerie_core::state::AuditRecord;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    conn: ConnectArgs,
    /// [-since T] (Unix seconds, or a time ago: 90m, 12h, 7d) [-json] (one record a line).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

/// `-since T` and `-json`, one dash or two.
fn options(args: &[String]) -> anyhow::Result<(Option<String>, bool)> {
    let (mut since, mut json) = (None, false);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if is_arg(a, "since", 2) {
            let v = it
                .next()
                .ok_or_else(|| anyhow::anyhow!("-since needs a time (Unix seconds, or 12h ago)"))?;
            since = Some(v.clone());
        } else if is_arg(a, "json", 1) {
            json = true;
        } else {
            anyhow::bail!("unknown argument {a:?} (usage: cmctl audit [-since T] [-json])");
        }
    }
    Ok((since, json))
}

/// `T` as Unix seconds at `now`: a plain number is a time, a number with a unit a time ago.
pub fn since(text: &str, now: i64) -> anyhow::Result<i64> {
    let t = text.trim();
    if t.chars().all(|c| c.is_ascii_digit()) && !t.is_empty() {
        return Ok(t.parse()?);
    }
    Ok(now - crate::token::parse_duration(t)?)
}

/// The rows `cmctl audit` prints.
pub fn table(records: &[AuditRecord]) -> String {
    let mut out = format!(
        "{:<20} {:<24} {:<16} {:<22} {:<3} {}\n",
        "TIME (UTC)", "WHO", "FROM", "COMMAND", "OK", "SUMMARY"
    );
    for r in records {
        let what = match r.ok {
            true => r.summary.clone(),
            false => format!("{} (refused: {})", r.summary, r.error),
        };
        out.push_str(&format!(
            "{:<20} {:<24} {:<16} {:<22} {:<3} {}\n",
            crate::negotiator::utc(r.time),
            r.who,
            r.from,
            r.command,
            if r.ok { "yes" } else { "no" },
            what
        ));
    }
    out
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    let (since_arg, json) = options(&args.args)?;
    let since = since_arg
        .as_deref()
        .map(|s| since(s, chrono::Utc::now().timestamp()))
        .transpose()?;
    let records = Client::new(&args.conn)?.query(AuditQuery { since }, false)?;
    if json {
        for r in &records {
            println!("{}", serde_json::to_string(r)?);
        }
    } else {
        print!("{}", table(&records));
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_a_time_or_a_time_ago() {
        assert_eq!(since("1700000000", 0).unwrap(), 1_700_000_000);
        assert_eq!(since("1h", 10_000).unwrap(), 6400);
        assert!(since("yesterday", 0).is_err());
        let a = |v: &[&str]| options(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            a(&["-since", "1h", "-json"]).unwrap(),
            (Some("1h".into()), true)
        );
        assert_eq!(a(&["--json"]).unwrap(), (None, true));
        assert!(a(&["-since"]).is_err() && a(&["-bogus"]).is_err());
    }

    #[test]
    fn refused_writes_say_why() {
        let r = AuditRecord {
            time: 0,
            who: "alice@pool.example".into(),
            from: "10.0.0.1".into(),
            command: "cancel_drain".into(),
            summary: "{\"CancelDrain\":{\"machine\":\"x\"}}".into(),
            ok: false,
            error: "no drain request for machine x".into(),
        };
        let t = table(&[r]);
        assert!(t.contains("1970-01-01 00:00:00") && t.contains("alice@pool.example"));
        assert!(t.contains("refused: no drain request"), "{t}");
    }
}

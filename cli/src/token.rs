//! `cmctl token create/list/revoke`: HTCondor's `condor_token_create`, `condor_token_list`
//! and the revocation of `condor_token_request`'s tokens (`src/condor_tools/token_create.cpp`,
//! `token_list.cpp`), for an Aerie pool.
//!
//! `create` asks a CM (administrators only) to sign a token for an identity with some scopes
//! and a lifetime, and prints it; the CM records its id, identity, scopes and expiry through
//! Raft. `list` shows those records, `revoke JTI` marks one revoked on every CM. A holder
//! puts the token in `AERIE_TOKEN`, or in a file named by `AERIE_TOKEN_FILE` (default
//! `~/.aerie/token`), and cmctl then connects without a certificate.
use crate::client::{Client, ConnectArgs};
use aerie_core::admin::TokensQuery;
use aerie_core::state::{Command, CommandResult, TokenRecord};
use anyhow::{anyhow, bail};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, clap::Subcommand)]
enum Cmd {
    /// Create a token (needs ADMINISTRATOR) and print it.
    Create {
        #[command(flatten)]
        conn: ConnectArgs,
        /// Whom the token names (user@domain): the principal ALLOW_<LEVEL> lists match.
        #[arg(long)]
        identity: String,
        /// The levels it may use: READ,WRITE,ADMINISTRATOR,... (HTCondor's condor:/ scopes).
        #[arg(long, value_delimiter = ',', default_value = "READ")]
        scope: Vec<String>,
        /// How long it is valid: seconds, or with a unit (90m, 12h, 30d, 1w).
        #[arg(long, default_value = "1d")]
        lifetime: String,
    },
    /// List the tokens the pool issued (id, identity, scopes, expiry, revoked).
    List {
        #[command(flatten)]
        conn: ConnectArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token by its id (the JTI column of `list`).
    Revoke {
        #[command(flatten)]
        conn: ConnectArgs,
        /// The token's id.
        jti: String,
    },
}

/// Seconds in `text`: a number of seconds, or a number with `s`, `m`, `h`, `d` or `w`.
pub fn parse_duration(text: &str) -> anyhow::Result<i64> {
    let t = text.trim();
    let (num, unit) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&t[..i], c),
        _ => (t, 's'),
    };
    let mult = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        'w' => 7 * 86_400,
        _ => bail!("bad duration {text:?}: unit {unit:?} is not s, m, h, d or w"),
    };
    let n: i64 = num
        .parse()
        .map_err(|_| anyhow!("bad duration {text:?}: expected e.g. 3600, 90m, 12h, 30d"))?;
    if n <= 0 {
        bail!("bad duration {text:?}: must be above 0");
    }
    n.checked_mul(mult)
        .ok_or_else(|| anyhow!("bad duration {text:?}: too long"))
}

/// The rows `cmctl token list` prints, at `now`.
pub fn table(records: &[TokenRecord], now: i64) -> String {
    let mut out = format!(
        "{:<32} {:<28} {:<28} {:<20} {}\n",
        "JTI", "IDENTITY", "SCOPES", "EXPIRES (UTC)", "STATE"
    );
    for r in records {
        let state = if r.revoked {
            "revoked"
        } else if r.expires <= now {
            "expired"
        } else {
            "valid"
        };
        out.push_str(&format!(
            "{:<32} {:<28} {:<28} {:<20} {}\n",
            r.jti,
            r.identity,
            r.scopes.join(","),
            crate::negotiator::utc(r.expires),
            state
        ));
    }
    out
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

pub fn run(args: Args) -> anyhow::Result<i32> {
    match args.command {
        Cmd::Create {
            conn,
            identity,
            scope,
            lifetime,
        } => {
            let lifetime = parse_duration(&lifetime)?;
            let mut client = Client::new(&conn)?;
            // The CM assigns the id and the times; `expires` carries the lifetime.
            let w = client.write_ok(Command::IssueToken(TokenRecord {
                jti: String::new(),
                identity,
                scopes: scope,
                issued: 0,
                expires: lifetime,
                revoked: false,
            }))?;
            match w.result {
                Some(CommandResult::TokenIssued { token, jti, .. }) if !token.is_empty() => {
                    eprintln!("token {jti} created; give it to its holder as AERIE_TOKEN");
                    println!("{token}");
                    Ok(0)
                }
                other => bail!("the CM answered no token: {other:?}"),
            }
        }
        Cmd::List { conn, json } => {
            let records = Client::new(&conn)?.query(TokensQuery, false)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&records)?);
            } else {
                print!("{}", table(&records, now()));
            }
            Ok(0)
        }
        Cmd::Revoke { conn, jti } => {
            let w = Client::new(&conn)?.write_ok(Command::RevokeToken { jti: jti.clone() })?;
            println!("token {jti} revoked (log index {})", w.log_index);
            Ok(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifetimes_take_htcondor_like_units() {
        assert_eq!(parse_duration("30d").unwrap(), 30 * 86_400);
        assert_eq!(parse_duration("90m").unwrap(), 5400);
        assert_eq!(parse_duration("3600").unwrap(), 3600);
        assert_eq!(parse_duration("1w").unwrap(), 604_800);
        for bad in ["", "0", "-5", "3y", "d", "abc"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_list_says_which_are_valid_expired_or_revoked() {
        let r = |jti: &str, expires, revoked| TokenRecord {
            jti: jti.into(),
            identity: "alice@pool.example".into(),
            scopes: vec!["READ".into(), "WRITE".into()],
            issued: 0,
            expires,
            revoked,
        };
        let t = table(
            &[r("a", 100, false), r("b", 10, false), r("c", 100, true)],
            50,
        );
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("JTI"));
        assert!(lines[1].contains("READ,WRITE") && lines[1].ends_with("valid"));
        assert!(lines[2].ends_with("expired"));
        assert!(lines[3].ends_with("revoked"));
    }
}

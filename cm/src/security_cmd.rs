//! `aerie-cm security`: make and inspect the pool's credentials (a thin shell over
//! `aerie_security::pki`).
//!
//! `init DIR` makes the CA and the certificates of a local pool (cm1..cmN, admin, and any
//! `--holder NAME=ROLE[+ROLE]`); `issue DIR NAME=ROLES` adds or renews one certificate with the
//! existing CA (rotation: issue again, then restart the daemon); `show DIR` lists every
//! certificate with its roles and expiry.
use aerie_security::pki::{self, Holder};
use anyhow::Context;
use std::path::PathBuf;

/// `aerie-cm security ...`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, clap::Subcommand)]
enum Cmd {
    /// Create a pool CA and certificates in DIR (which must not hold a CA yet).
    Init {
        /// The credentials directory.
        dir: PathBuf,
        /// The pool's name (in the CA's subject).
        #[arg(long, default_value = "aerie")]
        pool: String,
        /// How many CM certificates (cm1..cmN).
        #[arg(long, default_value_t = 3)]
        cms: u32,
        /// More holders: NAME=ROLE[+ROLE...], roles cm, execute, access-point, admin.
        #[arg(long = "holder", value_parser = parse_holder)]
        holders: Vec<Holder>,
        /// Validity of every certificate, in days.
        #[arg(long, default_value_t = 365)]
        days: u32,
    },
    /// Issue (or renew) one certificate with the CA in DIR.
    Issue {
        /// The credentials directory holding ca.crt and ca.key.
        dir: PathBuf,
        /// NAME=ROLE[+ROLE...].
        #[arg(value_parser = parse_holder)]
        holder: Holder,
        /// Validity in days.
        #[arg(long, default_value_t = 365)]
        days: u32,
    },
    /// List the certificates in DIR with their roles and expiry.
    Show {
        /// The credentials directory.
        dir: PathBuf,
    },
}

fn parse_holder(s: &str) -> Result<Holder, String> {
    Holder::parse(s).map_err(|e| e.to_string())
}

/// Runs the subcommand; returns the exit code.
pub fn run(args: Args) -> anyhow::Result<i32> {
    match args.command {
        Cmd::Init {
            dir,
            pool,
            cms,
            holders,
            days,
        } => {
            let all = pki::default_holders(cms, &holders);
            pki::init(&dir, &pool, &all, days)?;
            let names: Vec<&str> = all.iter().map(|h| h.name.as_str()).collect();
            println!(
                "pool CA and certificates for {} in {} (valid {days} days)",
                names.join(", "),
                dir.display()
            );
        }
        Cmd::Issue { dir, holder, days } => {
            pki::issue(&dir, &holder, days)?;
            println!("issued {}.crt in {}", holder.name, dir.display());
        }
        Cmd::Show { dir } => {
            let now = aerie_security::transport::now_unix();
            let mut names: Vec<String> = std::fs::read_dir(&dir)
                .with_context(|| format!("reading {}", dir.display()))?
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter_map(|n| n.strip_suffix(".crt").map(str::to_string))
                .filter(|n| n != "ca")
                .collect();
            names.sort();
            println!("{:<20} {:<28} {:>10}", "NAME", "IDENTITY", "DAYS LEFT");
            for n in names {
                match aerie_security::Transport::load(&dir, &n, now) {
                    Ok(aerie_security::Transport::Tls(t)) => println!(
                        "{:<20} {:<28} {:>10}",
                        n,
                        t.identity.to_string(),
                        (t.not_after - now) / 86_400
                    ),
                    Ok(_) => {}
                    Err(e) => println!("{n:<20} {e}"),
                }
            }
        }
    }
    Ok(0)
}

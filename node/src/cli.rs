//! The `aerie-node` command line.
use crate::args::{Cli, Command};
use clap::Parser;

/// The `aerie-node` command line: parses the arguments, runs the subcommand and returns the
/// process exit code (shared by the binary and the integration tests' copy of it).
pub fn cli_main() -> i32 {
    // The job guard runs in the job's place, its stderr the job's: no logging, no clap.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|a| a == crate::starter::guard::SUBCOMMAND)
    {
        return crate::starter::guard::main(&args[2..]);
    }
    let cli = Cli::parse();
    aerie_log::init("aerie_node", cli.log_format);
    let setup = match &cli.command {
        Command::Simulate(_) => install_security(&cli.security, "sim".into(), None, "STARTD"),
        Command::Execute(a) => install_security(
            &cli.security,
            default_name(&a.name),
            a.config.as_deref(),
            "STARTD",
        ),
        Command::AccessPoint(a) => install_security(
            &cli.security,
            default_name(&a.name),
            a.config.as_deref(),
            "SCHEDD",
        ),
        Command::CheckClaims(_) => Ok(()),
    };
    if let Err(e) = setup {
        eprintln!("aerie-node: {e:#}");
        return 2;
    }
    let code = match cli.command {
        Command::Simulate(args) => block_on("simulate", crate::simulate::run(args)),
        Command::Execute(args) => block_on("execute", crate::execute::run(args)),
        Command::AccessPoint(args) => block_on("access-point", crate::schedd::run::run(args)),
        Command::CheckClaims(args) => match crate::check::check_files(&args.files) {
            Ok(s) => {
                if args.json {
                    match serde_json::to_string_pretty(&serde_json::json!({
                        "ok": s.ok(),
                        "summary": s,
                    })) {
                        Ok(t) => println!("{t}"),
                        Err(e) => eprintln!("aerie-node check-claims: {e}"),
                    }
                } else {
                    print!("{}", crate::check::render(&s));
                }
                if s.ok() {
                    0
                } else {
                    1
                }
            }
            Err(e) => {
                eprintln!("aerie-node check-claims: {e:#}");
                2
            }
        },
    };
    code
}

/// The certificate a daemon uses when `--credential-name` is not given: its `--name`, else
/// the host's name (as HTCondor's host certificates are named).
fn default_name(name: &Option<String>) -> String {
    name.clone().unwrap_or_else(|| {
        nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .unwrap_or_else(|| "localhost".into())
    })
}

/// Loads the credentials and the `ALLOW_`/`DENY_` policy from the daemon's configuration.
fn install_security(
    sec: &aerie_security::transport::SecurityArgs,
    name: String,
    config: Option<&std::path::Path>,
    subsystem: &str,
) -> anyhow::Result<()> {
    let cfg = match config {
        Some(path) => Some(
            aerie_config::Config::load(path, &aerie_config::LoadOptions::for_subsystem(subsystem))
                .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?,
        ),
        None => None,
    };
    let policy = aerie_security::Policy::from_config(cfg.as_ref())
        .map_err(|e| anyhow::anyhow!("authorization knobs: {e}"))?;
    sec.install(&name, policy)?;
    Ok(())
}

/// Runs a daemon subcommand on a multi-threaded runtime: 0 when it ends well, 2 (after saying
/// why on stderr) when it fails.
fn block_on(name: &str, fut: impl std::future::Future<Output = anyhow::Result<()>>) -> i32 {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("aerie-node: cannot start the runtime: {e}");
            return 2;
        }
    };
    match rt.block_on(fut) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("aerie-node {name}: {e:#}");
            2
        }
    }
}

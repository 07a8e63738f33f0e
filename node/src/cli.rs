//! The `aerie-node` command line.
use crate::args::{Cli, Command};
use clap::Parser;

/// The `aerie-node` command line: parses the arguments, runs the subcommand and returns the
/// process exit code (shared by the binary and the integration tests' copy of it).
pub fn cli_main() -> i32 {
    let cli = Cli::parse();
    aerie_log::init("aerie_node", cli.log_format);
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

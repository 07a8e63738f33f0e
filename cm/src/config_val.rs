//! `aerie-cm config-val`: print configuration values as `condor_config_val` does, so an admin
//! can check that Aerie reads their HTCondor configuration the way HTCondor does.
//!
//! Output matches `condor_config_val` 23.9.6: one fully expanded value per line; with
//! `--verbose` a `NAME = value` line followed by ` # at: FILE, line N` (or `<Default>`) and
//! ` # raw: NAME = raw`; `--dump [PATTERN]` prints the raw value of every knob (configuration and
//! defaults) whose name contains PATTERN. A name that is undefined (or empty) prints
//! `Not defined: NAME` on stderr and makes the exit code 1.
use aerie_config::{default_config_path, Config, Context, Entry, LoadOptions, Origin};
use std::io::Write;
use std::path::PathBuf;

/// Command-line arguments of `aerie-cm config-val`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Configuration file (default: $AERIE_CONFIG, $CONDOR_CONFIG, /etc/aerie/aerie.conf,
    /// /etc/condor/condor_config).
    #[arg(long, short = 'c', value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Also print where each value was defined (file and line, or <Default>) and its raw text.
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// Print every knob whose name contains the first NAME (all knobs without one).
    #[arg(long)]
    pub dump: bool,
    /// Read the configuration as this subsystem does (NEGOTIATOR reads NEGOTIATOR.X for X).
    #[arg(long, value_name = "NAME")]
    pub subsystem: Option<String>,
    /// Read the configuration as a daemon with this local name does.
    #[arg(long, value_name = "NAME")]
    pub local_name: Option<String>,
    /// Allow `include : COMMAND |` (off by default).
    #[arg(long)]
    pub allow_commands: bool,
    /// Knob names (or the pattern for --dump).
    pub names: Vec<String>,
}

/// Runs the command; returns the process exit code.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let out = std::io::stdout();
    let err = std::io::stderr();
    run_to(args, &mut out.lock(), &mut err.lock())
}

/// Runs the command writing to the given streams (for tests).
pub fn run_to(args: Args, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<i32> {
    let path = match &args.config {
        Some(p) => p.clone(),
        None => default_config_path()?,
    };
    let opts = LoadOptions {
        context: Context {
            subsystem: args.subsystem.as_ref().map(|s| s.to_ascii_uppercase()),
            local_name: args.local_name.clone(),
        },
        allow_commands: args.allow_commands,
        ..LoadOptions::default()
    };
    let cfg = match Config::load(&path, &opts) {
        Ok(c) => c,
        Err(e) => {
            writeln!(err, "Configuration error: {e}")?;
            return Ok(2);
        }
    };
    if args.dump {
        dump(
            &cfg,
            args.names.first().map(String::as_str),
            args.verbose,
            out,
        )?;
        return Ok(0);
    }
    if args.names.is_empty() {
        writeln!(err, "config-val: give one or more knob names, or --dump")?;
        return Ok(2);
    }
    let mut code = 0;
    for name in &args.names {
        let found = cfg.lookup(name);
        let value = match cfg.expanded(name) {
            Ok(v) => v,
            Err(e) => {
                writeln!(err, "Error: {e}")?;
                code = 1;
                continue;
            }
        };
        match (found, value) {
            (Some(f), Some(v)) => {
                if args.verbose {
                    writeln!(out, "{} = {}", f.name, v)?;
                    writeln!(out, " # at: {}", at(&f.origin))?;
                    writeln!(out, " # raw: {} = {}", f.name, f.raw)?;
                    writeln!(out)?;
                } else {
                    writeln!(out, "{v}")?;
                }
            }
            _ => {
                writeln!(err, "Not defined: {name}")?;
                code = 1;
            }
        }
    }
    Ok(code)
}

fn at(origin: &Origin) -> String {
    match origin {
        Origin::File(l) => l.to_string(),
        other => other.to_string(),
    }
}

fn raw_line(e: &Entry) -> String {
    if e.raw.contains('\n') {
        let body: Vec<String> = e.raw.lines().map(|l| format!("   {l}")).collect();
        format!("{} @=end\n{}\n@end", e.name, body.join("\n"))
    } else {
        format!("{} = {}", e.name, e.raw)
    }
}

fn dump(
    cfg: &Config,
    pattern: Option<&str>,
    verbose: bool,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let host = cfg
        .expanded("FULL_HOSTNAME")
        .ok()
        .flatten()
        .unwrap_or_default();
    writeln!(out, "# Configuration from machine: {host}")?;
    if let Some(p) = pattern {
        writeln!(out)?;
        writeln!(out, "# Parameters with names that match {p}:")?;
    }
    for e in cfg.dump(pattern) {
        writeln!(out, "{}", raw_line(&e))?;
        if verbose {
            writeln!(out, " # at: {}", at(&e.origin))?;
            let expanded = cfg
                .expand(&e.raw)
                .unwrap_or_else(|err| format!("<error: {err}>"));
            writeln!(out, " # expanded: {expanded}")?;
            if let Some(d) = aerie_config::defaults::default_raw(&e.name) {
                writeln!(out, " # default: {d}")?;
            }
        }
    }
    writeln!(out, "# Contributing configuration file(s):")?;
    for s in cfg.sources() {
        writeln!(out, "#\t{s}")?;
    }
    Ok(())
}

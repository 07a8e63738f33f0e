//! `jepsen/run`: plays named fault scenarios against real CMs in network namespaces and writes,
//! for each run, `OUT/<scenario>-<seed>/` with `history.jsonl`, `results.json`, the timeline
//! picture `timeline.html` and every CM's log, and at the end `OUT/summary.json` (percentiles
//! of the unavailability over the runs, faults survived per run). Exits 0 only when every
//! checker of every run passed. Needs root and iproute2.
use aerie_jepsen::results::{history_lines, results};
use aerie_jepsen::scenario::{execute, plan, SCENARIOS};
use aerie_jepsen::{summary, timeline};
use anyhow::Context;
use clap::Parser;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "jepsen/run",
    about = "Run Aerie's fault-injection scenarios and check the histories",
    after_help = scenario_help()
)]
struct Cli {
    /// Scenarios to run (comma-separated; `all` for every one).
    #[arg(long, default_value = "mixed", value_delimiter = ',')]
    nemesis: Vec<String>,
    /// How long the faults last, in seconds (a randomized schedule fills this time).
    #[arg(long, default_value_t = 10)]
    time: u64,
    /// The seed of the first run (the time if not given); run k uses seed + k.
    #[arg(long)]
    seed: Option<u64>,
    /// How many runs of each scenario.
    #[arg(long, default_value_t = 1)]
    runs: u64,
    /// Where the results go.
    #[arg(long, default_value = "jepsen/out")]
    out: PathBuf,
    /// The CM daemon (default: aerie-jepsen-cm beside this binary).
    #[arg(long)]
    daemon: Option<PathBuf>,
}

fn scenario_help() -> String {
    let mut s = String::from("Scenarios:\n");
    for (name, what) in SCENARIOS {
        s.push_str(&format!("  {name:<18} {what}\n"));
    }
    s
}

fn main() {
    match run(Cli::parse()) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("jepsen/run: {e:#}");
            std::process::exit(2);
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<bool> {
    let daemon = match cli.daemon {
        Some(d) => d,
        None => std::env::current_exe()?
            .parent()
            .context("this binary has no directory")?
            .join("aerie-jepsen-cm"),
    };
    let names: Vec<String> = if cli.nemesis.iter().any(|n| n == "all") {
        SCENARIOS.iter().map(|(n, _)| n.to_string()).collect()
    } else {
        cli.nemesis
    };
    let first = cli.seed.unwrap_or_else(|| aerie_tests::unix_now() as u64);
    let mut all_valid = true;
    let mut all = Vec::new();
    for name in &names {
        for k in 0..cli.runs {
            let seed = first + k;
            let plan = plan(name, seed, Duration::from_secs(cli.time))?;
            let dir = cli.out.join(format!("{name}-{seed}"));
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            eprintln!("jepsen/run: {name} seed {seed} -> {}", dir.display());
            let o = execute(&plan, daemon.clone())?;
            let mut hist =
                std::io::BufWriter::new(std::fs::File::create(dir.join("history.jsonl"))?);
            for line in history_lines(&o.history) {
                writeln!(hist, "{line}")?;
            }
            hist.flush()?;
            let r = results(&plan, seed, &o);
            std::fs::write(dir.join("results.json"), serde_json::to_string_pretty(&r)?)?;
            std::fs::write(
                dir.join("timeline.html"),
                timeline::render(&o.history, &format!("{name} seed {seed}")),
            )?;
            all.push(r);
            for (id, log) in &o.logs {
                std::fs::write(dir.join(format!("cm{id}.log")), log)?;
            }
            if let Some(p) = &o.pool {
                std::fs::write(dir.join("claims.log"), &p.claims_log)?;
                std::fs::write(dir.join("pool.log"), &p.node_log)?;
            }
            println!(
                "{name} seed {seed}: {} — {}",
                if o.report.valid() { "valid" } else { "INVALID" },
                o.summary()
            );
            all_valid &= o.report.valid();
        }
    }
    let s = summary::summarize(&all);
    let path = cli.out.join("summary.json");
    std::fs::write(&path, serde_json::to_string_pretty(&s)?)
        .with_context(|| format!("writing {}", path.display()))?;
    print!("{}", summary::render(&s));
    println!("summary: {}", path.display());
    Ok(all_valid)
}
